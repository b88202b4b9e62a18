/*
** solver.c: dense factorizations and solvers through cuSOLVER, loaded lazily like cuFFT.
**
** lua/gpu/linalg.lua (NumPy's numpy.linalg) prepares contiguous arrays of float32, float64,
** complex64 or complex128 and hands them here; each function runs one cuSOLVER routine on
** every matrix of a stack, in place, in the order of a stream: LU (getrf, getrs), Cholesky
** (potrf, potrs), QR (geqrf, orgqr/ungqr), Hermitian eigenvalues (syevd), singular values
** (gesvd) and general eigenvalues (geev, CUDA 12.6's, so optional).
** cuSOLVER reads matrices column-major, so an array of shape (..., cols, rows) holds a stack
** of column-major rows x cols matrices, each the transpose of the row-major matrix the array
** shows; the Lua layer turns that to account (linalg.lua says how).  Each matrix's
** info (> 0: singular, not positive definite, not converged) goes to a device int32 array
** that the caller reads, or not, when it chooses.
**
** Work areas: the device's from this state's stream-ordered pool, freed in the stream's
** order once the stack is done; the host's (most routines need none) a Lua userdata, which
** an error cannot leak.  A handle (and its cusolverDnParams) belongs to a Context, made on
** first use and destroyed when the Context is released (device.c), as cuBLAS's is.
**
** The library comes from GPU_CUSOLVER_LIBRARY, else libcusolver.so.12 or .11 where dlopen
** finds them, else $CUDA_HOME/lib64; it is process-wide, loaded once under pthread_once.
*/
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* cusolverDn.h declares cusolverDnLoggerForceDisable() without a prototype */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cusolverDn.h>
#pragma GCC diagnostic pop

#include "gpu.h"

/* orgqr's and ungqr's (the generation of Q) for one element type: the 32-bit API, as the
** 64-bit one has no such routine. */
#define GPU_CUSOLVER_ORGQR(X, name, T)                                                     \
  X(cusolverDn##name##_bufferSize, cusolverStatus_t,                                       \
    (cusolverDnHandle_t, int, int, int, const T *, int, const T *, int *))                 \
  X(cusolverDn##name, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, int, int, int, T *, int, const T *, T *, int, int *))

#define GPU_CUSOLVER_SYMBOLS(X)                                                            \
  X(cusolverGetProperty, cusolverStatus_t, (libraryPropertyType, int *))                   \
  X(cusolverDnCreate, cusolverStatus_t, (cusolverDnHandle_t *))                            \
  X(cusolverDnDestroy, cusolverStatus_t, (cusolverDnHandle_t))                             \
  X(cusolverDnSetStream, cusolverStatus_t, (cusolverDnHandle_t, cudaStream_t))             \
  X(cusolverDnCreateParams, cusolverStatus_t, (cusolverDnParams_t *))                      \
  X(cusolverDnDestroyParams, cusolverStatus_t, (cusolverDnParams_t))                       \
  X(cusolverDnXgetrf_bufferSize, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, cudaDataType, const void *, \
     int64_t, cudaDataType, size_t *, size_t *))                                           \
  X(cusolverDnXgetrf, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, cudaDataType, void *,       \
     int64_t, int64_t *, cudaDataType, void *, size_t, void *, size_t, int *))             \
  X(cusolverDnXgetrs, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasOperation_t, int64_t, int64_t,          \
     cudaDataType, const void *, int64_t, const int64_t *, cudaDataType, void *, int64_t,  \
     int *))                                                                               \
  X(cusolverDnXpotrf_bufferSize, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasFillMode_t, int64_t, cudaDataType,      \
     const void *, int64_t, cudaDataType, size_t *, size_t *))                             \
  X(cusolverDnXpotrf, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasFillMode_t, int64_t, cudaDataType,      \
     void *, int64_t, cudaDataType, void *, size_t, void *, size_t, int *))                \
  X(cusolverDnXpotrs, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, cublasFillMode_t, int64_t, int64_t,           \
     cudaDataType, const void *, int64_t, cudaDataType, void *, int64_t, int *))           \
  X(cusolverDnXgeqrf_bufferSize, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, cudaDataType, const void *, \
     int64_t, cudaDataType, const void *, cudaDataType, size_t *, size_t *))               \
  X(cusolverDnXgeqrf, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, int64_t, int64_t, cudaDataType, void *,       \
     int64_t, cudaDataType, void *, cudaDataType, void *, size_t, void *, size_t, int *))  \
  GPU_CUSOLVER_ORGQR(X, Sorgqr, float)                                                     \
  GPU_CUSOLVER_ORGQR(X, Dorgqr, double)                                                    \
  GPU_CUSOLVER_ORGQR(X, Cungqr, cuComplex)                                                 \
  GPU_CUSOLVER_ORGQR(X, Zungqr, cuDoubleComplex)                                           \
  X(cusolverDnXsyevd_bufferSize, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverDnParams_t, cusolverEigMode_t, cublasFillMode_t, int64_t, \
     cudaDataType, const void *, int64_t, cudaDataType, const void *, cudaDataType,        \
     size_t *, size_t *))                                                                  \
  X(cusolverDnXsyevd, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, cusolverEigMode_t, cublasFillMode_t, int64_t, \
     cudaDataType, void *, int64_t, cudaDataType, void *, cudaDataType, void *, size_t,    \
     void *, size_t, int *))                                                               \
  X(cusolverDnXgesvd_bufferSize, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverDnParams_t, signed char, signed char, int64_t, int64_t,   \
     cudaDataType, const void *, int64_t, cudaDataType, const void *, cudaDataType,        \
     const void *, int64_t, cudaDataType, const void *, int64_t, cudaDataType, size_t *,   \
     size_t *))                                                                            \
  X(cusolverDnXgesvd, cusolverStatus_t,                                                    \
    (cusolverDnHandle_t, cusolverDnParams_t, signed char, signed char, int64_t, int64_t,   \
     cudaDataType, void *, int64_t, cudaDataType, void *, cudaDataType, void *, int64_t,   \
     cudaDataType, void *, int64_t, cudaDataType, void *, size_t, void *, size_t, int *)) \
  X(cusolverDnCreateSyevjInfo, cusolverStatus_t, (syevjInfo_t *))                          \
  X(cusolverDnDestroySyevjInfo, cusolverStatus_t, (syevjInfo_t))                           \
  X(cusolverDnCreateGesvdjInfo, cusolverStatus_t, (gesvdjInfo_t *))                        \
  X(cusolverDnDestroyGesvdjInfo, cusolverStatus_t, (gesvdjInfo_t))                         \
  GPU_CUSOLVER_BATCHED(X, Spotrf, Ssyevj, Sgesvdj, float, float)                           \
  GPU_CUSOLVER_BATCHED(X, Dpotrf, Dsyevj, Dgesvdj, double, double)                         \
  GPU_CUSOLVER_BATCHED(X, Cpotrf, Cheevj, Cgesvdj, cuComplex, float)                       \
  GPU_CUSOLVER_BATCHED(X, Zpotrf, Zheevj, Zgesvdj, cuDoubleComplex, double)

/* The batched routines of one element type, for stacks of small matrices: Cholesky on device
** arrays of the matrices' addresses; Jacobi eigenvalues and singular values (m, n <= 32) on
** the stack itself. */
#define GPU_CUSOLVER_BATCHED(X, potrf, syevj, gesvdj, T, R)                                \
  X(cusolverDn##potrf##Batched, cusolverStatus_t,                                          \
    (cusolverDnHandle_t, cublasFillMode_t, int, T *[], int, int *, int))                   \
  X(cusolverDn##syevj##Batched_bufferSize, cusolverStatus_t,                               \
    (cusolverDnHandle_t, cusolverEigMode_t, cublasFillMode_t, int, const T *, int,         \
     const R *, int *, syevjInfo_t, int))                                                  \
  X(cusolverDn##syevj##Batched, cusolverStatus_t,                                          \
    (cusolverDnHandle_t, cusolverEigMode_t, cublasFillMode_t, int, T *, int, R *, T *,     \
     int, int *, syevjInfo_t, int))                                                        \
  X(cusolverDn##gesvdj##Batched_bufferSize, cusolverStatus_t,                              \
    (cusolverDnHandle_t, cusolverEigMode_t, int, int, const T *, int, const R *,           \
     const T *, int, const T *, int, int *, gesvdjInfo_t, int))                            \
  X(cusolverDn##gesvdj##Batched, cusolverStatus_t,                                         \
    (cusolverDnHandle_t, cusolverEigMode_t, int, int, T *, int, R *, T *, int, T *, int,   \
     T *, int, int *, gesvdjInfo_t, int))

