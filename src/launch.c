/*
** launch.c: gpu.Function (a kernel and its parameter layout), kernel launches, prepared
** calls, typed scalars (gpu.int32(x), ...) and the argument handlers In/Out/InOut.
**
** A Function knows each parameter's offset and size from cuFuncGetParamInfo where the driver
** has it, and its type from the kernel's __global__ declaration (read by the Lua layer) or
** from prepare().  Arguments are converted and range-checked into a packed buffer sized once
** per function, which is handed to cuLaunchKernel as CU_LAUNCH_PARAM_BUFFER_POINTER: the
** launch path allocates nothing unless In/Out/InOut handlers need device copies.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/*
** Parameter types beyond the dtypes: a device pointer, bytes passed by value, and a parameter
** whose size the driver told but whose type nobody did (a module without signatures): the
** argument's own kind decides, as long as its size is the parameter's.
*/
enum { GPU_PARAM_POINTER = GPU_NDTYPES, GPU_PARAM_BYVALUE, GPU_PARAM_UNKNOWN, GPU_PARAM_NTYPES };

typedef struct gpu_Param {
  size_t offset, size;
  int type;
} gpu_Param;

typedef struct gpu_Function {
  CUfunction fn;
  gpu_Context *ctx;
  const gpu_Buffer *module;   /* the module's liveness flag (its globals root) */
  int nparams;                /* -1: unknown, laid out from the arguments at each call */
  int sizes_known;            /* offsets and sizes came from the driver */
  int sized_by_arguments;     /* by-value parameters of unknown size: each call lays them out */
  int declared;               /* the source declared its parameters (SourceModule's signature) */
  gpu_Param *params;          /* in the layout userdata, user value 2 */
  unsigned char *argbuf;      /* ditto */
  size_t argbuf_size;
  char name[64];
} gpu_Function;

/* In/Out/InOut */
enum { GPU_IN = 1, GPU_OUT = 2, GPU_INOUT = 3 };
typedef struct gpu_ArgHandler { int direction; } gpu_ArgHandler;

typedef struct gpu_Scalar {
  gpu_DtypeId dtype;
  unsigned char bytes[GPU_MAX_ITEMSIZE];
} gpu_Scalar;

/* Where a launch goes and how it is configured. */
typedef struct gpu_LaunchConfig {
  unsigned grid[3], block[3], shared;
  CUstream stream;
  int stream_idx;           /* stack index of the gpu.Stream, 0 for the default stream */
  gpu_Stream *stream_obj;   /* the gpu.Stream there, NULL for the default stream */
  int timed;
  int cooperative;          /* a cooperative launch: the grid may sync (cooperative groups) */
  unsigned cluster[3];      /* thread block clusters of these dimensions; 0: none */
} gpu_LaunchConfig;

/* The largest parameter buffer CUDA accepts (12.1+ on Volta and later). */
#define GPU_MAX_PARAM_BYTES 32764

static const char param_letters[] = "?bBhHiIqQeEfdFDPVV";  /* index = param type */

static int letter_type (int c) {
  const char *p;
  switch (c) {                     /* Python struct letters with LP64 sizes */
    case 'l': c = 'q'; break;
    case 'L': c = 'Q'; break;
    case 'n': c = 'q'; break;
    case 'N': c = 'Q'; break;
    case 'c': c = 'b'; break;
  }
  p = c ? strchr(param_letters, c) : NULL;
  return p ? (int)(p - param_letters) : -1;
}

static size_t type_size (int type) {
  return type == GPU_PARAM_POINTER ? sizeof(CUdeviceptr)
       : type < GPU_NDTYPES ? gpu_dtypes[type].itemsize : 0;
}

static const char *type_name (int type) {
  return type == GPU_PARAM_POINTER ? "pointer"
       : type == GPU_PARAM_BYVALUE ? "struct (by value)"
       : type == GPU_PARAM_UNKNOWN ? "unknown type" : gpu_dtypes[type].name;
}

static size_t align_up (size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Natural alignment of a by-value argument of n bytes (at most 8, a power of two). */
static size_t natural_alignment (size_t n) {
  size_t a = 8;
  while (a > 1 && n % a != 0) a /= 2;
  return a;
}

/* ---------------------------------------------------------------- layouts */

/*
** Builds the parameter table from the driver's layout (if any) and a type string (if any):
** one userdata holding params[] and the packed argument buffer, pinned as user value 2.
*/
static void set_layout (lua_State *L, int fidx, gpu_Function *f, const char *types,
                        const size_t *offsets, const size_t *sizes, int ndriver) {
  int n = ndriver >= 0 ? ndriver : (types ? (int)strlen(types) : -1);
  size_t bytes = 0, off = 0;
  int i;
  unsigned char *block;
  if (types != NULL && ndriver >= 0 && (int)strlen(types) != ndriver) types = NULL;
  if (ndriver < 0) {        /* a signature the driver cannot check must still fit argbuf */
    for (i = 0; i < n; i++) {
      int type = letter_type((unsigned char)types[i]);
      size_t size = type_size(type < 0 ? GPU_PARAM_BYVALUE : type);
      off = align_up(off, natural_alignment(size)) + size;
      if (off > GPU_MAX_PARAM_BYTES)
        luaL_error(L, "parameters of '%s' take more than %d bytes", f->name, GPU_MAX_PARAM_BYTES);
    }
    off = 0;
  }
  block = (unsigned char *)lua_newuserdatauv(L, sizeof(gpu_Param) * (size_t)(n > 0 ? n : 1)
                                                 + GPU_MAX_PARAM_BYTES, 0);
  f->params = (gpu_Param *)block;
  f->argbuf = block + sizeof(gpu_Param) * (size_t)(n > 0 ? n : 1);
  for (i = 0; i < n; i++) {
    gpu_Param *p = &f->params[i];
    int type = types ? letter_type((unsigned char)types[i]) : GPU_PARAM_UNKNOWN;
    if (type < 0) type = GPU_PARAM_BYVALUE;
    if (ndriver >= 0) {
      p->offset = offsets[i];
      p->size = sizes[i];
      /* a declared type of another size was misread: let the argument decide */
      if (type < GPU_PARAM_BYVALUE && type_size(type) != p->size) type = GPU_PARAM_UNKNOWN;
    } else {
      p->size = type_size(type);
      p->offset = off = align_up(off, natural_alignment(p->size));
      off += p->size;
    }
    p->type = type;
    if (p->offset + p->size > bytes) bytes = p->offset + p->size;
  }
  f->nparams = n;              /* -1: laid out from the arguments at each call */
  f->sizes_known = ndriver >= 0;
  f->sized_by_arguments = 0;
  for (i = 0; i < n && ndriver < 0; i++)
    f->sized_by_arguments |= f->params[i].type == GPU_PARAM_BYVALUE;
  f->argbuf_size = bytes;
  lua_setiuservalue(L, fidx, 2);
}

/* Asks the driver for the parameter layout; returns the count, or -1 if it cannot tell. */
static int driver_layout (const gpu_Driver *d, CUfunction fn, size_t *offsets, size_t *sizes,
                          int max) {
  int n = 0;
  CUresult r = CUDA_SUCCESS;
  if (d->cuFuncGetParamInfo == NULL) return -1;
  while (n < max && (r = d->cuFuncGetParamInfo(fn, (size_t)n, &offsets[n], &sizes[n])) == CUDA_SUCCESS)
    n++;
  /* the end of the list reads as INVALID_VALUE; anything else means the driver cannot tell */
  return n < max && r != CUDA_ERROR_INVALID_VALUE ? -1 : n;
}

#define GPU_MAX_PARAMS 1024

/*
** A Function's fields: its methods, copied in, then (through the shared metatable at
** fields_meta_key) the attributes, computed on demand from the Function at self_key.  Each
** Function has a metatable of its own whose __index is this table, so `f:prepared_call`
** costs one table read: an __index function would cost a C call on every method lookup,
** a fifth of a prepared call's own work.  The metatable's own metatable is the Function
** class (class_key), upvalue 2 of every C function that takes a Function: protected, and
** nowhere Lua code can reach, so no other value can pass for a Function.
*/
static const char fields_meta_key = 'F', self_key = 'f', class_key = 'C';

/*
** The launch entry points, bound to each Function as it is made: upvalue 3 is that Function,
** so `f:prepared_call(...)` and `f(...)` check their argument by one comparison instead of
** two metatable fetches (to_function).  Called with any other value, they check as usual.
*/
static int function_call (lua_State *L);
static int function_prepared_call (lua_State *L);
static int function_prepared_async_call (lua_State *L);
static const luaL_Reg bound_methods[] = {
  {"prepared_call", function_prepared_call}, {"prepared_async_call", function_prepared_async_call},
  {NULL, NULL},
};
static const luaL_Reg bound_meta[] = {{"__call", function_call}, {NULL, NULL}};

/* Sets l's functions into table t, bound to the Function at f (upvalues: methods, class, f). */
static void bind_functions (lua_State *L, int t, const luaL_Reg *l, int methods, int f) {
  lua_pushvalue(L, t);
  lua_pushvalue(L, methods);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &class_key);
  lua_pushvalue(L, f);
  luaL_setfuncs(L, l, 3);
  lua_pop(L, 1);
}

