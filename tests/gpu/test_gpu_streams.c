/* test_gpu_streams.c: one plan on two streams at once (issue item 7). Two
 * threads share one plan; each has its own inputs, outputs, workspace and
 * stream, and none has a current CUDA context of its own (the runtime must set
 * it). Each iteration poisons its outputs on its stream, executes the shared
 * plan several times back to back, waits, and compares with the reference, so
 * the two streams' kernels overlap on the device. Usage: <binary> [pack_dir] */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_streams"

enum { kIterations = 24, kRepeats = 4, kCapacity = 8192 };

typedef struct worker {
  int id;
  const ingot_plan *plan; /* shared */
  dh_case *c;             /* own buffers and workspace */
  void *stream;
  dh_stats st;
  int failures;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  dh_case *c = w->c;
  const ingot_attention_buffers buf = dh_buffers(c);
  char err[1024], label[256], d[160];
  dh_describe(c, d, sizeof d);
  for (int it = 0; it < kIterations && w->failures == 0; ++it) {
    if (gpu_memset8_async(c->d_o, 0xFF, c->n_q * 2, w->stream) != 0 ||
        (c->dlse && gpu_memset8_async(c->dlse, 0xFF, c->n_lse * 4, w->stream) != 0)) {
      fprintf(stderr, "FAIL: thread %d: %s\n", w->id, gpu_mem_error());
      w->failures++;
      break;
    }
    for (int r = 0; r < kRepeats; ++r) {
      ingot_status s = ingot_plan_execute_ex(w->plan, w->stream, &buf, c->dws, c->ws_size, err,
                                             sizeof err);
      if (s != INGOT_OK) {
        fprintf(stderr, "FAIL: thread %d: execute: %s: %s\n", w->id, ingot_status_string(s), err);
        w->failures++;
        break;
      }
      w->st.executes++;
    }
    if (w->failures || gpu_stream_sync(w->stream) != 0) {
      if (!w->failures) fprintf(stderr, "FAIL: thread %d: %s\n", w->id, gpu_mem_error());
      w->failures++;
      break;
    }
    snprintf(label, sizeof label, "thread %d iteration %d: %s", w->id, it, d);
    if (dh_check(c, label, &w->st) != 0) w->failures++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  int other = 0;
  const dh_kernel *k = dh_session_kernel(&sess, 0, 1, 1, &other);
  if (k == NULL) return 1;
  dh_shape s = dh_shape_for_kernel(k, kCapacity, INGOT_MASK_NONE);
  s.seq_q = 1;
  dh_case cases[2];
  worker w[2];
  char why[4096], d[160];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 2; ++i) {
    if (dh_case_create(&cases[i], sess.ctx, &s, sess.seed + (uint64_t)i, DH_TAIL_POISON, why,
                       sizeof why) != 0) {
      fprintf(stderr, "FAIL: %s\n", why);
      return 1;
    }
    /* different lengths per thread, long enough that kernels run a while */
    const int32_t lens[2] = {dh_rand_range(kCapacity / 2, kCapacity), dh_rand_range(1, kCapacity)};
    if (dh_set_lengths(&cases[i], lens) != 0 || gpu_stream_create(&w[i].stream) != 0) return 1;
    w[i].id = i;
    w[i].c = &cases[i];
    w[i].plan = cases[0].plan; /* the same plan for both */
    /* ... so case 1's reference takes the plan's scale (each case draws one from its seed) */
    cases[i].g.scale = cases[0].g.scale;
  }
  printf("  %s: kernel %s, %d splits, two workspaces of %zu bytes\n",
         dh_describe(&cases[0], d, sizeof d), ingot_plan_kernel_name(cases[0].plan),
         ingot_plan_num_splits(cases[0].plan), cases[0].ws_size);
  pthread_t th[2];
  int started = 0;
  for (int i = 0; i < 2; ++i) started += pthread_create(&th[i], NULL, work, &w[i]) == 0;
  if (started != 2) {
    fprintf(stderr, "FAIL: could not start two threads\n");
    other++;
  }
  for (int i = 0; i < started; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; ++i) {
    sess.stats.executes += w[i].st.executes;
    sess.stats.compared += w[i].st.compared;
    sess.stats.failed += w[i].st.failed;
    if (w[i].st.max_err > sess.stats.max_err) sess.stats.max_err = w[i].st.max_err;
    other += w[i].failures > 0 && w[i].st.failed == 0; /* execute/sync failures */
    gpu_stream_destroy(w[i].stream);
    dh_case_destroy(&cases[i]);
  }
  return dh_session_close(&sess, TEST_NAME, other);
}
