-- complex64 and complex128: gpu.complex values, host arrays, and device arrays checked
-- against references computed in Lua with gpu.complex arithmetic (in double precision).
local helpers = require "spec.helpers"
local gpu, gpu_it = helpers.gpu, helpers.gpu_it
local assert_error = helpers.assert_error
local C = gpu.complex
local functions = require("gpu.complex").functions

-- Tolerances relative to the reference's magnitude (at least 1).
local TOL = {complex64 = 2e-6, complex128 = 1e-13}

local function assert_close(want, got, tol, what)
  local w = type(want) == "number" and C(want) or want
  local g = type(got) == "number" and C(got) or got
  local scale = math.max(1, (w - w * 0):abs())
  local diff = (g - w):abs()
  assert(diff <= tol * scale, ("%s: expected %s, got %s (off by %g)"):format(what or "value",
         tostring(w), tostring(g), diff))
end

local function random_complex(n, scale)
  local t = {}
  for i = 1, n do
    t[i] = C((math.random() * 2 - 1) * (scale or 2), (math.random() * 2 - 1) * (scale or 2))
  end
  return t
end

-- A device array of n random values and the values it holds (rounded to its precision).
local function random_array(n, dtype, scale)
  local h = gpu.host.from_table(random_complex(n, scale), dtype)
  local values = {}
  for i = 1, n do values[i] = h[i] end
  return gpu.to_gpu(h), values
end

