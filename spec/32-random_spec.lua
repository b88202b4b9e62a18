-- gpu.random: Philox4x32-10 uniform and normal numbers.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local random = require "gpu.random"

local function hex(words) return ("%08x %08x %08x %08x"):format(table.unpack(words)) end

describe("random numbers", function()
  it("use Philox4x32-10 as published (Random123's known answers)", function()
    assert.are.equal("6627e8d5 e169c58d bc57ac4c 9b00dbd8", hex(random.philox({0, 0, 0, 0}, {0, 0})))
    assert.are.equal("408f276d 41c83b0e a20bc7c6 6d5451fd",
      hex(random.philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff})))
    assert.are.equal("d16cfe09 94fdcceb 5001e420 24126ea1",
      hex(random.philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0})))
  end)

  it("have a CPU reference in range, seeded and distinct per seed", function()
    local seed = math.random(1, 1 << 40)
    local u = random.reference(1000, "float32", false, seed)
    for _, v in ipairs(u) do assert.is_true(v >= 0 and v < 1) end
    assert.are.same(u, random.reference(1000, "float32", false, seed))
    assert.are_not.same(u, random.reference(1000, "float32", false, seed + 1))
    local d = random.reference(1001, "float64", false, seed)
    assert.are.equal(1001, #d)
    for _, v in ipairs(d) do assert.is_true(v >= 0 and v < 1) end
  end)

  it("compile their kernels", function()
    assert.is_true(#gpu.compile(gpu.kernel_sources["random.cu"], {arch = "sm_90", no_extern_c = true}) > 0)
  end)

  it("check arguments before touching a device", function()
    helpers.assert_error("bad argument #2 to 'rand' (dtype must be float32 or float64, got 'int32')",
                         random.rand, 10, "int32")
    helpers.assert_error("bad argument #3 to 'randn' (unknown option 'sead')", random.randn, 10, "float64",
                         {sead = 1})
    helpers.assert_error("bad argument #3 to 'rand' (option 'seed' must be an integer, got float)",
                         random.rand, 10, "float32", {seed = 1.5})
    helpers.assert_error("bad argument #1 to 'rand' (shape expected, got no value)", random.rand)
    helpers.assert_error("bad argument #1 to 'seed' (integer expected, got string)", random.seed, "x")
    helpers.assert_error("bad argument #1 to 'philox' (table of 4 integers in [0, 2^32) expected)",
                         random.philox, 7, {0, 0})
    helpers.assert_error("bad argument #1 to 'philox' (table of 4 integers in [0, 2^32) expected)",
                         random.philox, {0, 0, 0}, {0, 0})
    helpers.assert_error("bad argument #2 to 'philox' (table of 2 integers in [0, 2^32) expected)",
                         random.philox, {0, 0, 0, 0}, {0, 1 << 32})
  end)

  helpers.gpu_it("equal the CPU reference, element by element", function()
    for _, dtype in ipairs{"float32", "float64"} do
      for _, normal in ipairs{false, true} do
        local seed = math.random(0, 1 << 50)
        local n = 1027
        local a = (normal and random.randn or random.rand)(n, dtype, {seed = seed})
        assert.are.equal(dtype, a.dtype)
        local h = R.get(a)
        local ref = random.reference(n, dtype, normal, seed)
        for i = 1, n do
          if normal then
            local tol = dtype == "float32" and 4e-6 or 1e-13
            assert(math.abs(h[i] - ref[i]) <= tol * (1 + math.abs(ref[i])),
                   ("%s normal %d: %.17g vs %.17g"):format(dtype, i, h[i], ref[i]))
          else
            assert.are.equal(ref[i], h[i], ("%s uniform %d"):format(dtype, i))
          end
        end
      end
    end
  end)

  helpers.gpu_it("have the right mean and variance, and repeat per seed", function()
    local n = 10 ^ 6
    for _, dtype in ipairs{"float32", "float64"} do
      local u = random.rand({1000, 1000}, dtype, {seed = 7})
      assert.are.same({1000, 1000}, u.shape)
      local mean = u:mean()
      assert(math.abs(mean - 0.5) < 0.003, "uniform mean " .. mean)
      assert.is_true(u:min() >= 0 and u:max() < 1)
      local h = R.get(u)
      local var = 0
      for i = 1, n do var = var + (h[i] - mean) ^ 2 end
      assert(math.abs(var / n - 1 / 12) < 0.002, "uniform variance " .. var / n)
      local z = random.randn(n, dtype, {seed = 11})
      local hz = R.get(z)
      local s, s2 = 0, 0
      for i = 1, n do s, s2 = s + hz[i], s2 + hz[i] ^ 2 end
      assert(math.abs(s / n) < 0.005, "normal mean " .. s / n)
      assert(math.abs(s2 / n - 1) < 0.01, "normal variance " .. s2 / n)
      -- the same seed repeats, another seed differs
      assert.are.same(R.get(random.rand(100, dtype, {seed = 3})):totable(),
                      R.get(random.rand(100, dtype, {seed = 3})):totable())
      assert.are_not.same(R.get(random.rand(100, dtype, {seed = 3})):totable(),
                          R.get(random.rand(100, dtype, {seed = 4})):totable())
    end
    -- the default generator moves on, and seed() restarts it
    random.seed(99)
    local first = R.get(random.rand(10)):totable()
    local second = R.get(random.rand(10)):totable()
    assert.are_not.same(first, second)
    random.seed(99)
    assert.are.same(first, R.get(random.rand(10)):totable())
    assert.are.same(first, R.get(random.rand(10, "float32", {seed = 99})):totable())
  end)
end)
