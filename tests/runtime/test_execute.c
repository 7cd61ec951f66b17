/* test_execute.c: the execute path without a GPU. A recording backend stands
 * in for the driver behind a host context's internals (runtime/src/internal.h),
 * so this checks what libingot itself does: the code object is loaded once per
 * context even when many threads execute at once, the driver's parameter list
 * is checked against the UDD, kernargs are packed per launch and handed over
 * with the UDD's size, a split with dynamic LDS opts in once and is launched
 * with it, and modules are unloaded at destroy.
 * usage: test_execute PACKDIR */
#include "test_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ingot_attention_decode_limits.h"
#include "ad_family.h"

static const char *g_pack;

typedef struct fake_dev {
  atomic_int loads, unloads, launches, bad_launches;
  atomic_int merge_x, merge_y, merge_threads, merge_splits; /* the last merge launch */
  int wrong_params; /* report a parameter list that disagrees with the UDD */
  int refuse_dynamic_lds;                      /* the driver refuses the opt-in */
  atomic_int dyn_calls, dyn_fn, dyn_bytes;     /* the last function_set_dynamic_lds */
  atomic_int split_lds, merge_lds;             /* the last launches' dynamic LDS, -1 before any */
  const ingot_attention_buffers *expect;
} fake_dev;

static ingot_status f_module_load(ingot_backend_device *d, const void *image, size_t size, ingot_backend_module *out,
                                  char *err, size_t n) {
  (void)err, (void)n;
  fake_dev *f = (fake_dev *)d;
  atomic_fetch_add(&f->loads, 1);
  *out = (ingot_backend_module)image; /* any non-NULL token */
  return size > 0 ? INGOT_OK : INGOT_DEVICE_ERROR;
}
static void f_module_unload(ingot_backend_device *d, ingot_backend_module m) {
  (void)m;
  atomic_fetch_add(&((fake_dev *)d)->unloads, 1);
}
static ingot_status f_function_get(ingot_backend_device *d, ingot_backend_module m, const char *sym,
                                   ingot_backend_function *out, char *err, size_t n) {
  (void)d, (void)m, (void)err, (void)n;
  size_t l = strlen(sym);
  *out = (ingot_backend_function)(uintptr_t)(l > 6 && !strcmp(sym + l - 6, "_split") ? 1 : 2);
  return INGOT_OK;
}
static ingot_status f_function_params(ingot_backend_device *d, ingot_backend_function fn, size_t *offsets,
                                      size_t *sizes, int max, int *count, char *err, size_t n) {
  (void)fn, (void)err, (void)n;
  /* the kernel ABI of docs/INTERNALS.md 5: 8 pointers, 13 int64, 6 int32, 1 float, 1 int32 (group) */
  int c = 0;
  size_t off = 0;
  for (int i = 0; i < 29 && c < max; ++i, ++c) {
    size_t sz = i < 21 ? 8 : 4;
    offsets[c] = off;
    sizes[c] = sz;
    off += sz;
  }
  if (((fake_dev *)d)->wrong_params) sizes[c - 1] = 8;
  *count = c;
  return INGOT_OK;
}
static ingot_status f_launch(ingot_backend_device *d, ingot_backend_function fn, const uint32_t grid[3],
                             const uint32_t block[3], uint32_t lds, uint32_t flags, void *stream,
                             const void *args, size_t size, char *err, size_t n) {
  (void)err, (void)n, (void)stream, (void)flags;
  fake_dev *f = (fake_dev *)d;
  const void *q;
  memcpy(&q, args, sizeof q);
  int ok = size == 200 && fn != NULL && grid[0] > 0 && block[0] > 0 && q == f->expect->q;
  atomic_fetch_add(ok ? &f->launches : &f->bad_launches, 1);
  atomic_store((uintptr_t)fn == 1 ? &f->split_lds : &f->merge_lds, (int)lds);
  if (ok && (uintptr_t)fn == 2) { /* the merge: its grid and the num_splits kernarg (offset 180) */
    int32_t splits;
    memcpy(&splits, (const char *)args + 180, sizeof splits);
    atomic_store(&f->merge_x, (int)grid[0]);
    atomic_store(&f->merge_y, (int)grid[1]);
    atomic_store(&f->merge_threads, (int)block[0]);
    atomic_store(&f->merge_splits, splits);
  }
  return INGOT_OK;
}
static ingot_status f_set_dynamic_lds(ingot_backend_device *d, ingot_backend_function fn, uint32_t bytes, char *err,
                                      size_t n) {
  fake_dev *f = (fake_dev *)d;
  atomic_fetch_add(&f->dyn_calls, 1);
  atomic_store(&f->dyn_fn, (int)(uintptr_t)fn);
  atomic_store(&f->dyn_bytes, (int)bytes);
  if (!f->refuse_dynamic_lds) return INGOT_OK;
  snprintf(err, n, "opt-in refused (fake)");
  return INGOT_DEVICE_ERROR;
}
static void f_close(ingot_backend_device *d) { (void)d; }