/* What cuSOLVER 11.6 (CUDA 12.6) added: resolved where there, NULL where not (the rest serve
** all the same). */
#define GPU_CUSOLVER_OPTIONAL(X)                                                           \
  X(cusolverDnXgeev_bufferSize, cusolverStatus_t,                                          \
    (cusolverDnHandle_t, cusolverDnParams_t, cusolverEigMode_t, cusolverEigMode_t, int64_t,\
     cudaDataType, const void *, int64_t, cudaDataType, const void *, cudaDataType,        \
     const void *, int64_t, cudaDataType, const void *, int64_t, cudaDataType, size_t *,   \
     size_t *))                                                                            \
  X(cusolverDnXgeev, cusolverStatus_t,                                                     \
    (cusolverDnHandle_t, cusolverDnParams_t, cusolverEigMode_t, cusolverEigMode_t, int64_t,\
     cudaDataType, void *, int64_t, cudaDataType, void *, cudaDataType, void *, int64_t,   \
     cudaDataType, void *, int64_t, cudaDataType, void *, size_t, void *, size_t, int *))

static struct {
  pthread_once_t once;
#define GPU_CUSOLVER_FIELD(name, ret, args) ret (*name) args;
  GPU_CUSOLVER_SYMBOLS(GPU_CUSOLVER_FIELD)
  GPU_CUSOLVER_OPTIONAL(GPU_CUSOLVER_FIELD)
#undef GPU_CUSOLVER_FIELD
  int ok;
  int version;              /* major * 10000 + minor * 100 + patch */
  char path[PATH_MAX];      /* the library that was loaded */
  char why[PATH_MAX + 256]; /* why none could be, when ok is 0 */
} sv = { PTHREAD_ONCE_INIT };

static const char *const cusolver_names[] = {"libcusolver.so.12", "libcusolver.so.11"};
#define CUSOLVER_NAME_COUNT (sizeof cusolver_names / sizeof cusolver_names[0])

static void load_cusolver (void) {
  int major = 0, minor = 0, patch = 0;
  void *lib = gpu_open_library("cuSOLVER", "GPU_CUSOLVER_LIBRARY", cusolver_names,
                               CUSOLVER_NAME_COUNT, sv.path, sv.why, sizeof sv.why);
  if (lib == NULL) return;
#define GPU_CUSOLVER_RESOLVE(name, ret, args)                                         \
  if ((*(void **)&sv.name = dlsym(lib, #name)) == NULL) {                             \
    snprintf(sv.why, sizeof sv.why, "%s lacks %s", sv.path, #name);                   \
    return;                                                                           \
  }
  GPU_CUSOLVER_SYMBOLS(GPU_CUSOLVER_RESOLVE)
#undef GPU_CUSOLVER_RESOLVE
#define GPU_CUSOLVER_RESOLVE_OPTIONAL(name, ret, args) *(void **)&sv.name = dlsym(lib, #name);
  GPU_CUSOLVER_OPTIONAL(GPU_CUSOLVER_RESOLVE_OPTIONAL)
#undef GPU_CUSOLVER_RESOLVE_OPTIONAL
  sv.cusolverGetProperty(MAJOR_VERSION, &major);
  sv.cusolverGetProperty(MINOR_VERSION, &minor);
  sv.cusolverGetProperty(PATCH_LEVEL, &patch);
  sv.version = major * 10000 + minor * 100 + patch;
  sv.ok = 1;
}

static int cusolver_loaded (void) {
  pthread_once(&sv.once, load_cusolver);
  return sv.ok;
}

/* cuSOLVER has no function that names its statuses: cusolver_common.h's names, and what the
** manual says of each. */
static const char *status_name (cusolverStatus_t s, const char **meaning) {
  switch (s) {
#define GPU_CUSOLVER_STATUS(name, text) case name: *meaning = text; return #name;
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_NOT_INITIALIZED, "the cuSOLVER library was not initialized")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_ALLOC_FAILED, "cuSOLVER failed to allocate memory")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_INVALID_VALUE, "a parameter is not valid")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_ARCH_MISMATCH, "the device lacks a feature the routine needs")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_MAPPING_ERROR, "a texture or memory mapping failed")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_EXECUTION_FAILED, "the routine failed to run on the GPU")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_INTERNAL_ERROR, "an internal cuSOLVER operation failed")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED, "the matrix type is not supported")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_NOT_SUPPORTED, "the operation is not supported")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_ZERO_PIVOT, "a zero pivot was met")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_INVALID_LICENSE, "the license is not valid")
    GPU_CUSOLVER_STATUS(CUSOLVER_STATUS_INVALID_WORKSPACE, "the work area is not valid")
#undef GPU_CUSOLVER_STATUS
    default: *meaning = "an unknown cuSOLVER status"; return "CUSOLVER_STATUS_UNKNOWN";
  }
}

static void check_status (lua_State *L, cusolverStatus_t s, const char *call) {
  const char *meaning, *name;
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  name = status_name(s, &meaning);
  gpu_raise(L, (int)s, name, meaning, call, NULL);
}

/* ---------------------------------------------------------------- handles */

/* This state's handle in Context c, which the caller made current, and its params: made on
** first use, kept until the Context is released. */
static cusolverDnHandle_t context_solver (lua_State *L, gpu_Context *c) {
  if (c->solver == NULL) {
    cusolverDnHandle_t handle = NULL;
    check_status(L, sv.cusolverDnCreate(&handle), "cusolverDnCreate");
    c->solver = handle;
  }
  if (c->solver_params == NULL) {
    cusolverDnParams_t params = NULL;
    check_status(L, sv.cusolverDnCreateParams(&params), "cusolverDnCreateParams");
    c->solver_params = params;
  }
  return (cusolverDnHandle_t)c->solver;
}

void gpu_solver_release (gpu_Context *c) {
  CUcontext prev;           /* not restored: the state is closing (see context_release) */
  if ((c->solver != NULL || c->solver_params != NULL || c->solver_syevj != NULL ||
       c->solver_gesvdj != NULL) && gpu_context_try_enter(c, &prev)) {
    if (c->solver_gesvdj != NULL) sv.cusolverDnDestroyGesvdjInfo(c->solver_gesvdj);
    if (c->solver_syevj != NULL) sv.cusolverDnDestroySyevjInfo(c->solver_syevj);
    if (c->solver_params != NULL) sv.cusolverDnDestroyParams(c->solver_params);
    if (c->solver != NULL) sv.cusolverDnDestroy(c->solver);
  }
  c->solver = NULL;
  c->solver_params = NULL;
  c->solver_syevj = NULL;
  c->solver_gesvdj = NULL;
}

/* ---------------------------------------------------------------- operands */

/* A stack of column-major matrices in an array of shape (..., cols, rows). */
typedef struct Stack {
  gpu_Array *a;
  gpu_Context *ctx;
  cudaDataType type;        /* of the elements */
  cudaDataType real;        /* of their real parts (eigenvalues, singular values) */
  int64_t rows, cols;       /* of each matrix: the last axis's length, the one before's */
  int64_t batch;            /* matrices: the product of the leading axes */
  size_t itemsize;
} Stack;

static int element_type (gpu_DtypeId dtype, cudaDataType *type, cudaDataType *real) {
  switch (dtype) {
    case GPU_FLOAT32: *type = CUDA_R_32F; *real = CUDA_R_32F; return 1;
    case GPU_FLOAT64: *type = CUDA_R_64F; *real = CUDA_R_64F; return 1;
    case GPU_COMPLEX64: *type = CUDA_C_32F; *real = CUDA_R_32F; return 1;
    case GPU_COMPLEX128: *type = CUDA_C_64F; *real = CUDA_R_64F; return 1;
    default: return 0;
  }
}

