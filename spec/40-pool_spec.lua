-- Device memory comes from a stream-ordered pool; the collector knows about device bytes.
local helpers = require "helpers"
local gpu = helpers.gpu

describe("the memory pool", function()
  helpers.gpu_it("reports bytes in use and held, and releases what it holds", function()
    -- garbage of earlier specs would be finalized by the allocation's collector step below,
    -- lowering the bytes in use between the two readings
    collectgarbage()
    collectgarbage()
    gpu.free_pool()
    local used0, held0 = gpu.mem_pool_info()
    local n = 64 << 20
    local b = gpu.mem_alloc(n)
    gpu.synchronize()                      -- allocations are stream-ordered too
    local used1, held1 = gpu.mem_pool_info()
    assert.is_true(used1 >= used0 + n)
    assert.is_true(held1 >= used1)
    b:free()
    gpu.synchronize()                      -- frees are stream-ordered
    local used2, held2 = gpu.mem_pool_info()
    assert.are.equal(used0, used2)
    assert.is_true(held2 >= n)             -- cached for reuse, not returned
    gpu.free_pool()
    local _, held3 = gpu.mem_pool_info()
    assert.is_true(held3 < held2)          -- other live arrays may keep some chunks held
  end)

  helpers.gpu_it("gives memory back for reuse: data round-trips through recycled blocks", function()
    for _ = 1, 20 do
      local n = math.random(1, 4096)
      local host = gpu.host.from_table(helpers.random_integers(n, -2^31, 2^31 - 1), "int32")
      local b <close> = gpu.mem_alloc(host.nbytes)
      gpu.memcpy_htod(b, host)
      local back = gpu.from_device(b, n, "int32")
      assert.are.same(host:totable(), back:totable())
    end
  end)

  helpers.gpu_it("survives 10,000 dropped 64 MiB buffers: the collector sees device bytes", function()
    local free0 = gpu.mem_get_info()
    for i = 1, 10000 do
      local b = gpu.mem_alloc(64 << 20)    -- never freed explicitly
      if i % 2500 == 0 then gpu.memset_d8(b, i % 256, 16) end
    end
    collectgarbage()
    gpu.synchronize()
    gpu.free_pool()
    local free1 = gpu.mem_get_info()
    assert.is_true(free1 >= free0 - (256 << 20), ("free memory %d -> %d"):format(free0, free1))
  end)

  helpers.gpu_it("collects and retries when the device is full, then raises a clear error", function()
    local free = gpu.mem_get_info()
    local keep = {}
    -- fill most of the device with buffers that are garbage as soon as they are made
    for _ = 1, 4 do keep[#keep + 1] = nil; local _ = gpu.mem_alloc(free // 5) end
    local b = gpu.mem_alloc(free // 2)     -- needs the garbage collected
    b:free()
    local err = helpers.assert_gpu_error("CUDA_ERROR_OUT_OF_MEMORY", nil, gpu.mem_alloc, 1 << 50)
    assert.is_truthy(tostring(err):find("out of memory", 1, true))
    local again <close> = gpu.mem_alloc(1 << 20)   -- the state stays usable
    assert.are.equal(1 << 20, #again)
  end)
end)
