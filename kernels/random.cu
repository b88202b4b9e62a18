// random.cu: counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
//
// Counter block j of a call is (lo, hi of base + j, attempt, 0) under the key (lo, hi of the
// seed); attempt is 0 but where randint replaces a rejected word (1, 2, ...).  A block's four
// 32-bit words give four float32 values or two float64 values, written to out[per * j ...],
// each as shift + scale * v; randint's kernels make four integers a block from the words, or
// two from 64-bit words.  Only permutation's ties (gpu_shuffle_ties, at the end) draw from
// blocks whose fourth word is 1.  lua/gpu/random.lua holds a CPU twin of all this for the specs.

#define GPU_PHILOX_M0 0xD2511F53u
#define GPU_PHILOX_M1 0xCD9E8D57u
#define GPU_PHILOX_W0 0x9E3779B9u
#define GPU_PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 gpu_philox(uint4 c, unsigned k0, unsigned k1) {
#pragma unroll
  for (int round = 0; round < 10; round++) {
    unsigned hi0 = __umulhi(GPU_PHILOX_M0, c.x), lo0 = GPU_PHILOX_M0 * c.x;
    unsigned hi1 = __umulhi(GPU_PHILOX_M1, c.z), lo1 = GPU_PHILOX_M1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    k0 += GPU_PHILOX_W0;
    k1 += GPU_PHILOX_W1;
  }
  return c;
}

// [0, 1) from the top 24 bits; (0, 1] when shifted by one step (for logarithms).
__device__ __forceinline__ float gpu_u01f(unsigned x) { return (float)(x >> 8) * 0x1p-24f; }
__device__ __forceinline__ float gpu_u01f_open0(unsigned x) { return (float)((x >> 8) + 1) * 0x1p-24f; }
// [0, 1) from 53 bits of two words; (0, 1] likewise.
__device__ __forceinline__ unsigned long long gpu_bits53(unsigned a, unsigned b) {
  return (((unsigned long long)a << 32) | b) >> 11;
}
__device__ __forceinline__ double gpu_u01d(unsigned a, unsigned b) { return (double)gpu_bits53(a, b) * 0x1p-53; }
__device__ __forceinline__ double gpu_u01d_open0(unsigned a, unsigned b) {
  return (double)(gpu_bits53(a, b) + 1) * 0x1p-53;
}

__device__ __forceinline__ uint4 gpu_block_bits(unsigned long long base, long long j, unsigned attempt,
                                                unsigned k0, unsigned k1) {
  unsigned long long c = base + (unsigned long long)j;
  return gpu_philox(make_uint4((unsigned)c, (unsigned)(c >> 32), attempt, 0u), k0, k1);
}

// Word q of a block, and 64-bit word q (words 2q and 2q + 1, the first one high).
__device__ __forceinline__ unsigned gpu_word(uint4 r, int q) {
  return q == 0 ? r.x : q == 1 ? r.y : q == 2 ? r.z : r.w;
}
__device__ __forceinline__ unsigned long long gpu_word64(uint4 r, int q) {
  return q == 0 ? ((unsigned long long)r.x << 32) | r.y : ((unsigned long long)r.z << 32) | r.w;
}

// shift + scale * v, each operation rounded on its own (no fused multiply-add), so that the
// Lua twin computes the same double.  rand and randn pass 0 and 1, which leave v as it is.
__device__ __forceinline__ double gpu_affine(double v, double shift, double scale) {
  return __dadd_rn(shift, __dmul_rn(scale, v));
}

#define GPU_GRID_STRIDE(j, blocks) \
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < (blocks); \
       j += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void gpu_rand_uniform_f32(float *out, long long n, unsigned k0, unsigned k1,
                                                unsigned long long base, double shift, double scale) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      if (4 * j + q < n) out[4 * j + q] = (float)gpu_affine(gpu_u01f(gpu_word(r, q)), shift, scale);
    }
  }
}

