-- gpu.random: random arrays from Philox4x32-10 (kernels/random.cu), with NumPy's names.
--
--   gpu.random.rand(shape[, dtype][, {seed = n, stream = s}])   uniform in [0, 1)
--   gpu.random.randn(shape[, dtype][, opts])                   standard normal
--   gpu.random.uniform(low, high, shape[, dtype][, opts])      uniform in [low, high)
--   gpu.random.normal(mean, std, shape[, dtype][, opts])       normal
--   gpu.random.randint(low, high, shape[, dtype][, opts])      integers in [low, high), int64
--   gpu.random.permutation(n or a[, opts])                     1..n shuffled, or a's rows
--   gpu.random.shuffle(a[, opts])                              a's rows shuffled in place
--   gpu.random.choice(n or a, size[, {replace =, p =, seed =, stream =}])
--   gpu.random.seed(n)                                         reseeds the default generator
--
-- and NumPy's distributions, parameters in NumPy's order and with its defaults (nil for one):
--   standard_exponential(size[, dtype][, opts]), exponential(scale = 1, size, ...),
--   standard_gamma(shape, size, ...), gamma(shape, scale = 1, size, ...), beta(a, b, ...),
--   chisquare(df, ...), standard_t(df, ...), f(dfnum, dfden, ...), lognormal(mean = 0,
--   sigma = 1, ...), laplace, logistic and gumbel(loc = 0, scale = 1, ...), weibull(a, ...),
--   pareto(a, ...), rayleigh(scale = 1, ...), standard_cauchy(size, ...) and
--   dirichlet(alpha, size, ...) (a row of #alpha a value of size) in float32 or float64;
--   poisson(lam = 1, size[, opts]), binomial(n, p, ...), geometric(p, ...),
--   negative_binomial(n, p, ...) and multinomial(n, pvals, size[, opts]) in int64.
--
-- Float dtypes are float32 (the default) and float64; randint takes every integer dtype.
-- Counter-based: the numbers are a pure function of (seed, counter).  With {seed = n} a call
-- starts at counter 0, so the same seed gives the same numbers; without it the default
-- generator's seed is used and its counter advances, so successive calls differ.  Places
-- (permutation's, choice's) are 1-based, as argsort's; "rows" are the slices along axis 1.
-- M.philox and M.reference* are the CPU twin of the kernels, for specs and users.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local promote = require "gpu.promote"

local M = {}

local argerror, check_options = reduction.argerror, reduction.check_options
local check_array, typename = reduction.check_array, args.typename
local GPUArray = core.types.GPUArray

local ga   -- gpu.gpuarray, set by install

-- Philox4x32-10 on the CPU: counter {c0, c1, c2, c3} and key {k0, k1} of 32-bit words.
local M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
local MASK = 0xffffffff

-- Checks that words (argument n) is a table of count 32-bit unsigned integers.
local function check_words(words, count, n)
  local ok = type(words) == "table"
  for i = 1, count do
    local w = ok and words[i]
    ok = ok and math.type(w) == "integer" and w >= 0 and w <= MASK
  end
  if not ok then
    argerror(n, "philox", ("table of %d integers in [0, 2^32) expected"):format(count), 2)
  end
end

-- The four words of Philox4x32-10 for counter (c0, c1, c2, c3) and key (k0, k1), unchecked.
local function philox_words(c0, c1, c2, c3, k0, k1)
  for _ = 1, 10 do
    local p0, p1 = M0 * c0, M1 * c2          -- 64-bit products, exact as unsigned bits
    local hi0, lo0 = (p0 >> 32) & MASK, p0 & MASK
    local hi1, lo1 = (p1 >> 32) & MASK, p1 & MASK
    c0, c1, c2, c3 = hi1 ~ c1 ~ k0, lo1, hi0 ~ c3 ~ k1, lo0
    k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
  end
  return c0, c1, c2, c3
end

function M.philox(c, k)
  check_words(c, 4, 1)
  check_words(k, 2, 2)
  return {philox_words(c[1], c[2], c[3], c[4], k[1], k[2])}
end

-- The four words of counter block `counter`, attempt `attempt` (random.cu's gpu_block_bits).
local function words(seed, counter, attempt)
  return M.philox({counter & MASK, (counter >> 32) & MASK, attempt or 0, 0},
                  {seed & MASK, (seed >> 32) & MASK})
end

local function u01f(x) return (x >> 8) * 2.0^-24 end
local function u01d(a, b) return (((a << 32) | b) >> 11) * 2.0^-53 end
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- Integer ranges ---------------------------------------------------------------------------

-- Each integer dtype's least value and its greatest plus one (randint's largest high).
local INTEGER_BOUNDS = {
  int8 = {-128, 128}, uint8 = {0, 256}, int16 = {-32768, 32768}, uint16 = {0, 65536},
  int32 = {-(1 << 31), 1 << 31}, uint32 = {0, 1 << 32},
  int64 = {math.mininteger, 2.0 ^ 63}, uint64 = {0, 2.0 ^ 64},
}
local INTEGER_DTYPES = "int8, uint8, int16, uint16, int32, uint32, int64 or uint64"

local function number_text(v)
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < math.huge then
    return ("%.0f"):format(v)
  end
  return tostring(v)
end

-- The 64 bits of a whole number from -2^63 to 2^64 (those from 2^63 on are floats, whose
-- bits read as negative integers, as a uint64 element's do).
local function integer_bits(v)
  if math.type(v) == "integer" then return v end
  if v >= 2.0 ^ 63 then return math.tointeger(v - 2.0 ^ 64) end
  return math.tointeger(v)
end

-- a mod b of 64-bit unsigned bit patterns (b not 0).
local function unsigned_mod(a, b)
  if b < 0 then return math.ult(a, b) and a or a - b end     -- b >= 2^63: a < 2b
  if a >= 0 then return a % b end
  local r = (((a >> 1) % b) << 1) | (a & 1)                   -- < 2b
  return math.ult(r, b) and r or r - b
end

-- The high 64 bits of the 128-bit product of two 64-bit unsigned bit patterns.
local function multiply_high(a, b)
  local a0, a1, b0, b1 = a & MASK, a >> 32, b & MASK, b >> 32
  local p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
  local middle = (p00 >> 32) + (p01 & MASK) + (p10 & MASK)
  return a1 * b1 + (p01 >> 32) + (p10 >> 32) + (middle >> 32)
end

-- randint's bounds (arguments n and n + 1 of fname, n 1 by default) for dtype, checked: the
-- bits of low, of the range high - low (0 for all of 2^64) and of the threshold below which
-- Lemire's method rejects a word (2^w mod range), and whether the words are 64-bit (ranges
-- beyond 2^32).
local function integer_range(low, high, dtype, fname, n)
  n = n or 1
  for k = 1, 2 do
    local v = select(k, low, high)
    if type(v) ~= "number" or v ~= math.floor(v) or math.abs(v) == math.huge then
      argerror(n + k - 1, fname, ("%s must be a whole number, got %s")
                                 :format(k == 1 and "low" or "high",
                                         type(v) == "number" and number_text(v) or typename(v)), 2)
    end
  end
  local bounds = INTEGER_BOUNDS[dtype]
  if low < bounds[1] then
    argerror(n, fname, ("low %s is out of bounds for %s: at least %s")
                       :format(number_text(low), dtype, number_text(bounds[1])), 2)
  end
  if high > bounds[2] then
    argerror(n + 1, fname, ("high %s is out of bounds for %s: at most %s, as high is excluded")
                       :format(number_text(high), dtype, number_text(bounds[2])), 2)
  end
  if low >= high then
    argerror(n + 1, fname, ("high must be greater than low, got low %s and high %s")
                       :format(number_text(low), number_text(high)), 2)
  end
  local low_bits = integer_bits(low)
  local range = integer_bits(high) - low_bits          -- high - low, modulo 2^64
  if range > 0 and range <= 1 << 32 then
    return low_bits, range, (1 << 32) % range, false
  end
  return low_bits, range, range == 0 and 0 or unsigned_mod(-range, range), true
end

-- CPU references -----------------------------------------------------------------------------

-- The checks of the references' count (argument 1), float dtype, seed and first counter.
local function check_count(fname, count)
  if math.type(count) ~= "integer" or count < 0 or count > 1 << 24 then
    argerror(1, fname, ("count must be a whole number in [0, 2^24], got %s"):format(tostring(count)))
  end
end

local function check_float_dtype(fname, dtype, n)
  if dtype ~= "float32" and dtype ~= "float64" then
    argerror(n, fname, ("'float32' or 'float64' expected, got %s"):format(tostring(dtype)))
  end
end

local function check_seed(fname, seed, base, n)
  if math.type(seed) ~= "integer" then
    argerror(n, fname, ("integer seed expected, got %s"):format(type(seed)))
  end
  if base ~= nil and math.type(base) ~= "integer" then
    argerror(n + 1, fname, ("integer counter expected, got %s"):format(type(base)))
  end
  return base or 0
end

-- The first count values the kernels give for (seed, dtype, normal), as Lua numbers.
function M.reference(count, dtype, normal, seed, base)
  -- a CPU reference for the specs: small counts only
  check_count("reference", count)
  check_float_dtype("reference", dtype, 2)
  base = check_seed("reference", seed, base, 4)
  local out = {}
  local j = 0
  while #out < count do
    local r = words(seed, base + j)
    if dtype == "float32" then
      if normal then
        for p = 1, 3, 2 do
          local radius = math.sqrt(-2 * math.log(((r[p] >> 8) + 1) * 2.0^-24))
          local angle = 2 * math.pi * u01f(r[p + 1])
          out[#out + 1] = f32(radius * math.cos(angle))
          out[#out + 1] = f32(radius * math.sin(angle))
        end
      else
        for q = 1, 4 do out[#out + 1] = u01f(r[q]) end
      end
    else
      if normal then
        local radius = math.sqrt(-2 * math.log(((((r[1] << 32) | r[2]) >> 11) + 1) * 2.0^-53))
        local angle = 2 * math.pi * u01d(r[3], r[4])
        out[#out + 1] = radius * math.cos(angle)
        out[#out + 1] = radius * math.sin(angle)
      else
        out[#out + 1] = u01d(r[1], r[2])
        out[#out + 1] = u01d(r[3], r[4])
      end
    end
    j = j + 1
  end
  for i = count + 1, #out do out[i] = nil end
  return out
end

-- reference's values as uniform and normal make them: shift + scale * v, in float64 each
-- operation rounded, then rounded to dtype.
local function affine_reference(fname, normal, count, shift, scale, dtype, seed, base)
  check_count(fname, count)
  check_float_dtype(fname, dtype, 4)
  base = check_seed(fname, seed, base, 5)
  local out = M.reference(count, dtype, normal, seed, base)
  for i, v in ipairs(out) do
    v = shift + scale * v
    out[i] = dtype == "float32" and f32(v) or v
  end
  return out
end

local function check_number(v, n, fname, what)
  if type(v) ~= "number" then
    argerror(n, fname, ("%s must be a number, got %s"):format(what, typename(v)), 2)
  end
  return v
end

function M.reference_uniform(count, low, high, dtype, seed, base)
  check_number(low, 2, "reference_uniform", "low")
  check_number(high, 3, "reference_uniform", "high")
  return affine_reference("reference_uniform", false, count, low, high - low, dtype, seed, base)
end

function M.reference_normal(count, mean, std, dtype, seed, base)
  check_number(mean, 2, "reference_normal", "mean")
  check_number(std, 3, "reference_normal", "std")
  return affine_reference("reference_normal", true, count, mean, std, dtype, seed, base)
end

-- The first count integers randint(low, high, count, dtype, {seed = seed}) gives (from
-- counter block base), as Lua integers (a uint64's bits, as its elements read).
function M.reference_randint(count, low, high, dtype, seed, base)
  check_count("reference_randint", count)
  if INTEGER_BOUNDS[dtype] == nil then
    argerror(4, "reference_randint", ("%s expected, got %s"):format(INTEGER_DTYPES, tostring(dtype)))
  end
  base = check_seed("reference_randint", seed, base, 5)
  local low_bits, range, threshold, wide = integer_range(low, high, dtype, "reference_randint", 2)
  local out = {}
  for j = 0, (count - 1) // (wide and 2 or 4) do
    local r = words(seed, base + j)
    if not wide then
      for q = 1, 4 do
        local m, attempt = r[q] * range, 1
        while m & MASK < threshold do
          m, attempt = words(seed, base + j, attempt)[q] * range, attempt + 1
        end
        out[#out + 1] = low_bits + (m >> 32)
      end
    else
      for q = 1, 3, 2 do
        local x = (r[q] << 32) | r[q + 1]
        if range ~= 0 then
          local attempt = 1
          while math.ult(x * range, threshold) do
            local again = words(seed, base + j, attempt)
            x, attempt = (again[q] << 32) | again[q + 1], attempt + 1
          end
          x = multiply_high(x, range)
        end
        out[#out + 1] = low_bits + x
      end
    end
  end
  for i = count + 1, #out do out[i] = nil end
  return out
end

-- random.cu's gpu_shuffle_ties on Lua lists: keys sorted and places (numbers) in the same
-- order; each run of equal keys has its places sorted, then shuffled, drawing from the
-- blocks of counter first + its 0-based start.  Changes places in place.
function M.reference_shuffle_ties(places, keys, seed, first)
  local key = {seed & MASK, (seed >> 32) & MASK}
  local n, start = #keys, 1
  while start < n do
    local stop = start
    while stop < n and keys[stop + 1] == keys[start] do stop = stop + 1 end
    if stop > start then
      local run = table.move(places, start, stop, 1, {})
      table.sort(run)
      table.move(run, 1, #run, start, places)
      local counter, block, r, q = first + start - 1, 0, nil, 4
      for k = stop - start, 1, -1 do
        local range = k + 1
        local threshold, m = (1 << 32) % range, nil
        repeat
          if q == 4 then
            r, block, q = M.philox({counter & MASK, (counter >> 32) & MASK, block, 1}, key), block + 1, 0
          end
          q = q + 1
          m = r[q] * range
        until m & MASK >= threshold
        local j = start + (m >> 32)
        places[start + k], places[j] = places[j], places[start + k]
      end
    end
    start = stop + 1
  end
  return places
end

-- 1..count in the order permutation(count, {seed = seed}) gives (from counter block base):
-- the places that sort randint's 32-bit keys, each run of tied keys shuffled.
function M.reference_permutation(count, seed, base)
  check_count("reference_permutation", count)
  base = check_seed("reference_permutation", seed, base, 2)
  local keys = M.reference_randint(count, 0, 1 << 32, "uint32", seed, base)
  local places = {}
  for i = 1, count do places[i] = i end
  table.sort(places, function(x, y)
    if keys[x] ~= keys[y] then return keys[x] < keys[y] end
    return x < y
  end)
  local sorted_keys = {}
  for i = 1, count do sorted_keys[i] = keys[places[i]] end
  return M.reference_shuffle_ties(places, sorted_keys, seed, 4 * base)
end

-- The sample choice(n, count, {replace = false, seed = seed}) gives where it draws (n at least
-- 2^14, count at most n / 4 and M.sample_draws(n, count) at most 2^26; from counter block
-- base): the first count distinct values of randint(0, n)'s draws, plus one, drawn here a
-- thousand blocks at a time.
function M.reference_sample(n, count, seed, base)
  if math.type(n) ~= "integer" or n < 1 then
    argerror(1, "reference_sample", "n must be a whole number of at least 1, got " .. tostring(n))
  end
  if math.type(count) ~= "integer" or count < 0 or count > math.min(n, 1 << 24) then
    argerror(2, "reference_sample", ("count must be a whole number in [0, min(n, 2^24)], got %s")
                                    :format(tostring(count)))
  end
  base = check_seed("reference_sample", seed, base, 3)
  local per = select(4, integer_range(0, n, "int64", "reference_sample")) and 2 or 4
  local sample, seen = {}, {}
  while #sample < count do
    for _, v in ipairs(M.reference_randint(1000 * per, 0, n, "int64", seed, base)) do
      if not seen[v] and #sample < count then
        seen[v] = true
        sample[#sample + 1] = v + 1
      end
    end
    base = base + 1000
  end
  return sample
end

-- The default generator ----------------------------------------------------------------------

local default = {seed = 0, counter = 0}

function M.seed(n)
  if math.type(n) ~= "integer" then
    argerror(1, "seed", "integer expected, got " .. (math.type(n) or type(n)))
  end
  default.seed, default.counter = n, 0
end

M.seed(math.floor(os.time() * 1000003 + os.clock() * 1e6) ~ tonumber(tostring({}):match("0x(%x+)") or "0", 16))

local BLOCK = 256
-- The rows' kernels of random_distributions.cu (which follows random.cu in their source).
local ROW_KERNELS = {gpu_dirichlet_f32 = true, gpu_dirichlet_f64 = true, gpu_multinomial = true}
local OPTIONS = {seed = true, stream = true}
local FLOAT_KERNELS = {float32 = {per = 4, suffix = "f32"}, float64 = {per = 2, suffix = "f64"}}

-- The options of fname, argument n, whose seed option must be an integer.
local function random_options(opts, n, fname, known)
  opts = check_options(opts, n, fname, known or OPTIONS)
  if opts.seed ~= nil and math.type(opts.seed) ~= "integer" then
    argerror(n, fname, "option 'seed' must be an integer, got " ..
                       (math.type(opts.seed) or typename(opts.seed)), 2)
  end
  return opts
end

-- dtype (argument n) and the options after it; a table in dtype's place is the options.
-- Returns dtype (default_dtype when nil) and the checked options.
local function dtype_and_options(dtype, opts, n, fname, default_dtype)
  if type(dtype) == "table" and opts == nil then dtype, opts, n = nil, dtype, n - 1 end
  return dtype or default_dtype, random_options(opts, n + 1, fname)
end

local function dtype_text(dtype)
  return type(dtype) == "string" and "'" .. dtype .. "'" or typename(dtype)
end

-- The kernel `name` of random.cu or random_distributions.cu; the variates kernels are
-- compiled once for each kind of distribution (see random_distributions.cu).
local function random_kernel(name, kind)
  return kernel_cache.get("random|" .. name .. "|" .. (kind or ""), function()
    if not (ROW_KERNELS[name] or kind) then
      return core.kernel_sources["random.cu"], name, nil, {no_extern_c = true, name = "random.cu"}
    end
    local source = core.kernel_sources["random.cu"] .. "\n" .. core.kernel_sources["random_distributions.cu"]
    if kind then source = ("#define GPU_VARIATE_KIND %d\n"):format(kind) .. source end
    -- no fused multiply-adds, so that the Lua twin rounds every operation as the kernel does
    return source, name, nil,
           {no_extern_c = true, name = "random_distributions.cu", options = {"--fmad=false"}}
  end)
end

-- The seed and first counter block of a call's draws: {seed = n}'s from 0, else the default
-- generator's next one (which the caller moves past the blocks it draws).
local function counter_start(opts)
  if opts.seed ~= nil then return opts.seed, 0 end
  return default.seed, default.counter
end

-- Fills out (contiguous) with random_kernel(name, kind), which makes `per` elements a counter
-- block, passing the extra arguments after the counter's.  The counter blocks are
-- {seed = n}'s from 0, else the default generator's next ones, which it moves past (even for
-- an empty array: nothing is compiled or launched then).  Returns out, the seed and the first
-- counter block.
local function draw_counted(name, kind, per, out, opts, ...)
  local n = out.size
  local blocks = (n + per - 1) // per
  local seed, base = counter_start(opts)
  if opts.seed == nil then default.counter = base + blocks end
  if n == 0 then return out, seed, base end
  local arguments = {out, n, seed & MASK, (seed >> 32) & MASK, base, ...}
  arguments[#arguments + 1] = {block = BLOCK, grid = reduction.grid_stride_blocks(blocks, BLOCK),
                               stream = opts.stream}
  random_kernel(name, kind)(table.unpack(arguments))
  return out, seed, base
end

-- draw_counted's out alone, which the public functions return.
local function draw(name, kind, per, out, opts, ...)
  return (draw_counted(name, kind, per, out, opts, ...))
end

-- An array of shape and float dtype of shift + scale * (uniform or normal) numbers.
local function draw_floats(normal, shape, dtype, opts, shift, scale)
  local kernel = FLOAT_KERNELS[dtype]
  local name = ("gpu_rand_%s_%s"):format(normal and "normal" or "uniform", kernel.suffix)
  return draw(name, nil, kernel.per, core.array_empty(shape, dtype), opts, shift, scale)
end

-- The checks that the float functions share: the shape (argument n), dtype and options.
local function float_arguments(fname, shape, dtype, opts, n)
  if shape == nil then argerror(n, fname, "shape expected, got no value", 2) end
  shape = args.check_shape(shape, n, fname, 2)
  local dtype_at = n + 1
  dtype, opts = dtype_and_options(dtype, opts, dtype_at, fname, "float32")
  if FLOAT_KERNELS[dtype] == nil then
    argerror(dtype_at, fname, "dtype must be float32 or float64, got " .. dtype_text(dtype), 2)
  end
  return shape, dtype, opts
end

function M.rand(shape, dtype, opts)
  shape, dtype, opts = float_arguments("rand", shape, dtype, opts, 1)
  return draw_floats(false, shape, dtype, opts, 0, 1)
end

function M.randn(shape, dtype, opts)
  shape, dtype, opts = float_arguments("randn", shape, dtype, opts, 1)
  return draw_floats(true, shape, dtype, opts, 0, 1)
end

-- uniform(low, high, shape[, dtype][, opts]): NumPy's, low + (high - low) * rand's number,
-- in float64 (each operation rounded) and then rounded to dtype, in one pass.  As NumPy
-- warns, rounding can give high itself.  high < low is allowed (NumPy's), high - low must be
-- finite (as NumPy's Generator requires).
function M.uniform(low, high, shape, dtype, opts)
  check_number(low, 1, "uniform", "low")
  check_number(high, 2, "uniform", "high")
  local scale = high - low
  if scale ~= scale or math.abs(scale) == math.huge then
    argerror(2, "uniform", "high - low must be finite, got " .. tostring(scale))
  end
  shape, dtype, opts = float_arguments("uniform", shape, dtype, opts, 3)
  return draw_floats(false, shape, dtype, opts, low, scale)
end

-- normal(mean, std, shape[, dtype][, opts]): mean + std * randn's number, in float64 and
-- then rounded to dtype, in one pass.  std must not be negative (NumPy's scale).
function M.normal(mean, std, shape, dtype, opts)
  check_number(mean, 1, "normal", "mean")
  check_number(std, 2, "normal", "std")
  if not (std >= 0) then argerror(2, "normal", "std must be non-negative, got " .. tostring(std)) end
  shape, dtype, opts = float_arguments("normal", shape, dtype, opts, 3)
  return draw_floats(true, shape, dtype, opts, mean, std)
end

-- Fills out (an integer array, contiguous) with randint's integers for low_bits, range,
-- threshold and wide as integer_range gives them.
local function draw_integers(out, opts, low_bits, range, threshold, wide)
  if wide then return draw("gpu_randint_wide", nil, 2, out, opts, low_bits, range, threshold) end
  return draw("gpu_randint_" .. out.itemsize, nil, 4, out, opts, low_bits, range, threshold)
end

-- randint(low, high, shape[, dtype][, opts]): NumPy's, integers uniform in [low, high)
-- (high excluded), int64 unless dtype says otherwise; low and high are whole numbers within
-- dtype's values (a uint64's from 2^63 up as floats).  Exactly uniform: see random.cu.
function M.randint(low, high, shape, dtype, opts)
  if shape == nil then argerror(3, "randint", "shape expected, got no value") end
  shape = args.check_shape(shape, 3, "randint")
  dtype, opts = dtype_and_options(dtype, opts, 4, "randint", "int64")
  if INTEGER_BOUNDS[dtype] == nil then
    argerror(4, "randint", ("dtype must be %s, got %s"):format(INTEGER_DTYPES, dtype_text(dtype)))
  end
  local low_bits, range, threshold, wide = integer_range(low, high, dtype, "randint")
  return draw_integers(core.array_empty(shape, dtype), opts, low_bits, range, threshold, wide)
end

-- Permutations and choices ---------------------------------------------------------------------

-- gpu_shuffle_ties (random.cu) over the int64 places (1-based) that sort the uint32 array
-- sorted_keys, drawing from seed's blocks of counter first + a run's 0-based start.
function M.shuffle_ties(places, sorted_keys, seed, first, stream)
  local n = sorted_keys.size
  if n < 2 then return end
  random_kernel("gpu_shuffle_ties")(places, sorted_keys, n, seed & MASK, (seed >> 32) & MASK, first,
    {block = BLOCK, grid = reduction.grid_stride_blocks(n - 1, BLOCK), stream = stream})
end

-- n random 32-bit keys (uint32), with the seed and first counter block they came from.
local function draw_keys(n, opts)
  local low_bits, range, threshold = integer_range(0, 1 << 32, "uint32", "permutation")
  return draw_counted("gpu_randint_4", nil, 4, core.array_empty({n}, "uint32"), opts, low_bits,
                      range, threshold)
end

-- 1..n in random order (an int64 array): the places that sort n random 32-bit keys (four
-- radix passes, where 64-bit keys, whose ties would be negligible, take eight), then each run
-- of tied keys shuffled (random.cu's gpu_shuffle_ties), so every order is equally likely.
-- The ties' counter blocks (fourth word 1, the keys' 0) are numbered from 4 times the keys'
-- first block, so no two calls share them: the next call's keys start n / 4 blocks on.
local function shuffled_places(n, opts)
  local keys, seed, base = draw_keys(n, opts)
  local sorted_keys, places = require("gpu.sort").with_places(keys, opts.stream)
  core.free_after(keys, opts.stream)
  M.shuffle_ties(places, sorted_keys, seed, 4 * base, opts.stream)
  core.free_after(sorted_keys, opts.stream)
  return places
end

-- Row gathers by element size, in units of unsigned integers of up to 8 bytes.
local UNITS = {[1] = "uint8", [2] = "uint16", [4] = "uint32", [8] = "uint64"}
local gathers = {}
function M.gather_kernel(unit_dtype)
  local k = gathers[unit_dtype]
  if k == nil then
    local ctype = core.dtype(unit_dtype).ctype
    k = ew.ElementwiseKernel(
      ("%s *out, const %s *source, const long long *places, long long row_units"):format(ctype, ctype),
      "out[i] = source[(places[i / row_units] - 1) * row_units + i % row_units]", "random_rows")
    gathers[unit_dtype] = k
  end
  return k
end

-- A new array of a's rows at places (an int64 array of 1-based places along a's axis 1, all
-- in range): of places' shape followed by a's other axes.  One kernel, over a's bytes.
local function rows_of(a, places, stream)
  local shape, a_shape = places.shape, a.shape
  for d = 2, a.ndim do shape[#shape + 1] = a_shape[d] end
  local out = core.array_empty(shape, a.dtype)
  if out.size == 0 then return out end
  local unit = math.min(a.itemsize, 8)             -- a complex128 is two 8-byte units
  local source = a
  if not a.is_contiguous or a.offset % unit ~= 0 then
    source = a:copy(stream and {stream = stream})
  end
  local unit_dtype = UNITS[unit]
  local row_units = a.size // a_shape[1] * a.itemsize // unit
  M.gather_kernel(unit_dtype)(core.array_view(out, 0, unit_dtype, {out.nbytes // unit}),
                              core.array_view(source, 0, unit_dtype, {source.nbytes // unit}),
                              places, row_units, {stream = stream})
  if source ~= a then core.free_after(source, stream) end
  return out
end

-- Argument 1 of fname: a GPUArray of 1 or more axes, or a whole number n >= 0.  Returns
-- the population's size and the array (nil for a number).
local function population(x, fname)
  if getmetatable(x) == GPUArray then
    check_array(x, 1, fname)
    if x.ndim == 0 then argerror(1, fname, "a 0-d array has no axis 1 to take rows along", 2) end
    return x.shape[1], x
  end
  local n = math.type(x) and math.tointeger(x)
  if n == nil then
    argerror(1, fname, "a whole number or a GPUArray expected, got " ..
                       (type(x) == "number" and tostring(x) or typename(x)), 2)
  end
  if n < 0 then argerror(1, fname, ("a must not be negative, got %d"):format(n), 2) end
  return n, nil
end

-- permutation(n or a[, opts]): NumPy's, 1..n in random order (int64), or a copy of a with
-- its rows in random order.
function M.permutation(x, opts)
  local n, a = population(x, "permutation")
  opts = random_options(opts, 2, "permutation")
  local places = shuffled_places(n, opts)
  if a == nil then return places end
  local result = rows_of(a, places, opts.stream)
  core.free_after(places, opts.stream)
  return result
end

-- shuffle(a[, opts]): NumPy's, a's rows in random order, in place; returns nothing.
function M.shuffle(a, opts)
  check_array(a, 1, "shuffle")
  if a.ndim == 0 then argerror(1, "shuffle", "a 0-d array has no axis 1 to shuffle along") end
  opts = random_options(opts, 2, "shuffle")
  local stream = opts.stream
  local places = shuffled_places(a.shape[1], opts)
  local shuffled = rows_of(a, places, stream)
  core.free_after(places, stream)
  if shuffled.size > 0 then ew.launch(ew.copy_program(a.dtype), a, stream, "shuffle", shuffled) end
  core.free_after(shuffled, stream)
end

local CHOICE_OPTIONS = {replace = true, p = true, seed = true, stream = true}
-- Machine epsilons: p must sum to 1 within the square root of float64's, or of p's own
-- dtype's where that is coarser (NumPy's tolerance).
local EPSILON = {float16 = 2.0 ^ -10, bfloat16 = 2.0 ^ -7, float32 = 2.0 ^ -23, float64 = 2.0 ^ -52}

-- choice's option p (argument 3) for a population of n: a contiguous float64 array of the
-- probabilities, checked as NumPy checks them (none NaN nor negative, summing to 1), and
-- whether that array is choice's to free.  `needed` of them must be positive (a sample
-- without replacement).  A table is checked on the host; an array's least value and sum
-- (and count of nonzero values, where needed) are read back.
local function probabilities(p, n, needed, a, stream)
  local fname = "choice"
  local host
  if type(p) == "table" and getmetatable(p) == nil then
    local ok, h = pcall(core.host.from_table, p, "float64")
    if not ok then argerror(3, fname, "option 'p' must be a GPUArray or a table of numbers", 2) end
    host = h
  elseif getmetatable(p) == GPUArray then
    check_array(p, 3, fname)
  else
    argerror(3, fname, "option 'p' must be a GPUArray or a table of numbers, got " .. typename(p), 2)
  end
  local given = host or p
  if given.ndim ~= 1 or given.size ~= n then
    argerror(3, fname, ("option 'p' must be 1-d of length %d, got shape %s")
                       :format(n, promote.shape_text(given.shape)), 2)
  end
  local pd, made, least, sum, positive
  if host then
    least, sum, positive = math.huge, 0, 0
    for i = 1, n do
      local v = host[i]
      if v ~= v or v < least then least = v end       -- a NaN stays
      sum = sum + v
      if v > 0 then positive = positive + 1 end
    end
  else
    if core.dtype(p.dtype).kind == "c" then
      argerror(3, fname, "option 'p' must be real, got " .. p.dtype, 2)
    end
    if a ~= nil and p.device ~= a.device then
      argerror(3, fname, ("option 'p' is on device %d, a on device %d"):format(p.device, a.device), 2)
    end
    pd, made = p, false
    if p.dtype ~= "float64" then pd, made = p:astype("float64", {stream = stream}), true
    elseif not p.is_contiguous then pd, made = p:copy({stream = stream}), true end
    least, sum = math.huge, 0
    if n > 0 then
      local lowest, total = ga.min(pd, {stream = stream}), ga.sum(pd, {stream = stream})
      if stream then stream:synchronize() end
      least, sum = lowest[1], total[1]
      lowest:free()
      total:free()
    end
  end
  local function fail(msg)
    if made then pd:free() end
    argerror(3, fname, msg, 3)
  end
  if least ~= least then fail("option 'p' contains NaN") end
  if least < 0 then fail("option 'p' has a negative probability, " .. tostring(least)) end
  local tolerance = math.sqrt(math.max(EPSILON.float64, EPSILON[given.dtype] or 0))
  if not (math.abs(sum - 1) <= tolerance) then
    fail(("probabilities in option 'p' sum to %.17g, not 1"):format(sum))
  end
  if needed > 0 then
    positive = positive or ga.count_nonzero(pd)
    if positive < needed then
      fail(("a sample of %d without replacement needs as many nonzero probabilities, got %d")
           :format(needed, positive))
    end
  end
  if host then pd, made = ga.to_gpu(host), true end
  return pd, made
end

-- place[i]: the first place (1-based) whose running total of p exceeds u[i] * p's total
-- (NumPy's cdf search), then the nearest place of a positive p, later ones first: the scan's
-- rounding may leave a zero-probability place a hair above the one before it.
local PICK_PREAMBLE = [[
__device__ long long lg_pick(double u, const double *p, const double *cdf, long long n) {
  const double target = u * cdf[n - 1];
  long long low = 0, high = n - 1;          // the first place with cdf > target: in [low, high]
  while (low < high) {
    const long long middle = low + (high - low) / 2;
    if (cdf[middle] > target) high = middle; else low = middle + 1;
  }
  long long place = low;
  while (place < n && p[place] == 0) place++;
  if (place == n) {                         // none later: some p before low is positive
    place = low;
    while (p[place] == 0) place--;
  }
  return place + 1;
}]]

local pick_kernel, key_kernel
function M.pick_kernel()
  pick_kernel = pick_kernel or ew.ElementwiseKernel(
    "long long *place, const double *u, const double *p, const double *cdf, long long n",
    "place[i] = lg_pick(u[i], p, cdf, n)", "random_pick", {preamble = PICK_PREAMBLE})
  return pick_kernel
end

-- Keys whose ascending order is a weighted sample without replacement (Efraimidis and
-- Spirakis, 2006): an exponential number over p, whose order is that of drawing one place
-- at a time with probability p among those left; a zero p sorts last (NaN).
function M.key_kernel()
  key_kernel = key_kernel or ew.ElementwiseKernel("double *key, const double *p",
    "key[i] = p[i] > 0 ? -log1p(-key[i]) / p[i] : __longlong_as_double(0x7ff8000000000000ll)",
    "random_keys")
  return key_kernel
end

-- The first count of an int64 array of places (a copy of them, in shape), which is freed.
local function first_places(places, count, shape, stream)
  local kept = places:narrow(1, 1, count):copy(stream and {stream = stream})
  core.free_after(places, stream)
  return kept:reshape(shape)
end

-- Populations from this size, of which a sample takes at most this share, take
-- distinct_places' draws rather than a permutation's first places.
local SAMPLE_MIN, SAMPLE_MOST = 1 << 14, 0.25
-- The most draws distinct_places starts from: 16 times as many fit its 32-bit places (and
-- twice that many slots its 32-bit slot numbers).
local SAMPLE_DRAWS_MOST = 1 << 26

-- log(1 + x), accurate for tiny x too (Goldberg's correction of the rounded 1 + x).
local function log1p(x)
  local u = 1 + x
  if u == 1 then return x end
  return math.log(u) * x / (u - 1)
end

-- How many i.i.d. draws from n values distinct_places takes first for a sample of count: as
-- many as give count + 4 sqrt(count) + 16 distinct values on average.  The distinct count's
-- spread is below the square root of its mean, so a shortfall (which draws twice as many
-- again) is a many-sigma event.  A field of M so that a spec can force the shortfall.
function M.sample_draws(n, count)
  local distinct = count + 4 * math.sqrt(count) + 16
  return math.ceil(log1p(-distinct / n) / log1p(-1 / n))
end

-- The draws of distinct_places: their counter's key and first block, randint's range and
-- threshold for [0, n), whether its words are 64-bit and how many draws a block makes.
local function sample_draws_of(n, seed, base)
  local _, range, threshold, wide = integer_range(0, n, "int64", "choice")
  return {k0 = seed & MASK, k1 = (seed >> 32) & MASK, base = base, range = range,
          threshold = threshold, wide = wide, per = wide and 2 or 4}
end

-- Up to this many draws, one block takes the whole sample (random.cu's gpu_sample_small);
-- more take a block a tile of this many.
local SAMPLE_SMALL_DRAWS, SAMPLE_TILE = 2048, 4096

-- Writes into places (int64, count elements) the first count distinct values + 1 of m
-- draws; returns how many distinct values the draws hold (the sample is whole if count).
local function take_sample(places, count, m, draws, stream)
  local total = core.array_empty({1}, "int64")
  local k0, k1, base, range = draws.k0, draws.k1, draws.base, draws.range
  local threshold, wide = draws.threshold, draws.wide and 1 or 0
  if m <= SAMPLE_SMALL_DRAWS then
    random_kernel("gpu_sample_small")(places, total, count, m, k0, k1, base, range, threshold, wide,
                                      {block = 1024, grid = 1, stream = stream})
  else
    local bits = 1
    while 1 << bits < 2 * m do bits = bits + 1 end      -- at most half the slots taken
    local tiles = (m + SAMPLE_TILE - 1) // SAMPLE_TILE
    -- the slots (int32), then the tiles' status words and the tile counter (int64)
    local work = core.array_empty({(1 << bits) // 2 + tiles + 1}, "int64")
    work:fill(-1, {stream = stream})
    local values = core.array_empty({m}, "int64")
    random_kernel("gpu_sample_insert")(work, bits, values, m, k0, k1, base, range, threshold, wide,
      {block = BLOCK, grid = reduction.grid_stride_blocks(m, BLOCK), stream = stream})
    random_kernel("gpu_sample_take")(places, total, count, work, bits, values, m,
                                     {block = 1024, grid = tiles, stream = stream})
    core.free_all_after(stream, work, values)
  end
  if stream ~= nil then stream:synchronize() end
  local distinct = total[1]                             -- reads one element: synchronizes
  total:free()
  return distinct
end

-- The first count distinct values of randint(0, n)'s draws (the function of seed and counter
-- that randint's are), 1-based, in shape: a uniform sample in uniform order, by work that
-- grows with count rather than n (random.cu's gpu_sample_*).  Draws first_m values
-- (M.sample_draws(n, count)), twice as many while they hold fewer than count distinct ones;
-- the default generator moves past the blocks of the draws that sufficed.
local function distinct_places(n, count, first_m, shape, opts)
  local stream = opts.stream
  local seed, base = counter_start(opts)
  local draws = sample_draws_of(n, seed, base)
  local m = first_m
  while true do
    local places = core.array_empty(shape, "int64")
    if take_sample(places, count, m, draws, stream) >= count then
      if opts.seed == nil then default.counter = base + (m + draws.per - 1) // draws.per end
      return places
    end
    core.free_after(places, stream)
    m = 2 * m
    -- 16 times the first draws hold count distinct values but for a broken device
    assert(m <= 16 * first_m, "choice's draws hold too few distinct values")
  end
end

-- choice(n or a, size[, {replace = true, p =, seed =, stream =}]): NumPy's, a sample of
-- size (a shape) places of 1..n (int64), or of a's rows (the result of shape size followed
-- by a's other axes).  With replacement, uniform (randint's), or by the probabilities p
-- (a GPUArray or a table) through their running total (in float64: a place's chance is its
-- p to within that total's rounding and the 2^-53 steps of the uniform number); without, as
-- drawing one place at a time, again on a repeat (distinct_places; a sample of at most a
-- quarter of 2^14 or more places, up to about 2^26 of them), else the first of a permutation,
-- or by p the first of keys that order the places as drawing them one at a time does.  An
-- empty sample draws nothing (the default generator stays where it is).
function M.choice(x, size, opts)
  local fname = "choice"
  local n, a = population(x, fname)
  if size == nil then argerror(2, fname, "size expected, got no value") end
  local shape = args.check_shape(size, 2, fname)
  opts = random_options(opts, 3, fname, CHOICE_OPTIONS)
  local replace, stream = opts.replace, opts.stream
  if replace == nil then replace = true end
  if type(replace) ~= "boolean" then
    argerror(3, fname, "option 'replace' must be a boolean, got " .. typename(replace))
  end
  local count = 1
  for _, d in ipairs(shape) do count = count * d end
  if n == 0 and count > 0 then argerror(1, fname, "cannot choose from an empty population") end
  if not replace and count > n then
    argerror(2, fname, ("cannot take a sample of %d from %d without replacement"):format(count, n))
  end
  local places
  if opts.p ~= nil then
    local pd, made = probabilities(opts.p, n, replace and 0 or count, a, stream)
    if replace then
      local cdf = ga.cumsum(pd, {stream = stream})
      local u = draw_floats(false, shape, "float64", opts, 0, 1)
      places = core.array_empty(shape, "int64")
      if count > 0 then M.pick_kernel()(places, u, pd, cdf, n, {stream = stream}) end
      core.free_after(u, stream)
      core.free_after(cdf, stream)
    else
      local keys = draw_floats(false, {n}, "float64", opts, 0, 1)
      if n > 0 then M.key_kernel()(keys, pd, {stream = stream}) end
      local order = require("gpu.sort").argsort(keys, {stream = stream})
      core.free_after(keys, stream)
      places = first_places(order, count, shape, stream)
    end
    if made then core.free_after(pd, stream) end
  elseif replace then
    places = core.array_empty(shape, "int64")
    if n > 0 then draw_integers(places, opts, integer_range(1, n + 1, "int64", fname)) end
  elseif count == 0 then
    places = core.array_empty(shape, "int64")
  else
    local draws = n >= SAMPLE_MIN and count <= n * SAMPLE_MOST and M.sample_draws(n, count)
    if draws and draws <= SAMPLE_DRAWS_MOST then
      places = distinct_places(n, count, draws, shape, opts)
    else
      places = first_places(shuffled_places(n, opts), count, shape, stream)
    end
  end
  if a == nil then return places end
  local result = rows_of(a, places, stream)
  core.free_after(places, stream)
  return result
end

-- Distributions ------------------------------------------------------------------------------
--
-- NumPy's distributions (random_distributions.cu): each element, or each row of dirichlet and
-- multinomial, owns one counter and draws 53-bit uniforms from its own stream of blocks (the
-- block number in the counter's third word), so rejection samplers need no coordination.
-- The twin below repeats the kernels operation for operation in float64.

-- The stream of element counter `counter` under seed: a function giving the next 53 bits.
local function stream_at(seed, counter)
  local k0, k1, c0, c1 = seed & MASK, (seed >> 32) & MASK, counter & MASK, (counter >> 32) & MASK
  local block, second, r2, r3 = 0, false, 0, 0
  return function()
    if second then
      second = false
      return ((r2 << 32) | r3) >> 11
    end
    local r0, r1
    r0, r1, r2, r3 = philox_words(c0, c1, block, 0, k0, k1)
    block, second = block + 1, true
    return ((r0 << 32) | r1) >> 11
  end
end

local function uniform(s) return s() * 2.0^-53 end
local function uniform_open(s) return (s() | 1) * 2.0^-53 end     -- in (0, 1)
local function exponential(s) return -math.log(1.0 - uniform(s)) end

-- cos(pi x) and sin(pi x) for x in [0, 2), as CUDA's cospi and sinpi: reduced (exactly) to
-- arguments of at most a quarter before pi multiplies them.
local function cospi(x)
  if x > 1 then x = 2.0 - x end
  local sign = 1.0
  if x > 0.5 then x, sign = 1.0 - x, -1.0 end
  if x > 0.25 then return sign * math.sin(math.pi * (0.5 - x)) end
  return sign * math.cos(math.pi * x)
end
local function sinpi_half(x)                  -- x in [0, 1/2]
  if x > 0.25 then return math.cos(math.pi * (0.5 - x)) end
  return math.sin(math.pi * x)
end

local function normal(s)
  local u1, u2 = uniform(s), uniform(s)
  return math.sqrt(-2.0 * math.log(1.0 - u1)) * cospi(2.0 * u2)
end

local function gamma_large(a, s)
  local d = a - 1.0 / 3.0
  local c = 1.0 / math.sqrt(9.0 * d)
  while true do
    local x, v
    repeat
      x = normal(s)
      v = 1.0 + c * x
    until not (v <= 0.0)
    v = v * v * v
    local u = uniform(s)
    if u < 1.0 - 0.0331 * (x * x) * (x * x) then return d * v end
    if math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)) then return d * v end
  end
end

local function gamma(a, s)
  if a == 0.0 then return 0.0 end
  if a >= 1.0 then return gamma_large(a, s) end
  local g = gamma_large(a + 1.0, s)
  return g * (1.0 - uniform(s)) ^ (1.0 / a)
end

local function log_gamma_variate(a, s)
  if a >= 1.0 then return math.log(gamma_large(a, s)) end
  local g = gamma_large(a + 1.0, s)
  return math.log(g) + math.log(1.0 - uniform(s)) / a
end

-- log(1 + x), accurate for small x (Lua has no log1p): the rounding of 1 + x undone.
local function log1p(x)
  local y = 1.0 + x
  if y == 1.0 then return x end
  return math.log(y) * x / (y - 1.0)
end

-- exp(x) - 1, accurate for small x (Lua has no expm1): Kahan's (u - 1) x / log(u), u = exp(x).
local function expm1(x)
  local u = math.exp(x)
  if u == 1.0 then return x end
  if u - 1.0 == -1.0 then return -1.0 end
  if u == math.huge then return u end
  return (u - 1.0) * x / math.log(u)
end

local LOG_SQRT_2PI = 0.91893853320467274178

-- random_distributions.cu's gpu_stirling_correction (whole x >= 1), its table and all.
local STIRLING_BELOW_10 = {
  0.08106146679532726, 0.0413406959554093, 0.02767792568499834, 0.020790672103765093,
  0.016644691189821193, 0.013876128823070748, 0.01189670994589177, 0.010411265261972096,
  0.009255462182712733}

local function stirling_correction(x)
  if x < 10.0 then return STIRLING_BELOW_10[math.tointeger(x)] end
  local r = 1.0 / x
  local r2 = r * r
  return r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (1.0 / 1680.0
         - r2 * (1.0 / 1188.0 - r2 * (691.0 / 360360.0))))))
end

local function stirling_difference(y, z)
  return (y + 0.5) * log1p((y - z) / (z + 1.0)) + (y - z) * math.log(z + 1.0)
end

local function poisson(lam, s)
  if lam == 0.0 then return 0.0 end
  if lam < 10.0 then
    local u = uniform(s)
    local p, k = math.exp(-lam), 0.0
    local total = p
    while u > total do
      k = k + 1.0
      p = p * lam / k
      if total + p == total then break end
      total = total + p
    end
    return k
  end
  local root = math.sqrt(lam)
  local b = 0.931 + 2.53 * root
  local a = -0.059 + 0.02483 * b
  local inverse_alpha, v_r = 1.1239 + 1.1328 / (b - 3.4), 0.9277 - 3.6224 / (b - 2.0)
  while true do
    local u = uniform(s) - 0.5
    local v = uniform(s)
    local us = 0.5 - math.abs(u)
    local k = math.floor((2.0 * a / us + b) * u + lam + 0.43) + 0.0
    if us >= 0.07 and v <= v_r then return k end
    if not (k < 0.0 or (us < 0.013 and v > us)) then
      local excess = k + 1.0 - lam
      if math.log(v) + math.log(inverse_alpha) - math.log(a / (us * us) + b) <=
         excess - k * log1p(excess / lam) - 0.5 * math.log(k + 1.0) - LOG_SQRT_2PI
         - stirling_correction(k + 1.0) then
        return k
      end
    end
  end
end

local function binomial(n, p, s)
  if n == 0.0 or p == 0.0 then return 0.0 end
  if p == 1.0 then return n end
  local flip = p > 0.5
  if flip then p = 1.0 - p end
  local q = 1.0 - p
  local k = 0.0
  if n * p < 10.0 then
    local u, ratio = uniform(s), p / q
    local term = math.exp(n * log1p(-p))   -- q^n without q's rounding (tiny p)
    local total = term
    while u > total and k < n do
      k = k + 1.0
      term = term * (ratio * (n - k + 1.0) / k)
      if total + term == total then break end
      total = total + term
    end
  else
    local spq = math.sqrt(n * p * q)
    local b = 1.15 + 2.53 * spq
    local a, c = -0.0873 + 0.0248 * b + 0.01 * p, n * p + 0.5
    local alpha, v_r = (2.83 + 5.1 / b) * spq, 0.92 - 4.2 / b
    local m, log_odds = math.floor((n + 1.0) * p) + 0.0, math.log(p / q)
    local h = stirling_correction(m + 1.0) + stirling_correction(n - m + 1.0)
    while true do
      local u = uniform(s) - 0.5
      local v = uniform(s)
      local us = 0.5 - math.abs(u)
      k = math.floor((2.0 * a / us + b) * u + c) + 0.0
      if not (k < 0.0 or k > n) then
        if us >= 0.07 and v <= v_r then break end
        if math.log(v * alpha / (a / (us * us) + b)) <=
           stirling_difference(m, k) + stirling_difference(n - m, n - k) + h -
           stirling_correction(k + 1.0) - stirling_correction(n - k + 1.0) + (k - m) * log_odds then
          break
        end
      end
    end
  end
  if flip then return n - k end
  return k
end

-- random_distributions.cu's kinds, and their values in float64 (p1 and p2 floats).
local KIND = {exponential = 0, gamma = 1, beta = 2, standard_t = 3, f = 4, lognormal = 5, laplace = 6,
              logistic = 7, gumbel = 8, weibull = 9, pareto = 10, rayleigh = 11, cauchy = 12, poisson = 13,
              binomial = 14, geometric = 15, negative_binomial = 16}

local VARIATES = {
  [KIND.exponential] = function(scale, _, s) return scale * exponential(s) end,
  [KIND.gamma] = function(shape, scale, s) return scale * gamma(shape, s) end,
  [KIND.beta] = function(a, b, s)
    local x = log_gamma_variate(a, s)
    local y = log_gamma_variate(b, s)
    return 1.0 / (1.0 + math.exp(y - x))
  end,
  [KIND.standard_t] = function(df, _, s)
    local z = normal(s)
    local g = gamma(0.5 * df, s)
    return z * math.sqrt(0.5 * df / g)
  end,
  [KIND.f] = function(dfnum, dfden, s)
    local x = gamma(0.5 * dfnum, s)
    local y = gamma(0.5 * dfden, s)
    return (x * dfden) / (y * dfnum)
  end,
  [KIND.lognormal] = function(mean, sigma, s) return math.exp(mean + sigma * normal(s)) end,
  [KIND.laplace] = function(loc, scale, s)
    local u = uniform_open(s)
    if u < 0.5 then return loc + scale * math.log(2.0 * u) end
    return loc - scale * math.log(2.0 - 2.0 * u)
  end,
  [KIND.logistic] = function(loc, scale, s)
    local u = uniform_open(s)
    return loc + scale * math.log(u / (1.0 - u))
  end,
  [KIND.gumbel] = function(loc, scale, s) return loc - scale * math.log(-math.log(uniform_open(s))) end,
  [KIND.weibull] = function(a, _, s)
    if a == 0.0 then return 0.0 end
    return exponential(s) ^ (1.0 / a)
  end,
  [KIND.pareto] = function(a, _, s) return expm1(exponential(s) / a) end,
  [KIND.rayleigh] = function(scale, _, s) return scale * math.sqrt(2.0 * exponential(s)) end,
  [KIND.cauchy] = function(_, _, s)
    local u = uniform_open(s)
    local t = u <= 0.5 and u or 1.0 - u
    local cot = cospi(t) / sinpi_half(t)
    return u <= 0.5 and -cot or cot
  end,
  [KIND.poisson] = function(lam, _, s) return poisson(lam, s) end,
  [KIND.binomial] = function(n, p, s) return binomial(n, p, s) end,
  [KIND.geometric] = function(inverse_rate, _, s)
    local k = math.ceil(exponential(s) * inverse_rate) + 0.0
    return k < 1.0 and 1.0 or k
  end,
  [KIND.negative_binomial] = function(n, p, s) return poisson(gamma(n, s) * ((1.0 - p) / p), s) end,
}

-- A whole float as an int64 (the kernel's gpu_count).
local function count_of(k)
  if k >= 2.0 ^ 63 then return math.maxinteger end
  if k ~= k then return math.mininteger end      -- CUDA's conversion of NaN (never made)
  return math.tointeger(k)
end


-- The parameters' rules: what each must be (after being a finite number).
local RULES = {
  any = {function() return true end, "must not be NaN"},
  ["non-negative"] = {function(v) return v >= 0 end, "must be non-negative"},
  positive = {function(v) return v > 0 end, "must be positive"},
  probability = {function(v) return v >= 0 and v <= 1 end, "must be in [0, 1]"},
  ["positive probability"] = {function(v) return v > 0 and v <= 1 end, "must be in (0, 1]"},
  trials = {function(v) return v >= 0 and v == math.floor(v) and v < 2.0 ^ 63 end,
            "must be a whole number in [0, 2^63)"},
}
local LAM_MAX = 2.0 ^ 62        -- poisson's values stay within int64 (NumPy's limit is near 2^63)

-- A parameter's value in a message: whole floats without a fraction, as in randint's.
local function parameter_text(v)
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2.0 ^ 53 then
    return ("%.0f"):format(v)
  end
  return tostring(v)
end

-- Parameter `spec` ({name, default, rule}) of fname, argument n: the number, checked.
local function check_parameter(v, spec, n, fname)
  local name, default, rule = spec[1], spec[2], RULES[spec[3]]
  if v == nil and default ~= nil then return default end
  if type(v) ~= "number" then
    argerror(n, fname, ("%s must be a number, got %s"):format(name, typename(v)), 3)
  end
  if not rule[1](v) or v ~= v then
    argerror(n, fname, ("%s %s, got %s"):format(name, rule[2], parameter_text(v)), 3)
  end
  if math.abs(v) == math.huge then
    argerror(n, fname, ("%s must be finite, got %s"):format(name, parameter_text(v)), 3)
  end
  if name == "lam" and v > LAM_MAX then
    argerror(n, fname, ("lam must be at most 2^62, got %s"):format(parameter_text(v)), 3)
  end
  return v
end

-- NumPy's distributions of one value an element: their parameters ({name, default, rule}, in
-- NumPy's order and with its defaults), whether their values are int64, and the kernel's kind
-- and two parameters for them (by default the kind of the name and the parameters as given).
local DISTRIBUTIONS = {
  standard_exponential = {params = {}, kernel = function() return KIND.exponential, 1, 0 end},
  exponential = {params = {{"scale", 1, "non-negative"}}},
  standard_gamma = {params = {{"shape", nil, "non-negative"}},
                    kernel = function(shape) return KIND.gamma, shape, 1 end},
  gamma = {params = {{"shape", nil, "non-negative"}, {"scale", 1, "non-negative"}}},
  beta = {params = {{"a", nil, "positive"}, {"b", nil, "positive"}}},
  chisquare = {params = {{"df", nil, "positive"}}, kernel = function(df) return KIND.gamma, 0.5 * df, 2 end},
  standard_t = {params = {{"df", nil, "positive"}}},
  f = {params = {{"dfnum", nil, "positive"}, {"dfden", nil, "positive"}}},
  lognormal = {params = {{"mean", 0, "any"}, {"sigma", 1, "non-negative"}}},
  laplace = {params = {{"loc", 0, "any"}, {"scale", 1, "non-negative"}}},
  logistic = {params = {{"loc", 0, "any"}, {"scale", 1, "non-negative"}}},
  gumbel = {params = {{"loc", 0, "any"}, {"scale", 1, "non-negative"}}},
  weibull = {params = {{"a", nil, "non-negative"}}},
  pareto = {params = {{"a", nil, "positive"}}},
  rayleigh = {params = {{"scale", 1, "non-negative"}}},
  standard_cauchy = {params = {}, kernel = function() return KIND.cauchy, 0, 0 end},
  poisson = {params = {{"lam", 1, "non-negative"}}, integer = true},
  binomial = {params = {{"n", nil, "trials"}, {"p", nil, "probability"}}, integer = true},
  -- the kernel takes -1 / log(1 - p), computed here once
  geometric = {params = {{"p", nil, "positive probability"}}, integer = true,
               kernel = function(p) return KIND.geometric, -1.0 / log1p(-p), 0 end},
  negative_binomial = {params = {{"n", nil, "positive"}, {"p", nil, "positive probability"}}, integer = true},
}

-- The kernel's kind and float parameters for distribution d of the checked parameters.
local function kernel_parameters(name, d, p1, p2)
  local kind, q1, q2
  if d.kernel then kind, q1, q2 = d.kernel(p1, p2) else kind, q1, q2 = KIND[name], p1 or 0, p2 or 0 end
  return kind, q1 + 0.0, q2 + 0.0
end

-- The checked parameters of distribution d (arguments first .. first + #params - 1 of fname).
local function distribution_parameters(d, fname, first, ...)
  local p1, p2
  if d.params[1] then p1 = check_parameter((...), d.params[1], first, fname) end
  if d.params[2] then p2 = check_parameter((select(2, ...)), d.params[2], first + 1, fname) end
  return p1, p2
end

-- The public function of distribution `name`: (params..., size[, dtype][, opts]), dtype only
-- for float results.
local function distribution_function(name, d)
  local count = #d.params
  return function(...)
    local p1, p2 = distribution_parameters(d, name, 1, ...)
    local size, after_size, opts = select(count + 1, ...)
    if size == nil then argerror(count + 1, name, "size expected, got no value") end
    if d.integer then                               -- int64 only: the options follow size
      local shape = args.check_shape(size, count + 1, name)
      opts = random_options(after_size, count + 2, name)
      local kind, q1, q2 = kernel_parameters(name, d, p1, p2)
      return draw("gpu_variates_i64", kind, 1, core.array_empty(shape, "int64"), opts, q1, q2)
    end
    local shape, dtype
    shape, dtype, opts = float_arguments(name, size, after_size, opts, count + 1)
    local kind, q1, q2 = kernel_parameters(name, d, p1, p2)
    return draw("gpu_variates_" .. FLOAT_KERNELS[dtype].suffix, kind, 1, core.array_empty(shape, dtype),
                opts, q1, q2)
  end
end

-- Its twin: reference_<name>(count, params...[, dtype], seed[, base]), the first count values
-- name(params..., count[, dtype], {seed = seed}) gives (from counter base), as Lua numbers.
local function distribution_reference(name, d)
  local fname = "reference_" .. name
  local count = #d.params
  return function(n, ...)
    check_count(fname, n)
    local p1, p2 = distribution_parameters(d, fname, 2, ...)
    local dtype, seed, base
    if d.integer then
      seed, base = select(count + 1, ...)
      base = check_seed(fname, seed, base, count + 2)
    else
      dtype, seed, base = select(count + 1, ...)
      check_float_dtype(fname, dtype, count + 2)
      base = check_seed(fname, seed, base, count + 3)
    end
    local kind, q1, q2 = kernel_parameters(name, d, p1, p2)
    local variate = VARIATES[kind]
    local out = {}
    for e = 0, n - 1 do
      local v = variate(q1, q2, stream_at(seed, base + e))
      if d.integer then v = count_of(v) elseif dtype == "float32" then v = f32(v) end
      out[e + 1] = v
    end
    return out
  end
end

for name, d in pairs(DISTRIBUTIONS) do
  M[name] = distribution_function(name, d)
  M["reference_" .. name] = distribution_reference(name, d)
end

-- Argument n of fname: a table of numbers (pvals or alpha), at least one, each as rule says;
-- returned as a list of floats.
local function check_vector(t, n, fname, what, rule)
  if type(t) ~= "table" or getmetatable(t) ~= nil then
    argerror(n, fname, ("%s must be a table of numbers, got %s"):format(what, typename(t)), 3)
  end
  if #t == 0 then argerror(n, fname, what .. " must not be empty", 3) end
  local values = {}
  for i = 1, #t do
    local v = t[i]
    if type(v) ~= "number" then
      argerror(n, fname, ("%s[%d] must be a number, got %s"):format(what, i, typename(v)), 3)
    end
    if not RULES[rule][1](v) or v ~= v or math.abs(v) == math.huge then
      argerror(n, fname, ("%s[%d] %s, got %s"):format(what, i, RULES[rule][2], parameter_text(v)), 3)
    end
    values[i] = v + 0.0
  end
  return values
end

-- multinomial's n and pvals (arguments first and first + 1): NumPy's checks, the probabilities
-- in [0, 1] and those before the last summing to at most 1 + 1e-12 (the last is what is left).
local function multinomial_parameters(trials, pvals, fname, first)
  trials = check_parameter(trials, {"n", nil, "trials"}, first, fname)
  local p = check_vector(pvals, first + 1, fname, "pvals", "probability")
  local sum = 0.0
  for i = 1, #p - 1 do sum = sum + p[i] end
  if sum > 1.0 + 1e-12 then
    argerror(first + 1, fname, ("pvals before the last sum to %.17g, more than 1"):format(sum), 2)
  end
  return trials + 0.0, p
end

local function multinomial_row(trials, p, s, out)
  local left, mass = trials, 1.0
  for j = 1, #p - 1 do
    local x = 0.0
    if left > 0.0 and p[j] > 0.0 then
      if p[j] >= mass then x = left else x = binomial(left, p[j] / mass, s) end
    end
    out[#out + 1] = count_of(x)
    left, mass = left - x, mass - p[j]
  end
  out[#out + 1] = count_of(left)
end

local function dirichlet_row(alpha, seed, counter, dtype, out)
  local s = stream_at(seed, counter)
  local largest, total = -math.huge, 0.0
  for j = 1, #alpha do
    local l = log_gamma_variate(alpha[j], s)
    if l > largest then
      total, largest = total * math.exp(largest - l) + 1.0, l
    else
      total = total + math.exp(l - largest)
    end
  end
  s = stream_at(seed, counter)
  for j = 1, #alpha do
    local v = math.exp(log_gamma_variate(alpha[j], s) - largest) / total
    out[#out + 1] = dtype == "float32" and f32(v) or v
  end
end

-- Argument n of fname, size, as a shape followed by k (multinomial's and dirichlet's rows).
local function rows_shape(size, k, n, fname)
  if size == nil then argerror(n, fname, "size expected, got no value", 2) end
  local shape = args.check_shape(size, n, fname, 2)
  shape[#shape + 1] = k
  return shape
end

-- Draws kernel `name` over out's rows of k, with the float64 vector values on the device.
local function draw_rows(name, out, opts, values, ...)
  local k = #values
  local vector = ga.to_gpu(core.host.from_table(values, "float64"))
  draw(name, nil, k, out, opts, vector, k, ...)
  core.free_after(vector, opts.stream)
  return out
end

-- multinomial(n, pvals, size[, opts]): NumPy's, int64 counts of n trials among #pvals
-- outcomes, a row of them (the last axis) per element of size.
function M.multinomial(trials, pvals, size, opts)
  local p
  trials, p = multinomial_parameters(trials, pvals, "multinomial", 1)
  local shape = rows_shape(size, #p, 3, "multinomial")
  opts = random_options(opts, 4, "multinomial")
  return draw_rows("gpu_multinomial", core.array_empty(shape, "int64"), opts, p, trials)
end

-- dirichlet(alpha, size[, dtype][, opts]): NumPy's, rows (the last axis) of #alpha values
-- summing to 1, one per element of size; float32 or float64.
function M.dirichlet(alpha, size, dtype, opts)
  alpha = check_vector(alpha, 1, "dirichlet", "alpha", "positive")
  if size == nil then argerror(2, "dirichlet", "size expected, got no value") end
  local shape
  shape, dtype, opts = float_arguments("dirichlet", size, dtype, opts, 2)
  shape[#shape + 1] = #alpha
  return draw_rows("gpu_dirichlet_" .. FLOAT_KERNELS[dtype].suffix, core.array_empty(shape, dtype), opts, alpha)
end

-- reference_multinomial(count, n, pvals, seed[, base]): the first count rows, flattened.
function M.reference_multinomial(count, trials, pvals, seed, base)
  local fname = "reference_multinomial"
  check_count(fname, count)
  local p
  trials, p = multinomial_parameters(trials, pvals, fname, 2)
  base = check_seed(fname, seed, base, 4)
  local out = {}
  for row = 0, count - 1 do multinomial_row(trials, p, stream_at(seed, base + row), out) end
  return out
end

-- reference_dirichlet(count, alpha, dtype, seed[, base]): the first count rows, flattened.
function M.reference_dirichlet(count, alpha, dtype, seed, base)
  local fname = "reference_dirichlet"
  check_count(fname, count)
  alpha = check_vector(alpha, 2, fname, "alpha", "positive")
  check_float_dtype(fname, dtype, 3)
  base = check_seed(fname, seed, base, 4)
  local out = {}
  for row = 0, count - 1 do dirichlet_row(alpha, seed, base + row, dtype, out) end
  return out
end

-- gpu.random holds the public functions only (not install).
function M.install(gpu)
  ga = gpu.gpuarray
  gpu.random = {rand = M.rand, randn = M.randn, uniform = M.uniform, normal = M.normal,
                randint = M.randint, permutation = M.permutation, shuffle = M.shuffle,
                choice = M.choice, seed = M.seed, philox = M.philox, reference = M.reference,
                reference_uniform = M.reference_uniform, reference_normal = M.reference_normal,
                reference_randint = M.reference_randint,
                reference_permutation = M.reference_permutation,
                reference_sample = M.reference_sample, multinomial = M.multinomial,
                dirichlet = M.dirichlet, reference_multinomial = M.reference_multinomial,
                reference_dirichlet = M.reference_dirichlet}
  for name in pairs(DISTRIBUTIONS) do
    gpu.random[name] = M[name]
    gpu.random["reference_" .. name] = M["reference_" .. name]
  end
end

return M
