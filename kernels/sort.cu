// sort.cu: sorting rows, for gpuarray.sort and argsort (lua/gpu/sort.lua fills in the dollar
// names and launches one gpu_sort_step per step of the network), and searching sorted ones
// (gpu_searchsorted).
//
// A bitonic sorting network over each row of `rows` contiguous rows of `len` keys, padded
// in thought to P, the next power of two, with keys that sort after everything.  In the
// form used here every compare-exchange puts the smaller key at the lower index: the first
// step of merging sorted runs of size/2 pairs i with i ^ (size - 1) (the mirror position),
// the later ones i with i ^ distance.  So the padding never moves, and a pair whose partner
// lies in it is simply skipped, which lets any length sort without copying.
//
// The steps whose pairs lie within 2048 positions run in shared memory, one block a chunk of
// 2048 (gpu_sort_chunk): all of them for merges up to that size, and the last eleven of each
// larger merge, after gpu_sort_step has run its wider steps over global memory.
//
// Rows of more than 256 keys that are not complex take a stable least-significant-digit
// radix sort instead (sort.lua decides), a byte of the key a pass: whole in one block when
// the row fits a tile (gpu_radix_sort_tiles), else gpu_radix_histogram once and then
// gpu_radix_scatter a pass; below.
//
// Keys order as NumPy's: NaN after every number; complex numbers by real part, then
// imaginary part, those with NaN parts last (R + Rj, R + NaNj, NaN + Rj, NaN + NaNj).  With indices (argsort), equal keys order
// by index, which makes the result stable and independent of the network.

typedef $KEY_T gpu_key_t;

#define GPU_WITH_INDICES $WITH_INDICES
#define GPU_RADIX $RADIX
#define GPU_CHUNK 2048
#define GPU_CHUNK_THREADS (GPU_CHUNK / 2)     // one a pair

// Whether key a sorts before key b.
__device__ __forceinline__ bool gpu_key_before(gpu_key_t a, gpu_key_t b) {
$BEFORE
}

extern "C" __global__ void gpu_sort_init_indices(long long *indices, long long rows, long long len) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < rows * len;
       t += (long long)gridDim.x * blockDim.x)
    indices[t] = t % len + 1;                 // 1-based, as Lua counts
}

// The compare-exchange of positions i < l of one row (keys k, indices x), unless l is padding.
__device__ __forceinline__ void gpu_exchange(gpu_key_t *k, long long *x, long long i, long long l) {
  const gpu_key_t a = k[i], b = k[l];
#if GPU_WITH_INDICES
  const long long ia = x[i], ib = x[l];
  if (gpu_key_before(b, a) || (!gpu_key_before(a, b) && ib < ia)) {
    k[i] = b; k[l] = a;
    x[i] = ib; x[l] = ia;
  }
#else
  if (gpu_key_before(b, a)) { k[i] = b; k[l] = a; }
#endif
}

// The lower position of pair p of a step at this distance: p with a 0 bit inserted there.
__device__ __forceinline__ long long gpu_lower(long long p, long long distance) {
  return (p / distance) * 2 * distance + p % distance;
}

// One step of the network over every row: t runs over rows * half, half = P / 2 pairs a row.
extern "C" __global__ void gpu_sort_step(gpu_key_t *keys, long long *indices, long long rows,
                                         long long len, long long half, long long size,
                                         long long distance, int mirror) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < rows * half;
       t += (long long)gridDim.x * blockDim.x) {
    const long long row = t / half;
    const long long i = gpu_lower(t % half, distance);
    const long long l = mirror ? (i ^ (size - 1)) : (i + distance);
    if (l < len) gpu_exchange(keys + row * len, indices + row * len, i, l);   // else padding
  }
}

