/* The KV-cache append family on host contexts of every arch (issue 24): the
 * shipped kv_append pack and the attention decode pack open side by side in one
 * context; random append graphs of the whole admitted space (dtype, layout,
 * batch, Sq, KV heads, head dim, capacity, any page size, padded strides) plan
 * onto the kernel of their dtype and layout, with one programmatic launch of a
 * workgroup per sequence and no workspace, and the stub's kernarg bytes hold
 * each value at the offset the packaged UDD gives it. What a plan can know is
 * refused with a message naming the field; what no kernel runs declines; the
 * families never match each other's graphs; the generic calls refuse unknown
 * families and struct sizes. The device half is tests/gpu/test_gpu_kv_append.c.
 *
 * usage: test_kv_append KV_APPEND_PACKDIR ATTENTION_PACKDIR */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"
#include "test_util.h"
/* after test_util.h, which sets the feature macros before any system header */
#include <jansson.h>

#include "ingot/kv_append.h"
#include "ingot_kv_append_plan.h"
#include "internal.h" /* ingot_plan_dispatch_info */

static const char *const kArchs[] = {"sm_90", "gfx942", "gfx950"};

/* A random append graph: k_new/v_new [B, Sq, Hkv, D] with padded strides
 * (multiples of 8 elements), caches contiguous [B, cap, Hkv, D] or paged
 * [pages, page, Hkv, D] with a page table whose rows reach the capacity. */
static ingot_kv_append_graph random_graph(void) {
  ingot_kv_append_graph g;
  memset(&g, 0, sizeof g);
  const ingot_dtype dt = rnd() & 1 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
  const int64_t B = rnd_range(1, 64), Sq = rnd_range(1, 4), Hkv = rnd_range(1, 16), D = 8 * rnd_range(1, 64);
  const int paged = (int)(rnd() & 1);
  int64_t cap = rnd_range(0, 3) == 0 ? rnd_range(Sq, 64) : rnd_range(Sq, 1 << 20);
  const int64_t nd[4] = {B, Sq, Hkv, D};
  set_tensor(&g.k_new, dt, 4, nd);
  set_tensor(&g.v_new, dt, 4, nd);
  /* padded rows of the new tokens */
  const int64_t pad = 8 * rnd_range(0, 2);
  g.k_new.strides[2] = D + pad, g.k_new.strides[1] = Hkv * (D + pad), g.k_new.strides[0] = Sq * Hkv * (D + pad);
  if (paged) {
    static const int kPages[] = {1, 2, 3, 4, 5, 8, 16, 24, 64, 128, 1000};
    const int64_t page = kPages[rnd_range(0, 10)];
    const int64_t per_seq = (cap + page - 1) / page, max_pages = per_seq + rnd_range(0, 3);
    const int64_t pool = rnd_range(1, B * per_seq + 8);
    const int64_t cd[4] = {pool, page, Hkv, D}, pt[2] = {B, max_pages};
    set_tensor(&g.k_cache, dt, 4, cd);
    set_tensor(&g.v_cache, dt, 4, cd);
    set_tensor(&g.page_table, INGOT_DTYPE_INT32, 2, pt);
    if (rnd() & 1) g.page_table.strides[0] = max_pages + rnd_range(1, 16); /* padded rows */
  } else {
    const int64_t cd[4] = {B, cap, Hkv, D};
    set_tensor(&g.k_cache, dt, 4, cd);
    set_tensor(&g.v_cache, dt, 4, cd);
  }
  const int64_t lens[1] = {B};
  set_tensor(&g.seq_lens, INGOT_DTYPE_INT32, 1, lens);
  g.kv_layout = paged ? INGOT_KV_PAGED : INGOT_KV_CONTIGUOUS;
  g.capacity = cap;
  g.advance = (int)(rnd() & 1);
  return g;
}

