// wave64_sim.cpp: every kernel of the wave64 pack (the shipped gfx942 kernels,
// as generated for sm_90_w64) run on the CPU with a 64-lane wave of threads
// (wave64_sim_arch.h), against the CPU reference: the AMD kernels' index math at
// 64 lanes, checked on any machine. The GPU test (test_gpu_wave64.c) runs the
// same kernels through the runtime on the H200; this one needs no GPU, so CI
// runs it.
//
// The kernels are the generated sources themselves, in shards compiled apart
// (wave64_sim_shard.cpp; wave64_sim_harness.h holds the cases): WAVE64_SIM_SHARDS
// names a file (written by tests/gpu/CMakeLists.txt) that declares each shard's
// function and lists them, in the pack's order. Per kernel: contiguous or paged
// as built, Sq = max_sq, no mask and causal, B = 3 sequences, Hkv = 2; lengths 0, 1, odd,
// capacity, past the capacity and negative, poisoned tails (NaN, Inf, garbage
// K/V; garbage page-table entries past each length); 1, 3 and 20 segments (the
// compact and the wide merge; each length set once per mask), a long cache in 20
// segments, and a ragged batch through the balanced plan (entry points
// balanced_split and balanced_merge) in 5 and 20 units; the launches as the plan
// would make them. First, the matrix-core emulation the MFMA kernels run on
// (mfma_selftest) against a plain matrix product. Kernels run on several
// host threads at once (INGOT_WAVE64_SIM_JOBS, default 4).
// Outputs and the workspace are poisoned first. Usage: wave64_sim [name-substring]
#include "wave64_sim_harness.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "wave64_mfma_case.h"

namespace w64sim {
#include WAVE64_SIM_SHARDS
}  // namespace w64sim

using namespace w64sim;

// The matrix-core emulation (templates/ingot_mfma_emulated.h) against a plain
// matrix product, for each layout it claims (bf16 and fp16 operands): per wave
// of a 4-wave workgroup its own random A, B and C through mfma_case_lane
// (wave64_mfma_case.h, the H200 self-test's too), D checked against the float64
// product (ingot_ref_mfma16_check).
int mfma_selftest(Stats &st) {
  constexpr int kWaves = 4, M = 256;
  int failures = 0;
  Pool pool(64 * kWaves);
  for (int dt = 0; dt < 2; ++dt) {
    const ingot_dtype dtype = dt == 0 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
    std::vector<uint16_t> a(kWaves * M), b(kWaves * M);
    std::vector<float> c(kWaves * M), d(kWaves * M, std::nanf(""));
    for (auto &x : a) x = ingot_ref_from_float(uniform(-2.f, 2.f), dtype);
    for (auto &x : b) x = ingot_ref_from_float(uniform(-2.f, 2.f), dtype);
    for (auto &x : c) x = uniform(-4.f, 4.f);
    const int grid[3] = {1, 1, 1};
    pool.launch(grid, 64 * kWaves, [&] {
      const int tid = ingot::thread_id(), o = tid / 64 * M;
      if (dt == 0)
        mfma_case_lane<0>(&a[o], &b[o], &c[o], &d[o], tid % 64);
      else
        mfma_case_lane<1>(&a[o], &b[o], &c[o], &d[o], tid % 64);
    });
    for (int w = 0; w < kWaves; ++w) {
      const size_t bad = ingot_ref_mfma16_check(&a[w * M], &b[w * M], &c[w * M], &d[w * M], dtype,
                                                dt ? "mfma16 fp16" : "mfma16 bf16", &st.max_err);
      st.compared += M, st.failed += bad;
      failures += bad != 0;
    }
  }
  return failures;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : "";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char *seed_env = std::getenv("INGOT_TEST_SEED");
  const uint64_t seed = seed_env && *seed_env ? std::strtoull(seed_env, nullptr, 0)
                                              : (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  std::printf("wave64_sim: seed %" PRIu64 " (set INGOT_TEST_SEED=%" PRIu64 " to repeat)\n", seed, seed);
  // Kernels run on INGOT_WAVE64_SIM_JOBS host threads (default 4), each kernel on one, seeded by its index.
  const char *jobs_env = std::getenv("INGOT_WAVE64_SIM_JOBS");
  const int jobs = jobs_env && std::atoi(jobs_env) > 0 ? std::atoi(jobs_env) : 4;
  std::vector<Instance> instances;
  for (ShardFn shard : kShards) {
    size_t n = 0;
    const Instance *part = shard(&n);
    instances.insert(instances.end(), part, part + n);
  }
  const int count = (int)instances.size();
  std::vector<int> picked;
  for (int i = 0; i < count; ++i)
    if (std::strstr(instances[i].name, only) != nullptr) picked.push_back(i);
  std::atomic<size_t> next{0};
  std::mutex mu;
  Stats total;
  int failures = 0;
  {
    Stats st;
    failures += mfma_selftest(st);
    std::printf("  mfma16 emulation (bf16, fp16; 4 waves) against the float64 product: %zu values, %zu off, "
                "max error %.3g\n", st.compared, st.failed, st.max_err);
    total.compared += st.compared, total.failed += st.failed;
  }
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j)
    threads.emplace_back([&] {
      for (size_t n; (n = next.fetch_add(1)) < picked.size();) {
        const Instance &in = instances[picked[n]];
        g_rng = (seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(picked[n] + 1))) | 1;
        Stats st;
        const int f = in.run(in.name, st);
        std::lock_guard<std::mutex> lock(mu);
        failures += f;
        total.compared += st.compared, total.failed += st.failed, total.runs += st.runs;
        if (st.max_err > total.max_err) total.max_err = st.max_err;
        std::printf("  %s: %s (%zu runs, %zu values out of tolerance, max error %.3g)\n", in.name, f ? "FAIL" : "ok",
                    st.runs, st.failed, st.max_err);
      }
    });
  for (auto &t : threads) t.join();
  const int kernels = (int)picked.size();
  const bool failed = failures > 0 || total.failed > 0 || total.compared == 0 || kernels == 0;
  std::printf("wave64_sim: %s: %d kernels on a 64-lane CPU wave, %zu runs, %zu values compared, %zu mismatches, "
              "max error %.6g\n", failed ? "FAIL" : "PASS", kernels, total.runs, total.compared, total.failed,
              total.max_err);
  return failed ? 1 : 0;
}
