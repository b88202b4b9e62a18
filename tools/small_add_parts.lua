-- tools/small_add_parts.lua: where the time of a small `c = a + b` goes, on a GPU.
--
--   make bench-build && lua5.4 tools/small_add_parts.lua
--
-- Times the parts of the operator's fast path one by one (host wall time per operation,
-- medians of 7 rounds of 2000), next to a raw cuLaunchKernel of an empty kernel (bench_clock),
-- so a change to the path can be aimed at the part that costs.  Without a GPU, the stand-in
-- driver of tools/fakecuda.c (`make fakecuda`, GPU_CUDA_LIBRARY=$PWD/build/libfakecuda.so)
-- runs nothing, so the figures are the binding's own cost.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local core = require "gpu.core"
local clock = require "bench_clock"
local ew = require "gpu.elementwise"
local now = clock.now_us

assert(gpu.available(), "needs a GPU, or the stand-in driver of tools/fakecuda.c")
local N, PER, ROUNDS = 1000, 2000, 7
local x = gpu.to_gpu(gpu.host.from_table((function()
  local t = {} for i = 1, N do t[i] = math.random() end return t end)(), "float32"))
local y = x * 2

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function time(name, body)
  local t = {}
  body(PER)
  gpu.synchronize()
  for r = 1, ROUNDS do
    collectgarbage()
    gpu.synchronize()
    local t0 = now()
    body(PER)
    gpu.synchronize()
    t[r] = (now() - t0) / PER
  end
  print(("%-44s %7.2f us"):format(name, median(t)))
end

local out = x + y
local add = getmetatable(x).__add
local array_like, array_pair = core.array_like, core.array_pair
local BLOCK = ew.BLOCK

-- The float32 add kernel, the way the fast path launches it.
local e, rt = require("gpu.operators").expression("add", {"float32", "float32"}, {"v1", "v2"})
local prog = ew.program{expr = e, out = rt, name = "add_float32_float32",
                        operands = {{name = "v1", dtype = "float32"}, {name = "v2", dtype = "float32"}}}
local k = ew.kernel(prog, "c")
local blocks = (N + BLOCK - 1) // BLOCK
local empty = gpu.SourceModule('extern "C" __global__ void empty_kernel() {}'):get_function("empty_kernel")

time("raw cuLaunchKernel, empty kernel", function(n) clock.raw_launches(empty.handle, 1, n, false) end)
time("prepared_call, empty kernel", function(n)
  for _ = 1, n do empty:prepared_call(1, 1) end
end)
local prepared_call = empty.prepared_call
time("prepared_call looked up once, empty kernel", function(n)
  for _ = 1, n do prepared_call(empty, 1, 1) end
end)
time("f.name (the Function's __index)", function(n) for _ = 1, n do local _ = empty.name end end)
time("f({grid = 1, block = 1}) with one table, empty", function(n)
  local opts = {grid = 1, block = 1}
  for _ = 1, n do empty(opts) end
end)
time("prepared_async_call of add, existing out", function(n)
  for _ = 1, n do k:prepared_async_call(blocks, BLOCK, nil, out, x, y, N) end
end)
time("array_pair", function(n) for _ = 1, n do array_pair(x, y) end end)
time("device_ordinal", function(n) for _ = 1, n do core.device_ordinal() end end)
time("mem_alloc(4000):free()", function(n) for _ = 1, n do gpu.mem_alloc(4000):free() end end)
time("array_like(x):free()", function(n) for _ = 1, n do array_like(x, "float32"):free() end end)
time("array_like(x), freed by the GC", function(n) for _ = 1, n do array_like(x, "float32") end end)
time("array_like(x) + launch, explicit free", function(n)
  for _ = 1, n do
    local c = array_like(x, "float32")
    k:prepared_async_call(blocks, BLOCK, nil, c, x, y, N)
    c:free()
  end
end)
time("a + b, :free()", function(n) for _ = 1, n do add(x, y):free() end end)
time("a + b, freed by the GC", function(n) for _ = 1, n do local _ = x + y end end)
collectgarbage("stop")
time("a + b, GC stopped (no finalizers)", function(n) for _ = 1, n do local _ = x + y end end)
collectgarbage("restart")
