/*
** host.c: gpu.HostArray, typed host memory (Lua has no NumPy): pageable arrays live inside
** their userdata, page-locked ones come from cuMemHostAlloc for async copies, managed ones
** from cuMemAllocManaged, which kernels also take as a pointer (PyCUDA's managed_empty).
** Element access is 1-based over the flat (row-major) order and checks both index and value.
** Printing lives in the Lua layer (lua/gpu/host.lua).
*/
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "gpu.h"

/* Pageable data follows the header, aligned for any element type. */
#define GPU_HOST_ALIGN 16
#define HEADER_SIZE ((sizeof(gpu_HostArray) + GPU_HOST_ALIGN - 1) / GPU_HOST_ALIGN * GPU_HOST_ALIGN)

/*
** Asks the kernel for huge pages for the untouched data of a large pageable array, as NumPy
** does: touching 256 MB of fresh memory a 4 KiB page at a time took 200 ms on the GPU
** machine's host, longer than copying it from the device.  Only the 2 MiB-aligned interior
** can be advised; where transparent huge pages are off this does nothing.
*/
static void advise_huge_pages (void *data, size_t nbytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t first = ((uintptr_t)data + huge - 1) & ~(huge - 1);
  uintptr_t last = ((uintptr_t)data + nbytes) & ~(huge - 1);
  if (nbytes >= 4 * huge && last > first) madvise((void *)first, last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)nbytes;
#endif
}

static int host_alive (const gpu_HostArray *h) {
  return h->data != NULL && h->root != NULL && h->root->data != NULL;
}

gpu_HostArray *gpu_testhostarray (lua_State *L, int idx) {
  gpu_HostArray *h = (gpu_HostArray *)luaL_testudata(L, idx, GPU_HOSTARRAY);
  return h != NULL && host_alive(h) ? h : NULL;
}

gpu_HostArray *gpu_checkhostarray (lua_State *L, int arg) {
  gpu_HostArray *h = (gpu_HostArray *)luaL_checkudata(L, arg, GPU_HOSTARRAY);
  if (!host_alive(h)) gpu_freed_error(L, arg, "host array");
  return h;
}

/* h, once the host may touch its memory: a device without concurrent managed access faults
** the host's reads and writes of managed memory while any kernel runs, so those wait for the
** device first (PyCUDA leaves that to the user, and a mistake to a segfault). */
static gpu_HostArray *host_access (lua_State *L, gpu_HostArray *h) {
  if (h->wait_device) {
    gpu_context_enter(L, h->ctx);
    gpu_synchronize_checked(L, h->ctx->driver);   /* refused while a capture is open */
  }
  return h;
}

/* The live host array at arg, for the host to read or write. */
static gpu_HostArray *check_access (lua_State *L, int arg) {
  return host_access(L, gpu_checkhostarray(L, arg));
}

const void *gpu_checkhostbytes (lua_State *L, int arg, size_t *nbytes, int *pinned) {
  gpu_HostArray *h;
  size_t n;
  if (pinned) *pinned = 0;
  if (lua_type(L, arg) == LUA_TSTRING) {
    const char *s = lua_tolstring(L, arg, &n);
    if (nbytes) *nbytes = n;
    return s;
  }
  if (luaL_testudata(L, arg, GPU_HOSTARRAY) == NULL)
    luaL_argerror(L, arg, lua_pushfstring(L, "host array or string expected, got %s",
                                          luaL_typename(L, arg)));
  h = gpu_checkhostarray(L, arg);
  if (nbytes) *nbytes = h->nbytes;
  if (pinned) *pinned = h->root->pagelocked;
  return h->data;
}

static void set_shape (gpu_HostArray *h, gpu_DtypeId dtype, int ndim, const int64_t *shape) {
  int i;
  h->dtype = dtype;
  h->ndim = ndim;
  h->size = 1;
  for (i = 0; i < ndim; i++) {
    h->shape[i] = shape[i];
    h->size *= shape[i];
  }
  h->nbytes = (size_t)h->size * gpu_dtypes[dtype].itemsize;
}

