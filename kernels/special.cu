// special.cu: device helpers of gpu.cumath's special functions that CUDA's math library lacks
// (lua/gpu/elementwise.lua puts this after elementwise.cu in front of every elementwise
// kernel): SciPy's digamma, expit and logit, NumPy's sinc, deg2rad, rad2deg, logaddexp,
// logaddexp2, heaviside, gcd, lcm and bitwise_count, and nextafter on 16-bit floats.  Each
// is overloaded for float and double (float16 and bfloat16 values arrive as floats), or a
// template over the integer types; special values are NumPy's and SciPy's.

// digamma (SciPy's psi): NaN at the poles (0, -1, -2, ...) but for a zero, which gives the
// infinity of the side it stands on (-inf at +0, as x -> 0+); NaN at -inf.  Negative x
// reflect: psi(x) = psi(1 - x) - pi cot(pi x).  From 10 up the asymptotic series
// psi(x) = log x - 1/(2x) - sum B_2k / (2k x^2k) is exact to double precision; below, the
// recurrence psi(x) = psi(x + 1) - 1/x brings x into [1, 2) (one step up from below 1, the
// steps down as one fraction), where psi(x) = (x - x0) g(x), x0 its zero and g a polynomial
// in x - 3/2 (a Chebyshev fit of psi(x) / (x - x0) in 60-digit arithmetic, error 8e-17 with
// its coefficients rounded to doubles), so the relative error stays small at the zero too.
// Against 40-digit values: about 5e-16 relative at most for x in (0, 10) (one step and 22
// multiply-adds from [0, 1), where a recurrence up to 10 and a logarithm took ten steps).
__device__ inline double lg_digamma(double x) {
  const double pi = 3.141592653589793;
  if (x != x || x == 1.0 / 0.0) return x;
  if (x == 0) return copysign(1.0 / 0.0, -x);
  double result = 0;
  if (x < 0) {
    if (x == floor(x)) return 0.0 / 0.0;          // a pole, or -inf
    result = -pi * cospi(x) / sinpi(x);
    x = 1 - x;
  }
  if (x >= 10) {
    const double f = 1 / (x * x);
    // B_2k / 2k for k = 1..7: 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
    const double tail = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240
                        - f * (1.0 / 132 - f * (691.0 / 32760 - f * (1.0 / 12)))))));
    return result + log(x) - 0.5 / x - tail;
  }
  if (x < 1) {
    result -= 1 / x;
    x += 1;
  } else {
    // 1/(x - 1) + 1/(x - 2) + ... down to [1, 2) as num / den, built a term at a time
    double num = 0, den = 1;
    while (x >= 2) {
      x -= 1;
      num = num * x + den;
      den *= x;
    }
    result += num / den;
  }
  const double g[22] = {
    -0.00017312261802727394, 0.00025968482126430747, -0.00015148586836773365,
    0.0002272331660987376, -0.0004821990530566789, 0.0007233266279287554,
    -0.0010376374098418604, 0.0015566317474486838, -0.002345267632540769, 0.003519006401502276,
    -0.005279964873257405, 0.007926944646403797, -0.011908218001568644, 0.0179072524394512,
    -0.02697579675613825, 0.04076083381242074, -0.061922133273064534, 0.09498872445494122,
    -0.14840492305390884, 0.2405424842407742, -0.4236274212814605, 0.951055876031833};
  const double t = x - 1.5;
  double s = 0;
  for (int n = 0; n < 22; n++) s = s * t + g[n];
  // x0 = 1.4616321449683622 + 9.549995429965697e-17
  return result + ((x - 1.4616321449683622) - 9.549995429965697e-17) * s;
}
// float through double, as SciPy computes its float32 psi
__device__ inline float lg_digamma(float x) { return (float)lg_digamma((double)x); }

