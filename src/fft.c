/*
** fft.c: discrete Fourier transforms through cuFFT, loaded lazily like cuBLAS.
**
** A gpu.FFTPlan is one cuFFT plan: a transform type (C2C, Z2Z, R2C, D2Z, C2R, Z2D), the
** transform's sizes (one to three axes, the last varying fastest) and a batch, over
** contiguous arrays in cuFFT's basic layout.  lua/gpu/fft.lua makes and caches the plans and
** brings each transform's axes last; here a plan is only made, run and freed.  Plans do not
** allocate their work area: execute takes one (a Buffer from the stream-ordered pool), so
** the pool serves cuFFT as it serves everything else.
**
** The library comes from GPU_CUFFT_LIBRARY, else libcufft.so.12 or .11 where dlopen finds
** them, else $CUDA_HOME/lib64; it is process-wide, loaded once under pthread_once.  A plan
** belongs to its Context (one lua_State, one device) and is made and run with that context
** current.
*/
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cufft.h>

#include "gpu.h"

#define GPU_FFTPLAN "gpu.FFTPlan"

#define GPU_CUFFT_SYMBOLS(X)                                                               \
  X(cufftGetProperty, cufftResult, (libraryPropertyType, int *))                           \
  X(cufftCreate, cufftResult, (cufftHandle *))                                             \
  X(cufftDestroy, cufftResult, (cufftHandle))                                              \
  X(cufftSetAutoAllocation, cufftResult, (cufftHandle, int))                               \
  X(cufftMakePlanMany64, cufftResult,                                                      \
    (cufftHandle, int, long long *, long long *, long long, long long, long long *,        \
     long long, long long, cufftType, long long, size_t *))                                \
  X(cufftSetWorkArea, cufftResult, (cufftHandle, void *))                                  \
  X(cufftSetStream, cufftResult, (cufftHandle, cudaStream_t))                              \
  X(cufftExecC2C, cufftResult, (cufftHandle, cufftComplex *, cufftComplex *, int))         \
  X(cufftExecZ2Z, cufftResult,                                                             \
    (cufftHandle, cufftDoubleComplex *, cufftDoubleComplex *, int))                        \
  X(cufftExecR2C, cufftResult, (cufftHandle, cufftReal *, cufftComplex *))                 \
  X(cufftExecD2Z, cufftResult, (cufftHandle, cufftDoubleReal *, cufftDoubleComplex *))     \
  X(cufftExecC2R, cufftResult, (cufftHandle, cufftComplex *, cufftReal *))                 \
  X(cufftExecZ2D, cufftResult, (cufftHandle, cufftDoubleComplex *, cufftDoubleReal *))

static struct {
  pthread_once_t once;
#define GPU_CUFFT_FIELD(name, ret, args) ret (*name) args;
  GPU_CUFFT_SYMBOLS(GPU_CUFFT_FIELD)
#undef GPU_CUFFT_FIELD
  int ok;
  int version;              /* major * 10000 + minor * 100 + patch */
  char path[PATH_MAX];      /* the library that was loaded */
  char why[PATH_MAX + 256]; /* why none could be, when ok is 0 */
} fft = { PTHREAD_ONCE_INIT };

static const char *const cufft_names[] = {"libcufft.so.12", "libcufft.so.11"};
#define CUFFT_NAME_COUNT (sizeof cufft_names / sizeof cufft_names[0])

