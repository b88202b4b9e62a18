// matvec.cu: stacks of matrix-vector products, for gpuarray.matmul when one side of a product
// is a single row or column (lua/gpu/matmul.lua fills in the dollar names).
//
// out[batch][r] = sum over j of mat[batch][r][j] * vec[batch][j], for r < rows and j < k.  A
// product with one column (a n x k times b k x 1) has mat = a; one with one row (a 1 x k times
// b k x m) has mat = b's transpose, read through its strides.  Such a product reads each
// element of mat once and does one multiply-add with it, so it is bound by memory, and the
// tile kernel of matmul.cu would leave all but one line of each tile idle.
//
// A block of 256 threads computes 256 / shares rows, shares threads summing each, placed so
// that a warp's loads of mat are adjacent in memory: with k adjacent (a row-major mat; along_k)
// consecutive threads take consecutive elements of a row, each every shares-th; with rows
// adjacent (a transposed view) consecutive threads take consecutive rows, and the shares
// of a row (at most 8, so a warp stays on 32 rows) every shares-th element.  lua/gpu/matmul.lua
// picks shares by the length of the rows.  The shares of a row then add up their sums in
// shared memory.  gpu_matvec_runs is the same for a row-major mat and a contiguous vec,
// aligned so that each thread reads runs of 16 bytes of mat in one load.  When rows and
// batches give too few blocks to fill the device, blockIdx.y splits k into gridDim.y ranges
// (of whole runs); each writes its sums to partials, and gpu_matvec_finish adds those up.

#define GPU_BLOCK 256

typedef $MAT_T gpu_mat_t;
typedef $VEC_T gpu_vec_t;
typedef $ACC_T gpu_acc_t;
typedef $OUT_T gpu_out_t;

__device__ __forceinline__ gpu_acc_t gpu_convert_mat(gpu_mat_t x) { return $LOAD_MAT; }
__device__ __forceinline__ gpu_acc_t gpu_convert_vec(gpu_vec_t x) { return $LOAD_VEC; }
__device__ __forceinline__ gpu_acc_t gpu_load_mat(const char *p) {
  return gpu_convert_mat(*(const gpu_mat_t *)p);
}
__device__ __forceinline__ gpu_acc_t gpu_load_vec(const char *p) {
  return gpu_convert_vec(*(const gpu_vec_t *)p);
}
__device__ __forceinline__ gpu_acc_t gpu_multiply_add(gpu_acc_t acc, gpu_acc_t x, gpu_acc_t y) {
  return $MULTIPLY_ADD;
}
__device__ __forceinline__ gpu_out_t gpu_store(gpu_acc_t acc) { return $STORE; }

// Products a thread has in flight, each into an accumulator of its own: about 32 bytes of mat.
// (With one chain of multiply-adds the compiler put each right after its loads, and a warp
// waited out one load at a time: 8192 x 8192 float32 at 1.2-1.3 TB/s instead of 2.1.)
#define GPU_UNROLL (sizeof(gpu_mat_t) <= 4 ? 8 : sizeof(gpu_mat_t) == 8 ? 4 : 2)

// The sum over i < count of mat(p + i p_step) vec(q + i q_step).
__device__ __forceinline__ gpu_acc_t gpu_strided_sum(const char *p, long long p_step,
                                                     const char *q, long long q_step,
                                                     long long count) {
  gpu_acc_t part[GPU_UNROLL];
#pragma unroll
  for (int u = 0; u < GPU_UNROLL; u++) part[u] = (gpu_acc_t)0;
  long long i = 0;
  for (; i + GPU_UNROLL <= count; i += GPU_UNROLL) {
#pragma unroll
    for (int u = 0; u < GPU_UNROLL; u++)
      part[u] = gpu_multiply_add(part[u], gpu_load_mat(p + u * p_step), gpu_load_vec(q + u * q_step));
    p += GPU_UNROLL * p_step;
    q += GPU_UNROLL * q_step;
  }
  for (; i < count; i++, p += p_step, q += q_step)
    part[0] = gpu_multiply_add(part[0], gpu_load_mat(p), gpu_load_vec(q));
  gpu_acc_t sum = part[0];
#pragma unroll
  for (int u = 1; u < GPU_UNROLL; u++) sum = sum + part[u];
  return sum;
}

