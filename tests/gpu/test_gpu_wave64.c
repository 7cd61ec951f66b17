/* test_gpu_wave64.c: the AMD kernels' wave64 code executed on the H200 (issue 26).
 *
 * The pack attention_decode_w64 (tests/gpu/wave64_config.py) holds exactly the
 * kernels the shipped pack builds for gfx942, built for sm_90_w64: nvcc with
 * INGOT_EMULATE_WAVE64, two warps acting as one 64-lane wave
 * (templates/ingot_arch.h). The runtime runs them on the sm_90 device through
 * ingot_context_set_arch(ctx, "sm_90_w64"), planning with wave size 64, so the
 * index math that ships for AMD (64-lane shuffles, lanes per token and tokens
 * per load at 64 lanes, the page-table lookahead of 64 entries, reductions over
 * 64 lanes, the merge's wave-0 reduction) runs against the CPU reference.
 *
 * 1. (host) The pack's kernels are the shipped pack's gfx942 kernels, name for name;
 *    a host context for sm_90_w64 opens the pack and plans each kernel for a graph
 *    of its shape (one for sm_90 declines them all).
 * 2. (GPU) A self-test of the emulated primitives (wave64_selftest.cu) against
 *    what AMD's ds_bpermute and the kernels' reductions give, bit for bit.
 * 3. (GPU) Every kernel of the pack, each through graphs of its own shape:
 *    no mask and causal at Sq = max_sq, causal at every shorter Sq; lengths 0,
 *    1, odd, capacity - 1, capacity, past the capacity, negative, random, one
 *    long and the rest short; poisoned tails (NaN, Inf, garbage K/V and
 *    page-table entries past each length); capacity 1 (one page when paged),
 *    balanced and (INGOT_BALANCE=0) in one uniform segment, and an odd
 *    capacity; a long cache with many segments (the wide merge,
 *    more than 16 of them); and, for the row-wave kernels, groups whose last row
 *    block leaves a wave partly or wholly padding. Outputs are poisoned before
 *    each execute; O and LSE (where the kernel has it) are compared with the
 *    reference.
 *
 * Usage: <binary> [w64_pack_dir [shipped_pack_dir [selftest.cubin]]]; INGOT_WAVE64_ONLY=text
 * runs only the kernels whose names hold it. Exit 77
 * without a CUDA device (after step 1), 1 on any failure. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_harness.h"
#include "gpu_mem.h"
#include "reference.h"

#define TEST_NAME "test_gpu_wave64"
#define ARCH "sm_90_w64"
#define EMULATED "gfx942"
#define SHIPPED_PREFIX "attention_decode_"
#define W64_PREFIX "attention_decode_w64_"

#ifndef INGOT_WAVE64_PACK_DIR
#define INGOT_WAVE64_PACK_DIR "build/packs/attention_decode_w64"
#endif
#ifndef INGOT_WAVE64_SHIPPED_PACK_DIR
#define INGOT_WAVE64_SHIPPED_PACK_DIR "build/packs/attention_decode"
#endif
#ifndef INGOT_WAVE64_SELFTEST
#define INGOT_WAVE64_SELFTEST "build/bin/test_gpu_wave64_selftest.cubin"
#endif

/* ---- 1. the instance list ---------------------------------------------------------- */

static int check_instance_list(const char *w64_dir, const char *shipped_dir) {
  dh_kernel *gfx = NULL, *w64 = NULL;
  const int ng = dh_pack_kernels(shipped_dir, EMULATED, &gfx);
  const int nw = dh_pack_kernels(w64_dir, ARCH, &w64);
  int failures = 0, shipped = 0, emulated = 0;
  if (ng < 0 || nw < 0) {
    fprintf(stderr, "FAIL: cannot read the packs %s and %s\n", shipped_dir, w64_dir);
    free(gfx), free(w64);
    return 1;
  }
  for (int i = 0; i < nw; ++i) emulated += w64[i].has_arch;
  for (int i = 0; i < ng; ++i) {
    if (!gfx[i].has_arch) continue;
    ++shipped;
    char want[200];
    const size_t n = strlen(SHIPPED_PREFIX);
    if (strncmp(gfx[i].name, SHIPPED_PREFIX, n) != 0) {
      fprintf(stderr, "FAIL: shipped kernel %s does not start with %s\n", gfx[i].name, SHIPPED_PREFIX);
      ++failures;
      continue;
    }
    snprintf(want, sizeof want, "%s%s", W64_PREFIX, gfx[i].name + n);
    const dh_kernel *k = dh_kernel_named(w64, nw, want);
    if (k == NULL || !k->has_arch) {
      fprintf(stderr, "FAIL: the %s kernel %s has no %s twin %s in %s\n", EMULATED, gfx[i].name, ARCH, want,
              w64_dir);
      ++failures;
    }
  }
  if (shipped == 0 || shipped != emulated) {
    fprintf(stderr, "FAIL: %d %s kernels in %s, %d %s kernels in %s (allowed: the same, and some)\n", shipped,
            EMULATED, shipped_dir, emulated, ARCH, w64_dir);
    ++failures;
  }
  printf("%s: instance list: %d %s kernels of the shipped pack, %d %s kernels, %d missing\n", TEST_NAME, shipped,
         EMULATED, emulated, ARCH, failures);
  free(gfx), free(w64);
  return failures;
}

