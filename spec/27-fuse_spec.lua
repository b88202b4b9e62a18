-- gpu.fuse: tracing, the refusals, the generated kernel, and results against the CPU.

local helpers = require "helpers"
local gpu = helpers.gpu
local fuse = require "gpu.fuse"
local gpu_it, assert_error = helpers.gpu_it, helpers.assert_error

local function trace(fn, ...) return fuse.trace(fn, {...}) end

describe("gpu.fuse tracing", function()
  it("records operators, constants and inputs as a tree", function()
    local r = trace(function(x, y) return 2 * x + y / 3 end, {dtype = "float32"}, {dtype = "int32"})
    assert.are.equal(1, r.n)
    local top = r[1]
    assert.are.equal("add", rawget(top, "op"))
    local left, right = rawget(top, "args")[1], rawget(top, "args")[2]
    assert.are.equal("mul", rawget(left, "op"))
    assert.are.equal(2, rawget(rawget(left, "args")[1], "value"))
    assert.are.equal(1, rawget(rawget(left, "args")[2], "index"))
    assert.are.equal("div", rawget(right, "op"))
    assert.are.equal("int32", rawget(rawget(right, "args")[1], "dtype"))
  end)

  it("records comparisons, astype and every operator", function()
    local r = trace(function(x, y)
      return x:lt(y), x:astype("float64"), -x, ~x, x // y, x % y, x ^ 2, x & y, x | y, x ~ y,
             x << 1, x >> 1, x - y
    end, {dtype = "int32"}, {dtype = "int32"})
    local ops = {}
    for i = 1, r.n do ops[i] = rawget(r[i], "op") end
    assert.are.same({"lt", "astype", "neg", "bnot", "floordiv", "mod", "pow", "band", "bor",
                     "bxor", "shl", "shr", "sub"}, ops)
    assert.are.equal("float64", rawget(r[2], "dtype"))
  end)

  it("refuses what cannot be fused, saying what", function()
    local x = {dtype = "float32"}
    assert_error("gpu.fuse: cannot fuse ':get()' (it reads array values on the host)",
                 trace, function(a) return a:get() end, x)
    assert_error("gpu.fuse: cannot fuse indexing a traced array (element values are not known while tracing)",
                 trace, function(a) return a[1] end, x)
    assert_error("gpu.fuse: cannot fuse '<' on traced arrays (Lua comparisons steer control flow by array values; use x:lt(y) and gpuarray.where)",
                 trace, function(a, b) if a < b then return a end return b end, x, x)
    assert_error("gpu.fuse: cannot fuse '==' on traced arrays (use x:eq(y))",
                 trace, function(a, b) return a == b and a or b end, x, x)
    assert_error("gpu.fuse: cannot fuse '#' on a traced array (its size is not known while tracing)",
                 trace, function(a) return #a end, x)
    assert_error("gpu.fuse: cannot fuse tostring() of a traced array (values are not known while tracing)",
                 trace, function(a) return tostring(a) end, x)
    assert_error("gpu.fuse: cannot fuse ':sum' on a traced array (only operators, comparisons and astype trace)",
                 trace, function(a) return a:sum() end, x)
    assert_error("gpu.fuse: cannot fuse a function that returns nothing", trace, function() end, x)
    assert_error("gpu.fuse: cannot fuse a function whose result #1 is a number, not an expression of its arrays",
                 trace, function() return 1 end, x)
    assert_error("gpu.fuse: cannot fuse 'add' on a table (only traced arrays and Lua numbers can be combined)",
                 trace, function(a) return a + {} end, x)
  end)

  it("checks its arguments", function()
    assert_error("bad argument #1 to 'fuse' (function expected, got number)", gpu.fuse, 1)
    assert_error("bad argument #2 to 'fuse' (kernel name must be a C identifier)",
                 gpu.fuse, function() end, "not a name")
    local f = gpu.fuse(function(x) return x end)
    assert_error("bad argument #1 to 'fused' (GPUArray or number expected, got string)", f, "x")
    assert_error("bad argument #1 to 'fused' (at least one GPUArray argument expected)", f, 1)
  end)
end)
