/* pc_consumer.c: built by the install test with nothing but
 * `pkg-config --cflags --libs ingot`; opens an installed pack through libingot.so. */
#include <stdio.h>

#include <ingot/ingot.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pc_consumer PACK_DIR\n");
    return 2;
  }
  ingot_context *ctx = NULL;
  if (ingot_context_create_host(NULL, &ctx) != INGOT_OK) return 1;
  int rc = 0;
  if (ingot_context_open_pack(ctx, argv[1]) == INGOT_OK) {
    printf("ingot %s: %zu kernels in %s\n", ingot_version_string(), ingot_context_kernel_count(ctx), argv[1]);
  } else {
    fprintf(stderr, "pc_consumer: %s\n", ingot_context_last_error(ctx));
    rc = 1;
  }
  ingot_context_destroy(ctx);
  return rc;
}
