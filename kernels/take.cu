// take.cu: gather and scatter, for gpuarray.take, put and scatter_add (lua/gpu/take.lua
// fills in the dollar names).
//
// out[i] = a[indices[i]] (gpu_take) and a[indices[i]] = values[i] (gpu_put) over contiguous
// arrays, the indices 1-based as a[i] is in Lua.  An element is moved as GPU_ITEM_BYTES raw
// bytes, so one kernel serves every dtype of a size.  Out-of-range indices, by GPU_MODE: 0
// ("raise") leaves out[i] alone and lowers *first_bad to the smallest such position i (put
// finds them first, with gpu_first_bad_index, and writes nothing if there are any); 1
// ("wrap") counts cyclically (0 is the last element); 2 ("clip") takes the nearest end.  No
// index reads or writes outside a.  With GPU_ADD_COMPONENTS > 0, gpu_scatter_add adds instead,
// by atomics on gpu_add_t (each of a complex element's two parts on its own).

#define GPU_MODE $MODE
#define GPU_ITEM_BYTES $ITEM_BYTES
#define GPU_ADD_COMPONENTS $ADD_COMPONENTS

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

// The value of position i: values repeat when there are fewer of them than indices (NumPy's
// put), and one value serves every index.
__device__ __forceinline__ long long gpu_value_position(long long i, long long n_values) {
  return i < n_values ? i : i % n_values;
}

extern "C" __global__ void gpu_put(gpu_item *a, const gpu_index_t *indices, const gpu_item *values,
                                   long long n, long long n_values, long long size) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long p = gpu_position(indices[i], size);
    if (p >= 0) a[p] = values[gpu_value_position(i, n_values)];
  }
}

// *first_bad (all ones before) gets the smallest position of an index out of range.
extern "C" __global__ void gpu_first_bad_index(const gpu_index_t *indices, long long n, long long size,
                                               unsigned long long *first_bad) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (gpu_position(indices[i], size) < 0) atomicMin(first_bad, (unsigned long long)i);
  }
}

#if GPU_ADD_COMPONENTS > 0
typedef $ADD_T gpu_add_t;

extern "C" __global__ void gpu_scatter_add(gpu_add_t *a, const gpu_index_t *indices,
                                           const gpu_add_t *values, long long n,
                                           long long n_values, long long size) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long p = gpu_position(indices[i], size);
    if (p < 0) continue;
    const long long v = gpu_value_position(i, n_values);
    for (int c = 0; c < GPU_ADD_COMPONENTS; c++)
      atomicAdd(&a[p * GPU_ADD_COMPONENTS + c], values[v * GPU_ADD_COMPONENTS + c]);
  }
}
#endif
