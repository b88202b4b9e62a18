-- Doubling a 4 x 4 array with a plain call, then with prepared calls: f:prepare("P") fixes the
-- parameter types once (Python struct letters), so f:prepared_call(grid, block, ...) skips the
-- per-call type inspection.
-- Twin of seeds/002 (PyCUDA Tutorial 中文版), sections "运行一个内核函数" (PyCUDA's
-- examples/demo.py: func(a_gpu, block=(4,4,1))) and "有准备地调用函数" (prepared invocations).
local gpu = require "gpu"

local source = [[
__global__ void doublify(float *a)
{
    int idx = threadIdx.x + threadIdx.y * 4;
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
local a_gpu = gpu.to_device(a)

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
func(a_gpu, {block = {4, 4, 1}})                              -- a * 2, as demo.py
print(gpu.from_device(a_gpu, a.shape, a.dtype))
print(a)

local grid = {1, 1}
local block = {4, 4, 1}
func:prepare("P")
func:prepared_call(grid, block, a_gpu)                        -- a * 4
local seconds = func:prepared_timed_call(grid, block, a_gpu)  -- a * 8, timed
print(("the timed call took %.1f microseconds"):format(seconds * 1e6))

local a_times_8 = gpu.from_device(a_gpu, a.shape, a.dtype)
print(a_times_8)

-- doubling a float32 is exact, so each factor of 2 must match the CPU bit for bit
local expected = gpu.host.empty(a.shape, a.dtype)
for i = 1, a.size do expected[i] = 8 * a[i] end
local same, why = gpu.array_equal(a_times_8, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: a plain call and two prepared calls of doublify multiplied all %d elements by 8"):format(a.size))
