/* test_gpu_tokens.c: the original decode workflow (issue items 1 and 2).
 * Two sequences, 128 appends each, one plan reused with the same buffers and
 * workspace; after every append the O (and LSE) of every token is compared with
 * the reference at 0.015 + 0.015*|ref|. Run for no mask (Sq = 1) and causal
 * (the widest Sq the pack has, up to 4), contiguous and paged.
 *
 * Built twice: TOKENS_POISON_TAIL=0 (test 1: the unused capacity holds finite
 * random data) and =1 (test 2: it holds NaN, +Inf, -Inf and random bits, nothing
 * is zero-initialised, and paged page-table entries past each length are
 * garbage). Usage: <binary> [pack_dir] */
#include <stdio.h>
#include <stdlib.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#ifndef TOKENS_POISON_TAIL
#define TOKENS_POISON_TAIL 0
#endif
#if TOKENS_POISON_TAIL
#define TEST_NAME "test_gpu_poison_tail"
#else
#define TEST_NAME "test_gpu_tokens"
#endif

enum { kAppends = 128, kCapacity = 1024 };

static int run(ingot_context *ctx, const dh_kernel *k, ingot_mask mask, int sq, uint64_t seed,
               void *stream, dh_stats *st) {
  dh_shape s = dh_shape_for_kernel(k, kCapacity, mask);
  s.seq_q = sq;
  dh_case c;
  char why[4096], label[256], d[160];
  const dh_tail tail = TOKENS_POISON_TAIL ? DH_TAIL_POISON : DH_TAIL_RANDOM;
  if (dh_case_create(&c, ctx, &s, seed, tail, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  /* sequence 0 starts empty, sequence 1 part-way into its capacity */
  const int32_t start[2] = {0, dh_rand_range(kCapacity / 4, kCapacity - kAppends - 1)};
  printf("  %s: kernel %s, %d splits, workspace %zu bytes, starts %d and %d\n",
         dh_describe(&c, d, sizeof d), ingot_plan_kernel_name(c.plan),
         ingot_plan_num_splits(c.plan), c.ws_size, start[0], start[1]);
  int failures = 0;
  for (int step = 1; step <= kAppends && failures == 0; ++step) {
    const int32_t lens[2] = {start[0] + step, start[1] + step};
    if (dh_set_lengths(&c, lens) != 0 || dh_execute(&c, stream) != 0) {
      failures = 1;
      break;
    }
    st->executes++;
    snprintf(label, sizeof label, "%s step %d (L = %d, %d)", d, step, lens[0], lens[1]);
    if (dh_check(&c, label, st) != 0) failures = 1; /* stop at the first bad step */
  }
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  const dh_kernel *ks = sess.kernels;
  int other = 0;
  int runs = 0;
  for (int paged = 0; paged < 2; ++paged) {
    const dh_kernel *k1 = dh_session_kernel(&sess, paged, 1, 0, &other);
    if (k1 == NULL) continue;
    other += run(sess.ctx, k1, INGOT_MASK_NONE, 1, sess.seed + 1 + paged, sess.stream, &sess.stats);
    /* causal with the widest query the pack has for this family (up to 4) */
    int sq = 1;
    for (int i = 0; i < sess.num_kernels; ++i)
      if (ks[i].has_arch && ks[i].paged == paged && ks[i].dtype == k1->dtype &&
          ks[i].head_dim == k1->head_dim && ks[i].group == k1->group && ks[i].max_sq > sq &&
          ks[i].max_sq <= 4)
        sq = ks[i].max_sq;
    other += run(sess.ctx, k1, INGOT_MASK_CAUSAL, sq, sess.seed + 3 + paged, sess.stream, &sess.stats);
    runs += 2;
  }
  printf("%s: %d runs of 2 sequences x %d appends\n", TEST_NAME, runs, kAppends);
  return dh_session_close(&sess, TEST_NAME, other);
}
