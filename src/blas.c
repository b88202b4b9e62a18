/*
** blas.c: products of matrices through cuBLAS, loaded lazily like NVRTC.
**
** gpuarray.matmul hands big products of float16, bfloat16, float32, float64, complex64 and
** complex128 matrices to cublasGemmStridedBatchedEx when cuBLAS can be loaded and takes the
** arrays' layout (each matrix with a unit stride along its rows or its columns, the stack one
** stride apart); everything else, and everything when cuBLAS is missing or turned off, runs on
** the library's own kernels (kernels/matmul.cu).  Sums are in the operands' precision or
** float (float16, bfloat16), never TF32, as the kernels' are.
**
** The library comes from GPU_CUBLAS_LIBRARY, else libcublas.so.13 or .12 where dlopen finds
** them, else $CUDA_HOME/lib64; GPU_CUBLAS_DISABLE=1 leaves it unloaded.  It is process-wide,
** loaded once under pthread_once.  Handles belong to a Context (one lua_State, one device),
** so states running on different threads never share one; a handle lives until its Context
** is released, when the state closes.  solver.c borrows it for the batched LU of stacks of
** small matrices (cublas<t>getrfBatched, getrsBatched, getriBatched), which gpu.use_cublas
** turns off too.
*/
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_api.h>

#include "gpu.h"

/* The batched LU of one element type (solver.c's stacks of small matrices): getrf, getrs and
** getri, each on device arrays of the matrices' addresses, with 32-bit pivots and infos. */
#define GPU_CUBLAS_BATCHED_LU(X, t, T)                                                     \
  X(cublas##t##getrfBatched, cublasStatus_t,                                               \
    (cublasHandle_t, int, T *const[], int, int *, int *, int))                             \
  X(cublas##t##getrsBatched, cublasStatus_t,                                               \
    (cublasHandle_t, cublasOperation_t, int, int, const T *const[], int, const int *,      \
     T *const[], int, int *, int))                                                         \
  X(cublas##t##getriBatched, cublasStatus_t,                                               \
    (cublasHandle_t, int, const T *const[], int, const int *, T *const[], int, int *, int))

#define GPU_CUBLAS_SYMBOLS(X)                                                              \
  X(cublasGetProperty, cublasStatus_t, (libraryPropertyType, int *))                       \
  X(cublasGetStatusName, const char *, (cublasStatus_t))                                   \
  X(cublasGetStatusString, const char *, (cublasStatus_t))                                 \
  X(cublasCreate_v2, cublasStatus_t, (cublasHandle_t *))                                   \
  X(cublasDestroy_v2, cublasStatus_t, (cublasHandle_t))                                    \
  X(cublasSetStream_v2, cublasStatus_t, (cublasHandle_t, cudaStream_t))                    \
  X(cublasSetMathMode, cublasStatus_t, (cublasHandle_t, cublasMath_t))                     \
  X(cublasGemmStridedBatchedEx, cublasStatus_t,                                            \
    (cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,    \
     const void *, cudaDataType, int, long long, const void *, cudaDataType, int,          \
     long long, const void *, void *, cudaDataType, int, long long, int,                   \
     cublasComputeType_t, cublasGemmAlgo_t))                                               \
  GPU_CUBLAS_BATCHED_LU(X, S, float)                                                       \
  GPU_CUBLAS_BATCHED_LU(X, D, double)                                                      \
  GPU_CUBLAS_BATCHED_LU(X, C, cuComplex)                                                   \
  GPU_CUBLAS_BATCHED_LU(X, Z, cuDoubleComplex)

static struct {
  pthread_once_t once;
#define GPU_CUBLAS_FIELD(name, ret, args) ret (*name) args;
  GPU_CUBLAS_SYMBOLS(GPU_CUBLAS_FIELD)
#undef GPU_CUBLAS_FIELD
  int ok;
  int version;              /* major * 10000 + minor * 100 + patch, as CUBLAS_VERSION */
  char path[PATH_MAX];      /* the library that was loaded */
  char why[PATH_MAX + 256]; /* why none could be, when ok is 0 */
} blas = { PTHREAD_ONCE_INIT };

