// matmul.cu: stacks of matrix products, for gpuarray.matmul (lua/gpu/matmul.lua fills in the
// dollar names).
//
// out[batch] = a[batch] (n x k) times b[batch] (k x m).  a and b are read through byte
// strides (any view, broadcast batches with stride 0), each batch found by its flat index
// through a gpu_layout; out is contiguous.  A block of 16 x 16 threads computes a T x T tile
// of out, each thread P x P of its elements (P = 8, T = 128; P = 4, T = 64 for complex and
// 64-bit integer accumulators, which would not fit in registers, and for products of fewer big
// tiles than multiprocessors: lua/gpu/matmul.lua chooses), from T x 16 and 16 x T tiles of a
// and b staged in shared memory.  A thread's rows, and columns, come in runs of 4 adjacent
// ones, so it reads each run from shared memory in one vector load.  While a block computes
// with one pair of tiles, its loads of the next are in flight into registers.  Correct for
// every size and dtype, and below a tuned BLAS's speed.  Elements convert to the accumulator
// as they are staged (integers accumulate in unsigned arithmetic as wide as the result or
// wider, which wraps as NumPy's fixed-width sums do once the store truncates).  On devices of compute capability 8.0 and
// later, float64 and complex128 products, and products of two float16 or two bfloat16
// matrices, multiply the same staged tiles on the tensor cores instead (GPU_TENSOR_CORES).

#define GPU_THREADS 16                        // threads along each side of a block
#define GPU_PER_THREAD $PER_THREAD            // rows, and columns, of out per thread
#define GPU_TILE (GPU_THREADS * GPU_PER_THREAD)
#define GPU_DEPTH 16                          // the k extent of a staged tile
#define GPU_TENSOR_CORES $TENSOR_CORES        // on the tensor cores: 1 float64, 2 complex128,
                                              // 3 float16, 4 bfloat16
#define GPU_RUN 4                             // adjacent rows, or columns, a thread owns
#define GPU_RUN_SPAN (GPU_THREADS * GPU_RUN)  // the rows, or columns, of one run of each thread
// Rows of a staged tile are padded by a run: vector loads stay aligned, and the stores of a
// tile staged along k hit each bank at most twice.
#define GPU_TILE_ROW (GPU_TILE + GPU_RUN)

typedef $A_T gpu_a_t;
typedef $B_T gpu_b_t;
typedef $ACC_T gpu_acc_t;
typedef $OUT_T gpu_out_t;

__device__ __forceinline__ gpu_acc_t gpu_convert_a(gpu_a_t x) { return $LOAD_A; }
__device__ __forceinline__ gpu_acc_t gpu_convert_b(gpu_b_t x) { return $LOAD_B; }
__device__ __forceinline__ gpu_acc_t gpu_load_a(const char *p) {
  return gpu_convert_a(*(const gpu_a_t *)p);
}
__device__ __forceinline__ gpu_acc_t gpu_load_b(const char *p) {
  return gpu_convert_b(*(const gpu_b_t *)p);
}
__device__ __forceinline__ gpu_acc_t gpu_multiply_add(gpu_acc_t acc, gpu_acc_t x, gpu_acc_t y) {
  return $MULTIPLY_ADD;
}
__device__ __forceinline__ gpu_out_t gpu_store(gpu_acc_t acc) { return $STORE; }

// A run of accumulators, read from shared memory in one load (two or four for 8- and 16-byte
// accumulators: 16 bytes is the widest).
struct alignas(GPU_RUN * sizeof(gpu_acc_t) < 16 ? GPU_RUN * sizeof(gpu_acc_t) : 16) gpu_run {
  gpu_acc_t v[GPU_RUN];
};

