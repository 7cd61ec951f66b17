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

static const int kHeads[][2] = {{8, 8}, {8, 2}, {32, 8}, {64, 8}};

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
      /* head dim 256 is SIMT everywhere; 64 and 128 take the tensor-core instances */
      CHECK(tc == (d != 256));
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
    /* Outside the admitted space: head dim 96, Hq 24 / Hkv 8 (group 3), Sq 5, capacity 63. */
    const ingot_attention_graph bad[] = {
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 96, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 24, 8, 128, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 5, 1, 4096, 0, 16, 1, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 63, 0, 16, 0, 0)};
    const char *why[] = {"head_dim = 96", "heads = [24,8]", "seq_q = 5", "capacity = 63"};
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
