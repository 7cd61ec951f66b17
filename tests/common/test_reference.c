/* test_reference.c: host tests of the CPU reference itself. Every GPU test
 * trusts it, so it is checked against cases worked out by hand and against
 * invariants of softmax attention, on fresh random inputs (seed printed;
 * INGOT_TEST_SEED repeats a run). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference.h"
#include "test_check.h"

/* ---- random numbers (xorshift64*, seeded) ---- */
static uint64_t g_rng;
static uint64_t rnd(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545F4914F6CDD1DULL;
}
static float urand(float lo, float hi) {
  return lo + (hi - lo) * (float)((rnd() >> 40) * (1.0 / 16777216.0));
}
static void fill(uint16_t *x, size_t n, ingot_dtype dt, float lo, float hi) {
  for (size_t i = 0; i < n; ++i) x[i] = ingot_ref_from_float(urand(lo, hi), dt);
}

/* A dense graph: q/o [B,Hq,Sq,D], contiguous K/V [B,cap,Hkv,D], or paged K/V
 * [pages,page,Hkv,D] with a [B, cap/page] table. */
static ingot_attention_graph make_graph(ingot_dtype dt, int b, int hq, int hkv, int sq, int d,
                                        int cap, int page, int pages, ingot_mask mask) {
  ingot_attention_graph g;
  memset(&g, 0, sizeof g);
  g.q = (ingot_tensor_desc){dt, 4, {b, hq, sq, d}, {(int64_t)hq * sq * d, (int64_t)sq * d, d, 1},
                            INGOT_MEMORY_DEVICE};
  g.o = g.q;
  if (page > 0) {
    g.kv_layout = INGOT_KV_PAGED;
    g.k = (ingot_tensor_desc){dt, 4, {pages, page, hkv, d},
                              {(int64_t)page * hkv * d, (int64_t)hkv * d, d, 1},
                              INGOT_MEMORY_DEVICE};
    g.page_table = (ingot_tensor_desc){INGOT_DTYPE_INT32, 2, {b, cap / page}, {cap / page, 1},
                                       INGOT_MEMORY_DEVICE};
  } else {
    g.kv_layout = INGOT_KV_CONTIGUOUS;
    g.k = (ingot_tensor_desc){dt, 4, {b, cap, hkv, d},
                              {(int64_t)cap * hkv * d, (int64_t)hkv * d, d, 1},
                              INGOT_MEMORY_DEVICE};
  }
  g.v = g.k;
  g.lse = (ingot_tensor_desc){INGOT_DTYPE_FP32, 3, {b, hq, sq}, {(int64_t)hq * sq, sq, 1},
                              INGOT_MEMORY_DEVICE};
  g.seq_lens = (ingot_tensor_desc){INGOT_DTYPE_INT32, 1, {b}, {1}, INGOT_MEMORY_DEVICE};
  g.capacity = cap;
  g.mask = mask;
  g.mask_align = INGOT_ALIGN_BOTTOM_RIGHT;
  g.scale = 1.0f / sqrtf((float)d);
  return g;
}

