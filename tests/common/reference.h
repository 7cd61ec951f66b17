/* reference.h: the CPU reference of attention decode (fp64 accumulation) used
 * by every GPU test, by ingot-inspect run and by the benchmarks' checks. Not
 * part of libingot's public API; built as the static library ingot_testutil. */
#ifndef INGOT_REFERENCE_H
#define INGOT_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "ingot/ingot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bf16 / fp16 <-> float on the host (round to nearest even; NaN stays NaN). */
float ingot_ref_to_float(uint16_t bits, ingot_dtype dtype);
uint16_t ingot_ref_from_float(float x, ingot_dtype dtype);

/* Computes O (fp32, contiguous [B, Hq, Sq, D]) and, when lse_out is not NULL,
 * LSE (natural log, contiguous [B, Hq, Sq]) for the graph, reading host copies
 * of q, k, v (16-bit elements laid out by the graph's strides), seq_lens and
 * page_table. Valid lengths are clamped to [0, capacity]; positions at or past
 * them are never read; a row with no visible key gives O = 0, LSE = -inf. */
int ingot_reference_decode(const ingot_attention_graph *g, const uint16_t *q, const uint16_t *k,
                           const uint16_t *v, const int32_t *seq_lens, const int32_t *page_table,
                           float *o_out, float *lse_out);

/* Compares out (16-bit elements, contiguous [B,Hq,Sq,D]) with ref:
 * |out - ref| <= atol + rtol*|ref| for every element; NaN never passes.
 * Returns the number of failures; *max_err gets the largest |out - ref|. */
size_t ingot_reference_compare(const uint16_t *out, ingot_dtype dtype, const float *ref, size_t n,
                               double atol, double rtol, double *max_err);

/* The matrix-core emulation's self-test (tests/gpu: wave64_sim on the CPU,
 * test_gpu_wave64 on the H200): d, one 16 x 16 result of D = C + A B that mfma16
 * gave (a [i][k] and b [k][j] row-major 16-bit values of dtype, c and d float),
 * against the float64 product: |d - want| <= 1e-5 (1 + |want|), NaN never
 * passes. Prints the first few failures to stderr naming `what`; returns the
 * number of failures, and raises *max_err to the largest |d - want|. */
size_t ingot_ref_mfma16_check(const uint16_t *a, const uint16_t *b, const float *c, const float *d,
                              ingot_dtype dtype, const char *what, double *max_err);

#ifdef __cplusplus
}
#endif
#endif
