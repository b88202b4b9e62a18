// random_distributions.cu: NumPy's distributions on Philox4x32-10 (appended to random.cu,
// whose gpu_philox and gpu_bits53 it uses; compiled with --fmad=false).
//
// Element (or row) e of a call owns the counter base + e, and draws from its own stream of
// uniform numbers: block k of the stream is Philox of (lo, hi of base + e, k, 0), whose four
// words give two 53-bit uniforms.  A rejection sampler just draws on along its stream, so
// each element is a pure function of (seed, counter) whatever the others did.  Everything is
// computed in double, one IEEE operation at a time (no fused multiply-add), and rounded to
// the output's type at the end: lua/gpu/random.lua's twin repeats it operation for operation,
// and differs only where log, exp, pow and the like differ by an ulp from the C library's.
//
// random.lua compiles this source in two forms.  With GPU_VARIATE_KIND defined (a kind of the
// enum below), it is that one distribution's: the variates kernels draw it with every sampler
// inlined, which took from 6% (poisson) to 62% (exponential) off a call on the H200 (the
// switch, and the calls through a frame in local memory).  Without it, it holds the rows'
// kernels (dirichlet, multinomial), where the stream's step and the larger samplers stay out
// of line: inlined at each of their uses (Philox's ten rounds every one) they made NVRTC take
// four times as long.
#ifdef GPU_VARIATE_KIND
#define GPU_SAMPLER __forceinline__
#else
#define GPU_SAMPLER __noinline__
#endif

struct gpu_stream {
  unsigned long long counter;
  unsigned k0, k1, block;
  bool half;                  // the block's second uniform is next
  uint4 r;
};

__device__ __forceinline__ gpu_stream gpu_stream_at(unsigned long long counter, unsigned k0, unsigned k1) {
  gpu_stream s;
  s.counter = counter;
  s.k0 = k0;
  s.k1 = k1;
  s.block = 0u;
  s.half = false;
  s.r = make_uint4(0u, 0u, 0u, 0u);
  return s;
}

__device__ GPU_SAMPLER unsigned long long gpu_next_bits53(gpu_stream &s) {
  if (s.half) {
    s.half = false;
    return gpu_bits53(s.r.z, s.r.w);
  }
  s.r = gpu_philox(make_uint4((unsigned)s.counter, (unsigned)(s.counter >> 32), s.block, 0u), s.k0, s.k1);
  s.block++;
  s.half = true;
  return gpu_bits53(s.r.x, s.r.y);
}

// Uniform in [0, 1), and in (0, 1) (the last bit set: for logarithms of u and of 1 - u).
__device__ double gpu_uniform(gpu_stream &s) { return (double)gpu_next_bits53(s) * 0x1p-53; }
__device__ double gpu_uniform_open(gpu_stream &s) { return (double)(gpu_next_bits53(s) | 1ull) * 0x1p-53; }

// Standard exponential by inversion; 1 - u is exact and in (0, 1].
__device__ double gpu_exponential(gpu_stream &s) { return -log(1.0 - gpu_uniform(s)); }

// Standard normal: Box-Muller's cosine half.
__device__ double gpu_normal(gpu_stream &s) {
  const double u1 = gpu_uniform(s), u2 = gpu_uniform(s);
  return sqrt(-2.0 * log(1.0 - u1)) * cospi(2.0 * u2);
}

