-- gpu.sets: NumPy's set routines and its index and array-editing functions, in gpu.gpuarray.
--
-- Sets (each argument flattened; a result sorted and unique as NumPy's, its size read back
-- once, as unique's and extract's are):
--   intersect1d(a, b[, {assume_unique =, return_indices =}]) -> values[, places in a, in b]
--   union1d(a, b), setdiff1d(a, b[, {assume_unique =}]), setxor1d(a, b[, {assume_unique =}])
--   in1d(a, b[, {invert =, stream =}]): isin of a flattened, a 1-d bool array
-- Sorting and indices (1-based places, as argsort's, take's and nonzero's):
--   lexsort(keys): the int64 places that sort by several keys, the last one primary
--   unravel_index(indices, shape[, {order =}]) -> one int64 array of places an axis
--   ravel_multi_index(multi_index, dims[, {mode =, order =}]) -> flat int64 places
-- Editing (copies):
--   insert(arr, index, values[, {axis =}]), delete(arr, index[, {axis =}]),
--   append(arr, values[, {axis =}]), resize(a, new_shape) (NumPy's np.resize: the data
--   repeated), trim_zeros(filt[, trim]) (a view, as NumPy's), sort_complex(a).
--
-- Places: an insert place is where the first new element lands (NumPy's index + 1, as
-- split's places), from 1 to n + 1, or -n to -1 counting from the end as slice does (-1
-- before the last element, as NumPy's -1); a delete place names an element, 1 to n or -n to
-- -1.  A flat index of unravel_index and ravel_multi_index is 1-based, as take's, and so is
-- each axis's index; ravel_multi_index's modes are take's ("wrap": 0 is the last element).
--
-- The set routines are NumPy's algorithms on the library's pieces: unique, concatenate, sort
-- or the stable argsort, one comparison of neighbours and one compaction (compact's
-- flat_indices, which reads its count back); setdiff1d and in1d are isin's binary search.
-- insert and delete gather along the axis in one kernel over the output, each element finding
-- its source by a binary search over the sorted places uploaded (a GPUArray of them is read
-- back): the host works on the places only, never on the whole axis.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local reduction = require "gpu.reduction"
local promote = require "gpu.promote"

local M = {}

local argerror, typename = args.argerror, args.typename
local check_array, check_options = reduction.check_array, args.check_options
local GPUArray = core.types.GPUArray

local ga, compact     -- gpu.gpuarray and gpu.compact, set by install

local function is_array(v) return getmetatable(v) == GPUArray end
local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end
local function kind(dtype) return promote.kind(dtype) end

-- Frees the temporaries among the arguments (nil and false skipped) once the default
-- stream is done with them.
local function release(...) core.free_all_after(nil, ...) end

-- a as a 1-d array in row-major order: a view of a contiguous a, else a copy; and whether
-- it is a copy (a temporary to release).
local function flat(a)
  return a:reshape(a.size), not a.is_contiguous
end

-- Option name of argument n of fname: nil (default) or a boolean.
local function boolean_option(opts, name, n, fname, default)
  return args.typed_option(opts, name, "boolean", n, fname, default, 2)
end

local quoted = args.quoted

-- Option 'order' of argument n of fname: "C" (the default) or "F".
local function order_option(opts, n, fname)
  local order = opts.order or "C"
  if order ~= "C" and order ~= "F" then
    argerror(n, fname, "option 'order' must be 'C' or 'F', got " .. quoted(opts.order), 2)
  end
  return order
end

-- The product of a shape's lengths.
local function size_of(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- Sets ------------------------------------------------------------------------------------

local ASSUME_UNIQUE = {assume_unique = true}
local INTERSECT_OPTIONS = {assume_unique = true, return_indices = true}
local IN1D_OPTIONS = {invert = true, stream = true}

local function refuse_complex(a, n, fname)
  if kind(a.dtype) == "c" then
    argerror(n, fname, ("complex values are not supported, got %s"):format(a.dtype), 2)
  end
end

-- The two arrays of a set routine fname, alive and on one device.
local function check_pair(a, b, fname)
  check_array(a, 1, fname)
  check_array(b, 2, fname)
  if a.device ~= b.device then
    argerror(2, fname, ("array is on device %d, argument #1 on device %d"):format(b.device, a.device), 2)
  end
end

-- a's distinct values (sorted), or a flattened where assume_unique says they are; and
-- whether that is a temporary.
local function distinct(a, assume_unique)
  if assume_unique then return flat(a) end
  return ga.unique(a), true
end

-- gpuarray.in1d(a, b[, {invert =, stream =}]): NumPy's, whether each element of a flattened
-- is among b's (isin's test: NaN is in nothing), a 1-d bool array.
function M.in1d(a, b, opts)
  check_pair(a, b, "in1d")
  opts = check_options(opts, 3, "in1d", IN1D_OPTIONS)
  local invert = boolean_option(opts, "invert", 3, "in1d", false)
  refuse_complex(a, 1, "in1d")
  refuse_complex(b, 2, "in1d")
  local isin_opts = {invert = invert, stream = opts.stream}
  if a.ndim == 1 then return ga.isin(a, b, isin_opts) end
  -- isin of a 1-d view, so that the result is an array of its own (its free() frees it)
  local x = a.is_contiguous and a or a:copy(opts.stream and {stream = opts.stream})
  local result = ga.isin(x:reshape(a.size), b, isin_opts)
  if x ~= a then core.free_after(x, opts.stream) end
  return result
end

-- gpuarray.union1d(a, b): NumPy's, the sorted distinct values of both (unique of the two
-- joined: NaNs count as one), in their promoted dtype.
function M.union1d(a, b)
  check_pair(a, b, "union1d")
  local x, x_made = flat(a)
  local y, y_made = flat(b)
  local joined = ga.concatenate({x, y})
  release(x_made and x, y_made and y)
  local values = ga.unique(joined)
  release(joined)
  return values
end

-- intersect1d of x and y, each sorted and distinct (unique's): x's values found in y by a
-- binary search (NaN, equal to nothing, never is), where NumPy joins the two and sorts them
-- again (2^24 int32 each on the H200: 3.2 ms that way).  With x_places and y_places (unique's
-- first places), also those of the values found.  Frees x, y and the places.
local function common_of_distinct(x, y, x_places, y_places)
  local dtype = promote.result_type_of({x.dtype, y.dtype})
  local xs = x.dtype == dtype and x or x:astype(dtype)
  local at = ga.searchsorted(y, xs)                        -- 1-based; y.size + 1 past the end
  local candidates = ga.take(y, at, {mode = "clip"})
  local found = ga.eq(candidates, xs)
  local firsts = compact.flat_indices(found)               -- 0-based: reads the count
  ga.add(firsts, 1, {out = firsts})
  local values = ga.take(xs, firsts, {mode = "clip"})
  local in_x, in_y
  if x_places then
    in_x = ga.take(x_places, firsts, {mode = "clip"})
    local at_found = ga.take(at, firsts, {mode = "clip"})
    in_y = ga.take(y_places, at_found, {mode = "clip"})
    release(at_found, x_places, y_places)
  end
  release(at, candidates, found, firsts, x, y, xs ~= x and xs)
  return values, in_x, in_y
end

-- gpuarray.intersect1d(a, b[, {assume_unique =, return_indices =}]): NumPy's, the sorted
-- values in both, and with return_indices the 1-based places of their first occurrences in
-- a and in b (flattened).  NumPy's steps, where assume_unique is claimed: the two joined and
-- sorted (by the stable argsort where places are wanted), kept where the next one equals them
-- (so NaN, equal to nothing, is never kept); for arrays that repeat a value the result then
-- repeats it, as NumPy's.  Otherwise common_of_distinct, on each one's distinct values.
function M.intersect1d(a, b, opts)
  check_pair(a, b, "intersect1d")
  opts = check_options(opts, 3, "intersect1d", INTERSECT_OPTIONS)
  local assume_unique = boolean_option(opts, "assume_unique", 3, "intersect1d", false)
  local with_places = boolean_option(opts, "return_indices", 3, "intersect1d", false)
  local x, y, x_places, y_places
  local x_made, y_made = true, true                         -- whether x and y are temporaries
  if assume_unique then
    x, x_made = flat(a)
    y, y_made = flat(b)
  elseif with_places then
    x, x_places = ga.unique(a, {return_index = true})
    y, y_places = ga.unique(b, {return_index = true})
  else
    x, y = ga.unique(a), ga.unique(b)
  end
  local x_size, y_size = x.size, y.size
  if x_size == 0 or y_size == 0 then                          -- nothing in common
    local values = core.array_empty({0}, promote.result_type_of({x.dtype, y.dtype}))
    release(x_made and x, y_made and y, x_places, y_places)
    if not with_places then return values end
    return values, core.array_empty({0}, "int64"), core.array_empty({0}, "int64")
  end
  if not assume_unique then
    local values, in_x, in_y = common_of_distinct(x, y, x_places, y_places)
    if not with_places then return values end
    return values, in_x, in_y
  end
  local joined = ga.concatenate({x, y})
  local n = joined.size
  release(x_made and x, y_made and y)
  local order, sorted
  if with_places then
    order = ga.argsort(joined)
    sorted = ga.take(joined, order, {mode = "clip"})            -- in range: no check
    release(joined)
  else
    sorted = joined
    sorted:sort()
  end
  local values, in_x, in_y
  do                                                          -- n >= 2: one value each
    local repeats = ga.eq(sorted:slice(2, n), sorted:slice(1, n - 1))
    local firsts = compact.flat_indices(repeats)                -- 0-based: reads the count
    ga.add(firsts, 1, {out = firsts})
    values = ga.take(sorted, firsts, {mode = "clip"})
    if with_places then
      in_x = ga.take(order, firsts, {mode = "clip"})          -- the pair's first: from x
      ga.add(firsts, 1, {out = firsts})
      in_y = ga.take(order, firsts, {mode = "clip"})          -- its second: from y
      ga.sub(in_y, x_size, {out = in_y})
    end
    release(repeats, firsts)
  end
  release(sorted, order)
  if not with_places then
    release(in_x, in_y)
    return values
  end
  return values, in_x, in_y
end

-- gpuarray.setdiff1d(a, b[, {assume_unique =}]): NumPy's, a's distinct values (sorted) that
-- are not among b's; with assume_unique, a's elements flattened, in their order, that are
-- not.  In a's dtype; isin's test (so a NaN of a stays).
function M.setdiff1d(a, b, opts)
  check_pair(a, b, "setdiff1d")
  opts = check_options(opts, 3, "setdiff1d", ASSUME_UNIQUE)
  local assume_unique = boolean_option(opts, "assume_unique", 3, "setdiff1d", false)
  refuse_complex(a, 1, "setdiff1d")
  refuse_complex(b, 2, "setdiff1d")
  local x, x_made = distinct(a, assume_unique)
  if x.size == 0 then return x_made and x or x:copy() end
  local kept = ga.isin(x, b, {invert = true})
  local result = ga.extract(kept, x)
  release(kept, x_made and x)
  return result
end

-- gpuarray.setxor1d(a, b[, {assume_unique =}]): NumPy's, the sorted values in exactly one of
-- a and b: of the distinct values of each joined and sorted, those equal to neither
-- neighbour (NaN equals nothing: two NaNs both stay, as NumPy's).
function M.setxor1d(a, b, opts)
  check_pair(a, b, "setxor1d")
  opts = check_options(opts, 3, "setxor1d", ASSUME_UNIQUE)
  local assume_unique = boolean_option(opts, "assume_unique", 3, "setxor1d", false)
  local x, x_made = distinct(a, assume_unique)
  local y, y_made = distinct(b, assume_unique)
  local joined = ga.concatenate({x, y})
  release(x_made and x, y_made and y)
  local n = joined.size
  if n == 0 then return joined end
  joined:sort()
  -- differs[k]: whether element k differs from element k - 1 (true past both ends), so
  -- element k stays where differs[k] and differs[k + 1] hold
  local differs = core.array_empty({n + 1}, "bool")
  differs:slice(1, 1):fill(true)
  differs:slice(n + 1, n + 1):fill(true)
  if n > 1 then ga.ne(joined:slice(2, n), joined:slice(1, n - 1), {out = differs:slice(2, n)}) end
  local alone = ga.logical_and(differs:slice(1, n), differs:slice(2, n + 1))
  local result = ga.extract(alone, joined)
  release(differs, alone, joined)
  return result
end

-- lexsort ---------------------------------------------------------------------------------

-- The keys of lexsort (argument 1): a list of 1-d arrays of one length, the rows of a 2-d
-- array, or one 1-d array.
local function lexsort_keys(keys)
  if is_array(keys) then
    check_array(keys, 1, "lexsort")
    if keys.ndim == 1 then return {keys} end
    if keys.ndim ~= 2 then
      argerror(1, "lexsort", ("keys must be a list of 1-d arrays or a 2-d array, got a %d-d array")
                             :format(keys.ndim), 2)
    end
    if keys.shape[1] == 0 then argerror(1, "lexsort", "at least one key is needed", 2) end
    local rows = {}
    for k = 1, keys.shape[1] do rows[k] = keys:select(1, k) end
    return rows
  end
  if not is_list(keys) then
    argerror(1, "lexsort", "keys must be a list of 1-d arrays or a 2-d array, got " .. typename(keys), 2)
  end
  if keys[1] == nil then argerror(1, "lexsort", "at least one key is needed", 2) end
  for k = 1, #keys do
    local key = keys[k]
    if not is_array(key) then
      argerror(1, "lexsort", ("key #%d is a %s, not a GPUArray"):format(k, typename(key)), 2)
    end
    if key.freed then argerror(1, "lexsort", ("key #%d has been freed"):format(k), 2) end
    if key.ndim ~= 1 then argerror(1, "lexsort", ("key #%d is %d-d, not 1-d"):format(k, key.ndim), 2) end
    if key.device ~= keys[1].device then
      argerror(1, "lexsort", ("key #%d is on device %d, key #1 on device %d")
                             :format(k, key.device, keys[1].device), 2)
    end
    if key.size ~= keys[1].size then
      argerror(1, "lexsort", ("key #%d has %d elements, key #1 %d"):format(k, key.size, keys[1].size), 2)
    end
  end
  return keys
end

-- gpuarray.lexsort(keys): NumPy's, the int64 1-based places that sort by the keys, the last
-- key primary, each earlier one breaking the ties of those after it (NaN last, as sort's).
-- One stable argsort a key, from the first: each sorts the order so far by its key, and a
-- stable sort keeps the earlier keys' order among its ties.
function M.lexsort(keys)
  keys = lexsort_keys(keys)
  local n = keys[1].size
  if n == 0 then return core.array_empty({0}, "int64") end
  local order = ga.argsort(keys[1])
  for k = 2, #keys do
    local permuted = ga.take(keys[k], order, {mode = "clip"})   -- the key in the order so far
    local steps = ga.argsort(permuted)
    local next_order = ga.take(order, steps, {mode = "clip"})
    release(permuted, steps, order)
    order = next_order
  end
  return order
end

-- Flat indices ----------------------------------------------------------------------------

local ORDER_OPTION = {order = true}
local RAVEL_OPTIONS = {mode = true, order = true}
local MODES = {raise = true, wrap = true, clip = true}

-- Whether any of the int64 x is outside 1..size: one reduction, read back (synchronizes).
local outside_kernel
local function any_outside(x, size)
  outside_kernel = outside_kernel or reduction.ReductionKernel(
    "bool", "false", "a || b", "x[i] < 1 || x[i] > size", "const long long *x, long long size",
    {name = "sets_outside"})
  local result = outside_kernel(x, size)
  local any = result[1]
  result:free()
  return any
end

-- v (argument n of fname) checked as integers: an integer GPUArray, or a table of integers
-- as an int64 host array (nothing on the device yet).
local function integer_source(v, n, fname, what)
  if is_list(v) then
    local ok, h = pcall(core.host.from_table, v, "int64")
    if not ok then argerror(n, fname, what .. " must be a GPUArray or a table of integers", 2) end
    return h
  end
  check_array(v, n, fname)
  local k = kind(v.dtype)
  if k ~= "i" and k ~= "u" then argerror(n, fname, ("%s must be integers, got %s"):format(what, v.dtype), 2) end
  return v
end

-- An integer_source on the device, and whether it was uploaded (a temporary).
local function on_device(source)
  if is_array(source) then return source, false end
  return ga.to_gpu(source), true
end

-- v (argument n of fname) as an integer GPUArray: an array, or a table of integers uploaded
-- as int64; and whether that is a temporary.
local function integer_array(v, n, fname, what)
  return on_device(integer_source(v, n, fname, what))
end

-- x (an integer array) as a contiguous int64 array, and whether that is a copy.
local function as_int64(x)
  if x.dtype == "int64" and x.is_contiguous then return x, false end
  return x:astype("int64"), true
end

-- The row-major (order "C") or column-major ("F") steps of shape's axes, in elements.
local function steps_of(shape, order)
  local steps, step = {}, 1
  local first, last, by = #shape, 1, -1
  if order == "F" then first, last, by = 1, #shape, 1 end
  for d = first, last, by do steps[d], step = step, step * shape[d] end
  return steps
end

local unravel_program
-- gpuarray.unravel_index(indices, shape[, {order = "C"}]): NumPy's, the 1-based places along
-- each of shape's axes of the 1-based flat indices (an integer GPUArray, a table of them, or
-- one integer), one int64 array of the indices' shape an axis (a result each), or for one
-- integer Lua integers; order "F" reads the flat places column-major.  An index outside 1 to
-- the shape's size is an error naming it (a check read back: synchronizes).
function M.unravel_index(indices, shape, opts)
  shape = args.check_shape(shape, 2, "unravel_index")
  opts = check_options(opts, 3, "unravel_index", ORDER_OPTION)
  local order = order_option(opts, 3, "unravel_index")
  local size = size_of(shape)
  local steps = steps_of(shape, order)
  local results = {}
  if math.type(indices) == "integer" then
    if indices < 1 or indices > size then
      argerror(1, "unravel_index", ("index %d is out of range for %d elements"):format(indices, size))
    end
    for d = 1, #shape do results[d] = (indices - 1) // steps[d] % shape[d] + 1 end
    return table.unpack(results, 1, #shape)
  end
  if type(indices) == "number" then
    argerror(1, "unravel_index", "indices must be integers, got " .. tostring(indices))
  end
  local given, uploaded = integer_array(indices, 1, "unravel_index", "indices")
  local x, copied = as_int64(given)
  if x.size > 0 and any_outside(x, size) then
    local values = x:get()
    for i = 1, values.size do
      if values[i] < 1 or values[i] > size then
        release(copied and x, uploaded and given)
        argerror(1, "unravel_index", ("index %d at position %d is out of range for %d elements")
                                     :format(values[i], i, size))
      end
    end
  end
  unravel_program = unravel_program or require("gpu.fuse").fuse(function(f, step, length)
    return (f - 1) // step % length + 1
  end, "unravel_index")
  for d = 1, #shape do
    results[d] = x.size > 0 and unravel_program(x, steps[d], shape[d]) or core.array_empty(x.shape, "int64")
  end
  release(copied and x, uploaded and given)
  return table.unpack(results, 1, #shape)
end

-- The modes of ravel_multi_index (argument 3): one for every axis, or a list of one an axis.
local function ravel_modes(opts, count)
  local given = opts.mode or "raise"
  local modes = {}
  for d = 1, count do
    local mode = given
    if is_list(given) then
      if #given ~= count then
        argerror(3, "ravel_multi_index", ("option 'mode' must be a mode or a list of %d, got a list of %d")
                                         :format(count, #given), 2)
      end
      mode = given[d]
    end
    if not MODES[mode] then
      argerror(3, "ravel_multi_index", ("option 'mode' must be 'raise', 'wrap' or 'clip', got %s")
                                       :format(quoted(mode)), 2)
    end
    modes[d] = mode
  end
  return modes
end

-- One axis's place v (1-based) under mode on the host, or nil where "raise" refuses it.
local function placed(v, length, mode)
  if mode == "wrap" then return (v - 1) % length + 1 end
  if mode == "clip" then return math.max(1, math.min(v, length)) end
  if v < 1 or v > length then return nil end
  return v
end

-- The C expression that makes the place v_d (a long long) of an axis of length n_d fit it,
-- as the mode says ("raise" flags it in bad instead).
local PLACE_CODE = {
  raise = "if (v_%d < 1 || v_%d > n_%d) bad = true;",
  wrap = "v_%d = (v_%d - 1) %% n_%d; if (v_%d < 0) v_%d += n_%d; v_%d += 1;",
  clip = "v_%d = v_%d < 1 ? 1 : (v_%d > n_%d ? n_%d : v_%d);",
}

local ravel_kernels = {}   -- modes joined by commas -> ElementwiseKernel
local function ravel_kernel(modes)
  local key = table.concat(modes, ",")
  local k = ravel_kernels[key]
  if k == nil then
    local params, lines = {"long long *out"}, {"bool bad = false; long long flat = 0"}
    for d, mode in ipairs(modes) do
      params[#params + 1] = ("const long long *i_%d, long long n_%d, long long s_%d"):format(d, d, d)
      local code = PLACE_CODE[mode]:gsub("%%d", tostring(d)):gsub("%%%%", "%%")
      lines[#lines + 1] = ("long long v_%d = i_%d[i]; %s flat += (v_%d - 1) * s_%d"):format(d, d, code, d, d)
    end
    lines[#lines + 1] = "out[i] = bad ? 0 : flat + 1"    -- 0: the flag any_outside finds
    k = ew.ElementwiseKernel(table.concat(params, ", "), table.concat(lines, ";\n    "), "ravel_multi_index")
    ravel_kernels[key] = k
  end
  return k
end

-- multi_index of ravel_multi_index (argument 1): its items (arrays, tables or integers) as a
-- list, and whether all are integers.
local function multi_index_items(multi_index)
  if is_array(multi_index) then
    check_array(multi_index, 1, "ravel_multi_index")
    if multi_index.ndim == 0 then
      argerror(1, "ravel_multi_index",
               "multi_index must be a list or an array of 1 or more axes, got a 0-d array", 2)
    end
    local items = {}
    for k = 1, multi_index.shape[1] do items[k] = multi_index:select(1, k) end
    return items, false
  end
  if not is_list(multi_index) then
    argerror(1, "ravel_multi_index",
             "multi_index must be a list of index arrays, got " .. typename(multi_index), 2)
  end
  local all_integers = true
  for k = 1, #multi_index do
    if math.type(multi_index[k]) ~= "integer" then all_integers = false end
  end
  return multi_index, all_integers
end

-- gpuarray.ravel_multi_index(multi_index, dims[, {mode = "raise", order = "C"}]): NumPy's,
-- the 1-based flat places in an array of shape dims of the places multi_index lists, one
-- item an axis (1-based; integer arrays broadcast together, tables of integers, or integers
-- for a Lua integer result).  mode (one, or a list of one an axis) says what a place outside
-- its axis does, as take's: "raise" is an error (a check read back: synchronizes), "wrap"
-- counts around, "clip" takes the nearer end.  One kernel for every axis.
function M.ravel_multi_index(multi_index, dims, opts)
  local items, all_integers = multi_index_items(multi_index)
  dims = args.check_shape(dims, 2, "ravel_multi_index")
  opts = check_options(opts, 3, "ravel_multi_index", RAVEL_OPTIONS)
  local order = order_option(opts, 3, "ravel_multi_index")
  if #items ~= #dims then
    argerror(1, "ravel_multi_index", ("multi_index has %d items for %d dims"):format(#items, #dims))
  end
  if #dims == 0 then argerror(2, "ravel_multi_index", "dims must name at least one axis") end
  local modes = ravel_modes(opts, #dims)
  local steps = steps_of(dims, order)
  for d = 1, #dims do
    if dims[d] == 0 and modes[d] ~= "raise" then
      argerror(2, "ravel_multi_index", ("axis %d of length 0 has no place to %s to"):format(d, modes[d]))
    end
  end
  if all_integers then
    local place = 1
    for d = 1, #dims do
      local v = placed(items[d], dims[d], modes[d])
      if v == nil then
        argerror(1, "ravel_multi_index", ("index %d is out of range for axis %d of length %d")
                                         :format(items[d], d, dims[d]))
      end
      place = place + (v - 1) * steps[d]
    end
    return place
  end
  -- every item checked and the shapes broadcast before anything is put on the device
  local sources, shapes = {}, {}
  for d = 1, #dims do
    local item = items[d]
    if math.type(item) == "integer" then
      sources[d] = core.host.from_table({item}, "int64"):reshape({})
    else
      sources[d] = integer_source(item, 1, "ravel_multi_index", ("multi_index item %d"):format(d))
    end
    shapes[d] = sources[d].shape
  end
  local shape, why = promote.broadcast_shapes(shapes)
  if shape == nil then argerror(1, "ravel_multi_index", why) end
  local arrays, temporaries = {}, {}
  for d = 1, #dims do
    local given, uploaded = on_device(sources[d])
    if uploaded then temporaries[#temporaries + 1] = given end
    arrays[d] = given
  end
  local call = {core.array_empty(shape, "int64")}
  local out = call[1]
  if out.size > 0 then
    for d = 1, #dims do
      local x = arrays[d]
      if x.dtype ~= "int64" or not x.is_contiguous or not promote.same_shape(x.shape, shape) then
        x = ga.broadcast_to(x, shape):astype("int64")
        temporaries[#temporaries + 1] = x
      end
      call[#call + 1], call[#call + 2], call[#call + 3] = x, dims[d], steps[d]
    end
    ravel_kernel(modes)(table.unpack(call))
    local checked = false                 -- only "raise" flags places: no read-back without it
    for d = 1, #dims do checked = checked or modes[d] == "raise" end
    if checked and any_outside(out, size_of(dims)) then
      local places = out:get()
      for i = 1, places.size do
        if places[i] == 0 then
          for d = 1, #dims do
            local v = call[3 * d - 1]:get()[i]
            if modes[d] == "raise" and (v < 1 or v > dims[d]) then
              release(out, table.unpack(temporaries))
              argerror(1, "ravel_multi_index", ("index %d at position %d of item %d is out of range for "
                                                .. "axis %d of length %d"):format(v, i, d, d, dims[d]))
            end
          end
        end
      end
    end
  end
  release(table.unpack(temporaries))
  return out
end

-- Editing ---------------------------------------------------------------------------------

local AXIS = {axis = true}

-- The contiguous n-d gather along an axis by k sorted places (keys, int64): out's element
-- (o, j, r), o over the axes before the axis, j along it (lout long), r over those after it
-- (inner elements), is found by a binary search for c, the number of keys at or before j.
-- Deleting, key m (0-based) is the m-th deleted place less m, and the element is a's
-- (o, j + c, r).  Inserting, key m is the output place of the m-th new slot (strictly
-- increasing) and slots[m] its slot of v: where key c - 1 is j the element is v's
-- (o, slots[c - 1], r), else a's (o, j - c, r).  So the host handles k places, not the axis.
-- Elements are moved as unsigned words of their size (complex128 as itself).
local WORD_TYPES = {[1] = {"unsigned char", "uint8"}, [2] = {"unsigned short", "uint16"},
                    [4] = {"unsigned int", "uint32"}, [8] = {"unsigned long long", "uint64"},
                    [16] = {"lg_complex128", "complex128"}}
local gather_kernels = {}
local function gather_kernel(itemsize)
  local k = gather_kernels[itemsize]
  if k == nil then
    local word = WORD_TYPES[itemsize][1]
    k = ew.ElementwiseKernel(
      ("%s *out, const %s *a, const %s *v, const long long *keys, const long long *slots, long long k, "
       .. "bool inserting, long long lout, long long la, long long lv, long long inner")
        :format(word, word, word),
      "const long long r = i % inner, j = i / inner % lout, o = i / inner / lout;\n"
      .. "    long long lo = 0, hi = k;\n"
      .. "    while (lo < hi) { const long long mid = lo + (hi - lo) / 2;"
      .. " if (keys[mid] <= j) lo = mid + 1; else hi = mid; }\n"
      .. "    if (inserting && lo > 0 && keys[lo - 1] == j)\n"
      .. "      out[i] = v[(o * lv + slots[lo - 1]) * inner + r];\n"
      .. "    else out[i] = a[(o * la + (inserting ? j - lo : j + lo)) * inner + r]",
      "sets_gather")
    gather_kernels[itemsize] = k
  end
  return k
end

-- A new array of shape a's with `axis` lout long, gathered by the sorted keys (a list of k
-- integers) and, inserting, their slots of v (see gather_kernel): a, and v where given, are
-- contiguous arrays of one dtype, v of shape a's with its own length along axis.
local function gather_along(a, v, axis, lout, keys, slots)
  local shape = a.shape
  shape[axis] = lout
  local out = core.array_empty(shape, a.dtype)
  if out.size == 0 then return out end
  local inner = 1
  for d = axis + 1, #shape do inner = inner * shape[d] end
  local word = WORD_TYPES[a.itemsize][2]
  local function words(x) return x.dtype == word and x or x:view(word) end
  local k = #keys
  local list = table.move(keys, 1, k, 1, {})           -- keys then slots, in one upload
  if slots then table.move(slots, 1, k, k + 1, list) end
  if k == 0 then list[1] = 0 end                       -- no empty upload: nothing reads it
  local uploaded = ga.to_gpu(core.host.from_table(list, "int64"))
  local on_device_keys = uploaded:slice(1, math.max(k, 1))
  local on_device_slots = slots and k > 0 and uploaded:slice(k + 1, 2 * k) or on_device_keys
  gather_kernel(a.itemsize)(words(out), words(a), words(v or a), on_device_keys, on_device_slots, k,
                            v ~= nil, lout, a.shape[axis], v and v.shape[axis] or 0, inner)
  release(uploaded)
  return out
end

-- The axis that the options (argument n of fname) of an editing function name for arr, or
-- nil for none (arr flattened, as NumPy's editing functions take it); and the axis's length.
local function edit_axis(arr, opts, n, fname)
  opts = check_options(opts, n, fname, AXIS, 2)
  if opts.axis == nil then return nil, arr.size end
  local axis = args.check_axis(opts.axis, arr.ndim, n, fname, 2)
  return axis, arr.shape[axis]
end

-- arr to edit along axis (nil: flattened along axis 1), once every argument is checked (so
-- no error leaves a copy behind): the array (contiguous), the axis, and whether the array is
-- a temporary.
local function edited(arr, axis)
  if axis == nil then
    local x, made = flat(arr)
    return x, 1, made
  end
  if arr.is_contiguous then return arr, axis, false end
  return arr:copy(), axis, true
end

-- A list of integer places (argument 2 of fname): one integer, a list, or an integer
-- GPUArray (read back); bools too where bools_allowed (a mask: the places that are true).
-- Returns the list and whether one integer (or a 0-d array) gave it.
local function place_list(index, fname, bools_allowed, length)
  if math.type(index) == "integer" then return {index}, true end
  local one = false
  if is_array(index) then
    check_array(index, 2, fname)
    local k = kind(index.dtype)
    if k ~= "i" and k ~= "u" and not (bools_allowed and k == "b") then
      argerror(2, fname, ("index must be integers%s, got %s")
                         :format(bools_allowed and " or bools" or "", index.dtype), 2)
    end
    if index.ndim > 1 then
      argerror(2, fname, ("index must be 0-d or 1-d, got a %d-d array"):format(index.ndim), 2)
    end
    one = index.ndim == 0
    if k == "b" and index.ndim == 1 then          -- a mask: only its true places come back
      if index.size ~= length then
        argerror(2, fname, ("a mask of %d bools for an axis of length %d"):format(index.size, length), 2)
      end
      if length == 0 then return {}, false end
      local found = compact.flat_indices(index)
      local h = found:get()
      release(found)
      local places = {}
      for i = 1, h.size do places[i] = h[i] + 1 end
      return places, false
    end
    local h = index:get()
    index = {}
    for i = 1, h.size do index[i] = h[i] end
  elseif not is_list(index) then
    local got = math.type(index) or typename(index)
    argerror(2, fname, "index must be an integer or a list of them, got " .. got, 2)
  end
  if bools_allowed and type(index[1]) == "boolean" then
    if #index ~= length then
      argerror(2, fname, ("a mask of %d bools for an axis of length %d"):format(#index, length), 2)
    end
    local places = {}
    for i = 1, #index do
      if type(index[i]) ~= "boolean" then argerror(2, fname, ("index item %d is not a bool"):format(i), 2) end
      if index[i] then places[#places + 1] = i end
    end
    return places, false
  end
  local places = {}                                 -- a copy: the caller's list stays as it is
  for i = 1, #index do
    if math.type(index[i]) ~= "integer" then
      argerror(2, fname, ("index item %d must be an integer, got %s")
                         :format(i, math.type(index[i]) or typename(index[i])), 2)
    end
    places[i] = index[i]
  end
  return places, one
end

-- values (argument 3 of fname) as a GPUArray of dtype: an array (converted), a table of
-- values or one value (converted as NumPy converts them); and whether it is a temporary.
local function values_as(values, dtype, n, fname)
  if is_array(values) then
    check_array(values, n, fname)
    if values.dtype == dtype then return values, false end
    return values:astype(dtype), true
  end
  local list = is_list(values) and values or {values}
  local ok, h = pcall(core.host.from_table, list)
  if not ok then
    argerror(n, fname, "values must be a GPUArray, a value or a table of values, got " .. typename(values), 2)
  end
  local x = ga.to_gpu(h)
  if not is_list(values) then x = x:reshape({}) end
  if x.dtype ~= dtype then
    local converted = x:astype(dtype)
    release(x)
    x = converted
  end
  return x, true
end

-- values (an array) with leading axes of length 1 up to ndim, as NumPy's ndmin.
local function at_least(values, ndim)
  local shape = values.shape
  while #shape < ndim do table.insert(shape, 1, 1) end
  return values:reshape(shape)
end

-- gpuarray.insert(arr, index, values[, {axis =}]): NumPy's, a copy of arr with values put in
-- before the places index names along axis (arr flattened without one): one place (where
-- the values' first lands: 1 to n + 1, or -n to -1 from the end) or a list of them (a value
-- each, in the list's order, placed as NumPy places them: each before the element the place
-- names in arr).  values are converted to arr's dtype and broadcast as NumPy's: for one
-- integer place their first axis runs along axis (several values go in there together).
function M.insert(arr, index, values, opts)
  check_array(arr, 1, "insert")
  local given_axis, length = edit_axis(arr, opts, 4, "insert")
  local places, one = place_list(index, "insert", false)
  for i, p in ipairs(places) do
    if p == 0 or p > length + 1 or p < -length then
      argerror(2, "insert", ("place %d is out of range for an axis of length %d (1 to %d, or -%d to -1)")
                            :format(p, length, length + 1, length))
    end
    places[i] = p < 0 and length + p or p - 1           -- NumPy's 0-based index
  end
  local v, v_made = values_as(values, arr.dtype, 3, "insert")
  local x, axis, x_made = edited(arr, given_axis)
  local ndmin = at_least(v, x.ndim)
  if one then ndmin = ndmin:moveaxis(1, axis) end
  local count = #places == 1 and ndmin.shape[axis] or #places
  local block_shape = x.shape
  block_shape[axis] = count
  local strides = promote.broadcast_strides(ndmin.shape, ndmin.strides, block_shape)
  if ndmin.ndim > x.ndim or strides == nil then
    release(x_made and x, v_made and v)
    argerror(3, "insert", ("values of shape %s do not broadcast to %s")
                          :format(promote.shape_text(v.shape), promote.shape_text(block_shape)))
  end
  local block = ga.broadcast_to(ndmin, block_shape):copy()
  -- the output places of the new slots, in increasing order, and the slot of v at each
  local keys, slots = {}, {}
  if #places == 1 then
    for m = 1, count do keys[m], slots[m] = places[1] + m - 1, m - 1 end
  else
    -- NumPy's: by the stable order of the places, the k-th (from 0) moves k on
    local by_place = {}
    for m = 1, count do by_place[m] = m end
    table.sort(by_place, function(i, j)
      if places[i] ~= places[j] then return places[i] < places[j] end
      return i < j
    end)
    for k, m in ipairs(by_place) do keys[k], slots[k] = places[m] + k - 1, m - 1 end
  end
  local out = gather_along(x, block, axis, length + count, keys, slots)
  release(x_made and x, v_made and v, block)
  return out
end

-- gpuarray.delete(arr, index[, {axis =}]): NumPy's, a copy of arr without the elements along
-- axis (arr flattened without one) that index names: a place (1 to n, or -n to -1), a list
-- of them (repeats count once), or a mask of n bools (a table or a GPUArray; true: deleted).
function M.delete(arr, index, opts)
  check_array(arr, 1, "delete")
  local given_axis, length = edit_axis(arr, opts, 3, "delete")
  local places = place_list(index, "delete", true, length)
  local gone = {}
  for _, p in ipairs(places) do
    if p == 0 or p > length or p < -length then
      argerror(2, "delete", ("place %d is out of range for an axis of length %d"):format(p, length))
    end
    gone[#gone + 1] = p < 0 and length + p or p - 1        -- 0-based
  end
  table.sort(gone)
  local keys, last = {}, nil         -- each distinct deleted place less the number before it
  for _, p in ipairs(gone) do
    if p ~= last then keys[#keys + 1], last = p - #keys, p end
  end
  local x, axis, x_made = edited(arr, given_axis)
  local out = gather_along(x, nil, axis, length - #keys, keys)
  release(x_made and x)
  return out
end

-- gpuarray.append(arr, values[, {axis =}]): NumPy's, arr and values joined (both flattened
-- without an axis; along it they must agree off it), in their promoted dtype.  values: a
-- GPUArray, a table of values or one value (NumPy's array of them).
function M.append(arr, values, opts)
  check_array(arr, 1, "append")
  opts = check_options(opts, 3, "append", AXIS)
  local v, v_made
  if is_array(values) then v, v_made = check_array(values, 2, "append"), false
  else
    local list = is_list(values) and values or {values}
    local ok, h = pcall(core.host.from_table, list)
    if not ok then
      argerror(2, "append", "values must be a GPUArray, a value or a table of values, got " .. typename(values))
    end
    v, v_made = ga.to_gpu(h), true
  end
  if v.device ~= arr.device then
    argerror(2, "append", ("values are on device %d, the array on device %d"):format(v.device, arr.device))
  end
  local dtype = promote.result_type_of({arr.dtype, v.dtype})
  local out
  if opts.axis == nil then
    local x, x_made = flat(arr)
    local y, y_made = flat(v)
    out = ga._join_along({x, y}, dtype, 1, nil, "append")
    release(x_made and x, y_made and y)
  else
    local axis = args.check_axis(opts.axis, arr.ndim, 3, "append")
    local shape, v_shape = arr.shape, v.shape
    if #v_shape ~= #shape then
      argerror(2, "append", ("values are %d-d, the array %d-d"):format(#v_shape, #shape))
    end
    for d = 1, #shape do
      if d ~= axis and v_shape[d] ~= shape[d] then
        argerror(2, "append", ("values have shape %s, the array %s: they must agree off axis %d")
                              :format(promote.shape_text(v_shape), promote.shape_text(shape), axis))
      end
    end
    out = ga._join_along({arr, v}, dtype, axis, nil, "append")
  end
  release(v_made and v)
  return out
end

local repeat_kernels = {}
local function repeat_kernel(itemsize)
  local k = repeat_kernels[itemsize]
  if k == nil then
    local word = WORD_TYPES[itemsize][1]
    k = ew.ElementwiseKernel(("%s *out, const %s *a, long long n"):format(word, word), "out[i] = a[i % n]",
                             "sets_resize")
    repeat_kernels[itemsize] = k
  end
  return k
end

-- gpuarray.resize(a, new_shape): NumPy's np.resize, an array of new_shape filled with a's
-- elements in row-major order, repeated as often as it takes (zeros where a is empty).  One
-- kernel reads a's element i modulo its size for each element i of the new array.
function M.resize(a, new_shape)
  check_array(a, 1, "resize")
  new_shape = args.check_shape(new_shape, 2, "resize")
  local size = size_of(new_shape)
  if size == 0 or a.size == 0 then return ga.zeros(new_shape, a.dtype) end
  local x, made = flat(a)
  local out = core.array_empty(new_shape, a.dtype)
  local word = WORD_TYPES[a.itemsize][2]
  local function words(y) return y.dtype == word and y or y:view(word) end
  repeat_kernel(a.itemsize)(words(out), words(x), a.size)
  release(made and x)
  return out
end

-- trim_zeros's span: the first and last 0-based places of the true elements of a bool array
-- (n and -1 where there are none), in one reduction of pairs.
local span_kernel
local function nonzero_span(mask)
  span_kernel = span_kernel or reduction.ReductionKernel(
    {ctype = "sets_span", itemsize = 16}, "sets_span{0x7fffffffffffffffll, -1ll}",
    "sets_span{a.first < b.first ? a.first : b.first, a.last > b.last ? a.last : b.last}",
    "mask[i] ? sets_span{(long long)i, (long long)i} : sets_span{0x7fffffffffffffffll, -1ll}",
    "const bool *mask", {name = "trim_zeros_span", preamble = "struct sets_span { long long first, last; };"})
  local result = span_kernel(mask)
  local pair = result:view("int64"):get()
  result:free()
  return pair[1], pair[2]
end

-- gpuarray.trim_zeros(filt[, trim = "fb"]): NumPy's, the view of the 1-d filt without its
-- leading (trim has an "f"), trailing (a "b") or both zeros; trim's letters in either case,
-- as NumPy's ("" trims nothing).  NaN and -0.0 as NumPy's truth: NaN is not zero, -0.0 is.
-- One reduction, read back.
function M.trim_zeros(filt, trim)
  check_array(filt, 1, "trim_zeros")
  if filt.ndim ~= 1 then argerror(1, "trim_zeros", ("a 1-d array expected, got %d-d"):format(filt.ndim)) end
  trim = trim == nil and "fb" or trim
  if type(trim) ~= "string" or trim:find("[^fFbB]") then
    argerror(2, "trim_zeros", "trim must be made of the letters 'f' and 'b' (either case), got "
                              .. quoted(trim))
  end
  trim = trim:lower()
  local n = filt.size
  if not trim:find("[fb]") then return filt:slice(1, n) end
  if n == 0 then return filt:slice(1, 0) end
  local mask = (filt.dtype == "bool" and filt.is_contiguous) and filt or filt:astype("bool")
  local first, last = nonzero_span(mask)
  if mask ~= filt then release(mask) end
  if last < 0 then return filt:slice(1, 0) end           -- all zeros: nothing is left
  if not trim:find("f") then first = 0 end
  if not trim:find("b") then last = n - 1 end
  return filt:slice(first + 1, last + 1)
end

-- NumPy's sort_complex result dtypes: complex64 for the small integers, complex128 for
-- every other real dtype.
local SMALL_INTEGERS = {int8 = true, uint8 = true, int16 = true, uint16 = true}

-- gpuarray.sort_complex(a): NumPy's, a sorted along its last axis as complex numbers (by
-- real part, then imaginary part; NaN last), as complex64 (int8, uint8, int16 and uint16),
-- complex128 (other real dtypes) or a's own complex dtype.
function M.sort_complex(a)
  check_array(a, 1, "sort_complex")
  if a.ndim == 0 then argerror(1, "sort_complex", "a 0-d array has no axis to sort along") end
  local sorted = ga.sort(a)
  if kind(a.dtype) == "c" then return sorted end
  local result = sorted:astype(SMALL_INTEGERS[a.dtype] and "complex64" or "complex128")
  release(sorted)
  return result
end

local FUNCTIONS = {"in1d", "union1d", "intersect1d", "setdiff1d", "setxor1d", "lexsort",
                   "unravel_index", "ravel_multi_index", "insert", "delete", "append", "resize",
                   "trim_zeros", "sort_complex"}

function M.install(gpu)
  ga = gpu.gpuarray
  compact = require "gpu.compact"
  for _, name in ipairs(FUNCTIONS) do ga[name] = M[name] end
end

return M
