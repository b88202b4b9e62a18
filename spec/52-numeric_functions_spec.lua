-- gpu.numeric: NumPy's around (round), nan_to_num, isin, digitize, average, cov, corrcoef,
-- cross, kron, convolve, correlate, argwhere, flatnonzero, trapezoid (trapz) and
-- linalg.norm, against references computed in Lua on the same random values
-- (spec/numeric_reference.lua, spec/array_reference.lua).
--
-- Integer and bool results, and float results that the device computes with the very
-- roundings of the reference (around, nan_to_num, kron, digitize, integer averages), must
-- match exactly.  Float results that come from sums the device adds in another order, or
-- from products it may fuse into one rounding (cross), are held to a bound made from the
-- magnitudes involved: a sum of n terms in precision eps, in any order, is off by at most
-- (n + 1) * eps * (the sum of the terms' magnitudes), whatever its own size (cancellation
-- makes the relative error of a small result large, not this absolute one); each further
-- rounding adds eps * |result|.
local helpers = require "helpers"
local R = require "reduction_helpers"
local A = require "array_reference"
local N = require "numeric_reference"
local gpu = helpers.gpu
local ga = gpu.gpuarray
local NAN, INF = 0 / 0, math.huge
local EPS64, EPS32 = N.EPS64, N.EPS32

