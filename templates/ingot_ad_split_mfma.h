// ingot_ad_split_mfma.h: the matrix-core split kernel (decode_split_mfma), AMD's
// path where a workgroup's rows fill a 16-row matrix tile well enough (traits
// kUseMfma: bf16 or fp16, at least 4 rows, head dim 64 or 128; docs/decisions/0025 says why
// not 256, though the code below is written for 64 and any multiple of 128). It runs on gfx942
// and gfx950 with v_mfma_f32_16x16x16 (mfma16, ingot_arch.h) and on the emulated 64-lane
// wave of the test arch sm_90_w64 and of the CPU simulation with the emulation
// of ingot_mfma_emulated.h, so that its lane logic is checked off AMD hardware.
//
// Per wave and 16-token tile of its chunk, two matrix products:
//   S^T (16 tokens x 16 rows) = K (16 tokens x D) q^T (D x 16 rows), in D / 16
//       steps: lane l loads a quarter of D (D / 4 contiguous elements, from
//       element D / 4 (l / 16)) of token l % 16, and holds the same quarter of
//       q row l % 16; step s takes elements 4s .. 4s + 3 of the quarter (any
//       order of D serves both operands alike). The result leaves lane l the
//       scores of row l % 16 for tokens 4 (l / 16) .. + 3: four scores of one row.
//   O (16 rows x D) += P (16 rows x 16 tokens) V (16 tokens x D), D / 16 column
//       tiles: those scores, as probabilities rounded to the KV type, are P's
//       layout as the A operand already (row l % 16, tokens 4 (l / 16) + e), and
//       lane l loads V for the same four tokens, elements D / 16 (l % 16) ..+ D/16
//       (one 8-byte load each at head dim 64, one or two 16-byte loads from 128), so
//       that column tile t is the elements D / 16 c + t of lane column c: the four
//       tokens' values of one element
//       are paired into the B operand's two words with shifts and masks, no LDS.
//   Lane l then holds O rows 4 (l / 16) .. + 3 at elements D / 16 (l % 16) + t.
// The online softmax is per row: a row's 16 scores of a tile sit in four lanes
// (l % 16 the same), so its max is two exchanges (xor 16, 32); the rescale of
// O's rows takes each row's factor from the lane that holds it (four exchanges
// a chunk). The row sums add the rounded probabilities, the ones P.V used.
//
// Loads as on the SIMT path: unconditional, from tokens clamped into the
// segment (a token past the end reads the last valid one, a chunk wholly past it
// the segment's first), two register sets taking turns so the next chunk is in
// flight while this one is used, page-table entries read two chunks ahead. What
// a clamped token brings is masked (score -inf, p = 0, and its data are the
// segment's own, finite where the caller's are): nothing at or past the valid
// length is read, so its bytes (NaN, Inf, garbage) never reach P.V.
#ifndef INGOT_AD_SPLIT_MFMA_H
#define INGOT_AD_SPLIT_MFMA_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_pages.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split_finish.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

