-- gpu.scan: gpu.InclusiveScanKernel, gpu.ExclusiveScanKernel (PyCUDA's), gpu.cumsum and
-- gpu.cumprod, and gpuarray.nancumsum and nancumprod.
-- Kernels come from the template kernels/scan.cu; see there for the algorithm.

local core = require "gpu.core"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"

local M = {}

local BLOCK = 128   -- kernels/scan.cu's GPU_BLOCK
local dtypes = reduction.dtypes

-- float16 and bfloat16 scan in float (each result rounded to them); other dtypes in their own
-- C type.  Returns that type and its size in bytes: what the tiles and look-back state hold.
local function scan_type(dtype)
  local d = dtypes[dtype]
  if d.kind == "f" and d.size == 2 then return "float", 4 end
  return d.ctype, d.size
end

local function scan_size(dtype) return select(2, scan_type(dtype)) end

-- Elements per thread (kernels/scan.cu's GPU_ITEMS) by the scanned value's size, 32 unless
-- named: 16 for 16-byte values, whose tile of 32 a thread would not fit in a block's 48 KiB
-- of static shared memory.
M.items_by_size = {[16] = 16}
local function items(dtype) return M.items_by_size[scan_size(dtype)] or 32 end
local argerror, check_array, check_options = reduction.argerror, reduction.check_array,
                                             reduction.check_options

local typename, check_axis = require("gpu.args").typename, require("gpu.args").check_axis

-- Values of 4 bytes or fewer share a 64-bit status word with their tile's flag.
local function packed(dtype) return scan_size(dtype) <= 4 end

-- The module source for scanning input of dtype in_dtype into dtype with scan_expr.
function M.source(dtype, in_dtype, scan_expr, neutral, exclusive, strided)
  local convert, store = "(gpu_t)(x)", "v"
  if in_dtype == "float16" then convert = "(gpu_t)gpu_half_to_float(x)"
  elseif in_dtype == "bfloat16" then convert = "(gpu_t)gpu_bf16_to_float(x)" end
  if dtype == "float16" then store = "gpu_float_to_half(v)"
  elseif dtype == "bfloat16" then store = "gpu_float_to_bf16(v)" end
  return core.kernel_sources["common.cu"] .. "\n" .. reduction.fill(core.kernel_sources["scan.cu"], {
    T = scan_type(dtype), IN_T = dtypes[in_dtype].ctype, OUT_T = dtypes[dtype].ctype,
    SCAN_EXPR = scan_expr, CONVERT = convert, STORE = store, NEUTRAL = neutral or "0",
    EXCLUSIVE = exclusive and "1" or "0",
    STRIDED = strided and "1" or "0", PACKED = packed(dtype) and "1" or "0",
    ITEMS = tostring(items(dtype)),
  })
end

local module_options = {no_extern_c = true, name = "scan.cu"}

local function ceil_div(a, b) return (a + b - 1) // b end
local function round128(bytes) return ceil_div(bytes, 128) * 128 end

-- Bytes of look-back state for `tiles` tiles of dtype: gpu_state_at in kernels/scan.cu.
local function state_bytes(tiles, dtype)
  if packed(dtype) then return 128 + round128(8 * tiles) end
  return 128 + round128(4 * tiles) + 2 * round128(scan_size(dtype) * tiles)
end
M.state_bytes = state_bytes

-- Tile count for n elements of dtype (kernels/scan.cu's tiles; the grid, one block each).
function M.tiles(n, dtype) return ceil_div(n, BLOCK * items(dtype)) end

-- The layout argument of the kernels built for contiguous input, which index it directly.
local UNREAD_LAYOUT = reduction.pack_layout({1}, {0})

-- The zeroed look-back state of `tiles` tiles (nil: none) on stream, or nil.
local function look_back_state(tiles, dtype, stream)
  if not tiles then return nil end
  local bytes = state_bytes(tiles, dtype)
  local state = core.mem_alloc(bytes)
  core.memset_d32_async(state, 0, bytes // 4, stream)
  return state
end

-- Elements of a column a block of gpu_scan_column_chunks takes (kernels/scan.cu's GPU_CHUNK).
local function column_chunk(dtype) return scan_size(dtype) > 8 and 16 or 32 end

-- Kernel `name` of spec's scan, for strided or contiguous input.
local function scan_kernel(spec, strided, name)
  local key = ("scan|%s|%s|%s|%s|%s|%s|%d|%s"):format(spec.dtype, spec.in_dtype, spec.expr,
                                                      spec.neutral or "", spec.exclusive and "x" or "i",
                                                      strided and "s" or "c", items(spec.dtype), name)
  return kernel_cache.get(key, function()
    return M.source(spec.dtype, spec.in_dtype, spec.expr, spec.neutral, spec.exclusive, strided),
           name, nil, module_options
  end)
end

-- Scans input into out (contiguous, dtype spec.dtype, same size) on stream: as one row, or as
-- rows of row_len elements each scanned on its own (input's row-major order).
local function scan(spec, input, out, stream, row_len)
  local n = input.size
  if n == 0 then return out end
  row_len = row_len or n
  local strided = not input.is_contiguous
  local in_size, out_size = dtypes[spec.in_dtype].size, dtypes[spec.dtype].size
  local vec = not strided and input.ptr % 16 == 0 and out.ptr % 16 == 0
              and (row_len == n or row_len * in_size % 16 == 0 and row_len * out_size % 16 == 0)
  local f = scan_kernel(spec, strided, vec and "gpu_scan_vec" or "gpu_scan_any")
  local row_tiles = M.tiles(row_len, spec.dtype)
  local tiles = row_tiles * (n // row_len)
  if tiles > 0x7fffffff then argerror(1, spec.name, "too many elements to scan", 3) end
  local state = look_back_state(row_tiles > 1 and tiles, spec.dtype, stream)   -- rows of one tile: none
  local layout = strided and reduction.pack_layout(reduction.collapse(input.shape, input.strides))
                 or UNREAD_LAYOUT
  f:prepared_async_call(tiles, BLOCK, stream, input, layout, row_len, out, state)
  if state then core.free_after(state, stream) end   -- once the stream is done with it
  return out
end
M.scan = scan

-- How scan_along chooses its kernel: along the last axis (contiguous runs), rows of at most
-- short_row_len elements go to gpu_scan_short_rows and longer ones fill tiles; along another,
-- at least thread_columns columns go to gpu_scan_columns (a thread each), at least
-- min_columns to gpu_scan_column_chunks, fewer to tiles.
M.along_limits = {short_row_len = 2048, min_columns = 1024, thread_columns = 1 << 17}

local GROUP_ITEMS = 4   -- kernels/scan.cu's GPU_GROUP_ITEMS

-- Launches f over a's elements in a contiguous array (a, or a copy freed once the stream is
-- done with it): f(grid, BLOCK, stream, input, ...).
local function launch_contiguous(f, grid, stream, a, ...)
  local input = a.is_contiguous and a or a:copy(stream and {stream = stream})
  f:prepared_async_call(grid, BLOCK, stream, input, ...)
  if input ~= a then core.free_after(input, stream) end
end

-- Scans each run of `a` along axis (1-based, checked) on its own into a new array of a's shape.
local function scan_along(spec, a, axis, stream)
  local out = core.array_empty(a.shape, spec.dtype)
  if a.size == 0 then return out end
  local shape = a.shape
  local row_len, inner = shape[axis], 1
  for d = axis + 1, #shape do inner = inner * shape[d] end
  local runs = a.size // row_len   -- rows where inner is 1, else columns
  if inner == 1 and row_len <= M.along_limits.short_row_len then
    local group = 1   -- lanes a row: the fewest whose elements cover it, up to a warp
    while group < 32 and group * GROUP_ITEMS < row_len do group = group * 2 end
    launch_contiguous(scan_kernel(spec, false, "gpu_scan_short_rows"), ceil_div(runs * group, BLOCK),
                      stream, a, runs, row_len, group, out)
    return out
  end
  if inner > 1 and runs >= M.along_limits.thread_columns then
    launch_contiguous(scan_kernel(spec, false, "gpu_scan_columns"), ceil_div(runs, BLOCK),
                      stream, a, runs, row_len, inner, out)
    return out
  end
  if inner > 1 and runs >= M.along_limits.min_columns then
    local chunks = ceil_div(row_len, column_chunk(spec.dtype))
    local tiles = ceil_div(runs, BLOCK) * chunks
    if tiles > 0x7fffffff then argerror(1, spec.name, "too many elements to scan", 3) end
    local state = look_back_state(chunks > 1 and chunks * runs, spec.dtype, stream)
    launch_contiguous(scan_kernel(spec, false, "gpu_scan_column_chunks"), tiles, stream, a,
                      runs, row_len, inner, out, state)
    if state then core.free_after(state, stream) end
    return out
  end
  if inner == 1 then return scan(spec, a, out, stream, row_len) end
  -- Few columns and long ones: rows of tiles over the view with the axis last (its loads
  -- strided), into an array of that shape, then copied into out through the same view of it.
  local order = reduction.axis_last(#shape, axis)
  local view = a:transpose(order)
  local rows = scan(spec, view, core.array_empty(view.shape, spec.dtype), stream, row_len)
  ew.launch(ew.copy_program(spec.dtype), out:transpose(order), stream, spec.name, rows)
  core.free_after(rows, stream)
  return out
end
M.scan_along = scan_along

local ScanKernel = {}
ScanKernel.__index = ScanKernel
ScanKernel.__name = "gpu.ScanKernel"

local function new_kernel(fname, dtype, scan_expr, neutral, exclusive)
  if type(dtype) ~= "string" then argerror(1, fname, "dtype name expected, got " .. typename(dtype), 2) end
  local d = dtypes[dtype]
  if d == nil then argerror(1, fname, ("unknown dtype '%s'"):format(dtype), 2) end
  if type(scan_expr) ~= "string" then
    argerror(2, fname, "scan_expr must be a string, got " .. typename(scan_expr), 2)
  end
  if type(neutral) == "number" then
    neutral = math.type(neutral) == "integer" and ("%d"):format(neutral) or ("%.17g"):format(neutral)
  elseif neutral ~= nil and type(neutral) ~= "string" then
    argerror(3, fname, "neutral must be a C expression string or a number, got " .. typename(neutral), 2)
  end
  if exclusive and neutral == nil then argerror(3, fname, "an exclusive scan needs a neutral element", 2) end
  return setmetatable({dtype = dtype, in_dtype = dtype, expr = scan_expr, neutral = neutral,
                       exclusive = exclusive, name = "scan_kernel"}, ScanKernel)
end

-- gpu.InclusiveScanKernel(dtype, scan_expr[, neutral])
function M.InclusiveScanKernel(dtype, scan_expr, neutral)
  return new_kernel("InclusiveScanKernel", dtype, scan_expr, neutral, false)
end

-- gpu.ExclusiveScanKernel(dtype, scan_expr, neutral)
function M.ExclusiveScanKernel(dtype, scan_expr, neutral)
  return new_kernel("ExclusiveScanKernel", dtype, scan_expr, neutral, true)
end

local stream_options = {stream = true}

-- k(input[, output][, {stream = s}]) -> output (input itself when scanning in place)
function ScanKernel:__call(input, output, opts)
  if opts == nil and type(output) == "table" and getmetatable(output) == nil then
    output, opts = nil, output
  end
  opts = check_options(opts, output and 3 or 2, self.name, stream_options)
  check_array(input, 1, self.name)
  if input.dtype ~= self.dtype then
    argerror(1, self.name, ("array of %s expected, got %s"):format(self.dtype, input.dtype))
  end
  if output == nil then
    output = input
  else
    check_array(output, 2, self.name)
    if output.dtype ~= self.dtype then
      argerror(2, self.name, ("array of %s expected, got %s"):format(self.dtype, output.dtype))
    end
    if output.size ~= input.size then
      argerror(2, self.name, ("output has %d elements, input %d"):format(output.size, input.size))
    end
  end
  local stream, result, copy = opts.stream, output, nil
  if not output.is_contiguous then       -- scanned into a contiguous array, then copied there
    output = core.array_empty(output.shape, self.dtype)
  elseif output ~= input and ew.needs_copy(output, input) then
    -- tiles write their outputs while later tiles still read: an input that shares bytes
    -- with the output through another layout (a reversed view of it) is copied first
    input = input:copy(stream and {stream = stream})
    copy = input
  end
  scan(self, input, output, stream)
  if output ~= result then
    ew.launch(ew.copy_program(self.dtype), result, stream, self.name, output)
    core.free_after(output, stream)             -- once the stream is done with them
  end
  if copy then core.free_after(copy, stream) end
  return result
end

local cumulative_options = {stream = true, axis = true}

-- The running sums or products (expr) of a: of its elements in row-major order into a 1-d
-- array, or along axis into an array of a's shape.  NumPy's dtypes: int64 for bool and signed
-- integers, uint64 for unsigned ones, a float or complex array's own.
local function cumulative(fname, expr, a, opts)
  check_array(a, 1, fname)
  opts = check_options(opts, 2, fname, cumulative_options)
  local dtype = reduction.sum_dtype(a.dtype)
  local spec = {dtype = dtype, in_dtype = a.dtype, expr = expr, exclusive = false, name = fname}
  if opts.axis ~= nil then
    return scan_along(spec, a, check_axis(opts.axis, a.ndim, 2, fname), opts.stream)
  end
  return scan(spec, a, core.array_empty(a.size, dtype), opts.stream)
end

-- gpu.cumsum(a[, {axis = k, stream = s}]) -> a new array of a's running sums
function M.cumsum(a, opts) return cumulative("cumsum", "a + b", a, opts) end

-- gpu.cumprod(a[, {axis = k, stream = s}]) -> a new array of a's running products
function M.cumprod(a, opts) return cumulative("cumprod", "a * b", a, opts) end

-- gpuarray.nancumsum(a[, {axis = k, stream = s}]), nancumprod: NumPy's, cumsum and cumprod
-- with each NaN (a complex value with a NaN part) taken as 0 (1): a copy with them replaced,
-- then the scan.  Dtypes without NaN scan as they are.
local nan_replacing = {}      -- fname -> dtype -> program
for fname, neutral in pairs{nancumsum = 0, nancumprod = 1} do
  nan_replacing[fname] = {}
  local scan_of = fname == "nancumsum" and M.cumsum or M.cumprod
  M[fname] = function(a, opts)
    check_array(a, 1, fname)
    opts = check_options(opts, 2, fname, cumulative_options)
    if opts.axis ~= nil then check_axis(opts.axis, a.ndim, 2, fname) end   -- errors name fname
    local kind = dtypes[a.dtype].kind
    if kind ~= "f" and kind ~= "c" then return scan_of(a, opts) end
    local p = nan_replacing[fname][a.dtype]
    if p == nil then
      local value_type = kind == "f" and "float" or dtypes[a.dtype].ctype   -- a 16-bit float's value is a float
      if a.dtype == "float64" then value_type = "double" end
      p = ew.program{expr = ("x != x ? (%s)%d : x"):format(value_type, neutral), out = a.dtype,
                     name = fname .. "_replace_" .. a.dtype, operands = {{name = "x", dtype = a.dtype}}}
      nan_replacing[fname][a.dtype] = p
    end
    local replaced = ew.launch(p, nil, opts.stream, fname, a)
    local result = scan_of(replaced, opts)
    core.free_after(replaced, opts.stream)
    return result
  end
end

function M.install(gpu)
  gpu.InclusiveScanKernel = M.InclusiveScanKernel
  gpu.ExclusiveScanKernel = M.ExclusiveScanKernel
  gpu.cumsum = M.cumsum
  gpu.cumprod = M.cumprod
  local ga = gpu.gpuarray or {}
  gpu.gpuarray = ga
  ga.cumsum, ga.cumprod = M.cumsum, M.cumprod
  ga.nancumsum, ga.nancumprod = M.nancumsum, M.nancumprod
  local methods = core.types.GPUArray.__methods
  methods.cumsum, methods.cumprod = M.cumsum, M.cumprod
end

return M
