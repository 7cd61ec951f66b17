/* backend_cuda.c: the CUDA driver backend. libcuda.so.1 is loaded with dlopen
 * from the driver symbol table that ingot-inspect and the GPU tests share
 * (cuda_driver.h, which also declares the few driver types and constants), so
 * libingot builds and its host tests run where no CUDA SDK or driver is
 * installed.
 *
 * Threads: a device handle owns everything it uses (library handle, function
 * table, device, primary context); nothing here is global or mutable. Every call
 * that needs a context makes the device's primary context current on the calling
 * thread first (as cudaSetDevice does), because plans may execute from any
 * thread. The primary context is the one the CUDA runtime and most libraries
 * share, so pointers and streams made by the caller work with our launches. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda_driver.h"

/* "0" turns programmatic dependent launch off: every grid waits for the previous
 * one in the stream (for A/B timing, or a driver setup that mishandles it). */
#define CUDA_PDL_ENV "INGOT_CUDA_PDL"

struct ingot_backend_device {
  ingot_cuda_driver api; /* the library, its name and its function table */
  int ordinal;
  CUdevice device;
  CUcontext context; /* the device's primary context, retained */
  int programmatic;  /* programmatic dependent launch allowed (INGOT_CUDA_PDL=0 turns it off) */
};

/* ---- messages --------------------------------------------------------------------- */

/* "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected" */
static void describe(const ingot_cuda_driver *api, CUresult res, char *buf, size_t size) {
  const char *name = NULL, *text = NULL;
  if (api->cuGetErrorName == NULL || api->cuGetErrorName(res, &name) != CUDA_SUCCESS) name = NULL;
  if (api->cuGetErrorString == NULL || api->cuGetErrorString(res, &text) != CUDA_SUCCESS)
    text = NULL;
  snprintf(buf, size, "%s (%d): %s", name ? name : "unknown CUDA error", (int)res,
           text ? text : "no description from the driver");
}

static ingot_status driver_fail(const ingot_cuda_driver *api, ingot_status status, const char *call,
                                CUresult res, char *err, size_t err_size) {
  char what[256];
  describe(api, res, what, sizeof what);
  ingot_backend_set_err(err, err_size, "%s failed with %s", call, what);
  return status;
}

/* Makes the device's primary context current on this thread (cheap when it already is). */
static CUresult make_current(const ingot_backend_device *dev) {
  CUcontext current = NULL;
  if (dev->api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == dev->context)
    return CUDA_SUCCESS;
  return dev->api.cuCtxSetCurrent(dev->context);
}

/* ---- loading ----------------------------------------------------------------------- */

static ingot_status load_library(ingot_backend_device *dev, char *err, size_t err_size) {
  char why[1024];
  ingot_cuda_driver_result r = ingot_cuda_driver_load(&dev->api, INGOT_CUDA_BACKEND, why, sizeof why);
  if (r == INGOT_CUDA_DRIVER_OK) return INGOT_OK;
  if (r == INGOT_CUDA_DRIVER_NOT_FOUND)
    ingot_backend_set_err(err, err_size, "%s: install the NVIDIA driver or use a host context", why);
  else
    ingot_backend_set_err(err, err_size,
                          "%s: it is not the NVIDIA driver library, or the driver is too old; install a "
                          "current NVIDIA driver or use a host context",
                          why);
  return INGOT_UNAVAILABLE;
}

/* The driver starts threads of its own once initialised; unloading the library
 * under them would crash the process later, so a handle whose driver was
 * initialised stays loaded (dlopen counts references: the cost is nothing). */
static void free_device(ingot_backend_device *dev, int driver_initialised) {
  if (dev == NULL) return;
  if (!driver_initialised) ingot_cuda_driver_unload(&dev->api);
  free(dev);
}

