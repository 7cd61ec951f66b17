/* fuzz_common.h: what the libFuzzer harnesses share: a byte reader that turns
 * fuzz input into extreme-but-plausible integers, a decoder from bytes to an
 * ingot_attention_graph (mutations of a valid seed graph, so most inputs get
 * past validation into matching and planning), and the plan invariants of
 * docs/INTERNALS.md section 5, recomputed in 128-bit arithmetic independently
 * of the dispatch stub. A violated invariant aborts (libFuzzer records the
 * input as a crash). */
#ifndef INGOT_FUZZ_COMMON_H
#define INGOT_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "ingot/ingot.h"
#include "ingot_attention_decode_balance.h"
#include "ingot_attention_decode_plan.h" /* the family's metadata and plan scalars */
#include "ingot_attention_decode_limits.h"

#define FZ_REQUIRE(cond, ...)                                                                     \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "%s:%d: invariant failed: %s\n  ", __FILE__, __LINE__, #cond);              \
      fprintf(stderr, __VA_ARGS__);                                                               \
      fprintf(stderr, "\n");                                                                      \
      abort();                                                                                    \
    }                                                                                             \
  } while (0)

/* ---- reading the input -------------------------------------------------- */
typedef struct fz_reader {
  const uint8_t *p;
  size_t n;
} fz_reader;

static inline uint8_t fz_u8(fz_reader *r) {
  if (r->n == 0) return 0;
  --r->n;
  return *r->p++;
}

static inline uint64_t fz_u64(fz_reader *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | fz_u8(r);
  return v;
}

/* An int64 that is usually interesting: small, a power of two (+-1), a
 * boundary of int32/int64, or raw bytes. */
static inline int64_t fz_i64(fz_reader *r) {
  static const int64_t kEdges[] = {0, 1, -1, 2, 8, 32, 64, 65535, 65536, 1 << 20, 1 << 30,
                                   INT32_MAX, (int64_t)INT32_MAX + 1, UINT32_MAX,
                                   (int64_t)1 << 32, (int64_t)1 << 62, INT64_MAX, INT64_MIN,
                                   INT64_MAX / 2 + 1, (int64_t)3037000499 /* ~sqrt(2^63) */};
  uint8_t sel = fz_u8(r);
  switch (sel & 7) {
  case 0:
  case 1: return (int64_t)(fz_u8(r) % 17);
  case 2: return (int64_t)1 << (fz_u8(r) % 63);
  case 3: return ((int64_t)1 << (fz_u8(r) % 62)) + ((sel >> 3) & 1 ? 1 : -1);
  case 4: return kEdges[fz_u8(r) % (sizeof kEdges / sizeof kEdges[0])];
  case 5: return -(int64_t)(fz_u8(r) % 17);
  case 6: {
    int64_t hi = fz_u8(r);
    return hi << 8 | fz_u8(r);
  }
  default: return (int64_t)fz_u64(r);
  }
}

static inline int fz_int(fz_reader *r) {
  int64_t v = fz_i64(r);
  if (v > INT32_MAX) return INT32_MAX - (int)(v & 7);
  if (v < INT32_MIN) return INT32_MIN + (int)(v & 7);
  return (int)v;
}

/* ---- graphs ------------------------------------------------------------- */
static inline void fz_contiguous(ingot_tensor_desc *t) {
  int64_t s = 1;
  const int rank = t->rank < 0 ? 0 : t->rank > INGOT_MAX_RANK ? INGOT_MAX_RANK : t->rank;
  for (int i = rank - 1; i >= 0; --i) {
    t->strides[i] = s;
    if (t->dims[i] > 0 && __builtin_mul_overflow(s, t->dims[i], &s)) s = INT64_MAX;
  }
}

static inline ingot_tensor_desc fz_tensor(ingot_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2,
                                          int64_t d3) {
  ingot_tensor_desc t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  t.dims[0] = d0;
  t.dims[1] = d1;
  t.dims[2] = d2;
  t.dims[3] = d3;
  fz_contiguous(&t);
  return t;
}

/* Rebuilds every tensor of the graph from the top-level sizes. */
typedef struct fz_shape {
  int64_t B, Hq, Hkv, Sq, D, capacity, page_size, max_pages, num_pages;
  int paged, lse;
  ingot_dtype dtype;
} fz_shape;

