-- Devices, the driver, and the current context.
local helpers = require "helpers"
local gpu = helpers.gpu

describe("devices", function()
  helpers.gpu_it("gpu.Device(n) describes the device", function()
    local dev = gpu.Device(0)
    local name = dev:name()
    assert.are.equal("string", type(name))
    assert.is_true(#name > 0)
    local major, minor = dev:compute_capability()
    assert.are.equal("integer", math.type(major))
    assert.are.equal("integer", math.type(minor))
    assert.is_true(major >= 3)
    assert.are.equal(major, dev:attribute("COMPUTE_CAPABILITY_MAJOR"))
    assert.are.equal(minor, dev:attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"))
    local total = dev:total_memory()
    assert.is_true(total > 0)
    local sms = dev:attribute("MULTIPROCESSOR_COUNT")
    assert.is_true(sms > 0)
    local all = dev:attributes()
    assert.are.equal(sms, all.MULTIPROCESSOR_COUNT)
    assert.are.equal(1024, all.MAX_THREADS_PER_BLOCK)
    assert.are.equal(dev:attribute("WARP_SIZE"), all.WARP_SIZE)
    assert.is_truthy(dev:pci_bus_id():match("^%x+:%x+:%x+%.%x+$"), dev:pci_bus_id())
    assert.are.equal(0, dev:ordinal())
    assert.are.equal(("gpu.Device(0: %s)"):format(name), tostring(dev))
    assert.are.equal(dev, gpu.Device(0))
    assert.are.equal(gpu.get_device(), gpu.Device())
  end)

  helpers.gpu_it("rejects bad ordinals and attribute names, and stays usable", function()
    local n = gpu.device_count()
    local plural = n == 1 and "" or "s"
    helpers.assert_error(("bad argument #1 to 'Device' (device ordinal %d out of range (%d device%s))")
                         :format(n, n, plural), function() gpu.Device(n) end)
    helpers.assert_error(("bad argument #1 to 'Device' (device ordinal -1 out of range (%d device%s))")
                         :format(n, plural), function() gpu.Device(-1) end)
    helpers.assert_error("bad argument #1 to 'Device' (number expected, got table)",
                         function() gpu.Device({}) end)
    helpers.assert_error("bad argument #1 to 'Device' (number has no integer representation)",
                         function() gpu.Device(0.5) end)
    helpers.assert_error(("bad argument #1 to 'set_device' (device ordinal %d out of range (%d device%s))")
                         :format(n + 3, n, plural), function() gpu.set_device(n + 3) end)
    helpers.assert_error("bad argument #1 to 'set_device' (number expected, got no value)",
                         function() gpu.set_device() end)
    local dev = gpu.Device(0)
    helpers.assert_error("bad argument #1 to 'attribute' (unknown device attribute 'NO_SUCH_THING')",
                         function() dev:attribute("NO_SUCH_THING") end)
    helpers.assert_error("bad argument #1 to 'attribute' (string expected, got no value)",
                         function() dev:attribute() end)
    helpers.assert_error("bad argument #1 to 'name' (gpu.Device expected, got table)",
                         function() dev.name({}) end)
    assert.is_true(dev:attribute("WARP_SIZE") > 0)
  end)

  helpers.gpu_it("set_device/get_device choose where new work goes", function()
    gpu.set_device(0)
    assert.are.equal(0, gpu.get_device():ordinal())
    local b <close> = gpu.mem_alloc(16)
    assert.are.equal(16, #b)
  end)

  helpers.gpu_it("driver_version, synchronize and mem_get_info", function()
    local v = gpu.driver_version()
    assert.are.equal("integer", math.type(v))
    assert.is_true(v >= 11030)
    gpu.synchronize()
    local free, total = gpu.mem_get_info()
    assert.is_true(free > 0 and free <= total)
    assert.is_true(total <= gpu.Device(0):total_memory())
    local b <close> = gpu.mem_alloc(256 << 20)
    gpu.memset_d8(b, 0, 256 << 20)        -- touch it, so it is really allocated
    gpu.synchronize()
    local free2 = gpu.mem_get_info()
    assert.is_true(free2 <= free)
  end)

  helpers.gpu_it("CUDA_DEVICE chooses the device of a new process", function()
    local out, ok = helpers.run_lua([[
      local gpu = require "gpu"
      print(gpu.get_device():ordinal())
    ]], {CUDA_DEVICE = tostring(gpu.device_count() - 1)})
    assert(ok, out)
    assert.are.equal(tostring(gpu.device_count() - 1), out:match("%d+"))
    out = helpers.run_lua([[
      local gpu = require "gpu"
      print(select(2, pcall(gpu.mem_alloc, 4)))
    ]], {CUDA_DEVICE = "99"})
    assert.is_truthy(out:find("CUDA_DEVICE=99 is not a device ordinal", 1, true), out)
  end)
end)

describe("context limits", function()
  it("get_limit and set_limit check their arguments before the driver", function()
    helpers.assert_error("bad argument #1 to 'get_limit' (unknown context limit 'NO_SUCH')",
                         function() gpu.get_limit("NO_SUCH") end)
    helpers.assert_error("bad argument #1 to 'get_limit' (string expected, got no value)",
                         function() gpu.get_limit() end)
    helpers.assert_error("bad argument #1 to 'set_limit' (unknown context limit 'stack_size')",
                         function() gpu.set_limit("stack_size", 1024) end)
    helpers.assert_error("bad argument #2 to 'set_limit' (number expected, got no value)",
                         function() gpu.set_limit("STACK_SIZE") end)
    helpers.assert_error("bad argument #2 to 'set_limit' (a limit is 0 or more)",
                         function() gpu.set_limit("STACK_SIZE", -1) end)
    helpers.assert_error("bad argument #2 to 'set_limit' (number has no integer representation)",
                         function() gpu.set_limit("STACK_SIZE", 0.5) end)
  end)

  -- On the stand-in driver (tools/fakecuda.c remembers limits and rounds stacks to 16 bytes)
  -- so that CI checks what reaches the driver, and what the module answers.
  it("set_limit answers the value in effect, refuses during a capture, names a failed call", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      print(gpu.get_limit("STACK_SIZE"), gpu.get_limit("CU_LIMIT_MALLOC_HEAP_SIZE"))
      print(gpu.set_limit("STACK_SIZE", 1000), gpu.get_limit("STACK_SIZE"))
      print(gpu.set_limit("CU_LIMIT_PRINTF_FIFO_SIZE", 4 << 20), gpu.get_limit("PRINTF_FIFO_SIZE"))
      local s = gpu.Stream()
      s:begin_capture()
      print(pcall(gpu.set_limit, "STACK_SIZE", 4096))
      s:end_capture()
      print(gpu.get_limit("STACK_SIZE"), gpu.set_limit("STACK_SIZE", 4096))
    ]])
    assert(ok, out)
    assert.are.equal("1024\t8388608\n1008\t1008\n4194304\t4194304\n" ..
                     "false\tcannot set a context limit while a stream capture is open (in any " ..
                     "thread): end the capture first\n1008\t4096\n", out)
    out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ok, err = pcall(gpu.set_limit, "STACK_SIZE", 2048)
      print(ok, gpu.Error.is(err), err.call, err.name)
    ]], {FAKE_CUDA_LIMIT = "fail"})
    assert(ok, out)
    assert.are.equal("false\ttrue\tcuCtxSetLimit\tCUDA_ERROR_FAKE\n", out)
  end)

  helpers.gpu_it("set_limit changes a limit of the current device's context", function()
    local stack = gpu.get_limit("STACK_SIZE")
    assert.are.equal("integer", math.type(stack))
    assert.is_true(stack > 0)
    assert.are.equal(stack, gpu.get_limit("CU_LIMIT_STACK_SIZE"))
    assert.is_true(gpu.get_limit("MALLOC_HEAP_SIZE") > 0)
    local set = gpu.set_limit("STACK_SIZE", stack + 1000)
    assert.is_true(set >= stack + 1000 and set < stack + 1000 + 256, set)
    assert.are.equal(set, gpu.get_limit("STACK_SIZE"))
    assert.are.equal(stack, gpu.set_limit("STACK_SIZE", stack))
    local s <close> = gpu.Stream()
    s:begin_capture()
    helpers.assert_error("cannot set a context limit while a stream capture is open (in any " ..
                         "thread): end the capture first",
                         function() gpu.set_limit("STACK_SIZE", stack + 16) end)
    local graph <close> = s:end_capture()
    assert.are.equal(stack, gpu.get_limit("STACK_SIZE"))
  end)
