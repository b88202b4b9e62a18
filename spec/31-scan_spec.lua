-- Scans: InclusiveScanKernel, ExclusiveScanKernel, cumsum.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local scan = require "gpu.scan"
local reduction = require "gpu.reduction"
local sim = require "scan_sim"
local core = require "gpu.core"

describe("scans", function()
  it("compile for every cumsum dtype, strided or not, and for exclusive custom operators", function()
    for _, dtype in ipairs(R.all_dtypes) do
      local out = reduction.sum_dtype(dtype)
      for _, strided in ipairs{false, true} do
        local ok, err = pcall(gpu.compile, scan.source(out, dtype, "a + b", nil, false, strided),
                              {arch = "compute_90", target = "ptx", no_extern_c = true})
        assert(ok, dtype .. ": " .. tostring(err))
      end
    end
    assert.is_true(#gpu.compile(scan.source("float32", "float32", "a > b ? a : b", "-1e38f", true, false),
                                {arch = "sm_90", no_extern_c = true}) > 0)
    assert.is_true(#gpu.compile(scan.source("int64", "int8", "a + b", nil, false, true),
                                {arch = "sm_90", no_extern_c = true}) > 0)
    -- 8-byte values (flag + value slots, fences) exclusive, and bool (packed, 1-byte shuffles)
    assert.is_true(#gpu.compile(scan.source("float64", "float64", "a < b ? a : b", "1e308", true, false),
                                {arch = "sm_90", no_extern_c = true}) > 0)
    assert.is_true(#gpu.compile(scan.source("bool", "bool", "a != b", "false", true, false),
                                {arch = "sm_90", no_extern_c = true}) > 0)
    -- the 16-byte path exists only for contiguous input
    assert.truthy(scan.source("float32", "float32", "a + b", nil, false, false):find("gpu_scan_vec", 1, true))
    assert.are.equal(128 + 8 * 128, scan.state_bytes(128, "float32"))
    assert.are.equal(128 + 4 * 32 + 2 * 8 * 32, scan.state_bytes(32, "int64"))
    -- float16 scans in float: its look-back state is float32's, and it stores rounded values
    assert.are.equal(scan.state_bytes(128, "float32"), scan.state_bytes(128, "float16"))
    assert.are.equal(scan.tiles(100001, "float32"), scan.tiles(100001, "bfloat16"))
    local half = scan.source("float16", "float16", "a + b", nil, false, false)
    assert.truthy(half:find("typedef float gpu_t;", 1, true))
    assert.truthy(half:find("return gpu_float_to_half(v);", 1, true))
  end)

  -- The single-pass algorithm, on the CPU (spec/scan_sim.lua models kernels/scan.cu), with a
  -- non-commutative operator: composing affine maps x -> a*x + b modulo a prime, so any tile,
  -- warp or lane combined out of order, twice or not at all gives a wrong answer.
  local P = 1000003
  local function compose(f, g)
    assert(type(f) == "table" and type(g) == "table", "combined a tile before tile 0")
    return {f[1] * g[1] % P, (f[2] * g[1] + g[2]) % P}
  end
  local function check_sim(n, opts)
    local values = {}
    for i = 1, n do values[i] = {math.random(1, P - 1), math.random(0, P - 1)} end
    opts.junk, opts.poison, opts.neutral = {7, 11}, false, {1, 0}
    local got, tiles = sim.scan(values, compose, opts)
    local run = opts.exclusive and {1, 0} or nil
    for i = 1, n do
      local expect
      if opts.exclusive then expect, run = run, compose(run, values[i])
      else run = run and compose(run, values[i]) or values[i]; expect = run end
      local g = got[i]
      if not g or g[1] ~= expect[1] or g[2] ~= expect[2] then
        error(("n = %d, %d tiles: element %d wrong"):format(n, tiles, i))
      end
    end
    assert.are.equal(n, #got)
    return tiles
  end

  it("single-pass look-back (CPU model): the kernel's tile size, in and around one tile #slow", function()
    for _, n in ipairs{1, 2, 4095, 4096, 4097, 3 * 4096 + 5} do
      check_sim(n, {})
      check_sim(n, {exclusive = true, resident = 2})
    end
  end)

  it("single-pass look-back (CPU model): small tiles, windows slid past, any interleaving #slow", function()
    local seen = {}
    for _, cfg in ipairs{{32, 1, 1}, {64, 2, 1}, {32, 1, 4}, {96, 3, 2}} do
      local tile, window = cfg[1] * cfg[2], 32 * cfg[3]
      for _, n in ipairs{tile - 1, tile, tile + 1, (window - 1) * tile + 1, window * tile,
                         (window + 1) * tile + 3, (3 * window + 5) * tile + 7} do
        for _, resident in ipairs{1, 3, 40, 200} do
          local tiles = check_sim(n, {block = cfg[1], items = cfg[2], look_back = cfg[3],
                                      resident = resident, exclusive = resident == 3})
          seen[cfg[3]] = math.max(seen[cfg[3]] or 0, tiles)
        end
      end
    end
    assert.is_true(seen[1] > 2 * 32 and seen[4] > 2 * 128)   -- windows slid more than once
  end)

  it("check their constructors' arguments", function()
    helpers.assert_error("bad argument #1 to 'InclusiveScanKernel' (unknown dtype 'float')",
                         gpu.InclusiveScanKernel, "float", "a + b")
    helpers.assert_error("bad argument #2 to 'InclusiveScanKernel' (scan_expr must be a string, got nil)",
                         gpu.InclusiveScanKernel, "int32")
    helpers.assert_error("bad argument #3 to 'ExclusiveScanKernel' (an exclusive scan needs a neutral element)",
                         gpu.ExclusiveScanKernel, "int32", "a + b")
    helpers.assert_error("bad argument #1 to 'cumsum' (GPUArray expected, got table)", gpu.cumsum, {1, 2})
  end)

  local TILE = 4096   -- kernels/scan.cu's GPU_TILE
  local sizes = {1, 2, 3, 5, 7, 31, 32, 33, 255, 256, 257, TILE - 1, TILE, TILE + 1, 3 * TILE,
                 33 * TILE + 17, 100001, 2048 * 2048 + 1}

  helpers.gpu_it("cumsum of every dtype matches running sums (NumPy's dtypes)", function()
    for _, dtype in ipairs(R.all_dtypes) do
      if dtype ~= "float16" and dtype ~= "bfloat16" then
        for _, n in ipairs(sizes) do
          if n < 100000 or dtype == "int32" or dtype == "float64" then
            local a, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
            local c = gpu.cumsum(a)
            assert.are.equal(reduction.sum_dtype(dtype), c.dtype)
            assert.are.same({n}, c.shape)
            local h = R.get(c)
            local run, abs = 0, 0
            for i = 1, n do
              local v = values[i]
              if dtype == "bool" then v = v and 1 or 0 end
              run = run + v
              abs = abs + math.abs(v)
              if dtype == "float32" or dtype == "float64" then
                local tol = (dtype == "float32" and 2 ^ -20 or 2 ^ -48) * (abs + math.abs(run))
                assert(math.abs(h[i] - run) <= tol, ("%s[%d] at %d: %.17g vs %.17g"):format(dtype, n, i, h[i], run))
              elseif h[i] ~= run then
                error(("%s[%d] at %d: got %s, expected %s"):format(dtype, n, i, h[i], run))
              end
            end
          end
        end
      end
    end
  end)

  -- Multiples of 1/16 under 16 in magnitude: exact in float16, bfloat16 and in the float
  -- running sums, so each output is the exact running sum rounded once.
  helpers.gpu_it("cumsum of float16 and bfloat16: float running sums, each rounded", function()
    for _, dtype in ipairs{"float16", "bfloat16"} do
      local round = gpu[dtype]
      for _, n in ipairs{1, 2, 33, TILE - 1, TILE, TILE + 1, 3 * TILE, 33 * TILE + 17, 100001} do
        local a, values = R.generate(n + 1, dtype, function() return math.random(-255, 255) / 16 end)
        for _, input in ipairs{core.array_view(a, 0, dtype, {n}), R.every(a, 2)} do
          local c = gpu.cumsum(input)
          assert.are.equal(dtype, c.dtype)
          local h = R.get(c)
          local run, step = 0, input.is_contiguous and 1 or 2
          for i = 1, c.size do
            run = run + values[1 + (i - 1) * step]
            local expect = round(run).value
            if h[i] ~= expect then
              error(("%s cumsum[%d] step %d at %d: got %.17g, expected %.17g"):format(dtype, n,
                    step, i, h[i], expect))
            end
          end
        end
        a:free()
      end
    end
  end)

  helpers.gpu_it("scan 2^26 + 3 int32 elements and a strided view", function()
    local n = 2 ^ 26 + 3
    local a = R.generate(n, "int32", function(i) return (i * 7919) % 13 - 6 end)
    local h = R.get(gpu.cumsum(a))
    local run = 0
    for i = 1, n do
      run = run + (i * 7919) % 13 - 6
      if h[i] ~= run then error(("at %d: got %d, expected %d"):format(i, h[i], run)) end
    end
    a:free()
    local b, values = R.generate(10001, "float64", function() return math.random() end)
    local v = R.every(b, 3)
    local hv = R.get(gpu.cumsum(v))
    local acc, k = 0, 0
    for i = 1, 10001, 3 do
      acc = acc + values[i]
      k = k + 1
      helpers.assert_close(acc, hv[k], 1e-13)
    end
  end)

  helpers.gpu_it("custom scans: inclusive max in place, exclusive sum into an output", function()
    for _, n in ipairs{1, 33, TILE - 1, TILE, TILE + 1, 100001, 2048 * 2048 + 3} do
      local a, values = R.generate(n, "int32", function() return math.random(-1e6, 1e6) end)
      local kmax = gpu.InclusiveScanKernel("int32", "a > b ? a : b")
      assert.are.equal(a, kmax(a))
      local h = R.get(a)
      local m = values[1]
      for i = 1, n do
        if values[i] > m then m = values[i] end
        if h[i] ~= m then error(("max scan[%d] at %d: %d vs %d"):format(n, i, h[i], m)) end
      end
      local b, bv = R.generate(n, "int64", function() return math.random(-1e6, 1e6) end)
      local out = R.generate(n, "int64", function() return 0 end)
      local ksum = gpu.ExclusiveScanKernel("int64", "a + b", 0)
      assert.are.equal(out, ksum(b, out))
      local ho = R.get(out)
      local run = 0
      for i = 1, n do
        if ho[i] ~= run then error(("exclusive sum[%d] at %d: %d vs %d"):format(n, i, ho[i], run)) end
        run = run + bv[i]
      end
    end
  end)

  -- Every scan dtype with a custom operator, inclusive and exclusive, on both kernels (16-byte
  -- loads for aligned arrays, element loads for a view 1 element in) and both state layouts
  -- (packed status words up to 4 bytes, flag + value slots for 8).
  local function wrap(v, bits, signed)
    v = v % (1 << bits)
    if signed and v >= 1 << (bits - 1) then v = v - (1 << bits) end
    return v
  end
  local custom = {
    bool = {"a != b", function(x, y) return x ~= y end, "false", false},
    int8 = {"a ^ b", function(x, y) return x ~ y end, "0", 0},
    uint8 = {"a + b", function(x, y) return (x + y) % 256 end, "0", 0},
    int16 = {"a > b ? a : b", math.max, "-32768", -32768},
    uint16 = {"a + b", function(x, y) return (x + y) % 65536 end, "0", 0},
    int32 = {"a < b ? a : b", math.min, "2147483647", 2147483647},
    uint32 = {"a ^ b", function(x, y) return x ~ y end, "0u", 0},
    int64 = {"a + b", function(x, y) return x + y end, "0", 0},   -- values under 2^40: no overflow
    uint64 = {"a > b ? a : b", function(x, y) return math.ult(x, y) and y or x end, "0", 0},
    float32 = {"a > b ? a : b", math.max, "-1267650600228229401496703205376.0f", -2.0 ^ 100},
    float64 = {"a < b ? a : b", math.min, "1e308", 1e308},
    float16 = {"a > b ? a : b", math.max, "-65504.0f", -65504},
    bfloat16 = {"a < b ? a : b", math.min, "1.7014118346046923e38f", 2.0 ^ 127},
  }
  local function random_of(dtype)
    if dtype == "bool" then return math.random() < 0.5 end
    if dtype == "float32" or dtype == "float64" then return math.random() * 2e6 - 1e6 end
    if dtype == "float16" or dtype == "bfloat16" then return math.random(-255, 255) / 16 end
    if dtype == "int64" then return math.random(-(1 << 40), 1 << 40) end
    if dtype == "uint64" then return math.random(0, 1 << 62) end
    local bits = tonumber(dtype:match("%d+"))
    return wrap(math.random(0, (1 << bits) - 1), bits, dtype:sub(1, 1) == "i")
  end

  helpers.gpu_it("custom scans of every dtype, inclusive and exclusive, aligned or not", function()
    for dtype, c in pairs(custom) do
      local expr, op, neutral_c, neutral = table.unpack(c)
      for _, n in ipairs{1, TILE - 1, TILE, TILE + 1, 40 * TILE + 9} do
        for _, exclusive in ipairs{false, true} do
          for _, skip in ipairs{0, 1} do
            local a, values = R.generate(n + skip, dtype, function() return random_of(dtype) end)
            local input = core.array_view(a, skip * a.itemsize, dtype, {n})
            local out = core.array_empty(n + skip, dtype)
            local view = core.array_view(out, skip * out.itemsize, dtype, {n})
            local k = exclusive and gpu.ExclusiveScanKernel(dtype, expr, neutral_c)
                                 or gpu.InclusiveScanKernel(dtype, expr)
            k(input, view)
            local h = R.get(out)
            local run
            if exclusive then run = neutral end
            for i = 1, n do
              local x, expect = values[i + skip], nil
              if exclusive then expect, run = run, op(run, x)
              else if i == 1 then run = x else run = op(run, x) end expect = run end
              local got = h[i + skip]
              if got ~= expect then
                error(("%s %s n=%d skip=%d at %d: got %s, expected %s"):format(dtype, exclusive and
                      "exclusive" or "inclusive", n, skip, i, tostring(got), tostring(expect)))
              end
            end
            a:free()
            out:free()
          end
        end
      end
    end
  end)

  helpers.gpu_it("keeps a non-commutative operator's order across lanes, warps and tiles", function()
    local n = 200 * TILE + 5
    local a, values = R.generate(n, "int64", function(i) return i * 3 - 7 end)
    local first = R.get(gpu.InclusiveScanKernel("int64", "a")(a, core.array_empty(n, "int64")))
    local last = R.get(gpu.InclusiveScanKernel("int64", "b")(a, core.array_empty(n, "int64")))
    local b, fvalues = R.generate(n, "float32", function(i) return i end)
    local firstf = R.get(gpu.InclusiveScanKernel("float32", "a")(b, core.array_empty(n, "float32")))
    for i = 1, n do
      if first[i] ~= values[1] or last[i] ~= values[i] or firstf[i] ~= fvalues[1] then
        error(("at %d: %s %s %s"):format(i, first[i], last[i], firstf[i]))
      end
    end
  end)

  helpers.gpu_it("cumsum in place of an unaligned view and on a stream, repeatedly (state reset)", function()
    local s = core.Stream()
    for round = 1, 3 do
      local n = 5 * TILE + round
      local a, values = R.generate(n + 1, "float32", function() return math.random(-8, 8) end)
      local view = core.array_view(a, 4, "float32", {n})
      local k = gpu.InclusiveScanKernel("float32", "a + b")
      k(view, {stream = s})
      s:synchronize()
      local h = R.get(a)
      assert.are.equal(values[1], h[1])
      local run = 0
      for i = 1, n do
        run = run + values[i + 1]
        if h[i + 1] ~= run then error(("round %d at %d: %s vs %s"):format(round, i, h[i + 1], run)) end
      end
      -- a scan of running sums passes 2^24, where float32 rounds: the order of additions
      -- moves the result by a few units in the last place of the largest partial sum
      local cumsum = gpu.cumsum(a, {stream = s})
      s:synchronize()
      local c = R.get(cumsum)
      run = 0
      local magnitude = 0
      for i = 1, n + 1 do
        run = run + h[i]
        magnitude = magnitude + math.abs(h[i])
        if math.abs(c[i] - run) > magnitude * 2 ^ -20 then
          error(("cumsum round %d at %d: %s vs %s"):format(round, i, c[i], run))
        end
      end
    end
  end)

  helpers.gpu_it("scan into non-contiguous views, in place and into an output, on a stream", function()
    local n = 3 * 5000
    local x, xv = R.generate(n, "int64", function() return math.random(-1000, 1000) end)
    local every = R.every(x, 3)                  -- x[1], x[4], ...: 5000 elements
    local running = gpu.InclusiveScanKernel("int64", "a + b")
    local s = gpu.Stream({non_blocking = true})
    local out = R.to_gpu((function() local t = {} for i = 1, 2 * 5000 do t[i] = -7 end return t end)(), "int64")
    local odd = R.every(out, 2)                  -- into every other element of out
    assert.are.equal(odd, running(every, odd, {stream = s}))
    running(every, {stream = s})                 -- in place, through the view
    s:synchronize()
    local o, h = R.get(out), R.get(x)
    local acc = 0
    for i = 1, 5000 do
      acc = acc + xv[3 * (i - 1) + 1]
      assert.are.equal(acc, o[2 * i - 1], "output #" .. i)
      assert.are.equal(-7, o[2 * i], "untouched #" .. i)
      assert.are.equal(acc, h[3 * (i - 1) + 1], "in place #" .. i)
      assert.are.equal(xv[3 * (i - 1) + 2], h[3 * (i - 1) + 2], "between #" .. i)
    end
  end)

  helpers.gpu_it("reject bad arrays with clear messages", function()
    local k = gpu.InclusiveScanKernel("float32", "a + b")
    local ints = R.to_gpu({1, 2, 3}, "int32")
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array of float32 expected, got int32)", k, ints)
    local f = R.to_gpu({1, 2, 3}, "float32")
    local g = R.to_gpu({1, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'scan_kernel' (output has 2 elements, input 3)", k, f, g)
    helpers.assert_error("bad argument #2 to 'scan_kernel' (unknown option 'steam')", k, f, {steam = 1})
    helpers.assert_error("bad argument #2 to 'cumsum' (unknown option 'axis')", gpu.cumsum, f, {axis = 1})
    f:free()
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array has been freed)", k, f)
    helpers.assert_error("bad argument #1 to 'cumsum' (array has been freed)", gpu.cumsum, f)
  end)
end)