static void test_conversions(void) {
  static const ingot_dtype dts[2] = {INGOT_DTYPE_BF16, INGOT_DTYPE_FP16};
  /* Every non-NaN bit pattern survives a round trip through float. */
  for (int t = 0; t < 2; ++t) {
    int bad = 0;
    for (uint32_t u = 0; u < 65536; ++u) {
      const float f = ingot_ref_to_float((uint16_t)u, dts[t]);
      if (isnan(f)) {
        if (!isnan(ingot_ref_to_float(ingot_ref_from_float(f, dts[t]), dts[t]))) ++bad;
      } else if (ingot_ref_from_float(f, dts[t]) != u) {
        ++bad;
      }
    }
    CHECK(bad == 0, "dtype %d: %d of 65536 bit patterns do not round-trip", (int)dts[t], bad);
  }
  CHECK(ingot_ref_from_float(1.0f, INGOT_DTYPE_BF16) == 0x3f80, "bf16(1)");
  CHECK(ingot_ref_from_float(1.0f, INGOT_DTYPE_FP16) == 0x3c00, "fp16(1)");
  CHECK(ingot_ref_from_float(-2.5f, INGOT_DTYPE_FP16) == 0xc100, "fp16(-2.5)");
  /* ties go to even */
  CHECK(ingot_ref_from_float(1.0f + 0x1p-8f, INGOT_DTYPE_BF16) == 0x3f80, "bf16 tie down");
  CHECK(ingot_ref_from_float(1.0f + 3 * 0x1p-8f, INGOT_DTYPE_BF16) == 0x3f82, "bf16 tie up");
  CHECK(ingot_ref_from_float(1.0f + 0x1p-11f, INGOT_DTYPE_FP16) == 0x3c00, "fp16 tie down");
  CHECK(ingot_ref_from_float(1.0f + 3 * 0x1p-11f, INGOT_DTYPE_FP16) == 0x3c02, "fp16 tie up");
  /* range ends of fp16 */
  CHECK(ingot_ref_from_float(65504.0f, INGOT_DTYPE_FP16) == 0x7bff, "fp16 max");
  CHECK(ingot_ref_from_float(65519.0f, INGOT_DTYPE_FP16) == 0x7bff, "fp16 just below Inf");
  CHECK(ingot_ref_from_float(65520.0f, INGOT_DTYPE_FP16) == 0x7c00, "fp16 overflow");
  CHECK(ingot_ref_from_float(0x1p-24f, INGOT_DTYPE_FP16) == 0x0001, "fp16 min subnormal");
  CHECK(ingot_ref_from_float(0x1p-25f, INGOT_DTYPE_FP16) == 0x0000, "fp16 half of min: even");
  CHECK(ingot_ref_from_float(0x1.8p-24f, INGOT_DTYPE_FP16) == 0x0002, "fp16 1.5 units: even");
  CHECK(ingot_ref_from_float(0x1.ffcp-15f, INGOT_DTYPE_FP16) == 0x0400,
        "fp16 rounds up into the smallest normal");
  CHECK(isnan(ingot_ref_to_float(ingot_ref_from_float(NAN, INGOT_DTYPE_BF16), INGOT_DTYPE_BF16)),
        "bf16 NaN");
  CHECK(ingot_ref_to_float(0xffff, INGOT_DTYPE_BF16) != ingot_ref_to_float(0xffff, INGOT_DTYPE_BF16),
        "0xffff poison is NaN in bf16");
  CHECK(isnan(ingot_ref_to_float(0xffff, INGOT_DTYPE_FP16)), "0xffff poison is NaN in fp16");
}

/* Two keys, worked out by hand: scores ln 3 and 0 give weights 3/4 and 1/4. */
static void test_by_hand(void) {
  for (int t = 0; t < 2; ++t) {
    const ingot_dtype dt = t ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
    ingot_attention_graph g = make_graph(dt, 1, 1, 1, 1, 2, 4, 0, 0, INGOT_MASK_NONE);
    g.scale = (float)log(3.0);
    uint16_t q[2], k[8], v[8];
    const float qf[2] = {1, 0};
    /* positions 2, 3 are past L = 2: NaN, never read */
    const float kf[8] = {1, 0, 0, 1, NAN, NAN, NAN, NAN};
    const float vf[8] = {2, -1, -2, 5, NAN, INFINITY, NAN, -INFINITY};
    for (int i = 0; i < 2; ++i) q[i] = ingot_ref_from_float(qf[i], dt);
    for (int i = 0; i < 8; ++i) {
      k[i] = ingot_ref_from_float(kf[i], dt);
      v[i] = ingot_ref_from_float(vf[i], dt);
    }
    const int32_t len = 2;
    float o[2] = {NAN, NAN}, lse = NAN;
    int rc = ingot_reference_decode(&g, q, k, v, &len, NULL, o, &lse);
    CHECK(rc == 0, "by hand: rc %d", rc);
    /* O = 3/4 * (2,-1) + 1/4 * (-2,5) = (1, 0.5); LSE = ln(3 + 1) */
    CHECK(fabsf(o[0] - 1.0f) < 1e-6f && fabsf(o[1] - 0.5f) < 1e-6f, "by hand: O = (%g, %g)",
          o[0], o[1]);
    CHECK(fabsf(lse - (float)log(4.0)) < 1e-6f, "by hand: LSE = %g, want ln 4", lse);
  }
}

/* All keys equal: every visible key has the same score, so O is the mean of the
 * visible V rows and LSE = score + ln(count). Checks causal bottom-right limits,
 * GQA head mapping, clamping and the empty cases with NaN past every limit. */
