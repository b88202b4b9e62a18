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
// Keys order as NumPy's: NaN after every number; complex numbers by real part, then
// imaginary part, those with NaN parts last (R + Rj, R + NaNj, NaN + Rj, NaN + NaNj).  With indices (argsort), equal keys order
// by index, which makes the result stable and independent of the network.

typedef $KEY_T gpu_key_t;

#define GPU_WITH_INDICES $WITH_INDICES
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
