-- Typed scalars (gpu.float32(x) and friends, PyCUDA's numpy.float32(x)) wherever a Lua number
-- goes: operators (typed, as NumPy's scalars are: their dtype takes part in promotion),
-- ElementwiseKernel and ReductionKernel arguments, fill, full, element stores and gpu.fuse.
local helpers = require "helpers"
local gpu = helpers.gpu
local f32 = helpers.f32

-- Fresh random float32 values in [-4, 4).
local function random_f32(n)
  return gpu.host.from_table(helpers.random_floats(n, 4), "float32")
end

describe("typed scalars", function()
  it("take part in promotion by their dtype, and pass where numbers do (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local a = ga.zeros(4, "float32")
      print((a * gpu.float32(2)).dtype, (a * gpu.float64(2)).dtype, (gpu.float64(2) - a).dtype)
      print((ga.zeros(2, "int8") + gpu.int32(1000)).dtype, (ga.zeros(2, "uint8") + gpu.int8(-1)).dtype,
            (ga.zeros(2, "int32") + gpu.float32(1.5)).dtype, a:lt(gpu.float64(1)).dtype)
      print(ga.full(3, gpu.float32(2)).dtype, ga.full(3, gpu.uint8(2)).dtype)
      local fused = gpu.fuse(function(x, y) return 2 * x + y end)
      print(fused(a, gpu.float32(2)).dtype, fused(a, gpu.float64(2)).dtype, fused(a, 2).dtype)
      local inner = gpu.fuse(function(x) return x * gpu.float64(0.5) end)
      print(inner(a).dtype)
      local ek = gpu.ElementwiseKernel("float *x, int n", "x[i] = n")
      print((pcall(ek, a, gpu.int32(2))), (pcall(ek, a, gpu.int64(2))))
      print(select(2, pcall(function() ek(a, gpu.float32(2.5)) end)))
      local rk = gpu.ReductionKernel("float32", "0", "a + b", "x[i] * s", "const float *x, float s")
      print((pcall(rk, a, gpu.float32(2))), (pcall(rk, a, gpu.int8(2))))
      a[1] = gpu.int16(7)                -- a store is a copy: the stand-in driver makes it
      print(a[1])
    ]])
    assert.is_truthy(ok, out)
    out = out:gsub("[^\n]*:(%d+): bad argument", "line %1: bad argument")
    assert.are.equal(table.concat({
      "float32\tfloat64\tfloat64",            -- NumPy: float32 scalar * float32 array is float32
      "int32\tint16\tfloat64\tbool",
      "float32\tuint8",
      "float32\tfloat64\tfloat32",            -- one fused kernel per scalar dtype, a Lua number weak
      "float64",
      "true\ttrue",
      "line 14: bad argument #2 to 'kernel' (2.5 is not an integer (for int32))",
      "true\ttrue",
      "7.0",
      "",
    }, "\n"), out)
  end)

  it("stand for their value: a uint64 past 2^63 is not negative, a complex keeps its width", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local f = ga.zeros(2, "float32")
      f[1] = gpu.uint64(-1)                      -- 2^64 - 1, rounded to float32
      print(f[1] == 2.0 ^ 64, pcall(ga.full, 1, gpu.uint64(-1), "int64"))
      local u = ga.zeros(2, "uint64")
      u[1] = gpu.uint64(-1)                      -- the same dtype: its bits, read back as -1
      print(u[1], pcall(function() u[2] = -1.0 end))
      print(pcall(ga.full, 2, -1.0, "uint64"))
      local x32 = ga.zeros(4, "float32")
      local by128 = gpu.fuse(function(x) return x * gpu.complex128(1, 2) end)
      local by64 = gpu.fuse(function(x) return x + gpu.complex64(1, -2) end)
      print(by128(x32).dtype, (x32 * gpu.complex128(1, 2)).dtype, by64(x32).dtype,
            by64(ga.zeros(4, "float64")).dtype)
    ]])
    assert.is_truthy(ok, out)
    out = out:gsub("[^\n\t]*:(%d+): ", "line %1: ")
    assert.are.equal(table.concat({
      "true\tfalse\tline 5: bad argument #2 to 'full' (1.844674407371e+19 is out of range for int64)",
      "-1\tfalse\tline 8: cannot store -1.0 in a uint64 GPUArray: -1.0 is out of range for uint64",
      "false\tline 9: bad argument #2 to 'full' (-1.0 is out of range for uint64)",
      "complex128\tcomplex128\tcomplex64\tcomplex128",
      "",
    }, "\n"), out)
  end)

  helpers.gpu_it("compute as NumPy's scalars do, against a CPU reference", function()
    local n = 1000
    local ha = random_f32(n)
    local a = gpu.to_gpu(ha)
    local s = math.random() * 4 + 0.5
    -- float32 array times a float32 scalar: a float32 product, rounded once
    local product = (a * gpu.float32(s)):get()
    for i = 1, n do assert.are.equal(f32(ha[i] * f32(s)), product[i]) end
    -- a float64 scalar makes the result float64, computed in float64
    local wide = (a * gpu.float64(s)):get()
    assert.are.equal("float64", wide.dtype)
    for i = 1, n do assert.are.equal(ha[i] * s, wide[i]) end
    -- an int8 array plus an int32 scalar too large for int8: an int32 result
    local hb = gpu.host.empty(n, "int8")
    for i = 1, n do hb[i] = math.random(-128, 127) end
    local sums = (gpu.to_gpu(hb) + gpu.int32(1000)):get()
    assert.are.equal("int32", sums.dtype)
    for i = 1, n do assert.are.equal(hb[i] + 1000, sums[i]) end
    -- kernels: a typed scalar of the parameter's dtype goes in as its bytes, another by value
    local scale = gpu.ElementwiseKernel("float *y, const float *x, int k", "y[i] = x[i] * k")
    local y = gpu.empty(n, "float32")
    local k = math.random(2, 9)
    scale(y, a, gpu.int32(k))
    local got = y:get()
    for i = 1, n do assert.are.equal(f32(ha[i] * k), got[i]) end
    scale(y, a, gpu.int64(k + 1))
    got = y:get()
    for i = 1, n do assert.are.equal(f32(ha[i] * (k + 1)), got[i]) end
    local dot_scaled = gpu.ReductionKernel("float64", "0", "a + b", "(double)x[i] * s",
                                           "const float *x, double s")
    local want, want_f32 = 0, 0
    for i = 1, n do
      want = want + ha[i] * s
      want_f32 = want_f32 + ha[i] * f32(s)      -- a float32 scalar: its float32 value, widened
    end
    helpers.assert_close(want, dot_scaled(a, gpu.float64(s)):get()[1], 1e-9, "ReductionKernel")
    helpers.assert_close(want_f32, dot_scaled(a, gpu.float32(s)):get()[1], 1e-9,
                         "ReductionKernel, float32 scalar")
    -- gpu.fuse: a typed argument and a typed constant (a sum, then an exact doubling: no
    -- multiply-add the compiler could contract)
    local twice_sum = gpu.fuse(function(x, t) return (x + t) * gpu.float32(2) end)
    got = twice_sum(a, gpu.float32(s)):get()
    assert.are.equal("float32", got.dtype)
    for i = 1, n do assert.are.equal(f32(ha[i] + f32(s)) * 2, got[i]) end
    -- fill, full and element stores take them as their values
    local filled = gpu.empty(n, "float32"):fill(gpu.float64(s)):get()
    local full = gpu.full(n, gpu.float32(s)):get()
    assert.are.equal("float32", full.dtype)
    for i = 1, n do
      assert.are.equal(f32(s), filled[i])
      assert.are.equal(f32(s), full[i])
    end
    a[7] = gpu.int16(-3)
    assert.are.equal(-3.0, a[7])
  end)

  helpers.gpu_it("store uint64 elements beyond 2^63 as they read back", function()
    local big = math.random(1, 1 << 40) - (1 << 62) * 2     -- a negative Lua integer: >= 2^63
    local a = gpu.to_gpu(gpu.host.from_table({big, 5, 9}, "uint64"))
    a[2] = a[1]
    assert.are.same({big, big, 9}, a:get():totable())
    a:fill(a[3] - 10)                                        -- 2^64 - 1
    assert.are.same({-1, -1, -1}, a:get():totable())
    assert.are.same({big, big}, gpu.full(2, big, "uint64"):get():totable())
    assert.are.same({big}, gpu.full(1, gpu.uint64(big)):get():totable())
    -- into another dtype, a uint64 scalar is the number it stands for, as NumPy's
    local wide = gpu.zeros(3, "float64")
    wide:fill(gpu.uint64(big))
    local unsigned = big + 2.0 ^ 64
    assert.is_true(unsigned > 2.0 ^ 63)
    assert.are.same({unsigned, unsigned, unsigned}, wide:get():totable())
  end)
end)
