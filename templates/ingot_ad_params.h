// ingot_ad_params.h: the kernarg signature of the attention decode kernels, one
// for every entry point (INGOT_AD_PARAMS, and INGOT_AD_ARGS to pass it on), and
// what the bits of its `flags` mean. The UDD describes the signature argument by
// argument (test_descriptors reads it here and checks the two agree), and the
// build checks each code object against it.
#ifndef INGOT_AD_PARAMS_H
#define INGOT_AD_PARAMS_H

#include "ingot_attention_decode_limits.h"

#define INGOT_AD_PARAMS                                                                       \
  const void *__restrict__ q, const void *__restrict__ k, const void *__restrict__ v,         \
      void *__restrict__ o, float *__restrict__ lse, const int *__restrict__ seq_lens,        \
      const int *__restrict__ page_table, float *__restrict__ workspace, long long q_stride_b, \
      long long q_stride_h, long long q_stride_s, long long k_stride_b, long long k_stride_t,  \
      long long k_stride_h, long long v_stride_b, long long v_stride_t, long long v_stride_h,  \
      long long o_stride_b, long long o_stride_h, long long o_stride_s,                        \
      long long page_table_stride, int capacity, int page_size, int sq, int num_splits,        \
      int num_kv_heads, int flags, float scale, int group

#define INGOT_AD_ARGS                                                                          \
  q, k, v, o, lse, seq_lens, page_table, workspace, q_stride_b, q_stride_h, q_stride_s,        \
      k_stride_b, k_stride_t, k_stride_h, v_stride_b, v_stride_t, v_stride_h, o_stride_b,      \
      o_stride_h, o_stride_s, page_table_stride, capacity, page_size, sq, num_splits,          \
      num_kv_heads, flags, scale, group

// The same arguments with sq and group given: compile-time constants where a
// launch is a kernel's own shape (T::kExactGroup; decode_split, decode_merge).
#define INGOT_AD_ARGS_EXACT(SQ, G)                                                             \
  q, k, v, o, lse, seq_lens, page_table, workspace, q_stride_b, q_stride_h, q_stride_s,        \
      k_stride_b, k_stride_t, k_stride_h, v_stride_b, v_stride_t, v_stride_h, o_stride_b,      \
      o_stride_h, o_stride_s, page_table_stride, capacity, page_size, SQ, num_splits,          \
      num_kv_heads, flags, scale, G

namespace ingot {

// The flags kernarg (ingot_abi.h, INGOT_AD_FLAG_*). kFlagTopLeft: causal with the
// mask aligned top-left (query i sees keys <= i) instead of bottom-right (keys
// < L - Sq + 1 + i). A balanced plan's own bits: ingot_attention_decode_balance.h.
enum {
  kFlagCausal = INGOT_AD_FLAG_CAUSAL,
  kFlagWriteLse = INGOT_AD_FLAG_WRITE_LSE,
  kFlagTopLeft = INGOT_AD_FLAG_TOP_LEFT,
};

}  // namespace ingot

#endif  // INGOT_AD_PARAMS_H
