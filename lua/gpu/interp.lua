-- gpu.interp: NumPy's interp, piecewise-linear interpolation of the points (xp, fp) at x:
--   gpuarray.interp(x, xp, fp[, {left =, right =, stream =}]) -> float64 array of x's shape
-- xp (increasing, as NumPy assumes and does not check) and fp are 1-d arrays of one length;
-- left and right are the values below xp's first and above its last point (fp's first and
-- last unless given).  Each x finds its interval with searchsorted, the two points come
-- with take, and one elementwise kernel does NumPy's arithmetic, its special cases included
-- (x on a point, a NaN slope tried from the other end), each operation rounded on its own.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local reduction = require "gpu.reduction"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local OPTIONS = {left = true, right = true, stream = true}

local ga   -- gpu.gpuarray, set by install

-- NumPy's compiled_base.c arr_interp for one x, given the points around it (xl <= x < xu),
-- the ends and the values outside them.
local PREAMBLE = [[
__device__ double lg_interp(double x, double xl, double xu, double fl, double fu, double first,
                            double last, double last_f, double left, double right) {
  if (x != x) return x;
  if (x > last) return right;
  if (x < first) return left;
  if (x == last) return last_f;
  if (x == xl) return fl;
  const double slope = __ddiv_rn(__dsub_rn(fu, fl), __dsub_rn(xu, xl));
  double y = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xl)), fl);
  if (y != y) {
    y = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xu)), fu);
    if (y != y && fl == fu) y = fl;
  }
  return y;
}]]

local program
local function interp_program()
  program = program or ew.program{
    expr = "lg_interp(x, xl, xu, fl, fu, first, last, last_f, left, right)", out = "float64",
    name = "interp", preamble = PREAMBLE,
    operands = {{name = "x", dtype = "float64"}, {name = "xl", dtype = "float64"},
                {name = "xu", dtype = "float64"}, {name = "fl", dtype = "float64"},
                {name = "fu", dtype = "float64"}, {name = "first", dtype = "float64"},
                {name = "last", dtype = "float64"}, {name = "last_f", dtype = "float64"},
                {name = "left", dtype = "float64"}, {name = "right", dtype = "float64"}},
  }
  return program
end

-- option `name` of interp: nil, or a real number
local function bound(opts, name)
  local v = opts[name]
  if v ~= nil and type(v) ~= "number" then
    argerror(4, "interp", ("option '%s' must be a number, got %s"):format(name, args.typename(v)))
  end
  return v
end

function M.interp(x, xp, fp, opts)
  check_array(x, 1, "interp")
  check_array(xp, 2, "interp")
  check_array(fp, 3, "interp")
  opts = check_options(opts, 4, "interp", OPTIONS)
  for k, a in ipairs{x, xp, fp} do
    if core.dtype(a.dtype).kind == "c" then
      argerror(k, "interp", ("complex values are not supported, got %s"):format(a.dtype))
    end
  end
  if xp.ndim ~= 1 or fp.ndim ~= 1 or xp.size ~= fp.size or xp.size == 0 then
    argerror(3, "interp", ("xp and fp must be 1-d arrays of one length, not empty; got shapes %s and %s")
                          :format(require("gpu.promote").shape_text(xp.shape),
                                  require("gpu.promote").shape_text(fp.shape)))
  end
  local left, right = bound(opts, "left"), bound(opts, "right")
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local n = xp.size
  local temporaries = {}
  local function as_float64(a, contiguous)   -- a new array (astype's) unless a will do
    if a.dtype == "float64" and (a.is_contiguous or not contiguous) then return a end
    local wide = a:astype("float64", on_stream)
    temporaries[#temporaries + 1] = wide
    return wide
  end
  -- the points contiguous, so that their ends are views at known offsets
  local xs, points, values = as_float64(x, false), as_float64(xp, true), as_float64(fp, true)
  -- the ends, as 0-d views that every x reads (no read back to the host); left and right as
  -- 0-d arrays when given
  local function element(a, place) return core.array_view(a, 8 * (place - 1), "float64", {}) end
  local function given(v)
    local filled = ga.full({}, v, "float64")
    temporaries[#temporaries + 1] = filled
    return filled
  end
  local first, last, first_f, last_f = element(points, 1), element(points, n), element(values, 1),
                                       element(values, n)
  -- each x's upper point (1-based; n + 1 past the last): searchsorted's right side
  local upper = ga.searchsorted(points, xs, {side = "right", stream = stream})
  local lower = ga.sub(upper, 1, on_stream)
  local function at(a, places)
    local got = ga.take(a, places, {mode = "clip", stream = stream})   -- clipped into 1..n
    temporaries[#temporaries + 1] = got
    return got
  end
  local result = ew.launch(interp_program(), nil, stream, "interp", xs, at(points, lower), at(points, upper),
                           at(values, lower), at(values, upper), first, last, last_f,
                           left and given(left) or first_f, right and given(right) or last_f)
  for _, t in ipairs(temporaries) do core.free_after(t, stream) end
  core.free_after(upper, stream)
  core.free_after(lower, stream)
  return result
end

function M.install(gpu)
  ga = gpu.gpuarray
  ga.interp = M.interp
end

return M
