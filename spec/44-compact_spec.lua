-- gpuarray.extract, nonzero, count_nonzero and unique (stream compaction), against Lua.
local helpers = require "helpers"
local gpu = helpers.gpu
local core = require "gpu.core"
local reduction = require "gpu.reduction"
local shape_text = require("gpu.promote").shape_text

local function upload(values, dtype) return gpu.to_gpu(gpu.host.from_table(values, dtype)) end

local function truthy(v)
  if type(v) == "boolean" then return v end
  if type(v) == "table" then return v.re ~= 0 or v.im ~= 0 end
  return v ~= 0                                    -- NaN is nonzero
end

describe("compaction (CPU: NVRTC only)", function()
  it("compiles for every element size", function()
    for _, bytes in ipairs{1, 2, 4, 8, 16} do
      local src = reduction.fill(core.kernel_sources["compact.cu"], {ITEM_BYTES = tostring(bytes)})
      assert.is_true(#gpu.compile(src, {target = "ptx", no_extern_c = true}) > 0)
    end
  end)

  it("names a bad argument", function()
    helpers.assert_error("bad argument #1 to 'extract' (GPUArray expected, got gpu.HostArray)",
                         gpu.gpuarray.extract, gpu.host.from_table({1}, "int8"), "x")
    helpers.assert_error("bad argument #1 to 'unique' (GPUArray expected, got nil)", gpu.gpuarray.unique)
  end)
end)

describe("compaction", function()
  helpers.gpu_it("extract, nonzero and count_nonzero select what Lua selects", function()
    for _, dtype in ipairs{"bool", "int8", "uint16", "int64", "float16", "float32", "float64", "complex128"} do
      for _, n in ipairs{1, 7, 1000, 70001} do
        local h = gpu.host.empty(n, dtype)
        local values, kept = {}, {}
        for i = 1, n do
          local r = math.random()
          local v
          if dtype == "bool" then v = r < 0.3
          elseif dtype == "complex128" then v = gpu.complex(r < 0.5 and 0 or 1.5, r < 0.8 and 0 or -2)
          elseif dtype:match("float") then v = r < 0.5 and 0.0 or r < 0.55 and 0 / 0 or math.random(-9, 9) / 4
          else v = r < 0.6 and 0 or math.random(1, 100) end
          h[i] = v
          values[i] = h[i]
          if truthy(values[i]) then kept[#kept + 1] = i end
        end
        local a = gpu.to_gpu(h)
        local what = ("%s[%d]"):format(dtype, n)
        assert.are.equal(#kept, gpu.gpuarray.count_nonzero(a), what)
        local idx = gpu.gpuarray.nonzero(a)
        assert.are.same(kept, idx:get():totable(), what .. " nonzero")
        -- extract a's elements where another array (int32 codes of the same truth) is nonzero
        local codes = {}
        for i = 1, n do codes[i] = truthy(values[i]) and math.random(1, 5) or 0 end
        local e = gpu.gpuarray.extract(upload(codes, "int32"), a):get()
        assert.are.equal(#kept, e.size, what .. " extract size")
        for j, i in ipairs(kept) do
          local x, y = values[i], e[j]
          if type(x) == "table" then assert.is_true(x.re == y.re and x.im == y.im, what .. " extract #" .. j)
          elseif x ~= x then assert.is_true(y ~= y, what .. " extract NaN #" .. j)
          else assert.are.equal(x, y, what .. " extract #" .. j) end
        end
      end
    end
    -- one index array per axis, 1-based, in row-major order, also on strided views
    local m = upload({0, 3, 0, 0, 0, 5, 7, 0, 0, 0, 0, 1}, "int32"):reshape(3, 4)
    local rows, cols = m:nonzero()
    assert.are.same({1, 2, 2, 3}, rows:get():totable())
    assert.are.same({2, 2, 3, 4}, cols:get():totable())
    local tr, tc = gpu.gpuarray.nonzero(m.T)             -- (4, 3): [0 0 0; 3 5 0; 0 7 0; 0 0 1]
    assert.are.same({2, 2, 3, 4}, tr:get():totable())
    assert.are.same({1, 2, 2, 3}, tc:get():totable())
    assert.are.same({7, 0}, gpu.gpuarray.extract(upload({false, false, true, true}, "bool"),
                                                 m:slice(2, 2)):get():totable())
    assert.are.equal(0, gpu.gpuarray.count_nonzero(gpu.zeros({0}, "int8")))
    assert.are.same({0}, gpu.gpuarray.nonzero(gpu.zeros({4}, "int8")).shape)
    helpers.assert_error("bad argument #2 to 'extract' (condition and array differ in size (3 and 4))",
                         gpu.gpuarray.extract, gpu.zeros(3), gpu.zeros(4))
    helpers.assert_error("bad argument #1 to 'nonzero' (a 0-d array has no axes to index (use a:ravel()))",
                         gpu.gpuarray.nonzero, gpu.zeros({}))
  end)

  -- Tiles are 4096 elements and a thread reads 16 mask bytes in one load when the mask is
  -- aligned; views that start one element in read them one at a time.
  helpers.gpu_it("extract and nonzero place every tile's elements, from aligned and unaligned views", function()
    for _, n in ipairs{4095, 4096, 4097, 8192 * 3 + 17, 100003} do
      for _, density in ipairs{0, 0.02, 0.5, 1} do
        for _, offset in ipairs{0, 1, 5} do
          local total = n + offset
          local hmask, hvalues = gpu.host.empty(total, "bool"), gpu.host.empty(total, "int32")
          for i = 1, total do
            hmask[i] = math.random() < density
            hvalues[i] = math.random(-2^31, 2^31 - 1)
          end
          local mask = gpu.to_gpu(hmask):slice(offset + 1, total)
          local values = gpu.to_gpu(hvalues):slice(offset + 1, total)
          local kept, picked = {}, {}
          for i = 1, n do
            if hmask[offset + i] then kept[#kept + 1] = i; picked[#picked + 1] = hvalues[offset + i] end
          end
          local what = ("n %d, density %g, offset %d"):format(n, density, offset)
          local e = gpu.gpuarray.extract(mask, values)
          assert.are.equal(#picked, e.size, what)
          assert.are.same(picked, e:get():totable(), what)
          assert.are.same(kept, gpu.gpuarray.nonzero(mask):get():totable(), what .. " nonzero")
        end
      end
    end
  end)

  helpers.gpu_it("a[mask] selects and a[mask] = value sets, as NumPy's boolean indexing", function()
    local function random_value(dtype)
      if dtype == "bool" then return math.random() < 0.5 end
      if dtype == "complex64" then return gpu.complex(math.random(-9, 9) / 4, math.random(-9, 9) / 4) end
      if dtype == "float32" then return math.random(-99, 99) / 8 end
      return math.random(-300, 300)
    end
    local function same(x, y)
      if type(x) == "table" then return x.re == y.re and x.im == y.im end
      return x == y
    end
    for _, dtype in ipairs{"float32", "int16", "complex64", "bool"} do
      for _, shape in ipairs{{7}, {3, 5}, {40, 70}, {70, 40, "T"}} do
        local dims = {shape[1], shape[2]}
        local n = shape[1] * (shape[2] or 1)
        local h, hm = gpu.host.empty(dims, dtype), gpu.host.empty(dims, "bool")
        for i = 1, n do h[i] = random_value(dtype); hm[i] = math.random() < 0.4 end
        local a, mask = gpu.to_gpu(h), gpu.to_gpu(hm)
        local hv, hmask = h, hm                     -- row-major elements, as a and mask read
        if shape[3] then                            -- transposed views of both
          a, mask = a.T, mask.T
          hv, hmask = a:get(), mask:get()
        end
        local what = ("%s %s%s"):format(dtype, shape_text(dims), shape[3] and ".T" or "")
        local picked = {}
        for i = 1, n do if hmask[i] then picked[#picked + 1] = hv[i] end end
        local selected = a[mask]
        assert.are.same({#picked}, selected.shape, what)
        local hs = selected:get()
        for j = 1, #picked do assert.is_true(same(picked[j], hs[j]), what .. " #" .. j) end
        local value = random_value(dtype)
        local stored = gpu.host.from_table({value}, dtype)[1]
        a[mask] = value
        local after = a:get()
        for i = 1, n do
          local want = hv[i]
          if hmask[i] then want = stored end      -- (not `and or`: stored may be false)
          assert.is_true(same(want, after[i]), ("%s set #%d"):format(what, i))
        end
      end
    end
    local a = gpu.zeros({3, 5}, "int16")
    helpers.assert_error("GPUArray index array must hold integers or bools, got float32",
                         function() return a[gpu.zeros({3, 5}, "float32")] end)
    helpers.assert_error("GPUArray mask index of shape (5,3) does not match the array's shape (3,5)",
                         function() return a[gpu.zeros({5, 3}, "bool")] end)
    helpers.assert_error("GPUArray mask index of shape (15,) does not match the array's shape (3,5)",
                         function() a[gpu.zeros({15}, "bool")] = 1 end)
    helpers.assert_error("cannot store 1.5 in a int16 GPUArray: 1.5 is not an integer (for int16)",
                         function() a[gpu.zeros({3, 5}, "bool")] = 1.5 end)
    helpers.assert_error("a[mask] = value takes a number, boolean or complex value, got a GPUArray " ..
                         "(gpuarray.where(mask, b, a, {out = a}) takes b's elements where mask is true)",
                         function() a[gpu.zeros({3, 5}, "bool")] = a end)
    local freed = gpu.zeros({3, 5}, "bool")
    freed:free()
    helpers.assert_error("GPUArray index array has been freed", function() return a[freed] end)
    local _, err = pcall(function() return a[gpu.zeros({2}, "bool")] end)
    assert.matches("44%-compact_spec%.lua:%d+: GPUArray mask index of shape", err)
  end)

  helpers.gpu_it("unique gives the sorted distinct values, first places, inverse and counts, NaNs as one", function()
    for _, dtype in ipairs{"int8", "uint64", "float32", "float64", "complex64", "bool"} do
      for _, n in ipairs{1, 2, 50, 5000} do
        local h = gpu.host.empty(n, dtype)
        local counts = {}
        local keys = {}
        for i = 1, n do
          local v
          if dtype == "bool" then v = math.random() < 0.5
          elseif dtype == "complex64" then v = gpu.complex(math.random(0, 3), math.random(0, 1))
          elseif dtype:match("float") then v = math.random() < 0.1 and 0 / 0 or math.random(-20, 20) / 2
          elseif dtype == "uint64" then v = math.random(0, 9) * (1 << 60) + 7
          else v = math.random(-20, 20) end
          h[i] = v
          local x = h[i]
          local key = type(x) == "table" and ("%g,%g"):format(x.re, x.im) or x ~= x and "nan" or tostring(x)
          if counts[key] == nil then keys[#keys + 1] = {key = key, value = x} end
          counts[key] = (counts[key] or 0) + 1
        end
        local function before(p, q)     -- NumPy's order: NaN last; uint64 unsigned
          local x, y = p.value, q.value
          if type(x) == "boolean" then return not x and y end
          if type(x) == "table" then return x.re < y.re or (x.re == y.re and x.im < y.im) end
          if dtype == "uint64" then return math.ult(x, y) end
          return x < y or (y ~= y and x == x)
        end
        table.sort(keys, before)
        local a = gpu.to_gpu(h)
        local values, how_many = gpu.gpuarray.unique(a, {return_counts = true})
        local what = ("%s[%d]"):format(dtype, n)
        assert.are.equal(#keys, values.size, what)
        assert.are.equal("int64", how_many.dtype)
        local hv, hc = values:get(), how_many:get()
        for j, k in ipairs(keys) do
          local x, y = k.value, hv[j]
          if type(x) == "table" then assert.is_true(x.re == y.re and x.im == y.im, what .. " #" .. j)
          elseif x ~= x then assert.is_true(y ~= y, what .. " NaN #" .. j)
          else assert.are.equal(x, y, what .. " #" .. j) end
          assert.are.equal(counts[k.key], hc[j], what .. " count #" .. j)
        end
        assert.are.equal(#keys, gpu.gpuarray.unique(a).size)
        -- return_index: each value's first place; return_inverse: values[inverse] is a
        local all, index, inverse, counted = gpu.gpuarray.unique(a, {return_index = true, return_inverse = true,
                                                                     return_counts = true})
        assert.are.equal(#keys, all.size, what)
        assert.are.same({n}, inverse.shape)
        local hi, hinv, hcount = index:get(), inverse:get(), counted:get()
        local first_place = {}
        for i = 1, n do
          local x = h[i]
          local key = type(x) == "table" and ("%g,%g"):format(x.re, x.im) or x ~= x and "nan" or tostring(x)
          first_place[key] = first_place[key] or i
          local j = hinv[i]
          assert(j >= 1 and j <= #keys and keys[j].key == key, ("%s inverse #%d: %s"):format(what, i, tostring(j)))
        end
        for j, k in ipairs(keys) do
          assert.are.equal(first_place[k.key], hi[j], what .. " index #" .. j)
          assert.are.equal(counts[k.key], hcount[j], what .. " count with the others #" .. j)
        end
      end
    end
    local m = upload({3, 1, 3, 2, 1, 3}, "int16"):reshape(2, 3).T     -- a strided view
    assert.are.same({1, 2, 3}, gpu.gpuarray.unique(m):get():totable())
    -- m is 3 x 2: {{3, 2}, {1, 1}, {3, 3}} in row-major order 3, 2, 1, 1, 3, 3
    local values, index, inverse = gpu.gpuarray.unique(m, {return_index = true, return_inverse = true})
    assert.are.same({1, 2, 3}, values:get():totable())
    assert.are.same({3, 2, 1}, index:get():totable())
    assert.are.same({3, 2}, inverse.shape)
    assert.are.same({3, 2, 1, 1, 3, 3}, inverse:reshape(6):get():totable())
    assert.are.same({0}, gpu.gpuarray.unique(gpu.zeros({0})).shape)
    local _, none_index, none_inverse = gpu.gpuarray.unique(gpu.zeros({2, 0}), {return_index = true, return_inverse = true})
    assert.are.same({0}, none_index.shape)
    assert.are.same({2, 0}, none_inverse.shape)
    helpers.assert_error("bad argument #2 to 'unique' (option 'return_counts' must be a boolean, got number)",
                         gpu.gpuarray.unique, m, {return_counts = 1})
    helpers.assert_error("bad argument #2 to 'unique' (option 'return_inverse' must be a boolean, got string)",
                         gpu.gpuarray.unique, m, {return_inverse = "yes"})
    helpers.assert_error("bad argument #2 to 'unique' (unknown option 'axis')", gpu.gpuarray.unique, m, {axis = 1})
  end)
end)
