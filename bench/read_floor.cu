// read_floor: what reading a decode call's K and V costs on this GPU with no
// attention math at all. A bound for issue 5's targets: a decode kernel reads
// at least these bytes, so no plan can beat the matching row here.
//
// A call reads L tokens of K and of V (token-major rows of `heads` slices of
// 256 bytes, as a cache of Hkv heads of head dim 128 in bf16 lays them out)
// and writes 16 bytes per thread. Every launch is programmatic, as libingot
// launches on sm_90; a CUDA graph holds one call per buffer set (the sets
// rotate 4x the L2 past it, at least 20 calls), is replayed, and timed with
// events; a figure is the median of the rounds' per-call times.
//
// Modes:
//   (default) bounds: per L, the fastest register-load read (three shapes of
//             workgroup), the same with the valid length loaded after the
//             grid dependency wait (as ingot's split does), that grid with
//             length 0 (an empty grid's cost), and the bulk copy engine's
//             read of 16 KB contiguous pieces;
//   --patterns N  register loads by workgroup shape and by rows (one head's
//             slice or whole rows), and segments handed out at run time
//             against the fixed schedule, in turns N times;
//   --copies N    the asynchronous copy engines: bulk copies by piece size,
//             tensor copies (128-byte swizzle) of one head or of whole rows,
//             against register loads, in turns N times.
//
// Build: nvcc -O3 -arch=sm_90 -o read_floor bench/read_floor.cu (cmake builds
// bin/read_floor where nvcc is found). Run on the GPU machine:
//   read_floor [--tokens L,L,...] [--heads H] [--rounds R] [--patterns N | --copies N]
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace {

constexpr int kSpan = 256;  // bytes of one head's row: D = 128 x 2 bytes

__device__ __forceinline__ void dep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void dep_launch() { asm volatile("griddepcontrol.launch_dependents;" :::); }
__device__ __forceinline__ int load_len(const int *p) {
  int v;
  asm volatile("ld.global.ca.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint4 ld16(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// The ring's barriers: n of them, each expecting one arrival.
__device__ __forceinline__ void mbar_init(unsigned long long *bar, int n) {
  for (int i = 0; i < n; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[i])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arms a barrier for this phase's `bytes` of copies (the one arrival).
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT%=;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// Streams tokens [t0, t1) of this workgroup's slice (wg_heads x 256 bytes of
// a token row from head_off on), rows_per_load rows per load instruction, into acc.
template <int kThreads, int kU>
__device__ __forceinline__ void read_segment(const char *k, const char *v, long long stride, long long head_off,
                                             int rows_per_load, int row, int part, int t0, int t1, uint4 &acc) {
  const int rows = rows_per_load * (kU / 2);
  uint4 cur[kU], nxt[kU];
  auto issue = [&](int tok0, uint4(&r)[kU]) {
#pragma unroll
    for (int i = 0; i < kU / 2; ++i) {
      const int t = tok0 + row + i * rows_per_load;
      const long long off = t * stride + head_off + part * 16;
      r[2 * i] = t < t1 ? ld16(k + off) : make_uint4(0, 0, 0, 0);
      r[2 * i + 1] = t < t1 ? ld16(v + off) : make_uint4(0, 0, 0, 0);
    }
  };
  if (t0 < t1) issue(t0, cur);
  for (int tok = t0; tok < t1; tok += rows) {
    if (tok + rows < t1) issue(tok + rows, nxt);
#pragma unroll
    for (int i = 0; i < kU; ++i) {
      acc.x ^= cur[i].x, acc.y ^= cur[i].y, acc.z ^= cur[i].z, acc.w ^= cur[i].w;
      cur[i] = nxt[i];
    }
  }
}

// Register loads. Grid: segments x (heads / wg_heads) workgroups of kThreads;
// workgroup (s, h) streams the tokens of segment s in its heads' slice of K
// and of V, kU 16-byte loads per thread a step (half K, half V), the next
// step's issued before this step's values are used. ptxas keeps about one step
// in flight (86 registers at kU = 16): kU x 16 bytes per thread.
template <int kThreads, int kU>
__global__ void __launch_bounds__(kThreads) stream(const char *k, const char *v, const int *len_dev,
                                                   int len_arg, int heads, int segments, int wg_heads,
                                                   uint4 *out) {
  dep_wait();
  const int len = len_dev ? load_len(len_dev) : len_arg;
  // wg_heads adjacent heads per workgroup: its slice of a token row is
  // wg_heads x 256 contiguous bytes (all of it when wg_heads == heads).
  const int groups = heads / wg_heads;
  const int h = blockIdx.x % groups, s = blockIdx.x / groups;
  const int per_row = wg_heads * kSpan / 16;          // threads per token row
  const int rows_per_load = kThreads / per_row;
  const int rows = rows_per_load * (kU / 2);          // tokens per step
  const int steps = (len + rows - 1) / rows;
  const int per = (steps + segments - 1) / segments;
  const int t0 = s * per * rows, t1 = min(len, (s + 1) * per * rows);
  const long long stride = (long long)heads * kSpan;
  const int row = threadIdx.x / per_row, part = threadIdx.x % per_row;
  uint4 acc = make_uint4(0, 0, 0, 0);
  read_segment<kThreads, kU>(k, v, stride, (long long)h * wg_heads * kSpan, rows_per_load, row, part, t0, t1, acc);
  dep_launch();
  out[(long long)blockIdx.x * kThreads + threadIdx.x] = acc;
}

// The same read, with the segments handed out at run time: `pieces` segments
// per head (more than the workgroups), each workgroup taking the next free one
// from a counter until none is left. A segment's bytes do not depend on who
// reads them, so a kernel built this way stays deterministic if each segment
// writes its own partial. The workgroup that takes the last failing ticket
// (every workgroup takes exactly one) puts the counter back to 0.
template <int kThreads, int kU>
__global__ void __launch_bounds__(kThreads) stream_handout(const char *k, const char *v, int len, int heads,
                                                           int pieces, unsigned *counter, uint4 *out) {
  __shared__ unsigned ticket;
  if (threadIdx.x == 0) ticket = ~0u;
  dep_wait();
  constexpr int kPerRow = kSpan / 16;
  constexpr int kRowsPerLoad = kThreads / kPerRow;
  constexpr int kRows = kRowsPerLoad * (kU / 2);
  const int steps = (len + kRows - 1) / kRows;
  const int per = (steps + pieces - 1) / pieces;
  const long long stride = (long long)heads * kSpan;
  const int row = threadIdx.x / kPerRow, part = threadIdx.x % kPerRow;
  const unsigned total = (unsigned)pieces * heads;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (;;) {
    if (threadIdx.x == 0) {
      if (counter == nullptr) {  // the fixed schedule, same code: workgroup i reads segment i
        ticket = ticket == blockIdx.x ? total : blockIdx.x;
      } else {
        const unsigned t = atomicAdd(counter, 1u);
        if (t == total + gridDim.x - 1) atomicExch(counter, 0u);
        ticket = t;
      }
    }
    __syncthreads();
    const unsigned t = ticket;
    __syncthreads();
    if (t >= total) break;
    const int h = t % heads, s = t / heads;
    const int t0 = s * per * kRows, t1 = min(len, (s + 1) * per * kRows);
    read_segment<kThreads, kU>(k, v, stride, (long long)h * kSpan, kRowsPerLoad, row, part, t0, t1, acc);
  }
  dep_launch();
  out[(long long)blockIdx.x * kThreads + threadIdx.x] = acc;
}

// The read through the bulk copy engine (sm_90): one warp per workgroup
// streams its segment of K and of V (contiguous bytes: whole token rows) into
// a ring of `stages` shared-memory stages; lane 0 arms a stage's mbarrier with
// its byte count, the lanes issue its bulk copies in turns, and the stage is
// refilled once it has landed. No thread reads the stages: this is the bytes'
// arrival alone.
__global__ void __launch_bounds__(32) stream_bulk(const char *k, const char *v, long long bytes, int segments,
                                                  int stage_bytes, int stages, int piece, uint4 *out) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long bar[16];
  const int lane = threadIdx.x;
  dep_wait();
  // Each half stage (K, then V) is copied in pieces of `piece` bytes, the
  // lanes taking turns; below a whole half, each piece lands 16 bytes after
  // the one before (rows padded, as a conflict-free consumer would need).
  const long long half = stage_bytes / 2;
  const int pad = piece < half ? 16 : 0;
  const long long half_smem = half / piece * (piece + pad);
  const long long chunks_total = (bytes + half - 1) / half;
  const long long per = (chunks_total + segments - 1) / segments;
  const long long c0 = blockIdx.x * per, c1 = min(chunks_total, c0 + per);
  if (lane == 0) mbar_init(bar, stages);
  __syncwarp();
  auto issue = [&](long long c) {
    const int st = (int)(c % stages);
    const long long off = c * half;
    const long long n = min(half, bytes - off);
    const unsigned b = smem_addr(&bar[st]);
    const unsigned dst = smem_addr(ring + st * 2 * half_smem);
    if (lane == 0) mbar_expect(b, (unsigned)(2 * n));
    __syncwarp();
    const long long per_half = (n + piece - 1) / piece;  // pieces of K, then as many of V
    for (long long p = lane; p < 2 * per_half; p += 32) {
      const bool is_v = p >= per_half;
      const long long q = is_v ? p - per_half : p;
      const unsigned size = (unsigned)min((long long)piece, n - q * piece);
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       dst + (unsigned)((is_v ? half_smem : 0) + q * (piece + pad))),
                   "l"((is_v ? v : k) + off + q * piece), "r"(size), "r"(b)
                   : "memory");
    }
  };
  for (long long c = c0; c < min(c1, c0 + stages); ++c) issue(c);
  for (long long c = c0; c < c1; ++c) {
    const unsigned b = smem_addr(&bar[c % stages]);
    const unsigned parity = (unsigned)(((c - c0) / stages) & 1);
    mbar_wait(b, parity);
    __syncwarp();
    if (c + stages < c1) issue(c + stages);
  }
  dep_launch();
  if (lane == 0) out[blockIdx.x] = *reinterpret_cast<const uint4 *>(ring);
}

// The read through tensor copies (sm_90 TMA): one thread per workgroup
// streams head h's slice of its segment (boxes of `rows` tokens x 256 bytes,
// or of every head when whole = 1) from K's and V's tensor maps into a ring
// of `stages` stages (128-byte swizzle, as a tensor-core consumer would read
// them), refilling each stage once it has landed. No thread reads the stages.
__global__ void __launch_bounds__(32) stream_tma(const __grid_constant__ CUtensorMap km,
                                                 const __grid_constant__ CUtensorMap vm, int len, int heads,
                                                 int whole, int segments, int rows, int stage_bytes, int stages,
                                                 uint4 *out) {
  extern __shared__ __align__(128) unsigned char ring[];  // 1 KB-aligned by hand below
  __shared__ __align__(8) unsigned long long bar[16];
  dep_wait();
  if (threadIdx.x == 0) {
    const int groups = whole ? 1 : heads;
    const int h = blockIdx.x % groups, s = blockIdx.x / groups;
    const int boxes = (len + rows - 1) / rows, per = (boxes + segments - 1) / segments;
    const int b0 = s * per, b1 = min(boxes, b0 + per);
    mbar_init(bar, stages);
    auto issue = [&](int bx) {
      const int st = bx % stages;
      const unsigned b = smem_addr(&bar[st]);
      const unsigned dst = ((smem_addr(ring) + 1023u) & ~1023u) + (unsigned)(st * stage_bytes);  // 1 KB aligned
      mbar_expect(b, (unsigned)stage_bytes);
      const int c1 = whole ? 0 : 2 * h, c2 = bx * rows;
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
              dst),
          "l"(&km), "r"(0), "r"(c1), "r"(c2), "r"(b)
          : "memory");
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
              dst + (unsigned)stage_bytes / 2),
          "l"(&vm), "r"(0), "r"(c1), "r"(c2), "r"(b)
          : "memory");
    };
    for (int bx = b0; bx < min(b1, b0 + stages); ++bx) issue(bx);
    for (int bx = b0; bx < b1; ++bx) {
      const unsigned parity = (unsigned)(((bx - b0) / stages) & 1);
      mbar_wait(smem_addr(&bar[bx % stages]), parity);
      if (bx + stages < b1) issue(bx + stages);
    }
    dep_launch();
    out[blockIdx.x] = *reinterpret_cast<const uint4 *>(ring);
  }
}

