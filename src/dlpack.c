/*
** dlpack.c: zero-copy exchange of GPUArrays with other libraries through DLPack 1.x
** (versioned managed tensors): a:to_dlpack(), gpu.from_dlpack(x) and the gpu.DLPack capsule.
**
** Export: the tensor lives in a malloc'd record whose deleter may be called from any thread,
** so it never touches Lua: it only marks the record.  The state pins the exported array in a
** registry table until it sees the mark (swept on each DLPack call, at a free of an exported
** allocation, after each collection that device allocations run, and when the state closes).
** The memory is the consumer's until then: a :free() of the producer (the array, its
** a.gpudata, the Buffer under it) while an export is alive makes it dead to Lua, but the
** allocation counts its exports and is released only by the sweep that lets go of the last
** one (memory.c's gpu_buffer_unexport).
** Import: the array gets a Buffer over the producer's memory whose release calls the deleter,
** once, whenever Lua lets go of it.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "dlpack.h"
#include "lua_gpu.h"

#define GPU_DLPACK "gpu.DLPack"

/* The address keys the exports in the registry: looked up without making a string, so the
** sweep of a collection cannot fail. */
static const char exports_key = 'E';

/* A capsule: the tensor until someone consumes it (t == NULL then, consumed set). */
typedef struct gpu_DLPack {
  DLManagedTensorVersioned *t;
  int consumed;
} gpu_DLPack;

typedef struct gpu_DLExport {
  DLManagedTensorVersioned tensor;
  atomic_int holders;     /* the consumer until its deleter, the state until it sees that */
  atomic_int deleted;
  gpu_Buffer *root;       /* the allocation exported (Lua's thread only: the deleter never
                             reads it); alive while the state pins the array */
  int64_t dims[];         /* shape, then strides in elements */
} gpu_DLExport;

/* ---------------------------------------------------------------- dtypes */

static const struct { gpu_DtypeId dtype; uint8_t code; } dl_codes[] = {
  {GPU_BOOL, kDLBool}, {GPU_INT8, kDLInt}, {GPU_UINT8, kDLUInt}, {GPU_INT16, kDLInt},
  {GPU_UINT16, kDLUInt}, {GPU_INT32, kDLInt}, {GPU_UINT32, kDLUInt}, {GPU_INT64, kDLInt},
  {GPU_UINT64, kDLUInt}, {GPU_FLOAT16, kDLFloat}, {GPU_BFLOAT16, kDLBfloat},
  {GPU_FLOAT32, kDLFloat}, {GPU_FLOAT64, kDLFloat}, {GPU_COMPLEX64, kDLComplex},
  {GPU_COMPLEX128, kDLComplex},
};

static DLDataType to_dl (gpu_DtypeId dtype) {
  DLDataType t;
  size_t i;
  t.code = kDLOpaqueHandle;
  for (i = 0; i < sizeof dl_codes / sizeof dl_codes[0]; i++)
    if (dl_codes[i].dtype == dtype) t.code = dl_codes[i].code;
  t.bits = (uint8_t)(gpu_dtypes[dtype].itemsize * 8);
  t.lanes = 1;
  return t;
}

static int from_dl (DLDataType t) {
  size_t i;
  if (t.lanes != 1) return -1;
  for (i = 0; i < sizeof dl_codes / sizeof dl_codes[0]; i++)
    if (dl_codes[i].code == t.code && gpu_dtypes[dl_codes[i].dtype].itemsize * 8 == t.bits)
      return (int)dl_codes[i].dtype;
  return -1;
}

/* ---------------------------------------------------------------- export */

static void export_unhold (gpu_DLExport *e) {
  if (atomic_fetch_sub(&e->holders, 1) == 1) free(e);
}

static void export_deleter (DLManagedTensorVersioned *t) {
  gpu_DLExport *e = (gpu_DLExport *)t->manager_ctx;
  if (atomic_exchange(&e->deleted, 1)) return;      /* a consumer's second call: ignored */
  export_unhold(e);
}

