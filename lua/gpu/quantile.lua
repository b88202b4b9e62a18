-- gpu.quantile: NumPy's quantile, percentile and median, from a sort along the axis (or, over
-- a whole array, a selection of the places they read: gpu.sort.select) and the elementwise
-- operations.
--   gpuarray.quantile(a, q[, {axis = k, stream = s}]), q a number in [0, 1] or a list of them
--   gpuarray.percentile(a, q[, opts]), q in [0, 100]
--   gpuarray.median(a[, opts]), also a:median([opts])
-- Without axis over all of a's elements; with it along that axis.  The result has the other
-- axes' shape (0-d without axis), behind one axis of #q where q is a list.  NumPy's "linear"
-- method: the sorted values at the two places around q * (n - 1), interpolated in a float
-- array's own dtype (the fraction rounded to it, as NumPy's gamma), in float64 for integers
-- and bools; median's mean of two middle values as NumPy's mean takes it (float32 for the
-- 16-bit floats).  A line with a NaN gives NaN, as NumPy's.

local core = require "gpu.core"
local args = require "gpu.args"
local reduction = require "gpu.reduction"
local sort = require "gpu.sort"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local dtypes = reduction.dtypes
local OPTIONS = {axis = true, stream = true}
-- Whole arrays of more elements than this select their places instead of being sorted (a
-- selection reads the array a pass a byte, several launches; a sort of a radix tile is one).
local SELECT_MIN = 4096

local ga   -- gpu.gpuarray, set by install: the sort and the elementwise operations

