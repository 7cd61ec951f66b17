/* util.c: status strings, the version, growable strings, arch facts, and
 * reading a pack's files without ever blocking on one. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingot_abi.h"
#include "internal.h"

#define INGOT_STR2(x) #x
#define INGOT_STR(x) INGOT_STR2(x)

const char *ingot_status_string(ingot_status s) {
  switch (s) {
  case INGOT_OK: return "OK";
  case INGOT_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case INGOT_INVALID_PACK: return "INVALID_PACK";
  case INGOT_NO_MATCH: return "NO_MATCH";
  case INGOT_UNAVAILABLE: return "UNAVAILABLE";
  case INGOT_DEVICE_ERROR: return "DEVICE_ERROR";
  case INGOT_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
  case INGOT_IO_ERROR: return "IO_ERROR";
  case INGOT_LIMIT_EXCEEDED: return "LIMIT_EXCEEDED";
  case INGOT_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN_STATUS";
}

const char *ingot_version_string(void) {
  return INGOT_STR(INGOT_VERSION_MAJOR) "." INGOT_STR(INGOT_VERSION_MINOR) "." INGOT_STR(
      INGOT_VERSION_PATCH);
}

void ingot_format(char *buf, size_t size, const char *fmt, ...) {
  if (buf == NULL || size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

void ingot_strbuf_vappendf(ingot_strbuf *sb, const char *fmt, va_list ap) {
  if (sb->failed) return;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  size_t need = sb->len + (size_t)n + 1;
  if (need > sb->cap) {
    size_t cap = sb->cap ? sb->cap : 128;
    while (cap < need) cap *= 2;
    char *p = realloc(sb->data, cap);
    if (p == NULL) {
      sb->failed = 1;
      return;
    }
    sb->data = p;
    sb->cap = cap;
  }
  vsnprintf(sb->data + sb->len, sb->cap - sb->len, fmt, ap);
  sb->len += (size_t)n;
}

void ingot_strbuf_appendf(ingot_strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ingot_strbuf_vappendf(sb, fmt, ap);
  va_end(ap);
}

void ingot_strbuf_free(ingot_strbuf *sb) {
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

const char *ingot_strbuf_str(const ingot_strbuf *sb) { return sb->data ? sb->data : ""; }

/* The arch table (ingot_abi.h, generated from generator/ingot/archs.py). */
typedef struct arch_facts {
  const char *name;
  int vendor, wave_size, compute_units;
  size_t max_lds, max_dynamic_lds;
} arch_facts;

#define INGOT_ARCH_ROW(name, vendor, wave, cus, lds, dynamic_lds, registers, co_version) \
  {name, vendor, wave, cus, lds, dynamic_lds},
static const arch_facts kArchs[] = {INGOT_ARCH_TABLE(INGOT_ARCH_ROW)};
#undef INGOT_ARCH_ROW

static int emulates_wave64(const char *arch) {
  const size_t n = strlen(arch), m = sizeof INGOT_EMULATED_WAVE64_SUFFIX - 1;
  return strncmp(arch, "sm_", 3) == 0 && n > 3 + m && strcmp(arch + n - m, INGOT_EMULATED_WAVE64_SUFFIX) == 0;
}

/* The table's row of arch, or of the device an emulating test arch runs on
 * ("sm_90_w64": sm_90's); NULL outside the table. */
static const arch_facts *facts_of(const char *arch) {
  if (arch == NULL) return NULL;
  size_t n = strlen(arch);
  if (emulates_wave64(arch)) n -= sizeof INGOT_EMULATED_WAVE64_SUFFIX - 1;
  for (size_t i = 0; i < sizeof kArchs / sizeof kArchs[0]; ++i)
    if (strlen(kArchs[i].name) == n && strncmp(arch, kArchs[i].name, n) == 0) return &kArchs[i];
  return NULL;
}

/* An arch outside the table is judged by its vendor's prefix. */
int ingot_arch_wave_size(const char *arch) {
  if (arch == NULL) return 0;
  if (strncmp(arch, "sm_", 3) == 0) return emulates_wave64(arch) ? 64 : 32;
  if (strncmp(arch, "gfx", 3) == 0) return 64;
  return 0;
}

