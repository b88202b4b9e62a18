// select.cu: the keys at given places of an array's sorted order, without sorting it (the
// quantiles and median of a whole array; lua/gpu/sort.lua fills in the dollar names).
//
// A radix selection, a byte of the key's radix bits a pass (kernels/sort.cu's order: NaN
// last), highest byte first.  The wanted ranks are kept in groups: the ranks whose keys share
// the bytes found so far, a prefix.  gpu_select_histogram counts, for each group, the keys
// that have its prefix by the value of the next byte, each key once whatever the number of
// ranks; gpu_select_digits then finds the byte of each rank's key from its group's counts,
// subtracts the keys of smaller bytes from its rank, and regroups the ranks by their longer
// prefixes.  After the last byte a rank's prefix is its key's bits, which gpu_select_digits
// turns back into the key (a NaN as a NaN, -0.0 as 0.0).  Keys of four bytes or more may be
// read whole in the first two passes only: when the first pass's counts show that few
// enough keys share the groups' top bytes for it to pay, the second pass also copies those
// keys into a spare array (a block's copies gathered in shared memory and written after one
// atomicAdd), and the passes after it read the copies.

typedef $KEY_T gpu_key_t;
typedef $BITS_T gpu_bits_t;
#define GPU_SELECT_THREADS 256
#define GPU_SELECT_ITEMS 8                      // keys a thread loads at once
#define GPU_SELECT_RANKS 8                      // ranks a selection takes, so groups too
#define GPU_DIGITS 256
#define GPU_SELECT_READ 0                       // gpu_select_histogram's modes
#define GPU_SELECT_COPY 1
#define GPU_SELECT_FROM_COPIES 2

// The key's bits as an unsigned number that orders as the key does, and back.
__device__ __forceinline__ gpu_bits_t gpu_radix_bits(gpu_key_t key) {
  gpu_bits_t u;
  memcpy(&u, &key, sizeof u);
$RADIX_BITS
}

__device__ __forceinline__ gpu_key_t gpu_radix_key(gpu_bits_t u) {
$RADIX_KEY
  gpu_key_t key;
  memcpy(&key, &u, sizeof key);
  return key;
}

struct gpu_select_state {
  gpu_bits_t prefix[GPU_SELECT_RANKS];          // group g's bytes found so far, the rest zero
  unsigned long long rank[GPU_SELECT_RANKS];    // rank r's 0-based place among its group's keys
  int group_of[GPU_SELECT_RANKS];
  int ranks, groups;
  int copying;                                  // whether the second pass copies (set by the first)
  unsigned long long copies;                    // keys the copying pass has copied
  unsigned long long counts[GPU_SELECT_RANKS][GPU_DIGITS];   // the pass's, zeroed after it
};

// One block: ranks (0-based places in the sorted order, under the number of keys) all in
// one group of an empty prefix, the counts zeroed.
extern "C" __global__ void gpu_select_init(gpu_select_state *state, int ranks, long long r0,
                                           long long r1, long long r2, long long r3,
                                           long long r4, long long r5, long long r6,
                                           long long r7) {
  const long long wanted[GPU_SELECT_RANKS] = {r0, r1, r2, r3, r4, r5, r6, r7};
  for (int i = threadIdx.x; i < GPU_SELECT_RANKS * GPU_DIGITS; i += blockDim.x)
    state->counts[i / GPU_DIGITS][i % GPU_DIGITS] = 0;
  if (threadIdx.x == 0) {
    state->ranks = ranks;
    state->groups = 1;
    state->copying = 0;
    state->copies = 0;
    state->prefix[0] = 0;
    for (int r = 0; r < GPU_SELECT_RANKS; r++) {
      state->rank[r] = (unsigned long long)wanted[r];
      state->group_of[r] = 0;
    }
  }
}

