-- gpu.sets: NumPy's set routines (intersect1d, union1d, setdiff1d, setxor1d, in1d), lexsort,
-- unravel_index and ravel_multi_index, and the editing functions insert, delete, append,
-- resize, trim_zeros and sort_complex, against references computed in Lua on the same
-- random values.  Every result is a selection, an order or a copy of the inputs' values, so
-- every comparison is exact (NaN matching NaN, complex values part by part).
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local ga = gpu.gpuarray
local NAN = 0 / 0

-- Values are compared unless this is false (a run against the stand-in driver, whose
-- kernels compute nothing: it checks the Lua paths, shapes and dtypes only).  There the
-- counts and checks the functions read back are made up, and an error that only the data
-- would raise is not expected.
local VALUES = true
if not VALUES then
  require("gpu.compact").flat_indices = function() return ga.zeros({3}, "int64") end
  ga.extract = function(_, a) return ga.zeros({3}, a.dtype) end
  ga.unique = function(a, opts)
    if opts and opts.return_index then return ga.zeros({3}, a.dtype), ga.zeros({3}, "int64") end
    return ga.zeros({3}, a.dtype)
  end
  require("gpu.reduction").ReductionKernel = function(dtype)
    return function() return type(dtype) == "table" and ga.zeros({dtype.itemsize}, "uint8") or ga.zeros({}, "bool") end
  end
  local assert_error = helpers.assert_error
  helpers.assert_error = function(message, fn, ...)
    if not pcall(fn, ...) then return assert_error(message, fn, ...) end
  end
end

local V = require("value_helpers")(VALUES)
local same, assert_exact = V.same, V.assert_exact
local transposed = V.transposed

-- NumPy's order: false before true, NaN after every number, complex by real part first.
local function before(x, y)
  if type(x) == "boolean" then return not x and y end
  if type(x) == "table" then return x.re < y.re or (x.re == y.re and x.im < y.im) end
  return x < y or (y ~= y and x == x)
end

