-- gpu.softmax: SciPy's logsumexp and softmax (scipy.special; CuPy's cupyx.scipy.special) and
-- Torch's log_softmax, from the reductions and elementwise operations.
--   gpuarray.logsumexp(a[, {axis = k, stream = s}]) -> log(sum(exp(a))) along axis (0-d without)
--   gpuarray.softmax(a[, opts]) -> exp(a) / sum(exp(a)) along axis, in a's shape
--   gpuarray.log_softmax(a[, opts]) -> a - logsumexp(a) along axis, in a's shape
-- Without axis over the whole array, as SciPy's.  Each line is shifted by its greatest
-- element first (0 where that is not finite), so that exp overflows for no term and
-- underflows not for all; a NaN gives NaN.  Float arrays keep their dtype, integers and bools
-- become float64; complex arrays are refused.

local core = require "gpu.core"
local args = require "gpu.args"
local reduction = require "gpu.reduction"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local OPTIONS = {axis = true, stream = true}

local ga, cumath   -- gpu.gpuarray and gpu.cumath, set by install

-- The parts every form uses, of a along axis (nil: all of a): x (a as a float array), x less
-- each line's shift (its finite greatest element), the shift, the sum of exp of that, and
-- the view that broadcasts a line's value over the line; free() frees what is not returned.
local function shifted(fname, a, opts)
  check_array(a, 1, fname)
  opts = check_options(opts, 2, fname, OPTIONS)
  local kind = core.dtype(a.dtype).kind
  if kind == "c" then argerror(1, fname, ("%s is not defined for complex arrays"):format(fname)) end
  local axis = opts.axis ~= nil and args.check_axis(opts.axis, a.ndim, 2, fname) or nil
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local temporaries = {}
  local function keep(x) temporaries[#temporaries + 1] = x; return x end
  local x = a
  if kind ~= "f" then x = keep(a:astype("float64", on_stream)) end
  local line_shape = x.shape          -- a line's value broadcast along the axis
  if axis then line_shape[axis] = 1 end
  local function over_line(v) return axis and v:reshape(line_shape) or v end
  local greatest = keep(ga.max(x, {axis = axis, stream = stream}))
  local shift = keep(ga.where(keep(ga.isfinite(greatest, on_stream)), greatest, 0, on_stream))
  local centred = ga.sub(x, over_line(shift), on_stream)
  local total = keep(ga.sum(keep(cumath.exp(centred, on_stream)), {axis = axis, stream = stream}))
  local parts = {x = x, centred = centred, shift = shift, total = total, over_line = over_line,
                 stream = stream, on_stream = on_stream}
  function parts.free()
    for _, t in ipairs(temporaries) do core.free_after(t, stream) end
    core.free_after(centred, stream)
  end
  return parts
end

-- A zero-size array has no greatest element: logsumexp gives -inf (SciPy's), the others an
-- empty array of a's shape.
local function empty_result(fname, a, opts)
  check_array(a, 1, fname)
  opts = check_options(opts, 2, fname, OPTIONS)
  local dtype = core.dtype(a.dtype).kind == "f" and a.dtype or "float64"
  if fname ~= "logsumexp" then return core.array_empty(a.shape, dtype) end
  local shape = {}
  if opts.axis ~= nil then
    shape = a.shape
    table.remove(shape, args.check_axis(opts.axis, a.ndim, 2, fname))
  end
  local result = core.array_empty(shape, dtype)
  if result.size > 0 then result:fill(-math.huge) end
  return result
end

-- The function fname: zero-size arrays to empty_result, else finish(parts) on shifted's
-- parts, which are freed after it.
local function line_function(fname, finish)
  return function(a, opts)
    if getmetatable(a) == core.types.GPUArray and not a.freed and a.size == 0 then
      return empty_result(fname, a, opts)
    end
    local p = shifted(fname, a, opts)
    local result = finish(p)
    p.free()
    return result
  end
end

M.logsumexp = line_function("logsumexp", function(p)
  local log_total = cumath.log(p.total, p.on_stream)
  local result = ga.add(log_total, p.shift, p.on_stream)
  core.free_after(log_total, p.stream)
  return result
end)

M.softmax = line_function("softmax", function(p)
  local exp = cumath.exp(p.centred, p.on_stream)
  local result = ga.truediv(exp, p.over_line(p.total), p.on_stream)
  core.free_after(exp, p.stream)
  return result
end)

M.log_softmax = line_function("log_softmax", function(p)
  local log_total = cumath.log(p.total, p.on_stream)
  local result = ga.sub(p.centred, p.over_line(log_total), p.on_stream)
  core.free_after(log_total, p.stream)
  return result
end)

function M.install(gpu)
  ga, cumath = gpu.gpuarray, gpu.cumath
  ga.logsumexp, ga.softmax, ga.log_softmax = M.logsumexp, M.softmax, M.log_softmax
end

return M
