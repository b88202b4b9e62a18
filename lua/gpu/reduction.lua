-- gpu.reduction: sum, prod, min, max, mean, any, all, argmax, argmin, var and std of GPU
-- arrays, whole or along one axis, dot, and gpu.ReductionKernel.  Kernels come from the
-- template kernels/reduce.cu, filled in per operation and dtype and compiled once per device
-- (gpu.kernel_cache); var and std add elementwise kernels (gpu.elementwise).
--
-- Result dtypes follow NumPy: sum and prod of bool and signed integers give int64, of unsigned
-- integers uint64, of floats the same float; mean of integers gives float64; min and max keep
-- the dtype; argmax and argmin give int64 indices; var and std give M.var_dtype; dot gives the
-- promoted dtype of its inputs.  Method forms (a:sum()) synchronize and return Lua values; the
-- gpuarray functions (gpuarray.sum(a)) return 0-d GPUArrays that stay on the device.  With an
-- axis, both forms return arrays.

local core = require "gpu.core"
local kernel_cache = require "gpu.kernel_cache"
local ew = require "gpu.elementwise"

local M = {}

local BLOCK = 256

-- dtypes -----------------------------------------------------------------------------------

-- kind ('b', 'i', 'u', 'f', 'c'), size in bytes and the C type kernels store it as (the 16-bit
-- floats as their bits: kernels/common.cu converts them).
local dtypes = {}
for _, name in ipairs{"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                      "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
                      "complex128"} do
  local d = core.dtype(name)
  dtypes[name] = {name = name, kind = d.kind, size = d.itemsize,
                  ctype = d.kind == "f" and d.itemsize == 2 and "unsigned short" or d.ctype}
end
M.dtypes = dtypes

local ctype_sizes = {
  ["bool"] = 1, ["unsigned int"] = 4, ["int"] = 4, ["long long"] = 8,
  ["unsigned long long"] = 8, ["float"] = 4, ["double"] = 8, ["lg_complex64"] = 8,
  ["lg_complex128"] = 16, ["lg_arg_pair"] = 16,   -- argmax's (index, value), padded to 16
  -- nanmean's (sum, count) for each sum's accumulator
  ["lg_sum_count_float"] = 16, ["lg_sum_count_double"] = 16, ["lg_sum_count_lg_complex64"] = 16,
  ["lg_sum_count_lg_complex128"] = 24,
}
M.ctype_sizes = ctype_sizes     -- bytes of an accumulator type (matmul's partial sums too)

-- NumPy's promote_types for two dtype names (dot's result dtype): gpu.promote's.
M.promote = require("gpu.promote").promote_types

-- C expression converting value x of dtype to the C type ctype.
local function convert(dtype, x, ctype)
  if dtype == "float16" then return ("(%s)gpu_half_to_float(%s)"):format(ctype, x) end
  if dtype == "bfloat16" then return ("(%s)gpu_bf16_to_float(%s)"):format(ctype, x) end
  return ("(%s)(%s)"):format(ctype, x)
end

-- C expression storing accumulator value a as dtype.
local function store(dtype, a)
  if dtype == "float16" then return ("gpu_store_half(%s)"):format(a) end
  if dtype == "bfloat16" then return ("gpu_store_bf16(%s)"):format(a) end
  if dtype == "bool" then return ("(bool)(%s)"):format(a) end
  return ("(%s)(%s)"):format(dtypes[dtype].ctype, a)
end

-- The accumulator of sums and products with result dtype out.
local function sum_acc(out)
  local d = dtypes[out]
  if d.kind == "c" then return d.ctype end
  if d.kind == "f" then return d.size == 8 and "double" or "float" end
  return d.kind == "i" and "long long" or "unsigned long long"
end

function M.sum_dtype(dtype)
  local d = dtypes[dtype]
  if d.kind == "f" or d.kind == "c" then return dtype end
  return d.kind == "u" and "uint64" or "int64"
end

function M.mean_dtype(dtype)
  local kind = dtypes[dtype].kind
  return (kind == "f" or kind == "c") and dtype or "float64"
end

-- var and std: float64 for bool and integers, a float's own dtype, a complex one's real part.
function M.var_dtype(dtype)
  local d = dtypes[dtype]
  if d.kind == "c" then return d.size == 8 and "float32" or "float64" end
  return d.kind == "f" and dtype or "float64"
end

-- The dtype var's mean and deviations are computed in: the mean's, but float32 for the 16-bit
-- floats (as NumPy computes their var).
function M.var_work_dtype(dtype)
  local d = dtypes[dtype]
  if d.kind == "f" and d.size == 2 then return "float32" end
  return M.mean_dtype(dtype)
end

local int_limits = {
  int8 = {"-128", "127"}, uint8 = {"0u", "255u"}, int16 = {"-32768", "32767"},
  uint16 = {"0u", "65535u"}, int32 = {"(-2147483647 - 1)", "2147483647"},
  uint32 = {"0u", "4294967295u"}, int64 = {"(-9223372036854775807LL - 1)", "9223372036854775807LL"},
  uint64 = {"0ull", "18446744073709551615ull"}, bool = {"0u", "1u"},
}

local function minmax_acc(dtype)
  local d = dtypes[dtype]
  if d.kind == "f" then return d.size == 8 and "double" or "float" end
  if d.size == 8 then return d.kind == "i" and "long long" or "unsigned long long" end
  return d.kind == "i" and "int" or "unsigned int"
end

local function infinity(acc, negative)
  local v = acc == "double" and "__longlong_as_double(0x7ff0000000000000LL)"
                             or "__int_as_float(0x7f800000)"
  return negative and "(-" .. v .. ")" or v
end

-- The operations: op(dtype[, dtype2]) -> {out, acc, reduce, neutral, map(x, y), finish(a)}
-- map and finish build C expressions; reduce combines accumulators a and b.
local ops = {}

function ops.sum(dtype)
  local out = M.sum_dtype(dtype)
  local acc = sum_acc(out)
  return {out = out, acc = acc, reduce = "a + b", neutral = "0",
          map = function(x) return convert(dtype, x, acc) end,
          finish = function(a) return store(out, a) end}
end

function ops.prod(dtype)
  local spec = ops.sum(dtype)
  spec.reduce, spec.neutral = "a * b", "1"
  return spec
end

local function minmax(dtype, smaller)
  local acc = minmax_acc(dtype)
  local d = dtypes[dtype]
  local reduce, neutral
  local cmp = smaller and "<" or ">"
  if d.kind == "f" then
    -- NaN wins, as in NumPy: a NaN on either side is returned
    reduce = ("(a != a || a %s b) ? a : b"):format(cmp)
    neutral = infinity(acc, not smaller)
  else
    reduce = ("a %s b ? a : b"):format(cmp)
    neutral = int_limits[dtype][smaller and 2 or 1]
  end
  return {out = dtype, acc = acc, reduce = reduce, neutral = neutral,
          map = function(x) return convert(dtype, x, acc) end,
          finish = function(a) return store(dtype, a) end}
end

function ops.min(dtype) return minmax(dtype, true) end
function ops.max(dtype) return minmax(dtype, false) end

-- NumPy's nansum and nanprod: sum and prod with each NaN (a complex value with a NaN part)
-- taken as the neutral element.  Other dtypes hold no NaN: theirs are sum's and prod's.
local NAN_AS = "template <typename T>\n__device__ __forceinline__ T lg_nan_as(T v, T neutral) "
               .. "{ return v != v ? neutral : v; }"
local function skipping_nan(spec, dtype)
  local kind = dtypes[dtype].kind
  if kind ~= "f" and kind ~= "c" then return spec end
  local map, neutral = spec.map, ("(%s)(%s)"):format(spec.acc, spec.neutral)
  spec.preamble = NAN_AS
  spec.map = function(x) return ("lg_nan_as(%s, %s)"):format(map(x), neutral) end
  return spec
end

function ops.nansum(dtype) return skipping_nan(ops.sum(dtype), dtype) end
function ops.nanprod(dtype) return skipping_nan(ops.prod(dtype), dtype) end

-- NumPy's nanmax and nanmin (fmax and fmin reduced): a NaN loses to any number, so the result
-- is NaN only where every element is; the neutral element is NaN.  Integers: max and min.
local function nan_minmax(dtype, smaller)
  local spec = minmax(dtype, smaller)
  if dtypes[dtype].kind == "f" then
    spec.reduce = ("(a != a || (b == b && b %s a)) ? b : a"):format(smaller and "<" or ">")
    spec.neutral = spec.acc == "double" and "__longlong_as_double(0x7ff8000000000000LL)"
                                         or "__int_as_float(0x7fc00000)"
  end
  return spec
end

function ops.nanmin(dtype) return nan_minmax(dtype, true) end
function ops.nanmax(dtype) return nan_minmax(dtype, false) end

