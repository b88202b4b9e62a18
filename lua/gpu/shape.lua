-- gpu.shape: NumPy's array-manipulation functions, in gpu.gpuarray.
--
-- Views, which share a's memory as NumPy's do (a write through one shows in a):
--   flip(a[, {axis =}]), fliplr(a), flipud(a), rot90(a[, {k = 1, axes = {1, 2}}]),
--   swapaxes(a, axis1, axis2), moveaxis(a, source, destination), transpose(a[, axes]),
--   squeeze(a[, {axis =}]), expand_dims(a, axis), atleast_1d(a, ...), atleast_2d,
--   atleast_3d (one result an argument), and ravel(a) (a copy where a is not contiguous, as
--   NumPy's);
--   split(a, indices_or_sections[, {axis = 1}]), array_split (pieces of unequal lengths
--   allowed), hsplit, vsplit and dsplit, whose pieces are results of their own, as
--   meshgrid's arrays are.
-- Copies, joined as concatenate joins: hstack(arrays[, {stream =}]), vstack, dstack and
-- column_stack, with NumPy's special cases of 0-d and 1-d arrays.
-- Also the methods a:flip, a:squeeze, a:expand_dims, a:swapaxes and a:moveaxis.
--
-- Axes are 1-based, negatives counting from the end; where NumPy takes an axis or a tuple of
-- them, these take a number or a list.  A split's places are 1-based too: each is where a
-- piece begins (NumPy's index + 1, as searchsorted's places are), so NumPy's
-- split(a, [3, 5]), which is a[:3], a[3:5] and a[5:], is split(a, {4, 6}) here: elements
-- 1-3, 4-5 and 6 on.  Places clip to the axis as slice's bounds do (-1 is the last element).

local core = require "gpu.core"
local args = require "gpu.args"
local ga = require "gpu.gpuarray"

local M = {}

local argerror, typename, check_options = args.argerror, args.typename, args.check_options
local check_array, view_of = ga._check_array, ga._view_of

local AXIS = {axis = true}
local STREAM = {stream = true}
local ROT90_OPTIONS = {k = true, axes = true}

local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end

-- A value's kind for messages: "float" for 1.5, else its type.
local function kind(v) return math.type(v) or typename(v) end

-- Axes ------------------------------------------------------------------------------------

-- The 1-based axis of an ndim-d array that value names (argument n of fname; what names
-- value in messages).
local function axis_of(value, ndim, n, fname, what)
  if math.type(value) ~= "integer" then
    argerror(n, fname, ("%s must be an integer, got %s"):format(what, kind(value)))
  end
  local axis = value < 0 and ndim + 1 + value or value
  if axis < 1 or axis > ndim then
    argerror(n, fname, ("axis %d is out of range for a %d-d array"):format(value, ndim))
  end
  return axis
end

-- The axes value names, one (a number) or a list of different ones, as a list.
local function axes_of(value, ndim, n, fname, what)
  if not is_list(value) then
    if math.type(value) ~= "integer" then
      argerror(n, fname, ("%s must be an integer or a list of them, got %s"):format(what, kind(value)))
    end
    return {axis_of(value, ndim, n, fname, what)}
  end
  local axes, seen = {}, {}
  for k = 1, #value do
    local axis = axis_of(value[k], ndim, n, fname, ("%s item %d"):format(what, k))
    if seen[axis] then argerror(n, fname, ("repeated axis %d"):format(axis)) end
    seen[axis], axes[k] = true, axis
  end
  return axes
end

-- The array at argument 1 of fname, of at least ndim axes.
local function check_ndim(a, ndim, fname)
  check_array(a, 1, fname)
  if a.ndim < ndim then
    argerror(1, fname, ("an array of %d or more axes expected, got %d-d"):format(ndim, a.ndim))
  end
  return a
end

-- Layouts: a view's shape and strides (lists) and its offset from a's start, in bytes.

-- Reverses each of axes: the offset moves to its last element and its stride turns round.
local function reverse(shape, strides, offset, axes)
  for _, d in ipairs(axes) do
    if shape[d] > 0 then offset = offset + (shape[d] - 1) * strides[d] end
    strides[d] = -strides[d]
  end
  return offset
end

local function swap(shape, strides, d1, d2)
  shape[d1], shape[d2] = shape[d2], shape[d1]
  strides[d1], strides[d2] = strides[d2], strides[d1]
end

-- Flips and rotations ---------------------------------------------------------------------

-- a with the axes that axis names (every axis where it is nil) reversed.
local function flipped(a, axis, n, fname)
  local axes = {}
  if axis == nil then
    for d = 1, a.ndim do axes[d] = d end
  else
    axes = axes_of(axis, a.ndim, n, fname, "option 'axis'")
  end
  local shape, strides = a.shape, a.strides
  local offset = reverse(shape, strides, 0, axes)
  return view_of(a, offset, shape, strides)
end

-- gpuarray.flip(a[, {axis =}]), a:flip([opts]): NumPy's flip, a with the axis (a number or a
-- list; every axis by default) reversed.
function M.flip(a, opts)
  check_array(a, 1, "flip")
  return flipped(a, check_options(opts, 2, "flip", AXIS).axis, 2, "flip")
