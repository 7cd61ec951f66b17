/* backend_hip.c: the HIP (ROCm) backend. libamdhip64 is loaded with dlopen from
 * the one symbol table below (.so.7, .so.6, .so, then .so.5: Debian ships ROCm
 * 5.2 as libamdhip64.so.5), so libingot builds and its host tests run without
 * any ROCm SDK. The few HIP types and constants it needs are declared here from
 * the public HIP API documentation.
 *
 * Versions: the packs' AMD code objects are v5 for gfx942 and gfx950, and the
 * arch is read through the ROCm 6 properties entry point, so a runtime older
 * than ROCm 6.0 (HIP 6.0) is refused by name, after hipInit and the device
 * count have had their say (on a machine without an AMD GPU, "no device" is
 * the reason a person needs first). Every message names the library and the
 * HIP version it reported.
 *
 * ABI care: hipDeviceProp_t changed layout between ROCm 5 and 6, so it is never
 * declared here. Compute units and wave size come from hipDeviceGetAttribute
 * (attribute numbers stable since ROCm 5.0); the gfx arch name is only exposed
 * as a string inside the properties struct, read through the versioned entry
 * point hipGetDevicePropertiesR0600 (see read_gfx_arch).
 *
 * Threads: a device handle owns its library handle and function table; nothing
 * is global. HIP's current device is per thread, so every call that needs the
 * device selects it first with hipSetDevice. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* ---- HIP types and constants (public HIP API documentation) ---- */

typedef int hipError_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;

enum { hipSuccess = 0 };

/* hipDeviceAttribute_t values (unchanged since ROCm 5.0). */
enum {
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeWarpSize = 87
};

/* Keys of hipModuleLaunchKernel's `extra` array for a packed argument buffer. */
#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define HIP_LAUNCH_PARAM_END ((void *)0x03)

#define HIP_LIBRARY_ENV "INGOT_HIP_LIBRARY"
static const char *const hip_default_libraries[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so",
                                                    "libamdhip64.so.5"};
#define HIP_DEFAULT_LIBRARY_COUNT 4

/* HIP_VERSION encoding: major * 10^7 + minor * 10^5 + patch (HIP 6.0.32830 is
 * 60032830). ROCm 6.0 is the oldest runtime this backend accepts. */
#define HIP_MIN_VERSION 60000000

/* hipDeviceProp_tR0600 is about 1.5 KB; the buffer leaves ample room so that a
 * runtime newer than this file can never write past it. */
#define HIP_PROPS_BUFFER_BYTES 16384
#define HIP_PROPS_NAME_BYTES 256 /* the struct starts with char name[256] */
/* the library name as dlopen was given it, and the label that adds its version:
 * room for the whole name and read_version's longest suffix */
#define HIP_LIBRARY_NAME_BYTES 256
#define HIP_LIBRARY_LABEL_BYTES (HIP_LIBRARY_NAME_BYTES + 96)

