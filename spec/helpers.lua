-- Shared by the specs: GPU-only tests, exact error checks, random data and references.

local busted = require "busted"
local assert = require "luassert"  -- busted's assert; this module is not run inside a spec
local gpu = require "gpu"

local helpers = {gpu = gpu}

local available, why = gpu.available()
helpers.has_gpu = available
helpers.no_gpu_reason = why

-- gpu_it(name, fn): a spec that needs a device, tagged #gpu.  Without one it is pending with
-- the reason, or (in `busted --run=gpu`) a failure.
function helpers.gpu_it(name, fn)
  name = name .. " #gpu"
  if available then return busted.it(name, fn) end
  if rawget(_G, "GPU_SPECS_REQUIRE_DEVICE") then
    return busted.it(name, function() error("this run needs a GPU, but: " .. why) end)
  end
  return busted.pending(name .. " (no GPU: " .. why .. ")")
end

-- multi_gpu_it(name, fn): a spec that needs two devices, tagged #gpu: pending with the reason
-- where there are fewer (on a one-GPU machine too: it cannot pass there).
function helpers.multi_gpu_it(name, fn)
  if available and gpu.device_count() < 2 then
    return busted.pending(name .. " #gpu (needs two devices; this machine has " ..
                          gpu.device_count() .. ")")
  end
  return helpers.gpu_it(name, fn)
end

-- The error fn raises, with Lua's "file:line: " position stripped from string messages.
function helpers.error_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error, but the call succeeded")
  if type(err) == "string" then err = err:gsub("^[^:\n]+:%d+: ", "") end
  return err
end

-- Asserts fn raises exactly message (position stripped; gpu.Error compared by tostring).
function helpers.assert_error(message, fn, ...)
  local err = helpers.error_of(fn, ...)
  assert.are.equal(message, type(err) == "string" and err or tostring(err))
end

-- Asserts fn raises a gpu.Error with the given name (and call, if given); returns it.
function helpers.assert_gpu_error(name, call, fn, ...)
  local err = helpers.error_of(fn, ...)
  assert.is_true(gpu.Error.is(err), "expected a gpu.Error, got: " .. tostring(err))
  assert.are.equal(name, err.name)
  if call then assert.are.equal(call, err.call) end
  return err
end

-- Fresh random data: floats in [-scale, scale), integers in [lo, hi].
function helpers.random_floats(n, scale)
  scale = scale or 1
  local t = {}
  for i = 1, n do t[i] = (math.random() * 2 - 1) * scale end
  return t
end

function helpers.random_integers(n, lo, hi)
  local t = {}
  for i = 1, n do t[i] = math.random(lo, hi) end
  return t
end

-- A HostArray's elements, flat in row-major order, as a Lua list.
function helpers.flat(h)
  local t = {}
  for i = 1, h.size do t[i] = h[i] end
  return t
end

-- Rounds a Lua number to float32, as the device stores it.
function helpers.f32(x)
  return string.unpack("f", string.pack("f", x))
end

-- Asserts two numbers agree to a relative tolerance (NaN matches only NaN).
function helpers.assert_close(expected, actual, rtol, what)
  rtol = rtol or 1e-6
  if expected ~= expected then
    assert(actual ~= actual, (what or "value") .. ": expected nan, got " .. tostring(actual))
    return
  end
  local err = math.abs(expected - actual)
  local tol = rtol * math.max(1, math.abs(expected))
  assert(err <= tol, ("%s: expected %.9g, got %.9g (error %.3g > %.3g)"):format(
    what or "value", expected, actual, err, tol))
end

-- Checks a per-state switch (gpu.fast_paths, gpu.use_cublas), called through switch(value)
-- (a closure that calls it by its field, so the error names it): on at first, each call
-- returns the setting before it, and a non-boolean is refused with luaL_checktype's message.
function helpers.assert_switch(switch, name)
  assert.is_true(switch())
  assert.is_true(switch(false))
  assert.is_false(switch())
  assert.is_false(switch(true))
  assert.is_true(switch())
  helpers.assert_error(("bad argument #1 to '%s' (boolean expected, got number)"):format(name),
                       function() return (switch(1)) end)
end

-- Runs Lua code in a child interpreter that finds this tree's modules, with extra
-- environment variables; returns its output (stdout and stderr) and whether it succeeded.
function helpers.run_lua(code, env)
  local lua = os.getenv("LUA") or "lua5.4"
  local vars = {("LUA_PATH=%q"):format(package.path), ("LUA_CPATH=%q"):format(package.cpath)}
  for k, v in pairs(env or {}) do vars[#vars + 1] = ("%s=%q"):format(k, v) end
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local p = assert(io.popen(("env %s %s %s 2>&1"):format(table.concat(vars, " "), lua, script)))
  local out = p:read("a")
  local ok = p:close()
  os.remove(script)
  return out, ok
end

-- run_lua on the stand-ins for the driver, cuBLAS, cuFFT and cuSOLVER (tools/fakecuda.c: host
-- memory for device memory, launches that run nothing; tools/fakecublas.c, tools/fakecufft.c,
-- tools/fakecusolver.c), built by make test.
local fakes = {GPU_CUDA_LIBRARY = "build/libfakecuda.so", GPU_CUBLAS_LIBRARY = "build/libfakecublas.so",
               GPU_CUFFT_LIBRARY = "build/libfakecufft.so", GPU_CUSOLVER_LIBRARY = "build/libfakecusolver.so"}
function helpers.run_with_fakes(code, extra)
  local env = {}
  for k, path in pairs(fakes) do
    assert(io.open(path), path .. " is missing: `make fakecuda` builds it (so does `make test`)"):close()
    env[k] = path
  end
  for k, v in pairs(extra or {}) do env[k] = v end
  return helpers.run_lua(code, env)
end

-- A fresh, empty directory under /tmp.
function helpers.temp_dir()
  local path = os.tmpname()
  os.remove(path)
  assert(os.execute("mkdir -p " .. path))
  return path
end

math.randomseed(os.time(), math.floor(os.clock() * 1e6))  -- randomseed wants integers

return helpers