struct Kernel {
  const char *name;
  const void *fn;
  int threads;
};

template <int kThreads, int kU>
Kernel kernel(const char *name) {
  return Kernel{name, reinterpret_cast<const void *>(&stream<kThreads, kU>), kThreads};
}

cudaError_t launch(const void *fn, int blocks, int threads, void **args, cudaStream_t st, size_t smem = 0) {
  cudaLaunchConfig_t cfg = {};
  cfg.dynamicSmemBytes = smem;
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.stream = st;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelExC(&cfg, fn, args);
}

// The buffers of one L: `sets` pairs of K and V, a valid length and a result
// area per set.
struct Setup {
  char *kv = nullptr;        // sets x (K, V)
  long long bytes = 0;       // of one K (or V) buffer
  int sets = 0;
  int *lens = nullptr;       // one valid length per set
  uint4 *out = nullptr;      // per set: 16 bytes per thread
  long long out_elems = 0;   // per set
  unsigned *counters = nullptr;  // per set: the run-time hand-out's

  Setup(int L, int heads, int sms, int len_value, cudaStream_t st) {
    const long long l2_target = 240ll << 20;  // 4x the L2
    bytes = (long long)L * heads * kSpan;
    sets = (int)std::min<long long>(256, std::max<long long>(2, (l2_target + 2 * bytes - 1) / (2 * bytes)));
    CHECK(cudaMalloc(&kv, (size_t)sets * 2 * bytes));
    CHECK(cudaMemsetAsync(kv, 0x3c, (size_t)sets * 2 * bytes, st));
    CHECK(cudaMalloc(&lens, sets * sizeof(int)));
    std::vector<int> l(sets, len_value);
    CHECK(cudaMemcpy(lens, l.data(), sets * sizeof(int), cudaMemcpyHostToDevice));
    out_elems = (long long)4 * sms * 256;
    CHECK(cudaMalloc(&out, (size_t)sets * out_elems * sizeof(uint4)));
    CHECK(cudaMalloc(&counters, sets * sizeof(unsigned)));
    CHECK(cudaMemset(counters, 0, sets * sizeof(unsigned)));
    CHECK(cudaStreamSynchronize(st));
  }
  Setup(const Setup &) = delete;
  Setup &operator=(const Setup &) = delete;
  ~Setup() {
    cudaFree(kv);
    cudaFree(lens);
    cudaFree(out);
    cudaFree(counters);
  }
  int calls() const { return std::max(sets, 20); }
  const char *k(int set) const { return kv + (long long)set * 2 * bytes; }
  const char *v(int set) const { return k(set) + bytes; }
  uint4 *out_of(int set) const { return out + set * out_elems; }
};

