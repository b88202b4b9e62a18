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
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cublas_api.h>

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
