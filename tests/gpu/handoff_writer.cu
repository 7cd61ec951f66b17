// handoff_writer.cu: the test_gpu_handoff writer, the stand-in for a serving
// engine's append kernel that runs right before ingot on the same stream. It lets
// its dependents start at once (griddepcontrol.launch_dependents, as an engine's
// kernel that triggers early would), spins for spin_ns on the global timer, and only
// then writes the new valid lengths and q from staging buffers. A programmatically
// launched ingot grid that read the length or q before its griddepcontrol.wait
// would see the old values. Built for sm_90 by tests/gpu/CMakeLists.txt; one
// workgroup, any number of threads.
extern "C" __global__ void ingot_test_writer(int *dst0, const int *src0, unsigned n0, int *dst1,
                                             const int *src1, unsigned n1,
                                             unsigned long long spin_ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < spin_ns);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < n0; i += blockDim.x) dst0[i] = src0[i];
  for (unsigned i = threadIdx.x; i < n1; i += blockDim.x) dst1[i] = src1[i];
}