// The steps within each chunk of 2048 positions, in shared memory: with merge_size 0 every
// merge up to size_hi (at most a chunk: the chunk ends sorted), else the steps of distance
// 1024 down to 1 of merging merge_size.  chunks is the number of chunks a row has.
extern "C" __global__ void __launch_bounds__(GPU_CHUNK_THREADS)
gpu_sort_chunk(gpu_key_t *keys, long long *indices, long long rows, long long len, long long chunks,
               long long size_hi, long long merge_size) {
  __shared__ gpu_key_t k[GPU_CHUNK];
#if GPU_WITH_INDICES
  __shared__ long long x[GPU_CHUNK];
#else
  long long *x = nullptr;
#endif
  for (long long c = blockIdx.x; c < rows * chunks; c += gridDim.x) {
    const long long row = c / chunks, base = (c % chunks) * GPU_CHUNK;
    const long long valid = len - base < GPU_CHUNK ? len - base : GPU_CHUNK;   // the rest is padding
    gpu_key_t *row_keys = keys + row * len + base;
    for (int e = threadIdx.x; e < valid; e += GPU_CHUNK_THREADS) {
      k[e] = row_keys[e];
#if GPU_WITH_INDICES
      x[e] = indices[row * len + base + e];
#endif
    }
    __syncthreads();
    const int p = threadIdx.x;
    if (merge_size == 0) {
      for (int size = 2; size <= size_hi; size <<= 1) {
        for (int distance = size / 2; distance >= 1; distance >>= 1) {
          const int i = (int)gpu_lower(p, distance);
          const int l = distance == size / 2 ? (i ^ (size - 1)) : i + distance;
          if (l < valid) gpu_exchange(k, x, i, l);
          __syncthreads();
        }
      }
    } else {
      for (int distance = GPU_CHUNK / 2; distance >= 1; distance >>= 1) {
        const int i = (int)gpu_lower(p, distance), l = i + distance;
        if (l < valid) gpu_exchange(k, x, i, l);
        __syncthreads();
      }
    }
    for (int e = threadIdx.x; e < valid; e += GPU_CHUNK_THREADS) {
      row_keys[e] = k[e];
#if GPU_WITH_INDICES
      indices[row * len + base + e] = x[e];
#endif
    }
    __syncthreads();                          // before the next chunk overwrites k and x
  }
}

// searchsorted: out[i] is v[i]'s 1-based place in the sorted row a of n keys, as a Lua
// table.insert would take it: 1 + the keys of a before v[i] (right == 0, NumPy's "left"), or
// not after it (right != 0).  A binary search a thread, in the sort's order (NaN last).
extern "C" __global__ void gpu_searchsorted(const gpu_key_t *a, long long n, const gpu_key_t *v,
                                            long long m, long long *out, int right) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m;
       i += (long long)gridDim.x * blockDim.x) {
    const gpu_key_t x = v[i];
    long long lo = 0, hi = n;
    while (lo < hi) {
      const long long mid = lo + (hi - lo) / 2;
      if (right ? !gpu_key_before(x, a[mid]) : gpu_key_before(a[mid], x)) lo = mid + 1;
      else hi = mid;
    }
    out[i] = lo + 1;
  }
}

#if GPU_RADIX
// ---------------------------------------------------------------- radix sort
//
// Each row is cut into tiles of GPU_TILE keys.  gpu_radix_histogram first counts, in one read
// of the keys, how many keys of each row have each digit in each byte (every pass's totals).
// Then a pass a byte, lowest first, gpu_radix_scatter moves every key to its place for that
// byte: a tile's first key of digit d goes to row * len, plus the row's keys of smaller
// digits, plus the keys of digit d in the row's earlier tiles.  That last count comes from a
// decoupled look-back (as kernels/scan.cu's, here one running count a digit): each tile
// publishes its own count of each digit at once, then adds up its predecessors' counts until
// it meets one that has published the count of all tiles up to and including itself, and
// publishes its own such count.  Tiles are handed out by an atomic counter, so a block only
// waits for tiles taken before its own by blocks already running.  Within the tile, the keys
// go into shared memory ordered by digit, keeping equal digits in their order, and each
// digit's run is written out from there: the passes leave every row sorted, and equal keys in
// their first order.  A row that fits one tile needs none of this: gpu_radix_sort_tiles
// orders it pass after pass in shared memory.
typedef $BITS_T gpu_bits_t;
typedef unsigned int gpu_index_t;              // 1-based place in a row: rows are under 2^32 long
#define GPU_RADIX_THREADS 256
#define GPU_RADIX_WARPS (GPU_RADIX_THREADS / 32)
#define GPU_RADIX_ITEMS $RADIX_ITEMS            // keys a thread, per tile
#define GPU_TILE (GPU_RADIX_THREADS * GPU_RADIX_ITEMS)
#define GPU_DIGITS 256                          // a byte: one digit a thread of the block
#define GPU_RADIX_PASSES ((int)sizeof(gpu_bits_t))
// A tile's status word for a digit: 0 (what the memset leaves) until the tile publishes,
// then a flag and a count of keys.
#define GPU_STATUS_AGGREGATE (1ull << 62)       // the count is the tile's own
#define GPU_STATUS_PREFIX (2ull << 62)          // the count is the row's up to this tile, included
#define GPU_STATUS_COUNT (GPU_STATUS_AGGREGATE - 1)