extern "C" __global__ void gpu_rand_uniform_f64(double *out, long long n, unsigned k0, unsigned k1,
                                                unsigned long long base, double shift, double scale) {
  GPU_GRID_STRIDE(j, (n + 1) / 2) {
    uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
    out[2 * j] = gpu_affine(gpu_u01d(r.x, r.y), shift, scale);
    if (2 * j + 1 < n) out[2 * j + 1] = gpu_affine(gpu_u01d(r.z, r.w), shift, scale);
  }
}

// Box-Muller: radius from the first uniform, angle from the second (sincospi keeps it exact).
extern "C" __global__ void gpu_rand_normal_f32(float *out, long long n, unsigned k0, unsigned k1,
                                               unsigned long long base, double shift, double scale) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
    float v[4], s, c;
    float radius = sqrtf(-2.0f * logf(gpu_u01f_open0(r.x)));
    sincospif(2.0f * gpu_u01f(r.y), &s, &c);
    v[0] = radius * c;
    v[1] = radius * s;
    radius = sqrtf(-2.0f * logf(gpu_u01f_open0(r.z)));
    sincospif(2.0f * gpu_u01f(r.w), &s, &c);
    v[2] = radius * c;
    v[3] = radius * s;
#pragma unroll
    for (int q = 0; q < 4; q++) {
      if (4 * j + q < n) out[4 * j + q] = (float)gpu_affine(v[q], shift, scale);
    }
  }
}

extern "C" __global__ void gpu_rand_normal_f64(double *out, long long n, unsigned k0, unsigned k1,
                                               unsigned long long base, double shift, double scale) {
  GPU_GRID_STRIDE(j, (n + 1) / 2) {
    uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
    double s, c;
    double radius = sqrt(-2.0 * log(gpu_u01d_open0(r.x, r.y)));
    sincospi(2.0 * gpu_u01d(r.z, r.w), &s, &c);
    out[2 * j] = gpu_affine(radius * c, shift, scale);
    if (2 * j + 1 < n) out[2 * j + 1] = gpu_affine(radius * s, shift, scale);
  }
}

// randint: out = low + x, x uniform in [0, range), by Lemire's multiply-and-reject ("Fast
// random integer generation in an interval", 2019).  A w-bit word x maps to the high half of
// x * range, and is rejected where the low half is below threshold = 2^w mod range: of the
// 2^w words, each of the range results then keeps exactly floor(2^w / range), so the integers
// are exactly uniform (no bias at all, for any range) as far as the words are.  A rejected
// word is replaced by the same word of the block's next attempt.  Less than half the words
// are ever rejected (threshold < range and threshold <= 2^w - range).
//
// Ranges up to 2^32 take 32-bit words, four integers a block, in kernels by element size
// (the bits of low + x, so signed and unsigned dtypes of a size share one); wider ranges of
// 8-byte integers take 64-bit words, two a block, and range 0 stands for all of 2^64.
template <typename T>
__device__ __forceinline__ void gpu_randint_words(T *out, long long n, unsigned k0, unsigned k1,
                                                  unsigned long long base, unsigned long long low,
                                                  unsigned long long range, unsigned threshold) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    const uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      if (4 * j + q < n) {
        unsigned long long m = (unsigned long long)gpu_word(r, q) * range;   // range <= 2^32: exact
        for (unsigned attempt = 1; (unsigned)m < threshold; attempt++) {
          m = (unsigned long long)gpu_word(gpu_block_bits(base, j, attempt, k0, k1), q) * range;
        }
        out[4 * j + q] = (T)(low + (m >> 32));
      }
    }
  }
}

extern "C" __global__ void gpu_randint_1(unsigned char *out, long long n, unsigned k0, unsigned k1,
                                         unsigned long long base, unsigned long long low,
                                         unsigned long long range, unsigned threshold) {
  gpu_randint_words(out, n, k0, k1, base, low, range, threshold);
}