/* X(kind, field, return type, parameters, exported name) */
#define HIP_SYMBOLS(X)                                                                         \
  X(REQUIRED, hipInit, hipError_t, (unsigned int flags), "hipInit")                            \
  X(REQUIRED, hipGetDeviceCount, hipError_t, (int *count), "hipGetDeviceCount")                \
  X(REQUIRED, hipSetDevice, hipError_t, (int ordinal), "hipSetDevice")                         \
  X(REQUIRED, hipDeviceGetAttribute, hipError_t, (int *value, int attrib, int ordinal),        \
    "hipDeviceGetAttribute")                                                                   \
  X(REQUIRED, hipModuleLoadData, hipError_t, (hipModule_t * module, const void *image),        \
    "hipModuleLoadData")                                                                       \
  X(REQUIRED, hipModuleUnload, hipError_t, (hipModule_t module), "hipModuleUnload")            \
  X(REQUIRED, hipModuleGetFunction, hipError_t,                                                \
    (hipFunction_t * fn, hipModule_t module, const char *name), "hipModuleGetFunction")        \
  X(REQUIRED, hipModuleLaunchKernel, hipError_t,                                               \
    (hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,      \
     unsigned int by, unsigned int bz, unsigned int shared_bytes, hipStream_t stream,          \
     void **kernel_params, void **extra),                                                      \
    "hipModuleLaunchKernel")                                                                   \
  X(REQUIRED, hipGetErrorString, const char *, (hipError_t error), "hipGetErrorString")        \
  X(OPTIONAL, hipGetErrorName, const char *, (hipError_t error), "hipGetErrorName")            \
  /* answer before hipInit: the library names its version even without a device */             \
  X(OPTIONAL, hipRuntimeGetVersion, hipError_t, (int *version), "hipRuntimeGetVersion")        \
  X(OPTIONAL, hipDriverGetVersion, hipError_t, (int *version), "hipDriverGetVersion")          \
  /* ROCm 6+: the properties struct in its 6.0 layout (the arch name lives there). */          \
  X(OPTIONAL, hipGetDevicePropertiesR0600, hipError_t, (void *props, int ordinal),             \
    "hipGetDevicePropertiesR0600")

typedef struct hip_api {
#define HIP_DECLARE(kind, field, ret, params, name) ret(*field) params;
  HIP_SYMBOLS(HIP_DECLARE)
#undef HIP_DECLARE
} hip_api;

struct ingot_backend_device {
  void *library;
  char library_name[HIP_LIBRARY_NAME_BYTES];
  /* "libamdhip64.so.5 (HIP 5.2.21153)": what every message after the load names */
  char library_label[HIP_LIBRARY_LABEL_BYTES];
  int runtime_version; /* HIP_VERSION encoding; 0 when the runtime does not say */
  hip_api api;
  int ordinal;
};

/* ---- messages --------------------------------------------------------------------- */

/* "101 hipErrorInvalidDevice: invalid device ordinal" */
static void describe(const hip_api *api, hipError_t res, char *buf, size_t size) {
  const char *name = api->hipGetErrorName ? api->hipGetErrorName(res) : NULL;
  const char *text = api->hipGetErrorString ? api->hipGetErrorString(res) : NULL;
  if (name != NULL && text != NULL && strcmp(name, text) != 0)
    snprintf(buf, size, "%d %s: %s", (int)res, name, text);
  else
    snprintf(buf, size, "%d %s", (int)res, name ? name : text ? text : "(unknown HIP error)");
}

static ingot_status driver_fail(const hip_api *api, ingot_status status, const char *call,
                                hipError_t res, char *err, size_t err_size) {
  char what[256];
  describe(api, res, what, sizeof what);
  ingot_backend_set_err(err, err_size, "%s failed with %s", call, what);
  return status;
}

/* Puts "<library label>: " before the message in err (open's messages name the runtime). */
static ingot_status with_library(const ingot_backend_device *dev, ingot_status status, char *err,
                                 size_t err_size) {
  if (err != NULL && err_size > 0) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", err);
    ingot_backend_set_err(err, err_size, "%s: %s", dev->library_label, msg);
  }
  return status;
}

/* ---- loading ----------------------------------------------------------------------- */

/* The runtime's own version (hipRuntimeGetVersion, else hipDriverGetVersion)
 * into runtime_version and library_label. */
static void read_version(ingot_backend_device *dev) {
  int v = 0, driver = 0;
  const char *how = NULL;
  if (dev->api.hipRuntimeGetVersion != NULL && dev->api.hipRuntimeGetVersion(&v) == hipSuccess && v > 0) {
    how = "HIP";
  } else if (dev->api.hipDriverGetVersion != NULL && dev->api.hipDriverGetVersion(&driver) == hipSuccess &&
             driver > 0) {
    v = driver;
    how = "HIP driver";
  }
  dev->runtime_version = how ? v : 0;
  if (how)
    snprintf(dev->library_label, sizeof dev->library_label, "%s (%s %d.%d.%d)", dev->library_name, how,
             v / 10000000, v / 100000 % 100, v % 100000);
  else
    snprintf(dev->library_label, sizeof dev->library_label,
             "%s (HIP version unknown: neither hipRuntimeGetVersion nor hipDriverGetVersion answers)",
             dev->library_name);
}