end)

describe("devices without a driver", function()
  if not helpers.has_gpu then
    it("Device() and synchronize() raise the no-driver gpu.Error; device_count() is 0", function()
      assert.are.equal(0, gpu.device_count())
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.Device(0) end)
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.synchronize() end)
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.mem_get_info() end)
      helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit", function() gpu.set_device(0) end)
      assert.are.equal(0, gpu.device_count())
    end)
  end
end)

describe("peer access", function()
  helpers.multi_gpu_it("copies between devices and lets kernels read a peer's memory", function()
    local n = math.random(1000, 100000)
    local values = helpers.random_integers(n, -2 ^ 30, 2 ^ 30)
    local ok, err = pcall(function()
      gpu.set_device(0)
      local twice = gpu.SourceModule([[
        __global__ void twice(const int *src, int *dst, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) dst[i] = 2 * src[i];
        }
      ]]):get_function("twice")
      local on0 = gpu.to_device(gpu.host.from_table(values, "int32"))
      gpu.set_device(1)
      local on1 = gpu.mem_alloc(4 * n)
      gpu.memcpy_peer(on1, on0)
      assert.are.same(values, gpu.from_device(on1, n, "int32"):totable())
      gpu.set_device(0)
      local back = gpu.mem_alloc(4 * n)
      local s = gpu.Stream()
      gpu.memcpy_peer_async(back, on1, 4 * n, s)
      s:synchronize()
      assert.are.same(values, gpu.from_device(back, n, "int32"):totable())
      local launch = {block = 256, grid = (n + 255) // 256}
      local refused = "bad argument #1 to 'twice' (buffer is on device 1, the kernel on device 0)"
      helpers.assert_error(refused, function() twice(on1, back, n, launch) end)
      if gpu.Device(0):can_access_peer(1) then
        gpu.enable_peer_access(1)
        gpu.enable_peer_access(gpu.Device(1))          -- again: nothing changes
        twice(on1, back, n, launch)                     -- reads device 1's memory directly
        gpu.synchronize()
        local got = gpu.from_device(back, n, "int32")
        for i = 1, n do assert.are.equal(2 * values[i], got[i]) end
        gpu.disable_peer_access(1)
        gpu.disable_peer_access(1)
        helpers.assert_error(refused, function() twice(on1, back, n, launch) end)
      end
    end)
    gpu.set_device(0)
    assert(ok, err)
  end)

  it("refuses a device's own memory and bad devices (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local function try(f)
        local ok, e = pcall(f)
        print(ok and "ok" or (tostring(e):gsub("^[^\n]*:%d+: ", "")))
      end
      try(function() gpu.enable_peer_access(0) end)
      try(function() gpu.disable_peer_access(gpu.Device(0)) end)
      try(function() gpu.enable_peer_access(1) end)
      print(gpu.Device(0):can_access_peer(0))
      local a, b = gpu.to_device("abcd"), gpu.mem_alloc(4)
      gpu.memcpy_peer(b, a)
      print(gpu.from_device(b, 4, "uint8"))
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "bad argument #1 to 'enable_peer_access' (a device's own memory needs no peer access)",
      "bad argument #1 to 'disable_peer_access' (a device's own memory needs no peer access)",
      "bad argument #1 to 'enable_peer_access' (device ordinal 1 out of range (1 device))",
      "false",
      "[ 97  98  99 100]",
    }, "\n") .. "\n", out)
  end)
end)
