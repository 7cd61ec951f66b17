/* fuzz_dispatch_plan: the generated dispatch stub of the attention_decode pack
 * (generated/attention_decode/dispatch, planning logic in
 * runtime/src/families/attention_decode/ingot_attention_decode_plan.h), called directly, the way a
 * provider's runtime could, with extreme shapes, strides, kernel metadata and
 * device caps, and without ingot_graph_validate in front of it. The stub must
 * not overflow (UBSan aborts on signed overflow, shifts, bad conversions), and
 * every INGOT_OK plan must satisfy the grid and workspace invariants of
 * docs/INTERNALS.md 5 (fz_check_plan) and pack 200 kernarg bytes that carry
 * the plan's scalars. A balanced plan (caps.balance; docs/design/kernel.md,
 * Balanced split) is checked against its own invariants (fz_check_balanced, from
 * fz_check_plan) and its schedule replayed on lengths drawn from the input
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_reader r = {data, size};
  const ingot_dispatch_entry *e = &ingot_attention_decode_dispatch;
  /* Metadata: the seed kernel's, then overridden field by field; the loader
   * admits 1..INT32_MAX for the int fields, the stub is asked about any int. */
  ingot_ad_kernel_meta m = {INGOT_DTYPE_BF16, 128, 4, 1, 4, 4, 16, 256, 0, 0, 0};
  int *fields[] = {&m.dtype, &m.head_dim, &m.group, &m.max_sq, &m.rows,
                   &m.waves, &m.tokens_per_wave, &m.max_splits, &m.paged, &m.lse, &m.row_waves};
  uint8_t which = fz_u8(&r);
  for (int i = 0; i < 11; ++i)
    if (which & (1u << (i % 8)) && (i < 8 || (fz_u8(&r) & 1))) *fields[i] = fz_int(&r);
  ingot_device_caps caps = {64, 304, 65536, 0, 0};
  uint8_t c = fz_u8(&r);
  if (c & 1) caps.wave_size = (c & 2) ? 32 : fz_int(&r);
  if (c & 4) caps.compute_units = fz_int(&r);
  if (c & 16) caps.blocks_per_cu = fz_int(&r); /* resident workgroups per CU: any int */
  /* rounds: any int (<= 0 off, INGOT_BALANCE_AUTO the plan's choice), 1, or the default */
  caps.balance = (c & 32) ? ((c & 64) ? fz_int(&r) : 1) : INGOT_BALANCE_AUTO;
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
  fz_check_plan(&m, &g, &caps, &p); /* a balanced plan: fz_check_balanced (fuzz_common.h) */
  if (ingot_ad_params_in(&p)->flags & INGOT_AD_FLAG_BALANCED) {
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
    const char *why = rs_check(lens, B, (int)g.capacity, (int)ingot_ad_tile(&m), p.num_splits,
                               ingot_ad_bal_fill(ingot_ad_params_in(&p)->flags), g.k.dims[2],
                               (long long)ingot_ad_params_in(&p)->group * g.q.dims[2], g.q.dims[3], p.workspace_bytes, NULL, msg, sizeof msg);
    FZ_REQUIRE(why == NULL, "balanced schedule: %s", why);
  }

  /* pack: every launch gives 200 bytes whose scalars are the plan's. */
  static const uint8_t q[16] __attribute__((aligned(16)));
  ingot_attention_buffers b = {q, q, q, (void *)q, NULL, (const int32_t *)q, NULL};
  for (int i = 0; i < p.num_launches; ++i) {
    uint8_t args[INGOT_MAX_KERNARG_BYTES];
    size_t n = 0;
    FZ_REQUIRE(e->pack(&p, i, &b, NULL, args, sizeof args, &n, err, sizeof err) == INGOT_OK, "pack: %s", err);
    FZ_REQUIRE(n == e->kernarg_size && n == 200, "packed %zu bytes", n);
    FZ_REQUIRE(get_i64(args + 64) == ingot_ad_params_in(&p)->q_stride[0] && get_i64(args + 96) == ingot_ad_params_in(&p)->k_stride[1] &&
                   get_i64(args + 152) == ingot_ad_params_in(&p)->o_stride[2] && get_i64(args + 160) == ingot_ad_params_in(&p)->page_table_stride,
               "strides not packed as planned");
    FZ_REQUIRE(get_i32(args + 168) == ingot_ad_params_in(&p)->capacity && get_i32(args + 172) == ingot_ad_params_in(&p)->page_size &&
                   get_i32(args + 176) == ingot_ad_params_in(&p)->sq && get_i32(args + 180) == p.num_splits &&
                   get_i32(args + 184) == ingot_ad_params_in(&p)->num_kv_heads && get_i32(args + 188) == ingot_ad_params_in(&p)->flags &&
                   get_i32(args + 196) == ingot_ad_params_in(&p)->group,
               "scalars not packed as planned");
  }
  uint8_t small[8];
  size_t n = 0;
  FZ_REQUIRE(e->pack(&p, p.num_launches, &b, NULL, small, sizeof small, &n, err, sizeof err) != INGOT_OK,
             "pack accepted launch %d of %d", p.num_launches, p.num_launches);
  FZ_REQUIRE(e->pack(&p, 0, &b, NULL, small, sizeof small, &n, err, sizeof err) != INGOT_OK,
             "pack wrote 200 bytes into an 8-byte buffer");
  return 0;
}
