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
  helpers.gpu_it("returns the loaded module for a repeated SourceModule", function()
    local source = unique_source()
    local a = gpu.SourceModule(source)
    local hits = gpu.compile_stats.module_hits
    local b = gpu.SourceModule(source)
    assert.are.equal(a, b)
    assert.are.equal(hits + 1, gpu.compile_stats.module_hits)
    assert.are_not.equal(a, gpu.SourceModule(source, {cache = false}))
  end)

  helpers.gpu_it("does not hand out a module that was freed", function()
    local source = unique_source()
    local a = gpu.SourceModule(source)
    a:free()
    local b = gpu.SourceModule(source)
    assert.is_true(b:is_loaded())
    assert.are_not.equal(a, b)
  end)
end)