/* ---- 1b. the runtime opens and plans the pack on the host ------------------------------- */

/* A host context for sm_90_w64 opens the pack (every code object verified as the
 * device context would) and plans a graph of every kernel's own shape to that
 * kernel, with wave size 64 (the dispatch stub refuses a kernel of more threads
 * than a workgroup holds, and sizes the grid by the wave); a host context for
 * sm_90 must decline every such graph (its kernels are not sm_90's), and a host
 * context takes no ingot_context_set_arch. */
static int check_host_plans(const char *w64_dir) {
  int failures = 0, planned = 0, kernels = 0;
  ingot_context *ctx = NULL, *plain = NULL;
  dh_kernel *ks = NULL;
  if (ingot_context_create_host(ARCH, &ctx) != INGOT_OK || ingot_context_create_host("sm_90", &plain) != INGOT_OK) {
    fprintf(stderr, "FAIL: host contexts for %s and sm_90\n", ARCH);
    failures = 1;
    goto done;
  }
  if (ingot_context_set_arch(ctx, ARCH) != INGOT_INVALID_ARGUMENT ||
      strstr(ingot_context_last_error(ctx), "host context") == NULL) {
    fprintf(stderr, "FAIL: ingot_context_set_arch on a host context: not refused by name (%s)\n",
            ingot_context_last_error(ctx));
    ++failures;
  }
  if (ingot_context_open_pack(ctx, w64_dir) != INGOT_OK || ingot_context_open_pack(plain, w64_dir) != INGOT_OK) {
    fprintf(stderr, "FAIL: host contexts open %s: %s %s\n", w64_dir, ingot_context_last_error(ctx),
            ingot_context_last_error(plain));
    failures = 1;
    goto done;
  }
  const int n = dh_pack_kernels(w64_dir, ARCH, &ks);
  for (int i = 0; i < n; ++i) {
    const dh_kernel *k = &ks[i];
    if (!k->has_arch) continue;
    ++kernels;
    static const int caps[] = {256, 4096, 65536}, batches[] = {2, 4, 12, 16};
    int got = 0;
    for (int a = 0; a < 3 && !got; ++a) {
      for (int b = 0; b < 4 && !got; ++b) {
        const int page = k->paged ? k->page_size : 1;
        dh_shape sh = dh_shape_for_kernel(k, caps[a] / page * page, INGOT_MASK_CAUSAL);
        sh.batch = batches[b];
        dh_case c;
        char why[4096];
        if (dh_case_plan(&c, ctx, &sh, 1, DH_TAIL_RANDOM, why, sizeof why) == 0) {
          got = strcmp(ingot_plan_kernel_name(c.plan), k->name) == 0 && ingot_plan_num_splits(c.plan) >= 1;
          dh_case_destroy(&c);
        }
        if (a == 0 && b == 0) {
          const int rc = dh_case_plan(&c, plain, &sh, 1, DH_TAIL_RANDOM, why, sizeof why);
          if (rc != (int)INGOT_NO_MATCH || strstr(why, "arch") == NULL) {
            fprintf(stderr, "FAIL: a host context for sm_90 planned (or failed otherwise on) a graph of %s: %s\n",
                    k->name, rc == 0 ? ingot_plan_kernel_name(c.plan) : why);
            ++failures;
          }
          if (rc == 0) dh_case_destroy(&c);
        }
      }
    }
    if (!got) {
      fprintf(stderr, "FAIL: no graph of kernel %s's shape plans to it on a host context for %s\n", k->name, ARCH);
      ++failures;
    }
    planned += got;
  }
  printf("%s: host plans for %s: %d of %d kernels planned by a graph of their own shape\n", TEST_NAME, ARCH,
         planned, kernels);
  if (kernels == 0) ++failures;
done:
  free(ks);
  ingot_context_destroy(ctx);
  ingot_context_destroy(plain);
  return failures;
}