// A run: the elements of mat in 16 bytes, and as many of vec.
#define GPU_RUN (sizeof(gpu_mat_t) < 16 ? 16 / sizeof(gpu_mat_t) : 1)
struct alignas(16) gpu_mat_run { gpu_mat_t v[GPU_RUN]; };
struct alignas(GPU_RUN * sizeof(gpu_vec_t) < 16 ? GPU_RUN * sizeof(gpu_vec_t) : 16) gpu_vec_run {
  gpu_vec_t v[GPU_RUN];
};
#define GPU_RUN_UNROLL (sizeof(gpu_vec_run) <= 16 ? 4 : 2)   // runs in flight

// The sum over count runs at p and q, p_step and q_step bytes apart (16-byte aligned).
__device__ __forceinline__ gpu_acc_t gpu_run_sum(const char *p, long long p_step, const char *q,
                                                 long long q_step, long long count) {
  gpu_acc_t part[GPU_RUN_UNROLL];
#pragma unroll
  for (int u = 0; u < GPU_RUN_UNROLL; u++) part[u] = (gpu_acc_t)0;
  long long i = 0;
  for (; i + GPU_RUN_UNROLL <= count; i += GPU_RUN_UNROLL) {
    gpu_mat_run x[GPU_RUN_UNROLL];
    gpu_vec_run y[GPU_RUN_UNROLL];
#pragma unroll
    for (int u = 0; u < GPU_RUN_UNROLL; u++) {
      x[u] = *(const gpu_mat_run *)(p + u * p_step);
      y[u] = *(const gpu_vec_run *)(q + u * q_step);
    }
#pragma unroll
    for (int u = 0; u < GPU_RUN_UNROLL; u++)
#pragma unroll
      for (int e = 0; e < GPU_RUN; e++)
        part[u] = gpu_multiply_add(part[u], gpu_convert_mat(x[u].v[e]), gpu_convert_vec(y[u].v[e]));
    p += GPU_RUN_UNROLL * p_step;
    q += GPU_RUN_UNROLL * q_step;
  }
  for (; i < count; i++, p += p_step, q += q_step) {
    const gpu_mat_run x = *(const gpu_mat_run *)p;
    const gpu_vec_run y = *(const gpu_vec_run *)q;
#pragma unroll
    for (int e = 0; e < GPU_RUN; e++)
      part[0] = gpu_multiply_add(part[0], gpu_convert_mat(x.v[e]), gpu_convert_vec(y.v[e]));
  }
  gpu_acc_t sum = part[0];
#pragma unroll
  for (int u = 1; u < GPU_RUN_UNROLL; u++) sum = sum + part[u];
  return sum;
}