// The key's bits as an unsigned number that orders as the key does (NumPy's order; -0.0 and
// 0.0 alike, every NaN alike and last).
__device__ __forceinline__ gpu_bits_t gpu_radix_bits(gpu_key_t key) {
  gpu_bits_t u;
  memcpy(&u, &key, sizeof u);
$RADIX_BITS
}

__device__ __forceinline__ unsigned gpu_radix_digit(gpu_key_t key, int shift) {
  return (unsigned)(gpu_radix_bits(key) >> shift) & (GPU_DIGITS - 1);
}

// The positions of the keys of tile `tile` of a row: [begin, end) of the whole array.
__device__ __forceinline__ void gpu_tile_span(long long row, long long tile, long long len,
                                              long long *begin, long long *end) {
  *begin = row * len + tile * GPU_TILE;
  *end = row * len + (len - tile * GPU_TILE < GPU_TILE ? len : (tile + 1) * GPU_TILE);
}

// The lanes of the warp whose digit is this lane's (digit GPU_DIGITS: no key).
__device__ __forceinline__ unsigned gpu_digit_peers(unsigned digit) {
  return __match_any_sync(0xffffffffu, digit);
}

// totals[(row * GPU_RADIX_PASSES + pass) * 256 + digit] (zeroed before) gets the row's keys
// with that digit in byte `pass`.  Warps count into shared histograms (a copy for each warp,
// or each two warps for 8-byte keys: 32 KiB), and a block adds what it counted of a row into
// totals when it moves on to another row, or ends.
#define GPU_HISTOGRAM_COPIES (GPU_RADIX_PASSES > 4 ? GPU_RADIX_WARPS / 2 : GPU_RADIX_WARPS)
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS)
gpu_radix_histogram(const gpu_key_t *keys, unsigned long long *totals, long long rows,
                    long long len, long long tiles) {
  __shared__ unsigned histograms[GPU_HISTOGRAM_COPIES][GPU_RADIX_PASSES][GPU_DIGITS];
  unsigned (*histogram)[GPU_DIGITS] = histograms[threadIdx.x / 32 % GPU_HISTOGRAM_COPIES];
  long long row = -1;
  for (long long t = blockIdx.x;; t += gridDim.x) {
    const long long next_row = t < rows * tiles ? t / tiles : -1;   // the same for the block
    if (next_row != row) {
      __syncthreads();                          // every count of the row before is in
      if (row >= 0) {
        for (int pass = 0; pass < GPU_RADIX_PASSES; pass++) {
          unsigned sum = 0;
          for (int c = 0; c < GPU_HISTOGRAM_COPIES; c++) sum += histograms[c][pass][threadIdx.x];
          if (sum != 0)
            atomicAdd(&totals[(row * GPU_RADIX_PASSES + pass) * GPU_DIGITS + threadIdx.x], sum);
        }
      }
      if (next_row < 0) break;
      __syncthreads();                          // read before they are cleared
      for (int c = 0; c < GPU_HISTOGRAM_COPIES; c++)
        for (int pass = 0; pass < GPU_RADIX_PASSES; pass++) histograms[c][pass][threadIdx.x] = 0;
      __syncthreads();
      row = next_row;
    }
    long long begin, end;
    gpu_tile_span(row, t % tiles, len, &begin, &end);
    gpu_key_t key[GPU_RADIX_ITEMS];
    // Every load of the tile in flight at once: a float's bits take branches, which would
    // wait for each load in turn if they came with it.
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      const long long i = begin + r * GPU_RADIX_THREADS + threadIdx.x;
      if (i < end) key[r] = keys[i];
    }
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      if (begin + r * GPU_RADIX_THREADS + threadIdx.x < end) {
        const gpu_bits_t bits = gpu_radix_bits(key[r]);
        for (int pass = 0; pass < GPU_RADIX_PASSES; pass++)
          atomicAdd(&histogram[pass][(unsigned)(bits >> (8 * pass)) & (GPU_DIGITS - 1)], 1u);
      }
    }
  }
}

