/*
** nvrtc.c: run-time compilation of CUDA C with NVRTC, loaded lazily on first use.
**
** No GPU is needed here: gpu.compile turns source into PTX or a cubin for any architecture
** NVRTC supports.  The library is found through GPU_NVRTC_LIBRARY, then the versioned
** sonames, then the same names under $CUDA_HOME/lib64 (default /usr/local/cuda).
**
** The compile cache keys on nvrtc_identity(): the library's real path, size and mtime.  It is
** found by searching the directories the dynamic loader would (LD_LIBRARY_PATH, ld.so.conf,
** the system directories), without loading NVRTC, so a disk-cache hit costs no dlopen; and
** open_nvrtc loads exactly the file that search found, so the key names the compiler.
*/
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  int tried;                /* load_nvrtc ran: the library was dlopen'ed (or could not be) */
  char path[PATH_MAX];      /* the library that was loaded */
  char why[PATH_MAX + 256]; /* why none could be, when ok is 0 */
} nv = { PTHREAD_ONCE_INIT };

/* The toolkit's headers, found once a process (read-only after): see find_headers. */
static struct {
  pthread_once_t once;
  char dir[PATH_MAX];       /* the toolkit's include directory, "" if none was found */
  int cccl;                 /* it has a cccl directory (CUDA 13's home of cuda/std, cub, ...) */
} headers = { PTHREAD_ONCE_INIT };

static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#define NVRTC_NAME_COUNT (sizeof nvrtc_names / sizeof nvrtc_names[0])

/* ---------------------------------------------------------------- finding the library */

/* Sets found to the real path of dir/name if that is a file; returns whether it is. */
static int try_dir (const char *dir, size_t dirlen, const char *name, char *found) {
  char path[PATH_MAX];
  struct stat st;
  if (dirlen == 0 || (size_t)snprintf(path, sizeof path, "%.*s/%s", (int)dirlen, dir, name) >= sizeof path)
    return 0;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && realpath(path, found) != NULL;
}