// dest: out (batches x rows, contiguous) when gridDim.y is 1, else the partial sums
// (gridDim.y x batches x rows accumulators).  Sums of partial sums are plain additions, which
// is also right for integers (modular) and bools (any nonzero is true).
template <bool RUNS>
__device__ __forceinline__ void gpu_matvec_body(void *dest, const char *mat,
                                                const gpu_layout &mat_batches,
                                                long long row_stride, long long k_stride,
                                                const char *vec, const gpu_layout &vec_batches,
                                                long long vec_stride, long long rows, long long k,
                                                long long batches, long long split_k, int shares,
                                                int along_k) {
  __shared__ gpu_acc_t sums[GPU_BLOCK];
  const int t = threadIdx.x;
  const gpu_sharing s = gpu_share_out(GPU_BLOCK, shares, along_k, k, split_k);
  const int block_rows = s.sums, share = s.share;
  const long long k_lo = s.lo, k_hi = s.hi;
  // the thread's elements of its row: from first on, every shares-th element, or run
  const long long unit = RUNS ? GPU_RUN : 1;
  const long long units = (k_hi - k_lo) / unit;
  const long long first = k_lo + share * unit;
  const long long mine = share < units ? (units - share + shares - 1) / shares : 0;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const char *mb = mat + gpu_offset(mat_batches, batch);
    const char *vb = vec + gpu_offset(vec_batches, batch);
    // every thread of the block runs every iteration, so the barriers are reached by all
    for (long long row0 = (long long)blockIdx.x * block_rows; row0 < rows;
         row0 += (long long)gridDim.x * block_rows) {
      const long long row = row0 + s.sum;
      const char *line = mb + row * row_stride;
      // a count, not an if: a thread past the last row sums nothing
      const long long count = row < rows ? mine : 0;
      gpu_acc_t acc;
      if (RUNS) {
        acc = gpu_run_sum(line + first * k_stride, shares * unit * k_stride,
                          vb + first * vec_stride, shares * unit * vec_stride, count);
        for (long long j = k_lo + units * unit + share; row < rows && j < k_hi; j += shares)
          acc = gpu_multiply_add(acc, gpu_load_mat(line + j * k_stride),   // after the runs
                                 gpu_load_vec(vb + j * vec_stride));
      } else {
        acc = gpu_strided_sum(line + first * k_stride, shares * k_stride,
                              vb + first * vec_stride, shares * vec_stride, count);
      }
      sums[t] = acc;
      gpu_combine_shares(sums, s, shares, [](gpu_acc_t x, gpu_acc_t y) { return x + y; });
      if (share == 0 && row < rows) {
        if (gridDim.y == 1)
          ((gpu_out_t *)dest)[batch * rows + row] = gpu_store(sums[t]);
        else
          ((gpu_acc_t *)dest)[(blockIdx.y * batches + batch) * rows + row] = sums[t];
      }
    }
  }
}

// Three blocks a multiprocessor (80 registers): left free, the compiler took 104 for float32's
// runs and 76 elsewhere and scheduled each multiply-add right after its loads; 8192 x 8192
// float32 went from 2.0 to 2.75 TB/s in runs and from 0.9 to 2.6 TB/s transposed (four blocks,
// 64 registers: 2.7 and 2.2).
#define GPU_MIN_BLOCKS 3

// (The parameters are written out: the library reads a kernel's parameter types from its
// source, macros unexpanded.)
extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_MIN_BLOCKS)
gpu_matvec(void *dest, const char *mat, gpu_layout mat_batches, long long row_stride,
           long long k_stride, const char *vec, gpu_layout vec_batches, long long vec_stride,
           long long rows, long long k, long long batches, long long split_k, int shares,
           int along_k) {
  gpu_matvec_body<false>(dest, mat, mat_batches, row_stride, k_stride, vec, vec_batches,
                         vec_stride, rows, k, batches, split_k, shares, along_k);
}

// Needs along_k, k_stride and vec_stride the elements' sizes, and mat's rows and vec
// aligned to 16 bytes and to a run of vec; split_k a multiple of GPU_RUN.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_MIN_BLOCKS)
gpu_matvec_runs(void *dest, const char *mat, gpu_layout mat_batches, long long row_stride,
                long long k_stride, const char *vec, gpu_layout vec_batches, long long vec_stride,
                long long rows, long long k, long long batches, long long split_k, int shares,
                int along_k) {
  gpu_matvec_body<true>(dest, mat, mat_batches, row_stride, k_stride, vec, vec_batches,
                        vec_stride, rows, k, batches, split_k, shares, along_k);
}

// out[i] = the sum of partials[s][i] over the splits s of k, for i < count (batches x rows).
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_matvec_finish(gpu_out_t *out, const gpu_acc_t *partials, long long count, long long splits) {
  for (long long i = (long long)blockIdx.x * GPU_BLOCK + threadIdx.x; i < count;
       i += (long long)gridDim.x * GPU_BLOCK) {
    gpu_acc_t total = (gpu_acc_t)0;
    for (long long s = 0; s < splits; s++) total = total + partials[s * count + i];
    out[i] = gpu_store(total);
  }
}

