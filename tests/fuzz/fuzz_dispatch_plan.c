/* fuzz_dispatch_plan: the generated dispatch stub of the attention_decode pack
 * (generated/attention_decode/dispatch, planning logic in
 * templates/ingot_attention_decode_dispatch.h), called directly, the way a
 * provider's runtime could, with extreme shapes, strides, kernel metadata and
 * device caps, and without ingot_graph_validate in front of it. The stub must
 * not overflow (UBSan aborts on signed overflow, shifts, bad conversions), and
 * every INGOT_OK plan must satisfy the grid and workspace invariants of
 * docs/INTERNALS.md 5 (fz_check_plan) and pack 196 kernarg bytes that carry
 * the plan's scalars. A balanced plan (caps.balance; docs/INTERNALS.md
 * "Balanced split") is checked against its own invariants (fz_check_balanced)
 * and its schedule replayed on lengths drawn from the input
 * (tests/runtime/test_ragged_schedule.h). Input: metadata, caps, then graph
 * mutations. */
#include "fuzz_common.h"
#include "../runtime/test_ragged_schedule.h"

extern const ingot_dispatch_entry ingot_attention_decode_dispatch;

static int64_t get_i64(const uint8_t *b) {
  int64_t v;
  memcpy(&v, b, 8);
  return v;
}

static int32_t get_i32(const uint8_t *b) {
  int32_t v;
  memcpy(&v, b, 4);
  return v;
}

/* A balanced plan: 2..INGOT_AD_BALANCED_MAX_BATCH sequences, 1..min(256,
 * max_splits) units per KV head and row block, split grid ((units + B - 1) x
 * Hkv x row blocks, 1, 1): a workgroup per slot), the merge
 * grid of `units` segments, both programmatic, the batch in flags, and the
 * workspace of the layout (per KV head (units + B) slots of rows_total x
 * (D + 1) floats, lse padded to 4, then B + 1 int64 prefix sums). */
