/*
** module.c: gpu.Module, a loaded cubin/PTX/fatbin image, and the lookups into it.
**
** The loaded CUmodule belongs to an image (a userdata of its own), which the gpu.Modules on
** it share: module_from_buffer loads an image and returns its first Module, and the compile
** cache hands out another Module on the same image for each repeated SourceModule, so the
** cubin is loaded once while each call still gets a resource of its own to free.  Freeing a
** Module releases its share only; the image is unloaded when no share is left.  The image
** keeps a count of its live shares: an explicit free that drops it to zero unloads at once;
** a collected share leaves that to the image's finalizer (the cache holds images it handed
** out since the last collection, so a Module dropped after each use is not reloaded at each
** cycle), or to the last share finalized after it (Lua finalizes an image and its shares in
** one cycle in any order, and their memory stays valid during it).
**
** Module user values: 1 the Context, 2 a table {signatures = {name = "PPi", ...},
** functions = {}}, 3 the image.  Image user values: 1 the Context, 2 the signatures.
** Signatures come from the Lua layer, which reads them off the kernel source; functions are
** cached per Module so that get_function returns the same object each time.  A Function and a
** global's Buffer look into their Module through its `globals`, a stand-in allocation that
** dies when that Module is freed, whether or not other shares keep the image loaded.
*/
#include <string.h>

#include "gpu.h"

#define GPU_MODULE_IMAGE "gpu.ModuleImage"

struct gpu_ModuleImage {
  CUmodule module;          /* NULL once unloaded */
  gpu_Context *ctx;
  int shares;               /* its Modules neither freed nor finalized */
  int finalized;            /* its own finalizer ran: the last share finalized unloads */
};

static void image_unload (gpu_ModuleImage *img) {
  if (img->module != NULL)
    gpu_release(img->ctx->state, &(gpu_Release){GPU_RELEASE_MODULE, img->ctx, {.module = img->module}});
  img->module = NULL;
}

/* A share of img ends: freed says whether by :free() or <close> (not by the collector). */
static void image_drop_share (gpu_ModuleImage *img, int freed) {
  if (--img->shares == 0 && (freed || img->finalized)) image_unload(img);
}

static int image_gc (lua_State *L) {   /* its metatable is reachable: check what it gets */
  gpu_ModuleImage *img = (gpu_ModuleImage *)luaL_checkudata(L, 1, GPU_MODULE_IMAGE);
  img->finalized = 1;
  if (img->shares == 0) image_unload(img);
  return 0;
}

static gpu_Module *check_module (lua_State *L, int arg) {
  gpu_Module *m = (gpu_Module *)luaL_checkudata(L, arg, GPU_MODULE);
  if (m->module == NULL) gpu_freed_error(L, arg, "module");
  gpu_context_enter(L, m->ctx);
  return m;
}

/* Pushes a new Module on the image at image_idx; returns whether it shares the image, which
** a finalizer run by its allocations may have unloaded (the Module is a freed one then). */
static int push_share (lua_State *L, int image_idx) {
  gpu_ModuleImage *img = (gpu_ModuleImage *)lua_touserdata(L, image_idx);
  gpu_Module *m;
  image_idx = lua_absindex(L, image_idx);
  m = (gpu_Module *)lua_newuserdatauv(L, sizeof(gpu_Module), 3);
  memset(m, 0, sizeof *m);  /* module NULL: a finalizer before the end below drops nothing */
  luaL_setmetatable(L, GPU_MODULE);
  lua_getiuservalue(L, image_idx, 1);
  lua_setiuservalue(L, -2, 1);
  lua_createtable(L, 0, 2);
  lua_getiuservalue(L, image_idx, 2);
  lua_setfield(L, -2, "signatures");
  lua_newtable(L);
  lua_setfield(L, -2, "functions");
  lua_setiuservalue(L, -2, 2);
  gpu_pin(L, -1, image_idx, 3);
  m->ctx = img->ctx;
  m->image = img;
  m->globals.ptr = 1;
  m->globals.size = 0;
  m->globals.root = &m->globals;
  m->globals.ctx = m->ctx;
  if (img->module == NULL) return 0;
  m->module = img->module;  /* the share counts from here on */
  img->shares++;
  return 1;
}

/* module_from_buffer(image[, signatures]) -> Module */
static int gpu_module_from_buffer (lua_State *L) {
  size_t len;
  const char *image = luaL_checklstring(L, 1, &len);
  char log[8192] = "";
  CUjit_option keys[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2];
  gpu_ModuleImage *img;
  CUresult r;
  luaL_argcheck(L, len > 0, 1, "empty module image");
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);         /* slot 2 is the signatures (or nil), never the new module */
  img = (gpu_ModuleImage *)lua_newuserdatauv(L, sizeof(gpu_ModuleImage), 2);
  memset(img, 0, sizeof *img);
  luaL_setmetatable(L, GPU_MODULE_IMAGE);
  img->ctx = gpu_context_push(L);
  lua_setiuservalue(L, -2, 1);
  if (lua_isnoneornil(L, 2)) lua_newtable(L);
  else lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 2);
  values[0] = log;
  values[1] = (void *)(uintptr_t)sizeof log;
  r = gpu_driver(L)->cuModuleLoadDataEx(&img->module, image, 2, keys, values);
  if (r != CUDA_SUCCESS) {
    const char *message = NULL;
    img->module = NULL;
    gpu_driver(L)->cuGetErrorString(r, &message);
    return gpu_raise(L, (int)r, gpu_cuerror_name(r), message ? message : "unknown error",
                     "cuModuleLoadDataEx", log[0] ? log : NULL);
  }
  /* raising from here on (out of memory) leaves the image, shareless, to its finalizer */
  push_share(L, -1);
  return 1;
}

