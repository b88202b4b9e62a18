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
// Kernels: gpu_reduce_vec (contiguous, 16-byte aligned built-ins; a second input for dot, or
// one value for every element: var's mean), gpu_reduce_index (a map over the index i and the
// arguments: strided inputs and ReductionKernel), gpu_reduce_axis (one output per kept index)
// and gpu_reduce_columns (along the first axis of rows that hold every output side by side),
// each followed by gpu_reduce_axis_finish or gpu_reduce_axis_finish_block when it splits the
// axes among blocks, and gpu_reduce_finish.
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
#define GPU_B_SCALAR $B_SCALAR
// the map of element x (and y, dot's), at flat index gpu_i (0-based: argmax and argmin's)
#define GPU_MAP(x, y, gpu_i) ($MAPV)
#define GPU_V (16 / (int)sizeof(gpu_in_t))
// 1 where GPU_WHOLE(x, y) maps and reduces a whole load (x.raw, and y.raw for dot) at once
#define GPU_WITH_WHOLE $WITH_WHOLE
#define GPU_WHOLE(x, y) ((gpu_acc_t)($WHOLE))

// Whole 16-byte loads of 1- and 2-byte integers, bool among them (lua/gpu/reduction.lua's
// whole_load picks one for sum, mean, any, all and dot): the load's 8 or 16 elements reduced
// in 32-bit registers, where a conversion and an accumulator add each (64-bit for sums) cost
// more instructions than the memory has time for.  Exact: a load sums to under 2^19.
__device__ __forceinline__ int gpu_dp4a_s8(unsigned int a, unsigned int b, int c) {
  int d;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned int gpu_dp4a_u8(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ int gpu_whole_sum_s8(uint4 r) {
  const unsigned int ones = 0x01010101u;
  return gpu_dp4a_s8(r.x, ones, gpu_dp4a_s8(r.y, ones, gpu_dp4a_s8(r.z, ones, gpu_dp4a_s8(r.w, ones, 0))));
}
__device__ __forceinline__ unsigned int gpu_whole_sum_u8(uint4 r) {
  const unsigned int ones = 0x01010101u;
  return gpu_dp4a_u8(r.x, ones, gpu_dp4a_u8(r.y, ones, gpu_dp4a_u8(r.z, ones, gpu_dp4a_u8(r.w, ones, 0u))));
}
__device__ __forceinline__ int gpu_whole_dot_s8(uint4 r, uint4 q) {
  return gpu_dp4a_s8(r.x, q.x, gpu_dp4a_s8(r.y, q.y, gpu_dp4a_s8(r.z, q.z, gpu_dp4a_s8(r.w, q.w, 0))));
}
__device__ __forceinline__ unsigned int gpu_whole_dot_u8(uint4 r, uint4 q) {
  return gpu_dp4a_u8(r.x, q.x, gpu_dp4a_u8(r.y, q.y, gpu_dp4a_u8(r.z, q.z, gpu_dp4a_u8(r.w, q.w, 0u))));
}
__device__ __forceinline__ int gpu_sum_s16(unsigned int w) { return (int)(short)(w & 0xffffu) + ((int)w >> 16); }
__device__ __forceinline__ unsigned int gpu_sum_u16(unsigned int w) { return (w & 0xffffu) + (w >> 16); }
__device__ __forceinline__ int gpu_whole_sum_s16(uint4 r) {
  return gpu_sum_s16(r.x) + gpu_sum_s16(r.y) + gpu_sum_s16(r.z) + gpu_sum_s16(r.w);
}
__device__ __forceinline__ unsigned int gpu_whole_sum_u16(uint4 r) {
  return gpu_sum_u16(r.x) + gpu_sum_u16(r.y) + gpu_sum_u16(r.z) + gpu_sum_u16(r.w);
}
// A byte's high bit set where the byte is not zero: its low seven bits plus 0x7f carry into it.
__device__ __forceinline__ unsigned int gpu_nonzero_bytes(unsigned int w) {
  return (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
}
// bool's sum: the bytes that are not zero (any byte but 0 is true)
__device__ __forceinline__ unsigned int gpu_whole_count_nonzero(uint4 r) {
  return __popc(gpu_nonzero_bytes(r.x)) + __popc(gpu_nonzero_bytes(r.y)) +
         __popc(gpu_nonzero_bytes(r.z)) + __popc(gpu_nonzero_bytes(r.w));
}
__device__ __forceinline__ unsigned int gpu_whole_any(uint4 r) { return (r.x | r.y | r.z | r.w) != 0u; }
__device__ __forceinline__ unsigned int gpu_whole_all8(uint4 r) {
  return (gpu_nonzero_bytes(r.x) & gpu_nonzero_bytes(r.y) & gpu_nonzero_bytes(r.z) &
          gpu_nonzero_bytes(r.w)) == 0x80808080u;
}
// the same for 16-bit halves
__device__ __forceinline__ unsigned int gpu_nonzero_halves(unsigned int w) {
  return (((w & 0x7fff7fffu) + 0x7fff7fffu) | w) & 0x80008000u;
}
__device__ __forceinline__ unsigned int gpu_whole_all16(uint4 r) {
  return (gpu_nonzero_halves(r.x) & gpu_nonzero_halves(r.y) & gpu_nonzero_halves(r.z) &
          gpu_nonzero_halves(r.w)) == 0x80008000u;
}

union gpu_vec_a { uint4 raw; gpu_in_t v[GPU_V]; };
#if GPU_B_SCALAR
// one value of b for every element (var's mean), read once
union gpu_vec_b { int unused; };
#define GPU_LOAD_B(r, k) (void)0
#define GPU_B_AT(r, j) b0
#define GPU_B_ELEM(i) b0
#elif GPU_HAS_B
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
#if GPU_B_SCALAR
  const gpu_in2_t b0 = b[0];
#endif
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
#if GPU_WITH_WHOLE
    acc0 = gpu_reduce_op(acc0, GPU_WHOLE(x0, y0));
    acc1 = gpu_reduce_op(acc1, GPU_WHOLE(x1, y1));
    acc2 = gpu_reduce_op(acc2, GPU_WHOLE(x2, y2));
    acc3 = gpu_reduce_op(acc3, GPU_WHOLE(x3, y3));
#else
#pragma unroll
    for (int j = 0; j < GPU_V; j++) {
      acc0 = gpu_reduce_op(acc0, GPU_MAP(x0.v[j], GPU_B_AT(y0, j), v * GPU_V + j));
      acc1 = gpu_reduce_op(acc1, GPU_MAP(x1.v[j], GPU_B_AT(y1, j), (v + stride) * GPU_V + j));
      acc2 = gpu_reduce_op(acc2, GPU_MAP(x2.v[j], GPU_B_AT(y2, j), (v + 2 * stride) * GPU_V + j));
      acc3 = gpu_reduce_op(acc3, GPU_MAP(x3.v[j], GPU_B_AT(y3, j), (v + 3 * stride) * GPU_V + j));
    }
#endif
  }
  for (; v < nvec; v += stride) {
    x0.raw = av[v];
    GPU_LOAD_B(y0, v);
#if GPU_WITH_WHOLE
    acc0 = gpu_reduce_op(acc0, GPU_WHOLE(x0, y0));
#else
#pragma unroll
    for (int j = 0; j < GPU_V; j++)
      acc0 = gpu_reduce_op(acc0, GPU_MAP(x0.v[j], GPU_B_AT(y0, j), v * GPU_V + j));
#endif
  }
  for (long long i = nvec * GPU_V + (long long)blockIdx.x * GPU_BLOCK + threadIdx.x; i < n; i += stride)
    acc1 = gpu_reduce_op(acc1, GPU_MAP(a[i], GPU_B_ELEM(i), i));
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

#define GPU_AXIS_LOADS 4

// One axis element as gpu_reduce_axis_of<V> loads it: V elements in one load (16 bytes when
// V > 1: the contiguous path), the map of the e-th at index j along the axis.
template <int V> struct gpu_axis_item;
template <> struct gpu_axis_item<1> {
  gpu_in_t x;
  __device__ __forceinline__ gpu_acc_t map(int e, long long j) const { return GPU_MAP_AT(x, j); }
};
#if GPU_WITH_VEC
template <> struct gpu_axis_item<GPU_V> {
  gpu_vec_a x;
  __device__ __forceinline__ gpu_acc_t map(int e, long long j) const { return GPU_MAP_AT(x.v[e], j); }
};
#endif

// The body of gpu_reduce_axis over axis items of V elements: k items along each axis, count
// elements in all (k * V, for gpu_finish).
template <int V>
__device__ __forceinline__ void gpu_reduce_axis_of(const char *in, long long m, long long k,
                                                   long long axis_stride, const gpu_layout &lay,
                                                   gpu_out_t *out, gpu_acc_t *partials,
                                                   long long split_k, int shares, int along,
                                                   long long count_all) {
  __shared__ gpu_acc_t sums[GPU_BLOCK];
  const int t = threadIdx.x;
  const gpu_sharing s = gpu_share_out(GPU_BLOCK, shares, along, k, split_k);
  const int block_outputs = s.sums, share = s.share;
  const long long j_lo = s.lo, j_hi = s.hi;
  const long long first = j_lo + share;
  const long long mine = first < j_hi ? (j_hi - first + shares - 1) / shares : 0;
  const long long step = shares * axis_stride;
  // every thread of the block runs every iteration, so the barriers are reached by all
  for (long long o0 = (long long)blockIdx.x * block_outputs; o0 < m;
       o0 += (long long)gridDim.x * block_outputs) {
    const long long o = o0 + s.sum;
    // a count, not an if around the loop (the compiler then put each load right before its
    // use): an output past the last sums nothing
    const long long count = o < m ? mine : 0;
    const char *p = in + gpu_offset(lay, o < m ? o : 0) + first * axis_stride;
    gpu_acc_t part[GPU_AXIS_LOADS];
#pragma unroll
    for (int u = 0; u < GPU_AXIS_LOADS; u++) part[u] = gpu_neutral();
    long long i = 0, j = first;
    for (; i + GPU_AXIS_LOADS <= count; i += GPU_AXIS_LOADS) {
      gpu_axis_item<V> item[GPU_AXIS_LOADS];
#pragma unroll
      for (int u = 0; u < GPU_AXIS_LOADS; u++) item[u] = *(const gpu_axis_item<V> *)(p + u * step);
#pragma unroll
      for (int u = 0; u < GPU_AXIS_LOADS; u++)
#pragma unroll
        for (int e = 0; e < V; e++)
          part[u] = gpu_reduce_op(part[u], item[u].map(e, (j + u * shares) * V + e));
      p += GPU_AXIS_LOADS * step;
      j += GPU_AXIS_LOADS * shares;
    }
    for (; i < count; i++, p += step, j += shares) {
      const gpu_axis_item<V> item = *(const gpu_axis_item<V> *)p;
#pragma unroll
      for (int e = 0; e < V; e++) part[0] = gpu_reduce_op(part[0], item.map(e, j * V + e));
    }
    sums[t] = gpu_reduce_op(gpu_reduce_op(part[0], part[1]),
                                      gpu_reduce_op(part[2], part[3]));
    gpu_combine_shares(sums, s, shares, gpu_reduce_op);
    if (share == 0 && o < m) {
      if (gridDim.y == 1) out[o] = gpu_finish(sums[t], count_all);
      else partials[o * gridDim.y + blockIdx.y] = sums[t];
    }
  }
}

// Each output (one kept index, found through lay) reduces the k elements of its axis,
// axis_stride bytes apart.  A block takes GPU_BLOCK / shares outputs, shares threads each,
// placed so that a warp's loads are adjacent in memory: with `along` (a contiguous axis)
// consecutive threads take consecutive elements of an output's axis, each every shares-th;
// otherwise (the columns of a row-major array) consecutive threads take consecutive outputs,
// and the shares of an output (at most 8 among 32 outputs or more, so that a warp stays on
// 32 outputs; more among fewer, so that no lane idles) every shares-th element.  Each thread keeps four loads in flight, each into an accumulator of
// its own; the shares then combine in shared memory.  When the outputs give too few blocks
// to fill the device, blockIdx.y splits the axes into gridDim.y ranges of split_k elements,
// whose results go to partials ([output][range]) for a finish kernel.  (A thread an
// output, walking its axis one load at a time, summed the columns of 8192 x 8192 float32 at
// 0.6 TB/s, and a warp an output summed 16 rows of 2^22 at 0.02 TB/s.)
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis(const char *in, long long m, long long k, long long axis_stride, gpu_layout lay,
                gpu_out_t *out, gpu_acc_t *partials, long long split_k, int shares, int along) {
  gpu_reduce_axis_of<1>(in, m, k, axis_stride, lay, out, partials, split_k, shares, along, k);
}

#if GPU_WITH_VEC
// gpu_reduce_axis along contiguous axes whose every start is 16-byte aligned, 16 bytes a load
// (more bytes in flight a thread): k and split_k count 16-byte vectors, n_along elements.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis_vec(const char *in, long long m, long long k, gpu_layout lay, gpu_out_t *out,
                    gpu_acc_t *partials, long long split_k, int shares, long long n_along) {
  gpu_reduce_axis_of<GPU_V>(in, m, k, 16, lay, out, partials, split_k, shares, 1, n_along);
}
#endif

// Reductions along the first axis of rows that each hold every output once, contiguous
// (sum(a, {axis = 1}) of a tall row-major matrix, or of a stack of such): k rows of `width`
// items (V elements each), pitch bytes apart.  Consecutive threads take consecutive items of
// a row, then of the next (a block reads `rows` whole rows at once, a power of two), so a
// warp's loads are adjacent however few the outputs; each thread keeps one accumulator an
// element of its item, over every (gridDim.x * rows)-th row.  The rows' accumulators then
// combine in shared memory, all V at each step where they fit (a step each, int8's 16 took
// longer than the loads); with one block that gives the results, else one partial an output
// and block ([output][block]) for a finish kernel.
template <int V>
__device__ __forceinline__ void gpu_reduce_columns_of(const char *in, long long k, long long pitch,
                                                      int width, int rows, gpu_out_t *out,
                                                      gpu_acc_t *partials) {
  // elements combined at each step: as many as 32 KiB of shared memory holds (int8's argmin
  // pairs, 16 of 16 bytes a thread, would need 64)
  constexpr int G = V * sizeof(gpu_acc_t) <= 128 ? V : (int)(128 / sizeof(gpu_acc_t));
  __shared__ gpu_acc_t sums[G][GPU_BLOCK];
  const int t = threadIdx.x;
  const int column = t % width, row = t / width;   // row >= rows: idle
  gpu_acc_t acc[V];
#pragma unroll
  for (int e = 0; e < V; e++) acc[e] = gpu_neutral();
  const long long step = (long long)gridDim.x * rows;
  long long r = (long long)blockIdx.x * rows + row;
  const char *p = in + r * pitch + column * (long long)sizeof(gpu_axis_item<V>);
  if (row < rows) {
    for (; r + 3 * step < k; r += 4 * step, p += 4 * step * pitch) {
      gpu_axis_item<V> item[GPU_AXIS_LOADS];
#pragma unroll
      for (int u = 0; u < GPU_AXIS_LOADS; u++)
        item[u] = *(const gpu_axis_item<V> *)(p + u * step * pitch);
#pragma unroll
      for (int u = 0; u < GPU_AXIS_LOADS; u++)
#pragma unroll
        for (int e = 0; e < V; e++) acc[e] = gpu_reduce_op(acc[e], item[u].map(e, r + u * step));
    }
    for (; r < k; r += step, p += step * pitch) {
      const gpu_axis_item<V> item = *(const gpu_axis_item<V> *)p;
#pragma unroll
      for (int e = 0; e < V; e++) acc[e] = gpu_reduce_op(acc[e], item.map(e, r));
    }
  }
#pragma unroll
  for (int g = 0; g < V; g += G) {
    if (g > 0) __syncthreads();        // the group before has been read
#pragma unroll
    for (int e = 0; e < G; e++) sums[e][t] = acc[g + e];
    __syncthreads();
    for (int half = rows / 2; half > 0; half /= 2) {
      if (row < half)
#pragma unroll
        for (int e = 0; e < G; e++)
          sums[e][t] = gpu_reduce_op(sums[e][t], sums[e][t + half * width]);
      __syncthreads();
    }
    if (row == 0) {
#pragma unroll
      for (int e = 0; e < G; e++) {
        const int o = column * V + g + e;
        if (gridDim.x == 1) out[o] = gpu_finish(sums[e][t], k);
        else partials[(long long)o * gridDim.x + blockIdx.x] = sums[e][t];
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_columns(const char *in, long long k, long long pitch, int width, int rows,
                   gpu_out_t *out, gpu_acc_t *partials) {
  gpu_reduce_columns_of<1>(in, k, pitch, width, rows, out, partials);
}

#if GPU_WITH_VEC
// gpu_reduce_columns over rows that start on 16 bytes and hold whole vectors, 16 bytes a load
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_columns_vec(const char *in, long long k, long long pitch, int width, int rows,
                       gpu_out_t *out, gpu_acc_t *partials) {
  gpu_reduce_columns_of<GPU_V>(in, k, pitch, width, rows, out, partials);
}
#endif

// out[o] = the `splits` partials of output o (adjacent) combined, a block an output: for many
// partials an output (one thread walking a thousand of them took longer than the first pass).
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis_finish_block(const gpu_acc_t *partials, int splits, long long k, gpu_out_t *out) {
  const gpu_acc_t *mine = partials + (long long)blockIdx.x * splits;
  gpu_acc_t acc = gpu_neutral();
  for (int i = threadIdx.x; i < splits; i += GPU_BLOCK) acc = gpu_reduce_op(acc, mine[i]);
  acc = gpu_block_reduce(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = gpu_finish(acc, k);
}

// out[o] = the `splits` partials of output o (adjacent) combined, for o < m, a thread an output.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_reduce_axis_finish(const gpu_acc_t *partials, long long m, long long splits, long long k,
                       gpu_out_t *out) {
  for (long long o = (long long)blockIdx.x * GPU_BLOCK + threadIdx.x; o < m;
       o += (long long)gridDim.x * GPU_BLOCK) {
    gpu_acc_t acc = gpu_neutral();
    for (long long s = 0; s < splits; s++) acc = gpu_reduce_op(acc, partials[o * splits + s]);
    out[o] = gpu_finish(acc, k);
  }
}
#endif
