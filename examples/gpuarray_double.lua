-- The seeds' GPUArray example: seeds/001 (PyCUDA blog), section "pycuda.gpuarray.GPUArray",
-- and seeds/002 (PyCUDA Tutorial 中文版), section "抽象以降低复杂度":
--   a_gpu = gpuarray.to_gpu(numpy.random.randn(4,4).astype(numpy.float32))
--   a_doubled = (2*a_gpu).get()
--   print(a_doubled); print(a_gpu)
-- in Lua: upload a random 4x4 float32 matrix, double it with the array operator (one
-- generated elementwise kernel), copy it back and check it against the CPU.
local gpu = require "gpu"
local gpuarray = gpu.gpuarray

local ok, why = gpu.available()
if not ok then
  print(("No CUDA device found (%s): nothing to run."):format(why))
  return
end

local a = gpu.host.empty({4, 4}, "float32")
for i = 1, #a do a[i] = math.random() * 2 - 1 end

local a_gpu = gpuarray.to_gpu(a)
local a_doubled = (2 * a_gpu):get()

print("a_doubled:")
print(a_doubled)
print("a_gpu (printed from the device, as PyCUDA prints a GPUArray):")
print(a_gpu)

-- doubling a float32 is exact, so the GPU must match the CPU bit for bit
local expected = gpu.host.empty(a.shape, a.dtype)
for i = 1, a.size do expected[i] = 2 * a[i] end
local same, why = gpu.array_equal(a_doubled, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: %s: all %d elements of 2 * a_gpu match the CPU."):format(gpu.get_device():name(), #a))
