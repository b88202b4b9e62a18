// random.cu: counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
//
// Counter block j of a call is (lo, hi of base + j, 0, 0) under the key (lo, hi of the seed);
// its four 32-bit words give four float32 values or two float64 values, written to
// out[per * j ...].  lua/gpu/random.lua holds a CPU twin of this for the specs.

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

__device__ __forceinline__ uint4 gpu_block_bits(unsigned long long base, long long j, unsigned k0, unsigned k1) {
  unsigned long long c = base + (unsigned long long)j;
  return gpu_philox(make_uint4((unsigned)c, (unsigned)(c >> 32), 0u, 0u), k0, k1);
}

#define GPU_GRID_STRIDE(j, blocks) \
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < (blocks); \
       j += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void gpu_rand_uniform_f32(float *out, long long n, unsigned k0, unsigned k1,
                                                unsigned long long base) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    uint4 r = gpu_block_bits(base, j, k0, k1);
    float v[4] = {gpu_u01f(r.x), gpu_u01f(r.y), gpu_u01f(r.z), gpu_u01f(r.w)};
    for (int q = 0; q < 4; q++) if (4 * j + q < n) out[4 * j + q] = v[q];
  }
}

extern "C" __global__ void gpu_rand_uniform_f64(double *out, long long n, unsigned k0, unsigned k1,
                                                unsigned long long base) {
  GPU_GRID_STRIDE(j, (n + 1) / 2) {
    uint4 r = gpu_block_bits(base, j, k0, k1);
    out[2 * j] = gpu_u01d(r.x, r.y);
    if (2 * j + 1 < n) out[2 * j + 1] = gpu_u01d(r.z, r.w);
  }
}

// Box-Muller: radius from the first uniform, angle from the second (sincospi keeps it exact).
extern "C" __global__ void gpu_rand_normal_f32(float *out, long long n, unsigned k0, unsigned k1,
                                               unsigned long long base) {
  GPU_GRID_STRIDE(j, (n + 3) / 4) {
    uint4 r = gpu_block_bits(base, j, k0, k1);
    float v[4], s, c;
    float radius = sqrtf(-2.0f * logf(gpu_u01f_open0(r.x)));
    sincospif(2.0f * gpu_u01f(r.y), &s, &c);
    v[0] = radius * c;
    v[1] = radius * s;
    radius = sqrtf(-2.0f * logf(gpu_u01f_open0(r.z)));
    sincospif(2.0f * gpu_u01f(r.w), &s, &c);
    v[2] = radius * c;
    v[3] = radius * s;
    for (int q = 0; q < 4; q++) if (4 * j + q < n) out[4 * j + q] = v[q];
  }
}

extern "C" __global__ void gpu_rand_normal_f64(double *out, long long n, unsigned k0, unsigned k1,
                                               unsigned long long base) {
  GPU_GRID_STRIDE(j, (n + 1) / 2) {
    uint4 r = gpu_block_bits(base, j, k0, k1);
    double s, c;
    double radius = sqrt(-2.0 * log(gpu_u01d_open0(r.x, r.y)));
    sincospi(2.0 * gpu_u01d(r.z, r.w), &s, &c);
    out[2 * j] = radius * c;
    if (2 * j + 1 < n) out[2 * j + 1] = radius * s;
  }
}