// Standard gamma of shape a >= 1: Marsaglia and Tsang (2000), a normal and a uniform an attempt.
__device__ GPU_SAMPLER double gpu_gamma_large(double a, gpu_stream &s) {
  const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = gpu_normal(s);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = gpu_uniform(s);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

// Standard gamma of shape a >= 0; below 1 from shape a + 1 times u^(1/a).
__device__ double gpu_gamma(double a, gpu_stream &s) {
  if (a == 0.0) return 0.0;
  if (a >= 1.0) return gpu_gamma_large(a, s);
  const double g = gpu_gamma_large(a + 1.0, s);
  return g * pow(1.0 - gpu_uniform(s), 1.0 / a);
}

// The logarithm of a standard gamma of shape a > 0 (no underflow for small shapes).
__device__ double gpu_log_gamma_variate(double a, gpu_stream &s) {
  if (a >= 1.0) return log(gpu_gamma_large(a, s));
  const double g = gpu_gamma_large(a + 1.0, s);
  return log(g) + log(1.0 - gpu_uniform(s)) / a;
}

// log Gamma(x) - ((x - 1/2) log x - x + log sqrt(2 pi)) for whole x >= 1 (the samplers' k + 1,
// n - k + 1 and the like): Stirling's series from 10 up, below that its values (from 50-digit
// arithmetic; random.lua's twin has the same table).  The rejection tests below take
// differences of log Gamma through it, with the large terms cancelled by hand: log Gamma
// itself, near 3e13 at 1e12, would leave an ulp of 0.004 in a log-density.
#define GPU_LOG_SQRT_2PI 0.91893853320467274178
__constant__ double gpu_stirling_below_10[9] = {
  0.08106146679532726, 0.0413406959554093, 0.02767792568499834, 0.020790672103765093,
  0.016644691189821193, 0.013876128823070748, 0.01189670994589177, 0.010411265261972096,
  0.009255462182712733};
__device__ __forceinline__ double gpu_stirling_correction(double x) {
  if (x < 10.0) return gpu_stirling_below_10[(int)x - 1];
  const double r = 1.0 / x, r2 = r * r;
  return r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (1.0 / 1680.0
         - r2 * (1.0 / 1188.0 - r2 * (691.0 / 360360.0))))));
}

// (y + 1/2) log(y + 1) - (z + 1/2) log(z + 1), for whole y, z >= 0 whose difference is small.
__device__ double gpu_stirling_difference(double y, double z) {
  return (y + 0.5) * log1p((y - z) / (z + 1.0)) + (y - z) * log(z + 1.0);
}

// Poisson of mean lam >= 0: inversion by sequential search below 10, else Hormann's PTRS
// (transformed rejection with squeeze, 1993).  A whole number as a double.
__device__ GPU_SAMPLER double gpu_poisson(double lam, gpu_stream &s) {
  if (lam == 0.0) return 0.0;
  if (lam < 10.0) {
    const double u = gpu_uniform(s);
    double p = exp(-lam), total = p, k = 0.0;
    while (u > total) {
      k = k + 1.0;
      p = p * lam / k;
      if (total + p == total) break;       // the rest of the tail is below rounding
      total = total + p;
    }
    return k;
  }
  const double root = sqrt(lam);
  const double b = 0.931 + 2.53 * root, a = -0.059 + 0.02483 * b;
  const double inverse_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = gpu_uniform(s) - 0.5, v = gpu_uniform(s);
    const double us = 0.5 - fabs(u);
    const double k = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    // log(lam^k e^-lam / k!), its terms of size k log lam cancelled
    const double excess = k + 1.0 - lam;
    if (log(v) + log(inverse_alpha) - log(a / (us * us) + b) <=
        excess - k * log1p(excess / lam) - 0.5 * log(k + 1.0) - GPU_LOG_SQRT_2PI
        - gpu_stirling_correction(k + 1.0)) {
      return k;
    }
  }
}

// Binomial of n trials (a whole number) and chance p in [0, 1]: for p above 1/2 the failures
// of 1 - p; inversion where n p < 10, else Hormann's BTRS (1993).
__device__ GPU_SAMPLER double gpu_binomial(double n, double p, gpu_stream &s) {
  if (n == 0.0 || p == 0.0) return 0.0;
  if (p == 1.0) return n;
  const bool flip = p > 0.5;
  if (flip) p = 1.0 - p;
  const double q = 1.0 - p;
  double k = 0.0;
  if (n * p < 10.0) {
    const double u = gpu_uniform(s), ratio = p / q;
    double term = exp(n * log1p(-p)), total = term;   // q^n without q's rounding (tiny p)
    while (u > total && k < n) {
      k = k + 1.0;
      term = term * (ratio * (n - k + 1.0) / k);
      if (total + term == total) break;
      total = total + term;
    }
  } else {
    const double spq = sqrt(n * p * q);
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
    const double alpha = (2.83 + 5.1 / b) * spq, v_r = 0.92 - 4.2 / b;
    const double m = floor((n + 1.0) * p), log_odds = log(p / q);
    const double h = gpu_stirling_correction(m + 1.0) + gpu_stirling_correction(n - m + 1.0);
    for (;;) {
      const double u = gpu_uniform(s) - 0.5, v = gpu_uniform(s);
      const double us = 0.5 - fabs(u);
      k = floor((2.0 * a / us + b) * u + c);
      if (k < 0.0 || k > n) continue;
      if (us >= 0.07 && v <= v_r) break;
      // log of f(k) / f(m), f the binomial's probabilities: log m! (n - m)! / k! (n - k)! + ...
      if (log(v * alpha / (a / (us * us) + b)) <=
          gpu_stirling_difference(m, k) + gpu_stirling_difference(n - m, n - k) + h -
          gpu_stirling_correction(k + 1.0) - gpu_stirling_correction(n - k + 1.0) + (k - m) * log_odds) {
        break;
      }
    }
  }
  return flip ? n - k : k;
}

