-- Doubling with to_device (allocate and copy in one call) and from_device (copy a buffer
-- back into a new host array of a given shape and dtype).
-- Twin of seeds/001 (PyCUDA blog), section "pycuda.driver.to_device, pycuda.driver.from_device".
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
local a_doubled = gpu.host.zeros(a.shape, a.dtype)

local a_in = gpu.to_device(a)                -- CPU --> GPU
local a_out = gpu.to_device(a_doubled)       -- CPU --> GPU

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
func(a_in, a_out, {grid = {1, 1, 1}, block = {32, 32, 1}})

a_doubled = gpu.from_device(a_out, a.shape, a.dtype)   -- GPU --> CPU
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
print(("OK: doublify doubled all %d elements (to_device, from_device)"):format(a.size))
