/* test_loader.c: a copy of the test pack with one thing corrupted is refused
 * with INGOT_INVALID_PACK and a message naming the file, the JSON path and
 * the problem; the context is left as it was (no kernel added) and still
 * opens the intact pack and plans. usage: test_loader PACKDIR */
#include "test_util.h"

#include <jansson.h>

static const char *g_pack;

static json_t *load_json(const char *dir, const char *file) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  json_error_t e;
  json_t *j = json_load_file(p, 0, &e);
  if (!j) fprintf(stderr, "%s: %s\n", p, e.text);
  return j;
}

static void save_json(const char *dir, const char *file, json_t *j) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  CHECK(json_dump_file(j, p, JSON_INDENT(2)) == 0);
  json_decref(j);
}

/* The descriptor file names of the pack, and the first kernel's first object. */
static const char *const kFiles[] = {"test_seed.kdp.json", "test_seed.ued.json", "test_seed.kmd.json",
                                     "test_seed.udd.json", "test_seed.graph.umd.json",
                                     "test_seed_bf16_d128_g4_sq1_contig_w4t16.umd.json"};
#define NUM_FILES (sizeof(kFiles) / sizeof(kFiles[0]))

static json_t *first_object(json_t *kdp, const char **arch) {
  json_t *objs = json_object_get(json_object_get(json_array_get(json_object_get(kdp, "kernelDescriptors"), 0),
                                                 "kernel_source"), "objects");
  size_t n = json_object_size(objs), pick = (size_t)rnd_range(0, (int64_t)n - 1), i = 0;
  const char *key;
  json_t *v;
  json_object_foreach(objs, key, v) {
    if (i++ == pick) {
      *arch = key;
      return v;
    }
  }
  return NULL;
}

/* Opens the corrupted copy on a fresh context: refused with `status` and a
 * message holding every needle; the kernel count stays 0; then the intact
 * pack opens on the same context and the seed graph plans. */
static void expect_refused(const char *dir, const char *what, ingot_status status, const char *n1, const char *n2) {
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host(NULL, &ctx), INGOT_OK);
  if (!ctx) return;
  ingot_status s = ingot_context_open_pack(ctx, dir);
  if (s != status) fprintf(stderr, "case '%s': %s\n", what, ingot_context_last_error(ctx));
  CHECK_STATUS(s, status);
  if (n1) CHECK_HAS(ingot_context_last_error(ctx), n1);
  if (n2) CHECK_HAS(ingot_context_last_error(ctx), n2);
  CHECK(ingot_context_kernel_count(ctx) == 0);
  CHECK_STATUS(ingot_context_open_pack(ctx, g_pack), INGOT_OK);
  CHECK(!strcmp(ingot_context_last_error(ctx), ""));
  CHECK(ingot_context_kernel_count(ctx) == 1);
  ingot_attention_graph g = seed_graph(rnd_range(64, 65536), INGOT_MASK_NONE);
  ingot_plan *plan = NULL;
  CHECK_STATUS(ingot_plan_create(ctx, &g, &plan), INGOT_OK);
  ingot_plan_destroy(plan);
  ingot_context_destroy(ctx);
}

static void test_intact_copy(void) {
  char dir[1024];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  ingot_context *ctx = NULL;
  CHECK_STATUS(ingot_context_create_host(NULL, &ctx), INGOT_OK);
  CHECK_STATUS(ingot_context_open_pack(ctx, dir), INGOT_OK);
  CHECK(ingot_context_kernel_count(ctx) == 1);
  /* the same pack again: refused, nothing added */
  CHECK_STATUS(ingot_context_open_pack(ctx, g_pack), INGOT_INVALID_PACK);
  CHECK_HAS(ingot_context_last_error(ctx), "is already open on this context");
  CHECK(ingot_context_kernel_count(ctx) == 1);
  ingot_context_destroy(ctx);
  remove_pack_copy(dir);
}