-- The mean of dtype's elements as dtype out.
local function mean_as(dtype, out)
  local kind = dtypes[dtype].kind
  local acc = (kind == "f" or kind == "c") and sum_acc(out) or "double"
  return {out = out, acc = acc, reduce = "a + b", neutral = "0",
          map = function(x) return convert(dtype, x, acc) end,
          finish = function(a) return store(out, ("%s / (%s)count"):format(a, acc)) end}
end

function ops.mean(dtype) return mean_as(dtype, M.mean_dtype(dtype)) end

-- NumPy's nanmean in one pass: pairs of (nansum's total, count of the elements that are not
-- NaN), the total then rounded to dtype and divided by the count in float64 (complex128), the
-- quotient rounded to dtype, as NumPy's true_divide of nansum by the count.  0 / 0 gives NaN
-- where every element is NaN.  Dtypes without NaN take mean.
local SUM_COUNT = [[
struct $PAIR { $ACC sum; unsigned long long count; };
__device__ __forceinline__ $PAIR lg_sum_count_of($ACC v) {
  return v != v ? $PAIR{($ACC)0, 0ull} : $PAIR{v, 1ull};
}
__device__ __forceinline__ $PAIR lg_sum_count_add($PAIR a, $PAIR b) {
  return $PAIR{a.sum + b.sum, a.count + b.count};
}
// the pair shuffled part by part (common.cu's gpu_shfl_down takes scalars and complex numbers)
__device__ __forceinline__ $PAIR gpu_shfl_down($PAIR v, int delta) {
  return $PAIR{gpu_shfl_down(v.sum, delta), __shfl_down_sync(0xffffffffu, v.count, delta)};
}]]
-- The NaN-skipping mean of dtype's elements as dtype out (out's sum accumulator and rounding).
local function nan_mean_as(dtype, out)
  local acc = sum_acc(out)
  local pair = "lg_sum_count_" .. acc
  local wide = dtypes[out].kind == "c" and "lg_complex128" or "double"
  return {out = out, acc = pair, reduce = "lg_sum_count_add(a, b)",
          neutral = ("%s{(%s)0, 0ull}"):format(pair, acc),
          preamble = M.fill(SUM_COUNT, {PAIR = pair, ACC = acc}),
          map = function(x) return ("lg_sum_count_of(%s)"):format(convert(dtype, x, acc)) end,
          finish = function(a)
            local total = convert(out, store(out, a .. ".sum"), wide)
            return store(out, ("%s / (double)%s.count"):format(total, a))
          end}
end

function ops.nanmean(dtype)
  local kind = dtypes[dtype].kind
  if kind ~= "f" and kind ~= "c" then return ops.mean(dtype) end
  return nan_mean_as(dtype, dtype)
end

-- nanvar's first pass: nanmean in the dtype var computes its deviations in (float32 for the
-- 16-bit floats); and the count of the elements that are not NaN, as int64.  (Float and
-- complex dtypes only: nanvar of others is var.)
function ops.nanvar_mean(dtype) return nan_mean_as(dtype, M.var_work_dtype(dtype)) end

function ops.count_not_nan(dtype)
  local acc = dtypes[dtype].kind == "c" and dtypes[dtype].ctype or minmax_acc(dtype)
  return {out = "int64", acc = "unsigned long long", reduce = "a + b", neutral = "0",
          map = function(x)
            local v = convert(dtype, x, acc)
            return ("(unsigned long long)(%s == %s)"):format(v, v)
          end,
          finish = function(a) return store("int64", a) end}
end

local function truth(dtype, x)
  if dtypes[dtype].kind == "c" then return ("lg_nonzero(%s)"):format(x) end
  if dtype == "float64" then return ("(%s != 0.0)"):format(x) end
  if dtypes[dtype].kind == "f" then return ("(%s != 0.0f)"):format(convert(dtype, x, "float")) end
  return ("(%s != 0)"):format(x)
end

function ops.any(dtype)
  return {out = "bool", acc = "unsigned int", reduce = "a | b", neutral = "0u",
          map = function(x) return ("(unsigned int)%s"):format(truth(dtype, x)) end,
          finish = function(a) return ("(bool)(%s)"):format(a) end}
end

function ops.all(dtype)
  local spec = ops.any(dtype)
  spec.reduce, spec.neutral = "a & b", "1u"
  return spec
end

function ops.dot(dtype, dtype2)
  local out = M.promote(dtype, dtype2)
  if out == "bool" then
    return {out = out, acc = "unsigned int", reduce = "a | b", neutral = "0u",
            map = function(x, y) return ("(unsigned int)((%s) && (%s))"):format(x, y) end,
            finish = function(a) return ("(bool)(%s)"):format(a) end}
  end
  local acc = sum_acc(out)
  return {out = out, acc = acc, reduce = "a + b", neutral = "0",
          map = function(x, y) return ("%s * %s"):format(convert(dtype, x, acc), convert(dtype2, y, acc)) end,
          finish = function(a) return store(out, a) end}
end

-- vdot: dot with the first operand's complex conjugate (dot itself for real ones).
function ops.vdot(dtype, dtype2)
  local spec = ops.dot(dtype, dtype2)
  if dtypes[dtype].kind == "c" then
    local map = spec.map
    spec.map = function(x, y) return map(("lg_conj(%s)"):format(x), y) end
  end
  return spec
end

-- argmax and argmin reduce (1-based index, value) pairs, the preamble's lg_arg_pair, whose
-- value is min/max's accumulator type (float for the 16-bit floats).  The better value wins, a
-- NaN beats any number (NumPy returns the first NaN), and a tie goes to the smaller index, so
-- the result does not depend on the order pairs meet in.  The neutral pair has the worst value
-- and an index past every element's.  map_at(x, index) builds the pair of element x at a
-- 0-based index: flat row-major over the whole array, or along the reduced axis.
local function arg(dtype, op)
  local value = minmax_acc(dtype)
  local float = dtypes[dtype].kind == "f"
  local better = op == "argmax" and ">" or "<"
  local worst = float and infinity(value, op == "argmax") or int_limits[dtype][op == "argmax" and 1 or 2]
  local preamble = ([[
struct lg_arg_pair { long long index; %s value; };
__device__ __forceinline__ lg_arg_pair lg_arg_pick(lg_arg_pair a, lg_arg_pair b) {
  const bool a_nan = %s, b_nan = %s;
  if (a_nan || b_nan) return (a_nan && b_nan) ? (a.index < b.index ? a : b) : (a_nan ? a : b);
  if (a.value %s b.value) return a;
  if (b.value %s a.value) return b;
  return a.index < b.index ? a : b;
}
// the pair shuffled part by part (common.cu's gpu_shfl_down template takes scalars only)
__device__ __forceinline__ lg_arg_pair gpu_shfl_down(lg_arg_pair v, int delta) {
  return lg_arg_pair{__shfl_down_sync(0xffffffffu, v.index, delta),
                     __shfl_down_sync(0xffffffffu, v.value, delta)};
}]]):format(value, float and "a.value != a.value" or "false", float and "b.value != b.value" or "false",
             better, better)
  return {out = "int64", acc = "lg_arg_pair", preamble = preamble, reduce = "lg_arg_pick(a, b)",
          neutral = ("lg_arg_pair{9223372036854775807LL, (%s)(%s)}"):format(value, worst),
          map_at = function(x, index)
            return ("lg_arg_pair{(%s) + 1, %s}"):format(index, convert(dtype, x, value))
          end,
          finish = function(a) return store("int64", a .. ".index") end}
end

function ops.argmax(dtype) return arg(dtype, "argmax") end
function ops.argmin(dtype) return arg(dtype, "argmin") end

-- nanargmax and nanargmin: argmax's pairs with a NaN element's taken as the neutral pair, so a
-- NaN never wins; a line of NaNs only keeps the neutral pair, whose index past every element
-- becomes 0 (no place: NumPy raises there, CuPy gives -1).  Other dtypes: argmax's, argmin's.
local SKIP_NAN_PAIR = [[
__device__ __forceinline__ lg_arg_pair lg_arg_skip_nan(lg_arg_pair p, lg_arg_pair neutral) {
  return p.value != p.value ? neutral : p;
}]]
local function nan_arg(dtype, op)
  local spec = arg(dtype, op)
  if dtypes[dtype].kind ~= "f" then return spec end
  local map_at, neutral = spec.map_at, spec.neutral
  spec.preamble = spec.preamble .. "\n" .. SKIP_NAN_PAIR
  spec.map_at = function(x, index) return ("lg_arg_skip_nan(%s, %s)"):format(map_at(x, index), neutral) end
  spec.finish = function(a)
    return store("int64", ("(%s.index == 9223372036854775807LL ? 0LL : %s.index)"):format(a, a))
  end
  return spec
end

function ops.nanargmax(dtype) return nan_arg(dtype, "argmax") end
function ops.nanargmin(dtype) return nan_arg(dtype, "argmin") end

