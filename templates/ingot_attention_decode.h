// ingot_attention_decode.h: the attention decode algorithm, written once for
// every arch (the arch-specific part is ingot_arch.h). Generated sources
// include this header, bind a Traits type and instantiate two extern "C" entry
// points, split and merge, which share one kernarg signature (INGOT_AD_PARAMS).
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

#include "ingot_arch.h"
#include "ingot_attention_decode_balance.h"
#include "ingot_attention_decode_limits.h"

// One signature for both entry points; the UDD describes it argument by
// argument and the build checks each code object against it.
#define INGOT_AD_PARAMS                                                                       \
  const void *__restrict__ q, const void *__restrict__ k, const void *__restrict__ v,         \
      void *__restrict__ o, float *__restrict__ lse, const int *__restrict__ seq_lens,        \
      const int *__restrict__ page_table, float *__restrict__ workspace, long long q_stride_b, \
      long long q_stride_h, long long q_stride_s, long long k_stride_b, long long k_stride_t,  \
      long long k_stride_h, long long v_stride_b, long long v_stride_t, long long v_stride_h,  \
      long long o_stride_b, long long o_stride_h, long long o_stride_s,                        \
      long long page_table_stride, int capacity, int page_size, int sq, int num_splits,        \
      int num_kv_heads, int flags, float scale, int group

#define INGOT_AD_ARGS                                                                          \
  q, k, v, o, lse, seq_lens, page_table, workspace, q_stride_b, q_stride_h, q_stride_s,        \
      k_stride_b, k_stride_t, k_stride_h, v_stride_b, v_stride_t, v_stride_h, o_stride_b,      \
      o_stride_h, o_stride_s, page_table_stride, capacity, page_size, sq, num_splits,          \
      num_kv_heads, flags, scale, group

namespace ingot {

// kFlagTopLeft: causal with the mask aligned top-left (query i sees keys <= i)
// instead of bottom-right (keys < L - Sq + 1 + i).
// (bit 2 marks a balanced plan, bits 3..11 and 16..30 hold its fill and batch:
// ingot_attention_decode_balance.h)
enum { kFlagCausal = 1, kFlagWriteLse = 2, kFlagTopLeft = 1 << 12 };  // INGOT_AD_FLAG_TOP_LEFT
enum DType { kBF16 = 0, kFP16 = 1 };

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_inff();

// Compile-time shape of one kernel instance (the generator binds these).
enum Math { kMathSimt = 0, kMathAuto = 1 };


// The group (Hq / Hkv) is a runtime value (kernarg `group`): a workgroup holds
// ROWS (query head, query token) rows of one KV head, row = token * group + head
// in group, and group x Sq rows take ceil(group x Sq / ROWS) row blocks (rows
// past group x Sq are padding that reads nothing and writes nothing).
template <int DTYPE_, int HEAD_DIM_, int MAX_SQ_, int ROWS_, bool PAGED_, int WAVES_,
          int TOKENS_PER_WAVE_, int OCCUPANCY_ = 0, int MATH_ = kMathSimt, int STAGES_ = 0,
          int TRACE_ = 0, int DYNAMIC_LDS_ = 0>
struct DecodeTraits {
  // kMathAuto: tensor cores where the arch has them (sm_90: mma.sync), else the SIMT path.
  static constexpr bool kUseMma = MATH_ == kMathAuto && kHasMma16816;
  // The tensor-core path works in 64-element slices of D: other head dims are
  // padded up (the chunks past D are neither loaded nor stored; zeros stand in).
  static constexpr int kMmaDim = (HEAD_DIM_ + 63) / 64 * 64;
  // Tensor-core path only: 0 keeps the next chunk in registers; N >= 2 streams K
  // and V through an N-deep ring of shared-memory stages per wave (async copies).
  static constexpr int kStages = kUseMma ? STAGES_ : 0;
  static_assert(STAGES_ == 0 || (STAGES_ >= 2 && STAGES_ <= 8), "stages: 0 or 2..8");
  // Bytes of dynamic shared memory the split kernel takes its ring and results
  // from (0: static). The generator sets it where the ring is past the static
  // limit, and the runtime launches the split with that much.
  static constexpr int kDynamicLds = DYNAMIC_LDS_;
  static_assert(DYNAMIC_LDS_ == 0 || kStages > 0, "dynamic shared memory: ring kernels only");
  // Experiment (knob `trace`; tensor-core path, NVIDIA): each split and merge
  // workgroup stamps its phases into a record past the workspace's partials
  // (trace_base below; bench/kernel_probe.py --trace reads them).
  static constexpr bool kTrace = TRACE_ != 0 && kUseMma;
  static_assert(TRACE_ == 0 || TRACE_ == 1, "trace: 0 or 1");
  static constexpr int kOccupancy = OCCUPANCY_;  // workgroups per CU the build aims for (0: no hint)
  static constexpr int kDType = DTYPE_;
  static constexpr int kHeadDim = HEAD_DIM_;
  static constexpr int kMaxSq = MAX_SQ_;          // query tokens per sequence (speculative)
  static constexpr int kRows = ROWS_;             // rows held by one workgroup
  static constexpr bool kPaged = PAGED_;
  static constexpr int kWaves = WAVES_;
  static constexpr int kThreads = WAVES_ * kWaveSize;
  static constexpr int kMergeThreads = INGOT_AD_MERGE_WAVES * kWaveSize;  // the merge kernel's
  static constexpr int kVec = 8;                               // elements per 16-byte load
  // D/8 lanes hold a token's elements, 8 each; a token takes the next power of
  // two of lanes (LPT), the ones past D/8 idle (head dims 80, 96, 112, 160, 192).
  static constexpr int kDataLanes = HEAD_DIM_ / kVec;
  static constexpr int kLanesPerToken = kDataLanes <= 1 ? 1 : 2 << (31 - __builtin_clz(kDataLanes - 1));
  static constexpr int kTokensPerLoad = kWaveSize / kLanesPerToken;
  static constexpr int kChunk = TOKENS_PER_WAVE_;              // tokens per wave per step
  static constexpr int kLoads = kChunk / kTokensPerLoad;       // loads of K (and V) per lane
  static constexpr int kTile = kChunk * WAVES_;                // tokens per workgroup per step
  static constexpr int kPartials = kLoads * kRows;             // q.k partials per lane
  static constexpr int kMaxSplits = 256;                       // the plan never asks for more
  static constexpr int kMergeCols = INGOT_AD_MERGE_COLS(HEAD_DIM_);  // the wide merge's columns per workgroup
  static_assert(HEAD_DIM_ % 16 == 0 && kLanesPerToken <= kWaveSize, "head dim: a multiple of 16");
  static_assert(kChunk % kTokensPerLoad == 0 && kLoads >= 1, "tokens per wave");
  static_assert(ROWS_ >= 1 && ROWS_ <= 8, "rows");
};

// ---- element conversion ---------------------------------------------------

template <int DT>
INGOT_DEVICE void unpack8(const u32x4 &w, float (&f)[8]) {
  const u32 words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (DT == kBF16) {
      f[2 * i] = bits_to_float(words[i] << 16);
      f[2 * i + 1] = bits_to_float(words[i] & 0xffff0000u);
    } else {
      f[2 * i] = half_to_float((u16)(words[i] & 0xffffu));
      f[2 * i + 1] = half_to_float((u16)(words[i] >> 16));
    }
  }
}

