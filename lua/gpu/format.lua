-- gpu.format: NumPy-style text for arrays (host and device), e.g.
--   [[1.  2.5]
--    [3.  4. ]]
-- Floats use NumPy's defaults: up to 8 decimals, aligned on the point, scientific notation
-- when the magnitudes call for it; lines wrap at 75 columns; arrays of more than 1000
-- elements are summarized with "..." after 3 edge items per axis.

local M = {}

local THRESHOLD, EDGE, LINEWIDTH, PRECISION = 1000, 3, 75, 8

local function special(v)
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
end

-- "%.8f" or "%.8e" without trailing zeros, keeping the point: 2.50000000 -> 2.5, 3.0 -> 3.
local function trim(s)
  local mantissa, exponent = s:match("^([^e]*)(e.*)$")
  mantissa = (mantissa or s):gsub("0+$", "")
  return mantissa .. (exponent or "")
end

-- x rounded to the nearest float of `bits` significant bits whose exponent is at least emin
-- (subnormals below it), ties to even.
local function narrow(x, bits, emin)
  if x == 0 or special(x) then return x end
  local e = math.floor(math.log(math.abs(x), 2))
  while 2.0 ^ e > math.abs(x) do e = e - 1 end
  while 2.0 ^ (e + 1) <= math.abs(x) do e = e + 1 end
  if e < emin then e = emin end
  local scale = 2.0 ^ (e - bits + 1)
  local q = x / scale
  local r = q - q % 1.0
  if q - r > 0.5 or (q - r == 0.5 and r % 2 == 1) then r = r + 1 end
  return r * scale
end

local narrow_to = {
  float32 = function(x) return (string.unpack("f", string.pack("f", x))) end,
  float16 = function(x) return narrow(x, 11, -14) end,
  bfloat16 = function(x) return narrow(x, 8, -126) end,
}

-- The shortest decimal that reads back as the same value of dtype (NumPy prints float32
-- 1.1 as 1.1, not as the double it widens to, 1.10000002384...).
local function shortest(v, dtype)
  local to = narrow_to[dtype]
  if to == nil or v == 0 or special(v) then return v end
  for digits = 1, 17 do
    local d = tonumber(("%." .. digits .. "g"):format(v))
    if to(d) == v then return d end
  end
  return v
end

-- A 0-d array's float as NumPy prints it (the scalar's repr): the shortest digits, positional
-- for exponents -4 to 15 with at least one decimal (3.0), else scientific (1e-05, 1.5e+20).
local function scalar_text(v, dtype)
  local name = special(v)
  if name then return name end
  local to = narrow_to[dtype] or function(x) return x end
  local digits = 17
  for n = 1, 17 do
    if to(tonumber(("%." .. (n - 1) .. "e"):format(v))) == v then digits = n break end
  end
  local sci = ("%." .. (digits - 1) .. "e"):format(v)
  local exponent = tonumber(sci:match("e(.*)$"))
  if exponent < -4 or exponent >= 16 then
    return (sci:gsub("%.?0*e", "e", 1))
  end
  local t = ("%." .. math.max(digits - 1 - exponent, 0) .. "f"):format(v)
  return t:find(".", 1, true) and t or t .. ".0"
end

