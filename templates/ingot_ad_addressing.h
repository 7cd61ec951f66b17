// ingot_ad_addressing.h: where a workgroup's work and results are: its rows
// (RowPos: row = query token x group + head in group; row_limit, the keys a row
// sees; row_blocks), its segment of the valid tokens (Lengths, segment), its
// place in the split grid (SplitBlock, split_block), the output (store_cols), and
// the workspace layout of the fp32 partials: the uniform plan's (lse_floats,
// workspace_block) and the balanced plan's (Piece, balanced_list_offset; where
// a split workgroup's rows go: SplitTarget, split_target). The balanced plan's
// arithmetic is ingot_attention_decode_balance.h.
#ifndef INGOT_AD_ADDRESSING_H
#define INGOT_AD_ADDRESSING_H

#include "ingot_ad_params.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"
#include "ingot_attention_decode_balance.h"

namespace ingot {

// ---- rows and segments ------------------------------------------------------

struct Lengths {
  int valid;  // clamped valid length of this sequence
  int begin, end;  // this segment's token range
};

// Token range of segment `split` out of `num_splits` of a sequence of raw
// device length len. Segments are whole tiles so that only the last one of a
// sequence is partial. (The balanced split's even batches cut theirs here too.)
template <class T>
INGOT_DEVICE Lengths segment_of(int len, int capacity, int split, int num_splits) {
  Lengths s;
  len = len < 0 ? 0 : (len > capacity ? capacity : len);
  s.valid = len;
  const int tiles = (len + T::kTile - 1) / T::kTile;
  const int tiles_per = (tiles + num_splits - 1) / num_splits;
  const long long b0 = (long long)split * tiles_per * T::kTile;
  const long long e0 = b0 + (long long)tiles_per * T::kTile;
  s.begin = (int)(b0 < len ? b0 : len);
  s.end = (int)(e0 < len ? e0 : len);
  return s;
}

// The same from the device length of sequence b (the uniform plan's split).
template <class T>
INGOT_DEVICE Lengths segment(const int *seq_lens, int b, int capacity, int split, int num_splits) {
  return segment_of<T>(load_dep(seq_lens + b), capacity, split, num_splits);
}

// A row's query head within its group (g) and query token (i): row = i x group + g.
// The group is a runtime value: a kernel divides by it once per row block and
// steps from there (advance), not once per row or output element.
struct RowPos {
  int g, i;
};
INGOT_DEVICE RowPos row_pos(int row, int group) { return RowPos{row % group, row / group}; }
// The row `by` rows further on (by small: at most a few steps of group).
INGOT_DEVICE void advance(RowPos &p, int by, int group) {
  p.g += by;
  while (p.g >= group) {
    p.g -= group;
    ++p.i;
  }
}

// Last key (exclusive) that the row at p may see; 0 for a padding row (query token past sq).
INGOT_DEVICE int row_limit(RowPos p, int valid, int sq, int flags) {
  const int i = p.i;     // query token of this row
  if (i >= sq) return 0;  // padding row (past group x sq)
  if (!(flags & kFlagCausal)) return valid;
  if (flags & kFlagTopLeft) return i + 1 < valid ? i + 1 : valid;
  return valid - sq + 1 + i;
}

INGOT_DEVICE int imin(int a, int b) { return a < b ? a : b; }

// The keys (exclusive) the row at p sees within segment seg, for the paths that mask only
// the chunks reaching a row's limit. A padding row (live false) gets no limit: its q is
// zeros and its results are never read, so only a live row's last chunk needs a mask.
INGOT_DEVICE int segment_limit(bool live, RowPos p, const Lengths &seg, int sq, int flags) {
  return live ? imin(seg.end, row_limit(p, seg.valid, sq, flags)) : 0x7fffffff;
}

// Row blocks of one KV head: group x sq rows, ROWS per workgroup.
template <class T>
INGOT_DEVICE int row_blocks(int group, int sq) {
  return (group * sq + T::kRows - 1) / T::kRows;
}

// A split workgroup's place in grid x = (split * Hkv + hkv) * row blocks + row block (one
// row block, the common case, takes no division by it).
struct SplitBlock {
  int row0, hkv, split;
};
template <class T>
INGOT_DEVICE SplitBlock split_block(int group, int sq, int num_kv_heads) {
  const int nrb = row_blocks<T>(group, sq);
  int x = block_x(), row0 = 0;
  if (nrb > 1) {
    row0 = (x % nrb) * T::kRows;
    x /= nrb;
  }
  return SplitBlock{row0, x % num_kv_heads, x / num_kv_heads};
}

// ---- the output ----------------------------------------------------------------

// Writes N consecutive output elements of a row from column d (and, from d == 0, the row's LSE).
template <class T, int N>
INGOT_DEVICE void store_cols(void *o, float *lse, int b, int hkv, RowPos p, int d, const float (&out)[N], float lse2,
                             int sq, int num_kv_heads, int group, long long o_stride_b, long long o_stride_h,
                             long long o_stride_s, int flags) {
  const int g = p.g, i = p.i;
  if (i >= sq) return;
  const long long h = (long long)hkv * group + g;
  u16 *op = static_cast<u16 *>(o) + (b * o_stride_b + h * o_stride_h + i * o_stride_s + d);
#pragma unroll
  for (int e = 0; e < N; ++e) op[e] = pack1<T::kDType>(out[e]);
  if (d == 0 && (flags & kFlagWriteLse))
    lse[((long long)b * num_kv_heads * group + h) * sq + i] = lse2 * kLn2;
}

// ---- the workspace ----------------------------------------------------------------

// Workspace (num_splits > 1), fp32, one block per (sequence, KV head) of
// rows_total = group x sq rows: lse2 [rows_total][num_splits] padded to 4
// floats, then O [rows_total][num_splits][D], so every O row is 16-byte
// aligned. The dispatch stub sizes it the same way.
template <class T>
INGOT_DEVICE long long lse_floats(int rows_total, int num_splits) {
  return ((long long)rows_total * num_splits + 3) / 4 * 4;
}
template <class T>
INGOT_DEVICE long long workspace_block(int b, int hkv, int num_kv_heads, int num_splits, int rows_total) {
  const long long per = lse_floats<T>(rows_total, num_splits) + (long long)rows_total * num_splits * T::kHeadDim;
  return ((long long)b * num_kv_heads + hkv) * per;
}

// ---- balanced split: pieces and where their results go ---------------------------
// (entry points balanced_split and balanced_merge; docs/INTERNALS.md "Balanced split";
// the arithmetic is ingot_attention_decode_balance.h). A balanced workgroup runs
// the split path once on its piece of a sequence; a uniform one runs it once
// with no piece (nullptr), as before.
struct Piece {
  int b;        // the sequence
  Lengths seg;  // its clamped length and the piece's token range (whole tiles from the start)
  int slot;     // the piece's workspace slot, or -1: the whole sequence, written to O
};

// The batch of a balanced plan (its split grid has no batch dimension).
INGOT_DEVICE int balanced_batch(int flags) { return flags >> INGOT_AD_FLAG_BATCH_SHIFT; }

// Balanced workspace: per KV head one block of the uniform layout with
// units + B slots in place of segments (workspace_block<T>(0, hkv, ...)),
// then the merge's list (ingot_ad_bal_entry): its count and an entry per sequence, int64.
template <class T>
INGOT_DEVICE long long balanced_list_offset(int num_kv_heads, int num_splits, int rows_total, int flags) {
  return workspace_block<T>(0, num_kv_heads, num_kv_heads,
                            (int)ingot_ad_bal_slots(num_splits, balanced_batch(flags)), rows_total);
}

// Where a split workgroup's rows go: O itself (direct), or row r's fp32 partial
// at lse[r * stride + slot] and o[(r * stride + slot) * D]. Uniform: segment
// `split` of the (b, hkv) block; balanced: the piece's slot of the hkv block.
struct SplitTarget {
  float *lse, *o;
  int stride, slot;
  bool direct;
};

template <class T>
INGOT_DEVICE SplitTarget split_target(const Piece *pc, int b, int hkv, int split, float *workspace,
                                      int num_kv_heads, int num_splits, int rows_total, int flags) {
  SplitTarget t;
  if (pc == nullptr) {
    t.lse = workspace + workspace_block<T>(b, hkv, num_kv_heads, num_splits, rows_total);
    t.o = t.lse + lse_floats<T>(rows_total, num_splits);
    t.stride = num_splits;
    t.slot = split;
    t.direct = num_splits == 1;
  } else {
    const int slots = (int)ingot_ad_bal_slots(num_splits, balanced_batch(flags));
    t.lse = workspace + workspace_block<T>(0, hkv, num_kv_heads, slots, rows_total);
    t.o = t.lse + lse_floats<T>(rows_total, slots);
    t.stride = slots;
    t.slot = pc->slot;
    t.direct = pc->slot < 0;
  }
  return t;
}

}  // namespace ingot

#endif  // INGOT_AD_ADDRESSING_H