template <int DT>
INGOT_DEVICE u16 pack1(float x) {
  if (DT == kBF16) {
    u32 u = float_to_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                       // nearest even
    return (u16)(u >> 16);
  } else {
    return float_to_half(x);
  }
}

// ---- the transposing butterfly ----------------------------------------------
// Reduces V values across LPT lanes of a group. At each step a lane keeps one
// half of its values and trades the other half with its partner, so after
// log2(LPT) steps lane li holds the sums of values [li*V/LPT, (li+1)*V/LPT).
// Cost: about V shuffles instead of V*log2(LPT). When V < LPT the remaining
// steps are a plain all-reduce (lanes li*V/LPT.. hold duplicates).
template <int CUR, int OFF, int V>
struct TransposeReduce {
  static INGOT_DEVICE void run(float (&x)[V], int lane) {
    if constexpr (OFF >= 1) {
      if constexpr (CUR > 1) {
        const bool upper = (lane & OFF) != 0;
#pragma unroll
        for (int i = 0; i < CUR / 2; ++i) {
          const float send = upper ? x[i] : x[i + CUR / 2];
          const float keep = upper ? x[i + CUR / 2] : x[i];
          x[i] = keep + shfl_xor(send, OFF);
        }
        TransposeReduce<CUR / 2, OFF / 2, V>::run(x, lane);
      } else {
        x[0] += shfl_xor(x[0], OFF);
        TransposeReduce<1, OFF / 2, V>::run(x, lane);
      }
    }
  }
};

// ---- addressing ----------------------------------------------------------------

struct Lengths {
  int valid;  // clamped valid length of this sequence
  int begin, end;  // this segment's token range
};