int ingot_arch_runs_on(const char *arch, const char *device) {
  if (arch == NULL || device == NULL) return 0;
  if (strcmp(arch, device) == 0) return 1;
  const size_t n = strlen(device);
  return !emulates_wave64(device) && emulates_wave64(arch) && strncmp(arch, device, n) == 0 &&
         strcmp(arch + n, INGOT_EMULATED_WAVE64_SUFFIX) == 0;
}

int ingot_arch_compute_units(const char *arch) {
  const arch_facts *f = facts_of(arch);
  return f ? f->compute_units : INGOT_DEFAULT_COMPUTE_UNITS;
}

/* Static LDS a workgroup may hold (the kernels use static LDS only): the
 * table's, else the least of the vendor's (48 KiB on every sm_*, 64 KiB on
 * CDNA). An emulating arch has its device's: its exchange slots are part of
 * each kernel's own static LDS. */
size_t ingot_arch_max_lds(const char *arch) {
  const arch_facts *f = facts_of(arch);
  if (f) return f->max_lds;
  if (arch == NULL) return 0;
  if (strncmp(arch, "sm_", 3) == 0) return 48u * 1024u;
  if (strncmp(arch, "gfx", 3) == 0) return 64u * 1024u;
  return 0;
}

size_t ingot_arch_max_dynamic_lds(const char *arch) {
  const arch_facts *f = facts_of(arch);
  return f ? f->max_dynamic_lds : ingot_arch_max_lds(arch);
}

/* The JSON type of a value as an error message names it ("missing" for NULL). */
const char *ingot_json_type_name(json_t *v) {
  if (v == NULL) return "missing";
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "a list";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "?";
}

const char *ingot_file_type_name(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

/* The type is checked twice: by lstat/stat before the open, so that a FIFO or a
 * device is never opened at all (opening a tape or a tty can act), and by
 * fstat on the descriptor, because the name may have been replaced in between;
 * O_NONBLOCK makes that second window harmless too (a FIFO open returns at
 * once). */
ingot_status ingot_read_regular_file(int at, const char *path, int nofollow, size_t limit, unsigned char **out,
                                     size_t *size, char *msg, size_t msg_size) {
  *out = NULL;
  *size = 0;
  struct stat st;
  if (fstatat(at, path, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) != 0) {
    ingot_format(msg, msg_size, "cannot open: %s", strerror(errno));
    return INGOT_IO_ERROR;
  }
  if (!S_ISREG(st.st_mode)) {
    ingot_format(msg, msg_size, "not a regular file (%s) (allowed: a regular file)", ingot_file_type_name(st.st_mode));
    return INGOT_INVALID_PACK;
  }
  int fd = openat(at, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    if (errno == ELOOP) {
      ingot_format(msg, msg_size, "not a regular file (a symbolic link) (allowed: a regular file)");
      return INGOT_INVALID_PACK;
    }
    ingot_format(msg, msg_size, "cannot open: %s", strerror(errno));
    return INGOT_IO_ERROR;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ingot_format(msg, msg_size, "not a regular file (%s) (allowed: a regular file)", ingot_file_type_name(st.st_mode));
    close(fd);
    return INGOT_INVALID_PACK;
  }
  if (st.st_size < 0 || (uint64_t)st.st_size > limit) {
    ingot_format(msg, msg_size, "%lld bytes (allowed: at most %zu bytes)", (long long)st.st_size, limit);
    close(fd);
    return INGOT_LIMIT_EXCEEDED;
  }
  unsigned char *buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL) {
    ingot_format(msg, msg_size, "out of memory reading %lld bytes", (long long)st.st_size);
    close(fd);
    return INGOT_OUT_OF_MEMORY;
  }
  /* One byte more than the size: a file that grew since fstat is noticed. */
  size_t want = (size_t)st.st_size + 1, n = 0;
  while (n < want) {
    ssize_t r = read(fd, buf + n, want - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r < 0) n = want + 1; /* read error */
      break;
    }
    n += (size_t)r;
  }
  close(fd);
  if (n != (size_t)st.st_size) {
    free(buf);
    ingot_format(msg, msg_size, "read failed or the file changed while reading");
    return INGOT_IO_ERROR;
  }
  buf[n] = 0;
  *out = buf;
  *size = n;
  return INGOT_OK;
}
