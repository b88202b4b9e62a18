// scan.cu: inclusive and exclusive scans, a template that lua/gpu/scan.lua fills in (its
// dollar names).  Reduce-then-scan over tiles of GPU_TILE elements: gpu_scan_reduce_* leaves
// each tile's total, the totals are scanned (recursively, the same way), and gpu_scan_tiles_*
// scans each tile again starting from the scanned total of the tiles before it.  "first"
// kernels read the user's input (any dtype, maybe strided); "inner" ones the contiguous totals.
// The operator need not be commutative, and no neutral element is needed for inclusive scans:
// a "has" flag marks where a running value starts.

#define GPU_BLOCK 256
#define GPU_ITEMS 8
#define GPU_TILE (GPU_BLOCK * GPU_ITEMS)
#define GPU_PAD(j) ((j) + (j) / 32)
#define GPU_EXCLUSIVE $EXCLUSIVE
#define GPU_STRIDED $STRIDED

typedef $T gpu_t;
typedef $IN_T gpu_in_t;

__device__ __forceinline__ gpu_t gpu_scan_op(gpu_t a, gpu_t b) { return $SCAN_EXPR; }
__device__ __forceinline__ gpu_t gpu_convert(gpu_in_t x) { return $CONVERT; }

template <bool FIRST>
__device__ __forceinline__ gpu_t gpu_load(const char *in, const gpu_layout &lay, long long i) {
  if (!FIRST) return ((const gpu_t *)in)[i];
#if GPU_STRIDED
  return gpu_convert(*(const gpu_in_t *)(in + gpu_offset(lay, i)));
#else
  return gpu_convert(((const gpu_in_t *)in)[i]);
#endif
}

struct gpu_scan_smem {
  gpu_t tile[GPU_PAD(GPU_TILE)];
  gpu_t sums[GPU_BLOCK];
  bool has[GPU_BLOCK];
};

// Loads this block's tile and scans the threads' totals: afterwards sums[t] (valid where
// has[t]) combines every item of threads 0..t.  Returns the number of items in the tile.
template <bool FIRST>
__device__ __forceinline__ int gpu_scan_tile(gpu_scan_smem &s, const char *in, const gpu_layout &lay,
                                             long long n) {
  const int tid = threadIdx.x;
  const long long base = (long long)blockIdx.x * GPU_TILE;
  const int count = (int)(n - base < GPU_TILE ? n - base : GPU_TILE);
#pragma unroll
  for (int k = 0; k < GPU_ITEMS; k++) {
    int j = k * GPU_BLOCK + tid;
    if (j < count) s.tile[GPU_PAD(j)] = gpu_load<FIRST>(in, lay, base + j);
  }
  __syncthreads();
  gpu_t total = gpu_t();
  bool has = false;
#pragma unroll
  for (int q = 0; q < GPU_ITEMS; q++) {
    int j = tid * GPU_ITEMS + q;
    if (j < count) {
      gpu_t v = s.tile[GPU_PAD(j)];
      total = has ? gpu_scan_op(total, v) : v;
      has = true;
    }
  }
  s.sums[tid] = total;
  s.has[tid] = has;
  __syncthreads();
  for (int off = 1; off < GPU_BLOCK; off <<= 1) {
    gpu_t v = s.sums[tid];
    bool h = s.has[tid];
    if (tid >= off && s.has[tid - off]) {
      v = h ? gpu_scan_op(s.sums[tid - off], v) : s.sums[tid - off];
      h = true;
    }
    __syncthreads();
    s.sums[tid] = v;
    s.has[tid] = h;
    __syncthreads();
  }
  return count;
}

template <bool FIRST>
__device__ __forceinline__ void gpu_scan_reduce(const char *in, const gpu_layout &lay, long long n,
                                                gpu_t *totals) {
  __shared__ gpu_scan_smem s;
  gpu_scan_tile<FIRST>(s, in, lay, n);
  if (threadIdx.x == 0) totals[blockIdx.x] = s.sums[GPU_BLOCK - 1];
}

template <bool FIRST>
__device__ __forceinline__ void gpu_scan_tiles(const char *in, const gpu_layout &lay, long long n,
                                               gpu_t *out, const gpu_t *carries) {
  __shared__ gpu_scan_smem s;
  const int tid = threadIdx.x;
  const int count = gpu_scan_tile<FIRST>(s, in, lay, n);
  gpu_t run = gpu_t();
  bool has = false;
  if (tid > 0 && s.has[tid - 1]) {
    run = s.sums[tid - 1];
    has = true;
  }
  if (blockIdx.x > 0) {
    gpu_t carry = carries[blockIdx.x - 1];
    run = has ? gpu_scan_op(carry, run) : carry;
    has = true;
  }
#pragma unroll
  for (int q = 0; q < GPU_ITEMS; q++) {
    int j = tid * GPU_ITEMS + q;
    if (j < count) {
      gpu_t v = s.tile[GPU_PAD(j)];
#if GPU_EXCLUSIVE
      if (FIRST) s.tile[GPU_PAD(j)] = has ? run : (gpu_t)($NEUTRAL);
#endif
      run = has ? gpu_scan_op(run, v) : v;
      has = true;
#if GPU_EXCLUSIVE
      if (!FIRST)
#endif
      s.tile[GPU_PAD(j)] = run;
    }
  }
  __syncthreads();
  const long long base = (long long)blockIdx.x * GPU_TILE;
#pragma unroll
  for (int k = 0; k < GPU_ITEMS; k++) {
    int j = k * GPU_BLOCK + tid;
    if (j < count) out[base + j] = s.tile[GPU_PAD(j)];
  }
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_reduce_first(const char *in, gpu_layout lay, long long n, gpu_t *totals) {
  gpu_scan_reduce<true>(in, lay, n, totals);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_reduce_inner(const char *in, gpu_layout lay, long long n, gpu_t *totals) {
  gpu_scan_reduce<false>(in, lay, n, totals);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_tiles_first(const char *in, gpu_layout lay, long long n, gpu_t *out, const gpu_t *carries) {
  gpu_scan_tiles<true>(in, lay, n, out, carries);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_tiles_inner(const char *in, gpu_layout lay, long long n, gpu_t *out, const gpu_t *carries) {
  gpu_scan_tiles<false>(in, lay, n, out, carries);
}
