/* test_matcher.c: the test pack (tests/data/test_seed.yaml) admits the seed
 * graph with either mask, and declines every graph that changes one field of
 * it, naming the constraint. Accept cases first: a matcher stuck on "no" would
 * pass every decline test. usage: test_matcher PACKDIR */
#include "test_util.h"
/* after test_util.h, which sets the feature macros before any system header */
#include "ad_family.h" /* ingot_graph_validate, the family table */

static const char *g_pack;

static ingot_context *open_ctx(const char *arch) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host(arch, &ctx), INGOT_OK);
  if (ctx == NULL) exit(1);
  ingot_status s = ingot_context_open_pack(ctx, g_pack);
  if (s != INGOT_OK) {
    fprintf(stderr, "cannot open the test pack %s: %s\n%s\n", g_pack, ingot_status_string(s),
            ingot_context_last_error(ctx));
    exit(1);
  }
  CHECK(ingot_context_kernel_count(ctx) == 1);
  return ctx;
}

/* Pads the strides of a 4-d tensor by random multiples of 8 elements: still
 * "dense_d", so still admitted. */
static void pad_strides(ingot_tensor_desc *t) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; --i) {
    t->strides[i] = s;
    s = s * t->dims[i] + (i > 0 ? 8 * rnd_range(0, 3) : 0);
  }
}

static void test_accept(void) {
  for (int round = 0; round < 8; ++round) {
    const char *arch = (round % 3 == 0) ? NULL : (round % 3 == 1 ? "gfx942" : "gfx950");
    ingot_context *ctx = open_ctx(arch);
    const ingot_mask mask = round % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
    const int64_t capacity = round == 0 ? 64 : round == 1 ? 65536 : rnd_range(64, 65536);
    ingot_attention_graph g = seed_graph(capacity, mask);
    if (round >= 4) {
      pad_strides(&g.q);
      pad_strides(&g.k);
      pad_strides(&g.v);
      pad_strides(&g.o);
    }
    ingot_plan *plan = (ingot_plan *)&g; /* must be overwritten */
    ingot_status s = ingot_plan_create(ctx, &g, &plan);
    CHECK_STATUS(s, INGOT_OK);
    if (s != INGOT_OK) {
      fprintf(stderr, "accept round %d (capacity %lld, mask %d): %s\n", round, (long long)capacity, (int)mask,
              ingot_context_last_error(ctx));
      ingot_context_destroy(ctx);
      continue;
    }
    CHECK(plan != NULL);
    CHECK(!strcmp(ingot_plan_kernel_name(plan), "test_seed_bf16_d128_g4_sq1_contig_w4t16"));
    CHECK(!strcmp(ingot_context_last_error(ctx), ""));
    CHECK(!strcmp(ingot_context_decline_report(ctx), ""));
    /* docs/INTERNALS.md 5: one launch without splits, split + merge with them; the
     * workspace holds round_up(rows_total*num_splits, 4) + rows_total*num_splits*D
     * floats per (b, hkv); here B = 1, Hkv = 2, rows_total = 4, D = 128. */
    const int splits = ingot_plan_num_splits(plan);
    CHECK(splits >= 1 && splits <= 256);
    CHECK(ingot_plan_launch_count(plan) == (splits > 1 ? 2 : 1));
    const size_t rs = 4 * (size_t)splits, want_ws = splits > 1 ? 1 * 2 * (((rs + 3) / 4 * 4) + rs * 128) * 4 : 0;
    CHECK(ingot_plan_workspace_size(plan) == want_ws);
    if (capacity == 65536) CHECK(splits > 1); /* 132 compute units and 64K tokens: split-KV */
    if (capacity == 64) CHECK(splits == 1);
    ingot_plan_destroy(plan);
    ingot_context_destroy(ctx);
  }
}

