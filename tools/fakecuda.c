/*
** tools/fakecuda.c: a stand-in libcuda for timing the binding's own cost on a machine with
** no GPU (tools/small_add_parts.lua).  One device, "memory" in host RAM (so copies and
** memsets do what they say), launches that run nothing (one exception: see cuLaunchKernel).
** Kernel results are not computed: this is for measuring the host path, never for checking
** answers.
**
**   make fakecuda bench-build
**   GPU_CUDA_LIBRARY=$PWD/build/libfakecuda.so lua5.4 tools/small_add_parts.lua
**
** Device memory is counted: cuMemGetInfo's free figure is 79 GiB less the bytes allocated and
** not freed, so specs can see when the module really releases memory; FAKE_CUDA_REPORT=1
** prints that count when the process exits (after lua_close).
**
** cuGetProcAddress_v2 hands out the stubs below by name and refuses every other symbol, so a
** new entry point the module needs shows up as a load error; cuLaunchKernel and
** cuCtxSynchronize and cuCtxGetCurrent are exported too, for bench_clock's raw launch loop.
*/
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

static __thread CUcontext current;
static char fake_context, fake_pool, fake_module, fake_stream, fake_event, fake_graph, fake_exec;

/* Entry points with nothing to do share this one; it ignores the arguments it is called with
** (the x86-64 and AArch64 calling conventions allow that; this is a tool, not the module). */
static CUresult ok (void) { return CUDA_SUCCESS; }