static void test_truncated_json(void) {
  char dir[1024], p[4096];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  const char *file = kFiles[rnd_range(0, NUM_FILES - 1)];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  struct stat st;
  CHECK(stat(p, &st) == 0);
  FILE *f = fopen(p, "rb");
  char *text = malloc((size_t)st.st_size + 1);
  size_t n = fread(text, 1, (size_t)st.st_size, f);
  fclose(f);
  text[n] = 0;
  size_t last = (size_t)(strrchr(text, '}') - text); /* cut at or before the closing brace */
  size_t cut = (size_t)rnd_range(1, (int64_t)last);
  CHECK(truncate(p, (off_t)cut) == 0);
  free(text);
  expect_refused(dir, "truncated JSON", INGOT_INVALID_PACK, file, "invalid JSON");
  remove_pack_copy(dir);
}

static void test_wrong_type(void) {
  char dir[1024];
  for (int c = 0; c < 5; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    const char *file = NULL, *path = NULL, *allowed = NULL;
    json_t *j = NULL;
    switch (c) {
    case 0:
      file = "test_seed.kdp.json";
      j = load_json(dir, file);
      json_object_set_new(json_array_get(json_object_get(j, "kernelDescriptors"), 0), "priority", json_string("high"));
      path = "test_seed.kdp.json: kernelDescriptors[0].priority: a string";
      allowed = "allowed: an integer";
      break;
    case 1:
      file = "test_seed.udd.json";
      j = load_json(dir, file);
      json_object_set_new(j, "kernarg_size", json_string("196"));
      path = "test_seed.udd.json: kernarg_size: a string";
      allowed = "allowed: an integer";
      break;
    case 2:
      file = "test_seed.kdp.json";
      j = load_json(dir, file);
      json_object_set_new(json_object_get(json_array_get(json_object_get(j, "kernelDescriptors"), 0), "metadata"),
                          "head_dim", json_real(128.0));
      path = "test_seed.kdp.json: kernelDescriptors[0].metadata.head_dim: a real number";
      allowed = "allowed: int";
      break;
    case 3:
      file = "test_seed.graph.umd.json";
      j = load_json(dir, file);
      json_object_set_new(j, "constraints", json_object());
      path = "test_seed.graph.umd.json: constraints: an object";
      allowed = "allowed: a list";
      break;
    default:
      file = "test_seed_bf16_d128_g4_sq1_contig_w4t16.umd.json";
      j = load_json(dir, file);
      json_object_set_new(json_array_get(json_object_get(j, "constraints"), 0), "value", json_integer(16));
      path = "test_seed_bf16_d128_g4_sq1_contig_w4t16.umd.json: constraints[0]: value";
      allowed = "allowed: a string, the type of dtype";
      break;
    }
    save_json(dir, file, j);
    expect_refused(dir, "wrong field type", INGOT_INVALID_PACK, path, allowed);
    remove_pack_copy(dir);
  }
}

static void test_unknown_version(void) {
  char dir[1024], want[256];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  const char *file = kFiles[rnd_range(0, NUM_FILES - 1)];
  json_t *j = load_json(dir, file);
  char version[16];
  snprintf(version, sizeof version, "%d.%d", (int)rnd_range(2, 9), (int)rnd_range(0, 9));
  json_object_set_new(j, "version", json_string(version));
  save_json(dir, file, j);
  snprintf(want, sizeof want, "%s: version: \"%s\" (allowed: \"1.0\")", file, version);
  expect_refused(dir, "unknown version", INGOT_INVALID_PACK, want, NULL);
  remove_pack_copy(dir);
}

static void random_uuid(char out[37]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 36; ++i) out[i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[rnd() % 16];
  out[36] = 0;
}

