-- The launch fast path: f(...) and prepared calls on streams, and the stream checks they do
-- without making the stream's context current.
local helpers = require "helpers"
local gpu = helpers.gpu

local source = [[
__global__ void scale_add(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
]]

describe("launches", function()
  helpers.gpu_it("run on a stream through f(...) and prepared_async_call", function()
    local f = gpu.SourceModule(source):get_function("scale_add")
    local n = math.random(500, 3000)
    local xs, ys = helpers.random_floats(n, 10), helpers.random_floats(n, 10)
    local x <close> = gpu.to_device(gpu.host.from_table(xs, "float32"))
    local y <close> = gpu.to_device(gpu.host.from_table(ys, "float32"))
    local s <close> = gpu.Stream()
    local a, b = helpers.f32(math.random() * 4 - 2), helpers.f32(math.random() * 4 - 2)
    local opts = {block = 128, grid = (n + 127) // 128, stream = s}
    f(y, x, a, n, opts)
    f(y, x, a, n, opts)             -- the same options table twice
    f:prepare("PPfi")
    f:prepared_async_call({(n + 127) // 128, 1}, {128, 1, 1}, s, y, x, b, n)
    s:synchronize()
    local got = gpu.from_device(y, n, "float32")
    for i = 1, n do
      -- float64 reference: three float32 updates (maybe fused) stay within 1e-4 of it here
      local x1 = helpers.f32(xs[i])
      local want = helpers.f32(ys[i]) + 2 * a * x1 + b * x1
      helpers.assert_close(want, got[i], 1e-4, ("y[%d]"):format(i))
    end
  end)

  helpers.gpu_it("refuse a freed stream or a value that is not one", function()
    local f = gpu.SourceModule(source):get_function("scale_add")
    local y <close> = gpu.mem_alloc(64)
    local s = gpu.Stream()
    s:free()
    local e = helpers.error_of(f, y, y, 1, 16, {block = 16, stream = s})
    assert.truthy(tostring(e):find("stream has been freed", 1, true))
    e = helpers.error_of(f, y, y, 1, 16, {block = 16, stream = 42})
    assert.truthy(tostring(e):find("stream must be a gpu.Stream, got number", 1, true))
    f:prepare("PPfi")
    e = helpers.error_of(f.prepared_async_call, f, 1, 16, s, y, y, 1, 16)
    assert.truthy(tostring(e):find("stream has been freed", 1, true))
  end)
end)
