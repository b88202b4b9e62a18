-- CPU references for spec/52 (gpu.numeric): NumPy's numeric functions computed in Lua, each
-- step as NumPy takes it, over lists of values as the arrays store them.  Values are Lua
-- numbers (complex ones gpu.complex values); a float result is returned with the bound on its
-- distance from the device's result where the two may round differently (see spec/52).
local complex = require "gpu.complex"
local A = require "array_reference"

local N = {}

local INF = math.huge
N.EPS64, N.EPS32 = 2.0 ^ -52, 2.0 ^ -23

local f32 = A.f32
N.f32 = f32

-- C's rint: v rounded to a whole number, halves to the even one.
local function rint(v)
  if v ~= v or v == INF or v == -INF then return v end
  local whole = math.floor(v) + 0.0
  local rest = v - whole
  if rest > 0.5 or (rest == 0.5 and whole % 2 ~= 0) then whole = whole + 1 end
  return whole
end
N.rint = rint

-- v rounded to the nearest float16 (IEEE binary16, halves to even; past 65504 infinite).
local function to_half(v)
  if v ~= v or v == 0 or v == INF or v == -INF then return v end
  local magnitude = math.abs(v)
  local exponent = -14                     -- subnormals share the least exponent's spacing
  while magnitude >= 2.0 ^ (exponent + 1) do exponent = exponent + 1 end
  local spacing = 2.0 ^ (exponent - 10)
  local rounded = rint(magnitude / spacing) * spacing
  if rounded > 65504 then rounded = INF end
  return v < 0 and -rounded or rounded
end
N.to_half = to_half

-- NumPy's power_of_ten(n): from a table below 9, by repeated multiplication above.
function N.power_of_ten(n)
  local p = ({1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8})[n + 1]
  if p then return p end
  p = 1e9
  for _ = 10, n do p = p * 10 end
  return p
end

-- NumPy's around of x (an element of dtype) at decimals places, exactly as its ufuncs round:
-- float32 and float16 at each step; integers through float64 and back, wrapping; bools as
-- float16 (values 0 and 1).
function N.around(x, decimals, dtype)
  if type(x) == "table" then          -- a complex value: its parts, in the parts' dtype
    local part = dtype == "complex64" and "float32" or "float64"
    return complex.complex(N.around(x.re, decimals, part), N.around(x.im, decimals, part))
  end
  local scale, down = N.power_of_ten(math.abs(decimals)), decimals < 0
  if dtype == "bool" then x, dtype = x and 1.0 or 0.0, "float16" end
  if dtype == "float64" then
    return down and rint(x / scale) * scale or rint(x * scale) / scale
  elseif dtype == "float32" then
    local f = f32(scale)
    return down and f32(rint(f32(x / f)) * f) or f32(rint(f32(x * f)) / f)
  elseif dtype == "float16" then
    local f = to_half(scale)
    return down and to_half(rint(to_half(f32(x / f))) * f) or to_half(f32(rint(to_half(x * f)) / f))
  end
  if not down then return x end
  return A.wrap(dtype, math.tointeger(rint(x / scale) * scale))
end

-- NumPy's order of sorted arrays: whether a goes before b (NaN after every number).
local function goes_before(a, b) return a < b or (b ~= b and a == a) end
N.goes_before = goes_before

-- NumPy's digitize of x among bins (a list, monotonic as `decreasing` says): the count of
-- bins at or below x (right: below x), from the other end for decreasing bins.
function N.digitize(x, bins, right, decreasing)
  local count = 0
  for _, b in ipairs(bins) do
    if (right and goes_before(b, x)) or (not right and not goes_before(x, b)) then count = count + 1 end
  end
  return decreasing and #bins - count or count
end

-- Complex arithmetic of gpu.complex values, and the magnitude of a real or complex value.
local function conj(v) return type(v) == "table" and complex.complex(v.re, -v.im) or v end
N.conj = conj
local function magnitude(v)
  if type(v) == "table" then return math.sqrt(v.re * v.re + v.im * v.im) end
  return math.abs(v)
end
N.magnitude = magnitude

