-- gpu.take: gpuarray.take(a, indices[, {out = o, mode = m, stream = s}]), PyCUDA's and
-- NumPy's gather (kernels/take.cu).
--
-- The result has the indices' shape and a's dtype: element i is a[indices[i]], a read as a
-- flat row-major array and the indices 1-based, as a[i] is.  indices is an integer GPUArray
-- or a Lua table of integers.  mode says what an index outside 1..a.size does: "raise" (the
-- default) raises an error naming the first such index, which needs a synchronization of
-- the stream; "wrap" counts around cyclically (0 is the last element, a.size + 1 the first);
-- "clip" takes the nearer end.

local core = require "gpu.core"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local args = require "gpu.args"
local promote = require "gpu.promote"

local M = {}

local argerror, typename = args.argerror, args.typename
local BLOCK = 256
local OPTIONS = {out = true, mode = true, stream = true}
local MODES = {raise = 0, wrap = 1, clip = 2}
local check_array = reduction.check_array

local overlap = ew.overlap

local unsigned_text = require("gpu.format").unsigned_text

-- A contiguous array of v's elements (v itself, or a copy freed after the stream's work).
local function contiguous(v, stream)
  if v.is_contiguous then return v, false end
  return ew.launch(ew.copy_program(v.dtype), nil, stream, "take", v), true
end

function M.take(a, indices, opts)
  check_array(a, 1, "take")
  if type(indices) == "table" and getmetatable(indices) == nil then
    local ok, h = pcall(core.host.from_table, indices, "int64")
    if not ok then argerror(2, "take", "indices must be a GPUArray or a table of integers") end
    indices = require("gpu.gpuarray").to_gpu(h)
  end
  check_array(indices, 2, "take")
  local index_type = reduction.dtypes[indices.dtype]
  if index_type.kind ~= "i" and index_type.kind ~= "u" then
    argerror(2, "take", ("indices must be integers, got %s"):format(indices.dtype))
  end
  opts = args.check_options(opts, 3, "take", OPTIONS)
  local mode = MODES[opts.mode or "raise"]
  if mode == nil then
    argerror(3, "take", ("option 'mode' must be 'raise', 'wrap' or 'clip', got %s")
                        :format(type(opts.mode) == "string" and "'" .. opts.mode .. "'" or typename(opts.mode)))
  end
  if a.device ~= indices.device then
    argerror(2, "take", ("indices are on device %d, the array on device %d"):format(indices.device, a.device))
  end
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
  local source, source_copied = contiguous(a, stream)
  local where, where_copied = contiguous(indices, stream)
  -- gathered in place when it can be; through a temporary when out is strided, overlaps
  -- an input, or must stay as it was should an index be out of range (NumPy's "raise")
  local target = result
  if not result.is_contiguous or overlap(result, a) or overlap(result, indices) or
     (mode == MODES.raise and out ~= nil) then
    target = core.array_empty(result.shape, result.dtype)
  end
  local key = ("take|%d|%s|%d"):format(a.itemsize, indices.dtype, mode)
  local f = kernel_cache.get(key, function()
    return reduction.fill(core.kernel_sources["take.cu"], {
      MODE = tostring(mode), ITEM_BYTES = tostring(a.itemsize), INDEX_T = index_type.ctype,
    }), "gpu_take", nil, {no_extern_c = true, name = "take.cu"}
  end)
  local first_bad
  if mode == 0 then
    first_bad = core.mem_alloc(8)
    core.memset_d32_async(first_bad, 0xffffffff, 2, stream)
  end
  local grid = reduction.grid_stride_blocks(n, BLOCK)
  f(target, source, where, n, a.size, first_bad, {block = BLOCK, grid = grid, stream = stream})
  if source_copied then core.free_after(source, stream) end
  if first_bad then
    if stream then stream:synchronize() end
    local bad = core.from_device(first_bad, 1, "int64")[1]   -- the first bad position, 0-based
    first_bad:free()
    if bad >= 0 then
      local index = where[bad + 1]
      if where_copied then where:free() end
      if target ~= result then target:free() end
      index = indices.dtype == "uint64" and unsigned_text(index) or ("%d"):format(index)
      argerror(2, "take", ("index %s at position %d is out of range for %d elements")
                          :format(index, bad + 1, a.size))
    end
  end
  if where_copied then core.free_after(where, stream) end
  if target ~= result then
    ew.launch(ew.copy_program(result.dtype), result, stream, "take", target)
    core.free_after(target, stream)
  end
  return result
end

function M.install(gpu)
  gpu.gpuarray.take = M.take
end

return M
