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

// Warp shuffles of any gpu_t, as 32-bit words.
#define GPU_WORDS ((sizeof(gpu_t) + 3) / 4)
union gpu_words {
  gpu_t v;
  unsigned w[GPU_WORDS];
};

__device__ __forceinline__ gpu_t gpu_shfl_up(gpu_t v, int delta) {
  gpu_words u;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = 0;
  u.v = v;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = __shfl_up_sync(GPU_FULL_MASK, u.w[i], delta);
  return u.v;
}

__device__ __forceinline__ gpu_t gpu_shfl(gpu_t v, int lane) {
  gpu_words u;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = 0;
  u.v = v;
#pragma unroll
  for (int i = 0; i < (int)GPU_WORDS; i++) u.w[i] = __shfl_sync(GPU_FULL_MASK, u.w[i], lane);
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

// A status word's flag, and its value; tiles before 0 count as published prefixes (they are
// never combined, since tile 0, later in the window, always publishes its prefix).
#if GPU_PACKED
__device__ __forceinline__ unsigned long long gpu_status_word(const gpu_state &s, long long p) {
  return p < 0 ? (unsigned long long)GPU_PREFIX << 32 : s.status[p];
}
__device__ __forceinline__ int gpu_status_flag(unsigned long long word) { return (int)(word >> 32); }
#else
__device__ __forceinline__ int gpu_status_word(const gpu_state &s, long long p) {
  return p < 0 ? GPU_PREFIX : s.flags[p];
}
__device__ __forceinline__ int gpu_status_flag(int word) { return word; }
#endif

// Run by one whole warp of the block scanning `tile` (> 0): the combination of every tile
// before it, in order.  The window of GPU_WINDOW tiles before `end` slides down until some
// tile in it has published its inclusive prefix; lane i holds its GPU_LOOK_BACK tiles from
// end - GPU_WINDOW + i * GPU_LOOK_BACK on.
__device__ gpu_t gpu_look_back(const gpu_state &s, long long tile) {
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
      word[j] = gpu_status_word(s, first + j);
      ready = ready && gpu_status_flag(word[j]) != GPU_NOT_READY;
    }
    while (!__all_sync(GPU_FULL_MASK, ready)) {   // a block still running: wait for it
      ready = true;
#pragma unroll
      for (int j = 0; j < GPU_LOOK_BACK; j++) {
        if (gpu_status_flag(word[j]) == GPU_NOT_READY) word[j] = gpu_status_word(s, first + j);
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
      if (p >= 0) x = gpu_volatile_io::load(is_prefix ? s.prefixes + p : s.aggregates + p);
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

// The kernel.  VEC: input and output are contiguous and 16-byte aligned, so full tiles move
// in 16-byte loads and stores.  state may be null when the grid is a single tile.
template <bool VEC>
__device__ __forceinline__ void gpu_scan(const char *in, const gpu_layout &lay, long long n,
                                         gpu_out_t *out, char *state_base) {
  __shared__ gpu_t tile_items[GPU_PAD(GPU_TILE)];
  __shared__ gpu_t warp_totals[GPU_WARPS];
  __shared__ gpu_t block_prefix;
  __shared__ long long tile_index;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const gpu_state s = gpu_state_at(state_base, gridDim.x);

  if (tid == 0) tile_index = gridDim.x == 1 ? 0 : (long long)atomicAdd(s.counter, 1u);
  __syncthreads();
  const long long tile = tile_index;
  const long long base = tile * GPU_TILE;
  const int count = (int)(n - base < GPU_TILE ? n - base : GPU_TILE);

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
    if (tile == 0) {
      if (lane == 0 && gridDim.x > 1) gpu_publish(s, 0, GPU_PREFIX, aggregate);
    } else {
      if (lane == 0) gpu_publish(s, tile, GPU_AGGREGATE, aggregate);
      const gpu_t prefix = gpu_look_back(s, tile);
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
  if (tile > 0) {
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
// launch, and may be null for a single tile.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_scan_any(const char *in, gpu_layout lay, long long n, gpu_out_t *out, char *state) {
  gpu_scan<false>(in, lay, n, out, state);
}

// The same for aligned, contiguous arrays.  Tiles of 4-byte values: registers for ten blocks
// an SM (shared memory holds twelve), which scanned 2^28 float32 a few percent faster on an
// H200 than the nine the compiler's own choice allowed; larger values' tiles fit six at most,
// and registers for six (80 for float64, where the compiler took more) scanned 2^26 float64
// and int64 9% faster there.  (gpu_scan_any would spill under the bound.)
#define GPU_MIN_BLOCKS (sizeof(gpu_t) <= 4 ? 10 : 6)
#if !GPU_STRIDED
extern "C" __global__ void __launch_bounds__(GPU_BLOCK, GPU_MIN_BLOCKS)
gpu_scan_vec(const char *in, gpu_layout lay, long long n, gpu_out_t *out, char *state) {
  gpu_scan<true>(in, lay, n, out, state);
}
#endif
