-- Reductions: sum, prod, min, max, mean, any, all, dot; whole arrays and along an axis.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local core = require "gpu.core"
local reduction = require "gpu.reduction"

local float_rtol = {float16 = 2 ^ -10, bfloat16 = 2 ^ -7, float32 = 2 ^ -20, float64 = 2 ^ -40}  -- the Lua reference sums in order, so it rounds too

local function is_float(dtype) return float_rtol[dtype] ~= nil end

-- Reference sum, abs-sum, product (wrapping like int64 for integers), min and max.
local function reference(values, dtype)
  local float = is_float(dtype)
  local sum, abs, prod = float and 0.0 or 0, 0.0, float and 1.0 or 1
  local min, max
  for _, v in ipairs(values) do
    if dtype == "bool" then v = v and 1 or 0 end
    sum = sum + v
    abs = abs + math.abs(v)
    prod = prod * v
    if min == nil or v < min then min = v end
    if max == nil or v > max then max = v end
  end
  if dtype == "bool" then min, max = min == 1, max == 1 end
  return {sum = sum, abs = abs, prod = prod, min = min, max = max}
end

local function check_sum(expected, abs, got, dtype, what)
  if is_float(dtype) then
    local tol = float_rtol[dtype] * (abs + math.abs(expected)) + 1e-300
    assert(math.abs(got - expected) <= tol, ("%s: expected %.17g, got %.17g (tolerance %.3g)")
      :format(what, expected, got, tol))
  else
    assert.are.equal(expected, got, what)
    assert.are.equal("integer", math.type(got), what)
  end
end

-- Values whose sums are exact in any order: multiples of 1/64 for floats, small integers.
local function exact_value(dtype)
  if dtype == "bool" then return math.random() < 0.5 end
  if dtype:match("float") then return math.random(-64, 64) / 64 end
  return math.random(dtype:match("^u") and 0 or -100, 100)
end

-- The dtypes the kernel-choice tests cover: each size of element, floats and integers.
local EXACT_DTYPES = {"float32", "float64", "float16", "int8", "uint16", "int32", "bool"}

local function as_number(v) return v == true and 1 or v == false and 0 or v end

-- Integer v wrapped to dtype's width, as an integer dot's result wraps (as in NumPy).
local function wrapped(v, dtype)
  local bits = tonumber(dtype:match("%d+"))
  if bits == 64 then return v end
  v = v & ((1 << bits) - 1)
  if dtype:match("^int") and v >= 1 << (bits - 1) then v = v - (1 << bits) end
  return v
end

