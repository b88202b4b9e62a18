-- Device memory: Buffers, views, copies and memsets (PyCUDA's driver layer).
local helpers = require "helpers"
local gpu = helpers.gpu
local host = gpu.host

local function random_int32(n)
  return host.from_table(helpers.random_integers(n, -2^31, 2^31 - 1), "int32")
end

describe("gpu.mem_alloc", function()
  helpers.gpu_it("gives a Buffer of the size asked, with an address", function()
    local n = math.random(1, 1 << 20)
    local b = gpu.mem_alloc(n)
    assert.are.equal(n, #b)
    assert.are.equal("integer", math.type(b:ptr()))
    assert.is_true(b:ptr() ~= 0)
    assert.are.equal(("gpu.Buffer(0x%x, %d bytes)"):format(b:ptr(), n), tostring(b))
    local empty = gpu.mem_alloc(0)
    assert.are.equal(0, #empty)
    b:free()
    empty:free()
  end)

  it("rejects negative sizes and non-integers before touching the device", function()
    helpers.assert_error("bad argument #1 to 'mem_alloc' (size must not be negative)",
                         function() gpu.mem_alloc(-1) end)
    helpers.assert_error("bad argument #1 to 'mem_alloc' (number expected, got string)",
                         function() gpu.mem_alloc("sixteen") end)
    helpers.assert_error("bad argument #1 to 'mem_alloc' (number has no integer representation)",
                         function() gpu.mem_alloc(2^63) end)
    helpers.assert_error("bad argument #1 to 'mem_alloc' (number has no integer representation)",
                         function() gpu.mem_alloc(1.5) end)
  end)

  helpers.gpu_it("raises CUDA_ERROR_OUT_OF_MEMORY for an absurd size (2^62) and stays usable", function()
    local err = helpers.assert_gpu_error("CUDA_ERROR_OUT_OF_MEMORY", nil, function() gpu.mem_alloc(1 << 62) end)
    assert.is_truthy(err.call == "cuMemAlloc" or err.call == "cuMemAllocFromPoolAsync", err.call)
    local b <close> = gpu.mem_alloc(64)
    gpu.memset_d8(b, 7, 64)
    assert.are.equal(7, gpu.from_device(b, 64, "uint8")[64])
  end)
end)

describe("copies", function()
  helpers.gpu_it("htod then dtoh round-trips random data of every dtype", function()
    for _, dtype in ipairs{"int8", "uint16", "int32", "uint64", "float32", "float64"} do
      local n = math.random(1, 5000)
      local src = dtype:find("float") and host.from_table(helpers.random_floats(n, 1e3), dtype)
                  or host.from_table(helpers.random_integers(n, 0, 100), dtype)
      local b <close> = gpu.mem_alloc(src.nbytes)
      gpu.memcpy_htod(b, src)
      local dst = host.empty(n, dtype)
      gpu.memcpy_dtoh(dst, b)
      assert.are.equal(src:bytes(), dst:bytes())
    end
  end)

  helpers.gpu_it("takes strings of raw bytes as host data", function()
    local bytes = string.pack("<i4i4i4", 5, -6, 7)
    local b <close> = gpu.mem_alloc(12)
    gpu.memcpy_htod(b, bytes)
    assert.are.same({5, -6, 7}, gpu.from_device(b, 3, "int32"):totable())
    helpers.assert_error("bad argument #2 to 'memcpy_htod' (host array or string expected, got number)",
                         function() gpu.memcpy_htod(b, 5) end)
    helpers.assert_error("bad argument #1 to 'memcpy_dtoh' (gpu.HostArray expected, got string)",
                         function() gpu.memcpy_dtoh("xxxx", b) end)
  end)

  helpers.gpu_it("copy host data smaller than the buffer to its start, and refuse larger", function()
    local b <close> = gpu.mem_alloc(16)
    gpu.memset_d32(b, 0x01010101, 4)
    gpu.memcpy_htod(b, host.from_table({9}, "int32"))
    assert.are.same({9, 0x01010101, 0x01010101, 0x01010101}, gpu.from_device(b, 4, "int32"):totable())
    helpers.assert_error("bad argument #2 to 'memcpy_htod' (host data (20 bytes) is larger than the "
                         .. "destination buffer (16 bytes))", function() gpu.memcpy_htod(b, host.zeros(5, "int32")) end)
    local small = host.zeros(2, "int32")
    gpu.memcpy_dtoh(small, b)                       -- fills small from the buffer's start
    assert.are.same({9, 0x01010101}, small:totable())
    helpers.assert_error("bad argument #1 to 'memcpy_dtoh' (host array (24 bytes) is larger than the "
                         .. "source buffer (16 bytes))", function() gpu.memcpy_dtoh(host.zeros(3, "float64"), b) end)
    assert.are.equal(9, gpu.from_device(b, 1, "int32")[1])
  end)

  helpers.gpu_it("dtod copies all, or nbytes, and checks both sizes", function()
    local src = random_int32(64)
    local a <close> = gpu.to_device(src)
    local b <close> = gpu.mem_alloc(256)
    gpu.memcpy_dtod(b, a)
    assert.are.equal(src:bytes(), gpu.from_device(b, 64, "int32"):bytes())
    local c <close> = gpu.mem_alloc(256)
    gpu.memset_d8(c, 0, 256)
    gpu.memcpy_dtod(c, a, 40)
    local back = gpu.from_device(c, 64, "int32")
    for i = 1, 10 do assert.are.equal(src[i], back[i]) end
    for i = 11, 64 do assert.are.equal(0, back[i]) end
    local small <close> = gpu.mem_alloc(8)
    helpers.assert_error("bad argument #3 to 'memcpy_dtod' (copy size (300 bytes) is larger than the "
                         .. "source (256 bytes))", function() gpu.memcpy_dtod(b, a, 300) end)
    helpers.assert_error("bad argument #3 to 'memcpy_dtod' (copy size (16 bytes) is larger than the "
                         .. "destination (8 bytes))", function() gpu.memcpy_dtod(small, a, 16) end)
    helpers.assert_error("bad argument #3 to 'memcpy_dtod' (size must not be negative)",
                         function() gpu.memcpy_dtod(b, a, -1) end)
    helpers.assert_error("bad argument #2 to 'memcpy_dtod' (gpu.Buffer expected, got no value)",
                         function() gpu.memcpy_dtod(b) end)
    gpu.memcpy_dtod(small, a)                       -- the smaller of the two sizes
    assert.are.same({src[1], src[2]}, gpu.from_device(small, 2, "int32"):totable())
  end)

  helpers.gpu_it("async copies work with page-locked memory on a stream", function()
    local n = 4096
    local s = gpu.Stream()
    local src = host.pagelocked_empty(n, "float32")
    local x = helpers.random_floats(n)
    for i = 1, n do src[i] = x[i] end
    local b <close> = gpu.mem_alloc(src.nbytes)
    local c <close> = gpu.mem_alloc(src.nbytes)
    local dst = host.pagelocked_zeros(n, "float32")
    gpu.memcpy_htod_async(b, src, s)
    gpu.memcpy_dtod_async(c, b, src.nbytes, s)
    gpu.memset_d32_async(b, 0, n, s)
    gpu.memcpy_dtoh_async(dst, c, s)
    s:synchronize()
    for i = 1, n do assert.are.equal(helpers.f32(x[i]), dst[i]) end
    gpu.memcpy_htod_async(b, src)                  -- the default stream
    gpu.synchronize()
    assert.are.equal(src:bytes(), gpu.from_device(b, n, "float32"):bytes())
  end)

  helpers.gpu_it("async copies refuse pageable memory with a clear error", function()
    local b <close> = gpu.mem_alloc(16)
    local s = gpu.Stream()
    local msg = "async copies need page-locked host memory (gpu.host.pagelocked_empty)"
    helpers.assert_error("bad argument #2 to 'memcpy_htod_async' (" .. msg .. ")",
                         function() gpu.memcpy_htod_async(b, host.zeros(4, "int32"), s) end)
    helpers.assert_error("bad argument #2 to 'memcpy_htod_async' (" .. msg .. ")",
                         function() gpu.memcpy_htod_async(b, "0123456789abcdef", s) end)
    helpers.assert_error("bad argument #1 to 'memcpy_dtoh_async' (" .. msg .. ")",
                         function() gpu.memcpy_dtoh_async(host.zeros(4, "int32"), b, s) end)
    helpers.assert_error("bad argument #3 to 'memcpy_htod_async' (gpu.Stream expected, got number)",
                         function() gpu.memcpy_htod_async(b, host.pagelocked_zeros(4, "int32"), 5) end)
    local pl = host.pagelocked_zeros(4, "int32")
    gpu.memcpy_htod_async(b, pl, s)
    s:synchronize()
  end)
end)

describe("memset", function()
  helpers.gpu_it("d8/d16/d32 set count elements from the start, like the CPU would", function()
    for _, case in ipairs{{"memset_d8", "uint8", 1, 255}, {"memset_d16", "uint16", 2, 65535},
                          {"memset_d32", "uint32", 4, 4294967295}} do
      local fn, dtype, size, max = table.unpack(case)
      local n = 100
      local before = host.from_table(helpers.random_integers(n, 0, max), dtype)
      local b <close> = gpu.to_device(before)
      local value, count = math.random(0, max), math.random(1, n)
      gpu[fn](b, value, count)
      local after = gpu.from_device(b, n, dtype)
      for i = 1, n do
        assert.are.equal(i <= count and value or before[i], after[i], ("%s element %d"):format(fn, i))
      end
      assert.are.equal(n * size, #b)
    end
    local b <close> = gpu.mem_alloc(4)
    gpu.memset_d8(b, -1, 4)                          -- negative values are their two's complement
    assert.are.same({255, 255, 255, 255}, gpu.from_device(b, 4, "uint8"):totable())
    gpu.memset_d16(b, -2, 2)
    assert.are.same({-2, -2}, gpu.from_device(b, 2, "int16"):totable())
  end)

  helpers.gpu_it("checks value, count and buffer size", function()
    local b <close> = gpu.mem_alloc(16)
    helpers.assert_error("bad argument #2 to 'memset_d8' (value does not fit 8 bits)",
                         function() gpu.memset_d8(b, 256, 1) end)
    helpers.assert_error("bad argument #2 to 'memset_d16' (value does not fit 16 bits)",
                         function() gpu.memset_d16(b, -32769, 1) end)
    helpers.assert_error("bad argument #2 to 'memset_d32' (value does not fit 32 bits)",
                         function() gpu.memset_d32(b, 1 << 32, 1) end)
    helpers.assert_error("bad argument #3 to 'memset_d8' (count must not be negative)",
                         function() gpu.memset_d8(b, 0, -1) end)
    helpers.assert_error("bad argument #3 to 'memset_d32' (5 elements of 32 bits do not fit in the "
                         .. "buffer (16 bytes))", function() gpu.memset_d32(b, 0, 5) end)
    helpers.assert_error("bad argument #3 to 'memset_d16' (number expected, got no value)",
                         function() gpu.memset_d16(b, 0) end)
    helpers.assert_error("bad argument #1 to 'memset_d8' (gpu.Buffer expected, got number)",
                         function() gpu.memset_d8(0, 0, 1) end)
    gpu.memset_d32(b, 7, 4)
    assert.are.same({7, 7, 7, 7}, gpu.from_device(b, 4, "int32"):totable())
  end)
end)

describe("to_device and from_device", function()
  helpers.gpu_it("round-trip host arrays and strings", function()
    local src = random_int32(1000)
    local b <close> = gpu.to_device(src)
    assert.are.equal(src.nbytes, #b)
    local back = gpu.from_device(b, {10, 100}, "int32")
    assert.are.same({10, 100}, back.shape)
    assert.are.equal(src:bytes(), back:bytes())
    local s <close> = gpu.to_device("\1\2\3")
    assert.are.same({1, 2, 3}, gpu.from_device(s, 3, "uint8"):totable())
    helpers.assert_error("bad argument #2 to 'from_device' (1001 elements of int32 are more than the "
                         .. "buffer holds (4000 bytes))",
                         function() gpu.from_device(b, 1001, "int32") end)
    helpers.assert_error("bad argument #2 to 'from_device' (shape is too large)",
                         function() gpu.from_device(b, 1 << 62, "float64") end)
    helpers.assert_error("bad argument #2 to 'from_device' (288230376151711744 elements of float64 "
                         .. "are more than the buffer holds (4000 bytes))",
                         function() gpu.from_device(b, 1 << 58, "float64") end)
    helpers.assert_error("bad argument #3 to 'from_device' (unknown dtype 'int')",
                         function() gpu.from_device(b, 10, "int") end)
    helpers.assert_error("bad argument #1 to 'to_device' (host array or string expected, got table)",
                         function() gpu.to_device({1, 2}) end)
    assert.are.equal(src[1000], gpu.from_device(b, 1000, "int32")[1000])
  end)
end)

describe("Buffer views", function()
  helpers.gpu_it("offset(n[, size]) looks into the parent, which it keeps alive", function()
    local src = random_int32(16)
    local view = gpu.to_device(src):offset(16)        -- the parent is garbage but for the view
    collectgarbage()
    collectgarbage()
    assert.are.equal(48, #view)
    local back = gpu.from_device(view, 12, "int32")
    for i = 1, 12 do assert.are.equal(src[i + 4], back[i]) end
    local parent <close> = gpu.mem_alloc(64)
    gpu.memset_d8(parent, 0, 64)
    local part = parent:offset(8, 8)
    assert.are.equal(8, #part)
    assert.are.equal(parent:ptr() + 8, part:ptr())
    assert.are.equal(("gpu.Buffer(0x%x, 8 bytes, view)"):format(part:ptr()), tostring(part))
    gpu.memcpy_htod(part, host.from_table({-3, 4}, "int32"))
    assert.are.same({0, 0, -3, 4, 0}, gpu.from_device(parent, 5, "int32"):totable())
    helpers.assert_error("bad argument #2 to 'memcpy_htod' (host data (12 bytes) is larger than the "
                         .. "destination buffer (8 bytes))",
                         function() gpu.memcpy_htod(part, host.zeros(3, "int32")) end)
    helpers.assert_error("bad argument #1 to 'offset' (offset out of range)", function() parent:offset(65) end)
    helpers.assert_error("bad argument #1 to 'offset' (offset out of range)", function() parent:offset(-1) end)
    helpers.assert_error("bad argument #2 to 'offset' (size out of range)", function() parent:offset(60, 8) end)
    assert.are.equal(0, #parent:offset(64))
  end)

  helpers.gpu_it("die with their parent; freeing a view leaves the parent alone", function()
    local parent = gpu.mem_alloc(32)
    local view = parent:offset(16)
    view:free()
    gpu.memset_d8(parent, 1, 32)                     -- still alive
    local view2 = parent:offset(8)
    parent:free()
    helpers.assert_error("calling 'ptr' on bad self (buffer has been freed)", function() view2:ptr() end)
    helpers.assert_error("bad argument #1 to 'memset_d8' (buffer has been freed)",
                         function() gpu.memset_d8(view2, 0, 1) end)
    assert.are.equal("gpu.Buffer(freed)", tostring(view2))
  end)
end)

describe("freeing a Buffer", function()
  helpers.gpu_it("is idempotent; every use afterwards is an error, never a crash", function()
    local b = gpu.mem_alloc(64)
    b:free()
    b:free()
    helpers.assert_error("bad argument #1 to 'len' (buffer has been freed)", function() return #b end)
    helpers.assert_error("calling 'ptr' on bad self (buffer has been freed)", function() b:ptr() end)
    helpers.assert_error("calling 'offset' on bad self (buffer has been freed)", function() b:offset(0) end)
    helpers.assert_error("bad argument #1 to 'memcpy_htod' (buffer has been freed)",
                         function() gpu.memcpy_htod(b, "x") end)
    helpers.assert_error("bad argument #2 to 'memcpy_dtoh' (buffer has been freed)",
                         function() gpu.memcpy_dtoh(host.zeros(1), b) end)
    helpers.assert_error("bad argument #2 to 'memcpy_dtod' (buffer has been freed)",
                         function() gpu.memcpy_dtod(gpu.mem_alloc(4), b, 4) end)
    helpers.assert_error("bad argument #1 to 'from_device' (buffer has been freed)",
                         function() gpu.from_device(b, 1, "int8") end)
    assert.are.equal("gpu.Buffer(freed)", tostring(b))
    local again <close> = gpu.mem_alloc(64)
    assert.are.equal(64, #again)
  end)

  helpers.gpu_it("happens at the end of a <close> scope", function()
    local outer
    do
      local b <close> = gpu.mem_alloc(8)
      outer = b
    end
    assert.are.equal("gpu.Buffer(freed)", tostring(outer))
  end)

  if not helpers.has_gpu then
    it("needs a device: without one mem_alloc and to_device raise the no-driver gpu.Error", function()
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.mem_alloc(8) end)
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.to_device("abc") end)
      helpers.assert_error("bad argument #1 to 'memcpy_htod' (gpu.Buffer expected, got string)",
                           function() gpu.memcpy_htod("abc", "abc") end)
    end)
  end
end)

describe("IPC handles", function()
  local function hex(bytes)
    return (bytes:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
  end

  helpers.gpu_it("share memory with another process, both ways", function()
    local n = math.random(1000, 100000)
    local values = helpers.random_integers(n, -2 ^ 28, 2 ^ 28)
    local buf <close> = gpu.mem_alloc(4 * n, {ipc = true})
    gpu.memcpy_htod(buf, host.from_table(values, "int32"))
    local handle = buf:ipc_handle()
    assert.are.equal(64, #handle)
    -- the other process reads what this one wrote, and triples it in place with a kernel
    local out, ok = helpers.run_lua(([[
      local gpu = require "gpu"
      local shared = gpu.ipc_open("%s")
      local a = gpu.array_view(shared, 0, "int32", {%d})
      local sum = 0
      for _, v in ipairs(a:get():totable()) do sum = sum + v end
      a:imul(3)
      gpu.synchronize()
      print(#shared, sum)
      shared:free()
      shared:free()
      print(shared)
    ]]):format(hex(handle), n))
    assert.is_truthy(ok, out)
    local sum = 0
    for _, v in ipairs(values) do sum = sum + v end
    assert.are.equal(("%d\t%d\ngpu.Buffer(freed)\n"):format(4 * n, sum), out)
    local got = gpu.from_device(buf, n, "int32")
    for i = 1, n do assert.are.equal(3 * values[i], got[i]) end
  end)

  it("refuse what cannot be shared, and name a failed open (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local function try(f)
        local ok, e = pcall(f)
        print(ok and "ok" or (tostring(e):gsub("^[^\n]*:%d+: ", "")))
      end
      local b = gpu.mem_alloc(64, {ipc = true})
      local handle = b:ipc_handle()
      -- within one process the stand-in's handle opens the memory itself
      local o = gpu.ipc_open(handle)
      print(#handle, #o, o:ptr() == b:ptr())
      o:free(); o:free()
      print(o, b)
      try(function() local x = gpu.mem_alloc(4):ipc_handle() end)
      try(function() local x = b:offset(8):ipc_handle() end)
      try(function() local x = gpu.ipc_open(handle):ipc_handle() end)
      try(function() local x = gpu.ipc_open("abc") end)
      try(function() local x = gpu.ipc_open(string.rep("zz", 64)) end)
      try(function() local x = gpu.mem_alloc(4, {ipc = 1}) end)
      try(function() local x = gpu.mem_alloc(4, {icp = true}) end)
      try(function() local x = gpu.ipc_open(3) end)
      b:free()
      try(function() local x = b:ipc_handle() end)
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "64\t64\ttrue",
      "gpu.Buffer(freed)\t" .. out:match("\t(gpu%.Buffer%(0x%x+, 64 bytes%))"),
      "calling 'ipc_handle' on bad self (the pool's memory cannot be shared: allocate it with gpu.mem_alloc(n, {ipc = true}))",
      "calling 'ipc_handle' on bad self (a view: share the allocation it looks into)",
      "calling 'ipc_handle' on bad self (memory another process shared cannot be shared again)",
      "bad argument #1 to 'ipc_open' (an IPC handle is 64 bytes (or 128 hex digits), got 3)",
      "bad argument #1 to 'ipc_open' (an IPC handle in hex has only hex digits)",
      "bad argument #2 to 'mem_alloc' (option 'ipc' must be a boolean)",
      "bad argument #2 to 'mem_alloc' (unknown option 'icp')",
      "bad argument #1 to 'ipc_open' (an IPC handle is 64 bytes (or 128 hex digits), got 1)",
      "calling 'ipc_handle' on bad self (buffer has been freed)",
    }, "\n") .. "\n", out)
    out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local handle = gpu.mem_alloc(64, {ipc = true}):ipc_handle()
      local ok, e = pcall(gpu.ipc_open, handle)
      print(gpu.Error.is(e), e.name, e.call)
    ]], {FAKE_CUDA_IPC_FAIL = "1"})
    assert.is_truthy(ok, out)
    assert.are.equal("true\tCUDA_ERROR_FAKE\tcuIpcOpenMemHandle\n", out)
  end)
end)