// Per-call GPU time (us): `calls` calls (record(c) launches call c) captured in
// one graph, replayed; the median of the rounds.
template <class Record>
double time_graph(int calls, double work, int rounds, cudaStream_t st, Record record) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int c = 0; c < calls; ++c) record(c);
  CHECK(cudaStreamEndCapture(st, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, st));
  const int reps = calls * work < 2e7 ? 20 : 5;
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    CHECK(cudaEventRecord(e0, st));
    for (int i = 0; i < reps; ++i) CHECK(cudaGraphLaunch(exec, st));
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(1e3 * ms / (reps * calls));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Register loads: segments x (heads / wg_heads) workgroups, each reading
// wg_heads adjacent heads' slices; with_len: the valid length is loaded from
// the device after the wait.
double time_loads(const Setup &su, const Kernel &kn, int len, int heads, int wg_heads, int segments, bool with_len,
                  int rounds, cudaStream_t st) {
  return time_graph(su.calls(), len, rounds, st, [&](int c) {
    const int set = c % su.sets;
    const char *k = su.k(set), *v = su.v(set);
    const int *ld = with_len ? su.lens + set : nullptr;
    uint4 *out = su.out_of(set);
    int len_arg = len;
    void *a[] = {&k, &v, &ld, &len_arg, &heads, &segments, &wg_heads, &out};
    CHECK(launch(kn.fn, segments * (heads / wg_heads), kn.threads, a, st));
  });
}

