/* test_gpu_ragged.c: ragged batches through the balanced split (issue 23;
 * docs/INTERNALS.md "Balanced split"). Every plan here must be balanced (its
 * workspace has the balanced layout's size); each batch is checked against
 * the CPU reference with poisoned K/V tails and page-table entries:
 *  - lengths 0, 1, odd, the capacity, past it (clamped), negative; one huge
 *    sequence among many tiny ones; a log-uniform spread; an empty batch; an
 *    even batch (within 1/16 of its mean: the even plan's segments, no scan);
 *  - contiguous and paged (and paged equal to contiguous bit for bit when the
 *    kernels tile alike), masks none and causal, Sq 1 and > 1, LSE;
 *  - the compact merge (few units) and the wide one (many); units past the
 *    merge's 256 (INGOT_BALANCE=4, B 3 at 32K);
 *  - two executes of one plan give the same bits;
 *  - one execute captured in a CUDA graph and replayed with new lengths (the
 *    huge sequence moving), every replay against the reference, the last
 *    against a direct execute bit for bit;
 *  - the same batch planned uniform (INGOT_BALANCE=0) matches the reference too;
 *  - every kernel of the pack, on a graph that chooses it, through its balanced plan
 *    (lengths of every kind, twice each).
 * INGOT_RAGGED_QUICK=1 (for compute-sanitizer runs): one contiguous and one
 * paged case, 4 graph replays. Usage: <binary> [pack_dir] */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_ragged"

static int g_balanced_plans = 0;
static int g_max_units = 0; /* the most units of any balanced plan run */
static int g_quick = 0; /* INGOT_RAGGED_QUICK */

/* The balanced workspace (runtime/src/families/attention_decode/ingot_attention_decode_plan.h,
 * ingot_ad_balanced_workspace): per KV head (units + B) slots of rows_total
 * rows, lse padded to 4 floats then D floats each, then the merge's list (B + 1 int64). */
static size_t balanced_ws(const dh_case *c, const dh_kernel *k, int units) {
  const size_t rows = (size_t)k->group * (size_t)k->max_sq, slots = (size_t)units + (size_t)c->s.batch;
  const size_t per = (rows * slots + 3) / 4 * 4 + rows * slots * (size_t)c->s.head_dim;
  return per * (size_t)c->s.num_kv_heads * 4 + ((size_t)c->s.batch + 1) * 8;
}

/* Is the case's plan balanced? (a failure is counted by the caller) */
static int is_balanced(const dh_session *s, const dh_case *c) {
  const dh_kernel *k = dh_kernel_named(s->kernels, s->num_kernels, ingot_plan_kernel_name(c->plan));
  return k != NULL && c->ws_size == balanced_ws(c, k, ingot_plan_num_splits(c->plan));
}

enum { kMixed, kOneHuge, kLogSpread, kEmpty, kEven, kKinds };
static const char *const kKindName[kKinds] = {"mixed edge lengths", "one huge among tiny", "log-uniform", "empty",
                                              "even (within 5% of each other, near 2048 or the capacity, one past it)"};

static void fill(int32_t *lens, int B, int cap, int kind) {
  const int huge = dh_rand_range(0, B - 1);
  for (int b = 0; b < B; ++b) {
    switch (kind) {
      case kMixed: {
        static const int fixed[] = {0, 1, 17, 63, 101, -3};
        const int e = dh_rand_range(0, 9);
        lens[b] = e < 6 ? fixed[e] : e == 6 ? cap : e == 7 ? cap + dh_rand_range(1, 9) : e == 8 ? 2147483647
                                              : dh_rand_range(1, cap) | 1;
        break;
      }
      case kOneHuge: lens[b] = b == huge ? cap : dh_rand_range(0, 3); break;
      case kLogSpread: {
        int v = 1 << dh_rand_range(0, 12);
        v += dh_rand_range(0, v);
        lens[b] = v > cap ? cap : v;
        break;
      }
      case kEven: { /* near 2048 at most: every sequence is long, so the CPU reference's cost is B x this */
        const int base = cap < 2048 ? cap : 2048;
        lens[b] = b == huge && base == cap ? cap + dh_rand_range(1, 9) : base - dh_rand_range(0, base / 20);
        break;
      }
      default: lens[b] = 0; break;
    }
  }
  if (kind == kMixed) lens[0] = 0, lens[B - 1] = cap; /* both ends always */
}

