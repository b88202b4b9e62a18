-- Streams and events.
local helpers = require "helpers"
local gpu = helpers.gpu

-- A kernel that keeps the GPU busy for about `cycles` clock ticks.
local spin_source = [[
__global__ void spin(long long cycles)
{
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
]]

describe("gpu.Stream and gpu.Event options", function()
  it("are checked before needing a device", function()
    helpers.assert_error("bad argument #1 to 'Stream' (unknown option 'nonblocking')",
                         function() gpu.Stream({nonblocking = true}) end)
    helpers.assert_error("bad argument #1 to 'Stream' (table expected, got number)",
                         function() gpu.Stream(5) end)
    helpers.assert_error("bad argument #1 to 'Event' (unknown option 'timng')",
                         function() gpu.Event({timng = true}) end)
    helpers.assert_error("bad argument #1 to 'Event' (option keys must be strings, got number)",
                         function() gpu.Event({true}) end)
    helpers.assert_error("bad argument #1 to 'Stream' (option 'priority' must be an integer, got string)",
                         function() gpu.Stream({priority = "high"}) end)
    helpers.assert_error("bad argument #1 to 'Stream' (option 'priority' must be an integer, got number)",
                         function() gpu.Stream({priority = 0.5}) end)
  end)
end)

describe("stream priorities", function()
  helpers.gpu_it("are clamped into the device's range, and a greater one's work goes first", function()
    local least, greatest = gpu.stream_priority_range()
    assert.is_true(math.type(least) == "integer" and greatest <= least, least .. " " .. greatest)
    assert.are.equal(0, gpu.Stream():priority())
    assert.are.equal(greatest, gpu.Stream({priority = greatest}):priority())
    assert.are.equal(least, gpu.Stream({priority = least, non_blocking = true}):priority())
    assert.are.equal(greatest, gpu.Stream({priority = greatest - 100}):priority())   -- clamped
    assert.are.equal(least, gpu.Stream({priority = least + 100}):priority())
    if least == greatest then return pending("the device has one stream priority") end
    -- twenty waves of 1 ms blocks on the least priority, then one short kernel on the
    -- greatest: its block goes at the next free slot, not after every queued block (with
    -- equal priorities it ends about when the long kernel does)
    local spin = gpu.SourceModule(spin_source).spin
    local low = gpu.Stream({priority = least, non_blocking = true})
    local high = gpu.Stream({priority = greatest, non_blocking = true})
    local slots = spin:max_active_blocks_per_multiprocessor(1) *
                  gpu.get_device():attribute("MULTIPROCESSOR_COUNT")
    local start, high_done, low_done = gpu.Event(), gpu.Event(), gpu.Event()
    start:record(low)
    spin(gpu.int64(2000000), {block = 1, grid = 20 * slots, stream = low})
    low_done:record(low)
    spin(gpu.int64(1000), {block = 1, stream = high})
    high_done:record(high)
    low:synchronize()
    high:synchronize()
    local t_high, t_low = high_done:time_since(start), low_done:time_since(start)
    assert.is_true(t_high < t_low / 4, ("the short kernel ended at %.2f ms, the long one at %.2f"):format(t_high, t_low))
    local s = gpu.Stream({priority = greatest})
    s:free()
    helpers.assert_error("calling 'priority' on bad self (stream has been freed)", function() s:priority() end)
  end)
end)

describe("streams", function()
  helpers.gpu_it("order work, report is_done, and synchronize", function()
    local spin = gpu.SourceModule(spin_source).spin
    for _, opts in ipairs{{}, {non_blocking = true}} do
      local s = gpu.Stream(opts)
      assert.is_true(s:is_done())
      spin(gpu.int64(200000000), {block = 1, stream = s})    -- ~0.1 s
      assert.is_false(s:is_done())
      s:synchronize()
      assert.is_true(s:is_done())
      assert.is_truthy(tostring(s):match("^gpu%.Stream%(0x%x+%)$"), tostring(s))
      s:free()
    end
  end)

  helpers.gpu_it("wait_for_event orders one stream after another", function()
    local spin = gpu.SourceModule(spin_source).spin
    local a, b = gpu.Stream({non_blocking = true}), gpu.Stream({non_blocking = true})
    local n = 1 << 16
    local src = gpu.host.from_table(helpers.random_integers(n, -1000, 1000), "int32")
    local buf <close> = gpu.mem_alloc(src.nbytes)
    gpu.memset_d32(buf, 0, n)
    gpu.synchronize()
    local pinned = gpu.host.pagelocked_empty(n, "int32")
    for i = 1, n do pinned[i] = src[i] end
    local done = gpu.Event()
    spin(gpu.int64(100000000), {block = 1, stream = a})
    gpu.memcpy_htod_async(buf, pinned, a)
    done:record(a)
    b:wait_for_event(done)
    local back = gpu.host.pagelocked_zeros(n, "int32")
    gpu.memcpy_dtoh_async(back, buf, b)
    b:synchronize()
    assert.are.equal(src:bytes(), back:bytes())
    helpers.assert_error("bad argument #1 to 'wait_for_event' (gpu.Event expected, got no value)",
                         function() b:wait_for_event() end)
  end)

  helpers.gpu_it("free idempotently; use after free is an error everywhere", function()
    local s = gpu.Stream()
    s:free()
    s:free()
    s:close()
    assert.are.equal("gpu.Stream(freed)", tostring(s))
    helpers.assert_error("calling 'synchronize' on bad self (stream has been freed)", function() s:synchronize() end)
    helpers.assert_error("calling 'is_done' on bad self (stream has been freed)", function() s:is_done() end)
    helpers.assert_error("calling 'wait_for_event' on bad self (stream has been freed)",
                         function() s:wait_for_event(gpu.Event()) end)
    local b <close> = gpu.mem_alloc(16)
    local pinned = gpu.host.pagelocked_zeros(4, "int32")
    helpers.assert_error("bad argument #3 to 'memcpy_htod_async' (stream has been freed)",
                         function() gpu.memcpy_htod_async(b, pinned, s) end)
    helpers.assert_error("bad argument #1 to 'record' (stream has been freed)",
                         function() gpu.Event():record(s) end)
    do
      local t <close> = gpu.Stream()
      s = t
    end
    assert.are.equal("gpu.Stream(freed)", tostring(s))
    local fresh = gpu.Stream()
    fresh:synchronize()
  end)
end)

describe("events", function()
  helpers.gpu_it("time the work between them", function()
    local spin = gpu.SourceModule(spin_source).spin
    local s = gpu.Stream()
    local start, stop = gpu.Event({timing = true}), gpu.Event()
    assert.are.equal(start, start:record(s))
    spin(gpu.int64(50000000), {block = 1, stream = s})
    stop:record(s)
    assert.is_false(stop:query())
    assert.are.equal(stop, stop:synchronize())
    assert.is_true(stop:query())
    local ms = stop:time_since(start)
    assert.are.equal("float", math.type(ms))
    assert.is_true(ms > 0 and ms < 10000, tostring(ms))
    assert.are.equal(ms, start:time_till(stop))
    local e = gpu.Event()
    e:record()                                     -- the default stream
    e:synchronize()
    assert.is_true(e:query())
  end)

  helpers.gpu_it("raise gpu.Errors for events without timing or never recorded", function()
    local a, b = gpu.Event({timing = false}), gpu.Event({timing = false})
    a:record()
    b:record()
    b:synchronize()
    helpers.assert_gpu_error("CUDA_ERROR_INVALID_HANDLE", "cuEventElapsedTime", function() b:time_since(a) end)
    local c, d = gpu.Event(), gpu.Event()
    helpers.assert_gpu_error("CUDA_ERROR_INVALID_HANDLE", "cuEventElapsedTime", function() d:time_since(c) end)
    c:record()
    d:record()
    d:synchronize()
    assert.is_true(d:time_since(c) >= 0)
  end)

  helpers.gpu_it("free idempotently; use after free is an error", function()
    local e, other = gpu.Event(), gpu.Event()
    other:record()
    e:free()
    e:free()
    e:close()
    assert.are.equal("gpu.Event(freed)", tostring(e))
    helpers.assert_error("calling 'record' on bad self (event has been freed)", function() e:record() end)
    helpers.assert_error("calling 'query' on bad self (event has been freed)", function() e:query() end)
    helpers.assert_error("calling 'synchronize' on bad self (event has been freed)", function() e:synchronize() end)
    helpers.assert_error("bad argument #1 to 'time_since' (event has been freed)", function() other:time_since(e) end)
    helpers.assert_error("bad argument #1 to 'time_till' (event has been freed)", function() other:time_till(e) end)
    helpers.assert_error("bad argument #1 to 'wait_for_event' (event has been freed)",
                         function() gpu.Stream():wait_for_event(e) end)
    helpers.assert_error("bad argument #1 to 'time_since' (gpu.Event expected, got number)",
                         function() other:time_since(3) end)
    other:synchronize()
    assert.is_true(other:query())
  end)
end)