// How a thread stages its share of one operand's tile.  A tile has GPU_TILE lines (rows of a,
// columns of b) of GPU_DEPTH elements along k; the thread's s-th element is at line
// line0 + s line_delta, depth depth0 + s depth_delta.  Threads next to each other take
// elements next to each other in memory, along k or along the lines, whichever the strides
// make adjacent: loads coalesce for a matrix and for a transposed view alike.
struct gpu_stager {
  const char *at;           // the thread's s = 0 element in the tile at the current k0
  long long step;           // bytes from one s to the next
  long long tile_step;      // bytes from one tile to the next along k
  long long lines_left;     // lines of the matrix from the thread's line0 on
  int line0, depth0, line_delta, depth_delta;
};

__device__ gpu_stager gpu_stage_from(const char *matrix, long long line_stride,
                                     long long k_stride, long long first_line,
                                     long long lines, int t) {
  const bool along_k = llabs(k_stride) <= llabs(line_stride);
  gpu_stager st;
  st.line0 = along_k ? t / GPU_DEPTH : t % GPU_TILE;
  st.depth0 = along_k ? t % GPU_DEPTH : t / GPU_TILE;
  st.line_delta = along_k ? GPU_THREADS * GPU_THREADS / GPU_DEPTH : 0;
  st.depth_delta = along_k ? 0 : GPU_THREADS * GPU_THREADS / GPU_TILE;
  st.at = matrix + (first_line + st.line0) * line_stride + st.depth0 * k_stride;
  st.step = st.line_delta * line_stride + st.depth_delta * k_stride;
  st.tile_step = GPU_DEPTH * k_stride;
  st.lines_left = lines - first_line - st.line0;
  return st;
}

// The thread's elements of the tile at k0 (zero outside the matrix), as the matrix holds
// them: converted only when staged, so that nothing waits on these loads while the block
// computes with the tiles before (converting here made float16 products wait on every load:
// 13.4 TFLOP/s at 4096^3 against float32's 37).
template <typename T>
__device__ __forceinline__ void gpu_stage_load(const gpu_stager &st, long long k0, long long k,
                                               T next[GPU_PER_THREAD]) {
  const char *p = st.at;
#pragma unroll
  for (int s = 0; s < GPU_PER_THREAD; s++, p += st.step)
    next[s] = (s * st.line_delta < st.lines_left && k0 + st.depth0 + s * st.depth_delta < k)
              ? *(const T *)p : (T)0;
}

template <typename T, typename Convert>
__device__ __forceinline__ void gpu_stage_store(const gpu_stager &st,
                                                gpu_acc_t tile[GPU_DEPTH][GPU_TILE_ROW],
                                                const T next[GPU_PER_THREAD], Convert convert) {
#pragma unroll
  for (int s = 0; s < GPU_PER_THREAD; s++)
    tile[st.depth0 + s * st.depth_delta][st.line0 + s * st.line_delta] = convert(next[s]);
}

#if GPU_TENSOR_CORES
// float64 and complex128 on the tensor cores (sm_80 and later).  mma.m8n8k4 multiplies an
// 8 x 4 piece of a by a 4 x 8 piece of b into 8 x 8 doubles across a warp: lane l holds a's
// element (l / 4, l % 4), b's (l % 4, l / 4) and the result's (l / 4, 2 (l % 4) + i), i < 2.
// mma.m16n8k4 (sm_90) stacks two such pieces of a and of the result: rows r and r + 8.  The
// block's 8 warps cover the tile 2 down and 4 across, each warp GPU_WARP_ROWS x GPU_WARP_COLS
// in GPU_MMA_ROWS x 8 pieces (the same P x P results a thread as on the other path).  A
// complex product is four real ones: re += a.re b.re - a.im b.im, im += a.re b.im + a.im b.re.
#define GPU_MMA_ROWS $MMA_ROWS                 // 8 or 16: mma.m8n8k4 or mma.m16n8k4 (16-bit
                                               // floats: mma.m16n8k16, below)
