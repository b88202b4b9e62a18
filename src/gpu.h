/*
** gpu.h: what the C core's subsystems share.
**
** The core is split by subsystem (driver.c, error.c, device.c, memory.c, host.c, nvrtc.c,
** blas.c, fft.c, solver.c, module.c, launch.c, stream.c); each exports gpu_<area>_open(L),
** called by core.c, which holds the one exported symbol, luaopen_gpu_core.  Nothing here links
** against libcuda, NVRTC, cuBLAS, cuFFT or cuSOLVER: their entry points are resolved at run
** time (driver.c, nvrtc.c, blas.c, fft.c, solver.c).
*/
#ifndef GPU_H
#define GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "lua.h"
#include "lauxlib.h"

#define GPU_INTERNAL __attribute__((visibility("hidden")))

/* The one exported symbol: require "gpu.core". */
__attribute__((visibility("default"))) int luaopen_gpu_core(lua_State *L);

/* ---------------------------------------------------------------- driver.c */

/*
** Every driver entry point the module uses, with the CUDA version whose ABI we call
** (the suffix of its PFN_ typedef in cudaTypedefs.h).  cuGetProcAddress is asked for that
** version, so versioned symbols (cuMemAlloc -> cuMemAlloc_v2) come out right.  OPT marks
** entry points that older drivers may lack; the module checks them before use.
*/
#define GPU_DRIVER_SYMBOLS(X, OPT)                 \
  X(cuInit, 2000)                                  \
  X(cuDriverGetVersion, 2020)                      \
  X(cuGetErrorName, 6000)                          \
  X(cuGetErrorString, 6000)                        \
  X(cuDeviceGet, 2000)                             \
  X(cuDeviceGetCount, 2000)                        \
  X(cuDeviceGetName, 2000)                         \
  X(cuDeviceTotalMem, 3020)                        \
  X(cuDeviceGetAttribute, 2000)                    \
  X(cuDeviceGetPCIBusId, 4010)                     \
  X(cuDevicePrimaryCtxRetain, 7000)                \
  X(cuDevicePrimaryCtxRelease, 11000)              \
  X(cuCtxGetCurrent, 4000)                         \
  X(cuCtxSetCurrent, 4000)                         \
  X(cuCtxSynchronize, 2000)                        \
  X(cuCtxGetDevice, 2000)                          \
  X(cuCtxGetLimit, 3010)                           \
  X(cuCtxSetLimit, 3010)                           \
  X(cuMemGetInfo, 3020)                            \
  X(cuMemAlloc, 3020)                              \
  X(cuMemFree, 3020)                               \
  X(cuMemAllocFromPoolAsync, 11020)                \
  X(cuMemFreeAsync, 11020)                         \
  X(cuMemPoolCreate, 11020)                        \
  X(cuMemPoolDestroy, 11020)                       \
  X(cuMemPoolSetAttribute, 11020)                  \
  X(cuMemPoolGetAttribute, 11020)                  \
  X(cuMemPoolTrimTo, 11020)                        \
  X(cuMemPoolSetAccess, 11020)                     \
  X(cuMemHostAlloc, 2020)                          \
  X(cuMemFreeHost, 2000)                           \
  X(cuMemAllocManaged, 6000)                       \
  X(cuStreamAttachMemAsync, 6000)                  \
  X(cuMemcpyHtoD, 3020)                            \
  X(cuMemcpyDtoH, 3020)                            \
  X(cuMemcpyDtoD, 3020)                            \
  X(cuMemcpyHtoDAsync, 3020)                       \
  X(cuMemcpyDtoHAsync, 3020)                       \
  X(cuMemcpyDtoDAsync, 3020)                       \
  X(cuMemsetD8, 3020)                              \
  X(cuMemsetD16, 3020)                             \
  X(cuMemsetD32, 3020)                             \
  X(cuMemsetD8Async, 3020)                         \
  X(cuMemsetD16Async, 3020)                        \
  X(cuMemsetD32Async, 3020)                        \
  X(cuPointerGetAttribute, 4000)                   \
  X(cuModuleLoadDataEx, 2010)                      \
  X(cuLinkCreate, 6050)                            \
  X(cuLinkAddData, 6050)                           \
  X(cuLinkAddFile, 6050)                           \
  X(cuLinkComplete, 5050)                          \
  X(cuLinkDestroy, 5050)                           \
  X(cuModuleUnload, 2000)                          \
  X(cuModuleGetFunction, 2000)                     \
  X(cuModuleGetGlobal, 3020)                       \
  X(cuFuncGetAttribute, 2020)                      \
  X(cuFuncSetAttribute, 9000)                      \
  X(cuLaunchKernel, 4000)                          \
  X(cuOccupancyMaxPotentialBlockSize, 6050)        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuStreamCreate, 2000)                          \
  X(cuStreamCreateWithPriority, 5050)              \
  X(cuStreamGetPriority, 5050)                     \
  X(cuCtxGetStreamPriorityRange, 5050)             \
  X(cuStreamDestroy, 4000)                         \
  X(cuStreamSynchronize, 2000)                     \
  X(cuStreamQuery, 2000)                           \
  X(cuStreamWaitEvent, 3020)                       \
  X(cuEventCreate, 2000)                           \
  X(cuEventDestroy, 4000)                          \
  X(cuEventRecord, 2000)                           \
  X(cuEventSynchronize, 2000)                      \
  X(cuEventQuery, 2000)                            \
  X(cuEventElapsedTime, 2000)                      \
  X(cuStreamBeginCapture, 10010)                   \
  X(cuStreamEndCapture, 10000)                     \
  X(cuGraphInstantiateWithFlags, 11040)            \
  X(cuGraphLaunch, 10000)                          \
  X(cuGraphExecDestroy, 10000)                     \
  X(cuGraphDestroy, 10000)                         \
  X(cuArray3DCreate, 3020)                         \
  X(cuArrayDestroy, 2000)                          \
  X(cuMemcpy3D, 3020)                              \
  X(cuMemcpy3DAsync, 3020)                         \
  X(cuTexObjectCreate, 5000)                       \
  X(cuTexObjectDestroy, 5000)                      \
  X(cuSurfObjectCreate, 5000)                      \
  X(cuSurfObjectDestroy, 5000)                     \
  X(cuMemGetAddressRange, 3020)                    \
  X(cuDeviceCanAccessPeer, 4000)                   \
  X(cuCtxEnablePeerAccess, 4000)                   \
  X(cuCtxDisablePeerAccess, 4000)                  \
  X(cuMemcpyPeer, 4000)                            \
  X(cuMemcpyPeerAsync, 4000)                       \
  OPT(cuFuncGetParamInfo, 12040)                  \
  OPT(cuMemPrefetchAsync, 12020)                  \
  OPT(cuLaunchKernelEx, 11060)                    \
  OPT(cuIpcGetMemHandle, 4010)                    \
  OPT(cuIpcOpenMemHandle, 11000)                  \
  OPT(cuIpcCloseMemHandle, 4010)

