-- gpu.promote: NumPy's type promotion (with NEP 50's weak scalars) and broadcasting.
--
-- dtypes are the names of gpu.dtype.  Lua numbers are "weak" scalars: "weak-int" for a Lua
-- integer, "weak-float" for a Lua float, "weak-complex" for a gpu.complex.  A weak scalar
-- takes the dtype of the array it meets when their kinds allow (int with int, int or float
-- with float, any number with complex); otherwise it becomes the default dtype of its kind
-- (int64, float64, complex128), except that a complex one beside floats becomes the complex
-- type of their precision (complex64 beside float32), as NumPy 2 does.

local M = {}

local info = {   -- kind, itemsize, rank among floats
  bool = {kind = "b", size = 1},
  int8 = {kind = "i", size = 1}, int16 = {kind = "i", size = 2},
  int32 = {kind = "i", size = 4}, int64 = {kind = "i", size = 8},
  uint8 = {kind = "u", size = 1}, uint16 = {kind = "u", size = 2},
  uint32 = {kind = "u", size = 4}, uint64 = {kind = "u", size = 8},
  float16 = {kind = "f", size = 2}, bfloat16 = {kind = "f", size = 2},
  float32 = {kind = "f", size = 4}, float64 = {kind = "f", size = 8},
  complex64 = {kind = "c", size = 8}, complex128 = {kind = "c", size = 16},
}
M.info = info

M.WEAK_INT, M.WEAK_FLOAT, M.WEAK_COMPLEX = "weak-int", "weak-float", "weak-complex"

function M.is_weak(t) return t == "weak-int" or t == "weak-float" or t == "weak-complex" end

-- The kind of a dtype or weak scalar: "b", "i", "u", "f", "c".
function M.kind(t)
  if t == "weak-int" then return "i" end
  if t == "weak-float" then return "f" end
  if t == "weak-complex" then return "c" end
  local d = info[t]
  return d and d.kind
end

local signed_of_size = {[1] = "int8", [2] = "int16", [4] = "int32", [8] = "int64"}
local unsigned_of_size = {[1] = "uint8", [2] = "uint16", [4] = "uint32", [8] = "uint64"}
local float_of_size = {[2] = "float16", [4] = "float32", [8] = "float64"}

