/* registry.c: the families the runtime knows and the dispatch stubs compiled
 * into libingot. Adding a family is a line in each table below, its folder
 * runtime/src/families/<family>/ and its pack (docs/design/runtime-families.md);
 * nothing else in the runtime changes. */
#include <pthread.h>
#include <string.h>

#include "dispatch.h"
#include "family.h"

extern const ingot_family ingot_family_attention_decode;
extern const ingot_family ingot_family_kv_append;

static const ingot_family *const kFamilies[] = {
    &ingot_family_attention_decode,
    &ingot_family_kv_append,
};

/* The stubs of the shipped packs (generated/<pack>/dispatch/); a provider's
 * own are found in the process or beside its pack (dispatch_registry.c). */
extern const ingot_dispatch_entry ingot_attention_decode_dispatch;
extern const ingot_dispatch_entry ingot_kv_append_dispatch;

const ingot_dispatch_entry *const ingot_builtin_dispatch[] = {
    &ingot_attention_decode_dispatch,
    &ingot_kv_append_dispatch,
};
const size_t ingot_num_builtin_dispatch = sizeof(ingot_builtin_dispatch) / sizeof(ingot_builtin_dispatch[0]);

#define NUM_FAMILIES (sizeof(kFamilies) / sizeof(kFamilies[0]))

const ingot_family *ingot_family_find(const char *name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; i < NUM_FAMILIES; ++i)
    if (!strcmp(kFamilies[i]->name, name)) return kFamilies[i];
  return NULL;
}

static char g_names[256];
static pthread_once_t g_names_once = PTHREAD_ONCE_INIT;

static void make_names(void) {
  size_t at = 0;
  for (size_t i = 0; i < NUM_FAMILIES; ++i) {
    const size_t len = strlen(kFamilies[i]->name);
    if (at + len + 3 >= sizeof g_names) break;
    if (i) memcpy(g_names + at, ", ", 2), at += 2;
    memcpy(g_names + at, kFamilies[i]->name, len);
    at += len;
  }
  g_names[at] = '\0';
}

const char *ingot_family_names(void) {
  pthread_once(&g_names_once, make_names);
  return g_names;
}

ingot_field_type ingot_family_field_type(const ingot_family *f, const char *name) {
  if (f == NULL || name == NULL) return INGOT_FIELD_UNKNOWN;
  for (size_t i = 0; i < f->num_fields; ++i)
    if (!strcmp(f->fields[i].name, name)) return f->fields[i].type;
  return INGOT_FIELD_UNKNOWN;
}
