-- Scans: InclusiveScanKernel, ExclusiveScanKernel, cumsum.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local scan = require "gpu.scan"

describe("scans", function()
  it("compile for every cumsum dtype, strided or not, and for exclusive custom operators", function()
    for _, dtype in ipairs(R.all_dtypes) do
      local out = gpu.reduction.sum_dtype(dtype)
      if out ~= "float16" and out ~= "bfloat16" then
        for _, strided in ipairs{false, true} do
          local ok, err = pcall(gpu.compile, scan.source(out, dtype, "a + b", nil, false, strided),
                                {arch = "compute_90", target = "ptx", no_extern_c = true})
          assert(ok, dtype .. ": " .. tostring(err))
        end
      end
    end
    assert.is_true(#gpu.compile(scan.source("float32", "float32", "a > b ? a : b", "-1e38f", true, false),
                                {arch = "sm_90", no_extern_c = true}) > 0)
    assert.is_true(#gpu.compile(scan.source("int64", "int8", "a + b", nil, false, true),
                                {arch = "sm_90", no_extern_c = true}) > 0)
  end)

  it("check their constructors' arguments", function()
    helpers.assert_error("bad argument #1 to 'InclusiveScanKernel' (unknown dtype 'float')",
                         gpu.InclusiveScanKernel, "float", "a + b")
    helpers.assert_error("bad argument #2 to 'InclusiveScanKernel' (scan_expr must be a string, got nil)",
                         gpu.InclusiveScanKernel, "int32")
    helpers.assert_error("bad argument #3 to 'ExclusiveScanKernel' (an exclusive scan needs a neutral element)",
                         gpu.ExclusiveScanKernel, "int32", "a + b")
    helpers.assert_error("bad argument #1 to 'InclusiveScanKernel' (float16 scans are not supported "
                         .. "(scan in float32))", gpu.InclusiveScanKernel, "float16", "a + b")
    helpers.assert_error("bad argument #1 to 'cumsum' (GPUArray expected, got table)", gpu.cumsum, {1, 2})
  end)

  local sizes = {1, 2, 3, 5, 7, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 100001, 2048 * 2048 + 1}

  helpers.gpu_it("cumsum of every dtype matches running sums (NumPy's dtypes)", function()
    for _, dtype in ipairs(R.all_dtypes) do
      if dtype ~= "float16" and dtype ~= "bfloat16" then
        for _, n in ipairs(sizes) do
          if n < 100000 or dtype == "int32" or dtype == "float64" then
            local a, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
            local c = gpu.cumsum(a)
            assert.are.equal(gpu.reduction.sum_dtype(dtype), c.dtype)
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

  helpers.gpu_it("scan 2^26 int32 elements and a strided view", function()
    local n = 2 ^ 26
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
    for _, n in ipairs{1, 33, 2049, 100001, 2048 * 2048 + 3} do
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

  helpers.gpu_it("reject bad arrays with clear messages", function()
    local k = gpu.InclusiveScanKernel("float32", "a + b")
    local ints = R.to_gpu({1, 2, 3}, "int32")
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array of float32 expected, got int32)", k, ints)
    local f = R.to_gpu({1, 2, 3}, "float32")
    local g = R.to_gpu({1, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'scan_kernel' (output has 2 elements, input 3)", k, f, g)
    helpers.assert_error("bad argument #1 to 'scan_kernel' (an in-place scan needs a contiguous array "
                         .. "(pass an output))", k, R.every(R.to_gpu({1, 2, 3, 4}, "float32"), 2))
    helpers.assert_error("bad argument #2 to 'scan_kernel' (unknown option 'steam')", k, f, {steam = 1})
    helpers.assert_error("bad argument #2 to 'cumsum' (unknown option 'axis')", gpu.cumsum, f, {axis = 1})
    f:free()
    helpers.assert_error("bad argument #1 to 'scan_kernel' (array has been freed)", k, f)
    helpers.assert_error("bad argument #1 to 'cumsum' (array has been freed)", gpu.cumsum, f)
    local h = R.to_gpu({1, 2}, "float16")
    helpers.assert_error("bad argument #1 to 'cumsum' (float16 is not supported (convert to float32 first))",
                         gpu.cumsum, h)
  end)
end)
