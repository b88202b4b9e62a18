-- gpuarray.sort, a:sort(), gpuarray.argsort, searchsorted and topk, against Lua's table.sort
-- in NumPy's order.
local helpers = require "helpers"
local gpu = helpers.gpu
local sort = require "gpu.sort"
local A = require "array_reference"

local REAL = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "bfloat16", "float32", "float64"}

-- Whether x sorts before y in NumPy's order for dtype: NaN last, uint64 unsigned, complex
-- numbers by which parts are NaN, then by real and imaginary part.
local function before(dtype, x, y)
  if dtype == "bool" then return not x and y end
  if dtype:match("complex") then
    local function nans(z) return (z.re ~= z.re and 2 or 0) + (z.im ~= z.im and 1 or 0) end
    local nx, ny = nans(x), nans(y)
    if nx ~= ny then return nx < ny end
    if nx == 0 then return x.re < y.re or (x.re == y.re and x.im < y.im) end
    if nx == 1 then return x.re < y.re end
    if nx == 2 then return x.im < y.im end
    return false
  end
  if dtype == "uint64" then return math.ult(x, y) end
  return x < y or (y ~= y and x == x)
end

-- Random values of dtype with many repeats (and NaNs and infinities for floats), as stored.
local function random_values(dtype, n)
  local h = gpu.host.empty(n, dtype)
  local values = {}
  for i = 1, n do
    local v
    local function part() local r = math.random(0, 5) return r == 5 and 0 / 0 or r - 2 end
    if dtype == "bool" then v = math.random() < 0.5
    elseif dtype:match("complex") then
      v = math.random() < 0.1 and gpu.complex(part(), part()) or gpu.complex(math.random(-3, 3), math.random(-3, 3))
    elseif dtype:match("float") then
      local r = math.random()
      v = r < 0.05 and 0 / 0 or r < 0.07 and 1 / 0 or r < 0.09 and -1 / 0 or r < 0.11 and -0.0
          or math.random(-40, 40) / 8                        -- -0.0 ties with 0.0
    elseif dtype == "uint64" then v = math.random(0, 20) * (1 << 59) + math.random(0, 3)
    elseif dtype:match("^u") then v = math.random(0, 50)
    else v = math.random(-50, 50) end
    h[i] = v
    values[i] = h[i]
  end
  return gpu.to_gpu(h), values
end

local function same(dtype, x, y)
  if dtype:match("complex") then
    return same("float64", x.re, y.re) and same("float64", x.im, y.im)
  end
  if dtype:match("float") and x ~= x then return y ~= y end
  return x == y
end

-- The stable order of values: 1-based positions sorted by (value, position).
local function stable_order(dtype, values)
  local order = {}
  for i = 1, #values do order[i] = i end
  table.sort(order, function(i, j)
    local x, y = values[i], values[j]
    if before(dtype, x, y) then return true end
    if before(dtype, y, x) then return false end
    return i < j
  end)
  return order
end

