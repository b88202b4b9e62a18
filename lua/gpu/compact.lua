-- gpu.compact: NumPy's selections whose size depends on the data, by stream compaction
-- (kernels/compact.cu): each tile of the mask is counted, the running count of the tiles'
-- counts (gpu.cumsum) gives each tile its place in the result.  Each reads the total back to
-- size its result, so each synchronizes once.
--   gpuarray.extract(condition, a) -> 1-d array of a's elements where condition is true
--     (nonzero), both read in row-major order
--   gpuarray.nonzero(a) -> one int64 array per axis of a, the 1-based indices of a's nonzero
--     elements (a NaN is nonzero) in row-major order
--   gpuarray.count_nonzero(a) -> Lua integer
--   gpuarray.unique(a[, {return_index =, return_inverse =, return_counts =}]) -> a's distinct
--     values, sorted (NaNs count as one, as with NumPy's equal_nan), then as NumPy's, for each
--     option set: where each value first occurs in a (1-based, row-major), each of a's
--     elements' place among the values (1-based, a's shape: values[inverse] is a), how often
--     each value occurs; all int64

local core = require "gpu.core"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local scan = require "gpu.scan"
local args = require "gpu.args"

local M = {}

local argerror, check_array = args.argerror, reduction.check_array
local BLOCK, TILE = 256, 4096          -- kernels/compact.cu's GPU_BLOCK and GPU_TILE

local function kernel(name, item_bytes)
  return kernel_cache.get(("compact|%d|%s"):format(item_bytes, name), function()
    return reduction.fill(core.kernel_sources["compact.cu"], {ITEM_BYTES = tostring(item_bytes)}),
           name, nil, {no_extern_c = true, name = "compact.cu"}
  end)
end

-- Temporaries made here are freed in the default stream's order, after the kernels that read them.
local function release(...) core.free_all_after(nil, ...) end

-- a as a contiguous array, and whether that is a copy.
local function contiguous(a)
  if a.is_contiguous then return a, false end
  return a:copy(), true
end

-- The truth of a's elements as a contiguous bool array, and whether that is a new array.
local function truth(a)
  if a.dtype == "bool" and a.is_contiguous then return a, false end
  return a:astype("bool"), true
end

-- The launch geometry of mask's tiles (mask not empty), the running count of the tiles'
-- selected elements (int64; one tile's needs no running count: the int32 count stands in,
-- unread) and the total.  item_bytes picks the module (the one of the kernel that follows).
local function count_tiles(mask, item_bytes)
  local tiles = (mask.size + TILE - 1) // TILE
  local geometry = {grid = tiles, block = BLOCK}
  local counts = core.array_empty({tiles}, "int32")
  kernel("gpu_compact_count", item_bytes)(counts, mask, mask.size, geometry)
  if tiles == 1 then return geometry, counts, counts[1] end       -- reads one element: syncs
  local running = scan.cumsum(counts)
  release(counts)
  return geometry, running, running[tiles]
end

-- The 0-based flat indices of the true elements of mask (contiguous, not empty).
local function true_indices(mask)
  local geometry, running, total = count_tiles(mask, 8)
  local out = core.array_empty({total}, "int64")
  if total > 0 then
    kernel("gpu_compact_indices", 8)(out, mask, running, mask.size, geometry)
  end
  release(running)
  return out
end

function M.extract(condition, a)
  check_array(condition, 1, "extract")
  check_array(a, 2, "extract")
  if condition.size ~= a.size then
    argerror(2, "extract", ("condition and array differ in size (%d and %d)"):format(condition.size, a.size))
  end
  if a.size == 0 then return core.array_empty({0}, a.dtype) end
  local mask, new_mask = truth(condition)
  local values, copied = contiguous(a)
  local geometry, running, total = count_tiles(mask, a.itemsize)
  local out = core.array_empty({total}, a.dtype)
  if total > 0 then
    kernel("gpu_compact", a.itemsize)(out, values, mask, running, a.size, geometry)
  end
  release(running, new_mask and mask, copied and values)
  return out
end

-- compact.flat_indices(a) -> int64 array of the 0-based flat (row-major) indices of the
-- nonzero elements of a (not empty): nonzero's, argwhere's and flatnonzero's first step.
function M.flat_indices(a)
  local mask, new_mask = truth(a)
  local flat = true_indices(mask)
  if new_mask then release(mask) end
  return flat
end

