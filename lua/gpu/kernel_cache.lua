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

-- level(t, part) -> the table under t[part], made on first use: a level of a memo table
-- (the library keeps its cache keys and plans in such tables, one level a part of the key,
-- rather than build a key string per call).
function M.level(t, part)
  local next_level = t[part]
  if next_level == nil then
    next_level = {}
    t[part] = next_level
  end
  return next_level
end
local level = M.level

function M.get(key, build)
  local cache = level(by_device, core.device_ordinal())
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
