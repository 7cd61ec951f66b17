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
#include "ad_family.h" /* the family, its planner and ingot_plan_dispatch_info */
#include "ingot_attention_decode_balance.h" /* the balanced plans' flag */
#include "ingot_attention_decode_limits.h"  /* the launch entries */

static const int kHeads[][2] = {{8, 8}, {8, 2}, {32, 8}, {64, 8}};

/* The stub's plan of one kernel shape on the device the plan was made for (its
 * wave size and compute units: 132 SMs on sm_90, 304 CUs on gfx942, 256 on
 * gfx950); blocks: its resident workgroups per CU (on sm_90 from the packaged
 * registers: 240 per lane, so 2 of 4 waves, 1 of 8; elsewhere the plan's). */
static ingot_dispatch_plan stub_plan(const ingot_attention_graph *g, int waves, int blocks,
                                     const ingot_device_caps *device) {
  const ingot_dispatch_entry *e = ingot_dispatch_find("ingot_attention_decode_dispatch");
  const ingot_ad_kernel_meta m = {g->q.dtype, 128, 4, 1, 4, waves, 16, 256, g->kv_layout == INGOT_KV_PAGED, 1, 0};
  const ingot_device_caps caps = {device->wave_size, device->compute_units, device->max_lds_bytes, blocks,
                                  device->balance};
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
 * faster by 1% or more, else the 4-wave one (docs/reference/matching.md). Checked against the
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
    const ingot_device_caps *dev = &plan->caps;
    const ingot_dispatch_plan p4 = stub_plan(&g, 4, w8_built ? 2 : dev->blocks_per_cu, dev),
                              p8 = stub_plan(&g, 8, 1, dev);
    const int want8 = w8_built && p8.cost < INGOT_COST_MARGIN * p4.cost;
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
    /* one segment per sequence: uniform, or balanced with one unit per sequence (issue 23) */
    if (is8 && c[0] == 16)
      CHECK(ingot_ad_params_in(&plan->dispatch)->flags & INGOT_AD_FLAG_BALANCED
                ? ingot_plan_num_splits(plan) == 16 && ingot_plan_launch_count(plan) == 2
                : ingot_plan_num_splits(plan) == 1 && ingot_plan_launch_count(plan) == 1);
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

/* The group a kernel's rows are sized for, for a graph of `group` and sq query tokens at
 * head dim d on the arch (configs/attention_decode.yaml): group 1 alone, 2..4 on the group-4
 * kernels, 5..8 on the group-8 ones; at head dims 64 and 128 and one query token 9..16 on the
 * group-16 kernels (decode_g16, decode_g16_amd: 16 rows a wave) and 17 up on the row-wave
 * kernels (sm_90: decode_mq, 64 rows in 4 waves of 16 at head dim 128, decode_mq_d64, 80 rows
 * in 5 at 64; AMD: decode_mq_amd, decode_mq_amd_d64 and _d64_fp16, 32 rows in 2 waves of 16), else the
 * group-8 ones;
 * head dims 80..192 have one kernel for every group, of 8 rows on sm_90 (tensor cores), and on
 * the AMD archs one of 1 row for group 1 (decision 0047) and one of 4 rows for the others. */
static int tile_group(int d, int group, int sq, int sm90) {
  if (d == 80 || d == 96 || d == 112 || d == 160 || d == 192) return sm90 ? 8 : group == 1 && sq == 1 ? 1 : 4;
  /* past group 16 on sm_90 the row blocks of 16 share a rank with the row waves, and the
   * model takes them at this test's B=8, 8K (decision 0033) */
  if (group > 8 && sq == 1 && (d == 64 || d == 128)) return group <= 16 || sm90 ? 16 : 32;
  return group == 1 ? 1 : group <= 4 ? 4 : 8;
}

/* Well-known models' decode shapes (docs/attention_decode.md, "Models"): Hq, Hkv, D.
 * Every group and head dim of these runs: groups below a kernel's rows pad them,
 * multi-query groups take several row blocks. MLA's absorbed head dim 576 declines
 * with the summary line that says what is missing. */
typedef struct model_shape {
  const char *name;
  int hq, hkv, d;
  const char *missing; /* NULL: admitted; else the first line of the decline report */
} model_shape;

static const model_shape kModels[] = {
    {"Llama-2-7B", 32, 32, 128, NULL},
    {"Llama-2-13B", 40, 40, 128, NULL},
    {"Llama-3-8B", 32, 8, 128, NULL},
    {"Llama-3-70B TP8", 8, 1, 128, NULL},
    {"Llama-3-70B TP4", 16, 2, 128, NULL},
    {"Llama-3-405B TP8", 16, 1, 128, NULL},
    {"Mistral-7B", 32, 8, 128, NULL},
    {"Mixtral-8x7B", 32, 8, 128, NULL},
    {"Qwen2.5-7B", 28, 4, 128, NULL},
    {"Qwen2.5-14B", 40, 8, 128, NULL},
    {"Qwen2.5-1.5B", 12, 2, 128, NULL},
    {"Qwen2-0.5B", 14, 2, 64, NULL},
    {"Qwen2.5-72B TP8", 8, 1, 128, NULL},
    {"Gemma-2-9B", 16, 8, 256, NULL},
    {"Gemma-2B", 8, 1, 256, NULL},
    {"Gemma-7B", 16, 16, 256, NULL},
    {"Falcon-7B", 71, 1, 64, NULL},
    {"StarCoder", 48, 1, 128, NULL},
    {"Phi-2", 32, 32, 80, NULL},
    {"Phi-3-mini", 32, 32, 96, NULL},
    {"Yi-34B", 56, 8, 128, NULL},
    {"DeepSeek-V2-Lite (MHA)", 16, 16, 128, NULL},
    {"GQA 24/3", 24, 3, 128, NULL},
    {"GQA 48/6", 48, 6, 128, NULL},
    {"GQA 40/5", 40, 5, 128, NULL},
    {"GQA 4/1", 4, 1, 64, NULL},
    {"GQA 16/4 D112", 16, 4, 112, NULL},
    {"DeepSeek-V2 MLA", 128, 1, 576,
     "no kernel has head_dim 576 (kernels exist for 64, 80, 96, 112, 128, 160, 192, 256)\n"},
};

/* Each model shape, bf16 and fp16, B = 8, capacity 8192, contiguous and paged 16, with
 * and without LSE: the plan's kernel has the graph's dtype and head dim, and its group
 * range holds the graph's group, or the report starts with the summary line of what no
 * kernel has. */
static void check_models(ingot_context *ctx, const char *arch) {
  int admitted = 0, declined = 0;
  for (size_t m = 0; m < sizeof kModels / sizeof kModels[0]; ++m) {
    const model_shape *ms = &kModels[m];
    for (int v = 0; v < 8; ++v) {
      const ingot_dtype dt = v & 1 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
      const int paged = (v >> 1) & 1, lse = (v >> 2) & 1;
      ingot_attention_graph g = shaped_graph(dt, ms->hq, ms->hkv, ms->d, 1, 8, 8192, paged, 16, v & 1, lse);
      ingot_plan *plan = NULL;
      const ingot_status s = ingot_plan_create(ctx, &g, &plan);
      if (ms->missing == NULL) {
        CHECK_STATUS(s, INGOT_OK);
        if (s != INGOT_OK) {
          fprintf(stderr, "  %s %s: %s\n", arch, ms->name, ingot_context_last_error(ctx));
          continue;
        }
        const int tile = tile_group(ms->d, ms->hq / ms->hkv, 1, strcmp(arch, "sm_90") == 0);
        char want[96];
        snprintf(want, sizeof want, "attention_decode_%s_d%d_g%d_sq1_%s_", dt == INGOT_DTYPE_BF16 ? "bf16" : "fp16",
                 ms->d, tile, paged ? "paged" : "contig");
        CHECK_HAS(ingot_plan_kernel_name(plan), want);
        ++admitted;
        ingot_plan_destroy(plan);
      } else {
        CHECK_STATUS(s, INGOT_NO_MATCH);
        CHECK(plan == NULL);
        const char *report = ingot_context_decline_report(ctx);
        if (strncmp(report, ms->missing, strlen(ms->missing)) != 0)
          fprintf(stderr, "  %s %s: report starts\n%.300s\nwanted\n%s", arch, ms->name, report, ms->missing);
        CHECK(strncmp(report, ms->missing, strlen(ms->missing)) == 0);
        ++declined;
      }
    }
  }
  printf("test_main_pack: %s, %zu model shapes x 8 graphs: %d planned, %d declined\n", arch,
         sizeof kModels / sizeof kModels[0], admitted, declined);
}

/* Plans g: 1 with the plan's kernel name in kernel, or 0 with the last error there. */
static int plans(ingot_context *ctx, const ingot_attention_graph *g, char *kernel, size_t n) {
  ingot_plan *plan = NULL;
  const ingot_status s = ingot_plan_create(ctx, g, &plan);
  if (s != INGOT_OK) {
    snprintf(kernel, n, "%s", ingot_context_last_error(ctx));
    return 0;
  }
  snprintf(kernel, n, "%s", ingot_plan_kernel_name(plan));
  ingot_plan_destroy(plan);
  return 1;
}

/* The limits, at and past each bound: batch 1..65535 (grid z), any Hkv up to 65535
 * (grid y), capacity 1..2^31 - 1 - 8 x 128 (the kernels' int32 token indices, for the
 * largest tile of the pack), page sizes 1..128. Accept cases first. */
static void check_limits(ingot_context *ctx, const char *arch) {
  char name[1024];
  /* batch 4096 and 65535, paged and contiguous */
  static const int batches[] = {1, 4096, 65535};
  for (int i = 0; i < 3; ++i)
    for (int paged = 0; paged < 2; ++paged) {
      ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 32, 8, 128, 1, batches[i], 8192, paged, 16, 1, 1);
      const int ok = plans(ctx, &g, name, sizeof name);
      if (!ok) fprintf(stderr, "  %s batch %d: %s\n", arch, batches[i], name);
      CHECK(ok);
      if (ok) CHECK_HAS(name, "_d128_g4_sq1_");
    }
  {
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 32, 8, 128, 1, 65536, 64, 0, 16, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
    CHECK_HAS(ingot_context_decline_report(ctx), "no kernel has batch 65536 (kernels exist for 1..65535)\n");
  }
  /* Hkv 1 and 65535 (group 1: Hq 65535; group 8 at 8191 x 8) */
  {
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_FP16, 65535, 65535, 64, 1, 1, 64, 0, 16, 0, 0);
    CHECK(plans(ctx, &g, name, sizeof name));
    CHECK_HAS(name, "_d64_g1_");
    g = shaped_graph(INGOT_DTYPE_FP16, 8 * 8191, 8191, 128, 1, 2, 256, 1, 16, 0, 1);
    CHECK(plans(ctx, &g, name, sizeof name));
    CHECK_HAS(name, "_d128_g8_");
    g = shaped_graph(INGOT_DTYPE_FP16, 65536, 65536, 64, 1, 1, 64, 0, 16, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
    CHECK_HAS(ingot_context_decline_report(ctx), "no kernel has num_kv_heads 65536 (kernels exist for 1..65535)\n");
  }
  /* capacity: 1, and the largest the pack's kernels admit (2^31 - 1 - 8 x 128); one more declines */
  static const int64_t caps[] = {1, 2, 2147482623};
  for (int i = 0; i < 3; ++i)
    for (int paged = 0; paged < 2; ++paged) {
      ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 1, 128, 1, 1, caps[i], paged, 128, 0, 0);
      const int ok = plans(ctx, &g, name, sizeof name);
      if (!ok) fprintf(stderr, "  %s capacity %lld: %s\n", arch, (long long)caps[i], name);
      CHECK(ok);
    }
  {
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 1, 128, 1, 1, 2147482624, 1, 128, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
    CHECK_HAS(ingot_context_decline_report(ctx),
              "no kernel has capacity 2147482624 (kernels exist for 1..2147482623)\n");
  }
  /* page sizes: every power of two 1..128 on every kernel (pages shorter than a wave's
   * chunk are read token by token); 256 nowhere */
  static const int pages[] = {1, 2, 4, 8, 16, 32, 64, 128};
  static const int groups[] = {1, 3, 4, 7, 8, 48};
  static const int dims[] = {64, 80, 128, 256};
  for (int p = 0; p < 8; ++p)
    for (int gi = 0; gi < 6; ++gi)
      for (int di = 0; di < 4; ++di) {
        const int grp = groups[gi], page = pages[p], d = dims[di];
        ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, grp * 2, 2, d, 1, 4, 4096, 1, page, 0, 0);
        const int got = plans(ctx, &g, name, sizeof name);
        if (!got) fprintf(stderr, "  %s D%d g%d page %d: %s\n", arch, d, grp, page, name);
        CHECK(got);
      }
  {
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 8, 256, 1, 4, 4096, 1, 256, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
    CHECK_HAS(ingot_context_decline_report(ctx),
              "no kernel has page_size 256 (kernels exist for 1, 2, 4, 8, 16, 32, 64, 128)\n");
  }
}

