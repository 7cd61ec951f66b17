/* test_api.c: API misuse (NULL handles and pointers, bad enums, structurally
 * bad graphs, execute argument checks, workspace too small), the graph JSON
 * form (random round trips, field-naming errors, the examples), status and
 * version strings. usage: test_api PACKDIR EXAMPLES_DIR */
#include "test_util.h"

#include <math.h>

static const char *g_pack, *g_examples;

static ingot_context *open_ctx(void) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host("gfx942", &ctx), INGOT_OK);
  if (!ctx) exit(1);
  if (ingot_context_open_pack(ctx, g_pack) != INGOT_OK) {
    fprintf(stderr, "cannot open %s: %s\n", g_pack, ingot_context_last_error(ctx));
    exit(1);
  }
  return ctx;
}

static void test_strings(void) {
  for (int a = 0; a <= 9; ++a) {
    const char *s = ingot_status_string((ingot_status)a);
    CHECK(s != NULL && s[0] != 0 && strcmp(s, "UNKNOWN_STATUS") != 0);
    for (int b = 0; b < a; ++b) CHECK(strcmp(s, ingot_status_string((ingot_status)b)) != 0);
  }
  CHECK(!strcmp(ingot_status_string((ingot_status)1234), "UNKNOWN_STATUS"));
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
  CHECK(!strcmp(ingot_version_string(), v));
}

