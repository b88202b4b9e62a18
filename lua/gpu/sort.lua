-- gpu.sort: NumPy's sort and argsort along an axis (kernels/sort.cu).
--   gpuarray.sort(a[, {axis = k, stream = s}]) -> a sorted copy
--   a:sort([{axis = k, stream = s}]) sorts a in place
--   gpuarray.argsort(a[, {axis = k, stream = s}]) -> int64 array of 1-based indices along the
--     axis that would sort it; stable (equal elements keep their order)
--   gpuarray.searchsorted(a, v[, {side = "left" | "right", stream = s}]) -> int64 array of v's
--     shape: where each of v's values would go in the sorted 1-d a, 1-based
--   gpuarray.topk(a, k[, {axis = k, largest = true, stream = s}]) -> values, indices (Torch's)
--   gpuarray.partition(a, kth[, opts]), argpartition: NumPy's (by the sort)
-- The axis is the last one unless given (1-based, negatives from the end), as NumPy's.  NaN
-- sorts after every number; complex numbers order by real part, then imaginary part, with
-- NaN parts last, as NumPy's.

local core = require "gpu.core"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local args = require "gpu.args"
local promote = require "gpu.promote"
local is_complex = require("gpu.complex").is_complex

local M = {}

local argerror = args.argerror
local check_array = reduction.check_array
local dtypes = reduction.dtypes
local BLOCK = 256
local CHUNK = 2048                   -- kernels/sort.cu's GPU_CHUNK
-- Rows longer than this that are not complex take a radix sort: whole in a block up to a
-- tile (on the H100 2-7 times as fast as the bitonic network for rows of 300 to 2048 keys),
-- else a pass a byte over the row.  Shorter rows and complex ones take the network.
local TILE_SORT_MIN = 256
local OPTIONS = {axis = true, stream = true}

-- The body of gpu_key_before(a, b) for complex keys: NumPy's order, by which parts are NaN
-- first (none, the imaginary one, the real one, both), then by the parts that are not.
local COMPLEX_BEFORE = [[
  const int nan_a = (a.re != a.re) * 2 + (a.im != a.im), nan_b = (b.re != b.re) * 2 + (b.im != b.im);
  if (nan_a != nan_b) return nan_a < nan_b;
  if (nan_a == 0) return a.re < b.re || (a.re == b.re && a.im < b.im);
  if (nan_a == 1) return a.re < b.re;
  if (nan_a == 2) return a.im < b.im;
  return false;]]

-- The body of gpu_radix_bits(key) for each kind of dtype, given u, the key's bits: an unsigned
-- number that orders as NumPy orders the keys.  Floats: a set sign bit flips every bit (more
-- negative, smaller), a clear one sets the sign bit; -0.0 counts as 0.0 and every NaN
-- (exponent all ones, $INF, and a mantissa) as the largest number.
local RADIX_BITS = {
  b = "  return u;",
  u = "  return u;",
  i = "  return (gpu_bits_t)(u ^ ((gpu_bits_t)1 << (8 * sizeof(gpu_bits_t) - 1)));",
  f = [[
  const gpu_bits_t sign = (gpu_bits_t)1 << (8 * sizeof(gpu_bits_t) - 1);
  if ((gpu_bits_t)(u & ~sign) > (gpu_bits_t)$INF) return (gpu_bits_t)~(gpu_bits_t)0;
  if (u == sign) u = 0;
  return (gpu_bits_t)((u & sign) ? ~u : (u | sign));]],
}
-- The body of gpu_radix_key(u) in kernels/select.cu: RADIX_BITS undone on the bits u, in
-- place (a NaN comes back as a NaN, -0.0 as 0.0).
local RADIX_KEY = {
  b = "", u = "",
  i = "  u = (gpu_bits_t)(u ^ ((gpu_bits_t)1 << (8 * sizeof(gpu_bits_t) - 1)));",
  f = [[
  const gpu_bits_t sign = (gpu_bits_t)1 << (8 * sizeof(gpu_bits_t) - 1);
  u = (gpu_bits_t)((u & sign) ? (u ^ sign) : ~u);]],
}
local FLOAT_INFINITY_BITS = {float16 = "0x7c00", bfloat16 = "0x7f80", float32 = "0x7f800000u",
                             float64 = "0x7ff0000000000000ull"}
local UNSIGNED_OF_SIZE = {[1] = "unsigned char", [2] = "unsigned short", [4] = "unsigned int",
                          [8] = "unsigned long long"}

-- Keys a thread takes per tile in kernels/sort.cu's radix sort (with a 4-byte index each
-- for argsort, the tile still fits in 48 KiB of shared memory).
local function radix_items(dtype)
  return dtypes[dtype].size <= 4 and 16 or 8
