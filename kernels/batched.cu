// batched.cu: the addresses of a stack's matrices, as cuBLAS's and cuSOLVER's batched routines
// take them.  src/solver.c launches it (lua/gpu/linalg.lua compiles it and hands it over):
// written on the host and copied up, 20000 addresses cost getrsBatched about 35 us more.
//
// out[k * matrices + i] = base_k + i * step_k for each of the `stacks` (1 or 2) stacks k.
extern "C" __global__ void gpu_matrix_addresses(unsigned long long *out, long long matrices,
                                                int stacks, unsigned long long base0,
                                                unsigned long long step0, unsigned long long base1,
                                                unsigned long long step1) {
  const long long total = matrices * stacks;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total;
       j += (long long)gridDim.x * blockDim.x) {
    const unsigned long long i = (unsigned long long)(j % matrices);
    out[j] = j < matrices ? base0 + i * step0 : base1 + i * step1;
  }
}

// Stacks of small real matrices (at most GPU_SMALL_ROWS rows) solved without cuBLAS: a thread
// for each right side of each matrix, which factors its matrix (an 8 x 8 LU is a few hundred
// operations: each side's thread repeats them rather than share the factors) and solves for
// that side: Gaussian elimination with partial pivoting, the pivot the first of the largest
// magnitudes in its column (LAPACK's getrf's), then back substitution.  a: the matrices,
// row-major, matrix i at a + i * a_step (0: one for all); b: the right sides, row-major n x k,
// at b + i * b_step, or NULL for the identity's columns (k = n: the inverse); x: n x k each,
// contiguous.  singular[block]: whether a matrix that block's threads solved had a zero pivot
// (getrf's info > 0: x is then not a solution); a flag a block, as the caller reads them all
// back to learn whether any was singular.
#define GPU_SMALL_ROWS 8

// Step j of partial pivoting on lu (n x n): the first of the largest magnitudes in column j
// from row j down (LAPACK's getrf's pivot) swapped into row j, columns j on.  Returns that
// row (j where nothing moved); *largest gets the pivot's magnitude (0: a zero pivot).
template <typename T>
__device__ __forceinline__ int gpu_small_pivot(T (&lu)[GPU_SMALL_ROWS][GPU_SMALL_ROWS], int j,
                                               int n, T *largest) {
  int p = j;
  *largest = fabs(lu[j][j]);
  for (int r = j + 1; r < n; r++) {
    if (fabs(lu[r][j]) > *largest) {
      *largest = fabs(lu[r][j]);
      p = r;
    }
  }
  if (p != j) {
    for (int c = j; c < n; c++) {
      const T swapped = lu[j][c];
      lu[j][c] = lu[p][c];
      lu[p][c] = swapped;
    }
  }
  return p;
}

template <typename T>
__device__ __forceinline__ void gpu_small_solve(T *x, int *singular, const T *a,
                                                long long a_step, const T *b, long long b_step,
                                                long long matrices, int n, int k) {
  bool zero_pivot = false;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < matrices * k;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = t / k;
    const int side = (int)(t % k);
    const T *ai = a + i * a_step;
    T lu[GPU_SMALL_ROWS][GPU_SMALL_ROWS], y[GPU_SMALL_ROWS];
    for (int r = 0; r < n; r++) {
      for (int c = 0; c < n; c++) lu[r][c] = ai[r * n + c];
      y[r] = b != NULL ? b[i * b_step + (long long)r * k + side] : (T)(r == side);
    }
    for (int j = 0; j < n; j++) {
      T largest;
      const int p = gpu_small_pivot(lu, j, n, &largest);   // (a zero column swaps nothing)
      if (largest == (T)0) {
        zero_pivot = true;
        continue;
      }
      if (p != j) {
        const T swapped = y[j];
        y[j] = y[p];
        y[p] = swapped;
      }
      for (int r = j + 1; r < n; r++) {
        const T factor = lu[r][j] / lu[j][j];
        for (int c = j + 1; c < n; c++) lu[r][c] -= factor * lu[j][c];
        y[r] -= factor * y[j];
      }
    }
    for (int r = n - 1; r >= 0; r--) {
      T sum = y[r];
      for (int c = r + 1; c < n; c++) sum -= lu[r][c] * y[c];
      y[r] = sum / lu[r][r];
    }
    T *xi = x + i * (long long)n * k;
    for (int r = 0; r < n; r++) xi[(long long)r * k + side] = y[r];
  }
  const int any = __syncthreads_or(zero_pivot);
  if (threadIdx.x == 0) singular[blockIdx.x] = any != 0;
}

extern "C" __global__ void gpu_small_solve_f32(float *x, int *singular, const float *a,
                                               long long a_step, const float *b, long long b_step,
                                               long long matrices, int n, int k) {
  gpu_small_solve(x, singular, a, a_step, b, b_step, matrices, n, k);
}