// The run-time hand-out (dynamic) or the fixed schedule in the same code.
double time_handout(const Setup &su, const void *fn, int threads, int len, int heads, int wgs, int pieces,
                    bool dynamic, int rounds, cudaStream_t st) {
  return time_graph(su.calls(), len, rounds, st, [&](int c) {
    const int set = c % su.sets;
    const char *k = su.k(set), *v = su.v(set);
    uint4 *out = su.out_of(set);
    unsigned *ctr = dynamic ? su.counters + set : nullptr;
    int len_arg = len;
    void *a[] = {&k, &v, &len_arg, &heads, &pieces, &ctr, &out};
    CHECK(launch(fn, dynamic ? wgs : pieces * heads, threads, a, st));
  });
}

// Bulk copies: wgs workgroups, each a ring of stages x stage_bytes, copies of piece bytes.
double time_bulk(const Setup &su, int wgs, int stage_bytes, int stages, int piece, int rounds, cudaStream_t st) {
  const void *fn = reinterpret_cast<const void *>(&stream_bulk);
  const int smem = stage_bytes * stages / piece * (piece + (piece < stage_bytes / 2 ? 16 : 0));
  CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  return time_graph(su.calls(), su.bytes / 512.0, rounds, st, [&](int c) {
    const int set = c % su.sets;
    const char *k = su.k(set), *v = su.v(set);
    uint4 *out = su.out_of(set);
    long long bytes = su.bytes;
    int segments = wgs;
    void *a[] = {&k, &v, &bytes, &segments, &stage_bytes, &stages, &piece, &out};
    CHECK(launch(fn, wgs, 32, a, st, (size_t)smem));
  });
}

