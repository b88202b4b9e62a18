-- gpu.random's distributions (NumPy's: exponential to dirichlet): the Lua twins' moments and
-- structure on the CPU, the argument checks, and on a device the kernels value for value
-- against the twins and their moments on large samples.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local random = require "gpu.random"

local EULER_GAMMA = 0.57721566490153286

-- Each distribution's cases: parameters, whether its values are int64, the scale of its values
-- (for absolute tolerances), whether it can reject (or put a value on a discrete boundary: see
-- the GPU test), and the theoretical mean and variance (nil where the test checks others).
local CASES = {
  {"standard_exponential", {}, mean = 1, var = 1},
  {"exponential", {2.5}, scale = 2.5, mean = 2.5, var = 6.25},
  {"exponential", {0}, mean = 0, var = 0},
  {"standard_gamma", {0.3}, rejects = true, mean = 0.3, var = 0.3},
  {"standard_gamma", {4.5}, rejects = true, scale = 4.5, mean = 4.5, var = 4.5},
  {"standard_gamma", {0}, mean = 0, var = 0},
  {"gamma", {2, 3}, rejects = true, scale = 6, mean = 6, var = 18},
  {"gamma", {1, 0.5}, rejects = true, mean = 0.5, var = 0.25},
  {"beta", {0.5, 2}, rejects = true, mean = 0.2, var = 1 / (6.25 * 3.5)},
  {"beta", {3, 4}, rejects = true, mean = 3 / 7, var = 12 / (49 * 8)},
  {"chisquare", {5}, rejects = true, scale = 5, mean = 5, var = 10},
  {"chisquare", {1}, rejects = true, mean = 1, var = 2},
  {"standard_t", {10}, rejects = true, mean = 0, var = 10 / 8},
  {"f", {5, 20}, rejects = true, mean = 20 / 18, var = 2 * 400 * 23 / (5 * 324 * 16)},
  {"lognormal", {0.5, 0.5}, scale = 2, mean = math.exp(0.625), var = (math.exp(0.25) - 1) * math.exp(1.25)},
  {"laplace", {1, 2}, scale = 2, mean = 1, var = 8},
  {"logistic", {-1, 2}, scale = 2, mean = -1, var = 4 * math.pi ^ 2 / 3},
  {"gumbel", {1, 2}, scale = 2, mean = 1 + 2 * EULER_GAMMA, var = math.pi ^ 2 * 4 / 6},
  {"weibull", {2}, mean = math.sqrt(math.pi) / 2, var = 1 - math.pi / 4},
  {"weibull", {0}, mean = 0, var = 0},
  {"pareto", {6}, mean = 0.2, var = 0.06},
  {"pareto", {1e17}, mean = 1e-17, var = 1e-34},            -- expm1: exp(x) - 1 would give 0
  {"rayleigh", {2}, scale = 2, mean = 2 * math.sqrt(math.pi / 2), var = (4 - math.pi) / 2 * 4},
  {"standard_cauchy", {}},
  {"poisson", {3.5}, integer = true, rejects = true, mean = 3.5, var = 3.5},
  {"poisson", {9.75}, integer = true, rejects = true, mean = 9.75, var = 9.75},      -- inversion
  {"poisson", {10}, integer = true, rejects = true, mean = 10, var = 10},            -- PTRS
  {"poisson", {250}, integer = true, rejects = true, mean = 250, var = 250},
  {"poisson", {0}, integer = true, mean = 0, var = 0},
  {"poisson", {1e12}, integer = true, rejects = true, mean = 1e12, var = 1e12},
  {"binomial", {20, 0.2}, integer = true, rejects = true, mean = 4, var = 3.2},
  {"binomial", {100, 0.0975}, integer = true, rejects = true, mean = 9.75, var = 9.75 * 0.9025},
  {"binomial", {100, 0.1}, integer = true, rejects = true, mean = 10, var = 9},       -- BTRS
  {"binomial", {1000, 0.3}, integer = true, rejects = true, mean = 300, var = 210},
  {"binomial", {100, 0.9}, integer = true, rejects = true, mean = 90, var = 9},      -- 1 - p's failures
  {"binomial", {15, 0.7}, integer = true, rejects = true, mean = 10.5, var = 3.15},
  {"binomial", {1e12, 0.3}, integer = true, rejects = true, mean = 3e11, var = 2.1e11},
  {"binomial", {7, 1}, integer = true, mean = 7, var = 0},
  {"binomial", {1e17, 5e-17}, integer = true, rejects = true, mean = 5, var = 5},  -- 1 - p rounds to 1
  {"binomial", {7, 0}, integer = true, mean = 0, var = 0},
  {"geometric", {0.3}, integer = true, rejects = true, mean = 1 / 0.3, var = 0.7 / 0.09},
  {"geometric", {1}, integer = true, mean = 1, var = 0},
  {"negative_binomial", {3, 0.4}, integer = true, rejects = true, mean = 4.5, var = 11.25},
  {"negative_binomial", {0.5, 0.05}, integer = true, rejects = true, mean = 9.5, var = 190},
}