-- Texts for a list of floats, padded to line up as NumPy does: in scientific notation every
-- value gets the same number of digits, and of exponent digits (1.5e+100 -2.0e-005); nan and
-- inf are right-aligned to the width of the finite values.  NumPy's rule for scientific
-- notation: the largest magnitude is 1e8 or more, the smallest below 1e-4, or the largest
-- over 1000 times the smallest (zeros, nan and inf aside).
local function float_texts(values, dtype)
  local max, min
  for i, v in ipairs(values) do
    v = shortest(v, dtype)
    values[i] = v
    local a = math.abs(v)
    if not special(v) and a ~= 0 then
      if max == nil or a > max then max = a end
      if min == nil or a < min then min = a end
    end
  end
  local scientific = max ~= nil and (max >= 1e8 or min < 1e-4 or max / min > 1e3)
  local digits, exponent_digits = 0, 0
  if scientific then
    for _, v in ipairs(values) do
      if not special(v) then
        local frac, exponent = trim(("%." .. PRECISION .. "e"):format(v)):match("%.(%d*)e[+-](%d+)")
        digits, exponent_digits = math.max(digits, #frac), math.max(exponent_digits, #exponent)
      end
    end
  end
  local texts, left, right = {}, 0, 0
  for i, v in ipairs(values) do
    if not special(v) then
      local t
      if scientific then
        t = ("%." .. digits .. "e"):format(v):gsub("e([+-])(%d+)$", function(sign, exponent)
          return "e" .. sign .. ("0"):rep(exponent_digits - #exponent) .. exponent
        end)
        if digits == 0 then t = t:gsub("e", ".e", 1) end
      else
        t = trim(("%." .. PRECISION .. "f"):format(v))
      end
      local int, frac = t:match("^([^.]*)(%..*)$")
      int, frac = int or t, frac or ""
      texts[i] = {int, frac}
      left, right = math.max(left, #int), math.max(right, #frac)
    end
  end
  for i, v in ipairs(values) do
    local t = texts[i]
    if t then
      texts[i] = (" "):rep(left - #t[1]) .. t[1] .. t[2] .. (" "):rep(right - #t[2])
    else
      local name = special(v)
      texts[i] = (" "):rep(left + right - #name) .. name
    end
  end
  return texts
end

-- Texts for a list of complex values as NumPy lines them up: the real parts as one float
-- column, the imaginary parts as another with their signs, then j ([1. +2.j 0.5-1.j]).
local real_dtype = {complex64 = "float32", complex128 = "float64"}
local function complex_texts(values, dtype)
  local re, im = {}, {}
  for i, z in ipairs(values) do re[i], im[i] = z.re, z.im end
  re, im = float_texts(re, real_dtype[dtype]), float_texts(im, real_dtype[dtype])
  -- the imaginary column with a sign on every value (NumPy's sign='+'): a non-negative value
  -- as wide as the column widens it by one; then the j, before the right padding
  local grow = false
  for _, t in ipairs(im) do
    if t:sub(1, 1) ~= " " and t:sub(1, 1) ~= "-" then grow = true end
  end
  for i, t in ipairs(im) do
    if grow then t = " " .. t end
    local lead, number, right = t:match("^( *)(.-)( *)$")
    if number:sub(1, 1) ~= "-" then lead, number = lead:sub(2), "+" .. number end
    re[i] = re[i] .. lead .. number .. "j" .. right
  end
  return re
end

-- The indices (1-based) shown along an axis of length n; false marks the "...".
local function shown(n, summarize)
  local list = {}
  if summarize and n > 2 * EDGE then
    for i = 1, EDGE do list[#list + 1] = i end
    list[#list + 1] = false
    for i = n - EDGE + 1, n do list[#list + 1] = i end
  else
    for i = 1, n do list[#list + 1] = i end
  end
  return list
end

-- unsigned_text(v): the digits of a uint64 element.  Those of 2^63 and more read as negative
-- Lua integers (their bits); printed, they are the unsigned number, as NumPy prints them.
function M.unsigned_text(v)
  if v >= 0 then return ("%d"):format(v) end
  local tens = (v >> 1) // 5                    -- v // 10, unsigned: >> shifts in zeros
  return ("%d%d"):format(tens, v - tens * 10)
end

-- A non-float element's text; booleans are NumPy's True and False.
local function plain_text(v, kind)
  if kind == "b" then return v and "True" or "False" end
  if kind == "u" and math.type(v) == "integer" then return M.unsigned_text(v) end
  return tostring(v)
end

-- array_string(shape, kind, fetch[, dtype]): kind is NumPy's ('f', 'i', 'u', 'b', 'c');
-- fetch(i) reads flat element i (1-based, row-major); dtype (a float's or a complex's) sets
-- the digits printed.
function M.array_string(shape, kind, fetch, dtype)
  local ndim, size = #shape, 1
  for _, n in ipairs(shape) do size = size * n end
  if ndim == 0 then
    local v = fetch(1)
    if kind == "c" then return tostring(v) end
    return kind == "f" and scalar_text(v, dtype) or plain_text(v, kind)
  end
  if size == 0 then return "[]" end          -- NumPy prints every empty array so: (2, 0) too
  local summarize = size > THRESHOLD
  local strides, stride = {}, 1
  for d = ndim, 1, -1 do strides[d] = stride; stride = stride * shape[d] end
  -- every shown element, formatted together so that they share one width
  local flats, values = {}, {}
  local function collect(d, base)
    for _, i in ipairs(shown(shape[d], summarize)) do
      if i then
        local flat = base + (i - 1) * strides[d]
        if d == ndim then
          flats[#flats + 1] = flat
          values[#values + 1] = fetch(flat + 1)
        else
          collect(d + 1, flat)
        end
      end
    end
  end
  collect(1, 0)
  local list = kind == "f" and float_texts(values, dtype)
               or kind == "c" and complex_texts(values, dtype) or {}
  local texts, width = {}, kind == "b" and 5 or 0     -- NumPy pads True to False's width
  for k, flat in ipairs(flats) do
    local t = list[k] or plain_text(values[k], kind)
    texts[flat] = t
    if #t > width then width = #t end
  end
  local function render(d, base, indent)
    if shape[d] == 0 then return "[]" end
    local parts = {}
    if d == ndim then
      -- one row, wrapped like NumPy's: continuation lines start under the first element
      local line, lines = "[", {}
      for _, i in ipairs(shown(shape[d], summarize)) do
        local t = i and texts[base + (i - 1) * strides[d]]
        t = t and (" "):rep(width - #t) .. t or "..."
        local piece = (line == "[" and "" or " ") .. t
        if #indent + #line + #piece + 1 > LINEWIDTH and line ~= "[" then
          lines[#lines + 1] = line
          line = " " .. t
        else
          line = line .. piece
        end
      end
      lines[#lines + 1] = line .. "]"
      return table.concat(lines, "\n" .. indent)
    end
    for _, i in ipairs(shown(shape[d], summarize)) do
      parts[#parts + 1] = i and render(d + 1, base + (i - 1) * strides[d], indent .. " ") or "..."
    end
    local sep = "\n" .. ("\n"):rep(ndim - d - 1) .. indent .. " "
    return "[" .. table.concat(parts, sep) .. "]"
  end
  return render(1, 0, "")
end

return M