-- The smallest float that holds every value of an integer of this size (NumPy's rule).
local float_for_int = {[1] = "float16", [2] = "float32", [4] = "float64", [8] = "float64"}

-- The bytes of the float that holds every value of dtype t (a complex's part).
function M.real_size(t)
  local d = info[t]
  if d.kind == "c" then return d.size // 2 end
  if d.kind == "f" then return d.size end
  if d.kind == "b" then return 1 end
  return info[float_for_int[d.size]].size
end

-- promote_types(a, b) for two (strong) dtypes, NumPy's table.
function M.promote_types(a, b)
  if a == b then return a end
  local x, y = info[a], info[b]
  if x == nil then error(("unknown dtype '%s'"):format(tostring(a)), 2) end
  if y == nil then error(("unknown dtype '%s'"):format(tostring(b)), 2) end
  if x.kind == "b" then return b end
  if y.kind == "b" then return a end
  if x.kind == "c" or y.kind == "c" then      -- the complex type as precise as both
    return math.max(M.real_size(a), M.real_size(b)) <= 4 and "complex64" or "complex128"
  end
  if x.kind == "f" or y.kind == "f" then
    if x.kind == "f" and y.kind == "f" then
      if x.size == y.size then return "float32" end   -- float16 with bfloat16
      return x.size > y.size and a or b
    end
    local f, i = x.kind == "f" and x or y, x.kind == "f" and y or x
    local fsize = math.max(f.size, info[float_for_int[i.size]].size)
    -- a float as wide as the int needs stays itself: bfloat16 holds every int8 and uint8
    -- value, and becoming float16 would lose its range
    if fsize == f.size then return f == x and a or b end
    return float_of_size[fsize]
  end
  if x.kind == y.kind then
    return x.size >= y.size and a or b
  end
  local s, u = x.kind == "i" and x or y, x.kind == "i" and y or x
  if s.size > u.size then return signed_of_size[s.size] end
  if u.size < 8 then return signed_of_size[u.size * 2] end
  return "float64"                                   -- int64 with uint64
end

-- The dtype a weak scalar becomes next to dtype other (NEP 50).
function M.weak_dtype(weak, other)
  local k = M.kind(other)
  if k == "c" then return other end
  if weak == "weak-complex" then
    return k == "f" and M.real_size(other) <= 4 and "complex64" or "complex128"
  end
  if weak == "weak-int" then
    if k == "i" or k == "u" or k == "f" then return other end
    return "int64"
  end
  if k == "f" then return other end
  return "float64"
end

-- result_type(a, b): a and b are dtypes or weak scalars.  Two weak scalars give a weak one.
function M.result_type(a, b)
  local wa, wb = M.is_weak(a), M.is_weak(b)
  if wa and wb then
    if a == "weak-complex" or b == "weak-complex" then return "weak-complex" end
    return (a == "weak-float" or b == "weak-float") and "weak-float" or "weak-int"
  end
  if wa then return M.weak_dtype(a, b) end
  if wb then return M.weak_dtype(b, a) end
  return M.promote_types(a, b)
end

-- result_type over a list.
function M.result_type_of(list)
  local t = list[1]
  for i = 2, #list do t = M.result_type(t, list[i]) end
  return t
end

-- The Lua value range of each integer dtype (uint64 beyond 2^63 is not a Lua integer).
local limits = {
  int8 = {-128, 127}, uint8 = {0, 255}, int16 = {-32768, 32767}, uint16 = {0, 65535},
  int32 = {-2147483648, 2147483647}, uint32 = {0, 4294967295},
  int64 = {math.mininteger, math.maxinteger}, uint64 = {0, math.maxinteger},
}
M.limits = limits

local is_complex = require("gpu.complex").is_complex
local typename = require("gpu.args").typename

-- Checks that Lua value v can become a scalar of dtype; returns nil or the reason.
function M.scalar_problem(v, dtype, as_bits)
  local k = M.kind(dtype)
  if k == "b" then
    if type(v) == "boolean" or type(v) == "number" then return nil end
    return "expected a boolean or a number, got " .. typename(v)
  end
  if k == "c" then
    if type(v) == "number" or is_complex(v) then return nil end
    return "expected a number or a gpu.complex, got " .. typename(v)
  end
  if type(v) ~= "number" then return "expected a number, got " .. typename(v) end
  if k == "f" then return nil end
  local iv = math.tointeger(v)
  if iv == nil then
    if v ~= v or v == math.huge or v == -math.huge or v ~= math.floor(v) then
      return ("%s is not an integer (for %s)"):format(tostring(v), dtype)
    end
    return ("%s is out of range for %s"):format(tostring(v), dtype)
  end
  local lim = limits[dtype]
  -- a store takes a uint64 beyond 2^63 as the negative Lua integer of its 64 bits, which is
  -- how such elements read back
  if as_bits and dtype == "uint64" and math.type(v) == "integer" then return nil end
  if iv < lim[1] or iv > lim[2] then
    return ("%s is out of range for %s"):format(tostring(v), dtype)
  end
  return nil
end

-- Broadcasting --------------------------------------------------------------------------

local function shape_text(shape)
  local parts = {}
  for i, n in ipairs(shape) do parts[i] = tostring(n) end
  return "(" .. table.concat(parts, ",") .. (#shape == 1 and ",)" or ")")
end
M.shape_text = shape_text

-- broadcast_shapes(list of shapes) -> shape, or nil and NumPy's message.
function M.broadcast_shapes(shapes)
  local ndim = 0
  for _, s in ipairs(shapes) do if #s > ndim then ndim = #s end end
  local out = {}
  for d = 1, ndim do
    local n = 1
    for _, s in ipairs(shapes) do
      local m = s[#s - ndim + d]
      if m ~= nil and m ~= 1 then
        if n ~= 1 and n ~= m then
          local texts = {}
          for i, sh in ipairs(shapes) do texts[i] = shape_text(sh) end
          return nil, "operands could not be broadcast together with shapes " ..
                      table.concat(texts, " ")
        end
        n = m
      end
    end
    out[d] = n
  end
  return out
end

-- The byte strides with which an array of shape/strides reads as broadcast to out_shape
-- (0 along broadcast axes); nil if it cannot.
function M.broadcast_strides(shape, strides, out_shape)
  local nd, off = #out_shape, #out_shape - #shape
  if off < 0 then return nil end
  local result = {}
  for d = 1, nd do
    local m = shape[d - off]
    if m == nil then result[d] = 0
    elseif m == out_shape[d] then result[d] = m == 1 and 0 or strides[d - off]
    elseif m == 1 then result[d] = 0
    else return nil end
  end
  return result
end

function M.same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

return M
