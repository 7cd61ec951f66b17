/* kv_append_family.c: the KV-cache append family's runtime half (family.h):
 * the graph's structure, the derived fields its UMDs name, its kernel metadata
 * and buffers. Device semantics: runtime/include/ingot/kv_append.h; planning:
 * ingot_kv_append_plan.h; kernel: templates/ingot_kva_append.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "family.h"
#include "ingot_kv_append_plan.h"
#include "internal.h"

_Static_assert(sizeof(ingot_kv_append_graph) <= INGOT_MAX_GRAPH_BYTES, "the append graph fits a plan's copy");
_Static_assert(sizeof(ingot_kva_kernel_meta) <= INGOT_MAX_META_BYTES, "the metadata fits a kernel's");

#define TRY(x)                                                                                     \
  do {                                                                                             \
    ingot_status s_ = (x);                                                                         \
    if (s_ != INGOT_OK) return s_;                                                                 \
  } while (0)

static ingot_status bad(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ingot_status bad(char *err, size_t n, const char *fmt, ...) {
  if (err != NULL && n > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return INGOT_INVALID_ARGUMENT;
}

/* Structure: ranks, dims that must agree, the caches' dtype, the page table's
 * reach. Whether a kernel runs it (dtype, head dim, layouts) is the matcher's. */
static ingot_status validate(const void *graph, char *err, size_t n) {
  const ingot_kv_append_graph *g = graph;
  if (g == NULL) return bad(err, n, "graph: NULL pointer");
  if (g->kv_layout != INGOT_KV_CONTIGUOUS && g->kv_layout != INGOT_KV_PAGED)
    return bad(err, n, "graph: kv_layout = %d (allowed: INGOT_KV_CONTIGUOUS, INGOT_KV_PAGED)", (int)g->kv_layout);
  if (g->advance != 0 && g->advance != 1)
    return bad(err, n, "graph: advance = %d (allowed: 0, 1)", g->advance);
  if (g->capacity < 1 || g->capacity > INT32_MAX)
    return bad(err, n, "graph: capacity = %lld (allowed: 1..%d)", (long long)g->capacity, INT32_MAX);
  TRY(ingot_tensor_check(&g->k_new, "k_new", 4, 0, err, n));
  TRY(ingot_tensor_check(&g->v_new, "v_new", 4, 0, err, n));
  TRY(ingot_tensor_check(&g->k_cache, "k_cache", 4, 0, err, n));
  TRY(ingot_tensor_check(&g->v_cache, "v_cache", 4, 0, err, n));
  TRY(ingot_tensor_check(&g->seq_lens, "seq_lens", 1, 1, err, n));
  const int64_t B = g->k_new.dims[0], Sq = g->k_new.dims[1], Hkv = g->k_new.dims[2], D = g->k_new.dims[3];
  static const char *const kNew[4] = {"batch of k_new", "Sq of k_new", "KV heads of k_new", "head dim of k_new"};
  static const char *const kV[4] = {"v_new.dims[0]", "v_new.dims[1]", "v_new.dims[2]", "v_new.dims[3]"};
  for (int i = 0; i < 4; ++i) TRY(ingot_dim_equal(kV[i], g->v_new.dims[i], g->k_new.dims[i], kNew[i], err, n));
  static const char *const kVc[4] = {"v_cache.dims[0]", "v_cache.dims[1]", "v_cache.dims[2]", "v_cache.dims[3]"};
  for (int i = 0; i < 4; ++i)
    TRY(ingot_dim_equal(kVc[i], g->v_cache.dims[i], g->k_cache.dims[i], "same dim of k_cache", err, n));
  TRY(ingot_dim_equal("k_cache.dims[2]", g->k_cache.dims[2], Hkv, kNew[2], err, n));
  TRY(ingot_dim_equal("k_cache.dims[3]", g->k_cache.dims[3], D, kNew[3], err, n));
  TRY(ingot_dim_equal("seq_lens.dims[0]", g->seq_lens.dims[0], B, kNew[0], err, n));
  if (B > INT32_MAX || Sq > INT32_MAX || Hkv > INT32_MAX || D > INT32_MAX)
    return bad(err, n, "graph: k_new dims [%lld,%lld,%lld,%lld] (allowed: each <= %d)", (long long)B,
               (long long)Sq, (long long)Hkv, (long long)D, INT32_MAX);
  /* knowable at plan time: more new tokens than a sequence can ever hold */
  if (Sq > g->capacity)
    return bad(err, n, "graph: k_new.dims[1] (Sq) = %lld (allowed: 1..%lld, the capacity)", (long long)Sq,
               (long long)g->capacity);
  /* the caches are written: an element of their own per index */
  TRY(ingot_tensor_check_no_overlap(&g->k_cache, "k_cache", err, n));
  TRY(ingot_tensor_check_no_overlap(&g->v_cache, "v_cache", err, n));
  const char *dt = ingot_dtype_name(g->k_new.dtype);
  if (g->v_new.dtype != g->k_new.dtype)
    return bad(err, n, "graph: v_new.dtype = %s (allowed: %s, the dtype of k_new)", ingot_dtype_name(g->v_new.dtype), dt);
  if (g->k_cache.dtype != g->k_new.dtype)
    return bad(err, n, "graph: k_cache.dtype = %s (allowed: %s, the dtype of k_new: the append copies, it does "
               "not convert)", ingot_dtype_name(g->k_cache.dtype), dt);
  if (g->v_cache.dtype != g->k_new.dtype)
    return bad(err, n, "graph: v_cache.dtype = %s (allowed: %s, the dtype of k_new)", ingot_dtype_name(g->v_cache.dtype),
               dt);
  if (g->kv_layout == INGOT_KV_CONTIGUOUS) {
    TRY(ingot_dim_equal("k_cache.dims[0]", g->k_cache.dims[0], B, kNew[0], err, n));
    TRY(ingot_dim_equal("k_cache.dims[1]", g->k_cache.dims[1], g->capacity, "capacity", err, n));
    if (g->page_table.rank != 0)
      return bad(err, n, "graph: page_table.rank = %d (allowed: 0, the KV layout is contiguous)", g->page_table.rank);
  } else {
    TRY(ingot_tensor_check(&g->page_table, "page_table", 2, 0, err, n));
    TRY(ingot_dim_equal("page_table.dims[0]", g->page_table.dims[0], B, kNew[0], err, n));
    const int64_t page = g->k_cache.dims[1];
    if (page > INT32_MAX || g->k_cache.dims[0] > INT32_MAX)
      return bad(err, n, "graph: k_cache dims [%lld,%lld,...] (pages, page size; allowed: each <= %d)",
                 (long long)g->k_cache.dims[0], (long long)page, INT32_MAX);
    int64_t reach;
    if (__builtin_mul_overflow(g->page_table.dims[1], page, &reach) || reach < g->capacity)
      return bad(err, n, "graph: capacity = %lld exceeds page_table.dims[1] x page size = %lld x %lld (allowed: a "
                 "page-table row that reaches the capacity)", (long long)g->capacity,
                 (long long)g->page_table.dims[1], (long long)page);
  }
  return INGOT_OK;
}

