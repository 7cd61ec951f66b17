/* ad_family.c: the attention decode family's table (family.h): its kernel
 * metadata, ranking and buffers, and the public calls of ingot.h that name
 * the attention graph and buffers. The graph itself is ad_graph.c. */
#include <stdio.h>
#include <string.h>

#include "ad_family.h"

_Static_assert(sizeof(ingot_attention_graph) <= INGOT_MAX_GRAPH_BYTES, "the attention graph fits a plan's copy");
_Static_assert(sizeof(ingot_ad_kernel_meta) <= INGOT_MAX_META_BYTES, "the metadata fits a kernel's");

/* The derived graph fields UMD constraints name (docs/INTERNALS.md section 2; ad_graph.c). */
static const ingot_field kFields[] = {
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

/* The KMD fields ingot_ad_kernel_meta is filled from. */
static const ingot_meta_field kMetaFields[] = {
    {"dtype", "string"},      {"head_dim", "int"},   {"group", "int"},
    {"max_sq", "int"},        {"rows", "int"},       {"waves", "int"},
    {"tokens_per_wave", "int"}, {"max_splits", "int"}, {"kv_layout", "string"},
    {"lse", "bool"},          {"row_waves", "bool"},
};

static int int_field(json_t *md, const char *key, int *out, char *where, size_t wn, char *err, size_t en) {
  json_t *v = json_object_get(md, key);
  if (!json_is_integer(v))
    return ingot_meta_fail(where, wn, key, err, en, "%s (allowed: an integer in 1..%d)", ingot_json_type_name(v), INT32_MAX);
  const json_int_t x = json_integer_value(v);
  if (x < 1 || x > INT32_MAX)
    return ingot_meta_fail(where, wn, key, err, en, "%lld (allowed: 1..%d)", (long long)x, INT32_MAX);
  *out = (int)x;
  return 1;
}

/* The metadata, and what the plan (ingot_attention_decode_plan.h) would
 * refuse for every graph, refused with the range a plan accepts. */
static int meta_decode(json_t *md, const char *const *archs, size_t num_archs, void *out, char *where,
                       size_t wn, char *err, size_t en) {
  ingot_ad_kernel_meta *m = out;
  if (!ingot_meta_dtype_layout(md, &m->dtype, &m->paged, where, wn, err, en)) return 0;
  m->lse = json_is_true(json_object_get(md, "lse"));
  m->row_waves = json_is_true(json_object_get(md, "row_waves"));
  if (!int_field(md, "head_dim", &m->head_dim, where, wn, err, en) ||
      !int_field(md, "group", &m->group, where, wn, err, en) ||
      !int_field(md, "max_sq", &m->max_sq, where, wn, err, en) ||
      !int_field(md, "rows", &m->rows, where, wn, err, en) ||
      !int_field(md, "waves", &m->waves, where, wn, err, en) ||
      !int_field(md, "tokens_per_wave", &m->tokens_per_wave, where, wn, err, en) ||
      !int_field(md, "max_splits", &m->max_splits, where, wn, err, en))
    return 0;
  if (m->head_dim % INGOT_AD_HEAD_DIM_STEP != 0)
    return ingot_meta_fail(where, wn, "head_dim", err, en, "%d (allowed: a multiple of %d; the plan refuses others)",
                   m->head_dim, INGOT_AD_HEAD_DIM_STEP);
  for (size_t a = 0; a < num_archs; ++a) {
    const int wave = ingot_arch_wave_size(archs[a]);
    if (wave > 0 && m->waves > INGOT_AD_MAX_BLOCK_THREADS / wave)
      return ingot_meta_fail(where, wn, "waves", err, en,
                     "%d (allowed: 1..%d: waves x wave size %d on %s <= %d threads per workgroup)", m->waves,
                     INGOT_AD_MAX_BLOCK_THREADS / wave, wave, archs[a], INGOT_AD_MAX_BLOCK_THREADS);
  }
  /* a workgroup's rows (a wave's, times the waves under row_waves) and a
   * sequence's query tokens (the kernels' register tiles) */
  const int max_rows = INGOT_AD_MAX_ROWS * (m->row_waves ? m->waves : 1);
  if (m->rows > max_rows || m->max_sq > INGOT_AD_MAX_SQ || (m->row_waves && (m->waves < 2 || m->rows % m->waves)))
    return ingot_meta_fail(where, wn, "", err, en,
                   "rows %d, max_sq %d, waves %d, row_waves %s (allowed: rows 1..%d per wave, max_sq 1..%d; "
                   "row_waves: 2+ waves, rows a multiple of them)", m->rows, m->max_sq, m->waves,
                   m->row_waves ? "true" : "false", INGOT_AD_MAX_ROWS, INGOT_AD_MAX_SQ);
  return 1;
}

/* Score (docs/INTERNALS.md section 3): the tightest max_sq for the graph's Sq. */
static int score_cmp(const void *a, const void *b, const void *graph) {
  const ingot_ad_kernel_meta *ma = a, *mb = b;
  const int64_t sq = ((const ingot_attention_graph *)graph)->q.dims[2];
  const int64_t sa = -((int64_t)ma->max_sq - sq), sb = -((int64_t)mb->max_sq - sq);
  return sa == sb ? 0 : sa > sb ? 1 : -1;
}

/* Among equal ranks: fewer waves per workgroup first. */
static int tie_cmp(const void *a, const void *b) {
  const ingot_ad_kernel_meta *ma = a, *mb = b;
  return ma->waves == mb->waves ? 0 : ma->waves < mb->waves ? -1 : 1;
}

static int waves(const void *meta) { return ((const ingot_ad_kernel_meta *)meta)->waves; }

#define TRY(x)                                                                                     \
  do {                                                                                             \
    ingot_status s_ = (x);                                                                         \
    if (s_ != INGOT_OK) return s_;                                                                 \
  } while (0)

static ingot_status check_buffers(const void *graph, const void *buffers, char *err, size_t n) {
  const ingot_attention_graph *g = graph;
  const ingot_attention_buffers *b = buffers;
  TRY(ingot_buffer_need(b->q, "q", "the graph's q", 16, err, n));
  TRY(ingot_buffer_need(b->k, "k", "the graph's k", 16, err, n));
  TRY(ingot_buffer_need(b->v, "v", "the graph's v", 16, err, n));
  TRY(ingot_buffer_need(b->o, "o", "the graph's o", 16, err, n));
  TRY(ingot_buffer_need(b->seq_lens, "seq_lens", "the valid lengths, in device memory", 4, err, n));
  if (g->lse.rank != 0) TRY(ingot_buffer_need(b->lse, "lse", "the graph has an LSE output", 4, err, n));
  if (g->kv_layout == INGOT_KV_PAGED)
    TRY(ingot_buffer_need(b->page_table, "page_table", "the KV layout is paged", 4, err, n));
  return INGOT_OK;
}

static ingot_status validate(const void *graph, char *err, size_t n) { return ingot_graph_validate(graph, err, n); }
static json_t *field(const void *graph, const char *name) { return ingot_graph_field(graph, name); }
static int field_note(const void *graph, const char *name, char *buf, size_t size) {
  return ingot_graph_field_note(graph, name, buf, size);
}

const ingot_family ingot_family_attention_decode = {
    .name = "attention_decode",
    .graph_size = sizeof(ingot_attention_graph),
    .buffers_size = sizeof(ingot_attention_buffers),
    .validate = validate,
    .fields = kFields,
    .num_fields = sizeof(kFields) / sizeof(kFields[0]),
    .field = field,
    .field_note = field_note,
    .meta_fields = kMetaFields,
    .num_meta_fields = sizeof(kMetaFields) / sizeof(kMetaFields[0]),
    .meta_decode = meta_decode,
    .score_cmp = score_cmp,
    .tie_cmp = tie_cmp,
    .waves = waves,
    .check_buffers = check_buffers,
};

/* ---- the public calls of ingot.h that take the attention structs --------- */

INGOT_API ingot_status ingot_plan_create(ingot_context *ctx, const ingot_attention_graph *graph, ingot_plan **out) {
  return ingot_plan_create_family(ctx, ingot_family_attention_decode.name, graph, sizeof *graph, out);
}

INGOT_API ingot_status ingot_plan_execute_ex(const ingot_plan *plan, void *stream, const ingot_attention_buffers *b,
                                             void *workspace, size_t workspace_size, char *err, size_t n) {
  return ingot_plan_execute_family(plan, stream, b, sizeof *b, workspace, workspace_size, err, n);
}

INGOT_API ingot_status ingot_plan_execute(const ingot_plan *plan, void *stream, const ingot_attention_buffers *b,
                                          void *workspace, size_t workspace_size) {
  char err[512];
  return ingot_plan_execute_family(plan, stream, b, sizeof *b, workspace, workspace_size, err, sizeof err);
}
