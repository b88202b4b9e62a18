-- gpu.numeric: NumPy's numeric functions that CuPy has beside the operators and reductions,
-- with NumPy's names, defaults and result dtypes (1-based axes and places, as everywhere here):
--   gpuarray.around(a[, decimals[, {out =, stream =}]]) (also round): rounded half to even at
--     decimals places (negative: tens, hundreds, ...), NumPy's scaled rint; integers come back
--     as copies for decimals >= 0, bools as float16 (CuPy's; NumPy's for 0 places only)
--   gpuarray.nan_to_num(a[, {nan =, posinf =, neginf =, stream =}]): NaN and infinities
--     replaced (by 0 and the dtype's largest and least finite values unless given), complex
--     values part by part; integers and bools copied
--   gpuarray.isin(element, test_elements[, {invert =, stream =}]): bool array of element's shape
--   gpuarray.digitize(x, bins[, {right =, stream =}]): int64 array of x's shape, NumPy's bin
--     numbers (below)
--   gpuarray.average(a[, {axis =, weights =, returned =, stream =}]) -> average[, sum of weights]
--   gpuarray.cov(m[, {rowvar =, bias =, ddof =, stream =}]), corrcoef(x[, {rowvar =, stream =}])
--   gpuarray.cross(a, b[, {axis =, stream =}]), kron(a, b[, {stream =}])
--   gpuarray.convolve(a, v[, mode[, {stream =}]]), correlate(a, v[, mode[, {stream =}]])
--   gpuarray.argwhere(a), flatnonzero(a): 1-based int64 indices, as nonzero's
--   gpuarray.trapezoid(y[, {x =, dx =, axis =, stream =}]) (also trapz)
--   gpuarray.linalg.norm(x[, {ord =, axis =, keepdims =, stream =}])
-- digitize's results are NumPy's numbers exactly, 0 to #bins: for increasing bins, k is the
-- 1-based place of the last edge at or below x (bins[k] <= x < bins[k + 1], 0 below
-- bins[1]), which is searchsorted(bins, x, {side = "right"}) - 1 here; with {right = true}
-- bins[k] < x <= bins[k + 1].  Decreasing bins count from the other end as NumPy's do.
--
-- Each is built from the library's pieces with as few passes as they allow: one generated
-- elementwise kernel for around, nan_to_num, corrcoef's scaling, cross's components and
-- trapezoid's terms; a sort of test_elements and one binary-search kernel a value for isin
-- and digitize; a product and a reduction for average; the mean, one centring pass and a
-- matmul for cov; a thread an output for convolve and correlate; one reduction for most of
-- norm's orders (gpu.reduction's norm ops).

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local promote = require "gpu.promote"
local reduction = require "gpu.reduction"
local operators = require "gpu.operators"

local M = {}

local argerror, typename = args.argerror, args.typename
local check_array, check_options = reduction.check_array, reduction.check_options
local check_axis = args.check_axis
local dtypes = reduction.dtypes
local GPUArray = core.types.GPUArray

local ga, compact   -- gpu.gpuarray and gpu.compact, set by install

local STREAM = {stream = true}

local function kind(dtype) return dtypes[dtype].kind end
local function is_16bit_float(dtype) return kind(dtype) == "f" and dtypes[dtype].size == 2 end

-- Frees the temporaries among the arguments (nil and false skipped) once the stream is done.
local release = core.free_all_after

-- a as a contiguous array of dtype: a itself, or a new array (then also returned second).
local function contiguous_as(a, dtype, stream)
  if a.dtype == dtype and a.is_contiguous then return a, nil end
  local copy = a:astype(dtype, stream and {stream = stream})
  return copy, copy
end

-- Option `name` of fname's argument n: nil (default), or a boolean; or a real number.
local function boolean_option(opts, name, n, fname, default)
  return args.typed_option(opts, name, "boolean", n, fname, default, 2)
end

local function number_option(opts, name, n, fname, default)
  return args.typed_option(opts, name, "number", n, fname, default, 2)
end

-- A view of a's memory with a's dtype; an empty one starts where a does.
local function view(a, offset, shape, strides)
  for _, n in ipairs(shape) do
    if n == 0 then offset = 0 end
  end
  return core.array_view(a, offset, a.dtype, shape, strides)
end

local program = ew.keyed_programs()   -- ew.program(spec) made once a key

-- around ----------------------------------------------------------------------------------

-- NumPy's power_of_ten: 10^n from a table below 9, by repeated multiplication above (so that
-- the scale rounds as NumPy's does), stopping once it is infinite.
local POWERS = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}
local function power_of_ten(n)
  if n < 9 then return POWERS[n + 1] end
  local scale = 1e9
  for _ = 10, n do
    scale = scale * 10
    if scale == math.huge then break end
  end
  return scale
end

-- NumPy's round: x times 10^decimals (scale; down: divided by 10^-decimals), rounded half to
-- even (rint), and scaled back, each step rounded to the dtype as NumPy's ufuncs round it (a
-- float32's scale is the float32 nearest it; a 16-bit float's steps each round to 16 bits).
local ROUND_PREAMBLE = [[
__device__ __forceinline__ float lg_round_places(float x, double scale, int down) {
  const float f = (float)scale;
  return down ? rintf(x / f) * f : rintf(x * f) / f;
}
__device__ __forceinline__ double lg_round_places(double x, double scale, int down) {
  return down ? rint(x / scale) * scale : rint(x * scale) / scale;
}
__device__ __forceinline__ float lg_round_places_half(float x, double scale, int down) {
  const float f = lg_round_half(scale);
  return down ? lg_round_half(rintf(lg_round_half(x / f)) * f)
              : lg_round_half(rintf(lg_round_half(x * f)) / f);
}
__device__ __forceinline__ float lg_round_places_bf16(float x, double scale, int down) {
  const float f = lg_round_bf16(scale);
  return down ? lg_round_bf16(rintf(lg_round_bf16(x / f)) * f)
              : lg_round_bf16(rintf(lg_round_bf16(x * f)) / f);
}
__device__ __forceinline__ lg_complex64 lg_round_places(lg_complex64 z, double scale, int down) {
  return lg_complex64(lg_round_places(z.re, scale, down), lg_round_places(z.im, scale, down));
}
__device__ __forceinline__ lg_complex128 lg_round_places(lg_complex128 z, double scale, int down) {
  return lg_complex128(lg_round_places(z.re, scale, down), lg_round_places(z.im, scale, down));
}]]

