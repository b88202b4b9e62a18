-- CUDA graphs by stream capture.
local helpers = require "helpers"
local gpu = helpers.gpu

local source = [[
__global__ void bump(int *counts, int n, int by) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counts[i] += by;
}
]]

describe("graphs", function()
  helpers.gpu_it("replay what was captured, as often as launched", function()
    local bump = gpu.SourceModule(source):get_function("bump")
    local n = math.random(100, 5000)
    local start = helpers.random_integers(n, -1000, 1000)
    local counts <close> = gpu.to_device(gpu.host.from_table(start, "int32"))
    local steps = {}
    local graph <close> = gpu.capture(function(s)
      for k = 1, 100 do
        steps[k] = math.random(-5, 5)
        bump(counts, n, steps[k], {block = 256, grid = (n + 255) // 256, stream = s})
      end
    end)
    -- nothing ran during the capture
    assert.are.same(start, gpu.from_device(counts, n, "int32"):totable())
    local total = 0
    for _, v in ipairs(steps) do total = total + v end
    graph:launch()
    graph:launch()
    gpu.synchronize()
    local got = gpu.from_device(counts, n, "int32")
    for i = 1, n do assert.are.equal(start[i] + 2 * total, got[i]) end
  end)

  helpers.gpu_it("refuse to launch after a buffer they use was freed", function()
    local bump = gpu.SourceModule(source):get_function("bump")
    local counts = gpu.mem_alloc(4 * 32)
    local s <close> = gpu.Stream()
    s:begin_capture()
    bump(counts, 32, 1, {block = 32, stream = s})
    local graph <close> = s:end_capture()
    graph:launch(s)
    s:synchronize()
    counts:free()
    helpers.assert_error("graph uses a buffer that has been freed", graph.launch, graph, s)
  end)

  helpers.gpu_it("refuse to launch after a page-locked host array a copy uses was freed", function()
    -- a replayed copy would write into (or read from) the freed page-locked memory
    local n = 256
    local values = helpers.random_floats(n, 8)
    local h = gpu.host.from_table(values, "float32")
    local pinned = gpu.host.pagelocked_zeros(n, "float32")
    local b <close> = gpu.to_device(h)
    local s <close> = gpu.Stream()
    s:begin_capture()
    gpu.memcpy_dtoh_async(pinned, b, s)
    local graph <close> = s:end_capture()
    graph:launch(s)
    s:synchronize()
    for i = 1, n do assert.are.equal(h[i], pinned[i]) end
    pinned:free()
    helpers.assert_error("graph uses a host array that has been freed", graph.launch, graph, s)
  end)

  helpers.gpu_it("capture async copies and memsets too", function()
    local n = 1024
    local host = gpu.host.pagelocked_empty(n, "int32")
    for i = 1, n do host[i] = math.random(-1e6, 1e6) end
    local d <close> = gpu.mem_alloc(4 * n)
    local out = gpu.host.pagelocked_zeros(n, "int32")
    local s <close> = gpu.Stream()
    s:begin_capture()
    gpu.memset_d32_async(d, 0, n, s)
    gpu.memcpy_htod_async(d, host, s)
    gpu.memcpy_dtoh_async(out, d, s)
    local graph <close> = s:end_capture()
    graph:launch(s)
    s:synchronize()
    assert.are.same(host:totable(), out:totable())
  end)

  helpers.gpu_it("report errors inside the captured function and leave the stream usable", function()
    local s <close> = gpu.Stream()
    helpers.assert_error("boom", gpu.capture, function() error("boom", 0) end, s)
    local bump = gpu.SourceModule(source):get_function("bump")
    local counts <close> = gpu.to_device(gpu.host.zeros(8, "int32"))
    bump(counts, 8, 3, {block = 8, stream = s})
    s:synchronize()
    assert.are.same({3, 3, 3, 3, 3, 3, 3, 3}, gpu.from_device(counts, 8, "int32"):totable())
    helpers.assert_error("stream is not capturing (call begin_capture first)", s.end_capture, s)
  end)

  helpers.gpu_it("free the stream gpu.capture made when the capture ends, even after an error", function()
    local made
    local graph <close> = gpu.capture(function(s) made = s end)
    assert.are.equal("gpu.Stream(freed)", tostring(made))
    helpers.assert_error("boom", gpu.capture, function(s) made = s; error("boom", 0) end)
    assert.are.equal("gpu.Stream(freed)", tostring(made))
    local given <close> = gpu.Stream()
    local again <close> = gpu.capture(function() end, given)
    assert.are_not.equal("gpu.Stream(freed)", tostring(given))   -- the caller's stays open
    given:synchronize()
  end)

  helpers.gpu_it("reject In/Out handlers, which copy synchronously", function()
    local bump = gpu.SourceModule(source):get_function("bump")
    local h = gpu.host.zeros(8, "int32")
    local s <close> = gpu.Stream()
    s:begin_capture()
    helpers.assert_error("In/Out/InOut arguments cannot be captured into a graph (they copy "
                         .. "synchronously): use device buffers",
                         bump, gpu.InOut(h), 8, 1, {block = 8, stream = s})
    s:end_capture():free()
  end)

  -- The collector runs finalizers in the middle of captured code; a free reaching the driver
  -- there would invalidate the capture (frees synchronize or join the legacy stream).
  helpers.gpu_it("hold back what is freed during a capture until it ends", function()
    local bump = gpu.SourceModule(source):get_function("bump")
    local n = math.random(100, 1000)
    local start = helpers.random_integers(n, -1000, 1000)
    local counts <close> = gpu.to_device(gpu.host.from_table(start, "int32"))
    collectgarbage()                -- earlier garbage, freed now rather than held back below
    gpu.synchronize()
    local used0 = gpu.mem_pool_info()
    local freed_explicitly = gpu.mem_alloc(1 << 20)
    do     -- garbage of every kind whose release calls the driver
      local _ = gpu.mem_alloc(1 << 20), gpu.to_gpu(gpu.host.from_table(start, "int32")),
                gpu.host.pagelocked_empty(64, "int32"),
                gpu.SourceModule(source .. "// " .. math.random()), gpu.Stream(), gpu.Event(),
                gpu.capture(function(s) bump(counts, n, 1, {block = 256, grid = 1, stream = s}) end)
    end
    local by = math.random(-9, 9)
    local graph <close> = gpu.capture(function(s)
      collectgarbage()
      freed_explicitly:free()
      bump(counts, n, by, {block = 256, grid = (n + 255) // 256, stream = s})
    end)
    graph:launch()
    gpu.synchronize()
    local got = gpu.from_device(counts, n, "int32")
    for i = 1, n do assert.are.equal(start[i] + by, got[i]) end
    assert.are.equal(used0, (gpu.mem_pool_info()))     -- held back, then freed at the end
    helpers.assert_error("bad argument #1 to 'bump' (buffer has been freed)",
                         bump, freed_explicitly, n, 1, {block = 256})
  end)

  helpers.gpu_it("release what they held back when an unfinished capture is collected", function()
    collectgarbage()
    gpu.synchronize()
    local used0 = gpu.mem_pool_info()
    local buffer = gpu.mem_alloc(1 << 20)
    local s = gpu.Stream()
    s:begin_capture()
    buffer = nil
    collectgarbage()                -- the buffer's finalizer runs during the capture
    s = nil
    collectgarbage()                -- the stream's finalizer abandons the capture
    gpu.synchronize()
    assert.are.equal(used0, (gpu.mem_pool_info()))
    assert.is_nil(buffer or s)
  end)

  -- Synchronizing the context while any thread captures is invalid (the 580 driver has
  -- crashed in cuCtxSynchronize for it): refused before the driver sees it.
  helpers.gpu_it("refuse to synchronize the device during a capture, which stays valid", function()
    local bump = gpu.SourceModule(source):get_function("bump")
    local n = math.random(1, 256)
    local by = math.random(1, 100)
    local counts <close> = gpu.to_device(gpu.host.zeros(n, "int32"))
    local message = "cannot synchronize the device while a stream capture is open (in any " ..
                    "thread): end the capture first, or synchronize a stream"
    local graph <close> = gpu.capture(function(s)
      helpers.assert_error(message, gpu.synchronize)
      helpers.assert_error(message, gpu.free_pool)
      bump(counts, n, by, {block = 256, stream = s})
    end)
    graph:launch()
    gpu.synchronize()
    local got = gpu.from_device(counts, n, "int32")
    for i = 1, n do assert.are.equal(by, got[i]) end
  end)

  helpers.gpu_it("are freed idempotently and unusable afterwards", function()
    local graph = gpu.capture(function() end)
    graph:free()
    graph:free()
    helpers.assert_error("calling 'launch' on bad self (graph has been freed)",
                         function() graph:launch() end)
    assert.are.equal("gpu.Graph(freed)", tostring(graph))
  end)
end)
