/* test_gpu_handoff.c: ingot launched right behind a kernel that writes its inputs.
 *
 * In serving, the kernel before ingot on the stream appends the new token: it
 * writes the valid length and q. libingot launches its grids programmatically
 * (sm_90), so a split may start while that kernel still runs, and must read the
 * length and q only after its griddepcontrol.wait. A kernel that read either
 * earlier (ptxas once moved the read-only length load above the wait) computes
 * over the old length or the old q without a word. The other GPU tests upload
 * their inputs synchronously, so they cannot see this.
 *
 * Here a writer kernel (handoff_writer.cu, built beside this binary) runs
 * before every execute: it lets its dependents start at once
 * (griddepcontrol.launch_dependents), spins, then copies the new lengths and a
 * fresh random q from staging buffers over the old ones. The device holds the
 * old lengths and q until then; K and V of the new tokens are uploaded
 * beforehand (past the old length, where no correct read goes). Every kernel
 * of the pack for this device runs so (causal where it takes several query
 * rows, else either mask at random), and one plan
 * also runs the writer and execute captured in a CUDA graph, replayed with new
 * values each time. Outputs are poisoned before each run and compared with the
 * reference for the new lengths and q.
 *
 * Usage: <binary> [pack_dir [writer.cubin]]; the writer's default is
 * test_gpu_handoff_writer.cubin beside the binary. Exit 77 without a CUDA
 * device, or where the device is not sm_90 (the writer is built for it). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode_harness.h"
#include "gpu_mem.h"
#include "reference.h"

#define TEST_NAME "test_gpu_handoff"
#define WRITER_FILE "test_gpu_handoff_writer.cubin"

enum { kSteps = 2, kReplays = 3, kWriterThreads = 256 };
/* Long enough that every programmatically launched grid is scheduled, and would
 * have issued any load placed before its wait, while the writer still spins. */
static const unsigned long long kSpinNs = 20000;

typedef struct writer {
  void *module, *fn;
} writer;

/* Staging for one case: what the writer copies over the device's lengths and q. */
typedef struct stage {
  void *lens, *q;
  int32_t *old_lens; /* host: the lengths the device holds until the writer runs */
  uint16_t *old_q;
} stage;

static int stage_create(stage *sg, const dh_case *c) {
  memset(sg, 0, sizeof *sg);
  sg->old_lens = malloc((size_t)c->s.batch * 4);
  sg->old_q = malloc(c->n_q * 2);
  if (sg->old_lens == NULL || sg->old_q == NULL || gpu_alloc(&sg->lens, (size_t)c->s.batch * 4) != 0 ||
      gpu_alloc(&sg->q, c->n_q * 2) != 0) {
    fprintf(stderr, "FAIL: staging buffers: %s\n", gpu_mem_error());
    return -1;
  }
  return 0;
}

static void stage_destroy(stage *sg) {
  gpu_free(sg->lens), gpu_free(sg->q);
  free(sg->old_lens), free(sg->old_q);
  memset(sg, 0, sizeof *sg);
}

/* Moves the case to new lengths (longer than the old ones) and a fresh q on the
 * host, where the reference reads them; on the device K and V gain the new
 * tokens, the lengths and q stay the old ones, and the new ones go to staging. */
static int stage_step(stage *sg, dh_case *c) {
  const int B = c->s.batch, cap = c->s.capacity;
  int32_t lens[64];
  if (B > 64) return -1;
  memcpy(sg->old_lens, c->lens, (size_t)B * 4);
  memcpy(sg->old_q, c->q, c->n_q * 2);
  for (int b = 0; b < B; ++b) {
    const int old = c->valid[b];
    /* sequence 0 always grows; the others grow or stay */
    lens[b] = old >= cap ? cap : dh_rand_range(b == 0 ? old + 1 : old, cap);
  }
  for (size_t i = 0; i < c->n_q; ++i)
    c->q[i] = ingot_ref_from_float((float)dh_rand_range(-3000, 3000) / 1000.0f, c->s.dtype);
  if (dh_set_lengths(c, lens) != 0) return -1; /* K/V of the new tokens, and the new lengths */
  if (gpu_upload(sg->lens, c->lens, (size_t)B * 4) != 0 || gpu_upload(sg->q, c->q, c->n_q * 2) != 0 ||
      gpu_upload(c->dlens, sg->old_lens, (size_t)B * 4) != 0 ||
      gpu_upload(c->dq, sg->old_q, c->n_q * 2) != 0) {
    fprintf(stderr, "FAIL: staging: %s\n", gpu_mem_error());
    return -1;
  }
  return 0;
}

