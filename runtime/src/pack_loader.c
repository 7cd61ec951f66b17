/* pack_loader.c: opens a packaged pack folder and verifies all of it before
 * anything touches a driver: the folder's files (regular files only, counted
 * and sized before any is read), the KDP's detached signature when the context
 * requires one, every descriptor against the sha256 the KDP records, every
 * descriptor's fields and JSON types, ids unique in the folder and across the
 * context, every id reference, kernel metadata against the KMD and the plan's
 * bounds, code object paths (confined to the folder), sha256, kernarg
 * signature against the UDD and entry-point symbols (elf_symbols.c).
 * The first problem ends the load with "<file>: <json path>: <problem>
 * (allowed: ...)"; nothing is half-built. Formats: docs/INTERNALS.md 1-2. */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "elf_symbols.h"
#include "ingot_abi.h"
#include "internal.h"

enum doc_kind { DOC_KDP, DOC_UED, DOC_KMD, DOC_UDD, DOC_UMD, DOC_KERNEL, NUM_DOC_KINDS };
static const char *const kKindSuffix[NUM_DOC_KINDS] = {".kdp.json", ".ued.json", ".kmd.json",
                                                       ".udd.json", ".umd.json", NULL};
static const char *const kKindName[NUM_DOC_KINDS] = {"KDP", "UED", "KMD", "UDD", "UMD", "kernel"};

/* Kept by the pack once it is open (ingot_pack.ids): later packs check theirs against it. */
typedef struct ingot_doc_entry {
  json_t *doc; /* borrowed from loader.docs */
  char file[NAME_MAX + 1];
  enum doc_kind kind;
  const char *id;
} doc_entry;

typedef struct kmd_field {
  const char *name, *type;
  json_t *default_value; /* NULL: mandatory */
} kmd_field;

typedef struct loader {
  const char *dir; /* resolved */
  ingot_strbuf *err;
  ingot_status status;
  json_t *docs;
  size_t num_entries, cap_entries;
  doc_entry *entries;
  size_t num_kmd_fields;
  kmd_field *kmd_fields;
  json_t *entry_points; /* the KDP's UDD's entry_points, borrowed */
  ingot_pack *const *existing; /* the packs already open on the context */
  size_t num_existing;
} loader;

static int fail(loader *L, ingot_status st, const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(loader *L, ingot_status st, const char *file, const char *path, const char *fmt, ...) {
  if (L->status != INGOT_OK) return 0; /* keep the first problem */
  L->status = st;
  ingot_strbuf_appendf(L->err, "%s: %s%s", file, path ? path : "", path && path[0] ? ": " : "");
  va_list ap;
  va_start(ap, fmt);
  ingot_strbuf_vappendf(L->err, fmt, ap);
  va_end(ap);
  return 0;
}

/* ---- typed field access ------------------------------------------------- */

static void join_path(char *out, size_t size, const char *parent, const char *key) {
  if (parent == NULL || parent[0] == '\0') ingot_format(out, size, "%s", key);
  else ingot_format(out, size, "%s.%s", parent, key);
}

static int check_string_value(loader *L, const char *file, const char *path, json_t *v) {
  if (!json_is_string(v))
    return fail(L, INGOT_INVALID_PACK, file, path, "%s (allowed: a string)", ingot_json_type_name(v));
  if (json_string_length(v) > INGOT_MAX_STRING_BYTES)
    return fail(L, INGOT_LIMIT_EXCEEDED, file, path, "string of %zu bytes (allowed: at most %d bytes)",
                json_string_length(v), INGOT_MAX_STRING_BYTES);
  if (json_string_length(v) != strlen(json_string_value(v)))
    return fail(L, INGOT_INVALID_PACK, file, path, "string holds a NUL byte (allowed: none)");
  return 1;
}

static int get_string(loader *L, const char *file, json_t *obj, const char *parent, const char *key,
                      const char **out) {
  char path[512];
  join_path(path, sizeof path, parent, key);
  json_t *v = json_object_get(obj, key);
  if (!check_string_value(L, file, path, v)) return 0;
  if (json_string_length(v) == 0) return fail(L, INGOT_INVALID_PACK, file, path, "empty string (allowed: non-empty)");
  *out = json_string_value(v);
  return 1;
}

static int get_int(loader *L, const char *file, json_t *obj, const char *parent, const char *key,
                   int64_t lo, int64_t hi, int64_t *out) {
  char path[512];
  join_path(path, sizeof path, parent, key);
  json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v))
    return fail(L, INGOT_INVALID_PACK, file, path, "%s (allowed: an integer in %lld..%lld)",
                ingot_json_type_name(v), (long long)lo, (long long)hi);
  int64_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail(L, INGOT_INVALID_PACK, file, path, "%lld (allowed: %lld..%lld)", (long long)x,
                (long long)lo, (long long)hi);
  *out = x;
  return 1;
}

static json_t *get_typed(loader *L, const char *file, json_t *obj, const char *parent, const char *key,
                         json_type type, const char *allowed) {
  char path[512];
  join_path(path, sizeof path, parent, key);
  json_t *v = json_object_get(obj, key);
  if (v == NULL || json_typeof(v) != type) {
    fail(L, INGOT_INVALID_PACK, file, path, "%s (allowed: %s)", ingot_json_type_name(v), allowed);
    return NULL;
  }
  return v;
}

/* A list of non-empty strings. */
static json_t *get_string_list(loader *L, const char *file, json_t *obj, const char *parent,
                               const char *key) {
  json_t *a = get_typed(L, file, obj, parent, key, JSON_ARRAY, "a list of strings");
  if (a == NULL) return NULL;
  char path[512], ipath[600];
  join_path(path, sizeof path, parent, key);
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    ingot_format(ipath, sizeof ipath, "%s[%zu]", path, i);
    if (!check_string_value(L, file, ipath, v)) return NULL;
  }
  return a;
}

static int is_uuid(const char *s) {
  if (strlen(s) != 36) return 0;
  for (int i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return 0;
    } else if (!isxdigit((unsigned char)s[i])) {
      return 0;
    }
  }
  return 1;
}

/* version "1.0", id (a UUID), name. */
static int check_header(loader *L, const char *file, json_t *doc, const char *parent,
                        const char **id, const char **name) {
  char path[512];
  const char *version;
  if (!get_string(L, file, doc, parent, "version", &version)) return 0;
  if (strcmp(version, "1.0") != 0) {
    join_path(path, sizeof path, parent, "version");
    return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\" (allowed: \"1.0\")", version);
  }
  if (!get_string(L, file, doc, parent, "id", id)) return 0;
  if (!is_uuid(*id)) {
    join_path(path, sizeof path, parent, "id");
    return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\" (allowed: a UUID, 8-4-4-4-12 hex digits)", *id);
  }
  return get_string(L, file, doc, parent, "name", name);
}

/* ---- files --------------------------------------------------------------- */

/* Reads a regular file (never blocks: see ingot_read_regular_file). */
static int read_file(loader *L, int at, const char *path, int nofollow, const char *shown, size_t limit,
                     unsigned char **out, size_t *size) {
  char msg[256];
  ingot_status st = ingot_read_regular_file(at, path, nofollow, limit, out, size, msg, sizeof msg);
  if (st != INGOT_OK) return fail(L, st, shown, "", "%s", msg);
  return 1;
}

