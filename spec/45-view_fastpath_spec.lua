-- The view methods' C paths (src/array.c's view_method): a:transpose(), :reshape(), :ravel(),
-- :view() and :slice() make the common views in C, a:copy() copies a contiguous array, and
-- each hands every other call, errors included, to its Lua method.  Each must give what the Lua method gives (reached with
-- the fast paths off: gpu.fast_paths(false)).
local helpers = require "helpers"
local gpu = helpers.gpu
local core = require "gpu.core"

-- What a call made: its layout and elements, or its error (position stripped).
local function outcome(call)
  local ok, v = pcall(call)
  if not ok then return {error = tostring(v):gsub("^[^:\n]+:%d+: ", "")} end
  return {dtype = v.dtype, shape = v.shape, strides = v.strides, offset = v.offset,
          contiguous = v.is_contiguous, bytes = v:get():bytes()}
end

local function general_outcome(call)
  local was = gpu.fast_paths(false)
  local result = outcome(call)
  gpu.fast_paths(was)
  return result
end

local function assert_same(what, call)
  assert.are.same(general_outcome(call), outcome(call), what)
end

-- Arrays of random float32 of several layouts: owners and views of each kind.
local function arrays()
  local function random(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    return gpu.to_gpu(helpers.random_floats(n, 100), "float32"):reshape(shape)
  end
  local m = random({6, 8})
  return {
    {"vector", random({24})},
    {"matrix", m},
    {"3-d", random({2, 3, 4})},
    {"0-d", gpu.to_gpu(helpers.random_floats(1), "float32"):reshape({})},
    {"empty", gpu.zeros({0, 3}, "float32")},
    {"transposed", m:transpose()},
    {"sliced rows", m:slice(2, 5)},
    {"stepped rows", m:slice(6, 1, -2)},
    {"offset vector", random({30}):slice(7, 30)},
  }
end

local CALLS = {
  {"transpose()", function(a) return a:transpose() end},
  {"a.T", function(a) return a.T end},
  {"transpose{...} reversed", function(a)
    local axes = {}
    for i = 1, a.ndim do axes[i] = a.ndim + 1 - i end
    return a:transpose(axes)
  end},
  {"transpose{1, 3, 2}", function(a) return a:transpose({1, 3, 2}) end},
  {"transpose{1, 1}", function(a) return a:transpose({1, 1}) end},
  {"transpose{2.0, 1.0}", function(a) return a:transpose({2.0, 1.0}) end},
  {"transpose{1.5, 2}", function(a) return a:transpose({1.5, 2}) end},
  {"transpose('x')", function(a) return a:transpose("x") end},
  {"reshape(-1)", function(a) return a:reshape(-1) end},
  {"reshape(2, -1)", function(a) return a:reshape(2, -1) end},
  {"reshape{-1, 4}", function(a) return a:reshape({-1, 4}) end},
  {"reshape(size)", function(a) return a:reshape(a.size) end},
  {"reshape(1, size, 1)", function(a) return a:reshape(1, a.size, 1) end},
  {"reshape(-1, -1)", function(a) return a:reshape(-1, -1) end},
  {"reshape(5, 5)", function(a) return a:reshape(5, 5) end},
  {"reshape(0, -1)", function(a) return a:reshape(0, -1) end},
  {"reshape(-2)", function(a) return a:reshape(-2) end},
  {"reshape('4')", function(a) return a:reshape("4") end},
  {"reshape{}", function(a) return a:reshape({}) end},
  {"reshape()", function(a) return a:reshape() end},
  {"ravel()", function(a) return a:ravel() end},
  {"view('int32')", function(a) return a:view("int32") end},
  {"view('uint8')", function(a) return a:view("uint8") end},
  {"view('float64')", function(a) return a:view("float64") end},
  {"view('int16')", function(a) return a:view("int16") end},
  {"view('float33')", function(a) return a:view("float33") end},
  {"view(4)", function(a) return a:view(4) end},
  {"slice(2, 4)", function(a) return a:slice(2, 4) end},
  {"slice(-3, -1)", function(a) return a:slice(-3, -1) end},
  {"slice(nil, nil, -1)", function(a) return a:slice(nil, nil, -1) end},
  {"slice(1, 100, 3)", function(a) return a:slice(1, 100, 3) end},
  {"slice(-100, 2)", function(a) return a:slice(-100, 2) end},
  {"slice(5, 2)", function(a) return a:slice(5, 2) end},
  {"slice(5, 2, -2)", function(a) return a:slice(5, 2, -2) end},
  {"slice(1, 2, 0)", function(a) return a:slice(1, 2, 0) end},
  {"slice(1.5, 2)", function(a) return a:slice(1.5, 2) end},
  {"slice(1, 2, math.mininteger)", function(a) return a:slice(1, 2, math.mininteger) end},
  {"slice(1, 1, math.maxinteger)", function(a) return a:slice(1, 1, math.maxinteger) end},
  {"copy()", function(a) return a:copy() end},
  {"copy(nil)", function(a) return a:copy(nil) end},
  {"copy{}", function(a) return a:copy({}) end},
  {"copy{stream = s}", function(a)
    local s = gpu.Stream()
    local c = a:copy({stream = s})
    s:synchronize()
    return c
  end},
  {"copy{strem = 1}", function(a) return a:copy({strem = 1}) end},
  {"copy(1)", function(a) return a:copy(1) end},
  {"copy(nil, 2)", function(a) return a:copy(nil, 2) end},
}

describe("the view methods' C paths", function()
  helpers.gpu_it("give what the Lua methods give, for every layout and call", function()
    for _, case in ipairs(arrays()) do
      for _, call in ipairs(CALLS) do
        assert_same(case[1] .. ": " .. call[1], function() return call[2](case[2]) end)
      end
    end
  end)

  helpers.gpu_it("make views that hold the memory and see writes through it", function()
    local values = helpers.random_floats(12, 10)
    local a = gpu.to_gpu(values, "float32")
    local t = a:reshape(3, 4):transpose():slice(2, 3)     -- columns 2 and 3 of the 3 x 4
    a = nil                                               -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    local function f32(v) return gpu.host.from_table({v}, "float32")[1] end
    local expect = {{}, {}}
    for r = 1, 2 do
      for i = 1, 3 do expect[r][i] = f32(values[(i - 1) * 4 + r + 1]) end
    end
    assert.are.same(expect, t:get():totable())
    local u = t:view("int32")
    u:fill(7)                                             -- writes through the view's view
    for _, v in ipairs(u:ravel():get():totable()) do assert.are.equal(7, v) end
    assert.are.equal(u:get():bytes(), t:get():bytes())   -- the same bytes, seen as float32
  end)

  helpers.gpu_it("copy in the order of the Context's stream, as kernels run", function()
    for _, n in ipairs{1, 1000, 3 * 2^20 + 5} do
      local a = gpu.to_gpu(helpers.random_floats(n, 100), "float32")
      local before = a:get():bytes()
      local c = a:copy()
      a:fill(3)                 -- queued after the copy: the copy has the values before it
      local d = a:copy()
      assert.are.equal(before, c:get():bytes(), "n " .. n)
      for _, v in ipairs(d:slice(1, math.min(n, 64)):get():totable()) do assert.are.equal(3, v) end
      assert.are.equal(a:get():bytes(), d:get():bytes(), "n " .. n)
    end
  end)

  helpers.gpu_it("name the bad self and the caller's line as the Lua methods do", function()
    local a = gpu.zeros({4, 4}, "float32")
    local b = a:transpose()
    a:free()
    for _, name in ipairs{"transpose", "reshape", "ravel", "view", "slice", "copy"} do
      helpers.assert_error(("calling '%s' on bad self (array has been freed)"):format(name),
                           function() return b[name](b, "float32") end)
      helpers.assert_error(("calling '%s' on bad self (GPUArray expected, got table)"):format(name),
                           function() return b[name]({}) end)
    end
    local _, err = pcall(function() return b:transpose() end)
    assert.matches("45%-view_fastpath_spec%.lua:%d+: calling 'transpose' on bad self", err)
    _, err = pcall(function() return gpu.zeros(6):reshape(4, -1) end)
    assert.matches("45%-view_fastpath_spec%.lua:%d+: bad argument #1 to 'reshape'", err)
  end)
end)

describe("a:copy()'s C path (stand-in driver)", function()
  it("names the array freed by a finalizer its allocation ran", function()
    -- the result's 64 MiB of device memory make the collector run a full cycle, whose
    -- finalizers may free the array being copied
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.gpuarray.zeros({1 << 24}, "float32")
      setmetatable({}, {__gc = function() a:free() end})
      local ok, err = pcall(function() return a:copy() end)
      print(ok, (tostring(err):gsub("^[^\n]*:%d+: ", "")))
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal("false\tcalling 'copy' on bad self (array has been freed)\n", out)
  end)
end)

describe("core.view_method", function()
  it("checks its arguments", function()
    helpers.assert_error("bad argument #1 to 'view_method' (invalid option 'squeeze')",
                         function() return core.view_method("squeeze", print) end)
    helpers.assert_error("bad argument #2 to 'view_method' (function expected, got no value)",
                         function() return core.view_method("slice") end)
  end)

  it("hands values that are not GPUArrays to the general method", function()
    local seen
    local slice = core.view_method("slice", function(...) seen = {n = select("#", ...), ...}; return "general" end)
    assert.are.equal("general", slice("x", 1, nil, 2))
    assert.are.same({n = 4, "x", 1, nil, 2}, seen)
  end)
end)

-- a[i] reads one element in C (src/array.c's read_element) where the index is a whole number
-- in range and the array alive; every other index goes to the Lua layer.  The probe compares
-- each element's value with the fast paths off (the Lua layer's read) for every dtype and
-- layout, random bytes included (NaNs, subnormals, bools other than 0 and 1), and prints its
-- verdict; it runs on the GPU and, through the stand-in driver (host memory), on the CPU.
local ELEMENT_PROBE = [[
  local gpu = require "gpu"
  local core = require "gpu.core"
  local function key(v)       -- a value's type and exact bits, NaNs alike
    if type(v) == "number" then
      return math.type(v) == "float" and (v ~= v and "nan" or ("%a"):format(v)) or ("int " .. v)
    elseif type(v) == "table" then return key(v.re) .. " " .. key(v.im) .. "i" end
    return type(v) .. " " .. tostring(v)
  end
  local checked = 0
  for _, dtype in ipairs{"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                         "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                         "complex128"} do
    local itemsize = core.dtype(dtype).itemsize
    local bytes = {}
    for i = 1, 24 * itemsize do bytes[i] = string.char(math.random(0, 255)) end
    local m = gpu.to_gpu(gpu.host.from_bytes(table.concat(bytes), dtype)):reshape(4, 6)
    local layouts = {m, m:transpose(), m:slice(4, 1, -2), m:ravel():slice(3, 20, 5),
                     core.array_view(m, itemsize, dtype, {3, 5}, {0, itemsize}),     -- a broadcast row
                     m:ravel():slice(7, 7):reshape({})}                                 -- 0-d
    for n, a in ipairs(layouts) do
      for i = 1, a.size do
        local fast = a[i]
        gpu.fast_paths(false)
        local general = a[i]
        gpu.fast_paths(true)
        if key(fast) ~= key(general) then
          error(("%s layout %d element %d: %s in C, %s in Lua"):format(dtype, n, i, key(fast), key(general)))
        end
        checked = checked + 1
      end
    end
  end
  print("elements agree", checked)
]]

describe("a[i] in C", function()
  helpers.gpu_it("reads what the Lua layer reads, for every dtype and layout", function()
    -- The probe's own print: busted runs this file in an environment of its own, so
    -- replacing the global print here would not reach a chunk loaded in _G.
    local said
    local env = setmetatable({print = function(...) said = table.concat({...}, " ") end},
                             {__index = _G})
    assert(load(ELEMENT_PROBE, "=element probe", "t", env))()
    assert.truthy(said and said:match("^elements agree %d+$"), said)
  end)

  it("reads what the Lua layer reads, through the stand-in driver", function()
    local out, ok = helpers.run_with_fakes(ELEMENT_PROBE)
    assert(ok, out)
    assert.truthy(out:match("elements agree\t%d+\n"), out)
  end)
end)
