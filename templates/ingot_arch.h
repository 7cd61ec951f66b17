// ingot_arch.h: the only arch-specific device code of ingot's kernels.
//
// What every arch's kernels use exists twice: once for AMDGPU (clang's HIP
// device compile with -nogpuinc, so no hip_runtime.h: builtins only) and once
// for NVIDIA (nvcc). Every line on the AMD side compiles but never runs in this
// project's CI, so this file stays as small as the algorithm allows: wave size,
// ids, shuffles, barriers, 16-byte loads, exp2/log2 and half-precision
// conversions. The tensor-core path's primitives (mma.sync, byte permutes,
// cp.async, dynamic shared memory) and knob `trace`'s timers exist on the NVIDIA
// side only, as do their users (ingot_ad_split_mma.h, ingot_ad_trace.h).
#ifndef INGOT_ARCH_H
#define INGOT_ARCH_H

// INGOT_EMULATE_WAVE64=1 (NVIDIA only; the test arch sm_90_w64): a 64-lane
// logical wave of two warps, to run the AMD kernels' wave64 code on the H200.
#ifndef INGOT_EMULATE_WAVE64
#define INGOT_EMULATE_WAVE64 0
#endif

#if defined(__AMDGCN__)
#define INGOT_ARCH_AMD 1
#elif defined(__CUDACC__)
#define INGOT_ARCH_NVIDIA 1
#else
#error "ingot kernels compile for AMDGPU (clang -x hip) or NVIDIA (nvcc) only"
#endif

#if INGOT_ARCH_AMD && INGOT_EMULATE_WAVE64
#error "INGOT_EMULATE_WAVE64 emulates AMD's wave on NVIDIA; AMDGPU has the real one"
#endif

#if INGOT_ARCH_AMD
#define INGOT_DEVICE __attribute__((device)) __attribute__((always_inline)) inline
// occupancy: workgroups per CU to fit (0: no hint); a CU has 4 SIMDs.
#define INGOT_KERNEL(threads, occupancy)                                                 \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(threads, threads))) \
  __attribute__((amdgpu_waves_per_eu((occupancy) * (threads) / 256 > 0 ? (occupancy) * (threads) / 256 : 1)))
#define INGOT_SHARED __attribute__((shared))
#else
#define INGOT_DEVICE __device__ __forceinline__
// The emulated wave (sm_90_w64) leaves the hint out: an AMD variant's occupancy is workgroups per
// CU, a register budget for a CU's 512-register file that an SM's 64K registers do not share.
#define INGOT_KERNEL(threads, occupancy) \
  extern "C" __global__ __launch_bounds__(threads, (occupancy) > 0 && !INGOT_EMULATE_WAVE64 ? (occupancy) : 1)
#define INGOT_SHARED __shared__
#endif

