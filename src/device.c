/*
** device.c: driver and device queries, gpu.Device, and the per-state contexts.
**
** Work runs in each device's primary context (shared with every other CUDA user in the
** process).  A state retains a device's primary context the first time it needs it, keeps it
** in a gpu.Context userdata (registry table "gpu.contexts", keyed by ordinal), and releases
** it when the state closes.  Objects pin that userdata, so it outlives them.  The state
** remembers the current device's Context, so most calls reach it without a table lookup.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

#define GPU_DEVICE "gpu.Device"

typedef struct gpu_Device {
  CUdevice device;
  int ordinal;
} gpu_Device;

int gpu_device_ordinal_at (lua_State *L, int idx) {
  const gpu_Device *dev = (const gpu_Device *)luaL_testudata(L, idx, GPU_DEVICE);
  return dev != NULL ? dev->ordinal : -1;
}

static const struct { const char *name; CUdevice_attribute attribute; } attributes[] = {
#define X(name) {#name, CU_DEVICE_ATTRIBUTE_##name},
#include "device_attributes.h"
#undef X
};

static int device_count (lua_State *L, const gpu_Driver *d) {
  int n = 0;
  gpu_check(L, d->cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

static int check_ordinal (lua_State *L, int arg, const gpu_Driver *d) {
  lua_Integer n = luaL_checkinteger(L, arg);
  int count = device_count(L, d);
  if (n < 0 || n >= count)
    return luaL_argerror(L, arg, lua_pushfstring(L, "device ordinal %I out of range (%d device%s)",
                                                 n, count, count == 1 ? "" : "s"));
  return (int)n;
}

/* The ordinal new work goes to: set_device, else CUDA_DEVICE, else 0. */
static int current_ordinal (lua_State *L, const gpu_Driver *d) {
  gpu_State *s = gpu_state(L);
  if (s->device < 0) {
    const char *env = getenv("CUDA_DEVICE");
    int count = device_count(L, d);
    int n = 0;
    if (env != NULL && *env != '\0') {
      char *end;
      long v = strtol(env, &end, 10);
      if (*end != '\0' || v < 0 || v >= count)
        return luaL_error(L, "CUDA_DEVICE=%s is not a device ordinal (%d device%s)", env, count,
                          count == 1 ? "" : "s");
      n = (int)v;
    }
    s->device = n;
  }
  return s->device;
}

/* ---------------------------------------------------------------- contexts */

static void context_release (gpu_Context *c) {
  const gpu_Driver *d = gpu_driver_load(NULL, NULL);
  CUcontext prev;           /* not restored: the state is closing, and prev may be released here */
  gpu_blas_release(c);      /* its workspace, while the context lives */
  gpu_solver_release(c);
  /* a pool with allocations still pending is released by the driver once they are freed */
  if (c->pool != NULL && d != NULL && gpu_context_try_enter(c, &prev)) d->cuMemPoolDestroy(c->pool);
  c->pool = NULL;
  if (c->ctx != NULL && c->owned && d != NULL) d->cuDevicePrimaryCtxRelease(c->device);
  c->ctx = NULL;
}

/*
** Called by the state's finalizer (core.c), which lua_close runs after every other finalizer
** of the module: Lua finalizes in reverse order of marking, and the state is marked when the
** module is opened, before any object exists.  A Context's own __gc could run before the
** objects that use it (they are often marked before the Context they create lazily), and
** would then destroy the pool and context under live buffers.
*/
void gpu_contexts_release (lua_State *L) {
  static const char *const tables[] = {"gpu.contexts", "gpu.replaced_contexts", "gpu.contexts_made"};
  int i;
  for (i = 0; i < 3; i++) {
    if (lua_getfield(L, LUA_REGISTRYINDEX, tables[i]) == LUA_TTABLE) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        gpu_Context *c = (gpu_Context *)luaL_testudata(L, -1, GPU_CONTEXT);
        if (c != NULL) context_release(c);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
}

/*
** Device memory comes from a stream-ordered pool of this state's own (cuMemAllocFromPoolAsync
** on the default stream), which keeps freed memory for reuse instead of returning it to the
** driver: allocation is cheap and freeing never blocks.  GPU_POOL_DISABLE=1 falls back to
** plain cuMemAlloc/cuMemFree, as do devices without memory pools.
*/
static void create_pool (lua_State *L, const gpu_Driver *d, gpu_Context *c) {
  const char *disable = getenv("GPU_POOL_DISABLE");
  int supported = 0;
  CUmemPoolProps props;
  cuuint64_t keep_all = UINT64_MAX;
  if (disable != NULL && *disable != '\0' && strcmp(disable, "0") != 0) return;
  gpu_check(L, d->cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                       c->device), "cuDeviceGetAttribute");
  if (!supported) return;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = c->ordinal;
  gpu_check(L, d->cuMemPoolCreate(&c->pool, &props), "cuMemPoolCreate");
  gpu_check(L, d->cuMemPoolSetAttribute(c->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all),
            "cuMemPoolSetAttribute");
}

