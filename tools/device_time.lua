-- tools/device_time.lua: the timing tools/sort_time.lua and tools/scan_time.lua share.
--
--   local device_ms = require "device_time"
--   device_ms(f, repeats) -> ms
--
-- The median over `repeats` calls of f of the device time between events recorded around the
-- call, after one untimed call (which compiles f's kernels).  f returns the array it made,
-- freed after each call.
local gpu = require "gpu"

local start, stop = gpu.Event({timing = true}), gpu.Event({timing = true})

return function(f, repeats)
  f():free()
  gpu.synchronize()
  local t = {}
  for i = 1, repeats do
    start:record()
    local out = f()
    stop:record()
    stop:synchronize()
    t[i] = stop:time_since(start)
    out:free()
  end
  table.sort(t)
  return t[(#t + 1) // 2]
end
