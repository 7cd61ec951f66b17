/* test_split_policy.c: the segment counts the shipped pack's dispatch stub
 * (runtime/src/families/attention_decode/ingot_attention_decode_plan.h, policy from
 * configs/attention_decode.yaml) plans on an H200-like device: 132 SMs, two
 * resident workgroups of the seed kernel (4 waves x 16 tokens) each.
 *  - The benchmark's shapes (bench/decode.py) keep the counts they were tuned
 *    and measured with (docs/PERFORMANCE.md); so do the ring kernels' past
 *    48 KiB (head dim 256 and decode_mid: 4 waves, one resident per SM).
 *  - A nearly empty last round of workgroups gets more segments
 *    (docs/INTERNALS.md 4): B x Hkv just above the resident count.
 *  - Exact multiples of the resident count are not split further.
 * usage: test_split_policy */
#include "test_util.h"
/* after test_util.h, which sets the feature macros before any system header */
#include "dispatch.h"
#include "ingot_attention_decode_plan.h"

static const ingot_ad_kernel_meta k_seed = {INGOT_DTYPE_BF16, 128, 4, 1, 4, 4, 16, 256, 0, 0, 0};

/* The head-dim-256 ring kernels (decode_d256_tc, decode_g8_d256_tc): 4 waves, 16 tokens. */
static const ingot_ad_kernel_meta k_d256_ring = {INGOT_DTYPE_BF16, 256, 4, 1, 4, 4, 16, 256, 0, 0, 0};
static const ingot_ad_kernel_meta k_g8_d256_ring = {INGOT_DTYPE_BF16, 256, 8, 1, 8, 4, 16, 256, 0, 0, 0};
/* decode_mid: head dim 128, 4 waves x 16 tokens, one resident per SM (128 KiB of rings). */
static const ingot_ad_kernel_meta k_mid = {INGOT_DTYPE_BF16, 128, 4, 1, 4, 4, 16, 256, 0, 0, 0};

static int splits_with(const ingot_dispatch_entry *e, const ingot_ad_kernel_meta *m, int B, int Hq, int Hkv,
                       int64_t cap, const ingot_device_caps *caps) {
  ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, Hq, Hkv, m->head_dim, 1, B, cap, 0, 0, 0, 0);
  ingot_dispatch_plan p;
  char err[256] = "";
  const ingot_status s = e->plan(m, &g, caps, &p, err, sizeof err);
  if (s != INGOT_OK) {
    fprintf(stderr, "B %d %d/%d capacity %lld: %s\n", B, Hq, Hkv, (long long)cap, err);
    CHECK_STATUS(s, INGOT_OK);
    return -1;
  }
  CHECK(p.num_splits >= 1 && p.num_splits <= 256);
  CHECK(p.launches[0].grid[0] == (uint32_t)(p.num_splits * Hkv));
  return p.num_splits;
}

/* The round time of n workgroups of DRAM weight w each in the L2 check's model (264
 * resident, 132 CUs, DRAM saturated by 158, 105 CUs' worth of a round's streaming): the
 * DRAM's n x w / 158 rounds, at least one, or n / busy x 105 / 158 on the busy CUs,
 * whichever is more. */
static double l2_round(int64_t n, double w) {
  const double busy = n < 132 ? (double)n : 132.0;
  double t = (double)n * w / 158.0;
  if (t < 1.0) t = 1.0;
  if ((double)n / busy * 105.0 / 158.0 > t) t = (double)n / busy * 105.0 / 158.0;
  return t;
}

static int splits_for(const ingot_dispatch_entry *e, int B, int Hq, int Hkv, int64_t cap,
                      const ingot_device_caps *caps) {
  return splits_with(e, &k_seed, B, Hq, Hkv, cap, caps);
}

