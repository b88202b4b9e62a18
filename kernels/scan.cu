// scan.cu: inclusive and exclusive scans, a template that lua/gpu/scan.lua fills in (its
// dollar names).  One pass with decoupled look-back (Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016): the input is read once and the output written
// once.
//
// Each block scans one tile of GPU_TILE elements (GPU_ITEMS a thread: 32, or 16 for 16-byte
// values, which would not fit in shared memory).  Tiles are handed out by an atomic counter
// rather than blockIdx.x, so a block only ever waits for tiles taken before its own, by blocks
// that are already running: no deadlock whatever order the hardware schedules blocks in.  A
// block scans its tile locally, publishes the tile's total (its "aggregate") at once, then
// looks back over the tiles before it, combining aggregates until it meets a tile that has
// published its inclusive prefix (everything up to and including that tile); it publishes its
// own inclusive prefix and writes its tile.
//
// The operator need not be commutative (predecessors always combine on the left) and an
// inclusive scan needs no neutral element: "has" flags mark where a running value starts.
//
// State (a zeroed scratch buffer, laid out by gpu_state below and sized by scan.lua's
// state_bytes): the tile counter, then per tile either one 64-bit status word packing flag and
// value (values of 4 bytes or fewer: one access reads both, no fence needed) or a flag word
// plus separate aggregate and inclusive value slots (larger values), written value, fence,
// flag and read flag, fence, value.
//
// Rows: the input may be `rows` runs of row_len elements scanned each on its own (cumsum along
// an axis).  Each row has its own tiles, numbered on from the last row's; a row's first tile
// starts its running value, and a look-back never reaches past it.  A whole array is one row.

#define GPU_BLOCK 128
#define GPU_ITEMS $ITEMS
#define GPU_TILE (GPU_BLOCK * GPU_ITEMS)
#define GPU_WARPS (GPU_BLOCK / 32)
#define GPU_PAD(j) ((j) + (j) / 32)
#define GPU_EXCLUSIVE $EXCLUSIVE
#define GPU_STRIDED $STRIDED
#define GPU_PACKED $PACKED
#define GPU_FULL_MASK 0xffffffffu

// Tile status flags.  0 is what the memset leaves: not published yet.
#define GPU_NOT_READY 0
#define GPU_AGGREGATE 1
#define GPU_PREFIX 2

// gpu_t is what the scan computes in; float16 and bfloat16 output (gpu_out_t, their bits)
// is computed in float and each result rounded, as the elementwise kernels do.
typedef $T gpu_t;
typedef $IN_T gpu_in_t;
typedef $OUT_T gpu_out_t;

__device__ __forceinline__ gpu_t gpu_scan_op(gpu_t a, gpu_t b) { return $SCAN_EXPR; }
__device__ __forceinline__ gpu_t gpu_convert(gpu_in_t x) { return $CONVERT; }
__device__ __forceinline__ gpu_out_t gpu_store(gpu_t v) { return $STORE; }

// Warp shuffles of any gpu_t, as 32-bit words, within segments of `width` lanes (a power of
// two up to 32).
#define GPU_WORDS ((sizeof(gpu_t) + 3) / 4)
union gpu_words {
  gpu_t v;
  unsigned w[GPU_WORDS];
};

__device__ __forceinline__ gpu_t gpu_shfl_up(gpu_t v, int delta, int width = 32) {
  gpu_words u;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = 0;
  u.v = v;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = __shfl_up_sync(GPU_FULL_MASK, u.w[i], delta, width);
  return u.v;
}

__device__ __forceinline__ gpu_t gpu_shfl(gpu_t v, int lane, int width = 32) {
  gpu_words u;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = 0;
  u.v = v;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = __shfl_sync(GPU_FULL_MASK, u.w[i], lane, width);
  return u.v;
}