end

local function flip_method(a, opts)
  check_array(a, 0, "flip")
  return flipped(a, check_options(opts, 1, "flip", AXIS).axis, 1, "flip")
end

-- gpuarray.fliplr(a), flipud(a): NumPy's, a with its second (fliplr) or first axis reversed.
function M.fliplr(a)
  check_ndim(a, 2, "fliplr")
  return flipped(a, 2, 1, "fliplr")
end

function M.flipud(a)
  check_ndim(a, 1, "flipud")
  return flipped(a, 1, 1, "flipud")
end

-- gpuarray.rot90(a[, {k = 1, axes = {1, 2}}]): NumPy's rot90, a rotated k quarter turns in
-- the plane of the two axes, from the first axis towards the second.
function M.rot90(a, opts)
  check_ndim(a, 2, "rot90")
  opts = check_options(opts, 2, "rot90", ROT90_OPTIONS)
  local k = opts.k == nil and 1 or opts.k
  if math.type(k) ~= "integer" then
    argerror(2, "rot90", "option 'k' must be an integer, got " .. kind(k))
  end
  local given = opts.axes == nil and {1, 2} or opts.axes
  if not is_list(given) then
    argerror(2, "rot90", "option 'axes' must be a list of two axes, got " .. typename(given))
  end
  if #given ~= 2 then argerror(2, "rot90", ("option 'axes' must name two axes, not %d"):format(#given)) end
  local first = axis_of(given[1], a.ndim, 2, "rot90", "option 'axes' item 1")
  local second = axis_of(given[2], a.ndim, 2, "rot90", "option 'axes' item 2")
  if first == second then argerror(2, "rot90", "option 'axes' must name two different axes") end
  local shape, strides, offset = a.shape, a.strides, 0
  k = k % 4
  -- NumPy's steps: half a turn reverses both axes; a quarter reverses the second and then
  -- swaps the two, three quarters swap them and then reverse the second
  if k == 2 then
    offset = reverse(shape, strides, 0, {first, second})
  elseif k == 1 then
    offset = reverse(shape, strides, 0, {second})
    swap(shape, strides, first, second)
  elseif k == 3 then
    swap(shape, strides, first, second)
    offset = reverse(shape, strides, 0, {second})
  end
  return view_of(a, offset, shape, strides)
end

-- Permutations ----------------------------------------------------------------------------

-- The view swapping axis1 and axis2 (arguments n and n + 1 of fname).
local function swapped(a, axis1, axis2, n, fname)
  local d1 = axis_of(axis1, a.ndim, n, fname, "axis1")
  local d2 = axis_of(axis2, a.ndim, n + 1, fname, "axis2")
  local order = {}
  for d = 1, a.ndim do order[d] = d end
  order[d1], order[d2] = d2, d1
  return a:transpose(order)
end

-- gpuarray.swapaxes(a, axis1, axis2), a:swapaxes(axis1, axis2): NumPy's.
function M.swapaxes(a, axis1, axis2)
  check_array(a, 1, "swapaxes")
  return swapped(a, axis1, axis2, 2, "swapaxes")
end

local function swapaxes_method(a, axis1, axis2)
  check_array(a, 0, "swapaxes")
  return swapped(a, axis1, axis2, 1, "swapaxes")
end