namespace ingot {

// Word i (0..3) of a 16-byte load, (0..1) of an 8-byte one.
INGOT_DEVICE u32 word_of(const u32x4 &w, int i) { return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w; }
INGOT_DEVICE u32 word_of(const u32x2 &w, int i) { return i == 0 ? w.x : w.y; }

// A lane's V elements of one token (D / 16 of them): 16-byte loads from head dim 128, one
// 8-byte load at 64.
template <int KS>
struct VLoad {
  using W = u32x4;
  static constexpr int kLoads = KS / 8;
  static INGOT_DEVICE W load(const void *p) { return load16(p); }
};
template <>
struct VLoad<4> {
  using W = u32x2;
  static constexpr int kLoads = 1;
  static INGOT_DEVICE W load(const void *p) { return load8(p); }
};

// The tokens of a lane's loads in its chunk, for pages shorter than a chunk
// (ClampedPages, ingot_ad_pages.h): its K token of each tile (16 n + l % 16) and its
// four V tokens of each (16 n + 4 (l / 16) + j). Entry i: K token of tile i (i <
// NT), else V token j of tile n (i = NT + 4 n + j).
template <class T>
struct MfmaTokens {
  static constexpr int NT = T::kChunk / 16, kCount = 5 * NT;
  int c16, q4;
  INGOT_DEVICE int operator()(int i) const {
    return i < NT ? 16 * i + c16 : 16 * ((i - NT) / 4) + 4 * q4 + (i - NT) % 4;
  }
};

// pc: the piece a balanced workgroup runs (decode_split_balanced), nullptr in a
// uniform plan (sequence block_z(), segment `split`).
template <class T>
INGOT_DEVICE void decode_split_mfma(INGOT_AD_PARAMS, const Piece *pc = nullptr) {
  constexpr int R = T::kWaveRows, D = T::kHeadDim, DT = T::kDType;
  constexpr int NT = T::kChunk / 16;  // 16-token tiles of a wave's chunk
  constexpr int KE = D / 4;           // K (and q) elements a lane holds of a token: a quarter of D
  constexpr int KL = KE / 8;          // their 16-byte loads
  constexpr int KS = D / 16;          // q.K^T steps (4 elements of each quarter), and P.V column tiles
  using VW = typename VLoad<KS>::W;   // a load of a token's V elements a lane holds (D / 16)
  constexpr int VL = VLoad<KS>::kLoads;
  constexpr int VWords = sizeof(VW) / 4;
  static_assert(T::kUseMfma && (KS % 8 == 0 || KS == 4) && R <= 16 && T::kChunk % 16 == 0,
                "the matrix-core path's shapes");

  const int tid = thread_id();
  const int wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int c16 = lane % 16, q4 = lane / 16;
  const SplitBlock blk = split_block<T>(group, sq, num_kv_heads);
  const int row0 = blk.row0, hkv = blk.hkv, split = blk.split;
  const int b = pc != nullptr ? pc->b : block_z();
  // This wave's rows (row_waves: its own of the block's) and chunk of each step.
  const WaveSlot ws = wave_slot<T>(wave, row0, group * sq);
  const int tw = wave_uniform(token_wave<T>(wave));

  grid_dependency_wait();

  // q row c16 of this workgroup's rows (past ROWS or past group x sq: a padding
  // row, zeros, never live), this lane's quarter of it. Every lane loads, a
  // padding row's lanes the block's first row (always a real one), and drops it:
  // loads straight, not in exec-masked branches, so they and the length's go
  // out together and share one round trip.
  const RowPos rp = row_pos(row0 + ws.row + c16, group);
  const bool row_ok = c16 < R && rp.i < sq;
  u32x4 qw[KL];
  {
    const RowPos src = row_ok ? rp : row_pos(row0, group);  // the block's first row: real
    const char *qp = static_cast<const char *>(q) +
                     2 * (b * q_stride_b + ((long long)hkv * group + src.g) * q_stride_h +
                          (long long)src.i * q_stride_s + q4 * KE);
#pragma unroll
    for (int n = 0; n < KL; ++n) qw[n] = load16_dep_if(qp + 16 * n, true);
  }
  const Lengths seg = pc != nullptr ? pc->seg : segment<T>(seq_lens, b, capacity, split, num_splits);
  // The keys (exclusive) row c16 sees within the segment (a padding row: all; clamped
  // loads give every position a real token's K, so its scores stay finite).
  const int limit = segment_limit(row_ok, rp, seg, sq, flags);
  // Scores in log2 units, scaled where they are exponentiated (one fma with the row's
  // max), by a positive qscale: a negative scale flips q's signs instead (exact), and a
  // zero one is the smallest normal float (a score times it stays finite, a masked one -inf).
  const float qscale = max32((scale < 0.f ? -scale : scale) * kLog2e, kMinNormal);
  const u32 qsign = scale < 0.f ? 0x80008000u : 0u;
  u32 qb[KS][2];  // q as the B operand of step s: elements 4s .. 4s + 3 of the quarter (0: padding)
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    qb[s][0] = row_ok ? word_of(qw[s / 2], (2 * s) % 4) ^ qsign : 0u;
    qb[s][1] = row_ok ? word_of(qw[s / 2], (2 * s) % 4 + 1) ^ qsign : 0u;
  }

  float run_max = kNegInf, run_sum = 0.f;  // row c16's (the same in its four lanes; the sum is per lane)
  float acc[KS][4];                        // O rows 4 q4 + r, element KS c16 + t
#pragma unroll
  for (int t = 0; t < KS; ++t)
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[t][r] = 0.f;

