/*
** core.c: luaopen_gpu_core, the per-state data, and small helpers shared by subsystems.
**
** require "gpu.core" returns a table of the C functions of every subsystem plus
** core.types (metatables by short name, so the Lua layer can add methods and printing).
** Nothing here touches the driver: loading succeeds on a machine without a GPU.
*/
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* The address keys the gpu_State in the registry: a key no other code can name. */
static const char state_key = 'S';

gpu_State *gpu_push_state (lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &state_key);
  return (gpu_State *)lua_touserdata(L, -1);
}

gpu_State *gpu_state (lua_State *L) {
  gpu_State *s = gpu_push_state(L);
  lua_pop(L, 1);
  return s;
}

int gpu_checkoptions (lua_State *L, int arg, const char *const known[]) {
  if (lua_isnoneornil(L, arg)) return 0;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, arg) != 0) {
    int i;
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_argerror(L, arg, lua_pushfstring(L, "option keys must be strings, got %s",
                                                   luaL_typename(L, -1)));
    for (i = 0; known[i] != NULL; i++)
      if (strcmp(lua_tostring(L, -1), known[i]) == 0) break;
    if (known[i] == NULL)
      return luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s'", lua_tostring(L, -1)));
  }
  return 1;
}

void gpu_newtype (lua_State *L, const char *tname, const luaL_Reg *meta,
                  const luaL_Reg *methods) {
  const char *shortname = strchr(tname, '.') + 1;
  lua_newtable(L);                              /* methods */
  luaL_newmetatable(L, tname);
  if (methods != NULL) {                        /* upvalues: the methods, the metatable */
    lua_pushvalue(L, -2);
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    luaL_setfuncs(L, methods, 2);
    lua_pop(L, 1);
  }
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "__methods");
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  luaL_setfuncs(L, meta, 2);                    /* the same upvalues */
  if (lua_getfield(L, -1, "__index") == LUA_TNIL) {
    lua_pushvalue(L, -3);
    lua_setfield(L, -3, "__index");
  }
  lua_pop(L, 1);
  lua_remove(L, -2);
  /* core.types[shortname] = metatable; the module table sits below, at types' level */
  lua_getfield(L, LUA_REGISTRYINDEX, "gpu.types");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, shortname);
  lua_pop(L, 1);
}

void gpu_setmetatable (lua_State *L, int mt_idx, const char *tname) {
  if (mt_idx == 0) luaL_setmetatable(L, tname);
  else {
    lua_pushvalue(L, mt_idx);
    lua_setmetatable(L, -2);
  }
}

int gpu_hasmetatable (lua_State *L, int idx, int mt_idx) {
  /* pointers compared: lua_rawequal goes through the VM's general equality, twice the cost */
  const void *mt = lua_topointer(L, mt_idx);
  int is;
  if (!lua_getmetatable(L, idx)) return 0;
  is = mt != NULL && lua_topointer(L, -1) == mt;
  lua_pop(L, 1);
  return is;
}

void *gpu_checkself (lua_State *L, int arg, const char *tname) {
  void *p = lua_touserdata(L, arg);            /* NULL for a table given the metatable */
  if (p != NULL && gpu_hasmetatable(L, arg, lua_upvalueindex(2))) return p;
  return luaL_checkudata(L, arg, tname);       /* the usual check, and its message */
}

int gpu_freed_error (lua_State *L, int arg, const char *what) {
  return luaL_argerror(L, arg, lua_pushfstring(L, "%s has been freed", what));
}

int gpu_state_switch (lua_State *L, int *off) {
  lua_pushboolean(L, !*off);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TBOOLEAN);
    *off = !lua_toboolean(L, 1);
  }
  return 1;
}

void gpu_pin (lua_State *L, int ud, int idx, int n) {
  ud = lua_absindex(L, ud);
  lua_pushvalue(L, idx);
  lua_setiuservalue(L, ud, n);
}

/* Runs last among the module's finalizers at lua_close (see gpu_contexts_release). */
static int state_close (lua_State *L) {
  gpu_State *s = (gpu_State *)lua_touserdata(L, 1);
  while (s->captures > 0) gpu_capture_ended(s);   /* none should be left: streams went first */
  gpu_release_held(s);                  /* before the contexts those releases need */
  gpu_contexts_release(L);
  return 0;
}

static void open_state (lua_State *L) {
  gpu_State *s = (gpu_State *)lua_newuserdatauv(L, sizeof(gpu_State), 0);
  memset(s, 0, sizeof *s);
  s->device = -1;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, state_close);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);              /* marked now, before any object: finalized last */
  lua_rawsetp(L, LUA_REGISTRYINDEX, &state_key);
}

/* Launches tell argument types apart by metatable identity, without registry lookups. */
static void remember_metatables (lua_State *L) {
  static const struct { gpu_ArgKind kind; const char *name; } kinds[] = {
    {GPU_ARG_BUFFER, GPU_BUFFER}, {GPU_ARG_ARRAY, GPU_ARRAY},
    {GPU_ARG_HANDLER, GPU_ARGHANDLER}, {GPU_ARG_SCALAR, GPU_SCALAR},
    {GPU_ARG_TEXTURE, GPU_TEXTURE}, {GPU_ARG_SURFACE, GPU_SURFACE},
  };
  gpu_State *s = gpu_state(L);
  size_t i;
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    luaL_getmetatable(L, kinds[i].name);
    s->metatables[kinds[i].kind] = lua_topointer(L, -1);   /* anchored in the registry */
    lua_pop(L, 1);
  }
  luaL_getmetatable(L, GPU_STREAM);
  s->stream_metatable = lua_topointer(L, -1);
  lua_pop(L, 1);
}

static void (*const subsystems[])(lua_State *L) = {
  gpu_error_open, gpu_dtype_open, gpu_device_open, gpu_memory_open, gpu_host_open,
  gpu_array_open, gpu_elementwise_open, gpu_stream_open,
  gpu_nvrtc_open, gpu_blas_open, gpu_fft_open, gpu_solver_open, gpu_module_open, gpu_link_open,
  gpu_texture_open, gpu_launch_open,
  gpu_kernels_open, gpu_cache_open,
  gpu_dlpack_open,
};

int luaopen_gpu_core (lua_State *L) {
  size_t i;
  luaL_checkversion(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, "gpu.core") == LUA_TTABLE) return 1;  /* once per state */
  lua_pop(L, 1);
  open_state(L);
  lua_newtable(L);                              /* the module */
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "gpu.types");
  lua_setfield(L, -2, "types");
  for (i = 0; i < sizeof subsystems / sizeof subsystems[0]; i++) {
    int top = lua_gettop(L);
    subsystems[i](L);
    lua_settop(L, top);
  }
  remember_metatables(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "gpu.core");
  return 1;
}