static inline void fz_build(const fz_shape *s, ingot_attention_graph *g) {
  memset(g, 0, sizeof *g);
  g->q = fz_tensor(s->dtype, 4, s->B, s->Hq, s->Sq, s->D);
  g->o = g->q;
  if (s->paged) {
    g->k = fz_tensor(s->dtype, 4, s->num_pages, s->page_size, s->Hkv, s->D);
    g->page_table = fz_tensor(INGOT_DTYPE_INT32, 2, s->B, s->max_pages, 0, 0);
    g->kv_layout = INGOT_KV_PAGED;
  } else {
    g->k = fz_tensor(s->dtype, 4, s->B, s->capacity, s->Hkv, s->D);
  }
  g->v = g->k;
  g->seq_lens = fz_tensor(INGOT_DTYPE_INT32, 1, s->B, 0, 0, 0);
  if (s->lse) g->lse = fz_tensor(INGOT_DTYPE_FP32, 3, s->B, s->Hq, s->Sq, 0);
  g->capacity = s->capacity;
  g->scale = 0.125f;
}

/* The seed graph (examples/graphs/seed_none.json), then mutations read from the
 * input: consistent ones (a top-level size changes everywhere it appears) and
 * raw ones (one field of one tensor, an enum, the scale). */
static inline void fz_decode_graph(fz_reader *r, ingot_attention_graph *g) {
  fz_shape s = {1, 8, 2, 1, 128, 4096, 64, 64, 128, 0, 0, INGOT_DTYPE_BF16};
  fz_build(&s, g);
  int steps = 0;
  while (r->n > 0 && steps++ < 24) {
    uint8_t op = fz_u8(r);
    ingot_tensor_desc *tensors[] = {&g->q, &g->k, &g->v, &g->o, &g->lse, &g->seq_lens, &g->page_table};
    ingot_tensor_desc *t = tensors[(op >> 5) % 7];
    switch (op % 24) {
    case 0: s.B = fz_i64(r); fz_build(&s, g); break;
    case 1:
      s.Hkv = fz_i64(r);
      if (__builtin_mul_overflow(s.Hkv, (int64_t)(1 + fz_u8(r) % 9), &s.Hq)) s.Hq = INT64_MAX;
      fz_build(&s, g);
      break;
    case 2: s.Hq = fz_i64(r); fz_build(&s, g); break;
    case 3: s.Sq = fz_i64(r); fz_build(&s, g); break;
    case 4: s.D = fz_i64(r); fz_build(&s, g); break;
    case 5: s.capacity = fz_i64(r); fz_build(&s, g); break;
    case 6: /* paged, with a page table that covers the capacity when it can */
      s.paged = !s.paged;
      s.page_size = fz_i64(r);
      if (s.page_size > 0 && s.capacity > 0) s.max_pages = (s.capacity - 1) / s.page_size + 1;
      s.num_pages = s.max_pages > 0 && s.max_pages < INT64_MAX / 2 ? s.max_pages * 2 : 1;
      fz_build(&s, g);
      break;
    case 7: s.max_pages = fz_i64(r); fz_build(&s, g); break;
    case 8: s.lse = !s.lse; fz_build(&s, g); break;
    case 9: s.dtype = (ingot_dtype)(fz_u8(r) % 7); fz_build(&s, g); break;
    case 10: g->mask = (ingot_mask)(fz_u8(r) % 3); break;
    case 11: g->mask_align = (ingot_mask_align)(fz_u8(r) % 3); break;
    case 12: g->kv_layout = (ingot_kv_layout)(fz_u8(r) % 3); break;
    case 13: {
      static const float kScales[] = {0.0f, -1.0f, 1e38f, 1e-45f, __builtin_inff(), -__builtin_inff(),
                                      __builtin_nanf("")};
      g->scale = kScales[fz_u8(r) % 7];
      break;
    }
    case 14: case 15: t->dims[fz_u8(r) % INGOT_MAX_RANK] = fz_i64(r); break;
    case 16: case 17: t->strides[fz_u8(r) % INGOT_MAX_RANK] = fz_i64(r); break;
    case 18: t->rank = (int)(fz_u8(r) % 7) - 1; break;
    case 19: t->dtype = (ingot_dtype)(fz_u8(r) % 7); break;
    case 20: t->memory = (ingot_memory)(fz_u8(r) % 3); break;
    case 21: g->capacity = fz_i64(r); break;
    case 22: /* a row stride padded to a multiple of 8 (still dense_d) */
    {
      int64_t *st = &t->strides[fz_u8(r) % 3];
      if (__builtin_mul_overflow(*st, (int64_t)(1 + fz_u8(r) % 4), st)) *st = INT64_MAX;
      break;
    }
    default: fz_contiguous(t); break;
    }
  }
}