// Where the pieces of the state live, for a grid of `tiles` tiles.  scan.lua's state_bytes
// must agree.
struct gpu_state {
  unsigned *counter;
#if GPU_PACKED
  volatile unsigned long long *status;   // flag << 32 | value bits
#else
  volatile int *flags;
  volatile gpu_t *aggregates;
  volatile gpu_t *prefixes;
#endif
};

__device__ __forceinline__ long long gpu_round128(long long bytes) { return (bytes + 127) / 128 * 128; }

__device__ __forceinline__ gpu_state gpu_state_at(char *base, long long tiles) {
  gpu_state s;
  s.counter = (unsigned *)base;
#if GPU_PACKED
  s.status = (volatile unsigned long long *)(base + 128);
#else
  char *values = base + 128 + gpu_round128(tiles * (long long)sizeof(int));
  s.flags = (volatile int *)(base + 128);
  s.aggregates = (volatile gpu_t *)values;
  s.prefixes = (volatile gpu_t *)(values + gpu_round128(tiles * (long long)sizeof(gpu_t)));
#endif
  return s;
}

#if !GPU_PACKED
// Volatile stores and loads of a value: a class type (complex64, complex128) has no volatile
// assignment, so values of whole 32-bit words move word by word; others as themselves.
template <bool WORDWISE> struct gpu_volatile {
  static __device__ __forceinline__ void store(volatile gpu_t *p, gpu_t v) { *p = v; }
  static __device__ __forceinline__ gpu_t load(const volatile gpu_t *p) { return *p; }
};
template <> struct gpu_volatile<true> {
  static __device__ __forceinline__ void store(volatile gpu_t *p, gpu_t v) {
    gpu_words u;
    u.v = v;
#pragma unroll
    for (int i = 0; i < (int)GPU_WORDS; i++) ((volatile unsigned *)p)[i] = u.w[i];
  }
  static __device__ __forceinline__ gpu_t load(const volatile gpu_t *p) {
    gpu_words u;
#pragma unroll
    for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = ((const volatile unsigned *)p)[i];
    return u.v;
  }
};
typedef gpu_volatile<sizeof(gpu_t) % 4 == 0> gpu_volatile_io;
#endif

// Publishes tile's aggregate or inclusive prefix (flag says which) to later tiles.
__device__ __forceinline__ void gpu_publish(const gpu_state &s, long long tile, int flag, gpu_t v) {
#if GPU_PACKED
  gpu_words u;
  u.w[0] = 0;
  u.v = v;
  s.status[tile] = ((unsigned long long)flag << 32) | u.w[0];   // one 64-bit store
#else
  gpu_volatile_io::store(flag == GPU_PREFIX ? s.prefixes + tile : s.aggregates + tile, v);
  __threadfence();   // the value is visible before the flag that announces it
  s.flags[tile] = flag;
#endif
}

// Statuses a lane reads at once in the look-back, a window of 32 * GPU_LOOK_BACK tiles.  On
// an H200, 2 scanned 2^28 float32 ~10% faster than 1; 4 and more were slower (more status
// reads while waiting on running blocks).
#define GPU_LOOK_BACK 2
#define GPU_WINDOW (32 * GPU_LOOK_BACK)

// A status word's flag, and its value; tiles before the row's first count as published
// prefixes (they are never combined, since the row's first tile, later in the window, always
// publishes its prefix).
#if GPU_PACKED
__device__ __forceinline__ unsigned long long gpu_status_word(const gpu_state &s, long long p,
                                                              long long row_first) {
  return p < row_first ? (unsigned long long)GPU_PREFIX << 32 : s.status[p];
}
__device__ __forceinline__ int gpu_status_flag(unsigned long long word) { return (int)(word >> 32); }
#else
__device__ __forceinline__ int gpu_status_word(const gpu_state &s, long long p, long long row_first) {
  return p < row_first ? GPU_PREFIX : s.flags[p];
}
__device__ __forceinline__ int gpu_status_flag(int word) { return word; }
#endif