static const ingot_backend_ops kFake = {.name = "fake",
                                        .close = f_close,
                                        .module_load = f_module_load,
                                        .module_unload = f_module_unload,
                                        .function_get = f_function_get,
                                        .function_params = f_function_params,
                                        .function_set_dynamic_lds = f_set_dynamic_lds,
                                        .launch = f_launch};

typedef struct job {
  const ingot_plan *plan;
  const ingot_attention_buffers *b;
  void *ws;
  size_t ws_size;
  int fails;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  char err[256];
  for (int i = 0; i < 50; ++i)
    if (ingot_plan_execute_ex(j->plan, NULL, j->b, j->ws, j->ws_size, err, sizeof err) != INGOT_OK) ++j->fails;
  return NULL;
}

static ingot_context *fake_context_for(fake_dev *f, const char *pack) {
  ingot_context *ctx = NULL;
  atomic_store(&f->split_lds, -1);
  atomic_store(&f->merge_lds, -1);
  CHECK_STATUS(ingot_context_create_host("gfx942", &ctx), INGOT_OK);
  CHECK_STATUS(ingot_context_open_pack(ctx, pack), INGOT_OK);
  ctx->ops = &kFake; /* what ingot_context_create does with a real driver */
  ctx->dev = (ingot_backend_device *)f;
  ctx->backend = INGOT_BACKEND_HIP;
  return ctx;
}
static ingot_context *fake_context(fake_dev *f) { return fake_context_for(f, g_pack); }

/* The test_seed KDP of a pack copy (path receives its file name), and its
 * first kernel's object for an arch: what the tests below edit and write back. */
static json_t *load_seed_kdp(const char *dir, char *path, size_t n) {
  snprintf(path, n, "%s/test_seed.kdp.json", dir);
  json_error_t je;
  json_t *kdp = json_load_file(path, 0, &je);
  CHECK(kdp != NULL);
  return kdp;
}
static json_t *seed_object(json_t *kdp, const char *arch) {
  return json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(kdp, "kernelDescriptors"), 0),
                                                         "kernel_source"), "objects"), arch);
}

/* A code object that declares dynamic LDS for its split: the function opts in
 * once, at load, with that many bytes; every split launch carries them and the
 * merge none. A driver that refuses the opt-in fails the execute with a message
 * naming the bytes, and nothing is launched. */
