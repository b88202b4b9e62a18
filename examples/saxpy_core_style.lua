-- SAXPY (y = a*x + y) the high-level way: pick the device, allocate, compile with
-- SourceModule, and launch with plain Lua numbers, whose types come from the kernel's
-- own declaration.
-- Twin of seeds/004 (CUDA Python 简介), section "cuda.core:高级别Pythonic接口"
-- (示例:用cuda.core实现SAXPY): Device(0).use() is gpu.set_device(0), Program.compile is
-- gpu.SourceModule, program.saxpy[launch_config](...) is mod.saxpy(..., {grid, block}).
local gpu = require "gpu"

local kernel_code = [[
extern "C" __global__ void saxpy(float a, float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(kernel_code, {arch = "sm_90", no_extern_c = true})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled saxpy for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

gpu.set_device(0)                            -- device = Device(0); device.use()
local device = gpu.get_device()

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

local x_dev = gpu.mem_alloc(x.nbytes)
local y_dev = gpu.mem_alloc(y.nbytes)
gpu.memcpy_htod(x_dev, x)                    -- x_dev.copy_from_host(x)
gpu.memcpy_htod(y_dev, y)

local program = gpu.SourceModule(kernel_code, {no_extern_c = true})
local launch_config = {grid = (n + 255) // 256, block = {256}}
program.saxpy(a, x_dev, y_dev, n, launch_config)
gpu.synchronize()                            -- device.synchronize()

local y_result = gpu.host.empty(n, "float32")
gpu.memcpy_dtoh(y_result, y_dev)             -- y_dev.copy_to_host(y_result)

local matches, why = gpu.allclose(y_result, expected, {atol = 1e-5})
if not matches then                          -- assert np.allclose(y_result, expected, atol=1e-5)
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: SAXPY on %s matches the CPU on all %d elements"):format(device:name(), n))
