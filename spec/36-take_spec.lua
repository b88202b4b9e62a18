-- gpuarray.take, put and scatter_add: gathers and scatters with 1-based indices, the modes for
-- indices out of range, and a[indices] and a[indices] = values; take_along_axis, bincount and
-- histogram.
local helpers = require "helpers"
local gpu = helpers.gpu

describe("gpuarray.take, put and scatter_add", function()
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
  -- Random values of dtype, as Lua sees its elements (complex: {re =, im =}; bool: booleans).
  local function random_values(n, dtype)
    local t = {}
    for i = 1, n do
      if dtype == "bool" then t[i] = math.random() < 0.5
      elseif dtype:match("^complex") then t[i] = gpu.complex(math.random(-99, 99) / 4, math.random(-99, 99) / 4)
      elseif dtype:match("^float") then t[i] = math.random(-999, 999) / 8
      elseif dtype:match("^uint") then t[i] = math.random(0, 100)
      else t[i] = math.random(-100, 100) end
    end
    return t
  end
  local function same(x, y)
    if type(x) == "table" then return x.re == y.re and x.im == y.im end
    return x == y
  end
  -- n distinct indices out of 1..size, in random order
  local function distinct_indices(n, size)
    local all = {}
    for i = 1, size do all[i] = i end
    for i = 1, n do
      local j = math.random(i, size)
      all[i], all[j] = all[j], all[i]
    end
    return table.move(all, 1, n, 1, {})
  end

  helpers.gpu_it("put stores values at indices, repeating fewer values, into any layout", function()
    for _, dtype in ipairs{"int8", "uint16", "float32", "float64", "complex128", "bool"} do
      for _, layout in ipairs{"contiguous", "transposed"} do
        local rows, cols = 30, 41
        local before = random_values(rows * cols, dtype)
        local a = upload(before, dtype):reshape({rows, cols})
        local flat_before = before                    -- a's row-major elements
        if layout == "transposed" then
          a = a.T
          flat_before = helpers.flat(a:get())
        end
        for _, index_dtype in ipairs{"int32", "uint16", "int64"} do
          local n = math.random(1, 500)
          local idx = distinct_indices(n, rows * cols)
          local values = random_values(math.random() < 0.5 and n or math.random(1, 7), dtype)
          local want = table.move(flat_before, 1, #flat_before, 1, {})
          for i = 1, n do want[idx[i]] = values[(i - 1) % #values + 1] end
          local what = ("%s %s by %s"):format(dtype, layout, index_dtype)
          assert.are.equal(a, gpu.gpuarray.put(a, upload(idx, index_dtype), upload(values, dtype)))
          local got = a:get()
          for i = 1, rows * cols do assert.is_true(same(want[i], got[i]), what .. " #" .. i) end
          -- back as it was, through a table of values and a table of indices
          local all = {}
          for i = 1, rows * cols do all[i] = i end
          a:put(all, flat_before)
          got = a:get()
          for i = 1, rows * cols do assert.is_true(same(flat_before[i], got[i]), what .. " restored #" .. i) end
        end
      end
    end
    -- one value for every index, converted as a[i] = value converts it; values of another
    -- dtype as astype converts them
    local a = upload(helpers.random_integers(50, -9, 9), "int16")
    gpu.gpuarray.put(a, {3, 7, 50}, -300)
    local h = a:get()
    assert.are.same({-300, -300, -300}, {h[3], h[7], h[50]})
    gpu.gpuarray.put(a, {1, 2}, upload({2.75, -3.5}, "float32"))
    h = a:get()
    assert.are.same({2, -3}, {h[1], h[2]})
    -- nothing to do: no indices, or no values (as NumPy's put)
    local keep = h:totable()
    gpu.gpuarray.put(a, gpu.empty(0, "int32"), 5)
    gpu.gpuarray.put(a, {1, 2}, gpu.empty(0, "int16"))
    assert.are.same(keep, a:get():totable())
  end)

  helpers.gpu_it("put wraps, clips, or raises before writing anything, and reads its own array", function()
    local size = 9
    local before = helpers.random_integers(size, -1000, 1000)
    local a = upload(before, "int64")
    local idx = {0, -1, 10, 23, 5}                         -- wrap: 9, 8, 1, 5, 5
    gpu.gpuarray.put(a, upload(idx, "int32"), {11, 12, 13, 14, 14}, {mode = "wrap"})
    local want = table.move(before, 1, size, 1, {})
    want[9], want[8], want[1], want[5] = 11, 12, 13, 14
    assert.are.same(want, a:get():totable())
    gpu.gpuarray.put(a, {-4, 100}, {21, 22}, {mode = "clip"})
    want[1], want[9] = 21, 22
    assert.are.same(want, a:get():totable())
    helpers.assert_error("bad argument #2 to 'put' (index 10 at position 3 is out of range for 9 elements)",
                         gpu.gpuarray.put, a, {1, 2, 10, 0}, 7)
    helpers.assert_error("bad argument #2 to 'put' (index 18446744073709551615 at position 2 is out of "
                         .. "range for 9 elements)", gpu.gpuarray.put, a, upload({1, -1}, "uint64"), 7)
    assert.are.same(want, a:get():totable())             -- NumPy's raise: nothing written
    -- values and indices that are a itself are read as they were
    local perm = distinct_indices(size, size)
    local p = upload(perm, "int32")
    gpu.gpuarray.put(p, p, p)                            -- p[perm[i]] = perm[i]: the identity
    for i = 1, size do assert.are.equal(i, p:get()[i]) end
    local reversed = {}
    for i = 1, size do reversed[i] = size + 1 - i end
    local r = upload(before, "int64")
    gpu.gpuarray.put(r, reversed, r)
    local hr = r:get()
    for i = 1, size do assert.are.equal(before[size + 1 - i], hr[i], "reversed #" .. i) end
    -- on a stream
    local s = gpu.Stream()
    local onto = gpu.zeros(4, "float32")
    gpu.gpuarray.put(onto, {4, 1}, {2.5, -1}, {stream = s})
    gpu.gpuarray.scatter_add(onto, {4, 4, 2}, 1, {stream = s})
    s:synchronize()
    assert.are.same({-1, 1, 0, 4.5}, onto:get():totable())
  end)

  helpers.gpu_it("scatter_add adds every value at its index, repeated indices adding up", function()
    local lo = {int8 = -128, int16 = -32768, uint8 = 0, uint16 = 0}
    for _, dtype in ipairs{"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                           "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool"} do
      for _, layout in ipairs{"contiguous", "strided"} do
        local size, n = math.random(1, 60), math.random(1, 5000)
        local a = upload(random_values(size, dtype), dtype)
        if layout == "strided" then                      -- every other element of a longer array
          local every_other = gpu.zeros(2 * size, dtype):slice(1, 2 * size, 2)
          local all = {}
          for i = 1, size do all[i] = i end
          every_other:put(all, a)
          a = every_other
        end
        local idx = helpers.random_integers(n, 1, size)
        local values = upload(random_values(n, dtype), dtype)
        -- as the device holds them (bfloat16 rounds the random values)
        local before, added = helpers.flat(a:get()), helpers.flat(values:get())
        local what = ("%s %s, %d into %d"):format(dtype, layout, n, size)
        assert.are.equal(a, gpu.gpuarray.scatter_add(a, upload(idx, "int32"), values))
        local got = a:get()
        local sum, magnitude, terms = {}, {}, {}
        for i = 1, size do
          local v = before[i]
          if type(v) == "table" then sum[i], magnitude[i] = {re = v.re, im = v.im}, math.abs(v.re) + math.abs(v.im)
          elseif dtype ~= "bool" then magnitude[i] = math.abs(v) end
          if type(v) ~= "table" then sum[i] = v end
          terms[i] = 1
        end
        for i = 1, n do
          local k, v = idx[i], added[i]
          if dtype == "bool" then sum[k] = sum[k] or v
          elseif type(v) == "table" then
            sum[k].re, sum[k].im = sum[k].re + v.re, sum[k].im + v.im
            magnitude[k] = magnitude[k] + math.abs(v.re) + math.abs(v.im)
          else sum[k], magnitude[k] = sum[k] + v, magnitude[k] + math.abs(v) end
          terms[k] = terms[k] + 1
        end
        -- floats: added in any order (in float32 for the 16-bit ones, rounded once at the end)
        local final = ({float16 = 2 ^ -11, bfloat16 = 2 ^ -8})[dtype] or 0
        local unit = (dtype == "float64" or dtype == "complex128") and 2 ^ -53 or 2 ^ -24
        for i = 1, size do
          local want, g = sum[i], got[i]
          if lo[dtype] then                              -- narrow integers wrap
            local bits = dtype:match("%d+") + 0
            assert.are.equal((want - lo[dtype]) % (1 << bits) + lo[dtype], g, what .. " #" .. i)
          elseif dtype == "bool" or dtype:match("int") then
            assert.are.equal(want, g, what .. " #" .. i)
          else
            local function check(w, x, part)
              local tol = final * math.abs(w) + terms[i] * unit * magnitude[i]
              assert(math.abs(w - x) <= tol, ("%s #%d%s: expected %.9g, got %.9g"):format(what, i, part, w, x))
            end
            if type(want) == "table" then check(want.re, g.re, ".re"); check(want.im, g.im, ".im")
            else check(want, g, "") end
          end
        end
      end
    end
    -- one value for every index: a histogram
    local counts = gpu.zeros(10, "int64")
    local idx = helpers.random_integers(20000, 1, 10)
    gpu.gpuarray.scatter_add(counts, upload(idx, "int16"), 1)
    local want = {}
    for i = 1, 10 do want[i] = 0 end
    for _, k in ipairs(idx) do want[k] = want[k] + 1 end
    assert.are.same(want, counts:get():totable())
    -- int64 and uint64 wrap in 64 bits
    local big = upload({math.maxinteger, -1}, "int64")
    gpu.gpuarray.scatter_add(big, {1, 2}, {1, math.mininteger})
    assert.are.same({math.mininteger, math.maxinteger}, big:get():totable())
  end)

  helpers.gpu_it("a[indices] gathers and a[indices] = values scatters, as take and put", function()
    local values = helpers.random_integers(24, -50, 50)
    local a = upload(values, "int32"):reshape({4, 6})
    local idx = helpers.random_integers(10, 1, 24)
    local picked = a[upload(idx, "int64"):reshape({2, 5})]
    assert.are.same({2, 5}, picked.shape)
    local hp = picked:get()
    for i = 1, 10 do assert.are.equal(values[idx[i]], hp[i]) end
    assert.are.same({values[24], values[1]}, a[{24, 1}]:get():totable())
    local spots = distinct_indices(6, 24)
    a[upload(spots, "uint8")] = -7
    a[{spots[1], spots[2]}] = upload({100, 200}, "int32")
    local want = table.move(values, 1, 24, 1, {})
    for i = 1, 6 do want[spots[i]] = -7 end
    want[spots[1]], want[spots[2]] = 100, 200
    assert.are.same(want, helpers.flat(a:get()))
    -- a transposed view's own row-major order
    local t = a.T
    local ht = t:get()
    assert.are.same({ht[1], ht[5], ht[24]}, t[{1, 5, 24}]:get():totable())
    helpers.assert_error("bad argument #2 to 'take' (index 25 at position 2 is out of range for 24 elements)",
                         function() return a[{1, 25}] end)
    helpers.assert_error("bad argument #2 to 'put' (index 0 at position 1 is out of range for 24 elements)",
                         function() a[{0}] = 1 end)
    helpers.assert_error("GPUArray index array must hold integers or bools, got float64",
                         function() return a[gpu.zeros(2)] end)
    local freed = upload({1}, "int32")
    freed:free()
    helpers.assert_error("GPUArray index array has been freed", function() a[freed] = 1 end)
    local _, err = pcall(function() return a[gpu.zeros(2, "float32")] end)
    assert.matches("36%-take_spec%.lua:%d+: GPUArray index array", err)
  end)

  helpers.gpu_it("put and scatter_add name what is wrong", function()
    local a = upload({1, 2, 3}, "int8")
    helpers.assert_error("bad argument #1 to 'put' (GPUArray expected, got table)", gpu.gpuarray.put, {1}, {1}, 1)
    helpers.assert_error("bad argument #2 to 'put' (indices must be integers, got float32)",
                         gpu.gpuarray.put, a, upload({1}, "float32"), 1)
    helpers.assert_error("bad argument #3 to 'put' (300 is out of range for int8)", gpu.gpuarray.put, a, {1}, 300)
    helpers.assert_error("bad argument #3 to 'put' (expected a number, got string)", gpu.gpuarray.put, a, {1}, "x")
    helpers.assert_error("bad argument #3 to 'put' (values must be a GPUArray, a value or a table of values "
                         .. "for int8)", gpu.gpuarray.put, a, {1}, {1, "x"})
    helpers.assert_error("bad argument #4 to 'put' (unknown option 'out')", gpu.gpuarray.put, a, {1}, 1, {out = a})
    helpers.assert_error("bad argument #4 to 'scatter_add' (option 'mode' must be 'raise', 'wrap' or 'clip', "
                         .. "got 'Wrap')", gpu.gpuarray.scatter_add, a, {1}, 1, {mode = "Wrap"})
    helpers.assert_error("bad argument #3 to 'scatter_add' (values has 2 elements and indices 3: give one "
                         .. "value or one for each index)", gpu.gpuarray.scatter_add, a, {1, 2, 3}, {1, 2})
    helpers.assert_error("bad argument #2 to 'scatter_add' (index 4 at position 1 is out of range for 3 "
                         .. "elements)", gpu.gpuarray.scatter_add, a, {4, 1}, 1)
    helpers.assert_error("bad argument #2 to 'put' (cannot put into an empty array)",
                         gpu.gpuarray.put, gpu.empty(0, "int8"), {1}, 1, {mode = "wrap"})
    assert.are.same({1, 2, 3}, a:get():totable())
    local freed = upload({1}, "int8")
    freed:free()
    helpers.assert_error("bad argument #3 to 'put' (array has been freed)", gpu.gpuarray.put, a, {1}, freed)
    helpers.assert_error("bad argument #1 to 'scatter_add' (array has been freed)",
                         gpu.gpuarray.scatter_add, freed, {1}, 1)
  end)
  -- take_along_axis against the same gather done in Lua over the row-major values: out's
  -- element at multi-index j reads a at j with axis' coordinate replaced by the index there.
  helpers.gpu_it("take_along_axis gathers along each axis; argsort's indices give the sort", function()
    local shape = {4, 5, 6}
    local size = 4 * 5 * 6
    local values = {}
    for i = 1, size do values[i] = math.random(-1000, 1000) / 8 end
    local a = upload(values, "float32"):reshape(shape)
    local function flat_of(index)   -- 1-based multi-index of shape -> 1-based flat position
      local k = 0
      for d = 1, #shape do k = k * shape[d] + index[d] - 1 end
      return k + 1
    end
    local s = gpu.Stream()
    for axis = 1, 3 do
      for _, length in ipairs{1, 3, 7} do
        local where_shape = {table.unpack(shape)}
        where_shape[axis] = length
        local count = where_shape[1] * where_shape[2] * where_shape[3]
        local where = random_indices(count, shape[axis])
        for _, dtype in ipairs{"int64", "int32"} do
          local indices = upload(where, dtype):reshape(where_shape)
          local got = gpu.gpuarray.take_along_axis(a, indices, axis, {stream = s})
          s:synchronize()
          assert.are.same(where_shape, got.shape)
          assert.are.equal("float32", got.dtype)
          local h = got:get()
          local k = 0
          for i1 = 1, where_shape[1] do
            for i2 = 1, where_shape[2] do
              for i3 = 1, where_shape[3] do
                k = k + 1
                local index = {i1, i2, i3}
                index[axis] = where[k]
                local want = values[flat_of(index)]
                if h[k] ~= want then
                  error(("axis %d, length %d, %s at %d: got %s, expected %s"):format(axis, length,
                        dtype, k, h[k], want))
                end
              end
            end
          end
        end
      end
      -- argsort's indices put each line in order; a transposed view reads in its own order
      local sorted = gpu.gpuarray.sort(a, {axis = axis}):get()
      local by_argsort = gpu.gpuarray.take_along_axis(a, gpu.gpuarray.argsort(a, {axis = axis}), axis):get()
      for i = 1, size do assert.are.equal(sorted[i], by_argsort[i]) end
      local t = a:transpose()
      local t_sorted = gpu.gpuarray.sort(t, {axis = axis}):get()
      local t_taken = gpu.gpuarray.take_along_axis(t, gpu.gpuarray.argsort(t, {axis = axis}), axis):get()
      for i = 1, size do assert.are.equal(t_sorted[i], t_taken[i]) end
    end
    local one_past = random_indices(4 * 3 * 6, 5)
    one_past[math.random(#one_past)] = 6
    helpers.assert_error("bad argument #2 to 'take_along_axis' (indices must be from 1 to 5 (axis 2's length))",
                         gpu.gpuarray.take_along_axis, a, upload(one_past, "int64"):reshape(4, 3, 6), 2)
    helpers.assert_error("bad argument #2 to 'take_along_axis' (indices must be from 1 to 6 (axis 3's length))",
                         gpu.gpuarray.take_along_axis, a, gpu.gpuarray.zeros({4, 5, 2}, "int64"), 3)
    helpers.assert_error("bad argument #2 to 'take_along_axis' (indices have shape (4,3,5), the array (4,5,6): they must agree off axis 2)",
                         gpu.gpuarray.take_along_axis, a, gpu.gpuarray.ones({4, 3, 5}, "int64"), 2)
    helpers.assert_error("bad argument #2 to 'take_along_axis' (indices are 2-d, the array 3-d)",
                         gpu.gpuarray.take_along_axis, a, gpu.gpuarray.ones({4, 3}, "int64"), 2)
    helpers.assert_error("bad argument #4 to 'take_along_axis' (unknown option 'mode')",
                         gpu.gpuarray.take_along_axis, a, gpu.gpuarray.ones({4, 5, 6}, "int64"), 2, {mode = "wrap"})
    a:free()
    helpers.assert_error("bad argument #1 to 'take_along_axis' (array has been freed)",
                         gpu.gpuarray.take_along_axis, a, {1}, 1)
  end)

  helpers.gpu_it("bincount counts each value from 0, weighted or not, as NumPy's", function()
    for _, dtype in ipairs{"int8", "uint8", "int32", "int64", "uint64"} do
      local n, highest = math.random(1, 20000), math.random(0, 120)
      local values = helpers.random_integers(n, 0, highest)
      local x = upload(values, dtype)
      local minlength = math.random(0, 1) * math.random(1, 200)
      local counts = gpu.gpuarray.bincount(x, {minlength = minlength})
      local top = math.max(minlength, math.max(table.unpack(values, 1, math.min(n, 4000))) + 1)
      for i = 4001, n do top = math.max(top, values[i] + 1) end
      assert.are.equal("int64", counts.dtype)
      assert.are.same({top}, counts.shape, dtype)
      local want = {}
      for i = 1, top do want[i] = 0 end
      for _, v in ipairs(values) do want[v + 1] = want[v + 1] + 1 end
      assert.are.same(want, counts:get():totable(), dtype)
      -- weights: summed in float64 (a GPUArray of float32, or a table)
      local weights = helpers.random_floats(n, 10)
      local as_array = math.random() < 0.5
      local w = as_array and upload(weights, "float32") or weights
      local weighted = gpu.gpuarray.bincount(x, {weights = w})
      assert.are.equal("float64", weighted.dtype)
      local sums, magnitude = {}, {}
      for i = 1, top do sums[i], magnitude[i] = 0, 0 end
      for i, v in ipairs(values) do
        local wi = as_array and helpers.f32(weights[i]) or weights[i]
        sums[v + 1], magnitude[v + 1] = sums[v + 1] + wi, magnitude[v + 1] + math.abs(wi)
      end
      local got = weighted:get()
      for i = 1, #got do
        assert(math.abs(got[i] - sums[i]) <= n * 2 ^ -52 * magnitude[i], ("%s weighted #%d"):format(dtype, i))
      end
    end
    assert.are.same({0, 0, 0}, gpu.gpuarray.bincount(gpu.empty(0, "int16"), {minlength = 3}):get():totable())
    local x = upload({3, 0, -2, 5}, "int16")
    helpers.assert_error("bad argument #1 to 'bincount' (values must not be negative, got -2)", gpu.gpuarray.bincount, x)
    helpers.assert_error("bad argument #1 to 'bincount' (value 18446744073709551615 is too large to count)",
                         gpu.gpuarray.bincount, upload({1, -1}, "uint64"))
    helpers.assert_error("bad argument #1 to 'bincount' (value 9223372036854775807 is too large to count)",
                         gpu.gpuarray.bincount, upload({math.maxinteger}, "int64"))
    helpers.assert_error("bad argument #1 to 'bincount' (a 1-d array of integers expected, got float32 of shape (2,))",
                         gpu.gpuarray.bincount, gpu.zeros(2, "float32"))
    helpers.assert_error("bad argument #1 to 'bincount' (a 1-d array of integers expected, got int32 of shape (2,2))",
                         gpu.gpuarray.bincount, gpu.zeros({2, 2}, "int32"))
    helpers.assert_error("bad argument #2 to 'bincount' (option 'minlength' must be a whole number, 0 or more, got 1.5)",
                         gpu.gpuarray.bincount, upload({1}, "int32"), {minlength = 1.5})
    helpers.assert_error("bad argument #2 to 'bincount' (option 'weights' must be a GPUArray or a table of 2 "
                         .. "numbers)", gpu.gpuarray.bincount, upload({1, 2}, "int32"), {weights = {1}})
    helpers.assert_error("bad argument #2 to 'bincount' (option 'weights' must be a GPUArray or a table of 2 "
                         .. "numbers)", gpu.gpuarray.bincount, upload({1, 2}, "int32"), {weights = gpu.zeros(3)})
    helpers.assert_error("bad argument #2 to 'bincount' (unknown option 'weight')",
                         gpu.gpuarray.bincount, upload({1, 2}, "int32"), {weight = {1, 2}})
  end)
  helpers.gpu_it("histogram counts values between edges, as NumPy's", function()
    -- the bin of v among edges (a Lua list), as NumPy's: edges[b] <= v < edges[b + 1], the
    -- last bin closed, nil outside or for NaN
    local function bin_of(v, edges)
      local last = #edges
      if not (v >= edges[1] and v <= edges[last]) then return nil end
      local b = 1
      while b < last - 1 and edges[b + 1] <= v do b = b + 1 end
      return b
    end
    local function check(x, counts, edges, weights, what)
      local hx, he = helpers.flat(x:get()), helpers.flat(edges:get())
      local want, magnitude, terms = {}, {}, {}
      for b = 1, #he - 1 do want[b], magnitude[b], terms[b] = 0, 0, 0 end
      for i, v in ipairs(hx) do
        local b = bin_of(v, he)
        if b then
          local w = weights and weights[i] or 1
          want[b], magnitude[b], terms[b] = want[b] + w, magnitude[b] + math.abs(w), terms[b] + 1
        end
      end
      local got = counts:get()
      assert.are.equal(#he - 1, counts.size, what)
      for b = 1, #he - 1 do      -- weights add in float64 in any order
        local tol = weights and terms[b] * 2 ^ -52 * magnitude[b] or 0
        assert(math.abs(want[b] - got[b]) <= tol, ("%s bin %d: expected %.17g, got %.17g"):format(what, b, want[b], got[b]))
      end
    end
    for _, dtype in ipairs{"float32", "float64", "float16", "int32", "uint8"} do
      local n = math.random(1, 20000)
      local values = {}
      for i = 1, n do
        if dtype:match("float") then
          local r = math.random()
          values[i] = r < 0.02 and 0 / 0 or r < 0.1 and math.random(-4, 4) / 2 or (math.random() * 2 - 1) * 3
        else values[i] = math.random(0, 200) end
      end
      local x = upload(values, dtype)
      if n % 3 == 0 then x = x:reshape({3, n // 3}) end
      local bins = math.random(1, 40)
      -- equal bins over a range: NaN and values outside count nowhere, values on an edge
      -- go to the bin above it, the top edge to the last bin
      local lo, hi = math.random(-3, 0), math.random(1, 250)
      local counts, edges = gpu.gpuarray.histogram(x, {bins = bins, range = {lo, hi}})
      assert.are.equal(dtype:match("float") and dtype or "float64", edges.dtype)
      local he, step = edges:get(), (hi - lo) / bins
      for i = 0, bins do
        local want = i == bins and hi or i * step + lo
        if dtype:match("float") then
          local h = gpu.host.empty(1, dtype)
          h[1] = want
          want = h[1]
        end
        assert.are.equal(want, he[i + 1], ("%s edge %d"):format(dtype, i + 1))
      end
      check(x, counts, edges, nil, dtype .. " range")
      if not dtype:match("float") then                   -- x's own range (floats have NaNs)
        counts, edges = gpu.gpuarray.histogram(x, {bins = bins})
        check(x, counts, edges, nil, dtype .. " own range")
      end
      -- edges of one's own, and weights summed in float64
      local cuts = {-2.5, -1, 0, 0.5, 2, 50, 199}
      local weights = helpers.random_floats(n, 4)
      counts, edges = gpu.gpuarray.histogram(x, {bins = cuts, weights = weights})
      assert.are.equal("float64", counts.dtype)
      check(x, counts, edges, weights, dtype .. " edges, weights")
      local cuts_on_device = upload(cuts, "float32")
      counts, edges = gpu.gpuarray.histogram(x:ravel():slice(1, n, 2), {bins = cuts_on_device})
      assert.are.equal(cuts_on_device, edges)
      check(x:ravel():slice(1, n, 2), counts, edges, nil, dtype .. " strided, device edges")
    end
    -- every value alike: a unit-wide range around it, as NumPy's
    local counts, edges = gpu.gpuarray.histogram(upload({5, 5, 5}, "int16"), {bins = 2})
    assert.are.same({4.5, 5, 5.5}, edges:get():totable())
    assert.are.same({0, 3}, counts:get():totable())
    counts, edges = gpu.gpuarray.histogram(gpu.empty(0, "float32"), {bins = 4})
    assert.are.same({0, 0, 0, 0}, counts:get():totable())
    assert.are.same({0, 0.25, 0.5, 0.75, 1}, edges:get():totable())
    local x = upload({1, 0 / 0}, "float64")
    helpers.assert_error("bad argument #1 to 'histogram' (the range of x's values, [nan, nan], is not finite)",
                         gpu.gpuarray.histogram, upload({0 / 0}, "float64"))
    helpers.assert_error("bad argument #1 to 'histogram' (an array of integers or floats expected, got bool)",
                         gpu.gpuarray.histogram, gpu.zeros(2, "bool"))
    helpers.assert_error("bad argument #2 to 'histogram' (option 'bins' must increase: edge 2 is 3, edge 3 1)",
                         gpu.gpuarray.histogram, x, {bins = {0, 3, 1}})
    helpers.assert_error("bad argument #2 to 'histogram' (option 'bins' must be a whole number or at least two "
                         .. "increasing edges (a GPUArray or table))", gpu.gpuarray.histogram, x, {bins = {1}})
    helpers.assert_error("bad argument #2 to 'histogram' (option 'bins' must be at least 1, got 0)",
                         gpu.gpuarray.histogram, x, {bins = 0})
    helpers.assert_error("bad argument #2 to 'histogram' (option 'range' {1, 0} ends below its start)",
                         gpu.gpuarray.histogram, x, {range = {1, 0}})
    helpers.assert_error("bad argument #2 to 'histogram' (option 'range' {0, inf} is not finite)",
                         gpu.gpuarray.histogram, x, {range = {0, 1 / 0}})
    helpers.assert_error("bad argument #2 to 'histogram' (option 'range' goes with a number of bins, not edges)",
                         gpu.gpuarray.histogram, x, {bins = {0, 1}, range = {0, 1}})
    helpers.assert_error("bad argument #2 to 'histogram' (unknown option 'density')",
                         gpu.gpuarray.histogram, x, {density = true})
  end)
end)
