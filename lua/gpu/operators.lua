-- gpu.operators: the C expression and result dtype of every elementwise operation, with
-- NumPy semantics.  The array operators, gpuarray.where/maximum/minimum/abs, astype, the
-- cumath functions and gpu.fuse's tracer all build their kernels from this one table.
--
--   local c_expr, dtype = operators.expression(op, types, exprs[, target])
-- types[k] is operand k's dtype, or "weak-int" / "weak-float" for a Lua number (NEP 50);
-- exprs[k] is its C expression.  target is astype's dtype.  The expression has the C type
-- of dtype (every operation casts its result, so nested expressions wrap like NumPy's
-- fixed-width arithmetic).  Two weak operands give a weak result ("weak-int" is computed
-- as long long, "weak-float" as double).  Helpers it calls (lg_floordiv, lg_mod, lg_pow,
-- lg_shl, lg_shr, lg_abs, lg_fmod, lg_max, lg_min, lg_fmax, lg_fmin, lg_sign, lg_isnan,
-- lg_isinf, lg_isfinite, lg_to_<int dtype>) come from
-- kernels/elementwise.cu, the complex types and their functions (lg_complex64, lg_exp, ...)
-- from kernels/common.cu.  astype from a float to an integer truncates toward zero and
-- saturates: NaN gives 0, values beyond the range the nearest limit (NumPy leaves it undefined);
-- from a complex to a real type it keeps the real part.

local core = require "gpu.core"
local promote = require "gpu.promote"

local M = {}

-- float16 and bfloat16 values are floats in expressions (gpu.elementwise widens their loads
-- and rounds their stores), and each operation that yields one rounds to it, as NumPy does.
local round16 = {float16 = "lg_round_half", bfloat16 = "lg_round_bf16"}

local function ctype(t)
  if t == "weak-int" then return "long long" end
  if t == "weak-float" then return "double" end
  if t == "weak-complex" then return "lg_complex128" end
  if round16[t] then return "float" end
  return core.dtype(t).ctype
end
M.ctype = ctype

-- The unsigned type that + - * of a dtype computes in without undefined overflow: the
-- unsigned twin of int32 and int64, and unsigned int for uint16 (C promotes it to int, where
-- 65535 * 65535 overflows).  int8, uint8 and int16 cannot overflow int.
local wrap_ctype = {
  int32 = "unsigned int", int64 = "unsigned long long", ["weak-int"] = "unsigned long long",
  uint16 = "unsigned int",
}

-- Values computed in double round to 16 bits from the double (lg_round_half's overload for
-- it), not through a float, which would round twice.
local computed_in_double = {float64 = true, ["weak-float"] = true}

local function cast(e, from, to)
  if from == to then return e end
  if round16[to] then
    return ("%s((%s)(%s))"):format(round16[to], computed_in_double[from] and "double" or "float", e)
  end
  return ("((%s)(%s))"):format(ctype(to), e)
end

-- Operations whose names the user sees in errors.
local symbols = {
  add = "'+'", sub = "'-'", mul = "'*'", div = "'/'", floordiv = "'//'", mod = "'%'",
  pow = "'^'", neg = "unary '-'", band = "'&'", bor = "'|'", bxor = "'~'", shl = "'<<'",
  shr = "'>>'", bnot = "unary '~'",
}
local function opname(op) return symbols[op] or op end

-- A type as errors name it: Lua values by their Lua names.
local weak_names = {["weak-int"] = "Lua integer", ["weak-float"] = "Lua float",
                    ["weak-complex"] = "gpu.complex"}
local function typename(t) return weak_names[t] or t end

