-- Comparisons (bool arrays), where, if_positive, maximum, minimum, abs, logical_and/or/not.
local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"
local operators = require "gpu.operators"
local R = require "array_reference"

local DTYPES = {"bool", "int8", "uint8", "int32", "uint32", "int64", "uint64", "float32", "float64"}
local COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}

describe("comparison kernels (CPU: NVRTC only)", function()
  it("compile for every dtype, with where/maximum/minimum/abs", function()
    local list = {}
    for _, t in ipairs(DTYPES) do
      for _, op in ipairs{"eq", "lt", "ge", "maximum", "minimum"} do
        local e, rt = operators.expression(op, {t, t}, {"a", "b"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = op .. "_" .. t,
          operands = {{name = "a", dtype = t}, {name = "b", dtype = t}}}, t == "float32" and "s2" or "c"}
      end
      local e, rt = operators.expression("where", {"bool", t, "weak-int"}, {"c", "x", "y"})
      list[#list + 1] = {ew.program{expr = e, out = rt, name = "where_" .. t,
        operands = {{name = "c", dtype = "bool"}, {name = "x", dtype = t},
                    {name = "y", dtype = rt == "bool" and "int64" or rt, scalar = true}}}, "s1"}
      for _, op in ipairs{"logical_and", "logical_or"} do
        e, rt = operators.expression(op, {t, "float32"}, {"a", "b"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = op .. "_" .. t,
          operands = {{name = "a", dtype = t}, {name = "b", dtype = "float32"}}}, "c"}
      end
      e, rt = operators.expression("if_positive", {t, t, "float64"}, {"c", "x", "y"})
      list[#list + 1] = {ew.program{expr = e, out = rt, name = "if_positive_" .. t,
        operands = {{name = "c", dtype = t}, {name = "x", dtype = t}, {name = "y", dtype = "float64"}}}, "c"}
      e, rt = operators.expression("abs", {t}, {"a"})
      list[#list + 1] = {ew.program{expr = e, out = rt, name = "abs_" .. t,
        operands = {{name = "a", dtype = t}}}, "c"}
    end
    assert.is_true(#gpu.compile(ew.combined_source(list), {arch = "sm_90", no_extern_c = true}) > 0)
  end)
end)

local function upload(values, dtype) return gpu.to_gpu(gpu.host.from_table(values, dtype)) end

describe("comparisons", function()
  helpers.gpu_it("return bool arrays matching the CPU, NaN compares unequal", function()
    for _, t in ipairs(DTYPES) do
      local va, vb = R.random_values(t, 40), R.random_values(t, 40)
      vb[5] = va[5]
      local a, b = upload(va, t), upload(vb, t)
      for _, op in ipairs(COMPARE) do
        local c = a[op](a, b)
        assert.are.equal("bool", c.dtype)
        local h = c:get()
        for i = 1, 40 do
          R.check(R.apply(op, {t, t}, {va[i], vb[i]}), h[i], "bool", ("%s %s #%d"):format(op, t, i))
        end
      end
      -- a strided view against a Lua number
      local s = a:slice(1, -1, 3)
      local h = s:gt(t == "bool" and 0 or 1):get()
      for i = 1, #h do
        local v = va[3 * i - 2]
        R.check(R.apply("gt", {t, "weak-int"}, {v, t == "bool" and 0 or 1}), h[i], "bool", "gt scalar")
      end
    end
  end)
end)

