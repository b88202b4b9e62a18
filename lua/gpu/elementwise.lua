-- gpu.elementwise: the one generator of elementwise kernels.  Array operators, comparisons,
-- cumath, where/maximum/minimum/abs, astype, fill, copies of strided views, gpu.fuse and
-- ElementwiseKernel all go through here.
--
--   local p = ew.program{expr = "x * s + y", out = "float32", name = "axpy",
--                        operands = {{name = "x", dtype = "float32"},
--                                    {name = "s", dtype = "float64", scalar = true},
--                                    {name = "y", dtype = "float32"}},
--                        preamble = "..."}                -- optional; programs are cached by content
--   local out = ew.launch(p, out_or_nil, stream_or_nil, fname, x, 2.5, y)
--   ew.source(p, layout) -> CUDA source ("c" contiguous, "s1".."sN" strided with N dims)
--
-- Inside expr each array operand is a value of its dtype (read at the current element) and
-- each scalar operand a kernel parameter; lg_i is the flat (0-based, row-major) index of the
-- output element.  Names starting with lg_ are reserved for generated identifiers.
--
-- Layouts: when the output and every array operand are C-contiguous with the output's shape,
-- the kernel indexes them by lg_i directly ("c").  Otherwise ("sN") each operand is read
-- through byte strides, broadcast operands with stride 0, after merging the dimensions that
-- are contiguous in every operand (so most views need one or two).  Where an operand's
-- elements are adjacent along another dimension than the output's (a transposed view), the
-- kernel ("tN_B_M") goes through 32 x 32 tiles of those two dimensions instead, staging such
-- operands in shared memory so that both their reads and the output's writes coalesce.
-- Indices are 64-bit (grid-stride loops), so arrays may exceed 2^31 elements.  Each
-- (program, layout) is compiled once per device by gpu.kernel_cache.

local core = require "gpu.core"
local promote = require "gpu.promote"
local kernel_cache = require "gpu.kernel_cache"

local M = {}

local GPUArray = core.types.GPUArray
local BLOCK, MAX_GRID = 256, 65535
-- Contiguous kernels load UNROLL elements of each operand before they compute any (and get a
-- thread per UNROLL elements): with one load in flight per thread, 2*a on 2^28 float32
-- reached 2480 GB/s of a 2960 GB/s copy.
local UNROLL = 4

local letters = {
  bool = "?", int8 = "b", uint8 = "B", int16 = "h", uint16 = "H", int32 = "i", uint32 = "I",
  int64 = "q", uint64 = "Q", float16 = "e", bfloat16 = "E", float32 = "f", float64 = "d",
  complex64 = "F", complex128 = "D",
}
M.letters = letters

local argerror, raise = require("gpu.args").argerror, require("gpu.args").raise
local is_scalar = require("gpu.args").is_scalar
local scalar_number = require("gpu.args").scalar_number

function M.is_array(v) return getmetatable(v) == GPUArray end

local function check_identifier(name, what)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error(("ew.program: %s must be a C identifier, got %s"):format(what, tostring(name)), 3)
  end
  if name:match("^lg_") then
    error(("ew.program: %s '%s' starts with 'lg_', which is reserved for generated names")
          :format(what, name), 3)
  end
end

local function check_dtype(dtype, what)
  if letters[dtype] == nil then
    if promote.info[dtype] then
      error(("ew.program: %s dtype %s is not supported in kernels yet"):format(what, dtype), 3)
    end
    error(("ew.program: unknown dtype '%s' for %s"):format(tostring(dtype), what), 3)
  end
end

local programs = {}   -- content key -> program

