-- Embedding: the public header, the static library, the C API through a C test host
-- (spec/embed_test.c, built as build/embed-test) and the example host.

local helpers = require "helpers"
local gpu = helpers.gpu
local gpu_it = helpers.gpu_it

local embed = require "embed_helpers"
local sh, make, run_host = embed.sh, embed.make, embed.run_host

describe("the embedding header and library", function()
  it("lua_gpu.h and dlpack.h compile on their own, without cuda.h", function()
    make("embed-check-headers")
  end)

  it("make static builds one archive with the C API and the Lua layer", function()
    make("static")
    local symbols = sh("nm -g --defined-only build/liblua-gpu.a")
    for _, name in ipairs {"luaopen_gpu", "luaopen_gpu_core", "lua_gpu_push_buffer",
                           "lua_gpu_push_array", "lua_gpu_toview", "lua_gpu_use_context",
                           "lua_gpu_use_stream", "lua_gpu_push_dlpack", "lua_gpu_to_dlpack",
                           "lua_gpu_push_dlpack_capsule"} do
      assert.is_truthy(symbols:find(" T " .. name .. "\n", 1, true), name .. " missing")
    end
  end)

  it("core.so still exports only luaopen_gpu_core", function()
    local exported = sh("nm -D --defined-only gpu/core.so | awk '$2 == \"T\" {print $3}'")
    assert.are.equal("luaopen_gpu_core\n", exported)
  end)

  it("luaopen_gpu opens every Lua module from the library, with no search path", function()
    local names = {}
    for file in sh("ls lua/gpu"):gmatch("([%w_]+)%.lua") do
      names[#names + 1] = file == "init" and "gpu" or "gpu." .. file
    end
    local out, ok = run_host(([[
      assert(package.path == "" and package.cpath == "")
      for _, name in ipairs {%s} do
        assert(package.preload[name], "not preloaded: " .. name)
        assert(require(name), name)
      end
      assert(require("gpu") == package.loaded.gpu)
      print("modules", #{%s})
    ]]):format(("%q, "):rep(#names):format(table.unpack(names)),
               ("%q, "):rep(#names):format(table.unpack(names))))
    assert.is_true(ok, out)
    assert.is_truthy(out:find("modules\t" .. #names, 1, true), out)
  end)

  it("a second luaopen_gpu returns the same module", function()
    local out, ok = run_host([[
      local gpu = require "gpu"
      local again = require "gpu"
      assert(gpu == again and gpu.SourceModule and gpu.from_dlpack)
      print "same"
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("same", 1, true))
  end)
end)

describe("the C API without a device", function()
  it("lua_gpu_toview refuses what is not a live Buffer or GPUArray, without raising", function()
    local out, ok = run_host([[
      for _, v in ipairs {42, "x", {}, io.stdout, fake_capsule{}} do
        assert(c_view(v) == false, tostring(v))
      end
      assert(c_view(nil) == false)
      print "views refused"
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("views refused", 1, true), out)
  end)

  it("push functions check their arguments and leave the memory with the host on failure", function()
    local out, ok = run_host([[
      local b, err = c_push_buffer(0, 16)
      assert(b == nil and err == "null device pointer", err)
      local a, err2 = c_push_array(4096, "float33", {4})
      assert(a == nil and err2 == "unknown dtype 'float33'", err2)
      local a3, err3 = c_push_array(0, "float32", {4})
      assert(a3 == nil and err3 == "null device pointer", err3)
      assert(release_calls() == 0)
      print "checked"
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("checked\nclosed: deleter_calls=%d+ release_calls=0"), out)
  end)

  if not helpers.has_gpu then
    it("pushing device memory without a driver fails with the driver's error", function()
      local out, ok = run_host([[
        local b, err = c_push_buffer(4096, 16)
        assert(b == nil and getmetatable(err) == require("gpu").Error, tostring(err))
        print("error", err.name)
      ]])
      assert.is_true(ok, out)
      assert.is_truthy(out:find("error\tCUDA_ERROR_", 1, true), out)
      assert.is_truthy(out:find("release_calls=0", 1, true), out)
    end)

    it("the example host builds and says there is no device", function()
      make("embed-example")
      local out, ok = sh("build/embed-host")
      assert.is_true(ok, out)
      assert.is_truthy(out:find("^no CUDA device found %(.+%): nothing to run\n$"), out)
    end)
  end
end)

describe("the C API with a device", function()
  gpu_it("lua_gpu_push_buffer wraps host memory and releases it exactly once", function()
    local out, ok = run_host([[
      local gpu = require "gpu"
      local owner = gpu.mem_alloc(64)               -- stands in for the host's allocation
      local b = assert(c_push_buffer(owner:ptr(), 64))
      local v = assert(c_view(b))
      assert(v.ptr == owner:ptr() and v.nbytes == 64 and v.dtype == nil and not v.is_array)
      local h = gpu.host.from_table({1, 2, 3, 4}, "int32")
      gpu.memcpy_htod(b, h)
      local back = gpu.from_device(owner, 4, "int32")
      for i = 1, 4 do assert(back[i] == i) end
      assert(release_calls() == 0)
      b:free()
      assert(release_calls() == 1)
      b:free()
      assert(release_calls() == 1 and c_view(b) == false)
      local ok2, err = pcall(gpu.memcpy_htod, b, h)
      assert(not ok2 and err:find("buffer has been freed", 1, true), err)
      local lost = assert(c_push_buffer(owner:ptr(), 64))   -- released by the collector
      lost = nil
      collectgarbage(); collectgarbage()
      assert(release_calls() == 2)
      keep = assert(c_push_buffer(owner:ptr(), 64))        -- released when the state closes
      print "buffers ok"
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("buffers ok\nclosed: deleter_calls=0 release_calls=3", 1, true), out)
  end)

  gpu_it("lua_gpu_push_array makes a strided GPUArray that kernels write through", function()
    local out, ok = run_host([==[
      local gpu = require "gpu"
      local owner = gpu.mem_alloc(4 * 12)
      gpu.memset_d32(owner, 0, 12)
      -- the transposed view of a 3x4 float32 matrix: shape {4, 3}, strides {4, 16} bytes
      local a = assert(c_push_array(owner:ptr(), "float32", {4, 3}, {4, 16}))
      assert(a.dtype == "float32" and a.shape[1] == 4 and a.shape[2] == 3)
      assert(a.strides[1] == 4 and a.strides[2] == 16 and not a.is_contiguous)
      local v = assert(c_view(a))
      assert(v.is_array and v.dtype == "float32" and v.ndim == 2 and v.ptr == owner:ptr())
      assert(v.shape[1] == 4 and v.byte_strides[2] == 16 and v.nbytes == 48)
      local f = gpu.SourceModule([[
        __global__ void set(float *p, int stride) { p[threadIdx.x * stride] = threadIdx.x + 1; }
      ]]):get_function("set")
      f(a, gpu.int32(4), {block = {3}})              -- column 0 of a is row 0 of the matrix
      local back = gpu.from_device(owner, 12, "float32")
      assert(back[1] == 1 and back[5] == 2 and back[9] == 3 and back[2] == 0)
      a:free()
      a:free()
      assert(release_calls() == 1)
      print "arrays ok"
    ]==])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("arrays ok\nclosed: deleter_calls=0 release_calls=1", 1, true), out)
  end)

  gpu_it("the example host runs its kernels on its own memory and stream", function()
    make("embed-example")
    local out, ok = sh("build/embed-host")
    assert.is_true(ok, out)
    assert.is_truthy(out:find("^ok: 1000 elements through the host's stream, released=1 deleted=1"), out)
  end)
end)