#define GPU_MMA_HALVES (GPU_MMA_ROWS / 8)      // a's elements a lane holds a piece
#define GPU_WARP_ROWS (GPU_TILE / 2)
#define GPU_WARP_COLS (GPU_TILE / 4)
#define GPU_ROW_PIECES (GPU_WARP_ROWS / GPU_MMA_ROWS)
#define GPU_COL_PIECES (GPU_WARP_COLS / 8)
#define GPU_PARTS (GPU_TENSOR_CORES == 2 ? 2 : 1)   // 2 for complex128 (re, im)
#if GPU_TENSOR_CORES >= 3
typedef float gpu_mma_t;                       // the instruction's accumulators
#else
typedef double gpu_mma_t;
#endif

__device__ __forceinline__ double gpu_part(double x, int) { return x; }
__device__ __forceinline__ double gpu_part(const lg_complex128 &z, int part) {
  return part ? z.im : z.re;
}
#if GPU_PARTS == 2
__device__ __forceinline__ gpu_acc_t gpu_join(const double *parts) {
  return gpu_acc_t(parts[0], parts[1]);
}
#else
__device__ __forceinline__ gpu_acc_t gpu_join(const gpu_mma_t *parts) { return parts[0]; }
#endif

// d[part][p][q]: the part of the lane's elements of piece (p, q)
struct gpu_accumulators { gpu_mma_t d[GPU_PARTS][GPU_ROW_PIECES][GPU_COL_PIECES][2 * GPU_MMA_HALVES]; };

__device__ __forceinline__ void gpu_clear(gpu_accumulators &acc) {
#pragma unroll
  for (int part = 0; part < GPU_PARTS; part++)
#pragma unroll
    for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
      for (int q = 0; q < GPU_COL_PIECES; q++)
#pragma unroll
        for (int i = 0; i < 2 * GPU_MMA_HALVES; i++) acc.d[part][p][q][i] = (gpu_mma_t)0;
}

#if GPU_TENSOR_CORES >= 3
// float16 and bfloat16: mma.m16n8k16 multiplies a 16 x 16 piece of a by a 16 x 8 piece of b
// into 16 x 8 floats, which lanes hold as mma.m16n8k4's results.  Lane l (g = l / 4,
// c = 2 (l % 4)) holds a's elements (g + 8 (r % 2), c + 8 (r / 2) + e) in its register r < 4
// and b's (c + 8 r + e, g) in register r < 2, element e < 2 in the register's e-th half.  The
// tiles hold the operands converted to float, exactly, and pairs of them go back to 16 bits,
// exactly, for the instruction: products are exact and summed in float, as cuBLAS does with
// float accumulators.

// The 16-bit pair (low, high) in one register, low in the low half.
__device__ __forceinline__ unsigned gpu_pair(float low, float high) {
#if GPU_TENSOR_CORES == 3
  return (unsigned)gpu_float_to_half(low) | (unsigned)gpu_float_to_half(high) << 16;
#else
  return __float_as_uint(low) >> 16 | (__float_as_uint(high) & 0xffff0000u);
#endif
}

// d += the piece of a in x times the piece of b in y
__device__ __forceinline__ void gpu_mma16(float *d, const unsigned x[4], const unsigned y[2]) {
#if GPU_TENSOR_CORES == 3
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
#endif
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
}

// acc += the staged pair of tiles' product
__device__ __forceinline__ void gpu_multiply_tiles(gpu_accumulators &acc,
                                                   const gpu_acc_t (*a_tile)[GPU_TILE_ROW],
                                                   const gpu_acc_t (*b_tile)[GPU_TILE_ROW], int t) {
  const int warp = t / 32, lane = t % 32, c = 2 * (lane % 4);
  const int row = (warp / 4) * GPU_WARP_ROWS + lane / 4, col = (warp % 4) * GPU_WARP_COLS + lane / 4;
#pragma unroll
  for (int j = 0; j < GPU_DEPTH; j += 16) {
    unsigned x[GPU_ROW_PIECES][4], y[GPU_COL_PIECES][2];
#pragma unroll
    for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const int i = row + 16 * p + 8 * (r % 2), k = j + c + 8 * (r / 2);
        x[p][r] = gpu_pair(a_tile[k][i], a_tile[k + 1][i]);
      }
#pragma unroll
    for (int q = 0; q < GPU_COL_PIECES; q++)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const int k = j + c + 8 * r;
        y[q][r] = gpu_pair(b_tile[k][col + 8 * q], b_tile[k + 1][col + 8 * q]);
      }