/* Gives the new Function on top of the stack its own metatable and fields table. */
static void set_function_metatable (lua_State *L) {
  int f = lua_gettop(L), shared, methods, mt, fields;
  luaL_getmetatable(L, GPU_FUNCTION);
  shared = lua_gettop(L);
  lua_getfield(L, shared, "__methods");
  methods = lua_gettop(L);
  lua_createtable(L, 0, 6);
  mt = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, shared) != 0) {    /* __name, __call, __tostring, __methods */
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, mt);
  }
  lua_createtable(L, 0, 8);
  fields = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, methods) != 0) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, fields);
  }
  bind_functions(L, fields, bound_methods, methods, f);
  bind_functions(L, mt, bound_meta, methods, f);
  lua_pushvalue(L, f);
  lua_rawsetp(L, fields, &self_key);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fields_meta_key);
  lua_setmetatable(L, fields);
  lua_setfield(L, mt, "__index");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &class_key);
  lua_setmetatable(L, mt);
  lua_setmetatable(L, f);
  lua_settop(L, f);
}

void gpu_function_new (lua_State *L, int module_idx, CUfunction fn, const char *name,
                       const char *signature) {
  const gpu_Driver *d = gpu_driver(L);
  gpu_Module *m = (gpu_Module *)lua_touserdata(L, module_idx);
  gpu_Function *f;
  size_t offsets[GPU_MAX_PARAMS], sizes[GPU_MAX_PARAMS];
  int n;
  module_idx = lua_absindex(L, module_idx);
  f = (gpu_Function *)lua_newuserdatauv(L, sizeof(gpu_Function), 3);
  memset(f, 0, sizeof *f);
  set_function_metatable(L);
  f->fn = fn;
  f->module = &m->globals;
  f->ctx = m->ctx;
  snprintf(f->name, sizeof f->name, "%s", name);
  gpu_pin(L, -1, module_idx, 1);
  n = driver_layout(d, fn, offsets, sizes, GPU_MAX_PARAMS);
  set_layout(L, lua_gettop(L), f, signature, offsets, sizes, n);
  f->declared = signature != NULL;
  if (f->declared) {        /* prepare checks against it: a prepared layout is only a guess */
    lua_pushstring(L, signature);
    lua_setiuservalue(L, -2, 3);
  }
}

/* ---------------------------------------------------------------- checks */

/* Whether the value at arg is a Function: its metatable's metatable is the class at
** class_idx (see class_key). */
static int is_function (lua_State *L, int arg, int class_idx) {
  int is;
  class_idx = lua_absindex(L, class_idx);
  if (lua_touserdata(L, arg) == NULL || !lua_getmetatable(L, arg)) return 0;
  is = gpu_hasmetatable(L, -1, class_idx);
  lua_pop(L, 1);
  return is;
}

/* The Function at arg, or NULL (see class_key and bound_methods). */
static gpu_Function *to_function (lua_State *L, int arg) {
  gpu_Function *f = (gpu_Function *)lua_touserdata(L, arg);
  if (f != NULL && f == lua_touserdata(L, lua_upvalueindex(3))) return f;
  return is_function(L, arg, lua_upvalueindex(2)) ? f : NULL;
}

static void check_module_alive (lua_State *L, const gpu_Function *f) {
  if (f->module->ptr == 0)
    luaL_error(L, "kernel '%s' belongs to a module that has been freed", f->name);
}

/* The Function at arg, checked alive; its context is not made current yet. */
static gpu_Function *check_function_alive (lua_State *L, int arg) {
  gpu_Function *f = to_function(L, arg);
  if (f == NULL) luaL_typeerror(L, arg, GPU_FUNCTION);
  check_module_alive(L, f);
  return f;
}

static gpu_Function *check_function (lua_State *L, int arg) {
  gpu_Function *f = check_function_alive(L, arg);
  gpu_context_enter(L, f->ctx);
  return f;
}

/*
** The launch paths check the stream without making its context current (gpu_optstream
** would): the launch enters f's context once, just before cuLaunchKernel, so a launch costs
** one cuCtxGetCurrent.  Errors are those of gpu_optstream.
*/
static const void *metatable_of (lua_State *L, int idx);

/* The Stream at idx, by its metatable's identity (no registry lookup), or NULL. */
static gpu_Stream *to_stream (lua_State *L, int idx, const gpu_State *state) {
  return metatable_of(L, idx) == state->stream_metatable ? (gpu_Stream *)lua_touserdata(L, idx)
                                                         : NULL;
}

/* s, checked usable for a launch (its freed check words the error for argument arg). */
static gpu_Stream *usable_stream (lua_State *L, gpu_Stream *s, int arg) {
  if (!s->live) gpu_freed_error(L, arg, "stream");
  if (s->ctx->ctx == NULL) luaL_error(L, "the CUDA context of this object has been released");
  return s;
}

static gpu_Stream *launch_stream (lua_State *L, int arg, const gpu_State *state) {
  gpu_Stream *s;
  if (lua_isnoneornil(L, arg)) return NULL;
  if ((s = to_stream(L, arg, state)) == NULL)
    s = (gpu_Stream *)luaL_checkudata(L, arg, GPU_STREAM);   /* raises, with its message */
  return usable_stream(L, s, arg);
}

/* "bad argument #n to 'kernel' (...)", numbering the kernel's own arguments from 1 */
static int kernel_argerror (lua_State *L, const gpu_Function *f, int argn, const char *fmt, ...) {
  va_list ap;
  const char *msg;
  va_start(ap, fmt);
  msg = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return luaL_error(L, "bad argument #%d to '%s' (%s)", argn, f->name, msg);
}

/* read_dims for every case; returns NULL or what is wrong.  Kept out of line: inlined, its
** frame would be set up on read_dims' fast path too. */
static __attribute__((noinline)) const char *read_dims_slow (lua_State *L, int idx,
                                                             const char *what, unsigned out[3],
                                                             const int max[3]) {
  static const char axis[3] = {'x', 'y', 'z'};
  lua_Integer v[3] = {1, 1, 1};
  int n = 1, i, isint = 1;
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      v[0] = lua_tointegerx(L, idx, &isint);
      break;
    case LUA_TTABLE:
      n = (int)lua_rawlen(L, idx);
      if (n < 1 || n > 3)
        return lua_pushfstring(L, "%s must be a number or a table of 1 to 3 numbers", what);
      for (i = 0; i < n && isint; i++) {
        lua_rawgeti(L, idx, i + 1);
        v[i] = lua_tointegerx(L, -1, &isint);
      }
      lua_pop(L, i);
      break;
    default:
      return lua_pushfstring(L, "%s must be a number or a table of 1 to 3 numbers, got %s", what,
                             luaL_typename(L, idx));
  }
  if (!isint) return lua_pushfstring(L, "%s must be whole numbers", what);
  for (i = 0; i < 3; i++) {
    if (v[i] < 1)
      return lua_pushfstring(L, "%s.%c = %I must be at least 1", what, axis[i], v[i]);
    if (v[i] > max[i])
      return lua_pushfstring(L, "%s.%c = %I exceeds the device limit of %d", what, axis[i], v[i],
                             max[i]);
    out[i] = (unsigned)v[i];
  }
  return NULL;
}

