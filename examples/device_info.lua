-- What CUDA this process finds: the libraries it loaded (NVRTC, cuBLAS), their versions and
-- the driver's, and each device's name, compute capability, memory and multiprocessors.
-- Twin of seeds/004 (CUDA Python 简介), section "3. cuda.pathfinder:CUDA组件定位" (finding the
-- CUDA libraries): lua-gpu finds NVRTC, cuBLAS and the driver itself at run time (README,
-- "Environment"), and this is what it found.  Works without a GPU (NVRTC only).
local gpu = require "gpu"

print(("lua-gpu %s, NVRTC %d from %s"):format(gpu.VERSION, gpu.nvrtc_version(), gpu.nvrtc_path()))
local cublas_version, cublas_where = gpu.cublas_version()
if cublas_version then
  print(("cuBLAS %d from %s"):format(cublas_version, cublas_where))
else
  print(("no cuBLAS: %s"):format(cublas_where))
end

local available, why = gpu.available()
if not available then
  print(("No CUDA device found (%s)."):format(why))
  return
end

print(("CUDA driver %d, %d device(s)"):format(gpu.driver_version(), gpu.device_count()))
local free, total = gpu.mem_get_info()
for ordinal = 0, gpu.device_count() - 1 do
  local device = gpu.Device(ordinal)
  local major, minor = device:compute_capability()
  print(("device %d: %s, compute capability %d.%d, %.1f GiB, %d multiprocessors, PCI %s")
        :format(ordinal, device:name(), major, minor, device:total_memory() / 2^30,
                device:attribute("MULTIPROCESSOR_COUNT"), device:pci_bus_id()))
end
print(("current device %d: %.1f of %.1f GiB free"):format(gpu.get_device():ordinal(),
                                                          free / 2^30, total / 2^30))

local major = gpu.get_device():compute_capability()
if gpu.device_count() < 1 or total <= 0 or free > total or major < 1 then
  io.stderr:write("FAILED: device count, memory sizes or compute capability make no sense\n")
  os.exit(1)
end
print(("OK: %d device(s) found"):format(gpu.device_count()))