static void fz_check_balanced(const ingot_ad_kernel_meta *m, const ingot_attention_graph *g,
                              const ingot_device_caps *caps, const ingot_dispatch_plan *p) {
  const int64_t B = g->q.dims[0], Sq = g->q.dims[2], D = g->q.dims[3], Hkv = g->k.dims[2];
  FZ_REQUIRE(caps->balance && B >= 2 && B <= INGOT_AD_BALANCED_MAX_BATCH, "balanced plan of B %lld (balance %d)",
             (long long)B, caps->balance);
  FZ_REQUIRE(D == m->head_dim && Sq >= 1 && Sq <= m->max_sq && Hkv >= 1, "shape");
  const int base = (g->mask == INGOT_MASK_CAUSAL ? 1 : 0) | (g->lse.rank != 0 ? 2 : 0);
  const int fill = ingot_ad_bal_fill(p->flags);
  FZ_REQUIRE(fill >= 1 && fill <= p->num_splits, "fill %d of %d units", fill, p->num_splits);
  FZ_REQUIRE(p->flags == (base | INGOT_AD_FLAG_BALANCED | (int)(B << INGOT_AD_FLAG_BATCH_SHIFT) |
                          (fill << INGOT_AD_FLAG_FILL_SHIFT)),
             "flags %d", p->flags);
  FZ_REQUIRE(p->num_splits >= 1 && p->num_splits <= 256 && p->num_splits <= m->max_splits, "units %d",
             p->num_splits);
  FZ_REQUIRE(p->num_launches == 2 && p->cost >= 0.0 && p->cost <= 1e300, "launches %d cost %g", p->num_launches,
             p->cost);
  const fz_u128 rows_total = (fz_u128)(uint64_t)m->group * (uint64_t)m->max_sq;
  const fz_u128 row_blocks = (rows_total + (uint64_t)m->rows - 1) / (uint64_t)m->rows;
  const fz_u128 threads = (fz_u128)(uint64_t)m->waves * (uint64_t)caps->wave_size;
  const ingot_launch *split = &p->launches[0], *merge = &p->launches[1];
  FZ_REQUIRE(split->entry == 0 &&
                 split->grid[0] == ((fz_u128)(uint64_t)p->num_splits + (uint64_t)B - 1) * (uint64_t)Hkv * row_blocks &&
                 split->grid[1] == 1 && split->grid[2] == 1 && split->grid[0] <= INT32_MAX,
             "balanced split grid (%u, %u, %u)", split->grid[0], split->grid[1], split->grid[2]);
  FZ_REQUIRE(split->block[0] == threads && threads <= 1024 && split->flags == INGOT_LAUNCH_PROGRAMMATIC,
             "split block %u", split->block[0]);
  const fz_u128 merge_threads = (fz_u128)INGOT_AD_MERGE_WAVES * (uint64_t)caps->wave_size;
  const fz_u128 merge_x = p->num_splits <= INGOT_AD_COMPACT_MERGE_SPLITS
                              ? (rows_total * (fz_u128)(D / 4) + merge_threads - 1) / merge_threads
                              : rows_total * (fz_u128)(D / 32);
  FZ_REQUIRE(merge->entry == 1 && merge->grid[0] == merge_x && merge->grid[0] <= INT32_MAX &&
                 (int64_t)merge->grid[1] == Hkv && (int64_t)merge->grid[2] == B && merge->block[0] == merge_threads &&
                 merge->flags == INGOT_LAUNCH_PROGRAMMATIC,
             "balanced merge grid (%u, %u, %u)", merge->grid[0], merge->grid[1], merge->grid[2]);
  const fz_u128 slots = (fz_u128)(uint64_t)p->num_splits + (uint64_t)B, lse_n = rows_total * slots;
  const fz_u128 ws = ((lse_n + 3) / 4 * 4 + lse_n * (uint64_t)D) * (uint64_t)Hkv * 4u + ((uint64_t)B + 1) * 8u;
  FZ_REQUIRE((fz_u128)p->workspace_bytes == ws, "balanced workspace %llu, expected %.0f",
             (unsigned long long)p->workspace_bytes, (double)ws);
  FZ_REQUIRE(p->capacity == g->capacity && p->sq == Sq && p->num_kv_heads == Hkv, "scalars");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_reader r = {data, size};
  const ingot_dispatch_entry *e = &ingot_attention_decode_dispatch;
  /* Metadata: the seed kernel's, then overridden field by field; the loader
   * admits 1..INT32_MAX for the int fields, the stub is asked about any int. */
  ingot_ad_kernel_meta m = {INGOT_DTYPE_BF16, 128, 4, 1, 4, 4, 16, 256, 0, 0};
  int *fields[] = {&m.dtype, &m.head_dim, &m.group, &m.max_sq, &m.rows,
                   &m.waves, &m.tokens_per_wave, &m.max_splits, &m.paged, &m.lse};
  uint8_t which = fz_u8(&r);
  for (int i = 0; i < 10; ++i)
    if (which & (1u << (i % 8)) && (i < 8 || (fz_u8(&r) & 1))) *fields[i] = fz_int(&r);
  ingot_device_caps caps = {64, 304, 65536, 0, 0};
  uint8_t c = fz_u8(&r);
  if (c & 1) caps.wave_size = (c & 2) ? 32 : fz_int(&r);
  if (c & 4) caps.compute_units = fz_int(&r);
  if (c & 16) caps.blocks_per_cu = fz_int(&r); /* resident workgroups per CU: any int */
  caps.balance = (c & 32) != 0;
  ingot_attention_graph g;
  fz_decode_graph(&r, &g);
  if ((c & 8) && g.q.rank == 4) { /* make the metadata agree with the graph, to get past the checks */
    m.head_dim = g.q.dims[3] > 0 && g.q.dims[3] <= INT32_MAX ? (int)g.q.dims[3] : m.head_dim;
    if (g.k.dims[2] > 0 && g.q.dims[1] % g.k.dims[2] == 0 && g.q.dims[1] / g.k.dims[2] <= INT32_MAX)
      m.group = (int)(g.q.dims[1] / g.k.dims[2]);
    m.paged = g.kv_layout == INGOT_KV_PAGED;
    m.lse = g.lse.rank != 0;
  }

  ingot_dispatch_plan p;
  char err[256];
  err[0] = 0;
  ingot_status s = e->plan(&m, &g, &caps, &p, err, (c & 16) ? 7 : sizeof err);
  if (s != INGOT_OK) {
    FZ_REQUIRE(s == INGOT_INVALID_ARGUMENT, "status %d", (int)s);
    FZ_REQUIRE(err[0] != 0, "a refused plan without a message");
    return 0;
  }
  if (p.flags & INGOT_AD_FLAG_BALANCED) {
    fz_check_balanced(&m, &g, &caps, &p);
    /* the schedule on lengths drawn from the rest of the input: raw values, any int */
    static int32_t lens[INGOT_AD_BALANCED_MAX_BATCH];
    const int B = (int)g.q.dims[0];
    uint64_t x = 0x9E3779B97F4A7C15ULL ^ (uint64_t)r.n;
    for (size_t i = 0; i < r.n; ++i) x = (x ^ r.p[i]) * 0x100000001B3ULL;
    for (int b = 0; b < B; ++b) {
      x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
      const uint64_t v = x * 0x2545F4914F6CDD1DULL;
      lens[b] = (v & 3) == 0 ? (int32_t)(v >> 32) : (int32_t)((v >> 32) % ((uint64_t)g.capacity + 2));
    }
    char msg[512];
    const char *why = rs_check(lens, B, (int)g.capacity, m.waves * m.tokens_per_wave, p.num_splits,
                               ingot_ad_bal_fill(p.flags), g.k.dims[2],
                               (long long)m.group * m.max_sq, g.q.dims[3], p.workspace_bytes, NULL, msg, sizeof msg);
    FZ_REQUIRE(why == NULL, "balanced schedule: %s", why);
  } else {
    fz_check_plan(&m, &g, &caps, &p);
  }

  /* pack: every launch gives 196 bytes whose scalars are the plan's. */
  static const uint8_t q[16] __attribute__((aligned(16)));
  ingot_attention_buffers b = {q, q, q, (void *)q, NULL, (const int32_t *)q, NULL};
  for (int i = 0; i < p.num_launches; ++i) {
    uint8_t args[INGOT_MAX_KERNARG_BYTES];
    size_t n = 0;
    FZ_REQUIRE(e->pack(&p, i, &b, NULL, args, sizeof args, &n, err, sizeof err) == INGOT_OK, "pack: %s", err);
    FZ_REQUIRE(n == e->kernarg_size && n == 196, "packed %zu bytes", n);
    FZ_REQUIRE(get_i64(args + 64) == p.q_stride[0] && get_i64(args + 96) == p.k_stride[1] &&
                   get_i64(args + 152) == p.o_stride[2] && get_i64(args + 160) == p.page_table_stride,
               "strides not packed as planned");
    FZ_REQUIRE(get_i32(args + 168) == p.capacity && get_i32(args + 172) == p.page_size &&
                   get_i32(args + 176) == p.sq && get_i32(args + 180) == p.num_splits &&
                   get_i32(args + 184) == p.num_kv_heads && get_i32(args + 188) == p.flags,
               "scalars not packed as planned");
  }
  uint8_t small[8];
  size_t n = 0;
  FZ_REQUIRE(e->pack(&p, p.num_launches, &b, NULL, small, sizeof small, &n, err, sizeof err) != INGOT_OK,
             "pack accepted launch %d of %d", p.num_launches, p.num_launches);
  FZ_REQUIRE(e->pack(&p, 0, &b, NULL, small, sizeof small, &n, err, sizeof err) != INGOT_OK,
             "pack wrote 196 bytes into an 8-byte buffer");
  return 0;
}
