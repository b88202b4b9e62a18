-- tools/sort_time.lua: device time of gpuarray.sort and argsort over the shapes that take
-- each of kernels/sort.cu's paths (bench/NOTES.md quotes such runs), on the GPU machine:
--
--   lua5.4 tools/sort_time.lua [pattern]     (from the checkout, after `make`)
--
-- Each line: the dtype and shape, then the median of 7 timings between events (after one
-- untimed call) of a sort into a new array and of an argsort, in ms.  Inputs are uniform in
-- [-1000, 1000) cast to the dtype, or in [0, 1000) where the path says "small keys" (whose
-- high bytes are alike).  A pattern keeps the lines whose label matches it.
package.path = "lua/?.lua;lua/?/init.lua;tools/?.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local ga = gpu.gpuarray
local pattern = arg[1]

local device_ms = require "device_time"

local cases = {   -- {dtype, rows, length, path}
  {"float32", 1, 1 << 24, "a pass a byte"}, {"float64", 1, 1 << 24, "a pass a byte"},
  {"int32", 1, 1 << 24, "a pass a byte"}, {"int8", 1, 1 << 24, "a pass a byte"},
  {"int32", 1, 1 << 24, "a pass a byte, small keys"}, {"int64", 1, 1 << 24, "a pass a byte, small keys"},
  {"float32", 16, 1 << 20, "a pass a byte"}, {"float32", 4096, 4096, "a block a row"},
  {"float32", 8192, 3000, "a block a row"}, {"float32", 16384, 1000, "a block a row"},
  {"int16", 16384, 700, "a block a row"}, {"float32", 16384, 300, "a block a row"},
  {"float32", 16384, 200, "bitonic"}, {"complex64", 4096, 4096, "bitonic"},
}
for _, case in ipairs(cases) do
  local dtype, rows, len, path = case[1], case[2], case[3], case[4]
  local label = ("%-9s %5d x %-8d (%s)"):format(dtype, rows, len, path)
  if pattern == nil or label:find(pattern) then
    local low = path:find("small keys", 1, true) and 0 or -1000
    local a = (gpu.random.rand({rows, len}, "float64") * (1000 - low) + low):astype(dtype)
    local sort_ms = device_ms(function() return ga.sort(a) end, 7)
    local argsort_ms = device_ms(function() return ga.argsort(a) end, 7)
    print(("%s  sort %.3f ms  argsort %.3f ms"):format(label, sort_ms, argsort_ms))
    a:free()
  end
end
