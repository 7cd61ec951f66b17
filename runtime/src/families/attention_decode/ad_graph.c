/* ad_graph.c: structural checks of an ingot_attention_graph and the derived
 * fields the matcher compares against UMD constraints (docs/INTERNALS.md 2):
 * the graph half of the attention decode family (ad_family.c). */
#include <math.h>
#include <string.h>

#include "ad_family.h"

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
  TRY(ingot_tensor_check(&g->q, "q", 4, 0, err, err_size));
  TRY(ingot_tensor_check(&g->k, "k", 4, 0, err, err_size));
  TRY(ingot_tensor_check(&g->v, "v", 4, 0, err, err_size));
  TRY(ingot_tensor_check(&g->o, "o", 4, 0, err, err_size));
  TRY(ingot_tensor_check(&g->seq_lens, "seq_lens", 1, 1, err, err_size));
  const int64_t B = g->q.dims[0], Hq = g->q.dims[1], Sq = g->q.dims[2], D = g->q.dims[3];
  const int64_t Hkv = g->k.dims[2];
  static const char *const kQDims[4] = {"batch of q", "query heads of q", "Sq of q", "head dim of q"};
  static const char *const kODims[4] = {"o.dims[0]", "o.dims[1]", "o.dims[2]", "o.dims[3]"};
  for (int i = 0; i < 4; ++i) TRY(ingot_dim_equal(kODims[i], g->o.dims[i], g->q.dims[i], kQDims[i], err, err_size));
  static const char *const kVDims[4] = {"v.dims[0]", "v.dims[1]", "v.dims[2]", "v.dims[3]"};
  for (int i = 0; i < 4; ++i)
    TRY(ingot_dim_equal(kVDims[i], g->v.dims[i], g->k.dims[i], "same dim of k", err, err_size));
  TRY(ingot_tensor_check_no_overlap(&g->o, "o", err, err_size));
  TRY(ingot_dim_equal("k.dims[3]", g->k.dims[3], D, kQDims[3], err, err_size));
  TRY(ingot_dim_equal("seq_lens.dims[0]", g->seq_lens.dims[0], B, kQDims[0], err, err_size));
  if (Hq > INT32_MAX || Hkv > INT32_MAX || Sq > INT32_MAX || D > INT32_MAX || B > INT32_MAX) {
    ingot_format(err, err_size, "graph: q or k dims exceed %d", INT32_MAX);
    return INGOT_INVALID_ARGUMENT;
  }
  if (g->kv_layout == INGOT_KV_CONTIGUOUS) {
    TRY(ingot_dim_equal("k.dims[0]", g->k.dims[0], B, kQDims[0], err, err_size));
    TRY(ingot_dim_equal("k.dims[1]", g->k.dims[1], g->capacity, "capacity", err, err_size));
    if (g->page_table.rank != 0) {
      ingot_format(err, err_size,
                   "graph: page_table.rank = %d (allowed: 0, the KV layout is contiguous)",
                   g->page_table.rank);
      return INGOT_INVALID_ARGUMENT;
    }
  } else {
    TRY(ingot_tensor_check(&g->page_table, "page_table", 2, 0, err, err_size));
    TRY(ingot_dim_equal("page_table.dims[0]", g->page_table.dims[0], B, kQDims[0], err, err_size));
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
    TRY(ingot_tensor_check(&g->lse, "lse", 3, 0, err, err_size));
    for (int i = 0; i < 3; ++i) {
      static const char *const kL[3] = {"lse.dims[0]", "lse.dims[1]", "lse.dims[2]"};
      TRY(ingot_dim_equal(kL[i], g->lse.dims[i], g->q.dims[i], kQDims[i], err, err_size));
    }
    TRY(ingot_tensor_check_no_overlap(&g->lse, "lse", err, err_size));
  }
  return INGOT_OK;
}

/* ---- derived fields ------------------------------------------------------- */


json_t *ingot_graph_field(const ingot_attention_graph *g, const char *f) {
  const int64_t Hq = g->q.dims[1], Hkv = g->k.dims[2];
  if (!strcmp(f, "dtype")) return json_string(ingot_dtype_name(g->q.dtype));
  if (!strcmp(f, "kv_dtype")) return json_string(ingot_dtype_name(g->k.dtype));
  if (!strcmp(f, "v_dtype")) return json_string(ingot_dtype_name(g->v.dtype));
  if (!strcmp(f, "o_dtype")) return json_string(ingot_dtype_name(g->o.dtype));
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
  if (!strcmp(f, "lse.dtype")) return json_string(ingot_dtype_or_absent(&g->lse));
  if (!strcmp(f, "seq_lens.dtype")) return json_string(ingot_dtype_name(g->seq_lens.dtype));
  if (!strcmp(f, "seq_lens.memory"))
    return json_string(g->seq_lens.memory == INGOT_MEMORY_HOST ? "host" : "device");
  if (!strcmp(f, "seq_lens.layout")) return json_string(ingot_layout_flat(&g->seq_lens));
  if (!strcmp(f, "page_table.dtype")) return json_string(ingot_dtype_or_absent(&g->page_table));
  if (!strcmp(f, "page_table.layout")) return json_string(ingot_layout_rows(&g->page_table));
  if (!strcmp(f, "q.layout")) return json_string(ingot_layout_dense_d(&g->q));
  if (!strcmp(f, "k.layout")) return json_string(ingot_layout_dense_d(&g->k));
  if (!strcmp(f, "v.layout")) return json_string(ingot_layout_dense_d(&g->v));
  if (!strcmp(f, "o.layout")) return json_string(ingot_layout_dense_d(&g->o));
  if (!strcmp(f, "lse.layout")) return json_string(ingot_layout_flat(&g->lse));
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