// Run by one whole warp of the block scanning `tile` (> row_first, its row's first tile): the
// combination of every tile of its row before it, in order.  The window of GPU_WINDOW tiles
// before `end` slides down until some tile in it has published its inclusive prefix; lane i
// holds its GPU_LOOK_BACK tiles from end - GPU_WINDOW + i * GPU_LOOK_BACK on.
__device__ gpu_t gpu_look_back(const gpu_state &s, long long tile, long long row_first) {
  const int lane = threadIdx.x & 31;
  gpu_t prefix = gpu_t();
  bool has = false;
  for (long long end = tile;; end -= GPU_WINDOW) {
    const long long first = end - GPU_WINDOW + lane * GPU_LOOK_BACK;
#if GPU_PACKED
    unsigned long long word[GPU_LOOK_BACK];
#else
    int word[GPU_LOOK_BACK];
#endif
    bool ready = true;
#pragma unroll
    for (int j = 0; j < GPU_LOOK_BACK; j++) {
      word[j] = gpu_status_word(s, first + j, row_first);
      ready = ready && gpu_status_flag(word[j]) != GPU_NOT_READY;
    }
    while (!__all_sync(GPU_FULL_MASK, ready)) {   // a block still running: wait for it
      ready = true;
#pragma unroll
      for (int j = 0; j < GPU_LOOK_BACK; j++) {
        if (gpu_status_flag(word[j]) == GPU_NOT_READY) word[j] = gpu_status_word(s, first + j, row_first);
        ready = ready && gpu_status_flag(word[j]) != GPU_NOT_READY;
      }
    }
#if !GPU_PACKED
    __threadfence();   // the flags were read before the values they announce
#endif
    // This lane's tiles combined in order, starting again at each prefix.
    gpu_t v = gpu_t();
    bool lane_prefix = false;
#pragma unroll
    for (int j = 0; j < GPU_LOOK_BACK; j++) {
      const bool is_prefix = gpu_status_flag(word[j]) == GPU_PREFIX;
      gpu_t x = gpu_t();
#if GPU_PACKED
      gpu_words u;
      u.w[0] = (unsigned)word[j];
      x = u.v;
#else
      const long long p = first + j;
      if (p >= row_first) x = gpu_volatile_io::load(is_prefix ? s.prefixes + p : s.aggregates + p);
#endif
      v = j == 0 || is_prefix ? x : gpu_scan_op(v, x);
      lane_prefix = lane_prefix || is_prefix;
    }
    // The highest lane holding a prefix ends the look-back; combine lanes start..31 in order.
    const unsigned prefixes = __ballot_sync(GPU_FULL_MASK, lane_prefix);
    const int start = prefixes ? 31 - __clz(prefixes) : 0;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      gpu_t lower = gpu_shfl_up(v, off);
      if (lane - off >= start) v = gpu_scan_op(lower, v);
    }
    const gpu_t window = gpu_shfl(v, 31);
    prefix = has ? gpu_scan_op(window, prefix) : window;   // earlier tiles on the left
    has = true;
    if (prefixes) return prefix;
  }
}

__device__ __forceinline__ gpu_t gpu_load(const char *in, const gpu_layout &lay, long long i) {
#if GPU_STRIDED
  return gpu_convert(*(const gpu_in_t *)(in + gpu_offset(lay, i)));
#else
  return gpu_convert(((const gpu_in_t *)in)[i]);
#endif
}

// 16 bytes seen as elements.  A thread's GPU_ITEMS elements fill whole chunks.
static_assert(GPU_ITEMS * sizeof(gpu_in_t) % 16 == 0 && GPU_ITEMS * sizeof(gpu_out_t) % 16 == 0,
              "GPU_ITEMS elements must fill 16-byte chunks");
template <typename E>
union gpu_chunk {
  uint4 raw;
  E e[16 / sizeof(E)];
};

