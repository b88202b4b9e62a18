// compact.cu: stream compaction, for gpuarray.extract, nonzero and unique (lua/gpu/compact.lua
// fills in the dollar names).
//
// Two passes over tiles of GPU_TILE elements, a block a tile.  gpu_compact_count counts each
// tile's selected elements (a mask byte that is not zero selects); the Lua layer's inclusive
// running count of those counts (gpu.cumsum) gives each tile the place of its first selected
// element in the result, and its last value the result's size.  gpu_compact and
// gpu_compact_indices then place each tile's selected elements (or their flat indices) in
// order.  So the mask is read twice and the values once, each selected element written once:
// a scan of the whole mask would write and read 8 bytes an element more.  Elements move as
// raw bytes, so one kernel serves every dtype of a size.

#define GPU_ITEM_BYTES $ITEM_BYTES
#define GPU_BLOCK 256
#define GPU_ITEMS 16                        // mask bytes a thread reads: one 16-byte load
#define GPU_TILE (GPU_BLOCK * GPU_ITEMS)
#define GPU_WARPS (GPU_BLOCK / 32)
// elements gpu_compact loads before it stores them: 64 bytes a thread, at most the 16 it has
#define GPU_IN_FLIGHT (GPU_ITEM_BYTES <= 4 ? GPU_ITEMS : 64 / GPU_ITEM_BYTES)

// An element as a word of its size, so that it moves in one load and one store (16-byte
// elements are aligned to 8: complex128 is two float64).
#if GPU_ITEM_BYTES == 1
typedef unsigned char gpu_item;
#elif GPU_ITEM_BYTES == 2
typedef unsigned short gpu_item;
#elif GPU_ITEM_BYTES == 4
typedef unsigned int gpu_item;
#elif GPU_ITEM_BYTES == 8
typedef unsigned long long gpu_item;
#else
struct __align__(8) gpu_item { unsigned long long low, high; };
#endif

// Bit k of the result set where byte k of w is not zero (the low seven bits plus 0x7f carry
// into the high bit of a byte that is not zero).
__device__ __forceinline__ unsigned int gpu_selected4(unsigned int w) {
  unsigned int high = (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
  return (high >> 7 | high >> 14 | high >> 21 | high >> 28) & 0xfu;
}

// Which of the thread's GPU_ITEMS elements of its tile (consecutive, from the thread's
// GPU_ITEMS-th) are selected, bit j for the j-th: one 16-byte load where the mask allows.
__device__ __forceinline__ unsigned int gpu_selection(const unsigned char *__restrict__ mask,
                                                      long long n) {
  const long long first = (long long)blockIdx.x * GPU_TILE + (long long)threadIdx.x * GPU_ITEMS;
  unsigned int bits = 0;
  if (first + GPU_ITEMS <= n && ((size_t)mask & 15) == 0) {
    const uint4 r = *(const uint4 *)(mask + first);
    bits = gpu_selected4(r.x) | gpu_selected4(r.y) << 4 | gpu_selected4(r.z) << 8 |
           gpu_selected4(r.w) << 12;
  } else {
    for (int j = 0; j < GPU_ITEMS && first + j < n; j++)
      bits |= (unsigned int)(mask[first + j] != 0) << j;
  }
  return bits;
}

// The sum of v over the block, in every thread; warp_sums is scratch.
__device__ __forceinline__ unsigned int gpu_block_sum(unsigned int v, unsigned int *warp_sums) {
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
  for (int w = 0; w < GPU_WARPS; w++) v += warp_sums[w];
  return v;
}

// counts[t]: how many elements tile t selects.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_compact_count(int *counts, const unsigned char *__restrict__ mask, long long n) {
  __shared__ unsigned int warp_sums[GPU_WARPS];
  const unsigned int total = gpu_block_sum(__popc(gpu_selection(mask, n)), warp_sums);
  if (threadIdx.x == 0) counts[blockIdx.x] = (int)total;
}

// Each thread's selection (low 16 bits) and the place in its tile's result of its first
// selected element (high bits), for every thread of the block: from the threads' counts, a
// running sum over the block.
__device__ __forceinline__ void gpu_tile_places(unsigned int bits, unsigned int *places,
                                                unsigned int *warp_sums) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned int before = __popc(bits);                     // inclusive over the warp, then not
  for (int d = 1; d < 32; d *= 2) {
    unsigned int other = __shfl_up_sync(0xffffffffu, before, d);
    if (lane >= d) before += other;
  }
  if (lane == 31) warp_sums[warp] = before;
  before -= __popc(bits);
  __syncthreads();
  for (int w = 0; w < warp; w++) before += warp_sums[w];
  places[threadIdx.x] = before << 16 | bits;
  __syncthreads();
}

// Where element e of the tile goes in the tile's result, or -1 when it is not selected.
// Consecutive elements read two threads' places: a warp's reads are broadcasts.
__device__ __forceinline__ int gpu_place(const unsigned int *places, int e) {
  const unsigned int p = places[e / GPU_ITEMS], j = e % GPU_ITEMS;
  if (!(p >> j & 1u)) return -1;
  return (int)(p >> 16) + __popc(p & ((1u << j) - 1u));
}

// The first place in the result of tile blockIdx.x's selected elements, from the running
// count of the tiles' counts (tile 0 reads none of it).
__device__ __forceinline__ long long gpu_tile_start(const long long *running) {
  return blockIdx.x == 0 ? 0 : running[blockIdx.x - 1];
}

// The selected elements of values, in order.  The threads read and write the tile's elements
// in turn (element k * GPU_BLOCK + threadIdx.x), so a warp's loads and stores are contiguous.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_compact(gpu_item *__restrict__ out, const gpu_item *__restrict__ values,
            const unsigned char *__restrict__ mask, const long long *__restrict__ running,
            long long n) {
  __shared__ unsigned int places[GPU_BLOCK], warp_sums[GPU_WARPS];
  gpu_tile_places(gpu_selection(mask, n), places, warp_sums);
  const long long tile = (long long)blockIdx.x * GPU_TILE;
  gpu_item *const to = out + gpu_tile_start(running);
#pragma unroll 1
  for (int first = 0; first < GPU_ITEMS; first += GPU_IN_FLIGHT) {
    gpu_item item[GPU_IN_FLIGHT];
    int place[GPU_IN_FLIGHT];
#pragma unroll
    for (int k = 0; k < GPU_IN_FLIGHT; k++) {    // the loads first, so that they are in flight
      const int e = (first + k) * GPU_BLOCK + threadIdx.x;
      place[k] = tile + e < n ? gpu_place(places, e) : -1;
      if (place[k] >= 0) item[k] = values[tile + e];
    }
#pragma unroll
    for (int k = 0; k < GPU_IN_FLIGHT; k++)
      if (place[k] >= 0) to[place[k]] = item[k];
  }
}

// The 0-based flat indices of the selected elements, in order.
extern "C" __global__ void __launch_bounds__(GPU_BLOCK)
gpu_compact_indices(long long *__restrict__ out, const unsigned char *__restrict__ mask,
                    const long long *__restrict__ running, long long n) {
  __shared__ unsigned int places[GPU_BLOCK], warp_sums[GPU_WARPS];
  gpu_tile_places(gpu_selection(mask, n), places, warp_sums);
  const long long tile = (long long)blockIdx.x * GPU_TILE;
  long long *const to = out + gpu_tile_start(running);
  for (int k = 0; k < GPU_ITEMS; k++) {
    const int e = k * GPU_BLOCK + threadIdx.x;
    const int place = tile + e < n ? gpu_place(places, e) : -1;
    if (place >= 0) to[place] = tile + e;
  }
}