// A 3-d tensor map of one K or V buffer: 64 elements (128 bytes), then the
// 2 x heads halves of a token row, then the tokens; boxes of 64 x box1 x rows.
CUtensorMap tensor_map(const char *base, int heads, int len, int box1, int rows) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void **>(&encode), 12000,
                                           cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess) {
      std::fprintf(stderr, "read_floor: cuTensorMapEncodeTiled not found\n");
      std::exit(1);
    }
  }
  CUtensorMap m;
  const cuuint64_t dims[3] = {64, (cuuint64_t)2 * heads, (cuuint64_t)len};
  const cuuint64_t strides[2] = {128, (cuuint64_t)heads * kSpan};
  const cuuint32_t box[3] = {64, (cuuint32_t)box1, (cuuint32_t)rows}, estr[3] = {1, 1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<char *>(base), dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "read_floor: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    std::exit(1);
  }
  return m;
}

// The tensor-copy read: per_sm x SMs workgroups, each a ring of stages boxes of
// `rows` tokens (of one head, or of all when whole).
double time_tma(const Setup &su, int heads, int len, bool whole, int per_sm, int sms, int rows, int stages,
                int rounds, cudaStream_t st) {
  const void *fn = reinterpret_cast<const void *>(&stream_tma);
  const int box1 = whole ? 2 * heads : 2;
  int stage_bytes = 2 * rows * box1 * 128;
  CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, stage_bytes * stages + 1024));
  std::vector<CUtensorMap> maps;
  for (int set = 0; set < su.sets; ++set) {
    maps.push_back(tensor_map(su.k(set), heads, len, box1, rows));
    maps.push_back(tensor_map(su.v(set), heads, len, box1, rows));
  }
  const int groups = whole ? 1 : heads;
  int segments = std::max(1, per_sm * sms / groups);
  return time_graph(su.calls(), len, rounds, st, [&](int c) {
    const int set = c % su.sets;
    uint4 *part = su.out_of(set);
    int len_arg = len, w = whole ? 1 : 0, hs = heads, r_ = rows, sg = stages;
    void *a[] = {&maps[2 * set], &maps[2 * set + 1], &len_arg, &hs, &w, &segments, &r_, &stage_bytes, &sg, &part};
    CHECK(launch(fn, segments * groups, 32, a, st, (size_t)stage_bytes * stages + 1024));
  });
}