static void test_dynamic_lds(const ingot_attention_buffers *b, void *ws) {
  char dir[1024];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  char p[1200];
  json_t *kdp = load_seed_kdp(dir, p, sizeof p);
  if (kdp == NULL) return;
  const int bytes = (int)rnd_range(1, 4096) * 16; /* up to gfx942's 64 KiB */
  json_t *obj = seed_object(kdp, "gfx942");
  CHECK(json_is_object(json_object_get(obj, "dynamic_lds"))); /* the packager writes it for every object */
  json_t *dyn = json_object();
  json_object_set_new(dyn, "split", json_integer(bytes));
  json_object_set_new(dyn, "merge", json_integer(0));
  json_object_set_new(obj, "dynamic_lds", dyn);
  CHECK(json_dump_file(kdp, p, JSON_INDENT(2)) == 0);
  json_decref(kdp);

  for (int refuse = 0; refuse < 2; ++refuse) {
    static fake_dev f[2];
    f[refuse].expect = b;
    f[refuse].refuse_dynamic_lds = refuse;
    ingot_context *ctx = fake_context_for(&f[refuse], dir);
    ingot_attention_graph g = seed_graph(rnd_range(4096, 65536), INGOT_MASK_NONE); /* several segments: a merge */
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    if (plan == NULL) break;
    char err[512] = "";
    for (int i = 0; i < 3; ++i)
      CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, b, ws, ingot_plan_workspace_size(plan), err, sizeof err),
                   refuse ? INGOT_DEVICE_ERROR : INGOT_OK);
    if (!refuse) {
      CHECK(ingot_plan_launch_count(plan) == 2);
      CHECK(atomic_load(&f[0].dyn_calls) == 1 && atomic_load(&f[0].dyn_fn) == 1 && atomic_load(&f[0].dyn_bytes) == bytes);
      CHECK(atomic_load(&f[0].split_lds) == bytes && atomic_load(&f[0].merge_lds) == 0);
      CHECK(atomic_load(&f[0].launches) == 3 * 2 && atomic_load(&f[0].bad_launches) == 0);
    } else {
      char want[128];
      snprintf(want, sizeof want, "takes %d bytes of dynamic shared memory: opt-in refused (fake)", bytes);
      CHECK_HAS(err, want);
      CHECK(atomic_load(&f[1].launches) == 0 && atomic_load(&f[1].split_lds) == -1);
    }
    ingot_plan_destroy(plan);
    ingot_context_destroy(ctx);
  }
  /* The unchanged pack declares none: no opt-in, every launch without dynamic LDS. */
  static fake_dev none;
  none.expect = b;
  ingot_context *ctx = fake_context(&none);
  ingot_attention_graph g = seed_graph(rnd_range(4096, 65536), INGOT_MASK_NONE);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  if (plan != NULL) {
    char err[512] = "";
    CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, b, ws, ingot_plan_workspace_size(plan), err, sizeof err), INGOT_OK);
    CHECK(atomic_load(&none.dyn_calls) == 0 && atomic_load(&none.split_lds) == 0 && atomic_load(&none.merge_lds) == 0);
  }
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  remove_pack_copy(dir);
}

/* The code object is read again at the first execute (the bytes handed to the
 * driver are hashed again): one replaced since the open by a FIFO is refused
 * without being opened (an open would block), one with other bytes by its
 * sha256; nothing is loaded or launched either way. */
static void test_object_replaced_after_open(const ingot_attention_buffers *b, void *ws) {
  for (int fifo = 1; fifo >= 0; --fifo) {
    char dir[1024];
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    static fake_dev f[2];
    f[fifo].expect = b;
    ingot_context *ctx = fake_context_for(&f[fifo], dir);
    ingot_attention_graph g = seed_graph(rnd_range(64, 65536), INGOT_MASK_NONE);
    ingot_plan *plan = NULL;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
    const ingot_code_object *obj = plan ? ingot_kernel_object(plan->kernel, "gfx942") : NULL;
    CHECK(obj != NULL);
    if (obj != NULL) {
      CHECK(unlink(obj->path) == 0);
      if (fifo) {
        CHECK(mkfifo(obj->path, 0600) == 0);
      } else {
        FILE *o = fopen(obj->path, "wb");
        CHECK(o != NULL);
        if (o != NULL) {
          fprintf(o, "not the object the pack was opened with %u", (unsigned)rnd());
          fclose(o);
        }
      }
      alarm(60); /* a blocking open fails the test instead of hanging it */
      char err[512] = "";
      CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, b, ws, ingot_plan_workspace_size(plan), err, sizeof err),
                   INGOT_INVALID_PACK);
      alarm(0);
      CHECK_HAS(err, fifo ? "not a regular file (a FIFO) (allowed: a regular file)"
                          : "changed since the pack was opened (sha256 differs)");
      CHECK(atomic_load(&f[fifo].loads) == 0 && atomic_load(&f[fifo].launches) == 0);
    }
    ingot_plan_destroy(plan);
    ingot_context_destroy(ctx);
    remove_pack_copy(dir);
  }
}

/* Host contexts plan for their arch's product (ingot_arch_compute_units):
 * MI300X's 304 CUs, MI355X's 256, the H200's 132; without an arch, each plan
 * for the arch it plans for; a device context's own count wins. The count
 * reaches the segment count: the stub's plan with the table's units matches,
 * and for gfx942 at least one capacity plans otherwise with 132. */
