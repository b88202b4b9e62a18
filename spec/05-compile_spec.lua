-- gpu.compile: NVRTC to PTX or cubin, with no GPU needed.
local helpers = require "helpers"
local gpu = helpers.gpu

local add = [[
__global__ void add(float *out, const float *a, const float *b, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
]]

describe("gpu.compile", function()
  it("makes PTX for a virtual architecture and a cubin for a real one", function()
    local ptx = gpu.compile(add, {arch = "compute_90", target = "ptx", cache = false})
    assert.is_truthy(ptx:find(".target sm_90", 1, true))
    assert.is_truthy(ptx:find(".entry add(", 1, true))      -- extern "C": not mangled
    local cubin = gpu.compile(add, {arch = "sm_90", cache = false})        -- cubin by default
    assert.are.equal("\127ELF", cubin:sub(1, 4))
    local ptx90 = gpu.compile(add, {arch = "sm_90", target = "ptx", cache = false})
    assert.is_truthy(ptx90:find(".entry add(", 1, true))
    assert.are.equal("\127ELF", gpu.compile(add, {arch = "sm_80", target = "cubin", cache = false}):sub(1, 4))
  end)

  it("wraps the source in extern \"C\" unless no_extern_c #nvrtc", function()
    local ptx = gpu.compile("__global__ void k(int *a) { a[0] = 1; }",
                            {arch = "compute_90", no_extern_c = true, cache = false})
    assert.is_truthy(ptx:find(".entry _Z1kPi(", 1, true))
  end)

  it("raises a gpu.Error with NVRTC's whole log, with the caller's line numbers", function()
    local source = "__global__ void k(int *a)\n{\n  a[0] = undefined_thing;\n  int x = ;\n}\n"
    local err = helpers.assert_gpu_error("NVRTC_ERROR_COMPILATION", "nvrtcCompileProgram",
                                         function() gpu.compile(source, {arch = "sm_90"}) end)
    assert.are.equal(6, err.code)
    assert.are.equal("compilation failed", err.message)
    assert.is_truthy(err.log:find('kernel.cu(3): error: identifier "undefined_thing" is undefined', 1, true))
    assert.is_truthy(err.log:find("kernel.cu(4): error: expected an expression", 1, true))
    assert.is_truthy(err.log:find("2 errors detected", 1, true))
    assert.are.equal('nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (compilation failed): '
                     .. 'kernel.cu(3): error: identifier "undefined_thing" is undefined', tostring(err))
    -- the file name is opts.name
    local named = helpers.error_of(function() gpu.compile("int x = ;", {arch = "sm_90", name = "mine.cu"}) end)
    assert.is_truthy(named.log:find("mine.cu(1): error", 1, true))
    -- and the compiler is usable afterwards
    assert.are.equal("\127ELF", gpu.compile(add, {arch = "sm_90"}):sub(1, 4))
  end)

  it("returns the image alone, even when NVRTC warns #nvrtc", function()
    local warns = "__global__ void k(int *a) { int unused = 3; a[0] = 1; }"
    assert.are.equal(1, select("#", gpu.compile(warns, {arch = "sm_90", cache = false})))
    assert.are.equal(1, select("#", gpu.compile(warns, {arch = "sm_90"})))     -- a disk hit too
    assert.are.equal(1, select("#", gpu.compile(add, {arch = "compute_90", target = "ptx"})))
    -- the warnings are NVRTC's log, the core's second result, which gpu.compile drops
    local _, log = require("gpu.core").compile(warns, {arch = "sm_90"})
    assert.is_truthy(log:find('variable "unused" was declared but never referenced', 1, true))
  end)

  it("feeds gpu.module_from_buffer directly: gpu.module_from_buffer(gpu.compile(src)) #nvrtc", function()
    -- on the stand-in driver, which loads any image; gpu.compile once returned (image, log),
    -- and the log landed in module_from_buffer's signatures parameter
    local out, ok = helpers.run_with_fakes(([[
      local gpu = require "gpu"
      local mod = gpu.module_from_buffer(gpu.compile(%q, {arch = "sm_90"}))
      print(mod:is_loaded(), mod.add.name)
      local from_ptx <close> = gpu.module_from_buffer(gpu.compile(%q, {arch = "compute_90", target = "ptx"}))
      print(from_ptx:get_function("add").name)
    ]]):format(add, add))
    assert(ok, out)
    assert.are.equal("true\tadd\nadd\n", out)
  end)

  it("passes options, include_dirs and in-memory headers to NVRTC #nvrtc", function()
    local src = "__global__ void k(int *a) { a[0] = VALUE; }"
    local ptx = gpu.compile(src, {arch = "compute_90", options = {"-DVALUE=123457"}, cache = false})
    assert.is_truthy(ptx:find("123457", 1, true))
    ptx = gpu.compile(src, {arch = "compute_90", options = "-DVALUE=7654321", cache = false})
    assert.is_truthy(ptx:find("7654321", 1, true))
    local dir = helpers.temp_dir()
    local f = assert(io.open(dir .. "/value.h", "w"))
    f:write("#define VALUE 2468013\n")
    f:close()
    ptx = gpu.compile('#include "value.h"\n' .. src, {arch = "compute_90", include_dirs = {dir}, cache = false})
    assert.is_truthy(ptx:find("2468013", 1, true))
    os.remove(dir .. "/value.h")
    os.remove(dir)
    ptx = gpu.compile('#include "mem.h"\n' .. src,
                      {arch = "compute_90", headers = {["mem.h"] = "#define VALUE 1357911\n"}, cache = false})
    assert.is_truthy(ptx:find("1357911", 1, true))
  end)

  it("searches the CUDA toolkit's headers last, as nvcc would (cuda_fp16.h, cooperative_groups.h) #nvrtc", function()
    local dir = gpu.cuda_include_dir()
    if dir == nil then
      pending("no toolkit headers beside NVRTC, under CUDA_HOME or /usr/local/cuda")
      return
    end
    assert.is_truthy(io.open(dir .. "/cuda_fp16.h")):close()
    -- C++ headers: no extern "C" around them
    local src = [[
      #include <cuda_fp16.h>
      #include <cooperative_groups.h>
      extern "C" __global__ void halve(__half *h, float *f) {
        cooperative_groups::this_thread_block().sync();
        f[0] = __half2float(h[0]) * 0.5f;
      }]]
    local ptx = gpu.compile(src, {arch = "compute_90", no_extern_c = true, cache = false})
    assert.is_truthy(ptx:find(".entry halve", 1, true))
    -- a directory of the caller's comes first: its cuda_fp16.h is the one included
    local mine = helpers.temp_dir()
    local f = assert(io.open(mine .. "/cuda_fp16.h", "w"))
    f:write("#define MINE 8642097\n")
    f:close()
    ptx = gpu.compile('#include <cuda_fp16.h>\n__global__ void k(int *a) { a[0] = MINE; }',
                      {arch = "compute_90", include_dirs = {mine}, cache = false})
    assert.is_truthy(ptx:find("8642097", 1, true))
    os.remove(mine .. "/cuda_fp16.h")
    os.remove(mine)
  end)

  it("reports a bad NVRTC option as a gpu.Error with the log #nvrtc", function()
    local err = helpers.assert_gpu_error("NVRTC_ERROR_INVALID_OPTION", "nvrtcCompileProgram",
      function() gpu.compile(add, {arch = "sm_90", options = {"--no-such-flag"}}) end)
    assert.is_truthy(err.log:find("--no-such-flag", 1, true))
    helpers.assert_gpu_error("NVRTC_ERROR_INVALID_OPTION", "nvrtcCompileProgram",
      function() gpu.compile(add, {arch = "sm_1"}) end)
    assert.are.equal("\127ELF", gpu.compile(add, {arch = "sm_90"}):sub(1, 4))
  end)

  it("checks its arguments and option keys", function()
    helpers.assert_error("bad argument #1 to 'compile' (source string expected, got number)",
                         function() gpu.compile(5) end)
    helpers.assert_error("bad argument #1 to 'compile' (source string expected, got nil)",
                         function() gpu.compile() end)
    helpers.assert_error("bad argument #2 to 'compile' (options table expected, got string)",
                         function() gpu.compile(add, "sm_90") end)
    helpers.assert_error("bad argument #2 to 'compile' (unknown option 'archh')",
                         function() gpu.compile(add, {archh = "sm_90"}) end)
    helpers.assert_error("bad argument #2 to 'compile' (unknown option 'option')",
                         function() gpu.compile(add, {arch = "sm_90", option = {"-G"}}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'arch' must be a string such as 'sm_90', got number)",
                         function() gpu.compile(add, {arch = 90}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'target' must be 'ptx' or 'cubin', got fatbin)",
                         function() gpu.compile(add, {arch = "sm_90", target = "fatbin"}) end)
    helpers.assert_error("bad argument #2 to 'compile' (a cubin needs a real architecture: arch = 'sm_XY')",
                         function() gpu.compile(add, {arch = "compute_90", target = "cubin"}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'options' item 2 must be a string, got number)",
                         function() gpu.compile(add, {arch = "sm_90", options = {"-G", 3}}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'include_dirs' must be a list of strings)",
                         function() gpu.compile(add, {arch = "sm_90", include_dirs = 3}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'headers' must be a table {name = source}, got number)",
                         function() gpu.compile(add, {arch = "sm_90", headers = 5}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'headers' must map file names to source strings)",
                         function() gpu.compile(add, {arch = "sm_90", headers = {"#define X"}}) end)
    helpers.assert_error("bad argument #2 to 'compile' (option 'name' must be a string, got boolean)",
                         function() gpu.compile(add, {arch = "sm_90", name = true}) end)
    assert.are.equal("\127ELF", gpu.compile(add, {arch = "sm_90"}):sub(1, 4))
  end)

  if not helpers.has_gpu then
    it("without a device builds portable PTX, and needs opts.arch for a cubin", function()
      local oldest = math.min(table.unpack(gpu.nvrtc_supported_archs()))
      local ptx = gpu.compile(add)
      assert.is_truthy(ptx:find("\n.target sm_" .. oldest .. "\n", 1, true), ptx:sub(1, 400))
      assert.is_truthy(ptx:find(".entry add(", 1, true))
      local err = helpers.error_of(function() gpu.compile(add, {target = "cubin"}) end)
      assert.are.equal("no device to choose an architecture for (" .. helpers.no_gpu_reason
                       .. "): pass opts.arch, e.g. 'sm_90'", err)
    end)
  end

  helpers.gpu_it("with a device, defaults to the device's architecture", function()
    local major, minor = gpu.get_device():compute_capability()
    local image = gpu.compile(add)
    local best = 0
    for _, a in ipairs(gpu.nvrtc_supported_archs()) do
      if a <= major * 10 + minor and a > best then best = a end
    end
    if best == major * 10 + minor then
      assert.are.equal("\127ELF", image:sub(1, 4))
    else
      assert.is_truthy(image:find(".target sm_" .. best, 1, true))
    end
  end)
end)
