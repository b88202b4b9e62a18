/*
** bench/raw.c: the benchmark's reference side.  The same work as bench/run.lua's lua-gpu
** figures, done directly through the CUDA driver API and NVRTC (both loaded with dlopen, so
** this builds on a machine without a GPU), on the kernels of bench/kernels.cu.
**
**   build/bench-raw [--kernels bench/kernels.cu] [--only id,id,...] [--log2n 28]
**
** Prints one "RESULT <id> <value>" line per figure (times in microseconds, bandwidths in
** GB/s, 1e9 bytes/s) and "CHECK ..." / "INFO ..." lines; exits 0 with "NODEVICE <why>" when
** there is no GPU.  Every CUDA call is checked; a failure ends the program with its name.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <nvrtc.h>

#ifndef BENCH_CUDA_LIB64
#define BENCH_CUDA_LIB64 "/usr/local/cuda/lib64"
#endif

/* ---------------------------------------------------------------- loading */

#define DRIVER_SYMBOLS(X)                                                                  \
  X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuGetErrorName, 6000)                      \
  X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGetName, 2000)                  \
  X(cuDeviceGetAttribute, 2000) X(cuDevicePrimaryCtxRetain, 7000)                          \
  X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 2000) X(cuMemAlloc, 3020)                   \
  X(cuMemFree, 3020) X(cuMemAllocFromPoolAsync, 11020) X(cuMemFreeAsync, 11020)            \
  X(cuMemPoolCreate, 11020) X(cuMemPoolSetAttribute, 11020) X(cuMemHostAlloc, 2020)        \
  X(cuMemFreeHost, 2000) X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020)                       \
  X(cuMemcpyDtoD, 3020) X(cuModuleLoadData, 2000) X(cuModuleUnload, 2000)                  \
  X(cuModuleGetFunction, 2000) X(cuLaunchKernel, 4000) X(cuStreamCreate, 2000)             \
  X(cuStreamSynchronize, 2000) X(cuEventCreate, 2000) X(cuEventRecord, 2000)               \
  X(cuEventSynchronize, 2000) X(cuEventElapsedTime, 2000) X(cuStreamBeginCapture, 10010)   \
  X(cuStreamEndCapture, 10000) X(cuGraphInstantiateWithFlags, 11040)                       \
  X(cuGraphLaunch, 10000)

static struct {
#define FIELD(name, version) PFN_##name##_v##version name;
  DRIVER_SYMBOLS(FIELD)
#undef FIELD
} cu;

#define NVRTC_SYMBOLS(X)                                                                   \
  X(nvrtcCreateProgram, nvrtcResult, (nvrtcProgram *, const char *, const char *, int,     \
                                      const char *const *, const char *const *))           \
  X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *))            \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *))                          \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char *))                                \
  X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *))                               \
  X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char *))                                     \
  X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram, size_t *))                                 \
  X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram, char *))                                       \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram *))                                     \
  X(nvrtcGetErrorString, const char *, (nvrtcResult))

static struct {
#define FIELD(name, ret, args) ret (*name) args;
  NVRTC_SYMBOLS(FIELD)
#undef FIELD
} nv;

static void die (const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench-raw: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void check_cu (CUresult r, const char *call) {
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    if (cu.cuGetErrorName) cu.cuGetErrorName(r, &name);
    fprintf(stderr, "bench-raw: %s failed: %s (%d)\n", call, name, (int)r);
    exit(1);
  }
}
#define CU(call) check_cu(cu.call, #call)

static void check_nvrtc (nvrtcResult r, const char *call) {
  if (r != NVRTC_SUCCESS) {
    fprintf(stderr, "bench-raw: %s failed: %s\n", call, nv.nvrtcGetErrorString(r));
    exit(1);
  }
}
#define NV(call) check_nvrtc(nv.call, #call)

