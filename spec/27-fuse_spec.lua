-- gpu.fuse: tracing, the refusals, the generated kernel, and results against the CPU.

local helpers = require "helpers"
local gpu = helpers.gpu
local fuse = require "gpu.fuse"
local gpu_it, assert_error = helpers.gpu_it, helpers.assert_error

local function trace(fn, ...) return fuse.trace(fn, {...}) end

describe("gpu.fuse tracing", function()
  it("records operators, constants and inputs as a tree", function()
    local r = trace(function(x, y) return 2 * x + y / 3 end, {dtype = "float32"}, {dtype = "int32"})
    assert.are.equal(1, r.n)
    local top = r[1]
    assert.are.equal("add", rawget(top, "op"))
    local left, right = rawget(top, "args")[1], rawget(top, "args")[2]
    assert.are.equal("mul", rawget(left, "op"))
    assert.are.equal(2, rawget(rawget(left, "args")[1], "value"))
    assert.are.equal(1, rawget(rawget(left, "args")[2], "index"))
    assert.are.equal("div", rawget(right, "op"))
    assert.are.equal("int32", rawget(rawget(right, "args")[1], "dtype"))
  end)

  it("records comparisons, astype and every operator", function()
    local r = trace(function(x, y)
      return x:lt(y), x:astype("float64"), -x, ~x, x // y, x % y, x ^ 2, x & y, x | y, x ~ y,
             x << 1, x >> 1, x - y
    end, {dtype = "int32"}, {dtype = "int32"})
    local ops = {}
    for i = 1, r.n do ops[i] = rawget(r[i], "op") end
    assert.are.same({"lt", "astype", "neg", "bnot", "floordiv", "mod", "pow", "band", "bor",
                     "bxor", "shl", "shr", "sub"}, ops)
    assert.are.equal("float64", rawget(r[2], "dtype"))
  end)

  it("refuses what cannot be fused, saying what", function()
    local x = {dtype = "float32"}
    assert_error("gpu.fuse: cannot fuse ':get()' (it reads array values on the host)",
                 trace, function(a) return a:get() end, x)
    assert_error("gpu.fuse: cannot fuse indexing a traced array (element values are not known while tracing)",
                 trace, function(a) return a[1] end, x)
    assert_error("gpu.fuse: cannot fuse '<' on traced arrays (Lua comparisons steer control flow by array values; use x:lt(y) and gpuarray.where)",
                 trace, function(a, b) if a < b then return a end return b end, x, x)
    assert_error("gpu.fuse: cannot fuse '==' on traced arrays (use x:eq(y))",
                 trace, function(a, b) return a == b and a or b end, x, x)
    assert_error("gpu.fuse: cannot fuse '#' on a traced array (its size is not known while tracing)",
                 trace, function(a) return #a end, x)
    assert_error("gpu.fuse: cannot fuse tostring() of a traced array (values are not known while tracing)",
                 trace, function(a) return tostring(a) end, x)
    assert_error("gpu.fuse: cannot fuse ':sum' on a traced array (only operators, comparisons and astype trace)",
                 trace, function(a) return a:sum() end, x)
    assert_error("gpu.fuse: cannot fuse a function that returns nothing", trace, function() end, x)
    assert_error("gpu.fuse: cannot fuse a function whose result #1 is a number, not an expression of its arrays",
                 trace, function() return 1 end, x)
    assert_error("gpu.fuse: cannot fuse 'add' on a table (only traced arrays and Lua numbers can be combined)",
                 trace, function(a) return a + {} end, x)
  end)

  it("checks its arguments", function()
    assert_error("bad argument #1 to 'fuse' (function expected, got number)", gpu.fuse, 1)
    assert_error("bad argument #2 to 'fuse' (kernel name must be a C identifier)",
                 gpu.fuse, function() end, "not a name")
    local f = gpu.fuse(function(x) return x end)
    assert_error("bad argument #1 to 'fused' (GPUArray or number expected, got string)", f, "x")
    assert_error("bad argument #1 to 'fused' (at least one GPUArray argument expected)", f, 1)
  end)
end)

describe("gpu.fuse code generation", function()
  local ew = require "gpu.elementwise"

  local function spec_for(fn, inputs)
    return fuse.program_spec(fuse.trace(fn, inputs)[1], inputs, "fused")
  end

  it("computes each traced value once, in one __device__ function", function()
    local inputs = {{dtype = "float32"}, {dtype = "float32"}}
    local spec = spec_for(function(x, y) local t = x + y; return t * t end, inputs)
    assert.are.equal("fused_expr(in1, in2)", spec.expr)
    assert.are.equal("float32", spec.out)
    local _, adds = spec.preamble:gsub(" %+ ", "")
    assert.are.equal(1, adds)
  end)

  it("follows the operators' type promotion, with Lua numbers as weak scalars", function()
    local f32, i32 = {dtype = "float32"}, {dtype = "int32"}
    assert.are.equal("float32", spec_for(function(x) return 2 * x + 0.5 end, {f32}).out)
    assert.are.equal("float64", spec_for(function(x, y) return x + y end, {f32, i32}).out)
    assert.are.equal("float64", spec_for(function(y) return y / 2 end, {i32}).out)
    assert.are.equal("int32", spec_for(function(y) return y // 2 end, {i32}).out)
    assert.are.equal("bool", spec_for(function(x, y) return x:lt(y) end, {f32, i32}).out)
    assert.are.equal("float64", spec_for(function(x, s) return x * s end, {i32, {scalar = "float"}}).out)
  end)

  it("generates kernels NVRTC compiles, contiguous and strided", function()
    local inputs = {{dtype = "float32"}, {dtype = "int32"}, {scalar = "float"}}
    local p = ew.program(spec_for(function(x, y, s)
      local t = 2 * x + 3 * y
      return gpu.gpuarray.where(x:lt(y), t * t, gpu.cumath.sqrt(x) + s)
    end, inputs))
    for _, layout in ipairs {"c", "s2"} do
      local image = gpu.compile(ew.source(p, layout), {arch = "sm_90", no_extern_c = true})
      assert.is_true(#image > 0)
    end
  end)

  it("refuses a result that does not depend on the arrays", function()
    assert_error("gpu.fuse: cannot fuse a function whose result does not depend on its array arguments",
                 spec_for, function(x) return x * 0 + 1 - x * 0 end, {{scalar = "int"}})
  end)
end)

describe("gpu.fuse on the device", function()
  local function host_values(a)
    local h = a:get()
    local t = {}
    for i = 1, #h do t[i] = h[i] end
    return t
  end

  gpu_it("runs 2*x + 3*y as one kernel, matching the CPU, compiled once per signature", function()
    local n = 100003
    local xs, ys = helpers.random_floats(n, 10), helpers.random_floats(n, 10)
    local x, y = gpu.to_gpu(xs, "float32"), gpu.to_gpu(ys, "float32")
    local axpby = gpu.fuse(function(a, b) return 2 * a + 3 * b end)
    local z = axpby(x, y)
    assert.are.equal("float32", z.dtype)
    assert.are.same({n}, z.shape)
    local got = host_values(z)
    for i = 1, n do
      local want = helpers.f32(helpers.f32(2 * helpers.f32(xs[i])) + helpers.f32(3 * helpers.f32(ys[i])))
      helpers.assert_close(want, got[i], 1e-6, "element " .. i)
    end
    local kernel_cache = require "gpu.kernel_cache"
    local before = kernel_cache.compiles
    axpby(y, x)
    assert.are.equal(before, kernel_cache.compiles)
    axpby(gpu.to_gpu(helpers.random_integers(n, -5, 5), "int32"), y)   -- a new signature
    assert.are.equal(before + 1, kernel_cache.compiles)
  end)

  gpu_it("mixes dtypes, broadcasts, reads strided views and writes to out", function()
    local rows, cols = 37, 53
    local xs = helpers.random_floats(rows * cols, 4)
    local ys = helpers.random_integers(cols, -100, 100)
    local x = gpu.to_gpu(xs, "float64"):reshape(rows, cols)
    local y = gpu.to_gpu(ys, "int32")
    local f = gpu.fuse(function(a, b, s)
      local t = a * b - s
      return gpu.gpuarray.where(t:gt(0), t, -t) + gpu.cumath.sqrt(gpu.gpuarray.abs(a))
    end)
    local out = gpu.gpuarray.empty({rows, cols}, "float64")
    local r = f(x, y, 1.5, {out = out})
    assert.are.equal(out, r)
    local got = host_values(out)
    for i = 1, rows do
      for j = 1, cols do
        local a, b = xs[(i - 1) * cols + j], ys[j]
        local t = a * b - 1.5
        local want = (t > 0 and t or -t) + math.sqrt(math.abs(a))
        helpers.assert_close(want, got[(i - 1) * cols + j], 1e-12, ("element %d,%d"):format(i, j))
      end
    end
    -- a strided view (every other row) as an input
    local every_other = x:slice(1, rows, 2)
    local g = gpu.fuse(function(a) return a * a end)
    local sq = host_values(g(every_other))
    for k = 1, #sq do
      local i, j = 2 * ((k - 1) // cols) + 1, (k - 1) % cols + 1
      local a = xs[(i - 1) * cols + j]
      helpers.assert_close(a * a, sq[k], 1e-12, "strided element " .. k)
    end
  end)

  gpu_it("returns one array per result, and integer results are exact", function()
    local n = 4099
    local xs, ys = helpers.random_integers(n, -1000, 1000), helpers.random_integers(n, 1, 50)
    local x, y = gpu.to_gpu(xs, "int32"), gpu.to_gpu(ys, "int32")
    local q, r = gpu.fuse(function(a, b) return a // b, a % b end)(x, y)
    local qs, rs = host_values(q), host_values(r)
    for i = 1, n do
      assert.are.equal(xs[i] // ys[i], qs[i])
      assert.are.equal(xs[i] % ys[i], rs[i])
    end
  end)

  gpu_it("fuses float16 and bfloat16 arrays (computed in float, rounded on store)", function()
    for _, dtype in ipairs{"float16", "bfloat16"} do
      local n = 1001
      local xs = helpers.random_integers(n, -60, 60)   -- 2x + 1.5 is exact in both types
      local r = gpu.fuse(function(x, s) return 2 * x + s end)(gpu.to_gpu(xs, dtype), 1.5)
      assert.are.equal(dtype, r.dtype)
      local rs = host_values(r)
      for i = 1, n do assert.are.equal(2 * xs[i] + 1.5, rs[i], dtype) end
    end
  end)

  gpu_it("refuses a raw kernel call inside the function, saying so", function()
    local mod = gpu.SourceModule("__global__ void k(float *p) {}")
    local f = gpu.fuse(function(a) mod.k(a, {block = 1}); return a end)
    local err = helpers.error_of(f, gpu.to_gpu({1, 2}, "float32"))
    assert.is_truthy(err:find("^gpu.fuse: cannot trace the function: "), err)
  end)
end)
