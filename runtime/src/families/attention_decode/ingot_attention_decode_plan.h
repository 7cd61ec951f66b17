/* ingot_attention_decode_plan.h: planning for the attention decode kernels
 * (templates/ingot_attention_decode.h), written once by hand; each pack's
 * generated dispatch stub binds its kernarg layout and split policy to it.
 * Pure functions: no allocation, no driver calls, every size product checked. */
#ifndef INGOT_ATTENTION_DECODE_DISPATCH_H
#define INGOT_ATTENTION_DECODE_DISPATCH_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "ingot_attention_decode_balance.h"
#include "ingot_attention_decode_limits.h"

/* The bounds the plan enforces on every kernel (INGOT_AD_MAX_BLOCK_THREADS,
 * _MAX_PAGE_SIZE, _HEAD_DIM_STEP, _MAX_ROWS, _MAX_SQ, _MAX_GROUP, _MAX_KV_HEADS,
 * _MAX_BATCH) are the generator's, in ingot_abi.h (through the limits header);
 * the pack loader refuses metadata outside them at open (ad_family.c), since no
 * plan could pass. INGOT_AD_TOKEN_INDEX_TILES: the kernels' token indices
 * (segment ends, a chunk's first token, the tokens a wave loads ahead) are
 * int32 and run up to that many tiles (waves x tokens_per_wave) past the
 * capacity: one in the length's round-up, two in the register pipeline's next
 * chunk, stages - 1 in the shared-memory ring's copies ahead (stages <= 8).
 * Capacities up to 2^31 - 1 less that many tiles stay inside int32 (the split
 * loops, ChunkPages); every offset built from them is int64. */

/* Metadata of a kernel of the family, decoded from its KMD-typed metadata in
 * the KDP (runtime/src/families/attention_decode/ad_family.c). */
typedef struct ingot_ad_kernel_meta {
  int dtype;         /* INGOT_DTYPE_BF16 / INGOT_DTYPE_FP16 */
  int head_dim;
  int group;         /* the group its rows are sized for (Hq / Hkv is runtime: params group) */
  int max_sq;
  int rows;          /* rows per workgroup */
  int waves;
  int tokens_per_wave;
  int max_splits;
  int paged;         /* 0 contiguous, 1 paged */
  int lse;           /* kernel may write LSE */
  int row_waves;     /* non-zero: the waves take different rows of the same tokens (knob row_waves) */
} ingot_ad_kernel_meta;

/* Tokens a workgroup of kernel m takes per step (a tile): every wave's chunk, or
 * one chunk for all its waves under row_waves. */
static inline int64_t ingot_ad_tile(const ingot_ad_kernel_meta *m) {
  return (int64_t)(m->row_waves ? 1 : m->waves) * m->tokens_per_wave;
}

/* The scalars a plan fixes for the kernels (ingot_dispatch_plan.params): the
 * graph's strides, sizes, flags, scale; pack() adds the pointers. */
typedef struct ingot_ad_params {
  int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
  int64_t page_table_stride;
  int32_t capacity, page_size, sq, num_kv_heads, flags;
  float scale;
  int32_t group; /* Hq / Hkv: the kernels run any group on their row tile */
} ingot_ad_params;

_Static_assert(sizeof(ingot_ad_params) <= INGOT_MAX_PLAN_PARAMS, "ingot_ad_params must fit ingot_dispatch_plan.params");

static inline ingot_ad_params *ingot_ad_params_of(ingot_dispatch_plan *p) {
  return (ingot_ad_params *)(void *)p->params.bytes;
}
static inline const ingot_ad_params *ingot_ad_params_in(const ingot_dispatch_plan *p) {
  return (const ingot_ad_params *)(const void *)p->params.bytes;
}

typedef struct ingot_ad_policy {
  int ctas_per_cu;           /* resident split workgroups per CU when the device cannot say */
  int min_tiles_per_split;   /* a segment covers at least this many tiles of capacity */
  int max_tiles_per_split;   /* longer caches get more segments, in whole waves */
  int saturating_percent;    /* this share of the resident workgroups keeps DRAM busy */
  int saturating_cu_percent; /* ... when spread over at least this share of the CUs */
  int kernel_max_splits;     /* the kernels' own limit (kMaxSplits) */
} ingot_ad_policy;