static void test_dangling_id(void) {
  char dir[1024], id[37], want[256];
  for (int c = 0; c < 4; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    random_uuid(id);
    const char *file = "test_seed.kdp.json", *path = NULL;
    json_t *j = load_json(dir, file);
    json_t *kd = json_array_get(json_object_get(j, "kernelDescriptors"), 0);
    switch (c) {
    case 0: json_object_set_new(j, "engine", json_string(id)); path = "engine"; break;
    case 1: json_object_set_new(j, "dispatch", json_string(id)); path = "dispatch"; break;
    case 2: json_array_set_new(json_object_get(j, "matchers"), 0, json_string(id)); path = "matchers[0]"; break;
    default:
      json_array_set_new(json_object_get(kd, "matchers"), 0, json_string(id));
      path = "kernelDescriptors[0].matchers[0]";
      break;
    }
    save_json(dir, file, j);
    snprintf(want, sizeof want, "test_seed.kdp.json: %s: dangling id \"%s\"", path, id);
    expect_refused(dir, "dangling id", INGOT_INVALID_PACK, want, NULL);
    remove_pack_copy(dir);
  }
  /* UED.metadata -> KMD */
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  random_uuid(id);
  json_t *j = load_json(dir, "test_seed.ued.json");
  json_object_set_new(j, "metadata", json_string(id));
  save_json(dir, "test_seed.ued.json", j);
  snprintf(want, sizeof want, "test_seed.ued.json: metadata: dangling id \"%s\"", id);
  expect_refused(dir, "dangling KMD id", INGOT_INVALID_PACK, want, NULL);
  remove_pack_copy(dir);
}

static void test_duplicate_id(void) {
  char dir[1024];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  /* give a random descriptor the id of another one */
  size_t a = (size_t)rnd_range(1, NUM_FILES - 1), b = (size_t)rnd_range(0, (int64_t)a - 1);
  json_t *src = load_json(dir, kFiles[b]), *dst = load_json(dir, kFiles[a]);
  json_object_set(dst, "id", json_object_get(src, "id"));
  json_decref(src);
  save_json(dir, kFiles[a], dst);
  expect_refused(dir, "duplicate id", INGOT_INVALID_PACK, "duplicate id", NULL);
  remove_pack_copy(dir);
  /* a kernel with the id of a descriptor */
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  json_t *kdp = load_json(dir, "test_seed.kdp.json"), *ued = load_json(dir, "test_seed.ued.json");
  json_object_set(json_array_get(json_object_get(kdp, "kernelDescriptors"), 0), "id", json_object_get(ued, "id"));
  json_decref(ued);
  save_json(dir, "test_seed.kdp.json", kdp);
  expect_refused(dir, "duplicate kernel id", INGOT_INVALID_PACK,
                 "test_seed.kdp.json: kernelDescriptors[0].id: duplicate id", "UED test_seed.ued.json");
  remove_pack_copy(dir);
}

static void test_flipped_byte(void) {
  char dir[1024], p[4096];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  json_t *kdp = load_json(dir, "test_seed.kdp.json");
  const char *arch = NULL;
  json_t *obj = first_object(kdp, &arch);
  snprintf(p, sizeof p, "%s/%s", dir, json_string_value(json_object_get(obj, "path")));
  struct stat st;
  CHECK(stat(p, &st) == 0 && st.st_size > 0);
  FILE *f = fopen(p, "r+b");
  long at = (long)rnd_range(0, st.st_size - 1);
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ (int)rnd_range(1, 255), f);
  fclose(f);
  char want[256];
  snprintf(want, sizeof want, "kernel_source.objects.%s.sha256", arch);
  expect_refused(dir, "flipped byte", INGOT_INVALID_PACK, want, "hashes to");
  json_decref(kdp);
  remove_pack_copy(dir);
}

