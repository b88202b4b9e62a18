/*
** link.c: gpu.link, the driver's JIT linker (cuLink*) over relocatable device code, as
** cuda.core's Linker and PyCUDA's DynamicModule: images compiled with "-rdc=true" (PTX or
** cubin), fatbins and static libraries such as the toolkit's cudadevrt (which kernels that
** launch kernels need) become one cubin, for gpu.module_from_buffer.
*/
#include <string.h>
#include <sys/stat.h>

#include "gpu.h"

/* Boxed so that an error anywhere still destroys the link state (in __gc). */
#define GPU_LINK_STATE "gpu.LinkState"

typedef struct gpu_LinkState {
  CUlinkState state;        /* NULL once destroyed */
  const gpu_Driver *driver;
} gpu_LinkState;

static int link_state_gc (lua_State *L) {
  gpu_LinkState *s = (gpu_LinkState *)luaL_checkudata(L, 1, GPU_LINK_STATE);
  if (s->state != NULL) s->driver->cuLinkDestroy(s->state);
  s->state = NULL;
  return 0;
}

static const char *const input_names[] = {"ptx", "cubin", "fatbin", "object", "library", NULL};
static const CUjitInputType input_types[] = {CU_JIT_INPUT_PTX, CU_JIT_INPUT_CUBIN,
                                             CU_JIT_INPUT_FATBINARY, CU_JIT_INPUT_OBJECT,
                                             CU_JIT_INPUT_LIBRARY};

/* What an image is by its first bytes: an ELF file (a cubin), a fatbin, else PTX text. */
static CUjitInputType sniff (const char *data, size_t len) {
  static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba};
  if (len >= 4 && memcmp(data, "\x7f" "ELF", 4) == 0) return CU_JIT_INPUT_CUBIN;
  if (len >= 4 && memcmp(data, fatbin_magic, 4) == 0) return CU_JIT_INPUT_FATBINARY;
  return CU_JIT_INPUT_PTX;
}

/* Sets path to the static library `name`: itself if it names a file (has a '/'), else
** lib<name>.a under the toolkit's lib64 or lib (the directory beside gpu.cuda_include_dir()). */
static int find_library (const char *name, char *path, size_t size) {
  static const char *const dirs[] = {"lib64", "lib"};
  const char *include = gpu_cuda_include_dir();
  struct stat st;
  size_t i, root;
  if (strchr(name, '/') != NULL)
    return (size_t)snprintf(path, size, "%s", name) < size && stat(path, &st) == 0;
  if (include == NULL || (root = strlen(include)) < 8) return 0;
  root -= 8;                                    /* without "/include" */
  for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if ((size_t)snprintf(path, size, "%.*s/%s/lib%s.a", (int)root, include, dirs[i], name) < size &&
        stat(path, &st) == 0 && S_ISREG(st.st_mode))
      return 1;
  return 0;
}

/* Raises the linker's failure as a gpu.Error with its log. */
static int link_error (lua_State *L, const gpu_Driver *d, CUresult r, const char *call,
                       const char *log) {
  const char *message = NULL;
  d->cuGetErrorString(r, &message);
  return gpu_raise(L, (int)r, gpu_cuerror_name(r), message ? message : "unknown error", call,
                   log[0] ? log : NULL);
}

