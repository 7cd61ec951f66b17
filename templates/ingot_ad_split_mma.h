// ingot_ad_split_mma.h: the tensor-core split kernel (decode_split_mma; sm_90:
// mma.sync.m16n8k16, and cp.async for knob `stages`) and what only it uses: the
// shared-memory ring (SplitSmem) and the split's static or dynamic shared memory
// (split_smem). NVIDIA only: ingot_ad_split.h includes it where the arch layer
// has the tensor cores' primitives (sm_90; the sm_90_w64 emulation parses it but
// runs the SIMT path), so the AMD archs neither parse it nor declare them.
#ifndef INGOT_AD_SPLIT_MMA_H
#define INGOT_AD_SPLIT_MMA_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_pages.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split_finish.h"
#include "ingot_ad_trace.h"
#include "ingot_ad_traits.h"
#include "ingot_arch.h"

#if !INGOT_ARCH_NVIDIA
#error "the tensor-core split path is NVIDIA's (mma.sync, cp.async)"
#endif

namespace ingot {

// The tensor-core path's shared-memory ring (kStages > 0): per wave (one for the
// whole workgroup under row_waves) and stage, the chunk's K rows then its V rows,
// D elements each. The waves' results reuse the same bytes once every wave is
// past its loop. A ring is aligned to 128 bytes, as a dynamic ring's start is
// (BalanceShared, dynamic_lds): a ring off the 128-byte lines doubled the L2
// sectors its cp.async copies asked for (decision 0037), and in a static ring
// the balanced split's scan state may sit before it. Without a ring, 16.
template <class T>
union alignas(T::kStages > 0 ? 128 : 16) SplitSmem {
  SplitShared<T> fin;
  u16 ring[T::kStages > 0 ? T::kTokenWaves * T::kStages * 2 * T::kChunk * T::kMmaDim : 1];
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

// ---- split kernel, tensor-core path (sm_90) -------------------------------------
// A wave takes 16 tokens per PV step. Lane l = 4g + q. QK: one m16n8k16 per 8
// tokens and 16 elements of D; A = q (rows g and g + 8: the tile's halves), B =
// K^T (token 8u + g, the 16-byte chunks q + 4j of D: the k order of the dot
// product is free, so each lane loads whole chunks). The accumulator then holds
// S[row g + 8h][token 8u + 2q + e] in c[2h + e], which is exactly the A operand
// of PV for the same tokens: softmax needs only the quad (lanes 4g..4g+3) to
// agree on a row max. PV: B = V (tokens 2q + {0,1,8,9} of a 16-token step,
// column g of each 8-wide n tile). From registers (the register pipeline) output
// column n of n tile i is element d = 64*(i/8) + 8n + i%8, so V is read in 16-byte
// chunks g + 8*cc and the B operand is two byte permutes away; from the ring,
// ldmatrix .trans gives n tile i as columns 8i + n (kVTrans). A wave of up to 8 rows fills the tile's first half
// (NH 1: the second is zeros, computed and dropped); 9 to 16 rows fill both (NH
// 2) for the same K and V fragments and the same mma count: a wave's second 8
// rows cost registers (q, S, O), not reads.
template <class T>
INGOT_DEVICE void decode_split_mma(INGOT_AD_PARAMS, const Piece *pc = nullptr) {
  // D: the padded head dim (T::kMmaDim); DC: the 16-byte chunks of a row that hold data.
  constexpr int R = T::kWaveRows, D = T::kMmaDim, DT = T::kDType, C = T::kChunk, NS = T::kStages;
  constexpr int DC = T::kHeadDim / 8;
  constexpr int NU = C / 8;     // QK n tiles of 8 tokens
  constexpr int NKS = D / 16;   // QK k steps
  // 16-byte K chunks per token per lane: those of the chunks qd + 4j that hold data for some
  // lane (head dims 80 and 96: 3 of the padded 128's 4, so a quarter of QK's mma and K's
  // fragments are not issued; 160: 5 of 6). A k step past them would add zeros.
  constexpr int NKC = (DC + 3) / 4;
  constexpr int NPV = C / 16;   // PV k steps of 16 tokens
  constexpr int NDT = D / 8;    // PV n tiles
  constexpr int NVC = D / 64;   // 16-byte V chunks per token per lane
  // Ring kernels read V's fragments with ldmatrix .trans (kVTrans): n tile i is then V's
  // 16-byte chunk i (columns 8i .. 8i + 7), so only the DC chunks that hold data take an
  // mma (head dim 80: 10 of the padded 128's 16) and no fragment needs a byte permute. The
  // register pipeline loads V from global memory into registers (no ldmatrix): n tile el of
  // lane g's chunk g + 8cc is its element el, all NDT tiles of the padded head dim.
  constexpr bool kVTrans = NS > 0;
  constexpr int NO = kVTrans ? DC : NDT;  // O's n tiles
  constexpr int CPR = D / 8;    // 16-byte chunks per row of D
  constexpr int NH = R > 8 ? 2 : 1;  // halves of the m16 tile that hold rows (g, and g + 8)
  static_assert(T::kUseMma && kWaveSize == 32 && D % 64 == 0 && C % 16 == 0 && R <= 16, "mma path shape");
  static_assert(NS == 0 || (C * CPR) % kWaveSize == 0, "ring copies: whole waves");
  static_assert(!T::kRowWaves || NS > 0, "row_waves on the tensor-core path: the waves share a ring (stages)");
  SplitSmem<T> &smem = split_smem<T>();
  SplitShared<T> &sh = smem.fin;

  const int tid = thread_id();
  const int wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int g = lane >> 2, qd = lane & 3;
  const SplitBlock blk = split_block<T>(group, sq, num_kv_heads);  // grid x as in the SIMT path
  const int row0 = blk.row0, hkv = blk.hkv, split = blk.split;
  const int b = pc != nullptr ? pc->b : block_z();
  // This wave's rows (row_waves: its own of the block's) and chunk of each step.
  const WaveSlot ws = wave_slot<T>(wave, row0, group * sq);
  const int tw = token_wave<T>(wave);
  SplitTrace<T> trace;  // knob `trace`: the phases' stamps (nothing without it)
  trace.stamp(kSplitStart);
  grid_dependency_wait();  // as in the SIMT path
  trace.stamp(kSplitWaited);
  // Fragment positions: K of token 8u + g, chunks qd + 4j; V of tokens
  // 16p + 2qd + (t & 1) + 8(t >> 1), chunks g + 8cc.
  auto v_token = [&](int p, int t) { return 16 * p + 2 * qd + (t & 1) + 8 * (t >> 1); };
  // A operand of QK: row g's chunks qd + 4j, as loaded (16-bit pairs), and row
  // g + 8's in words 1 and 3 (NH 2; zeros else); issued before the length's
  // load so that the two round trips overlap.
  const int row = row0 + ws.row + g;
  const RowPos rp = row_pos(row, group);
  const int gq = rp.g, iq = rp.i;
  const bool row_ok = g < R && iq < sq;
  const RowPos rp8 = row_pos(row + 8, group);  // (NH 2) row g + 8
  const bool row_ok8 = NH > 1 && g + 8 < R && rp8.i < sq;
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
    if constexpr (NH > 1) {
      const char *qp8 = static_cast<const char *>(q) +
                        2 * (b * q_stride_b + ((long long)hkv * group + rp8.g) * q_stride_h +
                             (long long)rp8.i * q_stride_s + (qd + 4 * j) * 8);
      const u32x4 w8 = load16_dep_if(qp8, row_ok8 && qd + 4 * j < DC);
      qa[2 * j][1] = w8.x;
      qa[2 * j][3] = w8.y;
      qa[2 * j + 1][1] = w8.z;
      qa[2 * j + 1][3] = w8.w;
    } else {
      qa[2 * j][1] = qa[2 * j][3] = qa[2 * j + 1][1] = qa[2 * j + 1][3] = 0u;
    }
  }
  const Lengths seg = pc != nullptr ? pc->seg : segment<T>(seq_lens, b, capacity, split, num_splits);
  trace.length_known(seg.end);  // after q's loads are issued: waits for the length only
  // Scores are scaled where they are exponentiated (one fma with the row's max), by a
  // positive qscale: a negative scale flips q's signs instead (exact), and a zero one is
  // the smallest normal float (a score times it stays finite, a masked one -inf).
  const float qscale = max32((scale < 0.f ? -scale : scale) * kLog2e, kMinNormal);
  if (scale < 0.f) {
#pragma unroll
    for (int j = 0; j < NKS; ++j)
#pragma unroll
      for (int x = 0; x < 4; ++x) qa[j][x] ^= 0x80008000u;
  }
  // The keys (exclusive) rows g (and g + 8) see within the segment (a padding row, past the
  // group's rows or g past the wave's: all).
  int limit[NH];
  limit[0] = segment_limit(row_ok, rp, seg, sq, flags);
  if constexpr (NH > 1) limit[NH - 1] = segment_limit(row_ok8, rp8, seg, sq, flags);
  const int limit_min = NH > 1 ? imin(limit[0], limit[NH - 1]) : limit[0];

