-- Parallel sum, the Lua twin of the cuda-python example in the seeds (004, cuda.cccl.parallel
-- reduce): sum 1024*1024 random float32 numbers on the GPU and compare with the CPU.  Three
-- ways: a hand-written reduction kernel compiled with gpu.SourceModule (each block sums its
-- share with a shared-memory tree, a second launch sums the block results), a:sum(), and a
-- gpu.ReductionKernel with the seed's (a, b) -> a + b operator.  Without a GPU it still
-- compiles the kernel with NVRTC.
local gpu = require "gpu"

local source = [[
__global__ void block_sum(const float *data, float *partial, int n) {
    __shared__ float cache[256];
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)
        acc += data[i];
    cache[tid] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) cache[tid] += cache[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = cache[0];
}
]]

local ok, why = gpu.available()
if not ok then
  local ptx = gpu.compile(source, {arch = "compute_90", target = "ptx"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled block_sum with NVRTC anyway: %d bytes of PTX for compute_90."):format(#ptx))
  return
end

local n = 1024 * 1024
local data = gpu.host.empty(n, "float32")
for i = 1, n do data[i] = math.random() end   -- like np.random.rand(...).astype(np.float32)
local expected = 0
for i = 1, n do expected = expected + data[i] end

-- 1. the kernel, launched by hand
local block_sum = gpu.SourceModule(source):get_function("block_sum")
local threads, blocks = 256, 256
local d_data = gpu.to_device(data)
local d_partial = gpu.mem_alloc(blocks * 4)
block_sum(d_data, d_partial, n, {block = {threads}, grid = {blocks}})
block_sum(d_partial, d_partial, blocks, {block = {threads}, grid = {1}})
local kernel_result = gpu.from_device(d_partial, 1, "float32")[1]

-- 2. the library's reduction, on a GPU array
local a = gpu.to_gpu(data)
local method_result = a:sum()

-- 3. a custom reduction, the (a, b) -> a + b of the seed
local reduce = gpu.ReductionKernel("float32", "0", "a + b", "x[i]", "const float *x")
local custom_result = gpu.from_device(reduce(a).gpudata, 1, "float32")[1]

local wrong = 0
local function report(what, got)
  local rel = math.abs(got - expected) / expected
  print(("%-22s %.6f  (relative error %.2e)"):format(what, got, rel))
  if not (rel < 1e-5) then wrong = wrong + 1 end
end
print(("%s: sum of %d random float32 numbers"):format(gpu.get_device():name(), n))
print(("%-22s %.6f"):format("CPU (double):", expected))
report("SourceModule kernel:", kernel_result)
report("a:sum():", method_result)
report("ReductionKernel:", custom_result)
if wrong > 0 then
  io.stderr:write(("FAILED: %d of the 3 GPU sums differ from the CPU sum by 1e-5 or more\n"):format(wrong))
  os.exit(1)
end
print("OK: all three GPU sums match the CPU.")
