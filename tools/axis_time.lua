-- tools/axis_time.lua: device time of reductions along an axis over shapes of 2^26 elements,
-- rows from 16 long to 2^22 long, and columns from 3 to 8192 (bench/NOTES.md quotes such
-- runs), on the GPU machine:
--
--   lua5.4 tools/axis_time.lua [pattern]     (from the checkout, after `make`)
--
-- Each line: the operation, dtype, shape and axis, whether the rows start on 16 bytes (the
-- 16-byte path) or one element past it, then the median of 7 timings between events of ten
-- calls back to back (after one untimed call), in ms a call, and the input's GB/s.  A
-- pattern keeps the lines whose label matches it.
package.path = "lua/?.lua;lua/?/init.lua;tools/?.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local core = require "gpu.core"
local ga = gpu.gpuarray
local device_ms = require "device_time"
local pattern = arg[1]

local n = 1 << 26
local sources = {float32 = gpu.random.rand(n + 16, "float32") * 2 - 1}
sources.float16 = sources.float32:astype("float16")
sources.int8 = (sources.float32 * 100):astype("int8")

local cases = {   -- {operation, dtype, rows, columns, axis, first element}
  {"sum", "float32", 1 << 22, 16, 2, 1}, {"sum", "float32", 262144, 256, 2, 1},
  {"sum", "float32", 65536, 1024, 2, 1}, {"sum", "float32", 16384, 4096, 2, 1},
  {"sum", "float32", 8192, 8192, 2, 1}, {"sum", "float32", 8192, 8192, 2, 2},
  {"sum", "float32", 1024, 65536, 2, 1}, {"sum", "float32", 16, 1 << 22, 2, 1},
  {"sum", "float32", 8192, 8192, 1, 1}, {"sum", "float32", 16, 1 << 22, 1, 1},
  {"sum", "float32", 1 << 22, 16, 1, 1}, {"sum", "float32", 22369621, 3, 1, 1},
  {"sum", "float32", 262144, 256, 1, 1}, {"argmax", "float32", 1 << 22, 16, 1, 1},
  {"sum", "int8", 1 << 22, 16, 1, 1},
  {"max", "float32", 8192, 8192, 2, 1}, {"mean", "float32", 8192, 8192, 2, 1},
  {"argmax", "float32", 8192, 8192, 2, 1}, {"argmax", "float32", 1024, 65536, 2, 1},
  {"sum", "float16", 8192, 8192, 2, 1}, {"sum", "float16", 8192, 8192, 2, 2},
}
for _, case in ipairs(cases) do
  local op, dtype, rows, cols, axis, first = table.unpack(case)
  local label = ("%-6s %-7s %7d x %-7d axis %d, %s"):format(op, dtype, rows, cols, axis,
                                                            first == 1 and "aligned" or "unaligned")
  if pattern == nil or label:find(pattern) then
    local source = sources[dtype]
    local a = core.array_view(source, (first - 1) * source.itemsize, dtype, {rows, cols})
    local ms = device_ms(function() return ga[op](a, {axis = axis}) end, 7, 10)
    print(("%s  %.4f ms  %5.0f GB/s"):format(label, ms, rows * cols * source.itemsize / ms / 1e6))
  end
end