local function sorted(list)
  local t = table.move(list, 1, #list, 1, {})
  table.sort(t, before)
  return t
end

-- The sorted distinct values of list, NaNs as one (unique's).
local function unique(list)
  local t, out = sorted(list), {}
  for _, v in ipairs(t) do
    if #out == 0 or not same(out[#out], v) then out[#out + 1] = v end
  end
  return out
end

local function join(x, y)
  local t = table.move(x, 1, #x, 1, {})
  return table.move(y, 1, #y, #t + 1, t)
end

-- Whether list holds v (==: a NaN is in nothing).
local function holds(list, v)
  for _, w in ipairs(list) do if w == v then return true end end
  return false
end

local function integers(lo, hi) return function() return math.random(lo, hi) end end
local function quarters(lo, hi, nan_share)
  return function()
    if math.random() < nan_share then return NAN end
    return math.random(lo, hi) / 4
  end
end
local function coin() return math.random() < 0.5 end

-- Set cases: the two dtypes, their values, and the dtype NumPy joins them in.
local SET_CASES = {
  {"int32", "int32", integers(-30, 30), "int32"},
  {"int64", "uint8", integers(0, 40), "int64"},
  {"uint8", "int8", integers(0, 40), "int16"},
  {"float64", "float64", quarters(-40, 40, 0.05), "float64"},
  {"float32", "float64", quarters(-40, 40, 0.05), "float64"},
  {"float16", "int8", integers(-20, 20), "float16"},
  {"int32", "float64", integers(-30, 30), "float64"},
  {"bool", "bool", coin, "bool"},
}

describe("set routines, lexsort, flat indices and editing", function()
  it("unravel_index and ravel_multi_index of Lua integers, and their argument errors", function()
    assert.are.same({1, 2, 4}, {ga.unravel_index(10, {4, 5, 6})})     -- 9 = 0*30 + 1*6 + 3
    assert.are.same({2, 3, 1}, {ga.unravel_index(10, {4, 5, 6}, {order = "F"})})   -- 9 = 1 + 2*4
    assert.are.same({}, {ga.unravel_index(1, {})})
    assert.are.equal(10, ga.ravel_multi_index({1, 2, 4}, {4, 5, 6}))
    assert.are.equal(10, ga.ravel_multi_index({2, 3, 1}, {4, 5, 6}, {order = "F"}))
    assert.are.equal(10, ga.ravel_multi_index({5, 7, 4}, {4, 5, 6}, {mode = "wrap"}))
    assert.are.equal(10, ga.ravel_multi_index({0, -3, 4}, {4, 5, 6}, {mode = {"clip", "wrap", "raise"}}))
    assert.are.equal(120, ga.ravel_multi_index({9, 9, 9}, {4, 5, 6}, {mode = "clip"}))
    local unravel, ravel = ga.unravel_index, ga.ravel_multi_index
    helpers.assert_error("bad argument #1 to 'unravel_index' (index 121 is out of range for 120 elements)",
                         unravel, 121, {4, 5, 6})
    helpers.assert_error("bad argument #1 to 'unravel_index' (index 0 is out of range for 120 elements)",
                         unravel, 0, {4, 5, 6})
    helpers.assert_error("bad argument #1 to 'unravel_index' (indices must be integers, got 1.5)",
                         unravel, 1.5, {4, 5, 6})
    helpers.assert_error("bad argument #1 to 'unravel_index' (indices must be a GPUArray or a table of integers)",
                         unravel, {1, 2.5}, {4, 5, 6})
    helpers.assert_error("bad argument #2 to 'unravel_index' (negative dimension -4 in shape)", unravel, 1, {-4})
    helpers.assert_error("bad argument #3 to 'unravel_index' (option 'order' must be 'C' or 'F', got 'A')",
                         unravel, 1, {4}, {order = "A"})
    helpers.assert_error("bad argument #3 to 'unravel_index' (unknown option 'mode')", unravel, 1, {4}, {mode = "clip"})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (index 5 is out of range for axis 1 of length 4)",
                         ravel, {5, 1, 1}, {4, 5, 6})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (multi_index has 2 items for 3 dims)",
                         ravel, {1, 1}, {4, 5, 6})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (multi_index must be a list of index arrays, got number)",
                         ravel, 3, {4, 5, 6})
    helpers.assert_error("bad argument #2 to 'ravel_multi_index' (dims must name at least one axis)", ravel, {}, {})
    helpers.assert_error("bad argument #2 to 'ravel_multi_index' (axis 2 of length 0 has no place to wrap to)",
                         ravel, {1, 1}, {4, 0}, {mode = "wrap"})
    helpers.assert_error("bad argument #3 to 'ravel_multi_index' (option 'mode' must be 'raise', 'wrap' or 'clip', got 'nearest')",
                         ravel, {1, 1}, {4, 5}, {mode = "nearest"})
    helpers.assert_error("bad argument #3 to 'ravel_multi_index' (option 'mode' must be a mode or a list of 2, got a list of 3)",
                         ravel, {1, 1}, {4, 5}, {mode = {"wrap", "wrap", "wrap"}})
    helpers.assert_error("bad argument #3 to 'ravel_multi_index' (option 'order' must be 'C' or 'F', got number)",
                         ravel, {1, 1}, {4, 5}, {order = 1})
    helpers.assert_error("bad argument #3 to 'ravel_multi_index' (unknown option 'axis')", ravel, {1, 1}, {4, 5}, {axis = 1})
    helpers.assert_error("bad argument #1 to 'lexsort' (at least one key is needed)", ga.lexsort, {})
    helpers.assert_error("bad argument #1 to 'lexsort' (keys must be a list of 1-d arrays or a 2-d array, got number)",
                         ga.lexsort, 3)
    helpers.assert_error("bad argument #1 to 'lexsort' (key #1 is a number, not a GPUArray)", ga.lexsort, {3})
    helpers.assert_error("bad argument #1 to 'intersect1d' (GPUArray expected, got nil)", ga.intersect1d)
    helpers.assert_error("bad argument #1 to 'insert' (GPUArray expected, got table)", ga.insert, {1, 2}, 1, 3)
    helpers.assert_error("bad argument #1 to 'resize' (GPUArray expected, got nil)", ga.resize, nil, 3)
  end)

  -- On the stand-in driver: the host's work in insert and delete is on the places, not on
  -- the axis (a place map as long as the axis took 1.2 s and 330 MiB of heap for 1e7).
  it("insert and delete of a few places on a long axis take little host time and heap", function()
    local out, ok = helpers.run_with_fakes([[
      local ga = require("gpu").gpuarray
      local long = ga.zeros(10000000, "uint8")
      local function edits()
        return {ga.delete(long, 5), ga.delete(long, {7, -1, 7}), ga.insert(long, 5, 3),
                ga.insert(long, {-1, 2}, {1, 2})}
      end
      edits()                                        -- the kernels compiled once
      collectgarbage()
      collectgarbage("stop")
      local heap, clock = collectgarbage("count"), os.clock()
      local results = edits()
      local seconds, kib = os.clock() - clock, collectgarbage("count") - heap
      print(results[1].size, results[2].size, results[3].size, results[4].size, seconds < 0.1, kib < 256)
    ]])
    assert(ok, out)
    assert.are.equal("9999999\t9999998\t10000001\t10000002\ttrue\ttrue\n", out)
  end)

  -- On the stand-in driver, which counts the device bytes allocated and not freed: the
  -- collector stopped, a function's temporaries must be freed by the time it returns.
  local LEAK_PRELUDE = [[
    local gpu = require "gpu"
    local ga = gpu.gpuarray
    -- counts read back are made up on the stand-in: the steps that read them give fixed sizes
    require("gpu.compact").flat_indices = function() return ga.zeros({3}, "int64") end
    ga.extract = function(_, a) return ga.zeros({3}, a.dtype) end
    ga.unique = function(a) return ga.zeros({3}, a.dtype) end
    local a = ga.zeros({40, 50}, "float32"):transpose()
    local b = ga.zeros({30, 20}, "int32"):transpose()
    local function in_use()
      gpu.synchronize()
      return -gpu.mem_get_info()
    end
    collectgarbage("stop")
    -- Prints name and the bytes that fn leaves allocated once its results are freed (an
    -- error it raises included: then its message is printed too).
    local function leak(name, fn)
      pcall(fn)                                         -- kernels compiled, pools warmed
      local before = in_use()
      local results = table.pack(pcall(fn))
      for i = 2, results.n do
        if type(results[i]) == "userdata" and results[i].free then results[i]:free() end
      end
      if results[1] then print(name, in_use() - before)
      else print(name, in_use() - before, tostring(results[2]):match("bad argument.*") or results[2]) end
    end
  ]]

  it("the set routines and append free their copies of non-contiguous inputs", function()
    local out, ok = helpers.run_with_fakes(LEAK_PRELUDE .. [[
      leak("union1d", function() return ga.union1d(a, b) end)
      leak("intersect1d", function() return ga.intersect1d(a, b, {assume_unique = true}) end)
      leak("intersect1d", function() return ga.intersect1d(a, b) end)
      leak("intersect1d", function() return ga.intersect1d(a, b, {return_indices = true}) end)
      leak("setdiff1d", function() return ga.setdiff1d(a, b, {assume_unique = true}) end)
      leak("setxor1d", function() return ga.setxor1d(a, b, {assume_unique = true}) end)
      leak("append", function() return ga.append(a, b) end)
    ]])
    assert(ok, out)
    assert.are.equal("union1d\t0\nintersect1d\t0\nintersect1d\t0\nintersect1d\t0\nsetdiff1d\t0\n"
                     .. "setxor1d\t0\nappend\t0\n", out)
  end)

  it("ravel_multi_index, insert, delete and ediff1d leave nothing behind when they raise", function()
    local out, ok = helpers.run_with_fakes(LEAK_PRELUDE .. [[
      local i = ga.zeros({3}, "int32")
      leak("ravel", function() return ga.ravel_multi_index({i, {1, 2}}, {4, 5}) end)
      leak("ravel", function() return ga.ravel_multi_index({{1, 2, 3}, {1.5}}, {4, 5}) end)
      leak("insert", function() return ga.insert(a, 1, "x") end)
      leak("insert", function() return ga.insert(a, 1, "x", {axis = 2}) end)
      leak("insert", function() return ga.insert(a, {1, 1.5}, 1) end)
      leak("delete", function() return ga.delete(a, {1, 1.5}) end)
      leak("delete", function() return ga.delete(a, 99, {axis = 1}) end)
      leak("ediff1d", function() return ga.ediff1d(a, {to_begin = {1, 2}, to_end = "x"}) end)
    ]])
    assert(ok, out)
    assert.are.equal(table.concat({
      "ravel\t0\tbad argument #1 to 'ravel_multi_index' (operands could not be broadcast together with shapes (3,) (2,))",
      "ravel\t0\tbad argument #1 to 'ravel_multi_index' (multi_index item 2 must be a GPUArray or a table of integers)",
      "insert\t0\tbad argument #3 to 'insert' (values must be a GPUArray, a value or a table of values, got string)",
      "insert\t0\tbad argument #3 to 'insert' (values must be a GPUArray, a value or a table of values, got string)",
      "insert\t0\tbad argument #2 to 'insert' (index item 2 must be an integer, got float)",
      "delete\t0\tbad argument #2 to 'delete' (index item 2 must be an integer, got float)",
      "delete\t0\tbad argument #2 to 'delete' (place 99 is out of range for an axis of length 50)",
      "ediff1d\t0\tbad argument #2 to 'ediff1d' (option 'to_end' must be a GPUArray, a number or a list of numbers, got string)",
    }, "\n") .. "\n", out)
  end)

  it("resize allocates only its result, and freeing resize's and in1d's results frees them", function()
    local out, ok = helpers.run_with_fakes(LEAK_PRELUDE .. [[
      leak("resize", function() return ga.resize(a, {50, 50}) end)
      local before = in_use()
      local r = ga.resize(a, {2500})                   -- a's 2000 float32 and half of them again
      print("held", in_use() - before)
      r:free()
      for _, x in ipairs{a, a:transpose(), a:transpose():reshape({2, 1000}), a:slice(1, 1)} do
        leak("in1d", function() return ga.in1d(x, b) end)
      end
    ]])
    assert(ok, out)
    assert.are.equal("resize\t0\nheld\t10000\nin1d\t0\nin1d\t0\nin1d\t0\nin1d\t0\n", out)
  end)

  it("trim_zeros takes trim's letters f and b in either case, as NumPy's", function()
    local out, ok = helpers.run_with_fakes([[
      local ga = require("gpu").gpuarray
      local filt = ga.zeros({5}, "int32")
      for _, trim in ipairs{"B", "F", "FB", "bF", "fb", ""} do
        print(trim, pcall(function() return ga.trim_zeros(filt, trim).ndim end))
      end
      print(ga.trim_zeros(filt, "").size)                -- nothing trimmed, nothing read back
    ]])
    assert(ok, out)
    assert.are.equal(("%s\ttrue\t1\n"):rep(6):format("B", "F", "FB", "bF", "fb", "") .. "5\n", out)
  end)

  it("ravel_multi_index reads nothing back unless an axis's mode is 'raise'", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local reduction = require "gpu.reduction"
      local checks = 0
      reduction.ReductionKernel = function()               -- any_outside's: counted, all in range
        return function() checks = checks + 1; return gpu.gpuarray.zeros({}, "bool") end
      end
      local ga = gpu.gpuarray
      local i, j = ga.zeros({5}, "int64"), ga.zeros({5}, "int32")
      for _, mode in ipairs{"wrap", "clip", {"clip", "wrap"}, "raise", {"wrap", "raise"}} do
        checks = 0
        ga.ravel_multi_index({i, j}, {4, 6}, {mode = mode}):free()
        print(checks)
      end
    ]])
    assert(ok, out)
    assert.are.equal("0\n0\n0\n1\n1\n", out)
  end)

  helpers.gpu_it("intersect1d, union1d, setdiff1d, setxor1d and in1d are NumPy's, on random values", function()
    for _, case in ipairs(SET_CASES) do
      local a_dtype, b_dtype, generate, joined = table.unpack(case)
      for _, sizes in ipairs{{0, 5}, {6, 0}, {1, 1}, {7, 9}, {40, 30}, {300, 500}, {3000, 700}} do
        local a, av = R.generate(sizes[1], a_dtype, generate)
        local b, bv = R.generate(sizes[2], b_dtype, generate)
        local what = ("%s[%d] and %s[%d]"):format(a_dtype, sizes[1], b_dtype, sizes[2])
        local ua, ub = unique(av), unique(bv)
        -- intersect1d: the values in both (NaN never), and where each first occurs
        local common = {}
        for _, v in ipairs(ua) do if holds(ub, v) then common[#common + 1] = v end end
        local got = ga.intersect1d(a, b)
        assert.are.equal(joined, got.dtype, what)
        assert_exact(common, got, "intersect1d of " .. what)
        local values, in_a, in_b = ga.intersect1d(a, b, {return_indices = true})
        assert_exact(common, values, "intersect1d with indices of " .. what)
        local want_a, want_b = {}, {}
        for k, v in ipairs(common) do
          for i = #av, 1, -1 do if av[i] == v then want_a[k] = i end end
          for i = #bv, 1, -1 do if bv[i] == v then want_b[k] = i end end
        end
        assert.are.equal("int64", in_a.dtype)
        assert_exact(want_a, in_a, "intersect1d's places in a of " .. what)
        assert_exact(want_b, in_b, "intersect1d's places in b of " .. what)
        -- union1d: the distinct values of both, NaNs as one
        got = ga.union1d(a, b)
        assert.are.equal(joined, got.dtype, what)
        assert_exact(unique(join(av, bv)), got, "union1d of " .. what)
        -- setdiff1d: a's distinct values not in b (a NaN stays), in a's dtype
        local rest = {}
        for _, v in ipairs(ua) do if not holds(bv, v) then rest[#rest + 1] = v end end
        got = ga.setdiff1d(a, b)
        assert.are.equal(a_dtype, got.dtype, what)
        assert_exact(rest, got, "setdiff1d of " .. what)
        -- setxor1d: the joined distinct values equal to neither neighbour (NaN to nothing)
        local both = sorted(join(ua, ub))
        local alone = {}
        for k, v in ipairs(both) do
          if (k == 1 or both[k - 1] ~= v) and (k == #both or both[k + 1] ~= v) then alone[#alone + 1] = v end
        end
        got = ga.setxor1d(a, b)
        assert.are.equal(joined, got.dtype, what)
        assert_exact(alone, got, "setxor1d of " .. what)
        -- in1d: membership of each of a's elements, and its inverse
        local member, outside = {}, {}
        for i, v in ipairs(av) do member[i], outside[i] = holds(bv, v), not holds(bv, v) end
        got = ga.in1d(a, b)
        assert.are.equal("bool", got.dtype)
        assert.are.same({sizes[1]}, got.shape)
        assert_exact(member, got, "in1d of " .. what)
        assert_exact(outside, ga.in1d(a, b, {invert = true}), "in1d inverted of " .. what)
        a:free()
        b:free()
      end
    end
  end)

  helpers.gpu_it("the set routines flatten views row-major, and assume_unique keeps NumPy's steps", function()
    -- a transposed 2-d view of a and an every-other view of b: flattened in the views' order
    local m, mv = R.generate(6 * 5, "int32", integers(-12, 12))
    local a, av = R.transposed(R.reshaped(m, {6, 5})), transposed(mv, 6, 5)
    local c, cv = R.generate(41, "float64", quarters(-48, 48, 0.1))
    local b, bv = R.every(c, 2), {}
    for i = 1, #cv, 2 do bv[#bv + 1] = cv[i] end
    local common = {}
    for _, v in ipairs(unique(av)) do if holds(bv, v) then common[#common + 1] = v end end
    local values, in_a, in_b = ga.intersect1d(a, b, {return_indices = true})
    assert_exact(common, values, "intersect1d of views")
    local want_a, want_b = {}, {}
    for k, v in ipairs(common) do
      for i = #av, 1, -1 do if av[i] == v then want_a[k] = i end end
      for i = #bv, 1, -1 do if bv[i] == v then want_b[k] = i end end
    end
    assert_exact(want_a, in_a, "intersect1d's places in a transposed view")
    assert_exact(want_b, in_b, "intersect1d's places in a strided view")
    assert_exact(unique(join(av, bv)), ga.union1d(a, b), "union1d of views")
    local member = {}
    for i, v in ipairs(av) do member[i] = holds(bv, v) end
    assert_exact(member, ga.in1d(a, b), "in1d of views")
    local s = gpu.Stream()
    local on_stream = ga.in1d(a, b, {stream = s})          -- the transposed view copied on s
    s:synchronize()
    assert.are.same({30}, on_stream.shape)
    assert_exact(member, on_stream, "in1d of views on a stream")
    -- assume_unique: distinct values in a random order; setdiff1d then keeps a's order
    local function distinct_values(n, lo, hi)
      local pool = {}
      for v = lo, hi do pool[#pool + 1] = v end
      for i = #pool, 2, -1 do
        local j = math.random(i)
        pool[i], pool[j] = pool[j], pool[i]
      end
      return table.move(pool, 1, n, 1, {})
    end
    for _, dtype in ipairs{"int16", "float32", "uint64"} do
      local xs, ys = distinct_values(200, 0, 400), distinct_values(150, 0, 400)
      local x, y = R.to_gpu(xs, dtype), R.to_gpu(ys, dtype)
      local in_y, common_sorted = {}, {}
      for _, v in ipairs(ys) do in_y[v] = true end
      for _, v in ipairs(xs) do if in_y[v] then common_sorted[#common_sorted + 1] = v end end
      table.sort(common_sorted)
      local got, places_x, places_y = ga.intersect1d(x, y, {assume_unique = true, return_indices = true})
      assert_exact(common_sorted, got, dtype .. " intersect1d assuming unique")
      local where_x, where_y, want_x, want_y = {}, {}, {}, {}
      for i, v in ipairs(xs) do where_x[v] = i end
      for i, v in ipairs(ys) do where_y[v] = i end
      for k, v in ipairs(common_sorted) do want_x[k], want_y[k] = where_x[v], where_y[v] end
      assert_exact(want_x, places_x, dtype .. " intersect1d's places assuming unique")
      assert_exact(want_y, places_y, dtype .. " intersect1d's places in y assuming unique")
      local kept = {}
      for _, v in ipairs(xs) do if not in_y[v] then kept[#kept + 1] = v end end
      assert_exact(kept, ga.setdiff1d(x, y, {assume_unique = true}), dtype .. " setdiff1d assuming unique")
      local alone = {}
      for _, v in ipairs(sorted(join(xs, ys))) do
        if not (in_y[v] and holds(xs, v)) then alone[#alone + 1] = v end
      end
      assert_exact(alone, ga.setxor1d(x, y, {assume_unique = true}), dtype .. " setxor1d assuming unique")
      x:free()
      y:free()
    end
    -- assume_unique claimed for repeats: NumPy's steps repeat the value
    local x, y = R.to_gpu({1, 1, 2}, "int32"), R.to_gpu({1, 3}, "int32")
    assert_exact({1, 1}, ga.intersect1d(x, y, {assume_unique = true}), "intersect1d of repeats assumed unique")
    -- NaNs: intersect1d never keeps one, setxor1d keeps each side's, union1d one
    local p, q = R.to_gpu({NAN, 1.5, 2}, "float64"), R.to_gpu({2, NAN, NAN}, "float32")
    assert_exact({2}, ga.intersect1d(p, q), "intersect1d with NaNs")
    assert_exact({1.5, NAN, NAN}, ga.setxor1d(p, q), "setxor1d with NaNs")
    assert_exact({1.5, 2, NAN}, ga.union1d(p, q), "union1d with NaNs")
    assert_exact({1.5, NAN}, ga.setdiff1d(p, q), "setdiff1d with NaNs")
    assert_exact({false, false, true}, ga.in1d(p, q), "in1d with NaNs")
    -- complex: union1d, intersect1d and setxor1d order by real part, then imaginary
    local z1 = R.to_gpu({gpu.complex(1, 2), gpu.complex(0, 5), gpu.complex(1, -1), gpu.complex(1, 2)}, "complex64")
    local z2 = R.to_gpu({gpu.complex(1, -1), gpu.complex(3, 0)}, "complex128")
    local got = ga.union1d(z1, z2)
    assert.are.equal("complex128", got.dtype)
    assert_exact({gpu.complex(0, 5), gpu.complex(1, -1), gpu.complex(1, 2), gpu.complex(3, 0)}, got, "complex union1d")
    assert_exact({gpu.complex(1, -1)}, ga.intersect1d(z1, z2), "complex intersect1d")
    assert_exact({gpu.complex(0, 5), gpu.complex(1, 2), gpu.complex(3, 0)}, ga.setxor1d(z1, z2), "complex setxor1d")
    -- 0-d arrays count as one element; in1d's stream
    local s = gpu.Stream()
    local flags = ga.in1d(ga.full({}, 3, "int32"), R.to_gpu({1, 3}, "int64"), {stream = s})
    s:synchronize()
    assert.are.same({1}, flags.shape)
    assert_exact({true}, flags, "in1d of a 0-d array on a stream")
    -- errors
    helpers.assert_error("bad argument #2 to 'intersect1d' (GPUArray expected, got number)", ga.intersect1d, p, 3)
    helpers.assert_error("bad argument #3 to 'intersect1d' (unknown option 'invert')", ga.intersect1d, p, q, {invert = true})
    helpers.assert_error("bad argument #3 to 'intersect1d' (option 'return_indices' must be a boolean, got number)",
                         ga.intersect1d, p, q, {return_indices = 1})
    helpers.assert_error("bad argument #3 to 'setdiff1d' (option 'assume_unique' must be a boolean, got string)",
                         ga.setdiff1d, p, q, {assume_unique = "yes"})
    helpers.assert_error("bad argument #3 to 'setxor1d' (unknown option 'return_indices')",
                         ga.setxor1d, p, q, {return_indices = true})
    helpers.assert_error("bad argument #3 to 'in1d' (option 'invert' must be a boolean, got number)", ga.in1d, p, q, {invert = 1})
    helpers.assert_error("bad argument #1 to 'setdiff1d' (complex values are not supported, got complex64)",
                         ga.setdiff1d, z1, z2)
    helpers.assert_error("bad argument #2 to 'in1d' (complex values are not supported, got complex128)", ga.in1d, p, z2)
    q:free()
    for _, name in ipairs{"intersect1d", "union1d", "setdiff1d", "setxor1d", "in1d"} do
      helpers.assert_error(("bad argument #2 to '%s' (array has been freed)"):format(name), ga[name], p, q)
      helpers.assert_error(("bad argument #1 to '%s' (array has been freed)"):format(name), ga[name], q, p)
    end
  end)

  helpers.gpu_it("lexsort sorts by the last key first, each earlier key breaking ties, stably", function()
    local function reference(keys, n)
      local order = {}
      for i = 1, n do order[i] = i end
      table.sort(order, function(i, j)
        for k = #keys, 1, -1 do
          local x, y = keys[k][i], keys[k][j]
          if before(x, y) then return true end
          if before(y, x) then return false end
        end
        return i < j
      end)
      return order
    end
    for _, n in ipairs{1, 2, 17, 300, 3000} do
      local k1, v1 = R.generate(n, "float64", quarters(-6, 6, 0.1))
      local k2, v2 = R.generate(n, "int8", integers(-3, 3))
      local k3, v3 = R.generate(n, "bool", coin)
      local got = ga.lexsort({k1, k2, k3})
      assert.are.equal("int64", got.dtype)
      assert.are.same({n}, got.shape)
      assert_exact(reference({v1, v2, v3}, n), got, ("lexsort of 3 keys of %d"):format(n))
      assert_exact(reference({v3, v1}, n), ga.lexsort({k3, k1}), ("lexsort of 2 keys of %d"):format(n))
      assert_exact(reference({v2}, n), ga.lexsort({k2}), ("lexsort of one key of %d"):format(n))
      assert_exact(reference({v2}, n), ga.lexsort(k2), ("lexsort of a 1-d array of %d"):format(n))
      -- a 2-d array's rows, contiguous and as a transposed view (rows strided), and complex keys
      local m, mv = R.generate(3 * n, "uint16", integers(0, 4))
      local rows = {{}, {}, {}}
      for r = 1, 3 do for i = 1, n do rows[r][i] = mv[(r - 1) * n + i] end end
      assert_exact(reference(rows, n), ga.lexsort(R.reshaped(m, {3, n})), ("lexsort of 3 x %d rows"):format(n))
      local columns = {{}, {}, {}}
      for r = 1, 3 do for i = 1, n do columns[r][i] = mv[(i - 1) * 3 + r] end end
      assert_exact(reference(columns, n), ga.lexsort(R.transposed(R.reshaped(m, {n, 3}))),
                   ("lexsort of the rows of a transposed %d x 3"):format(n))
      local z, zv = R.generate(n, "complex64", function() return gpu.complex(math.random(0, 2), math.random(0, 2)) end)
      assert_exact(reference({v2, zv}, n), ga.lexsort({k2, z}), ("lexsort by a complex key of %d"):format(n))
      for _, x in ipairs{k1, k2, k3, m, z} do x:free() end
    end
    assert.are.same({0}, ga.lexsort({ga.zeros({0}), ga.zeros({0}, "int32")}).shape)
    assert.are.same({0}, ga.lexsort(ga.zeros({2, 0})).shape)
    local a, b = ga.zeros({4}), ga.zeros({5})
    helpers.assert_error("bad argument #1 to 'lexsort' (key #2 has 5 elements, key #1 4)", ga.lexsort, {a, b})
    helpers.assert_error("bad argument #1 to 'lexsort' (key #2 is 2-d, not 1-d)", ga.lexsort, {a, ga.zeros({2, 2})})
    helpers.assert_error("bad argument #1 to 'lexsort' (keys must be a list of 1-d arrays or a 2-d array, got a 3-d array)",
                         ga.lexsort, ga.zeros({2, 2, 2}))
    helpers.assert_error("bad argument #1 to 'lexsort' (at least one key is needed)", ga.lexsort, ga.zeros({0, 3}))
    b:free()
    helpers.assert_error("bad argument #1 to 'lexsort' (key #2 has been freed)", ga.lexsort, {a, b})
    helpers.assert_error("bad argument #1 to 'lexsort' (array has been freed)", ga.lexsort, b)
  end)

  helpers.gpu_it("unravel_index and ravel_multi_index convert 1-based places both ways, C or F order", function()
    local function unravel(f, shape, order)
      local steps, step = {}, 1
      local first, last, by = #shape, 1, -1
      if order == "F" then first, last, by = 1, #shape, 1 end
      for d = first, last, by do steps[d], step = step, step * shape[d] end
      local places = {}
      for d = 1, #shape do places[d] = (f - 1) // steps[d] % shape[d] + 1 end
      return places, steps
    end
    for _, shape in ipairs{{4, 5, 6}, {7}, {3, 1, 2}, {2, 1000}} do
      local size = 1
      for _, d in ipairs(shape) do size = size * d end
      for _, order in ipairs{"C", "F"} do
        for _, dtype in ipairs{"int32", "int64", "uint16"} do
          local n = 50
          local flat, fv = R.generate(n, dtype, integers(1, math.min(size, 65535)))
          local indices = R.reshaped(flat, {5, 10})
          local results = {ga.unravel_index(indices, shape, order == "F" and {order = "F"} or nil)}
          assert.are.equal(#shape, #results)
          local wants = {}
          for d = 1, #shape do wants[d] = {} end
          for i, f in ipairs(fv) do
            local places = unravel(f, shape, order)
            for d = 1, #shape do wants[d][i] = places[d] end
          end
          local what = ("unravel_index of %s %s in %s order"):format(dtype, table.concat(shape, "x"), order)
          for d = 1, #shape do
            assert.are.equal("int64", results[d].dtype)
            assert.are.same({5, 10}, results[d].shape)
            assert_exact(wants[d], results[d], what .. " axis " .. d)
          end
          -- and back: ravel_multi_index of those places gives the flat indices
          local back = ga.ravel_multi_index(results, shape, {order = order})
          assert.are.same({5, 10}, back.shape)
          assert_exact(fv, back, "ravel_multi_index of " .. what)
          flat:free()
        end
      end
    end
    -- a transposed view and a table of indices; empty indices
    local m, mv = R.generate(12, "int64", integers(1, 24))
    local rows, cols = ga.unravel_index(R.transposed(R.reshaped(m, {3, 4})), {6, 4})
    local want_rows, want_cols = {}, {}
    for i, f in ipairs(transposed(mv, 3, 4)) do want_rows[i], want_cols[i] = (f - 1) // 4 + 1, (f - 1) % 4 + 1 end
    assert.are.same({4, 3}, rows.shape)
    assert_exact(want_rows, rows, "unravel_index of a transposed view, rows")
    assert_exact(want_cols, cols, "unravel_index of a transposed view, columns")
    rows, cols = ga.unravel_index({1, 24, 7}, {6, 4})
    assert_exact({1, 6, 2}, rows, "unravel_index of a table, rows")
    assert_exact({1, 4, 3}, cols, "unravel_index of a table, columns")
    local none = {ga.unravel_index(ga.zeros({0}, "int32"), {6, 4})}
    assert.are.same({0}, none[2].shape)
    -- ravel_multi_index: broadcast index arrays, modes wrap and clip, one mode an axis
    local i1, v1 = R.generate(3, "int32", integers(-9, 14))
    local i2, v2 = R.generate(4, "int8", integers(-9, 14))
    local dims = {4, 5, 6}
    for _, modes in ipairs{{"wrap", "wrap", "wrap"}, {"clip", "clip", "clip"}, {"wrap", "clip", "raise"}} do
      for _, order in ipairs{"C", "F"} do
        local got = ga.ravel_multi_index({i1:reshape(3, 1), i2:reshape(1, 4), 2}, dims,
                                         {mode = modes[1] == modes[2] and modes[1] or modes, order = order})
        assert.are.same({3, 4}, got.shape)
        local want = {}
        for r = 1, 3 do
          for c = 1, 4 do
            local places = {v1[r], v2[c], 2}
            local flat_place, steps = 1, select(2, unravel(1, dims, order))
            for d = 1, 3 do
              local v, n = places[d], dims[d]
              if modes[d] == "wrap" then v = (v - 1) % n + 1 else v = math.max(1, math.min(v, n)) end
              flat_place = flat_place + (v - 1) * steps[d]
            end
            want[#want + 1] = flat_place
          end
        end
        assert_exact(want, got, ("ravel_multi_index in modes %s, order %s"):format(table.concat(modes, ","), order))
      end
    end
    local stacked = R.to_gpu({1, 4, 2, 5, 3, 6}, "int64"):reshape(3, 2)   -- rows: the places of each axis
    -- places (1, 2, 3) and (4, 5, 6): 1 + 0 * 30 + 1 * 6 + 2 and 1 + 3 * 30 + 4 * 6 + 5
    assert_exact({9, 120}, ga.ravel_multi_index(stacked, {4, 5, 6}), "ravel_multi_index of rows")
    assert.are.same({0}, ga.ravel_multi_index({ga.zeros({0}, "int32"), ga.zeros({0}, "int32")}, {4, 5}).shape)
    -- errors: out of range (read back), bad dtypes, shapes, freed arrays
    local bad = R.to_gpu({3, 25, 0}, "int32")
    helpers.assert_error("bad argument #1 to 'unravel_index' (index 25 at position 2 is out of range for 24 elements)",
                         ga.unravel_index, bad, {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (index 7 at position 2 of item 2 is out of range for axis 2 of length 6)",
                         ga.ravel_multi_index, {R.to_gpu({1, 2}, "int32"), R.to_gpu({6, 7}, "int64")}, {4, 6})
    helpers.assert_error("bad argument #1 to 'unravel_index' (indices must be integers, got float32)",
                         ga.unravel_index, ga.zeros({2}, "float32"), {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (multi_index item 2 must be integers, got float64)",
                         ga.ravel_multi_index, {bad, ga.zeros({3})}, {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (operands could not be broadcast together with shapes (3,) (2,))",
                         ga.ravel_multi_index, {bad, R.to_gpu({1, 2}, "int32")}, {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (multi_index must be a list or an array of 1 or more axes, got a 0-d array)",
                         ga.ravel_multi_index, ga.zeros({}, "int32"), {6, 4})
    bad:free()
    helpers.assert_error("bad argument #1 to 'unravel_index' (array has been freed)", ga.unravel_index, bad, {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (array has been freed)", ga.ravel_multi_index, {bad, bad}, {6, 4})
    helpers.assert_error("bad argument #1 to 'ravel_multi_index' (array has been freed)", ga.ravel_multi_index, bad, {6, 4})
  end)

  -- The reference of insert: along the axis, before each of arr's elements p (0-based) and
  -- at the end (p = n), the slots whose place is p in their order, then element p.  arr is
  -- the row-major list of an array of shape; place[m] is slot m's 0-based place and
  -- block(o, m, r) its value at o before the axis and r after it.
  local function insert_reference(values, shape, axis, place, block)
    local outer, inner, n = 1, 1, shape[axis]
    for d = 1, axis - 1 do outer = outer * shape[d] end
    for d = axis + 1, #shape do inner = inner * shape[d] end
    local out = {}
    for o = 0, outer - 1 do
      for p = 0, n do
        for m = 1, #place do
          if place[m] == p then
            for r = 0, inner - 1 do out[#out + 1] = block(o, m, r) end
          end
        end
        if p < n then
          for r = 0, inner - 1 do out[#out + 1] = values[(o * n + p) * inner + r + 1] end
        end
      end
    end
    return out
  end

  -- The rows of a row-major list of shape kept along axis where keep(p) (p 1-based).
  local function kept_reference(values, shape, axis, keep)
    local outer, inner, n = 1, 1, shape[axis]
    for d = 1, axis - 1 do outer = outer * shape[d] end
    for d = axis + 1, #shape do inner = inner * shape[d] end
    local out = {}
    for o = 0, outer - 1 do
      for p = 1, n do
        if keep(p) then
          for r = 0, inner - 1 do out[#out + 1] = values[(o * n + p - 1) * inner + r + 1] end
        end
      end
    end
    return out
  end

  local EDIT_DTYPES = {
    {"float64", quarters(-40, 40, 0.05)}, {"float32", quarters(-40, 40, 0)}, {"float16", integers(-50, 50)},
    {"int64", integers(-2 ^ 40, 2 ^ 40)}, {"int32", integers(-1000, 1000)}, {"uint8", integers(0, 255)},
    {"bool", coin}, {"complex64", function() return gpu.complex(math.random(-9, 9), math.random(-9, 9)) end},
    {"complex128", function() return gpu.complex(math.random() - 0.5, math.random() - 0.5) end},
  }

  helpers.gpu_it("insert puts values before NumPy's places along an axis, or in the flattened array", function()
    for _, case in ipairs(EDIT_DTYPES) do
      local dtype, generate = case[1], case[2]
      local what = dtype
      local m, mv = R.generate(3 * 4 * 5, dtype, generate)
      local a = R.reshaped(m, {3, 4, 5})
      local extra, ev = R.generate(4 * 5, dtype, generate)
      -- flattened: a list of places (negative, repeated, the end), a value each
      local places = {1, -1, 61, 7, 7, 30}
      local zero_based = {0, 59, 60, 6, 6, 29}
      local got = ga.insert(a, places, extra:slice(1, 6))
      assert.are.same({66}, got.shape)
      assert.are.equal(dtype, got.dtype)
      assert_exact(insert_reference(mv, {60}, 1, zero_based, function(_, k) return ev[k] end), got,
                   what .. " insert at a list of places, flattened")
      -- flattened, one place: every value goes in there, in order
      got = ga.insert(a, -3, extra:slice(1, 3))
      assert_exact(insert_reference(mv, {60}, 1, {57, 57, 57}, function(_, k) return ev[k] end), got,
                   what .. " insert of 3 values at one place")
      -- axis 2: a list of places, values of shape (k, 5) broadcast over axis 1
      got = ga.insert(a, {2, -1, 5, 2}, R.reshaped(extra, {4, 5}), {axis = 2})
      assert.are.same({3, 8, 5}, got.shape)
      assert_exact(insert_reference(mv, {3, 4, 5}, 2, {1, 3, 4, 1},
                                    function(_, k, r) return ev[(k - 1) * 5 + r + 1] end), got,
                   what .. " insert at places along axis 2")
      -- axis 3, one place: values of shape (4,) made 3-d, (1, 1, 4), have their first axis
      -- moved to the insert axis, as NumPy's: (1, 4, 1), broadcast to (3, 4, 1)
      got = ga.insert(a, 6, extra:slice(1, 4), {axis = 3})
      assert.are.same({3, 4, 6}, got.shape)
      assert_exact(insert_reference(mv, {3, 4, 5}, 3, {5},
                                    function(o, _) return ev[o % 4 + 1] end), got,
                   what .. " insert of a column at the end of axis 3")
      -- axis 3, a list of one place: values (4,) -> (1, 1, 4): four new columns, each a value
      got = ga.insert(a, {1}, extra:slice(1, 4), {axis = 3})
      assert.are.same({3, 4, 9}, got.shape)
      assert_exact(insert_reference(mv, {3, 4, 5}, 3, {0, 0, 0, 0},
                                    function(_, k) return ev[k] end), got,
                   what .. " insert of a list of one place along axis 3")
      -- a transposed view along axis 1, one value broadcast
      local t, tv = R.transposed(R.reshaped(m, {12, 5})), transposed(mv, 12, 5)
      local one = ev[1]
      got = ga.insert(t, {3, 3}, extra:slice(1, 1):reshape({}), {axis = 1})
      assert.are.same({7, 12}, got.shape)
      assert_exact(insert_reference(tv, {5, 12}, 1, {2, 2}, function() return one end), got,
                   what .. " insert into a transposed view")
      m:free()
      extra:free()
    end
    -- values from Lua, converted to the array's dtype as NumPy's (a float into int32: truncated)
    local a = R.to_gpu({1, 2, 3}, "int32")
    assert_exact({1, 7, 2, 3}, ga.insert(a, 2, 7.9), "insert of a float into int32")
    assert_exact({9, 1, 2, 3, 8}, ga.insert(a, {1, 4}, {9, 8}), "insert of a table")
    assert_exact({1, 2, 3}, ga.insert(a, {}, {}), "insert of nothing")
    assert_exact({5, 1, 2, 3}, ga.insert(a, R.to_gpu({1}, "int64"):reshape({}), 5), "insert at a 0-d array's place")
    assert_exact({5, 5, 5}, ga.insert(ga.zeros({0}, "int32"), {1, 1, 1}, 5), "insert into an empty array")
    local b = ga.insert(ga.zeros({2, 0}, "float32"), 1, {1.5, 2.5}, {axis = 2})
    assert.are.same({2, 1}, b.shape)
    assert_exact({1.5, 2.5}, b, "insert of a column into a 2 x 0 array")
    helpers.assert_error("bad argument #2 to 'insert' (place 5 is out of range for an axis of length 3 (1 to 4, or -3 to -1))",
                         ga.insert, a, 5, 1)
    helpers.assert_error("bad argument #2 to 'insert' (place 0 is out of range for an axis of length 3 (1 to 4, or -3 to -1))",
                         ga.insert, a, {1, 0}, {1, 2})
    helpers.assert_error("bad argument #2 to 'insert' (place -4 is out of range for an axis of length 3 (1 to 4, or -3 to -1))",
                         ga.insert, a, -4, 1)
    helpers.assert_error("bad argument #2 to 'insert' (index item 2 must be an integer, got float)", ga.insert, a, {1, 1.5}, 1)
    helpers.assert_error("bad argument #2 to 'insert' (index must be an integer or a list of them, got string)",
                         ga.insert, a, "1", 1)
    helpers.assert_error("bad argument #2 to 'insert' (index must be integers, got float32)",
                         ga.insert, a, ga.zeros({1}, "float32"), 1)
    helpers.assert_error("bad argument #3 to 'insert' (values of shape (2,) do not broadcast to (3,))",
                         ga.insert, a, {1, 2, 3}, {1, 2})
    helpers.assert_error("bad argument #3 to 'insert' (values must be a GPUArray, a value or a table of values, got string)",
                         ga.insert, a, 1, "x")
    helpers.assert_error("bad argument #4 to 'insert' (axis 2 is out of range for a 1-d array)", ga.insert, a, 1, 1, {axis = 2})
    helpers.assert_error("bad argument #4 to 'insert' (unknown option 'mode')", ga.insert, a, 1, 1, {mode = "clip"})
    local v = ga.zeros({1}, "int32")
    v:free()
    helpers.assert_error("bad argument #3 to 'insert' (array has been freed)", ga.insert, a, 1, v)
    a:free()
    helpers.assert_error("bad argument #1 to 'insert' (array has been freed)", ga.insert, a, 1, 1)
  end)

  helpers.gpu_it("delete and append drop and add elements along an axis, or in the flattened array", function()
    for _, case in ipairs(EDIT_DTYPES) do
      local dtype, generate = case[1], case[2]
      local m, mv = R.generate(3 * 4 * 5, dtype, generate)
      local a = R.reshaped(m, {3, 4, 5})
      -- flattened: places (negatives, repeats), in any order
      local gone = {[60] = true, [1] = true, [17] = true, [30] = true}
      local got = ga.delete(a, {-1, 1, 17, 30, 17})
      assert.are.same({56}, got.shape)
      assert.are.equal(dtype, got.dtype)
      assert_exact(kept_reference(mv, {60}, 1, function(p) return not gone[p] end), got, dtype .. " delete, flattened")
      -- along axis 2: one place; a mask (a table, and a GPUArray)
      got = ga.delete(a, -2, {axis = 2})
      assert.are.same({3, 3, 5}, got.shape)
      assert_exact(kept_reference(mv, {3, 4, 5}, 2, function(p) return p ~= 3 end), got, dtype .. " delete along axis 2")
      local mask = {true, false, false, true, false}
      got = ga.delete(a, mask, {axis = 3})
      assert.are.same({3, 4, 3}, got.shape)
      assert_exact(kept_reference(mv, {3, 4, 5}, 3, function(p) return not mask[p] end), got, dtype .. " delete by a mask")
      got = ga.delete(a, R.to_gpu({false, true, false}, "bool"), {axis = 1})
      assert_exact(kept_reference(mv, {3, 4, 5}, 1, function(p) return p ~= 2 end), got, dtype .. " delete by a GPU mask")
      got = ga.delete(a, R.to_gpu({4, 1}, "uint8"), {axis = -1})
      assert_exact(kept_reference(mv, {3, 4, 5}, 3, function(p) return p ~= 1 and p ~= 4 end), got,
                   dtype .. " delete by a GPU list of places")
      -- a transposed view
      local t, tv = R.transposed(R.reshaped(m, {12, 5})), transposed(mv, 12, 5)
      got = ga.delete(t, {1, 12}, {axis = 2})
      assert.are.same({5, 10}, got.shape)
      assert_exact(kept_reference(tv, {5, 12}, 2, function(p) return p ~= 1 and p ~= 12 end), got,
                   dtype .. " delete from a transposed view")
      -- append: flattened, and along an axis (a transposed view appended)
      local e, ev = R.generate(5 * 12, dtype, generate)
      got = ga.append(a, e:slice(1, 7))
      assert.are.same({67}, got.shape)
      assert_exact(join(mv, table.move(ev, 1, 7, 1, {})), got, dtype .. " append, flattened")
      got = ga.append(R.reshaped(m, {5, 12}), t, {axis = 1})
      assert.are.same({10, 12}, got.shape)
      assert_exact(join(mv, tv), got, dtype .. " append along axis 1")
      got = ga.append(R.reshaped(m, {12, 5}), R.reshaped(e:slice(1, 24), {12, 2}), {axis = 2})
      assert.are.same({12, 7}, got.shape)
      local want = {}
      for r = 1, 12 do
        for c = 1, 5 do want[#want + 1] = mv[(r - 1) * 5 + c] end
        for c = 1, 2 do want[#want + 1] = ev[(r - 1) * 2 + c] end
      end
      assert_exact(want, got, dtype .. " append along axis 2")
      m:free()
      e:free()
    end
    local a = R.to_gpu({1, 2, 3}, "int8")
    assert_exact({1, 3}, ga.delete(a, 2), "delete of one place")
    assert_exact({1, 2, 3}, ga.delete(a, {}), "delete of nothing")
    assert.are.same({0}, ga.delete(a, {1, 2, 3}).shape)
    assert.are.same({2, 0}, ga.delete(ga.zeros({2, 3}), {1, 2, 3}, {axis = 2}).shape)
    local appended = ga.append(a, {2.5, 4})             -- NumPy's: a float64 table promotes
    assert.are.equal("float64", appended.dtype)
    assert_exact({1, 2, 3, 2.5, 4}, appended, "append of a table")
    assert.are.equal("int16", ga.append(a, R.to_gpu({300}, "int16")).dtype)
    assert_exact({1, 2, 3, 7}, ga.append(a, 7), "append of one number")
    assert_exact({1, 2, 3}, ga.append(a, ga.zeros({0}, "int8")), "append of nothing")
    helpers.assert_error("bad argument #2 to 'delete' (place 4 is out of range for an axis of length 3)", ga.delete, a, 4)
    helpers.assert_error("bad argument #2 to 'delete' (place -4 is out of range for an axis of length 3)", ga.delete, a, {-4})
    helpers.assert_error("bad argument #2 to 'delete' (a mask of 2 bools for an axis of length 3)", ga.delete, a, {true, false})
    helpers.assert_error("bad argument #2 to 'delete' (index must be integers or bools, got float64)",
                         ga.delete, a, ga.zeros({3}))
    helpers.assert_error("bad argument #2 to 'delete' (index must be 0-d or 1-d, got a 2-d array)",
                         ga.delete, a, ga.zeros({1, 1}, "int32"))
    helpers.assert_error("bad argument #3 to 'delete' (axis -2 is out of range for a 1-d array)", ga.delete, a, 1, {axis = -2})
    helpers.assert_error("bad argument #3 to 'delete' (unknown option 'axes')", ga.delete, a, 1, {axes = 1})
    local m = ga.zeros({2, 3})
    helpers.assert_error("bad argument #2 to 'append' (values are 1-d, the array 2-d)", ga.append, m, a, {axis = 1})
    helpers.assert_error("bad argument #2 to 'append' (values have shape (2,2), the array (2,3): they must agree off axis 1)",
                         ga.append, m, ga.zeros({2, 2}), {axis = 1})
    helpers.assert_error("bad argument #2 to 'append' (values must be a GPUArray, a value or a table of values, got string)",
                         ga.append, m, "x")
    helpers.assert_error("bad argument #3 to 'append' (option 'axis' must be an integer, got string)", ga.append, m, m, {axis = "1"})
    local freed = ga.zeros({3})
    freed:free()
    helpers.assert_error("bad argument #1 to 'delete' (array has been freed)", ga.delete, freed, 1)
    helpers.assert_error("bad argument #2 to 'delete' (array has been freed)", ga.delete, a, freed)
    helpers.assert_error("bad argument #1 to 'append' (array has been freed)", ga.append, freed, a)
    helpers.assert_error("bad argument #2 to 'append' (array has been freed)", ga.append, a, freed)
  end)

  helpers.gpu_it("insert and delete find many places on a long axis by a binary search", function()
    local n = 2000
    for _, case in ipairs{EDIT_DTYPES[5], EDIT_DTYPES[1], EDIT_DTYPES[6], EDIT_DTYPES[9]} do
      local dtype, generate = case[1], case[2]
      local m, mv = R.generate(2 * n * 3, dtype, generate)
      local a = R.reshaped(m, {2, n, 3})
      -- delete: random places (repeats, negatives, both ends and a run) along axis 2
      local places, gone = {1, n, 700, 701, 702, 703}, {}
      for i = 7, 300 do places[i] = math.random(1, n) end
      for i, p in ipairs(places) do
        gone[p] = true
        if math.random() < 0.5 then places[i] = p - n - 1 end         -- the same place from the end
      end
      local kept = 0
      for p = 1, n do if not gone[p] then kept = kept + 1 end end
      local want = kept_reference(mv, {2, n, 3}, 2, function(p) return not gone[p] end)
      local got = ga.delete(a, places, {axis = 2})
      assert.are.same({2, kept, 3}, got.shape)
      assert_exact(want, got, dtype .. " delete of many places")
      local mask = {}
      for p = 1, n do mask[p] = gone[p] == true end
      got = ga.delete(a, R.to_gpu(mask, "bool"), {axis = 2})
      if VALUES then assert.are.same({2, kept, 3}, got.shape) end     -- from the places found
      assert_exact(want, got, dtype .. " delete by a GPU mask of many places")
      -- insert: random places (repeats, negatives, both ends), a value each, along axis 2
      local extra, ev = R.generate(300 * 3, dtype, generate)
      local at, zero_based = {1, n + 1, 5, 5}, {}
      for i = 5, 300 do at[i] = math.random(1, n + 1) end
      for i, p in ipairs(at) do
        zero_based[i] = p - 1
        if p <= n and math.random() < 0.5 then at[i] = p - n - 1 end
      end
      got = ga.insert(a, at, R.reshaped(extra, {300, 3}), {axis = 2})
      assert.are.same({2, n + 300, 3}, got.shape)
      assert_exact(insert_reference(mv, {2, n, 3}, 2, zero_based,
                                    function(_, k, r) return ev[(k - 1) * 3 + r + 1] end), got,
                   dtype .. " insert at many places")
      m:free()
      extra:free()
    end
  end)

  helpers.gpu_it("resize repeats the data, trim_zeros trims, sort_complex sorts as complex", function()
    for _, case in ipairs(EDIT_DTYPES) do
      local dtype, generate = case[1], case[2]
      local m, mv = R.generate(12, dtype, generate)
      for _, shape in ipairs{{5}, {12}, {7, 5}, {2, 3, 4}, {30}} do
        local size = 1
        for _, d in ipairs(shape) do size = size * d end
        local want = {}
        for i = 1, size do want[i] = mv[(i - 1) % 12 + 1] end
        local got = ga.resize(R.reshaped(m, {3, 4}), shape)
        assert.are.same(shape, got.shape)
        assert.are.equal(dtype, got.dtype)
        assert_exact(want, got, ("%s resize to %s"):format(dtype, table.concat(shape, "x")))
      end
      local tv = transposed(mv, 3, 4)
      local want = {}
      for i = 1, 20 do want[i] = tv[(i - 1) % 12 + 1] end
      assert_exact(want, ga.resize(R.transposed(R.reshaped(m, {3, 4})), {4, 5}), dtype .. " resize of a transposed view")
      m:free()
    end
    assert_exact({0, 0, 0, 0}, ga.resize(ga.zeros({0}, "int32"), {2, 2}), "resize of an empty array")
    assert.are.same({0, 3}, ga.resize(R.to_gpu({1, 2}, "int32"), {0, 3}).shape)
    assert_exact({7, 7, 7}, ga.resize(ga.full({}, 7, "int16"), 3), "resize of a 0-d array")
    -- trim_zeros: zeros (and -0.0) at either end; NaN is not zero
    local cases = {
      {"int32", {0, 0, 3, 0, 4, 0}}, {"float64", {-0.0, 0, NAN, 0, 2.5, 0, 0}}, {"float16", {0, 1, 0}},
      {"bool", {false, true, false, true, false}}, {"uint8", {5, 0, 0}}, {"int64", {0, 0, 0}},
      {"complex64", {gpu.complex(0, 0), gpu.complex(0, 1), gpu.complex(0, 0)}}, {"float32", {1, 2}},
    }
    for _, case in ipairs(cases) do
      local dtype, values = case[1], case[2]
      local a = R.to_gpu(values, dtype)
      local function nonzero(v)
        if type(v) == "table" then return v.re ~= 0 or v.im ~= 0 end
        if type(v) == "boolean" then return v end
        return v ~= 0
      end
      local first, last = #values + 1, 0
      for i = #values, 1, -1 do if nonzero(values[i]) then first = i end end
      for i = 1, #values do if nonzero(values[i]) then last = i end end
      for _, trim in ipairs{"fb", "f", "b", "bf", "B", "F", "FB", "bF", "ffb", ""} do    -- NumPy's: any case
        local lower = trim:lower()
        local lo = lower:find("f") and first or 1
        local hi = lower:find("b") and last or #values
        if first > #values and lower ~= "" then lo, hi = 1, 0 end          -- all zeros: nothing is left
        local got = ga.trim_zeros(a, trim ~= "fb" and trim or nil)
        assert.are.equal(dtype, got.dtype)
        assert_exact(table.move(values, lo, hi, 1, {}), got, ("%s trim_zeros '%s'"):format(dtype, trim))
      end
      a:free()
    end
    local long, lv = R.generate(5001, "float32", function(i) return (i < 1200 or i > 4800) and 0 or math.random(1, 9) end)
    local first, last
    for i = 1, #lv do if lv[i] ~= 0 then first = first or i; last = i end end
    local trimmed = ga.trim_zeros(long)
    assert_exact(table.move(lv, first, last, 1, {}), trimmed, "trim_zeros of 5001 float32")
    trimmed:fill(0)                                          -- a view: NumPy's slice
    if VALUES then assert.are.equal(0, long:get()[first]) end
    local every = R.every(R.to_gpu({0, 9, 0, 9, 3, 9, 0, 9}, "int32"), 2)      -- 0, 0, 3, 0
    assert_exact({3}, ga.trim_zeros(every), "trim_zeros of a strided view")
    assert.are.same({0}, ga.trim_zeros(ga.zeros({0})).shape)
    -- sort_complex: along the last axis, into NumPy's complex dtype
    local results = {int8 = "complex64", uint8 = "complex64", int16 = "complex64", uint16 = "complex64",
                     int32 = "complex128", uint32 = "complex128", int64 = "complex128", float16 = "complex128",
                     float32 = "complex128", float64 = "complex128", bool = "complex128",
                     complex64 = "complex64", complex128 = "complex128"}
    for dtype, result in pairs(results) do
      local generate = dtype == "bool" and coin
        or dtype:match("^complex") and function() return gpu.complex(math.random(-3, 3), math.random(-3, 3)) end
        or dtype:match("^float") and quarters(0, 40, 0.05)
        or integers(0, 100)
      for _, n in ipairs{7, 600} do
        local a, av = R.generate(3 * n, dtype, generate)
        local got = ga.sort_complex(R.reshaped(a, {3, n}))
        assert.are.same({3, n}, got.shape)
        assert.are.equal(result, got.dtype)
        local want = {}
        for r = 1, 3 do        -- real rows sort as reals (NaN last), then become complex
          local row = table.move(av, (r - 1) * n + 1, r * n, 1, {})
          for _, v in ipairs(sorted(row)) do
            if type(v) == "boolean" then v = v and 1 or 0 end
            want[#want + 1] = type(v) == "table" and v or gpu.complex(v, 0)
          end
        end
        assert_exact(want, got, ("sort_complex of %s rows of %d"):format(dtype, n))
        a:free()
      end
    end
    -- errors
    local a = R.to_gpu({1, 2}, "int32")
    helpers.assert_error("bad argument #2 to 'resize' (negative dimension -1 in shape)", ga.resize, a, {2, -1})
    helpers.assert_error("bad argument #2 to 'resize' (shape must be a number or a table of whole numbers, got string)",
                         ga.resize, a, "2")
    helpers.assert_error("bad argument #1 to 'trim_zeros' (a 1-d array expected, got 2-d)", ga.trim_zeros, ga.zeros({2, 2}))
    helpers.assert_error("bad argument #2 to 'trim_zeros' (trim must be made of the letters 'f' and 'b' (either case), got 'x')",
                         ga.trim_zeros, a, "x")
    helpers.assert_error("bad argument #2 to 'trim_zeros' (trim must be made of the letters 'f' and 'b' (either case), got 'fbx')",
                         ga.trim_zeros, a, "fbx")
    helpers.assert_error("bad argument #2 to 'trim_zeros' (trim must be made of the letters 'f' and 'b' (either case), got number)",
                         ga.trim_zeros, a, 1)
    helpers.assert_error("bad argument #1 to 'sort_complex' (a 0-d array has no axis to sort along)",
                         ga.sort_complex, ga.zeros({}))
    a:free()
    helpers.assert_error("bad argument #1 to 'resize' (array has been freed)", ga.resize, a, 3)
    helpers.assert_error("bad argument #1 to 'trim_zeros' (array has been freed)", ga.trim_zeros, a)
    helpers.assert_error("bad argument #1 to 'sort_complex' (array has been freed)", ga.sort_complex, a)
  end)
end)