static const ingot_field kFields[] = {
    {"dtype", INGOT_FIELD_STRING},           {"kv_layout", INGOT_FIELD_STRING},
    {"batch", INGOT_FIELD_INT},              {"num_kv_heads", INGOT_FIELD_INT},
    {"seq_q", INGOT_FIELD_INT},              {"head_dim", INGOT_FIELD_INT},
    {"capacity", INGOT_FIELD_INT},           {"page_size", INGOT_FIELD_INT},
    {"advance", INGOT_FIELD_BOOL},           {"k_new.layout", INGOT_FIELD_STRING},
    {"v_new.layout", INGOT_FIELD_STRING},    {"k_cache.layout", INGOT_FIELD_STRING},
    {"v_cache.layout", INGOT_FIELD_STRING},  {"seq_lens.dtype", INGOT_FIELD_STRING},
    {"seq_lens.memory", INGOT_FIELD_STRING}, {"seq_lens.layout", INGOT_FIELD_STRING},
    {"page_table.dtype", INGOT_FIELD_STRING}, {"page_table.layout", INGOT_FIELD_STRING},
};

static json_t *field(const void *graph, const char *f) {
  const ingot_kv_append_graph *g = graph;
  const int paged = g->kv_layout == INGOT_KV_PAGED;
  if (!strcmp(f, "dtype")) return json_string(ingot_dtype_name(g->k_new.dtype));
  if (!strcmp(f, "kv_layout")) return json_string(paged ? "paged" : "contiguous");
  if (!strcmp(f, "batch")) return json_integer(g->k_new.dims[0]);
  if (!strcmp(f, "seq_q")) return json_integer(g->k_new.dims[1]);
  if (!strcmp(f, "num_kv_heads")) return json_integer(g->k_new.dims[2]);
  if (!strcmp(f, "head_dim")) return json_integer(g->k_new.dims[3]);
  if (!strcmp(f, "capacity")) return json_integer(g->capacity);
  if (!strcmp(f, "page_size")) return json_integer(paged ? g->k_cache.dims[1] : 0);
  if (!strcmp(f, "advance")) return json_boolean(g->advance != 0);
  if (!strcmp(f, "k_new.layout")) return json_string(ingot_layout_dense_d(&g->k_new));
  if (!strcmp(f, "v_new.layout")) return json_string(ingot_layout_dense_d(&g->v_new));
  if (!strcmp(f, "k_cache.layout")) return json_string(ingot_layout_dense_d(&g->k_cache));
  if (!strcmp(f, "v_cache.layout")) return json_string(ingot_layout_dense_d(&g->v_cache));
  if (!strcmp(f, "seq_lens.dtype")) return json_string(ingot_dtype_name(g->seq_lens.dtype));
  if (!strcmp(f, "seq_lens.memory")) return json_string(g->seq_lens.memory == INGOT_MEMORY_HOST ? "host" : "device");
  if (!strcmp(f, "seq_lens.layout")) return json_string(ingot_layout_flat(&g->seq_lens));
  if (!strcmp(f, "page_table.dtype")) return json_string(ingot_dtype_or_absent(&g->page_table));
  if (!strcmp(f, "page_table.layout")) return json_string(ingot_layout_rows(&g->page_table));
  return NULL;
}

