-- SAXPY (y = a*x + y) the low-level way: NVRTC compiles the source to PTX, the module is
-- loaded from those bytes, and the kernel is launched on explicitly allocated buffers with
-- typed scalar arguments (a module loaded from bytes has no source to read types from).
-- Twin of seeds/004 (CUDA Python 简介), sections "cuda.bindings" (1) "nvrtc模块:运行时编译PTX"
-- and (2) "driver模块:设备管理与核函数执行".  cuInit, cuCtxCreate and cuCtxDestroy have no
-- counterpart: lua-gpu loads the driver and uses the device's primary context on first use.
local gpu = require "gpu"

-- the source declares extern "C" itself, as the seed's does
local kernel_code = [[
extern "C" __global__ void saxpy(float a, float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
]]

-- 1. NVRTC: source -> PTX.  The seed asks for compute_70, which CUDA 13's NVRTC no longer
-- supports; PTX for the oldest architecture this NVRTC knows runs on every newer GPU (the
-- driver compiles it when loading).  A compile error raises gpu.Error, whose log field holds
-- what nvrtcGetProgramLog gives the seed.
local oldest = math.huge
for _, arch in ipairs(gpu.nvrtc_supported_archs()) do oldest = math.min(oldest, arch) end
local compiled, ptx = pcall(gpu.compile, kernel_code, {arch = "compute_" .. oldest, target = "ptx",
                                                        no_extern_c = true, name = "saxpy.cu"})
if not compiled then
  error("compile failed: " .. (gpu.Error.is(ptx) and ptx.log or tostring(ptx)), 0)
end
print(("PTX for compute_%d, %d bytes; it begins:"):format(oldest, #ptx))
print(ptx:sub(1, 500))

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(kernel_code, {arch = "sm_90", no_extern_c = true})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled saxpy for sm_90 with NVRTC as well (%d bytes of cubin)."):format(#cubin))
  return
end

-- 2. Driver: device memory, copies, the module, the launch
print("device: " .. gpu.get_device():name())
local n = 1024
local a = 2.0
local x = gpu.host.empty(n, "float32")
local y = gpu.host.empty(n, "float32")
for i = 1, n do
  x[i] = math.random()
  y[i] = math.random()
end
local expected = gpu.host.empty(n, "float64")
for i = 1, n do expected[i] = a * x[i] + y[i] end

local x_dev <close> = gpu.mem_alloc(n * gpu.dtype("float32").itemsize)
local y_dev <close> = gpu.mem_alloc(n * gpu.dtype("float32").itemsize)
gpu.memcpy_htod(x_dev, x)
gpu.memcpy_htod(y_dev, y)

local module <close> = gpu.module_from_buffer(ptx)
local kernel = module:get_function("saxpy")

local block_dim = {256, 1, 1}
local grid_dim = {(n + block_dim[1] - 1) // block_dim[1], 1, 1}
kernel(gpu.float32(a), x_dev, y_dev, gpu.int32(n), {grid = grid_dim, block = block_dim, shared = 0})
gpu.synchronize()                            -- wait for the kernel

local y_result = gpu.host.empty(n, "float32")
gpu.memcpy_dtoh(y_result, y_dev)

local matches, why = gpu.allclose(y_result, expected, {atol = 1e-5})
if not matches then                          -- assert np.allclose(y_result, expected, atol=1e-5)
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: SAXPY through NVRTC PTX and the driver matches the CPU on all %d elements"):format(n))
-- x_dev, y_dev and module are freed here by <close>, as the seed's cuMemFree/cuModuleUnload
