/* test_execute.c: the execute path without a GPU. A recording backend stands
 * in for the driver behind a host context's internals (runtime/src/internal.h),
 * so this checks what libingot itself does: the code object is loaded once per
 * context even when many threads execute at once, the driver's parameter list
 * is checked against the UDD, kernargs are packed per launch and handed over
 * with the UDD's size, and modules are unloaded at destroy.
 * usage: test_execute PACKDIR */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#include "ingot_attention_decode_limits.h"
#include "internal.h"

static const char *g_pack;

typedef struct fake_dev {
  atomic_int loads, unloads, launches, bad_launches;
  atomic_int merge_x, merge_y, merge_threads, merge_splits; /* the last merge launch */
  int wrong_params; /* report a parameter list that disagrees with the UDD */
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
  /* the kernel ABI of docs/INTERNALS.md 5: 8 pointers, 13 int64, 6 int32, 1 float */
  int c = 0;
  size_t off = 0;
  for (int i = 0; i < 28 && c < max; ++i, ++c) {
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
  (void)err, (void)n, (void)stream, (void)lds, (void)flags;
  fake_dev *f = (fake_dev *)d;
  const void *q;
  memcpy(&q, args, sizeof q);
  int ok = size == 196 && fn != NULL && grid[0] > 0 && block[0] > 0 && q == f->expect->q;
  atomic_fetch_add(ok ? &f->launches : &f->bad_launches, 1);
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
static void f_close(ingot_backend_device *d) { (void)d; }

static const ingot_backend_ops kFake = {"fake", NULL, f_close, f_module_load, f_module_unload,
                                        f_function_get, f_function_params, f_launch};

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

static ingot_context *fake_context(fake_dev *f) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host("gfx942", &ctx), INGOT_OK);
  CHECK_STATUS(ingot_context_open_pack(ctx, g_pack), INGOT_OK);
  ctx->ops = &kFake; /* what ingot_context_create does with a real driver */
  ctx->dev = (ingot_backend_device *)f;
  ctx->backend = INGOT_BACKEND_HIP;
  return ctx;
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
    CHECK_HAS(err, "parameter 27 is at offset 192 size 8, the UDD says offset 192 size 4");
  }
  CHECK(atomic_load(&w.loads) == 1 && atomic_load(&w.unloads) == 1 && atomic_load(&w.launches) == 0);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
  CHECK(atomic_load(&w.unloads) == 1);
  return test_finish("test_execute");
}