/* Reads dims (a number or {x[, y[, z]]}) into out; returns NULL or what is wrong. */
static const char *read_dims (lua_State *L, int idx, const char *what, unsigned out[3],
                              const int max[3]) {
  if (lua_isinteger(L, idx)) {    /* the common cases first, in as few calls as they need */
    lua_Integer x = lua_tointeger(L, idx);
    if (x >= 1 && x <= max[0]) {
      out[0] = (unsigned)x;
      out[1] = out[2] = 1;
      return NULL;
    }
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    lua_Unsigned n = lua_rawlen(L, idx);
    int i, ok = n >= 1 && n <= 3;
    for (i = 0; i < (int)n && ok; i++) {
      lua_Integer x;
      lua_rawgeti(L, idx, i + 1);
      x = lua_tointegerx(L, -1, &ok);
      ok = ok && x >= 1 && x <= max[i];
      out[i] = (unsigned)x;
    }
    lua_pop(L, i);
    if (ok) {
      for (; i < 3; i++) out[i] = 1;
      return NULL;
    }
  }
  return read_dims_slow(L, idx, what, out, max);   /* which also says what is wrong */
}

static const char *check_threads (lua_State *L, const gpu_LaunchConfig *cfg, const gpu_Context *c) {
  uint64_t threads = (uint64_t)cfg->block[0] * cfg->block[1] * cfg->block[2];
  if (threads > (uint64_t)c->max_threads)
    return lua_pushfstring(L, "block of %dx%dx%d = %I threads exceeds the device limit of %d",
                           (int)cfg->block[0], (int)cfg->block[1], (int)cfg->block[2],
                           (lua_Integer)threads, c->max_threads);
  return NULL;
}

/* The trailing options table of f(...): block, grid, shared, stream, time (PyCUDA's
** time_kernel too). */
static void read_call_options (lua_State *L, int idx, gpu_Function *f, gpu_LaunchConfig *cfg) {
  const char *bad = NULL;
  int has_block = 0, has_stream = 0;
  lua_pushnil(L);
  while (bad == NULL && lua_next(L, idx) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int v = lua_gettop(L);
    if (strcmp(key, "block") == 0) {
      bad = read_dims(L, v, "block", cfg->block, f->ctx->max_block);
      has_block = 1;
    } else if (strcmp(key, "grid") == 0) {
      bad = read_dims(L, v, "grid", cfg->grid, f->ctx->max_grid);
    } else if (strcmp(key, "shared") == 0) {
      int isint;
      lua_Integer n = lua_tointegerx(L, v, &isint);
      if (!isint || n < 0 || n > UINT32_MAX) bad = "shared must be a byte count (0 or more)";
      else cfg->shared = (unsigned)n;
    } else if (strcmp(key, "stream") == 0) {
      gpu_Stream *s = to_stream(L, v, f->ctx->state);
      if (s == NULL)              /* (a table holds no nil values) */
        bad = lua_pushfstring(L, "stream must be a gpu.Stream, got %s", luaL_typename(L, v));
      else if (!s->live)
        bad = "stream has been freed";
      else {
        cfg->stream_obj = usable_stream(L, s, v);   /* the freed case is worded above */
        cfg->stream = s->stream;
        if (!has_stream) {        /* a copy goes below the traversal's key, to idx + 1 */
          lua_pushvalue(L, v);
          lua_rotate(L, idx + 1, 1);
          v++;
          has_stream = 1;
        }
      }
    } else if (strcmp(key, "time") == 0 || strcmp(key, "time_kernel") == 0) {
      cfg->timed = lua_toboolean(L, v);
    } else if (strcmp(key, "cooperative") == 0) {
      if (lua_type(L, v) != LUA_TBOOLEAN)
        bad = lua_pushfstring(L, "cooperative must be a boolean, got %s", luaL_typename(L, v));
      else cfg->cooperative = lua_toboolean(L, v);
    } else if (strcmp(key, "cluster") == 0) {
      static const int any[3] = {INT_MAX, INT_MAX, INT_MAX};   /* the driver knows the limits */
      bad = read_dims(L, v, "cluster", cfg->cluster, any);
    } else {
      bad = lua_type(L, -2) == LUA_TSTRING ? lua_pushfstring(L, "unknown option '%s'", key)
                                           : "option keys must be strings";
    }
    if (bad == NULL) lua_settop(L, v - 1);   /* else keep the message referenced */
  }
  if (bad == NULL && !has_block) bad = "missing option 'block'";
  if (bad == NULL && (cfg->cooperative || cfg->cluster[0] != 0) && f->ctx->driver->cuLaunchKernelEx == NULL)
    bad = "cooperative and cluster launches need a CUDA 11.8 driver or newer";
  if (bad == NULL) bad = check_threads(L, cfg, f->ctx);
  if (bad != NULL) luaL_error(L, "bad launch options for '%s' (%s)", f->name, bad);
  if (has_stream) lua_replace(L, idx);   /* the Stream takes the options table's slot */
  if (cfg->stream != NULL) cfg->stream_idx = idx;
}

/* ---------------------------------------------------------------- arguments */

/* The identity of a userdata's metatable, or NULL for anything else. */
static const void *metatable_of (lua_State *L, int idx) {
  const void *mt;
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  mt = lua_topointer(L, -1);
  lua_pop(L, 1);
  return mt;
}

/* Which argument kind the value at idx is: one metatable fetch, no registry lookups. */
static gpu_ArgKind classify (lua_State *L, int idx, const gpu_State *s) {
  const void *mt = metatable_of(L, idx);
  int k;
  if (mt == NULL) return GPU_ARG_OTHER;
  for (k = 1; k < GPU_ARG_KINDS; k++)
    if (s->metatables[k] == mt) return (gpu_ArgKind)k;
  return GPU_ARG_OTHER;
}

/* The device address of a Buffer or GPUArray argument, checked alive and on f's device. */
static CUdeviceptr device_pointer (lua_State *L, const gpu_Function *f, int idx, int argn,
                                   gpu_ArgKind kind) {
  if (kind == GPU_ARG_ARRAY) {
    gpu_Array *a = (gpu_Array *)lua_touserdata(L, idx);
    if (!gpu_array_alive(a)) kernel_argerror(L, f, argn, "array has been freed");
    if (!gpu_context_reaches(f->ctx, a->buffer->ctx))
      kernel_argerror(L, f, argn, "array is on device %d, the kernel on device %d",
                      a->buffer->ctx->ordinal, f->ctx->ordinal);
    return a->ptr;
  } else {
    gpu_Buffer *b = (gpu_Buffer *)lua_touserdata(L, idx);
    if (b->ptr == 0 || b->root == NULL || b->root->ptr == 0)
      kernel_argerror(L, f, argn, "buffer has been freed");
    if (!gpu_context_reaches(f->ctx, b->ctx))
      kernel_argerror(L, f, argn, "buffer is on device %d, the kernel on device %d",
                      b->ctx->ordinal, f->ctx->ordinal);
    return b->ptr;
  }
}

/* The address a non-userdata pointer argument stands for: an integer, light userdata, nil. */
static CUdeviceptr raw_pointer (lua_State *L, const gpu_Function *f, int idx, int argn) {
  int isint;
  lua_Integer address;
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      address = lua_tointegerx(L, idx, &isint);
      if (isint) return (CUdeviceptr)address;   /* a raw address, as with numpy.intp */
      break;
    case LUA_TLIGHTUSERDATA: return (CUdeviceptr)(uintptr_t)lua_touserdata(L, idx);
    case LUA_TNIL: return 0;
    case LUA_TSTRING: return (CUdeviceptr)kernel_argerror(L, f, argn, "expected a device pointer, got a string");
  }
  if (luaL_testudata(L, idx, GPU_HOSTARRAY) != NULL) {
    const gpu_HostArray *h = gpu_testhostarray(L, idx);
    if (h == NULL) kernel_argerror(L, f, argn, "host array has been freed");
    if (h->managed) return (CUdeviceptr)(uintptr_t)h->data;   /* the same address on both */
    kernel_argerror(L, f, argn, "a host array is not a device pointer: wrap it in gpu.In, "
                                "gpu.Out or gpu.InOut, copy it with gpu.to_device, or make it "
                                "with gpu.host.managed_empty");
  }
  return kernel_argerror(L, f, argn, "expected a device pointer (gpu.Buffer, array, "
                                     "In/Out/InOut or an address), got %s",
                         luaL_typename(L, idx));
}

