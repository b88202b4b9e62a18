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
// The integer in [0, range) from 32-bit word q of block j, r being that block's first attempt.
__device__ __forceinline__ unsigned long long gpu_bounded32(uint4 r, long long j, int q,
                                                            unsigned k0, unsigned k1,
                                                            unsigned long long base,
                                                            unsigned long long range,
                                                            unsigned threshold) {
  unsigned long long m = (unsigned long long)gpu_word(r, q) * range;   // range <= 2^32: exact
  for (unsigned attempt = 1; (unsigned)m < threshold; attempt++)
    m = (unsigned long long)gpu_word(gpu_block_bits(base, j, attempt, k0, k1), q) * range;
  return m >> 32;
}

// The same from 64-bit word q (range not 0).
__device__ __forceinline__ unsigned long long gpu_bounded64(uint4 r, long long j, int q,
                                                            unsigned k0, unsigned k1,
                                                            unsigned long long base,
                                                            unsigned long long range,
                                                            unsigned long long threshold) {
  unsigned long long x = gpu_word64(r, q);
  for (unsigned attempt = 1; x * range < threshold; attempt++)
    x = gpu_word64(gpu_block_bits(base, j, attempt, k0, k1), q);
  return __umul64hi(x, range);
}

template <typename T>
__device__ __forceinline__ void gpu_randint_words(T *out, long long n, unsigned k0, unsigned k1,
                                                  unsigned long long base, unsigned long long low,
                                                  unsigned long long range, unsigned threshold) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    const uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      if (4 * j + q < n)
        out[4 * j + q] = (T)(low + gpu_bounded32(r, j, q, k0, k1, base, range, threshold));
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
        const unsigned long long x =
            range != 0 ? gpu_bounded64(r, j, q, k0, k1, base, range, threshold) : gpu_word64(r, q);
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

// choice's sample of count from a large range without replacement: the first count distinct
// values among m i.i.d. draws (randint's), in the order drawn, which is drawing one value at
// a time and drawing again on a repeat: every ordered sample equally likely, in work that
// grows with the sample rather than the range.  Each draw's place goes into a hash table of
// the values (open addressing over 2^bits slots, each the least 0-based place that drew its
// value: the value is that place's draw, so a slot is 32 bits whatever the values' width);
// a place is first if its value's slot holds it, and the firsts' running count, up to count,
// is where each goes in the sample.  m < 2^32 - 1.
#define GPU_SAMPLE_EMPTY 0xFFFFFFFFu

// randint(0, range)'s element e from counter block base: the integer that gpu_randint_8
// (wide 0: range up to 2^32) or gpu_randint_wide (wide 1; range not 0 here) writes at e.
__device__ __forceinline__ unsigned long long gpu_sample_value(long long e, unsigned k0,
                                                               unsigned k1,
                                                               unsigned long long base,
                                                               unsigned long long range,
                                                               unsigned long long threshold,
                                                               int wide) {
  const long long j = wide ? e >> 1 : e >> 2;
  const uint4 r = gpu_block_bits(base, j, 0u, k0, k1);
  if (wide) return gpu_bounded64(r, j, (int)(e & 1), k0, k1, base, range, threshold);
  return gpu_bounded32(r, j, (int)(e & 3), k0, k1, base, range, (unsigned)threshold);
}

#define GPU_SAMPLE_DRAW(e) gpu_sample_value((e), k0, k1, base, range, threshold, wide)

