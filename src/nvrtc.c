/*
** nvrtc.c: run-time compilation of CUDA C with NVRTC, loaded lazily on first use.
**
** No GPU is needed here: gpu.compile turns source into PTX or a cubin for any architecture
** NVRTC supports.  The library is found through GPU_NVRTC_LIBRARY, then the versioned
** sonames, then the same names under $CUDA_HOME/lib64 (default /usr/local/cuda).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "gpu.h"

#define GPU_NVRTC_SYMBOLS(X)                                                              \
  X(nvrtcVersion, nvrtcResult, (int *, int *))                                            \
  X(nvrtcGetErrorString, const char *, (nvrtcResult))                                     \
  X(nvrtcGetNumSupportedArchs, nvrtcResult, (int *))                                      \
  X(nvrtcGetSupportedArchs, nvrtcResult, (int *))                                         \
  X(nvrtcCreateProgram, nvrtcResult, (nvrtcProgram *, const char *, const char *, int,    \
                                      const char *const *, const char *const *))          \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram *))                                   \
  X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram, int, const char *const *))           \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *))                        \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char *))                              \
  X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram, size_t *))                               \
  X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram, char *))                                     \
  X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *))                             \
  X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char *))

static struct {
  pthread_once_t once;
#define GPU_NVRTC_FIELD(name, ret, args) ret (*name) args;
  GPU_NVRTC_SYMBOLS(GPU_NVRTC_FIELD)
#undef GPU_NVRTC_FIELD
  int ok;
  char path[512];           /* the library that was loaded */
  char why[1024];           /* why none could be, when ok is 0 */
} nv = { PTHREAD_ONCE_INIT };

static void *open_nvrtc (void) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  const char *env = getenv("GPU_NVRTC_LIBRARY");
  const char *home = getenv("CUDA_HOME");
  void *lib;
  size_t i;
  if (env != NULL && *env != '\0') {
    lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
      snprintf(nv.why, sizeof nv.why, "GPU_NVRTC_LIBRARY=%s cannot be loaded: %s", env, dlerror());
    else snprintf(nv.path, sizeof nv.path, "%s", env);
    return lib;
  }
  if (home == NULL || *home == '\0') home = "/usr/local/cuda";
  for (i = 0; i < 2 * sizeof names / sizeof names[0]; i++) {
    const char *name = names[i % 3];
    if (i >= 3) {
      snprintf(nv.path, sizeof nv.path, "%s/lib64/%s", home, names[i - 3]);
      name = nv.path;
    }
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != NULL) {
      if (name != nv.path) snprintf(nv.path, sizeof nv.path, "%s", name);
      return lib;
    }
  }
  snprintf(nv.why, sizeof nv.why, "NVRTC not found (tried libnvrtc.so.13, .12, libnvrtc.so "
           "and %s/lib64; set GPU_NVRTC_LIBRARY or CUDA_HOME)", home);
  return NULL;
}

