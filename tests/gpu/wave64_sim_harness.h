// wave64_sim_harness.h: what wave64_sim.cpp and its shards (wave64_sim_shard.cpp)
// share: the CPU workgroup pool (fibers switched at barriers), the random inputs,
// and run_kernel<Traits>, every case of one kernel against the CPU reference. Each
// shard instantiates run_kernel for its part of the pack's kernels, so that they
// compile in parallel; wave64_sim.cpp runs them all.
#ifndef WAVE64_SIM_HARNESS_H
#define WAVE64_SIM_HARNESS_H

#include "wave64_sim_arch.h"
#include "ingot_attention_decode.h"

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ucontext.h>
#include <mutex>
#include <utility>
#include <vector>

#include "reference.h"

namespace w64sim {

using ingot::SimBlock;

// A fiber switch's jump: __builtin_longjmp from a function the address sanitizer
// does not instrument, and which may return (the volatile flag), so that no call
// site is taken for a noreturn one: an instrumented noreturn call first runs
// __asan_handle_no_return, system calls on every switch that would also unpoison
// the suspended fiber's frames.
inline volatile int g_jump = 1;
__attribute__((noinline, no_sanitize_address)) inline void jump_to(void **buf) {
  if (g_jump) __builtin_longjmp(buf, 1);
}

// Runs a grid of workgroups of up to `threads` threads (a launch says how many: the
// split and the merge may differ), one workgroup at a time, its
// threads as fibers of this thread switched at barriers (deterministic, no
// spinning, no OS threads to schedule). Each fiber is started once per pool and
// then runs one workgroup's thread after another: starting a context costs a
// sanitizer-instrumented build a clear of the whole fiber stack's shadow (the
// swapcontext interceptor), which per workgroup made the sanitizer run's
// simulation take minutes per case.
class Pool {
 public:
  explicit Pool(int threads) : n_(threads), fibers_(threads) {
    for (auto &f : fibers_) f.stack.resize(kStack);
  }
  // threads: the workgroup's (whole 64-lane waves, at most the pool's).
  void launch(const int grid[3], int threads, const std::function<void()> &body) {
    if (threads < 64 || threads % 64 || threads > (int)fibers_.size()) {
      std::fprintf(stderr, "FAIL: a launch of %d threads on a pool of %zu fibers\n", threads, fibers_.size());
      std::exit(1);
    }
    n_ = threads;
    for (int z = 0; z < grid[2]; ++z)
      for (int y = 0; y < grid[1]; ++y)
        for (int x = 0; x < grid[0]; ++x) run_block(grid, x, y, z, body);
  }

