/* reference.c: the CPU reference of attention decode (see reference.h).
 *
 * Plain and slow on purpose: one (sequence, query head, query token) row at a
 * time, scores and the softmax in double, so it is obviously right rather than
 * fast. It reads K and V exactly as the graph lays them out (contiguous
 * [B, capacity, Hkv, D] or paged [pages, page_size, Hkv, D] with a page table),
 * and never touches a position at or past a row's last visible key, so tests can
 * fill the unused capacity with NaN and Inf and still compare.
 *
 * ingot_reference_decode returns 0 on success, and a negative value (nothing
 * written) on a graph it cannot evaluate:
 *   -1  a NULL pointer, an unsupported dtype, or shapes that do not fit together;
 *   -2  a page-table entry for a visible position names no page of K/V;
 *   -3  out of memory. */
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 16-bit floats ------------------------------------------------------------------ */

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in float */
    const float mag = (float)mant * 0x1p-24f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_to_float(sign | 0x7f800000u | (mant << 13)); /* Inf, NaN */
  return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));        /* rebias 15 -> 127 */
}

static uint16_t float_to_half(float x) {
  const uint32_t u = float_to_bits(x);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN stays NaN (quiet) */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to Inf */
  if (a < 0x38800000u) {
    /* below 2^-14: a subnormal half, in units of 2^-24 (scaling by 2^24 is exact,
     * and rint rounds to nearest even; 1024 units become the smallest normal). */
    const float units = rintf(fabsf(x) * 16777216.0f);
    return (uint16_t)(sign | (uint16_t)units);
  }
  uint32_t r = a - 0x38000000u; /* rebias the exponent: 127 -> 15 */
  r += 0x0fffu + ((r >> 13) & 1u); /* round the 23-bit mantissa to 10 bits, ties to even */
  return (uint16_t)(sign | (uint16_t)(r >> 13));
}

float ingot_ref_to_float(uint16_t bits, ingot_dtype dtype) {
  if (dtype == INGOT_DTYPE_FP16) return half_to_float(bits);
  return bits_to_float((uint32_t)bits << 16); /* bf16 */
}

uint16_t ingot_ref_from_float(float x, ingot_dtype dtype) {
  if (dtype == INGOT_DTYPE_FP16) return float_to_half(x);
  uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* nearest even; overflow carries into Inf correctly */
  return (uint16_t)(u >> 16);
}

/* ---- the reference ------------------------------------------------------------------- */

static int is_16bit_float(ingot_dtype d) { return d == INGOT_DTYPE_BF16 || d == INGOT_DTYPE_FP16; }

/* Element offset of token `pos` of sequence b, KV head h, element 0; -1 when the
 * page table names no page of the pool. */
static int64_t kv_offset(const ingot_attention_graph *g, const ingot_tensor_desc *t,
                         const int32_t *page_table, int64_t b, int64_t pos, int64_t h) {
  if (g->kv_layout == INGOT_KV_PAGED) {
    const int64_t page_size = t->dims[1];
    const int64_t slot = b * g->page_table.strides[0] + (pos / page_size) * g->page_table.strides[1];
    const int64_t page = page_table[slot];
    if (page < 0 || page >= t->dims[0]) return -1;
    return page * t->strides[0] + (pos % page_size) * t->strides[1] + h * t->strides[2];
  }
  return b * t->strides[0] + pos * t->strides[1] + h * t->strides[2];
}

static int check_graph(const ingot_attention_graph *g) {
  const ingot_tensor_desc *q = &g->q, *k = &g->k, *v = &g->v;
  if (q->rank != 4 || k->rank != 4 || v->rank != 4) return -1;
  if (!is_16bit_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype) return -1;
  for (int i = 0; i < 4; ++i)
    if (q->dims[i] <= 0 || k->dims[i] <= 0 || k->dims[i] != v->dims[i]) return -1;
  const int64_t hq = q->dims[1], hkv = k->dims[2], d = q->dims[3];
  if (k->dims[3] != d || hq % hkv != 0) return -1;
  if (g->capacity < 0) return -1;
  if (g->kv_layout == INGOT_KV_PAGED) {
    const ingot_tensor_desc *pt = &g->page_table;
    if (pt->rank != 2 || pt->dims[0] != q->dims[0] || pt->dims[1] <= 0) return -1;
    if (g->capacity > pt->dims[1] * k->dims[1]) return -1; /* positions without a table slot */
  } else if (g->kv_layout == INGOT_KV_CONTIGUOUS) {
    if (k->dims[0] != q->dims[0] || g->capacity > k->dims[1]) return -1;
  } else {
    return -1;
  }
  if (g->mask != INGOT_MASK_NONE && g->mask != INGOT_MASK_CAUSAL) return -1;
  return 0;
}

/* Keys [0, limit) are visible to query token i of sq, given the clamped length. */
static int64_t visible_keys(const ingot_attention_graph *g, int64_t len, int64_t sq, int64_t i) {
  int64_t limit = len;
  if (g->mask == INGOT_MASK_CAUSAL) {
    if (g->mask_align == INGOT_ALIGN_TOP_LEFT)
      limit = i + 1 < len ? i + 1 : len;
    else
      limit = len - sq + 1 + i; /* bottom right: the last query token sees every key */
  }
  return limit < 0 ? 0 : limit;
}

