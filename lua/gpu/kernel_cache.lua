-- gpu.kernel_cache: the library's generated kernels, compiled once per device.
--
--   local f = kernel_cache.get(key, build)
-- key names the kernel completely (operation, dtypes, layout class: "add|float32|float32|c");
-- build() is called only on a miss and returns source, kernel name and, optionally, the
-- prepare() letters and SourceModule options.  The Function is cached per device ordinal for
-- the life of the state, so each variant is compiled (and loaded) once per context.

local core = require "gpu.core"

local M = {}

local by_device = {}   -- ordinal -> key -> gpu.Function
M.compiles = 0         -- how many kernels were built (specs check that hits do not compile)

function M.get(key, build)
  local ordinal = core.device_ordinal()
  local cache = by_device[ordinal]
  if cache == nil then
    cache = {}
    by_device[ordinal] = cache
  end
  local f = cache[key]
  if f == nil then
    local gpu = require "gpu"
    local source, name, letters, options = build()
    local module = gpu.SourceModule(source, options)
    f = module:get_function(name)
    if letters then f:prepare(letters) end
    cache[key] = f
    M.compiles = M.compiles + 1
  end
  return f
end

return M
