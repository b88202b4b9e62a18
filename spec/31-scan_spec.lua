-- Scans: InclusiveScanKernel, ExclusiveScanKernel, cumsum.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local scan = require "gpu.scan"
local reduction = require "gpu.reduction"
local sim = require "scan_sim"
local core = require "gpu.core"

describe("scans", function()
  it("compile for every cumsum and cumprod dtype, strided or not, and for exclusive custom operators #nvrtc", function()
    local dtypes = {table.unpack(R.all_dtypes)}
    dtypes[#dtypes + 1], dtypes[#dtypes + 2] = "complex64", "complex128"
    for _, dtype in ipairs(dtypes) do
      local out = reduction.sum_dtype(dtype)
      for _, strided in ipairs{false, true} do
        for _, expr in ipairs(strided and {"a + b"} or {"a + b", "a * b"}) do
          local source = scan.source(out, dtype, expr, nil, false, strided)
          local ok, ptx = pcall(gpu.compile, source, {arch = "compute_90", target = "ptx", no_extern_c = true})
          assert(ok, dtype .. ": " .. tostring(ptx))
          -- the kernels along an axis read contiguous input only
          for _, name in ipairs{"gpu_scan_short_rows", "gpu_scan_columns", "gpu_scan_column_chunks"} do
            assert.are.equal(not strided, ptx:find(".entry " .. name .. "(", 1, true) ~= nil, name)
          end
        end
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
    assert(type(f) == "table" and type(g) == "table", "combined a tile before its row's first")
    return {f[1] * g[1] % P, (f[2] * g[1] + g[2]) % P}
  end
  local function check_sim(n, opts)
    local values = {}
    for i = 1, n do values[i] = {math.random(1, P - 1), math.random(0, P - 1)} end
    opts.junk, opts.poison, opts.neutral = {7, 11}, false, {1, 0}
    local got, tiles = sim.scan(values, compose, opts)
    local run
    for i = 1, n do
      local expect
      if (i - 1) % (opts.row_len or n) == 0 then run = opts.exclusive and {1, 0} or nil end
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

  it("single-pass look-back (CPU model): rows scanned each on their own, any interleaving #slow", function()
    -- tiles of 32: rows within one tile, across a few, and past a look-back window of 32
    for _, shape in ipairs{{1, 5}, {7, 32}, {5, 33}, {3, 95}, {4, 64}, {2, 32 * 33 + 1}, {40, 3}} do
      for _, resident in ipairs{1, 3, 40} do
        local tiles = check_sim(shape[1] * shape[2], {block = 32, items = 1, look_back = 1,
                                                      row_len = shape[2], resident = resident,
                                                      exclusive = resident == 3})
        assert.are.equal(shape[1] * ((shape[2] + 31) // 32), tiles)
      end
    end
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

  -- Running values along axis of the row-major list `values` of an array of shape, with op:
  -- element i's predecessor along the axis is i - inner, unless it starts a run.
  local function along(values, shape, axis, op)
    local inner = 1
    for d = axis + 1, #shape do inner = inner * shape[d] end
    local out = {}
    for i = 1, #values do
      local first = (i - 1) // inner % shape[axis] == 0
      out[i] = first and values[i] or op(out[i - inner], values[i])
    end
    return out
  end

  -- Every route scan_along takes: rows of tiles (aligned for 16-byte loads or not, one tile or
  -- past a look-back window), rows through the view with the axis last, short rows (groups of
  -- 1 to 32 lanes, one chunk or several), and the column kernels (a thread a column, or
  -- chunks with a look-back up each column), limits changed to reach routes with small arrays.
  helpers.gpu_it("cumsum and cumprod along an axis, by every route, match running sums and products", function()
    local add = function(x, y) return x + y end
    local mul = function(x, y) return x * y end
    local saved = scan.along_limits
    local function limits(short_row_len, min_columns, thread_columns)
      return {short_row_len = short_row_len, min_columns = min_columns or saved.min_columns,
              thread_columns = thread_columns or saved.thread_columns}
    end
    local cases = {   -- shape, axis, scan.along_limits (nil: the defaults)
      {{3, 5000}, 2}, {{6, 8192}, -1}, {{5, 4097}, 2}, {{2, 300000}, 2}, {{9000, 3}, 1},
      {{4, 50, 60}, 2}, {{4, 50, 60}, 2, limits(2048, 1)}, {{4, 50, 60}, 2, limits(2048, 1, 1)},
      {{300, 40}, 2}, {{300, 40}, 2, limits(0)}, {{20000, 1}, 1}, {{1, 20000}, 1},
      {{7, 5, 300}, 1}, {{3000, 5}, 2}, {{1000, 3}, 2}, {{50, 1500}, 2}, {{9, 33}, -1},
      {{2, 3, 4, 5}, 4}, {{2, 3, 4, 5}, 3, limits(2048, 1)}, {{2, 3, 4, 5}, 3, limits(2048, 1, 1)},
      {{1500, 1100}, 1}, {{3000, 40}, 1, limits(2048, 1)}, {{70, 2000}, 1, limits(2048, 1, 1)},
    }
    for _, case in ipairs(cases) do
      local shape, axis = case[1], case[2]
      scan.along_limits = case[3] or saved
      local n = 1
      for _, len in ipairs(shape) do n = n * len end
      local d = axis < 0 and #shape + 1 + axis or axis
      for _, dtype in ipairs{"int32", "uint8", "float32", "float64", "bool"} do
        -- floats: +-1, and in runs short enough for float32's exponent +-2 and +-0.5, so that
        -- every running sum and product is exact (integers wrap as Lua's do)
        local values_of = function() return R.random_value(dtype) end
        if dtype:match("^float") then
          values_of = function()
            local r, magnitude = math.random(), 1
            if shape[d] <= 5000 then magnitude = r < 0.05 and 2 or r < 0.1 and 0.5 or 1 end
            return math.random() < 0.5 and -magnitude or magnitude
          end
        end
        local flat, values = R.generate(n, dtype, values_of)
        local a = R.reshaped(flat, shape)
        local numbers = {}
        for i = 1, n do numbers[i] = values[i] == true and 1 or values[i] == false and 0 or values[i] end
        for _, f in ipairs{{"cumsum", add}, {"cumprod", mul}} do
          local got = gpu[f[1]](a, {axis = axis})
          assert.are.equal(reduction.sum_dtype(dtype), got.dtype)
          assert.are.same(shape, got.shape)
          local h, want = R.get(got), along(numbers, shape, d, f[2])
          for i = 1, n do
            if h[i] ~= want[i] then
              error(("%s of %s %s along %d at %d: got %s, expected %s"):format(f[1], dtype,
                    table.concat(shape, "x"), axis, i, h[i], want[i]))
            end
          end
          got:free()
        end
        flat:free()
      end
    end
    scan.along_limits = saved
  end)

  helpers.gpu_it("cumsum along an axis of views, on a stream, and as methods", function()
    local s = gpu.Stream()
    local flat, values = R.generate(60 * 70, "int64", function() return math.random(-1e6, 1e6) end)
    local m = R.reshaped(flat, {60, 70})
    local t = m:transpose()                       -- 70 x 60, not contiguous
    local saved = scan.along_limits
    -- short rows and rows of tiles through the axis-last view; then rows of tiles through a's
    -- layout and the column kernels, by chunks and a thread a column
    for _, limits in ipairs{{2048, 8192, 8192}, {0, 1, 8192}, {0, 1, 1}} do
      scan.along_limits = {short_row_len = limits[1], min_columns = limits[2], thread_columns = limits[3]}
      for axis = 1, 2 do
        local got = t:cumsum({axis = axis, stream = s})
        s:synchronize()
        assert.is_true(got.is_contiguous)
        local h = R.get(got)
        local tv = {}
        for r = 1, 70 do for c = 1, 60 do tv[(r - 1) * 60 + c] = values[(c - 1) * 70 + r] end end
        assert.are.same(along(tv, {70, 60}, axis, function(x, y) return x + y end),
                        (function() local r = {} for i = 1, h.size do r[i] = h[i] end return r end)())
      end
    end
    scan.along_limits = saved
    -- whole-array forms as before: 1-d results in row-major order
    local p = m:cumprod()
    assert.are.same({60 * 70}, p.shape)
    local hp = R.get(p)
    local run = 1
    for i = 1, 60 * 70 do
      run = run * values[i]
      if hp[i] ~= run then error(("cumprod at %d: %d vs %d"):format(i, hp[i], run)) end
    end
    -- an empty axis gives an empty array of the same shape
    local empty = gpu.gpuarray.zeros({0, 3}, "float32"):cumsum({axis = 2})
    assert.are.same({0, 3}, empty.shape)
  end)

  -- nancumsum and nancumprod: NaNs as 0 (1), against running sums and products that are exact
  -- in each dtype (small whole numbers; products of +-1, and a few 2s and halves in float32 and
  -- float64)
  helpers.gpu_it("nancumsum and nancumprod take NaNs as 0 and 1, whole and along an axis", function()
    local NAN = 0 / 0
    local s = gpu.Stream()
    for _, case in ipairs{{"nancumsum", function(x, y) return x + y end, 0},
                          {"nancumprod", function(x, y) return x * y end, 1}} do
      local fname, combine, neutral = case[1], case[2], case[3]
      for _, dtype in ipairs{"float32", "float16", "float64", "int32"} do
        local float = dtype ~= "int32"
        local a, values = R.generate(40 * 30, dtype, function()
          if float and math.random() < 0.2 then return NAN end
          if fname == "nancumsum" then return math.random(-8, 8) end
          local r = math.random()
          local scales = dtype == "float32" or dtype == "float64"     -- room for 2^+-40
          return scales and r < 0.05 and 2 or scales and r < 0.1 and 0.5 or r < 0.55 and 1 or -1
        end)
        local kept = {}
        for i, v in ipairs(values) do kept[i] = v == v and v or neutral end
        local whole = gpu.gpuarray[fname](a, {stream = s})
        s:synchronize()
        assert.are.equal(reduction.sum_dtype(dtype), whole.dtype)
        local h, run = R.get(whole), neutral
        for i = 1, #kept do
          run = combine(run, kept[i])
          if h[i] ~= run then error(("%s of %s at %d: got %s, expected %s"):format(fname, dtype, i, h[i], run)) end
        end
        local m = R.reshaped(a, {40, 30})
        for axis = 1, 2 do
          local want = along(kept, {40, 30}, axis, combine)
          local got = R.get(gpu.gpuarray[fname](m, {axis = axis}))
          for i = 1, #want do
            if got[i] ~= want[i] then
              error(("%s of %s along %d at %d: got %s, expected %s"):format(fname, dtype, axis, i, got[i], want[i]))
            end
          end
        end
        a:free()
      end
    end
    local z = R.to_gpu({gpu.complex(1, 2), gpu.complex(0 / 0, 1), gpu.complex(3, -1)}, "complex64")
    local hz = R.get(gpu.gpuarray.nancumsum(z))
    assert.are.same({1, 2, 1, 2, 4, 1}, {hz[1].re, hz[1].im, hz[2].re, hz[2].im, hz[3].re, hz[3].im})
    local f = R.to_gpu({1, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'nancumsum' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.nancumsum, f, {axis = 2})
    helpers.assert_error("bad argument #2 to 'nancumprod' (unknown option 'dim')", gpu.gpuarray.nancumprod, f, {dim = 1})
    f:free()
    helpers.assert_error("bad argument #1 to 'nancumsum' (array has been freed)", gpu.gpuarray.nancumsum, f)
  end)

  helpers.gpu_it("reject bad arrays with clear messages", function()
    local k = gpu.InclusiveScanKernel("float32", "a + b")
    local ints = R.to_gpu({1, 2, 3}, "int32")
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array of float32 expected, got int32)", k, ints)
    local f = R.to_gpu({1, 2, 3}, "float32")
    local g = R.to_gpu({1, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'scan_kernel' (output has 2 elements, input 3)", k, f, g)
    helpers.assert_error("bad argument #2 to 'scan_kernel' (unknown option 'steam')", k, f, {steam = 1})
    helpers.assert_error("bad argument #2 to 'cumsum' (unknown option 'axes')", gpu.cumsum, f, {axes = 1})
    helpers.assert_error("bad argument #2 to 'cumprod' (axis 2 is out of range for a 1-d array)",
                         gpu.cumprod, f, {axis = 2})
    helpers.assert_error("bad argument #2 to 'cumsum' (option 'axis' must be an integer, got float)",
                         f.cumsum, f, {axis = 1.5})
    f:free()
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array has been freed)", k, f)
    helpers.assert_error("bad argument #1 to 'cumsum' (array has been freed)", gpu.cumsum, f)
    helpers.assert_error("bad argument #1 to 'cumprod' (array has been freed)", f.cumprod, f)
  end)
end)
