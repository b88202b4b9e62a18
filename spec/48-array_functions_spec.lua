-- NumPy's array functions built from views and the elementwise operators: gpuarray.diff
-- (also a:diff), outer, eye, diagonal, diag, trace, tril, triu, roll, broadcast_to, tile,
-- repeat_interleave, ptp, pad, meshgrid and interp,
-- against references computed in Lua with each dtype's arithmetic (wrapping integers,
-- float32 rounding, bool's not_equal and and).
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

  helpers.gpu_it("eye, diagonal, diag, trace, tril and triu place and read diagonals", function()
    -- eye: ones where column - row == k
    for _, case in ipairs{{3, nil, 0}, {3, 5, 2}, {4, 2, -1}, {2, 6, -3}, {3, 3, 5}} do
      local n, m, k = case[1], case[2], case[3]
      local e = gpu.gpuarray.eye(n, m, {k = k, dtype = "int32"})
      m = m or n
      assert.are.same({n, m}, e.shape)
      local want = {}
      for r = 1, n do for c = 1, m do want[#want + 1] = c - r == k and 1 or 0 end end
      assert_list(want, e, ("eye(%d, %d, k = %d)"):format(n, m, k))
    end
    assert.are.equal("float64", gpu.gpuarray.eye(2).dtype)
    -- diagonal views of a 4 x 6 matrix, of its transpose, and of a stack along axes 2 and 3
    local a, values = R.generate(24, "int32", function() return math.random(-1000, 1000) end)
    local m = R.reshaped(a, {4, 6})
    local function at(r, c) return values[(r - 1) * 6 + c] end
    for k = -5, 7 do
      local want = {}
      for r = 1, 4 do
        local c = r + k
        if c >= 1 and c <= 6 then want[#want + 1] = at(r, c) end
      end
      assert_list(want, m:diagonal({offset = k}), "diagonal " .. k)
      local t_want = {}   -- the transpose's diagonal k is the matrix's diagonal -k
      for c = 1, 6 do
        local r = c + k
        if r >= 1 and r <= 4 then t_want[#t_want + 1] = at(r, c) end
      end
      assert_list(t_want, m:transpose():diagonal({offset = k}), "transposed diagonal " .. k)
      if #want > 0 then
        local sum = 0
        for _, v in ipairs(want) do sum = sum + v end
        assert.are.equal(sum, m:trace({offset = k}))
        assert.are.equal(sum, R.value(gpu.gpuarray.trace(m, {offset = k})))
      end
    end
    local b, bv = R.generate(2 * 3 * 4, "int32", function() return math.random(-1000, 1000) end)
    local stack = R.reshaped(b, {2, 3, 4})
    local d = gpu.gpuarray.diagonal(stack, {axis1 = 2, axis2 = 3, offset = 1})
    assert.are.same({2, 3}, d.shape)   -- [i][r][r + 1] for r = 1..3
    assert_list({bv[2], bv[7], bv[12], bv[14], bv[19], bv[24]}, d, "diagonals of a stack")
    assert_list({bv[2] + bv[7] + bv[12], bv[14] + bv[19] + bv[24]},
                gpu.gpuarray.trace(stack, {axis1 = 2, axis2 = 3, offset = 1}), "traces of a stack")
    -- diag both ways
    local v, vv = R.generate(3, "float32", function() return math.random() end)
    local square = gpu.gpuarray.diag(v, {k = -2})
    assert.are.same({5, 5}, square.shape)
    local want = {}
    for r = 1, 5 do for c = 1, 5 do want[#want + 1] = c - r == -2 and vv[c] or 0 end end
    assert_list(want, square, "diag of a vector")
    assert_list({at(1, 2), at(2, 3), at(3, 4), at(4, 5)}, gpu.gpuarray.diag(m, {k = 1}), "diag of a matrix")
    -- tril and triu of a stack of 5 x 4 matrices, and of bools
    local c, cv = R.generate(2 * 5 * 4, "int32", function() return math.random(-1000, 1000) end)
    local mats = R.reshaped(c, {2, 5, 4})
    for _, name in ipairs{"tril", "triu"} do
      for _, k in ipairs{-1, 0, 2} do
        local expect = {}
        for i = 1, 40 do
          local r, col = (i - 1) // 4 % 5 + 1, (i - 1) % 4 + 1
          local keep = (name == "tril" and col - r <= k) or (name == "triu" and col - r >= k)
          expect[i] = keep and cv[i] or 0
        end
        local got = gpu.gpuarray[name](mats, {k = k})
        assert.are.same({2, 5, 4}, got.shape)
        assert_list(expect, got, ("%s k = %d"):format(name, k))
      end
    end
    -- a transposed view (read through strides) of float16 and complex64, k past the matrix
    for _, dtype in ipairs{"float16", "complex64"} do
      local complex = dtype == "complex64"
      local t, tv = R.generate(6 * 7, dtype, function()
        local x = math.random(-64, 64) / 4
        return complex and gpu.complex(x, math.random(-8, 8)) or x
      end)
      local zero = complex and gpu.complex(0, 0) or 0
      local view = R.reshaped(t, {6, 7}):transpose()            -- 7 x 6: view[r][c] = tv[(c-1)*7 + r]
      for _, k in ipairs{-2, 1, 9} do
        local expect = {}
        for r = 1, 7 do
          for col = 1, 6 do expect[#expect + 1] = col - r <= k and tv[(col - 1) * 7 + r] or zero end
        end
        local got = gpu.gpuarray.tril(view, {k = k})
        assert.are.same({7, 6}, got.shape)
        assert.are.equal(dtype, got.dtype)
        assert_list(expect, got, ("tril of a transposed %s, k = %d"):format(dtype, k))
      end
    end
    local ones = gpu.gpuarray.ones({3, 3}, "bool")
    local upper = gpu.gpuarray.triu(ones)
    assert.are.equal("bool", upper.dtype)
    assert_list({true, true, true, false, true, true, false, false, true}, upper, "triu of bools")
  end)

  helpers.gpu_it("roll moves elements round an axis or the whole array; broadcast_to repeats", function()
    local s = gpu.Stream()
    local a, values = R.generate(4 * 5, "int32", function() return math.random(-1000, 1000) end)
    local m = R.reshaped(a, {4, 5})
    for _, shift in ipairs{0, 1, 3, 5, 7, -2, -21, 40} do
      local want = {}
      for i = 1, 20 do want[(i - 1 + shift) % 20 + 1] = values[i] end
      local whole = gpu.gpuarray.roll(m, shift)
      assert.are.same({4, 5}, whole.shape)
      assert_list(want, whole, "roll " .. shift)
      for axis = 1, 2 do
        local expect = {}
        for r = 1, 4 do
          for c = 1, 5 do
            local to_r, to_c = r, c
            if axis == 1 then to_r = (r - 1 + shift) % 4 + 1 else to_c = (c - 1 + shift) % 5 + 1 end
            expect[(to_r - 1) * 5 + to_c] = values[(r - 1) * 5 + c]
          end
        end
        local got = m:roll(shift, {axis = axis, stream = s})
        s:synchronize()
        assert_list(expect, got, ("roll %d along %d"):format(shift, axis))
      end
    end
    -- a transposed view rolls in its own row-major order
    local t_values = {}
    for c = 1, 5 do for r = 1, 4 do t_values[#t_values + 1] = values[(r - 1) * 5 + c] end end
    local want_t = {}
    for i = 1, 20 do want_t[(i - 1 + 6) % 20 + 1] = t_values[i] end
    assert_list(want_t, gpu.gpuarray.roll(m:transpose(), 6), "roll of a transposed view")
    -- broadcast_to: a view whose repeated axes read the same elements
    local row = m:select(1, 2)                     -- the second row, 5 elements
    local b = gpu.gpuarray.broadcast_to(row, {3, 5})
    assert.are.same({3, 5}, b.shape)
    local want_b = {}
    for r = 1, 3 do for c = 1, 5 do want_b[#want_b + 1] = values[5 + c] end end
    assert_list(want_b, b:copy(), "broadcast_to copied")
    local sums = b + m:narrow(1, 1, 3)
    local want_sum = {}
    for r = 1, 3 do for c = 1, 5 do want_sum[#want_sum + 1] = values[5 + c] + values[(r - 1) * 5 + c] end end
    assert_list(want_sum, sums, "broadcast_to in an operation")
    a:free()
  end)

  -- tile and repeat_interleave against NumPy's tile and repeat done in Lua, on contiguous and
  -- transposed arrays; ptp against max - min, integers wrapping
  helpers.gpu_it("tile and repeat_interleave copy elements as NumPy's tile and repeat; ptp", function()
    local s = gpu.Stream()
    local a, values = R.generate(3 * 4, "int16", function() return math.random(-1000, 1000) end)
    local m = R.reshaped(a, {3, 4})
    local function element(t, r, c)           -- m (t false) or its transpose (t true) at (r, c)
      if t then r, c = c, r end
      return values[(r - 1) * 4 + c]
    end
    for _, t in ipairs{false, true} do
      local x = t and m:transpose() or m
      local rows, cols = x.shape[1], x.shape[2]
      local name = t and "transposed" or "contiguous"
      -- tile: reps shorter, as long and longer than the shape
      for _, reps in ipairs{{2}, {3, 2}, {2, 1, 3}, {0, 2}} do
        local full = {}
        for d = 1, 3 do full[d] = reps[d - 3 + #reps] or 1 end
        local want = {}
        for _ = 1, full[1] do
          for r = 1, rows * full[2] do
            for c = 1, cols * full[3] do
              want[#want + 1] = element(t, (r - 1) % rows + 1, (c - 1) % cols + 1)
            end
          end
        end
        local got = x:tile(reps, {stream = s})
        s:synchronize()
        local shape = {rows * full[2], cols * full[3]}
        if #reps == 3 then table.insert(shape, 1, full[1]) end
        assert.are.same(shape, got.shape, name .. " tile shape")
        assert_list(want, got, ("%s tile {%s}"):format(name, table.concat(reps, ", ")))
      end
      assert_list({element(t, 1, 1), element(t, 1, 1)}, gpu.gpuarray.tile(x:select(1, 1):narrow(1, 1, 1), 2),
                  name .. " tile by a number")
      -- repeat_interleave: whole (row-major order), and along each axis
      for _, count in ipairs{0, 1, 3} do
        local want = {}
        for r = 1, rows do
          for c = 1, cols do for _ = 1, count do want[#want + 1] = element(t, r, c) end end
        end
        local whole = gpu.gpuarray.repeat_interleave(x, count)
        assert.are.same({rows * cols * count}, whole.shape)
        assert_list(want, whole, ("%s repeat_interleave %d"):format(name, count))
        for axis = 1, 2 do
          local expect = {}
          for r = 1, rows * (axis == 1 and count or 1) do
            for c = 1, cols * (axis == 2 and count or 1) do
              local from_r = axis == 1 and (r - 1) // count + 1 or r
              local from_c = axis == 2 and (c - 1) // count + 1 or c
              expect[#expect + 1] = element(t, from_r, from_c)
            end
          end
          local got = x:repeat_interleave(count, {axis = axis, stream = s})
          s:synchronize()
          assert_list(expect, got, ("%s repeat_interleave %d along %d"):format(name, count, axis))
        end
      end
    end
    -- ptp: the whole range (a Lua value from the method), along each axis
    local high, low = values[1], values[1]
    for _, v in ipairs(values) do high, low = math.max(high, v), math.min(low, v) end
    assert.are.equal(high - low, m:ptp())
    assert.are.equal("int16", gpu.gpuarray.ptp(m).dtype)
    local ranges = {{}, {}}
    for r = 1, 3 do
      local hi, lo = values[(r - 1) * 4 + 1], values[(r - 1) * 4 + 1]
      for c = 1, 4 do hi, lo = math.max(hi, values[(r - 1) * 4 + c]), math.min(lo, values[(r - 1) * 4 + c]) end
      ranges[2][r] = hi - lo
    end
    for c = 1, 4 do
      local hi, lo = values[c], values[c]
      for r = 1, 3 do hi, lo = math.max(hi, values[(r - 1) * 4 + c]), math.min(lo, values[(r - 1) * 4 + c]) end
      ranges[1][c] = hi - lo
    end
    for axis = 1, 2 do assert_list(ranges[axis], m:ptp({axis = axis}), "ptp along " .. axis) end
    local wraps = R.to_gpu({-128, 127, 0}, "int8")        -- 255 wraps to -1, as NumPy's
    assert.are.equal(-1, wraps:ptp())
    local f, fv = R.generate(1000, "float64", function() return math.random() * 100 - 50 end)
    local fh, fl = fv[1], fv[1]
    for _, v in ipairs(fv) do fh, fl = math.max(fh, v), math.min(fl, v) end
    local range = gpu.gpuarray.ptp(f, {stream = s})
    s:synchronize()
    assert.are.equal(fh - fl, R.value(range))
    a:free()
  end)

  -- pad: NumPy's constant mode, every form of pad_width, of a transposed view, of bools
  helpers.gpu_it("pad surrounds an array with a constant, as NumPy's constant mode", function()
    local a, values = R.generate(3 * 4, "int32", function() return math.random(-1000, 1000) end)
    local m = R.reshaped(a, {3, 4})
    local function padded(rows, cols, at, widths, fill)    -- the reference, row-major
      local want = {}
      for r = 1, rows + widths[1][1] + widths[1][2] do
        for c = 1, cols + widths[2][1] + widths[2][2] do
          local i, j = r - widths[1][1], c - widths[2][1]
          want[#want + 1] = (i >= 1 and i <= rows and j >= 1 and j <= cols) and at(i, j) or fill
        end
      end
      return want
    end
    local function at(i, j) return values[(i - 1) * 4 + j] end
    for _, case in ipairs{{1, {{1, 1}, {1, 1}}}, {{2, 0}, {{2, 0}, {2, 0}}}, {{{0, 1}, {3, 2}}, {{0, 1}, {3, 2}}},
                          {{{1, 2}}, {{1, 2}, {1, 2}}}, {0, {{0, 0}, {0, 0}}}} do
      local got = gpu.gpuarray.pad(m, case[1], {constant_values = -7})
      local w = case[2]
      assert.are.same({3 + w[1][1] + w[1][2], 4 + w[2][1] + w[2][2]}, got.shape)
      assert_list(padded(3, 4, at, w, -7), got, "pad " .. table.concat({w[1][1], w[1][2], w[2][1], w[2][2]}, ","))
    end
    local s = gpu.Stream()                                            -- 4 x 3 read through strides
    local t = gpu.gpuarray.pad(m:transpose(), {{1, 0}, {0, 2}}, {stream = s})
    s:synchronize()
    assert_list(padded(4, 3, function(i, j) return at(j, i) end, {{1, 0}, {0, 2}}, 0), t, "pad of a transposed view")
    local b = gpu.gpuarray.pad(gpu.gpuarray.zeros({2}, "bool"), 1, {constant_values = true})
    assert_list({true, false, false, true}, b, "pad of bools")
    helpers.assert_error("bad argument #2 to 'pad' (pad_width must be a whole number, a pair {before, after} or one pair an axis)",
                         gpu.gpuarray.pad, m, {{1, 2}, {3}})
    helpers.assert_error("bad argument #3 to 'pad' (option 'mode' must be 'constant' (the only mode so far), got 'edge')",
                         gpu.gpuarray.pad, m, 1, {mode = "edge"})
    helpers.assert_error("bad argument #3 to 'pad' (option 'constant_values' must be a number, a boolean or a complex value, got string)",
                         gpu.gpuarray.pad, m, 1, {constant_values = "x"})
    a:free()
    helpers.assert_error("bad argument #1 to 'pad' (array has been freed)", gpu.gpuarray.pad, a, 1)
  end)

  -- interp against NumPy's algorithm (compiled_base.c's arr_interp) done in Lua: points with a
  -- repeated x, x below, on and between the points, past the last, NaN
  helpers.gpu_it("interp interpolates as NumPy's, its special cases included", function()
    local NAN = 0 / 0
    local function reference(x, xp, fp, left, right)
      local n = #xp
      if x ~= x then return x end
      if x > xp[n] then return right or fp[n] end
      if x < xp[1] then return left or fp[1] end
      if x == xp[n] then return fp[n] end
      local j = 1                               -- the last point at or below x
      while xp[j + 1] <= x do j = j + 1 end
      if x == xp[j] then return fp[j] end
      local slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
      local y = slope * (x - xp[j]) + fp[j]
      if y ~= y then
        y = slope * (x - xp[j + 1]) + fp[j + 1]
        if y ~= y and fp[j] == fp[j + 1] then y = fp[j] end
      end
      return y
    end
    local xp_values = {-3, -1, 0, 0, 2.5, 4, 7}
    local xp = R.to_gpu(xp_values, "float64")
    local fp, fv = R.generate(#xp_values, "float32", function() return math.random(-100, 100) / 8 end)
    local x, xv = R.generate(200, "float64", function(i)
      if i % 17 == 0 then return NAN end
      if i % 5 == 0 then return xp_values[math.random(#xp_values)] end
      return math.random() * 14 - 5
    end)
    -- a float32 x of many blocks' elements, read as it is; 1000 points, a deeper search
    local x32, xv32 = R.generate(20011, "float32", function(i)
      if i % 17 == 0 then return NAN end
      return math.random() * 14 - 5
    end)
    local many_xv = {}
    for i = 1, 1000 do many_xv[i] = math.random() * 1000 end
    table.sort(many_xv)
    local many_xp = R.to_gpu(many_xv, "float64")
    local many_fp, many_fv = R.generate(1000, "float64", function() return math.random() * 2 - 1 end)
    local wide_x, wide_xv = R.generate(3001, "float64", function() return math.random() * 1100 - 50 end)
    for _, case in ipairs{{x, xv, xp, xp_values, fp, fv, {}}, {x, xv, xp, xp_values, fp, fv, {left = -50, right = 99.5}},
                          {x32, xv32, xp, xp_values, fp, fv, {}},
                          {wide_x, wide_xv, many_xp, many_xv, many_fp, many_fv, {}}} do
      local at, at_values, points, point_values, values, value_values, opts = table.unpack(case)
      local got = R.get(gpu.gpuarray.interp(at, points, values, opts))
      for i = 1, #at_values do
        local want = reference(at_values[i], point_values, value_values, opts.left, opts.right)
        if not (want == got[i] or (want ~= want and got[i] ~= got[i])) then
          error(("interp at x = %.17g: got %.17g, expected %.17g"):format(at_values[i], got[i], want))
        end
      end
    end
    -- x of another shape and dtype, on a stream: the result has x's shape, float64
    local s = gpu.Stream()
    local m = R.reshaped(R.to_gpu({-4, 0, 1, 8, 3, 2}, "int32"), {2, 3}):transpose()
    local r = gpu.gpuarray.interp(m, xp, fp, {stream = s})
    s:synchronize()
    assert.are.same({3, 2}, r.shape)
    assert.are.equal("float64", r.dtype)
    local want = {}
    for _, v in ipairs{-4, 8, 0, 3, 1, 2} do want[#want + 1] = reference(v, xp_values, fv) end
    assert_list(want, r, "interp of a transposed int32 x")
    helpers.assert_error("bad argument #3 to 'interp' (xp and fp must be 1-d arrays of one length, not empty; got shapes (7,) and (2,))",
                         gpu.gpuarray.interp, x, xp, R.to_gpu({1, 2}, "float64"))
    helpers.assert_error("bad argument #4 to 'interp' (option 'left' must be a number, got string)",
                         gpu.gpuarray.interp, x, xp, fp, {left = "low"})
  end)

  -- meshgrid: NumPy's coordinate arrays, "xy" (the first two axes swapped) and "ij"
  helpers.gpu_it("meshgrid makes NumPy's coordinate arrays, xy and ij", function()
    local x, xv = R.generate(3, "float32", function() return math.random(-100, 100) / 4 end)
    local y, yv = R.generate(4, "int32", function() return math.random(-1000, 1000) end)
    local z, zv = R.generate(2, "float64", function() return math.random() end)
    local gx, gy = gpu.gpuarray.meshgrid(x, R.reshaped(y, {2, 2}):transpose())   -- y flattened in row-major order
    local ty = {yv[1], yv[3], yv[2], yv[4]}                                       -- the transpose's order
    assert.are.same({4, 3}, gx.shape)
    assert.are.same({4, 3}, gy.shape)
    assert.are.equal("int32", gy.dtype)
    local want_x, want_y = {}, {}
    for r = 1, 4 do for c = 1, 3 do want_x[#want_x + 1], want_y[#want_y + 1] = xv[c], ty[r] end end
    assert_list(want_x, gx, "meshgrid xy, x")
    assert_list(want_y, gy, "meshgrid xy, y")
    local p, q, w = gpu.gpuarray.meshgrid(x, y, z, {indexing = "ij"})
    assert.are.same({3, 4, 2}, p.shape)
    local want_p, want_q, want_w = {}, {}, {}
    for i = 1, 3 do
      for j = 1, 4 do
        for k = 1, 2 do
          want_p[#want_p + 1], want_q[#want_q + 1], want_w[#want_w + 1] = xv[i], yv[j], zv[k]
        end
      end
    end
    assert_list(want_p, p, "meshgrid ij, x")
    assert_list(want_q, q, "meshgrid ij, y")
    assert_list(want_w, w, "meshgrid ij, z")
    local only = gpu.gpuarray.meshgrid(y)
    assert_list(yv, only, "meshgrid of one array")
    helpers.assert_error("bad argument #2 to 'meshgrid' (GPUArray expected, got number)", gpu.gpuarray.meshgrid, x, 3)
    helpers.assert_error("bad argument #3 to 'meshgrid' (option 'indexing' must be 'xy' or 'ij', got 'yx')",
                         gpu.gpuarray.meshgrid, x, y, {indexing = "yx"})
    helpers.assert_error("bad argument #2 to 'meshgrid' (unknown option 'sparse')", gpu.gpuarray.meshgrid, x, {sparse = true})
  end)

  helpers.gpu_it("the array functions refuse bad arguments with clear messages", function()
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
    helpers.assert_error("bad argument #1 to 'eye' (n must be a whole number from 0 on, got -1)", gpu.gpuarray.eye, -1)
    helpers.assert_error("bad argument #2 to 'eye' (option 'k' must be an integer, got float)",
                         gpu.gpuarray.eye, 2, {k = 0.5})
    helpers.assert_error("bad argument #3 to 'eye' (unknown option 'j')", gpu.gpuarray.eye, 2, 3, {j = 1})
    helpers.assert_error("bad argument #1 to 'diagonal' (a diagonal needs an array of 2 or more axes)",
                         a.diagonal, a)
    local m = gpu.gpuarray.zeros({2, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'diagonal' (axis1 and axis2 must differ)", m.diagonal, m,
                         {axis1 = 2, axis2 = 2})
    helpers.assert_error("bad argument #1 to 'diag' (a 1-d or 2-d array expected, got 3-d)",
                         gpu.gpuarray.diag, gpu.gpuarray.zeros({2, 2, 2}, "float32"))
    helpers.assert_error("bad argument #1 to 'trace' (a diagonal needs an array of 2 or more axes)",
                         gpu.gpuarray.trace, a)
    helpers.assert_error("bad argument #1 to 'tril' (an array of 2 or more axes expected)", gpu.gpuarray.tril, a)
    helpers.assert_error("bad argument #2 to 'triu' (option 'k' must be an integer, got string)",
                         gpu.gpuarray.triu, m, {k = "1"})
    helpers.assert_error("bad argument #2 to 'roll' (shift must be an integer, got float)", a.roll, a, 1.5)
    helpers.assert_error("bad argument #3 to 'roll' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.roll, a, 1, {axis = 2})
    helpers.assert_error("bad argument #2 to 'broadcast_to' (cannot broadcast an array of shape (3,) to (2,4))",
                         gpu.gpuarray.broadcast_to, a, {2, 4})
    helpers.assert_error("bad argument #2 to 'tile' (reps must be a whole number or a list of them, got string)",
                         a.tile, a, "2")
    helpers.assert_error("bad argument #2 to 'tile' (each of reps must be a whole number from 0 on, got -1)",
                         gpu.gpuarray.tile, a, {2, -1})
    helpers.assert_error("bad argument #3 to 'tile' (unknown option 'axis')", a.tile, a, 2, {axis = 1})
    helpers.assert_error("bad argument #2 to 'repeat_interleave' (repeats must be a whole number from 0 on, got 1.5)",
                         a.repeat_interleave, a, 1.5)
    helpers.assert_error("bad argument #3 to 'repeat_interleave' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.repeat_interleave, a, 2, {axis = 2})
    helpers.assert_error("bad argument #1 to 'ptp' (ptp is not defined for bool arrays)",
                         gpu.gpuarray.ptp, gpu.gpuarray.ones({2}, "bool"))
    helpers.assert_error("bad argument #1 to 'ptp' (ptp is not defined for complex64 arrays)",
                         gpu.gpuarray.ptp, gpu.gpuarray.zeros({2}, "complex64"))
    helpers.assert_error("bad argument #1 to 'ptp' (zero-size array to reduction operation maximum which has no identity)",
                         gpu.gpuarray.ptp, gpu.gpuarray.zeros({2, 0}, "float32"), {axis = 2})
    helpers.assert_error("bad argument #2 to 'ptp' (unknown option 'ddof')", a.ptp, a, {ddof = 1})
    a:free()
    m:free()
    helpers.assert_error("bad argument #1 to 'tile' (array has been freed)", a.tile, a, 2)
    helpers.assert_error("bad argument #1 to 'repeat_interleave' (array has been freed)", a.repeat_interleave, a, 2)
    helpers.assert_error("bad argument #1 to 'ptp' (array has been freed)", a.ptp, a)
    helpers.assert_error("bad argument #1 to 'roll' (array has been freed)", a.roll, a, 1)
    helpers.assert_error("bad argument #1 to 'broadcast_to' (array has been freed)", gpu.gpuarray.broadcast_to, a, {3})
    helpers.assert_error("bad argument #1 to 'diff' (array has been freed)", a.diff, a)
    helpers.assert_error("bad argument #1 to 'diagonal' (array has been freed)", m.diagonal, m)
    helpers.assert_error("bad argument #1 to 'tril' (array has been freed)", gpu.gpuarray.tril, m)
    helpers.assert_error("bad argument #1 to 'outer' (array has been freed)", gpu.gpuarray.outer, a, a)
  end)
end)