-- The dtype the interpolation (or median's mean) is computed in, and the result's.
local function work_dtypes(dtype, mean)
  local d = dtypes[dtype]
  if d.kind == "f" then return (mean and d.size == 2) and "float32" or dtype, dtype end
  return "float64", "float64"
end

-- x rounded to dtype, as a Lua number (NumPy's gamma has the array's float dtype).
local function rounded(x, dtype)
  if dtype == "float64" then return x end
  return core[dtype](x).value   -- the typed scalar's value
end

-- The places (1-based) of the sorted order that the value at fraction q of n elements reads.
local function places_at(n, q)
  local position = q * (n - 1)
  local below = math.floor(position)
  if position == below then return {below + 1} end
  return {below + 1, math.min(below + 2, n)}
end

-- pick(p) for a whole array: 0-d arrays of the elements at the places places_of(n) lists
-- (and the last place, where a NaN would be), selected SELECT_RANKS at a time from a's
-- elements; and a function that frees them.
local function selected(a, n, places_of, stream)
  local on_stream = stream and {stream = stream}
  local copy = not a.is_contiguous and a:copy(on_stream) or nil
  local flat = (copy or a):reshape(n)
  local wanted, seen = {}, {}
  for _, p in ipairs(places_of(n)) do
    if not seen[p] then seen[p], wanted[#wanted + 1] = true, p end
  end
  if not seen[n] then wanted[#wanted + 1] = n end
  local found, where = {}, {}         -- arrays of selected elements; place -> {array, index}
  for first = 1, #wanted, sort.SELECT_RANKS do
    local batch = table.move(wanted, first, math.min(first + sort.SELECT_RANKS - 1, #wanted), 1, {})
    local elements = sort.select(flat, batch, stream)
    found[#found + 1] = elements
    for k, p in ipairs(batch) do where[p] = {elements, k} end
  end
  if copy then core.free_after(copy, stream) end
  local function pick(p) return where[p][1]:select(1, where[p][2]) end
  return pick, function() for _, elements in ipairs(found) do core.free_after(elements, stream) end end
end

-- The checks every form shares; returns pick(p), the p-th smallest element of each line
-- along the axis (an array of the other axes' shape: 0-d without axis), the lines' length,
-- the stream and a function that frees what pick reads.  Lines are sorted, or over a whole
-- array the places places_of(n) lists are selected.
local function ordered(fname, a, opts, places_of)
  check_array(a, 1, fname)
  opts = check_options(opts, fname == "median" and 2 or 3, fname, OPTIONS)
  if dtypes[a.dtype].kind == "c" then
    argerror(1, fname, ("%s is not defined for complex arrays (%s has no order)"):format(fname, a.dtype))
  end
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local axis = opts.axis ~= nil and args.check_axis(opts.axis, a.ndim, fname == "median" and 2 or 3, fname)
  local n = axis and a.shape[axis] or a.size
  if n == 0 then argerror(1, fname, ("cannot take the %s of an empty axis"):format(fname)) end
  if not axis and n > SELECT_MIN then
    local pick, release = selected(a, n, places_of, stream)
    return pick, n, stream, release
  end
  local lines
  if axis then
    lines = ga.sort(a, {axis = axis, stream = stream})
  else
    axis = 1
    local copy = not a.is_contiguous and a:copy(on_stream) or nil
    lines = ga.sort((copy or a):reshape(a.size), on_stream)
    if copy then core.free_after(copy, stream) end
  end
  return function(p) return lines:select(axis, p) end, n, stream,
         function() core.free_after(lines, stream) end
end

-- The value at fraction q of each sorted line: NumPy's linear interpolation between the
-- elements around q * (n - 1), a + (b - a) * t below t = 0.5 and b - (b - a) * (1 - t) from
-- it (exact at both ends), t rounded to the work dtype first; NaN where the line holds one
-- (sorted last).  pick and n as ordered returns them; dtype the array's.
local function at_fraction(pick, n, dtype, q, stream)
  local work, out = work_dtypes(dtype)
  local on_stream = stream and {stream = stream}
  local temporaries = {}
  local function keep(x) temporaries[#temporaries + 1] = x; return x end
  local places = places_at(n, q)
  local low = keep(pick(places[1]):astype(work, on_stream))
  local value
  if #places == 1 then
    value = low
  else
    local position = q * (n - 1)
    local t = rounded(position - math.floor(position), work)
    local high = keep(pick(places[2]):astype(work, on_stream))
    local diff = keep(ga.sub(high, low, on_stream))
    if t < 0.5 then
      value = keep(ga.add(low, keep(ga.mul(diff, t, on_stream)), on_stream))
    else   -- 1 - t is exact for t in [0.5, 1]
      value = keep(ga.sub(high, keep(ga.mul(diff, 1 - t, on_stream)), on_stream))
    end
  end
  if dtypes[dtype].kind == "f" then
    local last = pick(n)
    value = keep(ga.where(keep(ga.isnan(last, on_stream)), keep(last:astype(work, on_stream)), value,
                          on_stream))
  end
  local result = value:astype(out, on_stream)
  for _, temporary in ipairs(temporaries) do core.free_after(temporary, stream) end
  return result
end

local function check_fraction(fname, q, scale)
  if type(q) ~= "number" or q ~= q or q < 0 or q > scale then
    argerror(2, fname, ("q must be a number from 0 to %d, got %s"):format(scale, tostring(q)))
  end
  return q / scale
end

-- quantile and percentile: scale is q's largest value (1 or 100).
local function quantile_function(fname, scale)
  return function(a, q, opts)
    check_array(a, 1, fname)
    local fractions
    if type(q) == "table" and getmetatable(q) == nil then
      if #q == 0 then argerror(2, fname, "q is an empty list") end
      fractions = {}
      for k = 1, #q do fractions[k] = check_fraction(fname, q[k], scale) end
    else
      fractions = check_fraction(fname, q, scale)
    end
    local list = type(fractions) == "table" and fractions or {fractions}
    local pick, n, stream, release = ordered(fname, a, opts, function(n)
      local places = {}
      for _, f in ipairs(list) do table.move(places_at(n, f), 1, 2, #places + 1, places) end
      return places
    end)
    local result
    if type(fractions) == "number" then
      result = at_fraction(pick, n, a.dtype, fractions, stream)
    else
      local each = {}
      for k, f in ipairs(fractions) do each[k] = at_fraction(pick, n, a.dtype, f, stream) end
      result = ga.stack(each, {stream = stream})
      for _, r in ipairs(each) do core.free_after(r, stream) end
    end
    release()
    return result
  end
end

M.quantile = quantile_function("quantile", 1)
M.percentile = quantile_function("percentile", 100)

-- gpuarray.median(a[, opts]): the middle element, or the mean of the two middle ones (their
-- sum halved, as NumPy's mean of them), NaN where the line holds one.
function M.median(a, opts)
  local pick, n, stream, release = ordered("median", a, opts, function(n)
    return n % 2 == 1 and {(n + 1) // 2} or {n // 2, n // 2 + 1}
  end)
  local result
  if n % 2 == 1 then
    result = at_fraction(pick, n, a.dtype, 0.5, stream)
  else
    local work, out = work_dtypes(a.dtype, true)
    local on_stream = stream and {stream = stream}
    local low = pick(n // 2):astype(work, on_stream)
    local high = pick(n // 2 + 1):astype(work, on_stream)
    local total = ga.add(low, high, on_stream)
    local mean = ga.mul(total, 0.5, on_stream)
    local temporaries = {low, high, total, mean}
    if dtypes[a.dtype].kind == "f" then
      local last = pick(n)
      local nan = ga.isnan(last, on_stream)
      local last_work = last:astype(work, on_stream)
      local chosen = ga.where(nan, last_work, mean, on_stream)
      temporaries[#temporaries + 1], temporaries[#temporaries + 2] = nan, last_work
      temporaries[#temporaries + 1] = chosen
      mean = chosen
    end
    result = mean:astype(out, on_stream)
    for _, temporary in ipairs(temporaries) do core.free_after(temporary, stream) end
  end
  release()
  return result
end

function M.install(gpu)
  ga = gpu.gpuarray
  ga.quantile, ga.percentile, ga.median = M.quantile, M.percentile, M.median
  core.types.GPUArray.__methods.median = M.median
end

return M
