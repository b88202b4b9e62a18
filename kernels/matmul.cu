// matmul.cu: stacks of matrix products, for gpuarray.matmul (lua/gpu/matmul.lua fills in the
// dollar names).
//
// out[batch] = a[batch] (n x k) times b[batch] (k x m).  a and b are read through byte
// strides (any view, broadcast batches with stride 0), each batch found by its flat index
// through a gpu_layout; out is contiguous.  A block of 16 x 16 threads computes a T x T tile
// of out, each thread P x P of its elements (P = 8, T = 128; P = 4, T = 64 for complex
// accumulators, which would not fit in registers, and for products of fewer big tiles than
// multiprocessors: lua/gpu/matmul.lua chooses), from T x 16 and 16 x T tiles of a and b
// staged in shared memory.  While a block computes with one pair of tiles, its loads of the
// next are in flight into registers.  Correct for every size and dtype, and a fraction of a
// tuned BLAS's speed.  Elements convert to the accumulator on loading (integers accumulate in
// 64 unsigned bits, which wraps as NumPy's fixed-width sums do once the store truncates).

#define GPU_THREADS 16                        // threads along each side of a block
#define GPU_PER_THREAD $PER_THREAD            // rows, and columns, of out per thread
#define GPU_TILE (GPU_THREADS * GPU_PER_THREAD)
#define GPU_DEPTH 16                          // the k extent of a staged tile

typedef $A_T gpu_a_t;
typedef $B_T gpu_b_t;
typedef $ACC_T gpu_acc_t;
typedef $OUT_T gpu_out_t;

__device__ __forceinline__ gpu_acc_t gpu_load_a(const char *p) {
  const gpu_a_t x = *(const gpu_a_t *)p;
  return $LOAD_A;
}
__device__ __forceinline__ gpu_acc_t gpu_load_b(const char *p) {
  const gpu_b_t x = *(const gpu_b_t *)p;
  return $LOAD_B;
}
__device__ __forceinline__ gpu_acc_t gpu_multiply_add(gpu_acc_t acc, gpu_acc_t x, gpu_acc_t y) {
  return $MULTIPLY_ADD;
}
__device__ __forceinline__ gpu_out_t gpu_store(gpu_acc_t acc) { return $STORE; }

// With 4-byte accumulators the compiler is asked to fit two blocks a multiprocessor (128
// registers a thread): float32 4096^3 went from 19.2 to 22.0 TFLOP/s.  8-byte ones would spill.
extern "C" __global__ void __launch_bounds__(GPU_THREADS * GPU_THREADS, $MIN_BLOCKS)
gpu_matmul(gpu_out_t *out, const char *a, gpu_layout a_batches, long long a_row, long long a_col,
           const char *b, gpu_layout b_batches, long long b_row, long long b_col, long long n,
           long long k, long long m, long long batches) {
  // a_tile[j][r]: a's row row0 + r at k0 + j; b_tile[j][c]: b's column col0 + c at k0 + j.
  // Thread (tx, ty) owns rows ty + 16 p and columns tx + 16 q, so a warp reads one a_tile
  // word (a broadcast) and 16 or 32 consecutive b_tile words per step: no bank conflicts.
  __shared__ gpu_acc_t a_tile[GPU_DEPTH][GPU_TILE + 1];
  __shared__ gpu_acc_t b_tile[GPU_DEPTH][GPU_TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * GPU_THREADS + tx;
  const long long col0 = (long long)blockIdx.x * GPU_TILE;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const char *ab = a + gpu_offset(a_batches, batch);
    const char *bb = b + gpu_offset(b_batches, batch);
    // every thread of the block runs every iteration, so the barriers are reached by all
    for (long long row0 = (long long)blockIdx.y * GPU_TILE; row0 < n;
         row0 += (long long)gridDim.y * GPU_TILE) {
      gpu_acc_t acc[GPU_PER_THREAD][GPU_PER_THREAD];
#pragma unroll
      for (int p = 0; p < GPU_PER_THREAD; p++)
#pragma unroll
        for (int q = 0; q < GPU_PER_THREAD; q++) acc[p][q] = (gpu_acc_t)0;
      // consecutive threads load consecutive k of a row of a, consecutive columns of b
      gpu_acc_t a_next[GPU_PER_THREAD], b_next[GPU_PER_THREAD];
      auto load_tiles = [&](long long k0) {
#pragma unroll
        for (int s = 0; s < GPU_PER_THREAD; s++) {
          const int r = t / GPU_DEPTH + s * (GPU_THREADS * GPU_THREADS / GPU_DEPTH), j = t % GPU_DEPTH;
          const long long row = row0 + r, kk = k0 + j;
          a_next[s] = (row < n && kk < k) ? gpu_load_a(ab + row * a_row + kk * a_col) : (gpu_acc_t)0;
        }
#pragma unroll
        for (int s = 0; s < GPU_PER_THREAD; s++) {
          const int j = t / GPU_TILE + s * (GPU_THREADS * GPU_THREADS / GPU_TILE), c = t % GPU_TILE;
          const long long kk = k0 + j, col = col0 + c;
          b_next[s] = (kk < k && col < m) ? gpu_load_b(bb + kk * b_row + col * b_col) : (gpu_acc_t)0;
        }
      };
      load_tiles(0);
      for (long long k0 = 0; k0 < k; k0 += GPU_DEPTH) {
#pragma unroll
        for (int s = 0; s < GPU_PER_THREAD; s++) {
          a_tile[t % GPU_DEPTH][t / GPU_DEPTH + s * (GPU_THREADS * GPU_THREADS / GPU_DEPTH)] = a_next[s];
          b_tile[t / GPU_TILE + s * (GPU_THREADS * GPU_THREADS / GPU_TILE)][t % GPU_TILE] = b_next[s];
        }
        __syncthreads();
        if (k0 + GPU_DEPTH < k) load_tiles(k0 + GPU_DEPTH);   // in flight while this pair is used
#pragma unroll
        for (int j = 0; j < GPU_DEPTH; j++) {
          gpu_acc_t x[GPU_PER_THREAD], y[GPU_PER_THREAD];
#pragma unroll
          for (int p = 0; p < GPU_PER_THREAD; p++) x[p] = a_tile[j][ty + p * GPU_THREADS];
#pragma unroll
          for (int q = 0; q < GPU_PER_THREAD; q++) y[q] = b_tile[j][tx + q * GPU_THREADS];
#pragma unroll
          for (int p = 0; p < GPU_PER_THREAD; p++)
#pragma unroll
            for (int q = 0; q < GPU_PER_THREAD; q++) acc[p][q] = gpu_multiply_add(acc[p][q], x[p], y[q]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int p = 0; p < GPU_PER_THREAD; p++) {
        const long long row = row0 + ty + p * GPU_THREADS;
#pragma unroll
        for (int q = 0; q < GPU_PER_THREAD; q++) {
          const long long col = col0 + tx + q * GPU_THREADS;
          if (row < n && col < m) out[(batch * n + row) * m + col] = gpu_store(acc[p][q]);
        }
      }
    }
  }
}