/* Writes one kernarg; the static assertion ties the generated signature's size
 * to the C type of the value written. */
#define INGOT_AD_PUT(dst, val, n)                                      \
  do {                                                                 \
    __typeof__(val) ingot_v_ = (val);                                  \
    _Static_assert(sizeof ingot_v_ == (n), "kernarg size mismatch");   \
    memcpy((dst), &ingot_v_, (n));                                     \
  } while (0)
#define ingot_ad_put8(dst, val) INGOT_AD_PUT(dst, val, 8)
#define ingot_ad_put4(dst, val) INGOT_AD_PUT(dst, val, 4)

static inline int ingot_ad_mul(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

static inline int64_t ingot_ad_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The merge grid in the time model's units (below): on the H200 a plan's
 * floor is 4.3 us with it and 2.4 us without (B=16, Hq/Hkv 32/8, 8K), and one
 * step of a saturated round about 1.1 us (docs/PERFORMANCE.md). */
#define INGOT_AD_MERGE_STEPS 2.0

/* percent % of n, rounded down, at least 1 (n up to INT64_MAX / 100 x 100 without overflow). */
static inline int64_t ingot_ad_share(int64_t n, int percent) {
  const int64_t v = n / 100 * percent + n % 100 * percent / 100;
  return v < 1 ? 1 : v;
}

/* The time model of a plan, in tile steps of one workgroup. base x splits
 * equal segments run in rounds of `resident` workgroups; a round streams one
 * segment (its tiles plus one: the first load's latency) in the time of the
 * slowest of three limits, the round's n workgroups (one segment time),
 * DRAM (`saturating` workgroups keep it busy: n / saturating segment times)
 * and its CUs (a CU streams at most 1 / `saturating_cus` of DRAM, and one
 * workgroup goes to each CU before any gets a second); then the merge grid, if
 * any. A last round of a few workgroups costs a whole segment time while
 * moving little: the tail the segment count's refinement removes. Kernels
 * that differ only in their waves per workgroup compare in the same units: a
 * step is one chunk per wave, and resident and saturating count this kernel's
 * workgroups. In doubles (the products can pass 2^63).
 *
 * Two terms make kernels of different row tiles comparable (decision 0033),
 * calibrated on the multi-query crossover of decision 0032 (H200: 48/1 and
 * 71/1, B 1..32, 8K and 64K): each segment writes a partial of rows x D fp32,
 * INGOT_AD_PARTIAL_STEPS x rows / tile steps of its workgroup, and the merge
 * reads them all back (INGOT_AD_MERGE_READ x the partials' elements over what
 * a saturated step streams, sat x waves x tokens_per_wave tokens); and the row
 * blocks after a KV head's first read its K and V from L2, so they weigh
 * INGOT_AD_L2_REREAD of a workgroup against DRAM (they still take CUs). The
 * terms (traffic 1) go into the plan's cost only: the segment count is chosen
 * without them, so every kernel keeps the counts it was measured with
 * (tests/runtime/test_split_policy.c). In whole steps, they tie for kernels
 * whose partials are a fraction of a step (the 4- and 8-wave kernels). */
#define INGOT_AD_PARTIAL_STEPS 2.0
#define INGOT_AD_MERGE_READ 4.0
#define INGOT_AD_L2_REREAD 0.25

typedef struct ingot_ad_model {
  int64_t resident, cus, saturating, saturating_cus; /* the device, in this kernel's workgroups */
  int64_t tile, rows, chunk_tokens;                  /* the kernel: tokens a step, rows a block, waves x tokens_per_wave */
  int64_t row_blocks;                                /* row blocks per KV head */
} ingot_ad_model;

static inline double ingot_ad_round_time(const ingot_ad_model *md, int64_t n, int traffic) {
  if (n == 0) return 0.0;
  const int64_t busy = n < md->cus ? n : md->cus;
  const double dram_weight =
      traffic ? (1.0 + (double)(md->row_blocks - 1) * INGOT_AD_L2_REREAD) / (double)md->row_blocks : 1.0;
  const double by_dram = (double)n * dram_weight / (double)md->saturating;
  const double by_cus = (double)n / (double)busy * (double)md->saturating_cus / (double)md->saturating;
  const double t = by_dram > 1.0 ? by_dram : 1.0;
  return by_cus > t ? by_cus : t;
}

static inline double ingot_ad_split_cost(const ingot_ad_model *md, int64_t base, int64_t splits, int64_t capacity,
                                         int traffic) {
  const int64_t n = base * splits, full = n / md->resident, rest = n % md->resident;
  const double rounds = (double)full * ingot_ad_round_time(md, md->resident, traffic) +
                        ingot_ad_round_time(md, rest, traffic);
  double steps = (double)(ingot_ad_ceil_div(ingot_ad_ceil_div(capacity, md->tile), splits) + 1);
  double merge = INGOT_AD_MERGE_STEPS;
  if (traffic) {
    steps += ceil(INGOT_AD_PARTIAL_STEPS * (double)md->rows / (double)md->tile);
    merge += ceil(INGOT_AD_MERGE_READ * (double)n * (double)md->rows /
                  ((double)md->saturating * (double)md->chunk_tokens));
  }
  return rounds * steps + (splits > 1 ? merge : 0.0);
}

/* The scalars every plan hands the kernels: the graph's strides, sizes, flags, scale. */
static inline void ingot_ad_plan_scalars(const ingot_attention_graph *g, int paged, int64_t page_size, int64_t Sq,
                                         int64_t Hkv, int64_t group, ingot_dispatch_plan *plan) {
  ingot_ad_params *out = ingot_ad_params_of(plan);
  for (int i = 0; i < 3; ++i) {
    out->q_stride[i] = g->q.strides[i];
    out->k_stride[i] = g->k.strides[i];
    out->v_stride[i] = g->v.strides[i];
    out->o_stride[i] = g->o.strides[i];
  }
  out->page_table_stride = paged ? g->page_table.strides[0] : 0;
  out->capacity = (int32_t)g->capacity;
  out->page_size = (int32_t)page_size;
  out->sq = (int32_t)Sq;
  out->num_kv_heads = (int32_t)Hkv;
  /* kFlagCausal 1, kFlagWriteLse 2, kFlagTopLeft 1 << 12 (templates/ingot_attention_decode.h; bit 2
   * and bits 3..11, 16..30 are a balanced plan's) */
  out->flags = (g->mask == INGOT_MASK_CAUSAL ? 1 : 0) | (g->lse.rank != 0 ? 2 : 0) |
               (g->mask == INGOT_MASK_CAUSAL && g->mask_align == INGOT_ALIGN_TOP_LEFT ? INGOT_AD_FLAG_TOP_LEFT : 0);
  out->scale = g->scale;
  out->group = (int32_t)group;
}

/* INGOT_BALANCE_AUTO (the runtime's default): the plan balances a batch, in
 * one round, where its uniform segments are one per sequence (splits == 1:
 * the sequences and heads alone fill the device), or where the uniform plan's
 * modelled time at the capacity is at least INGOT_AD_BALANCE_AUTO_STEPS steps
 * of the tile and its units, splits x B, need no cap (uncapped).
 * - With one segment a sequence, its workgroups take as long as its length,
 *   so a ragged batch waits for its longest (1.7-5.7x a uniform batch of the
 *   same tokens on the H200).
 * - Balancing costs a uniform batch a fixed time, about 1-1.5 us: the scan's
 *   first pass before the first K/V load and the merge's list (its units are
 *   a multiple of B, so the plan is even and an even batch skips the scan's
 *   other passes; decision 0049). That is a step or two of the tile (H100:
 *   uniform B = 16 to 64 1.01x, B = 8 at 8K 1.02x, B = 4, 8/2 at 8K 1.08x).
 * - Past 100 steps it is about 1% of a call at the capacity, while the
 *   uniform segments leave a long sequence among short ones to its own few
 *   (B = 8, one 64K among 256s: 1.26x on the H200 on 16 segments, 1.09x
 *   balanced; decision 0051). The plan knows the capacity, not the lengths:
 *   a uniform batch much shorter than its capacity pays the fixed cost on
 *   its own, shorter call (B = 4, 8/2 at 8K in a 128K cache: about 8%, as at
 *   8K in an 8K cache).
 * - Uncapped, the long call's plan is even with K = splits: an even batch
 *   runs the uniform plan's own segments. A capped plan would cut a long
 *   capacity into fewer, longer pieces, its last round of workgroups
 *   part-empty; B = 8 at 1M tokens keeps its 256 segments a sequence, which
 *   absorb a skew themselves.
 * - A short call (small batch, short capacity: uniform B = 4, 8/2 at 8K is 19
 *   steps) keeps its segments, and the small skewed batches with them (B = 4
 *   with one 32K among 1Ks: 1.48x on segments, 1.16x balanced on an H100;
 *   docs/design/balanced-split.md, "The default"). */
#define INGOT_AD_BALANCE_AUTO_STEPS 100.0
static inline int ingot_ad_balance_auto(int64_t splits, double modelled, int uncapped) {
  return splits == 1 || (modelled >= INGOT_AD_BALANCE_AUTO_STEPS && uncapped);
}

/* The device's CUs (SMs), or an H100's 132 when the caps do not say. */
static inline int64_t ingot_ad_cus(const ingot_device_caps *caps) {
  return caps->compute_units > 0 ? caps->compute_units : 132;
}

/* Bytes of a balanced plan's workspace (templates/ingot_ad_addressing.h,
 * balanced_list_offset): per KV head lse [rows_total x slots] padded to 4
 * floats, then O [rows_total x slots x D] (slots = units + B); then the merge's
 * list (its count and an entry per sequence), int64. 0 when a product
 * overflows 64 bits. */
static inline uint64_t ingot_ad_balanced_workspace(int64_t B, int64_t Hkv, int64_t rows_total, int64_t D,
                                                   int64_t units) {
  uint64_t lse_n = 0, o_n = 0, per = 0, all = 0, bytes = 0;
  const uint64_t slots = (uint64_t)units + (uint64_t)B, prefix = (uint64_t)ingot_ad_bal_list_words(B) * 8u;
  if (ingot_ad_mul((uint64_t)rows_total, slots, &lse_n) || ingot_ad_mul(lse_n, (uint64_t)D, &o_n) ||
      __builtin_add_overflow((lse_n + 3) / 4 * 4, o_n, &per) || ingot_ad_mul(per, (uint64_t)Hkv, &all) ||
      ingot_ad_mul(all, 4u, &bytes) || __builtin_add_overflow(bytes, prefix, &bytes))
    return 0;
  return bytes;
}

/* The balanced plan (units per KV head and row block; docs/INTERNALS.md
 * "Balanced split"): split grid ((units + B - 1) x Hkv x row_blocks, 1, 1), a
 * workgroup per slot (the pieces number at most units + B - 1), the batch in
 * flags; the merge grid (columns of the uniform plan's merge with `units`
 * segments, Hkv, Z), Z from ingot_ad_bal_merge_z, always launched: it writes
 * the sequences cut into several pieces and the empty ones, which the split
 * lists. */
static inline ingot_status ingot_ad_plan_balanced(const ingot_ad_kernel_meta *m, const ingot_attention_graph *g,
                                                  const ingot_device_caps *caps, int64_t B, int64_t Hkv,
                                                  int64_t Sq, int64_t D, int64_t group, int64_t rows_total,
                                                  int64_t row_blocks,
                                                  int64_t units, int64_t fill, int paged, int64_t page_size, double cost,
                                                  ingot_dispatch_plan *out, char *err, size_t err_size) {
  const uint64_t ws = ingot_ad_balanced_workspace(B, Hkv, rows_total, D, units);
  if (ws == 0) return ingot_dispatch_refuse(err, err_size, "plan: balanced workspace size overflows 64 bits");
  const uint32_t threads = (uint32_t)(m->waves * caps->wave_size);
  const uint32_t merge_threads = (uint32_t)(INGOT_AD_MERGE_WAVES * caps->wave_size);
  const uint32_t merge_x = units <= INGOT_AD_COMPACT_MERGE_SPLITS
                               ? (uint32_t)ingot_ad_ceil_div(rows_total * (D / 4), merge_threads)
                               : (uint32_t)(rows_total * (D / INGOT_AD_MERGE_COLS(D)));
  out->num_splits = (int)units;
  out->cost = cost;
  out->workspace_bytes = ws;
  out->num_launches = 2;
  out->launches[0] = (ingot_launch){INGOT_AD_ENTRY_BALANCED_SPLIT,
                                    {(uint32_t)((units + B - 1) * Hkv * row_blocks), 1, 1}, {threads, 1, 1}, 0,
                                    INGOT_LAUNCH_PROGRAMMATIC};
  const int64_t cus = ingot_ad_cus(caps);
  const int64_t merge_z = ingot_ad_bal_merge_z(B, merge_x, Hkv, cus);
  out->launches[1] = (ingot_launch){INGOT_AD_ENTRY_BALANCED_MERGE, {merge_x, (uint32_t)Hkv, (uint32_t)merge_z},
                                    {merge_threads, 1, 1}, 0,
                                    INGOT_LAUNCH_PROGRAMMATIC};
  ingot_ad_plan_scalars(g, paged, page_size, Sq, Hkv, group, out);
  /* units a multiple of B: an even batch runs as units / B segments a sequence
   * (ingot_ad_bal_even), without the scan's second and third passes */
  ingot_ad_params_of(out)->flags |= INGOT_AD_FLAG_BALANCED | (int32_t)(B << INGOT_AD_FLAG_BATCH_SHIFT) |
                (int32_t)(fill << INGOT_AD_FLAG_FILL_SHIFT) | (units % B == 0 ? INGOT_AD_FLAG_EVEN : 0);
  return INGOT_OK;
}

static inline ingot_status ingot_ad_plan(const ingot_ad_policy *pol, const ingot_ad_kernel_meta *m,
                                         const ingot_attention_graph *g,
                                         const ingot_device_caps *caps, ingot_dispatch_plan *out,
                                         char *err, size_t err_size) {
  if (!out) return ingot_dispatch_refuse(err, err_size, "plan: NULL output");
  memset(out, 0, sizeof *out);
  if (!pol || !m || !g || !caps) return ingot_dispatch_refuse(err, err_size, "plan: NULL argument");
  if (pol->ctas_per_cu < 1 || pol->min_tiles_per_split < 1 || pol->max_tiles_per_split < 1 ||
      pol->max_tiles_per_split > INGOT_AD_MAX_TILES_PER_SPLIT || pol->saturating_percent < 1 ||
      pol->saturating_percent > 100 ||
      pol->saturating_cu_percent < 1 || pol->saturating_cu_percent > 100 || pol->kernel_max_splits < 1)
    return ingot_dispatch_refuse(err, err_size,
                          "plan: split policy out of range (ctas_per_cu %d, min_tiles_per_split %d, "
                          "max_tiles_per_split %d, saturating_percent %d, saturating_cu_percent %d, "
                          "kernel_max_splits %d; allowed: >= 1, max_tiles_per_split <= 2^20, percents <= 100)",
                          pol->ctas_per_cu, pol->min_tiles_per_split, pol->max_tiles_per_split,
                          pol->saturating_percent, pol->saturating_cu_percent, pol->kernel_max_splits);
  if (g->q.rank != 4 || g->k.rank != 4 || g->v.rank != 4 || g->o.rank != 4)
    return ingot_dispatch_refuse(err, err_size, "plan: q, k, v and o must have rank 4");
  const int64_t B = g->q.dims[0], Hq = g->q.dims[1], Sq = g->q.dims[2], D = g->q.dims[3];
  const int64_t Hkv = g->k.dims[2];
  const int paged = g->kv_layout == INGOT_KV_PAGED;
  if (D < INGOT_AD_HEAD_DIM_STEP || D != m->head_dim || D % INGOT_AD_HEAD_DIM_STEP)
    return ingot_dispatch_refuse(err, err_size, "plan: head dim %lld, kernel has %d", (long long)D, m->head_dim);
  /* Any group runs on the kernel's row tile (padded, or over several row blocks). */
  if (Hkv < 1 || Hkv > INGOT_AD_MAX_KV_HEADS || Hq < Hkv || Hq % Hkv != 0 || Hq / Hkv > INGOT_AD_MAX_GROUP)
    return ingot_dispatch_refuse(err, err_size,
                          "plan: Hq %lld / Hkv %lld (allowed: Hkv in 1..%d, Hq a multiple of Hkv, at most "
                          "%d x Hkv)", (long long)Hq, (long long)Hkv, INGOT_AD_MAX_KV_HEADS, INGOT_AD_MAX_GROUP);
  const int64_t group = Hq / Hkv;
  if (Sq < 1 || Sq > m->max_sq)
    return ingot_dispatch_refuse(err, err_size, "plan: Sq %lld outside the kernel's 1..%d", (long long)Sq, m->max_sq);
  if (B < 1 || B > INGOT_AD_MAX_BATCH)
    return ingot_dispatch_refuse(err, err_size, "plan: batch %lld outside 1..%d", (long long)B, INGOT_AD_MAX_BATCH);
  if (paged != m->paged)
    return ingot_dispatch_refuse(err, err_size, "plan: KV layout differs from the kernel's");
  if (g->lse.rank != 0 && !m->lse)
    return ingot_dispatch_refuse(err, err_size, "plan: the kernel does not write LSE");
  if (caps->wave_size != 32 && caps->wave_size != 64)
    return ingot_dispatch_refuse(err, err_size, "plan: wave size %d (allowed: 32, 64)", caps->wave_size);
  if (m->waves < 1 || m->tokens_per_wave < 1 || m->rows < 1 || m->max_splits < 1 || m->group < 1 ||
      (int64_t)m->waves * caps->wave_size > INGOT_AD_MAX_BLOCK_THREADS)
    return ingot_dispatch_refuse(err, err_size,
                          "plan: kernel metadata out of range (waves %d, tokens_per_wave %d, rows %d, group %d, "
                          "max_splits %d; allowed: >= 1, waves x wave size <= 1024)",
                          m->waves, m->tokens_per_wave, m->rows, m->group, m->max_splits);
  const int64_t tile = ingot_ad_tile(m);
  /* waves <= 32 and tokens_per_wave < 2^31 (checked above): no overflow */
  const int64_t index_reach = INGOT_AD_TOKEN_INDEX_TILES * tile;
  if (g->capacity < 1 || g->capacity > (int64_t)INT32_MAX - index_reach)
    return ingot_dispatch_refuse(err, err_size,
                          "plan: capacity %lld outside 1..%lld (the kernel's int32 token indices run %d tiles "
                          "of %lld tokens past the capacity: at most 2^31 - 1 - %lld)",
                          (long long)g->capacity, (long long)((int64_t)INT32_MAX - index_reach),
                          INGOT_AD_TOKEN_INDEX_TILES, (long long)tile,
                          (long long)index_reach);
  int64_t page_size = 0;
  if (paged) {
    page_size = g->k.dims[1];
    if (page_size < 1 || (page_size & (page_size - 1)) || page_size > INGOT_AD_MAX_PAGE_SIZE)
      return ingot_dispatch_refuse(err, err_size, "plan: page size %lld is not a power of two in 1..2^20",
                            (long long)page_size);
    /* Pages shorter than a wave's chunk (tokens_per_wave) are read token by
     * token (templates/ingot_attention_decode.h, ChunkPages::token_page). */
    /* capacity < 2^31 was checked above: no overflow in the page count */
    if (g->page_table.rank != 2 || g->page_table.dims[1] < (g->capacity + page_size - 1) / page_size)
      return ingot_dispatch_refuse(err, err_size, "plan: the page table does not cover the capacity");
  }

  /* group x Sq rows per KV head (< 2^16 x 8), in row blocks of the kernel's rows. */
  const int64_t rows_total = group * Sq;
  const int64_t row_blocks = ingot_ad_ceil_div(rows_total, m->rows);
  /* Segments come in whole waves of the device's resident workgroups: a partial
   * last wave would leave CUs idle while it runs. One wave, unless a segment
   * would then cover more than max_tiles_per_split tiles of the capacity; then
   * the time model below may add segments to fill a nearly empty last round. */
  const int64_t cus = ingot_ad_cus(caps);
  const int64_t resident = cus * (caps->blocks_per_cu > 0 ? caps->blocks_per_cu : pol->ctas_per_cu);
  /* Grids within the device limits (x < 2^31; y, z <= 65535, checked above for
   * B and Hkv): bounded before the products are formed. */
  /* the wide merge's columns per workgroup (kMergeCols in the kernel header) */
  const int64_t merge_cols = INGOT_AD_MERGE_COLS(D);
  if (row_blocks > INT32_MAX / Hkv || rows_total > INT32_MAX / (D / merge_cols))
    return ingot_dispatch_refuse(err, err_size,
                          "plan: grid of %lld x %lld row blocks or %lld x %lld merge blocks (allowed: < 2^31)",
                          (long long)Hkv, (long long)row_blocks, (long long)rows_total, (long long)(D / merge_cols));
  const int64_t base = B * Hkv * row_blocks; /* < 2^16 * 2^31 */
  int64_t splits = 1;
  double out_cost = 0.0;
  if (base < resident) { /* else the sequences and heads alone fill the device */
    int64_t per_wave = resident / base;
    if (per_wave > pol->kernel_max_splits) per_wave = pol->kernel_max_splits; /* bounds the products below */
    /* per_wave <= 256 and max_tiles_per_split <= 2^20 (the config's range): no overflow */
    int64_t waves = ingot_ad_ceil_div(ingot_ad_ceil_div(g->capacity, tile), per_wave * pol->max_tiles_per_split);
    if (waves < 1) waves = 1;
    splits = per_wave * waves;
  }
  const int64_t by_len = ingot_ad_ceil_div(g->capacity, tile * pol->min_tiles_per_split);
  int64_t most = by_len < m->max_splits ? by_len : m->max_splits;
  if (most > pol->kernel_max_splits) most = pol->kernel_max_splits;
  if (most > INT32_MAX / (Hkv * row_blocks)) most = INT32_MAX / (Hkv * row_blocks);
  if (splits > most) splits = most;
  if (splits < 1) splits = 1;
  /* More segments when the last round of workgroups would run nearly empty (say
   * B x Hkv just above the resident count: a few full-length segments alone at
   * the end): the count of at most `most` with the least modelled time, taken
   * only when it saves a tenth or more. */
  {
    const ingot_ad_model md = {resident, cus, ingot_ad_share(resident, pol->saturating_percent),
                               ingot_ad_share(cus, pol->saturating_cu_percent), tile, m->rows,
                               (int64_t)m->waves * m->tokens_per_wave, row_blocks};
    const double start = ingot_ad_split_cost(&md, base, splits, g->capacity, 0);
    double best = start;
    int64_t pick = splits;
    for (int64_t s = splits + 1; s <= most; ++s) {
      const double c = ingot_ad_split_cost(&md, base, s, g->capacity, 0);
      if (c < best) best = c, pick = s;
    }
    if (best <= 0.9 * start) splits = pick;
    out_cost = ingot_ad_split_cost(&md, base, splits, g->capacity, 1);
  }

  /* Balanced split (docs/design/balanced-split.md): a batch of 2 to
   * INGOT_AD_BALANCED_MAX_BATCH sequences is cut into pieces in proportion to
   * its real lengths, about as many as the uniform plan above has workgroups
   * times caps->balance (the rounds, 1..INGOT_BALANCE_MAX_ROUNDS): units =
   * splits x B x rounds per KV head and row block, at most
   * INGOT_AD_BALANCED_MAX_UNITS (511; one sequence's pieces stay within the
   * merge's 256) or, for a kernel built for fewer segments than the merge
   * takes, its max_splits, decided on the device from the lengths; each
   * piece runs as a workgroup of its own. When the cap binds (B large) it is
   * taken only if the units still fill the device. The device takes at least
   * `fill` of the units (the rounds of resident workgroups) and more for long
   * batches (ingot_attention_decode_balance.h, ingot_ad_bal_active). The
   * modelled time is the uniform plan's: the model knows only the capacity,
   * and kernels of one rank compare as before. */
  int64_t units = 0;
  /* the device caps one sequence's pieces at INGOT_AD_MAX_SPLITS; a kernel or
   * policy with a lower limit keeps every sequence within it by the units */
  const int64_t per_seq = m->max_splits < pol->kernel_max_splits ? m->max_splits : pol->kernel_max_splits;
  int64_t most_units = per_seq >= INGOT_AD_MAX_SPLITS ? INGOT_AD_BALANCED_MAX_UNITS : per_seq;
  if (most_units > INT32_MAX / (Hkv * row_blocks)) most_units = INT32_MAX / (Hkv * row_blocks);
  int64_t rounds = caps->balance < INGOT_BALANCE_MAX_ROUNDS ? caps->balance : INGOT_BALANCE_MAX_ROUNDS;
  if (caps->balance == INGOT_BALANCE_AUTO)
    rounds = ingot_ad_balance_auto(splits, out_cost, splits * B <= most_units) ? 1 : 0; /* < 2^31 x 2^16 */
  if (rounds > 0 && B > 1 && B <= INGOT_AD_BALANCED_MAX_BATCH) {
    const int64_t want = splits * B * rounds; /* <= 256 x 1024 x 8 */
    units = want < most_units ? want : most_units;
    if (units < want && units * Hkv * row_blocks < resident) units = 0;
    /* the split grid has a workgroup per slot: units + B - 1 of them per KV head and row block */
    if (units + B - 1 > INT32_MAX / (Hkv * row_blocks)) units = 0;
  }
  if (units > 0) {
    /* the units that fill the rounds of resident workgroups: the device takes
     * at least these (and more for long batches; ingot_ad_bal_active); one
     * round's count is capped at units before the rounds multiply it (resident
     * is any int64 from the caps: no overflow) */
    int64_t fill = ingot_ad_ceil_div(resident, Hkv * row_blocks);
    if (fill > units) fill = units;
    fill *= rounds; /* <= 511 x 8 */
    if (fill > units) fill = units; /* <= 511: fits the flags' field */
    return ingot_ad_plan_balanced(m, g, caps, B, Hkv, Sq, D, group, rows_total, row_blocks, units, fill, paged, page_size,
                                  out_cost, out, err, err_size);
  }

  /* Workspace (templates/ingot_attention_decode.h, workspace_block): per (sequence,
   * KV head) lse [rows_total*splits] padded to 4 floats, then O [rows_total*splits*D]. */
  uint64_t ws = 0;
  if (splits > 1) {
    uint64_t lse_n = 0, o_n = 0, per = 0;
    if (ingot_ad_mul((uint64_t)rows_total, (uint64_t)splits, &lse_n) ||
        ingot_ad_mul(lse_n, (uint64_t)D, &o_n) || __builtin_add_overflow((lse_n + 3) / 4 * 4, o_n, &per) ||
        ingot_ad_mul(per, (uint64_t)B * (uint64_t)Hkv, &ws) || ingot_ad_mul(ws, 4u, &ws))
      return ingot_dispatch_refuse(err, err_size, "plan: workspace size overflows 64 bits");
  }
  const uint32_t threads = (uint32_t)(m->waves * caps->wave_size);
  const uint32_t merge_threads = (uint32_t)(INGOT_AD_MERGE_WAVES * caps->wave_size);
  /* The merge's grid follows its mode (ingot_attention_decode_limits.h). The wide
   * grid's rows_total * D/merge_cols < 2^31 was checked above; the compact one is smaller. */
  const uint32_t merge_x = splits <= INGOT_AD_COMPACT_MERGE_SPLITS
                               ? (uint32_t)ingot_ad_ceil_div(rows_total * (D / 4), merge_threads)
                               : (uint32_t)(rows_total * (D / merge_cols));
  out->num_splits = (int)splits;
  out->cost = out_cost;
  out->workspace_bytes = ws;
  out->num_launches = splits > 1 ? 2 : 1;
  /* Both launches are programmatic: a grid may be scheduled while the one before
   * it in the stream finishes, and waits for that grid's completion (and its
   * memory) before it reads anything (griddepcontrol.wait in the kernels). */
  out->launches[0] = (ingot_launch){INGOT_AD_ENTRY_SPLIT, {(uint32_t)(splits * Hkv * row_blocks), 1, (uint32_t)B},
                                    {threads, 1, 1}, 0, INGOT_LAUNCH_PROGRAMMATIC};
  if (splits > 1)
    out->launches[1] = (ingot_launch){INGOT_AD_ENTRY_MERGE, {merge_x, (uint32_t)Hkv, (uint32_t)B},
                                      {merge_threads, 1, 1}, 0, INGOT_LAUNCH_PROGRAMMATIC};
  ingot_ad_plan_scalars(g, paged, page_size, Sq, Hkv, group, out);
  return INGOT_OK;
}

#endif