  // K and V of this workgroup's KV head (contiguous KV: of sequence b too), and the
  // lane's own part of a token's address: its quarter of K, its D / 16 elements of V.
  const char *kseq = static_cast<const char *>(k) + 2 * (hkv * k_stride_h);
  const char *vseq = static_cast<const char *>(v) + 2 * (hkv * v_stride_h);
  if (!T::kPaged) {
    kseq += 2 * b * k_stride_b;
    vseq += 2 * b * v_stride_b;
  }
  const int k_lane = 2 * q4 * KE, v_lane = 2 * KS * c16;
  // A lane's tokens, bytes on from its chunk's first (contiguous KV, or pages of a
  // multiple of the chunk): its K token of tile n, 16 n + c16, and its first V token of it,
  // 16 n + 4 q4 (the next three a V token stride each further on). Fixed for the
  // kernel: a chunk's addresses are one base and adds, not a multiply per token.
  long long k_fixed[NT], v_fixed[NT];
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    k_fixed[n] = 2 * (16 * n + c16) * k_stride_t;
    v_fixed[n] = 2 * (16 * n + 4 * q4) * v_stride_t;
  }
  const long long v_token = 2 * v_stride_t;

  auto step = [&](int tok0, const u32x4 (&kw)[NT][KL], const VW (&vw)[NT][4][VL]) {
    float sc[NT][4];  // row c16's scores of tokens 16 n + 4 q4 + r
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int s = 0; s < KS; ++s) {
        const u32 a[2] = {word_of(kw[n][s / 2], (2 * s) % 4), word_of(kw[n][s / 2], (2 * s) % 4 + 1)};
        mfma16<DT>(c, a, qb[s]);
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) sc[n][r] = c[r];  // unscaled
    }
    if (tok0 + T::kChunk > limit) {  // the segment's last chunk, or a causal row's
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (tok0 + 16 * n + 4 * q4 + r >= limit) sc[n][r] = kNegInf;
    }
    // One rescale per chunk: the row's max over its four lanes.
    float mc = kNegInf;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) mc = max32(mc, sc[n][r]);
    mc = max32(mc, shfl_xor(mc, 16));
    mc = max32(mc, shfl_xor(mc, 32));
    const float m = max32(run_max, mc * qscale);
    // A row with nothing live so far keeps 0 as its reference: exp2(-inf - 0) = 0, no NaN.
    const float ref = m == kNegInf ? 0.f : m;
    const bool grew = m > run_max;
    const float alpha = grew ? fast_exp2(run_max - ref) : 1.f;
    run_max = m;
    run_sum *= alpha;
    if (wave_any(grew)) {  // no row's max grew: O needs no rescale
#pragma unroll
      for (int r = 0; r < 4; ++r) {  // O row 4 q4 + r takes the factor of the lanes of that row
        const float ar = bits_to_float((u32)shfl_idx((int)float_to_bits(alpha), 4 * q4 + r));
#pragma unroll
        for (int t = 0; t < KS; ++t) acc[t][r] *= ar;
      }
    }
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      u32 h[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        h[r] = pack1<DT>(fast_exp2(fma32(sc[n][r], qscale, -ref)));
        run_sum += DT == kBF16 ? bits_to_float(h[r] << 16) : half_to_float((u16)h[r]);
      }
      const u32 pa[2] = {h[0] | (h[1] << 16), h[2] | (h[3] << 16)};
