-- Device memory comes from a stream-ordered pool; the collector knows about device bytes.
local helpers = require "helpers"
local gpu = helpers.gpu

-- Device bytes in use once earlier garbage is collected and every free queued has run.
local function settled_use()
  collectgarbage()
  collectgarbage()
  gpu.synchronize()
  return (gpu.mem_pool_info())
end

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

  -- In generational mode (the standalone lua's default) `2 * a` is still referenced while
  -- `3 * b` and the sum allocate, so it lives through two collector steps and grows old:
  -- only a full collection frees it.  With steps, 40 rounds left 5 GiB of them in the pool.
  for _, mode in ipairs{"generational", "incremental"} do
    helpers.gpu_it("collects expression temporaries as it goes, in " .. mode .. " mode", function()
      local n = 16 << 20                   -- 64 MiB of float32 an array
      local av, bv = helpers.random_floats(1000), helpers.random_floats(1000)
      local a = gpu.gpuarray.empty(n, "float32")
      local b = gpu.gpuarray.empty(n, "float32")
      a:fill(0.5); b:fill(-1.25)
      a:slice(1, 1000):set(gpu.host.from_table(av, "float32"))
      b:slice(n - 999, n):set(gpu.host.from_table(bv, "float32"))
      local previous = collectgarbage(mode)
      collectgarbage()
      gpu.synchronize()
      local used0, most = gpu.mem_pool_info(), 0
      local c
      for _ = 1, 40 do
        c = 2 * a + 3 * b
        local used = gpu.mem_pool_info()
        if used > most then most = used end
      end
      collectgarbage(previous)
      -- live: a, b, c and the two temporaries; the collector lets garbage grow to about as
      -- much as is live before it runs, so a dozen arrays at most
      assert.is_true(most - used0 <= 12 * 4 * n, ("%d MiB over the start"):format((most - used0) >> 20))
      local head, tail = c:slice(1, 1000):get(), c:slice(n - 999, n):get()
      local f32 = helpers.f32
      for i = 1, 1000 do
        local x, y = f32(av[i]), f32(bv[i])
        assert.is_true(math.abs(head[i] - (2 * x - 3.75)) <= 1e-6 * (2 * math.abs(x) + 3.75))
        assert.is_true(math.abs(tail[i] - (1 + 3 * y)) <= 1e-6 * (1 + 3 * math.abs(y)))
      end
    end)
  end

  helpers.gpu_it("leaves a stopped collector stopped", function()
    collectgarbage()
    gpu.synchronize()
    local used0 = gpu.mem_pool_info()
    local n = 64 << 20
    collectgarbage("stop")
    for _ = 1, 20 do local _ = gpu.mem_alloc(n) end      -- 1.25 GiB of garbage
    gpu.synchronize()
    local used1 = gpu.mem_pool_info()
    collectgarbage("restart")
    assert.is_true(used1 - used0 >= 20 * n, ("%d MiB held"):format((used1 - used0) >> 20))
    collectgarbage()
    gpu.synchronize()
    assert.are.equal(used0, (gpu.mem_pool_info()))
  end)

  -- The Lua layer's temporaries (copies of views, a scan's state) are freed this way, so a
  -- non-blocking stream's kernels never see their memory reused under them.
  helpers.gpu_it("frees a buffer in a stream's order (core.free_after)", function()
    local core = require "gpu.core"
    local s = gpu.Stream({non_blocking = true})
    local used0 = settled_use()
    local n = 64 << 20
    local b = gpu.mem_alloc(n)
    gpu.memset_d8_async(b, 7, n, s)
    core.free_after(b, s)
    helpers.assert_error("bad argument #1 to 'len' (buffer has been freed)", function() return #b end)
    core.free_after(b, s)                  -- idempotent, like :free()
    s:synchronize()
    assert.are.equal(used0, (gpu.mem_pool_info()))
    local c = gpu.mem_alloc(16)
    core.free_after(c)                     -- no stream: the legacy stream's order, as :free()
    helpers.assert_error("bad argument #1 to 'len' (buffer has been freed)", function() return #c end)
    -- (Lua names the function by the first loaded table it finds it in: gpu or gpu.core)
    local err = helpers.error_of(core.free_after, gpu.mem_alloc(16), 5)
    assert.matches("^bad argument #2 to 'gpu[%.%a]*%.free_after' %(gpu%.Stream or nil expected, got number%)$", err)
    err = helpers.error_of(core.free_after)
    assert.matches("^bad argument #1 to 'gpu[%.%a]*%.free_after' %(gpu%.Buffer or gpu%.GPUArray expected, got no value%)$", err)
    assert.are.equal(core.free_after, gpu.free_after)
    -- free_all_after: each argument after the stream, nil and false skipped
    local d, e = gpu.mem_alloc(16), gpu.zeros({4}, "float32")
    core.free_all_after(s, d, nil, false, e)
    helpers.assert_error("bad argument #1 to 'len' (buffer has been freed)", function() return #d end)
    assert.is_true(e.freed)
    core.free_all_after(nil, d, e)         -- idempotent too
    err = helpers.error_of(core.free_all_after, s, gpu.mem_alloc(16), 5)
    assert.matches("^bad argument #3 to 'gpu[%.%a]*%.free_all_after' %(gpu%.Buffer or gpu%.GPUArray expected, "
                   .. "got number%)$", err)
    err = helpers.error_of(core.free_all_after, 5)
    assert.matches("^bad argument #1 to 'gpu[%.%a]*%.free_all_after' %(gpu%.Stream or nil expected, got number%)$", err)
    s:synchronize()
  end)

  helpers.gpu_it("frees an array, or all the memory a view looks into, in a stream's order", function()
    local core = require "gpu.core"
    local s = gpu.Stream({non_blocking = true})
    local used0 = settled_use()
    local a = gpu.gpuarray.empty(16 << 20, "float32")
    a:fill(1.5, {stream = s})
    core.free_after(a, s)
    assert.is_true(a.freed)
    core.free_after(a, s)                  -- idempotent, like :free()
    s:synchronize()
    assert.are.equal(used0, (gpu.mem_pool_info()))
    local owner = gpu.gpuarray.empty({4, 4}, "int32")
    local view = owner:reshape(16):slice(3, 8)
    local held = owner.gpudata
    core.free_after(view)                  -- as core.free_after(view.gpudata) would
    assert.is_true(owner.freed)
    assert.are.equal("gpu.Buffer(freed)", tostring(held))
    assert.are.equal(used0, settled_use())
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

-- Streams and graphs hold device memory the driver allocates (about 0.5 MiB a stream on an
-- H100), which the collector is told of as if allocated.  On the stand-in driver, with the
-- collector's own cycles pushed out of the way, only that can collect them.
describe("streams and graphs left to the collector", function()
  it("are collected as their device memory adds up", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      collectgarbage("incremental", 1000, 100)   -- Lua's own cycles wait for a tenfold heap
      collectgarbage()
      local alive = setmetatable({}, {__mode = "k"})
      local function count() local n = 0; for _ in pairs(alive) do n = n + 1 end; return n end
      for _ = 1, 256 do alive[gpu.Stream()] = true end
      print(count())
      local s = gpu.Stream()
      for _ = 1, 1024 do alive[gpu.capture(function() end, s)] = true end
      print(count())
    ]])
    assert(ok, out)
    local streams, graphs = out:match("^(%d+)\n(%d+)\n$")
    assert.is_truthy(streams, out)
    -- a full collection each 32 MiB: 64 streams of 512 KiB, 256 graphs of 128 KiB
    assert.is_true(tonumber(streams) <= 65, out)
    assert.is_true(tonumber(graphs) <= 65 + 257, out)
  end)
end)

-- The driver grows a context's stack for any kernel that needs more local memory, for every
-- thread the device can hold, and keeps it (1.8 GiB on an H100 for 8 KiB a thread).
describe("the stack a deep kernel makes the driver grow", function()
  helpers.gpu_it("stays held until set_limit('STACK_SIZE', n) gives it back", function()
    local function free_now()
      collectgarbage()
      collectgarbage()
      gpu.synchronize()
      gpu.free_pool()
      return (gpu.mem_get_info())
    end
    local dev = gpu.get_device()
    local threads = dev:attribute("MULTIPROCESSOR_COUNT") *
                    dev:attribute("MAX_THREADS_PER_MULTIPROCESSOR")
    local deep = gpu.SourceModule([[
      __global__ void deep(long long *out, int k) {
        volatile long long frame[1024];      /* 8 KiB of local memory a thread */
        for (int i = 0; i < 1024; i++) frame[i] = (long long)i * k;
        out[threadIdx.x] = frame[(threadIdx.x * 7 + k) % 1024];
      }]]):get_function("deep")
    assert.is_true(deep.local_size_bytes >= 8192, deep.local_size_bytes)
    local out <close> = gpu.gpuarray.empty(256, "int64")
    local k = math.random(2, 1000)
    assert.are.equal(1024, gpu.set_limit("STACK_SIZE", 1024))   -- what earlier specs grew
    local before = free_now()
    deep(out, k, {block = 256, grid = 1})
    local got = out:get():totable()
    for t = 0, 255 do assert.are.equal((t * 7 + k) % 1024 * k, got[t + 1]) end
    assert.is_true(gpu.get_limit("STACK_SIZE") >= 8192, gpu.get_limit("STACK_SIZE"))
    local grown = free_now()
    local stack_bytes = threads * (8192 - 1024)
    assert.is_true(before - grown >= stack_bytes // 2,
                   ("free %d MiB -> %d MiB"):format(before >> 20, grown >> 20))
    assert.are.equal(1024, gpu.set_limit("STACK_SIZE", 1024))
    local after = free_now()
    assert.is_true(after - grown >= stack_bytes // 2,
                   ("free %d MiB -> %d MiB after set_limit"):format(grown >> 20, after >> 20))
  end)
end)