/* Plans g, expects INGOT_NO_MATCH with `reason` in the report and last error. */
static void expect_decline(ingot_context *ctx, const ingot_attention_graph *g, const char *what,
                           const char *reason) {
  ingot_plan *plan = (ingot_plan *)g;
  ingot_status s = ingot_plan_create(ctx, g, &plan);
  if (s != INGOT_NO_MATCH) fprintf(stderr, "decline case '%s'\n", what);
  CHECK_STATUS(s, INGOT_NO_MATCH);
  CHECK(plan == NULL);
  if (s == INGOT_OK) ingot_plan_destroy(plan);
  CHECK_HAS(ingot_context_decline_report(ctx), reason);
  CHECK_HAS(ingot_context_last_error(ctx), reason);
}

static void set_dtype(ingot_attention_graph *g, ingot_dtype dt) {
  g->q.dtype = g->k.dtype = g->v.dtype = g->o.dtype = dt;
}

static void set_dim(ingot_tensor_desc *t, int i, int64_t d) {
  const int64_t dims[4] = {t->dims[0], t->dims[1], t->dims[2], t->dims[3]};
  int64_t nd[4];
  memcpy(nd, dims, sizeof nd);
  nd[i] = d;
  set_tensor(t, t->dtype, t->rank, nd);
}

/* Plans g (expecting NO_MATCH) and compares the whole decline report. */
static void expect_report(ingot_context *ctx, const ingot_attention_graph *g, const char *want) {
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, g, &plan), INGOT_NO_MATCH);
  CHECK(plan == NULL);
  const char *got = ingot_context_decline_report(ctx);
  if (strcmp(got, want) != 0) fprintf(stderr, "report:\n%s\nwanted:\n%s\n", got, want);
  CHECK(strcmp(got, want) == 0);
}

/* The decline report starts with one line per field whose value no kernel
 * admits, naming what the kernels do admit; then the per-kernel lines. Accept
 * case first: a graph that plans leaves no report at all. */
static void test_decline_summary(void) {
  ingot_context *ctx = open_ctx(NULL);
  const char *K = "test_seed_bf16_d128_g4_sq1_contig_w4t16: ";
  char want[1024];
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), INGOT_MASK_NONE);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  CHECK(!strcmp(ingot_context_decline_report(ctx), ""));
  ingot_plan_destroy(plan);

  g = seed_graph(4096, INGOT_MASK_NONE);
  set_dim(&g.q, 3, 72);
  set_dim(&g.o, 3, 72);
  set_dim(&g.k, 3, 72);
  set_dim(&g.v, 3, 72);
  snprintf(want, sizeof want, "no kernel has head_dim 72 (kernels exist for 128)\n%shead_dim = 72, allowed eq 128\n", K);
  expect_report(ctx, &g, want);

  /* every dtype field the kernel constrains: one line each, in the UMD's order */
  g = seed_graph(4096, INGOT_MASK_CAUSAL);
  set_dtype(&g, INGOT_DTYPE_FP16);
  snprintf(want, sizeof want,
           "no kernel has dtype \"fp16\" (kernels exist for \"bf16\")\n"
           "no kernel has kv_dtype \"fp16\" (kernels exist for \"bf16\")\n"
           "no kernel has o_dtype \"fp16\" (kernels exist for \"bf16\")\n"
           "no kernel has v_dtype \"fp16\" (kernels exist for \"bf16\")\n"
           "%sdtype = \"fp16\", allowed eq \"bf16\"\n", K);
  expect_report(ctx, &g, want);

  /* Hq no multiple of Hkv: the group is 0, and the line says why */
  g = seed_graph(4096, INGOT_MASK_NONE);
  set_dim(&g.k, 2, 3);
  set_dim(&g.v, 2, 3);
  snprintf(want, sizeof want,
           "no kernel has group 0 (Hq 8 is not a multiple of Hkv 3; kernels exist for 4)\n"
           "no kernel has heads [8,3] (kernels exist for [8,2])\n"
           "%sgroup = 0, allowed range [4, 4]\n", K);
  expect_report(ctx, &g, want);

  /* ranges: batch [1, 1], capacity [64, 65536] */
  g = seed_graph(4096, INGOT_MASK_NONE);
  set_dim(&g.q, 0, 3);
  set_dim(&g.o, 0, 3);
  set_dim(&g.k, 0, 3);
  set_dim(&g.v, 0, 3);
  set_dim(&g.seq_lens, 0, 3);
  snprintf(want, sizeof want, "no kernel has batch 3 (kernels exist for 1)\n%sbatch = 3, allowed range [1, 1]\n", K);
  expect_report(ctx, &g, want);
  g = seed_graph(4096, INGOT_MASK_NONE);
  set_capacity(&g, 65537);
  snprintf(want, sizeof want,
           "no kernel has capacity 65537 (kernels exist for 64..65536)\n%scapacity = 65537, allowed range [64, 65536]\n", K);
  expect_report(ctx, &g, want);

  /* a graph-scope decline: the pack's line alone (no kernel was asked) */
  g = seed_graph(4096, INGOT_MASK_NONE);
  g.seq_lens.dtype = INGOT_DTYPE_INT64;
  expect_report(ctx, &g, "pack test_seed (all 1 kernels, graph-scope): seq_lens.dtype = \"int64\", allowed eq \"int32\"\n");
  ingot_context_destroy(ctx);

  /* an arch no kernel is built for */
  ctx = open_ctx("gfx1100");
  g = seed_graph(4096, INGOT_MASK_NONE);
  snprintf(want, sizeof want,
           "no kernel has arch \"gfx1100\" (kernels exist for \"gfx942\", \"gfx950\", \"sm_90\")\n"
           "%sarch = \"gfx1100\", allowed in [\"gfx942\",\"gfx950\",\"sm_90\"]\n", K);
  expect_report(ctx, &g, want);
  ingot_context_destroy(ctx);
}

