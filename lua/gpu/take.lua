-- gpu.take: gathers and scatters by index (kernels/take.cu), a read as a flat row-major array
-- and the indices 1-based, as a[i] is:
--
--   gpuarray.take(a, indices[, {out =, mode =, stream =}])   PyCUDA's and NumPy's gather: the
--     result has the indices' shape and a's dtype, element i is a[indices[i]];
--   gpuarray.put(a, indices, values[, {mode =, stream =}])    NumPy's put: a[indices[i]] =
--     values[i], the values repeated when there are fewer of them (one value serves all);
--   gpuarray.scatter_add(a, indices, values[, {mode =, stream =}])   CuPy's scatter_add,
--     NumPy's add.at: a[indices[i]] += values[i], repeated indices adding up;
--   gpuarray.bincount(x[, {weights =, minlength =, stream =}])   NumPy's bincount
--     (kernels/bincount.cu): how many of x's values (integers from 0, which are data, not
--     indices) are each of 0, 1, ..., max(x), the count of value v at element v + 1;
--   gpuarray.histogram(x[, {bins =, range =, weights =, stream =}]) -> counts, edges
--     NumPy's histogram, on the same kernels;
--   gpuarray.take_along_axis(a, indices, axis[, {stream =}])   NumPy's, through take.
--
-- indices is an integer GPUArray or a Lua table of integers.  mode says what an index outside
-- 1..a.size does: "raise" (the default) raises an error naming the first such index, which
-- needs a synchronization of the stream (put and scatter_add then change nothing); "wrap"
-- counts around cyclically (0 is the last element, a.size + 1 the first); "clip" takes the
-- nearer end.

local core = require "gpu.core"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local args = require "gpu.args"
local promote = require "gpu.promote"

local M = {}

local argerror, typename, is_scalar = args.argerror, args.typename, args.is_scalar
local BLOCK = 256
local TAKE_OPTIONS = {out = true, mode = true, stream = true}
local SCATTER_OPTIONS = {mode = true, stream = true}
local MODES = {raise = 0, wrap = 1, clip = 2}
local SHARED_BINS = 4096        -- bins bincount.cu's blocks count in shared memory first (32 KiB)
local check_array = reduction.check_array

local overlap = ew.overlap

local unsigned_text = require("gpu.format").unsigned_text

-- A contiguous array of v's elements (v itself, or a copy freed after the stream's work); a
-- copy also where v shares memory with `avoid`, which the kernel writes.
local function contiguous(v, stream, fname, avoid)
  if v.is_contiguous and not (avoid and overlap(v, avoid)) then return v, false end
  return ew.launch(ew.copy_program(v.dtype), nil, stream, fname, v), true
end

-- indices (argument 2) as an integer GPUArray on a's device (a table is uploaded as int64).
local function index_array(a, indices, fname)
  if type(indices) == "table" and getmetatable(indices) == nil then
    local ok, h = pcall(core.host.from_table, indices, "int64")
    if not ok then argerror(2, fname, "indices must be a GPUArray or a table of integers") end
    indices = require("gpu.gpuarray").to_gpu(h)
  end
  check_array(indices, 2, fname)
  local kind = reduction.dtypes[indices.dtype].kind
  if kind ~= "i" and kind ~= "u" then
    argerror(2, fname, ("indices must be integers, got %s"):format(indices.dtype))
  end
  if a.device ~= indices.device then
    argerror(2, fname, ("indices are on device %d, the array on device %d"):format(indices.device, a.device))
  end
  return indices
end

-- The mode option's number (argument n of fname).
local function mode_number(opts, n, fname)
  local mode = MODES[opts.mode or "raise"]
  if mode == nil then
    argerror(n, fname, ("option 'mode' must be 'raise', 'wrap' or 'clip', got %s")
                       :format(type(opts.mode) == "string" and "'" .. opts.mode .. "'" or typename(opts.mode)))
  end
  return mode
end