#pragma unroll
    for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
      for (int q = 0; q < GPU_COL_PIECES; q++) gpu_mma16(acc.d[0][p][q], x[p], y[q]);
  }
}

#else
// d += the piece of a in x times the piece of b in y
__device__ __forceinline__ void gpu_mma(double *d, const double x[GPU_MMA_HALVES], double y) {
#if GPU_MMA_ROWS == 16
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
      "{%0, %1, %2, %3};"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3]) : "d"(x[0]), "d"(x[1]), "d"(y));
#else
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(d[0]), "+d"(d[1]) : "d"(x[0]), "d"(y));
#endif
}

// acc += the staged pair of tiles' product
__device__ __forceinline__ void gpu_multiply_tiles(gpu_accumulators &acc,
                                                   const gpu_acc_t (*a_tile)[GPU_TILE_ROW],
                                                   const gpu_acc_t (*b_tile)[GPU_TILE_ROW], int t) {
  const int warp = t / 32, lane = t % 32;
  const int row = (warp / 4) * GPU_WARP_ROWS + lane / 4, col = (warp % 4) * GPU_WARP_COLS + lane / 4;
#pragma unroll
  for (int j = 0; j < GPU_DEPTH; j += 4) {
    // x[part][p]: the part of the lane's elements of a's piece p; y[part][q] of b's piece q
    double x[GPU_PARTS][GPU_ROW_PIECES][GPU_MMA_HALVES], y[GPU_PARTS][GPU_COL_PIECES];
#pragma unroll
    for (int part = 0; part < GPU_PARTS; part++) {
#pragma unroll
      for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
        for (int h = 0; h < GPU_MMA_HALVES; h++)
          x[part][p][h] = gpu_part(a_tile[j + lane % 4][row + GPU_MMA_ROWS * p + 8 * h], part);
#pragma unroll
      for (int q = 0; q < GPU_COL_PIECES; q++) y[part][q] = gpu_part(b_tile[j + lane % 4][col + 8 * q], part);
    }
#pragma unroll
    for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
      for (int q = 0; q < GPU_COL_PIECES; q++) {
        gpu_mma(acc.d[0][p][q], x[0][p], y[0][q]);
#if GPU_PARTS == 2
        double minus_im[GPU_MMA_HALVES];
#pragma unroll
        for (int h = 0; h < GPU_MMA_HALVES; h++) minus_im[h] = -x[1][p][h];
        gpu_mma(acc.d[0][p][q], minus_im, y[1][q]);
        gpu_mma(acc.d[1][p][q], x[0][p], y[1][q]);
        gpu_mma(acc.d[1][p][q], x[1][p], y[0][q]);
#endif
      }
  }
}
#endif

// Calls put(row, column, value) for each of the thread's results (row and column in the tile).
template <typename Put>
__device__ __forceinline__ void gpu_each_result(const gpu_accumulators &acc, int t, Put put) {
  const int warp = t / 32, lane = t % 32;
  const int row = (warp / 4) * GPU_WARP_ROWS + lane / 4;
  const int col = (warp % 4) * GPU_WARP_COLS + 2 * (lane % 4);
#pragma unroll
  for (int p = 0; p < GPU_ROW_PIECES; p++)
#pragma unroll
    for (int q = 0; q < GPU_COL_PIECES; q++)
#pragma unroll
      for (int i = 0; i < 2 * GPU_MMA_HALVES; i++) {
        gpu_mma_t parts[GPU_PARTS];
#pragma unroll
        for (int part = 0; part < GPU_PARTS; part++) parts[part] = acc.d[part][p][q][i];
        put(row + GPU_MMA_ROWS * p + 8 * (i / 2), col + 8 * q + i % 2, gpu_join(parts));
      }
}

