-- The sum of the squares of a 4000x4000 float32 array by a hand-written kernel (shared memory
-- and atomicAdd into one float), timed against the same sum computed in Lua on the CPU.
-- Twin of seeds/001 (PyCUDA blog), section "与numpy比较" (comparison with numpy).
-- The seed squares numpy.ones; here the entries are random -1, 0 or 1, so the exact answer
-- (the count of non-zero entries, at most 16e6 < 2^24) is still exact in float32 whatever
-- order the atomic additions happen in.  The seed returns early for idx >= N before
-- __syncthreads(); here every thread reaches the barrier (a partial barrier is undefined).
local gpu = require "gpu"

local source = [[
const int N = 4000 * 4000;
__global__ void sum_of_squares(float *a_in, float *a_out)
{
    __shared__ float sdatas[256];
    int idx = threadIdx.x + blockIdx.x * blockDim.x;  // index into global memory
    int tid = threadIdx.x;                            // index into shared memory
    sdatas[tid] = idx < N ? a_in[idx] * a_in[idx] : 0.0f;
    __syncthreads();
    if (idx < N) atomicAdd(&a_out[0], sdatas[tid]);
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled sum_of_squares for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

print("sum of squares of an array\n")
local h, w = 4000, 4000
local N = h * w
local a = gpu.host.empty({h, w}, "float32")
for i = 1, N do a[i] = math.random(-1, 1) end

-- CPU: the sum in Lua
local cpu_start = os.clock()
local cpu_sum = 0
for i = 1, N do
  local v = a[i]
  cpu_sum = cpu_sum + v * v
end
local cpu_seconds = os.clock() - cpu_start

-- GPU: copy in, one kernel, copy the single float back
local mod = gpu.SourceModule(source)
local func = mod:get_function("sum_of_squares")
local start, stop = gpu.Event({timing = true}), gpu.Event({timing = true})
start:record()
local a_in = gpu.to_device(a)
local a_out = gpu.to_device(gpu.host.zeros(1, "float32"))
func(a_in, a_out, {grid = {N // 256 + 1, 1, 1}, block = {256, 1, 1}})
local gpu_sum = gpu.from_device(a_out, 1, "float32")[1]
stop:record()
stop:synchronize()

print(("gpu: %.0f   cost time: %.3f ms (copies and kernel)"):format(gpu_sum, stop:time_since(start)))
print(("lua: %.0f   cost time: %.3f ms"):format(cpu_sum, cpu_seconds * 1e3))

if gpu_sum ~= cpu_sum then
  io.stderr:write(("FAILED: the GPU sum %.9g differs from the CPU sum %.9g\n"):format(gpu_sum, cpu_sum))
  os.exit(1)
end
print(("OK: sum_of_squares over %d elements matches the CPU exactly (%.0f)"):format(N, cpu_sum))