extern "C" __global__ void gpu_randint_2(unsigned short *out, long long n, unsigned k0, unsigned k1,
                                         unsigned long long base, unsigned long long low,
                                         unsigned long long range, unsigned threshold) {
  gpu_randint_words(out, n, k0, k1, base, low, range, threshold);
}

extern "C" __global__ void gpu_randint_4(unsigned int *out, long long n, unsigned k0, unsigned k1,
                                         unsigned long long base, unsigned long long low,
                                         unsigned long long range, unsigned threshold) {
  gpu_randint_words(out, n, k0, k1, base, low, range, threshold);
}

extern "C" __global__ void gpu_randint_8(unsigned long long *out, long long n, unsigned k0, unsigned k1,
                                         unsigned long long base, unsigned long long low,
                                         unsigned long long range, unsigned threshold) {
  gpu_randint_words(out, n, k0, k1, base, low, range, threshold);
}

extern "C" __global__ void gpu_randint_wide(unsigned long long *out, long long n, unsigned k0, unsigned k1,
                                            unsigned long long base, unsigned long long low,
                                            unsigned long long range, unsigned long long threshold) {
  GPU_GRID_STRIDE(j, (n + 1) / 2) {
    const uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
#pragma unroll
    for (int q = 0; q < 2; q++) {
      if (2 * j + q < n) {
        unsigned long long x = gpu_word64(r, q);
        if (range != 0) {
          for (unsigned attempt = 1; x * range < threshold; attempt++) {
            x = gpu_word64(gpu_block_bits(base, j, attempt, k0, k1), q);
          }
          x = __umul64hi(x, range);
        }
        out[2 * j + q] = low + x;
      }
    }
  }
}

// permutation's ties: keys holds n sorted 32-bit random keys and places the 1-based places
// that sort them.  Each run of equal keys gets its places put in ascending order, then
// shuffled by Fisher-Yates, so every order of the whole is equally likely (as sorting by
// keys of unbounded precision would make it).  The run starting at 0-based position i draws
// its words from the blocks (lo, hi of first + i, b, 1) for b = 0, 1, ...: the fourth word
// 1 sets them apart from every other draw's blocks.  Each swap's place comes by Lemire's
// method as in randint, so exactly uniform.  Runs are rare and short (any two keys tie with
// probability 2^-32: about n^2 / 2^33 ties among n), so one thread a run does it all.
extern "C" __global__ void gpu_shuffle_ties(long long *places, const unsigned *keys, long long n,
                                            unsigned k0, unsigned k1, unsigned long long first) {
  GPU_GRID_STRIDE(i, n - 1) {
    if (keys[i] != keys[i + 1] || (i > 0 && keys[i - 1] == keys[i])) continue;
    long long end = i + 2;
    while (end < n && keys[end] == keys[i]) end++;
    for (long long a = i + 1; a < end; a++) {
      const long long place = places[a];
      long long b = a;
      for (; b > i && places[b - 1] > place; b--) places[b] = places[b - 1];
      places[b] = place;
    }
    const unsigned long long c = first + (unsigned long long)i;
    uint4 r = make_uint4(0u, 0u, 0u, 0u);
    unsigned block = 0;
    int q = 4;
    for (long long k = end - 1 - i; k >= 1; k--) {
      const unsigned range = (unsigned)(k + 1), threshold = (0u - range) % range;
      unsigned long long m;
      do {
        if (q == 4) {
          r = gpu_philox(make_uint4((unsigned)c, (unsigned)(c >> 32), block++, 1u), k0, k1);
          q = 0;
        }
        m = (unsigned long long)gpu_word(r, q++) * range;
      } while ((unsigned)m < threshold);
      const long long j = i + (long long)(m >> 32), swapped = places[i + k];
      places[i + k] = places[j];
      places[j] = swapped;
    }
  }
}
