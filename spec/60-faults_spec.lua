-- Faults: sticky CUDA errors, running out of device memory, and closing a state (or the
-- process) with everything still alive.  Each case runs in a child process (helpers.run_lua):
-- a sticky error ruins the primary context for the whole process.  Tagged #faults, so the
-- sanitizer run (make sanitize) can leave them out: an illegal address is the point here.

local helpers = require "helpers"
local gpu_it = helpers.gpu_it

-- Runs code in a child; asserts it exited cleanly (no crash, no abort) and returns its output.
local function child(code, expect_ok)
  local out, ok = helpers.run_lua("local gpu = require 'gpu'\n" .. code)
  if expect_ok ~= false then assert.is_true(ok, "child process failed:\n" .. out) end
  assert.is_nil(out:find("Segmentation fault", 1, true), out)
  assert.is_nil(out:find("Aborted", 1, true), out)
  return out
end

describe("faults", function()
  gpu_it("an illegal address is a gpu.Error at the next synchronizing call #faults", function()
    local out = child([[
      local mod = gpu.SourceModule("__global__ void oob(float *a) { ((volatile float *)16)[0] = a[0]; }")
      local buf = gpu.mem_alloc(64)
      mod.oob(buf, {block = {1}, grid = {1}})
      local ok, err = pcall(gpu.synchronize)
      print("sync", ok, gpu.Error.is(err) and err.name, gpu.Error.is(err) and err.call)
      -- the context is unusable now: every call fails cleanly, none crashes
      local later = {
        function() return gpu.synchronize() end,
        function() return gpu.mem_alloc(16) end,
        function() return gpu.memcpy_htod(buf, ("\0"):rep(64)) end,
        function() return gpu.from_device(buf, 4, "float32") end,
        function() return gpu.Stream():synchronize() end,
        function() return mod.oob(buf, {block = {1}, grid = {1}}) end,
      }
      for i, f in ipairs(later) do
        local ok2, err2 = pcall(f)
        print("later", i, ok2 or gpu.Error.is(err2) and "gpu.Error" or tostring(err2))
      end
      buf:free(); buf:free()
      print("done")
    ]])
    assert.matches("sync\tfalse\tCUDA_ERROR_ILLEGAL_ADDRESS\tcuCtxSynchronize", out, 1, true)
    assert.matches("later\t1\tgpu.Error", out, 1, true)
    for i = 2, 6 do
      assert.is_truthy(out:find("later\t" .. i .. "\tgpu.Error", 1, true) or
                       out:find("later\t" .. i .. "\ttrue", 1, true), out)
    end
    assert.matches("\ndone\n", out, 1, true)
  end)

  gpu_it("running out of device memory is a clear error and the state stays usable #faults", function()
    local out = child([[
      local free, total = gpu.mem_get_info()
      local ok, err = pcall(gpu.mem_alloc, total * 2)
      print("huge", ok, gpu.Error.is(err, "CUDA_ERROR_OUT_OF_MEMORY"))
      local chunk, held = 1 << 30, {}
      while true do                          -- fill the device
        local ok2, b = pcall(gpu.mem_alloc, chunk)
        if not ok2 then err = b break end
        held[#held + 1] = b
      end
      print("filled", #held > 0, gpu.Error.is(err, "CUDA_ERROR_OUT_OF_MEMORY"), tostring(err))
      for _, b in ipairs(held) do b:free() end
      local b = gpu.mem_alloc(chunk)         -- works again
      gpu.memset_d32(b, 0x01020304, 16)
      local h = gpu.from_device(b, 16, "uint32")
      print("again", #b == chunk, h[16] == 0x01020304)
      b:free()
      gpu.free_pool()
      local free2 = gpu.mem_get_info()
      print("returned", free2 >= free - (256 << 20))
    ]])
    assert.matches("huge\tfalse\ttrue", out, 1, true)
    assert.matches("filled\ttrue\ttrue\tcuMem[%w]+: CUDA_ERROR_OUT_OF_MEMORY", out)
    assert.matches("again\ttrue\ttrue", out, 1, true)
    assert.matches("returned\ttrue", out, 1, true)
  end)

  local leave_everything = [[
    local source = "__device__ float g[4];\n__global__ void k(float *a) { a[threadIdx.x] = g[0]; }"
    local mod = gpu.SourceModule(source)
    local buf = gpu.mem_alloc(1024)
    local s, e = gpu.Stream(), gpu.Event()
    mod.k(buf, {block = {4}, grid = {1}, stream = s})
    e:record(s)
    local graph = gpu.capture(function(st) gpu.memset_d32_async(buf, 7, 4, st) end)
    keep = {mod, mod.k, (mod:get_global("g")), buf:offset(16), graph,
            gpu.host.pagelocked_zeros(16, "int32"), gpu.Stream(), gpu.Event()}
    local capturing = gpu.Stream()             -- last: nothing else may run during a capture
    capturing:begin_capture()
    keep[#keep + 1] = capturing
    print("ready")
  ]]

  gpu_it("closing the state with everything alive releases it without errors #faults", function()
    for _, ending in ipairs({"", "os.exit(0, false)", "os.exit(0, true)",
                             "collectgarbage() os.exit(true, true)"}) do
      local out = child(leave_everything .. ending)
      assert.matches("ready", out, 1, true)
      assert.are.equal("ready\n", out, "ending: " .. ending)
    end
  end)

  gpu_it("a script that dies with everything alive still closes cleanly #faults", function()
    local out = child(leave_everything .. "error('on purpose')", false)
    assert.matches("on purpose", out, 1, true)
    assert.is_nil(out:find("CUDA", 1, true), out)
  end)

  gpu_it("a state closed from an atexit handler, before or after the driver's teardown #faults", function()
    local exe = "build/threads"
    local f = io.open(exe, "r")
    if f == nil then
      assert(os.execute("make -s build/threads >/dev/null"), "cannot build " .. exe)
    else
      f:close()
    end
    for _, when in ipairs({"before", "after"}) do
      local p = assert(io.popen(exe .. " --at-exit " .. when .. " tests/exit_worker.lua 2>&1"))
      local out = p:read("a")
      assert.is_true(p:close(), out)
      assert.matches("state closed at exit", out, 1, true)
    end
  end)
end)
