// ingot_ad_split_finish.h: what the two split paths share: the shared memory of
// a split workgroup's waves' results (SplitShared) and the workgroup's end
// (finish_split: the waves' (max, sum, acc) merged, then O and LSE written, or
// the segment's fp32 partial to the workspace).
#ifndef INGOT_AD_SPLIT_FINISH_H
#define INGOT_AD_SPLIT_FINISH_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_params.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

namespace ingot {

// The results of the waves that took different tokens (kTokenWaves), row by
// row of the workgroup's rows; a wave's scores (SIMT path). The matrix-core path
// under row_waves has nothing to merge and writes its rows from registers instead
// (decode_split_mfma; decision 0045).
template <class T>
struct SplitShared {
  float scores[T::kWaves][T::kUseMma || T::kUseMfma ? 1 : T::kChunk * T::kWaveRows];
  float wave_max[T::kTokenWaves][T::kRows];  // finish_split: then the waves' weights in the row's result
  float wave_sum[T::kTokenWaves][T::kRows];  // finish_split: then the row's LSE (log2) in [0]
  alignas(16) float wave_acc[T::kTokenWaves][T::kRows][T::kHeadDim];  // read 4 columns at a time
};

// Where wave `wave`'s results go: its slot of SplitShared and its first row there.
struct WaveSlot {
  int slot, row;
  bool live;  // the wave holds a row of the group (else all its rows are padding)
};
template <class T>
INGOT_DEVICE WaveSlot wave_slot(int wave, int row0, int rows_total) {
  if constexpr (T::kRowWaves) {
    const int row = wave * T::kWaveRows;
    return WaveSlot{0, row, row0 + row < rows_total};
  } else {
    return WaveSlot{wave, 0, true};
  }
}
// The wave's token offset within a step, in chunks (0 for every wave under row_waves).
template <class T>
INGOT_DEVICE int token_wave(int wave) {
  return T::kRowWaves ? 0 : wave;
}

// Writes N consecutive columns (N a multiple of 4) of row `row` (at pos) from column d, and from
// d == 0 the row's LSE (log2): to O where the segment is the whole sequence (tgt.direct), else as
// the segment's fp32 partial (every O row of the workspace is 16-byte aligned: workspace_block).
template <class T, int N>
INGOT_DEVICE void store_split_cols(const SplitTarget &tgt, int b, int hkv, int row, RowPos pos, int d,
                                   const float (&out)[N], float lse2, INGOT_AD_PARAMS) {
  static_assert(N % 4 == 0, "a partial's columns are stored 4 at a time");
  if (tgt.direct) {
    store_cols<T, N>(o, lse, b, hkv, pos, d, out, lse2, sq, num_kv_heads, group, o_stride_b, o_stride_h,
                     o_stride_s, flags);
  } else {
    const long long rs = (long long)row * tgt.stride + tgt.slot;
    if (d == 0) tgt.lse[rs] = lse2;
#pragma unroll
    for (int j = 0; j < N; j += 4)
      *reinterpret_cast<u32x4 *>(tgt.o + rs * T::kHeadDim + d + j) =
          u32x4{float_to_bits(out[j]), float_to_bits(out[j + 1]), float_to_bits(out[j + 2]),
                float_to_bits(out[j + 3])};
  }
}

// The end of a split workgroup: its waves' (max, sum, acc) sit in LDS; merge
// them and write O and LSE (one segment) or the segment's fp32 partial. A row's
// scalars first, once per row (its waves' weights, its LSE: the exponentials,
// the reciprocal and the logarithm), then the row's columns 4 at a time (the
// weighted sum of the waves' accumulators: multiplies and adds only).
template <class T>
INGOT_DEVICE void finish_split(SplitShared<T> &sh, int tid, int b, int hkv, int split, int row0,
                               const Piece *pc, INGOT_AD_PARAMS) {
  constexpr int R = T::kRows, D = T::kHeadDim, W = T::kTokenWaves, D4 = D / 4;
  static_assert(D % 4 == 0, "finish_split reads 4 columns at a time");
  sync_block();
  const int rows_total = group * sq;
#pragma unroll 1
  for (int r = tid; r < R && row0 + r < rows_total; r += T::kThreads) {
    float m = kNegInf;
#pragma unroll
    for (int w = 0; w < W; ++w) m = max32(m, sh.wave_max[w][r]);
    const float ref = m == kNegInf ? 0.f : m;
    float a[W], den = 0.f;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      a[w] = fast_exp2(sh.wave_max[w][r] - ref);
      den += a[w] * sh.wave_sum[w][r];
    }
    const float inv = den > 0.f ? fast_rcp(den) : 0.f;  // a row that saw no key: O = 0
#pragma unroll
    for (int w = 0; w < W; ++w) sh.wave_max[w][r] = a[w] * inv;
    sh.wave_sum[0][r] = den > 0.f ? m + fast_log2(den) : kNegInf;
  }
  sync_block();
  const SplitTarget tgt = split_target<T>(pc, b, hkv, split, workspace, num_kv_heads, num_splits, rows_total, flags);
  RowPos pos = row_pos(row0 + tid / D4, group);  // of row r below, stepped as r grows
#pragma unroll 1
  for (int idx = tid, r = tid / D4; idx < R * D4; idx += T::kThreads) {
    const int d = 4 * (idx % D4), row = row0 + idx / D4;
    advance(pos, idx / D4 - r, group);
    r = idx / D4;
    if (row >= rows_total) break;  // idx grows with r: the rest are padding too
    float out[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float a = sh.wave_max[w][r];
      const u32x4 x = *reinterpret_cast<const u32x4 *>(&sh.wave_acc[w][r][d]);
      out[0] += a * bits_to_float(x.x);
      out[1] += a * bits_to_float(x.y);
      out[2] += a * bits_to_float(x.z);
      out[3] += a * bits_to_float(x.w);
    }
    store_split_cols<T, 4>(tgt, b, hkv, row, pos, d, out, sh.wave_sum[0][r], INGOT_AD_ARGS);
  }
}

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_FINISH_H