/*
** link(inputs[, {libraries = {...}}]) -> cubin
** inputs: a list of images (strings: PTX, cubin or fatbin, told apart by their first bytes)
** or tables {data = image, type = "ptx" | "cubin" | "fatbin" | "object" | "library",
** name = "for messages"}; libraries: names ("cudadevrt") or paths of static libraries.
*/
static int gpu_link (lua_State *L) {
  static const char *const known[] = {"libraries", NULL};
  char log[8192] = "", path[4096];
  CUjit_option keys[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, (void *)(uintptr_t)sizeof log}, *cubin = NULL;
  lua_Integer i, n;
  size_t size = 0;
  const gpu_Driver *d;
  gpu_LinkState *s;
  CUresult r;
  luaL_checktype(L, 1, LUA_TTABLE);
  n = (lua_Integer)lua_rawlen(L, 1);
  luaL_argcheck(L, n >= 1, 1, "a list of one or more images expected");
  gpu_checkoptions(L, 2, known);
  lua_settop(L, 2);
  d = gpu_driver(L);
  s = (gpu_LinkState *)lua_newuserdatauv(L, sizeof(gpu_LinkState), 0);   /* at 3 */
  s->state = NULL;
  s->driver = d;
  luaL_setmetatable(L, GPU_LINK_STATE);
  gpu_context_push(L);                          /* the linker targets the current device */
  r = d->cuLinkCreate(2, keys, values, &s->state);
  if (r != CUDA_SUCCESS) {
    s->state = NULL;
    return link_error(L, d, r, "cuLinkCreate", log);
  }
  for (i = 1; i <= n; i++) {
    const char *data, *name = "image";
    size_t len;
    CUjitInputType type;
    int t = lua_rawgeti(L, 1, i);
    if (t == LUA_TTABLE) {
      int item = lua_gettop(L);
      if (lua_getfield(L, item, "data") != LUA_TSTRING)
        return luaL_argerror(L, 1, lua_pushfstring(L, "item %I: data must be a string", i));
      data = lua_tolstring(L, -1, &len);
      if (lua_getfield(L, item, "type") == LUA_TNIL) {
        type = sniff(data, len);
      } else {
        const char *want = lua_tostring(L, -1);
        int k;
        for (k = 0; want != NULL && input_names[k] != NULL; k++)
          if (strcmp(want, input_names[k]) == 0) break;
        if (want == NULL || input_names[k] == NULL)
          return luaL_argerror(L, 1, lua_pushfstring(L, "item %I: type must be \"ptx\", \"cubin\", "
                                                     "\"fatbin\", \"object\" or \"library\"", i));
        type = input_types[k];
      }
      if (lua_getfield(L, item, "name") == LUA_TSTRING) name = lua_tostring(L, -1);
    } else if (t == LUA_TSTRING) {
      data = lua_tolstring(L, -1, &len);
      type = sniff(data, len);
    } else {
      return luaL_argerror(L, 1, lua_pushfstring(L, "item %I: an image (string) or {data =, type =} "
                                                 "expected, got %s", i, luaL_typename(L, -1)));
    }
    if (len == 0) return luaL_argerror(L, 1, lua_pushfstring(L, "item %I is empty", i));
    /* PTX is text the linker reads up to its NUL, which a Lua string has after its end */
    r = d->cuLinkAddData(s->state, type, (void *)data, type == CU_JIT_INPUT_PTX ? len + 1 : len,
                         name, 0, NULL, NULL);
    if (r != CUDA_SUCCESS) return link_error(L, d, r, "cuLinkAddData", log);
    lua_settop(L, 3);
  }
  if (!lua_isnil(L, 2) && lua_getfield(L, 2, "libraries") != LUA_TNIL) {
    int list = lua_gettop(L);
    if (lua_type(L, list) == LUA_TSTRING) {     /* one library */
      lua_createtable(L, 1, 0);
      lua_pushvalue(L, list);
      lua_rawseti(L, -2, 1);
      list = lua_gettop(L);
    }
    luaL_argcheck(L, lua_type(L, list) == LUA_TTABLE, 2, "option 'libraries' must be a list of names");
    for (i = 1; i <= (lua_Integer)lua_rawlen(L, list); i++) {
      const char *name;
      if (lua_rawgeti(L, list, i) != LUA_TSTRING)
        return luaL_argerror(L, 2, lua_pushfstring(L, "option 'libraries' item %I must be a string", i));
      name = lua_tostring(L, -1);
      if (!find_library(name, path, sizeof path))
        return luaL_argerror(L, 2, strchr(name, '/') != NULL || gpu_cuda_include_dir() == NULL
                                   ? lua_pushfstring(L, "library '%s' not found", name)
                                   : lua_pushfstring(L, "library '%s' not found beside %s", name,
                                                     gpu_cuda_include_dir()));
      r = d->cuLinkAddFile(s->state, CU_JIT_INPUT_LIBRARY, path, 0, NULL, NULL);
      if (r != CUDA_SUCCESS) return link_error(L, d, r, "cuLinkAddFile", log);
      lua_pop(L, 1);
    }
  }
  r = d->cuLinkComplete(s->state, &cubin, &size);
  if (r != CUDA_SUCCESS) return link_error(L, d, r, "cuLinkComplete", log);
  lua_pushlstring(L, (const char *)cubin, size);   /* the state owns cubin: copied first */
  d->cuLinkDestroy(s->state);
  s->state = NULL;
  return 1;
}

void gpu_link_open (lua_State *L) {
  static const luaL_Reg functions[] = {{"link", gpu_link}, {NULL, NULL}};
  luaL_setfuncs(L, functions, 0);
  luaL_newmetatable(L, GPU_LINK_STATE);
  lua_pushcfunction(L, link_state_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}