local unary_math = {
  fabs = {"fabsf", "fabs"}, ceil = {"ceilf", "ceil"}, floor = {"floorf", "floor"},
  exp = {"expf", "exp"}, log = {"logf", "log"}, log10 = {"log10f", "log10"},
  sqrt = {"sqrtf", "sqrt"}, sin = {"sinf", "sin"}, cos = {"cosf", "cos"},
  tan = {"tanf", "tan"}, asin = {"asinf", "asin"}, acos = {"acosf", "acos"},
  atan = {"atanf", "atan"}, sinh = {"sinhf", "sinh"}, cosh = {"coshf", "cosh"},
  tanh = {"tanhf", "tanh"},
  -- NumPy's, beyond PyCUDA's cumath
  trunc = {"truncf", "trunc"}, rint = {"rintf", "rint"}, expm1 = {"expm1f", "expm1"},
  log1p = {"log1pf", "log1p"}, log2 = {"log2f", "log2"}, exp2 = {"exp2f", "exp2"},
  cbrt = {"cbrtf", "cbrt"}, asinh = {"asinhf", "asinh"}, acosh = {"acoshf", "acosh"},
  atanh = {"atanhf", "atanh"},
  -- SciPy's special functions (lgamma is its gammaln, gamma C's tgamma, i0 also NumPy's)
  erf = {"erff", "erf"}, erfc = {"erfcf", "erfc"}, erfinv = {"erfinvf", "erfinv"},
  erfcinv = {"erfcinvf", "erfcinv"}, lgamma = {"lgammaf", "lgamma"}, gamma = {"tgammaf", "tgamma"},
  i0 = {"cyl_bessel_i0f", "cyl_bessel_i0"}, i1 = {"cyl_bessel_i1f", "cyl_bessel_i1"},
  j0 = {"j0f", "j0"}, j1 = {"j1f", "j1"}, y0 = {"y0f", "y0"}, y1 = {"y1f", "y1"},
  -- kernels/special.cu's, overloaded for float and double
  digamma = {"lg_digamma", "lg_digamma"}, expit = {"lg_expit", "lg_expit"},
  logit = {"lg_logit", "lg_logit"}, deg2rad = {"lg_deg2rad", "lg_deg2rad"},
  rad2deg = {"lg_rad2deg", "lg_rad2deg"},
}

-- cumath's functions of one operand that follow their own typing rules: sinc (NumPy's,
-- float64 for integers), signbit (bool), square and reciprocal (integers stay integers),
-- bitwise_count (integers only, uint8 results).
local unary_other = {sinc = true, signbit = true, square = true, reciprocal = true,
                     bitwise_count = true}

M.cumath_unary = {}
for name in pairs(unary_math) do M.cumath_unary[name] = true end
for name in pairs(unary_other) do M.cumath_unary[name] = true end

-- Float functions of two operands: NumPy's arctan2 (as atan2, C's name, like cumath's
-- others), hypot and copysign.
local binary_math = {
  atan2 = {"atan2f", "atan2"}, hypot = {"hypotf", "hypot"}, copysign = {"copysignf", "copysign"},
  -- NumPy's, from kernels/special.cu (nextafter of 16-bit floats too)
  logaddexp = {"lg_logaddexp", "lg_logaddexp"}, logaddexp2 = {"lg_logaddexp2", "lg_logaddexp2"},
  heaviside = {"lg_heaviside", "lg_heaviside"}, nextafter = {"nextafterf", "nextafter"},
}

