/* ingot runtime: the KV-cache append family, the other half of a decode step.
 *
 * One launch writes Sq new tokens' K and V per sequence into a contiguous or
 * paged cache at positions seq_lens[b], seq_lens[b] + 1, ..., through the
 * caller's page table, and (advance = 1) moves seq_lens[b] past them on the
 * device, so that append and attention (ingot.h) replay as one CUDA / HIP graph
 * token after token. Everything of ingot.h holds: contexts, packs, plans,
 * errors; a plan of this family is made and executed with the calls below and
 * destroyed with ingot_plan_destroy.
 *
 * On the device, per sequence b: L = seq_lens[b] clamped to [0, capacity];
 * token t goes to position L + t when L + t < capacity (paged: into page
 * page_table[b][(L + t) / page_size], when that entry is in [0, num_pages)),
 * else it is not written: nothing outside the target slots is ever written.
 * With advance, seq_lens[b] becomes min(L + Sq, capacity) once the writes are
 * done. What a plan can know it refuses (Sq > capacity, a page table that
 * cannot reach capacity, shapes that differ between the new tokens and the
 * cache). Docs: docs/kv_append.md. */
#ifndef INGOT_KV_APPEND_H
#define INGOT_KV_APPEND_H

#include "ingot/ingot.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INGOT_FAMILY_KV_APPEND "kv_append"

typedef struct ingot_kv_append_graph {
  ingot_tensor_desc k_new;      /* [B, Sq, Hkv, D]: the new tokens' keys (bf16 / fp16) */
  ingot_tensor_desc v_new;      /* [B, Sq, Hkv, D], dtype of k_new */
  ingot_tensor_desc k_cache;    /* contiguous [B, capacity, Hkv, D]; paged [num_pages, page_size, Hkv, D] */
  ingot_tensor_desc v_cache;    /* as k_cache */
  ingot_tensor_desc seq_lens;   /* [B] int32, device: each sequence's length before the append */
  ingot_tensor_desc page_table; /* [B, max_pages] int32, paged layout only (rank 0 otherwise) */
  ingot_kv_layout kv_layout;
  int64_t capacity;             /* tokens each sequence may hold */
  int advance;                  /* 1: seq_lens[b] = min(L + Sq, capacity) after the writes; 0: unchanged */
} ingot_kv_append_graph;

typedef struct ingot_kv_append_buffers {
  const void *k_new;
  const void *v_new;
  void *k_cache;
  void *v_cache;
  int32_t *seq_lens; /* device; written when the graph advances */
  const int32_t *page_table;
} ingot_kv_append_buffers;

static inline ingot_status ingot_kv_append_plan_create(ingot_context *ctx, const ingot_kv_append_graph *graph,
                                                       ingot_plan **out) {
  return ingot_plan_create_family(ctx, INGOT_FAMILY_KV_APPEND, graph, sizeof *graph, out);
}

/* Launches on stream; needs no workspace (ingot_plan_workspace_size is 0). */
static inline ingot_status ingot_kv_append_execute(const ingot_plan *plan, void *stream,
                                                   const ingot_kv_append_buffers *buffers, char *err,
                                                   size_t err_size) {
  return ingot_plan_execute_family(plan, stream, buffers, sizeof *buffers, NULL, 0, err, err_size);
}

#ifdef __cplusplus
}
#endif
#endif /* INGOT_KV_APPEND_H */