/* ---- 2. the primitives ------------------------------------------------------------------ */

/* The output layout of wave64_selftest.cu (its header comment). */
enum {
  kThreads = 256,
  kOuts = 192,
  kXor = 0,
  kXorLane = 64,
  kIdx = 65,
  kIdxLane = 129,
  kMax = 130,
  kSum = 131,
  kGroupSums = 132,
  kTranspose = 135,
  kSync = 177,
  kWave0 = 180,
  kUsed = 181
};

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* TransposeReduce<V, LPT/2, V> over one wave's 64 lanes, as ingot_ad_split_simt.h runs it. */
static void transpose_reduce(int V, int LPT, float x[64][32]) {
  float send[64][32], keep[64][32];
  int cur = V;
  for (int off = LPT / 2; off >= 1; off /= 2) {
    if (cur > 1) {
      for (int l = 0; l < 64; ++l) {
        const int upper = ((l % LPT) & off) != 0;
        for (int i = 0; i < cur / 2; ++i) {
          send[l][i] = upper ? x[l][i] : x[l][i + cur / 2];
          keep[l][i] = upper ? x[l][i + cur / 2] : x[l][i];
        }
      }
      for (int l = 0; l < 64; ++l)
        for (int i = 0; i < cur / 2; ++i) x[l][i] = keep[l][i] + send[l ^ off][i];
      cur /= 2;
    } else {
      float y[64];
      for (int l = 0; l < 64; ++l) y[l] = x[l][0] + x[l ^ off][0];
      for (int l = 0; l < 64; ++l) x[l][0] = y[l];
    }
  }
}

/* What every thread's outputs must be: AMD's ds_bpermute (lane index & 63) and the reductions in lane order. */
static void selftest_expected(const float *in, const int *masks, const int *srcs, uint32_t *want) {
  memset(want, 0, sizeof(uint32_t) * kThreads * kOuts);
  for (int w = 0; w < kThreads / 64; ++w) {
    const float *v = in + 64 * w;
    float mx[64], sm[64], t[64];
    for (int l = 0; l < 64; ++l) mx[l] = sm[l] = v[l];
    for (int off = 32; off >= 1; off /= 2) {
      for (int l = 0; l < 64; ++l) t[l] = fmaxf(mx[l], mx[l ^ off]);
      memcpy(mx, t, sizeof t);
      for (int l = 0; l < 64; ++l) t[l] = sm[l] + sm[l ^ off];
      memcpy(sm, t, sizeof t);
    }
    float gs[3][64];
    for (int g = 0; g < 3; ++g) {
      const int lpt = 8 << g;
      for (int l = 0; l < 64; ++l) gs[g][l] = v[l];
      for (int off = lpt; off < 64; off *= 2) {
        for (int l = 0; l < 64; ++l) t[l] = gs[g][l] + gs[g][l ^ off];
        memcpy(gs[g], t, sizeof t);
      }
    }
    static const int cases[4][2] = {{2, 8}, {16, 16}, {16, 32}, {8, 8}};
    static float x[4][64][32];
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 64; ++l)
        for (int i = 0; i < cases[c][0]; ++i) x[c][l][i] = v[l] + (float)(i * 3);
      transpose_reduce(cases[c][0], cases[c][1], x[c]);
    }
    for (int l = 0; l < 64; ++l) {
      const int tid = 64 * w + l;
      uint32_t *o = want + (size_t)tid * kOuts;
      for (int m = 0; m < 64; ++m) o[kXor + m] = bits(v[(l ^ m) & 63]);
      o[kXorLane] = bits(v[(l ^ masks[tid]) & 63]);
      for (int s = 0; s < 64; ++s) o[kIdx + s] = bits(v[s]);
      o[kIdxLane] = bits(v[srcs[tid] & 63]);
      o[kMax] = bits(mx[l]);
      o[kSum] = bits(sm[l]);
      for (int g = 0; g < 3; ++g) o[kGroupSums + g] = bits(gs[g][l]);
      int n = kTranspose;
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < cases[c][0]; ++i) o[n++] = bits(x[c][l][i]);
      for (int it = 0; it < 3; ++it) o[kSync + it] = bits(v[(5 * l + it) & 63] + (float)it);
      o[kWave0] = w == 0 ? bits(sm[l]) : 0u;
    }
  }
}