#ifdef GPU_VARIATE_KIND
// A whole number as an int64, the largest where it is beyond (a geometric of a tiny p).
__device__ __forceinline__ long long gpu_count(double k) {
  return k >= 0x1p63 ? 0x7fffffffffffffffll : (long long)k;
}

// The distributions of one value an element, by kind (random.lua's KIND), with up to two
// parameters.
enum {
  GPU_EXPONENTIAL, GPU_GAMMA, GPU_BETA, GPU_STANDARD_T, GPU_F, GPU_LOGNORMAL, GPU_LAPLACE,
  GPU_LOGISTIC, GPU_GUMBEL, GPU_WEIBULL, GPU_PARETO, GPU_RAYLEIGH, GPU_CAUCHY,
  GPU_POISSON, GPU_BINOMIAL, GPU_GEOMETRIC, GPU_NEGATIVE_BINOMIAL
};

// A value of kind `kind`; `if constexpr` leaves the other kinds' samplers out of the kernel
// and out of NVRTC's work.
template <int kind>
__device__ __forceinline__ double gpu_variate(double p1, double p2, gpu_stream &s) {
  if constexpr (kind == GPU_EXPONENTIAL) {                                      // scale
    return p1 * gpu_exponential(s);
  } else if constexpr (kind == GPU_GAMMA) {                                     // shape, scale
    return p2 * gpu_gamma(p1, s);
  } else if constexpr (kind == GPU_BETA) {                                      // a, b
    const double x = gpu_log_gamma_variate(p1, s), y = gpu_log_gamma_variate(p2, s);
    return 1.0 / (1.0 + exp(y - x));
  } else if constexpr (kind == GPU_STANDARD_T) {                                // df
    const double z = gpu_normal(s), g = gpu_gamma(0.5 * p1, s);
    return z * sqrt(0.5 * p1 / g);
  } else if constexpr (kind == GPU_F) {                                         // dfnum, dfden
    const double x = gpu_gamma(0.5 * p1, s), y = gpu_gamma(0.5 * p2, s);
    return (x * p2) / (y * p1);
  } else if constexpr (kind == GPU_LOGNORMAL) {                                 // mean, sigma
    return exp(p1 + p2 * gpu_normal(s));
  } else if constexpr (kind == GPU_LAPLACE) {                                   // loc, scale
    const double u = gpu_uniform_open(s);
    return u < 0.5 ? p1 + p2 * log(2.0 * u) : p1 - p2 * log(2.0 - 2.0 * u);
  } else if constexpr (kind == GPU_LOGISTIC) {                                  // loc, scale
    const double u = gpu_uniform_open(s);
    return p1 + p2 * log(u / (1.0 - u));
  } else if constexpr (kind == GPU_GUMBEL) {                                    // loc, scale
    return p1 - p2 * log(-log(gpu_uniform_open(s)));
  } else if constexpr (kind == GPU_WEIBULL) {                                   // a
    return p1 == 0.0 ? 0.0 : pow(gpu_exponential(s), 1.0 / p1);
  } else if constexpr (kind == GPU_PARETO) {                                    // a
    return expm1(gpu_exponential(s) / p1);
  } else if constexpr (kind == GPU_RAYLEIGH) {                                  // scale
    return p1 * sqrt(2.0 * gpu_exponential(s));
  } else if constexpr (kind == GPU_CAUCHY) {           // tan(pi (u - 1/2)) as a cotangent near 0
    const double u = gpu_uniform_open(s), t = u <= 0.5 ? u : 1.0 - u;
    const double cot = cospi(t) / sinpi(t);
    return u <= 0.5 ? -cot : cot;
  } else if constexpr (kind == GPU_POISSON) {                                   // lam
    return gpu_poisson(p1, s);
  } else if constexpr (kind == GPU_BINOMIAL) {                                  // n, p
    return gpu_binomial(p1, p2, s);
  } else if constexpr (kind == GPU_GEOMETRIC) {        // -1 / log(1 - p), computed by the host
    const double k = ceil(gpu_exponential(s) * p1);
    return k < 1.0 ? 1.0 : k;
  } else if constexpr (kind == GPU_NEGATIVE_BINOMIAL) {                         // n, p
    return gpu_poisson(gpu_gamma(p1, s) * ((1.0 - p2) / p2), s);
  } else {
    static_assert(kind != kind, "GPU_VARIATE_KIND names no distribution");
  }
}

