// ingot_ad_merge.h: the merge kernels (decode_merge; entry points merge and
// balanced_merge): where the partials of a (sequence, KV head) are (MergeSource,
// merge_source: the uniform plan's segments or the balanced plan's pieces), the
// compact merge (few segments: one thread per 4 columns of a row, no LDS) and the
// wide one (one workgroup per row and 32 columns, the segments shared through LDS).
#ifndef INGOT_AD_MERGE_H
#define INGOT_AD_MERGE_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_params.h"
#include "ingot_ad_trace.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"
#include "ingot_attention_decode_balance.h"
#include "ingot_attention_decode_limits.h"

namespace ingot {

// ---- merge kernel ---------------------------------------------------------------
// Wide merge (more than INGOT_AD_COMPACT_MERGE_SPLITS segments; the compact one
// is above decode_merge):
// grid (group x sq x D/COLS, Hkv, B), COLS = 32 (16 where D is no multiple of
// 32): one workgroup per row and COLS columns, so the partials are read by many
// workgroups at once. Its threads (4 waves, whatever the split kernel's) are
// COLS/4 column quads x kMergeThreads/(COLS/4) segment groups; each
// sums its segments' weighted partials with 16-byte loads, then the groups are
// added through LDS.

template <class T>
struct MergeShared {
  float weight[T::kMaxSplits];
  float lse2;
  float part[T::kMergeThreads / (T::kMergeCols / 4)][T::kMergeCols];
};

// Where the merge finds the partials of (b, hkv): count of them, row r's s-th at
// lse[r * stride + s] and o[(r * stride + s) * D]. Uniform: the (b, hkv) block's
// num_splits segments. Balanced: the sequence's pieces, slots first .. first +
// count - 1 of the hkv block (ingot_attention_decode_balance.h), from the record
// the split wrote; none for an empty sequence (the merge then writes O = 0,
// LSE = -inf), and skip when one piece held it whole (the split wrote O).
struct MergeSource {
  const float *lse, *o;
  int count, stride;
  bool skip;
};

// An int64 the grid before wrote, as two coherent 32-bit loads (load_dep).
INGOT_DEVICE long long load_dep64(const long long *p) {
  const int *w = reinterpret_cast<const int *>(p);
  const unsigned lo = (unsigned)load_dep(w), hi = (unsigned)load_dep(w + 1);
  return (long long)(((unsigned long long)hi << 32) | lo);
}

template <class T, bool kBalanced>
INGOT_DEVICE MergeSource merge_source(int b, int hkv, INGOT_AD_PARAMS) {
  MergeSource m;
  const int rows_total = group * sq;
  if constexpr (!kBalanced) {
    m.lse = workspace + workspace_block<T>(b, hkv, num_kv_heads, num_splits, rows_total);
    m.o = m.lse + lse_floats<T>(rows_total, num_splits);
    m.count = m.stride = num_splits;
    m.skip = false;
    return m;
  }
  const int B = balanced_batch(flags), slots = (int)ingot_ad_bal_slots(num_splits, B);
  const long long *record =
      reinterpret_cast<const long long *>(workspace + balanced_record_offset<T>(num_kv_heads, num_splits, rows_total, flags));
  const long long r = load_dep64(record + b);
  long long first = ingot_ad_bal_record_first(r), count = ingot_ad_bal_record_count(r);
  // Within the workspace's slots and the merge's LDS whatever the record says
  // (lengths that changed between the split's reads of them give a wrong but
  // bounded answer, never a read past the workspace).
  first = first < 0 ? 0 : first > slots ? slots : first;
  if (count > slots - first) count = slots - first;
  if (count > INGOT_AD_MAX_SPLITS) count = INGOT_AD_MAX_SPLITS;
  const float *blk = workspace + workspace_block<T>(0, hkv, num_kv_heads, slots, rows_total);
  m.lse = blk + first;
  m.o = blk + lse_floats<T>(rows_total, slots) + first * T::kHeadDim;
  m.count = (int)count;
  m.stride = slots;
  m.skip = count == 1;
  return m;
}

// Compact merge (num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS): many sequences
// and heads, few segments. Each thread owns 4 columns of one row and reads all
// the row's segment partials and lse values in one round trip; no LDS, no
// barrier, so thousands of (row, column) blocks take a few workgroups.
template <class T, bool kBalanced>
INGOT_DEVICE void merge_compact(INGOT_AD_PARAMS) {
  constexpr int D = T::kHeadDim, kMax = INGOT_AD_COMPACT_MERGE_SPLITS;
  const int item = block_x() * T::kMergeThreads + thread_id();
  const int hkv = block_y(), b = block_z();
  const int rows_total = group * sq;
  if (item >= rows_total * (D / 4)) return;
  const int row = item / (D / 4), c0 = item % (D / 4) * 4;
  const MergeSource src = merge_source<T, kBalanced>(b, hkv, INGOT_AD_ARGS);
  if (src.skip) return;
  const float *ws_lse = src.lse, *ws_o = src.o;
  const int S = src.count, stride = src.stride;
  float l[kMax];
  u32x4 part[kMax];
  float m = kNegInf;
#pragma unroll
  for (int s = 0; s < kMax; ++s) {
    const bool live = s < S;
    l[s] = live ? load_dep(ws_lse + (long long)row * stride + s) : kNegInf;
    part[s] = load16_dep_if(ws_o + ((long long)row * stride + s) * D + c0, live);
    m = max32(m, l[s]);
  }
  // A row no segment saw keeps 0 as its reference: exp2(-inf - 0) = 0, no NaN.
  const float ref = m == kNegInf ? 0.f : m;
  float den = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int s = 0; s < kMax; ++s) {
    const float w = fast_exp2(l[s] - ref);  // 0 past S (l = -inf), and the partial is 0 there too
    den += w;
    acc[0] += w * bits_to_float(part[s].x);
    acc[1] += w * bits_to_float(part[s].y);
    acc[2] += w * bits_to_float(part[s].z);
    acc[3] += w * bits_to_float(part[s].w);
  }
  const float inv = den > 0.f ? fast_rcp(den) : 0.f;
  const float lse2 = den > 0.f ? m + fast_log2(den) : kNegInf;
  const RowPos pos = row_pos(row, group);
#pragma unroll
  for (int e = 0; e < 4; ++e)
    store_row<T>(o, lse, b, hkv, pos, c0 + e, acc[e] * inv, lse2, sq, num_kv_heads, group, o_stride_b,
                 o_stride_h, o_stride_s, flags);
}