-- around's result dtype and expression for x of dtype: integers (only for decimals < 0) in
-- float64, converted back by wrapping as NumPy's cast does; bools as float16.
local function round_expression(dtype)
  local k = kind(dtype)
  if dtype == "float16" or dtype == "bool" then
    return "float16", "lg_round_places_half((float)x, scale, down)"
  elseif dtype == "bfloat16" then
    return dtype, "lg_round_places_bf16(x, scale, down)"
  elseif k == "i" then
    return dtype, "(long long)lg_round_places((double)x, scale, down)"
  elseif k == "u" then
    return dtype, "(unsigned long long)lg_round_places((double)x, scale, down)"
  end
  return dtype, "lg_round_places(x, scale, down)"
end

local ROUND_OPTIONS = {out = true, stream = true}

function M.around(a, decimals, opts)
  check_array(a, 1, "around")
  if decimals == nil then decimals = 0 end
  if math.type(decimals) ~= "integer" then
    argerror(2, "around", "decimals must be an integer, got " .. (math.type(decimals) or typename(decimals)))
  end
  opts = check_options(opts, 3, "around", ROUND_OPTIONS)
  local k = kind(a.dtype)
  local whole = (k == "i" or k == "u") and decimals >= 0   -- whole numbers already: a copy
  local out_dtype, expr = round_expression(a.dtype)
  local out = opts.out
  if out ~= nil then
    if getmetatable(out) ~= GPUArray then
      argerror(3, "around", "option 'out' must be a GPUArray, got " .. typename(out))
    end
    if out.freed then argerror(3, "around", "out array has been freed") end
    if out.dtype ~= out_dtype or not promote.same_shape(out.shape, a.shape) then
      argerror(3, "around", ("out array is %s of shape %s, the result %s of shape %s")
                            :format(out.dtype, promote.shape_text(out.shape), out_dtype,
                                    promote.shape_text(a.shape)))
    end
  end
  if whole then
    if out == nil then return a:copy(opts.stream and {stream = opts.stream}) end
    return ew.launch(ew.copy_program(a.dtype), out, opts.stream, "around", a)
  end
  local p = program("around|" .. a.dtype, {
    expr = expr, out = out_dtype, name = "around_" .. a.dtype, preamble = ROUND_PREAMBLE,
    operands = {{name = "x", dtype = a.dtype}, {name = "scale", dtype = "float64", scalar = true},
                {name = "down", dtype = "int32", scalar = true}}})
  local places = decimals < 0 and -decimals or decimals
  if places < 0 then places = math.maxinteger end         -- -math.mininteger
  return ew.launch(p, out, opts.stream, "around", a, power_of_ten(places), decimals < 0 and 1 or 0)
end
M.round = M.around

-- nan_to_num ------------------------------------------------------------------------------

local NAN_TO_NUM_PREAMBLE = [[
template <typename T>
__device__ __forceinline__ T lg_nan_to_num(T x, double nan, double posinf, double neginf) {
  if (x != x) return (T)nan;
  if (isinf(x)) return x > (T)0 ? (T)posinf : (T)neginf;
  return x;
}
__device__ __forceinline__ lg_complex64 lg_nan_to_num(lg_complex64 z, double nan, double posinf,
                                                      double neginf) {
  return lg_complex64(lg_nan_to_num(z.re, nan, posinf, neginf), lg_nan_to_num(z.im, nan, posinf, neginf));
}
__device__ __forceinline__ lg_complex128 lg_nan_to_num(lg_complex128 z, double nan, double posinf,
                                                       double neginf) {
  return lg_complex128(lg_nan_to_num(z.re, nan, posinf, neginf), lg_nan_to_num(z.im, nan, posinf, neginf));
}]]

-- The largest finite value of each float dtype (NumPy's finfo(dtype).max).
local FLOAT_MAX = {float16 = 65504.0, bfloat16 = 3.3895313892515355e38, float32 = 3.4028234663852886e38,
                   float64 = 1.7976931348623157e308}

local NAN_TO_NUM_OPTIONS = {nan = true, posinf = true, neginf = true, stream = true}

function M.nan_to_num(a, opts)
  check_array(a, 1, "nan_to_num")
  opts = check_options(opts, 2, "nan_to_num", NAN_TO_NUM_OPTIONS)
  local largest = FLOAT_MAX[reduction.var_dtype(a.dtype)]    -- of a complex one's parts
  local nan = number_option(opts, "nan", 2, "nan_to_num", 0.0)
  local posinf = number_option(opts, "posinf", 2, "nan_to_num", largest)
  local neginf = number_option(opts, "neginf", 2, "nan_to_num", largest and -largest)
  local k = kind(a.dtype)
  if k ~= "f" and k ~= "c" then return a:copy(opts.stream and {stream = opts.stream}) end
  local p = program("nan_to_num|" .. a.dtype, {
    expr = "lg_nan_to_num(x, nan, posinf, neginf)", out = a.dtype, name = "nan_to_num_" .. a.dtype,
    preamble = NAN_TO_NUM_PREAMBLE,
    operands = {{name = "x", dtype = a.dtype}, {name = "nan", dtype = "float64", scalar = true},
                {name = "posinf", dtype = "float64", scalar = true},
                {name = "neginf", dtype = "float64", scalar = true}}})
  return ew.launch(p, nil, opts.stream, "nan_to_num", a, nan + 0.0, posinf + 0.0, neginf + 0.0)
end

-- isin and digitize: a binary search a value ----------------------------------------------

local SEARCH_PREAMBLE = [[
// NumPy's order of sorted arrays: whether a goes before b (a NaN after every number).
template <typename T> __device__ __forceinline__ bool lg_goes_before(T a, T b) {
  return a < b || (b != b && a == a);
}
// isin: whether the n sorted keys hold v: the first key that does not go before v equals it
// (a NaN equals nothing).
template <typename T> __device__ bool lg_sorted_holds(T v, const T *keys, long long n) {
  long long low = 0, high = n;
  while (low < high) {
    const long long middle = low + (high - low) / 2;
    if (lg_goes_before(keys[middle], v)) low = middle + 1; else high = middle;
  }
  return low < n && keys[low] == v;
}
// digitize: NumPy's bin number of v among the n monotonic bins, searchsorted's count of the
// bins at or below v (right: below v), read upward (decreasing bins backward, the count
// taken from n as NumPy's digitize takes it).
template <typename T>
__device__ long long lg_bin_number(T v, const T *bins, long long n, int right, int decreasing) {
  long long low = 0, high = n;
  while (low < high) {
    const long long middle = low + (high - low) / 2;
    const T b = bins[decreasing ? n - 1 - middle : middle];
    if (right ? lg_goes_before(b, v) : !lg_goes_before(v, b)) low = middle + 1; else high = middle;
  }
  return decreasing ? n - low : low;
}]]

-- Element dtypes the search kernels read as they are; 16-bit floats go in as float32 copies.
local function searched_dtype(dtype) return is_16bit_float(dtype) and "float32" or dtype end

-- The dtype values and keys are compared in: NumPy's promotion of the two (a 16-bit float
-- as float32, which compares its values alike).
local function compare_dtype(x_dtype, keys_dtype)
  return searched_dtype(promote.promote_types(x_dtype, keys_dtype))
