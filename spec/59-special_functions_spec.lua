-- gpu.cumath's special functions (SciPy's erf, erfc, erfinv, erfcinv, gamma, lgamma, digamma,
-- i0, i1, j0, j1, y0, y1, expit, logit) and NumPy's functions beyond PyCUDA's (sinc,
-- deg2rad, rad2deg, square, reciprocal, signbit, logaddexp, logaddexp2, heaviside,
-- nextafter, float_power, gcd, lcm, bitwise_count) against Lua references on fresh random
-- inputs, and mpmath's values (50 digits) at fixed points.
local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"
local operators = require "gpu.operators"
local R = require "reduction_helpers"
local A = require "array_reference"

local f32 = A.f32
local cumath = gpu.cumath

-- references {
local pi, inf, nan = math.pi, math.huge, 0 / 0
local SQRT_PI = math.sqrt(pi)
local EULER = 0.57721566490153286061

-- sin(pi x) and cos(pi x): x less its nearest integer is exact, so there is no pi * x to round
local function sinpi(x)
  local n = math.floor(x + 0.5)
  local s = math.sin(pi * (x - n))
  return n % 2 == 0 and s or -s
end
local function cospi(x)
  local n = math.floor(x + 0.5)
  local c = math.cos(pi * (x - n))
  return n % 2 == 0 and c or -c
end

-- exp(-x^2) with x^2 split exactly into a 26-bit head squared and the rest (Dekker's split)
local function exp_minus_square(x)
  local c = x * 134217729.0
  local head = c - (c - x)
  local tail = x - head
  return math.exp(-head * head) * math.exp(-(2 * head * tail + tail * tail))
end

-- erf for |x| < 2: 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (1 3 5 ... (2n+1)), terms all
-- positive; erfc for x >= 2: the continued fraction exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x
-- + (3/2)/(x + ...)))), evaluated from its 4000th level up.
local function erf_small(x)
  local term, sum, n = x, x, 0
  repeat n = n + 1; term = term * 2 * x * x / (2 * n + 1); sum = sum + term until term <= sum * 1e-18
  return 2 / SQRT_PI * exp_minus_square(x) * sum
end
local function erfc_large(x)
  local t = x
  for k = 4000, 1, -1 do t = x + (k / 2) / t end
  return exp_minus_square(x) / SQRT_PI / t
end
local function erf(x)
  if x ~= x then return x end
  local m = math.abs(x)
  if m == 0 then return x end
  local r = m < 2 and erf_small(m) or 1 - erfc_large(m)
  return x < 0 and -r or r
end
local function erfc(x)
  if x ~= x then return x end
  if x >= 2 then return x == inf and 0.0 or erfc_large(x) end
  if x > 0 then return 1 - erf_small(x) end
  return 1 + erf(-x)
end

-- Inverses by Newton's method: on erf for |y| <= 1/2, else on log erfc, whose argument
-- 1 - |y| is exact there.
local function newton(f, slope, x)
  for _ = 1, 200 do
    local step = f(x) / slope(x)
    x = x - step
    if math.abs(step) <= 1e-17 * math.abs(x) then break end
  end
  return x
end
local function erfcinv(q)
  if q ~= q or q < 0 or q > 2 then return nan end
  if q == 0 then return inf end
  if q == 2 then return -inf end
  if q > 1 then return -erfcinv(2 - q) end
  if q >= 0.5 then
    local y = 1 - q
    if y == 0 then return 0.0 end
    return newton(function(x) return erf(x) - y end,
                  function(x) return 2 / SQRT_PI * exp_minus_square(x) end, y * SQRT_PI / 2)
  end
  local logq = math.log(q)
  return newton(function(x) return math.log(erfc(x)) - logq end,
                function(x) return -2 / SQRT_PI * exp_minus_square(x) / erfc(x) end,
                math.sqrt(-logq))
end
local function erfinv(y)
  if y ~= y or y < -1 or y > 1 then return nan end
  if y == 0 then return y end
  local r = erfcinv(1 - math.abs(y))
  return y < 0 and -r or r
end

-- log Gamma for x > 0: the recurrence up to 15 or more, then Stirling's series (its next
-- term is below 1e-19 there); Gamma itself as exp of that, over the recurrence's product.
local function stirling(z)
  local f = 1 / (z * z)
  local series = (1 / 12 - f * (1 / 360 - f * (1 / 1260 - f * (1 / 1680 - f * (1 / 1188
                 - f * (691 / 360360 - f * (1 / 156))))))) / z
  return (z - 0.5) * math.log(z) - z + 0.5 * math.log(2 * pi) + series
end
local function shifted(x)
  local product = 1.0
  while x < 15 do product = product * x; x = x + 1 end
  return x, product
end
local function is_pole(x) return x <= 0 and x == math.floor(x) end
local lgamma
function lgamma(x)
  if x ~= x then return x end
  if x == inf or x == -inf or is_pole(x) then return inf end
  if x < 0 then return math.log(pi / math.abs(sinpi(x))) - lgamma(1 - x) end
  local z, product = shifted(x)
  return stirling(z) - math.log(product)
end
local gamma
function gamma(x)
  if x ~= x or x == inf then return x end
  if x == 0 then return 1 / x end                    -- +-inf by the zero's sign
  if x == -inf or is_pole(x) then return nan end
  if x < 0 then return pi / (sinpi(x) * gamma(1 - x)) end
  if x > 171.7 then return inf end
  local z, product = shifted(x)
  return math.exp(stirling(z)) / product
end