template <typename T>
__device__ __forceinline__ void gpu_variates(T *out, long long n, unsigned k0, unsigned k1,
                                             unsigned long long base, double p1, double p2) {
  GPU_GRID_STRIDE(e, n) {
    gpu_stream s = gpu_stream_at(base + (unsigned long long)e, k0, k1);
    out[e] = (T)gpu_variate<GPU_VARIATE_KIND>(p1, p2, s);
  }
}

extern "C" __global__ void gpu_variates_f32(float *out, long long n, unsigned k0, unsigned k1,
                                            unsigned long long base, double p1, double p2) {
  gpu_variates(out, n, k0, k1, base, p1, p2);
}

extern "C" __global__ void gpu_variates_f64(double *out, long long n, unsigned k0, unsigned k1,
                                            unsigned long long base, double p1, double p2) {
  gpu_variates(out, n, k0, k1, base, p1, p2);
}

extern "C" __global__ void gpu_variates_i64(long long *out, long long n, unsigned k0, unsigned k1,
                                            unsigned long long base, double p1, double p2) {
  GPU_GRID_STRIDE(e, n) {
    gpu_stream s = gpu_stream_at(base + (unsigned long long)e, k0, k1);
    out[e] = gpu_count(gpu_variate<GPU_VARIATE_KIND>(p1, p2, s));
  }
}
#else

// Dirichlet: a row of k values, the gammas of alpha (all positive) over their sum, by their
// logarithms (small alphas underflow): a first pass finds the largest logarithm m and the sum
// of exp(log - m), a second draws the same gammas again from the row's stream's start.
template <typename T>
__device__ __forceinline__ void gpu_dirichlet(T *out, long long n, unsigned k0, unsigned k1,
                                              unsigned long long base, const double *alpha, long long k) {
  GPU_GRID_STRIDE(row, n / k) {
    const gpu_stream start = gpu_stream_at(base + (unsigned long long)row, k0, k1);
    gpu_stream s = start;
    double largest = -__longlong_as_double(0x7ff0000000000000ll), total = 0.0;   // -infinity
    for (long long j = 0; j < k; j++) {
      const double l = gpu_log_gamma_variate(alpha[j], s);
      if (l > largest) {
        total = total * exp(largest - l) + 1.0;
        largest = l;
      } else {
        total = total + exp(l - largest);
      }
    }
    s = start;
    for (long long j = 0; j < k; j++) {
      out[row * k + j] = (T)(exp(gpu_log_gamma_variate(alpha[j], s) - largest) / total);
    }
  }
}

extern "C" __global__ void gpu_dirichlet_f32(float *out, long long n, unsigned k0, unsigned k1,
                                             unsigned long long base, const double *alpha, long long k) {
  gpu_dirichlet(out, n, k0, k1, base, alpha, k);
}

extern "C" __global__ void gpu_dirichlet_f64(double *out, long long n, unsigned k0, unsigned k1,
                                             unsigned long long base, const double *alpha, long long k) {
  gpu_dirichlet(out, n, k0, k1, base, alpha, k);
}

// Multinomial: a row of k counts of `trials` trials, by conditional binomials: count j is a
// binomial of the trials left with chance pvals[j] over the probability left (NumPy's way);
// the last count takes the trials left over.
extern "C" __global__ void gpu_multinomial(long long *out, long long n, unsigned k0, unsigned k1,
                                           unsigned long long base, const double *pvals, long long k,
                                           double trials) {
  GPU_GRID_STRIDE(row, n / k) {
    gpu_stream s = gpu_stream_at(base + (unsigned long long)row, k0, k1);
    double left = trials, mass = 1.0;
    for (long long j = 0; j < k - 1; j++) {
      const double p = pvals[j];
      double x = 0.0;
      if (left > 0.0 && p > 0.0) x = p >= mass ? left : gpu_binomial(left, p / mass, s);
      out[row * k + j] = (long long)x;
      left = left - x;
      mass = mass - p;
    }
    out[row * k + k - 1] = (long long)left;
  }
}
#endif