/* An alive contiguous array, in Context c where c is given. */
static gpu_Array *check_contiguous (lua_State *L, int arg, const gpu_Context *c) {
  gpu_Array *a = gpu_checkarray(L, arg);
  if (!gpu_array_alive(a)) gpu_freed_error(L, arg, "array");
  if (!a->contiguous) luaL_argerror(L, arg, "contiguous array expected");
  if (c != NULL && a->buffer->ctx != c)
    luaL_argerror(L, arg, "array is in another context than argument #1");
  return a;
}

/* Argument arg as the stack of matrices the call works on (which sets its Context); square
** where the routine needs it. */
static void check_stack (lua_State *L, int arg, int square, Stack *st) {
  gpu_Array *a = check_contiguous(L, arg, NULL);
  int d;
  if (!element_type(a->dtype, &st->type, &st->real))
    luaL_argerror(L, arg, lua_pushfstring(L, "float32, float64, complex64 or complex128 array "
                                          "expected, got %s", gpu_dtypes[a->dtype].name));
  if (a->ndim < 2)
    luaL_argerror(L, arg, lua_pushfstring(L, "array of at least 2 dimensions expected, got %d",
                                          a->ndim));
  st->a = a;
  st->ctx = a->buffer->ctx;
  st->rows = a->shape[a->ndim - 1];
  st->cols = a->shape[a->ndim - 2];
  st->batch = 1;
  for (d = 0; d < a->ndim - 2; d++) st->batch *= a->shape[d];
  st->itemsize = gpu_dtypes[a->dtype].itemsize;
  if (square && st->rows != st->cols)
    luaL_argerror(L, arg, lua_pushfstring(L, "square matrices expected, got %I x %I",
                                          (lua_Integer)st->rows, (lua_Integer)st->cols));
}

/* Another operand of the call: an alive contiguous array of dtype and elements in the stack's
** Context. */
static gpu_Array *check_operand (lua_State *L, int arg, const Stack *st, gpu_DtypeId dtype,
                                 int64_t elements) {
  gpu_Array *a = check_contiguous(L, arg, st->ctx);
  if (a->dtype != dtype)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s array expected, got %s", gpu_dtypes[dtype].name,
                                          gpu_dtypes[a->dtype].name));
  if (a->size != elements)
    luaL_argerror(L, arg, lua_pushfstring(L, "array of %I elements expected, got %I",
                                          (lua_Integer)elements, (lua_Integer)a->size));
  return a;
}

/* The dtype of the real parts of the stack's elements. */
static gpu_DtypeId real_dtype (const Stack *st) {
  return st->real == CUDA_R_32F ? GPU_FLOAT32 : GPU_FLOAT64;
}

/* A triangle (fill mode) named "L" or "U", as cuSOLVER reads the column-major matrices. */
static cublasFillMode_t check_fill (lua_State *L, int arg) {
  static const char *const names[] = {"L", "U", NULL};
  return luaL_checkoption(L, arg, NULL, names) == 0 ? CUBLAS_FILL_MODE_LOWER
                                                     : CUBLAS_FILL_MODE_UPPER;
}

/* The stream at arg (nil: the Context's own): a live gpu.Stream of the stack's Context that
** is not capturing a graph (the callers read info back, and cuSOLVER may allocate). */
static CUstream check_stream (lua_State *L, int arg, const Stack *st) {
  gpu_Stream *s;
  if (lua_isnoneornil(L, arg)) return st->ctx->stream;
  s = (gpu_Stream *)luaL_checkudata(L, arg, GPU_STREAM);
  if (!s->live) gpu_freed_error(L, arg, "stream");
  if (s->ctx != st->ctx) luaL_argerror(L, arg, "stream is in another context than argument #1");
  if (s->capturing) luaL_argerror(L, arg, "cuSOLVER's work cannot be captured in a graph");
  return s->stream;
}

/* The address of matrix i of an array of the stack's, each matrix elements long. */
static void *matrix_at (const gpu_Array *a, int64_t i, int64_t elements) {
  return (void *)(a->ptr + (CUdeviceptr)(i * elements) * gpu_dtypes[a->dtype].itemsize);
}

/* ---------------------------------------------------------------- calls */

/* What one call holds: the handle on its stream, and the work areas of the stack's routine. */
typedef struct Call {
  gpu_Context *ctx;
  cusolverDnHandle_t handle;
  cusolverDnParams_t params;
  CUstream stream;
  gpu_Buffer *work;         /* the device's work area, from the pool */
  void *device;             /* its start, and past it an int for the infos nobody reads */
  int *scratch_info;
  void *host;               /* the host's, a userdata on the stack, NULL when none */
  CUfunction addresses;     /* batched.cu's gpu_matrix_addresses, NULL: written on the host */
} Call;

/* Starts a call on the stack's Context: the library, the handle, the stream. */
static void call_begin (lua_State *L, const Stack *st, CUstream stream, Call *call) {
  memset(call, 0, sizeof *call);
  if (!cusolver_loaded()) {             /* no position: the caller is the library's Lua */
    lua_pushfstring(L, "cuSOLVER is not available: %s", sv.why);
    lua_error(L);
  }
  call->ctx = st->ctx;
  call->stream = stream;
  gpu_context_enter(L, st->ctx);
  call->handle = context_solver(L, st->ctx);
  call->params = (cusolverDnParams_t)st->ctx->solver_params;
  check_status(L, sv.cusolverDnSetStream(call->handle, (cudaStream_t)stream),
               "cusolverDnSetStream");
}

/* The work areas, of the sizes the routine asked for: the device's from the pool (with room
** after it for one int, the info of routines whose info only flags bad arguments, which the
** status reports too), the host's as a userdata left on the stack. */
static void call_work (lua_State *L, Call *call, size_t device_bytes, size_t host_bytes) {
  size_t at = (device_bytes + 15) / 16 * 16;
  if (host_bytes > 0) call->host = lua_newuserdatauv(L, host_bytes, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, call->ctx->ref);          /* pinned by the Buffer */
  call->work = gpu_buffer_alloc(L, call->ctx, -1, 0, at + sizeof(int));
  lua_remove(L, -2);
  call->device = (void *)call->work->ptr;
  call->scratch_info = (int *)(call->work->ptr + at);
  gpu_context_enter(L, call->ctx);      /* allocating may have run finalizers */
}

/* Ends a call: its device work area goes back to the pool once the stream is past it. */
static void call_end (Call *call) {
  if (call->work != NULL) gpu_buffer_release_on(call->work, call->stream);
  call->work = NULL;
}

/* ---------------------------------------------------------------- LU */

/*
** solver_getrf(a, ipiv, info[, stream]): LU factorizations with partial pivoting, P A = L U,
** in place, of the n x n matrices of a; ipiv (int64, batch * n) gets the 1-based pivot rows
** and info (int32, batch) each matrix's info: i > 0 where U(i, i) is exactly zero.
*/
static int gpu_solver_getrf (lua_State *L) {
  Stack st;
  gpu_Array *ipiv, *info;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, n;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  ipiv = check_operand(L, 2, &st, GPU_INT64, st.batch * n);
  info = check_operand(L, 3, &st, GPU_INT32, st.batch);
  stream = check_stream(L, 4, &st);
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, sv.cusolverDnXgetrf_bufferSize(call.handle, call.params, n, n, st.type,
                                                 (void *)st.a->ptr, n, st.type, &device_bytes,
                                                 &host_bytes),
               "cusolverDnXgetrf_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXgetrf(call.handle, call.params, n, n, st.type,
                                        matrix_at(st.a, i, n * n), n,
                                        (int64_t *)matrix_at(ipiv, i, n), st.type, call.device,
                                        device_bytes, call.host, host_bytes,
                                        (int *)matrix_at(info, i, 1)),
                 "cusolverDnXgetrf");
  call_end(&call);
  return 0;
}

