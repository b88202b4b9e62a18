-- gpu.ElementwiseKernel: PyCUDA's argument strings, ranges and streams.
local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"

describe("ElementwiseKernel (CPU)", function()
  it("parses PyCUDA argument strings", function()
    local args = ew.parse_arguments("const float *x, double a, unsigned int n, long long *__restrict__ z")
    assert.are.same({"x", "float32", true}, {args[1].name, args[1].dtype, args[1].pointer})
    assert.are.same({"a", "float64", false}, {args[2].name, args[2].dtype, args[2].pointer})
    assert.are.same({"n", "uint32", false}, {args[3].name, args[3].dtype, args[3].pointer})
    assert.are.same({"z", "int64", true}, {args[4].name, args[4].dtype, args[4].pointer})
  end)

  it("compiles its kernel, with a preamble", function()
    local k = gpu.ElementwiseKernel("float *x, float *y, float a, float *z",
                                    "z[i] = twice(a) * x[i] + y[i]", "axpy",
                                    {preamble = "__device__ float twice(float v) { return 2 * v; }"})
    assert.matches('extern "C" __global__ void axpy(float *x, float *y, float a, float *z, ' ..
                   'long long lg_start, long long lg_step, long long lg_n)', k.source, 1, true)
    assert.is_true(#gpu.compile(k.source, {arch = "sm_90", no_extern_c = true}) > 0)
  end)

  it("rejects bad declarations and options", function()
    helpers.assert_error("bad argument #1 to 'ElementwiseKernel' (unknown type 'flaot' in 'flaot *x')",
                         gpu.ElementwiseKernel, "flaot *x", "x[i] = 0")
    helpers.assert_error("bad argument #1 to 'ElementwiseKernel' (argument name 'lg_n' is reserved)",
                         gpu.ElementwiseKernel, "int *lg_n", "lg_n[i] = 0")
    helpers.assert_error("bad argument #4 to 'ElementwiseKernel' (unknown option 'preambel')",
                         gpu.ElementwiseKernel, "int *x", "x[i] = 0", "k", {preambel = ""})
    helpers.assert_error("bad argument #3 to 'ElementwiseKernel' (name must be a C identifier, got 1k)",
                         gpu.ElementwiseKernel, "int *x", "x[i] = 0", "1k")
  end)

  -- A call's C path (core.elementwise_caller) takes only plain arrays of the declared dtypes and
  -- numbers; it hands everything else, untouched, to the general path, and never compiles then.
  it("hands a call that is not all plain arrays and numbers to the general path", function()
    local core = require "gpu.core"
    local seen = {}
    local function compile() error("compile must not be reached") end
    local function general(...) seen[#seen + 1] = {n = select("#", ...), ...}; return "general", 2 end
    local call = core.elementwise_caller({{dtype = "float32", pointer = true}, {dtype = "int32"}},
                                         compile, general, 256, 1024)
    local t = {}
    assert.are.same({"general", 2}, {call(t, 1, 2)})
    assert.are.same({"general", 2}, {call(t, "x", 2, {stream = 1})})
    assert.are.same({"general", 2}, {call(t)})
    assert.are.same({{n = 3, t, 1, 2}, {n = 4, t, "x", 2, {stream = 1}}, {n = 1, t}}, seen)
    helpers.assert_error("bad argument #1 to 'elementwise_caller' (unknown dtype in the arguments)",
                         function() core.elementwise_caller({{dtype = "float31"}}, compile, general, 1, 1) end)
    helpers.assert_error("bad argument #1 to 'elementwise_caller' (a list of {dtype =, pointer =} expected)",
                         function() core.elementwise_caller({1}, compile, general, 1, 1) end)
    helpers.assert_error("bad argument #4 to 'elementwise_caller' (threads per block must be from 1 to 1024)",
                         function() core.elementwise_caller({}, compile, general, 0, 1) end)
    -- more arguments than the C path holds (64): every call takes the general path
    local many = {}
    for i = 1, 70 do many[i] = {dtype = "float32", pointer = true} end
    local wide = core.elementwise_caller(many, compile, general, 256, 1024)
    local args = {}
    for i = 1, 70 do args[i] = i end
    assert.are.same({"general", 2}, {wide(t, table.unpack(args))})
  end)
end)

describe("ElementwiseKernel", function()
  helpers.gpu_it("runs over all elements, a range, and on a stream", function()
    local n = 1000
    local xv, yv = helpers.random_floats(n, 3), helpers.random_floats(n, 3)
    local x = gpu.to_gpu(gpu.host.from_table(xv, "float32"))
    local y = gpu.to_gpu(gpu.host.from_table(yv, "float32"))
    local z = gpu.zeros(n, "float32")
    local lin = gpu.ElementwiseKernel("float a, float *x, float b, float *y, float *z",
                                      "z[i] = a*x[i] + b*y[i]", "linear_combination")
    lin(2, x, 3, y, z)
    local h = z:get()
    local f32 = helpers.f32
    for i = 1, n do
      helpers.assert_close(f32(f32(2 * f32(xv[i])) + f32(3 * f32(yv[i]))), h[i], 1e-6, "z #" .. i)
    end
    z:fill(0)
    local s = gpu.Stream()
    lin(2, x, 3, y, z, {range = {11, 20, 3}, stream = s})
    s:synchronize()
    h = z:get()
    for i = 1, n do
      local hit = i >= 11 and i <= 20 and (i - 11) % 3 == 0
      if not hit then assert.are.equal(0, h[i], "untouched #" .. i) else assert.are_not.equal(0, h[i]) end
    end
    -- ranges read like slice: negatives count from the end, a negative step runs downward
    for _, case in ipairs{{{-10, -1, 4}, {n - 9, n - 5, n - 1}}, {{20, 11, -3}, {11, 14, 17, 20}},
                          {{-1, -3, -1}, {n - 2, n - 1, n}}, {{5, 4}, {}}} do
      z:fill(0)
      lin(2, x, 3, y, z, {range = case[1]})
      h = z:get()
      local hits = {}
      for _, i in ipairs(case[2]) do hits[i] = true end
      for i = 1, n do
        if hits[i] then
          helpers.assert_close(f32(f32(2 * f32(xv[i])) + f32(3 * f32(yv[i]))), h[i], 1e-6, "hit #" .. i)
        else
          assert.are.equal(0, h[i], "untouched #" .. i)
        end
      end
    end
    local idx = gpu.ElementwiseKernel("long long *out", "out[i] = i")
    local o = gpu.empty(5, "int64")
    idx(o)
    assert.are.same({0, 1, 2, 3, 4}, o:get():totable())
  end)

  helpers.gpu_it("takes non-contiguous views, in their row-major order, and writes them back", function()
    local mv = helpers.random_floats(6 * 5, 4)
    local m = gpu.to_gpu(gpu.host.from_table(mv, "float32")):reshape(6, 5)
    local t = m:transpose()                        -- 5 x 6; element (r, c) is m[c][r]
    local out = gpu.zeros({6, 5}, "float32")
    local out_t = out:transpose()                  -- written through a view
    local k = gpu.ElementwiseKernel("const float *x, float *y", "y[i] = 2.0f * x[i] + i", "twice_plus_i")
    k(t, out_t)
    local f32 = helpers.f32
    local h = out:get()                            -- out[c][r] = out_t[r][c]
    for r = 1, 5 do
      for c = 1, 6 do
        local i = (r - 1) * 6 + c                  -- 1-based row-major position in t and out_t
        local want = f32(f32(2 * f32(mv[(c - 1) * 5 + r])) + (i - 1))
        helpers.assert_close(want, h[(c - 1) * 5 + r], 1e-6, ("(%d, %d)"):format(r, c))
      end
    end
    -- a view declared const is not copied back, so it may alias what the kernel writes
    local double = gpu.ElementwiseKernel("const float *x, float *y", "y[i] = 2.0f * x[i]", "double_into")
    double(t, m)                                   -- m's row-major element i = 2 * t's i-th
    local hm = m:get():totable()
    for r = 1, 5 do
      for c = 1, 6 do
        local i = (r - 1) * 6 + c
        local row, col = (i - 1) // 5 + 1, (i - 1) % 5 + 1
        assert.are.equal(f32(2 * f32(mv[(c - 1) * 5 + r])), hm[row][col], ("aliased #%d"):format(i))
      end
    end
    -- every other element of a vector, in place, with a range over the view
    local v = gpu.zeros(10, "float32")
    local odd = v:slice(1, -1, 2)                  -- elements 1, 3, 5, 7, 9
    local set = gpu.ElementwiseKernel("float *p", "p[i] = i + 1", "set_position")
    set(odd, {range = {2, 4}})
    assert.are.same({0, 0, 2, 0, 3, 0, 4, 0, 0, 0}, v:get():totable())
  end)

  helpers.gpu_it("checks its arguments", function()
    local k = gpu.ElementwiseKernel("float *x, int n", "x[i] = n", "setn")
    local a = gpu.zeros(4, "float64")
    helpers.assert_error("bad argument #1 to 'setn' (expected a float32 array, got float64)", k, a, 1)
    local f = gpu.zeros(4, "float32")
    helpers.assert_error("bad argument #2 to 'setn' (2.5 is not an integer (for int32))", k, f, 2.5)
    helpers.assert_error("bad argument #3 to 'setn' (range step must not be 0)", k, f, 1, {range = {1, 4, 0}})
    helpers.assert_error("bad argument #3 to 'setn' (range {1, 5} reaches outside the arrays (size 4))",
                         k, f, 1, {range = {1, 5}})
    helpers.assert_error("bad argument #3 to 'setn' (range {-5, -1} reaches outside the arrays (size 4))",
                         k, f, 1, {range = {-5, -1}})
    helpers.assert_error("bad argument #3 to 'setn' (range {0, 2} reaches outside the arrays (size 4))",
                         k, f, 1, {range = {0, 2}})
    local fill = gpu.ElementwiseKernel("int *p, int v", "p[i] = v", "fillv")
    local raw = gpu.mem_alloc(16)
    helpers.assert_error("bad argument #3 to 'fillv' (range {-2, -1} counts from the end, but no "
                         .. "array argument has a size)", fill, raw, 1, {range = {-2, -1}})
    helpers.assert_error("kernel 'setn' takes 2 arguments, got 1", k, f)
    helpers.assert_error("bad argument #2 to 'setn' (3000000000 is out of range for int32)", k, f, 3000000000)
    helpers.assert_error("bad argument #2 to 'setn' (expected a number, got string)", k, f, "1")
    local unsigned = gpu.ElementwiseKernel("float *x, unsigned long long n", "x[i] = n", "setu")
    helpers.assert_error("bad argument #2 to 'setu' (-1 is out of range for uint64)", unsigned, f, -1)
    f:free()
    helpers.assert_error("bad argument #1 to 'setn' (array has been freed)", k, f, 1)
  end)

  -- Plain arrays and numbers take the C path; the same call with an options table takes the
  -- general one.  Both must write the same bytes, for every kind of scalar parameter.
  helpers.gpu_it("gives the general path's bytes for plain arrays and numbers, and compiles once", function()
    local kernel_cache = require "gpu.kernel_cache"
    local k = gpu.ElementwiseKernel(
      "double *out, const float *x, const int *m, float a, int b, unsigned long long c, bool d, " ..
      "signed char e, double f, short *h",
      "out[i] = (double)a * x[i] + (double)b * m[i] + (double)c + (d ? 0.5 : 0.25) + e + f; " ..
      "h[i] = (short)(x[i] * a)",
      "mix")
    local n = 3001
    local x = gpu.to_gpu(helpers.random_floats(n, 4), "float32")
    local m = gpu.to_gpu(helpers.random_integers(n, -100, 100), "int32")
    local s = gpu.Stream()
    local bytes = {}
    for _, scalars in ipairs{{1.5, -3, 7, true, -128, 2.25}, {-0.75, 2147483647, 2^53, false, 127, -1e300},
                             {3, 0, 0, 1, 0, 0}} do
      local out1, out2 = gpu.empty(n, "float64"), gpu.empty(n, "float64")
      local h1, h2 = gpu.empty(n, "int16"), gpu.empty(n, "int16")
      local a, b, c, d, e, f = table.unpack(scalars)
      k(out1, x, m, a, b, c, d, e, f, h1)
      k(out2, x, m, a, b, c, d, e, f, h2, {stream = s})
      s:synchronize()
      assert.are.equal(out2:get():bytes(), out1:get():bytes())
      assert.are.equal(h2:get():bytes(), h1:get():bytes())
      bytes[#bytes + 1] = out1:get():bytes()
      local hx, hm, ho = x:get(), m:get(), out1:get()
      for i = 1, n, 97 do
        local want = helpers.f32(a) * hx[i] + b * hm[i] + c + ((d == true or d == 1) and 0.5 or 0.25) + e + f
        helpers.assert_close(want, ho[i], 1e-12, "element " .. i)
      end
    end
    assert.are_not.equal(bytes[1], bytes[2])
    local compiles = kernel_cache.compiles
    local out, h = gpu.empty(n, "float64"), gpu.empty(n, "int16")
    for _ = 1, 5 do k(out, x, m, 1, 2, 3, true, 4, 5, h) end
    assert.are.equal(compiles, kernel_cache.compiles)
    -- a view (written back), an array of another dtype and a whole float for an integer
    local every_other = gpu.zeros(2 * n, "float64"):slice(1, 2 * n, 2)
    k(every_other, x, m, 1, 2, 3, true, 4, 5, h)
    assert.are.equal(out:get():bytes(), every_other:get():bytes())
    helpers.assert_error("bad argument #2 to 'mix' (expected a float32 array, got float64)",
                         k, out, out, m, 1, 2, 3, true, 4, 5, h)
    local whole = gpu.empty(n, "float64")
    k(whole, x, m, 1, 2.0, 3.0, 1, 4.0, 5, h)
    assert.are.equal(out:get():bytes(), whole:get():bytes())
  end)
end)