-- var's first pass: the mean in the dtype the deviations are computed in (M.var_work_dtype:
-- float32 for the 16-bit floats, whose own mean would round to 16 bits).
function ops.var_mean(dtype) return mean_as(dtype, M.var_work_dtype(dtype)) end

-- var's second pass over a whole array: the sum of the squared deviations of dtype's elements
-- from their mean (the second operand, of the work dtype, read through a stride of 0), each
-- made in the work dtype and rounded to its real type as the elementwise deviation program
-- stores it, then summed as "sum" sums an array of them; no array of them is made.  The
-- mean is read once a thread (scalar_b), so the contiguous path reads only dtype's elements.
function ops.var_deviation(dtype, work)
  local real = M.var_dtype(work)
  local out = M.sum_dtype(real)
  local acc = sum_acc(out)
  local wtype, rtype = dtypes[work].ctype, dtypes[real].ctype
  local squared = dtypes[work].kind == "c" and "d.re * d.re + d.im * d.im" or "d * d"
  local preamble = ("__device__ __forceinline__ %s lg_squared_deviation(%s x, %s m) {\n"
                    .. "  const %s d = x - m;\n  return %s;\n}"):format(rtype, wtype, wtype, wtype, squared)
  return {out = out, acc = acc, reduce = "a + b", neutral = "0", preamble = preamble,
          scalar_b = true,
          map = function(x, m)
            return ("(%s)lg_squared_deviation(%s, %s)"):format(acc, convert(dtype, x, wtype), m)
          end,
          finish = function(a) return store(out, a) end}
end

-- linalg.norm's reductions, each one pass: of the magnitudes |x| (a complex value's hypot of
-- its parts), norm2 the square root of the sum of their squares (the sum alone:
-- sum_squares), norm1 their sum, norm_max and norm_min their greatest and least (a NaN
-- wins), norm0 the count of nonzero elements.  The result is a norm's float dtype
-- (M.var_dtype: integers and bools give float64, as NumPy converts them first), summed in
-- sum's accumulator for it.
local NORM_PARTS = [[
__device__ __forceinline__ float lg_norm_abs(float v) { return fabsf(v); }
__device__ __forceinline__ double lg_norm_abs(double v) { return fabs(v); }
__device__ __forceinline__ float lg_norm_abs(lg_complex64 z) { return lg_abs(z); }
__device__ __forceinline__ double lg_norm_abs(lg_complex128 z) { return lg_abs(z); }
__device__ __forceinline__ float lg_norm_square(float v) { return v * v; }
__device__ __forceinline__ double lg_norm_square(double v) { return v * v; }
__device__ __forceinline__ float lg_norm_square(lg_complex64 z) { return z.re * z.re + z.im * z.im; }
__device__ __forceinline__ double lg_norm_square(lg_complex128 z) { return z.re * z.re + z.im * z.im; }
__device__ __forceinline__ float lg_norm_nonzero(float v) { return v != 0.0f ? 1.0f : 0.0f; }
__device__ __forceinline__ double lg_norm_nonzero(double v) { return v != 0.0 ? 1.0 : 0.0; }
__device__ __forceinline__ float lg_norm_nonzero(lg_complex64 z) { return lg_nonzero(z) ? 1.0f : 0.0f; }
__device__ __forceinline__ double lg_norm_nonzero(lg_complex128 z) { return lg_nonzero(z) ? 1.0 : 0.0; }]]

local function norm_op(dtype, part, reduce, neutral, root)
  local out = M.var_dtype(dtype)
  local acc = sum_acc(out)
  local complex = dtypes[dtype].kind == "c"
  return {out = out, acc = acc, reduce = reduce, neutral = neutral, preamble = NORM_PARTS,
          map = function(x)
            return ("lg_norm_%s(%s)"):format(part, complex and x or convert(dtype, x, acc))
          end,
          finish = function(a)
            return store(out, root and ("%s(%s)"):format(acc == "double" and "sqrt" or "sqrtf", a) or a)
          end}
end

function ops.norm2(dtype) return norm_op(dtype, "square", "a + b", "0", true) end
function ops.sum_squares(dtype) return norm_op(dtype, "square", "a + b", "0", false) end
function ops.norm1(dtype) return norm_op(dtype, "abs", "a + b", "0", false) end
function ops.norm0(dtype) return norm_op(dtype, "nonzero", "a + b", "0", false) end
function ops.norm_max(dtype) return norm_op(dtype, "abs", "(a != a || a > b) ? a : b", "0", false) end
function ops.norm_min(dtype)
  local spec = norm_op(dtype, "abs", "(a != a || a < b) ? a : b", "0", false)
  spec.neutral = infinity(spec.acc, false)
  return spec
end

M.ops = ops

-- Sources ----------------------------------------------------------------------------------

local function fill(template, values)
  return (template:gsub("%$([%u%d_]+)", function(key)
    local v = values[key]
    if v == nil then error("reduce.cu template: no value for " .. key, 3) end
    return v
  end))
end

local function template()
  return core.kernel_sources["common.cu"] .. "\n" .. core.kernel_sources["reduce.cu"]
end

