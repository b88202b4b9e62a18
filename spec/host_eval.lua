-- Evaluates the C expressions of gpu.operators on the CPU: the helpers of
-- kernels/elementwise.cu and the expressions compiled as host C++ by clang++ (or g++) with
-- UndefinedBehaviorSanitizer (any overflow or bad shift the generated C relies on aborts),
-- so that the generated code's values can be checked against spec/array_reference.lua
-- without a device.  Not available where neither compiler is installed.

local operators = require "gpu.operators"
local promote = require "gpu.promote"

local M = {}

local function sh(command)
  local p = assert(io.popen(command .. " 2>&1"))
  local out = p:read("a")
  return out, p:close()
end

-- clang++, else g++ (build-essential, which CI installs, brings it and its UBSan runtime)
local function find_compiler()
  for _, name in ipairs{os.getenv("HOST_EVAL_CXX") or "clang++", "g++"} do
    local out, ok = sh("command -v " .. name)
    if ok then return (out:gsub("%s+$", "")) end
  end
  return nil
end

-- The C literal of Lua value v as dtype t.
local function literal(v, t)
  local k = promote.kind(t)
  local c = operators.ctype(t)
  if k == "b" then
    if type(v) == "number" then v = v ~= 0 end
    return v and "true" or "false"
  end
  if k == "f" then
    if v ~= v then return ("((%s)NAN)"):format(c) end
    if v == math.huge then return ("((%s)INFINITY)"):format(c) end
    if v == -math.huge then return ("((%s)-INFINITY)"):format(c) end
    return ("((%s)%a)"):format(c, v)
  end
  return ("((%s)0x%xULL)"):format(c, math.tointeger(v))
end

-- eval(groups) -> results: each group is {op, types, lists[, target]}: operation op over
-- operands of dtypes types (no weak types), evaluated at every combination of the values in
-- lists[1], lists[2], ... (the first operand's varying slowest).  results[g][n] is the n-th
-- value of group g: integers as Lua integers (uint64 as its 64 bits), floats as numbers,
-- bools as booleans; group.result_type is the result's dtype.  Raises with the compiler's or
-- the sanitizer's output.
function M.eval(groups)
  local cxx = find_compiler()
  if not cxx then error("no C++ compiler") end
  local kernels = assert(io.open("kernels/elementwise.cu")):read("a")
  local lines = {
    "#include <cstdio>", "#include <cmath>",
    "#define __device__", "#define __forceinline__ inline",
    kernels,
  }
  for g, group in ipairs(groups) do
    local op, types, lists, target = group[1], group[2], group[3], group[4]
    local names, params = {}, {}
    for k, t in ipairs(types) do
      local c = operators.ctype(t)
      local items = {}
      for n, v in ipairs(lists[k]) do items[n] = literal(v, t) end
      lines[#lines + 1] = ("static const %s g%d_%d[] = {%s};"):format(c, g, k, table.concat(items, ", "))
      names[k] = "x" .. k
      params[k] = ("%s x%d"):format(c, k)
    end
    local e, rt = operators.expression(op, types, names, target)
    group.result_type = rt
    local c = operators.ctype(rt)
    local k = promote.kind(rt)
    -- noinline: the operands are parameters the compiler cannot fold, so the sanitizer
    -- sees the arithmetic
    lines[#lines + 1] = ("__attribute__((noinline)) static void f%d(%s) {"):format(g, table.concat(params, ", "))
    lines[#lines + 1] = ("  %s r = (%s)(%s);"):format(c, c, e)
    if k == "f" then lines[#lines + 1] = '  printf("%a\\n", (double)r);'
    elseif k == "b" then lines[#lines + 1] = '  printf("%d\\n", r ? 1 : 0);'
    else lines[#lines + 1] = '  printf("%llx\\n", (unsigned long long)(long long)r);' end
    lines[#lines + 1] = "}"
    -- nested loops over every combination
    local loop, args = {}, {}
    for k2 = 1, #types do
      loop[#loop + 1] = ("for (unsigned i%d = 0; i%d < sizeof g%d_%d / sizeof g%d_%d[0]; i%d++)")
                        :format(k2, k2, g, k2, g, k2, k2)
      args[k2] = ("g%d_%d[i%d]"):format(g, k2, k2)
    end
    lines[#lines + 1] = ("static void run%d() { %s f%d(%s); }"):format(g, table.concat(loop, " "), g,
                                                                     table.concat(args, ", "))
  end
  lines[#lines + 1] = "int main() {"
  for g = 1, #groups do lines[#lines + 1] = ("  run%d();"):format(g) end
  lines[#lines + 1] = "  return 0;\n}\n"
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local f = assert(io.open(dir .. "/eval.cpp", "w"))
  f:write(table.concat(lines, "\n"))
  f:close()
  local out, ok = sh(("%s -O0 -w -fsanitize=undefined -fno-sanitize-recover=all -o %s/eval %s/eval.cpp")
                     :format(cxx, dir, dir))
  if not ok then os.execute("rm -rf " .. dir); error(cxx .. " failed:\n" .. out) end
  out, ok = sh(dir .. "/eval")
  os.execute("rm -rf " .. dir)
  if not ok then error("the generated C misbehaved:\n" .. out) end
  local results, g, n = {}, 1, 0
  local function count(group)
    local c = 1
    for _, list in ipairs(group[3]) do c = c * #list end
    return c
  end
  local want = count(groups[1])
  results[1] = {}
  for line in out:gmatch("[^\n]+") do
    while n == want do
      g, n = g + 1, 0
      results[g] = {}
      want = count(groups[g])
    end
    n = n + 1
    local rt = groups[g].result_type
    local k = promote.kind(rt)
    local v
    if k == "f" then
      v = line:find("nan") and 0 / 0 or line == "inf" and math.huge or
          line == "-inf" and -math.huge or tonumber(line)
    elseif k == "b" then v = line == "1"
    else
      v = math.tointeger(tonumber(line, 16))
      local bits = 8 * promote.info[rt].size
      if bits < 64 then
        v = v & ((1 << bits) - 1)
        if k == "i" and v >= 1 << (bits - 1) then v = v - (1 << bits) end
      end
    end
    results[g][n] = v
  end
  return results
end

M.available = function() return find_compiler() ~= nil end

return M
