// bincount.cu: NumPy's bincount and histogram, for gpuarray.bincount and histogram
// (lua/gpu/take.lua fills in the dollar names; kernels/common.cu comes first).
//
// counts[b] += 1, or += weights[i] with GPU_WEIGHTED, for the bin b of each x[i]: x[i] itself
// (gpu_bincount, whose values take.lua checks to lie in [0, bins) first), or the bin of the
// edges that holds it (gpu_histogram).  Data often has few distinct values, whose bins would
// take most of the increments as global atomics on a few addresses; where the bins fit
// (shared_bins), a block counts into shared memory first and adds its nonzero counts to the
// result at the end.

typedef $VALUE_T gpu_value_t;
#define GPU_WEIGHTED $WEIGHTED
#define GPU_AS_DOUBLE(x) ($AS_DOUBLE)                // an element as the double it stands for

#if GPU_WEIGHTED
typedef double gpu_count_t;
#else
typedef unsigned long long gpu_count_t;       // the int64 counts' bits
#endif

// The bin of element i: bin_of(i) returns -1 for a value that counts nowhere.
template <typename BinOf>
__device__ __forceinline__ void gpu_count_bins(const double *weights, gpu_count_t *counts,
                                               long long n, long long bins, int shared_bins,
                                               BinOf bin_of) {
  extern __shared__ gpu_count_t block_counts[];
  if (shared_bins) {
    for (long long b = threadIdx.x; b < bins; b += blockDim.x) block_counts[b] = 0;
    __syncthreads();
  }
  gpu_count_t *into = shared_bins ? block_counts : counts;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long b = bin_of(i);
    if (b < 0) continue;
#if GPU_WEIGHTED
    atomicAdd(&into[b], weights[i]);
#else
    atomicAdd(&into[b], 1ull);
#endif
  }
  if (shared_bins) {
    __syncthreads();
    for (long long b = threadIdx.x; b < bins; b += blockDim.x)
      if (block_counts[b] != 0) atomicAdd(&counts[b], block_counts[b]);
  }
}

extern "C" __global__ void gpu_bincount(const gpu_value_t *x, const double *weights,
                                        gpu_count_t *counts, long long n, long long bins,
                                        int shared_bins) {
  gpu_count_bins(weights, counts, n, bins, shared_bins,
                 [=] (long long i) { return (long long)x[i]; });
}

// Bin b holds edges[b] <= x < edges[b + 1], the last one x == edges[bins] too, as NumPy's;
// values outside the edges, and NaN, count nowhere.  A binary search for the last edge at
// or below the value (equal edges make empty bins, as in NumPy).
extern "C" __global__ void gpu_histogram(const gpu_value_t *x, const double *weights,
                                         gpu_count_t *counts, long long n, long long bins,
                                         int shared_bins, const double *edges) {
  gpu_count_bins(weights, counts, n, bins, shared_bins, [=] (long long i) {
    const double v = GPU_AS_DOUBLE(x[i]);
    if (!(v >= edges[0] && v <= edges[bins])) return -1ll;
    long long lo = 0, hi = bins;
    while (hi - lo > 1) {
      const long long mid = lo + (hi - lo) / 2;
      if (edges[mid] <= v) lo = mid;
      else hi = mid;
    }
    return lo;
  });
}
