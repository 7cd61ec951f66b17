/* cuda_driver.h: the CUDA driver API as ingot uses it, loaded with dlopen.
 *
 * One table of every driver symbol that any of its users calls: the runtime's
 * CUDA backend (backend_cuda.c), ingot-inspect's `run` (tools/ingot_inspect.c)
 * and the GPU tests' helper (tests/gpu/gpu_mem.c). No CUDA header is needed:
 * the few types and constants are declared here from the public driver API
 * documentation, so everything builds where no CUDA SDK is installed.
 *
 * The table has no state of its own: each user keeps its ingot_cuda_driver
 * where it keeps the rest of its state (a backend device handle, the test
 * helper's one process-wide copy). */
#ifndef INGOT_CUDA_DRIVER_H
#define INGOT_CUDA_DRIVER_H

#include <stddef.h>

/* ---- driver types and constants (CUDA driver API, public documentation) ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_FOUND = 500
};

enum {
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
};

enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum { CU_STREAM_NON_BLOCKING = 1 };
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0 };

/* cuLaunchKernelEx's configuration (cuda.h, CUDA 12): an attribute is its id,
 * padding to 8 bytes, and a 64-byte value union. */
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char raw[64];
    int programmatic_stream_serialization_allowed;
  } value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

/* Keys of cuLaunchKernel's `extra` array for a packed argument buffer. */
#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

/* ---- who needs a symbol ------------------------------------------------------------
 * The last column of the table: the users that refuse a driver without the
 * symbol. A user passes its own bit to ingot_cuda_driver_load; a symbol it does
 * not need is still resolved where the library has it, and left NULL where not
 * (the backend checks cuLaunchKernelEx, cuFuncGetParamInfo, cuFuncLoad and
 * cuFuncSetAttribute for NULL before it calls them). */
#define INGOT_CUDA_BACKEND 1u   /* the runtime's CUDA backend (backend_cuda.c) */
#define INGOT_CUDA_INSPECT 2u   /* ingot-inspect run's memory calls (tools/ingot_inspect.c) */
#define INGOT_CUDA_GPU_TESTS 4u /* the GPU tests' helper (tests/gpu/gpu_mem.c) */
#define INGOT_CUDA_OPTIONAL 0u  /* nobody: NULL on a driver without it */

/* ---- the symbol table ---------------------------------------------------------------
 * X(field, return type, parameters, exported name, older exported name, needed by)
 * The exported name is tried first (the _v2 entry points where the driver has
 * them), then the older one (NULL: none). The order is the order of the checks:
 * a library that is not the driver is refused naming cuInit. */
