// ingot_ad_balanced.h: the balanced split (decode_split_balanced, entry point
// balanced_split; ragged batches): each workgroup scans the batch's lengths into
// pieces and their slots, finds its own piece and runs the split path on it. The
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
// row block, num_splits = units, the batch in flags. Workgroup s runs the piece in
// slot s, if there is one (the pieces number at most active + B - 1 <= units +
// B - 1), so each runs the split path once, as a uniform workgroup does. It
// scans the batch's lengths twice (B <= INGOT_AD_BALANCED_MAX_BATCH, from L2;
// thread t a chunk of sequences, then a wave shuffle scan and the waves' totals
// in LDS): the tiles' total first, which sets the share, then each sequence's
// piece count in its size class (packed, one scan for the four classes), whose
// prefix is its first slot; a workgroup whose slot is past the batch's pieces
// leaves there. The thread whose chunk holds the sequence with slot s finds the
// piece. Workgroup 0 also writes the merge's list: the sequences with other than
// one piece (cut, or empty), numbered by a third scan. Every decision comes from
// the lengths alone: the same lengths give the same pieces, slots and
// accumulation order, run after run.
// An even batch of an even plan (INGOT_AD_FLAG_EVEN, units = K x B; no sequence
// past 17/16 of the mean, ingot_ad_bal_even) takes none of that past the first
// scan: workgroup s runs segment s % K of sequence s / K, as the uniform plan
// cuts it (segment_of), and workgroup 0 lists every sequence with its K slots
// (none when K is 1), so the merge is the same either way. The first scan also
// finds the longest sequence; the thread holding sequence s / K records the
// segment.
// In a ring kernel (T::kStages) its size is a multiple of 128 bytes: the ring,
// dynamic LDS placed after it, must start on a 128-byte line. A ring off the
// lines (here 112 bytes in) made each cp.async of a wave's two 256-byte rows ask
// L2 for its sectors twice: on an H100, 2x the L2 sectors, half of them hits,
// and the balanced split of the 4-stage ring 14-22% slower than the uniform
// split on the same pieces (decision 0037).
template <class T>
struct alignas(T::kStages > 0 ? 128 : alignof(unsigned long long)) BalanceShared {
  long long wave_tiles[T::kWaves];
  unsigned long long wave_pieces[T::kWaves];
  int wave_listed[T::kWaves];  // workgroup 0: the merge's list entries per wave
  int wave_most[T::kWaves];    // the waves' longest sequence (tiles)
  Piece piece;  // this workgroup's, when found
  int found;
};

// v from lane src (64 bits as two shuffles).
INGOT_DEVICE long long shfl_idx64(long long v, int src) {
  const int lo = shfl_idx((int)(unsigned)(unsigned long long)v, src);
  const int hi = shfl_idx((int)(unsigned)((unsigned long long)v >> 32), src);
  return (long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo);
}

// The inclusive prefix of v over the wave's lanes (64-bit sums).
INGOT_DEVICE long long wave_scan64(long long v, int lane) {
#pragma unroll
  for (int off = 1; off < kWaveSize; off <<= 1) {
    const long long up = shfl_idx64(v, lane >= off ? lane - off : lane);
    if (lane >= off) v += up;
  }
  return v;
}

// The largest v over the wave's lanes.
INGOT_DEVICE int wave_max32(int v, int lane) {
#pragma unroll
  for (int off = 1; off < kWaveSize; off <<= 1) {
    const int o = shfl_idx(v, lane ^ off);
    v = o > v ? o : v;
  }
  return v;
}

// One sequence's share of the plan: its clamped length, tiles, piece count and
// the pieces' size class (0 when it has none).
struct SeqPieces {
  int len;
  long long n, k;
  int cls;
};

template <class T>
INGOT_DEVICE SeqPieces seq_pieces(int raw_len, int capacity, long long total, long long active) {
  SeqPieces p;
  p.len = ingot_ad_bal_clamp(raw_len, capacity);
  p.n = ingot_ad_bal_tiles(p.len, capacity, T::kTile);
  p.k = ingot_ad_bal_pieces(p.n, total, active);
  p.cls = p.k > 0 ? ingot_ad_bal_class(p.n, p.k, total, active) : 0;
  return p;
}