-- Values are compared unless this is false (a run against the stand-in driver, whose
-- kernels compute nothing: it checks the Lua paths, shapes and dtypes only).  There the
-- values the functions read back themselves (digitize's monotonicity, average's zero test,
-- argwhere's count) are made up, and an error that only the data would raise is not expected.
local VALUES = true
if not VALUES then
  ga.any = function() return ga.zeros({}, "bool") end
  ga.count_nonzero = function() return 1 end
  require("gpu.reduction").ReductionKernel = function() return function() return ga.zeros({}, "uint64") end end
  require("gpu.compact").flat_indices = function() return ga.zeros({3}, "int64") end
  local assert_error = helpers.assert_error
  helpers.assert_error = function(message, fn, ...)
    if not pcall(fn, ...) then return assert_error(message, fn, ...) end
  end
end

local V = require("value_helpers")(VALUES)
local same, assert_exact, assert_near = V.same, V.assert_exact, V.assert_near
local transposed = V.transposed

-- Whether dtype stores v as it is.
local function fits(v, dtype)
  local ok, h = pcall(gpu.host.from_table, {v}, dtype)
  return ok and same(h[1], v)
end

local function integer_in(lo, hi)
  lo, hi = math.tointeger(lo), math.tointeger(hi)
  return function() return math.random(lo, hi) end
end
local function float_in(scale) return function() return (math.random() * 2 - 1) * scale end end
local function complex_unit() return gpu.complex(math.random() * 2 - 1, math.random() * 2 - 1) end
local function fraction(lo, hi, denominator)
  return function() return math.random(lo, hi) / denominator end
end

describe("numeric functions", function()
  helpers.gpu_it("around rounds halves to even at any number of places, as NumPy's steps round", function()
    local function mixed(i)      -- ties at 0, 1 and -1 places, NaN, infinities, wide magnitudes
      if i % 41 == 0 then return NAN elseif i % 43 == 0 then return -INF end
      if i % 3 == 0 then return math.random(-4000, 4000) / 8 end
      if i % 3 == 1 then return math.random(-100, 100) * 5 end
      return (math.random() * 2 - 1) * 10.0 ^ math.random(-3, 5)
    end
    local cases = {
      {"float64", mixed}, {"float32", mixed},
      {"float16", function() return math.random(-512, 512) / 64 end},
      {"int32", integer_in(-1e9, 1e9)}, {"int64", integer_in(-2 ^ 40, 2 ^ 40)},
      {"int8", integer_in(-124, 124)}, {"uint8", integer_in(0, 249)},     -- tens stay in range
      {"bool", function() return math.random() < 0.5 end},
      {"complex128", function() return gpu.complex(mixed(math.random(2, 3)), mixed(math.random(2, 3))) end},
      {"complex64", function() return gpu.complex(fraction(-400, 400, 8)(), fraction(-400, 400, 8)()) end},
    }
    for _, case in ipairs(cases) do
      local dtype, generate = case[1], case[2]
      local a, values = R.generate(300, dtype, generate)
      for _, decimals in ipairs{-2, -1, 0, 1, 2, 3} do
        local got = (decimals == 1 and ga.round or ga.around)(a, decimals)
        local want = {}
        for i, v in ipairs(values) do want[i] = N.around(v, decimals, dtype) end
        assert.are.equal(dtype == "bool" and "float16" or dtype, got.dtype)
        assert.are_not.equal(a, got)
        assert_exact(want, got, ("%s around %d places"):format(dtype, decimals))
        got:free()
      end
      if dtype ~= "bool" then
        local want = {}
        for i, v in ipairs(values) do want[i] = N.around(v, 0, dtype) end
        assert_exact(want, ga.around(a), dtype .. " around, decimals by default")
      end
      a:free()
    end
    -- a transposed view, into out, on a stream
    local s = gpu.Stream()
    local a, values = R.generate(42, "float32", mixed)
    local out = ga.empty({7, 6}, "float32")
    assert.are.equal(out, ga.around(R.reshaped(a, {6, 7}):transpose(), 1, {out = out, stream = s}))
    s:synchronize()
    local want = {}
    for i, v in ipairs(transposed(values, 6, 7)) do want[i] = N.around(v, 1, "float32") end
    assert_exact(want, out, "float32 around of a transposed view")
    local ints = R.to_gpu({15, 25, -35}, "int16")
    local int_out = ga.zeros({3}, "int16")
    ga.around(ints, 2, {out = int_out, stream = s})
    s:synchronize()
    assert_exact({15, 25, -35}, int_out, "int16 around 2 places into out")
    assert_exact({20, 20, -40}, ga.around(ints, -1), "int16 around -1 place")
    assert.are.same({0, 4}, ga.around(ga.zeros({0, 4}, "float64"), 2).shape)
    helpers.assert_error("bad argument #2 to 'around' (decimals must be an integer, got float)", ga.around, a, 1.5)
    helpers.assert_error("bad argument #2 to 'around' (decimals must be an integer, got string)", ga.around, a, "1")
    helpers.assert_error("bad argument #3 to 'around' (unknown option 'axis')", ga.around, a, 1, {axis = 1})
    helpers.assert_error("bad argument #3 to 'around' (out array is float64 of shape (42,), the result float32 of shape (42,))",
                         ga.around, a, 1, {out = ga.empty({42}, "float64")})
    helpers.assert_error("bad argument #3 to 'around' (out array is float16 of shape (3,), the result float16 of shape (2,))",
                         ga.around, ga.ones({2}, "bool"), 0, {out = ga.empty({3}, "float16")})
    a:free()
    helpers.assert_error("bad argument #1 to 'around' (array has been freed)", ga.around, a)
    helpers.assert_error("bad argument #1 to 'around' (GPUArray expected, got number)", ga.round, 2.5)
  end)

  helpers.gpu_it("nan_to_num replaces NaN and infinities by NumPy's defaults or the given values", function()
    local specials = {NAN, INF, -INF}
    local function mixed(i)
      if i % 5 == 0 then return specials[i // 5 % 3 + 1] end
      return (math.random() * 2 - 1) * 1000
    end
    local LARGEST = {float16 = 65504.0, float32 = 3.4028234663852886e38, float64 = 1.7976931348623157e308}
    local function replaced(v, nan, posinf, neginf)
      if v ~= v then return nan elseif v == INF then return posinf elseif v == -INF then return neginf end
      return v
    end
    for _, dtype in ipairs{"float16", "float32", "float64"} do
      local a, values = R.generate(200, dtype, mixed)
      local defaults, given = {}, {}
      for i, v in ipairs(values) do
        defaults[i] = replaced(v, 0.0, LARGEST[dtype], -LARGEST[dtype])
        given[i] = replaced(v, -1.5, 2.5, -7.0)
      end
      assert_exact(defaults, ga.nan_to_num(a), dtype .. " nan_to_num")
      assert_exact(given, ga.nan_to_num(a, {nan = -1.5, posinf = 2.5, neginf = -7}),
                   dtype .. " nan_to_num, values given")
      a:free()
    end
    -- complex values part by part (the parts' largest value); a transposed view on a stream
    local z, zv = R.generate(60, "complex64", function(i) return gpu.complex(mixed(i), mixed(i + 1)) end)
    local s = gpu.Stream()
    local got = ga.nan_to_num(R.reshaped(z, {6, 10}):transpose(), {posinf = 100, stream = s})
    s:synchronize()
    assert.are.same({10, 6}, got.shape)
    local want = {}
    for i, v in ipairs(transposed(zv, 6, 10)) do
      want[i] = gpu.complex(replaced(v.re, 0.0, 100.0, -LARGEST.float32),
                            replaced(v.im, 0.0, 100.0, -LARGEST.float32))
    end
    assert_exact(want, got, "complex64 nan_to_num of a transposed view")
    -- integers and bools hold no NaN: copies
    for _, dtype in ipairs{"int32", "bool"} do
      local a, values = R.generate(20, dtype, dtype == "bool" and function() return math.random() < 0.5 end
                                              or integer_in(-1000, 1000))
      local copy = ga.nan_to_num(a, {nan = 5})
      assert.are_not.equal(a, copy)
      assert.are.equal(dtype, copy.dtype)
      assert_exact(values, copy, dtype .. " nan_to_num")
    end
    helpers.assert_error("bad argument #2 to 'nan_to_num' (option 'nan' must be a number, got string)",
                         ga.nan_to_num, z, {nan = "0"})
    helpers.assert_error("bad argument #2 to 'nan_to_num' (unknown option 'copy')", ga.nan_to_num, z, {copy = false})
    z:free()
    helpers.assert_error("bad argument #1 to 'nan_to_num' (array has been freed)", ga.nan_to_num, z)
  end)

  helpers.gpu_it("isin finds each element among the test elements, in NumPy's promoted dtype", function()
    local function holds(values, test, invert)
      local set = {}
      for _, v in ipairs(test) do if v == v then set[v] = true end end   -- Lua keys: 1.0 is 1, -0.0 is 0
      local want = {}
      for i, v in ipairs(values) do want[i] = (v == v and set[v] == true) ~= (invert == true) end
      return want
    end
    local quarters = function(i)
      if i % 37 == 0 then return NAN elseif i % 41 == 0 then return -0.0 end
      return math.random(-400, 400) / 4
    end
    local cases = {    -- element dtype and values, test dtype and values, test size
      {"int32", integer_in(-500, 500), "int32", integer_in(-600, 600), 700},      -- a radix sort
      {"float64", quarters, "float64", quarters, 300},
      {"float32", function() return math.random(-100, 100) / 2 end, "int16", integer_in(-50, 50), 90},
      {"uint8", integer_in(0, 255), "int64", integer_in(-300, 300), 5000},
      {"bool", function() return math.random() < 0.5 end, "bool", function() return true end, 3},
      {"float16", fraction(-64, 64, 8), "float32", fraction(-64, 64, 4), 40},
      {"int64", integer_in(-2 ^ 40, 2 ^ 40), "uint32", integer_in(0, 2 ^ 32 - 1), 2000},
    }
    for _, case in ipairs(cases) do
      local edtype, egen, tdtype, tgen, tsize = table.unpack(case)
      local element, ev = R.generate(3001, edtype, egen)
      local test, tv = R.generate(tsize, tdtype, tgen)
      for _, v in ipairs(tv) do   -- some test values among the elements, so that both answers occur
        if math.random() < 0.3 and fits(v, edtype) then ev[math.random(#ev)] = v end
      end
      element:set(gpu.host.from_table(ev, edtype))
      local got = ga.isin(element, test)
      assert.are.equal("bool", got.dtype)
      assert_exact(holds(ev, tv), got, ("isin of %s among %s"):format(edtype, tdtype))
      assert_exact(holds(ev, tv, true), ga.isin(element, test, {invert = true}),
                   ("isin of %s among %s, inverted"):format(edtype, tdtype))
      element:free()
      test:free()
    end
    -- views: a transposed element, every other test element; on a stream
    local s = gpu.Stream()
    local element, ev = R.generate(24, "int16", integer_in(-10, 10))
    local test, tv = R.generate(15, "int16", integer_in(-10, 10))
    local got = ga.isin(R.reshaped(element, {4, 6}):transpose(), R.every(test, 2), {stream = s})
    s:synchronize()
    local every = {}
    for i = 1, #tv, 2 do every[#every + 1] = tv[i] end
    assert.are.same({6, 4}, got.shape)
    assert_exact(holds(transposed(ev, 4, 6), every), got, "isin of views")
    -- nothing to find, nothing to look for
    local some, none = R.to_gpu({1, 2, 3}, "int32"), ga.empty({0}, "int32")
    assert_exact({false, false, false}, ga.isin(some, none), "isin of none")
    assert_exact({true, true, true}, ga.isin(some, none, {invert = true}), "isin of none, inverted")
    assert.are.same({0, 3}, ga.isin(ga.empty({0, 3}, "float32"), test).shape)
    helpers.assert_error("bad argument #2 to 'isin' (complex values are not supported, got complex64)",
                         ga.isin, element, ga.zeros({2}, "complex64"))
    helpers.assert_error("bad argument #3 to 'isin' (option 'invert' must be a boolean, got number)",
                         ga.isin, element, test, {invert = 1})
    helpers.assert_error("bad argument #3 to 'isin' (unknown option 'assume_unique')", ga.isin, element, test,
                         {assume_unique = true})
    helpers.assert_error("bad argument #2 to 'isin' (GPUArray expected, got table)", ga.isin, element, {1, 2})
    test:free()
    helpers.assert_error("bad argument #2 to 'isin' (array has been freed)", ga.isin, element, test)
    element:free()
    helpers.assert_error("bad argument #1 to 'isin' (array has been freed)", ga.isin, element, element)
  end)

  helpers.gpu_it("digitize numbers bins as NumPy's, for increasing and decreasing bins", function()
    local function numbers(values, bins, right, decreasing)
      local want = {}
      for i, v in ipairs(values) do want[i] = N.digitize(v, bins, right, decreasing) end
      return want
    end
    -- sorted bins with repeats and a NaN last; values on, between and past them, NaN, infinities
    local bin_values = {NAN}
    for i = 1, 40 do bin_values[i + 1] = math.random(-24, 24) / 4 end
    table.sort(bin_values, N.goes_before)
    local descending = {}
    for i = #bin_values, 1, -1 do descending[#descending + 1] = bin_values[i] end
    local bins = R.to_gpu(bin_values, "float64")
    local x, xv = R.generate(2000, "float64", function(i)
      if i % 97 == 0 then return NAN elseif i % 89 == 0 then return (i % 2 == 0) and INF or -INF end
      if i % 3 == 0 then return bin_values[math.random(#bin_values - 1)] end
      return (math.random() * 2 - 1) * 7
    end)
    for _, right in ipairs{false, true} do
      local got = ga.digitize(x, bins, {right = right})
      assert.are.equal("int64", got.dtype)
      assert_exact(numbers(xv, bin_values, right, false), got,
                   "digitize, increasing bins, right = " .. tostring(right))
      assert_exact(numbers(xv, descending, right, true), ga.digitize(x, bins:flip(), {right = right}),
                   "digitize, decreasing bins, right = " .. tostring(right))
    end
    -- promotion: int32 values among float32 bins (float64); uint8 among int8 (int16); float16
    -- among float16 (compared as float32); int64 among 5000 int64 bins (reductions of
    -- several blocks test them)
    local cases = {
      {"int32", integer_in(-20, 20), "float32", function() return math.random(-80, 80) / 4 end, 33},
      {"uint8", integer_in(0, 255), "int8", integer_in(-128, 127), 60},
      {"float16", fraction(-80, 80, 8), "float16", fraction(-40, 40, 4), 25},
      {"int64", integer_in(-2 ^ 40, 2 ^ 40), "int64", integer_in(-2 ^ 40, 2 ^ 40), 5000},
    }
    for _, case in ipairs(cases) do
      local xdtype, xgen, bdtype, bgen, nbins = table.unpack(case)
      local values, vv = R.generate(300, xdtype, xgen)
      local b, bv = R.generate(nbins, bdtype, bgen)
      table.sort(bv)
      b:set(gpu.host.from_table(bv, bdtype))
      for i = 1, 300, 7 do                                        -- values on the edges
        local edge = bv[math.random(#bv)]
        if fits(edge, xdtype) then vv[i] = edge end
      end
      values:set(gpu.host.from_table(vv, xdtype))
      local reversed = {}
      for i = #bv, 1, -1 do reversed[#reversed + 1] = bv[i] end
      assert_exact(numbers(vv, bv, false, false), ga.digitize(values, b),
                   ("digitize %s among %s"):format(xdtype, bdtype))
      assert_exact(numbers(vv, reversed, true, true), ga.digitize(values, b:flip(), {right = true}),
                   ("digitize %s among decreasing %s"):format(xdtype, bdtype))
      values:free()
      b:free()
    end
    -- no bins, one bin, equal bins (increasing, as NumPy takes them); a transposed x on a stream
    local s = gpu.Stream()
    local m, mv = R.generate(12, "float32", function() return math.random(-8, 8) / 2 end)
    local t = transposed(mv, 3, 4)
    for _, b in ipairs{{}, {0.5}, {1, 1, 1}} do
      local edges = R.to_gpu(#b > 0 and b or {0}, "float64"):narrow(1, 1, #b)
      local got = ga.digitize(R.reshaped(m, {3, 4}):transpose(), edges, {stream = s})
      s:synchronize()
      assert.are.same({4, 3}, got.shape)
      assert_exact(numbers(t, b, false, false), got, ("digitize among %d bins"):format(#b))
    end
    assert.are.same({0}, ga.digitize(ga.empty({0}, "float64"), bins).shape)
    helpers.assert_error("bad argument #2 to 'digitize' (bins must be monotonically increasing or decreasing)",
                         ga.digitize, x, R.to_gpu({1, 3, 2}, "float64"))
    helpers.assert_error("bad argument #2 to 'digitize' (bins must be monotonically increasing or decreasing)",
                         ga.digitize, x, R.to_gpu({NAN, 1, 2}, "float64"))
    local long = {}
    for i = 1, 4000 do long[i] = i end
    long[3999], long[4000] = long[4000], long[3999]
    helpers.assert_error("bad argument #2 to 'digitize' (bins must be monotonically increasing or decreasing)",
                         ga.digitize, x, R.to_gpu(long, "int32"))
    helpers.assert_error("bad argument #1 to 'digitize' (complex values are not supported, got complex128)",
                         ga.digitize, ga.zeros({2}, "complex128"), bins)
    helpers.assert_error("bad argument #2 to 'digitize' (bins must be a 1-d array, got shape (2,2))",
                         ga.digitize, x, ga.zeros({2, 2}, "float64"))
    helpers.assert_error("bad argument #3 to 'digitize' (option 'right' must be a boolean, got string)",
                         ga.digitize, x, bins, {right = "yes"})
    helpers.assert_error("bad argument #3 to 'digitize' (unknown option 'side')", ga.digitize, x, bins, {side = "left"})
    bins:free()
    helpers.assert_error("bad argument #2 to 'digitize' (array has been freed)", ga.digitize, x, bins)
    x:free()
    helpers.assert_error("bad argument #1 to 'digitize' (array has been freed)", ga.digitize, x, m)
  end)

  helpers.gpu_it("average is the mean, or NumPy's weighted mean, whole or along an axis", function()
    local rows, cols = 6, 9
    -- the averages of the rows x cols list values along axis (nil: all), weighted by
    -- weight(r, c) (nil: 1), with their bounds and the sums of weights: a sum of products
    -- over a sum of weights, each off by (n + 1) eps times its terms' magnitudes
    local function reference(values, axis, weight, eps)
      local groups = {}
      for r = 1, rows do
        for c = 1, cols do
          local key = axis == nil and 1 or axis == 1 and c or r
          local g = groups[key] or {sum = 0, size = 0, w = 0, wsize = 0, n = 0}
          groups[key] = g
          local w = weight and weight(r, c) or 1
          local v = values[(r - 1) * cols + c]
          g.sum, g.size = g.sum + v * w, g.size + math.abs(v * w)
          g.w, g.wsize, g.n = g.w + w, g.wsize + math.abs(w), g.n + 1
        end
      end
      local want, bound, scale = {}, {}, {}
      for key, g in ipairs(groups) do
        want[key] = g.sum / g.w
        bound[key] = (g.n + 1) * eps * (g.size + math.abs(want[key]) * g.wsize) / math.abs(g.w)
                     + eps * math.abs(want[key])
        scale[key] = g.w
      end
      return want, bound, scale
    end
    local a, av = R.generate(rows * cols, "float64", float_in(10))
    local m = R.reshaped(a, {rows, cols})
    local shapes = {[1] = {cols}, [2] = {rows}, [-1] = {rows}}
    for _, axis in ipairs{false, 1, 2, -1} do
      local want, bound = reference(av, axis and (axis == 1 and 1 or 2) or nil, nil, EPS64)
      local got = ga.average(m, {axis = axis or nil})
      assert.are.same(axis and shapes[axis] or {}, got.shape)
      assert_near(want, bound, got, "average along " .. tostring(axis))
    end
    -- weights of a's shape: whole (one reduction of both) and along an axis
    local w, wv = R.generate(rows * cols, "float64", function() return 0.5 + math.random() * 1.5 end)
    local wm = R.reshaped(w, {rows, cols})
    local function weight(r, c) return wv[(r - 1) * cols + c] end
    for _, axis in ipairs{false, 2} do
      local want, bound = reference(av, axis or nil, weight, EPS64)
      assert_near(want, bound, ga.average(m, {axis = axis or nil, weights = wm}),
                  "weighted average along " .. tostring(axis))
    end
    -- int32 values, int16 weights along axis 1: float64, exact (every sum is); with the weights' sums
    local ints, iv = R.generate(rows * cols, "int32", integer_in(-1e6, 1e6))
    local iw, iwv = R.generate(rows, "int16", integer_in(1, 100))
    local want, _, scale = reference(iv, 1, function(r) return iwv[r] end, EPS64)
    local avg, sums = ga.average(R.reshaped(ints, {rows, cols}), {axis = 1, weights = iw, returned = true})
    assert.are.equal("float64", avg.dtype)
    assert.are.same({cols}, sums.shape)
    assert_exact(want, avg, "int32 average weighted by int16")
    assert_exact(scale, sums, "the sums of the int16 weights")
    -- float32 values and weights along axis 2, float32 results
    local f, fv = R.generate(rows * cols, "float32", float_in(10))
    local fw, fwv = R.generate(cols, "float32", function() return 0.5 + math.random() end)
    local fwant, fbound, fscale = reference(fv, 2, function(_, c) return fwv[c] end, EPS32)
    local favg, fsums = ga.average(R.reshaped(f, {rows, cols}), {axis = -1, weights = fw, returned = true})
    assert.are.equal("float32", favg.dtype)
    assert_near(fwant, fbound, favg, "float32 weighted average")
    local sbound = {}
    for i, v in ipairs(fscale) do sbound[i] = (cols + 1) * EPS32 * math.abs(v) end
    assert_near(fscale, sbound, fsums, "float32 sums of weights")
    -- returned without weights: the count, in the average's dtype; a transposed view on a stream
    local s = gpu.Stream()
    local tavg, count = ga.average(R.reshaped(ints, {rows, cols}):transpose(),
                                   {axis = 2, returned = true, stream = s})
    s:synchronize()
    local iwant = reference(iv, 1, nil, EPS64)
    assert_exact(iwant, tavg, "int32 average of a transposed view")
    local counts = {}
    for c = 1, cols do counts[c] = rows + 0.0 end
    assert.are.equal("float64", count.dtype)
    assert_exact(counts, count, "the counts")
    local tw = ga.average(m:transpose(), {axis = 1, weights = wm:transpose(), stream = s})
    s:synchronize()
    local twant, tbound = reference(av, 2, weight, EPS64)
    assert_near(twant, tbound, tw, "weighted average of transposed views")
    assert_exact({NAN}, ga.average(ga.zeros({0}, "float64")), "average of nothing")
    helpers.assert_error("bad argument #2 to 'average' (weights sum to zero, can't be normalized)",
                         ga.average, R.to_gpu({1, 2, 3, 4}, "float64"), {weights = R.to_gpu({1, -1, 2, -2}, "float64")})
    helpers.assert_error("bad argument #2 to 'average' (axis must be specified when shapes of a and weights differ)",
                         ga.average, m, {weights = ga.ones({cols}, "float64")})
    helpers.assert_error("bad argument #2 to 'average' (weights of shape (5,) fit neither a's shape (6,9) nor its axis 2 of length 9)",
                         ga.average, m, {axis = 2, weights = ga.ones({5}, "float64")})
    helpers.assert_error("bad argument #2 to 'average' (option 'weights' must be a GPUArray, got table)",
                         ga.average, m, {axis = 2, weights = {1, 2}})
    helpers.assert_error("bad argument #2 to 'average' (option 'returned' must be a boolean, got number)",
                         ga.average, m, {returned = 1})
    helpers.assert_error("bad argument #2 to 'average' (axis 3 is out of range for a 2-d array)", ga.average, m, {axis = 3})
    helpers.assert_error("bad argument #2 to 'average' (unknown option 'keepdims')", ga.average, m, {keepdims = true})
    w:free()
    helpers.assert_error("bad argument #2 to 'average' (option 'weights' has been freed)", ga.average, m, {weights = w})
    a:free()
    helpers.assert_error("bad argument #1 to 'average' (array has been freed)", ga.average, a)
  end)

  helpers.gpu_it("cov and corrcoef give NumPy's covariances and correlations of rows or columns", function()
    local function rows_of(values, p, n)
      local rows = {}
      for i = 1, p do
        rows[i] = {}
        for k = 1, n do rows[i][k] = values[(i - 1) * n + k] end
      end
      return rows
    end
    local function flat(t)
      local out = {}
      for i = 1, #t do for j = 1, #t[i] do out[#out + 1] = t[i][j] end end
      return out
    end
    local p, n = 4, 50
    local a, av = R.generate(p * n, "float64", function(i) return math.random() * 2 - 1 + (i - 1) // n end)
    local m = R.reshaped(a, {p, n})
    local rows = rows_of(av, p, n)
    for _, case in ipairs{{nil, 1}, {{bias = true}, 0}, {{ddof = 3}, 3}, {{bias = true, ddof = 2}, 2}} do
      local c, bound = N.cov(rows, case[2])
      local got = ga.cov(m, case[1])
      assert.are.equal("float64", got.dtype)
      assert.are.same({p, p}, got.shape)
      assert_near(flat(c), flat(bound), got, "cov with ddof " .. case[2])
    end
    -- the variables in columns (a transposed view), on a stream; correlations of the same
    local s = gpu.Stream()
    local c, bound = N.cov(rows, 1)
    local got = ga.cov(m:transpose(), {rowvar = false, stream = s})
    s:synchronize()
    assert_near(flat(c), flat(bound), got, "cov of columns")
    local r, rbound = N.corrcoef(c, bound)
    assert_near(flat(r), flat(rbound), ga.corrcoef(m), "corrcoef")
    got = ga.corrcoef(m:transpose(), {rowvar = false, stream = s})
    s:synchronize()
    assert_near(flat(r), flat(rbound), got, "corrcoef of columns")
    -- int32 and float32 data (float64 results); a constant row has NaN correlations
    for _, dtype in ipairs{"int32", "float32"} do
      local x, xv = R.generate(3 * 20, dtype, dtype == "int32" and integer_in(-100, 100) or float_in(3))
      for k = 1, 20 do xv[20 + k] = 5 end
      x:set(gpu.host.from_table(xv, dtype))
      local xc, xb = N.cov(rows_of(xv, 3, 20), 1)
      local xm = R.reshaped(x, {3, 20})
      local xgot = ga.cov(xm)
      assert.are.equal("float64", xgot.dtype)
      assert_near(flat(xc), flat(xb), xgot, dtype .. " cov")
      local xr, xrb = N.corrcoef(xc, xb)
      assert_near(flat(xr), flat(xrb), ga.corrcoef(xm), dtype .. " corrcoef with a constant row")
    end
    -- one variable: a 0-d variance, a correlation of exactly 1
    local v, vv = R.generate(30, "float64", float_in(2))
    local vc, vb = N.cov({vv}, 1)
    local var = ga.cov(v)
    assert.are.same({}, var.shape)
    assert_near({vc[1][1]}, {vb[1][1]}, var, "cov of one variable")
    assert_exact({1.0}, ga.corrcoef(v), "corrcoef of one variable")
    -- complex data: conjugated products, complex128
    local z, zv = R.generate(20, "complex64", complex_unit)
    local zc, zb = N.cov(rows_of(zv, 2, 10), 1)
    local zm = R.reshaped(z, {2, 10})
    local zgot = ga.cov(zm)
    assert.are.equal("complex128", zgot.dtype)
    assert_near(flat(zc), flat(zb), zgot, "complex cov")
    local zr, zrb = N.corrcoef(zc, zb)
    assert_near(flat(zr), flat(zrb), ga.corrcoef(zm), "complex corrcoef")
    -- no variables; no observations or one (NumPy's 0 * inf: NaN)
    local none = ga.cov(ga.zeros({0, 5}, "float32"))
    assert.are.same({0, 0}, none.shape)
    assert.are.equal("float64", none.dtype)
    assert_exact({NAN, NAN, NAN, NAN}, ga.cov(ga.zeros({2, 0}, "float64")), "cov of no observations")
    assert_exact({NAN, NAN, NAN, NAN}, ga.cov(R.to_gpu({{1}, {2}}, "float64")), "cov of one observation")
    helpers.assert_error("bad argument #1 to 'cov' (a 1-d or 2-d array expected, got 3-d)", ga.cov, ga.zeros({2, 2, 2}))
    helpers.assert_error("bad argument #2 to 'cov' (option 'ddof' must be an integer, got float)", ga.cov, m, {ddof = 1.5})
    helpers.assert_error("bad argument #2 to 'cov' (option 'rowvar' must be a boolean, got number)", ga.cov, m, {rowvar = 0})
    helpers.assert_error("bad argument #2 to 'corrcoef' (unknown option 'bias')", ga.corrcoef, m, {bias = true})
    helpers.assert_error("bad argument #1 to 'corrcoef' (a 1-d or 2-d array expected, got 3-d)",
                         ga.corrcoef, ga.zeros({1, 2, 2}))
    a:free()
    helpers.assert_error("bad argument #1 to 'cov' (array has been freed)", ga.cov, a)
    helpers.assert_error("bad argument #1 to 'corrcoef' (array has been freed)", ga.corrcoef, m)
  end)

  helpers.gpu_it("cross takes NumPy's cross products of 3- and 2-vectors along an axis", function()
    -- NumPy's components of u x v (lists of 2 or 3 components) in dtype, and their bounds:
    -- exact for integers (wrapping), a product's or a difference's rounding (which the
    -- device may fuse into one) for floats, computed here in float64 from the stored values
    local function components(u, v, dtype)
      local float = dtype == "float32" or dtype == "float64"
      local eps = dtype == "float32" and EPS32 or EPS64
      local function mul(x, y)
        if float then return x * y, eps * math.abs(x * y) end
        return A.apply("mul", {dtype, dtype}, {x, y}), 0
      end
      local function negated(x, y)
        local p, b = mul(x, y)
        if float then return -p, b end
        return A.apply("neg", {dtype}, {p}), 0
      end
      local function difference(x1, y1, x2, y2)
        if float then return x1 * y1 - x2 * y2, 2 * eps * (math.abs(x1 * y1) + math.abs(x2 * y2)) end
        return A.apply("sub", {dtype, dtype}, {mul(x1, y1), (mul(x2, y2))}), 0
      end
      if #u == 2 and #v == 2 then
        local w, b = difference(u[1], v[2], u[2], v[1])
        return {w}, {b}
      end
      local c, b = {}, {}
      if #u == 3 and #v == 3 then
        c[1], b[1] = difference(u[2], v[3], u[3], v[2])
        c[2], b[2] = difference(u[3], v[1], u[1], v[3])
      elseif #u == 2 then
        c[1], b[1] = mul(u[2], v[3])
        c[2], b[2] = negated(u[1], v[3])
      else
        c[1], b[1] = negated(u[3], v[2])
        c[2], b[2] = mul(u[3], v[1])
      end
      c[3], b[3] = difference(u[1], v[2], u[2], v[1])
      return c, b
    end
    -- a (rows of na components, or one vector) and b likewise, broadcast over rows
    local function reference(av, na, bv, nb, count, dtype)
      local want, bound = {}, {}
      for r = 1, count do
        local u, v = {}, {}
        for k = 1, na do u[k] = av[#av == na and k or (r - 1) * na + k] end
        for k = 1, nb do v[k] = bv[#bv == nb and k or (r - 1) * nb + k] end
        local c, e = components(u, v, dtype)
        for k = 1, #c do want[#want + 1], bound[#bound + 1] = c[k], e[k] end
      end
      return want, bound
    end
    local cases = {    -- dtype of a, a's shape, dtype of b, b's shape, values, result dtype
      {"float64", {7, 3}, "float64", {3}, float_in(10), "float64"},
      {"int32", {5, 3}, "int32", {5, 3}, integer_in(-2 ^ 20, 2 ^ 20), "int32"},
      {"uint8", {4, 3}, "uint8", {4, 3}, integer_in(0, 255), "uint8"},
      {"float32", {6, 2}, "float32", {6, 2}, float_in(10), "float32"},
      {"int64", {4, 2}, "int64", {4, 3}, integer_in(-2 ^ 30, 2 ^ 30), "int64"},
      {"int64", {4, 3}, "int64", {4, 2}, integer_in(-2 ^ 30, 2 ^ 30), "int64"},
      {"int16", {5, 3}, "float32", {3}, integer_in(-1000, 1000), "float32"},
    }
    for _, case in ipairs(cases) do
      local adtype, ashape, bdtype, bshape, generate, dtype = table.unpack(case)
      local na, nb = ashape[#ashape], bshape[#bshape]
      local a, av = R.generate(ashape[1] * na, adtype, generate)
      local bsize = #bshape == 1 and nb or bshape[1] * nb
      local b, bv = R.generate(bsize, bdtype, bdtype == adtype and generate or float_in(10))
      local got = ga.cross(R.reshaped(a, ashape), R.reshaped(b, bshape))
      local want, bound = reference(av, na, bv, nb, ashape[1], dtype)
      assert.are.equal(dtype, got.dtype)
      assert.are.same((na == 2 and nb == 2) and {ashape[1]} or {ashape[1], 3}, got.shape)
      assert_near(want, bound, got, ("%s x %s cross, %d x %d"):format(adtype, bdtype, na, nb))
      a:free()
      b:free()
    end
    -- along axis 1: vectors in columns; a transposed view, on a stream
    local s = gpu.Stream()
    local a, av = R.generate(24, "float64", float_in(10))
    local b, bv = R.generate(24, "float64", float_in(10))
    local got = ga.cross(R.reshaped(a, {8, 3}):transpose(), R.reshaped(b, {3, 8}), {axis = 1, stream = s})
    s:synchronize()
    assert.are.same({3, 8}, got.shape)
    local want, bound = {}, {}
    for j = 1, 8 do
      local u, w = {av[3 * j - 2], av[3 * j - 1], av[3 * j]}, {bv[j], bv[8 + j], bv[16 + j]}
      local c, e = components(u, w, "float64")
      for k = 1, 3 do want[(k - 1) * 8 + j], bound[(k - 1) * 8 + j] = c[k], e[k] end
    end
    assert_near(want, bound, got, "cross along axis 1")
    helpers.assert_error("bad argument #1 to 'cross' (vectors of 2 or 3 elements expected along axis -1, got 4)",
                         ga.cross, ga.zeros({4, 4}), ga.zeros({3}))
    helpers.assert_error("bad argument #2 to 'cross' (vectors of 2 or 3 elements expected along axis 1, got 8)",
                         ga.cross, R.reshaped(a, {3, 8}), R.reshaped(b, {8, 3}), {axis = 1})
    helpers.assert_error("bad argument #1 to 'cross' (a 0-d array holds no vectors)", ga.cross, ga.zeros({}), ga.zeros({3}))
    helpers.assert_error("bad argument #1 to 'cross' (cross is not defined for bool arrays)",
                         ga.cross, ga.ones({3}, "bool"), ga.ones({3}, "bool"))
    helpers.assert_error("bad argument #3 to 'cross' (axis 3 is out of range for a 2-d array)",
                         ga.cross, ga.zeros({3, 3}), ga.zeros({3, 3}), {axis = 3})
    helpers.assert_error("bad argument #2 to 'cross' (operands could not be broadcast together with shapes (4,) (5,))",
                         ga.cross, ga.zeros({4, 3}), ga.zeros({5, 3}))
    helpers.assert_error("bad argument #3 to 'cross' (unknown option 'axisa')", ga.cross, a, b, {axisa = 1})
    a:free()
    helpers.assert_error("bad argument #1 to 'cross' (array has been freed)", ga.cross, a, b)
    helpers.assert_error("bad argument #2 to 'cross' (array has been freed)", ga.cross, b, a)
  end)

  helpers.gpu_it("kron makes NumPy's Kronecker products, blocks of b scaled by a's elements", function()
    -- NumPy's kron of the row-major lists av (shape sa) and bv (shape sb), the shapes padded
    -- with leading 1s to one length: out[i * sb + k] = a[i] * b[k] along each axis
    local function reference(av, sa, bv, sb, mul)
      local nd = math.max(#sa, #sb)
      local pa, pb, shape = {}, {}, {}
      for d = 1, nd do
        pa[d], pb[d] = sa[d - nd + #sa] or 1, sb[d - nd + #sb] or 1
        shape[d] = pa[d] * pb[d]
      end
      local size = 1
      for d = 1, nd do size = size * shape[d] end
      local out = {}
      for o = 0, size - 1 do
        local rest, ai, bi = o, 0, 0
        local index = {}
        for d = nd, 1, -1 do index[d] = rest % shape[d]; rest = rest // shape[d] end
        for d = 1, nd do
          ai = ai * pa[d] + index[d] // pb[d]
          bi = bi * pb[d] + index[d] % pb[d]
        end
        out[o + 1] = mul(av[ai + 1], bv[bi + 1])
      end
      return out, shape
    end
    local function multiply(dtype)
      return function(x, y) return A.apply("mul", {dtype, dtype}, {x, y}) end
    end
    local cases = {
      {"float64", {2, 3}, {4, 5}, float_in(10)},
      {"int32", {3, 2}, {2, 2}, integer_in(-2 ^ 20, 2 ^ 20)},
      {"float32", {3}, {2, 4}, float_in(10)},
      {"bool", {2, 2}, {3}, function() return math.random() < 0.5 end},
      {"int16", {2, 1, 2}, {1, 3, 2}, integer_in(-300, 300)},
    }
    for _, case in ipairs(cases) do
      local dtype, sa, sb, generate = table.unpack(case)
      local na, nb = 1, 1
      for _, d in ipairs(sa) do na = na * d end
      for _, d in ipairs(sb) do nb = nb * d end
      local a, av = R.generate(na, dtype, generate)
      local b, bv = R.generate(nb, dtype, generate)
      local want, shape = reference(av, sa, bv, sb, multiply(dtype))
      local got = ga.kron(R.reshaped(a, sa), R.reshaped(b, sb))
      assert.are.same(shape, got.shape)
      assert.are.equal(dtype, got.dtype)
      assert_exact(want, got, ("%s kron of %d-d by %d-d"):format(dtype, #sa, #sb))
    end
    -- a transposed view, on a stream; mixed dtypes; a 0-d operand
    local s = gpu.Stream()
    local a, av = R.generate(6, "int8", integer_in(-100, 100))
    local b, bv = R.generate(4, "float32", float_in(4))
    local got = ga.kron(R.reshaped(a, {2, 3}):transpose(), R.reshaped(b, {2, 2}), {stream = s})
    s:synchronize()
    local want = reference(transposed(av, 2, 3), {3, 2}, bv, {2, 2}, function(x, y) return N.f32(x * y) end)
    assert.are.equal("float32", got.dtype)
    assert.are.same({6, 4}, got.shape)
    assert_exact(want, got, "kron of a transposed int8 view by float32")
    local scalar = ga.kron(R.reshaped(R.to_gpu({2.5}, "float64"), {}), R.to_gpu({1, 2, 3}, "float64"))
    assert.are.same({3}, scalar.shape)
    assert_exact({2.5, 5, 7.5}, scalar, "kron of a 0-d array")
    helpers.assert_error("bad argument #3 to 'kron' (unknown option 'axis')", ga.kron, a, b, {axis = 1})
    helpers.assert_error("bad argument #2 to 'kron' (GPUArray expected, got number)", ga.kron, a, 2)
    a:free()
    helpers.assert_error("bad argument #1 to 'kron' (array has been freed)", ga.kron, a, b)
  end)

  helpers.gpu_it("convolve and correlate as NumPy's, in the three modes, either argument the longer", function()
    local function adder(dtype)
      if dtype == "bool" then return function(acc, x, y) return acc or (x and y) end, false end
      if dtype == "int32" or dtype == "int16" then
        return function(acc, x, y) return A.wrap(dtype, acc + x * y) end, 0
      end
      if dtype == "complex128" then return function(acc, x, y) return acc + x * y end, gpu.complex(0, 0) end
      return function(acc, x, y) return acc + x * y end, 0.0
    end
    local cases = {    -- dtype, values, eps (nil: exact), the longest length
      {"float64", float_in(4), EPS64, 300},
      {"float32", float_in(4), EPS32, 300},
      {"int32", integer_in(-2 ^ 20, 2 ^ 20), nil, 300},
      {"bool", function() return math.random() < 0.3 end, nil, 37},
      {"complex128", complex_unit, EPS64, 300},
      {"float16", function() return math.random(-8, 8) / 4 end, nil, 7},   -- sums exact in float16
    }
    local sizes = {{10, 3}, {3, 10}, {7, 7}, {1, 5}, {5, 1}, {300, 37}, {37, 300}}
    for _, case in ipairs(cases) do
      local dtype, generate, eps, longest = table.unpack(case)
      local add, zero = adder(dtype)
      for _, size in ipairs(sizes) do
        local n1, n2 = size[1], size[2]
        if math.max(n1, n2) <= longest then
          local a, av = R.generate(n1, dtype, generate)
          local v, vv = R.generate(n2, dtype, generate)
          for _, mode in ipairs{"full", "same", "valid"} do
            for name, reference in pairs{convolve = N.convolve, correlate = N.correlate} do
              local want, scale = reference(av, vv, mode, add, zero)
              local got = ga[name](a, v, mode)
              assert.are.equal(dtype, got.dtype)
              local what = ("%s %s of %d and %d, %s"):format(dtype, name, n1, n2, mode)
              if eps then
                local bound = {}
                for j, sc in ipairs(scale) do bound[j] = (math.min(n1, n2) + 2) * eps * sc end
                assert_near(want, bound, got, what)
              else
                assert_exact(want, got, what)
              end
            end
          end
          a:free()
          v:free()
        end
      end
    end
    -- default modes (full, valid); mixed dtypes (int8 and uint8: int16); a view on a stream
    local a, av = R.generate(12, "int8", integer_in(-100, 100))
    local v, vv = R.generate(5, "uint8", integer_in(0, 200))
    local add, zero = adder("int16")
    assert_exact((N.convolve(av, vv, "full", add, zero)), ga.convolve(a, v), "int8 by uint8 convolve")
    assert_exact((N.correlate(av, vv, "valid", add, zero)), ga.correlate(a, v), "int8 by uint8 correlate")
    assert.are.equal("int16", ga.convolve(a, v).dtype)
    local s = gpu.Stream()
    local x, xv = R.generate(21, "float64", float_in(4))
    local every = {}
    for i = 1, 21, 2 do every[#every + 1] = xv[i] end
    local fadd, fzero = adder("float64")
    local want, scale = N.correlate(vv, every, "same", fadd, fzero)
    local got = ga.correlate(v, R.every(x, 2), "same", {stream = s})
    s:synchronize()
    local bound = {}
    for j, sc in ipairs(scale) do bound[j] = 8 * EPS64 * sc end
    assert_near(want, bound, got, "uint8 correlated with a strided float64 view")
    local three = R.reshaped(R.to_gpu({3.0}, "float64"), {})
    assert_exact({3, 6}, ga.convolve(three, R.to_gpu({1, 2}, "float64")), "convolve of a 0-d array")
    local empty = ga.empty({0}, "float64")
    helpers.assert_error("bad argument #1 to 'convolve' (a cannot be empty)", ga.convolve, empty, x)
    helpers.assert_error("bad argument #2 to 'convolve' (v cannot be empty)", ga.convolve, x, empty)
    helpers.assert_error("bad argument #1 to 'correlate' (first array argument cannot be empty)", ga.correlate, empty, x)
    helpers.assert_error("bad argument #2 to 'correlate' (second array argument cannot be empty)", ga.correlate, x, empty)
    helpers.assert_error("bad argument #1 to 'correlate' (a 1-d array expected, got shape (2,3))",
                         ga.correlate, ga.zeros({2, 3}), x)
    helpers.assert_error("bad argument #2 to 'correlate' (a 1-d array expected, got shape ())", ga.correlate, x, ga.zeros({}))
    helpers.assert_error("bad argument #2 to 'convolve' (a 1-d array expected, got shape (1,1))", ga.convolve, x, ga.zeros({1, 1}))
    helpers.assert_error("bad argument #3 to 'convolve' (mode must be 'valid', 'same' or 'full', got 'middle')",
                         ga.convolve, x, v, "middle")
    helpers.assert_error("bad argument #3 to 'correlate' (mode must be 'valid', 'same' or 'full', got number)",
                         ga.correlate, x, v, 2)
    helpers.assert_error("bad argument #4 to 'correlate' (unknown option 'axis')", ga.correlate, x, v, "full", {axis = 1})
    x:free()
    helpers.assert_error("bad argument #1 to 'convolve' (array has been freed)", ga.convolve, x, v)
    helpers.assert_error("bad argument #2 to 'correlate' (array has been freed)", ga.correlate, v, x)
  end)

  helpers.gpu_it("argwhere and flatnonzero give the nonzero elements' 1-based places, as nonzero does", function()
    -- argwhere's rows (flattened) and flatnonzero's places of a row-major list of shape
    local function places(values, shape)
      local rows, flat = {}, {}
      for i, v in ipairs(values) do
        if (type(v) == "boolean" and v) or (type(v) == "number" and v ~= 0) then
          flat[#flat + 1] = i
          local rest, index = i - 1, {}
          for d = #shape, 1, -1 do index[d] = rest % shape[d] + 1; rest = rest // shape[d] end
          for d = 1, #shape do rows[#rows + 1] = index[d] end
        end
      end
      return rows, flat
    end
    local cases = {
      {"float32", {4, 5, 6}, function(i) return i % 3 == 0 and 0 or i % 17 == 0 and NAN or math.random() end},
      {"bool", {10000}, function() return math.random() < 0.3 end},
      {"int8", {3, 1, 7}, integer_in(-1, 1)},
    }
    for _, case in ipairs(cases) do
      local dtype, shape, generate = table.unpack(case)
      local size = 1
      for _, d in ipairs(shape) do size = size * d end
      local a, av = R.generate(size, dtype, generate)
      local x = R.reshaped(a, shape)
      local rows, flat = places(av, shape)
      local got = ga.argwhere(x)
      assert.are.equal("int64", got.dtype)
      if VALUES then assert.are.same({#flat, #shape}, got.shape) end
      assert_exact(rows, got, dtype .. " argwhere")
      assert_exact(flat, ga.flatnonzero(x), dtype .. " flatnonzero")
      a:free()
    end
    -- a transposed view; all zero; empty; 0-d
    local a, av = R.generate(63, "int16", integer_in(-1, 1))
    local t = transposed(av, 7, 9)
    local rows, flat = places(t, {9, 7})
    assert_exact(rows, ga.argwhere(R.reshaped(a, {7, 9}):transpose()), "argwhere of a transposed view")
    assert_exact(flat, ga.flatnonzero(R.reshaped(a, {7, 9}):transpose()), "flatnonzero of a transposed view")
    local zeros = ga.zeros({3, 4}, "float64")
    if VALUES then
      assert.are.same({0, 2}, ga.argwhere(zeros).shape)
      assert.are.same({0}, ga.flatnonzero(zeros).shape)
      assert.are.same({1, 0}, ga.argwhere(R.reshaped(R.to_gpu({3.0}, "float64"), {})).shape)
      assert.are.same({0, 0}, ga.argwhere(ga.zeros({}, "float64")).shape)
    end
    assert.are.same({0, 2}, ga.argwhere(ga.zeros({0, 3}, "float32")).shape)
    assert.are.same({0}, ga.flatnonzero(ga.zeros({0, 3}, "float32")).shape)
    helpers.assert_error("bad argument #1 to 'argwhere' (GPUArray expected, got table)", ga.argwhere, {1, 0})
    a:free()
    helpers.assert_error("bad argument #1 to 'argwhere' (array has been freed)", ga.argwhere, a)
    helpers.assert_error("bad argument #1 to 'flatnonzero' (array has been freed)", ga.flatnonzero, a)
  end)

  helpers.gpu_it("trapezoid integrates along an axis by the trapezoidal rule, with dx or sample points", function()
    -- the integrals of the p x q list y along axis (each line's sum of term(d, y[k + 1], y[k])
    -- with d = spacing(line, k)) and the sums of the terms' magnitudes
    local function integrals(y, p, q, axis, spacing, term)
      local lines, length = axis == 2 and p or q, axis == 2 and q or p
      local want, size = {}, {}
      for l = 1, lines do
        local sum, magnitude = 0, 0
        for k = 1, length - 1 do
          local y0 = axis == 2 and y[(l - 1) * q + k] or y[(k - 1) * q + l]
          local y1 = axis == 2 and y[(l - 1) * q + k + 1] or y[k * q + l]
          local t = term(spacing(l, k), y1, y0)
          sum, magnitude = sum + t, magnitude + math.abs(t)
        end
        want[l], size[l] = sum, magnitude
      end
      return want, size
    end
    local function bounds(size, n, eps)
      local b = {}
      for i, v in ipairs(size) do b[i] = (n + 1) * eps * v end
      return b
    end
    local function float64_term(d, y1, y0) return d * (y1 + y0) / 2.0 end
    local function float32_term(d, y1, y0) return N.f32(N.f32(N.f32(d) * N.f32(y1 + y0)) / 2.0) end
    local one = function() return 1 end
    -- float64, the default: along the last axis, dx = 1
    local a, av = R.generate(40, "float64", float_in(10))
    local want, size = integrals(av, 5, 8, 2, one, float64_term)
    local got = ga.trapezoid(R.reshaped(a, {5, 8}))
    assert.are.same({5}, got.shape)
    assert_near(want, bounds(size, 8, EPS64), got, "float64 trapezoid")
    -- float32 along axis 1 with dx = 0.5, float32 sums
    local f, fv = R.generate(40, "float32", float_in(10))
    want, size = integrals(fv, 5, 8, 1, function() return 0.5 end, float32_term)
    got = ga.trapezoid(R.reshaped(f, {5, 8}), {axis = 1, dx = 0.5})
    assert.are.equal("float32", got.dtype)
    assert.are.same({8}, got.shape)
    assert_near(want, bounds(size, 5, EPS32), got, "float32 trapezoid along axis 1")
    -- int32: halves of whole numbers, exact in float64
    local i32, iv = R.generate(24, "int32", integer_in(-1000, 1000))
    want = integrals(iv, 4, 6, 2, one, float64_term)
    got = ga.trapz(R.reshaped(i32, {4, 6}))
    assert.are.equal("float64", got.dtype)
    assert_exact(want, got, "int32 trapz")
    -- sample points: 1-d along axis 1, and of y's shape along the last axis
    local x, xv = R.generate(6, "float64", float_in(5))
    table.sort(xv)
    x:set(gpu.host.from_table(xv, "float64"))
    local y, yv = R.generate(24, "float64", float_in(10))
    want, size = integrals(yv, 6, 4, 1, function(_, k) return xv[k + 1] - xv[k] end, float64_term)
    assert_near(want, bounds(size, 6, EPS64), ga.trapezoid(R.reshaped(y, {6, 4}), {x = x, axis = 1}),
                "trapezoid over 1-d sample points")
    local xs, xsv = R.generate(28, "float32", float_in(5))
    local ys, ysv = R.generate(28, "float32", float_in(5))
    local function step(l, k) return N.f32(xsv[(l - 1) * 7 + k + 1] - xsv[(l - 1) * 7 + k]) end
    want, size = integrals(ysv, 4, 7, 2, step, float32_term)
    got = ga.trapezoid(R.reshaped(ys, {4, 7}), {x = R.reshaped(xs, {4, 7})})
    assert_near(want, bounds(size, 7, EPS32), got, "float32 trapezoid over sample points of y's shape")
    -- bools add as or (NumPy's): 0.5 a step between two true ends
    assert_exact({1.5}, ga.trapezoid(R.to_gpu({true, true, false, true}, "bool")), "bool trapezoid")
    -- a transposed view on a stream; axes too short to hold a step
    local s = gpu.Stream()
    got = ga.trapezoid(R.reshaped(a, {8, 5}):transpose(), {stream = s})
    s:synchronize()
    want, size = integrals(transposed(av, 8, 5), 5, 8, 2, one, float64_term)
    assert_near(want, bounds(size, 8, EPS64), got, "trapezoid of a transposed view")
    assert_exact({0, 0, 0}, ga.trapezoid(ga.zeros({3, 0}, "float64")), "trapezoid of empty lines")
    assert_exact({0, 0, 0}, ga.trapezoid(ga.ones({3, 1}, "float64")), "trapezoid of single points")
    local m = R.reshaped(a, {5, 8})
    helpers.assert_error("bad argument #1 to 'trapezoid' (a 0-d array has no axis to integrate along)",
                         ga.trapezoid, ga.zeros({}))
    helpers.assert_error("bad argument #2 to 'trapezoid' (option 'x' has 5 points, y 8 along axis -1)",
                         ga.trapezoid, m, {x = ga.zeros({5})})
    helpers.assert_error("bad argument #2 to 'trapezoid' (option 'x' must be a GPUArray, got table)",
                         ga.trapezoid, m, {x = {1, 2}})
    helpers.assert_error("bad argument #2 to 'trapezoid' (option 'x': operands could not be broadcast together with shapes (3,7) (5,7))",
                         ga.trapezoid, m, {x = ga.zeros({3, 8})})
    helpers.assert_error("bad argument #2 to 'trapezoid' (option 'dx' must be a number, got string)",
                         ga.trapz, m, {dx = "1"})
    helpers.assert_error("bad argument #2 to 'trapezoid' (axis 3 is out of range for a 2-d array)",
                         ga.trapezoid, m, {axis = 3})
    helpers.assert_error("bad argument #2 to 'trapezoid' (unknown option 'even')", ga.trapezoid, m, {even = "avg"})
    x:free()
    helpers.assert_error("bad argument #2 to 'trapezoid' (option 'x' has been freed)", ga.trapezoid, m, {x = x})
    a:free()
    helpers.assert_error("bad argument #1 to 'trapezoid' (array has been freed)", ga.trapezoid, m)
  end)

  helpers.gpu_it("linalg.norm takes NumPy's vector norms along an axis and its matrix norms", function()
    local norm = ga.linalg.norm
    -- NumPy's vector norm of ord over a list of values (numbers or gpu.complex values) and
    -- its bound: exact for 0, and for inf and -inf of real values (a complex magnitude rounds
    -- once); a sum's for 1 and 2; a few roundings of pow more for other orders
    local function vector(values, ord, eps)
      local n, nan = #values, false
      for _, v in ipairs(values) do
        local m = N.magnitude(v)
        if m ~= m then nan = true end
      end
      if ord == 0 then
        local count = 0
        for _, v in ipairs(values) do
          if N.magnitude(v) ~= 0 then count = count + 1 end
        end
        return count + 0.0, 0
      end
      if nan then return NAN, 0 end
      if ord == INF or ord == -INF then        -- exact, but a complex value's magnitude rounds
        local best = ord == INF and 0.0 or INF
        for _, v in ipairs(values) do
          local m = N.magnitude(v)
          if (ord == INF and m > best) or (ord == -INF and m < best) then best = m end
        end
        return best, type(values[1]) == "table" and 2 * eps * best or 0
      end
      local p = ord or 2
      local sum = 0
      for _, v in ipairs(values) do sum = sum + N.magnitude(v) ^ p end
      local result = sum ^ (1 / p)
      if p == 1 then return result, (n + 2) * eps * result end
      if p == 2 then return result, ((n + 1) / 2 + 2) * eps * result end
      return result, 16 * (n + 4) * eps * math.abs(result)
    end
    -- the lines of a rows x cols list along axis (1: columns, 2: rows)
    local function lines(values, rows, cols, axis)
      local out = {}
      for l = 1, axis == 2 and rows or cols do
        local line = {}
        for k = 1, axis == 2 and cols or rows do
          line[k] = axis == 2 and values[(l - 1) * cols + k] or values[(k - 1) * cols + l]
        end
        out[l] = line
      end
      return out
    end
    local function norms(list, ord, eps)
      local want, bound = {}, {}
      for i, line in ipairs(list) do want[i], bound[i] = vector(line, ord, eps) end
      return want, bound
    end
    local rows, cols = 7, 11
    local a, av = R.generate(rows * cols, "float64", function(i) return i % 9 == 0 and 0 or float_in(10)() end)
    local m = R.reshaped(a, {rows, cols})
    local whole, whole_bound = vector(av, nil, EPS64)
    local got = norm(m)
    assert.are.same({}, got.shape)
    assert.are.equal("float64", got.dtype)
    assert_near({whole}, {whole_bound}, got, "the 2-norm of all of a matrix")
    for _, ord in ipairs{false, 2, 1, INF, -INF, 0, 3, 0.5, -1} do
      for _, axis in ipairs{1, 2, -1} do
        local want, bound = norms(lines(av, rows, cols, axis == 1 and 1 or 2), ord or nil, EPS64)
        got = norm(m, {ord = ord or nil, axis = axis})
        assert.are.same({axis == 1 and cols or rows}, got.shape)
        assert_near(want, bound, got, ("norm of ord %s along axis %d"):format(tostring(ord), axis))
      end
    end
    local want, bound = norms(lines(av, rows, cols, 2), 1, EPS64)
    got = norm(m, {ord = 1, axis = 2, keepdims = true})
    assert.are.same({rows, 1}, got.shape)
    assert_near(want, bound, got, "norm with keepdims")
    -- a NaN makes its line's norms NaN, and counts as nonzero
    local nan_values = {table.unpack(av)}
    nan_values[2 * cols + 5] = NAN
    a:set(gpu.host.from_table(nan_values, "float64"))
    for _, ord in ipairs{2, 1, INF, -INF, 0, 3} do
      want, bound = norms(lines(nan_values, rows, cols, 2), ord, EPS64)
      assert_near(want, bound, norm(m, {ord = ord, axis = 2}),
                  ("norm of ord %s with a NaN"):format(tostring(ord)))
    end
    a:set(gpu.host.from_table(av, "float64"))
    -- a vector of each dtype: 1-d x takes its order without an axis
    local cases = {    -- dtype, values, result dtype, eps
      {"float32", float_in(10), "float32", EPS32},
      {"int32", integer_in(-1000, 1000), "float64", 0},          -- exact: the squares' sum is
      {"complex128", complex_unit, "float64", EPS64},
      {"complex64", complex_unit, "float32", EPS32},
      {"float16", function() return math.random(-64, 64) / 16 end, "float16", 2.0 ^ -9},
    }
    for _, case in ipairs(cases) do
      local dtype, generate, result_dtype, eps = table.unpack(case)
      local v, vv = R.generate(1000, dtype, generate)
      for _, ord in ipairs{false, 1, INF, 0} do
        local w, b = vector(vv, ord or nil, eps)
        got = norm(v, {ord = ord or nil})
        assert.are.equal(result_dtype, got.dtype)
        assert_near({w}, {dtype == "float16" and (b + eps * w) or b}, got,
                    ("%s norm of ord %s"):format(dtype, tostring(ord)))
      end
      v:free()
    end
    -- matrix norms: Frobenius, the greatest and least column (1, -1) and row (inf, -inf) sums
    local function matrix_reference(values, r, c, ord)
      if ord == nil or ord == "fro" then return vector(values, 2, EPS64) end
      local sums = norms(lines(values, r, c, (ord == 1 or ord == -1) and 1 or 2), 1, EPS64)
      local best = sums[1]
      for _, v in ipairs(sums) do
        if (ord > 0 and v > best) or (ord < 0 and v < best) then best = v end
      end
      return best, ((ord == 1 or ord == -1) and r or c) * 2 * EPS64 * best
    end
    for _, ord in ipairs{false, "fro", 1, -1, INF, -INF} do
      local w, b = matrix_reference(av, rows, cols, ord or nil)
      local what = ("matrix norm of ord %s"):format(tostring(ord))
      assert_near({w}, {b}, norm(m, {ord = ord or nil, axis = {1, 2}}), what)
      if ord then assert_near({w}, {b}, norm(m, {ord = ord}), what .. " of a 2-d x, no axis") end
    end
    local w, b = matrix_reference(av, rows, cols, INF)
    assert_near({w}, {b}, norm(m, {ord = 1, axis = {2, 1}}), "matrix 1-norm of the transpose")
    got = norm(m, {ord = -INF, keepdims = true})
    assert.are.same({1, 1}, got.shape)
    -- matrices of a 3-d array's axes 1 and 3 (4 of them); a transposed view on a stream
    local c3, cv = R.generate(60, "float64", float_in(10))
    local x3 = R.reshaped(c3, {3, 4, 5})
    for _, case in ipairs{{"fro", {1, 3}}, {1, {1, 3}}, {INF, {1, 3}}, {1, {3, 1}}, {-1, {-1, 1}}} do
      local ord, axes = case[1], case[2]
      local want3, bound3 = {}, {}
      for mid = 1, 4 do
        local matrix = {}     -- x[:, mid, :] as rows along axes[1]
        local first = axes[1] == 1 and 1 or 3
        local r, c = first == 1 and 3 or 5, first == 1 and 5 or 3
        for i = 1, r do
          for k = 1, c do
            local i1, i3 = first == 1 and i or k, first == 1 and k or i
            matrix[#matrix + 1] = cv[(i1 - 1) * 20 + (mid - 1) * 5 + i3]
          end
        end
        want3[mid], bound3[mid] = matrix_reference(matrix, r, c, ord)
      end
      got = norm(x3, {ord = ord, axis = axes})
      assert.are.same({4}, got.shape)
      assert_near(want3, bound3, got,
                  ("norm of ord %s over axes {%d, %d}"):format(tostring(ord), axes[1], axes[2]))
    end
    assert.are.same({1, 4, 1}, norm(x3, {axis = {1, 3}, keepdims = true}).shape)
    local s = gpu.Stream()
    got = norm(m:transpose(), {ord = 1, axis = 1, stream = s})
    s:synchronize()
    want, bound = norms(lines(av, rows, cols, 2), 1, EPS64)
    assert_near(want, bound, got, "norm along axis 1 of a transposed view")
    assert.are.equal("float64", norm(ga.zeros({2, 2}, "int32"), {ord = 1}).dtype)
    assert.are.equal("float32", norm(ga.zeros({2, 2}, "complex64"), {ord = "fro"}).dtype)
    -- empty: the sums' norms are 0; the greatest and least element have none
    assert_exact({0.0}, norm(ga.zeros({0}, "float64")), "norm of nothing")
    assert_exact({0, 0, 0}, norm(ga.zeros({3, 0}, "float64"), {ord = 1, axis = 2}), "1-norms of empty lines")
    helpers.assert_error("bad argument #1 to 'norm' (zero-size array to reduction operation maximum which has no identity)",
                         norm, ga.zeros({0}, "float64"), {ord = INF})
    helpers.assert_error("bad argument #1 to 'norm' (zero-size array to reduction operation minimum which has no identity)",
                         norm, ga.zeros({2, 0}, "float64"), {ord = -1})
    helpers.assert_error("bad argument #2 to 'norm' (invalid norm order 'fro' for vectors)",
                         norm, ga.zeros({3}, "float64"), {ord = "fro"})
    helpers.assert_error("bad argument #2 to 'norm' (matrix norm ord 'nuc' needs the singular values (an SVD), which lua-gpu does not compute)",
                         norm, m, {ord = "nuc"})
    helpers.assert_error("bad argument #2 to 'norm' (matrix norm ord 2 needs the singular values (an SVD), which lua-gpu does not compute)",
                         norm, m, {ord = 2})
    helpers.assert_error("bad argument #2 to 'norm' (invalid norm order 3 for matrices)", norm, m, {ord = 3})
    helpers.assert_error("bad argument #1 to 'norm' (an order needs a 1-d or 2-d array, or option 'axis'; got a 3-d array)",
                         norm, x3, {ord = 1})
    helpers.assert_error("bad argument #2 to 'norm' (option 'axis' names one axis twice)", norm, m, {axis = {1, -2}})
    helpers.assert_error("bad argument #2 to 'norm' (option 'axis' must be an integer or a pair of integers, got a list of 3)",
                         norm, x3, {axis = {1, 2, 3}})
    helpers.assert_error("bad argument #2 to 'norm' (axis 3 is out of range for a 2-d array)", norm, m, {axis = 3})
    helpers.assert_error("bad argument #2 to 'norm' (option 'ord' must be a number or a string, got table)", norm, m, {ord = {}})
    helpers.assert_error("bad argument #2 to 'norm' (option 'keepdims' must be a boolean, got number)", norm, m, {keepdims = 1})
    helpers.assert_error("bad argument #2 to 'norm' (unknown option 'dtype')", norm, m, {dtype = "float32"})
    a:free()
    helpers.assert_error("bad argument #1 to 'norm' (array has been freed)", norm, m)
  end)
end)
