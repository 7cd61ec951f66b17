/* test_plan_lifetime.c: a plan keeps its context alive (ingot.h,
 * ingot_context_destroy). The context may be destroyed while plans of it live:
 * they can still be queried, executed (a host context answers UNAVAILABLE after
 * its argument checks, which read the context) and destroyed, in any order and
 * from several threads; the last one frees the context. Run under valgrind
 * (valgrind_plan_lifetime, tests/fuzz) and ASan (the sanitizer build), where a
 * read of the freed context or a context never freed fails the test.
 * usage: test_plan_lifetime PACKDIR */
#include "test_util.h"

#include <pthread.h>

static const char *g_pack;

static ingot_context *open_ctx(void) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host(rnd() % 2 ? "gfx942" : NULL, &ctx), INGOT_OK);
  if (ctx == NULL) exit(1);
  if (ingot_context_open_pack(ctx, g_pack) != INGOT_OK) {
    fprintf(stderr, "cannot open %s: %s\n", g_pack, ingot_context_last_error(ctx));
    exit(1);
  }
  return ctx;
}

typedef struct planned {
  ingot_plan *plan;
  char kernel[128];
  size_t workspace;
  int splits, launches;
} planned;

static planned make_plan(ingot_context *ctx) {
  planned p = {0};
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), rnd() % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
  CHECK_STATUS(ingot_plan_create(ctx, &g, &p.plan), INGOT_OK);
  if (p.plan == NULL) {
    fprintf(stderr, "plan: %s\n", ingot_context_last_error(ctx));
    exit(1);
  }
  snprintf(p.kernel, sizeof p.kernel, "%s", ingot_plan_kernel_name(p.plan));
  p.workspace = ingot_plan_workspace_size(p.plan);
  p.splits = ingot_plan_num_splits(p.plan);
  p.launches = ingot_plan_launch_count(p.plan);
  return p;
}

/* Everything a plan offers, answered as it was before its context was destroyed. */
static void use_plan(const planned *p) {
  CHECK(!strcmp(ingot_plan_kernel_name(p->plan), p->kernel));
  CHECK(ingot_plan_workspace_size(p->plan) == p->workspace);
  CHECK(ingot_plan_num_splits(p->plan) == p->splits && ingot_plan_launch_count(p->plan) == p->launches);
  /* made-up aligned pointers: a host context never touches them */
  ingot_attention_buffers b = {(const void *)0x10000, (const void *)0x20000, (const void *)0x30000,
                               (void *)0x40000, NULL, (const int32_t *)0x50000, NULL};
  char err[512] = "";
  CHECK_STATUS(ingot_plan_execute_ex(p->plan, NULL, &b, (void *)0x60000, p->workspace, err, sizeof err),
               INGOT_UNAVAILABLE);
  CHECK_HAS(err, "host context");
  b.o = NULL;
  CHECK_STATUS(ingot_plan_execute_ex(p->plan, NULL, &b, (void *)0x60000, p->workspace, err, sizeof err),
               INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, "buffers->o is NULL");
}

/* The usual order first: plans, then the context. */
static void test_plans_first(void) {
  ingot_context *ctx = open_ctx();
  planned p = make_plan(ctx);
  use_plan(&p);
  ingot_plan_destroy(p.plan);
  CHECK(ingot_context_kernel_count(ctx) == 1); /* the context is still the caller's */
  ingot_context_destroy(ctx);
}

static void test_context_first(void) {
  ingot_context *ctx = open_ctx();
  planned p = make_plan(ctx);
  ingot_context_destroy(ctx);
  use_plan(&p);
  ingot_plan_destroy(p.plan);
}

/* Several plans outlive the context and go in a random order; each one left
 * still works after the others are gone. */
static void test_many_plans(void) {
  for (int round = 0; round < 6; ++round) {
    ingot_context *ctx = open_ctx();
    planned p[8];
    const int n = (int)rnd_range(2, 8);
    for (int i = 0; i < n; ++i) p[i] = make_plan(ctx);
    ingot_context_destroy(ctx);
    for (int left = n; left > 0; --left) {
      const int k = (int)rnd_range(0, left - 1);
      ingot_plan_destroy(p[k].plan);
      p[k] = p[left - 1];
      for (int i = 0; i < left - 1; ++i) use_plan(&p[i]);
    }
  }
}

/* Threads each execute and destroy their own plan of one context while the main
 * thread destroys the context: whichever release comes last frees it. */
static void *thread_use(void *arg) {
  planned *p = arg;
  for (int i = 0; i < 50; ++i) use_plan(p);
  ingot_plan_destroy(p->plan);
  return NULL;
}

static void test_threads(void) {
  enum { kThreads = 4 };
  ingot_context *ctx = open_ctx();
  planned p[kThreads];
  for (int i = 0; i < kThreads; ++i) p[i] = make_plan(ctx);
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) CHECK(pthread_create(&t[i], NULL, thread_use, &p[i]) == 0);
  ingot_context_destroy(ctx);
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_plan_lifetime PACKDIR\n");
    return 2;
  }
  g_pack = argv[1];
  test_seed_rng();
  test_plans_first();
  if (g_failures) return test_finish("test_plan_lifetime (the usual order failed; the rest not run)");
  test_context_first();
  test_many_plans();
  test_threads();
  ingot_plan_destroy(NULL);
  ingot_context_destroy(NULL);
  return test_finish("test_plan_lifetime");
}
