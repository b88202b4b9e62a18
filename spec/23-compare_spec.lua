-- Comparisons (bool arrays), where, maximum, minimum, abs.
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
end)
