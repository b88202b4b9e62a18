-- dtypes and typed scalars (gpu.int32(x), ...): sizes, conversions and range checks.
local helpers = require "helpers"
local gpu = helpers.gpu

local dtypes = {
  {"bool", 1, "bool", "b"}, {"int8", 1, "signed char", "i"}, {"uint8", 1, "unsigned char", "u"},
  {"int16", 2, "short", "i"}, {"uint16", 2, "unsigned short", "u"}, {"int32", 4, "int", "i"},
  {"uint32", 4, "unsigned int", "u"}, {"int64", 8, "long long", "i"},
  {"uint64", 8, "unsigned long long", "u"}, {"float16", 2, "__half", "f"},
  {"bfloat16", 2, "__nv_bfloat16", "f"}, {"float32", 4, "float", "f"},
  {"float64", 8, "double", "f"},
}

-- Calls gpu.<name>(v) from a chunk that names it, as a user would (errors name 'int8').
local function scalar_call(name)
  return assert(load("local gpu, v = ...; gpu." .. name .. "(v)"))
end

-- integer dtypes and their ranges (uint64 is stored as Lua's 64 bits, see dtype.c)
local ranges = {
  int8 = {-128, 127}, uint8 = {0, 255}, int16 = {-32768, 32767}, uint16 = {0, 65535},
  int32 = {-2147483648, 2147483647}, uint32 = {0, 4294967295},
  int64 = {math.mininteger, math.maxinteger},
}

describe("gpu.dtype", function()
  it("describes every dtype", function()
    for _, d in ipairs(dtypes) do
      assert.are.same({name = d[1], itemsize = d[2], ctype = d[3], kind = d[4]}, gpu.dtype(d[1]))
    end
  end)

  it("rejects unknown names and non-strings, and stays usable", function()
    helpers.assert_error("bad argument #1 to 'dtype' (unknown dtype 'float33')",
                         function() gpu.dtype("float33") end)
    helpers.assert_error("bad argument #1 to 'dtype' (unknown dtype 'Float32')",
                         function() gpu.dtype("Float32") end)
    helpers.assert_error("bad argument #1 to 'dtype' (string expected, got no value)",
                         function() gpu.dtype() end)
    helpers.assert_error("bad argument #1 to 'dtype' (string expected, got table)",
                         function() gpu.dtype({}) end)
    assert.are.equal(4, gpu.dtype("int32").itemsize)
  end)
end)

describe("typed scalars", function()
  it("exist for every dtype and carry dtype, nbytes and value", function()
    for _, d in ipairs(dtypes) do
      local s = gpu[d[1]](d[1] == "bool" and true or 1)
      assert.are.equal(d[1], s.dtype)
      assert.are.equal(d[2], s.nbytes)
      assert.are.equal(d[1] == "bool" and true or 1, s.value)
    end
  end)

  it("accept the whole range of each integer type and nothing beyond", function()
    for name, r in pairs(ranges) do
      local lo, hi = r[1], r[2]
      assert.are.equal(lo, gpu[name](lo).value)
      assert.are.equal(hi, gpu[name](hi).value)
      for _, v in ipairs(helpers.random_integers(20, lo, hi)) do
        assert.are.equal(v, gpu[name](v).value)
      end
      if name ~= "int64" then
        helpers.assert_error(("bad argument #1 to '%s' (%d is out of range for %s)"):format(name, hi + 1, name),
                             scalar_call(name), gpu, hi + 1)
        helpers.assert_error(("bad argument #1 to '%s' (%d is out of range for %s)"):format(name, lo - 1, name),
                             scalar_call(name), gpu, lo - 1)
      end
    end
    helpers.assert_error("bad argument #1 to 'int64' (9.2233720368548e+18 is out of range for int64)",
                         function() gpu.int64(2^63) end)
    helpers.assert_error("bad argument #1 to 'int32' (1099511627776 is out of range for int32)",
                         function() gpu.int32(1 << 40) end)
    helpers.assert_error("bad argument #1 to 'int32' (1099511627776.0 is out of range for int32)",
                         function() gpu.int32(2^40) end)
    assert.are.equal(7, gpu.int32(7.0).value)        -- integral floats are fine
  end)

  it("keep uint64's 64 bits: -1 is 2^64 - 1, floats up to 2^64 are accepted", function()
    assert.are.equal(-1, gpu.uint64(-1).value)
    assert.are.equal(math.mininteger, gpu.uint64(2^63).value)
    helpers.assert_error("bad argument #1 to 'uint64' (1.844674407371e+19 is out of range for uint64)",
                         function() gpu.uint64(2^64) end)
  end)

  it("reject non-integers, non-numbers and missing values", function()
    helpers.assert_error("bad argument #1 to 'int32' (1.5 is not an integer)", function() gpu.int32(1.5) end)
    helpers.assert_error("bad argument #1 to 'uint8' (expected a number, got string)",
                         function() gpu.uint8("7") end)
    helpers.assert_error("bad argument #1 to 'float32' (expected a number, got table)",
                         function() gpu.float32({}) end)
    helpers.assert_error("bad argument #1 to 'bool' (expected a boolean or a number, got string)",
                         function() gpu.bool("yes") end)
    helpers.assert_error("bad argument #1 to 'int16' (value expected)", function() gpu.int16() end)
    assert.are.equal(3, gpu.int16(3).value)
  end)

  it("round floats to their precision", function()
    for _, x in ipairs(helpers.random_floats(50, 1e6)) do
      assert.are.equal(helpers.f32(x), gpu.float32(x).value)
      assert.are.equal(x, gpu.float64(x).value)
    end
    assert.are.equal(0.5, gpu.float16(0.5).value)
    assert.are.equal(65504, gpu.float16(65504).value)
    assert.are.equal(math.huge, gpu.float16(1e6).value)
    assert.are.equal(1 + 2^-10, gpu.float16(1 + 2^-10).value)
    assert.are.equal(1, gpu.float16(1 + 2^-12).value)          -- rounds to nearest even
    assert.are.equal(2^-24, gpu.float16(2^-24).value)          -- smallest subnormal
    assert.are.equal(1, gpu.bfloat16(1 + 2^-9).value)
    assert.are.equal(1 + 2^-7, gpu.bfloat16(1 + 2^-7).value)
    local nan = gpu.float32(0 / 0).value
    assert.is_true(nan ~= nan)
  end)

  it("print as dtype(value) and compare by dtype and bytes", function()
    assert.are.equal("int32(5)", tostring(gpu.int32(5)))
    assert.are.equal("float64(1.5)", tostring(gpu.float64(1.5)))
    assert.are.equal("uint64(18446744073709551615)", tostring(gpu.uint64(-1)))   -- unsigned, as arrays print
    assert.are.equal("bool(true)", tostring(gpu.bool(1)))
    assert.are.equal(gpu.int32(5), gpu.int32(5))
    assert.are_not.equal(gpu.int32(5), gpu.uint32(5))
    assert.are_not.equal(gpu.int32(5), gpu.int32(6))
  end)
end)
