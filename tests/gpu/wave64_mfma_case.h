// wave64_mfma_case.h: one lane's part of the matrix-core emulation's self-test,
// shared by the H200's (wave64_selftest.cu, test arch sm_90_w64) and the CPU
// simulation's (wave64_sim.cpp): the lane builds its operand words of A and B
// (16 x 16 row-major 16-bit values) from AMD's layout (A[i][k] in lane
// 16 (k / 4) + i, element k % 4, two elements a word, the low half first; B[k][j]
// in lane 16 (k / 4) + j), runs mfma16<DT> on C, and writes its results to D by
// the same layout (D[i][j] in lane 16 (i / 4) + j, register i % 4). The host
// checks D with ingot_ref_mfma16_check (tests/common/reference.h). Include after
// the arch header (templates/ingot_arch.h or wave64_sim_arch.h); every lane of
// the wave calls it.
#ifndef INGOT_WAVE64_MFMA_CASE_H
#define INGOT_WAVE64_MFMA_CASE_H

template <int DT>
INGOT_DEVICE void mfma_case_lane(const unsigned short *A, const unsigned short *B, const float *C, float *D,
                                 int lane) {
  const int j = lane % 16, q4 = lane / 16;
  ingot::u32 aw[2], bw[2];
  for (int word = 0; word < 2; ++word) {
    const int k0 = 4 * q4 + 2 * word;  // elements 2 word, 2 word + 1 of this lane
    aw[word] = A[j * 16 + k0] | ((ingot::u32)A[j * 16 + k0 + 1] << 16);
    bw[word] = B[k0 * 16 + j] | ((ingot::u32)B[(k0 + 1) * 16 + j] << 16);
  }
  float acc[4];
  for (int r = 0; r < 4; ++r) acc[r] = C[(4 * q4 + r) * 16 + j];
  ingot::mfma16<DT>(acc, aw, bw);
  for (int r = 0; r < 4; ++r) D[(4 * q4 + r) * 16 + j] = acc[r];
}

#endif  // INGOT_WAVE64_MFMA_CASE_H
