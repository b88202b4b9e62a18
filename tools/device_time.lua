-- tools/device_time.lua: the timing tools/sort_time.lua and tools/scan_time.lua share.
--
--   local device_ms = require "device_time"
--   device_ms(f, repeats[, batch]) -> ms
--
-- The median over `repeats` timings of the device time between events recorded around a call
-- of f, after one untimed call (which compiles f's kernels).  f returns the array it made,
-- freed after each timing.  With batch > 1 a timing covers that many calls back to back,
-- divided by batch: the host's own time a call then overlaps the device's work instead of
-- showing as idle device time between the events (a single call's figure includes it).
local gpu = require "gpu"

local start, stop = gpu.Event({timing = true}), gpu.Event({timing = true})

return function(f, repeats, batch)
  batch = batch or 1
  f():free()
  gpu.synchronize()
  local t, outs = {}, {}
  for i = 1, repeats do
    start:record()
    for j = 1, batch do outs[j] = f() end
    stop:record()
    stop:synchronize()
    t[i] = stop:time_since(start) / batch
    for j = 1, batch do outs[j]:free() end
  end
  table.sort(t)
  return t[(#t + 1) // 2]
end
