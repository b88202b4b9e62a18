// elementwise.cu: device helpers of the generated elementwise kernels (lua/gpu/elementwise.lua
// puts this in front of every kernel it generates).  NumPy semantics where C's differ:
// floor division and modulo round toward minus infinity, integer division by zero gives 0,
// shifts by the width or more give 0 (or -1 for negative values shifted right), integer
// powers wrap, maximum/minimum propagate NaN.  Signed arithmetic goes through unsigned
// types so that overflow wraps instead of being undefined.  No extern "C" here: the helpers
// are overloaded per type; the generated kernels declare themselves extern "C".

#define LG_SIGNED(T, U)                                                               \
  __device__ __forceinline__ T lg_floordiv(T a, T b) {                                \
    if (b == 0) return 0;                                                              \
    if (b == -1) return (T)((U)0 - (U)a);                                              \
    T q = a / b;                                                                       \
    if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;                                    \
    return q;                                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_mod(T a, T b) {                                      \
    if (b == 0 || b == -1) return 0;                                                   \
    T r = a % b;                                                                       \
    if (r != 0 && ((r < 0) != (b < 0))) r += b;                                        \
    return r;                                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_fmod(T a, T b) {                                     \
    if (b == 0 || b == -1) return 0;                                                   \
    return a % b;                                                                      \
  }                                                                                    \
  __device__ __forceinline__ T lg_pow(T a, T b) {                                      \
    if (b < 0) return a == 1 ? (T)1 : a == -1 ? (T)((b & 1) ? -1 : 1) : (T)0;           \
    unsigned long long r = 1, x = (unsigned long long)(long long)a;                    \
    unsigned long long e = (unsigned long long)b;                                      \
    while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }                                  \
    return (T)(U)r;                                                                    \
  }                                                                                    \
  __device__ __forceinline__ T lg_shl(T a, T b) {                                      \
    if (b < 0 || b >= (T)(8 * sizeof(T))) return 0;                                   \
    return (T)(U)((U)a << b);                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_shr(T a, T b) {                                      \
    if (b < 0 || b >= (T)(8 * sizeof(T))) return a < 0 ? (T)-1 : (T)0;                \
    return (T)(a >> b);                                                                \
  }                                                                                    \
  __device__ __forceinline__ T lg_abs(T a) { return a < 0 ? (T)((U)0 - (U)a) : a; }

#define LG_UNSIGNED(T)                                                                \
  __device__ __forceinline__ T lg_floordiv(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); } \
  __device__ __forceinline__ T lg_mod(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }      \
  __device__ __forceinline__ T lg_fmod(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }     \
  __device__ __forceinline__ T lg_pow(T a, T b) {                                      \
    unsigned long long r = 1, x = a, e = b;                                            \
    while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }                                  \
    return (T)r;                                                                       \
  }                                                                                    \
  __device__ __forceinline__ T lg_shl(T a, T b) {                                      \
    return b >= 8 * sizeof(T) ? (T)0 : (T)((unsigned long long)a << b);               \
  }                                                                                    \
  __device__ __forceinline__ T lg_shr(T a, T b) {                                      \
    return b >= 8 * sizeof(T) ? (T)0 : (T)(a >> b);                                    \
  }                                                                                    \
  __device__ __forceinline__ T lg_abs(T a) { return a; }

// NumPy's divmod for floats: the quotient is floored, the remainder takes the divisor's sign.
#define LG_FLOAT(T, FMOD, FLOOR, COPYSIGN, POW, FABS)                                 \
  __device__ __forceinline__ T lg_floordiv(T a, T b) {                                 \
    if (b == 0) return a / b;                                                          \
    T mod = FMOD(a, b);                                                                \
    T div = (a - mod) / b;                                                             \
    if (mod != 0) { if ((b < 0) != (mod < 0)) div -= 1; }                              \
    T q;                                                                               \
    if (div != 0) { q = FLOOR(div); if (div - q > (T)0.5) q += 1; }                   \
    else q = COPYSIGN((T)0, a / b);                                                    \
    return q;                                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_mod(T a, T b) {                                      \
    if (b == 0) return FMOD(a, b);                                                     \
    T mod = FMOD(a, b);                                                                \
    if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }                              \
    else mod = COPYSIGN((T)0, b);                                                      \
    return mod;                                                                        \
  }                                                                                    \
  __device__ __forceinline__ T lg_fmod(T a, T b) { return FMOD(a, b); }                \
  __device__ __forceinline__ T lg_pow(T a, T b) { return POW(a, b); }                  \
  __device__ __forceinline__ T lg_abs(T a) { return FABS(a); }

LG_SIGNED(signed char, unsigned char)
LG_SIGNED(short, unsigned short)
LG_SIGNED(int, unsigned int)
LG_SIGNED(long long, unsigned long long)
LG_UNSIGNED(unsigned char)
LG_UNSIGNED(unsigned short)
LG_UNSIGNED(unsigned int)
LG_UNSIGNED(unsigned long long)
LG_FLOAT(float, fmodf, floorf, copysignf, powf, fabsf)
LG_FLOAT(double, fmod, floor, copysign, pow, fabs)

