-- SourceModule, Functions and launches: arguments, options, prepared calls, attributes.
local helpers = require "helpers"
local gpu = helpers.gpu
local host = gpu.host

local source = [[
struct Pair { int a; float b; };
__constant__ float coeff[4];

__global__ void axpy(float *out, const float *x, const float *y, float a, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void grid2d(int *out, int width)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * width + x] = x * 1000 + y;
}

__global__ void types(long long *out, signed char a, unsigned short b, long long c, bool d)
{
  out[0] = a; out[1] = b; out[2] = c; out[3] = d;
}

__global__ void take_pair(float *out, Pair p) { out[0] = p.a + p.b; }

__global__ void use_const(float *out) { out[threadIdx.x] = coeff[threadIdx.x]; }

__global__ void twice(int *data, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}
]]

local function module() return gpu.SourceModule(source) end

-- x, y random float32 arrays of n, the reference a*x + y, rounded like the device
local function axpy_case(n)
  local x, y = helpers.random_floats(n, 10), helpers.random_floats(n, 10)
  local a = helpers.f32(math.random() * 4 - 2)
  local expect = {}
  for i = 1, n do
    x[i], y[i] = helpers.f32(x[i]), helpers.f32(y[i])
    expect[i] = helpers.f32(a * x[i] + y[i])
  end
  return host.from_table(x, "float32"), host.from_table(y, "float32"), a, expect
end

local function check_axpy(result, expect)
  for i = 1, #expect do helpers.assert_close(expect[i], result[i], 1e-6, "element " .. i) end
end

