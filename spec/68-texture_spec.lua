-- CUDA arrays, texture objects and surface objects (src/texture.c): gpu.CudaArray,
-- gpu.to_cuda_array, gpu.TextureObject, gpu.SurfaceObject.  On a GPU: fresh random data
-- round-trips through arrays of every texel dtype, shape and channel count exactly; kernels
-- read textures (point sampling exactly; linear filtering against a bilinear reference in
-- Lua, within the hardware's 8-bit fractional weights; every address mode; integer reads as
-- elements and as normalized floats; layered and 3-d arrays; linear and pitched GPUArray
-- memory) and write surfaces.  Without one, on the stand-in driver (tools/fakecuda.c, whose
-- cuMemcpy3D copies as the driver does): argument checks, lifetimes, copies' geometry.
local helpers = require "helpers"
local gpu = helpers.gpu

local TEXEL_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32"}
local RANGES = {int8 = {-128, 127}, uint8 = {0, 255}, int16 = {-32768, 32767},
                uint16 = {0, 65535}, int32 = {-2 ^ 31, 2 ^ 31 - 1}, uint32 = {0, 2 ^ 32 - 1}}

-- n random values that dtype holds exactly (floats as the device rounds them).
local function random_values(n, dtype)
  local r = RANGES[dtype]
  if r then return helpers.random_integers(n, math.tointeger(r[1]), math.tointeger(r[2])) end
  local t = helpers.random_floats(n, 100)
  return gpu.host.from_table(t, dtype):totable()      -- rounded to float16 or float32
end

local function product(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local source = [[
__global__ void point2d(cudaTextureObject_t t, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f);
}
__global__ void sample2d(cudaTextureObject_t t, const float *u, const float *v, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(t, u[i], v[i]);
}
__global__ void sample1d(cudaTextureObject_t t, const float *u, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<float>(t, u[i]);
}
__global__ void fetch_u8(cudaTextureObject_t t, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<unsigned char>(t, i + 0.5f);
}
__global__ void fetch_i32(cudaTextureObject_t t, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1D<int>(t, i - 2 + 0.5f);
}
__global__ void fetch_linear(cudaTextureObject_t t, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
__global__ void sum4(cudaTextureObject_t t, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) {
    float4 p = tex2D<float4>(t, x + 0.5f, y + 0.5f);
    out[y * w + x] = p.x + 2 * p.y + 4 * p.z + 8 * p.w;
  }
}
__global__ void point_layered(cudaTextureObject_t t, float *out, int w, int h, int layers) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, l = blockIdx.z;
  if (x < w) out[(l * h + y) * w + x] = tex2DLayered<float>(t, x + 0.5f, y + 0.5f, l);
}
__global__ void point3d(cudaTextureObject_t t, float *out, int w, int h, int d) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x < w) out[(z * h + y) * w + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}
__global__ void write_surface(cudaSurfaceObject_t s, const float *in, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w) surf2Dwrite(2.0f * in[y * w + x] + 1.0f, s, x * (int)sizeof(float), y);
}
]]

local module
local function kernels()
  module = module or gpu.SourceModule(source)
  return module
end

-- The texture's value at unnormalized coordinates (u, v) of the h x w table T (rows of
-- columns, 1-based) by bilinear filtering with clamped addresses, as CUDA's programming guide
-- defines it; weights(a) turns each fractional weight into what the hardware uses.
-- Also returns the spread of the four texels it mixes (largest less smallest).
local function bilinear(T, w, h, u, v, weights)
  local x, y = u - 0.5, v - 0.5
  local i, j = math.floor(x), math.floor(y)
  local a, b = weights(x - i), weights(y - j)
  local function at(col, row)
    col = math.max(0, math.min(w - 1, col))
    row = math.max(0, math.min(h - 1, row))
    return T[row * w + col + 1]
  end
  local t00, t10, t01, t11 = at(i, j), at(i + 1, j), at(i, j + 1), at(i + 1, j + 1)
  return (1 - a) * (1 - b) * t00 + a * (1 - b) * t10 + (1 - a) * b * t01 + a * b * t11,
         math.max(t00, t10, t01, t11) - math.min(t00, t10, t01, t11)
