/* test_gpu_splits.c: the split and the single-segment paths (issue item 4).
 * One sequence at capacities from 64 to 131072, so the plan picks one segment
 * for short caches and several (plus the merge launch) for long ones; both
 * paths must be exercised (ingot_plan_num_splits says which ran) and match the
 * reference. Then paged equals contiguous bit for bit on the same data: same
 * logical K/V, same lengths, a kernel of the same tiling and the same number of
 * splits; also with long segments (more than 64 chunks a wave: the paged
 * kernels' page lookup crosses blocks). Usage: <binary> [pack_dir] */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"

#define TEST_NAME "test_gpu_splits"

static int same_tiling(const dh_kernel *a, const dh_kernel *b) {
  return a != NULL && b != NULL && a->dtype == b->dtype && a->head_dim == b->head_dim &&
         a->group == b->group && a->max_sq == b->max_sq && a->rows == b->rows &&
         a->waves == b->waves && a->tokens_per_wave == b->tokens_per_wave && a->row_waves == b->row_waves;
}

/* Where paged output p and contiguous output c differ: "O", "LSE", or NULL when
 * they are the same bits (both downloaded by dh_check). */
static const char *bits_differ(const dh_case *c, const dh_case *p) {
  if (memcmp(c->o, p->o, c->n_q * 2) != 0) return "O";
  if (c->s.lse && memcmp(c->lse, p->lse, c->n_lse * 4) != 0) return "LSE";
  return NULL;
}

/* Long segments, paged: the sequences and heads fill the device, so the plan
 * keeps one segment per head and a wave walks 65 or more chunks of it. The
 * kernels read a wave's page-table entries 32 chunks at a time (ChunkPages in
 * templates/ingot_ad_pages.h), so this crosses at least two blocks with
 * real tokens past the second switch; the benchmark's batched points do too,
 * but no other test did. The paged output must equal the contiguous one bit for
 * bit and both must match the reference. Returns the failures. */