function M.program(spec)
  if type(spec) ~= "table" then error("ew.program: table expected", 2) end
  for k in pairs(spec) do
    if k ~= "expr" and k ~= "out" and k ~= "name" and k ~= "operands" and k ~= "preamble" then
      error(("ew.program: unknown field '%s'"):format(tostring(k)), 2)
    end
  end
  if type(spec.expr) ~= "string" then error("ew.program: expr must be a string", 2) end
  check_identifier(spec.name, "name")
  check_dtype(spec.out, "the output")
  if type(spec.operands) ~= "table" then error("ew.program: operands must be a list", 2) end
  local parts, seen, operands = {spec.name, spec.out, spec.expr, spec.preamble or ""}, {}, {}
  for i, op in ipairs(spec.operands) do
    check_identifier(op.name, "operand name")
    check_dtype(op.dtype, "operand '" .. op.name .. "'")
    if seen[op.name] then error(("ew.program: operand '%s' appears twice"):format(op.name), 2) end
    seen[op.name] = true
    operands[i] = {name = op.name, dtype = op.dtype, scalar = op.scalar and true or false}
    parts[#parts + 1] = op.name .. ":" .. op.dtype .. (op.scalar and ":s" or ":a")
  end
  if spec.preamble ~= nil and type(spec.preamble) ~= "string" then
    error("ew.program: preamble must be a string", 2)
  end
  local key = table.concat(parts, "\0")
  local p = programs[key]
  if p == nil then
    p = {expr = spec.expr, out = spec.out, name = spec.name, operands = operands,
         preamble = spec.preamble or "", key = key, kernel_keys = {}}
    programs[key] = p
  end
  return p
end

-- ew.keyed_programs() -> program(key, spec): ew.program(spec) made once for each of a module's
-- own keys (ew.program finds a made program by its content, but building that key costs more
-- than a launch).
function M.keyed_programs()
  local programs = {}
  return function(key, spec)
    local p = programs[key]
    if p == nil then
      p = M.program(spec)
      programs[key] = p
    end
    return p
  end
end

local function ctype(dtype) return core.dtype(dtype).ctype end

-- float16 and bfloat16 are stored as their 16 bits (no CUDA header has to be found at run
-- time) and computed in float: loads widen them, stores round them, once from whatever type
-- the expression has (kernels/common.cu).
local sixteen = {float16 = {"gpu_half_to_float", "gpu_store_half"},
                 bfloat16 = {"gpu_bf16_to_float", "gpu_store_bf16"}}
local function stored_ctype(dtype) return sixteen[dtype] and "unsigned short" or ctype(dtype) end
local function value_ctype(dtype) return sixteen[dtype] and "float" or ctype(dtype) end
local function widen(dtype, e)
  return sixteen[dtype] and ("%s(%s)"):format(sixteen[dtype][1], e) or e
end
local function narrow(dtype, e)
  if sixteen[dtype] then return ("%s(%s)"):format(sixteen[dtype][2], e) end
  return ("(%s)(%s)"):format(ctype(dtype), e)
end

local HELPERS = core.kernel_sources["common.cu"] .. core.kernel_sources["elementwise.cu"]

-- kernels/special.cu (digamma, gcd, logaddexp, ...) goes into a program's source only where its
-- expression calls one of its functions: few do, and NVRTC would parse it for every kernel.
local SPECIAL = core.kernel_sources["special.cu"]
local special_names = {}
for name in SPECIAL:gmatch("lg_[%w_]+") do
  if not HELPERS:find(name, 1, true) then special_names[name] = true end
end

local function special_for(p)
  for _, text in ipairs{p.expr, p.preamble} do     -- gpu.fuse's function is in the preamble
    for name in text:gmatch("lg_[%w_]+") do
      if special_names[name] then return SPECIAL end
    end
  end
  return ""
end

local LOOP = "  for (long long lg_i = (long long)blockIdx.x * blockDim.x + threadIdx.x; " ..
             "lg_i < lg_n;\n       lg_i += (long long)blockDim.x * gridDim.x) {\n"

-- The parameter letters of a layout (for prepare()) and the kernel's name.
local function kernel_name(p, layout) return p.name .. "_" .. layout end

-- A layout's dimensions, and for a tiled one ("tN_B_M": N dimensions, tiles in dimensions B
-- (0-based) and N - 1, M a 0 or 1 for each array operand, 1 for those staged in tiles) B and
-- the set of staged operands (1-based among the arrays).
local function layout_ndim(layout)
  if layout == "c" then return 0 end
  local nd = tonumber(layout:match("^s(%d+)$"))
  if nd ~= nil and nd >= 1 then return nd end
  local n, b, mask = layout:match("^t(%d+)_(%d+)_([01]+)$")
  nd, b = tonumber(n), tonumber(b)
  if nd == nil or nd < 2 or b >= nd - 1 then
    error(("unknown layout '%s' (\"c\", \"s1\".. \"sN\" or \"tN_B_M\")"):format(tostring(layout)), 3)
  end
  local staged = {}
  for k = 1, #mask do staged[k] = mask:sub(k, k) == "1" end
  return nd, b, staged
end

