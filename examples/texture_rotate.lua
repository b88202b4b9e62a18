-- Rotating an image through a texture: the kernel asks the texture hardware for the source
-- image at each output pixel's rotated position, and the hardware filters bilinearly between
-- the four nearest pixels and answers 0 outside the image (PyCUDA's texture examples do this
-- with texture references; lua-gpu uses texture objects, as CuPy does).  Not one of the seeds'
-- examples.
local gpu = require "gpu"

local source = [[
__global__ void rotate(cudaTextureObject_t image, float *out, int w, int h, float c, float s)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    /* the source position of pixel (x, y), rotated about the image's centre */
    float dx = x - 0.5f * (w - 1), dy = y - 0.5f * (h - 1);
    float sx = c * dx + s * dy + 0.5f * (w - 1), sy = -s * dx + c * dy + 0.5f * (h - 1);
    out[y * w + x] = tex2D<float>(image, sx + 0.5f, sy + 0.5f);   /* texel centres at +0.5 */
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled rotate for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

local w, h, angle = 160, 90, math.rad(30)
local image = gpu.host.empty({h, w}, "float32")
for y = 0, h - 1 do                     -- rings and noise: something worth filtering
  for x = 0, w - 1 do
    image[y * w + x + 1] = math.sin(math.sqrt((x - w / 2) ^ 2 + (y - h / 2) ^ 2) / 4) + math.random()
  end
end

local pixels <close> = gpu.to_cuda_array(image)
local texture <close> = gpu.TextureObject(pixels, {filter_mode = "linear", address_mode = "border"})
local out = gpu.gpuarray.empty({h, w}, "float32")
local rotate = gpu.SourceModule(source):get_function("rotate")
local c, s = string.unpack("ff", string.pack("ff", math.cos(angle), math.sin(angle)))
rotate(texture, out, w, h, c, s, {block = {16, 16}, grid = {(w + 15) // 16, (h + 15) // 16}})
local got = out:get()

-- The same in Lua: bilinear filtering with the hardware's 8-bit fractional weights, 0 outside.
local function f32(v) return string.unpack("f", string.pack("f", v)) end
local function pixel(x, y)
  if x < 0 or x >= w or y < 0 or y >= h then return 0 end
  return image[y * w + x + 1]
end
local worst = 0
for y = 0, h - 1 do
  for x = 0, w - 1 do
    local dx, dy = f32(x - 0.5 * (w - 1)), f32(y - 0.5 * (h - 1))
    local sx = f32(c * dx + s * dy + 0.5 * (w - 1))
    local sy = f32(-s * dx + c * dy + 0.5 * (h - 1))
    local i, j = math.floor(sx), math.floor(sy)
    local a = math.floor((sx - i) * 256 + 0.5) / 256
    local b = math.floor((sy - j) * 256 + 0.5) / 256
    local p00, p10, p01, p11 = pixel(i, j), pixel(i + 1, j), pixel(i, j + 1), pixel(i + 1, j + 1)
    local want = (1 - a) * (1 - b) * p00 + a * (1 - b) * p10 + (1 - a) * b * p01 + a * b * p11
    local spread = math.max(p00, p10, p01, p11) - math.min(p00, p10, p01, p11)
    -- a weight rounded the other way moves the value by spread / 256; the rest is rounding
    -- of float32 arithmetic in the kernel's position and the filter's sum
    local err = math.abs(got[y * w + x + 1] - want)
    if err > spread / 256 + 1e-3 then
      io.stderr:write(("FAILED: pixel (%d, %d) is %.7g, expected %.7g\n"):format(x, y,
                      got[y * w + x + 1], want))
      os.exit(1)
    end
    worst = math.max(worst, err)
  end
end
print(("OK: rotated a %d x %d image by 30 degrees through a texture (largest difference from "
       .. "Lua's bilinear filter %.2g)"):format(w, h, worst))
