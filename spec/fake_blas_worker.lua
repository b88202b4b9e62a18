-- spec/38's child (tools/fakecuda.c and tools/fakecublas.c for the driver and cuBLAS): the
-- layouts gpu.core.blas_matmul hands to the stand-in, whose float32 and float64 products run
-- on the host.  Prints one line a case; any wrong element raises.
local gpu = require "gpu"
local core = require "gpu.core"
math.randomseed(os.time())

local function values(count)
  local t = {}
  for i = 1, count do t[i] = math.random(-8, 8) end     -- small integers: exact sums
  return t
end

-- plain, transposed and wider-row operands (spec/matrix_layouts.lua), noise 99
local function layout(v, dtype, rows, cols, how)
  local noise = {}
  for i = 1, rows * 3 do noise[i] = 99 end
  return require("matrix_layouts").layout(v, dtype, rows, cols, how, noise)
end

-- the stacks' products, matrix p of a times matrix p of b (a_at, b_at: which matrix)
local function check(got, av, bv, n, k, m, stacks, a_at, b_at, what)
  for p = 1, stacks do
    local ao, bo = (a_at(p) - 1) * n * k, (b_at(p) - 1) * k * m
    for i = 1, n do
      for j = 1, m do
        local want = 0
        for l = 1, k do want = want + av[ao + (i - 1) * k + l] * bv[bo + (l - 1) * m + j] end
        local at = (p - 1) * n * m + (i - 1) * m + j
        if got[at] ~= want then
          error(("%s: matrix %d element %d, %d is %s, expected %s"):format(what, p, i, j, got[at], want))
        end
      end
    end
  end
  print("ok " .. what)
end

local function same(p) return p end
local n, k, m = 5, 7, 6
for _, dtype in ipairs{"float32", "float64"} do
  local av, bv = values(n * k), values(k * m)
  for _, how in ipairs{{"plain", "plain"}, {"transposed", "wide"}, {"wide", "transposed"},
                       {"transposed", "transposed"}} do
    local target = gpu.empty({n, m}, dtype)
    assert(core.blas_matmul(target, layout(av, dtype, n, k, how[1]), layout(bv, dtype, k, m, how[2])))
    check(target:get(), av, bv, n, k, m, 1, same, same, ("%s %s a %s b"):format(dtype, how[1], how[2]))
  end
end

-- stacks one stride apart, and a broadcast b (stride 0)
local av, bv = values(6 * n * k), values(6 * k * m)
local a = gpu.to_gpu(gpu.host.from_table(av, "float64")):reshape({2, 3, n, k})
local b = gpu.to_gpu(gpu.host.from_table(bv, "float64")):reshape({2, 3, k, m})
local target = gpu.empty({2, 3, n, m}, "float64")
assert(core.blas_matmul(target, a, b))
check(target:get(), av, bv, n, k, m, 6, same, same, "stacks")
local one_b = gpu.to_gpu(gpu.host.from_table({table.unpack(bv, 1, k * m)}, "float64")):reshape({k, m})
assert(core.blas_matmul(target, a, one_b))
check(target:get(), av, bv, n, k, m, 6, same, function() return 1 end, "broadcast b")
-- gpuarray.matmul of a product the tile kernel would take, its limit lowered
local matmul = require "gpu.matmul"
matmul.limits.cublas_work_float32 = 0
local big_a, big_b = values(40 * 7), values(7 * 40)
check(gpu.gpuarray.matmul(layout(big_a, "float32", 40, 7), layout(big_b, "float32", 7, 40)):get(),
      big_a, big_b, 40, 7, 40, 1, same, same, "gpuarray.matmul")
-- and matrix-vector products, a 1-d vector on either side, its limit lowered
matmul.limits.cublas_matvec = 0
local vec = values(7)
local function upload(v, dtype) return gpu.to_gpu(gpu.host.from_table(v, dtype)) end
for _, dtype in ipairs{"float32", "float64"} do
  for _, how in ipairs{"plain", "transposed"} do
    check(gpu.gpuarray.matmul(layout(big_a, dtype, 40, 7, how), upload(vec, dtype)):get(),
          big_a, vec, 40, 7, 1, 1, same, same, ("%s %s a v"):format(dtype, how))
    check(gpu.gpuarray.matmul(upload(vec, dtype), layout(big_b, dtype, 7, 40, how)):get(),
          vec, big_b, 1, 7, 40, 1, same, same, ("%s v %s b"):format(dtype, how))
  end
end
local stack = gpu.to_gpu(gpu.host.from_table(big_a, "float64")):reshape({4, 10, 7})
check(gpu.gpuarray.matmul(stack, upload(vec, "float64")):get(), big_a, vec, 40, 7, 1, 1, same, same,
      "a stack by a vector")
print(("version %s"):format(gpu.cublas_version()))
