-- gpu.Error: the value raised for CUDA and NVRTC failures.
local helpers = require "helpers"
local gpu = helpers.gpu

local function compile_error()
  return helpers.error_of(function() gpu.compile("__global__ void k() { oops; }", {arch = "sm_90"}) end)
end

describe("gpu.Error", function()
  it("has code, name, message, call and log", function()
    local err = compile_error()
    assert.are.equal(gpu.Error, getmetatable(err))
    assert.are.equal("number", type(err.code))
    assert.are.equal("NVRTC_ERROR_COMPILATION", err.name)
    assert.are.equal("compilation failed", err.message)
    assert.are.equal("nvrtcCompileProgram", err.call)
    assert.is_truthy(err.log:find('kernel.cu(1): error: identifier "oops" is undefined', 1, true))
  end)

  it("prints on one line: call: NAME (message): first error of the log", function()
    local text = tostring(compile_error())
    assert.are.equal('nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (compilation failed): '
                     .. 'kernel.cu(1): error: identifier "oops" is undefined', text)
    assert.is_nil(text:find("\n", 1, true))
    local plain = setmetatable({call = "cuMemAlloc", name = "CUDA_ERROR_OUT_OF_MEMORY",
                                message = "out of memory", code = 2}, gpu.Error)
    assert.are.equal("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", tostring(plain))
  end)

  it("Error.is tells gpu.Errors apart, optionally by name", function()
    local err = compile_error()
    assert.is_true(gpu.Error.is(err))
    assert.is_true(gpu.Error.is(err, "NVRTC_ERROR_COMPILATION"))
    assert.is_false(gpu.Error.is(err, "CUDA_ERROR_OUT_OF_MEMORY"))
    assert.is_false(gpu.Error.is("NVRTC_ERROR_COMPILATION"))
    assert.is_false(gpu.Error.is({name = "NVRTC_ERROR_COMPILATION"}))
    assert.is_false(gpu.Error.is(nil))
  end)

  it("is what error() carries, so pcall and error(e) pass it on unchanged", function()
    local err = compile_error()
    local ok, again = pcall(error, err)
    assert.is_false(ok)
    assert.are.equal(err, again)
  end)

  it("leaves the state usable: every error is followed by a successful call", function()
    for _ = 1, 3 do
      compile_error()
      assert.are.equal("\127ELF", gpu.compile("__global__ void k(int *a) { a[0] = 1; }",
                                              {arch = "sm_90"}):sub(1, 4))
      helpers.error_of(function() gpu.dtype("nope") end)
      assert.are.equal(8, gpu.dtype("float64").itemsize)
      helpers.error_of(function() gpu.host.empty(-1) end)
      assert.are.equal(2, #gpu.host.empty(2))
    end
  end)

  if not helpers.has_gpu then
    it("reports a missing driver as CUDA_ERROR_NOT_INITIALIZED from cuInit", function()
      local err = helpers.assert_gpu_error("CUDA_ERROR_NOT_INITIALIZED", "cuInit",
                                           function() gpu.mem_alloc(4) end)
      assert.are.equal(3, err.code)
      assert.are.equal(helpers.no_gpu_reason, err.message)
      assert.are.equal("cuInit: CUDA_ERROR_NOT_INITIALIZED (" .. helpers.no_gpu_reason .. ")", tostring(err))
    end)
  end

  helpers.gpu_it("carries the driver's name and message for a CUDA failure", function()
    local err = helpers.assert_gpu_error("CUDA_ERROR_OUT_OF_MEMORY", nil,
                                         function() gpu.mem_alloc(1 << 50) end)
    assert.are.equal(2, err.code)
    assert.is_truthy(err.call == "cuMemAlloc" or err.call == "cuMemAllocFromPoolAsync", err.call)
    assert.are.equal(err.call .. ": CUDA_ERROR_OUT_OF_MEMORY (out of memory)", tostring(err))
    local b <close> = gpu.mem_alloc(1024)
    assert.are.equal(1024, #b)
  end)
end)
