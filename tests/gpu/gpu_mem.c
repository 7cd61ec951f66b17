/* gpu_mem.c: see gpu_mem.h. Types and constants from the public CUDA driver API
 * documentation; no CUDA header is needed. */
#include "gpu_mem.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

enum { CUDA_SUCCESS = 0 };
enum { CU_STREAM_NON_BLOCKING = 1 };
/* Global capture mode: any call that is unsafe during a capture fails, from any
 * thread, so a runtime that synchronizes or allocates inside execute is caught. */
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0 };

/* X(field, return type, parameters, exported name) */
#define GPU_SYMBOLS(X)                                                                          \
  X(cuInit, CUresult, (unsigned int), "cuInit")                                                 \
  X(cuDeviceGetCount, CUresult, (int *), "cuDeviceGetCount")                                    \
  X(cuDeviceGet, CUresult, (CUdevice *, int), "cuDeviceGet")                                    \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext *, CUdevice), "cuDevicePrimaryCtxRetain")    \
  X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice), "cuDevicePrimaryCtxRelease_v2")            \
  X(cuCtxSetCurrent, CUresult, (CUcontext), "cuCtxSetCurrent")                                  \
  X(cuCtxSynchronize, CUresult, (void), "cuCtxSynchronize")                                     \
  X(cuMemAlloc, CUresult, (CUdeviceptr *, size_t), "cuMemAlloc_v2")                             \
  X(cuMemFree, CUresult, (CUdeviceptr), "cuMemFree_v2")                                         \
  X(cuMemcpyHtoD, CUresult, (CUdeviceptr, const void *, size_t), "cuMemcpyHtoD_v2")             \
  X(cuMemcpyDtoH, CUresult, (void *, CUdeviceptr, size_t), "cuMemcpyDtoH_v2")                   \
  X(cuMemsetD8, CUresult, (CUdeviceptr, unsigned char, size_t), "cuMemsetD8_v2")                \
  X(cuMemsetD8Async, CUresult, (CUdeviceptr, unsigned char, size_t, CUstream), "cuMemsetD8Async") \
  X(cuStreamCreate, CUresult, (CUstream *, unsigned int), "cuStreamCreate")                     \
  X(cuStreamDestroy, CUresult, (CUstream), "cuStreamDestroy_v2")                                \
  X(cuStreamSynchronize, CUresult, (CUstream), "cuStreamSynchronize")                           \
  X(cuStreamBeginCapture, CUresult, (CUstream, int), "cuStreamBeginCapture_v2")                 \
  X(cuStreamEndCapture, CUresult, (CUstream, CUgraph *), "cuStreamEndCapture")                  \
  X(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec *, CUgraph, unsigned long long),        \
    "cuGraphInstantiateWithFlags")                                                              \
  X(cuGraphLaunch, CUresult, (CUgraphExec, CUstream), "cuGraphLaunch")                          \
  X(cuGraphExecDestroy, CUresult, (CUgraphExec), "cuGraphExecDestroy")                          \
  X(cuGraphDestroy, CUresult, (CUgraph), "cuGraphDestroy")                                      \
  X(cuModuleLoad, CUresult, (CUmodule *, const char *), "cuModuleLoad")                         \
  X(cuModuleUnload, CUresult, (CUmodule), "cuModuleUnload")                                     \
  X(cuModuleGetFunction, CUresult, (CUfunction *, CUmodule, const char *), "cuModuleGetFunction") \
  X(cuLaunchKernel, CUresult,                                                                   \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,  \
     void **, void **),                                                                         \
    "cuLaunchKernel")                                                                           \
  X(cuGetErrorName, CUresult, (CUresult, const char **), "cuGetErrorName")

static struct {
#define GPU_DECLARE(field, ret, params, name) ret(*field) params;
  GPU_SYMBOLS(GPU_DECLARE)
#undef GPU_DECLARE
  void *library;
  CUdevice device;
  CUcontext context;
} g_cu; /* written once by gpu_mem_init, before any thread starts; read-only after */

