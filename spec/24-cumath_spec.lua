-- gpu.cumath against Lua's math library.
local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"
local operators = require "gpu.operators"
local R = require "array_reference"

local lua_math = {
  fabs = math.abs, ceil = math.ceil, floor = math.floor, exp = math.exp, log = math.log,
  log10 = function(x) return math.log(x, 10) end, sqrt = math.sqrt, sin = math.sin,
  cos = math.cos, tan = math.tan, asin = math.asin, acos = math.acos, atan = math.atan,
  sinh = function(x) return (math.exp(x) - math.exp(-x)) / 2 end,
  cosh = function(x) return (math.exp(x) + math.exp(-x)) / 2 end,
  tanh = function(x) local a, b = math.exp(x), math.exp(-x) return (a - b) / (a + b) end,
}

local function round_to(t, x)
  if t == "float32" then return R.f32(x) end
  if t == "float16" then return gpu.float16(x).value end
  return x
end

-- NumPy's functions beyond PyCUDA's, with references valid at infinities
local function rint(x)        -- to nearest, ties to even
  local f = math.floor(x)
  if f ~= f or f == math.huge or f == -math.huge then return x end
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f + 0.0
end
local numpy_math = {
  trunc = function(x) return x >= 0 and math.floor(x) + 0.0 or x < 0 and math.ceil(x) + 0.0 or x end,
  rint = rint,
  expm1 = function(x) return math.exp(x) - 1 end,
  log1p = function(x) return x < -1 and 0 / 0 or math.log(1 + x) end,
  log2 = function(x) return x < 0 and 0 / 0 or math.log(x, 2) end,
  exp2 = function(x) return 2.0 ^ x end,
  cbrt = function(x) return x < 0 and -((-x) ^ (1 / 3)) or x ^ (1 / 3) end,
  asinh = function(x)
    local m = math.abs(x)
    local r = math.log(m + math.sqrt(m * m + 1))
    return x < 0 and -r or r
  end,
  acosh = function(x) return x < 1 and 0 / 0 or math.log(x + math.sqrt(x * x - 1)) end,
  atanh = function(x) return math.abs(x) > 1 and 0 / 0 or 0.5 * math.log((1 + x) / (1 - x)) end,
}