end

-- The module source for keys of dtype (with 1-based indices carried along for argsort).
function M.source(dtype, with_indices)
  local d = dtypes[dtype]
  local radix = d.kind ~= "c"
  local before = COMPLEX_BEFORE
  if d.kind ~= "c" then
    local compare, load = d.ctype, "%s"
    if dtype == "float16" then compare, load = "float", "gpu_half_to_float(%s)"
    elseif dtype == "bfloat16" then compare, load = "float", "gpu_bf16_to_float(%s)" end
    before = ("  const %s x = %s, y = %s;\n  return x < y || (y != y && x == x);")
             :format(compare, load:format("a"), load:format("b"))
  end
  return core.kernel_sources["common.cu"] .. "\n" .. reduction.fill(core.kernel_sources["sort.cu"], {
    KEY_T = d.ctype, BEFORE = before, WITH_INDICES = with_indices and "1" or "0",
    RADIX = radix and "1" or "0", BITS_T = UNSIGNED_OF_SIZE[d.size] or "",
    RADIX_ITEMS = tostring(radix_items(dtype)),
    RADIX_BITS = radix and reduction.fill(RADIX_BITS[d.kind], {INF = FLOAT_INFINITY_BITS[dtype]}) or "",
  })
end

local function kernel(dtype, with_indices, name)
  local key = ("sort|%s|%s"):format(dtype, with_indices and "indices" or "keys")
  return kernel_cache.get(key .. "|" .. name, function()
    return M.source(dtype, with_indices), name, nil, {no_extern_c = true, name = "sort.cu"}
  end)
end

local function grid_for(n) return reduction.grid_stride_blocks(n, BLOCK) end

-- Keys of a radix tile: a block's worth.
local function tile_size(dtype) return BLOCK * radix_items(dtype) end

