// ingot_kva_append.h: the KV-cache append kernel (family kv_append; the device
// semantics are runtime/include/ingot/kv_append.h's). Each pack's generated
// source (templates/kv_append.hip.j2) instantiates it for one dtype, layout and
// workgroup size; everything else is a kernel argument.
//
// One workgroup per sequence b, so that the read of seq_lens[b] and its advance
// are ordered by one barrier and never race with another workgroup:
//   1. wait for the grid before in the stream (the attention of the step before
//      reads seq_lens and the cache; programmatic launch lets this grid start
//      early, so nothing is read or written before the wait);
//   2. every thread reads L = clamp(seq_lens[b], 0, capacity);
//   3. the workgroup copies the Sq x Hkv rows of head_dim elements of k_new and
//      v_new, 16-byte vectors, to positions L + t < capacity (paged: into page
//      page_table[b][(L + t) / page_size] when that entry is in [0, num_pages));
//      a row whose slot is not there is skipped: nothing outside the target
//      slots is written;
//   4. with advance: a barrier (every thread has read L), then thread 0 stores
//      min(L + Sq, capacity).
// Every index is int64: L + t reaches 2 capacity, and the element offsets
// multiply tokens by strides.
#ifndef INGOT_KVA_APPEND_H
#define INGOT_KVA_APPEND_H

#include "ingot_abi.h"
#include "ingot_arch.h"
#include "ingot_dtype.h"

// The kernarg signature (the family's SIGNATURE in
// generator/ingot/families/kv_append.py; the UDD lists it and the build checks
// each code object against it). Strides are in elements.
#define INGOT_KVA_PARAMS                                                                                \
  const void *__restrict__ k_new, const void *__restrict__ v_new, void *__restrict__ k_cache,           \
      void *__restrict__ v_cache, int *__restrict__ seq_lens, const int *__restrict__ page_table,       \
      long long k_new_stride_b, long long k_new_stride_s, long long k_new_stride_h,                     \
      long long v_new_stride_b, long long v_new_stride_s, long long v_new_stride_h,                     \
      long long k_cache_stride_b, long long k_cache_stride_t, long long k_cache_stride_h,               \
      long long v_cache_stride_b, long long v_cache_stride_t, long long v_cache_stride_h,               \
      long long page_table_stride, int capacity, int page_size, int num_pages, int sq, int num_kv_heads, \
      int head_dim, int advance

#define INGOT_KVA_ARGS                                                                                   \
  k_new, v_new, k_cache, v_cache, seq_lens, page_table, k_new_stride_b, k_new_stride_s, k_new_stride_h,  \
      v_new_stride_b, v_new_stride_s, v_new_stride_h, k_cache_stride_b, k_cache_stride_t,               \
      k_cache_stride_h, v_cache_stride_b, v_cache_stride_t, v_cache_stride_h, page_table_stride,        \
      capacity, page_size, num_pages, sq, num_kv_heads, head_dim, advance

namespace ingot {

// The compile-time shape of one append kernel. DT: a DType (ingot_dtype.h); both are
// 16-bit, so the copy is the same code: the dtype is a matcher property (the
// cache's dtype must be the new tokens'), kept in the type so that each kernel
// says what it was built for.
template <int DT, bool Paged, int Threads>
struct AppendTraits {
  static constexpr int kDtype = DT;
  static constexpr bool kPaged = Paged;
  static constexpr int kThreads = Threads;
  static constexpr int kElementBytes = 2;
  static constexpr int kVectorElements = 16 / kElementBytes;  // a 16-byte vector: 8 elements
  static_assert(DT == kBF16 || DT == kFP16, "dtype");
  static_assert(Threads >= 1 && Threads <= INGOT_KVA_MAX_THREADS, "threads per workgroup");
};

// Where token position pos (0 <= pos < capacity) of sequence b lives in a
// cache: its first index (contiguous: b; paged: the page page_table[b][pos /
// page_size]) and its token index in there. False when the position has no
// slot (paged: that page-table entry is outside [0, num_pages)).
template <class T>
INGOT_DEVICE bool cache_slot(int b, long long pos, const int *page_table, long long page_table_stride, int page_size,
                             int num_pages, long long &first, long long &token) {
  if constexpr (T::kPaged) {
    const int page = load_dep(page_table + (long long)b * page_table_stride + pos / page_size);
    first = page;
    token = pos % page_size;
    return page >= 0 && page < num_pages;
  } else {
    first = b;
    token = pos;
    return true;
  }
}

INGOT_DEVICE void store16(void *p, u32x4 v) { *static_cast<u32x4 *>(p) = v; }

template <class T>
INGOT_DEVICE void kv_append(INGOT_KVA_PARAMS) {
  grid_dependency_wait();
  const int b = block_x();
  const int tid = thread_id();
  // The length, coherently after the wait (ingot_arch.h, load_dep): the grid
  // before may have written it.
  int len = load_dep(seq_lens + b);
  len = len < 0 ? 0 : (len > capacity ? capacity : len);
  const int vectors = head_dim / T::kVectorElements;  // per row
  const long long room = (long long)capacity - len;     // positions L .. capacity - 1
  // Rows (t, h), t-major; those past the capacity write nothing: stop at the last
  // token that fits.
  const long long live_rows = ((long long)sq < room ? (long long)sq : room) * num_kv_heads;
  const long long total = live_rows * vectors;
  for (long long i = tid; i < total; i += T::kThreads) {
    const long long r = i / vectors;
    const int c = (int)(i - r * vectors);
    const int t = (int)(r / num_kv_heads);
    const int h = (int)(r - (long long)t * num_kv_heads);
    const long long pos = (long long)len + t;  // < capacity (live_rows)
    long long first, token;
    if (!cache_slot<T>(b, pos, page_table, page_table_stride, page_size, num_pages, first, token))
      continue;  // no page for this position: not written
    const long long kdst = first * k_cache_stride_b + token * k_cache_stride_t + (long long)h * k_cache_stride_h;
    const long long vdst = first * v_cache_stride_b + token * v_cache_stride_t + (long long)h * v_cache_stride_h;
    const long long e = (long long)c * T::kVectorElements;
    const long long ksrc = (long long)b * k_new_stride_b + (long long)t * k_new_stride_s +
                           (long long)h * k_new_stride_h + e;
    const long long vsrc = (long long)b * v_new_stride_b + (long long)t * v_new_stride_s +
                           (long long)h * v_new_stride_h + e;
    // The new tokens may come from the grid before too: coherent loads.
    const u32x4 kv = load16_dep_if(static_cast<const char *>(k_new) + 2 * ksrc, true);
    const u32x4 vv = load16_dep_if(static_cast<const char *>(v_new) + 2 * vsrc, true);
    store16(static_cast<char *>(k_cache) + 2 * (kdst + e), kv);
    store16(static_cast<char *>(v_cache) + 2 * (vdst + e), vv);
  }
  if (advance) {
    sync_block();  // every thread has read the length it places its rows by
    if (tid == 0) {
      const long long next = (long long)len + sq;
      seq_lens[b] = (int)(next < capacity ? next : capacity);
    }
  }
  launch_dependents();
}

}  // namespace ingot

#endif  // INGOT_KVA_APPEND_H
