-- gpu.host: typed host arrays (the C type gpu.HostArray) with NumPy-style printing.

local core = require "gpu.core"
local format = require "gpu.format"

local host = core.host
local HostArray = core.types.HostArray

function HostArray.__tostring(h)
  local ok, dtype = pcall(function() return h.dtype end)
  if not ok or not pcall(function() return #h end) then return "gpu.HostArray(freed)" end
  return format.array_string(h.shape, core.dtype(dtype).kind, function(i) return h[i] end,
                            dtype)
end

return host
