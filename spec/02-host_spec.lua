-- gpu.host: typed host arrays (Lua has no NumPy).
local helpers = require "helpers"
local gpu = helpers.gpu
local host = gpu.host

local function product(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

describe("gpu.host constructors", function()
  it("empty/zeros give zero-filled arrays of the shape and dtype (float64 by default)", function()
    for _, ctor in ipairs{"empty", "zeros"} do
      local h = host[ctor]({2, 3}, "int16")
      assert.are.same({2, 3}, h.shape)
      assert.are.same({"int16", 6, 12, 2, 2}, {h.dtype, h.size, h.nbytes, h.ndim, h.itemsize})
      assert.are.equal(6, #h)
      for i = 1, 6 do assert.are.equal(0, h[i]) end
      local d = host[ctor](5)
      assert.are.same({"float64", {5}, 40}, {d.dtype, d.shape, d.nbytes})
    end
    local scalar = host.zeros({}, "int32")
    assert.are.same({0, 1, 4}, {scalar.ndim, scalar.size, scalar.nbytes})
    assert.are.equal(0, host.empty({0, 4}, "float32").nbytes)
  end)

  it("large arrays (given huge pages where the kernel has them) are zeroed and hold writes", function()
    -- 24 MiB: past the 8 MiB from which the data's 2 MiB-aligned interior is advised; the
    -- elements checked straddle where that interior can begin and end
    local n = 3 * 2 ^ 20
    local h = host.empty(n, "float64")
    local probes = {1, 2, 262143, 262144, 262145, n // 2, n - 262144, n - 1, n}
    for _ = 1, 100 do probes[#probes + 1] = math.random(1, n) end
    for _, i in ipairs(probes) do assert.are.equal(0.0, h[i], "element " .. i) end
    for _, i in ipairs(probes) do h[i] = i + 0.5 end
    for _, i in ipairs(probes) do assert.are.equal(i + 0.5, h[i], "element " .. i) end
    h:free()
  end)

  -- Linux with transparent huge pages on demand ("madvise") or always: the data of a large
  -- array is backed by huge pages once touched (/proc/self/smaps, AnonHugePages)
  local function thp_mode()
    local f = io.open("/sys/kernel/mm/transparent_hugepage/enabled")
    local text = f and f:read("a") or ""
    if f then f:close() end
    return text:match("%[(%w+)%]")
  end
  if thp_mode() == "madvise" or thp_mode() == "always" then
    it("large arrays get huge pages where the kernel gives them on request", function()
      local h = host.empty(2 ^ 23, "float64")               -- 64 MiB
      -- 4 MiB in: inside the advised interior (madvise splits the mapping there)
      local at = tonumber(tostring(h:ptr()):match("0x(%x+)"), 16) + 2 ^ 22
      local huge_kb, inside
      for line in io.lines("/proc/self/smaps") do
        local lo, hi = line:match("^(%x+)%-(%x+) ")
        if lo then
          inside = at >= tonumber(lo, 16) and at < tonumber(hi, 16)
        elseif inside and line:match("^AnonHugePages:") then
          huge_kb = tonumber(line:match("(%d+) kB"))
        end
      end
      assert.is_true(huge_kb ~= nil and huge_kb >= 2048, ("AnonHugePages %s kB"):format(tostring(huge_kb)))
      h:free()
    end)
  else
    pending("large arrays get huge pages (transparent huge pages are off here)")
  end

  it("ones and full fill every element", function()
    local o = host.ones({3, 2}, "float32")
    for i = 1, 6 do assert.are.equal(1, o[i]) end
    local f = host.full(4, -7, "int8")
    assert.are.same({-7, -7, -7, -7}, f:totable())
    assert.are.equal("int64", host.full(2, 3).dtype)
    assert.are.equal("float64", host.full(2, 3.5).dtype)
    assert.are.equal("bool", host.full(2, true).dtype)
    helpers.assert_error("bad argument #2 to 'full' (fill value out of range for int8)",
                         function() host.full(4, 300, "int8") end)
  end)

  it("from_table takes flat and nested tables, inferring the dtype like NumPy", function()
    local values = helpers.random_integers(12, -1000, 1000)
    local flat = host.from_table(values, "int32")
    assert.are.same({12}, flat.shape)
    assert.are.same(values, flat:totable())
    local nested = {}
    for r = 1, 3 do
      nested[r] = {}
      for c = 1, 4 do nested[r][c] = values[(r - 1) * 4 + c] end
    end
    local h = host.from_table(nested, "int32")
    assert.are.same({3, 4}, h.shape)
    assert.are.same(nested, h:totable())
    for i = 1, 12 do assert.are.equal(values[i], h[i]) end  -- flat, row-major
    assert.are.equal("int64", host.from_table({1, 2}).dtype)
    assert.are.equal("float64", host.from_table({1, 2.5}).dtype)
    assert.are.equal("bool", host.from_table({true, false}).dtype)
    local deep = host.from_table({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, "uint8")
    assert.are.same({2, 2, 2}, deep.shape)
    assert.are.same({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, deep:totable())
    assert.are.same({0}, host.from_table({}).shape)
  end)

  it("from_table rejects ragged tables and values that do not fit", function()
    helpers.assert_error("bad argument #1 to 'from_table' (ragged nested table: a row at depth 2 "
                         .. "has 1 items, expected 2)", function() host.from_table({{1, 2}, {3}}) end)
    helpers.assert_error("bad argument #1 to 'from_table' (ragged nested table: item 2 at depth 1 "
                         .. "is a number, not a table)", function() host.from_table({{1, 2}, 3}) end)
    helpers.assert_error("bad argument #1 to 'from_table' (item 2: expected a number, got table)",
                         function() host.from_table({1, {2}}, "int32") end)
    helpers.assert_error("bad argument #1 to 'from_table' (item 3: out of range for uint8, got number)",
                         function() host.from_table({1, 2, 256}, "uint8") end)
    helpers.assert_error("bad argument #2 to 'from_table' (unknown dtype 'int128')",
                         function() host.from_table({1}, "int128") end)
    helpers.assert_error("bad argument #1 to 'from_table' (table expected, got string)",
                         function() host.from_table("1, 2") end)
    assert.are.same({1, 2}, host.from_table({1, 2}, "uint8"):totable())
  end)

  it("from_bytes reads raw bytes, with an optional shape", function()
    local values = helpers.random_integers(6, -2^31, 2^31 - 1)
    local bytes = string.pack("<" .. ("i4"):rep(6), table.unpack(values))
    local h = host.from_bytes(bytes, "int32")
    assert.are.same(values, h:totable())
    local m = host.from_bytes(bytes, "int32", {2, 3})
    assert.are.same({2, 3}, m.shape)
    assert.are.equal(bytes, m:bytes())
    helpers.assert_error("bad argument #1 to 'from_bytes' (23 bytes is not a whole number of int32 elements)",
                         function() host.from_bytes(bytes:sub(2), "int32") end)
    helpers.assert_error("bad argument #3 to 'from_bytes' (shape holds 4 elements, the string 6)",
                         function() host.from_bytes(bytes, "int32", {2, 2}) end)
    helpers.assert_error("bad argument #1 to 'from_bytes' (string expected, got table)",
                         function() host.from_bytes({}, "int32") end)
  end)

  it("reject bad shapes and dtypes", function()
    helpers.assert_error("bad argument #1 to 'empty' (negative dimension -1 in shape)",
                         function() host.empty(-1) end)
    helpers.assert_error("bad argument #1 to 'zeros' (negative dimension -2 in shape)",
                         function() host.zeros({3, -2}) end)
    helpers.assert_error("bad argument #1 to 'empty' (shape must be a number or a table of whole "
                         .. "numbers, got string)", function() host.empty({2, "a"}) end)
    helpers.assert_error("bad argument #1 to 'empty' (shape must be a number or a table of whole "
                         .. "numbers, got boolean)", function() host.empty(true) end)
    helpers.assert_error("bad argument #1 to 'empty' (shape must be a number or a table of whole "
                         .. "numbers, got no value)", function() host.empty() end)
    helpers.assert_error("bad argument #2 to 'empty' (unknown dtype 'float')",
                         function() host.empty(3, "float") end)
    helpers.assert_error("bad argument #1 to 'ones' (shape is too large)",
                         function() host.ones({2^31, 2^31, 2}) end)
    helpers.assert_error("bad argument #1 to 'empty' (shape is too large)",
                         function() host.empty(2^61, "float64") end)
    assert.are.equal(3, #host.empty(3))
  end)
end)

describe("gpu.HostArray elements", function()
  it("read and write 1-based flat indices with conversion", function()
    local h = host.zeros({2, 2}, "float32")
    local x = helpers.random_floats(4, 100)
    for i = 1, 4 do h[i] = x[i] end
    for i = 1, 4 do assert.are.equal(helpers.f32(x[i]), h[i]) end
    local b = host.zeros(2, "bool")
    b[2] = true
    assert.are.same({false, true}, b:totable())
    local u = host.zeros(1, "uint64")
    u[1] = -1
    assert.are.equal(-1, u[1])
    assert.are.equal("integer", math.type(host.ones(1, "int8")[1]))
    assert.are.equal("float", math.type(host.ones(1, "float32")[1]))
  end)

  it("check the index range and type, and the value", function()
    local h = host.from_table({10, 20, 30}, "int32")
    helpers.assert_error("HostArray index 0 out of range (size 3)", function() return h[0] end)
    helpers.assert_error("HostArray index 4 out of range (size 3)", function() return h[4] end)
    helpers.assert_error("HostArray index -1 out of range (size 3)", function() h[-1] = 1 end)
    helpers.assert_error("HostArray index must be a whole number, got 1.5", function() return h[1.5] end)
    helpers.assert_error("HostArray index must be a whole number, got string", function() h.x = 1 end)
    helpers.assert_error("cannot store 1099511627776 in a HostArray of int32: out of range for int32",
                         function() h[1] = 1 << 40 end)
    helpers.assert_error("cannot store 2.5 in a HostArray of int32: not an integer",
                         function() h[1] = 2.5 end)
    helpers.assert_error("cannot store a string in a HostArray of int32: expected a number",
                         function() h[1] = "7" end)
    assert.is_nil(h.nosuchfield)
    assert.are.same({10, 20, 30}, h:totable())     -- nothing was written
    h[3] = 31
    assert.are.equal(31, h[3])
  end)
end)

describe("gpu.HostArray methods", function()
  it("bytes() are the elements in native layout", function()
    local x = helpers.random_floats(5)
    local h = host.from_table(x, "float64")
    assert.are.equal(string.pack("=" .. ("d"):rep(5), table.unpack(x)), h:bytes())
    assert.are.equal("", host.empty(0, "int8"):bytes())
  end)

  it("fill(v) sets every element and returns the array", function()
    local h = host.empty({3, 3}, "int64")
    assert.are.equal(h, h:fill(-5))
    for i = 1, 9 do assert.are.equal(-5, h[i]) end
    helpers.assert_error("bad argument #1 to 'fill' (fill value not an integer)",
                         function() h:fill(0.5) end)
    helpers.assert_error("bad argument #1 to 'fill' (value expected)", function() h:fill() end)
    assert.are.equal(-5, h[9])
  end)

  it("reshape gives a view that shares the data", function()
    local values = helpers.random_integers(6, -100, 100)
    local h = host.from_table(values, "int32")
    local v = h:reshape(2, 3)
    assert.are.same({2, 3}, v.shape)
    assert.are.same({{values[1], values[2], values[3]}, {values[4], values[5], values[6]}}, v:totable())
    v[6] = 1000
    assert.are.equal(1000, h[6])
    assert.are.same({3, 2}, h:reshape({3, -1}).shape)
    assert.are.same({6}, v:reshape(-1).shape)
    helpers.assert_error("bad argument #1 to 'reshape' (cannot reshape an array of size 6 into that shape)",
                         function() h:reshape(4, 2) end)
    helpers.assert_error("bad argument #1 to 'reshape' (only one dimension can be -1)",
                         function() h:reshape(-1, -1) end)
    helpers.assert_error("bad argument #1 to 'reshape' (negative dimension -3 in shape)",
                         function() h:reshape(-3, -2) end)
    helpers.assert_error("bad argument #1 to 'reshape' (shape expected)", function() h:reshape() end)
    helpers.assert_error("bad argument #2 to 'reshape' (number expected, got string)",
                         function() h:reshape(2, "x") end)
  end)

  it("print like NumPy", function()
    assert.are.equal("[[1 2 3]\n [4 5 6]]", tostring(host.from_table({{1, 2, 3}, {4, 5, 6}}, "int32")))
    assert.are.equal("[1.5 2.  3. ]", tostring(host.from_table({1.5, 2, 3})))
    assert.are.equal("[-1  0 10]", tostring(host.from_table({-1, 0, 10}, "int8")))
    assert.are.equal("[ True False]", tostring(host.from_table({true, false})))   -- NumPy's spelling
    assert.are.equal("[[ True  True]\n [False  True]]", tostring(host.from_table({{true, true}, {false, true}})))
    assert.are.equal("True", tostring(host.full({}, true, "bool")))
    assert.are.equal("[[ 1.5e+00 -2.0e+00]\n [ 1.0e-05  3.0e+00]]",
                     tostring(host.from_table({{1.5, -2}, {1e-5, 3}})))
    assert.are.equal("[ nan  inf -inf  1.5]", tostring(host.from_table({0 / 0, 1 / 0, -1 / 0, 1.5}, "float32")))
    -- scientific also when the largest magnitude is over 1000 times the smallest
    assert.are.equal("[1.e+00 1.e+04]", tostring(host.from_table({1.0, 10000.0})))
    assert.are.equal("[ 0.e+00  1.e-01 -1.e+03]", tostring(host.from_table({0.0, 0.1, -1000.0})))
    assert.are.equal("[   1. 1000.]", tostring(host.from_table({1.0, 1000.0})))
    -- a 3-digit exponent gives every exponent 3 digits; nan keeps to the column's width
    assert.are.equal("[1.e+100 1.e-005]", tostring(host.from_table({1e100, 1e-5})))
    assert.are.equal("[1.5e+100 1.0e-005 3.0e+000      nan]",
                     tostring(host.from_table({1.5e100, 1e-5, 3, 0 / 0})))
    -- float32 and float16 values with the digits that tell them apart in their own dtype
    assert.are.equal("[1.1 3.3]", tostring(host.from_table({1.1, 3.3}, "float32")))
    assert.are.equal("[0.1 1.1]", tostring(host.from_table({0.1, 1.1}, "float16")))
    assert.are.equal("[1.6777216e+07 3.3333334e-01]", tostring(host.from_table({16777217, 1 / 3}, "float32")))
    assert.are.equal("[[[0 0]\n  [0 0]]\n\n [[0 0]\n  [0 0]]]", tostring(host.zeros({2, 2, 2}, "int32")))
    assert.are.equal("[]", tostring(host.zeros(0, "int32")))
    assert.are.equal("7", tostring(host.full({}, 7, "int32")))
    -- uint64 values from 2^63 up are negative Lua integers, printed unsigned as NumPy does
    assert.are.equal("[18446744073709551615                    5  9223372036854775808]",
                     tostring(host.from_table({-1, 5, math.mininteger}, "uint64")))
    assert.are.equal("18446744073709551606", tostring(host.full({}, -10, "uint64")))
    assert.are.equal("[-1  5]", tostring(host.from_table({-1, 5}, "int64")))
    -- a 0-d float prints as NumPy's scalar does
    assert.are.equal("3.0", tostring(host.full({}, 3.0, "float64")))
    assert.are.equal("1e-05", tostring(host.full({}, 1e-5, "float64")))
    assert.are.equal("1.5e+20", tostring(host.full({}, 1.5e20, "float64")))
    assert.are.equal("1.1", tostring(host.full({}, 1.1, "float32")))
    assert.are.equal("-0.0", tostring(host.full({}, -0.0, "float64")))
    local t = {}
    for i = 0, 1999 do t[#t + 1] = i end
    assert.are.equal("[   0    1    2 ... 1997 1998 1999]", tostring(host.from_table(t, "int32")))
  end)

  it("say whether they are freed, as a GPUArray does", function()
    local h = host.zeros(3)
    local view = h:reshape(3, 1)
    assert.is_false(h.freed)
    h:free()
    assert.is_true(h.freed)
    assert.is_true(view.freed)          -- its memory was h's
    assert.are.equal(3, h.size)         -- the layout stays readable
  end)

  it("is_pagelocked is false for ordinary arrays", function()
    assert.is_false(host.zeros(3):is_pagelocked())
  end)
end)

describe("freeing a HostArray", function()
  it("is idempotent, and use after free is an error, never a crash", function()
    local h = host.from_table({1, 2, 3}, "int32")
    local view = h:reshape(3, 1)
    h:free()
    h:free()
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return h[1] end)
    helpers.assert_error("bad argument #1 to 'newindex' (host array has been freed)", function() h[1] = 1 end)
    helpers.assert_error("bad argument #1 to 'len' (host array has been freed)", function() return #h end)
    helpers.assert_error("calling 'totable' on bad self (host array has been freed)", function() h:totable() end)
    helpers.assert_error("calling 'bytes' on bad self (host array has been freed)", function() h:bytes() end)
    helpers.assert_error("calling 'fill' on bad self (host array has been freed)", function() h:fill(1) end)
    helpers.assert_error("calling 'reshape' on bad self (host array has been freed)", function() h:reshape(3) end)
    -- a view of a freed array is dead too
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return view[1] end)
    assert.are.equal("gpu.HostArray(freed)", tostring(h))
    assert.are.equal("gpu.HostArray(freed)", tostring(view))
    view:free()
    helpers.assert_error("bad argument #1 to 'In' (host array has been freed)", function() gpu.In(h) end)
    assert.are.equal(3, #host.zeros(3))               -- the module stays usable
  end)

  it("freeing a view leaves its base alive", function()
    local h = host.from_table({1, 2, 3, 4}, "int32")
    local v = h:reshape(2, 2)
    v:free()
    assert.are.same({1, 2, 3, 4}, h:totable())
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return v[1] end)
  end)

  it("works with <close>", function()
    local outer
    do
      local h <close> = host.zeros(2)
      outer = h
      assert.are.equal(2, #h)
    end
    assert.are.equal("gpu.HostArray(freed)", tostring(outer))
  end)
end)

describe("page-locked host arrays", function()
  if not helpers.has_gpu then
    it("need a device: without one they raise the driver's gpu.Error", function()
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit",
                               function() host.pagelocked_empty(4, "float32") end)
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit",
                               function() host.pagelocked_zeros(4, "float32") end)
      assert.are.equal(4, #host.zeros(4))
    end)
  end

  helpers.gpu_it("are zero-filled, writable, and report is_pagelocked", function()
    local shape = {3, 5}
    local h = host.pagelocked_empty(shape, "int32")
    assert.is_true(h:is_pagelocked())
    assert.are.same(shape, h.shape)
    for i = 1, product(shape) do assert.are.equal(0, h[i]) end
    local values = helpers.random_integers(15, -1000, 1000)
    for i = 1, 15 do h[i] = values[i] end
    assert.are.same(values, h:reshape(-1):totable())
    assert.is_true(h:reshape(5, 3):is_pagelocked())
    local z = host.pagelocked_zeros(7, "float64")
    assert.is_true(z:is_pagelocked())
    assert.are.same({0, 0, 0, 0, 0, 0, 0}, z:totable())
  end)

  helpers.gpu_it("free idempotently; use after free is an error", function()
    local h = host.pagelocked_zeros(4, "float32")
    local v = h:reshape(2, 2)
    h:free()
    h:free()
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return h[1] end)
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return v[1] end)
    helpers.assert_error("calling 'totable' on bad self (host array has been freed)", function() h:totable() end)
    assert.are.equal("gpu.HostArray(freed)", tostring(h))
    local again <close> = host.pagelocked_empty(4, "float32")
    assert.is_true(again:is_pagelocked())
  end)

  helpers.gpu_it("reject bad shapes and dtypes like the pageable ones", function()
    helpers.assert_error("bad argument #1 to 'pagelocked_empty' (negative dimension -1 in shape)",
                         function() host.pagelocked_empty(-1, "float32") end)
    helpers.assert_error("bad argument #2 to 'pagelocked_zeros' (unknown dtype 'f32')",
                         function() host.pagelocked_zeros(4, "f32") end)
  end)
end)

describe("managed host arrays", function()
  if not helpers.has_gpu then
    it("need a device: without one they raise the driver's gpu.Error", function()
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit",
                               function() host.managed_empty(4, "float32") end)
    end)
  end

  -- x[i] = 3 x[i] + i (int32) and y[i] = a x[i] + y[i] (float64), written through the
  -- arrays' own memory: no copy either way
  local SOURCE = [[
    __global__ void affine(int *x, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) x[i] = 3 * x[i] + (int)i;
    }
    __global__ void axpy(double *y, const double *x, double a, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }]]

  helpers.gpu_it("are zero-filled host arrays that kernels take as pointers, both ways", function()
    local module = gpu.SourceModule(SOURCE)
    local n = 1000
    local x = host.managed_empty({10, 100}, "int32")
    assert.is_true(x:is_managed())
    assert.is_false(x:is_pagelocked())
    assert.is_false(host.zeros(3):is_managed())
    assert.are.same({10, 100}, x.shape)
    for i = 1, n do assert.are.equal(0, x[i]) end
    local values = helpers.random_integers(n, -100000, 100000)
    for i = 1, n do x[i] = values[i] end
    module.affine(x, n, {block = 128, grid = 8})
    gpu.synchronize()
    for i = 1, n do assert.are.equal(3 * values[i] + (i - 1), x[i], "element " .. i) end
    -- a reshaped view is the same memory; prepared calls take it too
    local flat = x:reshape(n)
    assert.is_true(flat:is_managed())
    module.affine:prepare("Pq")
    module.affine:prepared_call(8, 128, flat, n)
    gpu.synchronize()
    for i = 1, n do
      assert.are.equal(3 * (3 * values[i] + (i - 1)) + (i - 1), flat[i], "element " .. i)
    end
    -- float64 on a stream, attached to it alone, then to every stream again; prefetched
    local s = gpu.Stream({non_blocking = true})
    local xs, ys = helpers.random_floats(n, 10), helpers.random_floats(n, 10)
    local xd = host.managed_zeros(n, "float64")
    local yd = host.managed_zeros(n, "float64", {attach = "global"})
    for i = 1, n do xd[i], yd[i] = xs[i], ys[i] end
    xd:prefetch(nil, s)
    yd:attach("single", s):prefetch(gpu.get_device(), s):prefetch(gpu.get_device():ordinal(), s)
    module.axpy(yd, xd, 2.5, n, {block = 128, grid = 8, stream = s})
    yd:prefetch("host", s)
    s:synchronize()
    yd:attach("global")
    gpu.synchronize()
    for i = 1, n do helpers.assert_close(2.5 * xs[i] + ys[i], yd[i], 1e-15, "axpy " .. i) end
    -- still host arrays everywhere else: copies, In/Out, to_gpu
    local copy = gpu.gpuarray.to_gpu(yd)
    assert.are.same(yd:totable(), copy:get():totable())
    assert.are.equal(yd:bytes(), gpu.from_device(gpu.to_device(yd), n, "float64"):bytes())
    local h = host.managed_zeros(4, "int32")
    module.affine(gpu.InOut(h), 4, {block = 4})
    assert.are.same({0, 1, 2, 3}, h:totable())
    -- a kernel loaded from an image, whose parameter types only the driver's sizes tell
    local loaded = gpu.module_from_buffer(gpu.compile(SOURCE))
    loaded.affine(h, gpu.int64(4), {block = 4})
    gpu.synchronize()
    assert.are.same({0, 4, 8, 12}, h:totable())
  end)

  helpers.gpu_it("free idempotently; use after free is an error, not a crash", function()
    local module = gpu.SourceModule(SOURCE)
    local h = host.managed_zeros(8, "int32")
    local v = h:reshape(2, 4)
    h:free()
    h:free()
    v:free()
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return h[1] end)
    helpers.assert_error("bad argument #1 to 'index' (host array has been freed)", function() return v[1] end)
    helpers.assert_error("calling 'attach' on bad self (host array has been freed)", function() h:attach("host") end)
    helpers.assert_error("calling 'prefetch' on bad self (host array has been freed)", function() h:prefetch() end)
    helpers.assert_error("bad argument #1 to 'affine' (host array has been freed)",
                         function() module.affine(h, 8, {block = 8}) end)
    -- a graph replays the pointer it captured: launching it after the free is refused
    local g = host.managed_zeros(8, "int32")
    local s = gpu.Stream()
    local graph = gpu.capture(function(stream) module.affine(g, 8, {block = 8, stream = stream}) end, s)
    graph:launch(s)
    s:synchronize()
    assert.are.same({0, 1, 2, 3, 4, 5, 6, 7}, g:totable())
    g:free()
    helpers.assert_error("graph uses a host array that has been freed", function() graph:launch(s) end)
  end)

  helpers.gpu_it("check their arguments", function()
    helpers.assert_error("bad argument #1 to 'managed_empty' (negative dimension -1 in shape)",
                         function() host.managed_empty(-1, "float32") end)
    helpers.assert_error("bad argument #2 to 'managed_zeros' (unknown dtype 'f32')",
                         function() host.managed_zeros(4, "f32") end)
    helpers.assert_error("bad argument #3 to 'managed_zeros' (unknown option 'atach')",
                         function() host.managed_zeros(4, "float32", {atach = "host"}) end)
    helpers.assert_error("bad argument #2 to 'managed_zeros' (option 'attach' must be \"global\" or \"host\")",
                         function() host.managed_zeros(4, {attach = "single"}) end)
    assert.are.equal("float64", host.managed_zeros(4, {attach = "host"}).dtype)
    local h = host.managed_zeros(4)
    helpers.assert_error("bad argument #1 to 'attach' (invalid option 'everyone')", function() h:attach("everyone") end)
    helpers.assert_error("bad argument #2 to 'attach' (mode \"single\" needs a stream)", function() h:attach("single") end)
    helpers.assert_error("bad argument #1 to 'prefetch' (\"host\", a gpu.Device or a device ordinal expected)",
                         function() h:prefetch("gpu") end)
    helpers.assert_error("bad argument #1 to 'prefetch' (\"host\", a gpu.Device or a device ordinal expected)",
                         function() h:prefetch(-1) end)
    helpers.assert_error("bad argument #1 to 'prefetch' (\"host\", a gpu.Device or a device ordinal expected)",
                         function() h:prefetch(h) end)
    local pageable = host.zeros(4)
    helpers.assert_error("calling 'attach' on bad self (attach needs a managed array (gpu.host.managed_empty))",
                         function() pageable:attach("host") end)
    helpers.assert_error("calling 'prefetch' on bad self (prefetch needs a managed array (gpu.host.managed_empty))",
                         function() pageable:prefetch() end)
  end)
end)

describe("managed host arrays on the stand-in driver", function()
  local function run(code, concurrent)
    return helpers.run_with_fakes([[
      local gpu = require "gpu"
      local host = gpu.host
    ]] .. code, {FAKE_CUDA_TRACE_SYNC = "1", FAKE_CUDA_CONCURRENT_MANAGED = concurrent,
                 FAKE_CUDA_REPORT = "1"})
  end
  local function count(out, line)
    local n = 0
    for _ in out:gmatch(line) do n = n + 1 end
    return n
  end
  local ACCESSES = [[
    local h = host.managed_zeros(4, "int32")       -- zeroed by the host: one wait
    print("made")
    h[2] = 5                                       -- each access waits where it must
    local _ = h[2]
    h:fill(1)
    h:totable()
    h:bytes()
    h:reshape(2, 2)[1] = 3
    local _ = h.shape, #h, h:is_managed(), h:ptr()  -- none of these touch the memory
    print("accessed")
    h:free()
    local kept = host.managed_zeros(1000)           -- left to the collector
    kept = nil
    collectgarbage()
  ]]

  it("wait for the device before the host touches them, where the device needs it", function()
    local out, ok = run(ACCESSES, "0")
    assert(ok, out)
    local made, accessed = out:find("made\n", 1, true), out:find("accessed\n", 1, true)
    assert.are.equal(1, count(out:sub(1, made), "cuCtxSynchronize"), out)
    assert.are.equal(6, count(out:sub(made, accessed), "cuCtxSynchronize"), out)
    -- and free their memory, explicitly or by the collector
    assert.truthy(out:find("fakecuda: 0 device bytes not freed at exit\n", 1, true), out)
  end)

  it("refuse to wait for the device while a stream capture is open", function()
    local out, ok = run([[
      local h = host.managed_zeros(4, "int32")
      local s = gpu.Stream()
      s:begin_capture()
      print(select(2, pcall(function() return h[1] end)))
      s:end_capture()
      print(h[1])
    ]], "0")
    assert(ok, out)
    assert.truthy(out:find("cannot synchronize the device while a stream capture is open (in any "
                           .. "thread): end the capture first, or synchronize a stream\n", 1, true), out)
    assert.truthy(out:find("\n0\n", 1, true), out)
  end)

  it("touch them at once on devices with concurrent managed access", function()
    local out, ok = run(ACCESSES, "1")
    assert(ok, out)
    assert.are.equal(0, count(out, "cuCtxSynchronize"), out)
    assert.truthy(out:find("fakecuda: 0 device bytes not freed at exit\n", 1, true), out)
  end)
end)

describe("gpu.allclose, gpu.isclose and gpu.array_equal", function()
  local allclose, isclose, array_equal = gpu.allclose, gpu.isclose, gpu.array_equal

  it("are the gpu.host functions under NumPy's names", function()
    assert.are.equal(host.allclose, allclose)
    assert.are.equal(host.isclose, isclose)
    assert.are.equal(host.array_equal, array_equal)
  end)

  it("allclose: |a - b| <= atol + rtol * |b|, and the first element that is not", function()
    local n = 1000
    local want = helpers.random_floats(n, 100)
    local got = host.from_table(want, "float32")          -- off by float32 rounding only
    assert.is_true(allclose(got, want))
    local bad = math.random(2, n)
    local drifted = want[bad] + 1e-4 * math.abs(want[bad]) + 1e-3
    got[bad] = drifted
    local ok, why = allclose(got, want)
    assert.is_false(ok)
    local got_text, want_text = ("%.14g"):format(got[bad]), ("%.14g"):format(want[bad])
    assert.are.equal(("1 of %d elements differ by more than atol + rtol * |expected| (rtol 1e-05, "
                      .. "atol 1e-08); the first at [%d]: %s, expected %s"):format(
                        n, bad, got_text, want_text), why)
    assert.is_true(allclose(got, want, {rtol = 2e-4, atol = 2e-3}))
    -- b is the reference: the tolerance scales with |b| only
    assert.is_true(allclose({110}, {100}, {rtol = 0.1, atol = 0}))
    assert.is_false(allclose({100}, {110}, {rtol = 0.09, atol = 0}))
  end)

  it("allclose: NaN only with equal_nan, infinities only to themselves", function()
    local nan, inf = 0 / 0, math.huge
    assert.is_false(allclose({nan}, {nan}))
    assert.is_true(allclose({nan, 1}, {nan, 1}, {equal_nan = true}))
    assert.is_false(allclose({nan}, {1}, {equal_nan = true}))
    assert.is_true(allclose({inf, -inf}, {inf, -inf}))
    assert.is_false(allclose({inf}, {-inf}))
    assert.is_false(allclose({inf}, {1e308}))
    assert.is_true(allclose({1e308}, {1.000001e308}, {rtol = 1e-5}))     -- no overflow in |b|
  end)

  it("broadcast like NumPy and name the n-d index of the first difference", function()
    assert.is_true(allclose({{1, 2}, {1, 2}}, {1, 2}))
    assert.is_true(allclose(host.ones({3, 4}, "float32"), 1))
    local ok, why = allclose({{1, 2, 3}, {4, 5, 6}}, {{1}, {5}})
    assert.is_false(ok)
    assert.are.equal("4 of 6 elements differ by more than atol + rtol * |expected| (rtol 1e-05, "
                     .. "atol 1e-08); the first at [1, 2]: 2, expected 1", why)
    assert.are.same({{false, true}, {false, true}}, isclose({{1, 2}, {3, 4}}, {{0, 2}, {0, 4}}):totable())
  end)

  it("isclose gives a bool host array of the broadcast shape", function()
    local a = helpers.random_floats(12)
    local b = {}
    for i = 1, 12 do b[i] = i % 3 == 0 and a[i] + 1 or a[i] end
    local close = isclose(host.from_table(a):reshape(3, 4), host.from_table(b):reshape(3, 4))
    assert.are.same({"bool", {3, 4}}, {close.dtype, close.shape})
    for i = 1, 12 do assert.are.equal(i % 3 ~= 0, close[i], "element " .. i) end
    local row = isclose({{1, 2, 3}}, {{1}, {2}})
    assert.are.same({{true, false, false}, {false, true, false}}, row:totable())
  end)

  it("compare integers of every width and signedness exactly, by value", function()
    local big = math.maxinteger - 7
    assert.is_true(array_equal(host.from_table({big, -3}, "int64"), {big, -3}))
    assert.is_false(allclose({big}, {big - 1}, {rtol = 0, atol = 0}))
    local u = host.from_table({-1, 5}, "uint64")         -- 2^64 - 1 stored
    local ok, why = array_equal(u, host.from_table({-1, 5}, "int64"))
    assert.is_false(ok)
    assert.are.equal("1 of 2 elements differ; the first at [1]: 18446744073709551615, expected -1",
                     why)
    assert.is_true(array_equal(u, host.from_table({-1, 5}, "uint64")))
    assert.is_true(allclose(gpu.uint64(-1), 2.0 ^ 64))
    assert.is_true(array_equal(host.from_table({1, 0}, "uint8"), {true, false}))
  end)

  it("array_equal: the same shape and exactly the same values", function()
    local values = helpers.random_floats(50)
    assert.is_true(array_equal(host.from_table(values, "float64"), values))
    local ok, why = array_equal({1, 2, 3}, {{1, 2, 3}})
    assert.is_false(ok)
    assert.are.equal("shapes (3,) and (1,3) differ", why)
    ok, why = array_equal({0.1}, {0.1 + 2 ^ -56})
    assert.is_false(ok)
    assert.are.equal("1 of 1 elements differ; the first at [1]: 0.10000000000000001, "
                     .. "expected 0.10000000000000002", why)
    assert.is_false(array_equal({0 / 0}, {0 / 0}))
    assert.is_true(array_equal({0 / 0}, {0 / 0}, {equal_nan = true}))
    assert.is_true(array_equal({gpu.complex(1, -2)}, host.from_table({gpu.complex(1, -2)}, "complex64")))
    assert.is_true(array_equal(host.zeros({}, "int32"), 0))
    assert.is_true(array_equal(host.empty({0, 3}), host.empty({0, 3}, "int8")))
  end)

  it("compare complex numbers by the modulus of the difference", function()
    assert.is_true(allclose({gpu.complex(3, 4)}, {gpu.complex(3, 4.04)}, {rtol = 0.01, atol = 0}))
    assert.is_false(allclose({gpu.complex(3, 4)}, {gpu.complex(3, 4.06)}, {rtol = 0.01, atol = 0}))
  end)

  it("reject what they cannot compare, naming the argument", function()
    helpers.assert_error("bad argument #2 to 'allclose' (operands could not be broadcast together "
                         .. "with shapes (2,) (3,))", allclose, {1, 2}, {1, 2, 3})
    helpers.assert_error("bad argument #3 to 'allclose' (unknown option 'rtl')",
                         allclose, {1}, {1}, {rtl = 1})
    helpers.assert_error("bad argument #3 to 'isclose' (option 'atol' must be a number of 0 or "
                         .. "more, got -1)", isclose, {1}, {1}, {atol = -1})
    helpers.assert_error("bad argument #3 to 'allclose' (option 'rtol' must be a number of 0 or "
                         .. "more, got string)", allclose, {1}, {1}, {rtol = "1e-3"})
    helpers.assert_error("bad argument #3 to 'array_equal' (option 'equal_nan' must be a boolean, "
                         .. "got number)", array_equal, {1}, {1}, {equal_nan = 1})
    helpers.assert_error("bad argument #3 to 'array_equal' (unknown option 'rtol')",
                         array_equal, {1}, {1}, {rtol = 0})
    helpers.assert_error("bad argument #2 to 'allclose' (gpu.HostArray, gpu.GPUArray, table or "
                         .. "number expected, got string)", allclose, {1}, "\0\0\0\0")
    helpers.assert_error("bad argument #1 to 'array_equal' (gpu.HostArray, gpu.GPUArray, table or "
                         .. "number expected, got nil)", array_equal, nil, {1})
    helpers.assert_error("bad argument #1 to 'allclose' (ragged nested table: a row at depth 2 "
                         .. "has 1 items, expected 2)", allclose, {{1, 2}, {3}}, {1})
    local freed = host.from_table({1, 2})
    freed:free()
    helpers.assert_error("bad argument #2 to 'isclose' (host array has been freed)",
                         isclose, {1, 2}, freed)
  end)

  helpers.gpu_it("read GPU arrays and their views from the device", function()
    local values = helpers.random_floats(24, 10)
    local a = gpu.to_gpu(values, "float32"):reshape(4, 6)
    assert.is_true(allclose(a, host.from_table(values):reshape(4, 6), {rtol = 1e-6}))
    local transposed, doubled = {}, {}
    for c = 1, 6 do
      transposed[c] = {}
      for r = 1, 4 do transposed[c][r] = values[(r - 1) * 6 + c] end
    end
    for i = 1, 24 do doubled[i] = 2 * helpers.f32(values[i]) end   -- exact in float32
    assert.is_true(allclose(a:transpose(), transposed, {rtol = 1e-6}))
    assert.is_false(allclose(a:transpose(), host.from_table(values):reshape(6, 4)))
    local twice = 2 * a
    assert.is_true(array_equal(twice, host.from_table(doubled):reshape(4, 6)))
    local ok, why = array_equal(twice, a)
    assert.is_false(ok)
    assert.is_truthy(why:find("^24 of 24 elements differ; the first at %[1, 1%]"), why)
  end)
end)
