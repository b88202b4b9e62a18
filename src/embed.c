/*
** embed.c: the C API of lua_gpu.h for hosts that embed Lua: opening the whole module from the
** library itself, handing host-owned device memory to Lua, reading Buffers and GPUArrays
** back, and using the host's context and stream.
**
** The Lua layer (every lua/gpu module) is built in by tools/embed.lua (build/lua_modules.h) and
** registered in package.preload, so a host needs no files besides its own executable.  The API
** functions that can fail run in a protected call and return its status, so a host need not
** set one up; on failure nothing changes hands.
*/
#include <string.h>

#include "gpu.h"
#include "lua_gpu.h"
#include "lua_modules.h"

/* ---------------------------------------------------------------- opening */

static const struct { const char *path, *bytes; size_t length; } lua_modules[] = {
#define X(path, bytes, length) {path, bytes, length},
  GPU_EMBEDDED(X)
#undef X
};

/* "lua/gpu/format.lua" -> "gpu.format", "lua/gpu/init.lua" -> "gpu" */
static void push_module_name (lua_State *L, const char *path) {
  size_t n = strlen(path);
  luaL_Buffer b;
  if (strncmp(path, "lua/", 4) == 0) { path += 4; n -= 4; }
  if (n >= 4 && strcmp(path + n - 4, ".lua") == 0) n -= 4;
  if (n >= 5 && strncmp(path + n - 5, "/init", 5) == 0) n -= 5;
  luaL_buffinit(L, &b);
  for (; n > 0; path++, n--) luaL_addchar(&b, *path == '/' ? '.' : *path);
  luaL_pushresult(&b);
}

/* package.preload loader of an embedded module: upvalue 1 is its index in lua_modules */
static int load_embedded (lua_State *L) {
  size_t i = (size_t)lua_tointeger(L, lua_upvalueindex(1));
  const char *chunkname = lua_pushfstring(L, "@%s", lua_modules[i].path);
  if (luaL_loadbufferx(L, lua_modules[i].bytes, lua_modules[i].length, chunkname, "t") != LUA_OK)
    return lua_error(L);
  lua_pushvalue(L, 1);                  /* module name, as require passes it */
  lua_pushliteral(L, ":preload:");
  lua_call(L, 2, 1);
  return 1;
}

int luaopen_gpu (lua_State *L) {
  size_t i;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "gpu") == LUA_TTABLE) return 1;   /* once per state */
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_gpu_core);
  lua_setfield(L, -2, "gpu.core");
  for (i = 0; i < sizeof lua_modules / sizeof lua_modules[0]; i++) {
    push_module_name(L, lua_modules[i].path);
    lua_pushinteger(L, (lua_Integer)i);
    lua_pushcclosure(L, load_embedded, 1);
    lua_settable(L, -3);
  }
  lua_getfield(L, -1, "gpu");           /* run it as require would, and record it */
  lua_pushliteral(L, "gpu");
  lua_call(L, 1, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "gpu");           /* package.loaded.gpu */
  return 1;
}

/* The API works in any state: it opens the C core if the host has not. */
static void ensure_core (lua_State *L) {
  luaL_requiref(L, "gpu.core", luaopen_gpu_core, 0);
  lua_pop(L, 1);
}

/* Runs fn(args) protected with nresults results; returns its status (message pushed). */
static int protect (lua_State *L, lua_CFunction fn, void *args, int nresults) {
  if (!lua_checkstack(L, 4)) return LUA_ERRMEM;
  lua_pushcfunction(L, fn);
  lua_pushlightuserdata(L, args);
  return lua_pcall(L, 1, nresults, 0);
}

/* ---------------------------------------------------------------- host memory */