describe("sort (CPU: NVRTC only)", function()
  it("compiles for every dtype, with and without indices", function()
    for _, dtype in ipairs{"complex64", "complex128", table.unpack(REAL)} do
      for _, with_indices in ipairs{false, true} do
        assert.is_true(#gpu.compile(sort.source(dtype, with_indices), {target = "ptx", no_extern_c = true}) > 0)
      end
    end
    for _, dtype in ipairs(REAL) do
      assert.is_true(#gpu.compile(sort.select_source(dtype), {target = "ptx", no_extern_c = true}) > 0)
    end
  end)

  it("routes rows by length: the bitonic network, a block a row, or a pass a byte #nvrtc", function()
    -- on the stand-in driver (launches run nothing): the sort kernels each call looked up
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local kernel_cache = require "gpu.kernel_cache"
      local get, asked = kernel_cache.get, {}
      kernel_cache.get = function(key, build)
        if key:match("^sort|") then asked[#asked + 1] = key:match("[^|]+$") end
        return get(key, build)
      end
      for _, case in ipairs{{"float32", 256}, {"float32", 257}, {"int8", 4096}, {"float32", 4097},
                            {"float64", 2048}, {"float64", 2049}, {"complex64", 5000}} do
        for _, fname in ipairs{"sort", "argsort"} do
          asked = {}
          gpu.gpuarray[fname](gpu.zeros({2, case[2]}, case[1]))
          print(case[1], case[2], fname, table.concat(asked, " "))
        end
      end
    ]])
    assert(ok, out)
    local bitonic, tile, passes = "gpu_sort_step gpu_sort_chunk", "gpu_radix_sort_tiles",
                                  "gpu_radix_histogram gpu_radix_scatter"
    local want = {
      "float32 256 sort " .. bitonic, "float32 256 argsort gpu_sort_init_indices " .. bitonic,
      "float32 257 sort " .. tile, "float32 257 argsort " .. tile,
      "int8 4096 sort " .. tile, "int8 4096 argsort " .. tile,
      "float32 4097 sort " .. passes, "float32 4097 argsort " .. passes,
      "float64 2048 sort " .. tile, "float64 2048 argsort " .. tile,
      "float64 2049 sort " .. passes, "float64 2049 argsort " .. passes,
      "complex64 5000 sort " .. bitonic, "complex64 5000 argsort gpu_sort_init_indices " .. bitonic,
    }
    assert.are.equal(table.concat(want, "\n") .. "\n", (out:gsub("\t", " ")))
  end)

  it("names a bad argument", function()
    helpers.assert_error("bad argument #1 to 'sort' (GPUArray expected, got number)", gpu.gpuarray.sort, 1)
    helpers.assert_error("bad argument #1 to 'argsort' (GPUArray expected, got nil)", gpu.gpuarray.argsort)
  end)
end)

