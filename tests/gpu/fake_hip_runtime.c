/* fake_hip_runtime.c: a stand-in libamdhip64 for the one path Debian's real
 * ROCm 5.2 cannot reach without an AMD GPU: a runtime that initialises and
 * sees a device, then is judged by its version. It reports one device and the
 * HIP version in INGOT_FAKE_HIP_VERSION (HIP_VERSION encoding); it has no
 * hipGetDevicePropertiesR0600, so even a new enough version stops at the arch.
 * Loaded by test_backend_ops through INGOT_HIP_LIBRARY; never a real driver. */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int hipInit(unsigned flags) { return (int)flags; }
EXPORT int hipGetDeviceCount(int *count) {
  *count = 1;
  return 0;
}
EXPORT int hipSetDevice(int ordinal) { return ordinal == 0 ? 0 : 101; }
EXPORT int hipDeviceGetAttribute(int *value, int attrib, int ordinal) {
  (void)ordinal;
  *value = attrib == 87 ? 64 : 304; /* warp size, else compute units */
  return 0;
}
EXPORT int hipModuleLoadData(void **module, const void *image) {
  (void)module;
  (void)image;
  return 1;
}
EXPORT int hipModuleUnload(void *module) { return module ? 0 : 1; }
EXPORT int hipModuleGetFunction(void **fn, void *module, const char *name) {
  (void)fn;
  (void)module;
  (void)name;
  return 1;
}
EXPORT int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)params,
      (void)extra;
  return 1;
}
EXPORT const char *hipGetErrorString(int error) { return error ? "fake error" : "no error"; }
EXPORT int hipRuntimeGetVersion(int *version) {
  const char *v = getenv("INGOT_FAKE_HIP_VERSION");
  *version = v ? atoi(v) : 0;
  return 0;
}
