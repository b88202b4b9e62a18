-- gpu.args: the argument errors of the Lua layer, worded as luaL_argerror words them, so a
-- mistake reads the same whether C or Lua caught it.

local M = {}

-- The library's own directory as the debug library names sources ("@.../gpu/").
local getinfo = debug and debug.getinfo
local LIBRARY = getinfo and getinfo(1, "S").source:match("^(@.*[/\\])args%.lua$")

-- The level error() is to blame for level (as error counts it from its caller's caller): that
-- frame, or the first above it that is neither a C function nor the library's Lua code, so a
-- mistake names the user's line even where the library's C path called back into Lua.
local function blamed_level(level)
  if getinfo == nil or LIBRARY == nil then return level end
  local k = level + 1                                   -- + 1: blamed_level's own frame
  local info = getinfo(k, "S")
  while info ~= nil and (info.what == "C" or info.source:sub(1, #LIBRARY) == LIBRARY) do
    k = k + 1
    info = getinfo(k, "S")
  end
  return info ~= nil and k - 1 or level
end

-- argerror(n, fname, msg[, level]): raises "bad argument #n to 'fname' (msg)".  level counts
-- from the function that calls argerror: 1 (the default) blames that function's caller (or,
-- where that is the library itself, the first caller outside it).
function M.argerror(n, fname, msg, level)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), blamed_level((level or 1) + 2))
end

-- raise(msg[, level]): error(msg), blaming a line as argerror does.
function M.raise(msg, level)
  error(msg, blamed_level((level or 1) + 2))
end

-- gpu.int32(x) and the other typed scalars (gpu.Scalar): whether v is one.
local scalar_mt = require("gpu.core").types.Scalar
local stream_mt = require("gpu.core").types.Stream
function M.is_scalar(v)
  return getmetatable(v) == scalar_mt
end

-- unsigned_number(v): the number a uint64 element or typed scalar read as the Lua integer v
-- stands for: v, or from 2^63 on (where v, its bits, is negative) the float v + 2^64.
function M.unsigned_number(v)
  if v < 0 then return v + 2.0 ^ 64 end
  return v
end

-- scalar_number(s): the number the typed scalar s stands for, as arithmetic reads it (a
-- uint64 of 2^63 or more as a float; its s.value is its bits).
function M.scalar_number(s)
  if s.dtype == "uint64" then return M.unsigned_number(s.value) end
  return s.value
end

-- A value's type for messages: its metatable's __name (gpu.GPUArray, ...) or its Lua type.
function M.typename(v)
  local mt = getmetatable(v)
  if type(mt) == "table" and type(mt.__name) == "string" then return mt.__name end
  return type(v)
end

-- A value for messages about option strings: a string in quotes, else its type.
function M.quoted(v)
  return type(v) == "string" and "'" .. v .. "'" or M.typename(v)
end

-- check_options(opts, n, fname, known[, level]) -> opts, or {} for nil: argument n must be a
-- table whose keys are all in the set known (a misspelt key is an error, not ignored), and a
-- stream option a gpu.Stream (caught here, it names the user's argument, not a launch's).
-- level as for argerror: 1 blames the caller of the function that calls check_options.
function M.check_options(opts, n, fname, known, level)
  level = (level or 1) + 1
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    M.argerror(n, fname, "options table expected, got " .. M.typename(opts), level)
  end
  for key in pairs(opts) do
    if not known[key] then
      M.argerror(n, fname, ("unknown option '%s'"):format(tostring(key)), level)
    end
  end
  if opts.stream ~= nil and getmetatable(opts.stream) ~= stream_mt then
    M.argerror(n, fname, "option 'stream' must be a gpu.Stream, got " .. M.typename(opts.stream), level)
  end
  return opts
end

-- typed_option(opts, name, lua_type, n, fname[, default[, level]]) -> opts[name], or default
-- where it is nil: option name of argument n must be a value of lua_type ("boolean",
-- "number", ...); level as for check_options.
function M.typed_option(opts, name, lua_type, n, fname, default, level)
  local v = opts[name]
  if v == nil then return default end
  if type(v) ~= lua_type then
    M.argerror(n, fname, ("option '%s' must be a %s, got %s"):format(name, lua_type, M.typename(v)),
               (level or 1) + 1)
  end
  return v
end

-- check_stream(stream, n, fname[, level]): argument n must be a gpu.Stream or nil.
function M.check_stream(stream, n, fname, level)
  if stream ~= nil and getmetatable(stream) ~= stream_mt then
    M.argerror(n, fname, "gpu.Stream expected, got " .. M.typename(stream), (level or 1) + 1)
  end
end

-- check_shape(shape, n, fname[, level]) -> argument n as a new table of whole lengths: a
-- number or a table of them, none negative, and no more elements than the C core allows
-- (gpu_checkshape's cap: 2^58, the lengths beside a 0 counted too).  level as for check_options.
function M.check_shape(shape, n, fname, level)
  level = (level or 1) + 1
  local t = type(shape) == "number" and {shape} or shape
  if type(t) ~= "table" then
    M.argerror(n, fname, "shape must be a number or a table of whole numbers, got " .. type(shape), level)
  end
  local out, elements = {}, 1
  for i, d in ipairs(t) do
    local v = math.tointeger(d)
    if v == nil then
      M.argerror(n, fname, "shape must be a number or a table of whole numbers, got " .. tostring(d), level)
    end
    if v < 0 then M.argerror(n, fname, ("negative dimension %d in shape"):format(v), level) end
    if v > 0 then
      if elements > (1 << 58) // v then M.argerror(n, fname, "shape is too large", level) end
      elements = elements * v
    end
    out[i] = v
  end
  return out
end

-- check_axis(axis, ndim, n, fname[, level]) -> the 1-based axis of an ndim-d array that the
-- option value axis names (negatives count from the end); level as for check_options.
function M.check_axis(axis, ndim, n, fname, level)
  level = (level or 1) + 1
  if math.type(axis) ~= "integer" then
    M.argerror(n, fname, "option 'axis' must be an integer, got " .. (math.type(axis) or M.typename(axis)),
               level)
  end
  local i = axis < 0 and ndim + 1 + axis or axis
  if i < 1 or i > ndim then
    M.argerror(n, fname, ("axis %d is out of range for a %d-d array"):format(axis, ndim), level)
  end
  return i
end

return M