end

local search_kernels = {}   -- "isin" or "digitize" -> value dtype -> keys dtype -> kernel
local function search_kernel(name, x_dtype, keys_dtype)
  local by_keys = require("gpu.kernel_cache").level(
    require("gpu.kernel_cache").level(search_kernels, name), x_dtype)
  local k = by_keys[keys_dtype]
  if k == nil then
    local x_ctype, keys_ctype = dtypes[x_dtype].ctype, dtypes[keys_dtype].ctype
    if name == "isin" then
      k = ew.ElementwiseKernel(
        ("const %s *x, bool *out, const %s *keys, long long n, int invert"):format(x_ctype, keys_ctype),
        ("out[i] = lg_sorted_holds((%s)x[i], keys, n) != (invert != 0)"):format(keys_ctype),
        "isin", {preamble = SEARCH_PREAMBLE})
    else
      k = ew.ElementwiseKernel(
        ("const %s *x, long long *out, const %s *bins, long long n, int right, int decreasing")
          :format(x_ctype, keys_ctype),
        ("out[i] = lg_bin_number((%s)x[i], bins, n, right, decreasing)"):format(keys_ctype),
        "digitize", {preamble = SEARCH_PREAMBLE})
    end
    by_keys[keys_dtype] = k
  end
  return k
end

local function refuse_complex(a, n, fname)
  if kind(a.dtype) == "c" then
    argerror(n, fname, ("complex values are not supported, got %s"):format(a.dtype), 2)
  end
end

local ISIN_OPTIONS = {invert = true, stream = true}

function M.isin(element, test_elements, opts)
  check_array(element, 1, "isin")
  check_array(test_elements, 2, "isin")
  opts = check_options(opts, 3, "isin", ISIN_OPTIONS)
  local invert = boolean_option(opts, "invert", 3, "isin", false)
  refuse_complex(element, 1, "isin")
  refuse_complex(test_elements, 2, "isin")
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local out = core.array_empty(element.shape, "bool")
  if element.size == 0 then return out end
  if test_elements.size == 0 then return out:fill(invert, on_stream) end
  local keys_dtype = compare_dtype(element.dtype, test_elements.dtype)
  local keys, keys_copy = contiguous_as(test_elements, keys_dtype, stream)
  if keys_copy then keys:reshape(keys.size):sort(on_stream)   -- our own copy: sorted in place
  else
    keys = ga.sort(keys:reshape(keys.size), on_stream)
    keys_copy = keys
  end
  local x, x_copy = element, nil
  if x.dtype ~= searched_dtype(x.dtype) then x, x_copy = contiguous_as(x, "float32", stream) end
  search_kernel("isin", x.dtype, keys_dtype)(x, out, keys, keys.size, invert and 1 or 0, {stream = stream})
  release(stream, keys_copy, x_copy)
  return out
end

-- digitize's test of the bins: NumPy's check_array_monotonic over the pairs (bins[i],
-- bins[i + 1]) compared as doubles, in one reduction.  Each pair maps to bit 0 where it
-- increases, bit 1 where it decreases, and above them, where its two differ (NaN included),
-- its index and bit 0 again (else all ones); the reduction keeps the bits of all pairs and the
-- first such pair.  NumPy's test goes by that first pair: increasing from it, the bins are
-- increasing unless a pair decreases; else decreasing unless a pair increases.
local MONOTONE_PREAMBLE = [[
__device__ __forceinline__ unsigned long long lg_monotone_pair(double a, double b, long long i) {
  if (a == b) return 0xfffffffffffffffcull;
  const unsigned long long increases = a < b, decreases = a > b;
  return (((unsigned long long)i << 1 | increases) << 2) | increases | decreases << 1;
}
__device__ __forceinline__ unsigned long long lg_monotone_both(unsigned long long a,
                                                               unsigned long long b) {
  const unsigned long long first = (a >> 2) < (b >> 2) ? a >> 2 : b >> 2;
  return first << 2 | ((a | b) & 3ull);
}]]
local NO_PAIR = 0x3FFFFFFFFFFFFFFF      -- the first pair's field where no pair differs

local monotone_kernels = {}   -- bins dtype -> ReductionKernel
local function monotone_kernel(dtype)
  local k = monotone_kernels[dtype]
  if k == nil then
    local ctype = dtypes[dtype].ctype
    k = reduction.ReductionKernel("uint64", "0xfffffffffffffffcull", "lg_monotone_both(a, b)",
                                  "lg_monotone_pair((double)lo[i], (double)hi[i], i)",
                                  ("const %s *lo, const %s *hi"):format(ctype, ctype),
                                  {name = "digitize_monotone", preamble = MONOTONE_PREAMBLE})
    monotone_kernels[dtype] = k
  end
  return k
end

-- 1 where the contiguous 1-d bins increase (or hold one value), -1 where they decrease, 0
-- otherwise, as NumPy's test says: one reduction, and its value read back.
local function monotonicity(bins, stream)
  local n = bins.size
  if n < 2 then return 1 end
  local result = monotone_kernel(bins.dtype)(bins:narrow(1, 1, n - 1), bins:narrow(1, 2, n - 1),
                                             {stream = stream})
  if stream then stream:synchronize() end
  local code = result[1]
  release(stream, result)
  local first = code >> 2
  if first == NO_PAIR then return 1 end
  if first & 1 == 1 then return code & 2 == 0 and 1 or 0 end
  return code & 1 == 0 and -1 or 0
end

local DIGITIZE_OPTIONS = {right = true, stream = true}