// The exclusive running sum of value over the block's threads (thread 0 gets 0).
template <typename T>
__device__ __forceinline__ T gpu_block_exclusive_sum(T value, T *warp_sums) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T sum = value;
  for (int d = 1; d < 32; d <<= 1) {
    const T other = __shfl_up_sync(0xffffffffu, sum, d);
    if (lane >= d) sum += other;
  }
  if (lane == 31) warp_sums[warp] = sum;
  __syncthreads();
  for (unsigned w = 0; w < warp; w++) sum += warp_sums[w];
  __syncthreads();                            // before warp_sums is used again
  return sum - value;
}

// Thread `digit` of the block working on tile number t, tile > 0 of its row: the keys of
// that digit in the row's tiles before t.  It reads the statuses of GPU_LOOK_BACK tiles at
// once, nearest first, and adds them up until one holds a prefix: the row's first tile
// always does.
#define GPU_LOOK_BACK 8
__device__ __forceinline__ unsigned long long gpu_radix_look_back(
    const volatile unsigned long long *status, long long t, long long tile, unsigned digit) {
  const long long row_first = t - tile;
  unsigned long long count = 0;
  for (long long end = t;; end -= GPU_LOOK_BACK) {
    unsigned long long word[GPU_LOOK_BACK];
#pragma unroll
    for (int i = 0; i < GPU_LOOK_BACK; i++) {   // past the row's first tile: never reached
      const long long p = end - 1 - i;
      word[i] = p >= row_first ? status[p * GPU_DIGITS + digit] : GPU_STATUS_PREFIX;
    }
#pragma unroll
    for (int i = 0; i < GPU_LOOK_BACK; i++) {
      while (word[i] == 0) word[i] = status[(end - 1 - i) * GPU_DIGITS + digit];   // a running block's
      count += word[i] & GPU_STATUS_COUNT;
      if (word[i] & GPU_STATUS_PREFIX) return count;
    }
  }
}

// Ranks a tile's keys by their digit at shift (this lane's key r is there when r * 32 <
// reach), with warp_counts zeroed before by the block: each warp ranks a contiguous segment
// of the tile, in rounds of a key a lane, with counters of its own.  Afterwards rank[r] is
// key r's place among its warp's keys of its digit, warp_counts[w][d] the keys of digit d in
// the warps before w, and thread d returns the tile's keys of digit d.
__device__ __forceinline__ unsigned gpu_radix_rank(const gpu_key_t (&key)[GPU_RADIX_ITEMS],
                                                   int reach, int shift,
                                                   unsigned (&rank)[GPU_RADIX_ITEMS],
                                                   unsigned (*warp_counts)[GPU_DIGITS]) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned lanes_before = (1u << lane) - 1;
  for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
    const bool valid = r * 32 < reach;
    const unsigned digit = valid ? gpu_radix_digit(key[r], shift) : GPU_DIGITS;
    const unsigned peers = gpu_digit_peers(digit);
    const int leader = __ffs(peers) - 1;
    unsigned earlier = 0;                      // the warp's keys of the digit in earlier rounds
    if (valid && (int)lane == leader) earlier = atomicAdd(&warp_counts[warp][digit], __popc(peers));
    rank[r] = __shfl_sync(0xffffffffu, earlier, leader) + __popc(peers & lanes_before);
  }
  __syncthreads();
  unsigned total = 0;
  for (int w = 0; w < GPU_RADIX_WARPS; w++) {
    const unsigned c = warp_counts[w][threadIdx.x];
    warp_counts[w][threadIdx.x] = total;
    total += c;
  }
  return total;
}

// Orders a ranked tile by digit into tile_keys (and tile_indices): a key's place is its
// digit's first place in the tile (`first`, thread d's for digit d), plus the keys of its
// digit in earlier warps, plus its rank.
__device__ __forceinline__ void gpu_radix_place(const gpu_key_t (&key)[GPU_RADIX_ITEMS],
                                                const gpu_index_t (&index)[GPU_RADIX_ITEMS],
                                                const unsigned (&rank)[GPU_RADIX_ITEMS],
                                                int reach, int shift, unsigned first,
                                                unsigned (*warp_counts)[GPU_DIGITS],
                                                gpu_key_t *tile_keys, gpu_index_t *tile_indices) {
  const unsigned warp = threadIdx.x / 32;
  for (int w = 0; w < GPU_RADIX_WARPS; w++) warp_counts[w][threadIdx.x] += first;
  __syncthreads();
  for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
    if (r * 32 < reach) {
      const unsigned place = warp_counts[warp][gpu_radix_digit(key[r], shift)] + rank[r];
      tile_keys[place] = key[r];
#if GPU_WITH_INDICES
      tile_indices[place] = index[r];
#endif
    }
  }
}

