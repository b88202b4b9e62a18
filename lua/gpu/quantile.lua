-- gpu.quantile: NumPy's quantile, percentile and median and their NaN-skipping twins: a sort
-- along the axis (or, over a whole array, a selection of the places read: gpu.sort.select),
-- then kernels/quantile.cu, a thread a line.
--   gpuarray.quantile(a, q[, {axis = k, stream = s}]), q a number in [0, 1] or a list of them
--   gpuarray.percentile(a, q[, opts]), q in [0, 100]
--   gpuarray.median(a[, opts]), also a:median([opts])
--   gpuarray.nanquantile, nanpercentile, nanmedian: the same over each line's numbers only
-- Without axis over all of a's elements; with it along that axis.  The result has the other
-- axes' shape (0-d without axis), behind one axis of #q where q is a list.  NumPy's "linear"
-- method: the sorted values at the two places around q * (n - 1), interpolated in a float
-- array's own dtype (the fraction rounded to it, as NumPy's gamma), in float64 for integers
-- and bools; median's mean of two middle values as NumPy's mean takes it (float32 for the
-- 16-bit floats).  A line with a NaN gives NaN, as NumPy's; the nan- forms give NaN for a
-- line of NaNs only.

local core = require "gpu.core"
local args = require "gpu.args"
local reduction = require "gpu.reduction"
local sort = require "gpu.sort"
local kernel_cache = require "gpu.kernel_cache"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local dtypes = reduction.dtypes
local OPTIONS = {axis = true, stream = true}
-- Whole arrays of more elements than this select their places instead of being sorted (a
-- selection reads the array a pass a byte, several launches; a sort of a radix tile is one).
local SELECT_MIN = 4096

local ga   -- gpu.gpuarray, set by install: stack and concatenate