static int64_t get_arg(const uint8_t *args, unsigned off, unsigned size) {
  if (size == 8) {
    int64_t v;
    memcpy(&v, args + off, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, args + off, 4);
  return v;
}

/* The value the kernel must get for one argument of the UDD's signature. */
static int want_arg(const char *name, const ingot_kv_append_graph *g, const ingot_kv_append_buffers *b, int64_t *out) {
  const int paged = g->kv_layout == INGOT_KV_PAGED;
  static const char *const kStr[] = {"k_new_stride_", "v_new_stride_", "k_cache_stride_", "v_cache_stride_"};
  const ingot_tensor_desc *const ts[] = {&g->k_new, &g->v_new, &g->k_cache, &g->v_cache};
  for (int i = 0; i < 4; ++i) {
    const size_t n = strlen(kStr[i]);
    if (!strncmp(name, kStr[i], n)) {
      const char c = name[n];
      const int dim = c == 'b' ? 0 : (c == 's' || c == 't') ? 1 : c == 'h' ? 2 : -1;
      if (dim < 0 || name[n + 1]) return 0;
      *out = ts[i]->strides[dim];
      return 1;
    }
  }
  const struct {
    const char *name;
    int64_t value;
  } kv[] = {
      {"k_new", (int64_t)(uintptr_t)b->k_new},
      {"v_new", (int64_t)(uintptr_t)b->v_new},
      {"k_cache", (int64_t)(uintptr_t)b->k_cache},
      {"v_cache", (int64_t)(uintptr_t)b->v_cache},
      {"seq_lens", (int64_t)(uintptr_t)b->seq_lens},
      {"page_table", (int64_t)(uintptr_t)b->page_table},
      {"page_table_stride", paged ? g->page_table.strides[0] : 0},
      {"capacity", g->capacity},
      {"page_size", paged ? g->k_cache.dims[1] : 0},
      {"num_pages", paged ? g->k_cache.dims[0] : 0},
      {"sq", g->k_new.dims[1]},
      {"num_kv_heads", g->k_new.dims[2]},
      {"head_dim", g->k_new.dims[3]},
      {"advance", g->advance},
  };
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; ++i)
    if (!strcmp(kv[i].name, name)) return *out = kv[i].value, 1;
  return 0;
}

/* The plan of one random graph, and its kernargs against the packaged UDD. */
static void check_plan(ingot_context *ctx, const char *arch, const ingot_kv_append_graph *g, json_t *udd) {
  ingot_plan *plan = NULL;
  const ingot_status s = ingot_kv_append_plan_create(ctx, g, &plan);
  if (s != INGOT_OK) fprintf(stderr, "%s: %s\n", arch, ingot_context_last_error(ctx));
  CHECK_STATUS(s, INGOT_OK);
  if (plan == NULL) return;
  CHECK(!strcmp(ingot_plan_family(plan), "kv_append"));
  char want[96];
  snprintf(want, sizeof want, "kv_append_%s_%s_t256", g->k_new.dtype == INGOT_DTYPE_BF16 ? "bf16" : "fp16",
           g->kv_layout == INGOT_KV_PAGED ? "paged" : "contig");
  CHECK(!strcmp(ingot_plan_kernel_name(plan), want));
  CHECK(ingot_plan_workspace_size(plan) == 0 && ingot_plan_launch_count(plan) == 1);
  const ingot_dispatch_plan *d = ingot_plan_dispatch_info(plan);
  CHECK(d->launches[0].grid[0] == (uint32_t)g->k_new.dims[0] && d->launches[0].grid[1] == 1 &&
        d->launches[0].block[0] == 256 && (d->launches[0].flags & INGOT_LAUNCH_PROGRAMMATIC));
  /* random aligned pointers: the stub only writes them */
  ingot_kv_append_buffers b = {(void *)(uintptr_t)(16 * rnd_range(1, 1 << 28)), (void *)(uintptr_t)(16 * rnd_range(1, 1 << 28)),
                               (void *)(uintptr_t)(16 * rnd_range(1, 1 << 28)), (void *)(uintptr_t)(16 * rnd_range(1, 1 << 28)),
                               (int32_t *)(uintptr_t)(4 * rnd_range(1, 1 << 28)),
                               g->kv_layout == INGOT_KV_PAGED ? (const int32_t *)(uintptr_t)(4 * rnd_range(1, 1 << 28)) : NULL};
  const ingot_dispatch_entry *e = ingot_dispatch_find("ingot_kv_append_dispatch");
  CHECK(e != NULL && !strcmp(e->family, "kv_append"));
  if (e == NULL) {
    ingot_plan_destroy(plan);
    return;
  }
  uint8_t args[INGOT_MAX_KERNARG_BYTES];
  memset(args, 0xA5, sizeof args); /* poisoned: every byte of the layout must be written */
  size_t size = 0;
  char err[256] = "";
  CHECK_STATUS(e->pack(d, 0, &b, NULL, args, sizeof args, &size, err, sizeof err), INGOT_OK);
  CHECK(size == (size_t)json_integer_value(json_object_get(udd, "kernarg_size")));
  size_t i;
  json_t *a;
  json_array_foreach(json_object_get(udd, "signature"), i, a) {
    const char *name = json_string_value(json_object_get(a, "name"));
    const unsigned off = (unsigned)json_integer_value(json_object_get(a, "offset"));
    const unsigned sz = (unsigned)json_integer_value(json_object_get(a, "size"));
    int64_t v = 0;
    CHECK(name != NULL && want_arg(name, g, &b, &v));
    if (name == NULL || get_arg(args, off, sz) != v) {
      fprintf(stderr, "%s: kernarg %s at %u = %lld, expected %lld\n", arch, name ? name : "?", off,
              (long long)get_arg(args, off, sz), (long long)v);
      CHECK(0);
    }
  }
  /* a launch the plan does not have, and a buffer too small, are refused */
  CHECK(e->pack(d, 1, &b, NULL, args, sizeof args, &size, err, sizeof err) != INGOT_OK);
  CHECK(e->pack(d, 0, &b, NULL, args, 16, &size, err, sizeof err) != INGOT_OK);
  ingot_plan_destroy(plan);
}