-- Kernel `name` of take.cu for elements of item_bytes, indices of index_dtype and mode; with
-- add_type, scatter_add's over add_components of that C type an element.  (The kernels of one
-- source share its module: SourceModule's own cache finds it for the second one.)
local function kernel(name, item_bytes, index_dtype, mode, add_type, add_components)
  local key = ("take|%s|%d|%s|%d|%s|%d"):format(name, item_bytes, index_dtype, mode, add_type or "",
                                                add_components or 0)
  return kernel_cache.get(key, function()
    return reduction.fill(core.kernel_sources["take.cu"], {
      MODE = tostring(mode), ITEM_BYTES = tostring(item_bytes),
      INDEX_T = reduction.dtypes[index_dtype].ctype,
      ADD_T = add_type or "float", ADD_COMPONENTS = tostring(add_components or 0),
    }), name, nil, {no_extern_c = true, name = "take.cu"}
  end)
end

-- A device word for the kernels' atomicMin of the first bad position (all ones: none yet).
local function bad_slot(stream)
  local slot = core.mem_alloc(8)
  core.memset_d32_async(slot, 0xffffffff, 2, stream)
  return slot
end

-- The 0-based position in slot, or nil where no index was bad; synchronizes the stream and
-- frees slot.
local function first_bad(slot, stream)
  if stream then stream:synchronize() end
  local bad = core.from_device(slot, 1, "int64")[1]
  slot:free()
  return bad >= 0 and bad or nil
end

-- The error for the index at 0-based position bad of where (a copy of indices, or indices).
local function out_of_range(fname, indices, where, bad, size)
  local index = where[bad + 1]
  index = indices.dtype == "uint64" and unsigned_text(index) or ("%d"):format(index)
  argerror(2, fname, ("index %s at position %d is out of range for %d elements"):format(index, bad + 1, size))
end

function M.take(a, indices, opts)
  check_array(a, 1, "take")
  indices = index_array(a, indices, "take")
  opts = args.check_options(opts, 3, "take", TAKE_OPTIONS)
  local mode = mode_number(opts, 3, "take")
  local out, stream = opts.out, opts.stream
  if out ~= nil then
    check_array(out, 3, "take")
    if out.dtype ~= a.dtype or not promote.same_shape(out.shape, indices.shape) then
      argerror(3, "take", ("out array is %s of shape %s, the result %s of shape %s")
                          :format(out.dtype, promote.shape_text(out.shape), a.dtype,
                                  promote.shape_text(indices.shape)))
    end
  end
  local result = out or core.array_empty(indices.shape, a.dtype)
  local n = indices.size
  if n == 0 then return result end
  if a.size == 0 then argerror(2, "take", "cannot take from an empty array") end
  local source, source_copied = contiguous(a, stream, "take")
  local where, where_copied = contiguous(indices, stream, "take")
  -- gathered in place when it can be; through a temporary when out is strided, overlaps
  -- an input, or must stay as it was should an index be out of range (NumPy's "raise")
  local target = result
  if not result.is_contiguous or overlap(result, a) or overlap(result, indices) or
     (mode == MODES.raise and out ~= nil) then
    target = core.array_empty(result.shape, result.dtype)
  end
  local slot = mode == MODES.raise and bad_slot(stream) or nil
  kernel("gpu_take", a.itemsize, indices.dtype, mode)(target, source, where, n, a.size, slot,
    {block = BLOCK, grid = reduction.grid_stride_blocks(n, BLOCK), stream = stream})
  if source_copied then core.free_after(source, stream) end
  local bad = slot and first_bad(slot, stream)
  if bad then
    if target ~= result then target:free() end
    local _, err = pcall(out_of_range, "take", indices, where, bad, a.size)
    if where_copied then where:free() end
    error(err, 0)
  end
  if where_copied then core.free_after(where, stream) end
  if target ~= result then
    ew.launch(ew.copy_program(result.dtype), result, stream, "take", target)
    core.free_after(target, stream)
  end
  return result
end

-- values (argument 3 of fname) as a GPUArray of dtype on a's device: a GPUArray (converted as
-- astype converts), a table of values, or one value (a one-element array).  Returns it and
-- whether it is a temporary of the caller's.  check_dtype is the dtype a value must fit.
local function value_array(a, values, dtype, check_dtype, stream, fname)
  if getmetatable(values) == core.types.GPUArray then
    check_array(values, 3, fname)
    if values.device ~= a.device then
      argerror(3, fname, ("values are on device %d, the array on device %d"):format(values.device, a.device))
    end
    if values.dtype == dtype then return values, false end
    return values:astype(dtype, {stream = stream}), true
  end
  if type(values) == "table" and getmetatable(values) == nil then
    local ok, h = pcall(core.host.from_table, values, check_dtype)
    if not ok then
      argerror(3, fname, ("values must be a GPUArray, a value or a table of values for %s"):format(check_dtype))
    end
    local v = require("gpu.gpuarray").to_gpu(h)
    if dtype == check_dtype then return v, true end
    local converted = v:astype(dtype, {stream = stream})
    core.free_after(v, stream)
    return converted, true
  end
  if not is_scalar(values) then
    local bad = promote.scalar_problem(values, check_dtype, true)
    if bad then argerror(3, fname, bad) end
  end
  local one = core.array_empty({1}, check_dtype):fill(values, {stream = stream})
  if dtype == check_dtype then return one, true end
  local converted = one:astype(dtype, {stream = stream})
  core.free_after(one, stream)
  return converted, true
