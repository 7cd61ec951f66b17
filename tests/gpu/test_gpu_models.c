/* test_gpu_models.c: the decode shapes of well-known models (issue 22;
 * docs/attention_decode.md, "Models"): every group (padded rows, several row
 * blocks for multi-query), every head dim, each at two capacities, contiguous and
 * paged (pages of 1, 8 and 16 tokens: shorter than a wave's chunk, read token by
 * token, and not), with and without LSE, both masks, bf16 and fp16 in turn,
 * against the CPU reference (each layout of a model with LSE at one capacity,
 * without at the other). Lengths are ragged (one sequence full, one short, one in
 * between, then new ones); the unused capacity holds NaN, Inf and garbage, and
 * paged page-table entries past each length are garbage. Every plan's kernel must
 * have the graph's head dim. Usage: <binary> [pack_dir] */
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
  int bf16_only; /* head dims the pack ships in bf16 only */
} model;

/* Distinct (Hq, Hkv, D) of the models in docs/attention_decode.md's table
 * (Mistral-7B and Mixtral share Llama-3-8B's 32/8; the 70B/72B TP8 shards share
 * 8/1), head dims 112, 160 and 192 at 16/4, and groups 2 and 3 at head dim 128:
 * on sm_90 the group-4 kernels run their own group through a path of its own
 * (decision 0027), so these two are what takes their runtime-group path. */
static const model kModels[] = {
    {"Llama-2-7B", 32, 32, 128, 0},     {"Llama-2-13B", 40, 40, 128, 0},  {"Llama-3-8B", 32, 8, 128, 0},
    {"Llama-3-70B TP8", 8, 1, 128, 0},  {"Llama-3-70B TP4", 16, 2, 128, 0}, {"Llama-3.1-405B TP8", 16, 1, 128, 0},
    {"Qwen2.5-7B", 28, 4, 128, 0},      {"Qwen2.5-14B", 40, 8, 128, 0},   {"Qwen2.5-1.5B", 12, 2, 128, 0},
    {"Qwen2-0.5B", 14, 2, 64, 0},       {"Yi-34B", 56, 8, 128, 0},        {"DeepSeek-LLM-67B", 64, 8, 128, 0},
    {"Gemma-2-9B", 16, 8, 256, 0},      {"Gemma-2B", 8, 1, 256, 0},       {"Gemma-7B", 16, 16, 256, 0},
    {"Falcon-7B", 71, 1, 64, 0},        {"StarCoder", 48, 1, 128, 0},     {"Phi-2", 32, 32, 80, 0},
    {"Phi-3-mini", 32, 32, 96, 0},      {"GQA 16/4 D112", 16, 4, 112, 0}, {"GQA 16/4 D160", 16, 4, 160, 1},
    {"GQA 16/4 D192", 16, 4, 192, 1},   {"GQA 24/3 D64", 24, 3, 64, 0},   {"GQA 16/8 D128", 16, 8, 128, 0},
    {"GQA 12/4 D128", 12, 4, 128, 0},
};

/* One graph of model m: plan (a decline of an optional page size is no failure),
 * two sets of ragged lengths, each executed and compared. */
static int run(dh_session *sess, const model *m, int cap, int page, int lse, ingot_mask mask,
               ingot_dtype dt, uint64_t seed) {
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
  if (rc != 0) {
    fprintf(stderr, "FAIL: %s page %d cap %d: %.600s\n", m->name, page, cap, why);
    return 1;
  }
  int failures = 0;
  char want[32];
  snprintf(want, sizeof want, "_d%d_", m->d);
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
  /* 0: contiguous; pages of 1 and 8 tokens are shorter than every kernel's chunk but
   * the head-dim-256 group-8 one's (4 tokens on AMD) */
  static const int pages[4] = {0, 1, 8, 16};
  int other = 0, graphs = 0;
  uint64_t seed = sess.seed;
  for (size_t i = 0; i < sizeof kModels / sizeof kModels[0]; ++i) {
    for (int ci = 0; ci < 2; ++ci)
      for (int pi = 0; pi < 4; ++pi) {
        /* LSE, masks and dtypes alternate over the cases: each layout of each model
         * meets LSE at one capacity and not at the other, and both masks and dtypes */
        const int lse = (ci + pi + (int)i) % 2;
        const ingot_mask mask = (ci + pi / 2 + (int)i) % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
        const ingot_dtype dt =
            (pi + (int)i) % 2 && !kModels[i].bf16_only ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
        other += run(&sess, &kModels[i], caps[ci], pages[pi], lse, mask, dt, ++seed);
        ++graphs;
      }
  }
  printf("%s: %zu model shapes, %d graphs\n", TEST_NAME, sizeof kModels / sizeof kModels[0], graphs);
  return dh_session_close(&sess, TEST_NAME, other);
}