-- sort_rows for rows longer than a tile, of keys that are not complex: a radix sort, a byte
-- of the key a pass, between keys and a spare array (and, for indices, between two arrays of
-- 4-byte indices, the last pass writing into indices); the first pass reads source.  An odd
-- number of passes ends in the spare, copied into keys unless only the indices are wanted.  One
-- histogram of every byte first, then a pass a byte, each with its look-back's state zeroed
-- just before it (kernels/sort.cu).  (Zeroing every pass's state at once, in one allocation,
-- saved a memset a pass on small sorts but made 2^24 float32 0.69 -> 0.79-0.85 ms on the
-- H200: a state zeroed just before its pass is still in the L2 cache.)
local function radix_rows(keys, indices, rows, len, stream, source, keys_unwanted)
  local dtype, with_indices = keys.dtype, indices ~= nil
  local passes = dtypes[dtype].size
  local tiles = (len + tile_size(dtype) - 1) // tile_size(dtype)
  local totals_bytes = 8 * rows * passes * 256
  local state_bytes = 8 * (1 + rows * tiles * 256)     -- the tile counter, then the statuses
  local totals, state = core.mem_alloc(totals_bytes), core.mem_alloc(state_bytes)
  local launch = {block = BLOCK, grid = math.min(rows * tiles, reduction.max_grid()), stream = stream}
  core.memset_d32_async(totals, 0, totals_bytes // 4, stream)
  kernel(dtype, with_indices, "gpu_radix_histogram")(source, totals, rows, len, tiles, launch)
  local scatter = kernel(dtype, with_indices, "gpu_radix_scatter")
  local spare = core.array_empty(keys.shape, dtype)
  local key_arrays, index_arrays = {keys, spare}, {}
  if with_indices then
    index_arrays = {core.array_empty(keys.shape, "uint32"), core.array_empty(keys.shape, "uint32")}
  end
  for pass = 0, passes - 1 do
    local from, to = pass % 2 + 1, (pass + 1) % 2 + 1
    local from_indices = pass > 0 and index_arrays[from] or nil   -- the first pass numbers the keys
    local final = pass == passes - 1 and indices or nil
    core.memset_d32_async(state, 0, state_bytes // 4, stream)
    scatter(pass > 0 and key_arrays[from] or source, key_arrays[to], from_indices,
            not final and index_arrays[to] or nil, final, state, totals, rows, len, tiles, pass, launch)
  end
  if passes % 2 == 1 and not keys_unwanted then
    ew.launch(ew.copy_program(dtype), keys, stream, "sort", spare)
  end
  for _, scratch in ipairs{totals, state, spare, index_arrays[1], index_arrays[2]} do
    core.free_after(scratch, stream)
  end
end

-- sort_rows for rows that fit one radix tile: every pass in shared memory, a block a row.
local function radix_tiles(keys, indices, rows, len, stream, source, keys_unwanted)
  kernel(keys.dtype, indices ~= nil, "gpu_radix_sort_tiles")(source, (not keys_unwanted) and keys or nil,
                                                             indices, rows, len,
    {block = BLOCK, grid = math.min(rows, reduction.max_grid()), stream = stream})
end

-- Whether rows of len keys of dtype take a radix sort (else the bitonic network).
local function takes_radix(len, dtype, with_indices)
  return len > TILE_SORT_MIN and dtypes[dtype].kind ~= "c" and (not with_indices or len < 1 << 32)
end

-- Sorts each of the rows of the contiguous array keys along its last axis, and, given indices
-- (an int64 array of keys' shape), sets them to the 1-based indices that sort each row; with
-- keys_unwanted (argsort's) keys may be left in no particular order.  A radix sort reads its
-- keys from source (contiguous, of keys' shape and dtype) when given, and keys need hold
-- nothing.
local function sort_rows(keys, indices, stream, source, keys_unwanted)
  local shape = keys.shape
  local len = shape[#shape]
  local rows = keys.size // len
  if takes_radix(len, keys.dtype, indices ~= nil) then
    local radix = len <= tile_size(keys.dtype) and radix_tiles or radix_rows
    return radix(keys, indices, rows, len, stream, source or keys, keys_unwanted)
  end
  assert(source == nil, "the bitonic network sorts keys in place")
  if indices then
    kernel(keys.dtype, true, "gpu_sort_init_indices")(indices, rows, len,
                                                      {block = BLOCK, grid = grid_for(keys.size), stream = stream})
  end
  local padded = 1
  while padded < len do padded = padded * 2 end
  local half = padded // 2
  local with_indices = indices ~= nil
  local step = kernel(keys.dtype, with_indices, "gpu_sort_step")
  local chunk = kernel(keys.dtype, with_indices, "gpu_sort_chunk")
  local chunks = (len + CHUNK - 1) // CHUNK
  local step_launch = {block = BLOCK, grid = grid_for(rows * half), stream = stream}
  local chunk_launch = {block = CHUNK // 2, grid = math.min(rows * chunks, reduction.max_grid() * 8),
                        stream = stream}
  chunk(keys, indices, rows, len, chunks, math.min(padded, CHUNK), 0, chunk_launch)
  local size = 2 * CHUNK
  while size <= padded do                   -- the wider steps in global memory, the rest in chunks
    step(keys, indices, rows, len, half, size, size // 2, 1, step_launch)
    local distance = size // 4
    while distance >= CHUNK do
      step(keys, indices, rows, len, half, size, distance, 0, step_launch)
      distance = distance // 2
    end
    chunk(keys, indices, rows, len, chunks, 0, size, chunk_launch)
    size = size * 2
  end
end

-- Checks a and the options; returns the axis (1-based) and the stream.
local function check(a, opts, fname, opts_at)
  opts_at = opts_at or 2
  check_array(a, 1, fname)
  opts = reduction.check_options(opts, opts_at, fname, OPTIONS)
  local axis = opts.axis
  if axis == nil then
    if a.ndim == 0 then argerror(1, fname, "a 0-d array has no axis to sort along") end
    axis = a.ndim
  end
  return args.check_axis(axis, a.ndim, opts_at, fname), opts.stream
end

-- Sorts a along axis into new contiguous arrays in axis-last order.  `wanted` is "keys",
-- "indices" or "both"; returns the sorted keys (in no particular order when only the indices
-- are wanted), the indices that sort them (nil when only the keys are), and the permutation
-- that gives that order (nil when it is a's own).
local function sorted(a, axis, wanted, stream)
  local want_indices, keys_unwanted = wanted ~= "keys", wanted == "indices"
  local order = reduction.axis_last(a.ndim, axis)
  local moved = axis ~= a.ndim
  local view = moved and a:transpose(order) or a
  local shape = view.shape
  local indices = want_indices and core.array_empty(shape, "int64") or nil
  local keys
  if view.size > 0 and view.is_contiguous and takes_radix(shape[#shape], a.dtype, want_indices) then
    keys = core.array_empty(shape, a.dtype)          -- a radix sort's first pass reads the view
    sort_rows(keys, indices, stream, view, keys_unwanted)
  else
    keys = view:copy(stream and {stream = stream})
    if keys.size > 0 then sort_rows(keys, indices, stream, nil, keys_unwanted) end
  end
  return keys, indices, moved and order or nil
end

-- sort.sorted_lines(a, axis[, stream]) -> a new contiguous array of a's elements sorted along
-- axis, that axis moved last (the others keep their order): the quantiles' lines.
function M.sorted_lines(a, axis, stream)
  return (sorted(a, axis, "keys", stream))
end

-- sort.with_places(a[, stream]) -> a 1-d array's elements sorted and the 1-based places that
-- sort them (int64, stable), from one sort: for callers that need both (gpu.random's ties).
function M.with_places(a, stream)
  local keys, places = sorted(a, 1, "both", stream)
  return keys, places
end

-- The array of a's shape holding rows (contiguous, in axis-last order): rows itself when
-- the axis was already last, else a copy through the transposed view of a new array, or of
-- `into` (an existing array of that shape) when given.
local function restore(rows, order, shape, dtype, stream, into)
  if order == nil and into == nil then return rows end
  local target = into or core.array_empty(shape, dtype)
  local view = order and target:transpose(order) or target
  ew.launch(ew.copy_program(dtype), view, stream, "sort", rows)
  core.free_after(rows, stream)
  return target
end

function M.sort(a, opts)
  local axis, stream = check(a, opts, "sort")
  local keys, _, order = sorted(a, axis, "keys", stream)
  return restore(keys, order, a.shape, a.dtype, stream)
end

-- a:sort() sorts in place, as NumPy's ndarray.sort, and returns nothing.  A contiguous array
-- sorted along its last axis needs no copy; other layouts go through one and back.
function M.sort_in_place(a, opts)
  local axis, stream = check(a, opts, "sort")
  if axis == a.ndim and a.is_contiguous then
    if a.size > 0 then sort_rows(a, nil, stream) end
    return
  end
  local keys, _, order = sorted(a, axis, "keys", stream)
  restore(keys, order, a.shape, a.dtype, stream, a)
end

function M.argsort(a, opts)
  local axis, stream = check(a, opts, "argsort")
  local keys, indices, order = sorted(a, axis, "indices", stream)
  core.free_after(keys, stream)
  return restore(indices, order, a.shape, "int64", stream)
end

-- gpuarray.partition(a, kth[, {axis = -1, stream =}]), argpartition: NumPy's: a copy (the
-- indices) in which each line's element at place kth (1-based, negatives from the end; or a
-- list of places) is the one a sort puts there, those before it no greater and those after
-- no smaller.  NumPy leaves the order within the two sides open: the sort here orders them
-- too, which meets the contract.
for _, fname in ipairs{"partition", "argpartition"} do
  M[fname] = function(a, kth, opts)
    local axis, stream = check(a, opts, fname, 3)
    local n = a.shape[axis]
    for _, k in ipairs(type(kth) == "table" and kth or {kth}) do
      if math.type(k) ~= "integer" or k == 0 or k > n or k < -n then
        argerror(2, fname, ("kth must be a place from 1 to %d (or -%d to -1), or a list of them, got %s")
                           :format(n, n, tostring(k)))
      end
    end
    if fname == "partition" then return M.sort(a, {axis = axis, stream = stream}) end
    return M.argsort(a, {axis = axis, stream = stream})
  end
end

local TOPK_OPTIONS = {axis = true, largest = true, stream = true}

-- gpuarray.topk(a, k[, {axis = -1, largest = true, stream = s}]) -> values, indices: Torch's
-- topk.  The k largest (or smallest) of a's elements along axis, largest (smallest) first,
-- NaN counting as the largest as in the sort, and their 1-based places along the axis (int64,
-- as argsort's); both of a's shape with the axis k long.  One sort that carries the indices,
-- of which each row's end is kept.
function M.topk(a, k, opts)
  check_array(a, 1, "topk")
  opts = reduction.check_options(opts, 3, "topk", TOPK_OPTIONS)
  if a.ndim == 0 then argerror(1, "topk", "a 0-d array has no axis to sort along") end
  local axis = args.check_axis(opts.axis or -1, a.ndim, 3, "topk")
  local largest = opts.largest
  if largest == nil then largest = true end
  if type(largest) ~= "boolean" then
    argerror(3, "topk", "option 'largest' must be a boolean, got " .. args.typename(largest))
  end
  local n = a.shape[axis]
  local count = math.tointeger(k)
  if count == nil or count < 0 or count > n then
    argerror(2, "topk", ("k must be a whole number from 0 to %d, got %s"):format(n, tostring(k)))
  end
  local stream = opts.stream
  local keys, indices, order = sorted(a, axis, "both", stream)
  local shape = a.shape
  shape[axis] = count
  local function kept(rows, dtype)  -- each row's end, first first, into an array of shape
    local last = rows.ndim
    local run = rows:narrow(last, largest and n - count + 1 or 1, count)
    if largest then run = run:flip({axis = last}) end
    local target = core.array_empty(shape, dtype)
    if count > 0 then
      ew.launch(ew.copy_program(dtype), order and target:transpose(order) or target, stream, "topk", run)
    end
    core.free_after(rows, stream)
    return target
  end
  return kept(keys, a.dtype), kept(indices, "int64")
end

local SEARCH_OPTIONS = {side = true, stream = true}

-- v of searchsorted (argument 2) as an array, whether it is a temporary, and the dtype it and
-- a are compared in: NumPy's promotion, with a number or a table of numbers counting as weak
-- scalars (NEP 50), so that 2.5 is looked for as 2.5 among integers.  A table's kind is the
-- dtype host.from_table infers for it (int64, float64, complex128 or bool).
local WEAK_OF = {int64 = "weak-int", float64 = "weak-float", complex128 = "weak-complex"}
local function search_values(a, v)
  if getmetatable(v) == core.types.GPUArray then
    check_array(v, 2, "searchsorted")
    if v.device ~= a.device then
      argerror(2, "searchsorted", ("v is on device %d, a on device %d"):format(v.device, a.device))
    end
    return v, false, promote.promote_types(a.dtype, v.dtype)
  end
  local one = type(v) == "number" or is_complex(v)
  local list = one and {v} or v
  local ok, h = false, nil
  if type(list) == "table" and getmetatable(list) == nil then ok, h = pcall(core.host.from_table, list) end
  local dtype
  if ok then
    local weak = WEAK_OF[h.dtype]
    dtype = weak and promote.weak_dtype(weak, a.dtype) or promote.promote_types(a.dtype, h.dtype)
    if dtype ~= h.dtype then ok, h = pcall(core.host.from_table, list, dtype) end
  end
  if not ok then argerror(2, "searchsorted", "v must be a GPUArray, a number or a table of numbers") end
  local values = require("gpu.gpuarray").to_gpu(h)
  if one then values = values:reshape({}) end             -- one number: a 0-d result
  return values, true, dtype
end

function M.searchsorted(a, v, opts)
  check_array(a, 1, "searchsorted")
  if a.ndim ~= 1 then
    argerror(1, "searchsorted", ("a sorted 1-d array expected, got shape %s"):format(promote.shape_text(a.shape)))
  end
  opts = reduction.check_options(opts, 3, "searchsorted", SEARCH_OPTIONS)
  local side, stream = opts.side or "left", opts.stream
  if side ~= "left" and side ~= "right" then
    argerror(3, "searchsorted", ("option 'side' must be 'left' or 'right', got %s")
                                :format(type(side) == "string" and "'" .. side .. "'" or args.typename(side)))
  end
  local values, values_made, dtype = search_values(a, v)
  local result = core.array_empty(values.shape, "int64")
  if values.size == 0 then
    if values_made then values:free() end
    return result
  end
  local function as_keys(x)          -- x in dtype, contiguous; and whether that is a copy
    if x.dtype ~= dtype then return x:astype(dtype, {stream = stream}), true end
    if not x.is_contiguous then return x:copy({stream = stream}), true end
    return x, false
  end
  local keys, keys_made = as_keys(a)
  local probes, probes_made = as_keys(values)
  kernel(dtype, false, "gpu_searchsorted")(keys, a.size, probes, values.size, result,
                                           side == "right" and 1 or 0,
                                           {block = BLOCK, grid = grid_for(values.size), stream = stream})
  if keys_made then core.free_after(keys, stream) end
  if probes_made then core.free_after(probes, stream) end
  if values_made then core.free_after(values, stream) end
  return result
end

-- Selection (kernels/select.cu) ------------------------------------------------------------

M.SELECT_RANKS = 8                   -- select.cu's GPU_SELECT_RANKS: the ranks of one selection
local SELECT_STATE_BYTES = 16640     -- at least select.cu's gpu_select_state (16568 for 8-byte keys)
local SELECT_READ, SELECT_COPY, SELECT_FROM_COPIES = 0, 1, 2   -- gpu_select_histogram's modes

function M.select_source(dtype)
  local d = dtypes[dtype]
  return reduction.fill(core.kernel_sources["select.cu"], {
    KEY_T = d.ctype, BITS_T = UNSIGNED_OF_SIZE[d.size],
    RADIX_BITS = reduction.fill(RADIX_BITS[d.kind], {INF = FLOAT_INFINITY_BITS[dtype]}),
    RADIX_KEY = RADIX_KEY[d.kind],
  })
end

local function select_kernel(dtype, name)
  return kernel_cache.get(("select|%s|%s"):format(dtype, name), function()
    return M.select_source(dtype), name, nil, {no_extern_c = true, name = "select.cu"}
  end)
end

-- sort.select(a, ranks[, stream]) -> a 1-d array of a's dtype: for each 1-based place in the
-- list ranks (1 to SELECT_RANKS of them, each from 1 to a.size), the element at that place
-- of a's sorted order (NaN last; a NaN comes back as a NaN, -0.0 as 0.0), found a byte a
-- pass over a without sorting it.  a: a contiguous 1-d array of real numbers or bools.
function M.select(a, ranks, stream)
  local dtype = a.dtype
  local out = core.array_empty({#ranks}, dtype)
  local state = core.mem_alloc(SELECT_STATE_BYTES)
  local init_args = {state, #ranks}
  for r = 1, M.SELECT_RANKS do init_args[r + 2] = (ranks[r] or 1) - 1 end
  local one_block = {block = 256, grid = 1, stream = stream}
  init_args[#init_args + 1] = one_block
  select_kernel(dtype, "gpu_select_init")(table.unpack(init_args))
  local histogram = select_kernel(dtype, "gpu_select_histogram")
  local digits = select_kernel(dtype, "gpu_select_digits")
  local tile = 256 * 8                                   -- select.cu's keys a block loads at once
  local launch = {block = 256, grid = math.min(reduction.max_grid(), (a.size + tile - 1) // tile), stream = stream}
  local size = dtypes[dtype].size
  -- keys of 4 bytes or more: the second pass may copy the keys still wanted (the first pass's
  -- digits decide), the later ones then read those; without room for a spare array, none
  local spare
  if size >= 4 then
    local ok, array = pcall(core.array_empty, {a.size}, dtype)
    spare = ok and array or nil
  end
  for byte = size - 1, 0, -1 do                         -- the highest byte first
    local pass, mode = size - 1 - byte, SELECT_READ
    if spare and pass >= 1 then mode = pass == 1 and SELECT_COPY or SELECT_FROM_COPIES end
    histogram(a, a.size, state, 8 * byte, spare, mode, launch)
    digits(state, 8 * byte, byte == 0 and out or nil, one_block)
  end
  core.free_after(state, stream)
  if spare then core.free_after(spare, stream) end
  return out
end

function M.install(gpu)
  gpu.gpuarray.sort, gpu.gpuarray.argsort = M.sort, M.argsort
  gpu.gpuarray.searchsorted = M.searchsorted
  gpu.gpuarray.topk = M.topk
  gpu.gpuarray.partition, gpu.gpuarray.argpartition = M.partition, M.argpartition
  local methods = core.types.GPUArray.__methods
  methods.sort, methods.argsort = M.sort_in_place, M.argsort
  methods.searchsorted, methods.topk = M.searchsorted, M.topk
end

return M
