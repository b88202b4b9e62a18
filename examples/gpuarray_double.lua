-- The seeds' GPUArray example (python_3_pycuda模块):
--   a_gpu = gpuarray.to_gpu(numpy.random.randn(4,4).astype(numpy.float32))
--   a_doubled = (2*a_gpu).get()
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

print("a:")
print(a)
print("a_doubled:")
print(a_doubled)

-- doubling a float32 is exact
for i = 1, #a do
  assert(a_doubled[i] == 2 * a[i], ("element %d: %g, expected %g"):format(i, a_doubled[i], 2 * a[i]))
end
print(("OK: %s: all %d elements of 2 * a_gpu match the CPU."):format(gpu.get_device():name(), #a))
