-- gpuarray.take: gathers with 1-based indices, and the modes for indices out of range.
local helpers = require "helpers"
local gpu = helpers.gpu

describe("gpuarray.take", function()
  it("checks its arguments before touching a device", function()
    helpers.assert_error("bad argument #1 to 'take' (GPUArray expected, got number)", gpu.gpuarray.take, 5, {1})
  end)

  local function upload(values, dtype) return gpu.to_gpu(gpu.host.from_table(values, dtype)) end
  local function random_indices(n, size)
    local t = {}
    for i = 1, n do t[i] = math.random(1, size) end
    return t
  end

  helpers.gpu_it("gathers every dtype's elements, row-major and 1-based", function()
    for _, dtype in ipairs{"int8", "int16", "float32", "float64", "complex128"} do
      local size = 1000
      local values = {}
      for i = 1, size do
        values[i] = dtype == "complex128" and gpu.complex(math.random(-99, 99), math.random(-99, 99))
                    or math.random(-100, 100)
      end
      local a = upload(values, dtype)
      for _, index_dtype in ipairs{"int32", "int64", "uint16"} do
        local idx = random_indices(3000, size)
        local r = gpu.gpuarray.take(a, upload(idx, index_dtype))
        assert.are.equal(dtype, r.dtype)
        assert.are.same({3000}, r.shape)
        local h = r:get()
        for i = 1, 3000 do
          local want = values[idx[i]]
          if dtype == "complex128" then
            assert(h[i].re == want.re and h[i].im == want.im, ("%s[%d]"):format(dtype, i))
          elseif h[i] ~= want then
            error(("%s by %s at %d: got %s, expected %s"):format(dtype, index_dtype, i, h[i], want))
          end
        end
      end
    end
    -- a transposed view reads in its own row-major order; a table of indices keeps its shape
    local m = upload({{1, 2, 3}, {4, 5, 6}}, "int32")
    local picked = gpu.gpuarray.take(m.T, {{1, 2}, {6, 3}})   -- m.T is {{1, 4}, {2, 5}, {3, 6}}
    assert.are.same({2, 2}, picked.shape)
    assert.are.same({{1, 4}, {6, 2}}, picked:get():totable())
    assert.are.same({}, gpu.gpuarray.take(m, gpu.empty(0, "int32")):get():totable())
  end)

  helpers.gpu_it("wraps, clips, or raises naming the first index out of range", function()
    local size = 7
    local values = {}
    for i = 1, size do values[i] = math.random(-1000, 1000) end
    local a = upload(values, "int64")
    local idx = {0, -1, 8, 23, -7, 3, 1, 7, -100}
    local wrapped = gpu.gpuarray.take(a, upload(idx, "int32"), {mode = "wrap"}):get()
    local clipped = gpu.gpuarray.take(a, upload(idx, "int32"), {mode = "clip"}):get()
    for i, k in ipairs(idx) do
      assert.are.equal(values[(k - 1) % size + 1], wrapped[i], "wrap #" .. i)
      assert.are.equal(values[math.max(1, math.min(size, k))], clipped[i], "clip #" .. i)
    end
    -- uint64 indices from 2^63 up: out of range, wrapped as the unsigned values they are
    local huge = {-1, -2, math.mininteger, 5}
    local u = upload(huge, "uint64")
    local uw = gpu.gpuarray.take(a, u, {mode = "wrap"}):get()
    for i, k in ipairs(huge) do
      local km1 = k - 1                                     -- unsigned k - 1, as 64 bits
      local r = (2 * ((km1 >> 1) % size) + (km1 & 1)) % size
      assert.are.equal(values[r + 1], uw[i], "uint64 wrap #" .. i)
    end
    assert.are.same({values[7], values[7], values[7], values[5]}, gpu.gpuarray.take(a, u, {mode = "clip"}):get():totable())
    helpers.assert_error("bad argument #2 to 'take' (index 0 at position 3 is out of range for 7 elements)",
                         gpu.gpuarray.take, a, {1, 7, 0, 9})
    helpers.assert_error("bad argument #2 to 'take' (index 18446744073709551615 at position 1 is out of "
                         .. "range for 7 elements)", gpu.gpuarray.take, a, u)
    local keep = upload({5, 6, 7}, "int64")                  -- NumPy's raise leaves out alone
    helpers.assert_error("bad argument #2 to 'take' (index 8 at position 2 is out of range for 7 elements)",
                         gpu.gpuarray.take, a, {1, 8, 2}, {out = keep})
    assert.are.same({5, 6, 7}, keep:get():totable())
    local s = gpu.Stream()
    helpers.assert_error("bad argument #2 to 'take' (index -1 at position 2 is out of range for 7 elements)",
                         gpu.gpuarray.take, a, upload({2, -1, 3}, "int8"), {stream = s})
    assert.are.same({values[2], values[3]}, gpu.gpuarray.take(a, {2, 3}, {stream = s}):get():totable())
  end)

  helpers.gpu_it("writes into out, even out over its own input", function()
    local values = helpers.random_integers(100, -50, 50)
    local a = upload(values, "float32")
    local perm = {}
    for i = 1, 100 do perm[i] = 101 - i end
    local out = gpu.empty(100, "float32")
    assert.are.equal(out, gpu.gpuarray.take(a, perm, {out = out}))
    assert.are.equal(a, gpu.gpuarray.take(a, perm, {out = a}))      -- reversed in place
    local ho, ha = out:get(), a:get()
    for i = 1, 100 do
      assert.are.equal(values[101 - i], ho[i])
      assert.are.equal(values[101 - i], ha[i])
    end
    local pairs_of = gpu.zeros(200, "float32")
    local column = gpu.GPUArray(100, "float32", {gpudata = pairs_of.gpudata, strides = {8}})
    assert.is_false(column.is_contiguous)
    gpu.gpuarray.take(a, perm, {out = column})
    local hc = column:get()
    for i = 1, 100 do assert.are.equal(values[i], hc[i]) end
  end)

  helpers.gpu_it("names what is wrong", function()
    local a = upload({1, 2, 3}, "int32")
    helpers.assert_error("bad argument #2 to 'take' (indices must be integers, got float32)",
                         gpu.gpuarray.take, a, upload({1}, "float32"))
    helpers.assert_error("bad argument #2 to 'take' (indices must be a GPUArray or a table of integers)",
                         gpu.gpuarray.take, a, {1.5})
    helpers.assert_error("bad argument #3 to 'take' (option 'mode' must be 'raise', 'wrap' or 'clip', got 'wrapped')",
                         gpu.gpuarray.take, a, {1}, {mode = "wrapped"})
    helpers.assert_error("bad argument #3 to 'take' (unknown option 'moed')", gpu.gpuarray.take, a, {1}, {moed = "wrap"})
    helpers.assert_error("bad argument #3 to 'take' (out array is int64 of shape (2,), the result int32 of "
                         .. "shape (2,))", gpu.gpuarray.take, a, {1, 2}, {out = gpu.empty(2, "int64")})
    helpers.assert_error("bad argument #2 to 'take' (cannot take from an empty array)",
                         gpu.gpuarray.take, gpu.empty(0, "int32"), {1})
    local freed = upload({1}, "int32")
    freed:free()
    helpers.assert_error("bad argument #2 to 'take' (array has been freed)", gpu.gpuarray.take, a, freed)
  end)
end)