// The kernel, over rows of row_len elements (a row's tiles numbered one after another).  VEC: input and
// output are contiguous and every row 16-byte aligned, so full tiles move in 16-byte loads and
// stores.  state may be null when a row is a single tile.
template <bool VEC>
__device__ __forceinline__ void gpu_scan(const char *in, const gpu_layout &lay, long long row_len,
                                         gpu_out_t *out, char *state_base) {
  __shared__ gpu_t tile_items[GPU_PAD(GPU_TILE)];
  __shared__ gpu_t warp_totals[GPU_WARPS];
  __shared__ gpu_t block_prefix;
  __shared__ long long tile_index;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const gpu_state s = gpu_state_at(state_base, gridDim.x);

  // Tiles that wait on others are taken in counter order; rows of one tile wait on nothing.
  const long long row_tiles = (row_len + GPU_TILE - 1) / GPU_TILE;
  if (tid == 0) tile_index = row_tiles == 1 ? blockIdx.x : (long long)atomicAdd(s.counter, 1u);
  __syncthreads();
  const long long tile = tile_index;
  const long long row = tile / row_tiles;
  const long long row_first = row * row_tiles;
  const long long in_row = (tile - row_first) * GPU_TILE;   // the tile's first element in its row
  const long long base = row * row_len + in_row;
  const int count = (int)(row_len - in_row < GPU_TILE ? row_len - in_row : GPU_TILE);

  // Load, coalesced (thread tid takes every GPU_BLOCK-th element or 16-byte chunk), into
  // shared memory; the padding keeps the strided accesses below free of bank conflicts.
  if (VEC && count == GPU_TILE) {
    const uint4 *chunks = (const uint4 *)((const gpu_in_t *)in + base);
    const int per_chunk = 16 / sizeof(gpu_in_t);
#pragma unroll
    for (int k = 0; k < GPU_ITEMS / per_chunk; k++) {
      const int c = k * GPU_BLOCK + tid;
      gpu_chunk<gpu_in_t> u;
      u.raw = chunks[c];
#pragma unroll
      for (int e = 0; e < per_chunk; e++) tile_items[GPU_PAD(c * per_chunk + e)] = gpu_convert(u.e[e]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < GPU_ITEMS; k++) {
      const int j = k * GPU_BLOCK + tid;
      // Past the end: any value will do, as nothing after an element changes its scan, and
      // the last tile's total is never used.
      tile_items[GPU_PAD(j)] = j < count ? gpu_load(in, lay, base + j) : gpu_t();
    }
  }
  __syncthreads();

  // The total of this thread's GPU_ITEMS consecutive elements.  They stay in shared memory:
  // held in registers they cost a block enough registers to halve the blocks an SM runs,
  // whose loads in flight are what keeps DRAM busy.
  gpu_t total = tile_items[GPU_PAD(tid * GPU_ITEMS)];
#pragma unroll
  for (int q = 1; q < GPU_ITEMS; q++)
    total = gpu_scan_op(total, tile_items[GPU_PAD(tid * GPU_ITEMS + q)]);

  // Inclusive scan of the threads' totals within the warp; lane 31 then holds the warp's.
  gpu_t inclusive = total;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    gpu_t lower = gpu_shfl_up(inclusive, off);
    if (lane >= off) inclusive = gpu_scan_op(lower, inclusive);
  }
  const gpu_t lane_prefix = gpu_shfl_up(inclusive, 1);   // valid for lane > 0
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();

  // Warp 0 publishes the tile's aggregate, looks back and publishes the inclusive prefix.
  if (warp == 0) {
    gpu_t aggregate = warp_totals[0];
#pragma unroll
    for (int w = 1; w < GPU_WARPS; w++) aggregate = gpu_scan_op(aggregate, warp_totals[w]);
    if (tile == row_first) {
      if (lane == 0 && row_tiles > 1) gpu_publish(s, tile, GPU_PREFIX, aggregate);
    } else {
      if (lane == 0) gpu_publish(s, tile, GPU_AGGREGATE, aggregate);
      const gpu_t prefix = gpu_look_back(s, tile, row_first);
      if (lane == 0) {
        gpu_publish(s, tile, GPU_PREFIX, gpu_scan_op(prefix, aggregate));
        block_prefix = prefix;
      }
    }
  }
  __syncthreads();

  // Everything before this thread's first element: earlier tiles, warps, lanes, in order.
  gpu_t run = gpu_t();
  bool has = false;
  if (tile > row_first) {
    run = block_prefix;
    has = true;
  }
  for (int w = 0; w < warp; w++) {
    run = has ? gpu_scan_op(run, warp_totals[w]) : warp_totals[w];
    has = true;
  }
  if (lane > 0) {
    run = has ? gpu_scan_op(run, lane_prefix) : lane_prefix;
    has = true;
  }
#pragma unroll
  for (int q = 0; q < GPU_ITEMS; q++) {
    const gpu_t v = tile_items[GPU_PAD(tid * GPU_ITEMS + q)];
#if GPU_EXCLUSIVE
    tile_items[GPU_PAD(tid * GPU_ITEMS + q)] = has ? run : (gpu_t)($NEUTRAL);
    run = has ? gpu_scan_op(run, v) : v;
#else
    run = has ? gpu_scan_op(run, v) : v;
    tile_items[GPU_PAD(tid * GPU_ITEMS + q)] = run;
#endif
    has = true;
  }
  __syncthreads();

  if (VEC && count == GPU_TILE) {
    uint4 *chunks = (uint4 *)(out + base);
    const int per_chunk = 16 / sizeof(gpu_out_t);
#pragma unroll
    for (int k = 0; k < GPU_ITEMS / per_chunk; k++) {
      const int c = k * GPU_BLOCK + tid;
      gpu_chunk<gpu_out_t> u;
#pragma unroll
      for (int e = 0; e < per_chunk; e++) u.e[e] = gpu_store(tile_items[GPU_PAD(c * per_chunk + e)]);
      chunks[c] = u.raw;
    }
  } else {
#pragma unroll
    for (int k = 0; k < GPU_ITEMS; k++) {
      const int j = k * GPU_BLOCK + tid;
      if (j < count) out[base + j] = gpu_store(tile_items[GPU_PAD(j)]);
    }
  }
}