-- Of two operands with their own typing rules: float_power (NumPy's, always float64), gcd
-- and lcm (integers only).
local binary_other = {float_power = true, gcd = true, lcm = true}

M.cumath_binary = {}
for name in pairs(binary_math) do M.cumath_binary[name] = true end
for name in pairs(binary_other) do M.cumath_binary[name] = true end

-- The cumath functions defined for complex operands (kernels/common.cu's lg_<name>).
local complex_math = {
  exp = true, log = true, log10 = true, sqrt = true, sin = true, cos = true, tan = true,
  sinh = true, cosh = true, tanh = true,
}

-- The real type of a complex one's parts.
local real_of = {complex64 = "float32", complex128 = "float64", ["weak-complex"] = "weak-float"}

local arity = {
  add = 2, sub = 2, mul = 2, div = 2, floordiv = 2, mod = 2, pow = 2, band = 2, bor = 2,
  bxor = 2, shl = 2, shr = 2, eq = 2, ne = 2, lt = 2, le = 2, gt = 2, ge = 2,
  maximum = 2, minimum = 2, fmod = 2, neg = 1, bnot = 1, abs = 1, astype = 1, where = 3,
  real = 1, imag = 1, conj = 1, logical_and = 2, logical_or = 2, logical_not = 1,
  if_positive = 3, ldexp = 2, frexp_mantissa = 1, frexp_exponent = 1, modf_fraction = 1,
  modf_integer = 1, fmax = 2, fmin = 2, clip = 3, isnan = 1, isinf = 1, isfinite = 1, sign = 1,
}
for name in pairs(unary_math) do arity[name] = 1 end
for name in pairs(unary_other) do arity[name] = 1 end
for name in pairs(binary_math) do arity[name] = 2 end
for name in pairs(binary_other) do arity[name] = 2 end
M.arity = arity

local compare = {eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">="}
-- u op s as s op' u, and s op u for a negative s and any unsigned u.
local mirror = {eq = "eq", ne = "ne", lt = "gt", le = "ge", gt = "lt", ge = "le"}
local below = {eq = "false", ne = "true", lt = "true", le = "true", gt = "false", ge = "false"}
local bitwise = {band = "&", bor = "|", bxor = "^"}

local function is_int(t) local k = promote.kind(t); return k == "i" or k == "u" end
local function is_complex(t) return promote.kind(t) == "c" end

-- The float dtype math on t gives, as NumPy's: t for floats, else the smallest float that
-- holds every value of t (float16 for bool and 1-byte ints, float32 for 2-byte ones).
local function float_for(t)
  local k = promote.kind(t)
  if t == "weak-complex" then return "complex128" end
  if t == "weak-int" or t == "weak-float" then return "float64" end
  if k == "f" or k == "c" then return t end
  local size = promote.info[t].size
  return size == 1 and "float16" or size == 2 and "float32" or "float64"
end

-- Integer + - * with NumPy's wrap-around and no undefined behaviour (see wrap_ctype).
local function wrapping(t, a, cop, b)
  local u = wrap_ctype[t]
  if u then
    return ("((%s)((%s)(%s) %s (%s)(%s)))"):format(ctype(t), u, a, cop, u, b)
  end
  return ("((%s)((%s) %s (%s)))"):format(ctype(t), a, cop, b)
end

local expression_of

-- try_expression(op, types, exprs[, target]) -> c_expr, dtype, or nil, why[, operand]
function M.try_expression(op, types, exprs, target)
  local e, t, bad = expression_of(op, types, exprs, target)
  if e ~= nil and round16[t] and op ~= "astype" and op ~= "where" then   -- those cast already
    e = ("%s(%s)"):format(round16[t], e)
  end
  return e, t, bad
end

function expression_of(op, types, exprs, target)
  local n = arity[op]
  if n == nil then return nil, ("unknown operation '%s'"):format(tostring(op)) end
  if #types ~= n or #exprs ~= n then
    return nil, ("%s takes %d operand%s, got %d"):format(op, n, n == 1 and "" or "s", #types)
  end
  for i = 1, n do
    local t = types[i]
    if not promote.is_weak(t) and promote.info[t] == nil then
      return nil, ("unknown dtype '%s'"):format(tostring(t))
    end
  end
  local a, b = exprs[1], exprs[2]
  local ta, tb = types[1], types[2]

  if op == "astype" then
    if promote.info[target] == nil then
      return nil, ("unknown dtype '%s'"):format(tostring(target))
    end
    if is_complex(ta) and not is_complex(target) then
      if target == "bool" then return ("lg_nonzero(%s)"):format(a), "bool" end
      a, ta = ("lg_real(%s)"):format(a), real_of[ta]   -- NumPy drops the imaginary part
    end
    if target == "bool" then return ("((bool)(%s))"):format(a), "bool" end
    if promote.kind(ta) == "f" and is_int(target) then
      return ("lg_to_%s(%s)"):format(target, a), target   -- saturating (elementwise.cu)
    end
    return cast(a, ta, target), target
  end

  if unary_math[op] then
    local ft = float_for(ta)
    if is_complex(ft) then
      if not complex_math[op] then
        return nil, ("%s is not defined for complex operands (%s)"):format(op, ta)
      end
      return ("lg_%s(%s)"):format(op, cast(a, ta, ft)), ft
    end
    local f = unary_math[op][ft == "float64" and 2 or 1]   -- 16-bit floats in float
    return ("%s(%s)"):format(f, cast(a, ta, ft)), ft
  end

  -- cumath's frexp and modf, one result each (cumath launches both), and ldexp
  if op:match("^frexp_") or op:match("^modf_") or op == "ldexp" then
    local fname = op:match("^[^_]+")
    local ft = float_for(ta)
    if is_complex(ft) then
      return nil, ("%s is not defined for complex operands (%s)"):format(fname, typename(ta)), 1
    end
    local float_ctype = ft == "float64" and "double" or "float"     -- 16-bit floats in float
    local x = ("(%s)(%s)"):format(float_ctype, cast(a, ta, ft))
    if op == "ldexp" then
      local kb = promote.kind(tb)
      if tb == "uint64" or (kb ~= "i" and kb ~= "u" and kb ~= "b") then
        return nil, ("ldexp needs integer exponents of at most 63 bits, got %s"):format(typename(tb)), 2
      end
      return ("lg_ldexp(%s, (long long)(%s))"):format(x, b), ft
    end
    return ("lg_%s(%s)"):format(op, x), op == "frexp_exponent" and "int32" or ft
  end

  if binary_math[op] or op == "float_power" then
    local ft = float_for(promote.result_type(ta, tb))
    if is_complex(ft) then
      return nil, ("%s is not defined for complex operands (%s and %s)"):format(op, typename(ta),
                                                                               typename(tb)),
             is_complex(ta) and 1 or 2
    end
    if op == "float_power" then ft = "float64" end
    local f = binary_math[op] and binary_math[op][ft == "float64" and 2 or 1]  -- 16-bit in float
    if op == "float_power" then f = "pow"
    elseif op == "nextafter" and round16[ft] then   -- steps of the 16-bit type, not float's
      f = ft == "float16" and "lg_nextafter_half" or "lg_nextafter_bf16"
    end
    return ("%s(%s, %s)"):format(f, cast(a, ta, ft), cast(b, tb, ft)), ft
  end

  if op == "gcd" or op == "lcm" then
    for i = 1, 2 do
      local ki = promote.kind(types[i])
      if ki == "f" or ki == "c" then
        return nil, ("%s needs integer or bool operands, got %s"):format(op, typename(types[i])), i
      end
    end
    local t = promote.result_type(ta, tb)
    if promote.kind(t) == "f" then   -- a signed integer and uint64: no common integer type
      return nil, ("%s needs a common integer type, and %s and %s have none"):format(op, ta, tb), 2
    end
    if promote.kind(t) == "b" then t = "int8" end      -- NumPy's bools count as int8 here
    return ("lg_%s(%s, %s)"):format(op, cast(a, ta, t), cast(b, tb, t)), t
  end

  if unary_other[op] then
    local k = promote.kind(ta)
    if k == "c" and op ~= "square" and op ~= "reciprocal" then
      return nil, ("%s is not defined for complex operands (%s)"):format(op, ta)
    end
    if op == "sinc" then    -- np.sinc computes in float64 for integers (pi * x)
      local ft = k == "f" and ta or "float64"
      return ("lg_sinc(%s)"):format(cast(a, ta, ft)), ft
    elseif op == "signbit" then
      if k == "f" then return ("(signbit(%s) != 0)"):format(a), "bool" end
      return k == "i" and ("((%s) < 0)"):format(a) or "false", "bool"
    elseif op == "bitwise_count" then
      if k == "f" then
        return nil, ("bitwise_count needs integer or bool operands, got %s"):format(ta)
      end
      return ("lg_bitwise_count(%s)"):format(k == "b" and cast(a, ta, "int8") or a), "uint8"
    end
    local t = k == "b" and "int8" or ta      -- square and reciprocal: bools as int8
    local x = cast(a, ta, t)
    if op == "square" then return expression_of("mul", {t, t}, {x, x}) end
    if k == "f" or k == "c" then return expression_of("div", {"weak-float", t}, {"1.0", x}) end
    -- reciprocal of an integer: C's 1 / x, and 0 for x = 0 (as the operators' 1 // 0)
    if k == "u" then return ("((%s)((%s) == 1))"):format(ctype(t), x), t end
    return ("((%s)((%s) == 1 ? 1 : (%s) == -1 ? -1 : 0))"):format(ctype(t), x, x), t
  end

  if op == "isnan" or op == "isinf" or op == "isfinite" then
    return ("lg_%s(%s)"):format(op, a), "bool"       -- overloaded per type (elementwise.cu)
  end

  if op == "clip" then   -- NumPy's minimum(maximum(a, lo), hi): a NaN anywhere gives NaN
    local t = promote.result_type(promote.result_type(ta, tb), types[3])
    for i = 1, 3 do
      if is_complex(types[i]) then
        return nil, ("clip is not defined for complex operands (%s)"):format(typename(types[i])), i
      end
    end
    return ("lg_min(lg_max(%s, %s), %s)"):format(cast(a, ta, t), cast(b, tb, t),
                                                 cast(exprs[3], types[3], t)), t
  end

  if op == "where" or op == "if_positive" then
    local tc, tx, ty = types[1], types[2], types[3]
    local t = promote.result_type(tx, ty)
    if op == "if_positive" then   -- PyCUDA's: the criterion compared with 0
      if is_complex(tc) then
        return nil, ("if_positive is not defined for a complex criterion (%s)"):format(typename(tc)), 1
      end
      a = ("((%s) > 0)"):format(a)
    elseif is_complex(tc) then
      a = ("lg_nonzero(%s)"):format(a)
    end
    return ("((%s) ? %s : %s)"):format(a, cast(exprs[2], tx, t), cast(exprs[3], ty, t)), t
  end

  if op == "logical_and" or op == "logical_or" or op == "logical_not" then
    -- NumPy's truth of any value: nonzero (a NaN is true), a complex one with a nonzero part
    local truth = {}
    for i = 1, n do
      truth[i] = is_complex(types[i]) and ("lg_nonzero(%s)"):format(exprs[i])
                                       or ("((%s) != 0)"):format(exprs[i])
    end
    if op == "logical_not" then return ("(!%s)"):format(truth[1]), "bool" end
    return ("(%s %s %s)"):format(truth[1], op == "logical_and" and "&&" or "||", truth[2]), "bool"
  end

  if n == 1 then
    local k = promote.kind(ta)
    if op == "neg" then
      if k == "b" then return nil, "unary '-' on a bool array is not supported (use unary '~')" end
      if k == "f" or k == "c" then return ("(-(%s))"):format(a), ta end
      return wrapping(ta, "0", "-", a), ta
    elseif op == "bnot" then
      if k == "b" then return ("(!(%s))"):format(a), ta end
      if k == "f" or k == "c" then
        return nil, ("unary '~' needs integer or bool operands, got %s"):format(ta)
      end
      return ("((%s)(~(%s)))"):format(ctype(ta), a), ta
    elseif op == "real" or op == "imag" or op == "conj" then
      if k == "c" then
        return ("lg_%s(%s)"):format(op, a), op == "conj" and ta or real_of[ta]
      end
      if op == "imag" then return ("((%s)0)"):format(ctype(ta)), ta end   -- NumPy's zeros
      return a, ta
    elseif op == "sign" then   -- NumPy's: -1, 0 or 1 (NaN stays NaN), z / |z| for complex
      if k == "b" then return nil, "sign is not defined for bool operands" end
      return ("lg_sign(%s)"):format(a), ta
    elseif op == "abs" then
      if k == "b" or k == "u" then return a, ta end
      if k == "c" then return ("lg_abs(%s)"):format(a), real_of[ta] end
      return ("lg_abs(%s)"):format(cast(a, ta, ta)), ta
    end
  end

  -- binary
  local t = promote.result_type(ta, tb)
  local ca, cb = cast(a, ta, t), cast(b, tb, t)
  local k = promote.kind(t)

  if k == "c" and (compare[op] and op ~= "eq" and op ~= "ne" or op == "maximum" or
                    op == "minimum" or op == "fmax" or op == "fmin" or op == "floordiv" or
                    op == "mod" or op == "fmod") then
    return nil, ("%s is not defined for complex operands (%s and %s)"):format(opname(op), typename(ta),
                                                                             typename(tb)),
           is_complex(ta) and 1 or 2
  end
  if compare[op] then
    local ka, kb = promote.kind(ta), promote.kind(tb)
    if k == "f" and (ka == "i" and kb == "u" or ka == "u" and kb == "i") then
      -- NumPy 2 compares a signed with an unsigned integer exactly: through float64 (their
      -- common type) int64 2^53 + 1 would equal uint64 2^53
      local s, u, sop = a, b, op
      if ka == "u" then s, u, sop = b, a, mirror[op] end
      return ("((long long)(%s) < 0 ? %s : (unsigned long long)(%s) %s (unsigned long long)(%s))")
             :format(s, below[sop], s, compare[sop], u), "bool"
    end
    return ("(%s %s %s)"):format(ca, compare[op], cb), "bool"
  end
  if op == "maximum" or op == "minimum" then
    return ("lg_%s(%s, %s)"):format(op == "maximum" and "max" or "min", ca, cb), t
  end
  if op == "fmax" or op == "fmin" then   -- NumPy's: a NaN loses to a number
    return ("lg_%s(%s, %s)"):format(op, ca, cb), t
  end
  if bitwise[op] or op == "shl" or op == "shr" then
    for i = 1, 2 do
      local ki = promote.kind(types[i])
      if ki == "f" or ki == "c" then
        return nil, ("%s needs integer or bool operands, got %s"):format(opname(op), types[i]), i
      end
    end
    if k == "f" then   -- a signed integer and uint64: NumPy's common type is float64
      return nil, ("%s needs a common integer type, and %s and %s have none"):format(opname(op), ta, tb), 2
    end
    if bitwise[op] then return ("((%s)((%s) %s (%s)))"):format(ctype(t), ca, bitwise[op], cb), t end
    if k == "b" then t = "int8"; ca, cb = cast(a, ta, t), cast(b, tb, t) end
    return ("lg_%s(%s, %s)"):format(op, ca, cb), t
  end
  if op == "add" or op == "sub" or op == "mul" then
    if k == "b" then
      if op == "sub" then
        return nil, "'-' on bool operands is not supported (use '~', exclusive or)", 2
      end
      return ("(%s %s %s)"):format(ca, op == "add" and "||" or "&&", cb), t
    end
    local cop = op == "add" and "+" or op == "sub" and "-" or "*"
    if k == "f" or k == "c" then return ("(%s %s %s)"):format(ca, cop, cb), t end
    return wrapping(t, ca, cop, cb), t
  end
  if op == "div" then
    if k ~= "f" and k ~= "c" then
      t = t == "weak-int" and "weak-float" or "float64"
      ca, cb = cast(a, ta, t), cast(b, tb, t)
    end
    return ("(%s / %s)"):format(ca, cb), t
  end
  -- floordiv, mod, pow, fmod: helpers overloaded per type; bools count as int8
  if k == "b" then t = "int8"; ca, cb = cast(a, ta, t), cast(b, tb, t) end
  return ("lg_%s(%s, %s)"):format(op, ca, cb), t
end

-- expression(op, types, exprs[, target]) -> c_expr, dtype; raises on a bad combination.
function M.expression(op, types, exprs, target)
  local e, t = M.try_expression(op, types, exprs, target)
  if e == nil then error(t, 2) end
  return e, t
end

return M