/* cuMemHostAlloc or cuMemAllocManaged (attach: its flags) of h's bytes into h->data. */
static CUresult driver_alloc (const gpu_Driver *d, gpu_HostArray *h, unsigned attach) {
  size_t n = h->nbytes ? h->nbytes : 1;
  CUdeviceptr p = 0;
  CUresult r;
  if (!h->managed) return d->cuMemHostAlloc(&h->data, n, CU_MEMHOSTALLOC_PORTABLE);
  r = d->cuMemAllocManaged(&p, n, attach);
  h->data = (void *)(uintptr_t)p;
  return r;
}

/* gpu_hostarray_new; attach: cuMemAllocManaged's flags for managed memory. */
static gpu_HostArray *host_new (lua_State *L, gpu_DtypeId dtype, int ndim, const int64_t *shape,
                                gpu_HostMemory memory, unsigned attach) {
  gpu_HostArray header, *h;
  int64_t size = 1;
  int i;
  /* shapes are checked below 2^62 elements, but their bytes may still overflow a size_t */
  for (i = 0; i < ndim; i++) size *= shape[i];
  if (size > (int64_t)((PTRDIFF_MAX - HEADER_SIZE) / gpu_dtypes[dtype].itemsize))
    luaL_error(L, "host array of %I %s elements is too large", (lua_Integer)size,
               gpu_dtypes[dtype].name);
  set_shape(&header, dtype, ndim, shape);
  if (memory == GPU_HOST_PAGEABLE) {
    h = (gpu_HostArray *)lua_newuserdatauv(L, HEADER_SIZE + header.nbytes, 1);
    *h = header;
    h->data = (char *)h + HEADER_SIZE;
    advise_huge_pages(h->data, h->nbytes);
    memset(h->data, 0, h->nbytes);
  } else {
    h = (gpu_HostArray *)lua_newuserdatauv(L, sizeof(gpu_HostArray), 1);
    *h = header;
    h->data = NULL;                           /* closed until the allocation succeeds */
  }
  h->root = h;
  h->pagelocked = memory == GPU_HOST_PAGELOCKED;
  h->managed = memory == GPU_HOST_MANAGED;
  h->wait_device = 0;
  h->ctx = NULL;
  luaL_setmetatable(L, GPU_HOSTARRAY);
  if (memory != GPU_HOST_PAGEABLE) {
    const gpu_Driver *d = gpu_driver(L);
    const char *call = h->managed ? "cuMemAllocManaged" : "cuMemHostAlloc";
    CUresult r;
    h->ctx = gpu_context_push(L);
    lua_setiuservalue(L, -2, 1);
    if (h->managed) {
      int concurrent;
      gpu_check(L, d->cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                                           h->ctx->device), "cuDeviceGetAttribute");
      h->wait_device = !concurrent;
    }
    gpu_gc_account(L, h->ctx->state, h->nbytes);
    gpu_context_enter(L, h->ctx);             /* after the collector: finalizers may switch it */
    r = driver_alloc(d, h, attach);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      gpu_gc_collect(L, h->ctx->state);
      gpu_context_enter(L, h->ctx);
      r = driver_alloc(d, h, attach);
    }
    if (r != CUDA_SUCCESS) h->data = NULL;
    gpu_check(L, r, call);
    h->ctx->state->gc_bytes += h->nbytes;
    if (attach != CU_MEM_ATTACH_HOST) host_access(L, h);   /* attached to the host: no kernel's */
    memset(h->data, 0, h->nbytes);
  }
  return h;
}

gpu_HostArray *gpu_hostarray_new (lua_State *L, gpu_DtypeId dtype, int ndim,
                                  const int64_t *shape, gpu_HostMemory memory) {
  return host_new(L, dtype, ndim, shape, memory, CU_MEM_ATTACH_GLOBAL);
}

