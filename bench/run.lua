-- bench/run.lua: issue 4's benchmark suite.  Runs build/bench-raw (the same work straight
-- through the driver API and NVRTC), the lua-gpu figures in this process, and optionally
-- bench/peers.py (CuPy, PyTorch), then prints one table and writes bench/RESULTS.md (and
-- $OUT/RESULTS.md when OUT is set; RESULTS-partial.md for a BENCH_ONLY run).  `make bench`
-- builds what it needs and runs it.
--
-- Environment: BENCH_LOG2N (default 28: large arrays of 2^28 float32), BENCH_ONLY (Lua
-- patterns, comma-separated, matched against figure ids), BENCH_PEERS=0 (skip CuPy/PyTorch).
-- Times are medians of repeats after a warm-up: host wall time for launch and allocation
-- figures, CUDA events for device work.  Inputs are random (a counter-based kernel).

local root = (arg and arg[0] or ""):match("^(.*)/bench/[^/]*$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/?.so;" .. root .. "/build/?.so;" .. package.cpath

local LOG2N = tonumber(os.getenv("BENCH_LOG2N") or "") or 28
local ONLY = os.getenv("BENCH_ONLY")
if ONLY == "" then ONLY = nil end
local PEERS = os.getenv("BENCH_PEERS") ~= "0"

local compile_source = [[
__global__ void add_one(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
]]

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Child mode: one SourceModule call in a fresh process (the disk cache figure).
if arg and arg[1] == "--child-compile" then
  local clock = require "bench_clock"
  local gpu = require "gpu"
  gpu.synchronize()                     -- context creation stays out of the figure
  local t0 = clock.now_us()
  local f = gpu.SourceModule(compile_source):get_function("add_one")
  local t = clock.now_us() - t0
  assert(f)
  print(("CHILD %.3f %d %d"):format(t, gpu.compile_stats.disk_hits, gpu.compile_stats.nvrtc))
  os.exit(0)
end

local loaded, gpu = pcall(require, "gpu")
if not loaded then
  io.stderr:write("bench: cannot load the gpu module (build it with `make`): ", tostring(gpu), "\n")
  os.exit(1)
end

local ok_device, why = gpu.available()
if not ok_device then
  print(("bench: no device (%s): nothing measured; the suite needs a CUDA GPU."):format(why))
  os.exit(0)
end

local have_clock, clock = pcall(require, "bench_clock")
local now_us
if have_clock then
  now_us = clock.now_us
else
  io.stderr:write("bench: build/bench_clock.so missing (run `make bench`): timing with os.clock\n")
  now_us = function() return os.clock() * 1e6 end
end

-- Figures ---------------------------------------------------------------------------------
-- id, what, unit ("us": lower is better, "GB/s", "x": higher is better), raw: the raw C
-- figure it is compared with, target: how the row passes.

local FIGURES = {
  {id = "launch_async_f", what = "empty kernel, back-to-back async: f(...)", unit = "us",
   raw = "launch_async", target = {ratio_max = 1.15}},
  {id = "launch_async_prepared", what = "empty kernel, back-to-back async: prepared_call", unit = "us",
   raw = "launch_async", target = {ratio_max = 1.05}},
  {id = "launch_async_prepared_ints", what = "  (prepared_call(1, 1): grid and block as numbers)",
   unit = "us", raw = "launch_async"},
  {id = "launch_async_f_newopts", what = "  (f(...) with a new options table per call)", unit = "us",
   raw = "launch_async"},
  {id = "launch_sync_f", what = "empty kernel, launch + synchronize: f(...)", unit = "us",
   raw = "launch_sync", target = {ratio_max = 1.15}},
  {id = "launch_sync_prepared", what = "empty kernel, launch + synchronize: prepared_call", unit = "us",
   raw = "launch_sync", target = {ratio_max = 1.05}},
  {id = "small_add", what = "c = a + b, 1000 float32, c allocated each op", unit = "us",
   raw = "small_add", target = {vs = "launch_async", vs_local = "small_add_launch", ratio_max = 1.5,
                                text = "<= 1.5x raw empty launch"}},
  {id = "small_iadd", what = "a:iadd(b), 1000 float32 (in place: no allocation)", unit = "us",
   raw = "small_launch"},
  {id = "small_kernel", what = "ElementwiseKernel z[i] = x[i] + y[i], 1000 float32, into z",
   unit = "us", raw = "small_launch"},
  {id = "small_where", what = "gpuarray.where(c, a, b), 1000 float32 (host time a call)", unit = "us"},
  {id = "small_broadcast", what = "m + v, 10 x 100 float32 + 100 (host time a call)", unit = "us"},
  {id = "small_reduction_kernel", what = "ReductionKernel dot of 1000 float32 (host time a call)",
   unit = "us"},
  {id = "small_transpose", what = "a:transpose():copy(), 40 x 70 float32 (host time a call)",
   unit = "us"},
  {id = "small_matmul", what = "gpuarray.matmul(p, p), 64 x 64 float32 (host time a call)",
   unit = "us"},
  {id = "alloc_free", what = "allocate + free 4 MiB", unit = "us", raw = "alloc_free",
   target = {abs_max = 2}},
  {id = "copy_dtod", what = "device-to-device copy (read + write)", unit = "GB/s", raw = "copy_dtod"},
  {id = "large_add", what = "a + b, 2^N float32 (3 arrays)", unit = "GB/s", raw = "large_add",
   target = {ratio_min = 0.95}},
  {id = "sum", what = "gpuarray.sum(a), 2^N float32 (result on the device)", unit = "GB/s",
   raw = "sum", target = {vs = "copy_dtod", ratio_min = 0.90, text = ">= 90% of copy bw"}},
  {id = "sum_number", what = "  (a:sum(): the same, read back as a Lua number)", unit = "GB/s",
   raw = "sum"},
  {id = "max", what = "gpuarray.max(a), 2^N float32 (result on the device)", unit = "GB/s", raw = "max",
   target = {vs = "copy_dtod", ratio_min = 0.90, text = ">= 90% of copy bw"}},
  {id = "dot", what = "gpuarray.dot(a, b, {stream = s}), 2^N float32 (result on the device)",
   unit = "GB/s", raw = "dot",
   target = {vs = "copy_dtod", ratio_min = 0.90, text = ">= 90% of copy bw"}},
  {id = "cumsum", what = "gpu.cumsum(a), 2^N float32 (read + write)", unit = "GB/s", raw = "cumsum",
   target = {vs = "copy_dtod", ratio_min = 0.60, text = ">= 60% of copy bw"}},
  {id = "axpby_unfused", what = "2*a + 3*b unfused (3 kernels)", unit = "GB/s", raw = "axpby_unfused"},
  {id = "axpby_fused", what = "2*a + 3*b gpu.fuse vs hand-fused", unit = "GB/s", raw = "axpby_fused",
   target = {ratio_min = 0.95}},
  {id = "htod_pageable", what = "host to device, pageable", unit = "GB/s", raw = "htod_pageable"},
  {id = "htod_pinned", what = "host to device, page-locked", unit = "GB/s", raw = "htod_pinned"},
  {id = "dtoh_pageable", what = "device to host, pageable", unit = "GB/s", raw = "dtoh_pageable"},
  {id = "dtoh_pinned", what = "device to host, page-locked", unit = "GB/s", raw = "dtoh_pinned"},
  {id = "compile_cold", what = "NVRTC cold compile + load", unit = "us", raw = "compile_cold"},
  {id = "compile_hit", what = "SourceModule again in-process (cache hit)", unit = "us",
   target = {abs_max = 50, strict = true}},
  {id = "compile_disk", what = "SourceModule in a new process, disk cache (raw: read + load)",
   unit = "us", raw = "compile_disk", target = {abs_max = 2000, strict = true}},
  {id = "graph_loop", what = "100 small kernels launched one by one", unit = "us", raw = "graph_loop"},
  {id = "graph_replay", what = "the same 100 replayed as a graph", unit = "us", raw = "graph_replay"},
  {id = "graph_speedup", what = "graph speedup (one by one / replay)", unit = "x", raw = "graph_speedup",
   target = {abs_min = 3}},
  {id = "matmul_f32", what = "gpuarray.matmul, 4096 x 4096 float32, on cuBLAS (all three: TF32 off)",
   unit = "TFLOP/s"},
  {id = "matmul_f32_kernels", what = "  (lua-gpu's own kernels: gpu.use_cublas(false))", unit = "TFLOP/s"},
  {id = "matmul_f64", what = "gpuarray.matmul, 4096 x 4096 float64, on cuBLAS", unit = "TFLOP/s"},
  {id = "matmul_f64_kernels", what = "  (lua-gpu's own kernels)", unit = "TFLOP/s"},
  {id = "matmul_f16", what = "gpuarray.matmul, 4096 x 4096 float16, on cuBLAS (float sums)",
   unit = "TFLOP/s"},
  {id = "matmul_f16_kernels", what = "  (lua-gpu's own kernels: tensor cores)", unit = "TFLOP/s"},
  {id = "matvec_f32", what = "gpuarray.matmul, 8192 x 8192 float32 by a vector (matrix bytes)",
   unit = "GB/s"},
  {id = "matvec_t_f32", what = "  (the matrix a transposed view)", unit = "GB/s"},
  {id = "matmul_cols_f32", what = "gpuarray.matmul, 8192 x 8192 float32 by 8192 x 4 (matrix bytes)",
   unit = "GB/s"},
  {id = "matmul_stack_f32", what = "gpuarray.matmul, 10000 stacked 8 x 8 float32 products", unit = "us"},
  {id = "sort_f32", what = "gpuarray.sort, 2^24 float32 (a sorted copy)", unit = "ms"},
}

-- BENCH_ONLY: Lua patterns separated by commas; a figure runs when one matches its id.
local function selected(id)
  if ONLY == nil then return true end
  for pattern in ONLY:gmatch("[^,]+") do
    if id:find(pattern) then return true end
  end
  return false
end

-- Raw C figures a selected row needs (its own and what its target compares with).
local function raw_ids()
  local want, list = {}, {}
  local function add(id)
    if id == "graph_speedup" then add("graph_loop"); add("graph_replay"); return end
    if id and not want[id] then want[id] = true; list[#list + 1] = id end
  end
  for _, f in ipairs(FIGURES) do
    if selected(f.id) then
      add(f.raw)
      if f.target and f.target.vs then add(f.target.vs) end
    end
  end
  return list
end

-- Results: values[side][id], notes[id]
local values = {raw = {}, lua = {}, cupy = {}, torch = {}, paired = {}}
local notes = {}
local info = {}

-- Raw C ------------------------------------------------------------------------------------

local function run_raw()
  local exe = root .. "/build/bench-raw"
  local ids = raw_ids()
  if #ids == 0 then return end
  local f = io.open(exe, "rb")
  if not f then
    notes.raw = "build/bench-raw missing (run `make bench`)"
    return
  end
  f:close()
  local cmd = ("cd %s && ./build/bench-raw --kernels bench/kernels.cu --log2n %d --only %s 2>&1")
    :format(shell_quote(root), LOG2N, shell_quote(table.concat(ids, ",")))
  io.stderr:write("bench: raw C ...\n")
  local p = assert(io.popen(cmd, "r"))
  for line in p:lines() do
    local id, v = line:match("^RESULT (%S+) (%S+)$")
    if id then
      values.raw[id] = tonumber(v)
    elseif line:match("^INFO ") then
      local k, rest = line:match("^INFO (%S+) (.*)$")
      info["raw_" .. k] = rest
    elseif line:match("^NODEVICE") then
      notes.raw = line
    else
      io.stderr:write("  raw: ", line, "\n")
    end
  end
  local okp, _, code = p:close()
  if not okp then notes.raw = ("bench-raw failed (exit %s): see the messages above"):format(tostring(code)) end
  if values.raw.graph_loop and values.raw.graph_replay then
    values.raw.graph_speedup = values.raw.graph_loop / values.raw.graph_replay
  end
end

-- lua-gpu ----------------------------------------------------------------------------------

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

-- The host wall times of reps runs of body() after a warm-up, each divided by per.
local function walls(reps, per, body, after)
  local t = {}
  body(); if after then after() end     -- warm-up
  for r = 1, reps do
    local t0 = now_us()
    body()
    t[r] = (now_us() - t0) / per
    if after then after() end
  end
  return t
end

-- Their median.
local function wall(reps, per, body, after) return median(walls(reps, per, body, after)) end

local ev0, ev1
-- Median device time (us) of body() between two events.
local function device(reps, body)
  local t = {}
  body()
  for r = 1, reps do
    ev0:record()
    body()
    ev1:record()
    ev1:synchronize()
    t[r] = ev1:time_since(ev0) * 1e3
  end
  gpu.synchronize()
  return median(t)
end

local K          -- kernels of bench/kernels.cu by name
local SMS

local function fill_random(x, n, seed)
  K.fill_random(x, n, seed, {block = 256, grid = SMS * 16})
end

local function close(x) if x ~= nil and x.free then x:free() end end

-- x[i] (1-based) of a float32 GPUArray; through its buffer where a[i] is not there yet.
local function elem(x, i)
  local v = x[i]
  if v == nil then
    v = gpu.from_device(x.gpudata:offset(x.offset + (i - 1) * 4, 4), 1, "float32")[1]
  end
  return v
end

-- Checks: a failed check makes the figure an error, never a silent number.
local function check(cond, msg) if not cond then error("check failed: " .. msg, 2) end end

local gpuarray = gpu.gpuarray

-- A failed figure's note: the whole message on stderr, its first line in the table.
local function failure_note(id, err)
  if type(err) == "table" and err.skip then return err.skip end
  local msg = tostring(err)
  io.stderr:write("bench: ", id, ": ", msg, "\n")
  msg = msg:match("^[^\n]*")
  if #msg > 70 then msg = msg:sub(1, 67) .. "..." end
  return "error: " .. msg
end

local function need(name, value)
  if value == nil then error({skip = ("skipped: %s not available"):format(name)}, 0) end
  return value
end

local function empty_array(n)
  local empty = need("gpu.gpuarray.empty", gpuarray and gpuarray.empty or gpu.empty)
  return empty(n, "float32")
end

local lua_bench = {}

-- Host-timed figures that a shared machine's drift moves (launches, small a + b, allocation)
-- are timed in paired rounds: each round runs every entry a few repeats, raw C's first, so a
-- figure and its raw C bases are timed milliseconds apart.  An entry's time is the median of
-- all its repeats; its ratio to a base is the median over rounds of the two medians' ratio
-- in that round, which a burst of noise during one round cannot move.
-- entries: {id = "x" or "raw.x", bases = {"raw.y", ...} (or nil), run = function() -> {us, ...}}.
-- Returns times (id -> us) and paired ("x/y" -> ratio of x to raw.y).
local function paired_rounds(rounds, entries)
  local all, ratios = {}, {}
  for _, e in ipairs(entries) do
    all[e.id] = {}
    for _, base in ipairs(e.bases or {}) do ratios[e.id .. "/" .. base:gsub("^raw%.", "")] = {} end
  end
  for _ = 1, rounds do
    local round = {}
    for _, e in ipairs(entries) do
      local t = e.run()
      for _, v in ipairs(t) do all[e.id][#all[e.id] + 1] = v end
      round[e.id] = median(t)
      for _, base in ipairs(e.bases or {}) do
        local r = ratios[e.id .. "/" .. base:gsub("^raw%.", "")]
        r[#r + 1] = round[e.id] / round[base]
      end
    end
  end
  local times, paired = {}, {}
  for id, t in pairs(all) do times[id] = median(t) end
  for key, r in pairs(ratios) do paired[key] = median(r) end
  return times, paired
end

local ROUNDS = 40

-- Launch figures against the raw C launch loop of bench_clock, run in this process on the
-- same CUfunction (when bench_clock has it).  Overrides bench-raw's launch figures.
function lua_bench.launch()
  local f = K.empty_kernel
  local opts = {block = 1, grid = 1}
  local grid, block = {1, 1}, {1, 1, 1}
  local raw_launches = have_clock and clock.raw_launches
  f:prepare("")
  for _ = 1, 1000 do f(opts) end
  gpu.synchronize()
  local sync = gpu.synchronize
  local async_bases = raw_launches and {"raw.launch_async"}
  local sync_bases = raw_launches and {"raw.launch_sync"}
  local entries = {}
  if raw_launches then
    entries[1] = {id = "raw.launch_async", run = function() return raw_launches(f.handle, 4, 256, false) end}
    entries[2] = {id = "raw.launch_sync", run = function() return raw_launches(f.handle, 40, 1, true) end}
  end
  local function async(id, body)
    entries[#entries + 1] = {id = id, bases = async_bases, run = function() return walls(4, 256, body, sync) end}
  end
  async("launch_async_f", function() for _ = 1, 256 do f(opts) end end)
  async("launch_async_prepared", function() for _ = 1, 256 do f:prepared_call(grid, block) end end)
  async("launch_async_prepared_ints", function() for _ = 1, 256 do f:prepared_call(1, 1) end end)
  async("launch_async_f_newopts", function() for _ = 1, 256 do f({block = 1, grid = 1}) end end)
  local function synced(id, body)
    entries[#entries + 1] = {id = id, bases = sync_bases, run = function() return walls(40, 1, body) end}
  end
  synced("launch_sync_f", function() f(opts); sync() end)
  synced("launch_sync_prepared", function() f:prepared_call(grid, block); sync() end)
  local times, paired = paired_rounds(ROUNDS, entries)
  local r = {raw = {}, paired = paired}
  for id, v in pairs(times) do
    local raw_id = id:match("^raw%.(.*)")
    if raw_id then r.raw[raw_id] = v else r[id] = v end
  end
  if raw_launches then
    r.note = ("launch rows: raw C timed in this process on the same CUfunction, in %d rounds " ..
              "alternating with lua-gpu"):format(ROUNDS)
  end
  return r
end

-- Two host arrays of n random float32 in [-1, 1) and their device copies: the small rows'
-- operands.
local function small_inputs(n)
  local to_gpu = need("gpu.to_gpu", gpu.to_gpu or (gpuarray and gpuarray.to_gpu))
  local ha, hb = gpu.host.empty(n, "float32"), gpu.host.empty(n, "float32")
  for i = 1, n do ha[i] = math.random() * 2 - 1; hb[i] = math.random() * 2 - 1 end
  return ha, hb, to_gpu(ha), to_gpu(hb)
end

function lua_bench.small_add()
  local n = 1000
  local ha, hb, a, b = small_inputs(n)
  local c = a + b
  local hc = c:get()
  for i = 1, n do
    local want = string.unpack("f", string.pack("f", ha[i] + hb[i]))
    check(hc[i] == want, ("small a + b: c[%d] = %s, expected %s"):format(i, hc[i], want))
  end
  c = nil
  -- the target's base, raw C's empty launch, and raw C's own a + b (pool allocation, launch
  -- of a 4-argument kernel, free) timed in the same rounds, in this process
  local empty, add = K.empty_kernel, K.add_f32
  local blocks = (n + 255) // 256
  -- One repeat of PER operations a round: long enough to hold the collector's whole cycle
  -- (its atomic step and its finalizers), which a median of short repeats would leave out.
  local PER = 2048
  local entries = {}
  if have_clock then
    entries[1] = {id = "raw.small_add_launch", run = function()
      return clock.raw_launches(empty.handle, 1, PER, false)
    end}
    entries[2] = {id = "raw.small_add", run = function()
      return clock.raw_alloc_free(n * 4, 1, PER, add.handle, blocks, 256, {a.ptr, b.ptr, 0, n})
    end}
  end
  entries[#entries + 1] = {id = "small_add",
    bases = have_clock and {"raw.small_add_launch", "raw.small_add"} or nil,
    run = function()
      return walls(1, PER, function() for _ = 1, PER do local _ = a + b end end, gpu.synchronize)
    end}
  local times, paired = paired_rounds(ROUNDS, entries)
  local r = {small_add = times.small_add}
  if have_clock then
    r.raw = {small_add_launch = times["raw.small_add_launch"], small_add = times["raw.small_add"]}
    r.paired = paired
    r.note = ("small_add: raw C (its own pool allocation, add_f32 launch and free) and the " ..
              "target's base (raw C's empty launch) timed in this process, in %d rounds " ..
              "alternating with the small a + b"):format(ROUNDS)
  end
  return r
end

-- Small operations that allocate nothing, against raw C's launch of the same 1000-element add
-- (bench/kernels.cu's add_f32, its four arguments packed as lua-gpu packs them), in rounds
-- alternating with it.
function lua_bench.small_launches()
  local n = 1000
  local ha, hb, a, b = small_inputs(n)
  local z = a:copy()
  local kernel = need("gpu.ElementwiseKernel", gpu.ElementwiseKernel)(
    "float *z, const float *x, const float *y", "z[i] = x[i] + y[i]", "bench_add")
  a:iadd(b)
  kernel(z, z, b)
  local ga, gz = a:get(), z:get()
  for i = 1, n do
    local want = string.unpack("f", string.pack("f", ha[i] + hb[i]))
    check(ga[i] == want and gz[i] == want,
          ("a:iadd(b) and the ElementwiseKernel: [%d] = %s and %s, expected %s"):format(i, ga[i], gz[i], want))
  end
  local PER = 2048
  local entries = {}
  if have_clock then
    entries[1] = {id = "raw.small_launch", run = function()
      return clock.raw_launches_args(K.add_f32.handle, 1, PER, true, (n + 255) // 256, 256,
                                     a.ptr, b.ptr, z.ptr, n)
    end}
  end
  local bases = have_clock and {"raw.small_launch"} or nil
  entries[#entries + 1] = {id = "small_iadd", bases = bases, run = function()
    return walls(1, PER, function() for _ = 1, PER do a:iadd(b) end end, gpu.synchronize)
  end}
  entries[#entries + 1] = {id = "small_kernel", bases = bases, run = function()
    return walls(1, PER, function() for _ = 1, PER do kernel(z, a, b) end end, gpu.synchronize)
  end}
  local times, paired = paired_rounds(ROUNDS, entries)
  local r = {small_iadd = times.small_iadd, small_kernel = times.small_kernel}
  if have_clock then
    r.raw = {small_launch = times["raw.small_launch"]}
    r.paired = paired
    r.note = ("small_iadd, small_kernel: raw C's launch of add_f32 (arguments packed) timed in " ..
              "this process, in %d rounds alternating with lua-gpu"):format(ROUNDS)
  end
  return r
end

-- Small operations the Lua layer adds to the launch (a where, a broadcast, a user's reduction,
-- a transposed copy, a small product): host time a call, asynchronous, as CuPy's and
-- PyTorch's beside them.  No raw C row: the work is the layer's own.
function lua_bench.small_ops()
  local n = 1000
  local ha, hb, a, b = small_inputs(n)
  local c = a:gt(b)
  local m, v = a:copy():reshape({10, 100}), b:slice(1, 100)
  local dot = need("gpu.ReductionKernel", gpu.ReductionKernel)("float32", 0, "a + b", "x[i] * y[i]",
                                                             "const float *x, const float *y")
  local w, s, d = gpuarray.where(c, a, b):get(), (m + v):get(), dot(a, b):get()[1]
  local want_dot, scale = 0, 0
  for i = 1, n do
    local x, y = ha[i], hb[i]
    check(w[i] == (x > y and x or y), ("where: [%d] = %s"):format(i, w[i]))
    local sum = string.unpack("f", string.pack("f", x + hb[(i - 1) % 100 + 1]))
    check(s[i] == sum, ("m + v: [%d] = %s, expected %s"):format(i, s[i], sum))
    want_dot, scale = want_dot + x * y, scale + math.abs(x * y)
  end
  check(math.abs(d - want_dot) <= 1e-5 * scale, ("dot: %s, expected %s"):format(d, want_dot))
  local rows, cols, side = 40, 70, 64
  local ht, _, flat_t = small_inputs(rows * cols)
  local hp, _, flat_p = small_inputs(side * side)
  local t, p = flat_t:reshape(rows, cols), flat_p:reshape(side, side)
  local tt, pp = t:transpose():copy():get(), gpuarray.matmul(p, p):get()
  for i = 1, cols * rows do      -- element (r, c) of the copy is (c, r) of t
    local r, c = (i - 1) // rows, (i - 1) % rows
    check(tt[i] == ht[c * cols + r + 1], ("transposed copy: [%d] = %s"):format(i, tt[i]))
  end
  for i = 1, side do
    for j = 1, side do
      local want, bound = 0, 0
      for l = 1, side do
        local x = hp[(i - 1) * side + l] * hp[(l - 1) * side + j]
        want, bound = want + x, bound + math.abs(x)
      end
      local got = pp[(i - 1) * side + j]
      check(math.abs(got - want) <= 1e-5 * bound,
            ("matmul: [%d, %d] = %s, expected %s"):format(i, j, got, want))
    end
  end
  local PER = 2048
  local function per_call(body)
    return median(walls(20, PER, function() for _ = 1, PER do body() end end, gpu.synchronize))
  end
  return {small_where = per_call(function() return gpuarray.where(c, a, b) end),
          small_broadcast = per_call(function() return m + v end),
          small_reduction_kernel = per_call(function() return dot(a, b) end),
          small_transpose = per_call(function() return t:transpose():copy() end),
          small_matmul = per_call(function() return gpuarray.matmul(p, p) end)}
end

function lua_bench.alloc_free()
  local bytes = 4 << 20
  local PER = 1000        -- a repeat holds the finalizers of what it freed, as in small_add
  local entries = {}
  if have_clock then
    entries[1] = {id = "raw.alloc_free", run = function() return clock.raw_alloc_free(bytes, 1, PER) end}
  end
  entries[#entries + 1] = {id = "alloc_free", bases = have_clock and {"raw.alloc_free"} or nil,
    run = function()
      return walls(1, PER, function() for _ = 1, PER do gpu.mem_alloc(bytes):free() end end,
                   gpu.synchronize)
    end}
  local times, paired = paired_rounds(ROUNDS, entries)
  notes.alloc_free = "gpu.mem_alloc + :free()"
  local r = {alloc_free = times.alloc_free}
  if have_clock then
    r.raw = {alloc_free = times["raw.alloc_free"]}
    r.paired = paired
    r.note = ("alloc_free: raw C (a pool made like lua-gpu's) timed in this process, in %d " ..
              "rounds alternating with lua-gpu"):format(ROUNDS)
  end
  return r
end

-- The raw kernels run from Lua: references for the lua-gpu results.
local function reference_reduce(first, finish, n, x, y)
  local grid = SMS * 8
  local partial <close> = gpu.mem_alloc(grid * 4)
  local out <close> = gpu.mem_alloc(4)
  if y then K[first](x, y, partial, n, {block = 256, grid = grid})
  else K[first](x, partial, n, {block = 256, grid = grid}) end
  K[finish](partial, out, grid, {block = 256, grid = 1})
  return gpu.from_device(out, 1, "float32")[1]
end

local function as_number(x)
  if type(x) == "number" then return x end
  if type(x) == "userdata" and x.get then return x:get()[1] end
  return tonumber(x)
end

function lua_bench.copy_dtod(n)
  local src <close> = gpu.mem_alloc(n * 4)
  local dst <close> = gpu.mem_alloc(n * 4)
  fill_random(src, n, 7)
  local t = device(10, function() gpu.memcpy_dtod(dst, src, n * 4) end)
  return {copy_dtod = 2 * n * 4 / t / 1e3}
end

-- The large-array figures share two random arrays of 2^N float32.
local large = {}

function large.large_add(a, b, n)
  local c
  local t = device(10, function() close(c); c = a + b end)
  for _, i in ipairs({1, n // 3, n}) do
    local want = string.unpack("f", string.pack("f", elem(a, i) + elem(b, i)))
    check(elem(c, i) == want, ("large a + b at %d"):format(i))
  end
  close(c)
  return 3 * n * 4 / t / 1e3
end

-- gpuarray.sum(a) and gpuarray.max(a) leave their result on the device, as raw C's
-- reductions and CuPy's a.sum() do; sum_number times a:sum(), which also reads it back.
local function bench_sum(a, n, sum)
  local got
  local t = device(10, function() got = sum(a) end)
  local want = reference_reduce("reduce_sum_f32", "finish_sum_f32", n, a)
  check(math.abs(as_number(got) - want) <= 1e-4 * math.sqrt(n) + 1e-3 * math.abs(want),
        ("sum %s vs reference %s"):format(got, want))
  return n * 4 / t / 1e3
end

function large.sum(a, _, n) return bench_sum(a, n, gpuarray.sum) end
function large.sum_number(a, _, n) return bench_sum(a, n, function(x) return x:sum() end) end

function large.max(a, _, n)
  local got
  local t = device(10, function() got = gpuarray.max(a) end)
  local want = reference_reduce("reduce_max_f32", "finish_max_f32", n, a)
  check(as_number(got) == want, ("max %s vs reference %s"):format(got, want))
  return n * 4 / t / 1e3
end

function large.dot(a, b, n)
  local dot = need("gpu.gpuarray.dot", gpuarray and gpuarray.dot)
  local got
  local on_device = {stream = gpu.Stream()}   -- with a stream the result stays on the device
  local t = device(10, function() got = dot(a, b, on_device) end)
  on_device.stream:synchronize()
  local want = reference_reduce("reduce_dot_f32", "finish_sum_f32", n, a, b)
  check(math.abs(as_number(got) - want) <= 1e-4 * math.sqrt(n) + 1e-3 * math.abs(want),
        ("dot %s vs reference %s"):format(got, want))
  return 2 * n * 4 / t / 1e3
end

function large.cumsum(a, _, n)
  local cumsum = need("gpu.cumsum", gpu.cumsum)
  local c
  local t = device(10, function() close(c); c = cumsum(a) end)
  local run = 0
  for i = 1, 1000 do
    run = run + elem(a, i)
    check(math.abs(elem(c, i) - run) <= 1e-4 * (math.sqrt(i) + math.abs(run)), ("cumsum at %d"):format(i))
  end
  local total = reference_reduce("reduce_sum_f32", "finish_sum_f32", n, a)
  check(math.abs(elem(c, n) - total) <= 1e-4 * math.sqrt(n) + 1e-3 * math.abs(total), "cumsum last element")
  close(c)
  return 2 * n * 4 / t / 1e3
end

local function check_axpby(c, a, b, n)
  for _, i in ipairs({1, 2, n // 2, n}) do
    local want = 2 * elem(a, i) + 3 * elem(b, i)
    check(math.abs(elem(c, i) - want) <= 1e-6 * (math.abs(2 * elem(a, i)) + math.abs(3 * elem(b, i))),
          ("2*a + 3*b at %d: %s, expected %s"):format(i, elem(c, i), want))
  end
end

function large.axpby_unfused(a, b, n)
  local c
  local t = device(10, function() close(c); c = 2 * a + 3 * b end)
  check_axpby(c, a, b, n)
  close(c)
  return 3 * n * 4 / t / 1e3
end

function large.axpby_fused(a, b, n)
  local fuse = need("gpu.fuse", gpu.fuse)
  local f = fuse(function(x, y) return 2 * x + 3 * y end)
  local c
  local t = device(10, function() close(c); c = f(a, b) end)
  check_axpby(c, a, b, n)
  close(c)
  return 3 * n * 4 / t / 1e3
end

local LARGE_ORDER = {"large_add", "sum", "sum_number", "max", "dot", "cumsum", "axpby_unfused",
                     "axpby_fused"}

function lua_bench.large(n)
  local r = {}
  local any = false
  for _, id in ipairs(LARGE_ORDER) do any = any or selected(id) end
  if not any then return r end
  local okA, a = pcall(empty_array, n)
  if not okA then
    for _, id in ipairs(LARGE_ORDER) do
      if selected(id) then notes[id] = failure_note(id, a) end
    end
    return r
  end
  local b = empty_array(n)
  fill_random(a, n, 11)
  fill_random(b, n, 12)
  gpu.synchronize()
  for _, id in ipairs(LARGE_ORDER) do
    if selected(id) then
      io.stderr:write("bench: lua ", id, " ...\n")
      local okv, v = pcall(large[id], a, b, n)
      if okv then r[id] = v
      else notes[id] = failure_note(id, v) end
      gpu.synchronize()
    end
  end
  close(a); close(b)
  collectgarbage()
  return r
end

function lua_bench.host_copies(log2n)
  local n = 1 << math.min(log2n, 26)        -- float32 elements: 256 MiB unless shrunk
  local bytes = n * 4
  local buf <close> = gpu.mem_alloc(bytes)
  fill_random(buf, n, 21)
  gpu.synchronize()
  local pageable = gpu.host.empty(n, "float32")
  local pinned = gpu.host.pagelocked_empty(n, "float32")
  local r = {}
  local function time_copy(fn) return bytes / wall(5, 1, fn) / 1e3 end
  if selected("dtoh_pageable") then r.dtoh_pageable = time_copy(function() gpu.memcpy_dtoh(pageable, buf) end) end
  if selected("dtoh_pinned") then r.dtoh_pinned = time_copy(function() gpu.memcpy_dtoh(pinned, buf) end) end
  gpu.memcpy_dtoh(pageable, buf)             -- random host data for the uploads
  gpu.memcpy_dtoh(pinned, buf)
  if selected("htod_pageable") then r.htod_pageable = time_copy(function() gpu.memcpy_htod(buf, pageable) end) end
  if selected("htod_pinned") then r.htod_pinned = time_copy(function() gpu.memcpy_htod(buf, pinned) end) end
  close(pinned)
  return r
end

local compile_figures = {}

function lua_bench.compile()
  local r = {}
  for _, id in ipairs({"compile_cold", "compile_hit", "compile_disk"}) do
    if selected(id) then
      local okc, v = pcall(compile_figures[id])
      if okc then r[id] = v else notes[id] = failure_note(id, v) end
    end
  end
  return r
end

function compile_figures.compile_cold()
  local t = {}
  for rep = 0, 5 do
    local src = ("// lua %d %d %s\n"):format(rep, os.time(), tostring(t)) .. compile_source
    local t0 = now_us()
    local m = gpu.SourceModule(src, {cache = false})
    local _ = m:get_function("add_one")
    if rep > 0 then t[rep] = now_us() - t0 end
  end
  return median(t)
end

function compile_figures.compile_hit()
  local before = gpu.compile_stats.module_hits
  gpu.SourceModule(compile_source)
  local v = wall(20, 100, function()
    for _ = 1, 100 do gpu.SourceModule(compile_source) end
  end)
  check(gpu.compile_stats.module_hits - before >= 2100, "SourceModule repeats were cache hits")
  return v
end

function compile_figures.compile_disk()
  local dir = os.tmpname()
  os.remove(dir)
  local first = -1                       -- the interpreter: arg's lowest index
  while arg[first - 1] do first = first - 1 end
  local lua = arg[first] or "lua5.4"
  local cmd = ("GPU_CACHE_DIR=%s %s %s --child-compile"):format(shell_quote(dir),
    shell_quote(lua), shell_quote(root .. "/bench/run.lua"))
  local t = {}
  for rep = 0, 5 do
    local p = assert(io.popen(cmd, "r"))
    local out = p:read("a")
    p:close()
    local us, hits, nvrtc = out:match("CHILD (%S+) (%d+) (%d+)")
    check(us, "child process output: " .. out)
    if rep == 0 then
      check(nvrtc == "1", "the first child compiles")
    else
      check(hits == "1" and nvrtc == "0", "later children hit the disk cache")
      t[rep] = tonumber(us)
    end
  end
  os.execute("rm -rf " .. shell_quote(dir))
  return median(t)
end

function lua_bench.graph()
  local bump = K.bump_f32
  local n = 1024
  local x <close> = gpu.mem_alloc(n * 4)
  fill_random(x, n, 31)
  local s <close> = gpu.Stream({non_blocking = true})
  local opts = {block = 256, grid = 4, stream = s}
  local r = {}
  r.graph_loop = wall(50, 1, function()
    for _ = 1, 100 do bump(x, n, opts) end
    s:synchronize()
  end)
  local graph <close> = gpu.capture(function(st)
    local o = {block = 256, grid = 4, stream = st}
    for _ = 1, 100 do bump(x, n, o) end
  end, s)
  r.graph_replay = wall(50, 1, function() graph:launch(s); s:synchronize() end)
  r.graph_speedup = r.graph_loop / r.graph_replay
  return r
end

-- matmul, matrix-vector products and sort: the library's kernels with no raw C twin (their
-- peers are cuBLAS and PyTorch's sort), and matmul on cuBLAS, which big products take.
function lua_bench.dense()
  local r = {}
  local n = 4096
  for _, case in ipairs{{"matmul_f32", "float32"}, {"matmul_f64", "float64"}, {"matmul_f16", "float16"},
                        {"matmul_f32_kernels", "float32", true}, {"matmul_f64_kernels", "float64", true},
                        {"matmul_f16_kernels", "float16", true}} do
    local id, dtype, kernels_only = case[1], case[2], case[3]
    if selected(id) then
      gpu.use_cublas(not kernels_only)
      local a32, b32 = empty_array(n * n), empty_array(n * n)
      fill_random(a32, n * n, 21)
      fill_random(b32, n * n, 22)
      local a, b = a32:astype(dtype):reshape({n, n}), b32:astype(dtype):reshape({n, n})
      local c = gpu.empty({n, n}, dtype)
      local t = device(5, function() gpuarray.matmul(a, b, {out = c}) end)
      -- a few elements against sums in Lua, within n roundings of the sum of |a b| (and a
      -- float16 result's own rounding)
      local ha, hb, hc = a:get(), b:get(), c:get()
      local unit_roundoff = dtype == "float64" and 2 ^ -53 or 2 ^ -24
      for _ = 1, 4 do
        local i, j, want, scale = math.random(n), math.random(n), 0, 0
        for l = 1, n do
          local p = ha[(i - 1) * n + l] * hb[(l - 1) * n + j]
          want, scale = want + p, scale + math.abs(p)
        end
        local rounding = dtype == "float16" and 2 ^ -11 * math.abs(want) or 0
        check(math.abs(hc[(i - 1) * n + j] - want) <= n * unit_roundoff * scale + rounding,
              ("%s element %d, %d"):format(id, i, j))
      end
      r[id] = 2 * n ^ 3 / t / 1e6
      gpu.use_cublas(true)
      close(a32); close(b32); close(a); close(b); close(c)
    end
  end
  for _, id in ipairs{"matvec_f32", "matvec_t_f32"} do
    if selected(id) then
      local side = 8192
      local a, v = empty_array(side * side), empty_array(side)
      fill_random(a, side * side, 24)
      fill_random(v, side, 25)
      local matrix = a:reshape({side, side})
      if id == "matvec_t_f32" then matrix = matrix.T end
      local c = gpu.empty({side}, "float32")
      -- twenty products a repeat, so that the time is the device's, not one call's host work
      local t = device(10, function()
        for _ = 1, 20 do gpuarray.matmul(matrix, v, {out = c}) end
      end) / 20
      -- a few elements against sums in Lua, within side roundings of the sum of |a v|
      local ha, hv, hc = a:get(), v:get(), c:get()
      for _ = 1, 4 do
        local i, want, scale = math.random(side), 0, 0
        for l = 1, side do
          local at = id == "matvec_f32" and (i - 1) * side + l or (l - 1) * side + i
          local p = ha[at] * hv[l]
          want, scale = want + p, scale + math.abs(p)
        end
        check(math.abs(hc[i] - want) <= side * 2 ^ -24 * scale, ("%s element %d"):format(id, i))
      end
      r[id] = side * side * 4 / t / 1e3
      close(a); close(v); close(c)
    end
  end
  if selected("matmul_cols_f32") then
    local side, cols = 8192, 4
    local a, b = empty_array(side * side), empty_array(side * cols)
    fill_random(a, side * side, 26)
    fill_random(b, side * cols, 27)
    local matrix, columns = a:reshape({side, side}), b:reshape({side, cols})
    local c = gpu.empty({side, cols}, "float32")
    local t = device(10, function()
      for _ = 1, 20 do gpuarray.matmul(matrix, columns, {out = c}) end
    end) / 20
    local ha, hb, hc = a:get(), b:get(), c:get()
    for _ = 1, 4 do
      local i, j, want, scale = math.random(side), math.random(cols), 0, 0
      for l = 1, side do
        local p = ha[(i - 1) * side + l] * hb[(l - 1) * cols + j]
        want, scale = want + p, scale + math.abs(p)
      end
      check(math.abs(hc[(i - 1) * cols + j] - want) <= side * 2 ^ -24 * scale,
            ("matmul_cols_f32 element %d, %d"):format(i, j))
    end
    r.matmul_cols_f32 = side * side * 4 / t / 1e3
    close(a); close(b); close(c)
  end
  if selected("matmul_stack_f32") then
    local count, side = 10000, 8
    local a, b = empty_array(count * side * side), empty_array(count * side * side)
    fill_random(a, count * side * side, 28)
    fill_random(b, count * side * side, 29)
    local as, bs = a:reshape({count, side, side}), b:reshape({count, side, side})
    local c = gpu.empty({count, side, side}, "float32")
    local t = device(10, function()
      for _ = 1, 20 do gpuarray.matmul(as, bs, {out = c}) end
    end) / 20
    local ha, hb, hc = a:get(), b:get(), c:get()
    for _ = 1, 4 do
      local p, i, j, want, scale = math.random(count) - 1, math.random(side), math.random(side), 0, 0
      for l = 1, side do
        local x = ha[p * side * side + (i - 1) * side + l] * hb[p * side * side + (l - 1) * side + j]
        want, scale = want + x, scale + math.abs(x)
      end
      check(math.abs(hc[p * side * side + (i - 1) * side + j] - want) <= side * 2 ^ -24 * scale,
            ("matmul_stack_f32 product %d element %d, %d"):format(p + 1, i, j))
    end
    r.matmul_stack_f32 = t
    close(a); close(b); close(c)
  end
  if selected("sort_f32") then
    local keys = empty_array(1 << 24)
    fill_random(keys, 1 << 24, 23)
    local sorted
    local t = device(5, function() close(sorted); sorted = gpuarray.sort(keys) end)
    local h = sorted:get()
    for _ = 1, 1000 do
      local i = math.random(1, (1 << 24) - 1)
      check(h[i] <= h[i + 1], "sort_f32 order at " .. i)
    end
    r.sort_f32 = t / 1e3
    close(sorted); close(keys)
  end
  return r
end

local function run_lua()
  local source = assert(io.open(root .. "/bench/kernels.cu")):read("a")
  local mod = gpu.SourceModule(source)
  K = setmetatable({}, {__index = function(t, name)
    local f = mod:get_function(name); rawset(t, name, f); return f
  end})
  SMS = gpu.get_device():attribute("MULTIPROCESSOR_COUNT")
  ev0, ev1 = gpu.Event(), gpu.Event()
  local n = 1 << LOG2N
  local groups = {
    {ids = {"launch_async_f", "launch_async_prepared", "launch_async_prepared_ints",
            "launch_async_f_newopts", "launch_sync_f",
            "launch_sync_prepared"}, run = lua_bench.launch},
    {ids = {"small_add"}, run = lua_bench.small_add},
    {ids = {"small_iadd", "small_kernel"}, run = lua_bench.small_launches},
    {ids = {"small_where", "small_broadcast", "small_reduction_kernel", "small_transpose",
            "small_matmul"}, run = lua_bench.small_ops},
    {ids = {"alloc_free"}, run = lua_bench.alloc_free},
    {ids = {"copy_dtod"}, run = function() return lua_bench.copy_dtod(n) end},
    {ids = LARGE_ORDER, run = function() return lua_bench.large(n) end},
    {ids = {"htod_pageable", "htod_pinned", "dtoh_pageable", "dtoh_pinned"},
     run = function() return lua_bench.host_copies(LOG2N) end},
    {ids = {"compile_cold", "compile_hit", "compile_disk"}, run = lua_bench.compile},
    {ids = {"graph_loop", "graph_replay", "graph_speedup"}, run = lua_bench.graph},
    {ids = {"matmul_f32", "matmul_f64", "matmul_f16", "matmul_f32_kernels", "matmul_f64_kernels",
            "matmul_f16_kernels", "matvec_f32", "matvec_t_f32", "matmul_cols_f32",
            "matmul_stack_f32", "sort_f32"},
     run = lua_bench.dense},
  }
  for _, g in ipairs(groups) do
    local any = false
    for _, id in ipairs(g.ids) do any = any or selected(id) end
    if any then
      io.stderr:write("bench: lua ", g.ids[1], " ...\n")
      -- the garbage of earlier figures (small a + b leaves thousands of arrays) is collected
      -- now, so its finalizers' frees are not timed as part of this figure
      collectgarbage()
      collectgarbage()
      gpu.synchronize()
      local okr, r = pcall(g.run)
      if okr then
        for id, v in pairs(r) do
          if id == "raw" then
            for raw_id, x in pairs(v) do
              if values.raw[raw_id] then
                local was = ("%s in bench-raw's own process: %.2f us"):format(raw_id, values.raw[raw_id])
                notes.raw = notes.raw and notes.raw .. "; " .. was or was
              end
              values.raw[raw_id] = x
            end
          elseif id == "paired" then
            for key, x in pairs(v) do values.paired[key] = x end
          elseif id == "note" then
            notes.raw = notes.raw and notes.raw .. "; " .. v or v
          else
            values.lua[id] = v
          end
        end
      else
        for _, id in ipairs(g.ids) do
          if notes[id] == nil then notes[id] = failure_note(id, r) end
        end
      end
      collectgarbage()
      gpu.synchronize()
    end
  end
end

-- Peers ------------------------------------------------------------------------------------

local function run_peers()
  if not PEERS then return end
  local ids = {}
  for _, f in ipairs(FIGURES) do if selected(f.id) then ids[#ids + 1] = f.id end end
  if #ids == 0 then return end
  local cmd = ("cd %s && python3 bench/peers.py --log2n %d --only %s 2>&1"):format(shell_quote(root),
    LOG2N, shell_quote(table.concat(ids, ",")))
  io.stderr:write("bench: peers (CuPy, PyTorch) ...\n")
  local p = io.popen(cmd, "r")
  if not p then return end
  for line in p:lines() do
    local lib, id, v = line:match("^RESULT (%w+)%.(%S+) (%S+)$")
    if lib and values[lib] then values[lib][id] = tonumber(v)
    else io.stderr:write("  peers: ", line, "\n") end
  end
  p:close()
end

-- Table ------------------------------------------------------------------------------------

local function fmt(v)
  if v == nil then return "-" end
  if v >= 1000 then return ("%.0f"):format(v) end
  if v >= 100 then return ("%.1f"):format(v) end
  return ("%.2f"):format(v)
end

-- ratio lua/raw, the target's text, and "pass" / "FAIL" / "-"
local function judge(f)
  local lua, raw = values.lua[f.id], f.raw and values.raw[f.raw]
  local ratio = values.paired[f.id .. "/" .. tostring(f.raw)] or
                (lua and raw and raw ~= 0 and lua / raw or nil)
  local t = f.target
  if t == nil then return ratio, "", "" end
  local text, ok
  if t.vs then
    local paired = t.vs_local and values.paired[f.id .. "/" .. t.vs_local]
    local base = values.raw[t.vs_local] or values.raw[t.vs]
    text = t.text
    if lua and base then
      local r = paired or lua / base
      if t.ratio_max then ok = r <= t.ratio_max else ok = r >= t.ratio_min end
      text = ("%s (%.2fx)"):format(text, r)
    end
  elseif t.ratio_max then
    text = ("<= %.2fx raw"):format(t.ratio_max)
    if ratio then ok = ratio <= t.ratio_max end
  elseif t.ratio_min then
    text = (">= %d%% of raw"):format(math.floor(t.ratio_min * 100 + 0.5))
    if ratio then ok = ratio >= t.ratio_min end
  elseif t.abs_max then
    text = ("%s %s %s"):format(t.strict and "<" or "<=", fmt(t.abs_max), f.unit)
    if lua then
      if t.strict then ok = lua < t.abs_max else ok = lua <= t.abs_max end
    end
  elseif t.abs_min then
    text = (">= %s%s"):format(fmt(t.abs_min), f.unit)
    if lua then ok = lua >= t.abs_min end
  end
  return ratio, text, ok == nil and "-" or ok and "pass" or "FAIL"
end

local function build_rows()
  local rows = {}
  local peers = next(values.cupy) ~= nil or next(values.torch) ~= nil
  local header = {"figure", "unit", "raw C", "lua-gpu", "lua/raw"}
  if peers then header[#header + 1] = "CuPy"; header[#header + 1] = "PyTorch" end
  header[#header + 1] = "target"
  header[#header + 1] = "result"
  for _, f in ipairs(FIGURES) do
    if selected(f.id) then
      local ratio, text, verdict = judge(f)
      local lua = values.lua[f.id]
      local note = notes[f.id]
      local row = {f.id, f.unit,
                   fmt(f.raw and values.raw[f.raw]),
                   lua and fmt(lua) or note and (note:match("^skipped") and "skipped" or "error") or "-",
                   ratio and ("%.2f"):format(ratio) or "-"}
      if peers then
        row[#row + 1] = fmt(values.cupy[f.id])
        row[#row + 1] = fmt(values.torch[f.id])
      end
      row[#row + 1] = text
      row[#row + 1] = verdict
      row.what = f.what:gsub("2%^N", "2^" .. LOG2N)
      row.note = note
      rows[#rows + 1] = row
    end
  end
  return header, rows
end

local function print_table(header, rows)
  local widths = {}
  for i, h in ipairs(header) do widths[i] = #h end
  for _, row in ipairs(rows) do
    for i, c in ipairs(row) do widths[i] = math.max(widths[i], #c) end
  end
  local function line(cells)
    local out = {}
    for i, c in ipairs(cells) do
      out[i] = (i <= 2 or i == #cells - 1) and c .. (" "):rep(widths[i] - #c)
               or (" "):rep(widths[i] - #c) .. c
    end
    return table.concat(out, "  ")
  end
  print(line(header))
  for _, row in ipairs(rows) do print(line(row)) end
  for _, row in ipairs(rows) do
    if row.note then print(("  %s: %s"):format(row[1], row.note)) end
  end
end

local function markdown(header, rows)
  local out = {}
  local dev = gpu.get_device()
  local dv = gpu.driver_version()
  out[#out + 1] = "# lua-gpu benchmark results\n"
  out[#out + 1] = ("- device: %s (%d SMs)"):format(dev:name(), SMS or 0)
  out[#out + 1] = ("- driver: CUDA %d.%d (%d); NVRTC %s"):format(dv // 1000, dv % 1000 // 10, dv,
    tostring(gpu.nvrtc_version()))
  out[#out + 1] = ("- date: %s"):format(os.date("!%Y-%m-%d %H:%M UTC"))
  out[#out + 1] = ("- large arrays: 2^%d float32; BENCH_ONLY=%s"):format(LOG2N, ONLY or "(all)")
  out[#out + 1] = "- times are medians after warm-up (host wall time for launches, allocation, " ..
                  "compiles and graphs; CUDA events for device work); bandwidth counts each " ..
                  "input read once and each output written once; lua/raw is lua-gpu's figure " ..
                  "over raw C's (times: lower is better; GB/s: higher is better), except for " ..
                  "rows timed in paired rounds (launches, small a + b, allocation): there it is the median " ..
                  "over rounds of each round's ratio, as is the small a + b's target ratio"
  if notes.raw then out[#out + 1] = "- raw C: " .. notes.raw end
  out[#out + 1] = ""
  out[#out + 1] = "| " .. table.concat(header, " | ") .. " | what |"
  local sep = {}
  for i = 1, #header + 1 do sep[i] = "---" end
  out[#out + 1] = "| " .. table.concat(sep, " | ") .. " |"
  for _, row in ipairs(rows) do
    local cells = {}
    for i, c in ipairs(row) do cells[i] = c:gsub("|", "\\|") end
    cells[#cells + 1] = (row.what .. (row.note and " (" .. row.note .. ")" or "")):gsub("|", "\\|")
    out[#out + 1] = "| " .. table.concat(cells, " | ") .. " |"
  end
  out[#out + 1] = ""
  out[#out + 1] = "Reproduce: `make bench` (BENCH_LOG2N, BENCH_ONLY, BENCH_PEERS=0)."
  return table.concat(out, "\n") .. "\n"
end

local t_start = now_us()
run_raw()
run_lua()
run_peers()
local header, rows = build_rows()
print()
print(("lua-gpu benchmarks on %s, 2^%d float32 (%.0f s)"):format(gpu.get_device():name(), LOG2N,
  (now_us() - t_start) / 1e6))
if notes.raw then print("raw C: " .. notes.raw) end
print_table(header, rows)
local text = markdown(header, rows)
-- a run of some figures (BENCH_ONLY) leaves a full run's table alone: A/B runs after a full
-- one in the same device call would overwrite it
local name = ONLY and "RESULTS-partial.md" or "RESULTS.md"
local f = assert(io.open(root .. "/bench/" .. name, "w"))
f:write(text)
f:close()
local out = os.getenv("OUT")
if out and out ~= "" then
  local g = io.open(out .. "/" .. name, "w")
  if g then g:write(text); g:close() end
end
