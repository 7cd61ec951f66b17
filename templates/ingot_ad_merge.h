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

// Where the merge finds the partials of sequence b's KV head hkv: count of
// them, row r's s-th at lse[r * stride + s] and o[(r * stride + s) * D].
// Uniform: the (b, hkv) block's num_splits segments. Balanced: from an entry
// of the merge's list (ingot_attention_decode_balance.h), the sequence's
// pieces, slots first .. first + count - 1 of the hkv block; none for an
// empty sequence (the merge then writes O = 0, LSE = -inf).
struct MergeSource {
  const float *lse, *o;
  int b, count, stride;
};

// An int64 the grid before wrote, as two coherent 32-bit loads (load_dep).
INGOT_DEVICE long long load_dep64(const long long *p) {
  const int *w = reinterpret_cast<const int *>(p);
  const unsigned lo = (unsigned)load_dep(w), hi = (unsigned)load_dep(w + 1);
  return (long long)(((unsigned long long)hi << 32) | lo);
}

template <class T>
INGOT_DEVICE MergeSource merge_source(int b, int hkv, INGOT_AD_PARAMS) {
  MergeSource m;
  const int rows_total = group * sq;
  m.lse = workspace + workspace_block<T>(b, hkv, num_kv_heads, num_splits, rows_total);
  m.o = m.lse + lse_floats<T>(rows_total, num_splits);
  m.b = b;
  m.count = m.stride = num_splits;
  return m;
}

template <class T>
INGOT_DEVICE MergeSource merge_source_entry(long long e, int hkv, INGOT_AD_PARAMS) {
  MergeSource m;
  const int rows_total = group * sq;
  const int B = balanced_batch(flags), slots = (int)ingot_ad_bal_slots(num_splits, B);
  long long b = ingot_ad_bal_entry_seq(e), first = ingot_ad_bal_entry_first(e), count = ingot_ad_bal_entry_count(e);
  // Within the batch, the workspace's slots and the merge's LDS whatever the
  // entry says (lengths that changed between the split's reads of them give a
  // wrong but bounded answer, never an access past the workspace or O).
  b = b < 0 ? 0 : b >= B ? B - 1 : b;
  if (first > slots) first = slots;
  if (count > slots - first) count = slots - first;
  if (count > INGOT_AD_MAX_SPLITS) count = INGOT_AD_MAX_SPLITS;
  const float *blk = workspace + workspace_block<T>(0, hkv, num_kv_heads, slots, rows_total);
  m.lse = blk + first;
  m.o = blk + lse_floats<T>(rows_total, slots) + first * T::kHeadDim;
  m.b = (int)b;
  m.count = (int)count;
  m.stride = slots;
  return m;
}

// Compact merge (num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS): many sequences
// and heads, few segments. Each thread owns 4 columns of one row and reads all
// the row's segment partials and lse values in one round trip; no LDS, no
// barrier, so thousands of (row, column) blocks take a few workgroups.
// tid, bx: the thread and block_x() (the balanced loop passes them opaque()).
template <class T>
INGOT_DEVICE void merge_compact(const MergeSource &src, int tid, int bx, int hkv, INGOT_AD_PARAMS) {
  constexpr int D = T::kHeadDim, kMax = INGOT_AD_COMPACT_MERGE_SPLITS;
  const int item = bx * T::kMergeThreads + tid;
  const int rows_total = group * sq;
  if (item >= rows_total * (D / 4)) return;
  const int row = item / (D / 4), c0 = item % (D / 4) * 4;
  const float *ws_lse = src.lse, *ws_o = src.o;
  const int S = src.count, stride = src.stride, b = src.b;
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
  float out[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) out[e] = acc[e] * inv;
  store_cols<T, 4>(o, lse, b, hkv, pos, c0, out, lse2, sq, num_kv_heads, group, o_stride_b, o_stride_h, o_stride_s,
                   flags);
}

