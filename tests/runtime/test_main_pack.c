/* The shipped attention_decode pack on host contexts of every arch: random graphs
 * from the whole admitted space (dtype, heads, head dim, Sq, batch, capacity, paged
 * page sizes, masks, LSE) each plan, the chosen kernel's name encodes the graph's
 * shape, the tensor-core instances win on sm_90 where they exist, and the plan's
 * segments, launches and workspace follow docs/INTERNALS.md. Graphs outside the
 * admitted space decline. Runs under ASan+UBSan in CI with the other host tests.
 *
 * usage: test_main_pack PACKDIR */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"
#include "test_util.h"
/* after test_util.h, which sets the feature macros before any system header */
#include "internal.h" /* the dispatch stubs' contract and ingot_plan_dispatch_info */

static const int kHeads[][2] = {{8, 8}, {8, 2}, {32, 8}, {64, 8}};

/* The stub's plan of one kernel shape on an H200-like device (132 SMs);
 * blocks: its resident workgroups per SM (from the packaged registers: 240 per
 * lane, so 2 of 4 waves, 1 of 8). */
static ingot_dispatch_plan stub_plan(const ingot_attention_graph *g, int waves, int blocks) {
  const ingot_dispatch_entry *e = ingot_dispatch_find("ingot_attention_decode_dispatch");
  const ingot_ad_kernel_meta m = {g->q.dtype, 128, 4, 1, 4, waves, 16, 256, g->kv_layout == INGOT_KV_PAGED, 1};
  const ingot_device_caps caps = {32, 132, 232448, blocks};
  ingot_dispatch_plan p;
  char err[256] = "";
  memset(&p, 0, sizeof p);
  CHECK(e != NULL);
  if (e) CHECK_STATUS(e->plan(&m, g, &caps, &p, err, sizeof err), INGOT_OK);
  return p;
}

/* decode_mid's admitted batches and capacities (configs/attention_decode.yaml): on sm_90
 * it outranks the 4- and 8-wave kernels at head dim 128, group 4, one query token. */
static int mid_admits(int batch, int64_t capacity) { return batch <= 4 && capacity >= 4096 && capacity <= 16384; }

/* Kernels of one rank that differ in workgroup size (variants decode and
 * decode_w8, sm_90 only): the plan keeps the one the dispatch stub models
 * faster, the 4-wave one on a tie (docs/INTERNALS.md 3). Checked against the
 * stub's own model of both, on random graphs and on the benchmark's shapes. */