static int field_note(const void *graph, const char *f, char *buf, size_t size) {
  const ingot_kv_append_graph *g = graph;
  if (size) buf[0] = '\0';
  return !(strcmp(f, "page_size") == 0 && g->kv_layout != INGOT_KV_PAGED); /* no pages: not a value to admit */
}

static const ingot_meta_field kMetaFields[] = {{"dtype", "string"}, {"kv_layout", "string"}, {"threads", "int"}};

/* What no plan of the family accepts is refused here: threads that are not
 * whole waves of every arch the kernel is built for. */
static int meta_decode(json_t *md, const char *const *archs, size_t num_archs, void *out, char *where, size_t wn,
                       char *err, size_t en) {
  ingot_kva_kernel_meta *m = out;
  if (!ingot_meta_dtype_layout(md, &m->dtype, &m->paged, where, wn, err, en)) return 0;
  json_t *t = json_object_get(md, "threads");
  const json_int_t threads = json_is_integer(t) ? json_integer_value(t) : 0;
  if (threads < 1 || threads > INGOT_KVA_MAX_THREADS)
    return ingot_meta_fail(where, wn, "threads", err, en, "%lld (allowed: 1..%d)", (long long)threads, INGOT_KVA_MAX_THREADS);
  for (size_t a = 0; a < num_archs; ++a) {
    const int wave = ingot_arch_wave_size(archs[a]);
    if (wave > 0 && threads % wave != 0)
      return ingot_meta_fail(where, wn, "threads", err, en, "%lld (allowed: a multiple of %d, the wave size of %s)",
                     (long long)threads, wave, archs[a]);
  }
  m->threads = (int)threads;
  return 1;
}

static int waves(const void *meta) {
  (void)meta;
  return 0; /* the append launches one workgroup per sequence: no occupancy model */
}

static ingot_status check_buffers(const void *graph, const void *buffers, char *err, size_t n) {
  const ingot_kv_append_graph *g = graph;
  const ingot_kv_append_buffers *b = buffers;
  TRY(ingot_buffer_need(b->k_new, "k_new", "the graph's k_new", 16, err, n));
  TRY(ingot_buffer_need(b->v_new, "v_new", "the graph's v_new", 16, err, n));
  TRY(ingot_buffer_need(b->k_cache, "k_cache", "the graph's k_cache", 16, err, n));
  TRY(ingot_buffer_need(b->v_cache, "v_cache", "the graph's v_cache", 16, err, n));
  TRY(ingot_buffer_need(b->seq_lens, "seq_lens", "the lengths, in device memory", 4, err, n));
  if (g->kv_layout == INGOT_KV_PAGED)
    TRY(ingot_buffer_need(b->page_table, "page_table", "the KV layout is paged", 4, err, n));
  return INGOT_OK;
}

const ingot_family ingot_family_kv_append = {
    .name = INGOT_FAMILY_KV_APPEND,
    .graph_size = sizeof(ingot_kv_append_graph),
    .buffers_size = sizeof(ingot_kv_append_buffers),
    .validate = validate,
    .fields = kFields,
    .num_fields = sizeof(kFields) / sizeof(kFields[0]),
    .field = field,
    .field_note = field_note,
    .meta_fields = kMetaFields,
    .num_meta_fields = sizeof(kMetaFields) / sizeof(kMetaFields[0]),
    .meta_decode = meta_decode,
    .score_cmp = NULL, /* kernels that both admit a graph do the same work: the pack's priority decides */
    .tie_cmp = NULL,
    .waves = waves,
    .check_buffers = check_buffers,
};
