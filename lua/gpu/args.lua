-- gpu.args: the argument errors of the Lua layer, worded as luaL_argerror words them, so a
-- mistake reads the same whether C or Lua caught it.

local M = {}

-- argerror(n, fname, msg[, level]): raises "bad argument #n to 'fname' (msg)".  level counts
-- from the function that calls argerror: 1 (the default) blames that function's caller.
function M.argerror(n, fname, msg, level)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), (level or 1) + 2)
end

-- A value's type for messages: its metatable's __name (gpu.GPUArray, ...) or its Lua type.
function M.typename(v)
  local mt = getmetatable(v)
  if type(mt) == "table" and type(mt.__name) == "string" then return mt.__name end
  return type(v)
end

return M
