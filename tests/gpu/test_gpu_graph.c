/* test_gpu_graph.c: graph capture (issue item 6). One execute is captured in a
 * CUDA graph (global capture mode: a runtime that synchronises, allocates or
 * reads the length on the host inside execute fails the capture), then the
 * graph is replayed for 128 tokens while only the device length and the
 * appended K/V change (paged: and the page table, whose entries past the length
 * are garbage). Every replay is compared with the reference, and the last one
 * with a direct execute of the same plan, bit for bit. Usage: <binary> [pack_dir] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_graph"

enum { kTokens = 128, kCapacity = 2048 };

static int run(ingot_context *ctx, const dh_kernel *k, ingot_mask mask, int sq, uint64_t seed,
               void *stream, dh_stats *st) {
  dh_shape s = dh_shape_for_kernel(k, kCapacity, mask);
  s.seq_q = sq;
  dh_case c;
  char why[4096], label[256], d[160], err[1024] = "";
  if (dh_case_create(&c, ctx, &s, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  const int32_t start[2] = {dh_rand_range(0, 8), dh_rand_range(kCapacity / 2, kCapacity - kTokens - 1)};
  printf("  %s: kernel %s, %d splits\n", dh_describe(&c, d, sizeof d),
         ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan));
  int failures = 0;
  void *exec = NULL;
  const ingot_attention_buffers buf = dh_buffers(&c);
  if (dh_set_lengths(&c, start) != 0) {
    dh_case_destroy(&c);
    return 1;
  }
  /* Capture before any direct execute: the first execute of a plan must be capturable. */
  if (gpu_capture_begin(stream) != 0) {
    fprintf(stderr, "FAIL: %s\n", gpu_mem_error());
    dh_case_destroy(&c);
    return 1;
  }
  ingot_status est = ingot_plan_execute_ex(c.plan, stream, &buf, c.dws, c.ws_size, err, sizeof err);
  const int end = gpu_capture_end(stream, &exec); /* always end the capture */
  if (est != INGOT_OK || end != 0) {
    fprintf(stderr, "FAIL: capturing ingot_plan_execute: %s%s%s%s\n", ingot_status_string(est),
            est != INGOT_OK ? ": " : "", est != INGOT_OK ? err : "",
            end != 0 ? gpu_mem_error() : "");
    gpu_graph_destroy(exec);
    dh_case_destroy(&c);
    return 1;
  }
  for (int t = 1; t <= kTokens && failures == 0; ++t) {
    const int32_t lens[2] = {start[0] + t, start[1] + t};
    if (dh_set_lengths(&c, lens) != 0 || dh_poison_outputs(&c) != 0 ||
        gpu_graph_launch(exec, stream) != 0 || gpu_stream_sync(stream) != 0) {
      fprintf(stderr, "FAIL: replay %d: %s\n", t, gpu_mem_error());
      failures = 1;
      break;
    }
    st->executes++;
    snprintf(label, sizeof label, "%s replay %d (L = %d, %d)", d, t, lens[0], lens[1]);
    failures = dh_check(&c, label, st) != 0;
  }
  if (failures == 0) { /* the last replay against a direct execute */
    uint16_t *o = malloc(c.n_q * 2);
    float *lse = malloc(c.n_lse * 4);
    memcpy(o, c.o, c.n_q * 2);
    memcpy(lse, c.lse, c.n_lse * 4);
    if (dh_execute(&c, stream) != 0) {
      failures = 1;
    } else {
      st->executes++;
      snprintf(label, sizeof label, "%s direct execute", d);
      failures = dh_check(&c, label, st) != 0;
      if (memcmp(o, c.o, c.n_q * 2) != 0 || (c.s.lse && memcmp(lse, c.lse, c.n_lse * 4) != 0)) {
        fprintf(stderr, "FAIL: %s: the graph replay and a direct execute differ\n", d);
        failures = 1;
      }
    }
    free(o);
    free(lse);
  }
  gpu_graph_destroy(exec);
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  int other = 0;
  for (int paged = 0; paged < 2; ++paged) {
    const dh_kernel *k = dh_session_kernel(&sess, paged, 1, 1, &other);
    if (k == NULL) continue;
    other += run(sess.ctx, k, INGOT_MASK_NONE, 1, sess.seed + (uint64_t)paged, sess.stream, &sess.stats);
    const dh_kernel *kc = dh_session_kernel(&sess, paged, 2, 1, NULL);
    if (kc != NULL)
      other += run(sess.ctx, kc, INGOT_MASK_CAUSAL, kc->max_sq > 4 ? 4 : kc->max_sq,
                   sess.seed + 2 + (uint64_t)paged, sess.stream, &sess.stats);
  }
  return dh_session_close(&sess, TEST_NAME, other);
}
