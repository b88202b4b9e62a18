// special.cu: device helpers of gpu.cumath's special functions that CUDA's math library lacks
// (lua/gpu/elementwise.lua puts this after elementwise.cu in front of every elementwise
// kernel): SciPy's digamma, expit and logit, NumPy's sinc, deg2rad, rad2deg, logaddexp,
// logaddexp2, heaviside, gcd, lcm and bitwise_count, and nextafter on 16-bit floats.  Each
// is overloaded for float and double (float16 and bfloat16 values arrive as floats), or a
// template over the integer types; special values are NumPy's and SciPy's.

// digamma (SciPy's psi): NaN at the poles (0, -1, -2, ...) but for a zero, which gives the
// infinity of the side it stands on (-inf at +0, as x -> 0+); NaN at -inf.  Near its positive
// zero x0 a Taylor series in x - x0 keeps the relative error small; elsewhere the recurrence
// psi(x) = psi(x + 1) - 1/x brings x to 10 or more, where the asymptotic series
// psi(x) = log x - 1/(2x) - sum B_2k / (2k x^2k) is exact to double precision.  Negative x
// reflect: psi(x) = psi(1 - x) - pi cot(pi x).
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
  // x0 = 1.4616321449683622 + 9.549995429965697e-17 and the series' coefficients
  // psi^(n)(x0) / n!, n = 18 down to 1
  const double h = (x - 1.4616321449683622) - 9.549995429965697e-17;
  if (fabs(h) < 0.1) {
    const double c[18] = {
      -0.0007380709389960052, 0.0010788252019162967, -0.0015769367714301972,
      0.002305126326734928, -0.003369801655439328, 0.004926781395729853,
      -0.007204534386356869, 0.010538791616612175, -0.01542476590494896,
      0.022597648232218104, -0.03316112647484736, 0.04880428816414311,
      -0.07219956125645471, 0.10782405069126237, -0.16394270544240652,
      0.258499760955651, -0.4427631689835921, 0.9676722454476212};
    double s = 0;
    for (int n = 0; n < 18; n++) s = s * h + c[n];
    return result + s * h;
  }
  // the recurrence's sum of 1/x + 1/(x + 1) + ... as one fraction num / den, built a term at
  // a time (every term positive): one division where a division a term took most of the time
  double num = 0, den = 1;
  while (x < 10) { num = num * x + den; den *= x; x += 1; }
  result -= num / den;
  const double f = 1 / (x * x);
  // B_2k / 2k for k = 1..7: 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
  const double tail = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240
                      - f * (1.0 / 132 - f * (691.0 / 32760 - f * (1.0 / 12)))))));
  return result + log(x) - 0.5 / x - tail;
}
// float through double: the recurrence's cancellation near x0 stays below float's precision
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
