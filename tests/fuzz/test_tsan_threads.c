/* test_tsan_threads: the runtime under ThreadSanitizer, 8 threads at once.
 * Each thread creates its own host contexts (NULL arch, gfx942, sm_90), opens
 * the test_seed and attention_decode packs, creates and destroys plans for the
 * example graphs in a loop (matches and declines), and meanwhile reads one
 * shared context (its decline report, last error, kernel count) and executes
 * one shared plan concurrently (a host context answers UNAVAILABLE after the
 * argument checks: the read-only path every execute takes). Each thread also
 * holds a plan of a context the main thread destroys once the threads run:
 * they execute it and destroy it, and whichever drops the last reference
 * frees the context (a plan keeps its context alive). Contract (ingot.h):
 * nothing global is mutable; a plan may be executed from several threads and
 * may outlive its context. TSan (halt_on_error) fails the test on the first
 * race.
 * Usage: test_tsan_threads TEST_SEED_PACK MAIN_PACK EXAMPLES_DIR */
#define _XOPEN_SOURCE 700
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"

#define THREADS 8
#define ROUNDS 6

static const char *g_seed_pack, *g_main_pack;
static ingot_context *g_shared;      /* read-only while the threads run */
static const ingot_plan *g_shared_plan;
static char *g_shared_report;        /* the report as it was before the threads started */
static ingot_plan *g_orphans[THREADS]; /* one per thread, of a context destroyed while they run */
static atomic_int g_failures;

static const char *const kGraphs[] = {"seed_none.json", "seed_causal.json", "gqa_fp16_lse.json",
                                      "paged_spec4_causal.json", "padded_kv_d64.json"};
#define NUM_GRAPHS (sizeof kGraphs / sizeof kGraphs[0])
static ingot_attention_graph g_graphs[NUM_GRAPHS];

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                    \
      fprintf(stderr, __VA_ARGS__);                                                               \
      fprintf(stderr, "\n");                                                                      \
      atomic_fetch_add(&g_failures, 1);                                                           \
    }                                                                                             \
  } while (0)

static int load_graph(const char *dir, const char *name, ingot_attention_graph *g) {
  char path[4096], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return 0;
  }
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  if (ingot_graph_from_json(text, n, g, err, sizeof err) != INGOT_OK) {
    fprintf(stderr, "%s: %s\n", path, err);
    return 0;
  }
  return 1;
}

/* Executes a plan on a host context with made-up buffers: UNAVAILABLE after the
 * argument checks (or INVALID_ARGUMENT for a workspace it is not given). */
static void execute_host(const ingot_plan *plan, int id, const char *what) {
  static _Alignas(16) unsigned char buf[64];
  ingot_attention_buffers b = {buf, buf, buf, buf, (float *)buf, (const int32_t *)buf, (const int32_t *)buf};
  _Alignas(16) unsigned char ws[16];
  char err[512];
  size_t need = ingot_plan_workspace_size(plan);
  ingot_status s = ingot_plan_execute_ex(plan, NULL, &b, need ? ws : NULL, need ? sizeof ws : 0, err, sizeof err);
  /* workspace too small when the plan needs more than 16 bytes, else UNAVAILABLE (host) */
  CHECK(s == (need > sizeof ws ? INGOT_INVALID_ARGUMENT : INGOT_UNAVAILABLE), "thread %d: %s: execute: %s", id,
        what, err);
  CHECK(err[0] != 0, "thread %d: %s: execute without a message", id, what);
}