static void test_signature_mismatch(void) {
  char dir[1024], want[256];
  for (int c = 0; c < 4; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    json_t *kdp = load_json(dir, "test_seed.kdp.json");
    const char *arch = NULL;
    json_t *obj = first_object(kdp, &arch);
    json_t *sig = json_object_get(obj, "signature");
    size_t i = (size_t)rnd_range(0, (int64_t)json_array_size(sig) - 1);
    json_t *arg = json_array_get(sig, i);
    snprintf(want, sizeof want, "kernel_source.objects.%s.signature[%zu]: kind", arch, i);
    const char *needle2 = "disagrees with the UDD";
    switch (c) {
    case 0: json_object_set_new(arg, "size", json_integer(json_integer_value(json_object_get(arg, "size")) == 8 ? 4 : 8)); break;
    case 1: json_object_set_new(arg, "offset", json_integer(json_integer_value(json_object_get(arg, "offset")) + 4)); break;
    case 2:
      json_object_set_new(arg, "kind", json_string(strcmp(json_string_value(json_object_get(arg, "kind")), "by_value")
                                                       ? "by_value" : "global_buffer"));
      break;
    default: /* one argument fewer */
      json_array_remove(sig, json_array_size(sig) - 1);
      snprintf(want, sizeof want, "kernel_source.objects.%s.signature: %zu arguments", arch, json_array_size(sig));
      needle2 = "as the UDD's signature";
      break;
    }
    save_json(dir, "test_seed.kdp.json", kdp);
    expect_refused(dir, "signature", INGOT_INVALID_PACK, want, needle2);
    remove_pack_copy(dir);
  }
}

static void test_path_escape(void) {
  char dir[1024];
  static const char *const kBad[] = {"../outside.co", "code/../../outside.co", "/etc/passwd", "code\\gfx942\\x.co"};
  for (int c = 0; c < 5; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    json_t *kdp = load_json(dir, "test_seed.kdp.json");
    const char *arch = NULL;
    json_t *obj = first_object(kdp, &arch);
    const char *needle = "leaves the pack folder";
    if (c < 4) {
      json_object_set_new(obj, "path", json_string(kBad[c]));
    } else { /* a symbolic link inside the folder that points outside it */
      char target[4096], link[4096];
      snprintf(target, sizeof target, "%s/../outside.co", dir);
      snprintf(link, sizeof link, "%s/code/link.co", dir);
      char src[4096];
      snprintf(src, sizeof src, "%s/%s", dir, json_string_value(json_object_get(obj, "path")));
      CHECK(copy_file(src, target));
      CHECK(symlink(target, link) == 0);
      json_object_set_new(obj, "path", json_string("code/link.co"));
      needle = "outside the pack folder";
    }
    char want[256]; /* before saving: arch lives in kdp */
    snprintf(want, sizeof want, "kernel_source.objects.%s.path", arch);
    save_json(dir, "test_seed.kdp.json", kdp);
    expect_refused(dir, "path escape", INGOT_INVALID_PACK, want, needle);
    remove_pack_copy(dir);
  }
}

static void test_limits(void) {
  /* a descriptor over 4 MiB: LIMIT_EXCEEDED, however valid its JSON */
  char dir[1024], p[4096];
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  const char *file = kFiles[rnd_range(0, NUM_FILES - 1)];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  FILE *f = fopen(p, "ab");
  for (int i = 0; i < (4 << 20) / 64 + 1; ++i) fputs("                                                               \n", f);
  fclose(f);
  expect_refused(dir, "descriptor size", INGOT_LIMIT_EXCEEDED, file, "allowed: at most 4194304 bytes");
  remove_pack_copy(dir);
  /* a string over 256 bytes */
  CHECK(copy_pack(g_pack, dir, sizeof dir));
  json_t *kdp = load_json(dir, "test_seed.kdp.json");
  char name[300];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = 0;
  json_object_set_new(kdp, "name", json_string(name));
  save_json(dir, "test_seed.kdp.json", kdp);
  expect_refused(dir, "long string", INGOT_LIMIT_EXCEEDED, "test_seed.kdp.json: name: string of 299 bytes",
                 "at most 256 bytes");
  remove_pack_copy(dir);
}

