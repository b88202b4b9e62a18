// common.cu: what the library's generated kernels share (prepended by the Lua layer).
//
// gpu_layout describes a strided array: the flat (row-major) index of an element maps to a
// byte offset through shape and byte strides.  The Lua side collapses dimensions first, so
// ndim is usually 1 or 2 and the division loop short.  float16 and bfloat16 are stored as
// their 16 bits and converted through PTX, so no CUDA header has to be found at run time;
// complex64 and complex128 are structs with their own arithmetic, below.

#define GPU_MAXDIM 32

struct gpu_layout {
  long long ndim;
  long long shape[GPU_MAXDIM];
  long long strides[GPU_MAXDIM];   // bytes
};

__device__ __forceinline__ long long gpu_offset(const gpu_layout &lay, long long i) {
  long long off = 0;
  for (int d = (int)lay.ndim - 1; d > 0; d--) {
    long long s = lay.shape[d];
    off += (i % s) * lay.strides[d];
    i /= s;
  }
  return off + i * lay.strides[0];
}

// How the threads of a block share out sums of k elements each (kernels/matvec.cu's rows,
// reduce.cu's outputs along an axis): block / shares sums, shares threads a sum.  With along,
// consecutive threads take consecutive elements of a sum; otherwise consecutive sums (shares
// at most 8, so that a warp stays on 32 sums).  The block sums elements [lo, hi) of each,
// range blockIdx.y of split_k elements.
struct gpu_sharing {
  int sums;                 // sums a block takes
  int sum;                  // the thread's among them
  int share;                // the thread's place among its sum's threads
  int partner;              // threads from one share of a sum to the next
  long long lo, hi;
};

__device__ __forceinline__ gpu_sharing gpu_share_out(int block, int shares, int along,
                                                     long long k, long long split_k) {
  const int t = threadIdx.x;
  gpu_sharing s;
  s.sums = block / shares;
  s.sum = along ? t / shares : t % s.sums;
  s.share = along ? t % shares : t / s.sums;
  s.partner = along ? 1 : s.sums;
  s.lo = (long long)blockIdx.y * split_k;
  s.hi = s.lo + split_k < k ? s.lo + split_k : k;
  return s;
}

// Combines the shares of each sum, values[threadIdx.x] each thread's, in halves with op;
// the first share's element then holds the sum.  Every thread of the block calls it.  (A
// later store to values by each thread to its own element needs no barrier: after the last
// one here no thread reads an element but its owner's.)
template <class T, class Op>
__device__ __forceinline__ void gpu_combine_shares(T *values, const gpu_sharing &s, int shares,
                                                   Op op) {
  const int t = threadIdx.x;
  __syncthreads();
  for (int half = shares / 2; half > 0; half /= 2) {
    if (s.share < half) values[t] = op(values[t], values[t + half * s.partner]);
    __syncthreads();
  }
}

