// ingot_mfma_emulated.h: AMD's matrix-core instruction on an emulated 64-lane
// wave (the test arch sm_90_w64, and the CPU simulation of tests/gpu), so that
// the matrix-core kernels' lane logic (which lane holds which element of which
// operand, and what each lane gets back) runs and is checked off AMD hardware.
//
// mfma16<DT>(c, a, b) is v_mfma_f32_16x16x16_bf16 (DT 0) or _f16 (DT 1):
// D (16 x 16, fp32) = A (16 x 16) B (16 x 16) + C, with the register layout of
// AMD's matrix instruction calculator for CDNA3 (the same on CDNA4):
//   A[i][k] is in lane 16 (k / 4) + i, element k % 4 of its two operand words
//           (element e in word e / 2, bits [15:0] for even e, [31:16] for odd);
//   B[k][j] is in lane 16 (k / 4) + j, element k % 4;
//   D[i][j] is in lane 16 (i / 4) + j, c[i % 4].
// Each lane gathers the 4 rows of A and the column of B its outputs need through
// the wave's exchange slot (two barriers a word), then sums the 16 products of
// each output in fp32 in k order; the products of two 16-bit values are exact in
// fp32, so the result differs from the hardware's only in the order and rounding
// of that fp32 sum. It proves the layout and the kernels' use of it, not the
// instruction's timing or its internal rounding.
//
// The including header provides wave_slot() (this wave's 64 words), wave_lane(),
// sync_wave(), bits_to_float() and half_to_float(); every lane of the wave must
// call, as for every exchange of the emulated wave.
#ifndef INGOT_MFMA_EMULATED_H
#define INGOT_MFMA_EMULATED_H

namespace ingot {

constexpr bool kHasMfma = true;

// Element h (0 low, 1 high) of a word of two 16-bit values, as fp32.
template <int DT>
INGOT_DEVICE float mfma_element(u32 w, int h) {
  if (DT == 0) return bits_to_float(h ? (w & 0xffff0000u) : (w << 16));
  return half_to_float((u16)(h ? (w >> 16) : (w & 0xffffu)));
}

template <int DT>
INGOT_DEVICE void mfma16(float (&c)[4], const u32 (&a)[2], const u32 (&b)[2]) {
  u32 *slot = wave_slot();
  const int l = wave_lane(), j = l % 16, iq = l / 16;  // outputs D[4 iq + r][j]
  u32 aw[2][4][4], bw[2][4];                            // [word][row r][k quarter], [word][k quarter]
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    sync_wave();  // the slot's previous readers are done
    slot[l] = a[w];
    sync_wave();
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int kq = 0; kq < 4; ++kq) aw[w][r][kq] = slot[16 * kq + 4 * iq + r];
    sync_wave();
    slot[l] = b[w];
    sync_wave();
#pragma unroll
    for (int kq = 0; kq < 4; ++kq) bw[w][kq] = slot[16 * kq + j];
  }
  sync_wave();  // the next user of the slot overwrites nothing still to be read
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float s = c[r];
#pragma unroll
    for (int k = 0; k < 16; ++k) {  // k = 4 kq + 2 w + h
      const int kq = k / 4, w = (k / 2) % 2, h = k % 2;
      s += mfma_element<DT>(aw[w][r][kq], h) * mfma_element<DT>(bw[w][kq], h);
    }
    c[r] = s;
  }
}

}  // namespace ingot

#endif  // INGOT_MFMA_EMULATED_H