typedef struct gpu_Driver {
#define GPU_DRIVER_FIELD(name, version) PFN_##name##_v##version name;
  GPU_DRIVER_SYMBOLS(GPU_DRIVER_FIELD, GPU_DRIVER_FIELD)
#undef GPU_DRIVER_FIELD
  int version;            /* cuDriverGetVersion, e.g. 13000 */
} gpu_Driver;

/*
** The driver is process-wide: loaded once (thread-safe), never unloaded, read-only after.
** gpu_driver_load returns NULL and sets *why when there is no usable driver.
*/
GPU_INTERNAL const gpu_Driver *gpu_driver_load(const char **why, CUresult *code);
/* The symbol table even when cuInit failed (error names, versions), or NULL. */
GPU_INTERNAL const gpu_Driver *gpu_driver_symbols(void);
/* The loaded driver, or raises the "no CUDA driver / no device" gpu.Error. */
GPU_INTERNAL const gpu_Driver *gpu_driver(lua_State *L);

/* ---------------------------------------------------------------- error.c */

/* Raises a gpu.Error for a failed driver call; returns only when result is CUDA_SUCCESS. */
#define gpu_check(L, result, call) \
  do { CUresult gpu_r_ = (result); if (gpu_r_ != CUDA_SUCCESS) gpu_cuerror(L, gpu_r_, call); } while (0)
GPU_INTERNAL int gpu_cuerror(lua_State *L, CUresult r, const char *call);
/* Builds and raises a gpu.Error from its parts (log may be NULL). */
GPU_INTERNAL int gpu_raise(lua_State *L, int code, const char *name, const char *message,
                           const char *call, const char *log);
GPU_INTERNAL const char *gpu_cuerror_name(CUresult r);
GPU_INTERNAL void gpu_error_open(lua_State *L);

/* ---------------------------------------------------------------- dtypes (host.c) */

typedef enum gpu_DtypeId {
  GPU_BOOL, GPU_INT8, GPU_UINT8, GPU_INT16, GPU_UINT16, GPU_INT32, GPU_UINT32,
  GPU_INT64, GPU_UINT64, GPU_FLOAT16, GPU_BFLOAT16, GPU_FLOAT32, GPU_FLOAT64,
  GPU_COMPLEX64, GPU_COMPLEX128,
  GPU_NDTYPES
} gpu_DtypeId;