static void test_declines(void) {
  ingot_context *ctx = open_ctx(NULL);
  const char *K = "test_seed_bf16_d128_g4_sq1_contig_w4t16: ";
  char want[256];
  for (int mi = 0; mi < 2; ++mi) {
    const ingot_mask mask = mi ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
    const int64_t cap = rnd_range(64, 65536);
    ingot_attention_graph g;

    g = seed_graph(cap, mask);
    set_dtype(&g, INGOT_DTYPE_FP16);
    snprintf(want, sizeof want, "%sdtype = \"fp16\", allowed eq \"bf16\"", K);
    expect_decline(ctx, &g, "dtype fp16", want);

    g = seed_graph(cap, mask);
    set_dim(&g.q, 1, 16);
    set_dim(&g.o, 1, 16);
    snprintf(want, sizeof want, "%sgroup = 8, allowed range [4, 4]", K);
    expect_decline(ctx, &g, "Hq 16", want);

    g = seed_graph(cap, mask);
    set_dim(&g.k, 2, 4);
    set_dim(&g.v, 2, 4);
    snprintf(want, sizeof want, "%sgroup = 2, allowed range [4, 4]", K);
    expect_decline(ctx, &g, "Hkv 4", want);

    /* group 4, but not the pair the test pack pins (tests/data/test_seed.yaml) */
    g = seed_graph(cap, mask);
    set_dim(&g.q, 1, 16);
    set_dim(&g.o, 1, 16);
    set_dim(&g.k, 2, 4);
    set_dim(&g.v, 2, 4);
    snprintf(want, sizeof want, "%sheads = [16,4], allowed in [[8,2]]", K);
    expect_decline(ctx, &g, "pinned heads", want);

    g = seed_graph(cap, mask);
    set_dim(&g.q, 3, 64);
    set_dim(&g.o, 3, 64);
    set_dim(&g.k, 3, 64);
    set_dim(&g.v, 3, 64);
    snprintf(want, sizeof want, "%shead_dim = 64, allowed eq 128", K);
    expect_decline(ctx, &g, "D 64", want);

    g = seed_graph(cap, mask);
    set_dim(&g.q, 2, 2);
    set_dim(&g.o, 2, 2);
    snprintf(want, sizeof want, "%sseq_q = 2, allowed range [1, 1]", K);
    expect_decline(ctx, &g, "Sq 2", want);

    const int64_t bad_caps[2] = {63, 65537};
    for (int c = 0; c < 2; ++c) {
      g = seed_graph(cap, mask);
      set_capacity(&g, bad_caps[c]);
      snprintf(want, sizeof want, "%scapacity = %lld, allowed range [64, 65536]", K, (long long)bad_caps[c]);
      expect_decline(ctx, &g, "capacity", want);
    }

    /* KV strides that break 16-byte loads: a last-dim stride other than 1, or
     * another stride that is no multiple of 8 elements (a graph-scope decline). */
    g = seed_graph(cap, mask);
    ingot_tensor_desc *t = rnd() % 2 ? &g.k : &g.v;
    const char *name = t == &g.k ? "k" : "v";
    if (rnd() % 2) {
      t->strides[3] = 2;
      t->strides[2] = 2 * 128;
      t->strides[1] = 2 * 128 * 2;
      t->strides[0] = 2 * 128 * 2 * cap;
    } else {
      t->strides[rnd_range(0, 2)] += rnd_range(1, 7);
    }
    snprintf(want, sizeof want, "pack test_seed (all 1 kernels, graph-scope): %s.layout = \"strided\", allowed eq \"dense_d\"",
             name);
    expect_decline(ctx, &g, "strided KV", want);

    /* top-left causal is admitted and handed to the kernels as flag bit 12 (kFlagTopLeft) */
    g = seed_graph(cap, INGOT_MASK_CAUSAL);
    g.mask_align = INGOT_ALIGN_TOP_LEFT;
    {
      ingot_plan *plan = NULL;
      CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
      if (plan) CHECK(ingot_ad_params_in(&plan->dispatch)->flags == (1 | (1 << 12))); /* kFlagCausal | kFlagTopLeft */
      ingot_plan_destroy(plan);
      g.mask = INGOT_MASK_NONE; /* no mask: the alignment means nothing, no flag */
      CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
      if (plan) CHECK(ingot_ad_params_in(&plan->dispatch)->flags == 0);
      ingot_plan_destroy(plan);
    }

    g = seed_graph(cap, mask);
    const int64_t lse_dims[3] = {1, 8, 1};
    set_tensor(&g.lse, INGOT_DTYPE_FP32, 3, lse_dims);
    snprintf(want, sizeof want, "%slse = true, allowed in [false]", K);
    expect_decline(ctx, &g, "LSE asked", want);

    g = seed_graph(cap, mask);
    g.seq_lens.dtype = INGOT_DTYPE_INT64;
    expect_decline(ctx, &g, "int64 lengths", "graph-scope): seq_lens.dtype = \"int64\", allowed eq \"int32\"");

    g = seed_graph(cap, mask);
    g.seq_lens.memory = INGOT_MEMORY_HOST;
    expect_decline(ctx, &g, "host lengths", "graph-scope): seq_lens.memory = \"host\", allowed eq \"device\"");

    /* After declines, the seed graph still plans and the report is cleared. */
    g = seed_graph(cap, mask);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    CHECK(!strcmp(ingot_context_decline_report(ctx), ""));
    ingot_plan_destroy(plan);
  }
  ingot_context_destroy(ctx);

  /* Wrong arch: the seed graph on a host context for gfx1100. */
  ingot_context *other = open_ctx("gfx1100");
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), rnd() % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
  snprintf(want, sizeof want, "%sarch = \"gfx1100\", allowed in [\"gfx942\",\"gfx950\"", K);
  expect_decline(other, &g, "arch gfx1100", want);
  ingot_context_destroy(other);
}

