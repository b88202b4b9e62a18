/*
** bench/clock.c: what the Lua benchmarks need from C.
**   require "bench_clock".now_us() -> microseconds since an arbitrary start, as a float
**     (os.clock is CPU time).
**   require "bench_clock".raw_launches(handle, reps, per, sync[, check_context]) -> {us, ...}
**     The raw C launch baseline run in the Lua process: reps times, `per` back-to-back
**     cuLaunchKernel calls of the CUfunction `handle` (a gpu.Function's f.handle, no
**     arguments, grid and block 1) on the legacy stream, timed on the host and divided by
**     per.  With sync, cuCtxSynchronize is inside each timing (launch + synchronize);
**     without, after it, like build/bench-raw.  Sharing the process, the context and the
**     CPU with the Lua figures, and alternating with them, the ratio is free of the
**     process-to-process drift that a separate baseline program sees.
**   require "bench_clock".raw_launches_args(handle, reps, per, extra, grid, block, v...)
**     -> {us, ...}
**     The same with arguments: each v an 8-byte integer (a device address or a long long),
**     passed as kernelParams, or with extra as one packed buffer
**     (CU_LAUNCH_PARAM_BUFFER_POINTER), the way gpu.core passes them.
**   require "bench_clock".raw_alloc_free(bytes, reps, per[, handle, grid, block, args])
**     -> {us, ...}
**     cuMemAllocFromPoolAsync + cuMemFreeAsync of `bytes` on the legacy stream, from a pool
**     made like gpu.core's (device memory, everything cached), per times a repeat.  With
**     handle, a launch of that kernel between the two, its arguments the 8-byte integers of
**     the table args where a 0 stands for the new allocation: raw C's own small
**     `c = a + b`, allocation included.
**   require "bench_clock".launch_once_for() -> launch_once; launch_once(handle)
**     One such launch per call: a Lua loop calling it is the floor of any Lua binding's
**     launch (the interpreter, one C call, the driver), with none of lua-gpu's own work.
*/
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "lua.h"
#include "lauxlib.h"

static double wall_us (void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int now_us (lua_State *L) {
  lua_pushnumber(L, (lua_Number)wall_us());
  return 1;
}

typedef CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*CtxSynchronize)(void);
typedef CUresult (*CtxGetCurrent)(CUcontext *);