/* Integers fit integer parameters of their size, floats float ones; bool only bool. */
static int scalar_fits (gpu_DtypeId have, int want) {
  const gpu_Dtype *a = &gpu_dtypes[have], *b = &gpu_dtypes[want];
  if ((int)have == want) return 1;
  if (a->itemsize != b->itemsize) return 0;
  return (a->kind == 'i' || a->kind == 'u') && (b->kind == 'i' || b->kind == 'u');
}

/* Writes the argument at idx (a typed scalar s, or a plain value) as param p into dst. */
static void pack_value (lua_State *L, const gpu_Function *f, int idx, int argn,
                        const gpu_Param *p, const gpu_Scalar *s, unsigned char *dst) {
  if (p->type == GPU_PARAM_BYVALUE) {
    size_t len;
    const char *bytes;
    if (s != NULL && gpu_dtypes[s->dtype].itemsize == p->size) {
      memcpy(dst, s->bytes, p->size);
      return;
    }
    if (s != NULL)
      kernel_argerror(L, f, argn, "parameter is %I bytes, the %s scalar %d", (lua_Integer)p->size,
                      gpu_dtypes[s->dtype].name, (int)gpu_dtypes[s->dtype].itemsize);
    if (lua_type(L, idx) != LUA_TSTRING)
      kernel_argerror(L, f, argn, "parameter is passed by value (%I bytes): expected a string "
                                  "of its bytes, got %s", (lua_Integer)p->size,
                      luaL_typename(L, idx));
    bytes = lua_tolstring(L, idx, &len);
    if (len != p->size)
      kernel_argerror(L, f, argn, "parameter is %I bytes, the string %I",
                      (lua_Integer)p->size, (lua_Integer)len);
    memcpy(dst, bytes, len);
    return;
  }
  if (s != NULL) {
    if (!scalar_fits(s->dtype, p->type))
      kernel_argerror(L, f, argn, "expected %s, got a scalar of %s", gpu_dtypes[p->type].name,
                      gpu_dtypes[s->dtype].name);
    memcpy(dst, s->bytes, p->size);
  } else {
    const char *bad = gpu_tovalue(L, idx, (gpu_DtypeId)p->type, dst);
    if (bad != NULL) {
      if (lua_type(L, idx) == LUA_TNUMBER)
        kernel_argerror(L, f, argn, "%s is %s", lua_tostring(L, idx), bad);
      kernel_argerror(L, f, argn, "%s for %s, got %s", bad, gpu_dtypes[p->type].name,
                      luaL_typename(L, idx));
    }
  }
}

/* How an argument for a parameter of unknown type (size known) is passed: pointer or bytes. */
static int resolve_unknown (lua_State *L, const gpu_Function *f, int idx, int argn,
                            const gpu_Param *p, gpu_ArgKind kind) {
  int ltype = lua_type(L, idx);
  if (kind == GPU_ARG_BUFFER || kind == GPU_ARG_ARRAY || kind == GPU_ARG_HANDLER ||
      ltype == LUA_TLIGHTUSERDATA || ltype == LUA_TNIL ||
      luaL_testudata(L, idx, GPU_HOSTARRAY) != NULL) {   /* managed, or raw_pointer says why not */
    if (p->size != sizeof(CUdeviceptr))
      kernel_argerror(L, f, argn, "parameter is %I bytes, a device pointer %d",
                      (lua_Integer)p->size, (int)sizeof(CUdeviceptr));
    return GPU_PARAM_POINTER;
  }
  if (ltype == LUA_TNUMBER || ltype == LUA_TBOOLEAN)
    kernel_argerror(L, f, argn, "the kernel's parameter types are unknown, so a plain %s "
                                "cannot be converted: pass a typed scalar such as gpu.int32(x), "
                                "or prepare() the kernel", luaL_typename(L, idx));
  return GPU_PARAM_BYVALUE;
}

/* A texture or surface object for a 64-bit integer parameter (cudaTextureObject_t and
** cudaSurfaceObject_t are unsigned long long), or one only the driver's size describes: its
** handle, checked usable and on f's device. */
static void pack_texture (lua_State *L, const gpu_Function *f, int idx, int argn,
                          const gpu_Param *p, gpu_ArgKind kind, unsigned char *dst) {
  const gpu_Context *ctx;
  const char *why;
  unsigned long long handle;
  const char *what = kind == GPU_ARG_SURFACE ? "surface object" : "texture object";
  if ((p->type == GPU_PARAM_UNKNOWN || p->type == GPU_PARAM_BYVALUE) && p->size != sizeof handle)
    kernel_argerror(L, f, argn, "parameter is %I bytes, a %s %d", (lua_Integer)p->size, what,
                    (int)sizeof handle);
  if (!(p->type == GPU_UINT64 || p->type == GPU_INT64 || p->type == GPU_PARAM_UNKNOWN ||
        p->type == GPU_PARAM_BYVALUE))
    kernel_argerror(L, f, argn, "expected %s, got a %s", type_name(p->type), what);
  handle = gpu_texture_handle(L, idx, &ctx, &why);
  if (why != NULL) kernel_argerror(L, f, argn, "%s", why);
  if (ctx != f->ctx)
    kernel_argerror(L, f, argn, "object is on device %d, the kernel on device %d", ctx->ordinal,
                    f->ctx->ordinal);
  memcpy(dst, &handle, sizeof handle);
}

/* The host data of the In/Out/InOut at idx (argument argn): its bytes and their count. */
static const void *handler_bytes (lua_State *L, const gpu_Function *f, int idx, int argn,
                                  size_t *n) {
  const void *host;
  lua_getiuservalue(L, idx, 1);
  if (lua_type(L, -1) != LUA_TSTRING && gpu_testhostarray(L, -1) == NULL)   /* freed since */
    kernel_argerror(L, f, argn, "the host array of this In/Out/InOut has been freed");
  host = gpu_checkhostbytes(L, -1, n, NULL);
  lua_pop(L, 1);            /* a string stays alive: the handler pins it */
  return host;
}

/*
** Copies In/InOut host data into fresh device buffers, pushed on the stack in argument
** order (they are freed after the launch, or by the collector if anything fails).
** Returns the stack index before the first temporary.
*/
static int stage_handlers (lua_State *L, const gpu_Function *f, int first, int nargs,
                           const unsigned char *kinds) {
  const gpu_Driver *d = gpu_driver(L);
  int base = lua_gettop(L), i;
  for (i = 0; i < nargs; i++) {
    size_t n;
    const void *host;
    gpu_Buffer *tmp;
    if (kinds[i] != GPU_ARG_HANDLER) continue;
    host = handler_bytes(L, f, first + i, i + 1, &n);
    tmp = gpu_buffer_new(L, n);
    if (tmp->ctx != f->ctx) kernel_argerror(L, f, i + 1, "the current device is not the kernel's");
    host = handler_bytes(L, f, first + i, i + 1, &n);   /* again: the allocation ran finalizers */
    if (((gpu_ArgHandler *)lua_touserdata(L, first + i))->direction & GPU_IN)
      gpu_check(L, d->cuMemcpyHtoD(tmp->ptr, host, n), "cuMemcpyHtoD");
  }
  gpu_context_enter(L, f->ctx);
  return base;
}

/* Copies Out/InOut data back to the host and frees the temporaries. */
static void unstage_handlers (lua_State *L, int first, int nargs, int base, CUstream stream,
                              const unsigned char *kinds) {
  const gpu_Driver *d = gpu_driver(L);
  int i, t = base;
  gpu_check(L, d->cuStreamSynchronize(stream), "cuStreamSynchronize");
  for (i = 0; i < nargs; i++) {
    gpu_Buffer *tmp;
    if (kinds[i] != GPU_ARG_HANDLER) continue;
    tmp = (gpu_Buffer *)lua_touserdata(L, ++t);
    if (((gpu_ArgHandler *)lua_touserdata(L, first + i))->direction & GPU_OUT) {
      gpu_HostArray *host;
      lua_getiuservalue(L, first + i, 1);
      host = gpu_checkhostarray(L, -1);
      lua_pop(L, 1);
      gpu_check(L, d->cuMemcpyDtoH(host->data, tmp->ptr, host->nbytes), "cuMemcpyDtoH");
    }
    gpu_buffer_release(tmp);
  }
}

