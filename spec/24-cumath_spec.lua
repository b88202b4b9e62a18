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

describe("cumath kernels (CPU: NVRTC only)", function()
  it("compile for float32, float64 and integer inputs", function()
    local list = {}
    local names = {}
    for name in pairs(lua_math) do names[#names + 1] = name end
    table.sort(names)                      -- one source each run, so the disk cache hits
    for _, name in ipairs(names) do
      for _, t in ipairs{"float32", "float64", "int16", "int32"} do
        local e, rt = operators.expression(name, {t}, {"a"})
        list[#list + 1] = {ew.program{expr = e, out = rt, name = name .. "_" .. t,
                                      operands = {{name = "a", dtype = t}}}, t == "float32" and "s2" or "c"}
      end
    end
    for _, t in ipairs{"float32", "float64", "int32"} do
      local e, rt = operators.expression("fmod", {t, t}, {"a", "b"})
      list[#list + 1] = {ew.program{expr = e, out = rt, name = "fmod_" .. t,
        operands = {{name = "a", dtype = t}, {name = "b", dtype = t}}}, "c"}
    end
    assert.is_true(#gpu.compile(ew.combined_source(list), {arch = "sm_90", no_extern_c = true}) > 0)
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
end)