-- The dtype the interpolation (or median's mean) is computed in, and the result's.
local function work_dtypes(dtype, mean)
  local d = dtypes[dtype]
  if d.kind == "f" then return (mean and d.size == 2) and "float32" or dtype, dtype end
  return "float64", "float64"
end

-- kernels/quantile.cu's kernel for lines of dtype: a median or a quantile, NaNs skipped or not.
local SIXTEEN = {float16 = {"gpu_half_to_float", "lg_round_half", "gpu_store_half"},
                 bfloat16 = {"gpu_bf16_to_float", "lg_round_bf16", "gpu_store_bf16"}}
local function quantile_kernel(dtype, median, skip_nan)
  local key = ("quantile|%s|%s|%s"):format(dtype, median and "median" or "q", skip_nan and "nan" or "")
  return kernel_cache.get(key, function()
    local work, out = work_dtypes(dtype, median)
    local work_t = work == "float64" and "double" or "float"
    local sixteen = SIXTEEN[dtype]
    local rounds = sixteen and work == dtype      -- 16-bit floats computed in float, rounded each step
    local values = {
      KEY_T = dtypes[dtype].ctype, WORK_T = work_t, OUT_T = dtypes[out].ctype,
      SKIP_NAN = skip_nan and "1" or "0", MEDIAN = median and "1" or "0",
      FLOAT_KEYS = dtypes[dtype].kind == "f" and "1" or "0",
      TO_WORK = sixteen and sixteen[1] .. "(k)" or ("(%s)k"):format(work_t),
      ROUND = rounds and sixteen[2] .. "(x)" or "x",
      ROUND_DOUBLE = rounds and sixteen[2] .. "(x)" or ("(%s)x"):format(work_t),
      STORE = SIXTEEN[out] and SIXTEEN[out][3] .. "(x)" or ("(%s)x"):format(dtypes[out].ctype),
    }
    local source = reduction.fill(core.kernel_sources["quantile.cu"], values)
    return core.kernel_sources["common.cu"] .. "\n" .. source, "gpu_quantile", nil,
           {no_extern_c = true, name = "quantile.cu"}
  end)
end
M.quantile_kernel = quantile_kernel

-- The checks every form shares; returns the axis (nil for the whole array), the length of
-- the lines and the stream.
local function check(fname, a, opts)
  check_array(a, 1, fname)
  local at = fname:match("median$") and 2 or 3
  opts = check_options(opts, at, fname, OPTIONS)
  if dtypes[a.dtype].kind == "c" then
    argerror(1, fname, ("%s is not defined for complex arrays (%s has no order)"):format(fname, a.dtype))
  end
  local axis = opts.axis ~= nil and args.check_axis(opts.axis, a.ndim, at, fname) or nil
  local n = axis and a.shape[axis] or a.size
  if n == 0 then argerror(1, fname, ("cannot take the %s of an empty axis"):format(fname)) end
  return axis, n, opts.stream
end

-- The places (0-based) of n sorted elements that the result at fraction q (or the median)
-- reads: the two around q * (n - 1) (the middle two), or one where that is a place.
local function places_of(n, q)
  if q == "median" then return n % 2 == 1 and {(n - 1) // 2} or {n // 2 - 1, n // 2} end
  local position = q * (n - 1)
  local below = math.floor(position)
  if position == below then return {below} end
  return {below, math.min(below + 1, n - 1)}
end

-- The results over a whole array of n elements (more than SELECT_MIN) for each of `wanted`
-- (fractions, or "median"): the places they read, and the last, selected SELECT_RANKS at a
-- time, then the kernel on them.
local function selected_results(f, a, n, wanted, out_dtype, stream)
  local on_stream = stream and {stream = stream}
  local copy = not a.is_contiguous and a:copy(on_stream) or nil
  local flat = (copy or a):reshape(n)
  local places, slot = {}, {}         -- distinct places, each's 0-based slot among them
  local function want(p)
    if slot[p] == nil then places[#places + 1], slot[p] = p, #places end
  end
  for _, q in ipairs(wanted) do for _, p in ipairs(places_of(n, q)) do want(p) end end
  want(n - 1)
  local parts = {}
  for first = 1, #places, sort.SELECT_RANKS do
    local ranks = {}
    for k = first, math.min(first + sort.SELECT_RANKS - 1, #places) do
      ranks[#ranks + 1] = places[k] + 1
    end
    parts[#parts + 1] = sort.select(flat, ranks, stream)
  end
  local keys = #parts == 1 and parts[1] or ga.concatenate(parts, on_stream)
  if #parts > 1 then for _, part in ipairs(parts) do core.free_after(part, stream) end end
  if copy then core.free_after(copy, stream) end
  local results = {}
  for k, q in ipairs(wanted) do
    local p = places_of(n, q)
    local low, high = slot[p[1]], slot[p[2] or p[1]]
    results[k] = core.array_empty({}, out_dtype)
    f(keys, results[k], 1, n, q == "median" and 0.5 or q + 0.0, low, high, slot[n - 1],
      {block = 32, grid = 1, stream = stream})
  end
  core.free_after(keys, stream)
  return results
end

-- The result for each of `wanted` (a list of fractions, or {"median"}): arrays of the other
-- axes' shape, a line's value each.  Whole arrays past SELECT_MIN elements select the places
-- read (NaNs not skipped); all else sorts its lines, then runs the kernel a thread a line.
local function results_of(fname, a, opts, wanted, skip_nan)
  local axis, n, stream = check(fname, a, opts)
  local median = wanted[1] == "median"
  local f = quantile_kernel(a.dtype, median, skip_nan and dtypes[a.dtype].kind == "f")
  local out_dtype = select(2, work_dtypes(a.dtype))
  if axis == nil and n > SELECT_MIN and not skip_nan then
    return selected_results(f, a, n, wanted, out_dtype, stream), stream
  end
  local lines, count, shape
  if axis == nil then
    local copy = not a.is_contiguous and a:copy(stream and {stream = stream}) or nil
    lines, count, shape = sort.sorted_lines((copy or a):reshape(n), 1, stream), 1, {}
    if copy then core.free_after(copy, stream) end
  else
    lines, count, shape = sort.sorted_lines(a, axis, stream), a.size // n, a.shape
    table.remove(shape, axis)
  end
  local launch = {block = 256, grid = reduction.grid_stride_blocks(count, 256), stream = stream}
  local results = {}
  for k, q in ipairs(wanted) do
    results[k] = core.array_empty(shape, out_dtype)
    if count > 0 then f(lines, results[k], count, n, median and 0.5 or q + 0.0, -1, -1, -1, launch) end
  end
  core.free_after(lines, stream)
  return results, stream
end

local function check_fraction(fname, q, scale)
  if type(q) ~= "number" or q ~= q or q < 0 or q > scale then
    argerror(2, fname, ("q must be a number from 0 to %d, got %s"):format(scale, tostring(q)))
  end
  return q / scale
end

-- quantile and percentile (and their nan- forms): scale is q's largest value (1 or 100).
local function quantile_function(fname, scale, skip_nan)
  return function(a, q, opts)
    check_array(a, 1, fname)
    local fractions
    if type(q) == "table" and getmetatable(q) == nil then
      if #q == 0 then argerror(2, fname, "q is an empty list") end
      fractions = {}
      for k = 1, #q do fractions[k] = check_fraction(fname, q[k], scale) end
    else
      fractions = {check_fraction(fname, q, scale)}
    end
    local results, stream = results_of(fname, a, opts, fractions, skip_nan)
    if type(q) ~= "table" then return results[1] end
    local stacked = ga.stack(results, {stream = stream})
    for _, r in ipairs(results) do core.free_after(r, stream) end
    return stacked
  end
end

M.quantile = quantile_function("quantile", 1, false)
M.percentile = quantile_function("percentile", 100, false)
M.nanquantile = quantile_function("nanquantile", 1, true)
M.nanpercentile = quantile_function("nanpercentile", 100, true)

-- gpuarray.median(a[, opts]): the middle element, or the mean of the two middle ones (their
-- sum halved, as NumPy's mean of them), NaN where the line holds one; nanmedian over each
-- line's numbers.
function M.median(a, opts) return results_of("median", a, opts, {"median"}, false)[1] end
function M.nanmedian(a, opts) return results_of("nanmedian", a, opts, {"median"}, true)[1] end

function M.install(gpu)
  ga = gpu.gpuarray
  ga.quantile, ga.percentile, ga.median = M.quantile, M.percentile, M.median
  ga.nanquantile, ga.nanpercentile, ga.nanmedian = M.nanquantile, M.nanpercentile, M.nanmedian
  core.types.GPUArray.__methods.median = M.median
end

return M