/*
** Packs nargs arguments starting at stack index first into f's buffer; a function of
** unknown layout lays them out by their own types.  Handler temporaries sit above base, in
** argument order.  Returns the packed size.
*/
static size_t pack_arguments (lua_State *L, gpu_Function *f, int first, int nargs, int base,
                              const unsigned char *kinds) {
  int i, t = base;
  size_t off = 0;
  if (f->nparams >= 0 && nargs != f->nparams)
    luaL_error(L, "kernel '%s' takes %d argument%s, got %d", f->name, f->nparams,
               f->nparams == 1 ? "" : "s", nargs);
  for (i = 0; i < nargs; i++) {
    int idx = first + i;
    gpu_ArgKind kind = (gpu_ArgKind)kinds[i];
    const gpu_Scalar *scalar = kind == GPU_ARG_SCALAR ? (gpu_Scalar *)lua_touserdata(L, idx) : NULL;
    gpu_Param dyn, *p = f->nparams >= 0 ? &f->params[i] : &dyn;
    unsigned char *dst;
    CUdeviceptr ptr;
    if (f->nparams < 0) {         /* no declaration: the argument's own type decides */
      int ltype = lua_type(L, idx);
      dyn.type = scalar ? (int)scalar->dtype : ltype == LUA_TSTRING ? GPU_PARAM_BYVALUE
               : kind == GPU_ARG_TEXTURE || kind == GPU_ARG_SURFACE ? GPU_UINT64
               : GPU_PARAM_POINTER;
      if (ltype == LUA_TNUMBER || ltype == LUA_TBOOLEAN)
        kernel_argerror(L, f, i + 1, "the kernel's parameter types are unknown, so a plain %s "
                                     "cannot be converted: pass a typed scalar such as "
                                     "gpu.int32(x), or prepare() the kernel",
                        luaL_typename(L, idx));
      dyn.size = dyn.type == GPU_PARAM_BYVALUE ? lua_rawlen(L, idx) : type_size(dyn.type);
    } else if (f->sized_by_arguments) {   /* a struct's size only its bytes tell (no driver layout) */
      dyn = *p;
      if (dyn.type == GPU_PARAM_BYVALUE)
        dyn.size = scalar ? gpu_dtypes[scalar->dtype].itemsize
                 : kind == GPU_ARG_TEXTURE || kind == GPU_ARG_SURFACE ? sizeof(unsigned long long)
                 : lua_rawlen(L, idx);
      p = &dyn;
    }
    if (p == &dyn) {               /* C's layout: each at its natural alignment (at most 8) */
      dyn.offset = off = align_up(off, natural_alignment(dyn.size));
      off += dyn.size;
      if (off > GPU_MAX_PARAM_BYTES)
        luaL_error(L, "arguments to '%s' exceed %d bytes", f->name, GPU_MAX_PARAM_BYTES);
    }
    dst = f->argbuf + p->offset;
    if (kind == GPU_ARG_TEXTURE || kind == GPU_ARG_SURFACE) {
      pack_texture(L, f, idx, i + 1, p, kind, dst);
      continue;
    }
    if (p->type == GPU_PARAM_UNKNOWN) {
      dyn = *p;
      dyn.type = resolve_unknown(L, f, idx, i + 1, p, kind);
      p = &dyn;
    }
    if (p->type != GPU_PARAM_POINTER) {
      if (kind == GPU_ARG_HANDLER)
        kernel_argerror(L, f, i + 1, "expected %s, got an In/Out/InOut handler",
                        type_name(p->type));
      pack_value(L, f, idx, i + 1, p, scalar, dst);
      continue;
    }
    switch (kind) {
      case GPU_ARG_HANDLER: ptr = ((gpu_Buffer *)lua_touserdata(L, ++t))->ptr; break;
      case GPU_ARG_BUFFER: case GPU_ARG_ARRAY: ptr = device_pointer(L, f, idx, i + 1, kind); break;
      case GPU_ARG_SCALAR:
        return (size_t)kernel_argerror(L, f, i + 1, "expected a device pointer, got a typed scalar");
      default: ptr = raw_pointer(L, f, idx, i + 1); break;
    }
    memcpy(dst, &ptr, sizeof ptr);
  }
  return f->nparams >= 0 && !f->sized_by_arguments ? f->argbuf_size : off;
}

/* cuLaunchKernel with the packed arguments; *call names the call that failed, if any. */
/* A launch with attributes (cooperative, clusters): cuLaunchKernelEx, where the driver has it. */
static CUresult launch_extended (const gpu_Driver *d, gpu_Function *f, const gpu_LaunchConfig *cfg,
                                 void **extra, const char **call) {
  CUlaunchAttribute attributes[2];
  CUlaunchConfig config;
  unsigned n = 0;
  memset(attributes, 0, sizeof attributes);
  if (cfg->cooperative) {
    attributes[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[n++].value.cooperative = 1;
  }
  if (cfg->cluster[0] != 0) {
    attributes[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[n].value.clusterDim.x = cfg->cluster[0];
    attributes[n].value.clusterDim.y = cfg->cluster[1];
    attributes[n++].value.clusterDim.z = cfg->cluster[2];
  }
  config.gridDimX = cfg->grid[0];
  config.gridDimY = cfg->grid[1];
  config.gridDimZ = cfg->grid[2];
  config.blockDimX = cfg->block[0];
  config.blockDimY = cfg->block[1];
  config.blockDimZ = cfg->block[2];
  config.sharedMemBytes = cfg->shared;
  config.hStream = cfg->stream;
  config.attrs = attributes;
  config.numAttrs = n;
  *call = "cuLaunchKernelEx";                  /* there: read_call_options checked */
  return d->cuLaunchKernelEx(&config, f->fn, NULL, extra);
}

static CUresult launch_packed (const gpu_Driver *d, gpu_Function *f, const gpu_LaunchConfig *cfg,
                               size_t size, const char **call) {
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, f->argbuf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  if (cfg->cooperative | cfg->cluster[0]) return launch_extended(d, f, cfg, size ? extra : NULL, call);
  *call = "cuLaunchKernel";
  return d->cuLaunchKernel(f->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                           cfg->block[1], cfg->block[2], cfg->shared, cfg->stream, NULL,
                           size ? extra : NULL);
}

/* The same between two events, waiting for the end; *seconds is the time between. */
static CUresult launch_timed (const gpu_Driver *d, gpu_Function *f, const gpu_LaunchConfig *cfg,
                              size_t size, const char **call, double *seconds) {
  CUevent start = NULL, stop = NULL;
  float ms = 0;
  CUresult r;
  *call = "cuEventCreate";
  r = d->cuEventCreate(&start, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = d->cuEventCreate(&stop, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) { *call = "cuEventRecord"; r = d->cuEventRecord(start, cfg->stream); }
  if (r == CUDA_SUCCESS) r = launch_packed(d, f, cfg, size, call);
  if (r == CUDA_SUCCESS) { *call = "cuEventRecord"; r = d->cuEventRecord(stop, cfg->stream); }
  if (r == CUDA_SUCCESS) { *call = "cuEventSynchronize"; r = d->cuEventSynchronize(stop); }
  if (r == CUDA_SUCCESS) { *call = "cuEventElapsedTime"; r = d->cuEventElapsedTime(&ms, start, stop); }
  if (start) d->cuEventDestroy(start);
  if (stop) d->cuEventDestroy(stop);
  *seconds = ms / 1000.0;
  return r;
}

/* Launches f with nargs arguments from stack index first; returns results pushed. */
static int launch (lua_State *L, gpu_Function *f, int first, int nargs, gpu_LaunchConfig *cfg) {
  const gpu_Driver *d = f->ctx->driver;
  unsigned char kinds[GPU_MAX_PARAMS];
  int handlers = 0, i, base;
  const char *call;
  double seconds = 0;
  size_t size;
  CUresult r;
  if (nargs > GPU_MAX_PARAMS)
    return luaL_error(L, "too many arguments to '%s' (%d)", f->name, nargs);
  for (i = 0; i < nargs; i++) {
    kinds[i] = (unsigned char)classify(L, first + i, f->ctx->state);
    handlers += kinds[i] == GPU_ARG_HANDLER;
  }
  /* stage_handlers leaves one temporary Buffer per handler on the stack, beyond LUA_MINSTACK */
  if (handlers) luaL_checkstack(L, handlers + 8, "too many In/Out/InOut arguments");
  if (cfg->stream_obj != NULL && cfg->stream_obj->capturing) {
    if (handlers)
      return luaL_error(L, "In/Out/InOut arguments cannot be captured into a graph (they copy "
                        "synchronously): use device buffers");
    for (i = 0; i < nargs; i++) gpu_capture_note(L, cfg->stream_idx, first + i);
  }
  if (cfg->stream == NULL) cfg->stream = f->ctx->stream;   /* the host's (lua_gpu_use_stream) */
  base = handlers ? stage_handlers(L, f, first, nargs, kinds) : lua_gettop(L);
  if (handlers) {           /* staging allocated: finalizers may have freed the stream or module */
    if (cfg->stream_obj != NULL && !cfg->stream_obj->live)
      return luaL_error(L, "bad launch options for '%s' (stream has been freed)", f->name);
    check_module_alive(L, f);
  }
  size = pack_arguments(L, f, first, nargs, base, kinds);
  r = cfg->timed ? launch_timed(d, f, cfg, size, &call, &seconds)
                 : launch_packed(d, f, cfg, size, &call);
  gpu_check(L, r, call);
  if (handlers) unstage_handlers(L, first, nargs, base, cfg->stream, kinds);
  if (!cfg->timed) return 0;
  lua_pushnumber(L, seconds);
  return 1;
}

/* f(args..., {block = ..., grid = ..., shared = ..., stream = ..., time = ...}) */
static int function_call (lua_State *L) {
  gpu_Function *f = check_function_alive(L, 1);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0, 0, {0, 0, 0}};
  int top = lua_gettop(L);
  if (top < 2 || lua_type(L, top) != LUA_TTABLE)
    return luaL_error(L, "missing launch options: call '%s' as f(args..., {block = {x, y, z}, "
                      "grid = {x, y}})", f->name);
  read_call_options(L, top, f, &cfg);
  gpu_context_enter(L, f->ctx);
  return launch(L, f, 2, top - 2, &cfg);
}

/* Whether the value at idx is a Function, for subsystems that hold no class upvalue. */
int gpu_isfunction (lua_State *L, int idx) {
  int is;
  idx = lua_absindex(L, idx);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &class_key);
  is = is_function(L, idx, -1);
  lua_pop(L, 1);
  return is;
}

CUfunction gpu_checkfunction (lua_State *L, int arg, const char *name, gpu_Context **ctx) {
  gpu_Function *f;
  if (!gpu_isfunction(L, arg)) luaL_typeerror(L, arg, GPU_FUNCTION);
  f = (gpu_Function *)lua_touserdata(L, arg);
  check_module_alive(L, f);
  if (strcmp(f->name, name) != 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "kernel '%s' expected, got '%s'", name, f->name));
  *ctx = f->ctx;
  return f->fn;
}