-- NumPy's _pyarray_correlate of the lists x and y (#x >= #y) in mode: out[j] = the sum over
-- k of x[j - left + k] * y[k], over the terms x holds; with `add` combining (acc, x, y) (a
-- dtype's wrapping, or or-ing for bools) and zero its start.  Returns the list and, for
-- floats, each output's sum of |x * y| (its rounding bound's scale).
local function correlate_lists(x, y, mode, add, zero)
  local n1, n2 = #x, #y
  local left, length = 0, n1 - n2 + 1
  if mode == "same" then left, length = n2 // 2, n1
  elseif mode == "full" then left, length = n2 - 1, n1 + n2 - 1 end
  local out, scale = {}, {}
  for j = 0, length - 1 do
    local acc, s = zero, 0
    for k = 0, n2 - 1 do
      local i = j - left + k
      if i >= 0 and i < n1 then
        acc = add(acc, x[i + 1], y[k + 1])
        if type(x[i + 1]) ~= "boolean" then s = s + magnitude(x[i + 1]) * magnitude(y[k + 1]) end
      end
    end
    out[j + 1], scale[j + 1] = acc, s
  end
  return out, scale
end

local function reversed(t)
  local r = {}
  for i = #t, 1, -1 do r[#r + 1] = t[i] end
  return r
end

-- NumPy's convolve: the longer first, then correlate with the other reversed.
function N.convolve(a, v, mode, add, zero)
  if #v > #a then a, v = v, a end
  return correlate_lists(a, reversed(v), mode, add, zero)
end

-- NumPy's correlate: v conjugated; where v is the longer, v (so conjugated) correlated with
-- a and the result reversed.
function N.correlate(a, v, mode, add, zero)
  local cv = {}
  for i, x in ipairs(v) do cv[i] = conj(x) end
  if #a >= #v then return correlate_lists(a, cv, mode, add, zero) end
  local out, scale = correlate_lists(cv, a, mode, add, zero)
  return reversed(out), reversed(scale)
end

-- NumPy's cov of rows (p lists of n observations, as doubles or gpu.complex values) with ddof:
-- the p x p list of lists, and each entry's bound, for the device's float64 mean, centring
-- and products (summed in any order): 8 (n + 2) eps64 times the sum over k of
-- (|x_ik| + |m_i|)(|x_jk| + |m_j|), scaled as the entry.
function N.cov(rows, ddof)
  local p, n = #rows, #rows[1]
  local means, centred = {}, {}
  for i = 1, p do
    local total = 0
    for k = 1, n do total = total + rows[i][k] end
    means[i] = total / n
    centred[i] = {}
    for k = 1, n do centred[i][k] = rows[i][k] - means[i] end
  end
  local fact = n - ddof
  if fact <= 0 then fact = 0 end
  local scale = 1 / fact
  local c, bound = {}, {}
  for i = 1, p do
    c[i], bound[i] = {}, {}
    for j = 1, p do
      local s, size = 0, 0
      for k = 1, n do
        s = s + centred[i][k] * conj(centred[j][k])
        size = size + (magnitude(rows[i][k]) + magnitude(means[i]))
                      * (magnitude(rows[j][k]) + magnitude(means[j]))
      end
      c[i][j] = s * scale
      bound[i][j] = 8 * (n + 2) * N.EPS64 * size * scale
    end
  end
  return c, bound
end

-- v clipped to [-1, 1] (a NaN stays).
local function unit_clip(v) return v < -1 and -1.0 or (v > 1 and 1.0 or v) end

-- NumPy's corrcoef from cov's c and its bounds: c[i][j] / sqrt(c[i][i]) / sqrt(c[j][j]),
-- clipped, and its bound: c's bounds carried through the quotient, plus a few roundings.
function N.corrcoef(c, bound)
  local p = #c
  local r, rbound = {}, {}
  local function re(v) return type(v) == "table" and v.re or v end
  for i = 1, p do
    r[i], rbound[i] = {}, {}
    local cii = re(c[i][i])
    for j = 1, p do
      local cjj = re(c[j][j])
      local si, sj = math.sqrt(cii), math.sqrt(cjj)
      local v = c[i][j]
      local relative = bound[i][i] / (2 * cii) + bound[j][j] / (2 * cjj) + 8 * N.EPS64
      if type(v) == "table" then
        r[i][j] = complex.complex(unit_clip(v.re / si / sj), unit_clip(v.im / si / sj))
      else
        r[i][j] = unit_clip(v / si / sj)
      end
      rbound[i][j] = bound[i][j] / (si * sj) + magnitude(v) / (si * sj) * relative
    end
  end
  return r, rbound
end

return N