static void test_equal_keys(void) {
  const int b = 3, hq = 4, hkv = 2, sq = 3, d = 16, cap = 8;
  const ingot_dtype dt = INGOT_DTYPE_BF16;
  for (int causal = 0; causal < 2; ++causal) {
    ingot_attention_graph g =
        make_graph(dt, b, hq, hkv, sq, d, cap, 0, 0, causal ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
    const size_t nq = (size_t)b * hq * sq * d, nkv = (size_t)b * cap * hkv * d;
    uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2);
    float *o = malloc(nq * 4), *lse = malloc((size_t)b * hq * sq * 4);
    fill(q, nq, dt, -1, 1);
    fill(v, nkv, dt, -1, 1);
    uint16_t key[2][16]; /* one key vector per KV head */
    for (int h = 0; h < hkv; ++h) fill(key[h], (size_t)d, dt, -1, 1);
    /* lengths: a normal one, one past capacity (clamped), and one of 1 (causal: some rows empty) */
    const int32_t lens[3] = {5, cap + 7, 1};
    for (int s = 0; s < b; ++s) {
      const int valid = lens[s] > cap ? cap : lens[s];
      for (int t = 0; t < cap; ++t)
        for (int h = 0; h < hkv; ++h) {
          uint16_t *kp = k + (((size_t)s * cap + t) * hkv + h) * d;
          uint16_t *vp = v + (((size_t)s * cap + t) * hkv + h) * d;
          for (int e = 0; e < d; ++e) {
            kp[e] = t < valid ? key[h][e] : ingot_ref_from_float(NAN, dt);
            if (t >= valid) vp[e] = ingot_ref_from_float(e & 1 ? INFINITY : NAN, dt);
          }
        }
    }
    for (size_t i = 0; i < nq; ++i) o[i] = NAN;
    int rc = ingot_reference_decode(&g, q, k, v, lens, NULL, o, lse);
    CHECK(rc == 0, "equal keys: rc %d", rc);
    int bad = 0, rows = 0;
    for (int s = 0; s < b; ++s)
      for (int h = 0; h < hq; ++h)
        for (int i = 0; i < sq; ++i) {
          const int valid = lens[s] > cap ? cap : lens[s];
          int limit = causal ? valid - sq + 1 + i : valid;
          if (limit < 0) limit = 0;
          const int kvh = h / (hq / hkv);
          const size_t row = ((size_t)s * hq + h) * sq + i;
          double score = 0;
          for (int e = 0; e < d; ++e)
            score += (double)ingot_ref_to_float(q[row * d + e], dt) *
                     ingot_ref_to_float(key[kvh][e], dt);
          score *= g.scale;
          for (int e = 0; e < d; ++e) {
            double mean = 0;
            for (int t = 0; t < limit; ++t)
              mean += ingot_ref_to_float(v[(((size_t)s * cap + t) * hkv + kvh) * d + e], dt);
            if (limit > 0) mean /= limit;
            if (!(fabs(o[row * d + e] - mean) < 1e-5)) ++bad;
          }
          const double want_lse = limit > 0 ? score + log((double)limit) : -INFINITY;
          if (limit > 0 ? !(fabs(lse[row] - want_lse) < 1e-4) : !(isinf(lse[row]) && lse[row] < 0))
            ++bad;
          if (limit == 0) ++rows;
        }
    CHECK(bad == 0, "equal keys (causal %d): %d mismatches", causal, bad);
    CHECK(!causal || rows > 0, "causal case must include fully masked rows (got %d)", rows);
    free(q), free(k), free(v), free(o), free(lse);
  }
}

/* Random data: paged equals contiguous exactly; NaN tails and garbage page-table
 * entries past the length change nothing; L = 0 and negative give O = 0. */
