-- Doubling variable-length arrays described by structs in device memory, then one struct
-- passed by value as a Lua string of its bytes.
-- Twin of seeds/002 (PyCUDA Tutorial 中文版), section "结构体" (PyCUDA's examples/demo_struct.py).
-- The seed's loop condition lost its "<" ("idx datalen"); it reads idx < a->datalen.
local gpu = require "gpu"

local source = [[
struct DoubleOperation {
    int datalen, __padding;  // so 64-bit pointers can be aligned
    float *ptr;
};

__global__ void double_array(DoubleOperation *a)
{
    a = &a[blockIdx.x];
    for (int idx = threadIdx.x; idx < a->datalen; idx += blockDim.x) {
        a->ptr[idx] *= 2;
    }
}

__global__ void double_array_by_value(DoubleOperation a)
{
    for (int idx = threadIdx.x; idx < a.datalen; idx += blockDim.x) {
        a.ptr[idx] *= 2;
    }
}
]]

local available, why = gpu.available()
if not available then
  local cubin = gpu.compile(source, {arch = "sm_90"})
  print(("No CUDA device found (%s)."):format(why))
  print(("Compiled double_array for sm_90 with NVRTC anyway (%d bytes of cubin)."):format(#cubin))
  return
end

-- The struct's bytes: int datalen, int padding, float *ptr (little-endian, 64-bit pointer).
local function struct_bytes(datalen, device_address)
  return string.pack("<i4i4I8", datalen, 0, device_address)
end

local DoubleOpStruct = {mem_size = #struct_bytes(0, 0)}   -- 8 + sizeof(pointer)
DoubleOpStruct.__index = DoubleOpStruct

-- Copies values to the device and writes a struct describing them at struct_buf.
function DoubleOpStruct.new(values, struct_buf)
  local host = gpu.host.from_table(values, "float32")
  local self = setmetatable({values = host:totable()}, DoubleOpStruct)
  self.data = gpu.to_device(host)
  self.shape, self.dtype = host.shape, host.dtype
  gpu.memcpy_htod(struct_buf, string.pack("<i4", host.size))
  gpu.memcpy_htod(struct_buf:offset(8), string.pack("<I8", self.data:ptr()))
  return self
end

function DoubleOpStruct:get()
  return gpu.from_device(self.data, self.shape, self.dtype)
end

function DoubleOpStruct:__tostring()
  return tostring(self:get())
end

local function random_values(n)
  local t = {}
  for i = 1, n do t[i] = math.random() * 8 - 4 end
  return t
end

local struct_arr = gpu.mem_alloc(2 * DoubleOpStruct.mem_size)
local do2 = struct_arr:offset(DoubleOpStruct.mem_size)   -- view: the second struct
local array1 = DoubleOpStruct.new(random_values(3), struct_arr)
local array2 = DoubleOpStruct.new(random_values(2), do2)
print("original arrays", array1, array2)

local mod = gpu.SourceModule(source)
local func = mod:get_function("double_array")
func(struct_arr, {block = {32, 1, 1}, grid = {2, 1}})
print("doubled arrays", array1, array2)

-- numpy.intp(do2_ptr) in the seed: a raw device address works as a pointer argument too
func(do2:ptr(), {block = {32, 1, 1}, grid = {1, 1}})
print("doubled second only", array1, array2)

-- the struct itself as the argument, passed by value: a string of exactly its 16 bytes
local by_value = mod:get_function("double_array_by_value")
by_value(struct_bytes(#array1.values, array1.data:ptr()), {block = {32, 1, 1}, grid = {1, 1}})
print("doubled first by value", array1, array2)

-- array1 was doubled twice (struct array, by value), array2 twice (struct array, address)
local wrong = 0
for _, case in ipairs{{array1, 4}, {array2, 4}} do
  local array, factor = case[1], case[2]
  local got = array:get()
  for i, v in ipairs(array.values) do
    if got[i] ~= factor * v then
      wrong = wrong + 1
      io.stderr:write(("element %d: got %.9g, expected %.9g\n"):format(i, got[i], factor * v))
    end
  end
end
if wrong > 0 then
  io.stderr:write(("FAILED: %d elements differ from the CPU\n"):format(wrong))
  os.exit(1)
end
print("OK: double_array doubled both arrays through structs in device memory and by value")