/* Unpins the arrays whose consumers are done (all of them when the state closes), releasing
** the memory their producers freed meanwhile.  Until a pass lets go of none: a release can
** call the deleter of another export (an imported tensor exported again). */
static int sweep_exports (lua_State *L, int all) {
  int live, swept;
  if (!lua_checkstack(L, 5)) return -1;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &exports_key) != LUA_TUSERDATA) {   /* not open yet */
    lua_pop(L, 1);
    return 0;
  }
  lua_getiuservalue(L, -1, 1);
  do {
    live = swept = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      gpu_DLExport *e = (gpu_DLExport *)lua_touserdata(L, -2);
      lua_pop(L, 1);
      if (all || atomic_load(&e->deleted)) {
        gpu_Buffer *root = e->root;    /* still pinned: the entry goes below */
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, -4);              /* clearing a visited field keeps lua_next valid */
        export_unhold(e);
        gpu_buffer_unexport(root);      /* touches no Lua object: gpu_release */
        swept++;
      } else {
        live++;
      }
    }
  } while (swept > 0 && live > 0);
  lua_pop(L, 2);
  return live;
}

int gpu_dlpack_sweep (lua_State *L) {
  return sweep_exports(L, 0);
}

static int exports_gc (lua_State *L) {
  sweep_exports(L, 1);
  return 0;
}

/* _dlpack_exports() -> how many exported arrays wait for their consumer's deleter */
static int gpu_dlpack_exports (lua_State *L) {
  lua_pushinteger(L, sweep_exports(L, 0));
  return 1;
}

static gpu_DLPack *new_capsule (lua_State *L) {
  gpu_DLPack *cap = (gpu_DLPack *)lua_newuserdatauv(L, sizeof(gpu_DLPack), 0);
  cap->t = NULL;                        /* closed until it holds a tensor */
  cap->consumed = 0;
  luaL_setmetatable(L, GPU_DLPACK);
  return cap;
}

/* a:to_dlpack() -> gpu.DLPack capsule of a versioned tensor on a's memory */
static int array_to_dlpack (lua_State *L) {
  gpu_Array *a = gpu_checkarray(L, 1);
  int64_t itemsize = gpu_dtypes[a->dtype].itemsize;
  gpu_DLPack *cap;
  gpu_DLExport *e;
  DLTensor *t;
  int i;
  for (i = 0; i < a->ndim; i++)
    if (a->strides[i] % itemsize != 0)
      return luaL_argerror(L, 1, "strides are not whole elements, which DLPack cannot express");
  sweep_exports(L, 0);
  cap = new_capsule(L);
  a = gpu_checkarray(L, 1);                 /* again: the capsule's allocation ran finalizers */
  e = (gpu_DLExport *)calloc(1, sizeof(gpu_DLExport) + 2 * sizeof(int64_t) * (size_t)a->ndim);
  if (e == NULL) return luaL_error(L, "not enough memory");
  e->tensor.version.major = DLPACK_MAJOR_VERSION;
  e->tensor.version.minor = DLPACK_MINOR_VERSION;
  e->tensor.manager_ctx = e;
  e->tensor.deleter = export_deleter;
  e->tensor.flags = 0;
  t = &e->tensor.dl_tensor;
  t->data = (void *)(uintptr_t)a->ptr;
  t->device.device_type = kDLCUDA;
  t->device.device_id = a->buffer->ctx->ordinal;
  t->ndim = a->ndim;
  t->dtype = to_dl(a->dtype);
  t->shape = e->dims;
  t->strides = e->dims + a->ndim;
  t->byte_offset = 0;
  for (i = 0; i < a->ndim; i++) {
    t->shape[i] = a->shape[i];
    t->strides[i] = a->strides[i] / itemsize;
  }
  atomic_init(&e->holders, 1);          /* the consumer's share, held by the capsule */
  atomic_init(&e->deleted, 0);
  cap->t = &e->tensor;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &exports_key);
  lua_getiuservalue(L, -1, 1);
  lua_pushlightuserdata(L, e);
  lua_pushvalue(L, 1);
  lua_rawset(L, -3);                    /* the array stays alive until the deleter runs */
  atomic_fetch_add(&e->holders, 1);     /* from here on nothing raises: the sweep counts down */
  e->root = a->buffer->root;
  e->root->exports++;                   /* and so does the memory, even through a :free() */
  lua_pop(L, 2);
  return 1;
}