static ingot_status load_library(ingot_backend_device *dev, char *err, size_t err_size) {
  const char *override = getenv(HIP_LIBRARY_ENV);
  const int overridden = override != NULL && override[0] != '\0';
  const char *const *names = overridden ? &override : hip_default_libraries;
  const int count = overridden ? 1 : HIP_DEFAULT_LIBRARY_COUNT;

  char reasons[768] = "";
  size_t used = 0;
  for (int i = 0; i < count && dev->library == NULL; ++i) {
    dlerror();
    dev->library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (dev->library != NULL) {
      snprintf(dev->library_name, sizeof dev->library_name, "%s", names[i]);
    } else if (used < sizeof reasons) {
      const char *why = dlerror();
      int n = snprintf(reasons + used, sizeof reasons - used, "%s%s", used ? "; " : "",
                       why ? why : names[i]);
      if (n > 0) used += (size_t)n;
    }
  }
  if (dev->library == NULL) {
    if (overridden)
      ingot_backend_set_err(err, err_size,
              "%s (named by " HIP_LIBRARY_ENV ") not found (dlopen: %s): install the ROCm HIP "
              "runtime or use a host context",
              override, reasons);
    else
      ingot_backend_set_err(err, err_size,
              "libamdhip64.so.7, .so.6, .so and .so.5 not found (dlopen: %s): install the ROCm HIP "
              "runtime (ROCm 6.0 or newer) or use a host context",
              reasons);
    return INGOT_UNAVAILABLE;
  }

#define HIP_RESOLVE(kind, field, ret, params, name_)                                            \
  {                                                                                             \
    void *sym_ = dlsym(dev->library, name_);                                                    \
    /* POSIX dlsym returns data pointers; a function pointer is copied bit for bit. */          \
    memcpy(&dev->api.field, &sym_, sizeof sym_);                                                \
    if (sym_ == NULL && kind) {                                                                 \
      ingot_backend_set_err(err, err_size,                                                      \
              "%s has no symbol %s: it is not the HIP runtime, or one too old; install ROCm "   \
              "6.0 or newer or use a host context",                                             \
              dev->library_name, name_);                                                        \
      return INGOT_UNAVAILABLE;                                                                 \
    }                                                                                           \
  }
#define REQUIRED 1
#define OPTIONAL 0
  HIP_SYMBOLS(HIP_RESOLVE)
#undef REQUIRED
#undef OPTIONAL
#undef HIP_RESOLVE
  read_version(dev);
  return INGOT_OK;
}

/* The HIP runtime starts threads of its own once initialised; unloading it under
 * them would crash the process later, so a handle whose runtime was initialised
 * stays loaded (dlopen counts references: the cost is nothing). */
static void free_device(ingot_backend_device *dev, int runtime_initialised) {
  if (dev == NULL) return;
  if (dev->library != NULL && !runtime_initialised) dlclose(dev->library);
  free(dev);
}

static int is_arch_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

/* Reads the gfx arch ("gfx942") of the current device. The properties struct is
 * never declared here (its layout is ABI-fragile): it is written into a zeroed
 * buffer far larger than any known version of it, and gcnArchName is the first
 * string past the 256-byte device name of the form "gfx" + 3 or 4 lowercase
 * letters or digits, ended by NUL or by ':' before the feature flags
 * ("gfx942:sramecc+:xnack-"). The flags are dropped. */