static const char *selftest_section(int n) {
  if (n < kXorLane) return "shfl_xor (wave-uniform mask)";
  if (n == kXorLane) return "shfl_xor (per-lane mask)";
  if (n < kIdxLane) return "shfl_idx (wave-uniform source)";
  if (n == kIdxLane) return "shfl_idx (per-lane source)";
  if (n == kMax || n == kSum) return "butterfly max / sum over 64 lanes";
  if (n < kTranspose) return "sum over token groups";
  if (n < kSync) return "TransposeReduce";
  if (n < kWave0) return "sync_wave ordering";
  if (n == kWave0) return "wave 0 alone (the merge's reduction)";
  return "unused (must stay 0)";
}

/* The matrix-core emulation against the float64 product (wave64_mfma_selftest in
 * wave64_selftest.cu): 4 waves, bf16 (waves 0, 2) and fp16 (1, 3), fresh random
 * matrices, d poisoned with NaN first. */
static int run_mfma_selftest(const char *cubin, void *stream, size_t *compared) {
  enum { kM = 4 * 256 };
  void *module = NULL, *fn = NULL, *da = NULL, *db = NULL, *dc = NULL, *dd = NULL;
  uint16_t a[kM], b[kM];
  float c[kM], d[kM];
  int failures = 0;
  double max_err = 0;
  for (int i = 0; i < kM; ++i) {
    const ingot_dtype dt = (i / 256) % 2 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
    a[i] = ingot_ref_from_float((float)((int)(dh_rand() % 4001) - 2000) / 1000.0f, dt);
    b[i] = ingot_ref_from_float((float)((int)(dh_rand() % 4001) - 2000) / 1000.0f, dt);
    c[i] = (float)((int)(dh_rand() % 8001) - 4000) / 1000.0f;
  }
  if (gpu_module_load(cubin, &module) != 0 || gpu_module_function(module, "wave64_mfma_selftest", &fn) != 0 ||
      gpu_alloc(&da, sizeof a) != 0 || gpu_alloc(&db, sizeof b) != 0 || gpu_alloc(&dc, sizeof c) != 0 ||
      gpu_alloc(&dd, sizeof d) != 0 || gpu_upload(da, a, sizeof a) != 0 || gpu_upload(db, b, sizeof b) != 0 ||
      gpu_upload(dc, c, sizeof c) != 0 || gpu_memset8(dd, 0xFF, sizeof d) != 0) {
    fprintf(stderr, "FAIL: mfma self-test setup (%s): %s\n", cubin, gpu_mem_error());
    failures = 1;
    goto done;
  }
  void *params[] = {&da, &db, &dc, &dd};
  if (gpu_launch(fn, 1, kThreads, params, stream) != 0 || gpu_stream_sync(stream) != 0 ||
      gpu_download(d, dd, sizeof d) != 0) {
    fprintf(stderr, "FAIL: mfma self-test launch: %s\n", gpu_mem_error());
    failures = 1;
    goto done;
  }
  for (int w = 0; w < 4; ++w) {
    const ingot_dtype dt = w % 2 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
    failures += (int)ingot_ref_mfma16_check(a + w * 256, b + w * 256, c + w * 256, d + w * 256, dt,
                                            dt == INGOT_DTYPE_FP16 ? "mfma self-test fp16" : "mfma self-test bf16",
                                            &max_err);
  }
  *compared += kM;
  printf("%s: self-test of the matrix-core emulation (mfma16, bf16 and fp16, 4 waves): %d values, %d off the "
         "float64 product, max error %.3g\n", TEST_NAME, kM, failures, max_err);
done:
  gpu_free(da), gpu_free(db), gpu_free(dc), gpu_free(dd);
  if (module != NULL) gpu_module_unload(module);
  return failures;
}

