-- The C that gpu.operators generates, run on the CPU: kernels/elementwise.cu's helpers and
-- each expression compiled as host C++ under UndefinedBehaviorSanitizer (spec/host_eval.lua)
-- and checked against the CPU reference at each dtype's edge values.  Needs clang++ or g++
-- (HOST_EVAL_CXX picks one); pending without.
local operators = require "gpu.operators"
local promote = require "gpu.promote"
local R = require "array_reference"
local H = require "host_eval"

local ALL = R.DTYPES

local host_it = H.available() and it or function(name)
  pending(name .. " (no C++ compiler)")
end

-- Edge values of dtype t: limits, 0, +-1, small values, shift widths (uint64 only up to
-- 2^63 - 1, as the reference reads Lua integers as signed).
local function edges(t, op)
  local k = promote.kind(t)
  if k == "b" then return {true, false} end
  if k == "f" then
    return {0.0, -0.0, 1.5, -2.5, 7.0, -1.0, 3.0, 0 / 0, 65535.0, math.huge, -math.huge}
  end
  local lo, hi = promote.limits[t][1], promote.limits[t][2]
  local out = {}
  for _, v in ipairs{0, 1, -1, 2, 3, 7, -7, 63, 64, 100, lo, hi, lo + 1, hi - 1} do
    if v >= lo and v <= hi and (op ~= "pow" or math.abs(v) <= 100) then out[#out + 1] = v end
  end
  return out
end

-- Evaluates op over every dtype pair (where valid) at the edge values; returns the mismatches.
local function sweep(ops)
  local groups = {}
  for _, op in ipairs(ops) do
    for _, ta in ipairs(ALL) do
      for _, tb in ipairs(ALL) do
        if operators.try_expression(op, {ta, tb}, {"a", "b"}) then
          groups[#groups + 1] = {op, {ta, tb}, {edges(ta, op), edges(tb, op)}}
        end
      end
    end
  end
  local results = H.eval(groups)
  local bad = {}
  for g, group in ipairs(groups) do
    local n = 0
    for _, a in ipairs(group[3][1]) do
      for _, b in ipairs(group[3][2]) do
        n = n + 1
        local ok, err = pcall(R.check, R.apply(group[1], group[2], {a, b}), results[g][n],
                              group.result_type, ("%s(%s %s, %s %s)"):format(group[1],
                              group[2][1], tostring(a), group[2][2], tostring(b)))
        if not ok and #bad < 20 then bad[#bad + 1] = err end
      end
    end
  end
  return bad
end

describe("the CPU reference (spec/array_reference.lua)", function()
  it("floors float division as NumPy does, from fmod", function()
    -- floor(a / b) rounds a / b first; NumPy does not
    assert.are.equal(-4294967299.0, R.apply("floordiv", {"float64", "float64"}, {2.0 ^ 63, -2147483647.0}))
    assert.are.equal(-1.0, R.apply("floordiv", {"float64", "float64"}, {1.0, -math.huge}))
    assert.are.equal(9.0, R.apply("floordiv", {"float64", "float64"}, {1.0, 0.1}))
  end)

  it("reads uint64 values beyond 2^63 (negative Lua integers) by their unsigned value", function()
    assert.are.equal(2.0 ^ 64, R.apply("add", {"uint64", "float64"}, {-1, 0.0}))
    assert.are.equal(2.0 ^ 63, R.apply("astype", {"uint64"}, {math.mininteger}, "float64"))
    assert.are.equal(2.0 ^ 63, R.apply("div", {"uint64", "uint64"}, {math.mininteger, 1}))
  end)
end)

describe("generated C on the CPU (C++ with -fsanitize=undefined) #cxx", function()
  host_it("multiplies uint16 without signed int overflow", function()
    -- C promotes unsigned short to int: 65535 * 65535 overflowed it (undefined behaviour)
    local r = H.eval{{"mul", {"uint16", "uint16"}, {{65535, 40000}, {65535}}}}
    assert.are.same({1, R.wrap("uint16", 40000 * 65535)}, r[1])
    local e = operators.expression("mul", {"uint16", "uint16"}, {"a", "b"})
    assert.are.equal("((unsigned short)((unsigned int)(a) * (unsigned int)(b)))", e)
  end)

  host_it("compares signed with unsigned integers exactly, as NumPy 2 does", function()
    -- their common type is float64, where 2^53 + 1 == 2^53 and 2^63 - 1 == 2^63 - 2
    local big, top = (1 << 53) + 1, math.maxinteger
    local r = H.eval{
      {"eq", {"int64", "uint64"}, {{big, top}, {big - 1, top - 1}}},
      {"lt", {"uint64", "int64"}, {{big - 1, -1}, {big, -1}}},
      {"ge", {"int8", "uint64"}, {{-1, 5}, {-1, 5}}},     -- uint64 -1 is 2^64 - 1
      {"gt", {"uint32", "int64"}, {{4294967295}, {-1, 4294967294, 4294967295}}},
    }
    assert.are.same({false, false, false, false}, r[1])
    assert.are.same({true, false, false, false}, r[2])
    assert.are.same({false, false, false, true}, r[3])
    assert.are.same({true, true, false}, r[4])
  end)

  host_it("computes NumPy's values for every arithmetic operator and dtype pair", function()
    assert.are.same({}, sweep{"add", "sub", "mul", "div", "floordiv", "mod", "fmod", "pow"})
  end)

  host_it("computes NumPy's values for bitwise operators, comparisons, maximum, minimum", function()
    assert.are.same({}, sweep{"band", "bor", "bxor", "shl", "shr", "eq", "ne", "lt", "le",
                              "gt", "ge", "maximum", "minimum"})
  end)
end)