/* Converts the value at idx for by-value parameter param as a launch would, into dst; 0 where
** it is not a number (or a boolean, for a bool) or does not fit.  gpu_tovalue checks ranges,
** but lets uint64 take a negative integer's bits (and floats past the largest integer), which
** the Lua layer refuses: those are left to it too. */
static int fast_scalar (lua_State *L, int idx, const gpu_Param *param, unsigned char *dst) {
  int type = lua_type(L, idx), isint;
  if (param->type >= GPU_NDTYPES ||
      !(type == LUA_TNUMBER || (type == LUA_TBOOLEAN && param->type == GPU_BOOL)))
    return 0;
  if (param->type == GPU_UINT64 && (lua_tointegerx(L, idx, &isint) < 0 || !isint)) return 0;
  return gpu_tovalue(L, idx, (gpu_DtypeId)param->type, dst) == NULL;
}

gpu_Stream *gpu_fast_stream (lua_State *L, int idx, const gpu_Context *ctx, int *usable) {
  gpu_Stream *s;
  *usable = 1;
  if (lua_isnoneornil(L, idx)) return NULL;
  s = to_stream(L, idx, ctx->state);
  *usable = s != NULL && s->live && s->ctx == ctx && !s->capturing;
  return s;
}

int gpu_launch_values (lua_State *L, int fidx, const gpu_Context *ctx, const gpu_Stream *stream,
                       unsigned grid, unsigned block, unsigned block_rows,
                       const CUdeviceptr *ptrs, int first,
                       int nvalues, const lua_Integer *tail, int ntail) {
  gpu_Function *f = (gpu_Function *)lua_touserdata(L, fidx);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0, 0, {0, 0, 0}};
  const char *call;
  int i;
  /* the caller's allocations ran finalizers: a stream freed by one takes the general path */
  if (f->ctx != ctx || f->nparams != nvalues + ntail || (stream != NULL && !stream->live)) return 0;
  for (i = 0; i < nvalues; i++) {
    const gpu_Param *param = &f->params[i];
    if (param->type == GPU_PARAM_POINTER) {
      if (ptrs[i] == 0) return 0;
      memcpy(f->argbuf + param->offset, &ptrs[i], sizeof ptrs[0]);
    } else if (!fast_scalar(L, first + i, param, f->argbuf + param->offset))
      return 0;
  }
  for (i = nvalues; i < nvalues + ntail; i++) {
    const gpu_Param *param = &f->params[i];
    if (param->type >= GPU_NDTYPES ||
        (gpu_dtypes[param->type].kind != 'i' && gpu_dtypes[param->type].kind != 'u'))
      return 0;
  }
  check_module_alive(L, f);
  for (i = 0; i < ntail; i++) {
    const gpu_Param *param = &f->params[nvalues + i];
    if (param->size == sizeof(int64_t) && tail[i] >= 0)   /* fits any 64-bit integer */
      memcpy(f->argbuf + param->offset, &(int64_t){tail[i]}, sizeof(int64_t));
    else {                                                /* a narrower one is range-checked */
      lua_pushinteger(L, tail[i]);
      pack_value(L, f, lua_gettop(L), nvalues + i + 1, param, NULL, f->argbuf + param->offset);
      lua_pop(L, 1);
    }
  }
  cfg.grid[0] = grid;
  cfg.block[0] = block;
  cfg.block[1] = block_rows;
  /* else the host's stream (lua_gpu_use_stream), or the default */
  cfg.stream = stream != NULL ? stream->stream : f->ctx->stream;
  gpu_context_enter(L, f->ctx);
  gpu_check(L, launch_packed(ctx->driver, f, &cfg, f->argbuf_size, &call), call);
  return 1;
}

/* ---------------------------------------------------------------- prepared calls */

/* PyCUDA's list form of prepare's types, {"P", "P", "i"}, as the one string "PPi". */
static void join_types (lua_State *L, int arg) {
  luaL_Buffer b;
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, arg);
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (lua_rawgeti(L, arg, i) != LUA_TSTRING)
      luaL_argerror(L, arg, lua_pushfstring(L, "type %I must be a letter, got %s", i,
                                            luaL_typename(L, -1)));
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_replace(L, arg);
}

/* f:prepare("PPi") or f:prepare({"P", "P", "i"}): parameter types as Python struct letters;
** returns f. */
static int function_prepare (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  const char *format;
  if (lua_type(L, 2) == LUA_TTABLE) join_types(L, 2);
  format = luaL_checkstring(L, 2);
  size_t n = strlen(format), i;
  char types[GPU_MAX_PARAMS + 1];
  luaL_argcheck(L, n <= GPU_MAX_PARAMS, 2, "too many parameters");
  for (i = 0; i < n; i++) {
    int type = letter_type((unsigned char)format[i]);
    if (type < 0 || type == GPU_PARAM_BYVALUE)
      return luaL_argerror(L, 2, lua_pushfstring(L, "unknown type letter '%c' in '%s'",
                                                 format[i], format));
    types[i] = param_letters[type];
  }
  types[n] = '\0';
  /* checked against the driver's layout, else against the source's declaration (user value
  ** 3), whose by-value structs have no size to compare; never against an earlier prepare's */
  if (f->sizes_known || f->declared) {
    const char *declared = NULL;
    if (!f->sizes_known) {
      lua_getiuservalue(L, 1, 3);
      declared = lua_tostring(L, -1);      /* the Function's own: it outlives the pop */
      lua_pop(L, 1);
    }
    int nparams = declared ? (int)strlen(declared) : f->nparams;
    if ((int)n != nparams)
      return luaL_argerror(L, 2, lua_pushfstring(L, "'%s' has %d parameters, kernel '%s' takes %d",
                                                 format, (int)n, f->name, nparams));
    for (i = 0; i < n; i++) {
      size_t want = type_size(letter_type((unsigned char)types[i])), size = f->params[i].size;
      if (declared) {
        int type = letter_type((unsigned char)declared[i]);
        if (type < 0 || type >= GPU_PARAM_BYVALUE) continue;
        size = type_size(type);
      }
      if (want != size)
        return luaL_argerror(L, 2, lua_pushfstring(L, "parameter %d of '%s' is %I bytes, '%c' is %I",
                                                   (int)i + 1, f->name, (lua_Integer)size,
                                                   format[i], (lua_Integer)want));
    }
  }
  if (f->sizes_known) {
    for (i = 0; i < n; i++)        /* only once all fit: a failed prepare changes nothing */
      f->params[i].type = letter_type((unsigned char)types[i]);
  } else {
    set_layout(L, 1, f, types, NULL, NULL, -1);
  }
  lua_settop(L, 1);
  return 1;
}