// PyCUDA's (and NumPy's) frexp, modf and ldexp as one value each, for kernels of one result.
// frexp of 0, inf and nan: the value itself and exponent 0, as NumPy gives (C leaves that
// exponent unspecified).  ldexp's exponent is clamped first: past +-10000 every float result
// is already 0 or inf, and C's int parameter would wrap.
#define LG_FREXP_MODF(T, FREXP, MODF, LDEXP)                                          \
  __device__ __forceinline__ T lg_frexp_mantissa(T x) { int e; return FREXP(x, &e); }  \
  __device__ __forceinline__ int lg_frexp_exponent(T x) {                              \
    int e = 0;                                                                         \
    if (x == x && x != 0 && x - x == 0) FREXP(x, &e);                                  \
    return e;                                                                          \
  }                                                                                    \
  __device__ __forceinline__ T lg_modf_fraction(T x) { T i; return MODF(x, &i); }      \
  __device__ __forceinline__ T lg_modf_integer(T x) { T i; MODF(x, &i); return i; }    \
  __device__ __forceinline__ T lg_ldexp(T x, long long e) {                            \
    return LDEXP(x, (int)(e < -10000 ? -10000 : e > 10000 ? 10000 : e));               \
  }

LG_FREXP_MODF(float, frexpf, modff, ldexpf)
LG_FREXP_MODF(double, frexp, modf, ldexp)

// maximum/minimum: a NaN on either side wins (a != a only for NaN; integers never);
// fmax/fmin: a NaN loses to a number.
#define LG_MINMAX(T)                                                                  \
  __device__ __forceinline__ T lg_max(T a, T b) { return (a > b || a != a) ? a : b; }  \
  __device__ __forceinline__ T lg_min(T a, T b) { return (a < b || a != a) ? a : b; }  \
  __device__ __forceinline__ T lg_fmax(T a, T b) { return (a > b || b != b) ? a : b; } \
  __device__ __forceinline__ T lg_fmin(T a, T b) { return (a < b || b != b) ? a : b; }

LG_MINMAX(bool)
LG_MINMAX(signed char)
LG_MINMAX(unsigned char)
LG_MINMAX(short)
LG_MINMAX(unsigned short)
LG_MINMAX(int)
LG_MINMAX(unsigned int)
LG_MINMAX(long long)
LG_MINMAX(unsigned long long)
LG_MINMAX(float)
LG_MINMAX(double)

// isnan, isinf, isfinite and sign; integers and bools are always finite.  The complex
// overloads are in common.cu.  x - x is 0 exactly for finite x (NaN for infinities and NaN).
// sign keeps a NaN and gives 0 for both zeros, as NumPy's.
template <class T> __device__ __forceinline__ bool lg_isnan(T) { return false; }
template <class T> __device__ __forceinline__ bool lg_isinf(T) { return false; }
template <class T> __device__ __forceinline__ bool lg_isfinite(T) { return true; }
template <class T> __device__ __forceinline__ T lg_sign(T x) { return (T)((x > (T)0) - (x < (T)0)); }
#define LG_FLOAT_CLASS(T)                                                             \
  __device__ __forceinline__ bool lg_isnan(T x) { return x != x; }                    \
  __device__ __forceinline__ bool lg_isinf(T x) { return x == x && x - x != 0; }      \
  __device__ __forceinline__ bool lg_isfinite(T x) { return x - x == 0; }             \
  __device__ __forceinline__ T lg_sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x; }

LG_FLOAT_CLASS(float)
LG_FLOAT_CLASS(double)

// astype from a float to an integer: truncation toward zero, NaN gives 0 and values beyond
// the target's range its nearest limit (saturation, as the GPU's cvt does).  C leaves those
// conversions undefined, so the compiler may not be trusted with them.
#define LG_FLOAT_TO_INT(NAME, T, LO, HI)                                              \
  __device__ __forceinline__ T NAME(float x) {                                         \
    return x != x ? (T)0 : x <= (float)(LO) ? (T)(LO) : x >= (float)(HI) ? (T)(HI) : (T)x; \
  }                                                                                    \
  __device__ __forceinline__ T NAME(double x) {                                        \
    return x != x ? (T)0 : x <= (double)(LO) ? (T)(LO) : x >= (double)(HI) ? (T)(HI) : (T)x; \
  }

LG_FLOAT_TO_INT(lg_to_int8, signed char, -128, 127)
LG_FLOAT_TO_INT(lg_to_int16, short, -32768, 32767)
LG_FLOAT_TO_INT(lg_to_int32, int, (-2147483647 - 1), 2147483647)
LG_FLOAT_TO_INT(lg_to_int64, long long, (-9223372036854775807LL - 1), 9223372036854775807LL)
LG_FLOAT_TO_INT(lg_to_uint8, unsigned char, 0, 255)
LG_FLOAT_TO_INT(lg_to_uint16, unsigned short, 0, 65535)
LG_FLOAT_TO_INT(lg_to_uint32, unsigned int, 0u, 4294967295u)
LG_FLOAT_TO_INT(lg_to_uint64, unsigned long long, 0ull, 18446744073709551615ull)
