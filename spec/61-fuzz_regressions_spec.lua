-- Regressions found by tests/fuzz.lua (make fuzz): each was a memory error or an unchecked
-- argument before its fix.

local helpers = require "helpers"
local gpu = helpers.gpu
local assert_error = helpers.assert_error

describe("fuzz regressions", function()
  it("rejects shapes whose byte size would overflow", function()
    -- 2^31 * 2^31 elements of 8 bytes used to wrap to a tiny allocation that ones() overran
    assert_error("bad argument #1 to 'gpu.host.ones' (shape is too large)",
                 gpu.host.ones, {2^31 // 1, 2^31 // 1}, "float64")
    -- zeros and empty are one C function, so Lua may name either in the message
    local err = helpers.error_of(gpu.host.zeros, {2^30 // 1, 2^30 // 1, 16}, "uint8")
    assert.is_truthy(err:find("bad argument #1 to 'gpu.host.", 1, true))
    assert.is_truthy(err:find("(shape is too large)", 1, true))
  end)

  it("keeps a zero dimension's size zero however large the others are", function()
    local h = gpu.host.zeros({0, 2^40 // 1}, "float32")
    assert.are.equal(0, #h)
    assert.are.equal(0, h.nbytes)
  end)

  it("caps the lengths beside a zero as NumPy does, since row-major strides multiply them", function()
    -- {0, 2^56, 256}: the strides' product overflowed int64 (UBSan, in the fuzzer's GPU mode)
    assert_error("bad argument #1 to 'gpu.host.ones' (shape is too large)",
                 gpu.host.ones, {0, 2^56 // 1, 256}, "uint8")
    assert_error("bad argument #1 to 'zeros' (shape is too large)",
                 gpu.gpuarray.zeros, {0, 2^56 // 1, 256}, "float32")
    assert_error("bad argument #1 to 'empty' (shape is too large)",
                 gpu.gpuarray.empty, {2^40 // 1, 2^40 // 1}, "float32")
  end)

  helpers.gpu_it("caps a reshape's lengths beside a zero too", function()
    local empty = gpu.gpuarray.zeros({0, 4}, "float32")
    assert_error("bad argument #1 to 'reshape' (shape is too large)", empty.reshape, empty, 0, 2^56 // 1, 256)
    assert_error("bad argument #1 to 'reshape' (shape is too large)", empty.reshape, empty,
                 {2^30 // 1, 0, 2^30 // 1})
    assert.are.same({0, 2, 2}, empty:reshape(0, 2, 2).shape)
  end)

  it("rejects a reshape whose size only matches after wrapping around", function()
    local h = gpu.host.zeros(110, "uint8")
    -- 110 * 325927771488000000 * 1024 wraps around int64 and used to give a view of 2^60 bytes
    assert_error("bad argument #2 to '?' (cannot reshape an array of size 110 into that shape)",
                 h.reshape, h, {110, 325927771488000000, 1024})
    assert_error("bad argument #2 to '?' (cannot reshape an array of size 110 into that shape)",
                 h.reshape, h, 2^32 // 1, 2^32 // 1, 110)
    local v = h:reshape(2, -1, 11)
    assert.are.same({2, 5, 11}, v.shape)
    assert.are.equal(110, #v:bytes())
  end)

  it("checks capture's stream and signature.parse's source", function()
    assert_error("bad argument #2 to 'capture' (gpu.Stream expected, got number)",
                 gpu.capture, function() end, 3)
    assert_error("bad argument #1 to 'parse' (source string expected, got nil)",
                 gpu.signature.parse)
  end)

  it("blames no library line for insert's and delete's options, called from no Lua line", function()
    -- called as a coroutine's body, the error named sets.lua's line (its check was a level short)
    local out, ok = helpers.run_with_fakes([[
      local ga = require("gpu").gpuarray
      local a = ga.zeros({3})
      print(select(2, coroutine.resume(coroutine.create(ga.insert), a, 1, 2, 7)))
      print(select(2, coroutine.resume(coroutine.create(ga.delete), a, 1, 7)))
    ]])
    assert(ok, out)
    assert.are.equal("bad argument #4 to 'insert' (options table expected, got number)\n"
                     .. "bad argument #3 to 'delete' (options table expected, got number)\n", out)
  end)

  helpers.gpu_it("checks self in the indexing hooks when an array is the key", function()
    -- a[key] for a GPUArray key reaches __element / __setelement, whose self went unchecked
    local methods = require("gpu.core").types.GPUArray.__methods
    local key = gpu.gpuarray.zeros(2, "bool")
    assert_error("calling 'index' on bad self (GPUArray expected, got boolean)",
                 methods.__setelement, true, key, 1)
    assert_error("calling 'index' on bad self (GPUArray expected, got string)",
                 methods.__element, "x", key)
  end)
end)
