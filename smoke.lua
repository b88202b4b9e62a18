local gpu = require "gpu"
print("available", gpu.available(), "count", gpu.device_count(), "driver", gpu.driver_version(), "nvrtc", gpu.nvrtc_version())
local d = gpu.Device(0)
print(d, d:name(), d:compute_capability(), d:total_memory(), d:pci_bus_id(), d:attribute("MULTIPROCESSOR_COUNT"))
local n = 0 for k in pairs(d:attributes()) do n = n + 1 end print("attributes", n)
print("mem", gpu.mem_get_info())
local b = gpu.mem_alloc(64); print(b, #b, b:ptr())
local v = b:offset(16); print(v, #v)
local h = gpu.host.from_table({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}, "float32")
gpu.memcpy_htod(b, h)
local r = gpu.host.empty(16, "float32"); gpu.memcpy_dtoh(r, b); print(r)
local mod = gpu.SourceModule[[
__global__ void doublify(float *a, int n, float s) { int i = threadIdx.x; if (i < n) a[i] *= s; }
struct S { int n, pad; float *p; };
__global__ void st(S s) { for (int i = threadIdx.x; i < s.n; i += blockDim.x) s.p[i] += 1; }
__constant__ float cdata[4];
__global__ void noargs() {}
]]
local f = mod:get_function("doublify")
print(f, f.signature, f.nparams, f.num_regs, f.max_threads_per_block, f:max_potential_block_size())
f(b, 16, 2.0, {block = {32}})
gpu.memcpy_dtoh(r, b); print(r)
print(f:prepared_timed_call({1}, {32}, b, 16, 0.5))
f:prepare("Pif"); f:prepared_call(1, 32, b, 16, 3.0); gpu.memcpy_dtoh(r, b); print(r)
local st = mod.st; print(st.signature, st.nparams)
st(string.pack("i4i4I8", 16, 0, b:ptr()), {block = {32}})
gpu.memcpy_dtoh(r, b); print(r)
local g, n = mod:get_global("cdata"); print(g, n)
mod.noargs({block = 1})
local hi = gpu.host.from_table({1,2,3,4}, "float32")
f(gpu.InOut(hi), 4, 10, {block = 4}); print(hi)
local s = gpu.Stream(); local e1, e2 = gpu.Event(), gpu.Event()
e1:record(s); f(b, 16, 1.0, {block = 32, stream = s}); e2:record(s); e2:synchronize()
print("ms", e2:time_since(e1), s:is_done(), e1:query())
local p = gpu.host.pagelocked_empty(16, "float32"); gpu.memcpy_dtoh_async(p, b, s); s:synchronize(); print(p, p:is_pagelocked())
print(pcall(f, b, 2^40, 1.0, {block = 32}))
print(pcall(f, b, 16, {block = 2048}))
print(pcall(f, b, 16, 1, {block = {32, 32, 2}}))
print(pcall(gpu.mem_alloc, 2^62))
print(pcall(gpu.mem_alloc, 1 << 62))
b:free(); b:free()
print(pcall(function() return #b end), pcall(function() return #v end))
local a = gpu.core and nil
local core = require "gpu.core"
local arr = core.array_empty({4, 4}, "float32"); print(arr.shape[1], arr.strides[1], arr.ptr, arr.is_contiguous)
f(arr, 16, 1.0, {block = 32})
gpu.synchronize()
print("OK")
