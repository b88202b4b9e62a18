-- gpuarray.matmul: NumPy's matrix products, checked against products computed in Lua.
local helpers = require "helpers"
local gpu = helpers.gpu
local promote = require "gpu.promote"
local matmul = require "gpu.matmul"
local core = require "gpu.core"
local layouts = require "matrix_layouts"
local A = require "array_reference"

local function upload(values, dtype, shape)
  local a = gpu.to_gpu(gpu.host.from_table(values, dtype))
  return shape and a:reshape(shape) or a
end

local function f16(x) return gpu.float16(x).value end

-- Random elements of dtype that the reference can check exactly or tightly: 16-bit floats
-- on a grid of 1/64 (their sums are exact in float), wide integers whose products wrap.
local function random_values(dtype, count)
  local v = {}
  for i = 1, count do
    local x
    if dtype == "bool" then x = math.random() < 0.6
    elseif dtype == "float16" or dtype == "bfloat16" then x = math.random(-64, 64) / 64
    elseif dtype == "float32" then x = A.f32(math.random() * 2 - 1)
    elseif dtype == "float64" then x = math.random() * 2 - 1
    elseif dtype == "complex64" then x = gpu.complex(A.f32(math.random() * 2 - 1), A.f32(math.random() * 2 - 1))
    elseif dtype == "complex128" then x = gpu.complex(math.random() * 2 - 1, math.random() * 2 - 1)
    elseif dtype == "int8" then x = math.random(-128, 127)
    elseif dtype == "uint64" then x = math.random(0, 1 << 40) * 977 + math.random(0, 976)
    elseif dtype == "uint8" then x = math.random(0, 255)
    else x = math.random(-1000, 1000) end
    v[i] = x
  end
  return v
end