static void test_metadata(void) {
  char dir[1024];
  for (int c = 0; c < 2; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    json_t *kdp = load_json(dir, "test_seed.kdp.json");
    json_t *md = json_object_get(json_array_get(json_object_get(kdp, "kernelDescriptors"), 0), "metadata");
    if (c == 0) json_object_del(md, "head_dim"); /* mandatory: no default in the KMD */
    else json_object_set_new(md, "tile_size", json_integer(64));
    save_json(dir, "test_seed.kdp.json", kdp);
    if (c == 0)
      expect_refused(dir, "missing metadata", INGOT_INVALID_PACK, "kernelDescriptors[0].metadata: missing field \"head_dim\"",
                     NULL);
    else
      expect_refused(dir, "unknown metadata", INGOT_INVALID_PACK, "kernelDescriptors[0].metadata.tile_size: unknown metadata field",
                     "head_dim");
    remove_pack_copy(dir);
  }
}

/* A code object's dynamic LDS per entry point: an object of integers from 0 to
 * what the arch lets one workgroup take at launch; the largest is accepted. */
static void test_dynamic_lds(void) {
  char dir[1024], want[256], allowed[64];
  for (int c = 0; c < 6; ++c) {
    CHECK(copy_pack(g_pack, dir, sizeof dir));
    json_t *kdp = load_json(dir, "test_seed.kdp.json");
    const char *arch = NULL;
    json_t *obj = first_object(kdp, &arch);
    const int64_t max = !strcmp(arch, "sm_90") ? 232448 : !strcmp(arch, "gfx950") ? 163840 : 65536;
    snprintf(allowed, sizeof allowed, "(allowed: 0..%lld)", (long long)max);
    snprintf(want, sizeof want, "kernel_source.objects.%s.dynamic_lds", arch);
    json_t *dyn = json_object();
    const char *needle = allowed;
    switch (c) {
    case 0: json_decref(dyn); dyn = json_integer(65536); needle = "an integer (allowed: an object {entry point: bytes})"; break;
    case 1: json_object_set_new(dyn, "reduce", json_integer(1024)); needle = "entry point \"reduce\" is not in the UDD (allowed: split, merge)"; break;
    case 2: json_object_set_new(dyn, "split", json_integer(-16 * rnd_range(1, 100))); break;
    case 3: json_object_set_new(dyn, "merge", json_integer(max + 16 * rnd_range(1, 100))); break;
    case 4: json_object_set_new(dyn, "split", json_string("98304")); needle = "a string (allowed: an integer in 0.."; break;
    default: json_object_set_new(dyn, rnd() % 2 ? "split" : "merge", json_integer(max)); break; /* accepted */
    }
    json_object_set_new(obj, "dynamic_lds", dyn);
    save_json(dir, "test_seed.kdp.json", kdp);
    if (c < 5) {
      expect_refused(dir, "dynamic lds", INGOT_INVALID_PACK, want, needle);
    } else {
      ingot_context *ctx = NULL;
      CHECK_STATUS(ingot_context_create_host(NULL, &ctx), INGOT_OK);
      CHECK_STATUS(ingot_context_open_pack(ctx, dir), INGOT_OK);
      CHECK(ingot_context_kernel_count(ctx) == 1);
      ingot_context_destroy(ctx);
    }
    remove_pack_copy(dir);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_loader PACKDIR\n");
    return 2;
  }
  g_pack = argv[1];
  test_seed_rng();
  test_intact_copy(); /* accept first */
  if (g_failures) return test_finish("test_loader (the intact copy failed; negatives not run)");
  test_truncated_json();
  test_wrong_type();
  test_unknown_version();
  test_dangling_id();
  test_duplicate_id();
  test_flipped_byte();
  test_signature_mismatch();
  test_path_escape();
  test_limits();
  test_metadata();
  test_dynamic_lds();
  return test_finish("test_loader");
}
