-- gpu.linalg's batched routines (lua/gpu/linalg.lua, src/solver.c): stacks of 2 or more
-- matrices of at most 32 rows go to one batched call for the whole stack (cuBLAS's
-- getrfBatched, getrsBatched, getriBatched for solve, inv, det and slogdet; cuSOLVER's
-- potrfBatched for cholesky, syevjBatched for eigh and eigvalsh, gesvdjBatched for svd,
-- matrix_rank, pinv and cond).  On a GPU: results checked in Lua, in doubles, against the
-- values the device was given, as spec/54 checks the loop's (a x = b, a inv(a) = I,
-- determinants against a Lua LU, L L^H = a, a v = v diag(w), u diag(s) vh = a with singular
-- values against a Lua one-sided Jacobi's), for each dtype, stacks of 1000 4 x 4, 37 7 x 7
-- and 3 32 x 32 matrices (1000 4 x 3, 37 5 x 7, 3 32 x 32, 2 32 x 20 for svd), views,
-- streams, one singular or indefinite matrix among regular ones; linalg.batched_calls
-- counts the batched calls, so that a silent fall back to the loop fails.  Real stacks of at
-- most linalg.small_rows rows solve, invert, factor, diagonalize and take determinants in
-- batched.cu's kernels: those tests run twice, the second time with small_rows 0 (cuBLAS's
-- and cuSOLVER's routines).  Without a GPU, the stand-ins' traces
-- (tools/fakecublas.c, tools/fakecusolver.c): the pointer arrays' steps, the choice between
-- the batched call and the loop, the infos and failed calls.
--
-- Tolerances as spec/54's: backward-stable factorizations leave residuals within a small
-- multiple of n eps times the norms (Frobenius; eps the dtype's), and the bounds take 30 n eps
-- (100 n eps for determinants of well-conditioned matrices), far below what a wrong layout,
-- pivot or triangle gives (errors of the order of the norms themselves).  syevjBatched and
-- gesvdjBatched stop at cuSOLVER's default tolerance, the machine's precision, as syevd and
-- gesvd converge; singular values move by at most the backward error's norm (Weyl), so that
-- they take the same 30 max(M, N) eps |a| bound.
local helpers = require "helpers"
local R = require "reduction_helpers"
local LR = require "linalg_reference"
local gpu = helpers.gpu
local linalg = require "gpu.linalg"     -- batched_calls, which gpu.linalg leaves out

local L = gpu.linalg

local FLOAT32_MAX = (2 - 2.0 ^ -23) * 2.0 ^ 127
local DTYPES = {"float32", "float64", "complex64", "complex128"}
-- stacks that take the batched routines: the batch shape and n
local STACKS = {{{1000}, 4}, {{37}, 7}, {{3}, 32}, {{2, 3}, 3}}

local EPS, REAL, product, shape_with, ZERO = LR.EPS, LR.REAL, LR.product, LR.shape_with, LR.ZERO
local ONE, add, sub, mul, div, conj, abs = LR.ONE, LR.add, LR.sub, LR.mul, LR.div, LR.conj, LR.abs
local matrix, matmul, ct, transpose, identity = LR.matrix, LR.matmul, LR.ct, LR.transpose, LR.identity
local norm, distance, assert_small, random_entry = LR.norm, LR.distance, LR.assert_small, LR.random_entry
local random_matrix, dominant, hermitian = LR.random_matrix, LR.dominant, LR.hermitian
local with_junk, hermitian_of, pair, to_device = LR.with_junk, LR.hermitian_of, LR.pair, LR.to_device
local matrices_of, values_of, det_reference = LR.matrices_of, LR.values_of, LR.det_reference
local assert_orthonormal = LR.assert_orthonormal

-- A singular matrix: dominant's with a zero row and a zero column, so that U(i, i) is exactly
-- 0 whichever of a and a^T is factored.
local function singular(n, dtype)
  local A = dominant(n, dtype)
  for j = 1, n do A[2][j], A[j][n] = ZERO, ZERO end
  return A
end

-- A's singular values, descending, by one-sided Jacobi (Hestenes) in doubles: the columns of A
-- (of A^H where A is wide) rotated pairwise until orthogonal, their norms then the values; a
-- complex pair is first made real by turning the phase of the second column.  Accurate to
-- about the double's eps times |A|, far below the bounds it is compared within.
local function singular_reference(A)
  local rows, cols = #A, #A[1]
  local wide = rows < cols
  if wide then rows, cols = cols, rows end
  local re, im = {}, {}         -- re[j][i]: column j, row i
  for j = 1, cols do
    re[j], im[j] = {}, {}
    for i = 1, rows do
      local z = wide and conj(A[j][i]) or A[i][j]
      re[j][i], im[j][i] = z[1], z[2]
    end
  end
  for _ = 1, 60 do
    local rotated = false
    for p = 1, cols - 1 do
      for q = p + 1, cols do
        local rp, ip, rq, iq = re[p], im[p], re[q], im[q]
        local alpha, beta, gr, gi = 0, 0, 0, 0     -- |a_p|^2, |a_q|^2, a_p^H a_q
        for i = 1, rows do
          alpha = alpha + rp[i] * rp[i] + ip[i] * ip[i]
          beta = beta + rq[i] * rq[i] + iq[i] * iq[i]
          gr = gr + rp[i] * rq[i] + ip[i] * iq[i]
          gi = gi + rp[i] * iq[i] - ip[i] * rq[i]
        end
        local g = math.sqrt(gr * gr + gi * gi)
        if g > 1e-17 * math.sqrt(alpha * beta) and g > 0 then
          rotated = true
          local cr, ci = gr / g, -gi / g      -- a_q times conj(gamma) / |gamma|: a_p^H a_q = g
          local zeta = (beta - alpha) / (2 * g)
          local t = (zeta >= 0 and 1 or -1) / (math.abs(zeta) + math.sqrt(1 + zeta * zeta))
          local c = 1 / math.sqrt(1 + t * t)
          local sn = c * t
          for i = 1, rows do
            local xr, xi = rq[i] * cr - iq[i] * ci, rq[i] * ci + iq[i] * cr
            rp[i], ip[i], rq[i], iq[i] = c * rp[i] - sn * xr, c * ip[i] - sn * xi,
                                         sn * rp[i] + c * xr, sn * ip[i] + c * xi
          end
        end
      end
    end
    if not rotated then break end
  end
  local values = {}
  for j = 1, cols do
    local sum = 0
    for i = 1, rows do sum = sum + re[j][i] * re[j][i] + im[j][i] * im[j][i] end
    values[j] = math.sqrt(sum)
  end
  table.sort(values, function(x, y) return x > y end)
  return values
end

-- A Householder reflector I - 2 v v^H / (v^H v) of order n, v random: unitary.
local function reflector(n, dtype)
  local v = random_matrix(n, 1, dtype)
  local vv = 0
  for i = 1, n do vv = vv + v[i][1][1] ^ 2 + v[i][1][2] ^ 2 end
  return matrix(n, n, function(i, j)
    local z = mul(v[i][1], conj(v[j][1]))
    return sub(i == j and ONE or ZERO, {2 * z[1] / vv, 2 * z[2] / vv})
  end)
end

-- An m x n matrix whose singular values are the list d (descending, min(m, n) of them):
-- P diag(d) Q for reflectors P and Q.
local function with_singular_values(m, n, d, dtype)
  local D = matrix(m, n, function(i, j) return i == j and {d[i], 0.0} or ZERO end)
  return matmul(matmul(reflector(m, dtype), D), reflector(n, dtype))
end


-- Runs f and asserts that it made `count` calls of the batched routine (getrf, potrf, syevj).
local function assert_batched(routine, count, what, f, ...)
  local before = linalg.batched_calls[routine]
  local results = table.pack(f(...))
  assert.are.equal(count, linalg.batched_calls[routine] - before, what .. ": batched " .. routine .. " calls")
  return table.unpack(results, 1, results.n)
end

-- The routine that solve and inv (getrf), cholesky (potrf), or eigh and eigvalsh (syevj) of a
-- stack of n x n matrices of dtype take: batched.cu's small kernels (counted as small) for
-- real ones of at most linalg.small_rows rows.
local function small_or(routine, dtype, n)
  return REAL[dtype] == dtype and n <= linalg.small_rows and "small" or routine
end
local function lu_routine(dtype, n) return small_or("getrf", dtype, n) end

-- Declares the test `name` twice: with linalg.small_rows as it is, and 0 (every stack to
-- cuBLAS's batched routines).
local function for_both_paths(name, f)
  for _, rows in ipairs{linalg.small_rows, 0} do
    helpers.gpu_it(("%s (small_rows %d)"):format(name, rows), function()
      local was = linalg.small_rows
      linalg.small_rows = rows
      local ok, err = pcall(f)
      linalg.small_rows = was
      assert(ok, err)
    end)
  end
end

local function assert_triangular(F, upper, what)
  for i = 1, #F do
    for j = 1, #F do
      if (upper and i > j) or (not upper and i < j) then
        assert(F[i][j][1] == 0 and F[i][j][2] == 0, ("%s: not triangular at %d, %d"):format(what, i, j))
      end
    end
  end
end

describe("gpu.linalg's batched routines", function()
  for_both_paths("solve: a x = b for stacks of small matrices, vectors and matrices of b, a stream", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      for c, case in ipairs(STACKS) do
        local batch, n = case[1], case[2]
        local count = product(batch)
        local mats = {}
        for i = 1, count do mats[i] = dominant(n, dtype) end
        local a, A = to_device(mats, shape_with(batch, n, n), dtype)
        -- b: a stack of n x 2 matrices, and one vector for the whole stack (broadcast)
        local b_mats = {}
        for i = 1, count do b_mats[i] = random_matrix(n, 2, dtype) end
        local b, B = to_device(b_mats, shape_with(batch, n, 2), dtype)
        local v, V = to_device({random_matrix(n, 1, dtype)}, {n, 1}, dtype)
        v = R.reshaped(v, {n})
        local opts = c % 2 == 0 and {stream = s} or nil
        local what = ("solve %s case %d"):format(dtype, c)
        local x = assert_batched(lu_routine(dtype, n), 1, what, L.solve, a, b, opts)
        local y = assert_batched(lu_routine(dtype, n), 1, what, L.solve, a, v, opts)
        s:synchronize()
        assert.are.same(shape_with(batch, n, 2), x.shape, what)
        assert.are.same(shape_with(batch, n), y.shape, what)
        assert.are.equal(dtype, x.dtype, what)
        local X, Y = matrices_of(x), matrices_of(y:reshape(shape_with(batch, n, 1)))
        for i = 1, count do
          assert_small(distance(matmul(A[i], X[i]), B[i]), 30 * n * eps * (norm(A[i]) * norm(X[i]) + norm(B[i])),
                       what .. " matrix " .. i)
          assert_small(distance(matmul(A[i], Y[i]), V[1]), 30 * n * eps * (norm(A[i]) * norm(Y[i]) + norm(V[1])),
                       what .. " vector " .. i)
        end
      end
    end
    -- a complex stack with cuBLAS off: cuSOLVER's loop, the same x
    local a, A = to_device({dominant(4, "complex128"), dominant(4, "complex128")}, {2, 4, 4}, "complex128")
    local b, B = to_device({random_matrix(4, 1, "complex128"), random_matrix(4, 1, "complex128")}, {2, 4, 1},
                           "complex128")
    local was = gpu.use_cublas(false)
    local ok, x = pcall(assert_batched, "getrf", 0, "cuBLAS off", L.solve, a, b)
    gpu.use_cublas(was)
    assert(ok, x)
    for i, X in ipairs(matrices_of(x)) do
      assert_small(distance(matmul(A[i], X), B[i]), 1e-12 * norm(A[i]) * norm(X), "cuBLAS off " .. i)
    end
    a:free()
    helpers.assert_error("bad argument #1 to 'solve' (array has been freed)", L.solve, a, b)
  end)

  helpers.gpu_it("solve, inv, det and slogdet of stacks that are views: transposed, sliced", function()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      local n, count = 7, 37
      -- (37, 7, 9) sliced to its columns 2 .. 8: square, not contiguous
      local wide = {}
      for i = 1, count do
        local D = dominant(n, dtype)
        wide[i] = matrix(n, n + 2, function(r, col) return (col >= 2 and col <= n + 1) and D[r][col - 1]
                                                           or random_entry(dtype) end)
      end
      local w, W = to_device(wide, {count, n, n + 2}, dtype)
      local sliced = w:narrow(3, 2, n)
      local A = {}
      for i = 1, count do A[i] = matrix(n, n, function(r, col) return W[i][r][col + 1] end) end
      local transposed = sliced:transpose({1, 3, 2})
      local what = "views " .. dtype
      local x = assert_batched(lu_routine(dtype, n), 1, what, L.inv, sliced)
      local xt = assert_batched(lu_routine(dtype, n), 1, what, L.inv, transposed)
      local det = assert_batched(lu_routine(dtype, n), 1, what, L.det, transposed)
      local sign, logabsdet = assert_batched(lu_routine(dtype, n), 1, what, L.slogdet, sliced)
      local X, XT, d, sg, l = matrices_of(x), matrices_of(xt), values_of(det), values_of(sign), values_of(logabsdet)
      for i = 1, count do
        local bound = 30 * n * eps * norm(A[i]) * norm(X[i])
        assert_small(distance(matmul(A[i], X[i]), identity(n)), bound, what .. " inv " .. i)
        assert_small(distance(matmul(transpose(A[i]), XT[i]), identity(n)), bound, what .. " inv of a^T " .. i)
        local want = det_reference(A[i])
        local magnitude = abs(want)
        assert_small(abs(sub(d[i], want)), 100 * n * eps * magnitude, what .. " det " .. i)
        assert_small(math.abs(l[i][1] - math.log(magnitude)), 100 * n * eps, what .. " logabsdet " .. i)
        assert_small(abs(sub(sg[i], {want[1] / magnitude, want[2] / magnitude})), 100 * n * eps,
                     what .. " sign " .. i)
      end
      w.gpudata:free()     -- the memory under w and its views
      helpers.assert_error("bad argument #1 to 'inv' (array has been freed)", L.inv, sliced)
    end
  end)

  for_both_paths("inv, det and slogdet of stacks of small matrices match Lua's, a stream", function()
    local s = gpu.Stream({non_blocking = true})
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      for c, case in ipairs(STACKS) do
        local batch, n = case[1], case[2]
        local count = product(batch)
        local mats = {}
        for i = 1, count do mats[i] = dominant(n, dtype) end
        local a, A = to_device(mats, shape_with(batch, n, n), dtype)
        local opts = c % 2 == 1 and {stream = s} or nil
        local what = ("inv %s case %d"):format(dtype, c)
        local x = assert_batched(lu_routine(dtype, n), 1, what, L.inv, a, opts)
        local det = assert_batched(lu_routine(dtype, n), 1, what, L.det, a, opts)
        local sign, logabsdet = assert_batched(lu_routine(dtype, n), 1, what, L.slogdet, a, opts)
        s:synchronize()
        assert.are.same(shape_with(batch, n, n), x.shape, what)
        assert.are.equal(dtype, x.dtype, what)
        assert.are.same(batch, det.shape, what)
        assert.are.equal(dtype, sign.dtype, what)
        assert.are.equal(REAL[dtype], logabsdet.dtype, what)
        local X, d, sg, l = matrices_of(x), values_of(det), values_of(sign), values_of(logabsdet)
        for i = 1, count do
          local bound = 30 * n * eps * norm(A[i]) * norm(X[i])
          assert_small(distance(matmul(A[i], X[i]), identity(n)), bound, what .. " a inv(a) " .. i)
          assert_small(distance(matmul(X[i], A[i]), identity(n)), bound, what .. " inv(a) a " .. i)
          local want = det_reference(A[i])
          local magnitude = abs(want)
          if REAL[dtype] == "float32" and magnitude > FLOAT32_MAX then
            -- 32 diagonal elements near 64 overflow float32, as NumPy's det does; logabsdet not
            assert.is_false(abs(d[i]) <= FLOAT32_MAX, what .. " det " .. i .. " overflows")
          else
            assert_small(abs(sub(d[i], want)), 100 * n * eps * magnitude, what .. " det " .. i)
          end
          assert_small(math.abs(l[i][1] - math.log(magnitude)), 100 * n * eps, what .. " logabsdet " .. i)
          if dtype:match("complex") then
            assert_small(abs(sub(sg[i], {want[1] / magnitude, want[2] / magnitude})), 100 * n * eps,
                         what .. " sign " .. i)
          else
            assert.are.equal(want[1] > 0 and 1 or -1, sg[i][1], what .. " sign " .. i)
          end
        end
      end
    end
    -- exactly: [[1, 2], [3, 4]] (a row swap: det -2) and [[4, 7], [2, 6]] (det 10, inverse
    -- [[0.6, -0.7], [-0.2, 0.4]])
    local a = R.reshaped(R.to_gpu({1, 2, 3, 4, 4, 7, 2, 6}, "float64"), {2, 2, 2})
    local det = assert_batched(lu_routine("float64", 2), 1, "exact", L.det, a)
    helpers.assert_close(-2, det[1], 1e-15, "det 1")
    helpers.assert_close(10, det[2], 1e-14, "det 2")
    local x = helpers.flat(R.get(L.inv(a)))
    for i, want in ipairs{0.6, -0.7, -0.2, 0.4} do helpers.assert_close(want, x[4 + i], 1e-14, "inv " .. i) end
    a:free()
    helpers.assert_error("bad argument #1 to 'det' (array has been freed)", L.det, a)
    helpers.assert_error("bad argument #1 to 'slogdet' (array has been freed)", L.slogdet, a)
  end)

  for_both_paths("one singular matrix in a stack: solve and inv name it, det 0, slogdet 0 and -inf", function()
    for _, dtype in ipairs(DTYPES) do
      local mats = {}
      for i = 1, 50 do mats[i] = i == 17 and singular(4, dtype) or dominant(4, dtype) end
      local a, A = to_device(mats, {50, 4, 4}, dtype)
      local what = "singular " .. dtype
      assert_batched(lu_routine(dtype, 4), 1, what, helpers.assert_error,
                     "bad argument #1 to 'solve' (Singular matrix)", L.solve, a, gpu.zeros({4}, dtype))
      assert_batched(lu_routine(dtype, 4), 1, what, helpers.assert_error,
                     "bad argument #1 to 'inv' (Singular matrix)", L.inv, a)
      local s = gpu.Stream({non_blocking = true})
      helpers.assert_error("bad argument #1 to 'inv' (Singular matrix)", L.inv, a, {stream = s})
      helpers.assert_error("bad argument #1 to 'solve' (Singular matrix)", L.solve, a,
                           gpu.zeros({50, 4, 3}, dtype), {stream = s})
      local det = values_of(L.det(a))
      local sign, logabsdet = L.slogdet(a)
      local sg, l = values_of(sign), values_of(logabsdet)
      for i = 1, 50 do
        if i == 17 then
          assert.are.same({0.0, 0.0}, det[i], what)
          assert.are.same({0.0, 0.0}, sg[i], what)
          assert.are.equal(-math.huge, l[i][1], what)
        else
          local want = det_reference(A[i])
          assert_small(abs(sub(det[i], want)), 400 * EPS[dtype] * abs(want), what .. " det " .. i)
          assert(l[i][1] > -math.huge, what .. " logabsdet " .. i)
        end
      end
    end
  end)

  for_both_paths("cholesky: L L^H = a for stacks of small matrices, either triangle; one indefinite named", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      for c, case in ipairs(STACKS) do
        local batch, n = case[1], case[2]
        local count = product(batch)
        for _, upper in ipairs{false, true} do
          local mats = {}
          for i = 1, count do mats[i] = with_junk(hermitian(n, dtype, true), dtype, upper) end
          local a, A = to_device(mats, shape_with(batch, n, n), dtype)
          local what = ("cholesky %s case %d%s"):format(dtype, c, upper and " upper" or "")
          local f = assert_batched(small_or("potrf", dtype, n), 1, what, L.cholesky, a,
                                   {upper = upper or nil, stream = c % 2 == 0 and s or nil})
          s:synchronize()
          assert.are.same(shape_with(batch, n, n), f.shape, what)
          assert.are.equal(dtype, f.dtype, what)
          for i, F in ipairs(matrices_of(f)) do
            local H = hermitian_of(A[i], upper)
            -- exactly triangular: potrfBatched works in the other triangle, which is zeroed again
            assert_triangular(F, upper, what .. " matrix " .. i)
            local product_ = upper and matmul(ct(F), F) or matmul(F, ct(F))
            assert_small(distance(product_, H), 30 * n * eps * norm(H), what .. " matrix " .. i)
            for j = 1, n do assert(F[j][j][1] > 0, what .. ": the diagonal is positive") end
          end
        end
      end
      -- a sliced view: the lower triangles of the first 5 x 5 blocks of 5 x 6 matrices
      local mats = {}
      for i = 1, 9 do
        local H = hermitian(5, dtype, true)
        mats[i] = matrix(5, 6, function(r, col) return col <= 5 and H[r][col] or random_entry(dtype) end)
      end
      local w, W = to_device(mats, {9, 5, 6}, dtype)
      local f = assert_batched(small_or("potrf", dtype, 5), 1, "view " .. dtype, L.cholesky, w:narrow(3, 1, 5))
      for i, F in ipairs(matrices_of(f)) do
        local H = hermitian_of(matrix(5, 5, function(r, col) return W[i][r][col] end), false)
        assert_small(distance(matmul(F, ct(F)), H), 30 * 5 * eps * norm(H), "view " .. dtype .. " " .. i)
      end
      -- indefinite: one matrix of 20
      local bad = hermitian(4, dtype, true)
      bad[3][3] = {-bad[3][3][1], 0.0}
      for j = 1, 4 do
        if j ~= 3 then bad[3][j], bad[j][3] = ZERO, ZERO end
      end
      local stack = {}
      for i = 1, 20 do stack[i] = i == 11 and bad or hermitian(4, dtype, true) end
      local a = to_device(stack, {20, 4, 4}, dtype)
      for _, upper in ipairs{false, true} do
        assert_batched(small_or("potrf", dtype, 4), 1, "indefinite " .. dtype, helpers.assert_error,
                       "bad argument #1 to 'cholesky' (Matrix is not positive definite)", L.cholesky, a,
                       {upper = upper})
      end
      a:free()
      helpers.assert_error("bad argument #1 to 'cholesky' (array has been freed)", L.cholesky, a)
    end
  end)

  for_both_paths("eigh and eigvalsh: a v = v diag(w), w ascending, for stacks of small matrices", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      for c, case in ipairs{{{200}, 4}, {{37}, 7}, {{3}, 32}, {{2, 2}, 2}} do
        local batch, n = case[1], case[2]
        local count = product(batch)
        for _, uplo in ipairs{"L", "U"} do
          local upper = uplo == "U"
          local mats = {}
          for i = 1, count do mats[i] = with_junk(hermitian(n, dtype, false), dtype, upper) end
          local a, A = to_device(mats, shape_with(batch, n, n), dtype)
          local opts = {UPLO = uplo, stream = c % 2 == 0 and s or nil}
          local what = ("eigh %s case %d %s"):format(dtype, c, uplo)
          local w, v = assert_batched(small_or("syevj", dtype, n), 1, what, L.eigh, a, opts)
          local w_only = assert_batched(small_or("syevj", dtype, n), 1, what, L.eigvalsh, a, opts)
          s:synchronize()
          assert.are.same(shape_with(batch, n), w.shape, what)
          assert.are.equal(REAL[dtype], w.dtype, what)
          assert.are.same(shape_with(batch, n, n), v.shape, what)
          assert.are.equal(dtype, v.dtype, what)
          local W, V, WO = values_of(w), matrices_of(v), values_of(w_only)
          for i = 1, count do
            local H = hermitian_of(A[i], upper)
            local bound = 30 * n * eps * norm(H)
            local D = matrix(n, n, function(x, y) return x == y and W[(i - 1) * n + x] or ZERO end)
            assert_small(distance(matmul(H, V[i]), matmul(V[i], D)), bound, what .. " a v = v w " .. i)
            assert_small(distance(matmul(ct(V[i]), V[i]), identity(n)), 30 * n * eps, what .. " v orthonormal " .. i)
            for j = 1, n do
              local wj = W[(i - 1) * n + j][1]
              if j > 1 then assert(W[(i - 1) * n + j - 1][1] <= wj, what .. ": ascending") end
              assert_small(math.abs(WO[(i - 1) * n + j][1] - wj), bound, what .. " eigvalsh " .. i)
            end
          end
        end
      end
    end
    -- exactly enough: [[2, 1], [1, 2]] has 1 and 3, [[5, 0], [0, -1]] -1 and 5; a transposed stack
    local a = R.reshaped(R.to_gpu({2, 1, 1, 2, 5, 0, 0, -1}, "float64"), {2, 2, 2})
    local values = helpers.flat(R.get(assert_batched(small_or("syevj", "float64", 2), 1, "exact", L.eigvalsh,
                                                     a:transpose({1, 3, 2}))))
    for i, want in ipairs{1, 3, -1, 5} do helpers.assert_close(want, values[i], 1e-14, "eigenvalue " .. i) end
    a:free()
    helpers.assert_error("bad argument #1 to 'eigh' (array has been freed)", L.eigh, a)
    helpers.assert_error("bad argument #1 to 'eigvalsh' (array has been freed)", L.eigvalsh, a)
  end)

  -- Checks svd's results for the matrices A (as stored) of a stack: shapes, dtypes, s against
  -- singular_reference's and descending, u and vh orthonormal, u diag(s) vh = A.
  local function check_svd(A, batch, m, n, dtype, results, what)
    local eps, k = EPS[dtype], math.min(m, n)
    local u, s, vh, ur, sr, vhr, s_only = table.unpack(results)
    assert.are.same(shape_with(batch, m, m), u.shape, what)
    assert.are.same(shape_with(batch, k), s.shape, what)
    assert.are.same(shape_with(batch, n, n), vh.shape, what)
    assert.are.same(shape_with(batch, m, k), ur.shape, what)
    assert.are.same(shape_with(batch, k, n), vhr.shape, what)
    assert.are.same(shape_with(batch, k), s_only.shape, what)
    assert.are.equal(dtype, u.dtype, what)
    assert.are.equal(dtype, vh.dtype, what)
    assert.are.equal(dtype, ur.dtype, what)
    assert.are.equal(REAL[dtype], s.dtype, what)
    assert.are.equal(REAL[dtype], s_only.dtype, what)
    local U, S, VH = matrices_of(u), values_of(s), matrices_of(vh)
    local UR, SR, VHR, SO = matrices_of(ur), values_of(sr), matrices_of(vhr), values_of(s_only)
    for i = 1, #A do
      local bound = 30 * math.max(m, n) * eps * norm(A[i])
      local want = singular_reference(A[i])
      for j = 1, k do
        local at = (i - 1) * k + j
        local sj = S[at][1]
        assert_small(math.abs(sj - want[j]), bound, ("%s matrix %d s %d"):format(what, i, j))
        if j > 1 then assert(S[at - 1][1] >= sj, what .. ": descending") end
        assert_small(math.abs(SR[at][1] - want[j]), bound, ("%s matrix %d reduced s %d"):format(what, i, j))
        assert_small(math.abs(SO[at][1] - want[j]), bound, ("%s matrix %d s alone %d"):format(what, i, j))
      end
      local D = matrix(k, k, function(x, y) return x == y and S[(i - 1) * k + x] or ZERO end)
      local DR = matrix(k, k, function(x, y) return x == y and SR[(i - 1) * k + x] or ZERO end)
      assert_orthonormal(U[i], eps, what .. " u " .. i)
      assert_orthonormal(ct(VH[i]), eps, what .. " vh " .. i)
      assert_orthonormal(UR[i], eps, what .. " reduced u " .. i)
      assert_orthonormal(ct(VHR[i]), eps, what .. " reduced vh " .. i)
      local first_k = matrix(m, k, function(x, y) return U[i][x][y] end)
      local first_rows = matrix(k, n, function(x, y) return VH[i][x][y] end)
      assert_small(distance(matmul(matmul(first_k, D), first_rows), A[i]), bound, what .. " u s vh " .. i)
      assert_small(distance(matmul(matmul(UR[i], DR), VHR[i]), A[i]), bound, what .. " reduced u s vh " .. i)
    end
  end

  -- svd's three calls (full, reduced, s alone) on a, each one gesvdjBatched call.
  local function svd_calls(a, stream, what)
    local results = {}
    results[1], results[2], results[3] = assert_batched("gesvdj", 1, what, L.svd, a, {stream = stream})
    results[4], results[5], results[6] = assert_batched("gesvdj", 1, what, L.svd, a,
                                                        {full_matrices = false, stream = stream})
    results[7] = assert_batched("gesvdj", 1, what, L.svd, a, {compute_uv = false, stream = stream})
    if stream then stream:synchronize() end
    return results
  end

  helpers.gpu_it("eigh of small real stacks at any scale (scaled by a power of two); non-finite ones refused", function()
    for _, case in ipairs{{"float32", 1e-25}, {"float32", 1e25}, {"float64", 1e-150}, {"float64", 1e150}} do
      local dtype, scale = case[1], case[2]
      local n, count = 5, 20
      local mats = {}
      for i = 1, count do
        local H = hermitian(n, dtype, false)
        mats[i] = matrix(n, n, function(r, c) return {H[r][c][1] * scale, 0.0} end)
      end
      local a, A = to_device(mats, {count, n, n}, dtype)
      local what = ("eigh %s scaled by %g"):format(dtype, scale)
      local w, v = assert_batched(small_or("syevj", dtype, n), 1, what, L.eigh, a)
      local W, V = values_of(w), matrices_of(v)
      for i = 1, count do
        local D = matrix(n, n, function(x, y) return x == y and W[(i - 1) * n + x] or ZERO end)
        assert_small(distance(matmul(A[i], V[i]), matmul(V[i], D)), 30 * n * EPS[dtype] * norm(A[i]),
                     what .. " a v = v w " .. i)
        assert_small(distance(matmul(ct(V[i]), V[i]), identity(n)), 30 * n * EPS[dtype], what .. " orthonormal " .. i)
      end
    end
    for _, bad in ipairs{0 / 0, math.huge} do
      local values = {}
      for i = 1, 48 do values[i] = (i - 1) % 16 % 5 == 0 and 1 or 0 end    -- three identities
      values[16 + 2 * 4 + 1] = bad                                          -- matrix 2, row 3, column 1
      local a = R.reshaped(R.to_gpu(values, "float64"), {3, 4, 4})
      helpers.assert_error("bad argument #1 to 'eigvalsh' (Eigenvalues did not converge)", L.eigvalsh, a)
    end
  end)

  helpers.gpu_it("det and slogdet of small real stacks: overflow, underflow, NaN, swaps, no copy", function()
    for _, dtype in ipairs{"float32", "float64"} do
      local eps = EPS[dtype]
      -- 8 x 8 matrices scaled by 2^40 or 2^-40 (and a random factor): det overflows or
      -- vanishes in float32 (2^320, 2^-320), logabsdet does not
      local n, count = 8, 24
      local mats, scales = {}, {}
      for i = 1, count do
        scales[i] = (i % 2 == 0 and 2 ^ 40 or 2 ^ -40) * (0.5 + math.random())
        local D = dominant(n, dtype)
        mats[i] = matrix(n, n, function(r, c) return {D[r][c][1] * scales[i], 0.0} end)
      end
      local a, A = to_device(mats, {count, n, n}, dtype)
      local what = "scaled " .. dtype
      local det = assert_batched(lu_routine(dtype, n), 1, what, L.det, a)
      local sign, logabsdet = assert_batched(lu_routine(dtype, n), 1, what, L.slogdet, a)
      local d, sg, l = values_of(det), values_of(sign), values_of(logabsdet)
      for i = 1, count do
        -- the reference's own determinant of the unscaled matrix, times scale^n
        local unscaled = det_reference(matrix(n, n, function(r, c) return {A[i][r][c][1] / scales[i], 0.0} end))
        local log_want = math.log(abs(unscaled)) + n * math.log(scales[i])
        assert_small(math.abs(l[i][1] - log_want), 100 * n * eps * math.max(1, math.abs(log_want)),
                     what .. " logabsdet " .. i)
        assert.are.equal(unscaled[1] > 0 and 1 or -1, sg[i][1], what .. " sign " .. i)
        if dtype == "float32" then
          local want = unscaled[1] > 0 and math.huge or -math.huge
          if scales[i] < 1 then want = 0.0 end
          assert.are.equal(want, math.abs(d[i][1]) == 0 and 0.0 or d[i][1], what .. " det " .. i)
        else
          local want = unscaled[1] * scales[i] ^ n
          assert_small(math.abs(d[i][1] - want), 100 * n * eps * math.abs(want), what .. " det " .. i)
        end
      end
      -- row swaps alone: permutation matrices of known sign; a NaN spreads to its matrix only
      local values = {}
      local perms = {{1, 2, 3}, {2, 1, 3}, {2, 3, 1}, {3, 2, 1}}     -- signs 1, -1, 1, -1
      for k, p in ipairs(perms) do
        for r = 1, 3 do
          for c = 1, 3 do values[(k - 1) * 9 + (r - 1) * 3 + c] = p[r] == c and 1 or 0 end
        end
      end
      values[#values + 1] = 0 / 0
      for i = 2, 9 do values[#values + 1] = (i - 1) % 4 == 0 and 2 or 0 end   -- 2 I, a NaN first
      local p = R.reshaped(R.to_gpu(values, dtype), {5, 3, 3})
      local pd, ps, pl = helpers.flat(R.get(L.det(p))), L.slogdet(p)
      ps, pl = helpers.flat(R.get(ps)), helpers.flat(R.get(pl))
      for k, want in ipairs{1, -1, 1, -1} do
        assert.are.equal(want, pd[k], dtype .. " permutation " .. k)
        assert.are.equal(want, ps[k], dtype .. " permutation sign " .. k)
        assert.are.equal(0, pl[k], dtype .. " permutation log " .. k)
      end
      -- as NumPy's: a NaN leaves the sign alone (only negative factors turn it) and makes
      -- logabsdet and det NaN
      assert(pd[5] ~= pd[5] and pl[5] ~= pl[5], dtype .. ": NaN gives NaN")
      assert.are.equal(1, ps[5], dtype .. ": a NaN's sign")
    end
  end)

  for_both_paths("det is sign * exp(logabsdet), as NumPy's: no overflow on the way", function()
    -- diag(1e200, 1e200, 1e-300, -3): a running product overflows, the determinant is -3e100
    local values = {}
    for m = 0, 1 do
      for i = 1, 16 do values[16 * m + i] = 0.0 end
      values[16 * m + 1], values[16 * m + 6], values[16 * m + 11], values[16 * m + 16] = 1e200, 1e200, 1e-300, -3
    end
    local a = R.reshaped(R.to_gpu(values, "float64"), {2, 4, 4})
    local det = helpers.flat(R.get(L.det(a)))
    local sign, logabsdet = L.slogdet(a)
    for m = 1, 2 do
      helpers.assert_close(-3e100, det[m], 1e-12, "det " .. m)
      assert.are.equal(-1, helpers.flat(R.get(sign))[m])
      helpers.assert_close(math.log(3) + 100 * math.log(10), helpers.flat(R.get(logabsdet))[m], 1e-14, "log " .. m)
    end
  end)

  helpers.gpu_it("svd: u diag(s) vh = a, s descending as Lua's Jacobi's, for stacks of small matrices", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      for c, case in ipairs{{{1000}, 4, 3}, {{37}, 5, 7}, {{3}, 32, 32}, {{2}, 32, 20}, {{2, 2}, 3, 3}} do
        local batch, m, n = table.unpack(case)
        local mats = {}
        for i = 1, product(batch) do mats[i] = random_matrix(m, n, dtype) end
        local a, A = to_device(mats, shape_with(batch, m, n), dtype)
        local what = ("svd %s case %d"):format(dtype, c)
        check_svd(A, batch, m, n, dtype, svd_calls(a, c % 2 == 0 and s or nil, what), what)
      end
    end
  end)

  helpers.gpu_it("svd of views (sliced, transposed), of known singular values, of empty stacks", function()
    for _, dtype in ipairs(DTYPES) do
      local m, n, count = 7, 5, 37
      -- (37, 7, 9) sliced to its columns 2 .. 6, and that transposed: (37, 5, 7)
      local wide = {}
      for i = 1, count do wide[i] = random_matrix(m, n + 4, dtype) end
      local w, W = to_device(wide, {count, m, n + 4}, dtype)
      local sliced = w:narrow(3, 2, n)
      local A, AT = {}, {}
      for i = 1, count do
        A[i] = matrix(m, n, function(r, col) return W[i][r][col + 1] end)
        AT[i] = transpose(A[i])
      end
      local what = "views " .. dtype
      check_svd(A, {count}, m, n, dtype, svd_calls(sliced, nil, what), what .. " sliced")
      check_svd(AT, {count}, n, m, dtype, svd_calls(sliced:transpose({1, 3, 2}), nil, what),
                what .. " transposed")
      w.gpudata:free()
      helpers.assert_error("bad argument #1 to 'svd' (array has been freed)", L.svd, sliced)
      -- singular values known: 3, 2, 0.5, 0.25 and a repeated pair 1, 1 with a zero
      local eps = EPS[dtype]
      local lists = {{3, 2, 0.5, 0.25}, {1, 1, 0.5, 0}, {4, 1e-3, 1e-3, 0}}
      local known = {}
      for i = 1, 30 do known[i] = with_singular_values(6, 4, lists[(i - 1) % 3 + 1], dtype) end
      local a, K = to_device(known, {30, 6, 4}, dtype)
      local values = values_of(assert_batched("gesvdj", 1, "known " .. dtype, L.svd, a, {compute_uv = false}))
      for i = 1, 30 do
        for j, want in ipairs(lists[(i - 1) % 3 + 1]) do
          assert_small(math.abs(values[(i - 1) * 4 + j][1] - want), 30 * 6 * eps * norm(K[i]),
                       ("known %s matrix %d s %d"):format(dtype, i, j))
        end
      end
      a:free()
    end
    -- empty stacks and matrices: no call (identities where full, as NumPy's)
    local u, s, vh = assert_batched("gesvdj", 0, "empty", L.svd, gpu.zeros({0, 4, 3}))
    assert.are.same({0, 4, 4}, u.shape)
    assert.are.same({0, 3}, s.shape)
    assert.are.same({0, 3, 3}, vh.shape)
    u, s, vh = assert_batched("gesvdj", 0, "empty matrices", L.svd, gpu.zeros({3, 2, 0}))
    assert.are.same({3, 2, 2}, u.shape)
    assert.are.same({3, 0}, s.shape)
    assert.are.same({1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0}, helpers.flat(R.get(u)))
  end)

  helpers.gpu_it("matrix_rank, pinv and cond of stacks of small matrices take gesvdjBatched", function()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[dtype]
      -- ranks 4, 3, 2 and 1 of 6 x 4 matrices with known singular values
      local lists = {{3, 2, 1, 0.5}, {3, 2, 1, 0}, {2, 1, 0, 0}, {1, 0, 0, 0}}
      local mats = {}
      for i = 1, 40 do mats[i] = with_singular_values(6, 4, lists[(i - 1) % 4 + 1], dtype) end
      local a, A = to_device(mats, {40, 6, 4}, dtype)
      local what = "rank " .. dtype
      local ranks = helpers.flat(R.get(assert_batched("gesvdj", 1, what, L.matrix_rank, a, {tol = 0.25})))
      for i = 1, 40 do assert.are.equal(5 - ((i - 1) % 4 + 1), ranks[i], what .. " " .. i) end
      -- cond: the largest singular value over the smallest, of the first list's matrices
      local full_rank = R.reshaped(a, {10, 4, 6, 4}):narrow(2, 1, 1)
      local conds = values_of(assert_batched("gesvdj", 1, "cond " .. dtype, L.cond, full_rank))
      assert.are.equal(10, #conds)
      for i = 1, 10 do
        assert_small(math.abs(conds[i][1] - 6), 100 * 6 * eps * 6 * norm(A[4 * i - 3]),
                     "cond " .. dtype .. " " .. i)
      end
      -- pinv of the same: a x a = a and x a x = x (Penrose), x (4 x 6); of full rank only, as
      -- a zero singular value computed as a rounding error may come out above pinv's cutoff
      local x = assert_batched("gesvdj", 1, "pinv " .. dtype, L.pinv, full_rank)
      assert.are.same({10, 1, 4, 6}, x.shape)
      assert.are.equal(dtype, x.dtype)
      for i, X in ipairs(matrices_of(x)) do
        local B = A[4 * i - 3]
        local bound = 30 * 6 * eps * norm(B) * norm(X)
        local what_ = ("pinv %s %d"):format(dtype, i)
        assert_small(distance(matmul(matmul(B, X), B), B), bound * norm(B), what_ .. " a x a")
        assert_small(distance(matmul(matmul(X, B), X), X), bound * norm(X), what_ .. " x a x")
      end
      a:free()
      helpers.assert_error("bad argument #1 to 'matrix_rank' (array has been freed)", L.matrix_rank, a)
      helpers.assert_error("bad argument #1 to 'pinv' (array has been freed)", L.pinv, a)
    end
  end)

  helpers.gpu_it("a stack of one, and matrices of more than 32 rows, take the loop", function()
    local a, A = to_device({dominant(33, "float64"), dominant(33, "float64")}, {2, 33, 33}, "float64")
    local x = assert_batched("getrf", 0, "33 rows", L.inv, a)
    for i, X in ipairs(matrices_of(x)) do
      assert_small(distance(matmul(A[i], X), identity(33)), 30 * 33 * EPS.float64 * norm(A[i]) * norm(X), "33 " .. i)
    end
    assert_batched("getrf", 0, "one matrix", L.det, gpu.zeros({1, 4, 4}))
    assert_batched("potrf", 0, "one matrix", L.cholesky, gpu.gpuarray.eye(4):reshape(1, 4, 4))
    assert_batched("syevj", 0, "33 rows", L.eigvalsh, gpu.zeros({2, 33, 33}))
    assert_batched("gesvdj", 0, "33 rows", L.svd, gpu.zeros({2, 33, 4}))
    assert_batched("gesvdj", 0, "33 columns", L.svd, gpu.zeros({2, 4, 33}), {compute_uv = false})
    assert_batched("gesvdj", 0, "one matrix", L.svd, gpu.zeros({1, 4, 3}))
    -- empty stacks: nothing to call
    assert.are.same({0, 4, 4}, assert_batched("getrf", 0, "empty", L.inv, gpu.zeros({0, 4, 4})).shape)
    assert.are.same({3, 0, 0}, assert_batched("potrf", 0, "empty", L.cholesky, gpu.zeros({3, 0, 0})).shape)
  end)
end)

describe("gpu.linalg's batched routines without a GPU", function()
  local traces = LR.traces
  -- cuBLAS's and cuSOLVER's batched routines, which real stacks of at most linalg.small_rows
  -- rows leave for gpu_small_solve: small_rows 0 sends them there
  local function fake_run(code, env)
    return LR.fake_run("require('gpu.linalg').small_rows = 0\n" .. code, env)
  end

  it("solves, inverts, factors and diagonalizes real stacks of at most small_rows rows in one kernel", function()
    local out, ok = LR.fake_run([[
      local linalg = require "gpu.linalg"
      -- the stand-in runs no kernel: zeroed infos, so no singular matrix
      mark("small")
      L.solve(gpu.zeros({1000, 4, 4}, "float32"), gpu.zeros({1000, 4, 2}, "float32"))
      L.solve(gpu.zeros({2, 3, 8, 8}), gpu.zeros({8}))
      L.solve(gpu.zeros({4, 4}), gpu.zeros({7, 4, 3}, "int32"))     -- one a for the stack of b
      L.inv(gpu.zeros({37, 7, 7}, "float32"))
      L.inv(gpu.zeros({4, 3, 5}):narrow(3, 2, 3))
      L.cholesky(gpu.zeros({5, 2, 2}, "float32"), {upper = true})       -- zeroed infos: no error
      L.eigh(gpu.zeros({3, 8, 8}))
      L.det(gpu.zeros({6, 5, 5}, "int32"))
      L.slogdet(gpu.zeros({2, 2, 2}, "float32"))
      print("small", linalg.batched_calls.small, linalg.batched_calls.getrf)
      mark("batched")     -- complex, 9 rows, or a single matrix: as before
      L.inv(gpu.zeros({3, 4, 4}, "complex64"))
      L.solve(gpu.zeros({2, 9, 9}), gpu.zeros({9}))
      L.inv(gpu.zeros({1, 3, 3}))
      print("batched", linalg.batched_calls.small, linalg.batched_calls.getrf)
      mark("off")
      linalg.small_rows = 0
      L.inv(gpu.zeros({2, 3, 3}))
      print("off", linalg.batched_calls.small, linalg.batched_calls.getrf)
      mark("end")
    ]], {FAKE_CUSOLVER_INFO = "0", FAKE_CUBLAS_INFO = "0"})
    assert(ok, out)
    assert.truthy(out:find("\nsmall\t9\t0\n"), out)
    assert.truthy(out:find("\nbatched\t9\t2\n"), out)
    assert.truthy(out:find("\noff\t9\t3\n"), out)
    local got = traces(out)
    assert.are.same({}, got.small, out)
    assert.are.same({"cublas getrfBatched C n 4 lda 4 batch 3 step 128",
                     "cublas getriBatched C n 4 lda 4 ldc 4 batch 3 step 128 128",
                     "cublas getrfBatched D n 9 lda 9 batch 2 step 648",
                     "cublas getrsBatched T D n 9 nrhs 1 lda 9 ldb 9 batch 2 step 648 72",
                     "Xgetrf R_64F m 3 n 3 lda 3", "Xgetrs N R_64F n 3 nrhs 3 lda 3 ldb 3"}, got.batched, out)
    assert.are.same({"cublas getrfBatched D n 3 lda 3 batch 2 step 72",
                     "cublas getriBatched D n 3 lda 3 ldc 3 batch 2 step 72 72"}, got.off, out)
  end)

  it("hands each stack of small matrices to one batched call, its pointer arrays one matrix apart", function()
    local out, ok = fake_run([[
      local function call(name, f, ...)
        mark(name)
        local ok, err = pcall(f, ...)
        -- the stand-in runs no kernel: the largest info of more than 64 is what memory held
        if not ok and not tostring(err):find("Singular matrix") and not tostring(err):find("did not converge") then
          error(err, 0)
        end
      end
      call("solve", L.solve, gpu.zeros({1000, 4, 4}, "float32"), gpu.zeros({1000, 4, 2}, "float32"))
      call("solve vector", L.solve, gpu.zeros({2, 3, 5, 5}), gpu.zeros({5}))
      call("inv", L.inv, gpu.zeros({37, 7, 7}, "complex128"))
      call("det", L.det, gpu.zeros({2, 3, 3, 3}))
      call("slogdet", L.slogdet, gpu.zeros({3, 32, 32}, "complex64"))
      call("view", L.inv, gpu.zeros({4, 3, 5}):narrow(3, 2, 3))
      call("cholesky", L.cholesky, gpu.zeros({3, 32, 32}), {upper = true})
      call("cholesky lower", L.cholesky, gpu.zeros({5, 2, 2}, "complex64"))
      call("eigh", L.eigh, gpu.zeros({5, 4, 4}, "complex64"))
      call("eigvalsh", L.eigvalsh, gpu.zeros({2, 32, 32}, "float32"), {UPLO = "U"})
      -- syevjBatched's int work size: a big stack in pieces (here of two 4 x 4 matrices)
      require("gpu.linalg").syevj_chunk = 32
      call("eigh in pieces", L.eigvalsh, gpu.zeros({5, 4, 4}))
      call("svd in pieces", L.svd, gpu.zeros({5, 4, 3}), {compute_uv = false})
      require("gpu.linalg").syevj_chunk = 1 << 24
      call("svd", L.svd, gpu.zeros({1000, 4, 3}, "float32"))
      call("svd reduced", L.svd, gpu.zeros({37, 5, 7}, "complex128"), {full_matrices = false})
      call("svd values", L.svd, gpu.zeros({3, 32, 32}), {compute_uv = false})
      call("matrix_rank", L.matrix_rank, gpu.zeros({2, 32, 20}, "complex64"))
      call("cond", L.cond, gpu.zeros({2, 3, 3}, "int32"))
      call("svd view", L.svd, gpu.zeros({4, 3, 5}):narrow(3, 2, 2), {compute_uv = false})
      -- the loop: one matrix, more than 32 rows, cuBLAS off
      call("one matrix", L.inv, gpu.zeros({1, 3, 3}))
      call("33 rows", L.det, gpu.zeros({2, 33, 33}, "float32"))
      call("eigh 33", L.eigvalsh, gpu.zeros({2, 33, 33}))
      call("svd 33", L.svd, gpu.zeros({2, 33, 4}))
      call("svd one matrix", L.svd, gpu.zeros({1, 4, 3}), {compute_uv = false})
      gpu.use_cublas(false)
      call("cuBLAS off", L.solve, gpu.zeros({2, 3, 3}), gpu.zeros({2, 3, 1}))
      call("cuBLAS off cholesky", L.cholesky, gpu.zeros({2, 3, 3}))
      gpu.use_cublas(true)
      call("empty", function() L.inv(gpu.zeros({0, 3, 3})); L.cholesky(gpu.zeros({4, 0, 0})) end)
      mark("end")
    ]], {FAKE_CUSOLVER_INFO = "0", FAKE_CUBLAS_INFO = "0"})
    assert(ok, out)
    local want = {
      solve = {"cublas getrfBatched S n 4 lda 4 batch 1000 step 64",
               "cublas getrsBatched T S n 4 nrhs 2 lda 4 ldb 4 batch 1000 step 64 32"},
      ["solve vector"] = {"cublas getrfBatched D n 5 lda 5 batch 6 step 200",
                          "cublas getrsBatched T D n 5 nrhs 1 lda 5 ldb 5 batch 6 step 200 40"},
      inv = {"cublas getrfBatched Z n 7 lda 7 batch 37 step 784",
             "cublas getriBatched Z n 7 lda 7 ldc 7 batch 37 step 784 784"},
      det = {"cublas getrfBatched D n 3 lda 3 batch 6 step 72"},
      slogdet = {"cublas getrfBatched C n 32 lda 32 batch 3 step 8192"},
      view = {"cublas getrfBatched D n 3 lda 3 batch 4 step 72",
              "cublas getriBatched D n 3 lda 3 ldc 3 batch 4 step 72 72"},
      cholesky = {"potrfBatched L D n 32 lda 32 batch 3 step 8192"},
      ["cholesky lower"] = {"potrfBatched L C n 2 lda 2 batch 5 step 32"},
      eigh = {"syevjBatched vectors U C n 4 lda 4 batch 5"},
      eigvalsh = {"syevjBatched novectors L S n 32 lda 32 batch 2"},
      ["eigh in pieces"] = {"syevjBatched novectors U D n 4 lda 4 batch 2",
                            "syevjBatched novectors U D n 4 lda 4 batch 2",
                            "syevjBatched novectors U D n 4 lda 4 batch 1"},
      ["one matrix"] = {"Xgetrf R_64F m 3 n 3 lda 3", "Xgetrs N R_64F n 3 nrhs 3 lda 3 ldb 3"},
      ["33 rows"] = {"Xgetrf R_32F m 33 n 33 lda 33", "Xgetrf R_32F m 33 n 33 lda 33"},
      ["eigh 33"] = {"Xsyevd novectors U R_64F n 33 lda 33 W R_64F", "Xsyevd novectors U R_64F n 33 lda 33 W R_64F"},
      -- svd: gesvdjBatched of the copy of a, a^T column-major (N x M)
      svd = {"gesvdjBatched vectors S m 3 n 4 lda 3 ldu 3 ldv 4 batch 1000"},
      ["svd reduced"] = {"gesvdjBatched vectors Z m 7 n 5 lda 7 ldu 7 ldv 5 batch 37"},
      ["svd values"] = {"gesvdjBatched novectors D m 32 n 32 lda 32 ldu 32 ldv 32 batch 3"},
      matrix_rank = {"gesvdjBatched novectors C m 20 n 32 lda 20 ldu 20 ldv 32 batch 2"},
      cond = {"gesvdjBatched novectors D m 3 n 3 lda 3 ldu 3 ldv 3 batch 2"},
      ["svd in pieces"] = {"gesvdjBatched novectors D m 3 n 4 lda 3 ldu 3 ldv 4 batch 2",
                           "gesvdjBatched novectors D m 3 n 4 lda 3 ldu 3 ldv 4 batch 2",
                           "gesvdjBatched novectors D m 3 n 4 lda 3 ldu 3 ldv 4 batch 1"},
      ["svd view"] = {"gesvdjBatched novectors D m 2 n 3 lda 2 ldu 2 ldv 3 batch 4"},
      ["svd 33"] = {"Xgesvd A A R_64F m 33 n 4 lda 33 ldu 33 ldvt 4", "Xgesvd A A R_64F m 33 n 4 lda 33 ldu 33 ldvt 4"},
      ["svd one matrix"] = {"Xgesvd N N R_64F m 4 n 3 lda 4 ldu 4 ldvt 3"},
      ["cuBLAS off"] = {"Xgetrf R_64F m 3 n 3 lda 3", "Xgetrf R_64F m 3 n 3 lda 3",
                        "Xgetrs T R_64F n 3 nrhs 1 lda 3 ldb 3", "Xgetrs T R_64F n 3 nrhs 1 lda 3 ldb 3"},
      ["cuBLAS off cholesky"] = {"potrfBatched L D n 3 lda 3 batch 2 step 72"},
      empty = {},
      ["end"] = {"cublas handle destroyed", "gesvdjInfo destroyed", "syevjInfo destroyed", "handle destroyed"},
    }
    local got = traces(out)
    for name, lines in pairs(want) do assert.are.same(lines, got[name], name .. "\n" .. out) end
  end)

  it("solves and inverts with the fake's own batched LU, through the pointer arrays", function()
    -- contiguous float64 operands reach the fake as copies (no kernel runs there), and its
    -- getrfBatched, getrsBatched and getriBatched compute as LAPACK's do
    local out, ok = fake_run([[
      local rows = {{{2, 1, 0}, {1, 3, 1}, {4, 0, 5}}, {{0, 2, 1}, {3, 0, 0}, {1, 1, 1}},
                    {{1, 0, 0}, {0, 0, 2}, {0, 3, 0}}}
      local a = gpu.to_gpu(rows, "float64")
      local x = L.solve(a, gpu.to_gpu({{{1}, {2}, {3}}, {{4}, {5}, {6}}, {{7}, {8}, {9}}}, "float64")):get()
      for i = 1, 9 do print(("x %.12f"):format(x[i])) end
      local inv = L.inv(a):get()
      for i = 1, 27 do print(("inv %.12f"):format(inv[i])) end
      print(pcall(L.solve, gpu.zeros({2, 2, 2}), gpu.zeros({2, 2, 1})))
      print(require("gpu.linalg").batched_calls.getrf)
    ]])
    assert(ok, out)
    local A = {{{2, 1, 0}, {1, 3, 1}, {4, 0, 5}}, {{0, 2, 1}, {3, 0, 0}, {1, 1, 1}}, {{1, 0, 0}, {0, 0, 2}, {0, 3, 0}}}
    local xs, invs = {}, {}
    for v in out:gmatch("\nx (%S+)") do xs[#xs + 1] = tonumber(v) end
    for v in out:gmatch("\ninv (%S+)") do invs[#invs + 1] = tonumber(v) end
    assert.are.equal(9, #xs, out)
    assert.are.equal(27, #invs, out)
    for m = 1, 3 do
      for i = 1, 3 do
        local row = A[m][i]
        local lhs = row[1] * xs[3 * m - 2] + row[2] * xs[3 * m - 1] + row[3] * xs[3 * m]
        assert(math.abs(lhs - (3 * m - 3 + i)) < 1e-9, ("solve: matrix %d row %d: %g\n%s"):format(m, i, lhs, out))
        for j = 1, 3 do       -- (a inv(a))[i][j]
          local s = 0
          for k = 1, 3 do s = s + row[k] * invs[9 * (m - 1) + 3 * (k - 1) + j] end
          assert(math.abs(s - (i == j and 1 or 0)) < 1e-9, ("inv: matrix %d (%d, %d): %g\n%s"):format(m, i, j, s, out))
        end
      end
    end
    assert.truthy(out:find("false\t[^\n]*bad argument #1 to 'solve' %(Singular matrix%)\n"), out)
    assert.truthy(out:find("\n3\n"), out)
  end)

  it("raises NumPy's errors from one matrix's info, names failed calls, falls back without cuBLAS", function()
    local code = [[
      for _, f in ipairs{"solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "matrix_rank",
                         "pinv", "cond"} do
        local args = {gpu.zeros({3, 4, 4})}
        if f == "solve" then args[2] = gpu.zeros({4}) end
        local ok, err = pcall(L[f], table.unpack(args))
        print(f, ok, ok and "" or err)
      end
    ]]
    local out = fake_run(code, {FAKE_CUBLAS_INFO = "0,0,3", FAKE_CUSOLVER_INFO = "0,2,0"})
    for _, line in ipairs{
      "solve\tfalse\t[^\n]*bad argument #1 to 'solve' %(Singular matrix%)\n",
      "inv\tfalse\t[^\n]*bad argument #1 to 'inv' %(Singular matrix%)\n",
      "det\ttrue\t\n", "slogdet\ttrue\t\n",
      "cholesky\tfalse\t[^\n]*bad argument #1 to 'cholesky' %(Matrix is not positive definite%)\n",
      "eigh\tfalse\t[^\n]*bad argument #1 to 'eigh' %(Eigenvalues did not converge%)\n",
      "eigvalsh\tfalse\t[^\n]*bad argument #1 to 'eigvalsh' %(Eigenvalues did not converge%)\n",
      "svd\tfalse\t[^\n]*bad argument #1 to 'svd' %(SVD did not converge%)\n",
      "matrix_rank\tfalse\t[^\n]*bad argument #1 to 'matrix_rank' %(SVD did not converge%)\n",
      "pinv\tfalse\t[^\n]*bad argument #1 to 'pinv' %(SVD did not converge%)\n",
      "cond\tfalse\t[^\n]*bad argument #1 to 'cond' %(SVD did not converge%)\n"} do
      assert.truthy(out:find(line), line .. "\n" .. out)
    end
    -- all regular: no error
    out = fake_run(code, {FAKE_CUBLAS_INFO = "0", FAKE_CUSOLVER_INFO = "0"})
    for _, f in ipairs{"solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "matrix_rank", "pinv",
                       "cond"} do
      assert.truthy(out:find("\n" .. f .. "\ttrue\t\n") or out:find("^" .. f .. "\ttrue\t\n"), f .. "\n" .. out)
    end
    out = fake_run("print(pcall(L.inv, gpu.zeros({2, 3, 3})))", {FAKE_CUBLAS_BATCHED = "fail"})
    assert.truthy(out:find("false\tcublasDgetrfBatched: CUBLAS_STATUS_EXECUTION_FAILED (the GPU program failed "
                           .. "to execute)\n", 1, true), out)
    out = fake_run("print(pcall(L.cholesky, gpu.zeros({2, 3, 3}, 'float32')))", {FAKE_CUSOLVER_FAIL = "potrfBatched"})
    assert.truthy(out:find("false\tcusolverDnSpotrfBatched: CUSOLVER_STATUS_EXECUTION_FAILED (the routine failed "
                           .. "to run on the GPU)\n", 1, true), out)
    out = fake_run("print(pcall(L.eigh, gpu.zeros({2, 3, 3}, 'complex128')))", {FAKE_CUSOLVER_FAIL = "ZheevjBatched"})
    assert.truthy(out:find("false\tcusolverDnZheevjBatched: CUSOLVER_STATUS_EXECUTION_FAILED", 1, true), out)
    out = fake_run("print(pcall(L.svd, gpu.zeros({2, 3, 4}, 'complex64')))", {FAKE_CUSOLVER_FAIL = "CgesvdjBatched"})
    assert.truthy(out:find("false\tcusolverDnCgesvdjBatched: CUSOLVER_STATUS_EXECUTION_FAILED", 1, true), out)
    -- no cuBLAS (none loaded, turned off, no handle): cuSOLVER's loop, as before
    local loop = "mark('x'); print('det', (pcall(L.det, gpu.zeros({2, 3, 3})))); mark('end')"
    for _, env in ipairs{{GPU_CUBLAS_LIBRARY = "/nonexistent/libcublas.so.12"}, {GPU_CUBLAS_DISABLE = "1"},
                         {FAKE_CUBLAS_CREATE = "fail"}} do
      env.FAKE_CUSOLVER_INFO = "0"
      out = fake_run(loop, env)
      assert.are.same({"Xgetrf R_64F m 3 n 3 lda 3", "Xgetrf R_64F m 3 n 3 lda 3"}, traces(out).x, out)
      assert.truthy(out:find("det\ttrue\n"), out)
    end
  end)

  it("checks the batched core functions' arguments", function()
    local out, ok = fake_run([[
      local core = require "gpu.core"
      local a, ipiv, info = gpu.zeros({2, 3, 3}), gpu.zeros({2, 3}, "int32"), gpu.zeros({2}, "int32")
      local function try(f, ...) print((select(2, pcall(f, ...)))) end
      try(core.solver_getrf_batched, a, gpu.zeros({2, 3}, "int64"), info)
      try(core.solver_getrf_batched, gpu.zeros({2, 3, 4}), ipiv, info)
      try(core.solver_getrf_batched, a:transpose({1, 3, 2}), ipiv, info)
      try(core.solver_getrs_batched, a, ipiv, gpu.zeros({7}), "T")
      try(core.solver_getrs_batched, a, ipiv, gpu.zeros({2, 3}, "float32"), "T")
      try(core.solver_getri_batched, a, ipiv, a)
      try(core.solver_getri_batched, a, ipiv, gpu.zeros({2, 3, 3}, "float32"))
      try(core.solver_potrf_batched, a, info, "upper")
      try(core.solver_getrf_batched, a, ipiv, info, nil, 5)
      local module = gpu.SourceModule("__global__ void k() {}")
      local k = module:get_function("k")
      try(core.solver_getrs_batched, a, ipiv, gpu.zeros({2, 3}), "T", nil, k)
      module:free()
      try(core.solver_potrf_batched, a, info, "L", nil, k)
      try(core.solver_syevj_batched, gpu.zeros({2, 33, 33}), gpu.zeros({2, 33}), info, false, "L")
      try(core.solver_syevj_batched, a, gpu.zeros({2, 3}, "float32"), info, false, "L")
      local s3, u3 = gpu.zeros({2, 3}), gpu.zeros({2, 3, 3})
      try(core.solver_gesvdj_batched, gpu.zeros({2, 33, 4}), gpu.zeros({2, 4}), gpu.zeros({2, 4, 4}),
          gpu.zeros({2, 33, 33}), info, true)
      try(core.solver_gesvdj_batched, a, gpu.zeros({2, 3}, "float32"), u3, u3, info, true)
      try(core.solver_gesvdj_batched, gpu.zeros({2, 2, 3}), gpu.zeros({2, 2}), u3, gpu.zeros({2, 2, 3}), info, false)
      try(core.solver_gesvdj_batched, a, s3, u3, u3, gpu.zeros({2}, "int64"), false)
      local s = gpu.Stream()
      s:begin_capture()
      try(core.solver_getrf_batched, a, ipiv, info, s)
      try(core.solver_potrf_batched, a, info, "L", s)
      s:end_capture()
      s:free()
      try(core.solver_syevj_batched, a, gpu.zeros({2, 3}), info, true, "U", s)
      a:free()
      try(core.solver_getrf_batched, a, ipiv, info)
      print("done")
    ]])
    assert(ok, out)
    local lines = {}
    for line in out:gmatch("[^\n]+") do
      if not line:match("^fake%a+: ") then lines[#lines + 1] = line end
    end
    assert.are.same({
      "bad argument #2 to 'gpu.core.solver_getrf_batched' (int32 array expected, got int64)",
      "bad argument #1 to 'gpu.core.solver_getrf_batched' (square matrices expected, got 4 x 3)",
      "bad argument #1 to 'gpu.core.solver_getrf_batched' (contiguous array expected)",
      "bad argument #3 to 'gpu.core.solver_getrs_batched' (array of a multiple of 6 elements expected, got 7)",
      "bad argument #3 to 'gpu.core.solver_getrs_batched' (float64 array expected, got float32)",
      "bad argument #3 to 'gpu.core.solver_getri_batched' (array other than argument #1 expected)",
      "bad argument #3 to 'gpu.core.solver_getri_batched' (float64 array expected, got float32)",
      "bad argument #3 to 'gpu.core.solver_potrf_batched' (invalid option 'upper')",
      "bad argument #5 to 'gpu.core.solver_getrf_batched' (gpu.Function expected, got number)",
      "bad argument #6 to 'gpu.core.solver_getrs_batched' (kernel 'gpu_matrix_addresses' expected, got 'k')",
      "kernel 'k' belongs to a module that has been freed",
      "bad argument #1 to 'gpu.core.solver_syevj_batched' (matrices of at most 32 rows expected, got 33)",
      "bad argument #2 to 'gpu.core.solver_syevj_batched' (float64 array expected, got float32)",
      "bad argument #1 to 'gpu.core.solver_gesvdj_batched' (matrices of at most 32 rows and columns expected, "
        .. "got 4 x 33)",
      "bad argument #2 to 'gpu.core.solver_gesvdj_batched' (float64 array expected, got float32)",
      "bad argument #4 to 'gpu.core.solver_gesvdj_batched' (array of 8 elements expected, got 12)",
      "bad argument #5 to 'gpu.core.solver_gesvdj_batched' (int32 array expected, got int64)",
      "bad argument #4 to 'gpu.core.solver_getrf_batched' (cuSOLVER's work cannot be captured in a graph)",
      "bad argument #4 to 'gpu.core.solver_potrf_batched' (cuSOLVER's work cannot be captured in a graph)",
      "bad argument #6 to 'gpu.core.solver_syevj_batched' (stream has been freed)",
      "bad argument #1 to 'gpu.core.solver_getrf_batched' (array has been freed)",
      "done",
    }, lines)
  end)
end)