// Token range of segment `split` out of `num_splits`, from the device length.
// Segments are whole tiles so that only the last one of a sequence is partial.
template <class T>
INGOT_DEVICE Lengths segment(const int *seq_lens, int b, int capacity, int split, int num_splits) {
  Lengths s;
  int len = load_dep(seq_lens + b);
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

// Row blocks of one KV head: group x sq rows, ROWS per workgroup.
template <class T>
INGOT_DEVICE int row_blocks(int group, int sq) {
  return (group * sq + T::kRows - 1) / T::kRows;
}

template <class T>
INGOT_DEVICE void store_row(void *o, float *lse, int b, int hkv, RowPos p, int d, float out, float lse2, int sq,
                            int num_kv_heads, int group, long long o_stride_b, long long o_stride_h,
                            long long o_stride_s, int flags);

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

// Pages of a wave's chunks (paged KV). The wave's chunk j holds tokens
// seg.begin + j * TILE + wave * CHUNK onwards, CHUNK of them, CHUNK-aligned
// (page() finds j from that first token); pages hold a multiple of CHUNK
// tokens (the plan and the generator refuse smaller ones), so a chunk lies in
// one page. The wave reads its chunks' page-table entries kWaveSize at a time
// (lane l: chunk kWaveSize * blk + l), one block ahead of their use, and a
// chunk's page is one shuffle away instead of a page-table round trip ahead of
// its loads. Pages shorter than a chunk (page sizes 1, 2, 4, 8 below CHUNK):
// lane l holds the entry of token l of the wave's chunk, read one chunk ahead
// of its use, and a token's page is a shuffle away (token_page). Entries at or
// past the segment's end are never read. Contiguous KV: no state, page() is 0.
// (The AMD SIMT path reads its pages through ClampedPages below.)
template <class T>
struct ChunkPages {
  const int *table;
  int first;  // the wave's first token, as if its chunk 0 were at seg.begin
  int end, shift, lane;
  bool small;  // pages shorter than a chunk: per-token entries
  int cur, next, blk;  // entries of blocks blk and blk + 1 (lane l: chunk kWaveSize * blk + l)
  int scur, snext;     // small pages: the entries of token l of the current and the next chunk

  // Sequence b's page table (page_table_stride entries per sequence), pages of page_size tokens.
  INGOT_DEVICE ChunkPages(const int *page_table, long long page_table_stride, int b, int page_size,
                          const Lengths &seg, int wave, int lane_)
      : table(T::kPaged ? page_table + b * page_table_stride : nullptr),
        first(seg.begin + wave * T::kChunk), end(seg.end),
        shift(T::kPaged ? 31 - __builtin_clz((unsigned)page_size) : 0), lane(lane_),
        small(T::kPaged && page_size < T::kChunk), cur(0), next(0), blk(0), scur(0), snext(0) {
    if (T::kPaged && !kClampedLoads) {
      if (small) {
        snext = token_entry(first);
      } else {
        cur = load(0);
        next = load(1);
      }
    }
  }
  // Small pages: the entry of token tok0 + lane (lanes below CHUNK; 0 at or past the end).
  INGOT_DEVICE int token_entry(long long tok0) const {
    const long long tok = tok0 + lane;
    return load_dep_if(table + (tok >> shift), lane < T::kChunk && tok < end);
  }
  INGOT_DEVICE int load(int b) const {
    const long long tok = first + ((long long)b * kWaveSize + lane) * T::kTile;
    return load_dep_if(table + (tok >> shift), tok < end);
  }
  // The page of the wave's chunk at tok0 (its first token); tok0 must not
  // decrease from call to call, and every lane of the wave passes the same one.
  INGOT_DEVICE long long page(int tok0) {
    if constexpr (!T::kPaged) {
      return 0;
    } else {
      if (small) {  // token_page takes each token's entry from its lane
        scur = snext;
        snext = token_entry((long long)tok0 + T::kTile);
        return 0;
      }
      const int j = (int)((unsigned)(tok0 - first) / (unsigned)T::kTile);  // the wave's chunk index
      if (j >= (blk + 1) * kWaveSize) {
        cur = next;
        ++blk;
        next = load(blk + 1);
      }
      return shfl_idx(cur, j & (kWaveSize - 1));
    }
  }
  // The page of token pos of the chunk whose page() was chunk_page (0 at or past the
  // end). SMALL: the caller's copy of `small`, a constant at each call site (the
  // callers write their loads out once for each, so the common case carries no
  // per-token page); every lane of the wave calls it then (a shuffle).
  INGOT_DEVICE long long token_page(int pos, long long chunk_page, bool small_pages) const {
    if (!small_pages) return chunk_page;
    return shfl_idx(scur, pos & (T::kChunk - 1));
  }
};

// The SIMT path's pages with clamped loads (kClampedLoads, AMD): every load's
// token is clamped into the segment (clamp below), and its page-table entry is
// read two chunks ahead of the chunk's loads, unconditionally, so that no load
// waits on a branch. An entry per load and lane, whatever the page size (pages
// shorter than a chunk need them; longer ones give NL loads of one entry, the
// same cache line). On AMD loads return in order: the wait for a chunk's entries
// is a wait for the loads issued before them (the chunk before's K and V, used
// next anyway).
template <class T>
struct ClampedPages {
  static constexpr int NL = T::kLoads;
  const int *table;
  int begin, end, shift, grp;
  int ent[2][NL];  // entries of the next two chunks the wave loads
  INGOT_DEVICE ClampedPages(const int *page_table, long long page_table_stride, int b, int page_size,
                            const Lengths &seg, int wave, int grp_)
      : table(T::kPaged ? page_table + b * page_table_stride : nullptr), begin(seg.begin), end(seg.end),
        shift(T::kPaged ? 31 - __builtin_clz((unsigned)page_size) : 0), grp(grp_) {
    if constexpr (T::kPaged && kClampedLoads) {  // else no page is ever asked for
      // An empty segment loads nothing (its clamp would be token -1: ASan in wave64_sim).
      if (seg.begin < seg.end) {
        const int first = seg.begin + wave * T::kChunk;
        fetch(first, ent[0]);
        fetch(first + T::kTile, ent[1]);
      }
    }
  }
  // Token n*TPL + grp of the wave's chunk at tok0, clamped into [begin, end): a
  // token past the end reads the last valid token, a chunk wholly past the end the
  // segment's first chunk. Needs begin < end.
  INGOT_DEVICE int clamp(int tok0, int n) const {
    const int pos = tok0 + n * T::kTokensPerLoad + grp;
    const int pc = tok0 >= end ? begin + (pos - tok0) : pos;
    return pc < end ? pc : end - 1;
  }
  INGOT_DEVICE void fetch(int tok0, int (&e)[NL]) const {
#pragma unroll
    for (int n = 0; n < NL; ++n) e[n] = load_dep(table + (clamp(tok0, n) >> shift));
  }
  // The pages of the chunk at tok0 (the wave's chunks in order, one call each).
  INGOT_DEVICE void pages(int tok0, int (&out)[NL]) {
#pragma unroll
    for (int n = 0; n < NL; ++n) out[n] = ent[0][n], ent[0][n] = ent[1][n];
    fetch(tok0 + 2 * T::kTile, ent[1]);
  }
};

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
// the split path once per piece of its unit's share of the batch; a uniform one
// runs it once with no piece (nullptr), as before.
struct Piece {
  int b;        // the sequence
  Lengths seg;  // its clamped length and the piece's token range (whole tiles from the start)
  int slot;     // the piece's workspace slot (w + b), or -1: the whole sequence, written to O
};

// The batch of a balanced plan (its split grid has no batch dimension).
INGOT_DEVICE int balanced_batch(int flags) { return flags >> INGOT_AD_FLAG_BATCH_SHIFT; }

// Balanced workspace: per KV head one block of the uniform layout with
// units + B slots in place of segments (workspace_block<T>(0, hkv, ...)),
// then the batch's tile prefix sums P[0..B] as int64 (the merge's lookup).
template <class T>
INGOT_DEVICE long long balanced_prefix_offset(int num_kv_heads, int num_splits, int rows_total, int flags) {
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

// ---- split kernel ----------------------------------------------------------------

template <class T>
struct SplitShared {
  float scores[T::kWaves][T::kUseMma ? 1 : T::kChunk * T::kRows];
  float wave_max[T::kWaves][T::kRows];
  float wave_sum[T::kWaves][T::kRows];
  float wave_acc[T::kWaves][T::kRows][T::kHeadDim];
};

// The tensor-core path's shared-memory ring (kStages > 0): per wave and stage,
// the chunk's K rows then its V rows, D elements each. The waves' results reuse
// the same bytes once every wave is past its loop.
template <class T>
union alignas(16) SplitSmem {
  SplitShared<T> fin;
  u16 ring[T::kStages > 0 ? T::kWaves * T::kStages * 2 * T::kChunk * T::kMmaDim : 1];
};

// The split workgroup's shared memory: static, or dynamic when it is past the
// static limit (T::kDynamicLds, the launch's size, at least sizeof SplitSmem).
template <class T>
INGOT_DEVICE SplitSmem<T> &split_smem() {
  if constexpr (T::kDynamicLds > 0) {
    static_assert(sizeof(SplitSmem<T>) <= (unsigned)T::kDynamicLds, "dynamic LDS smaller than the ring");
    return *reinterpret_cast<SplitSmem<T> *>(dynamic_lds(T::kDynamicLds));
  } else {
    INGOT_SHARED SplitSmem<T> smem;
    return smem;
  }
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
    for (int w = 0; w < T::kWaves; ++w) m = max32(m, sh.wave_max[w][r]);
    const float ref = m == kNegInf ? 0.f : m;
    float num = 0.f, den = 0.f;
#pragma unroll
    for (int w = 0; w < T::kWaves; ++w) {
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

// pc: the piece a balanced workgroup runs (decode_split_balanced), nullptr in a
// uniform plan (sequence block_z(), segment `split`).
template <class T>
INGOT_DEVICE void decode_split_simt(INGOT_AD_PARAMS, const Piece *pc = nullptr) {
  constexpr int R = T::kRows, LPT = T::kLanesPerToken, NL = T::kLoads, TPL = T::kTokensPerLoad;
  constexpr int C = T::kChunk, DT = T::kDType;
  INGOT_SHARED SplitShared<T> sh;

  const int tid = thread_id();
  const int wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int li = lane % LPT;      // which 8 elements of D this lane holds
  const int grp = lane / LPT;     // which token of a load this lane reads
  const bool data_lane = li < T::kDataLanes;  // LPT > D/8: the lanes past D/8 idle
  // grid x = (split * Hkv + hkv) * row blocks + row block: the KV heads of one
  // segment are neighbours, so the interleaved heads of each token row are read
  // at about the same time (DRAM row locality), and the row blocks of one head
  // (group x sq above ROWS) read the same K and V together (L2).
  const SplitBlock blk = split_block<T>(group, sq, num_kv_heads);
  const int row0 = blk.row0, hkv = blk.hkv, split = blk.split;
  const int b = pc != nullptr ? pc->b : block_z();

  // Launched programmatically, this grid may start before the previous one in
  // the stream (which may write q, K, V or the lengths) ends.
  grid_dependency_wait();

  // q rows of this workgroup, this lane's 8 elements, pre-scaled into log2 units.
  // Their loads go out before the length's, so the two round trips overlap.
  // Every row's load and the length's are issued before any is used, so they
  // share one round trip (a padding row or an idle lane loads nothing: zeros).
  u32x4 qw[R];
  RowPos rows[R];
  {
    RowPos p = row_pos(row0, group);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      rows[r] = p;
      const char *qp = static_cast<const char *>(q) +
                       2 * (b * q_stride_b + ((long long)hkv * group + p.g) * q_stride_h +
                            (long long)p.i * q_stride_s + li * 8);
      qw[r] = load16_dep_if(qp, p.i < sq && data_lane);
      advance(p, 1, group);
    }
  }
  const Lengths seg = pc != nullptr ? pc->seg : segment<T>(seq_lens, b, capacity, split, num_splits);
  float qf[R][8];
  const float qscale = scale * kLog2e;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    unpack8<DT>(qw[r], qf[r]);
#pragma unroll
    for (int e = 0; e < 8; ++e) qf[r][e] *= qscale;
  }
  int limit[R];  // keys (exclusive) each row sees
#pragma unroll
  for (int r = 0; r < R; ++r) limit[r] = row_limit(rows[r], seg.valid, sq, flags);

  float run_max[R], run_sum[R], acc[R][8];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    run_max[r] = kNegInf;
    run_sum[r] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.f;
  }

  // An idle lane addresses the last 8 elements a data lane holds (kClampedLoads).
  const int elem = (data_lane ? li : T::kDataLanes - 1) * 8;
  const char *kbase = static_cast<const char *>(k) + 2 * (hkv * k_stride_h + elem);
  const char *vbase = static_cast<const char *>(v) + 2 * (hkv * v_stride_h + elem);
  if (!T::kPaged) {
    kbase += 2 * b * k_stride_b;
    vbase += 2 * b * v_stride_b;
  }
  ChunkPages<T> pages(page_table, page_table_stride, b, page_size, seg, wave, lane);
  float *my_scores = sh.scores[wave];

  // Loads of the wave's chunk at tok0: token n*TPL + grp.
  // Predicated (kClampedLoads false): zeros, and no memory access, at or past the
  // segment end and in idle lanes.
  // Clamped (AMD): every lane loads, unconditionally, from a token of the
  // segment, so the chunk's loads are issued straight and the compiler's
  // s_waitcnt counts them exactly (loads skipped by exec-masked branches make it
  // assume none is outstanding at the join, and wait for all of them at the top
  // of the loop). A token at or past the end reads the last valid token; a chunk
  // wholly past the end reads the segment's first chunk (its own page too); an
  // idle lane reads its token's last elements. Whatever they bring is masked: the
  // scores of those tokens are -inf (p = 0, and the data are the segment's own,
  // finite where the caller's are), idle lanes hold q = 0 and store nothing.
  ClampedPages<T> cpages(page_table, page_table_stride, b, page_size, seg, wave, grp);
  auto load_chunk_as = [&](bool small, int tok0, u32x4 (&kw)[NL], u32x4 (&vw)[NL]) {
    const long long chunk_page = kClampedLoads ? 0 : pages.page(tok0);
    if constexpr (kClampedLoads) {
      int pg[NL] = {};
      if constexpr (T::kPaged) cpages.pages(tok0, pg);
#pragma unroll
      for (int n = 0; n < NL; ++n) {
        const int pc = cpages.clamp(tok0, n);
        long long koff, voff;
        if (T::kPaged) {
          const int in_page = pc & (page_size - 1);
          koff = pg[n] * k_stride_b + (long long)in_page * k_stride_t;
          voff = pg[n] * v_stride_b + (long long)in_page * v_stride_t;
        } else {
          koff = (long long)pc * k_stride_t;
          voff = (long long)pc * v_stride_t;
        }
        kw[n] = load16(kbase + 2 * koff);
        vw[n] = load16(vbase + 2 * voff);
      }
      return;
    }
#pragma unroll
    for (int n = 0; n < NL; ++n) {
      const int pos = tok0 + n * TPL + grp;
      const long long page = T::kPaged ? pages.token_page(pos, chunk_page, small) : 0;  // every lane
      if (pos < seg.end && data_lane) {
        long long koff, voff;
        if (T::kPaged) {
          const int in_page = pos & (page_size - 1);
          koff = page * k_stride_b + (long long)in_page * k_stride_t;
          voff = page * v_stride_b + (long long)in_page * v_stride_t;
        } else {
          koff = (long long)pos * k_stride_t;
          voff = (long long)pos * v_stride_t;
        }
        kw[n] = load16(kbase + 2 * koff);
        vw[n] = load16(vbase + 2 * voff);
      } else {
        kw[n] = u32x4{0u, 0u, 0u, 0u};
        vw[n] = u32x4{0u, 0u, 0u, 0u};
      }
    }
  };
  auto load_chunk = [&](int tok0, u32x4 (&kw)[NL], u32x4 (&vw)[NL]) {
    if (T::kPaged && !kClampedLoads && pages.small)
      load_chunk_as(true, tok0, kw, vw);
    else
      load_chunk_as(false, tok0, kw, vw);
  };

  // Software pipeline: the next chunk's K and V are in flight while this one is
  // used. Two register sets take turns (the loop is unrolled by two), so no
  // register copy waits for a load in flight: on AMD a move of a loaded register
  // waits for the load (s_waitcnt), which would serialize load and math.
  // After the butterfly a lane holds kHeld of the chunk's (load, row) sums, from `held0` on.
  constexpr int kHeld = T::kPartials >= LPT ? T::kPartials / LPT : 1;
  const int held0 = T::kPartials >= LPT ? li * kHeld : li / (LPT / T::kPartials);
  auto step = [&](int tok0, const u32x4 (&kw)[NL], const u32x4 (&vw)[NL]) {
    // Partial q.k over this lane's 8 elements, for every (load, row).
    float part[T::kPartials];
#pragma unroll
    for (int n = 0; n < NL; ++n) {
      float kf[8];
      unpack8<DT>(kw[n], kf);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float s = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) s += qf[r][e] * kf[e];
        part[n * R + r] = s;
      }
    }
    TransposeReduce<T::kPartials, LPT / 2, T::kPartials>::run(part, li);

    sync_wave();  // the previous chunk's readers of my_scores are done
#pragma unroll
    for (int j = 0; j < kHeld; ++j) {
      const int idx = held0 + j;
      const int n = idx / R, r = idx % R;
      const int pos = tok0 + n * TPL + grp;
      const bool live = pos < seg.end && pos < limit[r];
      my_scores[(n * TPL + grp) * R + r] = live ? part[j] : kNegInf;
    }
    sync_wave();

    // One rescale per chunk. A lane reads the scores of its own tokens (every
    // row) once; the chunk's row max is completed across the token groups.
    float sc[NL][R];
#pragma unroll
    for (int n = 0; n < NL; ++n)
#pragma unroll
      for (int r = 0; r < R; ++r) sc[n][r] = my_scores[(n * TPL + grp) * R + r];
    float ref[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float m = run_max[r];
#pragma unroll
      for (int n = 0; n < NL; ++n) m = max32(m, sc[n][r]);
#pragma unroll
      for (int off = LPT; off < kWaveSize; off <<= 1) m = max32(m, shfl_xor(m, off));
      // A row with nothing live so far keeps 0 as its reference: exp2(-inf - 0) = 0, no NaN.
      ref[r] = m == kNegInf ? 0.f : m;
      const float alpha = fast_exp2(run_max[r] - ref[r]);
      run_max[r] = m;
      run_sum[r] *= alpha;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] *= alpha;
    }

