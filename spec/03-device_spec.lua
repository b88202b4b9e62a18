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
