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

}  // namespace ingot

#endif  // INGOT_AD_TRACE_H