static CUresult driver_version (int *v) { *v = 13000; return CUDA_SUCCESS; }
static CUresult error_name (CUresult e, const char **s) {
  *s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
static CUresult device_get (CUdevice *d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
static CUresult device_count (int *n) { *n = 1; return CUDA_SUCCESS; }
static CUresult device_name (char *name, int len, CUdevice d) {
  (void)d;
  strncpy(name, "fake CUDA device (tools/fakecuda.c)", (size_t)len);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}
static CUresult total_mem (size_t *bytes, CUdevice d) {
  (void)d;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static CUresult attribute (int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;   /* an H100's */
    /* CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT stays 1: mem_alloc's addresses are 16 bytes past
    ** malloc's, not 512-byte aligned as a driver's are */
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:   /* FAKE_CUDA_CONCURRENT_MANAGED=0: none */
      *v = getenv("FAKE_CUDA_CONCURRENT_MANAGED") == NULL ||
           strcmp(getenv("FAKE_CUDA_CONCURRENT_MANAGED"), "0") != 0;
      break;
    default: *v = 1;
  }
  return CUDA_SUCCESS;
}
static CUresult pci_bus_id (char *id, int len, CUdevice d) {
  (void)d;
  strncpy(id, "0000:00:00.0", (size_t)len);
  id[len - 1] = '\0';
  return CUDA_SUCCESS;
}
static CUresult retain (CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)&fake_context;
  return CUDA_SUCCESS;
}
static CUresult get_current (CUcontext *c) { *c = current; return CUDA_SUCCESS; }
static CUresult set_current (CUcontext c) { current = c; return CUDA_SUCCESS; }
static CUresult ctx_device (CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
/* Device bytes allocated and not freed; each allocation's size sits in a header before it
** (16 bytes, which keeps malloc's alignment).  Allocations start zeroed: the stand-in runs no
** kernels, so what specs read back of their results is what the memory held, and zeros keep
** that the same from run to run (malloc's recycled bytes once gave a NaN range under
** valgrind). */
static atomic_size_t device_bytes;
#define HEADER 16
static CUresult mem_info (size_t *free_bytes, size_t *total) {
  *free_bytes = ((size_t)79 << 30) - atomic_load(&device_bytes);
  *total = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static CUresult mem_alloc (CUdeviceptr *p, size_t n) {
  char *m = (char *)calloc(1, HEADER + (n ? n : 1));
  if (m == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(m, &n, sizeof n);
  atomic_fetch_add(&device_bytes, n);
  *p = (CUdeviceptr)(uintptr_t)(m + HEADER);
  return CUDA_SUCCESS;
}
__attribute__((destructor)) static void report (void) {
  const char *report = getenv("FAKE_CUDA_REPORT");
  if (report != NULL && strcmp(report, "1") == 0) {
    printf("fakecuda: %zu device bytes not freed at exit\n", atomic_load(&device_bytes));
    fflush(stdout);
  }
}
static CUresult mem_free (CUdeviceptr p) {
  char *m;
  size_t n;
  if (p == 0) return CUDA_SUCCESS;
  m = (char *)(uintptr_t)p - HEADER;
  memcpy(&n, m, sizeof n);
  atomic_fetch_sub(&device_bytes, n);
  free(m);
  return CUDA_SUCCESS;
}
/* Managed memory is "device" memory here too (host RAM, counted alike). */
static CUresult managed_alloc (CUdeviceptr *p, size_t n, unsigned flags) {
  (void)flags;
  return mem_alloc(p, n);
}
static CUresult pool_alloc (CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
  (void)pool; (void)s;
  return mem_alloc(p, n);
}
static CUresult free_async (CUdeviceptr p, CUstream s) { (void)s; return mem_free(p); }
static CUresult pool_create (CUmemoryPool *pool, const CUmemPoolProps *props) {
  (void)props;
  *pool = (CUmemoryPool)&fake_pool;
  return CUDA_SUCCESS;
}
static CUresult pool_get (CUmemoryPool pool, CUmemPool_attribute a, void *v) {
  (void)pool; (void)a;
  *(cuuint64_t *)v = 0;
  return CUDA_SUCCESS;
}
static CUresult host_alloc (void **p, size_t n, unsigned flags) {
  (void)flags;
  return (*p = malloc(n ? n : 1)) != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult host_free (void *p) { free(p); return CUDA_SUCCESS; }
static CUresult copy (CUdeviceptr dst, CUdeviceptr src, size_t n) {
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
static CUresult htod (CUdeviceptr dst, const void *src, size_t n) {
  return copy(dst, (CUdeviceptr)(uintptr_t)src, n);
}
static CUresult dtoh (void *dst, CUdeviceptr src, size_t n) {
  return copy((CUdeviceptr)(uintptr_t)dst, src, n);
}
static CUresult htod_async (CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  (void)s;
  return htod(dst, src, n);
}
static CUresult dtoh_async (void *dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return dtoh(dst, src, n);
}
static CUresult dtod_async (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return copy(dst, src, n);
}
static CUresult set8 (CUdeviceptr p, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)p, v, n);
  return CUDA_SUCCESS;
}
static CUresult set16 (CUdeviceptr p, unsigned short v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) memcpy((char *)(uintptr_t)p + 2 * i, &v, 2);
  return CUDA_SUCCESS;
}
static CUresult set32 (CUdeviceptr p, unsigned v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) memcpy((char *)(uintptr_t)p + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}
static CUresult set8_async (CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  (void)s;
  return set8(p, v, n);
}
static CUresult set16_async (CUdeviceptr p, unsigned short v, size_t n, CUstream s) {
  (void)s;
  return set16(p, v, n);
}
static CUresult set32_async (CUdeviceptr p, unsigned v, size_t n, CUstream s) {
  (void)s;
  return set32(p, v, n);
}
static CUresult pointer_attribute (void *data, CUpointer_attribute a, CUdeviceptr p) {
  (void)p;
  if (a == CU_POINTER_ATTRIBUTE_CONTEXT) *(CUcontext *)data = (CUcontext)&fake_context;
  else if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *(unsigned *)data = CU_MEMORYTYPE_DEVICE;
  else *(int *)data = 0;
  return CUDA_SUCCESS;
}
static CUresult module_load (CUmodule *m, const void *image, unsigned n, CUjit_option *o,
                             void **v) {
  (void)image; (void)n; (void)o; (void)v;
  *m = (CUmodule)&fake_module;
  return CUDA_SUCCESS;
}
/* A Function handle per call: freed never (the handles are few and live as long as modules). */
static CUresult module_function (CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  *f = (CUfunction)(void *)strdup(name);
  return *f != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
/* One variable for every module and name: a module's globals are its image's memory, not
** allocations, so they count in no figure of allocated bytes (a real driver's neither). */
static CUresult module_global (CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name) {
  static double variable[32];
  (void)m; (void)name;
  if (bytes) *bytes = sizeof variable;
  if (p) *p = (CUdeviceptr)(uintptr_t)variable;
  return CUDA_SUCCESS;
}
static CUresult func_attribute (int *v, CUfunction_attribute a, CUfunction f) {
  (void)f;
  *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024
     : a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 16 : 0;
  return CUDA_SUCCESS;
}
static CUresult occupancy (int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize fn,
                           size_t shared, int limit) {
  (void)f; (void)fn; (void)shared; (void)limit;
  *min_grid = 132;
  *block = 1024;
  return CUDA_SUCCESS;
}
/* As an H100 with 16 registers a thread and no shared memory: 2048 threads a multiprocessor,
** at most 32 blocks. */
static CUresult active_blocks (int *blocks, CUfunction f, int block_size, size_t shared) {
  (void)f; (void)shared;
  *blocks = 2048 / block_size < 32 ? 2048 / block_size : 32;
  return CUDA_SUCCESS;
}
static CUresult stream_create (CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)&fake_stream;
  return CUDA_SUCCESS;
}
/* Priorities 0 (least) to -5 (greatest), an H100's; a stream remembers none: it reports 0. */
static CUresult stream_create_priority (CUstream *s, unsigned flags, int priority) {
  (void)priority;
  return stream_create(s, flags);
}
static CUresult stream_priority (CUstream s, int *priority) {
  (void)s;
  *priority = 0;
  return CUDA_SUCCESS;
}
static CUresult priority_range (int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
static CUresult event_create (CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)&fake_event;
  return CUDA_SUCCESS;
}
static CUresult elapsed (float *ms, CUevent a, CUevent b) {
  (void)a;
  (void)b;
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
static CUresult end_capture (CUstream s, CUgraph *g) {
  (void)s;
  *g = (CUgraph)&fake_graph;
  return CUDA_SUCCESS;
}
static CUresult instantiate (CUgraphExec *e, CUgraph g, unsigned long long flags) {
  (void)g; (void)flags;
  *e = (CUgraphExec)&fake_exec;
  return CUDA_SUCCESS;
}

/* Runs nothing either; FAKE_CUDA_TRACE_LAUNCH_EX=1 prints the launch's shape and attributes. */
static CUresult launch_ex (const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  const char *trace = getenv("FAKE_CUDA_TRACE_LAUNCH_EX");
  unsigned i;
  (void)params; (void)extra;
  if (trace == NULL || strcmp(trace, "1") != 0) return CUDA_SUCCESS;
  printf("fakecuda: cuLaunchKernelEx %s grid %u %u %u block %u %u %u shared %u", (const char *)(void *)f,
         c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
         c->sharedMemBytes);
  for (i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) printf(" cooperative %d", a->value.cooperative);
    else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      printf(" cluster %u %u %u", a->value.clusterDim.x, a->value.clusterDim.y, a->value.clusterDim.z);
    else printf(" attribute %d", (int)a->id);
  }
  printf("\n");
  fflush(stdout);
  return CUDA_SUCCESS;
}

/* The linker: a state counts its inputs; the "cubin" it completes names that count, which any
** module load here accepts.  A library path that does not end in ".a" is refused, as the
** driver refuses a file that is not one. */
typedef struct { int inputs; char cubin[64]; } fake_link;
static CUresult link_create (unsigned n, CUjit_option *o, void **v, CUlinkState *state) {
  (void)n; (void)o; (void)v;
  *state = (CUlinkState)calloc(1, sizeof(fake_link));
  return *state != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult link_add_data (CUlinkState state, CUjitInputType type, void *data, size_t size,
                               const char *name, unsigned n, CUjit_option *o, void **v) {
  (void)type; (void)data; (void)size; (void)name; (void)n; (void)o; (void)v;
  ((fake_link *)(void *)state)->inputs++;
  return CUDA_SUCCESS;
}
static CUresult link_add_file (CUlinkState state, CUjitInputType type, const char *path,
                               unsigned n, CUjit_option *o, void **v) {
  size_t len = strlen(path);
  (void)type; (void)n; (void)o; (void)v;
  if (len < 2 || strcmp(path + len - 2, ".a") != 0) return CUDA_ERROR_INVALID_IMAGE;
  ((fake_link *)(void *)state)->inputs++;
  return CUDA_SUCCESS;
}
static CUresult link_complete (CUlinkState state, void **cubin, size_t *size) {
  fake_link *l = (fake_link *)(void *)state;
  snprintf(l->cubin, sizeof l->cubin, "fake cubin of %d inputs", l->inputs);
  *cubin = l->cubin;
  *size = strlen(l->cubin);
  return CUDA_SUCCESS;
}
static CUresult link_destroy (CUlinkState state) { free(state); return CUDA_SUCCESS; }

/* CUDA arrays: the descriptor and the texels in host memory, rows packed, counted as device
** bytes; cuMemcpy3D copies between them and host or "device" memory as the driver does, so
** specs can round-trip data.  Texture and surface objects are numbers, never read. */
typedef struct { CUDA_ARRAY3D_DESCRIPTOR desc; size_t row, rows, bytes; unsigned char *data; } fake_array;
static size_t format_bytes (CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}
static CUresult array_create (CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  fake_array *a;
  size_t texel = format_bytes(d->Format) * d->NumChannels;
  if (texel == 0 || d->Width == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
    return CUDA_ERROR_INVALID_VALUE;
  if ((a = (fake_array *)calloc(1, sizeof *a)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  a->desc = *d;
  a->row = d->Width * texel;
  a->rows = d->Height ? d->Height : 1;
  a->bytes = a->row * a->rows * (d->Depth ? d->Depth : 1);
  if ((a->data = (unsigned char *)calloc(1, a->bytes)) == NULL) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  atomic_fetch_add(&device_bytes, a->bytes);
  *out = (CUarray)(void *)a;
  return CUDA_SUCCESS;
}
static CUresult array_destroy (CUarray h) {
  fake_array *a = (fake_array *)(void *)h;
  atomic_fetch_sub(&device_bytes, a->bytes);
  free(a->data);
  free(a);
  return CUDA_SUCCESS;
}
/* The address of byte x of row y of slice z on one side of a copy. */
static unsigned char *copy_address (CUmemorytype type, const void *host, CUdeviceptr device,
                                    CUarray array, size_t pitch, size_t height, size_t x,
                                    size_t y, size_t z) {
  if (type == CU_MEMORYTYPE_ARRAY) {
    fake_array *a = (fake_array *)(void *)array;
    return a->data + (z * a->rows + y) * a->row + x;
  }
  return (type == CU_MEMORYTYPE_HOST ? (unsigned char *)(uintptr_t)host
                                     : (unsigned char *)(uintptr_t)device) + (z * height + y) * pitch + x;
}
static CUresult memcpy_3d (const CUDA_MEMCPY3D *c) {
  size_t y, z;
  for (z = 0; z < c->Depth; z++)
    for (y = 0; y < c->Height; y++)
      memcpy(copy_address(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstPitch,
                          c->dstHeight, c->dstXInBytes, c->dstY + y, c->dstZ + z),
             copy_address(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcPitch,
                          c->srcHeight, c->srcXInBytes, c->srcY + y, c->srcZ + z),
             c->WidthInBytes);
  return CUDA_SUCCESS;
}
static CUresult memcpy_3d_async (const CUDA_MEMCPY3D *c, CUstream s) { (void)s; return memcpy_3d(c); }
static atomic_ullong next_object = 1;
static CUresult object_create (unsigned long long *handle) {
  *handle = atomic_fetch_add(&next_object, 1);
  return CUDA_SUCCESS;
}

/* IPC: a handle holds the address itself (one process: opening it gives the memory back);
** FAKE_CUDA_IPC_FAIL=1 makes opening fail, as a handle from a dead process does. */
static CUresult ipc_get (CUipcMemHandle *h, CUdeviceptr p) {
  memset(h, 0, sizeof *h);
  memcpy(h->reserved, &p, sizeof p);
  return CUDA_SUCCESS;
}
static CUresult ipc_open (CUdeviceptr *p, CUipcMemHandle h, unsigned flags) {
  const char *fail = getenv("FAKE_CUDA_IPC_FAIL");
  (void)flags;
  if (fail != NULL && strcmp(fail, "1") == 0) return CUDA_ERROR_INVALID_VALUE;
  memcpy(p, h.reserved, sizeof *p);
  return CUDA_SUCCESS;
}
/* The whole allocation p starts (mem_alloc's header has its size). */
static CUresult address_range (CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  if (base) *base = p;
  if (size) memcpy(size, (char *)(uintptr_t)p - HEADER, sizeof *size);
  return CUDA_SUCCESS;
}

/* One device: no peers; a copy "between devices" is a copy. */
static CUresult can_access_peer (int *can, CUdevice a, CUdevice b) {
  (void)a; (void)b;
  *can = 0;
  return CUDA_SUCCESS;
}
static CUresult copy_peer (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  (void)dc; (void)sc;
  return copy(dst, src, n);
}
static CUresult copy_peer_async (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc,
                                 size_t n, CUstream s) {
  (void)s;
  return copy_peer(dst, dc, src, sc, n);
}

/* Context limits, remembered as the driver would (STACK_SIZE rounded up to 16 bytes);
** FAKE_CUDA_LIMIT=fail makes setting one fail, for the module's error path. */
static size_t limits[CU_LIMIT_MAX] = {1024, 1 << 20, 8 << 20, 2, 2048, 64};
static CUresult get_limit (size_t *value, CUlimit limit) {
  if ((unsigned)limit >= CU_LIMIT_MAX) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  *value = limits[limit];
  return CUDA_SUCCESS;
}
static CUresult set_limit (CUlimit limit, size_t value) {
  const char *fail = getenv("FAKE_CUDA_LIMIT");
  if (fail != NULL && strcmp(fail, "fail") == 0) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned)limit >= CU_LIMIT_MAX) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  limits[limit] = limit == CU_LIMIT_STACK_SIZE ? (value + 15) / 16 * 16 : value;
  return CUDA_SUCCESS;
}

static const struct { const char *name; void *fn; } stubs[] = {
#define STUB(name, fn) {#name, (void *)(fn)},
  STUB(cuInit, ok) STUB(cuDriverGetVersion, driver_version) STUB(cuGetErrorName, error_name)
  STUB(cuGetErrorString, error_name) STUB(cuDeviceGet, device_get)
  STUB(cuDeviceGetCount, device_count) STUB(cuDeviceGetName, device_name)
  STUB(cuDeviceTotalMem, total_mem) STUB(cuDeviceGetAttribute, attribute)
  STUB(cuDeviceGetPCIBusId, pci_bus_id) STUB(cuDevicePrimaryCtxRetain, retain)
  STUB(cuDevicePrimaryCtxRelease, ok) STUB(cuCtxGetCurrent, get_current)
  STUB(cuCtxSetCurrent, set_current) STUB(cuCtxSynchronize, cuCtxSynchronize)
  STUB(cuCtxGetDevice, ctx_device) STUB(cuCtxGetLimit, get_limit) STUB(cuCtxSetLimit, set_limit)
  STUB(cuMemGetInfo, mem_info) STUB(cuMemAlloc, mem_alloc) STUB(cuMemFree, mem_free)
  STUB(cuMemAllocFromPoolAsync, pool_alloc) STUB(cuMemFreeAsync, free_async)
  STUB(cuMemPoolCreate, pool_create) STUB(cuMemPoolDestroy, ok) STUB(cuMemPoolSetAttribute, ok)
  STUB(cuMemPoolGetAttribute, pool_get) STUB(cuMemPoolTrimTo, ok)
  STUB(cuMemPoolSetAccess, ok)
  STUB(cuMemHostAlloc, host_alloc) STUB(cuMemFreeHost, host_free)
  STUB(cuMemAllocManaged, managed_alloc) STUB(cuStreamAttachMemAsync, ok)
  STUB(cuMemPrefetchAsync, ok)
  STUB(cuMemcpyHtoD, htod) STUB(cuMemcpyDtoH, dtoh) STUB(cuMemcpyDtoD, copy)
  STUB(cuMemcpyHtoDAsync, htod_async) STUB(cuMemcpyDtoHAsync, dtoh_async)
  STUB(cuMemcpyDtoDAsync, dtod_async) STUB(cuMemsetD8, set8) STUB(cuMemsetD16, set16)
  STUB(cuMemsetD32, set32) STUB(cuMemsetD8Async, set8_async) STUB(cuMemsetD16Async, set16_async)
  STUB(cuMemsetD32Async, set32_async) STUB(cuPointerGetAttribute, pointer_attribute)
  STUB(cuModuleLoadDataEx, module_load) STUB(cuModuleUnload, ok)
  STUB(cuLinkCreate, link_create) STUB(cuLinkAddData, link_add_data)
  STUB(cuLinkAddFile, link_add_file) STUB(cuLinkComplete, link_complete)
  STUB(cuLinkDestroy, link_destroy)
  STUB(cuModuleGetFunction, module_function) STUB(cuModuleGetGlobal, module_global)
  STUB(cuFuncGetAttribute, func_attribute) STUB(cuFuncSetAttribute, ok)
  STUB(cuLaunchKernel, cuLaunchKernel) STUB(cuLaunchKernelEx, launch_ex)
  STUB(cuOccupancyMaxPotentialBlockSize, occupancy)
  STUB(cuOccupancyMaxActiveBlocksPerMultiprocessor, active_blocks)
  STUB(cuStreamCreate, stream_create) STUB(cuStreamCreateWithPriority, stream_create_priority)
  STUB(cuStreamGetPriority, stream_priority) STUB(cuCtxGetStreamPriorityRange, priority_range) STUB(cuStreamDestroy, ok) STUB(cuStreamSynchronize, ok)
  STUB(cuStreamQuery, ok) STUB(cuStreamWaitEvent, ok) STUB(cuEventCreate, event_create)
  STUB(cuEventDestroy, ok) STUB(cuEventRecord, ok) STUB(cuEventSynchronize, ok)
  STUB(cuEventQuery, ok) STUB(cuEventElapsedTime, elapsed) STUB(cuStreamBeginCapture, ok)
  STUB(cuStreamEndCapture, end_capture) STUB(cuGraphInstantiateWithFlags, instantiate)
  STUB(cuGraphLaunch, ok) STUB(cuGraphExecDestroy, ok) STUB(cuGraphDestroy, ok)
  STUB(cuArray3DCreate, array_create) STUB(cuArrayDestroy, array_destroy)
  STUB(cuMemcpy3D, memcpy_3d) STUB(cuMemcpy3DAsync, memcpy_3d_async)
  STUB(cuTexObjectCreate, object_create) STUB(cuTexObjectDestroy, ok)
  STUB(cuSurfObjectCreate, object_create) STUB(cuSurfObjectDestroy, ok)
  STUB(cuIpcGetMemHandle, ipc_get) STUB(cuIpcOpenMemHandle, ipc_open) STUB(cuIpcCloseMemHandle, ok)
  STUB(cuMemGetAddressRange, address_range)
  STUB(cuDeviceCanAccessPeer, can_access_peer) STUB(cuCtxEnablePeerAccess, ok)
  STUB(cuCtxDisablePeerAccess, ok) STUB(cuMemcpyPeer, copy_peer)
  STUB(cuMemcpyPeerAsync, copy_peer_async)
#undef STUB
};

/* bench_clock's raw launch loop finds these with dlsym (cuda.h declares them all).  Launches
** run nothing, but for kernels/batched.cu's gpu_matrix_addresses (a CUfunction here is its
** name): the stand-in cuBLAS and cuSOLVER read the arrays of addresses it writes. */
EXPORT CUresult cuLaunchKernel (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shared, CUstream s,
                                void **params, void **extra) {
  (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)s; (void)extra;
  if (params != NULL && strcmp((const char *)(void *)f, "gpu_matrix_addresses") == 0) {
    unsigned long long *out = (unsigned long long *)(uintptr_t)*(CUdeviceptr *)params[0];
    long long count = *(long long *)params[1], i;
    int arrays = *(int *)params[2], k;
    for (k = 0; k < arrays; k++) {
      unsigned long long base = *(unsigned long long *)params[3 + 2 * k];
      unsigned long long step = *(unsigned long long *)params[4 + 2 * k];
      for (i = 0; i < count; i++) out[k * count + i] = base + (unsigned long long)i * step;
    }
  }
  return CUDA_SUCCESS;
}

/* FAKE_CUDA_TRACE_SYNC=1 prints a line a call, for specs of what waits for the device. */
EXPORT CUresult cuCtxSynchronize (void) {
  const char *trace = getenv("FAKE_CUDA_TRACE_SYNC");
  if (trace != NULL && strcmp(trace, "1") == 0) {
    printf("fakecuda: cuCtxSynchronize\n");
    fflush(stdout);
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent (CUcontext *c) { return get_current(c); }

/* and bench_clock's raw allocation loop these */
EXPORT CUresult cuCtxGetDevice (CUdevice *d) { return ctx_device(d); }
EXPORT CUresult cuMemPoolCreate (CUmemoryPool *pool, const CUmemPoolProps *props) {
  return pool_create(pool, props);
}
EXPORT CUresult cuMemPoolDestroy (CUmemoryPool pool) { (void)pool; return CUDA_SUCCESS; }
EXPORT CUresult cuMemPoolSetAttribute (CUmemoryPool pool, CUmemPool_attribute a, void *v) {
  (void)pool; (void)a; (void)v;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAllocFromPoolAsync (CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
  return pool_alloc(p, n, pool, s);
}
EXPORT CUresult cuMemFreeAsync (CUdeviceptr p, CUstream s) { return free_async(p, s); }

EXPORT CUresult cuGetProcAddress_v2 (const char *symbol, void **fn, int version, cuuint64_t flags,
                              CUdriverProcAddressQueryResult *status) {
  size_t i;
  (void)version; (void)flags;
  for (i = 0; i < sizeof stubs / sizeof stubs[0]; i++) {
    if (strcmp(stubs[i].name, symbol) == 0) {
      *fn = stubs[i].fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *fn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