-- digamma: the recurrence up to 20, then psi(x) = log x - 1/(2x) - sum B_2k / (2k x^2k), k to
-- 5 (the next term is below 1e-17 there); reflection for x < 0.
local function digamma(x)
  if x ~= x or x == inf then return x end
  if x == 0 then return x > 0 and -inf or 1 / x < 0 and inf or -inf end
  if x == -inf or is_pole(x) then return nan end
  if x < 0 then return digamma(1 - x) - pi * cospi(x) / sinpi(x) end
  local sum = 0.0
  while x < 20 do sum = sum - 1 / x; x = x + 1 end
  local f = 1 / (x * x)
  return sum + math.log(x) - 0.5 / x
         - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f * (1 / 132)))))
end

-- Bessel functions.  I0 and I1 by their power series (terms all positive); J0, J1, Y0 and Y1
-- by theirs for 0 < x <= 8, where the largest term is about 100 (absolute errors near 1e-14):
--   J0 = sum (-1)^k (x^2/4)^k / k!^2,   J1 = (x/2) sum (-1)^k (x^2/4)^k / (k! (k+1)!)
--   Y0 = (2/pi) (log(x/2) + gamma) J0 + (2/pi) sum_{k>=1} (-1)^(k+1) H_k (x^2/4)^k / k!^2
--   Y1 = -2/(pi x) + (2/pi) log(x/2) J1
--        - (x/(2 pi)) sum_{k>=0} (-1)^k (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!)
-- with H_k the harmonic numbers and psi(n+1) = H_n - gamma.
local function bessel_series(x, order, sign)
  local q = x * x / 4
  local term = order == 0 and 1.0 or x / 2
  local sum, k = term, 0
  repeat
    k = k + 1
    term = term * sign * q / (k * (k + order))
    sum = sum + term
  until math.abs(term) <= 1e-18 * math.abs(sum) and k > 2
  return sum
end
local function i0(x)
  if x ~= x then return x end
  if math.abs(x) == inf then return inf end
  return bessel_series(x, 0, 1)
end
local function i1(x)
  if x ~= x or math.abs(x) == inf then return x end
  return bessel_series(x, 1, 1)
end
local function j0(x) return bessel_series(x, 0, -1) end
local function j1(x) return bessel_series(x, 1, -1) end
local function y0(x)
  local q = x * x / 4
  local term, harmonic, sum = 1.0, 0.0, 0.0
  for k = 1, 200 do
    term = -term * q / (k * k)
    harmonic = harmonic + 1 / k
    sum = sum - harmonic * term
  end
  return 2 / pi * (math.log(x / 2) + EULER) * j0(x) + 2 / pi * sum
end
local function y1(x)
  local q = x * x / 4
  local term, harmonic, sum = 1.0, 0.0, 0.0   -- term (-1)^k q^k / (k! (k+1)!), harmonic H_k
  for k = 0, 200 do
    if k > 0 then term = -term * q / (k * (k + 1)); harmonic = harmonic + 1 / k end
    sum = sum + (2 * harmonic + 1 / (k + 1) - 2 * EULER) * term
  end
  return -2 / (pi * x) + 2 / pi * math.log(x / 2) * j1(x) - x / (2 * pi) * sum
end
-- references }

local references = {erf = erf, erfc = erfc, erfinv = erfinv, erfcinv = erfcinv, lgamma = lgamma,
                    gamma = gamma, digamma = digamma, i0 = i0, i1 = i1, j0 = j0, j1 = j1, y0 = y0,
                    y1 = y1}

