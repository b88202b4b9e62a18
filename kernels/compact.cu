// compact.cu: stream compaction, for gpuarray.extract, nonzero and unique (lua/gpu/compact.lua
// fills in the dollar names).
//
// positions is the inclusive running count of mask (gpu.cumsum of it), so the k-th selected
// element (1-based) has position k and goes to out[k - 1].  Elements move as raw bytes, so one
// kernel serves every dtype of a size.

#define GPU_ITEM_BYTES $ITEM_BYTES

struct __align__(GPU_ITEM_BYTES < 8 ? GPU_ITEM_BYTES : 8) gpu_item {
  unsigned char bytes[GPU_ITEM_BYTES];
};

// The selected elements of values, in order.
extern "C" __global__ void gpu_compact(gpu_item *out, const gpu_item *values, const bool *mask,
                                       const long long *positions, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    if (mask[i]) out[positions[i] - 1] = values[i];
}

// The 0-based flat indices of the selected elements, in order.
extern "C" __global__ void gpu_compact_indices(long long *out, const bool *mask,
                                               const long long *positions, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    if (mask[i]) out[positions[i] - 1] = i;
}
