-- gpu.linalg's functions built on the factorizations (lua/gpu/linalg.lua): pinv, lstsq,
-- matrix_power, multi_dot, cond, tensorinv, tensorsolve, eig and eigvals, each checked in
-- Lua, in doubles, against the values the device was given (as stored, rounded to the dtype):
-- the four Moore-Penrose conditions for pinv; the normal equations a^H (a x - b) = 0 (and the
-- least norm x, for a wide a of full rank), the residuals as sums of squares and NumPy's rank
-- for lstsq; repeated products in Lua for matrix_power (exactly for int32, wrapping) and
-- multi_dot; cond from the singular values svd gives, from 2 x 2 matrices' closed form and
-- from Lua inverses and norms; a v = v diag(w) with unit columns for eig, the trace and
-- tr(a^2) as the sums of eigvals and of their squares; the exact errors, freed arrays, views,
-- stacks and streams.  Without a GPU, the stand-ins' shapes, dtypes, errors and geev calls.
--
-- Tolerances as spec/54's: backward stable algorithms leave residuals within a small multiple
-- of n eps times the norms involved (Frobenius norms; eps the dtype's), and the bounds take
-- 30 n eps, far below what a wrong conjugation, transpose or cutoff gives (errors of the
-- order of the norms themselves).
local helpers = require "helpers"
local R = require "reduction_helpers"
local LR = require "linalg_reference"
local gpu = helpers.gpu

local L = gpu.linalg

local DTYPES = {"float32", "float64", "complex64", "complex128", "int32"}

local EPS, REAL, computed, product, shape_with = LR.EPS, LR.REAL, LR.computed, LR.product, LR.shape_with
local ZERO, ONE, add, sub, mul, div, conj = LR.ZERO, LR.ONE, LR.add, LR.sub, LR.mul, LR.div, LR.conj
local abs, matrix, matmul, ct, transpose = LR.abs, LR.matrix, LR.matmul, LR.ct, LR.transpose
local identity, norm, distance, assert_small = LR.identity, LR.norm, LR.distance, LR.assert_small
local random_entry, random_matrix, dominant = LR.random_entry, LR.random_matrix, LR.dominant
local hermitian, pair, to_device, matrices_of = LR.hermitian, LR.pair, LR.to_device, LR.matrices_of
local values_of, det_reference = LR.values_of, LR.det_reference

-- The product of a list of matrices, left to right.
local function chain_product(mats)
  local P = mats[1]
  for i = 2, #mats do P = matmul(P, mats[i]) end
  return P
end

-- A's inverse by Gauss-Jordan elimination with partial pivoting, in doubles.
local function inverse_reference(A)
  local n = #A
  local M = matrix(n, 2 * n, function(i, j) return j <= n and A[i][j] or (j - n == i and ONE or ZERO) end)
  for k = 1, n do
    local p = k
    for i = k + 1, n do if abs(M[i][k]) > abs(M[p][k]) then p = i end end
    M[p], M[k] = M[k], M[p]
    local pivot = M[k][k]
    for j = 1, 2 * n do M[k][j] = div(M[k][j], pivot) end
    for i = 1, n do
      if i ~= k then
        local l = M[i][k]
        for j = 1, 2 * n do M[i][j] = sub(M[i][j], mul(l, M[k][j])) end
      end
    end
  end
  return matrix(n, n, function(i, j) return M[i][j + n] end)
end

-- NumPy's matrix norms: "fro", 1 and -1 (greatest and least column sums of magnitudes), inf
-- and -inf (of the rows').
local function matrix_norm(A, p)
  if p == "fro" then return norm(A) end
  local sums = {}
  local columns = p == 1 or p == -1
  for i = 1, columns and #A[1] or #A do
    local s = 0
    for j = 1, columns and #A or #A[1] do s = s + abs(columns and A[j][i] or A[i][j]) end
    sums[i] = s
  end
  local pick = (p == 1 or p == math.huge) and math.max or math.min
  return pick(table.unpack(sums))
end

-- A random matrix of rank below its columns: its last column twice its first (exactly).
local function deficient(rows, cols, dtype)
  local A = random_matrix(rows, cols, dtype)
  for i = 1, rows do A[i][cols] = {2 * A[i][1][1], 2 * A[i][1][2]} end
  return A
end

local function int32(v)
  v = v & 0xFFFFFFFF
  return v >= 0x80000000 and v - 0x100000000 or v
end

describe("gpu.linalg's functions of the factorizations", function()
  helpers.gpu_it("pinv: the Moore-Penrose conditions for each dtype, stacks, views, hermitian", function()
    local s = gpu.Stream()
    local cases = {   -- stack, rows, columns, deficient, options
      {{}, 5, 3}, {{}, 3, 5}, {{2}, 4, 4}, {{2, 1}, 6, 2}, {{}, 1, 1},
      {{3}, 5, 4, true, {rcond = 1e-4}}, {{}, 4, 6, true, {rtol = 1e-4}},
    }
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[computed(dtype)]
      for c, case in ipairs(cases) do
        local batch, m, n, rank_deficient, opts = table.unpack(case)
        opts = opts or {}
        if c % 2 == 0 then opts.stream = s end
        local mats = {}
        for i = 1, product(batch) do
          if rank_deficient then mats[i] = m >= n and deficient(m, n, dtype) or ct(deficient(n, m, dtype))
          elseif m == n then mats[i] = dominant(n, dtype)
          else mats[i] = random_matrix(m, n, dtype) end
        end
        local a, A = to_device(mats, shape_with(batch, m, n), dtype)
        local x = L.pinv(a, opts)
        s:synchronize()
        local what = ("pinv %s case %d"):format(dtype, c)
        assert.are.same(shape_with(batch, n, m), x.shape, what)
        assert.are.equal(computed(dtype), x.dtype, what)
        local size = math.max(m, n)
        for i, X in ipairs(matrices_of(x)) do
          local Ai, na, nx = A[i], norm(A[i]), norm(X)
          local AX, XA = matmul(Ai, X), matmul(X, Ai)
          assert_small(distance(matmul(AX, Ai), Ai), 30 * size * eps * na * na * nx, what .. " a x a = a")
          assert_small(distance(matmul(XA, X), X), 30 * size * eps * nx * nx * na, what .. " x a x = x")
          assert_small(distance(ct(AX), AX), 30 * size * eps * na * nx, what .. " a x Hermitian")
          assert_small(distance(ct(XA), XA), 30 * size * eps * na * nx, what .. " x a Hermitian")
          if rank_deficient then   -- rank min(m, n) - 1: x a a projection of that trace
            local trace = 0
            for j = 1, n do trace = trace + XA[j][j][1] end
            helpers.assert_close(math.min(m, n) - 1, trace, 1e3 * eps, what .. " rank")
          end
        end
      end
      -- hermitian: from the eigenvalues (of either sign), the same pseudo-inverse
      local mats = {hermitian(4, dtype, false), hermitian(4, dtype, false)}
      local a, A = to_device(mats, {2, 4, 4}, dtype)
      local x = L.pinv(a, {hermitian = true})
      local what = "pinv hermitian " .. dtype
      assert.are.same({2, 4, 4}, x.shape, what)
      assert.are.equal(computed(dtype), x.dtype, what)
      for i, X in ipairs(matrices_of(x)) do
        local na, nx = norm(A[i]), norm(X)
        assert_small(distance(matmul(matmul(A[i], X), A[i]), A[i]), 30 * 4 * eps * na * na * nx,
                     what .. " a x a")
        assert_small(distance(matmul(matmul(X, A[i]), X), X), 30 * 4 * eps * nx * nx * na, what .. " x a x")
        assert_small(distance(ct(X), X), 30 * 4 * eps * nx, what .. " x Hermitian")
      end
    end
    -- a transposed view; an exact case: pinv of the column (1, 2, 2) is the row (1, 2, 2) / 9
    local a = R.to_gpu({1, 2, 2}, "float64")
    local x = values_of(L.pinv(R.reshaped(a, {1, 3}):transpose()))
    for i, want in ipairs{1 / 9, 2 / 9, 2 / 9} do helpers.assert_close(want, x[i][1], 1e-14,
                                                                       "pinv column " .. i) end
    -- a zero matrix's is zero; the empty
    local zero = values_of(L.pinv(gpu.zeros({2, 3})))
    for i = 1, 6 do assert.are.same({0, 0}, zero[i]) end
    assert.are.same({2, 3, 0}, L.pinv(gpu.zeros({2, 0, 3})).shape)
    helpers.assert_error("bad argument #2 to 'pinv' (options 'rcond' and 'rtol' cannot be given together)",
                         L.pinv, gpu.zeros({2, 2}), {rcond = 1e-3, rtol = 1e-3})
    helpers.assert_error("bad argument #2 to 'pinv' (unknown option 'tol')", L.pinv, gpu.zeros({2, 2}),
                         {tol = 1})
    helpers.assert_error("bad argument #1 to 'pinv' (last 2 dimensions of the array must be square, "
                         .. "got 2 x 3)",
                         L.pinv, gpu.zeros({2, 3}), {hermitian = true})
    helpers.assert_error("bad argument #1 to 'pinv' (array of at least 2 dimensions expected, got 1)",
                         L.pinv, gpu.zeros({3}))
    local freed = gpu.zeros({3, 2})
    freed:free()
    helpers.assert_error("bad argument #1 to 'pinv' (array has been freed)", L.pinv, freed)
  end)

  helpers.gpu_it("lstsq: the normal equations, residuals, rank and s; vectors and matrices of b", function()
    local s = gpu.Stream()
    local cases = {   -- m, n, b's columns (nil: b 1-d), rank deficient, rcond
      {6, 3, nil}, {6, 3, 2}, {3, 5, nil}, {4, 4, 3}, {7, 4, 1},
      {6, 4, 2, true, 1e-4}, {4, 6, nil, true, 1e-4},
    }
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      for c, case in ipairs(cases) do
        local m, n, k, rank_deficient, rcond = table.unpack(case)
        local Am
        if rank_deficient then Am = m >= n and deficient(m, n, dtype) or ct(deficient(n, m, dtype))
        elseif m == n then Am = dominant(n, dtype)
        else Am = random_matrix(m, n, dtype) end
        local a, A = to_device({Am}, {m, n}, dtype)
        local b, B = to_device({random_matrix(m, k or 1, dtype)}, {m, k or 1}, dtype)
        if k == nil then b = R.reshaped(b, {m}) end
        local opts = {rcond = rcond, stream = c % 2 == 0 and s or nil}
        local x, residuals, rank, sv = L.lstsq(a, b, opts)
        s:synchronize()
        local what = ("lstsq %s case %d"):format(dtype, c)
        local want_rank = math.min(m, n) - (rank_deficient and 1 or 0)
        assert.are.equal(want_rank, rank, what .. " rank")
        assert.are.equal("integer", math.type(rank), what)
        assert.are.same(k and {n, k} or {n}, x.shape, what)
        assert.are.equal(out, x.dtype, what)
        assert.are.same({math.min(m, n)}, sv.shape, what)
        assert.are.equal(REAL[out], sv.dtype, what)
        assert.are.equal(REAL[out], residuals.dtype, what)
        local X = matrices_of(x:reshape(n, k or 1))[1]
        local Ai, Bi = A[1], B[1]
        local na, nx, nb = norm(Ai), norm(X), norm(Bi)
        local AX = matmul(Ai, X)
        local misfit = matrix(m, k or 1, function(i, j) return sub(Bi[i][j], AX[i][j]) end)
        assert_small(norm(matmul(ct(Ai), misfit)), 30 * m * n * eps * na * (na * nx + nb),
                     what .. " normal equations")
        if n > m and not rank_deficient then   -- consistent: a x = b, and x = a^H (a a^H)^-1 b
          local least = matmul(ct(Ai), matmul(inverse_reference(matmul(Ai, ct(Ai))), Bi))
          assert_small(distance(X, least), 1e3 * n * eps * norm(least), what .. " least norm")
        end
        -- s: descending, their squares summing to |a|^2
        local values, squares = values_of(sv), 0
        for i = 1, #values do
          squares = squares + values[i][1] ^ 2
          if i > 1 then assert(values[i][1] <= values[i - 1][1], what .. " s descending") end
        end
        helpers.assert_close(na * na, squares, 30 * n * eps, what .. " s")
        if rank == n and m > n then
          assert.are.same({k or 1}, residuals.shape, what)
          local r = values_of(residuals)
          for j = 1, k or 1 do
            local sum = 0
            for i = 1, m do sum = sum + abs(misfit[i][j]) ^ 2 end
            assert_small(math.abs(r[j][1] - sum), 30 * m * eps * (nb + na * nx) ^ 2,
                         what .. " residual " .. j)
          end
        else
          assert.are.same({0}, residuals.shape, what)
        end
      end
    end
    -- exactly: the line through (0, 1), (1, 3), (2, 5) misses nothing; (0, 0), (1, 1), (2, 3)
    local a = R.reshaped(R.to_gpu({0, 1, 1, 1, 2, 1}, "float64"), {3, 2})
    local x, residuals, rank = L.lstsq(a, R.to_gpu({1, 3, 5}, "float64"))
    helpers.assert_close(2, x[1], 1e-14, "slope")
    helpers.assert_close(1, x[2], 1e-14, "intercept")
    assert.are.equal(2, rank)
    assert(math.abs(residuals[1]) < 1e-25, "no residual")
    x, residuals = L.lstsq(a, R.to_gpu({0, 1, 3}, "float64"))
    helpers.assert_close(1.5, x[1], 1e-14, "slope")
    helpers.assert_close(-1 / 6, x[2], 1e-14, "intercept")
    helpers.assert_close(1 / 6, residuals[1], 1e-14, "residual")
    -- mixed dtypes; the empty: no column of a gives residuals |b|^2
    local x32 = L.lstsq(a:astype("float32"), R.to_gpu({1, 3, 5}, "float64"))
    assert.are.equal("float64", x32.dtype)
    local b = R.reshaped(R.to_gpu({1, 2, 3, 4, 5, 6}, "float32"), {3, 2})
    local xe, re, ranke, se = L.lstsq(gpu.zeros({3, 0}, "float32"), b)
    assert.are.same({0, 2}, xe.shape)
    assert.are.same({2}, re.shape)
    helpers.assert_close(1 + 9 + 25, re[1], 1e-6, "|b|^2")
    helpers.assert_close(4 + 16 + 36, re[2], 1e-6, "|b|^2")
    assert.are.equal(0, ranke)
    assert.are.same({0}, se.shape)
    helpers.assert_error("bad argument #1 to 'lstsq' (array of 2 dimensions expected, got 3)",
                         L.lstsq, gpu.zeros({2, 3, 3}), gpu.zeros({3}))
    helpers.assert_error("bad argument #2 to 'lstsq' (array of 1 or 2 dimensions expected, got 0)",
                         L.lstsq, gpu.zeros({3, 3}), gpu.zeros({}))
    helpers.assert_error("bad argument #2 to 'lstsq' (b has 4 rows, a is 3 x 2)", L.lstsq, gpu.zeros({3, 2}),
                         gpu.zeros({4}))
    helpers.assert_error("bad argument #3 to 'lstsq' (option 'rcond' must be a number, got string)",
                         L.lstsq, gpu.zeros({3, 2}), gpu.zeros({3}), {rcond = "x"})
    local freed = gpu.zeros({3, 2})
    freed:free()
    helpers.assert_error("bad argument #1 to 'lstsq' (array has been freed)", L.lstsq, freed, b)
    helpers.assert_error("bad argument #2 to 'lstsq' (array has been freed)", L.lstsq, gpu.zeros({3, 2}),
                         freed)
  end)

  helpers.gpu_it("matrix_power: int32 exactly (wrapping), floats, negative powers, stacks, views", function()
    local s = gpu.Stream()
    -- int32: Lua's integer products wrap modulo 2^64, so each product modulo 2^32 is exact
    for c, case in ipairs{{{}, 3}, {{2, 3}, 4}, {{2}, 1}} do
      local batch, n = case[1], case[2]
      local mats = {}
      for i = 1, product(batch) do mats[i] = random_matrix(n, n, "int32") end
      local a, A = to_device(mats, shape_with(batch, n, n), "int32")
      for _, power in ipairs{0, 1, 2, 3, 5, 13, 100} do
        local x = L.matrix_power(a, power, c % 2 == 0 and {stream = s} or nil)
        s:synchronize()
        local what = ("matrix_power int32 case %d power %d"):format(c, power)
        assert.are.same(shape_with(batch, n, n), x.shape, what)
        assert.are.equal("int32", x.dtype, what)
        local h = R.get(x)
        for i = 1, #A do
          local P = {}
          for r = 1, n do
            P[r] = {}
            for q = 1, n do P[r][q] = r == q and 1 or 0 end
          end
          for _ = 1, power do
            local next_ = {}
            for r = 1, n do
              next_[r] = {}
              for q = 1, n do
                local v = 0
                for t = 1, n do v = v + P[r][t] * math.tointeger(A[i][t][q][1]) end
                next_[r][q] = v
              end
            end
            P = next_
          end
          for r = 1, n do
            for q = 1, n do
              assert.are.equal(int32(P[r][q]), h[(i - 1) * n * n + (r - 1) * n + q], what)
            end
          end
        end
        if power == 1 then assert.are_not.equal(a, x) end
      end
    end
    for _, dtype in ipairs{"float32", "float64", "complex64", "complex128"} do
      local eps = EPS[dtype]
      local mats = {}
      for i = 1, 6 do mats[i] = random_matrix(4, 4, dtype) end
      local a, A = to_device(mats, {2, 3, 4, 4}, dtype)
      for _, power in ipairs{2, 3, 6, 11} do
        local x = L.matrix_power(a, power)
        local what = ("matrix_power %s power %d"):format(dtype, power)
        assert.are.same({2, 3, 4, 4}, x.shape, what)
        assert.are.equal(dtype, x.dtype, what)
        for i, X in ipairs(matrices_of(x)) do
          local P = A[i]
          for _ = 2, power do P = matmul(P, A[i]) end
          assert_small(distance(X, P), 30 * power * 4 * eps * norm(A[i]) ^ power, what .. " matrix " .. i)
        end
      end
      -- negative: inv(a) to the power; a^2 x = I
      local d, D = to_device({dominant(4, dtype), dominant(4, dtype)}, {2, 4, 4}, dtype)
      local x = L.matrix_power(d, -2, {stream = s})
      s:synchronize()
      for i, X in ipairs(matrices_of(x)) do
        local D2 = matmul(D[i], D[i])
        assert_small(distance(matmul(D2, X), identity(4)), 30 * 4 * eps * norm(D2) * norm(X),
                     dtype .. " power -2")
      end
      -- a transposed view: its own powers
      local upper = to_device({{{ONE, {2.0, 0.0}}, {ZERO, ONE}}}, {2, 2}, dtype)
      local t = values_of(L.matrix_power(upper:transpose(), 5))
      for i, want in ipairs{1, 0, 10, 1} do assert.are.same({want, 0}, t[i], dtype .. " transposed " .. i) end
    end
    -- int32's negative powers are float64 (inv's); zero powers keep the dtype
    local a = R.reshaped(R.to_gpu({2, 0, 0, 4}, "int32"), {2, 2})
    local x = L.matrix_power(a, -2)
    assert.are.equal("float64", x.dtype)
    local inverse_squared = values_of(x)
    for i, want in ipairs{0.25, 0, 0, 1 / 16} do assert.are.equal(want, inverse_squared[i][1]) end
    local one = L.matrix_power(gpu.zeros({2, 3, 3}, "int8"), 0)
    assert.are.equal("int8", one.dtype)
    local h = one:get()
    for i = 1, 18 do assert.are.equal((i - 1) % 9 % 4 == 0 and 1 or 0, h[i], "identity " .. i) end
    assert.are.same({0, 3, 3}, L.matrix_power(gpu.zeros({0, 3, 3}), 3).shape)
    helpers.assert_error("bad argument #1 to 'matrix_power' (Singular matrix)", L.matrix_power,
                         gpu.zeros({3, 3}), -1)
    helpers.assert_error("bad argument #1 to 'matrix_power' (last 2 dimensions of the array must be square, "
                         .. "got 2 x 3)", L.matrix_power, gpu.zeros({2, 3}), 2)
    helpers.assert_error("bad argument #1 to 'matrix_power' (array of at least 2 dimensions expected, got 1)",
                         L.matrix_power, gpu.zeros({3}), 2)
    helpers.assert_error("bad argument #2 to 'matrix_power' (exponent must be an integer, got float)",
                         L.matrix_power, gpu.zeros({3, 3}), 2.5)
    helpers.assert_error("bad argument #2 to 'matrix_power' (exponent must be an integer, got nil)",
                         L.matrix_power, gpu.zeros({3, 3}))
    local freed = gpu.zeros({3, 3})
    freed:free()
    helpers.assert_error("bad argument #1 to 'matrix_power' (array has been freed)", L.matrix_power, freed, 2)
  end)

  it("multi_dot's order: NumPy's least count of multiplications, the least split where tied", function()
    local chain_order = require("gpu.linalg").chain_order
    -- the classic six matrices: ((A1 (A2 A3)) ((A4 A5) A6)), 15125 multiplications
    local split, cost = chain_order({30, 35, 15, 5, 10, 20, 25})
    assert.are.equal(15125, cost)
    assert.are.equal(3, split[1][6])
    assert.are.equal(1, split[1][3])
    assert.are.equal(5, split[4][6])
    split, cost = chain_order({10, 100, 5, 50})      -- (A B) C: 7500, not A (B C): 75000
    assert.are.equal(2, split[1][3])
    assert.are.equal(7500, cost)
    split = chain_order({2, 2, 2, 2})                -- tied: A (B C), as NumPy's
    assert.are.equal(1, split[1][3])
    assert.is_nil(gpu.linalg.chain_order)
  end)

  helpers.gpu_it("multi_dot: chained products, 1-d ends, dtypes, views", function()
    local s = gpu.Stream()
    local cases = {   -- the shapes
      {{10, 30}, {30, 5}, {5, 20}},
      {{7}, {7, 3}, {3, 9}, {9, 4}},
      {{6, 2}, {2, 8}, {8, 3}, {3}},
      {{5}, {5, 4}, {4, 6}, {6, 2}, {2}},
      {{4, 3}, {3}},
      {{3}, {3, 4}},
      {{3, 20}, {20, 2}, {2, 30}, {30, 1}, {1, 8}},
    }
    for _, dtype in ipairs{"float32", "float64", "complex64", "complex128", "int32"} do
      local eps = EPS[dtype] or 0
      for c, shapes in ipairs(cases) do
        local arrays, mats = {}, {}
        local total = 0
        for i, shape in ipairs(shapes) do
          local rows, cols = shape[1], shape[2] or 1
          if #shape == 1 and i == 1 then rows, cols = 1, shape[1] end
          local a, A = to_device({random_matrix(rows, cols, dtype)}, {rows, cols}, dtype)
          arrays[i] = #shape == 1 and R.reshaped(a, shape) or a
          mats[i] = A[1]
          total = total + shape[1]
        end
        local x = L.multi_dot(arrays, c % 2 == 0 and {stream = s} or nil)
        s:synchronize()
        local what = ("multi_dot %s case %d"):format(dtype, c)
        local want_shape = {}
        if #shapes[1] == 2 then want_shape[#want_shape + 1] = shapes[1][1] end
        if #shapes[#shapes] == 2 then want_shape[#want_shape + 1] = shapes[#shapes][2] end
        assert.are.same(want_shape, x.shape, what)
        assert.are.equal(dtype, x.dtype, what)
        local P = chain_product(mats)
        local got = values_of(x)
        local bound = 0
        if eps > 0 then
          bound = 30 * total * eps
          for _, A in ipairs(mats) do bound = bound * norm(A) end
        end
        local k = 0
        for i = 1, #P do
          for j = 1, #P[1] do
            k = k + 1
            assert_small(abs(sub(got[k], P[i][j])), bound, what .. " element " .. k)
          end
        end
      end
    end
    -- views and mixed dtypes: a transposed, float32 with float64
    local a, A = to_device({random_matrix(3, 4, "float64")}, {3, 4}, "float64")
    local b, B = to_device({random_matrix(3, 5, "float32")}, {3, 5}, "float32")
    local c, C = to_device({random_matrix(5, 2, "float64")}, {5, 2}, "float64")
    local x = L.multi_dot({a:transpose(), b, c})
    assert.are.equal("float64", x.dtype)
    assert_small(distance(matrices_of(x)[1], chain_product({transpose(A[1]), B[1], C[1]})), 1e-5, "views")
    helpers.assert_error("bad argument #1 to 'multi_dot' (at least 2 arrays expected, got 1)",
                         L.multi_dot, {a})
    helpers.assert_error("bad argument #1 to 'multi_dot' (list of arrays expected, got gpu.GPUArray)",
                         L.multi_dot, a)
    helpers.assert_error("bad argument #1 to 'multi_dot' (array 1 has 4 columns, array 2 5 rows)",
                         L.multi_dot, {a, c})
    helpers.assert_error("bad argument #1 to 'multi_dot' (array 2 has 1 dimensions, 2 expected)",
                         L.multi_dot, {a, gpu.zeros({4}), c})
    helpers.assert_error("bad argument #1 to 'multi_dot' (array 1 has 3 dimensions, 1 or 2 expected)",
                         L.multi_dot, {gpu.zeros({2, 3, 4}), c})
    helpers.assert_error("bad argument #1 to 'multi_dot' (GPUArray expected, got nil)",   -- a hole
                         L.multi_dot, {a, nil, c})
    helpers.assert_error("bad argument #2 to 'multi_dot' (unknown option 'out')", L.multi_dot, {a, b},
                         {out = a})
    local freed = gpu.zeros({3, 5})
    freed:free()
    helpers.assert_error("bad argument #1 to 'multi_dot' (array has been freed)", L.multi_dot, {a, freed, c})
  end)

  helpers.gpu_it("cond: the singular values' ratio, norms of a and inv(a), inf where singular", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      -- p = nil, 2, -2 and "nuc" against the singular values svd gives, of any shape
      for c, case in ipairs{{{}, 4, 4}, {{3}, 5, 3}, {{2, 2}, 3, 6}, {{}, 1, 1}} do
        local batch, m, n = table.unpack(case)
        local mats = {}
        for i = 1, product(batch) do mats[i] = m == n and dominant(n, dtype) or random_matrix(m, n, dtype) end
        local a = to_device(mats, shape_with(batch, m, n), dtype)
        local sv = values_of(L.svd(a, {compute_uv = false}))
        local k = math.min(m, n)
        for _, p in ipairs{"default", 2, -2, "nuc"} do
          if p ~= "nuc" or m == n then
            local x = L.cond(a, {p = p ~= "default" and p or nil, stream = c % 2 == 0 and s or nil})
            s:synchronize()
            local what = ("cond %s case %d p %s"):format(dtype, c, p)
            assert.are.same(batch, x.shape, what)
            assert.are.equal(REAL[out], x.dtype, what)
            local got = values_of(x)
            for i = 1, product(batch) do
              local first, last = sv[(i - 1) * k + 1][1], sv[i * k][1]
              local want = p == -2 and last / first or first / last
              if p == "nuc" then
                local sum, reciprocals = 0, 0
                for j = 1, k do
                  sum = sum + sv[(i - 1) * k + j][1]
                  reciprocals = reciprocals + 1 / sv[(i - 1) * k + j][1]
                end
                want = sum * reciprocals
              end
              helpers.assert_close(want, got[i][1], 30 * k * eps, what .. " matrix " .. i)
            end
          end
        end
      end
      -- the norms: against a Lua inverse
      local mats = {dominant(4, dtype), dominant(4, dtype), dominant(4, dtype)}
      local a, A = to_device(mats, {3, 4, 4}, dtype)
      for _, p in ipairs{"fro", 1, -1, math.huge, -math.huge} do
        local x = values_of(L.cond(a, {p = p}))
        for i = 1, 3 do
          local want = matrix_norm(A[i], p) * matrix_norm(inverse_reference(A[i]), p)
          helpers.assert_close(want, x[i][1], 100 * 4 * eps * want,
                               ("cond %s p %s matrix %d"):format(dtype, p, i))
        end
      end
      -- 2 x 2 in closed form: the singular values' squares are the eigenvalues of a^H a
      local b, B = to_device({dominant(2, dtype)}, {2, 2}, dtype)
      local G = matmul(ct(B[1]), B[1])
      local half, det = (G[1][1][1] + G[2][2][1]) / 2, abs(det_reference(G))
      local root = math.sqrt(math.max(half * half - det, 0))
      local want = math.sqrt((half + root) / (half - root))
      helpers.assert_close(want, L.cond(b)[1], 1e3 * eps * want * want, "cond 2 x 2 " .. dtype)
      -- singular: inf, NumPy's NaN made inf
      for _, p in ipairs{"default", 2, -2, "nuc", "fro", 1, -1, math.huge, -math.huge} do
        local zero = values_of(L.cond(gpu.zeros({2, 3, 3}, dtype), {p = p ~= "default" and p or nil}))
        for i = 1, 2 do assert.are.equal(math.huge, zero[i][1], ("cond of zero %s p %s"):format(dtype, p)) end
      end
      local rank_one = to_device({{{ONE, {2.0, 0.0}}, {{2.0, 0.0}, {4.0, 0.0}}}}, {2, 2}, dtype)
      assert.are.equal(math.huge, L.cond(rank_one, {p = 1})[1], "cond of a singular matrix " .. dtype)
    end
    assert.are.same({0}, L.cond(gpu.zeros({0, 3, 3})).shape)
    helpers.assert_error("bad argument #1 to 'cond' (cond is not defined on empty arrays)", L.cond,
                         gpu.zeros({3, 0}))
    helpers.assert_error("bad argument #2 to 'cond' (invalid norm order 3 for matrices)", L.cond,
                         gpu.zeros({3, 3}), {p = 3})
    helpers.assert_error("bad argument #2 to 'cond' (invalid norm order 'x' for matrices)", L.cond,
                         gpu.zeros({3, 3}), {p = "x"})
    helpers.assert_error("bad argument #1 to 'cond' (last 2 dimensions of the array must be square, "
                         .. "got 3 x 4)",
                         L.cond, gpu.zeros({3, 4}), {p = "fro"})
    local a = gpu.zeros({3, 3})
    a:free()
    helpers.assert_error("bad argument #1 to 'cond' (array has been freed)", L.cond, a)
  end)

  helpers.gpu_it("eig and eigvals: a v = v diag(w), unit columns, the trace and tr(a^2)", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local out = (dtype == "float32" or dtype == "complex64") and "complex64" or "complex128"
      local eps = EPS[out]
      for c, case in ipairs{{{}, 4}, {{3}, 5}, {{2, 1}, 3}, {{}, 1}, {{}, 12}} do
        local batch, n = case[1], case[2]
        local mats = {}
        for i = 1, product(batch) do mats[i] = random_matrix(n, n, dtype) end
        local a, A = to_device(mats, shape_with(batch, n, n), dtype)
        local opts = c % 2 == 0 and {stream = s} or nil
        local w, v = L.eig(a, opts)
        local values = L.eigvals(a, opts)
        s:synchronize()
        local what = ("eig %s case %d"):format(dtype, c)
        assert.are.same(shape_with(batch, n), w.shape, what)
        assert.are.same(shape_with(batch, n, n), v.shape, what)
        assert.are.same(shape_with(batch, n), values.shape, what)
        assert.are.equal(out, w.dtype, what)
        assert.are.equal(out, v.dtype, what)
        assert.are.equal(out, values.dtype, what)
        local W, V, E = values_of(w), matrices_of(v), values_of(values)
        for i = 1, #A do
          local Ai, Vi = A[i], V[i]
          local na = norm(Ai)
          local VW = matrix(n, n, function(r, q) return mul(Vi[r][q], W[(i - 1) * n + q]) end)
          assert_small(distance(matmul(Ai, Vi), VW), 30 * n * eps * na * norm(Vi), what .. " a v = v w")
          for q = 1, n do
            local column = 0
            for r = 1, n do column = column + abs(Vi[r][q]) ^ 2 end
            assert_small(math.abs(math.sqrt(column) - 1), 30 * n * eps, what .. " unit column " .. q)
          end
          -- eigvals (computed without the vectors): the same trace and trace of a^2
          local A2 = matmul(Ai, Ai)
          local trace, trace2, sum, sum2 = ZERO, ZERO, ZERO, ZERO
          for r = 1, n do
            trace, trace2 = add(trace, Ai[r][r]), add(trace2, A2[r][r])
            local e = E[(i - 1) * n + r]
            sum, sum2 = add(sum, e), add(sum2, mul(e, e))
          end
          assert_small(abs(sub(sum, trace)), 30 * n * eps * na, what .. " eigvals' sum")
          assert_small(abs(sub(sum2, trace2)), 30 * n * eps * na * na, what .. " eigvals' squares")
        end
      end
    end
    -- exactly: a rotation's i and -i, a triangular matrix's diagonal (in either order)
    local rotation = to_device({{{ZERO, {-1.0, 0.0}}, {ONE, ZERO}}}, {2, 2}, "float64")
    local w = values_of(L.eigvals(rotation))
    if w[1][2] < 0 then w[1], w[2] = w[2], w[1] end
    for i, want in ipairs{{0, 1}, {0, -1}} do assert_small(abs(sub(w[i], want)), 1e-14, "rotation " .. i) end
    local triangular = to_device({{{ONE, {2.0, 0.0}}, {ZERO, {3.0, 0.0}}}}, {2, 2}, "float32")
    w = values_of(L.eigvals(triangular:transpose()))
    if w[1][1] > w[2][1] then w[1], w[2] = w[2], w[1] end
    for i, want in ipairs{{1, 0}, {3, 0}} do assert_small(abs(sub(w[i], want)), 1e-5, "triangular " .. i) end
    local e, ev = L.eig(gpu.zeros({0, 3, 3}))
    assert.are.same({0, 3}, e.shape)
    assert.are.same({0, 3, 3}, ev.shape)
    helpers.assert_error("bad argument #1 to 'eig' (last 2 dimensions of the array must be square, "
                         .. "got 3 x 4)",
                         L.eig, gpu.zeros({3, 4}))
    helpers.assert_error("bad argument #2 to 'eigvals' (unknown option 'UPLO')", L.eigvals, gpu.zeros({3, 3}),
                         {UPLO = "L"})
    local freed = gpu.zeros({3, 3})
    freed:free()
    helpers.assert_error("bad argument #1 to 'eig' (array has been freed)", L.eig, freed)
    helpers.assert_error("bad argument #1 to 'eigvals' (array has been freed)", L.eigvals, freed)
  end)

  -- Real matrices go through geev in real arithmetic, their packed eigenvectors unpacked on the
  -- device: matrices of known eigenvalues, conjugate pairs (repeated too) and real ones.
  helpers.gpu_it("eig of real matrices: conjugate pairs unpacked, real eigenvalues, unit vectors", function()
    -- Block diagonal: {a, b} gives the block {{a, -b}, {b, a}} (eigenvalues a +- bi), {a, 0} the
    -- single a; returns the matrix and its eigenvalues.
    local function blocks(list)
      local entries, values = {}, {}
      for _, ab in ipairs(list) do
        local a, b, k = ab[1], ab[2], #values
        if b == 0 then
          entries[#entries + 1] = {k + 1, k + 1, a}
          values[k + 1] = {a, 0}
        else
          for _, e in ipairs{{1, 1, a}, {1, 2, -b}, {2, 1, b}, {2, 2, a}} do
            entries[#entries + 1] = {k + e[1], k + e[2], e[3]}
          end
          values[k + 1], values[k + 2] = {a, b}, {a, -b}
        end
      end
      local B = matrix(#values, #values, function() return ZERO end)
      for _, e in ipairs(entries) do B[e[1]][e[2]] = {e[3] + 0.0, 0.0} end
      return B, values
    end
    -- P B P^T for a random permutation P (exact in every dtype) and, for floats, Q B Q^T for a
    -- random Householder reflection Q (orthogonal: B's eigenvalues, and its normality, kept).
    local function mixed(B, dtype)
      local n = #B
      local order = {}
      for i = 1, n do order[i] = i end
      for i = n, 2, -1 do
        local j = math.random(i)
        order[i], order[j] = order[j], order[i]
      end
      local P = matrix(n, n, function(i, j) return B[order[i]][order[j]] end)
      if dtype:match("int") then return P end
      local u, uu = {}, 0
      for i = 1, n do u[i] = math.random() * 2 - 1; uu = uu + u[i] * u[i] end
      local Q = matrix(n, n, function(i, j) return {(i == j and 1 or 0) - 2 * u[i] * u[j] / uu, 0.0} end)
      return matmul(matmul(Q, P), Q)   -- Q is its own transpose
    end
    -- upper triangular, the diagonal given, small integers above it
    local function triangular(diagonal)
      local n = #diagonal
      return matrix(n, n, function(i, j)
        if i == j then return {diagonal[i] + 0.0, 0.0} end
        return i < j and {math.random(-3, 3) + 0.0, 0.0} or ZERO
      end)
    end
    -- got, a list of eigenvalues, against those wanted (in any order): each wanted one matched
    -- to the nearest unused one got, within bound.
    local function matched(got, values, bound, what)
      local used = {}
      for _, want in ipairs(values) do
        local best
        for k = 1, #got do
          if not used[k] and (best == nil or abs(sub(got[k], want)) < abs(sub(got[best], want))) then
            best = k
          end
        end
        used[best] = true
        assert_small(abs(sub(got[best], want)), bound,
                     what .. (" eigenvalue %g%+gi"):format(want[1], want[2]))
      end
    end
    -- w, v of the i-th matrix against A and its eigenvalues: a v = v diag(w); each column of
    -- norm 1 with a largest component real; w's conjugate pairs adjacent, the one of positive
    -- imaginary part first, their vectors exact conjugates; real w, real vectors; the values
    -- those wanted (each matched to the nearest unused one) within bound.
    local function check(W, V, i, A, values, eps, bound, what)
      local n = #A
      local na, Vi = norm(A), V[i]
      local Wi = {}
      for q = 1, n do Wi[q] = W[(i - 1) * n + q] end
      local VW = matrix(n, n, function(r, q) return mul(Vi[r][q], Wi[q]) end)
      assert_small(distance(matmul(A, Vi), VW), 30 * n * eps * na * norm(Vi), what .. " a v = v w")
      local q = 1
      while q <= n do
        local column, largest = 0, 0
        for r = 1, n do
          column = column + abs(Vi[r][q]) ^ 2
          largest = math.max(largest, abs(Vi[r][q]))
        end
        assert_small(math.abs(math.sqrt(column) - 1), 30 * n * eps, what .. " unit column " .. q)
        local real_largest = false
        for r = 1, n do
          if abs(Vi[r][q]) >= largest - 30 * n * eps and math.abs(Vi[r][q][2]) <= 30 * n * eps then
            real_largest = true
          end
        end
        assert(real_largest, what .. " largest component real, column " .. q)
        if Wi[q][2] == 0 then
          for r = 1, n do assert.are.equal(0, Vi[r][q][2], what .. " real vector " .. q) end
          q = q + 1
        else
          assert(Wi[q][2] > 0 and q < n, what .. " pair's first of positive imaginary part " .. q)
          assert.are.same(conj(Wi[q]), Wi[q + 1], what .. " conjugate pair " .. q)
          for r = 1, n do
            assert.are.same(conj(Vi[r][q]), Vi[r][q + 1], what .. " conjugate vectors " .. q)
          end
          q = q + 2
        end
      end
      matched(Wi, values, bound * na, what)
    end
    local s = gpu.Stream()
    for _, dtype in ipairs{"float32", "float64", "int32"} do
      local out = dtype == "float32" and "complex64" or "complex128"
      local eps = EPS[out]
      -- pairs and real values interleaved, a stack of two mixings, on a stream
      local B, values = blocks{{1, 2}, {3, 0}, {-2, 1}, {4, 0}, {-1, 3}}
      local a, A = to_device({mixed(B, dtype), mixed(B, dtype)}, {2, 8, 8}, dtype)
      local w, v = L.eig(a, {stream = s})
      s:synchronize()
      assert.are.equal(out, w.dtype, dtype)
      assert.are.equal(out, v.dtype, dtype)
      assert.are.same({2, 8}, w.shape, dtype)
      assert.are.same({2, 8, 8}, v.shape, dtype)
      local W, V = values_of(w), matrices_of(v)
      for i = 1, 2 do
        check(W, V, i, A[i], values, eps, 30 * 8 * eps, ("eig %s pairs %d"):format(dtype, i))
      end
      local E = values_of(L.eigvals(a))
      for i = 1, 2 do
        matched({table.unpack(E, 8 * i - 7, 8 * i)}, values, 30 * 8 * eps * norm(A[i]), "eigvals " .. dtype)
      end
      -- a repeated pair: +-i twice
      B, values = blocks{{0, 1}, {0, 1}}
      a, A = to_device({mixed(B, dtype)}, {4, 4}, dtype)
      w, v = L.eig(a)
      check(values_of(w), matrices_of(v), 1, A[1], values, eps, 30 * 4 * eps, "eig repeated pair " .. dtype)
      -- real eigenvalues only, of a non-normal matrix, through a transposed view
      local T = triangular{1, -2, 4, 7, -5}
      local t = to_device({transpose(T)}, {5, 5}, dtype)
      w, v = L.eig(t:transpose())
      check(values_of(w), matrices_of(v), 1, T, {{1, 0}, {-2, 0}, {4, 0}, {7, 0}, {-5, 0}}, eps,
            1e3 * 5 * eps, "eig real " .. dtype)
      -- random 40 x 40, a stack of two (mostly conjugate pairs; past a 32 x 32 tile, so that
      -- the unpacking kernel reads w, broadcast along rows, through tiles)
      a, A = to_device({random_matrix(40, 40, dtype), random_matrix(40, 40, dtype)}, {2, 40, 40}, dtype)
      w, v = L.eig(a)
      W, V = values_of(w), matrices_of(v)
      for i = 1, 2 do check(W, V, i, A[i], {}, eps, 0, ("eig %s random 40 x 40 %d"):format(dtype, i)) end
      -- 1 x 1 and empty
      w, v = L.eig((to_device({{{{-3.0, 0.0}}}}, {1, 1}, dtype)))
      assert.are.same({{-3, 0}}, values_of(w), dtype)
      local one = matrices_of(v)[1][1][1]     -- norm 1: 1 or -1
      assert.are.same({1, 0}, {math.abs(one[1]), one[2]}, dtype)
      w, v = L.eig(gpu.zeros({2, 0, 0}, dtype))
      assert.are.same({2, 0}, w.shape, dtype)
      assert.are.same({2, 0, 0}, v.shape, dtype)
      assert.are.equal(out, v.dtype, dtype)
    end
  end)

  helpers.gpu_it("tensorinv and tensorsolve: inv and solve of the reshaped tensors", function()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[computed(dtype)]
      local a, A = to_device({dominant(24, dtype)}, {24, 24}, dtype)
      local x = L.tensorinv(R.reshaped(a, {4, 6, 8, 3}))
      assert.are.same({8, 3, 4, 6}, x.shape, dtype)
      assert.are.equal(computed(dtype), x.dtype, dtype)
      local X = matrices_of(x:reshape(24, 24))[1]
      assert_small(distance(matmul(A[1], X), identity(24)), 30 * 24 * eps * norm(A[1]) * norm(X),
                   "tensorinv " .. dtype)
      local x1 = L.tensorinv(R.reshaped(a, {24, 4, 6}), {ind = 1})
      assert.are.same({4, 6, 24}, x1.shape, dtype)
      -- tensorsolve: a (2, 3, 6), b (2, 3): x (6,)
      local t, T = to_device({dominant(6, dtype)}, {6, 6}, dtype)
      local b, B = to_device({random_matrix(6, 1, dtype)}, {6, 1}, dtype)
      local y = L.tensorsolve(R.reshaped(t, {2, 3, 6}), R.reshaped(b, {2, 3}))
      assert.are.same({6}, y.shape, dtype)
      local Y = matrices_of(y:reshape(6, 1))[1]
      assert_small(distance(matmul(T[1], Y), B[1]), 30 * 6 * eps * (norm(T[1]) * norm(Y) + norm(B[1])),
                   "tensorsolve " .. dtype)
      -- axes: a's first axis moved to the end gives the same system
      local moved = R.reshaped(t, {2, 3, 6}):transpose({3, 1, 2})
      local z = values_of(L.tensorsolve(moved, R.reshaped(b, {2, 3}), {axes = {1}}))
      local want = values_of(y)
      for i = 1, 6 do assert.are.same(want[i], z[i], "tensorsolve axes " .. dtype) end
    end
    helpers.assert_error("bad argument #1 to 'tensorinv' (the product of the first 2 lengths (6) must be "
                         .. "that of the rest (4))", L.tensorinv, gpu.zeros({2, 3, 4}))
    helpers.assert_error("bad argument #2 to 'tensorinv' (option 'ind' must be a positive integer, got 0)",
                         L.tensorinv, gpu.zeros({2, 2}), {ind = 0})
    helpers.assert_error("bad argument #2 to 'tensorsolve' (a (2,3,5) and b (2,3): the product of a's last "
                         .. "1 lengths must be b's size and that of a's first 2)", L.tensorsolve,
                         gpu.zeros({2, 3, 5}), gpu.zeros({2, 3}))
    local a = gpu.zeros({2, 2})
    a:free()
    helpers.assert_error("bad argument #1 to 'tensorinv' (array has been freed)", L.tensorinv, a)
    helpers.assert_error("bad argument #1 to 'tensorsolve' (array has been freed)", L.tensorsolve, a,
                         gpu.zeros({2}))
  end)
end)

describe("gpu.linalg's functions of the factorizations without a GPU", function()
  -- the stand-ins run no kernel and factor nothing: the shapes, dtypes and errors alone
  it("give NumPy's shapes and dtypes, and name bad arguments", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local L = gpu.linalg
      local function show(name, ...)
        local r = table.pack(pcall(...))
        local parts = {}
        for i = 2, r.n do
          local v = r[i]
          parts[#parts + 1] = type(v) == "userdata" and v.dtype .. "(" .. table.concat(v.shape, ",") .. ")"
                              or (tostring(v):gsub("^[^:]*:%d+: ", ""))
        end
        print(name .. ": " .. table.concat(parts, " "))
      end
      show("pinv", L.pinv, gpu.zeros({2, 5, 3}, "float32"))
      show("pinv hermitian", L.pinv, gpu.zeros({4, 4}, "complex64"), {hermitian = true})
      show("pinv int", L.pinv, gpu.zeros({3, 5}, "int16"), {rcond = 1e-3})
      -- (the stand-in's singular values, whatever they are, decide the rank and the residuals)
      show("lstsq", function(...)
        local x, _, rank, s = L.lstsq(...)
        return x, math.type(rank), s
      end, gpu.zeros({6, 3}, "complex128"), gpu.zeros({6, 2}, "float32"))
      show("lstsq empty", L.lstsq, gpu.zeros({3, 0}), gpu.zeros({3}))
      show("matrix_power", L.matrix_power, gpu.zeros({2, 3, 3}, "int32"), 7)
      show("matrix_power 0", L.matrix_power, gpu.zeros({3, 3}, "uint8"), 0)
      show("matrix_power -3", L.matrix_power, gpu.zeros({3, 3}, "int32"), -3)
      show("multi_dot", L.multi_dot, {gpu.zeros({5}), gpu.zeros({5, 3}), gpu.zeros({3, 7}), gpu.zeros({7})})
      show("multi_dot row", L.multi_dot, {gpu.zeros({5}, "float32"), gpu.zeros({5, 3}), gpu.zeros({3, 2})})
      show("cond", L.cond, gpu.zeros({2, 3, 3}, "complex64"))
      show("cond inf", L.cond, gpu.zeros({3, 3}, "int8"), {p = math.huge})
      show("cond nuc", L.cond, gpu.zeros({2, 3, 3}, "float32"), {p = "nuc"})
      show("cond empty stack", L.cond, gpu.zeros({0, 3, 3}))
      show("tensorinv", L.tensorinv, gpu.zeros({4, 6, 8, 3}))
      show("tensorsolve", L.tensorsolve, gpu.zeros({6, 2, 3}), gpu.zeros({2, 3}), {axes = {1}})
      show("eig", L.eig, gpu.zeros({2, 3, 3}, "float32"))
      show("eigvals", L.eigvals, gpu.zeros({4, 4}, "int8"))
      show("bad", L.pinv, gpu.zeros({3, 3}), {rcond = true})
      show("bad", L.pinv, gpu.zeros({3, 3}, "float16"))
      show("bad", L.lstsq, gpu.zeros({3, 3}), gpu.zeros({3, 3, 1}))
      show("bad", L.matrix_power, gpu.zeros({3, 3}), "2")
      show("bad", L.multi_dot, {})
      show("bad", L.multi_dot, {gpu.zeros({2, 2}), 3})
      show("bad", L.cond, gpu.zeros({3, 3}), {p = -math.huge, q = 1})
      show("bad", L.cond, gpu.zeros({3, 3}), {p = 0})
      show("bad", L.tensorinv, gpu.zeros({2, 2}), {ind = 3})
      show("bad", L.tensorsolve, gpu.zeros({2, 2}), gpu.zeros({2}), {axes = {3}})
      local core = require "gpu.core"
      show("bad", core.solver_geev, gpu.zeros({3, 3}, "int32"), gpu.zeros({3}, "complex128"), nil,
           gpu.zeros({}, "int32"))
      show("bad", core.solver_geev, gpu.zeros({3, 3}, "complex64"), gpu.zeros({3}, "complex128"), nil,
           gpu.zeros({}, "int32"))
      show("bad", core.solver_geev, gpu.zeros({3, 3}, "float32"), gpu.zeros({3}, "float32"), nil,
           gpu.zeros({}, "int32"))
      show("bad", core.solver_geev, gpu.zeros({3, 3}), gpu.zeros({3}, "complex128"),
           gpu.zeros({3, 3}, "complex128"), gpu.zeros({}, "int32"))
      show("eig complex", L.eig, gpu.zeros({2, 2}, "complex128"))
    ]], {FAKE_CUSOLVER_INFO = "0"})
    assert(ok, out)
    local lines, geev = {}, {}
    for line in out:gmatch("[^\n]+") do
      if line:match("^fakecusolver: Xgeev") then geev[#geev + 1] = line:sub(15)
      elseif not line:match("^fakecu") then lines[#lines + 1] = line end
    end
    -- geev of each matrix, a^T's copy (column-major a), left eigenvectors never: real matrices
    -- (integers as float64) in real arithmetic with complex eigenvalues, complex ones in complex
    local real32 = "W C_32F VL R_32F VR R_32F compute R_32F"
    local real64 = "W C_64F VL R_64F VR R_64F compute R_64F"
    local complex128 = "W C_64F VL C_64F VR C_64F compute C_64F"
    assert.are.same({"Xgeev novectors vectors R_32F n 3 lda 3 ldvr 3 " .. real32,
                     "Xgeev novectors vectors R_32F n 3 lda 3 ldvr 3 " .. real32,
                     "Xgeev novectors novectors R_64F n 4 lda 4 ldvr 4 " .. real64,
                     "Xgeev novectors vectors C_64F n 2 lda 2 ldvr 2 " .. complex128}, geev)
    assert.are.same({
      "pinv: float32(2,3,5)",
      "pinv hermitian: complex64(4,4)",
      "pinv int: float64(5,3)",
      "lstsq: complex128(3,2) integer float64(3)",
      "lstsq empty: float64(0) float64(1) 0 float64(0)",
      "matrix_power: int32(2,3,3)",
      "matrix_power 0: uint8(3,3)",
      "matrix_power -3: float64(3,3)",
      "multi_dot: float64()",
      "multi_dot row: float64(2)",
      "cond: float32(2)",
      "cond inf: float64()",
      "cond nuc: float32(2)",
      "cond empty stack: float64(0)",
      "tensorinv: float64(8,3,4,6)",
      "tensorsolve: float64(6)",
      "eig: complex64(2,3) complex64(2,3,3)",
      "eigvals: complex128(4)",
      "bad: bad argument #2 to 'pinv' (option 'rcond' must be a number, got boolean)",
      "bad: bad argument #1 to 'pinv' (array type float16 is unsupported in linalg)",
      "bad: bad argument #2 to 'lstsq' (array of 1 or 2 dimensions expected, got 3)",
      "bad: bad argument #2 to 'matrix_power' (exponent must be an integer, got string)",
      "bad: bad argument #1 to 'multi_dot' (at least 2 arrays expected, got 0)",
      "bad: bad argument #1 to 'multi_dot' (GPUArray expected, got number)",
      "bad: bad argument #2 to 'cond' (unknown option 'q')",
      "bad: bad argument #2 to 'cond' (invalid norm order 0 for matrices)",
      "bad: bad argument #2 to 'tensorinv' (option 'ind' is 3, beyond the array's 2 dimensions)",
      "bad: bad argument #3 to 'tensorsolve' (axis 3 is out of range for a 2-d array)",
      "bad: bad argument #1 to 'gpu.core.solver_geev' (float32, float64, complex64 or complex128 array "
      .. "expected, got int32)",
      "bad: bad argument #2 to 'gpu.core.solver_geev' (complex64 array expected, got complex128)",
      "bad: bad argument #2 to 'gpu.core.solver_geev' (complex64 array expected, got float32)",
      "bad: bad argument #3 to 'gpu.core.solver_geev' (float64 array expected, got complex128)",
      "eig complex: complex128(2) complex128(2,2)",
    }, lines)
    -- geev's infos: NumPy's message, naming the function
    out = helpers.run_with_fakes([[
      local gpu = require "gpu"
      print(pcall(gpu.linalg.eigvals, gpu.zeros({2, 3, 3})))
    ]], {FAKE_CUSOLVER_INFO = "1"})
    assert.truthy(out:find("false\t[^\n]*bad argument #1 to 'eigvals' %(Eigenvalues did not converge%)\n"),
                  out)
  end)
end)