static int run_selftest(const char *cubin, void *stream, size_t *compared) {
  void *module = NULL, *fn = NULL, *din = NULL, *dmask = NULL, *dsrc = NULL, *dout = NULL;
  float *in = malloc(kThreads * sizeof(float));
  int *masks = malloc(kThreads * sizeof(int)), *srcs = malloc(kThreads * sizeof(int));
  uint32_t *got = malloc(sizeof(uint32_t) * kThreads * kOuts), *want = malloc(sizeof(uint32_t) * kThreads * kOuts);
  int failures = 0;
  if (!in || !masks || !srcs || !got || !want) {
    fprintf(stderr, "FAIL: self-test: out of host memory\n");
    failures = 1;
    goto done;
  }
  for (int i = 0; i < kThreads; ++i) {
    /* distinct values with a random sign and scale: a lane read from the wrong place shows */
    in[i] = (float)((int)(dh_rand() % 2001) - 1000) / 64.0f + (float)i / 4096.0f;
    masks[i] = dh_rand_range(0, 255);
    srcs[i] = dh_rand_range(0, 255);
  }
  if (gpu_module_load(cubin, &module) != 0 || gpu_module_function(module, "wave64_selftest", &fn) != 0 ||
      gpu_alloc(&din, kThreads * sizeof(float)) != 0 || gpu_alloc(&dmask, kThreads * sizeof(int)) != 0 ||
      gpu_alloc(&dsrc, kThreads * sizeof(int)) != 0 || gpu_alloc(&dout, sizeof(uint32_t) * kThreads * kOuts) != 0 ||
      gpu_upload(din, in, kThreads * sizeof(float)) != 0 || gpu_upload(dmask, masks, kThreads * sizeof(int)) != 0 ||
      gpu_upload(dsrc, srcs, kThreads * sizeof(int)) != 0 ||
      gpu_memset8(dout, 0xFF, sizeof(uint32_t) * kThreads * kOuts) != 0) {
    fprintf(stderr, "FAIL: self-test setup (%s): %s\n", cubin, gpu_mem_error());
    failures = 1;
    goto done;
  }
  void *params[] = {&din, &dmask, &dsrc, &dout};
  if (gpu_launch(fn, 1, kThreads, params, stream) != 0 || gpu_stream_sync(stream) != 0 ||
      gpu_download(got, dout, sizeof(uint32_t) * kThreads * kOuts) != 0) {
    fprintf(stderr, "FAIL: self-test launch: %s\n", gpu_mem_error());
    failures = 1;
    goto done;
  }
  selftest_expected(in, masks, srcs, want);
  int bad_by_section[16] = {0};
  for (int t = 0; t < kThreads; ++t) {
    for (int n = 0; n < kOuts; ++n) {
      const size_t i = (size_t)t * kOuts + n;
      if (got[i] == want[i]) continue;
      if (failures < 12)
        fprintf(stderr, "FAIL: self-test %s: thread %d (wave %d lane %d) value %d = %.9g (0x%08x), expected %.9g "
                "(0x%08x)\n", selftest_section(n), t, t / 64, t % 64, n, from_bits(got[i]), got[i],
                from_bits(want[i]), want[i]);
      ++failures;
      bad_by_section[n < kXorLane ? 0 : n < kIdx ? 1 : n < kIdxLane ? 2 : n < kMax ? 3 : n < kGroupSums ? 4
                     : n < kTranspose ? 5 : n < kSync ? 6 : n < kWave0 ? 7 : n < kUsed ? 8 : 9]++;
    }
  }
  *compared += (size_t)kThreads * kOuts;
  printf("%s: self-test of the emulated wave: %d threads x %d values, %d mismatches (xor %d, xor per-lane %d, "
         "idx %d, idx per-lane %d, butterfly %d, group sums %d, transpose %d, sync_wave %d, wave 0 %d, unused %d)\n",
         TEST_NAME, kThreads, kUsed, failures, bad_by_section[0], bad_by_section[1], bad_by_section[2],
         bad_by_section[3], bad_by_section[4], bad_by_section[5], bad_by_section[6], bad_by_section[7],
         bad_by_section[8], bad_by_section[9]);
done:
  gpu_free(din), gpu_free(dmask), gpu_free(dsrc), gpu_free(dout);
  if (module != NULL) gpu_module_unload(module);
  free(in), free(masks), free(srcs), free(got), free(want);
  return failures;
}

/* ---- 3. the kernels --------------------------------------------------------------------- */

typedef struct tally {
  int executes, chosen, wide_merges, compact_merges, single;
  int max_splits;
  int padded_waves; /* row-wave cases on their own kernel whose last row block has padding waves */
} tally;

enum { kMaxBatch = 32 }; /* dh_case_for_kernel's batches: at most 32 */

/* The length patterns a case runs through, in order (lengths grow and shrink, so
 * positions that stop being valid are poisoned again). */
typedef enum pattern { P_ZERO, P_ONE, P_ODD, P_FULL, P_EDGES, P_RANDOM, P_ONE_LONG, P_COUNT } pattern;

