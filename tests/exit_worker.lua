-- tests/exit_worker.lua: leaves one of everything alive for a state closed at process exit
-- (tests/threads --at-exit, spec/60-faults_spec.lua).  Without a GPU it only compiles.
local gpu = require "gpu"
keep = {gpu.host.zeros(8, "float32"), gpu.compile("__global__ void k() {}", {arch = "sm_90"})}
if gpu.available() then
  local source = "__device__ float g[4];\n__global__ void k(float *a) { a[threadIdx.x] = g[0]; }"
  local mod = gpu.SourceModule(source)
  local buf = gpu.mem_alloc(1024)
  local s = gpu.Stream()
  local e = gpu.Event()
  mod.k(buf, {block = {4}, grid = {1}, stream = s})
  e:record(s)
  local graph = gpu.capture(function(st) gpu.memset_d32_async(buf, 7, 4, st) end)
  keep[#keep + 1] = {mod, mod.k, (mod:get_global("g")), buf, buf:offset(16), s, e, graph,
                     gpu.host.pagelocked_zeros(16, "int32"), gpu.Stream()}
  local capturing = gpu.Stream()              -- left in capture mode; last, as nothing else
  capturing:begin_capture()                   -- may run during a capture
  keep[#keep + 1] = capturing
end
print("exit worker: objects left alive")