static void load_nvrtc (void) {
  void *lib = open_nvrtc();
  if (lib == NULL) return;
#define GPU_NVRTC_RESOLVE(name, ret, args)                                            \
  if ((*(void **)&nv.name = dlsym(lib, #name)) == NULL) {                             \
    snprintf(nv.why, sizeof nv.why, "%s lacks %s", nv.path, #name);                   \
    return;                                                                           \
  }
  GPU_NVRTC_SYMBOLS(GPU_NVRTC_RESOLVE)
#undef GPU_NVRTC_RESOLVE
  nv.ok = 1;
}

static void check_loaded (lua_State *L) {
  pthread_once(&nv.once, load_nvrtc);
  if (!nv.ok) gpu_raise(L, NVRTC_ERROR_INTERNAL_ERROR, "NVRTC_NOT_FOUND", nv.why, "dlopen", NULL);
}

static const char *nvrtc_meaning (nvrtcResult r) {
  switch (r) {
    case NVRTC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case NVRTC_ERROR_PROGRAM_CREATION_FAILURE: return "program creation failed";
    case NVRTC_ERROR_INVALID_INPUT: return "invalid input";
    case NVRTC_ERROR_INVALID_PROGRAM: return "invalid program";
    case NVRTC_ERROR_INVALID_OPTION: return "invalid option";
    case NVRTC_ERROR_COMPILATION: return "compilation failed";
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: return "builtin operation failed";
    default: return "NVRTC failed";
  }
}

static int nvrtc_error (lua_State *L, nvrtcResult r, const char *call, const char *log) {
  return gpu_raise(L, (int)r, nv.nvrtcGetErrorString(r), nvrtc_meaning(r), call, log);
}

#define nvrtc_check(L, r, call) \
  do { nvrtcResult nv_r_ = (r); if (nv_r_ != NVRTC_SUCCESS) nvrtc_error(L, nv_r_, call, NULL); } while (0)

/* ---------------------------------------------------------------- programs */

/* Boxed so that an error anywhere still destroys the program (in __gc). */
#define GPU_PROGRAM "gpu.NvrtcProgram"

static int program_gc (lua_State *L) {
  nvrtcProgram *p = (nvrtcProgram *)luaL_checkudata(L, 1, GPU_PROGRAM);
  if (*p != NULL) nv.nvrtcDestroyProgram(p);
  *p = NULL;
  return 0;
}

/* Pushes the strings of the list option opts[key] (prefixed) and returns how many. */
static int push_string_list (lua_State *L, int opts, const char *key, const char *prefix) {
  int n = 0, i;
  if (lua_getfield(L, opts, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (lua_type(L, -1) != LUA_TTABLE)
    luaL_error(L, "bad option '%s' (a list of strings expected, got %s)", key, luaL_typename(L, -1));
  n = (int)lua_rawlen(L, -1);
  luaL_checkstack(L, n + 2, "too many options");
  for (i = 1; i <= n; i++) {
    if (lua_rawgeti(L, -1 - (i - 1), i) != LUA_TSTRING)
      luaL_error(L, "bad option '%s' (item %d is a %s, not a string)", key, i, luaL_typename(L, -1));
    if (*prefix) {
      lua_pushfstring(L, "%s%s", prefix, lua_tostring(L, -1));
      lua_remove(L, -2);
    }
  }
  lua_remove(L, -1 - n);    /* the list itself */
  return n;
}

/*
** compile(source, opts) -> image, log
** opts: target = "cubin" | "ptx" (default "ptx"), arch ("sm_90", "compute_90"),
** options (list), include_dirs (list), name (file name in messages), headers {name = src}.
*/
static int gpu_compile (lua_State *L) {
  static const char *const known[] = {"target", "arch", "options", "include_dirs", "name",
                                      "headers", NULL};
  size_t srclen;
  const char *src = luaL_checklstring(L, 1, &srclen);
  const char *target = "ptx", *arch = NULL, *name = "kernel.cu";
  int has_opts = gpu_checkoptions(L, 2, known);
  int base, nopts, nheaders = 0, i;
  const char **optv, **header_src = NULL, **header_names = NULL;
  nvrtcProgram *prog;
  nvrtcResult r;
  size_t size;
  char *log, *image;
  (void)srclen;
  check_loaded(L);
  if (has_opts) {
    lua_getfield(L, 2, "target");
    target = luaL_optstring(L, -1, "ptx");
    lua_getfield(L, 2, "arch");
    arch = luaL_optstring(L, -1, NULL);
    lua_getfield(L, 2, "name");
    name = luaL_optstring(L, -1, "kernel.cu");
    lua_pop(L, 3);          /* the strings stay alive in opts */
  }
  if (strcmp(target, "ptx") != 0 && strcmp(target, "cubin") != 0)
    return luaL_argerror(L, 2, lua_pushfstring(L, "target must be 'ptx' or 'cubin', not '%s'", target));
  if (strcmp(target, "cubin") == 0 && (arch == NULL || strncmp(arch, "sm_", 3) != 0))
    return luaL_argerror(L, 2, "a cubin needs a real architecture: arch = 'sm_XY'");
  /* option strings, kept on the stack from base on */
  base = lua_gettop(L) + 1;
  if (arch != NULL) lua_pushfstring(L, "--gpu-architecture=%s", arch);
  if (has_opts) {
    push_string_list(L, 2, "include_dirs", "-I");
    push_string_list(L, 2, "options", "");
  }
  nopts = lua_gettop(L) - base + 1;
  optv = (const char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(nopts + 1), 0);
  for (i = 0; i < nopts; i++) optv[i] = lua_tostring(L, base + i);
  if (has_opts && lua_getfield(L, 2, "headers") != LUA_TNIL) {
    int t = lua_gettop(L);
    luaL_argcheck(L, lua_type(L, t) == LUA_TTABLE, 2, "headers must be a table {name = source}");
    lua_pushnil(L);
    while (lua_next(L, t)) { nheaders++; lua_pop(L, 1); }
    header_src = (const char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(nheaders + 1), 0);
    header_names = (const char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(nheaders + 1), 0);
    nheaders = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        return luaL_argerror(L, 2, "headers must map file names to source strings");
      header_names[nheaders] = lua_tostring(L, -2);
      header_src[nheaders++] = lua_tostring(L, -1);
      lua_pop(L, 1);        /* strings stay referenced by the headers table */
    }
  } else if (has_opts) {
    lua_pop(L, 1);
  }
  prog = (nvrtcProgram *)lua_newuserdatauv(L, sizeof(nvrtcProgram), 0);
  *prog = NULL;
  luaL_setmetatable(L, GPU_PROGRAM);
  nvrtc_check(L, nv.nvrtcCreateProgram(prog, src, name, nheaders, header_src, header_names),
              "nvrtcCreateProgram");
  r = nv.nvrtcCompileProgram(*prog, nopts, optv);
  nvrtc_check(L, nv.nvrtcGetProgramLogSize(*prog, &size), "nvrtcGetProgramLogSize");
  log = (char *)lua_newuserdatauv(L, size + 1, 0);
  nvrtc_check(L, nv.nvrtcGetProgramLog(*prog, log), "nvrtcGetProgramLog");
  log[size] = '\0';
  if (r != NVRTC_SUCCESS) return nvrtc_error(L, r, "nvrtcCompileProgram", log);
  if (strcmp(target, "ptx") == 0) {
    nvrtc_check(L, nv.nvrtcGetPTXSize(*prog, &size), "nvrtcGetPTXSize");
    image = (char *)lua_newuserdatauv(L, size, 0);
    nvrtc_check(L, nv.nvrtcGetPTX(*prog, image), "nvrtcGetPTX");
    if (size > 0) size--;   /* without the final NUL */
  } else {
    nvrtc_check(L, nv.nvrtcGetCUBINSize(*prog, &size), "nvrtcGetCUBINSize");
    image = (char *)lua_newuserdatauv(L, size, 0);
    nvrtc_check(L, nv.nvrtcGetCUBIN(*prog, image), "nvrtcGetCUBIN");
  }
  nv.nvrtcDestroyProgram(prog);
  *prog = NULL;
  lua_pushlstring(L, image, size);
  lua_pushstring(L, log);   /* warnings, if any */
  return 2;
}

/* nvrtc_version() -> major * 1000 + minor * 10, like CUDA_VERSION */
static int gpu_nvrtc_version (lua_State *L) {
  int major, minor;
  check_loaded(L);
  nvrtc_check(L, nv.nvrtcVersion(&major, &minor), "nvrtcVersion");
  lua_pushinteger(L, major * 1000 + minor * 10);
  return 1;
}

/* nvrtc_supported_archs() -> {75, 80, ...} */
static int gpu_nvrtc_supported_archs (lua_State *L) {
  int n, i, *archs;
  check_loaded(L);
  nvrtc_check(L, nv.nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  archs = (int *)lua_newuserdatauv(L, sizeof(int) * (size_t)(n > 0 ? n : 1), 0);
  nvrtc_check(L, nv.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs");
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, archs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int gpu_nvrtc_path (lua_State *L) {
  check_loaded(L);
  lua_pushstring(L, nv.path);
  return 1;
}

void gpu_nvrtc_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"compile", gpu_compile}, {"nvrtc_version", gpu_nvrtc_version},
    {"nvrtc_supported_archs", gpu_nvrtc_supported_archs}, {"nvrtc_path", gpu_nvrtc_path},
    {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  luaL_newmetatable(L, GPU_PROGRAM);
  lua_pushcfunction(L, program_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}
