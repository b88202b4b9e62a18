/*
** driver.c: finds libcuda at run time and resolves the entry points in GPU_DRIVER_SYMBOLS.
**
** The library is opened with dlopen (GPU_CUDA_LIBRARY overrides the name, which lets tests
** simulate a machine with no driver) and every entry point comes from cuGetProcAddress at
** the ABI version named in the table, never from dlsym, so per-version symbols are exact.
** This is process-wide state: loaded once under pthread_once and read-only afterwards.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

static struct {
  pthread_once_t once;
  gpu_Driver driver;
  int ok;                   /* symbols resolved and cuInit succeeded */
  CUresult code;            /* why not, as a CUDA result */
  char why[512];            /* why not, in words */
} loaded = { PTHREAD_ONCE_INIT, {0}, 0, CUDA_SUCCESS, "" };

typedef CUresult (*GetProcAddress12)(const char *, void **, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult *);
typedef CUresult (*GetProcAddress11)(const char *, void **, int, cuuint64_t);

static void load_driver (void) {
  const char *libname = getenv("GPU_CUDA_LIBRARY");
  /* GPU_CUDA_NO_OPTIONAL=1: act as on a driver without the optional entry points (testing) */
  const char *no_optional = getenv("GPU_CUDA_NO_OPTIONAL");
  int without_optional = no_optional != NULL && strcmp(no_optional, "1") == 0;
  void *lib;
  GetProcAddress12 get12;
  GetProcAddress11 get11 = NULL;
  gpu_Driver *d = &loaded.driver;
  CUresult r;
  if (libname == NULL || *libname == '\0') libname = "libcuda.so.1";
  lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
  loaded.code = CUDA_ERROR_NOT_INITIALIZED;
  if (lib == NULL) {
    snprintf(loaded.why, sizeof loaded.why, "no CUDA driver: %s", dlerror());
    return;
  }
  get12 = (GetProcAddress12)dlsym(lib, "cuGetProcAddress_v2");
  if (get12 == NULL) get11 = (GetProcAddress11)dlsym(lib, "cuGetProcAddress");
  if (get12 == NULL && get11 == NULL) {
    snprintf(loaded.why, sizeof loaded.why,
             "CUDA driver in %s is too old (no cuGetProcAddress; need 11.3 or newer)", libname);
    return;
  }
/* symbol is the base name as a string: cuda.h renames some fields (cuMemAlloc_v2). */
#define GPU_RESOLVE(symbol, field, version, required)                                   \
  {                                                                                      \
    void *fn = NULL;                                                                     \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;                  \
    r = get12 ? get12(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found)         \
              : get11(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT);                \
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS) fn = NULL;            \
    if (fn == NULL && required) {                                                        \
      snprintf(loaded.why, sizeof loaded.why,                                            \
               "CUDA driver in %s lacks %s (ABI %d)", libname, symbol, version);         \
      return;                                                                            \
    }                                                                                    \
    memcpy(&d->field, &fn, sizeof fn);                                                   \
  }
#define GPU_REQUIRED(name, version) GPU_RESOLVE(#name, name, version, 1)
#define GPU_OPTIONAL(name, version)                                                      \
  GPU_RESOLVE(#name, name, version, 0)                                                   \
  if (without_optional) d->name = NULL;
  GPU_DRIVER_SYMBOLS(GPU_REQUIRED, GPU_OPTIONAL)
#undef GPU_REQUIRED
#undef GPU_OPTIONAL
#undef GPU_RESOLVE
  d->cuDriverGetVersion(&d->version);
  r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *msg = NULL;
    loaded.code = r;
    d->cuGetErrorString(r, &msg);
    snprintf(loaded.why, sizeof loaded.why, "cuInit failed: %s (%s)",
             gpu_cuerror_name(r), msg ? msg : "unknown error");
    loaded.ok = -1;         /* symbols usable (versions, error names), no devices */
    return;
  }
  loaded.ok = 1;
  loaded.code = CUDA_SUCCESS;
}

const gpu_Driver *gpu_driver_load (const char **why, CUresult *code) {
  pthread_once(&loaded.once, load_driver);
  if (why) *why = loaded.why;
  if (code) *code = loaded.code;
  return loaded.ok == 1 ? &loaded.driver : NULL;
}

/* The symbol table even when cuInit failed (for error names and versions), or NULL. */
GPU_INTERNAL const gpu_Driver *gpu_driver_symbols (void) {
  pthread_once(&loaded.once, load_driver);
  return loaded.ok != 0 ? &loaded.driver : NULL;
}

const gpu_Driver *gpu_driver (lua_State *L) {
  const char *why;
  CUresult code;
  const gpu_Driver *d = gpu_driver_load(&why, &code);
  if (d == NULL)
    gpu_raise(L, (int)code, gpu_cuerror_name(code), why, "cuInit", NULL);
  return d;
}
