-- NumPy's array functions built from views and the elementwise operators: gpuarray.diff
-- (also a:diff) and gpuarray.outer, against references computed in Lua with each dtype's
-- arithmetic (wrapping integers, float32 rounding, bool's not_equal and and).
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu

-- x - y and x * y as dtype computes them, on values as stored.
local function f32(x) return gpu.float32(x).value end
local arithmetic = {
  float32 = {sub = function(x, y) return f32(x - y) end, mul = function(x, y) return f32(x * y) end},
  float64 = {sub = function(x, y) return x - y end, mul = function(x, y) return x * y end},
  int32 = {sub = function(x, y) return (x - y + (1 << 31)) % (1 << 32) - (1 << 31) end,
           mul = function(x, y) return (x * y + (1 << 31)) % (1 << 32) - (1 << 31) end},
  uint8 = {sub = function(x, y) return (x - y) % 256 end, mul = function(x, y) return x * y % 256 end},
  bool = {sub = function(x, y) return x ~= y end, mul = function(x, y) return x and y end},
}

local function random_values(dtype)
  if dtype == "bool" then return function() return math.random() < 0.5 end end
  if dtype == "uint8" then return function() return math.random(0, 255) end end
  if dtype == "int32" then return function() return math.random(-2 ^ 31, 2 ^ 31 - 1) end end
  return function() return math.random() * 2 - 1 end
end

-- The n-th differences along axis of a row-major list of shape: {values, shape}.
local function reference_diff(values, shape, axis, n, sub)
  for _ = 1, n do
    local inner = 1
    for d = axis + 1, #shape do inner = inner * shape[d] end
    local length = shape[axis]
    local out, new_shape = {}, {table.unpack(shape)}
    new_shape[axis] = math.max(length - 1, 0)
    for i = 1, #values do
      local position = (i - 1) // inner % length
      if position < length - 1 then out[#out + 1] = sub(values[i + inner], values[i]) end
    end
    values, shape = out, new_shape
  end
  return values, shape
end

local function assert_list(want, got, what)
  local h = R.get(got)
  assert.are.equal(#want, h.size, what)
  for k = 1, #want do
    if want[k] ~= h[k] then error(("%s at %d: got %s, expected %s"):format(what, k, h[k], want[k])) end
  end
end

describe("array functions", function()
  helpers.gpu_it("diff takes n-th differences along each axis, of views and on streams", function()
    local s = gpu.Stream()
    for dtype, ops in pairs(arithmetic) do
      local shape = {6, 9}
      local a, values = R.generate(54, dtype, random_values(dtype))
      local m = R.reshaped(a, shape)
      for axis = 1, 2 do
        for n = 1, 3 do
          local want, want_shape = reference_diff(values, shape, axis, n, ops.sub)
          local got = gpu.gpuarray.diff(m, {n = n, axis = axis})
          assert.are.equal(dtype, got.dtype)
          assert.are.same(want_shape, got.shape)
          assert_list(want, got, ("%s diff n = %d along %d"):format(dtype, n, axis))
        end
      end
      -- the default: once along the last axis; a transposed view; a stream
      local want = reference_diff(values, shape, 2, 1, ops.sub)
      assert_list(want, m:diff(), dtype .. " default diff")
      local t = m:transpose():diff({axis = 1, stream = s})
      s:synchronize()
      assert.are.same({8, 6}, t.shape)
      local tv = {}   -- t's elements in row-major order: want transposed
      for r = 1, 8 do for c = 1, 6 do tv[#tv + 1] = want[(c - 1) * 8 + r] end end
      assert_list(tv, t, dtype .. " diff of the transpose")
      -- n past the axis: empty; n = 0: a copy of its own
      assert.are.same({0, 9}, gpu.gpuarray.diff(m, {n = 10, axis = 1}).shape)
      local copy = m:diff({n = 0})
      assert.are_not.equal(m, copy)
      copy:free()
      assert_list(values, m, dtype .. " after freeing diff's copy")
      a:free()
    end
  end)

  helpers.gpu_it("outer multiplies every element of one array by every element of another", function()
    local s = gpu.Stream()
    for dtype, ops in pairs(arithmetic) do
      local a, av = R.generate(12, dtype, random_values(dtype))
      local b, bv = R.generate(7, dtype, random_values(dtype))
      local want = {}
      for i = 1, 12 do for j = 1, 7 do want[#want + 1] = ops.mul(av[i], bv[j]) end end
      local got = gpu.gpuarray.outer(a, b)
      assert.are.same({12, 7}, got.shape)
      assert.are.equal(dtype, got.dtype)
      assert_list(want, got, dtype .. " outer")
      -- a 2-d transposed view flattens in its own row-major order; into out, on a stream
      local m = R.reshaped(a, {3, 4}):transpose()
      local order = {}
      for r = 1, 4 do for c = 1, 3 do order[#order + 1] = av[(c - 1) * 4 + r] end end
      local out = gpu.gpuarray.empty({12, 7}, dtype)
      assert.are.equal(out, gpu.gpuarray.outer(m, b, {out = out, stream = s}))
      s:synchronize()
      local want_t = {}
      for i = 1, 12 do for j = 1, 7 do want_t[#want_t + 1] = ops.mul(order[i], bv[j]) end end
      assert_list(want_t, out, dtype .. " outer of a transposed view")
      a:free()
      b:free()
    end
    -- mixed dtypes promote as a * b does
    local x, y = R.to_gpu({1, 2}, "int32"), R.to_gpu({0.5, 0.25, 2}, "float32")
    local xy = gpu.gpuarray.outer(x, y)
    assert.are.equal("float64", xy.dtype)
    assert_list({0.5, 0.25, 2, 1, 0.5, 4}, xy, "int32 by float32")
  end)

  helpers.gpu_it("diff and outer refuse bad arguments with clear messages", function()
    local a = R.to_gpu({1, 2, 3}, "float32")
    helpers.assert_error("bad argument #1 to 'diff' (a 0-d array has no axis to take differences along)",
                         gpu.gpuarray.diff, gpu.gpuarray.zeros({}, "float32"))
    helpers.assert_error("bad argument #2 to 'diff' (option 'n' must be a whole number from 0 on, got -1)",
                         a.diff, a, {n = -1})
    helpers.assert_error("bad argument #2 to 'diff' (option 'n' must be a whole number from 0 on, got 1.5)",
                         gpu.gpuarray.diff, a, {n = 1.5})
    helpers.assert_error("bad argument #2 to 'diff' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.diff, a, {axis = 2})
    helpers.assert_error("bad argument #2 to 'diff' (unknown option 'order')", gpu.gpuarray.diff, a, {order = 2})
    helpers.assert_error("bad argument #2 to 'outer' (GPUArray expected, got number)", gpu.gpuarray.outer, a, 5)
    helpers.assert_error("bad argument #3 to 'outer' (out array has shape (3,), the result (3,3))",
                         gpu.gpuarray.outer, a, a, {out = gpu.gpuarray.zeros(3, "float32")})
    a:free()
    helpers.assert_error("bad argument #1 to 'diff' (array has been freed)", a.diff, a)
    helpers.assert_error("bad argument #1 to 'outer' (array has been freed)", gpu.gpuarray.outer, a, a)
  end)
end)
