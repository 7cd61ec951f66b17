// ingot_dtype.h: the 16-bit element types of every family's kernels, the
// tokens the generator's c_dtype writes (generator/ingot/ctokens.py).
#ifndef INGOT_DTYPE_H
#define INGOT_DTYPE_H

namespace ingot {

enum DType { kBF16 = 0, kFP16 = 1 };

}  // namespace ingot

#endif  // INGOT_DTYPE_H
