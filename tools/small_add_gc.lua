-- tools/small_add_gc.lua: the small `a + b` (1000 float32, result allocated each op) under
-- the collector's settings, timed the way `make bench` times its small_add row (bench/NOTES.md
-- quotes such runs), on the GPU machine:
--
--   make bench-build && lua5.4 tools/small_add_gc.lua [rounds]
--
-- Each round times every variant once (round-robin, so drift in the host's speed spreads over
-- all of them): an untimed repeat of 2048 operations, then a timed one, with no collection
-- between, so a repeat pays for the finalizers of the one before as a long loop does.  Each
-- line: the median over rounds of host time an operation, and that over the median of raw C's
-- empty launch (bench_clock, in the same rounds), the small_add target's base.  Without a GPU
-- the stand-in driver (GPU_CUDA_LIBRARY=$PWD/build/libfakecuda.so) runs it, times meaningless.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local clock = require "bench_clock"

local N, PER = 1000, 2048
local ROUNDS = math.tointeger(tonumber(arg[1] or 30))
assert(ROUNDS and ROUNDS > 0, "rounds must be a positive integer")

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local values = {}
for i = 1, N do values[i] = math.random() * 2 - 1 end
local a = gpu.to_gpu(gpu.host.from_table(values, "float32"))
local b = a * 2
local mod = gpu.SourceModule([[
extern "C" __global__ void empty_kernel() {}
extern "C" __global__ void add_f32(float *c, const float *a, const float *b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}]])
local empty, add = mod:get_function("empty_kernel"), mod:get_function("add_f32")

-- Each variant: name, and a function that returns one round's host time an operation (us).
local variants = {
  {"raw C: empty launch (the base)", function() return clock.raw_launches(empty.handle, 1, PER, false)[1] end},
  {"raw C: pool allocation, add, free", function()
    return clock.raw_alloc_free(N * 4, 1, PER, add.handle, (N + 255) // 256, 256, {a.ptr, b.ptr, 0, N})[1]
  end},
}

-- A Lua variant: body runs PER operations; setup(false) before and setup(true) after a round.
local function lua_variant(name, body, setup)
  variants[#variants + 1] = {name, function()
    if setup then setup(false) end
    body()                         -- untimed: leaves its garbage to the timed repeat
    gpu.synchronize()
    local t0 = clock.now_us()
    body()
    local us = (clock.now_us() - t0) / PER
    gpu.synchronize()
    if setup then setup(true) end
    return us
  end}
end

local function add_loop() for _ = 1, PER do local _ = a + b end end
lua_variant("a + b, incremental collector (default)", add_loop)
lua_variant("(a + b):free()", function() for _ = 1, PER do (a + b):free() end end)
lua_variant("a + b, generational collector", add_loop,
            function(after) collectgarbage(after and "incremental" or "generational") end)
lua_variant("a + b, incremental, pause 100", add_loop,
            function(after) collectgarbage("incremental", after and 200 or 100) end)
lua_variant("a + b, collector stopped", add_loop, function(after)
  if after then collectgarbage("restart"); collectgarbage() else collectgarbage("stop") end
end)
local kept = {}
lua_variant("mem_alloc(4000) x 2048 kept, then freed", function()
  for i = 1, PER do kept[i] = gpu.mem_alloc(4000) end
  for i = 1, PER do kept[i]:free(); kept[i] = nil end
end)
lua_variant("mem_alloc(4000):free()", function() for _ = 1, PER do gpu.mem_alloc(4000):free() end end)

local times = {}
for _, v in ipairs(variants) do times[v[1]] = {} end
for _ = 1, ROUNDS do
  for _, v in ipairs(variants) do
    local t = times[v[1]]
    t[#t + 1] = v[2]()
  end
end
local base = median(times[variants[1][1]])
for _, v in ipairs(variants) do
  local us = median(times[v[1]])
  print(("%-42s %7.2f us  %5.2fx the empty launch"):format(v[1], us, us / base))
end
