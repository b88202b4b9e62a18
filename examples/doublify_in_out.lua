-- Doubling into a second array with the In and Out argument handlers: In copies a host array
-- to the device before the launch, Out copies the result back after it.
-- Twin of seeds/001 (PyCUDA blog), section "pycuda.driver.In, pycuda.driver.Out".
local gpu = require "gpu"

local source = [[
const int N = 16;
__global__ void doublify(float *a_in, float *a_out)
{
    int idx = threadIdx.x + threadIdx.y * blockDim.x;
    if (idx >= N) return;
    a_out[idx] = 2 * a_in[idx];
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
local a_doubled = gpu.host.empty(a.shape, a.dtype)

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
func(gpu.In(a), gpu.Out(a_doubled), {grid = {1, 1, 1}, block = {32, 32, 1}})
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
print(("OK: doublify wrote all %d doubled elements through gpu.In and gpu.Out"):format(a.size))