// Products with a few columns (2 to 16: a n x k times b k x cols, or, with one side transposed,
// b's transpose times a's), where the tile kernel of matmul.cu would leave most of each tile
// idle.  mat (rows x k) must be adjacent along k and 16-byte aligned row by row
// (gpu_matvec_runs' conditions); vec (k x cols) may have any strides.  Like a matrix-vector
// product the product is bound by reading mat once, but each element of mat meets cols
// elements of vec, and the lanes of a warp, adjacent along k, would each read another row of
// vec (one cache line a lane).  So a block stages a chunk of vec (32 KB) at a time in shared
// memory, column by column and converted to the accumulator; a lane then reads the run of a
// column that matches its run of mat in one load, without bank conflicts.  A warp takes
// gpu_narrow_rows(COLS) rows of mat at once, so each staged element is read once for all of
// them, and keeps gpu_narrow_in_flight(COLS) runs of each row in flight.  (Staging the next
// chunk while multiplying with the current one, in two buffers of 16 KB, was slower: the
// registers holding the next chunk spilled.)  The result of row r and column c goes to
// dest[batch * rows * cols + r * out_row + c * out_col]; when blockIdx.y splits k (as in
// gpu_matvec), to partials laid out the same way, for gpu_matvec_finish.  gpu_matmul_narrow4
// takes up to 4 columns, gpu_matmul_narrow8 up to 8 (in half as long chunks) and
// gpu_matmul_narrow16 up to 16 (half as long again; lua/gpu/matmul.lua uses it for 4-byte
// accumulators only).
#define GPU_NARROW_WARPS (GPU_BLOCK / 32)
// rows a warp takes, as many as the accumulators leave registers for (lua/gpu/matmul.lua's
// narrow_rows), and runs of each row a lane has in flight (float64 by 8 columns: one row or
// four took 405 and 340 us, two rows 370 with two runs in flight and 336 with one; float32:
// two runs 113 us, one 122, four 140; float32 by 16 columns: two rows with two runs in flight
// 332 us, four rows with one 254, where the block's staging is amortized over twice the rows)
__device__ constexpr int gpu_narrow_rows(int cols) {
  return sizeof(gpu_acc_t) <= 4 ? 4 : sizeof(gpu_acc_t) == 8 && cols <= 8 ? 2 : 1;
}
__device__ constexpr int gpu_narrow_in_flight(int cols) {
  return sizeof(gpu_acc_t) <= 4 && cols <= 8 ? 2 : 1;
}
#define GPU_NARROW_BUFFER (32768 / (int)sizeof(gpu_acc_t))   // a chunk: 32 KB
#define GPU_NARROW_STEP (32 * (int)GPU_RUN)                  // elements of k a warp reads a step
struct alignas(GPU_RUN * sizeof(gpu_acc_t) < 16 ? GPU_RUN * sizeof(gpu_acc_t) : 16) gpu_acc_run {
  gpu_acc_t v[GPU_RUN];
};

// Where a product of a few columns goes: the sum o of a range of k to dest, which is out when
// gridDim.y is 1 and the partial sums (count a range) otherwise.
__device__ __forceinline__ void gpu_few_store(void *dest, long long o, long long count, gpu_acc_t sum) {
  if (gridDim.y == 1) ((gpu_out_t *)dest)[o] = gpu_store(sum);
  else ((gpu_acc_t *)dest)[blockIdx.y * count + o] = sum;
}

// The chunk length of COLS columns, and how a block stages a chunk: thread t takes elements
// i = t + u GPU_BLOCK (column i / CHUNK), GPU_NARROW_LOADS of them in flight at a time (one
// at a time, staging took as long as reading the chunk's mat).
#define GPU_NARROW_LOADS 16
template <int COLS>
struct gpu_narrow_stage {
  static constexpr int CHUNK = GPU_NARROW_BUFFER / COLS;
  static constexpr int EACH = COLS * CHUNK / GPU_BLOCK;
  static constexpr int LOADS = EACH < GPU_NARROW_LOADS ? EACH : GPU_NARROW_LOADS;
  static_assert(COLS * CHUNK % GPU_BLOCK == 0 && EACH % LOADS == 0, "whole groups of loads");

