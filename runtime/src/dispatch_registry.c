/* dispatch_registry.c: finds the dispatch stub a UDD's dispatch_symbol names.
 * First the stubs compiled into libingot, then (dispatch.h) the running
 * process's exported symbols, so a provider's or a test's own generated stub
 * is found too, and last the pack's own dispatch library,
 * <pack>/dispatch/<symbol>.so (`ingot build` ships it). Only names of the
 * generated form ingot_<pack>_dispatch are looked up, so a descriptor cannot
 * point the runtime at arbitrary data or files. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dispatch.h"

/* families/registry.c: the stubs compiled into libingot */
extern const ingot_dispatch_entry *const ingot_builtin_dispatch[];
extern const size_t ingot_num_builtin_dispatch;

static int generated_name(const char *s) {
  size_t n = strlen(s);
  const char *prefix = "ingot_", *suffix = "_dispatch";
  if (n <= strlen(prefix) + strlen(suffix) || n > 128) return 0;
  if (strncmp(s, prefix, strlen(prefix)) != 0 || strcmp(s + n - strlen(suffix), suffix) != 0) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

static int valid_entry(const ingot_dispatch_entry *e, const char *symbol) {
  return e != NULL && e->symbol != NULL && strcmp(e->symbol, symbol) == 0 && e->family != NULL && e->plan != NULL &&
         e->pack != NULL;
}

const ingot_dispatch_entry *ingot_dispatch_find(const char *symbol) {
  if (symbol == NULL) return NULL;
  for (size_t i = 0; i < ingot_num_builtin_dispatch; ++i)
    if (ingot_builtin_dispatch[i]->symbol != NULL && strcmp(ingot_builtin_dispatch[i]->symbol, symbol) == 0)
      return ingot_builtin_dispatch[i];
  if (!generated_name(symbol)) return NULL;
  const ingot_dispatch_entry *e = (const ingot_dispatch_entry *)dlsym(RTLD_DEFAULT, symbol);
  return valid_entry(e, symbol) ? e : NULL;
}

static const ingot_dispatch_entry *refuse(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const ingot_dispatch_entry *refuse(char *why, size_t why_size, const char *fmt, ...) {
  if (why != NULL && why_size > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
  }
  return NULL;
}

/* Pack libraries loaded so far, by sha256 and symbol: a pack opened again (or on
 * another context) gets the library already loaded, not one more copy (each load
 * is a memory file of its own, which dlopen cannot recognise as the same). */
#define MAX_PACK_LIBRARIES 64
static struct {
  char sha256[65];
  char symbol[129];
  const ingot_dispatch_entry *entry;
} g_loaded[MAX_PACK_LIBRARIES];
static int g_num_loaded;
static pthread_mutex_t g_loaded_mu = PTHREAD_MUTEX_INITIALIZER;

/* The entry of a library loaded already, or NULL; g_loaded_mu held. */
static const ingot_dispatch_entry *loaded_locked(const char *sha256_hex, const char *symbol) {
  for (int i = 0; i < g_num_loaded; ++i)
    if (!strcmp(g_loaded[i].sha256, sha256_hex) && !strcmp(g_loaded[i].symbol, symbol)) return g_loaded[i].entry;
  return NULL;
}

/* Reads a regular file's bytes (at most INGOT_MAX_DISPATCH_LIBRARY_BYTES); 0 and why on failure. */
static int read_library(int fd, const char *name, unsigned char **out, size_t *size, char *why, size_t why_size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    refuse(why, why_size, "dispatch/%s: not a regular file (allowed: a regular file)", name);
    return 0;
  }
  if (st.st_size <= 0 || (uint64_t)st.st_size > INGOT_MAX_DISPATCH_LIBRARY_BYTES) {
    refuse(why, why_size, "dispatch/%s: %lld bytes (allowed: 1..%llu)", name, (long long)st.st_size,
           (unsigned long long)INGOT_MAX_DISPATCH_LIBRARY_BYTES);
    return 0;
  }
  unsigned char *buf = malloc((size_t)st.st_size);
  if (buf == NULL) {
    refuse(why, why_size, "dispatch/%s: out of memory", name);
    return 0;
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got != (size_t)st.st_size) {
    free(buf);
    refuse(why, why_size, "dispatch/%s: cannot read it (%zu of %lld bytes)", name, got, (long long)st.st_size);
    return 0;
  }
  *out = buf;
  *size = got;
  return 1;
}

/* The pack's dispatch library: <pack_dir>/dispatch/<symbol>.so, a regular file
 * inside the pack folder (no symbolic link, neither the folder nor the file),
 * whose sha256 the KDP records (sha256_hex, packaged by `ingot build`): its
 * bytes are read once, checked against the record, and what is loaded is those
 * very bytes (copied to a sealed memory file and opened through /proc/self/fd),
 * so a file changed or swapped after the check is not what runs. The KDP's
 * signature, where the context requires one, thereby covers the library too. A
 * library the KDP does not record is refused. It stays loaded: the pack's entry
 * points into it. */
const ingot_dispatch_entry *ingot_dispatch_find_in_pack(const char *symbol, const char *pack_dir,
                                                        const char *sha256_hex, char *why, size_t why_size) {
  if (why != NULL && why_size > 0) why[0] = '\0';
  const ingot_dispatch_entry *e = ingot_dispatch_find(symbol);
  if (e != NULL || symbol == NULL || pack_dir == NULL || !generated_name(symbol)) return e;
  int dir = open(pack_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return NULL;
  int sub = openat(dir, "dispatch", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int sub_errno = errno;
  close(dir);
  if (sub < 0) {
    if (sub_errno == ENOENT) return NULL; /* no dispatch library: the caller says what is allowed */
    return refuse(why, why_size, "dispatch/: not a folder (allowed: a folder holding %s.so, no symbolic link)",
                  symbol);
  }
  char name[160];
  snprintf(name, sizeof name, "%s.so", symbol); /* symbol: at most 128 characters */
  struct stat st;
  if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    close(sub);
    if (err == ENOENT) return NULL;
    return refuse(why, why_size, "dispatch/%s: cannot open: %s", name, strerror(err));
  }
  if (sha256_hex == NULL) {
    close(sub);
    return refuse(why, why_size, "dispatch/%s: the KDP does not record the library (allowed: a pack packaged with "
                  "its dispatch library, whose KDP records its sha256 in dispatch_library; or link %s into the "
                  "program)", name, symbol);
  }
  int fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int open_errno = errno;
  close(sub);
  if (fd < 0)
    return refuse(why, why_size, "dispatch/%s: %s (allowed: a regular file)", name,
                  open_errno == ELOOP ? "a symbolic link" : strerror(open_errno));
  unsigned char *bytes = NULL;
  size_t size = 0;
  const int have = read_library(fd, name, &bytes, &size, why, why_size);
  close(fd);
  if (!have) return NULL;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  char hex[65] = "";
  if (EVP_Digest(bytes, size, md, &md_len, EVP_sha256(), NULL) == 1 && md_len == 32)
    for (unsigned i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  if (strcmp(hex, sha256_hex) != 0) {
    free(bytes);
    return refuse(why, why_size, "dispatch/%s: hashes to %s, but the KDP records %s (allowed: the library "
                  "packaged with the pack)", name, hex[0] ? hex : "(no digest)", sha256_hex);
  }
  pthread_mutex_lock(&g_loaded_mu);
  e = loaded_locked(hex, symbol);
  const int room = g_num_loaded < MAX_PACK_LIBRARIES;
  pthread_mutex_unlock(&g_loaded_mu);
  if (e != NULL) {
    free(bytes);
    return e;
  }
  if (!room) {
    free(bytes);
    return refuse(why, why_size, "dispatch/%s: %d pack dispatch libraries are loaded already (allowed: at most %d "
                  "different ones per process)", name, MAX_PACK_LIBRARIES, MAX_PACK_LIBRARIES);
  }
  /* the checked bytes, in a sealed memory file: what dlopen maps is what was hashed */
  int mem = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  size_t put = 0;
  while (mem >= 0 && put < size) {
    ssize_t w = write(mem, bytes + put, size - put);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    put += (size_t)w;
  }
  free(bytes);
  if (mem < 0 || put != size ||
      fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    const int err = errno;
    if (mem >= 0) close(mem);
    return refuse(why, why_size, "dispatch/%s: cannot stage the checked library: %s", name, strerror(err));
  }
  char fd_path[64];
  snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", mem);
  void *lib = dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
  close(mem);
  if (lib == NULL) {
    const char *msg = dlerror();
    return refuse(why, why_size, "dispatch/%s: cannot be loaded: %s", name, msg ? msg : "dlopen failed");
  }
  e = (const ingot_dispatch_entry *)dlsym(lib, symbol);
  if (!valid_entry(e, symbol)) {
    dlclose(lib);
    return refuse(why, why_size, "dispatch/%s: does not define the dispatch entry %s", name, symbol);
  }
  /* another thread may have loaded the same library meanwhile: keep the first */
  pthread_mutex_lock(&g_loaded_mu);
  const ingot_dispatch_entry *first = loaded_locked(hex, symbol);
  if (first == NULL && g_num_loaded < MAX_PACK_LIBRARIES) {
    snprintf(g_loaded[g_num_loaded].sha256, sizeof g_loaded[g_num_loaded].sha256, "%s", hex);
    snprintf(g_loaded[g_num_loaded].symbol, sizeof g_loaded[g_num_loaded].symbol, "%s", symbol);
    g_loaded[g_num_loaded++].entry = e;
  }
  pthread_mutex_unlock(&g_loaded_mu);
  if (first != NULL) {
    dlclose(lib);
    return first;
  }
  return e;
}