typedef struct gpu_Dtype {
  const char *name;       /* "float32" */
  const char *ctype;      /* C type in kernels: "float" */
  unsigned char itemsize;
  char kind;              /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex
                             (NumPy's kinds) */
  char letter;            /* Python struct letter used by prepare(), 0 if none */
} gpu_Dtype;

GPU_INTERNAL extern const gpu_Dtype gpu_dtypes[GPU_NDTYPES];
#define GPU_MAX_ITEMSIZE 16   /* complex128: what a buffer for one element must hold */
/* dtype name at arg -> id; unknown names raise "bad argument #arg (unknown dtype 'x')". */
GPU_INTERNAL gpu_DtypeId gpu_checkdtype(lua_State *L, int arg);
GPU_INTERNAL int gpu_finddtype(const char *name);  /* -1 if unknown */
GPU_INTERNAL void gpu_dtype_open(lua_State *L);

/*
** Converts the Lua value at idx to the bytes of one element of dtype at out.  Integers are
** range-checked, floats rounded.  On a bad value returns a static reason ("expected a number",
** "out of range for int32", "not an integer") and writes nothing; NULL on success.
*/
GPU_INTERNAL const char *gpu_tovalue(lua_State *L, int idx, gpu_DtypeId dtype, void *out);
/* Pushes one element of dtype read from p (integers as Lua integers, floats as floats,
** complex numbers as gpu.complex values). */
GPU_INTERNAL void gpu_pushvalue(lua_State *L, gpu_DtypeId dtype, const void *p);

/*
** A complex number in Lua is a table {re = x, im = y} with gpu.complex's metatable
** (lua/gpu/complex.lua gives it arithmetic).  gpu_tocomplex reads one, or a Lua number as
** x + 0i, and returns 0 for anything else.
*/
#define GPU_COMPLEX "gpu.complex"
GPU_INTERNAL int gpu_iscomplex(lua_State *L, int idx);
GPU_INTERNAL int gpu_tocomplex(lua_State *L, int idx, double *re, double *im);
GPU_INTERNAL void gpu_pushcomplex(lua_State *L, double re, double im);

/* ---------------------------------------------------------------- state (core.c) */

/* The userdata types a kernel argument can be, told apart by metatable identity. */
typedef enum gpu_ArgKind {
  GPU_ARG_OTHER, GPU_ARG_BUFFER, GPU_ARG_ARRAY, GPU_ARG_HANDLER, GPU_ARG_SCALAR,
  GPU_ARG_TEXTURE, GPU_ARG_SURFACE, GPU_ARG_KINDS
} gpu_ArgKind;

/* Per-lua_State data of the module: a userdata kept in the registry. */
typedef struct gpu_State {
  int device;             /* ordinal for new work; -1 until chosen (CUDA_DEVICE or 0) */
  size_t gc_bytes;        /* device and page-locked bytes allocated and not yet released */
  size_t gc_debt;         /* of those, bytes allocated since the last collection (memory.c) */
  size_t gc_threshold;    /* the debt at which the next collection runs */
  const void *metatables[GPU_ARG_KINDS];  /* lua_topointer of each kind's metatable */
  const void *stream_metatable;           /* and of gpu.Stream's, for launch options */
  struct gpu_Context *current;  /* the Context of `device` once looked up (gpu_context_push) */
  int captures;           /* this state's streams between begin_capture and end_capture */
  int general_only;       /* the arrays' C fast paths are off (gpu.fast_paths(false)) */
  int blas_off;           /* matmul leaves cuBLAS alone (gpu.use_cublas(false)) */
  struct gpu_Release *held;     /* releases waiting for those captures to end (release.c) */
  size_t nheld, held_capacity;
} gpu_State;

/* The state (registry key: a pointer, so no string is hashed on every allocation). */
GPU_INTERNAL gpu_State *gpu_state(lua_State *L);
/* The same, and pushes its userdata: for hot functions that keep it as an upvalue. */
GPU_INTERNAL gpu_State *gpu_push_state(lua_State *L);

/* ---------------------------------------------------------------- device.c */

/*
** A device's context as this lua_State uses it: the device's primary context, retained
** once per state and released when the state closes.  Objects pin their Context with a
** user value and make it current before touching their handles (any OS thread may be
** running the state).
*/
typedef struct gpu_Context {
  gpu_State *state;       /* the state this context belongs to */
  const gpu_Driver *driver;  /* the loaded driver (gpu_driver's answer, kept for hot paths) */
  CUcontext ctx;          /* NULL once released */
  CUdevice device;
  int ordinal;
  int owned;              /* retained primary context, released on close */
  CUmemoryPool pool;      /* this state's stream-ordered pool, NULL: plain cuMemAlloc */
  int max_block[3], max_grid[3], max_threads;
  int cc_major, cc_minor;
  CUstream stream;        /* the host's stream for work that names none (lua_gpu_use_stream) */
  void *blas;             /* this state's cuBLAS handle in this context, made on first use */
  int blas_failed;        /* cublasCreate failed here once: the kernels take every product */
  void *solver;           /* this state's cuSOLVER handle in this context, made on first use */
  void *solver_params;    /* and its cusolverDnParams */
  void *solver_syevj;     /* and the syevjInfo of its syevjBatched, made on first use */
  void *solver_gesvdj;    /* and the gesvdjInfo of its gesvdjBatched, made on first use */
  int ref;                /* registry reference: hot paths push it without a table lookup */
  uint64_t peers;         /* ordinals whose memory this context maps (enable_peer_access) */
} gpu_Context;

/* Whether kernels in c may take memory of Context m as arguments: its own, or a peer's. */
static inline int gpu_context_reaches (const gpu_Context *c, const gpu_Context *m) {
  return c == m || (m->ordinal < 64 && ((c->peers >> m->ordinal) & 1));
}

#define GPU_CONTEXT "gpu.Context"

/* Pushes the Context of the current device (created on first use) and returns it. */
GPU_INTERNAL gpu_Context *gpu_context_push(lua_State *L);
/* Pushes the same Context without making it current, for callers that hold the state and
** enter the context themselves (an allocation, after its collector step). */
GPU_INTERNAL gpu_Context *gpu_context_find(lua_State *L, gpu_State *s);
/* Makes the host's context ctx the current device's context for new work (embed.c). */
GPU_INTERNAL gpu_Context *gpu_context_adopt(lua_State *L, CUcontext ctx);
/* The ordinal of the gpu.Device at idx, or -1 for anything else. */
GPU_INTERNAL int gpu_device_ordinal_at(lua_State *L, int idx);
/* Makes c current on the calling thread; raises if c was released. */
GPU_INTERNAL void gpu_context_enter(lua_State *L, gpu_Context *c);
/*
** Same, for finalizers: returns 0 instead of raising, and sets *prev to the context that was
** current.  A finalizer runs inside whatever allocation triggered the collector, often between
** another object's gpu_context_enter and its driver call: it must gpu_context_restore(c, prev)
** when done, or that call runs in c's context (and a host finds its context switched).
*/
GPU_INTERNAL int gpu_context_try_enter(gpu_Context *c, CUcontext *prev);
GPU_INTERNAL void gpu_context_restore(const gpu_Context *c, CUcontext prev);
GPU_INTERNAL void gpu_device_open(lua_State *L);
/* Releases every Context of the state (pools, primary contexts); the state's finalizer. */
GPU_INTERNAL void gpu_contexts_release(lua_State *L);

/* ---------------------------------------------------------------- memory.c */

typedef struct gpu_Buffer {
  CUdeviceptr ptr;        /* 0 once freed */
  size_t size;
  struct gpu_Buffer *root; /* the allocation this is a view of (itself for an owner) */
  gpu_Context *ctx;
  int owned;              /* frees ptr when released */
  int face;               /* an array's a.gpudata: root is the record inside the array, and
                             freeing this frees the array's memory */
  int pooled;             /* came from ctx->pool: freed stream-ordered, never blocking */
  void (*release)(void *data);  /* memory the host owns: called once when Lua is done with it */
  void *release_data;
  int exports;            /* an allocation's DLPack exports whose consumers are not done yet */
  CUdeviceptr kept;       /* freed by Lua while exported: the memory, released after them */
  int ipc;                /* another process's memory (gpu.ipc_open): closed, not freed */
} gpu_Buffer;

#define GPU_BUFFER "gpu.Buffer"

/* Checks arg is a live Buffer (or view of a live one) and returns it. */
GPU_INTERNAL gpu_Buffer *gpu_checkbuffer(lua_State *L, int arg);
GPU_INTERNAL gpu_Buffer *gpu_testbuffer(lua_State *L, int idx);
/* Allocates nbytes on the current device (collecting garbage and retrying on OOM). */
GPU_INTERNAL gpu_Buffer *gpu_buffer_new(lua_State *L, size_t nbytes);
/* Allocates nbytes in Context c into the closed (zeroed) record b, whose userdata pins c. */
GPU_INTERNAL void gpu_buffer_acquire(lua_State *L, gpu_Context *c, gpu_Buffer *b, size_t nbytes);
/* The same in Context c, whose userdata is at ctx_idx, with the Buffer metatable at mt_idx
** (0: looked up by name): for hot paths that already hold both. */
GPU_INTERNAL gpu_Buffer *gpu_buffer_alloc(lua_State *L, gpu_Context *c, int ctx_idx, int mt_idx,
                                          size_t nbytes);
/* Tells the collector of nbytes of memory it cannot see (device or page-locked), about to
** be allocated: collects when enough has been allocated since the last collection. */
GPU_INTERNAL void gpu_gc_account(lua_State *L, gpu_State *s, size_t nbytes);
/* Device memory the driver spends on a stream and on an instantiated graph, which the
** collector cannot see either: 420-550 KiB a stream and 114 KiB a one-kernel graph on an H100
** (580 driver), kept in the context's cache once freed. */
#define GPU_STREAM_DEVICE_BYTES ((size_t)512 << 10)
#define GPU_GRAPH_DEVICE_BYTES ((size_t)128 << 10)
/* One try at allocating device memory in Context c (made current): CUDA_ERROR_OUT_OF_MEMORY
** or another result. */
typedef CUresult (*gpu_DeviceAttempt)(gpu_Context *c, void *request);
/* attempt, and on CUDA_ERROR_OUT_OF_MEMORY again after a full collection, then after the pool
** gave back what it caches: allocations that are not the pool's need that memory too. */
GPU_INTERNAL CUresult gpu_device_alloc_retrying(lua_State *L, gpu_Context *c,
                                                gpu_DeviceAttempt attempt, void *request);
/* A full collection, after which the threshold of gpu_gc_account is set anew. */
GPU_INTERNAL void gpu_gc_collect(lua_State *L, gpu_State *s);
/* Frees an owned allocation now (idempotent, never raises): __gc, __close and :free(). */
GPU_INTERNAL void gpu_buffer_release(gpu_Buffer *b);
/* The same in the order of stream (NULL, or while the state captures: the legacy stream's).
** An allocation with DLPack exports alive is only dead to Lua: its memory is kept. */
GPU_INTERNAL void gpu_buffer_release_on(gpu_Buffer *b, CUstream stream);
/* One DLPack export of the allocation b (a root) is done: after the last, memory that Lua
** freed meanwhile is released (dlpack.c's sweep). */
GPU_INTERNAL void gpu_buffer_unexport(gpu_Buffer *b);
/* Before a free of b (Lua's :free(), __gc, free_after): where its allocation was exported,
** lets go of the exports already done with, so that it is released now if none is left. */
GPU_INTERNAL void gpu_buffer_sweep_exports(lua_State *L, const gpu_Buffer *b);
/* Copies n bytes at src, memory of Context c, to dst on the host: in the host's stream (then
** waited for) where it gave one, else synchronously. */
GPU_INTERNAL void gpu_copy_to_host(lua_State *L, gpu_Context *c, void *dst, CUdeviceptr src,
                                   size_t n);
GPU_INTERNAL void gpu_memory_open(lua_State *L);

/* ---------------------------------------------------------------- host.c */

#define GPU_MAXDIM 32

typedef enum gpu_HostMemory {
  GPU_HOST_PAGEABLE,      /* inside the userdata */
  GPU_HOST_PAGELOCKED,    /* cuMemHostAlloc: async copies */
  GPU_HOST_MANAGED        /* cuMemAllocManaged: kernels take it as a pointer too */
} gpu_HostMemory;

typedef struct gpu_HostArray {
  void *data;             /* NULL once freed */
  size_t nbytes;
  int64_t size;
  gpu_DtypeId dtype;
  int ndim;
  int pagelocked;         /* the memory is page-locked (cuMemHostAlloc) */
  int managed;            /* the memory is managed (cuMemAllocManaged) */
  int wait_device;        /* managed on a device without concurrent managed access: the host
                             waits for the device before it touches the memory */
  struct gpu_HostArray *root;  /* the array owning the memory (itself, or a reshape's base) */
  gpu_Context *ctx;       /* for page-locked and managed arrays */
  int64_t shape[GPU_MAXDIM];
} gpu_HostArray;

#define GPU_HOSTARRAY "gpu.HostArray"

GPU_INTERNAL gpu_HostArray *gpu_testhostarray(lua_State *L, int idx);
GPU_INTERNAL gpu_HostArray *gpu_checkhostarray(lua_State *L, int arg);
/* New host array of the given shape (pageable, zero-filled). */
GPU_INTERNAL gpu_HostArray *gpu_hostarray_new(lua_State *L, gpu_DtypeId dtype, int ndim,
                                              const int64_t *shape, gpu_HostMemory memory);
/*
** Host bytes at arg: a live HostArray or a Lua string (read-only).  Sets *pinned when the
** memory is page-locked.  Raises an argument error otherwise.
*/
GPU_INTERNAL const void *gpu_checkhostbytes(lua_State *L, int arg, size_t *nbytes, int *pinned);
/* Parses a shape (number or table of numbers) at arg into shape[]; returns ndim. */
GPU_INTERNAL int gpu_checkshape(lua_State *L, int arg, int64_t *shape, int64_t *size);
GPU_INTERNAL void gpu_host_open(lua_State *L);

/* ---------------------------------------------------------------- array.c */

typedef struct gpu_Array {
  gpu_Buffer *buffer;     /* holds the data; NULL once this array is freed */
  gpu_Buffer *own;        /* the record of memory this array allocated, inside its userdata
                             (user value 1 the Context, 2 the Buffer face); NULL for a view
                             (user value 1 what holds its memory: a Buffer or an owning array) */
  CUdeviceptr ptr;        /* address of the first element: buffer->ptr + offset */
  size_t offset;          /* bytes from the buffer's start */
  gpu_DtypeId dtype;
  int ndim;
  int owner;              /* the buffer was made for this array: :free() releases it */
  int contiguous;         /* C (row-major) contiguous */
  int64_t size;
  int64_t *shape, *strides;  /* ndim each, strides in bytes; stored after the header */
} gpu_Array;

#define GPU_ARRAY "gpu.GPUArray"

/* Whether a and the memory it looks into are alive (inline: the fast paths ask it often). */
static inline int gpu_array_alive (const gpu_Array *a) {
  return a->buffer != NULL && a->buffer->ptr != 0 && a->buffer->root != NULL &&
         a->buffer->root->ptr != 0;
}
GPU_INTERNAL gpu_Array *gpu_testarray(lua_State *L, int idx);
GPU_INTERNAL gpu_Array *gpu_checkarray(lua_State *L, int arg);
/* Pushes a new contiguous array owning fresh device memory. */
GPU_INTERNAL gpu_Array *gpu_array_new(lua_State *L, gpu_DtypeId dtype, int ndim,
                                      const int64_t *shape);
/* Pushes a new contiguous array owning fresh memory in Context c; the GPUArray metatable at
** array_mt, or 0 to look it up. */
GPU_INTERNAL gpu_Array *gpu_array_new_in(lua_State *L, gpu_Context *c, int array_mt,
                                         gpu_DtypeId dtype, int ndim, const int64_t *shape);
/* core.array_view(base, offset, dtype, shape[, strides]) -> a view, its layout checked. */
GPU_INTERNAL int gpu_array_view(lua_State *L);
GPU_INTERNAL void gpu_array_open(lua_State *L);
/* The C paths of elementwise work (elementwise.c). */
GPU_INTERNAL void gpu_elementwise_open(lua_State *L);

/* ---------------------------------------------------------------- stream.c */

typedef struct gpu_Stream {
  CUstream stream;
  gpu_Context *ctx;
  int live;               /* 0 once destroyed */
  int capturing;          /* between begin_capture and end_capture */
} gpu_Stream;

#define GPU_STREAM "gpu.Stream"
#define GPU_EVENT "gpu.Event"
#define GPU_GRAPH "gpu.Graph"

/* ---------------------------------------------------------------- release.c */

/*
** What a finalizer or :free() hands back to the driver.  While one of the state's streams
** captures, no such call may run on this thread: frees synchronize, stream-ordered frees
** join the legacy stream, and either invalidates the capture.  The collector runs finalizers
** whenever Lua allocates, so every release goes through gpu_release, which holds them back
** until the last capture ends.
*/
typedef enum gpu_ReleaseKind {
  GPU_RELEASE_POOLED,       /* cuMemFreeAsync on the legacy stream */
  GPU_RELEASE_POOLED_ON_STREAM,  /* cuMemFreeAsync on a stream of the caller's (never held) */
  GPU_RELEASE_DEVICE,       /* cuMemFree */
  GPU_RELEASE_HOST,         /* cuMemFreeHost */
  GPU_RELEASE_MODULE,       /* cuModuleUnload */
  GPU_RELEASE_STREAM,       /* cuStreamDestroy */
  GPU_RELEASE_EVENT,        /* cuEventDestroy */
  GPU_RELEASE_GRAPH,        /* cuGraphExecDestroy, then cuGraphDestroy */
  GPU_RELEASE_CUDA_ARRAY,   /* cuArrayDestroy */
  GPU_RELEASE_TEXTURE,      /* cuTexObjectDestroy */
  GPU_RELEASE_SURFACE,      /* cuSurfObjectDestroy */
  GPU_RELEASE_IPC,          /* cuIpcCloseMemHandle */
  GPU_RELEASE_CALLBACK      /* the host's release function (memory it lent Lua) */
} gpu_ReleaseKind;

typedef struct gpu_Release {
  gpu_ReleaseKind kind;
  struct gpu_Context *ctx;  /* made current for the call (not for CALLBACK) */
  union {
    CUdeviceptr device;
    struct { CUdeviceptr device; CUstream stream; } on_stream;
    void *host;
    CUmodule module;
    CUstream stream;
    CUevent event;
    struct { CUgraphExec exec; CUgraph graph; } graph;
    CUarray array;
    unsigned long long object;   /* a CUtexObject or CUsurfObject */
    struct { void (*fn)(void *data); void *data; } callback;
  } h;
} gpu_Release;

/* Runs r now, or holds it while s captures (s NULL: now).  Never raises; errors are ignored. */
GPU_INTERNAL void gpu_release(gpu_State *s, const gpu_Release *r);
/* A capture is about to begin on one of s's streams (waits for device synchronizations
** under way); if cuStreamBeginCapture fails, gpu_capture_ended undoes it. */
GPU_INTERNAL void gpu_capture_opening(gpu_State *s);
/* One ended (or was abandoned): after the last, the held releases run. */
GPU_INTERNAL void gpu_capture_ended(gpu_State *s);
/* Runs the held releases (with no capture left: the last one ended, or the state closes). */
GPU_INTERNAL void gpu_release_held(gpu_State *s);
/* A driver call that waits for the whole device (the current context's work). */
typedef CUresult (*gpu_DeviceWideCall)(const gpu_Driver *d, void *arg);
/* call(d, arg), unless a capture is open anywhere in the process (any state, any thread):
** then *refused is set and nothing is called.  No capture opens while it runs. */
GPU_INTERNAL CUresult gpu_outside_captures(const gpu_Driver *d, gpu_DeviceWideCall call,
                                           void *arg, int *refused);
/* cuCtxSynchronize through gpu_outside_captures. */
GPU_INTERNAL CUresult gpu_synchronize_device(const gpu_Driver *d, int *refused);
/* The same for a Lua function: raises when refused or on failure. */
GPU_INTERNAL void gpu_synchronize_checked(lua_State *L, const gpu_Driver *d);

/* The CUstream for an optional stream argument (nil or absent: the default stream). */
GPU_INTERNAL CUstream gpu_optstream(lua_State *L, int arg);
GPU_INTERNAL gpu_Stream *gpu_teststream(lua_State *L, int idx);
/*
** While the stream at stream_idx captures a graph, remembers the Buffer, GPUArray, HostArray
** or FFTPlan at obj_idx (if it is one): the graph pins what it uses and checks it is alive at
** each launch.
*/
GPU_INTERNAL void gpu_capture_note(lua_State *L, int stream_idx, int obj_idx);
GPU_INTERNAL void gpu_stream_open(lua_State *L);

/* ---------------------------------------------------------------- nvrtc.c, module.c, launch.c */

/* A loaded CUmodule and the count of the Modules that share it (module.c). */
typedef struct gpu_ModuleImage gpu_ModuleImage;

typedef struct gpu_Module {
  CUmodule module;          /* its image's, NULL once this Module is freed */
  gpu_Context *ctx;
  gpu_ModuleImage *image;   /* user value 3 */
  gpu_Buffer globals;       /* root of its Functions and get_global's buffers: globals.ptr
                               != 0 until this Module is freed */
} gpu_Module;

#define GPU_MODULE "gpu.Module"
#define GPU_FUNCTION "gpu.Function"
#define GPU_SCALAR "gpu.Scalar"
#define GPU_ARGHANDLER "gpu.ArgHandler"

GPU_INTERNAL void gpu_nvrtc_open(lua_State *L);
/* The CUDA toolkit's include directory (gpu.cuda_include_dir()), or NULL: found once, beside
** the NVRTC that loading would open (without loading it), else under CUDA_HOME. */
GPU_INTERNAL const char *gpu_cuda_include_dir(void);
/* Finds a CUDA library where dlopen would: $env_var, else names, else $CUDA_HOME/lib64;
** found (PATH_MAX bytes) gets its real path.  Returns whether one was found. */
GPU_INTERNAL int gpu_find_library(const char *env_var, const char *const *names, size_t count,
                                  char *found);
/* dlopen's the library: what gpu_find_library finds, else $env_var as given, else names as
** dlopen finds them; path (PATH_MAX bytes) gets what was loaded, or why says why none was. */
GPU_INTERNAL void *gpu_open_library(const char *what, const char *env_var,
                                    const char *const *names, size_t count, char *path,
                                    char *why, size_t why_size);
GPU_INTERNAL void gpu_kernels_open(lua_State *L);
GPU_INTERNAL void gpu_cache_open(lua_State *L);
GPU_INTERNAL void gpu_module_open(lua_State *L);
GPU_INTERNAL void gpu_link_open(lua_State *L);

/* ---------------------------------------------------------------- texture.c */

#define GPU_CUDAARRAY "gpu.CudaArray"
#define GPU_TEXTURE "gpu.TextureObject"
#define GPU_SURFACE "gpu.SurfaceObject"
/* The handle of the texture or surface object at idx for a kernel argument, and its Context;
** 0 with *why set when it, or the array it reads, was freed. */
GPU_INTERNAL unsigned long long gpu_texture_handle(lua_State *L, int idx, const gpu_Context **ctx,
                                                   const char **why);
/* For graphs: -1 when the value at idx is no CUDA array, texture or surface object, else
** whether it is usable (alive, and what it reads alive). */
GPU_INTERNAL int gpu_texture_state(lua_State *L, int idx);
GPU_INTERNAL void gpu_texture_open(lua_State *L);
GPU_INTERNAL void gpu_launch_open(lua_State *L);
/* Whether the value at idx is a gpu.Function (launch.c). */
GPU_INTERNAL int gpu_isfunction(lua_State *L, int idx);
/* The CUfunction of the gpu.Function at arg, checked alive and named name, and its context
** into *ctx: for subsystems that launch one of the library's kernels themselves (solver.c's
** matrix addresses), whose arguments the name vouches for. */
GPU_INTERNAL CUfunction gpu_checkfunction(lua_State *L, int arg, const char *name,
                                          gpu_Context **ctx);
/*
** Launches the gpu.Function at fidx (checked by gpu_isfunction beforehand) on stream (NULL:
** ctx's own), with a 1-D grid and a block of block x block_rows threads (within the
** device's limits), for the C fast paths of other subsystems: its parameter i < nvalues takes
** ptrs[i] where it is a pointer (an address the caller checked: live, on ctx) and otherwise
** the value at stack index first + i, a Lua number (or a boolean, for a bool) converted as a
** launch would; the parameters after those take the integers tail[0 .. ntail).  Returns 0,
** having launched nothing, where the Function is not on ctx or not of that layout, or a
** value does not convert: the caller's general path reports it.
*/
GPU_INTERNAL int gpu_launch_values(lua_State *L, int fidx, const gpu_Context *ctx,
                                   const gpu_Stream *stream, unsigned grid, unsigned block,
                                   unsigned block_rows, const CUdeviceptr *ptrs, int first,
                                   int nvalues,
                                   const lua_Integer *tail, int ntail);
/* The stream at idx for a C fast path on ctx: NULL for nil (ctx's own).  *usable is 0 where
** it is anything but a live gpu.Stream of ctx that is not capturing a graph (a capture notes
** the arguments it holds, which the general path does). */
GPU_INTERNAL gpu_Stream *gpu_fast_stream(lua_State *L, int idx, const gpu_Context *ctx,
                                         int *usable);
/* Pushes a new Function for handle fn of the Module at module_idx (launch.c). */
GPU_INTERNAL void gpu_function_new(lua_State *L, int module_idx, CUfunction fn,
                                   const char *name, const char *signature);

/* ---------------------------------------------------------------- blas.c */

/* Products of matrices through cuBLAS, when it can be loaded (core.blas_matmul). */
GPU_INTERNAL void gpu_blas_open(lua_State *L);
/* Destroys c's cuBLAS handle, if any, with c current (device.c's context_release). */
GPU_INTERNAL void gpu_blas_release(gpu_Context *c);
/* This state's cuBLAS handle in Context c, made current, on stream: NULL where cuBLAS is
** missing or turned off (GPU_CUBLAS_DISABLE, gpu.use_cublas(false)) or no handle can be made. */
GPU_INTERNAL void *gpu_blas_handle(lua_State *L, gpu_Context *c, CUstream stream);
/* cuBLAS's batched LU of the batch n x n column-major matrices (leading dimension n) whose
** addresses the device array at a holds, of dtype float32, float64, complex64 or complex128,
** in place; 32-bit pivots (n a matrix) and infos (one) in device memory.  Each raises what
** cuBLAS says is wrong. */
GPU_INTERNAL void gpu_blas_getrf_batched(lua_State *L, void *handle, gpu_DtypeId dtype, int n,
                                         CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr info,
                                         int batch);
/* op(A) X = B from getrf's factors in place of the n x nrhs matrices at b; trans 'N', 'T', 'C'. */
GPU_INTERNAL void gpu_blas_getrs_batched(lua_State *L, void *handle, gpu_DtypeId dtype, char trans,
                                         int n, int nrhs, CUdeviceptr a, CUdeviceptr ipiv,
                                         CUdeviceptr b, int batch);
/* The inverses from getrf's factors into the matrices at c (out of place); info as getrf's. */
GPU_INTERNAL void gpu_blas_getri_batched(lua_State *L, void *handle, gpu_DtypeId dtype, int n,
                                         CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr c,
                                         CUdeviceptr info, int batch);

/* ---------------------------------------------------------------- fft.c */

/* Fourier transforms through cuFFT, when it can be loaded (core.fft_plan, gpu.FFTPlan). */
GPU_INTERNAL void gpu_fft_open(lua_State *L);
/* Whether the value at idx is a gpu.FFTPlan: -1 not one, 0 freed, 1 alive (for graphs). */
GPU_INTERNAL int gpu_fftplan_state(lua_State *L, int idx);

/* ---------------------------------------------------------------- solver.c */

/* Factorizations and solvers through cuSOLVER, when it can be loaded (core.solver_getrf, ...). */
GPU_INTERNAL void gpu_solver_open(lua_State *L);
/* Destroys c's cuSOLVER handle, if any, with c current (device.c's context_release). */
GPU_INTERNAL void gpu_solver_release(gpu_Context *c);

/* ---------------------------------------------------------------- embed.c, dlpack.c */

GPU_INTERNAL void gpu_dlpack_open(lua_State *L);
/* Lets go of the exports whose consumers are done (their memory, if freed, is released);
** returns how many are left.  Uses a few stack slots; never raises. */
GPU_INTERNAL int gpu_dlpack_sweep(lua_State *L);
/*
** Pushes a GPUArray over device memory the host owns: base..base+span bytes holds it, its first
** element offset bytes in.  The array owns the Buffer (:free() releases it); the caller sets
** the Buffer's release callback once nothing more can raise.  Returns the Buffer.
*/
GPU_INTERNAL gpu_Buffer *gpu_push_foreign_array(lua_State *L, CUdeviceptr base, size_t span,
                                                size_t offset, gpu_DtypeId dtype, int ndim,
                                                const int64_t *shape, const int64_t *strides);

/* ---------------------------------------------------------------- helpers (core.c) */

/*
** Option tables: gpu_checkoptions raises "bad argument #arg (unknown option 'blcok')" for a
** key not in the NULL-terminated list.  Returns 0 when the argument is absent or nil.
*/
GPU_INTERNAL int gpu_checkoptions(lua_State *L, int arg, const char *const known[]);
/* Registers a type: metatable named tname (also __name) with metamethods, and a methods
** table as __index.  Methods and metamethods get two upvalues: the methods table and the
** metatable (see gpu_checkself).  Leaves the metatable on the stack. */
GPU_INTERNAL void gpu_newtype(lua_State *L, const char *tname, const luaL_Reg *meta,
                              const luaL_Reg *methods);
/* Sets the metatable of the value on top: the table at mt_idx (an upvalue, say), or where
** mt_idx is 0 the one registered as tname. */
GPU_INTERNAL void gpu_setmetatable(lua_State *L, int mt_idx, const char *tname);
/* Whether the value at idx has the table at mt_idx as metatable (an identity test). */
GPU_INTERNAL int gpu_hasmetatable(lua_State *L, int idx, int mt_idx);
/* luaL_checkudata for the methods and metamethods of gpu_newtype: when the value's
** metatable is the running function's upvalue 2, no registry lookup by name. */
GPU_INTERNAL void *gpu_checkself(lua_State *L, int arg, const char *tname);
/* Raises "<Type> used after free" style errors uniformly. */
GPU_INTERNAL int gpu_freed_error(lua_State *L, int arg, const char *what);
/* A per-state switch as a module function ([on]) -> whether it was on: *off is the flag,
** set from the optional boolean argument 1 (gpu.fast_paths, gpu.use_cublas). */
GPU_INTERNAL int gpu_state_switch(lua_State *L, int *off);
/* Pins the value at idx as user value n of the userdata at ud. */
GPU_INTERNAL void gpu_pin(lua_State *L, int ud, int idx, int n);

#endif
