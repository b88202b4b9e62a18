-- gpu.polynomial: NumPy's legacy polynomial functions (np.poly*: coefficients highest power
-- first), its numerical differences and a few more constructors and views, in gpu.gpuarray
-- with NumPy's names, defaults and result dtypes (1-based axes, as everywhere here):
--   identity(n[, dtype]), tri(N[, M][, {k =, dtype =}]), diagflat(v[, {k =}]),
--   vander(x[, N][, {increasing =}]): NumPy's, of promote_types(x.dtype, int64) (x^k by
--     repeated multiplication, as NumPy's multiply.accumulate)
--   logspace(start, stop[, num][, {endpoint =, base =, dtype =}]), geomspace(start, stop[,
--     num][, {endpoint =, dtype =}]): real dtypes only; full_like(a, value[, dtype])
--   broadcast_arrays(a, b, ...): views of each, broadcast to their common shape
--   rollaxis(a, axis[, start]): NumPy's view, start 1-based (1 .. ndim + 1; default 1)
--   ediff1d(ary[, {to_end =, to_begin =, stream =}]): the flat differences, in ary's dtype
--   gradient(f[, spacing...][, {axis =, edge_order =, stream =}]): one array an axis (several
--     results for several axes); spacing Lua numbers or 1-d coordinate arrays
--   polyval(p, x[, {stream =}]), polyadd(a1, a2[, opts]), polysub, polymul, polyder(p[, m[,
--     opts]]), polyint(p[, m[, k[, opts]]]), polyfit(x, y, deg[, opts]), roots(p[, opts])
--   histogram2d(x, y[, {bins =, range =, weights =, stream =}]) -> H, xedges, yedges
-- Every value is computed as NumPy computes it, step by step in the same dtype, so that
-- integer and most float results match NumPy's exactly: polyval's Horner steps unfused
-- (__dmul_rn, __dadd_rn; 16-bit floats rounded after each operation), polyder's falling
-- factorials and polyint's divisions one at a time.  Complex products may be fused by the
-- compiler, and gradient's three-term sums too, so those agree to rounding only.
--
-- Passes: one generated kernel for tri, vander, logspace, geomspace, polyval, polyder and
-- polyint; one a region (inside, first, last) and an axis for gradient; lstsq on the
-- Vandermonde matrix with NumPy's column scaling for polyfit; the companion matrix's eigvals
-- for roots, which reads p back (the roots' count depends on its leading and trailing zeros).

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local promote = require "gpu.promote"
local reduction = require "gpu.reduction"
local operators = require "gpu.operators"

local M = {}

local argerror, typename = args.argerror, args.typename
local check_array, check_options = reduction.check_array, reduction.check_options
local GPUArray = core.types.GPUArray

local ga   -- gpu.gpuarray, set by install

local STREAM = {stream = true}

local function kind(dtype) return promote.kind(dtype) end
local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end
local function number_kind(v) return math.type(v) or typename(v) end

-- Frees the temporaries among the arguments (nil and false skipped) once the stream is done.
local release = core.free_all_after

local program = ew.keyed_programs()   -- ew.program(spec) made once a key

-- The C expression of expr (of dtype from) converted to dtype to, as astype converts.
local function converted(expr, from, to)
  if from == to then return expr end
  return (operators.expression("astype", {from}, {expr}, to))
end

local function check_dtype(dtype, n, fname)
  if type(dtype) ~= "string" or promote.info[dtype] == nil then
    argerror(n, fname, ("unknown dtype '%s'"):format(tostring(dtype)), 2)
  end
  return dtype
end

-- A count (argument at of fname): a whole number from 0 on.
local function check_count(n, at, fname, what)
  local count = math.tointeger(n)
  if count == nil or count < 0 then
    argerror(at, fname, ("%s must be a whole number from 0 on, got %s"):format(what, tostring(n)), 2)
  end
  return count
end

-- Option name, an integer (default where absent).
local function integer_option(opts, name, at, fname, default)
  local v = opts[name]
  if v == nil then return default end
  if math.type(v) ~= "integer" then
    argerror(at, fname, ("option '%s' must be an integer, got %s"):format(name, number_kind(v)), 2)
  end
  return v
end

-- a, a 1-d array (or 0-d, read as one element, where zero_d): a 1-d view of it.
local function coefficients(a, n, fname, zero_d)
  check_array(a, n, fname)
  if a.ndim == 0 and zero_d then return a:reshape(1) end
  if a.ndim ~= 1 then
    argerror(n, fname, ("a 1-d array of coefficients expected, got shape %s")
                       :format(promote.shape_text(a.shape)), 2)
  end
  return a
end

-- Constructors -------------------------------------------------------------------------------

local DTYPE = {dtype = true}

-- The dtype of a constructor called (..., dtype) or (..., {dtype =}) at argument n.
local function dtype_argument(dtype, opts, n, fname, default)
  if type(dtype) == "table" and opts == nil then dtype, opts, n = nil, dtype, n - 1 end
  opts = check_options(opts, n + 1, fname, DTYPE)
  if opts.dtype ~= nil then
    if dtype ~= nil then argerror(n, fname, "dtype given twice (here and as option 'dtype')", 2) end
    dtype, n = opts.dtype, n + 1
  end
  if dtype == nil then return default end
  return check_dtype(dtype, n, fname)
end

-- gpuarray.identity(n[, dtype]) (or {dtype =}): NumPy's n x n identity, float64 by default.
function M.identity(n, dtype, opts)
  n = check_count(n, 1, "identity", "n")
  return ga.eye(n, {dtype = dtype_argument(dtype, opts, 2, "identity", "float64")})
end

local TRI_OPTIONS = {k = true, dtype = true}

-- gpuarray.tri(N[, M][, {k =, dtype =}]): NumPy's N x M array (M = N) of ones at and below
-- diagonal k, zeros above: one kernel, an element's row and column from its flat index.
function M.tri(n, m, opts)
  local opts_at = 3
  if type(m) == "table" and opts == nil then m, opts, opts_at = nil, m, 2 end
  n = check_count(n, 1, "tri", "N")
  m = m == nil and n or check_count(m, 2, "tri", "M")
  opts = check_options(opts, opts_at, "tri", TRI_OPTIONS)
  local k = integer_option(opts, "k", opts_at, "tri", 0)
  local dtype = opts.dtype == nil and "float64" or check_dtype(opts.dtype, opts_at, "tri")
  local out = core.array_empty({n, m}, dtype)
  if out.size == 0 then return out end
  local t = operators.ctype(dtype)
  local p = program("tri|" .. dtype, {
    expr = ("lg_i %% columns - lg_i / columns <= k ? (%s)1 : (%s)0"):format(t, t),
    out = dtype, name = "tri_" .. dtype,
    operands = {{name = "columns", dtype = "int64", scalar = true},
                {name = "k", dtype = "int64", scalar = true}}})
  return ew.launch(p, out, nil, "tri", m, k)
end

local K_OPTION = {k = true}

-- gpuarray.diagflat(v[, {k =}]): NumPy's, v's elements (row-major) on diagonal k of a square
-- array of zeros.
function M.diagflat(v, opts)
  check_array(v, 1, "diagflat")
  opts = check_options(opts, 2, "diagflat", K_OPTION)
  local k = integer_option(opts, "k", 2, "diagflat", 0)
  local flat = v:ravel()
  local result = ga.diag(flat.ndim == 1 and flat or flat:reshape(flat.size), {k = k})
  if not v.is_contiguous then release(nil, flat) end    -- ravel's copy
  return result
end

local VANDER_PREAMBLE = [[
// x to the power e by repeated multiplication, as NumPy's multiply.accumulate builds a row
// (integers wrapping, in unsigned arithmetic).
__device__ __forceinline__ long long lg_vander_power(long long x, long long e) {
  unsigned long long v = 1;
  for (long long j = 0; j < e; j++) v *= (unsigned long long)x;
  return (long long)v;
}
template <typename T> __device__ __forceinline__ T lg_vander_power(T x, long long e) {
  T v = (T)1;
  for (long long j = 0; j < e; j++) v = v * x;
  return v;
}]]

-- vander's kernel into out (n x N) of dtype from the 1-d x.
local function vandermonde(x, columns, increasing, dtype, stream, fname)
  local out = core.array_empty({x.size, columns}, dtype)
  if out.size == 0 then return out end
  local p = program(("vander|%s|%s"):format(x.dtype, dtype), {
    expr = ("lg_vander_power(%s, increasing ? lg_i %% columns : columns - 1 - lg_i %% columns)")
           :format(converted("x", x.dtype, dtype)),
    out = dtype, name = ("vander_%s_%s"):format(x.dtype, dtype), preamble = VANDER_PREAMBLE,
    operands = {{name = "x", dtype = x.dtype}, {name = "columns", dtype = "int64", scalar = true},
                {name = "increasing", dtype = "int32", scalar = true}}})
  local rows = core.array_view(x, 0, x.dtype, {x.size, columns}, {x.strides[1], 0})
  return ew.launch(p, out, stream, fname, rows, columns, increasing and 1 or 0)
end

local VANDER_OPTIONS = {increasing = true}

-- gpuarray.vander(x[, N][, {increasing =}]): NumPy's Vandermonde matrix of the 1-d x, N
-- columns (x's length by default) of the powers N - 1 .. 0 (increasing: 0 .. N - 1), in
-- NumPy's dtype promote_types(x.dtype, int64): int64, float64 or complex128.
function M.vander(x, n, opts)
  check_array(x, 1, "vander")
  local opts_at = 3
  if type(n) == "table" and opts == nil then n, opts, opts_at = nil, n, 2 end
  if x.ndim ~= 1 then
    argerror(1, "vander", ("x must be a 1-d array, got shape %s"):format(promote.shape_text(x.shape)))
  end
  n = n == nil and x.size or check_count(n, 2, "vander", "N")
  opts = check_options(opts, opts_at, "vander", VANDER_OPTIONS)
  local increasing = args.typed_option(opts, "increasing", "boolean", opts_at, "vander", false)
  return vandermonde(x, n, increasing, promote.promote_types(x.dtype, "int64"), nil, "vander")
end

-- A Lua number for argument n of fname (typed scalars as the numbers they stand for).
local function real_number(v, n, fname)
  if args.is_scalar(v) then v = args.scalar_number(v) end
  if math.type(v) == nil then argerror(n, fname, "number expected, got " .. typename(v), 2) end
  return v
end

-- logspace's and geomspace's num (argument 3, or an options table there) and options.
local function spacing_arguments(num, opts, fname, known)
  local opts_at = 4
  if type(num) == "table" and opts == nil then num, opts, opts_at = nil, num, 3 end
  if args.is_scalar(num) then num = args.scalar_number(num) end
  if num == nil then num = 50 end
  if math.type(num) ~= "integer" or num < 0 then
    argerror(3, fname, "num must be a non-negative integer, got " .. tostring(num), 2)
  end
  opts = check_options(opts, opts_at, fname, known)
  local endpoint = args.typed_option(opts, "endpoint", "boolean", opts_at, fname, true, 2)
  local dtype = opts.dtype == nil and "float64" or check_dtype(opts.dtype, opts_at, fname)
  if kind(dtype) == "c" then argerror(opts_at, fname, "a real dtype expected, got " .. dtype, 2) end
  return num, opts, opts_at, endpoint, dtype
end

-- linspace's values (NumPy's start + i * step, stop exact at the end) as a C expression.
local LINSPACE_VALUE = "(lg_i == last ? stop : __dadd_rn(__dmul_rn((double)lg_i, step), start))"

-- linspace's step and the index of its exact stop (-1: none) for num values.
local function linspace_step(start, stop, num, endpoint)
  local divisions = endpoint and num - 1 or num
  local step = divisions > 0 and (stop - start) / divisions or 0.0
  return step, (endpoint and num > 1) and num - 1 or -1
end

local LOGSPACE_OPTIONS = {endpoint = true, base = true, dtype = true}

-- gpuarray.logspace(start, stop[, num][, {endpoint = true, base = 10, dtype =}]): NumPy's,
-- base to the powers linspace(start, stop, num) gives, in float64, converted to dtype.
function M.logspace(start, stop, num, opts)
  start, stop = real_number(start, 1, "logspace"), real_number(stop, 2, "logspace")
  local opts_at, endpoint, dtype
  num, opts, opts_at, endpoint, dtype = spacing_arguments(num, opts, "logspace", LOGSPACE_OPTIONS)
  local base = args.typed_option(opts, "base", "number", opts_at, "logspace", 10.0)
  local out = core.array_empty({num}, dtype)
  if num == 0 then return out end
  local step, last = linspace_step(start, stop, num, endpoint)
  local p = program("logspace|" .. dtype, {
    expr = converted(("pow(base, %s)"):format(LINSPACE_VALUE), "float64", dtype),
    out = dtype, name = "logspace_" .. dtype,
    operands = {{name = "base", dtype = "float64", scalar = true},
                {name = "start", dtype = "float64", scalar = true},
                {name = "step", dtype = "float64", scalar = true},
                {name = "stop", dtype = "float64", scalar = true},
                {name = "last", dtype = "int64", scalar = true}}})
  return ew.launch(p, out, nil, "logspace", base + 0.0, start + 0.0, step, stop + 0.0, last)
end

local GEOMSPACE_OPTIONS = {endpoint = true, dtype = true}

-- gpuarray.geomspace(start, stop[, num][, {endpoint = true, dtype =}]): NumPy's geometric
-- sequence, computed as NumPy's: start's sign taken out, 10 to the powers of the linspace of
-- the logarithms (log10 here, on the host, as NumPy's), the ends start and stop exactly.
function M.geomspace(start, stop, num, opts)
  local _
  start, stop = real_number(start, 1, "geomspace"), real_number(stop, 2, "geomspace")
  local endpoint, dtype
  num, opts, _, endpoint, dtype = spacing_arguments(num, opts, "geomspace", GEOMSPACE_OPTIONS)
  if start == 0 or stop == 0 then
    argerror(start == 0 and 1 or 2, "geomspace", "a geometric sequence cannot include zero")
  end
  local out = core.array_empty({num}, dtype)
  if num == 0 then return out end
  local sign = start < 0 and -1.0 or 1.0
  local first, final = start / sign, stop / sign
  local log_start, log_stop = math.log(first, 10), math.log(final, 10)
  local step, last = linspace_step(log_start, log_stop, num, endpoint)
  local value = ("sign * (lg_i == 0 ? first : (lg_i == last ? final : pow(10.0, %s)))")
                :format("__dadd_rn(__dmul_rn((double)lg_i, step), start)")
  local p = program("geomspace|" .. dtype, {
    expr = converted(value, "float64", dtype), out = dtype, name = "geomspace_" .. dtype,
    operands = {{name = "start", dtype = "float64", scalar = true},
                {name = "step", dtype = "float64", scalar = true},
                {name = "last", dtype = "int64", scalar = true},
                {name = "first", dtype = "float64", scalar = true},
                {name = "final", dtype = "float64", scalar = true},
                {name = "sign", dtype = "float64", scalar = true}}})
  return ew.launch(p, out, nil, "geomspace", log_start, step, last, first + 0.0, final + 0.0, sign)
end

-- gpuarray.full_like(a, value[, dtype]) (or {dtype =}): NumPy's, an array of a's shape (and
-- dtype unless named) filled with value, which must fit the dtype as full's must.
function M.full_like(a, value, dtype, opts)
  check_array(a, 1, "full_like")
  dtype = dtype_argument(dtype, opts, 3, "full_like", a.dtype)
  if not args.is_scalar(value) then
    local bad = promote.scalar_problem(value, dtype, true)
    if bad then argerror(2, "full_like", bad) end
  end
  return ga.full(a.shape, value, dtype)
end

-- gpuarray.broadcast_arrays(a, b, ...): NumPy's, a view of each array as their common shape
-- (broadcast_to's: read them, do not write into them), one result an argument.
function M.broadcast_arrays(...)
  local n = select("#", ...)
  local arrays = {...}
  local shape = {}
  for i = 1, n do
    local a = check_array(arrays[i], i, "broadcast_arrays")
    local s = promote.broadcast_shapes({shape, a.shape})
    if s == nil then
      argerror(i, "broadcast_arrays", ("shape %s does not broadcast with the shape %s of the arrays before it")
                                     :format(promote.shape_text(a.shape), promote.shape_text(shape)))
    end
    shape = s
  end
  local views = {}
  for i = 1, n do views[i] = ga.broadcast_to(arrays[i], shape) end
  return table.unpack(views, 1, n)
end

-- gpuarray.rollaxis(a, axis[, start]): NumPy's view with axis moved to just before the axis
-- now at place start (1-based: 1, the default, makes it the first; ndim + 1 the last;
-- negatives count from the end as axes do, -1 being before the last axis).
function M.rollaxis(a, axis, start)
  check_array(a, 1, "rollaxis")
  local ndim = a.ndim
  if math.type(axis) ~= "integer" then
    argerror(2, "rollaxis", "axis must be an integer, got " .. number_kind(axis))
  end
  local moving = axis < 0 and ndim + 1 + axis or axis
  if moving < 1 or moving > ndim then
    argerror(2, "rollaxis", ("axis %d is out of range for a %d-d array"):format(axis, ndim))
  end
  if start == nil then start = 1 end
  if math.type(start) ~= "integer" then
    argerror(3, "rollaxis", "start must be an integer, got " .. number_kind(start))
  end
  local place = start < 0 and ndim + 1 + start or start
  if place < 1 or place > ndim + 1 then
    argerror(3, "rollaxis", ("start %d is out of range for a %d-d array (1 to %d, or -%d to -1)")
                            :format(start, ndim, ndim + 1, ndim))
  end
  if moving < place then place = place - 1 end
  local order = {}
  for d = 1, ndim do
    if d ~= moving then order[#order + 1] = d end
  end
  table.insert(order, place, moving)
  return a:transpose(order)
end

-- Differences ---------------------------------------------------------------------------------

-- NumPy's same_kind casting between kinds: bool, unsigned, signed, float, complex, each kind
-- casting to itself and those after it.
local KIND_RANK = {b = 1, u = 2, i = 3, f = 4, c = 5}

local EDIFF1D_OPTIONS = {to_end = true, to_begin = true, stream = true}

-- ediff1d's option `name` as a flat array (and whether it is a copy to free), or nil: a
-- GPUArray, a number, a boolean or a gpu.complex, or a list of them (as NumPy's asanyarray
-- reads them: Lua integers int64, floats float64), which must cast to dtype by same_kind.
local function end_values(opts, name, dtype, stream)
  local v = opts[name]
  if v == nil then return nil end
  local values, made = v, false
  if getmetatable(v) == GPUArray then
    if v.freed then argerror(2, "ediff1d", ("option '%s' has been freed"):format(name), 2) end
  elseif is_list(v) or type(v) == "number" or type(v) == "boolean" or require("gpu.complex").is_complex(v) then
    local ok, array = pcall(ga.to_gpu, is_list(v) and v or {v})
    if not ok then
      argerror(2, "ediff1d", ("option '%s' must be an array, a number or a list of numbers"):format(name), 2)
    end
    values, made = array, true
  else
    argerror(2, "ediff1d", ("option '%s' must be a GPUArray, a number or a list of numbers, got %s")
                           :format(name, typename(v)), 2)
  end
  if KIND_RANK[kind(values.dtype)] > KIND_RANK[kind(dtype)] then
    if made then release(nil, values) end
    argerror(2, "ediff1d", ("option '%s' of dtype %s cannot be cast to %s by the same_kind rule")
                           :format(name, values.dtype, dtype), 2)
  end
  local flat = values:ravel()
  if not values.is_contiguous then
    if made then release(stream, values) end
    values, made = flat, true
  else
    values = flat
  end
  return values, made
end

-- gpuarray.ediff1d(ary[, {to_end =, to_begin =, stream =}]): NumPy's, the differences of
-- ary's consecutive elements in row-major order, in ary's dtype (integers wrap), with to_begin's
-- values before them and to_end's after (each cast to ary's dtype).
function M.ediff1d(ary, opts)
  check_array(ary, 1, "ediff1d")
  opts = check_options(opts, 2, "ediff1d", EDIFF1D_OPTIONS)
  local dtype = ary.dtype
  if dtype == "bool" then argerror(1, "ediff1d", "differences of bool arrays are not defined") end
  local stream = opts.stream
  local begin_values, begin_made = end_values(opts, "to_begin", dtype, stream)
  local ok, end_values_, end_made = pcall(end_values, opts, "to_end", dtype, stream)
  if not ok then                                   -- to_begin's copy is not left behind
    release(stream, begin_made and begin_values)
    error(end_values_, 0)
  end
  local flat = ary:ravel()
  local n = math.max(flat.size - 1, 0)
  local nb = begin_values and begin_values.size or 0
  local ne = end_values_ and end_values_.size or 0
  local out = core.array_empty({nb + n + ne}, dtype)
  if n > 0 then
    ga.sub(flat:narrow(1, 2, n), flat:narrow(1, 1, n), {out = out:narrow(1, nb + 1, n), stream = stream})
  end
  if nb > 0 then
    ga._apply("astype", "ediff1d", {begin_values}, {out = out:narrow(1, 1, nb), stream = stream}, dtype)
  end
  if ne > 0 then
    ga._apply("astype", "ediff1d", {end_values_}, {out = out:narrow(1, nb + n + 1, ne), stream = stream}, dtype)
  end
  release(stream, begin_made and begin_values, end_made and end_values_, not ary.is_contiguous and flat)
  return out
end

-- gradient -------------------------------------------------------------------------------------

local fused = require("gpu.fuse").once   -- the expressions below, each fused once

-- The fused expressions, each result converted to dtype (the gradient's): NumPy's formulas
-- with its operands (Lua numbers stand for NumPy's Python scalars, 0-d views of the spacings
-- for its array elements).
local function difference_quotient(dtype)          -- (f1 - f0) / d
  return fused("gradient_quotient|" .. dtype, function(f1, f0, d) return ((f1 - f0) / d):astype(dtype) end)
end

local function three_terms(dtype)                  -- a f0 + b f1 + c f2, uniform spacing
  return fused("gradient_terms|" .. dtype, function(f0, f1, f2, a, b, c)
    return (a * f0 + b * f1 + c * f2):astype(dtype)
  end)
end

local function uneven_inside(dtype)                -- second order, spacings h1 then h2
  return fused("gradient_uneven|" .. dtype, function(f0, f1, f2, h1, h2)
    local a = -h2 / (h1 * (h1 + h2))
    local b = (h2 - h1) / (h1 * h2)
    local c = h1 / (h2 * (h1 + h2))
    return (a * f0 + b * f1 + c * f2):astype(dtype)
  end)
end

local function uneven_first(dtype)                 -- second order at the start
  return fused("gradient_uneven_first|" .. dtype, function(f0, f1, f2, h1, h2)
    local a = -(2.0 * h1 + h2) / (h1 * (h1 + h2))
    local b = (h1 + h2) / (h1 * h2)
    local c = -h1 / (h2 * (h1 + h2))
    return (a * f0 + b * f1 + c * f2):astype(dtype)
  end)
end

local function uneven_last(dtype)                  -- second order at the end
  return fused("gradient_uneven_last|" .. dtype, function(f0, f1, f2, h1, h2)
    local a = h2 / (h1 * (h1 + h2))
    local b = -(h2 + h1) / (h1 * h2)
    local c = (2.0 * h2 + h1) / (h2 * (h1 + h2))
    return (a * f0 + b * f1 + c * f2):astype(dtype)
  end)
end

local GRADIENT_OPTIONS = {axis = true, edge_order = true, stream = true}

-- The spacing of each axis (a Lua number, or the 1-d differences of the coordinates and
-- whether they are a copy), from the arguments after f (n of them, starting at argument 2).
local function spacings(f, axes, given, n)
  local count = #axes
  local list = {}
  if n == 0 then
    for k = 1, count do list[k] = 1.0 end
    return list
  end
  local single = args.is_scalar(given[1]) and args.scalar_number(given[1]) or given[1]
  if n == 1 and type(single) == "number" then
    for k = 1, count do list[k] = single end
    return list
  end
  if n ~= count then
    argerror(2, "gradient", ("expected one spacing or one an axis (%d), got %d"):format(count, n), 2)
  end
  for k = 1, count do
    local v, at = given[k], k + 1
    if args.is_scalar(v) then v = args.scalar_number(v) end
    if type(v) == "number" then list[k] = v
    elseif getmetatable(v) == GPUArray then
      if v.freed then argerror(at, "gradient", "array has been freed", 2) end
      local length = f.shape[axes[k]]
      if v.ndim ~= 1 then
        argerror(at, "gradient", ("coordinates must be a 1-d array, got shape %s")
                                 :format(promote.shape_text(v.shape)), 2)
      end
      if v.size ~= length then
        argerror(at, "gradient", ("coordinates of %d points, f has %d along axis %d")
                                 :format(v.size, length, axes[k]), 2)
      end
      local vk = kind(v.dtype)
      if vk == "b" or vk == "c" then
        argerror(at, "gradient", ("coordinates must be real numbers, got %s"):format(v.dtype), 2)
      end
      list[k] = v
    else
      argerror(at, "gradient", "number or GPUArray expected, got " .. typename(v), 2)
    end
  end
  return list
end

-- A view of the 1-d d (length count, from its element first) along axis of an ndim-d array,
-- length 1 along the others.
local function along(d, first, count, axis, ndim)
  local shape, strides = {}, {}
  for k = 1, ndim do shape[k], strides[k] = 1, 0 end
  shape[axis], strides[axis] = count, d.strides[1]
  return core.array_view(d, count == 0 and 0 or (first - 1) * d.strides[1], d.dtype, shape, strides)
end

-- The 0-d view of element i of the 1-d d.
local function element(d, i)
  return core.array_view(d, (i - 1) * d.strides[1], d.dtype, {})
end

-- The gradient of f (float or complex) along axis, with the spacing h, into a new array.
local function gradient_along(f, axis, h, edge_order, stream)
  local dtype = f.dtype
  local n = f.shape[axis]
  local out = core.array_empty(f.shape, dtype)
  local on = {stream = stream}
  local function part(o, first, count) return o:narrow(axis, first, count) end
  local quotient = difference_quotient(dtype)
  local coordinates = type(h) ~= "number"
  local d, d_made
  if coordinates then
    local x = h
    local xk = kind(x.dtype)
    if xk == "i" or xk == "u" then x = x:astype("float64", on) end
    d = ga.diff(x, {stream = stream})
    d_made = true
    if x ~= h then release(stream, x) end
  end
  -- inside: second-order central differences
  local inner = n - 2
  if inner > 0 then
    local o = part(out, 2, inner)
    if coordinates then
      uneven_inside(dtype)(part(f, 1, inner), part(f, 2, inner), part(f, 3, inner),
                           along(d, 1, inner, axis, f.ndim), along(d, 2, inner, axis, f.ndim),
                           {out = o, stream = stream})
    else
      quotient(part(f, 3, inner), part(f, 1, inner), 2.0 * h, {out = o, stream = stream})
    end
  end
  -- the ends
  if edge_order == 1 then
    quotient(part(f, 2, 1), part(f, 1, 1), coordinates and element(d, 1) or h,
             {out = part(out, 1, 1), stream = stream})
    quotient(part(f, n, 1), part(f, n - 1, 1), coordinates and element(d, n - 1) or h,
             {out = part(out, n, 1), stream = stream})
  elseif coordinates then
    uneven_first(dtype)(part(f, 1, 1), part(f, 2, 1), part(f, 3, 1), element(d, 1), element(d, 2),
                        {out = part(out, 1, 1), stream = stream})
    uneven_last(dtype)(part(f, n - 2, 1), part(f, n - 1, 1), part(f, n, 1), element(d, n - 2),
                       element(d, n - 1), {out = part(out, n, 1), stream = stream})
  else
    local terms = three_terms(dtype)
    terms(part(f, 1, 1), part(f, 2, 1), part(f, 3, 1), -1.5 / h, 2.0 / h, -0.5 / h,
          {out = part(out, 1, 1), stream = stream})
    terms(part(f, n - 2, 1), part(f, n - 1, 1), part(f, n, 1), 0.5 / h, -2.0 / h, 1.5 / h,
          {out = part(out, n, 1), stream = stream})
  end
  if d_made then release(stream, d) end
  return out
end

-- gpuarray.gradient(f[, spacing...][, {axis =, edge_order = 1, stream =}]): NumPy's gradient,
-- second-order central differences inside and one-sided differences of edge_order 1 or 2 at
-- the ends, along each axis (all by default; axis an integer or a list), one result an axis.
-- Spacing: none (1), one Lua number for every axis, or one an axis, each a number or the 1-d
-- coordinates along it (non-uniform differences, NumPy's formulas).  The results are of f's
-- dtype for floats and complex values, float64 for integers (converted first, as NumPy's).
function M.gradient(f, ...)
  check_array(f, 1, "gradient")
  local given = table.pack(...)
  local opts = {}
  local opts_at = given.n + 1
  if given.n > 0 and is_list(given[given.n]) then
    opts = check_options(given[given.n], opts_at, "gradient", GRADIENT_OPTIONS)
    given.n = given.n - 1
  end
  if f.ndim == 0 then argerror(1, "gradient", "a 0-d array has no axis to take a gradient along") end
  local fk = kind(f.dtype)
  if fk == "b" then argerror(1, "gradient", "differences of bool arrays are not defined") end
  local axes = {}
  if opts.axis == nil then
    for d = 1, f.ndim do axes[d] = d end
  elseif is_list(opts.axis) then
    local seen = {}
    for k, a in ipairs(opts.axis) do
      axes[k] = args.check_axis(a, f.ndim, opts_at, "gradient")
      if seen[axes[k]] then argerror(opts_at, "gradient", ("repeated axis %d"):format(axes[k])) end
      seen[axes[k]] = true
    end
  else
    axes[1] = args.check_axis(opts.axis, f.ndim, opts_at, "gradient")
  end
  local edge_order = opts.edge_order == nil and 1 or opts.edge_order
  if edge_order ~= 1 and edge_order ~= 2 then
    argerror(opts_at, "gradient", "option 'edge_order' must be 1 or 2, got " .. tostring(edge_order))
  end
  local h = spacings(f, axes, given, given.n)
  for _, axis in ipairs(axes) do
    if f.shape[axis] < edge_order + 1 then
      argerror(1, "gradient", ("axis %d has %d elements; edge_order %d needs at least %d")
                              :format(axis, f.shape[axis], edge_order, edge_order + 1))
    end
  end
  local stream = opts.stream
  local values = f
  if fk == "i" or fk == "u" then values = f:astype("float64", {stream = stream}) end
  local results = {}
  for k, axis in ipairs(axes) do results[k] = gradient_along(values, axis, h[k], edge_order, stream) end
  if values ~= f then release(stream, values) end
  return table.unpack(results, 1, #axes)
end

-- Polynomials ----------------------------------------------------------------------------------

-- polyval's Horner step y * x + c for each computing dtype, each operation rounded as NumPy's
-- (unfused; 16-bit floats in float with the result of each rounded to 16 bits; integers in
-- 64-bit unsigned arithmetic, which wraps as any narrower one does, stored back once).
local HORNER = {
  float64 = {ctype = "double", step = "__dadd_rn(__dmul_rn(y, v), c)"},
  float32 = {ctype = "float", step = "__fadd_rn(__fmul_rn(y, v), c)"},
  float16 = {ctype = "float", work = "float32",
             step = "lg_round_half(__fadd_rn(lg_round_half(__fmul_rn(y, v)), c))"},
  bfloat16 = {ctype = "float", work = "float32",
              step = "lg_round_bf16(__fadd_rn(lg_round_bf16(__fmul_rn(y, v)), c))"},
  complex64 = {ctype = "lg_complex64", step = "y * v + c"},
  complex128 = {ctype = "lg_complex128", step = "y * v + c"},
  bool = {ctype = "bool", step = "(y && v) || c"},
}

local horner_kernels = {}
local function horner_kernel(dtype)
  local k = horner_kernels[dtype]
  if k then return k end
  local spec = HORNER[dtype]
  local ctype, acc, step, zero, result = nil, nil, nil, "0", nil
  if spec then
    ctype, acc, step = spec.ctype, spec.ctype, spec.step
    result = "y"
  else                                   -- integers
    ctype = core.dtype(dtype).ctype
    acc, step, result = "unsigned long long", "y * v + c", ("(%s)y"):format(ctype)
  end
  local value = spec and "x[i]" or "(unsigned long long)x[i]"
  local coefficient = spec and "p[k]" or "(unsigned long long)p[k]"
  k = ew.ElementwiseKernel(
    ("%s *out, const %s *x, const %s *p, long long n"):format(ctype, ctype, ctype),
    ("%s y = %s; const %s v = %s; for (long long k = 0; k < n; k++) { const %s c = %s; y = %s; } out[i] = %s")
      :format(acc, acc == "bool" and "false" or ("(%s)%s"):format(acc, zero), acc, value, acc, coefficient,
              step, result),
    "polyval_" .. dtype)
  horner_kernels[dtype] = k
  return k
end

-- a as a contiguous array of dtype: a itself, or a copy (then also returned second).
local function contiguous_as(a, dtype, stream)
  if a.dtype == dtype and a.is_contiguous then return a, nil end
  local copy = a:astype(dtype, {stream = stream})
  return copy, copy
end

-- gpuarray.polyval(p, x[, {stream =}]): NumPy's, the polynomial with the coefficients p (1-d,
-- highest power first) at each element of x, by Horner's rule (y = y * x + p[k]) in one
-- kernel, in promote_types(p.dtype, x.dtype) (x's dtype, zeros, for an empty p).
function M.polyval(p, x, opts)
  p = coefficients(p, 1, "polyval")
  check_array(x, 2, "polyval")
  opts = check_options(opts, 3, "polyval", STREAM)
  local stream = opts.stream
  if p.size == 0 then return ga.zeros_like(x) end
  local dtype = promote.promote_types(p.dtype, x.dtype)
  local work = HORNER[dtype] and HORNER[dtype].work or dtype
  local out = core.array_empty(x.shape, work)
  if x.size > 0 then
    local xs, x_copy = contiguous_as(x, work, stream)
    local ps, p_copy = contiguous_as(p, work, stream)
    horner_kernel(dtype)(out, xs, ps, p.size, {stream = stream})
    release(stream, x_copy, p_copy)
  end
  if work == dtype then return out end
  local result = out:astype(dtype, {stream = stream})
  release(stream, out)
  return result
end

-- polyadd's and polysub's leading part, the longer's coefficients op 0 (or 0 op them):
-- NumPy's sum or difference with the shorter padded by zeros, in dtype.
local function padded_program(op, from, dtype, zero_first)
  local value, zero = converted("v", from, dtype), ("((%s)0)"):format(operators.ctype(dtype))
  local expr = operators.expression(op, {dtype, dtype}, zero_first and {zero, value} or {value, zero})
  return program(("poly%s|%s|%s|%s"):format(op, from, dtype, zero_first), {
    expr = expr, out = dtype, name = ("poly%s_%s_%s"):format(op, from, dtype),
    operands = {{name = "v", dtype = from}}})
end

-- polyadd and polysub (fname) of a1 and a2: NumPy's, the shorter padded with leading zeros.
local function combined(fname, op, a1, a2, opts)
  a1 = coefficients(a1, 1, fname, true)
  a2 = coefficients(a2, 2, fname, true)
  opts = check_options(opts, 3, fname, STREAM)
  local dtype = promote.promote_types(a1.dtype, a2.dtype)
  if op == "sub" and dtype == "bool" then
    argerror(1, fname, "differences of bool arrays are not defined", 2)
  end
  local stream = opts.stream
  local n1, n2 = a1.size, a2.size
  if n1 == n2 then return ga[op](a1, a2, {stream = stream}) end
  local n = math.max(n1, n2)
  local lead = n - math.min(n1, n2)
  local out = core.array_empty({n}, dtype)
  local longer = n1 > n2 and a1 or a2
  ew.launch(padded_program(op, longer.dtype, dtype, n2 > n1), out:narrow(1, 1, lead), stream, fname,
            longer:narrow(1, 1, lead))
  local x1 = n1 > n2 and a1:narrow(1, lead + 1, n - lead) or a1
  local x2 = n2 > n1 and a2:narrow(1, lead + 1, n - lead) or a2
  if n - lead > 0 then ga[op](x1, x2, {out = out:narrow(1, lead + 1, n - lead), stream = stream}) end
  return out
end

function M.polyadd(a1, a2, opts) return combined("polyadd", "add", a1, a2, opts) end
function M.polysub(a1, a2, opts) return combined("polysub", "sub", a1, a2, opts) end

-- gpuarray.polymul(a1, a2[, {stream =}]): NumPy's, the product's coefficients: convolve's.
function M.polymul(a1, a2, opts)
  a1 = coefficients(a1, 1, "polymul", true)
  a2 = coefficients(a2, 2, "polymul", true)
  opts = check_options(opts, 3, "polymul", STREAM)
  if a1.size == 0 then argerror(1, "polymul", "a1 cannot be empty") end
  if a2.size == 0 then argerror(2, "polymul", "a2 cannot be empty") end
  return ga.convolve(a1, a2, "full", {stream = opts.stream})
end

local POLYDER_PREAMBLE = [[
// v times top, top - 1, ..., m factors, one multiplication at a time as NumPy's repeated
// derivatives multiply (integers wrapping, in unsigned arithmetic; a complex value part by
// part, as NumPy's product with a real integer rounds it).
__device__ __forceinline__ long long lg_falling(long long v, long long top, long long m) {
  unsigned long long u = (unsigned long long)v;
  for (long long j = 0; j < m; j++) u *= (unsigned long long)(top - j);
  return (long long)u;
}
__device__ __forceinline__ double lg_falling(double v, long long top, long long m) {
  for (long long j = 0; j < m; j++) v = v * (double)(top - j);
  return v;
}
__device__ __forceinline__ lg_complex128 lg_falling(lg_complex128 v, long long top, long long m) {
  for (long long j = 0; j < m; j++) {
    const double k = (double)(top - j);
    v = lg_complex128(v.re * k, v.im * k);
  }
  return v;
}]]

local function order_argument(m, at, fname)
  if m == nil then return 1 end
  if math.type(m) ~= "integer" or m < 0 then
    argerror(at, fname, ("m must be a whole number from 0 on, got %s"):format(tostring(m)), 2)
  end
  return m
end

-- gpuarray.polyder(p[, m = 1[, {stream =}]]): NumPy's m-th derivative of the polynomial p:
-- coefficient i is p[i] (n - i) (n - i - 1) ... (m factors, n = #p - 1), in
-- promote_types(p.dtype, int64) (p's dtype, a copy, for m = 0); empty once m passes n.
function M.polyder(p, m, opts)
  p = coefficients(p, 1, "polyder")
  if is_list(m) and opts == nil then m, opts = nil, m end
  m = order_argument(m, 2, "polyder")
  opts = check_options(opts, 3, "polyder", STREAM)
  local stream = opts.stream
  if m == 0 then return p:copy({stream = stream}) end
  local dtype = promote.promote_types(p.dtype, "int64")
  local length = math.max(p.size - m, 0)
  local out = core.array_empty({length}, dtype)
  if length == 0 then return out end
  local prog = program(("polyder|%s|%s"):format(p.dtype, dtype), {
    expr = ("lg_falling(%s, top - lg_i, m)"):format(converted("c", p.dtype, dtype)),
    out = dtype, name = ("polyder_%s_%s"):format(p.dtype, dtype), preamble = POLYDER_PREAMBLE,
    operands = {{name = "c", dtype = p.dtype}, {name = "top", dtype = "int64", scalar = true},
                {name = "m", dtype = "int64", scalar = true}}})
  return ew.launch(prog, out, stream, "polyder", p:narrow(1, 1, length), p.size - 1, m)
end

local POLYINT_PREAMBLE = [[
// v divided by d as NumPy divides by an integer array: a real value plainly, a complex one by
// NumPy's complex division, which for a real d multiplies by 1 / d.
__device__ __forceinline__ double lg_divided(double v, double d) { return v / d; }
__device__ __forceinline__ lg_complex128 lg_divided(lg_complex128 v, double d) {
  const double scale = 1.0 / d;
  return lg_complex128(v.re * scale, v.im * scale);
}]]

local polyint_kernels = {}
local function polyint_kernel(dtype)
  local k = polyint_kernels[dtype]
  if k then return k end
  local t = operators.ctype(dtype)
  -- element i: p[i] (i < n) or constant i - n + 1, then divided once for each later step j,
  -- by the length before it less i (NumPy's arange(len(p), 0, -1) of that step)
  k = ew.ElementwiseKernel(
    ("%s *out, const %s *p, const %s *k, long long n, long long m"):format(t, t, t),
    ("%s v; long long e; if (i < n) { v = p[i]; e = 0; } else { e = i - n + 1; v = k[e - 1]; } "
     .. "for (long long j = e + 1; j <= m; j++) v = lg_divided(v, (double)(n + j - 1 - i)); out[i] = v")
      :format(t),
    "polyint_" .. dtype, {preamble = POLYINT_PREAMBLE})
  polyint_kernels[dtype] = k
  return k
end

-- gpuarray.polyint(p[, m = 1[, k[, {stream =}]]]): NumPy's m-th antiderivative of p, its
-- integration constants k (a number, or a list of 1 or at least m numbers; zeros by default;
-- the first is the highest order's): m more coefficients, in float64 (complex128 for complex
-- p or k); p itself (a copy, in p's dtype) for m = 0, whatever k holds.
function M.polyint(p, m, k, opts)
  p = coefficients(p, 1, "polyint")
  m = order_argument(m, 2, "polyint")
  opts = check_options(opts, 4, "polyint", STREAM)
  local is_complex = require("gpu.complex").is_complex
  local constants
  if k == nil then constants = {0.0}
  elseif type(k) == "number" or is_complex(k) then constants = {k}
  elseif is_list(k) then constants = k
  else
    argerror(3, "polyint", "k must be a number or a list of numbers, got " .. typename(k))
  end
  local complex = kind(p.dtype) == "c"
  for i, c in ipairs(constants) do
    if is_complex(c) then complex = true
    elseif type(c) ~= "number" then
      argerror(3, "polyint", ("k[%d] must be a number, got %s"):format(i, typename(c)))
    end
  end
  if m > 0 and (#constants == 0 or (#constants ~= 1 and #constants < m)) then   -- NumPy's: any k for m = 0
    argerror(3, "polyint", ("k must hold 1 or at least m = %d constants, got %d"):format(m, #constants))
  end
  local stream = opts.stream
  if m == 0 then return p:copy({stream = stream}) end
  local dtype = complex and "complex128" or "float64"
  local list = {}
  for i = 1, m do list[i] = constants[#constants == 1 and 1 or i] end
  local ks = ga.to_gpu(require("gpu").host.from_table(list, dtype))
  local ps, p_copy = contiguous_as(p, dtype, stream)
  local out = core.array_empty({p.size + m}, dtype)
  polyint_kernel(dtype)(out, ps, ks, p.size, m, {stream = stream})
  release(stream, p_copy, ks)
  return out
end

-- Least squares and roots -----------------------------------------------------------------------

-- The machine epsilon of NumPy's finfo for the float dtypes polyfit's x may be (x + 0.0's).
local EPSILON = {float64 = 2.0 ^ -52, float32 = 2.0 ^ -23, float16 = 2.0 ^ -10, bfloat16 = 2.0 ^ -7}

local function refuse_complex(a, n, fname)
  if kind(a.dtype) == "c" then
    argerror(n, fname, ("complex values are not supported, got %s"):format(a.dtype), 2)
  end
end

-- gpuarray.polyfit(x, y, deg[, {stream =}]): NumPy's least-squares polynomial fit, the
-- coefficients (deg + 1, highest power first; a column a column of a 2-d y) that minimize
-- the squared error, in float64: lstsq (gpu.linalg's, by the SVD) of the Vandermonde matrix
-- of x with its columns scaled to unit norm, the solution scaled back, as NumPy's (rcond
-- len(x) times the epsilon of x + 0.0's dtype).  NumPy's RankWarning has no counterpart.
function M.polyfit(x, y, deg, opts)
  check_array(x, 1, "polyfit")
  check_array(y, 2, "polyfit")
  if math.type(deg) ~= "integer" or deg < 0 then
    argerror(3, "polyfit", "deg must be a whole number from 0 on, got " .. tostring(deg))
  end
  opts = check_options(opts, 4, "polyfit", STREAM)
  refuse_complex(x, 1, "polyfit")
  refuse_complex(y, 2, "polyfit")
  if x.ndim ~= 1 then
    argerror(1, "polyfit", ("x must be a 1-d array, got shape %s"):format(promote.shape_text(x.shape)))
  end
  if x.size == 0 then argerror(1, "polyfit", "x must not be empty") end
  if y.ndim < 1 or y.ndim > 2 then
    argerror(2, "polyfit", ("y must be a 1-d or 2-d array, got shape %s"):format(promote.shape_text(y.shape)))
  end
  if y.shape[1] ~= x.size then
    argerror(2, "polyfit", ("y has %d rows, x %d points"):format(y.shape[1], x.size))
  end
  if y.dtype == "float16" or y.dtype == "bfloat16" then
    argerror(2, "polyfit", ("array type %s is unsupported in linalg"):format(y.dtype))
  end
  local stream = opts.stream
  local order = deg + 1
  local rcond = x.size * (EPSILON[x.dtype] or EPSILON.float64)
  local lhs = vandermonde(x, order, false, "float64", stream, "polyfit")
  local scale = reduction.reduce_axis("polyfit", "sum_squares", lhs, 1, stream)
  require("gpu.cumath").sqrt(scale, {out = scale, stream = stream})
  ga.truediv(lhs, scale, {out = lhs, stream = stream})
  local c, residuals, _, s = ga.linalg.lstsq(lhs, y, {rcond = rcond, stream = stream})
  local column = c.ndim == 1 and scale or core.array_view(scale, 0, scale.dtype, {order, 1})
  ga.truediv(c, column, {out = c, stream = stream})
  release(stream, lhs, scale, residuals, s)
  return c
end

-- NumPy's complex division a / b of {re, im} pairs (Smith's, as its loops do it).
local function complex_divide(ar, ai, br, bi)
  if math.abs(br) >= math.abs(bi) then
    local ratio = bi / br
    local scale = 1.0 / (br + bi * ratio)
    return (ar + ai * ratio) * scale, (ai - ar * ratio) * scale
  end
  local ratio = br / bi
  local scale = 1.0 / (bi + br * ratio)
  return (ar * ratio + ai) * scale, (ai * ratio - ar) * scale
end

-- gpuarray.roots(p[, {stream =}]): NumPy's roots of the polynomial p (1-d, highest power
-- first): the eigenvalues (gpu.linalg.eigvals, in no particular order) of the companion
-- matrix of p without its leading and trailing zeros, then one 0 a trailing zero.  Complex
-- (complex64 for float32 and complex64 p, else complex128) as eigvals' results always are
-- here; float64 zeros (or an empty array) where p has fewer than two nonzero coefficients
-- left, as NumPy's.  p is read back (its zeros decide the count; the one synchronization
-- besides eigvals' own); the companion matrix, built on the host, goes up in one copy.
function M.roots(p, opts)
  p = coefficients(p, 1, "roots", true)
  opts = check_options(opts, 2, "roots", STREAM)
  local stream = opts.stream
  if stream then stream:synchronize() end
  local h = p:get()
  local is_complex = require("gpu.complex").is_complex
  local function nonzero(v)
    if is_complex(v) then return v.re ~= 0 or v.im ~= 0 end
    return v ~= 0 and v ~= false
  end
  local first, last
  for i = 1, h.size do
    if nonzero(h[i]) then
      first = first or i
      last = i
    end
  end
  if first == nil then return core.array_empty({0}, "float64") end
  local trailing = h.size - last
  local n = last - first + 1
  if n < 2 then return ga.zeros({trailing}, "float64") end
  local dtype = p.dtype
  if dtype == "float16" or dtype == "bfloat16" then
    argerror(1, "roots", ("array type %s is unsupported in linalg"):format(dtype))
  end
  local k = kind(dtype)
  if k ~= "f" and k ~= "c" then dtype = "float64" end
  local size = n - 1
  local companion = require("gpu").host.zeros({size, size}, dtype)
  local lead = h[first]
  for j = 1, size do
    local v = h[first + j]
    if k == "c" then
      local re, im = complex_divide(-v.re, -v.im, lead.re, lead.im)
      companion[j] = require("gpu.complex").complex(re, im)
    else
      if type(v) == "boolean" then v = v and 1 or 0 end
      local l = type(lead) == "boolean" and 1 or lead
      companion[j] = -v / l
    end
  end
  for i = 2, size do companion[(i - 1) * size + i - 1] = 1 end
  local a = ga.to_gpu(companion)
  local w = ga.linalg.eigvals(a, {stream = stream})
  release(stream, a)
  if trailing == 0 then return w end
  local zeros = core.array_zeros({trailing}, w.dtype)
  local result = ga.concatenate({w, zeros}, {stream = stream})
  release(stream, w, zeros)
  return result
end

-- histogram2d ------------------------------------------------------------------------------------

-- NumPy's histogramdd bin of v among the n + 1 increasing edges: searchsorted's count of the
-- edges at or below v (side "right"; a NaN goes after every edge), less one on the last edge;
-- 0 and n + 1 lie outside.  A point's flat bin: row-major in the nx x ny bins, or nx * ny
-- where either coordinate lies outside.
local BIN_PREAMBLE = [[
__device__ __forceinline__ long long lg_bin_of(double v, const double *edges, long long n) {
  if (v == edges[n]) return n;
  long long low = 0, high = n + 1;
  while (low < high) {
    const long long middle = low + (high - low) / 2;
    if (!(v < edges[middle])) low = middle + 1; else high = middle;
  }
  return low;
}]]

local flat_bin_kernel
local function flat_bins()
  flat_bin_kernel = flat_bin_kernel or ew.ElementwiseKernel(
    "long long *out, const double *x, const double *y, const double *xe, const double *ye, "
    .. "long long nx, long long ny",
    "const long long bx = lg_bin_of(x[i], xe, nx), by = lg_bin_of(y[i], ye, ny); "
    .. "out[i] = (bx >= 1 && bx <= nx && by >= 1 && by <= ny) ? (bx - 1) * ny + by - 1 : nx * ny",
    "histogram2d_bins", {preamble = BIN_PREAMBLE})
  return flat_bin_kernel
end

local HISTOGRAM2D_OPTIONS = {bins = true, range = true, weights = true, stream = true}

-- The outer edges of one axis (NumPy's _get_outer_edges): the range given, else the values'
-- least and greatest (read back), 0 and 1 for no values; widened by 0.5 each way where equal.
local function outer_edges(a, range, which, stream)
  local first, last
  if range ~= nil then
    if not is_list(range) or math.type(range[1]) == nil or math.type(range[2]) == nil then
      argerror(3, "histogram2d", ("option 'range' must be {{xmin, xmax}, {ymin, ymax}}, numbers"), 3)
    end
    first, last = range[1] + 0.0, range[2] + 0.0
    if first > last then
      argerror(3, "histogram2d", ("option 'range': the %s range's max must be larger than its min")
                                 :format(which), 3)
    end
    if first ~= first or last ~= last or math.abs(first) == math.huge or math.abs(last) == math.huge then
      argerror(3, "histogram2d", ("option 'range': the %s range [%s, %s] is not finite")
                                 :format(which, tostring(first), tostring(last)), 3)
    end
  elseif a.size == 0 then
    first, last = 0.0, 1.0
  else
    local on_stream = stream and {stream = stream}
    first, last = a:min(on_stream) + 0.0, a:max(on_stream) + 0.0
    if first ~= first or last ~= last or math.abs(first) == math.huge or math.abs(last) == math.huge then
      argerror(which == "x" and 1 or 2, "histogram2d", ("the autodetected range of [%s, %s] is not finite")
                                                       :format(tostring(first), tostring(last)), 3)
    end
  end
  if first == last then first, last = first - 0.5, last + 0.5 end
  return first, last
end

-- gpuarray.histogram2d(x, y[, {bins = 10, range =, weights =, stream =}]) -> H, xedges,
-- yedges: NumPy's, the float64 counts (sums of the weights) of the points (x[i], y[i]) in
-- bins[1] x bins[2] equal bins (bins a whole number for both, or a pair) over range
-- {{xmin, xmax}, {ymin, ymax}} or the values' own (each axis's edges linspace's, float64; a
-- point on the last edge counts in the last bin, one outside or NaN nowhere).  One kernel
-- finds each point's flat bin (a binary search an axis), bincount counts them.  Without a
-- range the edges come from the least and greatest values in float64 (NumPy computes those
-- of a float32 x in float32).
function M.histogram2d(x, y, opts)
  check_array(x, 1, "histogram2d")
  check_array(y, 2, "histogram2d")
  opts = check_options(opts, 3, "histogram2d", HISTOGRAM2D_OPTIONS)
  refuse_complex(x, 1, "histogram2d")
  refuse_complex(y, 2, "histogram2d")
  if x.ndim ~= 1 then
    argerror(1, "histogram2d", ("x must be a 1-d array, got shape %s"):format(promote.shape_text(x.shape)))
  end
  if y.ndim ~= 1 or y.size ~= x.size then
    argerror(2, "histogram2d", ("y must be a 1-d array of x's %d points, got shape %s")
                               :format(x.size, promote.shape_text(y.shape)))
  end
  local bins = opts.bins == nil and 10 or opts.bins
  local counts = is_list(bins) and bins or {bins, bins}
  if #counts ~= 2 then
    argerror(3, "histogram2d", "option 'bins' must be a whole number or a pair of them")
  end
  for _, n in ipairs(counts) do
    if math.type(n) ~= "integer" or n < 1 then
      argerror(3, "histogram2d", "option 'bins' must be a whole number or a pair of them, each 1 or more")
    end
  end
  local range = opts.range
  if range ~= nil and (not is_list(range) or #range ~= 2) then
    argerror(3, "histogram2d", "option 'range' must be {{xmin, xmax}, {ymin, ymax}}, numbers")
  end
  local weights = opts.weights
  if weights ~= nil and (getmetatable(weights) ~= GPUArray or weights.freed or weights.ndim ~= 1
                         or weights.size ~= x.size) then
    argerror(3, "histogram2d", ("option 'weights' must be a 1-d GPUArray of x's %d points"):format(x.size))
  end
  local stream = opts.stream
  local nx, ny = counts[1], counts[2]
  local x0, x1 = outer_edges(x, range and range[1], "x", stream)
  local y0, y1 = outer_edges(y, range and range[2], "y", stream)
  local on_stream = {stream = stream}                   -- the edges are the bin kernel's input
  local xedges, yedges = ga.linspace(x0, x1, nx + 1, on_stream), ga.linspace(y0, y1, ny + 1, on_stream)
  local flat = core.array_empty({x.size}, "int64")
  if x.size > 0 then
    local xs, x_copy = contiguous_as(x, "float64", stream)
    local ys, y_copy = contiguous_as(y, "float64", stream)
    flat_bins()(flat, xs, ys, xedges, yedges, nx, ny, {stream = stream})
    release(stream, x_copy, y_copy)
  end
  local sums = ga.bincount(flat, {minlength = nx * ny + 1, weights = weights, stream = stream})
  local h = sums:narrow(1, 1, nx * ny):astype("float64", {stream = stream})
  release(stream, flat, sums)
  return h:reshape(nx, ny), xedges, yedges
end

local FUNCTIONS = {"identity", "tri", "diagflat", "vander", "logspace", "geomspace", "full_like",
                   "broadcast_arrays", "rollaxis", "ediff1d", "gradient", "polyval", "polyadd",
                   "polysub", "polymul", "polyder", "polyint", "polyfit", "roots", "histogram2d"}

-- The constructors that gpu has beside gpuarray's (as linspace and zeros_like).
local ON_GPU = {"full_like", "logspace", "geomspace"}

function M.install(gpu)
  ga = gpu.gpuarray
  for _, name in ipairs(FUNCTIONS) do ga[name] = M[name] end
  for _, name in ipairs(ON_GPU) do gpu[name] = M[name] end
end

return M
