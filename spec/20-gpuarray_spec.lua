-- GPUArray construction, transfers, views and element access.
local helpers = require "helpers"
local gpu = helpers.gpu

describe("gpuarray (CPU)", function()
  it("is installed with its shortcuts", function()
    assert.are.equal(gpu.gpuarray.to_gpu, gpu.to_gpu)
    for _, name in ipairs{"empty", "zeros", "ones", "full", "arange", "linspace", "empty_like", "zeros_like"} do
      assert.are.equal(gpu.gpuarray[name], gpu[name], name)
    end
    assert.is_function(gpu.ElementwiseKernel)
    assert.is_function(gpu.cumath.sqrt)
    for _, m in ipairs{"get", "set", "get_async", "set_async", "copy", "fill", "astype", "reshape",
                       "ravel", "view", "transpose", "slice", "eq", "lt", "iadd", "imul", "add"} do
      assert.is_function(require("gpu.core").types.GPUArray.__methods[m], m)
    end
  end)
end)

describe("gpuarray", function()
  helpers.gpu_it("round-trips host data and tables", function()
    local values = helpers.random_floats(12, 5)
    local h = gpu.host.from_table(values, "float64"):reshape(3, 4)
    local a = gpu.to_gpu(h)
    assert.are.same({3, 4}, a.shape)
    assert.are.equal("float64", a.dtype)
    assert.are.same({32, 8}, a.strides)
    assert.are.equal(12, #a)
    assert.are.same(h:totable(), a:get():totable())
    local b = gpu.to_gpu({{1, 2}, {3, 4}}, "int16")
    assert.are.equal("int16", b.dtype)
    assert.are.same({{1, 2}, {3, 4}}, b:get():totable())
    local c = gpu.to_gpu({1.5, 2.5}, "int32")   -- astype rounds toward zero
    assert.are.same({1, 2}, c:get():totable())
  end)

  helpers.gpu_it("makes zeros, ones, full, arange and *_like", function()
    assert.are.same({0, 0, 0}, gpu.zeros(3, "int32"):get():totable())
    assert.are.same({{1, 1}, {1, 1}}, gpu.ones({2, 2}, "uint8"):get():totable())
    assert.are.same({7.5, 7.5}, gpu.full(2, 7.5):get():totable())
    assert.are.equal("int64", gpu.full(2, 7).dtype)
    assert.are.same({0, 1, 2, 3}, gpu.arange(4):get():totable())
    assert.are.same({2, 5, 8}, gpu.arange(2, 10, 3):get():totable())
    assert.are.same({5, 3, 1}, gpu.arange(5, 0, -2):get():totable())
    local ints = gpu.arange(-3, 4, "int32")             -- start, stop and a dtype, no step
    assert.are.equal("int32", ints.dtype)
    assert.are.same({-3, -2, -1, 0, 1, 2, 3}, ints:get():totable())
    local f = gpu.arange(0, 1, 0.25, "float32"):get():totable()
    assert.are.same({0, 0.25, 0.5, 0.75}, f)
    local a = gpu.to_gpu({{1, 2, 3}}, "float32")
    local z = gpu.zeros_like(a)
    assert.are.same({1, 3}, z.shape)
    assert.are.equal("float32", z.dtype)
    assert.are.same({{0, 0, 0}}, z:get():totable())
    assert.are.same({1, 3}, gpu.empty_like(a).shape)
    -- zeros over memory the pool hands out again, filled with ones first, for every width
    for _, dtype in ipairs{"bool", "int8", "float16", "int32", "float64", "complex128"} do
      local n = 4099
      local ones = gpu.ones(n, dtype)
      ones:free()
      local zeros = gpu.zeros(n, dtype):get()
      assert.are.equal(("\0"):rep(n * gpu.dtype(dtype).itemsize), zeros:bytes(), dtype)
    end
    assert.are.same({0}, gpu.zeros({0, 3}, "int8").shape and {gpu.zeros({0, 3}, "int8").size})
  end)

  helpers.gpu_it("makes linspace as NumPy does, stop exact, integers floored", function()
    local cases = {{0, 1, 5}, {-3.5, 2.25, 17}, {1, 1, 4}, {10, -7, 33}, {0, 1, 1}, {0.1, 0.7, 60},
                   {-1e10, 1e10, 1001}, {math.random() * 20 - 10, math.random() * 20 - 10, math.random(2, 200)}}
    for _, c in ipairs(cases) do
      local start, stop, num = c[1], c[2], c[3]
      for _, endpoint in ipairs{true, false} do
        local a = gpu.linspace(start, stop, num, {endpoint = endpoint})
        assert.are.equal("float64", a.dtype)
        assert.are.same({num}, a.shape)
        local h = a:get()
        local divisions = endpoint and num - 1 or num
        local step = divisions > 0 and (stop - start) / divisions or 0.0
        for i = 1, num do
          local want = (endpoint and num > 1 and i == num) and stop + 0.0 or (i - 1) * step + start
          assert.are.equal(want, h[i], ("linspace(%s, %s, %d) #%d"):format(start, stop, num, i))
        end
      end
    end
    assert.are.equal(50, #gpu.gpuarray.linspace(0, 1))
    assert.are.equal(0, #gpu.linspace(0, 1, 0))
    local ints = gpu.linspace(-1, 1, 5, {dtype = "int32"})
    assert.are.equal("int32", ints.dtype)
    assert.are.same({-1, -1, 0, 0, 1}, ints:get():totable())     -- floor, as NumPy 2
    local singles = gpu.linspace(0, 1, 4, {dtype = "float32"}):get():totable()
    for i, want in ipairs{0, 1 / 3, 2 / 3, 1} do assert.are.equal(helpers.f32(want), singles[i]) end
    helpers.assert_error("bad argument #2 to 'linspace' (number expected, got nil)", gpu.linspace, 0)
    helpers.assert_error("bad argument #3 to 'linspace' (num must be a non-negative integer, got 2.5)",
                         gpu.linspace, 0, 1, 2.5)
    helpers.assert_error("bad argument #3 to 'linspace' (num must be a non-negative integer, got -1)",
                         gpu.linspace, 0, 1, -1)
    helpers.assert_error("bad argument #4 to 'linspace' (unknown option 'step')", gpu.linspace, 0, 1, 3, {step = 1})
    helpers.assert_error("bad argument #4 to 'linspace' (option 'endpoint' must be a boolean, got number)",
                         gpu.linspace, 0, 1, 3, {endpoint = 1})
    helpers.assert_error("bad argument #4 to 'linspace' (a real dtype expected, got complex64)",
                         gpu.linspace, 0, 1, 3, {dtype = "complex64"})
  end)

  helpers.gpu_it("sets from host data, synchronously and on a stream", function()
    local a = gpu.empty(5, "int32")
    local v = helpers.random_integers(5, -1000, 1000)
    a:set(gpu.host.from_table(v, "int32"))
    assert.are.same(v, a:get():totable())
    local s = gpu.Stream()
    local h = gpu.host.pagelocked_empty(5, "int32")
    for i = 1, 5 do h[i] = v[i] * 2 end
    a:set_async(h, s)
    local back = a:get_async(s)
    s:synchronize()
    for i = 1, 5 do assert.are.equal(v[i] * 2, back[i]) end
    assert.is_true(back:is_pagelocked())
    -- a view goes through a temporary, which a non-blocking stream must keep until it is done
    local ns = gpu.Stream({non_blocking = true})
    local m = gpu.zeros({300, 400}, "int32")
    local view = m:transpose()
    local hv = gpu.host.pagelocked_empty({400, 300}, "int32")
    local values = helpers.random_integers(400 * 300, -1e6, 1e6)
    for i = 1, #values do hv[i] = values[i] end
    for _ = 1, 3 do
      view:set_async(hv, ns)
      local got = view:get_async(ns)
      collectgarbage()                       -- the temporaries are garbage now
      ns:synchronize()
      for i = 1, #values, 97 do assert.are.equal(values[i], got[i]) end
      assert.are.equal(values[#values], got[#values])
    end
  end)

  helpers.gpu_it("copies, fills and converts", function()
    local v = helpers.random_floats(10, 100)
    local a = gpu.to_gpu(gpu.host.from_table(v, "float64"))
    local b = a:copy()
    b:fill(1)
    assert.are.same(v, a:get():totable())
    assert.are.same({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, b:get():totable())
    local i = a:astype("int32"):get()
    for k = 1, 10 do
      local want = v[k] < 0 and math.ceil(v[k]) or math.floor(v[k])
      assert.are.equal(want, i[k])
    end
    local bools = a:astype("bool"):get()
    for k = 1, 10 do assert.are.equal(v[k] ~= 0, bools[k]) end
  end)

  helpers.gpu_it("makes views that share memory", function()
    local a = gpu.arange(12, "int32")
    local m = a:reshape(3, -1)
    assert.are.same({3, 4}, m.shape)
    m[5] = 100                              -- row 2, column 1
    assert.are.equal(100, a[5])
    local t = m:transpose()
    assert.are.same({4, 3}, t.shape)
    assert.are.same({4, 16}, t.strides)
    assert.is_false(t.is_contiguous)
    assert.are.same({{0, 100, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}, t:get():totable())
    assert.are.same({0, 100, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, t:ravel():get():totable())
    local s = a:slice(2, -2, 3)
    assert.are.same({1, 100, 7, 10}, s:get():totable())   -- a[5] is 100 since m[5] = 100
    assert.are.same({11, 9, 7}, a:slice(-1, 7, -2):get():totable())
    assert.are.same({}, a:slice(5, 4):get():totable())
    s:fill(-1)
    assert.are.same({0, -1, 2, 3, -1, 5, 6, -1, 8, 9, -1, 11}, a:get():totable())
    local r = m:slice(2, 3)
    assert.are.same({2, 4}, r.shape)
    r:set({{1, 2, 3, 4}, {5, 6, 7, 8}})
    assert.are.same({1, 2, 3, 4}, m:slice(2, 2):ravel():get():totable())
    local bytes = gpu.to_gpu({1.0, 2.0}, "float32"):view("uint32"):get()
    assert.are.equal(0x3f800000, bytes[1])
    assert.are.equal(0x40000000, bytes[2])
  end)

  helpers.gpu_it("has PyCUDA's to_gpu_async and mul_add", function()
    local values = helpers.random_floats(1000, 100)
    local h = gpu.host.pagelocked_empty({10, 100}, "float32")
    for i = 1, 1000 do h[i] = values[i] end
    local s = gpu.Stream()
    local a = gpu.gpuarray.to_gpu_async(h, s)
    s:synchronize()
    assert.are.same({10, 100}, a.shape)
    assert.are.same(h:totable(), a:get():totable())
    helpers.assert_error("bad argument #1 to 'to_gpu_async' (async copies need page-locked host memory "
                         .. "(gpu.host.pagelocked_empty))", gpu.gpuarray.to_gpu_async, gpu.host.empty(3, "float32"))
    local others = helpers.random_floats(100, 100)
    local row = gpu.to_gpu(gpu.host.from_table(others, "float64"))
    local r = a:mul_add(2.5, row, -3)                     -- broadcast; float32 with float64
    assert.are.equal("float64", r.dtype)
    local hr, ha = r:get(), a:get()
    for i = 1, 1000 do   -- 2.5 * a stays float32 (NumPy 2); the sum may be fused (an FMA)
      local want = helpers.f32(2.5 * ha[i]) - 3 * others[(i - 1) % 100 + 1]
      helpers.assert_close(want, hr[i], 1e-13, "mul_add #" .. i)
    end
    local out = gpu.empty({10, 100}, "float32")
    assert.are.equal(out, a:mul_add(1, a, 1, {out = out, stream = s}))
    s:synchronize()
    local ho = out:get()
    for i = 1, 1000 do assert.are.equal(helpers.f32(2 * ha[i]), ho[i]) end
    helpers.assert_error("bad argument #3 to 'mul_add' (number expected, got table)", a.mul_add, a, 1, a, {})
    helpers.assert_error("bad argument #2 to 'mul_add' (operands could not be broadcast together with "
                         .. "shapes (10,100) (3,))", a.mul_add, a, 1, gpu.zeros(3, "float32"), 1)
  end)

  helpers.gpu_it("squeezes out axes of length 1, as a view", function()
    local values = helpers.random_integers(6, -100, 100)
    local a = gpu.to_gpu(gpu.host.from_table(values, "int16")):reshape(1, 2, 1, 3)
    local s = a:squeeze()
    assert.are.same({2, 3}, s.shape)
    assert.are.same({{values[1], values[2], values[3]}, {values[4], values[5], values[6]}},
                    s:get():totable())
    s[1] = 7                                              -- shares a's memory
    assert.are.equal(7, a:get()[1])
    assert.are.same({2, 1, 3}, a:squeeze({axis = 1}).shape)
    assert.are.same({1, 2, 3}, a:squeeze({axis = -2}).shape)
    local t = a:transpose():squeeze()                     -- (3, 2), not contiguous
    assert.are.same({3, 2}, t.shape)
    assert.are.same({{7, values[4]}, {values[2], values[5]}, {values[3], values[6]}}, t:get():totable())
    assert.are.same({}, gpu.zeros({1, 1}, "int8"):squeeze().shape)
    helpers.assert_error("bad argument #1 to 'squeeze' (axis 2 has length 2, not 1)", a.squeeze, a, {axis = 2})
    helpers.assert_error("bad argument #1 to 'squeeze' (axis 5 is out of range for a 4-d array)",
                         a.squeeze, a, {axis = 5})
    helpers.assert_error("bad argument #1 to 'squeeze' (unknown option 'axes')", a.squeeze, a, {axes = 1})
  end)

  helpers.gpu_it("prints like NumPy", function()
    local a = gpu.to_gpu({{1.0, 2.5}, {3.0, 4.0}})
    assert.are.equal("[[1.  2.5]\n [3.  4. ]]", tostring(a))
    assert.are.equal("[1 2 3]", tostring(gpu.to_gpu({1, 2, 3}, "int8")))
    assert.are.equal("[[1 3]\n [2 4]]", tostring(gpu.to_gpu({{1, 2}, {3, 4}}, "int32"):transpose()))
  end)

  helpers.gpu_it("reads and writes single elements, range-checked", function()
    local a = gpu.zeros({2, 3}, "uint8")
    a[6] = 255
    assert.are.equal(255, a[6])
    assert.are.equal(0, a[1])
    helpers.assert_error("GPUArray index 7 out of range (size 6)", function() return a[7] end)
    helpers.assert_error("GPUArray index 0 out of range (size 6)", function() a[0] = 1 end)
    helpers.assert_error("cannot store 256 in a uint8 GPUArray: 256 is out of range for uint8",
                         function() a[1] = 256 end)
  end)

  helpers.gpu_it("is freed once, and unusable afterwards", function()
    local a = gpu.ones(4, "float32")
    local v = a:slice(1, 2)
    a:free()
    a:free()
    assert.is_true(a.freed)
    assert.is_true(v.freed)
    assert.are.equal("gpu.GPUArray(freed)", tostring(a))
    helpers.assert_error("calling 'get' on bad self (array has been freed)", function() a:get() end)
    helpers.assert_error("bad argument #1 to 'add' (array has been freed)", function() return a + 1 end)
    helpers.assert_error("bad argument #2 to 'mul' (array has been freed)", function() return 2 * v end)
    helpers.assert_error("GPUArray has been freed", function() return a[1] end)
    do
      local b <close> = gpu.zeros(3)
      v = b
    end
    assert.is_true(v.freed)
  end)

  helpers.gpu_it("has one Buffer, a.gpudata, whose :free() frees the array's memory", function()
    local values = helpers.random_integers(8, -1000, 1000)
    local a = gpu.to_gpu(gpu.host.from_table(values, "int32"))
    local buf = a.gpudata
    assert.are.equal(buf, a.gpudata)                       -- the same object every time
    assert.are.equal(buf, a:slice(3, 6).gpudata)           -- a view's is its owner's
    assert.are.equal(32, #buf)
    assert.are.equal(a.ptr, buf:ptr())
    assert.are.equal(("gpu.Buffer(0x%x, 32 bytes)"):format(a.ptr), tostring(buf))
    assert.are.equal(values[5], gpu.from_device(buf:offset(16), 1, "int32")[1])
    local view = a:slice(2, 3)
    buf:free()
    buf:free()
    assert.is_true(a.freed)
    assert.is_true(view.freed)
    assert.are.equal("gpu.Buffer(freed)", tostring(buf))
    helpers.assert_error("calling 'ptr' on bad self (buffer has been freed)", function() return buf:ptr() end)
    helpers.assert_error("bad argument #1 to 'index' (array has been freed)", function() return a.gpudata end)
    a:free()                                               -- already freed: nothing to do

    local b = gpu.to_gpu(gpu.host.from_table(values, "int32"))
    local b_buf = b.gpudata
    b:free()
    assert.are.equal("gpu.Buffer(freed)", tostring(b_buf))
    helpers.assert_error("bad argument #1 to 'from_device' (buffer has been freed)",
                         function() return gpu.from_device(b_buf, 1, "int32") end)
    local piece = gpu.to_gpu(gpu.host.from_table(values, "int32")).gpudata:offset(8)
    piece:free()                                           -- a view of it frees only itself
    assert.are.equal("gpu.Buffer(freed)", tostring(piece))
  end)

  helpers.gpu_it("keeps its memory while a.gpudata is held, and frees it with the last of them", function()
    local function used()                  -- frees are stream-ordered: wait for them
      gpu.synchronize()
      return (gpu.mem_pool_info())
    end
    collectgarbage()
    collectgarbage()
    local used0 = used()
    local values = helpers.random_integers(1 << 18, -1000, 1000)    -- 1 MiB
    local buf = gpu.to_gpu(gpu.host.from_table(values, "int32")).gpudata
    collectgarbage()
    collectgarbage()                       -- the array is garbage but for buf, which pins it
    assert.are.equal(values[1 << 17], gpu.from_device(buf:offset(4 * ((1 << 17) - 1)), 1, "int32")[1])
    assert.is_true(used() >= used0 + (1 << 20))
    buf = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(used0, used())
  end)
end)

describe("gpuarray.GPUArray", function()
  it("is the type, and PyCUDA's constructor checks its arguments", function()
    assert.are.equal(gpu.gpuarray.GPUArray, gpu.GPUArray)
    assert.are.equal("gpu.GPUArray", gpu.GPUArray.__name)
    helpers.assert_error("bad argument #3 to 'GPUArray' (unknown option 'gpu_data')",
                         gpu.GPUArray, 4, "float32", {gpu_data = 1})
    helpers.assert_error("bad argument #3 to 'GPUArray' (option 'gpudata' must be a gpu.Buffer, got number)",
                         gpu.GPUArray, 4, "float32", {gpudata = 1})
    helpers.assert_error("bad argument #3 to 'GPUArray' (option 'strides' needs option 'gpudata')",
                         gpu.GPUArray, 4, "float32", {strides = {4}})
    helpers.assert_error("bad argument #2 to 'GPUArray' (unknown dtype 'float')", gpu.GPUArray, 4, "float")
  end)

  helpers.gpu_it("constructs new arrays and arrays on an existing Buffer", function()
    local a = gpu.GPUArray({2, 3}, "int32")
    assert.are.equal(gpu.GPUArray, getmetatable(a))
    assert.are.same({2, 3}, a.shape)
    assert.are.equal("int32", a.dtype)
    assert.are.equal("float64", gpu.GPUArray(5).dtype)
    local values = helpers.random_integers(6, -1000, 1000)
    local buf = gpu.to_device(gpu.host.from_table(values, "int32"))
    local on = gpu.GPUArray({3, 2}, "int32", {gpudata = buf})
    local h = on:get()
    for i = 1, 6 do assert.are.equal(values[i], h[i]) end
    on:fill(7)                                             -- shares the buffer's memory
    assert.are.equal(7, gpu.from_device(buf, 6, "int32")[4])
    local columns = gpu.GPUArray({2, 3}, "int32", {gpudata = buf, strides = {4, 8}})   -- transposed
    assert.are.equal(7, columns:get()[6])
    helpers.assert_error("view reaches outside its buffer (24 bytes)",
                         gpu.GPUArray, 7, "int32", {gpudata = buf})
  end)

  helpers.gpu_it("has NumPy's a.T, the transpose", function()
    local m = gpu.to_gpu(gpu.host.from_table({{1, 2, 3}, {4, 5, 6}}, "int32"))
    assert.are.same({3, 2}, m.T.shape)
    assert.are.equal("[[1 4]\n [2 5]\n [3 6]]", tostring(m.T))
    assert.is_nil(m.t)
  end)
end)

describe("gpuarray.concatenate and gpuarray.stack", function()
  local ga = gpu.gpuarray

  -- References on nested tables: join(tables) applied at the given depth of their nesting.
  local function join_at(tables, axis, join)
    if axis == 1 then return join(tables) end
    local out = {}
    for i = 1, #tables[1] do
      local parts = {}
      for k, t in ipairs(tables) do parts[k] = t[i] end
      out[i] = join_at(parts, axis - 1, join)
    end
    return out
  end
  local function concat_ref(tables, axis)
    return join_at(tables, axis, function(ts)
      local out = {}
      for _, t in ipairs(ts) do for _, v in ipairs(t) do out[#out + 1] = v end end
      return out
    end)
  end
  local function stack_ref(tables, axis)
    return join_at(tables, axis, function(ts) return ts end)
  end
  local function random_array(shape, dtype)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    local h = gpu.host.from_table(helpers.random_integers(n, -1000, 1000), dtype):reshape(table.unpack(shape))
    return gpu.to_gpu(h), h
  end

  it("check their arguments", function()
    helpers.assert_error("bad argument #1 to 'concatenate' (table of GPUArrays expected, got number)",
                         ga.concatenate, 5)
    helpers.assert_error("bad argument #1 to 'stack' (at least one array is needed)", ga.stack, {})
    helpers.assert_error("bad argument #1 to 'stack' (item #1 is a number, not a GPUArray)", ga.stack, {1})
  end)

  helpers.gpu_it("join along every axis, promoting dtypes as NumPy does", function()
    local a, ha = random_array({2, 3, 4}, "int32")
    local b, hb = random_array({2, 3, 4}, "float32")
    local c, hc = random_array({2, 5, 4}, "int16")
    for axis = 1, 3 do
      local pieces, tables = {a, b}, {ha:totable(), hb:totable()}
      local joined = ga.concatenate(pieces, {axis = axis})
      assert.are.equal("float64", joined.dtype)
      assert.are.same(concat_ref(tables, axis), joined:get():totable())
    end
    local mid = ga.concatenate({a, c, a}, {axis = -2})
    assert.are.same({2, 11, 4}, mid.shape)
    assert.are.equal("int32", mid.dtype)
    assert.are.same(concat_ref({ha:totable(), hc:totable(), ha:totable()}, 2), mid:get():totable())
    for axis = 1, 4 do
      local s = ga.stack({a, b, a}, {axis = axis})
      local shape = {2, 3, 4}
      table.insert(shape, axis, 3)
      assert.are.same(shape, s.shape)
      assert.are.same(stack_ref({ha:totable(), hb:totable(), ha:totable()}, axis), s:get():totable())
    end
    assert.are.same({2, 3, 4, 2}, ga.stack({a, a}, {axis = -1}).shape)
  end)

  helpers.gpu_it("take views, empty pieces and a stream", function()
    local m, hm = random_array({3, 4}, "int64")
    local t = m.T                                          -- (4, 3), not contiguous
    local ht = {}
    for i = 1, 4 do ht[i] = {} for j = 1, 3 do ht[i][j] = hm:totable()[j][i] end end
    local empty = gpu.empty({0, 3}, "int64")
    local s = gpu.Stream()
    local joined = ga.concatenate({t, empty, t}, {stream = s})
    s:synchronize()
    assert.are.same({8, 3}, joined.shape)
    assert.are.same(concat_ref({ht, ht}, 1), joined:get():totable())
    assert.are.same({2, 4, 3}, ga.stack({t, t}).shape)
    assert.are.same(stack_ref({ht, ht}, 3), ga.stack({t, t}, {axis = 3}):get():totable())
    assert.are.same({0, 3}, ga.concatenate({empty, empty}).shape)
  end)

  helpers.gpu_it("name what does not fit", function()
    local a, b = gpu.zeros({2, 3}, "float32"), gpu.zeros({2, 4}, "float32")
    helpers.assert_error("bad argument #1 to 'concatenate' (array #2 has shape (2,4), which differs "
                         .. "from array #1's off axis 1)", ga.concatenate, {a, b})
    assert.are.same({2, 7}, ga.concatenate({a, b}, {axis = 2}).shape)
    helpers.assert_error("bad argument #1 to 'concatenate' (array #2 is 1-d, array #1 2-d)",
                         ga.concatenate, {a, gpu.zeros(3, "float32")})
    helpers.assert_error("bad argument #2 to 'concatenate' (axis 3 is out of range for a 2-d array)",
                         ga.concatenate, {a, a}, {axis = 3})
    helpers.assert_error("bad argument #2 to 'concatenate' (unknown option 'axes')",
                         ga.concatenate, {a, a}, {axes = 1})
    helpers.assert_error("bad argument #1 to 'concatenate' (0-d arrays cannot be concatenated)",
                         ga.concatenate, {gpu.zeros({}, "float32")})
    helpers.assert_error("bad argument #1 to 'stack' (array #2 has shape (2,4), array #1 (2,3): "
                         .. "stacked arrays need one shape)", ga.stack, {a, b})
    helpers.assert_error("bad argument #2 to 'stack' (axis -4 is out of range for a 3-d array)",
                         ga.stack, {a, a}, {axis = -4})
    local freed = gpu.zeros(3, "float32")
    freed:free()
    helpers.assert_error("bad argument #1 to 'stack' (array #2 has been freed)", ga.stack, {a, freed})
  end)
end)