static int host_free (lua_State *L) {
  gpu_HostArray *h = (gpu_HostArray *)luaL_checkudata(L, 1, GPU_HOSTARRAY);
  if (h->root == h && (h->pagelocked || h->managed) && h->data != NULL) {
    gpu_State *s = h->ctx->state;
    /* freed before a collection counted them: those bytes need no collecting */
    s->gc_debt -= h->nbytes < s->gc_debt ? h->nbytes : s->gc_debt;
    s->gc_bytes -= h->nbytes;
    if (h->pagelocked)
      gpu_release(s, &(gpu_Release){GPU_RELEASE_HOST, h->ctx, {.host = h->data}});
    else
      gpu_release(s, &(gpu_Release){GPU_RELEASE_DEVICE, h->ctx,
                                    {.device = (CUdeviceptr)(uintptr_t)h->data}});
  }
  h->data = NULL;
  if (h->root != h) h->root = NULL;
  return 0;
}

/* ---------------------------------------------------------------- constructors */

/* empty/zeros(shape[, dtype]): arguments 1 and 2; dtype defaults to float64 like NumPy */
static gpu_HostArray *new_from_args (lua_State *L, gpu_HostMemory memory) {
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 1, shape, &size);
  gpu_DtypeId dtype = lua_isnoneornil(L, 2) ? GPU_FLOAT64 : gpu_checkdtype(L, 2);
  return gpu_hostarray_new(L, dtype, ndim, shape, memory);
}

static int host_empty (lua_State *L) { new_from_args(L, GPU_HOST_PAGEABLE); return 1; }
static int host_pagelocked_empty (lua_State *L) { new_from_args(L, GPU_HOST_PAGELOCKED); return 1; }

static const char *const attach_modes[] = {"global", "host", "single", NULL};
static const unsigned attach_flags[] = {CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_HOST,
                                        CU_MEM_ATTACH_SINGLE};

/* managed_empty/managed_zeros(shape[, dtype][, {attach = "global" | "host"}]) */
static int host_managed_empty (lua_State *L) {
  static const char *const known[] = {"attach", NULL};
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 1, shape, &size), options = 3, mode = 0;
  gpu_DtypeId dtype = GPU_FLOAT64;
  if (lua_type(L, 2) == LUA_TTABLE) options = 2;         /* (shape, {attach = ...}) */
  else if (!lua_isnoneornil(L, 2)) dtype = gpu_checkdtype(L, 2);
  if (gpu_checkoptions(L, options, known)) {
    if (lua_getfield(L, options, "attach") != LUA_TNIL) {
      const char *name = lua_tostring(L, -1);
      for (mode = 0; name != NULL && attach_modes[mode] != NULL; mode++)
        if (strcmp(name, attach_modes[mode]) == 0) break;
      if (name == NULL || mode > 1)   /* "single" needs a stream: h:attach("single", s) */
        luaL_argerror(L, options, "option 'attach' must be \"global\" or \"host\"");
    }
    lua_pop(L, 1);
  }
  host_new(L, dtype, ndim, shape, GPU_HOST_MANAGED, attach_flags[mode]);
  return 1;
}

static void fill (lua_State *L, gpu_HostArray *h, int value_idx, int arg) {
  unsigned char v[GPU_MAX_ITEMSIZE];
  const char *bad = gpu_tovalue(L, value_idx, h->dtype, v);
  size_t item = gpu_dtypes[h->dtype].itemsize, i;
  if (bad != NULL) luaL_argerror(L, arg, lua_pushfstring(L, "fill value %s", bad));
  for (i = 0; i < (size_t)h->size; i++) memcpy((char *)h->data + i * item, v, item);
}

static int host_ones (lua_State *L) {
  gpu_HostArray *h = new_from_args(L, GPU_HOST_PAGEABLE);
  lua_pushinteger(L, 1);
  fill(L, h, -1, 1);
  lua_pop(L, 1);
  return 1;
}

