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
      int num_kv_heads, int flags, float scale

#define INGOT_AD_ARGS                                                                          \
  q, k, v, o, lse, seq_lens, page_table, workspace, q_stride_b, q_stride_h, q_stride_s,        \
      k_stride_b, k_stride_t, k_stride_h, v_stride_b, v_stride_t, v_stride_h, o_stride_b,      \
      o_stride_h, o_stride_s, page_table_stride, capacity, page_size, sq, num_splits,          \
      num_kv_heads, flags, scale

namespace ingot {

enum { kFlagCausal = 1, kFlagWriteLse = 2 };
enum DType { kBF16 = 0, kFP16 = 1 };

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_inff();

// Compile-time shape of one kernel instance (the generator binds these).
template <int DTYPE_, int HEAD_DIM_, int GROUP_, int MAX_SQ_, int ROWS_, bool PAGED_, int WAVES_,
          int TOKENS_PER_WAVE_, int OCCUPANCY_ = 0>
struct DecodeTraits {
  static constexpr int kOccupancy = OCCUPANCY_;  // workgroups per CU the build aims for (0: no hint)
  static constexpr int kDType = DTYPE_;
  static constexpr int kHeadDim = HEAD_DIM_;
  static constexpr int kGroup = GROUP_;          // Hq / Hkv
  static constexpr int kMaxSq = MAX_SQ_;          // query tokens per sequence (speculative)
  static constexpr int kRowsTotal = GROUP_ * MAX_SQ_;
  static constexpr int kRows = ROWS_;             // rows held by one workgroup
  static constexpr int kRowBlocks = (kRowsTotal + ROWS_ - 1) / ROWS_;
  static constexpr bool kPaged = PAGED_;
  static constexpr int kWaves = WAVES_;
  static constexpr int kThreads = WAVES_ * kWaveSize;
  static constexpr int kVec = 8;                               // elements per 16-byte load
  static constexpr int kLanesPerToken = HEAD_DIM_ / kVec;      // LPT
  static constexpr int kTokensPerLoad = kWaveSize / kLanesPerToken;
  static constexpr int kChunk = TOKENS_PER_WAVE_;              // tokens per wave per step
  static constexpr int kLoads = kChunk / kTokensPerLoad;       // loads of K (and V) per lane
  static constexpr int kTile = kChunk * WAVES_;                // tokens per workgroup per step
  static constexpr int kPartials = kLoads * kRows;             // q.k partials per lane
  static constexpr int kMaxSplits = 256;                       // the plan never asks for more
  static_assert(HEAD_DIM_ % kVec == 0 && kLanesPerToken <= kWaveSize, "head dim");
  static_assert((kLanesPerToken & (kLanesPerToken - 1)) == 0, "D/8 must be a power of two");
  static_assert(kChunk % kTokensPerLoad == 0 && kLoads >= 1, "tokens per wave");
  static_assert(ROWS_ >= 1 && ROWS_ <= kRowsTotal, "rows");
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
  int len = seq_lens[b];
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

// Last key (exclusive) that row r may see.
template <class T>
INGOT_DEVICE int row_limit(int r, int valid, int sq, bool causal) {
  const int i = r / T::kGroup;  // query token of this row
  if (i >= sq) return 0;        // padding row of a shorter speculative batch
  return causal ? valid - sq + 1 + i : valid;
}

template <class T>
INGOT_DEVICE void store_row(void *o, float *lse, int b, int hkv, int row, int d, float out,
                            float lse2, int sq, int num_kv_heads, long long o_stride_b,
                            long long o_stride_h, long long o_stride_s, int flags);

// Workspace (num_splits > 1), fp32, one block per (sequence, KV head):
// lse2 [ROWS_TOTAL][num_splits] padded to 4 floats, then O [ROWS_TOTAL][num_splits][D],
// so every O row is 16-byte aligned. The dispatch stub sizes it the same way.
template <class T>
INGOT_DEVICE long long lse_floats(int num_splits) {
  return ((long long)T::kRowsTotal * num_splits + 3) / 4 * 4;
}
template <class T>
INGOT_DEVICE long long workspace_block(int b, int hkv, int num_kv_heads, int num_splits) {
  const long long per = lse_floats<T>(num_splits) + (long long)T::kRowsTotal * num_splits * T::kHeadDim;
  return ((long long)b * num_kv_heads + hkv) * per;
}

// ---- split kernel ----------------------------------------------------------------

template <class T>
struct SplitShared {
  float scores[T::kWaves][T::kChunk * T::kRows];
  float wave_max[T::kWaves][T::kRows];
  float wave_sum[T::kWaves][T::kRows];
  float wave_acc[T::kWaves][T::kRows][T::kHeadDim];
};

template <class T>
INGOT_DEVICE void decode_split(INGOT_AD_PARAMS) {
  constexpr int R = T::kRows, LPT = T::kLanesPerToken, NL = T::kLoads, TPL = T::kTokensPerLoad;
  constexpr int C = T::kChunk, DT = T::kDType, D = T::kHeadDim;
  INGOT_SHARED SplitShared<T> sh;

  const int tid = thread_id();
  const int wave = tid / kWaveSize, lane = tid % kWaveSize;
  const int li = lane % LPT;      // which 8 elements of D this lane holds
  const int grp = lane / LPT;     // which token of a load this lane reads
  // grid x = (split * Hkv + hkv) * ROW_BLOCKS + row block: the KV heads of one
  // segment are neighbours, so the interleaved heads of each token row are read
  // at about the same time (DRAM row locality).
  const int row0 = (block_x() % T::kRowBlocks) * R;
  const int hkv = (block_x() / T::kRowBlocks) % num_kv_heads;
  const int split = block_x() / T::kRowBlocks / num_kv_heads;
  const int b = block_z();
  const bool causal = (flags & kFlagCausal) != 0;

  const Lengths seg = segment<T>(seq_lens, b, capacity, split, num_splits);

  // q rows of this workgroup, this lane's 8 elements, pre-scaled into log2 units.
  float qf[R][8];
  const float qscale = scale * kLog2e;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int row = row0 + r;
    const int g = row % T::kGroup, i = row / T::kGroup;
    if (row < T::kRowsTotal && i < sq) {
      const char *qp = static_cast<const char *>(q) +
                       2 * (b * q_stride_b + (long long)(hkv * T::kGroup + g) * q_stride_h +
                            i * q_stride_s + li * 8);
      unpack8<DT>(load16(qp), qf[r]);
#pragma unroll
      for (int e = 0; e < 8; ++e) qf[r][e] *= qscale;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) qf[r][e] = 0.f;
    }
  }

