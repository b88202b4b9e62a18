-- gpu.scan: gpu.InclusiveScanKernel, gpu.ExclusiveScanKernel (PyCUDA's) and gpu.cumsum.
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

local typename = require("gpu.args").typename

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

-- Scans input into out (contiguous, dtype spec.dtype, same size) on stream.
local function scan(spec, input, out, stream)
  local n = input.size
  if n == 0 then return out end
  local strided = not input.is_contiguous
  local key = ("scan|%s|%s|%s|%s|%s|%s|%d"):format(spec.dtype, spec.in_dtype, spec.expr,
                                                   spec.neutral or "", spec.exclusive and "x" or "i",
                                                   strided and "s" or "c", items(spec.dtype))
  local vec = not strided and input.ptr % 16 == 0 and out.ptr % 16 == 0
  local name = vec and "gpu_scan_vec" or "gpu_scan_any"
  local f = kernel_cache.get(key .. "|" .. name, function()
    return M.source(spec.dtype, spec.in_dtype, spec.expr, spec.neutral, spec.exclusive, strided),
           name, nil, module_options
  end)
  local tiles = M.tiles(n, spec.dtype)
  if tiles > 0x7fffffff then argerror(1, spec.name, "too many elements to scan", 3) end
  local state
  if tiles > 1 then   -- one tile needs no look-back, so no state
    local bytes = state_bytes(tiles, spec.dtype)
    state = core.mem_alloc(bytes)
    core.memset_d32_async(state, 0, bytes // 4, stream)
  end
  local layout = strided and reduction.pack_layout(reduction.collapse(input.shape, input.strides))
                 or UNREAD_LAYOUT
  f:prepared_async_call(tiles, BLOCK, stream, input, layout, n, out, state)
  if state then core.free_after(state, stream) end   -- once the stream is done with it
  return out
end
M.scan = scan

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

-- gpu.cumsum(a[, {stream = s}]) -> a new 1-d array of the running sums of a's elements (in
-- row-major order), of NumPy's dtype: int64 for bool and signed integers, uint64 for
-- unsigned ones, the float dtype for floats.
function M.cumsum(a, opts)
  check_array(a, 1, "cumsum")
  opts = check_options(opts, 2, "cumsum", stream_options)
  local dtype = reduction.sum_dtype(a.dtype)
  local out = core.array_empty(a.size, dtype)
  return scan({dtype = dtype, in_dtype = a.dtype, expr = "a + b", exclusive = false,
               name = "cumsum"}, a, out, opts.stream)
end

function M.install(gpu)
  gpu.InclusiveScanKernel = M.InclusiveScanKernel
  gpu.ExclusiveScanKernel = M.ExclusiveScanKernel
  gpu.cumsum = M.cumsum
  local ga = gpu.gpuarray or {}
  gpu.gpuarray = ga
  ga.cumsum = M.cumsum
  core.types.GPUArray.__methods.cumsum = M.cumsum
end

return M
