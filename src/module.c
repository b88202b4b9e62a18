/*
** module.c: gpu.Module, a loaded cubin/PTX/fatbin image, and the lookups into it.
**
** User values: 1 the Context, 2 a table {signatures = {name = "PPi", ...}, functions = {}}.
** Signatures come from the Lua layer, which reads them off the kernel source; functions are
** cached so that get_function returns the same object each time.  A global's Buffer looks
** into the module through `globals`, a stand-in allocation that dies when the module does.
*/
#include <string.h>

#include "gpu.h"

static gpu_Module *check_module (lua_State *L, int arg) {
  gpu_Module *m = (gpu_Module *)luaL_checkudata(L, arg, GPU_MODULE);
  if (m->module == NULL) gpu_freed_error(L, arg, "module");
  gpu_context_enter(L, m->ctx);
  return m;
}

/* module_from_buffer(image[, signatures]) -> Module */
static int gpu_module_from_buffer (lua_State *L) {
  size_t len;
  const char *image = luaL_checklstring(L, 1, &len);
  char log[8192] = "";
  CUjit_option keys[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2];
  gpu_Module *m;
  CUresult r;
  luaL_argcheck(L, len > 0, 1, "empty module image");
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);         /* slot 2 is the signatures (or nil), never the new module */
  m = (gpu_Module *)lua_newuserdatauv(L, sizeof(gpu_Module), 2);
  memset(m, 0, sizeof *m);
  luaL_setmetatable(L, GPU_MODULE);
  m->ctx = gpu_context_push(L);
  lua_setiuservalue(L, -2, 1);
  lua_createtable(L, 0, 2);
  if (lua_isnoneornil(L, 2)) lua_newtable(L);
  else lua_pushvalue(L, 2);
  lua_setfield(L, -2, "signatures");
  lua_newtable(L);
  lua_setfield(L, -2, "functions");
  lua_setiuservalue(L, -2, 2);
  values[0] = log;
  values[1] = (void *)(uintptr_t)sizeof log;
  r = gpu_driver(L)->cuModuleLoadDataEx(&m->module, image, 2, keys, values);
  if (r != CUDA_SUCCESS) {
    const char *message = NULL;
    m->module = NULL;
    gpu_driver(L)->cuGetErrorString(r, &message);
    return gpu_raise(L, (int)r, gpu_cuerror_name(r), message ? message : "unknown error",
                     "cuModuleLoadDataEx", log[0] ? log : NULL);
  }
  m->globals.ptr = 1;
  m->globals.size = 0;
  m->globals.root = &m->globals;
  m->globals.ctx = m->ctx;
  return 1;
}

static int module_free (lua_State *L) {
  gpu_Module *m = (gpu_Module *)luaL_checkudata(L, 1, GPU_MODULE);
  if (m->module != NULL)
    gpu_release(m->ctx->state, &(gpu_Release){GPU_RELEASE_MODULE, m->ctx, {.module = m->module}});
  m->module = NULL;
  m->globals.ptr = 0;       /* every global's Buffer is now dead too */
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

/* mod:is_loaded(): false once freed (the compile cache asks before handing it out again) */
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
    {"module_from_buffer", gpu_module_from_buffer}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", module_free}, {"__close", module_free}, {"__index", module_index},
    {"__tostring", module_tostring}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"free", module_free}, {"get_function", module_get_function},
    {"get_global", module_get_global}, {"is_loaded", module_is_loaded}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_MODULE, meta, methods);
}
