-- gpu.random: Philox4x32-10 uniform, normal and integer numbers, permutations and choices,
-- value for value against the CPU twin (random.reference*) where it gives them, else by
-- their properties.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local random = require "gpu.random"

local MASK = 0xffffffff

local function hex(words) return ("%08x %08x %08x %08x"):format(table.unpack(words)) end

-- The words of counter block j under seed, as random.cu draws them.
local function block(seed, j, attempt)
  return random.philox({j & MASK, j >> 32, attempt or 0, 0}, {seed & MASK, (seed >> 32) & MASK})
end

-- Asserts that array a holds the list want, element by element (integers exactly).
local function assert_values(want, a, what)
  local h = R.get(a)
  assert.are.equal(#want, h.size, what .. ": size")
  for i = 1, #want do
    if h[i] ~= want[i] then
      error(("%s at %d: got %s, expected %s"):format(what, i, tostring(h[i]), tostring(want[i])))
    end
  end
end

-- The row-major elements of a device array as a Lua list (complex values as "re,im").
local function elements(a)
  local h = R.get(a)
  local t = {}
  for i = 1, h.size do
    local v = h[i]
    t[i] = type(v) == "table" and ("%s,%s"):format(v.re, v.im) or v
  end
  return t
end

-- The rows of the row-major list values (rows of `width` elements) at places.
local function rows_at(values, width, places)
  local out = {}
  for _, p in ipairs(places) do
    for j = 1, width do out[#out + 1] = values[(p - 1) * width + j] end
  end
  return out
end

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

  it("have CPU references for randint, made of the Philox words by Lemire's method", function()
    local seed = math.random(0, 1 << 50)
    local n = 403
    -- ranges of 2^k take the top k bits of the words, rejecting none
    local bytes = random.reference_randint(n, 0, 256, "uint8", seed)
    local words32 = random.reference_randint(n, 0, 1 << 32, "uint32", seed)
    local raw = random.reference_randint(n, 0, 2.0 ^ 64, "uint64", seed)
    local halves = random.reference_randint(n, 0, 2.0 ^ 63, "int64", seed)
    local wide = random.reference_randint(n, -5, 2.0 ^ 40 - 5, "int64", seed)
    for i = 1, n do
      local r = block(seed, (i - 1) // 4)
      local w = r[(i - 1) % 4 + 1]
      assert.are.equal(w, words32[i])
      assert.are.equal(w >> 24, bytes[i])
      local r2 = block(seed, (i - 1) // 2)
      local q = (i - 1) % 2 * 2 + 1
      assert.are.equal((r2[q] << 32) | r2[q + 1], raw[i])
      assert.are.equal(raw[i] >> 1, halves[i])
      assert.are.equal(-5 + (raw[i] >> 24), wide[i])
    end
    -- a range of 2^31 + 1 rejects the words whose product's low half is below 2^31 - 1 (about
    -- half of them) and takes the same word of the block's next attempt instead
    local range, threshold = (1 << 31) + 1, (1 << 31) - 1
    local odd = random.reference_randint(4000, 7, 7 + range, "int64", seed)
    local rejected = 0
    for i = 1, 4000 do
      local j, q = (i - 1) // 4, (i - 1) % 4 + 1
      local attempt, m = 0, block(seed, j)[q] * range
      while m & MASK < threshold do
        attempt = attempt + 1
        m = block(seed, j, attempt)[q] * range
      end
      if attempt > 0 then rejected = rejected + 1 end
      assert.are.equal(7 + (m >> 32), odd[i])
      assert.is_true(odd[i] >= 7 and odd[i] < 7 + range)
    end
    assert(rejected > 1800 and rejected < 2200, "rejected " .. rejected)
    -- small ranges reach both ends and nothing outside
    local seen = {}
    for _, v in ipairs(random.reference_randint(2000, -3, 4, "int8", seed)) do
      assert.is_true(v >= -3 and v <= 3)
      seen[v] = true
    end
    for v = -3, 3 do assert.is_true(seen[v], "value " .. v) end
    assert.are.same(random.reference_randint(50, 0, 10, "int16", seed, 7),
                    {table.unpack(random.reference_randint(78, 0, 10, "int16", seed), 29, 78)})
  end)

  it("have CPU references for uniform and normal: shift + scale * v, rounded once to dtype", function()
    local seed = math.random(0, 1 << 50)
    for _, dtype in ipairs{"float32", "float64"} do
      local u = random.reference(301, dtype, false, seed)
      local z = random.reference(301, dtype, true, seed, 5)
      local uniform = random.reference_uniform(301, -2, 3.5, dtype, seed)
      local normal = random.reference_normal(301, 10, 0.25, dtype, seed, 5)
      for i = 1, 301 do
        local want_u, want_z = -2 + 5.5 * u[i], 10 + 0.25 * z[i]
        if dtype == "float32" then want_u, want_z = helpers.f32(want_u), helpers.f32(want_z) end
        assert.are.equal(want_u, uniform[i])
        assert.are.equal(want_z, normal[i])
        assert.is_true(uniform[i] >= -2 and uniform[i] <= 3.5)
      end
    end
  end)

  it("twin choice's drawn samples: randint's draws, each value kept the first time", function()
    local seed = math.random(0, 1 << 50)
    for _, n in ipairs{20000, (1 << 40) + 3} do
      local sample = random.reference_sample(n, 5000, seed, 7)
      local draws = random.reference_randint(12000, 0, n, "int64", seed, 7)
      local seen, want = {}, {}
      for _, v in ipairs(draws) do
        if not seen[v] and #want < 5000 then seen[v], want[#want + 1] = true, v + 1 end
      end
      assert.are.equal(5000, #want)                    -- 12000 draws of 20000 values hold 5000
      assert.are.same(want, sample)
    end
    helpers.assert_error("bad argument #1 to 'reference_sample' (n must be a whole number of at least 1, got 0)",
                         random.reference_sample, 0, 0, 1)
    helpers.assert_error("bad argument #2 to 'reference_sample' (count must be a whole number in [0, min(n, 2^24)], "
                         .. "got 6)", random.reference_sample, 5, 6, 1)
    helpers.assert_error("bad argument #2 to 'reference_sample' (count must be a whole number in [0, min(n, 2^24)], "
                         .. "got -1)", random.reference_sample, 20000, -1, 1)
    helpers.assert_error("bad argument #3 to 'reference_sample' (integer seed expected, got nil)",
                         random.reference_sample, 5, 2)
  end)

  it("compile their kernels", function()
    assert.is_true(#gpu.compile(gpu.kernel_sources["random.cu"], {arch = "sm_90", no_extern_c = true}) > 0)
    -- the elementwise kernels: rows gathered a unit of each element size, choice's pick and keys
    local kernels = {random.pick_kernel(), random.key_kernel()}
    for _, unit in ipairs{"uint8", "uint16", "uint32", "uint64"} do kernels[#kernels + 1] = random.gather_kernel(unit) end
    for _, k in ipairs(kernels) do
      assert.is_true(#gpu.compile(k.source, {arch = "sm_90", no_extern_c = true}) > 0, k.name)
    end
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
    helpers.assert_error("bad argument #2 to 'rand' (option 'seed' must be an integer, got float)",
                         random.rand, 10, {seed = 1.5})
    helpers.assert_error("bad argument #1 to 'rand' (shape must be a number or a table of whole numbers, got string)",
                         random.rand, "x")
  end)

  it("check the arguments of uniform, normal and randint", function()
    helpers.assert_error("bad argument #1 to 'uniform' (low must be a number, got string)", random.uniform, "a", 1, 3)
    helpers.assert_error("bad argument #3 to 'uniform' (shape expected, got no value)", random.uniform, 0, 1)
    helpers.assert_error("bad argument #4 to 'uniform' (dtype must be float32 or float64, got 'int32')",
                         random.uniform, 0, 1, 3, "int32")
    helpers.assert_error("bad argument #2 to 'uniform' (high - low must be finite, got inf)",
                         random.uniform, -math.huge, 0, 3)
    helpers.assert_error("bad argument #4 to 'uniform' (unknown option 'sead')", random.uniform, 0, 1, 3, {sead = 1})
    helpers.assert_error("bad argument #2 to 'normal' (std must be non-negative, got -1)", random.normal, 0, -1, 3)
    helpers.assert_error("bad argument #2 to 'normal' (std must be a number, got nil)", random.normal, 0)
    helpers.assert_error("bad argument #5 to 'normal' (unknown option 'sead')", random.normal, 0, 1, 3, "float64",
                         {sead = 1})
    helpers.assert_error("bad argument #3 to 'randint' (shape expected, got no value)", random.randint, 0, 10)
    helpers.assert_error("bad argument #3 to 'randint' (negative dimension -2 in shape)", random.randint, 0, 10, {-2})
    helpers.assert_error("bad argument #4 to 'randint' (dtype must be int8, uint8, int16, uint16, int32, uint32, "
                         .. "int64 or uint64, got 'float32')", random.randint, 0, 10, 5, "float32")
    helpers.assert_error("bad argument #4 to 'randint' (unknown option 'sead')", random.randint, 0, 10, 5, {sead = 1})
    helpers.assert_error("bad argument #5 to 'randint' (option 'seed' must be an integer, got string)",
                         random.randint, 0, 10, 5, "int8", {seed = "1"})
    helpers.assert_error("bad argument #2 to 'randint' (high must be a whole number, got 1.5)", random.randint, 0, 1.5, 5)
    helpers.assert_error("bad argument #1 to 'randint' (low must be a whole number, got nil)", random.randint, nil, 1, 5)
    helpers.assert_error("bad argument #2 to 'randint' (high must be greater than low, got low 5 and high 5)",
                         random.randint, 5, 5, 3)
    helpers.assert_error("bad argument #2 to 'randint' (high must be greater than low, got low 5 and high -1)",
                         random.randint, 5, -1, 3)
    helpers.assert_error("bad argument #1 to 'randint' (low -129 is out of bounds for int8: at least -128)",
                         random.randint, -129, 0, 3, "int8")
    helpers.assert_error("bad argument #2 to 'randint' (high 129 is out of bounds for int8: at most 128, as high "
                         .. "is excluded)", random.randint, 0, 129, 3, "int8")
    helpers.assert_error("bad argument #1 to 'randint' (low -1 is out of bounds for uint64: at least 0)",
                         random.randint, -1, 5, 3, "uint64")
    helpers.assert_error("bad argument #2 to 'randint' (high 18446744073709551616 is out of bounds for int64: at "
                         .. "most 9223372036854775808, as high is excluded)", random.randint, 0, 2.0 ^ 64, 3)
    helpers.assert_error("bad argument #2 to 'randint' (high 18446744073709555712 is out of bounds for uint64: at "
                         .. "most 18446744073709551616, as high is excluded)", random.randint, 0, 2.0 ^ 64 + 4096,
                         3, "uint64")
    helpers.assert_error("bad argument #4 to 'reference_randint' (int8, uint8, int16, uint16, int32, uint32, int64 "
                         .. "or uint64 expected, got float32)", random.reference_randint, 5, 0, 10, "float32", 1)
    helpers.assert_error("bad argument #3 to 'reference_randint' (high must be greater than low, got low 3 and high 3)",
                         random.reference_randint, 5, 3, 3, "int8", 1)
    helpers.assert_error("bad argument #5 to 'reference_uniform' (integer seed expected, got nil)",
                         random.reference_uniform, 5, 0, 1, "float32")
    helpers.assert_error("bad argument #4 to 'reference_normal' ('float32' or 'float64' expected, got int8)",
                         random.reference_normal, 5, 0, 1, "int8", 1)
  end)

  it("check the arguments of permutation, shuffle and choice", function()
    helpers.assert_error("bad argument #1 to 'permutation' (a whole number or a GPUArray expected, got string)",
                         random.permutation, "x")
    helpers.assert_error("bad argument #1 to 'permutation' (a whole number or a GPUArray expected, got 2.5)",
                         random.permutation, 2.5)
    helpers.assert_error("bad argument #1 to 'permutation' (a must not be negative, got -1)", random.permutation, -1)
    helpers.assert_error("bad argument #2 to 'permutation' (unknown option 'axis')", random.permutation, 5, {axis = 1})
    helpers.assert_error("bad argument #1 to 'shuffle' (GPUArray expected, got number)", random.shuffle, 5)
    helpers.assert_error("bad argument #1 to 'choice' (a whole number or a GPUArray expected, got table)",
                         random.choice, {1, 2}, 1)
    helpers.assert_error("bad argument #1 to 'choice' (a must not be negative, got -1)", random.choice, -1, 1)
    helpers.assert_error("bad argument #1 to 'choice' (cannot choose from an empty population)", random.choice, 0, 1)
    helpers.assert_error("bad argument #2 to 'choice' (size expected, got no value)", random.choice, 5)
    helpers.assert_error("bad argument #2 to 'choice' (shape must be a number or a table of whole numbers, got 1.5)",
                         random.choice, 5, 1.5)
    helpers.assert_error("bad argument #3 to 'choice' (unknown option 'weights')", random.choice, 5, 3, {weights = {}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'replace' must be a boolean, got number)",
                         random.choice, 5, 3, {replace = 1})
    helpers.assert_error("bad argument #2 to 'choice' (cannot take a sample of 6 from 5 without replacement)",
                         random.choice, 5, 6, {replace = false})
    helpers.assert_error("bad argument #2 to 'choice' (cannot take a sample of 6 from 5 without replacement)",
                         random.choice, 5, {2, 3}, {replace = false, p = {0.2, 0.2, 0.2, 0.2, 0.2}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be 1-d of length 3, got shape (2,))",
                         random.choice, 3, 2, {p = {0.5, 0.5}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be 1-d of length 2, got shape (1,2))",
                         random.choice, 2, 2, {p = {{0.5, 0.5}}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be a GPUArray or a table of numbers)",
                         random.choice, 2, 2, {p = {"a", "b"}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be a GPUArray or a table of numbers, got number)",
                         random.choice, 2, 2, {p = 0.5})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' has a negative probability, -0.25)",
                         random.choice, 3, 2, {p = {0.5, 0.75, -0.25}})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' contains NaN)",
                         random.choice, 3, 2, {p = {0.5, 0 / 0, 0.5}})
    helpers.assert_error("bad argument #3 to 'choice' (probabilities in option 'p' sum to 0.875, not 1)",
                         random.choice, 3, 2, {p = {0.5, 0.25, 0.125}})
    -- NumPy's tolerance for float64: sqrt(2^-52), about 1.5e-8
    local off = 0.5 + (0.5 + 1e-7)
    helpers.assert_error(("bad argument #3 to 'choice' (probabilities in option 'p' sum to %.17g, not 1)"):format(off),
                         random.choice, 2, 2, {p = {0.5, 0.5 + 1e-7}})
    helpers.assert_error("bad argument #3 to 'choice' (a sample of 3 without replacement needs as many nonzero "
                         .. "probabilities, got 2)", random.choice, 4, 3, {replace = false, p = {0.5, 0, 0.5, 0}})
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

  helpers.gpu_it("uniform and normal equal the CPU reference", function()
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "float64"} do
      local seed = math.random(0, 1 << 50)
      local n = 1027
      local low, high = -2.5 + math.random(), 3 + 10 * math.random()
      local u = random.uniform(low, high, n, dtype, {seed = seed})
      assert.are.equal(dtype, u.dtype)
      local h, want = R.get(u), random.reference_uniform(n, low, high, dtype, seed)
      local least, greatest = low, high                  -- as rounded to dtype
      if dtype == "float32" then least, greatest = helpers.f32(low), helpers.f32(high) end
      for i = 1, n do
        assert.are.equal(want[i], h[i], ("%s uniform %d"):format(dtype, i))
        assert.is_true(h[i] >= least and h[i] <= greatest)
      end
      local mean, std = 4 * math.random() - 2, 0.5 + math.random()
      local z = random.normal(mean, std, {n}, dtype, {seed = seed, stream = s})
      s:synchronize()
      local hz, want_z = R.get(z), random.reference_normal(n, mean, std, dtype, seed)
      local standard = random.reference(n, dtype, true, seed)
      -- the standard normal differs from Lua's by what the first test allows (4e-6 and 1e-13
      -- relative), scaled by std, and the result's own rounding
      local tol = dtype == "float32" and 5e-6 or 2e-13
      for i = 1, n do
        assert(math.abs(hz[i] - want_z[i]) <= tol * (math.abs(mean) + std * (1 + math.abs(standard[i]))),
               ("%s normal %d: %.17g vs %.17g"):format(dtype, i, hz[i], want_z[i]))
      end
      assert.are.same(R.get(random.rand(n, dtype, {seed = seed})):totable(),
                      R.get(random.uniform(0, 1, n, dtype, {seed = seed})):totable())
      local one = random.uniform(1, 2, {}, dtype, {seed = seed})
      assert.are.equal(0, one.ndim)
      assert.are.equal(random.reference_uniform(1, 1, 2, dtype, seed)[1], R.get(one)[1])
      assert.are.same({3, 0}, random.normal(0, 1, {3, 0}, dtype).shape)
    end
  end)

  helpers.gpu_it("randint equals the CPU reference for every integer dtype and range", function()
    local cases = {
      {"int8", -128, 128}, {"int8", -5, 7}, {"uint8", 0, 256}, {"uint8", 3, 4},
      {"int16", -32768, 32768}, {"int16", -1000, 999}, {"uint16", 0, 65536}, {"uint16", 100, 40000},
      {"int32", -(1 << 31), 1 << 31}, {"int32", -7, 1 << 30}, {"uint32", 0, 1 << 32},
      {"uint32", 0, (1 << 31) + 1},                                     -- rejects about half the words
      {"int64", -5, (1 << 31) - 4}, {"int64", 10, 10 + (1 << 32)}, {"int64", 0, (1 << 32) + 1},
      {"int64", -(1 << 40), 3 * (1 << 40) + 12345}, {"int64", 0, 3 * (1 << 61) + 7},   -- 64-bit words
      {"int64", math.mininteger, 2.0 ^ 63}, {"int64", math.mininteger, math.maxinteger},
      {"uint64", 0, 2.0 ^ 64}, {"uint64", 2.0 ^ 63, 2.0 ^ 64}, {"uint64", 2.0 ^ 64 - 4096, 2.0 ^ 64},
      {"uint64", 12, 2.0 ^ 63 + 2.0 ^ 62},
    }
    for _, case in ipairs(cases) do
      local dtype, low, high = table.unpack(case)
      local seed = math.random(0, 1 << 50)
      local a = random.randint(low, high, 1027, dtype, {seed = seed})
      assert.are.equal(dtype, a.dtype)
      assert_values(random.reference_randint(1027, low, high, dtype, seed), a,
                    ("randint(%s, %s) %s"):format(low, high, dtype))
    end
    local seed = math.random(0, 1 << 50)
    local m = random.randint(-3, 100, {3, 7}, {seed = seed})
    assert.are.equal("int64", m.dtype)
    assert.are.same({3, 7}, m.shape)
    assert_values(random.reference_randint(21, -3, 100, "int64", seed), m, "randint of a matrix")
    assert.are.same({0, 4}, random.randint(0, 5, {0, 4}, "int8").shape)
  end)

  helpers.gpu_it("advance the default generator's counter by the blocks each call draws", function()
    local seed = math.random(0, 1 << 40)
    random.seed(seed)
    local a = random.rand(5)                             -- blocks 0 and 1, four values each
    local b = random.randint(0, 10, 9, "int16")          -- 2 to 4, four integers each
    local c = random.randint(0, 2.0 ^ 50, 3)             -- 5 and 6, two 64-bit words each
    local d = random.uniform(1, 2, 3, "float64")         -- 7 and 8
    local e = random.normal(0, 2, 6)                     -- 9 and 10
    local f = random.permutation(5)                      -- 11 and 12: five 32-bit keys
    local g = random.choice(7, 4)                        -- 13
    random.randint(0, 10, 4, "int8", {seed = 1})         -- its own counter: the default's stays
    local k = random.randint(0, 1000, 4, "int32")        -- 14
    -- each gives back its array alone
    assert.are.equal(1, select("#", random.rand(1, {seed = 1})))
    assert.are.equal(1, select("#", random.randint(0, 9, 1, "int8", {seed = 1})))
    assert.are.equal(1, select("#", random.gamma(2, 1, 1, "float32", {seed = 1})))
    assert_values(random.reference(5, "float32", false, seed), a, "rand")
    assert_values(random.reference_randint(9, 0, 10, "int16", seed, 2), b, "randint")
    assert_values(random.reference_randint(3, 0, 2.0 ^ 50, "int64", seed, 5), c, "wide randint")
    assert_values(random.reference_uniform(3, 1, 2, "float64", seed, 7), d, "uniform")
    local he, want_e = R.get(e), random.reference_normal(6, 0, 2, "float32", seed, 9)
    for i = 1, 6 do assert(math.abs(he[i] - want_e[i]) <= 1e-5 * (1 + math.abs(want_e[i])), "normal " .. i) end
    assert_values(random.reference_permutation(5, seed, 11), f, "permutation")
    assert_values(random.reference_randint(4, 1, 8, "int64", seed, 13), g, "choice")
    assert_values(random.reference_randint(4, 0, 1000, "int32", seed, 14), k, "randint after a seeded call")
  end)

  helpers.gpu_it("randint reaches both ends of [low, high) and stays inside, for int8 to uint64", function()
    local function bits(v)
      if math.type(v) == "integer" then return v end
      return math.tointeger(v >= 2.0 ^ 63 and v - 2.0 ^ 64 or v)
    end
    -- {low, high, high - low}: the least and the greatest values of each dtype
    local ends = {
      int8 = {{-128, -125, 3}, {125, 128, 3}}, uint8 = {{0, 3, 3}, {253, 256, 3}},
      int16 = {{-32768, -32765, 3}, {32765, 32768, 3}}, uint16 = {{0, 3, 3}, {65533, 65536, 3}},
      int32 = {{-(1 << 31), 3 - (1 << 31), 3}, {(1 << 31) - 3, 1 << 31, 3}},
      uint32 = {{0, 3, 3}, {(1 << 32) - 3, 1 << 32, 3}},
      int64 = {{math.mininteger, math.mininteger + 3, 3}, {math.maxinteger - 2, 2.0 ^ 63, 3}},
      uint64 = {{0, 3, 3}, {2.0 ^ 64 - 4096, 2.0 ^ 64, 4096}},
    }
    for dtype, ranges in pairs(ends) do
      for _, range in ipairs(ranges) do
        local low, high, count = table.unpack(range)
        local n = count == 3 and 3000 or 200000
        local h = R.get(random.randint(low, high, n, dtype))
        local seen, distinct = {}, 0
        for i = 1, n do
          local offset = h[i] - bits(low)        -- wraps where low is a uint64's top half
          assert(offset >= 0 and offset < count, ("%s: %s outside [%s, %s)"):format(dtype, h[i], low, high))
          if not seen[offset] then seen[offset], distinct = true, distinct + 1 end
        end
        assert(seen[0] and seen[count - 1], ("%s [%s, %s): an end never drawn"):format(dtype, low, high))
        assert.are.equal(count, distinct)
      end
    end
    -- wider than 2^32: inside, near both ends, the mean in the middle (5 sigma)
    local n = 100000
    local low, high = -(1 << 40), (1 << 40) + 5
    local h = R.get(random.randint(low, high, n))
    local least, greatest, sum = math.maxinteger, math.mininteger, 0
    for i = 1, n do
      local v = h[i]
      assert(v >= low and v < high, "outside: " .. v)
      least, greatest, sum = math.min(least, v), math.max(greatest, v), sum + v
    end
    local width = high - low
    assert(least < low + width / 1000 and greatest > high - width / 1000, "not spread")
    assert(math.abs(sum / n - (low + high - 1) / 2) <= 5 * width / math.sqrt(12 * n), "mean " .. sum / n)
    -- all of uint64 and of int64: the top bit set in half of them
    for _, case in ipairs{{"uint64", 0, 2.0 ^ 64}, {"int64", math.mininteger, 2.0 ^ 63}} do
      local hh = R.get(random.randint(case[2], case[3], n, case[1]))
      local top = 0
      for i = 1, n do if hh[i] < 0 then top = top + 1 end end
      assert(math.abs(top - n / 2) <= 5 * math.sqrt(n / 4), case[1] .. ": top bit " .. top)
    end
  end)

  helpers.gpu_it("repeat per seed, on streams too, and move on without one", function()
    local makers = {
      function(o) return random.randint(-50, 50, 300, "int8", o) end,
      function(o) return random.randint(0, 2.0 ^ 64, 300, "uint64", o) end,
      function(o) return random.uniform(-1, 1, 300, "float64", o) end,
      function(o) return random.normal(3, 2, 300, "float32", o) end,
      function(o) return random.permutation(300, o) end,
      function(o) return random.choice(1000, 300, o) end,
      function(o)
        o = o or {}
        o.replace = false
        return random.choice(1000, 300, o)
      end,
      function(o)
        o = o or {}
        o.p = {0.25, 0.5, 0, 0.25}
        return random.choice(4, 300, o)
      end,
    }
    local s = gpu.Stream()
    for k, make in ipairs(makers) do
      local seed = math.random(0, 1 << 40)
      local first = elements(make({seed = seed}))
      assert.are.same(first, elements(make({seed = seed})), "maker " .. k)
      assert.are_not.same(first, elements(make({seed = seed + 1})), "maker " .. k)
      local on_stream = make({seed = seed, stream = s})
      s:synchronize()
      assert.are.same(first, elements(on_stream), "maker " .. k)
      random.seed(seed)
      local x = elements(make())
      assert.are.same(first, x, "maker " .. k)               -- the default generator starts at 0
      assert.are_not.same(x, elements(make()), "maker " .. k)   -- and moves on
    end
  end)

  helpers.gpu_it("shuffle each run of tied keys from its own blocks, uniformly, as the twin does", function()
    -- 12000 runs of 3 tied keys, their places given in descending order (the kernel sorts a
    -- run's places first), then one run of 40 and one lone key
    local runs, keys, places = 12000, {}, {}
    for r = 0, runs - 1 do
      for k = 1, 3 do keys[#keys + 1], places[#places + 1] = r, 3 * r + 4 - k end
    end
    for k = 1, 40 do keys[#keys + 1], places[#places + 1] = runs, 3 * runs + 41 - k end
    keys[#keys + 1], places[#places + 1] = runs + 1, #places + 1
    local seed, first = math.random(0, 1 << 50), math.random(0, 1 << 40)
    local d_places = gpu.to_gpu(gpu.host.from_table(places, "int64"))
    random.shuffle_ties(d_places, gpu.to_gpu(gpu.host.from_table(keys, "uint32")), seed, first)
    local want = random.reference_shuffle_ties(places, keys, seed, first)
    assert_values(want, d_places, "shuffled ties")
    local got = R.get(d_places)
    -- each of a run of 3's six orders about 2000 times: chi-square with 5 degrees of freedom,
    -- above 25.7 with probability 1e-4
    local counts = {}
    for r = 0, runs - 1 do
      local a, b = got[3 * r + 1] - 3 * r, got[3 * r + 2] - 3 * r
      local order = a * 10 + b
      counts[order] = (counts[order] or 0) + 1
    end
    local chi2, orders = 0, 0
    for _, c in pairs(counts) do
      chi2, orders = chi2 + (c - runs / 6) ^ 2 / (runs / 6), orders + 1
    end
    assert.are.equal(6, orders)
    assert(chi2 < 25.7, "chi-square of the orders of runs of 3: " .. chi2)
    local long = {table.unpack(want, 3 * runs + 1, 3 * runs + 40)}
    table.sort(long)
    for k = 1, 40 do assert.are.equal(3 * runs + k, long[k]) end
    assert.are.equal(#places, want[#places])
  end)

  helpers.gpu_it("permutation gives the places that sort its 32-bit keys, ties shuffled: exact, and a bijection",
                 function()
    for _, n in ipairs{0, 1, 2, 100, 257, 5000} do
      local seed = math.random(0, 1 << 50)
      local p = random.permutation(n, {seed = seed})
      assert.are.equal("int64", p.dtype)
      assert.are.same({n}, p.shape)
      assert_values(random.reference_permutation(n, seed), p, "permutation of " .. n)
    end
    -- 2^18 keys of 32 bits tie in about 8 pairs, so the ties' shuffle is compared too: a seed
    -- whose keys tie (none do with probability about e^-8)
    local tied_n, seed, ties = (1 << 18) + 11, nil, 0
    for _ = 1, 5 do
      seed = math.random(0, 1 << 50)
      local distinct = {}
      ties = tied_n
      for _, key in ipairs(random.reference_randint(tied_n, 0, 1 << 32, "uint32", seed)) do
        if not distinct[key] then distinct[key], ties = true, ties - 1 end
      end
      if ties > 0 then break end
    end
    assert(ties > 0, "no tied keys among " .. tied_n .. " in five seeds")
    assert_values(random.reference_permutation(tied_n, seed), random.permutation(tied_n, {seed = seed}),
                  ("permutation of %d with %d tied keys"):format(tied_n, ties))
    local n = 300007
    local h = R.get(random.permutation(n))
    local seen = {}
    for i = 1, n do
      local v = h[i]
      assert(v >= 1 and v <= n and not seen[v], "not a bijection at " .. i)
      seen[v] = true
    end
  end)

  helpers.gpu_it("permutation and shuffle move whole rows, of every element size and of views", function()
    local function values_of(dtype, count)
      local t = {}
      for i = 1, count do
        if dtype:match("^complex") then t[i] = gpu.complex(i, -i)
        elseif dtype == "bool" then t[i] = math.random() < 0.5
        elseif dtype == "int8" then t[i] = i % 256 - 128
        else t[i] = i end
      end
      return t
    end
    local function on_gpu(dtype, shape)
      local count = 1
      for _, d in ipairs(shape) do count = count * d end
      return gpu.to_gpu(gpu.host.from_table(values_of(dtype, count), dtype)):reshape(shape), count
    end
    for _, dtype in ipairs{"bool", "int8", "int16", "float32", "float64", "complex64", "complex128"} do
      for _, shape in ipairs{{700}, {700, 3}, {40, 2, 3}} do
        local a, count = on_gpu(dtype, shape)
        local seed = math.random(0, 1 << 50)
        local p = random.permutation(a, {seed = seed})
        assert.are.same(shape, p.shape)
        assert.are.equal(dtype, p.dtype)
        local want = rows_at(elements(a), count // shape[1], random.reference_permutation(shape[1], seed))
        assert.are.same(want, elements(p), dtype)
        random.shuffle(a, {seed = seed})
        assert.are.same(want, elements(a), dtype)
      end
    end
    local s = gpu.Stream()
    local seed = math.random(0, 1 << 50)
    -- a transposed view (gathered from a copy, shuffled back through the view)
    local base = on_gpu("float32", {3, 500})
    local view = base:transpose()
    local want = rows_at(elements(view:copy()), 3, random.reference_permutation(500, seed))
    assert.are.same(want, elements(random.permutation(view, {seed = seed})))
    random.shuffle(view, {seed = seed})
    assert.are.same(want, elements(view:copy()))
    -- rows 2 to 600 of a matrix: contiguous at an offset, read in place
    local matrix = on_gpu("float64", {600, 2})
    local rows = matrix:narrow(1, 2, 599)
    assert.is_true(rows.is_contiguous)
    want = rows_at(elements(rows:copy()), 2, random.reference_permutation(599, seed))
    assert.are.same(want, elements(random.permutation(rows, {seed = seed, stream = s})))
    random.shuffle(rows, {seed = seed, stream = s})
    s:synchronize()
    assert.are.same(want, elements(rows:copy()))
    local first_row = R.get(matrix)
    assert.are.same({1, 2}, {first_row[1], first_row[2]})
    -- no rows, and no axis
    local empty = gpu.gpuarray.zeros({0, 3}, "float32")
    assert.are.same({0, 3}, random.permutation(empty).shape)
    random.shuffle(empty)
    local scalar = gpu.gpuarray.zeros({}, "float32")
    helpers.assert_error("bad argument #1 to 'permutation' (a 0-d array has no axis 1 to take rows along)",
                         random.permutation, scalar)
    helpers.assert_error("bad argument #1 to 'shuffle' (a 0-d array has no axis 1 to shuffle along)",
                         random.shuffle, scalar)
    helpers.assert_error("bad argument #1 to 'choice' (a 0-d array has no axis 1 to take rows along)",
                         random.choice, scalar, 1)
  end)

  -- The distinct values of how many draws from randint(0, n) (from block 0) hold count of
  -- them: choice's draws, doubled from m while too few.
  local function draws_for(n, count, seed, m)
    while true do
      local seen, distinct = {}, 0
      for _, v in ipairs(random.reference_randint(m, 0, n, "int64", seed)) do
        if not seen[v] then seen[v], distinct = true, distinct + 1 end
      end
      if distinct >= count then return m end
      m = 2 * m
    end
  end

  helpers.gpu_it("choice without replacement of a small part keeps the first distinct of randint's draws", function()
    -- 2^16 + 3 places, a sample of 5000; the same on a stream
    local n, seed = (1 << 16) + 3, math.random(0, 1 << 50)
    local want = random.reference_sample(n, 5000, seed)
    local c = random.choice(n, {50, 100}, {replace = false, seed = seed})
    assert.are.same({50, 100}, c.shape)
    assert_values(want, c, "sampled choice")
    local s = gpu.Stream()
    local on_stream = random.choice(n, 5000, {replace = false, seed = seed, stream = s})
    s:synchronize()
    assert_values(want, on_stream, "sampled choice on a stream")
    s:free()
    -- a quarter of 2^14 + 5 (hundreds of repeats among the draws), ranges past 2^32 (64-bit
    -- draws, two a block), and samples that one block takes (up to 2048 draws; repeats too)
    for _, case in ipairs{{(1 << 14) + 5, ((1 << 14) + 5) // 4}, {(1 << 40) + 7, 3000},
                          {1 << 14, 1500}, {(1 << 40) + 7, 1000}, {(1 << 16) + 3, 1}} do
      local got = random.choice(case[1], case[2], {replace = false, seed = seed})
      assert_values(random.reference_sample(case[1], case[2], seed), got, "sample of " .. case[2])
      local h, seen = R.get(got), {}
      for i = 1, case[2] do
        assert(h[i] >= 1 and h[i] <= case[1] and not seen[h[i]], "repeated or outside: " .. h[i])
        seen[h[i]] = true
      end
    end
    -- the default generator moves past the draws' blocks
    random.seed(seed)
    local d = random.choice(n, 300, {replace = false})
    local k = random.randint(0, 1000, 4, "int32")
    assert_values(random.reference_sample(n, 300, seed), d, "sampled choice, default")
    local blocks = (draws_for(n, 300, seed, random.sample_draws(n, 300)) + 3) // 4
    assert_values(random.reference_randint(4, 0, 1000, "int32", seed, blocks), k, "randint after it")
  end)

  helpers.gpu_it("choice without replacement draws twice as many while the draws hold too few distinct values", function()
    local n, seed = (1 << 14) + 1, math.random(0, 1 << 50)
    local count = n // 4
    local sample_draws = random.sample_draws
    random.sample_draws = function(_, wanted) return wanted // 8 end
    local ok, failure = pcall(function()
      assert_values(random.reference_sample(n, count, seed),
                    random.choice(n, count, {replace = false, seed = seed}), "sample after shortfalls")
      random.seed(seed)
      random.choice(n, count, {replace = false})
      local k = random.randint(0, 1000, 4, "int32")
      local blocks = (draws_for(n, count, seed, count // 8) + 3) // 4
      assert_values(random.reference_randint(4, 0, 1000, "int32", seed, blocks), k, "randint after it")
    end)
    random.sample_draws = sample_draws
    assert(ok, failure)
  end)

  helpers.gpu_it("choice takes randint's places, a permutation's first ones, or the rows at them", function()
    local seed = math.random(0, 1 << 50)
    local c = random.choice(10, {3, 4}, {seed = seed})
    assert.are.same({3, 4}, c.shape)
    assert.are.equal("int64", c.dtype)
    assert_values(random.reference_randint(12, 1, 11, "int64", seed), c, "choice with replacement")
    local values = {}
    for i = 1, 10 do values[i] = i / 4 end
    local a = gpu.to_gpu(gpu.host.from_table(values, "float64")):reshape({5, 2})
    local rows = random.choice(a, 7, {seed = seed})
    assert.are.same({7, 2}, rows.shape)
    assert.are.same(rows_at(values, 2, random.reference_randint(7, 1, 6, "int64", seed)), elements(rows))
    local d = random.choice(50, 20, {replace = false, seed = seed})
    assert_values({table.unpack(random.reference_permutation(50, seed), 1, 20)}, d, "choice without replacement")
    assert.are.same(rows_at(values, 2, random.reference_permutation(5, seed)),
                    elements(random.choice(a, 5, {replace = false, seed = seed})))
    local h = R.get(random.choice(3000, {10, 30}, {replace = false}))
    local seen = {}
    for i = 1, 300 do
      assert(h[i] >= 1 and h[i] <= 3000 and not seen[h[i]], "repeated or outside: " .. h[i])
      seen[h[i]] = true
    end
    assert.are.same({0}, random.choice(5, 0).shape)
    assert.are.same({0}, random.choice(0, 0).shape)
    assert.are.same({0}, random.choice(5, 0, {replace = false}).shape)
    assert.are.same({0, 2}, random.choice(a, {0}).shape)
  end)

  helpers.gpu_it("choice by p searches the running total: exact where it has no rounding", function()
    local weights = {8, 0, 16, 4, 0, 20, 16, 0}          -- sixty-fourths: every running total exact
    local p, cdf, total = {}, {}, 0
    for i, w in ipairs(weights) do
      p[i] = w / 64
      total = total + p[i]
      cdf[i] = total
    end
    local spread = {}                                     -- p at the even places of 16
    for i = 1, 8 do spread[2 * i - 1], spread[2 * i] = 5, p[i] end
    local forms = {p, gpu.to_gpu(gpu.host.from_table(p, "float32")),
                   R.every(gpu.to_gpu(gpu.host.from_table(spread, "float64")):narrow(1, 2, 15), 2)}
    assert.is_false(forms[3].is_contiguous)
    local count = 2001
    for k, given in ipairs(forms) do
      local seed = math.random(0, 1 << 50)
      local c = random.choice(8, count, {p = given, seed = seed})
      local u = random.reference(count, "float64", false, seed)
      local want = {}
      for i = 1, count do
        local j = 1
        while cdf[j] <= u[i] do j = j + 1 end
        want[i] = j
      end
      assert_values(want, c, "choice by p, form " .. k)
    end
  end)

  helpers.gpu_it("choice by p draws each place as often as p says, never one of p 0", function()
    local p = {0.1, 0, 0.2, 0.3, 0.4, 0}
    local n = 1000000
    local s = gpu.Stream()
    local c = random.choice(6, n, {p = p, stream = s})
    s:synchronize()
    local h = R.get(c)
    local counts = {0, 0, 0, 0, 0, 0}
    for i = 1, n do
      local v = h[i]
      assert(v >= 1 and v <= 6, "outside: " .. v)
      counts[v] = counts[v] + 1
    end
    for k = 1, 6 do
      local sigma = math.sqrt(n * p[k] * (1 - p[k]))
      assert(math.abs(counts[k] - n * p[k]) <= 5 * sigma, ("place %d: %d of %d"):format(k, counts[k], n))
    end
    assert.are.equal(0, counts[2])
    assert.are.equal(0, counts[6])
    -- without replacement: the places of nonzero p, each once; ordered pairs as often as drawing
    -- one place at a time (NumPy's) gives them
    local q = {0.5, 0, 0.25, 0.25, 0}
    local all = R.get(random.choice(5, 3, {p = q, replace = false}))
    local drawn = {all[1], all[2], all[3]}
    table.sort(drawn)
    assert.are.same({1, 3, 4}, drawn)
    local chance = {["1,3"] = 1 / 4, ["1,4"] = 1 / 4, ["3,1"] = 1 / 6, ["3,4"] = 1 / 12, ["4,1"] = 1 / 6,
                    ["4,3"] = 1 / 12}
    local trials, pairs_drawn = 3000, {}
    local weights = gpu.to_gpu(gpu.host.from_table(q, "float64"))
    for t = 1, trials do
      local two = R.get(random.choice(5, 2, {p = t % 2 == 0 and q or weights, replace = false}))
      local key = two[1] .. "," .. two[2]
      assert(chance[key], "drew " .. key)
      pairs_drawn[key] = (pairs_drawn[key] or 0) + 1
    end
    for key, prob in pairs(chance) do
      local sigma = math.sqrt(trials * prob * (1 - prob))
      assert(math.abs((pairs_drawn[key] or 0) - trials * prob) <= 5 * sigma,
             ("pair %s: %d of %d"):format(key, pairs_drawn[key] or 0, trials))
    end
  end)

  helpers.gpu_it("choice checks a GPUArray p as a table, and refuses freed arrays", function()
    local function on_gpu(t, dtype) return gpu.to_gpu(gpu.host.from_table(t, dtype or "float64")) end
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' has a negative probability, -0.25)",
                         random.choice, 3, 2, {p = on_gpu({0.5, 0.75, -0.25})})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' contains NaN)",
                         random.choice, 3, 2, {p = on_gpu({0.5, 0 / 0, 0.5})})
    helpers.assert_error("bad argument #3 to 'choice' (probabilities in option 'p' sum to 0.875, not 1)",
                         random.choice, 3, 2, {p = on_gpu({0.5, 0.25, 0.125})})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be 1-d of length 3, got shape (4,))",
                         random.choice, 3, 2, {p = on_gpu({0.25, 0.25, 0.25, 0.25})})
    helpers.assert_error("bad argument #3 to 'choice' (option 'p' must be real, got complex64)",
                         random.choice, 2, 1, {p = on_gpu({gpu.complex(0.5, 0), gpu.complex(0.5, 0)}, "complex64")})
    helpers.assert_error("bad argument #3 to 'choice' (a sample of 2 without replacement needs as many nonzero "
                         .. "probabilities, got 1)", random.choice, 3, 2, {replace = false, p = on_gpu({0, 1, 0})})
    -- float32's tolerance is sqrt(2^-23), about 3.5e-4: float32 p off by 1e-4 passes, a table does not
    local near = {0.5, 0.5 + 1e-4}
    assert.are.same({3}, random.choice(2, 3, {p = on_gpu(near, "float32")}).shape)
    helpers.assert_error(("bad argument #3 to 'choice' (probabilities in option 'p' sum to %.17g, not 1)")
                         :format(0.5 + (0.5 + 1e-4)), random.choice, 2, 3, {p = near})
    local a, p = on_gpu({1, 2, 3}), on_gpu({0.5, 0.5, 0})
    p:free()
    helpers.assert_error("bad argument #3 to 'choice' (array has been freed)", random.choice, 3, 2, {p = p})
    a:free()
    helpers.assert_error("bad argument #1 to 'permutation' (array has been freed)", random.permutation, a)
    helpers.assert_error("bad argument #1 to 'shuffle' (array has been freed)", random.shuffle, a)
    helpers.assert_error("bad argument #1 to 'choice' (array has been freed)", random.choice, a, 1)
  end)
end)