static const char *const cublas_names[] = {"libcublas.so.13", "libcublas.so.12"};
#define CUBLAS_NAME_COUNT (sizeof cublas_names / sizeof cublas_names[0])

/* ---------------------------------------------------------------- loading */

static void load_cublas (void) {
  const char *disable = getenv("GPU_CUBLAS_DISABLE");
  int major = 0, minor = 0, patch = 0;
  void *lib;
  if (disable != NULL && *disable != '\0' && strcmp(disable, "0") != 0) {
    snprintf(blas.why, sizeof blas.why, "cuBLAS is turned off (GPU_CUBLAS_DISABLE=%s)", disable);
    return;
  }
  if ((lib = gpu_open_library("cuBLAS", "GPU_CUBLAS_LIBRARY", cublas_names, CUBLAS_NAME_COUNT,
                              blas.path, blas.why, sizeof blas.why)) == NULL)
    return;
#define GPU_CUBLAS_RESOLVE(name, ret, args)                                           \
  if ((*(void **)&blas.name = dlsym(lib, #name)) == NULL) {                           \
    snprintf(blas.why, sizeof blas.why, "%s lacks %s", blas.path, #name);             \
    return;                                                                           \
  }
  GPU_CUBLAS_SYMBOLS(GPU_CUBLAS_RESOLVE)
#undef GPU_CUBLAS_RESOLVE
  blas.cublasGetProperty(MAJOR_VERSION, &major);
  blas.cublasGetProperty(MINOR_VERSION, &minor);
  blas.cublasGetProperty(PATCH_LEVEL, &patch);
  blas.version = major * 10000 + minor * 100 + patch;
  if (major < 12) {         /* cublasComputeType_t took its place in 11; 12 is what we test */
    snprintf(blas.why, sizeof blas.why, "%s is cuBLAS %d.%d; lua-gpu needs 12 or newer",
             blas.path, major, minor);
    return;
  }
  blas.ok = 1;
}

static int cublas_loaded (void) {
  pthread_once(&blas.once, load_cublas);
  return blas.ok;
}

static int blas_error (lua_State *L, cublasStatus_t status, const char *call) {
  return gpu_raise(L, (int)status, blas.cublasGetStatusName(status),
                   blas.cublasGetStatusString(status), call, NULL);
}

/*
** This state's handle in Context c, which the caller made current; NULL where none can be
** made (a driver older than the library needs, no memory for its workspace), and then never
** again in c: cuBLAS is an accelerator, and the kernels compute the same products.
*/
static cublasHandle_t context_handle (lua_State *L, gpu_Context *c) {
  if (c->blas == NULL && !c->blas_failed) {
    cublasHandle_t handle = NULL;
    cublasStatus_t status = blas.cublasCreate_v2(&handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      c->blas_failed = 1;
      return NULL;
    }
    c->blas = handle;
    /* split sums of 16-bit results added in float too, as the kernels add them */
    status = blas.cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, "cublasSetMathMode");
  }
  return (cublasHandle_t)c->blas;
}

void gpu_blas_release (gpu_Context *c) {
  CUcontext prev;           /* not restored: the state is closing (see context_release) */
  if (c->blas != NULL && gpu_context_try_enter(c, &prev)) blas.cublasDestroy_v2(c->blas);
  c->blas = NULL;
}

/* ---------------------------------------------------------------- layouts */

/* How cuBLAS reads a dtype: its data type, and the type it computes in (alpha's and beta's). */
typedef struct BlasType {
  cudaDataType data;
  cublasComputeType_t compute;
} BlasType;

static int blas_type (gpu_DtypeId dtype, BlasType *t) {
  switch (dtype) {
    case GPU_FLOAT16: t->data = CUDA_R_16F; t->compute = CUBLAS_COMPUTE_32F; return 1;
    case GPU_BFLOAT16: t->data = CUDA_R_16BF; t->compute = CUBLAS_COMPUTE_32F; return 1;
    case GPU_FLOAT32: t->data = CUDA_R_32F; t->compute = CUBLAS_COMPUTE_32F; return 1;
    case GPU_FLOAT64: t->data = CUDA_R_64F; t->compute = CUBLAS_COMPUTE_64F; return 1;
    case GPU_COMPLEX64: t->data = CUDA_C_32F; t->compute = CUBLAS_COMPUTE_32F; return 1;
    case GPU_COMPLEX128: t->data = CUDA_C_64F; t->compute = CUBLAS_COMPUTE_64F; return 1;
    default: return 0;
  }
}

/* A matrix operand as cuBLAS takes it: op applied to the column-major matrix at ld. */
typedef struct Operand {
  cublasOperation_t op;
  int ld;
  long long stack_stride;   /* elements between the stack's matrices (0: one, broadcast) */
} Operand;

/*
** cuBLAS is column-major, so matmul asks it for the transpose of the product, a^T's
** product by b^T on the left: each operand given as its transpose.  The transpose of a rows x
** cols matrix with element strides rs and cs is column-major with ld = rs when cs is 1 (op N),
** and is op T of the column-major matrix itself with ld = cs when rs is 1.  Returns 0 for any
** other layout (strides, broadcast rows or columns, steps): the kernels read those.
*/
static int transposed_operand (int64_t rows, int64_t cols, int64_t rs, int64_t cs, Operand *o) {
  if (rows == 1) rs = cols;           /* a lone row's or column's other stride is never used */
  if (cols == 1) cs = 1;
  if (cs == 1 && rs >= cols && rs <= INT_MAX) {
    o->op = CUBLAS_OP_N;
    o->ld = (int)(rs > 0 ? rs : 1);
    return 1;
  }
  if (rs == 1 && cs >= rows && cs <= INT_MAX) {
    o->op = CUBLAS_OP_T;
    o->ld = (int)(cs > 0 ? cs : 1);
    return 1;
  }
  return 0;
}

/*
** The elements between consecutive matrices of x's stack broadcast to target's batch axes
** (the nb axes before the last two), into *stride; 0 when the matrices are not one stride
** apart.  Matrix i of the flattened batch sits at i * stride exactly when each batch axis
** with more than one matrix steps by stride times the matrices of the axes after it.
*/
static int stack_stride (const gpu_Array *x, const gpu_Array *target, int nb, size_t itemsize,
                         long long *stride) {
  int xb = x->ndim - 2, d;
  int64_t span = 1;                   /* matrices in the axes after d */
  long long s = -1;
  for (d = nb - 1; d >= 0; d--) {
    int xd = d - (nb - xb);
    int64_t axis = target->shape[d], step = 0;
    if (xd >= 0 && x->shape[xd] != 1) {
      if (x->shape[xd] != axis) return 0;
      step = x->strides[xd];
    }
    if (axis != 1) {
      if (step < 0 || step % (int64_t)itemsize != 0) return 0;
      step /= (int64_t)itemsize;
      if (s < 0) {
        if (step % span != 0) return 0;
        s = step / span;
      } else if (step != s * span) {
        return 0;
      }
    }
    span *= axis;
  }
  *stride = s < 0 ? 0 : s;
  return 1;
}

/* Whether x is a rows x cols matrix (or a stack of them) that cuBLAS can read as an operand. */
static int matrix_operand (const gpu_Array *x, const gpu_Array *target, int nb, int64_t rows,
                           int64_t cols, size_t itemsize, Operand *o) {
  int64_t rs, cs;
  if (x->ndim < 2 || x->ndim - 2 > nb || x->shape[x->ndim - 2] != rows ||
      x->shape[x->ndim - 1] != cols || x->ptr % itemsize != 0)
    return 0;
  rs = x->strides[x->ndim - 2];
  cs = x->strides[x->ndim - 1];
  if (rs % (int64_t)itemsize != 0 || cs % (int64_t)itemsize != 0) return 0;
  return transposed_operand(rows, cols, rs / (int64_t)itemsize, cs / (int64_t)itemsize, o) &&
         stack_stride(x, target, nb, itemsize, &o->stack_stride);
}

/* ---------------------------------------------------------------- batched LU, for solver.c */

void *gpu_blas_handle (lua_State *L, gpu_Context *c, CUstream stream) {
  cublasHandle_t handle;
  cublasStatus_t status;
  if (c->state->blas_off || !cublas_loaded()) return NULL;
  gpu_context_enter(L, c);
  if ((handle = context_handle(L, c)) == NULL) return NULL;
  status = blas.cublasSetStream_v2(handle, (cudaStream_t)stream);
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, "cublasSetStream");
  return handle;
}

/* routine of dtype's element type (cublasSgetrfBatched ...) called with the arguments; its
** name in name.  The pointer arrays go as void *, which C converts to each routine's T *[]. */
#define GPU_BLAS_TYPED(dtype, status, name, routine, ...)                                      \
  switch (dtype) {                                                                              \
    case GPU_FLOAT32: name = "cublasS" #routine; status = blas.cublasS##routine(__VA_ARGS__); break; \
    case GPU_FLOAT64: name = "cublasD" #routine; status = blas.cublasD##routine(__VA_ARGS__); break; \
    case GPU_COMPLEX64: name = "cublasC" #routine; status = blas.cublasC##routine(__VA_ARGS__); break; \
    default: name = "cublasZ" #routine; status = blas.cublasZ##routine(__VA_ARGS__); break;    \
  }

void gpu_blas_getrf_batched (lua_State *L, void *handle, gpu_DtypeId dtype, int n,
                             CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr info, int batch) {
  cublasStatus_t status;
  const char *name;
  GPU_BLAS_TYPED(dtype, status, name, getrfBatched, (cublasHandle_t)handle, n, (void *)a, n,
                 (int *)ipiv, (int *)info, batch)
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, name);
}

