-- Doubling a 4x4 float32 array in place: mem_alloc, memcpy_htod, a kernel, memcpy_dtoh.
-- Twin of seeds/001 (PyCUDA blog), section "mem_alloc,memcpy_htod,memcpy_dtoh": a 32 x 32
-- block for 16 elements, so the kernel's `idx >= N` guard keeps 1008 threads out.  The same
-- transfers open seeds/002 (PyCUDA Tutorial 中文版, "转移数据"); its kernel and 4 x 4 block
-- ("运行一个内核函数") are in doublify_prepared.lua.
-- The seeds double numpy.ones or numpy.random.randn data; random data makes the check count.
local gpu = require "gpu"

local source = [[
const int N = 16;
__global__ void doublify(float *a)
{
    int idx = threadIdx.x + threadIdx.y * blockDim.x;
    if (idx >= N) return;
    a[idx] *= 2;
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled doublify for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

-- a = numpy.random.randn(4, 4).astype(numpy.float32)
local a = gpu.host.empty({4, 4}, "float32")
for i = 1, a.size do a[i] = math.random() * 4 - 2 end

local a_gpu = gpu.mem_alloc(a.nbytes)        -- device memory for a
gpu.memcpy_htod(a_gpu, a)                    -- CPU --> GPU

local mod = gpu.SourceModule(source)
local func = mod:get_function("doublify")
func(a_gpu, {grid = {1, 1, 1}, block = {32, 32, 1}})

local a_doubled = gpu.host.empty(a.shape, a.dtype)   -- numpy.empty_like(a)
gpu.memcpy_dtoh(a_doubled, a_gpu)            -- GPU --> CPU
print(a_doubled)
print(a)

-- doubling a float32 is exact, so the GPU must match the CPU bit for bit
local expected = gpu.host.empty(a.shape, a.dtype)
for i = 1, a.size do expected[i] = 2 * a[i] end
local same, why = gpu.array_equal(a_doubled, expected)
if not same then
  io.stderr:write("FAILED: ", why, "\n")
  os.exit(1)
end
print(("OK: doublify doubled all %d elements (mem_alloc, memcpy_htod, memcpy_dtoh)"):format(a.size))