#pragma unroll
    for (int n = 0; n < NL; ++n) {
      float vf[8];
      unpack8<DT>(vw[n], vf);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float p = fast_exp2(sc[n][r] - ref[r]);
        run_sum[r] += p;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] += p * vf[e];
      }
    }
  };
  u32x4 ka[NL], va[NL], kb[NL], vb[NL];
  if (seg.begin < seg.end) {  // an empty segment loads nothing (clamped loads need a token)
    load_chunk(seg.begin + wave * C, ka, va);
    for (int tile = seg.begin; tile < seg.end; tile += 2 * T::kTile) {
      const int tok0 = tile + wave * C;
      load_chunk(tok0 + T::kTile, kb, vb);
      step(tok0, ka, va);
      if (tile + T::kTile >= seg.end) break;
      load_chunk(tok0 + 2 * T::kTile, ka, va);
      step(tok0 + T::kTile, kb, vb);
    }
  }

  // Lanes of different token groups hold the same D slice for other tokens.
#pragma unroll
  for (int off = LPT; off < kWaveSize; off <<= 1) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      run_sum[r] += shfl_xor(run_sum[r], off);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] += shfl_xor(acc[r][e], off);
    }
  }
  if (grp == 0 && data_lane) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int e = 0; e < 8; ++e) sh.wave_acc[wave][r][li * 8 + e] = acc[r][e];
      if (li == 0) {
        sh.wave_max[wave][r] = run_max[r];
        sh.wave_sum[wave][r] = run_sum[r];
      }
    }
  }
  // This workgroup's loads are done: the merge grid (launched programmatically)
  // may be scheduled now instead of after the last exit; it waits for this
  // grid's completion before it reads the workspace. Triggering at the start
  // would let waiting merge workgroups take slots from a second split wave.
  launch_dependents();
  finish_split<T>(sh, tid, b, hkv, split, row0, pc, INGOT_AD_ARGS);
}


