-- Adding two vectors of a million float32 elements, with In and Out handlers moving the data.
-- Twin of seeds/003 (Python基于pyCUDA实现GPU加速并行计算功能入门), section "六、程序示例"
-- ("第一个pyCUDA程序", add_kernel).
local gpu = require "gpu"

local source = [[
__global__ void add_kernel(float *d_a, float *d_b, float *d_result, int N)
{
    int idx = threadIdx.x + blockDim.x * blockIdx.x;
    if (idx < N)
        d_result[idx] = d_a[idx] + d_b[idx];
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled add_kernel for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

local mod = gpu.SourceModule(source)
local add_kernel = mod:get_function("add_kernel")

local N = 1024 * 1024
local a = gpu.host.empty(N, "float32")
local b = gpu.host.empty(N, "float32")
local result = gpu.host.zeros(N, "float32")
-- random multiples of 2^-20 in [-1, 1]: their float32 sums are exact, so the check can be
local scale = 1 << 20
for i = 1, N do
  a[i] = math.random(-scale, scale) / scale
  b[i] = math.random(-scale, scale) / scale
end

local threads_per_block = 256
local blocks_per_grid = (N + threads_per_block - 1) // threads_per_block
add_kernel(gpu.In(a), gpu.In(b), gpu.Out(result), N,
           {block = {threads_per_block, 1, 1}, grid = {blocks_per_grid, 1}})

local first = {}
for i = 1, 10 do first[i] = ("%.6g"):format(result[i]) end
print("first 10 results: " .. table.concat(first, " "))

local expected = gpu.host.empty(N, "float32")
for i = 1, N do expected[i] = a[i] + b[i] end
local correct, why = gpu.allclose(result, expected)       -- numpy.allclose(result, a + b)
if not correct then
  io.stderr:write("FAILED: Results are incorrect! ", why, "\n")
  os.exit(1)
end
print(("OK: Results are correct! add_kernel matches the CPU on all %d elements"):format(N))