/* The right sides at arg that getrs and potrs overwrite: a contiguous array of the stack's
** dtype, in its Context. */
static gpu_Array *check_right_sides (lua_State *L, int arg, const Stack *st) {
  gpu_Array *b = check_contiguous(L, arg, st->ctx);
  if (b->dtype != st->a->dtype)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s array expected, got %s",
                                          gpu_dtypes[st->a->dtype].name, gpu_dtypes[b->dtype].name));
  return b;
}

/* The right sides each matrix of the stack solves: b's elements over n per matrix. */
static int64_t right_sides (lua_State *L, int arg, const Stack *st, gpu_Array *b) {
  int64_t per_matrix = st->batch * st->rows;
  if (per_matrix == 0 || b->size % per_matrix != 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "array of a multiple of %I elements expected, got %I",
                                          (lua_Integer)per_matrix, (lua_Integer)b->size));
  return b->size / per_matrix;
}

/*
** solver_getrs(lu, ipiv, b, trans[, stream]): solves op(A) X = B in place of b for each
** matrix A of the stack, from getrf's lu and ipiv; trans "N" (A), "T" (its transpose) or "C"
** (its conjugate transpose).  b, of lu's dtype, holds each matrix's right sides one after
** another, n elements each: nrhs = b's elements / (batch * n) of them (all of b's for a stack
** of one).
*/
static int gpu_solver_getrs (lua_State *L) {
  static const char *const ops[] = {"N", "T", "C", NULL};
  static const cublasOperation_t op_values[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
  Stack st;
  gpu_Array *ipiv, *b;
  cublasOperation_t op;
  CUstream stream;
  Call call;
  int64_t i, n, nrhs;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  ipiv = check_operand(L, 2, &st, GPU_INT64, st.batch * n);
  b = check_right_sides(L, 3, &st);
  op = op_values[luaL_checkoption(L, 4, NULL, ops)];
  stream = check_stream(L, 5, &st);
  if (st.batch == 0 || n == 0 || b->size == 0) return 0;
  nrhs = right_sides(L, 3, &st, b);
  call_begin(L, &st, stream, &call);
  call_work(L, &call, 0, 0);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXgetrs(call.handle, call.params, op, n, nrhs, st.type,
                                        matrix_at(st.a, i, n * n), n,
                                        (const int64_t *)matrix_at(ipiv, i, n), st.type,
                                        matrix_at(b, i, n * nrhs), n, call.scratch_info),
                 "cusolverDnXgetrs");
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- Cholesky */

/*
** solver_potrf(a, info, uplo[, stream]): Cholesky factorizations, in place, of the Hermitian
** positive-definite matrices of a that their triangle uplo ("L" or "U") defines: L L^H into
** the lower one, or U^H U into the upper one; the other is left alone.  info (int32, batch):
** i > 0 where the leading minor of order i is not positive definite.
*/
static int gpu_solver_potrf (lua_State *L) {
  Stack st;
  gpu_Array *info;
  cublasFillMode_t uplo;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, n;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  info = check_operand(L, 2, &st, GPU_INT32, st.batch);
  uplo = check_fill(L, 3);
  stream = check_stream(L, 4, &st);
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, sv.cusolverDnXpotrf_bufferSize(call.handle, call.params, uplo, n, st.type,
                                                 (void *)st.a->ptr, n, st.type, &device_bytes,
                                                 &host_bytes),
               "cusolverDnXpotrf_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXpotrf(call.handle, call.params, uplo, n, st.type,
                                        matrix_at(st.a, i, n * n), n, st.type, call.device,
                                        device_bytes, call.host, host_bytes,
                                        (int *)matrix_at(info, i, 1)),
                 "cusolverDnXpotrf");
  call_end(&call);
  return 0;
}

/*
** solver_potrs(a, b, uplo[, stream]): solves A X = B in place of b for each matrix of the
** stack, from potrf's factor in triangle uplo of a; b as getrs's.
*/
static int gpu_solver_potrs (lua_State *L) {
  Stack st;
  gpu_Array *b;
  cublasFillMode_t uplo;
  CUstream stream;
  Call call;
  int64_t i, n, nrhs;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  b = check_right_sides(L, 2, &st);
  uplo = check_fill(L, 3);
  stream = check_stream(L, 4, &st);
  if (st.batch == 0 || n == 0 || b->size == 0) return 0;
  nrhs = right_sides(L, 2, &st, b);
  call_begin(L, &st, stream, &call);
  call_work(L, &call, 0, 0);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXpotrs(call.handle, call.params, uplo, n, nrhs, st.type,
                                        matrix_at(st.a, i, n * n), n, st.type,
                                        matrix_at(b, i, n * nrhs), n, call.scratch_info),
                 "cusolverDnXpotrs");
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- QR */

/*
** solver_geqrf(a, tau, info[, stream]): QR factorizations, in place, of the m x n matrices
** of a (an array of shape (..., n, m)): R in the upper triangle, the Householder vectors of Q
** below it, their scalars in tau (a's dtype, batch * min(m, n)).
*/
static int gpu_solver_geqrf (lua_State *L) {
  Stack st;
  gpu_Array *tau, *info;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, m, n, k;
  check_stack(L, 1, 0, &st);
  m = st.rows;
  n = st.cols;
  k = m < n ? m : n;
  tau = check_operand(L, 2, &st, st.a->dtype, st.batch * k);
  info = check_operand(L, 3, &st, GPU_INT32, st.batch);
  stream = check_stream(L, 4, &st);
  if (st.batch == 0 || k == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, sv.cusolverDnXgeqrf_bufferSize(call.handle, call.params, m, n, st.type,
                                                 (void *)st.a->ptr, m, st.type, (void *)tau->ptr,
                                                 st.type, &device_bytes, &host_bytes),
               "cusolverDnXgeqrf_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXgeqrf(call.handle, call.params, m, n, st.type,
                                        matrix_at(st.a, i, m * n), m, st.type,
                                        matrix_at(tau, i, k), st.type, call.device,
                                        device_bytes, call.host, host_bytes,
                                        (int *)matrix_at(info, i, 1)),
                 "cusolverDnXgeqrf");
  call_end(&call);
  return 0;
}

/* orgqr (ungqr for complex types) of the stack's type: its name, and its work size in
** elements or the routine itself. */
static const char *orgqr_name (const Stack *st, int buffer_size) {
  static const char *const names[][2] = {
    {"cusolverDnSorgqr", "cusolverDnSorgqr_bufferSize"},
    {"cusolverDnDorgqr", "cusolverDnDorgqr_bufferSize"},
    {"cusolverDnCungqr", "cusolverDnCungqr_bufferSize"},
    {"cusolverDnZungqr", "cusolverDnZungqr_bufferSize"},
  };
  int t = st->type == CUDA_R_32F ? 0 : st->type == CUDA_R_64F ? 1 : st->type == CUDA_C_32F ? 2 : 3;
  return names[t][buffer_size];
}

static cusolverStatus_t orgqr_work (const Stack *st, cusolverDnHandle_t h, int m, int n, int k,
                                    const void *a, const void *tau, int *lwork) {
  switch (st->type) {
    case CUDA_R_32F: return sv.cusolverDnSorgqr_bufferSize(h, m, n, k, a, m, tau, lwork);
    case CUDA_R_64F: return sv.cusolverDnDorgqr_bufferSize(h, m, n, k, a, m, tau, lwork);
    case CUDA_C_32F: return sv.cusolverDnCungqr_bufferSize(h, m, n, k, a, m, tau, lwork);
    default: return sv.cusolverDnZungqr_bufferSize(h, m, n, k, a, m, tau, lwork);
  }
}

