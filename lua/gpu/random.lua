-- gpu.random: uniform and normal random arrays from Philox4x32-10 (kernels/random.cu).
--
--   gpu.random.rand(shape[, dtype[, {seed = n, stream = s}]])   uniform in [0, 1)
--   gpu.random.randn(shape[, dtype[, {seed = n, stream = s}]])  standard normal
--   gpu.random.seed(n)                                          reseeds the default generator
--
-- Counter-based: the numbers are a pure function of (seed, counter).  With {seed = n} a call
-- starts at counter 0, so the same seed gives the same numbers; without it the default
-- generator's seed is used and its counter advances, so successive calls differ.
-- M.philox and M.reference_* are the CPU twin of the kernels, for specs and users.

local core = require "gpu.core"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"

local M = {}

local argerror, check_options = reduction.argerror, reduction.check_options

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

function M.philox(c, k)
  check_words(c, 4, 1)
  check_words(k, 2, 2)
  local c0, c1, c2, c3, k0, k1 = c[1], c[2], c[3], c[4], k[1], k[2]
  for _ = 1, 10 do
    local p0, p1 = M0 * c0, M1 * c2          -- 64-bit products, exact as unsigned bits
    local hi0, lo0 = (p0 >> 32) & MASK, p0 & MASK
    local hi1, lo1 = (p1 >> 32) & MASK, p1 & MASK
    c0, c1, c2, c3 = hi1 ~ c1 ~ k0, lo1, hi0 ~ c3 ~ k1, lo0
    k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
  end
  return {c0, c1, c2, c3}
end

local function words(seed, counter)
  return M.philox({counter & MASK, (counter >> 32) & MASK, 0, 0}, {seed & MASK, (seed >> 32) & MASK})
end

local function u01f(x) return (x >> 8) * 2.0^-24 end
local function u01d(a, b) return (((a << 32) | b) >> 11) * 2.0^-53 end
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- The first count values the kernels give for (seed, dtype, normal), as Lua numbers.
function M.reference(count, dtype, normal, seed, base)
  -- a CPU reference for the specs: small counts only
  if math.type(count) ~= "integer" or count < 0 or count > 1 << 24 then
    error(("bad argument #1 to 'reference' (count must be a whole number in [0, 2^24], got %s)")
          :format(tostring(count)), 2)
  end
  if dtype ~= "float32" and dtype ~= "float64" then
    error(("bad argument #2 to 'reference' ('float32' or 'float64' expected, got %s)")
          :format(tostring(dtype)), 2)
  end
  if math.type(seed) ~= "integer" then
    error(("bad argument #4 to 'reference' (integer seed expected, got %s)"):format(type(seed)), 2)
  end
  base = base or 0
  if math.type(base) ~= "integer" then
    error(("bad argument #5 to 'reference' (integer counter expected, got %s)"):format(type(base)), 2)
  end
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

-- The default generator.
local default = {seed = 0, counter = 0}

function M.seed(n)
  if math.type(n) ~= "integer" then
    argerror(1, "seed", "integer expected, got " .. (math.type(n) or type(n)))
  end
  default.seed, default.counter = n, 0
end

M.seed(math.floor(os.time() * 1000003 + os.clock() * 1e6) ~ tonumber(tostring({}):match("0x(%x+)") or "0", 16))

local BLOCK = 256
local options = {seed = true, stream = true}
local per_block = {float32 = 4, float64 = 2}

local function generate(fname, normal, shape, dtype, opts)
  if shape == nil then argerror(1, fname, "shape expected, got no value") end
  dtype = dtype or "float32"
  if per_block[dtype] == nil then
    argerror(2, fname, ("dtype must be float32 or float64, got %s"):format(
      type(dtype) == "string" and "'" .. dtype .. "'" or type(dtype)))
  end
  opts = check_options(opts, 3, fname, options)
  if opts.seed ~= nil and math.type(opts.seed) ~= "integer" then
    argerror(3, fname, "option 'seed' must be an integer, got " .. (math.type(opts.seed) or type(opts.seed)))
  end
  local out = core.array_empty(shape, dtype)
  local n = out.size
  local blocks = (n + per_block[dtype] - 1) // per_block[dtype]
  local seed, base
  if opts.seed ~= nil then
    seed, base = opts.seed, 0
  else
    seed, base = default.seed, default.counter
    default.counter = default.counter + blocks
  end
  if n == 0 then return out end
  local name = ("gpu_rand_%s_%s"):format(normal and "normal" or "uniform", dtype == "float32" and "f32" or "f64")
  local f = kernel_cache.get("random|" .. name, function()
    return core.kernel_sources["random.cu"], name, nil, {no_extern_c = true, name = "random.cu"}
  end)
  local grid = reduction.grid_stride_blocks(blocks, BLOCK)
  f(out, n, seed & MASK, (seed >> 32) & MASK, base, {block = BLOCK, grid = grid, stream = opts.stream})
  return out
end

function M.rand(shape, dtype, opts) return generate("rand", false, shape, dtype, opts) end
function M.randn(shape, dtype, opts) return generate("randn", true, shape, dtype, opts) end

-- gpu.random holds the public functions only (not install).
function M.install(gpu)
  gpu.random = {rand = M.rand, randn = M.randn, seed = M.seed, philox = M.philox,
                reference = M.reference}
end

return M