  float run_max[NH], run_sum[NH];
#pragma unroll
  for (int h = 0; h < NH; ++h) run_max[h] = kNegInf, run_sum[h] = 0.f;
  float acc[NO][2 * NH];  // O: row g + 8h, columns 2qd + e of n tile i in acc[i][2h + e]
#pragma unroll
  for (int i = 0; i < NO; ++i)
#pragma unroll
    for (int e = 0; e < 2 * NH; ++e) acc[i][e] = 0.f;

  const char *kbase = static_cast<const char *>(k) + 2 * (hkv * k_stride_h);
  const char *vbase = static_cast<const char *>(v) + 2 * (hkv * v_stride_h);
  if (!T::kPaged) {
    kbase += 2 * b * k_stride_b;
    vbase += 2 * b * v_stride_b;
  }
  ChunkPages<T> pages(page_table, page_table_stride, b, page_size, seg, tw, lane);
  // The element offset of a token within K or V, on its page when paged (page:
  // its chunk's, or its own where pages are shorter than a chunk).
  auto token_off = [&](int pos, long long page, bool small, long long sb, long long st) -> long long {
    return T::kPaged ? pages.token_page(pos, page, small) * sb + (long long)(pos & (page_size - 1)) * st
                     : (long long)pos * st;
  };

