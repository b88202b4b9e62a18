-- require "gpu" on any machine, the no-driver path, and NVRTC's lazy loading.
local helpers = require "helpers"
local gpu = helpers.gpu

-- Runs code in a child Lua with env and returns its output lines as a list.
local function child(code, env)
  local out, ok = helpers.run_lua(code, env)
  assert(ok, out)
  local lines = {}
  for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
  return lines
end

describe("require 'gpu'", function()
  it("returns the module with its core functions", function()
    assert.are.equal("table", type(gpu))
    assert.are.equal("string", type(gpu.VERSION))
    for _, name in ipairs{"available", "device_count", "driver_version", "nvrtc_version",
                          "Device", "set_device", "get_device", "synchronize", "mem_get_info",
                          "mem_alloc", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod",
                          "memset_d8", "memset_d16", "memset_d32", "to_device", "from_device",
                          "SourceModule", "compile", "module_from_buffer", "module_from_file",
                          "Stream", "Event", "In", "Out", "InOut", "dtype", "int32", "float32"} do
      assert.is_truthy(gpu[name], name)
    end
    assert.are.equal("table", type(gpu.host))
  end)

  it("keeps the Lua layer's building blocks in gpu.core, out of gpu", function()
    local core = require "gpu.core"
    for _, name in ipairs{"array_binary_operator", "array_unary_operator", "elementwise_caller",
                          "reduction_caller", "program_launcher", "program_dispatcher",
                          "view_method", "axis_layout", "blas_matmul", "cache_hash", "cache_load",
                          "cache_store", "nvrtc_identity"} do
      assert.are.equal("function", type(core[name]), name)
      assert.is_nil(gpu[name], name)
    end
    assert.is_nil(gpu.types)
    assert.are.equal(core.array_empty, gpu.array_empty)      -- what scripts may call stays
    assert.are.equal(core.free_after, gpu.free_after)
  end)

  it("is loaded once per state: gpu.core is the same table every time", function()
    assert.are.equal(require "gpu.core", require "gpu.core")
    assert.are.equal(gpu, require "gpu")
  end)

  it("available() returns true, or false and a reason", function()
    local ok, why = gpu.available()
    assert.are.equal("boolean", type(ok))
    if ok then
      assert.is_nil(why)
      assert.is_true(gpu.device_count() >= 1)
    else
      assert.are.equal("string", type(why))
      assert.is_true(#why > 0)
    end
    assert.are.equal(helpers.has_gpu, ok)
  end)
end)

describe("without a CUDA driver (GPU_CUDA_LIBRARY pointing nowhere)", function()
  local env = {GPU_CUDA_LIBRARY = "/nonexistent/libcuda.so.1"}

  it("loads, reports why, counts no devices, and raises a gpu.Error on first device use", function()
    local lines = child([[
      local gpu = require "gpu"
      local ok, why = gpu.available()
      print(tostring(ok))
      print(why)
      print(gpu.device_count())
      local okc, err = pcall(gpu.mem_alloc, 16)
      print(gpu.Error.is(err), err.name, err.call, err.code)
      print(tostring(err))
      okc, err = pcall(gpu.Stream)
      print(gpu.Error.is(err, "CUDA_ERROR_NOT_INITIALIZED"))
      okc, err = pcall(gpu.driver_version)
      print(gpu.Error.is(err, "CUDA_ERROR_NOT_INITIALIZED"), err.call)
    ]], env)
    assert.are.equal("false", lines[1])
    assert.are.equal("no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file: "
                     .. "No such file or directory", lines[2])
    assert.are.equal("0", lines[3])
    assert.are.equal("true\tCUDA_ERROR_NOT_INITIALIZED\tcuInit\t3", lines[4])
    assert.are.equal("cuInit: CUDA_ERROR_NOT_INITIALIZED (" .. lines[2] .. ")", lines[5])
    assert.are.equal("true", lines[6])
    assert.are.equal("true\tcuDriverGetVersion", lines[7])
  end)

  it("still compiles with NVRTC, works with host arrays, and stays usable after errors", function()
    local lines = child([[
      local gpu = require "gpu"
      pcall(gpu.mem_alloc, 16)
      local ptx = gpu.compile("__global__ void k(int *a) { a[0] = 1; }", {arch = "compute_90"})
      print(ptx:find(".entry k", 1, true) ~= nil)
      local h = gpu.host.from_table({1, 2, 3}, "int32")
      print(h[3], #h)
      print(pcall(gpu.Event))
    ]], env)
    assert.are.equal("true", lines[1])
    assert.are.equal("3\t3", lines[2])
    assert.are.equal("false", lines[3]:match("^(%a+)"))
  end)

  it("explains a library that is not a CUDA driver", function()
    local lines = child([[
      local gpu = require "gpu"
      print(select(2, gpu.available()))
    ]], {GPU_CUDA_LIBRARY = "libm.so.6"})
    assert.are.equal("CUDA driver in libm.so.6 is too old (no cuGetProcAddress; need 11.3 or newer)",
                     lines[1])
  end)
end)

describe("NVRTC", function()
  it("reports its version and architectures", function()
    local v = gpu.nvrtc_version()
    assert.is_true(math.type(v) == "integer" and v >= 11000, tostring(v))
    local archs = gpu.nvrtc_supported_archs()
    local has90 = false
    for _, a in ipairs(archs) do has90 = has90 or a == 90 end
    assert.is_true(has90)
    assert.is_truthy(gpu.nvrtc_path():find("nvrtc", 1, true))
  end)

  it("is loaded lazily: a bad GPU_NVRTC_LIBRARY breaks only compiling, with a clear gpu.Error", function()
    local lines = child([[
      local gpu = require "gpu"
      print(type(gpu.available()))
      local h = gpu.host.zeros(2, "int32")
      print(#h)
      local ok, err = pcall(gpu.compile, "__global__ void k() {}", {arch = "sm_90"})
      print(ok, gpu.Error.is(err, "NVRTC_NOT_FOUND"), err.call)
      print(err.message)
      ok, err = pcall(gpu.nvrtc_version)
      print(ok, gpu.Error.is(err, "NVRTC_NOT_FOUND"))
    ]], {GPU_NVRTC_LIBRARY = "/nonexistent/libnvrtc.so"})
    assert.are.equal("boolean", lines[1])
    assert.are.equal("2", lines[2])
    assert.are.equal("false\ttrue\tdlopen", lines[3])
    assert.are.equal("GPU_NVRTC_LIBRARY=/nonexistent/libnvrtc.so cannot be loaded: "
                     .. "/nonexistent/libnvrtc.so: cannot open shared object file: No such file or directory",
                     lines[4])
    assert.are.equal("false\ttrue", lines[5])
  end)
end)