/* full(shape, value[, dtype]) */
static int host_full (lua_State *L) {
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 1, shape, &size);
  gpu_DtypeId dtype;
  luaL_checkany(L, 2);
  dtype = lua_isnoneornil(L, 3) ? (lua_isinteger(L, 2) ? GPU_INT64 : lua_isboolean(L, 2)
                                                          ? GPU_BOOL : GPU_FLOAT64)
                                : gpu_checkdtype(L, 3);
  fill(L, gpu_hostarray_new(L, dtype, ndim, shape, GPU_HOST_PAGEABLE), 2, 2);
  return 1;
}

/* from_bytes(s, dtype[, shape]) */
static int host_from_bytes (lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  gpu_DtypeId dtype = gpu_checkdtype(L, 2);
  size_t item = gpu_dtypes[dtype].itemsize;
  int64_t shape[GPU_MAXDIM], size;
  int ndim;
  gpu_HostArray *h;
  if (len % item != 0)
    return luaL_argerror(L, 1, lua_pushfstring(L, "%I bytes is not a whole number of %s "
                                               "elements", (lua_Integer)len, gpu_dtypes[dtype].name));
  if (lua_isnoneornil(L, 3)) {
    ndim = 1;
    shape[0] = size = (int64_t)(len / item);
  } else {
    ndim = gpu_checkshape(L, 3, shape, &size);
    if ((size_t)size * item != len)
      return luaL_argerror(L, 3, lua_pushfstring(L, "shape holds %I elements, the string %I",
                                                 (lua_Integer)size, (lua_Integer)(len / item)));
  }
  h = gpu_hostarray_new(L, dtype, ndim, shape, GPU_HOST_PAGEABLE);
  memcpy(h->data, s, len);
  return 1;
}

/*
** Walks a nested table (argument 1) down its first items to find its shape; fill_from_table
** checks the rest is rectangular.  Rows may be shared, so a few small tables can claim more
** elements than fit in memory, or a count that wraps around: *size keeps the gpu_checkshape cap.
*/
static void table_shape (lua_State *L, int idx, int depth, int64_t *shape, int *ndim,
                         int64_t *size) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (depth >= GPU_MAXDIM)
    luaL_argerror(L, 1, lua_pushfstring(L, "nested table is deeper than %d levels", GPU_MAXDIM));
  luaL_checkstack(L, 3, "nested table too deep");   /* a row a level; 2 to test for gpu.complex */
  if (n != 0 && *size > ((int64_t)1 << 58) / n)
    luaL_argerror(L, 1, "nested table holds too many elements");
  *size *= n;
  shape[depth] = n;
  *ndim = depth + 1;
  if (n > 0 && lua_rawgeti(L, idx, 1) == LUA_TTABLE && !gpu_iscomplex(L, -1))
    table_shape(L, lua_gettop(L), depth + 1, shape, ndim, size);
  if (n > 0) lua_pop(L, 1);
}

typedef struct Filler {
  gpu_HostArray *h;
  size_t next;              /* element index being filled */
  int arg;
} Filler;

static void fill_from_table (lua_State *L, int idx, int depth, Filler *f) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, idx);
  size_t item = gpu_dtypes[f->h->dtype].itemsize;
  luaL_checkstack(L, 4, "nested table too deep");
  if (n != f->h->shape[depth])
    luaL_argerror(L, f->arg, lua_pushfstring(L, "ragged nested table: a row at depth %d has %I "
                                             "items, expected %I", depth + 1, n,
                                             (lua_Integer)f->h->shape[depth]));
  for (i = 1; i <= n; i++) {
    int t = lua_rawgeti(L, idx, i);
    if (depth + 1 < f->h->ndim) {
      if (t != LUA_TTABLE)
        luaL_argerror(L, f->arg, lua_pushfstring(L, "ragged nested table: item %I at depth %d "
                                                 "is a %s, not a table", i, depth + 1,
                                                 luaL_typename(L, -1)));
      fill_from_table(L, lua_gettop(L), depth + 1, f);
    } else {
      const char *bad = gpu_tovalue(L, -1, f->h->dtype, (char *)f->h->data + f->next * item);
      if (bad != NULL)
        luaL_argerror(L, f->arg, lua_pushfstring(L, "item %I: %s, got %s", (lua_Integer)f->next + 1,
                                                 bad, luaL_typename(L, -1)));
      f->next++;
    }
    lua_pop(L, 1);
  }
}