end

-- The checks put and scatter_add share; returns indices as an array, the mode and the stream.
local function scatter_arguments(a, indices, opts, fname)
  check_array(a, 1, fname)
  indices = index_array(a, indices, fname)
  opts = args.check_options(opts, 4, fname, SCATTER_OPTIONS)
  return indices, mode_number(opts, 4, fname), opts.stream
end

-- Runs kernel(name, ...) of take.cu over the contiguous a: after checking the indices where
-- mode is "raise", a[indices[i]] and values[i] (or the one value).  Raises where an index is
-- out of range, before writing anything.
local function scatter(a, indices, values, mode, stream, fname, name, add_type, add_components)
  local n = indices.size
  if a.size == 0 then argerror(2, fname, ("cannot %s into an empty array"):format(fname == "put" and "put" or "add")) end
  local where, where_copied = contiguous(indices, stream, fname, a)
  if mode == MODES.raise then
    local slot = bad_slot(stream)
    kernel("gpu_first_bad_index", a.itemsize, indices.dtype, mode, add_type, add_components)(
      where, n, a.size, slot, {block = BLOCK, grid = reduction.grid_stride_blocks(n, BLOCK), stream = stream})
    local bad = first_bad(slot, stream)
    if bad then
      local _, err = pcall(out_of_range, fname, indices, where, bad, a.size)
      if where_copied then where:free() end
      error(err, 0)
    end
  end
  local source, source_copied = contiguous(values, stream, fname, a)
  kernel(name, a.itemsize, indices.dtype, mode, add_type, add_components)(a, where, source, n, values.size, a.size,
    {block = BLOCK, grid = reduction.grid_stride_blocks(n, BLOCK), stream = stream})
  if where_copied then core.free_after(where, stream) end
  if source_copied then core.free_after(source, stream) end
end

-- scatter into a: on a itself where it is contiguous and of work_dtype, else on a contiguous
-- copy of it in work_dtype, stored back into a afterwards.  Frees source where it is the
-- caller's temporary, an error or not.  Returns a.
local function scatter_through(a, work_dtype, indices, source, source_made, mode, stream, fname, ...)
  local ok, err = true, nil
  if indices.size > 0 and source.size > 0 then
    local target = a
    if work_dtype ~= a.dtype then target = a:astype(work_dtype, {stream = stream})
    elseif not a.is_contiguous then target = a:copy({stream = stream}) end
    ok, err = pcall(scatter, target, indices, source, mode, stream, fname, ...)
    if target ~= a then
      if ok then target:astype(a.dtype, {out = a, stream = stream}) end
      core.free_after(target, stream)
    end
  end
  if source_made then core.free_after(source, stream) end
  if not ok then error(err, 0) end
  return a