static void test_null_handles(void) {
  ingot_context *ctx = (ingot_context *)&g_rng; /* garbage the call must clear */
  CHECK_STATUS(ingot_context_create_host(NULL, NULL), INGOT_INVALID_ARGUMENT);
  CHECK_STATUS(ingot_context_create_host("SM 90", &ctx), INGOT_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
  ctx = (ingot_context *)&g_rng;
  CHECK_STATUS(ingot_context_create((ingot_backend)7, 0, &ctx), INGOT_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
  char err[256] = "x";
  ctx = (ingot_context *)&g_rng;
  CHECK_STATUS(ingot_context_create_ex(INGOT_BACKEND_CUDA, -1, &ctx, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
  CHECK_HAS(err, "ordinal = -1");
  /* No driver on the build machines: UNAVAILABLE, no context, a reason. */
  ctx = (ingot_context *)&g_rng;
  ingot_status s = ingot_context_create_ex(INGOT_BACKEND_CUDA, 0, &ctx, err, sizeof err);
  if (s == INGOT_OK) {
    CHECK(ctx != NULL);
    ingot_context_destroy(ctx);
  } else {
    CHECK(ctx == NULL);
    CHECK(err[0] != 0);
    CHECK_HAS(err, "cuda");
  }
  ingot_context_destroy(NULL);
  CHECK(!strcmp(ingot_context_last_error(NULL), ""));
  CHECK(!strcmp(ingot_context_decline_report(NULL), ""));
  CHECK(ingot_context_kernel_count(NULL) == 0);
  CHECK_STATUS(ingot_context_open_pack(NULL, g_pack), INGOT_INVALID_ARGUMENT);
  ingot_plan *plan = (ingot_plan *)&g_rng;
  ingot_attention_graph g = seed_graph(4096, INGOT_MASK_NONE);
  CHECK_STATUS(ingot_plan_create(NULL, &g, &plan), INGOT_INVALID_ARGUMENT);
  CHECK(plan == NULL);
  ingot_plan_destroy(NULL);
  CHECK(ingot_plan_kernel_name(NULL) == NULL && ingot_plan_workspace_size(NULL) == 0);
  CHECK(ingot_plan_num_splits(NULL) == 0 && ingot_plan_launch_count(NULL) == 0);

  ctx = open_ctx();
  CHECK(!strcmp(ingot_context_arch(ctx), "gfx942"));
  CHECK(ingot_context_compute_units(ctx) == 304); /* a host context plans for its arch's product: MI300X */
  CHECK_STATUS(ingot_context_open_pack(ctx, NULL), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(ingot_context_last_error(ctx), "pack_dir is NULL");
  char missing[64];
  snprintf(missing, sizeof missing, "/nonexistent/pack-%llu", (unsigned long long)(rnd() % 100000));
  CHECK_STATUS(ingot_context_open_pack(ctx, missing), INGOT_IO_ERROR);
  CHECK_HAS(ingot_context_last_error(ctx), missing);
  CHECK(ingot_context_kernel_count(ctx) == 1);
  CHECK_STATUS(ingot_plan_create(ctx, NULL, &plan), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(ingot_context_last_error(ctx), "graph is NULL");
  CHECK_STATUS(ingot_plan_create(ctx, &g, NULL), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(ingot_context_last_error(ctx), "out is NULL");
  ingot_context_destroy(ctx);
}

/* One structural problem at a time: INVALID_ARGUMENT naming the field. */
static void test_bad_graphs(void) {
  ingot_context *ctx = open_ctx();
  const int64_t cap = rnd_range(64, 65536);
  for (int c = 0; c < 10; ++c) {
    ingot_attention_graph g = seed_graph(cap, INGOT_MASK_NONE);
    const char *needle = NULL;
    switch (c) {
    case 0: g.q.rank = 3; needle = "q.rank = 3 (allowed: 4)"; break;
    case 1: g.o.dims[3] = 64; needle = "o.dims[3] = 64"; break;
    case 2: g.k.strides[(int)rnd_range(0, 3)] = 0; needle = "k.strides["; break;
    case 3: g.v.dtype = (ingot_dtype)99; needle = "v.dtype = 99"; break;
    case 4: g.capacity = cap + 1; needle = "k.dims[1] = "; break;
    case 5: g.mask = (ingot_mask)5; needle = "mask = 5"; break;
    case 6: g.seq_lens.dims[0] = 2; needle = "seq_lens.dims[0] = 2"; break;
    case 7: g.scale = NAN; needle = "scale"; break;
    case 8: g.q.dims[0] = -(int64_t)rnd_range(1, 100); needle = "q.dims[0] = -"; break;
    default: g.k.memory = INGOT_MEMORY_HOST; needle = "k.memory = host"; break;
    }
    ingot_plan *plan = (ingot_plan *)&g;
    CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_INVALID_ARGUMENT);
    CHECK(plan == NULL);
    CHECK_HAS(ingot_context_last_error(ctx), needle);
  }
  ingot_context_destroy(ctx);
}

static void test_execute_args(void) {
  ingot_context *ctx = open_ctx();
  ingot_attention_graph g = seed_graph(65536, INGOT_MASK_CAUSAL);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  if (!plan) {
    ingot_context_destroy(ctx);
    return;
  }
  const size_t need = ingot_plan_workspace_size(plan);
  CHECK(need > 0);
  /* Host context: never touches the pointers, so made-up aligned ones do. */
  ingot_attention_buffers b = {(const void *)0x10000, (const void *)0x20000, (const void *)0x30000,
                               (void *)0x40000, NULL, (const int32_t *)0x50000, NULL};
  void *ws = (void *)0x60000;
  char err[512];
  CHECK_STATUS(ingot_plan_execute_ex(NULL, NULL, &b, ws, need, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, "plan is NULL");
  CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, NULL, ws, need, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, "buffers is NULL");
  ingot_attention_buffers nb = b;
  const int which = (int)rnd_range(0, 4);
  const char *names[5] = {"buffers->q is NULL", "buffers->k is NULL", "buffers->v is NULL", "buffers->o is NULL",
                          "buffers->seq_lens is NULL"};
  if (which == 0) nb.q = NULL;
  if (which == 1) nb.k = NULL;
  if (which == 2) nb.v = NULL;
  if (which == 3) nb.o = NULL;
  if (which == 4) nb.seq_lens = NULL;
  CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &nb, ws, need, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, names[which]);
  nb = b;
  nb.v = (const void *)(0x30000 + 2 * rnd_range(1, 7)); /* 2-byte aligned, not 16 */
  CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &nb, ws, need, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, "buffers->v");
  CHECK_HAS(err, "16-byte");
  /* workspace: NULL, then one byte short, then random shortfalls */
  CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &b, NULL, 0, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_HAS(err, "workspace is NULL");
  char want[160];
  for (int i = 0; i < 4; ++i) {
    size_t given = i == 0 ? need - 1 : (size_t)rnd_range(0, (int64_t)need - 1);
    snprintf(want, sizeof want, "required: %zu bytes, given: %zu bytes", need, given);
    CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &b, ws, given, err, sizeof err), INGOT_INVALID_ARGUMENT);
    CHECK_HAS(err, want);
    CHECK_STATUS(ingot_plan_execute(plan, NULL, &b, ws, given), INGOT_INVALID_ARGUMENT);
  }
  /* every argument right: a host context cannot execute */
  CHECK_STATUS(ingot_plan_execute_ex(plan, NULL, &b, ws, need + (size_t)rnd_range(0, 4096), err, sizeof err),
               INGOT_UNAVAILABLE);
  CHECK_HAS(err, "host context");
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
}

/* ---- graph JSON ---------------------------------------------------------------- */

static const char *dtype_name(ingot_dtype d) {
  static const char *const n[] = {"?", "bf16", "fp16", "fp32", "int32", "int64"};
  return n[d];
}

static void append_tensor(char *buf, size_t size, const char *name, const ingot_tensor_desc *t, int strides) {
  size_t n = strlen(buf);
  n += (size_t)snprintf(buf + n, size - n, "\"%s\":{\"dtype\":\"%s\",\"dims\":[", name, dtype_name(t->dtype));
  for (int i = 0; i < t->rank; ++i) n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  n += (size_t)snprintf(buf + n, size - n, "]");
  if (strides) {
    n += (size_t)snprintf(buf + n, size - n, ",\"strides\":[");
    for (int i = 0; i < t->rank; ++i)
      n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->strides[i]);
    n += (size_t)snprintf(buf + n, size - n, "]");
  }
  snprintf(buf + n, size - n, ",\"memory\":\"%s\"},", t->memory == INGOT_MEMORY_HOST ? "host" : "device");
}

static int tensors_equal(const ingot_tensor_desc *a, const ingot_tensor_desc *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->memory != b->memory) return 0;
  for (int i = 0; i < a->rank; ++i)
    if (a->dims[i] != b->dims[i] || a->strides[i] != b->strides[i]) return 0;
  return 1;
}