// Sorts each row of len <= GPU_TILE keys of source whole in one block, every byte's pass in
// shared memory: one read and one write of the row, no look-back.  The sorted rows go to keys
// (which may be source); with indices, final_indices gets the int64 indices that sort each row,
// and keys may be null (argsort needs no keys).
// Blocks an SM keeps running, as GPU_SCATTER_BLOCKS: 16384 rows of 1000 float32 took 0.86 ms
// with four, 1.19 with three, 1.56 with two; with indices three.
#define GPU_TILE_BLOCKS (GPU_WITH_INDICES ? 3 : 4)
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS, GPU_TILE_BLOCKS)
gpu_radix_sort_tiles(const gpu_key_t *source, gpu_key_t *keys, long long *final_indices,
                     long long rows, long long len) {
  __shared__ gpu_key_t tile_keys[GPU_TILE];
#if GPU_WITH_INDICES
  __shared__ gpu_index_t tile_indices[GPU_TILE];
#else
  gpu_index_t *tile_indices = nullptr;
#endif
  __shared__ unsigned warp_sums[GPU_RADIX_WARPS];
  __shared__ unsigned warp_counts[GPU_RADIX_WARPS][GPU_DIGITS];
  const int position = (int)(threadIdx.x / 32) * 32 * GPU_RADIX_ITEMS + (int)(threadIdx.x % 32);
  const int reach = (int)len - position;        // key r of this lane: position + r * 32
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const gpu_key_t *row_source = source + row * len;
    gpu_key_t key[GPU_RADIX_ITEMS];
    gpu_index_t index[GPU_RADIX_ITEMS];
    unsigned rank[GPU_RADIX_ITEMS];
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      if (r * 32 < reach) {
        key[r] = row_source[position + r * 32];
        index[r] = (gpu_index_t)(position + r * 32 + 1);
      }
    }
    for (int pass = 0; pass < GPU_RADIX_PASSES; pass++) {
      if (pass > 0) {                           // the order the pass before left in the tile
        for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
          if (r * 32 < reach) {
            key[r] = tile_keys[position + r * 32];
#if GPU_WITH_INDICES
            index[r] = tile_indices[position + r * 32];
#endif
          }
        }
      }
      for (int w = 0; w < GPU_RADIX_WARPS; w++) warp_counts[w][threadIdx.x] = 0;
      __syncthreads();                          // and the tile read back before it is rewritten
      const unsigned total = gpu_radix_rank(key, reach, 8 * pass, rank, warp_counts);
      const unsigned first = gpu_block_exclusive_sum(total, warp_sums);
      gpu_radix_place(key, index, rank, reach, 8 * pass, first, warp_counts, tile_keys, tile_indices);
      __syncthreads();
    }
    for (int j = threadIdx.x; j < len; j += GPU_RADIX_THREADS) {
#if GPU_WITH_INDICES
      final_indices[row * len + j] = tile_indices[j];
      if (keys != nullptr) keys[row * len + j] = tile_keys[j];
#else
      keys[row * len + j] = tile_keys[j];
#endif
    }
    __syncthreads();                            // before the next row reuses shared memory
  }
}