static cusolverStatus_t orgqr (const Stack *st, cusolverDnHandle_t h, int m, int n, int k,
                               void *a, const void *tau, void *work, int lwork, int *info) {
  switch (st->type) {
    case CUDA_R_32F: return sv.cusolverDnSorgqr(h, m, n, k, a, m, tau, work, lwork, info);
    case CUDA_R_64F: return sv.cusolverDnDorgqr(h, m, n, k, a, m, tau, work, lwork, info);
    case CUDA_C_32F: return sv.cusolverDnCungqr(h, m, n, k, a, m, tau, work, lwork, info);
    default: return sv.cusolverDnZungqr(h, m, n, k, a, m, tau, work, lwork, info);
  }
}

/*
** solver_orgqr(a, tau, columns[, stream]): Q's first `columns` columns (m-vectors, so at most
** m of them), in place of the first columns of each m x n matrix of a (shape (..., n, m),
** n >= columns) where geqrf left its reflectors, from their k scalars a matrix in tau (a's
** dtype, batch * k, k <= columns).  The 32-bit API (the 64-bit one has no orgqr): m and the
** work size must fit an int.
*/
static int gpu_solver_orgqr (lua_State *L) {
  Stack st;
  gpu_Array *tau;
  CUstream stream;
  Call call;
  lua_Integer columns;
  int64_t i, m, k;
  int lwork = 0;
  check_stack(L, 1, 0, &st);
  m = st.rows;
  luaL_argcheck(L, m <= INT_MAX, 1, "matrices of at most 2^31 - 1 rows expected");
  tau = check_contiguous(L, 2, st.ctx);
  if (tau->dtype != st.a->dtype)
    luaL_argerror(L, 2, lua_pushfstring(L, "%s array expected, got %s",
                                        gpu_dtypes[st.a->dtype].name, gpu_dtypes[tau->dtype].name));
  columns = luaL_checkinteger(L, 3);
  luaL_argcheck(L, columns >= 0 && columns <= st.cols && columns <= m, 3,
                "columns must be from 0 to the matrices' rows and columns");
  stream = check_stream(L, 4, &st);
  if (st.batch == 0) return 0;
  k = tau->size / st.batch;
  if (tau->size % st.batch != 0 || k > columns)
    luaL_argerror(L, 2, lua_pushfstring(L, "array of %I elements a matrix at most expected, got %I",
                                        (lua_Integer)columns, (lua_Integer)tau->size));
  if (m == 0 || columns == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, orgqr_work(&st, call.handle, (int)m, (int)columns, (int)k, (void *)st.a->ptr,
                             (void *)tau->ptr, &lwork),
               orgqr_name(&st, 1));
  call_work(L, &call, (size_t)lwork * st.itemsize, 0);
  for (i = 0; i < st.batch; i++)
    check_status(L, orgqr(&st, call.handle, (int)m, (int)columns, (int)k,
                          matrix_at(st.a, i, m * st.cols), matrix_at(tau, i, k), call.device,
                          lwork, call.scratch_info),
                 orgqr_name(&st, 0));
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- eigenvalues */

/*
** solver_syevd(a, w, info, vectors, uplo[, stream]): the eigenvalues, ascending, of the
** Hermitian matrices of a that their triangle uplo ("L" or "U") defines, into w (the real
** dtype, batch * n); with vectors true the orthonormal eigenvectors too, as the columns of
** each matrix of a (which is overwritten either way).  info (int32, batch): i > 0 where the
** algorithm did not converge.
*/
static int gpu_solver_syevd (lua_State *L) {
  Stack st;
  gpu_Array *w, *info;
  cusolverEigMode_t jobz;
  cublasFillMode_t uplo;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, n;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  w = check_operand(L, 2, &st, real_dtype(&st), st.batch * n);
  info = check_operand(L, 3, &st, GPU_INT32, st.batch);
  jobz = lua_toboolean(L, 4) ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  uplo = check_fill(L, 5);
  stream = check_stream(L, 6, &st);
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, sv.cusolverDnXsyevd_bufferSize(call.handle, call.params, jobz, uplo, n,
                                                 st.type, (void *)st.a->ptr, n, st.real,
                                                 (void *)w->ptr, st.type, &device_bytes,
                                                 &host_bytes),
               "cusolverDnXsyevd_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXsyevd(call.handle, call.params, jobz, uplo, n, st.type,
                                        matrix_at(st.a, i, n * n), n, st.real,
                                        matrix_at(w, i, n), st.type, call.device, device_bytes,
                                        call.host, host_bytes, (int *)matrix_at(info, i, 1)),
                 "cusolverDnXsyevd");
  call_end(&call);
  return 0;
}

/*
** solver_geev(a, w, v, info[, stream]): the eigenvalues of the general matrices of a (float32,
** float64, complex64 or complex128; overwritten) into w (complex of a's precision, batch * n),
** in no particular order, and with v (a's shape and dtype; nil: none) the right eigenvectors,
** each of norm 1 with its largest component real, as the columns of each matrix.  A real a
** stays real throughout (cuSOLVER's real A, complex W): its v is LAPACK's packed form, where
** a complex pair w(j), w(j+1) = conj(w(j)), the one of positive imaginary part first, has the
** vectors v(:, j) + i v(:, j+1) and its conjugate.  info (int32, batch): i > 0 where the QR
** algorithm did not converge.  cuSOLVER before 11.6 lacks geev: an error.
*/
static int gpu_solver_geev (lua_State *L) {
  Stack st;
  gpu_Array *w, *v = NULL, *info;
  cusolverEigMode_t jobvr;
  cudaDataType w_type;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, n;
  check_stack(L, 1, 1, &st);
  n = st.rows;
  w_type = st.real == CUDA_R_32F ? CUDA_C_32F : CUDA_C_64F;
  w = check_operand(L, 2, &st, st.real == CUDA_R_32F ? GPU_COMPLEX64 : GPU_COMPLEX128,
                    st.batch * n);
  if (!lua_isnil(L, 3)) v = check_operand(L, 3, &st, st.a->dtype, st.batch * n * n);
  info = check_operand(L, 4, &st, GPU_INT32, st.batch);
  stream = check_stream(L, 5, &st);
  jobvr = v != NULL ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  if (sv.cusolverDnXgeev == NULL || sv.cusolverDnXgeev_bufferSize == NULL) {
    lua_pushfstring(L, "%s lacks cusolverDnXgeev (cuSOLVER 11.6, of CUDA 12.6, has it)", sv.path);
    lua_error(L);
  }
  /* VL, VR and the computation in a's type, W complex: the combinations cuSOLVER documents */
  check_status(L, sv.cusolverDnXgeev_bufferSize(call.handle, call.params,
                                                CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, st.type,
                                                (void *)st.a->ptr, n, w_type, (void *)w->ptr,
                                                st.type, NULL, 1, st.type,
                                                v ? (void *)v->ptr : NULL, n, st.type,
                                                &device_bytes, &host_bytes),
               "cusolverDnXgeev_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXgeev(call.handle, call.params, CUSOLVER_EIG_MODE_NOVECTOR,
                                       jobvr, n, st.type, matrix_at(st.a, i, n * n), n, w_type,
                                       matrix_at(w, i, n), st.type, NULL, 1, st.type,
                                       v ? matrix_at(v, i, n * n) : NULL, n, st.type,
                                       call.device, device_bytes, call.host, host_bytes,
                                       (int *)matrix_at(info, i, 1)),
                 "cusolverDnXgeev");
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- singular values */

/* gesvd's job at arg: "A" (all of U's columns, or V^H's rows), "S" (the first min(m, n)) or
** "N" (none). */
static signed char check_job (lua_State *L, int arg) {
  static const char *const jobs[] = {"A", "S", "N", NULL};
  return (signed char)jobs[luaL_checkoption(L, arg, NULL, jobs)][0];
}

