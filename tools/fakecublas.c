/*
** tools/fakecublas.c: a stand-in libcublas for the CPU suite, beside tools/fakecuda.c (whose
** "device memory" is host RAM).  Its cublasGemmStridedBatchedEx computes float32 and float64
** products on the host, column-major as cuBLAS does, so spec/38 checks how src/blas.c hands
** matmul's layouts to cuBLAS (operations, leading dimensions, stack strides) without a GPU.
** Environment, to provoke what a real library does rarely:
**   FAKE_CUBLAS_MAJOR=n        the version cublasGetProperty reports (default 13)
**   FAKE_CUBLAS_CREATE=fail    cublasCreate fails (CUBLAS_STATUS_NOT_INITIALIZED)
**   FAKE_CUBLAS_GEMM=alloc     the product fails for its workspace (CUBLAS_STATUS_ALLOC_FAILED)
**   FAKE_CUBLAS_GEMM=fail      the product fails (CUBLAS_STATUS_EXECUTION_FAILED)
** Each handle destroyed is reported on stderr ("fakecublas: handle destroyed"), and so is each
** product ("fakecublas: gemm T N m n k lda ldb ldc strides batches").
**
** The batched LU (getrfBatched, getrsBatched, getriBatched) reads its arrays of matrix
** addresses as the real library does, and reports each call with the bytes between the first
** two matrices of each array (0 for a stack of one), to check how src/solver.c builds them:
**   fakecublas: getrfBatched D n 3 lda 3 batch 2 step 72
**   fakecublas: getrsBatched T D n 3 nrhs 1 lda 3 ldb 3 batch 2 step 72 24
**   fakecublas: getriBatched C n 3 lda 3 ldc 3 batch 2 step 72 72
** On float32 and float64 matrices it computes as LAPACK's dgetrf, dgetrs and dgetri do (partial
** pivoting, the first largest pivot; info i where U(i, i) is 0); on complex ones it leaves
** the matrices alone.  FAKE_CUBLAS_INFO=i,j,... sets the infos instead (matrix k's the k-th
** number, the last one repeated; no computing then), FAKE_CUBLAS_BATCHED=fail fails each
** routine (CUBLAS_STATUS_EXECUTION_FAILED).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cublas_api.h>

#define FAKE_LU_PIVOT int
#include "fake_lu.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct FakeHandle { cudaStream_t stream; cublasMath_t mode; } FakeHandle;

static int env_is (const char *name, const char *value) {
  const char *v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

EXPORT cublasStatus_t cublasGetProperty (libraryPropertyType type, int *value) {
  const char *major = getenv("FAKE_CUBLAS_MAJOR");
  *value = type == MAJOR_VERSION ? (major ? atoi(major) : 13) : 0;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT const char *cublasGetStatusName (cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_NOT_INITIALIZED";
  }
}

EXPORT const char *cublasGetStatusString (cublasStatus_t status) {
  return status == CUBLAS_STATUS_EXECUTION_FAILED ? "the GPU program failed to execute"
                                                  : "a stand-in failure";
}

EXPORT cublasStatus_t cublasCreate_v2 (cublasHandle_t *handle) {
  if (env_is("FAKE_CUBLAS_CREATE", "fail")) return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = (cublasHandle_t)calloc(1, sizeof(FakeHandle));
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

EXPORT cublasStatus_t cublasDestroy_v2 (cublasHandle_t handle) {
  free(handle);
  fprintf(stderr, "fakecublas: handle destroyed\n");
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetStream_v2 (cublasHandle_t handle, cudaStream_t stream) {
  ((FakeHandle *)handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetMathMode (cublasHandle_t handle, cublasMath_t mode) {
  ((FakeHandle *)handle)->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

/* Element (i, j) of op(x), x column-major with leading dimension ld. */
static double element (const void *x, cudaDataType type, cublasOperation_t op, int ld,
                       long long i, long long j) {
  long long at = op == CUBLAS_OP_N ? i + j * ld : j + i * ld;
  return type == CUDA_R_32F ? ((const float *)x)[at] : ((const double *)x)[at];
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx (
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *A, cudaDataType Atype, int lda, long long strideA,
    const void *B, cudaDataType Btype, int ldb, long long strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long strideC, int batches,
    cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  size_t size = Ctype == CUDA_R_32F ? 4 : 8;
  int p;
  long long i, j, l;
  (void)handle; (void)alpha; (void)beta; (void)compute; (void)algo;   /* alpha 1, beta 0 */
  fprintf(stderr, "fakecublas: gemm %c %c %d %d %d %d %d %d %lld %lld %lld %d\n",
          transa == CUBLAS_OP_N ? 'N' : 'T', transb == CUBLAS_OP_N ? 'N' : 'T', m, n, k, lda,
          ldb, ldc, strideA, strideB, strideC, batches);
  if (env_is("FAKE_CUBLAS_GEMM", "alloc")) return CUBLAS_STATUS_ALLOC_FAILED;
  if (env_is("FAKE_CUBLAS_GEMM", "fail")) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((Ctype != CUDA_R_32F && Ctype != CUDA_R_64F) || Atype != Ctype || Btype != Ctype)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  for (p = 0; p < batches; p++) {
    const char *a = (const char *)A + p * strideA * (long long)size;
    const char *b = (const char *)B + p * strideB * (long long)size;
    char *c = (char *)C + p * strideC * (long long)size;
    for (j = 0; j < n; j++) {
      for (i = 0; i < m; i++) {
        double sum = 0;
        for (l = 0; l < k; l++)
          sum += element(a, Atype, transa, lda, i, l) * element(b, Btype, transb, ldb, l, j);
        if (Ctype == CUDA_R_32F) ((float *)c)[i + j * ldc] = (float)sum;
        else ((double *)c)[i + j * ldc] = sum;
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- batched LU */

/* The info FAKE_CUBLAS_INFO gives matrix k. */
static int fake_info (int k) { return fake_env_info("FAKE_CUBLAS_INFO", k); }

static long long step (const void *const *array, int batch) {
  return batch > 1 ? (long long)((const char *)array[1] - (const char *)array[0]) : 0;
}

/* Whether the routines compute on type t ('S', 'D', 'C', 'Z'). */
static int computes (char t) {
  return (t == 'S' || t == 'D') && getenv("FAKE_CUBLAS_INFO") == NULL;
}

static cublasStatus_t getrf_batched (char t, int n, void *const a[], int lda, int *ipiv,
                                     int *info, int batch) {
  int k;
  fprintf(stderr, "fakecublas: getrfBatched %c n %d lda %d batch %d step %lld\n", t, n, lda, batch,
          step((const void *const *)a, batch));
  if (env_is("FAKE_CUBLAS_BATCHED", "fail")) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (n < 0 || lda < (n > 1 ? n : 1) || batch < 0 || a == NULL || ipiv == NULL || info == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (k = 0; k < batch; k++)
    info[k] = computes(t) ? lu(a[k], t == 'S', n, lda, ipiv + (size_t)k * n) : fake_info(k);
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t getrs_batched (char t, cublasOperation_t trans, int n, int nrhs,
                                     const void *const a[], int lda, const int *ipiv,
                                     void *const b[], int ldb, int *info, int batch) {
  int k;
  fprintf(stderr, "fakecublas: getrsBatched %s %c n %d nrhs %d lda %d ldb %d batch %d step %lld %lld\n",
          trans == CUBLAS_OP_N ? "N" : trans == CUBLAS_OP_T ? "T" : "C", t, n, nrhs, lda, ldb, batch,
          step(a, batch), step((const void *const *)b, batch));
  if (env_is("FAKE_CUBLAS_BATCHED", "fail")) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || batch < 0 ||
      a == NULL || b == NULL || ipiv == NULL || info == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (k = 0; k < batch && computes(t); k++)
    lu_solve(a[k], t == 'S', n, lda, ipiv + (size_t)k * n, trans != CUBLAS_OP_N, b[k], nrhs, ldb);
  *info = 0;
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t getri_batched (char t, int n, const void *const a[], int lda,
                                     const int *ipiv, void *const c[], int ldc, int *info,
                                     int batch) {
  int i, j, k;
  fprintf(stderr, "fakecublas: getriBatched %c n %d lda %d ldc %d batch %d step %lld %lld\n", t, n,
          lda, ldc, batch, step(a, batch), step((const void *const *)c, batch));
  if (env_is("FAKE_CUBLAS_BATCHED", "fail")) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (n < 0 || lda < (n > 1 ? n : 1) || ldc < (n > 1 ? n : 1) || batch < 0 || a == NULL ||
      c == NULL || ipiv == NULL || info == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (k = 0; k < batch; k++) {
    info[k] = 0;
    if (!computes(t)) continue;
    for (j = 0; j < n; j++)               /* the identity, solved in place */
      for (i = 0; i < n; i++) set(c[k], t == 'S', ldc, i, j, i == j ? 1 : 0);
    for (i = 0; i < n && info[k] == 0; i++)
      if (get(a[k], t == 'S', lda, i, i) == 0) info[k] = i + 1;
    if (info[k] == 0) lu_solve(a[k], t == 'S', n, lda, ipiv + (size_t)k * n, 0, c[k], n, ldc);
  }
  return CUBLAS_STATUS_SUCCESS;
}

#define FAKE_BATCHED_LU(t, T)                                                                \
  EXPORT cublasStatus_t cublas##t##getrfBatched (cublasHandle_t h, int n, T *const a[],      \
                                                 int lda, int *ipiv, int *info, int batch) { \
    (void)h;                                                                                 \
    return getrf_batched(#t[0], n, (void *const *)a, lda, ipiv, info, batch);                \
  }                                                                                          \
  EXPORT cublasStatus_t cublas##t##getrsBatched (cublasHandle_t h, cublasOperation_t trans,  \
                                                 int n, int nrhs, const T *const a[],        \
                                                 int lda, const int *ipiv, T *const b[],     \
                                                 int ldb, int *info, int batch) {            \
    (void)h;                                                                                 \
    return getrs_batched(#t[0], trans, n, nrhs, (const void *const *)a, lda, ipiv,           \
                         (void *const *)b, ldb, info, batch);                                \
  }                                                                                          \
  EXPORT cublasStatus_t cublas##t##getriBatched (cublasHandle_t h, int n, const T *const a[], \
                                                 int lda, const int *ipiv, T *const c[],     \
                                                 int ldc, int *info, int batch) {            \
    (void)h;                                                                                 \
    return getri_batched(#t[0], n, (const void *const *)a, lda, ipiv, (void *const *)c, ldc, \
                         info, batch);                                                       \
  }

FAKE_BATCHED_LU(S, float)
FAKE_BATCHED_LU(D, double)
FAKE_BATCHED_LU(C, cuComplex)
FAKE_BATCHED_LU(Z, cuDoubleComplex)
