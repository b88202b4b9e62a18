-- gpu.format: NumPy-style text for arrays (host and device), e.g.
--   [[1.  2.5]
--    [3.  4. ]]
-- Arrays of more than 1000 elements are summarized with "..." after 3 edge items per axis.

local M = {}

local THRESHOLD, EDGE = 1000, 3

local function float_text(v)
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  local s = ("%.8g"):format(v)
  if not s:find("[.e]") then s = s .. "." end
  return s
end

local function value_text(v, kind)
  if kind == "f" then return float_text(v) end
  return tostring(v)
end

-- The indices (1-based) shown along an axis of length n.
local function shown(n, summarize)
  local list = {}
  if summarize and n > 2 * EDGE then
    for i = 1, EDGE do list[#list + 1] = i end
    list[#list + 1] = false -- the "..." marker
    for i = n - EDGE + 1, n do list[#list + 1] = i end
  else
    for i = 1, n do list[#list + 1] = i end
  end
  return list
end

-- array_string(shape, kind, fetch): kind is NumPy's ('f', 'i', 'u', 'b'); fetch(i) reads
-- flat element i (1-based, row-major).
function M.array_string(shape, kind, fetch)
  local ndim, size = #shape, 1
  for _, n in ipairs(shape) do size = size * n end
  if ndim == 0 then return value_text(fetch(1), kind) end
  local summarize = size > THRESHOLD
  local strides = {}
  local stride = 1
  for d = ndim, 1, -1 do strides[d] = stride; stride = stride * shape[d] end
  -- texts of every shown element, and the common width
  local texts, width = {}, 0
  local function collect(d, base)
    for _, i in ipairs(shown(shape[d], summarize)) do
      if i then
        local flat = base + (i - 1) * strides[d]
        if d == ndim then
          local t = value_text(fetch(flat + 1), kind)
          texts[flat] = t
          if #t > width then width = #t end
        else
          collect(d + 1, flat)
        end
      end
    end
  end
  collect(1, 0)
  -- floats line up on their decimal points, as NumPy prints them
  local left, right = 0, 0
  if kind == "f" then
    for _, t in pairs(texts) do
      local i, f = t:match("^([^.e]*)(%..*)$")
      if not i or t:find("e") then left = nil break end
      left, right = math.max(left, #i), math.max(right, #f)
    end
    if left then
      for k, t in pairs(texts) do
        local i, f = t:match("^([^.]*)(%..*)$")
        texts[k] = (" "):rep(left - #i) .. i .. f .. (" "):rep(right - #f)
      end
      width = left + right
    end
  end
  local function render(d, base, indent)
    local parts = {}
    for _, i in ipairs(shown(shape[d], summarize)) do
      if not i then parts[#parts + 1] = "..."
      elseif d == ndim then
        local t = texts[base + (i - 1) * strides[d]]
        parts[#parts + 1] = (" "):rep(width - #t) .. t
      else
        parts[#parts + 1] = render(d + 1, base + (i - 1) * strides[d], indent .. " ")
      end
    end
    if d == ndim then return "[" .. table.concat(parts, " ") .. "]" end
    local sep = "\n" .. ("\n"):rep(ndim - d - 1) .. indent .. " "
    return "[" .. table.concat(parts, sep) .. "]"
  end
  return render(1, 0, "")
end

return M