// The scan's second and third passes (a batch that is not even): the batch's
// pieces and their slots, this workgroup's piece (bal.piece and bal.found,
// read after the caller's barrier; false: a slot past the batch's pieces)
// and, from workgroup 0 (writer), the merge's list.
template <class T>
INGOT_DEVICE bool balanced_pieces(BalanceShared<T> &bal, INGOT_AD_PARAMS, int B, int s, long long total, int j0,
                                  int j1, int len0, long long *list, bool writer, int tid, int wave, int lane) {
  const int units = num_splits;
  const long long active = ingot_ad_bal_active(total, units, ingot_ad_bal_fill(flags));

  // Then the pieces, counted per size class (packed fields; no carries). The
  // first sequence's pieces are kept for the third pass (the chunk's only one up
  // to B = threads: no second division on the way to the piece).
  unsigned long long counts = 0;
  int listed = 0;  // sequences with other than one piece: the merge's list entries
  SeqPieces first_seq{};
  for (int j = j0; j < j1; ++j) {
    const SeqPieces p = seq_pieces<T>(j == j0 ? len0 : load_dep(seq_lens + j), capacity, total, active);
    if (j == j0) first_seq = p;
    if (p.k > 0) counts += ingot_ad_bal_pack(p.k, p.cls);
    listed += p.k != 1;
  }
  const unsigned long long incl = (unsigned long long)wave_scan64((long long)counts, lane);
  if (lane == kWaveSize - 1) bal.wave_pieces[wave] = incl;
  sync_block();
  unsigned long long before = incl - counts, all = 0;
#pragma unroll
  for (int i = 0; i < T::kWaves; ++i) {
    before += i < wave ? bal.wave_pieces[i] : 0;
    all += bal.wave_pieces[i];
  }
  // A workgroup past the batch's pieces has nothing to run (uniform across it);
  // workgroup 0 writes the merge's list whatever the batch.
  long long pieces = 0;
#pragma unroll
  for (int c = 0; c < INGOT_AD_BAL_CLASSES; ++c) pieces += ingot_ad_bal_field(all, c);
  if (!writer && s >= pieces) return false;
  // Workgroup 0 numbers the merge's list entries (a scan of its own: the
  // others skip it, uniformly) and writes their count.
  int entry = 0;  // the next list entry of this thread's sequences
  if (writer) {
    const int listed_incl = (int)wave_scan64(listed, lane);
    if (lane == kWaveSize - 1) bal.wave_listed[wave] = listed_incl;
    sync_block();
    int count = 0;
    entry = listed_incl - listed;
#pragma unroll
    for (int i = 0; i < T::kWaves; ++i) {
      entry += i < wave ? bal.wave_listed[i] : 0;
      count += bal.wave_listed[i];
    }
    if (tid == 0) list[0] = count;
  }
  for (int j = j0; j < j1; ++j) {
    const SeqPieces p = j == j0 ? first_seq : seq_pieces<T>(load_dep(seq_lens + j), capacity, total, active);
    long long first = 0;
    if (p.k > 0) {
      first = ingot_ad_bal_first(before, all, p.cls);
      before += ingot_ad_bal_pack(p.k, p.cls);
    }
    if (writer && p.k != 1) list[1 + entry++] = ingot_ad_bal_entry(j, first, p.k);
    if (s >= first && s < first + p.k) {  // this slot holds piece s - first of sequence j
      long long lo, hi;
      ingot_ad_bal_span(s - first, p.k, p.n, &lo, &hi);
      bal.piece.b = j;
      bal.piece.seg.valid = p.len;
      ingot_ad_bal_tokens(lo, hi, p.len, T::kTile, &bal.piece.seg.begin, &bal.piece.seg.end);
      bal.piece.slot = p.k == 1 ? -1 : s;
      bal.found = 1;
    }
  }
  return true;
}