// The home slot of v: the top bits of its product with 2^64 / phi (Fibonacci hashing), so
// that values from a range shorter than the table still spread over all of it.
__device__ __forceinline__ unsigned gpu_sample_slot(unsigned long long v, int bits) {
  return (unsigned)((v * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

// Puts place e, whose draw is v, in the table; value_of(p) is place p's draw.
template <typename ValueOf>
__device__ __forceinline__ void gpu_sample_insert_place(unsigned *slots, int bits, unsigned e,
                                                        unsigned long long v, ValueOf value_of) {
  const unsigned mask = (1u << bits) - 1;
  for (unsigned h = gpu_sample_slot(v, bits);; h = (h + 1) & mask) {
    const unsigned seen = atomicCAS(&slots[h], GPU_SAMPLE_EMPTY, e);
    if (seen == GPU_SAMPLE_EMPTY) return;
    if (value_of(seen) == v) {                 // every place in a slot drew the same value
      if (seen > e) atomicMin(&slots[h], e);
      return;
    }
  }
}

// Whether place e (draw v) is the first to draw v: the slot of v holds it.  Its value is in
// the table, so the probe ends.
template <typename ValueOf>
__device__ __forceinline__ bool gpu_sample_is_first(const unsigned *slots, int bits, unsigned e,
                                                    unsigned long long v, ValueOf value_of) {
  const unsigned mask = (1u << bits) - 1;
  unsigned h = gpu_sample_slot(v, bits);
  while (value_of(slots[h]) != v) h = (h + 1) & mask;
  return slots[h] == e;
}

// The block's running count of mine before this thread (threads in order), and in *all the
// block's total; sums has a word a warp.  Every thread calls it.
__device__ __forceinline__ unsigned gpu_sample_block_rank(unsigned mine, unsigned *sums,
                                                          unsigned *all) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  unsigned upto = mine;                          // inclusive, within the warp
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned before = __shfl_up_sync(0xFFFFFFFFu, upto, o);
    if (lane >= o) upto += before;
  }
  if (lane == 31) sums[warp] = upto;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < warps ? sums[lane] : 0u;
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned before = __shfl_up_sync(0xFFFFFFFFu, w, o);
      if (lane >= o) w += before;
    }
    if (lane < warps) sums[lane] = w;
  }
  __syncthreads();
  *all = sums[warps - 1];
  return upto - mine + (warp > 0 ? sums[warp - 1] : 0u);
}

// The whole sample in one block of 1024 threads for up to 2048 draws (places 2t and 2t + 1
// thread t's), the draws and their table in shared memory; *total is the number of firsts,
// so the sample is whole if that is count or more.
#define GPU_SAMPLE_SMALL_DRAWS 2048
#define GPU_SAMPLE_SMALL_BITS 12               // 4096 slots: at most half of them taken
extern "C" __global__ void __launch_bounds__(1024)
gpu_sample_small(long long *places, long long *total, long long count, long long m, unsigned k0,
                 unsigned k1, unsigned long long base, unsigned long long range,
                 unsigned long long threshold, int wide) {
  __shared__ unsigned long long values[GPU_SAMPLE_SMALL_DRAWS];
  __shared__ unsigned slots[1 << GPU_SAMPLE_SMALL_BITS];
  __shared__ unsigned sums[32];
  const int t = threadIdx.x;
  const auto value_of = [&](unsigned p) { return values[p]; };
  for (int s = t; s < 1 << GPU_SAMPLE_SMALL_BITS; s += blockDim.x) slots[s] = GPU_SAMPLE_EMPTY;
  for (int e = 2 * t; e < 2 * t + 2 && e < m; e++) values[e] = GPU_SAMPLE_DRAW(e);
  __syncthreads();
  for (int e = 2 * t; e < 2 * t + 2 && e < m; e++)
    gpu_sample_insert_place(slots, GPU_SAMPLE_SMALL_BITS, e, values[e], value_of);
  __syncthreads();
  unsigned firsts = 0;                           // bit k: place 2t + k is first
  for (int e = 2 * t; e < 2 * t + 2 && e < m; e++) {
    const bool first = gpu_sample_is_first(slots, GPU_SAMPLE_SMALL_BITS, e, values[e], value_of);
    firsts |= (unsigned)first << (e - 2 * t);
  }
  unsigned all;
  long long rank = gpu_sample_block_rank(__popc(firsts), sums, &all);
  for (int k = 0; k < 2; k++) {
    if (!(firsts >> k & 1)) continue;
    if (rank < count) places[rank] = (long long)values[2 * t + k] + 1;
    rank++;
  }
  if (t == 0) *total = all;
}

// Larger samples: gpu_sample_insert puts every place in the table (slots) and writes the
// draws (values); then gpu_sample_take, a tile of 4096 places a block of 1024 threads (4 in a
// row each: the probes wait on memory, so the more threads the better), finds the firsts and
// their running count: each tile's count of firsts added to those of the tiles before it by
// a decoupled look-back over a status word a tile (after the slots), then a counter that
// hands out the tiles in order (so every tile looked back at has a block).  A status word is
// all ones until the tile publishes its own count (bit 62) or its inclusive count (bit 63);
// status and slots start all ones, so one fill prepares both.
#define GPU_SAMPLE_TILE 4096
#define GPU_SAMPLE_PER_THREAD 4
#define GPU_SAMPLE_OWN (1ull << 62)
#define GPU_SAMPLE_INCLUSIVE (1ull << 63)
#define GPU_SAMPLE_NOT_READY 0xFFFFFFFFFFFFFFFFull

