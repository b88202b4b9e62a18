// batched.cu: the addresses of a stack's matrices, as cuBLAS's and cuSOLVER's batched routines
// take them.  src/solver.c launches it (lua/gpu/linalg.lua compiles it and hands it over):
// written on the host and copied up, 20000 addresses cost getrsBatched about 35 us more.
//
// out[k * matrices + i] = base_k + i * step_k for each of the `stacks` (1 or 2) stacks k.
extern "C" __global__ void gpu_matrix_addresses(unsigned long long *out, long long matrices,
                                                int stacks, unsigned long long base0,
                                                unsigned long long step0, unsigned long long base1,
                                                unsigned long long step1) {
  const long long total = matrices * stacks;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total;
       j += (long long)gridDim.x * blockDim.x) {
    const unsigned long long i = (unsigned long long)(j % matrices);
    out[j] = j < matrices ? base0 + i * step0 : base1 + i * step1;
  }
}