static void lengths_for(pattern p, int batch, int cap, int sq, int32_t *lens) {
  for (int b = 0; b < batch; ++b) {
    switch (p) {
      case P_ZERO: lens[b] = 0; break;
      case P_ONE: lens[b] = 1; break;
      case P_ODD: lens[b] = cap == 1 ? 1 : 2 * dh_rand_range(0, (cap - 1) / 2) + 1; break;
      case P_FULL: lens[b] = cap; break;
      case P_EDGES: {
        const int e[4] = {cap - 1, cap + 1 + dh_rand_range(0, 1000), -1 - dh_rand_range(0, 1000), cap};
        lens[b] = e[b % 4];
        break;
      }
      case P_RANDOM: lens[b] = dh_rand_range(0, cap); break;
      case P_ONE_LONG: lens[b] = b == 0 ? cap - dh_rand_range(0, cap / 8) : dh_rand_range(0, sq); break;
      default: lens[b] = 0;
    }
  }
}

static const char *pattern_name(pattern p) {
  static const char *names[P_COUNT] = {"0", "1", "odd", "capacity", "cap-1/cap+n/negative/cap", "random",
                                       "one long"};
  return names[p];
}

/* Runs the patterns (a bit mask of 1 << pattern) on case c; returns failures. */
static int run_patterns(dh_case *c, unsigned which, int sq, void *stream, dh_stats *st, tally *t) {
  int failures = 0;
  char d[160], label[320];
  dh_describe(c, d, sizeof d);
  for (int p = 0; p < P_COUNT && failures == 0; ++p) {
    if (!(which & (1u << p))) continue;
    int32_t lens[kMaxBatch];
    lengths_for((pattern)p, c->s.batch, c->s.capacity, sq, lens);
    if (dh_set_lengths(c, lens) != 0 || dh_execute(c, stream) != 0) return failures + 1;
    st->executes++;
    t->executes++;
    snprintf(label, sizeof label, "%s lengths %s (L0 = %d, L%d = %d): kernel %s, %d splits", d,
             pattern_name((pattern)p), lens[0], c->s.batch - 1, lens[c->s.batch - 1],
             ingot_plan_kernel_name(c->plan), ingot_plan_num_splits(c->plan));
    failures += dh_check(c, label, st) != 0;
  }
  const int splits = ingot_plan_num_splits(c->plan);
  if (splits > t->max_splits) t->max_splits = splits;
  if (splits > 16) t->wide_merges++;
  else if (splits > 1) t->compact_merges++;
  else t->single++;
  return failures;
}

/* A case of k's shape at this capacity, batch and mask (heads: k's pair when q_heads is 0, else
 * Hq = q_heads over one KV head). */
static int shaped_case(dh_case *c, ingot_context *ctx, const dh_kernel *k, int cap, int batch, ingot_mask mask,
                       int sq, int q_heads, uint64_t seed, const dh_kernel *ks, int n, int *chosen) {
  dh_shape s = dh_shape_for_kernel(k, cap, mask);
  s.batch = batch;
  s.seq_q = sq;
  if (q_heads > 0) s.num_q_heads = q_heads, s.num_kv_heads = 1;
  char why[4096];
  if (dh_case_create(c, ctx, &s, seed, DH_TAIL_POISON, why, sizeof why) != 0) {
    fprintf(stderr, "FAIL: kernel %s at capacity %d, batch %d: %s\n", k->name, cap, batch, why);
    return -1;
  }
  const dh_kernel *picked = dh_kernel_named(ks, n, ingot_plan_kernel_name(c->plan));
  *chosen = picked ? (int)(picked - ks) : -1;
  return 0;
}