/* ---- what the kernels rely on (templates/ingot_attention_decode.h) ------- */

/* Two index tuples of t reach one element offset, by the sorted-stride test
 * (dims of extent > 1 by stride, each stride >= the span below it), in 128
 * bits: independent of ad_graph.c's int64 version. */
static inline int fz_overlaps(const ingot_tensor_desc *t) {
  int order[INGOT_MAX_RANK], n = 0;
  for (int i = 0; i < t->rank && i < INGOT_MAX_RANK; ++i)
    if (t->dims[i] > 1) order[n++] = i;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (t->strides[order[j]] < t->strides[order[i]]) {
        const int x = order[i];
        order[i] = order[j];
        order[j] = x;
      }
  for (int i = 1; i < n; ++i)
    if ((__int128)t->strides[order[i]] < (__int128)t->strides[order[i - 1]] * t->dims[order[i - 1]]) return 1;
  return 0;
}

static inline int fz_cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The ground truth for small tensors (at most 2^14 elements): every element
 * offset computed and compared. 1 unique, 0 a repeat, -1 too large to tell. */
static inline int fz_offsets_unique(const ingot_tensor_desc *t) {
  enum { kMax = 1 << 14 };
  int64_t count = 1;
  for (int i = 0; i < t->rank; ++i) {
    if (t->dims[i] < 1 || t->dims[i] > kMax) return -1;
    count *= t->dims[i];
    if (count > kMax) return -1;
  }
  static int64_t offs[kMax];
  for (int64_t e = 0; e < count; ++e) {
    int64_t rest = e, off = 0;
    for (int i = t->rank - 1; i >= 0; --i) {
      off += (rest % t->dims[i]) * t->strides[i]; /* fits: the graph's last offset fits int64 */
      rest /= t->dims[i];
    }
    offs[e] = off;
  }
  qsort(offs, (size_t)count, sizeof offs[0], fz_cmp_i64);
  for (int64_t e = 1; e < count; ++e)
    if (offs[e] == offs[e - 1]) return 0;
  return 1;
}

/* A graph that passed ingot_graph_validate: its outputs do not overlap, and
 * small ones are checked element by element (soundness of the test). */
static inline void fz_check_outputs_distinct(const ingot_attention_graph *g) {
  FZ_REQUIRE(!fz_overlaps(&g->o), "o strides overlap, yet the graph was accepted");
  FZ_REQUIRE(fz_offsets_unique(&g->o) != 0, "two elements of o share an offset, yet the graph was accepted");
  if (g->lse.rank != 0) {
    FZ_REQUIRE(!fz_overlaps(&g->lse), "lse strides overlap, yet the graph was accepted");
    FZ_REQUIRE(fz_offsets_unique(&g->lse) != 0, "two elements of lse share an offset, yet the graph was accepted");
  }
}

static inline int fz_dense_d(const ingot_tensor_desc *t) {
  if (t->rank != 4 || t->strides[3] != 1) return 0;
  for (int i = 0; i < 3; ++i)
    if (t->strides[i] % 8 != 0) return 0;
  return 1;
}

/* Flat row-major (extent-1 dims take any stride): how the kernels index lse and seq_lens. */
static inline int fz_flat(const ingot_tensor_desc *t) {
  __int128 expect = 1;
  for (int i = t->rank - 1; i >= 0; --i) {
    if (t->dims[i] > 1 && (__int128)t->strides[i] != expect) return 0;
    expect *= t->dims[i];
  }
  return 1;
}

