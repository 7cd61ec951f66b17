/* fuzz_pack_open: opening a pack folder whose one descriptor file holds the
 * fuzz input. At start the test_seed pack (INGOT_FUZZ_SEED_PACK, or the
 * build's packs/test_seed) is copied, code objects included, into a temporary
 * folder; each input's first byte picks a descriptor file (by index in the
 * sorted list of *.json), the rest replaces that file's bytes, and a fresh
 * host context opens the folder. The open must not crash or leak; a failure
 * must leave a non-empty message and the kernel count unchanged; a success
 * must plan the seed graph (or decline it) with a consistent plan. The file
 * is restored after each input.
 *
 * INGOT_FUZZ_WRITE_SEEDS=DIR writes one seed per descriptor file (selector
 * byte + the pristine bytes) into DIR and exits: the CTest target seeds the
 * corpus from the pack this build produced, whose sha256s match its code. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "internal.h"

#define MAX_FILES 32

static char g_dir[4096];
static int g_num_files;
static char *g_names[MAX_FILES];
static unsigned char *g_pristine[MAX_FILES];
static size_t g_pristine_size[MAX_FILES];

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0, got;
  do {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      unsigned char *p = realloc(buf, cap);
      if (p == NULL) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = p;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  fclose(f);
  *size = n;
  return buf;
}

static int spill(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return 0;
  int ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "fuzz_pack_open: %s %s: %s\n", what, path, strerror(errno));
  exit(2);
}

/* Copies src into dst (a folder tree of regular files). */
static void copy_tree(const char *src, const char *dst) {
  DIR *d = opendir(src);
  if (d == NULL) die("cannot open", src);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char s[4096], t[4096];
    snprintf(s, sizeof s, "%s/%s", src, de->d_name);
    snprintf(t, sizeof t, "%s/%s", dst, de->d_name);
    struct stat st;
    if (stat(s, &st) != 0) die("cannot stat", s);
    if (S_ISDIR(st.st_mode)) {
      if (mkdir(t, 0700) != 0) die("cannot create", t);
      copy_tree(s, t);
    } else {
      size_t n = 0;
      unsigned char *b = slurp(s, &n);
      if (b == NULL || !spill(t, b, n)) die("cannot copy", s);
      free(b);
    }
  }
  closedir(d);
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static void cleanup(void) { remove_tree(g_dir); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *pack = getenv("INGOT_FUZZ_SEED_PACK");
  if (pack == NULL) pack = INGOT_FUZZ_SEED_PACK_DIR;
  const char *tmp = getenv("TMPDIR");
  struct stat st;
  if (tmp == NULL) tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/ingot_fuzz_pack_XXXXXX", tmp);
  if (mkdtemp(g_dir) == NULL) die("cannot create a folder in", tmp);
  atexit(cleanup);
  copy_tree(pack, g_dir);
  DIR *d = opendir(g_dir);
  if (d == NULL) die("cannot open", g_dir);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    if (n > 5 && !strcmp(de->d_name + n - 5, ".json") && g_num_files < MAX_FILES)
      g_names[g_num_files++] = strdup(de->d_name);
  }
  closedir(d);
  if (g_num_files == 0) die("no *.json descriptor in", pack);
  qsort(g_names, (size_t)g_num_files, sizeof g_names[0], cmp_str);
  for (int i = 0; i < g_num_files; ++i) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, g_names[i]);
    if ((g_pristine[i] = slurp(p, &g_pristine_size[i])) == NULL) die("cannot read", p);
  }
  /* The pristine pack must open, or the harness tests nothing. */
  ingot_context *ctx = NULL;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK || ingot_context_open_pack(ctx, g_dir) != INGOT_OK) {
    fprintf(stderr, "fuzz_pack_open: the pristine copy of %s does not open: %s\n", pack,
            ctx ? ingot_context_last_error(ctx) : "no context");
    exit(2);
  }
  ingot_context_destroy(ctx);
  const char *seeds = getenv("INGOT_FUZZ_WRITE_SEEDS");
  if (seeds != NULL) {
    for (int i = 0; i < g_num_files; ++i) {
      char p[4096];
      snprintf(p, sizeof p, "%s/pristine-%s", seeds, g_names[i]);
      unsigned char *b = malloc(g_pristine_size[i] + 1);
      if (b == NULL) die("out of memory for", p);
      b[0] = (unsigned char)i;
      memcpy(b + 1, g_pristine[i], g_pristine_size[i]);
      if (!spill(p, b, g_pristine_size[i] + 1)) die("cannot write", p);
      free(b);
    }
    printf("fuzz_pack_open: %d seeds written to %s\n", g_num_files, seeds);
    exit(0);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int which = data[0] % g_num_files;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_dir, g_names[which]);
  if (!spill(path, data + 1, size - 1)) die("cannot write", path);

  ingot_context *ctx = NULL;
  FZ_REQUIRE(ingot_context_create_host((data[0] & 0x80) ? "gfx942" : NULL, &ctx) == INGOT_OK, "host context");
  ingot_status s = ingot_context_open_pack(ctx, g_dir);
  const char *msg = ingot_context_last_error(ctx);
  if (s != INGOT_OK) {
    FZ_REQUIRE(msg[0] != 0, "open_pack failed with %s and no message", ingot_status_string(s));
    FZ_REQUIRE(ingot_context_kernel_count(ctx) == 0, "a failed open added %zu kernels",
               ingot_context_kernel_count(ctx));
    FZ_REQUIRE(s == INGOT_INVALID_PACK || s == INGOT_LIMIT_EXCEEDED || s == INGOT_IO_ERROR, "status %s: %s",
               ingot_status_string(s), msg);
  } else {
    FZ_REQUIRE(ingot_context_kernel_count(ctx) >= 1, "an open pack without kernels");
    /* A second open of the same folder on the same context is refused (duplicate
     * ids) and leaves the count alone. */
    size_t kernels = ingot_context_kernel_count(ctx);
    FZ_REQUIRE(ingot_context_open_pack(ctx, g_dir) == INGOT_INVALID_PACK, "the same pack opened twice");
    FZ_REQUIRE(ingot_context_kernel_count(ctx) == kernels, "a refused second open changed the count");
    /* Plan the seed graph against whatever metadata the pack now carries. */
    fz_reader none = {NULL, 0};
    ingot_attention_graph g;
    fz_decode_graph(&none, &g);
    ingot_plan *plan = NULL;
    ingot_status ps = ingot_plan_create(ctx, &g, &plan);
    if (ps == INGOT_OK) {
      fz_check_plan(&plan->kernel->meta, &g, &plan->caps, ingot_plan_dispatch_info(plan));
      ingot_plan_destroy(plan);
    } else {
      FZ_REQUIRE(plan == NULL && ingot_context_last_error(ctx)[0] != 0, "plan failure without a message");
    }
  }
  ingot_context_destroy(ctx);
  if (!spill(path, g_pristine[which], g_pristine_size[which])) die("cannot restore", path);
  return 0;
}
