-- gpu.polynomial: identity, tri, diagflat, vander, logspace, geomspace, full_like,
-- broadcast_arrays, rollaxis, ediff1d, gradient and NumPy's poly* functions (polyval, polyadd,
-- polysub, polymul, polyder, polyint, polyfit, roots), against references computed in Lua on
-- the same random values, each step as NumPy takes it.
--
-- Results the device computes with the very roundings of the reference must match exactly:
-- integers (wrapping), tri, vander of reals, polyval of reals (unfused Horner steps; 16-bit
-- floats rounded after each operation as NumPy's), polyadd, polysub, polyder, polyint.  The
-- rest are held to bounds from the magnitudes involved: a sum of n terms in precision eps is
-- off by at most (n + 1) eps times the sum of their magnitudes, in any order and fused or not
-- (complex products, gradient's three-term sums, convolutions); pow on the device (CUDA: 2
-- ulp) and in C (glibc: under 1) differ by a few ulp.  polyfit and roots are held to first-
-- order perturbation bounds from the conditioning of the case (see there).
local helpers = require "helpers"
local R = require "reduction_helpers"
local A = require "array_reference"
local N = require "numeric_reference"
local gpu = helpers.gpu
local ga = gpu.gpuarray
local complex = gpu.complex
local EPS64, EPS32, EPS16 = 2.0 ^ -52, 2.0 ^ -23, 2.0 ^ -10
local f32, to_half = A.f32, N.to_half

-- Values are compared unless this is false (a run against the stand-in driver, whose kernels
-- compute nothing: it checks the Lua paths, shapes and dtypes only).
local VALUES = true
if not VALUES then      -- bincount reads its values back: here they would be made up
  ga.bincount = function(x, opts)
    return ga.zeros({opts.minlength}, opts.weights and "float64" or "int64")
  end
end

local V = require("value_helpers")(VALUES)
local assert_exact, assert_near = V.assert_exact, V.assert_near
local transposed = V.transposed

local function assert_shape(shape, a, what)
  assert.are.same(shape, a.shape, what .. ": shape")
end

local function integer_in(lo, hi) return function() return math.random(lo, hi) end end
local function float_in(scale) return function() return (math.random() * 2 - 1) * scale end end
local function sixteenths() return math.random(-64, 64) / 64 end
local function complex_unit() return complex(math.random() * 2 - 1, math.random() * 2 - 1) end

-- Complex arithmetic on gpu.complex values and Lua numbers, in doubles.
local function re(v) return type(v) == "table" and v.re or v end
local function im(v) return type(v) == "table" and v.im or 0.0 end
local function cadd(x, y) return complex(re(x) + re(y), im(x) + im(y)) end
local function cmul(x, y) return complex(re(x) * re(y) - im(x) * im(y), re(x) * im(y) + im(x) * re(y)) end
local function cabs(v) return math.sqrt(re(v) ^ 2 + im(v) ^ 2) end

local function promote_kind(dtype) return require("gpu.promote").kind(dtype) end

-- A value as NumPy's astype to dtype stores it (A.convert; complex values part by part).
local function convert(v, dtype, from)
  if promote_kind(dtype) == "c" then
    if type(v) == "table" then
      return dtype == "complex64" and complex(f32(v.re), f32(v.im)) or v
    end
    if type(v) == "boolean" then v = v and 1 or 0 end
    v = from == "uint64" and v < 0 and v + 2.0 ^ 64 or v + 0.0
    return complex(dtype == "complex64" and f32(v) or v, 0.0)
  end
  if dtype == "float16" then return to_half(A.convert(v, "float64", from)) end
  return A.convert(v, dtype, from)
end

local EPS_OF = {float64 = EPS64, float32 = EPS32, float16 = EPS16, complex128 = EPS64, complex64 = EPS32}

describe("polynomial module's constructors", function()
  helpers.gpu_it("identity and tri make NumPy's ones and zeros in each dtype", function()
    for _, dtype in ipairs{"float64", "float32", "float16", "int8", "uint64", "bool", "complex64"} do
      local one, zero = convert(1, dtype), convert(0, dtype)
      for _, n in ipairs{0, 1, 4} do
        local got = ga.identity(n, dtype)
        assert.are.equal(dtype, got.dtype)
        assert_shape({n, n}, got, "identity")
        local want = {}
        for i = 1, n do for j = 1, n do want[#want + 1] = i == j and one or zero end end
        assert_exact(want, got, dtype .. " identity " .. n)
      end
      for _, case in ipairs{{3, 5, 0}, {4, 2, -1}, {3, 3, 2}, {2, 4, -3}, {5, nil, 1}, {0, 3, 0}} do
        local n, m, k = case[1], case[2], case[3]
        local got = m and ga.tri(n, m, {k = k, dtype = dtype}) or ga.tri(n, {k = k, dtype = dtype})
        m = m or n
        assert_shape({n, m}, got, "tri")
        local want = {}
        for i = 1, n do for j = 1, m do want[#want + 1] = j - i <= k and one or zero end end
        assert_exact(want, got, ("%s tri(%d, %d, k = %d)"):format(dtype, n, m, k))
      end
    end
    assert.are.equal("float64", ga.identity(2).dtype)
    assert.are.equal("int32", ga.identity(2, {dtype = "int32"}).dtype)
    assert_exact({1.0, 0.0, 1.0, 1.0, 1.0, 1.0}, ga.tri(3, 2), "tri(3, 2) float64")   -- NumPy's
  end)

  helpers.gpu_it("diagflat puts a flattened array (a view too) on a diagonal", function()
    local base, values = R.generate(6, "int16", integer_in(-300, 300))
    local view = R.transposed(R.reshaped(base, {2, 3}))       -- (3, 2): its row-major order
    local flat = transposed(values, 2, 3)
    for _, k in ipairs{0, 2, -1} do
      local got = ga.diagflat(view, {k = k})
      local n = 6 + math.abs(k)
      assert_shape({n, n}, got, "diagflat")
      assert.are.equal("int16", got.dtype)
      local want = {}
      for i = 1, n do
        for j = 1, n do
          local place = k >= 0 and i or j                    -- the element's place on the diagonal
          want[#want + 1] = (j - i == k) and flat[place] or 0
        end
      end
      assert_exact(want, got, "diagflat k = " .. k)
    end
    local got = ga.diagflat(ga.to_gpu({2.5}))
    assert_exact({2.5}, got, "diagflat of one element")
  end)

  helpers.gpu_it("vander multiplies out NumPy's powers in promote_types(x, int64)", function()
    local cases = {
      {"float64", float_in(2), "float64"}, {"float32", float_in(2), "float64"},
      {"int32", integer_in(-2000, 2000), "int64"}, {"uint8", integer_in(0, 255), "int64"},
      {"bool", function() return math.random() < 0.5 end, "int64"},
      {"float16", sixteenths, "float64"}, {"complex128", complex_unit, "complex128"},
    }
    for _, case in ipairs(cases) do
      local dtype, generate, result = case[1], case[2], case[3]
      local base, values = R.generate(14, dtype, generate)
      local x = R.every(base, 2)                             -- a strided view: 7 elements
      local xs = {}
      for i = 1, 7 do xs[i] = convert(values[2 * i - 1], result, dtype) end
      for _, shape in ipairs{{nil, false}, {4, true}, {9, false}, {0, false}} do
        local n, increasing = shape[1], shape[2]
        local got = n and ga.vander(x, n, {increasing = increasing}) or ga.vander(x)
        n = n or 7
        assert.are.equal(result, got.dtype)
        assert_shape({7, n}, got, "vander")
        local want, bounds = {}, {}
        for i = 1, 7 do
          for j = 1, n do
            local e = increasing and j - 1 or n - j
            local v, magnitude = convert(1, result), 1.0
            for _ = 1, e do
              if result == "complex128" then v = cmul(v, xs[i]) else v = v * xs[i] end
              magnitude = magnitude * cabs(xs[i])
            end
            if result == "int64" and math.type(v) == "float" then v = math.tointeger(v) end
            want[#want + 1] = v
            bounds[#bounds + 1] = 4 * (e + 1) * EPS64 * magnitude
          end
        end
        if result == "complex128" then
          assert_near(want, bounds, got, ("%s vander N = %d"):format(dtype, n))
        else
          assert_exact(want, got, ("%s vander N = %d"):format(dtype, n))
        end
      end
    end
    assert_shape({0, 3}, ga.vander(ga.zeros({0}), 3), "vander of an empty x")
  end)

  helpers.gpu_it("logspace and geomspace give NumPy's values within a few ulp, ends exact", function()
    local function linspace(start, stop, num, endpoint)
      local divisions = endpoint and num - 1 or num
      local step = divisions > 0 and (stop - start) / divisions or 0.0
      local y = {}
      for i = 0, num - 1 do y[i + 1] = (endpoint and num > 1 and i == num - 1) and stop or i * step + start end
      return y
    end
    for _, case in ipairs{{0, 3, 7, true, 10.0}, {-2.5, 1.75, 12, false, 10.0}, {1, -4, 9, true, 2.0},
                          {0.5, 0.5, 3, true, 3.0}, {-1, 2, 1, true, 10.0}} do
      local start, stop, num, endpoint, base = table.unpack(case)
      local want = {}
      for i, y in ipairs(linspace(start, stop, num, endpoint)) do want[i] = base ^ y end
      local got = ga.logspace(start, stop, num, {endpoint = endpoint, base = base})
      assert.are.equal("float64", got.dtype)
      local bounds = {}
      for i, w in ipairs(want) do bounds[i] = 8 * EPS64 * math.abs(w) end
      assert_near(want, bounds, got, ("logspace(%g, %g, %d)"):format(start, stop, num))
      local single = ga.logspace(start, stop, num, {endpoint = endpoint, base = base, dtype = "float32"})
      for i, w in ipairs(want) do bounds[i] = EPS32 * math.abs(w) end
      assert_near(want, bounds, single, "float32 logspace")
    end
    -- whole powers of 2 are exact in pow everywhere: integer dtypes truncate them exactly
    local want = {}
    for e = 0, 10 do want[e + 1] = 1 << e end
    assert_exact(want, ga.logspace(0, 10, 11, {base = 2, dtype = "int64"}), "int64 logspace base 2")
    assert.are.equal(50, ga.logspace(0, 1).size)
    assert.are.equal(0, ga.logspace(0, 1, 0).size)

    for _, case in ipairs{{1, 1000, 4, true}, {-3, -7.5, 9, true}, {2, 0.125, 6, false},
                          {0.3, 17, 11, true}, {5, 5, 3, true}, {-1, 2, 4, true}} do
      local start, stop, num, endpoint = table.unpack(case)
      local sign = start < 0 and -1.0 or 1.0
      local first, final = start / sign, stop / sign
      local logs = linspace(math.log(first, 10), math.log(final, 10), num, endpoint)
      local values, bounds = {}, {}
      for i, y in ipairs(logs) do
        local v = 10.0 ^ y
        if i == 1 then v = first elseif i == num and endpoint and num > 1 then v = final end
        values[i] = sign * v
        bounds[i] = (i == 1 or (i == num and endpoint)) and 0 or 8 * EPS64 * math.abs(values[i])
      end
      local got = ga.geomspace(start, stop, num, {endpoint = endpoint})
      assert.are.equal("float64", got.dtype)
      assert_near(values, bounds, got, ("geomspace(%g, %g, %d)"):format(start, stop, num))
      if VALUES and endpoint and num > 1 and values[num] == values[num] then
        local h = got:get()
        assert.are.equal(start + 0.0, h[1])
        assert.are.equal(stop + 0.0, h[num])
      end
      local truncated = ga.geomspace(start, stop, num, {endpoint = endpoint, dtype = "int32"})
      local want_int, slack = {}, {}
      for i, v in ipairs(values) do
        want_int[i] = v == v and (v < 0 and math.ceil(v) or math.floor(v)) + 0.0 or 0.0
        slack[i] = bounds[i] > 0 and 1 or 0        -- a value a few ulp off a whole number truncates either way
      end
      if VALUES then
        local h = R.get(truncated)
        for i = 1, num do
          if values[i] == values[i] then            -- NaN's conversion is not NumPy's business here
            assert(math.abs(h[i] - want_int[i]) <= slack[i], ("int32 geomspace at %d: %s, expected %s")
                                                            :format(i, h[i], want_int[i]))
          end
        end
      end
    end
  end)

  helpers.gpu_it("full_like fills an array of a's shape, in a's dtype or another", function()
    local base = ga.zeros({3, 4}, "int16")
    local view = R.transposed(base)
    local got = ga.full_like(view, -7)
    assert.are.equal("int16", got.dtype)
    assert_shape({4, 3}, got, "full_like")
    local want = {}
    for i = 1, 12 do want[i] = -7 end
    assert_exact(want, got, "full_like int16")
    local half = gpu.full_like(base, 0.1, "float32")
    for i = 1, 12 do want[i] = f32(0.1) end
    assert.are.equal("float32", half.dtype)
    assert_exact(want, half, "full_like float32")
    assert.are.equal("bool", ga.full_like(base, true, {dtype = "bool"}).dtype)
    local z = ga.full_like(ga.zeros({2}, "complex128"), complex(1, -2))
    assert_exact({complex(1, -2), complex(1, -2)}, z, "full_like complex128")
  end)

  helpers.gpu_it("broadcast_arrays gives views of a common shape that read as broadcast_to's", function()
    local a, av = R.generate(3, "float32", float_in(1))
    local b, bv = R.generate(4, "int32", integer_in(-9, 9))
    local c = ga.to_gpu({5.5})
    local x, y, z = ga.broadcast_arrays(R.reshaped(a, {3, 1}), b, R.reshaped(c, {}))
    for _, v in ipairs{x, y, z} do assert_shape({3, 4}, v, "broadcast_arrays") end
    local wx, wy, wz = {}, {}, {}
    for i = 1, 3 do
      for j = 1, 4 do wx[#wx + 1], wy[#wy + 1], wz[#wz + 1] = av[i], bv[j], 5.5 end
    end
    assert_exact(wx, x:copy(), "first")
    assert_exact(wy, y:copy(), "second")
    assert_exact(wz, z:copy(), "third")
    assert.are.same({0, 4}, y.strides)
    a[1] = 2.0                                   -- views: they see a's memory
    if VALUES then assert.are.equal(2.0, x:copy():get()[2]) end
    assert.are.equal(0, select("#", ga.broadcast_arrays()))
    local only = ga.broadcast_arrays(b)
    assert_shape({4}, only, "one array")
  end)

  helpers.gpu_it("rollaxis moves an axis before a 1-based start, as NumPy's examples", function()
    local base, values = R.generate(360, "int32", integer_in(-1000, 1000))
    local a = R.reshaped(base, {3, 4, 5, 6})
    -- NumPy's: rollaxis(a, 3, 1) (3, 6, 4, 5); rollaxis(a, 2) (5, 3, 4, 6); rollaxis(a, 1, 4) (3, 5, 6, 4)
    local cases = {{4, 2, {3, 6, 4, 5}, {1, 4, 2, 3}}, {3, nil, {5, 3, 4, 6}, {3, 1, 2, 4}},
                   {2, 5, {3, 5, 6, 4}, {1, 3, 4, 2}}, {-1, -1, {3, 4, 5, 6}, {1, 2, 3, 4}},
                   {1, -1, {4, 5, 3, 6}, {2, 3, 1, 4}}, {2, 2, {3, 4, 5, 6}, {1, 2, 3, 4}},
                   {2, 3, {3, 4, 5, 6}, {1, 2, 3, 4}}, {1, 3, {4, 3, 5, 6}, {2, 1, 3, 4}}}
    for _, case in ipairs(cases) do
      local axis, start, want_shape, order = case[1], case[2], case[3], case[4]
      local got = start and ga.rollaxis(a, axis, start) or ga.rollaxis(a, axis)
      assert.are.same(want_shape, got.shape, ("rollaxis(a, %d, %s)"):format(axis, tostring(start)))
      -- element (i1..i4) of the result is a's element whose index d is i at the place of d in order
      local want = {}
      local index = {1, 1, 1, 1}
      for n = 1, 360 do
        local source = {}
        for k = 1, 4 do source[order[k]] = index[k] end
        local flat = ((source[1] - 1) * 4 + source[2] - 1) * 5 + source[3] - 1
        want[n] = values[flat * 6 + source[4]]
        for k = 4, 1, -1 do
          index[k] = index[k] + 1
          if index[k] <= want_shape[k] then break end
          index[k] = 1
        end
      end
      assert_exact(want, got:copy(), ("rollaxis(a, %d, %s) values"):format(axis, tostring(start)))
    end
    local v = ga.rollaxis(ga.zeros({2}), 1, 2)
    assert_shape({2}, v, "1-d rollaxis")
  end)
end)

describe("ediff1d and gradient", function()
  helpers.gpu_it("ediff1d takes the flat differences with NumPy's ends, in ary's dtype", function()
    local cases = {{"int8", integer_in(-128, 127)}, {"uint8", integer_in(0, 255)},
                   {"float32", float_in(100)}, {"float64", float_in(1e6)}, {"complex64", complex_unit}}
    for _, case in ipairs(cases) do
      local dtype, generate = case[1], case[2]
      local base, values = R.generate(12, dtype, generate)
      local view = R.transposed(R.reshaped(base, {3, 4}))
      local flat = transposed(values, 3, 4)
      local differences = {}
      for i = 1, 11 do
        local x, y = flat[i + 1], flat[i]
        if dtype == "complex64" then differences[i] = complex(f32(x.re - y.re), f32(x.im - y.im))
        else differences[i] = A.apply("sub", {dtype, dtype}, {x, y}) end
      end
      assert_exact(differences, ga.ediff1d(view), dtype .. " ediff1d")
      local unsigned = dtype == "uint8"
      local begin_array, begin_values = R.generate(3, dtype, generate)
      local want = {}
      for _, v in ipairs(begin_values) do want[#want + 1] = v end
      for _, v in ipairs(differences) do want[#want + 1] = v end
      local ends = unsigned and {true, false} or {-1, 2}      -- bool and int64 cast by same_kind
      for _, v in ipairs(ends) do want[#want + 1] = convert(v, dtype, math.type(v) and "int64" or "bool") end
      local s = gpu.Stream()
      local got = ga.ediff1d(view, {to_begin = begin_array, to_end = ends, stream = s})
      s:synchronize()
      assert_exact(want, got, dtype .. " ediff1d with ends")
      local scalar_end = unsigned and true or 3
      want = {table.unpack(differences)}
      want[#want + 1] = convert(scalar_end, dtype, unsigned and "bool" or "int64")
      assert_exact(want, ga.ediff1d(view, {to_end = scalar_end}), dtype .. " ediff1d to_end scalar")
    end
    assert_exact({}, ga.ediff1d(ga.zeros({1}, "int32")), "one element")
    assert_exact({}, ga.ediff1d(ga.zeros({0}, "int32")), "no element")
    assert_exact({2.5, 9.0}, ga.ediff1d(ga.zeros({0}), {to_begin = 2.5, to_end = {9}}), "ends only")
    assert_exact({-1, 5}, ga.ediff1d(ga.to_gpu({3, 8}, "int64"), {to_begin = {-1}}), "int64 to_begin")
  end)

  -- NumPy's gradient of the list f (n values) along one axis with the spacing h: a number, or
  -- the list of coordinates (in their dtype xd): the values (complex allowed) and their bounds.
  local function gradient_reference(f, h, edge_order, eps)
    local n = #f
    local out, bounds = {}, {}
    local function combine(i, terms)     -- terms: {coefficient, value} pairs
      local v, magnitude = 0.0, 0.0
      for _, t in ipairs(terms) do
        v = cadd(v, cmul(t[1], t[2]))
        magnitude = magnitude + math.abs(t[1]) * cabs(t[2])
      end
      out[i], bounds[i] = type(f[1]) == "table" and v or re(v), 16 * eps * magnitude
    end
    local d = {}
    if type(h) == "table" then for i = 1, n - 1 do d[i] = h[i + 1] - h[i] end end
    for i = 2, n - 1 do
      if type(h) == "number" then
        combine(i, {{-1 / (2.0 * h), f[i - 1]}, {1 / (2.0 * h), f[i + 1]}})
      else
        local h1, h2 = d[i - 1], d[i]
        combine(i, {{-h2 / (h1 * (h1 + h2)), f[i - 1]}, {(h2 - h1) / (h1 * h2), f[i]},
                    {h1 / (h2 * (h1 + h2)), f[i + 1]}})
      end
    end
    if edge_order == 1 then
      local h0 = type(h) == "number" and h or d[1]
      local hn = type(h) == "number" and h or d[n - 1]
      combine(1, {{-1 / h0, f[1]}, {1 / h0, f[2]}})
      combine(n, {{-1 / hn, f[n - 1]}, {1 / hn, f[n]}})
    elseif type(h) == "number" then
      combine(1, {{-1.5 / h, f[1]}, {2.0 / h, f[2]}, {-0.5 / h, f[3]}})
      combine(n, {{0.5 / h, f[n - 2]}, {-2.0 / h, f[n - 1]}, {1.5 / h, f[n]}})
    else
      local h1, h2 = d[1], d[2]
      combine(1, {{-(2.0 * h1 + h2) / (h1 * (h1 + h2)), f[1]}, {(h1 + h2) / (h1 * h2), f[2]},
                  {-h1 / (h2 * (h1 + h2)), f[3]}})
      h1, h2 = d[n - 2], d[n - 1]
      combine(n, {{h2 / (h1 * (h1 + h2)), f[n - 2]}, {-(h2 + h1) / (h1 * h2), f[n - 1]},
                  {(2.0 * h2 + h1) / (h2 * (h1 + h2)), f[n]}})
    end
    return out, bounds
  end

  -- Sorted distinct random coordinates (n of them), as stored in dtype, and their array.
  local function coordinates(n, dtype)
    local list = {}
    local x = 0
    for i = 1, n do
      x = x + (dtype:match("int") and math.random(1, 4) or 0.1 + math.random() * 2)
      list[i] = x - 3
    end
    local a, values = R.generate(n, dtype, function(i) return list[i] end)
    return a, values
  end

  helpers.gpu_it("gradient follows NumPy's differences along each axis, even and uneven spacing", function()
    local cases = {{"float64", float_in(10), "float64"}, {"float32", float_in(10), "float32"},
                   {"int32", integer_in(-1000, 1000), "float64"}, {"complex128", complex_unit, "complex128"},
                   {"float16", sixteenths, "float16"}}
    local rows, cols = 5, 7
    for _, case in ipairs(cases) do
      local dtype, generate, result = case[1], case[2], case[3]
      local base, values = R.generate(rows * cols, dtype, generate)
      local f = R.transposed(R.reshaped(base, {cols, rows}))          -- (rows, cols), a view
      local grid = {}                                                  -- grid[i][j] = f(i, j)
      for i = 1, rows do
        grid[i] = {}
        for j = 1, cols do grid[i][j] = convert(values[(j - 1) * rows + i], result, dtype) end
      end
      local function line(axis, k)
        local t = {}
        if axis == 1 then for i = 1, rows do t[i] = grid[i][k] end
        else for j = 1, cols do t[j] = grid[k][j] end end
        return t
      end
      -- the reference of one axis laid out row-major
      local function expected(axis, h, edge_order, eps)
        local want, bounds = {}, {}
        local others = axis == 1 and cols or rows
        for k = 1, others do
          local out, b = gradient_reference(line(axis, k), h, edge_order, eps)
          for p, v in ipairs(out) do
            local i, j = axis == 1 and p or k, axis == 1 and k or p
            want[(i - 1) * cols + j], bounds[(i - 1) * cols + j] = v, b[p]
          end
        end
        return want, bounds
      end
      local eps = EPS_OF[result]
      for _, edge_order in ipairs{1, 2} do
        local g1, g2 = ga.gradient(f, {edge_order = edge_order})
        assert.are.equal(result, g1.dtype)
        assert_shape({rows, cols}, g1, "gradient")
        local want, bounds = expected(1, 1.0, edge_order, eps)
        assert_near(want, bounds, g1, ("%s gradient axis 1, edge_order %d"):format(dtype, edge_order))
        want, bounds = expected(2, 1.0, edge_order, eps)
        assert_near(want, bounds, g2, ("%s gradient axis 2, edge_order %d"):format(dtype, edge_order))
        local only = ga.gradient(f, 0.25, {axis = -1, edge_order = edge_order})
        want, bounds = expected(2, 0.25, edge_order, eps)
        assert_near(want, bounds, only, ("%s gradient spacing 0.25 along axis -1"):format(dtype))
        for _, xdtype in ipairs{"float64", "float32", "int64"} do
          local x1, x1v = coordinates(rows, xdtype)
          local x2, x2v = coordinates(cols, xdtype)
          local s = gpu.Stream()
          local h2, h1 = ga.gradient(f, x2, x1, {axis = {2, 1}, edge_order = edge_order, stream = s})
          s:synchronize()
          local coarse = (xdtype == "float32" or eps > EPS32) and math.max(eps, EPS32) or eps
          want, bounds = expected(1, x1v, edge_order, coarse)
          assert_near(want, bounds, h1, ("%s gradient, %s coordinates, axis 1, edge_order %d")
                                        :format(dtype, xdtype, edge_order))
          want, bounds = expected(2, x2v, edge_order, coarse)
          assert_near(want, bounds, h2, ("%s gradient, %s coordinates, axis 2, edge_order %d")
                                        :format(dtype, xdtype, edge_order))
          local mixed = select(2, ga.gradient(f, 2, x2, {edge_order = edge_order}))
          assert_near(want, bounds, mixed, dtype .. " gradient, a number and coordinates")
        end
      end
    end
    -- 1-d, two points: the first differences at both ends
    local g = ga.gradient(ga.to_gpu({1.0, 4.0}))
    assert_exact({3.0, 3.0}, g, "two points")
    assert_exact({1.0, 1.25, 1.5}, ga.gradient(ga.to_gpu({0, 1, 3, 6}, "int8"):narrow(1, 2, 3), 2),
                 "int8 view, spacing 2")
  end)
end)

describe("NumPy's poly* functions", function()
  -- NumPy's polyval of the lists p and x (as stored) in dtype, step by step; bounds for complex.
  local function horner(p, x, dtype, p_dtype, x_dtype)
    local y
    local kind = promote_kind(dtype)
    local xv = convert(x, dtype, x_dtype)
    local magnitude = 0.0
    if kind == "b" then y = false elseif kind == "c" then y = complex(0, 0) else y = convert(0, dtype) end
    for _, c in ipairs(p) do
      local cv = convert(c, dtype, p_dtype)
      if kind == "b" then y = (y and xv) or cv
      elseif kind == "c" then y = cadd(cmul(y, xv), cv)
      elseif kind == "i" or kind == "u" then y = A.wrap(dtype, y * xv + cv)
      elseif dtype == "float32" then y = f32(f32(y * xv) + cv)
      elseif dtype == "float16" then y = to_half(f32(to_half(f32(y * xv)) + cv))
      else y = y * xv + cv end
      if kind == "c" then magnitude = magnitude * cabs(xv) + cabs(cv) end
    end
    return y, 4 * #p * (EPS_OF[dtype] or 0) * magnitude
  end

  helpers.gpu_it("polyval evaluates by Horner's rule in promote_types(p, x), as NumPy's steps round", function()
    local cases = {
      {"float64", float_in(2), "float64", float_in(1.5)}, {"float32", float_in(2), "float32", float_in(1.5)},
      {"float16", sixteenths, "float16", sixteenths},
      {"int32", integer_in(-1e6, 1e6), "int32", integer_in(-3000, 3000)},
      {"int8", integer_in(-128, 127), "uint8", integer_in(0, 255)},
      {"int64", integer_in(-2 ^ 40, 2 ^ 40), "int16", integer_in(-30000, 30000)},
      {"bool", function() return math.random() < 0.5 end, "bool", function() return math.random() < 0.5 end},
      {"complex128", complex_unit, "float64", float_in(1.2)},
      {"float32", float_in(1), "int16", integer_in(-5, 5)},
      {"complex64", complex_unit, "complex64", complex_unit},
    }
    for _, case in ipairs(cases) do
      local p_dtype, p_generate, x_dtype, x_generate = table.unpack(case)
      local dtype = require("gpu.promote").promote_types(p_dtype, x_dtype)
      for _, degree in ipairs{0, 1, 5, 12} do
        local p, pv = R.generate(degree + 1, p_dtype, p_generate)
        local base, xv = R.generate(6 * 7, x_dtype, x_generate)
        local x = R.transposed(R.reshaped(base, {6, 7}))
        local xs = transposed(xv, 6, 7)
        local want, bounds = {}, {}
        for i, v in ipairs(xs) do want[i], bounds[i] = horner(pv, v, dtype, p_dtype, x_dtype) end
        local got = ga.polyval(p, x)
        assert.are.equal(dtype, got.dtype)
        assert_shape({7, 6}, got, "polyval")
        local what = ("polyval %s p of degree %d at %s x"):format(p_dtype, degree, x_dtype)
        if promote_kind(dtype) == "c" then assert_near(want, bounds, got, what)
        else assert_exact(want, got, what) end
      end
    end
    local p = ga.to_gpu({2.0, -3.0, 0.5})
    local s = gpu.Stream()
    local got = ga.polyval(p, ga.full({}, 1.5), {stream = s})
    s:synchronize()
    assert_shape({}, got, "0-d x")
    assert_exact({2.0 * 1.5 * 1.5 - 3.0 * 1.5 + 0.5}, got, "0-d x")
    assert_exact({}, ga.polyval(p, ga.zeros({0}, "float32")), "empty x")
    local none = ga.polyval(ga.zeros({0}, "float64"), ga.to_gpu({1, 2}, "int16"))
    assert.are.equal("int16", none.dtype)                 -- NumPy's zeros_like(x)
    assert_exact({0, 0}, none, "empty p")
  end)

  helpers.gpu_it("polyadd and polysub pad the shorter with zeros, in the promoted dtype", function()
    local cases = {{"float32", 5, float_in(4), "float64", 3, float_in(4)},
                   {"int8", 2, integer_in(-128, 127), "int64", 4, integer_in(-2 ^ 40, 2 ^ 40)},
                   {"int64", 4, integer_in(-100, 100), "int8", 2, integer_in(-128, 127)},
                   {"uint8", 3, integer_in(0, 255), "int16", 6, integer_in(-30000, 30000)},
                   {"float16", 4, sixteenths, "float16", 4, sixteenths},
                   {"complex64", 3, complex_unit, "float32", 5, float_in(1)},
                   {"bool", 2, function() return math.random() < 0.5 end,
                    "bool", 3, function() return true end}}
    for _, case in ipairs(cases) do
      local d1, n1, g1, d2, n2, g2 = table.unpack(case)
      local dtype = require("gpu.promote").promote_types(d1, d2)
      local base1, v1 = R.generate(2 * n1, d1, g1)
      local a1 = R.every(base1, 2)                              -- strided views
      local a2, v2 = R.generate(n2, d2, g2)
      local n = math.max(n1, n2)
      for _, op in ipairs{"add", "sub"} do
        if not (op == "sub" and dtype == "bool") then
          local want = {}
          local zero = convert(0, dtype)
          for i = 1, n do
            local k1, k2 = i - (n - n1), i - (n - n2)
            local x = k1 >= 1 and convert(v1[2 * k1 - 1], dtype, d1) or zero
            local y = k2 >= 1 and convert(v2[k2], dtype, d2) or zero
            if promote_kind(dtype) == "c" then
              local sign = op == "add" and 1 or -1
              local c = complex(re(x) + sign * re(y), im(x) + sign * im(y))
              want[i] = complex(f32(c.re), f32(c.im))
            elseif dtype == "float16" then
              want[i] = to_half(f32(op == "add" and x + y or x - y))
            else
              want[i] = A.apply(op, {dtype, dtype}, {x, y})
            end
          end
          local got = (op == "add" and ga.polyadd or ga.polysub)(a1, a2)
          assert.are.equal(dtype, got.dtype)
          assert_exact(want, got, ("poly%s %s(%d) and %s(%d)"):format(op, d1, n1, d2, n2))
        end
      end
    end
    local s = gpu.Stream()
    local got = ga.polysub(ga.full({}, 3.0), ga.to_gpu({1.0, 2.0}), {stream = s})
    s:synchronize()
    assert_exact({-1.0, 1.0}, got, "0-d polysub")
  end)

  helpers.gpu_it("polymul convolves the coefficients", function()
    for _, case in ipairs{{"int32", integer_in(-1000, 1000), "int16", integer_in(-300, 300)},
                          {"float64", float_in(3), "float32", float_in(3)},
                          {"int8", integer_in(-128, 127), "int8", integer_in(-128, 127)}} do
      local d1, g1, d2, g2 = table.unpack(case)
      local dtype = require("gpu.promote").promote_types(d1, d2)
      local a1, v1 = R.generate(7, d1, g1)
      local a2, v2 = R.generate(4, d2, g2)
      local want, bounds = {}, {}
      for i = 1, 10 do
        local sum, magnitude = 0, 0.0
        for j = 1, 7 do
          local k = i - j + 1
          if k >= 1 and k <= 4 then
            local term = convert(v1[j], dtype, d1) * convert(v2[k], dtype, d2)
            sum, magnitude = sum + term, magnitude + math.abs(term)
          end
        end
        if math.type(sum) == "integer" then sum = A.wrap(dtype, sum) end
        want[i], bounds[i] = sum, 8 * EPS64 * magnitude
      end
      local got = ga.polymul(a1, a2)
      assert.are.equal(dtype, got.dtype)
      if dtype == "float64" then assert_near(want, bounds, got, "float64 polymul")
      else assert_exact(want, got, dtype .. " polymul") end
    end
    assert_exact({6.0}, ga.polymul(ga.full({}, 2.0), ga.to_gpu({3.0})), "0-d polymul")
  end)

  helpers.gpu_it("polyder multiplies by the falling factorials, in promote_types(p, int64)", function()
    local cases = {{"int32", integer_in(-1e6, 1e6), "int64"}, {"float32", float_in(10), "float64"},
                   {"float64", float_in(1e3), "float64"}, {"complex64", complex_unit, "complex128"},
                   {"bool", function() return math.random() < 0.5 end, "int64"},
                   {"uint64", integer_in(0, 2 ^ 40), "float64"}}
    for _, case in ipairs(cases) do
      local dtype, generate, result = table.unpack(case)
      local base, values = R.generate(18, dtype, generate)
      local p = R.every(base, 2)                          -- 9 coefficients, strided
      local n = 8
      for _, m in ipairs{0, 1, 2, 5, 8, 9, 12} do
        local got = m == 1 and ga.polyder(p) or ga.polyder(p, m)
        local want = {}
        if m == 0 then
          for i = 1, 9 do want[i] = values[2 * i - 1] end
          assert.are.equal(dtype, got.dtype)
        else
          assert.are.equal(result, got.dtype)
          for i = 0, n - m do
            local v = convert(values[2 * i + 1], result, dtype)
            for j = 0, m - 1 do
              local factor = n - i - j
              if type(v) == "table" then v = complex(v.re * factor, v.im * factor)
              elseif result == "int64" then v = v * factor
              else v = v * (factor + 0.0) end
            end
            want[i + 1] = v
          end
        end
        assert_exact(want, got, ("%s polyder m = %d"):format(dtype, m))
      end
    end
  end)

  helpers.gpu_it("polyint divides step by step and appends the constants, as NumPy's", function()
    local cases = {{"float64", float_in(10), nil}, {"int32", integer_in(-1000, 1000), {2, -3.5, 7}},
                   {"complex128", complex_unit, {complex(1, 2)}}, {"float32", float_in(5), 0.75},
                   {"float64", float_in(1), {complex(0, 1), 2}}}
    for _, case in ipairs(cases) do
      local dtype, generate, k = table.unpack(case)
      local base, values = R.generate(12, dtype, generate)
      local p = R.every(base, 2)                          -- 6 coefficients, strided
      local constants = k == nil and {0.0} or (type(k) == "table" and not k.re) and k or {k}
      local complex_result = promote_kind(dtype) == "c"
      for _, c in ipairs(constants) do complex_result = complex_result or type(c) == "table" end
      for _, m in ipairs{0, 1, 2, 3} do
        if #constants == 1 or #constants >= m then
          local got = ga.polyint(p, m, k)
          local want = {}
          if m == 0 then
            for i = 1, 6 do want[i] = values[2 * i - 1] end
            assert.are.equal(dtype, got.dtype)
          else
            assert.are.equal(complex_result and "complex128" or "float64", got.dtype)
            for i = 0, 6 + m - 1 do
              local v, entry
              if i < 6 then v, entry = values[2 * i + 1], 0
              else entry = i - 6 + 1; v = constants[#constants == 1 and 1 or entry] end
              v = convert(v, complex_result and "complex128" or "float64", dtype)
              for j = entry + 1, m do
                local d = (6 + j - 1 - i) + 0.0
                if type(v) == "table" then
                  local scale = 1.0 / d
                  v = complex(v.re * scale, v.im * scale)
                else
                  v = v / d
                end
              end
              want[i + 1] = v
            end
          end
          assert_exact(want, got, ("%s polyint m = %d"):format(dtype, m))
        end
      end
    end
    local s = gpu.Stream()
    local got = ga.polyint(ga.to_gpu({3.0, 2.0}), 2, {5, 7}, {stream = s})
    s:synchronize()
    assert_exact({0.5, 1.0, 5.0, 7.0}, got, "polyint with a stream")
    assert_exact({4.0}, ga.polyint(ga.zeros({0}), 1, 4), "polyint of an empty p")
    local p = ga.to_gpu({3, -2}, "int16")
    local copied = ga.polyint(p, 0, {})                         -- NumPy's: no constants needed
    assert.are.equal("int16", copied.dtype)
    assert_exact({3, -2}, copied, "polyint m = 0 with no constants")
    copied:fill(0)                                              -- a copy
    assert_exact({3, -2}, p, "polyint m = 0's p")
  end)
end)

describe("polyfit and roots", function()
  -- Householder QR least squares in Lua, in doubles: the solution of min |A c - b| (A a list of
  -- m rows of n), its residual's norm, and the condition number of A bounded from above by
  -- sqrt(|G|_F |G^-1|_F), G = A^T A (G^-1 from R: (R^T R)^-1).
  local function least_squares(A, b)
    local m, n = #A, #A[1]
    local Q = {}
    for i = 1, m do Q[i] = {table.unpack(A[i])} end
    local y = {table.unpack(b)}
    for k = 1, n do
      local norm = 0.0
      for i = k, m do norm = norm + Q[i][k] ^ 2 end
      norm = math.sqrt(norm)
      local alpha = Q[k][k] > 0 and -norm or norm
      local v = {}
      for i = k, m do v[i] = Q[i][k] end
      v[k] = v[k] - alpha
      local vv = 0.0
      for i = k, m do vv = vv + v[i] ^ 2 end
      if vv > 0 then
        for j = k, n do
          local s = 0.0
          for i = k, m do s = s + v[i] * Q[i][j] end
          for i = k, m do Q[i][j] = Q[i][j] - 2 * s / vv * v[i] end
        end
        local s = 0.0
        for i = k, m do s = s + v[i] * y[i] end
        for i = k, m do y[i] = y[i] - 2 * s / vv * v[i] end
      end
    end
    local c = {}
    for i = n, 1, -1 do
      local s = y[i]
      for j = i + 1, n do s = s - Q[i][j] * c[j] end
      c[i] = s / Q[i][i]
    end
    local residual = 0.0
    for i = n + 1, m do residual = residual + y[i] ^ 2 end
    -- R^-1 by back substitution, then G^-1 = R^-1 R^-T
    local Ri = {}
    for j = 1, n do
      Ri[j] = {}
      for i = n, 1, -1 do
        local s = i == j and 1.0 or 0.0
        for l = i + 1, n do s = s - Q[i][l] * (Ri[j][l] or 0.0) end
        Ri[j][i] = s / Q[i][i]
      end
    end
    local g, gi = 0.0, 0.0
    for i = 1, n do
      for j = 1, n do
        local s, t = 0.0, 0.0
        for r = 1, m do s = s + A[r][i] * A[r][j] end
        for l = 1, n do t = t + Ri[l][i] * Ri[l][j] end
        g, gi = g + s * s, gi + t * t
      end
    end
    return c, math.sqrt(residual), math.sqrt(math.sqrt(g) * math.sqrt(gi))
  end

  -- NumPy's polyfit of the stored values in Lua: the scaled Vandermonde least squares, and a
  -- bound for each coefficient from the perturbation theory of least squares: a backward
  -- stable solver (the SVD) leaves the scaled solution cs within about eps (kappa |cs| +
  -- kappa^2 |r|) (unit columns: |Vs| ~ 1), a factor 10 (n + 1) for the constants, each
  -- coefficient being cs_i / scale_i.
  local function fit_reference(xs, ys, deg)
    local order = deg + 1
    local V, scale = {}, {}
    for j = 1, order do scale[j] = 0.0 end
    for i, x in ipairs(xs) do
      V[i] = {}
      for j = 1, order do
        local v = 1.0
        for _ = 1, order - j do v = v * x end
        V[i][j] = v
        scale[j] = scale[j] + v * v
      end
    end
    for j = 1, order do scale[j] = math.sqrt(scale[j]) end
    for i = 1, #xs do for j = 1, order do V[i][j] = V[i][j] / scale[j] end end
    local cs, residual, kappa = least_squares(V, ys)
    local size = 0.0
    for _, v in ipairs(cs) do size = size + v * v end
    size = math.sqrt(size)
    local want, bounds = {}, {}
    for j = 1, order do
      want[j] = cs[j] / scale[j]
      bounds[j] = 10 * (order + 1) * EPS64 * (kappa * size + kappa * kappa * residual) / scale[j]
    end
    return want, bounds, kappa
  end

  helpers.gpu_it("polyfit solves NumPy's scaled least squares within its conditioning", function()
    for _, case in ipairs{{"float64", "float64", 40, 0}, {"float64", "float64", 40, 3},
                          {"float64", "float64", 30, 6}, {"float32", "float32", 25, 4},
                          {"int32", "float64", 30, 3}, {"float64", "int16", 12, 2}} do
      local x_dtype, y_dtype, m, deg = table.unpack(case)
      local x, xv = R.generate(m, x_dtype, x_dtype == "int32" and integer_in(-6, 6) or float_in(1))
      local truth = {}
      for j = 1, deg + 1 do truth[j] = math.random() * 2 - 1 end
      for _, noise in ipairs{0.0, 0.05} do
        local y, yv = R.generate(m, y_dtype, function(i)
          local v = 0.0
          for _, c in ipairs(truth) do v = v * xv[i] + c end
          v = v + noise * (math.random() * 2 - 1)
          return y_dtype == "int16" and math.floor(v * 1000 + 0.5) or v
        end)
        local want, bounds, kappa = fit_reference(xv, yv, deg)
        assert(kappa < 1e4, "the case is well conditioned: kappa " .. kappa)
        local got = ga.polyfit(x, y, deg)
        assert.are.equal("float64", got.dtype)
        assert_shape({deg + 1}, got, "polyfit")
        assert_near(want, bounds, got, ("polyfit %s x, %s y, deg %d, noise %g")
                                       :format(x_dtype, y_dtype, deg, noise))
      end
    end
    -- a 2-d y: a fit a column, on a stream
    local x, xv = R.generate(20, "float64", float_in(1))
    local y, yv = R.generate(40, "float64", float_in(1))
    local s = gpu.Stream()
    local got = ga.polyfit(x, R.reshaped(y, {20, 2}), 2, {stream = s})
    s:synchronize()
    assert_shape({3, 2}, got, "2-d polyfit")
    for column = 1, 2 do
      local ys = {}
      for i = 1, 20 do ys[i] = yv[2 * (i - 1) + column] end
      local want, bounds = fit_reference(xv, ys, 2)
      assert_near(want, bounds, got:select(2, column):copy(), "2-d polyfit column " .. column)
    end
  end)

  -- The coefficients (highest power first) of lead * prod (z - r) for the list of roots, in
  -- doubles (complex values where a root is complex).
  local function from_roots(list, lead)
    local p = {lead}
    for _, r in ipairs(list) do
      local q = {}
      for i = 1, #p + 1 do
        local v = p[i] or 0.0
        if i > 1 then v = cadd(v, cmul(complex(-re(r), -im(r)), p[i - 1])) end
        q[i] = v
      end
      p = q
    end
    return p
  end

  -- The bound on the distance of the computed root from the root lambda (of the roots list) of
  -- the polynomial with coefficients p (n + 1, as stored in precision eps): the first-order
  -- perturbation of an eigenvalue of the companion matrix C (monic a = p / p[1]) under a
  -- backward error of 20 n eps |C|_F, kappa = |x| |y| / |y^T x| with C's right eigenvector x =
  -- (lambda^(n-1), ..., 1) and left y (y_1 = 1, y_(j+1) = lambda y_j + a_j), plus the roots'
  -- own sensitivity to the coefficients' storage, 4 n eps sum |a_k| |lambda|^(n-k) / |q'(lambda)|.
  local function root_bound(p, list, index, eps)
    local n = #p - 1
    local a = {}
    for k = 1, n do a[k] = cmul(p[k + 1], complex(1, 0)) end
    local lead = p[1]
    local d = re(lead) ^ 2 + im(lead) ^ 2
    for k = 1, n do a[k] = cmul(a[k], complex(re(lead) / d, -im(lead) / d)) end
    local lambda = list[index]
    local norm_c = n - 1
    for k = 1, n do norm_c = norm_c + cabs(a[k]) ^ 2 end
    norm_c = math.sqrt(norm_c)
    local x2, y2 = 0.0, 0.0
    local power, y = 1.0, complex(1, 0)
    for j = 1, n do
      x2 = x2 + cabs(lambda) ^ (2 * (j - 1))
      y2 = y2 + cabs(y) ^ 2
      y = cadd(cmul(lambda, y), a[j])
      power = power * cabs(lambda)
    end
    local derivative = complex(1, 0)
    for j, r in ipairs(list) do
      if j ~= index then derivative = cmul(derivative, complex(re(lambda) - re(r), im(lambda) - im(r))) end
    end
    local kappa = math.sqrt(x2) * math.sqrt(y2) / cabs(derivative)
    local sensitivity = 1.0 * cabs(lambda) ^ n
    for k = 1, n do sensitivity = sensitivity + cabs(a[k]) * cabs(lambda) ^ (n - k) end
    local _ = power
    return 20 * n * eps * norm_c * kappa + 4 * n * eps * sensitivity / cabs(derivative)
  end

  -- Matches each wanted root to its nearest unused computed one, within its bound.
  local function assert_roots(list, bounds, got, what)
    if not VALUES then return end
    local h = R.get(got)
    assert.are.equal(#list, h.size, what .. ": count")
    local used = {}
    for i, r in ipairs(list) do
      local best, distance
      for j = 1, h.size do
        if not used[j] then
          local dd = cabs(complex(re(h[j]) - re(r), im(h[j]) - im(r)))
          if distance == nil or dd < distance then best, distance = j, dd end
        end
      end
      used[best] = true
      if distance > bounds[i] then
        error(("%s: root %s: nearest %s at %.3g, bound %.3g")
              :format(what, show(r), show(h[best]), distance, bounds[i]), 2)
      end
    end
  end

  -- Distinct roots spread over [-2, 2] (each in its own slot, half a slot apart at least), and
  -- where pairs is set, complex conjugate pairs among them.
  local function spread_roots(count, pairs)
    local list = {}
    local slots = count
    local j = 1
    while #list < count do
      local center = -2 + 4 * (j - 0.5) / slots + (math.random() - 0.5) * 2 / slots
      if pairs and #list + 2 <= count and math.random() < 0.5 then
        local height = 0.3 + math.random()
        list[#list + 1] = complex(center, height)
        list[#list + 1] = complex(center, -height)
        j = j + 2
      else
        list[#list + 1] = center
        j = j + 1
      end
    end
    return list
  end

  helpers.gpu_it("roots are the companion matrix's eigenvalues, within their conditioning", function()
    local cases = {{"float64", 1}, {"float64", 2}, {"float64", 5}, {"float64", 8}, {"float32", 3},
                   {"float32", 4}, {"complex128", 5}, {"complex64", 3}, {"int64", 3}}
    for _, case in ipairs(cases) do
      local dtype, degree = table.unpack(case)
      local complex_p = promote_kind(dtype) == "c"
      for _, pairs in ipairs{false, true} do
        local list = spread_roots(degree, pairs and not complex_p)
        if complex_p then
          for i, r in ipairs(list) do list[i] = complex(re(r), im(r) + (math.random() - 0.5)) end
        end
        if dtype == "int64" then list = {-2, 1, 3} end
        local lead = dtype == "int64" and 2 or (math.random() < 0.5 and -1 or 1) * (0.5 + math.random() * 3)
        local p = from_roots(list, lead)
        local leading, trailing = math.random(0, 2), math.random(0, 2)
        local stored = {}
        for _ = 1, leading do stored[#stored + 1] = complex_p and complex(0, 0) or 0 end
        for _, v in ipairs(p) do
          local real = dtype == "int64" and math.tointeger(re(v)) or re(v)
          stored[#stored + 1] = complex_p and complex(re(v), im(v)) or real
        end
        for _ = 1, trailing do stored[#stored + 1] = complex_p and complex(0, 0) or 0 end
        local array = ga.to_gpu(gpu.host.from_table(stored, dtype))
        local eps = EPS_OF[dtype] or EPS64
        local p_stored = {}
        local h = array:get()
        for i = leading + 1, leading + #p do p_stored[#p_stored + 1] = h[i] end
        local bounds, wanted = {}, {}
        for i = 1, #list do
          bounds[i] = root_bound(p_stored, list, i, eps)
          wanted[i] = list[i]
        end
        for i = 1, trailing do wanted[#wanted + 1], bounds[#bounds + 1] = 0.0, 0.0 end
        local separation = math.huge
        for i = 1, #list do
          for j = i + 1, #list do
            local gap = complex(re(list[i]) - re(list[j]), im(list[i]) - im(list[j]))
            separation = math.min(separation, cabs(gap))
          end
          assert(bounds[i] < separation / 4, "the case's roots are told apart by their bounds")
        end
        local got = ga.roots(array)
        local single = dtype == "float32" or dtype == "complex64"
        assert.are.equal(single and "complex64" or "complex128", got.dtype)
        assert_roots(wanted, bounds, got, ("%s roots of degree %d (%d leading, %d trailing zeros)")
                                          :format(dtype, degree, leading, trailing))
      end
    end
    -- fewer than two nonzero coefficients left: float64 zeros, as NumPy's
    local none = ga.roots(ga.zeros({4}))
    assert.are.equal("float64", none.dtype)
    assert_shape({0}, none, "roots of zeros")
    local zeros = ga.roots(ga.to_gpu({0, 5, 0, 0}, "int32"))
    assert.are.equal("float64", zeros.dtype)
    assert_exact({0.0, 0.0}, zeros, "roots of 5 z^2")
    assert_shape({0}, ga.roots(ga.full({}, 3.0)), "roots of a constant")
    local s = gpu.Stream()
    local got = ga.roots(ga.to_gpu({1.0, -3.0, 2.0}), {stream = s})
    s:synchronize()
    assert_roots({1.0, 2.0}, {1e-12, 1e-12}, got, "roots on a stream")
  end)
end)

describe("histogram2d", function()
  -- NumPy's histogramdd bin of v among the edges (searchsorted right, the last edge inside).
  local function bin_of(v, edges)
    local n = #edges - 1
    if v == edges[n + 1] then return n end
    local count = 0
    for _, e in ipairs(edges) do
      if not (v < e) then count = count + 1 end
    end
    return count
  end
  local function linspace(first, last, num)
    local step = (last - first) / (num - 1)
    local t = {}
    for i = 0, num - 1 do t[i + 1] = i == num - 1 and last or i * step + first end
    return t
  end

  helpers.gpu_it("histogram2d counts NumPy's histogramdd bins, edges from linspace", function()
    local cases = {
      {"float64", function(i) return i % 13 == 0 and 0 / 0 or math.random(-10, 10) / 8 end,
       "int32", integer_in(-3, 4), {8, 5}, {{-1, 1}, {-2, 3}}, nil},
      {"float32", function() return math.random(-9, 9) / 8 end, "float64", float_in(2), 6,
       {{-1, 1.125}, {-1.5, 1.5}}, "float32"},
      {"float64", float_in(5), "float64", float_in(1), {3, 7}, nil, "float64"},
      {"int16", integer_in(-5, 5), "int64", integer_in(2, 2), nil, nil, nil},
    }
    for _, case in ipairs(cases) do
      local xd, xg, yd, yg, bins, range, wd = table.unpack(case)
      local n = 301
      local x, xv = R.generate(2 * n, xd, xg)
      local xs = R.every(x, 2)                                    -- a strided view
      local y, yv = R.generate(n, yd, yg)
      local w, wv
      if wd then w, wv = R.generate(n, wd, float_in(3)) end
      local nx, ny = 10, 10
      if type(bins) == "table" then nx, ny = bins[1], bins[2] elseif bins then nx, ny = bins, bins end
      local function outer(values, r)
        if r then return r[1] + 0.0, r[2] + 0.0 end
        local lo, hi = math.huge, -math.huge
        for _, v in ipairs(values) do lo, hi = math.min(lo, v), math.max(hi, v) end
        if lo == hi then return lo - 0.5, hi + 0.5 end
        return lo + 0.0, hi + 0.0
      end
      local px = {}
      for i = 1, n do px[i] = xv[2 * i - 1] end
      local x0, x1 = outer(px, range and range[1])
      local y0, y1 = outer(yv, range and range[2])
      local xe, ye = linspace(x0, x1, nx + 1), linspace(y0, y1, ny + 1)
      local want = {}
      for i = 1, nx * ny do want[i] = 0.0 end
      for i = 1, n do
        local bx, by = bin_of(px[i] + 0.0, xe), bin_of(yv[i] + 0.0, ye)
        if bx >= 1 and bx <= nx and by >= 1 and by <= ny then
          local k = (bx - 1) * ny + by
          want[k] = want[k] + (w and wv[i] or 1.0)
        end
      end
      local s = gpu.Stream()
      local h, gx, gy = ga.histogram2d(xs, y, {bins = bins, range = range, weights = w, stream = s})
      s:synchronize()
      assert.are.equal("float64", h.dtype)
      assert_shape({nx, ny}, h, "histogram2d")
      assert_exact(xe, gx, "x edges")
      assert_exact(ye, gy, "y edges")
      local bounds = {}
      for i = 1, nx * ny do bounds[i] = w and 4 * n * EPS64 * 3 or 0 end
      assert_near(want, bounds, h, ("histogram2d of %s and %s"):format(xd, yd))
    end
    local h, gx = ga.histogram2d(ga.zeros({0}), ga.zeros({0}, "int8"), {bins = 2})
    assert_exact({0.0, 0.0, 0.0, 0.0}, h, "no points")
    assert_exact({0.0, 0.5, 1.0}, gx, "no points' edges")
    local s = gpu.Stream()
    local edges = ga.linspace(-1, 2, 7, {stream = s})              -- histogram2d's edges' maker
    s:synchronize()
    assert_exact({-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0}, edges, "linspace on a stream")
  end)

  -- On the stand-in driver: every step of histogram2d runs on its stream, the edges (which
  -- the bin kernel reads) and the range's least and greatest values included.
  it("histogram2d makes its edges and finds its range on the stream it is given", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local s = gpu.Stream()
      local function on(opts) return opts and opts.stream == s and "s" or "default" end
      local linspace = ga.linspace
      ga.linspace = function(a, b, n, opts) print("linspace", on(opts)); return linspace(a, b, n, opts) end
      local methods = require("gpu.core").types.GPUArray.__methods
      local min, max = methods.min, methods.max
      -- the stand-in's reductions read made-up memory (NaN at times, under valgrind): the
      -- real calls for their streams, then a range of [0, 1]
      methods.min = function(a, opts) print("min", on(opts)); min(a, opts); return 0.0 end
      methods.max = function(a, opts) print("max", on(opts)); max(a, opts); return 1.0 end
      ga.bincount = function(_, opts) return ga.zeros({opts.minlength}) end    -- reads made-up counts
      local x = ga.zeros({5})
      ga.histogram2d(x, x, {bins = 2, stream = s})
      ga.histogram2d(x, x, {bins = 2, range = {{0, 1}, {0, 1}}, stream = s})
    ]])
    assert(ok, out)
    assert.are.equal("min\ts\nmax\ts\nmin\ts\nmax\ts\nlinspace\ts\nlinspace\ts\n"
                     .. "linspace\ts\nlinspace\ts\n", out)
  end)
end)

describe("polynomial module's errors", function()
  it("checks the constructors' arguments without a device", function()
    local E = helpers.assert_error
    E("bad argument #1 to 'identity' (n must be a whole number from 0 on, got -1)", ga.identity, -1)
    E("bad argument #2 to 'identity' (unknown dtype 'float')", ga.identity, 3, "float")
    E("bad argument #2 to 'identity' (unknown option 'k')", ga.identity, 3, {dtype = "float32", k = 1})
    E("bad argument #2 to 'identity' (dtype given twice (here and as option 'dtype'))",
      ga.identity, 3, "int8", {dtype = "int8"})
    E("bad argument #1 to 'tri' (N must be a whole number from 0 on, got -2)", ga.tri, -2)
    E("bad argument #2 to 'tri' (M must be a whole number from 0 on, got 1.5)", ga.tri, 2, 1.5)
    E("bad argument #2 to 'tri' (option 'k' must be an integer, got float)", ga.tri, 2, {k = 0.5})
    E("bad argument #3 to 'tri' (unknown option 'bogus')", ga.tri, 2, 3, {bogus = 1})
    E("bad argument #1 to 'logspace' (number expected, got string)", ga.logspace, "a", 1)
    E("bad argument #2 to 'logspace' (number expected, got nil)", ga.logspace, 1)
    E("bad argument #3 to 'logspace' (num must be a non-negative integer, got -1)", ga.logspace, 0, 1, -1)
    E("bad argument #4 to 'logspace' (option 'base' must be a number, got string)",
      ga.logspace, 0, 1, 5, {base = "e"})
    E("bad argument #3 to 'logspace' (a real dtype expected, got complex64)", ga.logspace, 0, 1, {dtype = "complex64"})
    E("bad argument #3 to 'logspace' (unknown option 'num')", ga.logspace, 0, 1, {num = 5})
    E("bad argument #1 to 'geomspace' (a geometric sequence cannot include zero)", ga.geomspace, 0, 1)
    E("bad argument #2 to 'geomspace' (a geometric sequence cannot include zero)", ga.geomspace, 1, 0, 3)
    E("bad argument #4 to 'geomspace' (unknown option 'base')", ga.geomspace, 1, 2, 3, {base = 2})
    E("bad argument #4 to 'geomspace' (option 'endpoint' must be a boolean, got number)",
      ga.geomspace, 1, 2, 3, {endpoint = 1})
    E("bad argument #4 to 'geomspace' (unknown dtype 'int')", ga.geomspace, 1, 2, 3, {dtype = "int"})
    E("bad argument #1 to 'full_like' (GPUArray expected, got number)", ga.full_like, 1, 2)
    E("bad argument #1 to 'vander' (GPUArray expected, got table)", ga.vander, {1, 2})
    E("bad argument #1 to 'rollaxis' (GPUArray expected, got nil)", ga.rollaxis)
    E("bad argument #1 to 'polyval' (GPUArray expected, got table)", ga.polyval, {1, 2}, {3})
    assert.are.equal(ga.logspace, gpu.logspace)
    assert.are.equal(ga.geomspace, gpu.geomspace)
    assert.are.equal(ga.full_like, gpu.full_like)
  end)

  helpers.gpu_it("names the argument, the option or the freed array at fault", function()
    local E = helpers.assert_error
    local x = ga.zeros({5})
    local m = ga.zeros({2, 3})
    local i32 = ga.zeros({4}, "int32")
    local flags = ga.zeros({3}, "bool")
    E("bad argument #2 to 'full_like' (2.5 is not an integer (for int32))", ga.full_like, i32, 2.5)
    E("bad argument #3 to 'full_like' (unknown dtype 'int3')", ga.full_like, x, 1, "int3")
    E("bad argument #3 to 'full_like' (unknown option 'value')", ga.full_like, x, 1, {value = 2})
    E("bad argument #2 to 'broadcast_arrays' (shape (4,) does not broadcast with the shape (5,) of the arrays before it)",
      ga.broadcast_arrays, x, i32)
    E("bad argument #2 to 'broadcast_arrays' (GPUArray expected, got number)", ga.broadcast_arrays, x, 5)
    E("bad argument #2 to 'rollaxis' (axis 3 is out of range for a 2-d array)", ga.rollaxis, m, 3)
    E("bad argument #2 to 'rollaxis' (axis must be an integer, got float)", ga.rollaxis, m, 1.5)
    E("bad argument #3 to 'rollaxis' (start 4 is out of range for a 2-d array (1 to 3, or -2 to -1))",
      ga.rollaxis, m, 1, 4)
    E("bad argument #3 to 'rollaxis' (start 0 is out of range for a 2-d array (1 to 3, or -2 to -1))",
      ga.rollaxis, m, 1, 0)
    E("bad argument #3 to 'rollaxis' (start must be an integer, got string)", ga.rollaxis, m, 1, "1")
    E("bad argument #1 to 'vander' (x must be a 1-d array, got shape (2,3))", ga.vander, m)
    E("bad argument #2 to 'vander' (N must be a whole number from 0 on, got -1)", ga.vander, x, -1)
    E("bad argument #2 to 'vander' (option 'increasing' must be a boolean, got number)",
      ga.vander, x, {increasing = 1})
    E("bad argument #3 to 'vander' (unknown option 'dtype')", ga.vander, x, 3, {dtype = "int8"})
    E("bad argument #2 to 'diagflat' (option 'k' must be an integer, got float)", ga.diagflat, x, {k = 1.5})
    E("bad argument #2 to 'diagflat' (unknown option 'offset')", ga.diagflat, x, {offset = 1})
    -- ediff1d
    E("bad argument #1 to 'ediff1d' (differences of bool arrays are not defined)", ga.ediff1d, flags)
    E("bad argument #2 to 'ediff1d' (option 'to_begin' of dtype float64 cannot be cast to int32 by the same_kind rule)",
      ga.ediff1d, i32, {to_begin = 1.5})
    E("bad argument #2 to 'ediff1d' (option 'to_end' of dtype int64 cannot be cast to uint8 by the same_kind rule)",
      ga.ediff1d, ga.zeros({3}, "uint8"), {to_end = {-1}})
    E("bad argument #2 to 'ediff1d' (option 'to_end' must be a GPUArray, a number or a list of numbers, got string)",
      ga.ediff1d, x, {to_end = "a"})
    E("bad argument #2 to 'ediff1d' (unknown option 'axis')", ga.ediff1d, x, {axis = 1})
    -- gradient
    E("bad argument #2 to 'gradient' (option 'edge_order' must be 1 or 2, got 3)", ga.gradient, x, {edge_order = 3})
    E("bad argument #2 to 'gradient' (expected one spacing or one an axis (2), got 3)", ga.gradient, m, 1, 2, 3)
    E("bad argument #1 to 'gradient' (axis 1 has 2 elements; edge_order 2 needs at least 3)",
      ga.gradient, m, {edge_order = 2})
    E("bad argument #1 to 'gradient' (axis 1 has 1 elements; edge_order 1 needs at least 2)",
      ga.gradient, ga.zeros({1}))
    E("bad argument #2 to 'gradient' (coordinates of 4 points, f has 5 along axis 1)", ga.gradient, x, ga.zeros({4}))
    E("bad argument #2 to 'gradient' (coordinates must be a 1-d array, got shape (2,3))", ga.gradient, x, m)
    E("bad argument #2 to 'gradient' (coordinates must be real numbers, got bool)", ga.gradient, ga.zeros({3}), flags)
    E("bad argument #2 to 'gradient' (axis 3 is out of range for a 2-d array)", ga.gradient, m, {axis = 3})
    E("bad argument #2 to 'gradient' (repeated axis 1)", ga.gradient, m, {axis = {1, -2}})
    E("bad argument #2 to 'gradient' (unknown option 'spacing')", ga.gradient, m, {spacing = 1})
    E("bad argument #1 to 'gradient' (differences of bool arrays are not defined)", ga.gradient, flags)
    E("bad argument #1 to 'gradient' (a 0-d array has no axis to take a gradient along)", ga.gradient, ga.zeros({}))
    E("bad argument #2 to 'gradient' (number or GPUArray expected, got string)", ga.gradient, x, "x")
    -- polynomials
    E("bad argument #1 to 'polyval' (a 1-d array of coefficients expected, got shape (2,3))", ga.polyval, m, x)
    E("bad argument #2 to 'polyval' (GPUArray expected, got number)", ga.polyval, x, 3)
    E("bad argument #3 to 'polyval' (unknown option 'out')", ga.polyval, x, x, {out = x})
    E("bad argument #2 to 'polyadd' (a 1-d array of coefficients expected, got shape (2,3))", ga.polyadd, x, m)
    E("bad argument #1 to 'polysub' (differences of bool arrays are not defined)", ga.polysub, flags, flags)
    E("bad argument #1 to 'polymul' (a1 cannot be empty)", ga.polymul, ga.zeros({0}), x)
    E("bad argument #2 to 'polymul' (a2 cannot be empty)", ga.polymul, x, ga.zeros({0}))
    E("bad argument #2 to 'polyder' (m must be a whole number from 0 on, got -1)", ga.polyder, x, -1)
    E("bad argument #3 to 'polyder' (unknown option 'bogus')", ga.polyder, x, 1, {bogus = 1})
    E("bad argument #3 to 'polyint' (k must hold 1 or at least m = 3 constants, got 2)", ga.polyint, x, 3, {1, 2})
    E("bad argument #3 to 'polyint' (k must be a number or a list of numbers, got string)", ga.polyint, x, 1, "a")
    E("bad argument #3 to 'polyint' (k[2] must be a number, got string)", ga.polyint, x, 1, {1, "a"})
    E("bad argument #2 to 'polyint' (m must be a whole number from 0 on, got 1.5)", ga.polyint, x, 1.5)
    E("bad argument #3 to 'polyfit' (deg must be a whole number from 0 on, got -1)", ga.polyfit, x, x, -1)
    E("bad argument #2 to 'polyfit' (y has 4 rows, x 5 points)", ga.polyfit, x, i32, 1)
    E("bad argument #1 to 'polyfit' (complex values are not supported, got complex128)",
      ga.polyfit, ga.zeros({5}, "complex128"), x, 1)
    E("bad argument #2 to 'polyfit' (array type float16 is unsupported in linalg)", ga.polyfit, x, ga.zeros({5}, "float16"), 1)
    E("bad argument #1 to 'polyfit' (x must not be empty)", ga.polyfit, ga.zeros({0}), ga.zeros({0}), 1)
    E("bad argument #1 to 'polyfit' (x must be a 1-d array, got shape (2,3))", ga.polyfit, m, x, 1)
    E("bad argument #4 to 'polyfit' (unknown option 'rcond')", ga.polyfit, x, x, 1, {rcond = 1e-3})
    E("bad argument #1 to 'roots' (a 1-d array of coefficients expected, got shape (2,3))", ga.roots, m)
    E("bad argument #1 to 'roots' (array type float16 is unsupported in linalg)",
      ga.roots, ga.to_gpu(gpu.host.from_table({1, 2, 3}, "float16")))
    E("bad argument #3 to 'histogram2d' (option 'bins' must be a whole number or a pair of them, each 1 or more)",
      ga.histogram2d, x, x, {bins = 0})
    E("bad argument #3 to 'histogram2d' (option 'bins' must be a whole number or a pair of them)",
      ga.histogram2d, x, x, {bins = {1, 2, 3}})
    E("bad argument #3 to 'histogram2d' (option 'range' must be {{xmin, xmax}, {ymin, ymax}}, numbers)",
      ga.histogram2d, x, x, {range = {0, 1}})
    E("bad argument #3 to 'histogram2d' (option 'range': the y range's max must be larger than its min)",
      ga.histogram2d, x, x, {range = {{0, 1}, {1, 0}}})
    E("bad argument #3 to 'histogram2d' (option 'range': the x range [-inf, 1.0] is not finite)",
      ga.histogram2d, x, x, {range = {{-math.huge, 1}, {0, 1}}})
    E("bad argument #2 to 'histogram2d' (y must be a 1-d array of x's 5 points, got shape (4,))", ga.histogram2d, x, i32)
    E("bad argument #1 to 'histogram2d' (x must be a 1-d array, got shape (2,3))", ga.histogram2d, m, x)
    E("bad argument #3 to 'histogram2d' (option 'weights' must be a 1-d GPUArray of x's 5 points)",
      ga.histogram2d, x, x, {weights = i32})
    E("bad argument #3 to 'histogram2d' (unknown option 'density')", ga.histogram2d, x, x, {density = true})
    E("bad argument #2 to 'histogram2d' (complex values are not supported, got complex64)",
      ga.histogram2d, x, ga.zeros({5}, "complex64"))
    -- freed arrays
    local dead = ga.zeros({4})
    dead:free()
    for name, call in pairs{
      full_like = function() return ga.full_like(dead, 1) end, vander = function() return ga.vander(dead) end,
      diagflat = function() return ga.diagflat(dead) end, rollaxis = function() return ga.rollaxis(dead, 1) end,
      broadcast_arrays = function() return ga.broadcast_arrays(dead) end,
      ediff1d = function() return ga.ediff1d(dead) end, gradient = function() return ga.gradient(dead) end,
      polyval = function() return ga.polyval(dead, x) end, polyadd = function() return ga.polyadd(dead, x) end,
      polysub = function() return ga.polysub(dead, x) end, polymul = function() return ga.polymul(dead, x) end,
      polyder = function() return ga.polyder(dead) end, polyint = function() return ga.polyint(dead) end,
      polyfit = function() return ga.polyfit(dead, x, 1) end, roots = function() return ga.roots(dead) end,
      histogram2d = function() return ga.histogram2d(dead, x) end,
    } do
      E(("bad argument #1 to '%s' (array has been freed)"):format(name), call)
    end
    E("bad argument #2 to 'polyval' (array has been freed)", ga.polyval, x, dead)
    E("bad argument #2 to 'polyfit' (array has been freed)", ga.polyfit, x, dead, 1)
    E("bad argument #2 to 'histogram2d' (array has been freed)", ga.histogram2d, ga.zeros({4}), dead)
    E("bad argument #3 to 'histogram2d' (option 'weights' must be a 1-d GPUArray of x's 4 points)",
      ga.histogram2d, ga.zeros({4}), ga.zeros({4}), {weights = dead})
    E("bad argument #2 to 'broadcast_arrays' (array has been freed)", ga.broadcast_arrays, x, dead)
    E("bad argument #2 to 'gradient' (array has been freed)", ga.gradient, ga.zeros({4}), dead)
    E("bad argument #2 to 'ediff1d' (option 'to_begin' has been freed)", ga.ediff1d, x, {to_begin = dead})
  end)
end)
