/*
** error.c: gpu.Error, the value raised for CUDA and NVRTC failures.
**
** A gpu.Error is a table {code, name, message, call[, log]} with the gpu.Error metatable,
** whose __tostring gives one readable line:
**   cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
** Misuse (bad arguments) raises ordinary string errors instead.
*/
#include <stdio.h>
#include <string.h>

#include "gpu.h"

#define GPU_ERROR "gpu.Error"

const char *gpu_cuerror_name (CUresult r) {
  const gpu_Driver *d = gpu_driver_symbols();
  const char *name = NULL;
  if (d != NULL && d->cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL) return name;
  switch (r) {              /* the ones we raise before a driver exists */
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return "CUDA_ERROR_UNKNOWN";
  }
}

int gpu_raise (lua_State *L, int code, const char *name, const char *message,
               const char *call, const char *log) {
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, code);
  lua_setfield(L, -2, "code");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, message);
  lua_setfield(L, -2, "message");
  lua_pushstring(L, call);
  lua_setfield(L, -2, "call");
  if (log != NULL) {
    lua_pushstring(L, log);
    lua_setfield(L, -2, "log");
  }
  luaL_setmetatable(L, GPU_ERROR);
  return lua_error(L);
}

int gpu_cuerror (lua_State *L, CUresult r, const char *call) {
  const gpu_Driver *d = gpu_driver_symbols();
  const char *message = NULL;
  if (d == NULL || d->cuGetErrorString(r, &message) != CUDA_SUCCESS || message == NULL)
    message = "unknown error";
  return gpu_raise(L, (int)r, gpu_cuerror_name(r), message, call, NULL);
}

/* The first line of a compiler log that reports an error, if any. */
static int first_error_line (lua_State *L, const char *log) {
  const char *p = log;
  while (p != NULL && *p != '\0') {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *hit = strstr(p, "error");
    if (hit != NULL && hit < p + len) {
      lua_pushlstring(L, p, len);
      return 1;
    }
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static int error_tostring (lua_State *L) {
  luaL_Buffer b;
  const char *log;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "call");
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "message");
  lua_getfield(L, 1, "log");
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "%s: %s (%s)", luaL_optstring(L, 2, "?"), luaL_optstring(L, 3, "?"),
                  luaL_optstring(L, 4, "?"));
  luaL_addvalue(&b);
  log = lua_tostring(L, 5);
  if (log != NULL && first_error_line(L, log)) {
    luaL_addstring(&b, ": ");
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

void gpu_error_open (lua_State *L) {
  luaL_newmetatable(L, GPU_ERROR);
  lua_pushcfunction(L, error_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_setfield(L, -2, "Error");     /* core.Error: the Lua layer adds Error.is */
}
