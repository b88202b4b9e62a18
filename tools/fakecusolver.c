/*
** tools/fakecusolver.c: a stand-in libcusolver for the CPU suite, beside tools/fakecuda.c
** (whose "device memory" is host RAM).  Each routine reports on stderr what it was handed:
**   fakecusolver: Xgetrf R_64F m 3 n 3 lda 3
**   fakecusolver: Xgetrs T R_64F n 3 nrhs 2 lda 3 ldb 3
**   fakecusolver: Xpotrf U C_32F n 4 lda 4             (and Xpotrs U TYPE n nrhs lda ldb)
**   fakecusolver: Xgeqrf C_64F m 5 n 3 lda 5
**   fakecusolver: Dorgqr m 5 n 3 k 3 lda 5             (Sorgqr, Cungqr, Zungqr)
**   fakecusolver: Xsyevd vectors L R_32F n 4 lda 4     (or novectors)
**   fakecusolver: Xgesvd A S R_64F m 5 n 3 lda 5 ldu 5 ldvt 3
**   fakecusolver: Xgeev novectors vectors R_64F n 4 lda 4 ldvr 4 W C_64F VL R_64F VR R_64F compute R_64F
**   fakecusolver: potrfBatched U D n 4 lda 4 batch 2 step 128   (bytes between A[0] and A[1])
**   fakecusolver: syevjBatched vectors L C n 4 lda 4 batch 3    (Ssyevj, Dsyevj, Cheevj, Zheevj)
**   fakecusolver: gesvdjBatched vectors Z m 4 n 3 lda 4 ldu 4 ldv 3 batch 5   (or novectors)
**   fakecusolver: syevjInfo destroyed                (gesvdjInfo too)
**   fakecusolver: handle destroyed
** one line a matrix (a stack for the batched routines).  getrf and getrs compute, on float32
** and float64 matrices, as LAPACK's dgetrf and dgetrs do (partial pivoting, the first largest
** pivot; info i where U(i, i) is 0), so spec/54 checks solve's layouts by their results; the
** other routines leave their outputs alone and set info to FAKE_CUSOLVER_INFO (default 0),
** getrf too where it is set; for the batched routines a list i,j,... gives matrix k the k-th
** number (the last one repeated).
** Every routine checks that it got a stream, work areas of the sizes its _bufferSize asked
** for (256 bytes on the device, 32 on the host) and leading dimensions of at least its rows.
**   FAKE_CUSOLVER_FAIL=name   that routine (e.g. Xsyevd, potrfBatched, DsyevjBatched,
**                             CgesvdjBatched) fails:
**                             CUSOLVER_STATUS_EXECUTION_FAILED
**   FAKE_CUSOLVER_CREATE=fail cusolverDnCreate fails (CUSOLVER_STATUS_NOT_INITIALIZED)
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cusolverDn.h declares cusolverDnLoggerForceDisable() without a prototype */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cusolverDn.h>
#pragma GCC diagnostic pop

#define FAKE_LU_PIVOT int64_t
#include "fake_lu.h"

#define EXPORT __attribute__((visibility("default")))
#define DEVICE_BYTES 256
#define HOST_BYTES 32

typedef struct FakeSolver { int has_stream; } FakeSolver;

static int env_is (const char *name, const char *value) {
  const char *v = getenv(name);
  return v != NULL && strcmp(v, value) == 0;
}

static int fails (const char *routine) { return env_is("FAKE_CUSOLVER_FAIL", routine); }

/* The info FAKE_CUSOLVER_INFO gives matrix k of a stack. */
static int fake_info_at (int k) { return fake_env_info("FAKE_CUSOLVER_INFO", k); }

static int fake_info (void) { return fake_info_at(0); }

/* Whether getrf and getrs compute: on real types, unless FAKE_CUSOLVER_INFO says the infos. */
static int computes (cudaDataType t) {
  return (t == CUDA_R_32F || t == CUDA_R_64F) && getenv("FAKE_CUSOLVER_INFO") == NULL;
}

static const char *type_name (cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return "R_32F";
    case CUDA_R_64F: return "R_64F";
    case CUDA_C_32F: return "C_32F";
    case CUDA_C_64F: return "C_64F";
    default: return "other";
  }
}

