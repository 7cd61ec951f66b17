/* backend.h: what the runtime needs from a GPU driver. One implementation per
 * driver (backend_cuda.c, backend_hip.c), each loading its library with dlopen
 * from one table of symbols, so libingot builds and its host tests run where no
 * GPU SDK is installed. Every function returns an ingot_status and writes a
 * sentence a person can act on into err on failure. */
#ifndef INGOT_BACKEND_H
#define INGOT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "ingot/ingot.h"

typedef struct ingot_backend_device ingot_backend_device; /* opaque per backend */
typedef void *ingot_backend_module;
typedef void *ingot_backend_function;

typedef struct ingot_backend_ops {
  const char *name; /* "cuda", "hip" */
  /* Loads the driver library, initialises it, opens device `ordinal`, reads its
   * arch name ("sm_90", "gfx942" ...), wave size and compute-unit count. */
  ingot_status (*open)(int ordinal, ingot_backend_device **out, char *arch, size_t arch_size,
                       int *wave_size, int *compute_units, char *err, size_t err_size);
  void (*close)(ingot_backend_device *dev);
  /* Loads a code object (cubin / AMD ELF) from memory, in the device's context. */
  ingot_status (*module_load)(ingot_backend_device *dev, const void *image, size_t size,
                              ingot_backend_module *out, char *err, size_t err_size);
  void (*module_unload)(ingot_backend_device *dev, ingot_backend_module mod);
  ingot_status (*function_get)(ingot_backend_device *dev, ingot_backend_module mod,
                               const char *symbol, ingot_backend_function *out, char *err,
                               size_t err_size);
  /* Kernarg layout as the code object reports it (cuFuncGetParamInfo on CUDA):
   * parameters 0..max-1 at most, count = how many exist among them; count 0
   * with INGOT_OK where the driver cannot say. */
  ingot_status (*function_params)(ingot_backend_device *dev, ingot_backend_function fn,
                                  size_t *offsets, size_t *sizes, int max, int *count, char *err,
                                  size_t err_size);
  /* Lets fn be launched with `bytes` of dynamic LDS (CUDA: past 48 KiB a function
   * must opt in); NULL where the driver needs nothing. Called once per function,
   * at load, for an entry point with dynamic LDS. */
  ingot_status (*function_set_dynamic_lds)(ingot_backend_device *dev, ingot_backend_function fn,
                                           uint32_t bytes, char *err, size_t err_size);
  /* Launches with a packed kernarg buffer on the caller's stream; never syncs.
   * flags: INGOT_LAUNCH_* (dispatch.h); a backend may ignore them. */
  ingot_status (*launch)(ingot_backend_device *dev, ingot_backend_function fn,
                         const uint32_t grid[3], const uint32_t block[3], uint32_t lds_bytes,
                         uint32_t flags, void *stream, const void *kernargs, size_t kernarg_size,
                         char *err, size_t err_size);
} ingot_backend_ops;

/* backend_common.c: snprintf into err (which may be NULL or of size 0), and the
 * argument checks every open makes first (*out = NULL, outputs cleared; the
 * messages start with who: "cuda open: ..."). */
void ingot_backend_set_err(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ingot_status ingot_backend_check_open(const char *who, int ordinal, ingot_backend_device **out,
                                      char *arch, size_t arch_size, int *wave_size,
                                      int *compute_units, char *err, size_t err_size);

extern const ingot_backend_ops ingot_backend_cuda_ops;
extern const ingot_backend_ops ingot_backend_hip_ops;

#endif