int main(void) {
  test_seed_rng();
  const ingot_dispatch_entry *e = ingot_dispatch_find("ingot_attention_decode_dispatch");
  CHECK(e != NULL);
  if (e == NULL) return test_finish("test_split_policy");
  const ingot_device_caps h200 = {32, 132, 232448, 2, 0}; /* uniform segments (balance 0) */

  /* The ring kernels past 48 KiB (the head-dim-256 rings, decode_mid) run one per SM, as
   * the runtime derives from their 192 or 128 KiB of dynamic shared memory (runtime/src/plan.c). */
  const ingot_device_caps h200_ring = {32, 132, 232448, 1, 0};
  /* The counts measured (docs/PERFORMANCE.md): bench/decode.py's points with the seed
   * kernel, then the ring kernels' ("Head dim 256", "Mid-size caches"). */
  static const struct {
    const ingot_ad_kernel_meta *m;
    int ring, B, Hq, Hkv, L, want;
  } measured[] = {
      {&k_seed, 0, 1, 8, 2, 1024, 16},          {&k_seed, 0, 1, 8, 2, 4096, 64},
      {&k_seed, 0, 1, 8, 2, 16384, 132},        {&k_seed, 0, 1, 8, 2, 65536, 132},
      {&k_seed, 0, 1, 8, 2, 262144, 132},       {&k_seed, 0, 1, 8, 2, 1048576, 256},
      {&k_seed, 0, 16, 32, 8, 8192, 2},         {&k_seed, 0, 64, 32, 8, 8192, 1},
      {&k_d256_ring, 1, 1, 8, 2, 1024, 16},     {&k_d256_ring, 1, 1, 8, 2, 2048, 32},
      {&k_d256_ring, 1, 1, 8, 2, 4096, 64},     {&k_d256_ring, 1, 1, 8, 2, 8192, 66},
      {&k_d256_ring, 1, 1, 8, 2, 65536, 66},    {&k_d256_ring, 1, 16, 32, 8, 8192, 2},
      {&k_d256_ring, 1, 64, 32, 8, 8192, 1},    {&k_g8_d256_ring, 1, 1, 64, 8, 1024, 16},
      {&k_g8_d256_ring, 1, 1, 64, 8, 2048, 16}, {&k_g8_d256_ring, 1, 1, 64, 8, 16384, 16},
      {&k_g8_d256_ring, 1, 1, 64, 8, 65536, 16}, {&k_mid, 1, 1, 8, 2, 4096, 64},
      {&k_mid, 1, 1, 8, 2, 8192, 66},           {&k_mid, 1, 1, 8, 2, 16384, 66},
      {&k_mid, 1, 2, 8, 2, 4096, 33},           {&k_mid, 1, 1, 32, 8, 4096, 16},
      {&k_mid, 1, 1, 32, 8, 16384, 16},         {&k_mid, 1, 4, 8, 2, 8192, 16},
      {&k_mid, 1, 4, 32, 8, 8192, 4},           {&k_mid, 1, 2, 32, 8, 16384, 8},
      {&k_mid, 1, 3, 8, 2, 16384, 22},
  };
  for (size_t i = 0; i < sizeof measured / sizeof measured[0]; ++i) {
    const int B = measured[i].B, Hq = measured[i].Hq, Hkv = measured[i].Hkv, L = measured[i].L;
    const int got = splits_with(e, measured[i].m, B, Hq, Hkv, L, measured[i].ring ? &h200_ring : &h200);
    if (got != measured[i].want)
      fprintf(stderr, "%sB %d %d/%d L %d: %d segments, expected %d\n", measured[i].ring ? "ring " : "", B, Hq,
              Hkv, L, got, measured[i].want);
    CHECK(got == measured[i].want);
  }

  /* Tails: 136 x 2 = 272 workgroups on 264 slots left 8 alone at the end; 272
   * single segments likewise. The model's counts (docs/INTERNALS.md 4). */
  CHECK(splits_for(e, 17, 32, 8, 8192, &h200) == 5);
  CHECK(splits_for(e, 34, 32, 8, 8192, &h200) == 8);
  /* B x Hkv an exact multiple of the 264 slots: nothing to fill */
  CHECK(splits_for(e, 33, 32, 8, 8192, &h200) == 1);
  CHECK(splits_for(e, 66, 32, 8, 8192, &h200) == 1);

  /* Random shapes whose sequences and heads fill the 264 slots: one segment
   * each, unless the last round would hold fewer workgroups than keep DRAM
   * busy (60% of 264: 158). */
  for (int i = 0; i < 2000; ++i) {
    const int hkv = (int)rnd_range(1, 8), B = (int)rnd_range((264 + hkv - 1) / hkv, 512 / hkv);
    const int64_t cap = rnd_range(64, 1 << 20);
    const int s = splits_for(e, B, 4 * hkv, hkv, cap, &h200);
    const int last = B * hkv % 264;
    if (s > 1 && (last == 0 || last >= 158)) {
      fprintf(stderr, "B %d Hkv %d L %lld: %d segments for a full last round\n", B, hkv, (long long)cap, s);
      CHECK(0);
    }
  }

  /* The policy is checked before use: a field out of range is refused by name. */
  {
    const ingot_ad_policy good = {2, 1, 64, 60, 80, 256};
    ingot_ad_policy bad[3] = {good, good, good};
    bad[0].max_tiles_per_split = 0;
    bad[1].saturating_cu_percent = 0;
    bad[2].saturating_percent = 101;
    const char *named[3] = {"max_tiles_per_split 0", "saturating_cu_percent 0", "saturating_percent 101"};
    ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 4096, 0, 0, 0, 0);
    ingot_dispatch_plan p;
    char err[512];
    for (int i = 0; i < 3; ++i) {
      err[0] = 0;
      CHECK_STATUS(ingot_ad_plan(&bad[i], &k_seed, &g, &h200, &p, err, sizeof err), INGOT_INVALID_ARGUMENT);
      CHECK_HAS(err, named[i]);
    }
    CHECK_STATUS(ingot_ad_plan(&good, &k_seed, &g, &h200, &p, err, sizeof err), INGOT_OK);
    CHECK(p.num_splits == 64 && p.cost > 0.0);
  }

  /* Paged: every power of two plans, below a wave's chunk too (the kernels read
   * those pages token by token); other sizes are refused by name. */
  {
    const ingot_ad_policy pol = {2, 1, 64, 60, 80, 256};
    ingot_ad_kernel_meta paged = k_seed;
    paged.paged = 1;
    ingot_dispatch_plan p;
    char err[512];
    for (int page = 1; page <= 1024; page *= 2) {
      const int64_t cap = rnd_range(64, 1 << 16);
      ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, cap, 1, page, 0, 0);
      err[0] = 0;
      const ingot_status s = ingot_ad_plan(&pol, &paged, &g, &h200, &p, err, sizeof err);
      if (s != INGOT_OK) fprintf(stderr, "page size %d, capacity %lld: %s\n", page, (long long)cap, err);
      CHECK_STATUS(s, INGOT_OK);
      CHECK(ingot_ad_params_in(&p)->page_size == page);
    }
    for (int i = 0; i < 50; ++i) {
      int page = (int)rnd_range(3, 1 << 12);
      if ((page & (page - 1)) == 0) ++page;
      ingot_attention_graph g = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 4096, 1, page, 0, 0);
      err[0] = 0;
      CHECK_STATUS(ingot_ad_plan(&pol, &paged, &g, &h200, &p, err, sizeof err), INGOT_INVALID_ARGUMENT);
      char want[128];
      snprintf(want, sizeof want, "page size %d is not a power of two in 1..2^20", page);
      CHECK_HAS(err, want);
    }
  }

  /* The round model (docs/INTERNALS.md 4). With the shipped shares (60% of the
   * resident workgroups, 80% of the CUs) and two or more workgroups per CU, DRAM
   * binds before the CUs: a round takes max(1, n / saturating) segment times. */
  for (int i = 0; i < 2000; ++i) {
    const int64_t cus = rnd_range(8, 400), bpc = rnd_range(2, 8), resident = cus * bpc;
    const int64_t sat = resident * 60 / 100, sat_cus = cus * 80 / 100, n = rnd_range(1, resident);
    const ingot_ad_model md = {resident, cus, sat, sat_cus, 64, 4, 64, 1};
    const double want = (double)n / (double)sat > 1.0 ? (double)n / (double)sat : 1.0;
    const double got = ingot_ad_round_time(&md, n, 0);
    if (got != want || ingot_ad_round_time(&md, n, 1) != want)
      fprintf(stderr, "%lld workgroups, %lld CUs x %lld: %g segment times, expected %g\n", (long long)n,
              (long long)cus, (long long)bpc, got, want);
    CHECK(got == want && ingot_ad_round_time(&md, n, 1) == want);
  }
  /* One workgroup per CU (8 waves on the H200): 96 of them leave 36 SMs idle and
   * stream at 96 / 105 of DRAM; 128 are DRAM-bound (n / 79). */
  {
    const ingot_ad_model md = {132, 132, 79, 105, 128, 4, 128, 1};
    CHECK(ingot_ad_round_time(&md, 96, 0) == 105.0 / 79.0);
    CHECK(ingot_ad_round_time(&md, 128, 0) == 128.0 / 79.0);
    CHECK(ingot_ad_round_time(&md, 0, 0) == 0.0);
  }
  /* Row blocks after a KV head's first read K and V from L2: against DRAM they
   * weigh INGOT_AD_L2_REREAD of a workgroup (3 blocks: (1 + 2 x 0.25) / 3), the
   * CUs count them whole; only in the kernel comparison's cost (traffic 1). */
  for (int i = 0; i < 200; ++i) {
    const int64_t blocks = rnd_range(1, 8), n = rnd_range(1, 2000);
    const ingot_ad_model md = {264, 132, 158, 105, 64, 16, 64, blocks};
    const double w = (1.0 + (double)(blocks - 1) * INGOT_AD_L2_REREAD) / (double)blocks;
    CHECK(ingot_ad_round_time(&md, n, 1) == l2_round(n, w));
    CHECK(ingot_ad_round_time(&md, n, 0) == l2_round(n, 1.0));
  }

  /* Multi-query: the row-wave kernels (decode_mq: 64 rows in 4 waves of 32 tokens;
   * decode_mq_d64: 80 rows in 5) against the group-16 rings in row blocks (decode_g16: 16
   * rows, 4 waves x 16 tokens), one rank. The modelled times order them as the H200
   * measured (decision 0032's crossover, ingot's us row waves -> row blocks), at every point
   * where one was 5% or more faster: StarCoder 48/1 head dim 128, Falcon 71/1 head dim 64.
   * Resident workgroups as the runtime derives them from the objects: two per SM at head dim
   * 128; at head dim 64 since decision 0040 three row-wave workgroups (occupancy 3) and four
   * ring ones (124 registers; it was three and two). The model orders the same points the same
   * way with either. */
  {
    const ingot_ad_kernel_meta rw128 = {INGOT_DTYPE_BF16, 128, 64, 1, 64, 4, 32, 256, 0, 1, 1};
    const ingot_ad_kernel_meta rw64 = {INGOT_DTYPE_BF16, 64, 80, 1, 80, 5, 32, 256, 0, 1, 1};
    const ingot_ad_kernel_meta g16_128 = {INGOT_DTYPE_BF16, 128, 16, 1, 16, 4, 16, 256, 0, 1, 0};
    const ingot_ad_kernel_meta g16_64 = {INGOT_DTYPE_BF16, 64, 16, 1, 16, 4, 16, 256, 0, 1, 0};
    const ingot_device_caps two = {32, 132, 232448, 2, 0}, three = {32, 132, 232448, 3, 0},
                            four = {32, 132, 232448, 4, 0};
    static const struct {
      int Hq, B, L, blocks_win; /* 1: row blocks measured 5% or more faster; 0: row waves */
    } points[] = {
        /* 48/1: 8K B=1 14.75 -> 10.12 us, B=2 15.85 -> 11.62, B=4 19.76 -> 15.58, B=8 26.43 -> 19.32;
         * 64K B=1 23.91 -> 19.71, B=2 32.84 -> 30.93; 8K B=32 50.87 -> 65.60; 64K B=8 90.25 -> 107.95,
         * B=32 353.71 -> 437.18; 32K B=16 88.21 -> 110.23 */
        {48, 1, 8192, 1},  {48, 2, 8192, 1},  {48, 4, 8192, 1},   {48, 8, 8192, 1},   {48, 1, 65536, 1},
        {48, 2, 65536, 1}, {48, 32, 8192, 0}, {48, 8, 65536, 0},  {48, 32, 65536, 0}, {48, 16, 32768, 0},
        /* 71/1: 8K B=1 13.69 -> 8.49, B=2 14.51 -> 10.00, B=4 17.76 -> 13.29, B=8 23.75 -> 17.77; 64K
         * B=1 22.02 -> 16.60, B=2 30.47 -> 27.22; 8K B=32 47.72 -> 54.53; 64K B=8 84.06 -> 97.10, B=32
         * 331.47 -> 361.61; 32K B=16 82.37 -> 88.86 */
        {71, 1, 8192, 1},  {71, 2, 8192, 1},  {71, 4, 8192, 1},   {71, 8, 8192, 1},   {71, 1, 65536, 1},
        {71, 2, 65536, 1}, {71, 32, 8192, 0}, {71, 8, 65536, 0},  {71, 32, 65536, 0}, {71, 16, 32768, 0},
    };
    for (size_t i = 0; i < sizeof points / sizeof points[0]; ++i) {
      const int d64 = points[i].Hq == 71;
      const ingot_ad_kernel_meta *rw = d64 ? &rw64 : &rw128, *blocks = d64 ? &g16_64 : &g16_128;
      ingot_attention_graph g =
          shaped_graph(INGOT_DTYPE_BF16, points[i].Hq, 1, rw->head_dim, 1, points[i].B, points[i].L, 0, 0, 0, 0);
      ingot_dispatch_plan p_rw, p_blocks;
      char err[256] = "";
      CHECK_STATUS(e->plan(rw, &g, d64 ? &three : &two, &p_rw, err, sizeof err), INGOT_OK);
      CHECK_STATUS(e->plan(blocks, &g, d64 ? &four : &two, &p_blocks, err, sizeof err), INGOT_OK);
      const int blocks_win = p_blocks.cost < p_rw.cost;
      if (blocks_win != points[i].blocks_win)
        fprintf(stderr, "%d/1 B %d L %d: row waves model %.2f, row blocks %.2f; measured the %s faster\n",
                points[i].Hq, points[i].B, points[i].L, p_rw.cost, p_blocks.cost,
                points[i].blocks_win ? "row blocks" : "row waves");
      CHECK(blocks_win == points[i].blocks_win);
    }
  }
  return test_finish("test_split_policy");
}
