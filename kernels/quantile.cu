// quantile.cu: NumPy's quantiles and medians of sorted lines, a thread a line (lua/gpu/quantile.lua
// fills in the dollar names and compiles one kernel per dtype and kind of result).
//
// lines holds `count` lines of n keys each, contiguous and sorted (NaN last).  A line's
// numbers are all n of its keys, or, with GPU_SKIP_NAN (nanquantile, nanmedian), those before
// its first NaN, found by a binary search.  NumPy's "linear" quantile at fraction q: the keys
// around q * (m - 1) of the m numbers, low + (high - low) * t below t = 0.5 and
// high - (high - low) * (1 - t) from it, each operation rounded to the work type as NumPy's
// (and gpu.elementwise's) operations round in the array's dtype; t is rounded to it first,
// as NumPy's gamma.  A median is the middle key, or the mean of the two middle ones.  A line
// with a NaN gives NaN, as does one of NaNs only when they are skipped.
//
// Over a whole array lua/gpu/quantile.lua may select the keys a result reads instead of
// sorting (gpu.sort.select): then `lines` holds those keys, one line of them, and low_slot,
// high_slot and last_slot (-1 otherwise) say where the keys at the two places around the
// fraction (the two middle ones for a median) and the last key are.

typedef $KEY_T gpu_key_t;
typedef $WORK_T gpu_work_t;
typedef $OUT_T gpu_out_t;
#define GPU_SKIP_NAN $SKIP_NAN
#define GPU_MEDIAN $MEDIAN
#define GPU_FLOAT_KEYS $FLOAT_KEYS

__device__ __forceinline__ gpu_work_t gpu_work(gpu_key_t k) { return $TO_WORK; }
// x rounded to the work dtype (16-bit floats work in float, rounded after each operation)
__device__ __forceinline__ gpu_work_t gpu_round(gpu_work_t x) { return $ROUND; }
__device__ __forceinline__ gpu_work_t gpu_round_double(double x) { return $ROUND_DOUBLE; }
__device__ __forceinline__ gpu_out_t gpu_store(gpu_work_t x) { return $STORE; }
__device__ __forceinline__ bool gpu_is_nan(gpu_key_t k) { return GPU_FLOAT_KEYS && gpu_work(k) != gpu_work(k); }
// Each operation rounded on its own, as the elementwise operations' separate kernels round
// them: the compiler would otherwise fuse a product and a sum into one fma, rounded once.
__device__ __forceinline__ float gpu_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float gpu_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float gpu_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gpu_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double gpu_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double gpu_mul(double a, double b) { return __dmul_rn(a, b); }

extern "C" __global__ void gpu_quantile(const gpu_key_t *lines, gpu_out_t *out, long long count,
                                        long long n, double q, long long low_slot,
                                        long long high_slot, long long last_slot) {
  for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < count;
       line += (long long)gridDim.x * blockDim.x) {
    const gpu_key_t *keys = lines + line * n;
    long long m = n;                             // the line's numbers
#if GPU_SKIP_NAN
    long long lo = 0, hi = n;                    // the first NaN's place: NaNs sort last
    while (lo < hi) {
      const long long mid = lo + (hi - lo) / 2;
      if (gpu_is_nan(keys[mid])) hi = mid; else lo = mid + 1;
    }
    m = lo;
    if (m == 0) {
      out[line] = gpu_store((gpu_work_t)__longlong_as_double(0x7ff8000000000000LL));
      continue;
    }
#else
    const gpu_key_t last = keys[last_slot >= 0 ? last_slot : n - 1];
    if (gpu_is_nan(last)) {
      out[line] = gpu_store(gpu_work(last));
      continue;
    }
#endif
    gpu_work_t value;
#if GPU_MEDIAN
    value = gpu_work(keys[low_slot >= 0 ? low_slot : (m - 1) / 2]);
    if (m % 2 == 0) {
      const gpu_work_t high = gpu_work(keys[high_slot >= 0 ? high_slot : m / 2]);
      value = gpu_round(gpu_mul(gpu_round(gpu_add(value, high)), (gpu_work_t)0.5));
    }
#else
    const double position = __dmul_rn(q, (double)(m - 1));   // rounded before t is taken from it
    const double below = floor(position);
    const long long b = (long long)below;
    const gpu_work_t low = gpu_work(keys[low_slot >= 0 ? low_slot : b]);
    value = low;
    if (position != below) {
      const gpu_work_t t = gpu_round_double(position - below);
      const gpu_work_t high = gpu_work(keys[high_slot >= 0 ? high_slot : b + 1 < m ? b + 1 : m - 1]);
      const gpu_work_t diff = gpu_round(gpu_sub(high, low));
      value = t < (gpu_work_t)0.5 ? gpu_round(gpu_add(low, gpu_round(gpu_mul(diff, t))))
                                  : gpu_round(gpu_sub(high, gpu_round(gpu_mul(diff, gpu_sub((gpu_work_t)1, t)))));
    }
#endif
    out[line] = gpu_store(value);
  }
}
