-- gpu.cumath: elementwise math functions on GPUArrays: PyCUDA's pycuda.cumath; NumPy's
-- trunc, rint, expm1, log1p, log2, exp2, cbrt, asinh, acosh, atanh, arctan2 (as atan2),
-- hypot, copysign, sinc, i0, deg2rad (radians), rad2deg (degrees), square, reciprocal,
-- signbit, logaddexp, logaddexp2, heaviside, nextafter, float_power, gcd, lcm and
-- bitwise_count; SciPy's (cupyx.scipy.special's) erf, erfc, erfinv, erfcinv, gamma, gammaln
-- (as lgamma, C's name), digamma (psi), i1, j0, j1, y0, y1, expit and logit.
--   gpu.cumath.sqrt(a[, {out = o, stream = s}]), ..., gpu.cumath.fmod(a, b[, opts]),
--   gpu.cumath.atan2(y, x[, opts]), hypot(a, b[, opts]), copysign(a, b[, opts]),
--   gpu.cumath.ldexp(a, exponents[, opts]), gpu.cumath.frexp(a[, {stream = s}]) ->
--   significands, exponents, gpu.cumath.modf(a[, {stream = s}]) -> fractions, integers
-- float32 arrays compute in float32 (sqrtf, ...), float64 in float64; integer and bool arrays
-- are converted first, to NumPy's float dtype for them (float16 for 1-byte ones, float32 for
-- 2-byte ones, float64 for wider ones; sinc's is float64, as np.sinc's, and float_power's
-- always float64).  fmod, square, reciprocal, gcd and lcm keep integer dtypes (C's remainder,
-- 0 for a zero divisor; C's 1 / x, 0 for 0), signbit gives bools and bitwise_count uint8.
-- The operator table (gpu.operators) and kernels/special.cu say how each is computed.

local gpuarray = require "gpu.gpuarray"
local operators = require "gpu.operators"
local fuse = require "gpu.fuse"

local M = {}

local OUT_STREAM = {out = true, stream = true}
local STREAM = {stream = true}

local check_options = require("gpu.args").check_options

-- A plain array takes the operators' C path (gpuarray._unary_operator).
for name in pairs(operators.cumath_unary) do
  local operator = gpuarray._unary_operator(name, name)
  M[name] = function(a, opts)
    if fuse.is_traced(a) then return fuse.apply(name, a) end
    if opts == nil then return operator(a) end
    return gpuarray._unary_with_options(operator, name, 2, a, opts)
  end
end

-- SciPy's and NumPy's other names for some of them
local aliases = {gammaln = "lgamma", psi = "digamma", radians = "deg2rad", degrees = "rad2deg"}
for alias, name in pairs(aliases) do
  local operator = gpuarray._unary_operator(name, alias)
  M[alias] = function(a, opts)
    if fuse.is_traced(a) then return fuse.apply(name, a) end
    if opts == nil then return operator(a) end
    return gpuarray._unary_with_options(operator, alias, 2, a, opts)
  end
end

-- fmod and the functions of two operands (atan2, hypot, copysign, logaddexp, gcd, ...)
local binary = {fmod = true}
for name in pairs(operators.cumath_binary) do binary[name] = true end
for name in pairs(binary) do
  local operator = gpuarray._binary_operator(name)
  M[name] = function(a, b, opts)
    if fuse.is_traced(a) or fuse.is_traced(b) then return fuse.apply(name, a, b) end
    if opts == nil then return operator(a, b) end
    return gpuarray._binary_with_options(operator, name, 3, a, b, opts)
  end
end

-- ldexp(a, exponents): a * 2^exponents, exponents integers (an array or a Lua integer).
function M.ldexp(a, e, opts)
  if fuse.is_traced(a) or fuse.is_traced(e) then return fuse.apply("ldexp", a, e) end
  return gpuarray._apply("ldexp", "ldexp", {a, e}, check_options(opts, 3, "ldexp", OUT_STREAM))
end

-- Functions of two results, as two kernels: frexp (significands of magnitude 0.5 to 1 and
-- int32 exponents, with a = significand * 2^exponent; 0, inf and nan come back as they are,
-- exponent 0) and modf (fractional and integral parts, both with a's sign).
for name, parts in pairs{frexp = {"frexp_mantissa", "frexp_exponent"},
                         modf = {"modf_fraction", "modf_integer"}} do
  M[name] = function(a, opts)
    if fuse.is_traced(a) then return fuse.apply(parts[1], a), fuse.apply(parts[2], a) end
    opts = check_options(opts, 2, name, STREAM)
    local first = gpuarray._apply(parts[1], name, {a}, {stream = opts.stream})
    return first, gpuarray._apply(parts[2], name, {a}, {stream = opts.stream})
  end
end

return M