  // staged = the first `chunk` rows of vec's columns c < cols (zeros after them).  A loop
  // over the groups of loads, not unrolled: unrolled, the compiler kept every element's offset
  // in registers across the whole product, and spilled.
  static __device__ __forceinline__ void stage(gpu_acc_t *staged, const char *vec, long long vec_stride,
                                               long long col_stride, int cols, int chunk) {
#pragma unroll 1
    for (int u0 = 0; u0 < EACH; u0 += LOADS) {
      gpu_acc_t v[LOADS];
#pragma unroll
      for (int u = 0; u < LOADS; u++) {
        const int i = (u0 + u) * GPU_BLOCK + (int)threadIdx.x, c = i / CHUNK, j = i % CHUNK;
        v[u] = c < cols && j < chunk ? gpu_load_vec(vec + j * vec_stride + c * col_stride) : (gpu_acc_t)0;
      }
#pragma unroll
      for (int u = 0; u < LOADS; u++) staged[(u0 + u) * GPU_BLOCK + threadIdx.x] = v[u];
    }
  }
};

// acc[r][c] += the product of the runs x[r] of mat and the staged runs at offset `at` of
// each column c < cols.
template <int COLS>
__device__ __forceinline__ void gpu_narrow_add(gpu_acc_t (&acc)[gpu_narrow_rows(COLS)][COLS],
                                               const gpu_mat_run (&x)[gpu_narrow_rows(COLS)],
                                               const gpu_acc_t *staged, int at, int cols) {
#pragma unroll
  for (int c = 0; c < COLS; c++) {
    if (c < cols) {
      const gpu_acc_run y = *(const gpu_acc_run *)&staged[c * gpu_narrow_stage<COLS>::CHUNK + at];
#pragma unroll
      for (int r = 0; r < gpu_narrow_rows(COLS); r++)
#pragma unroll
        for (int e = 0; e < (int)GPU_RUN; e++)
          acc[r][c] = gpu_multiply_add(acc[r][c], gpu_convert_mat(x[r].v[e]), y.v[e]);
    }
  }
}

// acc += the product of the warp's rows (lines) with the staged chunk of `chunk` rows of vec,
// whose first element is at element j0 of each line.
template <int COLS>
__device__ __forceinline__ void gpu_narrow_chunk(gpu_acc_t (&acc)[gpu_narrow_rows(COLS)][COLS],
                                                 const char *const (&line)[gpu_narrow_rows(COLS)],
                                                 long long j0, const gpu_acc_t *staged, int chunk,
                                                 int cols) {
  constexpr int IN_FLIGHT = gpu_narrow_in_flight(COLS);
  const int lane = threadIdx.x % 32;
  const int runs = chunk / (int)GPU_RUN;
  int at = lane * (int)GPU_RUN;
  // whole runs, IN_FLIGHT steps at a time while they fit in the chunk
  for (; at + (IN_FLIGHT - 1) * GPU_NARROW_STEP < runs * (int)GPU_RUN; at += IN_FLIGHT * GPU_NARROW_STEP) {
    gpu_mat_run x[IN_FLIGHT][gpu_narrow_rows(COLS)];
#pragma unroll
    for (int s = 0; s < IN_FLIGHT; s++)
#pragma unroll
      for (int r = 0; r < gpu_narrow_rows(COLS); r++)
        x[s][r] = *(const gpu_mat_run *)(line[r] + (j0 + at + s * GPU_NARROW_STEP) * sizeof(gpu_mat_t));
#pragma unroll
    for (int s = 0; s < IN_FLIGHT; s++)
      gpu_narrow_add<COLS>(acc, x[s], staged, at + s * GPU_NARROW_STEP, cols);
  }
  for (; at < runs * (int)GPU_RUN; at += GPU_NARROW_STEP) {
    gpu_mat_run x[gpu_narrow_rows(COLS)];
#pragma unroll
    for (int r = 0; r < gpu_narrow_rows(COLS); r++)
      x[r] = *(const gpu_mat_run *)(line[r] + (j0 + at) * sizeof(gpu_mat_t));
    gpu_narrow_add<COLS>(acc, x, staged, at, cols);
  }
  // the last elements, fewer than a run (the staged ones past them are zero)
  for (int j = runs * (int)GPU_RUN + lane; j < chunk; j += 32)
#pragma unroll
    for (int c = 0; c < COLS; c++)
      if (c < cols)
#pragma unroll
        for (int r = 0; r < gpu_narrow_rows(COLS); r++)
          acc[r][c] = gpu_multiply_add(acc[r][c], gpu_load_mat(line[r] + (j0 + j) * sizeof(gpu_mat_t)),
                                       staged[c * gpu_narrow_stage<COLS>::CHUNK + j]);
}