#else
// On the CUDA cores: thread (tx, ty) owns rows ty * 4 + i + 64 g and columns tx * 4 + i + 64 g
// (i < 4), so a warp reads two a_tile runs (broadcasts) and 16 adjacent b_tile runs per step.
struct gpu_accumulators { gpu_acc_t v[GPU_PER_THREAD][GPU_PER_THREAD]; };

__device__ __forceinline__ void gpu_clear(gpu_accumulators &acc) {
#pragma unroll
  for (int p = 0; p < GPU_PER_THREAD; p++)
#pragma unroll
    for (int q = 0; q < GPU_PER_THREAD; q++) acc.v[p][q] = (gpu_acc_t)0;
}

// The tile's row, or column, of a thread's p-th one
__device__ __forceinline__ int gpu_line_of(int p, int thread_along) {
  return (p / GPU_RUN) * GPU_RUN_SPAN + thread_along * GPU_RUN + p % GPU_RUN;
}

// acc += the staged pair of tiles' product
__device__ __forceinline__ void gpu_multiply_tiles(gpu_accumulators &acc,
                                                   const gpu_acc_t (*a_tile)[GPU_TILE_ROW],
                                                   const gpu_acc_t (*b_tile)[GPU_TILE_ROW], int t) {
  const int tx = t % GPU_THREADS, ty = t / GPU_THREADS;
#pragma unroll
  for (int j = 0; j < GPU_DEPTH; j++) {
    gpu_acc_t x[GPU_PER_THREAD], y[GPU_PER_THREAD];
#pragma unroll
    for (int g = 0; g < GPU_PER_THREAD / GPU_RUN; g++) {
      const gpu_run xs = *(const gpu_run *)&a_tile[j][gpu_line_of(g * GPU_RUN, ty)];
      const gpu_run ys = *(const gpu_run *)&b_tile[j][gpu_line_of(g * GPU_RUN, tx)];
#pragma unroll
      for (int i = 0; i < GPU_RUN; i++) {
        x[g * GPU_RUN + i] = xs.v[i];
        y[g * GPU_RUN + i] = ys.v[i];
      }
    }
#pragma unroll
    for (int p = 0; p < GPU_PER_THREAD; p++)
#pragma unroll
      for (int q = 0; q < GPU_PER_THREAD; q++) acc.v[p][q] = gpu_multiply_add(acc.v[p][q], x[p], y[q]);
  }
}

// Calls put(row, column, value) for each of the thread's results (row and column in the tile).
template <typename Put>
__device__ __forceinline__ void gpu_each_result(const gpu_accumulators &acc, int t, Put put) {
  const int tx = t % GPU_THREADS, ty = t / GPU_THREADS;
#pragma unroll
  for (int p = 0; p < GPU_PER_THREAD; p++)
#pragma unroll
    for (int q = 0; q < GPU_PER_THREAD; q++) put(gpu_line_of(p, ty), gpu_line_of(q, tx), acc.v[p][q]);
}
#endif

