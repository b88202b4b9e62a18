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
    local idx = gpu.ElementwiseKernel("long long *out", "out[i] = i")
    local o = gpu.empty(5, "int64")
    idx(o)
    assert.are.same({0, 1, 2, 3, 4}, o:get():totable())
  end)

  helpers.gpu_it("checks its arguments", function()
    local k = gpu.ElementwiseKernel("float *x, int n", "x[i] = n", "setn")
    local a = gpu.zeros(4, "float64")
    helpers.assert_error("bad argument #1 to 'setn' (expected a float32 array, got float64)", k, a, 1)
    local f = gpu.zeros(4, "float32")
    helpers.assert_error("bad argument #2 to 'setn' (2.5 is not an integer (for int32))", k, f, 2.5)
    helpers.assert_error("bad argument #3 to 'setn' (range step must be positive)", k, f, 1, {range = {1, 4, 0}})
    helpers.assert_error("bad argument #3 to 'setn' (range {1, 5} reaches outside the arrays (size 4))",
                         k, f, 1, {range = {1, 5}})
    helpers.assert_error("bad argument #1 to 'setn' (array is not contiguous (pass a:copy()))",
                         k, gpu.zeros(8, "float32"):slice(1, -1, 2), 1)
    helpers.assert_error("kernel 'setn' takes 2 arguments, got 1", k, f)
    f:free()
    helpers.assert_error("bad argument #1 to 'setn' (array has been freed)", k, f, 1)
  end)
end)