namespace ingot {

typedef unsigned int u32;
typedef unsigned short u16;

#if INGOT_ARCH_AMD
constexpr int kWaveSize = 64;  // gfx942 and gfx950 run wave64 kernels
typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned int u32x2 __attribute__((ext_vector_type(2)));
INGOT_DEVICE int thread_id() { return __builtin_amdgcn_workitem_id_x(); }
INGOT_DEVICE int block_x() { return __builtin_amdgcn_workgroup_id_x(); }
INGOT_DEVICE int block_y() { return __builtin_amdgcn_workgroup_id_y(); }
INGOT_DEVICE int block_z() { return __builtin_amdgcn_workgroup_id_z(); }
// v, hidden from the optimizer (an empty asm it cannot see through): what is
// computed from it inside a loop is computed there, not hoisted out and held in
// registers across the loop (the balanced merge's loop over sequences).
// opaque_uniform: for a value the same across the wave (kept in an SGPR).
INGOT_DEVICE int opaque(int v) {
  asm volatile("" : "+v"(v));
  return v;
}
INGOT_DEVICE int opaque_uniform(int v) {
  asm volatile("" : "+s"(v));
  return v;
}
// v, which the caller knows is the same in every lane (a wave's index), as the
// compiler's divergence analysis cannot see it: kept in an SGPR, and what is
// computed from it only (a chunk's first token, its base address) is scalar work.
INGOT_DEVICE int wave_uniform(int v) { return __builtin_amdgcn_readfirstlane(v); }
// Workgroups along z: the grid's work-items along z (every launch's workgroup is 1 deep in z).
INGOT_DEVICE int grid_z() { return (int)__builtin_amdgcn_grid_size_z(); }
INGOT_DEVICE float shfl_xor(float v, int mask) {
  int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_bit_cast(float,
                            __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v)));
}
// Lane src's v (src the same in every lane).
INGOT_DEVICE int shfl_idx(int v, int src) { return __builtin_amdgcn_ds_bpermute(src << 2, v); }
INGOT_DEVICE void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// A wave runs in lockstep; the fences order its LDS writes before its reads.
INGOT_DEVICE void sync_wave() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
// Whether p holds in any lane of the wave (the same answer in every lane: a scalar branch).
INGOT_DEVICE bool wave_any(bool p) { return __builtin_amdgcn_ballot_w64(p) != 0; }
INGOT_DEVICE u32x4 load16(const void *p) { return *static_cast<const u32x4 *>(p); }
INGOT_DEVICE u32x2 load8(const void *p) { return *static_cast<const u32x2 *>(p); }
// Loads only when pred holds; zeros otherwise (p is never dereferenced then).
INGOT_DEVICE u32x4 load16_if(const void *p, bool pred) {
  return pred ? load16(p) : u32x4{0u, 0u, 0u, 0u};
}
// Loads of what the grid before may have written (see the NVIDIA side): plain loads here.
INGOT_DEVICE int load_dep(const int *p) { return *p; }
INGOT_DEVICE float load_dep(const float *p) { return *p; }
INGOT_DEVICE u32x4 load16_dep_if(const void *p, bool pred) { return load16_if(p, pred); }
INGOT_DEVICE int load_dep_if(const int *p, bool pred) { return pred ? *p : 0; }
// The tensor-core path is NVIDIA's (templates/ingot_ad_split_mma.h, which only an NVIDIA
// compile includes, with the primitives it needs); AMD has its matrix cores (below).
constexpr bool kHasMma16816 = false;
// Matrix cores (CDNA3 gfx942, CDNA4 gfx950): v_mfma_f32_16x16x16_{bf16,f16},
// D (16 x 16, fp32) = A (16 x 16) B (16 x 16) + C, one wave. Lane l holds, in
// element e = 0..3 of its two operand words (word e / 2, the low half first),
// A[l % 16][4 (l / 16) + e] and B[4 (l / 16) + e][l % 16], and D[4 (l / 16) + r][l % 16]
// in c[r] (AMD's matrix instruction calculator, CDNA3; the emulation of the test
// arch, ingot_mfma_emulated.h, follows the same layout). DT: 0 bf16, 1 fp16.
constexpr bool kHasMfma = true;
template <int DT>
INGOT_DEVICE void mfma16(float (&c)[4], const u32 (&a)[2], const u32 (&b)[2]) {
  typedef float f4 __attribute__((ext_vector_type(4)));
  typedef unsigned int w2 __attribute__((ext_vector_type(2)));
  const w2 aw = {a[0], a[1]}, bw = {b[0], b[1]};
  f4 acc = {c[0], c[1], c[2], c[3]};
  if constexpr (DT == 0) {
    typedef short s4 __attribute__((ext_vector_type(4)));
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s4, aw), __builtin_bit_cast(s4, bw), acc,
                                                     0, 0, 0);
  } else {
    typedef _Float16 h4 __attribute__((ext_vector_type(4)));
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(h4, aw), __builtin_bit_cast(h4, bw), acc, 0, 0,
                                                0);
  }
  c[0] = acc[0];
  c[1] = acc[1];
  c[2] = acc[2];
  c[3] = acc[3];
}
// The SIMT split kernel's K and V loads: unconditional, from addresses clamped
// to the segment's tokens (templates/ingot_ad_split_simt.h, load_chunk), not
// predicated: a load in an exec-masked branch makes the compiler's s_waitcnt
// pessimistic at the join, and the register pipeline waits for every load.
constexpr bool kClampedLoads = true;
// Programmatic dependent launch is NVIDIA's; on AMD the merge simply follows the split.
INGOT_DEVICE void grid_dependency_wait() {}
INGOT_DEVICE void launch_dependents() {}
// A scheduling fence: the machine scheduler moves no instruction across it. The
// matrix-core split puts one after each chunk's loads, which the scheduler would
// otherwise sink to their first use, past the math they should overlap
// (ingot_ad_split_mfma.h; docs/decisions/0024-amd-mfma-fp16.md). A no-op on NVIDIA.
INGOT_DEVICE void sched_fence() { __builtin_amdgcn_sched_barrier(0); }
INGOT_DEVICE float fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
INGOT_DEVICE float max32(float a, float b) { return __builtin_fmaxf(a, b); }
INGOT_DEVICE float fma32(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
INGOT_DEVICE float fast_rcp(float x) { return __builtin_amdgcn_rcpf(x); }
INGOT_DEVICE float fast_log2(float x) { return __builtin_amdgcn_logf(x); }
INGOT_DEVICE float half_to_float(u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
INGOT_DEVICE u16 float_to_half(float f) { return __builtin_bit_cast(u16, (_Float16)f); }
INGOT_DEVICE float bits_to_float(u32 u) { return __builtin_bit_cast(float, u); }
INGOT_DEVICE u32 float_to_bits(float f) { return __builtin_bit_cast(u32, f); }
#else
typedef uint4 u32x4;
typedef uint2 u32x2;
INGOT_DEVICE int thread_id() { return threadIdx.x; }
INGOT_DEVICE int block_x() { return blockIdx.x; }
INGOT_DEVICE int block_y() { return blockIdx.y; }
INGOT_DEVICE int block_z() { return blockIdx.z; }
INGOT_DEVICE void sync_block() { __syncthreads(); }
#if !INGOT_EMULATE_WAVE64
constexpr int kWaveSize = 32;
INGOT_DEVICE float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
// Lane src's v (src the same in every lane).
INGOT_DEVICE int shfl_idx(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
INGOT_DEVICE void sync_wave() { __syncwarp(); }
// Whether p holds in any lane of the wave (the same answer in every lane).
INGOT_DEVICE bool wave_any(bool p) { return __any_sync(0xffffffffu, p); }
// Predicated loads (one instruction, no branch; the scoreboard waits per register).
constexpr bool kClampedLoads = false;
#else
// ---- wave64 emulation (arch sm_90_w64; tests only) ----------------------------
// The AMD kernels' 64-lane wave on an NVIDIA GPU: threads 64w .. 64w + 63 of a
// workgroup (warps 2w and 2w + 1) act as wave w, so the kernels' wave64 index
// math (lane = tid % 64, lanes per token, the page-table lookahead of kWaveSize
// entries, reductions over 64 lanes) runs on the H200 exactly as on gfx942.
// The cross-lane primitives keep AMD's semantics:
// - shfl_xor and shfl_idx are ds_bpermute_b32: each lane reads the value of
//   lane (its own index) & 63, whatever the other lanes ask for. Here through
//   the wave's exchange slot in shared memory: every lane writes its value, a
//   64-thread named barrier, every lane reads its source, the barrier again (so
//   that the next exchange overwrites nothing still to be read).
// - sync_wave is that barrier (bar.sync 1 + w, 64): it orders the wave's
//   shared-memory writes before its reads, as the fences around AMD's
//   wave_barrier do. Barrier 0 stays __syncthreads (sync_block).
// A named barrier waits for all 64 threads, so every call must come from the
// whole wave. In the kernels (ingot_ad_*.h) every one does: the conditions around
// them (the loop over the segment's tiles, the page lookahead's block switch,
// the merge's tid < kWaveSize) are the same for the 64 lanes of a wave. The
// workgroup must be whole waves, at most kEmulatedWaves of them (barrier ids
// 1..15); a launch that is not traps instead of hanging. Correct, not fast:
// each exchange costs two barriers.
constexpr int kWaveSize = 64;
constexpr int kEmulatedWaves = 15;
INGOT_DEVICE int emulated_wave() { return (int)(threadIdx.x / 64); }
INGOT_DEVICE void sync_wave() {
  if (blockDim.x % 64 != 0 || blockDim.x > 64 * kEmulatedWaves || blockDim.y != 1 || blockDim.z != 1) __trap();
  asm volatile("bar.sync %0, 64;" ::"r"(1 + emulated_wave()) : "memory");
}
INGOT_DEVICE int wave_lane() { return (int)(threadIdx.x % 64); }
// This wave's exchange slot: 64 words of shared memory.
INGOT_DEVICE u32 *wave_slot() {
  // kEmulatedWaves x 64 words: EMULATED_WAVE64_LDS in generator/ingot/archs.py.
  __shared__ u32 ingot_wave_slots[kEmulatedWaves][64];
  return ingot_wave_slots[emulated_wave()];
}
// The value lane src & 63 of this wave passes (ds_bpermute_b32).
INGOT_DEVICE u32 wave_exchange(u32 v, int src) {
  u32 *slot = wave_slot();
  slot[threadIdx.x % 64] = v;
  sync_wave();
  const u32 r = slot[src & 63];
  sync_wave();
  return r;
}
INGOT_DEVICE float shfl_xor(float v, int mask) {
  return __uint_as_float(wave_exchange(__float_as_uint(v), (int)(threadIdx.x % 64) ^ mask));
}
// Lane src's v (as on AMD, src may differ from lane to lane).
INGOT_DEVICE int shfl_idx(int v, int src) { return (int)wave_exchange((u32)v, src); }
// Whether p holds in any of the wave's 64 lanes: each warp's ballot through the exchange
// slot, so that both warps of the wave take the same branch (their barriers must match).
INGOT_DEVICE bool wave_any(bool p) {
  u32 *slot = wave_slot();
  const u32 w = __ballot_sync(0xffffffffu, p);
  if (threadIdx.x % 32 == 0) slot[(threadIdx.x % 64) / 32] = w;
  sync_wave();
  const bool any = (slot[0] | slot[1]) != 0u;
  sync_wave();
  return any;
}
// The AMD archs' clamped loads (templates/ingot_ad_split_simt.h, load_chunk), so
// that the load path that ships for gfx942 and gfx950 is the one that runs here.
constexpr bool kClampedLoads = true;
#endif
// Streaming read: the KV cache is read once, so keep it out of L1.
INGOT_DEVICE u32x4 load16(const void *p) {
  u32x4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
INGOT_DEVICE u32x2 load8(const void *p) {
  u32x2 r;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
  return r;
}
// Loads only when pred holds, zeros otherwise: one predicated instruction, no branch.
INGOT_DEVICE u32x4 load16_if(const void *p, bool pred) {
  u32x4 r = {0u, 0u, 0u, 0u};
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
      " @p ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n}"
      : "+r"(r.x), "+r"(r.y), "+r"(r.z), "+r"(r.w)
      : "l"(p), "r"((int)pred));
  return r;
}

// Loads of what the grid before in the stream may have written (the lengths,
// q, the workspace's partials), made after grid_dependency_wait: ordinary
// coherent loads (.ca: L1 and L2), never the read-only path. A read-only (.nc)
// load promises the data is fixed for the kernel's whole life, so ptxas may
// move it above griddepcontrol.wait; a programmatically launched grid starts
// while the grid before still runs, and such a load could read the old value.
// griddepcontrol.wait makes the grid before's writes visible to this grid, so
// an ordinary load after it may be served by L1: the waves of an SM that all
// read q and the length then share one L2 request instead of each sending its
// own to the same L2 lines (measured on the H200 at 64K, 264 workgroups, with
// q's loads issued first: the length known 0.42 us after the wait instead of
// 1.25; docs/PERFORMANCE.md, "q before the length").
// The read-only K and V loads above are safe after the wait only because their
// addresses and predicates come from the length, loaded with load_dep.
INGOT_DEVICE int load_dep(const int *p) {
  int v;
  asm volatile("ld.global.ca.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
INGOT_DEVICE float load_dep(const float *p) {
  float v;
  asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
// load_dep when pred holds, 0 otherwise (p is not read then).
INGOT_DEVICE int load_dep_if(const int *p, bool pred) {
  int v = 0;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
      " @p ld.global.ca.s32 %0, [%1];\n}"
      : "+r"(v)
      : "l"(p), "r"((int)pred)
      : "memory");
  return v;
}
INGOT_DEVICE u32x4 load16_dep_if(const void *p, bool pred) {
  u32x4 r = {0u, 0u, 0u, 0u};
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
      " @p ld.global.ca.v4.u32 {%0,%1,%2,%3}, [%4];\n}"
      : "+r"(r.x), "+r"(r.y), "+r"(r.z), "+r"(r.w)
      : "l"(p), "r"((int)pred)
      : "memory");
  return r;
}

// Tensor cores: D = A(16x16, row) * B(16x8, col) + C, fp32 accumulate (PTX
// mma.sync.m16n8k16). Lane l holds A rows l/4 and l/4+8, B column l/4, C row
// l/4 (and +8), at k (or n) = (l%4)*2 + {0,1} (+8): the PTX ISA's fragment layout.
// The emulated 64-lane wave has none (its kernels run the SIMT path, as on AMD).
constexpr bool kHasMma16816 = !INGOT_EMULATE_WAVE64;
// Programmatic dependent launch (sm_90): a kernel launched with programmatic
// stream serialization may start while the previous one runs; it waits here
// until that grid has completed and its memory is visible. Without the launch
// attribute both are no-ops.
INGOT_DEVICE void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
INGOT_DEVICE void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }
INGOT_DEVICE void sched_fence() {}  // AMD's scheduling fence (above); ptxas needs none here
// Experiment knob `trace` (bench/kernel_probe.py --trace): the global nanosecond
// timer (one clock for every SM) and this SM's cycle counter, read once dep is
// available and in order with the memory operations around them.
INGOT_DEVICE void stamp_after(int dep, unsigned long long &ns, unsigned long long &clk) {
  asm volatile("mov.u64 %0, %%globaltimer;\n\tmov.u64 %1, %%clock64;" : "=l"(ns), "=l"(clk) : "r"(dep) : "memory");
}
INGOT_DEVICE unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
INGOT_DEVICE int grid_x() { return gridDim.x; }
INGOT_DEVICE int grid_y() { return gridDim.y; }
INGOT_DEVICE int grid_z() { return gridDim.z; }
// v, hidden from the optimizer (see the AMD side).
INGOT_DEVICE int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}
INGOT_DEVICE int opaque_uniform(int v) { return opaque(v); }
INGOT_DEVICE int wave_uniform(int v) { return v; }  // (see the AMD side)
template <int DT>
INGOT_DEVICE void mma16816(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if (DT == 0) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
// Two floats -> one register of two 16-bit values (lo in the low half), round to nearest.
template <int DT>
INGOT_DEVICE u32 pack2(float lo, float hi) {
  u32 d;
  if (DT == 0)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
INGOT_DEVICE u32 byte_perm(u32 x, u32 y, u32 sel) { return __byte_perm(x, y, sel); }
// Asynchronous 16-byte copy global -> shared (sm_80+ cp.async, cached in L2
// only): zeros land when pred is false, and then nothing is read. Copies are
// grouped by async_commit; async_wait<N> returns once at most N of this
// thread's groups are still in flight (other threads' copies need a barrier).
INGOT_DEVICE void copy16_async(void *lds, const void *p, bool pred) {
  const u32 dst = (u32)__cvta_generic_to_shared(lds);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(p), "r"(pred ? 16 : 0)
               : "memory");
}
INGOT_DEVICE void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Four 8x8 matrices of 16-bit elements from shared memory, transposed (ldmatrix
// .trans): lane l gives the address of row l % 8 of matrix l / 8 (16 bytes, 16-byte
// aligned); word m of the result holds matrix m's rows 2 (l % 4) and 2 (l % 4) + 1 of
// column l / 4, an m16n8k16 B word from row-major rows (k the row). Volatile, so that
// it stays after the barrier that made the rows visible.
INGOT_DEVICE u32x4 ldsm_x4_trans(const void *lds) {
  const u32 a = (u32)__cvta_generic_to_shared(lds);
  u32x4 r;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "r"(a)
               : "memory");
  return r;
}
template <int N>
INGOT_DEVICE void async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// The workgroup's dynamic shared memory (the launch's size; past the 48 KiB of
// static shared memory with the function's opt-in attribute, which the runtime
// sets). A launch with less than `bytes` traps: the workgroup would otherwise
// write past it. It starts where the kernel's static shared memory ends: a
// ring kernel's static part is a multiple of 128 bytes (BalanceShared), so that
// the ring's rows sit on 128-byte lines (decision 0037). (An extern aligned to
// 128 would do it too, but it rounds every kernel's static section of the
// object, the merges' included, up to 128.)
INGOT_DEVICE unsigned char *dynamic_lds(unsigned bytes) {
  extern __shared__ __align__(16) unsigned char ingot_dynamic_lds[];
  unsigned have;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(have));
  if (have < bytes) __trap();
  return ingot_dynamic_lds;
}
INGOT_DEVICE float max32(float a, float b) { return fmaxf(a, b); }
INGOT_DEVICE float fma32(float a, float b, float c) { return __fmaf_rn(a, b, c); }
// Approximate reciprocal: no call into the IEEE division slow path (which
// costs a stack frame and spills around the call).
INGOT_DEVICE float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
INGOT_DEVICE float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
INGOT_DEVICE float fast_log2(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
INGOT_DEVICE float half_to_float(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
INGOT_DEVICE u16 float_to_half(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
INGOT_DEVICE float bits_to_float(u32 u) { return __uint_as_float(u); }
INGOT_DEVICE u32 float_to_bits(float f) { return __float_as_uint(f); }
#if !INGOT_EMULATE_WAVE64
constexpr bool kHasMfma = false;  // sm_90 runs its own tensor-core path (mma16816)
#endif
#endif


}  // namespace ingot

#if INGOT_ARCH_NVIDIA && INGOT_EMULATE_WAVE64
#include "ingot_mfma_emulated.h"  // AMD's matrix-core instruction on the emulated wave
#endif

#endif  // INGOT_ARCH_H