/* ---- what the kernels read and write: dtypes, layouts, outputs without overlap ---- */

/* Plans g, expects INGOT_INVALID_ARGUMENT with `reason` in the last error. */
static void expect_refusal(ingot_context *ctx, const ingot_attention_graph *g, const char *what, const char *reason) {
  ingot_plan *plan = (ingot_plan *)g;
  ingot_status s = ingot_plan_create(ctx, g, &plan);
  if (s != INGOT_INVALID_ARGUMENT) fprintf(stderr, "refusal case '%s'\n", what);
  CHECK_STATUS(s, INGOT_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  if (s == INGOT_OK) ingot_plan_destroy(plan);
  CHECK_HAS(ingot_context_last_error(ctx), reason);
}

/* Accept cases first: layouts that reach every element once, with padding and
 * permuted dims; page-table rows at any row stride; a one-sequence length array
 * at any stride; an fp32 LSE (the real pack, below) and an int32 page table. */
static void test_kernel_inputs_accept(void) {
  ingot_context *ctx = open_ctx(NULL);
  for (int round = 0; round < 16; ++round) {
    ingot_attention_graph g = seed_graph(rnd_range(64, 65536), round % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
    transpose_o(&g);
    if (round % 3 == 0) g.seq_lens.strides[0] = rnd_range(2, 64); /* B = 1: the stride is never used */
    ingot_plan *plan = NULL;
    ingot_status s = ingot_plan_create(ctx, &g, &plan);
    CHECK_STATUS(s, INGOT_OK);
    if (s != INGOT_OK) fprintf(stderr, "  o strides [%lld,%lld,%lld,1]: %s\n", (long long)g.o.strides[0],
                               (long long)g.o.strides[1], (long long)g.o.strides[2], ingot_context_last_error(ctx));
    ingot_plan_destroy(plan);
  }
  ingot_context_destroy(ctx);
}

static void test_kernel_inputs_decline(void) {
  ingot_context *ctx = open_ctx(NULL);
  const char *K = "test_seed_bf16_d128_g4_sq1_contig_w4t16: ";
  const char *P = "pack test_seed (all 1 kernels, graph-scope): ";
  char want[256];
  const int64_t cap = rnd_range(64, 65536);
  ingot_attention_graph g;

  /* v of another dtype than k: the kernel reads both with one conversion */
  g = seed_graph(cap, INGOT_MASK_NONE);
  g.v.dtype = INGOT_DTYPE_FP16;
  snprintf(want, sizeof want, "%sv_dtype = \"fp16\", allowed eq \"bf16\"", K);
  expect_decline(ctx, &g, "fp16 v, bf16 k", want);
  g = seed_graph(cap, INGOT_MASK_NONE);
  g.v.dtype = rnd() % 2 ? INGOT_DTYPE_FP32 : INGOT_DTYPE_INT32;
  snprintf(want, sizeof want, "%sv_dtype = \"%s\", allowed eq \"bf16\"", K,
           g.v.dtype == INGOT_DTYPE_FP32 ? "fp32" : "int32");
  expect_decline(ctx, &g, "fp32/int32 v", want);

  /* an LSE of any dtype but fp32: the kernels write fp32 (declined before the
   * kernel's own lse = false) */
  const ingot_dtype bad_lse[4] = {INGOT_DTYPE_FP16, INGOT_DTYPE_BF16, INGOT_DTYPE_INT32, INGOT_DTYPE_INT64};
  const char *bad_lse_name[4] = {"fp16", "bf16", "int32", "int64"};
  for (int i = 0; i < 4; ++i) {
    g = seed_graph(cap, INGOT_MASK_NONE);
    const int64_t lse_dims[3] = {1, 8, 1};
    set_tensor(&g.lse, bad_lse[i], 3, lse_dims);
    snprintf(want, sizeof want, "%slse.dtype = \"%s\", allowed in [\"absent\",\"fp32\"]", P, bad_lse_name[i]);
    expect_decline(ctx, &g, "LSE not fp32", want);
  }

  /* a page table of int64 entries (torch's default integer type), or transposed */
  g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, cap, 1, 64, 0, 0);
  g.page_table.dtype = INGOT_DTYPE_INT64;
  snprintf(want, sizeof want, "%spage_table.dtype = \"int64\", allowed in [\"absent\",\"int32\"]", P);
  expect_decline(ctx, &g, "int64 page table", want);
  const int64_t B = rnd_range(2, 8);
  g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, (int)B, cap, 1, 64, 0, 0);
  g.page_table.strides[1] = B, g.page_table.strides[0] = 1; /* column-major [B, max_pages] */
  snprintf(want, sizeof want, "%spage_table.layout = \"strided\", allowed in [\"absent\",\"dense_rows\"]", P);
  expect_decline(ctx, &g, "transposed page table", want);

  /* lengths of several sequences, not adjacent */
  g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, (int)B, cap, 0, 0, 0, 0);
  g.seq_lens.strides[0] = rnd_range(2, 16);
  snprintf(want, sizeof want, "%sseq_lens.layout = \"strided\", allowed eq \"contiguous\"", P);
  expect_decline(ctx, &g, "strided lengths", want);

  /* outputs whose strides overlap: refused by validation, before matching */
  g = seed_graph(cap, INGOT_MASK_NONE);
  g.o.strides[0] = g.o.strides[1] = g.o.strides[2] = 8;
  expect_refusal(ctx, &g, "o strides [8,8,8,1]",
                 "graph: o strides [8,8,8,1] with dims [1,8,1,128] overlap: dim 1's stride 8 is below dim 3's span "
                 "1 x 128 (allowed: strides that map every element to its own offset)");
  g = seed_graph(cap, INGOT_MASK_NONE);
  g.o.strides[1] = 8 * rnd_range(0, 15); /* heads closer than a row of 128 */
  if (g.o.strides[1] == 0) g.o.strides[1] = 8;
  snprintf(want, sizeof want, "graph: o strides [%lld,%lld,128,1] with dims [1,8,1,128] overlap",
           (long long)g.o.strides[0], (long long)g.o.strides[1]);
  expect_refusal(ctx, &g, "o heads overlap", want);
  g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 2, 3, cap, 0, 0, 0, 1);
  g.lse.strides[1] = 1; /* heads and query tokens share offsets */
  snprintf(want, sizeof want, "graph: lse strides [%lld,1,1] with dims [3,8,2] overlap", (long long)g.lse.strides[0]);
  expect_refusal(ctx, &g, "lse overlap", want);
  ingot_context_destroy(ctx);
}