static void expect_refused(ingot_context *ctx, const ingot_kv_append_graph *g, ingot_status want, const char *needle) {
  ingot_plan *plan = NULL;
  const ingot_status s = ingot_kv_append_plan_create(ctx, g, &plan);
  CHECK_STATUS(s, want);
  CHECK(plan == NULL);
  const char *msg = ingot_context_last_error(ctx);
  if (strstr(msg, needle) == NULL) fprintf(stderr, "expected \"%s\" in: %s\n", needle, msg);
  CHECK(strstr(msg, needle) != NULL);
  ingot_plan_destroy(plan);
}

static ingot_kv_append_graph paged_graph(void) {
  ingot_kv_append_graph g;
  do g = random_graph();
  while (g.kv_layout != INGOT_KV_PAGED);
  return g;
}

static void check_refusals(ingot_context *ctx) {
  for (int round = 0; round < 20; ++round) {
    ingot_kv_append_graph g = random_graph();
    g.k_new.dims[1] = g.v_new.dims[1] = g.capacity + rnd_range(1, 8); /* more tokens than a sequence holds */
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "(Sq) = ");

    g = paged_graph(); /* a page-table row that cannot reach the capacity */
    g.page_table.dims[1] = (g.capacity - 1) / g.k_cache.dims[1];
    if (g.page_table.dims[1] >= 1) {
      g.page_table.strides[0] = g.page_table.dims[1];
      expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "exceeds page_table.dims[1] x page size");
    }

    g = random_graph(); /* the append copies, it does not convert */
    g.v_cache.dtype = g.k_cache.dtype = g.k_new.dtype == INGOT_DTYPE_BF16 ? INGOT_DTYPE_FP16 : INGOT_DTYPE_BF16;
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "k_cache.dtype = ");

    g = random_graph();
    g.v_new.dims[3] += 8;
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "v_new.dims[3] = ");

    g = random_graph();
    g.advance = (int)rnd_range(2, 100);
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "advance = ");

    do g = random_graph(); /* a token's stride equal to a head's: (t + 1, h) and (t, h + 1) share a slot */
    while (g.k_cache.dims[1] < 2 || g.k_cache.dims[2] < 2);
    g.k_cache.strides[1] = g.k_cache.strides[2];
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "k_cache strides");

    g = random_graph();
    g.seq_lens.dims[0] = g.k_new.dims[0] + 1;
    expect_refused(ctx, &g, INGOT_INVALID_ARGUMENT, "seq_lens.dims[0] = ");

    /* structurally fine, but no kernel runs it: the decline names the field */
    g = random_graph();
    g.k_new.dims[3] = g.v_new.dims[3] = g.k_cache.dims[3] = g.v_cache.dims[3] = 8 * rnd_range(1, 63) + rnd_range(1, 7);
    for (int t = 0; t < 2; ++t) {
      ingot_tensor_desc *n = t ? &g.v_new : &g.k_new;
      n->strides[2] = n->dims[3], n->strides[1] = n->dims[2] * n->dims[3], n->strides[0] = n->dims[1] * n->strides[1];
      ingot_tensor_desc *c = t ? &g.v_cache : &g.k_cache;
      c->strides[2] = c->dims[3], c->strides[1] = c->dims[2] * c->dims[3], c->strides[0] = c->dims[1] * c->strides[1];
    }
    expect_refused(ctx, &g, INGOT_NO_MATCH, "head_dim");
    g = random_graph();
    g.seq_lens.memory = INGOT_MEMORY_HOST;
    expect_refused(ctx, &g, INGOT_NO_MATCH, "seq_lens.memory");
  }
}