/*
** solver_gesvd(a, s, u, vt, info, jobu, jobvt[, stream]): A = U S V^H for the m x n matrices
** of a (shape (..., n, m), m >= n, as cuSOLVER's gesvd wants), which it overwrites: the
** singular values, descending, into s (the real dtype, batch * n); U into u (a's dtype,
** batch * m * m for jobu "A", batch * m * n for "S", nil for "N") and V^H into vt (batch * n *
** n, nil for jobvt "N"), each column-major.  info (int32, batch): i > 0 where i superdiagonals
** did not converge.
*/
static int gpu_solver_gesvd (lua_State *L) {
  Stack st;
  gpu_Array *s, *u = NULL, *vt = NULL, *info;
  signed char jobu, jobvt;
  CUstream stream;
  Call call;
  size_t device_bytes = 0, host_bytes = 0;
  int64_t i, m, n, u_columns;
  check_stack(L, 1, 0, &st);
  m = st.rows;
  n = st.cols;
  if (m < n)
    luaL_argerror(L, 1, lua_pushfstring(L, "matrices of at least as many rows as columns "
                                        "expected, got %I x %I", (lua_Integer)m, (lua_Integer)n));
  jobu = check_job(L, 6);
  jobvt = check_job(L, 7);
  u_columns = jobu == 'A' ? m : n;
  s = check_operand(L, 2, &st, real_dtype(&st), st.batch * n);
  if (jobu != 'N') u = check_operand(L, 3, &st, st.a->dtype, st.batch * m * u_columns);
  else luaL_argcheck(L, lua_isnil(L, 3), 3, "nil expected for jobu 'N'");
  if (jobvt != 'N') vt = check_operand(L, 4, &st, st.a->dtype, st.batch * n * n);
  else luaL_argcheck(L, lua_isnil(L, 4), 4, "nil expected for jobvt 'N'");
  info = check_operand(L, 5, &st, GPU_INT32, st.batch);
  stream = check_stream(L, 8, &st);
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  check_status(L, sv.cusolverDnXgesvd_bufferSize(call.handle, call.params, jobu, jobvt, m, n,
                                                 st.type, (void *)st.a->ptr, m, st.real,
                                                 (void *)s->ptr, st.type,
                                                 u ? (void *)u->ptr : NULL, m, st.type,
                                                 vt ? (void *)vt->ptr : NULL, n, st.type,
                                                 &device_bytes, &host_bytes),
               "cusolverDnXgesvd_bufferSize");
  call_work(L, &call, device_bytes, host_bytes);
  for (i = 0; i < st.batch; i++)
    check_status(L, sv.cusolverDnXgesvd(call.handle, call.params, jobu, jobvt, m, n, st.type,
                                        matrix_at(st.a, i, m * n), m, st.real,
                                        matrix_at(s, i, n), st.type,
                                        u ? matrix_at(u, i, m * u_columns) : NULL, m, st.type,
                                        vt ? matrix_at(vt, i, n * n) : NULL, n, st.type,
                                        call.device, device_bytes, call.host, host_bytes,
                                        (int *)matrix_at(info, i, 1)),
                 "cusolverDnXgesvd");
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- batched */

/*
** Stacks of small matrices in one call for the whole stack (lua/gpu/linalg.lua chooses when):
** cuBLAS's getrfBatched, getrsBatched and getriBatched and cuSOLVER's potrfBatched, which take
** device arrays of the matrices' addresses, and cuSOLVER's syevjBatched and gesvdjBatched,
** which take the stack.
** The addresses go into the call's pooled work area (released in the stream's order as the
** loops' is), written by kernels/batched.cu's gpu_matrix_addresses where the caller hands it
** over (the optional last argument: the library's kernels are compiled in Lua), else on the
** host and copied up with cuMemcpyHtoDAsync (from pageable memory the copy has taken the
** host's bytes when it returns, so the userdata that held them can go).  On the H200 the
** host's way took getrf of 10000 4 x 4 matrices 35 us and getrs 60, the kernel's 22 and 25.
*/

/* The optional gpu_matrix_addresses Function at arg, for Call.addresses: NULL when none, or
** when it was compiled for another context than the stack's (the host writes them then). */
static CUfunction check_addresses (lua_State *L, int arg, const Stack *st) {
  gpu_Context *ctx;
  CUfunction fn;
  if (lua_isnoneornil(L, arg)) return NULL;
  fn = gpu_checkfunction(L, arg, "gpu_matrix_addresses", &ctx);
  return ctx == st->ctx ? fn : NULL;
}

/* Checks that the stack's sizes fit the batched routines' ints. */
static void check_int_sizes (lua_State *L, int arg, const Stack *st) {
  if (st->rows > INT_MAX || st->cols > INT_MAX || st->batch > INT_MAX)
    luaL_argerror(L, arg, "matrices of at most 2^31 - 1 rows, in stacks of at most 2^31 - 1, expected");
}

/* Into the call's device work area: the arrays of the addresses of the batch matrices of
** arrays[0 .. count - 1] (array k's each elements[k] long), one array after another, then
** extra bytes for the caller; returns the area's address. */
static CUdeviceptr call_pointers (lua_State *L, Call *call, int count, gpu_Array *const arrays[],
                                  const int64_t elements[], int64_t batch, size_t extra) {
  size_t bytes = (size_t)count * (size_t)batch * sizeof(CUdeviceptr);
  CUdeviceptr *host;
  int64_t i;
  int k;
  call_work(L, call, bytes + extra, 0);
  if (call->addresses != NULL) {     /* batched.cu's parameters, in order */
    CUdeviceptr out = call->work->ptr, base[2] = {0, 0}, step[2] = {0, 0};
    long long matrices = (long long)batch;
    int stacks = count;
    unsigned blocks = (unsigned)(((int64_t)count * batch + 255) / 256);
    void *params[] = {&out, &matrices, &stacks, &base[0], &step[0], &base[1], &step[1]};
    for (k = 0; k < count; k++) {
      base[k] = arrays[k]->ptr;
      step[k] = (CUdeviceptr)elements[k] * gpu_dtypes[arrays[k]->dtype].itemsize;
    }
    gpu_check(L, call->ctx->driver->cuLaunchKernel(call->addresses, blocks < 1024 ? blocks : 1024,
                                                   1, 1, 256, 1, 1, 0, call->stream, params, NULL),
              "cuLaunchKernel");
    return out;
  }
  host = (CUdeviceptr *)lua_newuserdatauv(L, bytes, 0);
  for (k = 0; k < count; k++)
    for (i = 0; i < batch; i++)
      host[k * batch + i] = (CUdeviceptr)matrix_at(arrays[k], i, elements[k]);
  gpu_check(L, call->ctx->driver->cuMemcpyHtoDAsync(call->work->ptr, host, bytes, call->stream),
            "cuMemcpyHtoDAsync");
  lua_pop(L, 1);
  return call->work->ptr;
}

/* Starts a call on cuBLAS's handle rather than cuSOLVER's: NULL (nothing started) where
** cuBLAS is missing or turned off, or a graph is being captured. */
static void *blas_begin (lua_State *L, const Stack *st, CUstream stream, Call *call) {
  memset(call, 0, sizeof *call);
  call->ctx = st->ctx;
  call->stream = stream;
  if (st->ctx->state->captures > 0) return NULL;
  return gpu_blas_handle(L, st->ctx, stream);
}

/* The same where an earlier call (getrf's) found cuBLAS: an error without it. */
static void *blas_required (lua_State *L, const Stack *st, CUstream stream, Call *call) {
  void *handle = blas_begin(L, st, stream, call);
  if (handle == NULL) {
    lua_pushliteral(L, "cuBLAS is not available for the batched LU");
    lua_error(L);
  }
  return handle;
}

/*
** solver_getrf_batched(a, ipiv, info[, stream[, addresses]]) -> whether cuBLAS factored the
** stack: getrf's LU of each matrix of a in one getrfBatched, with int32 pivots (batch * n).
** False, with nothing done, where cuBLAS is missing or turned off (gpu.use_cublas(false)) or
** a graph is being captured: the caller takes solver_getrf's loop.  addresses: batched.cu's
** gpu_matrix_addresses, here and in the other routines that take arrays of addresses.
*/
static int gpu_solver_getrf_batched (lua_State *L) {
  Stack st;
  gpu_Array *ipiv, *info;
  CUstream stream;
  Call call;
  CUfunction addresses;
  void *handle;
  int64_t n;
  check_stack(L, 1, 1, &st);
  check_int_sizes(L, 1, &st);
  n = st.rows;
  ipiv = check_operand(L, 2, &st, GPU_INT32, st.batch * n);
  info = check_operand(L, 3, &st, GPU_INT32, st.batch);
  stream = check_stream(L, 4, &st);
  addresses = check_addresses(L, 5, &st);
  if ((handle = blas_begin(L, &st, stream, &call)) == NULL) {
    lua_pushboolean(L, 0);
    return 1;
  }
  call.addresses = addresses;
  if (st.batch > 0 && n > 0) {
    int64_t elements = n * n;
    CUdeviceptr a = call_pointers(L, &call, 1, &st.a, &elements, st.batch, 0);
    gpu_blas_getrf_batched(L, handle, st.a->dtype, (int)n, a, ipiv->ptr, info->ptr, (int)st.batch);
    call_end(&call);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/*
** solver_getrs_batched(lu, ipiv, b, trans[, stream[, addresses]]): solver_getrs from
** solver_getrf_batched's factors and int32 pivots, in one getrsBatched; b as getrs's.
*/
static int gpu_solver_getrs_batched (lua_State *L) {
  static const char *const ops[] = {"N", "T", "C", NULL};
  Stack st;
  gpu_Array *ipiv, *b;
  char trans;
  CUstream stream;
  Call call;
  CUfunction addresses;
  void *handle;
  int64_t n, nrhs;
  check_stack(L, 1, 1, &st);
  check_int_sizes(L, 1, &st);
  n = st.rows;
  ipiv = check_operand(L, 2, &st, GPU_INT32, st.batch * n);
  b = check_right_sides(L, 3, &st);
  trans = ops[luaL_checkoption(L, 4, NULL, ops)][0];
  stream = check_stream(L, 5, &st);
  addresses = check_addresses(L, 6, &st);
  if (st.batch == 0 || n == 0 || b->size == 0) return 0;
  nrhs = right_sides(L, 3, &st, b);
  luaL_argcheck(L, nrhs <= INT_MAX, 3, "at most 2^31 - 1 right sides a matrix expected");
  handle = blas_required(L, &st, stream, &call);
  call.addresses = addresses;
  {
    gpu_Array *const arrays[] = {st.a, b};
    const int64_t elements[] = {n * n, n * nrhs};
    CUdeviceptr pointers = call_pointers(L, &call, 2, arrays, elements, st.batch, 0);
    gpu_blas_getrs_batched(L, handle, st.a->dtype, trans, (int)n, (int)nrhs, pointers, ipiv->ptr,
                           pointers + (CUdeviceptr)st.batch * sizeof(CUdeviceptr), (int)st.batch);
  }
  call_end(&call);
  return 0;
}

/*
** solver_getri_batched(lu, ipiv, x[, stream[, addresses]]): the inverses of the matrices that
** solver_getrf_batched factored into lu and ipiv, into x (lu's dtype and size), in one
** getriBatched (out of place).  Its infos repeat getrf's, which the caller has: left unread.
*/
static int gpu_solver_getri_batched (lua_State *L) {
  Stack st;
  gpu_Array *ipiv, *x;
  CUstream stream;
  Call call;
  CUfunction addresses;
  void *handle;
  int64_t n;
  check_stack(L, 1, 1, &st);
  check_int_sizes(L, 1, &st);
  n = st.rows;
  ipiv = check_operand(L, 2, &st, GPU_INT32, st.batch * n);
  x = check_operand(L, 3, &st, st.a->dtype, st.batch * n * n);
  stream = check_stream(L, 4, &st);
  addresses = check_addresses(L, 5, &st);
  if (st.batch == 0 || n == 0) return 0;
  luaL_argcheck(L, x->ptr != st.a->ptr, 3, "array other than argument #1 expected");
  handle = blas_required(L, &st, stream, &call);
  call.addresses = addresses;
  {
    gpu_Array *const arrays[] = {st.a, x};
    const int64_t elements[] = {n * n, n * n};
    size_t infos = (size_t)st.batch * sizeof(int);
    CUdeviceptr pointers = call_pointers(L, &call, 2, arrays, elements, st.batch, infos);
    CUdeviceptr after = pointers + 2 * (CUdeviceptr)st.batch * sizeof(CUdeviceptr);
    gpu_blas_getri_batched(L, handle, st.a->dtype, (int)n, pointers, ipiv->ptr,
                           pointers + (CUdeviceptr)st.batch * sizeof(CUdeviceptr), after,
                           (int)st.batch);
  }
  call_end(&call);
  return 0;
}

/*
** solver_potrf_batched(a, info, uplo[, stream[, addresses]]): solver_potrf in one
** potrfBatched, except that the triangle other than uplo's is left undefined (potrfBatched
** works in it).
*/
static int gpu_solver_potrf_batched (lua_State *L) {
  Stack st;
  gpu_Array *info;
  cublasFillMode_t uplo;
  CUstream stream;
  Call call;
  CUfunction addresses;
  int64_t n, elements;
  CUdeviceptr pointers;
  cusolverStatus_t status;
  const char *name;
  check_stack(L, 1, 1, &st);
  check_int_sizes(L, 1, &st);
  n = st.rows;
  info = check_operand(L, 2, &st, GPU_INT32, st.batch);
  uplo = check_fill(L, 3);
  stream = check_stream(L, 4, &st);
  addresses = check_addresses(L, 5, &st);
  if (st.batch == 0 || n == 0) return 0;
  call_begin(L, &st, stream, &call);
  call.addresses = addresses;
  elements = n * n;
  pointers = call_pointers(L, &call, 1, &st.a, &elements, st.batch, 0);
  switch (st.type) {
#define GPU_POTRF_BATCHED(type, t)                                                           \
    case type:                                                                               \
      name = "cusolverDn" #t "potrfBatched";                                                 \
      status = sv.cusolverDn##t##potrfBatched(call.handle, uplo, (int)n, (void *)pointers,    \
                                               (int)n, (int *)info->ptr, (int)st.batch);      \
      break;
    GPU_POTRF_BATCHED(CUDA_R_32F, S)
    GPU_POTRF_BATCHED(CUDA_R_64F, D)
    GPU_POTRF_BATCHED(CUDA_C_32F, C)
    default: GPU_POTRF_BATCHED(CUDA_C_64F, Z)
#undef GPU_POTRF_BATCHED
  }
  check_status(L, status, name);
  call_end(&call);
  return 0;
}

/* This state's syevjInfo in the call's Context (cuSOLVER's defaults: tolerance the machine's
** precision, 100 sweeps, eigenvalues ascending), made on first use. */
static syevjInfo_t call_syevj_info (lua_State *L, Call *call) {
  if (call->ctx->solver_syevj == NULL) {
    syevjInfo_t params = NULL;
    check_status(L, sv.cusolverDnCreateSyevjInfo(&params), "cusolverDnCreateSyevjInfo");
    call->ctx->solver_syevj = params;
  }
  return (syevjInfo_t)call->ctx->solver_syevj;
}

/*
** solver_syevj_batched(a, w, info, vectors, uplo[, stream]): solver_syevd of matrices of at
** most 32 rows by Jacobi's method, in one syevjBatched; info i > 0 (n + 1) where it did not
** converge.
*/
static int gpu_solver_syevj_batched (lua_State *L) {
  Stack st;
  gpu_Array *w, *info;
  cusolverEigMode_t jobz;
  cublasFillMode_t uplo;
  CUstream stream;
  Call call;
  syevjInfo_t params;
  cusolverStatus_t status;
  const char *name;
  int n, batch, lwork = 0;
  void *a, *values;
  check_stack(L, 1, 1, &st);
  if (st.rows > 32)
    luaL_argerror(L, 1, lua_pushfstring(L, "matrices of at most 32 rows expected, got %I",
                                        (lua_Integer)st.rows));
  check_int_sizes(L, 1, &st);
  w = check_operand(L, 2, &st, real_dtype(&st), st.batch * st.rows);
  info = check_operand(L, 3, &st, GPU_INT32, st.batch);
  jobz = lua_toboolean(L, 4) ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  uplo = check_fill(L, 5);
  stream = check_stream(L, 6, &st);
  if (st.batch == 0 || st.rows == 0) return 0;
  n = (int)st.rows;
  batch = (int)st.batch;
  a = (void *)st.a->ptr;
  values = (void *)w->ptr;
  call_begin(L, &st, stream, &call);
  params = call_syevj_info(L, &call);
  switch (st.type) {
#define GPU_SYEVJ_WORK(type, t)                                                              \
    case type:                                                                               \
      name = "cusolverDn" #t "Batched_bufferSize";                                           \
      status = sv.cusolverDn##t##Batched_bufferSize(call.handle, jobz, uplo, n, a, n, values, \
                                                    &lwork, params, batch);                  \
      break;
    GPU_SYEVJ_WORK(CUDA_R_32F, Ssyevj)
    GPU_SYEVJ_WORK(CUDA_R_64F, Dsyevj)
    GPU_SYEVJ_WORK(CUDA_C_32F, Cheevj)
    default: GPU_SYEVJ_WORK(CUDA_C_64F, Zheevj)
#undef GPU_SYEVJ_WORK
  }
  check_status(L, status, name);
  call_work(L, &call, (size_t)lwork * st.itemsize, 0);
  switch (st.type) {
#define GPU_SYEVJ(type, t)                                                                   \
    case type:                                                                               \
      name = "cusolverDn" #t "Batched";                                                      \
      status = sv.cusolverDn##t##Batched(call.handle, jobz, uplo, n, a, n, values, call.device, \
                                         lwork, (int *)info->ptr, params, batch);            \
      break;
    GPU_SYEVJ(CUDA_R_32F, Ssyevj)
    GPU_SYEVJ(CUDA_R_64F, Dsyevj)
    GPU_SYEVJ(CUDA_C_32F, Cheevj)
    default: GPU_SYEVJ(CUDA_C_64F, Zheevj)
#undef GPU_SYEVJ
  }
  check_status(L, status, name);
  call_end(&call);
  return 0;
}