/* The overlap rule against the ground truth on small outputs (every offset
 * computed): whatever validation accepts has distinct offsets, and every true
 * overlap is refused. The rule is sufficient, not necessary, so a refusal of a
 * layout whose offsets happen to be distinct is not an error here. */
static int offsets_unique(const ingot_tensor_desc *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i) n *= t->dims[i];
  int64_t *offs = malloc((size_t)n * sizeof *offs);
  if (offs == NULL) return -1;
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, off = 0;
    for (int i = t->rank - 1; i >= 0; --i) {
      off += (rest % t->dims[i]) * t->strides[i];
      rest /= t->dims[i];
    }
    offs[e] = off;
  }
  int unique = 1;
  for (int64_t a = 0; a < n && unique; ++a)
    for (int64_t b = a + 1; b < n && unique; ++b) unique = offs[a] != offs[b];
  free(offs);
  return unique;
}

static void test_overlap_ground_truth(void) {
  int accepted = 0, refused = 0;
  for (int round = 0; round < 400; ++round) {
    const int64_t B = rnd_range(1, 3), Hkv = rnd_range(1, 2), Hq = Hkv * rnd_range(1, 3), Sq = rnd_range(1, 3);
    const int64_t D = rnd_range(1, 6), cap = rnd_range(1, 8);
    const int64_t qd[4] = {B, Hq, Sq, D}, kd[4] = {B, cap, Hkv, D}, ld[3] = {B, Hq, Sq}, sd[1] = {B};
    ingot_attention_graph g = seed_graph(cap, INGOT_MASK_NONE);
    set_tensor(&g.q, INGOT_DTYPE_BF16, 4, qd);
    set_tensor(&g.o, INGOT_DTYPE_BF16, 4, qd);
    set_tensor(&g.k, INGOT_DTYPE_BF16, 4, kd);
    set_tensor(&g.v, INGOT_DTYPE_BF16, 4, kd);
    set_tensor(&g.seq_lens, INGOT_DTYPE_INT32, 1, sd);
    set_tensor(&g.lse, INGOT_DTYPE_FP32, 3, ld);
    ingot_tensor_desc *t = round % 2 ? &g.o : &g.lse;
    for (int i = 0; i < t->rank; ++i) t->strides[i] = rnd_range(1, 40);
    char err[512] = "";
    const ingot_status s = ingot_graph_validate(&g, err, sizeof err);
    const int unique = offsets_unique(t);
    if (s == INGOT_OK) {
      ++accepted;
      CHECK(unique == 1);
    } else {
      ++refused;
      CHECK_STATUS(s, INGOT_INVALID_ARGUMENT);
      CHECK_HAS(err, t == &g.o ? "graph: o strides [" : "graph: lse strides [");
      CHECK_HAS(err, "overlap");
    }
    if (unique == 0) CHECK(s == INGOT_INVALID_ARGUMENT); /* every true overlap is refused */
  }
  CHECK(accepted > 20 && refused > 20); /* both sides reached */
  printf("test_matcher: overlap rule on 400 random small outputs: %d accepted, %d refused, none of them wrong\n",
         accepted, refused);
}