/* The plan's own bound on capacity, from the kernel's tile (the dispatch stub, below
 * the matcher): at the bound it plans, one past it is refused with the limit named. */
static void check_plan_capacity_bound(void) {
  const ingot_dispatch_entry *e = ingot_dispatch_find("ingot_attention_decode_dispatch");
  CHECK(e != NULL);
  if (e == NULL) return;
  const ingot_device_caps caps = {32, 132, 232448, 2, 0};
  for (int waves = 1; waves <= 8; waves *= 2) {
    const int tpw = 16 << rnd_range(0, 2);
    const ingot_ad_kernel_meta m = {INGOT_DTYPE_BF16, 128, 4, 1, 4, waves, tpw, 256, 0, 1, 0};
    const int64_t bound = 2147483647 - 8 * (int64_t)waves * tpw;
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, bound, 0, 16, 0, 0);
    ingot_dispatch_plan p;
    char err[256] = "", want[256];
    CHECK_STATUS(e->plan(&m, &g, &caps, &p, err, sizeof err), INGOT_OK);
    CHECK(ingot_ad_params_in(&p)->capacity == (int32_t)bound);
    g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, bound + 1, 0, 16, 0, 0);
    CHECK_STATUS(e->plan(&m, &g, &caps, &p, err, sizeof err), INGOT_INVALID_ARGUMENT);
    snprintf(want, sizeof want,
             "plan: capacity %lld outside 1..%lld (the kernel's int32 token indices run 8 tiles of %d tokens past "
             "the capacity: at most 2^31 - 1 - %d)",
             (long long)bound + 1, (long long)bound, waves * tpw, 8 * waves * tpw);
    CHECK(strcmp(err, want) == 0);
    if (strcmp(err, want) != 0) fprintf(stderr, "  got: %s\n  want: %s\n", err, want);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKDIR\n", argv[0]);
    return 2;
  }
  test_seed_rng();
  check_plan_capacity_bound();
  const char *archs[] = {"sm_90", "gfx942", "gfx950"};
  size_t kernels = 0;
  int planned = 0, split_plans = 0, tensor_core = 0, balanced_plans = 0, default_balanced = 0, default_uniform = 0;
  for (int a = 0; a < 3; ++a) {
    ingot_context *ctx = NULL;
    CHECK_STATUS(ingot_context_create_host(archs[a], &ctx), INGOT_OK);
    if (ctx == NULL) return test_finish("test_main_pack");
    CHECK_STATUS(ingot_context_open_pack(ctx, argv[1]), INGOT_OK);
    if (a == 0) kernels = ingot_context_kernel_count(ctx);
    /* INGOT_BALANCE unset (runtime/src/plan.c): a batch is balanced, in one round, where its uniform
     * plan (INGOT_BALANCE=0) has one segment per sequence or is modelled at
     * INGOT_AD_BALANCE_AUTO_STEPS or more, and then even where its units (segments x B, at most 511)
     * are a multiple of B; else it keeps the uniform segments; INGOT_BALANCE=1 (the rest of this
     * test) balances every batch it can. B = 16 at 8K fills 132 SMs alone (on gfx942 and gfx950 it
     * is a short call of 6-7 segments); B = 2 at 8K is a short call on segments; B = 8 at 64K is cut
     * into segments and long; B = 8 at 1M is long, but its segments x 8 would need the units' cap. */
    {
      ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 32, 8, 128, 1, 16, 8192, 0, 16, 0, 0);
      ingot_plan *plan = NULL;
      static const struct { int B, capacity, balanced[3]; } shapes[] = {
          {16, 8192, {1, 0, 0}}, {2, 8192, {0, 0, 0}}, {8, 65536, {1, 1, 1}}, {8, 1048576, {0, 0, 0}}};
      for (int bs = 0; bs < 4; ++bs) {
        const ingot_attention_graph gb =
            shaped_graph(INGOT_DTYPE_BF16, 32, 8, 128, 1, shapes[bs].B, shapes[bs].capacity, 0, 16, 0, 0);
        setenv("INGOT_BALANCE", "0", 1);
        plan = NULL;
        CHECK_STATUS(ingot_plan_create(ctx, &gb, &plan), INGOT_OK);
        const int uniform_splits = plan ? ingot_plan_num_splits(plan) : 0;
        const double uniform_cost = plan ? plan->dispatch.cost : 0.0;
        if (plan) CHECK((ingot_ad_params_in(&plan->dispatch)->flags & INGOT_AD_FLAG_BALANCED) == 0);
        ingot_plan_destroy(plan);
        unsetenv("INGOT_BALANCE");
        plan = NULL;
        CHECK_STATUS(ingot_plan_create(ctx, &gb, &plan), INGOT_OK);
        if (plan) {
          const int flags = ingot_ad_params_in(&plan->dispatch)->flags;
          const int balanced = (flags & INGOT_AD_FLAG_BALANCED) != 0;
          CHECK(balanced == (uniform_splits == 1 || (uniform_cost >= INGOT_AD_BALANCE_AUTO_STEPS &&
                                                     uniform_splits * shapes[bs].B <= INGOT_AD_BALANCED_MAX_UNITS)));
          CHECK(balanced == shapes[bs].balanced[a]);
          if (balanced != shapes[bs].balanced[a])
            fprintf(stderr, "%s: B %d capacity %d: %d segments, modelled %.1f steps, balanced %d by default\n",
                    archs[a], shapes[bs].B, shapes[bs].capacity, uniform_splits, uniform_cost, balanced);
          if (balanced) {
            const int units = uniform_splits * shapes[bs].B < INGOT_AD_BALANCED_MAX_UNITS
                                  ? uniform_splits * shapes[bs].B : INGOT_AD_BALANCED_MAX_UNITS;
            CHECK(ingot_plan_num_splits(plan) == units && ((flags & INGOT_AD_FLAG_EVEN) != 0) == (units % shapes[bs].B == 0));
          }
          default_balanced += balanced;
          default_uniform += !balanced;
        }
        ingot_plan_destroy(plan);
      }
      /* INGOT_BALANCE=N: N rounds of resident workgroups; 2 rounds fill more units than 1
       * (B=32, 32/8 at 32K, balanced on all three archs); a value outside 0..8 is an error
       * that names it and what is allowed, and no plan */
      const ingot_attention_graph g2 = shaped_graph(INGOT_DTYPE_BF16, 32, 8, 128, 1, 32, 32768, 0, 16, 0, 0);
      int fill[3] = {0, 0, 0};
      for (int r = 1; r <= 2; ++r) {
        setenv("INGOT_BALANCE", r == 1 ? "1" : "2", 1);
        plan = NULL;
        CHECK_STATUS(ingot_plan_create(ctx, &g2, &plan), INGOT_OK);
        if (plan) {
          const int flags = ingot_ad_params_in(&plan->dispatch)->flags;
          CHECK(flags & INGOT_AD_FLAG_BALANCED);
          fill[r] = ingot_ad_bal_fill(flags);
        }
        ingot_plan_destroy(plan);
      }
      CHECK(fill[1] >= 1 && fill[2] > fill[1]);
      static const char *const bad[] = {"9", "-1", "yes", "12"};
      for (int i = 0; i < 4; ++i) {
        setenv("INGOT_BALANCE", bad[i], 1);
        plan = NULL;
        CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_INVALID_ARGUMENT);
        CHECK(plan == NULL && strstr(ingot_context_last_error(ctx), "INGOT_BALANCE") != NULL &&
              strstr(ingot_context_last_error(ctx), "allowed") != NULL);
        ingot_plan_destroy(plan);
      }
      setenv("INGOT_BALANCE", "1", 1);
    }
    CHECK(kernels >= 40 && ingot_context_kernel_count(ctx) == kernels);
    for (int i = 0; i < 300; ++i) {
      /* any group (Hq = group x Hkv) and any KV head count */
      const int grp = (int)(i % 9 == 0 ? rnd_range(9, 1024) : rnd_range(1, 8));
      const int hkv = (int)(i % 7 == 0 ? rnd_range(1, 2048 / (grp > 64 ? 64 : 1)) : rnd_range(1, 16));
      const int h[2] = {grp * hkv, hkv};
      /* every head dim of the pack (160 and 192 in bf16 only) */
      static const int kDims[] = {64, 80, 96, 112, 128, 160, 192, 256};
      const int d = kDims[rnd_range(0, 7)];
      const ingot_dtype dt = d == 160 || d == 192 || rnd() & 1 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
      const int sq = d == 128 ? (int)rnd_range(1, 4) : 1;
      const int b = (int)(i % 5 == 0 ? rnd_range(1, 4096) : rnd_range(1, 64));
      const int64_t capacity = rnd_range(1, i % 10 == 0 ? 2147482623 : 65536);
      const int paged = (int)(rnd() & 1), page = 1 << rnd_range(0, 7); /* 1..128 */
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
      const int group = h[0] / h[1];
      const int wide = d == 160 || d == 192, odd = d == 80 || d == 96 || d == 112;
      const char *name = ingot_plan_kernel_name(plan);
      /* Past group 16 on sm_90 the row waves share a rank with the row blocks of 16: either
       * may be chosen, by the model (checked below) */
      const int rank_of_two = a == 0 && group > 16 && sq == 1 && (d == 64 || d == 128);
      const int tile = rank_of_two && strstr(name, "_tcs4rw") != NULL ? (d == 64 ? 80 : 64)
                                                                     : tile_group(d, group, sq, a == 0);
      char want[128];
      snprintf(want, sizeof want, "attention_decode_%s_d%d_g%d_sq%d_%s_", dt == INGOT_DTYPE_BF16 ? "bf16" : "fp16", d,
               tile, sq > 1 ? 4 : 1, paged ? "paged" : "contig");
      /* the chosen kernel models within 1% of every other of its rank (INGOT_COST_MARGIN:
       * a later one wins only 1% faster) */
      for (int k = 0; k < plan->num_considered; ++k)
        CHECK(INGOT_COST_MARGIN * plan->dispatch.cost <= plan->considered[k].cost);
      if (rank_of_two) CHECK(plan->num_considered == 2);
      CHECK_HAS(name, want);
      if (strstr(name, want) == NULL) fprintf(stderr, "  %s: %s, wanted %s\n", archs[a], name, want);
      const int tc = strstr(name, "_tc") != NULL;
      tensor_core += tc;
      /* 64 and 128 take the instances with math auto (tensor cores on sm_90), 80..112 too on
       * sm_90; head dims 160, 192 and 256 on sm_90 for tiles 4 and 8 (the ring kernels);
       * else SIMT */
      const int d256_tc = a == 0 && tile >= 4;
      CHECK(tc == (d == 64 || d == 128 || (odd && a == 0) || d256_tc));
      /* decode_mid on sm_90: head dim 128, groups 2..4 (configs/attention_decode.yaml), one query
       * token, B <= 4, capacity 4K..16K */
      const int mid = a == 0 && d == 128 && group >= 2 && group <= 4 && sq == 1 && mid_admits(b, capacity);
      CHECK(mid == (strstr(name, "_w4t16_tcs4") != NULL));
      if (mid != (strstr(name, "_w4t16_tcs4") != NULL))
        fprintf(stderr, "  %s: B %d, capacity %lld, %s, page %d: %s (decode_mid %s)\n", archs[a], b,
                (long long)capacity, paged ? "paged" : "contiguous", page, name, mid ? "expected" : "not expected");
      /* Only the rings from 48 KiB take dynamic shared memory (at 48 KiB the balanced split's
       * own static LDS would pass the limit), their split alone: 4 waves x 3 stages x 16 tokens
       * x 256 x 2 (K, V) x 2 bytes at head dim 256, 4 x 4 x 16 x 128 x 2 x 2 for decode_mid, at
       * head dim 128 the row-wave kernel's one ring of 4 stages x 32 tokens x 128 x 2 x 2
       * (decode_mq), and decode_g16's 4 waves x 3 stages x 16 tokens x D x 2 x 2. */
      const int mq = a == 0 && tile == 64, g16 = a == 0 && tile == 16;
      const uint32_t dyn = d == 256 && d256_tc ? 196608u : wide && a == 0 ? 147456u : mid ? 131072u
                         : mq && d == 128 ? 65536u : g16 ? (uint32_t)(4 * 3 * 16 * d * 2 * 2) : 0u;
      for (int l = 0; l < plan->dispatch.num_launches; ++l) {
        const ingot_launch *ln = &plan->dispatch.launches[l];
        /* the split kernels' (uniform and balanced) */
        const int split_entry = ln->entry == INGOT_AD_ENTRY_SPLIT || ln->entry == INGOT_AD_ENTRY_BALANCED_SPLIT;
        CHECK(ln->lds_bytes == (split_entry ? dyn : 0u));
      }
      const int splits = ingot_plan_num_splits(plan);
      const int balanced = (ingot_ad_params_in(&plan->dispatch)->flags & INGOT_AD_FLAG_BALANCED) != 0; /* B > 1 (issue 23) */
      /* segments up to the merge's 256; a balanced plan's units up to 511 (one sequence's
       * pieces are capped at 256 on the device) */
      CHECK(splits >= 1 && splits <= (balanced ? INGOT_AD_BALANCED_MAX_UNITS : 256));
      CHECK(!balanced || (b > 1 && b <= INGOT_AD_BALANCED_MAX_BATCH));
      balanced_plans += balanced;
      CHECK(ingot_plan_launch_count(plan) == (splits > 1 || balanced ? 2 : 1));
      split_plans += splits > 1;
      /* workspace: per (b, hkv) round_up(rows*splits, 4) + rows*splits*D floats; balanced:
       * per hkv (splits + b) slots of those, then the merge's list: b + 1 int64 */
      const uint64_t rows = (uint64_t)group * (uint64_t)sq, per = rows * (uint64_t)splits;
      const uint64_t slots = rows * ((uint64_t)splits + (uint64_t)b);
      const uint64_t want_ws =
          balanced ? (uint64_t)h[1] * ((slots + 3) / 4 * 4 + slots * (uint64_t)d) * 4 + ((uint64_t)b + 1) * 8
          : splits > 1 ? (uint64_t)b * (uint64_t)h[1] * ((per + 3) / 4 * 4 + per * (uint64_t)d) * 4 : 0;
      CHECK(ingot_plan_workspace_size(plan) == want_ws);
      ingot_plan_destroy(plan);
    }
    check_kernel_inputs(ctx);
    check_models(ctx, archs[a]);
    check_limits(ctx, archs[a]);
    /* Outside the admitted space: head dim 72, Hq 12 / Hkv 5 (no group), Sq 5, capacity 2^31 - 1;
     * each report starts with its summary line. */
    const ingot_attention_graph bad[] = {
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 72, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 12, 5, 128, 1, 1, 4096, 0, 16, 0, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 5, 1, 4096, 0, 16, 1, 0),
        shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 2147483647, 0, 16, 0, 0)};
    const char *why[] = {"no kernel has head_dim 72 (kernels exist for 64, 80, 96, 112, 128, 160, 192, 256)\n",
                         "no kernel has group 0 (Hq 12 is not a multiple of Hkv 5; kernels exist for 1..65535)\n",
                         "no kernel has seq_q 5 (kernels exist for 1..4)\n",
                         "no kernel has capacity 2147483647 (kernels exist for 1..2147482623)\n"};
    /* decode_w8 is built for sm_90 alone */
    const int eights = check_rank_choice(ctx, a == 0);
    CHECK(a == 0 ? eights > 0 : eights == 0);
    if (a == 0) printf("test_main_pack: sm_90, 400 random graphs of one rank: %d took 8 waves\n", eights);
    for (int i = 0; i < 4; ++i) {
      ingot_plan *plan = NULL;
      CHECK_STATUS(ingot_plan_create(ctx, &bad[i], &plan), INGOT_NO_MATCH);
      CHECK(plan == NULL);
      CHECK_HAS(ingot_context_decline_report(ctx), why[i]);
      CHECK(strncmp(ingot_context_decline_report(ctx), why[i], strlen(why[i])) == 0); /* first */
    }
    ingot_context_destroy(ctx);
  }
  printf("test_main_pack: %zu kernels, %d plans (%d split, %d balanced, %d tensor-core) on sm_90, gfx942, gfx950; "
         "by default %d balanced, %d on uniform segments\n",
         kernels, planned, split_plans, balanced_plans, tensor_core, default_balanced, default_uniform);
  CHECK(balanced_plans > 0 && default_balanced > 0 && default_uniform > 0);
  return test_finish("test_main_pack");
}
