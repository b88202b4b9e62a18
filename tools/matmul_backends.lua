-- Times gpuarray.matmul on cuBLAS and on the library's own kernels, alternating, for the
-- shapes that decide matmul.limits.cublas_work (where cuBLAS takes over from the tile kernel).
--   lua tools/matmul_backends.lua [rounds]
-- One line a case: device time a product (CUDA events, median of the repeats) for each
-- backend, and the host time a call (for the small ones, where the call itself is the cost).
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;" .. package.cpath
local gpu = require "gpu"
local ga = gpu.gpuarray
local matmul = require "gpu.matmul"

local rounds = tonumber(arg[1]) or 2
-- let every product the tile kernel (or a few columns' kernel by more than 8) takes try cuBLAS
matmul.limits.cublas_work, matmul.limits.cublas_work_float32 = 0, 0

local function random(shape, dtype)
  local x = gpu.random.rand(shape, "float32") - 0.5
  return x:astype(dtype)
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local start, stop = gpu.Event(), gpu.Event()
local function device_ms(fn, reps)
  local times = {}
  for _ = 1, reps do
    start:record()
    fn()
    stop:record()
    stop:synchronize()
    times[#times + 1] = stop:time_since(start)
  end
  return median(times)
end

local function host_us(fn, calls)
  gpu.synchronize()
  local t0 = os.clock()
  for _ = 1, calls do fn() end
  gpu.synchronize()
  return (os.clock() - t0) / calls * 1e6
end

local cases = {
  {"float32", {64, 64}, {64, 64}}, {"float32", {128, 128}, {128, 128}},
  {"float32", {256, 256}, {256, 256}}, {"float32", {512, 512}, {512, 512}},
  {"float32", {1024, 1024}, {1024, 1024}}, {"float32", {4096, 4096}, {4096, 4096}},
  {"float64", {256, 256}, {256, 256}}, {"float64", {1024, 1024}, {1024, 1024}},
  {"float64", {4096, 4096}, {4096, 4096}},
  {"float16", {256, 256}, {256, 256}}, {"float16", {1024, 1024}, {1024, 1024}},
  {"float16", {4096, 4096}, {4096, 4096}}, {"bfloat16", {4096, 4096}, {4096, 4096}},
  {"complex64", {1024, 1024}, {1024, 1024}}, {"complex128", {1024, 1024}, {1024, 1024}},
  {"float32", {16, 8192}, {8192, 8192}}, {"float32", {8192, 8192}, {8192, 16}},
  {"float32", {8192, 8192}, {8192, 32}}, {"float16", {8192, 8192}, {8192, 16}},
  {"float32", {10000, 8, 8}, {10000, 8, 8}}, {"float32", {64, 32, 32}, {64, 32, 32}},
  {"float32", {100, 128, 128}, {100, 128, 128}}, {"float32", {8, 512, 512}, {512, 512}},
  {"float32", {4096, 4096}, {4096, 4096}, transpose_a = true},
}

print(("%-34s %12s %12s %8s %10s %10s"):format("case", "kernels ms", "cublas ms", "k/c",
                                               "kern us", "cublas us"))
for _, case in ipairs(cases) do
  local dtype, ashape, bshape = case[1], case[2], case[3]
  local a, b = random(ashape, dtype), random(bshape, dtype)
  if case.transpose_a then a = random(ashape, dtype):transpose() end
  local function product() return ga.matmul(a, b) end
  local flops = 1
  for _, s in ipairs(ashape) do flops = flops * s end
  flops = flops * bshape[#bshape]
  local big = flops > 2 ^ 30
  local reps = big and 5 or 20
  local best = {kernels = {}, cublas = {}}
  local host = {kernels = math.huge, cublas = math.huge}
  for _ = 1, rounds do
    for _, backend in ipairs({"kernels", "cublas"}) do
      gpu.use_cublas(backend == "cublas")
      product(); product()
      best[backend][#best[backend] + 1] = device_ms(product, reps)
      if not big then host[backend] = math.min(host[backend], host_us(product, 200)) end
    end
  end
  gpu.use_cublas(true)
  -- the two agree (the largest difference, in float64 or complex128)
  gpu.use_cublas(false)
  local from_kernels = product()
  gpu.use_cublas(true)
  local wide = dtype:match("complex") and "complex128" or "float64"
  local diff = ga.abs(from_kernels:astype(wide) - product():astype(wide)):max()
  local k_ms, c_ms = median(best.kernels), median(best.cublas)
  local label = ("%s %s@%s%s"):format(dtype, table.concat(ashape, "x"), table.concat(bshape, "x"),
                                      case.transpose_a and " (a^T)" or "")
  print(("%-34s %12.4f %12.4f %8.2f %10.1f %10.1f  maxdiff %.2g"):format(label, k_ms, c_ms,
        k_ms / c_ms, host.kernels, host.cublas, diff))
end
print(("cuBLAS: %s"):format(table.concat({gpu.cublas_version()}, " ")))