static int check_rank_choice(ingot_context *ctx, int w8_built) {
  int eights = 0;
  for (int i = 0; i < 400; ++i) {
    const int *h = kHeads[rnd_range(1, 2)]; /* 8/2 or 32/8: both variants admit them */
    const int b = (int)rnd_range(1, 64), paged = (int)(rnd() & 1), page = 16 << rnd_range(0, 3);
    const int64_t capacity = rnd_range(64, 262144); /* decode_long outranks both above */
    const ingot_dtype dt = rnd() & 1 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
    ingot_attention_graph g = shaped_graph(dt, h[0], h[1], 128, 1, b, capacity, paged, page, (int)(rnd() & 1),
                                           (int)(rnd() & 1));
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    if (plan == NULL) continue;
    if (w8_built && mid_admits(b, capacity)) { /* decode_mid outranks both */
      CHECK(strstr(ingot_plan_kernel_name(plan), "_w4t16_tcs4") != NULL);
      ingot_plan_destroy(plan);
      continue;
    }
    const ingot_dispatch_plan p4 = stub_plan(&g, 4, 2), p8 = stub_plan(&g, 8, 1);
    const int want8 = w8_built && p8.cost < p4.cost;
    const ingot_dispatch_plan *got = ingot_plan_dispatch_info(plan), *want = want8 ? &p8 : &p4;
    const int is8 = strstr(ingot_plan_kernel_name(plan), "_w8t16_tc") != NULL;
    if (is8 != want8 || got->cost != want->cost || got->num_splits != want->num_splits)
      fprintf(stderr, "B %d %d/%d L %lld: %s (%d segments, cost %g); modelled 4 waves %g (%d), 8 waves %g (%d)\n", b,
              h[0], h[1], (long long)capacity, ingot_plan_kernel_name(plan), got->num_splits, got->cost, p4.cost,
              p4.num_splits, p8.cost, p8.num_splits);
    CHECK(is8 == want8);
    CHECK(got->cost == want->cost && got->num_splits == want->num_splits);
    CHECK(p4.cost > 0.0 && p8.cost > 0.0);
    eights += is8;
    ingot_plan_destroy(plan);
  }
  /* Shapes measured both ways on the H200 (docs/PERFORMANCE.md, "Workgroup size, chosen by the
   * model"): bench/decode.py's (8 waves only at B=16), and A/B shapes where 8 waves were faster
   * (1) or slower (0, 96 workgroups leave 36 SMs idle). {B, Hq, Hkv, L, 8 waves} */
  static const int measured[][5] = {
      {1, 8, 2, 1024, 0},     {1, 8, 2, 4096, 0},    {1, 8, 2, 16384, 0},    {1, 8, 2, 65536, 0},
      {1, 8, 2, 262144, 0},   {16, 32, 8, 8192, 1},  {64, 32, 8, 8192, 0},   {12, 32, 8, 8192, 0},
      {24, 8, 2, 16384, 0},   {6, 32, 8, 16384, 0},  {24, 32, 8, 8192, 1},   {48, 32, 8, 8192, 1},
      {12, 32, 8, 16384, 1},  {64, 8, 2, 4096, 1},   {1, 32, 8, 65536, 1},   {6, 32, 8, 65536, 1}};
  for (size_t i = 0; i < sizeof measured / sizeof measured[0]; ++i) {
    const int *c = measured[i];
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, c[1], c[2], 128, 1, c[0], c[3], 0, 0, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    if (plan == NULL) continue;
    const int is8 = strstr(ingot_plan_kernel_name(plan), "_w8t16_tc") != NULL;
    if (is8 != (w8_built && c[4]))
      fprintf(stderr, "B %d %d/%d L %d: %s, measured faster with %d waves\n", c[0], c[1], c[2], c[3],
              ingot_plan_kernel_name(plan), c[4] ? 8 : 4);
    CHECK(is8 == (w8_built && c[4]));
    if (is8 && c[0] == 16) CHECK(ingot_plan_num_splits(plan) == 1 && ingot_plan_launch_count(plan) == 1);
    ingot_plan_destroy(plan);
  }
  return eights;
}

/* What the kernels read and write besides their shape: an fp32 LSE at a flat
 * index, int32 page-table rows of adjacent entries (rows at any stride), int32
 * lengths side by side, v of k's dtype, outputs without overlap. Accepted
 * first (any layout of o that reaches each element once), then each way of
 * getting one wrong: a decline naming the field, or a refusal for overlap. */
