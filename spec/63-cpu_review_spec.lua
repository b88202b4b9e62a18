-- Regressions from a review of the C core's host-side paths (no device needed): each was a
-- memory error, undefined behaviour, or an error message that did not name its argument.

local helpers = require "helpers"
local gpu = helpers.gpu
local assert_error = helpers.assert_error

describe("C core review (host side)", function()
  it("from_table refuses nested tables that claim more elements than a shape may hold", function()
    -- rows may be shared: 4 levels of 65536 make 2^64 elements, whose count wrapped to 0, so a
    -- 0-byte array was allocated and filled far past its end
    local t = {}
    for i = 1, 65536 do t[i] = 1 end
    for _ = 1, 3 do
      local row = t
      t = {}
      for i = 1, 65536 do t[i] = row end
    end
    assert_error("bad argument #1 to 'gpu.host.from_table' (nested table holds too many elements)",
                 gpu.host.from_table, t, "int8")
    -- shared rows that fit are fine
    local row = {1, 2, 3}
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, gpu.host.from_table({row, row}, "int32"):totable())
  end)

  it("from_table infers the dtype of shared rows without reading each one again", function()
    -- 4 levels of 4096 shared rows claim 2^48 elements: the dtype guess read every one of them
    -- (days); it now reads each row table once, and the allocation fails at once
    local t = {}
    for i = 1, 4096 do t[i] = i end
    for _ = 1, 3 do
      local row = t
      t = {}
      for i = 1, 4096 do t[i] = row end
    end
    local ok, err = pcall(gpu.host.from_table, t)
    assert.is_false(ok)
    assert.matches("not enough memory", tostring(err), 1, true)
    -- the guess still sees every distinct row: one float among shared int rows makes float64
    local ints, floats = {1, 2}, {3, 4.5}
    local h = gpu.host.from_table({ints, ints, floats, ints})
    assert.are.equal("float64", h.dtype)
    assert.are.same({{1, 2}, {1, 2}, {3, 4.5}, {1, 2}}, h:totable())
    assert.are.equal("int64", gpu.host.from_table({ints, ints}).dtype)
  end)

  it("reshape refuses dimensions whose product overflows, even next to a zero", function()
    -- the overflow guard clamped the product to size + 1, which a later 0 multiplied back to
    -- 0: a size-0 array took shape {2^62, 2^62, 0}, and set_shape overflowed int64 (UB)
    local h = gpu.host.zeros(0, "float32")
    assert_error("bad argument #2 to '?' (cannot reshape an array of size 0 into that shape)",
                 h.reshape, h, {2^62 // 1, 2^62 // 1, 0})
    assert_error("bad argument #2 to '?' (cannot reshape an array of size 0 into that shape)",
                 h.reshape, h, 2^40 // 1, 0, 2^40 // 1)
    -- a zero still makes any sensible shape fit, as in NumPy
    assert.are.same({5, 0}, h:reshape(5, 0).shape)
    assert.are.same({0, 3, 7}, h:reshape({0, 3, 7}).shape)
    assert.are.same({0}, h:reshape(-1).shape)
    assert_error("bad argument #2 to '?' (cannot reshape an array of size 0 into that shape)",
                 h.reshape, h, 0, -1)
  end)

  it("from_table names its argument when a table nests deeper than 32 levels", function()
    local t = 1
    for _ = 1, 33 do t = {t} end
    assert_error("bad argument #1 to 'gpu.host.from_table' (nested table is deeper than 32 levels)",
                 gpu.host.from_table, t)
    local loop = {}
    loop[1] = loop            -- a table that contains itself is infinitely deep
    assert_error("bad argument #1 to 'gpu.host.from_table' (nested table is deeper than 32 levels)",
                 gpu.host.from_table, loop, "int32")
  end)

  it("rounds Lua numbers to float16 and bfloat16 once, as CUDA's __double2half does", function()
    -- the double went through float first: 1 + 2^-11 + 2^-40 became the tie 1 + 2^-11 (float
    -- has no bit for 2^-40), which rounded to even, 1, instead of up to 1 + 2^-10
    assert.are.equal(1 + 2^-10, gpu.float16(1 + 2^-11 + 2^-40).value)
    assert.are.equal(1 + 2^-7, gpu.bfloat16(1 + 2^-8 + 2^-40).value)
    assert.are.equal(1 - 2^-11, gpu.float16(1 - 2^-12 - 2^-40).value)
    local h = gpu.host.from_table({1 + 2^-11 + 2^-40, -(1 + 2^-11 + 2^-40), 1 + 2^-11}, "float16")
    assert.are.same({1 + 2^-10, -(1 + 2^-10), 1}, h:totable())
    -- subnormals: 2^-25 is half the smallest float16 subnormal, a tie that goes to 0
    assert.are.equal(2^-24, gpu.float16(2^-25 + 2^-60).value)
    assert.are.equal(0, gpu.float16(2^-25).value)
  end)

  it("compile refuses strings with a zero byte, which NVRTC would silently cut short", function()
    local core = require "gpu.core"
    local src = "__global__ void k(int *a) { a[0] = 1; }"
    -- the code after the zero byte was dropped and the rest compiled as if it were all
    assert_error("bad argument #1 to 'gpu.core.compile' (source contains a zero byte)",
                 core.compile, src .. "\0 not C++ (", {arch = "compute_90"})
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'options' item 2 contains a zero byte)",
                 core.compile, src, {arch = "compute_90", options = {"-lineinfo", "-DN=4\0junk"}})
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'include_dirs' item 1 contains a zero byte)",
                 core.compile, src, {arch = "compute_90", include_dirs = {"/tmp\0/x"}})
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'arch' contains a zero byte)",
                 core.compile, src, {arch = "compute_90\0junk"})
    assert_error("bad argument #2 to 'gpu.core.compile' (header 'a.h' contains a zero byte)",
                 core.compile, src, {arch = "compute_90", headers = {["a.h"] = "int x;\0junk"}})
    local err = helpers.error_of(gpu.compile, src .. "\0", {arch = "compute_90"})
    assert.is_truthy(err:find("bad argument #1 to 'compile' (source contains a zero byte)", 1, true), err)
    assert.are.equal(".version", core.compile(src, {arch = "compute_90", options = {"-DN=4"},
                                                    headers = {["a.h"] = "int x;"}}):match("%.version"))
  end)
end)
