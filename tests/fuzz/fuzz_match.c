/* fuzz_match: a fuzzed attention graph against the real attention_decode pack
 * on host contexts (any arch, and gfx942, whose wave size is 64). The first
 * input byte picks the form: odd, the rest is graph JSON
 * (ingot_graph_from_json); even, the rest mutates the seed graph in binary
 * (fuzz_common.h), which also reaches graphs the JSON form cannot express.
 * ingot_plan_create must answer OK, INVALID_ARGUMENT or NO_MATCH with a
 * message (NO_MATCH: a decline report), and every plan must satisfy the grid
 * and workspace invariants, recomputed in 128-bit arithmetic (fz_check_plan),
 * and hand the kernel only what it can read and write: every dtype, layout and
 * memory kind it relies on, outputs without overlap (fz_check_kernel_inputs).
 * Pack: INGOT_FUZZ_MAIN_PACK, or the build's packs/attention_decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ad_family.h"

static ingot_context *g_ctx[2];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *pack = getenv("INGOT_FUZZ_MAIN_PACK");
  if (pack == NULL) pack = INGOT_FUZZ_MAIN_PACK_DIR;
  const char *archs[2] = {NULL, "gfx942"};
  for (int i = 0; i < 2; ++i) {
    if (ingot_context_create_host(archs[i], &g_ctx[i]) != INGOT_OK ||
        ingot_context_open_pack(g_ctx[i], pack) != INGOT_OK) {
      fprintf(stderr, "fuzz_match: cannot open %s: %s\n", pack, g_ctx[i] ? ingot_context_last_error(g_ctx[i]) : "");
      exit(2);
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  ingot_attention_graph g;
  if (data[0] & 1) {
    char err[512];
    if (ingot_graph_from_json((const char *)data + 1, size - 1, &g, err, sizeof err) != INGOT_OK) return 0;
  } else {
    fz_reader r = {data + 1, size - 1};
    fz_decode_graph(&r, &g);
  }
  ingot_context *ctx = g_ctx[(data[0] >> 1) & 1];
  const size_t kernels = ingot_context_kernel_count(ctx);
  ingot_plan *plan = NULL;
  ingot_status s = ingot_plan_create(ctx, &g, &plan);
  FZ_REQUIRE(ingot_context_kernel_count(ctx) == kernels, "kernel count changed");
  if (s != INGOT_OK) {
    FZ_REQUIRE(plan == NULL, "plan set on failure");
    FZ_REQUIRE(s == INGOT_INVALID_ARGUMENT || s == INGOT_NO_MATCH, "status %s: %s", ingot_status_string(s),
               ingot_context_last_error(ctx));
    FZ_REQUIRE(ingot_context_last_error(ctx)[0] != 0, "no message for %s", ingot_status_string(s));
    if (s == INGOT_NO_MATCH) {
      const char *report = ingot_context_decline_report(ctx);
      FZ_REQUIRE(report[0] != 0, "NO_MATCH without a decline report");
      /* The summary lines ("no kernel has F V (... kernels exist for ...)") come first, whole. */
      int past_summary = 0;
      for (const char *line = report; *line;) {
        const char *end = strchr(line, '\n');
        FZ_REQUIRE(end != NULL, "report line without a newline: [%s]", line);
        if (end == NULL) break;
        const int summary = strncmp(line, "no kernel has ", 14) == 0;
        FZ_REQUIRE(!(summary && past_summary), "a summary line after a per-kernel line:\n%s", report);
        if (summary)
          FZ_REQUIRE(end - line > 2 && end[-1] == ')' && strstr(line, "kernels exist for ") != NULL &&
                         strstr(line, "kernels exist for ") < end,
                     "summary line [%.*s]", (int)(end - line), line);
        past_summary = past_summary || !summary;
        line = end + 1;
      }
    }
    if (s == INGOT_INVALID_ARGUMENT)
      FZ_REQUIRE(strncmp(ingot_context_last_error(ctx), "graph", 5) == 0, "message [%s]",
                 ingot_context_last_error(ctx));
    return 0;
  }
  FZ_REQUIRE(plan != NULL, "OK without a plan");
  const ingot_dispatch_plan *d = ingot_plan_dispatch_info(plan);
  fz_check_plan(ingot_ad_meta(plan->kernel), &g, &plan->caps, d);
  fz_check_kernel_inputs(ingot_ad_meta(plan->kernel), &g);
  FZ_REQUIRE(ingot_plan_workspace_size(plan) == d->workspace_bytes, "workspace size");
  FZ_REQUIRE(ingot_plan_num_splits(plan) == d->num_splits && ingot_plan_launch_count(plan) == d->num_launches,
             "accessors");
  FZ_REQUIRE(strcmp(ingot_plan_kernel_name(plan), plan->kernel->name) == 0, "kernel name");
  /* The kernel's metadata admits the graph (the matcher's UMDs said so). */
  FZ_REQUIRE(ingot_ad_meta(plan->kernel)->head_dim == g.q.dims[3] && g.q.dims[2] <= ingot_ad_meta(plan->kernel)->max_sq &&
                 ingot_ad_meta(plan->kernel)->paged == (g.kv_layout == INGOT_KV_PAGED),
             "kernel %s chosen for D %lld Sq %lld", plan->kernel->name, (long long)g.q.dims[3],
             (long long)g.q.dims[2]);
  /* Execute on a host context checks its arguments, then answers UNAVAILABLE. */
  char err[512];
  ingot_attention_buffers none = {0};
  FZ_REQUIRE(ingot_plan_execute_ex(plan, NULL, &none, NULL, 0, err, sizeof err) == INGOT_INVALID_ARGUMENT,
             "execute without buffers: %s", err);
  ingot_plan_destroy(plan);
  return 0;
}