// expit (the logistic sigmoid) and logit, its inverse, as SciPy's: logit(0) = -inf,
// logit(1) = inf, NaN outside [0, 1].  Near 1/2, x / (1 - x) loses logit's relative
// precision, so there it is log1p(s) - log1p(-s) with s = 2x - 1 (exact).
__device__ __forceinline__ float lg_expit(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double lg_expit(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float lg_logit(float x) {
  if (x < 0.25f || x > 0.75f) return logf(x / (1.0f - x));
  const float s = 2.0f * (x - 0.5f);
  return log1pf(s) - log1pf(-s);
}
__device__ __forceinline__ double lg_logit(double x) {
  if (x < 0.25 || x > 0.75) return log(x / (1.0 - x));
  const double s = 2.0 * (x - 0.5);
  return log1p(s) - log1p(-s);
}

// NumPy's sinc, sin(pi x) / (pi x) with 1 at 0, and its degree conversions, computed as
// NumPy does them (so that results match its to the last bits where CUDA's sin does).
__device__ __forceinline__ float lg_sinc(float x) {
  if (x == 0) return 1.0f;
  const float y = 3.14159265358979323846f * x;
  return sinf(y) / y;
}
__device__ __forceinline__ double lg_sinc(double x) {
  if (x == 0) return 1.0;
  const double y = 3.14159265358979323846 * x;
  return sin(y) / y;
}
__device__ __forceinline__ float lg_deg2rad(float x) { return x * (float)(3.14159265358979323846 / 180); }
__device__ __forceinline__ double lg_deg2rad(double x) { return x * (3.14159265358979323846 / 180); }
__device__ __forceinline__ float lg_rad2deg(float x) { return x * (float)(180 / 3.14159265358979323846); }
__device__ __forceinline__ double lg_rad2deg(double x) { return x * (180 / 3.14159265358979323846); }

// NumPy's logaddexp, log(exp(x) + exp(y)), and logaddexp2, log2(2^x + 2^y), without
// overflow: the greater plus the log of 1 + the other's ratio to it.  Equal arguments (the
// infinities too) give x + log 2 (x + 1); a NaN gives NaN.
#define LG_LOGADDEXP(T, EXP, EXP2, LOG1P)                                             \
  __device__ __forceinline__ T lg_logaddexp(T x, T y) {                                \
    if (x == y) return x + (T)0.693147180559945309417;                                 \
    const T d = x - y;                                                                 \
    if (d > 0) return x + LOG1P(EXP(-d));                                              \
    if (d <= 0) return y + LOG1P(EXP(d));                                              \
    return d;                                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_logaddexp2(T x, T y) {                               \
    if (x == y) return x + 1;                                                          \
    const T d = x - y;                                                                 \
    if (d > 0) return x + (T)1.442695040888963407360 * LOG1P(EXP2(-d));                \
    if (d <= 0) return y + (T)1.442695040888963407360 * LOG1P(EXP2(d));                 \
    return d;                                                                          \
  }

LG_LOGADDEXP(float, expf, exp2f, log1pf)
LG_LOGADDEXP(double, exp, exp2, log1p)
#undef LG_LOGADDEXP

// NumPy's heaviside(x, h0): 0 for x < 0, h0 at 0, 1 for x > 0, NaN for NaN.
template <class T> __device__ __forceinline__ T lg_heaviside(T x, T h0) {
  return x != x ? x : x == 0 ? h0 : x < 0 ? (T)0 : (T)1;
}

// nextafter of 16-bit floats, which float's nextafter would step past: a float16 (or
// bfloat16) value as a float, moved one step of its own type toward y.  Stepping the bits
// of the magnitude works across zero, the subnormals, the largest value and infinity.
#define LG_NEXTAFTER16(NAME, TO_BITS, FROM_BITS)                                      \
  __device__ inline float NAME(float x, float y) {                                     \
    if (x != x || y != y) return x + y;                                                \
    if (x == y) return y;                                                              \
    unsigned short bits = TO_BITS(x);                                                  \
    if (x == 0) bits = (unsigned short)(y < 0 ? 0x8001u : 0x0001u);                    \
    else if ((x < y) == (x > 0)) bits++;                                               \
    else bits--;                                                                       \
    return FROM_BITS(bits);                                                            \
  }

LG_NEXTAFTER16(lg_nextafter_half, gpu_float_to_half, gpu_half_to_float)
LG_NEXTAFTER16(lg_nextafter_bf16, gpu_float_to_bf16, gpu_bf16_to_float)
#undef LG_NEXTAFTER16

// An integer's magnitude as an unsigned 64-bit value (the most negative value's too).
template <class T> __device__ __forceinline__ unsigned long long lg_magnitude(T a) {
  return a < 0 ? 0ull - (unsigned long long)a : (unsigned long long)a;
}

// NumPy's gcd and lcm: of the magnitudes, so never negative (but for the most negative
// value's, which wraps as NumPy's does); gcd(0, 0) = 0 and lcm(a, 0) = 0.  A lcm beyond the
// type wraps.
template <class T> __device__ inline T lg_gcd(T a, T b) {
  unsigned long long x = lg_magnitude(a), y = lg_magnitude(b);
  while (y != 0) { const unsigned long long r = x % y; x = y; y = r; }
  return (T)x;
}
template <class T> __device__ inline T lg_lcm(T a, T b) {
  if (a == 0 || b == 0) return (T)0;
  const unsigned long long x = lg_magnitude(a), y = lg_magnitude(b);
  return (T)(x / (unsigned long long)lg_gcd(x, y) * y);
}

// NumPy 2's bitwise_count: the 1 bits of the magnitude (bitwise_count(-1) is 1).
template <class T> __device__ __forceinline__ unsigned char lg_bitwise_count(T a) {
  return (unsigned char)__popcll(lg_magnitude(a));
}