static int long_segments(dh_session *sess, const dh_kernel *kc, const dh_kernel *kp, int *bitwise) {
  const dh_kernel *ks = sess->kernels;
  const int n = sess->num_kernels;
  static const int caps[] = {8192, 16384}; /* the second for kernels with longer tiles */
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; ++i) {
    const int cap = caps[i];
    dh_shape s = dh_shape_for_kernel(kc, cap, INGOT_MASK_NONE);
    s.num_kv_heads = 8;
    s.num_q_heads = 8 * kc->group;
    s.batch = 33; /* 264 workgroups of 4 waves: the H200's resident count */
    s.seq_q = 1;
    int32_t lens[33];
    for (int b = 0; b < s.batch; ++b) lens[b] = dh_rand_range(cap - cap / 8, cap);
    const uint64_t case_seed = sess->seed + 1000 + (uint64_t)i;
    char why[4096], label[256], d[160];
    dh_case c, p;
    /* uniform segments (one per sequence and head), as the count below assumes; a
     * balanced plan (issue 23, test_gpu_ragged) would cut the batch by its real lengths */
    setenv("INGOT_BALANCE", "0", 1);
    const int rc_c = dh_case_create(&c, sess->ctx, &s, case_seed, DH_TAIL_RANDOM, why, sizeof why);
    if (rc_c != 0) {
      unsetenv("INGOT_BALANCE");
      fprintf(stderr, "FAIL: long segments, capacity %d: %s\n", cap, why);
      return 1;
    }
    dh_shape sp = s;
    sp.page_size = kp->page_size;
    const int rc_p = dh_case_create(&p, sess->ctx, &sp, case_seed, DH_TAIL_RANDOM, why, sizeof why);
    unsetenv("INGOT_BALANCE");
    if (rc_p != 0) {
      fprintf(stderr, "FAIL: long segments, paged capacity %d: %s\n", cap, why);
      dh_case_destroy(&c);
      return 1;
    }
    const dh_kernel *a = dh_kernel_named(ks, n, ingot_plan_kernel_name(c.plan));
    const dh_kernel *b = dh_kernel_named(ks, n, ingot_plan_kernel_name(p.plan));
    const int splits = ingot_plan_num_splits(p.plan);
    /* the fewest chunks a wave walks: the shortest sequence's segments (kernel segment()) */
    int fewest = -1;
    if (b != NULL) {
      const int tile = dh_kernel_tile(b);
      for (int q = 0; q < s.batch; ++q) {
        const int tiles = (lens[q] + tile - 1) / tile, per = (tiles + splits - 1) / splits;
        if (fewest < 0 || per < fewest) fewest = per;
      }
    }
    printf("  long segments %s: paged kernel %s, %d splits, %d or more chunks per wave\n",
           dh_describe(&p, d, sizeof d), ingot_plan_kernel_name(p.plan), splits, fewest);
    if (fewest < 65) {
      dh_case_destroy(&p);
      dh_case_destroy(&c);
      if (i + 1 < sizeof caps / sizeof caps[0]) continue;
      fprintf(stderr, "FAIL: long segments: no capacity gave a wave 65 chunks (%d at %d)\n", fewest, cap);
      return 1;
    }
    int failures = 0;
    if (dh_set_lengths(&c, lens) != 0 || dh_execute(&c, sess->stream) != 0 ||
        dh_set_lengths(&p, lens) != 0 || dh_execute(&p, sess->stream) != 0) {
      failures++;
    } else {
      sess->stats.executes += 2;
      snprintf(label, sizeof label, "long segments %s", dh_describe(&c, d, sizeof d));
      failures += dh_check(&c, label, &sess->stats) != 0;
      snprintf(label, sizeof label, "long segments %s", dh_describe(&p, d, sizeof d));
      failures += dh_check(&p, label, &sess->stats) != 0;
      if (same_tiling(a, b) && ingot_plan_num_splits(c.plan) == splits) {
        ++*bitwise;
        const char *differ = bits_differ(&c, &p);
        if (differ != NULL) {
          failures++;
          fprintf(stderr, "FAIL: long segments: paged (%s) and contiguous (%s) differ in %s\n", b->name,
                  a->name, differ);
        }
      } else {
        failures++;
        fprintf(stderr, "FAIL: long segments: paged %s (%d splits) and contiguous %s (%d splits) tile "
                "differently\n", ingot_plan_kernel_name(p.plan), splits, ingot_plan_kernel_name(c.plan),
                ingot_plan_num_splits(c.plan));
      }
    }
    dh_case_destroy(&p);
    dh_case_destroy(&c);
    return failures;
  }
  return 1; /* not reached: the last capacity returns */
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  ingot_context *ctx = sess.ctx;
  const dh_kernel *ks = sess.kernels;
  const int n = sess.num_kernels;
  int other = 0, single = 0, multi = 0, bitwise = 0;
  const dh_kernel *kc = dh_session_kernel(&sess, 0, 1, 1, &other);
  if (kc == NULL) return 1;
  const dh_kernel *kp = dh_session_kernel(&sess, 1, 1, kc->lse, NULL);
  static const int caps[] = {64, 256, 1024, 4096, 16384, 65536, 131072};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; ++i) {
    const int cap = caps[i];
    dh_shape s = dh_shape_for_kernel(kc, cap, INGOT_MASK_NONE);
    s.batch = 1;
    s.seq_q = 1;
    const int32_t lens[1] = {dh_rand_range(cap / 2 + 1, cap)};
    const uint64_t case_seed = sess.seed + (uint64_t)i;
    char why[4096], label[256], d[160];
    dh_case c;
    if (dh_case_create(&c, ctx, &s, case_seed, DH_TAIL_RANDOM, why, sizeof why) != 0) {
      fprintf(stderr, "FAIL: capacity %d: %s\n", cap, why);
      other++;
      continue;
    }
    const int splits = ingot_plan_num_splits(c.plan);
    printf("  %s L %d: kernel %s, %d splits, %d launches\n", dh_describe(&c, d, sizeof d),
           lens[0], ingot_plan_kernel_name(c.plan), splits, ingot_plan_launch_count(c.plan));
    single += splits == 1;
    multi += splits > 1;
    if (dh_set_lengths(&c, lens) != 0 || dh_execute(&c, sess.stream) != 0) {
      other++;
      dh_case_destroy(&c);
      continue;
    }
    sess.stats.executes++;
    snprintf(label, sizeof label, "%s L %d (%d splits)", d, lens[0], splits);
    other += dh_check(&c, label, &sess.stats) != 0;

    /* the same data, paged */
    if (kp != NULL && cap % kp->page_size == 0) {
      dh_shape sp = s;
      sp.page_size = kp->page_size;
      dh_case p;
      if (dh_case_create(&p, ctx, &sp, case_seed, DH_TAIL_RANDOM, why, sizeof why) != 0) {
        fprintf(stderr, "FAIL: paged capacity %d: %s\n", cap, why);
        other++;
      } else {
        if (dh_set_lengths(&p, lens) != 0 || dh_execute(&p, sess.stream) != 0) {
          other++;
        } else {
          sess.stats.executes++;
          snprintf(label, sizeof label, "%s L %d (%d splits)", dh_describe(&p, d, sizeof d),
                   lens[0], ingot_plan_num_splits(p.plan));
          other += dh_check(&p, label, &sess.stats) != 0; /* downloads p.o and p.lse */
          const dh_kernel *a = dh_kernel_named(ks, n, ingot_plan_kernel_name(c.plan));
          const dh_kernel *b = dh_kernel_named(ks, n, ingot_plan_kernel_name(p.plan));
          if (same_tiling(a, b) && ingot_plan_num_splits(p.plan) == splits) {
            const char *differ = bits_differ(&c, &p);
            bitwise++;
            if (differ != NULL) {
              other++;
              fprintf(stderr, "FAIL: capacity %d: paged (%s) and contiguous (%s) differ in %s\n",
                      cap, b->name, a->name, differ);
            }
          } else {
            printf("  capacity %d: paged kernel %s (%d splits) and contiguous %s (%d splits) tile "
                   "differently: not compared bit for bit\n",
                   cap, ingot_plan_kernel_name(p.plan), ingot_plan_num_splits(p.plan),
                   ingot_plan_kernel_name(c.plan), splits);
          }
        }
        dh_case_destroy(&p);
      }
    }
    dh_case_destroy(&c);
  }
  if (kp != NULL) other += long_segments(&sess, kc, kp, &bitwise);
  printf("%s: %d plans with one segment, %d with several, %d paged/contiguous bitwise "
         "comparisons\n",
         TEST_NAME, single, multi, bitwise);
  if (single == 0 || multi == 0) {
    fprintf(stderr, "FAIL: both paths must run: %d single-segment plans, %d split plans\n", single,
            multi);
    other++;
  }
  if (kp != NULL && bitwise == 0) {
    fprintf(stderr, "FAIL: no paged/contiguous pair could be compared bit for bit\n");
    other++;
  }
  return dh_session_close(&sess, TEST_NAME, other);
}