/* Every input a kernel of metadata m reads or writes, as it reads or writes it,
 * for a graph libingot planned on that kernel: dtypes, layouts, memory, and
 * outputs that do not overlap. A graph that reaches a plan without meeting
 * them is a matcher hole. */
static inline void fz_check_kernel_inputs(const ingot_ad_kernel_meta *m, const ingot_attention_graph *g) {
  const ingot_tensor_desc *qkvo[4] = {&g->q, &g->k, &g->v, &g->o};
  for (int i = 0; i < 4; ++i) {
    FZ_REQUIRE((int)qkvo[i]->dtype == m->dtype, "tensor %d (q k v o) dtype %d, the kernel's %d", i,
               (int)qkvo[i]->dtype, m->dtype);
    FZ_REQUIRE(fz_dense_d(qkvo[i]) && qkvo[i]->memory == INGOT_MEMORY_DEVICE,
               "tensor %d (q k v o) not dense_d in device memory", i);
  }
  FZ_REQUIRE(g->lse.rank == 0 || (g->lse.dtype == INGOT_DTYPE_FP32 && g->lse.memory == INGOT_MEMORY_DEVICE &&
                                  fz_flat(&g->lse)),
             "lse dtype %d, memory %d: the kernels write fp32 at a flat index", (int)g->lse.dtype,
             (int)g->lse.memory);
  FZ_REQUIRE(g->seq_lens.rank == 1 && g->seq_lens.dtype == INGOT_DTYPE_INT32 &&
                 g->seq_lens.memory == INGOT_MEMORY_DEVICE && fz_flat(&g->seq_lens),
             "seq_lens dtype %d memory %d stride %lld: the kernels read int32 lengths[b]", (int)g->seq_lens.dtype,
             (int)g->seq_lens.memory, (long long)g->seq_lens.strides[0]);
  if (g->kv_layout == INGOT_KV_PAGED)
    FZ_REQUIRE(g->page_table.rank == 2 && g->page_table.dtype == INGOT_DTYPE_INT32 &&
                   g->page_table.memory == INGOT_MEMORY_DEVICE &&
                   (g->page_table.strides[1] == 1 || g->page_table.dims[1] == 1),
               "page table dtype %d, strides [%lld, %lld]: the kernels read int32 rows of adjacent entries",
               (int)g->page_table.dtype, (long long)g->page_table.strides[0], (long long)g->page_table.strides[1]);
  else
    FZ_REQUIRE(g->page_table.rank == 0, "a page table on a contiguous graph");
  fz_check_outputs_distinct(g);
}

/* ---- plan invariants (docs/INTERNALS.md section 5) ------------------------ */
typedef unsigned __int128 fz_u128;

/* Checks an INGOT_OK plan against the kernel metadata, the graph and the
 * device caps it was planned with. Everything is recomputed in 128 bits, so a
 * value the stub truncated or wrapped differs. */
/* The flags every plan of g hands the kernels: causal 1, write LSE 2, causal top-left
 * INGOT_AD_FLAG_TOP_LEFT (a balanced plan adds its own bits). */
static inline int fz_graph_flags(const ingot_attention_graph *g) {
  const int causal = g->mask == INGOT_MASK_CAUSAL;
  return (causal ? 1 : 0) | (g->lse.rank != 0 ? 2 : 0) |
         (causal && g->mask_align == INGOT_ALIGN_TOP_LEFT ? INGOT_AD_FLAG_TOP_LEFT : 0);
}

/* A balanced plan: 2..INGOT_AD_BALANCED_MAX_BATCH sequences, 1..511 units per
 * KV head and row block (at most max_splits when that is below the merge's
 * 256, since the device caps one sequence's pieces at 256 only), split grid ((units + B - 1) x
 * Hkv x row blocks, 1, 1): a workgroup per slot), the merge
 * grid (the columns of `units` segments, Hkv, Z: ingot_ad_bal_merge_z), both
 * programmatic, the batch in flags, and the workspace of the layout (per KV
 * head (units + B) slots of rows_total x (D + 1) floats, lse padded to 4, then
 * the merge's list: B + 1 int64). */
