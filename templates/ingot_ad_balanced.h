// ingot_ad_balanced.h: the balanced split (decode_split_balanced, entry point
// balanced_split; ragged batches): each workgroup scans the batch's lengths into
// tile prefix sums, finds its piece and runs the split path on it. The
// arithmetic is ingot_attention_decode_balance.h, the pieces' workspace slots
// ingot_ad_addressing.h, the merge of their partials ingot_ad_merge.h
// (docs/design/balanced-split.md).
#ifndef INGOT_AD_BALANCED_H
#define INGOT_AD_BALANCED_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"
#include "ingot_attention_decode_balance.h"

namespace ingot {

// ---- balanced split (entry point balanced_split) -------------------------------------
// grid ((units + B - 1) * Hkv * ROW_BLOCKS, 1, 1), x = (s * Hkv + hkv) * ROW_BLOCKS +
// row block, num_splits = units, the batch in flags. Workgroup s runs the piece
// (w, b) with w + b = s, if there is one (at most one: along the batch each
// next piece has a larger w or b, never a smaller one), so each runs the split
// path once, as a uniform workgroup does. It scans the batch's lengths into tile
// prefix sums (B <= INGOT_AD_BALANCED_MAX_BATCH, read from L2; thread t a chunk,
// then a wave shuffle scan and the waves' totals in LDS); the thread whose chunk
// holds sequence b = s - w for a unit w of b's (unit_of(P_b) .. unit_of(P_b+1 - 1))
// finds the piece. Workgroup 0 also writes the prefix sums for the merge. Every
// decision comes from the lengths alone: the same lengths give the same pieces,
// slots and accumulation order, run after run.
template <class T>
struct BalanceShared {
  long long wave_total[T::kWaves];
  Piece piece;  // this workgroup's, when found
  int found;
};

// v from lane src (64 bits as two shuffles).
INGOT_DEVICE long long shfl_idx64(long long v, int src) {
  const int lo = shfl_idx((int)(unsigned)(unsigned long long)v, src);
  const int hi = shfl_idx((int)(unsigned)((unsigned long long)v >> 32), src);
  return (long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}

template <class T>
INGOT_DEVICE void decode_split_balanced(INGOT_AD_PARAMS) {
  INGOT_SHARED BalanceShared<T> bal;
  const int tid = thread_id(), wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int B = balanced_batch(flags), units = num_splits;
  const int s = split_block<T>(group, sq, num_kv_heads).split;  // the slot: w + b of this workgroup's piece
  grid_dependency_wait();  // the lengths may come from the grid before
  if (tid == 0) bal.found = 0;

  // Thread t sums the tiles of sequences [t * per, (t + 1) * per); a scan over
  // the threads gives each its chunk's first prefix.
  const int per = (B + T::kThreads - 1) / T::kThreads;
  const int j0 = tid * per, j1 = j0 + per < B ? j0 + per : B;
  long long mine = 0;
  for (int j = j0; j < j1; ++j) mine += ingot_ad_bal_tiles(load_dep(seq_lens + j), capacity, T::kTile);
  long long incl = mine;
#pragma unroll
  for (int off = 1; off < kWaveSize; off <<= 1) {
    const long long up = shfl_idx64(incl, lane >= off ? lane - off : lane);
    if (lane >= off) incl += up;
  }
  if (lane == kWaveSize - 1) bal.wave_total[wave] = incl;
  sync_block();
  long long before = 0, total = 0;
#pragma unroll
  for (int i = 0; i < T::kWaves; ++i) {
    before += i < wave ? bal.wave_total[i] : 0;
    total += bal.wave_total[i];
  }
  const long long active = ingot_ad_bal_active(total, units, ingot_ad_bal_fill(flags));
  long long *prefix =
      reinterpret_cast<long long *>(workspace + balanced_prefix_offset<T>(num_kv_heads, units, group * sq, flags));
  const bool writer = block_x() == 0;
  long long p = before + incl - mine;
  for (int j = j0; j < j1; ++j) {
    const int len = ingot_ad_bal_clamp(load_dep(seq_lens + j), capacity);
    const long long n = ingot_ad_bal_tiles(len, capacity, T::kTile);
    if (writer) prefix[j] = p;
    const long long w = (long long)s - j;  // the unit whose piece of j this slot would hold
    long long from = 0, to = 0;
    if (n > 0 && w >= 0 && w < active) ingot_ad_bal_piece(w, total, active, p, n, &from, &to);
    if (from < to) {  // unit w's share overlaps sequence j
      bal.piece.b = j;
      bal.piece.seg.valid = len;
      ingot_ad_bal_tokens(from, to, p, len, T::kTile, &bal.piece.seg.begin, &bal.piece.seg.end);
      bal.piece.slot = ingot_ad_bal_piece_slot(w, j, from, to, p, n);
      bal.found = 1;
    }
    p += n;
  }
  if (writer && tid == 0) prefix[B] = total;
  sync_block();
  if (!bal.found) return;  // no piece has this slot (uniform across the workgroup)
  const Piece pc = bal.piece;
  split_path<T>(INGOT_AD_ARGS, &pc);
}

}  // namespace ingot

#endif  // INGOT_AD_BALANCED_H
