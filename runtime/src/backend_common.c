/* backend_common.c: what every backend shares: its error messages and the
 * argument contract of open (backend.h). */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"

void ingot_backend_set_err(char *err, size_t err_size, const char *fmt, ...) {
  if (err == NULL || err_size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

ingot_status ingot_backend_check_open(const char *who, int ordinal, ingot_backend_device **out,
                                      char *arch, size_t arch_size, int *wave_size,
                                      int *compute_units, char *err, size_t err_size) {
  if (out == NULL) {
    ingot_backend_set_err(err, err_size, "%s open: out is NULL", who);
    return INGOT_INVALID_ARGUMENT;
  }
  *out = NULL;
  if (arch == NULL || arch_size < 8 || wave_size == NULL || compute_units == NULL) {
    ingot_backend_set_err(err, err_size,
                          "%s open: arch (at least 8 bytes), wave_size and compute_units are required", who);
    return INGOT_INVALID_ARGUMENT;
  }
  arch[0] = '\0';
  *wave_size = 0;
  *compute_units = 0;
  if (ordinal < 0) {
    ingot_backend_set_err(err, err_size, "%s open: device ordinal %d is negative; allowed: 0 .. count-1", who,
                          ordinal);
    return INGOT_INVALID_ARGUMENT;
  }
  return INGOT_OK;
}