static inline void fz_check_balanced(const ingot_ad_kernel_meta *m, const ingot_attention_graph *g,
                              const ingot_device_caps *caps, const ingot_dispatch_plan *p) {
  const ingot_ad_params *P = ingot_ad_params_in(p);
  const int64_t B = g->q.dims[0], Hq = g->q.dims[1], Sq = g->q.dims[2], D = g->q.dims[3], Hkv = g->k.dims[2];
  FZ_REQUIRE(Hq % Hkv == 0 && P->group == Hq / Hkv, "Hq %lld Hkv %lld plan group %d", (long long)Hq,
             (long long)Hkv, P->group);
  FZ_REQUIRE((caps->balance > 0 || caps->balance == INGOT_BALANCE_AUTO) && B >= 2 && B <= INGOT_AD_BALANCED_MAX_BATCH,
             "balanced plan of B %lld (balance %d)",
             (long long)B, caps->balance);
  FZ_REQUIRE(D == m->head_dim && Sq >= 1 && Sq <= m->max_sq && Hkv >= 1, "shape");
  const int base = fz_graph_flags(g);
  const int fill = ingot_ad_bal_fill(P->flags);
  FZ_REQUIRE(fill >= 1 && fill <= p->num_splits, "fill %d of %d units", fill, p->num_splits);
  FZ_REQUIRE(P->flags == (base | INGOT_AD_FLAG_BALANCED | (int)(B << INGOT_AD_FLAG_BATCH_SHIFT) |
                          (fill << INGOT_AD_FLAG_FILL_SHIFT) |
                          (p->num_splits % B == 0 ? INGOT_AD_FLAG_EVEN : 0)),
             "flags %d", P->flags);
  FZ_REQUIRE(p->num_splits >= 1 && p->num_splits <= INGOT_AD_BALANCED_MAX_UNITS &&
                 (m->max_splits >= INGOT_AD_MAX_SPLITS || p->num_splits <= m->max_splits),
             "units %d (max_splits %d)", p->num_splits, m->max_splits);
  FZ_REQUIRE(p->num_launches == 2 && p->cost >= 0.0 && p->cost <= 1e300, "launches %d cost %g", p->num_launches,
             p->cost);
  const fz_u128 rows_total = (fz_u128)(uint64_t)(Hq / Hkv) * (uint64_t)Sq;
  const fz_u128 row_blocks = (rows_total + (uint64_t)m->rows - 1) / (uint64_t)m->rows;
  const fz_u128 threads = (fz_u128)(uint64_t)m->waves * (uint64_t)caps->wave_size;
  const ingot_launch *split = &p->launches[0], *merge = &p->launches[1];
  FZ_REQUIRE(split->entry == INGOT_AD_ENTRY_BALANCED_SPLIT &&
                 split->grid[0] == ((fz_u128)(uint64_t)p->num_splits + (uint64_t)B - 1) * (uint64_t)Hkv * row_blocks &&
                 split->grid[1] == 1 && split->grid[2] == 1 && split->grid[0] <= INT32_MAX,
             "balanced split grid (%u, %u, %u)", split->grid[0], split->grid[1], split->grid[2]);
  FZ_REQUIRE(split->block[0] == threads && threads <= 1024 && split->flags == INGOT_LAUNCH_PROGRAMMATIC,
             "split block %u", split->block[0]);
  const fz_u128 merge_threads = (fz_u128)INGOT_AD_MERGE_WAVES * (uint64_t)caps->wave_size;
  const fz_u128 merge_x = p->num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS
                              ? (rows_total * (fz_u128)(D / 4) + merge_threads - 1) / merge_threads
                              : rows_total * (fz_u128)(D / INGOT_AD_MERGE_COLS(D));
  FZ_REQUIRE(merge->entry == INGOT_AD_ENTRY_BALANCED_MERGE && merge->grid[0] == merge_x && merge->grid[0] <= INT32_MAX &&
                 (int64_t)merge->grid[1] == Hkv && merge->grid[2] >= 1 && (int64_t)merge->grid[2] <= B &&
                 (int64_t)merge->grid[2] * INGOT_AD_BALANCED_MERGE_ENTRIES >= B && merge->block[0] == merge_threads &&
                 merge->flags == INGOT_LAUNCH_PROGRAMMATIC,
             "balanced merge grid (%u, %u, %u)", merge->grid[0], merge->grid[1], merge->grid[2]);
  const fz_u128 slots = (fz_u128)(uint64_t)p->num_splits + (uint64_t)B, lse_n = rows_total * slots;
  const fz_u128 ws = ((lse_n + 3) / 4 * 4 + lse_n * (uint64_t)D) * (uint64_t)Hkv * 4u + (uint64_t)(B + 1) * 8u;
  FZ_REQUIRE((fz_u128)p->workspace_bytes == ws, "balanced workspace %llu, expected %.0f",
             (unsigned long long)p->workspace_bytes, (double)ws);
  FZ_REQUIRE(P->capacity == g->capacity && P->sq == Sq && P->num_kv_heads == Hkv, "scalars");
}

