// Kernels shared by the benchmark's two sides: bench/raw.c compiles this file with NVRTC and
// launches it through the driver API, bench/run.lua through gpu.SourceModule.  Both wrap it
// in extern "C" { }, so the names are unmangled.  Sizes are long long: 2^28 elements and up.
// The reductions and the scan assume blockDim.x == BENCH_BLOCK.

#define BENCH_BLOCK 256
#define SCAN_ITEMS 16                       // elements per thread in the scan
#define SCAN_TILE (BENCH_BLOCK * SCAN_ITEMS)
#define BENCH_NEG_INF __int_as_float(0xff800000)

__global__ void empty_kernel() {}

// Counter-based uniform floats in [-1, 1): the same (seed, i) gives the same value.
__device__ unsigned bench_hash(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352dU;
  x ^= x >> 15; x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__global__ void fill_random(float *x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = bench_hash((unsigned)i ^ bench_hash(seed + (unsigned)(i >> 32)));
    x[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

// One element per thread: the plain hand-written vector add.
__global__ void add_f32(const float *a, const float *b, float *c, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale_f32(const float *x, float s, float *y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}

// 2*a + 3*b in one pass: the hand-fused reference for gpu.fuse.
__global__ void axpby_f32(const float *a, const float *b, float *c, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = 2.0f * a[i] + 3.0f * b[i];
}

__global__ void copy_f32(const float *x, float *y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

// A tiny kernel for the launch-by-launch vs graph comparison.
__global__ void bump_f32(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// ---------------------------------------------------------------- reductions
// Two passes: reduce_*_f32 leaves one partial per block (grid-stride, float4 loads), then
// finish_*_f32 (one block) reduces the partials into out[0].

__device__ float bench_block_reduce(float v, bool is_max) {
  __shared__ float warp_results[BENCH_BLOCK / 32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_down_sync(0xffffffffU, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) warp_results[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < BENCH_BLOCK / 32 ? warp_results[threadIdx.x] : (is_max ? BENCH_NEG_INF : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_down_sync(0xffffffffU, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
  }
  return v;   // valid in thread 0
}

__global__ void reduce_sum_f32(const float *x, float *partial, long long n) {
  long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  long long n4 = n / 4;
  const float4 *x4 = (const float4 *)x;
  float acc = 0.0f;
  for (long long i = tid; i < n4; i += stride) {
    float4 v = x4[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (long long i = n4 * 4 + tid; i < n; i += stride) acc += x[i];
  acc = bench_block_reduce(acc, false);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void reduce_max_f32(const float *x, float *partial, long long n) {
  long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  long long n4 = n / 4;
  const float4 *x4 = (const float4 *)x;
  float acc = BENCH_NEG_INF;
  for (long long i = tid; i < n4; i += stride) {
    float4 v = x4[i];
    acc = fmaxf(acc, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  for (long long i = n4 * 4 + tid; i < n; i += stride) acc = fmaxf(acc, x[i]);
  acc = bench_block_reduce(acc, true);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void reduce_dot_f32(const float *a, const float *b, float *partial, long long n) {
  long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  long long n4 = n / 4;
  const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
  float acc = 0.0f;
  for (long long i = tid; i < n4; i += stride) {
    float4 u = a4[i], v = b4[i];
    acc += (u.x * v.x + u.y * v.y) + (u.z * v.z + u.w * v.w);
  }
  for (long long i = n4 * 4 + tid; i < n; i += stride) acc += a[i] * b[i];
  acc = bench_block_reduce(acc, false);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void finish_sum_f32(const float *partial, float *out, int n) {
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  acc = bench_block_reduce(acc, false);
  if (threadIdx.x == 0) out[0] = acc;
}

__global__ void finish_max_f32(const float *partial, float *out, int n) {
  float acc = BENCH_NEG_INF;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc = fmaxf(acc, partial[i]);
  acc = bench_block_reduce(acc, true);
  if (threadIdx.x == 0) out[0] = acc;
}

// ---------------------------------------------------------------- inclusive scan (cumsum)
// Three passes over tiles of SCAN_TILE elements: tile sums; an exclusive scan of the tile
// sums (one block); each tile scanned and offset.  Reads the input twice, writes it once.

__global__ void scan_tile_sums_f32(const float *x, float *sums, long long n) {
  long long base = blockIdx.x * (long long)SCAN_TILE;
  float acc = 0.0f;
  for (int k = 0; k < SCAN_ITEMS; k++) {
    long long i = base + k * BENCH_BLOCK + threadIdx.x;
    if (i < n) acc += x[i];
  }
  acc = bench_block_reduce(acc, false);
  if (threadIdx.x == 0) sums[blockIdx.x] = acc;
}

// Exclusive scan of ntiles sums in place, by one block: each thread scans a run of them.
__global__ void scan_sums_f32(float *sums, int ntiles) {
  __shared__ float run_totals[BENCH_BLOCK];
  int per = (ntiles + BENCH_BLOCK - 1) / BENCH_BLOCK;
  int first = threadIdx.x * per, last = min(first + per, ntiles);
  float acc = 0.0f;
  for (int i = first; i < last; i++) acc += sums[i];
  run_totals[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float running = 0.0f;
    for (int t = 0; t < BENCH_BLOCK; t++) {
      float v = run_totals[t];
      run_totals[t] = running;
      running += v;
    }
  }
  __syncthreads();
  acc = run_totals[threadIdx.x];
  for (int i = first; i < last; i++) {
    float v = sums[i];
    sums[i] = acc;
    acc += v;
  }
}

// Shared-memory index with one pad slot per 32 elements, so a thread's run of SCAN_ITEMS
// consecutive elements does not hit one bank from every thread.
#define SCAN_PAD(i) ((i) + ((i) >> 5))

__global__ void scan_tiles_f32(const float *x, const float *offsets, float *y, long long n) {
  __shared__ float tile[SCAN_PAD(SCAN_TILE)];
  __shared__ float warp_totals[BENCH_BLOCK / 32];
  long long base = blockIdx.x * (long long)SCAN_TILE;
  int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  for (int k = 0; k < SCAN_ITEMS; k++) {       // coalesced loads
    int j = k * BENCH_BLOCK + t;
    tile[SCAN_PAD(j)] = base + j < n ? x[base + j] : 0.0f;
  }
  __syncthreads();
  float run = 0.0f;                             // this thread's run, scanned in place
  for (int k = 0; k < SCAN_ITEMS; k++) {
    int j = t * SCAN_ITEMS + k;
    run += tile[SCAN_PAD(j)];
    tile[SCAN_PAD(j)] = run;
  }
  float incl = run;                             // inclusive scan of the run totals
  for (int o = 1; o < 32; o <<= 1) {
    float v = __shfl_up_sync(0xffffffffU, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) warp_totals[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    float w = lane < BENCH_BLOCK / 32 ? warp_totals[lane] : 0.0f;
    for (int o = 1; o < 32; o <<= 1) {
      float v = __shfl_up_sync(0xffffffffU, w, o);
      if (lane >= o) w += v;
    }
    if (lane < BENCH_BLOCK / 32) warp_totals[lane] = w;
  }
  __syncthreads();
  float before = incl - run + (warp > 0 ? warp_totals[warp - 1] : 0.0f) + offsets[blockIdx.x];
  for (int k = 0; k < SCAN_ITEMS; k++) {
    int j = t * SCAN_ITEMS + k;
    tile[SCAN_PAD(j)] += before;
  }
  __syncthreads();
  for (int k = 0; k < SCAN_ITEMS; k++) {       // coalesced stores
    int j = k * BENCH_BLOCK + t;
    if (base + j < n) y[base + j] = tile[SCAN_PAD(j)];
  }
}