static int has_metatable (lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  lua_pop(L, 1);
  return 1;
}

/* Reads grid and block of a prepared call; a trailing plain table holds {shared = n} (one
** with a metatable, such as a gpu.complex, is an argument). */
static int read_prepared (lua_State *L, gpu_Function *f, int grid, int block, int first,
                          gpu_LaunchConfig *cfg) {
  const char *bad = read_dims(L, grid, "grid", cfg->grid, f->ctx->max_grid);
  int top = lua_gettop(L), isint;
  lua_Integer shared;
  if (bad != NULL) luaL_argerror(L, grid, bad);   /* luaL_argerror numbers methods' args */
  if ((bad = read_dims(L, block, "block", cfg->block, f->ctx->max_block)) != NULL ||
      (bad = check_threads(L, cfg, f->ctx)) != NULL)
    luaL_argerror(L, block, bad);
  if (top >= first && lua_type(L, top) == LUA_TTABLE && !has_metatable(L, top)) {
    static const char *const known[] = {"shared", "shared_size", NULL};   /* PyCUDA's name too */
    gpu_checkoptions(L, top, known);
    if (lua_getfield(L, top, "shared") == LUA_TNIL) {
      lua_pop(L, 1);
      lua_getfield(L, top, "shared_size");
    }
    shared = lua_isnil(L, -1) ? 0 : lua_tointegerx(L, -1, &isint);
    if (!lua_isnil(L, -1) && !isint)    /* luaL_optinteger(L, -1) would blame "argument #-1" */
      shared = -1;
    if (shared < 0 || shared > UINT32_MAX)
      luaL_argerror(L, top, "shared must be a byte count (0 or more)");
    cfg->shared = (unsigned)shared;
    lua_pop(L, 1);
    top--;
  }
  return top - first + 1;
}

/* f:prepared_call(grid, block, args...) */
static int function_prepared_call (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0, 0, {0, 0, 0}};
  int nargs = read_prepared(L, f, 2, 3, 4, &cfg);
  return launch(L, f, 4, nargs, &cfg);
}

/* f:prepared_async_call(grid, block, stream, args...) */
static int function_prepared_async_call (lua_State *L) {
  gpu_Function *f = check_function_alive(L, 1);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0, 0, {0, 0, 0}};
  int nargs = read_prepared(L, f, 2, 3, 5, &cfg);
  cfg.stream_obj = launch_stream(L, 4, f->ctx->state);
  cfg.stream = cfg.stream_obj ? cfg.stream_obj->stream : NULL;
  cfg.stream_idx = cfg.stream_obj != NULL ? 4 : 0;
  gpu_context_enter(L, f->ctx);
  return launch(L, f, 5, nargs, &cfg);
}

/* f:prepared_timed_call(grid, block, args...) -> seconds */
static int function_prepared_timed_call (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 1, 0, {0, 0, 0}};
  int nargs = read_prepared(L, f, 2, 3, 4, &cfg);
  return launch(L, f, 4, nargs, &cfg);
}

/* ---------------------------------------------------------------- attributes */

