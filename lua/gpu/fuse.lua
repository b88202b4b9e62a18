-- gpu.fuse(fn): runs fn once per input signature over traced stand-ins for its arguments,
-- recording the expression it builds, then evaluates that whole expression as one
-- generated elementwise kernel.  `gpu.fuse(function(x, y) return 2 * x + 3 * y end)` reads
-- each input once and writes the output once, where the unfused form makes three passes
-- and two temporaries.
--
-- What traces: the arithmetic and bitwise operators, unary minus and ~, the comparison
-- methods (x:lt(y), ...), x:astype(dtype), gpu.gpuarray.where/maximum/minimum/abs and the
-- gpu.cumath functions, with Lua numbers mixed in.  What cannot trace is refused with an
-- error that says so: reading values (x:get(), x[i], tostring), Lua comparisons (x < y,
-- which would steer Lua control flow by array values), passing a traced array to a raw
-- kernel or to anything else that needs real device memory.

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
  local n = setmetatable({op = op, args = args}, Traced)
  if extra then for k, v in pairs(extra) do n[k] = v end end
  return n
end

-- Operands as nodes: traced arrays stay, Lua numbers become constants.
local function operand(v, op)
  if is_traced(v) then return v end
  if math.type(v) then return node("const", {}, {value = v}) end
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
-- for an array, {scalar = "int" | "float"} for a Lua number.
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

return M
