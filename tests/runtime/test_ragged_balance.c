/* test_ragged_balance.c: the balanced split mode's arithmetic and planning
 * (templates/ingot_attention_decode_balance.h, ingot_attention_decode_plan.h;
 * docs/INTERNALS.md "Balanced split"), host only.
 *  - The plan: a batch of 2..INGOT_AD_BALANCED_MAX_BATCH (1024) sequences is
 *    balanced when the caps allow it (units = the uniform plan's segments x B
 *    x the rounds of caps.balance,
 *    capped at 511, or the kernel's max_splits below 256), with the uniform plan's
 *    modelled time; B = 1, B past the maximum and
 *    caps.balance = 0 give the uniform plan, unchanged; INGOT_BALANCE_AUTO (the
 *    default) gives the one-round balanced plan where the uniform plan has one
 *    segment per sequence, else the uniform plan. A balanced plan is even
 *    (INGOT_AD_FLAG_EVEN) where its units are a multiple of B. Grids (the merge's depth Z
 *    too), flags and the workspace bound follow the layout.
 *  - The schedule (test_ragged_schedule.h replays what the kernels compute) on
 *    fresh random length vectors: zeros, ones, odd lengths, the capacity and
 *    past it, negative ones, one huge among many tiny, log-uniform spreads,
 *    sums near 2^31 and far past it (capacity 2^31 - 1 - 1024), B = 4096.
 *  - Even batches (an even plan's segments, no scan): the rule and the
 *    segments' cover and bound (check_even).
 *  - Negative controls: a slot rule without the classes ahead collides; a
 *    workspace one word short fails the replay.
 * usage: test_ragged_balance */
#include "test_util.h"
/* after test_util.h, which sets the feature macros before any system header */
#include "dispatch.h"
#include "ingot_attention_decode_plan.h"
#include "test_ragged_schedule.h"

extern const ingot_dispatch_entry ingot_attention_decode_dispatch;

#define MAX_CAPACITY 2147482623 /* the pack's admitted maximum (configs/attention_decode.yaml) */
#define ARITH_BATCH 4096        /* the arithmetic is checked to this batch, past the plan's maximum */

static int32_t g_lens[ARITH_BATCH + 1];

/* A length vector of one of several shapes; some raw values lie outside [0, capacity]. */
static void fill_lengths(int32_t *lens, int B, int capacity, int kind) {
  const int huge = (int)rnd_range(0, B - 1);
  for (int b = 0; b < B; ++b) {
    int64_t v;
    switch (kind) {
      case 0: v = rnd_range(0, capacity); break;                                  /* uniform */
      case 1: v = (int64_t)1 << rnd_range(0, 30); v = v > capacity ? capacity : v; /* log-uniform */
              v += rnd_range(0, v / 2); break;
      case 2: v = b == huge ? capacity : rnd_range(0, 3); break;                  /* one huge, many tiny */
      case 3: {                                                                   /* the edge values */
        static const int64_t edge[] = {0, 1, 2, 3, 15, 17, 63, 65, -1, INT32_MIN};
        const int e = (int)rnd_range(0, 12);
        v = e < 10 ? edge[e] : e == 10 ? capacity : e == 11 ? (int64_t)capacity + rnd_range(1, 1000) : INT32_MAX;
        break;
      }
      case 4: v = rnd_range(0, 1) ? 0 : rnd_range(0, capacity); break;            /* half empty */
      default: v = capacity - rnd_range(0, 2); break;                             /* all full */
    }
    if (v > INT32_MAX) v = INT32_MAX;
    lens[b] = (int32_t)v;
  }
}

static int tile_of(const ingot_ad_kernel_meta *m) { return (int)ingot_ad_tile(m); }

/* The stub's plan of a (B, Hkv, capacity) graph with the kernel m, balanced or not, on cus CUs of
 * `blocks` resident split workgroups each (wave 32). */