end

describe("CUDA arrays", function()
  helpers.gpu_it("round-trip every texel dtype, shape and channel count exactly", function()
    local shapes = {{{777}, {}}, {{37, 53}, {}}, {{5, 19, 23}, {}}, {{6, 41}, {layered = true}},
                    {{3, 17, 9}, {layered = true}}, {{29, 31}, {surface = true}}}
    for _, dtype in ipairs(TEXEL_DTYPES) do
      for _, channels in ipairs{1, 2, 4} do
        for _, case in ipairs(shapes) do
          local shape, options = case[1], {channels = channels}
          for k, v in pairs(case[2]) do options[k] = v end
          local what = ("%s x%d %s"):format(dtype, channels, table.concat(shape, "x"))
          local host_shape = {table.unpack(shape)}
          if channels > 1 then host_shape[#host_shape + 1] = channels end
          local values = random_values(product(host_shape), dtype)
          local h = gpu.host.from_table(values, dtype):reshape(host_shape)
          local arr <close> = gpu.CudaArray(shape, dtype, options)
          assert.are.equal(product(host_shape) * gpu.dtype(dtype).itemsize, arr.nbytes, what)
          arr:copy_from(h)
          -- back through device memory, then to the host by get()
          local d = gpu.gpuarray.zeros(host_shape, dtype)
          arr:copy_to(d)
          assert.are.same(values, helpers.flat(d:get()), what)
          local again <close> = gpu.CudaArray(shape, dtype, options)
          again:copy_from(d)
          local got = again:get()
          assert.are.same(host_shape, got.shape, what)
          assert.are.same(values, helpers.flat(got), what)
        end
      end
    end
  end)

  helpers.gpu_it("copy in a stream's order, and from views through to_cuda_array", function()
    local s <close> = gpu.Stream()
    local values = random_values(60 * 70, "float32")
    local a = gpu.to_gpu(gpu.host.from_table(values, "float32"):reshape{60, 70})
    local arr <close> = gpu.CudaArray({60, 70}, "float32")
    local out = gpu.gpuarray.zeros({60, 70}, "float32")
    arr:copy_from(a, s):copy_to(out, s)
    s:synchronize()
    assert.are.same(values, helpers.flat(out:get()))
    -- a transposed view: to_cuda_array copies it contiguous first
    local t <close> = gpu.to_cuda_array(a:transpose())
    assert.are.same({70, 60}, t.shape)
    local got = t:get()
    for i = 0, 69 do
      for j = 0, 59 do assert.are.equal(values[j * 70 + i + 1], got[i * 60 + j + 1]) end
    end
  end)
end)

describe("texture objects", function()
  helpers.gpu_it("read point samples exactly, in 1, 2 and 3 dimensions and layers", function()
    local m = kernels()
    local w, h, d = math.random(50, 300), math.random(20, 60), math.random(2, 6)
    -- 2-d, from a CUDA array
    local values = random_values(w * h, "float32")
    local arr <close> = gpu.to_cuda_array(gpu.host.from_table(values, "float32"):reshape{h, w})
    local tex <close> = gpu.TextureObject(arr)
    local out = gpu.gpuarray.zeros({h, w}, "float32")
    m.point2d(tex, out, w, h, {block = 128, grid = {(w + 127) // 128, h}})
    assert.are.same(values, helpers.flat(out:get()))
    -- layered
    local lv = random_values(w * h * d, "float32")
    local layers <close> = gpu.to_cuda_array(gpu.host.from_table(lv, "float32"):reshape{d, h, w},
                                             {layered = true})
    local ltex <close> = gpu.TextureObject(layers)
    local lout = gpu.gpuarray.zeros({d, h, w}, "float32")
    m.point_layered(ltex, lout, w, h, d, {block = 128, grid = {(w + 127) // 128, h, d}})
    assert.are.same(lv, helpers.flat(lout:get()))
    -- 3-d
    local cube <close> = gpu.to_cuda_array(gpu.host.from_table(lv, "float32"):reshape{d, h, w})
    local ctex <close> = gpu.TextureObject(cube)
    local cout = gpu.gpuarray.zeros({d, h, w}, "float32")
    m.point3d(ctex, cout, w, h, d, {block = 128, grid = {(w + 127) // 128, h, d}})
    assert.are.same(lv, helpers.flat(cout:get()))
    -- four channels: float4 texels
    local qv = random_values(w * h * 4, "float32")
    local quad <close> = gpu.to_cuda_array(gpu.host.from_table(qv, "float32"):reshape{h, w, 4},
                                           {channels = 4})
    local qtex <close> = gpu.TextureObject(quad)
    local qout = gpu.gpuarray.zeros({h, w}, "float32")
    m.sum4(qtex, qout, w, h, {block = 128, grid = {(w + 127) // 128, h}})
    local got = qout:get()
    for i = 0, w * h - 1 do
      local want = helpers.f32(helpers.f32(helpers.f32(qv[4 * i + 1] + 2 * qv[4 * i + 2]) +
                                           4 * qv[4 * i + 3]) + 8 * qv[4 * i + 4])
      helpers.assert_close(want, got[i + 1], 1e-6, "float4 texel " .. i)
    end
  end)

  helpers.gpu_it("filter linearly within the hardware's 8-bit fractional weights", function()
    local m = kernels()
    local w, h, n = math.random(40, 120), math.random(30, 90), 20000
    local values = random_values(w * h, "float32")
    local arr <close> = gpu.to_cuda_array(gpu.host.from_table(values, "float32"):reshape{h, w})
    local tex <close> = gpu.TextureObject(arr, {filter_mode = "linear"})
    local u, v = {}, {}
    for i = 1, n do   -- some past the edges, where addresses clamp
      u[i] = helpers.f32(math.random() * (w + 4) - 2)
      v[i] = helpers.f32(math.random() * (h + 4) - 2)
    end
    local out = gpu.gpuarray.zeros({n}, "float32")
    m.sample2d(tex, gpu.to_gpu(gpu.host.from_table(u, "float32")),
               gpu.to_gpu(gpu.host.from_table(v, "float32")), out, n, {block = 256, grid = (n + 255) // 256})
    local got = out:get()
    -- the programming guide's weights: 9-bit fixed point with 8 fractional bits, rounded to
    -- nearest (an H200 reproduces those weights exactly in 1-d; in 2-d its filter's own
    -- arithmetic differed from this double-precision sum by more than float32 rounding: 0.008
    -- on values up to 100, once)
    local nine_bit = function(a) return math.floor(a * 256 + 0.5) / 256 end
    local off_point = 0
    for i = 1, n do
      local want, spread = bilinear(values, w, h, u[i], v[i], nine_bit)
      -- bounded by one step of a weight (spread / 256), far below what a wrong weight, a
      -- half-texel shift or point sampling gives (a sizeable fraction of the spread)
      assert(math.abs(got[i] - want) <= spread / 256 + 1e-4,
             ("sample %d at (%.9g, %.9g): expected %.7g, got %.7g"):format(i, u[i], v[i], want, got[i]))
      local x, y = math.floor(u[i]), math.floor(v[i])
      if x >= 0 and x < w and y >= 0 and y < h and got[i] ~= values[y * w + x + 1] then
        off_point = off_point + 1
      end
    end
    assert(off_point > n / 2, "linear filtering returned the nearest texel too often")
  end)

  helpers.gpu_it("address out-of-range coordinates by wrap, mirror, clamp and border", function()
    local m = kernels()
    local w = math.random(20, 200)
    local values = random_values(w, "float32")
    local arr <close> = gpu.to_cuda_array(gpu.host.from_table(values, "float32"))
    local n = 4 * w
    local first = -((3 * w) // 2)          -- texels first .. first + n - 1: about [-1.5, 2.5) w
    local u = {}
    for i = 1, n do u[i] = helpers.f32((first + i - 1 + 0.5) / w) end   -- texel centres
    local du = gpu.to_gpu(gpu.host.from_table(u, "float32"))
    local function read(options)
      local tex <close> = gpu.TextureObject(arr, options)
      local out = gpu.gpuarray.zeros({n}, "float32")
      m.sample1d(tex, du, out, n, {block = 256, grid = (n + 255) // 256})
      return out:get()
    end
    local wrap = read{address_mode = "wrap", normalized_coords = true}
    local mirror = read{address_mode = "mirror", normalized_coords = true}
    local clamp = read{address_mode = "clamp", normalized_coords = true}
    local border = read{address_mode = "border", normalized_coords = true, border_color = -7.5}
    for i = 1, n do
      local k = first + i - 1                 -- the texel index u[i] points at, unwrapped
      local wrapped = k % w
      local period = k % (2 * w)
      local mirrored = period < w and period or 2 * w - 1 - period
      local clamped = math.max(0, math.min(w - 1, k))
      assert.are.equal(values[wrapped + 1], wrap[i], "wrap at " .. k)
      assert.are.equal(values[mirrored + 1], mirror[i], "mirror at " .. k)
      assert.are.equal(values[clamped + 1], clamp[i], "clamp at " .. k)
      assert.are.equal(k >= 0 and k < w and values[k + 1] or -7.5, border[i], "border at " .. k)
    end
  end)

  helpers.gpu_it("read integers as elements and as normalized floats", function()
    local m = kernels()
    local n = math.random(300, 3000)
    local bytes = random_values(n, "uint8")
    local arr <close> = gpu.to_cuda_array(gpu.host.from_table(bytes, "uint8"))
    local tex <close> = gpu.TextureObject(arr)
    local out = gpu.gpuarray.zeros({n}, "int32")
    m.fetch_u8(tex, out, n, {block = 256, grid = (n + 255) // 256})
    assert.are.same(bytes, helpers.flat(out:get()))
    local ntex <close> = gpu.TextureObject(arr, {read_mode = "normalized_float"})
    local u = {}
    for i = 1, n do u[i] = i - 0.5 end
    local f = gpu.gpuarray.zeros({n}, "float32")
    m.sample1d(ntex, gpu.to_gpu(gpu.host.from_table(u, "float32")), f, n,
               {block = 256, grid = (n + 255) // 256})
    local got = f:get()
    for i = 1, n do helpers.assert_close(bytes[i] / 255, got[i], 1e-6, "uint8 " .. bytes[i]) end
    -- signed 16-bit: v / 32767, with -32768 read as -1
    local shorts = random_values(n, "int16")
    shorts[1] = -32768
    local sarr <close> = gpu.to_cuda_array(gpu.host.from_table(shorts, "int16"))
    local stex <close> = gpu.TextureObject(sarr, {read_mode = "normalized_float"})
    m.sample1d(stex, gpu.to_gpu(gpu.host.from_table(u, "float32")), f, n,
               {block = 256, grid = (n + 255) // 256})
    got = f:get()
    for i = 1, n do
      helpers.assert_close(math.max(-1, shorts[i] / 32767), got[i], 1e-6, "int16 " .. shorts[i])
    end
    -- integers read as integers take a border colour as integers: two texels each side
    local ints = random_values(n, "int32")
    local iarr <close> = gpu.to_cuda_array(gpu.host.from_table(ints, "int32"))
    local border = math.random(-2 ^ 31, 2 ^ 31 - 1)
    local itex <close> = gpu.TextureObject(iarr, {address_mode = "border", border_color = border})
    local iout = gpu.gpuarray.zeros({n + 4}, "int32")
    m.fetch_i32(itex, iout, n + 4, {block = 256, grid = (n + 4 + 255) // 256})
    local want = {border, border}
    for i = 1, n do want[i + 2] = ints[i] end
    want[n + 3], want[n + 4] = border, border
    assert.are.same(want, helpers.flat(iout:get()))
  end)

  helpers.gpu_it("read GPUArray memory: 1-d linear by tex1Dfetch, 2-d pitched rows", function()
    local m = kernels()
    local n = math.random(1000, 100000)
    local values = random_values(n, "float32")
    local a = gpu.to_gpu(gpu.host.from_table(values, "float32"))
    local tex <close> = gpu.TextureObject(a)
    local out = gpu.gpuarray.zeros({n}, "float32")
    m.fetch_linear(tex, out, n, {block = 256, grid = (n + 255) // 256})
    assert.are.same(values, helpers.flat(out:get()))
    -- rows of 64 floats (256 bytes: a multiple of the pitch alignment)
    local h, w = math.random(10, 50), 64
    local grid_values = random_values(h * w, "float32")
    local g = gpu.to_gpu(gpu.host.from_table(grid_values, "float32"):reshape{h, w})
    local ptex <close> = gpu.TextureObject(g)
    local pout = gpu.gpuarray.zeros({h, w}, "float32")
    m.point2d(ptex, pout, w, h, {block = 64, grid = {1, h}})
    assert.are.same(grid_values, helpers.flat(pout:get()))
    -- the first 40 columns of the same rows: a view whose rows are 256 bytes apart
    local view = g:narrow(2, 1, 40)
    local vtex <close> = gpu.TextureObject(view)
    local vout = gpu.gpuarray.zeros({h, 40}, "float32")
    m.point2d(vtex, vout, 40, h, {block = 64, grid = {1, h}})
    local got = vout:get()
    for r = 0, h - 1 do
      for c = 0, 39 do assert.are.equal(grid_values[r * w + c + 1], got[r * 40 + c + 1]) end
    end
  end)

  helpers.gpu_it("pass as the driver's 8-byte parameters where no declaration types them", function()
    local image = gpu.compile(source)
    local raw = gpu.module_from_buffer(image)
    local n = math.random(100, 1000)
    local values = random_values(n, "float32")
    local a = gpu.to_gpu(gpu.host.from_table(values, "float32"))
    local tex <close> = gpu.TextureObject(a)
    local out = gpu.gpuarray.zeros({n}, "float32")
    raw.fetch_linear(tex, out, gpu.int32(n), {block = 256, grid = (n + 255) // 256})
    assert.are.same(values, helpers.flat(out:get()))
  end)
end)

describe("surface objects", function()
  helpers.gpu_it("let kernels write CUDA arrays", function()
    local m = kernels()
    local w, h = math.random(10, 300), math.random(10, 40)
    local values = random_values(w * h, "float32")
    local arr <close> = gpu.CudaArray({h, w}, "float32", {surface = true})
    local surf <close> = gpu.SurfaceObject(arr)
    m.write_surface(surf, gpu.to_gpu(gpu.host.from_table(values, "float32")), w, h,
                    {block = 128, grid = {(w + 127) // 128, h}})
    local got = arr:get()
    for i = 1, w * h do assert.are.equal(helpers.f32(2 * values[i] + 1), got[i]) end
  end)
end)

describe("lifetimes", function()
  helpers.gpu_it("refuse launches and graphs whose array was freed", function()
    local m = kernels()
    local arr = gpu.CudaArray({8, 8}, "float32")
    local tex <close> = gpu.TextureObject(arr)
    local out = gpu.gpuarray.zeros({8, 8}, "float32")
    local graph <close> = gpu.capture(function(s)
      m.point2d(tex, out, 8, 8, {block = 8, grid = {1, 8}, stream = s})
    end)
    graph:launch()
    gpu.synchronize()
    arr:free()
    helpers.assert_error("bad argument #1 to 'point2d' (the CUDA array it reads has been freed)",
                         function() m.point2d(tex, out, 8, 8, {block = 8, grid = {1, 8}}) end)
    helpers.assert_error("graph uses a CUDA array, texture or surface object that has been freed",
                         function() graph:launch() end)
  end)
end)

-- On the stand-in driver, for machines without a GPU.
describe("CUDA arrays and texture objects (stand-in driver)", function()
  it("check arguments, free once, and refuse use after free", function()
    local out, ok = helpers.run_with_fakes([=[
      local gpu = require "gpu"
      local function try(f)
        local ok, e = pcall(f)
        print(ok and "ok" or (tostring(e):gsub("^[^\n]*:%d+: ", "")))
      end
      local CudaArray, TextureObject, SurfaceObject = gpu.CudaArray, gpu.TextureObject, gpu.SurfaceObject
      try(function() local x = CudaArray({2, 2}, "float64") end)
      try(function() local x = CudaArray({2, 2, 2, 2}) end)
      try(function() local x = CudaArray({0, 2}) end)
      try(function() local x = CudaArray({2}, {layered = true}) end)
      try(function() local x = CudaArray({2}, {channels = 3}) end)
      try(function() local x = CudaArray({2}, {chanels = 3}) end)
      try(function() local x = CudaArray({2}, {surface = 1}) end)
      local a = CudaArray({3, 4}, "int16", {channels = 2, surface = true})
      print(a, a.dtype, a.channels, a.ndim, a.nbytes, a.layered, a.surface, table.concat(a.shape, " "))
      try(function() a:copy_from(gpu.gpuarray.zeros({3, 4}, "int16")) end)
      try(function() a:copy_from(gpu.gpuarray.zeros({3, 4, 2}, "int32")) end)
      try(function() a:copy_from(string.rep("x", 47)) end)
      try(function() a:copy_to("x") end)
      try(function() a:copy_to(gpu.mem_alloc(8)) end)
      try(function() a:copy_to(gpu.gpuarray.zeros({4, 3, 2}, "int16"):transpose()) end)
      local s = gpu.Stream()
      try(function() a:copy_to(gpu.host.zeros({3, 4, 2}, "int16"), s) end)
      try(function() a:copy_from(string.rep("x", 48), s) end)
      try(function() a:copy_from(gpu.host.pagelocked_zeros({3, 4, 2}, "int16"), s) end)
      local function texture(resource, options)
        local t = TextureObject(resource, options)
        return t
      end
      try(function() texture(3) end)
      try(function() texture(a, {address_mode = "wrap"}) end)
      try(function() texture(a, {address_mode = {"clamp", "warp"}}) end)
      try(function() texture(a, {address_mode = {}}) end)
      try(function() texture(a, {filter_mode = "cubic"}) end)
      try(function() texture(a, {filter_mode = "linear"}) end)
      try(function() texture(a, {read_mode = "float"}) end)
      try(function() texture(a, {border_color = {1, 2, 3, 4, 5}}) end)
      try(function() texture(a, {channels = 2}) end)
      try(function() texture(a, {normalized_coords = "yes"}) end)
      try(function() texture(a, {adress_mode = "clamp"}) end)
      try(function() texture(CudaArray({4}, "float32"), {read_mode = "normalized_float"}) end)
      try(function() texture(CudaArray({4}, "uint8"), {border_color = 256}) end)
      try(function() texture(CudaArray({4}, "int16"), {border_color = {1, 2.5}}) end)
      try(function() texture(CudaArray({4}, "uint8"), {border_color = 255}) end)
      try(function() texture(CudaArray({4}, "uint8"), {border_color = 2.5, read_mode = "normalized_float"}) end)
      try(function() texture(gpu.gpuarray.zeros({0}, "float32")) end)
      try(function() texture(gpu.gpuarray.zeros({6}, "float64")) end)
      try(function() texture(gpu.gpuarray.zeros({6}, "float32"), {filter_mode = "linear"}) end)
      try(function() texture(gpu.gpuarray.zeros({6, 5}, "float32")) end)
      try(function() texture(gpu.gpuarray.zeros({2, 6, 8}, "float32")) end)
      try(function() texture(gpu.gpuarray.zeros({6, 8, 3}, "float32"), {channels = 2}) end)
      try(function() texture(gpu.gpuarray.zeros({8, 6}, "float32"):transpose()) end)
      try(function() local s = SurfaceObject(CudaArray({4}, "float32")) end)
      try(function() local c = gpu.to_cuda_array(3) end)
      try(function() local c = gpu.to_cuda_array(gpu.host.zeros({3, 4}, "float32"), {channels = 2}) end)
      -- a kernel's parameter must be a 64-bit integer for an object
      local m = gpu.SourceModule([[
        __global__ void k(cudaTextureObject_t t, float *p, int n) {}
      ]])
      local t = texture(a, {filter_mode = "point"})
      local s = SurfaceObject(a)
      print(t, s, math.type(t.handle), t.resource == a)
      local p = gpu.mem_alloc(4)
      try(function() m.k(t, p, 1, {block = 1}) end)
      try(function() m.k(t, t, 1, {block = 1}) end)
      try(function() m.k(t, p, s, {block = 1}) end)
      -- freeing: once, in any order; objects over a freed array refuse to launch
      a:free(); a:free()
      print(a, t)
      try(function() m.k(t, p, 1, {block = 1}) end)
      try(function() return t.handle end)
      try(function() a:get() end)
      try(function() a:copy_from("") end)
      try(function() texture(a) end)
      try(function() local x = SurfaceObject(a) end)
      t:free(); t:free(); s:free(); s:close()
      print(t, s)
      try(function() m.k(s, p, 1, {block = 1}) end)
      do local c <close> = CudaArray({5}, "uint8") end
      local g = gpu.gpuarray.zeros({8}, "float32")
      local lt = texture(g)
      g:free()
      try(function() m.k(lt, p, 1, {block = 1}) end)
    ]=])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "bad argument #2 to 'CudaArray' (textures hold int8, uint8, int16, uint16, int32, uint32, float16 or float32 elements, not float64)",
      "bad argument #1 to 'CudaArray' (a CUDA array's shape is {w}, {h, w} or {d, h, w})",
      "bad argument #1 to 'CudaArray' (a CUDA array's dimensions must be positive)",
      "bad argument #1 to 'CudaArray' (a layered CUDA array's shape is {layers, w} or {layers, h, w})",
      "bad argument #2 to 'CudaArray' (option 'channels' must be 1, 2 or 4)",
      "bad argument #2 to 'CudaArray' (unknown option 'chanels')",
      "bad argument #2 to 'CudaArray' (option 'surface' must be a boolean)",
      "gpu.CudaArray(int16, 3 x 4, 2 channels, surface)\tint16\t2\t2\t48\tfalse\ttrue\t3 4",
      "bad argument #1 to 'copy_from' (12 elements, the CUDA array holds 24)",
      "bad argument #1 to 'copy_from' (int32 elements, the CUDA array holds int16)",
      "bad argument #1 to 'copy_from' (string of 47 bytes, the CUDA array holds 48)",
      "bad argument #1 to 'copy_to' (GPUArray, gpu.Buffer or host array expected, got string)",
      "bad argument #1 to 'copy_to' (buffer of 8 bytes, the CUDA array holds 48)",
      "bad argument #1 to 'copy_to' (array must be contiguous)",
      "bad argument #1 to 'copy_to' (async copies need page-locked host memory (gpu.host.pagelocked_empty))",
      "bad argument #1 to 'copy_from' (async copies need page-locked host memory (gpu.host.pagelocked_empty))",
      "ok",
      "bad argument #1 to 'TextureObject' (gpu.CudaArray or GPUArray expected, got number)",
      "bad argument #2 to 'TextureObject' (address modes 'wrap' and 'mirror' need normalized_coords = true)",
      "bad argument #2 to 'TextureObject' (option 'address_mode' must be \"wrap\", \"clamp\", \"mirror\" or \"border\", or a list of one to three of them)",
      "bad argument #2 to 'TextureObject' (option 'address_mode' must be \"wrap\", \"clamp\", \"mirror\" or \"border\", or a list of one to three of them)",
      "bad argument #2 to 'TextureObject' (option 'filter_mode' must be \"point\" or \"linear\")",
      "bad argument #2 to 'TextureObject' (filter_mode 'linear' on int16 elements needs read_mode 'normalized_float')",
      "bad argument #2 to 'TextureObject' (option 'read_mode' must be \"element\" or \"normalized_float\")",
      "bad argument #2 to 'TextureObject' (option 'border_color' must be a number or a list of one to four)",
      "bad argument #2 to 'TextureObject' (option 'channels' is for GPUArrays (a CUDA array knows its own))",
      "bad argument #2 to 'TextureObject' (option 'normalized_coords' must be a boolean)",
      "bad argument #2 to 'TextureObject' (unknown option 'adress_mode')",
      "bad argument #2 to 'TextureObject' (read_mode 'normalized_float' is for 8- and 16-bit integers, not float32)",
      "bad argument #2 to 'TextureObject' (option 'border_color' must hold uint8 values for integer reads)",
      "bad argument #2 to 'TextureObject' (option 'border_color' must hold int16 values for integer reads)",
      "ok",
      "ok",
      "bad argument #1 to 'TextureObject' (array is empty)",
      "bad argument #1 to 'TextureObject' (textures hold int8, uint8, int16, uint16, int32, uint32, float16 or float32 elements, not float64)",
      "bad argument #2 to 'TextureObject' (a texture over a 1-d GPUArray is read with tex1Dfetch: no linear filtering or normalized coordinates)",
      "bad argument #1 to 'TextureObject' (array's rows are 20 bytes apart, not a multiple of 32: copy it to a gpu.CudaArray)",
      "bad argument #1 to 'TextureObject' (a texture over a GPUArray reads 1-d (linear) or 2-d (pitched) arrays: copy others to a gpu.CudaArray)",
      "bad argument #2 to 'TextureObject' (option 'channels' is 2: the array's last dimension must be 2)",
      "bad argument #1 to 'TextureObject' (array's rows must be contiguous)",
      "bad argument #1 to 'SurfaceObject' (CUDA array made without surface = true)",
      "bad argument #1 to 'to_cuda_array' (GPUArray or host array expected, got number)",
      "bad argument #2 to 'to_cuda_array' (option 'channels' is 2: the array's last dimension must be 2)",
      "gpu.TextureObject(3)\tgpu.SurfaceObject(4)\tinteger\ttrue",
      "ok",
      "bad argument #2 to 'k' (expected pointer, got a texture object)",
      "bad argument #3 to 'k' (expected int32, got a surface object)",
      "gpu.CudaArray(freed)\tgpu.TextureObject(3)",
      "bad argument #1 to 'k' (the CUDA array it reads has been freed)",
      "the CUDA array it reads has been freed",
      "calling 'get' on bad self (CUDA array has been freed)",
      "calling 'copy_from' on bad self (CUDA array has been freed)",
      "bad argument #1 to 'TextureObject' (CUDA array has been freed)",
      "bad argument #1 to 'SurfaceObject' (CUDA array has been freed)",
      "gpu.TextureObject(freed)\tgpu.SurfaceObject(freed)",
      "bad argument #1 to 'k' (surface object has been freed)",
      "bad argument #1 to 'k' (the array it reads has been freed)",
    }, "\n") .. "\n", out)
  end)

  it("copy rows, slices and channels where the driver would put them", function()
    local out, ok = helpers.run_with_fakes([=[
      local gpu = require "gpu"
      local t = {}
      for i = 1, 3 * 5 * 7 * 2 do t[i] = i end
      local h = gpu.host.from_table(t, "int32"):reshape{3, 5, 7, 2}
      for _, options in ipairs{{channels = 2}, {channels = 2, layered = true}} do
        local a = gpu.to_cuda_array(h, options)
        local d = gpu.gpuarray.zeros({3, 5, 7, 2}, "int32")
        a:copy_to(d)
        local same = true
        for i = 1, #t do same = same and h[i] == a:get()[i] end
        print(tostring(a), same, a.nbytes, d.nbytes)
      end
      local b = gpu.CudaArray({7}, "float32"):copy_from(string.pack("<fffffff", 1, 2, 3, 4, 5, 6, 7))
      print(table.concat(b:get():totable(), " "))
    ]=])
    assert.is_truthy(ok, out)
    assert.are.equal("gpu.CudaArray(int32, 3 x 5 x 7, 2 channels)\ttrue\t840\t840\n" ..
                     "gpu.CudaArray(int32, 3 x 5 x 7, 2 channels, layered)\ttrue\t840\t840\n" ..
                     "1.0 2.0 3.0 4.0 5.0 6.0 7.0\n", out)
  end)
end)
