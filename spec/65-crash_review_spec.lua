-- Regressions from a review of ways a script could crash the host (nineteenth session): each
-- was a segfault, a division by zero, a call to a forged address or a memory error under
-- valgrind before its fix.  Most are a finalizer that frees what a call holds while the call
-- allocates (a collection runs finalizers at any allocation); the rest are gpu.core's building
-- blocks called with what the Lua layer never passes.  Each runs in a child on the stand-in
-- driver, so a crash fails the spec instead of stopping busted.

local helpers = require "helpers"

-- Runs code in a child on the stand-in driver; returns its output, after checking it exited.
local function child(code)
  local out, ok = helpers.run_with_fakes(code)
  assert(ok, "the child did not exit normally:\n" .. out)
  return out
end

describe("crash review", function()
  it("re-checks host memory that a collection during the call freed", function()
    -- a device allocation past the collector's 32 MiB runs a full collection, whose finalizer
    -- frees the page-locked array the call had already looked at
    local out = child([[
      local gpu = require "gpu"
      local function strip(e) return (tostring(e):gsub("^[^\n]*:%d+: ", "")) end
      local h = gpu.host.pagelocked_empty(4 << 20, "float32")       -- 16 MiB
      setmetatable({}, {__gc = function() h:free() end})
      print(strip(select(2, pcall(function() return gpu.to_device(h) end))))   -- + 16 MiB there
      collectgarbage()
      local f = gpu.module_from_buffer("any image: the stand-in loads it"):get_function("k")
      h = gpu.host.pagelocked_empty(4 << 20, "float32")
      local staged = gpu.In(h)
      setmetatable({}, {__gc = function() h:free() end})
      print(strip(select(2, pcall(f, staged, {block = 1}))))
    ]])
    assert.are.equal("bad argument #1 to 'to_device' (host array has been freed)\n"
                     .. "bad argument #1 to 'k' (the host array of this In/Out/InOut has been freed)\n",
                     out)
  end)

  it("never shares an image that a finalizer unloaded while the share was being made", function()
    -- a collection step at almost every allocation: the last other share's finalizer frees it
    -- between module_share's check and the new Module's end; 3 in 2000 before the fix
    local out = child([[
      local core = require "gpu.core"
      collectgarbage("incremental", 0, 1000)
      local unloaded = 0
      for _ = 1, 2000 do
        local m = core.module_from_buffer("any image")
        local image = core.module_image(m)
        setmetatable({}, {__gc = function() m:free() end})
        local share = core.module_share(image)
        if share ~= nil and not share:is_loaded() then unloaded = unloaded + 1 end
      end
      print(unloaded)
    ]])
    assert.are.equal("0\n", out)
  end)

  it("keeps a graph from copying into a page-locked array freed since its capture", function()
    local out = child([[
      local gpu = require "gpu"
      local s = gpu.Stream()
      local h = gpu.host.pagelocked_zeros(256, "float32")
      local b = gpu.mem_alloc(1024)
      s:begin_capture()
      gpu.memcpy_dtoh_async(h, b, s)
      gpu.memcpy_htod_async(b, h, s)
      local graph = s:end_capture()
      graph:launch(s)
      h:free()
      print(select(2, pcall(graph.launch, graph, s)))
    ]])
    assert.are.equal("graph uses a host array that has been freed\n", out)
  end)

  it("re-checks the stream and the module that staging's collection may have freed", function()
    local out = child([[
      local gpu = require "gpu"
      local function strip(e) return (tostring(e):gsub("^[^\n]*:%d+: ", "")) end
      local function staged_launch(victim_of)
        local m = gpu.module_from_buffer("any image: the stand-in loads it")
        local f, s = m:get_function("k"), gpu.Stream()
        local h = gpu.host.pagelocked_empty(4 << 20, "float32")       -- 16 MiB, staged on the device
        local victim = victim_of(m, s)
        setmetatable({}, {__gc = function() victim:free() end})
        local ok, e = pcall(function() f(gpu.In(h), {block = 1, stream = s}) end)
        h:free()
        collectgarbage()
        return ok and "launched" or strip(e)
      end
      print(staged_launch(function(_, s) return s end))
      print(staged_launch(function(m) return m end))
    ]])
    assert.are.equal("bad launch options for 'k' (stream has been freed)\n"
                     .. "kernel 'k' belongs to a module that has been freed\n", out)
  end)

  it("survives finalizers that free an operand in the middle of the call", function()
    -- a collection cycle at almost every allocation, so finalizers run inside the calls;
    -- h:totable() crashed every time before its fix, the others where a cycle fell right
    local out = child([[
      local gpu = require "gpu"
      collectgarbage("incremental", 0, 1000)
      local function race(n, make)
        for _ = 1, n do
          local victim, call = make()
          setmetatable({}, {__gc = function() victim:free() end})
          pcall(call)
        end
      end
      race(300, function()
        local h = gpu.host.zeros({64, 4}, "float32")
        return h, function() return h:totable() end
      end)
      race(300, function()
        local a = gpu.empty(1, "float32")
        return a, function() a:to_dlpack():free() end
      end)
      race(300, function()
        local b = gpu.mem_alloc(1 << 12)
        local v = b:offset(0)
        return b, function() return gpu.from_device(v, 1 << 10, "float32") end
      end)
      local dtypes = {"int8", "uint16", "int32", "float32", "float64", "uint8"}
      for _, x_dtype in ipairs(dtypes) do           -- each new pair compiles: Lua code runs
        for _, y_dtype in ipairs(dtypes) do
          race(1, function()
            local x, y = gpu.zeros(4, x_dtype), gpu.zeros(4, y_dtype)
            return x, function() return x - y end
          end)
        end
      end
      print "survived"
    ]])
    assert.are.equal("survived\n", out)
  end)

  it("keeps gpu.core's building blocks from crashing on what the Lua layer never passes", function()
    local out = child([[
      local core = require "gpu.core"
      local function try(f, ...) print((select(2, pcall(f, ...)):gsub("^[^\n]*:%d+: ", ""))) end
      -- a loaded image's finalizer, reachable through getmetatable
      local img = core.module_image(core.module_from_buffer("any image"))
      try(getmetatable(img).__gc, nil)
      try(getmetatable(img).__gc, core.In("x"))
      -- launch geometry whose products overflowed to 0 and were divided by
      local f = core.module_from_buffer("any image", {k = "PPq"}):get_function("k")
      try(core.program_launcher, {{dtype = "float32", pointer = true}}, function() return f end,
          "float32", 1 << 32, 1024, 1, 0, 1)
      try(core.array_binary_operator, function() end, function() end, 256, 1024, 1 << 32)
      -- an options table whose __index makes strings that nothing anchors
      local opts = setmetatable({}, {__index = function(_, k)
        if k == "target" then return ("p"):rep(64) .. "x" end
        if k == "arch" then collectgarbage() end
      end})
      print((pcall(core.compile, "__global__ void k() {}", opts)))
      -- __newindex called by hand with fewer arguments than Lua gives it
      local a = core.array_zeros(4, "float32")
      try(getmetatable(a).__newindex, a)
      -- a replaced core.array_view does not reach the C that imports tensors
      local cap = core.array_empty(4, "float32"):to_dlpack()
      core.array_view = function() return nil end
      print(getmetatable(core.from_dlpack(cap)).__name)
      -- a pointer forged in host memory: a tensor whose deleter is any address
      local forged = core.host.zeros(80, "uint8")
      try(core.from_dlpack, forged:ptr())
    ]])
    local expected = {
      "bad argument #1 to '?' (gpu.ModuleImage expected, got nil)",
      "bad argument #1 to '?' (gpu.ModuleImage expected, got gpu.ArgHandler)",
      "bad argument #4 to 'gpu.core.program_launcher' (threads per block must be from 1 to 1024)",
      "bad argument #5 to 'gpu.core.array_binary_operator' (elements per thread must be from 1 to 65536)",
      "true",                             -- no target: the default, PTX (the __index is not read)
      "cannot assign to field 'nil' of a GPUArray",   -- gpu.core alone: no __setelement
      "gpu.GPUArray",
      "bad argument #1 to 'gpu.core.from_dlpack' (a raw DLPack pointer is not taken from Lua "
        .. "(a script could forge one): a capsule is, or lua_gpu_push_dlpack in C)",
    }
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.are.same(expected, lines)
  end)
end)