std::vector<int> parse_list(const char *s) {
  std::vector<int> v;
  for (const char *p = s; *p;) {
    v.push_back(std::atoi(p));
    const char *c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One measurement of a mode's table: a label and the call that times it once.
struct Probe {
  std::string label;
  std::function<double()> run;
};

// Runs the probes in turns `repeats` times and prints each one's median and
// every turn, so that drift shows as spread rather than as a gap.
void run_in_turns(int L, int heads, double gb, std::vector<Probe> &probes, int repeats) {
  std::vector<std::vector<double>> t(probes.size());
  for (int r = 0; r < repeats; ++r)
    for (size_t i = 0; i < probes.size(); ++i) t[i].push_back(probes[i].run());
  for (size_t i = 0; i < probes.size(); ++i) {
    const double med = median(t[i]);
    std::printf("L %-8d heads %d  %-58s %9.2f us %6.0f GB/s  (", L, heads, probes[i].label.c_str(), med,
                gb / (med * 1e-6));
    for (double x : t[i]) std::printf(" %.2f", x);
    std::printf(" )\n");
  }
  std::printf("\n");
}

double copy_ceiling(cudaStream_t st) {
  const size_t n = 2ull << 30;
  void *a, *b;
  CHECK(cudaMalloc(&a, n));
  CHECK(cudaMalloc(&b, n));
  CHECK(cudaMemsetAsync(a, 1, n, st));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<double> bw;
  for (int r = 0; r < 6; ++r) {
    CHECK(cudaEventRecord(e0, st));
    CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st));
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r) bw.push_back(2.0 * n / (ms * 1e-3) / 1e9);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return median(bw);
}

// The register-load kernels: {name, function, threads}.
const Kernel kLoads[] = {kernel<128, 16>("128t x 16"), kernel<256, 16>("256t x 16"), kernel<128, 32>("128t x 32"),
                         kernel<256, 8>("256t x 8")};

// Default mode: the bounds table.
void run_bounds(const std::vector<int> &tokens, int heads, int rounds, int sms, cudaStream_t st) {
  std::printf("copy ceiling: %.0f GB/s (a 2 GiB device-to-device copy, bytes read + written)\n\n",
              copy_ceiling(st));
  std::printf("| L | MB (K+V) | register loads | GB/s | shape | + length load | empty grid (length 0) | bulk copies | GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  struct Shape {
    int kernel, per_sm;
  };
  const Shape shapes[] = {{0, 2}, {0, 4}, {1, 2}};
  for (int L : tokens) {
    Setup su(L, heads, sms, L, st);
    const double gb = 2.0 * su.bytes / 1e9;
    double best = 1e30;
    Shape pick = shapes[0];
    for (const Shape &s : shapes) {
      const double t = time_loads(su, kLoads[s.kernel], L, heads, 1, s.per_sm * sms / heads, false, rounds, st);
      if (t < best) best = t, pick = s;
    }
    const Kernel &kn = kLoads[pick.kernel];
    const int segments = pick.per_sm * sms / heads;
    const double with_len = time_loads(su, kn, L, heads, 1, segments, true, rounds, st);
    const double bulk = std::min(time_bulk(su, sms, 32768, 6, 16384, rounds, st),
                                 time_bulk(su, 2 * sms, 32768, 3, 16384, rounds, st));
    CHECK(cudaMemset(su.lens, 0, su.sets * sizeof(int)));
    const double empty = time_loads(su, kn, L, heads, 1, segments, true, rounds, st);
    std::printf("| %d | %.1f | %.2f us | %.0f | %s, %d/SM | %.2f us | %.2f us | %.2f us | %.0f |\n", L, gb * 1e3, best,
                gb / (best * 1e-6), kn.name, pick.per_sm, with_len, empty, bulk, gb / (bulk * 1e-6));
  }
}

