// ingot_ad_trace.h: knob `trace` (an experiment: tensor-core path, NVIDIA; the
// generator allows it nowhere else). Each split and merge workgroup stamps its
// phases and writes a record past the workspace's partials (trace_base);
// bench/kernel_probe.py --trace reads them. SplitTrace and MergeTrace hold a
// workgroup's stamps and write its record; with T::kTrace 0 (every shipped
// kernel) they hold nothing and every call compiles to nothing.
#ifndef INGOT_AD_TRACE_H
#define INGOT_AD_TRACE_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

namespace ingot {

// The phases a workgroup stamps, in the order of its record.
enum SplitPhase { kSplitStart, kSplitWaited, kSplitLength, kSplitFirstChunk, kSplitLoopDone, kSplitEnd, kSplitPhases };
enum MergePhase { kMergeStart, kMergeWaited, kMergeEnd, kMergePhases };

// Off (T::kTrace 0): no state, and every call is empty (its arguments are plain
// values, so nothing of them is left either). Knob `trace` needs the NVIDIA
// layer's timers: on, these are the specializations below.
template <class T, bool kOn = T::kTrace>
struct SplitTrace {
  static_assert(!kOn, "knob trace: NVIDIA archs only");
  INGOT_DEVICE void stamp(int, int = 0) {}
  INGOT_DEVICE void stamp(int, float) {}
  INGOT_DEVICE void length_known(int) {}
  INGOT_DEVICE void chunk_done(bool, float) {}
  INGOT_DEVICE void end(int, bool, const Lengths &, float *, int, int, int) {}
};

template <class T, bool kBalanced, bool kOn = T::kTrace>
struct MergeTrace {
  static_assert(!kOn, "knob trace: NVIDIA archs only");
  INGOT_DEVICE void stamp(int) {}
  INGOT_DEVICE void end(float *, int, int, int, int) {}
};

#if INGOT_ARCH_NVIDIA
// Knob `trace`: the records sit past the partials of every (sequence, KV head),
// 16 words per split workgroup (sm, tokens, then global-timer ns and SM cycles at
// its start, after the wait, once the length is known, after its first chunk,
// after its loop, at its end), then 8 per merge workgroup (sm, index, then ns and
// cycles at its start, after the wait, at its end). Written only with a workspace.
template <class T>
INGOT_DEVICE unsigned long long *trace_base(float *workspace, int num_kv_heads, int num_splits, int rows_total) {
  return reinterpret_cast<unsigned long long *>(
      workspace + workspace_block<T>(grid_z(), 0, num_kv_heads, num_splits, rows_total));
}

// A workgroup's stamps: global-timer ns and SM cycles, each read once `dep` is
// available (stamp_after). (clk before ns: in this order the traced kernels
// compile to the code they had before the helper; the other differs in one
// register move.)
template <int N>
struct TraceStamps {
  unsigned long long clk[N] = {}, ns[N] = {};
  INGOT_DEVICE void stamp(int phase, int dep = 0) { stamp_after(dep, ns[phase], clk[phase]); }
  INGOT_DEVICE void stamp(int phase, float dep) { stamp(phase, (int)float_to_bits(dep)); }
};

template <class T>
struct SplitTrace<T, true> : TraceStamps<kSplitPhases> {
  using TraceStamps<kSplitPhases>::stamp;
  // Once the segment's end is known (it waits for the length only). The first
  // chunk's stamp is the length's until a chunk is done.
  INGOT_DEVICE void length_known(int seg_end) {
    stamp(kSplitLength, seg_end);
    ns[kSplitFirstChunk] = ns[kSplitLength], clk[kSplitFirstChunk] = clk[kSplitLength];
  }
  // After a chunk (first: it was the segment's first), once its results (dep) are.
  INGOT_DEVICE void chunk_done(bool first, float dep) {
    if (first) stamp(kSplitFirstChunk, dep);
  }
  // The workgroup's end, and its record from thread 0 (uniform: pc == nullptr;
  // a balanced plan writes no records).
  INGOT_DEVICE void end(int tid, bool uniform, const Lengths &seg, float *workspace, int num_kv_heads,
                        int num_splits, int rows_total) {
    stamp(kSplitEnd);
    if (tid == 0 && workspace != nullptr && uniform) {
      unsigned long long *rec =
          trace_base<T>(workspace, num_kv_heads, num_splits, rows_total) + 16 * ((long long)block_z() * grid_x() + block_x());
      rec[0] = sm_id();
      rec[1] = (unsigned long long)(seg.end - seg.begin);
#pragma unroll
      for (int i = 0; i < 6; ++i) rec[2 + i] = ns[i], rec[8 + i] = clk[i];
    }
  }
};

template <class T, bool kBalanced>
struct MergeTrace<T, kBalanced, true> : TraceStamps<kMergePhases> {
  // The workgroup's end and its record, once its work is issued (none in a balanced plan).
  INGOT_DEVICE void end(float *workspace, int group, int sq, int num_kv_heads, int num_splits) {
    stamp(kMergeEnd);
    if (thread_id() == 0 && workspace != nullptr && !kBalanced) {
      const long long split_blocks = (long long)row_blocks<T>(group, sq) * num_kv_heads * num_splits * grid_z();
      const long long index = ((long long)block_z() * grid_y() + block_y()) * grid_x() + block_x();
      unsigned long long *rec =
          trace_base<T>(workspace, num_kv_heads, num_splits, group * sq) + 16 * split_blocks + 8 * index;
      rec[0] = sm_id();
      rec[1] = (unsigned long long)index;
#pragma unroll
      for (int i = 0; i < 3; ++i) rec[2 + i] = ns[i], rec[5 + i] = clk[i];
    }
  }
};
#endif

}  // namespace ingot

#endif  // INGOT_AD_TRACE_H