-- Checks output i of a reduction along an axis (results.sums, maxes, argmins and anys, and
-- means where given) against the count elements at(1), ..., at(count) of its axis, values
-- from exact_value (sums exact but for float16's rounding).
local function check_exact_line(dtype, results, i, count, at, what)
  local sum, best, best_j, max, any = 0, nil, nil, nil, false
  for j = 1, count do
    local v = as_number(at(j))
    sum = sum + v
    if best == nil or v < best then best, best_j = v, j end
    if max == nil or v > max then max = v end
    any = any or v ~= 0
  end
  if dtype == "float16" then
    helpers.assert_close(sum, results.sums[i], 2 ^ -10, what .. ": sum")
  else
    assert.are.equal(sum, results.sums[i], what .. ": sum")
  end
  assert.are.equal(max, as_number(results.maxes[i]), what .. ": max")
  assert.are.equal(best_j, results.argmins[i], what .. ": argmin (the first least)")
  assert.are.equal(any, results.anys[i], what .. ": any")
  if results.means then helpers.assert_close(sum / count, results.means[i], 2 ^ -22, what .. ": mean") end
end

-- Records, until the test ends, the kernels the library asks gpu.kernel_cache for; the
-- function returned gives the set of names (each key's last part) asked for since its last
-- call.
local function record_kernels()
  local kernel_cache = require "gpu.kernel_cache"
  local get, used = kernel_cache.get, {}
  kernel_cache.get = function(key, build)
    used[key:match("|([%w_]+)$")] = true
    return get(key, build)
  end
  finally(function() kernel_cache.get = get end)
  return function()
    local names = used
    used = {}
    return names
  end
end

describe("reductions", function()
  describe("result dtypes", function()
    it("follow NumPy for sum, prod and mean", function()
      local sum = {bool = "int64", int8 = "int64", uint8 = "uint64", int16 = "int64",
                   uint16 = "uint64", int32 = "int64", uint32 = "uint64", int64 = "int64",
                   uint64 = "uint64", float16 = "float16", bfloat16 = "bfloat16",
                   float32 = "float32", float64 = "float64"}
      for dtype, want in pairs(sum) do
        assert.are.equal(want, reduction.sum_dtype(dtype), dtype)
        assert.are.equal(want, reduction.ops.prod(dtype).out, dtype)
        assert.are.equal(is_float(dtype) and dtype or "float64", reduction.mean_dtype(dtype), dtype)
        assert.are.equal(dtype, reduction.ops.min(dtype).out, dtype)
        assert.are.equal(dtype, reduction.ops.max(dtype).out, dtype)
        assert.are.equal("bool", reduction.ops.any(dtype).out, dtype)
      end
    end)

    it("promote like NumPy for dot", function()
      local cases = {
        {"int32", "uint32", "int64"}, {"uint64", "int8", "float64"}, {"int16", "float16", "float32"},
        {"int8", "float16", "float16"}, {"bool", "uint16", "uint16"}, {"int64", "float32", "float64"},
        {"float32", "float64", "float64"}, {"uint8", "int8", "int16"}, {"uint16", "int32", "int32"},
        {"int8", "int64", "int64"}, {"bool", "bool", "bool"}, {"float16", "bfloat16", "float32"},
        {"uint8", "uint32", "uint32"}, {"int16", "float32", "float32"},
      }
      for _, c in ipairs(cases) do
        assert.are.equal(c[3], reduction.promote(c[1], c[2]), c[1] .. " with " .. c[2])
        assert.are.equal(c[3], reduction.promote(c[2], c[1]), c[2] .. " with " .. c[1])
        assert.are.equal(c[3], reduction.ops.dot(c[1], c[2]).out)
      end
    end)
  end)

  describe("kernels compile with NVRTC", function()
    it("for every operation and dtype (PTX), and to sm_90 cubins for a sample", function()
      for _, dtype in ipairs(R.all_dtypes) do
        for _, op in ipairs{"sum", "prod", "min", "max", "mean", "any", "all"} do
          local ok, err = pcall(gpu.compile, reduction.builtin_source(op, dtype),
                                {arch = "compute_90", target = "ptx", no_extern_c = true})
          assert(ok, ("%s of %s: %s"):format(op, dtype, tostring(err)))
        end
        local image = gpu.compile(reduction.builtin_source("sum", dtype), {arch = "sm_90", no_extern_c = true})
        assert.is_true(#image > 0)
      end
      for _, pair in ipairs{{"float32", "float32"}, {"float64", "float64"}, {"int32", "int32"},
                            {"float32", "float64"}, {"bool", "bool"}, {"int8", "uint64"},
                            {"float16", "float16"}, {"bfloat16", "float32"},
                            {"int8", "int8"}, {"uint8", "uint8"}} do   -- the last two by dp4a
        local image = gpu.compile(reduction.builtin_source("dot", pair[1], pair[2]),
                                  {arch = "sm_90", no_extern_c = true})
        assert.is_true(#image > 0, pair[1] .. " . " .. pair[2])
      end
      for _, op in ipairs{"min", "max", "mean", "any", "prod"} do
        local image = gpu.compile(reduction.builtin_source(op, "float32"), {arch = "sm_90", no_extern_c = true})
        assert.is_true(#image > 0)
      end
      -- argmax and argmin: whole-array and axis kernels in one module per operation and dtype
      for _, dtype in ipairs(R.all_dtypes) do
        for _, op in ipairs{"argmax", "argmin", "nanargmax", "nanargmin"} do
          local ok, err = pcall(gpu.compile, reduction.builtin_source(op, dtype),
                                {arch = "compute_90", target = "ptx", no_extern_c = true})
          assert(ok, ("%s of %s: %s"):format(op, dtype, tostring(err)))
        end
      end
      -- the nan-reductions (NaN checks where the dtype has NaN; nanmax and nanmin need an order)
      for _, dtype in ipairs{"float32", "float64", "float16", "bfloat16", "int8", "uint64", "bool",
                             "complex64", "complex128"} do
        local float = dtype:match("^float") or dtype:match("^bfloat") or dtype:match("^complex")
        for _, op in ipairs{"nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanvar_mean", "count_not_nan"} do
          if not (dtype:match("^complex") and (op == "nanmax" or op == "nanmin"))
             and (float or (op ~= "nanvar_mean" and op ~= "count_not_nan")) then
            local ok, err = pcall(gpu.compile, reduction.builtin_source(op, dtype),
                                  {arch = "compute_90", target = "ptx", no_extern_c = true})
            assert(ok, ("%s of %s: %s"):format(op, dtype, tostring(err)))
          end
        end
      end
      assert.truthy(reduction.builtin_source("nansum", "float32"):find("lg_nan_as(", 1, true))
      assert.falsy(reduction.builtin_source("nansum", "int32"):find("lg_nan_as(", 1, true))
      assert.truthy(reduction.builtin_source("nanmean", "float16"):find("lg_sum_count_of(", 1, true))
      assert.falsy(reduction.builtin_source("nanmean", "int32"):find("lg_sum_count_of(", 1, true))
      -- cubins, so that ptxas checks registers and shared memory: int8's argmin holds the most
      -- accumulators (16 pairs a thread across rows: gpu_reduce_columns_vec)
      for _, case in ipairs{{"argmax", "float16"}, {"argmin", "int8"}, {"prod", "uint8"}, {"nanmean", "float16"}} do
        local image = gpu.compile(reduction.builtin_source(case[1], case[2]), {arch = "sm_90", no_extern_c = true})
        assert.is_true(#image > 0, case[1] .. " of " .. case[2])
      end
    end)
  end)

  describe("argument checks", function()
    it("reject what is not an array", function()
      helpers.assert_error("bad argument #1 to 'sum' (GPUArray expected, got number)", gpu.gpuarray.sum, 5)
      helpers.assert_error("bad argument #1 to 'max' (GPUArray expected, got table)", gpu.gpuarray.max, {})
      helpers.assert_error("bad argument #1 to 'dot' (GPUArray expected, got nil)", gpu.gpuarray.dot, nil, 1)
      helpers.assert_error("bad argument #1 to 'cumsum' (GPUArray expected, got string)", gpu.cumsum, "x")
    end)
  end)

  helpers.gpu_it("sum, min, max and mean of every dtype at block-boundary sizes", function()
    for _, dtype in ipairs(R.all_dtypes) do
      for _, n in ipairs(R.sizes) do
        local a, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
        local ref = reference(values, dtype)
        local what = ("%s[%d]"):format(dtype, n)
        check_sum(ref.sum, ref.abs, a:sum(), dtype, "sum of " .. what)
        assert.are.equal(ref.min, a:min(), "min of " .. what)
        assert.are.equal(ref.max, a:max(), "max of " .. what)
        local mean = a:mean()
        assert.are.equal("float", math.type(mean))
        local tol = (float_rtol[dtype] or 2 ^ -40) * (ref.abs / n + math.abs(ref.sum / n)) + 1e-300
        assert(math.abs(mean - ref.sum / n) <= tol, ("mean of %s: expected %.17g, got %.17g")
          :format(what, ref.sum / n, mean))
        if n <= 33 then
          local prod = a:prod()
          if is_float(dtype) then
            helpers.assert_close(ref.prod, prod, 64 * float_rtol[dtype], "prod of " .. what)
          else
            assert.are.equal(ref.prod, prod, "prod of " .. what)
          end
        end
        a:free()
      end
    end
  end)

  helpers.gpu_it("leave 0-d results of NumPy's dtype on the device", function()
    local a, values = R.generate(1000, "int32", function() return math.random(-1000, 1000) end)
    local ref = reference(values, "int32")
    local s = gpu.gpuarray.sum(a)
    assert.are.equal(0, s.ndim)
    assert.are.equal("int64", s.dtype)
    assert.are.equal(ref.sum, R.value(s))
    assert.are.equal("float64", gpu.gpuarray.mean(a).dtype)
    assert.are.equal("int32", gpu.gpuarray.min(a).dtype)
    assert.are.equal(ref.max, R.value(gpu.gpuarray.max(a)))
    local stream <close> = gpu.Stream()
    local m = gpu.gpuarray.max(a, {stream = stream})
    stream:synchronize()
    assert.are.equal(ref.max, R.value(m))
    assert.are.equal(ref.sum, a:sum({stream = stream}))
  end)

  -- gpuarray.<op>(a) without options takes a C path (core.reduction_caller) where a is
  -- contiguous, 16-byte aligned and one block of gpu_reduce_vec reads it all (256 threads, a
  -- 16-byte vector each); it must give the general path's bytes.
  helpers.gpu_it("give the general path's bytes from their one-block C path", function()
    local ga = gpu.gpuarray
    local function general(f, a)
      local was = gpu.fast_paths(false)
      local ok, result = pcall(f, a)
      gpu.fast_paths(was)
      if not ok then error(result, 0) end
      return result
    end
    local ops = {"sum", "prod", "min", "max", "mean", "any", "all"}
    for _, dtype in ipairs{"float32", "float64", "int32", "int64", "uint8", "bool", "float16"} do
      local itemsize = gpu.dtype(dtype).itemsize
      local one_block = 256 * 16 // itemsize
      for _, n in ipairs{1, 3, 4, 255, 1000, one_block - 1, one_block, one_block + 1} do
        local a, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
        local ref = reference(values, dtype)
        local shifted = a:slice(2, n)             -- n - 1 elements, misaligned: general
        for _, op in ipairs(ops) do
          local what = ("%s of %s[%d]"):format(op, dtype, n)
          local fast = ga[op](a)
          assert.are.equal(0, fast.ndim, what)
          assert.are.equal(general(ga[op], a).dtype, fast.dtype, what)
          assert.are.equal(R.get(general(ga[op], a)):bytes(), R.get(fast):bytes(), what)
          if n > 1 then
            assert.are.equal(R.get(general(ga[op], shifted)):bytes(), R.get(ga[op](shifted)):bytes(),
                             what .. " from its second element")
          end
        end
        assert.are.equal(ref.min, R.value(ga.min(a)), dtype)
        assert.are.equal(ref.max, R.value(ga.max(a)), dtype)
        check_sum(ref.sum, ref.abs, R.value(ga.sum(a)), dtype, ("sum of %s[%d]"):format(dtype, n))
        a:free()
      end
    end
  end)

  -- core.axis_layout reads in C what reduce_axis took from a.shape and a.strides: the kept
  -- axes' shape, count and packed layout (collapse, then pack_layout), the axis' length and
  -- stride, the alignment (up to 16) of every axis' first element, and the stride of the kept
  -- axes where they merge into one.
  helpers.gpu_it("lay out the kept axes in C as collapse and pack_layout do", function()
    local function lua_layout(a, axis)
      local shape, strides = a.shape, a.strides
      local kept_shape, kept_strides, m = {}, {}, 1
      local start_bits = a.ptr | 16
      for i = 1, #shape do
        if i ~= axis then
          kept_shape[#kept_shape + 1], kept_strides[#kept_strides + 1] = shape[i], strides[i]
          m = m * shape[i]
          if shape[i] ~= 1 then start_bits = start_bits | strides[i] end
        end
      end
      local merged_shape, merged_strides = reduction.collapse(kept_shape, kept_strides)
      return kept_shape, m, shape[axis], strides[axis],
             reduction.pack_layout(merged_shape, merged_strides), start_bits & -start_bits,
             #merged_shape == 1 and merged_strides[1] or 0
    end
    local base = R.generate(4 * 1 * 6 * 5, "float32", function(i) return i end)
    local arrays = {
      R.reshaped(base, {4, 1, 6, 5}), R.reshaped(base, {120}), R.reshaped(base, {1, 120, 1}),
      core.array_view(base, 0, "float32", {5, 6, 4}, {4, 20, 120}),          -- transposed
      core.array_view(base, 8, "float32", {3, 2, 5}, {160, 40, 4}),           -- every other row
      core.array_view(base, 0, "float32", {6, 0, 3}, {80, 4, 8}),             -- empty
      core.array_view(base, 4, "float32", {2, 3, 4}, {0, 40, 8}),             -- broadcast axis
      core.array_view(base, 48, "float32", {2, 3, 4}, {-32, 64, 4}),          -- reversed
      core.array_view(base, 32, "float32", {7, 4}, {16, 4}),                 -- rows 16 bytes apart
    }
    for n, a in ipairs(arrays) do
      for axis = 1, a.ndim do
        local want = {lua_layout(a, axis)}
        local got = {core.axis_layout(a, axis)}
        assert.are.same(want, got, ("array %d, axis %d"):format(n, axis))
      end
    end
    local a = arrays[1]
    assert.is_truthy(helpers.error_of(core.axis_layout, a, 0):find("(axis out of range)", 1, true))
    assert.is_truthy(helpers.error_of(core.axis_layout, a, 5):find("(axis out of range)", 1, true))
    base:free()
    assert.is_truthy(helpers.error_of(core.axis_layout, a, 1):find("(array has been freed)", 1, true))
  end)

  helpers.gpu_it("sum large float32 and int32 arrays (2^24 + 3 elements)", function()
    local n = 2 ^ 24 + 3
    local a, values = R.generate(n, "float32", function() return math.random() * 2 - 1 end)
    local ref = reference(values, "float32")
    check_sum(ref.sum, ref.abs, a:sum(), "float32", "sum of float32[2^24+3]")
    assert.are.equal(ref.max, a:max())
    a:free()
    local b, ints = R.generate(n, "int32", function(i) return (i * 7919) % 2001 - 1000 end)
    ref = reference(ints, "int32")
    assert.are.equal(ref.sum, b:sum())
    assert.are.equal(ref.min, b:min())
  end)

  helpers.gpu_it("propagate NaN through min and max, as NumPy does", function()
    for _, dtype in ipairs{"float32", "float64", "float16"} do
      local values = helpers.random_floats(300)
      for i = 1, 300 do values[i] = math.floor(values[i] * 64) / 64 end
      values[math.random(1, 300)] = 0 / 0
      local a = R.to_gpu(values, dtype)
      local mn, mx = a:min(), a:max()
      assert.is_true(mn ~= mn, dtype)
      assert.is_true(mx ~= mx, dtype)
      local s = a:sum()
      assert.is_true(s ~= s, dtype)
    end
  end)

  helpers.gpu_it("reduce strided and transposed views", function()
    for _, dtype in ipairs{"float64", "int16", "uint8", "float32", "bool"} do
      local n = 3001
      local a, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
      for _, step in ipairs{2, 3, 7} do
        local picked = {}
        for i = 1, n, step do picked[#picked + 1] = values[i] end
        local ref = reference(picked, dtype)
        local v = R.every(a, step)
        assert.is_false(v.is_contiguous)
        check_sum(ref.sum, ref.abs, v:sum(), dtype, ("sum of %s every %d"):format(dtype, step))
        assert.are.equal(ref.min, v:min())
        assert.are.equal(ref.max, v:max())
      end
    end
    -- a transposed matrix holds the same elements
    local rows, cols = 37, 129
    local m, values = R.generate(rows * cols, "int32", function() return math.random(-1e6, 1e6) end)
    local t = R.transposed(R.reshaped(m, {rows, cols}))
    local ref = reference(values, "int32")
    assert.are.equal(ref.sum, t:sum())
    assert.are.equal(ref.min, t:min())
    -- misaligned (offset by one element) contiguous views take the scalar path
    local f, fv = R.generate(1000, "float32", function() return math.random() end)
    local shifted = core.array_view(f, 4, "float32", {999})
    local tail = {}
    for i = 2, 1000 do tail[#tail + 1] = fv[i] end
    local tref = reference(tail, "float32")
    check_sum(tref.sum, tref.abs, shifted:sum(), "float32", "sum of a shifted view")
  end)

  helpers.gpu_it("reduce along one axis (1-based, negatives from the end)", function()
    local shape = {3, 33, 40}
    local n = 3 * 33 * 40
    for _, dtype in ipairs{"int32", "float64", "uint8"} do
      local flat, values = R.generate(n, dtype, function() return R.random_value(dtype) end)
      local a = R.reshaped(flat, shape)
      local function at(i, j, k) return values[((i - 1) * 33 + (j - 1)) * 40 + k] end
      for _, axis in ipairs{1, 2, 3, -1, -3} do
        local ax = axis < 0 and 4 + axis or axis
        for _, op in ipairs{"sum", "max", "mean"} do
          local out = gpu.gpuarray[op](a, {axis = axis})
          local kept = {}
          for d = 1, 3 do if d ~= ax then kept[#kept + 1] = shape[d] end end
          assert.are.same(kept, out.shape)
          local h = R.get(out)
          local idx = 0
          for p = 1, kept[1] do
            for q = 1, kept[2] do
              idx = idx + 1
              local acc, count = nil, shape[ax]
              for r = 1, count do
                local ijk = {}
                local free = {p, q}
                local f = 1
                for d = 1, 3 do
                  if d == ax then ijk[d] = r else ijk[d] = free[f]; f = f + 1 end
                end
                local v = at(ijk[1], ijk[2], ijk[3])
                if op == "max" then acc = (acc == nil or v > acc) and v or acc
                else acc = (acc or 0) + v end
              end
              if op == "mean" then acc = acc / count end
              local got = h[idx]
              if is_float(dtype) or op == "mean" then
                helpers.assert_close(acc, got, 1e-12, ("%s axis %d of %s"):format(op, axis, dtype))
              else
                assert.are.equal(acc, got, ("%s axis %d of %s"):format(op, axis, dtype))
              end
            end
          end
        end
      end
    end
    -- a 1-d array reduced along its axis gives a 0-d array; the method form gives an array too
    local v, vals = R.generate(100, "int64", function() return math.random(-100, 100) end)
    local s = v:sum({axis = 1})
    assert.are.equal(0, s.ndim)
    assert.are.equal(reference(vals, "int64").sum, R.value(s))
    -- along the axis of a transposed view
    local m, mv = R.generate(6 * 50, "float32", function() return math.random() end)
    local t = R.transposed(R.reshaped(m, {6, 50}))   -- 50 x 6
    local rowsums = R.get(t:sum({axis = 2}))          -- sums over the original rows' columns
    for col = 1, 50 do
      local acc = 0
      for row = 1, 6 do acc = acc + mv[(row - 1) * 50 + col] end
      helpers.assert_close(acc, rowsums[col], 1e-6)
    end
  end)

  helpers.gpu_it("reduce transposed and reversed views whole, in memory order", function()
    local n = 6 * 70 * 90
    local flat, values = R.generate(n, "float32", function() return R.random_value("float32") end)
    local ref = reference(values, "float32")
    local cube = R.reshaped(flat, {6, 70, 90})
    local views = {
      transposed = cube:transpose({3, 1, 2}),
      reversed = flat:slice(-1, 1, -1),
      ["reversed rows of a transposed"] = R.reshaped(flat, {420, 90}).T:slice(-1, 1, -1),
    }
    for what, v in pairs(views) do
      assert.is_false(v.is_contiguous)
      check_sum(ref.sum, ref.abs, v:sum(), "float32", what .. " sum")
      check_sum(ref.sum / n, ref.abs / n, v:mean(), "float32", what .. " mean")
      assert.are.equal(ref.max, v:max(), what .. " max")
      assert.are.equal(ref.min, v:min(), what .. " min")
      assert.is_true(v:gt(ref.max - 1e-3):any(), what .. " any")
      assert.is_false(v:gt(ref.max):any(), what .. " any of none")
    end
    -- every other element is not one block of memory: read through its strides, still right
    local sparse, sv = R.every(flat, 2), {}
    for i = 1, n, 2 do sv[#sv + 1] = values[i] end
    local sref = reference(sv, "float32")
    check_sum(sref.sum, sref.abs, sparse:sum(), "float32", "every other element sum")
    assert.are.equal(sref.max, sparse:max(), "every other element max")
  end)

  helpers.gpu_it("reduce long axes with many threads an output, split among blocks", function()
    -- rows x cols arrays reduced along axis, chosen to take each way gpu_reduce_axis shares
    -- its work: threads along a long contiguous axis split among blocks, across outputs with
    -- and without splits; int8 values from 0 to 3, so the first of many maxima must win argmax
    local cases = {{3, 50000, 2}, {50000, 3, 1}, {3000, 600, 1}, {600, 3000, 2}}
    for _, case in ipairs(cases) do
      local rows, cols, axis = table.unpack(case)
      local k, m = axis == 1 and rows or cols, axis == 1 and cols or rows
      local shares = reduction.axis_threads(m, k, axis == 2, 1)
      local blocks = -(-m // (256 // shares))
      assert.is_true(shares > 1 or reduction.split_ranges(blocks, k, 8 * reduction.multiprocessors(), 1) > 1,
                     ("%d x %d along %d has work to share"):format(rows, cols, axis))
      local what = ("%d x %d along %d"):format(rows, cols, axis)
      local flat, v8 = R.generate(rows * cols, "int8", function() return math.random(0, 3) end)
      local a8 = R.reshaped(flat, {rows, cols})
      local f32, vf = R.generate(rows * cols, "float32", function() return R.random_value("float32") end)
      local af = R.reshaped(f32, {rows, cols})
      local function at(values, o, j)               -- element j of output o's axis
        return axis == 1 and values[(j - 1) * cols + o] or values[(o - 1) * cols + j]
      end
      local sum8, arg8 = R.get(gpu.gpuarray.sum(a8, {axis = axis})), R.get(gpu.gpuarray.argmax(a8, {axis = axis}))
      local sumf, maxf = R.get(gpu.gpuarray.sum(af, {axis = axis})), R.get(gpu.gpuarray.max(af, {axis = axis}))
      local meanf = R.get(gpu.gpuarray.mean(af, {axis = axis}))
      for o = 1, m do
        local s8, best, best_j, sf, abs, mx = 0, -1, nil, 0.0, 0.0, -math.huge
        for j = 1, k do
          local x, y = at(v8, o, j), at(vf, o, j)
          s8 = s8 + x
          if x > best then best, best_j = x, j end
          sf, abs = sf + y, abs + math.abs(y)
          if y > mx then mx = y end
        end
        assert.are.equal(s8, sum8[o], what .. " int8 sum")
        assert.are.equal(best_j, arg8[o], what .. " argmax (the first of the maxima)")
        check_sum(sf, abs, sumf[o], "float32", what .. " float32 sum")
        assert.are.equal(mx, maxf[o], what .. " float32 max")
        check_sum(sf / k, abs / k, meanf[o], "float32", what .. " float32 mean")
      end
    end
  end)

  -- Contiguous rows that each start on 16 bytes and hold whole 16-byte vectors are read 16
  -- bytes a load (gpu_reduce_axis_vec); the same rows one element off that alignment take
  -- gpu_reduce_axis.  Float values are multiples of 1/64, so their sums are exact either way.
  helpers.gpu_it("reduce aligned rows 16 bytes a load, unaligned ones element by element", function()
    local kernels_taken = record_kernels()
    for _, dtype in ipairs(EXACT_DTYPES) do
      local itemsize = core.dtype(dtype).itemsize
      local per_vector = 16 // itemsize
      -- long rows split among blocks; many short rows; one row of one vector
      for _, case in ipairs{{3, (2048 + 4) * per_vector}, {300, 3 * per_vector}, {1, per_vector}} do
        local rows, cols = case[1], case[2]
        local flat, values = R.generate(rows * cols + per_vector, dtype, function() return exact_value(dtype) end)
        for _, first in ipairs{1, 2} do              -- element 1 is 16-byte aligned, 2 is not
          local a = core.array_view(flat, (first - 1) * itemsize, dtype, {rows, cols})
          local what = ("%d x %d %s from element %d"):format(rows, cols, dtype, first)
          kernels_taken()
          local results = {sums = R.get(gpu.gpuarray.sum(a, {axis = 2})),
                           maxes = R.get(gpu.gpuarray.max(a, {axis = -1})),
                           argmins = R.get(gpu.gpuarray.argmin(a, {axis = 2})),
                           anys = R.get(gpu.gpuarray.any(a, {axis = 2}))}
          local used = kernels_taken()
          local kernel = first == 1 and "gpu_reduce_axis_vec" or "gpu_reduce_axis"
          assert.is_true(used[kernel], what .. " takes " .. kernel)
          assert.is_nil(used[first == 1 and "gpu_reduce_axis" or "gpu_reduce_axis_vec"], what)
          for r = 1, rows do
            local base = first - 1 + (r - 1) * cols
            check_exact_line(dtype, results, r, cols, function(j) return values[base + j] end,
                             what .. ", row " .. r)
          end
        end
      end
    end
  end)

  -- Along the first axis of rows that each hold every output side by side (a tall matrix's
  -- columns, a stack of images), gpu_reduce_columns reads whole rows, 16 bytes a load where
  -- every row starts on 16 bytes and holds whole vectors (gpu_reduce_columns_vec), and
  -- a finish kernel combines its blocks' partials.  Float values are multiples of
  -- 1/64, so their sums are exact in any order.
  helpers.gpu_it("reduce across rows that hold every output side by side", function()
    local kernels_taken = record_kernels()
    for _, dtype in ipairs(EXACT_DTYPES) do
      local itemsize = core.dtype(dtype).itemsize
      local per_vector = 16 // itemsize
      local finished = false
      -- {rows, outputs, row pitch in elements, reversed rows, kept shape}: many rows among
      -- blocks; 3 outputs; rows wider than their outputs; rows in reverse; the widest rows the
      -- path takes (columns_most loads); one block; a 3-d stack whose kept axes merge; one
      -- output, every other element
      local widest = reduction.columns_most * per_vector
      local cases = {{6000, 16, 16}, {3000, 3, 3}, {2000, 2 * per_vector, 3 * per_vector},
                     {1500, 4 * per_vector, 4 * per_vector, true}, {100, widest, widest},
                     {7, 5, 5}, {900, 8, 8, false, {2, 4}}, {2000, 1, 2}}
      for _, case in ipairs(cases) do
        local rows, m, pitch, reversed, kept = table.unpack(case)
        local flat, values = R.generate(rows * pitch + per_vector, dtype, function() return exact_value(dtype) end)
        for _, first in ipairs{1, 2} do              -- element 1 is 16-byte aligned, 2 is not
          local shape, strides = {rows, m}, {pitch * itemsize, itemsize}
          local offset = (first - 1) * itemsize
          if reversed then offset, strides[1] = offset + (rows - 1) * pitch * itemsize, -strides[1] end
          if kept then shape, strides = {rows, kept[1], kept[2]}, {strides[1], kept[2] * itemsize, itemsize} end
          local a = core.array_view(flat, offset, dtype, shape, strides)
          local what = ("%d x %d %s (pitch %d%s) from element %d"):format(rows, m, dtype, pitch,
                                                                         reversed and ", reversed" or "", first)
          -- the kernel op takes: rows of more than columns_most loads, and argmin's pairs 8 or
          -- 16 a load, take the general one
          local function kernel_of(op)
            local vec = first == 1 and m % per_vector == 0
            if (vec and m // per_vector or m) > reduction.columns_most or
               (op == "argmin" and vec and per_vector > 4) then
              return "gpu_reduce_axis"
            end
            return vec and "gpu_reduce_columns_vec" or "gpu_reduce_columns"
          end
          local function along_rows(op)
            kernels_taken()
            local r = gpu.gpuarray[op](a, {axis = 1})
            local used, kernel = kernels_taken(), kernel_of(op)
            for _, name in ipairs{"gpu_reduce_columns_vec", "gpu_reduce_columns", "gpu_reduce_axis"} do
              assert.are.equal(name == kernel, used[name] == true, what .. ": " .. op .. " takes " .. kernel)
            end
            local finish = used.gpu_reduce_axis_finish_block or used.gpu_reduce_axis_finish
            if rows < 10 then assert.is_nil(finish, what .. " in one block") end
            finished = finished or kernel ~= "gpu_reduce_axis" and finish
            return R.get(kept and R.reshaped(r, {m}) or r)
          end
          local results = {sums = along_rows("sum"), maxes = along_rows("max"),
                           argmins = along_rows("argmin"), anys = along_rows("any"),
                           means = dtype == "float32" and along_rows("mean") or nil}
          for o = 1, m do
            check_exact_line(dtype, results, o, rows, function(j)
              return values[first + (reversed and rows - j or j - 1) * pitch + o - 1]
            end, what .. ", output " .. o)
          end
        end
        flat:free()
      end
      assert.is_true(finished, dtype .. ": some reductions among blocks")
    end
    -- no rows: sums of nothing, and means of nothing NaN, as NumPy gives
    local empty = core.array_empty({0, 4}, "float32")
    kernels_taken()
    local sums, means = R.get(gpu.gpuarray.sum(empty, {axis = 1})), R.get(gpu.gpuarray.mean(empty, {axis = 1}))
    local used = kernels_taken()
    assert.is_true(used.gpu_reduce_columns_vec or used.gpu_reduce_columns, "no rows take the columns' kernel")
    for o = 1, 4 do
      assert.are.equal(0, sums[o])
      assert.is_true(means[o] ~= means[o], "mean of no rows")
    end
  end)

  helpers.gpu_it("dot products, any and all", function()
    local stream = gpu.Stream()
    for _, pair in ipairs{{"float32", "float32"}, {"int32", "int32"}, {"float32", "float64"},
                          {"int8", "int16"}, {"float64", "float64"}} do
      for _, n in ipairs{1, 7, 33, 1025, 100001} do
        local a, av = R.generate(n, pair[1], function() return R.random_value(pair[1]) % 100 end)
        local b, bv = R.generate(n, pair[2], function() return R.random_value(pair[2]) % 100 end)
        local ref, abs = 0, 0
        for i = 1, n do
          ref = ref + av[i] * bv[i]
          abs = abs + math.abs(av[i] * bv[i])
        end
        local out = reduction.promote(pair[1], pair[2])
        local d = gpu.gpuarray.dot(a, b, {stream = stream})   -- stays on the device
        assert.are.equal(out, d.dtype)
        assert.are.equal(0, d.ndim)
        stream:synchronize()
        local v = gpu.gpuarray.dot(a, b)                       -- a Lua number, like a:dot(b)
        assert.are.equal("number", type(v))
        if is_float(out) then
          local what = ("dot %s.%s[%d]"):format(pair[1], pair[2], n)
          check_sum(ref, abs, a:dot(b), out, what)
          check_sum(ref, abs, v, out, what)
          check_sum(ref, abs, R.value(d), out, what)
        else
          local expected = wrapped(ref, out)
          assert.are.equal(expected, a:dot(b))
          assert.are.equal(expected, R.value(d))
          assert.are.equal(expected, v)
        end
      end
    end
    local flags = R.to_gpu({false, false, true, false}, "bool")
    assert.is_true(flags:any())
    assert.is_false(flags:all())
    assert.is_true(R.to_gpu({1.5, -2, 1e-300}, "float64"):all())
    assert.is_false(R.to_gpu({0.0, -0.0}, "float32"):any())
    local big = R.generate(100001, "int32", function(i) return i == 77777 and 0 or i end)
    assert.is_false(big:all())
    assert.is_true(big:any())
  end)

  -- Whole arrays of 1- and 2-byte integers and bools: gpu_reduce_vec sums, means, any, all
  -- and int8 and uint8 dots reduce a whole 16-byte load at once (reduce.cu's gpu_whole_*
  -- helpers: dp4a, nonzero bytes found by carries), while a view from the second element is
  -- not 16-byte aligned and goes element by element.  Fills place the zeros that decide any
  -- and all, and full-range values include the ones whose high bit alone is set (-128,
  -- -32768, 0x80, 0x8000), where a carry trick could slip.
  helpers.gpu_it("reduce 1- and 2-byte integers and bools a whole 16-byte load at once", function()
    local kernels_taken = record_kernels()
    local ranges = {int8 = {-128, 127}, uint8 = {0, 255}, int16 = {-32768, 32767}, uint16 = {0, 65535},
                    bool = {0, 1}}
    for _, dtype in ipairs{"bool", "int8", "uint8", "int16", "uint16"} do
      local lo, hi = ranges[dtype][1], ranges[dtype][2]
      local nonzero = function() local v repeat v = math.random(lo, hi) until v ~= 0 return v end
      local fills = {
        random = function() return math.random(lo, hi) end,
        ["high bits"] = function() return math.random(0, 1) == 0 and (hi == 1 and 1 or (lo < 0 and lo or (hi + 1) // 2)) or 0 end,
        ["one zero"] = nonzero, ["one nonzero"] = function() return 0 end,
      }
      for _, n in ipairs{16, 4097, 70001} do
        for name, fill in pairs(fills) do
          local odd = math.random(1, n)               -- the one zero, the one nonzero
          local flat, values = R.generate(n + 1, dtype, function(i)
            local v = i == odd + 1 and name == "one zero" and 0 or
                      i == odd + 1 and name == "one nonzero" and nonzero() or fill()
            if dtype == "bool" then return v ~= 0 end
            return v
          end)
          local other = dtype ~= "bool" and dtype:match("8") and
                        R.generate(n + 1, dtype, function() return math.random(lo, hi) end)
          local other_values = other and R.get(other)
          for _, first in ipairs{1, 2} do           -- element 1 is 16-byte aligned, 2 is not
            local a = core.array_view(flat, (first - 1) * flat.itemsize, dtype, {n})
            local what = ("%s[%d] (%s) from element %d"):format(dtype, n, name, first)
            local sum, any, all, dot = 0, false, true, 0
            for i = first, first + n - 1 do
              local v = as_number(values[i])
              sum, any, all = sum + v, any or v ~= 0, all and v ~= 0
              if other then dot = dot + v * other_values[i] end
            end
            assert.are.equal(sum, a:sum(), what .. ": sum")
            assert.are.equal(any, a:any(), what .. ": any")
            assert.are.equal(all, a:all(), what .. ": all")
            helpers.assert_close(sum / n, a:mean(), 2 ^ -50, what .. ": mean")
            if other then
              local b = core.array_view(other, (first - 1) * other.itemsize, dtype, {n})
              assert.are.equal(wrapped(dot, dtype), a:dot(b), what .. ": dot")
            end
            -- which kernel: through the Lua path (options given), which asks the kernel cache
            -- each call, where the C caller of a small array asks it once
            kernels_taken()
            assert.are.equal(sum, R.value(gpu.gpuarray.sum(a, {})), what .. ": sum on the device")
            local used = kernels_taken()
            assert.are.equal(first == 1, used.gpu_reduce_vec == true, what .. ": 16-byte loads")
          end
          flat:free()
          if other then other:free() end
        end
      end
    end
  end)

  -- The same over 2^24 + 9 elements (made on the device, the reference read from their
  -- bytes), where each thread takes four loads at a time: random values, then no zeros, then
  -- one zero written in.
  helpers.gpu_it("reduce 1- and 2-byte integers and bools of 2^24 elements whole loads at a time", function()
    local formats = {bool = "B", int8 = "i1", uint8 = "I1", int16 = "<i2", uint16 = "<I2"}
    local scales = {bool = 2, int8 = 255, uint8 = 256, int16 = 65535, uint16 = 65536}
    local n = (1 << 24) + 9
    -- calls f(v, w) for every element v of a (bools as 0 and 1), w b's element beside it
    local function each_value(a, f, b)
      local fmt, per = formats[a.dtype], 4096
      local a_bytes, b_bytes, chunk = a:get():bytes(), b and b:get():bytes(), fmt:rep(per)
      for first = 1, a.size, per do
        local count = math.min(per, a.size - first + 1)
        local format, at = count == per and chunk or fmt:rep(count), (first - 1) * a.itemsize + 1
        local values, others = {string.unpack(format, a_bytes, at)}, b and {string.unpack(format, b_bytes, at)}
        for i = 1, count do f(values[i], others and others[i]) end
      end
    end
    for _, dtype in ipairs{"bool", "int8", "uint8", "int16", "uint16"} do
      local r = gpu.random.rand(n, "float32")
      local a = dtype == "bool" and r:gt(0.5) or
                (r * scales[dtype] + (dtype:match("^int") and -scales[dtype] / 2 or 0)):astype(dtype)
      r:free()
      local b = dtype ~= "bool" and dtype:match("8") and a:copy()
      for _, fill in ipairs{"random", "no zeros", "one zero"} do
        if fill == "no zeros" then
          local nonzero = dtype == "bool" and gpu.gpuarray.ones_like(a) or a | 1
          a:free()
          a = nonzero
        elseif fill == "one zero" then
          local zero = 0
          if dtype == "bool" then zero = false end   -- (not `and or`: false would give 0)
          a[math.random(1, n)] = zero
        end
        local what = ("%s[%d] (%s)"):format(dtype, n, fill)
        local sum, any, all = 0, false, true
        each_value(a, function(v) sum, any, all = sum + v, any or v ~= 0, all and v ~= 0 end)
        assert.are.equal(sum, a:sum(), what .. ": sum")
        assert.are.equal(any, a:any(), what .. ": any")
        assert.are.equal(all, a:all(), what .. ": all")
        helpers.assert_close(sum / n, a:mean(), 2 ^ -50, what .. ": mean")
        if b then
          local dot = 0
          each_value(a, function(v, w) dot = dot + v * w end, b)
          assert.are.equal(wrapped(dot, dtype), a:dot(b), what .. ": dot")
        end
      end
      a:free()
      if b then b:free() end
    end
  end)

  helpers.gpu_it("argmax and argmin of every real dtype: first best, first NaN, 1-based", function()
    for _, dtype in ipairs(R.all_dtypes) do
      for _, n in ipairs{1, 2, 33, 257, 1000, 100001} do
        for _, nan in ipairs{false, true} do
          if not nan or is_float(dtype) then
            local a, values = R.generate(n, dtype, function() return R.tied_value(dtype) end)
            if nan then
              local h = a:get()
              for _ = 1, 3 do h[math.random(1, n)] = 0 / 0 end
              a:set(h)
              values = h:totable()
            end
            for _, op in ipairs{"argmax", "argmin"} do
              local want = R.arg_reference(values, dtype, op)
              local got = a[op](a)
              assert(got == want, ("%s of %s[%d]%s: got %s, expected %d"):format(op, dtype, n,
                     nan and " with NaN" or "", tostring(got), want))
            end
          end
        end
      end
    end
    -- a transposed view counts in its own row-major order; the device form is a 0-d int64
    local m = R.to_gpu({3, 9, 1, 9, 0, 7}, "int32")
    local t = R.transposed(R.reshaped(m, {2, 3}))                 -- {{3, 9}, {9, 0}, {1, 7}}
    assert.are.equal(2, t:argmax())
    assert.are.equal(4, t:argmin())
    local s = core.Stream()
    local on_device = gpu.gpuarray.argmax(t, {stream = s})
    assert.are.equal("int64", on_device.dtype)
    assert.are.same({}, on_device.shape)
    s:synchronize()
    assert.are.equal(2, R.value(on_device))
    helpers.assert_error("bad argument #1 to 'argmax' (argmax is not defined for complex arrays "
                         .. "(complex64 has no order))", gpu.gpuarray.argmax, R.to_gpu({1, 2}, "complex64"))
    helpers.assert_error("bad argument #1 to 'argmin' (attempt to get argmin of an empty array)",
                         m.argmin, core.array_empty(0, "float32"))
    helpers.assert_error("bad argument #2 to 'argmax' (unknown option 'axes')", m.argmax, m, {axes = 1})
  end)

  helpers.gpu_it("reject bad input with clear messages", function()
    local a = R.to_gpu({1, 2, 3}, "float32")
    helpers.assert_error("bad argument #2 to 'sum' (unknown option 'axes')", a.sum, a, {axes = 1})
    helpers.assert_error("bad argument #2 to 'sum' (axis 2 is out of range for a 1-d array)",
                         gpu.gpuarray.sum, a, {axis = 2})
    helpers.assert_error("bad argument #2 to 'max' (axis -2 is out of range for a 1-d array)",
                         a.max, a, {axis = -2})
    helpers.assert_error("bad argument #2 to 'mean' (axis 0 is out of range for a 1-d array)",
                         a.mean, a, {axis = 0})
    helpers.assert_error("bad argument #2 to 'sum' (option 'axis' must be an integer, got float)",
                         a.sum, a, {axis = 1.5})
    helpers.assert_error("bad argument #2 to 'sum' (option 'stream' must be a gpu.Stream, got number)",
                         a.sum, a, {stream = 1})
    helpers.assert_error("bad argument #2 to 'sum' (options table expected, got string)", a.sum, a, "x")
    local b = R.to_gpu({1, 2}, "float32")
    helpers.assert_error("bad argument #2 to 'dot' (arrays differ in size (3 and 2))", gpu.gpuarray.dot, a, b)
    helpers.assert_error("bad argument #3 to 'dot' (unknown option 'axis')", gpu.gpuarray.dot, a, a, {axis = 1})
    local empty = core.array_empty(0, "int32")
    assert.are.equal(0, empty:sum())
    helpers.assert_error("bad argument #1 to 'min' (zero-size array to reduction operation "
                         .. "minimum which has no identity)", empty.min, empty)
    local e2 = core.array_empty({4, 0}, "float32")
    helpers.assert_error("bad argument #1 to 'max' (zero-size array to reduction operation "
                         .. "maximum which has no identity)", gpu.gpuarray.max, e2, {axis = 2})
    assert.are.same({0}, gpu.gpuarray.sum(e2, {axis = 1}).shape)
    a:free()
    a:free()
    helpers.assert_error("bad argument #1 to 'sum' (array has been freed)", gpu.gpuarray.sum, a)
    helpers.assert_error("bad argument #1 to 'dot' (array has been freed)", gpu.gpuarray.dot, a, b)
    local sum = b.sum
    b:free()
    helpers.assert_error("bad argument #1 to 'sum' (array has been freed)", sum, b)
  end)
end)
