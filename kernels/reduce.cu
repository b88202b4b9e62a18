// reduce.cu: reductions, a template that lua/gpu/reduction.lua fills in (its dollar names).
//
// A full reduction is one grid-stride pass that leaves one partial per block, then a
// one-block finish over the partials (skipped when the first pass ran as a single block).
// The contiguous path of the built-in reductions loads 16 bytes at a time, four loads in
// flight per thread, each into its own accumulator (more memory parallelism, and shorter
// float sums).  Blocks combine their threads with warp shuffles where the accumulator is a
// scalar, through shared memory otherwise (ReductionKernel's struct types).  argmax and argmin
// reduce (index, value) pairs, a struct that their preamble declares with its own shuffle.
//
// Kernels: gpu_reduce_vec (contiguous, 16-byte aligned built-ins; a second input for dot),
// gpu_reduce_index (a map over the index i and the arguments: strided inputs and
// ReductionKernel), gpu_reduce_axis1/32 (one output per kept index) and gpu_reduce_finish.
// Built-ins whose map needs the element's index (argmax, argmin) have no gpu_reduce_vec.
// One module holds every kernel of an operation and dtype, so each compiles once.

$PREAMBLE

#define GPU_BLOCK 256
#define GPU_SHUFFLE $SHUFFLE
#define GPU_WITH_VEC $WITH_VEC
#define GPU_WITH_AXIS $WITH_AXIS

typedef $ACC_T gpu_acc_t;
typedef $OUT_T gpu_out_t;

__device__ __forceinline__ gpu_acc_t gpu_reduce_op(gpu_acc_t a, gpu_acc_t b) { return $REDUCE; }
__device__ __forceinline__ gpu_acc_t gpu_neutral() { return $NEUTRAL; }
__device__ __forceinline__ gpu_out_t gpu_finish(gpu_acc_t a, long long count) { return $FINISH; }

// A warp shuffle of an accumulator: built-in for scalars, part by part for complex ones.
template <class T>
__device__ __forceinline__ T gpu_shfl_down(T v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ lg_complex64 gpu_shfl_down(lg_complex64 v, int delta) {
  return lg_complex64(gpu_shfl_down(v.re, delta), gpu_shfl_down(v.im, delta));
}
__device__ __forceinline__ lg_complex128 gpu_shfl_down(lg_complex128 v, int delta) {
  return lg_complex128(gpu_shfl_down(v.re, delta), gpu_shfl_down(v.im, delta));
}

// The block's threads combined; the result is valid in thread 0.
__device__ __forceinline__ gpu_acc_t gpu_block_reduce(gpu_acc_t v) {
#if GPU_SHUFFLE
  __shared__ gpu_acc_t warp_results[GPU_BLOCK / 32];
  for (int o = 16; o > 0; o >>= 1) v = gpu_reduce_op(v, gpu_shfl_down(v, o));
  if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < GPU_BLOCK / 32 ? warp_results[threadIdx.x] : gpu_neutral();
    for (int o = 16; o > 0; o >>= 1) v = gpu_reduce_op(v, gpu_shfl_down(v, o));
  }
  return v;
#else
  __shared__ gpu_acc_t values[GPU_BLOCK];
  values[threadIdx.x] = v;
  __syncthreads();
  for (int o = GPU_BLOCK / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) values[threadIdx.x] = gpu_reduce_op(values[threadIdx.x], values[threadIdx.x + o]);
    __syncthreads();
  }
  return values[0];
#endif
}

// One block's share: the final value when the grid is a single block, else a partial.
__device__ __forceinline__ void gpu_block_done(gpu_acc_t acc, gpu_acc_t *partials, gpu_out_t *out,
                                               long long count) {
  acc = gpu_block_reduce(acc);
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) out[0] = gpu_finish(acc, count);
    else partials[blockIdx.x] = acc;
  }
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_finish(const gpu_acc_t *partials, int m, gpu_out_t *out, long long count) {
  gpu_acc_t acc = gpu_neutral();
  for (int i = threadIdx.x; i < m; i += GPU_BLOCK) acc = gpu_reduce_op(acc, partials[i]);
  acc = gpu_block_reduce(acc);
  if (threadIdx.x == 0) out[0] = gpu_finish(acc, count);
}

#if GPU_WITH_VEC || GPU_WITH_AXIS
typedef $IN_T gpu_in_t;
#endif

#if GPU_WITH_VEC
#define GPU_HAS_B $HAS_B
#if GPU_HAS_B
typedef $IN2_T gpu_in2_t;
#endif
#define GPU_MAP(x, y) ($MAPV)
#define GPU_V (16 / (int)sizeof(gpu_in_t))

