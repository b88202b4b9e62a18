-- NumPy type promotion (NEP 50 weak Lua numbers), broadcasting, and the operator table:
-- all CPU, no device needed.
local helpers = require "helpers"
local gpu = helpers.gpu
local promote = require "gpu.promote"
local operators = require "gpu.operators"
local ew = require "gpu.elementwise"

describe("promote_types", function()
  it("follows NumPy's table", function()
    local cases = {
      {"int8", "int8", "int8"}, {"int8", "uint8", "int16"}, {"uint8", "int16", "int16"},
      {"int16", "uint16", "int32"}, {"int32", "uint32", "int64"}, {"int64", "uint64", "float64"},
      {"uint8", "uint32", "uint32"}, {"int8", "int64", "int64"},
      {"bool", "int8", "int8"}, {"bool", "float32", "float32"}, {"bool", "bool", "bool"},
      {"int8", "float32", "float32"}, {"int16", "float32", "float32"},
      {"int32", "float32", "float64"}, {"uint64", "float32", "float64"},
      {"float32", "float64", "float64"}, {"uint16", "float32", "float32"},
      {"int8", "float16", "float16"}, {"int16", "float16", "float32"},
      {"uint8", "float16", "float16"}, {"int8", "bfloat16", "bfloat16"},
      {"uint8", "bfloat16", "bfloat16"}, {"int16", "bfloat16", "float32"},
      {"bool", "bfloat16", "bfloat16"}, {"float16", "bfloat16", "float32"},
      {"complex64", "float32", "complex64"}, {"complex64", "float64", "complex128"},
      {"complex64", "int16", "complex64"}, {"complex64", "int32", "complex128"},
      {"complex64", "bool", "complex64"}, {"complex128", "float16", "complex128"},
      {"complex64", "complex128", "complex128"},
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[3], promote.promote_types(c[1], c[2]), c[1] .. "+" .. c[2])
      assert.are.equal(c[3], promote.promote_types(c[2], c[1]), c[2] .. "+" .. c[1])
    end
  end)

  it("treats Lua numbers as weak scalars (NEP 50)", function()
    assert.are.equal("int8", promote.result_type("int8", "weak-int"))
    assert.are.equal("uint16", promote.result_type("weak-int", "uint16"))
    assert.are.equal("float64", promote.result_type("int32", "weak-float"))
    assert.are.equal("float64", promote.result_type("uint8", "weak-float"))
    assert.are.equal("float32", promote.result_type("float32", "weak-float"))
    assert.are.equal("float32", promote.result_type("weak-int", "float32"))
    assert.are.equal("int64", promote.result_type("bool", "weak-int"))
    assert.are.equal("float64", promote.result_type("bool", "weak-float"))
    assert.are.equal("weak-int", promote.result_type("weak-int", "weak-int"))
    assert.are.equal("weak-float", promote.result_type("weak-int", "weak-float"))
    -- gpu.complex values: the complex type of the other side's precision
    local complex_cases = {
      {"complex64", "weak-float", "complex64"}, {"complex64", "weak-int", "complex64"},
      {"float32", "weak-complex", "complex64"}, {"float16", "weak-complex", "complex64"},
      {"float64", "weak-complex", "complex128"}, {"int8", "weak-complex", "complex128"},
      {"bool", "weak-complex", "complex128"}, {"weak-int", "weak-complex", "weak-complex"},
    }
    for _, c in ipairs(complex_cases) do
      assert.are.equal(c[3], promote.result_type(c[1], c[2]), c[1] .. " with " .. c[2])
      assert.are.equal(c[3], promote.result_type(c[2], c[1]), c[2] .. " with " .. c[1])
    end
  end)

  it("checks that a Lua number fits the dtype it becomes", function()
    assert.is_nil(promote.scalar_problem(255, "uint8"))
    assert.are.equal("256 is out of range for uint8", promote.scalar_problem(256, "uint8"))
    assert.are.equal("-1 is out of range for uint64", promote.scalar_problem(-1, "uint64"))
    assert.are.equal("2.5 is not an integer (for int32)", promote.scalar_problem(2.5, "int32"))
    assert.is_nil(promote.scalar_problem(3.0, "int32"))
    assert.is_nil(promote.scalar_problem(1e300, "float32"))
    assert.are.equal("expected a number, got string", promote.scalar_problem("1", "int8"))
  end)
end)