static int launch_writer(const writer *w, dh_case *c, stage *sg, void *stream) {
  void *dst0 = c->dlens, *src0 = sg->lens, *dst1 = c->dq, *src1 = sg->q;
  unsigned n0 = (unsigned)c->s.batch, n1 = (unsigned)(c->n_q / 2); /* in 32-bit words */
  unsigned long long spin = kSpinNs;
  void *params[] = {&dst0, &src0, &n0, &dst1, &src1, &n1, &spin};
  if (gpu_launch(w->fn, 1, kWriterThreads, params, stream) != 0) {
    fprintf(stderr, "FAIL: writer launch: %s\n", gpu_mem_error());
    return -1;
  }
  return 0;
}

/* Writer, then execute, on one stream; then the check. */
static int run_step(const writer *w, dh_case *c, stage *sg, void *stream, const char *label,
                    dh_stats *st) {
  char err[1024] = "";
  if (stage_step(sg, c) != 0 || dh_poison_outputs(c) != 0 || launch_writer(w, c, sg, stream) != 0)
    return 1;
  const ingot_attention_buffers buf = dh_buffers(c);
  ingot_status s = ingot_plan_execute_ex(c->plan, stream, &buf, c->dws, c->ws_size, err, sizeof err);
  if (s != INGOT_OK) {
    fprintf(stderr, "FAIL [%s]: execute: %s: %s\n", label, ingot_status_string(s), err);
    return 1;
  }
  if (gpu_stream_sync(stream) != 0) {
    fprintf(stderr, "FAIL [%s]: %s\n", label, gpu_mem_error());
    return 1;
  }
  st->executes++;
  return dh_check(c, label, st) != 0;
}

/* Starting lengths: each sequence somewhere in its first half, sequence 0 at least 1. */
static int start_lengths(dh_case *c) {
  int32_t lens[64];
  if (c->s.batch > 64) return -1;
  for (int b = 0; b < c->s.batch; ++b) lens[b] = dh_rand_range(b == 0 ? 1 : 0, c->s.capacity / 2);
  return dh_set_lengths(c, lens);
}