/* This state's gesvdjInfo in the call's Context (cuSOLVER's defaults: tolerance the machine's
** precision, 100 sweeps, singular values descending), made on first use. */
static gesvdjInfo_t call_gesvdj_info (lua_State *L, Call *call) {
  if (call->ctx->solver_gesvdj == NULL) {
    gesvdjInfo_t params = NULL;
    check_status(L, sv.cusolverDnCreateGesvdjInfo(&params), "cusolverDnCreateGesvdjInfo");
    call->ctx->solver_gesvdj = params;
  }
  return (gesvdjInfo_t)call->ctx->solver_gesvdj;
}

/*
** solver_gesvdj_batched(a, s, u, v, info, vectors[, stream]): A = U S V^H for the m x n
** matrices of a (shape (..., n, m), m and n at most 32; either may be the larger) by Jacobi's
** method, in one gesvdjBatched, which overwrites a: the singular values, descending, into s
** (the real dtype, batch * min(m, n)); U into u (a's dtype, batch * m * m) and V itself, not
** V^H, into v (batch * n * n), each column-major and always whole (gesvdjBatched has no
** economy mode).  u and v are needed even without vectors (jobz NOVECTOR: s alone), as
** cuSOLVER's documentation does not say that it leaves them alone then.  info (int32,
** batch): min(m, n) + 1 where a matrix did not converge.
*/
static int gpu_solver_gesvdj_batched (lua_State *L) {
  Stack st;
  gpu_Array *s, *u, *v, *info;
  cusolverEigMode_t jobz;
  CUstream stream;
  Call call;
  gesvdjInfo_t params;
  cusolverStatus_t status;
  const char *name;
  int m, n, batch, lwork = 0;
  void *a, *values, *left, *right;
  check_stack(L, 1, 0, &st);
  if (st.rows > 32 || st.cols > 32)
    luaL_argerror(L, 1, lua_pushfstring(L, "matrices of at most 32 rows and columns expected, "
                                        "got %I x %I", (lua_Integer)st.rows, (lua_Integer)st.cols));
  check_int_sizes(L, 1, &st);
  s = check_operand(L, 2, &st, real_dtype(&st), st.batch * (st.rows < st.cols ? st.rows : st.cols));
  u = check_operand(L, 3, &st, st.a->dtype, st.batch * st.rows * st.rows);
  v = check_operand(L, 4, &st, st.a->dtype, st.batch * st.cols * st.cols);
  info = check_operand(L, 5, &st, GPU_INT32, st.batch);
  jobz = lua_toboolean(L, 6) ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  stream = check_stream(L, 7, &st);
  if (st.batch == 0 || st.rows == 0 || st.cols == 0) return 0;
  m = (int)st.rows;
  n = (int)st.cols;
  batch = (int)st.batch;
  a = (void *)st.a->ptr;
  values = (void *)s->ptr;
  left = (void *)u->ptr;
  right = (void *)v->ptr;
  call_begin(L, &st, stream, &call);
  params = call_gesvdj_info(L, &call);
  switch (st.type) {
#define GPU_GESVDJ_WORK(type, t)                                                             \
    case type:                                                                               \
      name = "cusolverDn" #t "gesvdjBatched_bufferSize";                                     \
      status = sv.cusolverDn##t##gesvdjBatched_bufferSize(call.handle, jobz, m, n, a, m,      \
                                                          values, left, m, right, n, &lwork, \
                                                          params, batch);                    \
      break;
    GPU_GESVDJ_WORK(CUDA_R_32F, S)
    GPU_GESVDJ_WORK(CUDA_R_64F, D)
    GPU_GESVDJ_WORK(CUDA_C_32F, C)
    default: GPU_GESVDJ_WORK(CUDA_C_64F, Z)
#undef GPU_GESVDJ_WORK
  }
  check_status(L, status, name);
  call_work(L, &call, (size_t)lwork * st.itemsize, 0);
  switch (st.type) {
#define GPU_GESVDJ(type, t)                                                                  \
    case type:                                                                               \
      name = "cusolverDn" #t "gesvdjBatched";                                                \
      status = sv.cusolverDn##t##gesvdjBatched(call.handle, jobz, m, n, a, m, values, left,   \
                                               m, right, n, call.device, lwork,              \
                                               (int *)info->ptr, params, batch);             \
      break;
    GPU_GESVDJ(CUDA_R_32F, S)
    GPU_GESVDJ(CUDA_R_64F, D)
    GPU_GESVDJ(CUDA_C_32F, C)
    default: GPU_GESVDJ(CUDA_C_64F, Z)