// Grid: one block of GPU_BLOCK threads per tile.  state: see the top; zeroed before each
// launch, and may be null when rows are a single tile.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_any(const char *in, gpu_layout lay, long long row_len, gpu_out_t *out, char *state) {
  gpu_scan<false>(in, lay, row_len, out, state);
}

// The same for aligned, contiguous arrays.  Tiles of 4-byte values: registers for ten blocks
// an SM (shared memory holds twelve), which scanned 2^28 float32 a few percent faster on an
// H200 than the nine the compiler's own choice allowed; larger values' tiles fit six at most,
// and registers for six (80 for float64, where the compiler took more) scanned 2^26 float64
// and int64 9% faster there.  (gpu_scan_any would spill under the bound.)
#define GPU_MIN_BLOCKS (sizeof(gpu_t) <= 4 ? 10 : 6)
#if !GPU_STRIDED
extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_MIN_BLOCKS)
gpu_scan_vec(const char *in, gpu_layout lay, long long row_len, gpu_out_t *out, char *state) {
  gpu_scan<true>(in, lay, row_len, out, state);
}

#if !GPU_EXCLUSIVE
// Along an axis (cumsum and cumprod: inclusive scans only), the three kernels below.
//
// Scans down columns, for arrays of enough columns to fill the GPU with a thread each:
// contiguous input seen as [outer][row_len][inner], one thread for each (outer, inner) column,
// walking it, a warp's loads coalesced along inner.  GPU_COLUMN_RUN loads a thread issues
// before it uses them, so that several are in flight.
#define GPU_COLUMN_RUN 8
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_columns(const gpu_in_t *in, long long columns, long long row_len, long long inner,
                 gpu_out_t *out) {
  const long long column = blockIdx.x * (long long)GPU_BLOCK + threadIdx.x;
  if (column >= columns) return;
  const long long outer = column / inner;
  const long long first = outer * row_len * inner + (column - outer * inner);
  gpu_t run = gpu_t();
  for (long long j0 = 0; j0 < row_len; j0 += GPU_COLUMN_RUN) {
    gpu_t v[GPU_COLUMN_RUN];
#pragma unroll
    for (int u = 0; u < GPU_COLUMN_RUN; u++)
      if (j0 + u < row_len) v[u] = gpu_convert(in[first + (j0 + u) * inner]);
#pragma unroll
    for (int u = 0; u < GPU_COLUMN_RUN; u++) {
      if (j0 + u >= row_len) break;
      run = j0 + u == 0 ? v[u] : gpu_scan_op(run, v[u]);
      out[first + (j0 + u) * inner] = gpu_store(run);
    }
  }
}

