-- Doubling with prepared calls: f:prepare("P") fixes the parameter types once (Python struct
-- letters), so f:prepared_call(grid, block, ...) skips the per-call type inspection.
-- Twin of seeds/002 (PyCUDA Tutorial 中文版), section "有准备地调用函数" (prepared invocations).
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
local grid = {1, 1}
local block = {4, 4, 1}
func:prepare("P")
func:prepared_call(grid, block, a_gpu)                        -- a * 2
local seconds = func:prepared_timed_call(grid, block, a_gpu)  -- a * 4, timed
print(("the timed call took %.1f microseconds"):format(seconds * 1e6))

local a_quadrupled = gpu.from_device(a_gpu, a.shape, a.dtype)
print(a_quadrupled)

local wrong = 0
for i = 1, a.size do
  if a_quadrupled[i] ~= 4 * a[i] then
    wrong = wrong + 1
    io.stderr:write(("element %d: got %.9g, expected %.9g\n"):format(i, a_quadrupled[i], 4 * a[i]))
  end
end
if wrong > 0 then
  io.stderr:write(("FAILED: %d of %d elements differ from the CPU\n"):format(wrong, a.size))
  os.exit(1)
end
print(("OK: two prepared calls of doublify quadrupled all %d elements"):format(a.size))
