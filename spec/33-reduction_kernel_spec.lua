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

-- A ReductionKernel whose declarations all name dtypes is called through a C closure
-- (core.reduction_caller): plain arrays of those dtypes and numbers, the first array of at most
-- one block's elements (256 threads x 8), go to one launch of gpu_reduce_index into a new 0-d
-- result; everything else to the Lua path, which must give the same bytes.
describe("ReductionKernel's one-block C path", function()
  local core = require "gpu.core"

  -- k(...) with the C fast paths off: the Lua path's result
  local function general(k, ...)
    local was = gpu.fast_paths(false)
    local ok, result = pcall(k, ...)
    gpu.fast_paths(was)
    if not ok then error(result, 0) end
    return result
  end

  it("hands what it cannot take to the general path", function()
    local seen = {}
    local function compile() error("compile must not be reached") end
    local function spy(...) seen[#seen + 1] = {n = select("#", ...), ...}; return "general" end
    local declared = {{dtype = "float32", pointer = true}, {dtype = "float32", pointer = false}}
    local call = core.reduction_caller(declared, compile, spy, 256, 8, "float32")
    local t = {}
    assert.are.equal("general", call(t, 1, 2))
    assert.are.equal("general", call(t, "x"))
    assert.are.equal("general", call(t))
    assert.are.equal("general", call(t, t, 2, {stream = 1}))
    assert.are.same({{n = 3, t, 1, 2}, {n = 2, t, "x"}, {n = 1, t}, {n = 4, t, t, 2, {stream = 1}}},
                    seen)
  end)

  it("checks how it is made", function()
    -- luaL_argerror names the function by whichever of its names (gpu.core.reduction_caller,
    -- gpu.reduction_caller) it meets first in package.loaded, an order that varies from run to
    -- run: the messages are compared without the module
    local function assert_made_error(message, ...)
      local err = helpers.error_of(core.reduction_caller, ...)
      assert.are.equal(message, (err:gsub("'gpu%.core%.reduction_caller'", "'reduction_caller'")
                                    :gsub("'gpu%.reduction_caller'", "'reduction_caller'")))
    end
    local function compile() end
    local declared = {{dtype = "float32", pointer = true}}
    assert_made_error("bad argument #6 to 'reduction_caller' (unknown dtype 'float')",
                      declared, compile, compile, 256, 8, "float")
    assert_made_error("bad argument #5 to 'reduction_caller' (elements per thread must be from 1 to 65536)",
                      declared, compile, compile, 256, 0, "float32")
    assert_made_error("bad argument #7 to 'reduction_caller' (the alignment must be positive)",
                      declared, compile, compile, 256, 8, "float32", 0)
    assert_made_error("bad argument #3 to 'reduction_caller' (function expected, got nil)",
                      declared, compile, nil, 256, 8, "float32")
    assert_made_error("bad argument #1 to 'reduction_caller' (unknown dtype in the arguments)",
                      {{dtype = "float"}}, compile, compile, 256, 8, "float32")
  end)

  it("is the call of kernels whose declarations name dtypes only", function()
    local named = gpu.ReductionKernel("float32", "0", "a + b", "x[i] * s", "const float *x, float s")
    local struct = gpu.ReductionKernel({ctype = "minmax_t", itemsize = 8}, "minmax_t{0, 0}",
                                       "a", "minmax_t{x[i], x[i]}", "const float *x",
                                       {preamble = minmax_preamble})
    local unknown = gpu.ReductionKernel("float32", "0", "a + b", "x[i].v", "const cell_t *x",
                                        {preamble = "struct cell_t { float v; };"})
    assert.are.equal("C", debug.getinfo(getmetatable(named).__call, "S").what)
    assert.are.equal("Lua", debug.getinfo(getmetatable(struct).__call, "S").what)
    assert.are.equal("Lua", debug.getinfo(getmetatable(unknown).__call, "S").what)
    for _, k in ipairs{named, struct, unknown} do
      assert.are.equal("gpu.ReductionKernel", tostring(k):match("^[^:]+"))
      assert.are.equal("function", type(k._function))
    end
  end)

  helpers.gpu_it("gives the general path's bytes, and the CPU's values", function()
    local dot = gpu.ReductionKernel("float64", "0", "a + b", "x[i] * y[i] * scale",
                                    "const double *x, const double *y, double scale")
    local count = gpu.ReductionKernel("int64", 0, "a + b", "x[i] > t ? 1 : 0", "const int *x, int t")
    local low = gpu.ReductionKernel("float32", "3.0e38f", "fminf(a, b)", "x[i]", "const float *x")
    for _, n in ipairs{1, 31, 256, 1000, 2047, 2048, 2049, 5000} do
      local x, xv = R.generate(n, "float64", function() return math.random() * 2 - 1 end)
      local y, yv = R.generate(n, "float64", function() return math.random() * 2 - 1 end)
      local scale = math.random() + 0.5
      local want, abs = 0, 0
      for i = 1, n do
        want, abs = want + xv[i] * yv[i] * scale, abs + math.abs(xv[i] * yv[i] * scale)
      end
      local fast = dot(x, y, scale)
      assert.are.equal(0, fast.ndim)
      assert.are.equal("float64", fast.dtype)
      assert.are.equal(R.get(general(dot, x, y, scale)):bytes(), R.get(fast):bytes(), "n = " .. n)
      assert(math.abs(R.value(fast) - want) <= 1e-13 * (abs + 1), ("n = %d"):format(n))

      local ints, iv = R.generate(n, "int32", function() return math.random(-1000, 1000) end)
      local t = math.random(-500, 500)
      local above = 0
      for i = 1, n do if iv[i] > t then above = above + 1 end end
      local counted = count(ints, t)
      assert.are.equal("int64", counted.dtype)
      assert.are.equal(above, R.value(counted), "n = " .. n)
      assert.are.equal(above, R.value(general(count, ints, t)))

      local f, fv = R.generate(n, "float32", function() return math.random() * 2000 - 1000 end)
      local least = math.huge
      for i = 1, n do least = math.min(least, fv[i]) end
      assert.are.equal(least, R.value(low(f)), "n = " .. n)
    end
  end)

  helpers.gpu_it("takes plain arrays of the declared dtypes up to one block, and no more", function()
    local k = gpu.ReductionKernel("float32", "0", "a + b", "x[i] * s", "const float *x, float s",
                                  {name = "scaled"})
    local general_path = getmetatable(k).__index.__call
    local calls = 0
    local call = core.reduction_caller({{dtype = "float32", pointer = true}, {dtype = "float32"}},
                                       function() return k:_function("gpu_reduce_index") end,
                                       function(...) calls = calls + 1; return general_path(...) end,
                                       256, 8, "float32")
    local function sum_of(values) local s = 0 for _, v in ipairs(values) do s = s + v end return s end
    local x, xv = R.generate(2048, "float32", function() return math.random(-8, 8) end)
    assert.are.equal(sum_of(xv) * 2, R.value(call(k, x, 2)))           -- integers: exact
    assert.are.equal(0, calls)
    local y, yv = R.generate(2049, "float32", function() return math.random(-8, 8) end)
    assert.are.equal(sum_of(yv) * 2, R.value(call(k, y, 2)))
    assert.are.equal(1, calls)                                           -- past one block
    local d = R.generate(100, "float64", function() return 1 end)
    call(k, d, 1)
    assert.are.equal(2, calls)                                           -- another dtype
    local every = R.every(x, 2)
    local want = 0
    for i = 1, 2048, 2 do want = want + xv[i] end
    assert.are.equal(want, R.value(call(k, every, 1)))
    assert.are.equal(3, calls)                                           -- a view
    local s <close> = gpu.Stream()
    local r = call(k, x, 1, {stream = s})
    s:synchronize()
    assert.are.equal(sum_of(xv), R.value(r))
    assert.are.equal(4, calls)                                           -- options
    helpers.assert_error("bad argument #2 to 'scaled' (expected a number for float32, got string)",
                         call, k, x, "2")
    assert.are.equal(5, calls)                                           -- errors
  end)

  helpers.gpu_it("returns a new array of its own, and blames the caller's line", function()
    local k = gpu.ReductionKernel("float32", "0", "a + b", "x[i]", "const float *x", {name = "total"})
    local x = R.to_gpu({1, 2, 3}, "float32")
    local r1, r2 = k(x), k(x)
    assert.are_not.equal(r1.ptr, r2.ptr)
    r1:free()
    r1:free()                                  -- twice: a no-op
    assert.is_true(r1.freed)
    assert.are.equal(6, R.value(r2))
    helpers.assert_error("calling 'get' on bad self (array has been freed)", R.get, r1)
    local ok, err = pcall(k, x, x)
    assert.is_false(ok)
    assert.is_truthy(err:match("^[^:]*33%-reduction_kernel_spec%.lua:%d+: 'total' takes 1 arguments, got 2$"), err)
    x:free()
    ok, err = pcall(k, x)
    assert.is_truthy(err:match("^[^:]*33%-reduction_kernel_spec%.lua:%d+: bad argument #1 to 'total' %(array has been freed%)$"), err)
  end)
end)