// Scans down columns where there are too few of them for a thread each to fill the GPU: a
// block takes GPU_BLOCK neighbouring columns and a chunk of GPU_CHUNK elements down them, held
// in registers, so that a column's chunks run in parallel like a row's tiles: each thread
// publishes its chunk's aggregate, looks back over the chunks above it in its own column (one
// status at a time: a thread's own chain) and publishes its inclusive prefix.  Chunks are numbered chunk-major
// (every column group's chunk 0, then their chunk 1, ...) by the same counter as tiles, so a
// block only ever waits on blocks that took a lower number.  Statuses: chunk * columns +
// column.  state may be null when a column is a single chunk.
#define GPU_CHUNK (sizeof(gpu_t) > 8 ? 16 : 32)
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_column_chunks(const gpu_in_t *in, long long columns, long long row_len, long long inner,
                       gpu_out_t *out, char *state_base) {
  __shared__ long long tile_index;
  const long long groups = (columns + GPU_BLOCK - 1) / GPU_BLOCK;
  const long long chunks = (row_len + GPU_CHUNK - 1) / GPU_CHUNK;
  const gpu_state s = gpu_state_at(state_base, chunks * columns);
  if (threadIdx.x == 0) tile_index = chunks == 1 ? blockIdx.x : (long long)atomicAdd(s.counter, 1u);
  __syncthreads();
  const long long chunk = tile_index / groups;
  const long long column = (tile_index - chunk * groups) * GPU_BLOCK + threadIdx.x;
  if (column >= columns) return;
  const long long outer = column / inner;
  const long long j0 = chunk * GPU_CHUNK;   // the chunk's first element down the column
  const long long first = (outer * row_len + j0) * inner + (column - outer * inner);
  const int count = (int)(row_len - j0 < GPU_CHUNK ? row_len - j0 : GPU_CHUNK);

  gpu_t v[GPU_CHUNK];
#pragma unroll
  for (int u = 0; u < GPU_CHUNK; u++) if (u < count) v[u] = gpu_convert(in[first + u * inner]);
  gpu_t aggregate = v[0];   // (indexing v by count would put it in local memory)
#pragma unroll
  for (int u = 1; u < GPU_CHUNK; u++) {
    if (u < count) {
      v[u] = gpu_scan_op(v[u - 1], v[u]);
      aggregate = v[u];
    }
  }

  gpu_t prefix = gpu_t();
  const long long status = chunk * columns + column;
  if (chunk == 0) {
    if (chunks > 1) gpu_publish(s, status, GPU_PREFIX, aggregate);
  } else {
    gpu_publish(s, status, GPU_AGGREGATE, aggregate);
    bool has = false;
    for (long long p = status - columns;; p -= columns) {   // up the column, chunk by chunk
      auto word = gpu_status_word(s, p, 0);
      while (gpu_status_flag(word) == GPU_NOT_READY) word = gpu_status_word(s, p, 0);
      const bool is_prefix = gpu_status_flag(word) == GPU_PREFIX;
#if GPU_PACKED
      gpu_words w;
      w.w[0] = (unsigned)word;
      const gpu_t x = w.v;
#else
      __threadfence();   // the flag was read before the value it announces
      const gpu_t x = gpu_volatile_io::load(is_prefix ? s.prefixes + p : s.aggregates + p);
#endif
      prefix = has ? gpu_scan_op(x, prefix) : x;   // chunks above on the left
      has = true;
      if (is_prefix) break;
    }
    gpu_publish(s, status, GPU_PREFIX, gpu_scan_op(prefix, aggregate));
  }

#pragma unroll
  for (int u = 0; u < GPU_CHUNK; u++) {
    if (u < count) out[first + u * inner] = gpu_store(chunk > 0 ? gpu_scan_op(prefix, v[u]) : v[u]);
  }
}