/* A Context for ordinal: its primary context, or host_ctx (not retained: the host owns it). */
static gpu_Context *context_new (lua_State *L, const gpu_Driver *d, int ordinal,
                                 CUcontext host_ctx) {
  gpu_Context *c = (gpu_Context *)lua_newuserdatauv(L, sizeof(gpu_Context), 0);
  CUdevice dev;
  int i;
  static const CUdevice_attribute limits[7] = {
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
  };
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, GPU_CONTEXT);
  lua_pushvalue(L, -1);
  c->ref = luaL_ref(L, LUA_REGISTRYINDEX);      /* held for the state's life, as the lists do */
  /* listed before it retains anything: if a call below raises, the state still releases it */
  lua_getfield(L, LUA_REGISTRYINDEX, "gpu.contexts_made");
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  c->state = gpu_state(L);
  c->driver = d;
  gpu_check(L, d->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  c->device = dev;
  c->ordinal = ordinal;
  for (i = 0; i < 7; i++) {
    int v;
    gpu_check(L, d->cuDeviceGetAttribute(&v, limits[i], dev), "cuDeviceGetAttribute");
    if (i < 3) c->max_block[i] = v;
    else if (i < 6) c->max_grid[i - 3] = v;
    else c->max_threads = v;
  }
  gpu_check(L, d->cuDeviceGetAttribute(&c->cc_major,
                                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            "cuDeviceGetAttribute");
  gpu_check(L, d->cuDeviceGetAttribute(&c->cc_minor,
                                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
            "cuDeviceGetAttribute");
  if (host_ctx != NULL) c->ctx = host_ctx;
  else {
    gpu_check(L, d->cuDevicePrimaryCtxRetain(&c->ctx, dev), "cuDevicePrimaryCtxRetain");
    c->owned = 1;
  }
  gpu_context_enter(L, c);
  create_pool(L, d, c);
  return c;
}

static gpu_Context *context_of (lua_State *L, const gpu_Driver *d, int ordinal);

gpu_Context *gpu_context_push (lua_State *L) {
  gpu_Context *c = gpu_context_find(L, gpu_state(L));
  gpu_context_enter(L, c);
  return c;
}

gpu_Context *gpu_context_find (lua_State *L, gpu_State *s) {
  const gpu_Driver *d;
  int ordinal;
  gpu_Context *c = s->current;
  if (c != NULL && c->ordinal == s->device) {     /* every call but a device's first */
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    return c;
  }
  d = gpu_driver(L);
  ordinal = current_ordinal(L, d);
  c = context_of(L, d, ordinal);
  s->current = c;
  return c;
}

/* Pushes the state's Context of device ordinal, made on first use (and left current then). */
static gpu_Context *context_of (lua_State *L, const gpu_Driver *d, int ordinal) {
  gpu_Context *c;
  lua_getfield(L, LUA_REGISTRYINDEX, "gpu.contexts");
  if (lua_rawgeti(L, -1, ordinal) == LUA_TUSERDATA) {
    c = (gpu_Context *)lua_touserdata(L, -1);
    lua_remove(L, -2);
  } else {
    lua_pop(L, 1);
    c = context_new(L, d, ordinal, NULL);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, ordinal);
    lua_remove(L, -2);
  }
  return c;
}

gpu_Context *gpu_context_adopt (lua_State *L, CUcontext ctx) {
  const gpu_Driver *d = gpu_driver(L);
  CUdevice dev;
  int ordinal, count = device_count(L, d);
  gpu_check(L, d->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  gpu_check(L, d->cuCtxGetDevice(&dev), "cuCtxGetDevice");
  for (ordinal = 0; ordinal < count; ordinal++) {
    CUdevice other;
    gpu_check(L, d->cuDeviceGet(&other, ordinal), "cuDeviceGet");
    if (other == dev) break;
  }
  if (ordinal == count) luaL_error(L, "the host's CUDA context is on no device this process sees");
  lua_getfield(L, LUA_REGISTRYINDEX, "gpu.contexts");
  if (lua_rawgeti(L, -1, ordinal) != LUA_TNIL) {
    /* the context this one replaces may still have objects: release it with the state */
    if (lua_getfield(L, LUA_REGISTRYINDEX, "gpu.replaced_contexts") != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, LUA_REGISTRYINDEX, "gpu.replaced_contexts");
    }
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  context_new(L, d, ordinal, ctx);
  lua_rawseti(L, -2, ordinal);          /* new work on this device goes to the host's context */
  lua_pop(L, 1);
  gpu_state(L)->device = ordinal;
  gpu_state(L)->current = NULL;         /* it was the context this one replaces */
  return gpu_context_push(L);
}

int gpu_context_try_enter (gpu_Context *c, CUcontext *prev) {
  const gpu_Driver *d;
  CUcontext cur = NULL;
  *prev = NULL;
  if (c == NULL || c->ctx == NULL) return 0;
  d = c->driver;                           /* set before the context was retained */
  if (d->cuCtxGetCurrent(&cur) != CUDA_SUCCESS) return 0;
  *prev = cur;
  return cur == c->ctx || d->cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS;
}

void gpu_context_restore (const gpu_Context *c, CUcontext prev) {
  if (prev != NULL && prev != c->ctx) c->driver->cuCtxSetCurrent(prev);
}

void gpu_context_enter (lua_State *L, gpu_Context *c) {
  const gpu_Driver *d = c->driver;
  CUcontext cur = NULL;
  if (c->ctx == NULL) luaL_error(L, "the CUDA context of this object has been released");
  gpu_check(L, d->cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur != c->ctx) gpu_check(L, d->cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");
}

/* ---------------------------------------------------------------- module functions */

static int gpu_available (lua_State *L) {
  const char *why;
  const gpu_Driver *d = gpu_driver_load(&why, NULL);
  int n = 0;
  if (d == NULL) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
    return 2;
  }
  if (d->cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "no CUDA device found");
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int gpu_device_count (lua_State *L) {
  const gpu_Driver *d = gpu_driver_load(NULL, NULL);
  int n = 0;
  if (d != NULL) gpu_check(L, d->cuDeviceGetCount(&n), "cuDeviceGetCount");
  lua_pushinteger(L, n);   /* no driver or no device: zero devices, like nvidia-smi */
  return 1;
}

static int gpu_driver_version (lua_State *L) {
  const gpu_Driver *d = gpu_driver_symbols();
  if (d == NULL) {
    const char *why;
    gpu_driver_load(&why, NULL);
    return gpu_raise(L, CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", why,
                     "cuDriverGetVersion", NULL);
  }
  lua_pushinteger(L, d->version);
  return 1;
}

static gpu_Device *push_device (lua_State *L, const gpu_Driver *d, int ordinal) {
  gpu_Device *dev = (gpu_Device *)lua_newuserdatauv(L, sizeof(gpu_Device), 0);
  dev->ordinal = ordinal;
  luaL_setmetatable(L, GPU_DEVICE);
  gpu_check(L, d->cuDeviceGet(&dev->device, ordinal), "cuDeviceGet");
  return dev;
}

static int gpu_Device_new (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  push_device(L, d, lua_isnoneornil(L, 1) ? current_ordinal(L, d) : check_ordinal(L, 1, d));
  return 1;
}

static int gpu_set_device (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  gpu_state(L)->device = check_ordinal(L, 1, d);
  return 0;
}

static int gpu_get_device (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  push_device(L, d, current_ordinal(L, d));
  return 1;
}

/* device_ordinal() -> the ordinal new work goes to (cheap: for cache keys) */
static int gpu_device_ordinal (lua_State *L) {
  lua_pushinteger(L, current_ordinal(L, gpu_driver(L)));
  return 1;
}

static int gpu_synchronize (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  gpu_context_push(L);
  gpu_synchronize_checked(L, d);
  return 0;
}

/* mem_pool_info() -> bytes in use, bytes held by the pool (in use or cached) */
static int gpu_mem_pool_info (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  gpu_Context *c = gpu_context_push(L);
  cuuint64_t used = 0, held = 0;
  if (c->pool != NULL) {
    gpu_check(L, d->cuMemPoolGetAttribute(c->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used),
              "cuMemPoolGetAttribute");
    gpu_check(L, d->cuMemPoolGetAttribute(c->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &held),
              "cuMemPoolGetAttribute");
  }
  lua_pushinteger(L, (lua_Integer)used);
  lua_pushinteger(L, (lua_Integer)held);
  return 2;
}

/* free_pool(): returns the memory the pool caches (not in use) to the driver */
static int gpu_free_pool (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  gpu_Context *c = gpu_context_push(L);
  if (c->pool != NULL) {
    gpu_synchronize_checked(L, d);          /* let pending frees land */
    gpu_check(L, d->cuMemPoolTrimTo(c->pool, 0), "cuMemPoolTrimTo");
  }
  return 0;
}

/*
** Context limits, named as CUlimit without its CU_LIMIT_ prefix (as device attributes are).
** The driver grows STACK_SIZE for any kernel that needs more local memory and never shrinks
** it, holding stack bytes for every thread the device can run (an 8 KiB stack: about 2 GiB
** on an H100) until the context goes: set_limit("STACK_SIZE", n) is how to get it back.
*/
static const struct { const char *name; CUlimit limit; } limits[] = {
  {"STACK_SIZE", CU_LIMIT_STACK_SIZE}, {"PRINTF_FIFO_SIZE", CU_LIMIT_PRINTF_FIFO_SIZE},
  {"MALLOC_HEAP_SIZE", CU_LIMIT_MALLOC_HEAP_SIZE},
  {"DEV_RUNTIME_SYNC_DEPTH", CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH},
  {"DEV_RUNTIME_PENDING_LAUNCH_COUNT", CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT},
  {"MAX_L2_FETCH_GRANULARITY", CU_LIMIT_MAX_L2_FETCH_GRANULARITY},
  {"PERSISTING_L2_CACHE_SIZE", CU_LIMIT_PERSISTING_L2_CACHE_SIZE},
};

static CUlimit check_limit (lua_State *L, int arg) {
  const char *name = luaL_checkstring(L, arg);
  size_t i;
  if (strncmp(name, "CU_LIMIT_", 9) == 0) name += 9;
  for (i = 0; i < sizeof limits / sizeof limits[0]; i++)
    if (strcmp(name, limits[i].name) == 0) return limits[i].limit;
  return (CUlimit)luaL_argerror(L, arg, lua_pushfstring(L, "unknown context limit '%s'", name));
}

static lua_Integer context_limit (lua_State *L, const gpu_Driver *d, CUlimit limit) {
  size_t value = 0;
  gpu_check(L, d->cuCtxGetLimit(&value, limit), "cuCtxGetLimit");
  return (lua_Integer)value;
}

/* get_limit(name) -> the current device's context limit */
static int gpu_get_limit (lua_State *L) {
  CUlimit limit = check_limit(L, 1);
  const gpu_Driver *d = gpu_driver(L);
  gpu_context_push(L);
  lua_pushinteger(L, context_limit(L, d, limit));
  return 1;
}

typedef struct { CUlimit limit; size_t value; } LimitRequest;

static CUresult set_context_limit (const gpu_Driver *d, void *request) {
  const LimitRequest *r = (const LimitRequest *)request;
  return d->cuCtxSetLimit(r->limit, r->value);
}

/* set_limit(name, value) -> the value in effect (the driver may round or clamp it).  Setting
** a limit can wait for the device, which no open capture allows: refused then. */
static int gpu_set_limit (lua_State *L) {
  const gpu_Driver *d;
  LimitRequest request;
  lua_Integer value;
  int refused;
  CUresult r;
  request.limit = check_limit(L, 1);
  value = luaL_checkinteger(L, 2);
  luaL_argcheck(L, value >= 0, 2, "a limit is 0 or more");
  request.value = (size_t)value;
  d = gpu_driver(L);
  gpu_context_push(L);
  r = gpu_outside_captures(d, set_context_limit, &request, &refused);
  if (refused)
    return luaL_error(L, "cannot set a context limit while a stream capture is open (in any "
                      "thread): end the capture first");
  gpu_check(L, r, "cuCtxSetLimit");
  lua_pushinteger(L, context_limit(L, d, request.limit));
  return 1;
}

static int gpu_mem_get_info (lua_State *L) {
  const gpu_Driver *d = gpu_driver(L);
  size_t free_bytes, total;
  gpu_context_push(L);
  gpu_check(L, d->cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  lua_pushinteger(L, (lua_Integer)free_bytes);
  lua_pushinteger(L, (lua_Integer)total);
  return 2;
}

/* ---------------------------------------------------------------- gpu.Device methods */

static int device_name (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  char name[256];
  gpu_check(L, gpu_driver(L)->cuDeviceGetName(name, sizeof name, dev->device), "cuDeviceGetName");
  lua_pushstring(L, name);
  return 1;
}

static int device_compute_capability (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  const gpu_Driver *d = gpu_driver(L);
  int major, minor;
  gpu_check(L, d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                       dev->device), "cuDeviceGetAttribute");
  gpu_check(L, d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                       dev->device), "cuDeviceGetAttribute");
  lua_pushinteger(L, major);
  lua_pushinteger(L, minor);
  return 2;
}

static int device_total_memory (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  size_t bytes;
  gpu_check(L, gpu_driver(L)->cuDeviceTotalMem(&bytes, dev->device), "cuDeviceTotalMem");
  lua_pushinteger(L, (lua_Integer)bytes);
  return 1;
}

static int device_attribute (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  const char *name = luaL_checkstring(L, 2);
  size_t i;
  int value;
  if (strncmp(name, "CU_DEVICE_ATTRIBUTE_", 20) == 0) name += 20;
  for (i = 0; i < sizeof attributes / sizeof attributes[0]; i++)
    if (strcmp(name, attributes[i].name) == 0) break;
  if (i == sizeof attributes / sizeof attributes[0])
    return luaL_argerror(L, 2, lua_pushfstring(L, "unknown device attribute '%s'", name));
  gpu_check(L, gpu_driver(L)->cuDeviceGetAttribute(&value, attributes[i].attribute, dev->device),
            "cuDeviceGetAttribute");
  lua_pushinteger(L, value);
  return 1;
}

static int device_attributes (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  const gpu_Driver *d = gpu_driver(L);
  size_t i;
  lua_newtable(L);
  for (i = 0; i < sizeof attributes / sizeof attributes[0]; i++) {
    int value;  /* attributes this driver does not know are left out */
    if (d->cuDeviceGetAttribute(&value, attributes[i].attribute, dev->device) == CUDA_SUCCESS) {
      lua_pushinteger(L, value);
      lua_setfield(L, -2, attributes[i].name);
    }
  }
  return 1;
}

static int device_pci_bus_id (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  char id[64];
  gpu_check(L, gpu_driver(L)->cuDeviceGetPCIBusId(id, sizeof id, dev->device),
            "cuDeviceGetPCIBusId");
  lua_pushstring(L, id);
  return 1;
}

static int device_ordinal (lua_State *L) {
  lua_pushinteger(L, ((gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE))->ordinal);
  return 1;
}

/* A device argument: a gpu.Device or an ordinal. */
static int check_device_arg (lua_State *L, int arg, const gpu_Driver *d) {
  int ordinal = gpu_device_ordinal_at(L, arg);
  return ordinal >= 0 ? ordinal : check_ordinal(L, arg, d);
}

/* dev:can_access_peer(other) -> whether dev's kernels can reach other's memory directly */
static int device_can_access_peer (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  const gpu_Driver *d = gpu_driver(L);
  CUdevice other;
  int can = 0;
  gpu_check(L, d->cuDeviceGet(&other, check_device_arg(L, 2, d)), "cuDeviceGet");
  if (other != dev->device)
    gpu_check(L, d->cuDeviceCanAccessPeer(&can, dev->device, other), "cuDeviceCanAccessPeer");
  lua_pushboolean(L, can);
  return 1;
}

/*
** enable_peer_access(peer) / disable_peer_access(peer): whether the current device's context
** maps the memory of device peer (a gpu.Device or ordinal), so that its kernels may take that
** device's buffers and arrays as arguments (cuCtxEnablePeerAccess).  Idempotent.
*/
static int peer_access (lua_State *L, int enable) {
  const gpu_Driver *d = gpu_driver(L);
  int ordinal = check_device_arg(L, 1, d);
  gpu_Context *c, *peer;
  CUresult r;
  lua_settop(L, 1);
  c = gpu_context_find(L, gpu_state(L));
  peer = context_of(L, d, ordinal);
  luaL_argcheck(L, peer != c, 1, "a device's own memory needs no peer access");
  luaL_argcheck(L, ordinal < 64, 1, "device ordinals past 63 are not tracked");
  gpu_context_enter(L, c);                  /* context_of may have made peer's current */
  r = enable ? d->cuCtxEnablePeerAccess(peer->ctx, 0) : d->cuCtxDisablePeerAccess(peer->ctx);
  if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED && r != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    gpu_check(L, r, enable ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess");
  if (peer->pool != NULL) {   /* the context's mapping leaves out stream-ordered pools */
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = (int)c->device;
    access.flags = enable ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    gpu_check(L, d->cuMemPoolSetAccess(peer->pool, &access, 1), "cuMemPoolSetAccess");
  }
  if (enable) c->peers |= (uint64_t)1 << ordinal;
  else c->peers &= ~((uint64_t)1 << ordinal);
  return 0;
}

static int gpu_enable_peer_access (lua_State *L) { return peer_access(L, 1); }
static int gpu_disable_peer_access (lua_State *L) { return peer_access(L, 0); }

static int device_tostring (lua_State *L) {
  gpu_Device *dev = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  char name[256] = "?";
  gpu_driver(L)->cuDeviceGetName(name, sizeof name, dev->device);
  lua_pushfstring(L, "gpu.Device(%d: %s)", dev->ordinal, name);
  return 1;
}

static int device_eq (lua_State *L) {
  gpu_Device *a = (gpu_Device *)luaL_checkudata(L, 1, GPU_DEVICE);
  gpu_Device *b = (gpu_Device *)luaL_checkudata(L, 2, GPU_DEVICE);
  lua_pushboolean(L, a->ordinal == b->ordinal);
  return 1;
}

void gpu_device_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"available", gpu_available}, {"device_count", gpu_device_count},
    {"driver_version", gpu_driver_version}, {"Device", gpu_Device_new},
    {"set_device", gpu_set_device}, {"get_device", gpu_get_device},
    {"device_ordinal", gpu_device_ordinal},
    {"synchronize", gpu_synchronize}, {"mem_get_info", gpu_mem_get_info},
    {"mem_pool_info", gpu_mem_pool_info}, {"free_pool", gpu_free_pool},
    {"get_limit", gpu_get_limit}, {"set_limit", gpu_set_limit},
    {"enable_peer_access", gpu_enable_peer_access},
    {"disable_peer_access", gpu_disable_peer_access}, {NULL, NULL},
  };
  static const luaL_Reg device_meta[] = {
    {"__tostring", device_tostring}, {"__eq", device_eq}, {NULL, NULL},
  };
  static const luaL_Reg device_methods[] = {
    {"name", device_name}, {"compute_capability", device_compute_capability},
    {"total_memory", device_total_memory}, {"attribute", device_attribute},
    {"attributes", device_attributes}, {"pci_bus_id", device_pci_bus_id},
    {"ordinal", device_ordinal}, {"can_access_peer", device_can_access_peer}, {NULL, NULL},
  };
  static const luaL_Reg context_meta[] = {{NULL, NULL}};   /* released with the state */
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_DEVICE, device_meta, device_methods);
  gpu_newtype(L, GPU_CONTEXT, context_meta, NULL);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "gpu.contexts");
  lua_newtable(L);          /* every Context made, the half-made ones (an error) included */
  lua_setfield(L, LUA_REGISTRYINDEX, "gpu.contexts_made");
}
