-- tools/large_ops.lua: device time of 58 common operations on 2^26 float32 (and the dtypes
-- and shapes named), against a copy's bandwidth, beside CuPy's (tools/large_ops.py): a survey
-- for finding the operations that fall short of the memory's speed (bench/NOTES.md quotes one).
--
--   lua5.4 tools/large_ops.lua        (from the checkout on the GPU machine, after `make`)
--   python3 tools/large_ops.py        (CuPy's figures for the same operations)
--
-- Each line: the median of 5 timings between events (after one untimed call) of a call that
-- makes a new array, in ms, and GB/s counting each element's nominal bytes (inputs read once,
-- outputs written once).  LARGE_OPS_BATCH=k times k calls back to back a timing (the figure
-- is a call's share), so that the host's time a call stops counting as device time;
-- LARGE_OPS_ONLY=<Lua pattern> times only the operations whose names match it.
package.path = "lua/?.lua;lua/?/init.lua;tools/?.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local ga = gpu.gpuarray
local device_ms = require "device_time"
local n = 1 << 26
local batch = tonumber(os.getenv("LARGE_OPS_BATCH")) or 1
local only = os.getenv("LARGE_OPS_ONLY")
local a = gpu.random.rand(n, "float32") * 2 - 1
local b = gpu.random.rand(n, "float32")
local d = a:astype("float64")
local ia = (a * 1000):astype("int32")
local idx = (gpu.random.rand(n, "float64") * (n - 1)):astype("int64") + 1
local m = a:reshape(8192, 8192)
local rows64, cols64 = a:reshape(n // 64, 64), a:reshape(64, n // 64)
local mask = a:gt(0)
local target = gpu.zeros(n, "float32")          -- what put and scatter_add write into
local small = (b * 1000):astype("int32")         -- bincount's values, in [0, 1000)
local sorted_b = ga.sort(b)                       -- searchsorted's keys
local xp_points = ga.linspace(-1, 1, 1000)        -- interp's points
local fp_points = gpu.random.rand(1000, "float64")
local cm = m:astype("complex64")                 -- the transforms' complex input
-- device_time frees what a call returns: a call that gives a Lua number gets an array to free
local function keep(x)
  if type(x) == "number" or x == nil then return gpu.zeros(1, "float32") end
  return x
end
local cases = {   -- {name, nominal bytes an element, call}
  {"copy", 8, function() return a:copy() end},
  {"sum", 4, function() return ga.sum(a) end},
  {"max", 4, function() return ga.max(a) end},
  {"argmax", 4, function() return ga.argmax(a) end},
  {"argmin", 4, function() return ga.argmin(a) end},
  {"mean", 4, function() return ga.mean(a) end},
  {"var", 4, function() return ga.var(a) end},
  {"any", 1, function() return ga.any(mask) end},
  {"count_nonzero", 1, function() return keep(ga.count_nonzero(mask)) end},
  {"sum bool", 1, function() return ga.sum(mask) end},
  {"where", 13, function() return ga.where(mask, a, b) end},
  {"clip", 8, function() return ga.clip(a, -0.5, 0.5) end},
  {"isnan", 5, function() return ga.isnan(a) end},
  {"astype f64", 12, function() return a:astype("float64") end},
  {"astype i32", 8, function() return a:astype("int32") end},
  {"exp", 8, function() return gpu.cumath.exp(a) end},
  {"a:gt(b)", 9, function() return a:gt(b) end},
  {"maximum", 12, function() return ga.maximum(a, b) end},
  {"take", 16, function() return ga.take(a, idx) end},
  {"put", 16, function() ga.put(target, idx, a, {mode = "wrap"}); return keep() end},
  {"put raise", 16, function() ga.put(target, idx, a); return keep() end},
  {"scatter_add", 16, function() ga.scatter_add(target, idx, a, {mode = "wrap"}); return keep() end},
  {"bincount", 4, function() return ga.bincount(small) end},
  {"histogram", 4, function() return (ga.histogram(a, {bins = 100})) end},
  {"searchsorted", 12, function() return ga.searchsorted(sorted_b, a) end},
  {"cumsum f64", 16, function() return gpu.cumsum(d) end},
  {"cumsum i32", 12, function() return gpu.cumsum(ia) end},   -- int64 out
  {"cumsum axis 1", 8, function() return gpu.cumsum(m, {axis = 2}) end},
  {"cumsum axis 0", 8, function() return gpu.cumsum(m, {axis = 1}) end},
  {"cumsum 2^20x64 ax1", 8, function() return gpu.cumsum(rows64, {axis = 2}) end},
  {"cumsum 64x2^20 ax0", 8, function() return gpu.cumsum(cols64, {axis = 1}) end},
  {"cumprod", 8, function() return gpu.cumprod(b) end},
  {"nansum", 4, function() return ga.nansum(a) end},
  {"nanmax axis 1", 4, function() return ga.nanmax(m, {axis = 2}) end},
  {"nanmean", 4, function() return ga.nanmean(a) end},
  {"median", 4, function() return ga.median(a) end},
  {"median axis 1", 4, function() return ga.median(m, {axis = 2}) end},
  {"nanmedian axis 1", 4, function() return ga.nanmedian(m, {axis = 2}) end},
  {"quantile 0.9", 4, function() return ga.quantile(a, 0.9) end},
  {"diff", 8, function() return ga.diff(a) end},
  {"tril", 8, function() return ga.tril(m) end},
  {"pad", 8, function() return ga.pad(m, 4) end},
  {"interp", 12, function() return ga.interp(a, xp_points, fp_points) end},
  {"unique inverse", 4, function() return (select(3, ga.unique(small, {return_index = true, return_inverse = true}))) end},
  {"rfft", 12, function() return gpu.fft.rfft(a) end},
  {"fft rows c64", 16, function() return gpu.fft.fft(cm) end},
  {"fft2 c64", 16, function() return gpu.fft.fft2(cm) end},
  {"sum f64", 8, function() return ga.sum(d) end},
  {"sum axis 1", 4, function() return ga.sum(m, {axis = 2}) end},
  {"sum axis 0", 4, function() return ga.sum(m, {axis = 1}) end},
  {"max axis 1", 4, function() return ga.max(m, {axis = 2}) end},
  {"argmax axis 1", 4, function() return ga.argmax(m, {axis = 2}) end},
  {"transpose copy", 8, function() return m:transpose():copy() end},
  {"extract", 6, function() return ga.extract(mask, a) end},
  {"rand", 4, function() return gpu.random.rand(n, "float32") end},
  {"randn", 4, function() return gpu.random.randn(n, "float32") end},
  {"concatenate", 16, function() return ga.concatenate({a, b}) end},
  {"a[::2] copy", 4, function() return a:slice(1, n, 2):copy() end},
}
for _, c in ipairs(cases) do
  if only == nil or c[1]:match(only) then
    local ok, ms = pcall(device_ms, c[3], 5, batch)
    if ok then
      print(("%-18s %8.3f ms  %7.0f GB/s (nominal %d bytes an element)")
            :format(c[1], ms, c[2] * n / ms / 1e6, c[2]))
    else
      print(("%-18s error: %s"):format(c[1], tostring(ms)))
    end
  end
end
