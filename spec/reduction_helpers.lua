-- Shared by specs 30-33: device arrays from Lua tables and back, through the public names
-- (gpu.to_gpu, a:get()) where they exist, else through the core (array_empty + memcpy).
local gpu = require "gpu"
local core = require "gpu.core"

local M = {}

function M.to_gpu(values, dtype)
  local h = gpu.host.from_table(values, dtype)
  if gpu.to_gpu then return gpu.to_gpu(h) end
  local a = core.array_empty(h.shape, dtype)
  gpu.memcpy_htod(a.gpudata, h)
  return a
end

-- A device array of n elements of dtype, element i = fn(i), built through a host array.
function M.generate(n, dtype, fn)
  local h = gpu.host.empty(n, dtype)
  local values = {}
  for i = 1, n do
    local v = fn(i)
    h[i] = v
    values[i] = h[i]   -- as stored (rounded to the dtype)
  end
  local a
  if gpu.to_gpu then a = gpu.to_gpu(h)
  else
    a = core.array_empty(n, dtype)
    gpu.memcpy_htod(a.gpudata, h)
  end
  return a, values
end

-- A HostArray copy of a (arrays the reduction layer made: offset 0, contiguous).
function M.get(a)
  if a.get then return a:get() end
  return gpu.from_device(a.gpudata, a.shape, a.dtype)
end

-- The value of a 0-d array.
function M.value(a)
  return M.get(a)[1]
end

-- A strided view of a: every step-th element of a 1-d array.
function M.every(a, step)
  return core.array_view(a, 0, a.dtype, {(a.size + step - 1) // step}, {a.itemsize * step})
end

-- The transpose of a 2-d array, as a view.
function M.transposed(a)
  local shape, strides = a.shape, a.strides
  return core.array_view(a, 0, a.dtype, {shape[2], shape[1]}, {strides[2], strides[1]})
end

-- A reshaped view of a contiguous array.
function M.reshaped(a, shape)
  return core.array_view(a, 0, a.dtype, shape)
end

M.sizes = {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025,
           100001}

M.all_dtypes = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                "float16", "bfloat16", "float32", "float64"}

-- Random element values that every reduction of dtype can check exactly or tightly.
function M.random_value(dtype)
  if dtype == "bool" then return math.random() < 0.5 end
  if dtype == "float16" or dtype == "bfloat16" then return math.random(-64, 64) / 64 end
  if dtype == "float32" or dtype == "float64" then return math.random() * 2 - 1 end
  local lo = {int8 = -128, int16 = -32768, int32 = -2 ^ 31, int64 = -2 ^ 40}
  local hi = {int8 = 127, uint8 = 255, int16 = 32767, uint16 = 65535, int32 = 2 ^ 31 - 1,
              uint32 = 2 ^ 32 - 1, int64 = 2 ^ 40, uint64 = 2 ^ 40}
  return math.random(math.tointeger(lo[dtype] or 0), math.tointeger(hi[dtype]))
end

-- Values with many ties (and, for uint64, huge ones: 2^64 - 3 .. 3), for argmax and argmin.
function M.tied_value(dtype)
  if dtype == "bool" then return math.random() < 0.5 end
  if dtype == "uint64" then return math.random(-3, 3) end
  if dtype:match("^uint") then return math.random(0, 10) end
  return math.random(-5, 5) * (dtype:match("^b?float") and 0.5 or 1)
end

-- NumPy's argmax and argmin of a list of values as stored, 1-based: the first NaN if there
-- is one, else the first best (uint64 compared unsigned).
function M.arg_reference(values, dtype, op)
  local best
  for i, v in ipairs(values) do
    if v ~= v then return i end
    if best == nil then best = i
    else
      local b = values[best]
      local less, greater
      if dtype == "bool" then less, greater = not v and b, v and not b
      elseif dtype == "uint64" then less, greater = math.ult(v, b), math.ult(b, v)
      else less, greater = v < b, v > b end
      if (op == "argmax" and greater) or (op == "argmin" and less) then best = i end
    end
  end
  return best
end

return M