template <int COLS>
__device__ __forceinline__ void gpu_narrow_body(void *dest, const char *mat,
                                                const gpu_layout &mat_batches,
                                                long long row_stride, const char *vec,
                                                const gpu_layout &vec_batches, long long vec_stride,
                                                long long col_stride, long long rows, long long k,
                                                int cols, long long out_row, long long out_col,
                                                long long batches, long long split_k) {
  constexpr int CHUNK = gpu_narrow_stage<COLS>::CHUNK;
  __shared__ __align__(16) gpu_acc_t staged[GPU_NARROW_BUFFER];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long k_lo = (long long)blockIdx.y * split_k;
  const long long k_hi = k_lo + split_k < k ? k_lo + split_k : k;
  const long long block_rows = GPU_NARROW_WARPS * gpu_narrow_rows(COLS);
  const long long count = batches * rows * cols;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const char *mb = mat + gpu_offset(mat_batches, batch);
    const char *vb = vec + gpu_offset(vec_batches, batch);
    // every thread of the block runs every iteration, so the barriers are reached by all
    for (long long row0 = (long long)blockIdx.x * block_rows; row0 < rows;
         row0 += (long long)gridDim.x * block_rows) {
      // the warp's rows; those past the last read the last one again, and store nothing
      const char *line[gpu_narrow_rows(COLS)];
#pragma unroll
      for (int r = 0; r < gpu_narrow_rows(COLS); r++) {
        const long long row = row0 + warp * gpu_narrow_rows(COLS) + r;
        line[r] = mb + (row < rows ? row : rows - 1) * row_stride;
      }
      gpu_acc_t acc[gpu_narrow_rows(COLS)][COLS];
#pragma unroll
      for (int r = 0; r < gpu_narrow_rows(COLS); r++)
#pragma unroll
        for (int c = 0; c < COLS; c++) acc[r][c] = (gpu_acc_t)0;
      for (long long j0 = k_lo; j0 < k_hi; j0 += CHUNK) {
        const int chunk = (int)(k_hi - j0 < CHUNK ? k_hi - j0 : CHUNK);
        __syncthreads();   // the previous chunk's readers are done
        gpu_narrow_stage<COLS>::stage(staged, vb + j0 * vec_stride, vec_stride, col_stride, cols, chunk);
        __syncthreads();
        gpu_narrow_chunk<COLS>(acc, line, j0, staged, chunk, cols);
      }
      // the warp's lanes add up their sums
#pragma unroll
      for (int r = 0; r < gpu_narrow_rows(COLS); r++)
#pragma unroll
        for (int c = 0; c < COLS; c++)
          for (int o = 16; o > 0; o >>= 1) acc[r][c] = acc[r][c] + gpu_shfl_down(acc[r][c], o);
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < gpu_narrow_rows(COLS); r++) {
          const long long row = row0 + warp * gpu_narrow_rows(COLS) + r;
#pragma unroll
          for (int c = 0; c < COLS; c++) {
            if (c < cols && row < rows)
              gpu_few_store(dest, batch * rows * cols + row * out_row + c * out_col, count, acc[r][c]);
          }
        }
      }
    }
  }
}

// Two blocks a multiprocessor (128 registers): left free, the compiler took up to 254.
#define GPU_NARROW_MIN_BLOCKS 2

// (The parameters are written out: see gpu_matvec.)
extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_NARROW_MIN_BLOCKS)
gpu_matmul_narrow4(void *dest, const char *mat, gpu_layout mat_batches, long long row_stride,
                   const char *vec, gpu_layout vec_batches, long long vec_stride,
                   long long col_stride, long long rows, long long k, int cols, long long out_row,
                   long long out_col, long long batches, long long split_k) {
  gpu_narrow_body<4>(dest, mat, mat_batches, row_stride, vec, vec_batches, vec_stride, col_stride,
                     rows, k, cols, out_row, out_col, batches, split_k);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_NARROW_MIN_BLOCKS)