end

function M.put(a, indices, values, opts)
  local mode, stream
  indices, mode, stream = scatter_arguments(a, indices, opts, "put")
  local source, source_made = value_array(a, values, a.dtype, a.dtype, stream, "put")
  return scatter_through(a, a.dtype, indices, source, source_made, mode, stream, "put", "gpu_put")
end

local ALONG_OPTIONS = {stream = true}

-- gpuarray.take_along_axis(a, indices, axis[, {stream = s}]): NumPy's, out[..., j, ...] =
-- a[..., indices[..., j, ...], ...]: indices (integers, 1-based along axis, as argsort gives
-- them) of a's shape off that axis, any length along it.  An index outside 1..a.shape[axis]
-- is an error, checked before anything is read (which synchronizes).  Made as take's flat
-- indices: each element's offset off the axis added to (index - 1) * the axis's step.
function M.take_along_axis(a, indices, axis, opts)
  local fname = "take_along_axis"
  check_array(a, 1, fname)
  indices = index_array(a, indices, fname)
  opts = args.check_options(opts, 4, fname, ALONG_OPTIONS)
  if indices.ndim ~= a.ndim then
    argerror(2, fname, ("indices are %d-d, the array %d-d"):format(indices.ndim, a.ndim))
  end
  if a.ndim == 0 then argerror(1, fname, "a 0-d array has no axis to take along") end
  axis = args.check_axis(axis, a.ndim, 3, fname)
  local shape, where_shape = a.shape, indices.shape
  for d = 1, a.ndim do
    if d ~= axis and where_shape[d] ~= shape[d] then
      argerror(2, fname, ("indices have shape %s, the array %s: they must agree off axis %d")
                         :format(promote.shape_text(where_shape), promote.shape_text(shape), axis))
    end
  end
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  local ga = require "gpu.gpuarray"
  if indices.size == 0 then return core.array_empty(where_shape, a.dtype) end
  local length = shape[axis]
  local outside = ga.logical_or(ga.lt(indices, 1, on_stream), ga.gt(indices, length, on_stream), on_stream)
  local any_outside = ga.any(outside, on_stream)
  if stream then stream:synchronize() end
  local bad = any_outside[1]
  core.free_after(outside, stream)
  any_outside:free()
  if bad then
    argerror(2, fname, ("indices must be from 1 to %d (axis %d's length)"):format(length, axis))
  end
  -- row-major element steps of a, whatever its layout: take reads a in that order
  local steps, step = {}, 1
  for d = a.ndim, 1, -1 do steps[d], step = step, step * shape[d] end
  local in_place = {out = nil, stream = stream}
  local flat = indices:astype("int64", on_stream)
  in_place.out = flat
  ga.mul(flat, steps[axis], in_place)                  -- (index - 1) * step + 1, 1-based
  ga.sub(flat, steps[axis] - 1, in_place)
  for d = 1, a.ndim do
    if d ~= axis and where_shape[d] > 1 then          -- + (i - 1) * step along axis d
      local offsets = {}
      for i = 1, where_shape[d] do offsets[i] = (i - 1) * steps[d] end
      local along = {}
      for e = 1, a.ndim do along[e] = e == d and where_shape[d] or 1 end
      local column = ga.to_gpu(core.host.from_table(offsets, "int64")):reshape(along)
      ga.add(flat, column, in_place)
      core.free_after(column, stream)
    end
  end
  local result = M.take(a, flat, {mode = "wrap", stream = stream})
  core.free_after(flat, stream)
  return result
end

