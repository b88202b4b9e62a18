-- The operators' fast path (gpuarray.lua binary_operator and unary_operator): two live
-- C-contiguous arrays of one shape, or one such array and a Lua number, or one such array
-- alone, into a new array or a given out of their shape and the result's dtype, skip
-- promotion and broadcasting.  It must give what the general path gives (reached with the fast
-- paths off: gpu.fast_paths(false)), and hand everything else to it.
local helpers = require "helpers"
local gpu = helpers.gpu
local core = require "gpu.core"
local kernel_cache = require "gpu.kernel_cache"

local function bytes_of(a) return a:get():bytes() end

-- The contiguous kernel of float32 + float32 that the operators compile (for closures made
-- in the specs, which get it from their own compile()).
local function float32_add_kernel()
  local ew = require "gpu.elementwise"
  local e, out = require("gpu.operators").expression("add", {"float32", "float32"}, {"v1", "v2"})
  return ew.kernel(ew.program{expr = e, out = out, name = "add_float32_float32",
                              operands = {{name = "v1", dtype = "float32"},
                                          {name = "v2", dtype = "float32"}}}, "c")
end

-- general(fn) -> fn({}) with the C fast paths off (gpu.fast_paths(false)): the general path's
-- result, fn's options table to add to.
local function general(fn)
  local was = gpu.fast_paths(false)
  local ok, result = pcall(fn, {})
  gpu.fast_paths(was)
  if not ok then error(result, 0) end
  return result
end

-- Asserts fast_call() gives what general_call() gives: the same bytes, dtype and shape, or
-- the same error (positions aside).
local function assert_same(what, fast_call, general_call)
  local ok_general, general = pcall(general_call)
  local ok_fast, fast = pcall(fast_call)
  assert.are.equal(ok_general, ok_fast, what)
  if ok_general then
    assert.are.equal(general.dtype, fast.dtype, what)
    assert.are.same(general.shape, fast.shape, what)
    assert.are.equal(bytes_of(general), bytes_of(fast), what)
  else
    assert.are.equal(tostring(general):gsub("^[^:]*:%d+: ", ""), (tostring(fast):gsub("^[^:]*:%d+: ", "")), what)
  end
end

