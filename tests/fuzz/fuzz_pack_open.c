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
 * The packaged KDP pins every other descriptor by sha256, so a changed UMD
 * would always stop at its hash: unless bit 0x40 of the selector byte is set
 * (then the stale record is what is tested), the harness records the new
 * file's hash in the KDP, as a consistent edit would. The last file is the
 * KDP's detached Ed25519 signature (.sig, signed at start with a key made
 * here); with bit 0x20 the context requires it, and the harness re-signs the
 * KDP as it now is (unless bit 0x40, or the input is the .sig itself).
 * Bit 0x80 picks a gfx942 context instead of an any-arch one.
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

#include <openssl/evp.h>

#include "fuzz_common.h"
#include "ad_family.h"

#define MAX_FILES 32
#define SELECT_STALE 0x40  /* leave the KDP's descriptor record and the signature as they were */
#define SELECT_SIGNED 0x20 /* the context requires the signature */

static char g_dir[4096];
static int g_num_files;
static char *g_names[MAX_FILES];
static unsigned char *g_pristine[MAX_FILES];
static size_t g_pristine_size[MAX_FILES];
static int g_kdp = -1, g_sig = -1; /* indexes of the KDP and its .sig among the files */
static EVP_PKEY *g_key;
static unsigned char g_pub[32];

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

static void cleanup(void) {
  remove_tree(g_dir);
  EVP_PKEY_free(g_key);
}

static char *path_of(int i, char *out, size_t size) {
  snprintf(out, size, "%s/%s", g_dir, g_names[i]);
  return out;
}

/* The Ed25519 signature of the KDP as it is on disk, written as its .sig. */
static void sign_kdp(void) {
  char p[4096];
  size_t n = 0, sig_len = 64;
  unsigned char *data = slurp(path_of(g_kdp, p, sizeof p), &n), sig[64];
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (data == NULL || md == NULL || EVP_DigestSignInit(md, NULL, NULL, NULL, g_key) != 1 ||
      EVP_DigestSign(md, sig, &sig_len, data, n) != 1)
    die("cannot sign", p);
  EVP_MD_CTX_free(md);
  free(data);
  if (!spill(path_of(g_sig, p, sizeof p), sig, sig_len)) die("cannot write", p);
}

/* Records data's sha256 as file `which`'s in the KDP (from its pristine bytes). */
static void record_hash(int which, const uint8_t *data, size_t size) {
  unsigned char md[32];
  unsigned len = 0;
  char hex[65], p[4096];
  if (EVP_Digest(data, size, md, &len, EVP_sha256(), NULL) != 1) die("sha256 failed for", g_names[which]);
  for (int i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  json_t *kdp = json_loadb((const char *)g_pristine[g_kdp], g_pristine_size[g_kdp], 0, NULL);
  if (kdp == NULL) die("cannot parse the pristine", g_names[g_kdp]);
  json_object_set_new(json_object_get(kdp, "descriptors"), g_names[which], json_string(hex));
  if (json_dump_file(kdp, path_of(g_kdp, p, sizeof p), JSON_INDENT(2) | JSON_SORT_KEYS) != 0) die("cannot write", p);
  json_decref(kdp);
}

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
  if (g_num_files == 0 || g_num_files == MAX_FILES) die("no or too many *.json descriptors in", pack);
  qsort(g_names, (size_t)g_num_files, sizeof g_names[0], cmp_str);
  for (int i = 0; i < g_num_files; ++i) {
    size_t n = strlen(g_names[i]);
    if (n > 9 && !strcmp(g_names[i] + n - 9, ".kdp.json")) g_kdp = i;
  }
  if (g_kdp < 0) die("no *.kdp.json in", pack);
  /* the signature last, so that the seeds' selector bytes of the descriptors keep their meaning */
  char sig_name[4096];
  snprintf(sig_name, sizeof sig_name, "%s.sig", g_names[g_kdp]);
  g_sig = g_num_files;
  g_names[g_num_files++] = strdup(sig_name);
  EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
  size_t pub_len = sizeof g_pub;
  if (kc == NULL || EVP_PKEY_keygen_init(kc) != 1 || EVP_PKEY_keygen(kc, &g_key) != 1 ||
      EVP_PKEY_get_raw_public_key(g_key, g_pub, &pub_len) != 1)
    die("cannot make an Ed25519 key for", pack);
  EVP_PKEY_CTX_free(kc);
  sign_kdp();
  for (int i = 0; i < g_num_files; ++i) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, g_names[i]);
    if ((g_pristine[i] = slurp(p, &g_pristine_size[i])) == NULL) die("cannot read", p);
  }
  /* The pristine pack must open, signed, or the harness tests nothing. */
  ingot_context *ctx = NULL;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK || ingot_context_require_signature(ctx, g_pub, 32) != INGOT_OK ||
      ingot_context_open_pack(ctx, g_dir) != INGOT_OK) {
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
  const int which = (data[0] & 0x1f) % g_num_files;
  const int stale = (data[0] & SELECT_STALE) != 0, signed_ctx = (data[0] & SELECT_SIGNED) != 0;
  char path[4096];
  path_of(which, path, sizeof path);
  if (!spill(path, data + 1, size - 1)) die("cannot write", path);
  if (!stale && which != g_kdp && which != g_sig) record_hash(which, data + 1, size - 1);
  if (!stale && which != g_sig) sign_kdp();

  ingot_context *ctx = NULL;
  FZ_REQUIRE(ingot_context_create_host((data[0] & 0x80) ? "gfx942" : NULL, &ctx) == INGOT_OK, "host context");
  if (signed_ctx) FZ_REQUIRE(ingot_context_require_signature(ctx, g_pub, 32) == INGOT_OK, "require_signature");
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
      fz_check_plan(ingot_ad_meta(plan->kernel), &g, &plan->caps, ingot_plan_dispatch_info(plan));
      ingot_plan_destroy(plan);
    } else {
      FZ_REQUIRE(plan == NULL && ingot_context_last_error(ctx)[0] != 0, "plan failure without a message");
    }
  }
  ingot_context_destroy(ctx);
  /* restore the file, the KDP's record and the signature */
  int restore[3] = {which, g_kdp, g_sig};
  for (int i = 0; i < 3; ++i)
    if (!spill(path_of(restore[i], path, sizeof path), g_pristine[restore[i]], g_pristine_size[restore[i]]))
      die("cannot restore", path);
  return 0;
}
