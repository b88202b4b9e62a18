// take.cu: gather, for gpuarray.take (lua/gpu/take.lua fills in the dollar names).
//
// out[i] = a[indices[i]] over contiguous arrays, the indices 1-based as a[i] is in Lua.  An
// element is moved as GPU_ITEM_BYTES raw bytes, so one kernel serves every dtype of a size.
// Out-of-range indices, by GPU_MODE: 0 ("raise") leaves out[i] alone and lowers *first_bad to
// the smallest such position i; 1 ("wrap") counts cyclically (0 is the last element); 2
// ("clip") takes the nearest end.  No index reads outside a.

#define GPU_MODE $MODE
#define GPU_ITEM_BYTES $ITEM_BYTES

typedef $INDEX_T gpu_index_t;

struct __align__(GPU_ITEM_BYTES < 8 ? GPU_ITEM_BYTES : 8) gpu_item {
  unsigned char bytes[GPU_ITEM_BYTES];
};

// The 0-based element of an in-range index, or -1.
__device__ __forceinline__ long long gpu_position(gpu_index_t k, long long size) {
  const bool is_signed = (gpu_index_t)-1 < (gpu_index_t)0;
  // An unsigned index beyond the largest long long is out of any array's range.
  if (!is_signed && (unsigned long long)k > 9223372036854775807ull) {
#if GPU_MODE == 1
    return (long long)(((unsigned long long)k - 1) % (unsigned long long)size);
#elif GPU_MODE == 2
    return size - 1;
#else
    return -1;
#endif
  }
  long long j = (long long)k;
  if (j >= 1 && j <= size) return j - 1;
#if GPU_MODE == 1
  long long r = (j - 1) % size;
  return r < 0 ? r + size : r;
#elif GPU_MODE == 2
  return j < 1 ? 0 : size - 1;
#else
  return -1;
#endif
}

extern "C" __global__ void gpu_take(gpu_item *out, const gpu_item *a, const gpu_index_t *indices,
                                    long long n, long long size, unsigned long long *first_bad) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long p = gpu_position(indices[i], size);
    if (p >= 0) out[i] = a[p];
    else atomicMin(first_bad, (unsigned long long)i);
  }
}
