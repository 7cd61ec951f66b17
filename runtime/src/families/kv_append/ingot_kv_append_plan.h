/* ingot_kv_append_plan.h: planning for the KV-cache append kernels
 * (templates/ingot_kva_append.h), written once by hand; each pack's generated
 * dispatch stub (templates/kv_append_dispatch.c.j2) binds its kernarg layout to
 * it, and the family (kv_append_family.c) decodes kernel metadata into
 * ingot_kva_kernel_meta. Pure functions: no allocation, no driver calls. The
 * graph reaching the plan has passed the family's validate; the plan checks
 * again what the kernel itself depends on, so a stub called on its own
 * (tests/fuzz) refuses rather than plans a launch that could write outside the
 * caller's buffers. */
#ifndef INGOT_KV_APPEND_PLAN_H
#define INGOT_KV_APPEND_PLAN_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "ingot/kv_append.h"
#include "ingot_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds every kernel of the family keeps (INGOT_KVA_HEAD_DIM_STEP,
 * INGOT_KVA_MAX_HEAD_DIM, INGOT_KVA_MAX_THREADS) and the launch entry
 * (INGOT_KVA_ENTRY_APPEND): generator/ingot/families/kv_append.py's, in the
 * generated ingot_abi.h. */

/* Metadata of a kernel of the family, decoded from its KMD-typed metadata in
 * the KDP (kv_append_family.c, meta_decode). */
typedef struct ingot_kva_kernel_meta {
  int dtype;   /* INGOT_DTYPE_BF16 / INGOT_DTYPE_FP16 */
  int paged;   /* 0 contiguous, 1 paged */
  int threads; /* threads per workgroup */
} ingot_kva_kernel_meta;

/* The scalars a plan fixes for the kernel (ingot_dispatch_plan.params), in the
 * kernarg order of the signature; pack() adds the pointers. Strides in elements:
 * new tokens [b, s, h], caches [b or page, t, h]. */
typedef struct ingot_kva_plan_params {
  int64_t k_new_stride[3], v_new_stride[3], k_cache_stride[3], v_cache_stride[3];
  int64_t page_table_stride; /* 0 for a contiguous cache */
  int32_t capacity, page_size, num_pages, sq, num_kv_heads, head_dim, advance;
} ingot_kva_plan_params;

#ifdef __cplusplus
static_assert(sizeof(ingot_kva_plan_params) <= INGOT_MAX_PLAN_PARAMS,
              "ingot_kva_plan_params must fit ingot_dispatch_plan.params");
#else
_Static_assert(sizeof(ingot_kva_plan_params) <= INGOT_MAX_PLAN_PARAMS,
               "ingot_kva_plan_params must fit ingot_dispatch_plan.params");
#endif

static inline ingot_kva_plan_params *ingot_kva_params_of(ingot_dispatch_plan *p) {
  return (ingot_kva_plan_params *)(void *)p->params.bytes;
}
static inline const ingot_kva_plan_params *ingot_kva_params_in(const ingot_dispatch_plan *p) {
  return (const ingot_kva_plan_params *)(const void *)p->params.bytes;
}

/* Little-endian stores of one kernarg (both vendors' targets are little-endian). */
static inline void ingot_kva_put8(uint8_t *dst, uint64_t v) { memcpy(dst, &v, 8); }
static inline void ingot_kva_put4(uint8_t *dst, uint32_t v) { memcpy(dst, &v, 4); }
static inline uint64_t ingot_kva_ptr(const void *p) { return (uint64_t)(uintptr_t)p; }
static inline uint64_t ingot_kva_i64(int64_t v) { return (uint64_t)v; }
static inline uint32_t ingot_kva_i32(int32_t v) { return (uint32_t)v; }

static inline const char *ingot_kva_dtype_label(int d) {
  switch (d) {
    case INGOT_DTYPE_BF16: return "bf16";
    case INGOT_DTYPE_FP16: return "fp16";
    case INGOT_DTYPE_FP32: return "fp32";
    case INGOT_DTYPE_INT32: return "int32";
    case INGOT_DTYPE_INT64: return "int64";
    default: return "invalid";
  }
}

/* One launch: grid B x 1 x 1 (a workgroup per sequence), block meta->threads,
 * programmatic (the kernel waits for the grid before it reads anything), no
 * workspace; cost = the bytes it moves (K and V of every new token read and
 * written, the lengths read and written, one page-table entry per token). */