// Wide merge (above): one sequence's row and column block. kBalanced: its
// workgroup merges several sequences in turn, so it ends with a barrier before
// the LDS is written again.
template <class T, bool kBalanced>
INGOT_DEVICE void merge_wide(const MergeSource &msrc, int tid, int bx, int hkv, INGOT_AD_PARAMS) {
  constexpr int D = T::kHeadDim, kCols = T::kMergeCols, kQuads = kCols / 4, kGroups = T::kMergeThreads / kQuads;
  constexpr int kPer = (T::kMaxSplits + kGroups - 1) / kGroups;       // partial loads per thread, at most
  constexpr int kLsePer = (T::kMaxSplits + kWaveSize - 1) / kWaveSize;  // lse loads per lane of wave 0
  static_assert(D % kCols == 0, "merge columns");
  INGOT_SHARED MergeShared<T> sh;
  const int lane = tid % kWaveSize;
  const int row = bx / (D / kCols), c0 = (bx % (D / kCols)) * kCols;
  const int quad = tid % kQuads, sgroup = tid / kQuads;  // column quad, segment group
  const float *ws_lse = msrc.lse, *ws_o = msrc.o;
  const int S = msrc.count, stride = msrc.stride, b = msrc.b;

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
    float out[1] = {0.f};
#pragma unroll
    for (int g = 0; g < kGroups; ++g) out[0] += sh.part[g][tid];
    store_cols<T, 1>(o, lse, b, hkv, row_pos(row, group), c0 + tid, out, sh.lse2, sq, num_kv_heads, group,
                     o_stride_b, o_stride_h, o_stride_s, flags);
  }
  if constexpr (kBalanced) sync_block();  // sh.part and sh.lse2 read before the next sequence writes them
}

// One sequence's merge, compact or wide by the plan's segments (or units).
// A balanced plan's sequence of at most INGOT_AD_COMPACT_MERGE_SPLITS pieces
// takes the compact merge in the wide grid too: its items go to the grid's
// first workgroups along x (the others have none and go on to the next entry),
// each reading its pieces in one round trip, with no LDS and no barrier. The
// wide merge's barriers cost the balanced merge 7.9 against 5.3 us at B = 8,
// 32/8, 8K on an H100 (decision 0038). One test, so one copy of each merge.
template <class T, bool kBalanced>
INGOT_DEVICE void merge_one(const MergeSource &src, int tid, int bx, int hkv, INGOT_AD_PARAMS) {
  if (num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS || (kBalanced && src.count <= INGOT_AD_COMPACT_MERGE_SPLITS))
    merge_compact<T>(src, tid, bx, hkv, INGOT_AD_ARGS);
  else
    merge_wide<T, kBalanced>(src, tid, bx, hkv, INGOT_AD_ARGS);
}

// kBalanced: the balanced plan's merge (entry point `balanced_merge`, grid
// (columns, Hkv, Z)): workgroup z merges the sequences of list entries z,
// z + Z, ... (ingot_ad_bal_merge_z), the next entry's load in flight while it
// merges one; the sequences it does not list were written by the split. Else
// the uniform plan's (`merge`, grid (columns, Hkv, B)): sequence block_z().
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
  const int hkv = block_y();
  if constexpr (!kBalanced) {
    merge_one<T, false>(merge_source<T>(block_z(), hkv, INGOT_AD_ARGS), thread_id(), block_x(), hkv, INGOT_AD_ARGS);
  } else {
    // The count and this workgroup's first entry load together (an entry past
    // the count is read, within the list's B, but not used), the next entry's
    // while a sequence is merged.
    const long long *list = reinterpret_cast<const long long *>(
        workspace + balanced_list_offset<T>(num_kv_heads, num_splits, group * sq, flags));
    const int B = balanced_batch(flags), Z = grid_z();
    int i = block_z();
    long long listed = load_dep64(list);
    long long e = i < B ? load_dep64(list + 1 + i) : 0;
    listed = listed < 0 ? 0 : listed > B ? B : listed;  // within the list whatever it says
    for (; i < listed; i += Z) {  // uniform across the workgroup
      const long long next = i + Z < B ? load_dep64(list + 1 + i + Z) : 0;
      const MergeSource src = merge_source_entry<T>(e, hkv, INGOT_AD_ARGS);
      // Opaque: what the merge computes from the thread and block is computed
      // per sequence, not held across the loop (which cost gfx942 a wave per SIMD).
      merge_one<T, true>(src, opaque(thread_id()), opaque_uniform(block_x()), hkv, INGOT_AD_ARGS);
      e = next;
    }
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