extern "C" __global__ void gpu_small_solve_f64(double *x, int *singular, const double *a,
                                               long long a_step, const double *b, long long b_step,
                                               long long matrices, int n, int k) {
  gpu_small_solve(x, singular, a, a_step, b, b_step, matrices, n, k);
}

// det and slogdet of stacks of small real matrices (at most GPU_SMALL_ROWS rows), a thread a
// matrix: gpu_small_solve's LU, then as NumPy's: the sign of U's diagonal's product, changed
// by each row swap (a NaN counts as positive), and the sum of its logs of magnitudes, into
// sign and logabsdet; or, with det not NULL, sign * exp(logabsdet) into det (a running
// product would overflow or vanish where the determinant does not).  A zero pivot gives 0
// (sign 0, log -inf), as LAPACK's exact zero pivot does in NumPy's det: not an error, so
// nothing is read back.  A NaN pivot makes logabsdet and det NaN.
template <typename T>
__device__ __forceinline__ void gpu_small_det(T *det, T *sign, T *logabsdet, const T *a,
                                              long long matrices, int n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < matrices;
       i += (long long)gridDim.x * blockDim.x) {
    const T *ai = a + i * (long long)n * n;
    T lu[GPU_SMALL_ROWS][GPU_SMALL_ROWS];
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++) lu[r][c] = ai[r * n + c];
    T signs = 1, logs = 0;
    bool zero = false;
    for (int j = 0; j < n; j++) {
      T largest;
      if (gpu_small_pivot(lu, j, n, &largest) != j) signs = -signs;
      if (largest == (T)0) {
        zero = true;
        break;
      }
      const T u = lu[j][j];
      if (u < (T)0) signs = -signs;
      logs += log(largest);
      for (int r = j + 1; r < n; r++) {
        const T factor = lu[r][j] / u;
        for (int c = j + 1; c < n; c++) lu[r][c] -= factor * lu[j][c];
      }
    }
    if (det != NULL) {
      det[i] = zero ? (T)0 : signs * exp(logs);
    } else {
      sign[i] = zero ? (T)0 : signs;
      logabsdet[i] = zero ? log((T)0) : logs;   // -inf
    }
  }
}

extern "C" __global__ void gpu_small_det_f32(float *det, float *sign, float *logabsdet,
                                             const float *a, long long matrices, int n) {
  gpu_small_det(det, sign, logabsdet, a, matrices, n);
}

extern "C" __global__ void gpu_small_det_f64(double *det, double *sign, double *logabsdet,
                                             const double *a, long long matrices, int n) {
  gpu_small_det(det, sign, logabsdet, a, matrices, n);
}

// cholesky of stacks of small real matrices (at most GPU_SMALL_ROWS rows), a thread a
// matrix: L with L L^T = a from a's lower triangle (upper 0), or U = L^T from its upper one
// (upper 1), the other triangle zero; Cholesky-Banachiewicz, row by row.  A pivot that is
// not positive (or NaN: potrf's test) marks the block's flag in singular, as above.
template <typename T>
__device__ __forceinline__ void gpu_small_cholesky(T *out, int *singular, const T *a,
                                                   long long matrices, int n, int upper) {
  bool indefinite = false;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < matrices;
       i += (long long)gridDim.x * blockDim.x) {
    const T *ai = a + i * (long long)n * n;
    T *oi = out + i * (long long)n * n;
    T l[GPU_SMALL_ROWS][GPU_SMALL_ROWS];
    for (int r = 0; r < n; r++) {
      for (int c = 0; c <= r; c++) {
        T sum = upper ? ai[c * n + r] : ai[r * n + c];      // a(r, c) of the triangle given
        for (int j = 0; j < c; j++) sum -= l[r][j] * l[c][j];
        if (c < r) {
          l[r][c] = sum / l[c][c];
        } else {
          if (!(sum > (T)0)) indefinite = true;
          l[r][r] = sqrt(sum);
        }
      }
    }
    for (int r = 0; r < n; r++) {
      for (int c = 0; c < n; c++) {
        const T v = c <= r ? l[r][c] : (T)0;
        if (upper) oi[c * n + r] = v;
        else oi[r * n + c] = v;
      }
    }
  }
  const int any = __syncthreads_or(indefinite);
  if (threadIdx.x == 0) singular[blockIdx.x] = any != 0;
}

extern "C" __global__ void gpu_small_cholesky_f32(float *out, int *singular, const float *a,
                                                  long long matrices, int n, int upper) {
  gpu_small_cholesky(out, singular, a, matrices, n, upper);
}

extern "C" __global__ void gpu_small_cholesky_f64(double *out, int *singular, const double *a,
                                                  long long matrices, int n, int upper) {
  gpu_small_cholesky(out, singular, a, matrices, n, upper);
}

