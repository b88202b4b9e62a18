// sort.cu: sorting rows, for gpuarray.sort and argsort (lua/gpu/sort.lua fills in the dollar
// names and launches one gpu_sort_step per step of the network).
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
// Rows longer than a chunk of keys that are not complex take a stable least-significant-digit
// radix sort instead, a byte of the key a pass (gpu_radix_count, gpu_radix_scan_tiles or
// gpu_radix_scan_few_tiles, then gpu_radix_scatter; below).
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

#if GPU_RADIX
// ---------------------------------------------------------------- radix sort
//
// Each row is cut into tiles of GPU_TILE keys, a block a tile at a time.  For the byte at
// `shift`, gpu_radix_count writes how many keys of each tile have each digit, laid out
// [row][digit][tile]; gpu_radix_scan_tiles turns each (row, digit)'s counts into their
// exclusive running sum over the tiles and notes the row's total of the digit.  A tile's first
// key of digit d goes to row * len, plus the row's keys of smaller digits, plus those of digit
// d in earlier tiles.  gpu_radix_scatter orders each tile by digit in shared memory, keeping
// equal digits in their order, and writes the runs of each digit out from there: the passes,
// lowest byte first, leave every row sorted, and equal keys in their first order.

typedef $BITS_T gpu_bits_t;
typedef unsigned int gpu_index_t;              // 1-based place in a row: rows are under 2^32 long

#define GPU_RADIX_THREADS 256
#define GPU_RADIX_WARPS (GPU_RADIX_THREADS / 32)
#define GPU_RADIX_ITEMS $RADIX_ITEMS            // keys a thread, per tile
#define GPU_TILE (GPU_RADIX_THREADS * GPU_RADIX_ITEMS)
#define GPU_DIGITS 256                          // a byte: one digit a thread of the block

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

// counts[(row * 256 + digit) * tiles + tile] = keys of that tile of the row with that digit.
// Each warp counts into a histogram of its own, and the block adds them up.  (Plain atomics:
// grouping a warp's equal digits with __match_any_sync first took 3.7 times as long.)
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS)
gpu_radix_count(const gpu_key_t *keys, unsigned long long *counts, long long rows, long long len,
                long long tiles, int shift) {
  __shared__ unsigned histograms[GPU_RADIX_WARPS][GPU_DIGITS];
  unsigned *histogram = histograms[threadIdx.x / 32];
  for (long long t = blockIdx.x; t < rows * tiles; t += gridDim.x) {
    const long long row = t / tiles, tile = t % tiles;
    long long begin, end;
    gpu_tile_span(row, tile, len, &begin, &end);
    gpu_key_t key[GPU_RADIX_ITEMS];
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {   // every load of the tile in flight at once
      const long long i = begin + r * GPU_RADIX_THREADS + threadIdx.x;
      if (i < end) key[r] = keys[i];
    }
    for (int w = 0; w < GPU_RADIX_WARPS; w++) histograms[w][threadIdx.x] = 0;
    __syncthreads();
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      if (begin + r * GPU_RADIX_THREADS + threadIdx.x < end) {
        atomicAdd(&histogram[gpu_radix_digit(key[r], shift)], 1u);
      }
    }
    __syncthreads();
    unsigned total = 0;
    for (int w = 0; w < GPU_RADIX_WARPS; w++) total += histograms[w][threadIdx.x];
    counts[(row * GPU_DIGITS + threadIdx.x) * tiles + tile] = total;
    __syncthreads();                          // before the next tile clears the histograms
  }
}

// The exclusive running sum of value over the block's threads (thread 0 gets 0); *total,
// unless total is null, the sum over all of them.
template <typename T>
__device__ __forceinline__ T gpu_block_exclusive_sum(T value, T *warp_sums, T *total) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T sum = value;
  for (int d = 1; d < 32; d <<= 1) {
    const T other = __shfl_up_sync(0xffffffffu, sum, d);
    if (lane >= d) sum += other;
  }
  if (lane == 31) warp_sums[warp] = sum;
  __syncthreads();
  T all = 0;
  for (unsigned w = 0; w < GPU_RADIX_WARPS; w++) {
    if (w < warp) sum += warp_sums[w];
    all += warp_sums[w];
  }
  __syncthreads();                            // before warp_sums is used again
  if (total != nullptr) *total = all;
  return sum - value;
}

// For each (row, digit): its counts over the tiles become their exclusive running sum, and
// totals[row * 256 + digit] their sum.  Rows of many tiles take a block a (row, digit), 256
// tiles at a time (gpu_radix_scan_tiles); rows of a few, a thread (gpu_radix_scan_few_tiles).
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS)
gpu_radix_scan_tiles(unsigned long long *counts, unsigned long long *totals, long long rows,
                     long long tiles) {
  __shared__ unsigned long long warp_sums[GPU_RADIX_WARPS];
  for (long long c = blockIdx.x; c < rows * GPU_DIGITS; c += gridDim.x) {
    unsigned long long *column = counts + c * tiles, carry = 0;
    for (long long base = 0; base < tiles; base += GPU_RADIX_THREADS) {
      const long long t = base + threadIdx.x;
      unsigned long long sum;
      const unsigned long long before = gpu_block_exclusive_sum(t < tiles ? column[t] : 0ull,
                                                                warp_sums, &sum);
      if (t < tiles) column[t] = carry + before;
      carry += sum;
    }
    if (threadIdx.x == 0) totals[c] = carry;
  }
}

