-- The compile cache: disk entries shared between processes, and loaded modules in process.
local helpers = require "helpers"
local gpu = helpers.gpu

-- A child that compiles `source` for sm_90 and prints the cache counters and a digest.
local function compile_in_child(dir, source, extra_env)
  local env = {GPU_CACHE_DIR = dir}
  for k, v in pairs(extra_env or {}) do env[k] = v end
  local out, ok = helpers.run_lua(([[
    local gpu = require "gpu"
    local image = gpu.compile(%q, {arch = "sm_90"})
    local s = gpu.compile_stats
    print(("nvrtc=%%d hits=%%d stores=%%d size=%%d hash=%%s loaded=%%s"):format(s.nvrtc, s.disk_hits,
      s.disk_stores, #image, require("gpu.core").cache_hash(image), tostring(gpu.nvrtc_loaded())))
  ]]):format(source), env)
  assert(ok, out)
  local stats = {}
  for k, v in out:gmatch("(%w+)=(%w+)") do stats[k] = tonumber(v) or v end
  assert(stats.loaded, out)
  return stats
end

local function files_in(dir)
  local p = io.popen("ls -A " .. dir .. " 2>/dev/null")
  local names = {}
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  return names
end

local function unique_source()
  return ("__global__ void k(float *a) { a[threadIdx.x] += %d.0f; }"):format(math.random(1, 1e9))
end

describe("the disk cache", function()
  it("lets a new process load what another compiled, without NVRTC #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    local first = compile_in_child(dir, source)
    assert.are.same({1, 0, 1}, {first.nvrtc, first.hits, first.stores})
    local second = compile_in_child(dir, source)
    assert.are.same({0, 1, 0}, {second.nvrtc, second.hits, second.stores})
    assert.are.equal(first.hash, second.hash)
    assert.are.equal(1, #files_in(dir))
  end)

  it("recompiles a truncated or corrupted entry instead of trusting it #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    local good = compile_in_child(dir, source)
    local path = dir .. "/" .. files_in(dir)[1]
    local f = assert(io.open(path, "rb"))
    local bytes = f:read("a")
    f:close()
    for _, damaged in ipairs{bytes:sub(1, #bytes // 2),                      -- torn
                             bytes:sub(1, -2) .. string.char(bytes:byte(-1) ~ 1),  -- flipped bit
                             ""} do
      f = assert(io.open(path, "wb"))
      f:write(damaged)
      f:close()
      local again = compile_in_child(dir, source)
      assert.are.equal(1, again.nvrtc)
      assert.are.equal(good.hash, again.hash)
      assert.are.equal(1, again.stores)      -- and the entry is whole again
    end
  end)

  it("takes a huge file at an entry's path for a miss, allocating nothing for it", function()
    local path = helpers.temp_dir() .. "/entry"
    local f = assert(io.open(path, "wb"))
    f:seek("set", 1 << 40)                   -- a sparse 1 TiB file: no disk space used
    f:write("x")
    f:close()
    assert.is_nil(require("gpu.core").cache_load(path, "key"))
    os.remove(path)
  end)

  it("never loads an entry made for another architecture or version #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    compile_in_child(dir, source)
    local name = files_in(dir)[1]
    -- the same bytes under the name another arch would use: its key inside does not match
    local other = name:gsub("sm_90", "sm_80")
    assert(os.execute(("cp %s/%s %s/%s"):format(dir, name, dir, other)))
    local out, ok = helpers.run_lua(([[
      local gpu = require "gpu"
      gpu.compile(%q, {arch = "sm_80"})
      print(gpu.compile_stats.nvrtc, gpu.compile_stats.disk_hits)
    ]]):format(source), {GPU_CACHE_DIR = dir})
    assert(ok, out)
    assert.are.equal("1\t0", out:match("^[^\n]*"))
    -- another version: the module's version is part of the key
    local out2 = helpers.run_lua(([[
      local gpu = require "gpu"
      gpu.VERSION = "0.0.0-other"
      gpu.compile(%q, {arch = "sm_90"})
      print(gpu.compile_stats.nvrtc, gpu.compile_stats.disk_hits)
    ]]):format(source), {GPU_CACHE_DIR = dir})
    assert.are.equal("1\t0", out2:match("^[^\n]*"))
  end)

  it("degrades to no cache, without an error, when the directory is unwritable #nvrtc", function()
    local dir = helpers.temp_dir()
    local stats = compile_in_child("/proc/lua-gpu-cannot-exist", unique_source())
    assert.are.same({1, 0, 0}, {stats.nvrtc, stats.hits, stats.stores})
    -- a plain file where the directory should be
    local blocker = dir .. "/file"
    io.open(blocker, "w"):close()
    stats = compile_in_child(blocker, unique_source())
    assert.are.same({1, 0}, {stats.nvrtc, stats.stores})
  end)

  it("is off with GPU_CACHE_DISABLE=1 #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    compile_in_child(dir, source, {GPU_CACHE_DISABLE = "1"})
    local stats = compile_in_child(dir, source, {GPU_CACHE_DISABLE = "1"})
    assert.are.equal(1, stats.nvrtc)
    assert.are.same({}, files_in(dir))
  end)

  it("survives processes filling it at once: nobody reads a torn entry #nvrtc", function()
    local dir = helpers.temp_dir()
    local sources = {}
    for i = 1, 4 do sources[i] = unique_source() end
    local code = ([[
      local gpu = require "gpu"
      local core = require "gpu.core"
      local sources = {%q, %q, %q, %q}
      local first = {}
      for round = 1, 3 do
        for i, s in ipairs(sources) do
          local image = gpu.compile(s, {arch = "sm_90"})
          first[i] = first[i] or image
          assert(image == first[i], "image changed between rounds")
        end
      end
      print("ok", gpu.compile_stats.nvrtc + gpu.compile_stats.disk_hits)
    ]]):format(table.unpack(sources))
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(code)
    f:close()
    local lua = os.getenv("LUA") or "lua5.4"
    local cmd = {}
    for i = 1, 6 do
      cmd[#cmd + 1] = ("env LUA_PATH=%q LUA_CPATH=%q GPU_CACHE_DIR=%q %s %s > %s/out%d 2>&1 &")
        :format(package.path, package.cpath, dir, lua, script, dir, i)
    end
    assert(os.execute(table.concat(cmd, " ") .. " wait"))
    os.remove(script)
    for i = 1, 6 do
      local out = io.open(("%s/out%d"):format(dir, i)):read("a")
      assert.are.equal("ok\t12\n", out)
    end
    local entries = 0
    for _, name in ipairs(files_in(dir)) do
      assert.is_nil(name:find("%.tmp$"), "a temporary file was left behind: " .. name)
      if not name:find("^out") then entries = entries + 1 end
    end
    assert.are.equal(4, entries)
  end)

  it("serves a hit without loading NVRTC #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    assert.are.equal("true", compile_in_child(dir, source).loaded)
    local second = compile_in_child(dir, source)
    assert.are.same({0, 1, "false"}, {second.nvrtc, second.hits, second.loaded})
  end)

  it("keys on the NVRTC library file: another one (or the same one changed) misses #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    compile_in_child(dir, source)
    local copy = helpers.temp_dir() .. "/libnvrtc.so"
    assert(os.execute(("cp %q %q && touch -d '2001-02-03 04:05:06' %q"):format(gpu.nvrtc_path(), copy, copy)))
    local env = {GPU_NVRTC_LIBRARY = copy}
    local other = compile_in_child(dir, source, env)
    assert.are.same({1, 0, 1}, {other.nvrtc, other.hits, other.stores})
    local again = compile_in_child(dir, source, env)
    assert.are.same({0, 1, "false"}, {again.nvrtc, again.hits, again.loaded})
    assert(os.execute(("touch -d '2002-02-03 04:05:06' %q"):format(copy)))
    local touched = compile_in_child(dir, source, env)
    assert.are.same({1, 0}, {touched.nvrtc, touched.hits})
    -- the original library still finds its own entry
    assert.are.same({0, 1}, {compile_in_child(dir, source).nvrtc, compile_in_child(dir, source).hits})
    os.remove(copy)
  end)

  it("names the library it would load, and that is the one it loads #nvrtc", function()
    local out, ok = helpers.run_lua([[
      local core = require "gpu.core"
      local before = core.nvrtc_identity()
      assert(not core.nvrtc_loaded())
      core.nvrtc_version()
      assert(core.nvrtc_loaded())
      print(before == core.nvrtc_identity(), before:find(core.nvrtc_path(), 1, true) == 1)
    ]])
    assert(ok, out)
    assert.are.equal("true\ttrue\n", out)
  end)

  helpers.gpu_it("lets SourceModule in a new process load the device's cubin without NVRTC", function()
    local dir, source = helpers.temp_dir(), unique_source()
    local code = ([[
      local gpu = require "gpu"
      local m = gpu.SourceModule(%q)
      assert(m:get_function("k"))
      local s = gpu.compile_stats
      print(s.nvrtc, s.disk_hits, gpu.nvrtc_loaded())
    ]]):format(source)
    local out, ok = helpers.run_lua(code, {GPU_CACHE_DIR = dir})
    assert(ok, out)
    assert.are.equal("1\t0\ttrue", out:match("^[^\n]*"))
    out, ok = helpers.run_lua(code, {GPU_CACHE_DIR = dir})
    assert(ok, out)
    assert.are.equal("0\t1\tfalse", out:match("^[^\n]*"))
  end)

  it("keys on the options too #nvrtc", function()
    local dir, source = helpers.temp_dir(), unique_source()
    compile_in_child(dir, source)
    local out, ok = helpers.run_lua(([[
      local gpu = require "gpu"
      gpu.compile(%q, {arch = "sm_90", options = {"-DFOO=1"}})
      print(gpu.compile_stats.nvrtc)
    ]]):format(source), {GPU_CACHE_DIR = dir})
    assert(ok, out)
    assert.are.equal("1", out:match("^%d+"))
  end)
end)

describe("the in-process module cache", function()
  -- SourceModule on the stand-in driver (tools/fakecuda.c: any image loads, launches run
  -- nothing) in a child: its code, after a prelude that names the source `src`.
  local function with_module_cache(code, env)
    local out, ok = helpers.run_with_fakes(([[
      local gpu = require "gpu"
      local core = require "gpu.core"
      local stats = gpu.compile_stats
      local src = %q
      local function error_of(fn)
        local ok, err = pcall(fn)
        assert(not ok, "expected an error")
        return (tostring(err):gsub("^[^:\n]+:%%d+: ", ""))
      end
    ]]):format(unique_source()) .. code, env)
    assert(ok, out)
    return out
  end

  it("gives each SourceModule a Module of its own, sharing one load", function()
    local out = with_module_cache([[
      local m1 = gpu.SourceModule(src)
      local f1 = m1.k
      local hits = stats.module_hits
      local g, image
      do
        local m2 <close> = gpu.SourceModule(src)
        print(rawequal(m1, m2), stats.module_hits - hits)
        g = m2.k
        image = (core.module_image or print)(m2)
      end
      -- closing m2 ended its share only: m1 and its Functions still work
      print(m1:is_loaded(), tostring(m1) ~= "gpu.Module(freed)")
      local buf <close> = gpu.mem_alloc(64)
      f1(buf, {block = {16}})
      m1:get_function("k")(buf, {block = {16}})
      m1.k:prepared_call(1, 16, buf)
      -- and m2's are dead, with the usual messages
      print(error_of(function() g(buf, {block = {16}}) end))
      print(tostring(g))
      print(rawequal(core.module_image(m1), image))     -- one loaded module
    ]], {GPU_CACHE_DISABLE = "1"})
    assert.are.equal("false\t1\n" .. "true\ttrue\n"
                     .. "kernel 'k' belongs to a module that has been freed\n"
                     .. "gpu.Function(k, module freed)\n" .. "true\n", out)
  end)

  it("keeps freeing a share idempotent and using it afterwards an error", function()
    local out = with_module_cache([[
      local a, b = gpu.SourceModule(src), gpu.SourceModule(src)
      a:free()
      a:free()
      print(a:is_loaded(), b:is_loaded(), tostring(a))
      print(error_of(function() a:get_function("k") end))
      print(error_of(function() return a.k end))
      print(error_of(function() a:get_global("g") end))
      print(b:get_function("k").name, b.k.name)
    ]])
    assert.are.equal("false\ttrue\tgpu.Module(freed)\n"
                     .. "calling 'get_function' on bad self (module has been freed)\n"
                     .. "bad argument #1 to 'index' (module has been freed)\n"
                     .. "calling 'get_global' on bad self (module has been freed)\n"
                     .. "k\tk\n", out)
  end)

  it("unloads the module once every share is freed, and loads it afresh after", function()
    local out = with_module_cache([[
      local a = gpu.SourceModule(src)
      local image = core.module_image(a)
      local hits = stats.module_hits
      local b = gpu.SourceModule(src)
      a:free()
      local c <close> = gpu.SourceModule(src)           -- b still holds it: a hit
      print(stats.module_hits - hits, rawequal(core.module_image(c), image))
      c:free()
      b:free()                                          -- the last share: unloaded now
      print(core.module_share(image))
      hits = stats.module_hits
      local d = gpu.SourceModule(src)
      print(stats.module_hits - hits, rawequal(core.module_image(d), image), d:is_loaded())
    ]])
    assert.are.equal("2\ttrue\nnil\n0\tfalse\ttrue\n", out)
  end)

  it("lets the collector unload a module whose shares were all dropped", function()
    -- a module used since the last collection survives it (SourceModule(src).k(...) in a
    -- loop is not reloaded at each cycle); one unused for a whole cycle goes
    local out = with_module_cache([[
      collectgarbage("stop")                            -- only the collections below
      local probe = setmetatable({}, {__mode = "v"})
      probe[1] = core.module_image(gpu.SourceModule(src))
      gpu.SourceModule(src).k(gpu.mem_alloc(64), {block = {16}})
      collectgarbage()
      local hits = stats.module_hits
      gpu.SourceModule(src)
      print(stats.module_hits - hits, probe[1] ~= nil)
      collectgarbage()
      collectgarbage()
      print(probe[1])
      hits = stats.module_hits
      gpu.SourceModule(src)
      print(stats.module_hits - hits)
    ]])
    assert.are.equal("1\ttrue\nnil\n0\n", out)
  end)

  it("shares nothing with cache = false", function()
    local out = with_module_cache([[
      local a = gpu.SourceModule(src)
      local hits = stats.module_hits
      local b = gpu.SourceModule(src, {cache = false})
      print(stats.module_hits - hits, rawequal(core.module_image(a), core.module_image(b)))
      b:free()
      print(a:is_loaded(), gpu.SourceModule(src):is_loaded(), stats.module_hits - hits)
    ]])
    assert.are.equal("0\tfalse\ntrue\ttrue\t1\n", out)
  end)

  it("makes a share of a loaded image only (core.module_share, the cache's)", function()
    local out = with_module_cache([[
      local image = core.module_image(gpu.SourceModule(src, {cache = false}))
      print(core.module_share(image) ~= nil, core.module_share(image) ~= nil)
      print(pcall(core.module_share, gpu.SourceModule(src)))
    ]])
    assert.are.equal("true\ttrue\nfalse\tbad argument #1 to 'gpu.core.module_share' (gpu.ModuleImage expected, got gpu.Module)\n", out)
  end)

  helpers.gpu_it("returns a new share of the loaded module for a repeated SourceModule", function()
    local source = unique_source()
    local a = gpu.SourceModule(source)
    local hits = gpu.compile_stats.module_hits
    local b = gpu.SourceModule(source)
    assert.are_not.equal(a, b)
    assert.are.equal(hits + 1, gpu.compile_stats.module_hits)
    assert.are.equal(a.k.handle, b.k.handle)           -- one CUmodule: the same CUfunction
    assert.are_not.equal(a, gpu.SourceModule(source, {cache = false}))
    assert.are.equal(hits + 1, gpu.compile_stats.module_hits)
  end)

  helpers.gpu_it("does not hand out a module that was freed", function()
    local source = unique_source()
    local a = gpu.SourceModule(source)
    a:free()
    local hits = gpu.compile_stats.module_hits
    local b = gpu.SourceModule(source)
    assert.is_true(b:is_loaded())
    assert.are_not.equal(a, b)
    assert.are.equal(hits, gpu.compile_stats.module_hits)   -- loaded anew
  end)

  helpers.gpu_it("launches a kernel of one share after the other was closed", function()
    local source = [[
__global__ void axpb(float *y, const float *x, float a, float b, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
]] .. ("// %d\n"):format(math.random(1, 1e9))
    local keep = gpu.SourceModule(source)
    local f = keep.axpb
    do
      local other <close> = gpu.SourceModule(source)
      assert.are.equal(f.handle, other.axpb.handle)
    end
    collectgarbage()
    local n = 1000 + math.random(0, 3000)
    local x = helpers.random_floats(n, 100)
    local a, b = helpers.f32((math.random() * 2 - 1) * 4), helpers.f32((math.random() * 2 - 1) * 4)
    local x_gpu = gpu.to_device(gpu.host.from_table(x, "float32"))
    local y_gpu <close> = gpu.mem_alloc(4 * n)
    f(y_gpu, x_gpu, a, b, n, {block = {128}, grid = {(n + 127) // 128}})
    keep:get_function("axpb")(y_gpu, y_gpu, 1, 0, n, {block = {256}, grid = {(n + 255) // 256}})
    local y = gpu.from_device(y_gpu, n, "float32"):totable()
    for i = 1, n do
      local expected = helpers.f32(helpers.f32(a * helpers.f32(x[i])) + b)
      helpers.assert_close(expected, y[i], 1e-6, "y[" .. i .. "]")
    end
    x_gpu:free()
  end)
end)