// ---- split kernel, tensor-core path (sm_90) -------------------------------------
// A wave takes 16 tokens per PV step. Lane l = 4g + q. QK: one m16n8k16 per 8
// tokens and 16 elements of D; A = q (row g), B = K^T (token 8u + g, the 16-byte
// chunks q + 4j of D: the k order of the dot product is free, so each lane
// loads whole chunks). The accumulator then holds S[row g][token 8u + 2q + e],
// which is exactly the A operand of PV for the same tokens: softmax needs only
// the quad (lanes 4g..4g+3) to agree on a row max. PV: B = V (tokens 2q + {0,1,8,9}
// of a 16-token step, column g of each 8-wide n tile); output column n of n
// tile i is element d = 64*(i/8) + 8n + i%8, so V is read in 16-byte chunks
// g + 8*cc and the B operand is two byte permutes away.
template <class T>
INGOT_DEVICE void decode_split_mma(INGOT_AD_PARAMS, const Piece *pc = nullptr) {
  // D: the padded head dim (T::kMmaDim); DC: the 16-byte chunks of a row that hold data.
  constexpr int R = T::kRows, D = T::kMmaDim, DT = T::kDType, C = T::kChunk, NS = T::kStages;
  constexpr int DC = T::kHeadDim / 8;
  constexpr int NU = C / 8;     // QK n tiles of 8 tokens
  constexpr int NKS = D / 16;   // QK k steps
  constexpr int NKC = D / 32;   // 16-byte K chunks per token per lane
  constexpr int NPV = C / 16;   // PV k steps of 16 tokens
  constexpr int NDT = D / 8;    // PV n tiles
  constexpr int NVC = D / 64;   // 16-byte V chunks per token per lane
  constexpr int CPR = D / 8;    // 16-byte chunks per row of D
  static_assert(T::kUseMma && kWaveSize == 32 && D % 64 == 0 && C % 16 == 0 && R <= 8, "mma path shape");
  static_assert(NS == 0 || (C * CPR) % kWaveSize == 0, "ring copies: whole waves");
  SplitSmem<T> &smem = split_smem<T>();
  SplitShared<T> &sh = smem.fin;

  const int tid = thread_id();
  const int wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int g = lane >> 2, qd = lane & 3;
  const SplitBlock blk = split_block<T>(group, sq, num_kv_heads);  // grid x as in the SIMT path
  const int row0 = blk.row0, hkv = blk.hkv, split = blk.split;
  const int b = pc != nullptr ? pc->b : block_z();
  unsigned long long tns[6] = {}, tclk[6] = {};  // knob `trace`: the phases' stamps
  if constexpr (T::kTrace) stamp_after(0, tns[0], tclk[0]);
  grid_dependency_wait();  // as in the SIMT path
  if constexpr (T::kTrace) stamp_after(0, tns[1], tclk[1]);
  // Fragment positions: K of token 8u + g, chunks qd + 4j; V of tokens
  // 16p + 2qd + (t & 1) + 8(t >> 1), chunks g + 8cc.
  auto v_token = [&](int p, int t) { return 16 * p + 2 * qd + (t & 1) + 8 * (t >> 1); };
  // A operand of QK: row g's chunks qd + 4j, as loaded (16-bit pairs); issued
  // before the length's load so that the two round trips overlap.
  const int row = row0 + g;
  const RowPos rp = row_pos(row, group);
  const int gq = rp.g, iq = rp.i;
  const bool row_ok = g < R && iq < sq;
  u32 qa[NKS][4];
#pragma unroll
  for (int j = 0; j < NKC; ++j) {
    const char *qp = static_cast<const char *>(q) +
                     2 * (b * q_stride_b + ((long long)hkv * group + gq) * q_stride_h +
                          (long long)iq * q_stride_s + (qd + 4 * j) * 8);
    const u32x4 w = load16_dep_if(qp, row_ok && qd + 4 * j < DC);
    qa[2 * j][0] = w.x;
    qa[2 * j][2] = w.y;
    qa[2 * j + 1][0] = w.z;
    qa[2 * j + 1][2] = w.w;
    qa[2 * j][1] = qa[2 * j][3] = qa[2 * j + 1][1] = qa[2 * j + 1][3] = 0u;
  }
  const Lengths seg = pc != nullptr ? pc->seg : segment<T>(seq_lens, b, capacity, split, num_splits);
  if constexpr (T::kTrace) {  // after q's loads are issued: waits for the length only
    stamp_after(seg.end, tns[2], tclk[2]);
    tns[3] = tns[2], tclk[3] = tclk[2];  // no chunk: the first chunk's stamp is the length's
  }
  const float qscale = scale * kLog2e;
  const int limit = row_ok ? row_limit(rp, seg.valid, sq, flags) : 0;

  float run_max = kNegInf, run_sum = 0.f;
  float acc[NDT][2];
#pragma unroll
  for (int i = 0; i < NDT; ++i) acc[i][0] = acc[i][1] = 0.f;

  const char *kbase = static_cast<const char *>(k) + 2 * (hkv * k_stride_h);
  const char *vbase = static_cast<const char *>(v) + 2 * (hkv * v_stride_h);
  if (!T::kPaged) {
    kbase += 2 * b * k_stride_b;
    vbase += 2 * b * v_stride_b;
  }
  ChunkPages<T> pages(page_table, page_table_stride, b, page_size, seg, wave, lane);
  // The element offset of a token within K or V, on its page when paged (page:
  // its chunk's, or its own where pages are shorter than a chunk).
  auto token_off = [&](int pos, long long page, bool small, long long sb, long long st) -> long long {
    return T::kPaged ? pages.token_page(pos, page, small) * sb + (long long)(pos & (page_size - 1)) * st
                     : (long long)pos * st;
  };

  // One chunk of C tokens at tok0 through the tensor cores: S = q K^T, one
  // online-softmax rescale, O += P V. This lane's fragments come from kf(u, j)
  // (token 8u + g, 16-byte chunk qd + 4j) and vf(p, t, cc) (token v_token(p, t),
  // chunk g + 8cc): registers, or the ring, read where they are used so that a
  // chunk of head dim 256 need not sit in registers whole.
  auto consume = [&](int tok0, auto &&kf, auto &&vf) {
    // S for row g, tokens 8u + 2qd + e.
    float sc[NU][2];
    float cmax = run_max;
#pragma unroll
    for (int u = 0; u < NU; ++u) {
      float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < NKC; ++j) {
        const u32x4 w = kf(u, j);
        mma16816<DT>(c, qa[2 * j], w.x, w.y);
        mma16816<DT>(c, qa[2 * j + 1], w.z, w.w);
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int pos = tok0 + 8 * u + 2 * qd + e;
        sc[u][e] = (pos < seg.end && pos < limit) ? c[e] * qscale : kNegInf;
        cmax = max32(cmax, sc[u][e]);
      }
    }
    // One rescale per chunk; the quad shares the row.
    cmax = max32(cmax, shfl_xor(cmax, 1));
    cmax = max32(cmax, shfl_xor(cmax, 2));
    const float ref = cmax == kNegInf ? 0.f : cmax;
    const float alpha = fast_exp2(run_max - ref);
    run_max = cmax;
    run_sum *= alpha;
#pragma unroll
    for (int i = 0; i < NDT; ++i) {
      acc[i][0] *= alpha;
      acc[i][1] *= alpha;
    }
    float pr[NU][2];
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        pr[u][e] = fast_exp2(sc[u][e] - ref);
        run_sum += pr[u][e];
      }

    // O += P V, 16 tokens per step.
