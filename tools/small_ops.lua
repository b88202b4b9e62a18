-- tools/small_ops.lua: host time a call of 35 small operations (1000 float32 and the like),
-- the figure that decides small workloads, beside CuPy's (tools/small_ops.py).
--
--   lua5.4 tools/small_ops.lua [calls] [pattern] > LOG   (from the checkout, after `make`)
--   python3 tools/small_ops.py [calls] --lua-log LOG  (CuPy's, and the two side by side)
--
-- Each operation runs 200 times to warm up, then `calls` times (3000 by default) between two
-- synchronizations; the figure is CPU time a call in microseconds ("OP name us").  With the
-- stand-in driver (tools/fakecuda.c) it runs without a GPU: useful for comparing two commits
-- on this machine, not for comparing with CuPy.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "./?.so;build/?.so;" .. package.cpath
local gpu = require "gpu"
local ga = gpu.gpuarray
local h = gpu.host.empty(1000, "float32")
for i = 1, 1000 do h[i] = math.random() end
local a, b = ga.to_gpu(h), ga.to_gpu(h)
local m = ga.to_gpu(h):reshape({10, 100})
local big = ga.zeros({40, 70}, "float32")
local v = ga.to_gpu(gpu.host.empty(100, "float32")); v:fill(2)
local m64 = ga.zeros({64, 64}, "float32")
local m8 = ga.zeros({8, 8}, "float32")
local ai = ga.arange(1000, "int32")
local N = tonumber(arg[1]) or 3000
local only = arg[2]
local clock = os.clock
local function time(name, f)
  if only and not name:match(only) then return end
  for _ = 1, 200 do f() end
  gpu.synchronize(); collectgarbage()
  local t0 = clock()
  for _ = 1, N do f() end
  gpu.synchronize()
  print(("OP %-16s %7.2f"):format(name, (clock() - t0) / N * 1e6))
end
time("a+b", function() return a + b end)
time("sum_axis1", function() return ga.sum(m, {axis = 2}) end)
time("sum_axis0", function() return ga.sum(m, {axis = 1}) end)
time("max_axis", function() return ga.max(m, {axis = 2}) end)
time("mean_number", function() return a:mean() end)
time("sum_number", function() return a:sum() end)
time("sum_dev", function() return ga.sum(a) end)
time("dot_number", function() return a:dot(b) end)
time("argmax_number", function() return a:argmax() end)
time("var_number", function() return a:var() end)
time("index_read", function() return a[5] end)
time("index_write", function() a[5] = 1.5 end)
time("slice", function() return a:slice(10, 500) end)
time("slice_add", function() return a:slice(1, 500) + b:slice(501, 1000) end)
time("reshape", function() return a:reshape({10, 100}) end)
time("transpose_view", function() return m:transpose() end)
time("transpose_copy", function() return m:transpose():copy() end)
time("big_T_copy", function() return big:transpose():copy() end)
time("T_add", function() return m:transpose() + m:transpose() end)
time("matmul8", function() return ga.matmul(m8, m8) end)
time("matmul64", function() return ga.matmul(m64, m64) end)
time("matvec", function() return ga.matmul(m, v) end)
time("cumsum", function() return gpu.cumsum(a) end)
time("sort", function() return ga.sort(a) end)
time("argsort", function() return ga.argsort(a) end)
time("any", function() return a:gt(b):any() end)
time("abs", function() return ga.abs(a) end)
time("pow", function() return a ^ 2 end)
time("int_and", function() return ai & 7 end)
time("maximum", function() return ga.maximum(a, b) end)
time("full", function() return ga.full({1000}, 3, "float32") end)
time("ones", function() return ga.ones({1000}, "float32") end)
time("rand", function() return gpu.random.rand(1000) end)
time("randn", function() return gpu.random.randn(1000) end)
time("view_dtype", function() return a:view("int32") end)
time("ravel_T", function() return m:transpose():ravel() end)
local rk_dot = gpu.ReductionKernel("float32", 0, "a + b", "x[i] * y[i]",
                                   "const float *x, const float *y")
time("reduction_kernel", function() return rk_dot(a, b) end)
local ek_add = gpu.ElementwiseKernel("const float *x, const float *y, float *z", "z[i] = x[i] + y[i]")
local z = ga.empty({1000}, "float32")
time("elementwise_kernel", function() ek_add(a, b, z) end)