static _Thread_local char g_error[512];

const char *gpu_mem_error(void) { return g_error; }

static void set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
}

static int fail(const char *call, CUresult res) {
  const char *name = NULL;
  if (g_cu.cuGetErrorName == NULL || g_cu.cuGetErrorName(res, &name) != CUDA_SUCCESS) name = NULL;
  set_error("%s failed: %s (%d)", call, name ? name : "unknown error", (int)res);
  return -1;
}

#define CU(call, expr)                            \
  do {                                            \
    CUresult res_ = (expr);                       \
    if (res_ != CUDA_SUCCESS) return fail(call, res_); \
  } while (0)

static int current(void) {
  if (g_cu.context == NULL) {
    set_error("gpu_mem_init was not called (or failed)");
    return -1;
  }
  CU("cuCtxSetCurrent", g_cu.cuCtxSetCurrent(g_cu.context));
  return 0;
}

int gpu_mem_init(void) {
  if (g_cu.context != NULL) return 0;
  const char *name = getenv("INGOT_CUDA_LIBRARY");
  if (name == NULL || name[0] == '\0') name = "libcuda.so.1";
  g_cu.library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (g_cu.library == NULL) {
    const char *why = dlerror();
    set_error("%s not found (dlopen: %s)", name, why ? why : "?");
    return 77;
  }
#define GPU_RESOLVE(field, ret, params, sym)                  \
  {                                                           \
    void *p_ = dlsym(g_cu.library, sym);                      \
    if (p_ == NULL) {                                         \
      set_error("%s has no symbol %s", name, sym);            \
      return 77;                                              \
    }                                                         \
    memcpy(&g_cu.field, &p_, sizeof p_);                      \
  }
  GPU_SYMBOLS(GPU_RESOLVE)
#undef GPU_RESOLVE
  CUresult res = g_cu.cuInit(0);
  if (res != CUDA_SUCCESS) {
    fail("cuInit", res);
    return 77;
  }
  int count = 0;
  res = g_cu.cuDeviceGetCount(&count);
  if (res != CUDA_SUCCESS || count < 1) {
    set_error("no CUDA device (cuDeviceGetCount: %d, count %d)", (int)res, count);
    return 77;
  }
  CU("cuDeviceGet", g_cu.cuDeviceGet(&g_cu.device, 0));
  CUcontext ctx = NULL;
  CU("cuDevicePrimaryCtxRetain", g_cu.cuDevicePrimaryCtxRetain(&ctx, g_cu.device));
  g_cu.context = ctx;
  return current();
}

void gpu_mem_shutdown(void) {
  if (g_cu.context == NULL) return;
  g_cu.cuDevicePrimaryCtxRelease(g_cu.device);
  g_cu.context = NULL;
  /* the library stays loaded: the driver's own threads live in it */
}

int gpu_alloc(void **dptr, size_t bytes) {
  *dptr = NULL;
  if (current() != 0) return -1;
  CUdeviceptr p = 0;
  CU("cuMemAlloc_v2", g_cu.cuMemAlloc(&p, bytes ? bytes : 16));
  *dptr = (void *)(uintptr_t)p;
  return 0;
}

void gpu_free(void *dptr) {
  if (dptr == NULL || current() != 0) return;
  g_cu.cuMemFree((CUdeviceptr)(uintptr_t)dptr);
}

int gpu_upload(void *dst, const void *src, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemcpyHtoD_v2", g_cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes));
  /* From pageable memory the call may return before the DMA has landed, and the
   * legacy stream it used does not order the tests' non-blocking streams. */
  CU("cuCtxSynchronize", g_cu.cuCtxSynchronize());
  return 0;
}

int gpu_download(void *dst, const void *src, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemcpyDtoH_v2", g_cu.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes));
  return 0;
}