-- What scatter_add adds in: the atomics' C type, its count an element, and the dtype of the
-- array the atomics work on (narrow integers, bool and 16-bit floats add in a wider copy: a
-- bool's sum is true where it is not 0, a narrow integer's wraps, a 16-bit float's rounds
-- once).
local ADD_TYPES = {
  float32 = {"float", 1}, float64 = {"double", 1},
  complex64 = {"float", 2}, complex128 = {"double", 2},
  int32 = {"int", 1}, uint32 = {"unsigned", 1},
  int64 = {"unsigned long long", 1}, uint64 = {"unsigned long long", 1},   -- wrapping alike
  int8 = {"int", 1, "int32"}, int16 = {"int", 1, "int32"}, bool = {"int", 1, "int32"},
  uint8 = {"unsigned", 1, "uint32"}, uint16 = {"unsigned", 1, "uint32"},
  float16 = {"float", 1, "float32"}, bfloat16 = {"float", 1, "float32"},
}

function M.scatter_add(a, indices, values, opts)
  local mode, stream
  indices, mode, stream = scatter_arguments(a, indices, opts, "scatter_add")
  local add = ADD_TYPES[a.dtype]
  local wide = add[3] or a.dtype
  local source, source_made = value_array(a, values, wide, a.dtype, stream, "scatter_add")
  if source.size ~= 1 and source.size ~= indices.size then
    if source_made then core.free_after(source, stream) end
    argerror(3, "scatter_add", ("values has %d elements and indices %d: give one value or one for each index")
                               :format(source.size, indices.size))
  end
  return scatter_through(a, wide, indices, source, source_made, mode, stream, "scatter_add",
                         "gpu_scatter_add", add[1], add[2])
end

