-- gpu.fuse(fn): runs fn once per input signature over traced stand-ins for its arguments,
-- recording the expression it builds, then evaluates that whole expression as one
-- generated elementwise kernel.  `gpu.fuse(function(x, y) return 2 * x + 3 * y end)` reads
-- each input once and writes the output once, where the unfused form makes three passes
-- and two temporaries.
--
-- What traces: the arithmetic and bitwise operators, unary minus and ~, the comparison
-- methods (x:lt(y), ...), x:astype(dtype), gpu.gpuarray's elementwise functions (where,
-- if_positive, maximum, minimum, fmax, fmin, abs, clip, sign, isnan, isinf, isfinite and the
-- logical ones), and the gpu.cumath functions, with Lua numbers mixed in.  What cannot trace is refused with an error that says so: reading
-- values (x:get(), x[i], tostring), Lua comparisons (x < y, which would steer Lua control
-- flow by array values), passing a traced array to a raw kernel or to anything else that
-- needs real device memory.

local M = {}

local Traced = {__name = "gpu.fuse traced array"}
Traced.__index = {}

local function is_traced(v) return getmetatable(v) == Traced end
M.is_traced = is_traced

local function refuse(what)
  error(("gpu.fuse: cannot fuse %s"):format(what), 3)
end

-- A node of the expression: an input, a Lua number, or an operation on nodes.
local function node(op, args, extra)
  local n = {op = op, args = args}
  if extra then for k, v in pairs(extra) do n[k] = v end end
  return setmetatable(n, Traced)
end

local is_complex = require("gpu.complex").is_complex
local is_scalar = require("gpu.args").is_scalar

-- Operands as nodes: traced arrays stay, Lua numbers and complex values become constants,
-- typed scalars (gpu.float32(2)) constants of their dtype.
local function operand(v, op)
  if is_traced(v) then return v end
  if math.type(v) or is_complex(v) then return node("const", {}, {value = v}) end
  if is_scalar(v) then return node("const", {}, {value = v.value, dtype = v.dtype}) end
  refuse(("'%s' on a %s (only traced arrays and Lua numbers can be combined)")
         :format(op, type(v) == "userdata" and (getmetatable(v) or {}).__name or type(v)))
end

local binary_ops = {
  __add = "add", __sub = "sub", __mul = "mul", __div = "div", __idiv = "floordiv",
  __mod = "mod", __pow = "pow", __band = "band", __bor = "bor", __bxor = "bxor",
  __shl = "shl", __shr = "shr",
}
for event, op in pairs(binary_ops) do
  Traced[event] = function(a, b) return node(op, {operand(a, op), operand(b, op)}) end
end
Traced.__unm = function(a) return node("neg", {a}) end
Traced.__bnot = function(a) return node("bnot", {a}) end

for _, op in ipairs {"eq", "ne", "lt", "le", "gt", "ge"} do
  Traced.__index[op] = function(a, b) return node(op, {operand(a, op), operand(b, op)}) end
end

function Traced.__index.astype(a, dtype)
  require("gpu.core").dtype(dtype)   -- unknown names fail here, naming the dtype
  return node("astype", {a}, {dtype = dtype})
end

-- What a traced array cannot do, each with the reason.
local refusals = {
  __lt = "'<' on traced arrays (Lua comparisons steer control flow by array values; " ..
         "use x:lt(y) and gpuarray.where)",
  __le = "'<=' on traced arrays (Lua comparisons steer control flow by array values; " ..
         "use x:le(y) and gpuarray.where)",
  __eq = "'==' on traced arrays (use x:eq(y))",
  __len = "'#' on a traced array (its size is not known while tracing)",
  __concat = "'..' on a traced array",
  __call = "a call of a traced array",
  __tostring = "tostring() of a traced array (values are not known while tracing)",
  __close = "a traced array in a <close> variable",
  __newindex = "assignment into a traced array",
}
for event, what in pairs(refusals) do
  Traced[event] = function() refuse(what) end
end

setmetatable(Traced.__index, {__index = function(_, key)
  if key == "get" or key == "get_async" then
    refuse(("':%s()' (it reads array values on the host)"):format(key))
  elseif math.type(key) then
    refuse("indexing a traced array (element values are not known while tracing)")
  end
  refuse(("':%s' on a traced array (only operators, comparisons and astype trace)")
         :format(tostring(key)))
end})