static void test_compute_units(void) {
  static const struct {
    const char *arch;
    int units;
  } kTable[] = {{"gfx942", 304}, {"gfx950", 256}, {"sm_90", 132}};
  static const int64_t kCaps[] = {1024, 4096, 16384, 32768, 65536}; /* the seed kernel admits up to 64K */
  for (size_t a = 0; a < sizeof kTable / sizeof kTable[0]; ++a) {
    ingot_context *ctx = NULL;
    CHECK_STATUS(ingot_context_create_host(kTable[a].arch, &ctx), INGOT_OK);
    if (!ctx) continue;
    CHECK(ingot_context_compute_units(ctx) == kTable[a].units);
    CHECK_STATUS(ingot_context_open_pack(ctx, g_pack), INGOT_OK);
    int differs = 0;
    for (size_t c = 0; c < sizeof kCaps / sizeof kCaps[0]; ++c) {
      ingot_attention_graph g = seed_graph(kCaps[c], INGOT_MASK_NONE);
      ingot_plan *plan = NULL;
      CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
      if (!plan) continue;
      CHECK(plan->caps.compute_units == kTable[a].units);
      /* the same stub with 132 units, as every host plan had before */
      ingot_device_caps h200 = plan->caps;
      h200.compute_units = 132;
      ingot_dispatch_plan other;
      char err[384] = "";
      CHECK_STATUS(plan->kernel->pack->dispatch->plan(plan->kernel->meta.bytes, plan->graph.bytes, &h200, &other, err,
                                                      sizeof err), INGOT_OK);
      differs += other.num_splits != ingot_plan_num_splits(plan);
      ingot_plan_destroy(plan);
    }
    if (!strcmp(kTable[a].arch, "gfx942")) CHECK(differs > 0);
    if (!strcmp(kTable[a].arch, "sm_90")) CHECK(differs == 0);
    ingot_context_destroy(ctx);
  }
  /* no arch: the context names none, each plan takes its arch's */
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host(NULL, &ctx), INGOT_OK);
  if (!ctx) return;
  CHECK(ingot_context_compute_units(ctx) == 0);
  CHECK_STATUS(ingot_context_open_pack(ctx, g_pack), INGOT_OK);
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), INGOT_MASK_NONE);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  if (plan) {
    const char *arch = plan->kernel->objects[0].arch;
    CHECK(plan->caps.compute_units == ingot_arch_compute_units(arch) && plan->caps.compute_units > 0);
    ingot_plan_destroy(plan);
  }
  /* what a device context holds (context.c: the device's count) is what plans use */
  ctx->compute_units = (int)rnd_range(1, 1000);
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  if (plan) CHECK(plan->caps.compute_units == ctx->compute_units);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  /* an arch outside the table: the H200's count */
  CHECK(ingot_arch_compute_units("gfx90a") == 132 && ingot_arch_compute_units(NULL) == 132);
}

/* AMD registers are counted once: .vgpr_count holds the AGPRs (gfx90a and
 * later), so a split of 200 VGPRs of which 100 are AGPRs fits two waves per
 * SIMD (512 / 200), not one (as 300 would). */