static ingot_status plan_on(const ingot_ad_kernel_meta *m, int B, int Hkv, int64_t capacity, int paged, int balance,
                            int cus, int blocks, ingot_dispatch_plan *p, char *err, size_t n) {
  ingot_attention_graph g = shaped_graph(m->dtype, Hkv * m->group, Hkv, m->head_dim, m->max_sq, B, capacity, paged,
                                         64, 0, m->lse);
  const ingot_device_caps caps = {32, cus, 232448, blocks, balance};
  return ingot_attention_decode_dispatch.plan(m, &g, &caps, p, err, n);
}

/* The same on 132 CUs. */
static ingot_status plan_of(const ingot_ad_kernel_meta *m, int B, int Hkv, int64_t capacity, int paged, int balance,
                            int blocks, ingot_dispatch_plan *p, char *err, size_t n) {
  return plan_on(m, B, Hkv, capacity, paged, balance, 132, blocks, p, err, n);
}

/* Plans: balanced where it should be, the uniform plan elsewhere, and the balanced
 * plan's grids, flags and workspace; then its schedule on fresh lengths. */
static void check_plans(void) {
  static const ingot_ad_kernel_meta kernels[] = {
      {INGOT_DTYPE_BF16, 128, 4, 1, 4, 4, 16, 256, 0, 1, 0}, /* the seed tile: 64 tokens */
      {INGOT_DTYPE_BF16, 128, 4, 1, 4, 8, 16, 256, 1, 1, 0}, /* 8 waves, paged: 128 */
      {INGOT_DTYPE_FP16, 128, 8, 4, 8, 4, 16, 256, 0, 1, 0}, /* 32 rows: 4 row blocks */
      {INGOT_DTYPE_BF16, 256, 1, 1, 1, 4, 8, 256, 1, 0, 0},  /* head dim 256, 32 tokens */
      {INGOT_DTYPE_BF16, 128, 4, 1, 4, 2, 16, 7, 0, 0, 0},   /* max_splits 7 caps the units */
      {INGOT_DTYPE_BF16, 64, 64, 1, 64, 8, 32, 256, 1, 1, 1}, /* row_waves: 64 rows, a tile of 32 */
  };
  int balanced = 0, uniform = 0, capped = 0, merge_shallow = 0, auto_balanced = 0, auto_uniform = 0, auto_even = 0,
      auto_long = 0, auto_capped = 0;
  for (int it = 0; it < 300; ++it) {
    const ingot_ad_kernel_meta *m = &kernels[rnd_range(0, 5)];
    const int pick = (int)rnd_range(0, 9);
    const int B = pick == 0 ? 1 : pick == 1 ? INGOT_AD_BALANCED_MAX_BATCH + (int)rnd_range(1, 3000)
                : pick == 2 ? INGOT_AD_BALANCED_MAX_BATCH : (int)rnd_range(2, pick < 6 ? 64 : INGOT_AD_BALANCED_MAX_BATCH);
    const int Hkv = (int)rnd_range(1, 8), paged = m->paged, blocks = (int)rnd_range(1, 3);
    /* short capacities too, whose small batches the default keeps on their segments */
    const int cap_kind = (int)rnd_range(0, 3);
    const int64_t capacity = cap_kind == 0   ? rnd_range(1, 1 << 20) / 64 * 64 + 64
                             : cap_kind == 1 ? 64 * rnd_range(1, 128)
                                             : 64 * rnd_range(1, 4096);
    ingot_dispatch_plan u, p;
    char err[256] = "";
    CHECK_STATUS(plan_of(m, B, Hkv, capacity, paged, 0, blocks, &u, err, sizeof err), INGOT_OK);
    /* caps.balance = the rounds of resident workgroups (INGOT_BALANCE=N), past the maximum too */
    const int balance = (int)rnd_range(1, INGOT_BALANCE_MAX_ROUNDS + 2);
    const int64_t balance_rounds = balance < INGOT_BALANCE_MAX_ROUNDS ? balance : INGOT_BALANCE_MAX_ROUNDS;
    CHECK_STATUS(plan_of(m, B, Hkv, capacity, paged, balance, blocks, &p, err, sizeof err), INGOT_OK);
    if (err[0]) fprintf(stderr, "B %d Hkv %d capacity %lld: %s\n", B, Hkv, (long long)capacity, err);
    CHECK(!(ingot_ad_params_in(&u)->flags & INGOT_AD_FLAG_BALANCED));
    /* the units' cap: past the merge's 256 up to 511, unless the kernel's max_splits is lower */
    const int64_t most = m->max_splits < 256 ? m->max_splits : INGOT_AD_BALANCED_MAX_UNITS;
    /* INGOT_BALANCE_AUTO (the default): the one-round balanced plan (INGOT_BALANCE=1) where the
     * uniform plan has one segment per sequence, or is modelled at 100 steps or more and its units
     * (splits x B) need no cap, else the uniform plan, bit for bit; a balanced plan is even
     * (INGOT_AD_FLAG_EVEN) where its units are a multiple of B, as they are in one round (splits x B) */
    {
      ingot_dispatch_plan a, one;
      CHECK_STATUS(plan_of(m, B, Hkv, capacity, paged, INGOT_BALANCE_AUTO, blocks, &a, err, sizeof err), INGOT_OK);
      CHECK_STATUS(plan_of(m, B, Hkv, capacity, paged, 1, blocks, &one, err, sizeof err), INGOT_OK);
      /* a long call only where its units, segments x B, need no cap (an even plan of the uniform segments) */
      const int long_call = u.cost >= 100.0 && (int64_t)u.num_splits * B <= most;
      CHECK(memcmp(&a, u.num_splits == 1 || long_call ? &one : &u, sizeof a) == 0);
      CHECK(a.cost == u.cost); /* the modelled time is the uniform plan's either way */
      const int aflags = ingot_ad_params_in(&a)->flags;
      auto_balanced += (aflags & INGOT_AD_FLAG_BALANCED) != 0;
      auto_long += u.num_splits > 1 && long_call && B > 1 && (aflags & INGOT_AD_FLAG_BALANCED) != 0;
      if (u.num_splits > 1 && long_call && B > 1 && B <= INGOT_AD_BALANCED_MAX_BATCH)
        CHECK((aflags & INGOT_AD_FLAG_EVEN) && a.num_splits == u.num_splits * B);
      auto_capped += u.num_splits > 1 && u.cost >= 100.0 && !long_call && B > 1 && B <= INGOT_AD_BALANCED_MAX_BATCH;
      auto_uniform += u.num_splits > 1 && !long_call && B > 1;
      if (aflags & INGOT_AD_FLAG_BALANCED) CHECK(((aflags & INGOT_AD_FLAG_EVEN) != 0) == (a.num_splits % B == 0));
      auto_even += (aflags & INGOT_AD_FLAG_EVEN) != 0;
    }
    const int64_t rows_total = (int64_t)m->group * m->max_sq, row_blocks = (rows_total + m->rows - 1) / m->rows;
    const int64_t want = (int64_t)u.num_splits * B * balance_rounds;
    int64_t units = want < most ? want : most;
    const int64_t resident = 132 * blocks;
    const int expect = B > 1 && B <= INGOT_AD_BALANCED_MAX_BATCH && (units == want || units * Hkv * row_blocks >= resident);
    if (!expect) {
      /* the uniform plan, bit for bit */
      CHECK(!(ingot_ad_params_in(&p)->flags & INGOT_AD_FLAG_BALANCED));
      CHECK(memcmp(&u, &p, sizeof u) == 0);
      ++uniform;
      continue;
    }
    ++balanced;
    capped += units < want;
    int64_t fill = (resident + Hkv * row_blocks - 1) / (Hkv * row_blocks); /* one round's, times the rounds */
    if (fill > units) fill = units;
    fill *= balance_rounds;
    if (fill > units) fill = units;
    CHECK(ingot_ad_params_in(&p)->flags == (ingot_ad_params_in(&u)->flags | INGOT_AD_FLAG_BALANCED | (B << INGOT_AD_FLAG_BATCH_SHIFT) |
                      (int)(fill << INGOT_AD_FLAG_FILL_SHIFT) | (units % B == 0 ? INGOT_AD_FLAG_EVEN : 0)));
    CHECK(ingot_ad_bal_fill(ingot_ad_params_in(&p)->flags) == fill && fill >= 1);
    CHECK(p.num_splits == units && p.cost == u.cost && p.num_launches == 2);
    CHECK(p.launches[0].entry == INGOT_AD_ENTRY_BALANCED_SPLIT && p.launches[0].grid[0] == (uint32_t)((units + B - 1) * Hkv * row_blocks) &&
          p.launches[0].grid[1] == 1 && p.launches[0].grid[2] == 1 && p.launches[0].block[0] == u.launches[0].block[0]);
    const uint32_t merge_threads = INGOT_AD_MERGE_WAVES * 32;
    const uint32_t merge_x = units <= INGOT_AD_COMPACT_MERGE_SPLITS
                                 ? (uint32_t)((rows_total * (m->head_dim / 4) + merge_threads - 1) / merge_threads)
                                 : (uint32_t)(rows_total * (m->head_dim / 32));
    CHECK(p.launches[1].entry == INGOT_AD_ENTRY_BALANCED_MERGE && p.launches[1].grid[0] == merge_x && p.launches[1].grid[1] == (uint32_t)Hkv &&
          p.launches[1].block[0] == merge_threads);
    /* the merge grid's depth Z: in 1..B, at most INGOT_AD_BALANCED_MERGE_ENTRIES sequences per
     * workgroup, and the least such count that makes a round of merge workgroups on the 132 CUs
     * (a workgroup less would leave one short) */
    {
      const int64_t Z = p.launches[1].grid[2], per = (int64_t)merge_x * Hkv;
      const int64_t round = (int64_t)INGOT_AD_BALANCED_MERGE_CU_BLOCKS * 132;
      CHECK(Z >= 1 && Z <= B && Z * INGOT_AD_BALANCED_MERGE_ENTRIES >= B);
      CHECK(Z == B || Z == 1 || (Z - 1) * per < round || (Z - 1) * INGOT_AD_BALANCED_MERGE_ENTRIES < B);
      merge_shallow += Z < B;
    }
    CHECK(ingot_ad_params_in(&p)->capacity == ingot_ad_params_in(&u)->capacity && ingot_ad_params_in(&p)->sq == ingot_ad_params_in(&u)->sq && ingot_ad_params_in(&p)->num_kv_heads == ingot_ad_params_in(&u)->num_kv_heads && ingot_ad_params_in(&p)->page_size == ingot_ad_params_in(&u)->page_size);
    /* the schedule on this plan, with fresh lengths */
    fill_lengths(g_lens, B, (int)capacity, (int)rnd_range(0, 5));
    char msg[512];
    const char *why = rs_check(g_lens, B, (int)capacity, tile_of(m), p.num_splits, ingot_ad_bal_fill(ingot_ad_params_in(&p)->flags), Hkv,
                               rows_total, m->head_dim,
                               p.workspace_bytes, NULL, msg, sizeof msg);
    if (why) fprintf(stderr, "plan B %d Hkv %d capacity %lld units %d: %s\n", B, Hkv, (long long)capacity,
                     p.num_splits, why);
    CHECK(why == NULL);
  }
  printf("  plans: %d balanced (%d with the unit cap, %d with a merge grid shallower than the batch), %d uniform; "
         "by default %d balanced (%d even; %d of several segments, modelled at 100 steps or more), %d batches kept "
         "on several segments each (%d of them long, whose units would need the cap)\n",
         balanced, capped, merge_shallow, uniform, auto_balanced, auto_even, auto_long, auto_uniform, auto_capped);
  CHECK(balanced > 50 && uniform > 20 && capped > 0 && merge_shallow > 20 && auto_balanced > 20 && auto_uniform > 5 &&
        auto_even > 20 && auto_long > 5 && auto_capped > 5);
  /* Fixed plans of the seed tile, balanced in one round: units = segments x B (capped at 511), and
   * units + B - 1 slots per KV head in the split grid. On 132 CUs of one workgroup each (the
   * 4-stage ring's 128 KiB) B = 4, Hkv 2 has 16 segments per sequence: 64 units, 67 x 2 slots.
   * (Decision 0038: cutting these units to fit the spare slots within a round, 64 -> 63, was
   * measured and dropped.) */
  {
    static const struct { int B, Hkv, cus, blocks, units, grid; } cases[] = {
        {4, 2, 132, 1, 64, 134}, {2, 8, 132, 1, 16, 136}, {3, 2, 132, 1, 66, 136}, {8, 8, 132, 2, 32, 312},
        {4, 2, 304, 3, 456, 918}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      ingot_dispatch_plan p;
      char err[256] = "";
      CHECK_STATUS(plan_on(&kernels[0], cases[i].B, cases[i].Hkv, 8192, 0, 1, cases[i].cus, cases[i].blocks, &p, err,
                           sizeof err),
                   INGOT_OK);
      CHECK(p.num_splits == cases[i].units && p.launches[0].grid[0] == (uint32_t)cases[i].grid);
      if (p.num_splits != cases[i].units || p.launches[0].grid[0] != (uint32_t)cases[i].grid)
        fprintf(stderr, "B %d Hkv %d: units %d grid %u (want %d, %d)\n", cases[i].B, cases[i].Hkv, p.num_splits,
                p.launches[0].grid[0], cases[i].units, cases[i].grid);
    }
  }
  /* The default on bench/decode.py's ragged shapes (seed tile, 132 CUs): B = 4, Hkv 2 at 8K and 32K and B =
   * 8, Hkv 8 at 8K keep their 16, 16 and 4 segments (modelled under 100 steps); B = 8, Hkv 8 at 64K (16
   * segments) and B = 16 at 16K (4) are balanced; B = 32, Hkv 8 has one segment a sequence; B = 8 at 1M
   * keeps its 256 segments (long, but 256 x 8 units would need the cap of 511). */
  {
    static const struct { int B, Hkv, blocks, capacity, segments, balanced; } cases[] = {
        {4, 2, 1, 8192, 16, 0}, {4, 2, 1, 32768, 16, 0}, {8, 8, 2, 8192, 4, 0},
        {8, 8, 2, 65536, 16, 1}, {16, 8, 2, 16384, 4, 1}, {32, 8, 2, 4096, 1, 1}, {8, 8, 2, 1048576, 256, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      ingot_dispatch_plan u, a;
      char err[256] = "";
      CHECK_STATUS(plan_of(&kernels[0], cases[i].B, cases[i].Hkv, cases[i].capacity, 0, 0, cases[i].blocks, &u, err,
                           sizeof err),
                   INGOT_OK);
      CHECK_STATUS(plan_of(&kernels[0], cases[i].B, cases[i].Hkv, cases[i].capacity, 0, INGOT_BALANCE_AUTO,
                           cases[i].blocks, &a, err, sizeof err),
                   INGOT_OK);
      const int got = (ingot_ad_params_in(&a)->flags & INGOT_AD_FLAG_BALANCED) != 0;
      const int rule = u.num_splits == 1 ||
                       (u.cost >= 100.0 && (int64_t)u.num_splits * cases[i].B <= INGOT_AD_BALANCED_MAX_UNITS);
      CHECK(u.num_splits == cases[i].segments && got == cases[i].balanced && rule == got);
      if (u.num_splits != cases[i].segments || got != cases[i].balanced)
        fprintf(stderr, "default: B %d Hkv %d capacity %d: %d segments, modelled %.1f, balanced %d (want %d, %d)\n",
                cases[i].B, cases[i].Hkv, cases[i].capacity, u.num_splits, u.cost, got, cases[i].segments,
                cases[i].balanced);
    }
  }
}

/* The schedule alone, over random vectors and the extreme ones. */
static void check_schedules(void) {
  static const int tiles[] = {32, 64, 128, 16};
  long long pieces = 0;
  int vectors = 0;
  for (int it = 0; it < 400; ++it) {
    const int B = it % 10 == 0 ? ARITH_BATCH : (int)rnd_range(2, it % 3 ? 64 : ARITH_BATCH);
    const int capacity = it % 4 == 0 ? MAX_CAPACITY : (int)rnd_range(1, 1 << 22);
    const int tile = tiles[rnd_range(0, 3)], units = (int)rnd_range(1, INGOT_AD_BALANCED_MAX_UNITS), fill = (int)rnd_range(1, units);
    fill_lengths(g_lens, B, capacity, (int)rnd_range(0, 5));
    char msg[512];
    long long np = 0;
    const char *why = rs_check(g_lens, B, capacity, tile, units, fill, 0, 0, 0, 0, &np, msg, sizeof msg);
    if (why) fprintf(stderr, "B %d capacity %d tile %d units %d: %s\n", B, capacity, tile, units, why);
    CHECK(why == NULL);
    pieces += np;
    ++vectors;
  }
  /* sums near 2^31 tokens: B = 4096 lengths around 2^31 / 4096, the sum just below,
   * at and just past 2^31; and the largest batch, every sequence at the largest capacity */
  static const int64_t targets[] = {((int64_t)1 << 31) - 1, (int64_t)1 << 31, ((int64_t)1 << 31) + 4097};
  for (int t = 0; t < 3; ++t) {
    const int B = ARITH_BATCH;
    int64_t sum = 0;
    for (int b = 0; b < B; ++b) {
      g_lens[b] = (int32_t)(targets[t] / B + rnd_range(-1000, 1000));
      sum += g_lens[b];
    }
    g_lens[B - 1] += (int32_t)(targets[t] - sum); /* exactly the target */
    for (int tile = 16; tile <= 128; tile *= 2) {
      char msg[512];
      const char *why = rs_check(g_lens, B, MAX_CAPACITY, tile, 511, (int)rnd_range(1, 511), 8, 4, 128,
                                 ingot_ad_balanced_workspace(B, 8, 4, 128, 511), NULL, msg, sizeof msg);
      if (why) fprintf(stderr, "sum %lld, tile %d: %s\n", (long long)targets[t], tile, why);
      CHECK(why == NULL);
    }
  }
  for (int b = 0; b < ARITH_BATCH; ++b) g_lens[b] = rnd_range(0, 1) ? MAX_CAPACITY : INT32_MAX;
  char msg[512];
  long long np = 0;
  const char *why = rs_check(g_lens, ARITH_BATCH, MAX_CAPACITY, 16, 256, 33, 1, 1, 32,
                             ingot_ad_balanced_workspace(ARITH_BATCH, 1, 1, 32, 256), &np, msg,
                             sizeof msg);
  if (why) fprintf(stderr, "B 4096 all at capacity 2^31 - 1025: %s\n", why);
  /* 256 shares of 16 equal sequences each: one piece per sequence, none cut */
  CHECK(why == NULL && np == ARITH_BATCH);
  /* tiles 3, 2, 2, 2 over 3 shares of 3: each sequence is at most a share, none is cut
   * (a share's edge falls inside sequences 1 and 2, which stay whole) */
  g_lens[0] = 16 * 3;
  for (int b = 1; b < 4; ++b) g_lens[b] = 16 * 2;
  why = rs_check(g_lens, 4, 1000, 16, 3, 3, 0, 0, 0, 0, &np, msg, sizeof msg);
  CHECK(why == NULL && np == 4);
  /* one long among short ones: 40 tiles and 8 x 1 over 6 shares of 8: the long one
   * in round(40 x 6 / 48) = 5 pieces of 8, each short one whole; the long one's
   * pieces (class 0) take slots 0..4 although it is last in the batch */
  for (int b = 0; b < 8; ++b) g_lens[b] = 16;
  g_lens[8] = 16 * 40;
  why = rs_check(g_lens, 9, 1000, 16, 6, 6, 0, 0, 0, 0, &np, msg, sizeof msg);
  CHECK(why == NULL && np == 13 && ingot_ad_bal_pieces(40, 48, 6) == 5 && ingot_ad_bal_pieces(1, 48, 6) == 1);
  CHECK(ingot_ad_bal_class(40, 5, 48, 6) == 0 && ingot_ad_bal_class(1, 1, 48, 6) == 2);
  /* an empty batch: no unit has a share, every sequence no piece */
  memset(g_lens, 0, sizeof g_lens);
  why = rs_check(g_lens, 17, 1000, 64, 40, 20, 0, 0, 0, 0, &np, msg, sizeof msg);
  CHECK(why == NULL && np == 0);
  /* more units than tiles, all of them filling: each tile its own unit */
  for (int b = 0; b < 5; ++b) g_lens[b] = 64 * (b + 1);
  why = rs_check(g_lens, 5, 1000, 64, 200, 200, 0, 0, 0, 0, &np, msg, sizeof msg);
  CHECK(why == NULL && np == 15);
  /* a short batch takes `fill` units, not all: 15 tiles over 3 of 200, shares of 5 */
  CHECK(ingot_ad_bal_active(15, 200, 3) == 3);
  why = rs_check(g_lens, 5, 1000, 64, 200, 3, 0, 0, 0, 0, &np, msg, sizeof msg);
  CHECK(why == NULL && np == 5); /* tiles 1, 2, 3, 4, 5: each at most a share, none cut */
  /* rounding: 3 shares of 10 tiles; 14 tiles (1.4 shares) stay whole, 15 (1.5) are cut in 2 */
  CHECK(ingot_ad_bal_pieces(14, 30, 3) == 1 && ingot_ad_bal_pieces(15, 30, 3) == 2 &&
        ingot_ad_bal_pieces(16, 30, 3) == 2 && ingot_ad_bal_pieces(0, 30, 3) == 0);
  /* a long batch takes shares of at most INGOT_AD_BALANCED_SHARE_TILES tiles, up to the units */
  CHECK(ingot_ad_bal_active(64 * 100, 256, 33) == 100 && ingot_ad_bal_active(64 * 100 + 1, 256, 33) == 101);
  CHECK(ingot_ad_bal_active(64 * 1000, 256, 33) == 256 && ingot_ad_bal_active(0, 256, 33) == 0);
  printf("  schedules: %d random vectors, %lld pieces; sums near 2^31 and B = 4096 at capacity\n", vectors, pieces);
}

/* The workspace bound: exact, and 0 (the plan's refusal) when a product overflows. */
static void check_workspace(void) {
  CHECK(ingot_ad_balanced_workspace(2, 1, 4, 128, 2) == (uint64_t)((16 + 16 * 128) * 4 + (2 + 1) * 8)); /* the list: its count and 2 entries */
  CHECK(ingot_ad_balanced_workspace(32, 8, 4, 128, 32) == (uint64_t)((256 + 256 * 128) * 8 * 4 + (32 + 1) * 8));
  CHECK(ingot_ad_balanced_workspace(4096, 65535, 1 << 20, 1 << 20, 256) == 0);
  CHECK(ingot_ad_balanced_workspace(4096, 65535, (int64_t)1 << 40, 128, 256) == 0);
}

/* Negative controls: a sequence's first slot from its class's own prefix alone
 * (without the pieces of the classes ahead) collides where the batch has two
 * classes, and rs_check catches a workspace one word short. */
static void check_negative_control(void) {
  for (int b = 0; b < 8; ++b) g_lens[b] = b % 2 ? 64 : 1000; /* tiles 16 and 1 (tile 64) */
  const long long total = 4 * 16 + 4, active = 12;
  unsigned long long before = 0;
  unsigned char used[64] = {0};
  int collisions = 0;
  for (int b = 0; b < 8; ++b) {
    const long long nb = b % 2 ? 1 : 16, kb = ingot_ad_bal_pieces(nb, total, active);
    const int c = ingot_ad_bal_class(nb, kb, total, active);
    for (long long s = ingot_ad_bal_field(before, c); s < ingot_ad_bal_field(before, c) + kb; ++s)
      collisions += used[s]++ > 0;
    before += ingot_ad_bal_pack(kb, c);
  }
  CHECK(collisions > 0); /* the header's ingot_ad_bal_first adds the classes ahead (check_schedules) */
  char msg[256];
  CHECK(rs_check(g_lens, 8, 1000, 64, 12, 12, 0, 0, 0, 0, NULL, msg, sizeof msg) == NULL);
  /* a wrong workspace size is caught */
  CHECK(rs_check(g_lens, 8, 1000, 64, 12, 12, 2, 4, 128, ingot_ad_balanced_workspace(8, 2, 4, 128, 12) - 8, NULL, msg,
                 sizeof msg) != NULL);
}

/* Even batches (an even plan: units = K x B; ingot_ad_bal_even): the rule against
 * its plain statement (no sequence past 17/16 of the mean, in tiles), and the
 * segments the split then runs (segment s % K of sequence s / K, cut as the
 * uniform plan's: ceil(n / K) tiles each) restated: they cover every sequence
 * once, in order, whole tiles from its start, and the longest is
 * within 1/16 of a balanced share (total / (K x B)) and a tile. Random vectors
 * near even, far from it, and at the extremes (B = 4096 at capacity 2^31 - 1025). */
static void check_even(void) {
  int even = 0, not_even = 0;
  for (int it = 0; it < 2000; ++it) {
    const int B = it % 50 == 0 ? ARITH_BATCH : (int)rnd_range(1, it % 3 ? 64 : INGOT_AD_BALANCED_MAX_BATCH);
    const int capacity = it % 7 == 0 ? MAX_CAPACITY : (int)rnd_range(1, 1 << 22);
    const int tile = 16 << rnd_range(0, 3), K = (int)rnd_range(1, INGOT_AD_MAX_SPLITS);
    const int spread = (int)rnd_range(0, 3); /* 0: equal; 1: within ~3%; 2: within ~12%; 3: any */
    const int64_t base = rnd_range(0, capacity);
    long long total = 0, most = 0;
    for (int b = 0; b < B; ++b) {
      int64_t v = spread == 0 ? base : spread == 3 ? rnd_range(-2, (int64_t)capacity + 2)
                                     : base - rnd_range(0, base / (spread == 1 ? 32 : 8));
      g_lens[b] = (int32_t)(v > INT32_MAX ? INT32_MAX : v);
      const long long n = ingot_ad_bal_tiles(g_lens[b], capacity, tile);
      total += n;
      most = n > most ? n : most;
    }
    const int rule = ingot_ad_bal_even(most, total, B);
    /* the plain statement: max <= 17/16 of the mean, exact in rationals */
    CHECK(rule == ((double)most * B * 16.0 <= (double)total * 17.0));
    if (spread == 0) CHECK(rule);
    if (!rule) {
      ++not_even;
      continue;
    }
    ++even;
    /* sequence b's segment j is slot b x K + j, within the first K x B of the grid's slots */
    for (int b = 0; b < B; ++b) {
      const int len = ingot_ad_bal_clamp(g_lens[b], capacity);
      const long long n = ingot_ad_bal_tiles(g_lens[b], capacity, tile), per = (n + K - 1) / K;
      long long next = 0;
      for (int j = 0; j < K; ++j) {
        const long long b0 = j * per * tile, e0 = b0 + per * tile;
        const long long begin = b0 < len ? b0 : len, end = e0 < len ? e0 : len;
        /* whole tiles from the start; the segments past the length empty, at it */
        CHECK(begin == next && end >= begin && (begin % tile == 0 || begin == len));
        /* the longest segment: within 1/16 of a share and a tile */
        CHECK(16 * (end - begin) * (long long)K * B <= 17 * total * tile + 16LL * tile * K * B);
        next = end;
      }
      CHECK(next == len);
    }
  }
  printf("  even batches: %d even (segments checked), %d not even\n", even, not_even);
  CHECK(even > 200 && not_even > 200);
  /* the edges: equal lengths and an empty batch are even; one tile past 17/16 is not */
  CHECK(ingot_ad_bal_even(0, 0, 7) && ingot_ad_bal_even(5, 5 * 1024, 1024));
  CHECK(ingot_ad_bal_even(17, 16 * 4, 4) && !ingot_ad_bal_even(18, 16 * 4, 4));
  CHECK(ingot_ad_bal_even((1LL << 27), (1LL << 27) * ARITH_BATCH, ARITH_BATCH));
}

int main(void) {
  test_seed_rng();
  check_plans();
  check_schedules();
  check_even();
  check_workspace();
  check_negative_control();
  return test_finish("test_ragged_balance");
}