static void check_kernel_inputs(ingot_context *ctx) {
  for (int i = 0; i < 40; ++i) {
    const ingot_dtype dt = rnd() & 1 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
    const int b = (int)rnd_range(2, 16), paged = i % 2;
    ingot_attention_graph g = shaped_graph(dt, 32, 8, 128, (int)rnd_range(1, 4), b, rnd_range(64, 65536), paged,
                                           16 << rnd_range(0, 3), (int)(rnd() & 1), 1);
    transpose_o(&g);
    if (paged) g.page_table.strides[0] = g.page_table.dims[1] + rnd_range(1, 64); /* padded rows */
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    if (plan == NULL) fprintf(stderr, "  kernel inputs, accept case %d: %s\n", i, ingot_context_last_error(ctx));
    ingot_plan_destroy(plan);
  }
  char want[256];
  const char *P = "pack attention_decode (all ";
  for (int i = 0; i < 6; ++i) {
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_FP16, 32, 8, 128, 1, (int)rnd_range(2, 16), 4096, i >= 2, 64,
                                           0, i < 2);
    const char *why = NULL;
    switch (i) {
    case 0: g.lse.dtype = INGOT_DTYPE_FP16; why = "graph-scope): lse.dtype = \"fp16\", allowed in [\"absent\",\"fp32\"]"; break;
    case 1: g.lse.dtype = INGOT_DTYPE_BF16; why = "graph-scope): lse.dtype = \"bf16\", allowed in [\"absent\",\"fp32\"]"; break;
    case 2: g.page_table.dtype = INGOT_DTYPE_INT64; why = "graph-scope): page_table.dtype = \"int64\", allowed in [\"absent\",\"int32\"]"; break;
    case 3:
      g.page_table.strides[0] = 1, g.page_table.strides[1] = g.page_table.dims[0];
      why = "graph-scope): page_table.layout = \"strided\", allowed in [\"absent\",\"dense_rows\"]";
      break;
    case 4: g.seq_lens.strides[0] = 2; why = "graph-scope): seq_lens.layout = \"strided\", allowed eq \"contiguous\""; break;
    default: g.v.dtype = INGOT_DTYPE_BF16; why = "_fp16_d128_g4_sq1_paged_w4t16_tc: v_dtype = \"bf16\", allowed eq \"fp16\""; break;
    }
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
    CHECK(plan == NULL);
    CHECK_HAS(ingot_context_decline_report(ctx), why);
    if (i < 5) {
      snprintf(want, sizeof want, "%s%zu kernels, %s", P, ingot_context_kernel_count(ctx), why);
      CHECK_HAS(ingot_context_decline_report(ctx), want);
    }
  }
  /* o strides [8,8,8,1] at D = 128 (issue 21): every query head writes over the others */
  ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 4096, 0, 0, 0, 0);
  g.o.strides[0] = g.o.strides[1] = g.o.strides[2] = 8;
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  CHECK_HAS(ingot_context_last_error(ctx), "graph: o strides [8,8,8,1] with dims [1,8,1,128] overlap");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKDIR\n", argv[0]);
    return 2;
  }
  test_seed_rng();
  const char *archs[] = {"sm_90", "gfx942", "gfx950"};
  size_t kernels = 0;
  int planned = 0, split_plans = 0, tensor_core = 0;
  for (int a = 0; a < 3; ++a) {
    ingot_context *ctx = NULL;
    CHECK_STATUS(ingot_context_create_host(archs[a], &ctx), INGOT_OK);
    if (ctx == NULL) return test_finish("test_main_pack");
    CHECK_STATUS(ingot_context_open_pack(ctx, argv[1]), INGOT_OK);
    if (a == 0) kernels = ingot_context_kernel_count(ctx);
    CHECK(kernels >= 40 && ingot_context_kernel_count(ctx) == kernels);
    for (int i = 0; i < 300; ++i) {
      const ingot_dtype dt = rnd() & 1 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
      const int *h = kHeads[rnd_range(0, 3)];
      const int d = (int)(64 << rnd_range(0, 2)); /* 64, 128, 256 */
      const int sq = d == 128 ? (int)rnd_range(1, 4) : 1;
      const int b = (int)rnd_range(1, 64);
      const int64_t capacity = rnd_range(64, i % 10 == 0 ? 1048576 : 65536);
      const int paged = (int)(rnd() & 1), page = 16 << rnd_range(0, 3);
      const int causal = (int)(rnd() & 1), lse = (int)(rnd() & 1);
      ingot_attention_graph g = shaped_graph(dt, h[0], h[1], d, sq, b, capacity, paged, page, causal, lse);
      ingot_plan *plan = NULL;
      ingot_status s = ingot_plan_create(ctx, &g, &plan);
      CHECK_STATUS(s, INGOT_OK);
      if (s != INGOT_OK) {
        fprintf(stderr, "  %s: %s\n", archs[a], ingot_context_last_error(ctx));
        continue;
      }
      ++planned;
      char want[128];
      snprintf(want, sizeof want, "attention_decode_%s_d%d_g%d_sq%d_%s_", dt == INGOT_DTYPE_BF16 ? "bf16" : "fp16", d,
               h[0] / h[1], sq > 1 ? 4 : 1, paged ? "paged" : "contig");
      const char *name = ingot_plan_kernel_name(plan);
      CHECK_HAS(name, want);
      const int tc = strstr(name, "_tc") != NULL;
      tensor_core += tc;
      /* 64 and 128 take the tensor-core instances; head dim 256 too on sm_90 for groups 4
       * and 8 (the ring kernels), else SIMT */
      const int group = h[0] / h[1];
      const int d256_tc = a == 0 && (group == 4 || group == 8);
      CHECK(tc == (d != 256 || d256_tc));
      /* decode_mid on sm_90: head dim 128, group 4, one query token, B <= 4, capacity 4K..16K */
      const int mid = a == 0 && d == 128 && group == 4 && sq == 1 && mid_admits(b, capacity);
      CHECK(mid == (strstr(name, "_w4t16_tcs4") != NULL));
      /* Only the rings past 48 KiB take dynamic shared memory, their split alone: 4 waves
       * x 3 stages x 16 tokens x 256 x 2 (K, V) x 2 bytes at head dim 256, 4 x 4 x 16 x
       * 128 x 2 x 2 for decode_mid. */
      const uint32_t dyn = d == 256 && d256_tc ? 196608u : mid ? 131072u : 0u;
      for (int l = 0; l < plan->dispatch.num_launches; ++l) {
        const ingot_launch *ln = &plan->dispatch.launches[l];
        CHECK(ln->lds_bytes == (ln->entry == 0 ? dyn : 0u));
      }
      const int splits = ingot_plan_num_splits(plan);
      CHECK(splits >= 1 && splits <= 256);
      CHECK(ingot_plan_launch_count(plan) == (splits > 1 ? 2 : 1));
      split_plans += splits > 1;
      /* workspace: per (b, hkv) round_up(rows*splits, 4) + rows*splits*D floats */
      const uint64_t rows = (uint64_t)(h[0] / h[1]) * (sq > 1 ? 4 : 1), per = rows * (uint64_t)splits;
      const uint64_t want_ws = splits > 1 ? (uint64_t)b * (uint64_t)h[1] * ((per + 3) / 4 * 4 + per * (uint64_t)d) * 4 : 0;
      CHECK(ingot_plan_workspace_size(plan) == want_ws);
      ingot_plan_destroy(plan);
    }
    check_kernel_inputs(ctx);
    /* Outside the admitted space: head dim 96, Hq 24 / Hkv 8 (group 3), Sq 5, capacity 63. */
    const ingot_attention_graph bad[] = {
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 96, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 24, 8, 128, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 5, 1, 4096, 0, 16, 1, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 63, 0, 16, 0, 0)};
    const char *why[] = {"head_dim = 96", "heads = [24,8]", "seq_q = 5", "capacity = 63"};
    /* decode_w8 is built for sm_90 alone */
    const int eights = check_rank_choice(ctx, a == 0);
    CHECK(a == 0 ? eights > 0 : eights == 0);
    if (a == 0) printf("test_main_pack: sm_90, 400 random graphs of one rank: %d took 8 waves\n", eights);
    for (int i = 0; i < 4; ++i) {
      ingot_plan *plan = NULL;
      CHECK_STATUS(ingot_plan_create(ctx, &bad[i], &plan), INGOT_NO_MATCH);
      CHECK(plan == NULL);
      CHECK_HAS(ingot_context_decline_report(ctx), why[i]);
    }
    ingot_context_destroy(ctx);
  }
  printf("test_main_pack: %zu kernels, %d plans (%d split, %d tensor-core) on sm_90, gfx942, gfx950\n", kernels,
         planned, split_plans, tensor_core);
  return test_finish("test_main_pack");
}
