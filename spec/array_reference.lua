-- CPU references for the array specs: NumPy's elementwise semantics computed in Lua, value by
-- value, for the dtypes of gpu.gpuarray (ints wrap to their width, float32 rounds).
local promote = require "gpu.promote"
local operators = require "gpu.operators"

local R = {}

-- Every dtype the operators take, in NumPy's order.
R.DTYPES = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
            "float32", "float64"}

local bits = {int8 = 8, int16 = 16, int32 = 32, int64 = 64, uint8 = 8, uint16 = 16,
              uint32 = 32, uint64 = 64}
R.bits = bits

local function f32(x) return string.unpack("f", string.pack("f", x)) end
R.f32 = f32

-- v wrapped to integer dtype t (Lua integers are the 64-bit two's complement bits)
function R.wrap(t, v)
  local n = bits[t]
  if n == 64 then return v end
  v = v & ((1 << n) - 1)
  if promote.kind(t) == "i" and v >= (1 << (n - 1)) then v = v - (1 << n) end
  return v
end

-- astype of float v to integer dtype t: toward zero, NaN -> 0, saturating at the limits
-- (uint64 as its 64 bits in a Lua integer).
function R.float_to_int(t, v)
  if v ~= v then return 0 end
  local n, signed = bits[t], promote.kind(t) == "i"
  local lo = signed and -2.0 ^ (n - 1) or 0.0
  local hi = signed and 2.0 ^ (n - 1) or 2.0 ^ n      -- one past the largest value
  if v <= lo then return math.tointeger(lo) end
  if v >= hi then return signed and (1 << (n - 1)) - 1 or (n == 64 and -1 or (1 << n) - 1) end
  v = v < 0 and math.ceil(v) or math.floor(v)
  if t == "uint64" and v >= 2.0 ^ 63 then return math.tointeger(v - 2.0 ^ 63) | math.mininteger end
  return math.tointeger(v)
end

-- uint64 bits in a Lua integer as a float, correctly rounded (half of it, with the lost bit
-- kept as a sticky bit, then doubled).
local function u64_to_float(v)
  if v >= 0 then return v + 0.0 end
  return ((v >> 1) | (v & 1)) * 2.0
end

-- Converts a value read from an array of dtype `from` (or a Lua number) to dtype t.
function R.convert(v, t, from)
  if type(v) == "boolean" then v = v and 1 or 0 end
  local k = promote.kind(t)
  if k == "b" then return v ~= 0 end
  if k == "f" then
    v = from == "uint64" and math.type(v) == "integer" and u64_to_float(v) or v + 0.0
    return t == "float32" and f32(v) or v
  end
  if math.type(v) == "float" then return R.float_to_int(t, v) end
  return R.wrap(t, math.tointeger(v))
end

local function round(t, v)
  if t == "float32" then return f32(v) end
  return v
end

-- NumPy's floor division of floats (npy_divmod): from fmod, not floor(a / b), which rounds
-- a / b first (2^63 // -2147483647 is -4294967299, floor(a / b) -4294967298; 1 // -inf is -1).
local function float_floordiv(a, b)
  if b == 0 then return a / b end
  local mod = math.fmod(a, b)
  local div = (a - mod) / b
  if mod ~= 0 and (b < 0) ~= (mod < 0) then div = div - 1 end
  if div == 0 then
    local q = a / b
    return (q < 0 or (q == 0 and 1 / q < 0)) and -0.0 or 0.0
  end
  local q = div - div % 1.0            -- floor, kept a float
  if div - q > 0.5 then q = q + 1 end
  return q
end
R.float_floordiv = float_floordiv

local function int_pow(t, a, b)
  if b < 0 then
    if a == 1 then return 1 end
    if a == -1 then return (b % 2 == 1) and R.wrap(t, -1) or 1 end
    return 0
  end
  local r = 1
  for _ = 1, b do r = R.wrap(t, r * a) end
  return r
end

local function lt(t, a, b)
  if type(a) == "boolean" then return not a and b end   -- false < true, as in NumPy
  if t == "uint64" then return math.ult(a, b) end
  return a < b
end

local lt_ops = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true}

-- apply(op, types, values[, target]) -> the value NumPy computes (nil for an error).
function R.apply(op, types, values, target)
  local names = {}
  for i = 1, #types do names[i] = "x" .. i end
  local _, result = operators.expression(op, types, names, target)
  if op == "astype" then return R.convert(values[1], target, types[1]) end
  if op == "where" or op == "if_positive" then
    local c = values[1]
    if type(c) ~= "boolean" then
      if op == "if_positive" then c = c > 0 else c = c ~= 0 end    -- NaN is not > 0
    end
    local t = result == "weak-int" and "int64" or result == "weak-float" and "float64" or result
    return R.convert(c and values[2] or values[3], t)
  end
  if op == "logical_and" or op == "logical_or" or op == "logical_not" then
    local truth = {}
    for i, v in ipairs(values) do
      if type(v) == "table" then truth[i] = v.re ~= 0 or v.im ~= 0    -- a gpu.complex
      elseif type(v) == "boolean" then truth[i] = v
      else truth[i] = v ~= 0 end                                       -- NaN is true
    end
    if op == "logical_not" then return not truth[1] end
    if op == "logical_and" then return truth[1] and truth[2] end
    return truth[1] or truth[2]
  end
  if op == "isnan" or op == "isinf" or op == "isfinite" then
    local v = values[1]
    local parts = type(v) == "table" and {v.re, v.im} or {type(v) == "number" and v or 0}
    local nan, inf = false, false
    for _, x in ipairs(parts) do
      nan = nan or x ~= x
      inf = inf or x == math.huge or x == -math.huge
    end
    if op == "isnan" then return nan elseif op == "isinf" then return inf end
    return not nan and not inf
  end
  if op == "sign" then
    local t, x = types[1], R.convert(values[1], types[1], types[1])
    if promote.kind(t) == "f" then
      return x > 0 and 1.0 or x < 0 and -1.0 or x == 0 and 0.0 or x
    end
    if promote.kind(t) == "u" then return x ~= 0 and 1 or 0 end
    return x > 0 and 1 or x < 0 and R.wrap(t, -1) or 0
  end
  if op == "clip" then   -- minimum(maximum(a, lo), hi) in the three operands' common type
    local t = promote.result_type(promote.result_type(types[1], types[2]), types[3])
    if t == "weak-int" then t = "int64" elseif t == "weak-float" then t = "float64" end
    local v = {}
    for i = 1, 3 do v[i] = R.convert(values[i], t, types[i]) end
    return R.apply("minimum", {t, t}, {R.apply("maximum", {t, t}, {v[1], v[2]}), v[3]})
  end
  local k1, k2 = promote.kind(types[1]), promote.kind(types[2])
  if lt_ops[op] and (k1 == "i" and k2 == "u" or k1 == "u" and k2 == "i") then
    -- NumPy 2 compares signed with unsigned integers exactly (not through float64)
    local a, b = math.tointeger(values[1]), math.tointeger(values[2])
    local sa, sb = k1 == "i" and a < 0, k2 == "i" and b < 0
    local less, equal                       -- a < b, a == b
    if sa or sb then less, equal = sa and not sb, false
    else less, equal = math.ult(a, b), a == b end
    if op == "eq" then return equal elseif op == "ne" then return not equal
    elseif op == "lt" then return less elseif op == "le" then return less or equal
    elseif op == "gt" then return not (less or equal) else return not less end
  end
  local t = #types == 2 and promote.result_type(types[1], types[2]) or types[1]
  if t == "weak-int" then t = "int64" elseif t == "weak-float" then t = "float64" end
  local k = promote.kind(t)
  if (op == "floordiv" or op == "mod" or op == "pow" or op == "shl" or op == "shr" or op == "fmod")
     and k == "b" then t, k = "int8", "i" end
  local a = R.convert(values[1], t, types[1])
  local b                      -- not `x and convert() or nil`: false is a bool value
  if values[2] ~= nil then b = R.convert(values[2], t, types[2]) end
  if op == "eq" then return a == b elseif op == "ne" then return a ~= b
  elseif op == "lt" then return lt(t, a, b) elseif op == "le" then return a == b or lt(t, a, b)
  elseif op == "gt" then return lt(t, b, a) elseif op == "ge" then return a == b or lt(t, b, a) end
  if op == "maximum" or op == "minimum" or op == "fmax" or op == "fmin" then
    if k == "b" then return (op == "maximum" or op == "fmax") and (a or b) or (a and b) end
    if op == "fmax" or op == "fmin" then   -- a NaN loses to a number
      if a ~= a then return b end
      if b ~= b then return a end
    end
    if a ~= a then return a end
    if b ~= b then return b end
    if op == "maximum" or op == "fmax" then return lt(t, a, b) and b or a end
    return lt(t, b, a) and b or a
  end
  if k == "b" then
    if op == "add" or op == "bor" then return a or b end
    if op == "mul" or op == "band" then return a and b end
    if op == "bxor" then return a ~= b end
    if op == "bnot" then return not a end
    if op == "abs" then return a end
  end
  if op == "div" then
    local d = result == "float32" and "float32" or "float64"
    return round(d, R.convert(values[1], d, types[1]) / R.convert(values[2], d, types[2]))
  end
  if k == "f" then
    if op == "add" then return round(t, a + b) elseif op == "sub" then return round(t, a - b)
    elseif op == "mul" then return round(t, a * b)
    elseif op == "floordiv" then return round(t, float_floordiv(a, b))
    elseif op == "mod" then return round(t, a % b)
    elseif op == "fmod" then return round(t, math.fmod(a, b))
    elseif op == "pow" then return round(t, a ^ b)
    elseif op == "neg" then return -a
    elseif op == "abs" then return math.abs(a) end
  else
    if op == "add" then return R.wrap(t, a + b) elseif op == "sub" then return R.wrap(t, a - b)
    elseif op == "mul" then return R.wrap(t, a * b)
    elseif op == "floordiv" then
      if b == 0 then return 0 end
      if k == "u" and t == "uint64" then return math.ult(a, b) and 0 or R.wrap(t, a // b) end
      return R.wrap(t, a // b)
    elseif op == "mod" then return b == 0 and 0 or R.wrap(t, a % b)
    elseif op == "fmod" then return b == 0 and 0 or R.wrap(t, math.fmod(a, b))
    elseif op == "pow" then return int_pow(t, a, b)
    elseif op == "band" then return R.wrap(t, a & b) elseif op == "bor" then return R.wrap(t, a | b)
    elseif op == "bxor" then return R.wrap(t, a ~ b)
    elseif op == "shl" then
      if b < 0 or b >= bits[t] then return 0 end
      return R.wrap(t, a << b)
    elseif op == "shr" then
      if b < 0 or b >= bits[t] then return (k == "i" and a < 0) and -1 or 0 end
      if k == "i" and a < 0 then return ~((~a) >> b) end   -- arithmetic shift
      return a >> b
    elseif op == "neg" then return R.wrap(t, -a)
    elseif op == "bnot" then return R.wrap(t, ~a)
    elseif op == "abs" then return R.wrap(t, a < 0 and -a or a) end
  end
  error("no reference for " .. op)
end

-- Random values for dtype t (ints in a small range that includes 0; floats with a NaN).
function R.random_values(t, n, op)
  local k = promote.kind(t)
  local out = {}
  for i = 1, n do
    if k == "b" then out[i] = math.random() < 0.5
    elseif k == "f" then
      out[i] = (math.random() * 2 - 1) * 10
      if t == "float32" then out[i] = f32(out[i]) end
    elseif op == "shift" then out[i] = math.random(k == "u" and 0 or -2, bits[t] + 2)
    elseif op == "pow" then out[i] = math.random(k == "u" and 0 or -3, 5)
    elseif k == "u" then out[i] = math.random(0, 60)
    else out[i] = math.random(-30, 30) end
  end
  if k == "f" and n > 3 then out[2] = 0 / 0; out[3] = 0.0 end
  if k ~= "f" and k ~= "b" and n > 3 then out[3] = 0 end
  return out
end

-- Asserts a computed value matches the reference: exact for ints and bools, relative
-- tolerance for floats (NaN only where NaN is expected).
function R.check(expected, actual, dtype, what)
  local k = promote.kind(dtype)
  if k ~= "f" then
    if expected ~= actual then
      error(("%s: expected %s, got %s"):format(what, tostring(expected), tostring(actual)), 2)
    end
    return
  end
  if expected ~= expected then
    if actual == actual then error(("%s: expected nan, got %s"):format(what, tostring(actual)), 2) end
    return
  end
  if actual ~= actual then error(("%s: expected %s, got nan"):format(what, tostring(expected)), 2) end
  if expected == actual then return end
  local rtol = dtype == "float32" and 2e-6 or 1e-12
  if math.abs(expected - actual) > rtol * math.max(1, math.abs(expected)) then
    error(("%s: expected %.17g, got %.17g"):format(what, expected, actual), 2)
  end
end

return R