union gpu_vec_a { uint4 raw; gpu_in_t v[GPU_V]; };
#if GPU_HAS_B
union gpu_vec_b { uint4 raw; gpu_in2_t v[GPU_V]; };
#define GPU_LOAD_B(r, k) r.raw = ((const uint4 *)b)[k]
#define GPU_B_AT(r, j) r.v[j]
#define GPU_B_ELEM(i) b[i]
#else
union gpu_vec_b { int unused; };
#define GPU_LOAD_B(r, k) (void)0
#define GPU_B_AT(r, j) 0
#define GPU_B_ELEM(i) 0
#endif

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_vec(const gpu_in_t *__restrict__ a, $B_PARAM long long n, gpu_acc_t *partials,
               gpu_out_t *out, long long count) {
  const long long nvec = n / GPU_V;
  const long long stride = (long long)gridDim.x * GPU_BLOCK;
  const uint4 *av = (const uint4 *)a;
  long long v = (long long)blockIdx.x * GPU_BLOCK + threadIdx.x;
  gpu_acc_t acc0 = gpu_neutral(), acc1 = gpu_neutral(), acc2 = gpu_neutral(), acc3 = gpu_neutral();
  gpu_vec_a x0, x1, x2, x3;
  gpu_vec_b y0, y1, y2, y3;
  for (; v + 3 * stride < nvec; v += 4 * stride) {
    x0.raw = av[v];
    x1.raw = av[v + stride];
    x2.raw = av[v + 2 * stride];
    x3.raw = av[v + 3 * stride];
    GPU_LOAD_B(y0, v);
    GPU_LOAD_B(y1, v + stride);
    GPU_LOAD_B(y2, v + 2 * stride);
    GPU_LOAD_B(y3, v + 3 * stride);
#pragma unroll
    for (int j = 0; j < GPU_V; j++) {
      acc0 = gpu_reduce_op(acc0, GPU_MAP(x0.v[j], GPU_B_AT(y0, j)));
      acc1 = gpu_reduce_op(acc1, GPU_MAP(x1.v[j], GPU_B_AT(y1, j)));
      acc2 = gpu_reduce_op(acc2, GPU_MAP(x2.v[j], GPU_B_AT(y2, j)));
      acc3 = gpu_reduce_op(acc3, GPU_MAP(x3.v[j], GPU_B_AT(y3, j)));
    }
  }
  for (; v < nvec; v += stride) {
    x0.raw = av[v];
    GPU_LOAD_B(y0, v);
#pragma unroll
    for (int j = 0; j < GPU_V; j++) acc0 = gpu_reduce_op(acc0, GPU_MAP(x0.v[j], GPU_B_AT(y0, j)));
  }
  for (long long i = nvec * GPU_V + (long long)blockIdx.x * GPU_BLOCK + threadIdx.x; i < n; i += stride)
    acc1 = gpu_reduce_op(acc1, GPU_MAP(a[i], GPU_B_ELEM(i)));
  gpu_block_done(gpu_reduce_op(gpu_reduce_op(acc0, acc1), gpu_reduce_op(acc2, acc3)), partials, out,
                 count);
}
#endif

__device__ __forceinline__ gpu_acc_t gpu_map($MAP_ARGS, long long i) { return $MAP; }

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_index($MAP_ARGS, long long n, gpu_acc_t *partials, gpu_out_t *out, long long count) {
  const long long stride = (long long)gridDim.x * GPU_BLOCK;
  gpu_acc_t acc0 = gpu_neutral(), acc1 = gpu_neutral();
  long long i = (long long)blockIdx.x * GPU_BLOCK + threadIdx.x;
  for (; i + stride < n; i += 2 * stride) {
    acc0 = gpu_reduce_op(acc0, gpu_map($MAP_NAMES, i));
    acc1 = gpu_reduce_op(acc1, gpu_map($MAP_NAMES, i + stride));
  }
  if (i < n) acc0 = gpu_reduce_op(acc0, gpu_map($MAP_NAMES, i));
  gpu_block_done(gpu_reduce_op(acc0, acc1), partials, out, count);
}

#if GPU_WITH_AXIS
// the map of element x, at index j (0-based) along the axis
#define GPU_MAP_AT(x, j) ($MAP_AT)

// Each output (one kept index, found through lay) reduces k elements axis_stride bytes apart,
// with GROUP threads: 32 when the axis is contiguous and long enough, else 1.
template <int GROUP>
__device__ __forceinline__ void gpu_axis(const char *in, long long m, long long k, long long axis_stride,
                                         const gpu_layout &lay, gpu_out_t *out) {
  const long long first = ((long long)blockIdx.x * GPU_BLOCK + threadIdx.x) / GROUP;
  const long long step = (long long)gridDim.x * (GPU_BLOCK / GROUP);
  const int lane = threadIdx.x % GROUP;
  // whole warps iterate together, so the shuffles below see every lane
  for (long long o0 = first - first % (32 / GROUP); o0 < m; o0 += step) {
    long long o = o0 + (first % (32 / GROUP));
    gpu_acc_t acc = gpu_neutral();
    if (o < m) {
      const char *base = in + gpu_offset(lay, o);
      for (long long j = lane; j < k; j += GROUP)
        acc = gpu_reduce_op(acc, GPU_MAP_AT(*(const gpu_in_t *)(base + j * axis_stride), j));
    }
    if (GROUP > 1)
      for (int s = GROUP / 2; s > 0; s >>= 1) acc = gpu_reduce_op(acc, gpu_shfl_down(acc, s));
    if (lane == 0 && o < m) out[o] = gpu_finish(acc, k);
  }
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis1(const char *in, long long m, long long k, long long axis_stride, gpu_layout lay,
                 gpu_out_t *out) {
  gpu_axis<1>(in, m, k, axis_stride, lay, out);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis32(const char *in, long long m, long long k, long long axis_stride, gpu_layout lay,
                  gpu_out_t *out) {
  gpu_axis<32>(in, m, k, axis_stride, lay, out);
}
#endif
