-- Doubling an array in managed memory: the host and the kernel use the same array, so there
-- is no copy in either direction (PyCUDA's driver.managed_zeros, whose documentation shows
-- this doublify on a managed array; not one of the seeds' examples).
local gpu = require "gpu"

local source = [[
__global__ void doublify(float *a, int n)
{
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < n) a[idx] *= 2;
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled doublify for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

local n = 1000
local a = gpu.host.managed_zeros(n, "float32")
local original = {}
for i = 1, n do
  a[i] = math.random() * 4 - 2
  original[i] = a[i]                    -- the float32 value the array holds
end

local doublify = gpu.SourceModule(source):get_function("doublify")
doublify(a, n, {block = {128}, grid = {(n + 127) // 128}})   -- the array itself is the pointer
gpu.synchronize()                       -- the kernel's writes are the host's to read after this

-- doubling a float32 is exact, so the GPU must match the CPU bit for bit
for i = 1, n do
  if a[i] ~= 2 * original[i] then
    io.stderr:write(("FAILED: element %d is %s, expected %s\n"):format(i, a[i], 2 * original[i]))
    os.exit(1)
  end
end
print(a:reshape(10, 100))
print(("OK: doublify doubled all %d elements of a managed array in place"):format(n))
a:free()
