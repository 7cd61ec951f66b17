// wave64_sim_shard.cpp: one shard of wave64_sim's kernels. Compiled once per
// shard (tests/gpu/CMakeLists.txt: WAVE64_SIM_SHARD_DECL includes each of its
// generated kernels in a namespace of its own, WAVE64_SIM_SHARD_LIST lists them,
// WAVE64_SIM_SHARD_FN names the function that hands them to wave64_sim.cpp).
#include "wave64_sim_harness.h"

#define INGOT_KERNEL(threads, occupancy) static
#include WAVE64_SIM_SHARD_DECL

namespace w64sim {

const Instance *WAVE64_SIM_SHARD_FN(size_t *count) {
  static const Instance kShard[] = {
#include WAVE64_SIM_SHARD_LIST
  };
  *count = sizeof kShard / sizeof kShard[0];
  return kShard;
}

}  // namespace w64sim