template <class T>
INGOT_DEVICE void decode_split_balanced(INGOT_AD_PARAMS) {
  INGOT_SHARED BalanceShared<T> bal;
  const int tid = thread_id(), wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int B = balanced_batch(flags), units = num_splits;
  const int s = split_block<T>(group, sq, num_kv_heads).split;  // this workgroup's slot
  grid_dependency_wait();  // the lengths may come from the grid before
  if (tid == 0) bal.found = 0;

  // Thread t holds sequences [t * per, (t + 1) * per). First the batch's tiles
  // and its longest sequence. Its first length is loaded once for the three
  // passes (the whole chunk up to B = threads).
  const int per = (B + T::kThreads - 1) / T::kThreads;
  const int j0 = tid * per, j1 = j0 + per < B ? j0 + per : B;
  const int len0 = j0 < j1 ? load_dep(seq_lens + j0) : 0;
  long long mine = 0;
  int most = 0;
  for (int j = j0; j < j1; ++j) {
    const int len = j == j0 ? len0 : load_dep(seq_lens + j);
    const int n = (int)ingot_ad_bal_tiles(len, capacity, T::kTile);
    mine += n;
    most = n > most ? n : most;
  }
  const long long tiles_incl = wave_scan64(mine, lane);
  most = wave_max32(most, lane);
  if (lane == kWaveSize - 1) bal.wave_tiles[wave] = tiles_incl;
  if (lane == 0) bal.wave_most[wave] = most;
  const bool writer = block_x() == 0;
  sync_block();
  // The merge's list, its address formed in each branch (formed once before them, it
  // cost gfx942's paged splits an SGPR pair parked in a VGPR lane).
  auto merge_list = [&] {
    return reinterpret_cast<long long *>(workspace + balanced_list_offset<T>(num_kv_heads, units, group * sq, flags));
  };
  long long total = 0;
  most = 0;
#pragma unroll
  for (int i = 0; i < T::kWaves; ++i) {
    total += bal.wave_tiles[i];
    most = bal.wave_most[i] > most ? bal.wave_most[i] : most;
  }
  if ((flags & INGOT_AD_FLAG_EVEN) && ingot_ad_bal_even(most, total, B)) {  // uniform across the grid
    // K segments a sequence (the plan's units are K x B); slot s holds sequence s / K's segment s % K.
    const int K = units >= B ? units / B : 1, even_b = s / K;
    long long *list = merge_list();
    if (writer)  // the merge's list: its count, then every sequence with its K segments (none where K is 1)
      for (int j = tid; j <= B; j += T::kThreads)
        list[j] = j == 0 ? (K > 1 ? B : 0) : ingot_ad_bal_entry(j - 1, (long long)(j - 1) * K, K);
    if (even_b >= B) return;  // a slot past the batch's segments (not workgroup 0's)
    if (even_b >= j0 && even_b < j1) {  // the thread that holds the sequence
      bal.piece.b = even_b;
      bal.piece.seg = segment_of<T>(even_b == j0 ? len0 : load_dep(seq_lens + even_b), capacity, s - even_b * K, K);
      bal.piece.slot = K == 1 ? -1 : s;
      bal.found = 1;
    }
  } else if (!balanced_pieces<T>(bal, INGOT_AD_ARGS, B, s, total, j0, j1, len0, merge_list(), writer, tid, wave,
                                  lane)) {
    return;
  }
  // Both ways the piece comes from LDS (the same code past here, and the same registers).
  sync_block();
  if (!bal.found) return;  // no piece has this slot (uniform across the workgroup)
  const Piece pc = bal.piece;
  if constexpr (T::kExactGroup > 0) {
    if (group == T::kExactGroup && sq == 1) {  // the kernel's own shape, as decode_split runs it
      split_path<T>(INGOT_AD_ARGS_EXACT(1, T::kExactGroup), &pc);
      return;
    }
  }
  split_path<T>(INGOT_AD_ARGS, &pc);
}

}  // namespace ingot

#endif  // INGOT_AD_BALANCED_H
