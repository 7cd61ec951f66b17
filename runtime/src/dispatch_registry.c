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
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dispatch.h"

extern const ingot_dispatch_entry ingot_attention_decode_dispatch;

static const ingot_dispatch_entry *const kEntries[] = {
    &ingot_attention_decode_dispatch,
};

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
  return e != NULL && e->symbol != NULL && strcmp(e->symbol, symbol) == 0 && e->plan != NULL && e->pack != NULL;
}

const ingot_dispatch_entry *ingot_dispatch_find(const char *symbol) {
  if (symbol == NULL) return NULL;
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i)
    if (kEntries[i]->symbol != NULL && strcmp(kEntries[i]->symbol, symbol) == 0) return kEntries[i];
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

/* The pack's dispatch library: <pack_dir>/dispatch/<symbol>.so, a regular file
 * inside the pack folder (no symbolic link, neither the folder nor the file),
 * loaded through the descriptor it was checked on (/proc/self/fd), so a name
 * swapped in between is not what gets loaded. The library stays loaded: the
 * pack's entry points into it. A context that requires signed packs loads none
 * (the KDP does not record the library's sha256, so its signature does not
 * cover it): such a program links the stub in instead. */
const ingot_dispatch_entry *ingot_dispatch_find_in_pack(const char *symbol, const char *pack_dir,
                                                        int signature_required, char *why, size_t why_size) {
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
  if (signature_required) {
    close(sub);
    return refuse(why, why_size, "dispatch/%s: a pack's dispatch library is not covered by its signature, and "
                  "this context requires signed packs (allowed: link %s into the program)", name, symbol);
  }
  int fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int open_errno = errno;
  close(sub);
  if (fd < 0)
    return refuse(why, why_size, "dispatch/%s: %s (allowed: a regular file)", name,
                  open_errno == ELOOP ? "a symbolic link" : strerror(open_errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return refuse(why, why_size, "dispatch/%s: not a regular file (allowed: a regular file)", name);
  }
  char fd_path[64];
  snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", fd);
  void *lib = dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
  close(fd);
  if (lib == NULL) {
    const char *msg = dlerror();
    return refuse(why, why_size, "dispatch/%s: cannot be loaded: %s", name, msg ? msg : "dlopen failed");
  }
  e = (const ingot_dispatch_entry *)dlsym(lib, symbol);
  if (!valid_entry(e, symbol)) {
    dlclose(lib);
    return refuse(why, why_size, "dispatch/%s: does not define the dispatch entry %s", name, symbol);
  }
  return e;
}
