-- Doubling through __shared__ memory: each thread stages its doubled element in the block's
-- shared array, the block synchronises, then each thread writes its element out.
-- Twin of seeds/001 (PyCUDA blog), section "共享内存" (shared memory).
-- The seed returns early for idx >= N before __syncthreads(); a barrier that only some of
-- the block's threads reach is undefined behaviour, so here the guard sits around the
-- accesses instead and every thread reaches the barrier.
local gpu = require "gpu"

local source = [[
const int N = 16;
__global__ void doublify(float *a_in, float *a_out)
{
    __shared__ float sdatas[N];
    int idx = threadIdx.x + threadIdx.y * blockDim.x;   // index into global memory
    int tid = threadIdx.x;                              // index into shared memory
    if (idx < N) sdatas[tid] = 2 * a_in[idx];           // write shared memory
    __syncthreads();
    if (idx < N) a_out[idx] = sdatas[tid];              // shared memory to global memory
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled doublify for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

local a = gpu.host.empty({4, 4}, "float32")
for i = 1, a.size do a[i] = math.random() * 4 - 2 end
local a_doubled = gpu.host.zeros(a.shape, a.dtype)
local a_in = gpu.to_device(a)
local a_out = gpu.to_device(a_doubled)

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
print(("doublify uses %d bytes of static shared memory"):format(func.shared_size_bytes))
func(a_in, a_out, {grid = {1, 1, 1}, block = {32, 32, 1}})

a_doubled = gpu.from_device(a_out, a.shape, a.dtype)
print(a_doubled)
print(a)

-- doubling a float32 is exact, so the GPU must match the CPU bit for bit
local expected = gpu.host.empty(a.shape, a.dtype)
for i = 1, a.size do expected[i] = 2 * a[i] end
local same, why = gpu.array_equal(a_doubled, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: doublify doubled all %d elements through shared memory"):format(a.size))
