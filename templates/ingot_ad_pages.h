// ingot_ad_pages.h: a wave's page lookup for paged KV. ChunkPages: the page-table
// entries of the wave's chunks, read a block of kWaveSize chunks ahead and passed
// by shuffle (per token where pages are shorter than a chunk). ClampedPages: the
// AMD SIMT path's, for clamped loads (an entry per load, two chunks ahead).
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

}  // namespace ingot

#endif  // INGOT_AD_PAGES_H
