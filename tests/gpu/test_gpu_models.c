/* test_gpu_models.c: the decode shapes of well-known models that the shipped pack
 * admits by group (issue 22; docs/attention_decode.md, "Models"), each at two
 * capacities, contiguous and paged (16, 128, and 8 where a kernel admits pages that
 * small), with and without LSE, both masks, bf16 and fp16 in turn, against the CPU
 * reference (each layout of a model with LSE at one capacity, without at the
 * other). Lengths are ragged (one sequence full, one short, one in between, then
 * new ones); the unused capacity holds NaN, Inf and garbage, and paged page-table
 * entries past each length are garbage. Every plan's kernel must have the graph's
 * group and head dim. Usage: <binary> [pack_dir] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"

#define TEST_NAME "test_gpu_models"
#define BATCH 3

typedef struct model {
  const char *name;
  int hq, hkv, d;
} model;

/* Distinct (Hq, Hkv, D) of the models the pack admits (Mistral-7B and Mixtral share
 * Llama-3-8B's 32/8; the 70B/72B TP8 shards share 8/1). */
static const model kModels[] = {
    {"Llama-2-7B", 32, 32, 128},       {"Llama-2-13B", 40, 40, 128}, {"Llama-3-8B", 32, 8, 128},
    {"Llama-3-70B TP8", 8, 1, 128},    {"Llama-3-70B TP4", 16, 2, 128}, {"GQA 24/3", 24, 3, 128},
    {"GQA 48/6", 48, 6, 128},          {"GQA 40/5", 40, 5, 128},      {"Gemma-2B", 8, 1, 256},
    {"Gemma-7B", 16, 16, 256},         {"GQA 4/1 D64", 4, 1, 64},     {"GQA 16/4 D64", 16, 4, 64},
};

/* One graph of model m: plan (a decline of an optional page size is no failure),
 * two sets of ragged lengths, each executed and compared. */
static int run(dh_session *sess, const model *m, int cap, int page, int lse, ingot_mask mask,
               ingot_dtype dt, uint64_t seed, int optional, int *skipped) {
  dh_shape s;
  memset(&s, 0, sizeof s);
  s.dtype = dt;
  s.head_dim = m->d;
  s.num_q_heads = m->hq;
  s.num_kv_heads = m->hkv;
  s.batch = BATCH;
  s.seq_q = 1;
  s.capacity = cap;
  s.page_size = page;
  s.mask = mask;
  s.lse = lse;
  dh_case c;
  char why[8192], label[320], d[160];
  const int rc = dh_case_create(&c, sess->ctx, &s, seed, DH_TAIL_POISON, why, sizeof why);
  if (rc == (int)INGOT_NO_MATCH && optional) {
    ++*skipped;
    return 0;
  }
  if (rc != 0) {
    fprintf(stderr, "FAIL: %s page %d cap %d: %.600s\n", m->name, page, cap, why);
    return 1;
  }
  int failures = 0;
  char want[32];
  snprintf(want, sizeof want, "_d%d_g%d_", m->d, m->hq / m->hkv);
  const char *kernel = ingot_plan_kernel_name(c.plan);
  if (strstr(kernel, want) == NULL) {
    fprintf(stderr, "FAIL: %s: kernel %s lacks %s\n", m->name, kernel, want);
    ++failures;
  }
  printf("  %s %s: %s, %d splits\n", m->name, dh_describe(&c, d, sizeof d), kernel, ingot_plan_num_splits(c.plan));
  for (int round = 0; round < 2 && failures == 0; ++round) {
    int32_t lens[BATCH];
    lens[0] = round == 0 ? cap : 1;
    lens[1] = dh_rand_range(1, cap - 1);
    lens[2] = round == 0 ? dh_rand_range(0, cap / 3) : cap - 1;
    if (dh_set_lengths(&c, lens) != 0 || dh_execute(&c, sess->stream) != 0) {
      ++failures;
      break;
    }
    sess->stats.executes++;
    snprintf(label, sizeof label, "%s %s L = %d, %d, %d", m->name, d, lens[0], lens[1], lens[2]);
    if (dh_check(&c, label, &sess->stats) != 0) ++failures;
  }
  dh_case_destroy(&c);
  return failures;
}

int main(int argc, char **argv) {
  dh_session sess;
  dh_session_open(&sess, argc, argv, TEST_NAME);
  static const int caps[2] = {512, 4096};
  /* 0: contiguous; 8 is admitted by some kernels only (head dim 256 at group 1 on sm_90) */
  static const int pages[4] = {0, 16, 128, 8};
  int other = 0, graphs = 0, skipped = 0;
  uint64_t seed = sess.seed;
  for (size_t i = 0; i < sizeof kModels / sizeof kModels[0]; ++i) {
    for (int ci = 0; ci < 2; ++ci)
      for (int pi = 0; pi < 4; ++pi) {
        /* LSE, masks and dtypes alternate over the cases: each layout of each model
         * meets LSE at one capacity and not at the other, and both masks and dtypes */
        const int lse = (ci + pi + (int)i) % 2;
        const ingot_mask mask = (ci + pi / 2 + (int)i) % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
        const ingot_dtype dt = (pi + (int)i) % 2 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
        other += run(&sess, &kModels[i], caps[ci], pages[pi], lse, mask, dt, ++seed, pages[pi] == 8, &skipped);
        ++graphs;
      }
  }
  printf("%s: %zu model shapes, %d graphs (%d with page size 8 not admitted)\n", TEST_NAME,
         sizeof kModels / sizeof kModels[0], graphs - skipped, skipped);
  return dh_session_close(&sess, TEST_NAME, other);
}
