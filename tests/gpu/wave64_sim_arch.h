// wave64_sim_arch.h: a host stand-in for templates/ingot_arch.h, so that the
// kernels of ingot_attention_decode.h run on the CPU with a 64-lane wave: one
// fiber per lane (wave64_sim.cpp schedules them), LDS as the kernel's own static
// arrays (one workgroup runs at a time), sync_block and sync_wave as barriers
// of the workgroup's and the wave's fibers, and the 64-lane shuffles through a per-wave
// exchange slot exactly as the sm_90_w64 emulation does them (ingot_arch.h,
// INGOT_EMULATE_WAVE64: AMD's ds_bpermute, lane index & 63). It defines
// INGOT_ARCH_H, so the real header's body is skipped; include it first
// (wave64_sim.cpp). Nor INGOT_ARCH_NVIDIA: as on AMD, the tensor-core split
// (ingot_ad_split_mma.h) and knob `trace`'s records are not compiled, so none
// of their primitives is needed here; the matrix-core split's (mfma16) is the
// emulation of ingot_mfma_emulated.h, as on the sm_90_w64 test arch. Test code only: it proves the wave64 index math of the
// kernels on any machine, not the GPU's instructions.
#ifndef INGOT_WAVE64_SIM_ARCH_H
#define INGOT_WAVE64_SIM_ARCH_H
#define INGOT_ARCH_H 1  // the real arch header is replaced by this one

#include <cmath>
#include <cstring>

#define INGOT_DEVICE inline
#define INGOT_SHARED static
#define INGOT_EMULATE_WAVE64 1

namespace ingot {

typedef unsigned int u32;
typedef unsigned short u16;
struct u32x4 {
  u32 x, y, z, w;
};
struct u32x2 {
  u32 x, y;
};

constexpr int kWaveSize = 64;
constexpr int kEmulatedWaves = 15;
constexpr bool kHasMma16816 = false;
// The AMD archs' clamped K and V loads (ingot_arch.h), as the shipped objects run them.
constexpr bool kClampedLoads = true;

// The running workgroup (set by the simulator before its threads run). The
// simulator runs a workgroup's threads as fibers of one host thread; wait(id)
// blocks the calling one at barrier id (0: the workgroup's, 1 + w: wave w's)
// until every thread of it still running has arrived.
struct SimBlock {
  int block[3], grid[3], threads;
  void (*wait)(int id);
  u32 slots[kEmulatedWaves][64];
};
// Per host thread: the simulator runs different kernels on several threads at
// once (each kernel's LDS, its static arrays, belongs to one of them).
inline thread_local SimBlock *g_sim_block = nullptr;
inline thread_local int t_sim_tid = 0;  // the fiber running now

INGOT_DEVICE int thread_id() { return t_sim_tid; }
INGOT_DEVICE int block_x() { return g_sim_block->block[0]; }
INGOT_DEVICE int block_y() { return g_sim_block->block[1]; }
INGOT_DEVICE int block_z() { return g_sim_block->block[2]; }
INGOT_DEVICE int grid_x() { return g_sim_block->grid[0]; }
INGOT_DEVICE int grid_y() { return g_sim_block->grid[1]; }
INGOT_DEVICE int grid_z() { return g_sim_block->grid[2]; }
INGOT_DEVICE int opaque(int v) { return v; }  // the compilers' hoisting does not arise here
INGOT_DEVICE int opaque_uniform(int v) { return v; }
INGOT_DEVICE int wave_uniform(int v) { return v; }
INGOT_DEVICE void sync_block() { g_sim_block->wait(0); }
INGOT_DEVICE void sync_wave() { g_sim_block->wait(1 + t_sim_tid / 64); }
INGOT_DEVICE int wave_lane() { return t_sim_tid % 64; }
INGOT_DEVICE u32 *wave_slot() { return g_sim_block->slots[t_sim_tid / 64]; }
INGOT_DEVICE u32 wave_exchange(u32 v, int src) {
  u32 *slot = wave_slot();
  slot[t_sim_tid % 64] = v;
  sync_wave();
#ifndef INGOT_WAVE64_SIM_HALF_WAVE_SHUFFLE
  const u32 r = slot[src & 63];
#else  // negative control: a 32-lane shuffle (each half wave on its own), the bug the test must see
  const u32 r = slot[((t_sim_tid % 64) & 32) | (src & 31)];
#endif
  sync_wave();
  return r;
}
INGOT_DEVICE u32 float_to_bits(float f) {
  u32 u;
  std::memcpy(&u, &f, 4);
  return u;
}
INGOT_DEVICE float bits_to_float(u32 u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
INGOT_DEVICE float shfl_xor(float v, int mask) {
  return bits_to_float(wave_exchange(float_to_bits(v), (t_sim_tid % 64) ^ mask));
}
INGOT_DEVICE int shfl_idx(int v, int src) { return (int)wave_exchange((u32)v, src); }
// Whether p holds in any of the wave's 64 lanes (the same answer in every lane).
INGOT_DEVICE bool wave_any(bool p) {
  u32 *slot = wave_slot();
  slot[t_sim_tid % 64] = p ? 1u : 0u;
  sync_wave();
  bool any = false;
  for (int l = 0; l < 64; ++l) any = any || slot[l] != 0u;
  sync_wave();
  return any;
}

INGOT_DEVICE u32x4 load16(const void *p) {
  u32x4 r;
  std::memcpy(&r, p, 16);
  return r;
}
INGOT_DEVICE u32x2 load8(const void *p) {
  u32x2 r;
  std::memcpy(&r, p, 8);
  return r;
}
INGOT_DEVICE u32x4 load16_if(const void *p, bool pred) { return pred ? load16(p) : u32x4{0u, 0u, 0u, 0u}; }
INGOT_DEVICE int load_dep(const int *p) { return *p; }
INGOT_DEVICE float load_dep(const float *p) { return *p; }
INGOT_DEVICE u32x4 load16_dep_if(const void *p, bool pred) { return load16_if(p, pred); }
INGOT_DEVICE int load_dep_if(const int *p, bool pred) { return pred ? *p : 0; }
INGOT_DEVICE void grid_dependency_wait() {}
INGOT_DEVICE void launch_dependents() {}
INGOT_DEVICE void sched_fence() {}  // AMD's scheduling fence: nothing to order on the CPU
INGOT_DEVICE float fast_exp2(float x) { return std::exp2(x); }
INGOT_DEVICE float max32(float a, float b) { return std::fmax(a, b); }
INGOT_DEVICE float fma32(float a, float b, float c) { return std::fma(a, b, c); }
INGOT_DEVICE float fast_rcp(float x) { return 1.0f / x; }
INGOT_DEVICE float fast_log2(float x) { return std::log2(x); }
INGOT_DEVICE float half_to_float(u16 h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return (float)f;
}
INGOT_DEVICE u16 float_to_half(float x) {
  _Float16 f = (_Float16)x;
  u16 h;
  std::memcpy(&h, &f, 2);
  return h;
}

}  // namespace ingot

// AMD's matrix-core instruction on the 64 lanes (as on the sm_90_w64 test arch).
#include "ingot_mfma_emulated.h"

#endif  // INGOT_WAVE64_SIM_ARCH_H
