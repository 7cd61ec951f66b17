/* gpu_mem.h: the little of the CUDA driver the GPU tests need beside the ingot
 * API (memory, streams, graph capture), loaded with dlopen like the runtime's
 * backend so the tests build without a CUDA SDK. Everything runs in the primary
 * context of device 0, the one the runtime's CUDA backend uses, so pointers and
 * streams made here are valid for ingot_plan_execute.
 *
 * Call gpu_mem_init once (before any thread starts); every other call may come
 * from any thread (each makes the primary context current first). Calls return
 * 0 on success and -1 on failure, with gpu_mem_error() (per thread) naming the
 * driver call and its error. */
#ifndef INGOT_TESTS_GPU_MEM_H
#define INGOT_TESTS_GPU_MEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success; 77 (the skip code) when there is no driver or device, with the
 * reason in gpu_mem_error(); -1 on any other failure. */
int gpu_mem_init(void);
void gpu_mem_shutdown(void);
const char *gpu_mem_error(void);

int gpu_alloc(void **dptr, size_t bytes);
void gpu_free(void *dptr);
int gpu_upload(void *dst, const void *src, size_t bytes);   /* synchronous, whole context */
int gpu_download(void *dst, const void *src, size_t bytes); /* synchronous */
int gpu_memset8(void *dst, uint8_t value, size_t bytes); /* synchronous */
int gpu_memset8_async(void *dst, uint8_t value, size_t bytes, void *stream); /* stream-ordered */
int gpu_sync(void); /* the whole context */

int gpu_stream_create(void **stream); /* non-blocking with respect to the legacy stream */
int gpu_stream_destroy(void *stream);
int gpu_stream_sync(void *stream);

/* Graph capture of everything launched on `stream` between begin and end; end
 * instantiates it. */
int gpu_capture_begin(void *stream);
int gpu_capture_end(void *stream, void **graph_exec);
int gpu_graph_launch(void *graph_exec, void *stream);
void gpu_graph_destroy(void *graph_exec);

/* A code object from a file (a cubin for the device's arch), one of its kernels,
 * and a plain (not programmatic) launch of it on `stream` with the kernel's
 * parameters as cuLaunchKernel takes them. */
int gpu_module_load(const char *path, void **module);
void gpu_module_unload(void *module);
int gpu_module_function(void *module, const char *name, void **function);
int gpu_launch(void *function, unsigned grid, unsigned block, void **params, void *stream);

#ifdef __cplusplus
}
#endif
#endif
