/* fuzz_graph_json: ingot_graph_from_json on arbitrary bytes (not
 * NUL-terminated: the length is the input's). It must return INGOT_OK or
 * INGOT_INVALID_ARGUMENT, never crash or leak; a refusal carries a message
 * that starts with "graph" and names what is wrong; an accepted graph passes
 * ingot_graph_validate again and has outputs without overlap (small ones
 * checked element by element), and the error buffer's size is respected (the
 * first input byte picks a small one now and then). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ad_family.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the text lives in its own allocation so ASan sees any read past its end */
  char *text = malloc(size ? size : 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  ingot_attention_graph g;
  memset(&g, 0xA5, sizeof g);
  char err[520];
  memset(err, 'x', sizeof err);
  size_t err_size = size > 0 && data[0] == '\n' ? 9 : 512; /* a leading newline is valid JSON whitespace */
  ingot_status s = ingot_graph_from_json(text, size, &g, err, err_size);
  FZ_REQUIRE(err[err_size - 1] == '\0' || memchr(err, '\0', err_size) != NULL, "err not terminated");
  for (size_t i = err_size; i < sizeof err; ++i) FZ_REQUIRE(err[i] == 'x', "err written past its size");
  if (s == INGOT_OK) {
    char again[512];
    FZ_REQUIRE(ingot_graph_validate(&g, again, sizeof again) == INGOT_OK, "parsed graph fails validation: %s",
               again);
    FZ_REQUIRE(g.q.rank == 4 && g.capacity >= 1, "rank %d capacity %lld", g.q.rank, (long long)g.capacity);
    fz_check_outputs_distinct(&g);
  } else {
    FZ_REQUIRE(s == INGOT_INVALID_ARGUMENT, "status %d", (int)s);
    FZ_REQUIRE(strncmp(err, "graph", err_size - 1 < 5 ? err_size - 1 : 5) == 0 && strlen(err) > 0,
               "message [%s]", err);
  }
  free(text);
  return 0;
}