/* cuLaunchKernel as gpu.core loaded it, or raises. */
static LaunchKernel driver_launch (lua_State *L, CtxSynchronize *synchronize,
                                   CtxGetCurrent *get_current) {
  /* gpu.core has loaded the driver (GPU_CUDA_LIBRARY names another, as it does for gpu.core):
     RTLD_NOLOAD finds that copy and loads no other */
  const char *name = getenv("GPU_CUDA_LIBRARY");
  void *lib = dlopen(name != NULL && *name != '\0' ? name : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  LaunchKernel launch;
  if (lib == NULL) luaL_error(L, "the CUDA driver is not loaded (require \"gpu\" first)");
  *(void **)&launch = dlsym(lib, "cuLaunchKernel");
  if (synchronize != NULL) *(void **)synchronize = dlsym(lib, "cuCtxSynchronize");
  if (get_current != NULL) *(void **)get_current = dlsym(lib, "cuCtxGetCurrent");
  dlclose(lib);                       /* the module's own handle keeps the library loaded */
  if (launch == NULL || (synchronize != NULL && *synchronize == NULL) ||
      (get_current != NULL && *get_current == NULL))
    luaL_error(L, "the CUDA driver lacks a symbol");
  return launch;
}

static int raw_launches (lua_State *L) {
  CUfunction f = (CUfunction)(uintptr_t)luaL_checkinteger(L, 1);
  lua_Integer reps = luaL_checkinteger(L, 2), per = luaL_checkinteger(L, 3), rep, i;
  int sync = lua_toboolean(L, 4), check_context = lua_toboolean(L, 5);
  CtxSynchronize synchronize;
  CtxGetCurrent get_current;
  CUcontext current;
  LaunchKernel launch;
  luaL_argcheck(L, f != NULL, 1, "a CUfunction handle expected");
  luaL_argcheck(L, reps >= 1, 2, "at least one repeat");
  luaL_argcheck(L, per >= 1, 3, "at least one launch per repeat");
  launch = driver_launch(L, &synchronize, &get_current);
  lua_createtable(L, (int)reps, 0);
  for (rep = 1; rep <= reps; rep++) {
    double t0 = wall_us(), t;
    CUresult r = CUDA_SUCCESS;
    for (i = 0; i < per && r == CUDA_SUCCESS; i++) {
      if (check_context) r = get_current(&current);
      if (r == CUDA_SUCCESS) r = launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    }
    if (sync && r == CUDA_SUCCESS) r = synchronize();
    t = (wall_us() - t0) / (double)per;
    if (!sync && r == CUDA_SUCCESS) r = synchronize();
    if (r != CUDA_SUCCESS) return luaL_error(L, "raw launch failed: CUDA error %d", (int)r);
    lua_pushnumber(L, (lua_Number)t);
    lua_rawseti(L, -2, rep);
  }
  return 1;
}

#define MAX_ARGS 16

static int raw_launches_args (lua_State *L) {
  CUfunction f = (CUfunction)(uintptr_t)luaL_checkinteger(L, 1);
  lua_Integer reps = luaL_checkinteger(L, 2), per = luaL_checkinteger(L, 3), rep, i;
  int use_extra = lua_toboolean(L, 4), nargs = lua_gettop(L) - 6, k;
  unsigned grid = (unsigned)luaL_checkinteger(L, 5), block = (unsigned)luaL_checkinteger(L, 6);
  long long values[MAX_ARGS];
  void *params[MAX_ARGS];
  size_t size = sizeof(long long) * (size_t)(nargs > 0 ? nargs : 0);
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, values, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CtxSynchronize synchronize;
  LaunchKernel launch = driver_launch(L, &synchronize, NULL);
  luaL_argcheck(L, nargs >= 0 && nargs <= MAX_ARGS, 7, "0 to 16 arguments");
  for (k = 0; k < nargs; k++) {
    values[k] = (long long)luaL_checkinteger(L, 7 + k);
    params[k] = &values[k];
  }
  lua_createtable(L, (int)reps, 0);
  for (rep = 1; rep <= reps; rep++) {
    double t0 = wall_us(), t;
    CUresult r = CUDA_SUCCESS;
    for (i = 0; i < per && r == CUDA_SUCCESS; i++)
      r = launch(f, grid, 1, 1, block, 1, 1, 0, NULL, use_extra ? NULL : params,
                 use_extra ? extra : NULL);
    t = (wall_us() - t0) / (double)per;
    if (r == CUDA_SUCCESS) r = synchronize();
    if (r != CUDA_SUCCESS) return luaL_error(L, "raw launch failed: CUDA error %d", (int)r);
    lua_pushnumber(L, (lua_Number)t);
    lua_rawseti(L, -2, rep);
  }
  return 1;
}

typedef CUresult (*PoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
typedef CUresult (*PoolDestroy)(CUmemoryPool);
typedef CUresult (*PoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
typedef CUresult (*AllocFromPool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*FreeAsync)(CUdeviceptr, CUstream);
typedef CUresult (*CtxGetDevice)(CUdevice *);

static int raw_alloc_free (lua_State *L) {
  size_t bytes = (size_t)luaL_checkinteger(L, 1);
  lua_Integer reps = luaL_checkinteger(L, 2), per = luaL_checkinteger(L, 3), rep, i;
  CUfunction f = (CUfunction)(uintptr_t)luaL_optinteger(L, 4, 0);
  unsigned grid = (unsigned)luaL_optinteger(L, 5, 1), block = (unsigned)luaL_optinteger(L, 6, 1);
  long long values[MAX_ARGS];
  int nargs = 0, slot = -1, k;
  size_t size;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, values, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  const char *name = getenv("GPU_CUDA_LIBRARY");
  void *lib = dlopen(name != NULL && *name != '\0' ? name : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  PoolCreate create; PoolDestroy destroy; PoolSetAttribute set; AllocFromPool alloc;
  FreeAsync release; CtxGetDevice get_device;
  CtxSynchronize synchronize;
  LaunchKernel launch = driver_launch(L, &synchronize, NULL);
  CUmemPoolProps props;
  CUmemoryPool pool;
  CUdevice dev;
  cuuint64_t keep_all = UINT64_MAX;
  CUresult r;
  if (lib == NULL) return luaL_error(L, "the CUDA driver is not loaded (require \"gpu\" first)");
  if (f != NULL) {
    luaL_checktype(L, 7, LUA_TTABLE);
    nargs = (int)lua_rawlen(L, 7);
    luaL_argcheck(L, nargs <= MAX_ARGS, 7, "at most 16 arguments");
    for (k = 0; k < nargs; k++) {
      lua_rawgeti(L, 7, k + 1);
      values[k] = (long long)luaL_checkinteger(L, -1);
      if (values[k] == 0) slot = k;
      lua_pop(L, 1);
    }
    luaL_argcheck(L, slot >= 0, 7, "a 0 marks where the allocation goes");
  }
  size = sizeof(long long) * (size_t)nargs;
  *(void **)&create = dlsym(lib, "cuMemPoolCreate");
  *(void **)&destroy = dlsym(lib, "cuMemPoolDestroy");
  *(void **)&set = dlsym(lib, "cuMemPoolSetAttribute");
  *(void **)&alloc = dlsym(lib, "cuMemAllocFromPoolAsync");
  *(void **)&release = dlsym(lib, "cuMemFreeAsync");
  *(void **)&get_device = dlsym(lib, "cuCtxGetDevice");
  dlclose(lib);
  if (!create || !destroy || !set || !alloc || !release || !get_device)
    return luaL_error(L, "the CUDA driver lacks a symbol");
  r = get_device(&dev);
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = (int)dev;   /* ordinal = CUdevice on every driver this bench runs on */
  if (r == CUDA_SUCCESS) r = create(&pool, &props);
  if (r != CUDA_SUCCESS) return luaL_error(L, "raw pool: CUDA error %d", (int)r);
  r = set(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
  lua_createtable(L, (int)reps, 0);
  for (rep = 0; rep <= reps && r == CUDA_SUCCESS; rep++) {   /* repeat 0 warms the pool up */
    double t0 = wall_us(), t;
    for (i = 0; i < per && r == CUDA_SUCCESS; i++) {
      CUdeviceptr c;
      r = alloc(&c, bytes, pool, NULL);
      if (slot >= 0) values[slot] = (long long)c;
      if (r == CUDA_SUCCESS && f != NULL)
        r = launch(f, grid, 1, 1, block, 1, 1, 0, NULL, NULL, extra);
      if (r == CUDA_SUCCESS) r = release(c, NULL);
    }
    t = (wall_us() - t0) / (double)per;
    if (r == CUDA_SUCCESS) r = synchronize();
    if (rep > 0) {
      lua_pushnumber(L, (lua_Number)t);
      lua_rawseti(L, -2, rep);
    }
  }
  if (synchronize() == CUDA_SUCCESS) destroy(pool);
  if (r != CUDA_SUCCESS) return luaL_error(L, "raw alloc/free failed: CUDA error %d", (int)r);
  return 1;
}

static int launch_once (lua_State *L) {
  CUfunction f = (CUfunction)(uintptr_t)lua_tointeger(L, 1);
  LaunchKernel launch = *(LaunchKernel *)lua_touserdata(L, lua_upvalueindex(1));
  CUresult r = launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  if (r != CUDA_SUCCESS) return luaL_error(L, "raw launch failed: CUDA error %d", (int)r);
  return 0;
}

/* launch_once_for() -> launch_once, with cuLaunchKernel looked up once (its upvalue) */
static int launch_once_for (lua_State *L) {
  LaunchKernel launch = driver_launch(L, NULL, NULL);
  *(LaunchKernel *)lua_newuserdatauv(L, sizeof launch, 0) = launch;
  lua_pushcclosure(L, launch_once, 1);
  return 1;
}

__attribute__((visibility("default"))) int luaopen_bench_clock (lua_State *L);

int luaopen_bench_clock (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"now_us", now_us}, {"raw_launches", raw_launches},
    {"raw_launches_args", raw_launches_args}, {"raw_alloc_free", raw_alloc_free},
    {"launch_once_for", launch_once_for},
    {NULL, NULL}
  };
  luaL_newlib(L, functions);
  return 1;
}
