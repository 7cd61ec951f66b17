// ingot_attention_decode.h: the attention decode algorithm, written once for
// every arch (the arch-specific part is ingot_arch.h). Generated sources
// include this header, bind a Traits type and instantiate the extern "C" entry
// points (split and merge; balanced_split and balanced_merge), which share one
// kernarg signature (INGOT_AD_PARAMS). The algorithm is in headers by concern,
// each of which includes what it needs:
//   ingot_ad_params.h        the kernarg signature, the flags bits
//   ingot_ad_traits.h        an instance's compile-time shape (DecodeTraits), element conversion
//   ingot_ad_addressing.h    rows, segments, the split grid, the output, the workspace layout
//   ingot_ad_pages.h         paged KV: a wave's page lookup
//   ingot_ad_split_finish.h  the end of a split workgroup, shared by both paths
//   ingot_ad_split_simt.h    the SIMT split kernel
//   ingot_ad_split_mma.h     the tensor-core split kernel (NVIDIA only)
//   ingot_ad_split.h         the split entry: which path an instance runs
//   ingot_ad_balanced.h      the balanced split (ragged batches)
//   ingot_ad_merge.h         the merge kernels, compact and wide
//   ingot_ad_trace.h         knob `trace`: phase stamps, nothing when off
// and the two C headers the planning shares: ingot_attention_decode_limits.h,
// ingot_attention_decode_balance.h.
//
// Work decomposition
//   split kernel: grid (num_splits * Hkv * ROW_BLOCKS, 1, B); one workgroup holds one
//   KV head of one sequence, ROWS of its (query head, query token) rows, and
//   one segment of the valid tokens. Each wave streams its own chunks of
//   TOKENS_PER_WAVE tokens: D/8 lanes share a token (16-byte loads, one load
//   instruction covers WAVE*8/D tokens), K and V of a whole chunk are in flight
//   before the first use, the q.k partial sums are reduced with a transposing
//   butterfly (about one shuffle per value instead of log2(D/8)), and the
//   softmax rescale is paid once per chunk, not per token. At the end the waves
//   of the workgroup merge their (max, sum, acc) through LDS. With one segment
//   the workgroup writes O (and LSE); with several it writes an fp32 partial
//   (O_s, lse_s) to the workspace and the merge kernel combines them.
//   merge kernel: grid (ROW_BLOCKS, Hkv, B).
//
// Safety: the valid length is read on the device and clamped to [0, capacity];
// K and V at or past it are never loaded (zeros stand in), their scores are
// -inf, and a fully masked row gives O = 0 and LSE = -inf, never NaN. Page
// table entries at or past the valid length are never read.
#ifndef INGOT_ATTENTION_DECODE_H
#define INGOT_ATTENTION_DECODE_H

#include "ingot_ad_balanced.h"
#include "ingot_ad_merge.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split.h"
#include "ingot_ad_traits.h"

#endif  // INGOT_ATTENTION_DECODE_H