/* a:__dlpack_device__() -> kDLCUDA, device ordinal (the Python array API's pair) */
static int array_dlpack_device (lua_State *L) {
  gpu_Array *a = gpu_checkarray(L, 1);
  lua_pushinteger(L, kDLCUDA);
  lua_pushinteger(L, a->buffer->ctx->ordinal);
  return 2;
}

/* ---------------------------------------------------------------- import */

/* Why t cannot become a GPUArray here (a string pushed), or NULL with *dtype set. */
static const char *check_tensor (lua_State *L, const DLManagedTensorVersioned *t, int *dtype) {
  const DLTensor *x = &t->dl_tensor;
  int i;
  if (t->version.major != DLPACK_MAJOR_VERSION)
    return lua_pushfstring(L, "unsupported DLPack version %d.%d (expected 1.x)",
                           (int)t->version.major, (int)t->version.minor);
  if (x->device.device_type != kDLCUDA)
    return lua_pushfstring(L, "DLPack tensor is not in CUDA device memory (device type %d)",
                           (int)x->device.device_type);
  if ((*dtype = from_dl(x->dtype)) < 0)
    return lua_pushfstring(L, "unsupported DLPack dtype (code %d, %d bits, %d lanes)",
                           (int)x->dtype.code, (int)x->dtype.bits, (int)x->dtype.lanes);
  if (t->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    return "read-only DLPack tensors are not supported (GPUArrays are writable)";
  if (x->ndim < 0 || x->ndim > GPU_MAXDIM)
    return lua_pushfstring(L, "DLPack tensor has %d dimensions (at most %d)", (int)x->ndim,
                           GPU_MAXDIM);
  if (x->ndim > 0 && x->shape == NULL) return "DLPack tensor has no shape";
  for (i = 0; i < x->ndim; i++)
    if (x->shape[i] < 0) return "DLPack tensor has a negative dimension";
  if (x->data == NULL) return "DLPack tensor has a null data pointer";
  return NULL;
}

/* Pushes a GPUArray on t's memory; returns its Buffer (release not set yet) or a reason. */
static gpu_Buffer *import_tensor (lua_State *L, const DLManagedTensorVersioned *t,
                                  const char **why) {
  const DLTensor *x = &t->dl_tensor;
  int64_t strides[GPU_MAXDIM], lo = 0, hi = 0, itemsize;
  int dtype = -1, i, empty = 0;
  gpu_Context *c;
  if ((*why = check_tensor(L, t, &dtype)) != NULL) return NULL;
  c = gpu_context_push(L);
  lua_pop(L, 1);
  if (x->device.device_id != c->ordinal) {
    *why = lua_pushfstring(L, "DLPack tensor is on CUDA device %d, but the current device is %d",
                           (int)x->device.device_id, c->ordinal);
    return NULL;
  }
  itemsize = gpu_dtypes[dtype].itemsize;
  for (i = x->ndim - 1; i >= 0; i--) {  /* byte strides; none given: compact row-major */
    int wrapped = 0;
    if (x->strides != NULL) wrapped = __builtin_mul_overflow(x->strides[i], itemsize, &strides[i]);
    else if (i == x->ndim - 1) strides[i] = itemsize;
    else wrapped = __builtin_mul_overflow(strides[i + 1], x->shape[i + 1] > 0 ? x->shape[i + 1] : 1,
                                          &strides[i]);
    if (wrapped) {
      *why = "DLPack tensor's layout reaches beyond 64-bit byte offsets";
      return NULL;
    }
    empty |= x->shape[i] == 0;
  }
  for (i = 0; i < x->ndim && !empty; i++) {
    int64_t reach;           /* wrapping here would make a huge layout look small */
    if (__builtin_mul_overflow(strides[i], x->shape[i] - 1, &reach) ||
        __builtin_add_overflow(strides[i] > 0 ? hi : lo, reach, strides[i] > 0 ? &hi : &lo) ||
        hi > INT64_MAX + lo - itemsize) {
      *why = "DLPack tensor's layout reaches beyond 64-bit byte offsets";
      return NULL;
    }
  }
  return gpu_push_foreign_array(L, (CUdeviceptr)(uintptr_t)x->data + x->byte_offset +
                                   (CUdeviceptr)lo,
                                empty ? 0 : (size_t)(hi - lo + itemsize), (size_t)-lo,
                                (gpu_DtypeId)dtype, x->ndim, x->shape, strides);
}

static void import_release (void *data) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)data;
  if (t->deleter != NULL) t->deleter(t);
}