// kBalanced: the balanced plan's merge (entry point `balanced_merge`), which finds
// each sequence's pieces from the records its split wrote; else the uniform
// plan's (`merge`).
template <class T, bool kBalanced>
INGOT_DEVICE void merge_path(INGOT_AD_PARAMS) {
  MergeTrace<T, kBalanced> trace;  // knob `trace`: the phases' stamps (nothing without it)
  trace.stamp(kMergeStart);
  // Launched programmatically, this grid may start before the split grid ends.
  // Once it has, the next grid in the stream may be scheduled: it waits for
  // this one's completion in turn.
  grid_dependency_wait();
  trace.stamp(kMergeWaited);
  launch_dependents();
  if (num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS) {
    merge_compact<T, kBalanced>(INGOT_AD_ARGS);
    trace.end(workspace, group, sq, num_kv_heads, num_splits);
    return;
  }
  constexpr int D = T::kHeadDim, kCols = T::kMergeCols, kQuads = kCols / 4, kGroups = T::kMergeThreads / kQuads;
  constexpr int kPer = (T::kMaxSplits + kGroups - 1) / kGroups;       // partial loads per thread, at most
  constexpr int kLsePer = (T::kMaxSplits + kWaveSize - 1) / kWaveSize;  // lse loads per lane of wave 0
  static_assert(D % kCols == 0, "merge columns");
  INGOT_SHARED MergeShared<T> sh;
  const int tid = thread_id(), lane = tid % kWaveSize;
  const int row = block_x() / (D / kCols), c0 = (block_x() % (D / kCols)) * kCols;
  const int hkv = block_y(), b = block_z();
  const int quad = tid % kQuads, sgroup = tid / kQuads;  // column quad, segment group
  const MergeSource msrc = merge_source<T, kBalanced>(b, hkv, INGOT_AD_ARGS);
  if (msrc.skip) return;  // uniform across the workgroup: before any barrier
  const float *ws_lse = msrc.lse, *ws_o = msrc.o;
  const int S = msrc.count, stride = msrc.stride;

  // One round trip: every partial this thread needs and wave 0's lse values are in flight together.
  const float *src = ws_o + (long long)row * stride * D + c0 + quad * 4;
  u32x4 part[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int s = sgroup + i * kGroups;
    part[i] = load16_dep_if(src + (long long)s * D, s < S);
  }
  if (tid < kWaveSize) {
    const float *l = ws_lse + (long long)row * stride;
    float lv[kLsePer];
    float m = kNegInf;
#pragma unroll
    for (int i = 0; i < kLsePer; ++i) {
      const int s = lane + i * kWaveSize;
      lv[i] = s < S ? load_dep(l + s) : kNegInf;
      m = max32(m, lv[i]);
    }
#pragma unroll
    for (int off = kWaveSize / 2; off >= 1; off >>= 1) m = max32(m, shfl_xor(m, off));
    const float ref = m == kNegInf ? 0.f : m;
    float den = 0.f;
#pragma unroll
    for (int i = 0; i < kLsePer; ++i) {
      lv[i] = fast_exp2(lv[i] - ref);
      den += lv[i];
    }
#pragma unroll
    for (int off = kWaveSize / 2; off >= 1; off >>= 1) den += shfl_xor(den, off);
    const float inv = den > 0.f ? fast_rcp(den) : 0.f;
#pragma unroll
    for (int i = 0; i < kLsePer; ++i) {
      const int s = lane + i * kWaveSize;
      if (s < S) sh.weight[s] = lv[i] * inv;
    }
    if (lane == 0) sh.lse2 = den > 0.f ? m + fast_log2(den) : kNegInf;
  }
  sync_block();

  float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int s = sgroup + i * kGroups;
    const float w = s < S ? sh.weight[s] : 0.f;
    acc[0] += w * bits_to_float(part[i].x);
    acc[1] += w * bits_to_float(part[i].y);
    acc[2] += w * bits_to_float(part[i].z);
    acc[3] += w * bits_to_float(part[i].w);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) sh.part[sgroup][quad * 4 + e] = acc[e];
  sync_block();
  if (tid < kCols) {
    float out = 0.f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) out += sh.part[g][tid];
    store_row<T>(o, lse, b, hkv, row_pos(row, group), c0 + tid, out, sh.lse2, sq, num_kv_heads, group, o_stride_b,
                 o_stride_h, o_stride_s, flags);
  }
  trace.end(workspace, group, sq, num_kv_heads, num_splits);
}

// The merge entry points; the uniform plan's runs the kernel's own shape with
// sq and group as compile-time constants, as decode_split does (T::kExactGroup).
template <class T, bool kBalanced>
INGOT_DEVICE void decode_merge(INGOT_AD_PARAMS) {
  if constexpr (!kBalanced && T::kExactGroup > 0) {
    if (group == T::kExactGroup && sq == 1) {
      merge_path<T, kBalanced>(INGOT_AD_ARGS_EXACT(1, T::kExactGroup));
      return;
    }
  }
  merge_path<T, kBalanced>(INGOT_AD_ARGS);
}

}  // namespace ingot

#endif  // INGOT_AD_MERGE_H