describe("cumath kernels (CPU: NVRTC only)", function()
  it("compile for float32, float64 and integer inputs", function()
    local list = {}
    local names = {}
    for name in pairs(lua_math) do names[#names + 1] = name end
    for name in pairs(numpy_math) do names[#names + 1] = name end
    table.sort(names)                      -- one source each run, so the disk cache hits
    for _, name in ipairs(names) do
      for _, t in ipairs{"float32", "float64", "int16", "int32"} do
        local e, rt = operators.expression(name, {t}, {"a"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = name .. "_" .. t,
                                      operands = {{name = "a", dtype = t}}}, t == "float32" and "s2" or "c"}
      end
    end
    for _, t in ipairs{"float32", "float64", "int32"} do
      for _, op in ipairs{"fmod", "atan2", "hypot", "copysign"} do
        local e, rt = operators.expression(op, {t, t}, {"a", "b"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = op .. "_" .. t,
          operands = {{name = "a", dtype = t}, {name = "b", dtype = t}}}, "c"}
      end
    end
    for _, t in ipairs{"float32", "float64", "float16", "int16"} do
      for _, op in ipairs{"frexp_mantissa", "frexp_exponent", "modf_fraction", "modf_integer"} do
        local e, rt = operators.expression(op, {t}, {"a"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = op .. "_" .. t,
                                      operands = {{name = "a", dtype = t}}}, "c"}
      end
      local e, rt = operators.expression("ldexp", {t, "weak-int"}, {"a", "b"})
      list[#list + 1] = {ew.program{expr = e, out = rt, name = "ldexp_" .. t,
        operands = {{name = "a", dtype = t}, {name = "b", dtype = "int64", scalar = true}}}, "c"}
    end
    assert.is_true(#gpu.compile(ew.combined_source(list), {arch = "sm_90", no_extern_c = true}) > 0)
  end)

  it("types frexp, modf and ldexp as NumPy does, and refuses what NumPy refuses", function()
    local function names(types) return #types == 1 and {"a"} or {"a", "b"} end
    local function result(op, types) return select(2, operators.expression(op, types, names(types))) end
    assert.are.equal("int32", result("frexp_exponent", {"float64"}))
    assert.are.equal("float16", result("frexp_mantissa", {"int8"}))
    assert.are.equal("float32", result("modf_integer", {"uint16"}))
    assert.are.equal("float32", result("ldexp", {"float32", "int64"}))
    assert.are.equal("float64", result("ldexp", {"weak-float", "int8"}))
    local function why(op, types) return select(2, operators.try_expression(op, types, names(types))) end
    assert.are.equal("ldexp needs integer exponents of at most 63 bits, got Lua float",
                     why("ldexp", {"float32", "weak-float"}))
    assert.are.equal("ldexp needs integer exponents of at most 63 bits, got uint64",
                     why("ldexp", {"float64", "uint64"}))
    assert.are.equal("frexp is not defined for complex operands (complex64)",
                     why("frexp_mantissa", {"complex64"}))
    assert.are.equal("modf is not defined for complex operands (complex128)",
                     why("modf_integer", {"complex128"}))
  end)

  it("rejects unknown options", function()
    helpers.assert_error("bad argument #2 to 'sqrt' (unknown option 'outt')",
                         gpu.cumath.sqrt, nil, {outt = 1})
  end)
end)

describe("cumath", function()
  helpers.gpu_it("matches Lua's math for float32 and float64, with out and stream", function()
    for _, t in ipairs{"float32", "float64"} do
      local v = {}
      for i = 1, 64 do v[i] = math.random() * 1.8 - 0.9 end
      if t == "float32" then for i = 1, 64 do v[i] = R.f32(v[i]) end end
      v[1] = -0.0 / 1; v[2] = 0 / 0
      local a = gpu.to_gpu(gpu.host.from_table(v, t))
      for name, f in pairs(lua_math) do
        local r = gpu.cumath[name](a)
        assert.are.equal(t, r.dtype)
        local h = r:get()
        for i = 1, 64 do
          local want = f(v[i])
          if want == want and want ~= h[i] and t == "float32" then
            assert(math.abs(h[i] - want) <= 4e-7 * math.max(1, math.abs(want)),
                   ("%s(%s) #%d: %s vs %s"):format(name, t, i, h[i], want))
          elseif want ~= want or want == h[i] then
            R.check(want, h[i], "float64", ("%s(%s) #%d"):format(name, t, i))
          else
            helpers.assert_close(want, h[i], 1e-9, ("%s(%s) #%d"):format(name, t, i))
          end
        end
      end
      local s = gpu.Stream()
      local out = gpu.empty_like(a)
      assert.are.equal(out, gpu.cumath.sqrt(gpu.cumath.fabs(a), {out = out, stream = s}))
      s:synchronize()
      local h = out:get()
      for i = 3, 64 do R.check(t == "float32" and R.f32(math.sqrt(math.abs(v[i]))) or math.sqrt(math.abs(v[i])), h[i], t, "sqrt out") end
      local m = gpu.cumath.fmod(a, 0.25):get()
      for i = 3, 64 do R.check(math.fmod(v[i], t == "float32" and R.f32(0.25) or 0.25), m[i], t, "fmod") end
    end
  end)

  helpers.gpu_it("NumPy's trunc, rint, expm1, log1p, log2, exp2, cbrt, asinh, acosh and atanh", function()
    local specials = {0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0, 1.0, -1.0, 1 / 0, -1 / 0, 0 / 0}
    for _, t in ipairs{"float32", "float64"} do
      local v = {}
      for i, x in ipairs(specials) do v[i] = x end
      for i = #specials + 1, 120 do v[i] = round_to(t, (math.random() * 2 - 1) * 4) end
      local a = gpu.to_gpu(gpu.host.from_table(v, t))
      for name, f in pairs(numpy_math) do
        local r = gpu.cumath[name](a)
        assert.are.equal(t, r.dtype, name)
        local h = r:get()
        for i = 1, #v do
          local want, what = f(v[i]), ("%s(%s) of %s, #%d"):format(name, t, v[i], i)
          if want ~= want or want == h[i] or want == math.huge or want == -math.huge then
            R.check(want, h[i], "float64", what)
          else     -- float32 functions are within a few units in the last place
            helpers.assert_close(want, h[i], t == "float32" and 1e-6 or 1e-13, what)
          end
        end
      end
    end
    -- integer input: NumPy's float dtype for it, computed exactly where the result is
    local r = gpu.cumath.exp2(gpu.to_gpu(gpu.host.from_table({-2, 0, 3, 10}, "int16")))
    assert.are.equal("float32", r.dtype)
    assert.are.same({0.25, 1, 8, 1024}, r:get():totable())
    helpers.assert_error("bad argument #1 to 'cbrt' (cbrt is not defined for complex operands (complex64))",
                         gpu.cumath.cbrt, gpu.to_gpu(gpu.host.from_table({gpu.complex(1, 1)}, "complex64")))
  end)

  helpers.gpu_it("atan2, hypot and copysign match Lua references, with scalars and broadcasting", function()
    for _, t in ipairs{"float32", "float64"} do
      local n = 100
      local y, x = {}, {}
      for i = 1, n do
        y[i] = round_to(t, (math.random() * 2 - 1) * 8)
        x[i] = round_to(t, (math.random() * 2 - 1) * 8)
      end
      y[1], x[1], y[2], x[2], y[3], x[3], y[4], x[4] = 0.0, -1.0, -0.0, -1.0, 1 / 0, 1 / 0, 0 / 0, 1.0
      local dy, dx = gpu.to_gpu(gpu.host.from_table(y, t)), gpu.to_gpu(gpu.host.from_table(x, t))
      local at, hy, cs = gpu.cumath.atan2(dy, dx):get(), gpu.cumath.hypot(dy, dx):get(),
                         gpu.cumath.copysign(dy, dx):get()
      local tol = t == "float32" and 1e-6 or 1e-13
      for i = 1, n do
        local want = math.atan(y[i], x[i])
        if want ~= want or want == at[i] then R.check(want, at[i], "float64", "atan2 #" .. i)
        else helpers.assert_close(want, at[i], tol, "atan2 #" .. i) end
        want = (y[i] ~= y[i] and x[i] == x[i] and math.abs(x[i]) ~= math.huge) and 0 / 0
               or math.abs(y[i]) == math.huge and math.huge or math.sqrt(y[i] * y[i] + x[i] * x[i])
        if want ~= want or want == hy[i] then R.check(want, hy[i], "float64", "hypot #" .. i)
        else helpers.assert_close(want, hy[i], tol, "hypot #" .. i) end
        local negative = x[i] < 0 or (x[i] == 0 and 1 / x[i] < 0)
        want = negative and -math.abs(y[i]) or math.abs(y[i])
        R.check(want, cs[i], "float64", "copysign #" .. i)
        if want == 0 then assert.are.equal(negative, 1 / cs[i] < 0, "copysign sign of zero #" .. i) end
      end
    end
    -- atan2(-0.0, -1) is -pi, atan2(0.0, -1) pi: the sign of zero matters
    local z = gpu.to_gpu(gpu.host.from_table({0.0, -0.0}, "float64"))
    assert.are.same({math.pi, -math.pi}, gpu.cumath.atan2(z, -1):get():totable())
    -- a scalar first operand and a broadcast row; int8 computes in float16, as NumPy's
    local m = gpu.to_gpu(gpu.host.from_table({3, 5, 8, 3, 16, 20}, "int32")):reshape(2, 3)
    local row = gpu.to_gpu(gpu.host.from_table({4, 12, 15}, "int32"))
    assert.are.same({{5, 13, 17}, {5, 20, 25}}, gpu.cumath.hypot(m, row):get():totable())
    assert.are.equal("float16", gpu.cumath.hypot(gpu.to_gpu(gpu.host.from_table({3}, "int8")), 4).dtype)
    local c = gpu.cumath.copysign(2, gpu.to_gpu(gpu.host.from_table({-1, 0, 1}, "float32")))
    assert.are.same({-2, 2, 2}, c:get():totable())
    helpers.assert_error("bad argument #1 to 'atan2' (atan2 is not defined for complex operands (complex64 and Lua integer))",
                         gpu.cumath.atan2, gpu.to_gpu(gpu.host.from_table({gpu.complex(1, 1)}, "complex64")), 1)
    helpers.assert_error("bad argument #3 to 'hypot' (unknown option 'axis')", gpu.cumath.hypot, m, m, {axis = 1})
  end)

  -- frexp on the CPU: halving and doubling by 2 are exact, so m is x's significand exactly
  local function frexp_ref(x)
    if x ~= x or x == 0 or x == math.huge or x == -math.huge then return x, 0 end
    local m, e = math.abs(x), 0
    while m >= 1 do m, e = m / 2, e + 1 end
    while m < 0.5 do m, e = m * 2, e - 1 end
    return x < 0 and -m or m, e
  end

  helpers.gpu_it("frexp, modf and ldexp match references, with PyCUDA's two results", function()
    local specials = {0.0, -0.0, 1.0, -0.5, 3.75, 1 / 0, -1 / 0, 0 / 0}
    for _, t in ipairs{"float32", "float64", "float16"} do
      local span = t == "float16" and 5 or 30
      local v = {}
      for i, x in ipairs(specials) do v[i] = x end
      for i = #specials + 1, 200 do
        v[i] = round_to(t, (math.random() * 2 - 1) * 2.0 ^ math.random(-span, span))
      end
      local a = gpu.to_gpu(gpu.host.from_table(v, t))
      local m, e = gpu.cumath.frexp(a)
      local frac, int = gpu.cumath.modf(a, {stream = gpu.Stream()})
      assert.are.equal(t, m.dtype)
      assert.are.equal("int32", e.dtype)
      assert.are.equal(t, frac.dtype)
      local hm, he, hf, hi = m:get(), e:get(), frac:get(), int:get()
      for i = 1, #v do
        local want_m, want_e = frexp_ref(v[i])
        R.check(want_m, hm[i], "float64", ("frexp(%s) #%d significand"):format(t, i))
        R.check(want_e, he[i], "int32", ("frexp(%s) #%d exponent"):format(t, i))
        local want_i, want_f = math.modf(v[i])
        R.check(want_f, hf[i], "float64", ("modf(%s) #%d fraction"):format(t, i))
        R.check(want_i, hi[i], "float64", ("modf(%s) #%d integer"):format(t, i))
      end
      -- ldexp with an exponent array (results kept in the normal range) and with extremes
      local shift = t == "float16" and 5 or 60
      local exps = {}
      for i = 1, #v do exps[i] = math.random(-shift, shift) end
      exps[1], exps[3], exps[4], exps[5] = 100000, 300, -300, -100000
      local scaled = gpu.cumath.ldexp(a, gpu.to_gpu(gpu.host.from_table(exps, "int32"))):get()
      for i = 1, #v do
        local x, n = v[i], exps[i]
        local want = x
        if x == x and x ~= 0 and x - x == 0 then
          want = round_to(t, x * 2.0 ^ math.max(-10000, math.min(10000, n)))
          if t ~= "float64" and math.abs(want) == math.huge then want = x * math.huge end
        end
        R.check(want, scaled[i], "float64", ("ldexp(%s) #%d: %s * 2^%d"):format(t, i, x, n))
      end
      local by3 = gpu.cumath.ldexp(a, 3):get()
      for i = 1, #v do R.check(v[i] * 8, by3[i], "float64", ("ldexp(%s, 3) #%d"):format(t, i)) end
    end
    -- integer input computes in NumPy's float dtype; exponents of any integer dtype
    local ints = gpu.to_gpu(gpu.host.from_table({-6, 0, 7, 1000}, "int16"))
    local scaled = gpu.cumath.ldexp(ints, gpu.to_gpu(gpu.host.from_table({1, 2, -1, -3}, "int8")))
    assert.are.equal("float32", scaled.dtype)
    assert.are.same({-12, 0, 3.5, 125}, scaled:get():totable())
    local m, e = gpu.cumath.frexp(gpu.to_gpu(gpu.host.from_table({-6, 1000}, "int64")))
    assert.are.equal("float64", m.dtype)
    assert.are.same({-0.75, 0.9765625}, m:get():totable())
    assert.are.same({3, 10}, e:get():totable())
    -- traced: frexp's two results feed ldexp, which gives the input back
    local back = gpu.fuse(function(x) return gpu.cumath.ldexp(gpu.cumath.frexp(x)) end)
    local v = {}
    for i = 1, 50 do v[i] = (math.random() * 2 - 1) * 2.0 ^ math.random(-40, 40) end
    assert.are.same(v, back(gpu.to_gpu(gpu.host.from_table(v, "float64"))):get():totable())
    helpers.assert_error("bad argument #2 to 'ldexp' (ldexp needs integer exponents of at most 63 "
                         .. "bits, got Lua float)", gpu.cumath.ldexp, ints, 2.5)
    helpers.assert_error("bad argument #2 to 'frexp' (unknown option 'out')", gpu.cumath.frexp, ints, {out = ints})
  end)
end)