// Blocks a multiprocessor must have registers for: 2 for 16-bit floats on the tensor cores
// (a few registers spill, but float16 4096^3 ran at 94 TFLOP/s against 78 with one), else 1
// (the compiler would spill float32's 8 x 8 accumulators: 25.6 TFLOP/s with two, 37.6 without).
#define GPU_MIN_BLOCKS $MIN_BLOCKS
extern "C" __global__ void __launch_bounds__(GPU_THREADS * GPU_THREADS, GPU_MIN_BLOCKS)
gpu_matmul(gpu_out_t *out, const char *a, gpu_layout a_batches, long long a_row, long long a_col,
           const char *b, gpu_layout b_batches, long long b_row, long long b_col, long long n,
           long long k, long long m, long long batches) {
  // a_tile[j][r]: a's row row0 + r at k0 + j; b_tile[j][c]: b's column col0 + c at k0 + j
  __shared__ __align__(16) gpu_acc_t a_tile[GPU_DEPTH][GPU_TILE_ROW];
  __shared__ __align__(16) gpu_acc_t b_tile[GPU_DEPTH][GPU_TILE_ROW];
  const int t = threadIdx.y * GPU_THREADS + threadIdx.x;
  const long long col0 = (long long)blockIdx.x * GPU_TILE;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const char *ab = a + gpu_offset(a_batches, batch);
    const char *bb = b + gpu_offset(b_batches, batch);
    // every thread of the block runs every iteration, so the barriers are reached by all
    for (long long row0 = (long long)blockIdx.y * GPU_TILE; row0 < n;
         row0 += (long long)gridDim.y * GPU_TILE) {
      gpu_accumulators acc;
      gpu_clear(acc);
      gpu_stager a_stage = gpu_stage_from(ab, a_row, a_col, row0, n, t);
      gpu_stager b_stage = gpu_stage_from(bb, b_col, b_row, col0, m, t);
      gpu_a_t a_next[GPU_PER_THREAD];
      gpu_b_t b_next[GPU_PER_THREAD];
      auto load_tiles = [&](long long k0) {
        gpu_stage_load(a_stage, k0, k, a_next);
        gpu_stage_load(b_stage, k0, k, b_next);
      };
      load_tiles(0);
      for (long long k0 = 0; k0 < k; k0 += GPU_DEPTH) {
        gpu_stage_store(a_stage, a_tile, a_next, gpu_convert_a);
        gpu_stage_store(b_stage, b_tile, b_next, gpu_convert_b);
        a_stage.at += a_stage.tile_step;
        b_stage.at += b_stage.tile_step;
        __syncthreads();
        if (k0 + GPU_DEPTH < k) load_tiles(k0 + GPU_DEPTH);   // in flight while this pair is used
        gpu_multiply_tiles(acc, a_tile, b_tile, t);
        __syncthreads();
      }
      gpu_each_result(acc, t, [&](int r, int c, gpu_acc_t v) {
        const long long row = row0 + r, col = col0 + c;
        if (row < n && col < m) out[(batch * n + row) * m + col] = gpu_store(v);
      });
    }
  }
}

// Stacks of small products (lua/gpu/matmul.lua: a few hundred elements of out a matrix and a
// short k), where a tile of 64 x 64 would leave most of its threads idle: one thread an element
// of out, walking k.  Consecutive threads take consecutive columns of a row, so their loads of
// a's row are one broadcast and those of b's columns adjacent when b is row-major; each
// matrix's elements stay in the cache while its threads read them again.  (10000 stacked
// 8 x 8 float32 products took 309 us in 64 x 64 tiles.)  Called like gpu_matmul, with a
// one-dimensional block.
extern "C" __global__ void __launch_bounds__(256)
gpu_matmul_small(gpu_out_t *out, const char *a, gpu_layout a_batches, long long a_row,
                 long long a_col, const char *b, gpu_layout b_batches, long long b_row,
                 long long b_col, long long n, long long k, long long m, long long batches) {
  const long long per_matrix = n * m, total = batches * per_matrix;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long batch = e / per_matrix, row = e % per_matrix / m, col = e % m;
    const char *p = a + gpu_offset(a_batches, batch) + row * a_row;
    const char *q = b + gpu_offset(b_batches, batch) + col * b_col;
    gpu_acc_t acc0 = (gpu_acc_t)0, acc1 = (gpu_acc_t)0;   // two chains of multiply-adds
    long long j = 0;
    for (; j + 1 < k; j += 2, p += 2 * a_col, q += 2 * b_row) {
      acc0 = gpu_multiply_add(acc0, gpu_load_a(p), gpu_load_b(q));
      acc1 = gpu_multiply_add(acc1, gpu_load_a(p + a_col), gpu_load_b(q + b_row));
    }
    if (j < k) acc0 = gpu_multiply_add(acc0, gpu_load_a(p), gpu_load_b(q));
    out[e] = gpu_store(acc0 + acc1);
  }
}