/*
** The dtype NumPy would pick for the leaves: bool if all are, int64 if all integers,
** complex128 if any is a gpu.complex.  Each row table is read once (visited: a set at that
** stack index): rows may be shared, and a few small tables can claim more leaves than could
** ever be read one by one.
*/
static void infer_dtype (lua_State *L, int idx, int depth, int ndim, int visited, int *seen) {
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, idx);
  luaL_checkstack(L, 4, "nested table too deep");
  for (i = 1; i <= n; i++) {
    int t = lua_rawgeti(L, idx, i);
    if (depth + 1 < ndim && t == LUA_TTABLE) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, visited) == LUA_TNIL) {
        lua_pushvalue(L, -2);
        lua_pushboolean(L, 1);
        lua_rawset(L, visited);
        infer_dtype(L, lua_gettop(L) - 1, depth + 1, ndim, visited, seen);
      }
      lua_pop(L, 1);
    }
    else if (t == LUA_TBOOLEAN) *seen |= 1;
    else if (lua_isinteger(L, -1)) *seen |= 2;
    else if (t == LUA_TTABLE && gpu_iscomplex(L, -1)) *seen |= 8;
    else *seen |= 4;
    lua_pop(L, 1);
  }
}

/* from_table(t[, dtype]): a flat or nested (rectangular) table of values */
static int host_from_table (lua_State *L) {
  int64_t shape[GPU_MAXDIM], size = 1;
  int ndim = 1, seen = 0;
  gpu_DtypeId dtype;
  Filler f;
  luaL_checktype(L, 1, LUA_TTABLE);
  table_shape(L, 1, 0, shape, &ndim, &size);
  if (lua_isnoneornil(L, 2)) {
    lua_newtable(L);                                  /* the rows infer_dtype has read */
    infer_dtype(L, 1, 0, ndim, lua_gettop(L), &seen);
    lua_pop(L, 1);
    dtype = seen & 8 ? GPU_COMPLEX128 : seen == 1 ? GPU_BOOL : seen == 2 ? GPU_INT64 : GPU_FLOAT64;
  } else {
    dtype = gpu_checkdtype(L, 2);
  }
  f.h = gpu_hostarray_new(L, dtype, ndim, shape, GPU_HOST_PAGEABLE);
  f.next = 0;
  f.arg = 1;
  fill_from_table(L, 1, 0, &f);
  return 1;
}

/* ---------------------------------------------------------------- elements */

static void *element (lua_State *L, gpu_HostArray *h, int idx) {
  int isint;
  lua_Integer i = lua_tointegerx(L, idx, &isint);
  if (!isint) {
    if (lua_type(L, idx) == LUA_TNUMBER)
      luaL_error(L, "HostArray index must be a whole number, got %s", lua_tostring(L, idx));
    luaL_error(L, "HostArray index must be a whole number, got %s", luaL_typename(L, idx));
  }
  if (i < 1 || i > h->size)
    luaL_error(L, "HostArray index %I out of range (size %I)", i, (lua_Integer)h->size);
  return (char *)h->data + (size_t)(i - 1) * gpu_dtypes[h->dtype].itemsize;
}