#define INGOT_CUDA_DRIVER_SYMBOLS(X)                                                                        \
  X(cuInit, CUresult, (unsigned int flags), "cuInit", NULL, INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)      \
  X(cuDeviceGetCount, CUresult, (int *count), "cuDeviceGetCount", NULL,                                     \
    INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuDeviceGet, CUresult, (CUdevice * device, int ordinal), "cuDeviceGet", NULL,                           \
    INGOT_CUDA_BACKEND | INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                         \
  X(cuDeviceGetAttribute, CUresult, (int *value, int attrib, CUdevice dev), "cuDeviceGetAttribute", NULL,   \
    INGOT_CUDA_BACKEND)                                                                                     \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * ctx, CUdevice dev), "cuDevicePrimaryCtxRetain", NULL,  \
    INGOT_CUDA_BACKEND | INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                         \
  X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice dev), "cuDevicePrimaryCtxRelease_v2",                    \
    "cuDevicePrimaryCtxRelease", INGOT_CUDA_BACKEND | INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)            \
  X(cuCtxGetCurrent, CUresult, (CUcontext * ctx), "cuCtxGetCurrent", NULL, INGOT_CUDA_BACKEND)              \
  X(cuCtxSetCurrent, CUresult, (CUcontext ctx), "cuCtxSetCurrent", NULL,                                    \
    INGOT_CUDA_BACKEND | INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                         \
  X(cuModuleLoadData, CUresult, (CUmodule * module, const void *image), "cuModuleLoadData", NULL,           \
    INGOT_CUDA_BACKEND)                                                                                     \
  X(cuModuleUnload, CUresult, (CUmodule module), "cuModuleUnload", NULL,                                    \
    INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuModuleGetFunction, CUresult, (CUfunction * fn, CUmodule module, const char *name),                    \
    "cuModuleGetFunction", NULL, INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)                                 \
  X(cuLaunchKernel, CUresult, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,             \
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,          \
    void **kernel_params, void **extra), "cuLaunchKernel", NULL,                                            \
    INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuGetErrorName, CUresult, (CUresult error, const char **name), "cuGetErrorName", NULL,                  \
    INGOT_CUDA_BACKEND | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuGetErrorString, CUresult, (CUresult error, const char **text), "cuGetErrorString", NULL,              \
    INGOT_CUDA_BACKEND)                                                                                     \
  X(cuDriverGetVersion, CUresult, (int *version), "cuDriverGetVersion", NULL, INGOT_CUDA_OPTIONAL)          \
  /* CUDA 12.4+: each parameter's offset and size, to check the kernarg signature. */                       \
  X(cuFuncGetParamInfo, CUresult, (CUfunction f, size_t index, size_t *offset, size_t *size),               \
    "cuFuncGetParamInfo", NULL, INGOT_CUDA_OPTIONAL)                                                        \
  /* CUDA 12.4+: load a function now rather than at its first launch (lazy loading), so the */              \
  /* first launch never happens inside a stream capture or on two streams at once. */                       \
  X(cuFuncLoad, CUresult, (CUfunction f), "cuFuncLoad", NULL, INGOT_CUDA_OPTIONAL)                          \
  X(cuFuncSetAttribute, CUresult, (CUfunction f, int attrib, int value), "cuFuncSetAttribute", NULL,        \
    INGOT_CUDA_OPTIONAL)                                                                                    \
  /* CUDA 12.0+: launch attributes (programmatic dependent launch). */                                      \
  X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),  \
    "cuLaunchKernelEx", NULL, INGOT_CUDA_OPTIONAL)                                                          \
  /* Memory, streams and graph capture: what the tool and the tests do beside the runtime. */               \
  X(cuCtxSynchronize, CUresult, (void), "cuCtxSynchronize", NULL,                                           \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuMemAlloc, CUresult, (CUdeviceptr * dptr, size_t bytes), "cuMemAlloc_v2", NULL,                        \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuMemFree, CUresult, (CUdeviceptr dptr), "cuMemFree_v2", NULL,                                          \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuMemcpyHtoD, CUresult, (CUdeviceptr dst, const void *src, size_t bytes), "cuMemcpyHtoD_v2", NULL,      \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuMemcpyDtoH, CUresult, (void *dst, CUdeviceptr src, size_t bytes), "cuMemcpyDtoH_v2", NULL,            \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuMemsetD8, CUresult, (CUdeviceptr dst, unsigned char value, size_t count), "cuMemsetD8_v2", NULL,      \
    INGOT_CUDA_GPU_TESTS)                                                                                   \
  X(cuMemsetD8Async, CUresult, (CUdeviceptr dst, unsigned char value, size_t count, CUstream stream),       \
    "cuMemsetD8Async", NULL, INGOT_CUDA_GPU_TESTS)                                                          \
  X(cuStreamCreate, CUresult, (CUstream * stream, unsigned int flags), "cuStreamCreate", NULL,              \
    INGOT_CUDA_GPU_TESTS)                                                                                   \
  X(cuStreamDestroy, CUresult, (CUstream stream), "cuStreamDestroy_v2", NULL, INGOT_CUDA_GPU_TESTS)         \
  X(cuStreamSynchronize, CUresult, (CUstream stream), "cuStreamSynchronize", NULL,                          \
    INGOT_CUDA_INSPECT | INGOT_CUDA_GPU_TESTS)                                                              \
  X(cuStreamBeginCapture, CUresult, (CUstream stream, int mode), "cuStreamBeginCapture_v2", NULL,           \
    INGOT_CUDA_GPU_TESTS)                                                                                   \
  X(cuStreamEndCapture, CUresult, (CUstream stream, CUgraph * graph), "cuStreamEndCapture", NULL,           \
    INGOT_CUDA_GPU_TESTS)                                                                                   \
  X(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec * exec, CUgraph graph, unsigned long long flags),   \
    "cuGraphInstantiateWithFlags", NULL, INGOT_CUDA_GPU_TESTS)                                              \
  X(cuGraphLaunch, CUresult, (CUgraphExec exec, CUstream stream), "cuGraphLaunch", NULL,                    \
    INGOT_CUDA_GPU_TESTS)                                                                                   \
  X(cuGraphExecDestroy, CUresult, (CUgraphExec exec), "cuGraphExecDestroy", NULL, INGOT_CUDA_GPU_TESTS)     \
  X(cuGraphDestroy, CUresult, (CUgraph graph), "cuGraphDestroy", NULL, INGOT_CUDA_GPU_TESTS)                \
  X(cuModuleLoad, CUresult, (CUmodule * module, const char *path), "cuModuleLoad", NULL,                    \
    INGOT_CUDA_GPU_TESTS)

/* The loaded library and its function table (a field is NULL where the library
 * lacks a symbol its user does not need). */
typedef struct ingot_cuda_driver {
  void *library;
  char library_name[256]; /* as dlopen was given it */
#define INGOT_CUDA_DRIVER_FIELD(field, ret, params, name, old_name, needed_by) ret(*field) params;
  INGOT_CUDA_DRIVER_SYMBOLS(INGOT_CUDA_DRIVER_FIELD)
#undef INGOT_CUDA_DRIVER_FIELD
} ingot_cuda_driver;

typedef enum ingot_cuda_driver_result {
  INGOT_CUDA_DRIVER_OK = 0,
  INGOT_CUDA_DRIVER_NOT_FOUND, /* dlopen failed */
  INGOT_CUDA_DRIVER_NO_SYMBOL  /* the library lacks a symbol the user needs */
} ingot_cuda_driver_result;

/* The library is $INGOT_CUDA_LIBRARY where that is set and not empty, else
 * libcuda.so.1. Loads it and resolves the whole table; `user` (one of the
 * INGOT_CUDA_* bits above) says which symbols must be there. On failure err
 * holds the reason with no advice (callers add what their reader should do):
 *   "libcuda.so.1 not found (dlopen: <why>)", "<path> (named by
 *   INGOT_CUDA_LIBRARY) not found (dlopen: <why>)", "<library> has no symbol
 *   cuMemAlloc_v2"
 * and nothing stays loaded (*d is all zero). Calls nothing in the driver. */
ingot_cuda_driver_result ingot_cuda_driver_load(ingot_cuda_driver *d, unsigned user, char *err,
                                                size_t err_size);

/* dlclose, and *d all zero. Only for a driver that was never initialised
 * (cuInit): the driver starts threads of its own, and unloading the library
 * under them would crash the process later. */
void ingot_cuda_driver_unload(ingot_cuda_driver *d);

#endif
