-- gpu.signature: reads the parameter types of each __global__ function in CUDA C source,
-- so that kernels can take plain Lua numbers (converted to the declared type, range-checked).
--
-- parse(source) -> { kernel_name = "PPfi", ... } using the letters of f:prepare():
--   P pointer, ? bool, b/B int8/uint8, h/H int16/uint16, i/I int32/uint32, q/Q int64/uint64,
--   e float16, E bfloat16, f float32, d float64, F complex64, D complex128, V anything else
--   passed by value (a struct).
-- Templates are skipped (their names are mangled); unknown types become V, whose size
-- the driver still checks.

local M = {}

local scalar_letters = {
  ["bool"] = "?",
  ["char"] = "b", ["signed char"] = "b", ["unsigned char"] = "B",
  ["short"] = "h", ["short int"] = "h", ["signed short"] = "h", ["unsigned short"] = "H",
  ["unsigned short int"] = "H",
  ["int"] = "i", ["signed"] = "i", ["signed int"] = "i", ["unsigned"] = "I",
  ["unsigned int"] = "I",
  ["long"] = "q", ["long int"] = "q", ["signed long"] = "q", ["unsigned long"] = "Q",
  ["unsigned long int"] = "Q",
  ["long long"] = "q", ["long long int"] = "q", ["signed long long"] = "q",
  ["unsigned long long"] = "Q", ["unsigned long long int"] = "Q",
  ["int8_t"] = "b", ["uint8_t"] = "B", ["int16_t"] = "h", ["uint16_t"] = "H",
  ["int32_t"] = "i", ["uint32_t"] = "I", ["int64_t"] = "q", ["uint64_t"] = "Q",
  ["size_t"] = "Q", ["ptrdiff_t"] = "q", ["ssize_t"] = "q", ["intptr_t"] = "q",
  ["uintptr_t"] = "Q",
  ["__half"] = "e", ["half"] = "e", ["__nv_bfloat16"] = "E", ["nv_bfloat16"] = "E",
  ["float"] = "f", ["double"] = "d",
  -- complex: kernels/common.cu's types, and CUDA's own from cuComplex.h (the same layout)
  ["lg_complex64"] = "F", ["lg_complex128"] = "D", ["cuFloatComplex"] = "F", ["cuComplex"] = "F",
  ["cuDoubleComplex"] = "D",
  -- texture and surface objects: handles (unsigned long long) that gpu.TextureObject and
  -- gpu.SurfaceObject arguments fill in
  ["cudaTextureObject_t"] = "Q", ["cudaSurfaceObject_t"] = "Q", ["CUtexObject"] = "Q",
  ["CUsurfObject"] = "Q",
}

-- Words of C's built-in type names: never a parameter's name.
local type_words = {
  char = true, short = true, int = true, long = true, signed = true, unsigned = true,
  float = true, double = true, bool = true,
}

-- Words that qualify a parameter without changing how it is passed.
local qualifiers = {
  ["const"] = true, ["volatile"] = true, ["__restrict__"] = true, ["__restrict"] = true,
  ["restrict"] = true, ["__grid_constant__"] = true, ["struct"] = true, ["enum"] = true,
  ["std"] = true,
}

-- Source with comments, string literals and preprocessor lines blanked out.  Each pass runs
-- only where its first character occurs: a SourceModule in a new process parses its source
-- on every disk-cache hit.
local function strip(source)
  if source:find("/", 1, true) then
    source = source:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
  end
  if source:find('"', 1, true) then source = source:gsub('"[^"\n]*"', '""') end
  -- attributes that take parenthesised arguments would look like the parameter list
  for _, attr in ipairs{"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__"} do
    if source:find(attr, 1, true) then source = source:gsub(attr .. "%s*%b()", " ") end
  end
  if not source:find("#", 1, true) then return source end
  return (("\n" .. source):gsub("\n%s*#[^\n]*", "\n"))
end

-- The letter for one declared parameter ("const float *__restrict__ a").
local function param_letter(decl)
  if decl:find("[%*%[&]") then return "P" end
  local words = {}
  for word in decl:gmatch("[%w_:]+") do
    if word:find(":", 1, true) then word = word:gsub("^std::", "") end
    if not qualifiers[word] then words[#words + 1] = word end
  end
  -- the last word is the parameter's name, unless it is part of the type (an unnamed
  -- "unsigned char" is not an unsigned called char)
  if #words >= 2 and not type_words[words[#words]] then table.remove(words) end
  return scalar_letters[table.concat(words, " ")] or "V"
end

-- Splits a parameter list at top-level commas, jumping from bracket to bracket.
local function split_params(list)
  local params, depth, start, i = {}, 0, 1, 1
  while true do
    i = list:find("[%(%)<>%[%]{},]", i)
    if not i then break end
    local c = list:byte(i)
    if c == 40 or c == 60 or c == 91 or c == 123 then depth = depth + 1         -- ( < [ {
    elseif c == 44 then                                                         -- ,
      if depth == 0 then
        params[#params + 1] = list:sub(start, i - 1)
        start = i + 1
      end
    else depth = depth - 1 end                                                  -- ) > ] }
    i = i + 1
  end
  params[#params + 1] = list:sub(start)
  return params
end

-- The position of the parenthesis that closes the one at open, or nil.
local function closing(text, open)
  local depth, i = 0, open
  while true do
    i = text:find("[()]", i)
    if not i then return nil end
    depth = depth + (text:byte(i) == 40 and 1 or -1)
    if depth == 0 then return i end
    i = i + 1
  end
end

function M.parse(source)
  if type(source) ~= "string" then
    error("bad argument #1 to 'parse' (source string expected, got " .. type(source) .. ")", 2)
  end
  local text = strip(source)
  local kernels = {}
  local pos = 1
  while true do
    local s, e = text:find("__global__", pos, true)
    if not s then break end
    pos = e + 1
    local before = text:sub(math.max(1, s - 200), s - 1)
    local templated = before:match("template%s*<[^;{}]*>%s*[%w_%s\"]*$") ~= nil
    local open = text:find("(", pos, true)
    if open then
      local head = text:sub(pos, open - 1)
      local name = head:match("([%a_][%w_]*)%s*$")
      local close = closing(text, open)
      if name and close and not templated and not head:find("[;{}]") then
        local list = text:sub(open + 1, close - 1)
        local letters = {}
        if not list:match("^%s*$") and not list:match("^%s*void%s*$") then
          for _, decl in ipairs(split_params(list)) do
            letters[#letters + 1] = param_letter(decl)
          end
        end
        kernels[name] = table.concat(letters)
      end
      pos = close or open + 1
    end
  end
  return kernels
end

return M