local function check_array(want, a, tol, what)
  local h = a:get()
  assert.are.equal(#want, h.size)
  for i = 1, #want do assert_close(want[i], h[i], tol, ("%s[%d]"):format(what, i)) end
end

describe("gpu.complex values", function()
  it("compute like Python's complex numbers", function()
    local z, w = C(1, 2), C(-0.5, 3)
    assert.are.equal(C(0.5, 5), z + w)
    assert.are.equal(C(-6.5, 2), z * w)
    assert.are.equal(C(-3, 4), z ^ 2)
    assert.are.equal(C(-11, -2), z ^ 3)
    assert_close(C(0.2, -0.4), z ^ -1, 1e-15)
    assert_close(C(0.2, -0.4), 1 / z, 1e-15)
    assert.are.equal(C(3, 2), z + 2)
    assert.are.equal(C(2, 4), 2 * z)
    assert.are.equal(C(-1, -2), -z)
    assert.are.equal(C(1, -2), z:conj())
    assert.are.equal(5, (C(3, 4)):abs())
    assert.are.equal(math.pi, C(-1, 0):arg())
    assert.is_true(z == C(1, 2))
    assert.is_false(z == C(1, -2))
    -- Smith's division stays finite where |b|^2 overflows
    assert_close(C(1, 0), C(1e300, 1e300) / C(1e300, 1e300), 1e-15)
  end)

  it("print as Python prints complex numbers", function()
    assert.are.equal("(1+2j)", tostring(C(1, 2)))
    assert.are.equal("(1-0j)", tostring(C(1, -0.0)))          -- a negative zero keeps its sign, as in Python
    assert.are.equal("(-0-0j)", tostring(C(-0.0, -0.0)))
    assert.are.equal("(-0.5-1j)", tostring(C(-0.5, -1)))
    assert.are.equal("3j", tostring(C(0, 3)))
    assert.are.equal("(1.25+0j)", tostring(C(1.25)))
    assert.are.equal("(nan+infj)", tostring(C(0 / 0, math.huge)))
  end)

  it("refuse what is not a number", function()
    assert_error("bad argument #1 to 'complex' (number expected, got string)", C, "1")
    assert_error("bad argument #2 to 'complex' (number expected, got table)", C, 1, {})
    assert_error("attempt to perform arithmetic on a boolean value", function() return C(1, 2) + true end)
    -- strings too, from either side (a string's own arithmetic would coerce, and fail
    -- inside this library)
    assert_error("attempt to perform arithmetic on a string value", function() return C(1, 2) - "1" end)
    assert_error("attempt to perform arithmetic on a string value", function() return "1" * C(1, 2) end)
    -- a table given the metatable by hand, without numbers, is refused, not recursed into
    local fake = setmetatable({re = "1"}, getmetatable(C(0)))
    assert_error("attempt to perform arithmetic on a gpu.complex value", function() return fake * C(1, 2) end)
    assert_error("attempt to perform arithmetic on a gpu.complex value", function() return 2 + fake end)
    assert.is_true(gpu.is_complex(C(1)))
    assert.is_false(gpu.is_complex({re = 1, im = 2}))
  end)

  it("have the functions of cumath, for references", function()
    assert_close(C(math.exp(1) * math.cos(2), math.exp(1) * math.sin(2)), functions.exp(C(1, 2)), 1e-15)
    assert_close(C(0, 1), functions.sqrt(-1), 1e-15)
    assert_close(C(1, 2), functions.sqrt(C(1, 2)) ^ 2, 1e-15)
    assert_close(C(1, 2), functions.exp(functions.log(C(1, 2))), 1e-15)
    assert_close(functions.sin(C(0.3, 0.7)) / functions.cos(C(0.3, 0.7)), functions.tan(C(0.3, 0.7)), 1e-15)
  end)
end)

describe("complex dtypes", function()
  it("are described by gpu.dtype", function()
    local d = gpu.dtype("complex64")
    assert.are.same({name = "complex64", itemsize = 8, ctype = "lg_complex64", kind = "c"}, d)
    assert.are.equal(16, gpu.dtype("complex128").itemsize)
  end)

  it("hold gpu.complex values in host arrays", function()
    local h = gpu.host.from_table({C(1, 2), 3, C(0.5, -1)})
    assert.are.equal("complex128", h.dtype)
    assert.are.equal(C(1, 2), h[1])
    assert.are.equal(C(3, 0), h[2])
    h[2] = C(-4, 0.25)
    assert.are.equal(C(-4, 0.25), h[2])
    assert.are.equal("[ 1. +2.j   -4. +0.25j  0.5-1.j  ]", tostring(h))
    local h2 = gpu.host.from_table({{1, 2}, {3, C(1.5, 2)}}, "complex64")
    assert.are.same({2, 2}, h2.shape)
    assert.are.equal("[[1. +0.j 2. +0.j]\n [3. +0.j 1.5+2.j]]", tostring(h2))
    assert.are.equal(C(1.5, 2), h2:totable()[2][2])
    -- complex64 keeps float32 parts
    local h3 = gpu.host.from_table({C(0.1, 0.2)}, "complex64")
    assert.are.equal((string.unpack("f", string.pack("f", 0.1))), h3[1].re)
    assert_error("cannot store a string in a HostArray of complex64: expected a number or a gpu.complex",
                 function() h2[1] = "x" end)
    assert_error("bad argument #1 to 'gpu.host.from_table' (item 1: expected a number, got table)",
                 gpu.host.from_table, {C(1, 2)}, "float64")
  end)

  it("make typed kernel scalars", function()
    assert.are.equal(C(1, 2), gpu.complex64(C(1, 2)).value)
    assert.are.equal(C(3, 0), gpu.complex128(3).value)
  end)
end)

describe("complex GPU arrays", function()
  for _, dtype in ipairs{"complex64", "complex128"} do
    local tol = TOL[dtype]

    gpu_it(dtype .. ": round trip, fill, zeros, ones, full and printing", function()
      local a, values = random_array(1000, dtype)
      assert.are.equal(dtype, a.dtype)
      assert.are.equal(1000 * gpu.dtype(dtype).itemsize, a.nbytes)
      check_array(values, a, 0, "round trip")
      a:fill(C(2, -3))
      assert.are.equal(C(2, -3), a:get()[1000])
      assert.are.equal(C(0, 0), gpu.zeros(3, dtype):get()[2])
      assert.are.equal(C(1, 0), gpu.ones(3, dtype):get()[3])
      assert.are.equal("complex128", gpu.full(2, C(1, 1)).dtype)
      assert.are.equal(C(1, 1), gpu.full(2, C(1, 1), dtype):get()[2])
      assert.are.equal(C(2, -3), a[1])
      assert.are.equal("[1.+2.j 3.-4.j]", tostring(gpu.to_gpu(gpu.host.from_table({C(1, 2), C(3, -4)}, dtype))))
    end)

    gpu_it(dtype .. ": operators against a host reference", function()
      local n = 3001
      local a, av = random_array(n, dtype)
      local b, bv = random_array(n, dtype)
      local s = C(0.75, -1.25)
      local cases = {
        {"a + b", function() return a + b end, function(i) return av[i] + bv[i] end},
        {"a - b", function() return a - b end, function(i) return av[i] - bv[i] end},
        {"a * b", function() return a * b end, function(i) return av[i] * bv[i] end},
        {"a / b", function() return a / b end, function(i) return av[i] / bv[i] end},
        {"-a", function() return -a end, function(i) return -av[i] end},
        {"a ^ 3", function() return a ^ 3 end, function(i) return av[i] ^ 3 end},
        {"a ^ b", function() return a ^ b end, function(i) return av[i] ^ bv[i] end},
        {"2.5 * a", function() return 2.5 * a end, function(i) return 2.5 * av[i] end},
        {"a - 4", function() return a - 4 end, function(i) return av[i] - 4 end},
        {"s * a", function() return s * a end, function(i) return s * av[i] end},
        {"a / s", function() return a / s end, function(i) return av[i] / s end},
        {"s - a", function() return s - a end, function(i) return s - av[i] end},
      }
      for _, case in ipairs(cases) do
        local r = case[2]()
        assert.are.equal(dtype, r.dtype, case[1])
        local want = {}
        for i = 1, n do want[i] = case[3](i) end
        check_array(want, r, case[1] == "a ^ b" and 10 * tol or 4 * tol, case[1])
      end
      local eq = a:eq(a * 1):get()
      local ne = a:ne(b):get()
      for i = 1, n do
        assert.is_true(eq[i])
        assert.are.equal(av[i] ~= bv[i], ne[i])
      end
    end)

    gpu_it(dtype .. ": mixed with real arrays, promoted as NumPy does", function()
      local n = 777
      local a, av = random_array(n, dtype)
      local x = gpu.to_gpu(gpu.host.from_table(helpers.random_floats(n, 3), "float64"))
      local y = gpu.to_gpu(gpu.host.from_table(helpers.random_integers(n, -50, 50), "int16"))
      local xv, yv = x:get(), y:get()
      local ax, ay = a * x, y - a
      assert.are.equal("complex128", ax.dtype)
      assert.are.equal(dtype, ay.dtype)
      local want_x, want_y = {}, {}
      for i = 1, n do want_x[i], want_y[i] = av[i] * xv[i], yv[i] - av[i] end
      check_array(want_x, ax, 4 * tol, "a * float64")
      check_array(want_y, ay, 4 * tol, "int16 - a")
      local f32 = gpu.to_gpu(gpu.host.from_table(helpers.random_floats(n), "float32"))
      assert.are.equal("complex64", (f32 * C(0, 1)).dtype)
      assert.are.equal("complex128", (y * C(0, 1)).dtype)
      assert.are.equal(C(0, xv[5]), (x * C(0, 1)):get()[5])
    end)

    gpu_it(dtype .. ": abs, real, imag, conj, astype and cumath", function()
      local n = 1500
      local a, av = random_array(n, dtype)
      local real = dtype == "complex64" and "float32" or "float64"
      local abs, re, im, conj = gpu.gpuarray.abs(a), a.real, a.imag, a:conj()
      assert.are.equal(real, abs.dtype)
      assert.are.equal(real, re.dtype)
      assert.are.equal(dtype, conj.dtype)
      local absv, rev, imv, conjv = abs:get(), re:get(), im:get(), conj:get()
      for i = 1, n do
        assert_close(av[i]:abs(), absv[i], tol, "abs")
        assert.are.equal(av[i].re, rev[i])
        assert.are.equal(av[i].im, imv[i])
        assert.are.equal(av[i]:conj(), conjv[i])
      end
      local f = a:astype("float64"):get()
      local scaled = a * 10
      local i32, sv = scaled:astype("int32"):get(), scaled:get()
      local b = a:astype("bool"):get()
      for i = 1, n do
        assert.are.equal(av[i].re, f[i])
        assert.are.equal(math.tointeger((math.modf(sv[i].re))), i32[i])   -- toward zero
        assert.is_true(b[i])
      end
      assert.is_false(gpu.zeros(2, dtype):astype("bool"):get()[1])
      local other = dtype == "complex64" and "complex128" or "complex64"
      check_array(av, a:astype(other), 2 * TOL.complex64, "astype " .. other)
      local back = gpu.to_gpu(gpu.host.from_table({1.5, -2}, "float32")):astype(dtype):get()
      assert.are.equal(C(1.5, 0), back[1])
      assert.are.equal(0, gpu.gpuarray.imag(gpu.ones(2, "float32")):get()[2])
      assert.are.equal(av[9].im, gpu.gpuarray.imag(a):get()[9])
      assert.is_nil(a.no_such_field)
      for _, name in ipairs{"exp", "log", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh"} do
        local r = gpu.cumath[name](a)
        assert.are.equal(dtype, r.dtype, name)
        local want = {}
        for i = 1, n do want[i] = functions[name](av[i]) end
        check_array(want, r, 8 * tol, name)
      end
    end)

    gpu_it(dtype .. ": sum, mean, prod, dot, any, axis sums, cumsum and cumprod", function()
      for _, n in ipairs{1, 257, 100003} do
        local a, av = random_array(n, dtype)
        local b, bv = random_array(n, dtype)
        local sum, dot, vdot = C(0), C(0), C(0)
        for i = 1, n do
          sum, dot, vdot = sum + av[i], dot + av[i] * bv[i], vdot + av[i]:conj() * bv[i]
        end
        local err = tol * math.sqrt(n) * 4
        assert_close(sum, a:sum(), err, "sum")
        assert_close(sum / n, a:mean(), err, "mean")
        assert_close(dot, gpu.gpuarray.dot(a, b), err, "dot")
        assert_close(vdot, gpu.gpuarray.vdot(a, b), err, "vdot")
        assert_close(vdot, gpu.gpuarray.vdot(a, b, {stream = gpu.Stream()}):get()[1], err, "vdot on a stream")
        assert_close(sum, gpu.gpuarray.sum(a, {stream = gpu.Stream()}):get()[1], err, "sum on a stream")
        assert.is_true(a:any())
        local c = a:cumsum():get()
        local run = C(0)
        for i = 1, n do
          run = run + av[i]
          if i % 97 == 1 or i == n then assert_close(run, c[i], err, "cumsum " .. i) end
        end
      end
      local small, sv = random_array(12, dtype, 0.9)
      local prod = C(1)
      for i = 1, 12 do prod = prod * sv[i] end
      assert_close(prod, small:prod(), 16 * tol, "prod")
      local m = small:reshape(3, 4)
      local rows = gpu.gpuarray.sum(m, {axis = 2}):get()
      local cols = gpu.gpuarray.sum(m, {axis = 1}):get()
      for r = 1, 3 do
        local want = C(0)
        for k = 1, 4 do want = want + sv[(r - 1) * 4 + k] end
        assert_close(want, rows[r], 4 * tol, "row sum")
      end
      for k = 1, 4 do
        assert_close(sv[k] + sv[4 + k] + sv[8 + k], cols[k], 4 * tol, "column sum")
      end
      -- a strided view reduces through its layout
      local view = m:transpose()
      assert_close(small:sum(), view:sum(), 4 * tol, "transposed sum")
      -- running products along rows and sums down columns: by the short-row kernel and rows
      -- of tiles, then by rows of tiles and each column kernel (limits changed to reach them)
      local scan = require "gpu.scan"
      local saved = scan.along_limits
      for _, limits in ipairs{saved, {short_row_len = 0, min_columns = 1, thread_columns = 1 << 30},
                              {short_row_len = 0, min_columns = 1, thread_columns = 1}} do
        scan.along_limits = limits
        local prods, sums = m:cumprod({axis = 2}):get(), m:cumsum({axis = 1}):get()
        scan.along_limits = saved
        for r = 1, 3 do
          local p = C(1)
          for k = 1, 4 do
            p = p * sv[(r - 1) * 4 + k]
            assert_close(p, prods[(r - 1) * 4 + k], 8 * tol, "cumprod along rows")
          end
        end
        for k = 1, 4 do
          assert_close(sv[k], sums[k], 4 * tol, "cumsum down column")
          assert_close(sv[k] + sv[4 + k] + sv[8 + k], sums[8 + k], 4 * tol, "cumsum down column")
        end
      end
      -- columns of 40: two or three chunks, whose look-back passes complex values
      local tall, tv = random_array(40 * 3, dtype)
      scan.along_limits = {short_row_len = 0, min_columns = 1, thread_columns = 1 << 30}
      local sums = tall:reshape(40, 3):cumsum({axis = 1}):get()
      scan.along_limits = saved
      for k = 1, 3 do
        local run = C(0)
        for r = 1, 40 do
          run = run + tv[(r - 1) * 3 + k]
          assert_close(run, sums[(r - 1) * 3 + k], 8 * tol, "cumsum down a tall column")
        end
      end
    end)

    gpu_it(dtype .. ": what complex numbers do not have is an error", function()
      local a, b = gpu.zeros(4, dtype), gpu.zeros(4, dtype)
      assert_error("bad argument #1 to 'lt' (lt is not defined for complex operands (" .. dtype .. " and " .. dtype .. "))",
                   function() return a:lt(b) end)
      assert_error("bad argument #1 to 'floordiv' ('//' is not defined for complex operands (" .. dtype .. " and Lua integer))",
                   function() return a // 2 end)
      assert_error("bad argument #2 to 'maximum' (maximum is not defined for complex operands (float32 and " .. dtype .. "))",
                   gpu.gpuarray.maximum, gpu.zeros(4, "float32"), a)
      assert_error("bad argument #1 to 'min' (min is not defined for complex arrays (" .. dtype .. " has no order))",
                   function() return a:min() end)
      assert_error("bad argument #1 to 'floor' (floor is not defined for complex operands (" .. dtype .. "))",
                   gpu.cumath.floor, a)
      assert_error("bad argument #1 to 'band' ('&' needs integer or bool operands, got " .. dtype .. ")",
                   function() return a & 1 end)
    end)

    gpu_it(dtype .. ": ElementwiseKernel arguments, gpu.fuse and DLPack", function()
      local ctype = gpu.dtype(dtype).ctype
      local n = 513
      local a, av = random_array(n, dtype)
      local out = gpu.empty(n, dtype)
      local k = gpu.ElementwiseKernel(("%s *z, const %s *x, %s s"):format(ctype, ctype, ctype),
                                      "z[i] = x[i] * x[i] + s")
      k(out, a, C(1, -1))
      local want = {}
      for i = 1, n do want[i] = av[i] * av[i] + C(1, -1) end
      check_array(want, out, 4 * tol, "ElementwiseKernel")
      local f = gpu.fuse(function(x, s) return x * C(0, 2) + s end)
      local r = f(a, C(3, 0))
      assert.are.equal(dtype, r.dtype)
      for i = 1, n do want[i] = av[i] * C(0, 2) + 3 end
      check_array(want, r, 4 * tol, "fuse")
      local back = gpu.from_dlpack(a)
      assert.are.equal(dtype, back.dtype)
      assert.are.equal(av[7], back:get()[7])
    end)
  end

  gpu_it("vdot of real arrays is dot, and names itself in errors", function()
    local x = gpu.to_gpu(gpu.host.from_table(helpers.random_integers(300, -9, 9), "int32"))
    local y = gpu.to_gpu(gpu.host.from_table(helpers.random_integers(300, -9, 9), "int32"))
    assert.are.equal(gpu.gpuarray.dot(x, y), gpu.gpuarray.vdot(x, y))
    assert_error("bad argument #2 to 'vdot' (arrays differ in size (300 and 2))",
                 gpu.gpuarray.vdot, x, gpu.zeros(2, "int32"))
  end)

  gpu_it("views must be aligned for their dtype", function()
    local view = require("gpu.core").array_view
    local a = gpu.zeros(8, "int32")
    assert_error("a float64 view must start at a multiple of 8 bytes, not at byte 4",
                 view, a, 4, "float64", 2)
    assert_error("a complex128 view's strides must be multiples of 8 bytes, not 4",
                 view, a, 0, "complex128", {2}, {4})
    assert.are.equal("complex128", view(a, 8, "complex128", 1).dtype)
    -- a:view(dtype) of a slice that starts between two float64s
    assert_error("a float64 view must start at a multiple of 8 bytes, not at byte 4",
                 function() return a:slice(2, 5):view("float64") end)
  end)
end)