// eigh and eigvalsh of stacks of small real symmetric matrices (at most GPU_SMALL_ROWS rows),
// a thread a matrix: cyclic Jacobi, every off-diagonal element rotated away in turn each sweep
// until their squares sum to eps^2 of the whole's (the off-diagonal norm then squares at each
// sweep: a few sweeps), the rotations gathered into the eigenvectors.  The matrix is first
// scaled by a power of two (exactly) to a largest magnitude in [1/2, 1), so that the squares
// neither overflow nor vanish whatever its scale, as LAPACK's syevd scales.  m holds the
// matrices (their lower triangle read, upper 0, or their upper one, upper 1) and gets the
// eigenvectors, row j of a matrix the j-th (where vectors is 1); w the eigenvalues,
// ascending.  A matrix with an infinite or NaN element, or not diagonal after
// GPU_SMALL_SWEEPS sweeps, marks its block's flag in unconverged.
#define GPU_SMALL_SWEEPS 30

template <typename T>
__device__ __forceinline__ void gpu_small_eigh(T *m, T *w, int *unconverged, long long matrices,
                                               int n, int upper, int vectors, T eps) {
  bool failed = false;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < matrices;
       i += (long long)gridDim.x * blockDim.x) {
    T *mi = m + i * (long long)n * n;
    T s[GPU_SMALL_ROWS][GPU_SMALL_ROWS], v[GPU_SMALL_ROWS][GPU_SMALL_ROWS];
    T largest = 0;
    bool finite = true;
    for (int r = 0; r < n; r++) {
      for (int c = 0; c < n; c++) {
        s[r][c] = (upper ? r <= c : r >= c) ? mi[r * n + c] : mi[c * n + r];
        v[r][c] = (T)(r == c);
        finite = finite && isfinite(s[r][c]);
        largest = fmax(largest, fabs(s[r][c]));
      }
    }
    int scale = 0;                                   // s = a / 2^scale
    if (largest > (T)0) frexp(largest, &scale);
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++) s[r][c] = ldexp(s[r][c], -scale);
    bool diagonal = false;
    for (int sweep = 0; finite; sweep++) {
      T off = 0, all = 0;
      for (int p = 0; p < n; p++) {
        all += s[p][p] * s[p][p];
        for (int q = p + 1; q < n; q++) off += s[p][q] * s[p][q];
      }
      all += 2 * off;
      diagonal = off <= eps * eps * all;
      if (diagonal || sweep == GPU_SMALL_SWEEPS) break;
      for (int p = 0; p < n - 1; p++) {
        for (int q = p + 1; q < n; q++) {
          if (s[p][q] == (T)0) continue;
          // the rotation in (p, q) whose tangent is the smaller root of t^2 + 2 theta t = 1
          const T theta = (s[q][q] - s[p][p]) / (2 * s[p][q]);
          const T t = (theta >= (T)0 ? (T)1 : (T)-1) / (fabs(theta) + sqrt(theta * theta + (T)1));
          const T c = (T)1 / sqrt(t * t + (T)1), sn = t * c;
          for (int k = 0; k < n; k++) {              // columns p and q, then rows p and q
            const T kp = s[k][p], kq = s[k][q];
            s[k][p] = c * kp - sn * kq;
            s[k][q] = sn * kp + c * kq;
          }
          for (int k = 0; k < n; k++) {
            const T pk = s[p][k], qk = s[q][k];
            s[p][k] = c * pk - sn * qk;
            s[q][k] = sn * pk + c * qk;
          }
          for (int k = 0; k < n; k++) {
            const T kp = v[k][p], kq = v[k][q];
            v[k][p] = c * kp - sn * kq;
            v[k][q] = sn * kp + c * kq;
          }
        }
      }
    }
    if (!finite || !diagonal) failed = true;
    for (int p = 0; p < n; p++) s[p][p] = ldexp(s[p][p], scale);
    for (int j = 0; j < n; j++) {                    // ascending: a selection sort, columns along
      int least = j;
      for (int k = j + 1; k < n; k++) if (s[k][k] < s[least][least]) least = k;
      if (least != j) {
        const T d = s[j][j];
        s[j][j] = s[least][least];
        s[least][least] = d;
        for (int r = 0; r < n; r++) {
          const T x = v[r][j];
          v[r][j] = v[r][least];
          v[r][least] = x;
        }
      }
      w[i * n + j] = s[j][j];
      if (vectors) for (int r = 0; r < n; r++) mi[j * n + r] = v[r][j];
    }
  }
  const int any = __syncthreads_or(failed);
  if (threadIdx.x == 0) unconverged[blockIdx.x] = any != 0;
}

extern "C" __global__ void gpu_small_eigh_f32(float *m, float *w, int *unconverged,
                                              long long matrices, int n, int upper, int vectors) {
  gpu_small_eigh(m, w, unconverged, matrices, n, upper, vectors, 1.1920928955078125e-7f);
}

extern "C" __global__ void gpu_small_eigh_f64(double *m, double *w, int *unconverged,
                                              long long matrices, int n, int upper, int vectors) {
  gpu_small_eigh(m, w, unconverged, matrices, n, upper, vectors, 2.220446049250313e-16);
}