-- mpmath's values at fixed points, where x is exact in float64 (and used for float32 too
-- where it is exact there)
local mpmath_values = {
  {"erf", 0.125, 0.1403162048013338},
  {"erf", 0.5, 0.5204998778130465},
  {"erf", 1.0, 0.8427007929497149},
  {"erf", 2.5, 0.999593047982555},
  {"erf", 4.0, 0.9999999845827421},
  {"erf", -3.0, -0.9999779095030014},
  {"erfc", 0.125, 0.8596837951986662},
  {"erfc", 1.0, 0.15729920705028513},
  {"erfc", 3.0, 2.209049699858544e-05},
  {"erfc", 6.0, 2.1519736712498913e-17},
  {"erfc", 9.0, 4.13703174651381e-37},
  {"erfc", -1.5, 1.9661051464753108},
  {"erfinv", 0.125, 0.11123545184094996},
  {"erfinv", 0.5, 0.4769362762044699},
  {"erfinv", -0.75, -0.8134198475976185},
  {"erfinv", 0.9990234375, 2.331467773621948},
  {"erfinv", 0.999999, 3.458910737275499},
  {"erfcinv", 1e-10, 4.572824967389486},
  {"erfcinv", 0.001, 2.3267537655135246},
  {"erfcinv", 0.5, 0.4769362762044699},
  {"erfcinv", 1.25, -0.2253120550121781},
  {"erfcinv", 1.9990234375, -2.331467773621948},
  {"lgamma", 0.5, 0.5723649429247001},
  {"lgamma", 1.5, -0.12078223763524522},
  {"lgamma", 3.0, 0.6931471805599453},
  {"lgamma", 100.0, 359.1342053695754},
  {"lgamma", -1.5, 0.860047015376481},
  {"lgamma", 1e-05, 11.512919692895826},
  {"gamma", 0.5, 1.772453850905516},
  {"gamma", 1.5, 0.886226925452758},
  {"gamma", 5.0, 24.0},
  {"gamma", 30.5, 4.822696933490909e+31},
  {"gamma", -0.5, -3.544907701811032},
  {"gamma", -2.5, -0.9453087204829419},
  {"digamma", 1.4616321449683622, -9.241265521729427e-17},
  {"digamma", 1.4616321325302124, -1.203605254910667e-08},
  {"digamma", 1.5, 0.03648997397857652},
  {"digamma", 0.25, -4.2274535333762655},
  {"digamma", 12.0, 2.442661679975812},
  {"digamma", -0.5, 0.03648997397857652},
  {"digamma", -3.75, -1.6923885983113303},
  {"digamma", 1e-06, -1000000.5772140201},
  {"i0", 0.5, 1.0634833707413236},
  {"i0", 2.0, 2.2795853023360673},
  {"i0", 10.0, 2815.7166284662544},
  {"i0", 40.0, 1.48947747934199e+16},
  {"i1", 0.5, 0.2578943053908963},
  {"i1", 2.0, 1.590636854637329},
  {"i1", 10.0, 2670.9883037012546},
  {"i1", -40.0, -1.4707396163259352e+16},
  {"j0", 0.5, 0.9384698072408129},
  {"j0", 2.5, -0.048383776468198},
  {"j0", 10.0, -0.24593576445134835},
  {"j0", 12.5, 0.1468840547004211},
  {"j0", 20.0, 0.16702466434058316},
  {"j0", 50.0, 0.055812327669251816},
  {"j0", 100.0, 0.019985850304223122},
  {"j1", 0.5, 0.2422684576748739},
  {"j1", 2.5, 0.49709410246427405},
  {"j1", 10.0, 0.04347274616886144},
  {"j1", 12.5, -0.16548380461475973},
  {"j1", 20.0, 0.06683312417585005},
  {"j1", 50.0, -0.09751182812517514},
  {"j1", 100.0, -0.07714535201411216},
  {"y0", 0.125, -1.3896806251438405},
  {"y0", 0.5, -0.44451873350670656},
  {"y0", 2.5, 0.4980703596152319},
  {"y0", 10.0, 0.055671167283599395},
  {"y0", 12.5, -0.1712143068446693},
  {"y0", 20.0, 0.06264059680938383},
  {"y0", 50.0, -0.09806499547007708},
  {"y0", 100.0, -0.07724431336508315},
  {"y1", 0.125, -5.199936112534775},
  {"y1", 0.5, -1.471472392670243},
  {"y1", 2.5, 0.1459181379667858},
  {"y1", 10.0, 0.24901542420695388},
  {"y1", 12.5, -0.1538382565375012},
  {"y1", 20.0, -0.1655116143625213},
  {"y1", 50.0, -0.05679566856201477},
  {"y1", 100.0, -0.020372312002759792},
}

-- Asserts got is want to a relative tolerance (mixed: relative to max(1, |want|)); NaN only
-- for NaN, infinities and zeros exactly (-0.0 by its sign too).
local function check(want, got, rtol, mixed, what)
  if want ~= want then
    assert(got ~= got, ("%s: expected nan, got %.17g"):format(what, got))
    return
  end
  if want == math.huge or want == -math.huge or want == 0 then
    assert(got == want, ("%s: expected %.17g, got %.17g"):format(what, want, got))
    if want == 0 and 1 / want < 0 then assert(1 / got < 0, what .. ": expected -0.0, got 0.0") end
    return
  end
  local scale = mixed and math.max(1, math.abs(want)) or math.abs(want)
  assert(math.abs(got - want) <= rtol * scale,
         ("%s: expected %.17g, got %.17g (relative error %.3g)"):format(what, want, got,
                                                                     math.abs(got - want) / scale))
end

-- Each function's random inputs (float64, float32) and tolerances: relative where the
-- reference is accurate to about 1e-14 relative, mixed where only absolutely (near zeros of
-- the function: lgamma near 1 and 2, the Bessel functions; CUDA's lgamma is documented as less
-- accurate in (-23, -2.26) (float: (-10, -2.26)), which the inputs avoid).
local domains = {
  erf = {{-6, 6}, {-4, 4}}, erfc = {{-3, 26}, {-3, 9}}, erfinv = {{-1, 1}, {-1, 1}},
  erfcinv = {{0, 2}, {0, 2}}, lgamma = {{-2.2, 60}, {-2.2, 30}}, gamma = {{-20, 60}, {-10, 30}},
  digamma = {{-30, 30}, {-30, 30}}, i0 = {{-50, 50}, {-20, 20}}, i1 = {{-50, 50}, {-20, 20}},
  j0 = {{0.05, 8}, {0.05, 8}}, j1 = {{0.05, 8}, {0.05, 8}}, y0 = {{0.05, 8}, {0.05, 8}},
  y1 = {{0.05, 8}, {0.05, 8}},
}
local mixed = {lgamma = true, j0 = true, j1 = true, y0 = true, y1 = true}