static void *worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  /* The orphan: its context is being destroyed by the main thread meanwhile. */
  for (int i = 0; i < 20; ++i) {
    execute_host(g_orphans[id], id, "orphan plan");
    CHECK(ingot_plan_kernel_name(g_orphans[id]) != NULL && ingot_plan_launch_count(g_orphans[id]) >= 1,
          "thread %d: orphan plan", id);
  }
  ingot_plan_destroy(g_orphans[id]);
  static const char *const kArchs[] = {NULL, "gfx942", "sm_90"};
  for (int round = 0; round < ROUNDS; ++round) {
    ingot_context *ctx = NULL;
    const char *arch = kArchs[(id + round) % 3];
    if (ingot_context_create_host(arch, &ctx) != INGOT_OK) {
      CHECK(0, "thread %d: host context", id);
      continue;
    }
    CHECK(ingot_context_open_pack(ctx, g_seed_pack) == INGOT_OK, "thread %d: %s", id, ingot_context_last_error(ctx));
    CHECK(ingot_context_open_pack(ctx, g_main_pack) == INGOT_OK, "thread %d: %s", id, ingot_context_last_error(ctx));
    for (size_t i = 0; i < NUM_GRAPHS; ++i) {
      ingot_plan *plan = NULL;
      ingot_status s = ingot_plan_create(ctx, &g_graphs[i], &plan);
      CHECK(s == INGOT_OK || s == INGOT_NO_MATCH, "thread %d: %s: %s", id, kGraphs[i], ingot_context_last_error(ctx));
      if (s == INGOT_OK) {
        CHECK(ingot_plan_kernel_name(plan) != NULL && ingot_plan_launch_count(plan) >= 1, "thread %d", id);
        ingot_plan_destroy(plan);
      } else {
        CHECK(ingot_context_decline_report(ctx)[0] != 0, "thread %d: %s: empty decline report", id, kGraphs[i]);
      }
    }
    ingot_context_destroy(ctx);

    /* The shared context and plan: readers only. */
    CHECK(strcmp(ingot_context_decline_report(g_shared), g_shared_report) == 0, "thread %d: shared report changed", id);
    CHECK(ingot_context_last_error(g_shared)[0] != 0, "thread %d: shared last error", id);
    CHECK(ingot_context_kernel_count(g_shared) >= 2, "thread %d: shared kernel count", id);
    execute_host(g_shared_plan, id, "shared plan");
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s TEST_SEED_PACK MAIN_PACK EXAMPLES_DIR\n", argv[0]);
    return 2;
  }
  g_seed_pack = argv[1];
  g_main_pack = argv[2];
  for (size_t i = 0; i < NUM_GRAPHS; ++i)
    if (!load_graph(argv[3], kGraphs[i], &g_graphs[i])) return 2;
  if (ingot_context_create_host(NULL, &g_shared) != INGOT_OK || ingot_context_open_pack(g_shared, g_seed_pack) != INGOT_OK ||
      ingot_context_open_pack(g_shared, g_main_pack) != INGOT_OK) {
    fprintf(stderr, "shared context: %s\n", g_shared ? ingot_context_last_error(g_shared) : "not created");
    return 2;
  }
  ingot_plan *plan = NULL;
  if (ingot_plan_create(g_shared, &g_graphs[0], &plan) != INGOT_OK) {
    fprintf(stderr, "shared plan: %s\n", ingot_context_last_error(g_shared));
    return 2;
  }
  g_shared_plan = plan;
  /* Leave a decline report on the shared context for the threads to read. */
  ingot_plan *none = NULL;
  ingot_attention_graph bad = g_graphs[0];
  bad.q.dims[3] = bad.k.dims[3] = bad.v.dims[3] = bad.o.dims[3] = 72;
  bad.q.strides[0] = bad.q.strides[1] = bad.q.strides[2] = 72;
  if (ingot_plan_create(g_shared, &bad, &none) != INGOT_NO_MATCH) {
    fprintf(stderr, "shared context: a D = 72 graph did not decline: %s\n", ingot_context_last_error(g_shared));
    return 2;
  }
  g_shared_report = strdup(ingot_context_decline_report(g_shared));
  if (g_shared_report == NULL || g_shared_report[0] == 0) {
    fprintf(stderr, "shared context: empty decline report\n");
    return 2;
  }

  ingot_context *orphaned = NULL;
  if (ingot_context_create_host("gfx942", &orphaned) != INGOT_OK ||
      ingot_context_open_pack(orphaned, g_main_pack) != INGOT_OK) {
    fprintf(stderr, "orphaned context: %s\n", orphaned ? ingot_context_last_error(orphaned) : "not created");
    return 2;
  }
  for (int i = 0; i < THREADS; ++i)
    if (ingot_plan_create(orphaned, &g_graphs[i % 2 ? 2 : 3], &g_orphans[i]) != INGOT_OK) {
      fprintf(stderr, "orphaned context: %s\n", ingot_context_last_error(orphaned));
      return 2;
    }

  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i)
    if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  ingot_context_destroy(orphaned); /* while the threads use its plans */
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);

  ingot_plan_destroy(plan);
  ingot_context_destroy(g_shared);
  free(g_shared_report);
  int failures = atomic_load(&g_failures);
  printf("tsan_threads: %d threads x %d rounds x (2 packs, %zu graphs): %d failures\n", THREADS, ROUNDS,
         NUM_GRAPHS, failures);
  return failures ? 1 : 0;
}
