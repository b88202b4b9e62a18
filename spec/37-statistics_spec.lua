-- argmax and argmin along an axis; var and std, whole and along an axis; the nan-reductions;
-- quantile, percentile and median.  GPU results are
-- checked against references computed in Lua on fresh random data.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local core = require "gpu.core"
local reduction = require "gpu.reduction"
local ew = require "gpu.elementwise"

local complex_dtypes = {"complex64", "complex128"}

-- Calls fn(index) for every multi-index of shape, in row-major order (once for shape {}).
local function each_index(shape, fn)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local index = {}
  for d = 1, #shape do index[d] = 1 end
  for _ = 1, n do
    fn(index)
    for d = #shape, 1, -1 do
      index[d] = index[d] + 1
      if index[d] <= shape[d] then break end
      index[d] = 1
    end
  end
end

-- The element at a multi-index of a row-major shape in a flat list.
local function flat_at(values, shape)
  return function(index)
    local k = 0
    for d = 1, #shape do k = k * shape[d] + index[d] - 1 end
    return values[k + 1]
  end
end

-- reduce(line) for every line along axis of the array (shape, element function at), in the
-- row-major order of the kept shape; returns the results and the kept shape.
local function along(shape, at, axis, reduce)
  local kept = {}
  for d = 1, #shape do if d ~= axis then kept[#kept + 1] = shape[d] end end
  local results = {}
  each_index(kept, function(k)
    local index, f = {}, 1
    for d = 1, #shape do
      if d ~= axis then index[d], f = k[f], f + 1 end
    end
    local line = {}
    for r = 1, shape[axis] do
      index[axis] = r
      line[r] = at(index)
    end
    results[#results + 1] = reduce(line)
  end)
  return results, kept
end

-- Test arrays of dtype built from fn(i): a 3-d contiguous one, a transposed 2-d view and a
-- 2-d view of every other column; each {array, shape, at (element function), name}.
local function test_arrays(dtype, fn)
  local shape3 = {3, 5, 36}
  local a3, v3 = R.generate(3 * 5 * 36, dtype, fn)
  local rows, cols = 9, 40
  local base, vb = R.generate(rows * cols, dtype, fn)
  local base_at = flat_at(vb, {rows, cols})
  local itemsize = core.dtype(dtype).itemsize
  return {
    {R.reshaped(a3, shape3), shape3, flat_at(v3, shape3), "3-d"},
    {R.transposed(R.reshaped(base, {rows, cols})), {cols, rows},
     function(index) return base_at{index[2], index[1]} end, "transposed"},
    {core.array_view(base, 0, dtype, {rows, cols // 2}, {cols * itemsize, 2 * itemsize}),
     {rows, cols // 2}, function(index) return base_at{index[1], 2 * index[2] - 1} end,
     "every other column"},
  }
end

describe("statistics", function()
  it("var and std result dtypes follow NumPy", function()
    local want = {bool = "float64", int8 = "float64", uint8 = "float64", int16 = "float64",
                  uint16 = "float64", int32 = "float64", uint32 = "float64", int64 = "float64",
                  uint64 = "float64", float16 = "float16", bfloat16 = "bfloat16",
                  float32 = "float32", float64 = "float64", complex64 = "float32",
                  complex128 = "float64"}
    for dtype, out in pairs(want) do
      assert.are.equal(out, reduction.var_dtype(dtype), dtype)
    end
    assert.are.equal("float32", reduction.var_work_dtype("float16"))
    assert.are.equal("float32", reduction.var_work_dtype("bfloat16"))
    assert.are.equal("float64", reduction.var_work_dtype("uint8"))
    assert.are.equal("complex64", reduction.var_work_dtype("complex64"))
    assert.are.equal("int64", reduction.ops.argmax("float16").out)
  end)

  it("var and std kernels compile with NVRTC for every dtype (PTX)", function()
    local all = {table.unpack(R.all_dtypes)}
    for _, dtype in ipairs(complex_dtypes) do all[#all + 1] = dtype end
    local function compile(what, source)
      local ok, err = pcall(gpu.compile, source, {arch = "compute_90", target = "ptx", no_extern_c = true})
      assert(ok, ("%s: %s"):format(what, tostring(err)))
    end
    for _, dtype in ipairs(all) do
      local deviations = reduction.deviation_program(dtype)
      compile("deviations of " .. dtype, ew.source(deviations, "c"))
      compile("strided deviations of " .. dtype, ew.source(deviations, "s2"))
      local out = reduction.var_dtype(dtype)
      for _, op in ipairs{"var", "std"} do
        compile(op .. " scale of " .. dtype, ew.source(reduction.scale_program(op, deviations.out, out), "c"))
      end
      compile("var_deviation of " .. dtype,
              (reduction.builtin_source("var_deviation", dtype, reduction.var_work_dtype(dtype))))
    end
    for _, dtype in ipairs{"float16", "bfloat16"} do
      compile("var_mean of " .. dtype, (reduction.builtin_source("var_mean", dtype)))
    end
    -- nanvar's and nanstd's, for the dtypes that hold NaN
    for _, dtype in ipairs{"float16", "bfloat16", "float32", "float64", "complex64", "complex128"} do
      local deviations = reduction.nan_deviation_program(dtype)
      compile("NaN-skipping deviations of " .. dtype, ew.source(deviations, "s2"))
      for _, op in ipairs{"nanvar", "nanstd"} do
        compile(op .. " scale of " .. dtype,
                ew.source(reduction.nan_scale_program(op, deviations.out, reduction.var_dtype(dtype)), "c"))
      end
      compile("nanvar_mean of " .. dtype, (reduction.builtin_source("nanvar_mean", dtype)))
    end
  end)

  helpers.gpu_it("argmax and argmin along each axis of every real dtype, views included", function()
    for _, dtype in ipairs(R.all_dtypes) do
      local float = dtype:match("float") ~= nil
      for _, t in ipairs(test_arrays(dtype, function()
        if float and math.random() < 0.03 then return 0 / 0 end
        return R.tied_value(dtype)
      end)) do
        local a, shape, at, name = t[1], t[2], t[3], t[4]
        local axes = {}
        for d = 1, #shape do axes[d] = d end
        axes[#axes + 1] = -1
        for _, axis in ipairs(axes) do
          local ax = axis < 0 and #shape + 1 + axis or axis
          for _, op in ipairs{"argmax", "argmin"} do
            local want, kept = along(shape, at, ax, function(line) return R.arg_reference(line, dtype, op) end)
            -- the method and the gpuarray function both give int64 arrays with an axis
            local out = (ax % 2 == 0) and a[op](a, {axis = axis}) or gpu.gpuarray[op](a, {axis = axis})
            assert.are.equal("int64", out.dtype)
            assert.are.same(kept, out.shape)
            local got = R.get(out)
            for i = 1, #want do
              if got[i] ~= want[i] then
                error(("%s of %s %s along axis %d, output %d: got %s, expected %d"):format(
                  op, name, dtype, axis, i, tostring(got[i]), want[i]))
              end
            end
          end
        end
      end
    end
    -- a 1-d array along its axis gives a 0-d array; on a stream it stays there until synchronized
    local v = R.to_gpu({4, 9, 1, 9, 0}, "int16")
    local stream = gpu.Stream()
    local i = gpu.gpuarray.argmax(v, {axis = 1, stream = stream})
    assert.are.same({}, i.shape)
    stream:synchronize()
    assert.are.equal(2, R.value(i))
    assert.are.equal(5, R.value(v:argmin({axis = -1})))
    -- an empty kept shape gives an empty result
    assert.are.same({0}, gpu.gpuarray.argmin(core.array_empty({0, 3}, "float32"), {axis = 2}).shape)
  end)

  -- nanargmax and nanargmin: the best number's first place, NaNs never winning; 0 for a line
  -- of NaNs only (NumPy raises there, CuPy gives -1)
  helpers.gpu_it("nanargmax and nanargmin skip NaNs, whole and along each axis", function()
    local function nan_arg_reference(line, op)
      local best = 0
      for i, v in ipairs(line) do
        if v == v and (best == 0 or (op == "nanargmax" and v > line[best])
                                  or (op == "nanargmin" and v < line[best])) then
          best = i
        end
      end
      return best
    end
    for _, dtype in ipairs{"float32", "float64", "float16", "int16"} do
      local float = dtype ~= "int16"
      for _, t in ipairs(test_arrays(dtype, function()
        if float and math.random() < 0.3 then return 0 / 0 end
        return R.tied_value(dtype)
      end)) do
        local a, shape, at, name = t[1], t[2], t[3], t[4]
        local all = {}
        each_index(shape, function(index) all[#all + 1] = at(index) end)
        for _, op in ipairs{"nanargmax", "nanargmin"} do
          local whole = gpu.gpuarray[op](a)
          assert.are.equal("int64", whole.dtype)
          assert.are.equal(nan_arg_reference(all, op), R.value(whole), ("%s of %s %s"):format(op, name, dtype))
          for axis = 1, #shape do
            local want = along(shape, at, axis, function(line) return nan_arg_reference(line, op) end)
            local got = R.get(gpu.gpuarray[op](a, {axis = axis}))
            for i = 1, #want do
              if got[i] ~= want[i] then
                error(("%s of %s %s along axis %d, output %d: got %s, expected %d"):format(
                  op, name, dtype, axis, i, tostring(got[i]), want[i]))
              end
            end
          end
        end
      end
    end
    local NAN = 0 / 0
    local m = R.reshaped(R.to_gpu({NAN, NAN, NAN, 2, NAN, -1}, "float32"), {2, 3})
    assert.are.same({0, 1}, {R.get(gpu.gpuarray.nanargmax(m, {axis = 2}))[1], R.get(gpu.gpuarray.nanargmax(m, {axis = 2}))[2]})
    assert.are.same({0, 3}, {R.get(gpu.gpuarray.nanargmin(m, {axis = 2}))[1], R.get(gpu.gpuarray.nanargmin(m, {axis = 2}))[2]})
    assert.are.equal(6, R.value(gpu.gpuarray.nanargmin(m)))
    assert.are.equal(0, R.value(gpu.gpuarray.nanargmax(R.to_gpu({NAN, NAN}, "float64"))))
    helpers.assert_error("bad argument #1 to 'nanargmax' (nanargmax is not defined for complex arrays (complex64 has no order))",
                         gpu.gpuarray.nanargmax, gpu.gpuarray.zeros({2}, "complex64"))
    helpers.assert_error("bad argument #1 to 'nanargmin' (attempt to get nanargmin of an empty array)",
                         gpu.gpuarray.nanargmin, gpu.gpuarray.zeros({0}, "float32"))
  end)

  -- logsumexp, softmax and log_softmax against the same shifted sums in double precision:
  -- lines of moderate values, one past float32's exp range (shifting keeps it finite), one
  -- of -inf only (logsumexp -inf, softmax NaN as SciPy's), one with a NaN
  helpers.gpu_it("logsumexp, softmax and log_softmax, whole and along each axis", function()
    local NAN, INF = 0 / 0, math.huge
    local function close(want, got, rtol, what)
      if want == INF or want == -INF then assert(got == want, ("%s: got %s, expected %s"):format(what, got, want))
      else helpers.assert_close(want, got, rtol, what) end
    end
    local function shift_of(line)
      local m = -INF
      for _, v in ipairs(line) do
        if v ~= v then return NAN end
        m = math.max(m, v)
      end
      return (m == INF or m == -INF) and 0 or m
    end
    local function logsumexp(line)
      local m = shift_of(line)
      if m ~= m then return NAN end
      local total = 0
      for _, v in ipairs(line) do total = total + math.exp(v - m) end
      return math.log(total) + m
    end
    local rows, cols = 6, 50
    for _, dtype in ipairs{"float32", "float64", "int32"} do
      local rtol = dtype == "float32" and 1e-5 or 1e-12
      local a, values = R.generate(rows * cols, dtype, function(i)
        local r = (i - 1) // cols + 1
        if dtype == "int32" then return math.random(-20, 20) end
        if r == 2 then return 80 + math.random() * 20 end            -- exp past float32's range
        if r == 3 then return -INF end
        if r == 4 and i % cols == 7 then return NAN end
        return math.random() * 20 - 10
      end)
      local m = R.reshaped(a, {rows, cols})
      local at = flat_at(values, {rows, cols})
      local out_dtype = dtype == "int32" and "float64" or dtype
      local whole = gpu.gpuarray.logsumexp(m)
      assert.are.equal(out_dtype, whole.dtype)
      close(logsumexp(values), R.value(whole), rtol, dtype .. " logsumexp of all")
      for axis = 1, 2 do
        local want = along({rows, cols}, at, axis, logsumexp)
        local got = R.get(gpu.gpuarray.logsumexp(m, {axis = axis}))
        for k = 1, #want do close(want[k], got[k], rtol, ("%s logsumexp along %d at %d"):format(dtype, axis, k)) end
        -- softmax and log_softmax: each element against its line's logsumexp
        local soft = R.get(gpu.gpuarray.softmax(m, {axis = axis}))
        local log_soft = R.get(gpu.gpuarray.log_softmax(m, {axis = axis}))
        for r = 1, rows do
          for c = 1, cols do
            local line = axis == 2 and r or c
            local lse = want[line]
            local v = values[(r - 1) * cols + c]
            local i = (r - 1) * cols + c
            local what = ("%s along %d at (%d, %d)"):format(dtype, axis, r, c)
            if lse == -INF then
              assert(soft[i] ~= soft[i], "softmax of a line of -inf only: NaN, " .. what)
            else
              close(math.exp(v - lse), soft[i], rtol, "softmax " .. what)
              close(v - lse, log_soft[i], rtol, "log_softmax " .. what)
            end
          end
        end
      end
      a:free()
    end
    -- whole-array softmax sums to 1; empty arrays
    local v = R.to_gpu({1, 2, 3, 4}, "float64")
    assert.is_true(math.abs(gpu.gpuarray.softmax(v):sum() - 1) < 1e-15)
    assert.are.equal(-INF, R.value(gpu.gpuarray.logsumexp(gpu.gpuarray.zeros({0}, "float32"))))
    assert.are.same({3}, gpu.gpuarray.logsumexp(gpu.gpuarray.zeros({3, 0}, "float32"), {axis = 2}).shape)
    assert.are.same({2, 0}, gpu.gpuarray.softmax(gpu.gpuarray.zeros({2, 0}, "float32")).shape)
    helpers.assert_error("bad argument #1 to 'softmax' (softmax is not defined for complex arrays)",
                         gpu.gpuarray.softmax, gpu.gpuarray.zeros({2}, "complex64"))
    helpers.assert_error("bad argument #2 to 'logsumexp' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.logsumexp, v, {axis = 2})
    helpers.assert_error("bad argument #2 to 'log_softmax' (unknown option 'dim')", gpu.gpuarray.log_softmax, v, {dim = 1})
    v:free()
    helpers.assert_error("bad argument #1 to 'logsumexp' (array has been freed)", gpu.gpuarray.logsumexp, v)
  end)

  helpers.gpu_it("argmax and argmin refuse bad axes, complex arrays and zero-length axes", function()
    local m = R.to_gpu({1, 2, 3, 4, 5, 6}, "float32")
    local m2 = R.reshaped(m, {2, 3})
    helpers.assert_error("bad argument #2 to 'argmax' (axis 3 is out of range for a 2-d array)",
                         m2.argmax, m2, {axis = 3})
    helpers.assert_error("bad argument #2 to 'argmin' (axis -3 is out of range for a 2-d array)",
                         gpu.gpuarray.argmin, m2, {axis = -3})
    helpers.assert_error("bad argument #2 to 'argmin' (option 'axis' must be an integer, got float)",
                         m2.argmin, m2, {axis = 1.0})
    helpers.assert_error("bad argument #2 to 'argmax' (option 'stream' must be a gpu.Stream, got number)",
                         m2.argmax, m2, {axis = 1, stream = 1})
    helpers.assert_error("bad argument #1 to 'argmax' (argmax is not defined for complex arrays "
                         .. "(complex64 has no order))", gpu.gpuarray.argmax,
                         R.to_gpu({1, 2}, "complex64"), {axis = 1})
    local e = core.array_empty({3, 0}, "int32")
    helpers.assert_error("bad argument #1 to 'argmax' (attempt to get argmax of an empty sequence "
                         .. "(axis 2 has length 0))", e.argmax, e, {axis = 2})
    helpers.assert_error("bad argument #1 to 'argmin' (attempt to get argmin of an empty sequence "
                         .. "(axis -1 has length 0))", gpu.gpuarray.argmin, e, {axis = -1})
  end)

  -- NumPy's var of a list of values as stored: the mean, then the squared deviations' sum
  -- over max(n - ddof, 0), in double precision.
  local function parts(v)
    if type(v) == "boolean" then return v and 1 or 0, 0 end
    if type(v) == "table" then return v.re, v.im end
    return v, 0
  end
  local function var_reference(line, ddof)
    local n, re, im = #line, 0, 0
    for _, v in ipairs(line) do
      local r, i = parts(v)
      re, im = re + r, im + i
    end
    re, im = re / n, im / n
    local squares = 0
    for _, v in ipairs(line) do
      local r, i = parts(v)
      squares = squares + (r - re) ^ 2 + (i - im) ^ 2
    end
    return squares / math.max(n - ddof, 0)
  end

  -- relative tolerances; the 16-bit floats' results are rounded to 16 bits
  local var_rtol = {int32 = 1e-12, float64 = 1e-12, float32 = 1e-5, complex64 = 1e-5,
                    float16 = 2 ^ -10, bfloat16 = 2 ^ -7}
  local function var_value(dtype)
    if dtype == "int32" then return math.random(-100000, 100000) end
    if dtype == "float16" or dtype == "bfloat16" then return R.random_value(dtype) end
    if dtype == "complex64" then return gpu.complex(math.random() * 2 - 1, math.random() * 2 - 1) end
    return 10 + math.random() * 2 - 1   -- off zero: one pass (E[x^2] - E[x]^2) would cancel here
  end

  helpers.gpu_it("var and std, whole and along each axis, against a two-pass reference", function()
    for _, dtype in ipairs{"int32", "float32", "float64", "float16", "bfloat16", "complex64"} do
      local rtol, out_dtype = var_rtol[dtype], reduction.var_dtype(dtype)
      for _, t in ipairs(test_arrays(dtype, function() return var_value(dtype) end)) do
        local a, shape, at, name = t[1], t[2], t[3], t[4]
        local all = {}
        each_index(shape, function(index) all[#all + 1] = at(index) end)
        for _, ddof in ipairs{0, 1} do
          local what = ("%s %s, ddof %d"):format(name, dtype, ddof)
          local want = var_reference(all, ddof)
          local v = a:var({ddof = ddof})
          assert.are.equal("float", math.type(v), what)
          helpers.assert_close(want, v, rtol, "var of " .. what)
          helpers.assert_close(math.sqrt(want), a:std({ddof = ddof}), rtol, "std of " .. what)
          local on_device = gpu.gpuarray.std(a, {ddof = ddof})
          assert.are.equal(out_dtype, on_device.dtype)
          assert.are.same({}, on_device.shape)
          helpers.assert_close(math.sqrt(want), R.value(on_device), rtol, "gpuarray.std of " .. what)
          for axis = 1, #shape do
            local ref, kept = along(shape, at, axis, function(line) return var_reference(line, ddof) end)
            for _, op in ipairs{"var", "std"} do
              local out = (axis % 2 == 0) and gpu.gpuarray[op](a, {axis = axis, ddof = ddof})
                                           or a[op](a, {axis = axis, ddof = ddof})
              assert.are.equal(out_dtype, out.dtype)
              assert.are.same(kept, out.shape)
              local got = R.get(out)
              for i = 1, #ref do
                local expected = op == "std" and math.sqrt(ref[i]) or ref[i]
                helpers.assert_close(expected, got[i], rtol, ("%s along axis %d of %s, output %d")
                                                             :format(op, axis, what, i))
              end
            end
          end
        end
      end
    end
  end)

  -- nanvar and nanstd: var_reference over each line's numbers, NaN where fewer than ddof + 1
  -- are left (lines of 3 along the first axis of the 3-d array meet that now and then)
  helpers.gpu_it("nanvar and nanstd skip NaNs, whole and along each axis", function()
    local function is_nan(v)
      if type(v) == "table" then return v.re ~= v.re or v.im ~= v.im end
      return v ~= v
    end
    local function nan_var_reference(line, ddof)
      local kept = {}
      for _, v in ipairs(line) do if not is_nan(v) then kept[#kept + 1] = v end end
      if #kept - ddof <= 0 then return 0 / 0 end
      return var_reference(kept, ddof)
    end
    local function close(want, got, rtol, what)
      if want ~= want then assert(got ~= got, ("%s: got %s, expected nan"):format(what, tostring(got)))
      else helpers.assert_close(want, got, rtol, what) end
    end
    local s = gpu.Stream()
    for _, dtype in ipairs{"int32", "float32", "float64", "float16", "complex64"} do
      local rtol, out_dtype = var_rtol[dtype], reduction.var_dtype(dtype)
      local float = dtype ~= "int32"
      for _, t in ipairs(test_arrays(dtype, function()
        if float and math.random() < 0.25 then
          return dtype == "complex64" and gpu.complex(math.random() < 0.5 and 0 / 0 or 1, 0 / 0) or 0 / 0
        end
        return var_value(dtype)
      end)) do
        local a, shape, at, name = t[1], t[2], t[3], t[4]
        local all = {}
        each_index(shape, function(index) all[#all + 1] = at(index) end)
        for _, ddof in ipairs{0, 1} do
          local what = ("%s %s, ddof %d"):format(name, dtype, ddof)
          local want = nan_var_reference(all, ddof)
          local v = gpu.gpuarray.nanvar(a, {ddof = ddof})
          assert.are.equal(out_dtype, v.dtype)
          assert.are.same({}, v.shape)
          close(want, R.value(v), rtol, "nanvar of " .. what)
          local sd = gpu.gpuarray.nanstd(a, {ddof = ddof, stream = s})
          s:synchronize()
          close(math.sqrt(want), R.value(sd), rtol, "nanstd of " .. what)
          for axis = 1, #shape do
            local ref, kept = along(shape, at, axis, function(line) return nan_var_reference(line, ddof) end)
            for _, op in ipairs{"nanvar", "nanstd"} do
              local out = gpu.gpuarray[op](a, {axis = axis, ddof = ddof})
              assert.are.equal(out_dtype, out.dtype)
              assert.are.same(kept, out.shape)
              local got = R.get(out)
              for i = 1, #ref do
                local expected = op == "nanstd" and math.sqrt(ref[i]) or ref[i]
                close(expected, got[i], rtol, ("%s along axis %d of %s, output %d"):format(op, axis, what, i))
              end
            end
          end
        end
      end
    end
    helpers.assert_error("bad argument #2 to 'nanstd' (option 'ddof' must not be negative, got -1)",
                         gpu.gpuarray.nanstd, gpu.gpuarray.zeros({2}, "float32"), {ddof = -1})
    helpers.assert_error("bad argument #2 to 'nanvar' (unknown option 'dim')",
                         gpu.gpuarray.nanvar, gpu.gpuarray.zeros({2}, "float32"), {dim = 1})
  end)

  -- A whole array's deviations are summed as they are made, 16 bytes at a time where the
  -- array is contiguous and aligned (the mean read once a thread), else element by element.
  helpers.gpu_it("var of a whole array over many blocks, with a tail, from an unaligned start", function()
    for _, dtype in ipairs{"float32", "float64", "float16", "int32"} do
      local n = 300000 + math.random(0, 15)
      local a, values = R.generate(n, dtype, function() return var_value(dtype) end)
      local rtol = math.max(var_rtol[dtype], 1e-10)
      helpers.assert_close(var_reference(values, 0), a:var(), rtol, "var of " .. n .. " " .. dtype)
      local itemsize = core.dtype(dtype).itemsize
      local tail = core.array_view(a, itemsize, dtype, {n - 1})     -- one element in: unaligned
      helpers.assert_close(var_reference(table.move(values, 2, n, 1, {}), 1), tail:var({ddof = 1}),
                           rtol, "var from the second element of " .. dtype)
    end
  end)

  helpers.gpu_it("var and std: negative axes, streams, ddof past n, empty arrays", function()
    local a, values = R.generate(2 * 50, "float64", function() return math.random() end)
    local m = R.reshaped(a, {2, 50})
    local rows = along({2, 50}, flat_at(values, {2, 50}), 2, function(line) return var_reference(line, 0) end)
    local last = R.get(m:var({axis = -1}))
    for i = 1, 2 do helpers.assert_close(rows[i], last[i], 1e-12, "var along axis -1") end
    local stream = gpu.Stream()
    local s = gpu.gpuarray.var(m, {stream = stream, ddof = 1})
    stream:synchronize()
    helpers.assert_close(var_reference(values, 1), R.value(s), 1e-12, "var on a stream")
    helpers.assert_close(math.sqrt(var_reference(values, 0)), m:std({stream = stream}), 1e-12, "std on a stream")
    -- n - ddof <= 0 divides by 0, as NumPy does: inf, or nan where every deviation is 0
    local small = R.to_gpu({1, 2, 3}, "float64")
    assert.are.equal(math.huge, small:var({ddof = 3}))
    assert.are.equal(math.huge, small:std({ddof = 7}))
    local same = R.to_gpu({2, 2}, "int32")
    local nan = same:var({ddof = 2})
    assert.is_true(nan ~= nan)
    -- empty: nan, as mean gives; a zero-length axis gives nans, an empty kept shape nothing
    local empty = core.array_empty(0, "float32")
    local mean, var = empty:mean(), empty:var()
    assert.is_true(mean ~= mean and var ~= var)
    local e = core.array_empty({4, 0}, "float64")
    local per_row = R.get(gpu.gpuarray.std(e, {axis = 2}))
    assert.are.equal(4, per_row.size)
    for i = 1, 4 do assert.is_true(per_row[i] ~= per_row[i]) end
    assert.are.same({0}, e:var({axis = 1}).shape)
  end)

  helpers.gpu_it("var and std refuse bad arguments with clear messages", function()
    local a = R.to_gpu({1, 2, 3, 4}, "float32")
    local m = R.reshaped(a, {2, 2})
    helpers.assert_error("bad argument #1 to 'var' (GPUArray expected, got number)", gpu.gpuarray.var, 3)
    helpers.assert_error("bad argument #2 to 'var' (option 'ddof' must be an integer, got float)",
                         m.var, m, {ddof = 1.5})
    helpers.assert_error("bad argument #2 to 'std' (option 'ddof' must be an integer, got string)",
                         gpu.gpuarray.std, m, {ddof = "1"})
    helpers.assert_error("bad argument #2 to 'std' (option 'ddof' must not be negative, got -1)",
                         m.std, m, {ddof = -1})
    helpers.assert_error("bad argument #2 to 'var' (unknown option 'axes')", m.var, m, {axes = 1})
    helpers.assert_error("bad argument #2 to 'var' (options table expected, got number)", m.var, m, 1)
    helpers.assert_error("bad argument #2 to 'std' (axis 3 is out of range for a 2-d array)",
                         m.std, m, {axis = 3})
    helpers.assert_error("bad argument #2 to 'var' (option 'axis' must be an integer, got string)",
                         gpu.gpuarray.var, m, {axis = "1"})
    helpers.assert_error("bad argument #2 to 'var' (option 'stream' must be a gpu.Stream, got table)",
                         m.var, m, {stream = {}})
    a:free()
    helpers.assert_error("bad argument #1 to 'std' (array has been freed)", gpu.gpuarray.std, a)
  end)

  -- The nan-reductions against references that skip NaNs: elements +-1, +-2 and +-0.5 (sums
  -- and products exact in a float accumulator, so the device's result is the exact one
  -- rounded once to the dtype, as the reference rounds it), a fifth NaN, one row and one
  -- column all NaN.
  local NAN = 0 / 0
  local function round(dtype, x) return gpu[dtype](x).value end
  local function skip_nan(reduce)
    return function(line)
      local kept = {}
      for _, v in ipairs(line) do if v == v then kept[#kept + 1] = v end end
      return reduce(kept)
    end
  end
  local function references(dtype)
    local function fold(f, start) return function(kept)
      local acc = start
      for _, v in ipairs(kept) do acc = f(acc, v) end
      return acc
    end end
    local sum, prod = fold(function(x, y) return x + y end, 0), fold(function(x, y) return x * y end, 1)
    return {
      nansum = skip_nan(function(kept) return round(dtype, sum(kept)) end),
      nanprod = skip_nan(function(kept) return round(dtype, prod(kept)) end),
      nanmax = skip_nan(function(kept) return #kept == 0 and NAN or math.max(table.unpack(kept)) end),
      nanmin = skip_nan(function(kept) return #kept == 0 and NAN or math.min(table.unpack(kept)) end),
      nanmean = skip_nan(function(kept) return round(dtype, round(dtype, sum(kept)) / #kept) end),
    }
  end
  local function same(x, y) return x == y or (x ~= x and y ~= y) end

  helpers.gpu_it("nansum, nanprod, nanmax, nanmin and nanmean skip NaNs, whole and along each axis", function()
    local rows, cols = 37, 53
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "float64", "float16"} do
      local a, values = R.generate(rows * cols, dtype, function(i)
        local r, c = (i - 1) // cols + 1, (i - 1) % cols + 1
        if r == 3 or c == 5 or math.random() < 0.2 then return NAN end
        local magnitude = ({1, 1, 1, 2, 0.5})[math.random(5)]
        return math.random() < 0.5 and -magnitude or magnitude
      end)
      local m = R.reshaped(a, {rows, cols})
      local at = flat_at(values, {rows, cols})
      for op, reference in pairs(references(dtype)) do
        local got = gpu.gpuarray[op](m)
        assert.are.same({}, got.shape)
        assert.are.equal(dtype, got.dtype)
        -- the whole array's product runs past float16's range: inf, as the reference rounds it
        local want = reference(values)
        assert(same(want, R.value(got)), ("%s of %s: got %s, expected %s"):format(op, dtype, R.value(got), want))
        for axis = 1, 2 do
          for _, form in ipairs{"plain", "transposed"} do
            local result
            if form == "plain" then result = gpu.gpuarray[op](m, {axis = axis})
            else   -- the transpose's other axis, on a stream: the same lines
              result = gpu.gpuarray[op](m:transpose(), {axis = 3 - axis, stream = s})
              s:synchronize()
            end
            local expect = along({rows, cols}, at, axis, reference)
            local h = R.get(result)
            assert.are.equal(#expect, h.size)
            for k = 1, #expect do
              if not same(expect[k], h[k]) then
                error(("%s of %s along %d (%s) at %d: got %s, expected %s"):format(op, dtype, axis,
                      form, k, h[k], expect[k]))
              end
            end
          end
        end
      end
      a:free()
    end
    -- past one block: nanmean's (sum, count) pairs meet across blocks
    for _, dtype in ipairs{"float32", "float64"} do
      local a, values = R.generate(300001, dtype, function()
        return math.random() < 0.3 and NAN or ({-1, 1, 2, 0.5})[math.random(4)]
      end)
      local want = references(dtype).nanmean(values)
      assert.are.equal(want, R.value(gpu.gpuarray.nanmean(a)))
      a:free()
    end
  end)

  helpers.gpu_it("nan-reductions of complex values, integers and arrays all NaN", function()
    local C = gpu.complex
    local z = gpu.to_gpu(gpu.host.from_table({C(1, 1), C(NAN, 0), C(2, -1), C(0, NAN)}, "complex64"))
    local function close(want, got)
      assert((want - got):abs() < 1e-6, ("expected %s, got %s"):format(tostring(want), tostring(got)))
    end
    close(C(3, 0), R.value(gpu.gpuarray.nansum(z)))
    close(C(3, 1), R.value(gpu.gpuarray.nanprod(z)))
    close(C(1.5, 0), R.value(gpu.gpuarray.nanmean(z)))
    assert.are.equal("complex64", gpu.gpuarray.nanmean(z).dtype)
    -- integers hold no NaN: the plain reductions, their dtypes
    local ints, iv = R.generate(1000, "int32", function() return math.random(-1e6, 1e6) end)
    local total, high = 0, iv[1]
    for i = 1, 1000 do total, high = total + iv[i], math.max(high, iv[i]) end
    assert.are.equal(total, R.value(gpu.gpuarray.nansum(ints)))
    assert.are.equal("int64", gpu.gpuarray.nansum(ints).dtype)
    assert.are.equal(high, R.value(gpu.gpuarray.nanmax(ints)))
    assert.are.equal(total / 1000, R.value(gpu.gpuarray.nanmean(ints)))
    -- all NaN: no number to return but NaN, and the neutral elements for sums and products
    local nans = R.to_gpu({NAN, NAN, NAN}, "float64")
    assert.is_true(R.value(gpu.gpuarray.nanmax(nans)) ~= R.value(gpu.gpuarray.nanmax(nans)))
    assert.is_true(R.value(gpu.gpuarray.nanmean(nans)) ~= R.value(gpu.gpuarray.nanmean(nans)))
    assert.are.equal(0, R.value(gpu.gpuarray.nansum(nans)))
    assert.are.equal(1, R.value(gpu.gpuarray.nanprod(nans)))
  end)

  -- quantile, percentile and median against NumPy's linear interpolation done in Lua, each
  -- operation rounded as NumPy's (and the device's elementwise operations) round it: in a
  -- float array's own dtype with the fraction rounded to it too (NumPy's gamma), in float64
  -- for integers; median's mean in float32 for float16, as NumPy's mean.
  local function identity(x) return x end
  local function f32(x) return gpu.float32(x).value end
  local function f16(x) return gpu.float16(x).value end
  local function roundings(dtype, mean)
    if dtype == "float16" then return mean and f32 or f16, f16 end
    if dtype == "float32" then return f32, f32 end
    return identity, identity
  end
  -- line's values sorted, or nil where one is NaN
  local function sorted_numbers(line)
    local sorted = {}
    for _, v in ipairs(line) do
      if v ~= v then return nil end
      sorted[#sorted + 1] = v
    end
    table.sort(sorted)
    return sorted
  end
  local function quantile_reference(dtype, q)
    local work, out = roundings(dtype)
    return function(line)
      local sorted = sorted_numbers(line)
      if not sorted then return NAN end
      local n = #sorted
      local position = q * (n - 1)
      local below = math.floor(position)
      local t = work(position - below)
      local low = sorted[below + 1]
      if position == below then return out(low) end
      local high = sorted[math.min(below + 2, n)]
      local diff = work(high - low)
      if t < 0.5 then return out(work(low + work(diff * t))) end
      return out(work(high - work(diff * (1 - t))))
    end
  end
  local function median_reference(dtype)
    local work, out = roundings(dtype, true)
    return function(line)
      local sorted = sorted_numbers(line)
      if not sorted then return NAN end
      local n = #sorted
      if n % 2 == 1 then return out(sorted[(n + 1) // 2]) end
      return out(work(work(sorted[n // 2] + sorted[n // 2 + 1]) * 0.5))
    end
  end

  -- got's elements against the list want, NaN matching NaN
  local function check(what, want, got)
    local h = R.get(got)
    assert.are.equal(#want, h.size, what)
    for k = 1, #want do
      if not same(want[k], h[k]) then
        error(("%s at %d: got %.17g, expected %.17g"):format(what, k, h[k], want[k]))
      end
    end
  end

  helpers.gpu_it("quantile, percentile and median follow NumPy's linear interpolation", function()
    local rows, cols = 9, 40               -- odd lines down the columns, even ones along rows
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "float64", "float16", "int32"} do
      for _, with_nan in ipairs{false, true} do
        if not (with_nan and dtype == "int32") then
          local a, values = R.generate(rows * cols, dtype, function(i)
            if with_nan and i % 97 == 0 then return NAN end
            return dtype == "int32" and math.random(-1000, 1000) or math.random() * 2 - 1
          end)
          local m = R.reshaped(a, {rows, cols})
          local at = flat_at(values, {rows, cols})
          local out_dtype = dtype == "int32" and "float64" or dtype
          for _, q in ipairs{0, 0.25, 0.5, 0.7, 1, 1 / 3} do
            local reference = quantile_reference(dtype, q)
            local whole = gpu.gpuarray.quantile(m, q)
            assert.are.equal(out_dtype, whole.dtype)
            check(("%s quantile %g of all"):format(dtype, q), {reference(values)}, whole)
            for axis = 1, 2 do
              check(("%s quantile %g along %d"):format(dtype, q, axis),
                    (along({rows, cols}, at, axis, reference)), gpu.gpuarray.quantile(m, q, {axis = axis}))
            end
          end
          check(dtype .. " percentile 70 along 1", (along({rows, cols}, at, 1, quantile_reference(dtype, 0.7))),
                gpu.gpuarray.percentile(m, 70, {axis = 1}))
          -- a list of q: one result a q, stacked in front
          local both = gpu.gpuarray.quantile(m, {0.1, 0.9}, {axis = 2})
          assert.are.same({2, rows}, both.shape)
          local want = along({rows, cols}, at, 2, quantile_reference(dtype, 0.1))
          for k, v in ipairs((along({rows, cols}, at, 2, quantile_reference(dtype, 0.9)))) do
            want[rows + k] = v
          end
          check(dtype .. " quantiles {0.1, 0.9} along 2", want, both)
          local median = median_reference(dtype)
          check(dtype .. " median of all", {median(values)}, gpu.gpuarray.median(m))
          for axis = 1, 2 do
            check(("%s median along %d"):format(dtype, axis), (along({rows, cols}, at, axis, median)),
                  m:median({axis = axis}))
          end
          -- a transposed view on a stream: the same lines
          local t = gpu.gpuarray.median(m:transpose(), {axis = 2, stream = s})
          s:synchronize()
          check(dtype .. " median of the transpose", (along({rows, cols}, at, 1, median)), t)
          a:free()
        end
      end
    end
  end)

  -- Whole arrays past 4096 elements select the places they read (gpu.sort.select) instead of
  -- sorting: odd and even lengths, NaN or none, views, lists of q past one selection's 8 places.
  helpers.gpu_it("quantile and median of whole arrays select their places", function()
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "float64", "float16", "int32", "int8", "uint64"} do
      local float = dtype:match("float") ~= nil
      for _, n in ipairs{5001, 6000} do
        for _, with_nan in ipairs(float and {false, true} or {false}) do
          local a, values = R.generate(n, dtype, function(i)
            if with_nan and i == n // 3 then return NAN end
            if not float then return math.random(dtype == "int32" and -100000 or 0, 100) end
            return (math.random() * 2 - 1) * 2.0 ^ math.random(-3, 3)
          end)
          local what = ("%s[%d]%s"):format(dtype, n, with_nan and " with a NaN" or "")
          local fractions = {0, 0.05, 0.25, 1 / 3, 0.5, 0.7, 0.75, 0.9, 0.999, 1}
          local want = {}
          for k, q in ipairs(fractions) do want[k] = quantile_reference(dtype, q)(values) end
          check(what .. " quantiles", want, gpu.gpuarray.quantile(a, fractions))
          check(what .. " quantile 0.3", {quantile_reference(dtype, 0.3)(values)}, gpu.gpuarray.quantile(a, 0.3))
          check(what .. " percentile 12.5", {quantile_reference(dtype, 0.125)(values)},
                gpu.gpuarray.percentile(a, 12.5))
          check(what .. " median", {median_reference(dtype)(values)}, gpu.gpuarray.median(a))
          -- a transposed view (copied before the selection), on a stream: the same elements
          local t = R.reshaped(a, {n // 3 == n / 3 and 3 or 1, n // 3 == n / 3 and n // 3 or n}):transpose()
          local m = t:median({stream = s})
          s:synchronize()
          check(what .. " median of a transposed view", {median_reference(dtype)(values)}, m)
          a:free()
        end
      end
    end
  end)

  -- nanquantile, nanpercentile and nanmedian: the references over each line's numbers only,
  -- NaN for a line of NaNs (one row and one column here), integers as the plain forms
  helpers.gpu_it("nanquantile, nanpercentile and nanmedian skip NaNs, whole and along each axis", function()
    local rows, cols = 11, 30
    local s = gpu.Stream()
    local function skipping(reference)
      return function(line)
        local kept = {}
        for _, v in ipairs(line) do if v == v then kept[#kept + 1] = v end end
        if #kept == 0 then return NAN end
        return reference(kept)
      end
    end
    for _, dtype in ipairs{"float32", "float64", "float16", "int32"} do
      local float = dtype ~= "int32"
      local a, values = R.generate(rows * cols, dtype, function(i)
        local r, c = (i - 1) // cols + 1, (i - 1) % cols + 1
        if float and (r == 4 or c == 7 or math.random() < 0.3) then return NAN end
        return float and math.random() * 2 - 1 or math.random(-1000, 1000)
      end)
      local m = R.reshaped(a, {rows, cols})
      local at = flat_at(values, {rows, cols})
      local out_dtype = float and dtype or "float64"
      for _, q in ipairs{0, 0.3, 0.5, 1} do
        local reference = skipping(quantile_reference(dtype, q))
        local whole = gpu.gpuarray.nanquantile(m, q)
        assert.are.equal(out_dtype, whole.dtype)
        check(("%s nanquantile %g of all"):format(dtype, q), {reference(values)}, whole)
        for axis = 1, 2 do
          check(("%s nanquantile %g along %d"):format(dtype, q, axis),
                (along({rows, cols}, at, axis, reference)), gpu.gpuarray.nanquantile(m, q, {axis = axis}))
        end
      end
      check(dtype .. " nanpercentile 25 along 2", (along({rows, cols}, at, 2, skipping(quantile_reference(dtype, 0.25)))),
            gpu.gpuarray.nanpercentile(m, 25, {axis = 2}))
      local both = gpu.gpuarray.nanquantile(m:transpose(), {0.1, 0.9}, {axis = 1, stream = s})
      s:synchronize()
      assert.are.same({2, rows}, both.shape)
      local want = along({rows, cols}, at, 2, skipping(quantile_reference(dtype, 0.1)))
      for k, v in ipairs((along({rows, cols}, at, 2, skipping(quantile_reference(dtype, 0.9))))) do
        want[rows + k] = v
      end
      check(dtype .. " nanquantiles {0.1, 0.9} of the transpose along 1", want, both)
      local median = skipping(median_reference(dtype))
      check(dtype .. " nanmedian of all", {median(values)}, gpu.gpuarray.nanmedian(m))
      for axis = 1, 2 do
        check(("%s nanmedian along %d"):format(dtype, axis), (along({rows, cols}, at, axis, median)),
              gpu.gpuarray.nanmedian(m, {axis = axis}))
      end
      a:free()
    end
    -- a whole array past a selection's threshold is sorted when NaNs are skipped
    local big, big_values = R.generate(6001, "float32", function(i)
      return i % 5 == 0 and NAN or math.random() * 2 - 1
    end)
    check("float32[6001] nanmedian", {skipping(median_reference("float32"))(big_values)},
          gpu.gpuarray.nanmedian(big))
    check("float32[6001] nanquantile 0.37", {skipping(quantile_reference("float32", 0.37))(big_values)},
          gpu.gpuarray.nanquantile(big, 0.37))
    big:free()
    helpers.assert_error("bad argument #1 to 'nanmedian' (nanmedian is not defined for complex arrays (complex64 has no order))",
                         gpu.gpuarray.nanmedian, gpu.gpuarray.zeros({2}, "complex64"))
    helpers.assert_error("bad argument #2 to 'nanpercentile' (q must be a number from 0 to 100, got 101)",
                         gpu.gpuarray.nanpercentile, gpu.gpuarray.zeros({2}, "float32"), 101)
  end)

  helpers.gpu_it("quantile, percentile and median refuse bad arguments with clear messages", function()
    local a = R.to_gpu({1, 2, 3, 4}, "float32")
    helpers.assert_error("bad argument #2 to 'quantile' (q must be a number from 0 to 1, got 1.5)",
                         gpu.gpuarray.quantile, a, 1.5)
    helpers.assert_error("bad argument #2 to 'percentile' (q must be a number from 0 to 100, got x)",
                         gpu.gpuarray.percentile, a, {10, "x"})
    helpers.assert_error("bad argument #2 to 'quantile' (q is an empty list)", gpu.gpuarray.quantile, a, {})
    helpers.assert_error("bad argument #3 to 'quantile' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.quantile, a, 0.5, {axis = 2})
    helpers.assert_error("bad argument #2 to 'median' (unknown option 'axes')", a.median, a, {axes = 1})
    helpers.assert_error("bad argument #1 to 'median' (cannot take the median of an empty axis)",
                         gpu.gpuarray.median, gpu.gpuarray.zeros({3, 0}, "float32"), {axis = 2})
    helpers.assert_error("bad argument #1 to 'median' (median is not defined for complex arrays (complex64 has no order))",
                         gpu.gpuarray.median, gpu.gpuarray.zeros(2, "complex64"))
    a:free()
    helpers.assert_error("bad argument #1 to 'median' (array has been freed)", a.median, a)
    helpers.assert_error("bad argument #1 to 'percentile' (array has been freed)", gpu.gpuarray.percentile, a, 5)
  end)

  helpers.gpu_it("nan-reductions refuse bad arguments with clear messages", function()
    local a = R.to_gpu({1, 2, 3, 4}, "float32")
    helpers.assert_error("bad argument #1 to 'nansum' (GPUArray expected, got number)", gpu.gpuarray.nansum, 3)
    helpers.assert_error("bad argument #2 to 'nanmean' (unknown option 'axes')", gpu.gpuarray.nanmean, a, {axes = 1})
    helpers.assert_error("bad argument #2 to 'nanmax' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.nanmax, a, {axis = 2})
    helpers.assert_error("bad argument #1 to 'nanmax' (zero-size array to reduction operation fmax which has no identity)",
                         gpu.gpuarray.nanmax, gpu.gpuarray.zeros(0, "float32"))
    helpers.assert_error("bad argument #1 to 'nanmin' (nanmin is not defined for complex arrays (complex64 has no order))",
                         gpu.gpuarray.nanmin, gpu.gpuarray.zeros(2, "complex64"))
    a:free()
    for _, op in ipairs{"nansum", "nanprod", "nanmax", "nanmin", "nanmean"} do
      helpers.assert_error(("bad argument #1 to '%s' (array has been freed)"):format(op), gpu.gpuarray[op], a)
    end
  end)
end)
