// ingot_ad_split.h: the split entry of the uniform plan (decode_split) and the
// path a kernel instance runs (split_path, which the balanced split runs too):
// the tensor-core path where the instance's traits ask for it (kUseMma: math
// `auto` on an arch with tensor cores, which only NVIDIA's layer has), the
// matrix-core path (kUseMfma: math `auto` on AMD, and on the emulated wave of
// the test arch, where the rows fit), else the SIMT path.
#ifndef INGOT_AD_SPLIT_H
#define INGOT_AD_SPLIT_H

#include "ingot_ad_addressing.h"
#include "ingot_ad_params.h"
#include "ingot_ad_split_simt.h"
#include "ingot_arch.h"

#if INGOT_ARCH_NVIDIA && !INGOT_EMULATE_WAVE64
#include "ingot_ad_split_mma.h"  // the tensor-core path
#endif
#if !INGOT_ARCH_NVIDIA || INGOT_EMULATE_WAVE64
#include "ingot_ad_split_mfma.h"  // the matrix-core path
#endif

namespace ingot {

template <class T>
INGOT_DEVICE void split_path(INGOT_AD_PARAMS, const Piece *pc) {
#if INGOT_ARCH_NVIDIA && !INGOT_EMULATE_WAVE64
  static_assert(!T::kUseMfma, "the matrix-core split path is AMD's");
  if constexpr (T::kUseMma) {
    decode_split_mma<T>(INGOT_AD_ARGS, pc);
  } else {
    decode_split_simt<T>(INGOT_AD_ARGS, pc);
  }
#else
  static_assert(!T::kUseMma, "the tensor-core split path is NVIDIA's");
  if constexpr (T::kUseMfma) {
    decode_split_mfma<T>(INGOT_AD_ARGS, pc);
  } else {
    decode_split_simt<T>(INGOT_AD_ARGS, pc);
  }
#endif
}

// The uniform plan's split (entry point `split`; the balanced plan launches
// decode_split_balanced, entry point `balanced_split`, instead).
template <class T>
INGOT_DEVICE void decode_split(INGOT_AD_PARAMS) {
  if constexpr (T::kExactGroup > 0) {
    if (group == T::kExactGroup && sq == 1) {  // the kernel's own shape: the row arithmetic folds
      split_path<T>(INGOT_AD_ARGS_EXACT(1, T::kExactGroup), nullptr);
      return;
    }
  }
  split_path<T>(INGOT_AD_ARGS, nullptr);
}

}  // namespace ingot

#endif  // INGOT_AD_SPLIT_H
