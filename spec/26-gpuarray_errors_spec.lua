-- Bad input to gpuarray: each a clear Lua error naming what is wrong.
local helpers = require "helpers"
local gpu = helpers.gpu
local E = helpers.assert_error

describe("gpuarray bad input", function()
  it("checks arange's numbers and the self of element access and printing", function()
    E("bad argument #1 to 'arange' (number expected, got no value)", gpu.arange)
    E("bad argument #2 to 'arange' (number expected, got no value)", gpu.arange, 1, nil, 2)
    E("bad argument #1 to 'arange' (number expected, got table)", gpu.arange, {})
    local GPUArray = require("gpu.core").types.GPUArray
    E("bad argument #1 to 'tostring' (GPUArray expected, got number)", GPUArray.__tostring, 5)
    E("calling 'index' on bad self (GPUArray expected, got string)", GPUArray.__methods.__element, "x", 1)
  end)

  it("checks constructors' options, arange's dtype option, to_gpu's ranges and stream options", function()
    -- each constructor takes a trailing options table, checked like every other; an integer a
    -- table gives to_gpu out of the dtype's range is an error (NumPy's OverflowError), where a
    -- fraction converts as astype does; a stream option that is not a gpu.Stream is named
    -- before any launch (stand-in driver: the messages only)
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local a = ga.zeros(4, "float32")
      local function try(f, ...) print((select(2, pcall(f, ...)):gsub("^[^\n]*:%d+: ", ""))) end
      try(ga.zeros, 3, "float32", {bogus = 1})
      try(ga.empty, 3, "float32", {bogus = 1})
      try(ga.ones, 3, "float32", {bogus = 1})
      try(ga.full, 3, 1, "float32", {bogus = 1})
      try(ga.to_gpu, {1, 2}, "float32", {bogus = 1})
      try(ga.empty_like, a, {bogus = 1})
      try(ga.zeros_like, a, {bogus = 1})
      try(ga.ones_like, a, {bogus = 1})
      try(a.set, a, {1, 2, 3, 4}, {bogus = 1})
      try(ga.arange, 0, 4, 1, "float32", {bogus = 1})
      try(ga.arange, 0, 4, "float32", {dtype = "int8"})
      try(ga.arange, 0, 4, {dtype = "flot"})
      print(ga.arange(0, 4, 1, {dtype = "float32"}).dtype, ga.arange(4, {dtype = "int16"}).dtype, ga.arange(4, "int32").dtype)
      try(ga.to_gpu, {300}, "uint8")
      try(ga.to_gpu, {{1, 2}, {3, -1}}, "uint32")
      print(ga.to_gpu({1.5, 2}, "int32").dtype)
      try(ga.add, a, a, {stream = 3})
      try(a.copy, a, {stream = "s"})
      try(gpu.cumath.exp, a, {stream = 3})
      try(gpu.ElementwiseKernel("float *x", "x[i] = 1"), a, {stream = 3})
      try(a.get_async, a, 3)
      local freed = gpu.host.zeros(4, "float32")
      freed:free()
      try(ga.to_gpu, freed)
      try(a.set, a, freed)
      -- element access blames the caller's line, though a C __index calls it
      local line = debug.getinfo(1, "l").currentline; local _, e = pcall(function() return a[9] end); print(e:find(":" .. line .. ": GPUArray index 9 out of range (size 4)", 1, true) ~= nil)
      try(ga.to_gpu_async, gpu.host.pagelocked_empty(4, "float32"), 3)
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "bad argument #3 to 'zeros' (unknown option 'bogus')",
      "bad argument #3 to 'empty' (unknown option 'bogus')",
      "bad argument #3 to 'ones' (unknown option 'bogus')",
      "bad argument #4 to 'full' (unknown option 'bogus')",
      "bad argument #3 to 'to_gpu' (unknown option 'bogus')",
      "bad argument #2 to 'empty_like' (unknown option 'bogus')",
      "bad argument #2 to 'zeros_like' (unknown option 'bogus')",
      "bad argument #2 to 'ones_like' (unknown option 'bogus')",
      "bad argument #2 to 'set' (unknown option 'bogus')",
      "bad argument #5 to 'arange' (unknown option 'bogus')",
      "bad argument #3 to 'arange' (dtype given twice (here and as option 'dtype'))",
      "bad argument #3 to 'arange' (unknown dtype 'flot')",
      "float32\tint16\tint32",
      "bad argument #1 to 'to_gpu' (item 1: 300 is out of range for uint8)",
      "bad argument #1 to 'to_gpu' (item 4: -1 is out of range for uint32)",
      "int32",
      "bad argument #3 to 'add' (option 'stream' must be a gpu.Stream, got number)",
      "bad argument #1 to 'copy' (option 'stream' must be a gpu.Stream, got string)",
      "bad argument #2 to 'exp' (option 'stream' must be a gpu.Stream, got number)",
      "bad argument #2 to 'kernel' (option 'stream' must be a gpu.Stream, got number)",
      "bad argument #1 to 'get_async' (gpu.Stream expected, got number)",
      "bad argument #1 to 'to_gpu' (host array has been freed)",
      "bad argument #1 to 'set' (host array has been freed)",
      "true",
      "bad argument #2 to 'to_gpu_async' (gpu.Stream expected, got number)",
      "",
    }, "\n"), out)
  end)

  it("constructors take {dtype =} like arange; ranges and views take typed scalars and empty ends", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local function show(f, ...)
        local ok, v = pcall(f, ...)
        print(ok and v.dtype .. " " .. table.concat(v.shape, "x") or (v:gsub("^[^\n]*:%d+: ", "")))
      end
      show(ga.zeros, 3, {dtype = "float32"}); show(ga.empty, {2, 2}, {dtype = "int8"})
      show(ga.ones, 2, nil, {dtype = "uint16"}); show(ga.full, 2, 7, {dtype = "float32"})
      show(ga.zeros_like, ga.zeros(3, "int32"), "float64"); show(ga.ones_like, ga.zeros(3), {dtype = "bool"})
      show(ga.zeros, 3, "float32", {dtype = "float64"}); show(ga.full, 2, 1, {dtype = "f32"})
      show(ga.arange, gpu.int32(5)); show(ga.arange, gpu.float32(0.5), 3)
      show(ga.linspace, gpu.int32(0), gpu.float32(1), gpu.int64(5)); show(ga.arange, gpu.host.zeros(1))
      local a = ga.zeros({3, 4})
      show(a.narrow, a, 2, 5, 0); show(a.narrow, a, 2, 5, 1)
      show(a.slice, a, 1, 2, nil, {axis = 9}); show(a.slice, a, 1, 2, {axis = 9})
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "float32 3", "int8 2x2", "uint16 2", "float32 2", "float64 3", "bool 3",
      "bad argument #2 to 'zeros' (dtype given twice (here and as option 'dtype'))",
      "bad argument #3 to 'full' (unknown dtype 'f32')",
      "int64 5", "float64 3", "float64 5",
      "bad argument #1 to 'arange' (number expected, got gpu.HostArray)",
      "float64 3x0",
      "bad argument #2 to 'narrow' (first 5 is out of range for an axis of length 4)",
      "bad argument #4 to 'slice' (axis 9 is out of range for a 2-d array)",
      "bad argument #3 to 'slice' (axis 9 is out of range for a 2-d array)",
      "",
    }, "\n"), out)
  end)

  helpers.gpu_it("names mismatched shapes, dtypes and sizes", function()
    local a, b = gpu.zeros(3, "float32"), gpu.zeros(4, "float32")
    E("bad argument #2 to 'add' (operands could not be broadcast together with shapes (3,) (4,))",
      function() return a + b end)
    E("bad argument #2 to 'empty' (unknown dtype 'float33')", gpu.empty, 3, "float33")
    E("bad argument #1 to 'astype' (unknown dtype 'int3')", function() return a:astype("int3") end)
    local i = gpu.zeros(3, "int32")
    E("bad argument #1 to 'band' ('&' needs integer or bool operands, got float32)",
      function() return a & i end)
    E("bad argument #1 to 'bnot' (unary '~' needs integer or bool operands, got float32)",
      function() return ~a end)
    local u = gpu.zeros(3, "uint64")
    E("bad argument #2 to 'bor' ('|' needs a common integer type, and int32 and uint64 have none)",
      function() return i | u end)
    E("bad argument #1 to 'set' (host data has 2 elements, the GPUArray 3)",
      function() a:set({1, 2}) end)
    E("bad argument #1 to 'set_async' (async copies need page-locked host memory (gpu.host.pagelocked_empty))",
      function() a:set_async(gpu.host.zeros(3, "float32"), gpu.Stream()) end)
    E("bad argument #1 to 'reshape' (only one dimension can be -1)",
      function() return gpu.zeros(6):reshape(-1, -1) end)
    E("bad argument #1 to 'reshape' (cannot reshape an array of size 6 into shape (4,-1))",
      function() return gpu.zeros(6):reshape(4, -1) end)
    E("bad argument #1 to 'reshape' (cannot reshape an array of size 6 into shape (4,2))",
      function() return gpu.zeros(6):reshape({4, 2}) end)
    E("bad argument #3 to 'slice' (step must not be 0)", function() return a:slice(1, 2, 0) end)
    E("bad argument #3 to 'add' (out array has shape (4,), the result (3,))",
      function() gpu.gpuarray.add(a, a, {out = b}) end)
    E("bad argument #3 to 'add' (out array has dtype int32, the result float32)",
      function() gpu.gpuarray.add(a, a, {out = i}) end)
    E("bad argument #3 to 'add' (unknown option 'outt')", function() gpu.gpuarray.add(a, a, {outt = b}) end)
    E("bad argument #1 to 'iadd' (the result is float64, which cannot be stored in place in a int32 array)",
      function() i:iadd(1.5) end)
    E("bad argument #2 to 'add' (1000 is out of range for uint8)",
      function() return gpu.zeros(2, "uint8") + 1000 end)
    E("bad argument #2 to 'add' (GPUArray or number expected, got string)", function() return a + "x" end)
    E("attempt to compare GPUArrays with '<' (use a:lt(b), which returns a bool array)",
      function() return a < b end)
    E("bad argument #2 to 'full' (2.5 is not an integer (for int8))", gpu.full, 3, 2.5, "int8")
  end)

  helpers.multi_gpu_it("rejects arrays on different devices", function()
    local a = gpu.zeros(3)
    gpu.set_device(1)
    local ok, b = pcall(gpu.zeros, 3)
    gpu.set_device(0)
    assert(ok, b)
    E("bad argument #2 to 'add' (array is on device 1, argument #1 on device 0)", function() return a + b end)
  end)

  helpers.gpu_it("rejects freed arrays as operands and outputs", function()
    local a, b = gpu.ones(3), gpu.ones(3)
    b:free()
    E("bad argument #2 to 'add' (array has been freed)", function() return a + b end)
    E("bad argument #3 to 'add' (array has been freed)", function() gpu.gpuarray.add(a, a, {out = b}) end)
    E("bad argument #1 to 'maximum' (array has been freed)", function() gpu.gpuarray.maximum(b, a) end)
    E("bad argument #1 to 'sqrt' (array has been freed)", function() gpu.cumath.sqrt(b) end)
    E("calling 'copy' on bad self (array has been freed)", function() b:copy() end)
  end)
end)
