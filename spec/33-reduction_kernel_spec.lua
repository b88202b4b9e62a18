-- gpu.ReductionKernel: PyCUDA-style custom reductions.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu

local minmax_preamble = "struct minmax_t { float lo, hi; };"

local function minmax_kernel()
  return gpu.ReductionKernel({ctype = "minmax_t", itemsize = 8}, "minmax_t{3.0e38f, -3.0e38f}",
                             "minmax_t{fminf(a.lo, b.lo), fmaxf(a.hi, b.hi)}", "minmax_t{x[i], x[i]}",
                             "const float *x", {preamble = minmax_preamble, name = "minmax"})
end

describe("ReductionKernel", function()
  it("compiles scalar and struct reductions", function()
    local dot = gpu.ReductionKernel("float32", "0", "a + b", "x[i] * y[i] * scale",
                                    "const float *x, const float *y, float scale")
    assert.is_true(#gpu.compile(dot.source, {arch = "sm_90", no_extern_c = true}) > 0)
    assert.is_true(#gpu.compile(minmax_kernel().source, {arch = "sm_90", no_extern_c = true}) > 0)
    local count = gpu.ReductionKernel("int64", 0, "a + b", "x[i] > 0", "const double *x")
    assert.is_true(#gpu.compile(count.source, {arch = "sm_90", no_extern_c = true}) > 0)
  end)

  it("checks its arguments", function()
    helpers.assert_error("bad argument #1 to 'ReductionKernel' (unknown dtype 'float')",
                         gpu.ReductionKernel, "float", "0", "a+b", "x[i]", "float *x")
    helpers.assert_error("bad argument #2 to 'ReductionKernel' (neutral must be a C expression string "
                         .. "or a number, got nil)", gpu.ReductionKernel, "float32", nil, "a+b", "x[i]", "float *x")
    helpers.assert_error("bad argument #5 to 'ReductionKernel' (arguments declare no array (pointer) to "
                         .. "reduce over)", gpu.ReductionKernel, "float32", "0", "a+b", "n", "int n")
    helpers.assert_error("bad argument #6 to 'ReductionKernel' (unknown option 'preamable')",
                         gpu.ReductionKernel, "float32", "0", "a+b", "x[i]", "float *x", {preamable = ""})
    helpers.assert_error("bad argument #1 to 'ReductionKernel' (float16 is a storage type here: reduce in "
                         .. "float32 instead)", gpu.ReductionKernel, "float16", "0", "a+b", "x[i]", "float *x")
    helpers.assert_error("bad argument #3 to 'ReductionKernel' (reduce_expr must be a string, got number)",
                         gpu.ReductionKernel, "float32", "0", 1, "x[i]", "float *x")
  end)

  it("reports compile errors with NVRTC's log", function()
    local bad = gpu.ReductionKernel("float32", "0", "a +* b", "x[i]", "const float *x")
    local ok, err = pcall(gpu.compile, bad.source, {arch = "sm_90", no_extern_c = true})
    assert.is_false(ok)
    assert.is_true(gpu.Error.is(err))
    assert.is_truthy(err.log:find("error"))
  end)

  helpers.gpu_it("computes scaled dot products at block-boundary sizes", function()
    local dot = gpu.ReductionKernel("float64", "0", "a + b", "x[i] * y[i] * scale",
                                    "const double *x, const double *y, double scale")
    -- up to 2048 elements (8 a thread) a call is one block's: both sides of that too
    local sizes = {2047, 2048, 2049}
    for _, n in ipairs(R.sizes) do sizes[#sizes + 1] = n end
    for _, n in ipairs(sizes) do
      local x, xv = R.generate(n, "float64", function() return math.random() * 2 - 1 end)
      local y, yv = R.generate(n, "float64", function() return math.random() * 2 - 1 end)
      local ref, abs = 0, 0
      for i = 1, n do
        ref = ref + xv[i] * yv[i] * 0.5
        abs = abs + math.abs(xv[i] * yv[i] * 0.5)
      end
      local r = dot(x, y, 0.5)
      assert.are.equal(0, r.ndim)
      assert.are.equal("float64", r.dtype)
      local got = R.value(r)
      assert(math.abs(got - ref) <= 1e-13 * (abs + 1), ("n = %d: %.17g vs %.17g"):format(n, got, ref))
    end
  end)

  helpers.gpu_it("reduces to structs declared in the preamble", function()
    local k = minmax_kernel()
    for _, n in ipairs{1, 33, 257, 100001} do
      local x, xv = R.generate(n, "float32", function() return math.random() * 200 - 100 end)
      local lo, hi = math.huge, -math.huge
      for i = 1, n do lo, hi = math.min(lo, xv[i]), math.max(hi, xv[i]) end
      local r = k(x)
      assert.are.same({8}, r.shape)
      local glo, ghi = string.unpack("ff", R.get(r):bytes())
      assert.are.equal(lo, glo)
      assert.are.equal(hi, ghi)
    end
    local count = gpu.ReductionKernel("int64", 0, "a + b", "x[i] > 0", "const double *x")
    local s <close> = gpu.Stream()
    local x, xv = R.generate(5000, "float64", function() return math.random() - 0.5 end)
    local want = 0
    for _, v in ipairs(xv) do if v > 0 then want = want + 1 end end
    local r = count(x, {stream = s})
    s:synchronize()
    assert.are.equal(want, R.value(r))
  end)

  helpers.gpu_it("reduces non-contiguous views in their row-major order", function()
    local dot = gpu.ReductionKernel("float64", "0", "a + b", "x[i] * y[i] * (i + 1)",
                                    "const double *x, const double *y")
    local x, xv = R.generate(3 * 700, "float64", function() return math.random() - 0.5 end)
    local y, yv = R.generate(700, "float64", function() return math.random() - 0.5 end)
    local every = R.every(x, 3)                 -- x[1], x[4], ...: 700 elements, stride 3
    local want, abs = 0, 0
    for i = 1, 700 do
      local term = xv[3 * (i - 1) + 1] * yv[i] * i
      want, abs = want + term, abs + math.abs(term)
    end
    local got = R.value(dot(every, y))
    assert.is_true(math.abs(got - want) <= 1e-12 * abs, ("%.17g vs %.17g"):format(got, want))
    -- a transposed 2-d view
    local m, mv = R.generate(6 * 5, "float64", function() return math.random() - 0.5 end)
    local t = R.transposed(R.reshaped(m, {6, 5}))  -- 5 x 6; row-major element (r, c) is m[c][r]
    local ones = R.to_gpu((function() local o = {} for i = 1, 30 do o[i] = 1 end return o end)(), "float64")
    want, abs = 0, 0
    for r = 1, 5 do
      for c = 1, 6 do
        local i = (r - 1) * 6 + c               -- 1-based row-major position in t
        local term = mv[(c - 1) * 5 + r] * i
        want, abs = want + term, abs + math.abs(term)
      end
    end
    got = R.value(dot(t, ones))
    assert.is_true(math.abs(got - want) <= 1e-12 * abs, ("%.17g vs %.17g"):format(got, want))
  end)

  helpers.gpu_it("rejects bad calls with clear messages", function()
    local k = gpu.ReductionKernel("float32", "0", "a + b", "x[i]", "const float *x", {name = "total"})
    local x = R.to_gpu({1, 2, 3}, "float32")
    helpers.assert_error("'total' takes 1 arguments, got 2", k, x, x)
    helpers.assert_error("bad argument #1 to 'total' (GPUArray expected, got number)", k, 1)
    helpers.assert_error("bad argument #2 to 'total' (unknown option 'grid')", k, x, {grid = 1})
    assert.are.equal(6, R.value(k(x)))
    x:free()
    helpers.assert_error("bad argument #1 to 'total' (array has been freed)", k, x)
  end)
end)