static inline void fz_check_plan(const ingot_ad_kernel_meta *m, const ingot_attention_graph *g,
                                 const ingot_device_caps *caps, const ingot_dispatch_plan *p) {
  const ingot_ad_params *P = ingot_ad_params_in(p);
  if (P->flags & INGOT_AD_FLAG_BALANCED) { /* issue 23: its own grids and workspace */
    fz_check_balanced(m, g, caps, p);
    return;
  }
  const int64_t B = g->q.dims[0], Hq = g->q.dims[1], Sq = g->q.dims[2], D = g->q.dims[3];
  const int64_t Hkv = g->k.dims[2];
  FZ_REQUIRE(B >= 1 && Hkv >= 1 && Sq >= 1 && D >= 1, "B %lld Hkv %lld Sq %lld D %lld", (long long)B,
             (long long)Hkv, (long long)Sq, (long long)D);
  /* any group runs on the kernel's rows: Hq a multiple of Hkv, at most 65535 of it, handed to the kernels */
  FZ_REQUIRE(Hq % Hkv == 0 && Hq / Hkv >= 1 && Hq / Hkv <= 65535 && P->group == Hq / Hkv,
             "Hq %lld Hkv %lld plan group %d", (long long)Hq, (long long)Hkv, P->group);
  FZ_REQUIRE(D == m->head_dim && Sq <= m->max_sq, "D %lld head_dim %d Sq %lld max_sq %d", (long long)D,
             m->head_dim, (long long)Sq, m->max_sq);
  FZ_REQUIRE(p->num_splits >= 1 && p->num_splits <= m->max_splits, "splits %d max_splits %d", p->num_splits,
             m->max_splits);
  const fz_u128 splits = (fz_u128)p->num_splits;
  FZ_REQUIRE(p->num_launches == (p->num_splits > 1 ? 2 : 1), "launches %d splits %d", p->num_launches,
             p->num_splits);
  FZ_REQUIRE(m->rows >= 1 && m->waves >= 1, "rows %d waves %d", m->rows, m->waves);
  /* the modelled time the runtime compares kernels by: finite, >= 0 (not NaN) */
  FZ_REQUIRE(p->cost >= 0.0 && p->cost <= 1e300, "modelled time %g", p->cost);
  const fz_u128 rows_total = (fz_u128)(uint64_t)(Hq / Hkv) * (uint64_t)Sq;
  const fz_u128 row_blocks = (rows_total + (uint64_t)m->rows - 1) / (uint64_t)m->rows;
  const fz_u128 threads = (fz_u128)(uint64_t)m->waves * (uint64_t)caps->wave_size;
  const ingot_launch *split = &p->launches[0];
  const fz_u128 split_x = splits * (uint64_t)Hkv * row_blocks;
  FZ_REQUIRE(split->entry == INGOT_AD_ENTRY_SPLIT, "split entry %d", split->entry);
  FZ_REQUIRE(split->grid[0] == split_x && split->grid[1] == 1 && (int64_t)split->grid[2] == B,
             "split grid (%u, %u, %u), expected (%.0f, 1, %lld)", split->grid[0], split->grid[1],
             split->grid[2], (double)split_x, (long long)B);
  /* Device limits (CUDA and HIP): x < 2^31, y and z <= 65535, <= 1024 threads. */
  FZ_REQUIRE(split->grid[0] >= 1 && split->grid[0] <= INT32_MAX && split->grid[2] <= 65535,
             "split grid (%u, %u, %u) outside the device limits", split->grid[0], split->grid[1],
             split->grid[2]);
  FZ_REQUIRE(split->block[0] == threads && split->block[1] == 1 && split->block[2] == 1 && threads <= 1024,
             "block (%u, %u, %u), expected %llu threads", split->block[0], split->block[1], split->block[2],
             (unsigned long long)threads);
  fz_u128 ws = 0;
  if (p->num_splits > 1) {
    const ingot_launch *merge = &p->launches[1];
    /* the merge's two modes (templates/ingot_attention_decode_limits.h): compact, one
     * thread per 4 columns of a row, every output covered; wide, a workgroup per row
     * and 32 columns */
    const fz_u128 merge_threads = (fz_u128)INGOT_AD_MERGE_WAVES * (uint64_t)caps->wave_size;
    const fz_u128 merge_x = p->num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS
                                ? (rows_total * (fz_u128)(D / 4) + merge_threads - 1) / merge_threads
                                : rows_total * (fz_u128)(D / INGOT_AD_MERGE_COLS(D));
    FZ_REQUIRE(merge->entry == INGOT_AD_ENTRY_MERGE, "merge entry %d", merge->entry);
    FZ_REQUIRE(merge->grid[0] == merge_x && (int64_t)merge->grid[1] == Hkv && (int64_t)merge->grid[2] == B,
               "merge grid (%u, %u, %u), expected (%.0f, %lld, %lld)", merge->grid[0], merge->grid[1],
               merge->grid[2], (double)merge_x, (long long)Hkv, (long long)B);
    FZ_REQUIRE(merge->grid[0] >= 1 && merge->grid[0] <= INT32_MAX && merge->grid[1] <= 65535 &&
                   merge->grid[2] <= 65535,
               "merge grid (%u, %u, %u) outside the device limits", merge->grid[0], merge->grid[1],
               merge->grid[2]);
    FZ_REQUIRE(merge->block[0] == merge_threads && merge->block[1] == 1 && merge->block[2] == 1,
               "merge block (%u, %u, %u), expected %llu threads", merge->block[0], merge->block[1],
               merge->block[2], (unsigned long long)merge_threads);
    /* per (b, hkv): round_up(rows_total*splits, 4) lse floats + rows_total*splits*D partial O floats */
    const fz_u128 lse_n = rows_total * splits;
    const fz_u128 per = (lse_n + 3) / 4 * 4 + lse_n * (uint64_t)D;
    ws = per * (uint64_t)B * (uint64_t)Hkv * 4u;
  }
  FZ_REQUIRE((fz_u128)p->workspace_bytes == ws, "workspace %llu, expected %.0f",
             (unsigned long long)p->workspace_bytes, (double)ws);
  FZ_REQUIRE(P->capacity == g->capacity && P->sq == Sq && P->num_kv_heads == Hkv,
             "capacity %d sq %d num_kv_heads %d", P->capacity, P->sq, P->num_kv_heads);
  FZ_REQUIRE(P->page_size == (g->kv_layout == INGOT_KV_PAGED ? g->k.dims[1] : 0), "page_size %d", P->page_size);
  /* paged: a power of two (pages shorter than a chunk are read token by token) */
  FZ_REQUIRE(g->kv_layout != INGOT_KV_PAGED || (P->page_size >= 1 && (P->page_size & (P->page_size - 1)) == 0),
             "page size %d", P->page_size);
  FZ_REQUIRE(P->flags == fz_graph_flags(g),
             "flags %d", P->flags);
  /* the strides the kernels are handed: the graph's, the page table's row stride only when paged */
  for (int i = 0; i < 3; ++i)
    FZ_REQUIRE(P->q_stride[i] == g->q.strides[i] && P->k_stride[i] == g->k.strides[i] &&
                   P->v_stride[i] == g->v.strides[i] && P->o_stride[i] == g->o.strides[i],
               "stride %d not the graph's", i);
  FZ_REQUIRE(P->page_table_stride == (g->kv_layout == INGOT_KV_PAGED ? g->page_table.strides[0] : 0),
             "page table stride %lld", (long long)P->page_table_stride);
  FZ_REQUIRE(P->scale == g->scale || (P->scale != P->scale && g->scale != g->scale), "scale %g, graph %g",
             (double)P->scale, (double)g->scale);
}

#endif