/* The generic calls: unknown families, struct sizes, buffers, a host execute. */
static void check_generic(ingot_context *ctx) {
  ingot_kv_append_graph g = random_graph();
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create_family(ctx, "kv_apend", &g, sizeof g, &plan), INGOT_INVALID_ARGUMENT);
  CHECK(strstr(ingot_context_last_error(ctx), "family \"kv_apend\" is unknown (allowed: attention_decode, kv_append)"));
  CHECK_STATUS(ingot_plan_create_family(ctx, "kv_append", &g, sizeof g - 8, &plan), INGOT_INVALID_ARGUMENT);
  CHECK(strstr(ingot_context_last_error(ctx), "graph_size") != NULL);
  CHECK_STATUS(ingot_plan_create_family(ctx, NULL, &g, sizeof g, &plan), INGOT_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  CHECK_STATUS(ingot_kv_append_plan_create(ctx, &g, &plan), INGOT_OK);
  if (plan == NULL) return;
  char err[512] = "";
  int32_t lens[1];
  uint16_t k[8] __attribute__((aligned(16)));
  int32_t pt[1];
  ingot_kv_append_buffers b = {k, k, k, k, lens, pt};
  CHECK_STATUS(ingot_plan_execute_family(plan, NULL, &b, sizeof b + 8, NULL, 0, err, sizeof err),
               INGOT_INVALID_ARGUMENT);
  CHECK(strstr(err, "buffers_size") != NULL);
  b.k_cache = NULL;
  CHECK_STATUS(ingot_kv_append_execute(plan, NULL, &b, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK(strstr(err, "buffers->k_cache is NULL") != NULL);
  b.k_cache = k;
  b.seq_lens = (int32_t *)((char *)lens + 1);
  CHECK_STATUS(ingot_kv_append_execute(plan, NULL, &b, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK(strstr(err, "buffers->seq_lens") != NULL && strstr(err, "aligned") != NULL);
  b.seq_lens = lens;
  if (g.kv_layout == INGOT_KV_PAGED) {
    b.page_table = NULL;
    CHECK_STATUS(ingot_kv_append_execute(plan, NULL, &b, err, sizeof err), INGOT_INVALID_ARGUMENT);
    CHECK(strstr(err, "buffers->page_table is NULL") != NULL);
    b.page_table = pt;
  }
  CHECK_STATUS(ingot_kv_append_execute(plan, NULL, &b, err, sizeof err), INGOT_UNAVAILABLE); /* host context */
  ingot_plan_destroy(plan);
}

/* Each family sees only its own packs. */
static void check_cross(const char *kva_dir, const char *ad_dir) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host("sm_90", &ctx), INGOT_OK);
  if (ctx == NULL) return;
  CHECK_STATUS(ingot_context_open_pack(ctx, kva_dir), INGOT_OK);
  ingot_attention_graph a = shaped_graph(INGOT_DTYPE_BF16, 8, 2, 128, 1, 1, 4096, 0, 16, 0, 0);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &a, &plan), INGOT_NO_MATCH);
  CHECK(strstr(ingot_context_last_error(ctx), "no pack of family attention_decode is open") != NULL);
  ingot_context_destroy(ctx);
  ctx = NULL;
  CHECK_STATUS(ingot_context_create_host("gfx942", &ctx), INGOT_OK);
  if (ctx == NULL) return;
  CHECK_STATUS(ingot_context_open_pack(ctx, ad_dir), INGOT_OK);
  ingot_kv_append_graph g = random_graph();
  CHECK_STATUS(ingot_kv_append_plan_create(ctx, &g, &plan), INGOT_NO_MATCH);
  CHECK(strstr(ingot_context_last_error(ctx), "no pack of family kv_append is open") != NULL);
  CHECK(plan == NULL);
  ingot_context_destroy(ctx);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_kv_append KV_APPEND_PACKDIR ATTENTION_PACKDIR\n");
    return 2;
  }
  test_seed_rng();
  char path[4096];
  snprintf(path, sizeof path, "%s/kv_append.udd.json", argv[1]);
  json_error_t jerr;
  json_t *udd = json_load_file(path, 0, &jerr);
  CHECK(udd != NULL);
  if (udd == NULL) return test_finish("test_kv_append");
  int planned = 0;
  for (size_t a = 0; a < sizeof kArchs / sizeof kArchs[0]; ++a) {
    ingot_context *ctx = NULL;
    CHECK_STATUS(ingot_context_create_host(kArchs[a], &ctx), INGOT_OK);
    if (ctx == NULL) continue;
    CHECK_STATUS(ingot_context_open_pack(ctx, argv[1]), INGOT_OK);
    CHECK_STATUS(ingot_context_open_pack(ctx, argv[2]), INGOT_OK); /* both families in one context */
    for (int i = 0; i < 300; ++i, ++planned) {
      const ingot_kv_append_graph g = random_graph();
      check_plan(ctx, kArchs[a], &g, udd);
    }
    /* the attention pack beside it still plans its own graphs */
    ingot_attention_graph ag = shaped_graph(INGOT_DTYPE_FP16, 8, 2, 128, 1, 2, 8192, 1, 16, 0, 0);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &ag, &plan), INGOT_OK);
    if (plan) CHECK(!strcmp(ingot_plan_family(plan), "attention_decode"));
    ingot_plan_destroy(plan);
    check_refusals(ctx);
    check_generic(ctx);
    ingot_context_destroy(ctx);
  }
  check_cross(argv[1], argv[2]);
  json_decref(udd);
  printf("test_kv_append: %d random append graphs planned on 3 archs, kernargs checked against the UDD\n", planned);
  return test_finish("test_kv_append");
}
