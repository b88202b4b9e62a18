-- tests/threads_worker.lua: one thread's work for tests/threads.c (its own lua_State).
-- Globals set by the host: WORKER_ID, SECONDS, GPU_MODE.  Returns a one-line summary;
-- any error (a wrong result included) fails the worker.

local gpu = require "gpu"

local id, seconds, on_gpu = WORKER_ID, SECONDS, GPU_MODE
math.randomseed(id * 7919, os.time())

-- The same source in every thread: after the first compile, disk and module cache hits.
local shared_source = [[
__global__ void axpb(const int *a, const int *b, int *c, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] * k + b[i];
}]]

-- Sources of this thread's own (three variants, so they repeat and hit the caches too).
local function own_source(v)
  return ([[
__global__ void add_const(int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += %d;
}]]):format(v)
end

local function random_ints(n)
  local h = gpu.host.empty(n, "int32")
  for i = 1, n do h[i] = math.random(-1000, 1000) end
  return h
end

local function check(c, a, b, k, v, n)
  for i = 1, n do
    local want = a[i] * k + b[i] + v
    if c[i] ~= want then
      error(("worker %d: element %d of %d is %d, expected %d"):format(id, i, n, c[i], want), 0)
    end
  end
end

-- A 256 x 256 float64 product now and then (tests/matmul_check.lua).
local matmul_check = dofile("tests/matmul_check.lua")
local products = 0
local function matmul_checked(size)
  matmul_check(gpu, size, ("worker %d"):format(id))
  products = products + 1
end

local iterations = 0
local deadline = os.time() + seconds
repeat
  iterations = iterations + 1
  local v = id * 10 + math.random(3)
  if not on_gpu then
    gpu.compile(shared_source, {arch = "sm_90"})
    gpu.compile(own_source(v), {arch = "sm_90", target = "cubin"})
  else
    local n = math.random(1, 5000)
    local k = math.random(-50, 50)
    local a, b = random_ints(n), random_ints(n)
    local axpb = gpu.SourceModule(shared_source):get_function("axpb")
    local add_const = gpu.SourceModule(own_source(v)):get_function("add_const")
    local da, db = gpu.to_device(a), gpu.to_device(b)
    local dc = gpu.mem_alloc(n * 4)
    local block = ({32, 128, 256})[math.random(3)]
    local grid = (n + block - 1) // block
    axpb(da, db, dc, gpu.int32(k), gpu.int32(n), {block = {block}, grid = {grid}})
    if math.random(2) == 1 then
      local s <close> = gpu.Stream()
      local c <close> = gpu.host.pagelocked_empty(n, "int32")
      add_const(dc, gpu.int32(n), {block = {block}, grid = {grid}, stream = s})
      gpu.memcpy_dtoh_async(c, dc, s)
      s:synchronize()
      check(c, a, b, k, v, n)
    else
      add_const(dc, gpu.int32(n), {block = {block}, grid = {grid}})
      local c = gpu.host.empty(n, "int32")
      gpu.memcpy_dtoh(c, dc)
      check(c, a, b, k, v, n)
    end
    if math.random(8) == 1 then     -- a product cuBLAS takes, on this state's own handle
      matmul_checked(256)
    end
    if math.random(4) > 1 then      -- and now and then leave them to the collector
      da:free()
      db:free()
      dc:free()
    end
  end
until os.time() >= deadline

local stats = gpu.compile_stats
return ("%d iterations, %d products; %d NVRTC compiles, %d disk cache hits, %d module cache hits")
  :format(iterations, products, stats.nvrtc, stats.disk_hits, stats.module_hits)
