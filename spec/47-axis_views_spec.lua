-- Views along any axis: a:select(axis, i), a:narrow(axis, first, length) (Torch7's),
-- a:slice(first, last[, step], {axis = k}), a:flip([{axis = k}]) and a:expand_dims(axis)
-- (NumPy's): no copy, the layout computed on the host, every kernel reading them in place.
local helpers = require "helpers"
local gpu = helpers.gpu
local E = helpers.assert_error

local flat = helpers.flat

-- Fresh random float32 values for a 3 x 4 x 5 array, and a reader of its elements by indices.
local function random_3d()
  local h = gpu.host.from_table(helpers.random_floats(60, 4), "float32"):reshape(3, 4, 5)
  local function at(i, j, k) return h[((i - 1) * 4 + (j - 1)) * 5 + k] end
  return h, at
end

describe("views along an axis", function()
  it("lay out shapes, strides and offsets (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.gpuarray.arange(24, "float32"):reshape(2, 3, 4)
      local function show(v)
        print(table.concat(v.shape, "x"), table.concat(v.strides, ","), v.offset, v.is_contiguous)
      end
      show(a:select(2, 3)); show(a:select(-1, 1)); show(a:select(1, 2))
      show(a:narrow(3, 2, 2)); show(a:narrow(1, -1, 1)); show(a:narrow(2, 3, 0))
      show(a:flip()); show(a:flip{axis = 2})
      show(a:expand_dims(1)); show(a:expand_dims(-1)); show(a:expand_dims(2))
      show(a:slice(2, 3, {axis = 2})); show(a:slice(1, -1, 2, {axis = 3})); show(a:slice(nil, nil, -1, {axis = -1}))
      show(a:select(1, 1):select(1, 1))
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "2x4\t48,4\t32\tfalse",
      "2x3\t48,16\t0\tfalse",
      "3x4\t16,4\t48\ttrue",
      "2x3x2\t48,16,4\t4\tfalse",
      "1x3x4\t48,16,4\t48\ttrue",
      "2x0x4\t48,16,4\t0\tfalse",
      "2x3x4\t-48,-16,-4\t92\tfalse",
      "2x3x4\t48,-16,4\t32\tfalse",
      "1x2x3x4\t96,48,16,4\t0\ttrue",
      "2x3x4x1\t48,16,4,4\t0\ttrue",
      "2x1x3x4\t48,48,16,4\t0\ttrue",
      "2x2x4\t48,16,4\t16\tfalse",
      "2x3x2\t48,16,8\t0\tfalse",
      "2x3x4\t48,16,-4\t12\tfalse",
      "4\t4\t0\ttrue",
      "",
    }, "\n"), out)
  end)

  it("of empty arrays are empty views at the array's own offset (stand-in driver)", function()
    -- NumPy's views of arrays with a zero-length axis: nothing to read, so nowhere to start
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local function show(v) print(table.concat(v.shape, "x"), v.offset, v.size) end
      local z = gpu.gpuarray.zeros({0, 3}, "float64")
      show(z:flip()); show(z:flip{axis = 2}); show(z:slice(2, 3, {axis = 2}))
      show(z:narrow(2, 2, 1)); show(z:select(2, 2)); show(z:slice(1, 5))
      local y = gpu.gpuarray.zeros({2, 0, 3}, "float32")
      show(y:select(1, 2)); show(y:slice(2, 2, {axis = 1})); show(y:flip{axis = 3})
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "0x3\t0\t0", "0x3\t0\t0", "0x2\t0\t0", "0x1\t0\t0", "0\t0\t0", "0x3\t0\t0",
      "0x3\t0\t0", "1x0x3\t0\t0", "2x0x3\t0\t0", "",
    }, "\n"), out)
  end)

  it("name what is wrong (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.gpuarray.zeros({2, 3, 4}, "float32")
      local function try(f) print((select(2, pcall(f)):gsub("^[^\n]*:%d+: ", ""))) end
      try(function() return a:select(4, 1) end)
      try(function() return a:select(2, 4) end)
      try(function() return a:select(1.5, 1) end)
      try(function() return a:narrow(2, 2, 3) end)
      try(function() return a:narrow(2, "x", 1) end)
      try(function() return a:flip{axis = 4} end)
      try(function() return a:expand_dims(5) end)
      try(function() return a:slice(1, 2, {axis = 0}) end)
      try(function() return a:slice(1, 2, 1, {axs = 1}) end)
      try(function() return gpu.gpuarray.zeros({}, "float32"):select(1, 1) end)
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "bad argument #1 to 'select' (axis 4 is out of range for a 3-d array)",
      "bad argument #2 to 'select' (index 4 is out of range for an axis of length 3)",
      "bad argument #1 to 'select' (axis must be an integer, got float)",
      "bad argument #3 to 'narrow' (length must be a whole number from 0 to 2, got 3)",
      "bad argument #2 to 'narrow' (integer index expected, got string)",
      "bad argument #1 to 'flip' (axis 4 is out of range for a 3-d array)",
      "bad argument #1 to 'expand_dims' (axis 5 is out of range for a 4-d array)",
      "bad argument #3 to 'slice' (axis 0 is out of range for a 3-d array)",
      "bad argument #4 to 'slice' (unknown option 'axs')",
      "bad argument #0 to 'select' (cannot select from a 0-d array)",
      "",
    }, "\n"), out)
  end)

  helpers.gpu_it("read and write the elements they name, against a CPU reference", function()
    local h, at = random_3d()
    local a = gpu.to_gpu(h)
    local j, k = math.random(1, 4), math.random(1, 5)
    -- select: a[:, j, :] and a[:, :, k]
    local want = {}
    for i = 1, 3 do for kk = 1, 5 do want[#want + 1] = at(i, j, kk) end end
    assert.are.same(want, flat(a:select(2, j):get()))
    want = {}
    for i = 1, 3 do for jj = 1, 4 do want[#want + 1] = at(i, jj, k) end end
    assert.are.same(want, flat(a:select(-1, k):get()))
    -- narrow along the last axis, a step along the second, flips
    want = {}
    for i = 1, 3 do for jj = 1, 4 do for kk = 2, 4 do want[#want + 1] = at(i, jj, kk) end end end
    assert.are.same(want, flat(a:narrow(3, 2, 3):get()))
    want = {}
    for i = 1, 3 do for jj = 4, 1, -2 do for kk = 1, 5 do want[#want + 1] = at(i, jj, kk) end end end
    assert.are.same(want, flat(a:slice(-1, 1, -2, {axis = 2}):get()))
    want = {}
    for i = 3, 1, -1 do for jj = 4, 1, -1 do for kk = 5, 1, -1 do want[#want + 1] = at(i, jj, kk) end end end
    assert.are.same(want, flat(a:flip():get()))
    -- views as operands: column k plus column 1, against the CPU's float32 sums
    local sums = (a:select(3, k) + a:select(3, 1)):get()
    for i = 1, 3 do
      for jj = 1, 4 do
        assert.are.equal(helpers.f32(at(i, jj, k) + at(i, jj, 1)), sums[(i - 1) * 4 + jj])
      end
    end
    -- writes through a view land in the array: fill a column, add into a flipped row
    local v = math.random() * 10
    a:select(2, j):fill(v)
    a:select(1, 2):iadd(a:select(1, 3):flip{axis = 1})     -- a[2, j, :] += a[3, 5 - j, :]
    local got = a:get()
    for i = 1, 3 do
      for jj = 1, 4 do
        for kk = 1, 5 do
          local expect = jj == j and helpers.f32(v) or at(i, jj, kk)
          if i == 2 then
            local below = 5 - jj == j and helpers.f32(v) or at(3, 5 - jj, kk)
            expect = helpers.f32(expect + below)
          end
          assert.are.equal(expect, got[((i - 1) * 4 + (jj - 1)) * 5 + kk])
        end
      end
    end
    -- expand_dims broadcasts a row against the whole array
    local row = a:select(1, 1):select(1, 1)                 -- 5 elements
    local spread = (a - row:expand_dims(1):expand_dims(1)):get()
    for i = 1, 3 do
      for jj = 1, 4 do
        for kk = 1, 5 do
          local idx = ((i - 1) * 4 + (jj - 1)) * 5 + kk
          assert.are.equal(helpers.f32(got[idx] - got[kk]), spread[idx])
        end
      end
    end
    E("bad argument #2 to 'select' (index 5 is out of range for an axis of length 4)",
      function() return a:select(2, 5) end)
  end)
end)