static void test_graph_json_roundtrip(void) {
  for (int round = 0; round < 50; ++round) {
    const int64_t B = rnd_range(1, 4), Hkv = rnd_range(1, 8), Hq = Hkv * rnd_range(1, 8), Sq = rnd_range(1, 4);
    const int64_t D = 8 * rnd_range(1, 32), cap = rnd_range(1, 100000);
    ingot_attention_graph g = seed_graph(cap, rnd() % 2 ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE);
    const ingot_dtype dt = rnd() % 2 ? INGOT_DTYPE_BF16 : INGOT_DTYPE_FP16;
    const int64_t qd[4] = {B, Hq, Sq, D}, kd[4] = {B, cap, Hkv, D}, ld[3] = {B, Hq, Sq}, sd[1] = {B};
    set_tensor(&g.q, dt, 4, qd);
    set_tensor(&g.o, dt, 4, qd);
    set_tensor(&g.k, dt, 4, kd);
    set_tensor(&g.v, dt, 4, kd);
    set_tensor(&g.seq_lens, rnd() % 2 ? INGOT_DTYPE_INT32 : INGOT_DTYPE_INT64, 1, sd);
    g.seq_lens.memory = rnd() % 2 ? INGOT_MEMORY_HOST : INGOT_MEMORY_DEVICE;
    if (rnd() % 2) set_tensor(&g.lse, INGOT_DTYPE_FP32, 3, ld);
    for (int i = 0; i < 3; ++i) g.k.strides[i] += 8 * rnd_range(0, 2); /* padded */
    g.mask_align = rnd() % 2 ? INGOT_ALIGN_TOP_LEFT : INGOT_ALIGN_BOTTOM_RIGHT;
    g.scale = (float)rnd_range(1, 1000) / 1024.0f;
    char text[4096] = "{";
    append_tensor(text, sizeof text, "q", &g.q, (int)(rnd() % 2));
    append_tensor(text, sizeof text, "k", &g.k, 1);
    append_tensor(text, sizeof text, "v", &g.v, (int)(rnd() % 2));
    if (rnd() % 2) append_tensor(text, sizeof text, "o", &g.o, 0); /* else the default: like q */
    if (g.lse.rank) append_tensor(text, sizeof text, "lse", &g.lse, 1);
    append_tensor(text, sizeof text, "seq_lens", &g.seq_lens, 0);
    size_t n = strlen(text);
    snprintf(text + n, sizeof text - n, "\"capacity\":%lld,\"mask\":\"%s\",\"mask_align\":\"%s\",\"scale\":%.9g}",
             (long long)cap, g.mask ? "causal" : "none", g.mask_align ? "top_left" : "bottom_right", (double)g.scale);
    ingot_attention_graph p;
    char err[256];
    ingot_status s = ingot_graph_from_json(text, strlen(text), &p, err, sizeof err);
    CHECK_STATUS(s, INGOT_OK);
    if (s != INGOT_OK) {
      fprintf(stderr, "%s\n%s\n", text, err);
      continue;
    }
    CHECK(tensors_equal(&p.q, &g.q) && tensors_equal(&p.k, &g.k) && tensors_equal(&p.v, &g.v));
    CHECK(tensors_equal(&p.o, &g.o) && tensors_equal(&p.lse, &g.lse) && tensors_equal(&p.seq_lens, &g.seq_lens));
    CHECK(p.page_table.rank == 0 && p.kv_layout == INGOT_KV_CONTIGUOUS && p.capacity == cap);
    CHECK(p.mask == g.mask && p.mask_align == g.mask_align && p.scale == g.scale);
  }
}