static const struct { const char *name; CUfunction_attribute attribute; } function_attributes[] = {
  {"max_threads_per_block", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
  {"shared_size_bytes", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
  {"const_size_bytes", CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES},
  {"local_size_bytes", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
  {"num_regs", CU_FUNC_ATTRIBUTE_NUM_REGS},
  {"ptx_version", CU_FUNC_ATTRIBUTE_PTX_VERSION},
  {"binary_version", CU_FUNC_ATTRIBUTE_BINARY_VERSION},
  {"max_dynamic_shared_size_bytes", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES},
  {"preferred_shared_memory_carveout", CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT},
  {NULL, 0},
};

static int find_function_attribute (const char *name) {
  int i;
  for (i = 0; function_attributes[i].name != NULL; i++)
    if (strcmp(name, function_attributes[i].name) == 0) return i;
  return -1;
}

/* The parameter types as letters ("PPi"), '?'-free "V" for unknown by-value ones. */
static void push_signature (lua_State *L, const gpu_Function *f) {
  luaL_Buffer b;
  int i;
  if (f->nparams < 0) {
    lua_pushnil(L);
    return;
  }
  luaL_buffinit(L, &b);
  for (i = 0; i < f->nparams; i++) luaL_addchar(&b, param_letters[f->params[i].type]);
  luaL_pushresult(&b);
}

/* f.num_regs and the other attributes, f.name, f.signature, f.nparams, f.handle (the
** CUfunction, for hosts that launch it themselves): the __index of a Function's fields
** table, called with that table, for keys that are not methods */
static int function_attribute (lua_State *L) {
  gpu_Function *f;
  const char *key;
  int a, value;
  luaL_checktype(L, 1, LUA_TTABLE);       /* reachable through getmetatable: any value */
  if ((key = lua_tostring(L, 2)) == NULL) return 0;
  lua_rawgetp(L, 1, &self_key);
  lua_replace(L, 1);
  f = check_function(L, 1);
  if (strcmp(key, "name") == 0) lua_pushstring(L, f->name);
  else if (strcmp(key, "signature") == 0) push_signature(L, f);
  else if (strcmp(key, "handle") == 0) lua_pushinteger(L, (lua_Integer)(uintptr_t)f->fn);
  else if (strcmp(key, "nparams") == 0) {
    if (f->nparams < 0) lua_pushnil(L);
    else lua_pushinteger(L, f->nparams);
  } else if ((a = find_function_attribute(key)) >= 0) {
    gpu_check(L, f->ctx->driver->cuFuncGetAttribute(&value, function_attributes[a].attribute,
                                                    f->fn),
              "cuFuncGetAttribute");
    lua_pushinteger(L, value);
  } else {
    return 0;
  }
  return 1;
}

/* f:set_attribute("max_dynamic_shared_size_bytes", n) */
static int function_set_attribute (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  const char *key = luaL_checkstring(L, 2);
  lua_Integer value = luaL_checkinteger(L, 3);
  int a = find_function_attribute(key);
  if (a < 0) return luaL_argerror(L, 2, lua_pushfstring(L, "unknown attribute '%s'", key));
  luaL_argcheck(L, value >= INT32_MIN && value <= INT32_MAX, 3, "value out of range for an int");
  gpu_check(L, gpu_driver(L)->cuFuncSetAttribute(f->fn, function_attributes[a].attribute, (int)value),
            "cuFuncSetAttribute");
  lua_settop(L, 1);
  return 1;
}

/* f:max_potential_block_size([dynamic_shared_bytes]) -> block, min_grid */
static int function_max_potential_block_size (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  lua_Integer shared = luaL_optinteger(L, 2, 0);
  int min_grid = 0, block = 0;
  luaL_argcheck(L, shared >= 0, 2, "shared memory size must not be negative");
  gpu_check(L, gpu_driver(L)->cuOccupancyMaxPotentialBlockSize(&min_grid, &block, f->fn, NULL,
                                                                (size_t)shared, 0),
            "cuOccupancyMaxPotentialBlockSize");
  lua_pushinteger(L, block);
  lua_pushinteger(L, min_grid);
  return 2;
}

/* f:max_active_blocks_per_multiprocessor(block[, dynamic_shared_bytes]) -> how many blocks of
** that shape (a number or {x[, y[, z]]}) a multiprocessor runs at once (cuda.core's name). */
static int function_max_active_blocks (lua_State *L) {
  gpu_Function *f = check_function(L, 1);
  gpu_LaunchConfig cfg = {{1, 1, 1}, {1, 1, 1}, 0, NULL, 0, NULL, 0, 0, {0, 0, 0}};
  lua_Integer shared = luaL_optinteger(L, 3, 0);
  const char *bad;
  int blocks = 0;
  if ((bad = read_dims(L, 2, "block", cfg.block, f->ctx->max_block)) != NULL ||
      (bad = check_threads(L, &cfg, f->ctx)) != NULL)
    return luaL_argerror(L, 2, bad);
  luaL_argcheck(L, shared >= 0, 3, "shared memory size must not be negative");
  gpu_check(L, gpu_driver(L)->cuOccupancyMaxActiveBlocksPerMultiprocessor(
                   &blocks, f->fn, (int)(cfg.block[0] * cfg.block[1] * cfg.block[2]), (size_t)shared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  lua_pushinteger(L, blocks);
  return 1;
}

static int function_tostring (lua_State *L) {
  gpu_Function *f = to_function(L, 1);
  if (f == NULL) return luaL_typeerror(L, 1, GPU_FUNCTION);
  lua_pushfstring(L, "gpu.Function(%s%s)", f->name, f->module->ptr ? "" : ", module freed");
  return 1;
}

/* ---------------------------------------------------------------- scalars and handlers */

/* gpu.int32(x) and friends: upvalue 1 is the dtype id. */
static int scalar_new (lua_State *L) {
  gpu_DtypeId dtype = (gpu_DtypeId)lua_tointeger(L, lua_upvalueindex(1));
  gpu_Scalar *s;
  const char *bad;
  luaL_checkany(L, 1);          /* before the userdata, which would otherwise be argument 1 */
  s = (gpu_Scalar *)lua_newuserdatauv(L, sizeof(gpu_Scalar), 0);
  memset(s, 0, sizeof *s);
  s->dtype = dtype;
  if ((bad = gpu_tovalue(L, 1, dtype, s->bytes)) != NULL) {
    if (lua_type(L, 1) == LUA_TNUMBER)
      return luaL_argerror(L, 1, lua_pushfstring(L, "%s is %s", lua_tostring(L, 1), bad));
    return luaL_argerror(L, 1, lua_pushfstring(L, "%s, got %s", bad, luaL_typename(L, 1)));
  }
  luaL_setmetatable(L, GPU_SCALAR);
  return 1;
}

static int scalar_index (lua_State *L) {
  gpu_Scalar *s = (gpu_Scalar *)luaL_checkudata(L, 1, GPU_SCALAR);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "value") == 0) gpu_pushvalue(L, s->dtype, s->bytes);
  else if (strcmp(key, "dtype") == 0) lua_pushstring(L, gpu_dtypes[s->dtype].name);
  else if (strcmp(key, "nbytes") == 0) lua_pushinteger(L, gpu_dtypes[s->dtype].itemsize);
  else return 0;
  return 1;
}

static int scalar_tostring (lua_State *L) {
  gpu_Scalar *s = (gpu_Scalar *)luaL_checkudata(L, 1, GPU_SCALAR);
  if (s->dtype == GPU_UINT64) {     /* unsigned, as arrays print it: its value reads negative */
    unsigned long long u;
    char digits[24];
    memcpy(&u, s->bytes, sizeof u);
    snprintf(digits, sizeof digits, "%llu", u);
    lua_pushfstring(L, "uint64(%s)", digits);
    return 1;
  }
  gpu_pushvalue(L, s->dtype, s->bytes);
  lua_pushfstring(L, "%s(%s)", gpu_dtypes[s->dtype].name, luaL_tolstring(L, -1, NULL));
  return 1;
}

static int scalar_eq (lua_State *L) {
  gpu_Scalar *a = (gpu_Scalar *)luaL_checkudata(L, 1, GPU_SCALAR);
  gpu_Scalar *b = (gpu_Scalar *)luaL_checkudata(L, 2, GPU_SCALAR);
  lua_pushboolean(L, a->dtype == b->dtype && memcmp(a->bytes, b->bytes, 8) == 0);
  return 1;
}

static int handler_new (lua_State *L, int direction) {
  gpu_ArgHandler *h;
  if (direction == GPU_IN) gpu_checkhostbytes(L, 1, NULL, NULL);
  else gpu_checkhostarray(L, 1);      /* Out and InOut write back: no strings */
  h = (gpu_ArgHandler *)lua_newuserdatauv(L, sizeof(gpu_ArgHandler), 1);
  h->direction = direction;
  luaL_setmetatable(L, GPU_ARGHANDLER);
  gpu_pin(L, -1, 1, 1);
  return 1;
}

static int gpu_In (lua_State *L) { return handler_new(L, GPU_IN); }
static int gpu_Out (lua_State *L) { return handler_new(L, GPU_OUT); }
static int gpu_InOut (lua_State *L) { return handler_new(L, GPU_INOUT); }

static int handler_tostring (lua_State *L) {
  static const char *const names[] = {"", "In", "Out", "InOut"};
  gpu_ArgHandler *h = (gpu_ArgHandler *)luaL_checkudata(L, 1, GPU_ARGHANDLER);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "gpu.%s(%s)", names[h->direction], luaL_tolstring(L, -1, NULL));
  return 1;
}

/* handler.array: the host data it wraps */
static int handler_index (lua_State *L) {
  luaL_checkudata(L, 1, GPU_ARGHANDLER);
  if (strcmp(luaL_checkstring(L, 2), "array") != 0) return 0;
  lua_getiuservalue(L, 1, 1);
  return 1;
}

void gpu_launch_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"In", gpu_In}, {"Out", gpu_Out}, {"InOut", gpu_InOut}, {NULL, NULL},
  };
  static const luaL_Reg no_functions[] = {{NULL, NULL}};
  static const luaL_Reg function_meta[] = {
    {"__call", function_call}, {"__tostring", function_tostring},
    {NULL, NULL},
  };
  static const luaL_Reg function_methods[] = {
    {"prepare", function_prepare}, {"prepared_call", function_prepared_call},
    {"prepared_async_call", function_prepared_async_call},
    {"prepared_timed_call", function_prepared_timed_call},
    {"set_attribute", function_set_attribute},
    {"max_potential_block_size", function_max_potential_block_size},
    {"max_active_blocks_per_multiprocessor", function_max_active_blocks}, {NULL, NULL},
  };
  static const luaL_Reg scalar_meta[] = {
    {"__index", scalar_index}, {"__tostring", scalar_tostring}, {"__eq", scalar_eq},
    {NULL, NULL},
  };
  static const luaL_Reg handler_meta[] = {
    {"__tostring", handler_tostring}, {"__index", handler_index}, {NULL, NULL},
  };
  int i;
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_FUNCTION, no_functions, NULL);  /* its functions get the class below */
  gpu_newtype(L, GPU_SCALAR, scalar_meta, NULL);
  gpu_newtype(L, GPU_ARGHANDLER, handler_meta, NULL);
  lua_pop(L, 3);
  /* the Function class, then every C function that takes a Function, with the class as
     upvalue 2 (see class_key) */
  luaL_getmetatable(L, GPU_FUNCTION);
  lua_getfield(L, -1, "__methods");
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, GPU_FUNCTION);
  lua_setfield(L, -2, "__metatable");       /* getmetatable and setmetatable stop there */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &class_key);
  lua_pushvalue(L, -2);                     /* metatable methods class | methods methods class */
  lua_pushvalue(L, -3);
  lua_pushvalue(L, -3);
  luaL_setfuncs(L, function_methods, 2);
  lua_pushvalue(L, -4);                     /* ... | methods metatable methods class */
  lua_pushvalue(L, -4);
  lua_pushvalue(L, -4);
  luaL_setfuncs(L, function_meta, 2);
  lua_createtable(L, 0, 1);                 /* the metatable of every Function's fields */
  lua_pushvalue(L, -5);
  lua_pushvalue(L, -5);
  lua_pushcclosure(L, function_attribute, 2);
  lua_setfield(L, -2, "__index");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &fields_meta_key);
  lua_pop(L, 5);
  for (i = 0; i < GPU_NDTYPES; i++) {       /* gpu.int32, gpu.float32, ... */
    lua_pushinteger(L, i);
    lua_pushcclosure(L, scalar_new, 1);
    lua_setfield(L, -2, gpu_dtypes[i].name);
  }
}