 private:
  static constexpr size_t kStack = 256 * 1024;
  // A fiber starts on its own stack through makecontext/swapcontext; every later
  // switch is a __builtin_setjmp / jump_to pair: no signal-mask system call, and
  // no sanitizer interceptor or hook (see jump_to).
  struct Fiber {
    ucontext_t ctx;
    void *jb[5];  // __builtin_setjmp's buffer
    std::vector<char> stack;
    int waiting = -1;  // barrier id, -1 when runnable
    bool done = false, started = false;
  };
  static inline thread_local Pool *self_ = nullptr;
  static void wait_at(int id) { self_->wait(id); }
  static void entry() {
    Pool *p = self_;
    for (;;) {  // one workgroup's thread per turn; parked in between
      (*p->body_)();
      p->exit_current();
      Fiber &f = p->fibers_[p->cur_];
      if (!__builtin_setjmp(f.jb)) jump_to(p->main_jb_);  // resumed here for the next workgroup
      p = self_;
    }
  }
  void yield() {
    if (!__builtin_setjmp(fibers_[cur_].jb)) jump_to(main_jb_);
  }
  void wait(int id) {
    if (++arrived_[id] == expected_[id]) {
      release(id);
      return;  // the last one to arrive goes on
    }
    fibers_[cur_].waiting = id;
    yield();
  }
  void release(int id) {
    arrived_[id] = 0;
    for (auto &f : fibers_)
      if (f.waiting == id) f.waiting = -1;
  }
  void exit_current() {  // an exited thread holds up no barrier (as on the GPU)
    fibers_[cur_].done = true;
    for (int id : {0, 1 + cur_ / 64})
      if (--expected_[id] > 0 && arrived_[id] == expected_[id]) release(id);
  }
  void run_block(const int grid[3], int x, int y, int z, const std::function<void()> &body) {
    blk_ = SimBlock{};
    blk_.block[0] = x, blk_.block[1] = y, blk_.block[2] = z;
    for (int i = 0; i < 3; ++i) blk_.grid[i] = grid[i];
    blk_.threads = n_;
    blk_.wait = &wait_at;
    ingot::g_sim_block = &blk_;
    self_ = this;
    body_ = &body;
    expected_[0] = n_, arrived_[0] = 0;
    for (int w = 0; w < n_ / 64; ++w) expected_[1 + w] = 64, arrived_[1 + w] = 0;
    for (int t = 0; t < n_; ++t) {
      Fiber &f = fibers_[t];
      f.waiting = -1, f.done = false;
      if (!f.started) {  // its first workgroup: a context of its own, entered below
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.data();
        f.ctx.uc_stack.ss_size = f.stack.size();
        f.ctx.uc_link = &main_;
        makecontext(&f.ctx, &Pool::entry, 0);
      }
    }
    for (int left = n_; left > 0;) {
      bool ran = false;
      for (int t = 0; t < n_; ++t) {
        Fiber &f = fibers_[t];
        if (f.done || f.waiting >= 0) continue;
        cur_ = t;
        ingot::t_sim_tid = t;
        if (!__builtin_setjmp(main_jb_)) {
          if (!f.started) {
            f.started = true;
            swapcontext(&main_, &f.ctx);  // returns only through main_jb_
          } else {
            jump_to(f.jb);
          }
        }
        ran = true;
        if (f.done) --left;
      }
      if (!ran) {
        std::fprintf(stderr, "FAIL: workgroup (%d, %d, %d) deadlocked: %d threads wait at barriers no thread "
                     "left to run reaches\n", x, y, z, left);
        std::exit(1);
      }
    }
  }
  int n_, cur_ = 0;
  std::vector<Fiber> fibers_;
  ucontext_t main_;
  void *main_jb_[5];
  SimBlock blk_;
  int expected_[1 + ingot::kEmulatedWaves], arrived_[1 + ingot::kEmulatedWaves];
  const std::function<void()> *body_ = nullptr;
};

inline thread_local uint64_t g_rng = 0x9E3779B97F4A7C15ull;
inline uint64_t rnd() {
  g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
  return g_rng * 0x2545F4914F6CDD1Dull;
}
inline float uniform(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * (1.0 / 16777216.0)); }
inline uint16_t poison(ingot_dtype dt) {
  const bool h = dt == INGOT_DTYPE_FP16;
  switch (rnd() % 4) {
    case 0: return h ? 0x7e00 : 0x7fc0;
    case 1: return h ? 0x7c00 : 0x7f80;
    case 2: return h ? 0xfc00 : 0xff80;
    default: return (uint16_t)rnd();
  }
}

inline ingot_tensor_desc desc(ingot_dtype dt, int rank, const int64_t *dims) {
  ingot_tensor_desc t;
  std::memset(&t, 0, sizeof t);
  t.dtype = dt, t.rank = rank, t.memory = INGOT_MEMORY_DEVICE;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) t.dims[i] = dims[i], t.strides[i] = stride, stride *= dims[i];
  return t;
}

struct Stats {
  size_t compared = 0, failed = 0, runs = 0;
  double max_err = 0;
};