  float run_max[R], run_sum[R], acc[R][8];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    run_max[r] = kNegInf;
    run_sum[r] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.f;
  }

  const char *kbase = static_cast<const char *>(k) + 2 * (hkv * k_stride_h + li * 8);
  const char *vbase = static_cast<const char *>(v) + 2 * (hkv * v_stride_h + li * 8);
  if (!T::kPaged) {
    kbase += 2 * b * k_stride_b;
    vbase += 2 * b * v_stride_b;
  }
  const int *ptable = T::kPaged ? page_table + b * page_table_stride : nullptr;
  const int page_shift = T::kPaged ? 31 - __builtin_clz((unsigned)page_size) : 0;
  float *my_scores = sh.scores[wave];

  // Loads of one chunk: token n*TPL + grp of the wave's chunk at tok0; zeros
  // (and no memory access) at or past the segment end.
  auto load_chunk = [&](int tok0, u32x4 (&kw)[NL], u32x4 (&vw)[NL]) {
#pragma unroll
    for (int n = 0; n < NL; ++n) {
      const int pos = tok0 + n * TPL + grp;
      if (pos < seg.end) {
        long long koff, voff;
        if (T::kPaged) {
          const long long page = ptable[pos >> page_shift];
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

  // Software pipeline: the next chunk's K and V are in flight while this one is used.
  u32x4 kw[NL], vw[NL];
  load_chunk(seg.begin + wave * C, kw, vw);
  for (int tile = seg.begin; tile < seg.end; tile += T::kTile) {
    const int tok0 = tile + wave * C;
    u32x4 kn[NL], vn[NL];
    load_chunk(tok0 + T::kTile, kn, vn);

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
    constexpr int kHeld = T::kPartials >= LPT ? T::kPartials / LPT : 1;
    const int first = T::kPartials >= LPT ? li * kHeld : li / (LPT / T::kPartials);
#pragma unroll
    for (int j = 0; j < kHeld; ++j) {
      const int idx = first + j;
      const int n = idx / R, r = idx % R;
      const int pos = tok0 + n * TPL + grp;
      const bool live = pos < seg.end && pos < row_limit<T>(row0 + r, seg.valid, sq, causal);
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
#pragma unroll
    for (int n = 0; n < NL; ++n) {
      kw[n] = kn[n];
      vw[n] = vn[n];
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
  if (grp == 0) {
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
  sync_block();

  // Merge the waves; each thread produces some (row, d) outputs.
  float *ws_lse = workspace + workspace_block<T>(b, hkv, num_kv_heads, num_splits);
  float *ws_o = ws_lse + lse_floats<T>(num_splits);
  for (int idx = tid; idx < R * D; idx += T::kThreads) {
    const int r = idx / D, d = idx % D, row = row0 + r;
    if (row >= T::kRowsTotal) break;  // idx grows with r: the rest are padding too
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
    if (num_splits == 1) {
      store_row<T>(o, lse, b, hkv, row, d, out, lse2, sq, num_kv_heads, o_stride_b, o_stride_h,
                   o_stride_s, flags);
    } else {
      const long long rs = (long long)row * num_splits + split;
      if (d == 0) ws_lse[rs] = lse2;
      ws_o[rs * D + d] = out;
    }
  }
}

// Writes one output element (and, from d == 0, the row's LSE in natural log).
template <class T>
INGOT_DEVICE void store_row(void *o, float *lse, int b, int hkv, int row, int d, float out,
                            float lse2, int sq, int num_kv_heads, long long o_stride_b,
                            long long o_stride_h, long long o_stride_s, int flags) {
  const int g = row % T::kGroup, i = row / T::kGroup;
  if (i >= sq) return;
  const long long h = (long long)hkv * T::kGroup + g;
  u16 *op = static_cast<u16 *>(o);
  op[b * o_stride_b + h * o_stride_h + i * o_stride_s + d] = pack1<T::kDType>(out);
  if (d == 0 && (flags & kFlagWriteLse))
    lse[((long long)b * num_kv_heads * T::kGroup + h) * sq + i] = lse2 * kLn2;
}

// ---- merge kernel ---------------------------------------------------------------
// Grid (ROWS_TOTAL * D/32, Hkv, B): one workgroup per row and 32 columns, so the
// partials are read by many workgroups at once. Its threads are 8 column
// quads x kThreads/8 segment groups; each sums its segments' weighted partials
// with 16-byte loads, then the groups are added through LDS.

template <class T>
struct MergeShared {
  float weight[T::kMaxSplits];
  float lse2;
  float part[T::kThreads / 8][32];
};

template <class T>
INGOT_DEVICE void decode_merge(INGOT_AD_PARAMS) {
  constexpr int D = T::kHeadDim, kCols = 32, kQuads = kCols / 4, kGroups = T::kThreads / kQuads;
  static_assert(D % kCols == 0, "merge columns");
  INGOT_SHARED MergeShared<T> sh;
  const int tid = thread_id(), lane = tid % kWaveSize;
  const int row = block_x() / (D / kCols), c0 = (block_x() % (D / kCols)) * kCols;
  const int hkv = block_y(), b = block_z();
  const int S = num_splits;
  const float *ws_lse = workspace + workspace_block<T>(b, hkv, num_kv_heads, S);
  const float *ws_o = ws_lse + lse_floats<T>(S);

  // Wave 0: the max and the sum over segments, then normalized weights.
  if (tid < kWaveSize) {
    const float *l = ws_lse + (long long)row * S;
    float m = kNegInf;
    for (int s = lane; s < S; s += kWaveSize) m = max32(m, l[s]);
#pragma unroll
    for (int off = kWaveSize / 2; off >= 1; off >>= 1) m = max32(m, shfl_xor(m, off));
    const float ref = m == kNegInf ? 0.f : m;
    float den = 0.f;
    for (int s = lane; s < S; s += kWaveSize) den += fast_exp2(l[s] - ref);
#pragma unroll
    for (int off = kWaveSize / 2; off >= 1; off >>= 1) den += shfl_xor(den, off);
    const float inv = den > 0.f ? fast_rcp(den) : 0.f;
    for (int s = lane; s < S; s += kWaveSize) sh.weight[s] = fast_exp2(l[s] - ref) * inv;
    if (lane == 0) sh.lse2 = den > 0.f ? m + fast_log2(den) : kNegInf;
  }
  sync_block();

  const int quad = tid % kQuads, group = tid / kQuads;
  const float *src = ws_o + (long long)row * S * D + c0 + quad * 4;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int s = group; s < S; s += kGroups) {
    const float w = sh.weight[s];
    const u32x4 x = load16(src + (long long)s * D);
    acc[0] += w * bits_to_float(x.x);
    acc[1] += w * bits_to_float(x.y);
    acc[2] += w * bits_to_float(x.z);
    acc[3] += w * bits_to_float(x.w);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) sh.part[group][quad * 4 + e] = acc[e];
  sync_block();
  if (tid < kCols) {
    float out = 0.f;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) out += sh.part[g][tid];
    store_row<T>(o, lse, b, hkv, row, c0 + tid, out, sh.lse2, sq, num_kv_heads, o_stride_b,
                 o_stride_h, o_stride_s, flags);
  }
}

}  // namespace ingot

#endif  // INGOT_ATTENTION_DECODE_H
