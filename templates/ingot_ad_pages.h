// ingot_ad_pages.h: a wave's page lookup for paged KV. ChunkPages: the page-table
// entries of the wave's chunks, read a block of kWaveSize chunks ahead and passed
// by shuffle (per token where pages are shorter than a chunk). ClampedPages: the
// clamped-load splits' (AMD): a chunk's one entry, or an entry per load where pages
// are shorter than a chunk, two chunks ahead; chunk_span, the chunk a clamped load
// reads.
// Contiguous KV reads no page table through either.
#ifndef INGOT_AD_PAGES_H
#define INGOT_AD_PAGES_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

namespace ingot {

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
// (The AMD splits read their pages through ClampedPages below.)
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

// ---- clamped loads (kClampedLoads: AMD, the emulated wave64) -------------------
// The SIMT and matrix-core splits on AMD load every token unconditionally, from a
// token clamped into the segment, so that no load waits on a branch (the
// compiler's s_waitcnt counts them exactly).

// The chunk at tok0 as its loads see it, clamped into the segment [begin, end)
// (needs begin < end): its first token `base` (a chunk wholly past the end: the
// segment's first chunk) and `last`, the offset from base of the segment's last
// token. Token `off` of the chunk loads token base + min(off, last): a token past
// the end reads the last valid one. base and last are the same across the wave,
// so a lane's address is the chunk's (one per wave) plus its own clamped offset.
struct ChunkSpan {
  int base, last;
};
INGOT_DEVICE ChunkSpan chunk_span(int tok0, int begin, int end) {
  const int base = tok0 >= end ? begin : tok0;
  return ChunkSpan{base, end - 1 - base};
}
INGOT_DEVICE unsigned span_offset(const ChunkSpan &c, int off) {
  return (unsigned)off < (unsigned)c.last ? (unsigned)off : (unsigned)c.last;
}

// The page-table entries of a clamped-load split's chunks (paged KV), read two
// chunks ahead, unconditionally, from clamped tokens. Pages of a multiple of the
// chunk (kSmall false): the chunk's one entry (a chunk starts on a multiple of the
// chunk, so it lies in one page), the same in every lane. Other pages (kSmall:
// shorter than a chunk): the entry of each token a lane loads, token
// TOKENS::kCount of them, entry i's at offset tokens(i) of the chunk. On AMD loads
// return in order: the wait for a chunk's entries is a wait for the loads issued
// before them (the chunk before's K and V, used next anyway).
template <class T, bool kSmall, class TOKENS>
struct ClampedPages {
  static constexpr int N = kSmall ? TOKENS::kCount : 1;
  const int *table;
  int begin, end, shift;
  TOKENS tokens;
  int ent[2][N];  // entries of the next two chunks the wave loads
  INGOT_DEVICE ClampedPages(const int *page_table, long long page_table_stride, int b, int page_size,
                            const Lengths &seg, int wave, TOKENS tokens_)
      : table(T::kPaged ? page_table + b * page_table_stride : nullptr), begin(seg.begin), end(seg.end),
        shift(T::kPaged ? 31 - __builtin_clz((unsigned)page_size) : 0), tokens(tokens_) {
    if constexpr (T::kPaged) {
      if (seg.begin < seg.end) {  // an empty segment loads nothing
        const int first = seg.begin + wave * T::kChunk;
        fetch(first, ent[0]);
        fetch(first + T::kTile, ent[1]);
      }
    }
  }
  // A chunk's one entry is read as a vector load (its index through opaque), not a
  // scalar one: AMD's scalar loads finish out of order, and the wait for one would be a
  // wait for all of them (lgkmcnt(0)), at the next ds_bpermute of the chunk's math;
  // vector loads return in order, behind the chunk's K and V.
  INGOT_DEVICE void fetch(int tok0, int (&e)[N]) const {
    const ChunkSpan c = chunk_span(tok0, begin, end);
#pragma unroll
    for (int i = 0; i < N; ++i)
      e[i] = load_dep(table + (kSmall ? (c.base + (int)span_offset(c, tokens(i))) >> shift : opaque(c.base >> shift)));
  }
  // The entries of the chunk at tok0 (the wave's chunks in order, one call each).
  INGOT_DEVICE void pages(int tok0, int (&out)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = ent[0][i], ent[0][i] = ent[1][i];
    fetch(tok0 + 2 * T::kTile, ent[1]);
  }
};

// Runs stream, a caller's generic lambda over the wave's chunks, in the copy for
// this page size: BoolConstant<true> where pages are shorter than a chunk
// (ClampedPages' kSmall: an entry per load), BoolConstant<false> for contiguous KV
// and pages of a multiple of the chunk (one entry a chunk). Pages and chunks are
// powers of two, so the test is page_size % chunk.
template <class T, class Stream>
INGOT_DEVICE void by_page_kind(int page_size, const Stream &stream) {
  if (T::kPaged && page_size % T::kChunk != 0)
    stream(BoolConstant<true>{});
  else
    stream(BoolConstant<false>{});
}

// The clamped-load splits' loop over a wave's chunks (the chunk at tw * kChunk of
// each tile of the segment; needs seg.begin < seg.end): two chunks per iteration,
// each step's math with the next chunk's loads in flight, two register sets taking
// turns (KR and VR: a chunk's K and V registers), and an odd last chunk after the
// loop. The body has no branch out of its middle: with one, LLVM sinks the first
// load_chunk into the block after it, next to its use, and the loop waits for its
// loads before its math. A sched_fence after each load_chunk keeps the machine
// scheduler from doing the same within the block (fp16 kept a chunk in flight for
// 30-50% of the matrix-core loop's math without them; docs/decisions/0024 and 0042).
// Where no chunk is left, the last iteration's second load_chunk reads the
// segment's first tokens again (chunk_span): cached lines, and nothing of them is used.
template <class T, class KR, class VR, class Load, class Step>
INGOT_DEVICE void clamped_chunk_loop(const Lengths &seg, int tw, const Load &load_chunk, const Step &step) {
  KR ka, kb;
  VR va, vb;
  load_chunk(seg.begin + tw * T::kChunk, ka, va);
  int tile = seg.begin;
  for (; tile + T::kTile < seg.end; tile += 2 * T::kTile) {
    const int tok0 = tile + tw * T::kChunk;
    load_chunk(tok0 + T::kTile, kb, vb);
    sched_fence();
    step(tok0, ka, va);
    load_chunk(tok0 + 2 * T::kTile, ka, va);
    sched_fence();
    step(tok0 + T::kTile, kb, vb);
  }
  if (tile < seg.end) step(tile + tw * T::kChunk, ka, va);
}

}  // namespace ingot

#endif  // INGOT_AD_PAGES_H