static void load_cufft (void) {
  int major = 0, minor = 0, patch = 0;
  void *lib = gpu_open_library("cuFFT", "GPU_CUFFT_LIBRARY", cufft_names, CUFFT_NAME_COUNT,
                               fft.path, fft.why, sizeof fft.why);
  if (lib == NULL) return;
#define GPU_CUFFT_RESOLVE(name, ret, args)                                            \
  if ((*(void **)&fft.name = dlsym(lib, #name)) == NULL) {                            \
    snprintf(fft.why, sizeof fft.why, "%s lacks %s", fft.path, #name);                \
    return;                                                                           \
  }
  GPU_CUFFT_SYMBOLS(GPU_CUFFT_RESOLVE)
#undef GPU_CUFFT_RESOLVE
  fft.cufftGetProperty(MAJOR_VERSION, &major);
  fft.cufftGetProperty(MINOR_VERSION, &minor);
  fft.cufftGetProperty(PATCH_LEVEL, &patch);
  fft.version = major * 10000 + minor * 100 + patch;
  fft.ok = 1;
}

static int cufft_loaded (void) {
  pthread_once(&fft.once, load_cufft);
  return fft.ok;
}

/* cuFFT has no function that names its results: cufft.h's names, and what the manual says. */
static const char *result_name (cufftResult r, const char **meaning) {
  switch (r) {
#define GPU_CUFFT_RESULT(name, text) case name: *meaning = text; return #name;
    GPU_CUFFT_RESULT(CUFFT_INVALID_PLAN, "the plan handle is not valid")
    GPU_CUFFT_RESULT(CUFFT_ALLOC_FAILED, "cuFFT failed to allocate GPU or host memory")
    GPU_CUFFT_RESULT(CUFFT_INVALID_TYPE, "the transform type is not supported")
    GPU_CUFFT_RESULT(CUFFT_INVALID_VALUE, "a pointer or parameter is not valid")
    GPU_CUFFT_RESULT(CUFFT_INTERNAL_ERROR, "a driver or internal cuFFT library error")
    GPU_CUFFT_RESULT(CUFFT_EXEC_FAILED, "cuFFT failed to run the transform on the GPU")
    GPU_CUFFT_RESULT(CUFFT_SETUP_FAILED, "the cuFFT library failed to initialize")
    GPU_CUFFT_RESULT(CUFFT_INVALID_SIZE, "a transform size is not supported")
    GPU_CUFFT_RESULT(CUFFT_UNALIGNED_DATA, "the data is not aligned as cuFFT needs")
    GPU_CUFFT_RESULT(CUFFT_INVALID_DEVICE, "the plan was made on another device")
    GPU_CUFFT_RESULT(CUFFT_NO_WORKSPACE, "no work area was given to the plan")
    GPU_CUFFT_RESULT(CUFFT_NOT_IMPLEMENTED, "the functionality is not implemented")
    GPU_CUFFT_RESULT(CUFFT_NOT_SUPPORTED, "the operation is not supported for these parameters")
#undef GPU_CUFFT_RESULT
    default: *meaning = "an unknown cuFFT result"; return "CUFFT_UNKNOWN_ERROR";
  }
}

static void check_result (lua_State *L, cufftResult r, const char *call) {
  const char *meaning, *name;
  if (r == CUFFT_SUCCESS) return;
  name = result_name(r, &meaning);
  gpu_raise(L, (int)r, name, meaning, call, NULL);
}

/* ---------------------------------------------------------------- plans */

typedef struct gpu_FFTPlan {
  cufftHandle handle;
  int live;                 /* 0 until made, and once freed */
  cufftType type;
  gpu_Context *ctx;
  long long in_elements, out_elements;   /* of the input and output arrays, batch included */
  size_t work_size;         /* bytes of the work area execute needs */
} gpu_FFTPlan;

static const struct {
  const char *name, *exec;  /* the type's name in fft_plan, the call that runs it */
  cufftType type;
  gpu_DtypeId in, out;
} plan_types[] = {
  {"C2C", "cufftExecC2C", CUFFT_C2C, GPU_COMPLEX64, GPU_COMPLEX64},
  {"Z2Z", "cufftExecZ2Z", CUFFT_Z2Z, GPU_COMPLEX128, GPU_COMPLEX128},
  {"R2C", "cufftExecR2C", CUFFT_R2C, GPU_FLOAT32, GPU_COMPLEX64},
  {"D2Z", "cufftExecD2Z", CUFFT_D2Z, GPU_FLOAT64, GPU_COMPLEX128},
  {"C2R", "cufftExecC2R", CUFFT_C2R, GPU_COMPLEX64, GPU_FLOAT32},
  {"Z2D", "cufftExecZ2D", CUFFT_Z2D, GPU_COMPLEX128, GPU_FLOAT64},
};
#define PLAN_TYPE_COUNT (sizeof plan_types / sizeof plan_types[0])

static int is_complex (gpu_DtypeId dtype) {
  return dtype == GPU_COMPLEX64 || dtype == GPU_COMPLEX128;
}

static int type_index (cufftType type) {
  size_t i;
  for (i = 0; i < PLAN_TYPE_COUNT; i++)
    if (plan_types[i].type == type) return (int)i;
  return 0;
}

/*
** fft_plan(type, sizes, batch) -> gpu.FFTPlan: type one of "C2C", "Z2Z", "R2C", "D2Z", "C2R",
** "Z2D"; sizes a list of one to three transform sizes (each axis's logical length, the last
** fastest; a real transform's complex side has the last size // 2 + 1); batch how many.
*/
static int gpu_fft_plan (lua_State *L) {
  static const char *const type_names[] = {"C2C", "Z2Z", "R2C", "D2Z", "C2R", "Z2D", NULL};
  int t = luaL_checkoption(L, 1, NULL, type_names), rank, i;
  long long sizes[3], batch, inner_in = 1, inner_out = 1;
  lua_Integer b;
  gpu_FFTPlan *p;
  gpu_Context *c;
  luaL_checktype(L, 2, LUA_TTABLE);
  rank = (int)lua_rawlen(L, 2);
  luaL_argcheck(L, rank >= 1 && rank <= 3, 2, "one to three sizes expected");
  for (i = 0; i < rank; i++) {
    lua_Integer n;
    lua_rawgeti(L, 2, i + 1);
    n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    luaL_argcheck(L, n >= 1 && n <= INT_MAX, 2, "sizes must be integers from 1 to 2^31 - 1");
    sizes[i] = (long long)n;
  }
  b = luaL_checkinteger(L, 3);
  luaL_argcheck(L, b >= 1, 3, "batch must be at least 1");
  batch = (long long)b;
  for (i = 0; i < rank; i++) {    /* a real transform's complex side: n // 2 + 1 last */
    int halved = i == rank - 1 && plan_types[t].in != plan_types[t].out;
    long long complex_size = halved ? sizes[i] / 2 + 1 : sizes[i];
    inner_in *= is_complex(plan_types[t].in) ? complex_size : sizes[i];
    inner_out *= is_complex(plan_types[t].out) ? complex_size : sizes[i];
  }
  if (!cufft_loaded()) return luaL_error(L, "cuFFT is not available: %s", fft.why);
  c = gpu_context_push(L);                       /* the Context, pinned below */
  p = (gpu_FFTPlan *)lua_newuserdatauv(L, sizeof(gpu_FFTPlan), 1);
  memset(p, 0, sizeof *p);                       /* closed until the plan is made */
  luaL_setmetatable(L, GPU_FFTPLAN);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1);
  p->ctx = c;
  p->type = plan_types[t].type;
  p->in_elements = inner_in * batch;
  p->out_elements = inner_out * batch;
  gpu_context_enter(L, c);
  check_result(L, fft.cufftCreate(&p->handle), "cufftCreate");
  p->live = 1;                                   /* from here __gc destroys the handle */
  check_result(L, fft.cufftSetAutoAllocation(p->handle, 0), "cufftSetAutoAllocation");
  check_result(L, fft.cufftMakePlanMany64(p->handle, rank, sizes, NULL, 1, 0, NULL, 1, 0,
                                          p->type, batch, &p->work_size),
               "cufftMakePlanMany64");
  return 1;
}

static gpu_FFTPlan *check_plan (lua_State *L, int arg) {
  gpu_FFTPlan *p = (gpu_FFTPlan *)luaL_checkudata(L, arg, GPU_FFTPLAN);
  if (!p->live) gpu_freed_error(L, arg, "plan");
  return p;
}

/* An argument of execute: an alive contiguous array of dtype and elements, in the plan's
** Context. */
static gpu_Array *check_operand (lua_State *L, int arg, const gpu_FFTPlan *p, gpu_DtypeId dtype,
                                 long long elements) {
  gpu_Array *a = gpu_checkarray(L, arg);
  if (!gpu_array_alive(a)) gpu_freed_error(L, arg, "array");
  if (a->dtype != dtype)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s array expected, got %s", gpu_dtypes[dtype].name,
                                          gpu_dtypes[a->dtype].name));
  if (!a->contiguous || a->size != elements)
    luaL_argerror(L, arg, lua_pushfstring(L, "contiguous array of %I elements expected",
                                          (lua_Integer)elements));
  if (a->buffer->ctx != p->ctx) luaL_argerror(L, arg, "array is in another context than the plan");
  return a;
}

