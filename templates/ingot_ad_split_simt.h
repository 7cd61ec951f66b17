// ingot_ad_split_simt.h: the SIMT split kernel (decode_split_simt), the path of
// the archs without tensor cores and of math `simt`: D/8 lanes per token, 16-byte
// loads, a register pipeline of two chunks (clamped loads on AMD), q.k reduced by
// the transposing butterfly (TransposeReduce), one online-softmax rescale per
// chunk.
#ifndef INGOT_AD_SPLIT_SIMT_H
#define INGOT_AD_SPLIT_SIMT_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_pages.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split_finish.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

namespace ingot {

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

// ---- split kernel, SIMT path ------------------------------------------------------

// The tokens of a lane's loads in its chunk (clamped loads, pages shorter than a
// chunk: ClampedPages, ingot_ad_pages.h): load n's is token n * TPL + grp.
template <class T>
struct SimtTokens {
  static constexpr int kCount = T::kLoads;
  int grp;
  INGOT_DEVICE int operator()(int n) const { return n * T::kTokensPerLoad + grp; }
};

// pc: the piece a balanced workgroup runs (decode_split_balanced), nullptr in a
// uniform plan (sequence block_z(), segment `split`).
template <class T>
INGOT_DEVICE void decode_split_simt(INGOT_AD_PARAMS, const Piece *pc = nullptr) {
  constexpr int R = T::kWaveRows, LPT = T::kLanesPerToken, NL = T::kLoads, TPL = T::kTokensPerLoad;
  static_assert(R <= 8, "the SIMT path holds at most 8 rows a wave");
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
  // This wave's rows (row_waves: its own of the block's) and chunk of each step.
  const WaveSlot ws = wave_slot<T>(wave, row0, group * sq);
  const int tw = wave_uniform(token_wave<T>(wave));

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
    RowPos p = row_pos(row0 + ws.row, group);
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

  // An idle lane addresses the last 8 elements a data lane holds (clamped loads).
  const int elem = (data_lane ? li : T::kDataLanes - 1) * 8;
  const char *kbase = static_cast<const char *>(k) + 2 * (hkv * k_stride_h + elem);
  const char *vbase = static_cast<const char *>(v) + 2 * (hkv * v_stride_h + elem);
  if (!T::kPaged) {
    kbase += 2 * b * k_stride_b;
    vbase += 2 * b * v_stride_b;
  }
  ChunkPages<T> pages(page_table, page_table_stride, b, page_size, seg, tw, lane);  // predicated loads
  float *my_scores = sh.scores[wave];

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
  // An empty segment loads nothing (clamped loads need a token), nor does a wave
  // of padding rows only (row_waves).
  const bool loads = seg.begin < seg.end && ws.live;
  if constexpr (kClampedLoads) {
    // AMD: every lane loads, unconditionally, from a token of the segment, so the
    // chunk's loads are issued straight and the compiler's s_waitcnt counts them
    // exactly (loads skipped by exec-masked branches make it assume none is
    // outstanding at the join, and wait for all of them at the top of the loop).
    // Token n*TPL + grp of the chunk at tok0 loads as chunk_span says: a token at or
    // past the end reads the last valid token; a chunk wholly past the end reads the
    // segment's first chunk (its own page too); an idle lane reads its token's last
    // elements. Whatever they bring is masked: the scores of those tokens are -inf
    // (p = 0, and the data are the segment's own, finite where the caller's are),
    // idle lanes hold q = 0 and store nothing.
    // Contiguous KV and pages of a multiple of the chunk (kSmall false): the chunk's
    // address (one for the wave) plus the lane's token offset, grp token strides
    // and n TPL-token steps on, or the segment's last token where that is past it.
    // Pages shorter than a chunk (kSmall): each token's page and place in it. A copy
    // of the loop (clamped_chunk_loop) for each.
    const long long k_grp = 2 * grp * k_stride_t, v_grp = 2 * grp * v_stride_t;
    const long long k_step = 2 * TPL * k_stride_t, v_step = 2 * TPL * v_stride_t;
    auto stream = [&](auto small_pages) {
      constexpr bool kSmall = decltype(small_pages)::value;
      using Pages = ClampedPages<T, kSmall, SimtTokens<T>>;
      Pages cpages(page_table, page_table_stride, b, page_size, seg, tw, SimtTokens<T>{grp});
      auto load_chunk = [&](int tok0, u32x4 (&kw)[NL], u32x4 (&vw)[NL]) {
        int pg[Pages::N] = {};
        if constexpr (T::kPaged) cpages.pages(tok0, pg);
        const ChunkSpan cs = chunk_span(tok0, seg.begin, seg.end);
        if constexpr (kSmall) {
#pragma unroll
          for (int n = 0; n < NL; ++n) {
            const long long in_page = (cs.base + (int)span_offset(cs, cpages.tokens(n))) & (page_size - 1);
            kw[n] = load16(kbase + 2 * (pg[n] * k_stride_b + in_page * k_stride_t));
            vw[n] = load16(vbase + 2 * (pg[n] * v_stride_b + in_page * v_stride_t));
          }
        } else {
          const long long in_page = T::kPaged ? cs.base & (page_size - 1) : cs.base;
          const long long page = T::kPaged ? wave_uniform(pg[0]) : 0;  // the chunk's (the wave's) page
          const char *kc = kbase + 2 * (page * k_stride_b + in_page * k_stride_t);
          const char *vc = vbase + 2 * (page * v_stride_b + in_page * v_stride_t);
          const long long klast = 2 * (long long)cs.last * k_stride_t, vlast = 2 * (long long)cs.last * v_stride_t;
          // The select is on the offset: between two pointers, LLVM put some of the
          // loads in exec-masked branches (decision 0042).
#pragma unroll
          for (int n = 0; n < NL; ++n) {
            const bool in = n * TPL + grp <= cs.last;
            kw[n] = load16(kc + (in ? k_grp + n * k_step : klast));
            vw[n] = load16(vc + (in ? v_grp + n * v_step : vlast));
          }
        }
      };
      using KR = u32x4[NL];
      clamped_chunk_loop<T, KR, KR>(seg, tw, load_chunk, step);
    };
    if (loads) by_page_kind<T>(page_size, stream);
  } else {
    // Predicated loads: zeros, and no memory access, at or past the segment end and
    // in idle lanes.
    auto load_chunk_as = [&](bool small, int tok0, u32x4 (&kw)[NL], u32x4 (&vw)[NL]) {
      const long long chunk_page = pages.page(tok0);
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
      if (T::kPaged && pages.small)
        load_chunk_as(true, tok0, kw, vw);
      else
        load_chunk_as(false, tok0, kw, vw);
    };
    // Two register sets take turns (the loop is unrolled by two).
    u32x4 ka[NL], va[NL], kb[NL], vb[NL];
    if (loads) {
      load_chunk(seg.begin + tw * C, ka, va);
      for (int tile = seg.begin; tile < seg.end; tile += 2 * T::kTile) {
        const int tok0 = tile + tw * C;
        load_chunk(tok0 + T::kTile, kb, vb);
        step(tok0, ka, va);
        if (tile + T::kTile >= seg.end) break;
        load_chunk(tok0 + 2 * T::kTile, ka, va);
        step(tok0 + T::kTile, kb, vb);
      }
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
      for (int e = 0; e < 8; ++e) sh.wave_acc[ws.slot][ws.row + r][li * 8 + e] = acc[r][e];
      if (li == 0) {
        sh.wave_max[ws.slot][ws.row + r] = run_max[r];
        sh.wave_sum[ws.slot][ws.row + r] = run_sum[r];
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

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_SIMT_H
