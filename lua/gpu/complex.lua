-- gpu.complex: complex numbers as Lua values, the elements of complex64 and complex128 arrays.
--
--   local z = gpu.complex(1, 2)      -- 1 + 2i; z.re, z.im
--   z * z, z / 2, -z, z ^ 2, z == w, tostring(z) --> (1+2j), z:abs(), z:arg(), z:conj()
--
-- A value is a table {re = x, im = y} whose metatable the C core shares
-- (gpu.core.complex_metatable), so element reads, fills and kernel arguments take and give
-- them.  Arithmetic follows NumPy's: Smith's division, and whole powers up to 100 by repeated
-- squaring, as kernels/common.cu does on the device.  A GPUArray on either side of an
-- operator gets the array's operator.

local core = require "gpu.core"

local Complex = core.complex_metatable
local methods = {}
Complex.__index = methods

local function new(re, im) return setmetatable({re = re, im = im}, Complex) end

-- A Lua number as a float, keeping -0.0's sign (x + 0.0 would make it +0.0).
local function float(x) return x * 1.0 end

-- The parts of a Lua number or complex value, or nil for anything else (a table given the
-- metatable by hand, without numbers in re and im, included).
local function parts(z)
  if type(z) == "number" then return float(z), 0.0 end
  if getmetatable(z) == Complex then
    local re, im = rawget(z, "re"), rawget(z, "im")
    if type(re) == "number" and type(im) == "number" then return re, im end
  end
  return nil
end

local describe = require("gpu.args").typename

local M = {}

-- gpu.complex(re[, im]) -> re + im i
function M.complex(re, im)
  if type(re) ~= "number" then
    error("bad argument #1 to 'complex' (number expected, got " .. describe(re) .. ")", 2)
  end
  if im ~= nil and type(im) ~= "number" then
    error("bad argument #2 to 'complex' (number expected, got " .. describe(im) .. ")", 2)
  end
  return new(float(re), float(im or 0))
end

function M.is_complex(v) return getmetatable(v) == Complex end

local function mul(ar, ai, br, bi) return ar * br - ai * bi, ar * bi + ai * br end

local function div(ar, ai, br, bi)
  if math.abs(br) >= math.abs(bi) then
    local r = bi / br
    local d = br + bi * r
    return (ar + ai * r) / d, (ai - ar * r) / d
  end
  local r = br / bi
  local d = br * r + bi
  return (ar * r + ai) / d, (ai * r - ar) / d
end

local function exp(re, im)
  local m = math.exp(re)
  return m * math.cos(im), m * math.sin(im)
end

local function log(re, im)
  return math.log(math.sqrt(re * re + im * im)), math.atan(im, re)
end

local function pow(ar, ai, br, bi)
  if bi == 0 and br == math.floor(br) and math.abs(br) <= 100 then
    local n, rr, ri, xr, xi = math.tointeger(math.abs(br)), 1.0, 0.0, ar, ai
    while n > 0 do
      if n & 1 == 1 then rr, ri = mul(rr, ri, xr, xi) end
      xr, xi = mul(xr, xi, xr, xi)
      n = n >> 1
    end
    if br < 0 then return div(1.0, 0.0, rr, ri) end
    return rr, ri
  end
  if ar == 0 and ai == 0 then return 0.0, 0.0 end
  local lr, li = log(ar, ai)
  return exp(mul(br, bi, lr, li))
end

-- A binary metamethod: Lua numbers and complex values compute here; with a GPUArray (or
-- anything else with that metamethod) on one side, that side's metamethod decides.  Not a
-- string's: its arithmetic coerces to numbers and would blame this file's line.
local function binary(event, f)
  Complex[event] = function(a, b)
    local ar, ai = parts(a)
    local br, bi = parts(b)
    if ar == nil or br == nil then
      local other = ar == nil and a or b
      local mt = getmetatable(other)
      local handler = type(other) ~= "string" and type(mt) == "table" and mt ~= Complex
                      and rawget(mt, event)
      if handler then return handler(a, b) end   -- never this one again: it would loop
      error(("attempt to perform arithmetic on a %s value"):format(describe(other)), 2)
    end
    return new(f(ar, ai, br, bi))
  end
end

binary("__add", function(ar, ai, br, bi) return ar + br, ai + bi end)
binary("__sub", function(ar, ai, br, bi) return ar - br, ai - bi end)
binary("__mul", mul)
binary("__div", div)
binary("__pow", pow)

function Complex.__unm(z) return new(-z.re, -z.im) end

function Complex.__eq(a, b) return a.re == b.re and a.im == b.im end

-- Python's spelling: (1+2j), (-0.5-1j), 3j; the parts as Lua prints numbers (%.14g).
local function part(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  return ("%.14g"):format(x)
end

function Complex.__tostring(z)
  if z.re == 0 and 1 / z.re > 0 then return part(z.im) .. "j" end
  local im = part(z.im)
  if im:sub(1, 1) ~= "-" then im = "+" .. im end
  return ("(%s%sj)"):format(part(z.re), im)
end

function methods.abs(z) return math.sqrt(z.re * z.re + z.im * z.im) end
function methods.arg(z) return math.atan(z.im, z.re) end
function methods.conj(z) return new(z.re, -z.im) end

-- Lua 5.4's math has no hyperbolic functions.
local function cosh(x) return (math.exp(x) + math.exp(-x)) / 2 end
local function sinh(x)
  if math.abs(x) < 1e-5 then return x + x * x * x / 6 end   -- no cancellation near 0
  return (math.exp(x) - math.exp(-x)) / 2
end

-- The complex functions of gpu.cumath, for host references and Lua code: each takes a
-- Lua number or complex value and gives a complex value.
local functions = {
  exp = exp,
  log = log,
  log10 = function(re, im)
    local lr, li = log(re, im)
    return lr / math.log(10), li / math.log(10)
  end,
  sqrt = function(re, im)
    if re == 0 and im == 0 then return 0.0, im end
    local t = math.sqrt((math.abs(re) + math.sqrt(re * re + im * im)) / 2)
    if re >= 0 then return t, im / (2 * t) end
    return math.abs(im) / (2 * t), im < 0 and -t or t
  end,
  sin = function(re, im)
    return math.sin(re) * cosh(im), math.cos(re) * sinh(im)
  end,
  cos = function(re, im)
    return math.cos(re) * cosh(im), -math.sin(re) * sinh(im)
  end,
  sinh = function(re, im)
    return sinh(re) * math.cos(im), cosh(re) * math.sin(im)
  end,
  cosh = function(re, im)
    return cosh(re) * math.cos(im), sinh(re) * math.sin(im)
  end,
}
functions.tan = function(re, im)
  local sr, si = functions.sin(re, im)
  return div(sr, si, functions.cos(re, im))
end
functions.tanh = function(re, im)
  local sr, si = functions.sinh(re, im)
  return div(sr, si, functions.cosh(re, im))
end

M.functions = {}
for name, f in pairs(functions) do
  M.functions[name] = function(z)
    local re, im = parts(z)
    if re == nil then
      error(("bad argument #1 to '%s' (number or gpu.complex expected, got %s)")
            :format(name, describe(z)), 2)
    end
    return new(f(re, im))
  end
end

return M