/* Runs one case twice with these lengths: both against the reference, and the same bits. */
static int run_twice(dh_session *s, dh_case *c, const int32_t *lens, const char *what) {
  char label[256], d[160];
  snprintf(label, sizeof label, "%s, %s (kernel %s, %d units)", dh_describe(c, d, sizeof d), what,
           ingot_plan_kernel_name(c->plan), ingot_plan_num_splits(c->plan));
  if (dh_set_lengths(c, lens) != 0 || dh_execute(c, s->stream) != 0) return 1;
  s->stats.executes++;
  int failures = dh_check(c, label, &s->stats) != 0;
  uint16_t *o = malloc(c->n_q * 2);
  float *lse = malloc(c->n_lse * 4);
  if (o == NULL || lse == NULL) {
    free(o), free(lse);
    return failures + 1;
  }
  memcpy(o, c->o, c->n_q * 2);
  memcpy(lse, c->lse, c->n_lse * 4);
  if (dh_execute(c, s->stream) != 0) {
    failures++;
  } else {
    s->stats.executes++;
    failures += dh_check(c, label, &s->stats) != 0;
    if (memcmp(o, c->o, c->n_q * 2) != 0 || (c->s.lse && memcmp(lse, c->lse, c->n_lse * 4) != 0)) {
      fprintf(stderr, "FAIL [%s]: two executes of one plan differ\n", label);
      failures++;
    }
  }
  free(o), free(lse);
  return failures;
}

/* A ragged case of kernel k: B sequences of capacity cap. Every length kind,
 * twice each; paged cases are also compared bit for bit with contiguous ones
 * (kc) on the same data. Returns the failures. */
static int ragged_case(dh_session *s, const dh_kernel *k, const dh_kernel *kc, int B, int cap, ingot_mask mask,
                       int sq, uint64_t seed, int *bitwise) {
  dh_shape sh = dh_shape_for_kernel(k, cap, mask);
  sh.batch = B;
  sh.seq_q = sq;
  char why[4096], d[160];
  dh_case c, cc;
  if (dh_case_create(&c, s->ctx, &sh, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: ragged case B %d capacity %d: %s\n", B, cap, why);
    return 1;
  }
  int failures = 0, have_cc = 0;
  if (!is_balanced(s, &c)) {
    fprintf(stderr, "FAIL: %s: the plan (kernel %s, %d splits, %zu workspace bytes) is not balanced\n",
            dh_describe(&c, d, sizeof d), ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan), c.ws_size);
    dh_case_destroy(&c);
    return 1;
  }
  g_balanced_plans++;
  if (ingot_plan_num_splits(c.plan) > g_max_units) g_max_units = ingot_plan_num_splits(c.plan);
  if (sh.page_size > 0 && kc != NULL) { /* the same data, contiguous */
    dh_shape shc = sh;
    shc.page_size = 0;
    have_cc = dh_case_create(&cc, s->ctx, &shc, seed, DH_TAIL_POISON, why, sizeof why) == 0;
    if (!have_cc) fprintf(stderr, "  (no contiguous twin: %s)\n", why);
  }
  printf("  %s: kernel %s, %d units, %zu workspace bytes\n", dh_describe(&c, d, sizeof d),
         ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan), c.ws_size);
  int32_t *lens = malloc((size_t)B * 4);
  for (int kind = 0; kind < kKinds && lens != NULL; ++kind) {
    fill(lens, B, cap, kind);
    failures += run_twice(s, &c, lens, kKindName[kind]);
    if (have_cc) {
      const dh_kernel *a = dh_kernel_named(s->kernels, s->num_kernels, ingot_plan_kernel_name(c.plan));
      const dh_kernel *b = dh_kernel_named(s->kernels, s->num_kernels, ingot_plan_kernel_name(cc.plan));
      failures += run_twice(s, &cc, lens, kKindName[kind]);
      if (a && b && a->waves == b->waves && a->tokens_per_wave == b->tokens_per_wave && a->rows == b->rows &&
          a->row_waves == b->row_waves &&
          ingot_plan_num_splits(c.plan) == ingot_plan_num_splits(cc.plan)) {
        ++*bitwise;
        if (memcmp(c.o, cc.o, c.n_q * 2) != 0 || (c.s.lse && memcmp(c.lse, cc.lse, c.n_lse * 4) != 0)) {
          fprintf(stderr, "FAIL: %s, %s: paged (%s) and contiguous (%s) differ\n", dh_describe(&c, d, sizeof d),
                  kKindName[kind], a->name, b->name);
          failures++;
        }
      }
    }
  }
  free(lens);
  if (have_cc) dh_case_destroy(&cc);
  dh_case_destroy(&c);
  return failures;
}