-- Whether an operation of spec over dtypes d (and d2, dot's) has a kernel that reads its
-- contiguous input 16 bytes at a time (gpu_reduce_vec): a map of the elements, real ones, and
-- both inputs of one size (or the second one value: spec.scalar_b).
local function reads_vectors(spec, d, d2)
  return (spec.map or spec.map_at) ~= nil and d.kind ~= "c" and
         (not d2 or spec.scalar_b or d2.size == d.size)
end

-- The expression of reduce.cu's gpu_whole_* helper that maps and reduces a whole 16-byte load
-- x (and y, dot's) of op over 1- or 2-byte integers or bools, or nil where op over them takes
-- the load element by element.  mean's accumulator is a double: the helpers' sums are exact.
local function whole_load(op, d, d2)
  if d.size > 2 or not (d.kind == "i" or d.kind == "u" or d.kind == "b") then return nil end
  local bits = d.size * 8
  if op == "sum" or op == "mean" then
    if d.kind == "b" then return "gpu_whole_count_nonzero(x.raw)" end
    return ("gpu_whole_sum_%s%d(x.raw)"):format(d.kind == "i" and "s" or "u", bits)
  elseif op == "any" then return "gpu_whole_any(x.raw)"
  elseif op == "all" then return ("gpu_whole_all%d(x.raw)"):format(bits)
  elseif op == "dot" and d2 == d and bits == 8 and d.kind ~= "b" then
    return ("gpu_whole_dot_%s8(x.raw, y.raw)"):format(d.kind == "i" and "s" or "u")
  end
  return nil
end

-- The module source of a built-in operation on dtype (and dtype2 for dot).  An operation
-- whose map needs the element's index gives map_at(x, index) instead of map(x).
function M.builtin_source(op, dtype, dtype2)
  local spec = ops[op](dtype, dtype2)
  local d, d2 = dtypes[dtype], dtype2 and dtypes[dtype2]
  local map_args, map_names, load = "const char *in, gpu_layout lay", "in, lay",
    "*(const gpu_in_t *)(in + gpu_offset(lay, i))"
  local mapv_b = "0"
  if d2 then
    map_args = map_args .. ", const char *in2, gpu_layout lay2"
    map_names = map_names .. ", in2, lay2"
    mapv_b = "y"
  end
  local load1 = "(" .. load:gsub("gpu_in_t", d.ctype) .. ")"
  local load2 = d2 and ("(*(const %s *)(in2 + gpu_offset(lay2, i)))"):format(d2.ctype) or "0"
  local map_at = spec.map_at or function(x) return spec.map(x) end
  local whole = whole_load(op, d, d2)
  return fill(template(), {
    PREAMBLE = spec.preamble or "", SHUFFLE = "1",
    ACC_T = spec.acc, OUT_T = dtypes[spec.out].ctype,
    REDUCE = spec.reduce, NEUTRAL = ("(gpu_acc_t)(%s)"):format(spec.neutral),
    FINISH = spec.finish("a"),
    WITH_VEC = reads_vectors(spec, d, d2) and "1" or "0",
    WITH_AXIS = d2 and "0" or "1",
    IN_T = d.ctype, IN2_T = d2 and d2.ctype or "int", HAS_B = d2 and "1" or "0",
    B_SCALAR = spec.scalar_b and "1" or "0",
    WITH_WHOLE = whole and "1" or "0", WHOLE = whole or "0",
    -- spelled out, not a macro: gpu.signature reads the parameter list as written
    B_PARAM = d2 and "const gpu_in2_t *__restrict__ b," or "",
    MAPV = spec.map and spec.map("x", mapv_b) or spec.map_at and spec.map_at("x", "gpu_i") or "0",
    MAP_ARGS = map_args, MAP_NAMES = map_names,
    MAP = d2 and spec.map(load1, load2) or map_at(load1, "i"),
    MAP_AT = d2 and "0" or map_at("x", "j"),
  }), spec
end

-- Launching --------------------------------------------------------------------------------

local sm_counts = {}
-- The current device's multiprocessor count.
function M.multiprocessors()
  local ordinal = core.device_ordinal()
  local n = sm_counts[ordinal]
  if n == nil then
    n = core.get_device():attribute("MULTIPROCESSOR_COUNT")
    sm_counts[ordinal] = n
  end
  return n
end

local function max_grid() return M.multiprocessors() * (2048 // BLOCK) end
M.max_grid = max_grid

-- Blocks of `block` threads for a grid-stride loop over n items: enough for one item a
-- thread, at most four waves of the device's multiprocessors, at least one.
function M.grid_stride_blocks(n, block)
  return math.max(1, math.min(max_grid() * 4, (n + block - 1) // block))
end

local function ceil_div(a, b) return (a + b - 1) // b end

local module_options = {no_extern_c = true, name = "reduce.cu"}

-- The order of an ndim-d array's axes with axis moved last (a transpose permutation).
function M.axis_last(ndim, axis)
  local order = {}
  for d = 1, ndim do if d ~= axis then order[#order + 1] = d end end
  order[#order + 1] = axis
  return order
end

-- Shape and byte strides with length-1 axes dropped and mergeable neighbours merged.
local function collapse(shape, strides)
  local s, t = {}, {}
  for i = 1, #shape do
    if shape[i] ~= 1 then
      local n = #s
      if n > 0 and t[n] == strides[i] * shape[i] then
        s[n], t[n] = s[n] * shape[i], strides[i]
      else
        s[n + 1], t[n + 1] = shape[i], strides[i]
      end
    end
  end
  if #s == 0 then s[1], t[1] = 1, 0 end
  return s, t
end
M.collapse = collapse

local MAXDIM = 32                    -- kernels/common.cu's GPU_MAXDIM
-- For each ndim, the pack format of ndim 8-byte integers and the zeros that fill the rest of
-- a gpu_layout's array of 32: packing only the used entries is what keeps this cheap (one
-- format of all 65 took about 5 us a layout).
local axes_format, axes_padding = {}, {}
for n = 0, MAXDIM do
  axes_format[n] = "<" .. ("j"):rep(n)
  axes_padding[n] = ("\0"):rep(8 * (MAXDIM - n))
end

-- The bytes of a gpu_layout (kernels/common.cu) for shape and byte strides.
local function pack_layout(shape, strides)
  local n = #shape
  local format, padding = axes_format[n], axes_padding[n]
  return ("<j"):pack(n) .. format:pack(table.unpack(shape, 1, n)) .. padding
         .. format:pack(table.unpack(strides, 1, n)) .. padding
end
M.pack_layout = pack_layout

local function layout_of(a)
  return pack_layout(collapse(a.shape, a.strides))
end

-- The result: a 0-d array of dtype at the start of a fresh buffer, followed by room for the
-- per-block partials (so they live as long as the result, whatever stream ran the kernels).
local function result_buffer(dtype, partial_bytes)
  local buf = core.mem_alloc(256 + partial_bytes)
  return buf, core.array_view(buf, 0, dtype, {}), buf:offset(256)
end

-- f(...) as grid blocks of BLOCK threads on stream (a prepared call: no options table to
-- make and read)
local function run(f, grid, stream, ...)
  f:prepared_async_call(grid, BLOCK, stream, ...)
end

-- Reductions whose result does not depend on the order they meet the elements in
-- (var_deviation's second operand is one value, read through a stride of 0).
local ORDER_FREE = {sum = true, prod = true, min = true, max = true, mean = true, any = true,
                    all = true, var_mean = true, var_deviation = true, nansum = true,
                    nanprod = true, nanmin = true, nanmax = true, nanmean = true,
                    nanvar_mean = true, count_not_nan = true, norm2 = true,
                    sum_squares = true, norm1 = true, norm0 = true, norm_max = true,
                    norm_min = true}

-- A contiguous 1-d view of a's elements when a is a dense view in another order (a
-- transposed or reversed array: its elements fill one block of memory); else nil.
local function dense_flat(a)
  local shape, strides = a.shape, a.strides
  local axes, low = {}, 0
  for d = 1, #shape do
    if shape[d] > 1 then
      axes[#axes + 1] = d
      if strides[d] < 0 then low = low + (shape[d] - 1) * strides[d] end
    end
  end
  table.sort(axes, function(x, y) return math.abs(strides[x]) < math.abs(strides[y]) end)
  local expect = a.itemsize
  for _, d in ipairs(axes) do
    if math.abs(strides[d]) ~= expect then return nil end
    expect = expect * shape[d]
  end
  return core.array_view(a, low, a.dtype, {a.size})
end

-- What a full reduction of op over dtype (and dtype2, dot's) needs, made once: its spec, the
-- accumulator's size, whether it can read 16 bytes at a time, and its kernels' cache keys.
-- (Building these on each call was about a third of a reduction's host time.)
local plans = {}
local function plan_of(op, dtype, dtype2)
  local by_dtype2 = kernel_cache.level(kernel_cache.level(plans, op), dtype)
  local plan = by_dtype2[dtype2 or ""]
  if plan == nil then
    local spec = ops[op](dtype, dtype2)
    local d = dtypes[dtype]
    local key = ("reduce|%s|%s|%s|"):format(op, dtype, dtype2 or "")
    plan = {
      spec = spec, acc_size = ctype_sizes[spec.acc], itemsize = d.size,
      vec = reads_vectors(spec, d, dtype2 and dtypes[dtype2]),
      source = function() return (M.builtin_source(op, dtype, dtype2)) end,
      vec_key = key .. "gpu_reduce_vec", index_key = key .. "gpu_reduce_index",
      finish_key = key .. "gpu_reduce_finish",
    }
    by_dtype2[dtype2 or ""] = plan
  end
  return plan
end

-- The Function of a plan's kernel called name, under its cache key.
local function plan_kernel(plan, key, name)
  return kernel_cache.get(key, function() return plan.source(), name, nil, module_options end)
end

-- Full reduction of a (and b for dot) on stream; returns the 0-d result and its buffer.
local function reduce_all(op, a, b, stream)
  if not a.is_contiguous and ORDER_FREE[op] and a.size > 0 then
    a = dense_flat(a) or a          -- read in memory order: contiguous, in 16-byte loads
  end
  local plan = plan_of(op, a.dtype, b and b.dtype)
  local n = a.size
  local vec = plan.vec and a.is_contiguous and a.ptr % 16 == 0 and
              (not b or plan.spec.scalar_b or (b.is_contiguous and b.ptr % 16 == 0))
  local per_thread = vec and 16 // plan.itemsize or 1
  local grid = math.max(1, math.min(max_grid(), ceil_div(n, BLOCK * per_thread)))
  local buf, out, partials = result_buffer(plan.spec.out, grid * plan.acc_size)
  if vec then
    local f = plan_kernel(plan, plan.vec_key, "gpu_reduce_vec")
    if b then run(f, grid, stream, a, b, n, partials, out, n)
    else run(f, grid, stream, a, n, partials, out, n) end
  else
    local f = plan_kernel(plan, plan.index_key, "gpu_reduce_index")
    if b then run(f, grid, stream, a, layout_of(a), b, layout_of(b), n, partials, out, n)
    else run(f, grid, stream, a, layout_of(a), n, partials, out, n) end
  end
  if grid > 1 then
    run(plan_kernel(plan, plan.finish_key, "gpu_reduce_finish"), 1, stream, partials, grid, out, n)
  end
  return out, buf, plan.spec.out
end

local op_names = {min = "minimum", max = "maximum", nanmin = "fmin", nanmax = "fmax"}

-- What reduce_axis needs of op over dtype, made once: the spec, the itemsize, and its two
-- kernels' cache keys and builders.
local axis_plans = {}      -- op -> dtype -> plan
local function axis_plan(op, dtype)
  local by_dtype = kernel_cache.level(axis_plans, op)
  local plan = by_dtype[dtype]
  if plan == nil then
    local key = ("reduce|%s|%s|"):format(op, dtype)
    local function builder(name)
      return function() return (M.builtin_source(op, dtype)), name, nil, module_options end
    end
    local spec, d = ops[op](dtype), dtypes[dtype]
    plan = {spec = spec, itemsize = d.size,
            -- elements a 16-byte load holds, where the kernels have gpu_reduce_axis_vec
            per_vector = reads_vectors(spec, d) and 16 // d.size or nil,
            -- threads an output along a contiguous axis at most (axis_threads): a warp for
            -- argmax's and argmin's pairs
            along_most = spec.acc == "lg_arg_pair" and 32 or nil,
            -- elements a load at most where gpu_reduce_columns takes the reduction: argmax's
            -- and argmin's 16 or 8 pairs a thread (1- and 2-byte dtypes) took 166 registers
            -- and ran at a third of the general kernel's speed
            columns_per_load = spec.acc == "lg_arg_pair" and 4 or 16,
            axis_key = key .. "|gpu_reduce_axis", axis_build = builder("gpu_reduce_axis"),
            vec_key = key .. "|gpu_reduce_axis_vec", vec_build = builder("gpu_reduce_axis_vec"),
            finish_key = key .. "|gpu_reduce_axis_finish",
            finish_build = builder("gpu_reduce_axis_finish"),
            finish_block_key = key .. "|gpu_reduce_axis_finish_block",
            finish_block_build = builder("gpu_reduce_axis_finish_block"),
            columns_key = key .. "|gpu_reduce_columns", columns_build = builder("gpu_reduce_columns"),
            columns_vec_key = key .. "|gpu_reduce_columns_vec",
            columns_vec_build = builder("gpu_reduce_columns_vec")}
    by_dtype[dtype] = plan
  end
  return plan
end

-- out[o] = output o's `splits` partials combined ([output][range], the axis kernels' layout),
-- for m outputs of k elements: a block an output where they are many partials, a thread
-- where few; partials are freed after.
local function finish_axis(plan, partials, m, splits, k, out, stream)
  if splits > 32 then
    run(kernel_cache.get(plan.finish_block_key, plan.finish_block_build), m, stream, partials,
        splits, k, out)
  else
    run(kernel_cache.get(plan.finish_key, plan.finish_build),
        math.min(max_grid(), ceil_div(m, BLOCK)), stream, partials, m, splits, k, out)
  end
  core.free_after(partials, stream)
end

-- Loads a row at most where reduce_columns takes a reduction (gpu_reduce_columns: a block
-- reads whole rows, so a row fits in a block)
M.columns_most = 64

-- reduce_axis of the k rows of a, axis_stride bytes apart, that each hold the m outputs'
-- elements side by side, into out: gpu_reduce_columns, then its finish if it took more than
-- one block.
local function reduce_columns(plan, a, m, k, axis_stride, width, per_load, out, stream)
  local rows = 1                        -- rows a block reads at once: a power of two
  while 2 * rows * width <= BLOCK do rows = 2 * rows end
  local blocks = math.max(1, math.min(max_grid(), k // (rows * 16)))   -- 16 loads a thread
  local partials = out
  if blocks > 1 then partials = core.mem_alloc(blocks * m * ctype_sizes[plan.spec.acc]) end
  if per_load > 1 then
    run(kernel_cache.get(plan.columns_vec_key, plan.columns_vec_build), blocks, stream, a, k,
        axis_stride, width, rows, out, partials)
  else
    run(kernel_cache.get(plan.columns_key, plan.columns_build), blocks, stream, a, k,
        axis_stride, width, rows, out, partials)
  end
  if blocks > 1 then finish_axis(plan, partials, m, blocks, k, out, stream) end
  return out
end

-- Reduction of a along axis (1-based, checked) on stream; returns a new array.
local function reduce_axis(fname, op, a, axis, stream)
  -- the kept axes' shape and layout (collapse and pack_layout of them), read in C at once
  local kept_shape, m, k, axis_stride, layout, start_align, run_stride = core.axis_layout(a, axis)
  if k == 0 and op_names[op] then
    M.argerror(1, fname, ("zero-size array to reduction operation %s which has no identity")
                         :format(op_names[op]), 2)
  end
  local dtype = a.dtype
  local plan = axis_plan(op, dtype)
  local spec = plan.spec
  local out = core.array_empty(kept_shape, spec.out)
  if m == 0 then return out end
  local along = axis_stride == plan.itemsize
  local per_vector = plan.per_vector
  if not along and (run_stride == plan.itemsize or m == 1) then   -- each row holds every output
    local per_load = per_vector and m % per_vector == 0 and (a.ptr | axis_stride) % 16 == 0 and
                     per_vector or 1
    if m // per_load <= M.columns_most and per_load <= plan.columns_per_load then
      return reduce_columns(plan, a, m, k, axis_stride, m // per_load, per_load, out, stream)
    end
  end
  -- contiguous axes that each start on 16 bytes and hold whole vectors: 16 bytes a load
  local vec = along and per_vector and start_align == 16 and k % per_vector == 0
  local items = vec and k // per_vector or k          -- loads along each axis
  local shares = M.axis_threads(m, items, along, plan.itemsize, plan.along_most)
  local blocks = math.min(ceil_div(m, BLOCK // shares), 0x7fffffff)
  -- enough blocks for the 8 of them a multiprocessor runs at once; along contiguous axes,
  -- half as many are enough (a split's second kernel cost more than the last blocks' wave)
  local want = 8 * M.multiprocessors()
  local splits, split_k = 1, items
  if not along or 2 * blocks < want then splits, split_k = M.split_ranges(blocks, items, want, 1) end
  local partials = out
  if splits > 1 then partials = core.mem_alloc(splits * m * ctype_sizes[spec.acc]) end
  if vec then
    run(kernel_cache.get(plan.vec_key, plan.vec_build), {blocks, splits}, stream, a, m, items,
        layout, out, partials, split_k, shares, k)
  else
    run(kernel_cache.get(plan.axis_key, plan.axis_build), {blocks, splits}, stream, a, m, k,
        axis_stride, layout, out, partials, split_k, shares, along and 1 or 0)
  end
  if splits > 1 then finish_axis(plan, partials, m, splits, k, out, stream) end
  return out
end

-- How gpu_reduce_axis shares out the m outputs of a reduction along axes of k loads (elements
-- of itemsize bytes, or 16-byte vectors of them): the threads an output takes.  Along
-- contiguous axes (consecutive threads along an axis), a power of two up to `most` (256 unless
-- given), or more where the outputs fill less than a block, that leaves each thread 8 loads or
-- more: few, long outputs a block.  (On the H200, 8192 x 8192 float32 summed along its rows at
-- 4.2 TB/s with a block a row, 3.6-4.0 with a warp a row; argmax, whose pairs' combining costs
-- more, best with a warp a row.)  Across the outputs, share_threads' count, but where fewer
-- than 32 outputs leave a warp's lanes idle, more shares, up to filling the block (a warp
-- then reads several rows' outputs, adjacent in a dense array: 2^22 x 16 float32 summed along
-- its columns at 1.4 TB/s with half of each warp idle).
function M.axis_threads(m, k, along, itemsize, most)
  local least = 8                       -- loads a thread, along
  if not along then
    most, least = 8, math.max(64 // itemsize, 1)
  end
  most = most or BLOCK
  while m * most < BLOCK do most = 2 * most end
  local shares = 1
  while shares < most and 2 * shares * least <= k do shares = 2 * shares end
  return shares
end

-- The threads of a 256-thread block that share each of `sums` sums of k elements
-- (gpu_reduce_axis; matmul's gpu_matvec): each at least 64 bytes of the k where k is that long;
-- with `along` (consecutive threads along the k) up to 32 a sum, or all 256 of a block between
-- fewer than 8 sums; across the sums up to 8 (so that a warp's lanes take 32 consecutive sums).
-- (On the H100, 2^24 float32 in rows of 16 to 128 summed at 2.1-2.2 TB/s with 16 elements a
-- thread, at 0.1-0.7 TB/s with 32 threads a row.)
function M.share_threads(sums, k, along, itemsize)
  local most = 8
  if along then
    most = 32
    while sums * most < BLOCK do most = 2 * most end
  end
  local least = math.max(64 // itemsize, 1)
  local shares = 1
  while shares < most and 2 * shares * least <= k do shares = 2 * shares end
  return shares
end

-- The ranges each sum's k elements are split into, among blocks, when the sums make only
-- `blocks` blocks: enough for `want` blocks, none shorter than 1024 elements, each a multiple
-- of unit elements long.  Returns the number of ranges and the length of each.
function M.split_ranges(blocks, k, want, unit)
  if blocks >= want or k < 2048 then return 1, k end
  local splits = math.min(ceil_div(want, blocks), k // 1024, 65535)
  local split_k = ceil_div(ceil_div(k, splits), unit) * unit
  return ceil_div(k, split_k), split_k
end

-- Argument checking ------------------------------------------------------------------------

local gpu_args = require "gpu.args"
local typename, raise = gpu_args.typename, gpu_args.raise
local is_scalar = gpu_args.is_scalar

M.argerror = gpu_args.argerror
local argerror = M.argerror

function M.check_array(a, n, fname)
  if getmetatable(a) ~= core.types.GPUArray then
    argerror(n, fname, "GPUArray expected, got " .. typename(a), 2)
  end
  if a.freed then argerror(n, fname, "array has been freed", 3) end
  return a
end
local check_array = M.check_array

-- The shared option check (which also checks a stream option).
function M.check_options(opts, n, fname, known)
  return require("gpu.args").check_options(opts, n, fname, known, 2)
end
local check_options = M.check_options

local check_axis = require("gpu.args").check_axis

local axis_options = {stream = true, axis = true}
local stream_options = {stream = true}

-- The value of the 0-d array result, once the stream is done (a[1] reads it in C).
local function fetch(result, stream)
  if stream then stream:synchronize() end
  return result[1]
end

-- The checks and the axis form both kinds of reduction share; finish(a, opts) does a whole-
-- array reduction.  (The checks stay in the returned function, so errors blame its caller.)
local function reduction(op, finish)
  return function(a, opts)
    check_array(a, 1, op)
    if op_names[op] and dtypes[a.dtype].kind == "c" then
      argerror(1, op, ("%s is not defined for complex arrays (%s has no order)"):format(op, a.dtype))
    end
    opts = check_options(opts, 2, op, axis_options)
    if opts.axis ~= nil then
      return reduce_axis(op, op, a, check_axis(opts.axis, a.ndim, 2, op), opts.stream)
    end
    if a.size == 0 and op_names[op] then
      argerror(1, op, ("zero-size array to reduction operation %s which has no identity")
                      :format(op_names[op]))
    end
    return finish(a, opts)
  end
end

-- The C caller (core.reduction_caller) of op's whole reductions of an array of dtype that
-- fits one block of gpu_reduce_vec (contiguous, 16-byte aligned, at most BLOCK 16-byte
-- vectors), into a new 0-d array; general(_, a) takes all else.  Only general where op over
-- dtype reads no vectors, or is not defined (the general path words the error).
-- With dtype2, the caller of a dot-like op of two arrays, which must be of one size.
local function small_caller(op, dtype, general, dtype2)
  if op_names[op] and dtypes[dtype].kind == "c" then return general end
  local plan = plan_of(op, dtype, dtype2)
  if not plan.vec then return general end
  local arguments = {{dtype = dtype, pointer = true}, dtype2 and {dtype = dtype2, pointer = true}}
  return core.reduction_caller(arguments,
                               function() return plan_kernel(plan, plan.vec_key, "gpu_reduce_vec") end,
                               general, BLOCK, 16 // plan.itemsize, plan.spec.out, 16)
end

local GPUArray = core.types.GPUArray

-- gpuarray.<op>(a[, {axis = k, stream = s}]) -> GPUArray (0-d without axis)
local function device_reduction(op)
  local checked = reduction(op, function(a, opts) return (reduce_all(op, a, nil, opts.stream)) end)
  local function general(_, a) return checked(a) end
  local callers = {}          -- dtype -> small_caller
  return function(a, opts)
    if opts ~= nil or getmetatable(a) ~= GPUArray then return checked(a, opts) end
    local dtype = a.dtype
    local call = callers[dtype]
    if call == nil then
      call = small_caller(op, dtype, general)
      callers[dtype] = call
    end
    return call(nil, a)
  end
end


-- a:<op>([{axis = k, stream = s}]) -> Lua value (an array with axis).  Without options the
-- device form (its C caller for small arrays) makes the 0-d result and a[1] reads it in C.
local function host_reduction(op)
  local checked = reduction(op, function(a, opts)
    return fetch((reduce_all(op, a, nil, opts.stream)), opts.stream)
  end)
  local on_device = device_reduction(op)
  return function(a, opts)
    if opts ~= nil or getmetatable(a) ~= GPUArray then return checked(a, opts) end
    local result = on_device(a)
    local value = result[1]
    result:free()
    return value
  end
end

local function check_dot(a, b, opts, fname)
  check_array(a, 1, fname)
  check_array(b, 2, fname)
  opts = check_options(opts, 3, fname, stream_options)
  if a.size ~= b.size then
    argerror(2, fname, ("arrays differ in size (%d and %d)"):format(a.size, b.size), 2)
  end
  return opts
end

-- gpuarray.dot(a, b) -> Lua value: the sum of a * b over all elements (synchronizes);
-- gpuarray.dot(a, b, {stream = s}) -> 0-d GPUArray that stays on the device.  Two arrays of
-- one size without options take the C caller of one block where they fit it.
local function dot(op)
  local function general(_, a, b)
    check_dot(a, b, nil, op)
    return (reduce_all(op, a, b, nil))
  end
  local callers = {}          -- dtype -> dtype2 -> small_caller
  return function(a, b, opts)
    if opts == nil and getmetatable(a) == GPUArray and getmetatable(b) == GPUArray and
       a.size == b.size then
      local by_dtype2 = kernel_cache.level(callers, a.dtype)
      local call = by_dtype2[b.dtype]
      if call == nil then
        call = small_caller(op, a.dtype, general, b.dtype)
        by_dtype2[b.dtype] = call
      end
      local result = call(nil, a, b)
      local value = result[1]
      result:free()
      return value
    end
    opts = check_dot(a, b, opts, op)
    local result = reduce_all(op, a, b, opts.stream)
    if opts.stream ~= nil then return result end
    return fetch(result)
  end
end
M.dot = dot("dot")
-- gpuarray.vdot(a, b[, {stream = s}]): PyCUDA's, the sum of conj(a) * b
M.vdot = dot("vdot")

-- a:dot(b[, {stream = s}]) -> Lua value
function M.dot_value(a, b, opts)
  if opts == nil then return M.dot(a, b) end
  opts = check_dot(a, b, opts, "dot")
  return fetch((reduce_all("dot", a, b, opts.stream)), opts.stream)
end

M.reduce_all = reduce_all
M.reduce_axis = reduce_axis
M.fill = fill

-- ReductionKernel --------------------------------------------------------------------------

-- Splits "float *x, const int *y, int n" into declarations {text, name, pointer}.
local function parse_arguments(arguments, fname)
  local params = {}
  for decl in (arguments .. ","):gmatch("%s*([^,]-)%s*,") do
    if decl == "" then argerror(5, fname, "empty declaration in arguments", 4) end
    local name = decl:match("([%a_][%w_]*)%s*$")
    if not name then argerror(5, fname, ("cannot read declaration '%s'"):format(decl), 4) end
    params[#params + 1] = {text = decl, name = name, pointer = decl:find("[%*%[]") ~= nil}
  end
  return params
end

local kernel_options = {name = true, preamble = true, options = true}
local reduction_kernel_count = 0

local ReductionKernel = {}
ReductionKernel.__index = ReductionKernel
ReductionKernel.__name = "gpu.ReductionKernel"

local ONE_BLOCK = BLOCK * 8   -- elements a ReductionKernel call reduces in one block at most
local call_general

-- gpu.ReductionKernel(dtype_out, neutral, reduce_expr, map_expr, arguments[, opts])
-- dtype_out: a dtype name, or {ctype = "my_struct", itemsize = n} for a type the preamble
-- declares (the result is then an itemsize-byte uint8 array holding the struct).
function M.ReductionKernel(dtype_out, neutral, reduce_expr, map_expr, arguments, opts)
  local fname = "ReductionKernel"
  local out_ctype, out_size, out_dtype, shuffle
  if type(dtype_out) == "string" then
    local d = dtypes[dtype_out]
    if d == nil then argerror(1, fname, ("unknown dtype '%s'"):format(dtype_out)) end
    if d.kind == "f" and d.size == 2 then
      argerror(1, fname, dtype_out .. " is a storage type here: reduce in float32 instead")
    end
    out_ctype, out_size, out_dtype = d.ctype, d.size, dtype_out
    shuffle = dtype_out ~= "bool"
  elseif type(dtype_out) == "table" then
    out_ctype, out_size = dtype_out.ctype, dtype_out.itemsize
    if type(out_ctype) ~= "string" or math.type(out_size) ~= "integer" or out_size < 1 then
      argerror(1, fname, "struct dtype needs a ctype string and a positive integer itemsize")
    end
    out_dtype, shuffle = nil, false
  else
    argerror(1, fname, "dtype name or {ctype = ..., itemsize = ...} expected, got " .. typename(dtype_out))
  end
  if type(neutral) == "number" then
    if neutral ~= neutral or neutral == math.huge or neutral == -math.huge then
      argerror(2, fname, "neutral must be finite (write it as a C expression string)")
    end
    neutral = math.type(neutral) == "integer" and ("%d"):format(neutral) or ("%.17g"):format(neutral)
  elseif type(neutral) ~= "string" then
    argerror(2, fname, "neutral must be a C expression string or a number, got " .. typename(neutral))
  end
  if type(reduce_expr) ~= "string" then argerror(3, fname, "reduce_expr must be a string, got " .. typename(reduce_expr)) end
  if type(map_expr) ~= "string" then argerror(4, fname, "map_expr must be a string, got " .. typename(map_expr)) end
  if type(arguments) ~= "string" then argerror(5, fname, "arguments must be a string, got " .. typename(arguments)) end
  opts = check_options(opts, 6, fname, kernel_options)
  if opts.name ~= nil and (type(opts.name) ~= "string" or not opts.name:match("^[%a_][%w_]*$")) then
    argerror(6, fname, "option 'name' must be a C identifier")
  end
  if opts.preamble ~= nil and type(opts.preamble) ~= "string" then
    argerror(6, fname, "option 'preamble' must be a string, got " .. typename(opts.preamble))
  end
  local params = parse_arguments(arguments, fname)
  local first_vector
  local names = {}
  for i, p in ipairs(params) do
    names[i] = p.name
    if p.pointer and not first_vector then first_vector = i end
  end
  if not first_vector then argerror(5, fname, "arguments declare no array (pointer) to reduce over") end
  reduction_kernel_count = reduction_kernel_count + 1
  local source = fill(template(), {
    PREAMBLE = opts.preamble or "", SHUFFLE = shuffle and "1" or "0",
    ACC_T = out_ctype, OUT_T = out_ctype, REDUCE = reduce_expr, NEUTRAL = neutral,
    FINISH = "a", WITH_VEC = "0", WITH_AXIS = "0", IN_T = "int", IN2_T = "int", HAS_B = "0",
    B_SCALAR = "0", B_PARAM = "", WITH_WHOLE = "0", WHOLE = "0",
    MAPV = "0", MAP_ARGS = arguments, MAP_NAMES = table.concat(names, ", "), MAP = map_expr,
    MAP_AT = "0",
  })
  local k = {
    source = source, params = params, first_vector = first_vector, out_dtype = out_dtype,
    out_size = out_size, name = opts.name or "reduce_kernel",
    options = {no_extern_c = true, name = (opts.name or "reduce_kernel") .. ".cu", options = opts.options},
    key = "ReductionKernel|" .. source .. "|" .. table.concat(opts.options or {}, " "), keys = {},
  }
  -- Where every declaration names a dtype, a call of plain arrays of those dtypes and numbers
  -- over at most one block's elements goes straight to one launch in C (core.reduction_caller);
  -- all else, and kernels reducing to a struct, to call_general.
  local declared = out_dtype and ew.parse_arguments(arguments)
  if not declared then return setmetatable(k, ReductionKernel) end
  k.declared = declared
  local call = core.reduction_caller(declared, function() return k:_function("gpu_reduce_index") end,
                                     call_general, BLOCK, ONE_BLOCK // BLOCK, out_dtype)
  return setmetatable(k, {__index = ReductionKernel, __name = ReductionKernel.__name, __call = call})
end

function ReductionKernel:_function(name)
  local options = self.options
  local source = self.source
  -- each name's key made once: a long string built per call is hashed whole each time
  local key = self.keys[name]
  if key == nil then
    key = self.key .. "|" .. name
    self.keys[name] = key
  end
  return kernel_cache.get(key, function() return source, name, nil, options end)
end

-- k(args...[, {stream = s}]) -> 0-d GPUArray (or the struct's bytes as a uint8 array)
function call_general(self, ...)
  local args = table.pack(...)
  local opts
  if args.n > 0 and type(args[args.n]) == "table" and getmetatable(args[args.n]) == nil then
    opts = check_options(args[args.n], args.n, self.name, stream_options)
    args.n = args.n - 1
  else
    opts = {}
  end
  if args.n ~= #self.params then
    raise(("'%s' takes %d arguments, got %d"):format(self.name, #self.params, args.n))
  end
  local copies = {}
  for i, p in ipairs(self.params) do
    local v = args[i]
    if p.pointer then
      check_array(v, i, self.name)
      -- a view goes in as a contiguous copy, in its row-major order
      if not v.is_contiguous then
        args[i] = v:copy(opts.stream and {stream = opts.stream})
        copies[#copies + 1] = args[i]
      end
    elseif self.declared and is_scalar(v) then
      -- a typed scalar of the parameter's dtype goes in as its bytes; another, by its value
      if v.dtype ~= self.declared[i].dtype then args[i] = gpu_args.scalar_number(v) end
    elseif self.declared and type(v) ~= "number" and type(v) ~= "boolean" then
      argerror(i, self.name, ("expected a number for %s, got %s"):format(self.declared[i].dtype,
                                                                          typename(v)))
    end
  end
  local n = args[self.first_vector].size
  -- a small reduction is one block's: a few elements a thread cost less than a second launch
  local grid = n <= ONE_BLOCK and 1 or math.max(1, math.min(max_grid(), ceil_div(n, BLOCK)))
  local buf = core.mem_alloc(256 + grid * self.out_size)
  local out = self.out_dtype and core.array_view(buf, 0, self.out_dtype, {})
                             or core.array_view(buf, 0, "uint8", {self.out_size})
  local partials = buf:offset(256)
  local launch = {block = BLOCK, grid = grid, stream = opts.stream}
  local m = args.n
  args[m + 1], args[m + 2], args[m + 3], args[m + 4], args[m + 5] = n, partials, out, n, launch
  self:_function("gpu_reduce_index")(table.unpack(args, 1, m + 5))
  if grid > 1 then run(self:_function("gpu_reduce_finish"), 1, opts.stream, partials, grid, out, n) end
  for _, c in ipairs(copies) do core.free_after(c, opts.stream) end
  return out
end
ReductionKernel.__call = call_general

-- argmax and argmin ------------------------------------------------------------------------

-- The checks of argmax and argmin, then the axis form, or finish(index, stream) with the
-- 1-based row-major index of a's best element, a 0-d int64 array.  (The checks stay in the
-- returned function, so errors blame its caller.)
local function arg_reduction(op, finish)
  return function(a, opts)
    check_array(a, 1, op)
    opts = check_options(opts, 2, op, axis_options)
    if dtypes[a.dtype].kind == "c" then
      argerror(1, op, ("%s is not defined for complex arrays (%s has no order)"):format(op, a.dtype))
    end
    if opts.axis ~= nil then
      local axis = check_axis(opts.axis, a.ndim, 2, op)
      if a.shape[axis] == 0 then
        argerror(1, op, ("attempt to get %s of an empty sequence (axis %d has length 0)")
                        :format(op, opts.axis))
      end
      return reduce_axis(op, op, a, axis, opts.stream)
    end
    if a.size == 0 then argerror(1, op, ("attempt to get %s of an empty array"):format(op)) end
    return finish((reduce_all(op, a, nil, opts.stream)), opts.stream)
  end
end

for _, op in ipairs{"argmax", "argmin", "nanargmax", "nanargmin"} do
  -- gpuarray.argmax(a[, {axis = k, stream = s}]) -> int64 GPUArray (0-d without axis)
  M[op] = arg_reduction(op, function(index) return index end)
end
for _, op in ipairs{"argmax", "argmin"} do
  -- a:argmax([{axis = k, stream = s}]) -> Lua integer (synchronizes); an array with axis
  M[op .. "_value"] = arg_reduction(op, fetch)
end

-- var and std ------------------------------------------------------------------------------

-- The elementwise program |x - m|^2 over x of dtype and its mean m of the work dtype, in the
-- work dtype's real type (complex: re^2 + im^2, as NumPy sums them).  Made once a dtype, as
-- is each scale program below: ew.program checks its spec and builds its key each call.
local deviation_programs = {}
local function deviation_program(dtype)
  local made = deviation_programs[dtype]
  if made then return made end
  local work = M.var_work_dtype(dtype)
  local wtype, real = dtypes[work].ctype, M.var_dtype(work)   -- var_dtype: the real type
  local rtype = dtypes[real].ctype
  local squared = dtypes[work].kind == "c" and "d.re * d.re + d.im * d.im" or "d * d"
  made = ew.program{
    expr = ("var_squared_deviation((%s)(x), m)"):format(wtype), out = real,
    name = "var_deviation_" .. dtype,
    operands = {{name = "x", dtype = dtype}, {name = "m", dtype = work}},
    preamble = ("__device__ __forceinline__ %s var_squared_deviation(%s x, %s m) {\n"
                .. "  const %s d = x - m;\n  return %s;\n}\n"):format(rtype, wtype, wtype, wtype, squared),
  }
  deviation_programs[dtype] = made
  return made
end

-- The program sum / count (and its square root for std), stored as the result dtype; count is
-- a float64 argument, so every ddof reuses the kernel.
local scale_programs = {}   -- op -> sum dtype -> out -> program
local function scale_program(op, sum_dtype, out)
  local by_out = kernel_cache.level(kernel_cache.level(scale_programs, op), sum_dtype)
  local made = by_out[out]
  if made == nil then
    made = ew.program{
      expr = op == "std" and "sqrt((double)s / count)" or "(double)s / count", out = out,
      name = ("%s_scale_%s_%s"):format(op, sum_dtype, out),
      operands = {{name = "s", dtype = sum_dtype}, {name = "count", dtype = "float64", scalar = true}},
    }
    by_out[out] = made
  end
  return made
end

M.deviation_program, M.scale_program = deviation_program, scale_program

-- nanvar's programs: |x - m|^2 as deviation_program's, 0 where x is NaN; and the sum of
-- those over the count of numbers less ddof, NaN where that is not positive (NumPy's), its
-- square root for nanstd.
local nan_deviation_programs, nan_scale_programs = {}, {}
local function nan_deviation_program(dtype)
  local made = nan_deviation_programs[dtype]
  if made then return made end
  local work = M.var_work_dtype(dtype)
  local wtype, real = dtypes[work].ctype, M.var_dtype(work)
  local squared = dtypes[work].kind == "c" and "d.re * d.re + d.im * d.im" or "d * d"
  made = ew.program{
    expr = ("var_nan_squared_deviation((%s)(x), m)"):format(wtype), out = real,
    name = "nanvar_deviation_" .. dtype,
    operands = {{name = "x", dtype = dtype}, {name = "m", dtype = work}},
    preamble = ("__device__ __forceinline__ %s var_nan_squared_deviation(%s x, %s m) {\n"
                .. "  if (x != x) return 0;\n  const %s d = x - m;\n  return %s;\n}\n")
               :format(dtypes[real].ctype, wtype, wtype, wtype, squared),
  }
  nan_deviation_programs[dtype] = made
  return made
end

local function nan_scale_program(op, sum_dtype, out)
  local by_out = kernel_cache.level(kernel_cache.level(nan_scale_programs, op), sum_dtype)
  local made = by_out[out]
  if made == nil then
    local quotient = "(double)s / ((double)c - ddof)"
    made = ew.program{
      expr = ("(double)c - ddof > 0 ? %s : __longlong_as_double(0x7ff8000000000000LL)")
             :format(op == "nanstd" and "sqrt(" .. quotient .. ")" or quotient),
      out = out, name = ("%s_scale_%s_%s"):format(op, sum_dtype, out),
      operands = {{name = "s", dtype = sum_dtype}, {name = "c", dtype = "int64"},
                  {name = "ddof", dtype = "float64", scalar = true}},
    }
    by_out[out] = made
  end
  return made
end

local var_options = {axis = true, ddof = true, stream = true}

-- The sum of the array squares along axis (whole without one), and the buffer to free after it.
local function sum_of(op, squares, axis, stream)
  if axis then
    local sum = reduce_axis(op, "sum", squares, axis, stream)
    return sum, sum
  end
  return reduce_all("sum", squares, nil, stream)
end

-- NumPy's var (or std: op) of a, whole (axis nil) or along axis: two passes, the mean and then
-- the sum of squared deviations from it (whole: in one reduction, ops.var_deviation), divided
-- by n - ddof (0 when ddof >= n, giving inf or nan as NumPy does).  Returns the result array;
-- temporaries are freed in the stream's order.
local function variance(op, a, axis, ddof, stream)
  local dtype = a.dtype
  local work = M.var_work_dtype(dtype)
  local mean_op = M.mean_dtype(dtype) == work and "mean" or "var_mean"
  local mean, mean_buf, n, broadcast_mean
  if axis then
    mean = reduce_axis(op, mean_op, a, axis, stream)
    mean_buf, n = mean, a.shape[axis]
    local shape = a.shape            -- the kept shape with the axis back as length 1
    shape[axis] = 1
    broadcast_mean = core.array_view(mean, 0, work, shape)
  else
    mean, mean_buf = reduce_all(mean_op, a, nil, stream)
    n, broadcast_mean = a.size, mean
  end
  local sum, sum_buf
  if axis or n == 0 then
    local squares = ew.launch(deviation_program(dtype), nil, stream, op, a, broadcast_mean)
    sum, sum_buf = sum_of(op, squares, axis, stream)
    core.free_after(squares, stream)
  else               -- the squared deviations summed as they are made: one read of a
    sum, sum_buf = reduce_all("var_deviation", a, core.array_view(mean, 0, work, {n}, {0}), stream)
  end
  core.free_after(mean_buf, stream)
  local divisor = math.max(n - ddof, 0) + 0.0
  local result = ew.launch(scale_program(op, sum.dtype, M.var_dtype(dtype)), nil, stream, op, sum,
                           divisor)
  core.free_after(sum_buf, stream)
  return result
end

M.nan_deviation_program, M.nan_scale_program = nan_deviation_program, nan_scale_program

-- NumPy's nanvar (nanstd: op) of a float or complex array, whole (axis nil) or along axis:
-- var over each line's numbers, NaNs skipped: their mean and count in one pass, then the
-- squared deviations (NaN's 0) summed, over the count less ddof (NaN where not positive).
local function nan_variance(op, a, axis, ddof, stream)
  local kind = dtypes[a.dtype].kind
  if kind ~= "f" and kind ~= "c" then return variance(op:sub(4), a, axis, ddof, stream) end
  local work = M.var_work_dtype(a.dtype)
  local mean, mean_buf, count, count_buf, broadcast_mean
  if axis then
    mean = reduce_axis(op, "nanvar_mean", a, axis, stream)
    count = reduce_axis(op, "count_not_nan", a, axis, stream)
    mean_buf, count_buf = mean, count
    local shape = a.shape
    shape[axis] = 1
    broadcast_mean = core.array_view(mean, 0, work, shape)
  else
    mean, mean_buf = reduce_all("nanvar_mean", a, nil, stream)
    count, count_buf = reduce_all("count_not_nan", a, nil, stream)
    broadcast_mean = mean
  end
  local squares = ew.launch(nan_deviation_program(a.dtype), nil, stream, op, a, broadcast_mean)
  core.free_after(mean_buf, stream)
  local sum, sum_buf = sum_of(op, squares, axis, stream)
  core.free_after(squares, stream)
  local result = ew.launch(nan_scale_program(op, sum.dtype, M.var_dtype(a.dtype)), nil, stream, op,
                           sum, count, ddof + 0.0)
  core.free_after(sum_buf, stream)
  core.free_after(count_buf, stream)
  return result
end

-- The checks of var and std (op; nanvar and nanstd too), then finish(result, stream) without
-- an axis.  (The checks stay in the returned function, so errors blame its caller.)
local function variance_reduction(op, finish)
  local compute = op:match("^nan") and nan_variance or variance
  return function(a, opts)
    check_array(a, 1, op)
    opts = check_options(opts, 2, op, var_options)
    local ddof = opts.ddof or 0
    if math.type(ddof) ~= "integer" then
      argerror(2, op, "option 'ddof' must be an integer, got " .. (math.type(ddof) or typename(ddof)))
    end
    if ddof < 0 then argerror(2, op, ("option 'ddof' must not be negative, got %d"):format(ddof)) end
    if opts.axis ~= nil then
      return compute(op, a, check_axis(opts.axis, a.ndim, 2, op), ddof, opts.stream)
    end
    return finish(compute(op, a, nil, ddof, opts.stream), opts.stream)
  end
end

for _, op in ipairs{"var", "std", "nanvar", "nanstd"} do
  -- gpuarray.var(a[, {axis = k, ddof = d, stream = s}]) -> GPUArray (0-d without axis)
  M[op] = variance_reduction(op, function(result) return result end)
  -- a:var([{axis = k, ddof = d, stream = s}]) -> Lua number (synchronizes); an array with axis
  M[op .. "_value"] = variance_reduction(op, function(result, stream)
    local value = fetch(result, stream)
    core.free_after(result, stream)
    return value
  end)
end

-- install ----------------------------------------------------------------------------------

function M.install(gpu)
  local methods = core.types.GPUArray.__methods
  local ga = gpu.gpuarray or {}
  gpu.gpuarray = ga
  for _, op in ipairs{"sum", "prod", "min", "max", "mean"} do
    methods[op] = host_reduction(op)
    ga[op] = device_reduction(op)
  end
  local any, all = host_reduction("any"), host_reduction("all")
  methods.any, methods.all = any, all
  ga.any, ga.all = device_reduction("any"), device_reduction("all")
  methods.dot = M.dot_value
  ga.dot, ga.vdot = M.dot, M.vdot
  methods.argmax, methods.argmin = M.argmax_value, M.argmin_value
  ga.argmax, ga.argmin = M.argmax, M.argmin
  methods.var, methods.std = M.var_value, M.std_value
  ga.var, ga.std = M.var, M.std
  ga.nanvar, ga.nanstd = M.nanvar, M.nanstd
  ga.nanargmax, ga.nanargmin = M.nanargmax, M.nanargmin
  for _, op in ipairs{"nansum", "nanprod", "nanmin", "nanmax", "nanmean"} do ga[op] = device_reduction(op) end
  gpu.ReductionKernel = M.ReductionKernel
end

return M
