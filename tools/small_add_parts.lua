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

-- Variants are timed round-robin (every variant once per round), so drift in the machine's
-- speed during the run spreads over all of them instead of landing on a few rows.
local variants = {}
local function time(name, body, setup)
  variants[#variants + 1] = {name = name, body = body, setup = setup, t = {}}
end

local function run_all()
  for _, v in ipairs(variants) do
    if v.setup then v.setup() end
    v.body(PER)                -- warm-up
    gpu.synchronize()
    if v.setup then v.setup(true) end
  end
  for _ = 1, ROUNDS do
    for _, v in ipairs(variants) do
      if v.setup then v.setup() end
      collectgarbage()
      gpu.synchronize()
      local t0 = now()
      v.body(PER)
      gpu.synchronize()
      v.t[#v.t + 1] = (now() - t0) / PER
      if v.setup then v.setup(true) end
    end
  end
  for _, v in ipairs(variants) do print(("%-48s %7.2f us"):format(v.name, median(v.t))) end
end

local out = x + y
local add = getmetatable(x).__add
local array_like = core.array_like
local BLOCK = ew.BLOCK

-- The float32 add kernel, the way the fast path launches it.
local e, rt = require("gpu.operators").expression("add", {"float32", "float32"}, {"v1", "v2"})
local prog = ew.program{expr = e, out = rt, name = "add_float32_float32",
                        operands = {{name = "v1", dtype = "float32"}, {name = "v2", dtype = "float32"}}}
local k = ew.kernel(prog, "c")
local blocks = (N + BLOCK - 1) // BLOCK
local empty = gpu.SourceModule('extern "C" __global__ void empty_kernel() {}'):get_function("empty_kernel")

local launch_once = clock.launch_once_for()
local handle = empty.handle
time("raw cuLaunchKernel, empty kernel", function(n) clock.raw_launches(handle, 1, n, false) end)
time("raw cuCtxGetCurrent + cuLaunchKernel", function(n)
  clock.raw_launches(handle, 1, n, false, true)
end)
time("Lua loop + one C call to cuLaunchKernel (floor)", function(n)
  for _ = 1, n do launch_once(handle) end
end)
time("prepared_call(1, 1), empty kernel", function(n)
  for _ = 1, n do empty:prepared_call(1, 1) end
end)
local grid, block = {1, 1}, {1, 1, 1}
time("prepared_call({1, 1}, {1, 1, 1}), empty kernel", function(n)
  for _ = 1, n do empty:prepared_call(grid, block) end
end)
local prepared_call = empty.prepared_call
time("prepared_call looked up once, empty kernel", function(n)
  for _ = 1, n do prepared_call(empty, 1, 1) end
end)
time("f.name (the Function's __index)", function(n) for _ = 1, n do local _ = empty.name end end)
local opts = {grid = 1, block = 1}
time("f({grid = 1, block = 1}) with one table, empty", function(n)
  for _ = 1, n do empty(opts) end
end)
local ptr = function(a) return a.ptr end
time("raw launch of add, 4 arguments as kernelParams", function(n)
  clock.raw_launches_args(k.handle, 1, n, false, blocks, BLOCK, ptr(out), ptr(x), ptr(y), N)
end)
time("raw launch of add, 4 arguments as one buffer (extra)", function(n)
  clock.raw_launches_args(k.handle, 1, n, true, blocks, BLOCK, ptr(out), ptr(x), ptr(y), N)
end)
time("prepared_async_call of add, existing out", function(n)
  for _ = 1, n do k:prepared_async_call(blocks, BLOCK, nil, out, x, y, N) end
end)
time("mem_alloc(4000):free()", function(n) for _ = 1, n do gpu.mem_alloc(4000):free() end end)
local kept = {}
time("mem_alloc(4000), 2000 kept, then freed: per alloc+free", function(n)
  for i = 1, n do kept[i] = gpu.mem_alloc(4000) end
  for i = 1, n do kept[i]:free(); kept[i] = nil end
end)
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
time("a + b, <close>", function(n)
  for _ = 1, n do local c <close> = x + y end   -- luacheck: ignore c
end)
time("a + b, freed by the GC (incremental)", function(n) for _ = 1, n do local _ = x + y end end)
time("a + b, freed by the GC (generational)", function(n) for _ = 1, n do local _ = x + y end end,
     function(after) collectgarbage(after and "incremental" or "generational") end)
time("a + b, GC stopped (no finalizers)", function(n) for _ = 1, n do local _ = x + y end end,
     function(after) collectgarbage(after and "restart" or "stop") end)
run_all()