static void test_paged_and_tails(void) {
  const int b = 2, hq = 8, hkv = 2, sq = 2, d = 32, page = 4, cap = 24, npp = cap / page;
  const int pages = b * npp + 3;
  const ingot_dtype dt = INGOT_DTYPE_FP16;
  ingot_attention_graph gc = make_graph(dt, b, hq, hkv, sq, d, cap, 0, 0, INGOT_MASK_CAUSAL);
  ingot_attention_graph gp = make_graph(dt, b, hq, hkv, sq, d, cap, page, pages, INGOT_MASK_CAUSAL);
  const size_t nq = (size_t)b * hq * sq * d, tok = (size_t)hkv * d;
  const size_t nc = (size_t)b * cap * tok, np = (size_t)pages * page * tok;
  uint16_t *q = malloc(nq * 2), *kc = malloc(nc * 2), *vc = malloc(nc * 2);
  uint16_t *kp = malloc(np * 2), *vp = malloc(np * 2);
  float *oc = malloc(nq * 4), *op = malloc(nq * 4), *lc = malloc(nq / d * 4), *lp = malloc(nq / d * 4);
  int32_t *table = malloc((size_t)b * npp * 4);
  fill(q, nq, dt, -2, 2);
  fill(kc, nc, dt, -1, 1);
  fill(vc, nc, dt, -1, 1);
  for (size_t i = 0; i < np; ++i) kp[i] = vp[i] = 0x7e00; /* NaN everywhere not copied */
  /* a random permutation of pages, then copy each sequence's tokens to its pages */
  int *perm = malloc((size_t)pages * sizeof *perm);
  for (int i = 0; i < pages; ++i) perm[i] = i;
  for (int i = pages - 1; i > 0; --i) {
    int j = (int)(rnd() % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  const int32_t lens[2] = {(int32_t)(5 + rnd() % (cap - 5)), 13};
  for (int s = 0; s < b; ++s)
    for (int p = 0; p < npp; ++p) {
      const int used = p * page < lens[s];
      table[s * npp + p] = used ? perm[s * npp + p] : (p & 1 ? -5 : 1 << 30); /* garbage */
      for (int t = 0; t < page && used; ++t) {
        const int pos = p * page + t;
        if (pos >= lens[s]) break; /* the rest of the last page stays NaN */
        memcpy(kp + ((size_t)table[s * npp + p] * page + t) * tok, kc + ((size_t)s * cap + pos) * tok, tok * 2);
        memcpy(vp + ((size_t)table[s * npp + p] * page + t) * tok, vc + ((size_t)s * cap + pos) * tok, tok * 2);
      }
    }
  int rc1 = ingot_reference_decode(&gc, q, kc, vc, lens, NULL, oc, lc);
  int rc2 = ingot_reference_decode(&gp, q, kp, vp, lens, table, op, lp);
  CHECK(rc1 == 0 && rc2 == 0, "paged vs contiguous: rc %d %d", rc1, rc2);
  CHECK(memcmp(oc, op, nq * 4) == 0, "paged O differs from contiguous O");
  CHECK(memcmp(lc, lp, nq / d * 4) == 0, "paged LSE differs from contiguous LSE");
  int finite = 1;
  for (size_t i = 0; i < nq; ++i) finite &= isfinite(op[i]) != 0;
  CHECK(finite, "NaN past the length leaked into O");

  /* A table entry for a visible position that names no page is an error, not a read. */
  const int32_t saved = table[0];
  table[0] = pages;
  CHECK(ingot_reference_decode(&gp, q, kp, vp, lens, table, op, lp) == -2, "bad page entry");
  table[0] = saved;

  /* L = 0 and L < 0: O = 0, LSE = -inf, and K/V are not needed at all */
  const int32_t empty[2] = {0, -3};
  for (size_t i = 0; i < nq; ++i) oc[i] = NAN;
  rc1 = ingot_reference_decode(&gc, q, kc, vc, empty, NULL, oc, lc);
  int zeros = rc1 == 0;
  for (size_t i = 0; i < nq; ++i) zeros &= oc[i] == 0.0f;
  for (size_t i = 0; i < nq / d; ++i) zeros &= isinf(lc[i]) && lc[i] < 0;
  CHECK(zeros, "L = 0 / L < 0 must give O = 0 and LSE = -inf");
  free(perm), free(q), free(kc), free(vc), free(kp), free(vp), free(oc), free(op), free(lc), free(lp),
      free(table);
}

/* A strided q (padding between tokens and heads) gives the same result as a dense one. */
static void test_strides(void) {
  const int b = 2, hq = 2, hkv = 1, sq = 2, d = 8, cap = 6;
  const ingot_dtype dt = INGOT_DTYPE_BF16;
  ingot_attention_graph g = make_graph(dt, b, hq, hkv, sq, d, cap, 0, 0, INGOT_MASK_NONE);
  ingot_attention_graph gs = g;
  const int64_t ss = d + 8, hs = sq * ss + 16, bs = hq * hs + 8;
  gs.q.strides[0] = bs, gs.q.strides[1] = hs, gs.q.strides[2] = ss;
  const size_t nq = (size_t)b * hq * sq * d, nkv = (size_t)b * cap * hkv * d;
  uint16_t *q = malloc(nq * 2), *qs = malloc((size_t)b * bs * 2), *k = malloc(nkv * 2),
           *v = malloc(nkv * 2);
  float *o1 = malloc(nq * 4), *o2 = malloc(nq * 4);
  fill(q, nq, dt, -1, 1);
  fill(k, nkv, dt, -1, 1);
  fill(v, nkv, dt, -1, 1);
  for (size_t i = 0; i < (size_t)b * bs; ++i) qs[i] = 0x7fc0; /* NaN in the padding */
  for (int s = 0; s < b; ++s)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < sq; ++i)
        memcpy(qs + s * bs + h * hs + i * ss, q + (((size_t)s * hq + h) * sq + i) * d, (size_t)d * 2);
  const int32_t lens[2] = {6, 3};
  int rc1 = ingot_reference_decode(&g, q, k, v, lens, NULL, o1, NULL);
  int rc2 = ingot_reference_decode(&gs, qs, k, v, lens, NULL, o2, NULL);
  CHECK(rc1 == 0 && rc2 == 0 && memcmp(o1, o2, nq * 4) == 0, "strided q differs (rc %d %d)", rc1,
        rc2);
  /* bad graphs are refused */
  ingot_attention_graph bad = g;
  bad.k.dims[2] = bad.v.dims[2] = 3; /* Hq = 2 is not a multiple of Hkv = 3 */
  CHECK(ingot_reference_decode(&bad, q, k, v, lens, NULL, o1, NULL) == -1, "Hq %% Hkv != 0");
  bad = g;
  bad.capacity = cap + 1; /* more than the K buffer holds */
  CHECK(ingot_reference_decode(&bad, q, k, v, lens, NULL, o1, NULL) == -1, "capacity > buffer");
  CHECK(ingot_reference_decode(&g, q, k, v, NULL, NULL, o1, NULL) == -1, "NULL seq_lens");
  free(q), free(qs), free(k), free(v), free(o1), free(o2);
}

static void test_compare(void) {
  const float ref[4] = {1.0f, -2.0f, 0.5f, 0.0f};
  uint16_t out[4];
  for (int i = 0; i < 4; ++i) out[i] = ingot_ref_from_float(ref[i], INGOT_DTYPE_BF16);
  double err = -1;
  CHECK(ingot_reference_compare(out, INGOT_DTYPE_BF16, ref, 4, 0.015, 0.015, &err) == 0 &&
            err == 0.0,
        "exact values must pass with max error 0 (got %g)", err);
  out[1] = ingot_ref_from_float(-2.0625f, INGOT_DTYPE_BF16); /* off by 0.0625 > 0.015 + 0.03 */
  CHECK(ingot_reference_compare(out, INGOT_DTYPE_BF16, ref, 4, 0.015, 0.015, &err) == 1 &&
            fabs(err - 0.0625) < 1e-9,
        "one element off by 0.0625 must fail once (max error %g)", err);
  out[1] = ingot_ref_from_float(-2.03125f, INGOT_DTYPE_BF16); /* 0.03125 <= 0.015 + 0.03 */
  CHECK(ingot_reference_compare(out, INGOT_DTYPE_BF16, ref, 4, 0.015, 0.015, &err) == 0,
        "within atol + rtol*|ref| must pass");
  out[3] = 0xffff; /* the poison pattern */
  CHECK(ingot_reference_compare(out, INGOT_DTYPE_BF16, ref, 4, 0.015, 0.015, &err) == 1 &&
            isinf(err),
        "NaN must never pass");
}

int main(void) {
  const char *env = getenv("INGOT_TEST_SEED");
  const uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
  g_rng = seed * 2654435761u + 0x9E3779B97F4A7C15ULL;
  if (g_rng == 0) g_rng = 1;
  printf("test_reference: seed %llu (set INGOT_TEST_SEED to repeat)\n", (unsigned long long)seed);
  test_conversions();
  test_by_hand();
  test_equal_keys();
  test_paged_and_tails();
  test_strides();
  test_compare();
  printf("test_reference: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
