/* gpu_mem.c: see gpu_mem.h. The driver's types, constants and symbols come
 * from the runtime's table (runtime/src/cuda_driver.h); no CUDA header is
 * needed. */
#include "gpu_mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

static struct {
  ingot_cuda_driver api;
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
  if (g_cu.api.cuGetErrorName == NULL || g_cu.api.cuGetErrorName(res, &name) != CUDA_SUCCESS)
    name = NULL;
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
  CU("cuCtxSetCurrent", g_cu.api.cuCtxSetCurrent(g_cu.context));
  return 0;
}

int gpu_mem_init(void) {
  if (g_cu.context != NULL) return 0;
  if (ingot_cuda_driver_load(&g_cu.api, INGOT_CUDA_GPU_TESTS, g_error, sizeof g_error) !=
      INGOT_CUDA_DRIVER_OK)
    return 77;
  CUresult res = g_cu.api.cuInit(0);
  if (res != CUDA_SUCCESS) {
    fail("cuInit", res);
    return 77;
  }
  int count = 0;
  res = g_cu.api.cuDeviceGetCount(&count);
  if (res != CUDA_SUCCESS || count < 1) {
    set_error("no CUDA device (cuDeviceGetCount: %d, count %d)", (int)res, count);
    return 77;
  }
  CU("cuDeviceGet", g_cu.api.cuDeviceGet(&g_cu.device, 0));
  CUcontext ctx = NULL;
  CU("cuDevicePrimaryCtxRetain", g_cu.api.cuDevicePrimaryCtxRetain(&ctx, g_cu.device));
  g_cu.context = ctx;
  return current();
}

void gpu_mem_shutdown(void) {
  if (g_cu.context == NULL) return;
  g_cu.api.cuDevicePrimaryCtxRelease(g_cu.device);
  g_cu.context = NULL;
  /* the library stays loaded: the driver's own threads live in it */
}

int gpu_alloc(void **dptr, size_t bytes) {
  *dptr = NULL;
  if (current() != 0) return -1;
  CUdeviceptr p = 0;
  CU("cuMemAlloc_v2", g_cu.api.cuMemAlloc(&p, bytes ? bytes : 16));
  *dptr = (void *)(uintptr_t)p;
  return 0;
}

void gpu_free(void *dptr) {
  if (dptr == NULL || current() != 0) return;
  g_cu.api.cuMemFree((CUdeviceptr)(uintptr_t)dptr);
}

int gpu_upload(void *dst, const void *src, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemcpyHtoD_v2", g_cu.api.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes));
  /* From pageable memory the call may return before the DMA has landed, and the
   * legacy stream it used does not order the tests' non-blocking streams. */
  CU("cuCtxSynchronize", g_cu.api.cuCtxSynchronize());
  return 0;
}

int gpu_download(void *dst, const void *src, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemcpyDtoH_v2", g_cu.api.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes));
  return 0;
}

int gpu_memset8(void *dst, uint8_t value, size_t bytes) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemsetD8_v2", g_cu.api.cuMemsetD8((CUdeviceptr)(uintptr_t)dst, value, bytes));
  /* cuMemsetD8 may return before the device has written; make it visible to
   * every stream before the next launch. */
  CU("cuCtxSynchronize", g_cu.api.cuCtxSynchronize());
  return 0;
}

int gpu_memset8_async(void *dst, uint8_t value, size_t bytes, void *stream) {
  if (current() != 0) return -1;
  if (bytes == 0) return 0;
  CU("cuMemsetD8Async",
     g_cu.api.cuMemsetD8Async((CUdeviceptr)(uintptr_t)dst, value, bytes, (CUstream)stream));
  return 0;
}

int gpu_sync(void) {
  if (current() != 0) return -1;
  CU("cuCtxSynchronize", g_cu.api.cuCtxSynchronize());
  return 0;
}

int gpu_stream_create(void **stream) {
  *stream = NULL;
  if (current() != 0) return -1;
  CUstream s = NULL;
  CU("cuStreamCreate", g_cu.api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  *stream = s;
  return 0;
}

int gpu_stream_destroy(void *stream) {
  if (stream == NULL) return 0;
  if (current() != 0) return -1;
  CU("cuStreamDestroy_v2", g_cu.api.cuStreamDestroy((CUstream)stream));
  return 0;
}

int gpu_stream_sync(void *stream) {
  if (current() != 0) return -1;
  CU("cuStreamSynchronize", g_cu.api.cuStreamSynchronize((CUstream)stream));
  return 0;
}

int gpu_capture_begin(void *stream) {
  if (current() != 0) return -1;
  /* Global capture mode: any call that is unsafe during a capture fails, from any
   * thread, so a runtime that synchronizes or allocates inside execute is caught. */
  CU("cuStreamBeginCapture_v2",
     g_cu.api.cuStreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  return 0;
}

int gpu_capture_end(void *stream, void **graph_exec) {
  *graph_exec = NULL;
  if (current() != 0) return -1;
  CUgraph graph = NULL;
  CU("cuStreamEndCapture", g_cu.api.cuStreamEndCapture((CUstream)stream, &graph));
  if (graph == NULL) {
    set_error("cuStreamEndCapture returned no graph (the capture was invalidated)");
    return -1;
  }
  CUgraphExec exec = NULL;
  CUresult res = g_cu.api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  g_cu.api.cuGraphDestroy(graph); /* the executable graph keeps what it needs */
  if (res != CUDA_SUCCESS) return fail("cuGraphInstantiateWithFlags", res);
  *graph_exec = exec;
  return 0;
}

int gpu_graph_launch(void *graph_exec, void *stream) {
  if (current() != 0) return -1;
  CU("cuGraphLaunch", g_cu.api.cuGraphLaunch((CUgraphExec)graph_exec, (CUstream)stream));
  return 0;
}

void gpu_graph_destroy(void *graph_exec) {
  if (graph_exec == NULL || current() != 0) return;
  g_cu.api.cuGraphExecDestroy((CUgraphExec)graph_exec);
}

int gpu_module_load(const char *path, void **module) {
  *module = NULL;
  if (current() != 0) return -1;
  CUmodule m = NULL;
  CUresult res = g_cu.api.cuModuleLoad(&m, path);
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
  g_cu.api.cuModuleUnload((CUmodule)module);
}

int gpu_module_function(void *module, const char *name, void **function) {
  *function = NULL;
  if (current() != 0) return -1;
  CUfunction f = NULL;
  CU("cuModuleGetFunction", g_cu.api.cuModuleGetFunction(&f, (CUmodule)module, name));
  *function = f;
  return 0;
}

int gpu_launch(void *function, unsigned grid, unsigned block, void **params, void *stream) {
  if (current() != 0) return -1;
  CU("cuLaunchKernel", g_cu.api.cuLaunchKernel((CUfunction)function, grid, 1, 1, block, 1, 1, 0,
                                           (CUstream)stream, params, NULL));
  return 0;
}
