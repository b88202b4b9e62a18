/*
** tools/fake_lu.h: the LU the stand-in cuSOLVER and cuBLAS compute (tools/fakecusolver.c's
** getrf and getrs, tools/fakecublas.c's batched ones), so that the CPU suite checks the layouts
** gpu.linalg hands them by their results; and the made-up infos both take from the
** environment.  The includer defines FAKE_LU_PIVOT, the pivots' type (int64_t for cuSOLVER's
** 64-bit API, int for cuBLAS's batched routines).
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The info that the environment variable `variable` (comma-separated numbers) gives matrix k
** of a stack: its k-th number (0-based), the last one repeated; 0 when it is unset. */
static int fake_env_info (const char *variable, int k) {
  const char *v = getenv(variable);
  int info = 0;
  while (v != NULL && *v != '\0') {
    info = atoi(v);
    if (k-- == 0) break;
    v = strchr(v, ',');
    if (v != NULL) v++;
  }
  return info;
}

/* Element (i, j) of a column-major matrix of float32 or float64, read and written as double. */
static double get (const void *a, int single, int64_t lda, int64_t i, int64_t j) {
  return single ? ((const float *)a)[i + j * lda] : ((const double *)a)[i + j * lda];
}

static void set (void *a, int single, int64_t lda, int64_t i, int64_t j, double v) {
  if (single) ((float *)a)[i + j * lda] = (float)v;
  else ((double *)a)[i + j * lda] = v;
}

/* dgetf2's unblocked LU with partial pivoting; returns info. */
static int lu (void *a, int single, int64_t n, int64_t lda, FAKE_LU_PIVOT *ipiv) {
  int64_t i, j, k;
  int info = 0;
  for (k = 0; k < n; k++) {
    int64_t p = k;
    for (i = k + 1; i < n; i++)
      if (fabs(get(a, single, lda, i, k)) > fabs(get(a, single, lda, p, k))) p = i;
    ipiv[k] = (FAKE_LU_PIVOT)(p + 1);
    if (get(a, single, lda, p, k) == 0) {
      if (info == 0) info = (int)(k + 1);
      continue;
    }
    if (p != k) {
      for (j = 0; j < n; j++) {
        double t = get(a, single, lda, k, j);
        set(a, single, lda, k, j, get(a, single, lda, p, j));
        set(a, single, lda, p, j, t);
      }
    }
    for (i = k + 1; i < n; i++) {
      double l = get(a, single, lda, i, k) / get(a, single, lda, k, k);
      set(a, single, lda, i, k, l);
      for (j = k + 1; j < n; j++)
        set(a, single, lda, i, j, get(a, single, lda, i, j) - l * get(a, single, lda, k, j));
    }
  }
  return info;
}

/* dgetrs: op(A) X = B from the LU factors, op N or T (real matrices: C is T); each column of
** B solved in doubles. */
static void lu_solve (const void *a, int single, int64_t n, int64_t lda, const FAKE_LU_PIVOT *ipiv,
                      int transposed, void *b, int64_t nrhs, int64_t ldb) {
  double *x = (double *)malloc((size_t)n * sizeof(double));
  int64_t c, i, k;
  for (c = 0; c < nrhs; c++) {
    for (i = 0; i < n; i++) x[i] = get(b, single, ldb, i, c);
    if (!transposed) {          /* L U x = P b */
      for (k = 0; k < n; k++) {
        double t = x[k];
        x[k] = x[ipiv[k] - 1];
        x[ipiv[k] - 1] = t;
      }
      for (i = 0; i < n; i++)
        for (k = 0; k < i; k++) x[i] -= get(a, single, lda, i, k) * x[k];
      for (i = n - 1; i >= 0; i--) {
        for (k = i + 1; k < n; k++) x[i] -= get(a, single, lda, i, k) * x[k];
        x[i] /= get(a, single, lda, i, i);
      }
    } else {                    /* U^T L^T P x = b */
      for (i = 0; i < n; i++) {
        for (k = 0; k < i; k++) x[i] -= get(a, single, lda, k, i) * x[k];
        x[i] /= get(a, single, lda, i, i);
      }
      for (i = n - 1; i >= 0; i--)
        for (k = i + 1; k < n; k++) x[i] -= get(a, single, lda, k, i) * x[k];
      for (k = n - 1; k >= 0; k--) {
        double t = x[k];
        x[k] = x[ipiv[k] - 1];
        x[ipiv[k] - 1] = t;
      }
    }
    for (i = 0; i < n; i++) set(b, single, ldb, i, c, x[i]);
  }
  free(x);
}