int ingot_reference_decode(const ingot_attention_graph *g, const uint16_t *q, const uint16_t *k,
                           const uint16_t *v, const int32_t *seq_lens, const int32_t *page_table,
                           float *o_out, float *lse_out) {
  if (g == NULL || q == NULL || k == NULL || v == NULL || seq_lens == NULL || o_out == NULL)
    return -1;
  if (check_graph(g) != 0) return -1;
  if (g->kv_layout == INGOT_KV_PAGED && page_table == NULL) return -1;

  const ingot_dtype dt = g->q.dtype;
  const int64_t nb = g->q.dims[0], hq = g->q.dims[1], sq = g->q.dims[2], d = g->q.dims[3];
  const int64_t group = hq / g->k.dims[2];
  const double scale = g->scale;

  const size_t cap = g->capacity > 0 ? (size_t)g->capacity : 1;
  double *scores = malloc(cap * sizeof *scores);
  double *qrow = malloc((size_t)d * sizeof *qrow);
  double *acc = malloc((size_t)d * sizeof *acc);
  int rc = (scores && qrow && acc) ? 0 : -3;

  for (int64_t b = 0; b < nb && rc == 0; ++b) {
    int64_t len = seq_lens[b];
    len = len < 0 ? 0 : (len > g->capacity ? g->capacity : len);
    for (int64_t h = 0; h < hq && rc == 0; ++h) {
      const int64_t hkv = h / group;
      for (int64_t i = 0; i < sq && rc == 0; ++i) {
        const int64_t row = (b * hq + h) * sq + i; /* contiguous [B, Hq, Sq] */
        const int64_t limit = visible_keys(g, len, sq, i);
        for (int64_t e = 0; e < d; ++e) {
          const int64_t qi = b * g->q.strides[0] + h * g->q.strides[1] + i * g->q.strides[2] +
                             e * g->q.strides[3];
          qrow[e] = ingot_ref_to_float(q[qi], dt);
          acc[e] = 0.0;
        }
        double max = -INFINITY;
        for (int64_t j = 0; j < limit; ++j) {
          const int64_t ko = kv_offset(g, &g->k, page_table, b, j, hkv);
          if (ko < 0) {
            rc = -2;
            break;
          }
          double s = 0.0;
          for (int64_t e = 0; e < d; ++e)
            s += qrow[e] * ingot_ref_to_float(k[ko + e * g->k.strides[3]], dt);
          scores[j] = s * scale;
          if (scores[j] > max) max = scores[j];
        }
        if (rc != 0) break;
        double sum = 0.0;
        for (int64_t j = 0; j < limit; ++j) {
          const double p = exp(scores[j] - max);
          const int64_t vo = kv_offset(g, &g->v, page_table, b, j, hkv);
          if (vo < 0) {
            rc = -2;
            break;
          }
          sum += p;
          for (int64_t e = 0; e < d; ++e)
            acc[e] += p * ingot_ref_to_float(v[vo + e * g->v.strides[3]], dt);
        }
        if (rc != 0) break;
        /* No visible key (L = 0 or a fully masked row): O = 0 and LSE = -inf. */
        for (int64_t e = 0; e < d; ++e) o_out[row * d + e] = limit > 0 ? (float)(acc[e] / sum) : 0.f;
        if (lse_out != NULL) lse_out[row] = limit > 0 ? (float)(max + log(sum)) : -INFINITY;
      }
    }
  }
  free(scores);
  free(qrow);
  free(acc);
  return rc;
}

size_t ingot_reference_compare(const uint16_t *out, ingot_dtype dtype, const float *ref, size_t n,
                               double atol, double rtol, double *max_err) {
  size_t failures = 0;
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double got = ingot_ref_to_float(out[i], dtype), want = ref[i];
    if (isnan(got) || isnan(want)) {
      ++failures;
      worst = INFINITY;
      continue;
    }
    const double err = (got == want) ? 0.0 : fabs(got - want); /* equal infinities: 0 */
    if (err > worst) worst = err;
    if (!(err <= atol + rtol * fabs(want))) ++failures;
  }
  if (max_err != NULL) *max_err = worst;
  return failures;
}

size_t ingot_ref_mfma16_check(const uint16_t *a, const uint16_t *b, const float *c, const float *d,
                              ingot_dtype dtype, const char *what, double *max_err) {
  size_t bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = c[i * 16 + j];
      for (int k = 0; k < 16; ++k)
        want += (double)ingot_ref_to_float(a[i * 16 + k], dtype) * (double)ingot_ref_to_float(b[k * 16 + j], dtype);
      const double got = d[i * 16 + j], err = fabs(got - want);
      if (err > *max_err || err != err) *max_err = err;
      if (!(err <= 1e-5 * (1.0 + fabs(want)))) {
        if (bad++ < 4) fprintf(stderr, "FAIL: %s D[%d][%d] = %.9g, expected %.9g\n", what, i, j, got, want);
      }
    }
  return bad;
}