int gpu_memset8(void *dst, uint8_t value, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemsetD8_v2", g_cu.cuMemsetD8((CUdeviceptr)(uintptr_t)dst, value, bytes));
  /* cuMemsetD8 may return before the device has written; make it visible to
   * every stream before the next launch. */
  CU("cuCtxSynchronize", g_cu.cuCtxSynchronize());
  return 0;
}

int gpu_memset8_async(void *dst, uint8_t value, size_t bytes, void *stream) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemsetD8Async",
     g_cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)dst, value, bytes, (CUstream)stream));
  return 0;
}

int gpu_sync(void) {
  if (current() != 0) return -1;
  CU("cuCtxSynchronize", g_cu.cuCtxSynchronize());
  return 0;
}

int gpu_stream_create(void **stream) {
  *stream = NULL;
  if (current() != 0) return -1;
  CUstream s = NULL;
  CU("cuStreamCreate", g_cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  *stream = s;
  return 0;
}

int gpu_stream_destroy(void *stream) {
  if (stream == NULL) return 0;
  if (current() != 0) return -1;
  CU("cuStreamDestroy_v2", g_cu.cuStreamDestroy((CUstream)stream));
  return 0;
}

int gpu_stream_sync(void *stream) {
  if (current() != 0) return -1;
  CU("cuStreamSynchronize", g_cu.cuStreamSynchronize((CUstream)stream));
  return 0;
}

int gpu_capture_begin(void *stream) {
  if (current() != 0) return -1;
  CU("cuStreamBeginCapture_v2",
     g_cu.cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  return 0;
}

int gpu_capture_end(void *stream, void **graph_exec) {
  *graph_exec = NULL;
  if (current() != 0) return -1;
  CUgraph graph = NULL;
  CU("cuStreamEndCapture", g_cu.cuStreamEndCapture((CUstream)stream, &graph));
  if (graph == NULL) {
    set_error("cuStreamEndCapture returned no graph (the capture was invalidated)");
    return -1;
  }
  CUgraphExec exec = NULL;
  CUresult res = g_cu.cuGraphInstantiateWithFlags(&exec, graph, 0);
  g_cu.cuGraphDestroy(graph); /* the executable graph keeps what it needs */
  if (res != CUDA_SUCCESS) return fail("cuGraphInstantiateWithFlags", res);
  *graph_exec = exec;
  return 0;
}

int gpu_graph_launch(void *graph_exec, void *stream) {
  if (current() != 0) return -1;
  CU("cuGraphLaunch", g_cu.cuGraphLaunch((CUgraphExec)graph_exec, (CUstream)stream));
  return 0;
}

void gpu_graph_destroy(void *graph_exec) {
  if (graph_exec == NULL || current() != 0) return;
  g_cu.cuGraphExecDestroy((CUgraphExec)graph_exec);
}

int gpu_module_load(const char *path, void **module) {
  *module = NULL;
  if (current() != 0) return -1;
  CUmodule m = NULL;
  CUresult res = g_cu.cuModuleLoad(&m, path);
  if (res != CUDA_SUCCESS) {
    fail("cuModuleLoad", res);
    char why[sizeof g_error];
    snprintf(why, sizeof why, "%s", g_error);
    set_error("%s (%s)", why, path);
    return -1;
  }
  *module = m;
  return 0;
}

void gpu_module_unload(void *module) {
  if (module == NULL || current() != 0) return;
  g_cu.cuModuleUnload((CUmodule)module);
}

int gpu_module_function(void *module, const char *name, void **function) {
  *function = NULL;
  if (current() != 0) return -1;
  CUfunction f = NULL;
  CU("cuModuleGetFunction", g_cu.cuModuleGetFunction(&f, (CUmodule)module, name));
  *function = f;
  return 0;
}

int gpu_launch(void *function, unsigned grid, unsigned block, void **params, void *stream) {
  if (current() != 0) return -1;
  CU("cuLaunchKernel", g_cu.cuLaunchKernel((CUfunction)function, grid, 1, 1, block, 1, 1, 0,
                                           (CUstream)stream, params, NULL));
  return 0;
}
