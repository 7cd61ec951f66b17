// Does racecheck report a hazard where none can be? Wave 0 (threads 0..63, two warps) exchanges
// values through a named barrier (bar.sync 1, 64), as the wave64 emulation's shfl does; the other
// waves do not. Then every thread writes sh[tid], __syncthreads, and reads sh[(tid + 64) % N].
// Mode 0: no named barrier at all (control). Mode 1: wave 0 only (the merge's lse reductions).
// Mode 2: every wave, its own id, 6 rounds each. Mode 3: every wave its own id, wave w w + 1 rounds
// (the split, whose waves run different numbers of chunks).
#include <cstdio>
#include <cstdlib>
__global__ void probe(int mode, float *out) {
  __shared__ float slot[4][64];
  __shared__ float sh[256];
  const int t = threadIdx.x, w = t / 64;
  float v = t;
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
// usage: racecheck_probe MODE (0..3), one mode a run, so that racecheck's report names it.
int main(int argc, char **argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : -1;
  if (mode < 0 || mode > 3) {
    fprintf(stderr, "usage: racecheck_probe MODE (0..3)\n");
    return 2;
  }
  float *out;
  cudaMalloc(&out, 256 * sizeof(float));
  probe<<<1, 256>>>(mode, out);
  const cudaError_t e = cudaDeviceSynchronize();
  printf("mode %d: %s\n", mode, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
