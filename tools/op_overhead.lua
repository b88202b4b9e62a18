-- tools/op_overhead.lua: the Lua-side cost of `c = a + b` without a GPU.
--
--   lua5.4 tools/op_overhead.lua [iterations]      (LUA_PATH/LUA_CPATH as `make test` sets)
--
-- Replaces what needs a device with fakes: arrays are Lua tables with the real GPUArray
-- metatable (its C __index swapped for a Lua one with the same fields), array_empty,
-- device_ordinal and the kernel launch do nothing, and kernel_cache.get builds each
-- kernel's source once (no compile).  Everything between the operator and the launch is
-- the real code path, so the figure is the Lua overhead per operation (the fake fields cost
-- a little more than the C ones; allocation and the launch itself are not in it).
-- Fake arrays take the operators' general path: the C fast path (core.array_binary_operator)
-- needs real ones; tools/small_add_parts.lua times it, on a GPU or on tools/fakecuda.c.
local core = require "gpu.core"

local GPUArray = core.types.GPUArray
local methods = GPUArray.__methods
local itemsize = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, bool = 1}
local launches, records = 0, setmetatable({}, {__mode = "k"})

local function dims(t) local c = {} for i, v in ipairs(t) do c[i] = v end return c end

GPUArray.__gc = nil           -- the C finalizer frees userdata; these fakes are tables
GPUArray.__index = function(a, key)
  local m = methods[key]
  if m ~= nil then return m end
  local r = records[a]
  if key == "dtype" then return r.dtype
  elseif key == "shape" then return dims(r.shape)
  elseif key == "strides" then return dims(r.strides)
  elseif key == "size" then return r.size
  elseif key == "nbytes" then return r.size * itemsize[r.dtype]
  elseif key == "ndim" then return #r.shape
  elseif key == "itemsize" then return itemsize[r.dtype]
  elseif key == "offset" then return 0
  elseif key == "is_contiguous" then return true
  elseif key == "device" then return 0
  elseif key == "freed" then return false
  end
end

local function fake_array(shape, dtype)
  local size, strides, s = 1, {}, itemsize[dtype]
  for i = #shape, 1, -1 do strides[i] = s; s = s * shape[i]; size = size * shape[i] end
  local a = setmetatable({}, GPUArray)
  records[a] = {dtype = dtype, shape = dims(shape), strides = strides, size = size}
  return a
end

core.array_empty = function(shape, dtype) return fake_array(shape, dtype) end
core.device_ordinal = function() return 0 end
local gpu = require "gpu"            -- after the fakes: modules keep local copies of core's functions
local kernel_cache = require "gpu.kernel_cache"

local fake_function = {}
function fake_function.prepared_async_call() launches = launches + 1 end
function fake_function.prepared_call() launches = launches + 1 end
local built = {}
kernel_cache.get = function(key, build)
  local f = built[key]
  if f == nil then
    build()
    f = setmetatable({}, {__index = fake_function})
    built[key] = f
  end
  return f
end

local n = tonumber(arg[1]) or 100000
local a, b = fake_array({1000}, "float32"), fake_array({1000}, "float32")
local c = a + b
assert(getmetatable(c) == GPUArray and c.dtype == "float32" and c.size == 1000)

local function run(label, op)
  collectgarbage()
  local before = launches
  local t0 = os.clock()
  for _ = 1, n do op() end
  local us = (os.clock() - t0) / n * 1e6
  assert(launches - before == n, "every operation launches once")
  print(("%-34s %7.2f us per op"):format(label, us))
end

run("a + b (float32, 1000)", function() local _ = a + b end)
run("a + 2.0 (scalar)", function() local _ = a + 2.0 end)
local x2, y2 = fake_array({10, 100}, "float32"), fake_array({10, 100}, "float64")
run("x + y (10x100, float32 + float64)", function() local _ = x2 + y2 end)
run("empty Lua call + fake alloc", function() launches = launches + 1; local _ = fake_array({1000}, "float32") end)