  // One chunk of C tokens at tok0 through the tensor cores: S = q K^T, one
  // online-softmax rescale, O += P V. This lane's fragments come from kf(u, j)
  // (token 8u + g, 16-byte chunk qd + 4j) and vf: registers, vf(p, t, cc) (token
  // v_token(p, t), chunk g + 8cc), or the ring, vf(p, m) (n tiles 2m and 2m + 1's B
  // words of PV step p, kVTrans), read where they are used so that a chunk of head
  // dim 256 need not sit in registers whole.
  auto consume = [&](int tok0, auto &&kf, auto &&vf) {
    // S (unscaled) for rows g + 8h, tokens 8u + 2qd + e.
    float sc[NU][NH][2];
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
      for (int h = 0; h < NH; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) sc[u][h][e] = c[2 * h + e];
    }
    if (tok0 + C > limit_min) {  // the segment's last chunk, or a causal row's
#pragma unroll
      for (int u = 0; u < NU; ++u)
#pragma unroll
        for (int h = 0; h < NH; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (tok0 + 8 * u + 2 * qd + e >= limit[h]) sc[u][h][e] = kNegInf;
    }
    // One rescale per chunk and row; the quad shares the row.
    float ref[NH], alpha[NH];
    bool grew = false;
#pragma unroll
    for (int h = 0; h < NH; ++h) {
      float cmax = kNegInf;
#pragma unroll
      for (int u = 0; u < NU; ++u)
#pragma unroll
        for (int e = 0; e < 2; ++e) cmax = max32(cmax, sc[u][h][e]);
      cmax = max32(cmax, shfl_xor(cmax, 1));
      cmax = max32(cmax, shfl_xor(cmax, 2));
      const float m = max32(run_max[h], cmax * qscale);
      ref[h] = m == kNegInf ? 0.f : m;
      alpha[h] = m > run_max[h] ? fast_exp2(run_max[h] - ref[h]) : 1.f;
      grew = grew || m > run_max[h];
      run_max[h] = m;
      run_sum[h] *= alpha[h];
    }
    // Ring kernels: O is rescaled only when a row's max grew (the common chunk needs no
    // rescale). The register pipeline always rescales: the branch costs it registers it
    // has not got (spills at head dim 128 with the next chunk in flight).
    if (NS == 0 || wave_any(grew)) {
#pragma unroll
      for (int i = 0; i < NO; ++i)
#pragma unroll
        for (int e = 0; e < 2 * NH; ++e) acc[i][e] *= alpha[e / 2];
    }
    float pr[NU][NH][2];
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int h = 0; h < NH; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          pr[u][h][e] = fast_exp2(fma32(sc[u][h][e], qscale, -ref[h]));
          run_sum[h] += pr[u][h][e];
        }