describe("SourceModule", function()
  it("checks its arguments before needing a device", function()
    helpers.assert_error("bad argument #1 to 'SourceModule' (source string expected, got number)",
                         function() gpu.SourceModule(5) end)
    helpers.assert_error("bad argument #2 to 'SourceModule' (unknown option 'target')",
                         function() gpu.SourceModule(source, {target = "ptx"}) end)
    helpers.assert_error("bad argument #2 to 'SourceModule' (unknown option 'option')",
                         function() gpu.SourceModule(source, {option = {"-G"}}) end)
    helpers.assert_error("bad argument #2 to 'SourceModule' (options table expected, got string)",
                         function() gpu.SourceModule(source, "sm_90") end)
    helpers.assert_error("bad argument #1 to 'module_from_buffer' (empty module image)",
                         function() gpu.module_from_buffer("") end)
    helpers.assert_error("bad argument #1 to 'module_from_file' (path expected, got nil)",
                         function() gpu.module_from_file() end)
    helpers.assert_error("/nonexistent/k.cubin: No such file or directory",
                         function() gpu.module_from_file("/nonexistent/k.cubin") end)
  end)

  helpers.gpu_it("compiles, loads and finds kernels by get_function and by name", function()
    local mod = module()
    local f = mod:get_function("axpy")
    assert.are.equal(f, mod.axpy)
    assert.are.equal("axpy", f.name)
    assert.are.equal("PPPfi", f.signature)
    assert.are.equal(5, f.nparams)
    assert.are.equal("gpu.Function(axpy)", tostring(f))
  end)

  helpers.gpu_it("raises a gpu.Error with the log for a compile error, and stays usable", function()
    local err = helpers.assert_gpu_error("NVRTC_ERROR_COMPILATION", "nvrtcCompileProgram",
      function() gpu.SourceModule("__global__ void k(int *a)\n{\n  a[0] = nope;\n}\n") end)
    assert.is_truthy(err.log:find('kernel.cu(3): error: identifier "nope" is undefined', 1, true))
    assert.are.equal("axpy", module().axpy.name)
  end)

  helpers.gpu_it("says which kernel is missing", function()
    local mod = module()
    local msg = "no kernel named 'axpyy' in this module (is it __global__ and, in C++, extern \"C\"?)"
    helpers.assert_error(msg, function() mod:get_function("axpyy") end)
    helpers.assert_error(msg, function() return mod.axpyy end)
    helpers.assert_error("bad argument #1 to 'get_function' (string expected, got no value)",
                         function() mod:get_function() end)
    assert.are.equal("twice", mod:get_function("twice").name)
  end)

  helpers.gpu_it("loads images from module_from_buffer and module_from_file", function()
    local major, minor = gpu.get_device():compute_capability()
    local image = gpu.compile(source, {arch = ("sm_%d%d"):format(major, minor), target = "cubin"})
    local mod = gpu.module_from_buffer(image)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(image)
    f:close()
    local mod2 = gpu.module_from_file(path)
    os.remove(path)
    for _, m in ipairs{mod, mod2} do
      -- no signatures: buffers and typed scalars work, plain numbers cannot be converted
      local data = host.from_table(helpers.random_integers(100, -1000, 1000), "int32")
      local b <close> = gpu.to_device(data)
      m.twice(b, gpu.int32(100), {block = {128}})
      local back = gpu.from_device(b, 100, "int32")
      for i = 1, 100 do assert.are.equal(2 * data[i], back[i]) end
      helpers.assert_error("bad argument #2 to 'twice' (the kernel's parameter types are unknown, so a "
                           .. "plain number cannot be converted: pass a typed scalar such as gpu.int32(x), "
                           .. "or prepare() the kernel)", function() m.twice(b, 100, {block = {128}}) end)
    end
    -- not ELF or fatbin: the driver reads it as PTX (the exact name is the driver's choice)
    local err = helpers.error_of(function() gpu.module_from_buffer("not a cubin at all") end)
    assert.is_true(gpu.Error.is(err) and err.call == "cuModuleLoadDataEx", tostring(err))
    assert.is_truthy(err.name == "CUDA_ERROR_INVALID_PTX" or err.name == "CUDA_ERROR_INVALID_IMAGE", err.name)
  end)
end)

describe("launches", function()
  helpers.gpu_it("run with Buffers and plain numbers converted by the declared types", function()
    local f = module().axpy
    local n = math.random(1000, 5000)
    local x, y, a, expect = axpy_case(n)
    local bx <close> = gpu.to_device(x)
    local by <close> = gpu.to_device(y)
    local out <close> = gpu.mem_alloc(4 * n)
    f(out, bx, by, a, n, {block = {256}, grid = {(n + 255) // 256}})
    check_axpy(gpu.from_device(out, n, "float32"), expect)
    -- typed scalars do the same
    gpu.memset_d32(out, 0, n)
    f(out, bx, by, gpu.float32(a), gpu.int32(n), {block = 256, grid = (n + 255) // 256})
    check_axpy(gpu.from_device(out, n, "float32"), expect)
  end)

  helpers.gpu_it("cover 2-D grids and blocks", function()
    local f = module().grid2d
    local width, height = 4 * 8, 5 * 3
    local out <close> = gpu.mem_alloc(4 * width * height)
    f(out, width, {block = {4, 5}, grid = {8, 3}})
    local back = gpu.from_device(out, {height, width}, "int32")
    for yy = 0, height - 1 do
      for xx = 0, width - 1 do assert.are.equal(xx * 1000 + yy, back[yy * width + xx + 1]) end
    end
  end)

  helpers.gpu_it("convert plain numbers to each declared type, with range checks", function()
    local f = module().types
    local out <close> = gpu.mem_alloc(32)
    local c = math.random(-2^62, 2^62)
    f(out, -100, 65535, c, true, {block = 1})
    assert.are.same({-100, 65535, c, 1}, gpu.from_device(out, 4, "int64"):totable())
    helpers.assert_error("bad argument #2 to 'types' (200 is out of range for int8)",
                         function() f(out, 200, 1, 1, true, {block = 1}) end)
    helpers.assert_error("bad argument #3 to 'types' (-1 is out of range for uint16)",
                         function() f(out, 1, -1, 1, true, {block = 1}) end)
    helpers.assert_error("bad argument #4 to 'types' (9.2233720368548e+18 is out of range for int64)",
                         function() f(out, 1, 1, 2^63, true, {block = 1}) end)
    helpers.assert_error("bad argument #5 to 'types' (expected a boolean or a number for bool, got string)",
                         function() f(out, 1, 1, 1, "yes", {block = 1}) end)
    local axpy = module().axpy
    helpers.assert_error("bad argument #5 to 'axpy' (1099511627776 is out of range for int32)",
                         function() axpy(out, out, out, 1, 1 << 40, {block = 1}) end)
    helpers.assert_error("bad argument #5 to 'axpy' (1099511627776.0 is out of range for int32)",
                         function() axpy(out, out, out, 1, 2^40, {block = 1}) end)
    helpers.assert_error("bad argument #5 to 'axpy' (1.5 is not an integer)",
                         function() axpy(out, out, out, 1, 1.5, {block = 1}) end)
    helpers.assert_error("bad argument #4 to 'axpy' (expected a number for float32, got string)",
                         function() axpy(out, out, out, "2", 1, {block = 1}) end)
    helpers.assert_error("bad argument #4 to 'axpy' (expected float32, got a scalar of float64)",
                         function() axpy(out, out, out, gpu.float64(2), 1, {block = 1}) end)
    helpers.assert_error("bad argument #5 to 'axpy' (expected int32, got a scalar of int64)",
                         function() axpy(out, out, out, 2, gpu.int64(1), {block = 1}) end)
    f(out, 1, 2, 3, false, {block = 1})
    assert.are.same({1, 2, 3, 0}, gpu.from_device(out, 4, "int64"):totable())
  end)

  helpers.gpu_it("check pointer arguments", function()
    local axpy = module().axpy
    local out <close> = gpu.mem_alloc(16)
    helpers.assert_error("bad argument #2 to 'axpy' (a host array is not a device pointer: wrap it in "
                         .. "gpu.In, gpu.Out or gpu.InOut, copy it with gpu.to_device, or make it "
                         .. "with gpu.host.managed_empty)",
                         function() axpy(out, host.zeros(4, "float32"), out, 1, 4, {block = 4}) end)
    helpers.assert_error("bad argument #1 to 'axpy' (expected a device pointer, got a typed scalar)",
                         function() axpy(gpu.int64(0), out, out, 1, 4, {block = 4}) end)
    helpers.assert_error("bad argument #3 to 'axpy' (expected a device pointer, got a string)",
                         function() axpy(out, out, "abcdefgh", 1, 4, {block = 4}) end)
    helpers.assert_error("bad argument #2 to 'axpy' (expected a device pointer (gpu.Buffer, array, "
                         .. "In/Out/InOut or an address), got number)",
                         function() axpy(out, 1.5, out, 1, 4, {block = 4}) end)
    helpers.assert_error("bad argument #2 to 'axpy' (expected a device pointer (gpu.Buffer, array, "
                         .. "In/Out/InOut or an address), got table)",
                         function() axpy(out, {}, out, 1, 4, {block = 4}) end)
    local freed = gpu.mem_alloc(16)
    freed:free()
    helpers.assert_error("bad argument #2 to 'axpy' (buffer has been freed)",
                         function() axpy(out, freed, out, 1, 4, {block = 4}) end)
    axpy(out, out:ptr(), out, 1, 4, {block = 4})     -- a raw address is a pointer too
    gpu.synchronize()
  end)

  helpers.gpu_it("count the arguments", function()
    local axpy = module().axpy
    local out <close> = gpu.mem_alloc(16)
    helpers.assert_error("kernel 'axpy' takes 5 arguments, got 2", function() axpy(out, out, {block = 1}) end)
    helpers.assert_error("kernel 'axpy' takes 5 arguments, got 6",
                         function() axpy(out, out, out, 1, 4, 5, {block = 1}) end)
    helpers.assert_error("kernel 'use_const' takes 1 argument, got 0", function() module().use_const({block = 1}) end)
    axpy(out, out, out, 1, 4, {block = 4})
  end)

  helpers.gpu_it("pass strings as structs by value, checking their size", function()
    local f = module().take_pair
    local out <close> = gpu.mem_alloc(4)
    local a, b = math.random(-1000, 1000), helpers.f32(math.random())
    f(out, string.pack("=i4f", a, b), {block = 1})
    assert.are.equal(helpers.f32(a + b), gpu.from_device(out, 1, "float32")[1])
    helpers.assert_error("bad argument #2 to 'take_pair' (parameter is 8 bytes, the string 4)",
                         function() f(out, string.pack("=i4", a), {block = 1}) end)
    helpers.assert_error("bad argument #2 to 'take_pair' (parameter is passed by value (8 bytes): "
                         .. "expected a string of its bytes, got number)", function() f(out, 3, {block = 1}) end)
    f(out, gpu.int64(0), {block = 1})                 -- a typed scalar of the same size is bytes too
  end)

  -- Drivers before CUDA 12.4 cannot tell a kernel's parameter layout (cuFuncGetParamInfo);
  -- GPU_CUDA_NO_OPTIONAL=1 makes this one act the same.  A struct's size then comes from its
  -- bytes at each call, and the library's own kernels that take layout structs still work.
  helpers.gpu_it("pass structs by value on drivers that cannot tell the parameter layout", function()
    local out, ok = helpers.run_lua([[
      local gpu = require "gpu"
      local m = gpu.SourceModule([=[
        struct Wide { long long a; int b; };
        __global__ void take(long long *out, int tag, Wide w, short s, double d) {
          out[0] = tag; out[1] = w.a; out[2] = w.b; out[3] = s; out[4] = (long long)d;
        }]=], {cache = false})
      local tag, a, b, s = math.random(-1e6, 1e6), math.random(-1 << 40, 1 << 40), math.random(-1e6, 1e6), math.random(-3e4, 3e4)
      local out = gpu.zeros(5, "int64")
      m.take(out, tag, string.pack("=i8i4xxxx", a, b), s, 12345.0, {block = 1})
      local got = out:get():totable()
      assert(got[1] == tag and got[2] == a and got[3] == b and got[4] == s and got[5] == 12345,
             table.concat(got, " "))
      local rows, cols, values = 7, 300, {}
      for i = 1, rows * cols do values[i] = math.random(-1000, 1000) end
      local x = gpu.to_gpu(gpu.host.from_table(values, "int32")):reshape(rows, cols)
      local sums = x:sum({axis = 1}):get()          -- the axis reduction takes a layout struct
      for c = 1, cols do
        local want = 0
        for r = 1, rows do want = want + values[(r - 1) * cols + c] end
        assert(sums[c] == want, ("column %d: %d, expected %d"):format(c, sums[c], want))
      end
      local running = gpu.cumsum(x:transpose()):get()   -- the scan of a view, too
      local acc, i = 0, 0
      for c = 1, cols do
        for r = 1, rows do
          i, acc = i + 1, acc + values[(r - 1) * cols + c]
          assert(running[i] == acc, ("cumsum %d: %d, expected %d"):format(i, running[i], acc))
        end
      end
      print("all match")
    ]], {GPU_CUDA_NO_OPTIONAL = "1", GPU_CACHE_DISABLE = "1"})
    assert.is_true(ok, out)
    assert.are.equal("all match\n", out)
  end)

  helpers.gpu_it("check launch options", function()
    local axpy = module().axpy
    local out <close> = gpu.mem_alloc(16)
    local function launch(opts) axpy(out, out, out, 1, 4, opts) end
    local function bad(msg, opts)
      helpers.assert_error("bad launch options for 'axpy' (" .. msg .. ")", launch, opts)
    end
    helpers.assert_error("missing launch options: call 'axpy' as f(args..., {block = {x, y, z}, "
                         .. "grid = {x, y}})", function() axpy(out, out, out, 1, 4) end)
    bad("unknown option 'blcok'", {blcok = {4}})
    bad("unknown option 'gird'", {block = {4}, gird = {1}})
    bad("missing option 'block'", {grid = {1}})
    bad("block.x = 2048 exceeds the device limit of 1024", {block = {2048}})
    bad("block.z = 65 exceeds the device limit of 64", {block = {1, 1, 65}})
    bad("block of 1024x2x1 = 2048 threads exceeds the device limit of 1024", {block = {1024, 2}})
    bad("block.x = 0 must be at least 1", {block = {0}})
    bad("block.y = -1 must be at least 1", {block = {1, -1}})
    bad("grid.x = 0 must be at least 1", {block = 4, grid = 0})
    bad("grid.x = -3 must be at least 1", {block = 4, grid = {-3}})
    bad("grid.y = 65536 exceeds the device limit of 65535", {block = 4, grid = {1, 65536}})
    bad("block must be a number or a table of 1 to 3 numbers, got string", {block = "4"})
    bad("block must be a number or a table of 1 to 3 numbers", {block = {1, 1, 1, 1}})
    bad("block must be a number or a table of 1 to 3 numbers", {block = {}})
    bad("block must be whole numbers", {block = {1.5}})
    bad("shared must be a byte count (0 or more)", {block = 4, shared = -1})
    bad("stream must be a gpu.Stream, got number", {block = 4, stream = 5})
    bad("option keys must be strings", {block = 4, [1] = 2})
    local s = gpu.Stream()
    s:free()
    bad("stream has been freed", {block = 4, stream = s})
    launch({block = {4}, grid = {1}, shared = 0})
    gpu.synchronize()
  end)

  helpers.gpu_it("copy In/Out/InOut host arrays around the launch", function()
    local axpy = module().axpy
    local n = 777
    local x, y, a, expect = axpy_case(n)
    local out = host.zeros(n, "float32")
    axpy(gpu.Out(out), gpu.In(x), gpu.In(y:bytes()), a, n, {block = 128, grid = (n + 127) // 128})
    check_axpy(out, expect)
    local data = host.from_table(helpers.random_integers(n, -1000, 1000), "int32")
    local before = data:totable()
    module().twice(gpu.InOut(data), n, {block = 128, grid = (n + 127) // 128})
    for i = 1, n do assert.are.equal(2 * before[i], data[i]) end
    helpers.assert_error("bad argument #1 to 'Out' (gpu.HostArray expected, got string)",
                         function() gpu.Out("abc") end)
  end)

  helpers.gpu_it("read __constant__ data through get_global", function()
    local mod = module()
    local buf, nbytes = mod:get_global("coeff")
    assert.are.equal(16, nbytes)
    assert.are.equal(16, #buf)
    local values = host.from_table(helpers.random_floats(4), "float32")
    gpu.memcpy_htod(buf, values)
    local out <close> = gpu.mem_alloc(16)
    mod.use_const(out, {block = 4})
    assert.are.equal(values:bytes(), gpu.from_device(out, 4, "float32"):bytes())
    helpers.assert_error("no global named 'nope' in this module", function() mod:get_global("nope") end)
  end)
end)

describe("prepared calls", function()
  helpers.gpu_it("prepare, prepared_call, prepared_async_call and prepared_timed_call", function()
    local f = module().axpy
    assert.are.equal(f, f:prepare("PPPfi"))
    local n = 1000
    local x, y, a, expect = axpy_case(n)
    local bx <close> = gpu.to_device(x)
    local by <close> = gpu.to_device(y)
    local out <close> = gpu.mem_alloc(4 * n)
    f:prepared_call({4}, {256}, out, bx, by, a, n)
    check_axpy(gpu.from_device(out, n, "float32"), expect)
    gpu.memset_d32(out, 0, n)
    local s = gpu.Stream()
    f:prepared_async_call({4}, {256, 1, 1}, s, out, bx, by, a, n)
    s:synchronize()
    check_axpy(gpu.from_device(out, n, "float32"), expect)
    gpu.memset_d32(out, 0, n)
    local seconds = f:prepared_timed_call(4, 256, out, bx, by, a, n)
    assert.are.equal("float", math.type(seconds))
    assert.is_true(seconds >= 0 and seconds < 10)
    check_axpy(gpu.from_device(out, n, "float32"), expect)
    f:prepared_call({4}, {256}, out, bx, by, a, n, {shared = 0})
  end)

  it("check the format against the source's declaration where the driver cannot tell", function()
    -- the stand-in driver has no cuFuncGetParamInfo, as drivers before 12.4
    local out, ok = helpers.run_with_fakes([=[
      local gpu = require "gpu"
      local mod = gpu.SourceModule([[
        struct S { int a; float b; };
        __global__ void k(float *x, const int n) {}
        __global__ void s(float *x, struct S v) {}
        __global__ void none() {}
      ]])
      local function try(f, format)
        local ok, e = pcall(f.prepare, f, format)
        print(ok and "ok" or (tostring(e):gsub("^[^\n]*:%d+: ", "")))
      end
      try(mod.k, "Pii"); try(mod.k, "Pd"); try(mod.k, "Pi"); try(mod.none, "iiP")
      try(mod.s, "P"); try(mod.s, "Pi")             -- a struct's size is not known: any letter
      try(mod.s, "Pq"); try(mod.s, "Pi")            -- still not: an earlier prepare was a guess
      local raw = gpu.module_from_buffer(gpu.compile("__global__ void r(float *x) {}", {arch = "sm_90"}))
      try(raw.r, "Pi"); try(raw.r, "P")            -- no declaration: the format is the layout
      try(mod.k, {"P", "i"}); try(mod.k, {"P", 3})  -- PyCUDA's list form
      -- PyCUDA's option names: shared_size for prepared calls, time_kernel for calls
      local buf = gpu.mem_alloc(16)
      print((pcall(mod.k.prepared_call, mod.k, 1, 1, buf, 3, {shared_size = 16})))
      print(math.type(mod.k(buf, 3, {block = 1, time_kernel = true})))
    ]=])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "bad argument #2 to '?' ('Pii' has 3 parameters, kernel 'k' takes 2)",
      "bad argument #2 to '?' (parameter 2 of 'k' is 4 bytes, 'd' is 8)",
      "ok",
      "bad argument #2 to '?' ('iiP' has 3 parameters, kernel 'none' takes 0)",
      "bad argument #2 to '?' ('P' has 1 parameters, kernel 's' takes 2)",
      "ok", "ok", "ok", "ok", "ok",
      "ok", "bad argument #2 to '?' (type 2 must be a letter, got number)",
      "true", "float", "",
    }, "\n"), out)
  end)

  helpers.gpu_it("check their arguments", function()
    local f = module().axpy
    local out <close> = gpu.mem_alloc(16)
    helpers.assert_error("bad argument #1 to 'prepare' (unknown type letter 'x' in 'PPPxi')",
                         function() f:prepare("PPPxi") end)
    helpers.assert_error("bad argument #1 to 'prepare' (unknown type letter 'V' in 'PPPVi')",
                         function() f:prepare("PPPVi") end)
    helpers.assert_error("bad argument #1 to 'prepare' (string expected, got no value)",
                         function() f:prepare() end)
    -- the driver tells the parameter sizes (12.4+), or the source declares them
    helpers.assert_error("bad argument #1 to 'prepare' ('PPi' has 3 parameters, kernel 'axpy' takes 5)",
                         function() f:prepare("PPi") end)
    helpers.assert_error("bad argument #1 to 'prepare' (parameter 4 of 'axpy' is 4 bytes, 'd' is 8)",
                         function() f:prepare("PPPdi") end)
    f:prepare("PPPfi")
    helpers.assert_error("bad argument #1 to 'prepared_call' (grid.x = 0 must be at least 1)",
                         function() f:prepared_call({0}, {4}, out, out, out, 1, 4) end)
    helpers.assert_error("bad argument #2 to 'prepared_call' (block.x = 4096 exceeds the device limit of 1024)",
                         function() f:prepared_call({1}, {4096}, out, out, out, 1, 4) end)
    helpers.assert_error("bad argument #2 to 'prepared_call' (block of 32x32x2 = 2048 threads exceeds the "
                         .. "device limit of 1024)", function() f:prepared_call(1, {32, 32, 2}, out, out, out, 1, 4) end)
    helpers.assert_error("bad argument #8 to 'prepared_call' (unknown option 'shard')",
                         function() f:prepared_call(1, 4, out, out, out, 1, 4, {shard = 0}) end)
    helpers.assert_error("kernel 'axpy' takes 5 arguments, got 4",
                         function() f:prepared_call(1, 4, out, out, out, 1) end)
    helpers.assert_error("bad argument #3 to 'prepared_async_call' (gpu.Stream expected, got number)",
                         function() f:prepared_async_call(1, 4, 7, out, out, out, 1, 4) end)
    f:prepared_call(1, 4, out, out, out, 1, 4)
    gpu.synchronize()
  end)
end)

describe("Function attributes", function()
  helpers.gpu_it("num_regs, sizes, max_threads_per_block, max_potential_block_size, active blocks", function()
    local f = module().axpy
    assert.is_true(f.num_regs >= 1 and f.num_regs <= 255)
    assert.is_true(f.shared_size_bytes >= 0)
    assert.is_true(f.local_size_bytes >= 0)
    assert.is_true(f.const_size_bytes >= 0)
    assert.is_true(f.max_threads_per_block >= 32 and f.max_threads_per_block <= 1024)
    local block, min_grid = f:max_potential_block_size()
    assert.is_true(block >= 32 and block <= f.max_threads_per_block and block % 32 == 0, tostring(block))
    assert.is_true(min_grid >= 1)
    local block2 = f:max_potential_block_size(1024)
    assert.is_true(block2 >= 1 and block2 <= f.max_threads_per_block)
    helpers.assert_error("bad argument #1 to 'max_potential_block_size' (shared memory size must not be negative)",
                         function() f:max_potential_block_size(-1) end)
    assert.is_nil(f.no_such_attribute)
    assert.is_true(math.type(f.handle) == "integer" and f.handle ~= 0)
    -- blocks a multiprocessor runs at once: bounded by its threads, registers and shared memory
    local device = gpu.get_device()
    local threads = device:attribute("MAX_THREADS_PER_MULTIPROCESSOR")
    local registers = device:attribute("MAX_REGISTERS_PER_MULTIPROCESSOR")
    local shared = device:attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
    local before = math.huge
    for _, size in ipairs{32, 128, 256, 1024} do
      local blocks = f:max_active_blocks_per_multiprocessor(size)
      assert.is_true(blocks >= 1 and blocks * size <= threads, size .. ": " .. blocks)
      assert.is_true(blocks * size * f.num_regs <= registers, size .. ": " .. blocks)
      assert.is_true(blocks <= before, size .. ": fewer threads, as many blocks or more")
      before = blocks
    end
    assert.are.equal(f:max_active_blocks_per_multiprocessor(128), f:max_active_blocks_per_multiprocessor({16, 8}))
    local with_shared = f:max_active_blocks_per_multiprocessor(128, 48 * 1024)
    assert.is_true(with_shared >= 1 and with_shared <= shared // (48 * 1024), tostring(with_shared))
    helpers.assert_error("bad argument #1 to 'max_active_blocks_per_multiprocessor' (block.x = 0 must be at least 1)",
                         function() f:max_active_blocks_per_multiprocessor(0) end)
    helpers.assert_error("bad argument #1 to 'max_active_blocks_per_multiprocessor' (block of 64x64x1 = 4096 "
                         .. "threads exceeds the device limit of 1024)",
                         function() f:max_active_blocks_per_multiprocessor({64, 64}) end)
    helpers.assert_error("bad argument #2 to 'max_active_blocks_per_multiprocessor' (shared memory size must not be negative)",
                         function() f:max_active_blocks_per_multiprocessor(32, -1) end)
    assert.are.equal(f.handle, module().axpy.handle)      -- one CUfunction per kernel
  end)
end)

describe("cooperative and clustered launches", function()
  -- a grid-wide barrier between two phases, and each block's place in its cluster; C++
  -- headers of the toolkit, so no extern "C" around the source
  local SOURCE = [[
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void two_phase(int *a, int *b, int n) {
      cg::grid_group grid = cg::this_grid();
      for (int i = grid.thread_rank(); i < n; i += grid.size()) a[i] = 3 * i + 1;
      grid.sync();      // every block's writes are done: b reads its neighbours' elements
      for (int i = grid.thread_rank(); i < n; i += grid.size()) b[i] = a[(i + 1) % n] - a[i];
    }
    extern "C" __global__ void cluster_ranks(int *rank, int *size) {
      cg::cluster_group cluster = cg::this_cluster();
      int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
      if (threadIdx.x == 0) { rank[b] = cluster.block_rank(); size[b] = cluster.num_blocks(); }
    }]]
  local function kernels()
    if gpu.cuda_include_dir() == nil then return nil end
    return gpu.SourceModule(SOURCE, {no_extern_c = true})
  end

  helpers.gpu_it("cooperative = true lets a grid of co-resident blocks sync", function()
    local m = kernels()
    if m == nil then return pending("no toolkit headers for cooperative_groups.h") end
    local f = m.two_phase
    local device = gpu.get_device()
    local grid = f:max_active_blocks_per_multiprocessor(256) * device:attribute("MULTIPROCESSOR_COUNT")
    local n = 1000003 + math.random(0, 1000)        -- more elements than threads: strided loops
    local a, b = gpu.zeros(n, "int32"), gpu.zeros(n, "int32")
    f(a, b, n, {block = 256, grid = grid, cooperative = true})
    local ha, hb = a:get(), b:get()
    for i = 1, n do
      assert(ha[i] == 3 * (i - 1) + 1, "a " .. i)
      local want = i < n and 3 or 1 - (3 * (n - 1) + 1)
      assert(hb[i] == want, ("b %d: %d, expected %d"):format(i, hb[i], want))
    end
    -- more blocks than can be resident at once: the driver refuses the launch
    helpers.assert_gpu_error("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "cuLaunchKernelEx",
                             function() f(a, b, n, {block = 256, grid = grid + 1, cooperative = true}) end)
    f(a, b, n, {block = 256, grid = grid, cooperative = false})   -- an ordinary launch again
    gpu.synchronize()
  end)

  helpers.gpu_it("cluster = {x, y, z} groups blocks into thread block clusters (compute capability 9)", function()
    if gpu.get_device():compute_capability() < 9 then return pending("clusters need compute capability 9.0") end
    local m = kernels()
    if m == nil then return pending("no toolkit headers for cooperative_groups.h") end
    local f = m.cluster_ranks
    for _, case in ipairs{{{8, 1, 1}, {2, 1, 1}}, {{4, 6, 1}, {2, 2, 1}}, {{8, 2, 2}, {4}}} do
      local grid, cluster = case[1], case[2]
      local cx, cy, cz = cluster[1], cluster[2] or 1, cluster[3] or 1
      local blocks = grid[1] * grid[2] * grid[3]
      local rank, size = gpu.full(blocks, -1, "int32"), gpu.full(blocks, -1, "int32")
      f(rank, size, {block = 32, grid = grid, cluster = cluster})
      local hr, hs = rank:get(), size:get()
      for z = 0, grid[3] - 1 do
        for y = 0, grid[2] - 1 do
          for x = 0, grid[1] - 1 do
            local b = x + grid[1] * (y + grid[2] * z) + 1
            local want = x % cx + cx * (y % cy + cy * (z % cz))
            assert(hr[b] == want, ("grid %d %d %d, block %d: rank %d, expected %d"):format(
              grid[1], grid[2], grid[3], b, hr[b], want))
            assert(hs[b] == cx * cy * cz, "cluster size")
          end
        end
      end
    end
    -- a grid that clusters of that shape do not tile: the driver's error, named
    local rank, size = gpu.zeros(3, "int32"), gpu.zeros(3, "int32")
    local err = helpers.error_of(function() f(rank, size, {block = 32, grid = 3, cluster = 2}) end)
    assert.is_true(gpu.Error.is(err), tostring(err))
    assert.are.equal("cuLaunchKernelEx", err.call)
  end)

  helpers.gpu_it("check the options", function()
    local f = module().twice
    local out <close> = gpu.mem_alloc(16)
    helpers.assert_error("bad launch options for 'twice' (cooperative must be a boolean, got number)",
                         function() f(out, 4, {block = 4, cooperative = 1}) end)
    helpers.assert_error("bad launch options for 'twice' (cluster.x = 0 must be at least 1)",
                         function() f(out, 4, {block = 4, cluster = 0}) end)
    helpers.assert_error("bad launch options for 'twice' (cluster must be a number or a table of 1 to 3 numbers, got string)",
                         function() f(out, 4, {block = 4, cluster = "2"}) end)
  end)
end)

describe("cooperative and clustered launches on the stand-in driver", function()
  it("go to cuLaunchKernelEx with their attributes; other launches stay on cuLaunchKernel", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local f = gpu.SourceModule("__global__ void k(int *a) { a[0] = 1; }").k
      local a = gpu.zeros(4, "int32")
      f(a, {block = 32, grid = 4, cooperative = true})
      f(a, {block = {8, 4}, grid = {4, 2}, cluster = {2, 2}, shared = 64})
      f(a, {block = 32, grid = 8, cluster = 4, cooperative = true})
      f(a, {block = 32, grid = 8, cooperative = false})
      print("done")
    ]], {FAKE_CUDA_TRACE_LAUNCH_EX = "1"})
    assert(ok, out)
    assert.are.equal(table.concat({
      "fakecuda: cuLaunchKernelEx k grid 4 1 1 block 32 1 1 shared 0 cooperative 1",
      "fakecuda: cuLaunchKernelEx k grid 4 2 1 block 8 4 1 shared 64 cluster 2 2 1",
      "fakecuda: cuLaunchKernelEx k grid 8 1 1 block 32 1 1 shared 0 cooperative 1 cluster 4 1 1",
      "done", ""}, "\n"), out)
  end)
end)

describe("Function lookups", function()
  helpers.gpu_it("find methods in a table and attributes on demand, per Function", function()
    local mod = module()
    local f, g = mod.axpy, mod.twice
    local mt = getmetatable(f)
    assert.are.equal("gpu.Function", mt.__name)
    assert.are_not.equal(mt, getmetatable(g))           -- each Function has its own
    -- the methods sit in a plain table: a method lookup calls no function
    assert.are.equal("table", type(mt.__index))
    assert.are.equal(f.prepared_call, rawget(mt.__index, "prepared_call"))
    assert.are.equal(f.set_attribute, g.set_attribute)  -- the same C function for all ...
    -- ... but the launch entry points, bound to their Function (a one-comparison check)
    assert.are_not.equal(f.prepared_call, g.prepared_call)
    assert.are_not.equal(f.prepared_async_call, g.prepared_async_call)
    assert.are_not.equal(mt.__call, getmetatable(g).__call)
    assert.is_nil(rawget(mt.__index, "num_regs"))      -- attributes are not cached ...
    assert.are.equal("axpy", f.name)
    assert.are.equal("twice", g.name)
    assert.are.equal("PPPfi", f.signature)
    -- ... so set_attribute shows at once
    f:set_attribute("max_dynamic_shared_size_bytes", 1024)
    assert.are.equal(1024, f.max_dynamic_shared_size_bytes)
    f:set_attribute("max_dynamic_shared_size_bytes", 0)
    assert.are.equal(0, f.max_dynamic_shared_size_bytes)
    -- a bound entry point called with another Function launches that one, checked as usual
    local data = gpu.to_device(gpu.host.from_table({3, -4, 5}, "int32"))
    f.prepared_call(g, 1, 3, data, 3)
    f.prepared_async_call(g, 1, 3, nil, data, 3)
    getmetatable(f).__call(g, data, 3, {block = 3})
    assert.are.same({24, -32, 40}, gpu.from_device(data, 3, "int32"):totable())
    -- a Function's methods refuse anything else, even a userdata of another gpu type
    local buf <close> = gpu.mem_alloc(4)
    helpers.assert_error("bad argument #1 to 'prepared_call' (gpu.Function expected, got gpu.Buffer)",
                         function() f.prepared_call(buf, 1, 1) end)
    helpers.assert_error("bad argument #1 to 'prepared_call' (gpu.Function expected, got table)",
                         function() f.prepared_call(mt.__index, 1, 1) end)
    -- what marks a Function (its metatable's metatable) cannot be reached or replaced
    assert.are.equal("gpu.Function", getmetatable(mt))
    helpers.assert_error("cannot change a protected metatable", function() setmetatable(mt, {}) end)
    local copy = setmetatable({}, {__index = mt})
    assert.are.equal("gpu.Function", copy.__name)        -- a look-alike is not a Function
    helpers.assert_error("bad argument #1 to 'prepared_call' (gpu.Function expected, got table)",
                         function() f.prepared_call(copy, 1, 1) end)
    -- the fields table's own lookup function wants a Function's fields table
    local lookup = getmetatable(mt.__index).__index
    helpers.assert_error("bad argument #1 to 'lookup' (gpu.Function expected, got nil)",
                         function() local name = lookup({}, "name"); return name end)
    helpers.assert_error("bad argument #1 to 'lookup' (table expected, got number)",
                         function() local name = lookup(5, "name"); return name end)
  end)
end)

describe("freeing a Module", function()
  helpers.gpu_it("is idempotent; its Functions and globals are unusable afterwards", function()
    local mod = gpu.SourceModule(source, {cache = false})
    local f = mod.axpy
    local buf = mod:get_global("coeff")
    local out <close> = gpu.mem_alloc(16)
    mod:free()
    mod:free()
    assert.is_false(mod:is_loaded())
    assert.are.equal("gpu.Module(freed)", tostring(mod))
    helpers.assert_error("calling 'get_function' on bad self (module has been freed)",
                         function() mod:get_function("axpy") end)
    helpers.assert_error("calling 'get_global' on bad self (module has been freed)",
                         function() mod:get_global("coeff") end)
    helpers.assert_error("kernel 'axpy' belongs to a module that has been freed",
                         function() f(out, out, out, 1, 4, {block = 4}) end)
    helpers.assert_error("kernel 'axpy' belongs to a module that has been freed",
                         function() f:prepared_call(1, 4, out, out, out, 1, 4) end)
    helpers.assert_error("kernel 'axpy' belongs to a module that has been freed",
                         function() return f.num_regs end)
    helpers.assert_error("kernel 'axpy' belongs to a module that has been freed",
                         function() return f.handle end)
    assert.are.equal("gpu.Function(axpy, module freed)", tostring(f))
    helpers.assert_error("bad argument #1 to 'memcpy_htod' (buffer has been freed)",
                         function() gpu.memcpy_htod(buf, "0123") end)
    -- a new module of the same source is loaded afresh
    local again = gpu.SourceModule(source, {cache = false})
    again.axpy(out, out, out, 1, 4, {block = 4})
    gpu.synchronize()
  end)

  helpers.gpu_it("a dropped Module stays loaded while one of its Functions is alive", function()
    local f = gpu.SourceModule(source, {cache = false}).twice
    collectgarbage()
    collectgarbage()
    local data = host.from_table({1, 2, 3}, "int32")
    f(gpu.InOut(data), 3, {block = 3})
    assert.are.same({2, 4, 6}, data:totable())
  end)
end)

describe("argument handlers", function()
  it("wrap host data without a device", function()
    local h = host.from_table({1, 2}, "int32")
    assert.are.equal(h, gpu.In(h).array)
    assert.are.equal("abc", gpu.In("abc").array)
    assert.are.equal("gpu.InOut([1 2])", tostring(gpu.InOut(h)))
    helpers.assert_error("bad argument #1 to 'In' (host array or string expected, got number)",
                         function() gpu.In(5) end)
    helpers.assert_error("bad argument #1 to 'Out' (gpu.HostArray expected, got string)",
                         function() gpu.Out("abc") end)
    helpers.assert_error("bad argument #1 to 'InOut' (gpu.HostArray expected, got no value)",
                         function() gpu.InOut() end)
    assert.are.equal(h, gpu.Out(h).array)
  end)
end)