/* Every field of the family's table is one the matcher knows, with its type,
 * and the message for an unknown field names every one of them. */
static void test_field_names(void) {
  const ingot_family *f = &ingot_family_attention_decode;
  json_t *c = json_pack("{s:s,s:s,s:i}", "field", "no_such_field", "op", "eq", "value", 1);
  char err[2048] = "";
  CHECK(c != NULL && !ingot_constraint_check(c, f, err, sizeof err));
  json_decref(c);
  CHECK(strstr(err, "unknown field \"no_such_field\" of family attention_decode") != NULL);
  for (size_t i = 0; i < f->num_fields; ++i) {
    CHECK(ingot_family_field_type(f, f->fields[i].name) == f->fields[i].type);
    char quoted[96];
    snprintf(quoted, sizeof quoted, " %s,", f->fields[i].name);
    if (strstr(err, quoted) == NULL && strstr(err, f->fields[i].name) == NULL)
      fprintf(stderr, "field %s not in the message %s\n", f->fields[i].name, err);
    CHECK(strstr(err, f->fields[i].name) != NULL);
  }
  static const char *const kNew[] = {"v_dtype", "lse.dtype", "page_table.dtype", "page_table.layout",
                                     "seq_lens.layout"};
  for (size_t i = 0; i < sizeof kNew / sizeof kNew[0]; ++i)
    CHECK(ingot_family_field_type(f, kNew[i]) == INGOT_FIELD_STRING);
  CHECK(f->num_fields == 28);
  CHECK(ingot_family_field_type(f, "page_table.strides") == INGOT_FIELD_UNKNOWN);
  CHECK(ingot_family_field_type(NULL, "dtype") == INGOT_FIELD_UNKNOWN);
  CHECK(ingot_family_find("attention_decode") == f && ingot_family_find("no_such_family") == NULL);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_matcher PACKDIR\n");
    return 2;
  }
  g_pack = argv[1];
  test_seed_rng();
  test_accept();
  if (g_failures) return test_finish("test_matcher (accept cases failed; declines not run)");
  test_kernel_inputs_accept();
  if (g_failures) return test_finish("test_matcher (kernel-input accept cases failed; declines not run)");
  test_declines();
  test_decline_summary();
  test_kernel_inputs_decline();
  test_overlap_ground_truth();
  test_field_names();
  return test_finish("test_matcher");
}