static void push_shape (lua_State *L, const gpu_HostArray *h) {
  int i;
  lua_createtable(L, h->ndim, 0);
  for (i = 0; i < h->ndim; i++) {
    lua_pushinteger(L, (lua_Integer)h->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* h[i], then methods, then properties (shape, dtype, size, nbytes, ndim, itemsize, freed) */
static int host_index (lua_State *L) {
  gpu_HostArray *h = (gpu_HostArray *)luaL_checkudata(L, 1, GPU_HOSTARRAY);
  const char *key;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    if (!host_alive(h)) return gpu_freed_error(L, 1, "host array");
    gpu_pushvalue(L, h->dtype, element(L, host_access(L, h), 2));
    return 1;
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if ((key = lua_tostring(L, 2)) == NULL) return 0;
  if (strcmp(key, "dtype") == 0) lua_pushstring(L, gpu_dtypes[h->dtype].name);
  else if (strcmp(key, "shape") == 0) push_shape(L, h);
  else if (strcmp(key, "size") == 0) lua_pushinteger(L, (lua_Integer)h->size);
  else if (strcmp(key, "nbytes") == 0) lua_pushinteger(L, (lua_Integer)h->nbytes);
  else if (strcmp(key, "ndim") == 0) lua_pushinteger(L, h->ndim);
  else if (strcmp(key, "itemsize") == 0) lua_pushinteger(L, gpu_dtypes[h->dtype].itemsize);
  else if (strcmp(key, "freed") == 0) lua_pushboolean(L, !host_alive(h));   /* as a GPUArray's */
  else return 0;
  return 1;
}

static int host_newindex (lua_State *L) {
  gpu_HostArray *h = gpu_checkhostarray(L, 1);
  void *p;
  const char *bad;
  unsigned char v[GPU_MAX_ITEMSIZE];
  if (lua_type(L, 2) != LUA_TNUMBER)
    return luaL_error(L, "HostArray index must be a whole number, got %s", luaL_typename(L, 2));
  p = element(L, h, 2);
  if ((bad = gpu_tovalue(L, 3, h->dtype, v)) != NULL) {
    if (lua_type(L, 3) == LUA_TNUMBER)
      return luaL_error(L, "cannot store %s in a HostArray of %s: %s", lua_tostring(L, 3),
                        gpu_dtypes[h->dtype].name, bad);
    return luaL_error(L, "cannot store a %s in a HostArray of %s: %s", luaL_typename(L, 3),
                      gpu_dtypes[h->dtype].name, bad);
  }
  host_access(L, h);
  memcpy(p, v, gpu_dtypes[h->dtype].itemsize);
  return 0;
}

static int host_len (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gpu_checkhostarray(L, 1)->size);
  return 1;
}

static void push_nested (lua_State *L, const gpu_HostArray *h, int depth, size_t *next) {
  size_t item = gpu_dtypes[h->dtype].itemsize;
  int64_t i;
  if (depth == h->ndim) {
    /* the tables made so far can run finalizers, which may have freed h */
    if (!host_alive(h)) gpu_freed_error(L, 1, "host array");
    gpu_pushvalue(L, h->dtype, (char *)h->data + (*next)++ * item);
    return;
  }
  luaL_checkstack(L, 3, "array too deep");
  lua_createtable(L, (int)(h->shape[depth] < 1 << 20 ? h->shape[depth] : 0), 0);
  for (i = 0; i < h->shape[depth]; i++) {
    push_nested(L, h, depth + 1, next);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* h:totable(): nested by shape (a 0-d array gives its value) */
static int host_totable (lua_State *L) {
  gpu_HostArray *h = check_access(L, 1);
  size_t next = 0;
  push_nested(L, h, 0, &next);
  return 1;
}

static int host_bytes (lua_State *L) {
  gpu_HostArray *h = check_access(L, 1);
  lua_pushlstring(L, (const char *)h->data, h->nbytes);
  return 1;
}

static int host_fill (lua_State *L) {
  gpu_HostArray *h = check_access(L, 1);
  luaL_checkany(L, 2);
  fill(L, h, 2, 2);
  lua_settop(L, 1);
  return 1;
}

/* h:reshape(shape) or h:reshape(d1, d2, ...), one dimension may be -1: a view. */
static int host_reshape (lua_State *L) {
  gpu_HostArray *h = gpu_checkhostarray(L, 1), *v;
  int64_t shape[GPU_MAXDIM], known = 1;       /* product of the non-zero dimensions but -1 */
  int ndim, i, unknown = -1, zero = 0;
  if (lua_type(L, 2) == LUA_TTABLE) {
    ndim = (int)lua_rawlen(L, 2);
    luaL_argcheck(L, ndim <= GPU_MAXDIM, 2, "too many dimensions");
    for (i = 0; i < ndim; i++) {
      int isint;
      lua_rawgeti(L, 2, i + 1);
      shape[i] = (int64_t)lua_tointegerx(L, -1, &isint);
      if (!isint)   /* luaL_checkinteger(L, -1) would blame "argument #-2" */
        return luaL_argerror(L, 2, lua_pushfstring(L, "shape item %d must be a whole number, "
                                                   "got %s", i + 1, luaL_typename(L, -1)));
      lua_pop(L, 1);
    }
  } else {
    ndim = lua_gettop(L) - 1;
    luaL_argcheck(L, ndim >= 1 && ndim <= GPU_MAXDIM, 2, "shape expected");
    for (i = 0; i < ndim; i++) shape[i] = (int64_t)luaL_checkinteger(L, i + 2);
  }
  for (i = 0; i < ndim; i++) {
    if (shape[i] == -1) {
      if (unknown >= 0) return luaL_argerror(L, 2, "only one dimension can be -1");
      unknown = i;
    } else if (shape[i] < 0) {
      return luaL_argerror(L, 2, lua_pushfstring(L, "negative dimension %I in shape",
                                                 (lua_Integer)shape[i]));
    } else if (shape[i] == 0) {
      zero = 1;
    } else if (known >= 0 && (__builtin_mul_overflow(known, shape[i], &known) ||
                              known > ((int64_t)1 << 58))) {
      known = -1;     /* past gpu_checkshape's cap: a later 0 must not make it fit (set_shape) */
    }
  }
  if (zero && known >= 0) known = 0;
  if (unknown >= 0 && known > 0 && h->size % known == 0) shape[unknown] = h->size / known;
  else if (unknown >= 0) known = -1;
  if (unknown < 0 ? known != h->size : known < 0)
    return luaL_argerror(L, 2, lua_pushfstring(L, "cannot reshape an array of size %I into "
                                               "that shape", (lua_Integer)h->size));
  v = (gpu_HostArray *)lua_newuserdatauv(L, sizeof(gpu_HostArray), 1);
  *v = *h;
  set_shape(v, h->dtype, ndim, shape);
  v->root = h->root;
  luaL_setmetatable(L, GPU_HOSTARRAY);
  gpu_pin(L, -1, 1, 1);                       /* the view keeps its base alive */
  return 1;
}

static int host_is_pagelocked (lua_State *L) {
  lua_pushboolean(L, gpu_checkhostarray(L, 1)->root->pagelocked);
  return 1;
}

static int host_is_managed (lua_State *L) {
  lua_pushboolean(L, gpu_checkhostarray(L, 1)->managed);
  return 1;
}

/* The live managed array at arg 1 of method `name`, its context current. */
static gpu_HostArray *check_managed (lua_State *L, const char *name) {
  gpu_HostArray *h = gpu_checkhostarray(L, 1);
  if (!h->managed)
    luaL_argerror(L, 1, lua_pushfstring(L, "%s needs a managed array (gpu.host.managed_empty)", name));
  gpu_context_enter(L, h->ctx);
  return h;
}

/* h:attach(mode[, stream]): which work may touch h's memory (cuStreamAttachMemAsync, queued on
** the stream): "global" any stream's, "host" the host's only (until a kernel of the stream
** runs), "single" the stream's only (its kernels may then run while the host touches other
** managed memory, on devices without concurrent managed access). */
static int host_attach (lua_State *L) {
  gpu_HostArray *h = check_managed(L, "attach");
  int mode = luaL_checkoption(L, 2, NULL, attach_modes);
  CUstream stream = gpu_optstream(L, 3);
  if (stream == NULL) stream = h->ctx->stream;   /* the host's (lua_gpu_use_stream), as launches */
  if (attach_flags[mode] == CU_MEM_ATTACH_SINGLE && stream == NULL)
    return luaL_argerror(L, 3, "mode \"single\" needs a stream");
  gpu_check(L, h->ctx->driver->cuStreamAttachMemAsync(stream, (CUdeviceptr)(uintptr_t)h->data, 0,
                                                      attach_flags[mode]),
            "cuStreamAttachMemAsync");
  lua_settop(L, 1);
  return 1;
}

/* h:prefetch([where[, stream]]): moves h's pages ahead of their use, queued on the stream:
** where "host", a gpu.Device or a device ordinal (default the array's device). */
static int host_prefetch (lua_State *L) {
  gpu_HostArray *h = check_managed(L, "prefetch");
  CUmemLocation location;
  CUstream stream = gpu_optstream(L, 3);
  if (stream == NULL) stream = h->ctx->stream;
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = h->ctx->ordinal;
  if (lua_type(L, 2) == LUA_TSTRING) {
    if (strcmp(lua_tostring(L, 2), "host") != 0)
      return luaL_argerror(L, 2, "\"host\", a gpu.Device or a device ordinal expected");
    location.type = CU_MEM_LOCATION_TYPE_HOST;
    location.id = 0;
  } else if (lua_type(L, 2) == LUA_TUSERDATA) {
    if ((location.id = gpu_device_ordinal_at(L, 2)) < 0)
      return luaL_argerror(L, 2, "\"host\", a gpu.Device or a device ordinal expected");
  } else if (!lua_isnoneornil(L, 2)) {
    int isint;
    lua_Integer ordinal = lua_tointegerx(L, 2, &isint);
    if (!isint || ordinal < 0 || ordinal > INT32_MAX)
      return luaL_argerror(L, 2, "\"host\", a gpu.Device or a device ordinal expected");
    location.id = (int)ordinal;
  }
  if (h->ctx->driver->cuMemPrefetchAsync == NULL)
    return luaL_error(L, "prefetch needs a CUDA 12.2 driver or newer");
  gpu_check(L, h->ctx->driver->cuMemPrefetchAsync((CUdeviceptr)(uintptr_t)h->data,
                                                  h->nbytes ? h->nbytes : 1, location, 0, stream),
            "cuMemPrefetchAsync");
  lua_settop(L, 1);
  return 1;
}

static int host_ptr (lua_State *L) {
  lua_pushlightuserdata(L, gpu_checkhostarray(L, 1)->data);
  return 1;
}

void gpu_host_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"empty", host_empty}, {"zeros", host_empty}, {"ones", host_ones}, {"full", host_full},
    {"from_table", host_from_table}, {"from_bytes", host_from_bytes},
    {"pagelocked_empty", host_pagelocked_empty}, {"pagelocked_zeros", host_pagelocked_empty},
    {"managed_empty", host_managed_empty}, {"managed_zeros", host_managed_empty},
    {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__index", host_index}, {"__newindex", host_newindex}, {"__len", host_len},
    {"__gc", host_free}, {"__close", host_free}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"free", host_free}, {"totable", host_totable}, {"bytes", host_bytes}, {"fill", host_fill},
    {"reshape", host_reshape}, {"is_pagelocked", host_is_pagelocked}, {"ptr", host_ptr},
    {"is_managed", host_is_managed}, {"attach", host_attach}, {"prefetch", host_prefetch},
    {NULL, NULL},
  };
  lua_newtable(L);
  luaL_setfuncs(L, functions, 0);
  lua_setfield(L, -2, "host");
  gpu_newtype(L, GPU_HOSTARRAY, meta, methods);
}