static const char *fill_name (cublasFillMode_t uplo) {
  return uplo == CUBLAS_FILL_MODE_LOWER ? "L" : "U";
}

EXPORT cusolverStatus_t cusolverGetProperty (libraryPropertyType type, int *value) {
  *value = type == MAJOR_VERSION ? 12 : 0;
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnCreate (cusolverDnHandle_t *handle) {
  if (env_is("FAKE_CUSOLVER_CREATE", "fail")) return CUSOLVER_STATUS_NOT_INITIALIZED;
  *handle = (cusolverDnHandle_t)calloc(1, sizeof(FakeSolver));
  return *handle != NULL ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}

EXPORT cusolverStatus_t cusolverDnDestroy (cusolverDnHandle_t handle) {
  free(handle);
  fprintf(stderr, "fakecusolver: handle destroyed\n");
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnSetStream (cusolverDnHandle_t handle, cudaStream_t stream) {
  (void)stream;
  ((FakeSolver *)handle)->has_stream = 1;
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnCreateParams (cusolverDnParams_t *params) {
  *params = (cusolverDnParams_t)calloc(1, 16);
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnDestroyParams (cusolverDnParams_t params) {
  free(params);
  return CUSOLVER_STATUS_SUCCESS;
}

/* The checks every routine makes: a stream set, the work areas asked for, lda >= rows. */
static cusolverStatus_t checked (cusolverDnHandle_t handle, int64_t rows, int64_t lda,
                                 const void *device, size_t device_bytes, const void *host,
                                 size_t host_bytes, const char *routine) {
  if (!((FakeSolver *)handle)->has_stream) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (lda < (rows > 1 ? rows : 1)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (device_bytes < DEVICE_BYTES || device == NULL || host_bytes < HOST_BYTES || host == NULL)
    return CUSOLVER_STATUS_INVALID_WORKSPACE;
  if (fails(routine)) return CUSOLVER_STATUS_EXECUTION_FAILED;
  return CUSOLVER_STATUS_SUCCESS;
}

static cusolverStatus_t work_sizes (size_t *device, size_t *host) {
  *device = DEVICE_BYTES;
  *host = HOST_BYTES;
  return CUSOLVER_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- LU, computed (fake_lu.h) */

EXPORT cusolverStatus_t cusolverDnXgetrf_bufferSize (cusolverDnHandle_t h, cusolverDnParams_t p,
                                                     int64_t m, int64_t n, cudaDataType type,
                                                     const void *a, int64_t lda,
                                                     cudaDataType compute, size_t *device,
                                                     size_t *host) {
  (void)h; (void)p; (void)m; (void)n; (void)type; (void)a; (void)lda; (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXgetrf (cusolverDnHandle_t h, cusolverDnParams_t p, int64_t m,
                                          int64_t n, cudaDataType type, void *a, int64_t lda,
                                          int64_t *ipiv, cudaDataType compute, void *device,
                                          size_t device_bytes, void *host, size_t host_bytes,
                                          int *info) {
  cusolverStatus_t s = checked(h, m, lda, device, device_bytes, host, host_bytes, "Xgetrf");
  (void)p;
  fprintf(stderr, "fakecusolver: Xgetrf %s m %lld n %lld lda %lld\n", type_name(type),
          (long long)m, (long long)n, (long long)lda);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (m != n || compute != type) return CUSOLVER_STATUS_NOT_SUPPORTED;
  *info = computes(type) ? lu(a, type == CUDA_R_32F, n, lda, ipiv) : fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnXgetrs (cusolverDnHandle_t h, cusolverDnParams_t p,
                                          cublasOperation_t trans, int64_t n, int64_t nrhs,
                                          cudaDataType type, const void *a, int64_t lda,
                                          const int64_t *ipiv, cudaDataType btype, void *b,
                                          int64_t ldb, int *info) {
  static char dummy[HOST_BYTES];
  cusolverStatus_t s = checked(h, n, lda, dummy, DEVICE_BYTES, dummy, HOST_BYTES, "Xgetrs");
  (void)p;
  fprintf(stderr, "fakecusolver: Xgetrs %s %s n %lld nrhs %lld lda %lld ldb %lld\n",
          trans == CUBLAS_OP_N ? "N" : trans == CUBLAS_OP_T ? "T" : "C", type_name(type),
          (long long)n, (long long)nrhs, (long long)lda, (long long)ldb);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (ldb < n || btype != type) return CUSOLVER_STATUS_INVALID_VALUE;
  if (computes(type))
    lu_solve(a, type == CUDA_R_32F, n, lda, ipiv, trans != CUBLAS_OP_N, b, nrhs, ldb);
  *info = 0;
  return CUSOLVER_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- the others, traced */

EXPORT cusolverStatus_t cusolverDnXpotrf_bufferSize (cusolverDnHandle_t h, cusolverDnParams_t p,
                                                     cublasFillMode_t uplo, int64_t n,
                                                     cudaDataType type, const void *a,
                                                     int64_t lda, cudaDataType compute,
                                                     size_t *device, size_t *host) {
  (void)h; (void)p; (void)uplo; (void)n; (void)type; (void)a; (void)lda; (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXpotrf (cusolverDnHandle_t h, cusolverDnParams_t p,
                                          cublasFillMode_t uplo, int64_t n, cudaDataType type,
                                          void *a, int64_t lda, cudaDataType compute,
                                          void *device, size_t device_bytes, void *host,
                                          size_t host_bytes, int *info) {
  cusolverStatus_t s = checked(h, n, lda, device, device_bytes, host, host_bytes, "Xpotrf");
  (void)p; (void)a; (void)compute;
  fprintf(stderr, "fakecusolver: Xpotrf %s %s n %lld lda %lld\n", fill_name(uplo),
          type_name(type), (long long)n, (long long)lda);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  *info = fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnXpotrs (cusolverDnHandle_t h, cusolverDnParams_t p,
                                          cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                                          cudaDataType type, const void *a, int64_t lda,
                                          cudaDataType btype, void *b, int64_t ldb, int *info) {
  static char dummy[HOST_BYTES];
  cusolverStatus_t s = checked(h, n, lda, dummy, DEVICE_BYTES, dummy, HOST_BYTES, "Xpotrs");
  (void)p; (void)a; (void)b;
  fprintf(stderr, "fakecusolver: Xpotrs %s %s n %lld nrhs %lld lda %lld ldb %lld\n",
          fill_name(uplo), type_name(type), (long long)n, (long long)nrhs, (long long)lda,
          (long long)ldb);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (ldb < n || btype != type) return CUSOLVER_STATUS_INVALID_VALUE;
  *info = 0;
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnXgeqrf_bufferSize (cusolverDnHandle_t h, cusolverDnParams_t p,
                                                     int64_t m, int64_t n, cudaDataType type,
                                                     const void *a, int64_t lda,
                                                     cudaDataType tau_type, const void *tau,
                                                     cudaDataType compute, size_t *device,
                                                     size_t *host) {
  (void)h; (void)p; (void)m; (void)n; (void)type; (void)a; (void)lda; (void)tau_type;
  (void)tau; (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXgeqrf (cusolverDnHandle_t h, cusolverDnParams_t p, int64_t m,
                                          int64_t n, cudaDataType type, void *a, int64_t lda,
                                          cudaDataType tau_type, void *tau, cudaDataType compute,
                                          void *device, size_t device_bytes, void *host,
                                          size_t host_bytes, int *info) {
  cusolverStatus_t s = checked(h, m, lda, device, device_bytes, host, host_bytes, "Xgeqrf");
  (void)p; (void)a; (void)tau; (void)compute;
  fprintf(stderr, "fakecusolver: Xgeqrf %s m %lld n %lld lda %lld\n", type_name(type),
          (long long)m, (long long)n, (long long)lda);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (tau_type != type) return CUSOLVER_STATUS_INVALID_VALUE;
  *info = fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

/* orgqr's and ungqr's: lwork counts elements; DEVICE_BYTES of them is plenty */
#define FAKE_ORGQR(name, T)                                                                  \
  EXPORT cusolverStatus_t cusolverDn##name##_bufferSize (cusolverDnHandle_t h, int m, int n, \
                                                         int k, const T *a, int lda,         \
                                                         const T *tau, int *lwork) {        \
    (void)h; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)tau;                       \
    *lwork = DEVICE_BYTES;                                                                   \
    return CUSOLVER_STATUS_SUCCESS;                                                          \
  }                                                                                          \
  EXPORT cusolverStatus_t cusolverDn##name (cusolverDnHandle_t h, int m, int n, int k, T *a,  \
                                            int lda, const T *tau, T *work, int lwork,      \
                                            int *info) {                                    \
    static char dummy[HOST_BYTES];                                                           \
    cusolverStatus_t s = checked(h, m, lda, work, (size_t)lwork * sizeof(T), dummy,          \
                                 HOST_BYTES, #name);                                         \
    (void)a; (void)tau;                                                                      \
    fprintf(stderr, "fakecusolver: %s m %d n %d k %d lda %d\n", #name, m, n, k, lda);        \
    if (s != CUSOLVER_STATUS_SUCCESS) return s;                                              \
    if (lwork < DEVICE_BYTES || m < n || n < k) return CUSOLVER_STATUS_INVALID_VALUE;        \
    *info = 0;                                                                               \
    return CUSOLVER_STATUS_SUCCESS;                                                          \
  }

FAKE_ORGQR(Sorgqr, float)
FAKE_ORGQR(Dorgqr, double)
FAKE_ORGQR(Cungqr, cuComplex)
FAKE_ORGQR(Zungqr, cuDoubleComplex)

EXPORT cusolverStatus_t cusolverDnXsyevd_bufferSize (cusolverDnHandle_t h, cusolverDnParams_t p,
                                                     cusolverEigMode_t jobz,
                                                     cublasFillMode_t uplo, int64_t n,
                                                     cudaDataType type, const void *a,
                                                     int64_t lda, cudaDataType w_type,
                                                     const void *w, cudaDataType compute,
                                                     size_t *device, size_t *host) {
  (void)h; (void)p; (void)jobz; (void)uplo; (void)n; (void)type; (void)a; (void)lda;
  (void)w_type; (void)w; (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXsyevd (cusolverDnHandle_t h, cusolverDnParams_t p,
                                          cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                          int64_t n, cudaDataType type, void *a, int64_t lda,
                                          cudaDataType w_type, void *w, cudaDataType compute,
                                          void *device, size_t device_bytes, void *host,
                                          size_t host_bytes, int *info) {
  cusolverStatus_t s = checked(h, n, lda, device, device_bytes, host, host_bytes, "Xsyevd");
  (void)p; (void)a; (void)w; (void)compute;
  fprintf(stderr, "fakecusolver: Xsyevd %s %s %s n %lld lda %lld W %s\n",
          jobz == CUSOLVER_EIG_MODE_VECTOR ? "vectors" : "novectors", fill_name(uplo),
          type_name(type), (long long)n, (long long)lda, type_name(w_type));
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  *info = fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

EXPORT cusolverStatus_t cusolverDnXgesvd_bufferSize (
    cusolverDnHandle_t h, cusolverDnParams_t p, signed char jobu, signed char jobvt, int64_t m,
    int64_t n, cudaDataType type, const void *a, int64_t lda, cudaDataType s_type,
    const void *s, cudaDataType u_type, const void *u, int64_t ldu, cudaDataType vt_type,
    const void *vt, int64_t ldvt, cudaDataType compute, size_t *device, size_t *host) {
  (void)h; (void)p; (void)jobu; (void)jobvt; (void)m; (void)n; (void)type; (void)a; (void)lda;
  (void)s_type; (void)s; (void)u_type; (void)u; (void)ldu; (void)vt_type; (void)vt; (void)ldvt;
  (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXgesvd (
    cusolverDnHandle_t h, cusolverDnParams_t p, signed char jobu, signed char jobvt, int64_t m,
    int64_t n, cudaDataType type, void *a, int64_t lda, cudaDataType s_type, void *s,
    cudaDataType u_type, void *u, int64_t ldu, cudaDataType vt_type, void *vt, int64_t ldvt,
    cudaDataType compute, void *device, size_t device_bytes, void *host, size_t host_bytes,
    int *info) {
  cusolverStatus_t status = checked(h, m, lda, device, device_bytes, host, host_bytes, "Xgesvd");
  (void)p; (void)a; (void)s; (void)s_type; (void)u_type; (void)vt_type; (void)compute;
  fprintf(stderr, "fakecusolver: Xgesvd %c %c %s m %lld n %lld lda %lld ldu %lld ldvt %lld\n",
          jobu, jobvt, type_name(type), (long long)m, (long long)n, (long long)lda,
          (long long)ldu, (long long)ldvt);
  if (status != CUSOLVER_STATUS_SUCCESS) return status;
  if (m < n || (jobu != 'N' && (u == NULL || ldu < m)) ||
      (jobvt != 'N' && (vt == NULL || ldvt < n)))
    return CUSOLVER_STATUS_INVALID_VALUE;
  *info = fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

/* geev: cuSOLVER 11.6's, which solver.c finds by name where it is there. */

/* The type combinations geev takes: all one type; or a real A, VL, VR and computation with W
** complex of their precision (n values, conjugate pairs both there) or real (2n: the real
** parts, then the imaginary ones). */
static int geev_types (cudaDataType a, cudaDataType w, cudaDataType vl, cudaDataType vr,
                       cudaDataType compute) {
  if (vl != a || vr != a || compute != a) return 0;
  if (w == a) return 1;
  return (a == CUDA_R_32F && w == CUDA_C_32F) || (a == CUDA_R_64F && w == CUDA_C_64F);
}

EXPORT cusolverStatus_t cusolverDnXgeev_bufferSize (
    cusolverDnHandle_t h, cusolverDnParams_t p, cusolverEigMode_t jobvl, cusolverEigMode_t jobvr,
    int64_t n, cudaDataType type, const void *a, int64_t lda, cudaDataType w_type, const void *w,
    cudaDataType vl_type, const void *vl, int64_t ldvl, cudaDataType vr_type, const void *vr,
    int64_t ldvr, cudaDataType compute, size_t *device, size_t *host) {
  (void)h; (void)p; (void)jobvl; (void)jobvr; (void)n; (void)type; (void)a; (void)lda;
  (void)w_type; (void)w; (void)vl_type; (void)vl; (void)ldvl; (void)vr_type; (void)vr;
  (void)ldvr; (void)compute;
  return work_sizes(device, host);
}

EXPORT cusolverStatus_t cusolverDnXgeev (
    cusolverDnHandle_t h, cusolverDnParams_t p, cusolverEigMode_t jobvl, cusolverEigMode_t jobvr,
    int64_t n, cudaDataType type, void *a, int64_t lda, cudaDataType w_type, void *w,
    cudaDataType vl_type, void *vl, int64_t ldvl, cudaDataType vr_type, void *vr, int64_t ldvr,
    cudaDataType compute, void *device, size_t device_bytes, void *host, size_t host_bytes,
    int *info) {
  cusolverStatus_t s = checked(h, n, lda, device, device_bytes, host, host_bytes, "Xgeev");
  (void)p; (void)a; (void)w;
  fprintf(stderr, "fakecusolver: Xgeev %s %s %s n %lld lda %lld ldvr %lld W %s VL %s VR %s "
          "compute %s\n", jobvl == CUSOLVER_EIG_MODE_VECTOR ? "vectors" : "novectors",
          jobvr == CUSOLVER_EIG_MODE_VECTOR ? "vectors" : "novectors", type_name(type),
          (long long)n, (long long)lda, (long long)ldvr, type_name(w_type), type_name(vl_type),
          type_name(vr_type), type_name(compute));
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (!geev_types(type, w_type, vl_type, vr_type, compute) || ldvl < 1 ||
      (jobvl == CUSOLVER_EIG_MODE_VECTOR && vl == NULL) ||
      (jobvr == CUSOLVER_EIG_MODE_VECTOR && (vr == NULL || ldvr < n)))
    return CUSOLVER_STATUS_INVALID_VALUE;
  *info = fake_info();
  return CUSOLVER_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- batched, traced */

EXPORT cusolverStatus_t cusolverDnCreateSyevjInfo (syevjInfo_t *info) {
  *info = (syevjInfo_t)calloc(1, 16);
  return *info != NULL ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}

EXPORT cusolverStatus_t cusolverDnDestroySyevjInfo (syevjInfo_t info) {
  free(info);
  fprintf(stderr, "fakecusolver: syevjInfo destroyed\n");
  return CUSOLVER_STATUS_SUCCESS;
}

static cusolverStatus_t potrf_batched (cusolverDnHandle_t h, char t, cublasFillMode_t uplo, int n,
                                       void *a[], int lda, int *info, int batch) {
  static char dummy[HOST_BYTES];
  cusolverStatus_t s = checked(h, n, lda, dummy, DEVICE_BYTES, dummy, HOST_BYTES, "potrfBatched");
  int k;
  fprintf(stderr, "fakecusolver: potrfBatched %s %c n %d lda %d batch %d step %lld\n",
          fill_name(uplo), t, n, lda, batch,
          batch > 1 ? (long long)((char *)a[1] - (char *)a[0]) : 0LL);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (a == NULL || info == NULL || batch < 0) return CUSOLVER_STATUS_INVALID_VALUE;
  for (k = 0; k < batch; k++) {
    if (a[k] == NULL) return CUSOLVER_STATUS_INVALID_VALUE;
    info[k] = fake_info_at(k);
  }
  return CUSOLVER_STATUS_SUCCESS;
}

static cusolverStatus_t syevj_batched (cusolverDnHandle_t h, const char *name,
                                       cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,
                                       const void *a, int lda, const void *w, const void *work,
                                       int lwork, int *info, syevjInfo_t params, int batch) {
  cusolverStatus_t s = checked(h, n, lda, work, (size_t)lwork, work, HOST_BYTES, name);
  int k;
  fprintf(stderr, "fakecusolver: syevjBatched %s %s %c n %d lda %d batch %d\n",
          jobz == CUSOLVER_EIG_MODE_VECTOR ? "vectors" : "novectors", fill_name(uplo), name[0], n,
          lda, batch);
  if (s != CUSOLVER_STATUS_SUCCESS) return s;
  if (n > 32 || a == NULL || w == NULL || info == NULL || params == NULL || batch < 0)
    return CUSOLVER_STATUS_INVALID_VALUE;
  for (k = 0; k < batch; k++) info[k] = fake_info_at(k);
  return CUSOLVER_STATUS_SUCCESS;
}

#define FAKE_BATCHED(t, syevj, T, R)                                                         \
  EXPORT cusolverStatus_t cusolverDn##t##potrfBatched (cusolverDnHandle_t h,                  \
                                                       cublasFillMode_t uplo, int n,          \
                                                       T *a[], int lda, int *info,            \
                                                       int batch) {                           \
    return potrf_batched(h, #t[0], uplo, n, (void **)a, lda, info, batch);                   \
  }                                                                                          \
  EXPORT cusolverStatus_t cusolverDn##syevj##Batched_bufferSize (                            \
      cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n,            \
      const T *a, int lda, const R *w, int *lwork, syevjInfo_t params, int batch) {          \
    (void)h; (void)jobz; (void)uplo; (void)n; (void)a; (void)lda; (void)w; (void)params;     \
    (void)batch;                                                                             \
    *lwork = DEVICE_BYTES;                                                                   \
    return CUSOLVER_STATUS_SUCCESS;                                                          \
  }                                                                                          \
  EXPORT cusolverStatus_t cusolverDn##syevj##Batched (                                       \
      cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t uplo, int n, T *a,      \
      int lda, R *w, T *work, int lwork, int *info, syevjInfo_t params, int batch) {         \
    if (lwork < DEVICE_BYTES) return CUSOLVER_STATUS_INVALID_WORKSPACE;                      \
    return syevj_batched(h, #syevj "Batched", jobz, uplo, n, a, lda, w, work, lwork * (int)sizeof(T),      \
                         info, params, batch);                                               \
  }

FAKE_BATCHED(S, Ssyevj, float, float)
FAKE_BATCHED(D, Dsyevj, double, double)
FAKE_BATCHED(C, Cheevj, cuComplex, float)
FAKE_BATCHED(Z, Zheevj, cuDoubleComplex, double)

EXPORT cusolverStatus_t cusolverDnCreateGesvdjInfo (gesvdjInfo_t *info) {
  *info = (gesvdjInfo_t)calloc(1, 16);
  return *info != NULL ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}

EXPORT cusolverStatus_t cusolverDnDestroyGesvdjInfo (gesvdjInfo_t info) {
  free(info);
  fprintf(stderr, "fakecusolver: gesvdjInfo destroyed\n");
  return CUSOLVER_STATUS_SUCCESS;
}

/* gesvdjBatched's checks: those of every routine, and ldu >= m, ldv >= n, m, n <= 32, and the
** arrays, U and V too (its documentation has them without vectors as well). */
static cusolverStatus_t gesvdj_batched (cusolverDnHandle_t h, char t, cusolverEigMode_t jobz,
                                        int m, int n, const void *a, int lda, const void *s,
                                        const void *u, int ldu, const void *v, int ldv,
                                        const void *work, size_t work_bytes, int *info,
                                        gesvdjInfo_t params, int batch) {
  static char dummy[HOST_BYTES];
  char name[] = "?gesvdjBatched";
  cusolverStatus_t status;
  int k;
  name[0] = t;
  status = checked(h, m, lda, work, work_bytes, dummy, HOST_BYTES, name);
  fprintf(stderr, "fakecusolver: gesvdjBatched %s %c m %d n %d lda %d ldu %d ldv %d batch %d\n",
          jobz == CUSOLVER_EIG_MODE_VECTOR ? "vectors" : "novectors", t, m, n, lda, ldu, ldv, batch);
  if (status != CUSOLVER_STATUS_SUCCESS) return status;
  if (m > 32 || n > 32 || ldu < m || ldv < n || a == NULL || s == NULL || u == NULL || v == NULL ||
      info == NULL || params == NULL || batch < 0)
    return CUSOLVER_STATUS_INVALID_VALUE;
  for (k = 0; k < batch; k++) info[k] = fake_info_at(k);
  return CUSOLVER_STATUS_SUCCESS;
}

#define FAKE_GESVDJ(t, T, R)                                                                 \
  EXPORT cusolverStatus_t cusolverDn##t##gesvdjBatched_bufferSize (                           \
      cusolverDnHandle_t h, cusolverEigMode_t jobz, int m, int n, const T *a, int lda,       \
      const R *s, const T *u, int ldu, const T *v, int ldv, int *lwork, gesvdjInfo_t params, \
      int batch) {                                                                           \
    (void)h; (void)jobz; (void)m; (void)n; (void)a; (void)lda; (void)s; (void)u; (void)ldu;  \
    (void)v; (void)ldv; (void)params; (void)batch;                                           \
    *lwork = DEVICE_BYTES;                                                                   \
    return CUSOLVER_STATUS_SUCCESS;                                                          \
  }                                                                                          \
  EXPORT cusolverStatus_t cusolverDn##t##gesvdjBatched (                                      \
      cusolverDnHandle_t h, cusolverEigMode_t jobz, int m, int n, T *a, int lda, R *s, T *u, \
      int ldu, T *v, int ldv, T *work, int lwork, int *info, gesvdjInfo_t params,            \
      int batch) {                                                                           \
    if (lwork < DEVICE_BYTES) return CUSOLVER_STATUS_INVALID_WORKSPACE;                      \
    return gesvdj_batched(h, #t[0], jobz, m, n, a, lda, s, u, ldu, v, ldv, work,             \
                          (size_t)lwork * sizeof(T), info, params, batch);                   \
  }

FAKE_GESVDJ(S, float, float)
FAKE_GESVDJ(D, double, double)
FAKE_GESVDJ(C, cuComplex, float)
FAKE_GESVDJ(Z, cuDoubleComplex, double)