function M.digitize(x, bins, opts)
  check_array(x, 1, "digitize")
  check_array(bins, 2, "digitize")
  opts = check_options(opts, 3, "digitize", DIGITIZE_OPTIONS)
  local right = boolean_option(opts, "right", 3, "digitize", false)
  refuse_complex(x, 1, "digitize")
  refuse_complex(bins, 2, "digitize")
  if bins.ndim ~= 1 then
    argerror(2, "digitize", ("bins must be a 1-d array, got shape %s"):format(promote.shape_text(bins.shape)))
  end
  local stream = opts.stream
  local keys_dtype = compare_dtype(x.dtype, bins.dtype)
  local keys, keys_copy = contiguous_as(bins, keys_dtype, stream)
  local direction = monotonicity(keys, stream)
  if direction == 0 then
    release(stream, keys_copy)
    argerror(2, "digitize", "bins must be monotonically increasing or decreasing")
  end
  local out = core.array_empty(x.shape, "int64")
  if x.size > 0 then
    local values, values_copy = x, nil
    if x.dtype ~= searched_dtype(x.dtype) then values, values_copy = contiguous_as(x, "float32", stream) end
    search_kernel("digitize", values.dtype, keys_dtype)(values, out, keys, keys.size, right and 1 or 0,
                                                       direction < 0 and 1 or 0, {stream = stream})
    release(stream, values_copy)
  end
  release(stream, keys_copy)
  return out
end

-- average, cov and corrcoef -----------------------------------------------------------------

-- The elementwise product of a and w, each converted to dtype first (average's terms).
local function product_program(a_dtype, w_dtype, dtype)
  local vtype = operators.ctype(dtype)
  return program(("average|%s|%s|%s"):format(a_dtype, w_dtype, dtype), {
    expr = ("(%s)(a) * (%s)(w)"):format(vtype, vtype), out = dtype,
    name = ("average_terms_%s_%s_%s"):format(a_dtype, w_dtype, dtype),
    operands = {{name = "a", dtype = a_dtype}, {name = "w", dtype = w_dtype}}})
end

local AVERAGE_OPTIONS = {axis = true, weights = true, returned = true, stream = true}

-- average with weights w (checked), along axis (nil: all of a): NumPy's sum(a * w) / sum(w),
-- both sums in dtype.  One reduction of a and w together where they are of one shape and
-- promote to dtype already, else their products and a reduction of those.
local function weighted_average(a, w, axis, dtype, stream)
  local on_stream = stream and {stream = stream}
  local same_shape = promote.same_shape(a.shape, w.shape)
  local weights = w
  if not same_shape then                   -- a 1-d w along axis, read by the other axes too
    local shape, strides = {}, {}
    for d = 1, a.ndim do shape[d], strides[d] = 1, 0 end
    shape[axis], strides[axis] = w.size, w.strides[1]
    weights = view(w, 0, shape, strides)
  end
  local w_copy = w.dtype ~= dtype and w:astype(dtype, on_stream) or nil   -- summed in dtype
  local scale = ga.sum(w_copy or w, {axis = same_shape and axis or nil, stream = stream})
  release(stream, w_copy)
  local total
  if axis == nil and promote.promote_types(a.dtype, w.dtype) == dtype then
    total = reduction.reduce_all("dot", a, w, stream)
  else
    local terms = ew.launch(product_program(a.dtype, w.dtype, dtype), nil, stream, "average", a, weights)
    total = ga.sum(terms, {axis = axis, stream = stream})
    release(stream, terms)
  end
  local zeros = ga.eq(scale, 0, on_stream)          -- NumPy's test, read back: one sync
  local zero = ga.any(zeros, on_stream)
  if stream then stream:synchronize() end
  local any_zero = zero[1]
  release(stream, zeros, zero)
  if any_zero then
    release(stream, total, scale)
    argerror(2, "average", "weights sum to zero, can't be normalized", 3)
  end
  local avg = ga.truediv(total, scale, on_stream)
  release(stream, total)
  return avg, scale
end

function M.average(a, opts)
  check_array(a, 1, "average")
  opts = check_options(opts, 2, "average", AVERAGE_OPTIONS)
  local axis = opts.axis ~= nil and check_axis(opts.axis, a.ndim, 2, "average") or nil
  local returned = boolean_option(opts, "returned", 2, "average", false)
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local w = opts.weights
  local avg, scale
  if w == nil then
    avg = ga.mean(a, {axis = axis, stream = stream})
    if returned then
      scale = core.array_empty(avg.shape, avg.dtype):fill(axis and a.shape[axis] or a.size, on_stream)
    end
  else
    if getmetatable(w) ~= GPUArray then
      argerror(2, "average", "option 'weights' must be a GPUArray, got " .. typename(w))
    end
    if w.freed then argerror(2, "average", "option 'weights' has been freed") end
    if not promote.same_shape(a.shape, w.shape) then
      if axis == nil then
        argerror(2, "average", "axis must be specified when shapes of a and weights differ")
      end
      if w.ndim ~= 1 or w.size ~= a.shape[axis] then
        argerror(2, "average", ("weights of shape %s fit neither a's shape %s nor its axis %d of length %d")
                               :format(promote.shape_text(w.shape), promote.shape_text(a.shape),
                                       opts.axis, a.shape[axis]))
      end
    end
    local dtype = promote.promote_types(a.dtype, w.dtype)
    local k = kind(a.dtype)
    if k == "b" or k == "i" or k == "u" then dtype = promote.promote_types(dtype, "float64") end
    avg, scale = weighted_average(a, w, axis, dtype, stream)
    if not returned then release(stream, scale) end
  end
  if not returned then return avg end
  if not promote.same_shape(scale.shape, avg.shape) then
    local broadcast = ga.broadcast_to(scale, avg.shape):copy(on_stream)
    release(stream, scale)
    scale = broadcast
  end
  return avg, scale
end

local COV_OPTIONS = {rowvar = true, bias = true, ddof = true, stream = true}
local CORRCOEF_OPTIONS = {rowvar = true, stream = true}

-- NumPy's cov of m (fname's argument 1) before its squeeze: the (p, p) array of float64 (or
-- complex128) covariances of m's p rows (rowvar false: columns) of n observations.  The
-- rows' means, the rows less them (in place where m had to be converted), their product with
-- their conjugate transpose, scaled by 1 / (n - ddof) (inf where that is not positive).
local function covariance(fname, m, opts)
  check_array(m, 1, fname)
  opts = check_options(opts, 2, fname, fname == "cov" and COV_OPTIONS or CORRCOEF_OPTIONS)
  if m.ndim > 2 then argerror(1, fname, ("a 1-d or 2-d array expected, got %d-d"):format(m.ndim), 2) end
  local rowvar = boolean_option(opts, "rowvar", 2, fname, true)
  local bias = boolean_option(opts, "bias", 2, fname, false)
  local ddof = opts.ddof
  if ddof == nil then ddof = bias and 0 or 1
  elseif math.type(ddof) ~= "integer" then
    argerror(2, fname, "option 'ddof' must be an integer, got " .. (math.type(ddof) or typename(ddof)), 2)
  end
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local x = m                                 -- m as NumPy's 2-d X: a 1-d m is one row
  if m.ndim == 0 then x = core.array_view(m, 0, m.dtype, {1, 1}, {0, 0})
  elseif m.ndim == 1 then x = core.array_view(m, 0, m.dtype, {1, m.size}, {0, m.strides[1]}) end
  if not rowvar and x.shape[1] ~= 1 then x = x:transpose() end
  local p, n = x.shape[1], x.shape[2]
  if p == 0 then return core.array_empty({0, 0}, "float64"), stream end
  local dtype = promote.promote_types(m.dtype, "float64")
  local complex = kind(dtype) == "c"
  if n == 0 then                              -- NumPy's 0 * inf: NaN everywhere
    local nan = complex and require("gpu.complex").complex(0 / 0, 0 / 0) or 0 / 0
    return core.array_empty({p, p}, dtype):fill(nan, on_stream), stream
  end
  local k = kind(m.dtype)
  local work = x
  if (k == "f" or k == "c") and m.dtype ~= dtype then work = x:astype(dtype, on_stream) end
  local mean = ga.mean(work, {axis = 2, stream = stream})
  local mean_column = core.array_view(mean, 0, mean.dtype, {p, 1})
  local centred = ga.sub(work, mean_column, {out = work ~= x and work or nil, stream = stream})
  release(stream, mean)
  local other = complex and ga.conj(centred, on_stream) or centred
  local c = ga.matmul(centred, other:transpose(), on_stream)
  release(stream, centred, complex and other)
  local fact = n - ddof
  if fact <= 0 then fact = 0 end
  ga.mul(c, 1 / fact, {out = c, stream = stream})
  return c, stream