/*
** plan:execute(input, output, inverse, work, stream): runs the transform from input into
** output (which may be input for C2C and Z2Z); inverse picks the C2C and Z2Z direction.  work
** is a Buffer of plan:work_size() bytes or more (nil when that is 0); stream a gpu.Stream or
** nil (the host's stream).  A C2R or Z2D transform overwrites its input.
*/
static int plan_execute (lua_State *L) {
  gpu_FFTPlan *p = check_plan(L, 1);
  int t = type_index(p->type);
  gpu_Array *in = check_operand(L, 2, p, plan_types[t].in, p->in_elements);
  gpu_Array *out = check_operand(L, 3, p, plan_types[t].out, p->out_elements);
  int direction = lua_toboolean(L, 4) ? CUFFT_INVERSE : CUFFT_FORWARD;
  void *work = NULL;
  CUstream stream = p->ctx->stream;
  cufftResult r;
  if (!lua_isnoneornil(L, 5)) {
    gpu_Buffer *b = gpu_testbuffer(L, 5);
    if (b == NULL) luaL_argerror(L, 5, "gpu.Buffer expected for the work area");
    if (b->ptr == 0) gpu_freed_error(L, 5, "buffer");
    if (b->size < p->work_size || b->ctx != p->ctx)
      luaL_argerror(L, 5, lua_pushfstring(L, "work area of %I bytes or more in the plan's context "
                                          "expected", (lua_Integer)p->work_size));
    work = (void *)b->ptr;
  } else if (p->work_size > 0) {
    luaL_argerror(L, 5, lua_pushfstring(L, "work area of %I bytes expected",
                                        (lua_Integer)p->work_size));
  }
  if (!lua_isnoneornil(L, 6)) {
    gpu_Stream *s = (gpu_Stream *)luaL_checkudata(L, 6, GPU_STREAM);
    if (!s->live) gpu_freed_error(L, 6, "stream");
    if (s->ctx != p->ctx) luaL_argerror(L, 6, "stream is in another context than the plan");
    stream = s->stream;
  }
  gpu_context_enter(L, p->ctx);
  /* a graph captured here replays the plan on these arrays: it pins and checks them all */
  gpu_capture_note(L, 6, 1);
  gpu_capture_note(L, 6, 2);
  gpu_capture_note(L, 6, 3);
  gpu_capture_note(L, 6, 5);
  check_result(L, fft.cufftSetStream(p->handle, (cudaStream_t)stream), "cufftSetStream");
  check_result(L, fft.cufftSetWorkArea(p->handle, work), "cufftSetWorkArea");
  switch (p->type) {
    case CUFFT_C2C:
      r = fft.cufftExecC2C(p->handle, (cufftComplex *)in->ptr, (cufftComplex *)out->ptr, direction);
      break;
    case CUFFT_Z2Z:
      r = fft.cufftExecZ2Z(p->handle, (cufftDoubleComplex *)in->ptr, (cufftDoubleComplex *)out->ptr,
                           direction);
      break;
    case CUFFT_R2C:
      r = fft.cufftExecR2C(p->handle, (cufftReal *)in->ptr, (cufftComplex *)out->ptr);
      break;
    case CUFFT_D2Z:
      r = fft.cufftExecD2Z(p->handle, (cufftDoubleReal *)in->ptr, (cufftDoubleComplex *)out->ptr);
      break;
    case CUFFT_C2R:
      r = fft.cufftExecC2R(p->handle, (cufftComplex *)in->ptr, (cufftReal *)out->ptr);
      break;
    default:
      r = fft.cufftExecZ2D(p->handle, (cufftDoubleComplex *)in->ptr, (cufftDoubleReal *)out->ptr);
      break;
  }
  check_result(L, r, plan_types[t].exec);
  return 0;
}

