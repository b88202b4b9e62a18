-- Vector addition, the "simple PyCUDA example" of the seeds (python_3_pycuda模块): compile a
-- kernel at run time, copy two random vectors to the device, add them, copy the sum back
-- and check it against the CPU.  Without a GPU it still compiles the kernel with NVRTC.
local gpu = require "gpu"

local source = [[
__global__ void vector_add(float *a, float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
]]

local ok, why = gpu.available()
if not ok then
  local ptx = gpu.compile(source, {arch = "compute_90", target = "ptx"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled vector_add with NVRTC %d anyway: %d bytes of PTX for compute_90.")
        :format(gpu.nvrtc_version(), #ptx))
  return
end

local mod = gpu.SourceModule(source)
local vector_add = mod:get_function("vector_add")

local n = 100
local a = gpu.host.empty(n, "float32")
local b = gpu.host.empty(n, "float32")
local c = gpu.host.zeros(n, "float32")
for i = 1, n do
  a[i] = math.random() * 2 - 1
  b[i] = math.random() * 2 - 1
end

local a_gpu = gpu.mem_alloc(a.nbytes)
local b_gpu = gpu.mem_alloc(b.nbytes)
local c_gpu = gpu.mem_alloc(c.nbytes)
gpu.memcpy_htod(a_gpu, a)
gpu.memcpy_htod(b_gpu, b)

local block_size = 128
local grid_size = (n + block_size - 1) // block_size
vector_add(a_gpu, b_gpu, c_gpu, n, {block = {block_size, 1, 1}, grid = {grid_size, 1}})

gpu.memcpy_dtoh(c, c_gpu)

print("a:", a)
print("b:", b)
print("c:", c)

-- the GPU adds in float32, rounding once: so does storing the exact sum into a float32 array
local expected = gpu.host.empty(n, "float32")
for i = 1, n do expected[i] = a[i] + b[i] end
local same, why = gpu.array_equal(c, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: %s: all %d sums match the CPU."):format(gpu.get_device():name(), n))
