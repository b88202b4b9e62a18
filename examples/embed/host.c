/*
** host.c: a C program that embeds Lua and lua-gpu (make embed-example; make embed-run).
**
** The host owns the CUDA side: it loads the driver itself, uses the device's primary context
** and a stream of its own, allocates device memory and fills it.  It hands the memory to a Lua
** script as a GPUArray (and a second block through DLPack), the script launches kernels on it
** through the module, and the host checks the results with its own copies.  Without a GPU it
** says so and exits 0.
*/
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "dlpack.h"
#include "lua_gpu.h"

#define N 1000

/* The few driver calls the host makes itself, looked up by their ABI names. */
static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

static int load_driver (const char **why) {
  static const struct { const char *name; size_t offset; } symbols[] = {
#define S(field, name) {name, offsetof(__typeof__(cu), field)}
    S(Init, "cuInit"), S(DeviceGetCount, "cuDeviceGetCount"), S(DeviceGet, "cuDeviceGet"),
    S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    S(CtxSetCurrent, "cuCtxSetCurrent"), S(StreamCreate, "cuStreamCreate"),
    S(StreamSynchronize, "cuStreamSynchronize"), S(StreamDestroy, "cuStreamDestroy_v2"),
    S(MemAlloc, "cuMemAlloc_v2"), S(MemFree, "cuMemFree_v2"),
    S(MemcpyHtoD, "cuMemcpyHtoD_v2"), S(MemcpyDtoH, "cuMemcpyDtoH_v2"),
#undef S
  };
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  size_t i;
  int count = 0;
  if (lib == NULL) { *why = dlerror(); return 0; }
  for (i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    void *f = dlsym(lib, symbols[i].name);
    if (f == NULL) { *why = "the driver lacks an entry point"; return 0; }
    *(void **)((char *)&cu + symbols[i].offset) = f;
  }
  if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    *why = "cuInit failed or no device";
    return 0;
  }
  return 1;
}

#define CHECK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
  fprintf(stderr, "%s failed: %d\n", #call, (int)r_); exit(1); } } while (0)

/* ---------------------------------------------------------------- what Lua hands back */

static int released;                /* lua_gpu_push_array's callback ran */
static int deleted;                 /* the DLPack tensor's deleter ran */

static void release_x (void *userdata) {
  CUdeviceptr *p = (CUdeviceptr *)userdata;
  released++;
  cu.MemFree(*p);                   /* the host frees its memory when Lua is done with it */
}

typedef struct HostTensor {
  DLManagedTensorVersioned t;
  int64_t shape[1];
} HostTensor;

static void delete_y (DLManagedTensorVersioned *t) {
  HostTensor *h = (HostTensor *)t->manager_ctx;
  deleted++;
  cu.MemFree((CUdeviceptr)(uintptr_t)t->dl_tensor.data);
  free(h);
}

/* The script: x (a GPUArray on the host's memory) and y (imported through DLPack). */
static const char script[] =
  "local gpu = require 'gpu'\n"
  "local mod = gpu.SourceModule([[\n"
  "__global__ void axpb(float *x, float a, float b, int n) {\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (i < n) x[i] = a * x[i] + b;\n"
  "}]])\n"
  "local axpb = mod:get_function('axpb')\n"
  "local n = x.size\n"
  "local opts = {block = {256}, grid = {(n + 255) // 256}}\n"   /* the host's stream */
  "axpb(x, gpu.float32(2), gpu.float32(1), gpu.int32(n), opts)\n"
  "local y = gpu.from_dlpack(y_tensor)\n"
  "axpb(y, gpu.float32(3), gpu.float32(0), gpu.int32(y.size), opts)\n"
  "out = y:to_dlpack():pointer()   -- y handed back to the host through DLPack\n";

int main (void) {
  const char *why = NULL;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr x_ptr, y_ptr;
  HostTensor *y;
  DLManagedTensorVersioned *out;
  float host[N], back[N];
  int64_t shape = N;
  lua_State *L;
  int i, bad = 0;

  if (!load_driver(&why)) {
    printf("no CUDA device found (%s): nothing to run\n", why);
    return 0;
  }
  CHECK(cu.DeviceGet(&dev, 0));
  CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cu.CtxSetCurrent(ctx));
  CHECK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  for (i = 0; i < N; i++) host[i] = (float)i * 0.5f;
  CHECK(cu.MemAlloc(&x_ptr, sizeof host));
  CHECK(cu.MemAlloc(&y_ptr, sizeof host));
  CHECK(cu.MemcpyHtoD(x_ptr, host, sizeof host));
  CHECK(cu.MemcpyHtoD(y_ptr, host, sizeof host));

  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "gpu", luaopen_gpu, 1);          /* nothing read from disk */
  lua_pop(L, 1);
  if (lua_gpu_use_context(L, ctx) != LUA_OK || lua_gpu_use_stream(L, stream) != LUA_OK ||
      lua_gpu_push_array(L, x_ptr, "float32", 1, &shape, NULL, release_x, &x_ptr) != LUA_OK) {
    fprintf(stderr, "lua-gpu: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_setglobal(L, "x");

  y = (HostTensor *)calloc(1, sizeof *y);           /* y goes over as a DLPack tensor */
  y->shape[0] = N;
  y->t.version.major = DLPACK_MAJOR_VERSION;
  y->t.version.minor = DLPACK_MINOR_VERSION;
  y->t.manager_ctx = y;
  y->t.deleter = delete_y;
  y->t.dl_tensor.data = (void *)(uintptr_t)y_ptr;
  y->t.dl_tensor.device.device_type = kDLCUDA;
  y->t.dl_tensor.device.device_id = 0;
  y->t.dl_tensor.ndim = 1;
  y->t.dl_tensor.dtype.code = kDLFloat;
  y->t.dl_tensor.dtype.bits = 32;
  y->t.dl_tensor.dtype.lanes = 1;
  y->t.dl_tensor.shape = y->shape;
  if (lua_gpu_push_dlpack_capsule(L, &y->t) != LUA_OK) {
    fprintf(stderr, "lua-gpu: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_setglobal(L, "y_tensor");

  if (luaL_dostring(L, script) != LUA_OK) {
    fprintf(stderr, "script failed: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_getglobal(L, "out");
  out = (DLManagedTensorVersioned *)lua_touserdata(L, -1);
  lua_pop(L, 1);

  /* the launches went to the host's stream: wait for it, then check with the host's copies */
  CHECK(cu.StreamSynchronize(stream));
  CHECK(cu.MemcpyDtoH(back, x_ptr, sizeof back));
  for (i = 0; i < N; i++) bad += back[i] != 2.0f * host[i] + 1.0f;
  CHECK(cu.MemcpyDtoH(back, (CUdeviceptr)(uintptr_t)out->dl_tensor.data, sizeof back));
  for (i = 0; i < N; i++) bad += fabsf(back[i] - 3.0f * host[i]) > 0.0f;
  bad += out->dl_tensor.data != (void *)(uintptr_t)y_ptr;   /* zero copy, both ways */
  out->deleter(out);                                          /* the host is done with it */

  lua_close(L);                     /* x and y go back to the host: released once each */
  bad += released != 1 || deleted != 1;
  CHECK(cu.StreamDestroy(stream));
  CHECK(cu.DevicePrimaryCtxRelease(dev));
  printf("%s: %d elements through the host's stream, released=%d deleted=%d\n",
         bad ? "FAILED" : "ok", N, released, deleted);
  return bad ? 1 : 0;
}