end

function M.cov(m, opts)
  local c = covariance("cov", m, opts)
  if c.size == 1 then return core.array_view(c, 0, c.dtype, {}) end      -- NumPy's squeeze
  return c
end

-- corrcoef's scaling of the covariances c: c[i][j] / sqrt(c[i][i]) / sqrt(c[j][j]), as NumPy
-- divides in place (a complex value by a real one as NumPy's complex division does it), its
-- parts clipped to [-1, 1] (a NaN stays).
local CORRCOEF_PREAMBLE = [[
__device__ __forceinline__ double lg_unit_clip(double v) { return v < -1.0 ? -1.0 : (v > 1.0 ? 1.0 : v); }
__device__ __forceinline__ double lg_correlation(double c, double ci, double cj) {
  return lg_unit_clip(c / sqrt(ci) / sqrt(cj));
}
__device__ __forceinline__ lg_complex128 lg_divide_real(lg_complex128 z, double s) {
  if (s == 0.0) return lg_complex128(z.re / s, z.im / s);
  const double scale = 1.0 / s;
  return lg_complex128(z.re * scale, z.im * scale);
}
__device__ __forceinline__ lg_complex128 lg_correlation(lg_complex128 c, lg_complex128 ci,
                                                        lg_complex128 cj) {
  const lg_complex128 r = lg_divide_real(lg_divide_real(c, sqrt(ci.re)), sqrt(cj.re));
  return lg_complex128(lg_unit_clip(r.re), lg_unit_clip(r.im));
}]]

function M.corrcoef(x, opts)
  local c, stream = covariance("corrcoef", x, opts)
  local p = c.shape[1]
  if p == 0 then return c end
  if p == 1 then                              -- NumPy's c / c of a 0-d covariance
    local r = ga.truediv(c, c, stream and {stream = stream})
    release(stream, c)
    return core.array_view(r, 0, r.dtype, {})
  end
  local dtype = c.dtype
  local diagonal = (p + 1) * c.itemsize
  local prog = program("corrcoef|" .. dtype, {
    expr = "lg_correlation(c, ci, cj)", out = dtype, name = "corrcoef_" .. dtype,
    preamble = CORRCOEF_PREAMBLE,
    operands = {{name = "c", dtype = dtype}, {name = "ci", dtype = dtype}, {name = "cj", dtype = dtype}}})
  local r = ew.launch(prog, nil, stream, "corrcoef", c, view(c, 0, {p, 1}, {diagonal, 0}),
                      view(c, 0, {1, p}, {0, diagonal}))
  release(stream, c)
  return r
end

-- cross and kron ----------------------------------------------------------------------------

local fused = require("gpu.fuse").once   -- the expressions below, each fused once

local CROSS_OPTIONS = {axis = true, stream = true}

-- gpuarray.cross: NumPy's, the components of the vectors along axis (2 or 3 of them; a
-- missing third is 0) each computed as NumPy computes it, by one kernel a component written
-- into its place in the result; 2-vectors by 2-vectors give the scalar z component.
function M.cross(a, b, opts)
  check_array(a, 1, "cross")
  check_array(b, 2, "cross")
  opts = check_options(opts, 3, "cross", CROSS_OPTIONS)
  for n, v in ipairs{a, b} do
    if v.ndim == 0 then argerror(n, "cross", "a 0-d array holds no vectors") end
  end
  local axis = opts.axis == nil and -1 or opts.axis
  local axis_a, axis_b = check_axis(axis, a.ndim, 3, "cross"), check_axis(axis, b.ndim, 3, "cross")
  local na, nb = a.shape[axis_a], b.shape[axis_b]
  for n, length in ipairs{na, nb} do
    if length ~= 2 and length ~= 3 then
      argerror(n, "cross", ("vectors of 2 or 3 elements expected along axis %d, got %d"):format(axis, length))
    end
  end
  if promote.promote_types(a.dtype, b.dtype) == "bool" then
    argerror(1, "cross", "cross is not defined for bool arrays")
  end
  local ac, bc = {}, {}                       -- the components, views of a and b
  for i = 1, na do ac[i - 1] = a:select(axis_a, i) end
  for i = 1, nb do bc[i - 1] = b:select(axis_b, i) end
  local shape, why = promote.broadcast_shapes({ac[0].shape, bc[0].shape})
  if shape == nil then argerror(2, "cross", why) end
  local dtype = promote.promote_types(a.dtype, b.dtype)
  local stream = opts.stream
  local difference = fused("cross", function(p, q, r, s) return p * q - r * s end)
  if na == 2 and nb == 2 then
    return difference(ac[0], bc[1], ac[1], bc[0], {stream = stream})
  end
  local out_shape = {table.unpack(shape)}
  local axis_c = check_axis(axis, #shape + 1, 3, "cross")
  table.insert(out_shape, axis_c, 3)
  local result = core.array_empty(out_shape, dtype)
  local c = {}
  for i = 1, 3 do c[i - 1] = result:select(axis_c, i) end
  local product = fused("cross_product", function(p, q) return p * q end)
  local negated = fused("cross_negated", function(p, q) return -(p * q) end)
  if na == 3 and nb == 3 then
    difference(ac[1], bc[2], ac[2], bc[1], {out = c[0], stream = stream})
    difference(ac[2], bc[0], ac[0], bc[2], {out = c[1], stream = stream})
  elseif na == 2 then                         -- a's third component is 0
    product(ac[1], bc[2], {out = c[0], stream = stream})
    negated(ac[0], bc[2], {out = c[1], stream = stream})
  else                                        -- b's third component is 0
    negated(ac[2], bc[1], {out = c[0], stream = stream})
    product(ac[2], bc[0], {out = c[1], stream = stream})
  end
  difference(ac[0], bc[1], ac[1], bc[0], {out = c[2], stream = stream})
  return result
end

-- gpuarray.kron: NumPy's Kronecker product, a's elements each times all of b: one product
-- of two broadcasting views, a's axes interleaved with b's, read as the result's shape.
function M.kron(a, b, opts)
  check_array(a, 1, "kron")
  check_array(b, 2, "kron")
  opts = check_options(opts, 3, "kron", STREAM)
  local on_stream = opts.stream and {stream = opts.stream}
  if a.ndim == 0 or b.ndim == 0 then return ga.mul(a, b, on_stream) end
  local nd = math.max(a.ndim, b.ndim)
  local a_shape, a_strides, b_shape, b_strides, shape = {}, {}, {}, {}, {}
  for d = 1, nd do
    local da, db = d - nd + a.ndim, d - nd + b.ndim     -- a's and b's own axes (leading 1s)
    local la, lb = a.shape[da] or 1, b.shape[db] or 1
    a_shape[2 * d - 1], a_strides[2 * d - 1] = la, a.strides[da] or 0
    a_shape[2 * d], a_strides[2 * d] = 1, 0
    b_shape[2 * d - 1], b_strides[2 * d - 1] = 1, 0
    b_shape[2 * d], b_strides[2 * d] = lb, b.strides[db] or 0
    shape[d] = la * lb
  end
  local product = ga.mul(view(a, 0, a_shape, a_strides), view(b, 0, b_shape, b_strides), on_stream)
  return core.array_view(product, 0, product.dtype, shape)
end

-- convolve and correlate --------------------------------------------------------------------

-- The correlation kernel of a dtype: out[j] (reversed: out[length - 1 - j]) is the sum over k
-- of x[j - left + k] * y[k] (y read backward where reverse_y; either conjugated) over the
-- terms x holds, as NumPy's _pyarray_correlate: integers summed in 64 bits (wrapping) and
-- stored, bools or-ed, floats and complex values in their own precision.
local correlate_kernels = {}
local function correlate_kernel(dtype)
  local k = correlate_kernels[dtype]
  if k ~= nil then return k end
  local ctype, kd = dtypes[dtype].ctype, kind(dtype)
  local acc, zero, term, result = ctype, "0", "acc += xv * yv", "acc"
  if kd == "b" then
    term = "acc = acc || (xv && yv)"
  elseif kd == "i" then
    acc, term = "unsigned long long",
                "acc += (unsigned long long)(long long)xv * (unsigned long long)(long long)yv"
    result = ("(%s)(long long)acc"):format(ctype)
  elseif kd == "u" then
    acc, term = "unsigned long long", "acc += (unsigned long long)xv * (unsigned long long)yv"
    result = ("(%s)acc"):format(ctype)
  elseif kd == "c" then
    zero, term = ctype .. "(0, 0)", "acc = acc + (conj_x ? lg_conj(xv) : xv) * (conj_y ? lg_conj(yv) : yv)"
  end
  local operation = ([[
    const long long start = i - left;
    const long long first = start < 0 ? -start : 0;
    const long long last = n2 < n1 - start ? n2 : n1 - start;
    %s acc = %s;
    for (long long k = first; k < last; k++) {
      const %s xv = x[start + k], yv = y[reverse_y ? n2 - 1 - k : k];
      %s;
    }
    out[reverse_out ? length - 1 - i : i] = %s]]):format(acc, zero, ctype, term, result)
  k = ew.ElementwiseKernel(
    ("%s *out, const %s *x, const %s *y, long long n1, long long n2, long long left, long long length, "
     .. "int reverse_y, int conj_x, int conj_y, int reverse_out"):format(ctype, ctype, ctype),
    operation, "correlate_" .. dtype)
  correlate_kernels[dtype] = k
  return k
end

local MODES = {valid = true, same = true, full = true}

-- convolve (convolving) or correlate of a and v in mode, as NumPy's: convolve swaps them
-- where v is the longer and correlates with v reversed; correlate conjugates v (complex
-- ones) and, where v is the longer, correlates v with a and reverses the result.
local function correlation(fname, a, v, mode, opts, convolving)
  check_array(a, 1, fname)
  check_array(v, 2, fname)
  if mode == nil then mode = convolving and "full" or "valid" end
  if not MODES[mode] then
    argerror(3, fname, ("mode must be 'valid', 'same' or 'full', got %s")
                       :format(type(mode) == "string" and "'" .. mode .. "'" or typename(mode)), 2)
  end
  opts = check_options(opts, 4, fname, STREAM)
  for n, x in ipairs{a, v} do
    if x.ndim > 1 or (x.ndim == 0 and not convolving) then
      argerror(n, fname, ("a 1-d array expected, got shape %s"):format(promote.shape_text(x.shape)), 2)
    end
  end
  if a.size == 0 then
    argerror(1, fname, convolving and "a cannot be empty" or "first array argument cannot be empty", 2)
  end
  if v.size == 0 then
    argerror(2, fname, convolving and "v cannot be empty" or "second array argument cannot be empty", 2)
  end
  local dtype = promote.promote_types(a.dtype, v.dtype)
  local work = is_16bit_float(dtype) and "float32" or dtype
  local stream = opts.stream
  local x, y = a, v
  local reverse_y, conj_x, conj_y, reverse_out = 0, 0, 0, 0
  if convolving then
    if v.size > a.size then x, y = v, a end
    reverse_y = 1
  else
    conj_y = kind(dtype) == "c" and 1 or 0
    if v.size > a.size then x, y, conj_x, conj_y, reverse_out = v, a, conj_y, 0, 1 end
  end
  local n1, n2 = x.size, y.size
  local left, length = 0, n1 - n2 + 1
  if mode == "same" then left, length = n2 // 2, n1
  elseif mode == "full" then left, length = n2 - 1, n1 + n2 - 1 end
  local xs, x_copy = contiguous_as(x.ndim == 0 and x:reshape(1) or x, work, stream)
  local ys, y_copy = contiguous_as(y.ndim == 0 and y:reshape(1) or y, work, stream)
  local out = core.array_empty({length}, work)
  correlate_kernel(work)(out, xs, ys, n1, n2, left, length, reverse_y, conj_x, conj_y, reverse_out,
                         {stream = stream})
  release(stream, x_copy, y_copy)
  if work == dtype then return out end
  local result = out:astype(dtype, stream and {stream = stream})
  release(stream, out)
  return result
end

function M.convolve(a, v, mode, opts) return correlation("convolve", a, v, mode, opts, true) end
function M.correlate(a, v, mode, opts) return correlation("correlate", a, v, mode, opts, false) end

-- argwhere and flatnonzero -------------------------------------------------------------------

-- gpuarray.argwhere(a): NumPy's, the (N, ndim) int64 array of the nonzero elements' indices,
-- 1-based as nonzero's: one compaction (which reads its count back) and a kernel an axis,
-- each writing its column.  A 0-d a gives a (1, 0) or (0, 0) array, as NumPy's.
function M.argwhere(a)
  check_array(a, 1, "argwhere")
  if a.ndim == 0 then return core.array_empty({ga.count_nonzero(a), 0}, "int64") end
  if a.size == 0 then return core.array_empty({0, a.ndim}, "int64") end
  local flat = compact.flat_indices(a)
  local out = core.array_empty({flat.size, a.ndim}, "int64")
  if flat.size > 0 then
    local shape, stride = a.shape, 1
    for d = a.ndim, 1, -1 do
      compact.unravel(flat, stride, shape[d], {out = out:select(2, d)})
      stride = stride * shape[d]
    end
  end
  release(nil, flat)
  return out
end

-- gpuarray.flatnonzero(a): NumPy's, the 1-based int64 indices of a's nonzero elements in
-- a's row-major order (those of a:ravel()).
function M.flatnonzero(a)
  check_array(a, 1, "flatnonzero")
  if a.size == 0 then return core.array_empty({0}, "int64") end
  local flat = compact.flat_indices(a)
  return ga.add(flat, 1, {out = flat})
end

-- trapezoid -----------------------------------------------------------------------------------

local TRAPEZOID_OPTIONS = {x = true, dx = true, axis = true, stream = true}

-- gpuarray.trapezoid(y[, opts]) (NumPy 2's; trapz, its old name): the integral of y along
-- axis (the last by default) by the trapezoidal rule, NumPy's sum(d * (y[i + 1] + y[i]) / 2.0)
-- with d the spacing dx (1 by default) or the differences of the sample points x (1-d, along
-- the axis, or of y's shape): one kernel makes the terms (from views of y and x), one
-- reduction sums them.
function M.trapezoid(y, opts)
  check_array(y, 1, "trapezoid")
  opts = check_options(opts, 2, "trapezoid", TRAPEZOID_OPTIONS)
  if y.ndim == 0 then argerror(1, "trapezoid", "a 0-d array has no axis to integrate along") end
  local axis_option = opts.axis == nil and -1 or opts.axis
  local axis = check_axis(axis_option, y.ndim, 2, "trapezoid")
  local n = y.shape[axis]
  local count = math.max(n - 1, 0)
  local later, earlier = y:narrow(axis, math.min(2, n + 1), count), y:narrow(axis, 1, count)
  local stream = opts.stream
  local terms
  local x = opts.x
  if x ~= nil then
    if getmetatable(x) ~= GPUArray then
      argerror(2, "trapezoid", "option 'x' must be a GPUArray, got " .. typename(x))
    end
    if x.freed then argerror(2, "trapezoid", "option 'x' has been freed") end
    local x_later, x_earlier
    if x.ndim == 1 then                       -- along the axis, read by the other axes too
      if x.size ~= n then
        argerror(2, "trapezoid", ("option 'x' has %d points, y %d along axis %d")
                                 :format(x.size, n, axis_option))
      end
      local shape, strides = {}, {}
      for d = 1, y.ndim do shape[d], strides[d] = 1, 0 end
      shape[axis], strides[axis] = count, x.strides[1]
      x_later = view(x:narrow(1, math.min(2, n + 1), count), 0, shape, strides)
      x_earlier = view(x, 0, shape, strides)
    else
      local x_axis = check_axis(axis_option, x.ndim, 2, "trapezoid")
      local m = x.shape[x_axis]
      x_later = x:narrow(x_axis, math.min(2, m + 1), math.max(m - 1, 0))
      x_earlier = x:narrow(x_axis, 1, math.max(m - 1, 0))
      local _, why = promote.broadcast_shapes({x_later.shape, later.shape})
      if why then argerror(2, "trapezoid", "option 'x': " .. why) end
    end
    local integrate = x.dtype == "bool"
      and fused("trapezoid_bool", function(x1, x0, y1, y0) return x1:ne(x0) * (y1 + y0) / 2.0 end)
      or fused("trapezoid", function(x1, x0, y1, y0) return (x1 - x0) * (y1 + y0) / 2.0 end)
    terms = integrate(x_later, x_earlier, later, earlier, {stream = stream})
  else
    local dx = number_option(opts, "dx", 2, "trapezoid", 1)
    terms = fused("trapezoid_dx", function(d, y1, y0) return d * (y1 + y0) / 2.0 end)(
      dx, later, earlier, {stream = stream})
  end
  local sum = ga.sum(terms, {axis = check_axis(axis_option, terms.ndim, 2, "trapezoid"), stream = stream})
  release(stream, terms)
  return sum
end
M.trapz = M.trapezoid

-- linalg.norm -------------------------------------------------------------------------------

local NORM_OPTIONS = {ord = true, axis = true, keepdims = true, stream = true}
local INF = math.huge

-- An order as messages write it.
local function order_text(ord)
  if type(ord) == "string" then return "'" .. ord .. "'" end
  if ord == INF then return "inf" elseif ord == -INF then return "-inf" end
  return tostring(ord)
end

-- The norm op's reduction of x along axis (nil: whole), a new array.
local function reduce(op, x, axis, stream)
  if axis == nil then return (reduction.reduce_all(op, x, nil, stream)) end
  return reduction.reduce_axis("norm", op, x, axis, stream)
end

-- x's magnitudes to the power p summed along axis (nil: all of x), to the power 1 / p (NumPy's
-- general order: each power in the norm's dtype).
local function power_norm(x, p, axis, stream)
  local dtype = reduction.var_dtype(x.dtype)
  local vtype = operators.ctype(dtype)
  local complex = kind(x.dtype) == "c"
  local powers = program("norm_powers|" .. x.dtype, {
    expr = ("pow(%s, (%s)p)"):format(complex and "lg_abs(x)" or ("fabs((%s)x)"):format(vtype), vtype),
    out = dtype, name = "norm_powers_" .. x.dtype,
    operands = {{name = "x", dtype = x.dtype}, {name = "p", dtype = "float64", scalar = true}}})
  local root = program("norm_root|" .. dtype, {
    expr = ("pow((%s)s, (%s)q)"):format(vtype, vtype), out = dtype, name = "norm_root_" .. dtype,
    operands = {{name = "s", dtype = dtype}, {name = "q", dtype = "float64", scalar = true}}})
  local terms = ew.launch(powers, nil, stream, "norm", x, p + 0.0)
  local sum = reduce("sum", terms, axis, stream)
  release(stream, terms)
  return ew.launch(root, sum, stream, "norm", sum, 1 / p)
end

-- NumPy's message for an order without an identity over an empty line.
local function check_not_empty(length, greatest)
  if length == 0 then
    argerror(1, "norm", ("zero-size array to reduction operation %s which has no identity")
                        :format(greatest and "maximum" or "minimum"), 3)
  end
end

-- A vector norm of x along axis (nil: x is 1-d, whole).
local function vector_norm(x, ord, axis, stream)
  local length = axis and x.shape[axis] or x.size
  if ord == nil or ord == 2 then return reduce("norm2", x, axis, stream) end
  if type(ord) == "string" then
    argerror(2, "norm", ("invalid norm order %s for vectors"):format(order_text(ord)), 2)
  end
  if ord == INF then check_not_empty(length, true); return reduce("norm_max", x, axis, stream) end
  if ord == -INF then check_not_empty(length, false); return reduce("norm_min", x, axis, stream) end
  if ord == 0 then return reduce("norm0", x, axis, stream) end
  if ord == 1 then return reduce("norm1", x, axis, stream) end
  return power_norm(x, ord, axis, stream)
end

-- A matrix norm of the 2-d matrices of x's axes row and column.
local function matrix_norm(x, ord, row, column, stream)
  if ord == 2 or ord == -2 or ord == "nuc" then
    argerror(2, "norm", ("matrix norm ord %s needs the singular values (an SVD), which lua-gpu "
                         .. "does not compute"):format(order_text(ord)), 2)
  end
  if ord == nil or ord == "fro" or ord == "f" then
    if x.ndim == 2 then return reduce("norm2", x, nil, stream) end
    local first, second = math.max(row, column), math.min(row, column)
    local squares = reduce("sum_squares", x, first, stream)
    local sum = ga.sum(squares, {axis = second, stream = stream})
    release(stream, squares)
    return require("gpu.cumath").sqrt(sum, {out = sum, stream = stream})
  end
  -- 1 and -1: the greatest (least) of the columns' sums of magnitudes; inf and -inf: of the rows'
  local summed, across
  if ord == 1 or ord == -1 then summed, across = row, column
  elseif ord == INF or ord == -INF then summed, across = column, row
  else
    argerror(2, "norm", ("invalid norm order %s for matrices"):format(order_text(ord)), 2)
  end
  check_not_empty(x.shape[across], ord > 0)
  local sums = reduce("norm1", x, summed, stream)
  if across > summed then across = across - 1 end
  local result = (ord > 0 and ga.max or ga.min)(sums, {axis = across, stream = stream})
  release(stream, sums)
  return result
end

-- linalg.norm(x[, {ord =, axis =, keepdims =, stream =}]): NumPy's, of the float dtype
-- M.var_dtype names (float64 for integers and bools, a complex one's part's).  Without ord
-- and axis the 2-norm of all of x; with axis an integer, vector norms along it: ord 2 (the
-- default), 1, inf, -inf, 0 (the count of nonzero elements) or any p (sum(|x|^p)^(1/p));
-- with axis a pair {row, column} (a 2-d x's by default when ord is given), matrix norms:
-- "fro" (the default), 1, -1, inf, -inf ("nuc", 2 and -2 need an SVD, which is an error).
function M.norm(x, opts)
  check_array(x, 1, "norm")
  opts = check_options(opts, 2, "norm", NORM_OPTIONS)
  local ord, axis = opts.ord, opts.axis
  if ord ~= nil and type(ord) ~= "number" and type(ord) ~= "string" then
    argerror(2, "norm", "option 'ord' must be a number or a string, got " .. typename(ord))
  end
  local keepdims = boolean_option(opts, "keepdims", 2, "norm", false)
  local stream = opts.stream
  local axes                                  -- the reduced axes, 1-based
  if type(axis) == "table" and getmetatable(axis) == nil then
    if #axis ~= 2 then
      argerror(2, "norm", "option 'axis' must be an integer or a pair of integers, got a list of " .. #axis)
    end
    axes = {check_axis(axis[1], x.ndim, 2, "norm"), check_axis(axis[2], x.ndim, 2, "norm")}
    if axes[1] == axes[2] then argerror(2, "norm", "option 'axis' names one axis twice") end
  elseif axis ~= nil then
    axes = {check_axis(axis, x.ndim, 2, "norm")}
  end
  local result
  if axes == nil and (ord == nil or ((ord == "fro" or ord == "f") and x.ndim == 2)
                      or (ord == 2 and x.ndim == 1)) then
    result = reduce("norm2", x, nil, stream)    -- all of x, any shape
    axes = {}
    for d = 1, x.ndim do axes[d] = d end
  else
    if axes == nil then
      if x.ndim ~= 1 and x.ndim ~= 2 then
        argerror(1, "norm", ("an order needs a 1-d or 2-d array, or option 'axis'; got a %d-d array")
                            :format(x.ndim))
      end
      axes = x.ndim == 1 and {1} or {1, 2}
    end
    if #axes == 1 then
      result = vector_norm(x, ord, x.ndim > 1 and axes[1] or nil, stream)
    else
      result = matrix_norm(x, ord, axes[1], axes[2], stream)
    end
  end
  if not keepdims then return result end
  local shape = x.shape
  for _, d in ipairs(axes) do shape[d] = 1 end
  return core.array_view(result, 0, result.dtype, shape)
end

function M.install(gpu)
  ga = gpu.gpuarray
  compact = require "gpu.compact"
  for _, name in ipairs{"around", "round", "nan_to_num", "isin", "digitize", "average", "cov",
                        "corrcoef", "cross", "kron", "convolve", "correlate", "argwhere",
                        "flatnonzero", "trapezoid", "trapz"} do
    ga[name] = M[name]
  end
  ga.linalg = ga.linalg or {}
  ga.linalg.norm = M.norm
end

return M
