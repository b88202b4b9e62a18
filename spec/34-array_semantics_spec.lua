-- Review fixes of the array layer: defined float -> int astype, slice defaults with a
-- negative step, printing of empty arrays, comparisons with out-of-range Lua integers.

local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"
local operators = require "gpu.operators"
local R = require "array_reference"

local INTS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
local SPECIAL = {0 / 0, 1 / 0, -1 / 0, 1e30, -1e30, 2.75, -2.75, 127.5, -128.5, 255.9, 300.25,
                 -1.5, 2147483647.5, -2147483649.0, 4294967296.0, 2.0 ^ 63, -2.0 ^ 63, 2.0 ^ 64}

describe("astype from floats to integers (CPU)", function()
  it("goes through the saturating helpers, which compile for every pair", function()
    local list = {}
    for _, from in ipairs{"float32", "float64"} do
      for _, to in ipairs(INTS) do
        local e, t = operators.expression("astype", {from}, {"v1"}, to)
        assert.are.equal(to, t)
        assert.are.equal(("lg_to_%s(v1)"):format(to), e)
        local p = ew.program{expr = e, out = t, name = "astype_" .. from .. "_" .. to,
                             operands = {{name = "v1", dtype = from}}}
        list[#list + 1] = {p, "c"}
        list[#list + 1] = {p, "s2"}
      end
    end
    local image = gpu.compile(ew.combined_source(list), {arch = "sm_90", no_extern_c = true})
    for _, item in ipairs(list) do
      assert.is_truthy(image:find(item[1].name .. "_" .. item[2], 1, true))
    end
  end)

  it("leaves integer -> integer and to-float conversions as C casts", function()
    assert.are.equal("((signed char)(v1))", (operators.expression("astype", {"int32"}, {"v1"}, "int8")))
    assert.are.equal("((float)(v1))", (operators.expression("astype", {"float64"}, {"v1"}, "float32")))
  end)

  it("has a reference that truncates and saturates", function()
    assert.are.same({0, 127, -128, 2, -2, 127, -128},
      {R.convert(0 / 0, "int8"), R.convert(1e30, "int8"), R.convert(-1 / 0, "int8"),
       R.convert(2.75, "int8"), R.convert(-2.75, "int8"), R.convert(127.5, "int8"),
       R.convert(-128.5, "int8")})
    assert.are.equal(0, R.convert(-1.5, "uint32"))
    assert.are.equal(math.maxinteger, R.convert(2.0 ^ 63, "int64"))
    assert.are.equal(-1, R.convert(2.0 ^ 64, "uint64"))       -- all 64 bits set
  end)
end)

describe("printing empty arrays", function()
  it("gives [] whatever the shape, as NumPy does", function()
    assert.are.equal("[]", tostring(gpu.host.zeros({2, 0}, "float32")))
    assert.are.equal("[]", tostring(gpu.host.zeros({0, 3, 2}, "int32")))
    assert.are.equal("[]", tostring(gpu.host.zeros(0, "int8")))
  end)
end)

describe("array semantics on the device", function()
  helpers.gpu_it("astype saturates floats into every integer dtype", function()
    for _, from in ipairs{"float32", "float64"} do
      local a = gpu.to_gpu(gpu.host.from_table(SPECIAL, from))
      local source = a:get()
      for _, to in ipairs(INTS) do
        local got = a:astype(to):get()
        for i = 1, #SPECIAL do
          assert.are.equal(R.convert(source[i], to), got[i], ("%s %s -> %s"):format(from, SPECIAL[i], to))
        end
      end
    end
  end)

  helpers.gpu_it("slice with a negative step and omitted bounds starts at the end", function()
    local a = gpu.arange(7, "int32")
    assert.are.same({6, 5, 4, 3, 2, 1, 0}, a:slice(nil, nil, -1):get():totable())
    assert.are.same({6, 4, 2, 0}, a:slice(nil, nil, -2):get():totable())
    assert.are.same({6, 5, 4}, a:slice(nil, 5, -1):get():totable())
    assert.are.same({0, 2, 4, 6}, a:slice(nil, nil, 2):get():totable())
  end)

  helpers.gpu_it("compares with Lua integers the dtype cannot hold by value", function()
    local values = helpers.random_integers(40, 0, 255)
    local a = gpu.to_gpu(values, "uint8")
    local cases = {{"lt", 300, function(v) return v < 300 end}, {"gt", -1, function(v) return v > -1 end},
                   {"eq", 256, function() return false end}, {"ne", -5, function() return true end},
                   {"ge", 1000, function() return false end}, {"le", -1, function() return false end}}
    for _, c in ipairs(cases) do
      local got = a[c[1]](a, c[2]):get()
      for i = 1, #values do assert.are.equal(c[3](values[i]), got[i]) end
    end
    local u = gpu.to_gpu({0, 5, 2 ^ 62 | 0}, "uint64")
    assert.are.same({true, true, true}, u:gt(-1):get():totable())
    -- arithmetic still refuses it, as NumPy 2 does
    helpers.assert_error("bad argument #2 to 'add' (300 is out of range for uint8)", function() return a + 300 end)
  end)
end)