static int run_kernel(const writer *w, dh_session *sess, const dh_kernel *k, ingot_mask mask,
                      uint64_t seed, int *chosen) {
  char why[4096] = "", label[320], d[160];
  dh_case c;
  stage sg;
  *chosen = 0;
  if (dh_case_for_kernel(&c, sess->ctx, k, mask, 0, k->max_sq, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  *chosen = strcmp(ingot_plan_kernel_name(c.plan), k->name) == 0;
  int failures = stage_create(&sg, &c) != 0 || start_lengths(&c) != 0;
  for (int step = 0; step < kSteps && failures == 0; ++step) {
    snprintf(label, sizeof label, "%s, kernel %s, %d splits, step %d (L0 %d)", dh_describe(&c, d, sizeof d),
             ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan), step, c.valid[0]);
    failures += run_step(w, &c, &sg, sess->stream, label, &sess->stats);
  }
  stage_destroy(&sg);
  dh_case_destroy(&c);
  return failures;
}

/* The writer and execute captured once, replayed with new staged values. */
static int run_graph(const writer *w, dh_session *sess, const dh_kernel *k, int capacity) {
  char why[4096] = "", label[320], d[160];
  dh_shape s = dh_shape_for_kernel(k, capacity, INGOT_MASK_NONE);
  s.seq_q = 1;
  dh_case c;
  stage sg;
  if (dh_case_create(&c, sess->ctx, &s, sess->seed ^ 0x6AF, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  int failures = stage_create(&sg, &c) != 0 || start_lengths(&c) != 0;
  void *exec = NULL;
  if (failures == 0) {
    const ingot_attention_buffers buf = dh_buffers(&c);
    char err[1024] = "";
    if (gpu_capture_begin(sess->stream) != 0) {
      fprintf(stderr, "FAIL: capture: %s\n", gpu_mem_error());
      failures++;
    } else {
      int bad = launch_writer(w, &c, &sg, sess->stream) != 0;
      ingot_status st =
          ingot_plan_execute_ex(c.plan, sess->stream, &buf, c.dws, c.ws_size, err, sizeof err);
      if (st != INGOT_OK)
        fprintf(stderr, "FAIL: execute under capture: %s: %s\n", ingot_status_string(st), err);
      if (gpu_capture_end(sess->stream, &exec) != 0) {
        fprintf(stderr, "FAIL: capture: %s\n", gpu_mem_error());
        bad = 1;
      }
      failures += bad || st != INGOT_OK;
    }
  }
  for (int r = 0; r < kReplays && failures == 0; ++r) {
    snprintf(label, sizeof label, "graph replay %d: %s, kernel %s, %d splits (L0 %d)", r,
             dh_describe(&c, d, sizeof d), ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan),
             c.valid[0]);
    if (stage_step(&sg, &c) != 0 || dh_poison_outputs(&c) != 0 || gpu_graph_launch(exec, sess->stream) != 0 ||
        gpu_stream_sync(sess->stream) != 0) {
      fprintf(stderr, "FAIL [%s]: %s\n", label, gpu_mem_error());
      failures++;
      break;
    }
    sess->stats.executes++;
    failures += dh_check(&c, label, &sess->stats) != 0;
  }
  printf("  graph: %s, kernel %s, %d splits, %d replays\n", dh_describe(&c, d, sizeof d),
         ingot_plan_kernel_name(c.plan), ingot_plan_num_splits(c.plan), kReplays);
  gpu_graph_destroy(exec);
  stage_destroy(&sg);
  dh_case_destroy(&c);
  return failures;
}

/* The writer's code object: argv[2], else beside this binary. */
static int writer_path(int argc, char **argv, char *path, size_t size) {
  if (argc > 2) {
    snprintf(path, size, "%s", argv[2]);
    return 0;
  }
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (slash == NULL) return -1;
  slash[1] = '\0';
  return snprintf(path, size, "%s%s", self, WRITER_FILE) < (int)size ? 0 : -1;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  if (strcmp(ingot_context_arch(sess.ctx), "sm_90") != 0) {
    char arch[64];
    snprintf(arch, sizeof arch, "%s", ingot_context_arch(sess.ctx));
    dh_session_release(&sess);
    printf("%s: SKIP: the writer is built for sm_90, the device is %s\n", TEST_NAME, arch);
    return 77;
  }
  char path[PATH_MAX + 64];
  writer w = {0};
  if (writer_path(argc, argv, path, sizeof path) != 0 || gpu_module_load(path, &w.module) != 0 ||
      gpu_module_function(w.module, "ingot_test_writer", &w.fn) != 0) {
    fprintf(stderr, "FAIL: the writer kernel: %s\n", gpu_mem_error());
    return 1;
  }
  int other = 0, eligible = 0, chosen_total = 0;
  for (int i = 0; i < sess.num_kernels; ++i) {
    const dh_kernel *k = &sess.kernels[i];
    if (!k->has_arch) continue;
    eligible++;
    /* causal where the kernel takes several query rows (the mask's code path), else
     * either mask, chosen at random */
    const int causal = k->max_sq >= 2 || dh_rand_range(0, 1);
    int chosen = 0;
    other += run_kernel(&w, &sess, k, causal ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE,
                        sess.seed + (uint64_t)i, &chosen);
    chosen_total += chosen;
  }
  const dh_kernel *k = dh_session_kernel(&sess, 0, 1, 0, &other);
  if (k != NULL) other += run_graph(&w, &sess, k, 16384);
  printf("%s: %d kernels for %s, %d of %d graphs ran the kernel they were built for, writer spin %llu ns\n",
         TEST_NAME, eligible, ingot_context_arch(sess.ctx), chosen_total, eligible, kSpinNs);
  if (eligible == 0) {
    fprintf(stderr, "FAIL: the pack has no kernel for %s\n", ingot_context_arch(sess.ctx));
    other++;
  }
  gpu_module_unload(w.module);
  return dh_session_close(&sess, TEST_NAME, other);
}