static void test_graph_json_errors(void) {
  static const struct {
    const char *text, *needle;
  } kCases[] = {
      {"{\"q\":", "line 1"},
      {"[]", "allowed: an object"},
      {"{\"qq\":{}}", "graph JSON: qq: unknown key"},
      {"{\"q\":{\"dtype\":\"bf17\",\"dims\":[1,8,1,128]}}", "q.dtype: \"bf17\" (allowed: bf16, fp16"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,-1,128]}}", "q.dims[2]: -1 (allowed: an integer >= 1)"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,1,128],\"strides\":[1,2]}}", "q.strides: a list of 2"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,1,128],\"layout\":1}}", "q.layout: unknown key"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,1,128]},\"k\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},"
       "\"v\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},\"seq_lens\":{\"dtype\":\"int32\",\"dims\":[1]}}",
       "capacity: missing"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,1,128]},\"k\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},"
       "\"v\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},\"seq_lens\":{\"dtype\":\"int32\",\"dims\":[1]},"
       "\"capacity\":64,\"mask\":\"sliding\"}",
       "mask: \"sliding\" (allowed: none, causal)"},
      {"{\"q\":{\"dtype\":\"bf16\",\"dims\":[1,8,1,128]},\"k\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},"
       "\"v\":{\"dtype\":\"bf16\",\"dims\":[1,64,2,128]},\"seq_lens\":{\"dtype\":\"int32\",\"dims\":[1]},"
       "\"capacity\":65}",
       "k.dims[1] = 64 (allowed: 65, the capacity)"},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    ingot_attention_graph g;
    char err[512];
    CHECK_STATUS(ingot_graph_from_json(kCases[i].text, strlen(kCases[i].text), &g, err, sizeof err),
                 INGOT_INVALID_ARGUMENT);
    CHECK_HAS(err, kCases[i].needle);
  }
  char err[64];
  CHECK_STATUS(ingot_graph_from_json(NULL, 0, NULL, err, sizeof err), INGOT_INVALID_ARGUMENT);
  CHECK_STATUS(ingot_graph_from_json("{}", 2, NULL, NULL, 0), INGOT_INVALID_ARGUMENT); /* NULL err is fine */
}

static int read_text(const char *path, char **text, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  *text = malloc((size_t)size + 1);
  *n = fread(*text, 1, (size_t)size, f);
  fclose(f);
  return 1;
}

/* Every example parses; the seed examples plan on the test pack with their mask. */
static void test_examples(void) {
  DIR *d = opendir(g_examples);
  CHECK(d != NULL);
  if (!d) return;
  ingot_context *ctx = open_ctx();
  int seen = 0, seeds = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
    char path[4096], *text = NULL, err[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", g_examples, e->d_name);
    CHECK(read_text(path, &text, &n));
    ingot_attention_graph g;
    ingot_status s = ingot_graph_from_json(text, n, &g, err, sizeof err);
    if (s != INGOT_OK) fprintf(stderr, "%s: %s\n", path, err);
    CHECK_STATUS(s, INGOT_OK);
    free(text);
    ++seen;
    const int none = !strcmp(e->d_name, "seed_none.json"), causal = !strcmp(e->d_name, "seed_causal.json");
    if (s == INGOT_OK && (none || causal)) {
      ++seeds;
      CHECK(g.mask == (causal ? INGOT_MASK_CAUSAL : INGOT_MASK_NONE));
      ingot_plan *plan = NULL;
      CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
      ingot_plan_destroy(plan);
    }
  }
  closedir(d);
  CHECK(seen >= 2 && seeds == 2);
  ingot_context_destroy(ctx);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_api PACKDIR EXAMPLES_DIR\n");
    return 2;
  }
  g_pack = argv[1];
  g_examples = argv[2];
  test_seed_rng();
  test_strings();
  test_graph_json_roundtrip();
  test_examples();
  test_null_handles();
  test_bad_graphs();
  test_execute_args();
  test_graph_json_errors();
  return test_finish("test_api");
}