/* Searches the directories of an ld.so.conf file (and what it includes) for name. */
static int try_conf (const char *conf, const char *name, char *found, int depth) {
  char line[PATH_MAX];
  int hit = 0;
  FILE *f = depth < 4 ? fopen(conf, "r") : NULL;
  if (f == NULL) return 0;
  while (!hit && fgets(line, sizeof line, f) != NULL) {
    char *p = line, *end;
    end = strchr(p, '#');
    if (end != NULL) *end = '\0';
    while (*p == ' ' || *p == '\t') p++;
    end = p + strlen(p);
    while (end > p && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = '\0';
    if (strncmp(p, "include", 7) == 0 && (p[7] == ' ' || p[7] == '\t')) {
      glob_t g;
      size_t i;
      for (p += 8; *p == ' ' || *p == '\t'; p++) {}
      if (glob(p, 0, NULL, &g) == 0) {
        for (i = 0; !hit && i < g.gl_pathc; i++) hit = try_conf(g.gl_pathv[i], name, found, depth + 1);
      }
      globfree(&g);
    } else if (*p == '/') {
      hit = try_dir(p, strlen(p), name, found);
    }
  }
  fclose(f);
  return hit;
}

/* Searches for name where dlopen would: LD_LIBRARY_PATH, ld.so.conf, the system dirs. */
static int search_library (const char *name, char *found) {
  static const char *const system_dirs[] = {"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  const char *dirs = getenv("LD_LIBRARY_PATH");
  size_t i;
  if (strchr(name, '/') != NULL) return realpath(name, found) != NULL;
  while (dirs != NULL && *dirs != '\0') {
    size_t len = strcspn(dirs, ":;");
    if (try_dir(dirs, len, name, found)) return 1;
    dirs += len;
    if (*dirs != '\0') dirs++;
  }
  if (try_conf("/etc/ld.so.conf", name, found, 0)) return 1;
  for (i = 0; i < sizeof system_dirs / sizeof system_dirs[0]; i++)
    if (try_dir(system_dirs[i], strlen(system_dirs[i]), name, found)) return 1;
  return 0;
}

/* The file a library's loader would open, in its order: the environment variable env_var
** (a name or path), else names, else the same names under $CUDA_HOME/lib64 (default
** /usr/local/cuda); 0 when the search finds none (the loader then still asks dlopen, which
** also knows ld.so.cache entries outside these directories). */
int gpu_find_library (const char *env_var, const char *const *names, size_t count, char *found) {
  const char *env = getenv(env_var);
  const char *home = getenv("CUDA_HOME");
  size_t i;
  if (env != NULL && *env != '\0') return search_library(env, found);
  for (i = 0; i < count; i++)
    if (search_library(names[i], found)) return 1;
  if (home == NULL || *home == '\0') home = "/usr/local/cuda";
  for (i = 0; i < count; i++) {
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/lib64", home) < sizeof path
        && try_dir(path, strlen(path), names[i], found))
      return 1;
  }
  return 0;
}

static int find_nvrtc (char *found) {
  return gpu_find_library("GPU_NVRTC_LIBRARY", nvrtc_names, NVRTC_NAME_COUNT, found);
}

/*
** dlopen's a CUDA library as lua-gpu looks for one: the file gpu_find_library finds, else
** $env_var as given (it may name something only dlopen knows), else names and the same under
** $CUDA_HOME/lib64 as dlopen finds them.  path (PATH_MAX bytes) gets what was loaded; on
** failure why (why_size bytes) says what was tried, what names the library in messages.
*/
void *gpu_open_library (const char *what, const char *env_var, const char *const *names,
                        size_t count, char *path, char *why, size_t why_size) {
  const char *env = getenv(env_var);
  const char *home = getenv("CUDA_HOME");
  char tried[512] = "";
  void *lib;
  size_t i;
  if (gpu_find_library(env_var, names, count, path) &&
      (lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL)
    return lib;
  if (env != NULL && *env != '\0') {
    if ((lib = dlopen(env, RTLD_NOW | RTLD_LOCAL)) == NULL)
      snprintf(why, why_size, "%s=%s cannot be loaded: %s", env_var, env, dlerror());
    else snprintf(path, PATH_MAX, "%s", env);
    return lib;
  }
  if (home == NULL || *home == '\0') home = "/usr/local/cuda";
  for (i = 0; i < 2 * count; i++) {     /* ld.so.cache entries the search missed */
    if (i < count) snprintf(path, PATH_MAX, "%s", names[i]);
    else snprintf(path, PATH_MAX, "%s/lib64/%s", home, names[i - count]);
    if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL) return lib;
  }
  for (i = 0; i < count; i++)
    snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", i ? ", " : "", names[i]);
  snprintf(why, why_size, "%s not found (tried %s and %s/lib64; set %s or CUDA_HOME)", what,
           tried, home, env_var);
  path[0] = '\0';
  return NULL;
}

static void *open_nvrtc (void) {
  return gpu_open_library("NVRTC", "GPU_NVRTC_LIBRARY", nvrtc_names, NVRTC_NAME_COUNT, nv.path,
                          nv.why, sizeof nv.why);
}

/* Whether dir (its first len bytes) + "/include" holds cuda_fp16.h; if so it goes to headers. */
static int try_headers (const char *dir, size_t len) {
  char file[PATH_MAX];
  struct stat st;
  if (len == 0 || (size_t)snprintf(file, sizeof file, "%.*s/include/cuda_fp16.h", (int)len, dir) >= sizeof file ||
      stat(file, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  snprintf(headers.dir, sizeof headers.dir, "%.*s/include", (int)len, dir);
  headers.cccl = (size_t)snprintf(file, sizeof file, "%.*s/include/cccl", (int)len, dir) < sizeof file &&
                 stat(file, &st) == 0 && S_ISDIR(st.st_mode);
  return 1;
}

/*
** The CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h, ...), which NVRTC does not
** search by itself, as CuPy's compiler adds them: so a kernel may include what nvcc would
** find.  Beside the NVRTC library that loading would open (lib64/.. or targets/<arch>/lib/..;
** found without loading it, so the compile cache's key may name them on a hit), else under
** $CUDA_HOME, else /usr/local/cuda; none when no such directory has cuda_fp16.h.
*/
static void find_headers (void) {
  char path[PATH_MAX];
  const char *home = getenv("CUDA_HOME");
  if (find_nvrtc(path)) {
    const char *slash = strrchr(path, '/');
    size_t len = slash != NULL ? (size_t)(slash - path) : 0;    /* the library's directory */
    while (len > 0 && path[len - 1] != '/') len--;               /* ... and its parent */
    if (len > 1 && try_headers(path, len - 1)) return;
  }
  if (home != NULL && *home != '\0' && try_headers(home, strlen(home))) return;
  try_headers("/usr/local/cuda", strlen("/usr/local/cuda"));
}

const char *gpu_cuda_include_dir (void) {
  pthread_once(&headers.once, find_headers);
  return headers.dir[0] != '\0' ? headers.dir : NULL;
}

static void load_nvrtc (void) {
  void *lib = open_nvrtc();
  __atomic_store_n(&nv.tried, 1, __ATOMIC_RELEASE);
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

/*
** NVRTC takes C strings: a zero byte inside one (a source read as UTF-16, say) would silently
** cut it short, so the strings handed over are checked for one.
*/
static int has_zero (lua_State *L, int idx) {
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  return strlen(s) != len;
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
    if (has_zero(L, -1))
      luaL_argerror(L, opts, lua_pushfstring(L, "option '%s' item %d contains a zero byte", key, i));
    if (*prefix) {
      lua_pushfstring(L, "%s%s", prefix, lua_tostring(L, -1));
      lua_remove(L, -2);
    }
  }
  lua_remove(L, -1 - n);    /* the list itself */
  return n;
}

/*
** opts[key] (opts at 2) as a string, or def when absent.  Only real strings: one converted
** from a number would live only on the stack, and the pointer must outlive the pop.
*/
static const char *string_option (lua_State *L, const char *key, const char *def) {
  const char *s = def;
  int t;
  lua_pushstring(L, key);
  t = lua_rawget(L, 2);        /* raw: a string an __index made would not stay in opts */
  if (t == LUA_TSTRING && has_zero(L, -1))
    luaL_argerror(L, 2, lua_pushfstring(L, "option '%s' contains a zero byte", key));
  if (t == LUA_TSTRING) s = lua_tostring(L, -1);      /* stays alive in opts */
  else if (t != LUA_TNIL)
    luaL_argerror(L, 2, lua_pushfstring(L, "option '%s' must be a string, got %s", key,
                                        luaL_typename(L, -1)));
  lua_pop(L, 1);
  return s;
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
  luaL_argcheck(L, strlen(src) == srclen, 1, "source contains a zero byte");
  check_loaded(L);
  if (has_opts) {
    target = string_option(L, "target", "ptx");
    arch = string_option(L, "arch", NULL);
    name = string_option(L, "name", "kernel.cu");
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
  if (gpu_cuda_include_dir() != NULL) {          /* searched last */
    lua_pushfstring(L, "-I%s", headers.dir);
    if (headers.cccl) lua_pushfstring(L, "-I%s/cccl", headers.dir);
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
      if (has_zero(L, -2) || has_zero(L, -1))
        return luaL_argerror(L, 2, lua_pushfstring(L, "header '%s' contains a zero byte",
                                                   lua_tostring(L, -2)));
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

/* cuda_include_dir() -> the toolkit's include directory every compile searches last, or nil */
static int cuda_include_dir (lua_State *L) {
  lua_pushstring(L, gpu_cuda_include_dir());   /* nil for NULL */
  return 1;
}

static int gpu_nvrtc_path (lua_State *L) {
  check_loaded(L);
  lua_pushstring(L, nv.path);
  return 1;
}

/* nvrtc_loaded() -> whether this process has loaded (or tried to load) NVRTC */
static int gpu_nvrtc_loaded (lua_State *L) {
  lua_pushboolean(L, __atomic_load_n(&nv.tried, __ATOMIC_ACQUIRE));
  return 1;
}

/*
** nvrtc_identity() -> "path size mtime" of the NVRTC library compiling here (loaded, or the
** one that would be), without loading it when the search finds the file; else NVRTC is
** loaded and named by its path and version.  The compile cache keys on it.
*/
static int gpu_nvrtc_identity (lua_State *L) {
  char found[PATH_MAX];
  struct stat st;
  int major, minor;
  if (__atomic_load_n(&nv.tried, __ATOMIC_ACQUIRE) && nv.ok) {
    if (realpath(nv.path, found) == NULL) snprintf(found, sizeof found, "%s", nv.path);
  } else if (!find_nvrtc(found)) {
    found[0] = '\0';
  }
  if (found[0] != '\0' && found[0] == '/' && stat(found, &st) == 0) {
    lua_pushfstring(L, "%s %I %I.%d", found, (lua_Integer)st.st_size, (lua_Integer)st.st_mtim.tv_sec,
                    (int)st.st_mtim.tv_nsec);
    return 1;
  }
  check_loaded(L);
  nvrtc_check(L, nv.nvrtcVersion(&major, &minor), "nvrtcVersion");
  lua_pushfstring(L, "%s version %d.%d", nv.path, major, minor);
  return 1;
}

void gpu_nvrtc_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"compile", gpu_compile}, {"nvrtc_version", gpu_nvrtc_version},
    {"nvrtc_supported_archs", gpu_nvrtc_supported_archs}, {"nvrtc_path", gpu_nvrtc_path},
    {"cuda_include_dir", cuda_include_dir},
    {"nvrtc_loaded", gpu_nvrtc_loaded}, {"nvrtc_identity", gpu_nvrtc_identity},
    {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  luaL_newmetatable(L, GPU_PROGRAM);
  lua_pushcfunction(L, program_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}