local function param_letters(p, layout)
  local nd = layout_ndim(layout)
  local t = {"P"}
  local arrays = 0
  for _, op in ipairs(p.operands) do
    if op.scalar then t[#t + 1] = letters[op.dtype] else t[#t + 1] = "P"; arrays = arrays + 1 end
  end
  t[#t + 1] = "q"
  t[#t + 1] = ("q"):rep(nd * (2 + arrays))
  return table.concat(t)
end

local TILE, TILE_ROWS = 32, 8      -- tiled kernels: 32 x 32 tiles, blocks of 32 x 8 threads

-- Tiled kernels: the output's elements in 32 x 32 tiles of dimensions b and a = nd - 1 (where
-- the output's are adjacent), a block a tile at a time.  Staged operands (adjacent along b)
-- are first read into shared memory with threadIdx.x along b, then every element is computed
-- and stored with threadIdx.x along a: both coalesce.  The other dimensions come from the
-- tile's number.
local function tiled_body(p, arrays, nd, b, staged)
  local a = nd - 1
  local t = {}
  local any_staged = false
  for k in ipairs(arrays) do any_staged = any_staged or staged[k] end
  for k, op in ipairs(arrays) do
    if staged[k] then
      t[#t + 1] = ("  __shared__ %s lg_tile_%s[%d][%d];\n"):format(stored_ctype(op.dtype), op.name,
                                                                   TILE, TILE + 1)
    end
  end
  t[#t + 1] = ("  const long long lg_na = lg_d%d, lg_nb = lg_d%d;\n"):format(a, b)
  t[#t + 1] = ("  const long long lg_ta = (lg_na + %d) / %d, lg_tb = (lg_nb + %d) / %d;\n")
              :format(TILE - 1, TILE, TILE - 1, TILE)
  t[#t + 1] = "  const long long lg_tiles = lg_n / (lg_na * lg_nb) * lg_ta * lg_tb;\n"
  t[#t + 1] = "  for (long long lg_t = blockIdx.x; lg_t < lg_tiles; lg_t += gridDim.x) {\n"
  t[#t + 1] = ("    long long lg_r = lg_t;\n    const long long lg_a0 = lg_r %% lg_ta * %d;"
               .. " lg_r /= lg_ta;\n    const long long lg_b0 = lg_r %% lg_tb * %d; lg_r /= lg_tb;\n")
              :format(TILE, TILE)
  local offsets = {"lg_oo = 0"}
  for _, op in ipairs(arrays) do offsets[#offsets + 1] = "lg_o_" .. op.name .. " = 0" end
  t[#t + 1] = "    long long lg_c, " .. table.concat(offsets, ", ") .. ";\n"
  for d = nd - 2, 0, -1 do
    if d ~= b then
      local line = ("    lg_c = lg_r %% lg_d%d; lg_r /= lg_d%d; lg_oo += lg_c * lg_so%d;"):format(d, d, d)
      for _, op in ipairs(arrays) do
        line = line .. (" lg_o_%s += lg_c * lg_s_%s_%d;"):format(op.name, op.name, d)
      end
      t[#t + 1] = line .. "\n"
    end
  end
  local function at(op, ea, eb)
    return ("*(const %s *)(lg_p_%s + lg_o_%s + (%s) * lg_s_%s_%d + (%s) * lg_s_%s_%d)")
           :format(stored_ctype(op.dtype), op.name, op.name, ea, op.name, a, eb, op.name, b)
  end
  local loop = ("    for (int lg_j = threadIdx.y; lg_j < %d; lg_j += %d) {\n"):format(TILE, TILE_ROWS)
  if any_staged then
    t[#t + 1] = loop
    t[#t + 1] = "      const long long lg_ea = lg_a0 + lg_j, lg_eb = lg_b0 + threadIdx.x;\n"
    t[#t + 1] = "      if (lg_ea < lg_na && lg_eb < lg_nb) {\n"
    for k, op in ipairs(arrays) do
      if staged[k] then
        t[#t + 1] = ("        lg_tile_%s[lg_j][threadIdx.x] = %s;\n"):format(op.name, at(op, "lg_ea", "lg_eb"))
      end
    end
    t[#t + 1] = "      }\n    }\n    __syncthreads();\n"
  end
  t[#t + 1] = loop
  t[#t + 1] = "      const long long lg_ea = lg_a0 + threadIdx.x, lg_eb = lg_b0 + lg_j;\n"
  t[#t + 1] = "      if (lg_ea < lg_na && lg_eb < lg_nb) {\n"
  for k, op in ipairs(arrays) do
    local value = staged[k] and ("lg_tile_%s[threadIdx.x][lg_j]"):format(op.name) or at(op, "lg_ea", "lg_eb")
    t[#t + 1] = ("        const %s %s = %s;\n"):format(value_ctype(op.dtype), op.name, widen(op.dtype, value))
  end
  t[#t + 1] = ("        *(%s *)(lg_out + lg_oo + lg_ea * lg_so%d + lg_eb * lg_so%d) = %s;\n")
              :format(stored_ctype(p.out), a, b, narrow(p.out, p.expr))
  t[#t + 1] = "      }\n    }\n"
  if any_staged then t[#t + 1] = "    __syncthreads();\n" end
  t[#t + 1] = "  }\n"
  return table.concat(t)
end

-- Contiguous kernels: UNROLL elements a thread a round, one grid stride apart, all loaded
-- before any is computed (loads in flight together).  The last round of a thread is the same
-- with each element checked against n: a small array (one block, a round or less) then costs
-- one trip to memory, not UNROLL in a row.
local function contiguous_body(p, arrays)
  local function round(indent, guarded)
    local t = {}
    local function line(text) t[#t + 1] = indent .. text .. "\n" end
    for _, op in ipairs(arrays) do
      line(("%s lg_v_%s[%d];"):format(stored_ctype(op.dtype), op.name, UNROLL))
    end
    line(("#pragma unroll\n%sfor (int lg_u = 0; lg_u < %d; lg_u++) {"):format(indent, UNROLL))
    line("  const long long lg_i = lg_i0 + lg_u * lg_stride;")
    if guarded then line("  if (lg_i >= lg_n) break;") end
    for _, op in ipairs(arrays) do
      line(("  lg_v_%s[lg_u] = lg_p_%s[lg_i];"):format(op.name, op.name))
    end
    line("}")
    line(("#pragma unroll\n%sfor (int lg_u = 0; lg_u < %d; lg_u++) {"):format(indent, UNROLL))
    line("  const long long lg_i = lg_i0 + lg_u * lg_stride;")
    if guarded then line("  if (lg_i >= lg_n) break;") end
    for _, op in ipairs(arrays) do
      line(("  const %s %s = %s;"):format(value_ctype(op.dtype), op.name,
                                         widen(op.dtype, ("lg_v_%s[lg_u]"):format(op.name))))
    end
    line(("  lg_out[lg_i] = %s;"):format(narrow(p.out, p.expr)))
    line("}")
    return table.concat(t)
  end
  return table.concat{
    "  const long long lg_stride = (long long)blockDim.x * gridDim.x;\n",
    "  long long lg_i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
    ("  for (; lg_i0 + %d * lg_stride < lg_n; lg_i0 += %d * lg_stride) {\n"):format(UNROLL - 1, UNROLL),
    round("    ", false),
    "  }\n",
    "  if (lg_i0 < lg_n) {   // the last round: under UNROLL elements left, each checked\n",
    round("    ", true),
    "  }\n",
  }
end

-- Strided kernels: each operand read through its byte strides, in a grid-stride loop.
local function strided_body(p, arrays, nd)
  local t = {LOOP}
  -- the flat index split into coordinates, innermost first, each adding its stride
  local offsets = {"lg_oo = 0"}
  for _, op in ipairs(arrays) do offsets[#offsets + 1] = "lg_o_" .. op.name .. " = 0" end
  t[#t + 1] = "    long long lg_r = lg_i, lg_c, " .. table.concat(offsets, ", ") .. ";\n"
  for d = nd - 1, 0, -1 do
    local line = d > 0 and ("    lg_c = lg_r %% lg_d%d; lg_r /= lg_d%d;"):format(d, d)
                       or "    lg_c = lg_r;"
    line = line .. (" lg_oo += lg_c * lg_so%d;"):format(d)
    for _, op in ipairs(arrays) do
      line = line .. (" lg_o_%s += lg_c * lg_s_%s_%d;"):format(op.name, op.name, d)
    end
    t[#t + 1] = line .. "\n"
  end
  for _, op in ipairs(arrays) do
    local at = ("*(const %s *)(lg_p_%s + lg_o_%s)"):format(stored_ctype(op.dtype), op.name,
                                                             op.name)
    t[#t + 1] = ("    const %s %s = %s;\n"):format(value_ctype(op.dtype), op.name, widen(op.dtype, at))
  end
  t[#t + 1] = ("    *(%s *)(lg_out + lg_oo) = %s;\n  }\n"):format(stored_ctype(p.out),
                                                              narrow(p.out, p.expr))
  return table.concat(t)
end

function M.source(p, layout)
  local nd, b, staged = layout_ndim(layout)
  local params, prelude, arrays = {}, {}, {}
  params[1] = nd == 0 and stored_ctype(p.out) .. " *lg_out" or "char *lg_out"
  for _, op in ipairs(p.operands) do
    if op.scalar and sixteen[op.dtype] then   -- arrives as its bits, widened once
      params[#params + 1] = "unsigned short lg_b_" .. op.name
      prelude[#prelude + 1] = ("  const float %s = %s;\n"):format(op.name,
                                                                 widen(op.dtype, "lg_b_" .. op.name))
    elseif op.scalar then
      params[#params + 1] = ctype(op.dtype) .. " " .. op.name
    else
      params[#params + 1] = nd == 0 and ("const %s *lg_p_%s"):format(stored_ctype(op.dtype), op.name)
                                    or "const char *lg_p_" .. op.name
      arrays[#arrays + 1] = op
    end
  end
  params[#params + 1] = "long long lg_n"
  for d = 0, nd - 1 do params[#params + 1] = "long long lg_d" .. d end
  for d = 0, nd - 1 do params[#params + 1] = "long long lg_so" .. d end
  for _, op in ipairs(arrays) do
    for d = 0, nd - 1 do params[#params + 1] = ("long long lg_s_%s_%d"):format(op.name, d) end
  end
  return table.concat{
    HELPERS, "\n", special_for(p), p.preamble, "\n",
    'extern "C" __global__ void ', kernel_name(p, layout), "(", table.concat(params, ", "), ") {\n",
    table.concat(prelude), nd == 0 and contiguous_body(p, arrays)
                           or staged and tiled_body(p, arrays, nd, b, staged)
                           or strided_body(p, arrays, nd),
    "}\n",
  }
end

-- One translation unit holding the kernels of many (program, layout) pairs (the helpers
-- once): lets CPU specs compile every variant class with a single NVRTC call.
function M.combined_source(list)
  local parts, special = {HELPERS, "\n", ""}, false
  for _, item in ipairs(list) do
    local own = M.source(item[1], item[2]):sub(#HELPERS + 2)   -- past the helpers' newline
    if own:sub(1, #SPECIAL) == SPECIAL and #SPECIAL > 0 then
      own, special = own:sub(#SPECIAL + 1), true
    end
    parts[#parts + 1] = own
  end
  if special then parts[3] = SPECIAL end
  return table.concat(parts)
end

-- Grid for n elements: one thread per element up to MAX_GRID blocks, then grid-stride.
local function grid_for(n)
  local blocks = (n + BLOCK - 1) // BLOCK
  if blocks > MAX_GRID then blocks = MAX_GRID end
  if blocks < 1 then blocks = 1 end
  return blocks
end
M.grid_for = grid_for
M.BLOCK, M.MAX_GRID, M.UNROLL = BLOCK, MAX_GRID, UNROLL

-- Merges dimensions that are contiguous for every operand and drops those of length 1.
-- shape: the output's; strides: list of stride lists (output first).  Returns both, >= 1 dim.
local function collapse(shape, strides)
  local s, st = {}, {}
  for k = 1, #strides do st[k] = {} end
  for d = 1, #shape do
    if shape[d] ~= 1 then
      local last = #s
      local merge = last > 0
      if merge then
        for k = 1, #strides do
          if st[k][last] ~= strides[k][d] * shape[d] then merge = false break end
        end
      end
      if merge then
        s[last] = s[last] * shape[d]
        for k = 1, #strides do st[k][last] = strides[k][d] end
      else
        s[last + 1] = shape[d]
        for k = 1, #strides do st[k][last + 1] = strides[k][d] end
      end
    end
  end
  if #s == 0 then
    s[1] = 1
    for k = 1, #strides do st[k][1] = 0 end
  end
  return s, st
end
M.collapse = collapse

-- Checks a scalar value for operand dtype; returns the value to pass.  A typed scalar
-- (gpu.float32(x)) of that dtype passes as it is, its bytes; of another, as its value.
local function scalar_value(v, dtype, n, fname)
  if is_scalar(v) then
    if v.dtype == dtype then return v end
    v = scalar_number(v)
  end
  local bad = promote.scalar_problem(v, dtype)
  if bad then argerror(n, fname, bad, 2) end
  local kind = promote.kind(dtype)
  if kind == "i" or kind == "u" then return math.tointeger(v) end
  return v
end

local function check_array(v, n, fname, want_dtype)
  if not M.is_array(v) then
    argerror(n, fname, ("GPUArray expected, got %s"):format(
      type(v) == "userdata" and ((getmetatable(v) or {}).__name or "userdata") or type(v)), 3)
  end
  if v.freed then argerror(n, fname, "array has been freed", 3) end
  if want_dtype and v.dtype ~= want_dtype then
    argerror(n, fname, ("expected a %s array, got %s"):format(want_dtype, v.dtype), 3)
  end
end
M.check_array = check_array

-- In-place overlap ----------------------------------------------------------------------------
-- Each thread reads its operands' elements and then writes its output element, so an operand
-- that shares bytes with `out` is safe only when it is read through out's own layout (element
-- k of both at the same address).  Otherwise (a:iadd(a:transpose()), a reversed view, a
-- broadcast row of out) a thread could read what another has already written; NumPy copies
-- such an operand first, and so does launch.  The test is on byte ranges (any two arrays
-- with .ptr .shape .strides .itemsize), conservative for interleaved views: a spare copy,
-- never a wrong result.

-- The first byte an array touches and one past its last; nil when it has no elements.
local function byte_extent(a)
  local lo, hi = a.ptr, a.ptr + a.itemsize
  local shape, strides = a.shape, a.strides
  for d = 1, #shape do
    if shape[d] == 0 then return nil end
    local reach = (shape[d] - 1) * strides[d]
    if reach < 0 then lo = lo + reach else hi = hi + reach end
  end
  return lo, hi
end
M.byte_extent = byte_extent

-- Whether arrays x and y share any byte (a kernel must not write where it still reads).
function M.overlap(x, y)
  local xlo, xhi = byte_extent(x)
  local ylo, yhi = byte_extent(y)
  return xlo ~= nil and ylo ~= nil and xlo < yhi and ylo < xhi
end

-- needs_copy(out, v) -> true when operand v (broadcast to out's shape) must be copied before
-- an elementwise kernel writes out.
function M.needs_copy(out, v)
  local olo, ohi = byte_extent(out)
  local vlo, vhi = byte_extent(v)
  if olo == nil or vlo == nil or vhi <= olo or ohi <= vlo then return false end
  if v.ptr ~= out.ptr or v.itemsize ~= out.itemsize then return true end
  local oshape, ostrides = out.shape, out.strides
  local vstrides = promote.broadcast_strides(v.shape, v.strides, oshape)
  if vstrides == nil then return true end
  for d = 1, #oshape do
    if oshape[d] ~= 1 and vstrides[d] ~= ostrides[d] then return true end
  end
  return false
end

-- The program that copies an array of dtype into an array of any layout, made once a dtype
-- (M.program would find it by content, but building its key costs more than a launch).
local copy_programs = {}
local function copy_program(dtype)
  local p = copy_programs[dtype]
  if p == nil then
    p = M.program{expr = "x", out = dtype, name = "copy_" .. dtype,
                  operands = {{name = "x", dtype = dtype}}}
    copy_programs[dtype] = p
  end
  return p
end
M.copy_program = copy_program

-- The prepared Function of (p, layout) on the current device, compiled once.
function M.kernel(p, layout)
  -- each layout's key made once: a long string built per call is hashed whole each time
  local key = p.kernel_keys[layout]
  if key == nil then
    key = "ew\0" .. p.key .. "\0" .. layout
    p.kernel_keys[layout] = key
  end
  return kernel_cache.get(key, function()
    return M.source(p, layout), kernel_name(p, layout), param_letters(p, layout),
           {no_extern_c = true, name = kernel_name(p, layout) .. ".cu"}
  end)
end

-- Whether a program can take a tiled layout: not where its expression reads its element's
-- index (a tile's threads go through its elements in another order).
local function takes_tiles(p) return not p.expr:find("lg_i", 1, true) end

-- The C path of launch (core.program_launcher): arrays of any layout and numbers, into a new
-- array or a contiguous out, on the default stream or a stream not capturing a graph, in the
-- contiguous layout for C-contiguous operands of one shape, else in the tiled one where
-- tiled_layout would take it, else the strided one; it returns false for anything else, which
-- the Lua code below takes, with every check.
local function plain_launcher(p)
  local operands = {}
  for k, op in ipairs(p.operands) do operands[k] = {dtype = op.dtype, pointer = not op.scalar} end
  p.launcher = core.program_launcher(operands, function(layout) return M.kernel(p, layout) end,
                                     p.out, BLOCK, MAX_GRID, UNROLL, takes_tiles(p) and TILE or 0,
                                     TILE_ROWS)
  return p.launcher
end

-- The C path of p's launches: launcher(out, stream, values...) -> out, or false (above).
function M.launcher(p) return p.launcher or plain_launcher(p) end

-- launch(p, out, stream, fname, values...) -> out (allocated when nil)
function M.launch(p, out, stream, fname, ...)
  local result = M.launcher(p)(out, stream, ...)
  if result then return result end
  local nvalues = select("#", ...)
  local values = {...}
  fname = fname or p.name
  if nvalues ~= #p.operands then
    error(("'%s' takes %d operand%s, got %d"):format(fname, #p.operands,
          #p.operands == 1 and "" or "s", nvalues), 2)
  end
  local shape, device, first_array
  local args = {}
  for k, op in ipairs(p.operands) do
    local v = values[k]
    if op.scalar then
      if M.is_array(v) then argerror(k, fname, "expected a number, got a GPUArray") end
      args[k] = scalar_value(v, op.dtype, k, fname)
    else
      check_array(v, k, fname, op.dtype)
      local dev = v.device
      if device == nil then device, first_array = dev, k
      elseif dev ~= device then
        argerror(k, fname, ("array is on device %d, argument #%d on device %d")
                           :format(dev, first_array, device))
      end
      if shape == nil then shape = v.shape
      else
        local s, msg = promote.broadcast_shapes({shape, v.shape})
        if s == nil then argerror(k, fname, msg) end
        shape = s
      end
      args[k] = v
    end
  end
  local outn = nvalues + 1
  local given_out = out ~= nil
  if out == nil then
    out = core.array_empty(shape or {}, p.out)
  else
    check_array(out, outn, fname)
    if out.dtype ~= p.out then
      argerror(outn, fname, ("out array has dtype %s, the result %s"):format(out.dtype, p.out))
    end
    if device ~= nil and out.device ~= device then
      argerror(outn, fname, ("out array is on device %d, the operands on device %d")
                            :format(out.device, device))
    end
    local oshape = out.shape
    local s = shape and promote.broadcast_shapes({shape, oshape})
    if shape and (s == nil or not promote.same_shape(s, oshape)) then
      argerror(outn, fname, ("out array has shape %s, the result %s")
                            :format(promote.shape_text(oshape), promote.shape_text(shape)))
    end
  end
  local n = out.size
  if n == 0 then return out end
  if given_out then
    for k, op in ipairs(p.operands) do
      if not op.scalar and M.needs_copy(out, args[k]) then
        args[k] = M.launch(copy_program(op.dtype), nil, stream, fname, args[k])
      end
    end
  end
  local oshape = out.shape
  local contiguous = out.is_contiguous
  for k, op in ipairs(p.operands) do
    if contiguous and not op.scalar then
      local v = args[k]
      contiguous = v.is_contiguous and promote.same_shape(v.shape, oshape)
    end
  end
  local call = {out}
  for k = 1, #p.operands do call[k + 1] = args[k] end
  call[#call + 1] = n
  local layout, tiles
  if contiguous then
    layout = "c"
  else
    local strides = {out.strides}
    for k, op in ipairs(p.operands) do
      if not op.scalar then
        strides[#strides + 1] = promote.broadcast_strides(args[k].shape, args[k].strides, oshape)
      end
    end
    local s, st = collapse(oshape, strides)
    local b
    layout, b = M.tiled_layout(p, s, st, out.itemsize, args)
    if layout then
      local na, nb = s[#s], s[b]
      tiles = n // (na * nb) * ((na + TILE - 1) // TILE) * ((nb + TILE - 1) // TILE)
    else
      layout = "s" .. #s
    end
    for d = 1, #s do call[#call + 1] = s[d] end
    for k = 1, #st do
      for d = 1, #s do call[#call + 1] = st[k][d] end
    end
  end
  local f = M.kernel(p, layout)
  if tiles then
    f:prepared_async_call({math.min(tiles, MAX_GRID)}, {TILE, TILE_ROWS}, stream,
                          table.unpack(call, 1, #call))
    return out
  end
  local threads = contiguous and (n + UNROLL - 1) // UNROLL or n
  f:prepared_async_call({grid_for(threads)}, {BLOCK}, stream, table.unpack(call, 1, #call))
  return out
end

-- The tiled layout for collapsed shape s and strides st (the output's first, then each array
-- operand's) and its dimension b (1-based) when it pays: the output adjacent along its last
-- dimension, some operand adjacent along another (b), both at least a tile long; nil
-- otherwise.
function M.tiled_layout(p, s, st, out_size, args)
  local nd = #s
  if nd < 2 or s[nd] < TILE or math.abs(st[1][nd]) ~= out_size or not takes_tiles(p) then
    return nil
  end
  local b, mask, k = nil, {}, 1
  for i, op in ipairs(p.operands) do
    if not op.scalar then
      k = k + 1
      local size, strides = args[i].itemsize, st[k]
      local adjacent
      if math.abs(strides[nd]) ~= size then
        for d = 1, nd - 1 do
          if math.abs(strides[d]) == size and (b == nil or b == d) and s[d] >= TILE then adjacent = d end
        end
      end
      b = b or adjacent
      mask[#mask + 1] = adjacent and "1" or "0"
    end
  end
  if b == nil then return nil end
  return ("t%d_%d_%s"):format(nd, b - 1, table.concat(mask)), b
end

-- ElementwiseKernel ---------------------------------------------------------------------------

-- C type names of kernel arguments -> dtypes (the words after dropping qualifiers).
local arg_types = {
  ["bool"] = "bool", ["char"] = "int8", ["signed char"] = "int8", ["unsigned char"] = "uint8",
  ["short"] = "int16", ["unsigned short"] = "uint16", ["int"] = "int32",
  ["unsigned int"] = "uint32", ["unsigned"] = "uint32", ["long"] = "int64",
  ["long long"] = "int64", ["unsigned long"] = "uint64", ["unsigned long long"] = "uint64",
  ["int8_t"] = "int8", ["uint8_t"] = "uint8", ["int16_t"] = "int16", ["uint16_t"] = "uint16",
  ["int32_t"] = "int32", ["uint32_t"] = "uint32", ["int64_t"] = "int64", ["uint64_t"] = "uint64",
  ["float"] = "float32", ["double"] = "float64",
  ["lg_complex64"] = "complex64", ["lg_complex128"] = "complex128",
}
local arg_qualifiers = {const = true, __restrict__ = true, __restrict = true, volatile = true}

-- parse_arguments("float *x, float a, int n") -> {{name, dtype, pointer}, ...} or nil, why
function M.parse_arguments(text)
  local list = {}
  for decl in (text .. ","):gmatch("([^,]*),") do
    if decl:match("^%s*$") then return nil, "empty argument in '" .. text .. "'" end
    local pointer = decl:find("[%*%[]") ~= nil
    local words = {}
    for w in decl:gsub("[%*%[%]]", " "):gmatch("[%w_]+") do
      if not arg_qualifiers[w] then words[#words + 1] = w end
    end
    local name = table.remove(words)
    local ctype_name = table.concat(words, " ")
    local dtype = arg_types[ctype_name]
    if name == nil or not name:match("^[%a_][%w_]*$") or #words == 0 then
      return nil, ("cannot read the argument '%s'"):format(decl:match("^%s*(.-)%s*$"))
    end
    if dtype == nil then
      return nil, ("unknown type '%s' in '%s'"):format(ctype_name, decl:match("^%s*(.-)%s*$"))
    end
    if name:match("^lg_") or name == "i" then
      return nil, ("argument name '%s' is reserved"):format(name)
    end
    list[#list + 1] = {name = name, dtype = dtype, pointer = pointer,
                       decl = decl:match("^%s*(.-)%s*$")}
  end
  return list
end

function M.kernel_source(arguments, operation, name, preamble)
  local params = {}
  for i, a in ipairs(arguments) do params[i] = a.decl end
  params[#params + 1] = "long long lg_start, long long lg_step, long long lg_n"
  return table.concat{
    HELPERS, "\n", preamble or "", "\n",
    'extern "C" __global__ void ', name, "(", table.concat(params, ", "), ") {\n",
    LOOP, "    long long i = lg_start + lg_i * lg_step;\n    ", operation, ";\n  }\n}\n",
  }
end

-- An ElementwiseKernel object has a metatable of its own, whose __call is its C caller
-- (core.elementwise_caller): plain arrays of the declared dtypes and numbers go straight to
-- one launch; everything else to call_general below.
local call_general

-- The Function of kernel k on the current device, compiled on first use.
local function kernel_function(k)
  return kernel_cache.get(k.key, function()
    return k.source, k.name, k.letters, {no_extern_c = true, name = k.name .. ".cu"}
  end)
end

-- ElementwiseKernel(arguments, operation[, name[, {preamble = ...}]])
function M.ElementwiseKernel(arguments, operation, name, opts)
  local fname = "ElementwiseKernel"
  if type(arguments) ~= "string" then argerror(1, fname, "argument string expected, got " .. type(arguments)) end
  if type(operation) ~= "string" then argerror(2, fname, "operation string expected, got " .. type(operation)) end
  name = name == nil and "kernel" or name
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    argerror(3, fname, "name must be a C identifier, got " .. tostring(name))
  end
  if opts ~= nil and type(opts) ~= "table" then argerror(4, fname, "options table expected, got " .. type(opts)) end
  for k in pairs(opts or {}) do
    if k ~= "preamble" then argerror(4, fname, ("unknown option '%s'"):format(tostring(k))) end
  end
  local preamble = opts and opts.preamble or ""
  if type(preamble) ~= "string" then argerror(4, fname, "preamble must be a string") end
  local args, why = M.parse_arguments(arguments)
  if args == nil then argerror(1, fname, why) end
  local letters_of = {}
  for i, a in ipairs(args) do letters_of[i] = a.pointer and "P" or letters[a.dtype] end
  local source = M.kernel_source(args, operation, name, preamble)
  -- the cache key made once: a long string built per call is hashed whole each time
  local k = {arguments = args, name = name, source = source, key = "ek\0" .. source,
             letters = table.concat(letters_of) .. "qqq"}
  local call = core.elementwise_caller(args, function() return kernel_function(k) end,
                                       call_general, BLOCK, MAX_GRID)
  return setmetatable(k, {__call = call, __name = "gpu.ElementwiseKernel"})
end

local RANGE_STREAM = {range = true, stream = true}

-- {first, last[, step]} as slice reads it (1-based, inclusive, negatives count from the end,
-- a negative step runs downward) -> 0-based start, positive step, count.  Unlike slice, a
-- bound beyond the arrays is an error, not clamped: it is more likely a bug than a wish.
local function read_range(r, size, argn, fname)
  local function fail(msg) argerror(argn, fname, msg, 3) end   -- blames the kernel's caller
  if type(r) ~= "table" then fail("range must be {first, last[, step]}") end
  local first, last, step = math.tointeger(r[1]), math.tointeger(r[2]), math.tointeger(r[3] or 1)
  if first == nil or last == nil or step == nil then
    fail("range must be {first, last[, step]} of whole numbers")
  end
  if step == 0 then fail("range step must not be 0") end
  local given = ("{%d, %d}"):format(first, last)
  if first < 0 or last < 0 then
    if size == nil then
      fail(("range %s counts from the end, but no array argument has a size"):format(given))
    end
    if first < 0 then first = size + first + 1 end
    if last < 0 then last = size + last + 1 end
  end
  local low, high = math.min(first, last), math.max(first, last)
  if low < 1 or (size and high > size) then
    fail(("range %s reaches outside the arrays (size %d)"):format(given, size or 0))
  end
  if step > 0 then
    return first - 1, step, last >= first and (last - first) // step + 1 or 0
  end
  local count = first >= last and (first - last) // -step + 1 or 0
  return first + (count - 1) * step - 1, -step, count   -- the same elements, upward
end

-- call_general(k, args...): an ElementwiseKernel's call with options ({range =, stream =}),
-- views (copied in, and back unless const) and Buffers, and every check.
function call_general(k, ...)
  local n = select("#", ...)
  local values = {...}
  local opts = {}
  if n == #k.arguments + 1 and type(values[n]) == "table" and not M.is_array(values[n]) then
    opts = require("gpu.args").check_options(values[n], n, k.name, RANGE_STREAM)
    values[n] = nil
    n = n - 1
  end
  if n ~= #k.arguments then
    raise(("kernel '%s' takes %d arguments, got %d"):format(k.name, #k.arguments, n))
  end
  local size, device, first_array
  local views = {}        -- [i] = argument i, a view the kernel cannot index as a flat array
  for i, a in ipairs(k.arguments) do
    local v = values[i]
    if a.pointer then
      if M.is_array(v) then
        check_array(v, i, k.name, a.dtype)
        if not v.is_contiguous then views[i] = v end
        if device == nil then device, first_array, size = v.device, i, v.size
        elseif v.device ~= device then
          argerror(i, k.name, ("array is on device %d, argument #%d on device %d")
                              :format(v.device, first_array, device))
        end
      elseif getmetatable(v) ~= core.types.Buffer then
        argerror(i, k.name, ("GPUArray expected for '%s', got %s"):format(a.decl, type(v)))
      end
    else
      values[i] = scalar_value(v, a.dtype, i, k.name)
    end
  end
  local start, step, count = 0, 1, size
  if opts.range ~= nil then
    start, step, count = read_range(opts.range, size, n + 1, k.name)
  end
  if count == nil then
    argerror(n + 1, k.name, "no array argument to take the size from: pass {range = {first, last}}")
  end
  if count == 0 then return end
  local f = kernel_function(k)
  -- a view goes in as a contiguous copy in its row-major order, and unless it is declared
  -- const (pointing to const) it is copied back afterwards: the operation may write it
  for i, v in pairs(views) do
    values[i] = M.launch(copy_program(v.dtype), nil, opts.stream, k.name, v)
  end
  values[n + 1], values[n + 2], values[n + 3] = start, step, count
  f:prepared_async_call({grid_for(count)}, {BLOCK}, opts.stream, table.unpack(values, 1, n + 3))
  for i, v in pairs(views) do
    if not k.arguments[i].decl:match("^[^%*%[]*%f[%w_]const%f[^%w_]") then
      M.launch(copy_program(v.dtype), v, opts.stream, k.name, values[i])
    end
    core.free_after(values[i], opts.stream)   -- once the stream is done with it
  end
end

return M