// One kernel on one graph: lengths, segments and mask given.
// The group an instance's rows are sized for, from its name (..._g<G>_sq...): the
// kernels take the group at run time (kernarg `group`).
inline int group_of(const char *name) {
  const char *g = std::strstr(name, "_g");
  return g ? std::atoi(g + 2) : 0;
}

// fill > 0: the balanced plan (entry points balanced_split and balanced_merge) with
// `splits` units, of which the device takes at least `fill` (ingot_ad_bal_active).
// page_size (paged kernels): tokens a page, two chunks unless given (cap a multiple of it).
// stale: the merge's list starts as an even batch's execute leaves it (count B, every sequence
// with its K slots), not poisoned, as a later uneven batch finds it past its own entries.
template <class T>
int run_case(Pool &pool, const char *name, bool causal, int cap, const int32_t *lens, int splits, Stats &st,
             int fill = 0, int group = 0, int page_size = 0, bool stale = false) {
  constexpr int D = T::kHeadDim, SQ = T::kMaxSq;
  const int G = group > 0 ? group : group_of(name);  // the kernel's own, unless given
  if (G < 1) {
    std::fprintf(stderr, "FAIL %s: no group in the name\n", name);
    return 1;
  }
  const int rows_total = G * SQ, row_blocks = (rows_total + T::kRows - 1) / T::kRows;
  const ingot_dtype dt = T::kDType == ingot::kBF16 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
  const int B = 3, Hkv = 2, Hq = G * Hkv, page = T::kPaged ? (page_size > 0 ? page_size : T::kChunk * 2) : 0;
  const int pps = page ? cap / page : 0, num_pages = B * pps + 2;
  const size_t tok = (size_t)Hkv * D, slots = page ? (size_t)num_pages * page : (size_t)B * cap;
  std::vector<uint16_t> q((size_t)B * Hq * SQ * D), k(slots * tok), v(slots * tok), o(q.size());
  std::vector<float> lse((size_t)B * Hq * SQ), ref_o(q.size()), ref_lse(lse.size());
  std::vector<int32_t> pt((size_t)B * pps + 1), perm(num_pages);
  for (auto &x : q) x = ingot_ref_from_float(uniform(-3, 3), dt);
  for (int i = 0; i < num_pages; ++i) perm[i] = i;
  for (int i = num_pages - 1; i > 0; --i) std::swap(perm[i], perm[rnd() % (uint64_t)(i + 1)]);
  for (size_t e = 0; e < slots * tok; ++e) k[e] = poison(dt), v[e] = poison(dt);
  for (int b = 0; b < B; ++b) {
    const int len = lens[b] < 0 ? 0 : lens[b] > cap ? cap : lens[b];
    for (int p = 0; p < pps; ++p)
      pt[(size_t)b * pps + p] = p * page < len ? perm[b * pps + p] : (rnd() & 1 ? -1 - (int)(rnd() % 1000) : num_pages + (int)(rnd() % 1000));
    for (int pos = 0; pos < len; ++pos) {
      const size_t slot = page ? (size_t)pt[(size_t)b * pps + pos / page] * page + pos % page : (size_t)b * cap + pos;
      for (size_t e = 0; e < tok; ++e) {
        k[slot * tok + e] = ingot_ref_from_float(uniform(-1, 1), dt);
        v[slot * tok + e] = ingot_ref_from_float(uniform(-1, 1), dt);
      }
    }
  }
  ingot_attention_graph g;
  std::memset(&g, 0, sizeof g);
  const int64_t qd[4] = {B, Hq, SQ, D}, ld[3] = {B, Hq, SQ}, bd[1] = {B};
  g.q = g.o = desc(dt, 4, qd);
  if (page) {
    const int64_t kd[4] = {num_pages, page, Hkv, D}, pd[2] = {B, pps};
    g.k = desc(dt, 4, kd), g.page_table = desc(INGOT_DTYPE_INT32, 2, pd), g.kv_layout = INGOT_KV_PAGED;
  } else {
    const int64_t kd[4] = {B, cap, Hkv, D};
    g.k = desc(dt, 4, kd), g.kv_layout = INGOT_KV_CONTIGUOUS;
  }
  g.v = g.k;
  g.lse = desc(INGOT_DTYPE_FP32, 3, ld);
  g.seq_lens = desc(INGOT_DTYPE_INT32, 1, bd);
  g.capacity = cap, g.mask = causal ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE, g.mask_align = INGOT_ALIGN_BOTTOM_RIGHT;
  // The usual 1/sqrt(D) mostly; a negative, a zero and a larger scale too (the kernels scale
  // in the exponent's fma, a negative scale folded into q's signs, a zero one kept finite).
  const float scales[6] = {1.0f, 1.0f, 1.0f, -1.0f, 0.0f, 2.5f};
  g.scale = scales[rnd() % 6] / std::sqrt((float)D);

  // The launches and kernargs as the dispatch stub makes them. Balanced: per KV
  // head a block of units + B slots, then the merge's list (its count, an entry per sequence) as int64.
  const bool balanced = fill > 0;
  const long long slots_per = balanced ? ingot_ad_bal_slots(splits, B) : splits;
  const long long per = ((long long)rows_total * slots_per + 3) / 4 * 4 + (long long)rows_total * slots_per * D;
  const size_t ws_floats = balanced ? (size_t)(Hkv * per + 2 * ingot_ad_bal_list_words(B)) : splits > 1 ? (size_t)(B * Hkv * per) : 1;
  std::vector<float> ws(ws_floats);
  std::memset(ws.data(), 0xFF, ws.size() * 4);
  std::memset(o.data(), 0xFF, o.size() * 2);
  std::memset(lse.data(), 0xFF, lse.size() * 4);
  const void *qp = q.data(), *kp = k.data(), *vp = v.data();
  void *op = o.data();
  float *lsep = lse.data(), *wsp = splits > 1 || balanced ? ws.data() : nullptr;
  const int *lensp = lens, *ptp = page ? pt.data() : nullptr;
  const long long qs[3] = {g.q.strides[0], g.q.strides[1], g.q.strides[2]};
  const long long ks[3] = {g.k.strides[0], g.k.strides[1], g.k.strides[2]};
  const long long pts = page ? pps : 0;
  const int flags = (causal ? 1 : 0) | 2 |
                    (balanced ? INGOT_AD_FLAG_BALANCED | B << INGOT_AD_FLAG_BATCH_SHIFT | fill << INGOT_AD_FLAG_FILL_SHIFT |
                                    (splits % B == 0 ? INGOT_AD_FLAG_EVEN : 0)  // as the plan sets it
                              : 0);
  if (stale && balanced && splits % B == 0) {
    long long *list = reinterpret_cast<long long *>(ws.data() + ingot::balanced_list_offset<T>(Hkv, splits, rows_total,
                                                                                              flags));
    const int K = splits / B;
    list[0] = B;
    for (int b = 0; b < B; ++b) list[1 + b] = ingot_ad_bal_entry(b, (long long)b * K, K);
  }
  const float scale = g.scale;
  auto split = [&] {
    if (balanced)
      ingot::decode_split_balanced<T>(qp, kp, vp, op, lsep, lensp, ptp, wsp, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2],
                                      ks[0], ks[1], ks[2], qs[0], qs[1], qs[2], pts, cap, page, SQ, splits, Hkv, flags,
                                      scale, G);
    else
      ingot::decode_split<T>(qp, kp, vp, op, lsep, lensp, ptp, wsp, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], ks[0],
                             ks[1], ks[2], qs[0], qs[1], qs[2], pts, cap, page, SQ, splits, Hkv, flags, scale, G);
  };
  auto merge = [&] {
    if (balanced)
      ingot::decode_merge<T, true>(qp, kp, vp, op, lsep, lensp, ptp, wsp, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2],
                                   ks[0], ks[1], ks[2], qs[0], qs[1], qs[2], pts, cap, page, SQ, splits, Hkv, flags,
                                   scale, G);
    else
      ingot::decode_merge<T, false>(qp, kp, vp, op, lsep, lensp, ptp, wsp, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2],
                                    ks[0], ks[1], ks[2], qs[0], qs[1], qs[2], pts, cap, page, SQ, splits, Hkv, flags,
                                    scale, G);
  };
  // balanced: a workgroup per slot (units + B - 1 per KV head and row block), no batch dimension
  const int sgrid[3] = {balanced ? (splits + B - 1) * Hkv * row_blocks : splits * Hkv * row_blocks, 1,
                        balanced ? 1 : B};
  pool.launch(sgrid, T::kThreads, split);
  if (splits > 1 || balanced) {  // the balanced merge always runs
    const int rows = rows_total;
    const int mx = splits <= INGOT_AD_COMPACT_MERGE_SPLITS ? (rows * (D / 4) + T::kMergeThreads - 1) / T::kMergeThreads
                                                           : rows * (D / T::kMergeCols);
    // balanced: the depth the plan gives a one-CU device, so that each merge workgroup
    // takes several sequences of the list in turn; with a stale list an H100's (132 CUs: a
    // workgroup per sequence, so that workgroups past the list's count find its stale entries)
    const int mz = balanced ? (int)ingot_ad_bal_merge_z(B, mx, Hkv, stale ? 132 : 1) : B;
    const int mgrid[3] = {mx, Hkv, mz};
    pool.launch(mgrid, T::kMergeThreads, merge);
  }
  if (ingot_reference_decode(&g, q.data(), k.data(), v.data(), lens, ptp, ref_o.data(), ref_lse.data()) != 0) {
    std::fprintf(stderr, "FAIL %s: the reference refused the case\n", name);
    return 1;
  }
  double err = 0;
  size_t bad = ingot_reference_compare(o.data(), dt, ref_o.data(), o.size(), 0.015, 0.015, &err);
  for (size_t r = 0; r < lse.size(); ++r) {
    const bool inf = std::isinf(ref_lse[r]);
    const double e = std::fabs((double)lse[r] - ref_lse[r]);
    if (inf ? !(std::isinf(lse[r]) && lse[r] < 0) : !(e <= 0.015 + 0.015 * std::fabs(ref_lse[r]))) ++bad;
    if (!inf && e > err) err = e;
  }
  st.compared += o.size() + lse.size();
  st.failed += bad;
  st.runs++;
  if (err > st.max_err) st.max_err = err;
  if (bad)
    std::fprintf(stderr, "FAIL %s: %s cap %d page %d lengths %d %d %d, %d %s, scale %g: %zu of %zu values out of "
                 "tolerance (max error %g)\n", name, causal ? "causal" : "no mask", cap, page, lens[0], lens[1], lens[2],
                 splits, balanced ? "balanced units" : "segments", (double)scale, bad, o.size() + lse.size(), err);
  return bad ? 1 : 0;
}