/* The live tensor of the capsule at arg (raises for a consumed or freed one). */
static DLManagedTensorVersioned *check_capsule (lua_State *L, int arg) {
  gpu_DLPack *cap = (gpu_DLPack *)luaL_checkudata(L, arg, GPU_DLPACK);
  if (cap->consumed) luaL_argerror(L, arg, "DLPack capsule has already been consumed");
  if (cap->t == NULL) gpu_freed_error(L, arg, "DLPack capsule");
  return cap->t;
}

static void consume (gpu_DLPack *cap) {
  cap->t = NULL;
  cap->consumed = 1;
}

/* from_dlpack(capsule, or an object with a __dlpack__ method) -> GPUArray (zero copy).  Not a
** DLManagedTensorVersioned* as light userdata: Lua can forge one (h:ptr() of bytes laid out
** as a tensor whose deleter is any address), and importing it would call that address.  Raw
** pointers come in through the C API (lua_gpu_push_dlpack), from code the host trusts. */
static int gpu_from_dlpack (lua_State *L) {
  gpu_DLPack *cap = (gpu_DLPack *)luaL_testudata(L, 1, GPU_DLPACK);
  DLManagedTensorVersioned *t;
  const char *why;
  gpu_Buffer *b;
  if (cap == NULL && (lua_type(L, 1) == LUA_TTABLE || lua_type(L, 1) == LUA_TUSERDATA)) {
    if (lua_getfield(L, 1, "__dlpack__") == LUA_TFUNCTION) {   /* a producer: ask it */
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
      lua_replace(L, 1);
      cap = (gpu_DLPack *)luaL_testudata(L, 1, GPU_DLPACK);
    }
    lua_settop(L, 1);
  }
  if (cap != NULL) t = check_capsule(L, 1);
  else if (lua_type(L, 1) == LUA_TLIGHTUSERDATA) {
    return luaL_argerror(L, 1, "a raw DLPack pointer is not taken from Lua (a script could "
                               "forge one): a capsule is, or lua_gpu_push_dlpack in C");
  } else {
    return luaL_typeerror(L, 1, "gpu.DLPack or object with __dlpack__");
  }
  sweep_exports(L, 0);
  if ((b = import_tensor(L, t, &why)) == NULL) return luaL_argerror(L, 1, why);
  if (cap != NULL) consume(cap);
  b->release_data = t;
  b->release = import_release;          /* last: Lua owns the tensor now */
  return 1;
}

/* ---------------------------------------------------------------- gpu.DLPack */

/* cap:pointer() -> light userdata DLManagedTensorVersioned*, handed over to the caller */
static int capsule_pointer (lua_State *L) {
  DLManagedTensorVersioned *t = check_capsule(L, 1);
  consume((gpu_DLPack *)lua_touserdata(L, 1));
  lua_pushlightuserdata(L, t);
  return 1;
}

static int capsule_is_consumed (lua_State *L) {
  lua_pushboolean(L, ((gpu_DLPack *)luaL_checkudata(L, 1, GPU_DLPACK))->consumed);
  return 1;
}

/* __gc, __close and :free(): an unconsumed tensor goes back to its producer */
static int capsule_free (lua_State *L) {
  gpu_DLPack *cap = (gpu_DLPack *)luaL_checkudata(L, 1, GPU_DLPACK);
  DLManagedTensorVersioned *t = cap->t;
  cap->t = NULL;
  if (t != NULL && t->deleter != NULL) t->deleter(t);
  return 0;
}

