-- gpu.cumath: elementwise math functions on GPUArrays, PyCUDA's pycuda.cumath.
--   gpu.cumath.sqrt(a[, {out = o, stream = s}]), ..., gpu.cumath.fmod(a, b[, opts])
-- float32 arrays compute in float32 (sqrtf, ...), float64 in float64; integer and bool arrays
-- are converted first (1- and 2-byte ones to float32, wider ones to float64).  fmod keeps
-- integer dtypes (C's remainder, 0 for a zero divisor).

local gpuarray = require "gpu.gpuarray"
local operators = require "gpu.operators"
local fuse = require "gpu.fuse"

local M = {}

local OUT_STREAM = {out = true, stream = true}

local function check_options(opts, n, fname)
  if opts == nil then return {} end
  if type(opts) ~= "table" or gpuarray.is_array(opts) then
    error(("bad argument #%d to '%s' (options table expected, got %s)"):format(n, fname, type(opts)), 3)
  end
  for k in pairs(opts) do
    if not OUT_STREAM[k] then
      error(("bad argument #%d to '%s' (unknown option '%s')"):format(n, fname, tostring(k)), 3)
    end
  end
  return opts
end

for name in pairs(operators.cumath_unary) do
  M[name] = function(a, opts)
    if fuse.is_traced(a) then return fuse.apply(name, a) end
    return gpuarray._apply(name, name, {a}, check_options(opts, 2, name))
  end
end

function M.fmod(a, b, opts)
  if fuse.is_traced(a) or fuse.is_traced(b) then return fuse.apply("fmod", a, b) end
  return gpuarray._apply("fmod", "fmod", {a, b}, check_options(opts, 3, "fmod"))
end

return M