template <class T>
int run_kernel(const char *name, Stats &st) {
  // Instances that differ only in the group their rows are sized for (g4 and g8 at
  // Sq 4: 8 rows each) are one Traits type, so one set of LDS statics
  // (INGOT_SHARED): they take turns, whatever the host threads.
  static std::mutex same_traits;
  std::lock_guard<std::mutex> turn(same_traits);
  Pool pool(T::kThreads > T::kMergeThreads ? T::kThreads : T::kMergeThreads);
  const int page = T::kPaged ? T::kChunk * 2 : 0;
  const int small = page ? 13 * page : 203, large = page ? 18 * T::kTile : 18 * T::kTile + 13;
  int failures = 0;
  for (int causal = 0; causal < 2; ++causal) {
    const int32_t a[3] = {0, small, 2 * (int)(rnd() % (uint64_t)(small / 2)) + 1};
    const int32_t b[3] = {1, small + 7, -3};
    const int32_t c[3] = {(int32_t)(rnd() % (uint64_t)(small + 1)), small - 1, T::kMaxSq - 1};
    // each length set once per mask, under another segment count
    const int32_t *sets[3] = {a, b, c};
    const int counts[3] = {1, 3, 20};
    for (int j = 0; j < 3; ++j) failures += run_case<T>(pool, name, causal, small, sets[(j + causal) % 3], counts[j], st);
    const int32_t l[3] = {large, large - 1 - 2 * (int)(rnd() % 64), (int32_t)(rnd() % (uint64_t)large)};
    failures += run_case<T>(pool, name, causal, large, l, 20, st);
    // The balanced plan on a ragged batch (one long, one empty or short, one odd):
    // 5 units all taken, and 20 units of which the device takes at least 4; without
    // the mask, 300 units (past the merge's 256: workspace slots of 303) all wanted,
    // so that every tile is a share of its own and the long sequence has 18 pieces.
    const int32_t r[3] = {large, causal ? 0 : 3, 2 * (int)(rnd() % (uint64_t)(large / 2)) + 1};
    failures += run_case<T>(pool, name, causal, large, r, 5, st, 5);
    failures += run_case<T>(pool, name, causal, large, r, 20, st, 4);
    if (!causal) failures += run_case<T>(pool, name, causal, large, r, 300, st, 300);
    // An even batch (no sequence past 17/16 of the mean; units a multiple of B = 3):
    // K = units / 3 segments a sequence, no scan past the first pass. K = 1 writes O
    // from the split, 2 takes the compact merge, 18 the wide one; and an empty batch.
    const int32_t ev[3] = {large, large - 1 - (int)(rnd() % (uint64_t)T::kTile), large - T::kTile};
    const int32_t none[3] = {0, -5, 0};
    failures += run_case<T>(pool, name, causal, large, ev, 3, st, 3);
    failures += run_case<T>(pool, name, causal, large, ev, 6, st, 6);
    failures += run_case<T>(pool, name, causal, large, causal ? none : ev, 54, st, 54);
    // The ragged batch through even plans (K = 2 and 4: the compact merge): the scan's way,
    // once with the list as an even batch leaves it, whose entries past this batch's count
    // name every sequence with K slots of partials the merge must not take.
    failures += run_case<T>(pool, name, causal, large, r, 6, st, 6, 0, 0, causal);
    failures += run_case<T>(pool, name, causal, large, r, 12, st, 12, 0, 0, !causal);
    if constexpr (T::kPaged) {
      // Pages shorter than a chunk (1, 2, 4 or 8 tokens): a page-table entry per token a
      // lane loads, not one per chunk.
      int tiny = 1 << (int)(rnd() % 4);
      while (tiny >= T::kChunk) tiny >>= 1;
      failures += run_case<T>(pool, name, causal, small, sets[(1 + causal) % 3], 3, st, 0, 0, tiny);
      failures += run_case<T>(pool, name, causal, large, l, 20, st, 0, 0, tiny);
      failures += run_case<T>(pool, name, causal, large, r, 20, st, 4, 0, tiny);
    }
    if constexpr (T::kRowWaves) {
      // Row waves: a group of 2 blocks and 7 rows (71 at 32 rows: Falcon-7B's, the last
      // block's waves but the first all padding) and one of a wave's rows and one more
      // (a wave of one live row, the rest padding).
      failures += run_case<T>(pool, name, causal, small, sets[causal], 3, st, 0, 2 * T::kRows + 7);
      failures += run_case<T>(pool, name, causal, large, l, 20, st, 0, T::kWaveRows + 1);
    }
  }
  return failures;
}

struct Instance {
  const char *name;
  int (*run)(const char *, Stats &);
};

// A shard's part of the pack: its instances, in the pack's order.
using ShardFn = const Instance *(*)(size_t *count);

}  // namespace w64sim

#endif  // WAVE64_SIM_HARNESS_H