-- C = A B for row-major a (n x k) and b (k x m) values, as dtype out; also the sums of
-- |a b| for each element (the scale of a float result's rounding).
local function reference(av, bv, n, k, m, out)
  local kind = promote.kind(out)
  local c, scale = {}, {}
  for i = 1, n do
    for j = 1, m do
      local sum, abs = (kind == "f" or kind == "c") and 0.0 or 0, 0.0
      if kind == "b" then sum = false elseif kind == "c" then sum = gpu.complex(0, 0) end
      for l = 1, k do
        local x, y = av[(i - 1) * k + l], bv[(l - 1) * m + j]
        if kind == "b" then sum = sum or (x and y)
        else
          if type(x) == "boolean" then x = x and 1 or 0 end
          if type(y) == "boolean" then y = y and 1 or 0 end
          sum = sum + x * y
          local ax = type(x) == "table" and x:abs() or math.abs(x)
          local ay = type(y) == "table" and y:abs() or math.abs(y)
          abs = abs + ax * ay
        end
      end
      if kind == "i" or kind == "u" then sum = A.wrap(out, sum) end
      if out == "float16" then sum = f16(sum) elseif out == "bfloat16" then sum = gpu.bfloat16(sum).value end
      c[#c + 1], scale[#scale + 1] = sum, abs
    end
  end
  return c, scale
end

-- Relative to the sum of |a b|: k roundings of the unit roundoff at most, for k up to 70.
local rtol = {float32 = 2 ^ -17, complex64 = 2 ^ -16, float64 = 2 ^ -45, complex128 = 2 ^ -44}

-- rel, where given, replaces rtol (long sums round more often)
local function check(got, want, scale, out, what, rel)
  for i = 1, #want do
    local g, w = got[i], want[i]
    local tol = (rel or rtol[out] or 0) * scale[i]
    if promote.kind(out) == "c" then
      assert(math.abs(g.re - w.re) <= tol and math.abs(g.im - w.im) <= tol,
             ("%s #%d: got %s, expected %s"):format(what, i, tostring(g), tostring(w)))
    elseif tol > 0 then
      assert(math.abs(g - w) <= tol, ("%s #%d: got %.17g, expected %.17g"):format(what, i, g, w))
    else
      assert(g == w, ("%s #%d: got %s, expected %s"):format(what, i, tostring(g), tostring(w)))
    end
  end
end

-- Checks elements of the n x m product h (a HostArray) of row-major av and bv: every element
-- of the last rows and columns, and random ones elsewhere.
local function check_sampled(h, av, bv, n, k, m, dtype, what)
  local positions = {}
  for i = math.max(n - 2, 1), n do for j = 1, m, 7 do positions[#positions + 1] = {i, j} end end
  for j = math.max(m - 2, 1), m do for i = 1, n, 7 do positions[#positions + 1] = {i, j} end end
  for _ = 1, 2000 do positions[#positions + 1] = {math.random(1, n), math.random(1, m)} end
  for _, pos in ipairs(positions) do
    local i, j = pos[1], pos[2]
    local row, column = {}, {}
    for l = 1, k do row[l], column[l] = av[(i - 1) * k + l], bv[(l - 1) * m + j] end
    local want, scale = reference(row, column, 1, k, 1, dtype)
    check({h[(i - 1) * m + j]}, want, scale, dtype, ("%s at %d, %d"):format(what, i, j))
  end
end

-- Random row-major n x k and k x m values of dtypes ta and tb, and arrays of them; a bool a
-- mostly false, so that sums of products can come out false.
local function operands(ta, tb, n, k, m)
  local av, bv = random_values(ta, n * k), random_values(tb, k * m)
  if ta == "bool" then
    for i = 1, n * k do av[i] = av[i] and math.random() < 0.002 end
  end
  return av, bv, upload(av, ta, {n, k}), upload(bv, tb, {k, m})
end

local flat = helpers.flat

describe("matmul (CPU: NVRTC only)", function()
  it("compiles for every result dtype and mixed inputs", function()
    local pairs_ = {{"float32", "float32"}, {"float64", "int32"}, {"float16", "float16"},
                    {"bfloat16", "float32"}, {"int8", "int8"}, {"uint64", "int64"}, {"bool", "bool"},
                    {"complex64", "float32"}, {"complex128", "int16"}, {"uint8", "bool"}}
    local sources = {}
    for _, p in ipairs(pairs_) do
      local out = promote.promote_types(p[1], p[2])
      sources[#sources + 1] = matmul.source(p[1], p[2], out, 4)
      if promote.kind(out) ~= "c" then sources[#sources + 1] = matmul.source(p[1], p[2], out, 8) end
    end
    for _, p in ipairs(pairs_) do
      sources[#sources + 1] = matmul.matvec_source(p[1], p[2], promote.promote_types(p[1], p[2]))
    end
    for _, src in ipairs(sources) do
      assert.is_true(#gpu.compile(src, {target = "ptx", no_extern_c = true}) > 0)
    end
    -- float64 and complex128 on tensor cores: sm_80's mma, sm_90's
    for _, case in ipairs{{"float64", "float32", 4}, {"float64", "float32", 8},
                          {"complex128", "float64", 4}} do
      for rows, arch in pairs{[8] = "compute_80", [16] = "compute_90"} do
        local src = matmul.source(case[1], case[2], case[1], case[3], rows)
        assert.is_true(#gpu.compile(src, {target = "ptx", no_extern_c = true, arch = arch}) > 0)
      end
    end
    -- float16 and bfloat16 on tensor cores (mma.m16n8k16 from sm_80 on); not mixed ones
    for _, dtype in ipairs{"float16", "bfloat16"} do
      for _, per_thread in ipairs{4, 8} do
        local src = matmul.source(dtype, dtype, dtype, per_thread, 16)
        assert.is_true(#gpu.compile(src, {target = "ptx", no_extern_c = true, arch = "compute_80"}) > 0)
      end
    end
    assert.has_error(function() matmul.source("float16", "bfloat16", "float32", 8, 16) end)
  end)

  it("chooses a kernel by the shapes and by which operand runs along k", function()
    local f32, f64, i8 = 4, 8, 1                             -- itemsizes
    local function choice(...) return {matmul.kernel_for(...)} end
    -- n, k, m; a's itemsize and byte strides (row, along k); b's (along k, column)
    assert.are.same({"matvec"}, choice(1, 500, 300, f32, 2000, 4, f32, 1200, 4))
    assert.are.same({"matvec"}, choice(300, 500, 1, f32, 2000, 4, f32, 4, 4))
    assert.are.same({"small"}, choice(8, 8, 8, f32, 32, 4, f32, 32, 4))
    assert.are.same({"small"}, choice(32, 256, 32, f32, 1024, 4, f32, 128, 4))
    assert.are.same({"tile"}, choice(32, 257, 33, f32, 1028, 4, f32, 132, 4))
    -- a few columns: a row-major a runs along k, a transposed one across its rows
    assert.are.same({"narrow", "a"}, choice(8192, 8192, 4, f32, 32768, 4, f32, 16, 4))
    assert.are.same({"narrow", "a"}, choice(300, 300, 8, f64, 2400, 8, f64, 64, 8))
    assert.are.same({"across", "a"}, choice(8192, 8192, 4, f32, 4, 32768, f32, 16, 4))
    assert.are.same({"narrow", "a"}, choice(8192, 8192, 16, f32, 32768, 4, f32, 64, 4))
    assert.are.same({"tile"}, choice(8192, 8192, 17, f32, 32768, 4, f32, 68, 4))
    assert.are.same({"across", "b"}, choice(8, 8192, 8192, f32, 32768, 4, f32, 32768, 4))
    assert.are.same({"tile"}, choice(9, 8192, 8192, f32, 32768, 4, f32, 32768, 4))
    -- a few rows: a transposed b runs along k, a row-major one across its columns
    assert.are.same({"narrow", "b"}, choice(4, 8192, 8192, f32, 32768, 4, f32, 4, 32768))
    assert.are.same({"across", "b"}, choice(4, 8192, 8192, f32, 32768, 4, f32, 32768, 4))
    assert.are.same({"tile"}, choice(4, 8192, 8192, f32, 32768, 4, f32, 65536, 8))
    -- a row-major a with a few columns, but k shorter than a warp's runs (32 of 16 bytes)
    assert.are.same({"tile"}, choice(4000, 127, 4, f32, 508, 4, f32, 16, 4))
    assert.are.same({"tile"}, choice(4000, 511, 4, i8, 511, 1, i8, 4, 1))
    assert.are.same({"narrow", "a"}, choice(4000, 512, 4, i8, 512, 1, i8, 4, 1))
  end)

  it("names a bad argument", function()
    helpers.assert_error("bad argument #1 to 'matmul' (GPUArray expected, got number)",
                         gpu.gpuarray.matmul, 1, 2)
    helpers.assert_error("bad argument #1 to 'blas_matmul' (gpu.GPUArray expected, got nil)",
                         function() core.blas_matmul(nil) end)
  end)

  it("finds cuBLAS where it finds NVRTC, or says why not", function()
    local version, path = gpu.cublas_version()
    if version then
      assert.is_true(math.type(version) == "integer" and version >= 120000, tostring(version))
      assert.matches("libcublas", path)
    else
      assert.matches("cuBLAS", path)
    end
    local show = 'local gpu = require "gpu"; print(gpu.cublas_version())'
    assert.are.equal("nil\tcuBLAS is turned off (GPU_CUBLAS_DISABLE=1)\n",
                     helpers.run_lua(show, {GPU_CUBLAS_DISABLE = "1"}))
    assert.matches("^nil\tGPU_CUBLAS_LIBRARY=/nonexistent/libcublas%.so%.13 cannot be loaded: ",
                   (helpers.run_lua(show, {GPU_CUBLAS_LIBRARY = "/nonexistent/libcublas.so.13"})))
    assert.matches("^nil\t/%S*libc%.so%.6 lacks cublasGetProperty\n$",
                   (helpers.run_lua(show, {GPU_CUBLAS_LIBRARY = "libc.so.6"})))
  end)

  local with_fakes = helpers.run_with_fakes

  it("hands cuBLAS each layout as it reads them (tools/fakecublas.c computes on the host)", function()
    local out, ok = with_fakes(assert(io.open("spec/fake_blas_worker.lua")):read("a"))
    assert(ok, out)
    for _, dtype in ipairs{"float32", "float64"} do
      for _, case in ipairs{"plain a plain b", "transposed a wide b", "wide a transposed b",
                            "transposed a transposed b"} do
        assert.truthy(out:find(("ok %s %s\n"):format(dtype, case), 1, true), out)
      end
    end
    for _, dtype in ipairs{"float32", "float64"} do
      for _, how in ipairs{"plain", "transposed"} do
        for _, case in ipairs{"%s %s a v", "%s v %s b"} do
          assert.truthy(out:find("ok " .. case:format(dtype, how) .. "\n", 1, true), out)
        end
      end
    end
    for _, case in ipairs{"stacks", "broadcast b", "gpuarray.matmul", "a stack by a vector",
                          "version 130000"} do
      assert.truthy(out:find(case .. "\n", 1, true), out)
    end
    -- b^T times a^T, column-major: ops, m n k, leading dimensions, stack strides, stacks
    for _, line in ipairs{"N N 6 5 7 6 7 6 0 0 30 1", "T T 6 5 7 7 5 6 0 0 30 1",
                          "N T 6 5 7 9 5 6 0 0 30 1", "N N 6 5 7 6 7 6 42 35 30 6",
                          "N N 6 5 7 6 7 6 0 35 30 6",
                          "N T 1 40 7 1 40 1 0 0 40 1",      -- a transposed a by a vector
                          "N N 1 10 7 1 7 1 0 70 10 4"} do   -- a stack by one vector
      assert.truthy(out:find("fakecublas: gemm " .. line .. "\n", 1, true), out)
    end
    local _, destroyed = out:gsub("fakecublas: handle destroyed", "")
    assert.are.equal(1, destroyed)          -- when the state closed
  end)

  it("repeats a 2-d product's launch by its key until a limit changes (stand-in driver)", function()
    local probe = [[
      local gpu = require "gpu"
      local core, matmul = require "gpu.core", require "gpu.matmul"
      local choices, kernel_for = 0, matmul.kernel_for
      matmul.kernel_for = function(...) choices = choices + 1; return kernel_for(...) end
      local a, b = gpu.zeros({64, 64}, "float32"), gpu.zeros({64, 64}, "float32")
      local function count(f) local was = choices; f(); return choices - was end
      local mm = gpu.gpuarray.matmul
      print("first", count(function() mm(a, b) end), "again", count(function() mm(a, b) end))
      print("other arrays", count(function() mm(b, a) end))
      print("transposed", count(function() mm(a, b.T) end), count(function() mm(a, b.T) end))
      print("options", count(function() mm(a, b, {}) end))
      matmul.limits.small_k = matmul.limits.small_k
      print("limit written", count(function() mm(a, b) end), count(function() mm(a, b) end))
      gpu.fast_paths(false)
      print("fast paths off", count(function() mm(a, b) end))
      gpu.fast_paths(true)
      local function big() mm(gpu.zeros({600, 600}), gpu.zeros({600, 600})) end
      print("big", count(big), count(big))
      gpu.use_cublas(false)                 -- the kernels take it, but cuBLAS may come back
      print("cuBLAS off", count(big), count(big))
      gpu.use_cublas(true)
      print("cuBLAS on", count(big))
      print("keys", core.matrix_key(a, b) == core.matrix_key(b, a), core.matrix_key(a, b) ~= core.matrix_key(a, b.T),
            #core.matrix_key(a, b), core.matrix_key(a, gpu.zeros(64)), (core.matrix_key(a, "b")))
      b:free()
      print(pcall(mm, a, b))
    ]]
    local out, ok = helpers.run_with_fakes(probe)
    assert(ok, out)
    -- cuBLAS takes 600^3 in float64: no plan, a choice every time, with cuBLAS off as well
    for _, line in ipairs{"first\t1\tagain\t0", "other arrays\t0", "transposed\t1\t0", "options\t1",
                          "limit written\t1\t0", "fast paths off\t1", "big\t1\t1",
                          "cuBLAS off\t1\t1", "cuBLAS on\t1",
                          "keys\ttrue\ttrue\t35\tnil\tnil",
                          "bad argument #2 to 'matmul' (array has been freed)"} do
      assert.truthy(out:find(line .. "\n", 1, true), out)
    end
    local _, gemms = out:gsub("fakecublas: gemm N N 600 600 600", "")
    assert.are.equal(3, gemms)              -- big twice, then again once cuBLAS is back
  end)

  it("leaves products to the kernels where cuBLAS cannot take them, and names its failures", function()
    local probe = [[
      local gpu = require "gpu"
      local a = gpu.zeros({4, 4}, "float64")
      print(pcall(require("gpu.core").blas_matmul, gpu.empty({4, 4}, "float64"), a, a))
    ]]
    local out = with_fakes(probe, {FAKE_CUBLAS_CREATE = "fail"})
    assert.are.equal("true\tfalse\n", out)              -- no handle: no product, nothing to destroy
    out = with_fakes(probe, {FAKE_CUBLAS_GEMM = "alloc"})
    assert.matches("^fakecublas: gemm N N 4 4 4 4 4 4 0 0 16 1\ntrue\tfalse\nfakecublas: handle destroyed\n$", out)
    out = with_fakes(probe, {FAKE_CUBLAS_GEMM = "fail"})
    assert.truthy(out:find("false\tcublasGemmStridedBatchedEx: CUBLAS_STATUS_EXECUTION_FAILED (the GPU "
                           .. "program failed to execute)\n", 1, true), out)
    -- a bad stream: the same error whether cuBLAS would have taken the product or not
    out = with_fakes([[
      local gpu = require "gpu"
      local limits, a = require("gpu.matmul").limits, gpu.zeros({40, 40}, "float32")
      for _, work in ipairs{2 ^ 40, 0} do
        limits.cublas_work_float32 = work
        print(select(2, pcall(gpu.gpuarray.matmul, a, a, {stream = 5})))
      end
    ]])
    local first, second = out:match("^([^\n]+)\n([^\n]+)\n")
    assert.truthy(first and first:find("bad argument #3 to 'matmul' (option 'stream' must be a gpu.Stream, got number)", 1, true), out)
    assert.are.equal(first, second)
    out = with_fakes('print(require("gpu").cublas_version())', {FAKE_CUBLAS_MAJOR = "11"})
    assert.matches("^nil\t/%S+/build/libfakecublas%.so is cuBLAS 11%.0; lua%-gpu needs 12 or newer\n$", out)
  end)

  it("turns cuBLAS off and on for a Lua state", function()
    helpers.assert_switch(function(on) local was = gpu.use_cublas(on); return was end, "use_cublas")
  end)

  it("hands big products to cuBLAS, and keeps small ones and those by a few columns", function()
    assert.is_false(matmul.takes_cublas("small", 32, 256, 32, 1, "float16"))
    assert.is_false(matmul.takes_cublas("matvec", 1, 2048, 2047, 1, "float32"))
    assert.is_true(matmul.takes_cublas("matvec", 2048, 2048, 1, 1, "float32"))
    assert.is_true(matmul.takes_cublas("matvec", 1, 256, 256, 64, "float16"))     -- a stack's
    assert.is_false(matmul.takes_cublas("tile", 255, 256, 256, 1, "float64"))
    assert.is_true(matmul.takes_cublas("tile", 256, 256, 256, 1, "float64"))
    assert.is_true(matmul.takes_cublas("tile", 256, 256, 256, 1, "bfloat16"))
    assert.is_false(matmul.takes_cublas("tile", 256, 256, 256, 1, "float32"))
    assert.is_true(matmul.takes_cublas("tile", 512, 512, 512, 1, "float32"))
    assert.is_true(matmul.takes_cublas("tile", 64, 64, 64, 64, "complex64"))   -- a stack's work
    assert.is_false(matmul.takes_cublas("narrow", 8192, 8192, 8, 1, "float32"))
    assert.is_true(matmul.takes_cublas("narrow", 8192, 8192, 9, 1, "float32"))
    assert.is_true(matmul.takes_cublas("across", 16, 8192, 8192, 1, "float64"))
    -- a long k under few tiles (or rows) of out, which the kernels would not spread (an H200's
    -- 132 multiprocessors, without asking a device)
    local reduction = require "gpu.reduction"
    local multiprocessors = reduction.multiprocessors
    reduction.multiprocessors = function() return 132 end
    assert.is_true(matmul.takes_cublas("tile", 64, 32768, 32, 1, "float32"))
    assert.is_false(matmul.takes_cublas("tile", 64, 1024, 32, 1, "float32"))
    reduction.multiprocessors = multiprocessors
    assert.is_true(matmul.takes_cublas("narrow", 64, 32768, 4, 1, "float32"))
    assert.is_false(matmul.takes_cublas("narrow", 64, 1024, 4, 1, "float32"))
    assert.is_false(matmul.takes_cublas("narrow", 2048, 32768, 4, 1, "float32"))
  end)
end)

describe("matmul", function()
  helpers.gpu_it("matches Lua for every kind of dtype and for sizes off the 64 x 64 tiles", function()
    local cases = {
      {"float32", "float32", 17, 33, 5}, {"float32", "float32", 40, 64, 31}, {"float64", "float64", 1, 1, 1},
      {"float64", "float64", 19, 70, 23}, {"float16", "float16", 9, 20, 18}, {"int32", "int32", 16, 16, 16},
      {"int8", "int8", 7, 40, 3}, {"uint64", "uint64", 5, 9, 6}, {"bool", "bool", 12, 8, 20},
      {"complex64", "complex64", 6, 21, 4}, {"int32", "float32", 11, 13, 17}, {"int16", "uint8", 3, 5, 2},
      {"float32", "float32", 130, 70, 67}, {"float64", "float64", 65, 17, 129}, {"int64", "int8", 64, 64, 64},
      {"complex128", "float64", 66, 20, 70}, {"complex128", "complex128", 33, 45, 70},
    }
    -- the small ones through the small-matrix kernel, then all through the tile kernel
    local limit = matmul.limits.small_elements
    local ok, err = pcall(function()
      for _, small in ipairs{limit, 0} do
        matmul.limits.small_elements = small
        for _, c in ipairs(cases) do
          local ta, tb, n, k, m = table.unpack(c)
          local out = promote.promote_types(ta, tb)
          local av, bv = random_values(ta, n * k), random_values(tb, k * m)
          local r = gpu.gpuarray.matmul(upload(av, ta, {n, k}), upload(bv, tb, {k, m}))
          assert.are.equal(out, r.dtype)
          assert.are.same({n, m}, r.shape)
          local want, scale = reference(av, bv, n, k, m, out)
          check(flat(r:get()), want, scale, out, ("%s %s (%d, %d, %d), small %d"):format(ta, tb, n, k, m, small))
        end
      end
    end)
    matmul.limits.small_elements = limit
    assert(ok, err)
  end)

  helpers.gpu_it("repeats a product's launch on new operands of its geometry, views included", function()
    -- each case thrice on fresh values: the first call plans, the others take the plan
    local cases = {{"float32", "float32", 20, 30, 40}, {"float32", "float32", 64, 64, 64},
                   {"float64", "int32", 70, 33, 65}, {"int8", "int8", 16, 50, 9},
                   {"complex64", "complex64", 9, 40, 70}}
    for _, c in ipairs(cases) do
      local ta, tb, n, k, m = table.unpack(c)
      local out = promote.promote_types(ta, tb)
      for round = 1, 3 do
        local av, bv, a, b = operands(ta, tb, n, k, m)
        local want, scale = reference(av, bv, n, k, m, out)
        local what = ("%s %s (%d, %d, %d) round %d"):format(ta, tb, n, k, m, round)
        check(flat(gpu.gpuarray.matmul(a, b):get()), want, scale, out, what)
        -- b read through its transpose's transpose, and a from a row past a slice's start
        local bt = upload(bv, tb, {k, m}):transpose():copy():transpose()
        local padded = random_values(ta, k)
        table.move(av, 1, n * k, k + 1, padded)
        local wide = upload(padded, ta, {n + 1, k}):slice(2, n + 1)
        check(flat(gpu.gpuarray.matmul(wide, bt):get()), want, scale, out, what .. ", views")
      end
    end
  end)

  helpers.gpu_it("uses 8 x 8 elements a thread for large products, off the 128 x 128 tiles", function()
    -- enough tiles that matmul picks its big ones, ending part-way into the last tile (64-bit
    -- integer accumulators keep 4 x 4)
    local side = math.ceil(math.sqrt(require("gpu.reduction").multiprocessors()))
    local n, k, m = 128 * (side - 1) + 37, 40, 128 * (side - 1) + 100
    for _, dtype in ipairs{"float32", "float64", "int64", "int32", "int8", "float16", "bool"} do
      assert.are.equal(dtype == "int64" and 4 or 8, matmul.per_thread(dtype, n, m, 1))
      local av, bv = random_values(dtype, n * k), random_values(dtype, k * m)
      local h = gpu.gpuarray.matmul(upload(av, dtype, {n, k}), upload(bv, dtype, {k, m})):get()
      check_sampled(h, av, bv, n, k, m, dtype, ("%s (%d, %d)"):format(dtype, n, m))
    end
  end)

  helpers.gpu_it("multiplies float16 and bfloat16 matrices on the tensor cores, in any layout", function()
    -- values on a grid of 1/64: products and their sums are exact in float, so each element is
    -- its exact sum rounded once to the result dtype, on the tensor cores as on the CUDA cores
    local major = gpu.get_device():compute_capability()
    assert.are.equal(major >= 8 and 16 or false, matmul.tensor_cores("float16", "float16", "float16"))
    assert.are.equal(major >= 8 and 16 or false, matmul.tensor_cores("bfloat16", "bfloat16", "bfloat16"))
    assert.is_false(matmul.tensor_cores("float16", "bfloat16", "float32"))
    local side = math.ceil(math.sqrt(require("gpu.reduction").multiprocessors()))
    local big = 128 * (side - 1) + 37                    -- 128 x 128 tiles, the last one partly
    for _, c in ipairs{{"float16", 130, 70, 67}, {"bfloat16", 65, 33, 129}, {"float16", big, 40, big + 63},
                       {"bfloat16", big, 24, big}, {"bfloat16", 3, 1000, 70}} do
      local dtype, n, k, m = table.unpack(c)
      local av, bv = random_values(dtype, n * k), random_values(dtype, k * m)
      local at, bt = {}, {}                              -- the same, column-major
      for i = 1, n do for l = 1, k do at[(l - 1) * n + i] = av[(i - 1) * k + l] end end
      for l = 1, k do for j = 1, m do bt[(j - 1) * k + l] = bv[(l - 1) * m + j] end end
      local a, b = upload(av, dtype, {n, k}), upload(bv, dtype, {k, m})
      local a_t, b_t = upload(at, dtype, {k, n}).T, upload(bt, dtype, {m, k}).T
      for _, operands_ in ipairs{{a, b, "row-major"}, {a_t, b, "a transposed"}, {a, b_t, "b transposed"}} do
        local r = gpu.gpuarray.matmul(operands_[1], operands_[2])
        assert.are.equal(dtype, r.dtype)
        check_sampled(r:get(), av, bv, n, k, m, dtype, ("%s %s (%d, %d, %d)"):format(dtype, operands_[3], n, k, m))
      end
    end
  end)

  helpers.gpu_it("stages transposed operands in small and big tiles", function()
    -- views whose adjacent elements run along the other axis than a row-major matrix's
    local side = math.ceil(math.sqrt(require("gpu.reduction").multiprocessors()))
    for _, size in ipairs{{70, 37, 45}, {128 * (side - 1) + 37, 40, 128 * (side - 1) + 100}} do
      local n, k, m = table.unpack(size)
      local at, bt = random_values("float32", k * n), random_values("float32", m * k)
      local av, bv = {}, {}                                -- row-major a (n x k) and b (k x m)
      for i = 1, n do for l = 1, k do av[(i - 1) * k + l] = at[(l - 1) * n + i] end end
      for l = 1, k do for j = 1, m do bv[(l - 1) * m + j] = bt[(j - 1) * k + l] end end
      local a, b = upload(at, "float32", {k, n}).T, upload(bt, "float32", {m, k}).T
      local h = gpu.gpuarray.matmul(a, b):get()
      check_sampled(h, av, bv, n, k, m, "float32", ("transposed (%d, %d, %d)"):format(n, k, m))
      h = gpu.gpuarray.matmul(upload(av, "float32", {n, k}), b):get()
      check_sampled(h, av, bv, n, k, m, "float32", ("b transposed (%d, %d, %d)"):format(n, k, m))
    end
  end)

  helpers.gpu_it("multiplies float64 and complex128 as devices before sm_90 and sm_80 do", function()
    local tensor_cores = matmul.float64_tensor_cores
    local side = math.ceil(math.sqrt(require("gpu.reduction").multiprocessors()))
    local sizes = {
      float64 = {{19, 70, 23}, {128 * (side - 1) + 37, 40, 128 * (side - 1) + 100}},
      complex128 = {{19, 70, 23}, {130, 33, 70}},
    }
    for _, older in ipairs{8, false} do           -- mma.m8n8k4 (sm_80), the CUDA cores
      matmul.float64_tensor_cores = function() return older end
      local ok, err = pcall(function()
        for _, dtype in ipairs{"float64", "complex128"} do
          for _, size in ipairs(sizes[dtype]) do
            local n, k, m = table.unpack(size)
            local av, bv = random_values(dtype, n * k), random_values(dtype, k * m)
            local h = gpu.gpuarray.matmul(upload(av, dtype, {n, k}), upload(bv, dtype, {k, m})):get()
            check_sampled(h, av, bv, n, k, m, dtype, ("%s %s (%d, %d, %d)"):format(older, dtype, n, k, m))
          end
        end
      end)
      matmul.float64_tensor_cores = tensor_cores
      assert(ok, err)
    end
  end)

  helpers.gpu_it("reads views in place, broadcasts stacks, and drops the axes of 1-d operands", function()
    local n, k, m = 13, 18, 7
    -- a transposed a and every other column of b
    local at, bw = random_values("float64", k * n), random_values("float64", k * 2 * m)
    local a = upload(at, "float64", {k, n}).T
    local wide_b = upload(bw, "float64", {k, 2 * m})
    local b = gpu.GPUArray({k, m}, "float64", {gpudata = wide_b.gpudata, strides = {2 * m * 8, 16}})
    local av, bv = {}, {}
    for i = 1, n do for l = 1, k do av[#av + 1] = at[(l - 1) * n + i] end end
    for l = 1, k do for j = 1, m do bv[#bv + 1] = bw[(l - 1) * 2 * m + 2 * j - 1] end end
    local want, scale = reference(av, bv, n, k, m, "float64")
    check(flat(a:matmul(b):get()), want, scale, "float64", "views")
    -- 1-d operands: a row, a column, and two vectors (a 0-d inner product)
    local v = random_values("float64", k)
    local row = gpu.gpuarray.matmul(upload(v, "float64"), b)
    assert.are.same({m}, row.shape)
    local rw, rs = reference(v, bv, 1, k, m, "float64")
    check(flat(row:get()), rw, rs, "float64", "row")
    local col = gpu.gpuarray.matmul(a, upload(v, "float64"))
    assert.are.same({n}, col.shape)
    local cw, cs = reference(av, v, n, k, 1, "float64")
    check(flat(col:get()), cw, cs, "float64", "column")
    local dot = gpu.gpuarray.matmul(upload(v, "float64"), upload(v, "float64"))
    assert.are.same({}, dot.shape)
    local dw, ds = reference(v, v, 1, k, 1, "float64")
    check({dot:get()[1]}, dw, ds, "float64", "inner product")
    -- stacks: (2, 1, 3, 4) @ (5, 4, 2) -> (2, 5, 3, 2), each product checked on its own
    local sa, sb = random_values("float32", 2 * 3 * 4), random_values("float32", 5 * 4 * 2)
    local stacked = gpu.gpuarray.matmul(upload(sa, "float32", {2, 1, 3, 4}), upload(sb, "float32", {5, 4, 2}))
    assert.are.same({2, 5, 3, 2}, stacked.shape)
    local h = flat(stacked:get())
    for p = 1, 2 do
      for q = 1, 5 do
        local am, bm = {}, {}
        for i = 1, 12 do am[i] = sa[(p - 1) * 12 + i] end
        for i = 1, 8 do bm[i] = sb[(q - 1) * 8 + i] end
        local w, s = reference(am, bm, 3, 4, 2, "float32")
        local first = ((p - 1) * 5 + (q - 1)) * 6
        check({table.unpack(h, first + 1, first + 6)}, w, s, "float32", ("stack %d, %d"):format(p, q))
      end
    end
    -- an empty inner dimension gives zeros; an empty outer one an empty result
    assert.are.same({{0, 0}, {0, 0}}, gpu.gpuarray.matmul(gpu.zeros({2, 0}, "int32"), gpu.zeros({0, 2}, "int32")):get():totable())
    assert.are.same({0, 3}, gpu.gpuarray.matmul(gpu.zeros({0, 2}), gpu.zeros({2, 3})).shape)
  end)

  helpers.gpu_it("multiplies by a vector in one pass, whichever axis is adjacent in memory", function()
    local n, k, m = 300, 200, 77
    local av, vv, bv = random_values("float32", n * k), random_values("float32", k), random_values("float32", k * m)
    local at, bt = {}, {}                              -- the same matrices stored transposed
    for i = 1, n do for l = 1, k do at[(l - 1) * n + i] = av[(i - 1) * k + l] end end
    for l = 1, k do for j = 1, m do bt[(j - 1) * k + l] = bv[(l - 1) * m + j] end end
    local v = upload(vv, "float32")
    local cw, cs = reference(av, vv, n, k, 1, "float32")
    -- a 4 bytes past 16-byte alignment, where rows cannot be read in 16-byte runs
    local shifted = upload({0, table.unpack(av)}, "float32")
    local misaligned = gpu.GPUArray({n, k}, "float32", {gpudata = shifted.gpudata:offset(4)})
    local rw, rs = reference(vv, bv, 1, k, m, "float32")
    for _, case in ipairs{
      {"a v", upload(av, "float32", {n, k}), v, cw, cs, {n}},
      {"a.T v", upload(at, "float32", {k, n}).T, v, cw, cs, {n}},
      {"misaligned a v", misaligned, v, cw, cs, {n}},
      {"a (k x 1)", upload(av, "float32", {n, k}), v:reshape({k, 1}), cw, cs, {n, 1}},
      {"v b", v, upload(bv, "float32", {k, m}), rw, rs, {m}},
      {"v b.T", v, upload(bt, "float32", {m, k}).T, rw, rs, {m}},
      {"(1 x k) b", v:reshape({1, k}), upload(bv, "float32", {k, m}), rw, rs, {1, m}},
    } do
      local what, a, b, want, scale, shape = table.unpack(case)
      local r = gpu.gpuarray.matmul(a, b)
      assert.are.same(shape, r.shape)
      check(flat(r:get()), want, scale, "float32", what)
    end
  end)

  helpers.gpu_it("multiplies short rows by a vector, one to a few threads a row", function()
    local n = 70
    for _, dtype in ipairs{"float32", "float64"} do
      for _, k in ipairs{3, 7, 12, 20, 50} do
        local av, vv = random_values(dtype, n * k), random_values(dtype, k)
        local at = {}
        for i = 1, n do for l = 1, k do at[(l - 1) * n + i] = av[(i - 1) * k + l] end end
        local v = upload(vv, dtype)
        local want, scale = reference(av, vv, n, k, 1, dtype)
        local what = ("%s (%d, %d)"):format(dtype, n, k)
        check(flat(gpu.gpuarray.matmul(upload(av, dtype, {n, k}), v):get()), want, scale, dtype, what)
        check(flat(gpu.gpuarray.matmul(upload(at, dtype, {k, n}).T, v):get()), want, scale, dtype,
              what .. " transposed")
        local row = {table.unpack(av, 1, k)}            -- and an inner product of length k
        local w, sc = reference(row, vv, 1, k, 1, dtype)
        check({gpu.gpuarray.matmul(upload(row, dtype), v):get()[1]}, w, sc, dtype, what .. " inner")
      end
    end
  end)

  helpers.gpu_it("splits long rows of a matrix-vector product among blocks", function()
    -- rows of float64 and complex128 (and the float32 vector) in 16-byte runs, the float32
    -- one with 2 elements after its last run; the others' rows are not 16-byte aligned
    local k = 6002
    local reduction = require "gpu.reduction"
    assert.is_true(reduction.split_ranges(1, k, 12 * reduction.multiprocessors(), 4) > 1)
    for _, case in ipairs{{"float64", 3}, {"int32", 2}, {"float16", 5}, {"complex128", 4},
                          {"bool", 3}, {"float32", 1}, {"uint8", 9}} do
      local dtype, n = table.unpack(case)
      local av, vv = random_values(dtype, n * k), random_values(dtype, k)
      if dtype == "bool" then          -- mostly false, so that a row's any() can come out false
        for i = 1, n * k do av[i] = av[i] and math.random() < 0.002 end
        for i = 1, k do av[i] = false end
      end
      local r = gpu.gpuarray.matmul(upload(av, dtype, {n, k}), upload(vv, dtype))
      local want, scale = reference(av, vv, n, k, 1, dtype)
      local rel = ({float32 = k * 2 ^ -24, float64 = k * 2 ^ -53, complex128 = 2 * k * 2 ^ -53})[dtype]
      check(flat(r:get()), want, scale, dtype, ("%s (%d, %d)"):format(dtype, n, k), rel)
      if n == 1 then                   -- and the inner product of two vectors
        local dot = gpu.gpuarray.matmul(upload(av, dtype), upload(vv, dtype))
        assert.are.same({}, dot.shape)
        check({dot:get()[1]}, want, scale, dtype, "inner product", rel)
      end
    end
  end)

  helpers.gpu_it("multiplies stacks of small matrices one thread an element, any strides", function()
    local cases = {
      {"float32", "float32", 37, 8, 8, 8}, {"float64", "int32", 3, 3, 7, 5}, {"float16", "float16", 5, 16, 20, 12},
      {"int8", "int8", 9, 6, 9, 4}, {"uint64", "int64", 4, 5, 3, 6}, {"bool", "bool", 6, 7, 5, 3},
      {"complex64", "float32", 4, 4, 9, 4}, {"complex128", "complex128", 3, 5, 6, 2},
      {"float32", "float32", 2, 32, 256, 32}, {"float64", "float64", 1, 9, 2, 30},
    }
    for _, c in ipairs(cases) do
      local ta, tb, batches, n, k, m = table.unpack(c)
      local out = promote.promote_types(ta, tb)
      local what = ("%s %s %d x (%d, %d, %d)"):format(ta, tb, batches, n, k, m)
      assert.are.equal("small", matmul.kernel_for(n, k, m, 4, 4 * k, 4, 4, 4 * m, 4), what)
      local av, bv = random_values(ta, batches * n * k), random_values(tb, batches * k * m)
      -- b stored transposed for every other case: its columns adjacent in memory
      local b
      if #what % 2 == 0 then
        local bt = {}
        for p = 0, batches - 1 do
          for l = 1, k do for j = 1, m do bt[p * k * m + (j - 1) * k + l] = bv[p * k * m + (l - 1) * m + j] end end
        end
        b = upload(bt, tb, {batches, m, k}):transpose({1, 3, 2})
      else
        b = upload(bv, tb, {batches, k, m})
      end
      local h = flat(gpu.gpuarray.matmul(upload(av, ta, {batches, n, k}), b):get())
      for p = 0, batches - 1 do
        local w, sc = reference({table.unpack(av, p * n * k + 1, (p + 1) * n * k)},
                                {table.unpack(bv, p * k * m + 1, (p + 1) * k * m)}, n, k, m, out)
        check({table.unpack(h, p * n * m + 1, (p + 1) * n * m)}, w, sc, out, what .. (" #%d"):format(p + 1),
              k > 70 and k * 2 ^ -24 or nil)
      end
    end
    -- a stack broadcast against one matrix: (5, 4, 6) @ (6, 3)
    local av, bv = random_values("int32", 5 * 4 * 6), random_values("int32", 6 * 3)
    local h = flat(gpu.gpuarray.matmul(upload(av, "int32", {5, 4, 6}), upload(bv, "int32", {6, 3})):get())
    for p = 0, 4 do
      local w, sc = reference({table.unpack(av, p * 24 + 1, (p + 1) * 24)}, bv, 4, 6, 3, "int32")
      check({table.unpack(h, p * 12 + 1, (p + 1) * 12)}, w, sc, "int32", ("broadcast #%d"):format(p + 1))
    end
  end)

  helpers.gpu_it("multiplies by a few columns or rows through columns staged in shared memory", function()
    -- rows of the wide side adjacent along k: a row-major a (a few columns of b), or b
    -- transposed (a few rows of a); k past whole runs, whole chunks, and split among blocks
    local cases = {
      {"float32", "float32", 100, 1001, 3}, {"float32", "float32", 40, 2501, 8, "b"},
      {"float64", "float64", 50, 777, 8}, {"float16", "float16", 65, 1030, 5},
      {"int32", "int32", 33, 300, 2, "b"}, {"int8", "int8", 40, 600, 7}, {"uint64", "int64", 20, 300, 4},
      {"bool", "bool", 50, 700, 6}, {"complex64", "float32", 30, 400, 3}, {"complex128", "complex128", 18, 300, 4, "b"},
      {"bfloat16", "float32", 45, 500, 2}, {"float32", "float32", 24, 12000, 4},
      -- 9 to 16 columns (accumulators wider than 4 bytes take the tile kernel there)
      {"float32", "float32", 70, 1500, 16}, {"float64", "float64", 30, 900, 11, "b"},
      {"float16", "float16", 40, 1100, 9}, {"int8", "int16", 21, 700, 13},
      {"complex64", "complex64", 20, 500, 12}, {"bool", "bool", 50, 700, 12},
      {"float32", "float32", 24, 9000, 14, "b"},
    }
    for _, c in ipairs(cases) do
      local ta, tb, n, k, m, side = table.unpack(c)
      if side == "b" then n, m = m, n end                 -- a few rows of a, b's columns long
      local out = promote.promote_types(ta, tb)
      local av, bv, a, b = operands(ta, tb, n, k, m)
      if side == "b" then
        local bt = {}
        for l = 1, k do for j = 1, m do bt[(j - 1) * k + l] = bv[(l - 1) * m + j] end end
        b = upload(bt, tb, {m, k}).T
      end
      local what = ("%s %s (%d, %d, %d)"):format(ta, tb, n, k, m)
      local how, on = matmul.kernel_for(n, k, m, a.itemsize, a.strides[1], a.strides[2], b.itemsize, b.strides[1],
                                            b.strides[2])
      assert.are.same({"narrow", side or "a"}, {how, on}, what)
      local want, scale = reference(av, bv, n, k, m, out)
      local rel = ({float32 = k * 2 ^ -24, float64 = k * 2 ^ -53, complex64 = 2 * k * 2 ^ -24,
                    complex128 = 2 * k * 2 ^ -53})[out]
      check(flat(gpu.gpuarray.matmul(a, b):get()), want, scale, out, what, rel)
    end
    local reduction = require "gpu.reduction"
    assert.is_true(reduction.split_ranges(1, 12000, 8 * reduction.multiprocessors(), 4) > 1)
    -- a stack by one matrix, and rows not 16-byte aligned (which take the tile kernel)
    local av, bv = random_values("float32", 3 * 50 * 400), random_values("float32", 400 * 4)
    local h = flat(gpu.gpuarray.matmul(upload(av, "float32", {3, 50, 400}), upload(bv, "float32", {400, 4})):get())
    for p = 0, 2 do
      local w, sc = reference({table.unpack(av, p * 20000 + 1, (p + 1) * 20000)}, bv, 50, 400, 4, "float32")
      check({table.unpack(h, p * 200 + 1, (p + 1) * 200)}, w, sc, "float32", ("stack #%d"):format(p + 1), 400 * 2 ^ -24)
    end
    local shifted = upload({0, table.unpack(av, 1, 50 * 400)}, "float32")
    local misaligned = gpu.GPUArray({50, 400}, "float32", {gpudata = shifted.gpudata:offset(4)})
    local w, sc = reference({table.unpack(av, 1, 50 * 400)}, bv, 50, 400, 4, "float32")
    check(flat(gpu.gpuarray.matmul(misaligned, upload(bv, "float32", {400, 4})):get()), w, sc, "float32",
          "misaligned", 400 * 2 ^ -24)
  end)

  helpers.gpu_it("multiplies by a few columns or rows read across the wide operand's rows", function()
    -- a few rows of a times a row-major b, and a transposed a times a few columns: the wide
    -- operand's rows (b's columns, a's rows) adjacent in memory; k split among blocks in the last
    local cases = {
      {"float32", "float32", 4, 300, 512, "b"}, {"float64", "float64", 8, 200, 130, "b"},
      {"float16", "float16", 3, 400, 264, "b"}, {"int32", "int8", 5, 300, 100, "b"},
      {"complex128", "complex128", 2, 300, 66, "b"}, {"bool", "bool", 6, 300, 64, "b"},
      {"float32", "float32", 260, 300, 3, "a"}, {"uint64", "int64", 66, 300, 7, "a"},
      {"float32", "float32", 8, 6000, 64, "b"},
    }
    for _, c in ipairs(cases) do
      local ta, tb, n, k, m, side = table.unpack(c)
      local out = promote.promote_types(ta, tb)
      local av, bv, a, b = operands(ta, tb, n, k, m)
      if side == "a" then                                 -- a stored transposed
        local at = {}
        for i = 1, n do for l = 1, k do at[(l - 1) * n + i] = av[(i - 1) * k + l] end end
        a = upload(at, ta, {k, n}).T
      end
      local what = ("%s %s (%d, %d, %d)"):format(ta, tb, n, k, m)
      assert.are.same({"across", side},
                      {matmul.kernel_for(n, k, m, a.itemsize, a.strides[1], a.strides[2], b.itemsize, b.strides[1],
                                            b.strides[2])}, what)
      local want, scale = reference(av, bv, n, k, m, out)
      local rel = ({float32 = k * 2 ^ -24, float64 = k * 2 ^ -53, complex128 = 2 * k * 2 ^ -53})[out]
      check(flat(gpu.gpuarray.matmul(a, b):get()), want, scale, out, what, rel)
    end
    local reduction = require "gpu.reduction"
    assert.is_true(reduction.split_ranges(1, 6000, 8 * reduction.multiprocessors(), 1) > 1)
    -- stacks (4, 3, k) @ (k, 40); b's columns not a multiple of a run (41), and b one float
    -- past 16-byte alignment, both of which take the tile kernel
    local k = 300
    local sa, bv = random_values("float32", 4 * 3 * k), random_values("float32", k * 41)
    local b40 = {table.unpack(bv, 1, k * 40)}
    local h = flat(gpu.gpuarray.matmul(upload(sa, "float32", {4, 3, k}), upload(b40, "float32", {k, 40})):get())
    for p = 0, 3 do
      local w, sc = reference({table.unpack(sa, p * 3 * k + 1, (p + 1) * 3 * k)}, b40, 3, k, 40, "float32")
      check({table.unpack(h, p * 120 + 1, (p + 1) * 120)}, w, sc, "float32", ("stack #%d"):format(p + 1), k * 2 ^ -24)
    end
    local a3 = {table.unpack(sa, 1, 3 * k)}
    local w, sc = reference(a3, bv, 3, k, 41, "float32")
    check(flat(gpu.gpuarray.matmul(upload(a3, "float32", {3, k}), upload(bv, "float32", {k, 41})):get()), w, sc,
          "float32", "41 columns", k * 2 ^ -24)
    local shifted = upload({0, table.unpack(b40)}, "float32")
    local misaligned = gpu.GPUArray({k, 40}, "float32", {gpudata = shifted.gpudata:offset(4)})
    w, sc = reference(a3, b40, 3, k, 40, "float32")
    check(flat(gpu.gpuarray.matmul(upload(a3, "float32", {3, k}), misaligned):get()), w, sc, "float32",
          "misaligned", k * 2 ^ -24)
  end)

  helpers.gpu_it("multiplies stacks of matrices by stacks of vectors, broadcasting", function()
    local k = 37
    -- (3, 1, 5, k) @ (2, k, 1) -> (3, 2, 5, 1), the vectors every other element of a wider array
    local sa, wide = random_values("float64", 3 * 5 * k), random_values("float64", 2 * 2 * k)
    local wide_b = upload(wide, "float64", {2, 2 * k})
    local b = gpu.GPUArray({2, k, 1}, "float64", {gpudata = wide_b.gpudata, strides = {2 * k * 8, 16, 8}})
    local r = gpu.gpuarray.matmul(upload(sa, "float64", {3, 1, 5, k}), b)
    assert.are.same({3, 2, 5, 1}, r.shape)
    local h = flat(r:get())
    for p = 1, 3 do
      for q = 1, 2 do
        local am, bm = {}, {}
        for i = 1, 5 * k do am[i] = sa[(p - 1) * 5 * k + i] end
        for l = 1, k do bm[l] = wide[(q - 1) * 2 * k + 2 * l - 1] end
        local w, s = reference(am, bm, 5, k, 1, "float64")
        local first = ((p - 1) * 2 + (q - 1)) * 5
        check({table.unpack(h, first + 1, first + 5)}, w, s, "float64", ("stack %d, %d"):format(p, q))
      end
    end
    -- a vector times a stack of matrices: (k,) @ (4, k, 6) -> (4, 6), into a strided out
    local vv, sb = random_values("int32", k), random_values("int32", 4 * k * 6)
    local out = gpu.zeros({6, 4}, "int32").T
    gpu.gpuarray.matmul(upload(vv, "int32"), upload(sb, "int32", {4, k, 6}), {out = out})
    local got = flat(out:get())
    for p = 1, 4 do
      local bm = {}
      for i = 1, k * 6 do bm[i] = sb[(p - 1) * k * 6 + i] end
      local w, s = reference(vv, bm, 1, k, 6, "int32")
      check({table.unpack(got, (p - 1) * 6 + 1, p * 6)}, w, s, "int32", ("vector times stack %d"):format(p))
    end
  end)

  helpers.gpu_it("writes out, contiguous or strided, on a stream", function()
    local av, bv = random_values("float32", 6 * 5), random_values("float32", 5 * 4)
    local a, b = upload(av, "float32", {6, 5}), upload(bv, "float32", {5, 4})
    local want, scale = reference(av, bv, 6, 5, 4, "float32")
    local out = gpu.empty({6, 4}, "float32")
    local s = gpu.Stream()
    assert.are.equal(out, gpu.gpuarray.matmul(a, b, {out = out, stream = s}))
    s:synchronize()
    check(flat(out:get()), want, scale, "float32", "out")
    local wide = gpu.zeros({4, 6}, "float32")
    local strided = wide.T                           -- (6, 4) through strides
    gpu.gpuarray.matmul(a, b, {out = strided})
    check(flat(strided:get()), want, scale, "float32", "strided out")
  end)

  -- plain, transposed and wider-row operands (spec/matrix_layouts.lua), noise of dtype
  local function layout(values, dtype, rows, cols, how)
    return layouts.layout(values, dtype, rows, cols, how, random_values(dtype, rows * 3))
  end

  helpers.gpu_it("multiplies float and complex matrices on cuBLAS, in every layout it reads", function()
    assert(gpu.cublas_version())
    local n, k, m = 37, 45, 29
    for _, dtype in ipairs{"float16", "bfloat16", "float32", "float64", "complex64", "complex128"} do
      local av, bv = random_values(dtype, n * k), random_values(dtype, k * m)
      local want, scale = reference(av, bv, n, k, m, dtype)
      for _, how in ipairs{{"plain", "plain"}, {"transposed", "wide"}, {"wide", "transposed"},
                           {"transposed", "transposed"}} do
        local a, b = layout(av, dtype, n, k, how[1]), layout(bv, dtype, k, m, how[2])
        local target = gpu.empty({n, m}, dtype)
        assert.is_true(core.blas_matmul(target, a, b))
        check(flat(target:get()), want, scale, dtype, ("%s: %s a, %s b"):format(dtype, how[1], how[2]))
      end
    end
  end)

  helpers.gpu_it("takes stacks one stride apart to cuBLAS, and leaves it the rest", function()
    local n, k, m = 9, 12, 10
    local av, bv = random_values("float64", 6 * n * k), random_values("float64", 6 * k * m)
    local function matrix(values, index, count)
      return {table.unpack(values, (index - 1) * count + 1, index * count)}
    end
    local function check_stack(result, stacks, a_index, b_index, what)
      local h = flat(result:get())
      for p = 1, stacks do
        local want, scale = reference(matrix(av, a_index(p), n * k), matrix(bv, b_index(p), k * m),
                                      n, k, m, "float64")
        check({table.unpack(h, (p - 1) * n * m + 1, p * n * m)}, want, scale, "float64",
              ("%s, matrix %d"):format(what, p))
      end
    end
    -- (2, 3) stacks of both: one stride each; a stack times one matrix: b's stride 0
    local a, b = upload(av, "float64", {2, 3, n, k}), upload(bv, "float64", {2, 3, k, m})
    local target = gpu.empty({2, 3, n, m}, "float64")
    assert.is_true(core.blas_matmul(target, a, b))
    check_stack(target, 6, function(p) return p end, function(p) return p end, "stacks")
    local one_b = upload(matrix(bv, 1, k * m), "float64", {k, m})
    target = gpu.empty({2, 3, n, m}, "float64")
    assert.is_true(core.blas_matmul(target, a, one_b))
    check_stack(target, 6, function(p) return p end, function() return 1 end, "broadcast b")
    -- on a stream of the caller's
    local s = gpu.Stream()
    target = gpu.empty({2, 3, n, m}, "float64")
    assert.is_true(core.blas_matmul(target, a, b, s))
    s:synchronize()
    check_stack(target, 6, function(p) return p end, function(p) return p end, "on a stream")
    -- not one stride apart: (2, 1) stacks against (3,) ones; matmul's kernels take them
    local a21 = upload({table.unpack(av, 1, 2 * n * k)}, "float64", {2, 1, n, k})
    local b3 = upload({table.unpack(bv, 1, 3 * k * m)}, "float64", {3, k, m})
    assert.is_false(core.blas_matmul(gpu.empty({2, 3, n, m}, "float64"), a21, b3))
    check_stack(gpu.gpuarray.matmul(a21, b3), 6, function(p) return (p - 1) // 3 + 1 end,
                function(p) return (p - 1) % 3 + 1 end, "(2, 1) by (3,)")
    -- what cuBLAS does not read: every other column, integers, mixed dtypes, a strided target
    local plain_a, plain_b = upload(matrix(av, 1, n * k), "float64", {n, k}), one_b
    local wide = upload(random_values("float64", n * 2 * k), "float64", {n, 2 * k})
    local stepped = gpu.GPUArray({n, k}, "float64", {gpudata = wide.gpudata, strides = {2 * k * 8, 16}})
    assert.is_false(core.blas_matmul(gpu.empty({n, m}, "float64"), stepped, plain_b))
    assert.is_false(core.blas_matmul(gpu.empty({n, m}, "int32"), plain_a:astype("int32"),
                                     plain_b:astype("int32")))
    assert.is_false(core.blas_matmul(gpu.empty({n, m}, "float64"), plain_a:astype("float32"), plain_b))
    assert.is_false(core.blas_matmul(gpu.empty({m, n}, "float64").T, plain_a, plain_b))
    -- turned off, and while the stream captures a graph (cuBLAS may allocate)
    gpu.use_cublas(false)
    local off = core.blas_matmul(gpu.empty({n, m}, "float64"), plain_a, plain_b)
    gpu.use_cublas(true)
    assert.is_false(off)
    local capturing, captured_target = gpu.Stream(), gpu.empty({n, m}, "float64")
    capturing:begin_capture()
    local during = core.blas_matmul(captured_target, plain_a, plain_b, capturing)
    capturing:end_capture():free()
    assert.is_false(during)
    plain_a:free()
    helpers.assert_error("bad argument #2 to 'blas_matmul' (array has been freed)",
                         function() core.blas_matmul(gpu.empty({n, m}, "float64"), plain_a, plain_b) end)
  end)

  helpers.gpu_it("gives products above the limits to cuBLAS, as NumPy's", function()
    for _, case in ipairs{{"float32", 520, 530, 510}, {"float16", 300, 260, 270},
                          {"complex128", 260, 256, 258}} do
      local dtype, n, k, m = case[1], case[2], case[3], case[4]
      local av, bv, a, b = operands(dtype, dtype, n, k, m)
      local size = a.itemsize
      local how = matmul.kernel_for(n, k, m, size, k * size, size, size, m * size, size)
      assert.is_true(matmul.takes_cublas(how, n, k, m, 1, dtype))
      check_sampled(gpu.gpuarray.matmul(a, b):get(), av, bv, n, k, m, dtype, dtype .. " on cuBLAS")
    end
  end)

  helpers.gpu_it("gives big matrix-vector products to cuBLAS, the vector on either side", function()
    local saved = matmul.limits.cublas_matvec
    matmul.limits.cublas_matvec = 0       -- these small products go where big ones do
    local ok, err = pcall(function()
      local n, k, m = 300, 64, 90
      for _, dtype in ipairs{"float16", "float32", "float64", "complex64", "complex128"} do
        local av, bv, vv = random_values(dtype, n * k), random_values(dtype, k * m), random_values(dtype, k)
        local cw, cs = reference(av, vv, n, k, 1, dtype)
        local rw, rs = reference(vv, bv, 1, k, m, dtype)
        local v = upload(vv, dtype)
        for _, how in ipairs{"plain", "transposed", "wide"} do
          local what = ("%s, %s"):format(dtype, how)
          local column = gpu.gpuarray.matmul(layout(av, dtype, n, k, how), v)
          assert.are.same({n}, column.shape)
          check(flat(column:get()), cw, cs, dtype, what .. " a v")
          local row = gpu.gpuarray.matmul(v, layout(bv, dtype, k, m, how))
          assert.are.same({m}, row.shape)
          check(flat(row:get()), rw, rs, dtype, what .. " v b")
        end
        -- a stack of matrices by one vector, into a strided out; a reversed vector, whose
        -- negative stride cuBLAS does not read (the kernels take it)
        local stack = upload({table.unpack(av, 1, n * k // 2 * 2)}, dtype, {2, n // 2, k})
        local out = gpu.zeros({2, n // 2, 2}, dtype):select(3, 1)
        gpu.gpuarray.matmul(stack, v, {out = out})
        check(flat(out:get()), cw, cs, dtype, dtype .. " stack")
        local reversed = {}
        for i = 1, k do reversed[i] = vv[k + 1 - i] end
        check(flat(gpu.gpuarray.matmul(layout(av, dtype, n, k, "plain"), upload(reversed, dtype):flip()):get()),
              cw, cs, dtype, dtype .. " reversed vector")
      end
    end)
    matmul.limits.cublas_matvec = saved
    assert(ok, err)
  end)

  helpers.gpu_it("refuses what NumPy refuses, naming the argument", function()
    local a, b = gpu.zeros({2, 3}, "float32"), gpu.zeros({4, 5}, "float32")
    helpers.assert_error("bad argument #2 to 'matmul' (the inner dimensions differ: (2,3) and (4,5) (3 and 4))",
                         gpu.gpuarray.matmul, a, b)
    helpers.assert_error("bad argument #1 to 'matmul' (matmul needs arrays of at least one axis, got a 0-d array)",
                         gpu.gpuarray.matmul, gpu.zeros({}, "float32"), b)
    helpers.assert_error("bad argument #2 to 'matmul' (operands could not be broadcast together with shapes "
                         .. "(2,) (3,) (the stacks of matrices))",
                         gpu.gpuarray.matmul, gpu.zeros({2, 2, 3}), gpu.zeros({3, 3, 1}))
    helpers.assert_error("bad argument #3 to 'matmul' (out array is float64 of shape (2,5), the result float32 "
                         .. "of shape (2,5))", gpu.gpuarray.matmul, a, gpu.zeros({3, 5}, "float32"),
                         {out = gpu.zeros({2, 5})})
    helpers.assert_error("bad argument #3 to 'matmul' (unknown option 'axes')", gpu.gpuarray.matmul, a, a.T, {axes = 1})
    local freed = gpu.zeros({3, 2}, "float32")
    freed:free()
    helpers.assert_error("bad argument #2 to 'matmul' (array has been freed)", gpu.gpuarray.matmul, a, freed)
  end)
end)