void gpu_blas_getrs_batched (lua_State *L, void *handle, gpu_DtypeId dtype, char trans, int n,
                             int nrhs, CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr b, int batch) {
  cublasOperation_t op = trans == 'N' ? CUBLAS_OP_N : trans == 'T' ? CUBLAS_OP_T : CUBLAS_OP_C;
  cublasStatus_t status;
  const char *name;
  int info = 0;             /* the host's: only a bad argument sets it, which the status says */
  GPU_BLAS_TYPED(dtype, status, name, getrsBatched, (cublasHandle_t)handle, op, n, nrhs,
                 (void *)a, n, (const int *)ipiv, (void *)b, n, &info, batch)
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, name);
}

void gpu_blas_getri_batched (lua_State *L, void *handle, gpu_DtypeId dtype, int n, CUdeviceptr a,
                             CUdeviceptr ipiv, CUdeviceptr c, CUdeviceptr info, int batch) {
  cublasStatus_t status;
  const char *name;
  GPU_BLAS_TYPED(dtype, status, name, getriBatched, (cublasHandle_t)handle, n, (void *)a, n,
                 (const int *)ipiv, (void *)c, n, (int *)info, batch)
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, name);
}

/* ---------------------------------------------------------------- module functions */

/*
** blas_matmul(target, a, b[, stream]) -> whether cuBLAS computed target = a @ b: arrays of one
** dtype cuBLAS takes, in one Context, a and b of two axes or more, target contiguous with
** a's rows and b's columns after the broadcast batch axes.  False, with nothing done, when
** cuBLAS is missing or turned off, a graph is being captured (cuBLAS may allocate), the layout
** is not one it reads, the stream is not a live one of this context, or no handle or workspace
** can be had: the caller's kernels take those (and name a bad stream).
*/
static int gpu_blas_matmul (lua_State *L) {
  gpu_Array *target = gpu_checkarray(L, 1), *a = gpu_checkarray(L, 2), *b = gpu_checkarray(L, 3);
  gpu_Context *c = target->buffer->ctx;
  size_t itemsize = gpu_dtypes[target->dtype].itemsize;
  int nb = target->ndim - 2, i;
  int64_t n, k, m, batches = 1;
  CUstream stream = c->stream;
  Operand a_t, b_t;
  BlasType type;
  cublasHandle_t handle;
  cublasStatus_t status;
  double one[2] = {1, 0}, zero[2] = {0, 0};
  float one_f[2] = {1, 0}, zero_f[2] = {0, 0};
  int single = 0;
  if (!lua_isnoneornil(L, 4)) {       /* a bad or freed one too: the kernels' launch names it */
    gpu_Stream *s = (gpu_Stream *)luaL_testudata(L, 4, GPU_STREAM);
    if (s == NULL || !s->live || s->capturing || s->ctx != c) {
      lua_pushboolean(L, 0);
      return 1;
    }
    stream = s->stream;
  }
  if (c->state->blas_off || c->state->captures > 0 || nb < 0 || !target->contiguous ||
      a->dtype != target->dtype || b->dtype != target->dtype || !blas_type(target->dtype, &type) ||
      a->buffer->ctx != c || b->buffer->ctx != c || !cublas_loaded()) {
    lua_pushboolean(L, 0);
    return 1;
  }
  n = target->shape[nb];
  m = target->shape[nb + 1];
  k = a->shape[a->ndim - 1];
  for (i = 0; i < nb; i++) batches *= target->shape[i];
  if (n < 1 || m < 1 || k < 1 || batches < 1 || n > INT_MAX || m > INT_MAX || k > INT_MAX ||
      batches > INT_MAX || !matrix_operand(a, target, nb, n, k, itemsize, &a_t) ||
      !matrix_operand(b, target, nb, k, m, itemsize, &b_t)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  single = type.compute == CUBLAS_COMPUTE_32F;   /* alpha and beta in the compute type */
  gpu_context_enter(L, c);
  if ((handle = context_handle(L, c)) == NULL) {
    lua_pushboolean(L, 0);
    return 1;
  }
  status = blas.cublasSetStream_v2(handle, (cudaStream_t)stream);
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, "cublasSetStream");
  /* target^T (m x n, column-major, ld m) = b^T (m x k) times a^T (k x n) */
  status = blas.cublasGemmStridedBatchedEx(
      handle, b_t.op, a_t.op, (int)m, (int)n, (int)k, single ? (const void *)one_f : one,
      (const void *)b->ptr, type.data, b_t.ld, b_t.stack_stride,
      (const void *)a->ptr, type.data, a_t.ld, a_t.stack_stride,
      single ? (const void *)zero_f : zero, (void *)target->ptr, type.data, (int)m, n * m,
      (int)batches, type.compute, CUBLAS_GEMM_DEFAULT);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) { lua_pushboolean(L, 0); return 1; }
  if (status != CUBLAS_STATUS_SUCCESS) blas_error(L, status, "cublasGemmStridedBatchedEx");
  lua_pushboolean(L, 1);
  return 1;
}

/* cublas_version() -> version (major * 10000 + minor * 100 + patch), path; or nil, why */
static int gpu_cublas_version (lua_State *L) {
  if (!cublas_loaded()) {
    lua_pushnil(L);
    lua_pushstring(L, blas.why);
    return 2;
  }
  lua_pushinteger(L, blas.version);
  lua_pushstring(L, blas.path);
  return 2;
}

/* use_cublas([on]) -> whether matmul (and gpu.linalg's batched LU) used cuBLAS for this state; off,
** only the kernels run (the loop of cuSOLVER calls) */
static int gpu_use_cublas (lua_State *L) {
  return gpu_state_switch(L, &gpu_state(L)->blas_off);
}

void gpu_blas_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"blas_matmul", gpu_blas_matmul}, {"cublas_version", gpu_cublas_version},
    {"use_cublas", gpu_use_cublas}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
}