static ingot_status read_gfx_arch(const ingot_backend_device *dev, char *arch, size_t arch_size,
                                  char *err, size_t err_size) {
  if (dev->api.hipGetDevicePropertiesR0600 == NULL) {
    ingot_backend_set_err(err, err_size,
            "%s has no hipGetDevicePropertiesR0600 (it is older than ROCm 6), so the gfx arch "
            "of HIP device %d cannot be read safely; install ROCm 6.0 or newer or use a host "
            "context",
            dev->library_label, dev->ordinal);
    return INGOT_UNAVAILABLE;
  }
  char *props = calloc(1, HIP_PROPS_BUFFER_BYTES);
  if (props == NULL) {
    ingot_backend_set_err(err, err_size, "hip open: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  hipError_t res = dev->api.hipGetDevicePropertiesR0600(props, dev->ordinal);
  if (res != hipSuccess) {
    free(props);
    char what[256];
    describe(&dev->api, res, what, sizeof what);
    ingot_backend_set_err(err, err_size, "%s: hipGetDevicePropertiesR0600 failed with %s", dev->library_label,
                          what);
    return INGOT_DEVICE_ERROR;
  }
  ingot_status st = INGOT_DEVICE_ERROR;
  for (size_t i = HIP_PROPS_NAME_BYTES; i + 8 < HIP_PROPS_BUFFER_BYTES; ++i) {
    if (memcmp(props + i, "gfx", 3) != 0) continue;
    size_t n = 3;
    while (n < 8 && is_arch_char(props[i + n])) ++n;
    const char end = props[i + n];
    if (n < 6 || n > 7 || (end != '\0' && end != ':')) continue;
    if (n + 1 > arch_size) break;
    memcpy(arch, props + i, n);
    arch[n] = '\0';
    st = INGOT_OK;
    break;
  }
  free(props);
  if (st != INGOT_OK)
    ingot_backend_set_err(err, err_size,
            "%s: HIP device %d: no gfx arch name (gcnArchName) found in what "
            "hipGetDevicePropertiesR0600 returned",
            dev->library_label, dev->ordinal);
  return st;
}

static ingot_status hip_open(int ordinal, ingot_backend_device **out, char *arch,
                             size_t arch_size, int *wave_size, int *compute_units, char *err,
                             size_t err_size) {
  ingot_status st = ingot_backend_check_open("hip", ordinal, out, arch, arch_size, wave_size,
                                             compute_units, err, err_size);
  if (st != INGOT_OK) return st;

  ingot_backend_device *dev = calloc(1, sizeof *dev);
  if (dev == NULL) {
    ingot_backend_set_err(err, err_size, "hip open: out of memory");
    return INGOT_OUT_OF_MEMORY;
  }
  dev->ordinal = ordinal;
  st = load_library(dev, err, err_size);
  if (st != INGOT_OK) {
    free_device(dev, 0);
    return st;
  }
  const hip_api *api = &dev->api;

  /* Without an AMD GPU, ROCm's hipInit answers hipErrorInvalidDevice (101) and
   * hipGetDeviceCount hipErrorNoDevice (100): report both, they say why. */
  char what[256];
  hipError_t res = api->hipInit(0);
  int count = 0;
  hipError_t count_res = api->hipGetDeviceCount(&count);
  if (res != hipSuccess) {
    describe(api, res, what, sizeof what);
    char count_what[256];
    describe(api, count_res, count_what, sizeof count_what);
    ingot_backend_set_err(err, err_size,
            "%s loaded, but hipInit failed with %s (hipGetDeviceCount: %s): no usable AMD GPU; "
            "check rocm-smi and /dev/kfd access, or use a host context",
            dev->library_label, what, count_res == hipSuccess ? "0 devices" : count_what);
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  if (count_res != hipSuccess) {
    describe(api, count_res, what, sizeof what);
    ingot_backend_set_err(err, err_size,
            "%s loaded, but hipGetDeviceCount failed with %s: no usable AMD GPU; or use a host "
            "context",
            dev->library_label, what);
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  if (ordinal >= count) {
    ingot_backend_set_err(err, err_size, "%s: HIP device %d requested, but the runtime sees %d device(s)%s",
            dev->library_label, ordinal, count, count > 0 ? ": allowed ordinals are 0 .. count-1" : "");
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  if (dev->runtime_version < HIP_MIN_VERSION) {
    ingot_backend_set_err(err, err_size,
            "%s is older than ROCm 6.0: ingot's AMD code objects (v5, gfx942 and gfx950) and the "
            "device's arch name need ROCm 6.0 or newer; install it (libamdhip64.so.6 or .so.7), "
            "point " HIP_LIBRARY_ENV " at it, or use a host context",
            dev->library_label);
    free_device(dev, 1);
    return INGOT_UNAVAILABLE;
  }
  res = api->hipSetDevice(ordinal);
  if (res != hipSuccess) {
    st = with_library(dev, driver_fail(api, INGOT_UNAVAILABLE, "hipSetDevice", res, err, err_size), err,
                      err_size);
    free_device(dev, 1);
    return st;
  }

  int cus = 0, wave = 0;
  res = api->hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, ordinal);
  if (res == hipSuccess)
    res = api->hipDeviceGetAttribute(&wave, hipDeviceAttributeWarpSize, ordinal);
  if (res != hipSuccess) {
    st = with_library(dev, driver_fail(api, INGOT_DEVICE_ERROR, "hipDeviceGetAttribute", res, err, err_size),
                      err, err_size);
    free_device(dev, 1);
    return st;
  }
  if (cus <= 0 || (wave != 32 && wave != 64)) {
    ingot_backend_set_err(err, err_size,
            "%s: HIP device %d reports implausible properties (%d compute units, wave size %d)",
            dev->library_label, ordinal, cus, wave);
    free_device(dev, 1);
    return INGOT_DEVICE_ERROR;
  }
  st = read_gfx_arch(dev, arch, arch_size, err, err_size);
  if (st != INGOT_OK) {
    arch[0] = '\0';
    free_device(dev, 1);
    return st;
  }
  *wave_size = wave;
  *compute_units = cus;
  *out = dev;
  return INGOT_OK;
}

static void hip_close(ingot_backend_device *dev) { free_device(dev, 1); }

static ingot_status select_device(const ingot_backend_device *dev, const char *what, char *err,
                                  size_t err_size) {
  if (dev == NULL) {
    ingot_backend_set_err(err, err_size, "hip %s: device is NULL", what);
    return INGOT_INVALID_ARGUMENT;
  }
  hipError_t res = dev->api.hipSetDevice(dev->ordinal);
  if (res != hipSuccess)
    return driver_fail(&dev->api, INGOT_DEVICE_ERROR, "hipSetDevice", res, err, err_size);
  return INGOT_OK;
}

static ingot_status hip_module_load(ingot_backend_device *dev, const void *image, size_t size,
                                    ingot_backend_module *out, char *err, size_t err_size) {
  if (out != NULL) *out = NULL;
  if (out == NULL || image == NULL || size == 0) {
    ingot_backend_set_err(err, err_size, "hip module_load: image, a non-zero size and out are required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = select_device(dev, "module_load", err, err_size);
  if (st != INGOT_OK) return st;
  hipModule_t mod = NULL;
  hipError_t res = dev->api.hipModuleLoadData(&mod, image);
  if (res != hipSuccess)
    return driver_fail(&dev->api, INGOT_DEVICE_ERROR, "hipModuleLoadData", res, err, err_size);
  *out = mod;
  return INGOT_OK;
}

static void hip_module_unload(ingot_backend_device *dev, ingot_backend_module mod) {
  if (dev == NULL || mod == NULL) return;
  if (dev->api.hipSetDevice(dev->ordinal) == hipSuccess) dev->api.hipModuleUnload((hipModule_t)mod);
}

static ingot_status hip_function_get(ingot_backend_device *dev, ingot_backend_module mod,
                                     const char *symbol, ingot_backend_function *out, char *err,
                                     size_t err_size) {
  if (out != NULL) *out = NULL;
  if (out == NULL || mod == NULL || symbol == NULL) {
    ingot_backend_set_err(err, err_size, "hip function_get: module, symbol and out are required");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_status st = select_device(dev, "function_get", err, err_size);
  if (st != INGOT_OK) return st;
  hipFunction_t fn = NULL;
  hipError_t res = dev->api.hipModuleGetFunction(&fn, (hipModule_t)mod, symbol);
  if (res != hipSuccess) {
    char what[256];
    describe(&dev->api, res, what, sizeof what);
    ingot_backend_set_err(err, err_size, "the code object has no usable kernel named '%s' "
            "(hipModuleGetFunction failed with %s)", symbol, what);
    return INGOT_INVALID_PACK;
  }
  *out = fn;
  return INGOT_OK;
}

/* HIP has no per-parameter query; the build reads the layout from the code
 * object's own metadata note instead. */
static ingot_status hip_function_params(ingot_backend_device *dev, ingot_backend_function fn,
                                        size_t *offsets, size_t *sizes, int max, int *count,
                                        char *err, size_t err_size) {
  (void)offsets;
  (void)sizes;
  (void)max;
  if (count != NULL) *count = 0;
  if (dev == NULL || fn == NULL || count == NULL) {
    ingot_backend_set_err(err, err_size, "hip function_params: device, function and count are required");
    return INGOT_INVALID_ARGUMENT;
  }
  return INGOT_OK;
}

static ingot_status hip_launch(ingot_backend_device *dev, ingot_backend_function fn,
                               const uint32_t grid[3], const uint32_t block[3], uint32_t lds_bytes,
                               uint32_t flags, void *stream, const void *kernargs,
                               size_t kernarg_size, char *err, size_t err_size) {
  (void)flags; /* no programmatic dependent launch on HIP: a plain launch is always correct */
  if (fn == NULL || grid == NULL || block == NULL || (kernarg_size > 0 && kernargs == NULL)) {
    ingot_backend_set_err(err, err_size, "hip launch: function, grid, block and kernargs are required");
    return INGOT_INVALID_ARGUMENT;
  }
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) {
      ingot_backend_set_err(err, err_size, "hip launch: grid (%u,%u,%u) and block (%u,%u,%u) must be >= 1",
              grid[0], grid[1], grid[2], block[0], block[1], block[2]);
      return INGOT_INVALID_ARGUMENT;
    }
  }
  ingot_status st = select_device(dev, "launch", err, err_size);
  if (st != INGOT_OK) return st;

  size_t size = kernarg_size;
  void *extra[5] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, (void *)(uintptr_t)kernargs,
                    HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
  hipError_t res = dev->api.hipModuleLaunchKernel((hipFunction_t)fn, grid[0], grid[1], grid[2],
                                                  block[0], block[1], block[2], lds_bytes,
                                                  (hipStream_t)stream, NULL,
                                                  kernarg_size > 0 ? extra : NULL);
  if (res != hipSuccess) {
    char what[256];
    describe(&dev->api, res, what, sizeof what);
    ingot_backend_set_err(err, err_size,
            "hipModuleLaunchKernel (grid %u,%u,%u block %u,%u,%u, %zu kernarg bytes) failed "
            "with %s",
            grid[0], grid[1], grid[2], block[0], block[1], block[2], kernarg_size, what);
    return INGOT_DEVICE_ERROR;
  }
  return INGOT_OK;
}

const ingot_backend_ops ingot_backend_hip_ops = {
    .name = "hip",
    .open = hip_open,
    .close = hip_close,
    .module_load = hip_module_load,
    .module_unload = hip_module_unload,
    .function_get = hip_function_get,
    .function_params = hip_function_params,
    .launch = hip_launch,
};