#undef GPU_GESVDJ
  }
  check_status(L, status, name);
  call_end(&call);
  return 0;
}

/* ---------------------------------------------------------------- module functions */

/* cusolver_version() -> version (major * 10000 + minor * 100 + patch), path; or nil, why */
static int gpu_cusolver_version (lua_State *L) {
  if (!cusolver_loaded()) {
    lua_pushnil(L);
    lua_pushstring(L, sv.why);
    return 2;
  }
  lua_pushinteger(L, sv.version);
  lua_pushstring(L, sv.path);
  return 2;
}

void gpu_solver_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"solver_getrf", gpu_solver_getrf}, {"solver_getrs", gpu_solver_getrs},
    {"solver_potrf", gpu_solver_potrf}, {"solver_potrs", gpu_solver_potrs},
    {"solver_geqrf", gpu_solver_geqrf}, {"solver_orgqr", gpu_solver_orgqr},
    {"solver_syevd", gpu_solver_syevd}, {"solver_gesvd", gpu_solver_gesvd},
    {"solver_geev", gpu_solver_geev},
    {"solver_getrf_batched", gpu_solver_getrf_batched},
    {"solver_getrs_batched", gpu_solver_getrs_batched},
    {"solver_getri_batched", gpu_solver_getri_batched},
    {"solver_potrf_batched", gpu_solver_potrf_batched},
    {"solver_syevj_batched", gpu_solver_syevj_batched},
    {"solver_gesvdj_batched", gpu_solver_gesvdj_batched},
    {"cusolver_version", gpu_cusolver_version}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
}
