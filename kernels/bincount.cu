// bincount.cu: NumPy's bincount, for gpuarray.bincount (lua/gpu/take.lua fills in the dollar
// names and checks first that every value lies in [0, bins)).
//
// counts[x[i]] += 1, or += weights[i] with GPU_WEIGHTED.  Data often has few distinct values,
// whose bins would take most of the increments as global atomics on a few addresses; where
// the bins fit (shared_bins), a block counts into shared memory first and adds its nonzero
// counts to the result at the end.

typedef $VALUE_T gpu_value_t;
#define GPU_WEIGHTED $WEIGHTED

#if GPU_WEIGHTED
typedef double gpu_count_t;
#else
typedef unsigned long long gpu_count_t;       // the int64 counts' bits
#endif

extern "C" __global__ void gpu_bincount(const gpu_value_t *x, const double *weights,
                                        gpu_count_t *counts, long long n, long long bins,
                                        int shared_bins) {
  extern __shared__ gpu_count_t block_counts[];
  if (shared_bins) {
    for (long long b = threadIdx.x; b < bins; b += blockDim.x) block_counts[b] = 0;
    __syncthreads();
  }
  gpu_count_t *into = shared_bins ? block_counts : counts;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
#if GPU_WEIGHTED
    atomicAdd(&into[(long long)x[i]], weights[i]);
#else
    atomicAdd(&into[(long long)x[i]], 1ull);
#endif
  }
  if (shared_bins) {
    __syncthreads();
    for (long long b = threadIdx.x; b < bins; b += blockDim.x)
      if (block_counts[b] != 0) atomicAdd(&counts[b], block_counts[b]);
  }
}
