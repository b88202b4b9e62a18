-- Doubling a host array with the InOut argument handler: the launch copies the array to the
-- device before the kernel and back after it, so no explicit device buffer is needed.
-- Twin of
--   seeds/001 (PyCUDA blog), section "pycuda.driver.InOut", and
--   seeds/002 (PyCUDA Tutorial 中文版), section "简化内存拷贝" (func(cuda.InOut(a), ...)).
local gpu = require "gpu"

local source = [[
const int N = 16;
__global__ void doublify(float *a)
{
    int idx = threadIdx.x + threadIdx.y * blockDim.x;
    if (idx >= N) return;
    a[idx] *= 2;
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
local original = gpu.host.from_table(a:totable(), a.dtype)   -- a copy, for the check

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
func(gpu.InOut(a), {grid = {1, 1, 1}, block = {32, 32, 1}})   -- a is input and output
print(a)

-- doubling a float32 is exact, so the GPU must match the CPU bit for bit
local expected = gpu.host.empty(a.shape, a.dtype)
for i = 1, a.size do expected[i] = 2 * original[i] end
local same, why = gpu.array_equal(a, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: doublify doubled all %d elements through gpu.InOut"):format(a.size))
