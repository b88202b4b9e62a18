-- tests/capture_worker.lua: graph captures racing other threads' work (make threads-capture).
-- Globals set by tests/threads.c: WORKER_ID, SECONDS, GPU_MODE.  Odd workers capture graphs
-- and replay them; even workers add arrays on the default stream.  Every worker also
-- synchronizes the whole device now and then, which the driver forbids while any thread has
-- a capture open (the 580 driver crashed in cuCtxSynchronize for it): lua-gpu must refuse
-- it with its message, never crash, and never let it break a capture.  Any other error, or
-- a wrong count, fails the worker.

local gpu = require "gpu"

local id, seconds, on_gpu = WORKER_ID, SECONDS, GPU_MODE
if not on_gpu then return "no GPU: nothing to capture" end
math.randomseed(id * 7919, os.time())

local REFUSED = "cannot synchronize the device while a stream capture is open (in any thread): " ..
                "end the capture first, or synchronize a stream"

local bump = gpu.SourceModule([[
__global__ void bump(int *counts, int n, int by) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counts[i] += by;
}]]):get_function("bump")

local refused = 0
local function synchronize_device()
  local ok, err = pcall(gpu.synchronize)
  if ok then return end
  if tostring(err):sub(-#REFUSED) ~= REFUSED then error(err, 0) end
  refused = refused + 1
end

local n = 1024
local counts <close> = gpu.mem_alloc(4 * n)
gpu.memset_d32(counts, 0, n)
local replay <close> = gpu.Stream({non_blocking = true})
local expected, rounds = 0, 0
local x = gpu.to_gpu(gpu.host.from_table((function()
  local t = {}
  for i = 1, 1000 do t[i] = math.random(-1000, 1000) end
  return t
end)(), "float32"))
-- A float64 product (cuBLAS's kernels or the library's own) checked against the host, so
-- that library work with handles and workspaces of its own runs beside the captures too.
local matmul_check = dofile("tests/matmul_check.lua")
local function product_check() matmul_check(gpu, 256, "product") end

local deadline = os.time() + seconds
repeat
  rounds = rounds + 1
  if id % 2 == 1 then
    local steps = math.random(1, 20)
    local by = math.random(-5, 5)
    local graph <close> = gpu.capture(function(s)
      for _ = 1, steps do bump(counts, n, by, {block = 256, grid = n // 256, stream = s}) end
    end)
    graph:launch(replay)
    replay:synchronize()
    expected = expected + steps * by
  else
    local y
    for _ = 1, 50 do y = x + x end
    local want = 2 * x:get()[1]
    if y:get()[1] ~= want then error(("x + x: %s, expected %s"):format(y:get()[1], want)) end
    if math.random(8) == 1 then product_check() end
  end
  if math.random(4) == 1 then synchronize_device() end
until os.time() >= deadline

if id % 2 == 1 then
  local got = gpu.from_device(counts, n, "int32")
  for i = 1, n do
    if got[i] ~= expected then error(("counts[%d] = %d, expected %d"):format(i, got[i], expected)) end
  end
end
return ("%s: %d rounds, %d device synchronizations refused during a capture")
  :format(id % 2 == 1 and "captured graphs" or "added arrays", rounds, refused)
