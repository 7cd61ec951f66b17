// wave64_selftest.cu: the emulated 64-lane wave's primitives (templates/ingot_arch.h
// with INGOT_EMULATE_WAVE64), each against what AMD's instruction gives, so that a
// broken primitive is reported as such before the kernels that use it run.
// Built with the sm_90_w64 arch's flags (tests/gpu/CMakeLists.txt); the expected
// values are computed on the host by test_gpu_wave64.c, which defines the same
// output layout (kSelfTest* below, repeated there).
//
// One workgroup of 4 logical waves (256 threads), like the split and merge kernels.
// Per thread, out[tid * kSelfTestOuts + n] holds the bits of:
//   n in [0, 64):    shfl_xor(v, m) for every wave-uniform mask m = n
//   64:              shfl_xor(v, masks[tid]), a mask of each lane's own (0..255)
//   [65, 129):       shfl_idx(iv, s) for every wave-uniform source s = n - 65
//   129:             shfl_idx(iv, srcs[tid]), a source of each lane's own (0..255)
//   130, 131:        the butterfly max and sum over the 64 lanes (offsets 32 .. 1)
//   132, 133, 134:   the sum over the token groups of LPT 8, 16, 32 (offsets LPT .. 32)
//   [135, 177):      TransposeReduce<V, LPT/2, V> of x[i] = in[tid] + 3i for
//                    (V, LPT) = (2, 8), (16, 16), (16, 32), (8, 8): V values each
//   177, 178, 179:   sync_wave ordering: a lane writes, sync_wave, reads lane (5 lane + it) & 63
//   180:             wave 0 alone (the merge's `tid < kWaveSize`): its butterfly sum
#include "ingot_attention_decode.h"

#ifndef INGOT_EMULATE_WAVE64
#error "build with the sm_90_w64 arch's flags (-DINGOT_EMULATE_WAVE64=1)"
#endif

enum { kSelfTestThreads = 256, kSelfTestOuts = 192 };

namespace {

template <int V, int LPT>
__device__ __forceinline__ int transpose_case(float v, int lane, unsigned *o, int n) {
  float x[V];
#pragma unroll
  for (int i = 0; i < V; ++i) x[i] = v + (float)(i * 3);  // one rounding, as on the host
  ingot::TransposeReduce<V, LPT / 2, V>::run(x, lane % LPT);
#pragma unroll
  for (int i = 0; i < V; ++i) o[n + i] = ingot::float_to_bits(x[i]);
  return n + V;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kSelfTestThreads)
    wave64_selftest(const float *in, const int *masks, const int *srcs, unsigned *out) {
  using namespace ingot;
  static_assert(kWaveSize == 64, "the emulated wave is 64 lanes");
  __shared__ float sh[kSelfTestThreads / 64][64];
  const int tid = thread_id(), lane = tid % kWaveSize, wave = tid / kWaveSize;
  const float v = in[tid];
  const int iv = (int)float_to_bits(v);
  unsigned *o = out + (long long)tid * kSelfTestOuts;
  int n = 0;
  for (int m = 0; m < 64; ++m) o[n++] = float_to_bits(shfl_xor(v, m));
  o[n++] = float_to_bits(shfl_xor(v, masks[tid]));
  for (int s = 0; s < 64; ++s) o[n++] = (unsigned)shfl_idx(iv, s);
  o[n++] = (unsigned)shfl_idx(iv, srcs[tid]);
  float mx = v, sum = v;
#pragma unroll
  for (int off = kWaveSize / 2; off >= 1; off >>= 1) {
    mx = max32(mx, shfl_xor(mx, off));
    sum += shfl_xor(sum, off);
  }
  o[n++] = float_to_bits(mx);
  o[n++] = float_to_bits(sum);
#pragma unroll
  for (int lpt = 8; lpt <= 32; lpt <<= 1) {
    float p = v;
    for (int off = lpt; off < kWaveSize; off <<= 1) p += shfl_xor(p, off);
    o[n++] = float_to_bits(p);
  }
  n = transpose_case<2, 8>(v, lane, o, n);
  n = transpose_case<16, 16>(v, lane, o, n);
  n = transpose_case<16, 32>(v, lane, o, n);
  n = transpose_case<8, 8>(v, lane, o, n);
  for (int it = 0; it < 3; ++it) {
    sync_wave();  // the previous round's readers are done
    sh[wave][lane] = v + (float)it;
    sync_wave();
    o[n++] = float_to_bits(sh[wave][(5 * lane + it) & 63]);
  }
  float w0 = 0.f;
  if (tid < kWaveSize) {
    w0 = v;
#pragma unroll
    for (int off = kWaveSize / 2; off >= 1; off >>= 1) w0 += shfl_xor(w0, off);
  }
  sync_block();
  o[n++] = float_to_bits(w0);
  while (n < kSelfTestOuts) o[n++] = 0u;
}

// The matrix-core emulation (templates/ingot_mfma_emulated.h), per layout it
// claims: wave w of 4 runs mfma16<w % 2> (bf16, fp16) on its own matrices (a, b:
// [w][16][16] 16-bit values; c, d: [w][16][16] floats) through mfma_case_lane
// (wave64_mfma_case.h: AMD's operand and result layout); test_gpu_wave64.c
// checks d against the float64 product.
#include "wave64_mfma_case.h"

extern "C" __global__ void __launch_bounds__(kSelfTestThreads)
    wave64_mfma_selftest(const unsigned short *a, const unsigned short *b, const float *c, float *d) {
  const int tid = ingot::thread_id(), w = tid / 64, o = w * 256;
  if (w % 2 == 0)  // wave-uniform: each wave's 64 lanes take the same branch
    mfma_case_lane<0>(a + o, b + o, c + o, d + o, tid % 64);
  else
    mfma_case_lane<1>(a + o, b + o, c + o, d + o, tid % 64);
}