-- The arguments of reference_<name> for a case: count, the parameters, dtype (floats), seed.
local function reference_of(case, count, dtype, seed, base)
  local name, params = case[1], case[2]
  local arguments = {count}
  for _, p in ipairs(params) do arguments[#arguments + 1] = p end
  if not case.integer then arguments[#arguments + 1] = dtype end
  arguments[#arguments + 1] = seed
  arguments[#arguments + 1] = base
  return random["reference_" .. name](table.unpack(arguments, 1, #params + (case.integer and 3 or 4)))
end

-- The array name(parameters..., size[, dtype], opts) gives.
local function draw(case, size, dtype, opts)
  local arguments = {}
  for _, p in ipairs(case[2]) do arguments[#arguments + 1] = p end
  arguments[#arguments + 1] = size
  if not case.integer then arguments[#arguments + 1] = dtype end
  arguments[#arguments + 1] = opts
  return random[case[1]](table.unpack(arguments, 1, #case[2] + (case.integer and 2 or 3)))
end

local function case_text(case, dtype)
  return ("%s(%s)%s"):format(case[1], table.concat(case[2], ", "), case.integer and "" or " " .. dtype)
end

-- The mean and variance of list t (n values, read by get(i)), and the standard errors of each:
-- the variance's from the sample's fourth central moment.
local function moments(n, get)
  local sum = 0
  for i = 1, n do sum = sum + get(i) end
  local mean = sum / n
  local m2, m4 = 0, 0
  for i = 1, n do
    local d = (get(i) - mean) ^ 2
    m2, m4 = m2 + d, m4 + d * d
  end
  m2, m4 = m2 / n, m4 / n
  return mean, m2, math.sqrt(m2 / n), math.sqrt(math.max(m4 - m2 * m2, 0) / n)
end

-- Asserts that n values (get(i)) have the case's mean and variance within 5 standard errors
-- (the theoretical variance's for the mean).
local function assert_moments(case, n, get, what)
  local mean, var, _, var_error = moments(n, get)
  local mean_error = math.sqrt(case.var / n)
  assert(math.abs(mean - case.mean) <= 5 * mean_error + 1e-12,
         ("%s: mean %.6g, expected %.6g (standard error %.3g)"):format(what, mean, case.mean, mean_error))
  assert(math.abs(var - case.var) <= 5 * var_error + 1e-12,
         ("%s: variance %.6g, expected %.6g (standard error %.3g)"):format(what, var, case.var, var_error))
end

-- The share of n values below x, and whether it is within 5 standard errors of p.
local function assert_share_below(n, get, x, p, what)
  local below = 0
  for i = 1, n do if get(i) < x then below = below + 1 end end
  assert(math.abs(below / n - p) <= 5 * math.sqrt(p * (1 - p) / n),
         ("%s: %.5f below %.4g, expected %.4g"):format(what, below / n, x, p))
end

-- cot(pi p) at the share p of a standard Cauchy below it (with a minus sign below 1/2).
local function cauchy_quantile(p) return math.tan(math.pi * (p - 0.5)) end

describe("random distributions (CPU twins)", function()
  it("have NumPy's means and variances, within 5 standard errors of 20000 values", function()
    local n = 20000
    for _, case in ipairs(CASES) do
      if case.mean then
        local seed = math.random(0, 1 << 50)
        local values = reference_of(case, n, "float64", seed)
        assert.are.equal(n, #values)
        assert_moments(case, n, function(i) return values[i] end, case_text(case, "float64"))
      end
    end
    local seed = math.random(0, 1 << 50)
    local c = random.reference_standard_cauchy(n, "float64", seed)
    for _, p in ipairs{0.1, 0.3, 0.5, 0.75} do
      assert_share_below(n, function(i) return c[i] end, cauchy_quantile(p), p, "standard_cauchy")
    end
  end)

  it("draw each element from its own counter, so that base skips whole elements", function()
    local seed = math.random(0, 1 << 50)
    local cases = {{"standard_gamma", {4.5}}, {"beta", {0.5, 2}}, {"poisson", {10}, integer = true},
                   {"binomial", {100, 0.1}, integer = true}, {"lognormal", {0.5, 0.5}},
                   {"negative_binomial", {3, 0.4}, integer = true}}
    for _, case in ipairs(cases) do
      local all = reference_of(case, 60, "float64", seed)
      assert.are.same({table.unpack(all, 8, 60)}, reference_of(case, 53, "float64", seed, 7), case[1])
      assert.are_not.same(all, reference_of(case, 60, "float64", seed + 1), case[1])
    end
  end)

  it("are what NumPy defines them as, value for value", function()
    local seed, n = math.random(0, 1 << 50), 500
    local e = random.reference_standard_exponential(n, "float64", seed)
    local g = random.reference_standard_gamma(n, 2.5, "float64", seed)
    local same = {
      {random.reference_exponential(n, 1, "float64", seed), e},
      {random.reference_exponential(n, nil, "float64", seed), e},
      {random.reference_gamma(n, 2.5, nil, "float64", seed), g},
      {random.reference_chisquare(n, 5, "float64", seed), g, 2},                  -- 2 gamma(df / 2)
      {random.reference_gamma(n, 2.5, 0.75, "float64", seed), g, 0.75},
      {random.reference_exponential(n, 3, "float64", seed), e, 3},
      {random.reference_rayleigh(n, 1, "float64", seed), e, function(x) return math.sqrt(2 * x) end},
      {random.reference_weibull(n, 1, "float64", seed), e},
      -- exp(x / 2) - 1, which the twin computes as expm1 (more accurate than this near 0: within
      -- a few ulps of exp(x / 2), of 1 + the value)
      {random.reference_pareto(n, 2, "float64", seed), e, function(x) return math.exp(x / 2) - 1 end, 1e-15},
      {random.reference_lognormal(n, nil, nil, "float64", seed),
       random.reference_lognormal(n, 0, 1, "float64", seed)},
      {random.reference_laplace(n, nil, nil, "float64", seed),
       random.reference_laplace(n, 0, 1, "float64", seed)},
      {random.reference_poisson(n, nil, seed), random.reference_poisson(n, 1, seed)},
    }
    for k, s in ipairs(same) do
      local got, from, map = s[1], s[2], s[3]
      for i = 1, n do
        local want = from[i]
        if type(map) == "number" then want = map * want elseif map then want = map(want) end
        if s[4] then
          assert(math.abs(got[i] - want) <= s[4] * (1 + math.abs(want)), ("case %d, value %d"):format(k, i))
        else
          assert.are.equal(want, got[i], ("case %d, value %d"):format(k, i))
        end
      end
    end
    -- float32 values are the float64 ones rounded once
    for _, case in ipairs(CASES) do
      if not case.integer then
        local d, f = reference_of(case, 50, "float64", seed), reference_of(case, 50, "float32", seed)
        for i = 1, 50 do assert.are.equal(helpers.f32(d[i]), f[i], case_text(case, "float32")) end
      end
    end
  end)

  it("keep within their supports", function()
    local seed, n = math.random(0, 1 << 50), 3000
    local checks = {
      {random.reference_beta(n, 0.02, 0.03, "float64", seed), function(x) return x >= 0 and x <= 1 end},
      {random.reference_binomial(n, 12, 0.5, seed), function(x) return x >= 0 and x <= 12 end},
      {random.reference_binomial(n, 40, 0.75, seed), function(x) return x >= 0 and x <= 40 end},
      {random.reference_geometric(n, 0.9, seed), function(x) return x >= 1 end},
      {random.reference_geometric(n, 1e-300, seed), function(x) return x >= 1 end},
      {random.reference_standard_gamma(n, 1e-3, "float64", seed), function(x) return x >= 0 end},
      {random.reference_poisson(n, 1e15, seed), function(x) return math.abs(x - 1e15) < 1e9 end},
      {random.reference_laplace(n, 0, 1, "float64", seed), function(x) return math.abs(x) < 40 end},
      {random.reference_gumbel(n, 0, 1, "float64", seed), function(x) return math.abs(x) < 40 end},
      {random.reference_logistic(n, 0, 1, "float64", seed), function(x) return math.abs(x) < 40 end},
    }
    for k, check in ipairs(checks) do
      for i = 1, n do
        local x = check[1][i]
        assert(check[2](x), ("check %d, value %d: %s"):format(k, i, tostring(x)))
      end
    end
    -- a geometric of a tiny p is past int64 (clamped to its greatest) nearly always
    local far = 0
    for _, x in ipairs(random.reference_geometric(200, 1e-300, seed)) do
      if x == math.maxinteger then far = far + 1 end
    end
    assert.is_true(far > 190)
  end)

  it("make multinomial and dirichlet rows, with the right moments", function()
    local seed, rows = math.random(0, 1 << 50), 4000
    local pvals = {0.1, 0.25, 0, 0.4, 0.25}
    local m = random.reference_multinomial(rows, 30, pvals, seed)
    assert.are.equal(rows * 5, #m)
    for r = 0, rows - 1 do
      local sum = 0
      for j = 1, 5 do sum = sum + m[r * 5 + j] end
      assert.are.equal(30, sum)
      assert.are.equal(0, m[r * 5 + 3])
    end
    for j, p in ipairs(pvals) do
      assert_moments({mean = 30 * p, var = 30 * p * (1 - p)}, rows, function(i) return m[(i - 1) * 5 + j] end,
                     "multinomial column " .. j)
    end
    -- p beyond what is left gives it all; the last takes what is left
    assert.are.same({0, 7, 0, 0, 7, 0, 0, 7, 0}, random.reference_multinomial(3, 7, {0, 1, 0.5}, seed))
    local alpha = {0.3, 2, 5}
    local d = random.reference_dirichlet(rows, alpha, "float64", seed)
    for r = 0, rows - 1 do
      assert(math.abs(d[r * 3 + 1] + d[r * 3 + 2] + d[r * 3 + 3] - 1) < 1e-14, "row " .. r)
    end
    for j, a in ipairs(alpha) do
      assert_moments({mean = a / 7.3, var = a * (7.3 - a) / (7.3 ^ 2 * 8.3)}, rows,
                     function(i) return d[(i - 1) * 3 + j] end, "dirichlet column " .. j)
    end
    -- tiny alphas: no underflow to 0 / 0
    for _, v in ipairs(random.reference_dirichlet(100, {1e-3, 1e-3}, "float64", seed)) do
      assert.is_true(v >= 0 and v <= 1)
    end
    assert.are.same(random.reference_dirichlet(5, alpha, "float64", seed, 3),
                    {table.unpack(random.reference_dirichlet(8, alpha, "float64", seed), 10, 24)})
  end)

  it("compile their kernels", function()
    local source = gpu.kernel_sources["random.cu"] .. "\n" .. gpu.kernel_sources["random_distributions.cu"]
    local options = {arch = "sm_90", no_extern_c = true, options = {"--fmad=false"}}
    assert.is_true(#gpu.compile(source, options) > 0)                 -- the rows' kernels
    for kind = 0, 16 do                                               -- each distribution's
      assert.is_true(#gpu.compile(("#define GPU_VARIATE_KIND %d\n"):format(kind) .. source, options) > 0)
    end
  end)

  it("check their arguments before touching a device", function()
    local nan = tostring(0 / 0)
    local E = helpers.assert_error
    E("bad argument #1 to 'exponential' (scale must be non-negative, got -1)", random.exponential, -1, 3)
    E("bad argument #1 to 'exponential' (scale must be a number, got string)", random.exponential, "1", 3)
    E("bad argument #2 to 'exponential' (size expected, got no value)", random.exponential, 1)
    E("bad argument #1 to 'standard_exponential' (size expected, got no value)", random.standard_exponential)
    E("bad argument #2 to 'standard_exponential' (dtype must be float32 or float64, got 'int64')",
      random.standard_exponential, 3, "int64")
    E("bad argument #3 to 'exponential' (unknown option 'sead')", random.exponential, 1, 3, {sead = 1})
    E("bad argument #4 to 'exponential' (option 'seed' must be an integer, got float)",
      random.exponential, 1, 3,
      "float64", {seed = 0.5})
    E("bad argument #1 to 'standard_gamma' (shape must be a number, got nil)", random.standard_gamma, nil, 3)
    E("bad argument #1 to 'gamma' (shape must be non-negative, got -0.5)", random.gamma, -0.5, 1, 3)
    E("bad argument #2 to 'gamma' (scale must be non-negative, got " .. nan .. ")", random.gamma, 1, 0 / 0, 3)
    E("bad argument #1 to 'gamma' (shape must be finite, got inf)", random.gamma, math.huge, 1, 3)
    E("bad argument #2 to 'beta' (b must be positive, got 0)", random.beta, 1, 0, 3)
    E("bad argument #1 to 'chisquare' (df must be positive, got 0)", random.chisquare, 0, 3)
    E("bad argument #1 to 'standard_t' (df must be positive, got -1)", random.standard_t, -1, 3)
    E("bad argument #2 to 'f' (dfden must be positive, got 0)", random.f, 1, 0, 3)
    E("bad argument #2 to 'lognormal' (sigma must be non-negative, got -1)", random.lognormal, 0, -1, 3)
    E("bad argument #1 to 'lognormal' (mean must not be NaN, got " .. nan .. ")", random.lognormal, 0 / 0, 1, 3)
    E("bad argument #1 to 'laplace' (loc must be finite, got -inf)", random.laplace, -math.huge, 1, 3)
    E("bad argument #2 to 'logistic' (scale must be non-negative, got -2)", random.logistic, 0, -2, 3)
    E("bad argument #2 to 'gumbel' (scale must be non-negative, got -2.5)", random.gumbel, 0, -2.5, 3)
    E("bad argument #1 to 'weibull' (a must be non-negative, got -1)", random.weibull, -1, 3)
    E("bad argument #1 to 'pareto' (a must be positive, got 0)", random.pareto, 0, 3)
    E("bad argument #1 to 'rayleigh' (scale must be non-negative, got -1)", random.rayleigh, -1, 3)
    E("bad argument #1 to 'standard_cauchy' (size expected, got no value)", random.standard_cauchy)
    E("bad argument #1 to 'poisson' (lam must be non-negative, got -1)", random.poisson, -1, 3)
    E("bad argument #1 to 'poisson' (lam must be at most 2^62, got 1e+19)", random.poisson, 1e19, 3)
    E("bad argument #3 to 'poisson' (options table expected, got string)", random.poisson, 1, 3, "int64")
    E("bad argument #3 to 'poisson' (unknown option 'sead')", random.poisson, 1, 3, {sead = 1})
    E("bad argument #2 to 'poisson' (shape must be a number or a table of whole numbers, got string)",
      random.poisson, 1, "x")
    E("bad argument #1 to 'binomial' (n must be a whole number in [0, 2^63), got 2.5)",
      random.binomial, 2.5, 0.5, 3)
    E("bad argument #1 to 'binomial' (n must be a whole number in [0, 2^63), got -1)",
      random.binomial, -1, 0.5, 3)
    E("bad argument #2 to 'binomial' (p must be in [0, 1], got 1.5)", random.binomial, 10, 1.5, 3)
    E("bad argument #2 to 'binomial' (p must be in [0, 1], got " .. nan .. ")", random.binomial, 10, 0 / 0, 3)
    E("bad argument #2 to 'binomial' (p must be a number, got nil)", random.binomial, 10)
    E("bad argument #1 to 'geometric' (p must be in (0, 1], got 0)", random.geometric, 0, 3)
    E("bad argument #2 to 'negative_binomial' (p must be in (0, 1], got 0)", random.negative_binomial, 1, 0, 3)
    E("bad argument #1 to 'negative_binomial' (n must be positive, got 0)", random.negative_binomial, 0, 0.5, 3)
    E("bad argument #1 to 'multinomial' (n must be a whole number in [0, 2^63), got -1)",
      random.multinomial, -1, {0.5, 0.5}, 3)
    E("bad argument #2 to 'multinomial' (pvals must be a table of numbers, got number)",
      random.multinomial, 5, 0.5, 3)
    E("bad argument #2 to 'multinomial' (pvals must not be empty)", random.multinomial, 5, {}, 3)
    E("bad argument #2 to 'multinomial' (pvals[2] must be in [0, 1], got -0.5)", random.multinomial, 5,
      {0.5, -0.5, 1}, 3)
    E("bad argument #2 to 'multinomial' (pvals[1] must be a number, got string)",
      random.multinomial, 5, {"a"}, 3)
    E("bad argument #2 to 'multinomial' (pvals before the last sum to 1.25, more than 1)",
      random.multinomial, 5,
      {0.75, 0.5, 0}, 3)
    E("bad argument #3 to 'multinomial' (size expected, got no value)", random.multinomial, 5, {0.5, 0.5})
    E("bad argument #4 to 'multinomial' (unknown option 'dtype')", random.multinomial, 5, {0.5, 0.5}, 3,
      {dtype = "int32"})
    E("bad argument #1 to 'dirichlet' (alpha[2] must be positive, got 0)", random.dirichlet, {1, 0}, 3)
    E("bad argument #1 to 'dirichlet' (alpha[1] must be positive, got inf)", random.dirichlet, {math.huge}, 3)
    E("bad argument #1 to 'dirichlet' (alpha must not be empty)", random.dirichlet, {}, 3)
    E("bad argument #2 to 'dirichlet' (size expected, got no value)", random.dirichlet, {1, 2})
    E("bad argument #3 to 'dirichlet' (dtype must be float32 or float64, got 'int8')",
      random.dirichlet, {1}, 2, "int8")
    E("bad argument #2 to 'dirichlet' (negative dimension -1 in shape)", random.dirichlet, {1}, -1)
    E("bad argument #1 to 'reference_gamma' (count must be a whole number in [0, 2^24], got -1)",
      random.reference_gamma, -1, 1, 1, "float32", 1)
    E("bad argument #4 to 'reference_gamma' ('float32' or 'float64' expected, got int64)",
      random.reference_gamma, 5, 1, 1, "int64", 1)
    E("bad argument #5 to 'reference_gamma' (integer seed expected, got nil)", random.reference_gamma, 5, 1, 1,
      "float32")
    E("bad argument #3 to 'reference_binomial' (p must be in [0, 1], got 2)",
      random.reference_binomial, 5, 1, 2, 1)
    E("bad argument #4 to 'reference_binomial' (integer seed expected, got string)", random.reference_binomial,
      5, 1, 0.5, "1")
    E("bad argument #3 to 'reference_multinomial' (pvals must not be empty)",
      random.reference_multinomial, 5, 1, {}, 1)
    E("bad argument #3 to 'reference_dirichlet' ('float32' or 'float64' expected, got nil)",
      random.reference_dirichlet, 5, {1})
  end)
end)

describe("random distributions on a device", function()
  -- Value for value against the twins.  The kernels compute in float64 one IEEE operation at a
  -- time, as the twin does; they differ only where CUDA's log, exp, pow, cospi and the like
  -- differ from the C library's by an ulp or so, hence the tolerances: 1e-12 relative (to the
  -- value plus its scale) in float64, and one float32 ulp in float32 (two doubles a hair apart
  -- can round either side of a float32), plus 1e-15 of the scale for values near 0 made by
  -- cancellation (exp(x) - 1, log near 1).  Where a value is decided by comparing
  -- such a number with another -- a rejection sampler accepting or not, an inversion's search
  -- passing a boundary, ceil -- an ulp can, in principle, change the decision and so that one
  -- element (each element draws from its own counter, so no other).  Such a flip needs the two
  -- sides within about 1e-13 of each other, so it is expected about never in 2001 values; the
  -- comparison still allows 2 for those distributions, and none for the others.
  local N = 2001

  local function compare(case, dtype, gpu_values, want)
    local scale = case.scale or 1
    local mismatches = {}
    for i = 1, N do
      local got, expected = gpu_values[i], want[i]
      local ok
      if case.integer then
        ok = got == expected
      elseif dtype == "float64" then
        ok = math.abs(got - expected) <= 1e-12 * (math.abs(expected) + scale) or got == expected
      else
        ok = math.abs(got - expected) <= 2.0 ^ -23 * math.abs(expected) + 1e-15 * scale or got == expected
      end
      if not ok then mismatches[#mismatches + 1] = ("%d: %.17g vs %.17g"):format(i, got, expected) end
    end
    local allowed = case.rejects and 2 or 0
    assert(#mismatches <= allowed, ("%s: %d values differ from the twin: %s"):format(case_text(case, dtype),
           #mismatches, table.concat(mismatches, "; ", 1, math.min(#mismatches, 5))))
  end

  helpers.gpu_it("equal their twins, value for value, in both float dtypes and int64", function()
    for _, case in ipairs(CASES) do
      local seed = math.random(0, 1 << 50)
      local f64
      for _, dtype in ipairs(case.integer and {"int64"} or {"float64", "float32"}) do
        local a = draw(case, N, dtype, {seed = seed})
        assert.are.equal(dtype, a.dtype)
        assert.are.same({N}, a.shape)
        local h = R.get(a)
        compare(case, dtype, h, reference_of(case, N, dtype, seed))
        -- float32 is the same float64 computation rounded once: exactly the float64 values rounded
        if dtype == "float64" then f64 = h end
        if dtype == "float32" then
          for i = 1, N do
            assert(h[i] == helpers.f32(f64[i]) or h[i] ~= h[i] and f64[i] ~= f64[i], case_text(case, dtype))
          end
        end
      end
    end
  end)

  helpers.gpu_it("have NumPy's means and variances on a million values", function()
    local n = 10 ^ 6
    for _, case in ipairs(CASES) do
      if case.mean then
        for _, dtype in ipairs(case.integer and {"int64"} or {"float64", "float32"}) do
          local h = R.get(draw(case, n, dtype))
          assert_moments(case, n, function(i) return h[i] end, case_text(case, dtype))
        end
      end
    end
    local h = R.get(random.standard_cauchy({1000, 1000}, "float64"))
    for _, p in ipairs{0.1, 0.3, 0.5, 0.75} do
      assert_share_below(n, function(i) return h[i] end, cauchy_quantile(p), p, "standard_cauchy")
    end
    -- large parameters: PTRS and BTRS far out, and a tiny shape's gamma (its boost)
    local big = {
      {"poisson", {1e6}, integer = true, mean = 1e6, var = 1e6},
      {"binomial", {10 ^ 12, 1e-3}, integer = true, mean = 1e9, var = 1e9 * 0.999},
      {"standard_gamma", {0.05}, mean = 0.05, var = 0.05},
      {"beta", {0.1, 0.2}, mean = 1 / 3, var = 0.02 / (0.09 * 1.3)},
    }
    for _, case in ipairs(big) do
      local values = R.get(draw(case, n, "float64"))
      assert_moments(case, n, function(i) return values[i] end, case_text(case, "float64"))
    end
  end)

  helpers.gpu_it("make multinomial and dirichlet rows equal to their twins' and of the right moments", function()
    local seed = math.random(0, 1 << 50)
    local pvals = {0.1, 0.25, 0, 0.4, 0.25}
    local m = random.multinomial(30, pvals, {20, 50}, {seed = seed})
    assert.are.equal("int64", m.dtype)
    assert.are.same({20, 50, 5}, m.shape)
    local want, h = random.reference_multinomial(1000, 30, pvals, seed), R.get(m)
    local differ = 0
    for i = 1, 5000 do if h[i] ~= want[i] then differ = differ + 1 end end
    assert(differ <= 10, "multinomial: values differ from the twin: " .. differ)   -- 2 rows at most
    for _, dtype in ipairs{"float64", "float32"} do
      local alpha = {0.3, 2, 5}
      local d = random.dirichlet(alpha, {10, 100}, dtype, {seed = seed})
      assert.are.equal(dtype, d.dtype)
      assert.are.same({10, 100, 3}, d.shape)
      local hd, want_d = R.get(d), random.reference_dirichlet(1000, alpha, dtype, seed)
      differ = 0
      local tol = dtype == "float64" and 1e-12 or 2.0 ^ -23
      for i = 1, 3000 do
        if math.abs(hd[i] - want_d[i]) > tol * (want_d[i] + 1e-300) then differ = differ + 1 end
      end
      assert(differ <= 6, "dirichlet " .. dtype .. ": values differ from the twin: " .. differ)
    end
    -- a million rows: the columns' moments, and each row summing to n or 1
    local rows = 10 ^ 6
    local hm = R.get(random.multinomial(30, pvals, rows))
    for r = 0, rows - 1, 997 do
      local sum = 0
      for j = 1, 5 do sum = sum + hm[r * 5 + j] end
      assert.are.equal(30, sum)
    end
    for j, p in ipairs(pvals) do
      assert_moments({mean = 30 * p, var = 30 * p * (1 - p)}, rows, function(i) return hm[(i - 1) * 5 + j] end,
                     "multinomial column " .. j)
    end
    local alpha = {0.3, 2, 5}
    for _, dtype in ipairs{"float64", "float32"} do
      local hd = R.get(random.dirichlet(alpha, rows, dtype))
      local tol = dtype == "float64" and 1e-14 or 3e-7
      for r = 0, rows - 1, 997 do
        assert(math.abs(hd[r * 3 + 1] + hd[r * 3 + 2] + hd[r * 3 + 3] - 1) < tol, "dirichlet row " .. r)
      end
      for j, a in ipairs(alpha) do
        assert_moments({mean = a / 7.3, var = a * (7.3 - a) / (7.3 ^ 2 * 8.3)}, rows,
                       function(i) return hd[(i - 1) * 3 + j] end, "dirichlet column " .. j .. " " .. dtype)
      end
    end
  end)

  helpers.gpu_it("take shapes, 0-d and empty sizes, streams and seeds as the other functions", function()
    local seed = math.random(0, 1 << 50)
    local s = gpu.Stream()
    local g = random.gamma(2, 3, {3, 4}, "float64", {seed = seed, stream = s})
    s:synchronize()
    assert.are.same({3, 4}, g.shape)
    local want, h = random.reference_gamma(12, 2, 3, "float64", seed), R.get(g)
    for i = 1, 12 do assert(math.abs(h[i] - want[i]) <= 1e-12 * (want[i] + 1), "gamma on a stream " .. i) end
    local one = random.poisson(250, {}, {seed = seed})
    assert.are.equal(0, one.ndim)
    assert.are.equal("int64", one.dtype)
    assert.are.equal(random.reference_poisson(1, 250, seed)[1], R.get(one)[1])
    assert.are.equal("float32", random.beta(2, 3, 5).dtype)                  -- float32 by default
    assert.are.equal("float32", random.standard_t(3, 5, {seed = 1}).dtype)   -- options in dtype's place
    assert.are.same({0, 3}, random.lognormal(0, 1, {0, 3}).shape)
    assert.are.same({2, 0}, random.binomial(5, 0.5, {2, 0}).shape)
    assert.are.same({0, 4}, random.multinomial(5, {0.5, 0.25, 0.25, 0}, 0).shape)
    assert.are.same({3}, random.dirichlet({1, 2, 3}, {}).shape)
    -- the same seed repeats, another differs, and without one the default generator moves on
    local a = R.get(random.negative_binomial(3, 0.4, 100, {seed = seed})):totable()
    assert.are.same(a, R.get(random.negative_binomial(3, 0.4, 100, {seed = seed})):totable())
    assert.are_not.same(a, R.get(random.negative_binomial(3, 0.4, 100, {seed = seed + 1})):totable())
    random.seed(seed)
    local e = random.exponential(2, 5, "float64")          -- counters 0 to 4, one an element
    local p = random.poisson(3, 3)                         -- 5 to 7
    local d = random.dirichlet({1, 2}, 2, "float64")       -- 8 and 9, one a row
    local m = random.multinomial(9, {0.5, 0.5}, 3)         -- 10 to 12
    local u = random.rand(5)                               -- blocks 13 and 14, four values each
    local function near(w, got, what)
      for i = 1, #w do assert(math.abs(got[i] - w[i]) <= 1e-12 * (math.abs(w[i]) + 1), what .. " " .. i) end
    end
    near(random.reference_exponential(5, 2, "float64", seed), R.get(e), "exponential")
    near(random.reference_poisson(3, 3, seed, 5), R.get(p), "poisson")
    near(random.reference_dirichlet(2, {1, 2}, "float64", seed, 8), R.get(d), "dirichlet")
    near(random.reference_multinomial(3, 9, {0.5, 0.5}, seed, 10), R.get(m), "multinomial")
    near(random.reference(5, "float32", false, seed, 13), R.get(u), "rand")
  end)
end)
