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

local check_options = require("gpu.args").check_options

for name in pairs(operators.cumath_unary) do
  M[name] = function(a, opts)
    if fuse.is_traced(a) then return fuse.apply(name, a) end
    return gpuarray._apply(name, name, {a}, check_options(opts, 2, name, OUT_STREAM))
  end
end

function M.fmod(a, b, opts)
  if fuse.is_traced(a) or fuse.is_traced(b) then return fuse.apply("fmod", a, b) end
  return gpuarray._apply("fmod", "fmod", {a, b}, check_options(opts, 3, "fmod", OUT_STREAM))
end

return M