extern "C" __global__ void gpu_sample_insert(unsigned *slots, int bits, unsigned long long *values,
                                             long long m, unsigned k0, unsigned k1,
                                             unsigned long long base, unsigned long long range,
                                             unsigned long long threshold, int wide) {
  const auto value_of = [&](unsigned p) { return GPU_SAMPLE_DRAW(p); };
  GPU_GRID_STRIDE(e, m) {
    const unsigned long long v = GPU_SAMPLE_DRAW(e);
    values[e] = v;
    gpu_sample_insert_place(slots, bits, (unsigned)e, v, value_of);
  }
}

extern "C" __global__ void __launch_bounds__(1024)
gpu_sample_take(long long *places, long long *total, long long count, unsigned *slots, int bits,
                const unsigned long long *values, long long m) {
  unsigned long long *status = (unsigned long long *)(slots + (1u << bits));
  const long long tiles = (m + GPU_SAMPLE_TILE - 1) / GPU_SAMPLE_TILE;
  const unsigned mask = (1u << bits) - 1;
  __shared__ unsigned sums[32];
  __shared__ long long tile_of_block, before_tile;
  const int t = threadIdx.x, lane = t & 31;
  if (t == 0) tile_of_block = (long long)(atomicAdd(&status[tiles], 1ull) + 1);   // from all ones
  __syncthreads();
  const int per = GPU_SAMPLE_PER_THREAD;
  const long long tile = tile_of_block, start = tile * GPU_SAMPLE_TILE + per * t;
  const int here = (int)min((long long)per, max(0ll, m - start));
  // the firsts among this thread's places: each one's home slot read at once (their loads in
  // flight together rather than one probe after another), then the rare longer probes
  unsigned long long v[GPU_SAMPLE_PER_THREAD];
  unsigned h[GPU_SAMPLE_PER_THREAD], at[GPU_SAMPLE_PER_THREAD], firsts = 0;
#pragma unroll
  for (int k = 0; k < per; k++) if (k < here) v[k] = values[start + k];
#pragma unroll
  for (int k = 0; k < per; k++) if (k < here) at[k] = slots[h[k] = gpu_sample_slot(v[k], bits)];
#pragma unroll
  for (int k = 0; k < per; k++) {
    if (k >= here) continue;
    while (values[at[k]] != v[k]) at[k] = slots[h[k] = (h[k] + 1) & mask];
    firsts |= (unsigned)(at[k] == (unsigned)(start + k)) << k;
  }
  unsigned in_tile;
  const unsigned rank_in_tile = gpu_sample_block_rank(__popc(firsts), sums, &in_tile);
  if (t < 32) {                                  // the look-back, 32 tiles a step
    volatile unsigned long long *word = status;
    unsigned long long before = 0;
    if (tile > 0) {
      if (t == 0) word[tile] = GPU_SAMPLE_OWN | in_tile;
      for (long long p = tile - 1;; p -= 32) {
        const long long q = p - lane;
        unsigned long long w = q >= 0 ? word[q] : GPU_SAMPLE_INCLUSIVE;   // before tile 0: none
        while (__any_sync(0xFFFFFFFFu, w == GPU_SAMPLE_NOT_READY)) {
          if (w == GPU_SAMPLE_NOT_READY) w = word[q];
        }
        const unsigned inclusive = __ballot_sync(0xFFFFFFFFu, (w & GPU_SAMPLE_INCLUSIVE) != 0);
        const int nearest = inclusive ? __ffs(inclusive) - 1 : 31;
        unsigned long long sum = lane <= nearest ? w & (GPU_SAMPLE_OWN - 1) : 0;
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        before += sum;
        if (inclusive) break;
      }
    }
    if (t == 0) {
      word[tile] = GPU_SAMPLE_INCLUSIVE | (before + in_tile);
      before_tile = (long long)before;
      if (tile == tiles - 1) *total = (long long)(before + in_tile);
    }
  }
  __syncthreads();
  long long rank = before_tile + rank_in_tile;
#pragma unroll
  for (int k = 0; k < per; k++) {
    if (!(firsts >> k & 1)) continue;
    if (rank < count) places[rank] = (long long)v[k] + 1;
    rank++;
  }
}