static int sha256_hex(const unsigned char *data, size_t size, char hex[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  hex[0] = 0;
  if (EVP_Digest(data, size, md, &len, EVP_sha256(), NULL) != 1 || len != 32) return 0;
  for (unsigned i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", md[i]);
  return 1;
}

static int is_sha256_hex(const char *s) {
  size_t n = 0;
  for (; s[n]; ++n)
    if (!isdigit((unsigned char)s[n]) && !(s[n] >= 'a' && s[n] <= 'f')) return 0;
  return n == 64;
}

static int sha256_hex_equal(const unsigned char *data, size_t size, const char *hex, char actual[65]) {
  if (!sha256_hex(data, size, actual)) return -1;
  return strcmp(actual, hex) == 0;
}

/* Grows L->entries to hold `want` entries. Pointers into it (a doc_entry *, its
 * file name) die when it moves, and the kernels add their ids while the KDP is
 * checked: check_kdp works on a copy of the KDP's entry (ingot_pack_load). */
static int reserve_entries(loader *L, size_t want) {
  if (want <= L->cap_entries) return 1;
  size_t cap = L->cap_entries ? L->cap_entries : 64;
  while (cap < want) cap *= 2;
  doc_entry *e = realloc(L->entries, cap * sizeof(*e));
  if (e == NULL) return 0;
  L->entries = e;
  L->cap_entries = cap;
  return 1;
}

static int add_entry(loader *L, json_t *doc, const char *file, enum doc_kind kind, const char *id,
                     const char *path) {
  for (size_t i = 0; i < L->num_entries; ++i) {
    if (strcmp(L->entries[i].id, id) == 0)
      return fail(L, INGOT_INVALID_PACK, file, path, "duplicate id \"%s\" (already the id of %s %s%s%s)",
                  id, kKindName[L->entries[i].kind], L->entries[i].file,
                  L->entries[i].kind == DOC_KERNEL ? " kernel " : "",
                  L->entries[i].kind == DOC_KERNEL
                      ? json_string_value(json_object_get(L->entries[i].doc, "name"))
                      : "");
  }
  /* ids are unique across the context too, for every kind (RELIABILITY.md) */
  for (size_t p = 0; p < L->num_existing; ++p) {
    const ingot_pack *other = L->existing[p];
    for (size_t i = 0; i < other->num_ids; ++i) {
      const doc_entry *e = &other->ids[i];
      if (strcmp(e->id, id) != 0) continue;
      return fail(L, INGOT_INVALID_PACK, file, path,
                  "duplicate id \"%s\" (already the id of %s %s%s%s of open pack %s, %s; allowed: an id no open "
                  "pack uses)", id, kKindName[e->kind], e->kind == DOC_KERNEL ? "" : e->file,
                  e->kind == DOC_KERNEL ? json_string_value(json_object_get(e->doc, "name")) : "",
                  e->kind == DOC_KERNEL ? " in the KDP" : "", other->name, other->dir);
    }
  }
  char shown[NAME_MAX + 1]; /* file may point into L->entries, which may move */
  ingot_format(shown, sizeof shown, "%s", file);
  if (!reserve_entries(L, L->num_entries + 1)) return fail(L, INGOT_OUT_OF_MEMORY, shown, path, "out of memory");
  doc_entry *e = &L->entries[L->num_entries++];
  e->doc = doc;
  ingot_format(e->file, sizeof e->file, "%s", shown);
  e->kind = kind;
  e->id = id;
  return 1;
}

/* Resolves an id reference to a descriptor of the wanted kind. */
static const doc_entry *resolve(loader *L, const char *file, const char *path, const char *id,
                                enum doc_kind kind) {
  for (size_t i = 0; i < L->num_entries; ++i) {
    const doc_entry *e = &L->entries[i];
    if (strcmp(e->id, id) != 0) continue;
    if (e->kind != kind) {
      fail(L, INGOT_INVALID_PACK, file, path, "id \"%s\" names the %s %s (allowed: the id of a %s)", id,
           kKindName[e->kind], e->file, kKindName[kind]);
      return NULL;
    }
    return e;
  }
  fail(L, INGOT_INVALID_PACK, file, path,
       "dangling id \"%s\" (allowed: the id of a *%s descriptor in the pack folder)", id,
       kKindSuffix[kind]);
  return NULL;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && strcmp(s + n - m, suffix) == 0;
}

/* A descriptor file of the folder, as listed and then read. */
typedef struct pack_file {
  char *name;
  enum doc_kind kind;
  unsigned char *text; /* NULL until read */
  size_t size;
  char sha256[65];
  int recorded; /* named by the KDP's descriptors */
} pack_file;

static enum doc_kind kind_of(const char *name) {
  for (int k = 0; k < DOC_KERNEL; ++k)
    if (has_suffix(name, kKindSuffix[k])) return (enum doc_kind)k;
  return DOC_KERNEL; /* not a descriptor */
}

static int cmp_files(const void *a, const void *b) {
  return strcmp(((const pack_file *)a)->name, ((const pack_file *)b)->name);
}

/* Lists the folder's descriptor files and bounds their number, type and sizes
 * from the directory and lstat alone: nothing is opened or read before the
 * whole listing passes (a FIFO would block, 40 large files would take GBs). */
static int list_files(loader *L, DIR *d, pack_file **out, size_t *num) {
  pack_file *files = NULL;
  size_t n = 0;
  struct dirent *de;
  int ok = 1;
  while (ok && (de = readdir(d)) != NULL) {
    if (kind_of(de->d_name) == DOC_KERNEL) continue;
    if (n == INGOT_MAX_DESCRIPTOR_FILES) {
      ok = fail(L, INGOT_LIMIT_EXCEEDED, L->dir, "",
                "more than %d descriptor files (allowed: at most %d *.kdp/ued/kmd/udd/umd.json files per pack "
                "folder)", INGOT_MAX_DESCRIPTOR_FILES, INGOT_MAX_DESCRIPTOR_FILES);
      break;
    }
    if (n % 64 == 0) {
      pack_file *p = realloc(files, (n + 64) * sizeof(*p));
      if (p == NULL) {
        ok = fail(L, INGOT_OUT_OF_MEMORY, L->dir, "", "out of memory");
        break;
      }
      files = p;
    }
    memset(&files[n], 0, sizeof files[n]);
    files[n].kind = kind_of(de->d_name);
    if ((files[n].name = strdup(de->d_name)) == NULL) ok = fail(L, INGOT_OUT_OF_MEMORY, L->dir, "", "out of memory");
    else ++n;
  }
  *out = files;
  *num = n;
  if (!ok) return 0;
  qsort(files, n, sizeof(*files), cmp_files);
  uint64_t total = 0;
  size_t num_kdp = 0;
  for (size_t i = 0; i < n; ++i) {
    struct stat st;
    if (fstatat(dirfd(d), files[i].name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      return fail(L, INGOT_IO_ERROR, files[i].name, "", "cannot open: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
      return fail(L, INGOT_INVALID_PACK, files[i].name, "", "not a regular file (%s) (allowed: a regular file)",
                  ingot_file_type_name(st.st_mode));
    if ((uint64_t)st.st_size > INGOT_MAX_DESCRIPTOR_BYTES)
      return fail(L, INGOT_LIMIT_EXCEEDED, files[i].name, "", "%lld bytes (allowed: at most %zu bytes)",
                  (long long)st.st_size, INGOT_MAX_DESCRIPTOR_BYTES);
    total += (uint64_t)st.st_size;
    if (files[i].kind == DOC_KDP && ++num_kdp > 1)
      return fail(L, INGOT_INVALID_PACK, files[i].name, "",
                  "a second *.kdp.json in the folder (allowed: exactly one KDP per pack folder)");
  }
  if (total > INGOT_MAX_DESCRIPTOR_TOTAL_BYTES)
    return fail(L, INGOT_LIMIT_EXCEEDED, L->dir, "",
                "%zu descriptor files of %llu bytes in all (allowed: at most %zu bytes of descriptors per pack "
                "folder)", n, (unsigned long long)total, INGOT_MAX_DESCRIPTOR_TOTAL_BYTES);
  if (num_kdp == 0)
    return fail(L, INGOT_INVALID_PACK, L->dir, "",
                "no *.kdp.json in the folder (allowed: exactly one KDP; open build/packs/<pack>)");
  return 1;
}

/* The detached signature <kdp>.sig over the KDP's exact bytes (pack_signature.c). */
static int check_signature(loader *L, int at, const pack_file *kdp, const unsigned char *key) {
  char sig_name[NAME_MAX + 1];
  ingot_format(sig_name, sizeof sig_name, "%s.sig", kdp->name);
  struct stat st;
  if (fstatat(at, sig_name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
    return fail(L, INGOT_INVALID_PACK, sig_name, "",
                "missing: the context requires signed packs (allowed: the %d-byte Ed25519 signature of %s; "
                "ingot-inspect sign --key KEY.pem PACKDIR writes it)", INGOT_ED25519_SIGNATURE_BYTES, kdp->name);
  unsigned char *sig;
  size_t size;
  if (!read_file(L, at, sig_name, 1, sig_name, INGOT_MAX_SIGNATURE_FILE_BYTES, &sig, &size)) return 0;
  int ok = 1;
  if (size != INGOT_ED25519_SIGNATURE_BYTES) {
    ok = fail(L, INGOT_INVALID_PACK, sig_name, "", "%zu bytes (allowed: exactly %d bytes, a raw Ed25519 signature)",
              size, INGOT_ED25519_SIGNATURE_BYTES);
  } else {
    int v = ingot_ed25519_verify(key, sig, size, kdp->text, kdp->size);
    if (v < 0) ok = fail(L, INGOT_INTERNAL, sig_name, "", "the signature could not be checked (libcrypto failed)");
    else if (v == 0)
      ok = fail(L, INGOT_INVALID_PACK, sig_name, "",
                "the signature does not verify over %s with the context's public key %02x%02x%02x%02x... (signed "
                "with another key, or the KDP or the signature changed since; allowed: a signature of this exact "
                "KDP by the key's owner)", kdp->name, key[0], key[1], key[2], key[3]);
  }
  free(sig);
  return ok;
}

static int parse_document(loader *L, pack_file *f) {
  json_error_t je;
  json_t *doc = json_loadb((const char *)f->text, f->size, JSON_REJECT_DUPLICATES, &je);
  if (doc == NULL)
    return fail(L, INGOT_INVALID_PACK, f->name, "", "line %d column %d: invalid JSON: %s", je.line, je.column, je.text);
  if (json_array_append_new(L->docs, doc) != 0) return fail(L, INGOT_OUT_OF_MEMORY, f->name, "", "out of memory");
  if (!json_is_object(doc))
    return fail(L, INGOT_INVALID_PACK, f->name, "", "top level is %s (allowed: an object)", ingot_json_type_name(doc));
  const char *id, *name;
  if (!check_header(L, f->name, doc, "", &id, &name)) return 0;
  if (f->kind == DOC_KDP)
    for (size_t p = 0; p < L->num_existing; ++p)
      if (!strcmp(L->existing[p]->id, id))
        return fail(L, INGOT_INVALID_PACK, f->name, "id", "pack \"%s\" (%s) is already open on this context from %s",
                    name, id, L->existing[p]->dir);
  return add_entry(L, doc, f->name, f->kind, id, "id");
}

/* The packaged KDP records the sha256 of every other descriptor file of its
 * folder (`descriptors`), so that what the KDP (and its signature) vouches for
 * is the whole set: no file may differ, be missing, or be added. */
static int check_descriptor_hashes(loader *L, const pack_file *kdp, json_t *doc, pack_file *files, size_t n) {
  json_t *rec = get_typed(L, kdp->name, doc, "", "descriptors", JSON_OBJECT,
                          "an object {descriptor file: sha256}, written by `ingot package`");
  if (rec == NULL) return 0;
  const char *key;
  json_t *v;
  char path[NAME_MAX + 32];
  json_object_foreach(rec, key, v) {
    ingot_format(path, sizeof path, "descriptors.%s", key);
    size_t i = 0;
    while (i < n && (files[i].kind == DOC_KDP || strcmp(files[i].name, key) != 0)) ++i;
    if (i == n)
      return fail(L, INGOT_INVALID_PACK, kdp->name, path,
                  "no such descriptor file in the folder (allowed: the folder's descriptor files other than the KDP)");
    if (!check_string_value(L, kdp->name, path, v)) return 0;
    if (!is_sha256_hex(json_string_value(v)))
      return fail(L, INGOT_INVALID_PACK, kdp->name, path, "\"%s\" (allowed: 64 lowercase hex digits)",
                  json_string_value(v));
    if (strcmp(json_string_value(v), files[i].sha256) != 0)
      return fail(L, INGOT_INVALID_PACK, kdp->name, path, "\"%s\" but %s hashes to %s (allowed: the file's sha256)",
                  json_string_value(v), files[i].name, files[i].sha256);
    files[i].recorded = 1;
  }
  for (size_t i = 0; i < n; ++i)
    if (files[i].kind != DOC_KDP && !files[i].recorded)
      return fail(L, INGOT_INVALID_PACK, kdp->name, "descriptors",
                  "no entry for %s, a descriptor file in the folder (allowed: only the descriptor files the KDP "
                  "records; remove a file the packaging did not write)", files[i].name);
  return 1;
}

/* Lists, reads and parses every descriptor file of the folder: the KDP first
 * (its signature, then the hashes it records), the others sorted by name. */
static int load_documents(loader *L, const unsigned char *signing_key) {
  int fd = open(L->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (d == NULL) {
    if (fd >= 0) close(fd);
    return fail(L, INGOT_IO_ERROR, L->dir, "", "cannot open the folder: %s", strerror(errno));
  }
  pack_file *files = NULL;
  size_t n = 0, kdp = 0;
  int ok = list_files(L, d, &files, &n);
  uint64_t total = 0;
  for (size_t i = 0; ok && i < n; ++i) {
    ok = read_file(L, dirfd(d), files[i].name, 1, files[i].name, INGOT_MAX_DESCRIPTOR_BYTES, &files[i].text,
                   &files[i].size);
    if (ok && (total += files[i].size) > INGOT_MAX_DESCRIPTOR_TOTAL_BYTES) /* grew since the listing */
      ok = fail(L, INGOT_LIMIT_EXCEEDED, L->dir, "", "descriptor files of more than %zu bytes in all (allowed: at "
                "most %zu bytes of descriptors per pack folder)", INGOT_MAX_DESCRIPTOR_TOTAL_BYTES,
                INGOT_MAX_DESCRIPTOR_TOTAL_BYTES);
    if (ok && !sha256_hex(files[i].text, files[i].size, files[i].sha256))
      ok = fail(L, INGOT_INTERNAL, files[i].name, "", "sha256 could not be computed (libcrypto failed)");
    if (files[i].kind == DOC_KDP) kdp = i;
  }
  if (ok && signing_key != NULL) ok = check_signature(L, dirfd(d), &files[kdp], signing_key);
  closedir(d);
  if (ok) ok = parse_document(L, &files[kdp]);
  if (ok) ok = check_descriptor_hashes(L, &files[kdp], L->entries[0].doc, files, n);
  for (size_t i = 0; ok && i < n; ++i)
    if (i != kdp) ok = parse_document(L, &files[i]);
  for (size_t i = 0; i < n; ++i) {
    free(files[i].name);
    free(files[i].text);
  }
  free(files);
  return ok;
}

/* ---- per kind -------------------------------------------------------------- */

static int kmd_type_ok(const char *type, json_t *v) {
  if (!strcmp(type, "bool")) return json_is_boolean(v);
  if (!strcmp(type, "int")) return json_is_integer(v);
  if (!strcmp(type, "float")) return json_is_number(v);
  if (!strcmp(type, "string")) return json_is_string(v) && json_string_length(v) <= INGOT_MAX_STRING_BYTES;
  if (!strcmp(type, "int_list")) {
    if (!json_is_array(v)) return 0;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) if (!json_is_integer(x)) return 0;
    return 1;
  }
  return 0;
}

static const kmd_field *kmd_find(const loader *L, const char *name) {
  for (size_t i = 0; i < L->num_kmd_fields; ++i)
    if (!strcmp(L->kmd_fields[i].name, name)) return &L->kmd_fields[i];
  return NULL;
}

/* family: the pack's, whose metadata decoder reads the fields it names; NULL
 * for a KMD no KDP references (its own structure only). */
static int check_kmd(loader *L, const doc_entry *e, const ingot_family *family) {
  json_t *fields = get_typed(L, e->file, e->doc, "", "fields", JSON_ARRAY, "a list of {name, type, default_value?}");
  if (fields == NULL) return 0;
  free(L->kmd_fields);
  L->num_kmd_fields = 0;
  L->kmd_fields = calloc(json_array_size(fields) + 1, sizeof(kmd_field));
  if (L->kmd_fields == NULL) return fail(L, INGOT_OUT_OF_MEMORY, e->file, "fields", "out of memory");
  size_t i;
  json_t *f;
  char path[64], tpath[80];
  json_array_foreach(fields, i, f) {
    ingot_format(path, sizeof path, "fields[%zu]", i);
    if (!json_is_object(f)) return fail(L, INGOT_INVALID_PACK, e->file, path, "%s (allowed: an object)", ingot_json_type_name(f));
    kmd_field *kf = &L->kmd_fields[i];
    if (!get_string(L, e->file, f, path, "name", &kf->name)) return 0;
    if (!get_string(L, e->file, f, path, "type", &kf->type)) return 0;
    if (strcmp(kf->type, "bool") && strcmp(kf->type, "int") && strcmp(kf->type, "float") &&
        strcmp(kf->type, "string") && strcmp(kf->type, "int_list")) {
      ingot_format(tpath, sizeof tpath, "%s.type", path);
      return fail(L, INGOT_INVALID_PACK, e->file, tpath, "\"%s\" (allowed: bool, int, float, string, int_list)", kf->type);
    }
    if (kmd_find(L, kf->name) != NULL) {
      ingot_format(tpath, sizeof tpath, "%s.name", path);
      return fail(L, INGOT_INVALID_PACK, e->file, tpath, "duplicate field \"%s\" (allowed: unique names)", kf->name);
    }
    kf->default_value = json_object_get(f, "default_value");
    if (kf->default_value != NULL && !kmd_type_ok(kf->type, kf->default_value)) {
      ingot_format(tpath, sizeof tpath, "%s.default_value", path);
      return fail(L, INGOT_INVALID_PACK, e->file, tpath, "%s (allowed: a value of type %s)",
                  ingot_json_type_name(kf->default_value), kf->type);
    }
    L->num_kmd_fields = i + 1;
  }
  for (size_t r = 0; family != NULL && r < family->num_meta_fields; ++r) {
    const ingot_meta_field *want = &family->meta_fields[r];
    const kmd_field *kf = kmd_find(L, want->name);
    if (kf == NULL || strcmp(kf->type, want->type) != 0)
      return fail(L, INGOT_INVALID_PACK, e->file, "fields",
                  "%s field \"%s\" (allowed: a field \"%s\" of type %s; the %s family plans with it)",
                  kf ? "wrong type of" : "no", want->name, want->name, want->type, family->name);
  }
  return 1;
}

/* A UMD's structure; its constraints are checked against the family's fields
 * once the pack's family is known (check_umd_constraints). */
static int check_umd(loader *L, const doc_entry *e, ingot_umd *out) {
  const char *scope;
  out->id = e->id;
  out->name = json_string_value(json_object_get(e->doc, "name"));
  out->file = e->file;
  if (!get_string(L, e->file, e->doc, "", "scope", &scope)) return 0;
  if (strcmp(scope, "graph") && strcmp(scope, "kernel"))
    return fail(L, INGOT_INVALID_PACK, e->file, "scope", "\"%s\" (allowed: \"graph\", \"kernel\")", scope);
  out->graph_scope = !strcmp(scope, "graph");
  out->constraints = get_typed(L, e->file, e->doc, "", "constraints", JSON_ARRAY, "a list of constraints");
  return out->constraints != NULL;
}

static int check_umd_constraints(loader *L, const ingot_umd *u, const ingot_family *family) {
  size_t i;
  json_t *c;
  char path[64], why[1024];
  json_array_foreach(u->constraints, i, c) {
    if (!ingot_constraint_check(c, family, why, sizeof why)) {
      ingot_format(path, sizeof path, "constraints[%zu]", i);
      return fail(L, INGOT_INVALID_PACK, u->file, path, "%s", why);
    }
  }
  return 1;
}

/* The packaged KDP's record of the pack's dispatch library (`ingot build`):
 * {"path": "dispatch/<dispatch_symbol>.so", "sha256": "<hex>"}. *sha: NULL when
 * the KDP has none. */
static int dispatch_library_record(loader *L, const ingot_pack *pack, const char *kdp, const char *symbol,
                                   const char **sha) {
  *sha = NULL;
  json_t *rec = json_object_get(pack->kdp, "dispatch_library");
  if (rec == NULL) return 1;
  const char *path, *hex;
  if (!json_is_object(rec))
    return fail(L, INGOT_INVALID_PACK, kdp, "dispatch_library", "not an object (allowed: {\"path\": "
                "\"dispatch/%s.so\", \"sha256\": \"<64 hex digits>\"})", symbol);
  if (!get_string(L, kdp, rec, "dispatch_library", "path", &path) ||
      !get_string(L, kdp, rec, "dispatch_library", "sha256", &hex))
    return 0;
  char want[160];
  ingot_format(want, sizeof want, "dispatch/%s.so", symbol);
  if (strcmp(path, want) != 0)
    return fail(L, INGOT_INVALID_PACK, kdp, "dispatch_library.path", "\"%s\" (allowed: \"%s\", the UDD's "
                "dispatch_symbol)", path, want);
  if (!is_sha256_hex(hex))
    return fail(L, INGOT_INVALID_PACK, kdp, "dispatch_library.sha256", "\"%s\" (allowed: 64 lowercase hex digits)",
                hex);
  *sha = hex;
  return 1;
}

/* kdp_file: the KDP's, whose dispatch_library record the pack's own stub is checked against. */
static int check_udd(loader *L, const doc_entry *e, const char *kdp_file, ingot_pack *pack) {
  const char *symbol, *policy, *library_sha;
  int64_t kernarg_size;
  if (!get_string(L, e->file, e->doc, "", "dispatch_symbol", &symbol)) return 0;
  if (!dispatch_library_record(L, pack, kdp_file, symbol, &library_sha)) return 0;
  char why[512];
  pack->dispatch = ingot_dispatch_find_in_pack(symbol, L->dir, library_sha, why, sizeof why);
  if (pack->dispatch == NULL && why[0])
    return fail(L, INGOT_INVALID_PACK, e->file, "dispatch_symbol", "\"%s\": %s", symbol, why);
  if (pack->dispatch == NULL)
    return fail(L, INGOT_INVALID_PACK, e->file, "dispatch_symbol",
                "\"%s\" is neither compiled into libingot, nor exported by the program, nor in the pack's "
                "dispatch/%s.so (allowed: a stub of a shipped pack, a generated ingot_<pack>_dispatch linked "
                "into the program, or a pack built by `ingot build`)", symbol, symbol);
  json_t *eps = get_string_list(L, e->file, e->doc, "", "entry_points");
  if (eps == NULL) return 0;
  if (json_array_size(eps) < 1 || json_array_size(eps) > INGOT_MAX_ENTRY_POINTS)
    return fail(L, INGOT_INVALID_PACK, e->file, "entry_points", "%zu entries (allowed: 1..%d)",
                json_array_size(eps), INGOT_MAX_ENTRY_POINTS);
  pack->num_entry_points = json_array_size(eps);
  if (!get_int(L, e->file, e->doc, "", "kernarg_size", 1, INGOT_MAX_KERNARG_BYTES, &kernarg_size)) return 0;
  if ((uint32_t)kernarg_size != pack->dispatch->kernarg_size)
    return fail(L, INGOT_INVALID_PACK, e->file, "kernarg_size",
                "%lld (allowed: %u, the kernarg size of dispatch stub %s)", (long long)kernarg_size,
                pack->dispatch->kernarg_size, symbol);
  pack->kernarg_size = (uint32_t)kernarg_size;
  json_t *sig = get_typed(L, e->file, e->doc, "", "signature", JSON_ARRAY, "a list of {name, kind, size, offset}");
  if (sig == NULL) return 0;
  if (json_array_size(sig) < 1 || json_array_size(sig) > INGOT_MAX_SIGNATURE_ARGS)
    return fail(L, INGOT_INVALID_PACK, e->file, "signature", "%zu arguments (allowed: 1..%d)",
                json_array_size(sig), INGOT_MAX_SIGNATURE_ARGS);
  size_t i;
  json_t *a;
  char path[64];
  uint32_t end = 0;
  json_array_foreach(sig, i, a) {
    ingot_format(path, sizeof path, "signature[%zu]", i);
    const char *name, *kind;
    int64_t size, offset;
    if (!json_is_object(a)) return fail(L, INGOT_INVALID_PACK, e->file, path, "%s (allowed: an object)", ingot_json_type_name(a));
    if (!get_string(L, e->file, a, path, "name", &name) || !get_string(L, e->file, a, path, "kind", &kind) ||
        !get_int(L, e->file, a, path, "size", 1, kernarg_size, &size) ||
        !get_int(L, e->file, a, path, "offset", 0, kernarg_size - 1, &offset))
      return 0;
    if ((uint32_t)offset < end || offset + size > kernarg_size)
      return fail(L, INGOT_INVALID_PACK, e->file, path,
                  "offset %lld size %lld overlaps the previous argument or passes kernarg_size %lld "
                  "(allowed: ascending, non-overlapping, within kernarg_size)",
                  (long long)offset, (long long)size, (long long)kernarg_size);
    end = (uint32_t)(offset + size);
    ingot_format(pack->sig[i].kind, sizeof pack->sig[i].kind, "%s", kind);
    pack->sig[i].size = (uint32_t)size;
    pack->sig[i].offset = (uint32_t)offset;
  }
  pack->num_sig = json_array_size(sig);
  json_t *ws = get_typed(L, e->file, e->doc, "", "workspace", JSON_OBJECT, "an object {policy, ...}");
  if (ws == NULL || !get_string(L, e->file, ws, "workspace", "policy", &policy)) return 0;
  if (strcmp(policy, "none") && strcmp(policy, "fixed") && strcmp(policy, "derived"))
    return fail(L, INGOT_INVALID_PACK, e->file, "workspace.policy", "\"%s\" (allowed: none, fixed, derived)", policy);
  return 1;
}

static int check_ued(loader *L, const doc_entry *e, const doc_entry **kmd) {
  const char *s;
  if (!get_string(L, e->file, e->doc, "", "sdk_version", &s)) return 0;
  json_t *gm = get_typed(L, e->file, e->doc, "", "graph_match", JSON_OBJECT, "an object {kind, matchers}");
  if (gm == NULL || !get_string(L, e->file, gm, "graph_match", "kind", &s)) return 0;
  if (strcmp(s, "constraints"))
    return fail(L, INGOT_INVALID_PACK, e->file, "graph_match.kind", "\"%s\" (allowed: \"constraints\")", s);
  json_t *ms = get_string_list(L, e->file, gm, "graph_match", "matchers");
  if (ms == NULL) return 0;
  size_t i;
  json_t *m;
  char path[64];
  json_array_foreach(ms, i, m) {
    ingot_format(path, sizeof path, "graph_match.matchers[%zu]", i);
    const doc_entry *u = resolve(L, e->file, path, json_string_value(m), DOC_UMD);
    if (u == NULL) return 0;
    if (strcmp(json_string_value(json_object_get(u->doc, "scope")), "graph"))
      return fail(L, INGOT_INVALID_PACK, e->file, path, "UMD %s has scope \"kernel\" (allowed: scope \"graph\")", u->file);
  }
  if (!get_string(L, e->file, e->doc, "", "metadata", &s)) return 0;
  if ((*kmd = resolve(L, e->file, "metadata", s, DOC_KMD)) == NULL) return 0;
  json_t *h = json_object_get(e->doc, "heuristic");
  if (h == NULL || !(json_is_null(h) || json_is_string(h)))
    return fail(L, INGOT_INVALID_PACK, e->file, "heuristic", "%s (allowed: null or a descriptor id)", ingot_json_type_name(h));
  if (get_string_list(L, e->file, e->doc, "", "knobs") == NULL) return 0;
  json_t *notes = get_typed(L, e->file, e->doc, "", "behavior_notes", JSON_ARRAY, "a list of strings");
  if (notes == NULL) return 0;
  json_array_foreach(notes, i, m) {
    if (!json_is_string(m)) {
      ingot_format(path, sizeof path, "behavior_notes[%zu]", i);
      return fail(L, INGOT_INVALID_PACK, e->file, path, "%s (allowed: a string)", ingot_json_type_name(m));
    }
  }
  return 1;
}

/* knobs name KMD fields; checked once the KMD is known. */
static int check_knobs(loader *L, const doc_entry *ued) {
  size_t i;
  json_t *k;
  char path[64];
  json_array_foreach(json_object_get(ued->doc, "knobs"), i, k) {
    if (kmd_find(L, json_string_value(k)) == NULL) {
      ingot_format(path, sizeof path, "knobs[%zu]", i);
      return fail(L, INGOT_INVALID_PACK, ued->file, path, "\"%s\" (allowed: a field of the KMD)", json_string_value(k));
    }
  }
  return 1;
}

/* ---- kernels ---------------------------------------------------------------- */

static const ingot_umd *find_umd(const ingot_pack *pack, const char *id) {
  for (size_t i = 0; i < pack->num_umds; ++i)
    if (!strcmp(pack->umds[i].id, id)) return &pack->umds[i];
  return NULL;
}

/* Resolves a list of UMD ids of one scope into pack UMD pointers. */
static int resolve_matchers(loader *L, ingot_pack *pack, const char *file, json_t *ids,
                            const char *path, int graph_scope, const ingot_umd ***out, size_t *n) {
  size_t i;
  json_t *m;
  char ipath[512];
  const ingot_umd **list = realloc((void *)*out, (*n + json_array_size(ids) + 1) * sizeof(*list));
  if (list == NULL) return fail(L, INGOT_OUT_OF_MEMORY, file, path, "out of memory");
  *out = list;
  json_array_foreach(ids, i, m) {
    ingot_format(ipath, sizeof ipath, "%s[%zu]", path, i);
    if (resolve(L, file, ipath, json_string_value(m), DOC_UMD) == NULL) return 0;
    const ingot_umd *u = find_umd(pack, json_string_value(m));
    if (u->graph_scope != graph_scope)
      return fail(L, INGOT_INVALID_PACK, file, ipath, "UMD %s (%s) has scope \"%s\" (allowed: scope \"%s\")",
                  u->file, u->name, u->graph_scope ? "graph" : "kernel", graph_scope ? "graph" : "kernel");
    int dup = 0;
    for (size_t j = 0; j < *n; ++j) dup |= list[j] == u;
    if (!dup) list[(*n)++] = u;
  }
  return 1;
}

/* Metadata against the KMD: only known fields, right types, mandatory ones
 * present, defaults filled in (the family decodes it once the archs are known:
 * decode_metadata). */
static int check_metadata(loader *L, const char *file, const char *kpath, json_t *kd, ingot_kernel *k) {
  char path[512], fpath[600];
  ingot_format(path, sizeof path, "%s.metadata", kpath);
  json_t *md = get_typed(L, file, kd, kpath, "metadata", JSON_OBJECT, "an object of KMD fields");
  if (md == NULL) return 0;
  const char *key;
  json_t *v;
  json_object_foreach(md, key, v) {
    ingot_format(fpath, sizeof fpath, "%s.%s", path, key);
    const kmd_field *f = kmd_find(L, key);
    if (f == NULL) {
      ingot_strbuf names = {0};
      for (size_t i = 0; i < L->num_kmd_fields; ++i)
        ingot_strbuf_appendf(&names, "%s%s", i ? ", " : "", L->kmd_fields[i].name);
      fail(L, INGOT_INVALID_PACK, file, fpath, "unknown metadata field (allowed: the KMD's fields %s)",
           ingot_strbuf_str(&names));
      ingot_strbuf_free(&names);
      return 0;
    }
    if (!kmd_type_ok(f->type, v))
      return fail(L, INGOT_INVALID_PACK, file, fpath, "%s (allowed: %s, the KMD type)", ingot_json_type_name(v), f->type);
  }
  k->metadata = json_deep_copy(md);
  if (k->metadata == NULL) return fail(L, INGOT_OUT_OF_MEMORY, file, path, "out of memory");
  for (size_t i = 0; i < L->num_kmd_fields; ++i) {
    const kmd_field *f = &L->kmd_fields[i];
    if (json_object_get(md, f->name) != NULL) continue;
    if (f->default_value == NULL)
      return fail(L, INGOT_INVALID_PACK, file, path, "missing field \"%s\" (allowed: every KMD field without a default)",
                  f->name);
    if (json_object_set(k->metadata, f->name, f->default_value) != 0)
      return fail(L, INGOT_OUT_OF_MEMORY, file, path, "out of memory");
  }
  return 1;
}

/* Relative, inside the folder: no "..", no leading '/', no backslash. */
static int relative_path_ok(const char *p) {
  if (p[0] == '/' || strchr(p, '\\') != NULL) return 0;
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 2 && s[0] == '.' && s[1] == '.') return 0;
    s += len;
    if (*s == '/') ++s;
  }
  return 1;
}

/* The HSA code object version of an AMDGPU ELF from its header (EI_OSABI 64,
 * EI_ABIVERSION as ingot_abi.h's INGOT_AMD_ABI_VERSIONS maps it: 2, 3, 4 = v4,
 * v5, v6); -1 for anything else. */
static int amd_code_object_version(const unsigned char *bytes, size_t size) {
  if (size < 16 || bytes[7] != 64 /* ELFOSABI_AMDGPU_HSA */) return -1;
#define INGOT_ABI_CASE(abi, version) \
  if (bytes[8] == (abi)) return (version);
  INGOT_AMD_ABI_VERSIONS(INGOT_ABI_CASE)
#undef INGOT_ABI_CASE
  return -1;
}

static int check_object(loader *L, const char *file, const char *opath, json_t *o, ingot_pack *pack,
                        ingot_code_object *obj, const char *spath, const char *const *symbols) {
  const char *rel, *sha;
  char path[600], full[PATH_MAX], real[PATH_MAX];
  if (!json_is_object(o)) return fail(L, INGOT_INVALID_PACK, file, opath, "%s (allowed: an object)", ingot_json_type_name(o));
  if (!get_string(L, file, o, opath, "path", &rel)) return 0;
  ingot_format(path, sizeof path, "%s.path", opath);
  if (!relative_path_ok(rel))
    return fail(L, INGOT_INVALID_PACK, file, path,
                "\"%s\" leaves the pack folder (allowed: a relative path without '..', a leading '/' or '\\')", rel);
  ingot_format(full, sizeof full, "%s/%s", L->dir, rel);
  if (realpath(full, real) == NULL)
    return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\": %s (allowed: an existing file in the pack folder)", rel,
                strerror(errno));
  size_t dl = strlen(L->dir);
  if (strncmp(real, L->dir, dl) != 0 || real[dl] != '/')
    return fail(L, INGOT_INVALID_PACK, file, path,
                "\"%s\" resolves to %s, outside the pack folder (allowed: a file inside %s)", rel, real, L->dir);
  obj->path = strdup(real);
  if (obj->path == NULL) return fail(L, INGOT_OUT_OF_MEMORY, file, path, "out of memory");
  if (!get_string(L, file, o, opath, "sha256", &sha)) return 0;
  ingot_format(path, sizeof path, "%s.sha256", opath);
  if (!is_sha256_hex(sha))
    return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\" (allowed: 64 lowercase hex digits)", sha);
  for (int i = 0; i < 32; ++i) {
    unsigned x;
    sscanf(sha + 2 * i, "%2x", &x);
    obj->sha256[i] = (unsigned char)x;
  }
  /* Resources, used for planning only: absent or odd values read as unknown (0). */
  json_t *res = json_object_get(json_object_get(json_object_get(o, "resources"), "split"), "lds");
  obj->split_lds = json_is_integer(res) && json_integer_value(res) > 0 && json_integer_value(res) < (1 << 24)
                       ? (int)json_integer_value(res) : 0;
  /* AMD: .vgpr_count already counts the AGPRs (one register file on gfx90a and
   * later), so "agpr" is a part of "vgpr", never added to it. */
  json_t *split_res = json_object_get(json_object_get(o, "resources"), "split");
  json_t *regs = json_object_get(split_res, "registers");
  json_t *vgpr = json_object_get(split_res, "vgpr");
  int64_t r = json_is_integer(regs) ? json_integer_value(regs) : json_is_integer(vgpr) ? json_integer_value(vgpr) : 0;
  obj->split_registers = r > 0 && r <= 1024 ? (int)r : 0;
  /* AMD: the code object version the KDP claims, checked against the file below. */
  int64_t claimed_version = 0;
  const int amd = strncmp(obj->arch, "gfx", 3) == 0;
  if (amd) {
    if (!get_int(L, file, o, opath, "code_object_version", 1, INT32_MAX, &claimed_version)) return 0;
    if (claimed_version < INGOT_AMD_CODE_OBJECT_MIN || claimed_version > INGOT_AMD_CODE_OBJECT_MAX) {
      ingot_format(path, sizeof path, "%s.code_object_version", opath);
      return fail(L, INGOT_INVALID_PACK, file, path,
                  "%lld (allowed: %d..%d, the code object versions every ROCm 6.0+ runtime loads; v6 loads only on "
                  "ROCm 6.3 and later: build with -mcode-object-version=5)",
                  (long long)claimed_version, INGOT_AMD_CODE_OBJECT_MIN, INGOT_AMD_CODE_OBJECT_MAX);
    }
  }
  /* signature and kernarg_size against the UDD */
  int64_t ks;
  if (!get_int(L, file, o, opath, "kernarg_size", 1, INGOT_MAX_KERNARG_BYTES, &ks)) return 0;
  if ((uint32_t)ks != pack->kernarg_size) {
    ingot_format(path, sizeof path, "%s.kernarg_size", opath);
    return fail(L, INGOT_INVALID_PACK, file, path, "%lld (allowed: %u, the UDD's kernarg_size)", (long long)ks,
                pack->kernarg_size);
  }
  json_t *sig = get_typed(L, file, o, opath, "signature", JSON_ARRAY, "a list of {kind, size, offset}");
  if (sig == NULL) return 0;
  ingot_format(path, sizeof path, "%s.signature", opath);
  if (json_array_size(sig) != pack->num_sig)
    return fail(L, INGOT_INVALID_PACK, file, path, "%zu arguments (allowed: %zu, as the UDD's kernarg signature)",
                json_array_size(sig), pack->num_sig);
  size_t i;
  json_t *a;
  json_array_foreach(sig, i, a) {
    char apath[700];
    ingot_format(apath, sizeof apath, "%s[%zu]", path, i);
    const char *kind;
    int64_t size, offset;
    if (!json_is_object(a)) return fail(L, INGOT_INVALID_PACK, file, apath, "%s (allowed: an object)", ingot_json_type_name(a));
    if (!get_string(L, file, a, apath, "kind", &kind) || !get_int(L, file, a, apath, "size", 0, INT32_MAX, &size) ||
        !get_int(L, file, a, apath, "offset", 0, INT32_MAX, &offset))
      return 0;
    const ingot_sig_arg *u = &pack->sig[i];
    if (strcmp(kind, u->kind) || (uint32_t)size != u->size || (uint32_t)offset != u->offset)
      return fail(L, INGOT_INVALID_PACK, file, apath,
                  "kind %s size %lld offset %lld disagrees with the UDD (allowed: kind %s size %u offset %u)", kind,
                  (long long)size, (long long)offset, u->kind, u->size, u->offset);
  }
  if (get_typed(L, file, o, opath, "resources", JSON_OBJECT, "an object of per-entry-point resources") == NULL)
    return 0;
  /* Dynamic LDS per entry point, launched with it; absent: 0 for every entry point. */
  json_t *dyn = json_object_get(o, "dynamic_lds");
  if (dyn != NULL) {
    ingot_format(path, sizeof path, "%s.dynamic_lds", opath);
    if (!json_is_object(dyn))
      return fail(L, INGOT_INVALID_PACK, file, path, "%s (allowed: an object {entry point: bytes})",
                  ingot_json_type_name(dyn));
    const size_t max = ingot_arch_max_dynamic_lds(obj->arch);
    const char *ep;
    json_t *v;
    json_object_foreach(dyn, ep, v) {
      size_t e = 0;
      while (e < pack->num_entry_points && strcmp(json_string_value(json_array_get(L->entry_points, e)), ep)) ++e;
      if (e == pack->num_entry_points) {
        ingot_strbuf names = {0};
        for (size_t i = 0; i < pack->num_entry_points; ++i)
          ingot_strbuf_appendf(&names, "%s%s", i ? ", " : "", json_string_value(json_array_get(L->entry_points, i)));
        fail(L, INGOT_INVALID_PACK, file, path, "entry point \"%s\" is not in the UDD (allowed: %s)", ep,
             ingot_strbuf_str(&names));
        ingot_strbuf_free(&names);
        return 0;
      }
      int64_t bytes;
      if (!get_int(L, file, dyn, path, ep, 0, (int64_t)max, &bytes)) return 0;
      obj->dynamic_lds[e] = (uint32_t)bytes;
    }
  }
  /* the bytes themselves */
  unsigned char *bytes;
  size_t size;
  char shown[PATH_MAX + 64];
  ingot_format(shown, sizeof shown, "%s", real);
  /* the resolved path holds no symbolic link; one swapped in since is refused */
  if (!read_file(L, AT_FDCWD, real, 1, shown, INGOT_MAX_CODE_OBJECT_BYTES, &bytes, &size)) return 0;
  char actual[65];
  int eq = sha256_hex_equal(bytes, size, sha, actual);
  ingot_format(path, sizeof path, "%s.sha256", opath);
  if (eq <= 0) {
    free(bytes);
    if (eq < 0) return fail(L, INGOT_INTERNAL, file, path, "sha256 could not be computed (libcrypto failed)");
    return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\" but %s hashes to %s (allowed: the file's sha256)", sha,
                rel, actual);
  }
  /* The object must define the entry points the KDP names (a consistently
   * edited KDP could otherwise point a kernel at another kernel's object). */
  ingot_strbuf why = {0};
  int missing = -1;
  int has = ingot_elf_check_entry_points(bytes, size, obj->arch, symbols, pack->num_entry_points, &missing, &why);
  /* EI_OSABI and EI_ABIVERSION, past the header checks above: the version the
   * HIP runtime will see is the one the KDP claims. */
  const int file_version = has && amd ? amd_code_object_version(bytes, size) : 0;
  const int os_abi = size > 8 ? bytes[7] : -1, abi_version = size > 8 ? bytes[8] : -1;
  free(bytes);
  if (has && amd && file_version != claimed_version) {
    ingot_format(path, sizeof path, "%s.code_object_version", opath);
    if (file_version < 0)
      return fail(L, INGOT_INVALID_PACK, file, path,
                  "%lld, but %s has EI_OSABI %d, EI_ABIVERSION %d: no AMDGPU HSA code object version (allowed: "
                  "EI_OSABI 64 with EI_ABIVERSION 2 (v4) or 3 (v5))",
                  (long long)claimed_version, rel, os_abi, abi_version);
    return fail(L, INGOT_INVALID_PACK, file, path,
                "%lld, but %s is code object v%d (EI_ABIVERSION %d) (allowed: the file's version, one of v%d..v%d)",
                (long long)claimed_version, rel, file_version, abi_version, INGOT_AMD_CODE_OBJECT_MIN,
                INGOT_AMD_CODE_OBJECT_MAX);
  }
  if (!has) {
    if (missing >= 0)
      ingot_format(path, sizeof path, "%s.symbols.%s", spath,
                   json_string_value(json_array_get(L->entry_points, (size_t)missing)));
    else
      ingot_format(path, sizeof path, "%s.path", opath);
    fail(L, INGOT_INVALID_PACK, file, path, "%s: %s", rel, ingot_strbuf_str(&why));
    ingot_strbuf_free(&why);
    return 0;
  }
  ingot_strbuf_free(&why);
  return 1;
}

/* The family decodes the kernel's metadata for its plans and refuses what no
 * plan could accept (family.h meta_decode), knowing the kernel's archs. */
static int decode_metadata(loader *L, const char *file, const char *kpath, const ingot_pack *pack, ingot_kernel *k) {
  const char *archs[INGOT_MAX_ARCHS];
  for (size_t o = 0; o < k->num_objects; ++o) archs[o] = k->objects[o].arch;
  char where[128] = "", why[512] = "", path[600];
  memset(k->meta.bytes, 0, sizeof k->meta.bytes);
  if (pack->family->meta_decode(k->metadata, archs, k->num_objects, k->meta.bytes, where, sizeof where, why,
                                sizeof why))
    return 1;
  if (where[0]) ingot_format(path, sizeof path, "%s.metadata.%s", kpath, where);
  else ingot_format(path, sizeof path, "%s.metadata", kpath);
  return fail(L, INGOT_INVALID_PACK, file, path, "%s", why[0] ? why : "refused by the family");
}

static int check_kernel(loader *L, const doc_entry *kdp, json_t *kd, size_t index, ingot_pack *pack,
                        ingot_kernel *k) {
  const char *file = kdp->file;
  char kpath[64], path[512];
  ingot_format(kpath, sizeof kpath, "kernelDescriptors[%zu]", index);
  if (!json_is_object(kd)) return fail(L, INGOT_INVALID_PACK, file, kpath, "%s (allowed: an object)", ingot_json_type_name(kd));
  if (!check_header(L, file, kd, kpath, &k->id, &k->name)) return 0;
  ingot_format(path, sizeof path, "%s.id", kpath);
  if (!add_entry(L, kd, file, DOC_KERNEL, k->id, path)) return 0;
  for (size_t j = 0; j < index; ++j) {
    if (!strcmp(pack->kernels[j].name, k->name)) {
      ingot_format(path, sizeof path, "%s.name", kpath);
      return fail(L, INGOT_INVALID_PACK, file, path, "duplicate kernel name \"%s\" (also kernelDescriptors[%zu])",
                  k->name, j);
    }
  }
  if (!get_int(L, file, kd, kpath, "priority", INT32_MIN, INT32_MAX, &k->priority)) return 0;
  json_t *ms = get_string_list(L, file, kd, kpath, "matchers");
  ingot_format(path, sizeof path, "%s.matchers", kpath);
  if (ms == NULL || !resolve_matchers(L, pack, file, ms, path, 0, &k->matchers, &k->num_matchers)) return 0;
  if (!check_metadata(L, file, kpath, kd, k)) return 0;
  char spath[128];
  ingot_format(spath, sizeof spath, "%s.kernel_source", kpath);
  json_t *src = get_typed(L, file, kd, kpath, "kernel_source", JSON_OBJECT, "an object {kind: code_object, ...}");
  const char *kind;
  if (src == NULL || !get_string(L, file, src, spath, "kind", &kind)) return 0;
  if (strcmp(kind, "code_object")) {
    ingot_format(path, sizeof path, "%s.kind", spath);
    return fail(L, INGOT_INVALID_PACK, file, path,
                "\"%s\" (allowed: \"code_object\"; this looks like an authored KDP from generated/, open "
                "the packaged pack under build/packs/ instead)", kind);
  }
  ingot_format(path, sizeof path, "%s.symbols", spath);
  json_t *syms = get_typed(L, file, src, spath, "symbols", JSON_OBJECT, "an object {entry point: symbol}");
  if (syms == NULL) return 0;
  json_t *eps = L->entry_points;
  for (size_t e = 0; e < pack->num_entry_points; ++e) {
    const char *ep = json_string_value(json_array_get(eps, e));
    if (!get_string(L, file, syms, path, ep, &k->symbols[e])) return 0;
  }
  ingot_format(path, sizeof path, "%s.objects", spath);
  json_t *objs = get_typed(L, file, src, spath, "objects", JSON_OBJECT, "an object {arch: code object}");
  if (objs == NULL) return 0;
  if (json_object_size(objs) < 1 || json_object_size(objs) > INGOT_MAX_ARCHS)
    return fail(L, INGOT_INVALID_PACK, file, path, "%zu archs (allowed: 1..%d)", json_object_size(objs), INGOT_MAX_ARCHS);
  k->objects = calloc(json_object_size(objs), sizeof(*k->objects));
  if (k->objects == NULL) return fail(L, INGOT_OUT_OF_MEMORY, file, path, "out of memory");
  const char *arch;
  json_t *o;
  json_object_foreach(objs, arch, o) {
    char opath[600];
    ingot_format(opath, sizeof opath, "%s.%s", path, arch);
    int known = 0;
    for (size_t a = 0; a < pack->num_archs; ++a) known |= !strcmp(pack->archs[a], arch);
    if (!known) {
      ingot_strbuf names = {0};
      for (size_t a = 0; a < pack->num_archs; ++a) ingot_strbuf_appendf(&names, "%s%s", a ? ", " : "", pack->archs[a]);
      fail(L, INGOT_INVALID_PACK, file, opath, "arch \"%s\" is not in the KDP's arch list (allowed: %s)", arch,
           ingot_strbuf_str(&names));
      ingot_strbuf_free(&names);
      return 0;
    }
    ingot_code_object *obj = &k->objects[k->num_objects++];
    ingot_format(obj->arch, sizeof obj->arch, "%s", arch);
    if (!check_object(L, file, opath, o, pack, obj, spath, k->symbols)) return 0;
  }
  return decode_metadata(L, file, kpath, pack, k);
}

static int check_kdp(loader *L, const doc_entry *kdp, ingot_pack *pack) {
  const char *file = kdp->file, *s;
  pack->kdp = kdp->doc;
  pack->id = kdp->id;
  pack->name = json_string_value(json_object_get(kdp->doc, "name"));
  /* dispatch -> UDD -> the stub -> its family */
  if (!get_string(L, file, kdp->doc, "", "dispatch", &s)) return 0;
  const doc_entry *udd = resolve(L, file, "dispatch", s, DOC_UDD);
  if (udd == NULL || !check_udd(L, udd, file, pack)) return 0;
  L->entry_points = json_object_get(udd->doc, "entry_points");
  pack->family = ingot_family_find(pack->dispatch->family);
  if (pack->family == NULL)
    return fail(L, INGOT_INVALID_PACK, udd->file, "dispatch_symbol",
                "\"%s\" serves family \"%s\", which this runtime does not know (allowed: %s)",
                pack->dispatch->symbol, pack->dispatch->family ? pack->dispatch->family : "(none)",
                ingot_family_names());
  /* every UMD's constraints name the family's fields */
  for (size_t u = 0; u < pack->num_umds; ++u)
    if (!check_umd_constraints(L, &pack->umds[u], pack->family)) return 0;
  /* engine -> UED -> KMD */
  if (!get_string(L, file, kdp->doc, "", "engine", &s)) return 0;
  const doc_entry *ued = resolve(L, file, "engine", s, DOC_UED), *kmd = NULL;
  if (ued == NULL || !check_ued(L, ued, &kmd) || !check_kmd(L, kmd, pack->family) || !check_knobs(L, ued))
    return 0;
  /* graph matchers: KDP.matchers then the UED's */
  json_t *ms = get_string_list(L, file, kdp->doc, "", "matchers");
  if (ms == NULL || !resolve_matchers(L, pack, file, ms, "matchers", 1, &pack->graph_matchers, &pack->num_graph_matchers))
    return 0;
  if (!resolve_matchers(L, pack, ued->file, json_object_get(json_object_get(ued->doc, "graph_match"), "matchers"),
                        "graph_match.matchers", 1, &pack->graph_matchers, &pack->num_graph_matchers))
    return 0;
  /* archs */
  json_t *archs = get_string_list(L, file, kdp->doc, "", "arch");
  if (archs == NULL) return 0;
  if (json_array_size(archs) < 1 || json_array_size(archs) > INGOT_MAX_ARCHS)
    return fail(L, INGOT_INVALID_PACK, file, "arch", "%zu archs (allowed: 1..%d)", json_array_size(archs), INGOT_MAX_ARCHS);
  size_t i;
  json_t *a;
  json_array_foreach(archs, i, a) {
    if (json_string_length(a) == 0 || json_string_length(a) >= INGOT_ARCH_NAME_BYTES) {
      char path[32];
      ingot_format(path, sizeof path, "arch[%zu]", i);
      return fail(L, INGOT_INVALID_PACK, file, path, "\"%s\" (allowed: 1..%d characters)", json_string_value(a),
                  INGOT_ARCH_NAME_BYTES - 1);
    }
    ingot_format(pack->archs[i], sizeof pack->archs[i], "%s", json_string_value(a));
  }
  pack->num_archs = json_array_size(archs);
  json_t *prov = json_object_get(kdp->doc, "provenance");
  if (prov != NULL && !json_is_object(prov))
    return fail(L, INGOT_INVALID_PACK, file, "provenance", "%s (allowed: an object)", ingot_json_type_name(prov));
  /* kernels */
  json_t *kds = get_typed(L, file, kdp->doc, "", "kernelDescriptors", JSON_ARRAY, "a list of kernel descriptors");
  if (kds == NULL) return 0;
  size_t n = json_array_size(kds);
  if (n > INGOT_MAX_KERNELS_PER_PACK)
    return fail(L, INGOT_LIMIT_EXCEEDED, file, "kernelDescriptors", "%zu kernels (allowed: at most %d per pack)", n,
                INGOT_MAX_KERNELS_PER_PACK);
  if (n == 0) return fail(L, INGOT_INVALID_PACK, file, "kernelDescriptors", "empty (allowed: 1..%d kernels)", INGOT_MAX_KERNELS_PER_PACK);
  pack->kernels = calloc(n, sizeof(*pack->kernels));
  if (pack->kernels == NULL) return fail(L, INGOT_OUT_OF_MEMORY, file, "kernelDescriptors", "out of memory");
  for (i = 0; i < n; ++i) {
    ingot_kernel *k = &pack->kernels[i];
    k->pack = pack;
    pthread_mutex_init(&k->load_lock, NULL);
    atomic_init(&k->load_state, 0);
    pack->num_kernels = i + 1;
    if (!check_kernel(L, kdp, json_array_get(kds, i), i, pack, k)) return 0;
  }
  return 1;
}

void ingot_pack_free(ingot_pack *pack, const ingot_backend_ops *ops, ingot_backend_device *dev) {
  if (pack == NULL) return;
  for (size_t i = 0; i < pack->num_kernels; ++i) {
    ingot_kernel *k = &pack->kernels[i];
    if (atomic_load(&k->load_state) == 1 && ops != NULL && k->module != NULL) ops->module_unload(dev, k->module);
    pthread_mutex_destroy(&k->load_lock);
    for (size_t o = 0; o < k->num_objects; ++o) free(k->objects[o].path);
    free(k->objects);
    free((void *)k->matchers);
    json_decref(k->metadata);
  }
  free(pack->kernels);
  free((void *)pack->graph_matchers);
  free(pack->umds);
  free(pack->dir);
  free(pack->kdp_file);
  free(pack->ids);
  json_decref(pack->docs);
  free(pack);
}

ingot_status ingot_pack_load(const char *pack_dir, ingot_pack *const *existing, size_t num_existing,
                             const unsigned char *signing_key, ingot_pack **out, ingot_strbuf *err) {
  *out = NULL;
  loader L = {0};
  L.err = err;
  L.existing = existing;
  L.num_existing = num_existing;
  char real[PATH_MAX];
  if (realpath(pack_dir, real) == NULL) {
    ingot_strbuf_appendf(err, "%s: cannot open the pack folder: %s", pack_dir, strerror(errno));
    return INGOT_IO_ERROR;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ingot_strbuf_appendf(err, "%s: not a folder (allowed: a packaged pack folder, build/packs/<pack>)", pack_dir);
    return INGOT_IO_ERROR;
  }
  ingot_pack *pack = calloc(1, sizeof(*pack));
  L.docs = json_array();
  if (pack == NULL || L.docs == NULL || (pack->dir = strdup(real)) == NULL) {
    free(pack ? pack->dir : NULL);
    free(pack);
    json_decref(L.docs);
    ingot_strbuf_appendf(err, "%s: out of memory", pack_dir);
    return INGOT_OUT_OF_MEMORY;
  }
  pack->docs = L.docs;
  L.dir = pack->dir;
  int ok = load_documents(&L, signing_key);
  /* every UMD first (kernels and the KDP point at them) */
  size_t num_umd = 0;
  for (size_t i = 0; ok && i < L.num_entries; ++i) num_umd += L.entries[i].kind == DOC_UMD;
  if (ok && (pack->umds = calloc(num_umd + 1, sizeof(*pack->umds))) == NULL)
    ok = fail(&L, INGOT_OUT_OF_MEMORY, pack_dir, "", "out of memory");
  for (size_t i = 0; ok && i < L.num_entries; ++i)
    if (L.entries[i].kind == DOC_UMD) ok = check_umd(&L, &L.entries[i], &pack->umds[pack->num_umds++]);
  /* every UED, KMD, UDD in the folder is checked, referenced or not */
  const doc_entry *kdp = NULL;
  for (size_t i = 0; i < L.num_entries; ++i)
    if (L.entries[i].kind == DOC_KDP) kdp = &L.entries[i];
  for (size_t i = 0; ok && i < L.num_entries; ++i) {
    const doc_entry *e = &L.entries[i];
    const doc_entry *kmd = NULL;
    ingot_pack scratch;
    if (e->kind == DOC_UED) ok = check_ued(&L, e, &kmd);
    else if (e->kind == DOC_KMD) ok = check_kmd(&L, e, NULL);
    else if (e->kind == DOC_UDD) {
      memset(&scratch, 0, sizeof scratch);
      scratch.kdp = kdp != NULL ? kdp->doc : NULL; /* its dispatch_library record */
      ok = check_udd(&L, e, kdp != NULL ? kdp->file : e->file, &scratch);
    }
  }
  if (ok) {
    pack->kdp_file = strdup(kdp->file);
    if (pack->kdp_file == NULL) ok = fail(&L, INGOT_OUT_OF_MEMORY, pack_dir, "", "out of memory");
  }
  if (ok) {
    doc_entry kdp_entry = *kdp; /* L.entries moves as the kernels add their ids */
    ok = check_kdp(&L, &kdp_entry, pack);
  }
  pack->ids = L.entries; /* later packs check their ids against these */
  pack->num_ids = L.num_entries;
  free(L.kmd_fields);
  if (!ok) {
    ingot_pack_free(pack, NULL, NULL);
    return L.status != INGOT_OK ? L.status : INGOT_INTERNAL;
  }
  *out = pack;
  return INGOT_OK;
}