gpu_matmul_narrow16(void *dest, const char *mat, gpu_layout mat_batches, long long row_stride,
                    const char *vec, gpu_layout vec_batches, long long vec_stride,
                    long long col_stride, long long rows, long long k, int cols, long long out_row,
                    long long out_col, long long batches, long long split_k) {
  gpu_narrow_body<16>(dest, mat, mat_batches, row_stride, vec, vec_batches, vec_stride, col_stride,
                      rows, k, cols, out_row, out_col, batches, split_k);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_NARROW_MIN_BLOCKS)
gpu_matmul_narrow8(void *dest, const char *mat, gpu_layout mat_batches, long long row_stride,
                   const char *vec, gpu_layout vec_batches, long long vec_stride,
                   long long col_stride, long long rows, long long k, int cols, long long out_row,
                   long long out_col, long long batches, long long split_k) {
  gpu_narrow_body<8>(dest, mat, mat_batches, row_stride, vec, vec_batches, vec_stride, col_stride,
                     rows, k, cols, out_row, out_col, batches, split_k);
}

// Products with a few columns (2 to 8) where the wide operand's rows, not its k, are adjacent
// in memory: a few rows of a times a row-major b (b's transpose is mat: its rows are b's
// columns), or a transposed view of a times a few columns.  A thread takes GPU_ACROSS_RUN
// adjacent rows of mat and reads them in one load at each k, so a warp's loads are adjacent;
// the block's threads are GPU_ACROSS_SHARES shares of GPU_ACROSS_GROUPS such groups, each
// share every GPU_ACROSS_SHARES-th element of k, which puts several loads of a row group in
// flight across the block.  All lanes of a warp are at the same k, so their loads of vec are
// one broadcast.  The shares then add up their sums in shared memory, column by column.  rows
// must be a multiple of GPU_ACROSS_RUN and mat's rows aligned to a run.  The results and the
// split of k among blocks are as gpu_matmul_narrow's.  (The tile kernel took 363 us for 4 x
// 8192 float32 by 8192 x 8192.  With 16 columns' accumulators a thread, 16 rows took 418 us
// there against the tile kernel's 393, so more than 8 take the tile kernel.)
#define GPU_ACROSS_RUN ((int)GPU_RUN < 4 ? (int)GPU_RUN : 4)
#define GPU_ACROSS_SHARES 4
#define GPU_ACROSS_GROUPS (GPU_BLOCK / GPU_ACROSS_SHARES)
#define GPU_ACROSS_ROWS (GPU_ACROSS_GROUPS * GPU_ACROSS_RUN)    // rows of mat a block takes
#define GPU_ACROSS_UNROLL 4                                      // loads of a thread in flight
struct alignas(GPU_ACROSS_RUN * sizeof(gpu_mat_t)) gpu_mat_across { gpu_mat_t v[GPU_ACROSS_RUN]; };

template <int COLS>
__device__ __forceinline__ void gpu_across_add(gpu_acc_t (&acc)[COLS][GPU_ACROSS_RUN],
                                               const gpu_mat_across &x, const char *v,
                                               long long col_stride, int cols) {
#pragma unroll
  for (int c = 0; c < COLS; c++) {
    if (c < cols) {
      const gpu_acc_t y = gpu_load_vec(v + c * col_stride);
#pragma unroll
      for (int e = 0; e < GPU_ACROSS_RUN; e++) acc[c][e] = gpu_multiply_add(acc[c][e], gpu_convert_mat(x.v[e]), y);
    }
  }
}

