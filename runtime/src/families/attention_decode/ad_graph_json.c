/* ad_graph_json.c: the JSON form of an attention graph (docs/attention_decode.md).
 * Unknown keys are errors, so a typo never silently becomes a default. */
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "ad_family.h"

typedef struct gj {
  char *err;
  size_t err_size;
} gj;

static ingot_status bad(gj *J, const char *path, const char *fmt, const char *a, const char *b) {
  char msg[384];
  ingot_format(msg, sizeof msg, fmt, a, b);
  ingot_format(J->err, J->err_size, "graph JSON: %s: %s", path, msg);
  return INGOT_INVALID_ARGUMENT;
}

/* Maps a string value to one of names[] (index = enum value offset). */
static ingot_status pick(gj *J, const char *path, json_t *v, const char *const *names, int count,
                         const char *allowed, int *out) {
  if (!json_is_string(v)) return bad(J, path, "%s (allowed: %s)", ingot_json_type_name(v), allowed);
  for (int i = 0; i < count; ++i)
    if (names[i] && !strcmp(json_string_value(v), names[i])) {
      *out = i;
      return INGOT_OK;
    }
  char shown[80];
  ingot_format(shown, sizeof shown, "\"%.64s\"", json_string_value(v));
  return bad(J, path, "%s (allowed: %s)", shown, allowed);
}

static ingot_status check_keys(gj *J, const char *path, json_t *obj, const char *const *keys) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int known = 0;
    for (const char *const *k = keys; *k; ++k) known |= !strcmp(*k, key);
    if (!known) {
      char p[128], allowed[256] = "";
      ingot_format(p, sizeof p, "%s%s%.64s", path, path[0] ? "." : "", key);
      for (const char *const *k = keys; *k; ++k) {
        size_t l = strlen(allowed);
        ingot_format(allowed + l, sizeof allowed - l, "%s%s", l ? ", " : "", *k);
      }
      return bad(J, p, "unknown key (allowed: %s)%s", allowed, "");
    }
  }
  return INGOT_OK;
}

static ingot_status int_list(gj *J, const char *path, json_t *a, int64_t *out, int rank, int64_t min) {
  if (!json_is_array(a) || (rank > 0 && (int)json_array_size(a) != rank) || json_array_size(a) < 1 ||
      json_array_size(a) > INGOT_MAX_RANK) {
    char want[64];
    if (rank > 0) ingot_format(want, sizeof want, "a list of %d integers, as many as dims", rank);
    else ingot_format(want, sizeof want, "a list of 1..%d integers", INGOT_MAX_RANK);
    char got[64];
    if (json_is_array(a)) ingot_format(got, sizeof got, "a list of %zu", json_array_size(a));
    else ingot_format(got, sizeof got, "%s", ingot_json_type_name(a));
    return bad(J, path, "%s (allowed: %s)", got, want);
  }
  size_t i;
  json_t *x;
  json_array_foreach(a, i, x) {
    char p[96];
    ingot_format(p, sizeof p, "%s[%zu]", path, i);
    if (!json_is_integer(x) || json_integer_value(x) < min) {
      char got[64], want[48];
      if (json_is_integer(x)) ingot_format(got, sizeof got, "%lld", (long long)json_integer_value(x));
      else ingot_format(got, sizeof got, "%s", ingot_json_type_name(x));
      ingot_format(want, sizeof want, "an integer >= %lld", (long long)min);
      return bad(J, p, "%s (allowed: %s)", got, want);
    }
    out[i] = json_integer_value(x);
  }
  return INGOT_OK;
}

static const char *const kDtypes[] = {NULL, "bf16", "fp16", "fp32", "int32", "int64"};
static const char *const kMemory[] = {"device", "host"};

static void contiguous_strides(ingot_tensor_desc *t) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; --i) {
    t->strides[i] = s;
    s = (s > INT64_MAX / (t->dims[i] > 0 ? t->dims[i] : 1)) ? INT64_MAX : s * t->dims[i];
  }
}

static ingot_status tensor(gj *J, const char *name, json_t *v, ingot_tensor_desc *t) {
  memset(t, 0, sizeof(*t));
  if (!json_is_object(v)) return bad(J, name, "%s (allowed: an object {dtype, dims, strides?, memory?})", ingot_json_type_name(v), "");
  static const char *const keys[] = {"dtype", "dims", "strides", "memory", NULL};
  ingot_status s = check_keys(J, name, v, keys);
  if (s != INGOT_OK) return s;
  char p[64];
  int d = 0;
  ingot_format(p, sizeof p, "%s.dtype", name);
  if ((s = pick(J, p, json_object_get(v, "dtype"), kDtypes, 6, "bf16, fp16, fp32, int32, int64", &d)) != INGOT_OK) return s;
  t->dtype = (ingot_dtype)d;
  ingot_format(p, sizeof p, "%s.dims", name);
  json_t *dims = json_object_get(v, "dims");
  if ((s = int_list(J, p, dims, t->dims, 0, 1)) != INGOT_OK) return s;
  t->rank = (int)json_array_size(dims);
  json_t *strides = json_object_get(v, "strides");
  ingot_format(p, sizeof p, "%s.strides", name);
  if (strides == NULL) contiguous_strides(t);
  else if ((s = int_list(J, p, strides, t->strides, t->rank, 1)) != INGOT_OK) return s;
  json_t *mem = json_object_get(v, "memory");
  int m = 0;
  ingot_format(p, sizeof p, "%s.memory", name);
  if (mem != NULL && (s = pick(J, p, mem, kMemory, 2, "device, host", &m)) != INGOT_OK) return s;
  t->memory = (ingot_memory)m;
  return INGOT_OK;
}