describe("sort", function()
  helpers.gpu_it("sorts every dtype in NumPy's order, and argsort is stable", function()
    local all = {table.unpack(REAL)}
    all[#all + 1], all[#all + 2] = "complex64", "complex128"
    for _, dtype in ipairs(all) do
      for _, n in ipairs{1, 2, 3, 5, 16, 17, 100, 1000, 4097} do
        local a, values = random_values(dtype, n)
        local order = stable_order(dtype, values)
        local what = ("%s[%d]"):format(dtype, n)
        local s = gpu.gpuarray.sort(a):get()
        for i = 1, n do
          assert(same(dtype, values[order[i]], s[i]), ("%s sorted #%d: got %s, expected %s")
                 :format(what, i, tostring(s[i]), tostring(values[order[i]])))
        end
        local idx = gpu.gpuarray.argsort(a)
        assert.are.equal("int64", idx.dtype)
        assert.are.same(order, idx:get():totable(), what .. " argsort")
        local kept = a:get()                       -- the radix sorts read a, writing elsewhere
        for i = 1, n do assert(same(dtype, values[i], kept[i]), what .. " unchanged #" .. i) end
        a:sort()                                   -- in place
        local h = a:get()
        for i = 1, n do assert(same(dtype, s[i], h[i]), what .. " in place #" .. i) end
      end
    end
    -- long ones: past one block's worth of pairs, and over 25 and 35 radix tiles
    local a, values = random_values("float32", 100001)
    local order = stable_order("float32", values)
    assert.are.same(order, gpu.gpuarray.argsort(a):get():totable())
    a, values = random_values("float64", 70001)
    order = stable_order("float64", values)
    assert.are.same(order, gpu.gpuarray.argsort(a):get():totable())
    local s = gpu.gpuarray.sort(a):get()
    for i = 1, #values do assert(same("float64", values[order[i]], s[i]), "float64[70001] sorted #" .. i) end
  end)

  helpers.gpu_it("sorts along any axis of views, in place or into a copy", function()
    local values = {}
    for i = 1, 4 * 5 * 6 do values[i] = math.random(-9, 9) end
    local base = gpu.to_gpu(gpu.host.from_table(values, "int32")):reshape(4, 5, 6)
    local t = base:transpose({3, 1, 2})               -- (6, 4, 5), strided
    local shape = {6, 4, 5}
    local function at(i, j, k) return values[((j - 1) * 5 + (k - 1)) * 6 + i] end   -- t[i][j][k]
    for axis = 1, 3 do
      local sorted = gpu.gpuarray.sort(t, {axis = axis}):get():totable()
      local indices = gpu.gpuarray.argsort(t, {axis = axis - 4}):get():totable()   -- negative
      for i = 1, shape[1] do
        for j = 1, shape[2] do
          for k = 1, shape[3] do
            local pos = {i, j, k}
            local line = {}
            for r = 1, shape[axis] do
              pos[axis] = r
              line[r] = at(pos[1], pos[2], pos[3])
            end
            pos[axis] = nil
            local want = stable_order("int32", line)
            local r = ({i, j, k})[axis]
            local got_value = sorted[i][j][k]
            local got_index = indices[i][j][k]
            assert.are.equal(line[want[r]], got_value, ("axis %d at %d,%d,%d"):format(axis, i, j, k))
            assert.are.equal(want[r], got_index, ("argsort axis %d at %d,%d,%d"):format(axis, i, j, k))
          end
        end
      end
    end
    -- in place on the strided view: base's memory holds the sorted columns afterwards
    local s = gpu.Stream()
    t:sort({axis = 1, stream = s})
    s:synchronize()
    local h = base:get():totable()
    for j = 1, 4 do
      for k = 1, 5 do
        local line = {}
        for i = 1, 6 do line[i] = at(i, j, k) end
        table.sort(line)
        for i = 1, 6 do assert.are.equal(line[i], h[j][k][i], ("in place %d,%d,%d"):format(i, j, k)) end
      end
    end
    -- rows longer than a 2048-element chunk, and many short rows
    local wide, wv = random_values("int16", 3 * 5000)
    wide = wide:reshape(3, 5000)
    local hs = gpu.gpuarray.sort(wide):get()
    local ha = gpu.gpuarray.argsort(wide, {axis = 1}):get()
    for r = 1, 3 do
      local line = {table.unpack(wv, (r - 1) * 5000 + 1, r * 5000)}
      table.sort(line)
      for c = 1, 5000 do assert.are.equal(line[c], hs[(r - 1) * 5000 + c], ("row %d #%d"):format(r, c)) end
    end
    for c = 1, 5000 do
      local want = stable_order("int16", {wv[c], wv[5000 + c], wv[10000 + c]})
      for r = 1, 3 do assert.are.equal(want[r], ha[(r - 1) * 5000 + c], ("column %d #%d"):format(c, r)) end
    end
    -- argsort of rows of eight-byte keys, longer than a chunk and than a radix tile
    local long, lv = random_values("float64", 3 * 2500)
    local hl = gpu.gpuarray.argsort(long:reshape(3, 2500)):get()
    for r = 1, 3 do
      local want = stable_order("float64", {table.unpack(lv, (r - 1) * 2500 + 1, r * 2500)})
      for c = 1, 2500 do assert.are.equal(want[c], hl[(r - 1) * 2500 + c], ("float64 row %d #%d"):format(r, c)) end
    end
    assert.are.same({0}, gpu.gpuarray.sort(gpu.zeros({0}, "float32")).shape)
    assert.are.same({3, 0}, gpu.gpuarray.argsort(gpu.zeros({3, 0}, "float32")).shape)
  end)

  helpers.gpu_it("sorts rows of many radix tiles on a stream, whatever their digits", function()
    -- Every tile of a row waits on the counts of the tiles before it (the look-back): rows of
    -- 80 tiles, on a non-blocking stream, with keys whose digits are random, all alike in a
    -- byte, or in order, or reversed.
    local rows, len = 3, 80 * 4096 + 123
    local SHIFT = 1 << 20                         -- above any position
    local s = gpu.Stream({non_blocking = true})
    local kinds = {
      random = function() return math.random(-2^31, 2^31 - 1) end,
      low_bytes_alike = function() return math.random(-3000, 3000) * 256 + 7 end,
      ascending = function(i) return i - 200000 end,
      descending = function(i) return 500000 - i end,
    }
    for name, make in pairs(kinds) do
      local h = gpu.host.empty({rows, len}, "int32")
      local values = {}
      for r = 1, rows do
        for c = 1, len do
          local v = make(c)
          h[(r - 1) * len + c] = v
          values[(r - 1) * len + c] = v
        end
      end
      local a = gpu.to_gpu(h)
      local sorted = gpu.gpuarray.sort(a, {stream = s})
      local indices = gpu.gpuarray.argsort(a, {stream = s})
      s:synchronize()
      local hs, hi = sorted:get(), indices:get()
      for r = 1, rows do
        local base = (r - 1) * len
        local keys = {}          -- value and position in one integer: table.sort's own order
        for c = 1, len do keys[c] = values[base + c] * SHIFT + c end
        table.sort(keys)
        for c = 1, len do
          local want, at = keys[c] // SHIFT, keys[c] % SHIFT
          if hs[base + c] ~= want or hi[base + c] ~= at then
            error(("%s: row %d #%d: sorted %d, index %d; expected %d, index %d"):format(
              name, r, c, hs[base + c], hi[base + c], want, at))
          end
        end
      end
    end
  end)

  helpers.gpu_it("sorts rows that fit one radix tile whole in shared memory", function()
    -- Longer than a 2048-key chunk, at most a 4096-key tile: every byte's pass in one block.
    for _, case in ipairs{{"float32", 3, 4096}, {"int16", 5, 2049}, {"uint8", 2, 3000}, {"int32", 70, 2100}} do
      local dtype, rows, len = case[1], case[2], case[3]
      local a, values = random_values(dtype, rows * len)
      a = a:reshape(rows, len)
      local hs, hi = gpu.gpuarray.sort(a):get(), gpu.gpuarray.argsort(a):get()
      a:sort()                                     -- in place
      local hp = a:get()
      for r = 1, rows do
        local base = (r - 1) * len
        local line = {table.unpack(values, base + 1, base + len)}
        local order = stable_order(dtype, line)
        for c = 1, len do
          local want = line[order[c]]
          if not same(dtype, want, hs[base + c]) or not same(dtype, want, hp[base + c])
             or hi[base + c] ~= order[c] then
            error(("%s[%d x %d] row %d #%d: sorted %s, in place %s, index %d; expected %s, index %d")
                  :format(dtype, rows, len, r, c, tostring(hs[base + c]), tostring(hp[base + c]),
                          hi[base + c], tostring(want), order[c]))
          end
        end
      end
    end
  end)

  helpers.gpu_it("keeps the order through bytes in which a row's keys all have one digit", function()
    -- In rows of many tiles such a byte's pass is a copy; rows of one array differ in which
    -- bytes those are: small keys (high bytes alike), keys alike in every byte, keys alike in
    -- the lowest byte only, and keys spread over the dtype's range.  (Rows of one tile too.)
    -- Checks the rows of host array h (rows x len) against their stable order: sorted,
    -- indices and, when given, in_place are the GPU's results as host arrays.
    local function check_rows(dtype, h, rows, len, labels, sorted, indices, in_place)
      for r = 1, rows do
        local base = (r - 1) * len
        local line = {}
        for c = 1, len do line[c] = h[base + c] end
        local want = stable_order(dtype, line)
        for c = 1, len do
          local expected, got_in_place = line[want[c]], in_place and in_place[base + c]
          if sorted[base + c] ~= expected or indices[base + c] ~= want[c] or
             (in_place and got_in_place ~= expected) then
            error(("%s[%d x %d] %s row: #%d sorted %s, in place %s, index %d; expected %s, index %d")
                  :format(dtype, rows, len, labels[r], c, tostring(sorted[base + c]),
                          tostring(got_in_place), indices[base + c], tostring(expected), want[c]))
          end
        end
      end
    end
    local kinds = {
      small = function(dtype)                      -- a float32 in [1, 2): its top byte alike
        return dtype == "float32" and 1 + math.random(0, 999) / 1000 or math.random(0, 999)
      end,
      alike = function() return 42 end,
      low_byte_alike = function() return math.random(-3000, 3000) * 256 + 7 end,
      spread = function(dtype)
        if dtype == "float32" then return (math.random() - 0.5) * 2^math.random(-20, 20) end
        if dtype == "int32" then return math.random(-2^31, 2^31 - 1) end
        return math.random(math.mininteger, math.maxinteger)
      end,
    }
    local order = {"small", "alike", "low_byte_alike", "spread"}
    for _, case in ipairs{{"int32", 3 * 4096 + 5}, {"int64", 2 * 2048 + 3}, {"float32", 3 * 4096 + 5},
                          {"int32", 3000}, {"int64", 1500}, {"float32", 4000}} do
      local dtype, len = case[1], case[2]
      local h = gpu.host.empty({#order, len}, dtype)
      for r, kind in ipairs(order) do
        for c = 1, len do h[(r - 1) * len + c] = kinds[kind](dtype) end
      end
      local a = gpu.to_gpu(h)
      local hs, hi = gpu.gpuarray.sort(a):get(), gpu.gpuarray.argsort(a):get()
      a:sort()                                     -- in place
      check_rows(dtype, h, #order, len, order, hs, hi, a:get())
    end
    -- One-byte keys have one pass, which is also the last: it writes the int64 indices.
    for _, dtype in ipairs{"uint8", "bool"} do
      local len = 3 * 4096 + 5
      local h = gpu.host.empty({2, len}, dtype)
      for c = 1, len do
        h[c] = dtype == "bool" or 7                                          -- alike
        h[len + c] = dtype == "bool" and math.random() < 0.5 or math.random(0, 255)
      end
      local a = gpu.to_gpu(h)
      check_rows(dtype, h, 2, len, {"alike", "spread"}, gpu.gpuarray.sort(a):get(),
                 gpu.gpuarray.argsort(a):get())
    end
  end)

  helpers.gpu_it("searchsorted finds 1-based places in NumPy's order, either side of ties", function()
    local dtypes = {"complex64", "complex128"}
    for _, dtype in ipairs(REAL) do dtypes[#dtypes + 1] = dtype end
    for _, dtype in ipairs(dtypes) do
      local n, m = math.random(1, 400), math.random(1, 300)
      local unsorted = random_values(dtype, n)
      local a = gpu.gpuarray.sort(unsorted)
      local keys = a:get()
      local probes, wanted = random_values(dtype, m)
      if m % 2 == 0 then probes = probes:reshape({2, m // 2}) end
      for _, side in ipairs{"left", "right"} do
        local got = gpu.gpuarray.searchsorted(a, probes, {side = side})
        assert.are.same(probes.shape, got.shape)
        assert.are.equal("int64", got.dtype)
        local h = got:get()
        for i = 1, m do
          local count = 0
          for j = 1, n do
            local x = keys[j]
            if side == "left" and before(dtype, x, wanted[i]) or
               side == "right" and not before(dtype, wanted[i], x) then count = count + 1 end
          end
          assert.are.equal(count + 1, h[i], ("%s %s #%d"):format(dtype, side, i))
        end
      end
    end
    -- numbers and tables of them are weak scalars: 2.5 is looked for as 2.5 among integers
    local a = gpu.to_gpu(gpu.host.from_table({-3, 0, 2, 2, 2, 7, 40}, "int16"))
    local at = gpu.gpuarray.searchsorted(a, 2.5)
    assert.are.same({}, at.shape)
    assert.are.equal(6, at:get()[1])
    assert.are.same({3, 6, 1, 8}, a:searchsorted({2, 2.5, -100, 1e9}):get():totable())
    assert.are.same({6, 6, 1, 8}, a:searchsorted({2, 2.5, -100, 1e9}, {side = "right"}):get():totable())
    local halves = gpu.to_gpu(gpu.host.from_table({1.5, 2, 7.25}, "float32"))
    assert.are.same({3, 6, 7}, gpu.gpuarray.searchsorted(a, halves, {side = "right"}):get():totable())
    -- a strided view of a sorted array is sorted; on a stream
    local longer = gpu.to_gpu(gpu.host.from_table({1, 100, 3, 100, 5, 100, 7}, "float64"))
    local s = gpu.Stream()
    local odd = longer:slice(1, 7, 2)
    local r = gpu.gpuarray.searchsorted(odd, {0, 3, 4, 8}, {stream = s})
    s:synchronize()
    assert.are.same({1, 2, 3, 5}, r:get():totable())
    assert.are.same({0}, gpu.gpuarray.searchsorted(a, gpu.empty(0, "int16")).shape)
    helpers.assert_error("bad argument #1 to 'searchsorted' (a sorted 1-d array expected, got shape (2,2))",
                         gpu.gpuarray.searchsorted, gpu.zeros({2, 2}), 1)
    helpers.assert_error("bad argument #2 to 'searchsorted' (v must be a GPUArray, a number or a table of numbers)",
                         gpu.gpuarray.searchsorted, a, {1, "x"})
    helpers.assert_error("bad argument #3 to 'searchsorted' (option 'side' must be 'left' or 'right', got 'middle')",
                         gpu.gpuarray.searchsorted, a, 1, {side = "middle"})
    local freed = gpu.zeros(3)
    freed:free()
    helpers.assert_error("bad argument #2 to 'searchsorted' (array has been freed)", gpu.gpuarray.searchsorted, a, freed)
  end)

  -- topk: the stable ascending order's tail reversed (largest) or its head (smallest), so
  -- ties and NaNs land where the sort puts them.
  helpers.gpu_it("topk keeps each line's k largest or smallest elements and their places", function()
    local rows, cols = 7, 300       -- rows past 256 take the radix sort, columns the network
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "int32", "uint8", "float64", "complex64"} do
      local a, values = random_values(dtype, rows * cols)
      local m = a:reshape(rows, cols)
      for _, axis in ipairs{1, 2} do
        local n = axis == 1 and rows or cols
        local lines = axis == 1 and cols or rows
        for _, k in ipairs{0, 1, 3, n} do
          for _, largest in ipairs{true, false} do
            local v, i = m:topk(k, {axis = axis, largest = largest, stream = s})
            s:synchronize()
            local shape = axis == 1 and {k, cols} or {rows, k}
            assert.are.same(shape, v.shape)
            assert.are.same(shape, i.shape)
            assert.are.equal(dtype, v.dtype)
            assert.are.equal("int64", i.dtype)
            local hv, hi = v:get(), i:get()
            for line = 1, lines do
              local function at(p)   -- flat index of place p along the axis in this line
                return axis == 1 and (p - 1) * cols + line or (line - 1) * cols + p
              end
              local line_values = {}
              for p = 1, n do line_values[p] = values[at(p)] end
              local order = stable_order(dtype, line_values)
              for j = 1, k do
                local p = largest and order[n + 1 - j] or order[j]
                local out = axis == 1 and (j - 1) * cols + line or (line - 1) * k + j
                if hi[out] ~= p or not same(dtype, hv[out], line_values[p]) then
                  error(("%s topk(%d, axis %d, largest %s), line %d, #%d: got %s at %s, expected %s at %d")
                        :format(dtype, k, axis, largest, line, j, tostring(hv[out]), tostring(hi[out]),
                                tostring(line_values[p]), p))
                end
              end
            end
          end
        end
      end
      a:free()
    end
    -- one line past a radix tile: a byte's pass for uint8 ends in the spare array
    for _, dtype in ipairs{"uint8", "float32"} do
      local n = 5000
      local a, values = random_values(dtype, n)
      local order = stable_order(dtype, values)
      for _, largest in ipairs{true, false} do
        local v, i = a:topk(7, {largest = largest})
        local hv, hi = v:get(), i:get()
        for j = 1, 7 do
          local p = largest and order[n + 1 - j] or order[j]
          assert(hi[j] == p and same(dtype, hv[j], values[p]),
                 ("%s[%d] topk(7, largest %s) #%d: got %s at %s, expected %s at %d")
                 :format(dtype, n, largest, j, tostring(hv[j]), tostring(hi[j]), tostring(values[p]), p))
        end
      end
      a:free()
    end
    local a = gpu.zeros({2, 3}, "float32")
    helpers.assert_error("bad argument #2 to 'topk' (k must be a whole number from 0 to 3, got 4)",
                         gpu.gpuarray.topk, a, 4)
    helpers.assert_error("bad argument #3 to 'topk' (option 'largest' must be a boolean, got string)",
                         a.topk, a, 1, {largest = "yes"})
    helpers.assert_error("bad argument #3 to 'topk' (unknown option 'dim')", a.topk, a, 1, {dim = 1})
    helpers.assert_error("bad argument #1 to 'topk' (a 0-d array has no axis to sort along)",
                         gpu.gpuarray.topk, gpu.zeros({}, "float32"), 0)
    a:free()
    helpers.assert_error("bad argument #1 to 'topk' (array has been freed)", a.topk, a, 1)
  end)

  -- sort.select (the quantiles' selection of places in the sorted order) against the places
  -- of Lua's sort: clustered values (NaNs, infinities, -0.0, many repeats), values spread
  -- over every byte (the second pass copies the keys under the top bytes found) and values
  -- sharing their top bytes (no copies); lengths under, at and past a block's tile of keys
  -- and past many blocks.
  helpers.gpu_it("select finds the elements at given places of the sorted order", function()
    local function spread(dtype, n)
      local h = gpu.host.empty(n, dtype)
      local values = {}
      for i = 1, n do
        local v
        if dtype == "uint64" or dtype == "int64" then v = math.random(math.mininteger, math.maxinteger)
        elseif dtype == "int32" then v = math.random(-2147483648, 2147483647)
        else v = (math.random() - 0.5) * 2.0 ^ math.random(-60, 60) end
        h[i] = v
        values[i] = h[i]
      end
      return gpu.to_gpu(h), values
    end
    local function narrow(dtype, n)                -- keys sharing their top bytes: none copied
      local h = gpu.host.empty(n, dtype)
      local values = {}
      for i = 1, n do
        h[i] = 1 + math.random()
        values[i] = h[i]
      end
      return gpu.to_gpu(h), values
    end
    local s = gpu.Stream()
    for _, dtype in ipairs(REAL) do
      local cases = {{random_values, 1}, {random_values, 7}, {random_values, 1024}, {random_values, 4099}}
      if dtype == "float32" or dtype == "uint64" then cases[#cases + 1] = {random_values, 100003} end
      if dtype == "int32" or dtype == "uint64" or dtype == "int64" or dtype == "float32" or dtype == "float64" then
        cases[#cases + 1] = {spread, 30011}
      end
      if dtype == "float32" or dtype == "float64" then cases[#cases + 1] = {narrow, 30011} end
      for _, case in ipairs(cases) do
        local make, n = case[1], case[2]
        local a, values = make(dtype, n)
        local order = stable_order(dtype, values)
        local ranks = {1, n}
        for _ = 1, math.random(0, 6) do ranks[#ranks + 1] = math.random(1, n) end
        local got = sort.select(a, ranks, s):get()
        s:synchronize()
        assert.are.equal(#ranks, got.size)
        for k, rank in ipairs(ranks) do
          local want = values[order[rank]]
          if not same(dtype, want, got[k]) then
            local kind = make == spread and "spread" or make == narrow and "narrow" or "clustered"
            error(("%s[%d] (%s) rank %d: got %s, expected %s"):format(dtype, n, kind,
                  rank, tostring(got[k]), tostring(want)))
          end
        end
        a:free()
      end
    end
  end)

  -- partition and argpartition: NumPy's contract checked as such (the element at kth is the
  -- sorted one, none before it greater, none after it smaller), along each axis
  helpers.gpu_it("partition and argpartition put the kth element in its sorted place", function()
    local rows, cols = 6, 300
    for _, dtype in ipairs{"float32", "int16"} do
      local a, values = random_values(dtype, rows * cols)
      local m = a:reshape(rows, cols)
      for _, axis in ipairs{1, 2} do
        local n = axis == 1 and rows or cols
        local lines = axis == 1 and cols or rows
        for _, kth in ipairs{1, 3, -1, {2, -2}} do
          local parted = gpu.gpuarray.partition(m, kth, {axis = axis}):get()
          local places = gpu.gpuarray.argpartition(m, kth, {axis = axis}):get()
          for line = 1, lines do
            local function at(p) return axis == 1 and (p - 1) * cols + line or (line - 1) * cols + p end
            local line_values = {}
            for p = 1, n do line_values[p] = values[at(p)] end
            local order = stable_order(dtype, line_values)
            for _, k in ipairs(type(kth) == "table" and kth or {kth}) do
              local place = k > 0 and k or n + 1 + k
              local want = line_values[order[place]]
              assert(same(dtype, want, parted[at(place)]), ("%s partition %d, line %d"):format(dtype, k, line))
              assert(same(dtype, want, line_values[places[at(place)]]),
                     ("%s argpartition %d, line %d"):format(dtype, k, line))
              for p = 1, n do
                local v = parted[at(p)]
                if p < place then assert(not before(dtype, want, v), "partition: a greater element before kth")
                elseif p > place then assert(not before(dtype, v, want), "partition: a smaller element after kth") end
              end
            end
          end
        end
      end
      a:free()
    end
    local a = gpu.zeros({2, 5}, "float32")
    helpers.assert_error("bad argument #2 to 'partition' (kth must be a place from 1 to 5 (or -5 to -1), or a list of them, got 6)",
                         gpu.gpuarray.partition, a, 6)
    helpers.assert_error("bad argument #2 to 'argpartition' (kth must be a place from 1 to 2 (or -2 to -1), or a list of them, got 0)",
                         gpu.gpuarray.argpartition, a, {1, 0}, {axis = 1})
    helpers.assert_error("bad argument #3 to 'partition' (unknown option 'kind')", gpu.gpuarray.partition, a, 1, {kind = "x"})
    a:free()
    helpers.assert_error("bad argument #1 to 'partition' (array has been freed)", gpu.gpuarray.partition, a, 1)
  end)

  helpers.gpu_it("refuses 0-d arrays and bad options", function()
    helpers.assert_error("bad argument #1 to 'argsort' (a 0-d array has no axis to sort along)",
                         gpu.gpuarray.argsort, gpu.zeros({}, "float32"))
    local a = gpu.zeros({2, 3}, "float32")
    helpers.assert_error("bad argument #2 to 'sort' (unknown option 'kind')", gpu.gpuarray.sort, a, {kind = "stable"})
    helpers.assert_error("bad argument #2 to 'sort' (axis 3 is out of range for a 2-d array)",
                         gpu.gpuarray.sort, a, {axis = 3})
    local freed = gpu.zeros({3}, "float32")
    freed:free()
    helpers.assert_error("bad argument #1 to 'sort' (array has been freed)", freed.sort, freed)
  end)
end)
