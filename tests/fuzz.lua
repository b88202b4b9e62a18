-- tests/fuzz.lua: a seeded random driver of the public Lua API.
--
--   lua5.4 tests/fuzz.lua [seconds]      (env: FUZZ_SEED, FUZZ_SECONDS, FUZZ_GPU=1,
--                                         FUZZ_TRACE=1, FUZZ_STRICT=1)
--
-- Calls every function reachable from require "gpu" (and the gpu.* modules it loads), every
-- method of every gpu.* type and their metamethods, with random arguments: wrong types,
-- edge-case numbers, garbage strings, shapes, option tables with known and misspelt keys,
-- objects of the wrong type and objects that have been freed.  Every error must be a string
-- or a gpu.Error; anything else fails the run.  Crashes and memory errors are the sanitizer's
-- to report (make fuzz builds core.so with ASan and UBSan).  The same seed replays the same
-- calls.  FUZZ_GPU=1 (on a machine with a device) also drives the device: it launches only
-- kernels that never dereference their arguments, so any sticky CUDA error (an illegal
-- address) is a bug the module let through, and fails the run.
-- FUZZ_STRICT=1 also fails on errors that look like faults inside the Lua layer ("attempt to
-- index a nil value") rather than argument checks.

local gpu = require "gpu"
local core = require "gpu.core"

local seconds = tonumber(arg and arg[1]) or tonumber(os.getenv("FUZZ_SECONDS")) or 10
local seed = tonumber(os.getenv("FUZZ_SEED")) or (os.time() % 1000000)
local gpu_mode = (os.getenv("FUZZ_GPU") or "") ~= "" and os.getenv("FUZZ_GPU") ~= "0"
local trace = (os.getenv("FUZZ_TRACE") or "") ~= ""
local strict = (os.getenv("FUZZ_STRICT") or "") ~= ""
local max_compiles = tonumber(os.getenv("FUZZ_COMPILES")) or 12
math.randomseed(seed)
local random = math.random

io.stdout:setvbuf("line")
print(("fuzz: seed %d, %g seconds, %s mode%s"):format(seed, seconds, gpu_mode and "GPU" or "CPU",
                                                       strict and ", strict" or ""))
if gpu_mode then
  local ok, why = gpu.available()
  if not ok then
    print("fuzz: FUZZ_GPU=1 but no device: " .. tostring(why))
    os.exit(1)
  end
end

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p " .. tmpdir))

-- ------------------------------------------------------------------ the API surface

local api = {}            -- {name = "gpu.host.empty", fn = f}
local seen = {}
local writes_files = {}   -- functions whose path arguments the fuzzer fixes to its temp dir

local function add_functions(prefix, t, depth)
  local names = {}
  for k in pairs(t) do
    if type(k) == "string" then names[#names + 1] = k end
  end
  table.sort(names)       -- pairs order differs between runs; the seed must replay
  for _, k in ipairs(names) do
    local v = t[k]
    if k:sub(1, 1) ~= "_" and k ~= "types" and k ~= "kernel_sources" then
      if type(v) == "function" and not seen[v] then
        seen[v] = true
        api[#api + 1] = {name = prefix .. k, fn = v}
      elseif type(v) == "table" and depth > 0 and getmetatable(v) == nil then
        add_functions(prefix .. k .. ".", v, depth - 1)
      end
    end
  end
  if t.Error and t.Error.is and not seen[t.Error.is] then
    seen[t.Error.is] = true
    api[#api + 1] = {name = prefix .. "Error.is", fn = t.Error.is}
  end
end

add_functions("gpu.", gpu, 1)
add_functions("gpu.core.", core, 1)
writes_files[core.cache_store] = true

-- Every gpu.* type by short name, with its methods (the Lua layer's ones included).
local type_names = {}
for name in pairs(core.types) do type_names[#type_names + 1] = name end
table.sort(type_names)

local function methods_of(mt)
  local list = {}
  for k, v in pairs(mt.__methods or {}) do
    if type(k) == "string" and type(v) == "function" then list[#list + 1] = k end
  end
  table.sort(list)
  return list
end

-- ------------------------------------------------------------------ random values

local pool = {}           -- values the API returned (objects, live and freed)
local POOL_MAX = 256

-- Light userdata are raw C pointers (a DLPack tensor from cap:pointer()): like a pointer in
-- C, one that was handed over or freed is the caller's to stop using, and the module cannot
-- tell a live one from a dangling one.  So they are not fed back into other calls.
-- Arrays with a dimension or an element count over 2^20 are not kept either: an edge integer
-- among small dimensions makes a valid array ({2^28, 0} holds nothing), and totable() of one
-- builds 2^28 tables: under ASan that ran for 97 s (seed 483760), past the run's time limit.
local BIG = 1 << 20
local function too_big(v)
  local ok, shape = pcall(function() return v.shape end)
  if not ok or type(shape) ~= "table" then return false end
  local n = 1.0                 -- a float: 32 dimensions of 2^20 overflow an integer
  for _, d in ipairs(shape) do
    if math.type(d) ~= "integer" or d > BIG then return true end
    n = n * d
  end
  return n > BIG
end

local function remember(v)
  local t = type(v)
  if t == "userdata" and debug.getmetatable(v) == nil then return end  -- light userdata
  if t == "userdata" and too_big(v) then return end
  if t == "userdata" or t == "table" or t == "function" or (t == "string" and #v < 4096) then
    if #pool < POOL_MAX then pool[#pool + 1] = v else pool[random(POOL_MAX)] = v end
  end
end

local function pick(list) return list[random(#list)] end

local dtypes = {"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "bool", "float16", "bfloat16", "complex64", "complex128"}
local option_keys = {"block", "grid", "shared", "stream", "non_blocking", "timing", "blocking",
                     "target", "arch", "options", "include_dirs", "no_extern_c", "name",
                     "headers", "cache", "out", "range", "seed", "axis", "preamble", "dtype",
                     "order", "keepdims", "async", "axes", "k", "cooperative", "cluster",
                     "priority", "attach", "libraries"}

local function misspell(s)
  local n = #s
  local r = random(4)
  if n < 2 then return s .. "x" end
  local i = random(n - 1)
  if r == 1 then return s:sub(1, i - 1) .. s:sub(i + 1, i + 1) .. s:sub(i, i) .. s:sub(i + 2) end
  if r == 2 then return s:sub(1, i - 1) .. s:sub(i + 1) end
  if r == 3 then return s:upper() end
  return s .. s:sub(n)
end

local function garbage_string()
  local r = random(10)
  if r == 1 then return "" end
  if r == 2 then return ("\0"):rep(random(0, 64)) end
  if r == 3 then return ("x"):rep(random(0, 5000)) end
  local n = random(0, 48)
  local bytes = {}
  for i = 1, n do bytes[i] = random(0, 255) end
  return string.char(table.unpack(bytes))
end

local small_ints = {-1, 0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 255, 256, 1024}
local edge_ints = {math.maxinteger, math.mininteger, 2^31 // 1, -2^31 // 1, 2^32 // 1,
                   2^53 // 1, 2^62 // 1, -2, 65536, 65535, 4096}
local edge_floats = {0.0, -0.0, 0.5, -1.5, 1e300, -1e300, 1 / 0, -1 / 0, 0 / 0, 2.0^63,
                     -2.0^63, 2.0^64, 1e-310, 3.0}

local function integer()
  local r = random(10)
  if r <= 6 then return pick(small_ints) end
  if r <= 8 then return random(-100, 5000) end
  local v = pick(edge_ints)
  -- on the device, a valid but huge grid or count would run for ages: keep to invalid ones
  if gpu_mode and v > 65536 and v < 2^31 then v = -v end
  return v
end

local function number()
  if random(3) == 1 then return pick(edge_floats) end
  return integer()
end

local value        -- forward

local function shape()
  local r = random(8)
  if r == 1 then return integer() end
  if r == 2 then return {} end
  if r == 3 then                      -- more dimensions than any array may have
    local t = {}
    for i = 1, random(30, 40) do t[i] = 1 end
    return t
  end
  -- accepted shapes stay small (totable() of 2^28 elements would run for minutes); the
  -- edge integers give shapes that must be rejected
  if r == 4 then return {integer(), random(0, 4), random(0, 4)} end
  if r == 5 then return {random(0, 4), value(1)} end
  local t = {}
  for i = 1, random(1, 3) do t[i] = random(0, 12) end
  return t
end

local function option_table(depth)
  local t = {}
  for _ = 1, random(0, 4) do
    local key = pick(option_keys)
    if random(4) == 1 then key = misspell(key) end
    if random(20) == 1 then key = value(depth + 1) end
    if key ~= nil and key == key then
      local v
      local r = random(4)
      if r == 1 then v = {random(1, 64)}
      elseif r == 2 then v = {integer(), integer(), integer()}
      else v = value(depth + 1) end
      t[key] = v
    end
  end
  return t
end

local benign = {
  function() end,
  function(...) return ... end,
  function() error("fuzz callback error") end,
  function() return "float32" end,
}

local sources = {
  "__global__ void k(float *a, int n) { }",
  "__global__ void k(float *a, const double *b, long long n, float x) { }",
  "__global__ void k(int n, char c, short s, unsigned long long u) { }",
  "__global__ void k(float *a, int n) { syntax error here }",
  "struct P { int a; float b; }; __global__ void k(P p, int *q) { }",
}

local function object_of_type(name)
  local mt = core.types[name]
  local found = {}
  for _, v in ipairs(pool) do
    if getmetatable(v) == mt then found[#found + 1] = v end
  end
  if #found > 0 then return pick(found) end
end

function value(depth)
  depth = depth or 0
  local r = random(depth > 2 and 14 or 22)
  if r <= 1 then return nil end
  if r == 2 then return random(2) == 1 end
  if r <= 4 then return integer() end
  if r == 5 then return number() end
  if r == 6 then return garbage_string() end
  if r == 7 then return pick(dtypes) end
  if r == 8 then return misspell(pick(dtypes)) end
  if r == 9 then return pick(sources) end
  if r <= 12 and #pool > 0 then return pick(pool) end
  if r == 13 then return pick(benign) end
  if r == 14 then return io.stdout end          -- a userdata of a foreign type
  if r <= 16 then return shape() end
  if r <= 18 then return option_table(depth) end
  if r == 19 then return coroutine.create(function() end) end
  if r == 20 then
    local t = {}
    for i = 1, random(0, 8) do t[i] = value(depth + 1) end
    return t
  end
  if r == 21 then return setmetatable({}, {__index = function() error("poisoned") end}) end
  return {{random(), random()}, {random(), random()}}
end

local function args()
  local t, n = {}, random(0, 6)
  for i = 1, n do t[i] = value() end
  if random(2) == 1 then n = n + 1; t[n] = option_table(0) end
  return t, n
end

-- ------------------------------------------------------------------ checking

local calls, errors, internal = 0, 0, 0
local compiles = 0
local internal_seen = {}
local recent = {}

local function describe(v)
  local t = type(v)
  if t == "string" then
    if #v > 24 or v:find("[^%w_%.%-]") then return ("<string #%d>"):format(#v) end
    return ("%q"):format(v)
  end
  if t == "table" then return getmetatable(v) and tostring(getmetatable(v).__name or "table") or "{...}" end
  if t == "userdata" then
    local mt = getmetatable(v)
    return mt and type(mt) == "table" and tostring(mt.__name) or "userdata"
  end
  return tostring(v)
end

local function note(name, a, n)
  local parts = {}
  for i = 1, n do parts[i] = describe(a[i]) end
  local line = ("%s(%s)"):format(name, table.concat(parts, ", "))
  recent[#recent % 20 + 1] = line
  if trace then io.stderr:write(calls, " ", line, "\n") end
  return line
end

local function fail(why)
  print("fuzz: FAILED after " .. calls .. " calls (seed " .. seed .. "): " .. why)
  print("recent calls (oldest first, ring of 20):")
  for _, line in ipairs(recent) do print("  " .. line) end
  os.exit(1)
end

local sticky = {CUDA_ERROR_ILLEGAL_ADDRESS = true, CUDA_ERROR_LAUNCH_FAILED = true,
                CUDA_ERROR_MISALIGNED_ADDRESS = true, CUDA_ERROR_ILLEGAL_INSTRUCTION = true,
                CUDA_ERROR_HARDWARE_STACK_ERROR = true, CUDA_ERROR_INVALID_PC = true}

-- Internal faults of the Lua layer, as opposed to argument checks: the interpreter's own
-- messages, which carry the position in the library's Lua code where they were raised.
-- (A message of the library's own that reads like them, such as "attempt to compare
-- GPUArrays with '<'", names the caller's position or none.)
local function looks_internal(msg)
  if not msg:find("gpu/[%w_]+%.lua:%d+: ") then return false end
  return msg:find("attempt to ", 1, true) or msg:find("stack overflow", 1, true)
      or msg:find("to 'format'", 1, true) or msg:find("to 'concat'", 1, true)
      or msg:find("to 'insert'", 1, true) or msg:find("to 'unpack'", 1, true)
end

local function check_call(line, ok, ...)
  calls = calls + 1
  if ok then
    for i = 1, select("#", ...) do remember((select(i, ...))) end
    return
  end
  errors = errors + 1
  local err = ...
  if gpu.Error.is(err) then
    if type(err.name) ~= "string" or type(err.message) ~= "string" or type(tostring(err)) ~= "string" then
      fail("malformed gpu.Error from " .. line)
    end
    if sticky[err.name] then fail("sticky CUDA error " .. tostring(err) .. " from " .. line) end
  elseif type(err) == "string" then
    if err == "" then fail("empty error message from " .. line) end
    if looks_internal(err) and not err:find("fuzz.lua:", 1, true) then
      internal = internal + 1
      local where = err:match("^[^:]*:%d+:") or err:sub(1, 60)
      if not internal_seen[where] then
        internal_seen[where] = line .. " -> " .. err:sub(1, 200)
        if strict then fail("internal error: " .. internal_seen[where]) end
      end
    end
  else
    fail(("error of type %s (%s) from %s"):format(type(err), describe(err), line))
  end
end

local profile = os.getenv("FUZZ_PROFILE") and {}
-- A call that runs away (a loop over a huge count taken from its arguments) is a bug like a
-- crash: the hook fails the run once one call has executed this many Lua instructions.
local HANG_INSTRUCTIONS = 2e8
local function call(name, fn, a, n)
  local line = note(name, a, n)
  local t0 = profile and os.clock()
  local steps = 0
  debug.sethook(function()
    steps = steps + 1e6
    if steps >= HANG_INSTRUCTIONS then
      debug.sethook()
      fail(("call still running after %.0e Lua instructions: %s\n%s")
           :format(HANG_INSTRUCTIONS, line, debug.traceback("", 2)))
    end
  end, "", 1e6)
  check_call(line, pcall(fn, table.unpack(a, 1, n)))
  debug.sethook()
  if profile then profile[name] = (profile[name] or 0) + os.clock() - t0 end
end

-- ------------------------------------------------------------------ actions

local binops = {
  function(x, y) return x + y end, function(x, y) return x - y end,
  function(x, y) return x * y end, function(x, y) return x / y end,
  function(x, y) return x // y end, function(x, y) return x % y end,
  function(x, y) return x ^ y end, function(x, y) return x & y end,
  function(x, y) return x | y end, function(x, y) return x ~ y end,
  function(x, y) return x << y end, function(x, y) return x >> y end,
  function(x, y) return x == y end, function(x, y) return x < y end,
  function(x, y) return x <= y end, function(x, y) return x .. y end,
  function(x) return -x end, function(x) return ~x end, function(x) return #x end,
  function(x) return tostring(x) end, function(x, y) return x[y] end,
  function(x, y, z) x[y] = z end, function(x, ...) return x(...) end,
}

local function is_compiler(fn)
  return fn == gpu.compile or fn == gpu.SourceModule or fn == core.compile
end

local function call_api()
  local entry = pick(api)
  local a, n = args()
  if is_compiler(entry.fn) then
    if compiles >= max_compiles or random(50) ~= 1 then return end
    compiles = compiles + 1
    a[1] = random(4) > 1 and pick(sources) or a[1]
    if random(2) == 1 then a[2] = {arch = pick({"sm_90", "sm_80", "compute_90", "sm_0", misspell("sm_90")}),
                                   target = random(2) == 1 and "cubin" or nil} end
    n = math.max(n, 2)
  end
  if writes_files[entry.fn] then             -- never outside the temp dir
    a[1] = tmpdir
    a[2] = ("f%d"):format(random(1, 8))
    n = math.max(n, 2)
  end
  call(entry.name, entry.fn, a, n)
end

local function call_method()
  local tname = pick(type_names)
  local mt = core.types[tname]
  local list = methods_of(mt)
  if #list == 0 then return end
  local mname = pick(list)
  local fn = mt.__methods[mname]
  local self = object_of_type(tname)
  if self == nil or random(8) == 1 then self = value() end
  local a, n = args()
  table.insert(a, 1, self)
  call(tname .. ":" .. mname, fn, a, n + 1)
end

local function call_metamethod()
  local tname = pick(type_names)
  local mt = core.types[tname]
  local names = {}
  for k, v in pairs(mt) do
    if type(v) == "function" and k ~= "__gc" then names[#names + 1] = k end
  end
  if random(10) == 1 and mt.__gc then names[#names + 1] = "__gc" end   -- a finalizer, by hand
  table.sort(names)
  if #names == 0 then return end
  local mname = pick(names)
  local self = object_of_type(tname) or value()
  local a, n = args()
  table.insert(a, 1, self)
  call(tname .. "." .. mname, mt[mname], a, n + 1)
end

local function operator()
  local op = pick(binops)
  local x, y, z = value(), value(), value()
  if random(2) == 1 and #pool > 0 then x = pick(pool) end
  if random(2) == 1 then x, y = y, x end
  local line = note("operator", {x, y, z}, 3)
  local ok, err = pcall(op, x, y, z)
  if not ok and type(err) == "string" and not err:find("fuzz.lua:", 1, true) and
     not err:find("^[^:]*:%d+:") then
    err = "fuzz.lua: " .. err       -- Lua's own string arithmetic, not the module's fault
  end
  check_call(line, ok, err)
end

local function in_coroutine()
  local entry = pick(api)
  if is_compiler(entry.fn) or writes_files[entry.fn] then return end
  local a, n = args()
  local line = note("coroutine " .. entry.name, a, n)
  local co = coroutine.create(function() return entry.fn(table.unpack(a, 1, n)) end)
  check_call(line, coroutine.resume(co))
  if random(2) == 1 then coroutine.close(co) end
end

-- Launch kernels that never touch memory, with valid and invalid configurations.
local safe_kernels = {}
local function device_launch()
  if #safe_kernels == 0 then
    local ok, mod = pcall(gpu.SourceModule, [[
      struct P { int a; float b; };
      __global__ void noop_pi(float *a, int n) { }
      __global__ void noop_mixed(const double *p, long long n, float x, char c, P s) { }
      __global__ void noop_scalars(unsigned long long u, short s, double d) { }
    ]])
    if not ok then fail("compiling the safe kernels: " .. tostring(mod)) end
    remember(mod)
    for _, name in ipairs({"noop_pi", "noop_mixed", "noop_scalars"}) do
      safe_kernels[#safe_kernels + 1] = mod:get_function(name)
    end
  end
  local f = pick(safe_kernels)
  local a, n = args()
  local opts = option_table(0)
  if random(2) == 1 then
    opts.block = {pick({1, 2, 32, 64, 1024, 1025, 0, -1})}
    opts.grid = {pick({1, 2, 3, 7, 64, 65536, 2^31 // 1, 0, -1}), pick({1, 2, 3, 65536})}
  end
  n = n + 1
  a[n] = opts
  call("kernel", f, a, n)
end

local actions = {
  {call_api, 40}, {call_method, 30}, {call_metamethod, 12}, {operator, 10},
  {in_coroutine, 3},
  {function() collectgarbage(random(2) == 1 and "collect" or "step") end, 2},
}
if gpu_mode then actions[#actions + 1] = {device_launch, 10} end
local total_weight = 0
for _, a in ipairs(actions) do total_weight = total_weight + a[2] end

local function step()
  local r = random(total_weight)
  for _, a in ipairs(actions) do
    r = r - a[2]
    if r <= 0 then return a[1]() end
  end
end

-- ------------------------------------------------------------------ run

-- Seed the pool with one of everything the CPU can make.
for _, make in ipairs({
  function() return gpu.host.zeros({2, 3}, "float32") end,
  function() return gpu.host.from_table({1, 2, 3}, "int32") end,
  function() local h = gpu.host.ones(4, "uint8"); h:free(); return h end,
  function() return gpu.int32(7) end,
  function() return gpu.In(gpu.host.zeros(4, "float32")) end,
}) do
  check_call("seed", pcall(make))
end
if gpu_mode then
  for _, make in ipairs({
    function() return gpu.mem_alloc(256) end,
    function() local b = gpu.mem_alloc(64); b:free(); return b end,
    function() return gpu.Stream() end, function() return gpu.Event() end,
    function() return gpu.host.pagelocked_empty(16, "float32") end,
    function() return gpu.host.managed_empty(16, "float32") end,
    function() return gpu.array_empty({4, 4}, "float32") end,
  }) do
    check_call("seed", pcall(make))
  end
end

local deadline = os.time() + seconds
local started = os.clock()
while true do
  step()
  if calls % 64 == 0 and os.time() >= deadline then break end
end

collectgarbage()
os.execute("rm -rf " .. tmpdir)
local summary = ("fuzz: seed %d: %d calls (%d raised errors, %d internal-looking, %d compiles) in %.1f s CPU")
  :format(seed, calls, errors, internal, compiles, os.clock() - started)
print(summary)
if internal > 0 then
  print("fuzz: internal-looking errors (argument checks the Lua layer lacks):")
  local keys = {}
  for k in pairs(internal_seen) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do print("  " .. internal_seen[k]) end
end
if profile then
  local names = {}
  for k in pairs(profile) do names[#names + 1] = k end
  table.sort(names, function(x, y) return profile[x] > profile[y] end)
  for i = 1, math.min(10, #names) do print(("  %-40s %.2f s"):format(names[i], profile[names[i]])) end
end
print("fuzz: OK")