describe("the operators' fast path", function()
  it("hands values that are not GPUArrays to the general path", function()
    local seen = {}
    local function compile() error("compile must not be reached") end
    local function general(...) seen[#seen + 1] = {n = select("#", ...), ...}; return "general" end
    local op = core.array_binary_operator(compile, general, 256, 1024)
    local negate = core.array_unary_operator(compile, general, 256, 1024)
    local t = {}
    assert.are.equal("general", op(1, 2))
    assert.are.equal("general", op(t, "x"))
    assert.are.equal("general", op(nil, nil))
    assert.are.equal("general", op(1, 2, t, "s"))         -- out and stream, whatever they are, go along
    assert.are.equal("general", negate("x"))
    assert.are.equal("general", negate(1, t, "s"))
    assert.are.same({{n = 4, 1, 2}, {n = 4, t, "x"}, {n = 4}, {n = 4, 1, 2, t, "s"}, {n = 3, "x"},
                     {n = 3, 1, t, "s"}}, seen)
  end)

  it("tries its dispatcher before the general path, with out and the stream first", function()
    local calls = {}
    local function compile() error("compile must not be reached") end
    local function general(...) calls[#calls + 1] = {"general", n = select("#", ...), ...}; return "general" end
    local function dispatch(...)
      calls[#calls + 1] = {"dispatch", n = select("#", ...), ...}
      return select(3, ...) == "take" and "dispatched" or false
    end
    local op = core.array_binary_operator(compile, general, 256, 1024, nil, dispatch)
    local negate = core.array_unary_operator(compile, general, 256, 1024, nil, false, dispatch)
    local negate_metamethod = core.array_unary_operator(compile, general, 256, 1024, nil, true, dispatch)
    assert.are.equal("dispatched", op("take", 2, "out", "s"))
    assert.are.equal("general", op(1, 2))
    assert.are.equal("dispatched", negate("take"))
    assert.are.equal("general", negate(1, "out", "s"))
    assert.are.equal("general", negate_metamethod(1, 1))
    assert.are.same({{"dispatch", n = 4, "out", "s", "take", 2},
                     {"dispatch", n = 4, nil, nil, 1, 2}, {"general", n = 4, 1, 2},
                     {"dispatch", n = 3, nil, nil, "take"},
                     {"dispatch", n = 3, "out", "s", 1}, {"general", n = 3, 1, "out", "s"},
                     {"dispatch", n = 3, nil, nil, 1}, {"general", n = 3, 1}}, calls)
  end)

  it("checks its arguments", function()
    local f = function() end
    helpers.assert_error("bad argument #6 to 'array_binary_operator' (function expected, got table)",
                         function() core.array_binary_operator(f, f, 1, 1, nil, {}) end)
    helpers.assert_error("bad argument #7 to 'array_unary_operator' (function expected, got number)",
                         function() core.array_unary_operator(f, f, 1, 1, nil, false, 5) end)
    helpers.assert_error("bad argument #1 to 'array_binary_operator' (function expected, got nil)",
                         function() core.array_binary_operator(nil, f, 1, 1) end)
    helpers.assert_error("bad argument #3 to 'array_binary_operator' (threads per block must be from 1 to 1024)",
                         function() core.array_binary_operator(f, f, 0, 1) end)
    helpers.assert_error("bad argument #4 to 'array_binary_operator' (the block count must be from 1 to 2147483647)",
                         function() core.array_binary_operator(f, f, 1, 0) end)
  end)

  it("is turned off and on for a Lua state", function()
    helpers.assert_switch(function(on) local was = gpu.fast_paths(on); return was end, "fast_paths")
  end)

  it("runs the real Lua path down to the launch (tools/op_overhead.lua, fakes for the device)", function()
    local out, ok = helpers.run_lua(("arg = {'200'}\n") .. assert(io.open("tools/op_overhead.lua")):read("a"))
    assert(ok, out)
    assert.truthy(out:find("a + b (float32, 1000)", 1, true), out)
  end)

  helpers.gpu_it("compiles a kernel once per dtype pair, and leaves the rest to the general path", function()
    local ew = require "gpu.elementwise"
    local add = float32_add_kernel()
    local compiles, generals = {}, 0
    local function compile(x, y)
      local function kind(v) return type(v) == "number" and math.type(v) or v.dtype end
      local pair = kind(x) .. " " .. kind(y)
      compiles[pair] = (compiles[pair] or 0) + 1
      if pair == "float32 float32" then return add, "float32" end
      if pair == "int32 int32" then return "not a Function", "int32" end
    end
    local function general() generals = generals + 1; return "general" end
    local op = core.array_binary_operator(compile, general, ew.BLOCK, ew.MAX_GRID)
    local n = 3000
    local hx, hy = helpers.random_floats(n, 4), helpers.random_floats(n, 4)
    local x, y = gpu.to_gpu(hx, "float32"), gpu.to_gpu(hy, "float32")
    for _ = 1, 3 do
      local sum = op(x, y)
      assert.are.equal("float32", sum.dtype)
      local hs = sum:get()
      for i = 1, n do assert.are.equal(helpers.f32(helpers.f32(hx[i]) + helpers.f32(hy[i])), hs[i]) end
    end
    assert.are.same({["float32 float32"] = 1}, compiles)
    assert.are.equal(0, generals)
    local i, f64 = gpu.to_gpu({1, 2, 3}, "int32"), gpu.to_gpu({1, 2, 3}, "float64")
    for _ = 1, 2 do
      assert.are.equal("general", op(i, i))              -- compile gave no Function
      assert.are.equal("general", op(f64, f64))          -- compile gave nothing
      assert.are.equal("general", op(x, x:reshape({1, n})))   -- shapes differ
      assert.are.equal("general", op(x, 2))              -- compile gave nothing
    end
    assert.are.same({["float32 float32"] = 1, ["int32 int32"] = 1, ["float64 float64"] = 1,
                     ["float32 integer"] = 1}, compiles)
    assert.are.equal(8, generals)
    y:free()
    assert.are.equal("general", op(x, y))                -- the general path reports the freed array
  end)

  local PAIRS = {{"float32", "float32"}, {"float32", "float64"}, {"int32", "int32"},
                 {"int8", "uint8"}, {"int64", "float32"}, {"bool", "int16"}, {"uint32", "int32"}}
  local OPS = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "band", "shl"}
  local event = {add = "__add", sub = "__sub", mul = "__mul", div = "__div", floordiv = "__idiv",
                 mod = "__mod", pow = "__pow", band = "__band", shl = "__shl"}

  local function random_array(shape, dtype)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    local kind = gpu.dtype(dtype).kind
    local values = kind == "f" and helpers.random_floats(n, 4)
                   or kind == "b" and helpers.random_integers(n, 0, 1)
                   or helpers.random_integers(n, 1, 7)
    if kind == "b" then for i, v in ipairs(values) do values[i] = v == 1 end end
    return gpu.to_gpu(values, dtype):reshape(shape)
  end

  helpers.gpu_it("gives the general path's bytes and dtype for every operator and dtype pair", function()
    for _, shape in ipairs{{1000}, {7, 13}, {}} do
      for _, pair in ipairs(PAIRS) do
        local a, b = random_array(shape, pair[1]), random_array(shape, pair[2])
        for _, op in ipairs(OPS) do
          local what = op .. " " .. pair[1] .. " " .. pair[2]
          local function general_call() return general(function(o) return a[op](a, b, o) end) end
          assert_same(what, function() return getmetatable(a)[event[op]](a, b) end, general_call)
          assert_same(what, function() return a[op](a, b) end, general_call)    -- a:add(b), no opts
          assert_same(what, function() return a[op](a, b, {}) end, general_call)
        end
      end
    end
  end)

  -- An array and a Lua number: NumPy's weak scalars, so the kernel depends on the array's
  -- dtype, whether the number is an integer, and its side; an integer its dtype cannot hold
  -- is the general path's error.
  helpers.gpu_it("gives the general path's bytes, dtype and errors for an array and a Lua number", function()
    local ga = gpu.gpuarray
    local dtypes = {"float32", "float64", "float16", "int32", "int8", "uint8", "uint64", "int64",
                    "bool", "complex64"}
    local numbers = {3, -2, 0, 2.5, -0.75, 300, -1, 1e40, 255, math.maxinteger}
    for _, dtype in ipairs(dtypes) do
      local a = random_array({7, 13}, dtype)
      for _, op in ipairs(OPS) do
        for _, x in ipairs(numbers) do
          for _, pair in ipairs{{a, x}, {x, a}} do
            local what = ("%s %s %s"):format(tostring(pair[1]):sub(1, 20), op, tostring(pair[2]):sub(1, 20))
            assert_same(what, function() return getmetatable(a)[event[op]](pair[1], pair[2]) end,
                        function() return general(function(o) return ga[op](pair[1], pair[2], o) end) end)
          end
        end
      end
    end
    local a = random_array({1000}, "float32")
    local _, _ = a * 2, 2.5 - a
    local compiles = kernel_cache.compiles
    for _ = 1, 10 do _ = a * 3 + (0.5 - a) end
    assert.are.equal(compiles, kernel_cache.compiles)
    local ha, hb = a:get(), (1.5 - a):get()
    for i = 1, 1000 do assert.are.equal(helpers.f32(1.5 - ha[i]), hb[i]) end
    local i8 = random_array({10}, "int8")
    helpers.assert_error("bad argument #2 to 'add' (300 is out of range for int8)", function() return i8 + 300 end)
    helpers.assert_error("bad argument #1 to 'sub' (-1 is out of range for uint64)",
                         function() return -1 - random_array({10}, "uint64") end)
  end)

  -- Functions without options (gpu.cumath's, comparisons, maximum, -a, ...) take the same C
  -- path: what they give must be what they give with an options table.
  helpers.gpu_it("gives the general path's results for functions of one and two operands", function()
    local ga, cumath = gpu.gpuarray, gpu.cumath
    local unary = {negative = ga, invert = ga, abs = ga, sign = ga, isnan = ga, logical_not = ga,
                   exp = cumath, sqrt = cumath, floor = cumath, sin = cumath, log10 = cumath}
    local binary = {eq = ga, lt = ga, ge = ga, maximum = ga, fmin = ga, logical_and = ga,
                    fmod = cumath, atan2 = cumath}
    for _, dtype in ipairs{"float32", "float64", "float16", "int32", "uint8", "bool", "complex64"} do
      local a, b = random_array({9, 11}, dtype), random_array({9, 11}, dtype)
      for name, module in pairs(unary) do
        assert_same(dtype .. " " .. name, function() return module[name](a) end,
             function() return general(function(o) return module[name](a, o) end) end)
      end
      assert_same(dtype .. " -a", function() return -a end, function() return ga._apply("neg", "neg", {a}, {}) end)
      -- Lua passes __unm and __bnot their operand twice: it must not be taken for out
      local before = bytes_of(a)
      for _, op in ipairs{function(v) return -v end, function(v) return ~v end} do
        local ok, r = pcall(op, a)
        assert.is_false(rawequal(a, r), dtype)
        assert.are.equal(before, bytes_of(a), dtype)
      end
      for name, module in pairs(binary) do
        for _, pair in ipairs{{a, b}, {a, 3}, {2.5, a}, {a, 300}} do
          assert_same(("%s %s %s %s"):format(dtype, name, tostring(pair[1]):sub(1, 12), tostring(pair[2]):sub(1, 12)),
               function() return module[name](pair[1], pair[2]) end,
               function() return general(function(o) return module[name](pair[1], pair[2], o) end) end)
        end
      end
    end
    -- a comparison with an integer its dtype cannot hold compares by value (NumPy 2)
    local u8 = gpu.to_gpu({0, 255, 7}, "uint8")
    assert.are.same({true, true, true}, u8:lt(300):get():totable())
    assert.are.same({false, false, false}, u8:eq(-1):get():totable())
    local freed = random_array({3}, "float32")
    freed:free()
    helpers.assert_error("bad argument #1 to 'exp' (array has been freed)", function() return cumath.exp(freed) end)
    helpers.assert_error("bad argument #1 to 'neg' (array has been freed)", function() return -freed end)
  end)

  -- A given out (gpuarray.add(a, b, out), {out = o}, a:iadd(b), gpu.cumath.exp(a, {out = o}))
  -- takes the same C path when it is plain, of the operands' shape and the result's dtype, and
  -- shares no byte with an operand it is not.
  helpers.gpu_it("launches into a given out that fits, and leaves other outs to the general path", function()
    local ew = require "gpu.elementwise"
    local add = float32_add_kernel()
    local generals = 0
    local function general() generals = generals + 1; return "general" end
    local op = core.array_binary_operator(function() return add, "float32" end, general,
                                          ew.BLOCK, ew.MAX_GRID)
    local n = 3000
    local hx, hy = helpers.random_floats(n + 1, 4), helpers.random_floats(n, 4)
    local whole = gpu.to_gpu(hx, "float32")
    local x, y = whole:slice(1, n), gpu.to_gpu(hy, "float32")
    local out = gpu.gpuarray.empty({n}, "float32")
    assert.are.equal(out, op(x, y, out))
    local ho = out:get()
    for i = 1, n do assert.are.equal(helpers.f32(helpers.f32(hx[i]) + helpers.f32(hy[i])), ho[i]) end
    assert.are.equal(x, op(x, y, x))                     -- out is an operand: in place
    assert.are.equal(y, op(x, y, y))
    local hx2, hy2 = x:get(), y:get()
    for i = 1, n do
      assert.are.equal(helpers.f32(helpers.f32(hx[i]) + helpers.f32(hy[i])), hx2[i])
      assert.are.equal(helpers.f32(hx2[i] + helpers.f32(hy[i])), hy2[i])
    end
    assert.are.equal(0, generals)
    local freed = gpu.gpuarray.empty({n}, "float32")
    freed:free()
    for _, bad in ipairs{gpu.gpuarray.empty({n}, "float64"), gpu.gpuarray.empty({n + 1}, "float32"),
                         gpu.gpuarray.empty({1, n}, "float32"), whole:slice(2, n + 1),
                         gpu.gpuarray.empty({2 * n}, "float32"):slice(1, 2 * n, 2), freed} do
      assert.are.equal("general", op(x, y, bad))
    end
    assert.are.equal(6, generals)
  end)

  helpers.gpu_it("gives the general path's bytes and errors into a given out and in place", function()
    local ga = gpu.gpuarray
    for _, pair in ipairs(PAIRS) do
      local a, b = random_array({7, 13}, pair[1]), random_array({7, 13}, pair[2])
      for _, op in ipairs(OPS) do
        local what = op .. " " .. pair[1] .. " " .. pair[2]
        local defined, result = pcall(a[op], a, b)          -- float32 band is an error
        if defined then
          local dtype = result.dtype
          local o1, o2 = ga.empty({7, 13}, dtype), ga.empty({7, 13}, dtype)
          assert.are.equal(o1, ga[op](a, b, o1))
          general(function(o) o.out = o2; return ga[op](a, b, o) end)
          assert.are.equal(bytes_of(o2), bytes_of(o1), what)
          o1:fill(0)
          assert.are.equal(o1, a[op](a, b, {out = o1}))
          assert.are.equal(bytes_of(o2), bytes_of(o1), what)
          local wrong = ga.empty({7, 13}, dtype == "float64" and "int8" or "float64")
          assert_same(what .. " into " .. wrong.dtype, function() return ga[op](a, b, wrong) end,
                      function() return general(function(o) o.out = wrong; return ga[op](a, b, o) end) end)
        end
        local a1, a2 = a:copy(), a:copy()
        assert_same("i" .. what, function() return a1["i" .. op](a1, b) end,
                    function() return general(function(o) return a2["i" .. op](a2, b, o) end) end)
        assert_same("i" .. what .. " 3", function() return a1["i" .. op](a1, 3) end,
                    function() return general(function(o) return a2["i" .. op](a2, 3, o) end) end)
        assert_same("i" .. what .. " itself", function() return a1["i" .. op](a1, a1) end,
                    function() return general(function(o) return a2["i" .. op](a2, a2, o) end) end)
      end
    end
    for _, dtype in ipairs{"float32", "float64", "float16", "int32", "complex64"} do
      local a = random_array({9, 11}, dtype)
      for name, module in pairs{exp = gpu.cumath, sqrt = gpu.cumath, negative = ga, abs = ga} do
        local r = module[name](a)
        local o1, o2 = ga.empty({9, 11}, r.dtype), ga.empty({9, 11}, r.dtype)
        assert.are.equal(o1, module[name](a, {out = o1}))
        general(function(o) o.out = o2; return module[name](a, o) end)
        assert.are.equal(bytes_of(o2), bytes_of(o1), dtype .. " " .. name)
        if r.dtype == dtype then
          local a1 = a:copy()
          assert.are.equal(a1, module[name](a1, {out = a1}))
          assert.are.equal(bytes_of(o1), bytes_of(a1), dtype .. " " .. name .. " in place")
        end
      end
    end
  end)

  -- An out that shares bytes with an operand it is not (a shifted view, or the same address
  -- read as a wider dtype) would let a thread read what another has written: the general
  -- path copies that operand first.
  helpers.gpu_it("gives NumPy's result when out overlaps an operand it is not", function()
    local ga = gpu.gpuarray
    local n = 5000
    local hw, hy = helpers.random_floats(n + 1, 4), helpers.random_floats(n, 4)
    local whole, y = gpu.to_gpu(hw, "float32"), gpu.to_gpu(hy, "float32")
    ga.add(whole:slice(2, n + 1), y, whole:slice(1, n))       -- out one element before x
    local got = whole:get()
    for i = 1, n do assert.are.equal(helpers.f32(helpers.f32(hw[i + 1]) + helpers.f32(hy[i])), got[i]) end
    whole = gpu.to_gpu(hw, "float32")
    whole:slice(1, n):iadd(whole:slice(2, n + 1))
    got = whole:get()
    for i = 1, n do assert.are.equal(helpers.f32(helpers.f32(hw[i]) + helpers.f32(hw[i + 1])), got[i]) end
    local hx = helpers.random_floats(2 * n, 4)
    local pairs_of = gpu.to_gpu(hx, "float32")
    local y64 = gpu.to_gpu(hy, "float64")
    local x = pairs_of:slice(1, n)                           -- its first n float32
    local out = pairs_of:view("float64")                     -- all 2n, as n float64
    assert.are.equal(out, ga.add(x, y64, out))
    got = out:get()
    for i = 1, n do assert.are.equal(helpers.f32(hx[i]) + hy[i], got[i]) end
  end)

  helpers.gpu_it("compiles nothing more on repeats, and leaves views and broadcasting to the general path", function()
    local a, b = random_array({64, 32}, "float32"), random_array({64, 32}, "float32")
    local _ = a + b
    local compiles = kernel_cache.compiles
    for _ = 1, 10 do _ = a + b end
    assert.are.equal(compiles, kernel_cache.compiles)
    local ha, hb = a:get(), b:get()
    local t = a:transpose() + b:transpose()                  -- not C-contiguous
    local ht = t:get()
    for i = 1, 64 do
      for j = 1, 32 do
        local want = helpers.f32(ha[(i - 1) * 32 + j] + hb[(i - 1) * 32 + j])
        assert.are.equal(want, ht[(j - 1) * 64 + i])
      end
    end
    local row = random_array({32}, "float32")
    local hr, s = row:get(), (a + row):get()                   -- broadcast
    for k = 1, 64 * 32 do assert.are.equal(helpers.f32(ha[k] + hr[(k - 1) % 32 + 1]), s[k]) end
    local c = random_array({64, 32}, "float32")
    c:free()
    helpers.assert_error("bad argument #2 to 'add' (array has been freed)", function() return a + c end)
    helpers.assert_error("bad argument #2 to 'add' (array has been freed)", function() return a:add(c) end)
  end)
end)

-- The Lua layer's launch of a generated program (elementwise.lua launch: where, clip, astype,
-- fill, arange, copies, broadcasts) has a C path too (core.program_launcher): plain arrays
-- and numbers, into a new or plain out, on the default stream or a given one.
describe("the elementwise launch's C path", function()
  it("returns false for what it does not take, and checks its arguments", function()
    local function compile() error("compile must not be reached") end
    local launch = core.program_launcher({{dtype = "float32", pointer = true}, {dtype = "float64"}},
                                         compile, "float32", 256, 1024, 4, 32, 8)
    assert.is_false(launch(nil, {}, 1))               -- not an array
    assert.is_false(launch(nil, 1, 1))                -- a number for an array
    assert.is_false(launch(nil))                      -- too few values
    assert.is_false(launch({}, 1, 1))                 -- out not an array
    helpers.assert_error("bad argument #3 to 'program_launcher' (unknown dtype 'float31')",
                         function() core.program_launcher({}, compile, "float31", 1, 1, 1, 1, 1) end)
    helpers.assert_error("bad argument #6 to 'program_launcher' (elements per thread must be from 1 to 65536)",
                         function() core.program_launcher({}, compile, "float32", 1, 1, 0, 1, 1) end)
    helpers.assert_error("bad argument #7 to 'program_launcher' (the tile side must be from 0 to 1024)",
                         function() core.program_launcher({}, compile, "float32", 1, 1, 1, -1, 1) end)
    helpers.assert_error("bad argument #8 to 'program_launcher' (the tile's rows must be from 1 to 1024)",
                         function() core.program_launcher({}, compile, "float32", 1, 1, 1, 0, 0) end)
  end)

  local function promote_text(shape) return "(" .. table.concat(shape, ",") .. ")" end

  local function random_array(n, dtype)
    local kind = gpu.dtype(dtype).kind
    local values = kind == "f" and helpers.random_floats(n, 4)
                   or helpers.random_integers(n, kind == "u" and 0 or -9, 9)   -- in the dtype's range
    if kind == "b" then for i, v in ipairs(values) do values[i] = v > 0 end end
    return gpu.to_gpu(values, dtype)
  end

  helpers.gpu_it("gives the general path's bytes for where, clip, astype, fill and arange", function()
    local ga = gpu.gpuarray
    local n = 2049
    for _, dtype in ipairs{"float32", "float64", "int32", "uint8", "float16"} do
      local a, b = random_array(n, dtype), random_array(n, dtype)
      local c = a:gt(b)
      local cases = {
        {"where", function(o) return ga.where(c, a, b, o) end},
        {"where a number", function(o) return ga.where(c, a, 2, o) end},
        {"clip", function(o) return a:clip(0, 3, o) end},
        {"astype float64", function(o) return a:astype("float64", o) end},
        {"astype int16", function(o) return a:astype("int16", o) end},
        {"mul_add", function(o) return a:mul_add(2, b, 3, o) end},
        {"copy", function(o) return a:copy(o) end, "no out"},
      }
      for _, case in ipairs(cases) do
        local what = dtype .. " " .. case[1]
        local fast = case[2]()
        local slow = general(case[2])
        assert.are.equal(slow.dtype, fast.dtype, what)
        assert.are.equal(bytes_of(slow), bytes_of(fast), what)
        if case[3] == nil then
          local out = ga.empty({n}, fast.dtype)                    -- a given out
          assert.are.equal(out, case[2]({out = out}), what)
          assert.are.equal(bytes_of(slow), bytes_of(out), what)
        end
      end
      local f1, f2 = ga.empty({n}, dtype), ga.empty({n}, dtype)
      f1:fill(7)
      general(function(o) return f2:fill(7, o) end)
      assert.are.equal(bytes_of(f2), bytes_of(f1), dtype .. " fill")
    end
    local r = ga.arange(3, 3000, 7, "int32"):get()
    for i = 1, #r do assert.are.equal(3 + 7 * (i - 1), r[i]) end
    local compiles = kernel_cache.compiles
    local a, b = random_array(n, "float32"), random_array(n, "float32")
    for _ = 1, 5 do local _ = ga.where(a:gt(b), a, b), a:clip(0, 1), a:astype("float64") end
    assert.are.equal(compiles, kernel_cache.compiles)
  end)

  -- Broadcast operands and views take the strided kernel from C, with the dimensions merged
  -- as the Lua code merges them, or the tiled one where the Lua code would take it (an
  -- operand adjacent along a dimension of 32 or more that the output is not).
  helpers.gpu_it("gives the general path's bytes for broadcast operands", function()
    local ga = gpu.gpuarray
    local function random_shaped(shape, dtype)
      local n = 1
      for _, d in ipairs(shape) do n = n * d end
      return random_array(n, dtype):reshape(shape)
    end
    local cases = {
      {{10, 100}, {100}}, {{10, 100}, {10, 1}}, {{64, 64}, {64, 1}}, {{3, 1, 5}, {1, 4, 1}},
      {{2, 3, 4}, {4}}, {{1}, {7}}, {{5}, {}}, {{6, 1}, {1, 6}}, {{2, 1, 3, 1}, {1, 5, 1, 2}},
    }
    for _, case in ipairs(cases) do
      for _, dtypes in ipairs{{"float32", "float32"}, {"int8", "float64"}} do
        local x, y = random_shaped(case[1], dtypes[1]), random_shaped(case[2], dtypes[2])
        local what = ("%s %s + %s %s"):format(dtypes[1], promote_text(case[1]), dtypes[2], promote_text(case[2]))
        for _, f in ipairs{function(o) return ga.add(x, y, o) end, function(o) return ga.sub(y, x, o) end,
                           function(o) return ga.where(x:gt(0), x, y, o) end,
                           function(o) return ga.maximum(x, 2, o) end} do
          local fast = f()
          local slow = general(f)
          assert.are.same(slow.shape, fast.shape, what)
          assert.are.equal(bytes_of(slow), bytes_of(fast), what)
          local out = ga.empty(fast.shape, fast.dtype)
          assert.are.equal(out, f({out = out}), what)
          assert.are.equal(bytes_of(slow), bytes_of(out), what)
        end
      end
    end
    -- views (steps, reversed, transposed: small ones strided, large ones tiled)
    local x = random_shaped({40, 70}, "float32")
    local views = {
      {x:slice(1, 40, 2), random_shaped({20, 70}, "float32")},
      {x:slice(-1, 1, -1), random_shaped({70}, "float32")},
      {x:transpose(), random_shaped({70, 1}, "float64")},
      {x:slice(3, 12):transpose(), random_shaped({70, 10}, "int8")},
      {random_shaped({6, 5, 4}, "float32"):transpose({3, 1, 2}), random_shaped({5}, "float32")},
    }
    for i, pair in ipairs(views) do
      for _, f in ipairs{function(o) return ga.add(pair[1], pair[2], o) end,
                         function(o) return ga.where(pair[1]:gt(0), pair[2], pair[1], o) end} do
        local fast = f()
        local slow = general(f)
        assert.are.same(slow.shape, fast.shape, "view " .. i)
        assert.are.equal(bytes_of(slow), bytes_of(fast), "view " .. i)
        local out = ga.empty(fast.shape, fast.dtype)
        assert.are.equal(out, f({out = out}), "view " .. i)
        assert.are.equal(bytes_of(slow), bytes_of(out), "view " .. i)
      end
      assert.are.equal(bytes_of(general(function() return pair[1]:copy() end)), bytes_of(pair[1]:copy()))
    end
    -- the layouts the C path picks for a copy: tiled (an operand staged, or none of two), or
    -- strided where the program reads its index or tiles are off (tile side 0)
    local ew = require "gpu.elementwise"
    local function layouts(p, tile, ...)
      local picked
      local launch = core.program_launcher(
        {{dtype = "float32", pointer = true}, {dtype = "float32", pointer = true}},
        function(layout) picked = layout; return ew.kernel(p, layout) end, "float32", 256, 1024, 4, tile, 8)
      local result = launch(nil, nil, ...)
      assert.is_truthy(result)
      return picked, result
    end
    local sum = ew.program{expr = "x + y", out = "float32", name = "tiled_sum",
                           operands = {{name = "x", dtype = "float32"}, {name = "y", dtype = "float32"}}}
    local indexed = ew.program{expr = "x + y + (float)lg_i", out = "float32", name = "indexed_sum",
                               operands = {{name = "x", dtype = "float32"}, {name = "y", dtype = "float32"}}}
    local xt, z = x:transpose(), random_shaped({70, 40}, "float32")
    local want = bytes_of(general(function(o) return ga.add(xt, z, o) end))
    for _, case in ipairs{{32, xt, z, "t2_0_10"}, {32, z, xt, "t2_0_01"}, {0, xt, z, "s2"}} do
      local picked, result = layouts(sum, table.unpack(case, 1, 3))
      assert.are.equal(case[4], picked)
      assert.are.equal(want, bytes_of(result), case[4])
    end
    assert.are.equal("t3_1_11", (layouts(sum, 32, random_shaped({4, 70, 40}, "float32"):transpose({1, 3, 2}),
                                         random_shaped({4, 40, 1}, "float32"))))
    -- a program reading its index never takes tiles (elementwise.lua passes tile side 0)
    assert.are.equal(bytes_of(general(function() return ew.launch(indexed, nil, nil, nil, xt, z) end)),
                     bytes_of(ew.launch(indexed, nil, nil, nil, xt, z)))
    -- an out larger than the operands, and a row added in place
    local v, m = random_shaped({100}, "float32"), random_shaped({10, 100}, "float32")
    local out = ga.empty({10, 100}, "float32")
    ga.add(v, v, out)
    assert.are.equal(bytes_of(general(function(o) return ga.add(v, v, o) end)):rep(10), bytes_of(out))
    local hm, hv = m:get(), v:get()
    m:iadd(v)
    local got = m:get()
    for i = 1, 1000 do assert.are.equal(helpers.f32(hm[i] + hv[(i - 1) % 100 + 1]), got[i]) end
  end)

  -- A stream goes along on the C paths, unless it is capturing a graph: the general path notes
  -- the arrays a capture holds, so that a graph launched after one was freed is refused.
  helpers.gpu_it("launches on a given stream, and leaves a capturing one to the general path", function()
    local ga = gpu.gpuarray
    local n = 5000
    local a, b = random_array(n, "float32"), random_array(n, "float32")
    local s <close> = gpu.Stream()
    local want = {bytes_of(general(function(o) return a + b end)),
                  bytes_of(general(function(o) return ga.where(a:gt(b), a, 1.5, o) end)),
                  bytes_of(general(function(o) return gpu.cumath.exp(a, o) end))}
    local c = a:copy()
    local got = {ga.add(a, b, {stream = s}), ga.where(a:gt(b), a, 1.5, {stream = s}),
                 gpu.cumath.exp(a, {stream = s})}
    c:iadd(b, {stream = s})
    s:synchronize()
    for i = 1, 3 do assert.are.equal(want[i], bytes_of(got[i]), "result " .. i) end
    assert.are.equal(want[1], bytes_of(c))
    local out = ga.zeros({n}, "float32")
    s:begin_capture()
    ga.add(a, b, {out = out, stream = s})
    out:iadd(b, {stream = s})
    local graph <close> = s:end_capture()
    assert.are.equal(bytes_of(ga.zeros({n}, "float32")), bytes_of(out))     -- nothing ran yet
    graph:launch(s)
    s:synchronize()
    assert.are.equal(bytes_of(general(function() return a + b + b end)), bytes_of(out))
    b:free()
    helpers.assert_error("graph uses a GPU array that has been freed", graph.launch, graph, s)
  end)

  helpers.gpu_it("writes where in place, and leaves a partly overlapping out to the general path", function()
    local ga = gpu.gpuarray
    local n = 3000
    local ha, hb = helpers.random_floats(n + 1, 4), helpers.random_floats(n, 4)
    local whole, b = gpu.to_gpu(ha, "float32"), gpu.to_gpu(hb, "float32")
    local a = whole:slice(1, n)
    local c = a:gt(b)
    assert.are.equal(a, ga.where(c, a, b, {out = a}))            -- out is an operand
    local got = a:get()
    for i = 1, n do
      local x, y = helpers.f32(ha[i]), helpers.f32(hb[i])
      assert.are.equal(x > y and x or y, got[i])
    end
    whole = gpu.to_gpu(ha, "float32")
    local shifted = whole:slice(2, n + 1)
    ga.where(c, shifted, 0, {out = whole:slice(1, n)})          -- out one element before
    got = whole:get()
    local hc = c:get()
    for i = 1, n do assert.are.equal(hc[i] and helpers.f32(ha[i + 1]) or 0, got[i]) end
  end)
end)

-- The Lua layer picks a program by its operands' kinds through a dispatcher
-- (core.program_dispatcher): one integer key a signature, the launcher compile() gave on its
-- first call, then the launch; false, with nothing done, for anything else.
describe("the program dispatcher", function()
  it("returns false for values that are not arrays, numbers or booleans, and checks compile", function()
    local dispatch = core.program_dispatcher(function() error("compile must not be reached") end)
    assert.is_false(dispatch(nil, nil, {}, 1))
    assert.is_false(dispatch(nil, nil, "x"))
    assert.is_false(dispatch(nil, nil))                   -- no values
    assert.is_false(dispatch(nil, nil, 1, 2, 3, 4, 5, 6, 7, 8, 9))   -- more than it keys
    helpers.assert_error("bad argument #1 to 'program_dispatcher' (function expected, got nil)",
                         function() return core.program_dispatcher(nil) end)
  end)

  helpers.gpu_it("compiles once a kind signature and launches what the general path would", function()
    local ga = gpu.gpuarray
    local n = 3000
    local x = gpu.to_gpu(helpers.random_floats(n, 4), "float32")
    local y = gpu.to_gpu(helpers.random_floats(n, 4), "float64")
    local ew = require "gpu.elementwise"
    local compiled = {}
    local dispatch = core.program_dispatcher(function(...)
      local kinds = {}
      for i = 1, select("#", ...) do
        local v = select(i, ...)
        kinds[i] = ga.is_array(v) and v.dtype or math.type(v) or type(v)
      end
      compiled[#compiled + 1] = table.concat(kinds, " ")
      if kinds[2] == "boolean" then return false end      -- no launcher: false from then on
      local operands = {}
      for i, kind in ipairs(kinds) do
        operands[i] = {name = "v" .. i, dtype = ga.is_array(select(i, ...)) and kind or "float64",
                       scalar = not ga.is_array(select(i, ...))}
      end
      return ew.launcher(ew.program{expr = "v1 + v2", out = "float64", name = "dispatched_sum",
                                    operands = operands})
    end)
    local want = bytes_of(general(function() return x + y end))
    for _ = 1, 3 do assert.are.equal(want, bytes_of(dispatch(nil, nil, x, y))) end
    assert.are.equal(bytes_of(general(function() return x:astype("float64") + 2.5 end)),   -- a float64 sum
                     bytes_of(dispatch(nil, nil, x, 2.5)))
    dispatch(nil, nil, x, 3)                              -- an integer: another signature
    assert.is_false(dispatch(nil, nil, x, true))
    assert.is_false(dispatch(nil, nil, x, false))
    assert.are.same({"float32 float64", "float32 float", "float32 integer", "float32 boolean"}, compiled)
    local out = ga.empty({n}, "float64")                  -- out and a stream go to the launcher
    local s <close> = gpu.Stream()
    assert.are.equal(out, dispatch(out, s, x, y))
    s:synchronize()
    assert.are.equal(want, bytes_of(out))
    local was = gpu.fast_paths(false)                     -- off: nothing is dispatched
    local off = dispatch(nil, nil, x, y)
    gpu.fast_paths(was)
    assert.is_false(off)
    x:free()
    assert.is_false(dispatch(nil, nil, x, y))             -- a freed array is not usable
  end)
end)
