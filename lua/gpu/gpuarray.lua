-- gpu.gpuarray: NumPy-like arrays on the device (the C type gpu.GPUArray, src/array.c, with
-- the methods, operators and constructors added here).
--
-- Every computing method goes through gpu.elementwise (one generated kernel per operation,
-- dtypes and layout class, compiled once per device) with expressions and result dtypes from
-- gpu.operators (NumPy semantics, NEP 50 for Lua numbers).  Views (slice, transpose,
-- reshape, view) share memory with their base; non-contiguous views work everywhere.

local core = require "gpu.core"
local promote = require "gpu.promote"
local operators = require "gpu.operators"
local ew = require "gpu.elementwise"
local format = require "gpu.format"
local fuse = require "gpu.fuse"

local M = {}

local GPUArray = core.types.GPUArray
local HostArray = core.types.HostArray
local methods = GPUArray.__methods
local host = core.host

local argerror, raise = require("gpu.args").argerror, require("gpu.args").raise

local function is_array(v) return getmetatable(v) == GPUArray end
M.is_array = is_array

local typename = require("gpu.args").typename
local is_scalar = require("gpu.args").is_scalar
local scalar_number = require("gpu.args").scalar_number
local check_stream = require("gpu.args").check_stream

-- The array at argument n of fname, alive.
-- (n = 0: the method's self, reported as luaL_argerror does.)
local function check_array(a, n, fname)
  local problem = not is_array(a) and "GPUArray expected, got " .. typename(a)
                  or a.freed and "array has been freed"
  if problem then
    if n == 0 then raise(("calling '%s' on bad self (%s)"):format(fname, problem), 2) end
    argerror(n, fname, problem, 2)
  end
  return a
end

local function check_dtype(dtype, n, fname)
  if type(dtype) ~= "string" or promote.info[dtype] == nil then
    argerror(n, fname, ("unknown dtype '%s'"):format(tostring(dtype)), 2)
  end
  return dtype
end

local check_shape = require("gpu.args").check_shape
local check_options = require("gpu.args").check_options
local check_axis = require("gpu.args").check_axis

local OUT_STREAM = {out = true, stream = true}
local STREAM = {stream = true}

-- The byte-exact Buffer view holding a contiguous array's elements.
local function data_buffer(a)
  return a.gpudata:offset(a.offset, a.nbytes)
end

local function size_of(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- Elementwise operations ------------------------------------------------------------------

local weak_default = {["weak-int"] = "int64", ["weak-float"] = "float64",
                      ["weak-complex"] = "complex128"}
local is_complex = require("gpu.complex").is_complex

-- The type of one operand: an array's dtype, or the weak type of a Lua number.
local function operand_type(v, n, fname)
  if is_array(v) then
    if v.freed then argerror(n, fname, "array has been freed", 3) end
    return v.dtype
  end
  local mt = math.type(v)
  if mt == "integer" then return "weak-int" end
  if mt == "float" then return "weak-float" end
  if is_complex(v) then return "weak-complex" end
  if type(v) == "boolean" then return "bool" end
  if is_scalar(v) then return v.dtype end       -- gpu.float32(2): typed, as NumPy's scalars are
  argerror(n, fname, "GPUArray or number expected, got " .. typename(v), 3)
end

-- The program of the elementwise operation op of gpu.operators over operands of types
-- (dtypes, or weak types for Lua numbers; values[k] is operand k, an array or a number):
-- the program, or nil, a message and the operand to blame.
local function program_of(op, types, values, target)
  local names = {}
  for k = 1, #types do names[k] = "v" .. k end
  local expr, result, bad = operators.try_expression(op, types, names, target)
  if expr == nil then return nil, result, bad end
  result = weak_default[result] or result
  -- a scalar's kernel type: what its weak type becomes beside the other operands, except
  -- for operands that stand apart (a condition or criterion chooses between the others,
  -- ldexp's exponent scales its first operand)
  local function apart(k)
    return k == 1 and (op == "where" or op == "if_positive") or k == 2 and op == "ldexp"
  end
  local strong = {}
  for k, t in ipairs(types) do
    if not promote.is_weak(t) and not apart(k) then strong[#strong + 1] = t end
  end
  local others = #strong > 0 and promote.result_type_of(strong) or nil
  local operands, parts = {}, {op}
  for k, v in ipairs(values) do
    local t = types[k]
    if not is_array(v) then
      if op == "where" and k == 1 then t = "bool"
      elseif apart(k) then t = weak_default[t] or t
      elseif promote.is_weak(t) then t = others and promote.weak_dtype(t, others) or weak_default[t] end
      operands[k] = {name = names[k], dtype = t, scalar = true}
      parts[#parts + 1] = t .. "s"
    else
      operands[k] = {name = names[k], dtype = t}
      parts[#parts + 1] = t
    end
  end
  if target then parts[#parts + 1] = "to_" .. target end
  return ew.program{expr = expr, out = result, name = table.concat(parts, "_"),
                    operands = operands}
end

-- program_of's results: op -> target -> (type -> array-ness ->) per operand -> {program = p}
local programs_by_type = {}
local level = require("gpu.kernel_cache").level

local comparisons = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true}

-- The program of op (and target) for operands of these types and values (program_of's),
-- made once per types and array-ness; nil, a message and the operand to blame where none.
local function program_for(op, types, values, target)
  local node = level(level(programs_by_type, op), target or false)
  for k = 1, #types do
    node = level(level(node, types[k]), is_array(values[k]))
  end
  local p = node.program
  if p == nil then
    local why, bad
    p, why, bad = program_of(op, types, values, target)
    if p == nil then return nil, why, bad end
    node.program = p
  end
  return p
end

-- Each (op, target)'s dispatcher (core.program_dispatcher): the launcher of the program for
-- its operands' kinds, found by one integer key, where the kinds decide the program (not for
-- a comparison with a Lua integer, which NumPy compares by its value).
local dispatchers = {}
local function dispatcher(op, target)
  local by_target = level(dispatchers, op)
  local d = by_target[target or false]
  if d == nil then
    d = core.program_dispatcher(function(...)
      local values, types = {...}, {}
      for k = 1, select("#", ...) do
        local v = values[k]
        types[k] = is_array(v) and v.dtype or math.type(v) == "integer" and "weak-int"
                   or math.type(v) == "float" and "weak-float" or "bool"
        if types[k] == "weak-int" and comparisons[op] then return false end
      end
      local p = program_for(op, types, values, target)
      return p ~= nil and #p.operands == #values and ew.launcher(p)
    end)
    by_target[target or false] = d
  end
  return d
end

-- apply(op, fname, values, opts[, target[, dispatched]]) -> result array: the elementwise
-- operation op of gpu.operators over values (arrays and Lua numbers), into opts.out if given.
-- Operands the program launchers' C paths take go straight to a launch (dispatcher), unless
-- dispatched says the caller's own try with these values, out and stream just missed; the
-- rest, and every error, take the checks below.
local function apply(op, fname, values, opts, target, dispatched)
  if not dispatched then
    local result = dispatcher(op, target)(opts.out, opts.stream,
                                          table.unpack(values, 1, operators.arity[op]))
    if result then return result end
  end
  local types, any_array = {}, false
  for k = 1, operators.arity[op] do     -- not ipairs: a missing operand is an error too
    local v = values[k]
    types[k] = operand_type(v, k, fname)
    any_array = any_array or is_array(v)
  end
  if not any_array then argerror(1, fname, "at least one operand must be a GPUArray", 2) end
  if comparisons[op] then
    -- NumPy 2 compares a Lua integer the array's dtype cannot hold by its value
    -- (uint8 array < 300 is all true), where arithmetic would refuse it: compare in int64
    for k = 1, 2 do
      local other = types[3 - k]
      if types[k] == "weak-int" and promote.limits[other] and promote.scalar_problem(values[k], other) then
        types[k] = "int64"
      end
    end
  end
  -- the program depends only on op, target, and each operand's type and array-ness
  local p, why, bad = program_for(op, types, values, target)
  if p == nil then argerror(bad or 1, fname, why, 2) end
  return ew.launch(p, opts.out, opts.stream, fname, table.unpack(values, 1, #p.operands))
end
M._apply = apply

-- x op y for arrays, into a new result or a given out, on the default stream or a given one.
-- The common cases (two live C-contiguous arrays of one shape on the current device, or one
-- such array and a Lua number; out, when given, of their shape and the result's dtype, and no
-- partial overlap; a stream not capturing a graph) stay in C (core.array_binary_operator): no
-- promotion, broadcasting or key building per call, just one launch of the kernel compile()
-- gave for the dtype pair (an array's dtype, or a number's weak type), the one the general
-- path uses.  Everything else (and every error) is the general path's: general(x, y, out,
-- stream), apply by default, which the C operator calls after op's dispatcher (views,
-- broadcasts and mixed kinds launch from C too) has missed.
local BLOCK, MAX_GRID, UNROLL = ew.BLOCK, ew.MAX_GRID, ew.UNROLL

local function binary_operator(op, fname, general)
  fname = fname or op
  local function compile(x, y)
    local p = program_of(op, {operand_type(x, 1, fname), operand_type(y, 2, fname)}, {x, y})
    if p then return ew.kernel(p, "c"), p.out end
  end
  if general then return core.array_binary_operator(compile, general, BLOCK, MAX_GRID, UNROLL) end
  return core.array_binary_operator(compile, function(x, y, out, stream)
    return apply(op, fname, {x, y}, {out = out, stream = stream}, nil, true)
  end, BLOCK, MAX_GRID, UNROLL, dispatcher(op))
end
M._binary_operator = binary_operator

-- The same for operations of one operand (-a, gpu.cumath.exp(a), ...): f(x[, out[, stream]]),
-- or f(x) for a metamethod (Lua passes __unm and __bnot their operand twice).
local function unary_operator(op, fname, metamethod)
  local function compile(x)
    local p = program_of(op, {x.dtype}, {x})
    if p then return ew.kernel(p, "c"), p.out end
  end
  local function general(x, out, stream)   -- after op's dispatcher, as for binary operators
    return apply(op, fname, {x}, {out = out, stream = stream}, nil, true)
  end
  return core.array_unary_operator(compile, general, BLOCK, MAX_GRID, UNROLL, metamethod,
                                   dispatcher(op))
end
M._unary_operator = unary_operator

-- The function forms' options: operator(x, y) of op (or operator(x) of fname) with opts
-- ({out =, stream =}, argument n of the caller), both of which the C path takes.
local function binary_with_options(operator, op, n, x, y, opts)
  opts = check_options(opts, n, op, OUT_STREAM)
  return operator(x, y, opts.out, opts.stream)
end
M._binary_with_options = binary_with_options

local function unary_with_options(operator, fname, n, x, opts)
  opts = check_options(opts, n, fname, OUT_STREAM)
  return operator(x, opts.out, opts.stream)
end
M._unary_with_options = unary_with_options

local copy_program = ew.copy_program

-- Constructors ----------------------------------------------------------------------------

-- Options tables that take no keys yet are checked all the same, so a misspelt one is an
-- error, not ignored.
local NO_OPTIONS = {}
local DTYPE_OPTION = {dtype = true}

-- The dtype of a constructor called (..., dtype[, {dtype =}]) or (..., {dtype =}), where
-- argument n is the dtype, nil or the options table; default where neither names one.
local function constructor_dtype(dtype, opts, n, fname, default)
  if type(dtype) == "table" and opts == nil then dtype, opts, n = nil, dtype, n - 1 end
  opts = check_options(opts, n + 1, fname, DTYPE_OPTION, 2)
  if opts.dtype ~= nil then
    if dtype ~= nil then argerror(n, fname, "dtype given twice (here and as option 'dtype')", 2) end
    dtype, n = opts.dtype, n + 1
  end
  if dtype == nil then return default end
  return check_dtype(dtype, n, fname)
end

function M.empty(shape, dtype, opts)
  shape = check_shape(shape, 1, "empty")
  return core.array_empty(shape, constructor_dtype(dtype, opts, 2, "empty", "float64"))
end

function M.zeros(shape, dtype, opts)
  shape = check_shape(shape, 1, "zeros")
  return core.array_zeros(shape, constructor_dtype(dtype, opts, 2, "zeros", "float64"))
end

-- A value as stores into dtype take it: a typed scalar of that dtype as it is (its bytes),
-- another as the number it stands for (gpu.uint64(-1) is 2^64 - 1, not -1), and a uint64
-- beyond 2^63 as the typed scalar of its bits (a negative Lua integer is not in uint64's
-- range where arithmetic reads it).
local function store_value(value, dtype)
  if is_scalar(value) then
    if value.dtype == dtype then return value end
    value = scalar_number(value)
  end
  if dtype == "uint64" and math.type(value) == "integer" and value < 0 then
    return core.uint64(value)
  end
  return value
end

-- store_value, after checking that value fits dtype (argument n of fname otherwise).
local function checked_store_value(value, dtype, n, fname)
  value = store_value(value, dtype)
  if not is_scalar(value) then
    local bad = promote.scalar_problem(value, dtype, true)
    if bad then argerror(n, fname, bad, 2) end
  end
  return value
end

function M.full(shape, value, dtype, opts)
  shape = check_shape(shape, 1, "full")
  dtype = constructor_dtype(dtype, opts, 3, "full", nil)
  if dtype == nil then
    dtype = is_scalar(value) and value.dtype
            or math.type(value) == "integer" and "int64" or type(value) == "boolean" and "bool"
            or is_complex(value) and "complex128"
            or "float64"
  end
  return core.array_empty(shape, dtype):fill(checked_store_value(value, dtype, 2, "full"))
end

function M.ones(shape, dtype, opts)
  shape = check_shape(shape, 1, "ones")
  return core.array_empty(shape, constructor_dtype(dtype, opts, 2, "ones", "float64")):fill(1)
end

-- empty_like(a[, dtype]), zeros_like(a[, dtype]), ones_like(a[, dtype]) (or {dtype =}): a new
-- array of a's shape, and a's dtype unless another is named.
for name, make in pairs{empty_like = core.array_empty, zeros_like = M.zeros, ones_like = M.ones} do
  M[name] = function(a, dtype, opts)
    check_array(a, 1, name)
    return make(a.shape, constructor_dtype(dtype, opts, 2, name, a.dtype))
  end
end

-- arange([start,] stop[, step][, dtype][, {dtype =}]): start + i * step for i = 0 .. n - 1,
-- NumPy's count.
local arange_programs = {}     -- dtype -> its program

function M.arange(...)
  local args = table.pack(...)
  local dtype, dtype_at
  if type(args[args.n]) == "table" then
    dtype, dtype_at = check_options(args[args.n], args.n, "arange", DTYPE_OPTION).dtype, args.n
    args.n = args.n - 1
    if dtype ~= nil and type(args[args.n]) == "string" then
      argerror(args.n, "arange", "dtype given twice (here and as option 'dtype')")
    end
  end
  if dtype == nil and type(args[args.n]) == "string" then
    dtype, dtype_at = args[args.n], args.n
    args.n = args.n - 1
  end
  local start, stop, step
  if args.n == 1 then start, stop, step = 0, args[1], 1
  elseif args.n == 2 then start, stop, step = args[1], args[2], 1
  else start, stop, step = args[1], args[2], args[3] == nil and 1 or args[3] end
  local one = args.n <= 1                       -- arange(stop): stop is argument #1
  local values = {start, stop, step}
  for i = 1, 3 do
    local value = values[i]
    if is_scalar(value) then value = scalar_number(value) end     -- gpu.int32(5) is 5
    values[i] = value
    if type(value) ~= "number" then
      argerror(one and 1 or i, "arange", "number expected, got " ..
               (value == nil and "no value" or typename(value)))
    end
  end
  start, stop, step = values[1], values[2], values[3]
  if step == 0 then argerror(3, "arange", "step must not be 0") end
  local all_int = math.type(start) == "integer" and math.type(stop) == "integer" and
                  math.type(step) == "integer"
  dtype = dtype and check_dtype(dtype, dtype_at, "arange") or (all_int and "int64" or "float64")
  local n = math.ceil((stop - start) / step)
  if all_int then n = (stop - start + step + (step > 0 and -1 or 1)) // step end
  if n < 0 then n = 0 end
  local a = core.array_empty({math.tointeger(n)}, dtype)
  local wide = promote.kind(dtype) == "f" and "float64" or "int64"
  local p = arange_programs[dtype]
  if p == nil then
    -- float16 and bfloat16 store the double itself, rounding it once
    local value = ("(start + (%s)lg_i * step)"):format(operators.ctype(wide))
    local sixteen_bits = dtype == "float16" or dtype == "bfloat16"
    p = ew.program{expr = sixteen_bits and value or ("(%s)%s"):format(operators.ctype(dtype), value),
                   out = dtype, name = "arange_" .. dtype,
                   operands = {{name = "start", dtype = wide, scalar = true},
                               {name = "step", dtype = wide, scalar = true}}}
    arange_programs[dtype] = p
  end
  if wide == "int64" then start, step = math.tointeger(start), math.tointeger(step) end
  if start == nil or step == nil then argerror(1, "arange", "integer start and step expected for " .. dtype) end
  return ew.launch(p, a, nil, "arange", start, step)
end

-- linspace(start, stop[, num[, {endpoint = true, dtype = "float64", stream =}]]): NumPy's, num (default
-- 50) evenly spaced values, stop the last of them unless endpoint is false.  Each is
-- start + i * step in float64, rounded as NumPy rounds it (no fused multiply-add), then
-- converted to dtype: rounded toward minus infinity for integer dtypes, as NumPy 2 does.
local LINSPACE_OPTIONS = {endpoint = true, dtype = true, stream = true}
function M.linspace(start, stop, num, opts)
  if is_scalar(start) then start = scalar_number(start) end
  if is_scalar(stop) then stop = scalar_number(stop) end
  if is_scalar(num) then num = scalar_number(num) end
  for i = 1, 2 do
    local value = ({start, stop})[i]
    if math.type(value) == nil then
      argerror(i, "linspace", "number expected, got " .. typename(value))
    end
  end
  if num == nil then num = 50 end
  if math.type(num) ~= "integer" or num < 0 then
    argerror(3, "linspace", "num must be a non-negative integer, got " .. tostring(num))
  end
  opts = check_options(opts, 4, "linspace", LINSPACE_OPTIONS)
  if opts.endpoint ~= nil and type(opts.endpoint) ~= "boolean" then
    argerror(4, "linspace", "option 'endpoint' must be a boolean, got " .. typename(opts.endpoint))
  end
  local dtype = opts.dtype == nil and "float64" or check_dtype(opts.dtype, 4, "linspace")
  if promote.kind(dtype) == "c" then argerror(4, "linspace", "a real dtype expected, got " .. dtype) end
  local endpoint = opts.endpoint ~= false
  local divisions = endpoint and num - 1 or num
  local step = divisions > 0 and (stop - start) / divisions or 0.0
  local last = (endpoint and num > 1) and num - 1 or -1     -- the index that is stop exactly
  local a = core.array_empty({num}, dtype)
  local value = "(lg_i == last ? stop : __dadd_rn(__dmul_rn((double)lg_i, step), start))"
  local kind = promote.kind(dtype)
  if kind == "i" or kind == "u" then value = ("floor(%s)"):format(value) end
  local p = ew.program{expr = (operators.expression("astype", {"float64"}, {value}, dtype)),
                       out = dtype, name = "linspace_" .. dtype,
                       operands = {{name = "start", dtype = "float64", scalar = true},
                                   {name = "step", dtype = "float64", scalar = true},
                                   {name = "stop", dtype = "float64", scalar = true},
                                   {name = "last", dtype = "int64", scalar = true}}}
  return ew.launch(p, a, opts.stream, "linspace", start + 0.0, step, stop + 0.0, last)
end

-- The first integer among a (nested) table's values that dtype cannot hold, and its flat
-- position: nil, or the position and what is wrong.
local function integer_out_of_range(t, dtype, position)
  position = position or 0
  for _, v in ipairs(t) do
    if type(v) == "table" and not is_complex(v) then
      local bad
      position, bad = integer_out_of_range(v, dtype, position)
      if bad then return position, bad end
    else
      position = position + 1
      if math.type(v) == "integer" then
        local bad = promote.scalar_problem(v, dtype, true)
        if bad then return position, bad end
      end
    end
  end
  return position, nil
end

local function host_of(data, dtype, n, fname)
  local mt = getmetatable(data)
  if mt == HostArray then
    if data.freed then argerror(n, fname, "host array has been freed", 2) end
    return data
  end
  if type(data) == "table" then
    local ok, h = pcall(host.from_table, data, dtype)
    if ok then return h end
    -- values that dtype cannot hold exactly (1.5 for int32) convert like astype, but an
    -- integer out of its range is an error, as in NumPy
    if dtype ~= nil and promote.limits[dtype] then
      local position, bad = integer_out_of_range(data, dtype)
      if bad then argerror(n, fname, ("item %d: %s"):format(position, bad), 2) end
    end
    return host.from_table(data)
  end
  if type(data) == "string" then
    if dtype == nil then argerror(n + 1, fname, "a dtype is needed with a string of bytes") end
    return host.from_bytes(data, dtype)
  end
  argerror(n, fname, "HostArray, table or string expected, got " .. typename(data), 2)
end

-- to_gpu(host_or_table[, dtype])
function M.to_gpu(data, dtype, opts)
  if dtype ~= nil then check_dtype(dtype, 2, "to_gpu") end
  check_options(opts, 3, "to_gpu", NO_OPTIONS)
  local h = host_of(data, dtype, 1, "to_gpu")
  local a = core.array_empty(h.shape, h.dtype)
  if a.nbytes > 0 then core.memcpy_htod(a.gpudata, h) end
  if dtype ~= nil and dtype ~= h.dtype then
    local b = a:astype(dtype)
    a:free()
    return b
  end
  return a
end
M.to_device = M.to_gpu

-- Transfers -------------------------------------------------------------------------------

local function check_host_for(a, h, n, fname)
  if getmetatable(h) ~= HostArray then argerror(n, fname, "HostArray expected, got " .. typename(h), 2) end
  if h.dtype ~= a.dtype or h.size ~= a.size then
    argerror(n, fname, ("host array has %d elements of %s, the GPUArray %d of %s")
                       :format(h.size, h.dtype, a.size, a.dtype), 2)
  end
end

-- a:get([host]) -> HostArray (into host when given: same dtype and size)
function methods.get(a, h)
  check_array(a, 0, "get")
  if h ~= nil then check_host_for(a, h, 1, "get") else h = host.empty(a.shape, a.dtype) end
  if a.size == 0 then return h end
  local src = a.is_contiguous and a or a:copy()
  core.memcpy_dtoh(h, data_buffer(src))
  if src ~= a then src:free() end
  return h
end

-- a:get_async(stream[, host]) -> page-locked HostArray, filled when the stream gets there
function methods.get_async(a, stream, h)
  check_array(a, 0, "get_async")
  check_stream(stream, 1, "get_async")
  if h ~= nil then
    check_host_for(a, h, 2, "get_async")
    if not h:is_pagelocked() then
      argerror(2, "get_async", "async copies need page-locked host memory (gpu.host.pagelocked_empty)")
    end
  else
    h = host.pagelocked_empty(a.shape, a.dtype)
  end
  if a.size == 0 then return h end
  local src = a.is_contiguous and a or ew.launch(copy_program(a.dtype), nil, stream, "get_async", a)
  core.memcpy_dtoh_async(h, data_buffer(src), stream)
  if src ~= a then core.free_after(src, stream) end   -- once the stream has copied it
  return h
end

local function host_for_set(a, data, fname)
  local h = host_of(data, a.dtype, 1, fname)
  if h.size ~= a.size then
    argerror(1, fname, ("host data has %d elements, the GPUArray %d"):format(h.size, a.size), 2)
  end
  if h.dtype ~= a.dtype then
    argerror(1, fname, ("host data is %s, the GPUArray %s"):format(h.dtype, a.dtype), 2)
  end
  return h
end

-- a:set(host_or_table): copies host data of the same size and dtype into a.
function methods.set(a, data, opts)
  check_array(a, 0, "set")
  check_options(opts, 2, "set", NO_OPTIONS)
  local h = host_for_set(a, data, "set")
  if a.size == 0 then return a end
  if a.is_contiguous then
    core.memcpy_htod(data_buffer(a), h)
  else
    local tmp = core.array_empty(a.shape, a.dtype)
    core.memcpy_htod(tmp.gpudata, h)
    ew.launch(copy_program(a.dtype), a, nil, "set", tmp)
    tmp:free()
  end
  return a
end

-- a:set_async(host, stream): host must be page-locked.
function methods.set_async(a, data, stream)
  check_array(a, 0, "set_async")
  check_stream(stream, 2, "set_async")
  local h = host_for_set(a, data, "set_async")
  if not h:is_pagelocked() then
    argerror(1, "set_async", "async copies need page-locked host memory (gpu.host.pagelocked_empty)")
  end
  if a.size == 0 then return a end
  if a.is_contiguous then
    core.memcpy_htod_async(data_buffer(a), h, stream)
  else
    local tmp = core.array_empty(a.shape, a.dtype)
    core.memcpy_htod_async(tmp.gpudata, h, stream)
    ew.launch(copy_program(a.dtype), a, stream, "set_async", tmp)
    core.free_after(tmp, stream)                     -- once the stream has copied it
  end
  return a
end

-- gpuarray.to_gpu_async(host[, stream]): PyCUDA's; a new array, filled by an asynchronous
-- copy from page-locked host memory on stream.
function M.to_gpu_async(h, stream)
  check_stream(stream, 2, "to_gpu_async")
  if getmetatable(h) ~= HostArray then argerror(1, "to_gpu_async", "HostArray expected, got " .. typename(h)) end
  if not h:is_pagelocked() then
    argerror(1, "to_gpu_async", "async copies need page-locked host memory (gpu.host.pagelocked_empty)")
  end
  return core.array_empty(h.shape, h.dtype):set_async(h, stream)
end

-- Copies, fills, conversions --------------------------------------------------------------

function methods.copy(a, opts)
  check_array(a, 0, "copy")
  opts = check_options(opts, 1, "copy", STREAM)
  if not a.is_contiguous then     -- the copy program, whose launch makes the result
    return ew.launch(copy_program(a.dtype), nil, opts.stream, "copy", a)
  end
  local out = core.array_empty(a.shape, a.dtype)
  if a.size == 0 then return out end
  -- in the stream's order, or the Context's (a kernel's without a stream): the host goes on
  core.memcpy_dtod_async(out.gpudata, data_buffer(a), a.nbytes, opts.stream)
  return out
end

local fill_programs = {}
function methods.fill(a, value, opts)
  check_array(a, 0, "fill")
  opts = check_options(opts, 2, "fill", STREAM)
  local p = fill_programs[a.dtype]
  if p == nil then
    p = ew.program{expr = "value", out = a.dtype, name = "fill_" .. a.dtype,
                   operands = {{name = "value", dtype = a.dtype, scalar = true}}}
    fill_programs[a.dtype] = p
  end
  return ew.launch(p, a, opts.stream, "fill", checked_store_value(value, a.dtype, 1, "fill"))
end

function methods.astype(a, dtype, opts)
  -- a copy where dtype is a's own: the astype program's result is one too
  local dispatched = opts == nil and type(dtype) == "string" and promote.info[dtype] ~= nil
  local result = dispatched and dispatcher("astype", dtype)(nil, nil, a)
  if result then return result end
  check_array(a, 0, "astype")
  check_dtype(dtype, 1, "astype")
  opts = check_options(opts, 2, "astype", OUT_STREAM)
  if dtype == a.dtype and opts.out == nil then return a:copy(opts) end
  return apply("astype", "astype", {a}, opts, dtype, dispatched)
end

-- Views -----------------------------------------------------------------------------------

local function contiguous_base(a) return a.is_contiguous and a or a:copy() end

-- a:reshape(shape) or a:reshape(d1, d2, ...); one dimension may be -1.  A view when a is
-- contiguous, else a reshaped copy (as NumPy does).
function methods.reshape(a, ...)
  check_array(a, 0, "reshape")
  local dims = select("#", ...) == 1 and type((...)) == "table" and (...) or {...}
  local shape, known, unknown, nonzero = {}, 1, nil, 1
  for i, d in ipairs(dims) do
    local v = math.tointeger(d)
    if v == nil then argerror(1, "reshape", "shape must be whole numbers, got " .. tostring(d)) end
    if v == -1 then
      if unknown then argerror(1, "reshape", "only one dimension can be -1") end
      unknown = i
    elseif v < 0 then
      argerror(1, "reshape", ("negative dimension %d in shape"):format(v))
    else
      if v > 0 then   -- check_shape's cap, before the product can wrap
        if nonzero > (1 << 58) // v then argerror(1, "reshape", "shape is too large") end
        nonzero = nonzero * v
      end
      known = known * v
    end
    shape[i] = v
  end
  if unknown then
    if known == 0 or a.size % known ~= 0 then
      argerror(1, "reshape", ("cannot reshape an array of size %d into shape %s")
                             :format(a.size, promote.shape_text(shape)))
    end
    shape[unknown] = a.size // known
  elseif known ~= a.size then
    argerror(1, "reshape", ("cannot reshape an array of size %d into shape %s")
                           :format(a.size, promote.shape_text(shape)))
  end
  return core.array_view(contiguous_base(a), 0, a.dtype, shape)
end

function methods.ravel(a)
  check_array(a, 0, "ravel")
  return a:reshape(a.size)
end

-- a:view(dtype): the same bytes as another dtype (contiguous arrays; the last axis rescales).
function methods.view(a, dtype)
  check_array(a, 0, "view")
  check_dtype(dtype, 1, "view")
  local old, new = a.itemsize, promote.info[dtype].size
  local shape = a.shape
  if old ~= new then
    if not a.is_contiguous then argerror(1, "view", "changing the itemsize needs a contiguous array") end
    local last = shape[#shape]
    if last == nil or (last * old) % new ~= 0 then
      argerror(1, "view", ("the last axis (%s bytes) is not a multiple of %s's itemsize %d")
                          :format(last and tostring(last * old) or "0-d: no", dtype, new))
    end
    shape[#shape] = last * old // new
    return core.array_view(a, 0, dtype, shape)
  end
  return core.array_view(a, 0, dtype, shape, a.strides)
end

local AXIS = {axis = true}

-- a:transpose([axes]): axes is a permutation of 1..ndim (default: reversed), an axis's
-- negative number counting from the end as everywhere.  (The C path takes 1..ndim.)
function methods.transpose(a, axes)
  check_array(a, 0, "transpose")
  local nd, shape, strides = a.ndim, a.shape, a.strides
  if axes == nil then
    axes = {}
    for i = 1, nd do axes[i] = nd - i + 1 end
  end
  if type(axes) ~= "table" or #axes ~= nd then
    argerror(1, "transpose", ("axes must be a permutation of 1..%d"):format(nd))
  end
  local seen, new_shape, new_strides = {}, {}, {}
  for i, ax in ipairs(axes) do
    ax = math.tointeger(ax)
    if ax and ax < 0 then ax = nd + 1 + ax end
    if ax == nil or ax < 1 or ax > nd or seen[ax] then
      argerror(1, "transpose", ("axes must be a permutation of 1..%d"):format(nd))
    end
    seen[ax] = true
    new_shape[i], new_strides[i] = shape[ax], strides[ax]
  end
  return core.array_view(a, 0, a.dtype, new_shape, new_strides)
end

-- A view of a with a's dtype; an empty one (a length 0 anywhere) reads nothing, so it starts
-- where a does (its offset could point past a's memory).
local function view_of(a, offset, shape, strides)
  for _, n in ipairs(shape) do
    if n == 0 then return core.array_view(a, 0, a.dtype, shape, strides) end
  end
  return core.array_view(a, offset, a.dtype, shape, strides)
end
M._check_array, M._view_of = check_array, view_of      -- for gpu.shape's views

-- a:slice(first, last[, step][, {axis = k}]): elements first..last (1-based, inclusive;
-- negatives count from the end) of axis k (the first by default), every step-th; a view.
-- Out-of-range bounds are clipped.
function methods.slice(a, first, last, step, opts)
  check_array(a, 0, "slice")
  local opts_at = 4                     -- a:slice(first, last, step, opts) or (first, last, opts)
  if type(step) == "table" and opts == nil then step, opts, opts_at = nil, step, 3 end
  opts = check_options(opts, opts_at, "slice", AXIS)
  if a.ndim == 0 then argerror(0, "slice", "cannot slice a 0-d array") end
  local axis = opts.axis == nil and 1 or check_axis(opts.axis, a.ndim, opts_at, "slice")
  local n = a.shape[axis]
  step = step == nil and 1 or math.tointeger(step)
  if step == nil then argerror(3, "slice", "integer step expected") end
  if step == 0 then argerror(3, "slice", "step must not be 0") end
  -- omitted bounds are the ends in the step's direction (a:slice(nil, nil, -1) reverses)
  first = first == nil and (step > 0 and 1 or n) or math.tointeger(first)
  if first == nil then argerror(1, "slice", "integer expected") end
  if last == nil then last = step > 0 and n or 1 end
  last = math.tointeger(last)
  if last == nil then argerror(2, "slice", "integer expected") end
  if first < 0 then first = n + first + 1 end
  if last < 0 then last = n + last + 1 end
  local count
  if step > 0 then
    if first < 1 then first = 1 end
    if last > n then last = n end
    count = last >= first and (last - first) // step + 1 or 0
  else
    if first > n then first = n end
    if last < 1 then last = 1 end
    count = first >= last and (first - last) // (-step) + 1 or 0
  end
  local shape, strides = a.shape, a.strides
  local offset = (first - 1) * strides[axis]
  shape[axis] = count
  strides[axis] = strides[axis] * step
  return view_of(a, offset, shape, strides)
end

-- An axis given as argument argn (not an option): 1-based, negatives from the end.
local function axis_argument(axis, ndim, argn, fname)
  if math.type(axis) ~= "integer" then
    argerror(argn, fname, "axis must be an integer, got " .. (math.type(axis) or typename(axis)), 2)
  end
  return check_axis(axis, ndim, argn, fname, 2)
end

-- A 1-based index along an axis of length n (negatives count from the end), or an error.
local function axis_index(i, n, argn, fname, what)
  local k = math.tointeger(i)
  if k == nil then argerror(argn, fname, "integer index expected, got " .. typename(i), 2) end
  local j = k < 0 and n + 1 + k or k
  if j < 1 or j > n then
    argerror(argn, fname, ("%s %d is out of range for an axis of length %d"):format(what, k, n), 2)
  end
  return j
end

-- a:select(axis, index): Torch7's, NumPy's a[..., index, ...]: the view of one index along
-- axis (1-based, negatives from the end), without that axis.
function methods.select(a, axis, index)
  check_array(a, 0, "select")
  if a.ndim == 0 then argerror(0, "select", "cannot select from a 0-d array") end
  axis = axis_argument(axis, a.ndim, 1, "select")
  index = axis_index(index, a.shape[axis], 2, "select", "index")
  local shape, strides, new_shape, new_strides = a.shape, a.strides, {}, {}
  for d = 1, a.ndim do
    if d ~= axis then new_shape[#new_shape + 1], new_strides[#new_strides + 1] = shape[d], strides[d] end
  end
  return view_of(a, (index - 1) * strides[axis], new_shape, new_strides)
end

-- a:narrow(axis, first, length): Torch7's: the view of length elements along axis from
-- first on (1-based, negatives from the end).
function methods.narrow(a, axis, first, length)
  check_array(a, 0, "narrow")
  if a.ndim == 0 then argerror(0, "narrow", "cannot narrow a 0-d array") end
  axis = axis_argument(axis, a.ndim, 1, "narrow")
  local n = a.shape[axis]
  local count = math.tointeger(length)
  -- Torch7's narrow takes an empty run at the very end too (first = n + 1, length 0)
  first = (count == 0 and first == n + 1) and first or axis_index(first, n, 2, "narrow", "first")
  if count == nil or count < 0 or first + count - 1 > n then
    argerror(3, "narrow", ("length must be a whole number from 0 to %d, got %s"):format(n - first + 1,
             tostring(length)))
  end
  local shape, strides = a.shape, a.strides
  shape[axis] = count
  return view_of(a, (first - 1) * strides[axis], shape, strides)
end

-- The common calls of these take C paths (src/array.c's view methods and copy), which hand
-- the rest, errors included, to the Lua methods above.
for _, name in ipairs{"transpose", "reshape", "ravel", "view", "slice", "copy"} do
  methods[name] = core.view_method(name, methods[name])
end

-- Elements ----------------------------------------------------------------------------------

-- Byte offset (from the array's start) of flat element i (1-based, row-major).
local function element_offset(a, i, fname)
  if not is_array(a) then check_array(a, 0, fname) end
  local k = math.tointeger(i)
  -- raise blames the user's line: the C __index that calls these has none
  if k == nil then raise(("GPUArray index must be a whole number, got %s"):format(typename(i))) end
  if a.freed then raise("GPUArray has been freed") end
  if k < 1 or k > a.size then raise(("GPUArray index %d out of range (size %d)"):format(k, a.size)) end
  local shape, strides, r, off = a.shape, a.strides, k - 1, 0
  for d = #shape, 1, -1 do
    off = off + (r % shape[d]) * strides[d]
    r = r // shape[d]
  end
  return off
end

-- a[i] and a[i] = value for i other than a number: a bool GPUArray of a's shape is a mask,
-- NumPy's boolean indexing (CuPy's, Torch7's maskedSelect and maskedFill); integers (a
-- GPUArray or a plain table) are flat 1-based indices, as gpuarray.take and put take them
-- (NumPy's and PyCUDA's take and put, CuPy's integer array indexing of a flat array).
-- Returns "mask", "indices", or nil for a single element's index.  raise blames the user's line.
local function index_kind(a, i)
  if is_array(i) then
    if not is_array(a) then check_array(a, 0, "index") end   -- the hooks called by hand
    if a.freed then raise("GPUArray has been freed") end
    if i.freed then raise("GPUArray index array has been freed") end
    if i.dtype == "bool" then return "mask" end
    local kind = promote.kind(i.dtype)
    if kind == "i" or kind == "u" then return "indices" end
    raise(("GPUArray index array must hold integers or bools, got %s"):format(i.dtype))
  end
  if type(i) == "table" and getmetatable(i) == nil then return "indices" end
  return nil
end

local function check_mask(a, mask)
  local shape, want = mask.shape, a.shape
  local same = #shape == #want
  for d = 1, #want do same = same and shape[d] == want[d] end
  if not same then
    raise(("GPUArray mask index of shape %s does not match the array's shape %s")
          :format(promote.shape_text(shape), promote.shape_text(want)))
  end
  return mask
end

-- The value of a[i] = value as a's dtype stores it (checked as a[i] = value checks it).
local function stored_element(a, value)
  if is_scalar(value) then value = value.dtype == a.dtype and value.value or scalar_number(value) end
  local bad = promote.scalar_problem(value, a.dtype, true)
  if bad then raise(("cannot store %s in a %s GPUArray: %s"):format(tostring(value), a.dtype, bad)) end
  return value
end

methods.__element = function(a, i)
  local kind = index_kind(a, i)
  if kind == "mask" then        -- the selected elements, in row-major order (synchronizes)
    return require("gpu.compact").extract(check_mask(a, i), a)
  elseif kind == "indices" then  -- the elements at those indices, in their shape
    return M.take(a, i)
  end
  local off = element_offset(a, i, "index")
  local h = core.from_device(a.gpudata:offset(a.offset + off, a.itemsize), 1, a.dtype)
  return h[1]
end

methods.__setelement = function(a, i, value)
  local kind = index_kind(a, i)
  if kind == "mask" then        -- value where mask is true, in the order of a's kernels
    check_mask(a, i)
    if is_array(value) then
      raise("a[mask] = value takes a number, boolean or complex value, got a GPUArray " ..
            "(gpuarray.where(mask, b, a, {out = a}) takes b's elements where mask is true)")
    end
    local filled = core.array_empty({}, a.dtype):fill(store_value(stored_element(a, value), a.dtype))
    M.where(i, filled, a, {out = a})
    core.free_after(filled, nil)
    return
  elseif kind == "indices" then  -- a value, or values (repeated if fewer), at those indices
    M.put(a, i, value)
    return
  end
  local off = element_offset(a, i, "index")
  local value_bytes = host.empty(1, a.dtype)
  value_bytes[1] = stored_element(a, value)
  core.memcpy_htod(a.gpudata:offset(a.offset + off, a.itemsize), value_bytes)
end

-- Printing and Lua metamethods --------------------------------------------------------------

function GPUArray.__tostring(a)
  if not is_array(a) then check_array(a, 1, "tostring") end
  if a.freed then return "gpu.GPUArray(freed)" end
  local h = a:get()
  return format.array_string(a.shape, promote.kind(a.dtype), function(i) return h[i] end,
                            a.dtype)
end

local function refuse_compare(symbol, method)
  return function()
    error(("attempt to compare GPUArrays with '%s' (use a:%s(b), which returns a bool array)")
          :format(symbol, method), 2)
  end
end
GPUArray.__lt = refuse_compare("<", "lt")
GPUArray.__le = refuse_compare("<=", "le")

local binary = {
  add = "__add", sub = "__sub", mul = "__mul", div = "__div", floordiv = "__idiv",
  mod = "__mod", pow = "__pow", band = "__band", bor = "__bor", bxor = "__bxor",
  shl = "__shl", shr = "__shr",
}
for op, event in pairs(binary) do
  local operator = binary_operator(op)
  GPUArray[event] = operator
  -- gpuarray.add(x, y[, {out =, stream =}]) and a:add(y[, opts]); an array for opts is out
  M[op] = function(x, y, opts)
    if opts == nil then return operator(x, y) end
    if is_array(opts) then return operator(x, y, opts) end
    return binary_with_options(operator, op, 3, x, y, opts)
  end
  methods[op] = function(x, y, opts)
    if opts == nil then return operator(x, y) end
    if is_array(opts) then return operator(x, y, opts) end
    return binary_with_options(operator, op, 2, x, y, opts)
  end
  -- in place: a:iadd(y[, {stream =}]) -> a; a plain a and y take the C path with a as out,
  -- which it takes only where the result's dtype is a's
  local fname = "i" .. op
  local function in_place(a, y, opts)
    check_array(a, 0, fname)
    opts = check_options(opts, 2, fname, STREAM)
    local ty = operand_type(y, 1, fname)
    local _, result = operators.try_expression(op, {a.dtype, ty}, {"a", "b"})
    if result and weak_default[result] == nil and result ~= a.dtype and promote.info[result] then
      argerror(1, fname, ("the result is %s, which cannot be stored in place in a %s array")
                         :format(result, a.dtype))
    end
    apply(op, fname, {a, y}, {out = a, stream = opts.stream})
    return a
  end
  local in_place_operator = binary_operator(op, fname, function(a, y, _, stream)
    return in_place(a, y, stream and {stream = stream})
  end)
  methods[fname] = function(a, y, opts)
    if opts == nil then return in_place_operator(a, y, a) end
    local key = type(opts) == "table" and next(opts)
    if key == nil or key == "stream" and next(opts, key) == nil then   -- {} or {stream = s}
      return in_place_operator(a, y, a, opts.stream)
    end
    return in_place(a, y, opts)
  end
end
M.truediv = M.div
GPUArray.__unm = unary_operator("neg", "neg", true)
GPUArray.__bnot = unary_operator("bnot", "bnot", true)
local negative, invert = unary_operator("neg", "negative"), unary_operator("bnot", "invert")
function M.negative(x, opts)
  if opts == nil then return negative(x) end
  return unary_with_options(negative, "negative", 2, x, opts)
end
function M.invert(x, opts)
  if opts == nil then return invert(x) end
  return unary_with_options(invert, "invert", 2, x, opts)
end

-- Functions of two operands without options take the operators' C path, like `a + b`.
for _, op in ipairs{"eq", "ne", "lt", "le", "gt", "ge"} do
  local operator = binary_operator(op)
  methods[op] = function(x, y, opts)
    if opts == nil then return operator(x, y) end
    return binary_with_options(operator, op, 2, x, y, opts)
  end
  M[op] = function(x, y, opts)
    if opts == nil then return operator(x, y) end
    return binary_with_options(operator, op, 3, x, y, opts)
  end
end

local function traced(...)
  for i = 1, select("#", ...) do
    if fuse.is_traced((select(i, ...))) then return true end
  end
  return false
end

local dispatch_where = dispatcher("where")
function M.where(c, x, y, opts)
  local result = opts == nil and dispatch_where(nil, nil, c, x, y)    -- traced values: false
  if result then return result end
  if traced(c, x, y) then return fuse.apply("where", c, x, y) end
  return apply("where", "where", {c, x, y}, check_options(opts, 4, "where", OUT_STREAM), nil,
               opts == nil)
end

-- PyCUDA's if_positive(criterion, then_, else_): then_ where criterion > 0, else else_.
function M.if_positive(c, x, y, opts)
  if traced(c, x, y) then return fuse.apply("if_positive", c, x, y) end
  return apply("if_positive", "if_positive", {c, x, y}, check_options(opts, 4, "if_positive", OUT_STREAM))
end

-- NumPy's logical_and and logical_or (bool arrays of the operands' truth), and fmax and
-- fmin (maximum and minimum where a NaN loses to a number).
for _, op in ipairs{"logical_and", "logical_or", "fmax", "fmin", "maximum", "minimum"} do
  local operator = binary_operator(op)
  M[op] = function(x, y, opts)
    if traced(x, y) then return fuse.apply(op, x, y) end
    if opts == nil then return operator(x, y) end
    return binary_with_options(operator, op, 3, x, y, opts)
  end
end

-- NumPy's logical_not, isnan, isinf and isfinite (bool arrays) and sign (-1, 0 or 1 in the
-- operand's dtype, NaN for NaN; z / |z| for complex values).
for _, op in ipairs{"logical_not", "isnan", "isinf", "isfinite", "sign", "abs"} do
  local operator = unary_operator(op, op)
  M[op] = function(x, opts)
    if traced(x) then return fuse.apply(op, x) end
    if opts == nil then return operator(x) end
    return unary_with_options(operator, op, 2, x, opts)
  end
end

-- gpuarray.clip(a, lo, hi[, {out =, stream =}]), a:clip(lo, hi[, opts]): NumPy's
-- minimum(maximum(a, lo), hi), the bounds arrays (broadcast) or numbers; a NaN anywhere
-- gives NaN.  One-sided bounds are gpuarray.maximum and gpuarray.minimum.
local dispatch_clip = dispatcher("clip")
function M.clip(a, lo, hi, opts)
  local result = opts == nil and dispatch_clip(nil, nil, a, lo, hi)   -- traced values: false
  if result then return result end
  if traced(a, lo, hi) then return fuse.apply("clip", a, lo, hi) end
  return apply("clip", "clip", {a, lo, hi}, check_options(opts, 4, "clip", OUT_STREAM), nil,
               opts == nil)
end
function methods.clip(a, lo, hi, opts) return M.clip(a, lo, hi, opts) end

function methods.abs(x, opts) return M.abs(x, opts) end

-- a:mul_add(selffac, other, otherfac[, {out =, stream =}]) -> selffac * a + otherfac * other,
-- PyCUDA's, in one kernel (a fused one; the factors are kernel arguments, so any values
-- reuse it).
local fused_mul_add
function methods.mul_add(a, selffac, other, otherfac, opts)
  check_array(a, 0, "mul_add")
  local function check_factor(v, n)
    if not math.type(v) and not is_complex(v) then
      argerror(n, "mul_add", "number expected, got " .. typename(v), 2)
    end
  end
  check_factor(selffac, 1)
  check_array(other, 2, "mul_add")
  check_factor(otherfac, 3)
  opts = check_options(opts, 4, "mul_add", OUT_STREAM)
  local _, why = promote.broadcast_shapes({a.shape, other.shape})
  if why then argerror(2, "mul_add", why) end
  fused_mul_add = fused_mul_add or fuse.fuse(function(sx, x, sy, y) return sx * x + sy * y end, "mul_add")
  return fused_mul_add(selffac, a, otherfac, other, opts)
end

-- Joining arrays: concatenate and stack ----------------------------------------------------

local JOIN_OPTIONS = {axis = true, stream = true}

-- The arrays to join (fname's argument 1: a list of live GPUArrays on one device) and the
-- dtype NumPy gives their join.
local function join_list(arrays, fname)
  if type(arrays) ~= "table" or getmetatable(arrays) ~= nil then
    argerror(1, fname, "table of GPUArrays expected, got " .. typename(arrays), 2)
  end
  if arrays[1] == nil then argerror(1, fname, "at least one array is needed", 2) end
  local types = {}
  for k = 1, #arrays do
    local a = arrays[k]
    if not is_array(a) then
      argerror(1, fname, ("item #%d is a %s, not a GPUArray"):format(k, typename(a)), 2)
    end
    if a.freed then argerror(1, fname, ("array #%d has been freed"):format(k), 2) end
    if a.device ~= arrays[1].device then
      argerror(1, fname, ("array #%d is on device %d, array #1 on device %d")
                         :format(k, a.device, arrays[1].device), 2)
    end
    types[k] = a.dtype
  end
  return promote.result_type_of(types)
end

-- Copies a, cast to out's dtype, into the view of out at byte offset with shape and strides.
local function copy_into(out, offset, shape, strides, a, stream, fname)
  if a.size == 0 then return end
  local view = core.array_view(out, offset, out.dtype, shape, strides)
  apply("astype", fname, {a}, {out = view, stream = stream}, out.dtype)
end

-- Joins arrays (join_list's, whose join is of dtype) along axis into a new array, on stream;
-- errors name fname.
local function join_along(arrays, dtype, axis, stream, fname)
  local shape = arrays[1].shape
  shape[axis] = 0
  for k = 1, #arrays do
    local s = arrays[k].shape
    if #s ~= #shape then
      argerror(1, fname, ("array #%d is %d-d, array #1 %d-d"):format(k, #s, #shape), 2)
    end
    for d = 1, #shape do
      if d ~= axis and s[d] ~= shape[d] then
        argerror(1, fname, ("array #%d has shape %s, which differs from array #1's off axis %d")
                           :format(k, promote.shape_text(s), axis), 2)
      end
    end
    shape[axis] = shape[axis] + s[axis]
  end
  local out = core.array_empty(shape, dtype)
  local strides, offset = out.strides, 0
  for k = 1, #arrays do
    local a = arrays[k]
    local s = a.shape
    copy_into(out, offset, s, strides, a, stream, fname)
    offset = offset + s[axis] * strides[axis]
  end
  return out
end
M._join_list, M._join_along = join_list, join_along      -- for gpu.shape's hstack and the like

-- gpuarray.concatenate(arrays[, {axis = 1, stream = s}]): NumPy's and PyCUDA's, joining
-- along an existing axis (1-based; negatives count from the end).
function M.concatenate(arrays, opts)
  local dtype = join_list(arrays, "concatenate")
  opts = check_options(opts, 2, "concatenate", JOIN_OPTIONS)
  local first = arrays[1]
  if first.ndim == 0 then argerror(1, "concatenate", "0-d arrays cannot be concatenated") end
  local axis = check_axis(opts.axis or 1, first.ndim, 2, "concatenate")
  return join_along(arrays, dtype, axis, opts.stream, "concatenate")
end

-- gpuarray.stack(arrays[, {axis = 1, stream = s}]): NumPy's and PyCUDA's, joining arrays of
-- one shape along a new axis (1-based among the result's; negatives count from the end).
function M.stack(arrays, opts)
  local dtype = join_list(arrays, "stack")
  opts = check_options(opts, 2, "stack", JOIN_OPTIONS)
  local first = arrays[1]
  local axis = check_axis(opts.axis or 1, first.ndim + 1, 2, "stack")
  for k = 2, #arrays do
    if not promote.same_shape(arrays[k].shape, first.shape) then
      argerror(1, "stack", ("array #%d has shape %s, array #1 %s: stacked arrays need one shape")
                           :format(k, promote.shape_text(arrays[k].shape), promote.shape_text(first.shape)))
    end
  end
  local shape = first.shape
  table.insert(shape, axis, #arrays)
  local out = core.array_empty(shape, dtype)
  local strides = out.strides
  local step = table.remove(strides, axis)
  for k = 1, #arrays do
    copy_into(out, (k - 1) * step, first.shape, strides, arrays[k], opts.stream, "stack")
  end
  return out
end

-- Differences and outer products ----------------------------------------------------------

local DIFF_OPTIONS = {n = true, axis = true, stream = true}

-- gpuarray.diff(a[, {n = 1, axis = -1, stream = s}]), a:diff([opts]): NumPy's n-th
-- differences along axis, a[i + 1] - a[i] taken n times (of bools a[i + 1] ~= a[i], NumPy's
-- not_equal), in a's dtype; the axis n shorter, or empty once n reaches its length.  n = 0
-- gives a copy.
function M.diff(a, opts)
  check_array(a, 1, "diff")
  opts = check_options(opts, 2, "diff", DIFF_OPTIONS)
  if a.ndim == 0 then argerror(1, "diff", "a 0-d array has no axis to take differences along") end
  local n = opts.n == nil and 1 or math.tointeger(opts.n)
  if n == nil or n < 0 then
    argerror(2, "diff", "option 'n' must be a whole number from 0 on, got " .. tostring(opts.n))
  end
  local axis = check_axis(opts.axis or -1, a.ndim, 2, "diff")
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  if n == 0 then return a:copy(on_stream) end
  local difference = a.dtype == "bool" and M.ne or M.sub
  local result = a
  for _ = 1, n do
    local length = result.shape[axis]
    local count = math.max(length - 1, 0)
    local later = result:narrow(axis, math.min(2, length + 1), count)
    local differences = difference(later, result:narrow(axis, 1, count), on_stream)
    if result ~= a then core.free_after(result, stream) end   -- once the stream is done with it
    result = differences
  end
  return result
end
methods.diff = M.diff

-- gpuarray.broadcast_to(a, shape): NumPy's, a view of a as shape by its broadcasting rules
-- (axes of length 1, and missing leading ones, repeat with a stride of 0).  Its repeated
-- elements share memory: read it, or copy it, rather than write into it.
function M.broadcast_to(a, shape)
  check_array(a, 1, "broadcast_to")
  shape = check_shape(shape, 2, "broadcast_to")
  local strides = promote.broadcast_strides(a.shape, a.strides, shape)
  if strides == nil then
    argerror(2, "broadcast_to", ("cannot broadcast an array of shape %s to %s")
                                :format(promote.shape_text(a.shape), promote.shape_text(shape)))
  end
  return view_of(a, 0, shape, strides)
end

local PAD_OPTIONS = {mode = true, constant_values = true, stream = true}

-- pad's widths: {before, after} for each of ndim axes, from a whole number (every side), a
-- pair (every axis) or a pair an axis (or one pair in a list, for every axis), as NumPy's.
local function pad_widths(pad_width, ndim)
  local function whole(v) return math.type(v) == "integer" and v >= 0 end
  local function pair(v)
    return type(v) == "table" and getmetatable(v) == nil and #v == 2 and whole(v[1]) and whole(v[2])
  end
  local each
  if whole(pad_width) then each = {pad_width, pad_width}
  elseif pair(pad_width) then each = pad_width
  elseif type(pad_width) == "table" and getmetatable(pad_width) == nil and #pad_width == 1
         and pair(pad_width[1]) then each = pad_width[1]
  elseif type(pad_width) == "table" and getmetatable(pad_width) == nil and #pad_width == ndim then
    for d = 1, ndim do if not pair(pad_width[d]) then return nil end end
    return pad_width
  else return nil end
  local widths = {}
  for d = 1, ndim do widths[d] = each end
  return widths
end

-- gpuarray.pad(a, pad_width[, {mode = "constant", constant_values = 0, stream =}]): NumPy's
-- pad in its constant mode (the only one here), a new array with pad_width[d] = {before,
-- after} elements of constant_values around a along each axis d.  A fill, then a copy of a
-- into the middle.
function M.pad(a, pad_width, opts)
  check_array(a, 1, "pad")
  opts = check_options(opts, 3, "pad", PAD_OPTIONS)
  if opts.mode ~= nil and opts.mode ~= "constant" then
    argerror(3, "pad", ("option 'mode' must be 'constant' (the only mode so far), got %s")
                       :format(type(opts.mode) == "string" and "'" .. opts.mode .. "'" or typename(opts.mode)))
  end
  local widths = pad_widths(pad_width, a.ndim)
  if widths == nil then
    argerror(2, "pad", "pad_width must be a whole number, a pair {before, after} or one pair an axis")
  end
  local shape = a.shape
  for d = 1, a.ndim do shape[d] = shape[d] + widths[d][1] + widths[d][2] end
  local fill_value = opts.constant_values or 0
  if type(fill_value) ~= "number" and type(fill_value) ~= "boolean" and not is_complex(fill_value)
     and not is_scalar(fill_value) then
    argerror(3, "pad", "option 'constant_values' must be a number, a boolean or a complex value, got "
                       .. typename(fill_value))
  end
  local value = checked_store_value(fill_value, a.dtype, 3, "pad")
  local on_stream = opts.stream and {stream = opts.stream}
  local out = core.array_empty(shape, a.dtype):fill(value, on_stream)
  local out_strides, offset = out.strides, 0          -- the middle starts past the befores
  for d = 1, a.ndim do offset = offset + widths[d][1] * out_strides[d] end
  if a.size > 0 then
    apply("astype", "pad", {a}, {out = view_of(out, offset, a.shape, out_strides), stream = opts.stream},
          a.dtype)
  end
  return out
end

local MESHGRID_OPTIONS = {indexing = true}

-- gpuarray.meshgrid(x1, x2, ...[, {indexing = "xy" | "ij"}]) -> one array for each xi:
-- NumPy's coordinate arrays, each of every xi's size (flattened) along its own axis, copies
-- (NumPy's copy=True).  "xy" (the default) swaps the first two axes, as NumPy's Cartesian
-- indexing does; "ij" keeps them.  Each is one copy of a view that reads xi through zero
-- strides along the other axes.
function M.meshgrid(...)
  local inputs = {...}
  local opts
  local last = inputs[#inputs]
  if type(last) == "table" and getmetatable(last) == nil then opts = table.remove(inputs) end
  opts = check_options(opts, #inputs + 1, "meshgrid", MESHGRID_OPTIONS)
  local indexing = opts.indexing or "xy"
  if indexing ~= "xy" and indexing ~= "ij" then
    argerror(#inputs + 1, "meshgrid", ("option 'indexing' must be 'xy' or 'ij', got %s")
                                      :format(type(indexing) == "string" and "'" .. indexing .. "'" or typename(indexing)))
  end
  local shape = {}
  for i, x in ipairs(inputs) do
    check_array(x, i, "meshgrid")
    shape[i] = x.size
  end
  local swaps = indexing == "xy" and #inputs >= 2
  if swaps then shape[1], shape[2] = shape[2], shape[1] end
  local grids = {}
  for i, x in ipairs(inputs) do
    local flat = (x.is_contiguous and x or x:copy()):reshape(x.size)
    local axis = (swaps and i <= 2) and 3 - i or i
    local strides = {}
    for d = 1, #shape do strides[d] = d == axis and flat.itemsize or 0 end
    grids[i] = view_of(flat, 0, shape, strides):copy()
  end
  return table.unpack(grids)
end

local ROLL_OPTIONS = {axis = true, stream = true}

-- gpuarray.roll(a, shift[, {axis =, stream =}]), a:roll(shift[, opts]): NumPy's, a copy with
-- the elements moved shift places along axis (forward; negative: back), those pushed past the
-- end coming round to the start; without axis over the elements in row-major order.
function M.roll(a, shift, opts)
  check_array(a, 1, "roll")
  if math.type(shift) ~= "integer" then
    argerror(2, "roll", "shift must be an integer, got " .. (math.type(shift) or typename(shift)))
  end
  opts = check_options(opts, 3, "roll", ROLL_OPTIONS)
  local stream = opts.stream
  local on_stream = stream and {stream = stream}
  if opts.axis == nil then
    local copy = not a.is_contiguous and a:copy(on_stream) or nil
    local rolled = M.roll((copy or a):reshape(a.size), shift, {axis = 1, stream = stream})
    if copy then core.free_after(copy, stream) end
    return rolled:reshape(a.shape)
  end
  local axis = check_axis(opts.axis, a.ndim, 3, "roll")
  local n = a.shape[axis]
  local moved = n > 0 and shift % n or 0
  if moved == 0 then return a:copy(on_stream) end
  return M.concatenate({a:narrow(axis, n - moved + 1, moved), a:narrow(axis, 1, n - moved)},
                       {axis = axis, stream = stream})
end
methods.roll = M.roll

-- x's elements as an array of shape: a view, and where x is not contiguous, of a copy (also
-- returned, for the caller to free).
local function elements_as(x, shape, stream)
  if x.is_contiguous then return x:reshape(shape) end
  local copy = x:copy(stream and {stream = stream})
  return copy:reshape(shape), copy
end

local outer_product = binary_operator("mul", "outer")

-- gpuarray.outer(a, b[, {out =, stream =}]): NumPy's outer product of a's and b's elements
-- (each flattened): out[i][j] = a[i] * b[j], of the dtype a * b has.
function M.outer(a, b, opts)
  check_array(a, 1, "outer")
  check_array(b, 2, "outer")
  opts = check_options(opts, 3, "outer", OUT_STREAM)
  local stream = opts.stream
  local column, column_copy = elements_as(a, {a.size, 1}, stream)
  local row, row_copy = elements_as(b, {1, b.size}, stream)
  local result = outer_product(column, row, opts.out, stream)
  if column_copy then core.free_after(column_copy, stream) end   -- once the stream is done
  if row_copy then core.free_after(row_copy, stream) end
  return result
end

-- Diagonals and triangles ------------------------------------------------------------------

-- n, a count (argument number at of fname): a whole number from 0 on.
local function check_count(n, at, fname, what)
  local count = math.tointeger(n)
  if count == nil or count < 0 then
    argerror(at, fname, ("%s must be a whole number from 0 on, got %s"):format(what, tostring(n)), 2)
  end
  return count
end

-- Option k (or `name`): a whole number, 0 when absent.
local function check_offset(opts, name, at, fname)
  local k = opts[name]
  if k == nil then return 0 end
  if math.type(k) ~= "integer" then
    argerror(at, fname, ("option '%s' must be an integer, got %s"):format(name, math.type(k) or typename(k)), 2)
  end
  return k
end

-- Elements on diagonal k of an n1 x n2 matrix, and the element offset of its first along the
-- two axes (first axis, second axis).
local function diagonal_extent(n1, n2, k)
  if k >= 0 then return math.max(0, math.min(n1, n2 - k)), 0, k end
  return math.max(0, math.min(n1 + k, n2)), -k, 0
end

local EYE_OPTIONS = {k = true, dtype = true}

-- gpuarray.eye(n[, m][, {k =, dtype =}]): NumPy's n x m array (m = n by default) of zeros
-- with ones on diagonal k (0 the main one, positive above it, negative below), float64
-- unless named.
function M.eye(n, m, opts)
  local opts_at = 3
  if type(m) == "table" and opts == nil then m, opts, opts_at = nil, m, 2 end
  n = check_count(n, 1, "eye", "n")
  m = m == nil and n or check_count(m, 2, "eye", "m")
  opts = check_options(opts, opts_at, "eye", EYE_OPTIONS)
  local k = check_offset(opts, "k", opts_at, "eye")
  local dtype = opts.dtype == nil and "float64" or check_dtype(opts.dtype, opts_at, "eye")
  local out = core.array_zeros({n, m}, dtype)
  local length, row, column = diagonal_extent(n, m, k)
  if length > 0 then
    local strides = out.strides
    view_of(out, row * strides[1] + column * strides[2], {length}, {strides[1] + strides[2]}):fill(1)
  end
  return out
end

-- The view of diagonal opts.offset of a's axes opts.axis1 and opts.axis2 (checked options of
-- fname): the other axes first and the diagonal last.
local function diagonal_view(a, opts, fname)
  if a.ndim < 2 then argerror(1, fname, "a diagonal needs an array of 2 or more axes", 2) end
  local axis1 = check_axis(opts.axis1 or 1, a.ndim, 2, fname)
  local axis2 = check_axis(opts.axis2 or 2, a.ndim, 2, fname)
  if axis1 == axis2 then argerror(2, fname, "axis1 and axis2 must differ", 2) end
  local k = check_offset(opts, "offset", 2, fname)
  local shape, strides = a.shape, a.strides
  local length, first, second = diagonal_extent(shape[axis1], shape[axis2], k)
  local kept_shape, kept_strides = {}, {}
  for d = 1, a.ndim do
    if d ~= axis1 and d ~= axis2 then
      kept_shape[#kept_shape + 1], kept_strides[#kept_strides + 1] = shape[d], strides[d]
    end
  end
  kept_shape[#kept_shape + 1] = length
  kept_strides[#kept_strides + 1] = strides[axis1] + strides[axis2]
  return view_of(a, first * strides[axis1] + second * strides[axis2], kept_shape, kept_strides)
end

local DIAGONAL_OPTIONS = {offset = true, axis1 = true, axis2 = true}

-- a:diagonal([{offset = 0, axis1 = 1, axis2 = 2}]), gpuarray.diagonal(a[, opts]): NumPy's
-- diagonal, as a view: the elements a[i][i + offset] of the two axes, the other axes first
-- and the diagonal last.
function methods.diagonal(a, opts)
  check_array(a, 1, "diagonal")
  return diagonal_view(a, check_options(opts, 2, "diagonal", DIAGONAL_OPTIONS), "diagonal")
end
M.diagonal = methods.diagonal

local K_OPTION = {k = true}

-- gpuarray.diag(v[, {k = 0}]): NumPy's diag: of a 1-d v a square array of zeros with v on
-- diagonal k; of a 2-d v a copy of its diagonal k.
function M.diag(v, opts)
  check_array(v, 1, "diag")
  opts = check_options(opts, 2, "diag", K_OPTION)
  local k = check_offset(opts, "k", 2, "diag")
  if v.ndim == 2 then return diagonal_view(v, {offset = k}, "diag"):copy() end
  if v.ndim ~= 1 then argerror(1, "diag", ("a 1-d or 2-d array expected, got %d-d"):format(v.ndim)) end
  local n = v.size + math.abs(k)
  local out = core.array_zeros({n, n}, v.dtype)
  if v.size > 0 then
    apply("astype", "diag", {v}, {out = diagonal_view(out, {offset = k}, "diag")}, v.dtype)
  end
  return out
end

-- gpuarray.trace(a[, {offset =, axis1 =, axis2 =, stream =}]): NumPy's, the sum along the
-- diagonal: a 0-d array for a 2-d a (a:trace() gives its value), else one sum a diagonal.
local TRACE_OPTIONS = {offset = true, axis1 = true, axis2 = true, stream = true}
-- What a method such as a:trace() returns for result: a 0-d array's value (after the stream's
-- work; the array freed), else the array itself.
local function value_if_0d(result, stream)
  if result.ndim ~= 0 then return result end
  if stream then stream:synchronize() end
  local v = result[1]
  result:free()
  return v
end

local function trace(a, opts, value)
  check_array(a, 1, "trace")
  opts = check_options(opts, 2, "trace", TRACE_OPTIONS)
  local diagonal = diagonal_view(a, opts, "trace")
  local sums = M.sum(diagonal, {axis = diagonal.ndim, stream = opts.stream})
  if value then return value_if_0d(sums, opts.stream) end
  return sums
end
function M.trace(a, opts) return trace(a, opts, false) end
function methods.trace(a, opts) return trace(a, opts, true) end

-- gpuarray.tril(a[, {k = 0}]), gpuarray.triu(a[, {k = 0}]): NumPy's, a copy with the
-- elements above (tril) or below (triu) diagonal k of the last two axes zeroed.  One
-- elementwise kernel: an element's row and column come from its flat index.
local triangle_programs = {}     -- "tril" or "triu" -> dtype -> program
for _, name in ipairs{"tril", "triu"} do
  local keeps = name == "tril" and "<=" or ">="
  triangle_programs[name] = {}
  M[name] = function(a, opts)
    check_array(a, 1, name)
    opts = check_options(opts, 2, name, K_OPTION)
    local k = check_offset(opts, "k", 2, name)
    if a.ndim < 2 then argerror(1, name, "an array of 2 or more axes expected") end
    local dtype = a.dtype
    local p = triangle_programs[name][dtype]
    if p == nil then
      p = ew.program{
        expr = ("(lg_i %% columns - lg_i / columns %% rows %s k) ? a : (%s)0")
               :format(keeps, operators.ctype(dtype)),
        out = dtype, name = name .. "_" .. dtype,
        operands = {{name = "a", dtype = dtype}, {name = "rows", dtype = "int64", scalar = true},
                    {name = "columns", dtype = "int64", scalar = true},
                    {name = "k", dtype = "int64", scalar = true}}}
      triangle_programs[name][dtype] = p
    end
    local shape = a.shape
    return ew.launch(p, nil, nil, name, a, shape[#shape - 1], shape[#shape], k)
  end
end

local STREAM_OPTION = {stream = true}

-- gpuarray.tile(a, reps[, {stream =}]), a:tile(reps[, opts]): NumPy's tile, a copy of a
-- repeated reps[d] times along each axis d (reps a whole number or a list of them; a and reps
-- padded with leading axes of 1 to the longer's length).  One copy of a view that reads a
-- through a zero stride for each repetition's axis.
function M.tile(a, reps, opts)
  check_array(a, 1, "tile")
  local list = reps
  if math.type(reps) == "integer" then list = {reps}
  elseif type(reps) ~= "table" or getmetatable(reps) ~= nil then
    argerror(2, "tile", "reps must be a whole number or a list of them, got " .. typename(reps))
  end
  opts = check_options(opts, 3, "tile", STREAM_OPTION)
  local ndim = math.max(a.ndim, #list)
  local view_shape, view_strides, shape = {}, {}, {}
  for d = 1, ndim do
    local r = check_count(list[d - ndim + #list] or 1, 2, "tile", "each of reps")
    local n = a.shape[d - ndim + a.ndim] or 1
    view_shape[#view_shape + 1], view_strides[#view_strides + 1] = r, 0
    view_shape[#view_shape + 1], view_strides[#view_strides + 1] = n, a.strides[d - ndim + a.ndim] or 0
    shape[d] = r * n
  end
  local copy = view_of(a, 0, view_shape, view_strides):copy(opts.stream and {stream = opts.stream})
  return copy:reshape(shape)
end
methods.tile = M.tile

-- gpuarray.repeat_interleave(a, repeats[, {axis =, stream =}]), a:repeat_interleave(...):
-- NumPy's repeat (a Lua keyword; the name is PyTorch's), each element repeated `repeats`
-- times in a row along axis, or over the elements in row-major order without one (a 1-d
-- result).  One copy of a view that reads each element through a zero stride.
function M.repeat_interleave(a, repeats, opts)
  check_array(a, 1, "repeat_interleave")
  local count = check_count(repeats, 2, "repeat_interleave", "repeats")
  opts = check_options(opts, 3, "repeat_interleave", ROLL_OPTIONS)
  local on_stream = opts.stream and {stream = opts.stream}
  local flat_copy
  local x, axis = a, nil
  if opts.axis == nil then
    flat_copy = not a.is_contiguous and a:copy(on_stream) or nil
    x, axis = (flat_copy or a):reshape(a.size), 1
  else
    axis = check_axis(opts.axis, a.ndim, 3, "repeat_interleave")
  end
  local view_shape, view_strides, shape = {}, {}, x.shape
  for d = 1, x.ndim do
    view_shape[#view_shape + 1], view_strides[#view_strides + 1] = x.shape[d], x.strides[d]
    if d == axis then view_shape[#view_shape + 1], view_strides[#view_strides + 1] = count, 0 end
  end
  shape[axis] = shape[axis] * count
  local copy = view_of(x, 0, view_shape, view_strides):copy(on_stream)
  if flat_copy then core.free_after(flat_copy, opts.stream) end
  return copy:reshape(shape)
end
methods.repeat_interleave = M.repeat_interleave

local PTP_OPTIONS = {axis = true, stream = true}

-- gpuarray.ptp(a[, {axis =, stream =}]): NumPy's, the range max - min (over the whole array:
-- 0-d; integers wrap as NumPy's do); a:ptp() gives its value.  Two reductions and a
-- subtraction.
local function ptp(a, opts, value)
  check_array(a, 1, "ptp")
  opts = check_options(opts, 2, "ptp", PTP_OPTIONS)
  local kind = promote.kind(a.dtype)
  if kind == "b" or kind == "c" then
    argerror(1, "ptp", ("ptp is not defined for %s arrays"):format(a.dtype))
  end
  local axis = opts.axis ~= nil and check_axis(opts.axis, a.ndim, 2, "ptp") or nil
  if (axis and a.shape[axis] or a.size) == 0 then
    argerror(1, "ptp", "zero-size array to reduction operation maximum which has no identity")
  end
  local stream = opts.stream
  local reduce_opts = {axis = axis, stream = stream}
  local high, low = M.max(a, reduce_opts), M.min(a, reduce_opts)
  local range = M.sub(high, low, stream and {stream = stream})
  core.free_after(high, stream)
  core.free_after(low, stream)
  if value then return value_if_0d(range, stream) end
  return range
end
function M.ptp(a, opts) return ptp(a, opts, false) end
function methods.ptp(a, opts) return ptp(a, opts, true) end

-- The parts of complex arrays, as new arrays (NumPy's real and imag of a real array: a copy
-- and zeros; conj: a copy): gpuarray.real(a), and as in PyCUDA and NumPy the fields a.real
-- and a.imag and the method a:conj().
for _, op in ipairs{"real", "imag", "conj"} do
  M[op] = function(x, opts)
    if traced(x) then return fuse.apply(op, x) end
    return apply(op, op, {x}, check_options(opts, 2, op, OUT_STREAM))
  end
end
methods.conj = M.conj

-- Fields computed on reading (src/array.c's __index asks this table last).
methods.__properties = {
  real = M.real, imag = M.imag,
  T = methods.transpose,                       -- NumPy's and PyCUDA's a.T
}

-- gpuarray.GPUArray, also gpu.GPUArray: the type (getmetatable(a) == gpu.GPUArray) and,
-- called, PyCUDA's constructor GPUArray(shape[, dtype[, {gpudata = buffer, strides = s}]]):
-- a new array, or one on an existing Buffer (strides in bytes, row-major by default).
local CONSTRUCTOR_OPTIONS = {gpudata = true, strides = true}
setmetatable(GPUArray, {__call = function(_, shape, dtype, opts)
  shape = check_shape(shape, 1, "GPUArray")
  dtype = dtype == nil and "float64" or check_dtype(dtype, 2, "GPUArray")
  opts = check_options(opts, 3, "GPUArray", CONSTRUCTOR_OPTIONS)
  if opts.gpudata == nil then
    if opts.strides ~= nil then argerror(3, "GPUArray", "option 'strides' needs option 'gpudata'") end
    return core.array_empty(shape, dtype)
  end
  if getmetatable(opts.gpudata) ~= core.types.Buffer then
    argerror(3, "GPUArray", "option 'gpudata' must be a gpu.Buffer, got " .. typename(opts.gpudata))
  end
  return core.array_view(opts.gpudata, 0, dtype, shape, opts.strides)
end})
M.GPUArray = GPUArray

-- install(gpu): gpu.gpuarray and the shortcuts.  (Reachable as gpu.gpuarray.install, since
-- gpu.gpuarray is this table, so it checks its argument.)
function M.install(gpu)
  if type(gpu) ~= "table" then argerror(1, "install", "table expected, got " .. typename(gpu)) end
  gpu.gpuarray = M
  gpu.GPUArray = GPUArray
  gpu.to_gpu, gpu.empty, gpu.zeros, gpu.ones, gpu.full, gpu.arange, gpu.linspace =
    M.to_gpu, M.empty, M.zeros, M.ones, M.full, M.arange, M.linspace
  gpu.empty_like, gpu.zeros_like = M.empty_like, M.zeros_like
  gpu.ElementwiseKernel = ew.ElementwiseKernel
  gpu.cumath = require "gpu.cumath"
  return M
end

return M
