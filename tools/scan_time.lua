-- tools/scan_time.lua: device time of gpu.cumsum and of a custom inclusive scan over the
-- dtypes and layouts that take kernels/scan.cu's different paths (bench/NOTES.md quotes such
-- runs), on the GPU machine:
--
--   lua5.4 tools/scan_time.lua [log2 n [pattern]]     (from the checkout, after `make`)
--
-- Each line: what was scanned, then the median of 9 timings between events (after one untimed
-- call) of a scan into a new array, in ms, and the bandwidth it makes, counting the input
-- read once and the output written once.  n defaults to 2^28 elements; inputs are uniform in
-- [-1000, 1000) cast to the dtype.  A pattern keeps the lines whose label matches it.
package.path = "lua/?.lua;lua/?/init.lua;tools/?.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local ga = gpu.gpuarray
local n = 1 << math.tointeger(tonumber(arg[1] or 28))
local pattern = arg[2]

local device_ms = require "device_time"

local max_scan = {}   -- custom inclusive max scans, by dtype
local function scan_max(a)
  max_scan[a.dtype] = max_scan[a.dtype] or gpu.InclusiveScanKernel(a.dtype, "a > b ? a : b")
  return max_scan[a.dtype](a:copy())   -- a scan kernel works in place: time the copy too
end

local cases = {   -- {label, dtype, what the kernel reads, function}
  {"cumsum float32 (packed status words, 16-byte loads)", "float32", "contiguous", ga.cumsum},
  {"cumsum float64 (flag and value slots)", "float64", "contiguous", ga.cumsum},
  {"cumsum int32 -> int64", "int32", "contiguous", ga.cumsum},
  {"cumsum float16 (in float)", "float16", "contiguous", ga.cumsum},
  {"cumsum float32, a view 1 element in (element loads)", "float32", "offset", ga.cumsum},
  {"cumsum float32, every other element (strided)", "float32", "strided", ga.cumsum},
  {"InclusiveScanKernel max float32, with a copy", "float32", "contiguous", scan_max},
}
for _, case in ipairs(cases) do
  local label, dtype, layout, scan = case[1], case[2], case[3], case[4]
  if pattern == nil or label:find(pattern) then
    local len = layout == "strided" and 2 * n or layout == "offset" and n + 1 or n
    local base = (gpu.random.rand(len, "float32") * 2000 - 1000):astype(dtype)
    local a = base
    if layout == "strided" then a = base:slice(1, len, 2)
    elseif layout == "offset" then a = base:slice(2, len) end
    local probe = scan(a)   -- for the result's dtype
    local bytes = n * (gpu.dtype(dtype).itemsize + gpu.dtype(probe.dtype).itemsize)
    probe:free()
    local ms = device_ms(function() return scan(a) end, 9)
    print(("%-55s %8.3f ms  %6.0f GB/s"):format(label, ms, bytes / ms / 1e6))
    base:free()
  end
end
