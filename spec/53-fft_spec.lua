-- gpu.fft (lua/gpu/fft.lua on src/fft.c's cuFFT plans) against transforms computed in Lua by
-- their definitions (a sum per output element, in doubles, each twiddle's angle reduced mod
-- n first), over random inputs of several dtypes, shapes, axes and sizes; and, without a
-- GPU, the plans it hands cuFFT (tools/fakecufft.c).
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local core = require "gpu.core"

local TWO_PI = 2 * math.pi

-- A random array of shape and dtype, and its elements as stored, as {re, im} pairs.
local function random_array(shape, dtype)
  local size = 1
  for _, n in ipairs(shape) do size = size * n end
  local make
  if dtype:match("^complex") then
    make = function() return gpu.complex(math.random() * 2 - 1, math.random() * 2 - 1) end
  elseif dtype:match("^int") then make = function() return math.random(-50, 50) end
  else make = function() return math.random() * 2 - 1 end end
  local a, stored = R.generate(size, dtype, make)
  local pairs_of = {}
  for i = 1, size do
    local v = stored[i]
    pairs_of[i] = type(v) == "number" and {v, 0.0} or {v.re, v.im}
  end
  return R.reshaped(a, shape), pairs_of
end

local function product(list)
  local p = 1
  for _, n in ipairs(list) do p = p * n end
  return p
end

-- The transform along axis of the row-major list values of shape, the axis cropped or padded
-- with zeros to n first: sum over j of x_j e^(sign 2 pi i j k / n).
local function dft_axis(values, shape, axis, n, sign)
  local inner = product({table.unpack(shape, axis + 1)})
  local length = shape[axis]
  local outer = product({table.unpack(shape, 1, axis - 1)})
  local out_shape = {table.unpack(shape)}
  out_shape[axis] = n
  local out = {}
  for o = 0, outer - 1 do
    for k = 0, n - 1 do
      for i = 0, inner - 1 do
        local re, im = 0.0, 0.0
        for j = 0, math.min(length, n) - 1 do
          local x = values[(o * length + j) * inner + i + 1]
          local angle = sign * TWO_PI * ((j * k) % n) / n
          local c, s = math.cos(angle), math.sin(angle)
          re = re + x[1] * c - x[2] * s
          im = im + x[1] * s + x[2] * c
        end
        out[(o * n + k) * inner + i + 1] = {re, im}
      end
    end
  end
  return out, out_shape
end

-- The first m elements along axis.
local function keep_first(values, shape, axis, m)
  local inner = product({table.unpack(shape, axis + 1)})
  local length = shape[axis]
  local out_shape = {table.unpack(shape)}
  out_shape[axis] = m
  local out = {}
  for o = 0, #values // (length * inner) - 1 do
    for k = 0, m - 1 do
      for i = 0, inner - 1 do out[(o * m + k) * inner + i + 1] = values[(o * length + k) * inner + i + 1] end
    end
  end
  return out, out_shape
end

-- irfft along axis to n points: the half spectrum cropped or padded to n // 2 + 1, completed
-- by Hermitian symmetry (the imaginary parts of the first and, n even, the middle element
-- dropped, as NumPy and cuFFT do), transformed back, real parts.
local function irfft_axis(values, shape, axis, n)
  local inner = product({table.unpack(shape, axis + 1)})
  local length = shape[axis]
  local full_shape = {table.unpack(shape)}
  full_shape[axis] = n
  local full = {}
  for o = 0, #values // (length * inner) - 1 do
    for k = 0, n - 1 do
      for i = 0, inner - 1 do
        local source, conjugate = k, false
        if k > n // 2 then source, conjugate = n - k, true end
        local x = source < length and values[(o * length + source) * inner + i + 1] or {0.0, 0.0}
        local im = (source == 0 or 2 * source == n) and 0.0 or (conjugate and -x[2] or x[2])
        full[(o * n + k) * inner + i + 1] = {x[1], im}
      end
    end
  end
  local out = dft_axis(full, full_shape, axis, n, 1)
  for i, z in ipairs(out) do out[i] = {z[1], 0.0} end
  return out, full_shape
end

local function scaled(values, factor)
  for _, z in ipairs(values) do z[1], z[2] = z[1] * factor, z[2] * factor end
  return values
end

-- got (an array) against want ({re, im} pairs of shape): shape, dtype, and each element within
-- tol, where an FFT's rounding is bounded by eps times a few log2(points) times the sum of
-- the magnitudes it adds (taken as points times the largest input magnitude, in bound).
local function assert_close(got, want, want_shape, dtype, bound, what)
  assert.are.same(want_shape, got.shape, what)
  assert.are.equal(dtype, got.dtype, what)
  local single = dtype == "complex64" or dtype == "float32"
  local tol = (single and 1e-6 or 1e-13) * bound
  local h = R.get(got)
  for i, z in ipairs(want) do
    local v = h[i]
    local re, im = type(v) == "number" and v or v.re, type(v) == "number" and 0.0 or v.im
    if math.abs(re - z[1]) > tol or math.abs(im - z[2]) > tol then
      error(("%s at %d: got (%.9g, %.9g), expected (%.9g, %.9g), tolerance %.3g")
            :format(what, i, re, im, z[1], z[2], tol))
    end
  end
end

-- points times the largest magnitude among values
local function bound_of(values, points)
  local largest = 1e-300
  for _, z in ipairs(values) do largest = math.max(largest, math.abs(z[1]) + math.abs(z[2])) end
  return largest * math.max(points, 1) * math.log(points + 2, 2)
end

describe("gpu.fft", function()
  helpers.gpu_it("fft and ifft of one axis match the definition, every norm, n and axis", function()
    local s = gpu.Stream()
    for _, dtype in ipairs{"complex64", "complex128", "float32", "float64", "int32"} do
      for _, n in ipairs{1, 7, 12, 97, 1000} do
        local a, x = random_array({n}, dtype)
        local complex = (dtype == "complex64" or dtype == "float32") and "complex64" or "complex128"
        local forward_sums, inverse_sums = dft_axis(x, {n}, 1, n, -1), dft_axis(x, {n}, 1, n, 1)
        local function scaled_copy(values, factor)
          local copy = {}
          for i, z in ipairs(values) do copy[i] = {z[1] * factor, z[2] * factor} end
          return copy
        end
        for _, norm in ipairs{"backward", "ortho", "forward"} do
          local forward = norm == "backward" and 1 or norm == "ortho" and 1 / math.sqrt(n) or 1 / n
          assert_close(gpu.fft.fft(a, {norm = norm}), scaled_copy(forward_sums, forward), {n}, complex,
                       bound_of(x, n) * forward, ("fft %s[%d] %s"):format(dtype, n, norm))
          local inverse = norm == "backward" and 1 / n or norm == "ortho" and 1 / math.sqrt(n) or 1
          assert_close(gpu.fft.ifft(a, {norm = norm, stream = s}), scaled_copy(inverse_sums, inverse), {n},
                       complex, bound_of(x, n) * inverse, ("ifft %s[%d] %s"):format(dtype, n, norm))
        end
      end
    end
    -- along each axis of a 3-d array, a transposed view among them, cropped and padded
    local a, x = random_array({4, 6, 5}, "complex128")
    local t = a:transpose({3, 1, 2})                       -- 5 x 4 x 6
    local tx = {}
    for i = 0, 4 do for j = 0, 3 do for k = 0, 5 do tx[#tx + 1] = x[(j * 6 + k) * 5 + i + 1] end end end
    for _, case in ipairs{{a, x, {4, 6, 5}}, {t, tx, {5, 4, 6}}} do
      local arr, values, shape = case[1], case[2], case[3]
      for axis = 1, 3 do
        for _, n in ipairs{shape[axis], shape[axis] - 2, shape[axis] + 3} do
          local want, want_shape = dft_axis(values, shape, axis, n, -1)
          assert_close(gpu.fft.fft(arr, {axis = axis, n = n, stream = s}), want, want_shape, "complex128",
                       bound_of(values, n), ("fft axis %d n %d"):format(axis, n))
        end
      end
      local want, want_shape = dft_axis(values, shape, 2, shape[2], -1)
      assert_close(gpu.fft.fft(arr, {axis = -2}), want, want_shape, "complex128", bound_of(values, 6),
                   "fft axis -2")
    end
    s:synchronize()
  end)

  helpers.gpu_it("rfft, irfft, hfft and ihfft match the definitions, odd and even n", function()
    for _, dtype in ipairs{"float32", "float64"} do
      local complex = dtype == "float32" and "complex64" or "complex128"
      for _, n in ipairs{1, 2, 9, 16, 301} do
        local a, x = random_array({3, n}, dtype)
        local full, shape = dft_axis(x, {3, n}, 2, n, -1)
        local want, want_shape = keep_first(full, shape, 2, n // 2 + 1)
        assert_close(gpu.fft.rfft(a), want, want_shape, complex, bound_of(x, n), ("rfft %s[%d]"):format(dtype, n))
        -- ihfft: the conjugate of rfft over n
        local conj = {}
        for i, z in ipairs(want) do conj[i] = {z[1] / n, -z[2] / n} end
        assert_close(gpu.fft.ihfft(a), conj, want_shape, complex, bound_of(x, n) / n,
                     ("ihfft %s[%d]"):format(dtype, n))
      end
      -- irfft from random half spectra (imaginary parts where NumPy ignores them too), its n
      -- default (2 (m - 1)), odd, cropping and padding; hfft: irfft of the conjugate times n
      for _, m in ipairs{2, 5, 9, 64} do
        local c, cx = random_array({2, m}, complex)
        for _, n in ipairs{2 * (m - 1), 2 * m - 1, m, 2 * m + 6} do
          local want, want_shape = irfft_axis(cx, {2, m}, 2, n)
          scaled(want, 1 / n)
          local opts = n ~= 2 * (m - 1) and {n = n} or nil
          assert_close(gpu.fft.irfft(c, opts), want, want_shape, dtype, bound_of(cx, n) / n,
                       ("irfft %s m %d n %d"):format(dtype, m, n))
          local conj = {}
          for i, z in ipairs(cx) do conj[i] = {z[1], -z[2]} end
          local h = irfft_axis(conj, {2, m}, 2, n)
          assert_close(gpu.fft.hfft(c, opts), h, want_shape, dtype, bound_of(cx, n),
                       ("hfft %s m %d n %d"):format(dtype, m, n))
        end
        -- irfft leaves its input alone (cuFFT's C2R overwrites what it is given)
        local before = R.get(c)
        gpu.fft.irfft(c)
        local after = R.get(c)
        for i = 1, c.size do assert.are.equal(before[i], after[i]) end
      end
      -- a round trip
      local a, x = random_array({5, 33}, dtype)
      local back = gpu.fft.irfft(gpu.fft.rfft(a), {n = 33})
      assert_close(back, x, {5, 33}, dtype, bound_of(x, 33) / 33, "irfft(rfft(a))")
    end
  end)

  helpers.gpu_it("fft2, fftn and their real kin match axis-by-axis transforms", function()
    -- reference: the axes one after another (each a 1-d transform, which is what fftn is)
    local function reference(values, shape, axes, sizes, sign)
      for k, d in ipairs(axes) do values, shape = dft_axis(values, shape, d, sizes[k], sign) end
      return values, shape
    end
    local a, x = random_array({3, 4, 5}, "complex128")
    local cases = {   -- {function, options, axes, sizes}
      {gpu.fft.fft2, nil, {2, 3}, {4, 5}},
      {gpu.fft.fft2, {axes = {1, 3}}, {1, 3}, {3, 5}},
      {gpu.fft.fftn, nil, {1, 2, 3}, {3, 4, 5}},
      {gpu.fft.fftn, {axes = {3, 1}}, {3, 1}, {5, 3}},
      {gpu.fft.fftn, {s = {6, 2}}, {2, 3}, {6, 2}},
      {gpu.fft.fftn, {s = {2, 7}, axes = {1, -1}}, {1, 3}, {2, 7}},
    }
    for i, case in ipairs(cases) do
      local want, shape = reference(x, {3, 4, 5}, case[3], case[4], -1)
      assert_close(case[1](a, case[2]), want, shape, "complex128", bound_of(x, product(case[4])), "case " .. i)
    end
    local points = 60
    local want, shape = reference(x, {3, 4, 5}, {1, 2, 3}, {3, 4, 5}, 1)
    assert_close(gpu.fft.ifftn(a), scaled(want, 1 / points), shape, "complex128", bound_of(x, points) / points,
                 "ifftn")
    want, shape = reference(x, {3, 4, 5}, {2, 3}, {4, 5}, 1)
    assert_close(gpu.fft.ifft2(a, {norm = "ortho"}), scaled(want, 1 / math.sqrt(20)), shape, "complex128",
                 bound_of(x, 20) / math.sqrt(20), "ifft2 ortho")
    -- five axes: cuFFT plans take three at most, so two turns
    local b, bx = random_array({2, 3, 2, 3, 2}, "complex64")
    want, shape = reference(bx, {2, 3, 2, 3, 2}, {1, 2, 3, 4, 5}, {2, 3, 2, 3, 2}, -1)
    assert_close(gpu.fft.fftn(b), want, shape, "complex64", bound_of(bx, 72), "fftn of 5 axes")
    -- the real transforms
    local r, rx = random_array({3, 4, 6}, "float64")
    local full
    full, shape = reference(rx, {3, 4, 6}, {1, 2, 3}, {3, 4, 6}, -1)
    want, shape = keep_first(full, shape, 3, 4)
    assert_close(gpu.fft.rfftn(r), want, shape, "complex128", bound_of(rx, 72), "rfftn")
    full, shape = reference(rx, {3, 4, 6}, {2, 3}, {4, 6}, -1)
    want, shape = keep_first(full, shape, 3, 4)
    assert_close(gpu.fft.rfft2(r), want, shape, "complex128", bound_of(rx, 24), "rfft2")
    local r5, r5x = random_array({2, 3, 2, 2, 4}, "float32")
    full, shape = reference(r5x, {2, 3, 2, 2, 4}, {1, 2, 3, 4, 5}, {2, 3, 2, 2, 4}, -1)
    want, shape = keep_first(full, shape, 5, 3)
    assert_close(gpu.fft.rfftn(r5), want, shape, "complex64", bound_of(r5x, 96), "rfftn of 5 axes")
    -- irfftn: the inverse over the other axes, then irfft along the last
    local c, cx = random_array({3, 4, 4}, "complex128")
    for _, s in ipairs{{3, 4, 6}, {3, 4, 7}, {2, 5, 5}} do
      local half
      half, shape = reference(cx, {3, 4, 4}, {1, 2}, {s[1], s[2]}, 1)
      want, shape = irfft_axis(half, shape, 3, s[3])
      local opts = {s = s}
      assert_close(gpu.fft.irfftn(c, opts), scaled(want, 1 / product(s)), shape, "float64",
                   bound_of(cx, product(s)) / product(s), "irfftn s " .. table.concat(s, "x"))
    end
    local c5, c5x = random_array({2, 2, 3, 2, 3}, "complex128")
    local half
    half, shape = reference(c5x, {2, 2, 3, 2, 3}, {1, 2, 3, 4}, {2, 2, 3, 2}, 1)
    want, shape = irfft_axis(half, shape, 5, 4)
    assert_close(gpu.fft.irfftn(c5), scaled(want, 1 / 96), shape, "float64", bound_of(c5x, 96) / 96,
                 "irfftn of 5 axes")
    half, shape = reference(cx, {3, 4, 4}, {2}, {4}, 1)
    want, shape = irfft_axis(half, shape, 3, 6)
    assert_close(gpu.fft.irfft2(c), scaled(want, 1 / 24), shape, "float64", bound_of(cx, 24) / 24, "irfft2")
  end)

  helpers.gpu_it("fftfreq, rfftfreq, fftshift and ifftshift are NumPy's", function()
    for _, n in ipairs{1, 8, 9} do
      for _, d in ipairs{1, 0.1} do
        local f, rf = R.get(gpu.fft.fftfreq(n, d)), R.get(gpu.fft.rfftfreq(n, d))
        local scale = 1.0 / (n * d)
        assert.are.equal(n, f.size)
        for i = 0, n - 1 do
          assert.are.equal((i < (n + 1) // 2 and i or i - n) * scale, f[i + 1])
        end
        assert.are.equal(n // 2 + 1, rf.size)
        for i = 0, n // 2 do assert.are.equal(i * scale, rf[i + 1]) end
      end
    end
    local a, values = R.generate(35, "int32", function() return math.random(-1000, 1000) end)
    local m = R.reshaped(a, {5, 7})
    local function shifted(row_shift, col_shift)
      local want = {}
      for i = 0, 4 do
        for j = 0, 6 do
          want[((i + row_shift) % 5) * 7 + (j + col_shift) % 7 + 1] = values[i * 7 + j + 1]
        end
      end
      return want
    end
    local function same(want, got, what)
      local h = R.get(got)
      for i = 1, #want do assert.are.equal(want[i], h[i], what) end
    end
    same(shifted(2, 3), gpu.fft.fftshift(m), "fftshift")
    same(shifted(-2, -3), gpu.fft.ifftshift(m), "ifftshift")
    same(shifted(0, 3), gpu.fft.fftshift(m, {axes = 2}), "fftshift axis 2")
    same(shifted(-2, 0), gpu.fft.ifftshift(m, {axes = {-2}}), "ifftshift axes {-2}")
    local v = R.get(gpu.fft.ifftshift(gpu.fft.fftshift(m)))
    for i = 1, 35 do assert.are.equal(values[i], v[i]) end
  end)

  helpers.gpu_it("names bad arguments and freed arrays", function()
    local a = gpu.zeros({4, 6}, "float32")
    local c = gpu.zeros({4, 6}, "complex64")
    local cases = {
      {"bad argument #1 to 'fft' (GPUArray expected, got number)", gpu.fft.fft, 5},
      {"bad argument #2 to 'fft' (axis 3 is out of range for a 2-d array)", gpu.fft.fft, a, {axis = 3}},
      {"bad argument #2 to 'fft' (option 'n' must be a positive integer, got 0)", gpu.fft.fft, a, {n = 0}},
      {"bad argument #2 to 'ifft' (option 'norm' must be 'backward', 'ortho' or 'forward', got 'x')",
       gpu.fft.ifft, a, {norm = "x"}},
      {"bad argument #2 to 'fft' (unknown option 'axes')", gpu.fft.fft, a, {axes = {1}}},
      {"bad argument #1 to 'rfft' (real array expected, got complex64)", gpu.fft.rfft, c},
      {"bad argument #1 to 'irfft' (invalid number of data points (0))", gpu.fft.irfft, c:narrow(2, 1, 1)},
      {"bad argument #1 to 'fft2' (array of at least 2 dimensions expected, got 1)", gpu.fft.fft2, a:ravel()},
      {"bad argument #2 to 'fftn' (axis -2 is named twice in option 'axes')", gpu.fft.fftn, a, {axes = {1, -2}}},
      {"bad argument #2 to 'fftn' (option 's' must be a list of one size an axis)", gpu.fft.fftn, a,
       {s = {2}, axes = {1, 2}}},
      {"bad argument #1 to 'fft' (array of at least one dimension expected, got a 0-d array)", gpu.fft.fft,
       gpu.zeros({}, "float32")},
      {"bad argument #1 to 'fftfreq' (n must be a positive integer, got 0)", gpu.fft.fftfreq, 0},
      {"bad argument #2 to 'fftfreq' (sample spacing d must be a number, got string)", gpu.fft.fftfreq, 4, "x"},
      {"bad argument #2 to 'fftshift' (axis 3 is out of range for a 2-d array)", gpu.fft.fftshift, a, {axes = 3}},
    }
    for _, case in ipairs(cases) do helpers.assert_error(table.unpack(case)) end
    a:free()
    helpers.assert_error("bad argument #1 to 'fft' (array has been freed)", gpu.fft.fft, a)
    helpers.assert_error("bad argument #1 to 'fftshift' (array has been freed)", gpu.fft.fftshift, a)
  end)

  helpers.gpu_it("a plan is freed once, and refuses work after it", function()
    local plan = core.fft_plan("Z2Z", {8}, 2)
    assert.is_true(plan:work_size() >= 0)
    local x, y = gpu.zeros({2, 8}, "complex128"), gpu.zeros({2, 8}, "complex128")
    local work = plan:work_size() > 0 and gpu.mem_alloc(plan:work_size()) or nil
    plan:execute(x, y, false, work)
    local wrong_dtype, too_short = gpu.zeros({2, 8}, "float64"), gpu.zeros({8}, "complex128")
    helpers.assert_error("bad argument #2 to 'execute' (complex128 array expected, got float64)",
                         function() plan:execute(x, wrong_dtype, false, work) end)
    helpers.assert_error("bad argument #1 to 'execute' (contiguous array of 16 elements expected)",
                         function() plan:execute(too_short, y, false, work) end)
    helpers.assert_error("bad argument #4 to 'execute' (gpu.Buffer expected for the work area)",
                         function() plan:execute(x, y, false, "work") end)
    assert.matches("^gpu%.FFTPlan%(Z2Z, 16 elements in%)$", tostring(plan))
    plan:free()
    plan:free()
    assert.are.equal("gpu.FFTPlan(freed)", tostring(plan))
    helpers.assert_error("calling 'execute' on bad self (plan has been freed)",
                         function() plan:execute(x, y, false, work) end)
    helpers.assert_error("calling 'work_size' on bad self (plan has been freed)", function() plan:work_size() end)
    do local closing <close> = core.fft_plan("R2C", {4, 4}, 1) end
  end)

  helpers.gpu_it("a graph replays a captured transform, and refuses once its plan is freed", function()
    local plan = core.fft_plan("Z2Z", {64}, 3)
    local x, values = random_array({3, 64}, "complex128")
    local y = gpu.zeros({3, 64}, "complex128")
    local work = plan:work_size() > 0 and gpu.mem_alloc(plan:work_size()) or nil
    local s <close> = gpu.Stream()
    s:begin_capture()
    plan:execute(x, y, false, work, s)
    local graph <close> = s:end_capture()
    graph:launch(s)
    s:synchronize()
    local want, shape = dft_axis(values, {3, 64}, 2, 64, -1)
    assert_close(y, want, shape, "complex128", bound_of(values, 64), "the replayed transform")
    plan:free()
    helpers.assert_error("graph uses an FFT plan that has been freed", graph.launch, graph, s)
  end)
end)

describe("gpu.fft without a GPU", function()
  it("hands cuFFT each transform's plan, cached (tools/fakecufft.c)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.zeros({4, 6, 5}, "float32")
      gpu.fft.fft(a)
      gpu.fft.fft(a)                                  -- the same plan again
      gpu.fft.fft(a, {axis = 1, n = 8})
      gpu.fft.rfftn(a)
      gpu.fft.irfft2(a:astype("complex128"))
      gpu.fft.fftn(gpu.zeros({3, 4, 5, 6, 2}, "complex128"))
      gpu.fft.rfft(gpu.zeros({3, 5}, "float64"), {n = 9, stream = gpu.Stream()})   -- padded on a stream
      -- the fake computes single-axis complex transforms: a forward transform's values
      local x = gpu.to_gpu({gpu.complex(1, 2), gpu.complex(-0.5, 0.25), gpu.complex(3, 0)}, "complex128")
      local y = gpu.fft.fft(x):get()
      for i = 1, 3 do print(("value %.12f %.12f"):format(y[i].re, y[i].im)) end
      for n = 1, 17 do gpu.fft.fft(gpu.zeros({n + 20}, "complex64")) end   -- past the plans kept
      print(gpu.fft.fftn(a):get().size, select(2, require("gpu.core").cufft_version()):match("fakecufft") ~= nil)
      local plan = require("gpu.core").fft_plan("C2C", {4}, 1)      -- the fake's plans want 4096 bytes
      print("metatable", getmetatable(plan) == gpu.FFTPlan, gpu.FFTPlan.__name)
      local z = gpu.zeros({4}, "complex64")
      print(pcall(function() plan:execute(z, z, false) end))
      print(pcall(function() plan:execute(z, z, false, gpu.mem_alloc(100)) end))
    ]])
    assert(ok, out)
    local plans = {}
    for line in out:gmatch("fakecufft: plan (%u2%u [%dx]+ batch %d+)\n") do plans[#plans + 1] = line end
    assert.are.same({"C2C 5 batch 24", "C2C 8 batch 30", "R2C 4x6x5 batch 1", "Z2D 6x8 batch 4",
                     "Z2Z 5x6x2 batch 12", "Z2Z 3x4 batch 60", "D2Z 9 batch 3", "Z2Z 3 batch 1"},
                    {table.unpack(plans, 1, 8)})
    assert.are.equal(8 + 17 + 2, #plans)
    local _, execs = out:gsub("fakecufft: exec C2C forward\n", "")
    assert.are.equal(3 + 17 + 1, execs)
    -- 1 + 2i, -0.5 + 0.25i, 3 by the definition
    local want = {{3.5, 2.25}, {}, {}}
    local x = {{1, 2}, {-0.5, 0.25}, {3, 0}}
    for k = 0, 2 do
      local re, im = 0, 0
      for j = 0, 2 do
        local angle = -2 * math.pi * ((j * k) % 3) / 3
        re = re + x[j + 1][1] * math.cos(angle) - x[j + 1][2] * math.sin(angle)
        im = im + x[j + 1][1] * math.sin(angle) + x[j + 1][2] * math.cos(angle)
      end
      want[k + 1] = {re, im}
    end
    for k = 1, 3 do
      assert.truthy(out:find(("value %.12f %.12f\n"):format(want[k][1], want[k][2]), 1, true), out)
    end
    assert.truthy(out:find("120\ttrue\n", 1, true), out)
    assert.truthy(out:find("metatable\ttrue\tgpu.FFTPlan\n", 1, true), out)
    assert.truthy(out:find("bad argument #4 to 'execute' (work area of 4096 bytes expected)\n", 1, true), out)
    assert.truthy(out:find("bad argument #4 to 'execute' (work area of 4096 bytes or more in the plan's "
                           .. "context expected)\n", 1, true), out)
    local _, destroyed = out:gsub("fakecufft: plan destroyed\n", "")
    assert.are.equal(#plans, destroyed)     -- the ones evicted, then the rest when the state closed
  end)

  it("names a failed plan's cuFFT result", function()
    local out = helpers.run_with_fakes([[
      local gpu = require "gpu"
      print(pcall(gpu.fft.fft, gpu.zeros({8}, "complex64")))
    ]], {FAKE_CUFFT_PLAN = "fail"})
    assert.truthy(out:find("false\tcufftMakePlanMany64: CUFFT_INVALID_SIZE (a transform size is not supported)",
                           1, true), out)
  end)
end)
