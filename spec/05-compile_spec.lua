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

  it("links relocatable images on the stand-in driver, and checks gpu.link's arguments #nvrtc", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.compile('extern "C" __device__ int helper(int x) { return x; }',
                            {arch = "sm_90", options = {"-rdc=true"}, no_extern_c = true})
      local b = gpu.compile("__global__ void k(int *o) { o[0] = 1; }", {arch = "compute_90", target = "ptx"})
      print(gpu.link({a, b}))                                  -- the stand-in counts its inputs
      print(gpu.link({a, {data = b, type = "ptx", name = "b.ptx"}}))
      if gpu.cuda_include_dir() then print(gpu.link({a}, {libraries = "cudadevrt"})) end
      print(gpu.module_from_buffer(gpu.link({b}), gpu.signature.parse("__global__ void k(int *o)")).k)
      for _, case in ipairs{{{}}, {{a, 5}}, {{a, {data = b, type = "elf"}}}, {{""}}, {{{type = "ptx"}}},
                            {{a}, {libraries = {"nosuch"}}}, {{a}, {librarys = {}}},
                            {{a}, {libraries = {"/nonexistent/libx.a"}}}, {{a}, {libraries = {7}}}} do
        print((select(2, pcall(function() return gpu.link(case[1], case[2]) end)):gsub("^[^:]*:%d+: ", "")))
      end
    ]])
    assert(ok, out)
    local dir = gpu.cuda_include_dir()
    local expected = {
      "fake cubin of 2 inputs", "fake cubin of 2 inputs",
      dir and "fake cubin of 2 inputs" or nil,
      "gpu.Function(k)",
      "bad argument #1 to 'link' (a list of one or more images expected)",
      "bad argument #1 to 'link' (item 2: an image (string) or {data =, type =} expected, got number)",
      "bad argument #1 to 'link' (item 2: type must be \"ptx\", \"cubin\", \"fatbin\", \"object\" or \"library\")",
      "bad argument #1 to 'link' (item 1 is empty)",
      "bad argument #1 to 'link' (item 1: data must be a string)",
      dir and ("bad argument #2 to 'link' (library 'nosuch' not found beside " .. dir .. ")")
          or "bad argument #2 to 'link' (library 'nosuch' not found)",
      "bad argument #2 to 'link' (unknown option 'librarys')",
      "bad argument #2 to 'link' (library '/nonexistent/libx.a' not found)",
      "bad argument #2 to 'link' (option 'libraries' item 1 must be a string)",
    }
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
    local want = {}
    for i = 1, 13 do if expected[i] then want[#want + 1] = expected[i] end end
    assert.are.same(want, lines)
  end)

  helpers.gpu_it("links relocatable device code into one module: calls across images, kernels that launch kernels", function()
    local helper_source = [[
      extern "C" __device__ long long helper(long long x) { return 3 * x * x - 7 * x + 1; }]]
    local kernel_source = [[
      extern "C" __device__ long long helper(long long x);
      __global__ void apply(long long *out, const long long *in, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = helper(in[i]);
      }]]
    local rdc = {options = {"-rdc=true"}}
    local helper_cubin = gpu.compile(helper_source, {options = rdc.options, no_extern_c = true, cache = false})
    local kernel_ptx = gpu.compile(kernel_source, {options = rdc.options, target = "ptx", arch = "compute_90", cache = false})
    local module = gpu.module_from_buffer(gpu.link({helper_cubin, kernel_ptx}), gpu.signature.parse(kernel_source))
    local n = 5000
    local values = helpers.random_integers(n, -100000, 100000)
    local input = gpu.to_gpu(values, "int64")
    local out = gpu.zeros(n, "int64")
    module.apply(out, input, n, {block = 256, grid = (n + 255) // 256})
    local got = out:get()
    for i = 1, n do
      local x = values[i]
      assert(got[i] == 3 * x * x - 7 * x + 1, "element " .. i)
    end
    -- an undefined device function: the linker's gpu.Error, with its log
    local err = helpers.error_of(gpu.link, {kernel_ptx})
    assert.is_true(gpu.Error.is(err), tostring(err))
    assert.are.equal("cuLinkComplete", err.call)
    assert.is_truthy(tostring(err.log):find("helper", 1, true), tostring(err.log))
    -- dynamic parallelism: a kernel that launches another needs the toolkit's cudadevrt
    if gpu.cuda_include_dir() == nil then return pending("no CUDA toolkit beside NVRTC for cudadevrt") end
    local parent_source = [[
      __global__ void child(int *out, int base) { out[base + threadIdx.x] = base + 2 * threadIdx.x; }
      __global__ void parent(int *out, int rows, int width) {
        if (threadIdx.x < rows) child<<<1, width>>>(out, threadIdx.x * width);
      }]]
    local parent_cubin = gpu.compile(parent_source, {options = rdc.options, cache = false})
    local nested = gpu.module_from_buffer(gpu.link({parent_cubin}, {libraries = {"cudadevrt"}}),
                                          gpu.signature.parse(parent_source))
    local rows, width = 12, 64
    local grid_out = gpu.full(rows * width, -1, "int32")
    nested.parent(grid_out, rows, width, {block = 32})
    local h = grid_out:get()
    for r = 0, rows - 1 do
      for t = 0, width - 1 do
        assert(h[r * width + t + 1] == r * width + 2 * t, ("row %d, thread %d: %d"):format(r, t, h[r * width + t + 1]))
      end
    end
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