template <int COLS>
__device__ __forceinline__ void gpu_across_body(void *dest, const char *mat,
                                                const gpu_layout &mat_batches, long long k_stride,
                                                const char *vec, const gpu_layout &vec_batches,
                                                long long vec_stride, long long col_stride,
                                                long long rows, long long k, int cols,
                                                long long out_row, long long out_col,
                                                long long batches, long long split_k) {
  __shared__ gpu_acc_t sums[GPU_ACROSS_SHARES][GPU_ACROSS_ROWS];
  const int t = threadIdx.x, group = t % GPU_ACROSS_GROUPS, share = t / GPU_ACROSS_GROUPS;
  const long long k_lo = (long long)blockIdx.y * split_k;
  const long long k_hi = k_lo + split_k < k ? k_lo + split_k : k;
  const long long count = batches * rows * cols;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const char *mb = mat + gpu_offset(mat_batches, batch);
    const char *vb = vec + gpu_offset(vec_batches, batch);
    // every thread of the block runs every iteration, so the barriers are reached by all
    for (long long row0 = (long long)blockIdx.x * GPU_ACROSS_ROWS; row0 < rows;
         row0 += (long long)gridDim.x * GPU_ACROSS_ROWS) {
      // the group's rows; a group past the last row reads the last run again, stores nothing
      const long long first = row0 + group * GPU_ACROSS_RUN;
      const char *line = mb + (first < rows ? first : rows - GPU_ACROSS_RUN) * (long long)sizeof(gpu_mat_t);
      gpu_acc_t acc[COLS][GPU_ACROSS_RUN];
#pragma unroll
      for (int c = 0; c < COLS; c++)
#pragma unroll
        for (int e = 0; e < GPU_ACROSS_RUN; e++) acc[c][e] = (gpu_acc_t)0;
      long long j = k_lo + share;
      for (; j + (GPU_ACROSS_UNROLL - 1) * GPU_ACROSS_SHARES < k_hi;
           j += GPU_ACROSS_UNROLL * GPU_ACROSS_SHARES) {
        gpu_mat_across x[GPU_ACROSS_UNROLL];
#pragma unroll
        for (int u = 0; u < GPU_ACROSS_UNROLL; u++)
          x[u] = *(const gpu_mat_across *)(line + (j + u * GPU_ACROSS_SHARES) * k_stride);
#pragma unroll
        for (int u = 0; u < GPU_ACROSS_UNROLL; u++)
          gpu_across_add<COLS>(acc, x[u], vb + (j + u * GPU_ACROSS_SHARES) * vec_stride, col_stride, cols);
      }
      for (; j < k_hi; j += GPU_ACROSS_SHARES)
        gpu_across_add<COLS>(acc, *(const gpu_mat_across *)(line + j * k_stride), vb + j * vec_stride,
                             col_stride, cols);
      // the shares' sums added up, a column at a time
#pragma unroll
      for (int c = 0; c < COLS; c++) {
        if (c < cols) {
#pragma unroll
          for (int e = 0; e < GPU_ACROSS_RUN; e++) sums[share][group * GPU_ACROSS_RUN + e] = acc[c][e];
          __syncthreads();
          for (int i = t; i < GPU_ACROSS_ROWS; i += GPU_BLOCK) {
            gpu_acc_t total = sums[0][i];
#pragma unroll
            for (int s = 1; s < GPU_ACROSS_SHARES; s++) total = total + sums[s][i];
            const long long row = row0 + i;
            if (row < rows) gpu_few_store(dest, batch * rows * cols + row * out_row + c * out_col, count, total);
          }
          __syncthreads();
        }
      }
    }
  }
}

// (The parameters are written out: see gpu_matvec.)
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_matmul_across4(void *dest, const char *mat, gpu_layout mat_batches, long long k_stride,
                   const char *vec, gpu_layout vec_batches, long long vec_stride,
                   long long col_stride, long long rows, long long k, int cols, long long out_row,
                   long long out_col, long long batches, long long split_k) {
  gpu_across_body<4>(dest, mat, mat_batches, k_stride, vec, vec_batches, vec_stride, col_stride,
                     rows, k, cols, out_row, out_col, batches, split_k);
}

extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_matmul_across8(void *dest, const char *mat, gpu_layout mat_batches, long long k_stride,
                   const char *vec, gpu_layout vec_batches, long long vec_stride,
                   long long col_stride, long long rows, long long k, int cols, long long out_row,
                   long long out_col, long long batches, long long split_k) {
  gpu_across_body<8>(dest, mat, mat_batches, k_stride, vec, vec_batches, vec_stride, col_stride,
                     rows, k, cols, out_row, out_col, batches, split_k);
}
