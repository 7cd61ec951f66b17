// ingot_ad_traits.h: the compile-time shape of one attention decode kernel
// instance (DecodeTraits, which the generated sources bind), the conversion of
// the element types (DType, ingot_dtype.h) to and from fp32 (unpack8, pack1), and the
// constants of the online softmax (scores are kept in log2 units).
#ifndef INGOT_AD_TRAITS_H
#define INGOT_AD_TRAITS_H

#include "ingot_arch.h"
#include "ingot_attention_decode_limits.h"
#include "ingot_dtype.h"

namespace ingot {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_inff();
constexpr float kMinNormal = 1.17549435e-38f;  // the smallest normal float

// A compile-time bool as a value (a generic lambda's argument picks its copy of a loop).
template <bool V>
struct BoolConstant {
  static constexpr bool value = V;
};

// Knob `math`: the SIMT path everywhere, or tensor cores where the arch has them.
enum Math { kMathSimt = 0, kMathAuto = 1 };

// Compile-time shape of one kernel instance (the generator binds these).
// The group (Hq / Hkv) is a runtime value (kernarg `group`): a workgroup holds
// ROWS (query head, query token) rows of one KV head, row = token * group + head
// in group, and group x Sq rows take ceil(group x Sq / ROWS) row blocks (rows
// past group x Sq are padding that reads nothing and writes nothing).
template <int DTYPE_, int HEAD_DIM_, int MAX_SQ_, int ROWS_, bool PAGED_, int WAVES_,
          int TOKENS_PER_WAVE_, int OCCUPANCY_ = 0, int MATH_ = kMathSimt, int STAGES_ = 0,
          int TRACE_ = 0, int DYNAMIC_LDS_ = 0, int ROW_WAVES_ = 0>
struct DecodeTraits {
  // Knob `row_waves`: the waves of a workgroup take different rows of the same
  // tokens (wave w rows ROWS x w .. + ROWS - 1 of the block, every wave the
  // workgroup's chunk of each step) instead of different tokens of the same rows.
  // For groups past a wave's rows (multi-query: 48/1, 71/1): one workgroup holds
  // ROWS x WAVES rows, so K and V are read once per that many rows, not once per
  // ROWS. On the tensor-core path the chunk comes through one shared-memory ring
  // that the workgroup fills together; elsewhere each wave loads it (the same
  // lines, served from the CU's cache after the first).
  static constexpr bool kRowWaves = ROW_WAVES_ != 0;
  static_assert(ROW_WAVES_ == 0 || (ROW_WAVES_ == 1 && WAVES_ >= 2), "row_waves: 0, or 1 with 2+ waves");
  // kMathAuto: tensor cores where the arch has them (sm_90: mma.sync), matrix
  // cores on AMD (and on the emulated wave of the test arch) where the rows fill
  // a 16-row tile well enough to pay, else the SIMT path.
  static constexpr bool kUseMma = MATH_ == kMathAuto && kHasMma16816;
  // The matrix-core path (ingot_ad_split_mfma.h): bf16 and fp16, head dim 64 or 128, at
  // least 4 rows, 16-token tiles. generator/ingot/families/attention_decode.py
  // (uses_mfma) says the same. (fp16 since its loop keeps a chunk in flight:
  // docs/decisions/0024-amd-mfma-fp16.md. Head dim 256 needs 312-330 registers, AGPR
  // spill space included, no fewer than its SIMT split: docs/decisions/0025-amd-mfma-d256.md.)
  static constexpr bool kMfmaFits = (HEAD_DIM_ == 64 || HEAD_DIM_ == 128) && ROWS_ >= 4 && TOKENS_PER_WAVE_ % 16 == 0;
  static constexpr bool kUseMfma = MATH_ == kMathAuto && kHasMfma && kMfmaFits;
  // The tensor-core path works in 64-element slices of D: other head dims are
  // padded up (the chunks past D are neither loaded nor stored; zeros stand in).
  static constexpr int kMmaDim = (HEAD_DIM_ + 63) / 64 * 64;
  // Tensor-core path only: 0 keeps the next chunk in registers; N >= 2 streams K
  // and V through an N-deep ring of shared-memory stages per wave (async copies).
  static constexpr int kStages = kUseMma ? STAGES_ : 0;
  // The group whose launches (one query token, group = rows) the uniform split and
  // merge run with sq and group as compile-time constants (0: none). The group is a
  // runtime value so that one kernel serves every group of its row tile; each row's
  // (head, token) is then a division by it, which in the seed split (sm_90, B=1 8/2
  // 4K) costs 0.45-0.55 us of 6.5 per call. The tensor-core path up to head dim 128
  // only: on the AMD archs the second copy of the loop lowers four splits' share of
  // math beside a chunk in flight below half, and at head dim 256 it adds spills,
  // neither with a timing to weigh it against (docs/decisions/0027-exact-group.md).
  static constexpr int kExactGroup = kUseMma && MAX_SQ_ == 1 && HEAD_DIM_ <= 128 && !kRowWaves ? ROWS_ : 0;
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
  static constexpr int kWaveRows = ROWS_;                     // rows held by one wave
  static constexpr int kRows = kRowWaves ? ROWS_ * WAVES_ : ROWS_;  // rows held by one workgroup
  // Waves that take different tokens of a step (their results are merged in the
  // workgroup's end): all of them, or one set of tokens for all under row_waves.
  static constexpr int kTokenWaves = kRowWaves ? 1 : WAVES_;
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
  static constexpr int kTile = kChunk * kTokenWaves;           // tokens per workgroup per step
  static constexpr int kPartials = kLoads * kWaveRows;         // q.k partials per lane
  static constexpr int kMaxSplits = INGOT_AD_MAX_SPLITS;       // the plan never asks for more
  static constexpr int kMergeCols = INGOT_AD_MERGE_COLS(HEAD_DIM_);  // the wide merge's columns per workgroup
  static_assert(HEAD_DIM_ % 16 == 0 && kLanesPerToken <= kWaveSize, "head dim: a multiple of 16");
  static_assert(kChunk % kTokensPerLoad == 0 && kLoads >= 1, "tokens per wave");
  // A wave holds up to 8 rows on the SIMT path (its partials and accumulators grow
  // with them), up to 16 on the tensor- and matrix-core paths (both halves of their
  // 16-row tile, for the same reads and matrix instructions).
  static_assert(ROWS_ >= 1 && ROWS_ <= (kUseMma || kUseMfma ? 16 : 8), "rows per wave: 1..8 (SIMT), 1..16 (tensor or matrix cores)");
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

}  // namespace ingot

#endif  // INGOT_AD_TRAITS_H