gpu_Buffer *gpu_push_foreign_array (lua_State *L, CUdeviceptr base, size_t span, size_t offset,
                                    gpu_DtypeId dtype, int ndim, const int64_t *shape,
                                    const int64_t *strides) {
  gpu_Context *c = gpu_context_push(L);
  gpu_Buffer *b = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  int i;
  memset(b, 0, sizeof *b);              /* no release yet: the caller sets it last */
  luaL_setmetatable(L, GPU_BUFFER);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);          /* the buffer pins its context */
  b->ptr = base;
  b->size = span;
  b->root = b;
  b->ctx = c;
  /* array.c checks the layout fits the span; called directly, not through gpu.core's field,
  ** which a script may have replaced */
  lua_pushcfunction(L, gpu_array_view);
  lua_pushvalue(L, -2);
  lua_pushinteger(L, (lua_Integer)offset);
  lua_pushstring(L, gpu_dtypes[dtype].name);
  lua_createtable(L, ndim, 0);
  for (i = 0; i < ndim; i++) {
    lua_pushinteger(L, (lua_Integer)shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_createtable(L, ndim, 0);
  for (i = 0; i < ndim; i++) {
    lua_pushinteger(L, (lua_Integer)strides[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_call(L, 5, 1);
  ((gpu_Array *)lua_touserdata(L, -1))->owner = 1;   /* its :free() hands the memory back */
  lua_remove(L, -2);                    /* the buffer lives on as the array's user value */
  return b;
}

typedef struct PushArgs {
  uint64_t ptr;
  size_t nbytes;
  const char *dtype;
  int ndim;
  const int64_t *shape, *byte_strides;
  lua_gpu_Release release;
  void *userdata;
} PushArgs;

static int push_buffer (lua_State *L) {
  PushArgs *a = (PushArgs *)lua_touserdata(L, 1);
  gpu_Context *c;
  gpu_Buffer *b;
  ensure_core(L);
  if (a->ptr == 0) return luaL_error(L, "null device pointer");
  c = gpu_context_push(L);
  b = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, GPU_BUFFER);
  lua_insert(L, -2);
  lua_setiuservalue(L, -2, 1);
  b->ptr = (CUdeviceptr)a->ptr;
  b->size = a->nbytes;
  b->root = b;
  b->ctx = c;
  b->release_data = a->userdata;
  b->release = a->release;              /* last: from here on Lua owns the memory */
  return 1;
}

int lua_gpu_push_buffer (lua_State *L, uint64_t ptr, size_t nbytes, lua_gpu_Release release,
                         void *userdata) {
  PushArgs a;
  memset(&a, 0, sizeof a);
  a.ptr = ptr;
  a.nbytes = nbytes;
  a.release = release;
  a.userdata = userdata;
  return protect(L, push_buffer, &a, 1);
}

static int push_array (lua_State *L) {
  PushArgs *a = (PushArgs *)lua_touserdata(L, 1);
  int64_t strides[GPU_MAXDIM], lo = 0, hi = 0, itemsize;
  int dtype, i, empty = 0;
  gpu_Buffer *b;
  ensure_core(L);
  if (a->ptr == 0) return luaL_error(L, "null device pointer");
  if ((dtype = gpu_finddtype(a->dtype ? a->dtype : "?")) < 0)
    return luaL_error(L, "unknown dtype '%s'", a->dtype ? a->dtype : "(null)");
  if (a->ndim < 0 || a->ndim > GPU_MAXDIM)
    return luaL_error(L, "ndim %d out of range (0 to %d)", a->ndim, GPU_MAXDIM);
  if (a->ndim > 0 && a->shape == NULL) return luaL_error(L, "null shape");
  itemsize = gpu_dtypes[dtype].itemsize;
  for (i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] < 0) return luaL_error(L, "negative dimension %d", i + 1);
    if (a->byte_strides) strides[i] = a->byte_strides[i];
    else if (i == a->ndim - 1) strides[i] = itemsize;
    else if (__builtin_mul_overflow(strides[i + 1], a->shape[i + 1] ? a->shape[i + 1] : 1,
                                    &strides[i]))
      return luaL_error(L, "array layout reaches beyond 64-bit byte offsets");
    empty |= a->shape[i] == 0;
  }
  for (i = 0; i < a->ndim && !empty; i++) {   /* the bytes the array can reach, around ptr */
    int64_t reach;           /* wrapping here would make a huge layout look small */
    if (__builtin_mul_overflow(strides[i], a->shape[i] - 1, &reach) ||
        __builtin_add_overflow(strides[i] > 0 ? hi : lo, reach, strides[i] > 0 ? &hi : &lo) ||
        hi > INT64_MAX + lo - itemsize)
      return luaL_error(L, "array layout reaches beyond 64-bit byte offsets");
  }
  b = gpu_push_foreign_array(L, (CUdeviceptr)(a->ptr + (uint64_t)lo),
                             empty ? 0 : (size_t)(hi - lo + itemsize), (size_t)-lo,
                             (gpu_DtypeId)dtype, a->ndim, a->shape, strides);
  b->release_data = a->userdata;
  b->release = a->release;
  return 1;
}

int lua_gpu_push_array (lua_State *L, uint64_t ptr, const char *dtype, int ndim,
                        const int64_t *shape, const int64_t *byte_strides,
                        lua_gpu_Release release, void *userdata) {
  PushArgs a;
  a.ptr = ptr;
  a.nbytes = 0;
  a.dtype = dtype;
  a.ndim = ndim;
  a.shape = shape;
  a.byte_strides = byte_strides;
  a.release = release;
  a.userdata = userdata;
  return protect(L, push_array, &a, 1);
}

int lua_gpu_toview (lua_State *L, int idx, lua_gpu_View *view) {
  gpu_Buffer *b;
  gpu_Array *a;
  int i;
  if (lua_type(L, idx) != LUA_TUSERDATA) return 0;
  if ((a = gpu_testarray(L, idx)) != NULL) {
    if (!gpu_array_alive(a)) return 0;
    memset(view, 0, sizeof *view);
    view->ptr = a->ptr;
    view->itemsize = gpu_dtypes[a->dtype].itemsize;
    view->nbytes = (size_t)a->size * view->itemsize;
    view->dtype = gpu_dtypes[a->dtype].name;
    view->ndim = a->ndim;
    view->is_array = 1;
    view->is_contiguous = a->contiguous;
    for (i = 0; i < a->ndim; i++) {
      view->shape[i] = a->shape[i];
      view->byte_strides[i] = a->strides[i];
    }
    b = a->buffer;
  } else if ((b = gpu_testbuffer(L, idx)) != NULL) {
    if (b->ptr == 0 || b->root == NULL || b->root->ptr == 0) return 0;
    memset(view, 0, sizeof *view);
    view->ptr = b->ptr;
    view->nbytes = b->size;
    view->itemsize = 1;
    view->is_contiguous = 1;
  } else {
    return 0;
  }
  view->device = b->ctx != NULL ? b->ctx->ordinal : -1;
  view->context = b->ctx != NULL ? b->ctx->ctx : NULL;
  return 1;
}

/* ---------------------------------------------------------------- context and stream */

static int use_context (lua_State *L) {
  CUcontext ctx = (CUcontext)lua_touserdata(L, 1);
  ensure_core(L);
  if (ctx == NULL) return luaL_error(L, "null CUDA context");
  gpu_context_adopt(L, ctx);
  return 0;
}

int lua_gpu_use_context (lua_State *L, struct CUctx_st *ctx) {
  return protect(L, use_context, ctx, 0);
}

static int use_stream (lua_State *L) {
  ensure_core(L);
  gpu_context_push(L)->stream = (CUstream)lua_touserdata(L, 1);
  return 0;
}

int lua_gpu_use_stream (lua_State *L, struct CUstream_st *stream) {
  return protect(L, use_stream, stream, 0);
}