-- Functions of gpu.gpuarray and gpu.cumath call this when given a traced argument.
function M.apply(fname, ...)
  local args = table.pack(...)
  local nodes = {}
  for i = 1, args.n do nodes[i] = operand(args[i], fname) end
  return node("call", nodes, {fname = fname})
end

-- trace(fn, inputs) -> list of output nodes.  inputs[i] describes argument i: {dtype = ...}
-- for an array, {scalar = "int" | "float" | "complex"} for a Lua number or complex value.
function M.trace(fn, inputs)
  local args = {}
  for i, input in ipairs(inputs) do
    args[i] = node("input", {}, {index = i, dtype = input.dtype, scalar = input.scalar})
  end
  local results = table.pack(fn(table.unpack(args, 1, #inputs)))
  if results.n == 0 then refuse("a function that returns nothing") end
  for i = 1, results.n do
    if not is_traced(results[i]) then
      refuse(("a function whose result #%d is a %s, not an expression of its arrays")
             :format(i, type(results[i])))
    end
  end
  return results
end

-- Code generation ------------------------------------------------------------------------

-- A C literal for a Lua number (or complex value) that the constant's weak type can hold
-- exactly.
local literal
function literal(value)
  if is_complex(value) then
    return ("lg_complex128(%s, %s)"):format(literal(value.re), literal(value.im))
  end
  if math.type(value) == "integer" then
    if value == math.mininteger then return "(-9223372036854775807LL - 1)" end
    return ("%dLL"):format(value)
  end
  if value ~= value then return "(0.0 / 0.0)" end
  if value == math.huge then return "(1.0 / 0.0)" end
  if value == -math.huge then return "(-1.0 / 0.0)" end
  return ("%.17g"):format(value)
end

-- program_spec(results[i], inputs) -> the arguments of elementwise.program: the traced tree
-- becomes a __device__ function that computes each node once, in order (a value used twice
-- is computed once), and the kernel's expression calls it with the operands.
local function program_spec(result, inputs, kernel_name)
  local operators = require "gpu.operators"
  local ctype = operators.ctype   -- the type values compute in (float for float16)
  local body, done, temps = {}, {}, 0
  local function emit(n)
    if done[n] then return done[n] end
    local op, info = rawget(n, "op"), nil
    if op == "input" then
      info = {expr = "in" .. rawget(n, "index"), type = rawget(n, "dtype") or "weak-" .. rawget(n, "scalar")}
    elseif op == "const" and rawget(n, "dtype") then      -- a typed scalar's value
      local value, dtype = rawget(n, "value"), rawget(n, "dtype")
      local expr = type(value) == "boolean" and tostring(value) or literal(value)
      info = {expr = ("((%s)%s)"):format(ctype(dtype), expr), type = dtype}
    elseif op == "const" then
      local value = rawget(n, "value")
      info = {expr = literal(value), type = is_complex(value) and "weak-complex" or
                                             math.type(value) == "integer" and "weak-int" or "weak-float"}
    else
      local types, exprs = {}, {}
      for i, arg in ipairs(rawget(n, "args")) do
        local a = emit(arg)
        types[i], exprs[i] = a.type, a.expr
      end
      local opname = op == "call" and rawget(n, "fname") or op
      local expr, dtype = operators.expression(opname, types, exprs, rawget(n, "dtype"))
      temps = temps + 1
      local name = "t" .. temps
      body[#body + 1] = ("  const %s %s = %s;"):format(ctype(dtype), name, expr)
      info = {expr = name, type = dtype}
    end
    done[n] = info
    return info
  end
  local top = emit(result)
  if top.type:match("^weak") then
    refuse("a function whose result does not depend on its array arguments")
  end
  local params, operands, call = {}, {}, {}
  for i, input in ipairs(inputs) do
    local dtype = input.dtype or ({int = "int64", float = "float64", complex = "complex128"})[input.scalar]
    params[i] = ("%s in%d"):format(ctype(input.dtype or "weak-" .. input.scalar), i)
    operands[i] = {name = "in" .. i, dtype = dtype, scalar = input.scalar ~= nil or input.typed}
    call[i] = "in" .. i
  end
  local fn = kernel_name .. "_expr"
  local preamble = ("__device__ __forceinline__ %s %s(%s)\n{\n%s\n  return %s;\n}\n"):format(
    ctype(top.type), fn, table.concat(params, ", "), table.concat(body, "\n"), top.expr)
  return {expr = ("%s(%s)"):format(fn, table.concat(call, ", ")), out = top.type,
          name = kernel_name, operands = operands, preamble = preamble}
end
M.program_spec = program_spec

-- Tracing errors that are not our own refusals come from the user's function (or from a
-- library function it called that cannot take a traced array): say so.
local function trace_or_explain(fn, inputs)
  local ok, results = pcall(M.trace, fn, inputs)
  if ok then return results end
  local message = type(results) == "string" and results or tostring(results)
  if message:find("gpu.fuse: ", 1, true) then error(message, 0) end
  error("gpu.fuse: cannot trace the function: " .. message, 0)
end

local fuse_options = {out = true, stream = true}

-- gpu.fuse(fn) -> fused: fused(...) runs fn's expression of its array (and number)
-- arguments as one kernel per result, compiled once per argument signature (dtypes and
-- which arguments are integers or floats); shapes broadcast as in the operators.  A trailing
-- table holds options: out (the array the single result goes to) and stream.
function M.fuse(fn, name)
  local gpu = require "gpu"
  if type(fn) ~= "function" then gpu._argerror(1, "fuse", "function expected, got " .. type(fn)) end
  if name ~= nil and (type(name) ~= "string" or not name:match("^[%a_][%w_]*$")) then
    gpu._argerror(2, "fuse", "kernel name must be a C identifier")
  end
  local GPUArray = require("gpu.core").types.GPUArray
  local by_signature = {}
  name = name or "fused"

  return function(...)
    local n = select("#", ...)
    local args = {...}
    local opts = args[n]
    if type(opts) == "table" and getmetatable(opts) == nil then
      n = n - 1
      opts = gpu._check_options(opts, n + 1, name, fuse_options)
    else
      opts = {}
    end
    local inputs, key, arrays = {}, {}, 0
    for i = 1, n do
      local v = args[i]
      if getmetatable(v) == GPUArray then
        inputs[i] = {dtype = v.dtype}
        arrays = arrays + 1
      elseif math.type(v) then
        inputs[i] = {scalar = math.type(v) == "integer" and "int" or "float"}
      elseif is_complex(v) then
        inputs[i] = {scalar = "complex"}
      elseif is_scalar(v) then      -- a typed scalar: its dtype counts, as a NumPy scalar's
        inputs[i] = {dtype = v.dtype, typed = true}
      else
        gpu._argerror(i, name, "GPUArray or number expected, got " ..
                      ((getmetatable(v) or {}).__name or type(v)))
      end
      key[i] = (inputs[i].typed and "scalar " or "") .. (inputs[i].dtype or inputs[i].scalar)
    end
    if arrays == 0 then gpu._argerror(1, name, "at least one GPUArray argument expected") end
    key = table.concat(key, ",")
    local elementwise = require "gpu.elementwise"
    local programs = by_signature[key]
    if programs == nil then
      programs = {}
      local results = trace_or_explain(fn, inputs)
      for r = 1, results.n do
        programs[r] = elementwise.program(program_spec(results[r], inputs, name))
      end
      by_signature[key] = programs
    end
    if opts.out ~= nil and #programs ~= 1 then
      gpu._argerror(n + 1, name, "option 'out' needs a function with one result")
    end
    local outs = {}
    for r, p in ipairs(programs) do
      outs[r] = elementwise.launch(p, opts.out, opts.stream, name, table.unpack(args, 1, n))
    end
    return table.unpack(outs, 1, #programs)
  end
end

-- gpuarray's where/maximum/minimum/abs and the cumath functions call M.apply themselves
-- when handed a traced array.
-- fuse.once(name, fn): the fused function of fn, made on the first call for name and the
-- same one after (the library's own expressions, whose closures are made anew each call:
-- name is the key; it names the kernel too, other characters than letters, digits and _ as _).
local made_once = {}
function M.once(name, fn)
  local f = made_once[name]
  if f == nil then
    f = M.fuse(fn, (name:gsub("[^%w_]", "_")))
    made_once[name] = f
  end
  return f
end

function M.install(gpu)
  gpu.fuse = M.fuse
end

return M