// --patterns N: register loads by workgroup shape and rows; the run-time hand-out.
void run_patterns(const std::vector<int> &tokens, int heads, int rounds, int repeats, int sms, cudaStream_t st) {
  struct Pattern {
    int kernel, per_sm;
    bool whole;  // one workgroup reads every head of its tokens
  };
  const Pattern pats[] = {{0, 2, false}, {1, 2, false}, {0, 4, false}, {2, 2, false}, {3, 2, false},
                          {0, 2, true},  {1, 2, true},  {0, 4, true},  {3, 2, true}};
  for (int L : tokens) {
    Setup su(L, heads, sms, L, st);
    std::vector<Probe> probes;
    for (const Pattern &p : pats) {
      if (p.whole && heads * kSpan / 16 > kLoads[p.kernel].threads) continue;  // a row wider than the workgroup
      char label[96];
      std::snprintf(label, sizeof label, "loads %s, %d/SM, %s", kLoads[p.kernel].name, p.per_sm,
                    p.whole ? "whole rows" : "one head's slice");
      probes.push_back({label, [&su, p, L, heads, rounds, sms, st]() {
                          const int wg_heads = p.whole ? heads : 1;
                          const int segments = std::max(1, p.per_sm * sms / (heads / wg_heads));
                          return time_loads(su, kLoads[p.kernel], L, heads, wg_heads, segments, false, rounds, st);
                        }});
    }
    // The hand-out against the fixed schedule in the same code: 256 threads x
    // 16 loads (one workgroup per SM: its registers allow no more) and 128 x 16
    // (3 per SM); segments per head a multiple of the workgroups per head.
    struct Handout {
      const void *fn;
      int threads, per_sm, mult;
      bool dynamic;
    };
    const void *d256 = reinterpret_cast<const void *>(&stream_handout<256, 16>);
    const void *d128 = reinterpret_cast<const void *>(&stream_handout<128, 16>);
    const Handout hos[] = {{d256, 256, 1, 1, false}, {d256, 256, 1, 2, true}, {d256, 256, 1, 4, true},
                           {d256, 256, 1, 8, true},  {d128, 128, 3, 1, false}, {d128, 128, 3, 2, true},
                           {d128, 128, 3, 4, true},  {d128, 128, 3, 8, true}};
    for (const Handout &h : hos) {
      char label[96];
      std::snprintf(label, sizeof label, "loads %dt x 16, %d/SM, %s, %dx segments", h.threads, h.per_sm,
                    h.dynamic ? "handed out" : "fixed", h.mult);
      probes.push_back({label, [&su, h, L, heads, rounds, sms, st]() {
                          const int wgs = h.per_sm * sms / heads * heads, pieces = h.mult * wgs / heads;
                          return time_handout(su, h.fn, h.threads, L, heads, wgs, pieces, h.dynamic, rounds, st);
                        }});
    }
    run_in_turns(L, heads, 2.0 * su.bytes / 1e9, probes, repeats);
  }
}