describe("broadcasting", function()
  it("combines shapes like NumPy", function()
    assert.are.same({4, 3}, promote.broadcast_shapes({{4, 3}, {3}}))
    assert.are.same({4, 3}, promote.broadcast_shapes({{4, 1}, {1, 3}}))
    assert.are.same({2, 4, 3}, promote.broadcast_shapes({{2, 1, 3}, {4, 1}}))
    assert.are.same({5}, promote.broadcast_shapes({{}, {5}}))
    assert.are.same({0, 3}, promote.broadcast_shapes({{0, 3}, {1, 3}}))
  end)

  it("names both shapes when they are incompatible", function()
    local s, msg = promote.broadcast_shapes({{3}, {4}})
    assert.is_nil(s)
    assert.are.equal("operands could not be broadcast together with shapes (3,) (4,)", msg)
    s, msg = promote.broadcast_shapes({{2, 3}, {3, 2}})
    assert.are.equal("operands could not be broadcast together with shapes (2,3) (3,2)", msg)
  end)

  it("reads broadcast axes with stride 0", function()
    assert.are.same({0, 4}, promote.broadcast_strides({3}, {4}, {2, 3}))
    assert.are.same({12, 0}, promote.broadcast_strides({2, 1}, {12, 4}, {2, 3}))
    assert.is_nil(promote.broadcast_strides({4}, {4}, {2, 3}))
  end)

  it("merges dimensions that are contiguous in every operand", function()
    -- a contiguous (2,3,4) float32 array and a (4,) row broadcast over it
    local s, st = ew.collapse({2, 3, 4}, {{48, 16, 4}, {0, 0, 4}})
    assert.are.same({6, 4}, s)
    assert.are.same({{16, 4}, {0, 4}}, st)
    -- everything contiguous: one dimension
    s, st = ew.collapse({2, 3, 4}, {{48, 16, 4}, {48, 16, 4}})
    assert.are.same({24}, s)
    assert.are.same({{4}, {4}}, st)
    -- a transposed operand keeps both axes; length-1 axes vanish
    s, st = ew.collapse({3, 1, 2}, {{8, 8, 4}, {4, 4, 12}})
    assert.are.same({3, 2}, s)
    assert.are.same({{8, 4}, {4, 12}}, st)
    s, st = ew.collapse({}, {{}})
    assert.are.same({1}, s)
    assert.are.same({{0}}, st)
  end)
end)

describe("operators.expression", function()
  it("gives NumPy's result dtypes", function()
    local function dt(op, types, target)
      local names = {}
      for i = 1, #types do names[i] = "x" .. i end
      local _, t = operators.expression(op, types, names, target)
      return t
    end
    assert.are.equal("int16", dt("add", {"int8", "uint8"}))
    assert.are.equal("float64", dt("div", {"int32", "int32"}))
    assert.are.equal("float32", dt("div", {"float32", "weak-int"}))
    assert.are.equal("float64", dt("div", {"uint8", "weak-int"}))
    assert.are.equal("weak-float", dt("div", {"weak-int", "weak-int"}))
    assert.are.equal("int8", dt("floordiv", {"bool", "bool"}))
    assert.are.equal("uint8", dt("mod", {"uint8", "weak-int"}))
    assert.are.equal("int32", dt("pow", {"int32", "weak-int"}))
    assert.are.equal("float32", dt("pow", {"float32", "weak-float"}))
    assert.are.equal("bool", dt("lt", {"float64", "int8"}))
    assert.are.equal("bool", dt("add", {"bool", "bool"}))
    assert.are.equal("int64", dt("shl", {"int64", "weak-int"}))
    assert.are.equal("float32", dt("where", {"bool", "float32", "weak-float"}))
    assert.are.equal("float32", dt("sqrt", {"int16"}))
    assert.are.equal("float64", dt("sqrt", {"int32"}))
    assert.are.equal("float32", dt("sin", {"float32"}))
    assert.are.equal("uint16", dt("astype", {"float64"}, "uint16"))
    assert.are.equal("int8", dt("abs", {"int8"}))
    assert.are.equal("float64", dt("maximum", {"float32", "int32"}))
  end)

  it("casts each result so nested expressions wrap like fixed-width NumPy", function()
    local e = operators.expression("add", {"int8", "int8"}, {"a", "b"})
    assert.are.equal("((signed char)((a) + (b)))", e)
    e = operators.expression("mul", {"int32", "weak-int"}, {"a", "s"})
    assert.are.equal("((int)((unsigned int)(a) * (unsigned int)(((int)(s)))))", e)
    e = operators.expression("div", {"int32", "int32"}, {"a", "b"})
    assert.are.equal("(((double)(a)) / ((double)(b)))", e)
    e = operators.expression("sqrt", {"float32"}, {"a"})
    assert.are.equal("sqrtf(a)", e)
  end)

  it("refuses what NumPy refuses, saying why", function()
    local ok, err = pcall(operators.expression, "band", {"float32", "int32"}, {"a", "b"})
    assert.is_false(ok)
    assert.matches("'&' needs integer or bool operands, got float32", err, 1, true)
    ok, err = pcall(operators.expression, "bxor", {"int8", "uint64"}, {"a", "b"})
    assert.is_false(ok)
    assert.matches("'~' needs a common integer type, and int8 and uint64 have none", err, 1, true)
    ok, err = pcall(operators.expression, "shl", {"uint64", "int64"}, {"a", "b"})
    assert.matches("'<<' needs a common integer type, and uint64 and int64 have none", err, 1, true)
    assert.is_truthy(operators.expression("band", {"uint8", "uint64"}, {"a", "b"}))
    ok, err = pcall(operators.expression, "bnot", {"float64"}, {"a"})
    assert.matches("unary '~' needs integer or bool operands, got float64", err, 1, true)
    ok, err = pcall(operators.expression, "sub", {"bool", "bool"}, {"a", "b"})
    assert.matches("'-' on bool operands is not supported", err, 1, true)
    ok, err = pcall(operators.expression, "add", {"int33", "int8"}, {"a", "b"})
    assert.matches("unknown dtype 'int33'", err, 1, true)
    ok, err = pcall(operators.expression, "frobnicate", {"int8"}, {"a"})
    assert.matches("unknown operation 'frobnicate'", err, 1, true)
  end)
end)
