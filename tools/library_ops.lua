-- tools/library_ops.lua: device time of the NumPy library functions (gpu.linalg on cuSOLVER,
-- the contractions, gpu.random's samplers, the numeric functions) at sizes their users run,
-- beside CuPy's (tools/library_ops.py): where tools/large_ops.lua surveys memory-bound
-- operations, these are mostly bound by a library's or a kernel's arithmetic, or by a stack
-- of small problems.
--
--   lua5.4 tools/library_ops.lua      (from the checkout on the GPU machine, after `make`)
--   python3 tools/library_ops.py      (CuPy's figures for the same calls)
--
-- Each line: the median of 5 timings between events (after one untimed call) of a call, in
-- ms.  LIBRARY_OPS_ONLY=<Lua pattern> times only the calls whose names match it.
package.path = "lua/?.lua;lua/?/init.lua;tools/?.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local ga, linalg, random = gpu.gpuarray, gpu.linalg, gpu.random
local device_ms = require "device_time"
local only = os.getenv("LIBRARY_OPS_ONLY")

-- a well-conditioned n x n matrix (the identity's n on the diagonal) and a positive definite one
local function matrices(n, dtype)
  local a = random.rand({n, n}, "float64") * 2 - 1 + ga.eye(n, {dtype = "float64"}) * n
  local spd = ga.matmul(a, a:transpose():copy()) + ga.eye(n, {dtype = "float64"}) * n
  return a:astype(dtype), spd:astype(dtype)
end
local a32, spd32 = matrices(4096, "float32")
local a64, spd64 = matrices(4096, "float64")
local b64 = random.rand(4096, "float64")
local e64, espd64 = matrices(1024, "float64")
local tall64 = random.rand({4096, 256}, "float64")
local s4, spd4 = matrices(4, "float32")             -- stacks of small matrices below
local stack4 = ga.tile(s4:reshape(1, 4, 4), {10000, 1, 1}) + random.rand({10000, 4, 4}, "float32") * 0.1
local spd_stack4 = ga.tile(spd4:reshape(1, 4, 4), {10000, 1, 1})
local rhs4 = random.rand({10000, 4, 1}, "float32")
local m32 = random.rand({4096, 4096}, "float32")
local batch64 = random.rand({256, 64, 64}, "float32")
local t3 = random.rand({64, 128, 256}, "float32")
local t3b = random.rand({128, 256, 32}, "float32")
local deep, deep_cols4 = random.rand({64, 32768}, "float32"), random.rand({32768, 4}, "float32")
local wide, wide_cols = random.rand({512, 16384}, "float32"), random.rand({16384, 512}, "float32")
local n = 1 << 26
local u = random.rand(n, "float32")
local signal, taps = random.rand(1 << 20, "float32"), random.rand(1000, "float32")
local obs = random.rand({64, 1 << 20}, "float64")
local bins = ga.linspace(0, 1, 101)
local ints = (random.rand(1 << 24, "float64") * (1 << 26)):astype("int32")
local ints2 = (random.rand(1 << 24, "float64") * (1 << 26)):astype("int32")
local poly = random.rand(9, "float32")
local tests = random.rand(1000, "float32")
local vec3 = random.rand({1 << 24, 3}, "float32")

-- device_time frees the first result; the others are freed here
local function first(x, ...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if ga.is_array(v) then v:free() end
  end
  if type(x) == "number" or x == nil then return gpu.zeros(1, "float32") end
  return x
end

local cases = {   -- {name, call}
  {"solve f64 4096", function() return linalg.solve(a64, b64) end},
  {"inv f32 4096", function() return linalg.inv(a32) end},
  {"inv f64 4096", function() return linalg.inv(a64) end},
  {"det f64 4096", function() return linalg.det(a64) end},
  {"cholesky f32 4096", function() return linalg.cholesky(spd32) end},
  {"cholesky f64 4096", function() return linalg.cholesky(spd64) end},
  {"qr f64 4096", function() return first(linalg.qr(a64)) end},
  {"eigh f64 1024", function() return first(linalg.eigh(espd64)) end},
  {"svd f64 1024", function() return first(linalg.svd(e64)) end},
  {"eig f64 1024", function() return first(linalg.eig(e64)) end},
  {"lstsq f64 4096x256", function() return first(linalg.lstsq(tall64, b64)) end},
  {"pinv f64 1024", function() return linalg.pinv(e64) end},
  {"inv 10000 4x4", function() return linalg.inv(stack4) end},
  {"solve 10000 4x4", function() return linalg.solve(stack4, rhs4) end},
  {"det 10000 4x4", function() return linalg.det(stack4) end},
  {"cholesky 10000 4x4", function() return linalg.cholesky(spd_stack4) end},
  {"eigh 10000 4x4", function() return first(linalg.eigh(spd_stack4)) end},
  {"einsum ij,jk 4096", function() return ga.einsum("ij,jk->ik", m32, m32) end},
  {"einsum bij,bjk", function() return ga.einsum("bij,bjk->bik", batch64, batch64) end},
  {"einsum ij->ji copy", function() return ga.einsum("ij->ji", m32):copy() end},
  {"einsum ii->i", function() return ga.einsum("ii->i", m32):copy() end},
  {"tensordot 2 axes", function() return ga.tensordot(t3, t3b, 2) end},
  {"matmul 64x32768x4", function() return ga.matmul(deep, deep_cols4) end},
  {"matmul 512x16384x512", function() return ga.matmul(wide, wide_cols) end},
  {"normal 2^26", function() return random.normal(0, 1, n, "float32") end},
  {"uniform 2^26", function() return random.uniform(-1, 1, n, "float32") end},
  {"randint 2^26", function() return random.randint(0, 1000, n, "int32") end},
  {"permutation 2^24", function() return random.permutation(1 << 24) end},
  {"choice 2^20 of 2^24", function() return random.choice(1 << 24, 1 << 20, {replace = false}) end},
  {"choice 1000 of 2^30", function() return random.choice(1 << 30, 1000, {replace = false}) end},
  {"standard_gamma 2^26", function() return random.standard_gamma(2.5, n, "float32") end},
  {"exponential 2^26", function() return random.exponential(1, n, "float32") end},
  {"poisson 2^26", function() return random.poisson(10, n) end},
  {"binomial 2^26", function() return random.binomial(100, 0.3, n) end},
  {"beta 2^26", function() return random.beta(2, 3, n, "float32") end},
  {"erf 2^26", function() return gpu.cumath.erf(u) end},
  {"digamma 2^26", function() return gpu.cumath.digamma(u) end},
  {"lgamma 2^26", function() return gpu.cumath.lgamma(u) end},
  {"logaddexp 2^26", function() return gpu.cumath.logaddexp(u, u) end},
  {"intersect1d 2^24", function() return ga.intersect1d(ints, ints2) end},
  {"union1d 2^24", function() return ga.union1d(ints, ints2) end},
  {"lexsort 2 keys 2^24", function() return ga.lexsort({ints, ints2}) end},
  {"polyval deg 8 2^26", function() return ga.polyval(poly, u) end},
  {"gradient 8192^2", function() return first(ga.gradient(m32)) end},
  {"convolve 2^20 1000", function() return ga.convolve(signal, taps) end},
  {"cov 64 x 2^20", function() return ga.cov(obs) end},
  {"isin 2^26 1000", function() return ga.isin(u, tests) end},
  {"digitize 2^26 101", function() return ga.digitize(u, bins) end},
  {"around 2^26", function() return ga.around(u, 2) end},
  {"cross 2^24", function() return ga.cross(vec3, vec3) end},
}
for _, c in ipairs(cases) do
  if only == nil or c[1]:match(only) then
    local ok, ms = pcall(device_ms, c[2], 5)
    if ok then
      print(("%-22s %10.3f ms"):format(c[1], ms))
    else
      print(("%-22s error: %s"):format(c[1], tostring(ms)))
    end
  end
end