/* Every kernel of the pack for this arch through its balanced plan once (the default balances
 * the batches whose uniform plan has one segment per sequence, with whatever kernel the match
 * picks): a graph on which the kernel is chosen (the first of test_gpu_variants' batches and
 * capacities), lengths of every kind, each against the reference and bitwise twice. A kernel no
 * graph chooses (test_gpu_variants reports those) or whose plan is not balanced is counted, not
 * failed; none run fails. */
static int every_kernel(dh_session *s, uint64_t seed) {
  int failures = 0, ran = 0, unchosen = 0, uniform = 0;
  for (int i = 0; i < s->num_kernels; ++i) {
    const dh_kernel *k = &s->kernels[i];
    if (!k->has_arch) continue;
    dh_case c;
    char why[4096], d[160];
    if (dh_case_for_kernel(&c, s->ctx, k, INGOT_MASK_CAUSAL, 0, k->max_sq, seed + (uint64_t)i, DH_TAIL_POISON, why,
                           sizeof why) != 0) {
      fprintf(stderr, "FAIL: kernel %s: %s\n", k->name, why);
      failures++;
      continue;
    }
    if (strcmp(ingot_plan_kernel_name(c.plan), k->name) != 0) {
      unchosen++;
    } else if (!is_balanced(s, &c)) {
      uniform++;
    } else {
      g_balanced_plans++;
      ran++;
      printf("  every kernel: %s ...\n", k->name);
      fflush(stdout); /* a kernel that never returns is named in the log */
      int32_t *lens = malloc((size_t)c.s.batch * 4);
      for (int kind = 0; kind < kKinds && lens != NULL; ++kind) {
        fill(lens, c.s.batch, c.s.capacity, kind);
        failures += run_twice(s, &c, lens, kKindName[kind]);
      }
      if (lens == NULL) failures++;
      free(lens);
      if (ran <= 3)
        printf("  every kernel: %s: kernel %s, %d units\n", dh_describe(&c, d, sizeof d), k->name,
               ingot_plan_num_splits(c.plan));
    }
    dh_case_destroy(&c);
  }
  printf("  every kernel: %d through the balanced plan, %d not chosen by any graph tried, %d planned uniform\n", ran,
         unchosen, uniform);
  if (ran == 0) {
    fprintf(stderr, "FAIL: no kernel ran through the balanced plan\n");
    failures++;
  }
  return failures;
}