INGOT_API ingot_status ingot_graph_from_json(const char *text, size_t len, ingot_attention_graph *out, char *err,
                                             size_t err_size) {
  gj J = {err, err_size};
  ingot_format(err, err_size, "%s", "");
  if (out == NULL || text == NULL) {
    ingot_format(err, err_size, "ingot_graph_from_json: %s is NULL", out == NULL ? "out" : "json_text");
    return INGOT_INVALID_ARGUMENT;
  }
  memset(out, 0, sizeof(*out));
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    ingot_format(err, err_size, "graph JSON: line %d column %d: %s", je.line, je.column, je.text);
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_attention_graph g;
  memset(&g, 0, sizeof g);
  ingot_status s = INGOT_OK;
  static const char *const keys[] = {"q", "k", "v", "o", "lse", "seq_lens", "page_table", "kv_layout",
                                     "capacity", "mask", "mask_align", "scale", NULL};
  if (!json_is_object(root)) s = bad(&J, "(top level)", "%s (allowed: an object)", ingot_json_type_name(root), "");
  if (s == INGOT_OK) s = check_keys(&J, "", root, keys);
  if (s == INGOT_OK) s = tensor(&J, "q", json_object_get(root, "q"), &g.q);
  if (s == INGOT_OK) s = tensor(&J, "k", json_object_get(root, "k"), &g.k);
  if (s == INGOT_OK) s = tensor(&J, "v", json_object_get(root, "v"), &g.v);
  if (s == INGOT_OK) {
    json_t *o = json_object_get(root, "o");
    if (o != NULL) s = tensor(&J, "o", o, &g.o);
    else { /* default: q's dtype and dims, contiguous, device */
      g.o = g.q;
      g.o.memory = INGOT_MEMORY_DEVICE;
      contiguous_strides(&g.o);
    }
  }
  json_t *lse = json_object_get(root, "lse");
  if (s == INGOT_OK && lse != NULL && !json_is_null(lse)) s = tensor(&J, "lse", lse, &g.lse);
  if (s == INGOT_OK) s = tensor(&J, "seq_lens", json_object_get(root, "seq_lens"), &g.seq_lens);
  json_t *pt = json_object_get(root, "page_table");
  if (s == INGOT_OK && pt != NULL && !json_is_null(pt)) s = tensor(&J, "page_table", pt, &g.page_table);
  int e = 0;
  static const char *const kLayouts[] = {"contiguous", "paged"};
  static const char *const kMasks[] = {"none", "causal"};
  static const char *const kAligns[] = {"bottom_right", "top_left"};
  json_t *v;
  if (s == INGOT_OK && (v = json_object_get(root, "kv_layout")) != NULL &&
      (s = pick(&J, "kv_layout", v, kLayouts, 2, "contiguous, paged", &e)) == INGOT_OK)
    g.kv_layout = (ingot_kv_layout)e;
  if (s == INGOT_OK && (v = json_object_get(root, "mask")) != NULL &&
      (s = pick(&J, "mask", v, kMasks, 2, "none, causal", &e)) == INGOT_OK)
    g.mask = (ingot_mask)e;
  if (s == INGOT_OK && (v = json_object_get(root, "mask_align")) != NULL &&
      (s = pick(&J, "mask_align", v, kAligns, 2, "bottom_right, top_left", &e)) == INGOT_OK)
    g.mask_align = (ingot_mask_align)e;
  if (s == INGOT_OK) {
    v = json_object_get(root, "capacity");
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
      char got[48];
      if (json_is_integer(v)) ingot_format(got, sizeof got, "%lld", (long long)json_integer_value(v));
      else ingot_format(got, sizeof got, "%s", ingot_json_type_name(v));
      s = bad(&J, "capacity", "%s (allowed: an integer >= 1, tokens each sequence may hold)", got, "");
    } else {
      g.capacity = json_integer_value(v);
    }
  }
  if (s == INGOT_OK) {
    v = json_object_get(root, "scale");
    if (v == NULL) g.scale = g.q.rank == 4 ? (float)(1.0 / sqrt((double)g.q.dims[3])) : 1.0f;
    else if (!json_is_number(v) || !isfinite(json_number_value(v)))
      s = bad(&J, "scale", "%s (allowed: a finite number; default 1/sqrt(head_dim))", ingot_json_type_name(v), "");
    else g.scale = (float)json_number_value(v);
  }
  json_decref(root);
  if (s == INGOT_OK) s = ingot_graph_validate(&g, err, err_size); /* shapes agree across tensors */
  if (s == INGOT_OK) *out = g;
  return s;
}
