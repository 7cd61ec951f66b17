// Does racecheck report a hazard where none can be? Wave 0 (threads 0..63, two warps) exchanges
// values through a named barrier (bar.sync 1, 64), as the wave64 emulation's shfl does; the other
// waves do not. Then every thread writes sh[tid], __syncthreads, and reads sh[(tid + 64) % N].
// Mode 0: no named barrier at all (control). Mode 1: wave 0 only (the merge's lse reductions).
// Mode 2: every wave, its own id, 6 rounds each. Mode 3: every wave its own id, wave w w + 1 rounds
// (the split, whose waves run different numbers of chunks).
// Modes 4 and 5 (added 2026-12-07, after modes 0-3 read 0 hazards on an H100): the wide merge's
// own pattern. Wave 0 alone exchanges 12 times through its slot and named barrier (mode 4; mode 5
// leaves the exchanges out), then writes weight[lane + 64 i], i = 0..3 (its lse reductions' result);
// __syncthreads; every thread reads a weight, writes part[t]; __syncthreads; wave 0 reads part.
#include <cstdio>
#include <cstdlib>
__global__ void probe(int mode, float *out) {
  __shared__ float slot[4][64];
  __shared__ float sh[256];
  __shared__ float weight[256];
  const int t = threadIdx.x, w = t / 64;
  float v = t;
  if (mode >= 4) {
    if (w == 0) {
      for (int r = 0; mode == 4 && r < 12; ++r) {
        slot[0][t] = v;
        asm volatile("bar.sync 1, 64;" ::: "memory");
        v += slot[0][t ^ (1 << (r % 6))];
        asm volatile("bar.sync 1, 64;" ::: "memory");
      }
      for (int i = 0; i < 4; ++i) weight[t + 64 * i] = v + i;
    }
    __syncthreads();
    sh[t] = weight[(t * 7) % 256] * 2.f;
    __syncthreads();
    if (w == 0) out[t] = sh[t] + sh[t + 64] + sh[t + 128] + sh[t + 192];
    return;
  }
  if (mode >= 2 || (mode == 1 && w == 0)) {
    const int rounds = mode == 3 ? w + 1 : 6;
    for (int r = 0; r < rounds; ++r) {
      slot[w][t % 64] = v;
      asm volatile("bar.sync %0, 64;" ::"r"(1 + w) : "memory");
      v += slot[w][(t % 64) ^ (1 << r)];
      asm volatile("bar.sync %0, 64;" ::"r"(1 + w) : "memory");
    }
  }
  __syncthreads();
  sh[t] = v;
  __syncthreads();
  out[t] = sh[(t + 64) % 256];
}
// usage: racecheck_probe MODE (0..5), one mode a run, so that racecheck's report names it.
int main(int argc, char **argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : -1;
  if (mode < 0 || mode > 5) {
    fprintf(stderr, "usage: racecheck_probe MODE (0..5)\n");
    return 2;
  }
  float *out;
  cudaMalloc(&out, 256 * sizeof(float));
  probe<<<1, 256>>>(mode, out);
  const cudaError_t e = cudaDeviceSynchronize();
  printf("mode %d: %s\n", mode, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