    // O += P V, 16 tokens per step. P's words 1 and 3 (and O's c[2], c[3]) are the second half's
    // rows where there is one, else zeros; its index is written NH - 1 so that it stays in
    // bounds when NH is 1 (the branch not taken is still compiled).
    // O's n tile i += P B (B's two words for the tile).
    auto pv_mma = [&](int i, const u32 (&pa)[4], u32 b0, u32 b1) {
      float c[4] = {acc[i][0], acc[i][1], NH > 1 ? acc[i][2 * NH - 2] : 0.f, NH > 1 ? acc[i][2 * NH - 1] : 0.f};
      mma16816<DT>(c, pa, b0, b1);
#pragma unroll
      for (int e = 0; e < 2 * NH; ++e) acc[i][e] = c[e];
    };
#pragma unroll
    for (int p = 0; p < NPV; ++p) {
      const u32 pa[4] = {pack2<DT>(pr[2 * p][0][0], pr[2 * p][0][1]),
                         NH > 1 ? pack2<DT>(pr[2 * p][NH - 1][0], pr[2 * p][NH - 1][1]) : 0u,
                         pack2<DT>(pr[2 * p + 1][0][0], pr[2 * p + 1][0][1]),
                         NH > 1 ? pack2<DT>(pr[2 * p + 1][NH - 1][0], pr[2 * p + 1][NH - 1][1]) : 0u};
      if constexpr (kVTrans) {
        // vf(p, m): n tiles 2m and 2m + 1's B words (tokens 16p .. 16p + 7, then + 8 .. + 15).
#pragma unroll
        for (int m = 0; m < NO / 2; ++m) {
          const u32x4 b = vf(p, m);
          pv_mma(2 * m, pa, b.x, b.y);
          pv_mma(2 * m + 1, pa, b.z, b.w);
        }
      } else {
#pragma unroll
        for (int cc = 0; cc < NVC; ++cc) {
          const u32x4 v0 = vf(p, 0, cc), v1 = vf(p, 1, cc), v2 = vf(p, 2, cc), v3 = vf(p, 3, cc);
#pragma unroll
          for (int el = 0; el < 8; ++el) {
            const int wi = el / 2;
            const u32 sel = (el & 1) ? 0x7632u : 0x5410u;
            const u32 w0 = wi == 0 ? v0.x : wi == 1 ? v0.y : wi == 2 ? v0.z : v0.w;
            const u32 w1 = wi == 0 ? v1.x : wi == 1 ? v1.y : wi == 2 ? v1.z : v1.w;
            const u32 w2 = wi == 0 ? v2.x : wi == 1 ? v2.y : wi == 2 ? v2.z : v2.w;
            const u32 w3 = wi == 0 ? v3.x : wi == 1 ? v3.y : wi == 2 ? v3.z : v3.w;
            pv_mma(8 * cc + el, pa, byte_perm(w0, w1, sel), byte_perm(w2, w3, sel));
          }
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
    load_chunk(seg.begin + tw * C, kw, vw);
    for (int tile = seg.begin; tile < seg.end; tile += T::kTile) {
      const int tok0 = tile + tw * C;
      u32x4 kn[NU][NKC], vn[NPV][4][NVC];
      load_chunk(tok0 + T::kTile, kn, vn);
      consume(
          tok0, [&](int u, int j) { return kw[u][j]; }, [&](int p, int t, int cc) { return vw[p][t][cc]; });
      trace.chunk_done(tile == seg.begin, run_max[0]);
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
    // alternate by 4, V rows by t & 7 (an ldmatrix phase reads one chunk of 8 rows).
    u16 *ring = smem.ring + tw * NS * 2 * C * D;
    auto k_at = [&](u16 *stage, int t, int c) { return stage + t * D + 8 * (c ^ ((t & 1) << 2)); };
    // V rows by t & 7 (kVTrans: ldmatrix reads a chunk of 8 consecutive rows).
    auto v_at = [&](u16 *stage, int t, int c) { return stage + (C + t) * D + 8 * (c ^ (t & 7)); };
    // Copies of one chunk: lane l takes chunks l + 32n of the chunk's C rows
    // (whole rows per half wave: coalesced), K and V alike; zeros past the end.
    // Under row_waves the workgroup's threads share the copies (thread t: chunks
    // t + threads x n) and the whole workgroup waits for them.
    // Head dim 256: the copies' addresses, unrolled, would take the registers the
    // chunk's fragments need (ptxas spills 440 bytes).
    constexpr int CT = T::kRowWaves ? T::kThreads : kWaveSize;  // threads that copy a chunk
    constexpr int NCOPY = (C * CPR + CT - 1) / CT;
    const int ct = T::kRowWaves ? tid : lane;
    constexpr int kIssueUnroll = D > 128 ? 1 : NCOPY;
    // Where the threads are a whole number of rows (CT a multiple of CPR; not at
    // head dims 160 and 192, padded to 192: 24 chunks a row), a thread's copies are
    // rows ct / CPR + n * TS, chunk ct % CPR of each, and where a page holds the
    // chunk (contiguous KV, or pages of a chunk or more) a copy's source is the
    // chunk's first row plus an offset fixed for the thread: the n-th is n * 2 * TS *
    // stride bytes on from the thread's first. A chunk's addresses then take one
    // multiply each for K and V and a 64-bit add per copy, not a token's offset apiece.
    constexpr bool kRowCopies = CT % CPR == 0;
    constexpr int TS = kRowCopies ? CT / CPR : 1;
    const int t_first = ct / CPR, c_copy = ct % CPR;
    const long long k_first = 2 * (long long)t_first * k_stride_t + c_copy * 16;
    const long long v_first = 2 * (long long)t_first * v_stride_t + c_copy * 16;
    auto issue_as = [&](bool small, int slot, int tok0) {  // the wave's chunk at tok0
      u16 *stage = ring + slot * 2 * C * D;
      const long long page = pages.page(tok0);
      if (kRowCopies && !small) {
        const char *kp = kbase + 2 * token_off(tok0, page, false, k_stride_b, k_stride_t) + k_first;
        const char *vp = vbase + 2 * token_off(tok0, page, false, v_stride_b, v_stride_t) + v_first;
#pragma unroll kIssueUnroll
        for (int n = 0; n < NCOPY; ++n) {
          const int t = t_first + TS * n;
          if ((C * CPR) % CT != 0 && t >= C) break;
          const bool live = tok0 + t < seg.end && c_copy < DC;
          copy16_async(k_at(stage, t, c_copy), kp, live);
          copy16_async(v_at(stage, t, c_copy), vp, live);
          kp += 2 * TS * k_stride_t;
          vp += 2 * TS * v_stride_t;
        }
        return;
      }
#pragma unroll kIssueUnroll
      for (int n = 0; n < NCOPY; ++n) {  // a token's offset per copy (pages shorter than the chunk: its page)
        const int i = ct + CT * n, t = i / CPR, c = i % CPR;
        if ((C * CPR) % CT != 0 && i >= C * CPR) break;
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
    // The first NS - 1 chunks, one copy of the issue code (not unrolled): every
    // SM fetches this straight-line code cold at the start of each workgroup,
    // and unrolled (two page variants x NS - 1 chunks) it was most of a paged
    // ring split's 133 KB, its fetch the paged split's largest stall on an H200
    // (decision 0039).
#pragma unroll 1
    for (int s = 0; s < NS - 1; ++s) {
      const int tok0 = seg.begin + s * T::kTile + tw * C;
      if (seg.begin + s * T::kTile < seg.end) issue(s, tok0);
      async_commit();
    }
    int slot = 0;  // the stage this step uses; the chunk NS - 1 steps ahead goes to the one before it
    for (int tile = seg.begin; tile < seg.end; tile += T::kTile) {
      async_wait<NS - 2>();  // this thread's copies of this step have landed
      // ... and every lane's (row_waves: every thread's); the stage before is no longer read
      if constexpr (T::kRowWaves)
        sync_block();
      else
        sync_wave();
      const int ahead = tile + (NS - 1) * T::kTile;
      if (ahead < seg.end) issue(slot == 0 ? NS - 1 : slot - 1, ahead + tw * C);
      async_commit();
      u16 *stage = ring + slot * 2 * C * D;
      if (ws.live)  // a wave of padding rows only copies
        consume(
            tile + tw * C,
            [&](int u, int j) { return *reinterpret_cast<const u32x4 *>(k_at(stage, 8 * u + g, qd + 4 * j)); },
            [&](int p, int m) {  // lane l: row l % 16 (token 16p + l % 16) of chunk 2m + l / 16
              return ldsm_x4_trans(v_at(stage, 16 * p + (lane & 15), 2 * m + (lane >> 4)));
            });
      trace.chunk_done(tile == seg.begin, run_max[0]);
      slot = slot == NS - 1 ? 0 : slot + 1;
    }
    async_wait<0>();
    sync_block();  // every wave is past its ring: the results may reuse it
  }

  trace.stamp(kSplitLoopDone, run_sum[0]);
  // The quad's partial sums of rows g + 8h; lane (g, qd) holds columns 2qd + e of each n tile.
#pragma unroll
  for (int h = 0; h < NH; ++h) {
    run_sum[h] += shfl_xor(run_sum[h], 1);
    run_sum[h] += shfl_xor(run_sum[h], 2);
    const int r = g + 8 * h;
    if (r < R) {
#pragma unroll
      for (int i = 0; i < NO; ++i)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = kVTrans ? 8 * i + 2 * qd + e : 64 * (i / 8) + 8 * (2 * qd + e) + i % 8;
          if (D == T::kHeadDim || col < T::kHeadDim) sh.wave_acc[ws.slot][ws.row + r][col] = acc[i][2 * h + e];
        }
      if (qd == 0) {
        sh.wave_max[ws.slot][ws.row + r] = run_max[h];
        sh.wave_sum[ws.slot][ws.row + r] = run_sum[h];
      }
    }
  }
  // This workgroup's loads are done: the merge grid (launched programmatically)
  // may be scheduled now instead of after the last exit; it waits for this
  // grid's completion before it reads the workspace. Triggering at the start
  // would let waiting merge workgroups take slots from a second split wave.
  launch_dependents();
  finish_split<T>(sh, tid, b, hkv, split, row0, pc, INGOT_AD_ARGS);
  trace.end(tid, pc == nullptr, seg, workspace, num_kv_heads, num_splits, group * sq);
}

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_MMA_H