// --copies N: the copy engines against register loads.
void run_copies(const std::vector<int> &tokens, int heads, int rounds, int repeats, int sms, cudaStream_t st) {
  struct Bulk {
    int per_sm, stage_bytes, stages, piece;
  };
  const Bulk bulks[] = {{1, 32768, 6, 16384}, {2, 32768, 3, 16384}, {4, 16384, 3, 8192}, {1, 32768, 6, 4096},
                        {1, 32768, 6, 2048},  {1, 32768, 6, 512},   {2, 32768, 3, 512},  {1, 32768, 6, 256}};
  struct Tma {
    bool whole;
    int per_sm, rows, stages;
  };
  // 32 KB stages: K and V of 64 tokens of one head, or of 64 / heads tokens of every head.
  const Tma tmas[] = {{false, 1, 64, 6}, {false, 2, 64, 3}, {false, 4, 32, 3}, {true, 1, 64 / heads, 6},
                      {true, 2, 64 / heads, 3}};
  for (int L : tokens) {
    Setup su(L, heads, sms, L, st);
    std::vector<Probe> probes;
    for (const Bulk &b : bulks) {
      char label[96];
      std::snprintf(label, sizeof label, "bulk, %d/SM, %d stages of %d B, copies of %d B", b.per_sm, b.stages,
                    b.stage_bytes, b.piece);
      probes.push_back({label, [&su, b, rounds, sms, st]() {
                          return time_bulk(su, b.per_sm * sms, b.stage_bytes, b.stages, b.piece, rounds, st);
                        }});
    }
    for (const Tma &t : tmas) {
      char label[96];
      std::snprintf(label, sizeof label, "tensor, %d/SM, %d stages of %d tokens, %s", t.per_sm, t.stages, t.rows,
                    t.whole ? "whole rows" : "one head's slice");
      probes.push_back({label, [&su, t, L, heads, rounds, sms, st]() {
                          return time_tma(su, heads, L, t.whole, t.per_sm, sms, t.rows, t.stages, rounds, st);
                        }});
    }
    for (int i : {0, 1}) {
      const int per_sm = i == 0 ? 4 : 2;
      char label[96];
      std::snprintf(label, sizeof label, "loads %s, %d/SM, one head's slice", kLoads[i].name, per_sm);
      probes.push_back({label, [&su, i, per_sm, L, heads, rounds, sms, st]() {
                          return time_loads(su, kLoads[i], L, heads, 1, per_sm * sms / heads, false, rounds, st);
                        }});
    }
    run_in_turns(L, heads, 2.0 * su.bytes / 1e9, probes, repeats);
  }
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<int> tokens = {1024, 4096, 16384, 65536, 262144, 1048576};
  int heads = 2, rounds = 7, patterns = 0, copies = 0;
  for (int i = 1; i < argc; i += 2) {
    const char *val = i + 1 < argc ? argv[i + 1] : nullptr;
    if (val && !std::strcmp(argv[i], "--tokens")) tokens = parse_list(val);
    else if (val && !std::strcmp(argv[i], "--heads")) heads = std::atoi(val);
    else if (val && !std::strcmp(argv[i], "--rounds")) rounds = std::atoi(val);
    else if (val && !std::strcmp(argv[i], "--patterns")) patterns = std::atoi(val);
    else if (val && !std::strcmp(argv[i], "--copies")) copies = std::atoi(val);
    else {
      std::fprintf(stderr,
                   "read_floor: unknown option or missing value: %s (allowed: --tokens L,L,... --heads H "
                   "--rounds R --patterns N --copies N)\n",
                   argv[i]);
      return 2;
    }
  }
  if (heads < 1 || heads > 16 || (heads & (heads - 1)) || rounds < 1 || tokens.empty()) {
    std::fprintf(stderr, "read_floor: --heads must be a power of 2 in 1..16 and --rounds at least 1\n");
    return 2;
  }
  for (int L : tokens)
    if (L < 64 || L > (1 << 22) || L % 64) {
      std::fprintf(stderr, "read_floor: token count %d: allowed are multiples of 64 in 64..4194304\n", L);
      return 2;
    }
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (patterns > 0) run_patterns(tokens, heads, rounds, patterns, sms, st);
  else if (copies > 0) run_copies(tokens, heads, rounds, copies, sms, st);
  else run_bounds(tokens, heads, rounds, sms, st);
  CHECK(cudaStreamDestroy(st));
  return 0;
}