/* module_image(mod) -> the image mod shares (for the compile cache, which keeps images) */
static int gpu_module_image (lua_State *L) {
  luaL_checkudata(L, 1, GPU_MODULE);
  lua_getiuservalue(L, 1, 3);
  return 1;
}

/* module_share(image) -> a new Module on the image, or nil once it has been unloaded */
static int gpu_module_share (lua_State *L) {
  gpu_ModuleImage *img = (gpu_ModuleImage *)luaL_checkudata(L, 1, GPU_MODULE_IMAGE);
  if (img->module == NULL || !push_share(L, 1)) lua_pushnil(L);
  return 1;
}

/* m:free() and <close>: ends this share, at once; the collector's, through module_gc.  While a
** DLPack consumer holds one of its globals, a :free() leaves the unloading to the collector
** too: the export pins this Module, and so the image, until the consumer is done. */
static void end_share (lua_State *L, int freed) {
  gpu_Module *m = (gpu_Module *)luaL_checkudata(L, 1, GPU_MODULE);
  if (m->module != NULL) image_drop_share(m->image, freed && m->globals.exports == 0);
  m->module = NULL;
  m->globals.ptr = 0;       /* every Function and global's Buffer of this Module is dead too */
}

static int module_free (lua_State *L) {
  end_share(L, 1);
  return 0;
}

static int module_gc (lua_State *L) {
  end_share(L, 0);
  return 0;
}

/* Pushes the cached or new Function called name, or returns 0 with the CUresult in *r. */
static int push_function (lua_State *L, int arg, const char *name, CUresult *r) {
  gpu_Module *m = check_module(L, arg);
  CUfunction fn;
  const char *signature;
  lua_getiuservalue(L, arg, 2);
  lua_getfield(L, -1, "functions");
  if (lua_getfield(L, -1, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  *r = gpu_driver(L)->cuModuleGetFunction(&fn, m->module, name);
  if (*r != CUDA_SUCCESS) return 0;
  lua_getfield(L, -2, "signatures");
  lua_getfield(L, -1, name);
  signature = lua_tostring(L, -1);          /* NULL when the source did not tell */
  gpu_function_new(L, arg, fn, name, signature);
  lua_pushvalue(L, -1);
  lua_setfield(L, -5, name);                /* functions[name] = f */
  return 1;
}

static int missing_function (lua_State *L, CUresult r, const char *name) {
  if (r == CUDA_ERROR_NOT_FOUND)
    return luaL_error(L, "no kernel named '%s' in this module (is it __global__ and, in "
                      "C++, extern \"C\"?)", name);
  return gpu_cuerror(L, r, "cuModuleGetFunction");
}

static int module_get_function (lua_State *L) {
  const char *name = luaL_checkstring(L, 2);
  CUresult r = CUDA_SUCCESS;
  if (!push_function(L, 1, name, &r)) return missing_function(L, r, name);
  return 1;
}

/* mod.name: methods first, then kernels */
static int module_index (lua_State *L) {
  const char *name;
  CUresult r = CUDA_SUCCESS;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (lua_type(L, 2) != LUA_TSTRING) return 0;   /* before lua_tostring, which converts */
  name = lua_tostring(L, 2);
  if (!push_function(L, 1, name, &r)) return missing_function(L, r, name);
  return 1;
}

/* mod:get_global(name) -> Buffer, nbytes (for __constant__ and __device__ variables) */
static int module_get_global(lua_State *L) {
  gpu_Module *m = check_module(L, 1);
  const char *name = luaL_checkstring(L, 2);
  CUdeviceptr ptr;
  size_t size;
  gpu_Buffer *b;
  CUresult r = gpu_driver(L)->cuModuleGetGlobal(&ptr, &size, m->module, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return luaL_error(L, "no global named '%s' in this module", name);
  gpu_check(L, r, "cuModuleGetGlobal");
  b = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  memset(b, 0, sizeof *b);
  b->ptr = ptr;
  b->size = size;
  b->root = &m->globals;
  b->ctx = m->ctx;
  b->owned = 0;
  luaL_setmetatable(L, GPU_BUFFER);
  gpu_pin(L, -1, 1, 1);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

/* mod:is_loaded(): false once this Module is freed (other shares of its image may not be) */
static int module_is_loaded (lua_State *L) {
  lua_pushboolean(L, ((gpu_Module *)luaL_checkudata(L, 1, GPU_MODULE))->module != NULL);
  return 1;
}

static int module_tostring (lua_State *L) {
  gpu_Module *m = (gpu_Module *)luaL_checkudata(L, 1, GPU_MODULE);
  if (m->module) lua_pushfstring(L, "gpu.Module(%p)", (void *)m->module);
  else lua_pushliteral(L, "gpu.Module(freed)");
  return 1;
}

void gpu_module_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"module_from_buffer", gpu_module_from_buffer}, {"module_image", gpu_module_image},
    {"module_share", gpu_module_share}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", module_gc}, {"__close", module_free}, {"__index", module_index},
    {"__tostring", module_tostring}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"free", module_free}, {"get_function", module_get_function},
    {"get_global", module_get_global}, {"is_loaded", module_is_loaded}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_MODULE, meta, methods);
  /* the image is no public type: not gpu_newtype, so not in core.types */
  luaL_newmetatable(L, GPU_MODULE_IMAGE);
  lua_pushcfunction(L, image_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}