-- Special values and what each function gives there (C's and CUDA's, which SciPy follows).
local inf, nan = math.huge, 0 / 0
local specials = {
  erf = {{0.0, 0.0}, {-0.0, -0.0}, {inf, 1.0}, {-inf, -1.0}, {nan, nan}},
  erfc = {{0.0, 1.0}, {inf, 0.0}, {-inf, 2.0}, {nan, nan}},
  erfinv = {{0.0, 0.0}, {-0.0, -0.0}, {1.0, inf}, {-1.0, -inf}, {1.5, nan}, {-inf, nan}, {nan, nan}},
  erfcinv = {{0.0, inf}, {2.0, -inf}, {-0.5, nan}, {2.5, nan}, {nan, nan}},
  lgamma = {{1.0, 0.0}, {2.0, 0.0}, {0.0, inf}, {-1.0, inf}, {-2.0, inf}, {inf, inf}, {-inf, inf},
            {nan, nan}},
  gamma = {{1.0, 1.0}, {5.0, 24.0}, {0.0, inf}, {-0.0, -inf}, {-1.0, nan}, {-3.0, nan},
           {inf, inf}, {-inf, nan}, {200.0, inf}, {nan, nan}},
  digamma = {{1.0, -0.57721566490153286}, {0.0, -inf}, {-0.0, inf}, {-1.0, nan}, {-4.0, nan},
             {inf, inf}, {-inf, nan}, {nan, nan}},
  i0 = {{0.0, 1.0}, {inf, inf}, {-inf, inf}, {nan, nan}},
  i1 = {{0.0, 0.0}, {inf, inf}, {-inf, -inf}, {nan, nan}},
  j0 = {{0.0, 1.0}, {inf, 0.0}, {-inf, 0.0}, {nan, nan}},
  j1 = {{0.0, 0.0}, {nan, nan}},
  y0 = {{0.0, -inf}, {-1.0, nan}, {inf, 0.0}, {nan, nan}},
  y1 = {{0.0, -inf}, {-1.0, nan}, {inf, 0.0}, {nan, nan}},
}

-- The float steps of a format (p significand bits, emin the least normal exponent, max the
-- greatest finite value): nextafter's reference.
local function next_toward(x, y, p, emin, max)
  if x ~= x or y ~= y then return nan end
  if x == y then return y end
  if x == 0 then return (y > 0 and 1 or -1) * 2.0 ^ (emin - p + 1) end
  local away = (x < y) == (x > 0)
  local m = math.abs(x)
  local r
  if m == inf then r = max
  else
    local e = math.max(math.floor(math.log(m, 2)), emin)
    while 2.0 ^ e > m and e > emin do e = e - 1 end
    while 2.0 ^ (e + 1) <= m do e = e + 1 end
    local ulp = 2.0 ^ (e - p + 1)
    if not away and m == 2.0 ^ e and e > emin then ulp = ulp / 2 end
    r = away and m + ulp or m - ulp
    if r > max then r = inf end
  end
  return x < 0 and -r or r
end
local formats = {float64 = {53, -1022, 1.7976931348623157e308}, float32 = {24, -126, 3.4028234663852886e38},
                 float16 = {11, -14, 65504.0}}

-- log(1 + e) for 0 <= e <= 1, to about 1e-14 relative: its series below 1/100
local function log1p(e)
  if e < 0.01 then
    local sum, power = 0.0, e
    for k = 1, 9 do sum = sum + (k % 2 == 1 and power or -power) / k; power = power * e end
    return sum
  end
  return math.log(1 + e)
end
-- logit: 2 atanh(2x - 1) by its series near 1/2 (2x - 1 exact there), else log(x / (1 - x))
local function logit(x)
  if x ~= x or x < 0 or x > 1 then return nan end
  if x < 0.25 or x > 0.75 then return math.log(x / (1 - x)) end
  local t, sum, power = 2 * x - 1, 0.0, nil
  power = t
  for k = 0, 60 do sum = sum + power / (2 * k + 1); power = power * t * t end
  return 2 * sum
end

local function popcount(v)
  if v < 0 then v = -v end        -- the magnitude's bits (-mininteger keeps its one bit)
  local n = 0
  while v ~= 0 do n = n + (v & 1); v = v >> 1 end
  return n
end
local function gcd(a, b)
  a, b = math.abs(a), math.abs(b)
  while b ~= 0 do a, b = b, a % b end
  return a
end

local function random_in(range) return range[1] + (range[2] - range[1]) * math.random() end