static ingot_status cuda_open(int ordinal, ingot_backend_device **out, char *arch,
                              size_t arch_size, int *wave_size, int *compute_units, char *err,
                              size_t err_size) {
  ingot_status st = ingot_backend_check_open("cuda", ordinal, out, arch, arch_size, wave_size,
                                             compute_units, err, err_size);
  if (st != INGOT_OK) return st;

  ingot_backend_device *dev = calloc(1, sizeof *dev);
  if (dev == NULL) {
    ingot_backend_set_err(err, err_size, "cuda open: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  dev->ordinal = ordinal;
  const char *pdl = getenv(CUDA_PDL_ENV);
  dev->programmatic = !(pdl != NULL && strcmp(pdl, "0") == 0);
  st = load_library(dev, err, err_size);
  if (st != INGOT_OK) {
    free_device(dev, 0);
    return st;
  }
  const ingot_cuda_driver *api = &dev->api;

  char what[256];
  CUresult res = api->cuInit(0);
  if (res != CUDA_SUCCESS) {
    describe(api, res, what, sizeof what);
    ingot_backend_set_err(err, err_size,
            "%s loaded, but cuInit failed with %s: no usable NVIDIA GPU or driver; check "
            "nvidia-smi, or use a host context",
            dev->api.library_name, what);
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  int count = 0;
  res = api->cuDeviceGetCount(&count);
  if (res != CUDA_SUCCESS) {
    st = driver_fail(api, INGOT_UNAVAILABLE, "cuDeviceGetCount", res, err, err_size);
    free_device(dev, 1);
    return st;
  }
  if (ordinal >= count) {
    ingot_backend_set_err(err, err_size, "CUDA device %d requested, but the driver sees %d device(s)%s",
            ordinal, count, count > 0 ? ": allowed ordinals are 0 .. count-1" : "");
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  res = api->cuDeviceGet(&dev->device, ordinal);
  if (res != CUDA_SUCCESS) {
    st = driver_fail(api, INGOT_UNAVAILABLE, "cuDeviceGet", res, err, err_size);
    free_device(dev, 1);
    return st;
  }

  static const struct {
    int attrib;
    const char *name;
  } wanted[4] = {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major"},
                 {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor"},
                 {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size"},
                 {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count"}};
  int value[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    res = api->cuDeviceGetAttribute(&value[i], wanted[i].attrib, dev->device);
    if (res != CUDA_SUCCESS) {
      describe(api, res, what, sizeof what);
      ingot_backend_set_err(err, err_size, "cuDeviceGetAttribute (%s) of CUDA device %d failed with %s",
              wanted[i].name, ordinal, what);
      free_device(dev, 1);
      return INGOT_DEVICE_ERROR;
    }
  }
  if (value[0] <= 0 || value[0] > 99 || value[1] < 0 || value[1] > 9 || value[2] <= 0 ||
      value[3] <= 0) {
    ingot_backend_set_err(err, err_size,
            "CUDA device %d reports implausible properties (compute capability %d.%d, warp "
            "size %d, %d multiprocessors)",
            ordinal, value[0], value[1], value[2], value[3]);
    free_device(dev, 1);
    return INGOT_DEVICE_ERROR;
  }

  res = api->cuDevicePrimaryCtxRetain(&dev->context, dev->device);
  if (res != CUDA_SUCCESS) {
    st = driver_fail(api, INGOT_UNAVAILABLE, "cuDevicePrimaryCtxRetain", res, err, err_size);
    free_device(dev, 1);
    return st;
  }

  snprintf(arch, arch_size, "sm_%d%d", value[0], value[1]);
  *wave_size = value[2];
  *compute_units = value[3];
  *out = dev;
  return INGOT_OK;
}

static void cuda_close(ingot_backend_device *dev) {
  if (dev == NULL) return;
  if (dev->context != NULL) dev->api.cuDevicePrimaryCtxRelease(dev->device);
  free_device(dev, 1);
}

static ingot_status check_device(const ingot_backend_device *dev, const char *what, char *err,
                                 size_t err_size) {
  if (dev == NULL) {
    ingot_backend_set_err(err, err_size, "cuda %s: device is NULL", what);
    return INGOT_INVALID_ARGUMENT;
  }
  CUresult res = make_current(dev);
  if (res != CUDA_SUCCESS)
    return driver_fail(&dev->api, INGOT_DEVICE_ERROR, "cuCtxSetCurrent", res, err, err_size);
  return INGOT_OK;
}

static ingot_status cuda_module_load(ingot_backend_device *dev, const void *image, size_t size,
                                     ingot_backend_module *out, char *err, size_t err_size) {
  if (out != NULL) *out = NULL;
  if (out == NULL || image == NULL || size == 0) {
    ingot_backend_set_err(err, err_size, "cuda module_load: image, a non-zero size and out are required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = check_device(dev, "module_load", err, err_size);
  if (st != INGOT_OK) return st;
  CUmodule mod = NULL;
  CUresult res = dev->api.cuModuleLoadData(&mod, image);
  if (res != CUDA_SUCCESS)
    return driver_fail(&dev->api, INGOT_DEVICE_ERROR, "cuModuleLoadData", res, err, err_size);
  *out = mod;
  return INGOT_OK;
}

static void cuda_module_unload(ingot_backend_device *dev, ingot_backend_module mod) {
  if (dev == NULL || mod == NULL) return;
  if (make_current(dev) == CUDA_SUCCESS) dev->api.cuModuleUnload((CUmodule)mod);
}

static ingot_status cuda_function_get(ingot_backend_device *dev, ingot_backend_module mod,
                                      const char *symbol, ingot_backend_function *out, char *err,
                                      size_t err_size) {
  if (out != NULL) *out = NULL;
  if (out == NULL || mod == NULL || symbol == NULL) {
    ingot_backend_set_err(err, err_size, "cuda function_get: module, symbol and out are required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = check_device(dev, "function_get", err, err_size);
  if (st != INGOT_OK) return st;
  CUfunction fn = NULL;
  CUresult res = dev->api.cuModuleGetFunction(&fn, (CUmodule)mod, symbol);
  if (res == CUDA_ERROR_NOT_FOUND) {
    ingot_backend_set_err(err, err_size, "the cubin has no kernel named '%s' (cuModuleGetFunction: not found)",
            symbol);
    return INGOT_INVALID_PACK;
  }
  if (res != CUDA_SUCCESS) {
    char call[320];
    snprintf(call, sizeof call, "cuModuleGetFunction('%.256s')", symbol);
    return driver_fail(&dev->api, INGOT_DEVICE_ERROR, call, res, err, err_size);
  }
  if (dev->api.cuFuncLoad != NULL) {
    res = dev->api.cuFuncLoad(fn);
    if (res != CUDA_SUCCESS) {
      char call[320];
      snprintf(call, sizeof call, "cuFuncLoad('%.256s')", symbol);
      return driver_fail(&dev->api, INGOT_DEVICE_ERROR, call, res, err, err_size);
    }
  }
  *out = fn;
  return INGOT_OK;
}

static ingot_status cuda_function_params(ingot_backend_device *dev, ingot_backend_function fn,
                                         size_t *offsets, size_t *sizes, int max, int *count,
                                         char *err, size_t err_size) {
  if (count != NULL) *count = 0;
  if (count == NULL || fn == NULL || max < 0 || (max > 0 && (offsets == NULL || sizes == NULL))) {
    ingot_backend_set_err(err, err_size,
            "cuda function_params: function, count, and offsets/sizes for max > 0 are required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = check_device(dev, "function_params", err, err_size);
  if (st != INGOT_OK) return st;
  if (dev->api.cuFuncGetParamInfo == NULL) return INGOT_OK; /* driver older than 12.4 */

  /* Reads parameters 0..max-1 and never probes past them, so a correct kernel
   * causes no driver error (tools such as compute-sanitizer report every one).
   * The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter: a
   * kernel with fewer parameters shows as a smaller count. A kernel with more
   * is refused at launch, whose kernarg size must match exactly. */
  for (int i = 0; i < max; ++i) {
    size_t offset = 0, size = 0;
    CUresult res = dev->api.cuFuncGetParamInfo((CUfunction)fn, (size_t)i, &offset, &size);
    if (res == CUDA_ERROR_INVALID_VALUE) break;
    if (res != CUDA_SUCCESS)
      return driver_fail(&dev->api, INGOT_DEVICE_ERROR, "cuFuncGetParamInfo", res, err,
                         err_size);
    offsets[i] = offset;
    sizes[i] = size;
    *count = i + 1;
  }
  return INGOT_OK;
}

static ingot_status cuda_function_set_dynamic_lds(ingot_backend_device *dev, ingot_backend_function fn,
                                                   uint32_t bytes, char *err, size_t err_size) {
  if (fn == NULL) {
    ingot_backend_set_err(err, err_size, "cuda dynamic shared memory: function is required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = check_device(dev, "dynamic shared memory", err, err_size);
  if (st != INGOT_OK) return st;
  if (dev->api.cuFuncSetAttribute == NULL) {
    ingot_backend_set_err(err, err_size, "the CUDA driver has no cuFuncSetAttribute (allowed: a driver "
                          "that lets a function opt in to more than 48 KiB of shared memory)");
    return INGOT_UNAVAILABLE;
  }
  if (bytes > (uint32_t)INT32_MAX) {
    ingot_backend_set_err(err, err_size, "%u bytes (allowed: up to the device's opt-in maximum)", bytes);
    return INGOT_INVALID_ARGUMENT;
  }
  CUresult res = dev->api.cuFuncSetAttribute((CUfunction)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             (int)bytes);
  if (res != CUDA_SUCCESS) {
    char what[256];
    describe(&dev->api, res, what, sizeof what);
    int optin = 0;
    if (dev->api.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev->device) !=
        CUDA_SUCCESS)
      optin = -1;
    ingot_backend_set_err(err, err_size,
                          "cuFuncSetAttribute (max dynamic shared memory %u bytes) failed with %s (allowed: at most "
                          "%d bytes with the function's static shared memory on this device)",
                          bytes, what, optin);
    return INGOT_DEVICE_ERROR;
  }
  return INGOT_OK;
}

static ingot_status cuda_launch(ingot_backend_device *dev, ingot_backend_function fn,
                                const uint32_t grid[3], const uint32_t block[3],
                                uint32_t lds_bytes, uint32_t flags, void *stream,
                                const void *kernargs, size_t kernarg_size, char *err,
                                size_t err_size) {
  if (fn == NULL || grid == NULL || block == NULL || (kernarg_size > 0 && kernargs == NULL)) {
    ingot_backend_set_err(err, err_size, "cuda launch: function, grid, block and kernargs are required");
    return INGOT_INVALID_ARGUMENT;
  }
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) {
      ingot_backend_set_err(err, err_size, "cuda launch: grid (%u,%u,%u) and block (%u,%u,%u) must be >= 1",
              grid[0], grid[1], grid[2], block[0], block[1], block[2]);
      return INGOT_INVALID_ARGUMENT;
    }
  }
  ingot_status st = check_device(dev, "launch", err, err_size);
  if (st != INGOT_OK) return st;

  /* The size must be exactly the kernel's parameter size (a larger one is refused). */
  size_t size = kernarg_size;
  void *extra[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)(uintptr_t)kernargs,
                    CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CUresult res;
  if ((flags & INGOT_LAUNCH_PROGRAMMATIC) && dev->programmatic && dev->api.cuLaunchKernelEx != NULL) {
    /* Programmatic dependent launch: the grid may start while the previous one
     * in the stream runs; the kernel waits for it (griddepcontrol.wait). */
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmatic_stream_serialization_allowed = 1;
    CUlaunchConfig cfg = {grid[0], grid[1], grid[2], block[0], block[1], block[2],
                          lds_bytes, (CUstream)stream, &attr, 1};
    res = dev->api.cuLaunchKernelEx(&cfg, (CUfunction)fn, NULL, kernarg_size > 0 ? extra : NULL);
  } else {
    res = dev->api.cuLaunchKernel((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1],
                                  block[2], lds_bytes, (CUstream)stream, NULL,
                                  kernarg_size > 0 ? extra : NULL);
  }
  if (res != CUDA_SUCCESS) {
    char what[256];
    describe(&dev->api, res, what, sizeof what);
    ingot_backend_set_err(err, err_size,
            "cuLaunchKernel (grid %u,%u,%u block %u,%u,%u, %zu kernarg bytes) failed with %s",
            grid[0], grid[1], grid[2], block[0], block[1], block[2], kernarg_size, what);
    return INGOT_DEVICE_ERROR;
  }
  return INGOT_OK;
}

const ingot_backend_ops ingot_backend_cuda_ops = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .function_get = cuda_function_get,
    .function_params = cuda_function_params,
    .function_set_dynamic_lds = cuda_function_set_dynamic_lds,
    .launch = cuda_launch,
};