int gpu_fftplan_state (lua_State *L, int idx) {
  gpu_FFTPlan *p = (gpu_FFTPlan *)luaL_testudata(L, idx, GPU_FFTPLAN);
  return p == NULL ? -1 : p->live;
}

/* plan:work_size() -> bytes of the work area execute needs */
static int plan_work_size (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_plan(L, 1)->work_size);
  return 1;
}

/* __gc, __close and :free(): destroys the plan once, with its context current */
static int plan_free (lua_State *L) {
  gpu_FFTPlan *p = (gpu_FFTPlan *)luaL_checkudata(L, 1, GPU_FFTPLAN);
  CUcontext prev;
  if (p->live && gpu_context_try_enter(p->ctx, &prev)) {
    fft.cufftDestroy(p->handle);
    gpu_context_restore(p->ctx, prev);
  }
  p->live = 0;
  return 0;
}

static int plan_tostring (lua_State *L) {
  gpu_FFTPlan *p = (gpu_FFTPlan *)luaL_checkudata(L, 1, GPU_FFTPLAN);
  if (p->live) lua_pushfstring(L, "gpu.FFTPlan(%s, %I elements in)",
                               plan_types[type_index(p->type)].name, (lua_Integer)p->in_elements);
  else lua_pushliteral(L, "gpu.FFTPlan(freed)");
  return 1;
}

/* cufft_version() -> version (major * 10000 + minor * 100 + patch), path; or nil, why */
static int gpu_cufft_version (lua_State *L) {
  if (!cufft_loaded()) {
    lua_pushnil(L);
    lua_pushstring(L, fft.why);
    return 2;
  }
  lua_pushinteger(L, fft.version);
  lua_pushstring(L, fft.path);
  return 2;
}

void gpu_fft_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"fft_plan", gpu_fft_plan}, {"cufft_version", gpu_cufft_version}, {NULL, NULL},
  };
  static const luaL_Reg plan_meta[] = {
    {"__gc", plan_free}, {"__close", plan_free}, {"__tostring", plan_tostring}, {NULL, NULL},
  };
  static const luaL_Reg plan_methods[] = {
    {"free", plan_free}, {"close", plan_free}, {"execute", plan_execute},
    {"work_size", plan_work_size}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_FFTPLAN, plan_meta, plan_methods);
}