/* Returns NULL, or why there is no usable device. */
static const char *load_driver (void) {
  static char why[512];
  typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  GetProc get;
  int count = 0;
  if (lib == NULL) {
    snprintf(why, sizeof why, "no CUDA driver: %s", dlerror());
    return why;
  }
  get = (GetProc)dlsym(lib, "cuGetProcAddress_v2");
  if (get == NULL) return "CUDA driver too old (no cuGetProcAddress_v2)";
#define RESOLVE(name, version)                                                          \
  {                                                                                     \
    void *fn = NULL;                                                                    \
    CUdriverProcAddressQueryResult found;                                               \
    if (get(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||  \
        fn == NULL) {                                                                   \
      snprintf(why, sizeof why, "CUDA driver lacks %s", #name);                         \
      return why;                                                                       \
    }                                                                                   \
    memcpy(&cu.name, &fn, sizeof fn);                                                   \
  }
  DRIVER_SYMBOLS(RESOLVE)
#undef RESOLVE
  if (cu.cuInit(0) != CUDA_SUCCESS) return "cuInit failed (no usable CUDA device)";
  if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return "no CUDA device found";
  return NULL;
}

static void load_nvrtc (void) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                      BENCH_CUDA_LIB64 "/libnvrtc.so.13",
                                      BENCH_CUDA_LIB64 "/libnvrtc.so"};
  void *lib = NULL;
  size_t i;
  for (i = 0; lib == NULL && i < sizeof names / sizeof names[0]; i++)
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) die("NVRTC not found (libnvrtc.so.13, .12 or in %s)", BENCH_CUDA_LIB64);
#define RESOLVE(name, ret, args)                                                 \
  if ((*(void **)&nv.name = dlsym(lib, #name)) == NULL) die("NVRTC lacks %s", #name);
  NVRTC_SYMBOLS(RESOLVE)
#undef RESOLVE
}

/* ---------------------------------------------------------------- timing */

static double now_us (void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double (const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median (double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 4096
static CUevent ev_start, ev_stop;

/* Device time in microseconds of what ran between the two event records. */
static double event_us (void) {
  float ms;
  CU(cuEventSynchronize(ev_stop));
  CU(cuEventElapsedTime(&ms, ev_start, ev_stop));
  return ms * 1e3;
}

/* ---------------------------------------------------------------- state */

static CUdevice device;
static CUcontext context;
static CUmodule module;
static int sm_count;
static const char *only;        /* comma-separated ids, NULL: all */

static int selected (const char *id) {
  const char *p;
  size_t n = strlen(id);
  if (only == NULL) return 1;
  for (p = only; (p = strstr(p, id)) != NULL; p += n)
    if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

static void result (const char *id, double value) {
  printf("RESULT %s %.6g\n", id, value);
  fflush(stdout);
}

static CUfunction kernel (const char *name) {
  CUfunction f;
  check_cu(cu.cuModuleGetFunction(&f, module, name), name);
  return f;
}

static void launch (CUfunction f, unsigned grid, unsigned block, CUstream s, void **args) {
  CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
}

static unsigned blocks_for (long long n, unsigned block) {
  return (unsigned)((n + block - 1) / block);
}

static char *read_file (const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (f == NULL) die("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) die("cannot read %s", path);
  buf[n] = '\0';
  fclose(f);
  if (len) *len = (size_t)n;
  return buf;
}

/* NVRTC: source (wrapped in extern "C" like SourceModule does) -> image for this device. */
static char *compile (const char *source, size_t *size) {
  char arch[64], *wrapped, *image;
  const char *opts[1];
  int major, minor, cubin = 1;
  nvrtcProgram prog;
  nvrtcResult r;
  size_t n = strlen(source) + 64;
  CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  wrapped = malloc(n);
  snprintf(wrapped, n, "extern \"C\" {\n%s\n}\n", source);
  for (;;) {
    if (cubin) snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    else snprintf(arch, sizeof arch, "--gpu-architecture=compute_90");
    opts[0] = arch;
    NV(nvrtcCreateProgram(&prog, wrapped, "kernels.cu", 0, NULL, NULL));
    r = nv.nvrtcCompileProgram(prog, 1, opts);
    if (r == NVRTC_SUCCESS) break;
    if (cubin) {             /* a device newer than this NVRTC: PTX for the driver to finish */
      NV(nvrtcDestroyProgram(&prog));
      cubin = 0;
      continue;
    }
    {
      size_t log_size;
      char *log;
      nv.nvrtcGetProgramLogSize(prog, &log_size);
      log = malloc(log_size + 1);
      nv.nvrtcGetProgramLog(prog, log);
      fprintf(stderr, "%s\n", log);
      die("compiling kernels.cu failed");
    }
  }
  if (cubin) {
    NV(nvrtcGetCUBINSize(prog, size));
    image = malloc(*size);
    NV(nvrtcGetCUBIN(prog, image));
  } else {
    NV(nvrtcGetPTXSize(prog, size));
    image = malloc(*size);
    NV(nvrtcGetPTX(prog, image));
  }
  NV(nvrtcDestroyProgram(&prog));
  free(wrapped);
  return image;
}

static void fill_random (CUdeviceptr x, long long n, unsigned seed) {
  void *args[] = {&x, &n, &seed};
  launch(kernel("fill_random"), (unsigned)(sm_count * 16), 256, NULL, args);
}

/* ---------------------------------------------------------------- figures */

static void bench_launch (void) {
  CUfunction f = kernel("empty_kernel");
  double t[MAX_REPS];
  int rep, i;
  for (i = 0; i < 1000; i++) launch(f, 1, 1, NULL, NULL);     /* warm up */
  CU(cuCtxSynchronize());
  if (selected("launch_async")) {
    /* host cost of a launch: batches below the queue depth, the sync outside the timing */
    for (rep = 0; rep < 200; rep++) {
      double t0 = now_us();
      for (i = 0; i < 256; i++) launch(f, 1, 1, NULL, NULL);
      t[rep] = (now_us() - t0) / 256;
      CU(cuCtxSynchronize());
    }
    result("launch_async", median(t, 200));
  }
  if (selected("launch_sync")) {
    for (rep = 0; rep < 2000; rep++) {
      double t0 = now_us();
      launch(f, 1, 1, NULL, NULL);
      CU(cuCtxSynchronize());
      t[rep % MAX_REPS] = now_us() - t0;
    }
    result("launch_sync", median(t, 2000));
  }
}

static CUmemoryPool pool;

static void make_pool (void) {
  CUmemPoolProps props;
  cuuint64_t keep_all = UINT64_MAX;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CU(cuMemPoolCreate(&pool, &props));
  CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
}

/* c = a + b on 1000 floats, c allocated from the pool for each op and freed stream-ordered */
static void bench_small_add (void) {
  CUfunction add = kernel("add_f32");
  long long n = 1000;
  CUdeviceptr a, b, c;
  double t[256];
  int rep, i;
  CU(cuMemAlloc(&a, n * 4));
  CU(cuMemAlloc(&b, n * 4));
  fill_random(a, n, 1);
  fill_random(b, n, 2);
  for (rep = -20; rep < 200; rep++) {
    double t0 = now_us();
    for (i = 0; i < 256; i++) {
      void *args[] = {&a, &b, &c, &n};
      CU(cuMemAllocFromPoolAsync(&c, n * 4, pool, NULL));
      launch(add, blocks_for(n, 256), 256, NULL, args);
      CU(cuMemFreeAsync(c, NULL));
    }
    if (rep >= 0) t[rep] = (now_us() - t0) / 256;
    CU(cuCtxSynchronize());
  }
  result("small_add", median(t, 200));
  CU(cuMemFree(a));
  CU(cuMemFree(b));
}

static void bench_alloc_free (void) {
  double t[256];
  int rep, i;
  CUdeviceptr p;
  for (rep = -5; rep < 100; rep++) {
    double t0 = now_us();
    for (i = 0; i < 100; i++) {
      CU(cuMemAllocFromPoolAsync(&p, 4 << 20, pool, NULL));
      CU(cuMemFreeAsync(p, NULL));
    }
    if (rep >= 0) t[rep] = (now_us() - t0) / 100;
  }
  CU(cuCtxSynchronize());
  result("alloc_free", median(t, 100));
}

/* Median device time (us) of reps runs of body(arg), events around each. */
static double time_device (void (*body)(void *), void *arg, int reps) {
  double t[64];
  int rep;
  body(arg);                                /* warm up */
  for (rep = 0; rep < reps; rep++) {
    CU(cuEventRecord(ev_start, NULL));
    body(arg);
    CU(cuEventRecord(ev_stop, NULL));
    t[rep] = event_us();
  }
  return median(t, reps);
}

typedef struct Large {
  long long n;
  CUdeviceptr a, b, c, t1, t2, partial, out;
  unsigned reduce_grid;
} Large;

static void do_add (void *p) {
  Large *L = p;
  void *args[] = {&L->a, &L->b, &L->c, &L->n};
  launch(kernel("add_f32"), blocks_for(L->n, 256), 256, NULL, args);
}

static void do_copy (void *p) {
  Large *L = p;
  CU(cuMemcpyDtoD(L->c, L->a, (size_t)L->n * 4));
}

static void reduce (Large *L, const char *first, const char *finish, int two_inputs) {
  int grid = (int)L->reduce_grid;
  void *args1[] = {&L->a, &L->partial, &L->n};
  void *args2[] = {&L->a, &L->b, &L->partial, &L->n};
  void *fin[] = {&L->partial, &L->out, &grid};
  launch(kernel(first), L->reduce_grid, 256, NULL, two_inputs ? args2 : args1);
  launch(kernel(finish), 1, 256, NULL, fin);
}

static void do_sum (void *p) { reduce(p, "reduce_sum_f32", "finish_sum_f32", 0); }
static void do_max (void *p) { reduce(p, "reduce_max_f32", "finish_max_f32", 0); }
static void do_dot (void *p) { reduce(p, "reduce_dot_f32", "finish_sum_f32", 1); }

#define SCAN_TILE 4096
static void do_cumsum (void *p) {
  Large *L = p;
  int ntiles = (int)((L->n + SCAN_TILE - 1) / SCAN_TILE);
  void *a1[] = {&L->a, &L->partial, &L->n};
  void *a2[] = {&L->partial, &ntiles};
  void *a3[] = {&L->a, &L->partial, &L->c, &L->n};
  launch(kernel("scan_tile_sums_f32"), (unsigned)ntiles, 256, NULL, a1);
  launch(kernel("scan_sums_f32"), 1, 256, NULL, a2);
  launch(kernel("scan_tiles_f32"), (unsigned)ntiles, 256, NULL, a3);
}

static void do_unfused (void *p) {
  Large *L = p;
  float two = 2, three = 3;
  unsigned g = blocks_for(L->n, 256);
  void *s1[] = {&L->a, &two, &L->t1, &L->n};
  void *s2[] = {&L->b, &three, &L->t2, &L->n};
  void *ad[] = {&L->t1, &L->t2, &L->c, &L->n};
  launch(kernel("scale_f32"), g, 256, NULL, s1);
  launch(kernel("scale_f32"), g, 256, NULL, s2);
  launch(kernel("add_f32"), g, 256, NULL, ad);
}

static void do_fused (void *p) {
  Large *L = p;
  void *args[] = {&L->a, &L->b, &L->c, &L->n};
  launch(kernel("axpby_f32"), blocks_for(L->n, 256), 256, NULL, args);
}

static float *to_host (CUdeviceptr p, long long n) {
  float *h = malloc((size_t)n * 4);
  if (h == NULL) die("out of host memory");
  CU(cuMemcpyDtoH(h, p, (size_t)n * 4));
  return h;
}

static void bench_large (long long n) {
  Large L;
  double bytes = (double)n * 4;
  float *ha, *hb, *hc, got;
  double ref = 0, refmax = -INFINITY, refdot = 0, worst = 0, run = 0;
  long long i;
  memset(&L, 0, sizeof L);
  L.n = n;
  L.reduce_grid = (unsigned)sm_count * 8;
  CU(cuMemAlloc(&L.a, n * 4));
  CU(cuMemAlloc(&L.b, n * 4));
  CU(cuMemAlloc(&L.c, n * 4));
  CU(cuMemAlloc(&L.partial, ((n + SCAN_TILE - 1) / SCAN_TILE + L.reduce_grid) * 4));
  CU(cuMemAlloc(&L.out, 4));
  fill_random(L.a, n, 11);
  fill_random(L.b, n, 12);
  ha = to_host(L.a, n);
  hb = to_host(L.b, n);
  for (i = 0; i < n; i++) {
    ref += ha[i];
    refdot += (double)ha[i] * hb[i];
    if (ha[i] > refmax) refmax = ha[i];
  }
  if (selected("copy_dtod")) result("copy_dtod", 2 * bytes / time_device(do_copy, &L, 10) / 1e3);
  if (selected("large_add")) {
    result("large_add", 3 * bytes / time_device(do_add, &L, 10) / 1e3);
    hc = to_host(L.c, n);
    for (i = 0; i < n; i += 9973)
      if (hc[i] != ha[i] + hb[i]) die("add_f32 wrong at %lld", i);
    free(hc);
  }
  if (selected("sum")) {
    result("sum", bytes / time_device(do_sum, &L, 10) / 1e3);
    CU(cuMemcpyDtoH(&got, L.out, 4));
    printf("CHECK sum raw %.9g ref %.9g\n", got, ref);
    if (fabs(got - ref) > 1e-4 * sqrt((double)n) + 1e-3 * fabs(ref)) die("sum wrong");
  }
  if (selected("max")) {
    result("max", bytes / time_device(do_max, &L, 10) / 1e3);
    CU(cuMemcpyDtoH(&got, L.out, 4));
    if (got != refmax) die("max wrong");
  }
  if (selected("dot")) {
    result("dot", 2 * bytes / time_device(do_dot, &L, 10) / 1e3);
    CU(cuMemcpyDtoH(&got, L.out, 4));
    printf("CHECK dot raw %.9g ref %.9g\n", got, refdot);
    if (fabs(got - refdot) > 1e-4 * sqrt((double)n) + 1e-3 * fabs(refdot)) die("dot wrong");
  }
  if (selected("cumsum")) {
    result("cumsum", 2 * bytes / time_device(do_cumsum, &L, 10) / 1e3);
    hc = to_host(L.c, n);
    for (i = 0; i < n; i++) {
      double err;
      run += ha[i];
      err = fabs(hc[i] - run) / (sqrt((double)i + 1) + fabs(run));
      if (err > worst) worst = err;
    }
    printf("CHECK cumsum worst scaled error %.3g\n", worst);
    if (worst > 1e-3) die("cumsum wrong");
    free(hc);
  }
  if (selected("axpby_unfused") || selected("axpby_fused")) {
    CU(cuMemAlloc(&L.t1, n * 4));
    CU(cuMemAlloc(&L.t2, n * 4));
    if (selected("axpby_unfused"))
      result("axpby_unfused", 3 * bytes / time_device(do_unfused, &L, 10) / 1e3);
    if (selected("axpby_fused")) result("axpby_fused", 3 * bytes / time_device(do_fused, &L, 10) / 1e3);
    hc = to_host(L.c, n);
    for (i = 0; i < n; i += 9973) {   /* the device may contract to an fma: one rounding apart */
      double want = 2.0 * ha[i] + 3.0 * hb[i];
      if (fabs(hc[i] - want) > 1e-6 * (fabs(2.0 * ha[i]) + fabs(3.0 * hb[i])))
        die("axpby wrong at %lld", i);
    }
    free(hc);
    CU(cuMemFree(L.t1));
    CU(cuMemFree(L.t2));
  }
  free(ha);
  free(hb);
  CU(cuMemFree(L.a));
  CU(cuMemFree(L.b));
  CU(cuMemFree(L.c));
  CU(cuMemFree(L.partial));
  CU(cuMemFree(L.out));
}

/* Host <-> device, synchronous copies of 256 MiB, wall time. */
static void bench_host_copies (long long log2n) {
  size_t bytes = (size_t)4 << (log2n < 26 ? log2n : 26);   /* 256 MiB unless shrunk */
  void *pageable = malloc(bytes), *pinned;
  CUdeviceptr d;
  const char *ids[4] = {"dtoh_pageable", "dtoh_pinned", "htod_pageable", "htod_pinned"};
  int k, rep;
  if (pageable == NULL) die("out of host memory");
  CU(cuMemHostAlloc(&pinned, bytes, 0));
  CU(cuMemAlloc(&d, bytes));
  fill_random(d, (long long)(bytes / 4), 21);
  CU(cuCtxSynchronize());
  for (k = 0; k < 4; k++) {
    void *h = k % 2 ? pinned : pageable;
    double t[8];
    if (!selected(ids[k])) continue;
    for (rep = -1; rep < 5; rep++) {
      double t0 = now_us();
      if (k < 2) CU(cuMemcpyDtoH(h, d, bytes));
      else CU(cuMemcpyHtoD(d, h, bytes));
      if (rep >= 0) t[rep] = now_us() - t0;
    }
    result(ids[k], (double)bytes / median(t, 5) / 1e3);
  }
  CU(cuMemFree(d));
  CU(cuMemFreeHost(pinned));
  free(pageable);
}

static const char compile_source[] =
  "__global__ void add_one(const float *a, const float *b, float *c, int n) {\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (i < n) c[i] = a[i] + b[i];\n"
  "}\n";

static void bench_compile (void) {
  double t[16];
  int rep;
  char src[1024], path[] = "/tmp/bench-raw-cubin-XXXXXX";
  size_t size;
  char *image = NULL;
  if (selected("compile_cold")) {
    for (rep = -1; rep < 5; rep++) {   /* a fresh comment each time: nothing can be reused */
      CUmodule m;
      CUfunction f;
      double t0 = now_us();
      snprintf(src, sizeof src, "// raw %d %ld\n%s", rep, (long)getpid(), compile_source);
      free(image);
      image = compile(src, &size);
      CU(cuModuleLoadData(&m, image));
      CU(cuModuleGetFunction(&f, m, "add_one"));
      if (rep >= 0) t[rep] = now_us() - t0;
      CU(cuModuleUnload(m));
    }
    result("compile_cold", median(t, 5));
  }
  if (selected("compile_disk")) {
    /* what a disk cache hit must do at least: read the image, load it */
    int fd = mkstemp(path);
    FILE *f;
    if (image == NULL) image = compile(compile_source, &size);
    if (fd < 0 || (f = fdopen(fd, "wb")) == NULL || fwrite(image, 1, size, f) != size)
      die("cannot write %s", path);
    fclose(f);
    for (rep = -1; rep < 9; rep++) {
      CUmodule m;
      CUfunction fn;
      double t0 = now_us();
      size_t len;
      char *img = read_file(path, &len);
      CU(cuModuleLoadData(&m, img));
      CU(cuModuleGetFunction(&fn, m, "add_one"));
      if (rep >= 0) t[rep] = now_us() - t0;
      CU(cuModuleUnload(m));
      free(img);
    }
    remove(path);
    result("compile_disk", median(t, 9));
  }
  free(image);
}

/* 100 tiny kernels one by one vs the same captured into a graph and replayed */
static void bench_graph (void) {
  CUfunction bump = kernel("bump_f32");
  CUstream s;
  CUdeviceptr x;
  CUgraph graph;
  CUgraphExec exec;
  int n = 1024, rep, i;
  void *args[] = {&x, &n};
  double t[64];
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU(cuMemAlloc(&x, (size_t)n * 4));
  fill_random(x, n, 31);
  CU(cuCtxSynchronize());
  for (rep = -3; rep < 50; rep++) {
    double t0 = now_us();
    for (i = 0; i < 100; i++) launch(bump, 4, 256, s, args);
    CU(cuStreamSynchronize(s));
    if (rep >= 0) t[rep] = now_us() - t0;
  }
  if (selected("graph_loop")) result("graph_loop", median(t, 50));
  CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (i = 0; i < 100; i++) launch(bump, 4, 256, s, args);
  CU(cuStreamEndCapture(s, &graph));
  CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (rep = -3; rep < 50; rep++) {
    double t0 = now_us();
    CU(cuGraphLaunch(exec, s));
    CU(cuStreamSynchronize(s));
    if (rep >= 0) t[rep] = now_us() - t0;
  }
  if (selected("graph_replay")) result("graph_replay", median(t, 50));
  CU(cuMemFree(x));
}

int main (int argc, char **argv) {
  const char *kernels_path = "bench/kernels.cu", *why;
  long long log2n = 28;
  int i, driver;
  char name[256];
  size_t size;
  char *image;
  const char *env = getenv("BENCH_LOG2N");
  if (env && *env) log2n = atoll(env);
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) kernels_path = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--log2n") == 0 && i + 1 < argc) log2n = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--kernels path] [--only id,id] [--log2n n]\n", argv[0]);
      return 2;
    }
  }
  if (log2n < 10 || log2n > 32) die("log2n %lld out of range (10..32)", log2n);
  if ((why = load_driver()) != NULL) {
    printf("NODEVICE %s\n", why);
    return 0;
  }
  load_nvrtc();
  CU(cuDeviceGet(&device, 0));
  CU(cuDevicePrimaryCtxRetain(&context, device));
  CU(cuCtxSetCurrent(context));
  CU(cuDeviceGetName(name, sizeof name, device));
  CU(cuDriverGetVersion(&driver));
  CU(cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  printf("INFO device %s\nINFO driver %d\nINFO sms %d\n", name, driver, sm_count);
  image = compile(read_file(kernels_path, NULL), &size);
  CU(cuModuleLoadData(&module, image));
  CU(cuEventCreate(&ev_start, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&ev_stop, CU_EVENT_DEFAULT));
  make_pool();
  if (selected("launch_async") || selected("launch_sync")) bench_launch();
  if (selected("small_add")) bench_small_add();
  if (selected("alloc_free")) bench_alloc_free();
  if (selected("copy_dtod") || selected("large_add") || selected("sum") || selected("max") ||
      selected("dot") || selected("cumsum") || selected("axpby_unfused") ||
      selected("axpby_fused"))
    bench_large((long long)1 << log2n);
  if (selected("htod_pageable") || selected("htod_pinned") || selected("dtoh_pageable") ||
      selected("dtoh_pinned"))
    bench_host_copies(log2n);
  if (selected("compile_cold") || selected("compile_disk")) bench_compile();
  if (selected("graph_loop") || selected("graph_replay")) bench_graph();
  CU(cuCtxSynchronize());
  return 0;
}
