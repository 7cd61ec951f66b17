/* test_check.h: CHECK(cond, printf-style message) for the host tests that use
 * no other test helper (test_reference, test_backend_host/ops): counts checks
 * and failures and prints file:line with the message of each failure. */
#ifndef INGOT_TEST_CHECK_H
#define INGOT_TEST_CHECK_H

#include <stdio.h>

static int g_checks, g_failures;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    ++g_checks;                                            \
    if (!(cond)) {                                         \
      ++g_failures;                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
    }                                                      \
  } while (0)

#endif
