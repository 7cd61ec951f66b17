/* graph.c: structural checks of an ingot_attention_graph and the derived
 * fields the matcher compares against UMD constraints (docs/INTERNALS.md 2). */
#include <math.h>
#include <string.h>

#include "internal.h"

static const char *dtype_name(ingot_dtype d) {
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
static ingot_status check_tensor(const ingot_tensor_desc *t, const char *name, int rank,
                                 char *err, size_t err_size) {
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
  if (t->memory == INGOT_MEMORY_HOST && strcmp(name, "seq_lens") != 0) {
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

static ingot_status dim_equal(const char *what, int64_t got, int64_t want, const char *want_what,
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
static ingot_status check_no_overlap(const ingot_tensor_desc *t, const char *name, char *err, size_t err_size) {
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

#define TRY(x)                                                                                     \
  do {                                                                                             \
    ingot_status s_ = (x);                                                                         \
    if (s_ != INGOT_OK) return s_;                                                                 \
  } while (0)

ingot_status ingot_graph_validate(const ingot_attention_graph *g, char *err, size_t err_size) {
  if (g == NULL) {
    ingot_format(err, err_size, "graph: NULL pointer");
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->kv_layout != INGOT_KV_CONTIGUOUS && g->kv_layout != INGOT_KV_PAGED) {
    ingot_format(err, err_size, "graph: kv_layout = %d (allowed: INGOT_KV_CONTIGUOUS, INGOT_KV_PAGED)",
                 (int)g->kv_layout);
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->mask != INGOT_MASK_NONE && g->mask != INGOT_MASK_CAUSAL) {
    ingot_format(err, err_size, "graph: mask = %d (allowed: INGOT_MASK_NONE, INGOT_MASK_CAUSAL)",
                 (int)g->mask);
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->mask_align != INGOT_ALIGN_BOTTOM_RIGHT && g->mask_align != INGOT_ALIGN_TOP_LEFT) {
    ingot_format(err, err_size,
                 "graph: mask_align = %d (allowed: INGOT_ALIGN_BOTTOM_RIGHT, INGOT_ALIGN_TOP_LEFT)",
                 (int)g->mask_align);
    return INGOT_INVALID_ARGUMENT;
  }
  if (!isfinite(g->scale)) {
    ingot_format(err, err_size, "graph: scale = %g (allowed: a finite number)", (double)g->scale);
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->capacity < 1 || g->capacity > INT32_MAX) {
    ingot_format(err, err_size, "graph: capacity = %lld (allowed: 1..%d)", (long long)g->capacity,
                 INT32_MAX);
    return INGOT_INVALID_ARGUMENT;
  }
  TRY(check_tensor(&g->q, "q", 4, err, err_size));
  TRY(check_tensor(&g->k, "k", 4, err, err_size));
  TRY(check_tensor(&g->v, "v", 4, err, err_size));
  TRY(check_tensor(&g->o, "o", 4, err, err_size));
  TRY(check_tensor(&g->seq_lens, "seq_lens", 1, err, err_size));
  const int64_t B = g->q.dims[0], Hq = g->q.dims[1], Sq = g->q.dims[2], D = g->q.dims[3];
  const int64_t Hkv = g->k.dims[2];
  static const char *const kQDims[4] = {"batch of q", "query heads of q", "Sq of q", "head dim of q"};
  static const char *const kODims[4] = {"o.dims[0]", "o.dims[1]", "o.dims[2]", "o.dims[3]"};
  for (int i = 0; i < 4; ++i) TRY(dim_equal(kODims[i], g->o.dims[i], g->q.dims[i], kQDims[i], err, err_size));
  static const char *const kVDims[4] = {"v.dims[0]", "v.dims[1]", "v.dims[2]", "v.dims[3]"};
  for (int i = 0; i < 4; ++i)
    TRY(dim_equal(kVDims[i], g->v.dims[i], g->k.dims[i], "same dim of k", err, err_size));
  TRY(check_no_overlap(&g->o, "o", err, err_size));
  TRY(dim_equal("k.dims[3]", g->k.dims[3], D, kQDims[3], err, err_size));
  TRY(dim_equal("seq_lens.dims[0]", g->seq_lens.dims[0], B, kQDims[0], err, err_size));
  if (Hq > INT32_MAX || Hkv > INT32_MAX || Sq > INT32_MAX || D > INT32_MAX || B > INT32_MAX) {
    ingot_format(err, err_size, "graph: q or k dims exceed %d", INT32_MAX);
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->kv_layout == INGOT_KV_CONTIGUOUS) {
    TRY(dim_equal("k.dims[0]", g->k.dims[0], B, kQDims[0], err, err_size));
    TRY(dim_equal("k.dims[1]", g->k.dims[1], g->capacity, "capacity", err, err_size));
    if (g->page_table.rank != 0) {
      ingot_format(err, err_size,
                   "graph: page_table.rank = %d (allowed: 0, the KV layout is contiguous)",
                   g->page_table.rank);
      return INGOT_INVALID_ARGUMENT;
    }
  } else {
    TRY(check_tensor(&g->page_table, "page_table", 2, err, err_size));
    TRY(dim_equal("page_table.dims[0]", g->page_table.dims[0], B, kQDims[0], err, err_size));
    int64_t reach;
    if (__builtin_mul_overflow(g->page_table.dims[1], g->k.dims[1], &reach) || reach < g->capacity) {
      ingot_format(err, err_size,
                   "graph: capacity = %lld exceeds page_table.dims[1] x page size = %lld x %lld",
                   (long long)g->capacity, (long long)g->page_table.dims[1],
                   (long long)g->k.dims[1]);
      return INGOT_INVALID_ARGUMENT;
    }
    if (g->k.dims[1] > INT32_MAX) {
      ingot_format(err, err_size, "graph: k.dims[1] (page size) = %lld (allowed: <= %d)",
                   (long long)g->k.dims[1], INT32_MAX);
      return INGOT_INVALID_ARGUMENT;
    }
  }
  if (g->lse.rank != 0) {
    TRY(check_tensor(&g->lse, "lse", 3, err, err_size));
    for (int i = 0; i < 3; ++i) {
      static const char *const kL[3] = {"lse.dims[0]", "lse.dims[1]", "lse.dims[2]"};
      TRY(dim_equal(kL[i], g->lse.dims[i], g->q.dims[i], kQDims[i], err, err_size));
    }
    TRY(check_no_overlap(&g->lse, "lse", err, err_size));
  }
  return INGOT_OK;
}

/* ---- derived fields ------------------------------------------------------- */

static const struct {
  const char *name;
  ingot_field_type type;
} kFields[] = {
    {"dtype", INGOT_FIELD_STRING},          {"kv_dtype", INGOT_FIELD_STRING},
    {"v_dtype", INGOT_FIELD_STRING},        {"o_dtype", INGOT_FIELD_STRING},
    {"batch", INGOT_FIELD_INT},             {"num_q_heads", INGOT_FIELD_INT},
    {"num_kv_heads", INGOT_FIELD_INT},      {"heads", INGOT_FIELD_INT_PAIR},
    {"group", INGOT_FIELD_INT},             {"seq_q", INGOT_FIELD_INT},
    {"head_dim", INGOT_FIELD_INT},          {"capacity", INGOT_FIELD_INT},
    {"kv_layout", INGOT_FIELD_STRING},      {"page_size", INGOT_FIELD_INT},
    {"mask", INGOT_FIELD_STRING},           {"mask_align", INGOT_FIELD_STRING},
    {"lse", INGOT_FIELD_BOOL},              {"lse.dtype", INGOT_FIELD_STRING},
    {"seq_lens.dtype", INGOT_FIELD_STRING}, {"seq_lens.memory", INGOT_FIELD_STRING},
    {"seq_lens.layout", INGOT_FIELD_STRING}, {"page_table.dtype", INGOT_FIELD_STRING},
    {"page_table.layout", INGOT_FIELD_STRING}, {"q.layout", INGOT_FIELD_STRING},
    {"k.layout", INGOT_FIELD_STRING},       {"v.layout", INGOT_FIELD_STRING},
    {"o.layout", INGOT_FIELD_STRING},       {"lse.layout", INGOT_FIELD_STRING},
};
#define NUM_FIELDS (sizeof(kFields) / sizeof(kFields[0]))

ingot_field_type ingot_graph_field_type(const char *field) {
  for (size_t i = 0; i < NUM_FIELDS; ++i)
    if (strcmp(kFields[i].name, field) == 0) return kFields[i].type;
  return INGOT_FIELD_UNKNOWN;
}

const char *ingot_graph_field_names(void) {
  return "dtype, kv_dtype, v_dtype, o_dtype, batch, num_q_heads, num_kv_heads, heads, group, seq_q, "
         "head_dim, capacity, kv_layout, page_size, mask, mask_align, lse, lse.dtype, seq_lens.dtype, "
         "seq_lens.memory, seq_lens.layout, page_table.dtype, page_table.layout, q.layout, k.layout, "
         "v.layout, o.layout, lse.layout";
}

/* "dense_d": last dim stride 1 and every other stride a multiple of 8
 * elements, so every 16-byte load of a row is aligned. */
static const char *dense_layout(const ingot_tensor_desc *t) {
  if (t->rank < 1 || t->strides[t->rank - 1] != 1) return "strided";
  for (int i = 0; i + 1 < t->rank; ++i)
    if (t->strides[i] % 8 != 0) return "strided";
  return "dense_d";
}

/* "contiguous": row-major without gaps (dims of extent 1 take any stride);
 * "absent" for rank 0. Used for lse and seq_lens, which the kernels index as
 * one flat array. */
static const char *flat_layout(const ingot_tensor_desc *t) {
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
static const char *rows_layout(const ingot_tensor_desc *t) {
  if (t->rank == 0) return "absent";
  return t->strides[t->rank - 1] == 1 || t->dims[t->rank - 1] == 1 ? "dense_rows" : "strided";
}

/* A tensor's dtype, "absent" when the graph leaves it out (rank 0). */
static const char *optional_dtype(const ingot_tensor_desc *t) {
  return t->rank == 0 ? "absent" : dtype_name(t->dtype);
}

json_t *ingot_graph_field(const ingot_attention_graph *g, const char *f) {
  const int64_t Hq = g->q.dims[1], Hkv = g->k.dims[2];
  if (!strcmp(f, "dtype")) return json_string(dtype_name(g->q.dtype));
  if (!strcmp(f, "kv_dtype")) return json_string(dtype_name(g->k.dtype));
  if (!strcmp(f, "v_dtype")) return json_string(dtype_name(g->v.dtype));
  if (!strcmp(f, "o_dtype")) return json_string(dtype_name(g->o.dtype));
  if (!strcmp(f, "batch")) return json_integer(g->q.dims[0]);
  if (!strcmp(f, "num_q_heads")) return json_integer(Hq);
  if (!strcmp(f, "num_kv_heads")) return json_integer(Hkv);
  if (!strcmp(f, "heads")) return json_pack("[II]", (json_int_t)Hq, (json_int_t)Hkv);
  if (!strcmp(f, "group")) return json_integer(Hkv > 0 && Hq % Hkv == 0 ? Hq / Hkv : 0);
  if (!strcmp(f, "seq_q")) return json_integer(g->q.dims[2]);
  if (!strcmp(f, "head_dim")) return json_integer(g->q.dims[3]);
  if (!strcmp(f, "capacity")) return json_integer(g->capacity);
  if (!strcmp(f, "kv_layout"))
    return json_string(g->kv_layout == INGOT_KV_PAGED ? "paged" : "contiguous");
  if (!strcmp(f, "page_size"))
    return json_integer(g->kv_layout == INGOT_KV_PAGED ? g->k.dims[1] : 0);
  if (!strcmp(f, "mask")) return json_string(g->mask == INGOT_MASK_CAUSAL ? "causal" : "none");
  if (!strcmp(f, "mask_align"))
    return json_string(g->mask_align == INGOT_ALIGN_TOP_LEFT ? "top_left" : "bottom_right");
  if (!strcmp(f, "lse")) return json_boolean(g->lse.rank != 0);
  if (!strcmp(f, "lse.dtype")) return json_string(optional_dtype(&g->lse));
  if (!strcmp(f, "seq_lens.dtype")) return json_string(dtype_name(g->seq_lens.dtype));
  if (!strcmp(f, "seq_lens.memory"))
    return json_string(g->seq_lens.memory == INGOT_MEMORY_HOST ? "host" : "device");
  if (!strcmp(f, "seq_lens.layout")) return json_string(flat_layout(&g->seq_lens));
  if (!strcmp(f, "page_table.dtype")) return json_string(optional_dtype(&g->page_table));
  if (!strcmp(f, "page_table.layout")) return json_string(rows_layout(&g->page_table));
  if (!strcmp(f, "q.layout")) return json_string(dense_layout(&g->q));
  if (!strcmp(f, "k.layout")) return json_string(dense_layout(&g->k));
  if (!strcmp(f, "v.layout")) return json_string(dense_layout(&g->v));
  if (!strcmp(f, "o.layout")) return json_string(dense_layout(&g->o));
  if (!strcmp(f, "lse.layout")) return json_string(flat_layout(&g->lse));
  return NULL;
}

int ingot_graph_field_note(const ingot_attention_graph *g, const char *field, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  const int64_t Hq = g->q.dims[1], Hkv = g->k.dims[2];
  /* a contiguous graph has no pages: its page_size 0 is no value to admit */
  if (!strcmp(field, "page_size") && g->kv_layout != INGOT_KV_PAGED) return 0;
  /* group is 0 when Hq is no multiple of Hkv: say so rather than leave a bare 0 */
  if (!strcmp(field, "group") && (Hkv < 1 || Hq % Hkv != 0))
    ingot_format(buf, size, "Hq %lld is not a multiple of Hkv %lld", (long long)Hq, (long long)Hkv);
  return 1;
}