-- Launches kernel `name` of bincount.cu over the contiguous x into counts (zeroed, int64 or,
-- with weights, float64), with the histogram's edges after the common arguments.
local function count_bins(name, x, weights, counts, stream, edges)
  local weighted = weights ~= nil
  local f = kernel_cache.get(("bincount|%s|%s|%s"):format(name, x.dtype, weighted), function()
    local load = ({float16 = "gpu_half_to_float(x)", bfloat16 = "gpu_bf16_to_float(x)"})[x.dtype] or "x"
    return core.kernel_sources["common.cu"] .. "\n" .. reduction.fill(core.kernel_sources["bincount.cu"], {
      VALUE_T = reduction.dtypes[x.dtype].ctype, WEIGHTED = weighted and "1" or "0",
      AS_DOUBLE = "(double)" .. load,
    }), name, nil, {no_extern_c = true, name = "bincount.cu"}
  end)
  local bins = counts.size
  local in_shared = bins <= SHARED_BINS
  local grid = in_shared and math.min(reduction.max_grid(), (x.size + BLOCK - 1) // BLOCK)
               or reduction.grid_stride_blocks(x.size, BLOCK)
  local launch = {block = BLOCK, grid = grid, shared = in_shared and 8 * bins or 0, stream = stream}
  if edges then f(x, weights, counts, x.size, bins, in_shared and 1 or 0, edges, launch)
  else f(x, weights, counts, x.size, bins, in_shared and 1 or 0, launch) end
end

local BINCOUNT_OPTIONS = {weights = true, minlength = true, stream = true}

-- The weights option of fname (argument 2) as a contiguous float64 GPUArray of x.size
-- elements on x's device, and whether it is a temporary.
local function weight_array(x, weights, stream, fname)
  local wrong = ("option 'weights' must be a GPUArray or a table of %d numbers"):format(x.size)
  if type(weights) == "table" and getmetatable(weights) == nil then
    local ok, h = pcall(core.host.from_table, weights, "float64")
    if not ok or h.size ~= x.size then argerror(2, fname, wrong) end
    return require("gpu.gpuarray").to_gpu(h), true
  end
  if getmetatable(weights) ~= core.types.GPUArray then argerror(2, fname, wrong) end
  check_array(weights, 2, fname)
  if weights.size ~= x.size then argerror(2, fname, wrong) end
  if weights.device ~= x.device then
    argerror(2, fname, ("weights are on device %d, x on device %d"):format(weights.device, x.device))
  end
  if weights.dtype ~= "float64" then return weights:astype("float64", {stream = stream}), true end
  return contiguous(weights, stream, fname)
end

function M.bincount(x, opts)
  check_array(x, 1, "bincount")
  local kind = promote.kind(x.dtype)
  if (kind ~= "i" and kind ~= "u") or x.ndim ~= 1 then
    argerror(1, "bincount", ("a 1-d array of integers expected, got %s of shape %s")
                            :format(x.dtype, promote.shape_text(x.shape)))
  end
  opts = args.check_options(opts, 2, "bincount", BINCOUNT_OPTIONS)
  local minlength, stream = opts.minlength or 0, opts.stream
  if math.type(minlength) ~= "integer" or minlength < 0 then
    argerror(2, "bincount", "option 'minlength' must be a whole number, 0 or more, got " ..
                            (math.type(minlength) and tostring(minlength) or typename(minlength)))
  end
  local weighted = opts.weights ~= nil
  local weights, weights_made
  if weighted then weights, weights_made = weight_array(x, opts.weights, stream, "bincount") end
  local length = minlength
  if x.size > 0 then
    local lowest, highest = x:min({stream = stream}), x:max({stream = stream})
    if kind == "i" and lowest < 0 then
      argerror(1, "bincount", ("values must not be negative, got %d"):format(lowest))
    end
    -- a uint64 from 2^63 on (a negative Lua integer, or a float), or no room for highest + 1
    if math.type(highest) ~= "integer" or highest < 0 or highest == math.maxinteger then
      argerror(1, "bincount", ("value %s is too large to count"):format(
        math.type(highest) == "integer" and unsigned_text(highest) or ("%.0f"):format(highest)))
    end
    length = math.max(length, highest + 1)
  end
  local counts = core.array_zeros({length}, weighted and "float64" or "int64")
  if x.size > 0 then
    local source, source_copied = contiguous(x, stream, "bincount")
    count_bins("gpu_bincount", source, weights, counts, stream)
    if source_copied then core.free_after(source, stream) end
  end
  if weights_made then core.free_after(weights, stream) end
  return counts
end

local HISTOGRAM_OPTIONS = {bins = true, range = true, weights = true, stream = true}

-- A float for a message: as few digits as give it back, and NaN without a sign.
local function number_text(v)
  if v ~= v then return "nan" end
  if math.abs(v) == math.huge then return v > 0 and "inf" or "-inf" end
  local text = ("%.15g"):format(v)
  if tonumber(text) ~= v then text = ("%.17g"):format(v) end
  return text
end

-- histogram's edges for `bins` equal bins over x (NumPy's: over range, else from x's least
-- to its greatest value, half a unit either side when those are equal), computed as NumPy's
-- linspace computes them and rounded to x's dtype where that is a float, as NumPy's are.
local function equal_edges(x, bins, range, stream)
  local lo, hi
  if range ~= nil then
    if type(range) ~= "table" or getmetatable(range) ~= nil or #range ~= 2 or
       math.type(range[1]) == nil or math.type(range[2]) == nil then
      argerror(2, "histogram", "option 'range' must be {lo, hi}, two numbers")
    end
    lo, hi = range[1] + 0.0, range[2] + 0.0
    if lo > hi then
      argerror(2, "histogram", ("option 'range' {%s, %s} ends below its start"):format(number_text(lo), number_text(hi)))
    end
    if hi - lo ~= hi - lo or math.abs(hi - lo) == math.huge then
      argerror(2, "histogram", ("option 'range' {%s, %s} is not finite"):format(number_text(lo), number_text(hi)))
    end
  elseif x.size == 0 then
    lo, hi = 0.0, 1.0
  else
    lo, hi = x:min({stream = stream}) + 0.0, x:max({stream = stream}) + 0.0
    if hi - lo ~= hi - lo or math.abs(hi - lo) == math.huge then
      argerror(1, "histogram", ("the range of x's values, [%s, %s], is not finite")
                               :format(number_text(lo), number_text(hi)))
    end
  end
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  local edges, step = {}, (hi - lo) / bins
  for i = 0, bins - 1 do edges[i + 1] = i * step + lo end
  edges[bins + 1] = hi
  local dtype = promote.kind(x.dtype) == "f" and x.dtype or "float64"
  return require("gpu.gpuarray").to_gpu(core.host.from_table(edges, dtype))