static int run_kernel(dh_session *sess, int i, int *hits, tally *t) {
  const dh_kernel *ks = sess->kernels, *k = &ks[i];
  const int n = sess->num_kernels;
  int failures = 0, chosen;
  uint64_t seed = sess->seed + 1000u * (uint64_t)(i + 1);
  dh_case c;
  char why[4096];
  /* Graphs of its own shape (the harness finds a capacity and batch whose plan picks k). */
  for (int sq = k->max_sq; sq >= 1; --sq) {
    for (int m = 0; m < 2; ++m) {
      if (m == 0 && sq != k->max_sq) continue; /* shorter Sq: causal only */
      const ingot_mask mask = m ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE;
      /* the shorter Sq of a speculative kernel with the causal mask aligned top-left */
      const int top_left = m == 1 && sq >= 2 && sq < k->max_sq;
      if (dh_case_for_kernel(&c, sess->ctx, k, mask, top_left, sq, ++seed, DH_TAIL_POISON, why, sizeof why) != 0) {
        fprintf(stderr, "FAIL: %s\n", why);
        ++failures;
        continue;
      }
      const dh_kernel *picked = dh_kernel_named(ks, n, ingot_plan_kernel_name(c.plan));
      if (picked != NULL) hits[picked - ks]++;
      const unsigned all = (1u << P_COUNT) - 1;
      const unsigned few = (1u << P_ODD) | (1u << P_EDGES) | (1u << P_ONE_LONG);
      failures += run_patterns(&c, sq == k->max_sq ? all : few, sq, sess->stream, &sess->stats, t);
      dh_case_destroy(&c);
    }
  }
  /* Capacity endpoints: one token (one page), and an odd capacity that is no whole number of tiles.
   * The one-token case runs twice: by default (three sequences of one segment each, which the
   * default balances) and with INGOT_BALANCE=0, the uniform plan of one segment, whose split
   * writes O itself with no merge (what B = 1 at a short capacity runs). */
  const int page = k->paged ? k->page_size : 0;
  const int small[3] = {page ? page : 1, page ? 13 * page : 203, page ? page : 1};
  for (int j = 0; j < 3; ++j) {
    if (small[j] < k->capacity[0] || small[j] > k->capacity[1]) continue;
    if (j == 2) setenv("INGOT_BALANCE", "0", 1); /* read when the plan is created (as test_gpu_splits) */
    const int rc = shaped_case(&c, sess->ctx, k, small[j], 3, j == 1 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE,
                               k->max_sq, 0, ++seed, ks, n, &chosen);
    if (j == 2) unsetenv("INGOT_BALANCE");
    if (rc != 0) {
      ++failures;
      continue;
    }
    if (chosen >= 0) hits[chosen]++;
    failures += run_patterns(&c, (1u << P_ZERO) | (1u << P_ONE) | (1u << P_ODD) | (1u << P_EDGES) | (1u << P_FULL),
                             k->max_sq, sess->stream, &sess->stats, t);
    dh_case_destroy(&c);
  }
  /* A long cache of one sequence and one KV head: more than 16 segments, the wide merge. */
  const int tile = dh_kernel_tile(k);
  const int longcap = 20 * 64 * tile;
  if (longcap >= k->capacity[0] && longcap <= k->capacity[1]) {
    if (shaped_case(&c, sess->ctx, k, longcap, 1, INGOT_MASK_CAUSAL, k->max_sq, k->group, ++seed, ks, n, &chosen) != 0) {
      ++failures;
    } else {
      if (chosen >= 0) hits[chosen]++;
      failures += run_patterns(&c, (1u << P_ODD) | (1u << P_FULL), k->max_sq, sess->stream, &sess->stats, t);
      dh_case_destroy(&c);
    }
  }
  /* Row waves: groups whose last row block leaves a wave partly padding (rows - wave rows + 1: the
   * last wave holds one row) and whole waves padding (rows + wave rows: a second block whose first
   * wave alone holds rows; the others load nothing but still meet the workgroup's barriers). */
  if (k->row_waves && k->max_sq == 1) {
    const int wave_rows = k->rows / k->waves;
    const int groups[2] = {k->rows - wave_rows + 1, k->rows + wave_rows};
    const int cap = k->capacity[0] > 4096 ? k->capacity[0] : (k->capacity[1] < 4096 ? k->capacity[1] : 4096);
    for (int j = 0; j < 2; ++j) {
      if (shaped_case(&c, sess->ctx, k, cap, 3, j ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE, 1, groups[j], ++seed, ks, n,
                      &chosen) != 0) {
        ++failures;
        continue;
      }
      if (chosen >= 0) hits[chosen]++;
      t->padded_waves += chosen == (int)(k - ks);
      failures += run_patterns(&c, (1u << P_ODD) | (1u << P_FULL) | (1u << P_RANDOM), 1, sess->stream, &sess->stats, t);
      dh_case_destroy(&c);
    }
  }
  return failures;
}

