-- Streams and events: two halves of an array are squared on two streams (page-locked copies
-- in, kernel, copies out, all asynchronous), events join the streams and time the whole.
-- Twin of seeds/004 (CUDA Python 简介), section "cuda.core" (Stream:流操作(异步执行),
-- Event:事件计时(如记录核函数执行时间)), and seeds/000 (python_3_pycuda模块), section
-- "python3 pycuda库 详解" item 5 "流（Streams）和事件（Events）".  Neither seed has code for
-- it; this is the PyCUDA way to do what they describe.
local gpu = require "gpu"

local source = [[
__global__ void square(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled square for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

local square = gpu.SourceModule(source):get_function("square")
local half = 1 << 20
local block = 256
local grid = (half + block - 1) // block

-- asynchronous copies need page-locked host memory
local inputs, outputs, x_devs, y_devs = {}, {}, {}, {}
for k = 1, 2 do
  inputs[k] = gpu.host.pagelocked_empty(half, "float32")
  outputs[k] = gpu.host.pagelocked_zeros(half, "float32")
  for i = 1, half do inputs[k][i] = math.random() * 2 - 1 end
  x_devs[k] = gpu.mem_alloc(inputs[k].nbytes)
  y_devs[k] = gpu.mem_alloc(outputs[k].nbytes)
end

local streams = {gpu.Stream({non_blocking = true}), gpu.Stream({non_blocking = true})}
local start, stop = gpu.Event({timing = true}), gpu.Event({timing = true})
local second_done = gpu.Event()

start:record(streams[1])
streams[2]:wait_for_event(start)             -- the second stream starts after `start` too
for k, stream in ipairs(streams) do
  gpu.memcpy_htod_async(x_devs[k], inputs[k], stream)
  square(x_devs[k], y_devs[k], half, {block = {block}, grid = {grid}, stream = stream})
  gpu.memcpy_dtoh_async(outputs[k], y_devs[k], stream)
end
second_done:record(streams[2])
streams[1]:wait_for_event(second_done)       -- `stop` comes after both streams' work
stop:record(streams[1])
stop:synchronize()
print(("squared 2 x %d floats on two streams in %.3f ms (copies included)")
      :format(half, stop:time_since(start)))
assert(streams[1]:is_done() and streams[2]:is_done())

-- x * x of a float32 is one rounding of the exact product, which a double holds exactly
local f32 = function(v) return string.unpack("<f", string.pack("<f", v)) end
local wrong = 0
for k = 1, 2 do
  for i = 1, half do
    local x = inputs[k][i]
    if outputs[k][i] ~= f32(x * x) then
      wrong = wrong + 1
      if wrong <= 10 then
        io.stderr:write(("half %d element %d: got %.9g, expected %.9g\n")
                        :format(k, i, outputs[k][i], f32(x * x)))
      end
    end
  end
end
if wrong > 0 then
  io.stderr:write(("FAILED: %d of %d squares differ from the CPU\n"):format(wrong, 2 * half))
  os.exit(1)
end
print(("OK: two streams squared all %d elements; events timed them"):format(2 * half))