end

-- histogram's edges given as bins: a GPUArray or a table of at least two increasing numbers.
local function given_edges(bins, stream)
  local wrong = "option 'bins' must be a whole number or at least two increasing edges (a GPUArray or table)"
  local edges, values
  if getmetatable(bins) == core.types.GPUArray then
    check_array(bins, 2, "histogram")
    if bins.ndim ~= 1 or promote.kind(bins.dtype) == "c" then argerror(2, "histogram", wrong) end
    if stream then stream:synchronize() end             -- what the stream wrote into them
    edges, values = bins, bins:get()
  elseif type(bins) == "table" and getmetatable(bins) == nil then
    local ok, h = pcall(core.host.from_table, bins, "float64")
    if not ok or h.ndim ~= 1 then argerror(2, "histogram", wrong) end
    edges, values = require("gpu.gpuarray").to_gpu(h), h
  else
    argerror(2, "histogram", wrong)
  end
  if values.size < 2 then argerror(2, "histogram", wrong) end
  for i = 2, values.size do
    if not (values[i - 1] <= values[i]) then
      argerror(2, "histogram", ("option 'bins' must increase: edge %d is %s, edge %d %s")
                               :format(i - 1, number_text(values[i - 1]), i, number_text(values[i])))
    end
  end
  return edges
end

function M.histogram(x, opts)
  check_array(x, 1, "histogram")
  local kind = promote.kind(x.dtype)
  if kind ~= "i" and kind ~= "u" and kind ~= "f" then
    argerror(1, "histogram", "an array of integers or floats expected, got " .. x.dtype)
  end
  opts = args.check_options(opts, 2, "histogram", HISTOGRAM_OPTIONS)
  local bins, stream = opts.bins or 10, opts.stream
  local weights, weights_made
  if opts.weights ~= nil then weights, weights_made = weight_array(x, opts.weights, stream, "histogram") end
  local edges
  if math.type(bins) == "integer" then
    if bins < 1 then argerror(2, "histogram", ("option 'bins' must be at least 1, got %d"):format(bins)) end
    edges = equal_edges(x, bins, opts.range, stream)
  else
    if opts.range ~= nil then argerror(2, "histogram", "option 'range' goes with a number of bins, not edges") end
    edges = given_edges(bins, stream)
  end
  local counts = core.array_zeros({edges.size - 1}, weights and "float64" or "int64")
  if x.size > 0 then
    local source, source_copied = contiguous(x, stream, "histogram")
    local doubles = edges
    if edges.dtype ~= "float64" or not edges.is_contiguous then doubles = edges:astype("float64", {stream = stream}) end
    count_bins("gpu_histogram", source, weights, counts, stream, doubles)
    if doubles ~= edges then core.free_after(doubles, stream) end
    if source_copied then core.free_after(source, stream) end
  end
  if weights_made then core.free_after(weights, stream) end
  return counts, edges
end

function M.install(gpu)
  gpu.gpuarray.take = M.take
  gpu.gpuarray.take_along_axis = M.take_along_axis
  gpu.gpuarray.put = M.put
  gpu.gpuarray.scatter_add = M.scatter_add
  gpu.gpuarray.bincount = M.bincount
  gpu.gpuarray.histogram = M.histogram
  local methods = core.types.GPUArray.__methods     -- NumPy's a.take(ind) and a.put(ind, v)
  methods.take, methods.put = M.take, M.put
end

return M