describe("special functions (CPU: types, errors, NVRTC)", function()
  it("are gpu.cumath functions, with SciPy's and NumPy's other names", function()
    for _, name in ipairs{"erf", "erfc", "erfinv", "erfcinv", "lgamma", "gammaln", "gamma", "digamma",
                          "psi", "i0", "i1", "j0", "j1", "y0", "y1", "sinc", "expit", "logit",
                          "deg2rad", "radians", "rad2deg", "degrees", "square", "reciprocal", "signbit",
                          "logaddexp", "logaddexp2", "heaviside", "nextafter", "float_power", "gcd", "lcm",
                          "bitwise_count"} do
      assert.are.equal("function", type(cumath[name]), name)
    end
  end)

  it("type their results as NumPy does and refuse what it refuses", function()
    local function result(op, types)
      return select(2, operators.expression(op, types, #types == 1 and {"a"} or {"a", "b"}))
    end
    local function why(op, types)
      return select(2, operators.try_expression(op, types, #types == 1 and {"a"} or {"a", "b"}))
    end
    assert.are.equal("float16", result("erf", {"int8"}))
    assert.are.equal("float32", result("gamma", {"uint16"}))
    assert.are.equal("float64", result("digamma", {"int32"}))
    assert.are.equal("bfloat16", result("i0", {"bfloat16"}))
    assert.are.equal("float64", result("sinc", {"int8"}))         -- np.sinc: pi * x in float64
    assert.are.equal("float16", result("sinc", {"float16"}))
    assert.are.equal("bool", result("signbit", {"int16"}))
    assert.are.equal("int8", result("square", {"bool"}))
    assert.are.equal("uint16", result("square", {"uint16"}))
    assert.are.equal("int32", result("reciprocal", {"int32"}))
    assert.are.equal("complex64", result("reciprocal", {"complex64"}))
    assert.are.equal("complex128", result("square", {"complex128"}))
    assert.are.equal("uint8", result("bitwise_count", {"int64"}))
    assert.are.equal("float32", result("logaddexp", {"float32", "weak-float"}))
    assert.are.equal("float32", result("heaviside", {"int16", "int8"}))
    assert.are.equal("float16", result("nextafter", {"float16", "weak-int"}))
    assert.are.equal("float64", result("float_power", {"float32", "float32"}))
    assert.are.equal("float64", result("float_power", {"int8", "weak-int"}))
    assert.are.equal("int16", result("gcd", {"int8", "uint8"}))
    assert.are.equal("int8", result("lcm", {"bool", "bool"}))
    assert.are.equal("uint32", result("gcd", {"uint32", "weak-int"}))
    assert.are.equal("erfinv is not defined for complex operands (complex64)", why("erfinv", {"complex64"}))
    assert.are.equal("sinc is not defined for complex operands (complex128)", why("sinc", {"complex128"}))
    assert.are.equal("signbit is not defined for complex operands (complex64)", why("signbit", {"complex64"}))
    assert.are.equal("bitwise_count needs integer or bool operands, got float32",
                     why("bitwise_count", {"float32"}))
    assert.are.equal("logaddexp is not defined for complex operands (complex64 and Lua float)",
                     why("logaddexp", {"complex64", "weak-float"}))
    assert.are.equal("float_power is not defined for complex operands (float64 and complex128)",
                     why("float_power", {"float64", "complex128"}))
    assert.are.equal("gcd needs integer or bool operands, got float32", why("gcd", {"int32", "float32"}))
    assert.are.equal("lcm needs integer or bool operands, got Lua float", why("lcm", {"int32", "weak-float"}))
    assert.are.equal("gcd needs a common integer type, and int64 and uint64 have none",
                     why("gcd", {"int64", "uint64"}))
  end)

  it("compile for each kind of operand #nvrtc", function()
    local list = {}
    local function add(op, types)
      local names = #types == 1 and {"a"} or {"a", "b"}
      local e, rt = operators.try_expression(op, types, names)
      assert(e, op .. ": " .. tostring(rt))
      local operands = {}
      for k, t in ipairs(types) do operands[k] = {name = names[k], dtype = t} end
      list[#list + 1] = {ew.program{expr = e, out = rt, operands = operands,
                                    name = op .. "_" .. table.concat(types, "_")}, "c"}
    end
    for _, op in ipairs{"erf", "erfc", "erfinv", "erfcinv", "lgamma", "gamma", "digamma", "i0", "i1", "j0",
                        "j1", "y0", "y1", "sinc", "expit", "logit", "deg2rad", "rad2deg", "square",
                        "reciprocal", "signbit"} do
      for _, t in ipairs{"float32", "float64", "float16", "bfloat16", "int16"} do add(op, {t}) end
    end
    for _, t in ipairs{"complex64", "complex128", "bool", "uint8"} do
      add("square", {t}); add("reciprocal", {t})
    end
    for _, op in ipairs{"logaddexp", "logaddexp2", "heaviside", "nextafter", "float_power"} do
      for _, t in ipairs{"float32", "float64", "float16", "bfloat16", "int8"} do add(op, {t, t}) end
    end
    for _, t in ipairs{"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"} do
      add("gcd", {t, t}); add("lcm", {t, t}); add("bitwise_count", {t})
    end
    assert.is_true(#gpu.compile(ew.combined_source(list), {arch = "sm_90", no_extern_c = true}) > 0)
    -- each kernel alone: kernels/special.cu only in those that call it
    local digamma = ew.source(list[31][1], "c")   -- digamma of float32
    assert.is_truthy(digamma:find("lg_digamma(double x)", 1, true))
    assert.is_true(#gpu.compile(digamma, {arch = "sm_90", no_extern_c = true}) > 0)
    local e = operators.try_expression("add", {"float32", "float32"}, {"a", "b"})
    local plain = ew.source(ew.program{expr = e, out = "float32", name = "add_f32",
                                       operands = {{name = "a", dtype = "float32"},
                                                   {name = "b", dtype = "float32"}}}, "c")
    assert.is_nil(plain:find("lg_digamma", 1, true))
  end)

  it("check options as the other cumath functions", function()
    helpers.assert_error("bad argument #2 to 'erf' (unknown option 'outt')", cumath.erf, nil, {outt = 1})
    helpers.assert_error("bad argument #2 to 'gammaln' (unknown option 'axis')", cumath.gammaln, nil,
                         {axis = 1})
    helpers.assert_error("bad argument #3 to 'gcd' (unknown option 'dtype')", cumath.gcd, nil, nil,
                         {dtype = "int8"})
  end)
end)

describe("special functions", function()
  helpers.gpu_it("match the references (float64, float32): random inputs, special values, mpmath's", function()
    for name, reference in pairs(references) do
      for d, dtype in ipairs{"float64", "float32"} do
        local rtol = dtype == "float64" and 1e-12 or (mixed[name] and 2e-5 or 1e-5)
        local xs, wants = {}, {}
        for i = 1, 300 do
          local x = random_in(domains[name][d])
          if name == "erfcinv" and i % 3 == 0 then   -- down to the tail
            x = 10 ^ (-(dtype == "float64" and 300 or 30) * math.random())
          end
          if dtype == "float32" then x = f32(x) end
          xs[i], wants[i] = x, reference(x)
        end
        for _, case in ipairs(specials[name]) do xs[#xs + 1], wants[#wants + 1] = case[1], case[2] end
        local random_count = #xs
        for _, case in ipairs(mpmath_values) do
          if case[1] == name and (dtype == "float64" or f32(case[2]) == case[2]) then
            xs[#xs + 1], wants[#wants + 1] = case[2], case[3]
          end
        end
        local r = cumath[name](R.to_gpu(xs, dtype))
        assert.are.equal(dtype, r.dtype)
        local got = r:get()
        for i, x in ipairs(xs) do
          local want = wants[i]
          if dtype == "float32" and math.abs(want) > 3.4028234663852886e38 then want = want * inf end
          local tol = rtol
          if i > random_count then   -- mpmath's: exact, and beyond 8 for the Bessel functions
            tol = mixed[name] and x > 8 and (dtype == "float64" and 1e-11 or 1e-4)
                  or dtype == "float64" and 1e-13 or rtol
          end
          -- digamma's reflection is accurate only absolutely near its negative zeros
          check(want, got[i], tol, mixed[name] or (name == "digamma" and x < 0),
                ("%s(%s %.17g)"):format(name, dtype, x))
        end
      end
    end
    -- SciPy's names for lgamma and digamma
    local x = R.to_gpu({0.5, 3.5, -1.5}, "float64")
    assert.are.same(cumath.lgamma(x):get():totable(), cumath.gammaln(x):get():totable())
    assert.are.same(cumath.digamma(x):get():totable(), cumath.psi(x):get():totable())
  end)

  helpers.gpu_it("expit, logit, sinc, deg2rad, rad2deg, square, reciprocal and signbit", function()
    for _, dtype in ipairs{"float64", "float32"} do
      local round = dtype == "float32" and f32 or function(v) return v end
      local rtol = dtype == "float64" and 1e-13 or 1e-5
      local xs = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, inf, -inf, nan}
      for i = #xs + 1, 200 do xs[i] = round(random_in{-10, 10}) end
      local a = R.to_gpu(xs, dtype)
      local expit, sinc = cumath.expit(a):get(), cumath.sinc(a):get()
      local radians, degrees = cumath.deg2rad(a):get(), cumath.rad2deg(a):get()
      local square, reciprocal = cumath.square(a):get(), cumath.reciprocal(a):get()
      local signbit = cumath.signbit(a):get()
      local pi_ = round(math.pi)
      for i, x in ipairs(xs) do
        local what = ("(%s %.17g)"):format(dtype, x)
        check(1 / (1 + math.exp(-x)), expit[i], rtol, false, "expit" .. what)
        local y = round(pi_ * x)
        check(x == 0 and 1.0 or math.sin(y) / y, sinc[i], rtol, false, "sinc" .. what)
        A.check(round(x * round(math.pi / 180)), radians[i], "float64", "deg2rad" .. what)
        A.check(round(x * round(180 / math.pi)), degrees[i], "float64", "rad2deg" .. what)
        A.check(round(x * x), square[i], "float64", "square" .. what)
        check(round(1 / x), reciprocal[i], 0, false, "reciprocal" .. what)
        assert.are.equal(string.byte(string.pack(">d", x)) >= 0x80, signbit[i], "signbit" .. what)
      end
      local ps = {0.0, 1.0, 0.5, 0.25, 0.75, 0.5 + 2 ^ -20, -0.5, 1.5, nan}
      for i = #ps + 1, 200 do ps[i] = round(math.random()) end
      local got = cumath.logit(R.to_gpu(ps, dtype)):get()
      for i, p in ipairs(ps) do
        check(logit(p), got[i], rtol, false, ("logit(%s %.17g)"):format(dtype, p))
      end
      -- expit's far tails: 0 and 1 without overflow, and the inverse of logit
      local far = cumath.expit(R.to_gpu({-1000, 1000}, dtype)):get()
      assert.are.same({0, 1}, {far[1], far[2]})
    end
    -- integer operands: square and reciprocal keep the dtype (C's 1 / x, 0 for 0), signbit
    -- compares with 0, sinc computes in float64
    local ints = R.to_gpu({-3, -1, 0, 1, 2, 100}, "int8")
    local sq = cumath.square(ints)
    assert.are.equal("int8", sq.dtype)
    assert.are.same({9, 1, 0, 1, 4, 16}, sq:get():totable())           -- 10000 wraps to 16
    assert.are.same({0, -1, 0, 1, 0, 0}, cumath.reciprocal(ints):get():totable())
    assert.are.same({0, 0, 1, 0}, cumath.reciprocal(R.to_gpu({0, 2, 1, 255}, "uint8")):get():totable())
    assert.are.same({true, true, false, false, false, false}, cumath.signbit(ints):get():totable())
    local s = cumath.sinc(ints)
    assert.are.equal("float64", s.dtype)
    assert.are.equal(1, s:get()[3])
    assert.are.same({1, 0, 1}, cumath.square(R.to_gpu({true, false, true}, "bool")):get():totable())
    -- complex square and reciprocal
    local z = gpu.to_gpu(gpu.host.from_table({gpu.complex(1, 2), gpu.complex(0, -2)}, "complex128"))
    local zz, zr = cumath.square(z):get(), cumath.reciprocal(z):get()
    assert.are.same({-3, 4}, {zz[1].re, zz[1].im})
    assert.are.same({0.2, -0.4}, {zr[1].re, zr[1].im})
    assert.are.same({0, 0.5}, {zr[2].re, zr[2].im})
  end)

  helpers.gpu_it("logaddexp, logaddexp2, heaviside, nextafter and float_power", function()
    for _, dtype in ipairs{"float64", "float32"} do
      local round = dtype == "float32" and f32 or function(v) return v end
      local rtol = dtype == "float64" and 1e-13 or 1e-5
      local xs = {0.0, inf, -inf, inf, nan, 1.0, -0.0, 3.0, 1.0}
      local ys = {0.0, inf, -inf, -inf, 1.0, nan, 2.0, 3.0, 1.0}
      for i = #xs + 1, 200 do
        xs[i] = round(random_in{-60, 60})
        ys[i] = i % 4 == 0 and xs[i] or round(i % 2 == 0 and random_in{-60, 60} or xs[i] + random_in{-1, 1})
      end
      if dtype == "float32" then ys[9] = 1 + 2 ^ -23 else ys[9] = 1 + 2 ^ -52 end
      local a, b = R.to_gpu(xs, dtype), R.to_gpu(ys, dtype)
      local le, le2 = cumath.logaddexp(a, b):get(), cumath.logaddexp2(a, b):get()
      local hv, na = cumath.heaviside(a, b):get(), cumath.nextafter(a, b):get()
      local fp = cumath.float_power(a, 2)
      assert.are.equal("float64", fp.dtype)
      fp = fp:get()
      local format = formats[dtype]
      for i = 1, #xs do
        local x, y = xs[i], ys[i]
        local what = ("(%s %.17g, %.17g)"):format(dtype, x, y)
        local m, d = math.max(x, y), -math.abs(x - y)
        local want, want2
        if x ~= x or y ~= y then want, want2 = nan, nan
        elseif x == y then want, want2 = x + math.log(2), x + 1
        else want, want2 = m + log1p(math.exp(d)), m + log1p(2 ^ d) / math.log(2) end
        check(want, le[i], rtol, true, "logaddexp" .. what)
        check(want2, le2[i], rtol, true, "logaddexp2" .. what)
        A.check(x ~= x and nan or x == 0 and y or x < 0 and 0 or 1, hv[i], "float64", "heaviside" .. what)
        check(next_toward(x, y, table.unpack(format)), na[i], 0, false, "nextafter" .. what)
        check(x * x, fp[i], 1e-15, false, "float_power" .. what)
      end
    end
    -- float16 steps of its own, across zero, the subnormals and the largest value
    local xs = {1.0, 1.0, 0.0, 0.0, 2 ^ -24, 65504.0, -65504.0, 2.0, inf}
    local ys = {2.0, 0.0, 1.0, -1.0, 0.0, inf, -inf, 0.0, 0.0}
    local h = cumath.nextafter(R.to_gpu(xs, "float16"), R.to_gpu(ys, "float16"))
    assert.are.equal("float16", h.dtype)
    local got = h:get()
    for i = 1, #xs do
      check(next_toward(xs[i], ys[i], table.unpack(formats.float16)), got[i], 0, false,
            "nextafter float16 #" .. i)
    end
    assert.are.same({1 + 2 ^ -10, 1 - 2 ^ -11, 2 ^ -24, -2 ^ -24, 0, inf, -inf, 2 - 2 ^ -10, 65504},
                    got:totable())
    -- float_power of integers: float64, negative exponents allowed (unlike '^' on integers)
    assert.are.same({0.5, 1, 0.25}, cumath.float_power(R.to_gpu({2, 1, 4}, "int32"), -1):get():totable())
  end)

  helpers.gpu_it("gcd, lcm and bitwise_count are exact for every integer dtype", function()
    for _, dtype in ipairs{"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"} do
      local signed = dtype:sub(1, 1) == "i"
      local lo, hi = signed and -30 or 0, 30
      local a_values, b_values = {0, 0, 12, 7}, {0, 5, 18, 0}
      for i = 5, 300 do a_values[i], b_values[i] = math.random(lo, hi), math.random(lo, hi) end
      local a, b = R.to_gpu(a_values, dtype), R.to_gpu(b_values, dtype)
      local g, l, c = cumath.gcd(a, b), cumath.lcm(a, b), cumath.bitwise_count(a)
      assert.are.equal(dtype, g.dtype)
      assert.are.equal(dtype, l.dtype)
      assert.are.equal("uint8", c.dtype)
      g, l, c = g:get(), l:get(), c:get()
      for i = 1, #a_values do
        local x, y = a_values[i], b_values[i]
        local what = ("(%s %d, %d)"):format(dtype, x, y)
        assert.are.equal(gcd(x, y), g[i], "gcd" .. what)
        local want = (x == 0 or y == 0) and 0 or A.wrap(dtype, math.abs(x) // gcd(x, y) * math.abs(y))
        assert.are.equal(want, l[i], "lcm" .. what)
        assert.are.equal(popcount(x), c[i], "bitwise_count" .. what)
      end
    end
    -- the extremes: magnitudes of the most negative values, and wide values
    local big = R.to_gpu({math.mininteger, -1, math.maxinteger, 1 << 40}, "int64")
    assert.are.same({1, 1, 63, 1}, cumath.bitwise_count(big):get():totable())
    assert.are.same({1, 1, 1, 1 << 40}, cumath.gcd(big, R.to_gpu({1, 7, 1, 1 << 41}, "int64")):get():totable())
    assert.are.same({1, 7, 1, 0}, cumath.bitwise_count(R.to_gpu({-128, 127, -1, 0}, "int8")):get():totable())
    assert.are.same({1, 0}, cumath.bitwise_count(R.to_gpu({true, false}, "bool")):get():totable())
    -- Lua integers and mixed dtypes: NumPy's promotion
    local g = cumath.gcd(R.to_gpu({12, -18, 0}, "int16"), 8)
    assert.are.equal("int16", g.dtype)
    assert.are.same({4, 2, 8}, g:get():totable())
    local l = cumath.lcm(R.to_gpu({4, 6}, "int8"), R.to_gpu({6, 250}, "uint8"))
    assert.are.equal("int16", l.dtype)
    assert.are.same({12, 750}, l:get():totable())
  end)

  helpers.gpu_it("take views, 0-d and empty arrays, 16-bit floats, out, stream and gpu.fuse", function()
    local values = {}
    for i = 1, 12 do values[i] = random_in{0.1, 4} end
    local m = R.reshaped(R.to_gpu(values, "float64"), {3, 4})
    local t = R.transposed(m)                     -- (4, 3), not contiguous
    local got = cumath.digamma(t):get()
    for i = 1, 4 do
      for j = 1, 3 do
        check(digamma(values[(j - 1) * 4 + i]), got[(i - 1) * 3 + j], 1e-12, false,
              "digamma of a transposed view")
      end
    end
    local every = R.every(R.to_gpu({12, 1, 18, 1, -30, 1}, "int32"), 2)
    assert.are.same({6, 6, 6}, cumath.gcd(every, R.to_gpu({18, 12, 6}, "int32")):get():totable())
    local scalar = cumath.erf(gpu.gpuarray.zeros({}, "float32") + 0.5)
    assert.are.same({}, scalar.shape)
    check(erf(f32(0.5)), scalar:get()[1], 1e-6, false, "erf of a 0-d array")
    local empty = cumath.gamma(gpu.gpuarray.zeros({0}, "float64"))
    assert.are.same({0}, empty.shape)
    assert.are.same({0}, cumath.lcm(gpu.gpuarray.zeros({0}, "int32"), 3).shape)
    -- float16 and bfloat16 compute in float and round once; 1-byte integers give float16
    for _, dtype in ipairs{"float16", "bfloat16"} do
      local xs = {0.5, 1.25, 2.0, -0.75}
      local r = cumath.erf(R.to_gpu(xs, dtype))
      assert.are.equal(dtype, r.dtype)
      local h = r:get()
      for i, x in ipairs(xs) do
        check(erf(x), h[i], dtype == "float16" and 1e-3 or 8e-3, false, "erf " .. dtype)
      end
    end
    local from_int = cumath.gamma(R.to_gpu({1, 2, 3, 4, 5}, "int8"))
    assert.are.equal("float16", from_int.dtype)
    assert.are.same({1, 1, 2, 6, 24}, from_int:get():totable())
    -- out and stream
    local a = R.to_gpu({0.5, 1.5, 2.5}, "float32")
    local out, s = gpu.empty_like(a), gpu.Stream()
    assert.are.equal(out, cumath.lgamma(a, {out = out, stream = s}))
    assert.are.equal(out, cumath.logaddexp(a, a, {out = out, stream = s}))
    s:synchronize()
    local h = out:get()
    for i, x in ipairs{0.5, 1.5, 2.5} do check(x + math.log(2), h[i], 1e-6, false, "logaddexp into out") end
    -- traced: one kernel of several special functions, aliases included
    local fused = gpu.fuse(function(x) return cumath.gammaln(x) + cumath.expit(x) * cumath.psi(x) end)
    local fx = fused(R.to_gpu({0.5, 3.0}, "float64")):get()
    for i, x in ipairs{0.5, 3.0} do
      check(lgamma(x) + digamma(x) / (1 + math.exp(-x)), fx[i], 1e-12, true, "fused at " .. x)
    end
  end)

  helpers.gpu_it("refuse bad operands with clear messages", function()
    local z = gpu.to_gpu(gpu.host.from_table({gpu.complex(1, 1)}, "complex64"))
    local f = R.to_gpu({1.5}, "float32")
    local i = R.to_gpu({3}, "int32")
    helpers.assert_error("bad argument #1 to 'erf' (erf is not defined for complex operands (complex64))",
                         cumath.erf, z)
    helpers.assert_error("bad argument #1 to 'psi' (digamma is not defined for complex operands (complex64))",
                         cumath.psi, z)
    helpers.assert_error("bad argument #1 to 'logaddexp' (logaddexp is not defined for complex operands "
                         .. "(complex64 and float32))", cumath.logaddexp, z, f)
    helpers.assert_error("bad argument #1 to 'bitwise_count' (bitwise_count needs integer or bool operands, "
                         .. "got float32)", cumath.bitwise_count, f)
    helpers.assert_error("bad argument #2 to 'gcd' (gcd needs integer or bool operands, got float32)",
                         cumath.gcd, i, f)
    helpers.assert_error("bad argument #2 to 'lcm' (lcm needs a common integer type, and int64 and uint64 "
                         .. "have none)",
                         cumath.lcm, R.to_gpu({1}, "int64"), R.to_gpu({1}, "uint64"))
    helpers.assert_error("bad argument #2 to 'sinc' (unknown option 'axis')", cumath.sinc, f, {axis = 1})
    helpers.assert_error("bad argument #3 to 'heaviside' (unknown option 'dtype')", cumath.heaviside, f, f,
                         {dtype = "float64"})
    helpers.assert_error("bad argument #1 to 'erf' (at least one operand must be a GPUArray)", cumath.erf, 1.5)
    local freed = R.to_gpu({1.5}, "float64")
    freed:free()
    helpers.assert_error("bad argument #1 to 'gamma' (array has been freed)", cumath.gamma, freed)
    helpers.assert_error("bad argument #1 to 'degrees' (array has been freed)", cumath.degrees, freed)
    helpers.assert_error("bad argument #2 to 'nextafter' (array has been freed)", cumath.nextafter, f, freed)
    local freed_int = R.to_gpu({4}, "int32")
    freed_int:free()
    helpers.assert_error("bad argument #1 to 'gcd' (array has been freed)", cumath.gcd, freed_int, i)
  end)
end)