static void test_agprs_counted_once(void) {
  char dir[1024];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  char p[1200];
  json_t *kdp = load_seed_kdp(dir, p, sizeof p);
  if (!kdp) return;
  /* VGPRs of 160..256 with enough AGPRs among them that adding them would pass 256 */
  const int vgpr = (int)rnd_range(160, 256), agpr = (int)rnd_range(257 - vgpr, vgpr - 1);
  json_t *split = json_object_get(json_object_get(seed_object(kdp, "gfx942"), "resources"), "split");
  CHECK(split != NULL);
  json_object_set_new(split, "vgpr", json_integer(vgpr));
  json_object_set_new(split, "agpr", json_integer(agpr));
  json_object_set_new(split, "lds", json_integer(1024));
  CHECK(json_dump_file(kdp, p, JSON_INDENT(2)) == 0);
  json_decref(kdp);
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host("gfx942", &ctx), INGOT_OK);
  CHECK_STATUS(ingot_context_open_pack(ctx, dir), INGOT_OK);
  if (ctx && ctx->num_packs == 1) {
    const ingot_kernel *k = &ctx->packs[0]->kernels[0];
    const ingot_code_object *obj = ingot_kernel_object(k, "gfx942");
    CHECK(obj != NULL && obj->split_registers == vgpr);
    /* 4 SIMDs x (512 / vgpr rounded up to 8) waves, over the kernel's waves */
    const int per_simd = 512 / ((vgpr + 7) / 8 * 8);
    if (obj) CHECK(ingot_blocks_per_cu("gfx942", obj, ingot_ad_meta(k)->waves, 64) == 4 * per_simd / ingot_ad_meta(k)->waves);
    CHECK(per_simd >= 2 && 512 / ((vgpr + agpr + 7) / 8 * 8) == 1); /* the sum would have said 1 */
  }
  ingot_context_destroy(ctx);
  remove_pack_copy(dir);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_execute PACKDIR\n");
    return 2;
  }
  g_pack = argv[1];
  test_seed_rng();
  ingot_attention_buffers b = {(const void *)(uintptr_t)(0x100000 + 16 * rnd_range(0, 1000)), (const void *)0x20000,
                               (const void *)0x30000, (void *)0x40000, NULL, (const int32_t *)0x50000, NULL};
  void *ws = (void *)0x60000;

  /* many threads, one plan: one load, every launch packed right */
  static fake_dev f;
  f.expect = &b;
  ingot_context *ctx = fake_context(&f);
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), rnd() % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  if (!plan) return test_finish("test_execute");
  enum { THREADS = 4 };
  pthread_t th[THREADS];
  job jobs[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    jobs[i] = (job){plan, &b, ws, ingot_plan_workspace_size(plan), 0};
    CHECK(pthread_create(&th[i], NULL, run_job, &jobs[i]) == 0);
  }
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].fails == 0);
  }
  CHECK(atomic_load(&f.loads) == 1);
  CHECK(atomic_load(&f.launches) == THREADS * 50 * ingot_plan_launch_count(plan));
  CHECK(atomic_load(&f.bad_launches) == 0);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  CHECK(atomic_load(&f.unloads) == 1);

  /* The merge grid follows its mode (templates/ingot_attention_decode_limits.h):
   * few segments, one thread per 4 columns of a row (the seed's 4 rows x 128
   * columns: one workgroup of 4 wave64s); many, one workgroup per row and 32
   * columns (16). One KV head pair per grid row either way. */
  static const int64_t caps[2] = {1024, 65536};
  for (int i = 0; i < 2; ++i) {
    static fake_dev m[2];
    m[i].expect = &b;
    ctx = fake_context(&m[i]);
    ingot_attention_graph gm = seed_graph(caps[i], INGOT_MASK_NONE);
    CHECK_STATUS(ingot_plan_create(ctx, &gm, &plan), INGOT_OK);
    if (!plan) break;
    const int splits = ingot_plan_num_splits(plan);
    char err[512];
    CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &b, ws, ingot_plan_workspace_size(plan), err, sizeof err),
                 INGOT_OK);
    CHECK(splits > 1 && atomic_load(&m[i].merge_splits) == splits);
    CHECK(atomic_load(&m[i].merge_y) == 2 && atomic_load(&m[i].merge_threads) == 256);
    CHECK(atomic_load(&m[i].merge_x) == (splits <= INGOT_AD_COMPACT_MERGE_SPLITS ? 1 : 16));
    CHECK(i == 0 ? splits <= INGOT_AD_COMPACT_MERGE_SPLITS : splits > INGOT_AD_COMPACT_MERGE_SPLITS);
    ingot_plan_destroy(plan);
    ingot_context_destroy(ctx);
  }

  /* a code object whose parameters disagree with the UDD: refused, unloaded, and
   * refused again without a second load */
  static fake_dev w;
  w.expect = &b;
  w.wrong_params = 1;
  ctx = fake_context(&w);
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  char err[512];
  for (int i = 0; i < 2; ++i) {
    CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &b, ws, ingot_plan_workspace_size(plan), err, sizeof err),
                 INGOT_INVALID_PACK);
    CHECK_HAS(err, "parameter 28 is at offset 196 size 8, the UDD says offset 196 size 4");
  }
  CHECK(atomic_load(&w.loads) == 1 && atomic_load(&w.unloads) == 1 && atomic_load(&w.launches) == 0);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  CHECK(atomic_load(&w.unloads) == 1);

  test_dynamic_lds(&b, ws);
  test_object_replaced_after_open(&b, ws);
  test_compute_units();
  test_agprs_counted_once();
  return test_finish("test_execute");
}
