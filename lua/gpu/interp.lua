-- gpu.interp: NumPy's interp, piecewise-linear interpolation of the points (xp, fp) at x:
--   gpuarray.interp(x, xp, fp[, {left =, right =, stream =}]) -> float64 array of x's shape
-- xp (increasing, as NumPy assumes and does not check) and fp are 1-d arrays of one length;
-- left and right are the values below xp's first and above its last point (fp's first and
-- last unless given).  One kernel: each x finds its interval by a binary search of xp (as
-- searchsorted's right side) and does NumPy's arithmetic, its special cases included (x on
-- a point, a NaN slope tried from the other end), each operation rounded on its own.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local reduction = require "gpu.reduction"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local OPTIONS = {left = true, right = true, stream = true}

local ga   -- gpu.gpuarray, set by install

-- NumPy's compiled_base.c arr_interp for one x over the n points (xp, fp), with the values
-- below and above them.
local PREAMBLE = [[
__device__ double lg_interp(double x, const double *xp, const double *fp, long long n,
                            double left, double right) {
  if (x != x) return x;
  if (x > xp[n - 1]) return right;
  if (x < xp[0]) return left;
  if (x == xp[n - 1]) return fp[n - 1];
  long long low = 0, high = n - 1;               // the last point at or below x: in [low, high)
  while (high - low > 1) {
    const long long middle = low + (high - low) / 2;
    if (xp[middle] <= x) low = middle; else high = middle;
  }
  const double xl = xp[low], xu = xp[low + 1], fl = fp[low], fu = fp[low + 1];
  if (x == xl) return fl;
  const double slope = __ddiv_rn(__dsub_rn(fu, fl), __dsub_rn(xu, xl));
  double y = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xl)), fl);
  if (y != y) {
    y = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, xu)), fu);
    if (y != y && fl == fu) y = fl;
  }
  return y;
}]]

-- x's C types that the kernel reads as they are; other dtypes go in as float64 copies
local DIRECT = {bool = true, int8 = true, uint8 = true, int16 = true, uint16 = true, int32 = true,
                uint32 = true, int64 = true, uint64 = true, float32 = true, float64 = true}

local kernels = {}   -- x's dtype -> ElementwiseKernel
local function interp_kernel(dtype)
  local k = kernels[dtype]
  if k == nil then
    k = ew.ElementwiseKernel(
      ("const %s *x, double *y, const double *xp, const double *fp, long long n, int has_left, "
       .. "double left, int has_right, double right"):format(core.dtype(dtype).ctype),
      "y[i] = lg_interp((double)x[i], xp, fp, n, has_left ? left : fp[0], has_right ? right : fp[n - 1])",
      "interp", {preamble = PREAMBLE})
    kernels[dtype] = k
  end
  return k
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
  local left = args.typed_option(opts, "left", "number", 4, "interp")
  local right = args.typed_option(opts, "right", "number", 4, "interp")
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local temporaries = {}
  local function as_float64(a)   -- a contiguous float64 array: a, or a new one (astype's)
    if a.dtype == "float64" and a.is_contiguous then return a end
    local wide = a:astype("float64", on_stream)
    temporaries[#temporaries + 1] = wide
    return wide
  end
  local xs = DIRECT[x.dtype] and x or as_float64(x)
  local y = ga.empty(x.shape, "float64")
  interp_kernel(xs.dtype)(xs, y, as_float64(xp), as_float64(fp), xp.size, left and 1 or 0, left or 0,
                          right and 1 or 0, right or 0, {stream = stream})
  for _, t in ipairs(temporaries) do core.free_after(t, stream) end
  return y
end

function M.install(gpu)
  ga = gpu.gpuarray
  ga.interp = M.interp
end

return M