static inline ingot_status ingot_kva_plan(const ingot_kva_kernel_meta *m, const ingot_kv_append_graph *g,
                                          const ingot_device_caps *caps, ingot_dispatch_plan *out, char *err,
                                          size_t err_size) {
  if (!out) return ingot_dispatch_refuse(err, err_size, "plan: NULL output");
  memset(out, 0, sizeof *out);
  if (!m || !g || !caps) return ingot_dispatch_refuse(err, err_size, "plan: NULL argument");
  if (g->k_new.rank != 4 || g->v_new.rank != 4 || g->k_cache.rank != 4 || g->v_cache.rank != 4 ||
      g->seq_lens.rank != 1)
    return ingot_dispatch_refuse(err, err_size,
                                 "plan: k_new, v_new, k_cache and v_cache must have rank 4, seq_lens rank 1");
  const ingot_dtype dt = g->k_new.dtype;
  if ((int)dt != m->dtype)
    return ingot_dispatch_refuse(err, err_size, "plan: dtype %s (allowed: %s, the kernel's)", ingot_kva_dtype_label(dt),
                           ingot_kva_dtype_label(m->dtype));
  if (g->v_new.dtype != dt || g->k_cache.dtype != dt || g->v_cache.dtype != dt)
    return ingot_dispatch_refuse(err, err_size,
                                 "plan: v_new %s, k_cache %s, v_cache %s (allowed: %s, the dtype of k_new)",
                           ingot_kva_dtype_label(g->v_new.dtype), ingot_kva_dtype_label(g->k_cache.dtype),
                           ingot_kva_dtype_label(g->v_cache.dtype), ingot_kva_dtype_label(dt));
  const int paged = g->kv_layout == INGOT_KV_PAGED;
  if (paged != m->paged)
    return ingot_dispatch_refuse(err, err_size, "plan: kv_layout %s (allowed: %s, the kernel's)",
                           paged ? "paged" : "contiguous", m->paged ? "paged" : "contiguous");
  if (m->threads < 1 || m->threads > INGOT_KVA_MAX_THREADS ||
      (caps->wave_size > 0 && m->threads % caps->wave_size != 0))
    return ingot_dispatch_refuse(err, err_size,
                                 "plan: kernel threads %d (allowed: a multiple of the wave size %d up to %d)",
                           m->threads, caps->wave_size, INGOT_KVA_MAX_THREADS);
  const int64_t B = g->k_new.dims[0], Sq = g->k_new.dims[1], Hkv = g->k_new.dims[2], D = g->k_new.dims[3];
  if (D < INGOT_KVA_HEAD_DIM_STEP || D > INGOT_KVA_MAX_HEAD_DIM || D % INGOT_KVA_HEAD_DIM_STEP != 0)
    return ingot_dispatch_refuse(err, err_size,
                                 "plan: head dim %lld (allowed: a multiple of %d in %d..%d)", (long long)D,
                           INGOT_KVA_HEAD_DIM_STEP, INGOT_KVA_HEAD_DIM_STEP, INGOT_KVA_MAX_HEAD_DIM);
  if (g->capacity < 1 || g->capacity > INT32_MAX)
    return ingot_dispatch_refuse(err, err_size,
                                 "plan: capacity %lld (allowed: 1..%d)", (long long)g->capacity, INT32_MAX);
  if (Sq < 1 || Sq > g->capacity)
    return ingot_dispatch_refuse(err, err_size, "plan: Sq %lld (allowed: 1..%lld, the capacity)", (long long)Sq,
                           (long long)g->capacity);
  if (B < 1 || B > INT32_MAX || Hkv < 1 || Hkv > INT32_MAX)
    return ingot_dispatch_refuse(err, err_size, "plan: batch %lld, KV heads %lld (allowed: 1..%d each)", (long long)B,
                           (long long)Hkv, INT32_MAX);
  /* AMD counts a grid's work-items in 32 bits */
  if ((uint64_t)B * (uint64_t)m->threads > UINT32_MAX)
    return ingot_dispatch_refuse(err, err_size, "plan: batch %lld x %d threads = %llu work-items (allowed: <= %u)",
                           (long long)B, m->threads, (unsigned long long)((uint64_t)B * (uint64_t)m->threads),
                           UINT32_MAX);
  int64_t page_size = 0, num_pages = 0, pt_stride = 0;
  if (paged) {
    page_size = g->k_cache.dims[1];
    num_pages = g->k_cache.dims[0];
    if (g->page_table.rank != 2)
      return ingot_dispatch_refuse(err, err_size, "plan: page_table.rank %d (allowed: 2, the layout is paged)",
                             g->page_table.rank);
    pt_stride = g->page_table.strides[0];
    if (page_size < 1 || page_size > INT32_MAX || num_pages < 1 || num_pages > INT32_MAX)
      return ingot_dispatch_refuse(err, err_size, "plan: page size %lld, pages %lld (allowed: 1..%d each)",
                             (long long)page_size, (long long)num_pages, INT32_MAX);
  }

  const double tokens = (double)B * (double)Sq;
  const double row_bytes = (double)Hkv * (double)D * 2.0; /* one token's K (or V), 16-bit elements */
  out->cost = tokens * row_bytes * 4.0 /* K and V, read and written */ + (double)B * 8.0 /* lengths */ +
              (paged ? tokens * 4.0 : 0.0);
  out->num_launches = 1;
  out->num_splits = 1;
  out->workspace_bytes = 0;
  out->launches[0] = (ingot_launch){INGOT_KVA_ENTRY_APPEND, {(uint32_t)B, 1, 1}, {(uint32_t)m->threads, 1, 1}, 0,
                                    INGOT_LAUNCH_PROGRAMMATIC};
  ingot_kva_plan_params *P = ingot_kva_params_of(out);
  for (int i = 0; i < 3; ++i) {
    P->k_new_stride[i] = g->k_new.strides[i];
    P->v_new_stride[i] = g->v_new.strides[i];
    P->k_cache_stride[i] = g->k_cache.strides[i];
    P->v_cache_stride[i] = g->v_cache.strides[i];
  }
  P->page_table_stride = pt_stride;
  P->capacity = (int32_t)g->capacity;
  P->page_size = (int32_t)page_size;
  P->num_pages = (int32_t)num_pages;
  P->sq = (int32_t)Sq;
  P->num_kv_heads = (int32_t)Hkv;
  P->head_dim = (int32_t)D;
  P->advance = g->advance ? 1 : 0;
  return INGOT_OK;
}

#ifdef __cplusplus
}
#endif
#endif