extern "C" __global__ void gpu_radix_scan_few_tiles(unsigned long long *counts,
                                                    unsigned long long *totals, long long rows,
                                                    long long tiles) {
  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < rows * GPU_DIGITS;
       c += (long long)gridDim.x * blockDim.x) {
    unsigned long long *column = counts + c * tiles, carry = 0;
    for (long long t = 0; t < tiles; t++) {
      const unsigned long long value = column[t];
      column[t] = carry;
      carry += value;
    }
    totals[c] = carry;
  }
}

// Moves each key (and its index) of `from` to its place in `to` for the byte at shift;
// starts and totals are what the scan of tiles made of gpu_radix_count's counts.  With
// indices but no from_indices (the first pass), a key's index is its place in its row; the
// last pass writes the indices as int64 to final_indices instead of to_indices.
// A tile first goes into shared memory ordered by digit, then consecutive threads write
// consecutive keys of each digit's run.  Each warp ranks a contiguous segment of the tile, in
// rounds of a key a lane, with counters of its own: a key's place in the tile is its digit's
// first place there, plus the keys of its digit in earlier warps' segments, in earlier rounds
// of its own, and in earlier lanes of its round.
extern "C" __global__ void __launch_bounds__(GPU_RADIX_THREADS)
gpu_radix_scatter(const gpu_key_t *from, gpu_key_t *to, const gpu_index_t *from_indices,
                  gpu_index_t *to_indices, long long *final_indices,
                  const unsigned long long *starts, const unsigned long long *totals,
                  long long rows, long long len, long long tiles, int shift) {
  __shared__ gpu_key_t tile_keys[GPU_TILE];
#if GPU_WITH_INDICES
  __shared__ gpu_index_t tile_indices[GPU_TILE];
#endif
  __shared__ long long delta[GPU_DIGITS];       // a key's place in `to` minus its place in tile
  __shared__ unsigned warp_sums[GPU_RADIX_WARPS];
  __shared__ unsigned long long digit_sums[GPU_RADIX_WARPS];
  // Each warp's keys of each digit; then where the warp's first key of a digit goes in tile_keys.
  __shared__ unsigned warp_counts[GPU_RADIX_WARPS][GPU_DIGITS];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned lanes_before = (1u << lane) - 1;
  for (long long t = blockIdx.x; t < rows * tiles; t += gridDim.x) {
    const long long row = t / tiles, tile = t % tiles;
    long long begin, end;
    gpu_tile_span(row, tile, len, &begin, &end);
    const long long segment = begin + (long long)warp * 32 * GPU_RADIX_ITEMS + lane;
    gpu_key_t key[GPU_RADIX_ITEMS];
#if GPU_WITH_INDICES
    gpu_index_t index[GPU_RADIX_ITEMS];
#endif
    unsigned rank[GPU_RADIX_ITEMS];
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {   // every load of the tile in flight at once
      const long long i = segment + r * 32;
      if (i < end) {
        key[r] = from[i];
#if GPU_WITH_INDICES
        index[r] = from_indices != nullptr ? from_indices[i] : (gpu_index_t)(i - row * len + 1);
#endif
      }
    }
    for (int w = 0; w < GPU_RADIX_WARPS; w++) warp_counts[w][threadIdx.x] = 0;
    __syncthreads();
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      const bool valid = segment + r * 32 < end;
      const unsigned digit = valid ? gpu_radix_digit(key[r], shift) : GPU_DIGITS;
      const unsigned peers = gpu_digit_peers(digit);
      const int leader = __ffs(peers) - 1;
      unsigned earlier = 0;                    // the warp's keys of the digit in earlier rounds
      if (valid && (int)lane == leader) earlier = atomicAdd(&warp_counts[warp][digit], __popc(peers));
      rank[r] = __shfl_sync(0xffffffffu, earlier, leader) + __popc(peers & lanes_before);
    }
    __syncthreads();
    unsigned total = 0;                         // thread d: the tile's keys of digit d
    for (int w = 0; w < GPU_RADIX_WARPS; w++) {
      const unsigned c = warp_counts[w][threadIdx.x];
      warp_counts[w][threadIdx.x] = total;
      total += c;
    }
    const unsigned first = gpu_block_exclusive_sum(total, warp_sums, (unsigned *)nullptr);
    for (int w = 0; w < GPU_RADIX_WARPS; w++) warp_counts[w][threadIdx.x] += first;
    const long long column = row * GPU_DIGITS + threadIdx.x;
    const unsigned long long smaller_digits =      // the row's keys of the digits before
      gpu_block_exclusive_sum(totals[column], digit_sums, (unsigned long long *)nullptr);
    delta[threadIdx.x] = row * len + (long long)(smaller_digits + starts[column * tiles + tile])
                         - first;
    __syncthreads();
    for (int r = 0; r < GPU_RADIX_ITEMS; r++) {
      if (segment + r * 32 < end) {
        const unsigned place = warp_counts[warp][gpu_radix_digit(key[r], shift)] + rank[r];
        tile_keys[place] = key[r];
#if GPU_WITH_INDICES
        tile_indices[place] = index[r];
#endif
      }
    }
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
