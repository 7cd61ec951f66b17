/* test_gpu_variants.c: every variant of the pack at least once (issue item 5).
 * The kernels are read from the packaged KDP; for each one with a code object
 * for this device, a graph built from its own metadata (dtype, head dim, group,
 * Sq = max_sq, layout, LSE, a capacity its UMDs admit) is run with no mask and
 * causal, causal top-left where Sq >= 2, and causal again for every shorter
 * Sq >= 2. Paged kernels run at their smallest page (1 token: read token by
 * token) and again at 16 tokens (a wave's chunk in one page). O and LSE are compared with the reference (LSE in
 * natural log; -inf for fully masked rows), and every kernel must have been
 * chosen by at least one graph (batch 2, or 4, 12, 16 or 32 where kernels of one rank
 * share the graphs). Usage: <binary> [pack_dir]; INGOT_VARIANTS_ONLY=text: only the kernels
 * whose names hold it (e.g. for compute-sanitizer on a few kernels; a kernel the filter leaves out
 * is never a miss, and a filter that matches none fails). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_variants"

/* Runs one shape; *chosen gets the index of the kernel the plan picked (-1 none). */
static int run(ingot_context *ctx, const dh_kernel *ks, int n, const dh_kernel *k, ingot_mask mask,
               int top_left, int sq, uint64_t seed, void *stream, dh_stats *st, int *chosen) {
  *chosen = -1;
  char why[4096] = "", label[256], d[160];
  dh_case c;
  if (dh_case_for_kernel(&c, ctx, k, mask, top_left, sq, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  const dh_kernel *picked = dh_kernel_named(ks, n, ingot_plan_kernel_name(c.plan));
  if (picked != NULL) *chosen = (int)(picked - ks);
  /* one long sequence, one short enough that causal rows are fully masked, the others anywhere */
  int32_t lens[32]; /* dh_case_for_kernel's batches: at most 32 */
  for (int b = 0; b < c.s.batch && b < 32; ++b)
    lens[b] = b == 0 ? dh_rand_range(sq, c.s.capacity) : b == 1 ? dh_rand_range(0, sq) : dh_rand_range(0, c.s.capacity);
  int failures = 0;
  if (dh_set_lengths(&c, lens) != 0 || dh_execute(&c, stream) != 0) {
    failures = 1;
  } else {
    st->executes++;
    snprintf(label, sizeof label, "%s L = %d, %d: kernel %s", dh_describe(&c, d, sizeof d),
             lens[0], lens[1], ingot_plan_kernel_name(c.plan));
    failures = dh_check(&c, label, st) != 0;
  }
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  ingot_context *ctx = sess.ctx;
  const dh_kernel *ks = sess.kernels;
  const int n = sess.num_kernels;
  int other = 0, eligible = 0, lse_kernels = 0, wide = 0;
  int *hits = calloc((size_t)n, sizeof *hits);
  const char *only = getenv("INGOT_VARIANTS_ONLY");
  if (only != NULL && only[0] == '\0') only = NULL;
  if (only != NULL) printf("%s: INGOT_VARIANTS_ONLY=%s: only the kernels named so\n", TEST_NAME, only);
  for (int i = 0; i < n; ++i) {
    const dh_kernel *k = &ks[i];
    if (!k->has_arch) continue;
    if (only != NULL && strstr(k->name, only) == NULL) continue;
    eligible++;
    lse_kernels += k->lse;
    wide += k->max_sq >= 2;
    int chosen;
    const uint64_t seed = sess.seed + 16u * (uint64_t)i;
    for (int m = 0; m < 3; ++m) {
      if (m == 2 && k->max_sq < 2) continue;  /* top-left differs from bottom-right only for Sq >= 2 */
      other += run(ctx, ks, n, k, m ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE, m == 2, k->max_sq, seed + (uint64_t)m,
                   sess.stream, &sess.stats, &chosen);
      if (chosen >= 0) hits[chosen]++;
    }
    if (k->paged && k->page_size < 16) {
      dh_kernel k16 = *k;
      k16.page_size = 16;
      other += run(ctx, ks, n, &k16, INGOT_MASK_CAUSAL, 0, k->max_sq, seed + 3, sess.stream, &sess.stats, &chosen);
      if (chosen >= 0) hits[chosen]++;
    }
    for (int sq = 2; sq < k->max_sq; ++sq) {
      other += run(ctx, ks, n, k, INGOT_MASK_CAUSAL, 0, sq, seed + 4 + (uint64_t)sq, sess.stream, &sess.stats,
                   &chosen);
      if (chosen >= 0) hits[chosen]++;
    }
  }
  int missed = 0;
  for (int i = 0; i < n; ++i) {
    if (ks[i].has_arch && hits[i] == 0 && (only == NULL || strstr(ks[i].name, only) != NULL)) {
      if (missed++ < 20) fprintf(stderr, "FAIL: kernel %s was never chosen\n", ks[i].name);
    }
  }
  printf("%s: %d kernels for %s (%d with LSE, %d with Sq >= 2), %d never chosen\n", TEST_NAME,
         eligible, ingot_context_arch(ctx), lse_kernels, wide, missed);
  if (eligible == 0)
    fprintf(stderr, "FAIL: the pack has no kernel for %s%s%s\n", ingot_context_arch(ctx),
            only != NULL ? " whose name holds " : "", only != NULL ? only : "");
  other += missed + (eligible == 0);
  free(hits);
  return dh_session_close(&sess, TEST_NAME, other);
}