// Moves each key (and its index) of `from` to its place in `to` for byte `pass`, with totals
// as gpu_radix_histogram left them.  state (zeroed before each pass): the tile counter, then
// a status word for each (tile number, digit).  With indices but no from_indices (the first
// pass), a key's index is its place in its row; the last pass writes the indices as int64 to
// final_indices instead of to_indices.  A row whose keys are all alike in byte `pass` (one
// digit counts len) is copied as it is.
// GPU_SCATTER_BLOCKS, the blocks an SM keeps running, caps the registers: four hide more of
// the look-back's waits and the scattered writes (the four passes over 2^24 float32 keys took
// 0.73 ms under ncu, 0.92 with two); with indices three, as four would spill.
#define GPU_SCATTER_BLOCKS (GPU_WITH_INDICES ? 3 : 4)
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS, GPU_SCATTER_BLOCKS)
gpu_radix_scatter(const gpu_key_t *from, gpu_key_t *to, const gpu_index_t *from_indices,
                  gpu_index_t *to_indices, long long *final_indices, unsigned long long *state,
                  const unsigned long long *totals, long long rows, long long len,
                  long long tiles, int pass) {
  __shared__ gpu_key_t tile_keys[GPU_TILE];
#if GPU_WITH_INDICES
  __shared__ gpu_index_t tile_indices[GPU_TILE];
#else
  gpu_index_t *tile_indices = nullptr;
#endif
  __shared__ long long delta[GPU_DIGITS];       // a key's place in `to` minus its place in tile
  __shared__ unsigned warp_sums[GPU_RADIX_WARPS];
  __shared__ unsigned long long digit_sums[GPU_RADIX_WARPS];
  // Each warp's keys of each digit; then where the warp's first key of a digit goes in tile_keys.
  __shared__ unsigned warp_counts[GPU_RADIX_WARPS][GPU_DIGITS];
  __shared__ long long tile_number;
  volatile unsigned long long *status = state + 1;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int shift = 8 * pass;
  for (;;) {
    if (threadIdx.x == 0) tile_number = (long long)atomicAdd(state, 1ull);
    __syncthreads();
    const long long t = tile_number;            // read by all before the next one is taken
    if (t >= rows * tiles) break;
    const long long row = t / tiles, tile = t % tiles;
    long long begin, end;
    gpu_tile_span(row, tile, len, &begin, &end);
    const long long segment = begin + (long long)warp * 32 * GPU_RADIX_ITEMS + lane;
    // how far this lane's keys reach into its warp's segment (a short last tile): key r is
    // there when r * 32 < reach; an int, so that 64-bit compares need no registers per key
    const int reach = (int)(end - segment < 32 * GPU_RADIX_ITEMS ? end - segment : 32 * GPU_RADIX_ITEMS);
    gpu_key_t key[GPU_RADIX_ITEMS];
    gpu_index_t index[GPU_RADIX_ITEMS];           // (unused without indices)
    unsigned rank[GPU_RADIX_ITEMS];
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {   // every load of the tile in flight at once
      const long long i = segment + r * 32;
      if (r * 32 < reach) {
        key[r] = from[i];
#if GPU_WITH_INDICES
        index[r] = from_indices != nullptr ? from_indices[i] : (gpu_index_t)(i - row * len + 1);
#endif
      }
    }
    const unsigned long long *row_totals = totals + (row * GPU_RADIX_PASSES + pass) * GPU_DIGITS;
    for (int w = 0; w < GPU_RADIX_WARPS; w++) warp_counts[w][threadIdx.x] = 0;
    if (__syncthreads_or(row_totals[threadIdx.x] == (unsigned long long)len)) {
      // every key of the row has one digit in this byte: the pass keeps their order, a copy
      for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
        const long long i = segment + r * 32;
        if (r * 32 < reach) {
          to[i] = key[r];
#if GPU_WITH_INDICES
          if (final_indices != nullptr) final_indices[i] = index[r];
          else to_indices[i] = index[r];
#endif
        }
      }
      continue;                                 // every thread has read tile_number
    }
    const unsigned total = gpu_radix_rank(key, reach, shift, rank, warp_counts);
    // published at once, so that later tiles' look-backs wait as little as they can
    status[t * GPU_DIGITS + threadIdx.x] = (tile == 0 ? GPU_STATUS_PREFIX : GPU_STATUS_AGGREGATE) | total;
    const unsigned first = gpu_block_exclusive_sum(total, warp_sums);
    gpu_radix_place(key, index, rank, reach, shift, first, warp_counts, tile_keys, tile_indices);
    const unsigned long long smaller_digits =      // the row's keys of the digits before
      gpu_block_exclusive_sum(row_totals[threadIdx.x], digit_sums);
    unsigned long long earlier_tiles = 0;
    if (tile > 0) {
      earlier_tiles = gpu_radix_look_back(status, t, tile, threadIdx.x);
      status[t * GPU_DIGITS + threadIdx.x] = GPU_STATUS_PREFIX | (earlier_tiles + total);
    }
    delta[threadIdx.x] = row * len + (long long)(smaller_digits + earlier_tiles) - first;
    __syncthreads();
    for (long long j = threadIdx.x; j < end - begin; j += GPU_RADIX_THREADS) {
      const gpu_key_t k = tile_keys[j];
      const long long place = delta[gpu_radix_digit(k, shift)] + j;
      to[place] = k;
#if GPU_WITH_INDICES
      if (final_indices != nullptr) final_indices[place] = tile_indices[j];
      else to_indices[place] = tile_indices[j];
#endif
    }
    __syncthreads();                           // before the next tile reuses shared memory
  }
}
#endif
