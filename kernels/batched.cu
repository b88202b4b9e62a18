// batched.cu: the addresses of a stack's matrices, as cuBLAS's and cuSOLVER's batched routines
// take them.  src/solver.c launches it (lua/gpu/linalg.lua compiles it and hands it over):
// written on the host and copied up, 20000 addresses cost getrsBatched about 35 us more.
//
// out[k * count + i] = base_k + i * step_k for the `arrays` (1 or 2) stacks k.
extern "C" __global__ void gpu_matrix_addresses(unsigned long long *out, long long count, int arrays,
                                                unsigned long long base0, unsigned long long step0,
                                                unsigned long long base1, unsigned long long step1) {
  const long long total = count * arrays;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total;
       j += (long long)gridDim.x * blockDim.x) {
    const long long i = j % count;
    out[j] = j < count ? base0 + (unsigned long long)i * step0 : base1 + (unsigned long long)i * step1;
  }
}
