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

  it("if_positive refuses a complex criterion, by argument", function()
    local e, why, bad = operators.try_expression("if_positive", {"complex64", "float32", "float32"}, {"c", "x", "y"})
    assert.is_nil(e)
    assert.are.equal("if_positive is not defined for a complex criterion (complex64)", why)
    assert.are.equal(1, bad)
  end)
end)
