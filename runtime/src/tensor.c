/* tensor.c: checks and derived properties of tensor descriptors, for every
 * family's graph validation and fields (family.h). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *ingot_dtype_name(ingot_dtype d) {
  switch (d) {
  case INGOT_DTYPE_BF16: return "bf16";
  case INGOT_DTYPE_FP16: return "fp16";
  case INGOT_DTYPE_FP32: return "fp32";
  case INGOT_DTYPE_INT32: return "int32";
  case INGOT_DTYPE_INT64: return "int64";
  case INGOT_DTYPE_INVALID: break;
  }
  return "invalid";
}

/* Checks one tensor: enums, rank, dims >= 1, strides >= 1, and that its last
 * element's offset fits in int64. */
ingot_status ingot_tensor_check(const ingot_tensor_desc *t, const char *name, int rank, int host_ok, char *err,
                                size_t err_size) {
  if (t->dtype < INGOT_DTYPE_BF16 || t->dtype > INGOT_DTYPE_INT64) {
    ingot_format(err, err_size, "graph: %s.dtype = %d (allowed: INGOT_DTYPE_BF16..INGOT_DTYPE_INT64)",
                 name, (int)t->dtype);
    return INGOT_INVALID_ARGUMENT;
  }
  if (t->memory != INGOT_MEMORY_DEVICE && t->memory != INGOT_MEMORY_HOST) {
    ingot_format(err, err_size, "graph: %s.memory = %d (allowed: INGOT_MEMORY_DEVICE, INGOT_MEMORY_HOST)",
                 name, (int)t->memory);
    return INGOT_INVALID_ARGUMENT;
  }
  if (t->memory == INGOT_MEMORY_HOST && !host_ok) {
    ingot_format(err, err_size, "graph: %s.memory = host (allowed: device; the kernels read it)", name);
    return INGOT_INVALID_ARGUMENT;
  }
  if (t->rank != rank) {
    ingot_format(err, err_size, "graph: %s.rank = %d (allowed: %d)", name, t->rank, rank);
    return INGOT_INVALID_ARGUMENT;
  }
  int64_t last = 0;
  for (int i = 0; i < rank; ++i) {
    if (t->dims[i] < 1) {
      ingot_format(err, err_size, "graph: %s.dims[%d] = %lld (allowed: >= 1)", name, i,
                   (long long)t->dims[i]);
      return INGOT_INVALID_ARGUMENT;
    }
    if (t->strides[i] < 1) {
      ingot_format(err, err_size, "graph: %s.strides[%d] = %lld (allowed: >= 1)", name, i,
                   (long long)t->strides[i]);
      return INGOT_INVALID_ARGUMENT;
    }
    int64_t span;
    if (__builtin_mul_overflow(t->dims[i] - 1, t->strides[i], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      ingot_format(err, err_size, "graph: %s: dims x strides overflow a 64-bit element offset", name);
      return INGOT_INVALID_ARGUMENT;
    }
  }
  return INGOT_OK;
}

ingot_status ingot_dim_equal(const char *what, int64_t got, int64_t want, const char *want_what,
                              char *err, size_t err_size) {
  if (got == want) return INGOT_OK;
  ingot_format(err, err_size, "graph: %s = %lld (allowed: %lld, the %s)", what, (long long)got,
               (long long)want, want_what);
  return INGOT_INVALID_ARGUMENT;
}

/* An output must give every index tuple its own element, or two workgroups
 * write one element and the result depends on their order. The standard
 * test: sort the dims of extent > 1 by stride; each stride must reach past
 * the span of the dims below it (stride >= previous stride x previous
 * extent). A product past int64 cannot be reached by any stride, so it is an
 * overlap too. The test is sufficient, not necessary: a few interleaved
 * layouts that do not overlap are refused as well, none of them dense_d. */
ingot_status ingot_tensor_check_no_overlap(const ingot_tensor_desc *t, const char *name, char *err, size_t err_size) {
  int order[INGOT_MAX_RANK], n = 0;
  for (int i = 0; i < t->rank; ++i)
    if (t->dims[i] > 1) order[n++] = i;
  for (int i = 1; i < n; ++i) /* insertion sort by stride: at most 4 entries */
    for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; --j) {
      const int x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  for (int i = 1; i < n; ++i) {
    int64_t span;
    const int a = order[i - 1], b = order[i];
    if (!__builtin_mul_overflow(t->strides[a], t->dims[a], &span) && t->strides[b] >= span) continue;
    char dims[128] = "", strides[128] = "";
    for (int d = 0; d < t->rank; ++d) {
      size_t ld = strlen(dims), ls = strlen(strides);
      ingot_format(dims + ld, sizeof dims - ld, "%s%lld", d ? "," : "", (long long)t->dims[d]);
      ingot_format(strides + ls, sizeof strides - ls, "%s%lld", d ? "," : "", (long long)t->strides[d]);
    }
    ingot_format(err, err_size,
                 "graph: %s strides [%s] with dims [%s] overlap: dim %d's stride %lld is below dim %d's "
                 "span %lld x %lld (allowed: strides that map every element to its own offset)",
                 name, strides, dims, b, (long long)t->strides[b], a, (long long)t->strides[a],
                 (long long)t->dims[a]);
    return INGOT_INVALID_ARGUMENT;
  }
  return INGOT_OK;
}

/* "dense_d": last dim stride 1 and every other stride a multiple of 8
 * elements, so every 16-byte load of a row is aligned. */
const char *ingot_layout_dense_d(const ingot_tensor_desc *t) {
  if (t->rank < 1 || t->strides[t->rank - 1] != 1) return "strided";
  for (int i = 0; i + 1 < t->rank; ++i)
    if (t->strides[i] % 8 != 0) return "strided";
  return "dense_d";
}

/* "contiguous": row-major without gaps (dims of extent 1 take any stride);
 * "absent" for rank 0. Used for lse and seq_lens, which the kernels index as
 * one flat array. */
const char *ingot_layout_flat(const ingot_tensor_desc *t) {
  if (t->rank == 0) return "absent";
  /* The running product of dims can pass int64 (dims [2^21, 2^21, 2^21] pass
   * check_tensor); past that, no stride can equal it. */
  int64_t expect = 1;
  int overflow = 0;
  for (int i = t->rank - 1; i >= 0; --i) {
    if (t->dims[i] > 1 && (overflow || t->strides[i] != expect)) return "strided";
    overflow = overflow || __builtin_mul_overflow(expect, t->dims[i], &expect);
  }
  return "contiguous";
}

/* The kernels read a sequence's page-table row as adjacent int32 entries and
 * step between rows by strides[0]: "dense_rows" when the last stride is 1 (or
 * the rows hold one entry), "absent" for rank 0. */
const char *ingot_layout_rows(const ingot_tensor_desc *t) {
  if (t->rank == 0) return "absent";
  return t->strides[t->rank - 1] == 1 || t->dims[t->rank - 1] == 1 ? "dense_rows" : "strided";
}

/* A tensor's dtype, "absent" when the graph leaves it out (rank 0). */
const char *ingot_dtype_or_absent(const ingot_tensor_desc *t) {
  return t->rank == 0 ? "absent" : ingot_dtype_name(t->dtype);
}


ingot_status ingot_buffer_need(const void *p, const char *name, const char *why, size_t align, char *err, size_t n) {
  if (p == NULL) {
    ingot_format(err, n, "ingot_plan_execute: buffers->%s is NULL (required: %s)", name, why);
    return INGOT_INVALID_ARGUMENT;
  }
  if ((uintptr_t)p % align != 0) {
    ingot_format(err, n, "ingot_plan_execute: buffers->%s = %p is not %zu-byte aligned (required: %zu-byte alignment)",
                 name, p, align, align);
    return INGOT_INVALID_ARGUMENT;
  }
  return INGOT_OK;
}

int ingot_meta_fail(char *where, size_t where_size, const char *key, char *err, size_t err_size, const char *fmt,
                    ...) {
  ingot_format(where, where_size, "%s", key);
  if (err != NULL && err_size > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
  }
  return 0;
}

int ingot_meta_dtype_layout(json_t *md, int *dtype, int *paged, char *where, size_t wn, char *err, size_t en) {
  const char *d = json_string_value(json_object_get(md, "dtype"));
  const char *layout = json_string_value(json_object_get(md, "kv_layout"));
  if (d != NULL && !strcmp(d, "bf16")) *dtype = INGOT_DTYPE_BF16;
  else if (d != NULL && !strcmp(d, "fp16")) *dtype = INGOT_DTYPE_FP16;
  else return ingot_meta_fail(where, wn, "dtype", err, en, "\"%s\" (allowed: bf16, fp16)", d ? d : "?");
  if (layout == NULL || (strcmp(layout, "contiguous") && strcmp(layout, "paged")))
    return ingot_meta_fail(where, wn, "kv_layout", err, en, "\"%s\" (allowed: contiguous, paged)",
                           layout ? layout : "?");
  *paged = !strcmp(layout, "paged");
  return 1;
}