#pragma unroll
      for (int t = 0; t < KS; ++t) {
        // Element KS c16 + t of the four tokens: the low half of word t / 2 for even t, else the high.
        u32 w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = word_of(vw[n][j][t / (2 * VWords)], (t / 2) % VWords);
        u32 bw[2];
        if (t % 2 == 0) {
          bw[0] = (w[0] & 0xffffu) | (w[1] << 16);
          bw[1] = (w[2] & 0xffffu) | (w[3] << 16);
        } else {
          bw[0] = (w[0] >> 16) | (w[1] & 0xffff0000u);
          bw[1] = (w[2] >> 16) | (w[3] & 0xffff0000u);
        }
        mfma16<DT>(acc[t], pa, bw);
      }
    }
  };

  // The wave's chunks, contiguous KV or pages of a multiple of the chunk (kSmall
  // false) or pages shorter than a chunk (kSmall): a copy of the loop for each.
  auto stream = [&](auto small_pages) {
    constexpr bool kSmall = decltype(small_pages)::value;
    using Pages = ClampedPages<T, kSmall, MfmaTokens<T>>;
    Pages pages(page_table, page_table_stride, b, page_size, seg, tw, MfmaTokens<T>{c16, q4});
    // The wave's chunk at tok0: lane l's K quarter of token 16 n + c16 and its V
    // elements of tokens 16 n + 4 q4 + j, every lane unconditionally from a
    // clamped token (see above). Contiguous KV and pages of a multiple of the chunk: the
    // chunk's address (one for the wave) plus the lane's clamped token times the
    // token stride; pages shorter than a chunk: each token's page and place in it.
    auto load_chunk = [&](int tok0, u32x4 (&kw)[NT][KL], VW (&vw)[NT][4][VL]) {
      int pg[Pages::N] = {};
      if constexpr (T::kPaged) pages.pages(tok0, pg);
      const ChunkSpan cs = chunk_span(tok0, seg.begin, seg.end);
      // Pages shorter than a chunk: entry i's token, its page and place in it.
      auto token_address = [&](const char *base, int lane_part, int i, long long stride_b, long long stride_t) {
        const int tok = cs.base + (int)span_offset(cs, pages.tokens(i));
        return base + lane_part + 2 * (pg[i] * stride_b + (long long)(tok & (page_size - 1)) * stride_t);
      };
      // Otherwise the chunk's first token (the wave's), this lane's part of it, and its
      // last token's: a lane's token is its fixed offset on from the first, or the last
      // where it is past it.
      const long long in_page = T::kPaged ? cs.base & (page_size - 1) : cs.base;
      const long long page = T::kPaged && !kSmall ? wave_uniform(pg[0]) : 0;  // the chunk's (the wave's) page
      const char *kc = kseq + k_lane + 2 * (page * k_stride_b + in_page * k_stride_t);
      const char *vc = vseq + v_lane + 2 * (page * v_stride_b + in_page * v_stride_t);
      const char *klast = kc + 2 * (long long)cs.last * k_stride_t;
      const char *vlast = vc + 2 * (long long)cs.last * v_stride_t;
      auto k_address = [&](int n) -> const char * {  // K token of tile n
        if constexpr (kSmall) return token_address(kseq, k_lane, n, k_stride_b, k_stride_t);
        return 16 * n + c16 <= cs.last ? kc + k_fixed[n] : klast;
      };
      auto v_address = [&](int n, int j) -> const char * {  // V token j of tile n
        if constexpr (kSmall) return token_address(vseq, v_lane, NT + 4 * n + j, v_stride_b, v_stride_t);
        return 16 * n + 4 * q4 + j <= cs.last ? vc + v_fixed[n] + j * v_token : vlast;
      };
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const char *kp = k_address(n);
#pragma unroll
        for (int l = 0; l < KL; ++l) kw[n][l] = load16(kp + 16 * l);
      }
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const char *vp = v_address(n, j);
#pragma unroll
          for (int l = 0; l < VL; ++l) vw[n][j][l] = VLoad<KS>::load(vp + sizeof(VW) * l);
        }
    };

    // The loop over the wave's chunks (ingot_ad_pages.h says why it is written so).
    using KR = u32x4[NT][KL];
    using VR = VW[NT][4][VL];
    clamped_chunk_loop<T, KR, VR>(seg, tw, load_chunk, step);
  };
  // An empty segment loads nothing (clamped loads need a token), nor does a wave
  // of padding rows only (row_waves).
  if (seg.begin < seg.end && ws.live) by_page_kind<T>(page_size, stream);

  // The row's sum over its four lanes.
  run_sum += shfl_xor(run_sum, 16);
  run_sum += shfl_xor(run_sum, 32);
  if constexpr (T::kRowWaves) {
    // Under row_waves a wave took every token of its rows: there is no other wave's
    // (max, sum, acc) to merge them with, so the wave writes its rows itself, from its
    // registers: no LDS and no barrier (the 16 KiB of SplitShared at head dim 128 held
    // gfx942 to 3 workgroups per CU; decision 0045). Row c16's weight (1 / sum) and LSE
    // (log2) are finish_split's for one wave, bit for bit; lane l's O rows 4 q4 + r take
    // them from lane 4 q4 + r, and it writes the row's elements KS c16 .. + KS (16 lanes
    // a row: whole lines).
    launch_dependents();  // this workgroup's loads are done (as on the SIMT path)
    const int rows_total = group * sq;
    const float inv = run_sum > 0.f ? fast_rcp(run_sum) : 0.f;  // a row that saw no key: O = 0
    const float lse2 = run_sum > 0.f ? run_max + fast_log2(run_sum) : kNegInf;
    const SplitTarget tgt =
        split_target<T>(pc, b, hkv, split, workspace, num_kv_heads, num_splits, rows_total, flags);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int wr = 4 * q4 + r;  // the wave's row of this lane's O row r
      const float wgt = bits_to_float((u32)shfl_idx((int)float_to_bits(inv), wr));
      const float l2 = bits_to_float((u32)shfl_idx((int)float_to_bits(lse2), wr));
      const int row = row0 + ws.row + wr;
      if (wr >= R || row >= rows_total) continue;  // a padding row
      float out[KS];
#pragma unroll
      for (int t = 0; t < KS; ++t) out[t] = acc[t][r] * wgt;
      store_split_cols<T, KS>(tgt, b, hkv, row, row_pos(row, group), KS * c16, out, l2, INGOT_AD_ARGS);
    }
  } else {
    // The wave's (max, sum, acc) to LDS; finish_split merges the waves'.
    INGOT_SHARED SplitShared<T> sh;
    if (q4 == 0 && c16 < R) {
      sh.wave_max[ws.slot][ws.row + c16] = run_max;
      sh.wave_sum[ws.slot][ws.row + c16] = run_sum;
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = 4 * q4 + r;
      if (row < R) {
#pragma unroll
        for (int t = 0; t < KS; ++t) sh.wave_acc[ws.slot][ws.row + row][KS * c16 + t] = acc[t][r];
      }
    }
    // As on the SIMT path: this workgroup's loads are done.
    launch_dependents();
    finish_split<T>(sh, tid, b, hkv, split, row0, pc, INGOT_AD_ARGS);
  }
}

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_MFMA_H