int main(int argc, char **argv) {
  const char *w64_dir = argc > 1 ? argv[1] : INGOT_WAVE64_PACK_DIR;
  const char *shipped_dir = argc > 2 ? argv[2] : INGOT_WAVE64_SHIPPED_PACK_DIR;
  const char *cubin = argc > 3 ? argv[3] : INGOT_WAVE64_SELFTEST;
  setvbuf(stdout, NULL, _IOLBF, 0);
  int other = check_instance_list(w64_dir, shipped_dir);
  if (other != 0) {
    printf("%s: FAIL: the wave64 pack is not the shipped pack's %s kernels\n", TEST_NAME, EMULATED);
    return 1;
  }
  if (check_host_plans(w64_dir) != 0) {
    printf("%s: FAIL: the runtime does not open or plan the wave64 pack on the host\n", TEST_NAME);
    return 1;
  }
  char *args[2] = {argv[0], (char *)w64_dir};
  dh_session sess;
  dh_session_open_arch(&sess, 2, args, TEST_NAME, ARCH);
  size_t selftest_values = 0;
  const int selftest_failures = run_selftest(cubin, sess.stream, &selftest_values) +
                                run_mfma_selftest(cubin, sess.stream, &selftest_values);
  other += selftest_failures;
  if (selftest_failures != 0)
    fprintf(stderr, "FAIL: the emulated primitives are wrong: the kernel results below cannot be trusted\n");

  const int n = sess.num_kernels;
  int *hits = calloc((size_t)n + 1, sizeof *hits);
  int eligible = 0, missed = 0, row_wave_kernels = 0;
  tally total;
  memset(&total, 0, sizeof total);
  /* INGOT_WAVE64_ONLY=<text>: only the kernels whose names hold it (e.g. for compute-sanitizer). */
  const char *only = getenv("INGOT_WAVE64_ONLY");
  if (only != NULL && only[0] != '\0') printf("%s: INGOT_WAVE64_ONLY=%s: only the kernels named so\n", TEST_NAME, only);
  for (int i = 0; i < n && hits != NULL; ++i) {
    if (!sess.kernels[i].has_arch) continue;
    if (only != NULL && only[0] != '\0' && strstr(sess.kernels[i].name, only) == NULL) {
      hits[i] = -1000000; /* not asked for: never a miss */
      continue;
    }
    ++eligible;
    tally t;
    memset(&t, 0, sizeof t);
    const size_t failed_before = sess.stats.failed;
    const int f = run_kernel(&sess, i, hits, &t);
    other += f;
    printf("  %s: %d executes, %zu values out of tolerance, %d failed cases; plans of 1 segment: %d, 2..16: %d, "
           "more: %d (most %d); padding-wave cases: %d\n", sess.kernels[i].name, t.executes,
           sess.stats.failed - failed_before, f, t.single, t.compact_merges, t.wide_merges, t.max_splits,
           t.padded_waves);
    total.executes += t.executes;
    total.wide_merges += t.wide_merges;
    total.compact_merges += t.compact_merges;
    total.single += t.single;
    total.padded_waves += t.padded_waves;
    row_wave_kernels += sess.kernels[i].row_waves && sess.kernels[i].max_sq == 1;
  }
  for (int i = 0; i < n && hits != NULL; ++i) {
    if (sess.kernels[i].has_arch && hits[i] == 0) {
      if (missed++ < 20) fprintf(stderr, "FAIL: kernel %s was never chosen\n", sess.kernels[i].name);
    }
  }
  if (total.single == 0) {
    fprintf(stderr, "FAIL: no plan had one segment: the split's own write of O never ran\n");
    ++other;
  }
  if (total.wide_merges == 0) {
    fprintf(stderr, "FAIL: no plan had more than 16 segments: the wide merge's 64-lane reduction never ran\n");
    ++other;
  }
  if (row_wave_kernels > 0 && total.padded_waves == 0) {
    fprintf(stderr, "FAIL: %d row-wave kernels, but no case with padding waves ran on one of them\n",
            row_wave_kernels);
    ++other;
  }
  if (eligible == 0) {
    fprintf(stderr, "FAIL: the pack has no kernel for %s\n", ARCH);
    ++other;
  }
  printf("%s: %d kernels for %s, %d never chosen; %d executes (plans of 1 segment: %d, 2..16: %d, more: %d; "
         "row-wave cases with padding waves on their kernel: %d); self-test %zu values, %d mismatches\n",
         TEST_NAME, eligible, ingot_context_arch(sess.ctx), missed, total.executes, total.single,
         total.compact_merges, total.wide_merges, total.padded_waves, selftest_values, selftest_failures);
  other += missed;
  free(hits);
  return dh_session_close(&sess, TEST_NAME, other);
}