#pragma unroll
    for (int p = 0; p < NPV; ++p) {
      const u32 pa[4] = {pack2<DT>(pr[2 * p][0], pr[2 * p][1]), 0u,
                         pack2<DT>(pr[2 * p + 1][0], pr[2 * p + 1][1]), 0u};
#pragma unroll
      for (int cc = 0; cc < NVC; ++cc) {
        const u32x4 v0 = vf(p, 0, cc), v1 = vf(p, 1, cc), v2 = vf(p, 2, cc), v3 = vf(p, 3, cc);
#pragma unroll
        for (int el = 0; el < 8; ++el) {
          const int i = 8 * cc + el, wi = el / 2;
          const u32 sel = (el & 1) ? 0x7632u : 0x5410u;
          const u32 w0 = wi == 0 ? v0.x : wi == 1 ? v0.y : wi == 2 ? v0.z : v0.w;
          const u32 w1 = wi == 0 ? v1.x : wi == 1 ? v1.y : wi == 2 ? v1.z : v1.w;
          const u32 w2 = wi == 0 ? v2.x : wi == 1 ? v2.y : wi == 2 ? v2.z : v2.w;
          const u32 w3 = wi == 0 ? v3.x : wi == 1 ? v3.y : wi == 2 ? v3.z : v3.w;
          float c[4] = {acc[i][0], acc[i][1], 0.f, 0.f};
          mma16816<DT>(c, pa, byte_perm(w0, w1, sel), byte_perm(w2, w3, sel));
          acc[i][0] = c[0];
          acc[i][1] = c[1];
        }
      }
    }
  };

  if constexpr (NS == 0) {
    // The next chunk's K and V are in flight in registers while this one is used.
    // The wave's chunk at tok0.
    auto load_chunk_as = [&](bool small, int tok0, u32x4 (&kw)[NU][NKC], u32x4 (&vw)[NPV][4][NVC]) {
      const long long page = pages.page(tok0);
#pragma unroll
      for (int u = 0; u < NU; ++u) {
        const int pos = tok0 + 8 * u + g;
        const char *kp = kbase + 2 * token_off(pos, page, small, k_stride_b, k_stride_t) + qd * 16;
#pragma unroll
        for (int j = 0; j < NKC; ++j) kw[u][j] = load16_if(kp + j * 64, pos < seg.end && qd + 4 * j < DC);
      }
#pragma unroll
      for (int p = 0; p < NPV; ++p)
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int pos = tok0 + v_token(p, t);
          const char *vp = vbase + 2 * token_off(pos, page, small, v_stride_b, v_stride_t) + g * 16;
#pragma unroll
          for (int cc = 0; cc < NVC; ++cc)
            vw[p][t][cc] = load16_if(vp + cc * 128, pos < seg.end && g + 8 * cc < DC);
        }
    };
    auto load_chunk = [&](int tok0, u32x4 (&kw)[NU][NKC], u32x4 (&vw)[NPV][4][NVC]) {
      if (T::kPaged && pages.small)
        load_chunk_as(true, tok0, kw, vw);
      else
        load_chunk_as(false, tok0, kw, vw);
    };
    u32x4 kw[NU][NKC], vw[NPV][4][NVC];
    load_chunk(seg.begin + wave * C, kw, vw);
    for (int tile = seg.begin; tile < seg.end; tile += T::kTile) {
      const int tok0 = tile + wave * C;
      u32x4 kn[NU][NKC], vn[NPV][4][NVC];
      load_chunk(tok0 + T::kTile, kn, vn);
      consume(
          tok0, [&](int u, int j) { return kw[u][j]; }, [&](int p, int t, int cc) { return vw[p][t][cc]; });
      if constexpr (T::kTrace)
        if (tile == seg.begin) stamp_after((int)float_to_bits(run_max), tns[3], tclk[3]);
#pragma unroll
      for (int u = 0; u < NU; ++u)
#pragma unroll
        for (int j = 0; j < NKC; ++j) kw[u][j] = kn[u][j];
#pragma unroll
      for (int p = 0; p < NPV; ++p)
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int cc = 0; cc < NVC; ++cc) vw[p][t][cc] = vn[p][t][cc];
    }
  } else {
    // A ring of NS stages per wave; NS - 1 chunks are in flight while one is
    // used. 16-byte chunk c of row t sits at c ^ f(t) (f below 8), so the
    // fragment reads of a quarter wave hit 8 distinct bank groups: K rows
    // alternate by 4, V rows by 2 * ((t >> 1) & 3).
    u16 *ring = smem.ring + wave * NS * 2 * C * D;
    auto k_at = [&](u16 *stage, int t, int c) { return stage + t * D + 8 * (c ^ ((t & 1) << 2)); };
    auto v_at = [&](u16 *stage, int t, int c) { return stage + (C + t) * D + 8 * (c ^ (((t >> 1) & 3) << 1)); };
    // Copies of one chunk: lane l takes chunks l + 32n of the chunk's C rows
    // (whole rows per half wave: coalesced), K and V alike; zeros past the end.
    // Head dim 256: the copies' addresses, unrolled, would take the registers the
    // chunk's fragments need (ptxas spills 440 bytes).
    constexpr int kIssueUnroll = D > 128 ? 1 : C * CPR / kWaveSize;
    auto issue_as = [&](bool small, int slot, int tok0) {  // the wave's chunk at tok0
      u16 *stage = ring + slot * 2 * C * D;
      const long long page = pages.page(tok0);
#pragma unroll kIssueUnroll
      for (int n = 0; n < C * CPR / kWaveSize; ++n) {
        const int i = lane + kWaveSize * n, t = i / CPR, c = i % CPR;
        const int pos = tok0 + t;
        const bool live = pos < seg.end && c < DC;
        copy16_async(k_at(stage, t, c), kbase + 2 * token_off(pos, page, small, k_stride_b, k_stride_t) + c * 16, live);
        copy16_async(v_at(stage, t, c), vbase + 2 * token_off(pos, page, small, v_stride_b, v_stride_t) + c * 16, live);
      }
    };
    auto issue = [&](int slot, int tok0) {
      if (T::kPaged && pages.small)
        issue_as(true, slot, tok0);
      else
        issue_as(false, slot, tok0);
    };
#pragma unroll
    for (int s = 0; s < NS - 1; ++s) {
      const int tok0 = seg.begin + s * T::kTile + wave * C;
      if (seg.begin + s * T::kTile < seg.end) issue(s, tok0);
      async_commit();
    }
    int slot = 0;  // the stage this step uses; the chunk NS - 1 steps ahead goes to the one before it
    for (int tile = seg.begin; tile < seg.end; tile += T::kTile) {
      async_wait<NS - 2>();  // this thread's copies of this step have landed
      sync_wave();           // ... and every lane's; the stage before is no longer read
      const int ahead = tile + (NS - 1) * T::kTile;
      if (ahead < seg.end) issue(slot == 0 ? NS - 1 : slot - 1, ahead + wave * C);
      async_commit();
      u16 *stage = ring + slot * 2 * C * D;
      consume(
          tile + wave * C,
          [&](int u, int j) { return *reinterpret_cast<const u32x4 *>(k_at(stage, 8 * u + g, qd + 4 * j)); },
          [&](int p, int t, int cc) {
            return *reinterpret_cast<const u32x4 *>(v_at(stage, v_token(p, t), g + 8 * cc));
          });
      if constexpr (T::kTrace)
        if (tile == seg.begin) stamp_after((int)float_to_bits(run_max), tns[3], tclk[3]);
      slot = slot == NS - 1 ? 0 : slot + 1;
    }
    async_wait<0>();
    sync_block();  // every wave is past its ring: the results may reuse it
  }

  if constexpr (T::kTrace) stamp_after((int)float_to_bits(run_sum), tns[4], tclk[4]);
  // The quad's partial sums of row g; lane (g, qd) holds columns 2qd + e of each n tile.
  run_sum += shfl_xor(run_sum, 1);
  run_sum += shfl_xor(run_sum, 2);
  if (g < R) {
#pragma unroll
    for (int i = 0; i < NDT; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 64 * (i / 8) + 8 * (2 * qd + e) + i % 8;
        if (D == T::kHeadDim || col < T::kHeadDim) sh.wave_acc[wave][g][col] = acc[i][e];
      }
    if (qd == 0) {
      sh.wave_max[wave][g] = run_max;
      sh.wave_sum[wave][g] = run_sum;
    }
  }
  // This workgroup's loads are done: the merge grid (launched programmatically)
  // may be scheduled now instead of after the last exit; it waits for this
  // grid's completion before it reads the workspace. Triggering at the start
  // would let waiting merge workgroups take slots from a second split wave.
  launch_dependents();
  finish_split<T>(sh, tid, b, hkv, split, row0, pc, INGOT_AD_ARGS);
  if constexpr (T::kTrace) {
    stamp_after(0, tns[5], tclk[5]);
    if (tid == 0 && workspace != nullptr && pc == nullptr) {  // no records in a balanced plan
      unsigned long long *rec =
          trace_base<T>(workspace, num_kv_heads, num_splits, group * sq) + 16 * ((long long)block_z() * grid_x() + block_x());
      rec[0] = sm_id();
      rec[1] = (unsigned long long)(seg.end - seg.begin);
#pragma unroll
      for (int i = 0; i < 6; ++i) rec[2 + i] = tns[i], rec[8 + i] = tclk[i];
    }
  }
}

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
INGOT_DEVICE void split_path(INGOT_AD_PARAMS, const Piece *pc) {
  if constexpr (T::kUseMma) {
    decode_split_mma<T>(INGOT_AD_ARGS, pc);
  } else {
    decode_split_simt<T>(INGOT_AD_ARGS, pc);
  }
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

// The uniform plan's split (entry point `split`; the balanced plan launches
// decode_split_balanced, entry point `balanced_split`, instead).
template <class T>
INGOT_DEVICE void decode_split(INGOT_AD_PARAMS) {
  if constexpr (T::kUseMma) {
    decode_split_mma<T>(INGOT_AD_ARGS);
  } else {
    decode_split_simt<T>(INGOT_AD_ARGS);
  }
}

// Writes one output element (and, from d == 0, the row's LSE in natural log).
template <class T>
INGOT_DEVICE void store_row(void *o, float *lse, int b, int hkv, RowPos p, int d, float out, float lse2, int sq,
                            int num_kv_heads, int group, long long o_stride_b, long long o_stride_h,
                            long long o_stride_s, int flags) {
  const int g = p.g, i = p.i;
  if (i >= sq) return;
  const long long h = (long long)hkv * group + g;
  u16 *op = static_cast<u16 *>(o);
  op[b * o_stride_b + h * o_stride_h + i * o_stride_s + d] = pack1<T::kDType>(out);
  if (d == 0 && (flags & kFlagWriteLse))
    lse[((long long)b * num_kv_heads * group + h) * sq + i] = lse2 * kLn2;
}

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
// num_splits segments. Balanced: the sequence's pieces, slots w0 + b .. w1 + b
// of the hkv block (ingot_attention_decode_balance.h), found from the prefix
// sums the split wrote; none for an empty sequence (the merge then writes
// O = 0, LSE = -inf), and skip when one unit held it whole (the split wrote O).
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
  const long long *prefix =
      reinterpret_cast<const long long *>(workspace + balanced_prefix_offset<T>(num_kv_heads, num_splits, rows_total, flags));
  const long long p = load_dep64(prefix + b), e = load_dep64(prefix + b + 1), total = load_dep64(prefix + B);
  const long long active = ingot_ad_bal_active(total, num_splits, ingot_ad_bal_fill(flags));
  long long w0 = 0, w1 = -1;  // no pieces
  if (e > p) {
    w0 = ingot_ad_bal_unit_of(p, total, active);
    w1 = ingot_ad_bal_unit_of(e - 1, total, active);
  }
  const float *blk = workspace + workspace_block<T>(0, hkv, num_kv_heads, slots, rows_total);
  const long long first = ingot_ad_bal_slot(w0, b);
  m.lse = blk + first;
  m.o = blk + lse_floats<T>(rows_total, slots) + first * T::kHeadDim;
  m.count = (int)(w1 - w0 + 1);
  m.stride = slots;
  m.skip = e > p && w0 == w1;
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
// each sequence's pieces from the prefix sums its split wrote; else the uniform
// plan's (`merge`).
template <class T, bool kBalanced>
INGOT_DEVICE void decode_merge(INGOT_AD_PARAMS) {
  // Launched programmatically, this grid may start before the split grid ends.
  // Once it has, the next grid in the stream may be scheduled: it waits for
  // this one's completion in turn.
  unsigned long long mns[3] = {}, mclk[3] = {};  // knob `trace`
  if constexpr (T::kTrace) stamp_after(0, mns[0], mclk[0]);
  grid_dependency_wait();
  if constexpr (T::kTrace) stamp_after(0, mns[1], mclk[1]);
  launch_dependents();
  // Knob `trace`: this workgroup's record, once its work is issued.
  auto trace_end = [&]() {
    if constexpr (T::kTrace) {
      stamp_after(0, mns[2], mclk[2]);
      if (thread_id() == 0 && workspace != nullptr && !kBalanced) {
        const long long split_blocks = (long long)row_blocks<T>(group, sq) * num_kv_heads * num_splits * grid_z();
        const long long index = ((long long)block_z() * grid_y() + block_y()) * grid_x() + block_x();
        unsigned long long *rec =
            trace_base<T>(workspace, num_kv_heads, num_splits, group * sq) + 16 * split_blocks + 8 * index;
        rec[0] = sm_id();
        rec[1] = (unsigned long long)index;
#pragma unroll
        for (int i = 0; i < 3; ++i) rec[2 + i] = mns[i], rec[5 + i] = mclk[i];
      }
    }
  };
  if (num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS) {
    merge_compact<T, kBalanced>(INGOT_AD_ARGS);
    trace_end();
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
  trace_end();
}

}  // namespace ingot

#endif  // INGOT_ATTENTION_DECODE_H
