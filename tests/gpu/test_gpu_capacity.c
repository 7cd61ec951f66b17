/* test_gpu_capacity.c: capacity endpoints (issue item 3). Capacities 64 and
 * 65536, contiguous and paged, with valid lengths 1, capacity-1, capacity,
 * more than capacity (the device clamps: capacity+1, +1000, INT32_MAX), 0 and
 * negative (O = 0 exactly, LSE = -inf). The unused capacity holds NaN and Inf
 * and paged page-table entries past each length are garbage, so any read past
 * a clamped length shows. Usage: <binary> [pack_dir] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_capacity"

static int run(ingot_context *ctx, const dh_kernel *k, int cap, ingot_mask mask, int sq,
               uint64_t seed, void *stream, dh_stats *st) {
  dh_shape s = dh_shape_for_kernel(k, cap, mask);
  s.seq_q = sq;
  if (s.page_size > cap) s.page_size = cap;
  dh_case c;
  char why[4096], label[256], d[160];
  if (dh_case_create(&c, ctx, &s, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: capacity %d: %s\n", cap, why);
    return 1;
  }
  printf("  %s: kernel %s, %d splits\n", dh_describe(&c, d, sizeof d),
         ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan));
  const int32_t pairs[][2] = {{1, cap - 1},        {cap, 1},         {cap - 1, cap},
                              {cap + 1, 0},        {0, cap + 1000},  {INT32_MAX, -5},
                              {-1, INT32_MIN},     {cap, cap},       {1, 1}};
  int failures = 0;
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i) {
    if (dh_set_lengths(&c, pairs[i]) != 0 || dh_execute(&c, stream) != 0) {
      failures++;
      break;
    }
    st->executes++;
    snprintf(label, sizeof label, "%s L = %d, %d", d, pairs[i][0], pairs[i][1]);
    if (dh_check(&c, label, st) != 0) failures++;
  }
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  int other = 0, runs = 0;
  static const int caps[2] = {64, 65536};
  for (int paged = 0; paged < 2; ++paged) {
    const dh_kernel *k = dh_session_kernel(&sess, paged, 1, 1, &other);
    if (k == NULL) continue;
    /* causal with a wider query: rows of short sequences are fully masked */
    const dh_kernel *kc = dh_session_kernel(&sess, paged, 2, 1, NULL);
    for (int i = 0; i < 2; ++i) {
      other += run(sess.ctx, k, caps[i], INGOT_MASK_NONE, 1, sess.seed + 10 * i + paged, sess.stream,
                   &sess.stats);
      if (kc != NULL)
        other += run(sess.ctx, kc, caps[i], INGOT_MASK_CAUSAL, kc->max_sq > 4 ? 4 : kc->max_sq,
                     sess.seed + 10 * i + paged + 5, sess.stream, &sess.stats);
      runs += 1 + (kc != NULL);
    }
  }
  printf("%s: %d runs\n", TEST_NAME, runs);
  return dh_session_close(&sess, TEST_NAME, other);
}