/* Capture one execute, replay it with new ragged lengths. */
static int graph_replay(dh_session *s, const dh_kernel *k, int B, int cap, uint64_t seed) {
  dh_shape sh = dh_shape_for_kernel(k, cap, INGOT_MASK_NONE);
  sh.batch = B;
  sh.seq_q = 1;
  char why[4096], label[256], d[160], err[1024] = "";
  dh_case c;
  if (dh_case_create(&c, s->ctx, &sh, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: graph case: %s\n", why);
    return 1;
  }
  if (!is_balanced(s, &c)) {
    fprintf(stderr, "FAIL: graph case %s is not balanced\n", dh_describe(&c, d, sizeof d));
    dh_case_destroy(&c);
    return 1;
  }
  g_balanced_plans++;
  int32_t *lens = malloc((size_t)B * 4);
  fill(lens, B, cap, kOneHuge);
  void *exec = NULL;
  const ingot_attention_buffers buf = dh_buffers(&c);
  int failures = 0;
  if (dh_set_lengths(&c, lens) != 0 || gpu_capture_begin(s->stream) != 0) {
    fprintf(stderr, "FAIL: graph setup: %s\n", gpu_mem_error());
    free(lens);
    dh_case_destroy(&c);
    return 1;
  }
  const ingot_status est = ingot_plan_execute_ex(c.plan, s->stream, &buf, c.dws, c.ws_size, err, sizeof err);
  const int end = gpu_capture_end(s->stream, &exec);
  if (est != INGOT_OK || end != 0) {
    fprintf(stderr, "FAIL: capturing a balanced execute: %s %s %s\n", ingot_status_string(est), err,
            end ? gpu_mem_error() : "");
    gpu_graph_destroy(exec);
    free(lens);
    dh_case_destroy(&c);
    return 1;
  }
  const int units = ingot_plan_num_splits(c.plan);
  printf("  graph %s: kernel %s, %d units%s (K = %d)\n", dh_describe(&c, d, sizeof d), ingot_plan_kernel_name(c.plan),
         units, units % B == 0 ? ", an even plan" : "", units % B == 0 ? units / B : 0);
  /* The replays keep the workspace as the one before left it, as a serving engine's is (O and LSE
   * are poisoned): an uneven batch after an even one finds the even batch's merge list past its
   * own count and its partials in the slots, none of which it may use. */
  static const int kReplayKinds[4] = {kOneHuge, kEven, kMixed, kLogSpread};
  for (int t = 0; t < (g_quick ? 4 : 24) && failures == 0; ++t) {
    fill(lens, B, cap, kReplayKinds[t % 4]);
    if (dh_set_lengths(&c, lens) != 0 || (t == 0 ? dh_poison_outputs(&c) : dh_poison_results(&c)) != 0 ||
        gpu_graph_launch(exec, s->stream) != 0 || gpu_stream_sync(s->stream) != 0) {
      fprintf(stderr, "FAIL: replay %d: %s\n", t, gpu_mem_error());
      failures = 1;
      break;
    }
    s->stats.executes++;
    snprintf(label, sizeof label, "%s replay %d", d, t);
    failures = dh_check(&c, label, &s->stats) != 0;
  }
  if (failures == 0) {
    uint16_t *o = malloc(c.n_q * 2);
    float *lse = malloc(c.n_lse * 4);
    memcpy(o, c.o, c.n_q * 2);
    memcpy(lse, c.lse, c.n_lse * 4);
    if (dh_execute(&c, s->stream) != 0) {
      failures = 1;
    } else {
      s->stats.executes++;
      snprintf(label, sizeof label, "%s direct execute", d);
      failures = dh_check(&c, label, &s->stats) != 0;
      if (memcmp(o, c.o, c.n_q * 2) != 0 || (c.s.lse && memcmp(lse, c.lse, c.n_lse * 4) != 0)) {
        fprintf(stderr, "FAIL: %s: the graph replay and a direct execute differ\n", d);
        failures = 1;
      }
    }
    free(o), free(lse);
  }
  gpu_graph_destroy(exec);
  free(lens);
  dh_case_destroy(&c);
  return failures;
}

/* The same ragged batch planned uniform (INGOT_BALANCE=0, read at plan time):
 * not balanced, and also right. */
static int uniform_twin(dh_session *s, const dh_kernel *k, int B, int cap, uint64_t seed) {
  dh_shape sh = dh_shape_for_kernel(k, cap, INGOT_MASK_NONE);
  sh.batch = B;
  sh.seq_q = 1;
  char why[4096];
  dh_case c;
  setenv("INGOT_BALANCE", "0", 1);
  const int rc = dh_case_create(&c, s->ctx, &sh, seed, DH_TAIL_POISON, why, sizeof why);
  setenv("INGOT_BALANCE", "1", 1);
  if (rc != 0) {
    fprintf(stderr, "FAIL: uniform twin: %s\n", why);
    return 1;
  }
  int failures = 0;
  if (is_balanced(s, &c)) {
    fprintf(stderr, "FAIL: INGOT_BALANCE=0 still gave a balanced plan\n");
    failures++;
  }
  int32_t *lens = malloc((size_t)B * 4);
  fill(lens, B, cap, kOneHuge);
  failures += run_twice(s, &c, lens, "uniform plan (INGOT_BALANCE=0)");
  free(lens);
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  int other = 0, bitwise = 0;
  const dh_kernel *kc = dh_session_kernel(&sess, 0, 1, 1, &other);
  if (kc == NULL) return dh_session_close(&sess, TEST_NAME, other);
  const dh_kernel *kp = dh_session_kernel(&sess, 1, 1, 1, NULL);
  const dh_kernel *ks = dh_session_kernel(&sess, 0, 2, 1, NULL); /* Sq > 1 */
  uint64_t seed = sess.seed;
  setenv("INGOT_BALANCE", "1", 1); /* balanced plans are opt-in (runtime/src/plan.c) */
  const char *quick = getenv("INGOT_RAGGED_QUICK");
  g_quick = quick != NULL && strcmp(quick, "1") == 0;
  if (g_quick) { /* compute-sanitizer: both merges, both layouts, a graph */
    other += ragged_case(&sess, kc, NULL, 24, 1024, INGOT_MASK_NONE, 1, seed++, &bitwise);
    if (kp != NULL) other += ragged_case(&sess, kp, kc, 3, 256, INGOT_MASK_CAUSAL, 1, seed++, &bitwise);
    other += graph_replay(&sess, kc, 8, 512, seed++);
    printf("%s: quick: %d balanced plans, %d paged/contiguous bitwise comparisons\n", TEST_NAME, g_balanced_plans,
           bitwise);
    return dh_session_close(&sess, TEST_NAME, other);
  }
  /* many units (wide merge) and few (compact: B 3 at 256 tokens) */
  other += ragged_case(&sess, kc, NULL, 24, 2048, INGOT_MASK_NONE, 1, seed++, &bitwise);
  other += ragged_case(&sess, kc, NULL, 3, 256, INGOT_MASK_CAUSAL, 1, seed++, &bitwise);
  other += ragged_case(&sess, kc, NULL, 40, 1024, INGOT_MASK_CAUSAL, 1, seed++, &bitwise);
  if (kp != NULL) {
    other += ragged_case(&sess, kp, kc, 24, 2048, INGOT_MASK_NONE, 1, seed++, &bitwise);
    other += ragged_case(&sess, kp, kc, 3, 256, INGOT_MASK_CAUSAL, 1, seed++, &bitwise);
  }
  if (ks != NULL) {
    const int sq = ks->max_sq > 4 ? 4 : ks->max_sq;
    other += ragged_case(&sess, ks, NULL, 12, 1024, INGOT_MASK_CAUSAL, sq, seed++, &bitwise);
    const dh_kernel *ksp = dh_session_kernel(&sess, 1, 2, 1, NULL);
    if (ksp != NULL) other += ragged_case(&sess, ksp, NULL, 12, 1024, INGOT_MASK_CAUSAL, sq, seed++, &bitwise);
  }
  /* units past the merge's 256 (INGOT_BALANCE=4: four rounds of pieces; one sequence's
   * pieces stay within 256 on the device) */
  setenv("INGOT_BALANCE", "4", 1);
  other += ragged_case(&sess, kc, NULL, 3, 32768, INGOT_MASK_NONE, 1, seed++, &bitwise);
  setenv("INGOT_BALANCE", "1", 1);
  if (g_max_units <= 256) {
    fprintf(stderr, "FAIL: no balanced plan had more than 256 units (most %d)\n", g_max_units);
    other++;
  }
  other += graph_replay(&sess, kc, 32, 2048, seed++);
  if (kp != NULL) other += graph_replay(&sess, kp, 32, 2048, seed++);
  other += uniform_twin(&sess, kc, 24, 2048, seed++);
  other += every_kernel(&sess, seed);
  printf("%s: %d balanced plans, %d paged/contiguous bitwise comparisons\n", TEST_NAME, g_balanced_plans, bitwise);
  if (kp != NULL && bitwise == 0) {
    fprintf(stderr, "FAIL: no paged/contiguous pair could be compared bit for bit\n");
    other++;
  }
  return dh_session_close(&sess, TEST_NAME, other);
}