describe("where, maximum, minimum, abs", function()
  helpers.gpu_it("match NumPy, propagating NaN", function()
    for _, t in ipairs{"int8", "uint32", "int64", "float32", "float64"} do
      local va, vb = R.random_values(t, 50), R.random_values(t, 50)
      local a, b = upload(va, t), upload(vb, t)
      local c = a:lt(b)
      local w, mx, mn, ab = gpu.gpuarray.where(c, a, b), gpu.gpuarray.maximum(a, b),
                            gpu.gpuarray.minimum(a, b), gpu.gpuarray.abs(a)
      local hc, hw, hx, hn, ha = c:get(), w:get(), mx:get(), mn:get(), ab:get()
      for i = 1, 50 do
        R.check(R.apply("where", {"bool", t, t}, {hc[i], va[i], vb[i]}), hw[i], t, "where #" .. i)
        R.check(R.apply("maximum", {t, t}, {va[i], vb[i]}), hx[i], t, "maximum #" .. i)
        R.check(R.apply("minimum", {t, t}, {va[i], vb[i]}), hn[i], t, "minimum #" .. i)
        R.check(R.apply("abs", {t}, {va[i]}), ha[i], t, "abs #" .. i)
      end
    end
    -- broadcasting and scalars: where(x > 0, x, 0) on a (4, 5) array
    local v = R.random_values("float64", 20)
    local x = upload(v, "float64"):reshape(4, 5)
    local relu = gpu.gpuarray.where(x:gt(0), x, 0):get()
    for i = 1, 20 do R.check(v[i] > 0 and v[i] or (v[i] ~= v[i] and 0 or 0.0), relu[i], "float64", "relu #" .. i) end
    local m = gpu.gpuarray.maximum(x, upload({0, 1, 2, 3, 4}, "float64")):get()
    for i = 1, 20 do
      R.check(R.apply("maximum", {"float64", "float64"}, {v[i], (i - 1) % 5 + 0.0}), m[i], "float64", "max bcast #" .. i)
    end
  end)

  helpers.gpu_it("logical_and, logical_or, logical_not and if_positive match NumPy and PyCUDA", function()
    local ga = gpu.gpuarray
    local types = {"bool", "int8", "uint32", "int64", "float16", "float32", "float64", "complex64"}
    for _, t in ipairs(types) do
      for _, u in ipairs{"bool", "float64"} do
        local n = 60
        local va, vb = R.random_values(t, n), R.random_values(u, n)
        if t == "complex64" then   -- zeros and parts that are zero, beside plain values
          for i = 1, n do
            local re, im = va[i], R.random_values("float32", 1)[1]
            if i % 3 == 0 then im = 0 end
            if i % 5 == 0 then re = 0 end
            va[i] = gpu.complex(i % 15 == 0 and 0 or re, i % 15 == 0 and 0 or im)
          end
        elseif t == "float16" then
          for i = 1, n do va[i] = gpu.float16(va[i]).value end
        end
        local a, b = upload(va, t), upload(vb, u)
        local land, lor, lnot = ga.logical_and(a, b):get(), ga.logical_or(b, a):get(), ga.logical_not(a):get()
        for i = 1, n do
          R.check(R.apply("logical_and", {t, u}, {va[i], vb[i]}), land[i], "bool", t .. " and #" .. i)
          R.check(R.apply("logical_or", {u, t}, {vb[i], va[i]}), lor[i], "bool", t .. " or #" .. i)
          R.check(R.apply("logical_not", {t}, {va[i]}), lnot[i], "bool", t .. " not #" .. i)
        end
        assert.are.equal("bool", ga.logical_not(a).dtype)
        if t ~= "complex64" then
          local x, y = R.random_values("int32", n), R.random_values(u, n)
          local dx, dy = upload(x, "int32"), upload(y, u)
          local chosen = ga.if_positive(a, dx, dy)
          local rt = require("gpu.promote").result_type("int32", u)
          assert.are.equal(rt, chosen.dtype)
          local h = chosen:get()
          for i = 1, n do
            R.check(R.apply("if_positive", {t, "int32", u}, {va[i], x[i], y[i]}), h[i], rt, t .. " if_positive #" .. i)
          end
        end
      end
    end
    -- broadcasting, a scalar branch, out and fuse
    local v = R.random_values("float64", 20)
    local x = upload(v, "float64"):reshape(4, 5)
    local row = upload({1, -1, 0, 2, -3}, "int32")
    local h = ga.if_positive(row, x, -1):get()
    for i = 1, 20 do
      local r = ({1, -1, 0, 2, -3})[(i - 1) % 5 + 1]
      R.check(r > 0 and v[i] or -1.0, h[i], "float64", "broadcast #" .. i)
    end
    local out = gpu.zeros({4, 5}, "bool")
    assert.are.equal(out, ga.logical_and(x, row, {out = out}))
    local ho = out:get()
    for i = 1, 20 do
      R.check(v[i] ~= 0 and ({1, -1, 0, 2, -3})[(i - 1) % 5 + 1] ~= 0, ho[i], "bool", "out #" .. i)
    end
    local fused = gpu.fuse(function(p, q) return ga.if_positive(p, ga.logical_not(q), ga.logical_or(p, q)) end)
    local hf = fused(x, row):get()
    for i = 1, 20 do
      local p, q = v[i], ({1, -1, 0, 2, -3})[(i - 1) % 5 + 1]
      local expect
      if p > 0 then expect = q == 0 else expect = p ~= 0 or q ~= 0 end
      R.check(expect, hf[i], "bool", "fused #" .. i)
    end
  end)

  helpers.gpu_it("clip, fmax, fmin, sign, isnan, isinf and isfinite match NumPy", function()
    local ga = gpu.gpuarray
    local n = 80
    for _, t in ipairs{"bool", "int8", "uint8", "int16", "uint32", "int64", "uint64", "float16",
                       "float32", "float64"} do
      local va, vb, vc = R.random_values(t, n), R.random_values(t, n), R.random_values(t, n)
      if t:match("^float") then     -- infinities beside the NaN and the zero
        va[4], va[5], vb[6], vc[7], vb[8], vc[8] = 1 / 0, -1 / 0, 0 / 0, 1 / 0, -1 / 0, 0 / 0
        if t == "float16" then
          for _, v in ipairs{va, vb, vc} do for i = 1, n do v[i] = gpu.float16(v[i]).value end end
        end
      end
      local a, b, c = upload(va, t), upload(vb, t), upload(vc, t)
      local got = {
        clip = ga.clip(a, b, c), fmax = ga.fmax(a, b), fmin = ga.fmin(a, b),
        isnan = ga.isnan(a), isinf = ga.isinf(a), isfinite = ga.isfinite(a),
        sign = t ~= "bool" and ga.sign(a) or nil,
      }
      local operands = {clip = {va, vb, vc}, fmax = {va, vb}, fmin = {va, vb}}
      for op, r in pairs(got) do
        local vs = operands[op] or {va}
        local types, names = {}, {}
        for k = 1, #vs do types[k], names[k] = t, "x" .. k end
        local rt = select(2, operators.expression(op, types, names))
        assert.are.equal(rt, r.dtype, op)
        local h = r:get()
        for i = 1, n do
          local args = {}
          for k, v in ipairs(vs) do args[k] = v[i] end
          R.check(R.apply(op, types, args), h[i], rt == "float16" and "float32" or rt,
                  ("%s(%s) #%d"):format(op, t, i))
        end
      end
    end
    -- clip with number bounds (weak, NEP 50), a broadcast bound, out and the method form
    local v = R.random_values("float32", 20)
    local x = upload(v, "float32"):reshape(4, 5)
    local clipped = x:clip(-2, 2.5)
    assert.are.equal("float32", clipped.dtype)
    local h = clipped:get()
    for i = 1, 20 do
      R.check(R.apply("clip", {"float32", "weak-int", "weak-float"}, {v[i], -2, 2.5}), h[i], "float32", "clip #" .. i)
    end
    local lows = {-1, -2, -3, -4, -5}
    local out = gpu.empty({4, 5}, "float64")
    assert.are.equal(out, ga.clip(x, upload(lows, "int32"), 3, {out = out}))
    h = out:get()
    for i = 1, 20 do
      R.check(R.apply("clip", {"float32", "int32", "weak-int"}, {v[i], lows[(i - 1) % 5 + 1], 3}),
              h[i], "float64", "clip broadcast #" .. i)
    end
    -- uint8 clipped by Lua integers stays uint8; traced in gpu.fuse
    local u = upload({0, 7, 200, 255, 13}, "uint8")
    local cu = ga.clip(u, 10, 200)
    assert.are.equal("uint8", cu.dtype)
    assert.are.same({10, 10, 200, 200, 13}, cu:get():totable())
    local relu6 = gpu.fuse(function(y) return ga.where(ga.isnan(y), 0, ga.clip(y, 0, 6)) end)
    local fv = {-3.5, 0 / 0, 2.25, 7, 1 / 0, -1 / 0}
    assert.are.same({0, 0, 2.25, 6, 6, 0}, relu6(upload(fv, "float64")):get():totable())
    -- complex: isnan and isinf look at both parts; sign is z / |z|, 0 for 0, the unit along
    -- a single infinite part (NumPy 2's, checked against NumPy 2.5)
    local inf, nan = 1 / 0, 0 / 0
    local zs = {{3, 4}, {0, 0}, {inf, nan}, {0, -2}, {inf, 1}, {1, -inf}, {inf, inf}, {nan, 1},
                {nan, -inf}, {1e308, 1e308}}
    for i, p in ipairs(zs) do zs[i] = gpu.complex(p[1], p[2]) end
    local z = gpu.to_gpu(gpu.host.from_table(zs, "complex128"))
    local t, f = true, false
    assert.are.same({f, f, t, f, f, f, f, t, t, f}, ga.isnan(z):get():totable())
    assert.are.same({f, f, t, f, t, t, t, f, t, f}, ga.isinf(z):get():totable())
    assert.are.same({t, t, f, t, f, f, f, f, f, t}, ga.isfinite(z):get():totable())
    local signs = ga.sign(z)
    assert.are.equal("complex128", signs.dtype)
    local sz = signs:get()
    local r2 = math.sqrt(0.5)
    local want = {{0.6, 0.8}, {0, 0}, {1, 0}, {0, -1}, {1, 0}, {0, -1}, {nan, nan}, {nan, nan}, {0, -1},
                  {r2, r2}}
    for i, w in ipairs(want) do
      R.check(w[1], sz[i].re, "float64", "sign re #" .. i)
      R.check(w[2], sz[i].im, "float64", "sign im #" .. i)
    end
  end)

  it("clip, sign, fmax and fmin refuse what NumPy refuses, by argument", function()
    local ga = gpu.gpuarray
    helpers.assert_error("bad argument #3 to 'clip' (GPUArray or number expected, got nil)",
                         ga.clip, 1.5, 0)
    local _, why, bad = operators.try_expression("clip", {"float32", "complex64", "float32"}, {"a", "b", "c"})
    assert.are.equal("clip is not defined for complex operands (complex64)", why)
    assert.are.equal(2, bad)
    assert.are.equal("sign is not defined for bool operands",
                     select(2, operators.try_expression("sign", {"bool"}, {"a"})))
    assert.are.equal("fmax is not defined for complex operands (complex64 and float32)",
                     select(2, operators.try_expression("fmax", {"complex64", "float32"}, {"a", "b"})))
    helpers.assert_error("bad argument #2 to 'isnan' (unknown option 'stream_')",
                         ga.isnan, nil, {stream_ = 1})
    helpers.assert_error("bad argument #4 to 'clip' (unknown option 'axis')",
                         ga.clip, nil, 0, 1, {axis = 1})
  end)

  it("if_positive refuses a complex criterion, by argument", function()
    local e, why, bad = operators.try_expression("if_positive", {"complex64", "float32", "float32"}, {"c", "x", "y"})
    assert.is_nil(e)
    assert.are.equal("if_positive is not defined for a complex criterion (complex64)", why)
    assert.are.equal(1, bad)
  end)
end)