-- The view with the axes source names moved to the places destination names (arguments n
-- and n + 1 of fname): the other axes keep their order around them, as in NumPy.
local function moved(a, source, destination, n, fname)
  local ndim = a.ndim
  local from = axes_of(source, ndim, n, fname, "source")
  local to = axes_of(destination, ndim, n + 1, fname, "destination")
  if #from ~= #to then
    argerror(n + 1, fname, ("source and destination must name as many axes, got %d and %d")
                           :format(#from, #to))
  end
  local order, moving = {}, {}
  for _, d in ipairs(from) do moving[d] = true end
  for d = 1, ndim do
    if not moving[d] then order[#order + 1] = d end
  end
  -- inserted by increasing destination, each lands at its own: those before it are placed
  local by_place = {}
  for k = 1, #to do by_place[k] = {to = to[k], from = from[k]} end
  table.sort(by_place, function(x, y) return x.to < y.to end)
  for _, move in ipairs(by_place) do table.insert(order, move.to, move.from) end
  return a:transpose(order)
end

-- gpuarray.moveaxis(a, source, destination), a:moveaxis(source, destination): NumPy's, each
-- an axis or a list of as many.
function M.moveaxis(a, source, destination)
  check_array(a, 1, "moveaxis")
  return moved(a, source, destination, 2, "moveaxis")
end

local function moveaxis_method(a, source, destination)
  check_array(a, 0, "moveaxis")
  return moved(a, source, destination, 1, "moveaxis")
end

-- gpuarray.transpose(a[, axes]): a:transpose(axes), argument 2 named in its errors.
function M.transpose(a, axes)
  check_array(a, 1, "transpose")
  if axes == nil then return a:transpose() end
  local ndim = a.ndim
  local function refuse()
    argerror(2, "transpose", ("axes must be a permutation of 1..%d"):format(ndim), 2)
  end
  if not is_list(axes) or #axes ~= ndim then refuse() end
  local order, seen = {}, {}
  for k = 1, ndim do
    local d = math.type(axes[k]) == "integer" and axes[k]
    if d and d < 0 then d = ndim + 1 + d end
    if not d or d < 1 or d > ndim or seen[d] then refuse() end
    order[k], seen[d] = d, true
  end
  return a:transpose(order)
end

-- Axes of length 1 ------------------------------------------------------------------------

-- a without the axes of length 1 that axis names (every one where it is nil).
local function squeezed(a, axis, n, fname)
  local shape, strides = a.shape, a.strides
  local drop = {}
  if axis == nil then
    for d = 1, #shape do drop[d] = shape[d] == 1 end
  else
    for k, d in ipairs(axes_of(axis, a.ndim, n, fname, "option 'axis'")) do
      if shape[d] ~= 1 then
        local given = is_list(axis) and axis[k] or axis
        argerror(n, fname, ("axis %d has length %d, not 1"):format(given, shape[d]))
      end
      drop[d] = true
    end
  end
  local kept_shape, kept_strides = {}, {}
  for d = 1, #shape do
    if not drop[d] then
      kept_shape[#kept_shape + 1], kept_strides[#kept_strides + 1] = shape[d], strides[d]
    end
  end
  return view_of(a, 0, kept_shape, kept_strides)
end

-- gpuarray.squeeze(a[, {axis =}]), a:squeeze([opts]): NumPy's and PyCUDA's, a without its
-- axes of length 1, or without those axis names (a number or a list), which must be.
function M.squeeze(a, opts)
  check_array(a, 1, "squeeze")
  return squeezed(a, check_options(opts, 2, "squeeze", AXIS).axis, 2, "squeeze")
end

local function squeeze_method(a, opts)
  check_array(a, 0, "squeeze")
  return squeezed(a, check_options(opts, 1, "squeeze", AXIS).axis, 1, "squeeze")
end

-- a with a new axis of length 1 at each of the result's places in the set new (of ndim
-- axes in all).
local function with_new_axes(a, new, ndim)
  local shape, strides = a.shape, a.strides
  local out_shape, out_strides, next_axis = {}, {}, 1
  for d = 1, ndim do
    if not new[d] then
      out_shape[d], out_strides[d] = shape[next_axis], strides[next_axis]
      next_axis = next_axis + 1
    end
  end
  -- a new axis's stride never steps (its length is 1): the span of the axis after it keeps
  -- contiguous arrays contiguous
  for d = ndim, 1, -1 do
    if new[d] then
      out_shape[d] = 1
      out_strides[d] = d < ndim and out_strides[d + 1] * out_shape[d + 1] or a.itemsize
    end
  end
  return view_of(a, 0, out_shape, out_strides)
end

-- a with new axes of length 1 at the places axis names (among the result's axes).
local function expanded(a, axis, n, fname)
  local ndim = a.ndim + (is_list(axis) and #axis or 1)
  local new = {}
  for _, d in ipairs(axes_of(axis, ndim, n, fname, "axis")) do new[d] = true end
  return with_new_axes(a, new, ndim)
end

-- gpuarray.expand_dims(a, axis), a:expand_dims(axis): NumPy's, a with a new axis of length 1
-- at each place axis (a number or a list) names among the result's axes.
function M.expand_dims(a, axis)
  check_array(a, 1, "expand_dims")
  return expanded(a, axis, 2, "expand_dims")
end

local function expand_dims_method(a, axis)
  check_array(a, 0, "expand_dims")
  return expanded(a, axis, 1, "expand_dims")
end

-- gpuarray.ravel(a): a:ravel(), argument 1 named in its errors.
function M.ravel(a)
  check_array(a, 1, "ravel")
  return a:ravel()
end

-- gpuarray.atleast_1d(a, ...), atleast_2d, atleast_3d: NumPy's, each array as it is where it
-- has that many axes, else a view with axes of length 1 added (1-d arrays become rows, and
-- in 3-d rows between two such axes; 2-d arrays get a last one).
local AT_LEAST = {      -- name -> the axes it makes, and by ndim the places of the new axes
  atleast_1d = {ndim = 1, places = {[0] = {1}}},
  atleast_2d = {ndim = 2, places = {[0] = {1, 2}, [1] = {1}}},
  atleast_3d = {ndim = 3, places = {[0] = {1, 2, 3}, [1] = {1, 3}, [2] = {3}}},
}
for name, least in pairs(AT_LEAST) do
  M[name] = function(...)
    local results = table.pack(...)
    for i = 1, results.n do
      local a = check_array(results[i], i, name)
      local places = least.places[a.ndim]
      if places then
        local new = {}
        for _, d in ipairs(places) do new[d] = true end
        results[i] = with_new_axes(a, new, least.ndim)
      end
    end
    return table.unpack(results, 1, results.n)
  end
end

-- Splitting -------------------------------------------------------------------------------

-- Lua's stack holds about a million values (LUAI_MAXSTACK): a call returns fewer results.
local MAX_PIECES = 1000000

-- The pieces (their first elements and lengths) that indices_or_sections (argument n of
-- fname) cuts an axis of length length into: a number of sections (of one length if equal,
-- else NumPy's array_split's, the first length % sections one longer), or a list of places.
local function pieces(spec, length, n, fname, equal)
  local result = {}
  if type(spec) == "number" then
    local sections = math.tointeger(spec)
    if sections == nil or sections < 1 then
      argerror(n, fname, ("the number of sections must be a whole number from 1 on, got %s"):format(spec))
    end
    if sections > MAX_PIECES then
      argerror(n, fname, ("%d sections are more results than a call can return (%d)")
                         :format(sections, MAX_PIECES))
    end
    if equal and length % sections ~= 0 then
      argerror(n, fname, ("an axis of length %d does not split into %d equal sections")
                         :format(length, sections))
    end
    local each, longer, first = length // sections, length % sections, 1
    for k = 1, sections do
      local count = k <= longer and each + 1 or each
      result[k] = {first = first, count = count}
      first = first + count
    end
    return result
  end
  if not is_list(spec) then
    argerror(n, fname, "indices_or_sections must be a number of sections or a list of places, got " ..
                       typename(spec))
  end
  -- piece k runs from place k - 1 (1 for the first) up to place k (past the end for the
  -- last), empty where place k is not after it, as NumPy's a[start:stop]
  local start = 1
  for k = 1, #spec + 1 do
    local stop = length + 1
    if k <= #spec then
      local v = spec[k]
      stop = type(v) == "number" and math.tointeger(v)
      if not stop then
        argerror(n, fname, ("place %d must be a whole number, got %s")
                           :format(k, type(v) == "number" and tostring(v) or typename(v)))
      end
      if stop < 0 then stop = length + 1 + stop end
      stop = math.max(1, math.min(stop, length + 1))
    end
    result[k] = {first = start, count = math.max(stop - start, 0)}
    start = stop
  end
  return result
end

-- The pieces of a along axis, views, as results.
local function split_views(a, spec, axis, n, fname, equal)
  local shape, strides = a.shape, a.strides
  local views = {}
  for k, piece in ipairs(pieces(spec, shape[axis], n, fname, equal)) do
    shape[axis] = piece.count                   -- array_view copies the layout it is given
    views[k] = view_of(a, (piece.first - 1) * strides[axis], shape, strides)
  end
  return table.unpack(views, 1, #views)
end

-- The axis that split's and array_split's option (argument 3) names, of a 1-d or larger a.
local function split_axis(a, opts, fname)
  check_ndim(a, 1, fname)
  opts = check_options(opts, 3, fname, AXIS)
  return args.check_axis(opts.axis or 1, a.ndim, 3, fname)
end

-- gpuarray.split(a, indices_or_sections[, {axis = 1}]): NumPy's split, the views of a cut
-- along axis into that many pieces of one length, or at the places listed (see above).
function M.split(a, indices_or_sections, opts)
  local axis = split_axis(a, opts, "split")
  return split_views(a, indices_or_sections, axis, 2, "split", true)
end

-- gpuarray.array_split(a, indices_or_sections[, {axis = 1}]): NumPy's, split's pieces where
-- the lengths may differ: of length n into s sections, the first n % s are one longer.
function M.array_split(a, indices_or_sections, opts)
  local axis = split_axis(a, opts, "array_split")
  return split_views(a, indices_or_sections, axis, 2, "array_split", false)
end

-- gpuarray.hsplit(a, indices_or_sections), vsplit, dsplit: NumPy's, split along the second
-- axis (the first of a 1-d array), the first and the third.
function M.hsplit(a, indices_or_sections)
  check_ndim(a, 1, "hsplit")
  return split_views(a, indices_or_sections, a.ndim > 1 and 2 or 1, 2, "hsplit", true)
end

function M.vsplit(a, indices_or_sections)
  check_ndim(a, 2, "vsplit")
  return split_views(a, indices_or_sections, 1, 2, "vsplit", true)
end

function M.dsplit(a, indices_or_sections)
  check_ndim(a, 3, "dsplit")
  return split_views(a, indices_or_sections, 3, 2, "dsplit", true)
end

-- Joining ---------------------------------------------------------------------------------

-- The arrays (argument 1 of fname) as view made of each, joined along the axis that
-- axis_for(first view) gives, as concatenate joins them.
local function joined(arrays, opts, fname, view, axis_for)
  local dtype = ga._join_list(arrays, fname)
  opts = check_options(opts, 2, fname, STREAM)
  local views = {}
  for k = 1, #arrays do views[k] = view(arrays[k]) end
  return ga._join_along(views, dtype, axis_for(views[1]), opts.stream, fname)
end

-- gpuarray.hstack(arrays[, {stream =}]): NumPy's, along the second axis (the first where
-- the arrays are 1-d; 0-d ones count as 1-d).
function M.hstack(arrays, opts)
  return joined(arrays, opts, "hstack", M.atleast_1d, function(first) return first.ndim == 1 and 1 or 2 end)
end

-- gpuarray.vstack(arrays[, {stream =}]): NumPy's, along the first axis, 1-d arrays as rows.
function M.vstack(arrays, opts)
  return joined(arrays, opts, "vstack", M.atleast_2d, function() return 1 end)
end

-- gpuarray.dstack(arrays[, {stream =}]): NumPy's, along the third axis, as atleast_3d makes
-- the arrays 3-d.
function M.dstack(arrays, opts)
  return joined(arrays, opts, "dstack", M.atleast_3d, function() return 3 end)
end

-- A 1-d array as a column (0-d: one element of one), others as they are.
local function as_column(a)
  if a.ndim >= 2 then return a end
  return with_new_axes(a, a.ndim == 1 and {[2] = true} or {true, true}, 2)
end

-- gpuarray.column_stack(arrays[, {stream =}]): NumPy's, along the second axis, 1-d arrays
-- as columns.
function M.column_stack(arrays, opts)
  return joined(arrays, opts, "column_stack", as_column, function() return 2 end)
end

local FUNCTIONS = {"flip", "fliplr", "flipud", "rot90", "swapaxes", "moveaxis", "transpose",
                   "squeeze", "expand_dims", "ravel", "atleast_1d", "atleast_2d", "atleast_3d",
                   "split", "array_split", "hsplit", "vsplit", "dsplit", "hstack", "vstack",
                   "dstack", "column_stack"}

function M.install(gpu)
  for _, name in ipairs(FUNCTIONS) do gpu.gpuarray[name] = M[name] end
  local methods = core.types.GPUArray.__methods
  methods.flip, methods.squeeze, methods.expand_dims = flip_method, squeeze_method, expand_dims_method
  methods.swapaxes, methods.moveaxis = swapaxes_method, moveaxis_method
end

return M