-- compact.unravel(flat, stride, length[, {out =}]) -> the 1-based indices along an axis of
-- length elements, stride elements apart in row-major order, of the 0-based flat indices.
local unravel
function M.unravel(...)
  unravel = unravel or require("gpu.fuse").fuse(function(f, stride, length)
    return f // stride % length + 1
  end, "nonzero_unravel")
  return unravel(...)
end

function M.nonzero(a)
  check_array(a, 1, "nonzero")
  if a.ndim == 0 then argerror(1, "nonzero", "a 0-d array has no axes to index (use a:ravel())") end
  local results = {}
  if a.size == 0 then
    for d = 1, a.ndim do results[d] = core.array_empty({0}, "int64") end
    return table.unpack(results, 1, a.ndim)
  end
  local flat = M.flat_indices(a)
  local shape, stride = a.shape, 1
  for d = a.ndim, 1, -1 do
    results[d] = flat.size > 0 and M.unravel(flat, stride, shape[d]) or core.array_empty({0}, "int64")
    stride = stride * shape[d]
  end
  release(flat)
  return table.unpack(results, 1, a.ndim)
end

function M.count_nonzero(a)
  check_array(a, 1, "count_nonzero")
  local mask, new_mask = truth(a)
  local n = a.size > 0 and mask:sum() or 0
  if new_mask then release(mask) end
  return n
end

local UNIQUE_OPTIONS = {return_index = true, return_inverse = true, return_counts = true}
local starts_of     -- sorted x (all but the first), the one before each -> whether x starts a run

function M.unique(a, opts)
  check_array(a, 1, "unique")
  opts = args.check_options(opts, 2, "unique", UNIQUE_OPTIONS)
  for _, name in ipairs{"return_index", "return_inverse", "return_counts"} do
    if opts[name] ~= nil and type(opts[name]) ~= "boolean" then
      argerror(2, "unique", ("option '%s' must be a boolean, got %s"):format(name, args.typename(opts[name])))
    end
  end
  local ga = require("gpu").gpuarray
  local n = a.size
  local results = {}
  if n == 0 then
    results[1] = core.array_empty({0}, a.dtype)
    if opts.return_index then results[#results + 1] = core.array_empty({0}, "int64") end
    if opts.return_inverse then results[#results + 1] = core.array_empty(a.shape, "int64") end
    if opts.return_counts then results[#results + 1] = core.array_empty({0}, "int64") end
    return table.unpack(results)
  end
  local flat, copied = contiguous(a)
  local line = flat:reshape(n)
  local order, sorted          -- with order (the stable argsort), each run's first is a first occurrence
  if opts.return_index or opts.return_inverse then
    order = ga.argsort(line)
    sorted = ga.take(line, order, {mode = "clip"})              -- in range: no check, no sync
  else
    sorted = ga.sort(line)
  end
  if copied then release(flat) end
  -- whether each element starts a run of equal ones (NaNs equal each other here)
  starts_of = starts_of or require("gpu.fuse").fuse(function(x, before)
    return ga.logical_not(ga.logical_or(x:eq(before), ga.logical_and(ga.isnan(x), ga.isnan(before))))
  end, "unique_starts")
  local first = ga.ones({1}, "bool")
  local starts_mask = first
  if n > 1 then
    local later = starts_of(sorted:slice(2, n), sorted:slice(1, n - 1))
    starts_mask = ga.concatenate({first, later})
    release(later, first)
  end
  local starts = true_indices(starts_mask)          -- 0-based
  local one_based = starts + 1
  results[1] = ga.take(sorted, one_based, {mode = "clip"})
  release(sorted)
  if opts.return_index then results[#results + 1] = ga.take(order, one_based, {mode = "clip"}) end
  release(one_based)
  if opts.return_inverse then
    local ids = ga.cumsum(starts_mask)             -- each sorted element's value, 1-based
    local inverse = core.array_empty({n}, "int64")
    ga.put(inverse, order, ids, {mode = "clip"})
    release(ids)
    results[#results + 1] = inverse:reshape(a.shape)
  end
  release(starts_mask, order)
  if opts.return_counts then
    local k = starts.size
    local ends = k > 1 and ga.concatenate({starts:slice(2, k), ga.full({1}, n, "int64")}) or ga.full({1}, n, "int64")
    results[#results + 1] = ends - starts
    release(ends)
  end
  release(starts)
  return table.unpack(results)
end

function M.install(gpu)
  local ga = gpu.gpuarray
  ga.extract, ga.nonzero, ga.count_nonzero, ga.unique = M.extract, M.nonzero, M.count_nonzero, M.unique
  core.types.GPUArray.__methods.nonzero = M.nonzero
end

return M