// Scans short rows (contiguous input, rows of row_len elements): a group of `group` lanes
// (a power of two up to 32) for each row, GPU_GROUP_ITEMS consecutive elements a lane, a
// chunk of group * GPU_GROUP_ITEMS elements at a time.  Lanes scan their own elements, the
// group its lanes' totals by shuffles within the group, and a chunk starts from the last one's
// total.  Every group of a warp takes the same number of chunks (rows are all one length), so
// the shuffles always have every lane; lanes past the last row only skip loads and stores.
#define GPU_GROUP_ITEMS 4
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_short_rows(const gpu_in_t *in, long long rows, long long row_len, int group,
                    gpu_out_t *out) {
  const long long thread = blockIdx.x * (long long)GPU_BLOCK + threadIdx.x;
  const long long row = thread / group;
  const int member = (int)(thread % group);
  const bool live = row < rows;
  const gpu_in_t *src = in + row * row_len;
  gpu_out_t *dst = out + row * row_len;
  gpu_t carry = gpu_t();
  for (long long chunk = 0; chunk < row_len; chunk += (long long)group * GPU_GROUP_ITEMS) {
    const long long first = chunk + member * GPU_GROUP_ITEMS;
    gpu_t v[GPU_GROUP_ITEMS];
#pragma unroll
    for (int u = 0; u < GPU_GROUP_ITEMS; u++)
      v[u] = live && first + u < row_len ? gpu_convert(src[first + u]) : gpu_t();
#pragma unroll
    for (int u = 1; u < GPU_GROUP_ITEMS; u++) v[u] = gpu_scan_op(v[u - 1], v[u]);
    gpu_t inclusive = v[GPU_GROUP_ITEMS - 1];
    for (int off = 1; off < group; off <<= 1) {
      const gpu_t lower = gpu_shfl_up(inclusive, off, group);
      if (member >= off) inclusive = gpu_scan_op(lower, inclusive);
    }
    // Everything before this lane's first element: earlier chunks, then earlier lanes.
    const gpu_t lanes_before = gpu_shfl_up(inclusive, 1, group);   // valid for member > 0
    const bool has = chunk > 0 || member > 0;
    gpu_t before = carry;
    if (member > 0) before = chunk > 0 ? gpu_scan_op(carry, lanes_before) : lanes_before;
    const gpu_t chunk_total = gpu_shfl(inclusive, group - 1, group);
    if (live) {
#pragma unroll
      for (int u = 0; u < GPU_GROUP_ITEMS; u++) {
        if (first + u >= row_len) break;
        dst[first + u] = gpu_store(has ? gpu_scan_op(before, v[u]) : v[u]);
      }
    }
    carry = chunk > 0 ? gpu_scan_op(carry, chunk_total) : chunk_total;
  }
}
#endif  // !GPU_EXCLUSIVE
#endif