static int capsule_tostring (lua_State *L) {
  gpu_DLPack *cap = (gpu_DLPack *)luaL_checkudata(L, 1, GPU_DLPACK);
  if (cap->consumed) lua_pushliteral(L, "gpu.DLPack(consumed)");
  else if (cap->t == NULL) lua_pushliteral(L, "gpu.DLPack(freed)");
  else lua_pushfstring(L, "gpu.DLPack(%p)", (void *)cap->t);
  return 1;
}

/* ---------------------------------------------------------------- C API */

static int push_dlpack (lua_State *L) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)lua_touserdata(L, 1);
  const char *why;
  gpu_Buffer *b;
  luaL_requiref(L, "gpu.core", luaopen_gpu_core, 0);
  if (t == NULL) return luaL_error(L, "null DLPack tensor pointer");
  if ((b = import_tensor(L, t, &why)) == NULL) return luaL_error(L, "%s", why);
  b->release_data = t;
  b->release = import_release;
  return 1;
}

int lua_gpu_push_dlpack (lua_State *L, struct DLManagedTensorVersioned *t) {
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  lua_pushcfunction(L, push_dlpack);
  lua_pushlightuserdata(L, t);
  return lua_pcall(L, 1, 1, 0);
}

static int push_capsule (lua_State *L) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)lua_touserdata(L, 1);
  luaL_requiref(L, "gpu.core", luaopen_gpu_core, 0);
  if (t == NULL) return luaL_error(L, "null DLPack tensor pointer");
  new_capsule(L)->t = t;
  return 1;
}

int lua_gpu_push_dlpack_capsule (lua_State *L, struct DLManagedTensorVersioned *t) {
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  lua_pushcfunction(L, push_capsule);
  lua_pushlightuserdata(L, t);
  return lua_pcall(L, 1, 1, 0);
}

/* take(x) -> the tensor of x (a GPUArray, exported; a capsule, consumed) as light userdata */
static int take_dlpack (lua_State *L) {
  luaL_requiref(L, "gpu.core", luaopen_gpu_core, 0);
  lua_pop(L, 1);
  if (gpu_testarray(L, 1) != NULL) {
    lua_pushcfunction(L, array_to_dlpack);
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    lua_replace(L, 1);
  } else if (luaL_testudata(L, 1, GPU_DLPACK) == NULL) {
    return luaL_error(L, "expected a gpu.GPUArray or gpu.DLPack, got %s", luaL_typename(L, 1));
  }
  lua_settop(L, 1);
  return capsule_pointer(L);
}

struct DLManagedTensorVersioned *lua_gpu_to_dlpack (lua_State *L, int idx) {
  DLManagedTensorVersioned *t;
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, 4)) return NULL;
  lua_pushcfunction(L, take_dlpack);
  lua_pushvalue(L, idx);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return NULL;
  t = (DLManagedTensorVersioned *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  return t;
}

/* ---------------------------------------------------------------- open */

void gpu_dlpack_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"from_dlpack", gpu_from_dlpack}, {"_dlpack_exports", gpu_dlpack_exports}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", capsule_free}, {"__close", capsule_free}, {"__tostring", capsule_tostring},
    {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"pointer", capsule_pointer}, {"free", capsule_free}, {"is_consumed", capsule_is_consumed},
    {NULL, NULL},
  };
  static const luaL_Reg array_methods[] = {
    {"to_dlpack", array_to_dlpack}, {"__dlpack__", array_to_dlpack},
    {"__dlpack_device__", array_dlpack_device}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_DLPACK, meta, methods);
  lua_pop(L, 1);
  luaL_getmetatable(L, GPU_ARRAY);
  lua_getfield(L, -1, "__methods");
  luaL_setfuncs(L, array_methods, 0);
  lua_pop(L, 2);
  /* the exported arrays, pinned by a userdata whose finalizer lets go of them all */
  lua_newuserdatauv(L, 0, 1);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_pushcfunction(L, exports_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &exports_key);
}
