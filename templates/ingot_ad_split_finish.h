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
// row of the workgroup's rows; a wave's scores (SIMT path).
template <class T>
struct SplitShared {
  float scores[T::kWaves][T::kUseMma || T::kUseMfma ? 1 : T::kChunk * T::kWaveRows];
  float wave_max[T::kTokenWaves][T::kRows];
  float wave_sum[T::kTokenWaves][T::kRows];
  float wave_acc[T::kTokenWaves][T::kRows][T::kHeadDim];
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

// The end of a split workgroup: its waves' (max, sum, acc) sit in LDS; merge
// them and write O and LSE (one segment) or the segment's fp32 partial.
template <class T>
INGOT_DEVICE void finish_split(SplitShared<T> &sh, int tid, int b, int hkv, int split, int row0,
                               const Piece *pc, INGOT_AD_PARAMS) {
  constexpr int R = T::kRows, D = T::kHeadDim;
  sync_block();
  // Each thread produces some (row, d) outputs.
  const int rows_total = group * sq;
  const SplitTarget tgt = split_target<T>(pc, b, hkv, split, workspace, num_kv_heads, num_splits, rows_total, flags);
  RowPos pos = row_pos(row0 + tid / D, group);  // of row r below, stepped as r grows
  for (int idx = tid, r = tid / D; idx < R * D; idx += T::kThreads) {
    const int d = idx % D, row = row0 + idx / D;
    advance(pos, idx / D - r, group);
    r = idx / D;
    if (row >= rows_total) break;  // idx grows with r: the rest are padding too
    float m = kNegInf;
#pragma unroll
    for (int w = 0; w < T::kTokenWaves; ++w) m = max32(m, sh.wave_max[w][r]);
    const float ref = m == kNegInf ? 0.f : m;
    float num = 0.f, den = 0.f;
#pragma unroll
    for (int w = 0; w < T::kTokenWaves; ++w) {
      const float a = fast_exp2(sh.wave_max[w][r] - ref);
      num += a * sh.wave_acc[w][r][d];
      den += a * sh.wave_sum[w][r];
    }
    const float out = den > 0.f ? num * fast_rcp(den) : 0.f;
    const float lse2 = den > 0.f ? m + fast_log2(den) : kNegInf;
    if (tgt.direct) {
      store_row<T>(o, lse, b, hkv, pos, d, out, lse2, sq, num_kv_heads, group, o_stride_b, o_stride_h,
                   o_stride_s, flags);
    } else {
      const long long rs = (long long)row * tgt.stride + tgt.slot;
      if (d == 0) tgt.lse[rs] = lse2;
      tgt.o[rs * D + d] = out;
    }
  }
}

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_FINISH_H