__device__ __forceinline__ float gpu_half_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ unsigned short gpu_float_to_half(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__device__ __forceinline__ float gpu_bf16_to_float(unsigned short h) {
  return __uint_as_float((unsigned)h << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ unsigned short gpu_float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

// Elementwise kernels compute float16 and bfloat16 values in float; each operation that
// yields one rounds its result to the 16-bit type, as NumPy does.
__device__ __forceinline__ float lg_round_half(float x) { return gpu_half_to_float(gpu_float_to_half(x)); }
__device__ __forceinline__ float lg_round_bf16(float x) { return gpu_bf16_to_float(gpu_float_to_bf16(x)); }

// A double to float rounded to odd: toward zero, the last bit set where that was inexact.
// Rounding that float to 16 bits then rounds the double itself (a float has more than two
// bits beyond a half's or a bfloat16's), where rounding to nearest twice can be off by one
// unit: float64 to float16 as NumPy and the host's conversion do it.
__device__ __forceinline__ float lg_float_round_odd(double x) {
  float f = __double2float_rz(x);
  if ((double)f != x && x == x) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
__device__ __forceinline__ float lg_round_half(double x) { return lg_round_half(lg_float_round_odd(x)); }
__device__ __forceinline__ float lg_round_bf16(double x) { return lg_round_bf16(lg_float_round_odd(x)); }

// The 16 bits of any value stored into a float16 or bfloat16 element, which is how generated
// kernels store an expression of whatever type: a double rounds once, as above, the rest
// through float (exact for every value a half or a bfloat16 can hold apart from overflow).
template <typename T> __device__ __forceinline__ unsigned short gpu_store_half(T x) { return gpu_float_to_half((float)x); }
__device__ __forceinline__ unsigned short gpu_store_half(double x) { return gpu_float_to_half(lg_float_round_odd(x)); }
template <typename T> __device__ __forceinline__ unsigned short gpu_store_bf16(T x) { return gpu_float_to_bf16((float)x); }
__device__ __forceinline__ unsigned short gpu_store_bf16(double x) { return gpu_float_to_bf16(lg_float_round_odd(x)); }

// complex64 and complex128: two floats or doubles, real part first, laid out and aligned as
// CUDA's cuFloatComplex and cuDoubleComplex (float2, double2 aligned to 8), so no CUDA
// header is needed.  Generated kernels compute with them through these operators; the
// constructors take any real value (the imaginary part 0) and the other complex type.
struct lg_complex128;

struct __align__(8) lg_complex64 {
  float re, im;
  lg_complex64() = default;          // trivial: __shared__ arrays of it are allowed
  __device__ lg_complex64(float r, float i) : re(r), im(i) {}
  template <class T> __device__ lg_complex64(T x) : re((float)x), im(0.0f) {}
  __device__ inline lg_complex64(const lg_complex128 &z);
};

struct __align__(8) lg_complex128 {
  double re, im;
  lg_complex128() = default;
  __device__ lg_complex128(double r, double i) : re(r), im(i) {}
  template <class T> __device__ lg_complex128(T x) : re((double)x), im(0.0) {}
  __device__ lg_complex128(const lg_complex64 &z) : re(z.re), im(z.im) {}
};

__device__ inline lg_complex64::lg_complex64(const lg_complex128 &z) : re((float)z.re), im((float)z.im) {}

// Each operation once per type: C the complex type, R its real one, F the suffix of R's
// math functions (f for float).
#define LG_COMPLEX_OPERATIONS(C, R, F)                                                      \
__device__ __forceinline__ C operator+(C a, C b) { return C(a.re + b.re, a.im + b.im); }   \
__device__ __forceinline__ C operator-(C a, C b) { return C(a.re - b.re, a.im - b.im); }   \
__device__ __forceinline__ C operator-(C a) { return C(-a.re, -a.im); }                    \
__device__ __forceinline__ C operator*(C a, C b) {                                         \
  return C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);                          \
}                                                                                          \
/* Smith's division, as NumPy's: no overflow in the denominator's square */                \
__device__ inline C operator/(C a, C b) {                                                  \
  if (fabs##F(b.re) >= fabs##F(b.im)) {                                                    \
    R r = b.im / b.re, d = b.re + b.im * r;                                                \
    return C((a.re + a.im * r) / d, (a.im - a.re * r) / d);                                \
  }                                                                                        \
  R r = b.re / b.im, d = b.re * r + b.im;                                                  \
  return C((a.re * r + a.im) / d, (a.im * r - a.re) / d);                                  \
}                                                                                          \
__device__ __forceinline__ bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; } \
__device__ __forceinline__ bool operator!=(C a, C b) { return !(a == b); }                 \
__device__ __forceinline__ R lg_real(C a) { return a.re; }                                 \
__device__ __forceinline__ R lg_imag(C a) { return a.im; }                                 \
__device__ __forceinline__ C lg_conj(C a) { return C(a.re, -a.im); }                       \
__device__ __forceinline__ bool lg_nonzero(C a) { return a.re != 0 || a.im != 0; }         \
__device__ __forceinline__ R lg_abs(C a) { return hypot##F(a.re, a.im); }                  \
__device__ __forceinline__ bool lg_isnan(C a) { return a.re != a.re || a.im != a.im; }     \
__device__ __forceinline__ bool lg_isinf(C a) {   /* an infinite part, even beside a NaN */   \
  return (a.re == a.re && a.re - a.re != 0) || (a.im == a.im && a.im - a.im != 0);         \
}                                                                                          \
__device__ __forceinline__ bool lg_isfinite(C a) { return a.re - a.re == 0 && a.im - a.im == 0; } \
/* NumPy 2's sign of a complex number: z / |z|, 0 for 0, and for one infinite part the */ \
/* unit along it (two give NaN, as inf / inf does) */                                     \
__device__ inline C lg_sign(C a) {                                                         \
  const bool re_inf = a.re == a.re && a.re - a.re != 0;                                    \
  const bool im_inf = a.im == a.im && a.im - a.im != 0;                                    \
  if (re_inf != im_inf) return re_inf ? C(a.re > 0 ? 1 : -1, 0) : C(0, a.im > 0 ? 1 : -1); \
  R m = lg_abs(a);                                                                         \
  return m == 0 ? C(0, 0) : C(a.re / m, a.im / m);                                         \
}                                                                                          \
__device__ inline C lg_exp(C a) {                                                          \
  R m = exp##F(a.re);                                                                      \
  return C(m * cos##F(a.im), m * sin##F(a.im));                                            \
}                                                                                          \
__device__ inline C lg_log(C a) { return C(log##F(lg_abs(a)), atan2##F(a.im, a.re)); }     \
__device__ inline C lg_log10(C a) {                                                        \
  C l = lg_log(a);                                                                         \
  const R ln10 = (R)2.302585092994045684;                                                  \
  return C(l.re / ln10, l.im / ln10);                                                      \
}                                                                                          \
/* the principal root, computed without cancellation */                                   \
__device__ inline C lg_sqrt(C a) {                                                         \
  if (a.re == 0 && a.im == 0) return C(0, a.im);                                           \
  R t = sqrt##F((fabs##F(a.re) + lg_abs(a)) / 2);                                          \
  if (a.re >= 0) return C(t, a.im / (2 * t));                                              \
  return C(fabs##F(a.im) / (2 * t), copysign##F(t, a.im));                                 \
}                                                                                          \
__device__ inline C lg_sin(C a) {                                                          \
  return C(sin##F(a.re) * cosh##F(a.im), cos##F(a.re) * sinh##F(a.im));                    \
}                                                                                          \
__device__ inline C lg_cos(C a) {                                                          \
  return C(cos##F(a.re) * cosh##F(a.im), -sin##F(a.re) * sinh##F(a.im));                   \
}                                                                                          \
__device__ inline C lg_tan(C a) { return lg_sin(a) / lg_cos(a); }                          \
__device__ inline C lg_sinh(C a) {                                                         \
  return C(sinh##F(a.re) * cos##F(a.im), cosh##F(a.re) * sin##F(a.im));                    \
}                                                                                          \
__device__ inline C lg_cosh(C a) {                                                         \
  return C(cosh##F(a.re) * cos##F(a.im), sinh##F(a.re) * sin##F(a.im));                    \
}                                                                                          \
__device__ inline C lg_tanh(C a) { return lg_sinh(a) / lg_cosh(a); }                       \
/* NumPy's: whole exponents up to 100 by repeated squaring (exact where the parts are), */ \
/* others through exp and log; 0 to any power but 0 is 0 */                                \
__device__ inline C lg_pow(C a, C b) {                                                     \
  if (b.im == 0 && b.re == floor##F(b.re) && fabs##F(b.re) <= 100) {                       \
    int n = (int)fabs##F(b.re);                                                            \
    C result(1, 0), base = a;                                                              \
    for (; n > 0; n >>= 1) {                                                               \
      if (n & 1) result = result * base;                                                   \
      base = base * base;                                                                  \
    }                                                                                      \
    return b.re < 0 ? C(1, 0) / result : result;                                           \
  }                                                                                        \
  if (a.re == 0 && a.im == 0) return C(0, 0);                                              \
  return lg_exp(b * lg_log(a));                                                            \
}

LG_COMPLEX_OPERATIONS(lg_complex64, float, f)
LG_COMPLEX_OPERATIONS(lg_complex128, double, )
#undef LG_COMPLEX_OPERATIONS

// A warp shuffle of a sum or accumulator: built-in for scalars, part by part for complex ones.
template <class T>
__device__ __forceinline__ T gpu_shfl_down(T v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ lg_complex64 gpu_shfl_down(lg_complex64 v, int delta) {
  return lg_complex64(gpu_shfl_down(v.re, delta), gpu_shfl_down(v.im, delta));
}
__device__ __forceinline__ lg_complex128 gpu_shfl_down(lg_complex128 v, int delta) {
  return lg_complex128(gpu_shfl_down(v.re, delta), gpu_shfl_down(v.im, delta));
}
