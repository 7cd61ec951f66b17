/* test_backend_host.c: the GPU backends on a machine without a GPU (label host).
 * No mock stands in for the drivers: Debian's real HIP runtime (libamdhip64-5)
 * is loaded, and with no AMD GPU it answers hipInit 101 / hipGetDeviceCount 100,
 * which must come back as a clean UNAVAILABLE naming that reason. A bogus library
 * forced through INGOT_CUDA_LIBRARY / INGOT_HIP_LIBRARY, or one that lacks the
 * driver's symbols, is UNAVAILABLE too, never a crash. Where a GPU is present
 * (the H200 machine) its backend must open instead.
 *
 * Built twice from this file:
 *  - test_backend_host: through the public API (ingot_context_create and
 *    ingot_context_create_ex, whose err names the reason), linked with libingot;
 *  - test_backend_ops (INGOT_TEST_BACKEND_OPS): the backend vtables themselves,
 *    compiled in, with their messages and argument checks. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"
#ifdef INGOT_TEST_BACKEND_OPS
#include "backend.h"
#endif

#include "test_check.h"

/* Status names without libingot (the ops build does not link it). */
static const char *status_name(ingot_status s) {
  static const char *const names[] = {"OK",           "INVALID_ARGUMENT", "INVALID_PACK",
                                      "NO_MATCH",     "UNAVAILABLE",      "DEVICE_ERROR",
                                      "OUT_OF_MEMORY", "IO_ERROR",        "LIMIT_EXCEEDED",
                                      "INTERNAL"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "(not a status)";
}

static void set_env(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

#ifndef INGOT_TEST_BACKEND_OPS

/* ---- through the public API ---- */

static ingot_status create(ingot_backend backend, int ordinal, ingot_context **ctx) {
  *ctx = (ingot_context *)(uintptr_t)0x1; /* must be reset to NULL on failure */
  return ingot_context_create(backend, ordinal, ctx);
}

int main(void) {
  ingot_context *ctx;
  set_env("INGOT_CUDA_LIBRARY", NULL);
  set_env("INGOT_HIP_LIBRARY", NULL);

  /* HIP: the real runtime; UNAVAILABLE without an AMD GPU, a gfx arch with one */
  for (int round = 0; round < 3; ++round) { /* again and again: nothing left behind */
    ingot_status st = create(INGOT_BACKEND_HIP, 0, &ctx);
    if (st == INGOT_OK) {
      CHECK(ctx != NULL && strncmp(ingot_context_arch(ctx), "gfx", 3) == 0,
            "HIP opened, arch must be gfx*: %s", ctx ? ingot_context_arch(ctx) : "(null)");
      ingot_context_destroy(ctx);
    } else {
      CHECK(st == INGOT_UNAVAILABLE && ctx == NULL, "HIP: want UNAVAILABLE and no context, got %s",
            status_name(st));
    }
  }
  /* The reason comes back through ingot_context_create_ex: the driver's own code. */
  char err[1024] = "";
  ingot_status st = ingot_context_create_ex(INGOT_BACKEND_HIP, 0, &ctx, err, sizeof err);
  printf("hip: %s: %s\n", status_name(st), st == INGOT_OK ? ingot_context_arch(ctx) : err);
  if (st == INGOT_OK) {
    ingot_context_destroy(ctx);
  } else {
    CHECK(strstr(err, "not found") == NULL,
          "the HIP runtime is not installed (%s): install Debian's libamdhip64-5, which the host "
          "tests load for real", err);
    if (strstr(err, "not found") == NULL && strstr(err, "hipGetDevicePropertiesR0600") == NULL)
      CHECK(strstr(err, "hipInit") && (strstr(err, "101") || strstr(err, "100")),
            "the message must name hipInit and the driver's code (101 / 100): %s", err);
    /* which runtime answered: the library's file name and the HIP version it reports */
    CHECK(strstr(err, "libamdhip64.so") != NULL && strstr(err, " (HIP ") != NULL,
          "the message must name the library and its HIP version: %s", err);
  }
  set_env("INGOT_HIP_LIBRARY", "/nonexistent/libingot-no-such-driver.so");
  st = ingot_context_create_ex(INGOT_BACKEND_HIP, 0, &ctx, err, sizeof err);
  CHECK(st == INGOT_UNAVAILABLE && ctx == NULL && strstr(err, "libingot-no-such-driver.so"),
        "HIP from a forced missing library: %s: %s", status_name(st), err);
  set_env("INGOT_HIP_LIBRARY", NULL);

  /* CUDA: UNAVAILABLE here (no libcuda, or no device); an sm_ arch on a GPU machine */
  st = create(INGOT_BACKEND_CUDA, 0, &ctx);
  if (st == INGOT_OK) {
    CHECK(ctx != NULL && strncmp(ingot_context_arch(ctx), "sm_", 3) == 0 &&
              ingot_context_compute_units(ctx) > 0,
          "CUDA opened: arch %s, %d SMs", ctx ? ingot_context_arch(ctx) : "(null)",
          ctx ? ingot_context_compute_units(ctx) : 0);
    ingot_context_destroy(ctx);
  } else {
    CHECK(st == INGOT_UNAVAILABLE && ctx == NULL, "CUDA: want UNAVAILABLE, got %s",
          status_name(st));
  }
  /* forced bogus libraries, and real libraries that are not drivers */
  static const char *const bogus[] = {"/nonexistent/libingot-no-such-driver.so", "libm.so.6"};
  for (int i = 0; i < 2; ++i) {
    set_env("INGOT_CUDA_LIBRARY", bogus[i]);
    set_env("INGOT_HIP_LIBRARY", bogus[i]);
    st = create(INGOT_BACKEND_CUDA, 0, &ctx);
    CHECK(st == INGOT_UNAVAILABLE && ctx == NULL, "CUDA from %s: want UNAVAILABLE, got %s",
          bogus[i], status_name(st));
    st = create(INGOT_BACKEND_HIP, 0, &ctx);
    CHECK(st == INGOT_UNAVAILABLE && ctx == NULL, "HIP from %s: want UNAVAILABLE, got %s", bogus[i],
          status_name(st));
  }
  set_env("INGOT_CUDA_LIBRARY", NULL);
  set_env("INGOT_HIP_LIBRARY", NULL);
  /* a negative ordinal is never a device */
  st = create(INGOT_BACKEND_HIP, -1, &ctx);
  CHECK(st != INGOT_OK && ctx == NULL, "HIP ordinal -1 must fail, got %s", status_name(st));
  st = create(INGOT_BACKEND_CUDA, -1, &ctx);
  CHECK(st != INGOT_OK && ctx == NULL, "CUDA ordinal -1 must fail, got %s", status_name(st));

  printf("test_backend_host: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}

#else

/* ---- the backend vtables ---- */

static ingot_status open_dev(const ingot_backend_ops *ops, int ordinal, char *err, size_t n,
                             ingot_backend_device **dev, char *arch) {
  int wave = -1, cus = -1;
  *dev = (ingot_backend_device *)(uintptr_t)0x1;
  err[0] = '\0';
  ingot_status st = ops->open(ordinal, dev, arch, 32, &wave, &cus, err, n);
  if (st != INGOT_OK) {
    CHECK(*dev == NULL, "%s: a failed open must leave out NULL", ops->name);
    CHECK(err[0] != '\0', "%s: a failed open must say why", ops->name);
  } else {
    CHECK(wave > 0 && cus > 0 && arch[0] != '\0', "%s opened with wave %d, %d CUs, arch '%s'",
          ops->name, wave, cus, arch);
  }
  return st;
}

int main(int argc, char **argv) {
  /* argv[1]: the fake HIP runtime (fake_hip_runtime.c) the build made */
  const char *fake_hip = argc > 1 ? argv[1] : NULL;
  char err[2048], arch[32];
  ingot_backend_device *dev;
  set_env("INGOT_CUDA_LIBRARY", NULL);
  set_env("INGOT_HIP_LIBRARY", NULL);

  /* HIP: the real runtime must be installed here; no AMD GPU -> its own codes */
  ingot_status st = open_dev(&ingot_backend_hip_ops, 0, err, sizeof err, &dev, arch);
  printf("hip open: %s: %s\n", status_name(st), st == INGOT_OK ? arch : err);
  if (st == INGOT_OK) {
    CHECK(strncmp(arch, "gfx", 3) == 0, "HIP arch '%s' must be gfx*", arch);
    ingot_backend_hip_ops.close(dev);
  } else {
    CHECK(st == INGOT_UNAVAILABLE, "HIP: want UNAVAILABLE, got %s", status_name(st));
    CHECK(strstr(err, "not found") == NULL,
          "the HIP runtime is not installed (%s): install Debian's libamdhip64-5, which the host "
          "tests load for real",
          err);
    if (strstr(err, "not found") == NULL && strstr(err, "hipGetDevicePropertiesR0600") == NULL)
      CHECK(strstr(err, "hipInit") != NULL && (strstr(err, "101") || strstr(err, "100")),
            "the message must name hipInit and the driver's code (101 / 100): %s", err);
    /* Debian's ROCm 5.2 names itself: libamdhip64.so.5 (HIP 5.2.21153) */
    CHECK(strstr(err, "libamdhip64.so.5 (HIP 5.") != NULL,
          "the message must name the library and its HIP version: %s", err);
  }

  /* CUDA: no libcuda here, or no device; a GPU machine opens it */
  st = open_dev(&ingot_backend_cuda_ops, 0, err, sizeof err, &dev, arch);
  printf("cuda open: %s: %s\n", status_name(st), st == INGOT_OK ? arch : err);
  if (st == INGOT_OK) {
    CHECK(strncmp(arch, "sm_", 3) == 0, "CUDA arch '%s' must be sm_*", arch);
    ingot_backend_cuda_ops.close(dev);
  } else {
    CHECK(st == INGOT_UNAVAILABLE, "CUDA: want UNAVAILABLE, got %s", status_name(st));
    CHECK(strstr(err, "libcuda.so.1") != NULL, "the message must name libcuda.so.1: %s", err);
  }

  /* forced library names */
  const char *missing = "/nonexistent/libingot-no-such-driver.so";
  set_env("INGOT_CUDA_LIBRARY", missing);
  set_env("INGOT_HIP_LIBRARY", missing);
  st = open_dev(&ingot_backend_cuda_ops, 0, err, sizeof err, &dev, arch);
  CHECK(st == INGOT_UNAVAILABLE && strstr(err, missing) && strstr(err, "INGOT_CUDA_LIBRARY") &&
            strstr(err, "install the NVIDIA driver or use a host context"),
        "CUDA with a missing library: %s: %s", status_name(st), err);
  st = open_dev(&ingot_backend_hip_ops, 0, err, sizeof err, &dev, arch);
  CHECK(st == INGOT_UNAVAILABLE && strstr(err, missing) && strstr(err, "INGOT_HIP_LIBRARY") &&
            strstr(err, "not found"),
        "HIP with a missing library: %s: %s", status_name(st), err);
  /* A runtime that sees a device (fake_hip_runtime.c) is judged by its version:
   * older than ROCm 6.0 refused by name; 6.0 passes, and stops only where that
   * fake lacks the ROCm 6 properties entry point; none reported: refused too. */
  if (fake_hip != NULL) {
    set_env("INGOT_HIP_LIBRARY", fake_hip);
    static const struct {
      const char *version, *named, *why;
    } kVersions[] = {
        {"50700000", "(HIP 5.7.0) is older than ROCm 6.0", "need ROCm 6.0 or newer; install it (libamdhip64.so.6"},
        {"50221153", "(HIP 5.2.21153) is older than ROCm 6.0", "point INGOT_HIP_LIBRARY at it, or use a host context"},
        {"0", "(HIP version unknown: neither hipRuntimeGetVersion nor hipDriverGetVersion answers) is older than "
              "ROCm 6.0", "ingot's AMD code objects (v5, gfx942 and gfx950)"},
        {"60032830", "(HIP 6.0.32830) has no hipGetDevicePropertiesR0600", "install ROCm 6.0 or newer"},
        {"70100000", "(HIP 7.1.0) has no hipGetDevicePropertiesR0600", "cannot be read safely"},
    };
    for (size_t i = 0; i < sizeof kVersions / sizeof kVersions[0]; ++i) {
      set_env("INGOT_FAKE_HIP_VERSION", kVersions[i].version);
      st = open_dev(&ingot_backend_hip_ops, 0, err, sizeof err, &dev, arch);
      CHECK(st == INGOT_UNAVAILABLE && strstr(err, fake_hip) && strstr(err, kVersions[i].named) &&
                strstr(err, kVersions[i].why),
            "HIP %s from the fake runtime: %s: %s", kVersions[i].version, status_name(st), err);
    }
    set_env("INGOT_FAKE_HIP_VERSION", NULL);
  }
  /* a real library that is not a driver: a missing REQUIRED symbol */
  set_env("INGOT_CUDA_LIBRARY", "libm.so.6");
  set_env("INGOT_HIP_LIBRARY", "libm.so.6");
  st = open_dev(&ingot_backend_cuda_ops, 0, err, sizeof err, &dev, arch);
  CHECK(st == INGOT_UNAVAILABLE && strstr(err, "cuInit"), "CUDA from libm: %s: %s",
        status_name(st), err);
  st = open_dev(&ingot_backend_hip_ops, 0, err, sizeof err, &dev, arch);
  CHECK(st == INGOT_UNAVAILABLE && strstr(err, "hipInit"), "HIP from libm: %s: %s",
        status_name(st), err);
  set_env("INGOT_CUDA_LIBRARY", NULL);
  set_env("INGOT_HIP_LIBRARY", NULL);

  /* bad arguments: a clear INVALID_ARGUMENT, never a crash */
  const ingot_backend_ops *ops[2] = {&ingot_backend_cuda_ops, &ingot_backend_hip_ops};
  for (int i = 0; i < 2; ++i) {
    int wave, cus;
    st = open_dev(ops[i], -1, err, sizeof err, &dev, arch);
    CHECK(st == INGOT_INVALID_ARGUMENT && strstr(err, "-1"), "%s ordinal -1: %s: %s", ops[i]->name,
          status_name(st), err);
    st = ops[i]->open(0, NULL, arch, sizeof arch, &wave, &cus, err, sizeof err);
    CHECK(st == INGOT_INVALID_ARGUMENT, "%s open with out NULL: %s", ops[i]->name,
          status_name(st));
    ingot_backend_module mod = (ingot_backend_module)0x1;
    const uint32_t image[4] = {0x464c457f, 1, 2, 3};
    st = ops[i]->module_load(NULL, image, sizeof image, &mod, err, sizeof err);
    CHECK(st == INGOT_INVALID_ARGUMENT && mod == NULL, "%s module_load without a device: %s",
          ops[i]->name, status_name(st));
    const uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    st = ops[i]->launch(NULL, NULL, grid, block, 0, 0, NULL, image, sizeof image, err, sizeof err);
    CHECK(st == INGOT_INVALID_ARGUMENT, "%s launch without a function: %s", ops[i]->name,
          status_name(st));
    ops[i]->close(NULL); /* harmless */
    ops[i]->module_unload(NULL, NULL);
  }
  printf("test_backend_ops: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}

#endif