// The exclusive running sum of value over the block's threads, and in *total the block's sum.
__device__ __forceinline__ unsigned gpu_block_exclusive_sum(unsigned value, unsigned *total) {
  __shared__ unsigned warp_sums[GPU_SELECT_THREADS / 32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned sum = value;
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned other = __shfl_up_sync(0xffffffffu, sum, d);
    if ((int)lane >= d) sum += other;
  }
  if (lane == 31) warp_sums[warp] = sum;
  __syncthreads();
  unsigned before = 0, all = 0;
  for (unsigned w = 0; w < GPU_SELECT_THREADS / 32; w++) {
    if (w < warp) before += warp_sums[w];
    all += warp_sums[w];
  }
  __syncthreads();                               // before warp_sums is used again
  *total = all;
  return before + sum - value;
}

// Adds to state->counts each group's keys by their byte at shift: the keys whose bytes above
// it are the group's prefix.  In mode GPU_SELECT_COPY, if state->copying, those keys are also
// copied to spare (in no order); in mode GPU_SELECT_FROM_COPIES, if state->copying, the keys
// read are spare's state->copies instead of keys' n.  (Adding a warp's equal bytes once, after
// __match_any_sync, was slower on the H200: 2^26 float32, a rank, 0.62 ms against 0.57.)
extern "C" __global__ void __launch_bounds__(GPU_SELECT_THREADS)
gpu_select_histogram(const gpu_key_t *keys, long long n, gpu_select_state *state, int shift,
                     gpu_key_t *spare, int mode) {
  __shared__ unsigned counts[GPU_SELECT_RANKS][GPU_DIGITS];
  __shared__ gpu_bits_t prefix[GPU_SELECT_RANKS];
  __shared__ gpu_key_t staged[GPU_SELECT_THREADS * GPU_SELECT_ITEMS];   // a tile's copies
  __shared__ unsigned long long copy_base;
  const int groups = state->groups;
  const bool copying = state->copying && mode == GPU_SELECT_COPY;
  if (state->copying && mode == GPU_SELECT_FROM_COPIES) {
    keys = spare;
    n = (long long)state->copies;
  }
  for (int i = threadIdx.x; i < groups * GPU_DIGITS; i += GPU_SELECT_THREADS)
    counts[i / GPU_DIGITS][i % GPU_DIGITS] = 0;
  if (threadIdx.x < groups) prefix[threadIdx.x] = state->prefix[threadIdx.x];
  __syncthreads();
  // the bits above the byte (none for the highest byte: a shift by the width is undefined)
  const gpu_bits_t known = shift + 8 < (int)(8 * sizeof(gpu_bits_t))
                         ? (gpu_bits_t)~(gpu_bits_t)((1ull << (shift + 8)) - 1) : (gpu_bits_t)0;
  const long long tile = (long long)GPU_SELECT_THREADS * GPU_SELECT_ITEMS;
  for (long long first = blockIdx.x * tile; first < n; first += (long long)gridDim.x * tile) {
    gpu_key_t key[GPU_SELECT_ITEMS];
    for (int r = 0; r < GPU_SELECT_ITEMS; r++) {   // every load in flight at once
      const long long i = first + r * GPU_SELECT_THREADS + threadIdx.x;
      if (i < n) key[r] = keys[i];
    }
    unsigned wanted = 0;                           // bit r: key r is under a group's prefix
    for (int r = 0; r < GPU_SELECT_ITEMS; r++) {
      unsigned slot = 0xffffffffu;                 // no group's key
      if (first + r * GPU_SELECT_THREADS + threadIdx.x < n) {
        const gpu_bits_t bits = gpu_radix_bits(key[r]);
        for (int g = 0; g < groups; g++) {
          if (((bits ^ prefix[g]) & known) == 0) slot = g * GPU_DIGITS + (unsigned)(bits >> shift) % GPU_DIGITS;
        }
      }
      if (slot != 0xffffffffu) {
        atomicAdd(&counts[slot / GPU_DIGITS][slot % GPU_DIGITS], 1u);
        wanted |= 1u << r;
      }
    }
    if (copying) {                                 // the same for the whole block
      // gathered in shared memory first, so that the writes to spare are whole lines
      unsigned total;
      unsigned at = gpu_block_exclusive_sum(__popc(wanted), &total);
      for (int r = 0; r < GPU_SELECT_ITEMS; r++)
        if (wanted & (1u << r)) staged[at++] = key[r];
      if (threadIdx.x == 0 && total != 0) copy_base = atomicAdd(&state->copies, (unsigned long long)total);
      __syncthreads();
      for (unsigned i = threadIdx.x; i < total; i += GPU_SELECT_THREADS) spare[copy_base + i] = staged[i];
      __syncthreads();                             // before staged and copy_base are rewritten
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < groups * GPU_DIGITS; i += GPU_SELECT_THREADS) {
    const unsigned c = counts[i / GPU_DIGITS][i % GPU_DIGITS];
    if (c != 0) atomicAdd(&state->counts[i / GPU_DIGITS][i % GPU_DIGITS], (unsigned long long)c);
  }
}

// One block of GPU_DIGITS threads after each histogram: each rank's byte at shift, its new
// rank among the keys of its longer prefix, the new groups; the counts zeroed for the next
// pass; whether copying the new groups' keys in the next pass pays.  Given out (the last
// pass), out[r] gets rank r's key.
extern "C" __global__ void __launch_bounds__(GPU_DIGITS)
gpu_select_digits(gpu_select_state *state, int shift, gpu_key_t *out) {
  __shared__ unsigned long long sums[GPU_DIGITS];
  __shared__ unsigned digit_of[GPU_SELECT_RANKS];
  __shared__ unsigned long long smaller_of[GPU_SELECT_RANKS];
  __shared__ unsigned long long count_of[GPU_SELECT_RANKS];   // keys of the rank's new prefix
  const int ranks = state->ranks, groups = state->groups;
  const unsigned d = threadIdx.x;
  unsigned long long counted = 0;                // the keys this pass counted (thread 0's)
  for (int g = 0; g < groups; g++) {
    const unsigned long long count = state->counts[g][d];
    sums[d] = count;
    __syncthreads();
    for (unsigned step = 1; step < GPU_DIGITS; step <<= 1) {   // running sums over the bytes
      const unsigned long long add = d >= step ? sums[d - step] : 0;
      __syncthreads();
      sums[d] += add;
      __syncthreads();
    }
    const unsigned long long smaller = sums[d] - count;   // the group's keys of smaller bytes
    for (int r = 0; r < ranks; r++) {
      const unsigned long long k = state->rank[r];
      if (state->group_of[r] == g && k >= smaller && k < smaller + count) {
        digit_of[r] = d;
        smaller_of[r] = smaller;
        count_of[r] = count;
      }
    }
    if (d == 0) counted += sums[GPU_DIGITS - 1];
    state->counts[g][d] = 0;
    __syncthreads();                             // before sums is rewritten
  }
  if (d == 0) {
    gpu_bits_t prefixes[GPU_SELECT_RANKS];
    int found = 0;
    unsigned long long kept = 0;                 // the keys under the new prefixes
    for (int r = 0; r < ranks; r++) {
      const gpu_bits_t p = state->prefix[state->group_of[r]] | ((gpu_bits_t)digit_of[r] << shift);
      int g = 0;
      while (g < found && prefixes[g] != p) g++;
      if (g == found) {
        prefixes[found++] = p;
        kept += count_of[r];
      }
      state->group_of[r] = g;
      state->rank[r] -= smaller_of[r];
    }
    for (int g = 0; g < found; g++) state->prefix[g] = prefixes[g];
    state->groups = found;
    // After the first of P passes, copying a fraction f of the keys costs f of a pass to
    // write and saves 1 - f of each of the last P - 2: it pays while f (P - 1) < P - 2.
    const unsigned long long passes = sizeof(gpu_bits_t);
    if (shift == 8 * (int)(passes - 1))
      state->copying = passes >= 4 && kept * (passes - 1) < counted * (passes - 2);
    if (out != nullptr)
      for (int r = 0; r < ranks; r++) out[r] = gpu_radix_key(prefixes[state->group_of[r]]);
  }
}
