-- gpu.linalg (lua/gpu/linalg.lua on src/solver.c's cuSOLVER calls): each result checked in
-- Lua, in doubles, against the values the device was given (as stored, rounded to the dtype):
-- a x = b, a inv(a) = I, q r = a with q orthonormal and r upper triangular, u s vh = a with
-- orthonormal factors, a v = v diag(w), L L^H = a, and determinants against a Lua LU, for
-- each dtype, stacks, broadcasting and views; singular and indefinite matrices; the exact
-- errors.  Without a GPU, what gpu.linalg hands cuSOLVER (tools/fakecusolver.c's trace).
--
-- Tolerances: these factorizations are backward stable, so a residual such as |a x - b| is
-- bounded by a small multiple of n eps |a| |x| (Frobenius norms; eps the dtype's: 2^-23 for
-- float32 and complex64, 2^-52 for float64 and complex128), and the columns of q, u, v are
-- orthonormal to a small multiple of n eps.  The bounds below take 30 n eps: well above what
-- LAPACK-style algorithms reach (a few n eps), far below what any wrong layout, triangle or
-- conjugation gives (errors of the order of the norms themselves).  Determinants are compared
-- with a Lua LU on well-conditioned matrices (diagonally dominant, rows shuffled so that
-- pivoting swaps them), where the relative error stays within a few n eps too (100 n eps).
local helpers = require "helpers"
local R = require "reduction_helpers"
local LR = require "linalg_reference"
local gpu = helpers.gpu
local core = require "gpu.core"

local L = gpu.linalg

local DTYPES = {"float32", "float64", "complex64", "complex128", "int32"}

local EPS, REAL, computed, product, shape_with = LR.EPS, LR.REAL, LR.computed, LR.product, LR.shape_with
local ZERO, ONE, add, sub, mul, div, conj = LR.ZERO, LR.ONE, LR.add, LR.sub, LR.mul, LR.div, LR.conj
local abs, matrix, matmul, ct, transpose = LR.abs, LR.matrix, LR.matmul, LR.ct, LR.transpose
local identity, norm, distance, assert_small = LR.identity, LR.norm, LR.distance, LR.assert_small
local random_entry, random_matrix, dominant = LR.random_entry, LR.random_matrix, LR.dominant
local hermitian, with_junk, hermitian_of, pair = LR.hermitian, LR.with_junk, LR.hermitian_of, LR.pair
local to_device, matrices_of, values_of = LR.to_device, LR.matrices_of, LR.values_of
local det_reference, assert_orthonormal = LR.det_reference, LR.assert_orthonormal

-- The first rows x cols block of A.
local function block(A, rows, cols) return matrix(rows, cols, function(i, j) return A[i][j] end) end

-- The index (1-based) in a stack of shape sub of the matrix that the k-th (1-based) matrix of
-- the stack of shape full, sub broadcast to it, reads.
local function broadcast_index(full, sub, k)
  local digits, rest = {}, k - 1
  for d = #full, 1, -1 do
    digits[d] = rest % full[d]
    rest = rest // full[d]
  end
  local index, stride, offset = 0, 1, #full - #sub
  for d = #sub, 1, -1 do
    index = index + (sub[d] == 1 and 0 or digits[d + offset]) * stride
    stride = stride * sub[d]
  end
  return index + 1
end

local function assert_upper(R_, what)
  for i = 1, #R_ do
    for j = 1, math.min(i - 1, #R_[1]) do
      assert(R_[i][j][1] == 0 and R_[i][j][2] == 0, what .. ": not upper triangular at " .. i .. ", " .. j)
    end
  end
end

local function assert_lower(L_, what)
  assert_upper(transpose(L_), what)
end

describe("gpu.linalg", function()
  helpers.gpu_it("solve: a x = b for each dtype, vectors and matrices, stacks broadcast, views", function()
    local s = gpu.Stream()
    local cases = {   -- a's stack, n, b's shape, x's shape
      {{}, 4, {4}, {4}},
      {{}, 4, {4, 3}, {4, 3}},
      {{2, 3}, 5, {2, 3, 5, 2}, {2, 3, 5, 2}},
      {{3}, 4, {4}, {3, 4}},
      {{}, 4, {5, 4, 2}, {5, 4, 2}},          -- one matrix for a stack of b
      {{2, 1}, 3, {4, 3, 1}, {2, 4, 3, 1}},
      {{}, 1, {1}, {1}},
      {{3}, 6, {1, 6, 7}, {3, 6, 7}},
    }
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[computed(dtype)]
      for c, case in ipairs(cases) do
        local a_batch, n, b_shape, x_shape = table.unpack(case)
        local vector = #b_shape == 1
        local a_mats, b_mats = {}, {}
        for i = 1, product(a_batch) do a_mats[i] = dominant(n, dtype) end
        local a, A = to_device(a_mats, shape_with(a_batch, n, n), dtype)
        local b_batch = vector and {} or {table.unpack(b_shape, 1, #b_shape - 2)}
        local k = vector and 1 or b_shape[#b_shape]
        for i = 1, product(b_batch) do b_mats[i] = random_matrix(n, k, dtype) end
        local b, B = to_device(b_mats, vector and {n, 1} or b_shape, dtype)
        if vector then b = R.reshaped(b, {n}) end
        local x = L.solve(a, b, c % 2 == 0 and {stream = s} or nil)
        s:synchronize()
        local what = ("solve %s case %d"):format(dtype, c)
        assert.are.same(x_shape, x.shape, what)
        assert.are.equal(computed(dtype), x.dtype, what)
        local batch = {table.unpack(x_shape, 1, #x_shape - (vector and 1 or 2))}
        local X = matrices_of(vector and x:reshape(shape_with(batch, n, 1)) or x)
        for i = 1, product(batch) do
          local Ai, Bi = A[broadcast_index(batch, a_batch, i)], B[broadcast_index(batch, b_batch, i)]
          assert_small(distance(matmul(Ai, X[i]), Bi), 30 * n * eps * (norm(Ai) * norm(X[i]) + norm(Bi)),
                       what .. " matrix " .. i)
        end
      end
    end
    -- views: a transposed, b every other element; mixed dtypes promote as NumPy's linalg
    local a, A = to_device({dominant(5, "float64")}, {5, 5}, "float64")
    local b, B = to_device({random_matrix(10, 1, "float64")}, {10, 1}, "float64")
    local every = R.every(R.reshaped(b, {10}), 2)
    local Bv = matrix(5, 1, function(i) return B[1][2 * i - 1][1] end)
    local x = L.solve(a:transpose(), every)
    assert_small(distance(matmul(transpose(A[1]), matrices_of(x:reshape(5, 1))[1]), Bv), 1e-12, "views")
    for _, case in ipairs{{"float32", "complex64", "complex64"}, {"float32", "float64", "float64"},
                          {"float64", "complex64", "complex128"}, {"int8", "float32", "float64"},
                          {"float32", "float32", "float32"}} do
      local ma = to_device({dominant(3, case[1])}, {3, 3}, case[1])
      local mb = to_device({random_matrix(3, 1, case[2])}, {3, 1}, case[2])
      assert.are.equal(case[3], L.solve(ma, R.reshaped(mb, {3})).dtype, table.concat(case, " "))
    end
    -- the empty: no right side, no row, no matrix
    assert.are.same({4, 0}, L.solve(a:narrow(1, 1, 4):narrow(2, 1, 4), gpu.zeros({4, 0})).shape)
    assert.are.same({0}, L.solve(gpu.zeros({0, 0}), gpu.zeros({0})).shape)
    assert.are.same({0, 3}, L.solve(gpu.zeros({0, 3, 3}), gpu.zeros({3})).shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'solve' (array has been freed)", L.solve, a, every)
    local base = gpu.zeros({10})
    local strided = R.every(base, 2)
    base:free()
    helpers.assert_error("bad argument #2 to 'solve' (array has been freed)", L.solve, gpu.zeros({5, 5}), strided)
  end)

  helpers.gpu_it("inv: a inv(a) = I for each dtype, stacks, views", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[computed(dtype)]
      for c, case in ipairs{{{}, 1}, {{}, 5}, {{3}, 4}, {{2, 2}, 3}, {{}, 16}} do
        local batch, n = case[1], case[2]
        local mats = {}
        for i = 1, product(batch) do mats[i] = dominant(n, dtype) end
        local a, A = to_device(mats, shape_with(batch, n, n), dtype)
        local x = L.inv(a, c % 2 == 0 and {stream = s} or nil)
        s:synchronize()
        local what = ("inv %s case %d"):format(dtype, c)
        assert.are.same(shape_with(batch, n, n), x.shape, what)
        assert.are.equal(computed(dtype), x.dtype, what)
        for i, X in ipairs(matrices_of(x)) do
          local bound = 30 * n * eps * norm(A[i]) * norm(X)
          assert_small(distance(matmul(A[i], X), identity(n)), bound, what .. " a inv(a)")
          assert_small(distance(matmul(X, A[i]), identity(n)), bound, what .. " inv(a) a")
        end
      end
    end
    -- exactly: [[4, 7], [2, 6]] has the inverse [[0.6, -0.7], [-0.2, 0.4]]; a transposed view
    local a = R.to_gpu({4, 7, 2, 6}, "float64")
    local x = values_of(L.inv(R.reshaped(a, {2, 2})))
    local t = values_of(L.inv(R.reshaped(a, {2, 2}):transpose()))
    for i, want in ipairs{0.6, -0.7, -0.2, 0.4} do
      helpers.assert_close(want, x[i][1], 1e-14, "inv " .. i)
      helpers.assert_close(want, t[({1, 3, 2, 4})[i]][1], 1e-14, "inv of the transpose " .. i)
    end
    assert.are.same({0, 0}, L.inv(gpu.zeros({0, 0})).shape)
    assert.are.same({2, 0, 0}, L.inv(gpu.zeros({2, 0, 0}, "float32")).shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'inv' (array has been freed)", L.inv, a)
  end)

  helpers.gpu_it("solve and inv name a singular matrix, alone or in a stack", function()
    for _, dtype in ipairs{"float32", "float64", "complex64", "complex128"} do
      -- a zero row and a zero column: U(i, i) is exactly 0 whichever way it is factored
      local singular = dominant(4, dtype)
      for j = 1, 4 do singular[2][j], singular[j][3] = ZERO, ZERO end
      local a = to_device({dominant(4, dtype), singular}, {2, 4, 4}, dtype)
      local b = gpu.zeros({4}, dtype)
      helpers.assert_error("bad argument #1 to 'solve' (Singular matrix)", L.solve, a, b)
      helpers.assert_error("bad argument #1 to 'inv' (Singular matrix)", L.inv, a)
      helpers.assert_error("bad argument #1 to 'inv' (Singular matrix)", L.inv, gpu.zeros({3, 3}, dtype))
      local s = gpu.Stream({non_blocking = true})
      helpers.assert_error("bad argument #1 to 'solve' (Singular matrix)", L.solve, a, b, {stream = s})
    end
  end)

  helpers.gpu_it("det and slogdet match a Lua LU, singular matrices give 0 and -inf", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      for c, case in ipairs{{{}, 1}, {{}, 2}, {{}, 6}, {{3}, 5}, {{2, 2}, 3}} do
        local batch, n = case[1], case[2]
        local mats = {}
        for i = 1, product(batch) do mats[i] = dominant(n, dtype) end
        local a, A = to_device(mats, shape_with(batch, n, n), dtype)
        local opts = c % 2 == 0 and {stream = s} or nil
        local det = L.det(a, opts)
        local sign, logabsdet = L.slogdet(a, opts)
        s:synchronize()
        local what = ("det %s case %d"):format(dtype, c)
        assert.are.same(batch, det.shape, what)
        assert.are.equal(out, det.dtype, what)
        assert.are.same(batch, sign.shape, what)
        assert.are.equal(out, sign.dtype, what)
        assert.are.same(batch, logabsdet.shape, what)
        assert.are.equal(REAL[out], logabsdet.dtype, what)
        local d, sg, l = values_of(det), values_of(sign), values_of(logabsdet)
        for i = 1, #mats do
          local want = det_reference(A[i])
          local magnitude = abs(want)
          assert_small(abs(sub(d[i], want)), 100 * n * eps * magnitude, what .. " det " .. i)
          assert_small(math.abs(l[i][1] - math.log(magnitude)), 100 * n * eps, what .. " logabsdet " .. i)
          if out:match("complex") then
            assert_small(abs(sub(sg[i], {want[1] / magnitude, want[2] / magnitude})), 100 * n * eps,
                         what .. " sign " .. i)
          else
            assert.are.equal(want[1] > 0 and 1 or -1, sg[i][1], what .. " sign " .. i)
          end
        end
      end
    end
    -- exactly: [[1, 2], [3, 4]] (a row swap) and its transpose
    local a = R.reshaped(R.to_gpu({1, 2, 3, 4}, "float64"), {2, 2})
    helpers.assert_close(-2, L.det(a)[1], 1e-15, "det")
    helpers.assert_close(-2, L.det(a:transpose())[1], 1e-15, "det of the transpose")
    local sign, logabsdet = L.slogdet(a)
    assert.are.equal(-1, sign[1])
    helpers.assert_close(math.log(2), logabsdet[1], 1e-15, "log 2")
    -- singular (a zero row and a zero column, beside a regular matrix): det 0, slogdet (0,
    -- -inf); the zero matrix too; empty: 1, and (1, 0)
    local singular = dominant(3, "complex128")
    for j = 1, 3 do singular[1][j], singular[j][2] = ZERO, ZERO end
    local z = to_device({dominant(3, "complex128"), singular}, {2, 3, 3}, "complex128")
    assert.are.same({0.0, 0.0}, values_of(L.det(z))[2])
    sign, logabsdet = L.slogdet(z)
    assert.are.same({0.0, 0.0}, values_of(sign)[2])
    assert.are.equal(-math.huge, logabsdet[2])
    assert.is_true(logabsdet[1] > -math.huge)
    assert.are.equal(0.0, L.det(gpu.zeros({4, 4}, "float32"))[1])
    sign, logabsdet = L.slogdet(gpu.zeros({2, 2}))
    assert.are.equal(0.0, sign[1])
    assert.are.equal(-math.huge, logabsdet[1])
    assert.are.same({1.0, 1.0}, helpers.flat(R.get(L.det(gpu.zeros({2, 0, 0})))))
    sign, logabsdet = L.slogdet(gpu.zeros({0, 0}, "complex64"))
    assert.are.same({1.0, 0.0}, values_of(sign)[1])
    assert.are.equal("float32", logabsdet.dtype)
    assert.are.equal(0.0, logabsdet[1])
    z:free()
    helpers.assert_error("bad argument #1 to 'det' (array has been freed)", L.det, z)
    helpers.assert_error("bad argument #1 to 'slogdet' (array has been freed)", L.slogdet, z)
  end)

  helpers.gpu_it("cholesky: L L^H = a from one triangle, lower or upper; an indefinite matrix named", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local eps = EPS[computed(dtype)]
      for c, case in ipairs{{{}, 1}, {{}, 4}, {{3}, 5}, {{2, 1}, 8}} do
        local batch, n = case[1], case[2]
        for _, upper in ipairs{false, true} do
          local mats = {}
          for i = 1, product(batch) do mats[i] = with_junk(hermitian(n, dtype, true), dtype, upper) end
          local a, A = to_device(mats, shape_with(batch, n, n), dtype)
          local f = L.cholesky(a, {upper = upper or nil, stream = c % 2 == 0 and s or nil})
          s:synchronize()
          local what = ("cholesky %s case %d%s"):format(dtype, c, upper and " upper" or "")
          assert.are.same(shape_with(batch, n, n), f.shape, what)
          assert.are.equal(computed(dtype), f.dtype, what)
          for i, F in ipairs(matrices_of(f)) do
            local H = hermitian_of(A[i], upper)
            if upper then assert_upper(F, what) else assert_lower(F, what) end
            local product_ = upper and matmul(ct(F), F) or matmul(F, ct(F))
            assert_small(distance(product_, H), 30 * n * eps * norm(H), what .. " matrix " .. i)
            for j = 1, n do
              assert(F[j][j][1] > 0 and math.abs(F[j][j][2]) <= 30 * n * eps * F[j][j][1],
                     what .. ": the diagonal is real and positive")
            end
          end
        end
      end
      -- indefinite: one matrix of a stack
      local bad = hermitian(3, dtype, true)
      bad[2][2] = {-bad[2][2][1], 0.0}
      for j = 1, 3 do
        if j ~= 2 then bad[2][j], bad[j][2] = ZERO, ZERO end
      end
      local a = to_device({hermitian(3, dtype, true), bad}, {2, 3, 3}, dtype)
      helpers.assert_error("bad argument #1 to 'cholesky' (Matrix is not positive definite)", L.cholesky, a)
      helpers.assert_error("bad argument #1 to 'cholesky' (Matrix is not positive definite)", L.cholesky,
                           a, {upper = true})
    end
    -- [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]] (int16: computed in float64)
    local a = R.reshaped(R.to_gpu({4, 2, 2, 5}, "int16"), {2, 2})
    for _, case in ipairs{{false, {2, 0, 1, 2}}, {true, {2, 1, 0, 2}}} do
      local f = L.cholesky(a, {upper = case[1]})
      assert.are.equal("float64", f.dtype)
      local got = helpers.flat(R.get(f))
      for i, want in ipairs(case[2]) do helpers.assert_close(want, got[i], 1e-15, "cholesky of int16 " .. i) end
    end
    assert.are.same({0, 0}, L.cholesky(gpu.zeros({0, 0})).shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'cholesky' (array has been freed)", L.cholesky, a)
  end)

  helpers.gpu_it("qr: q r = a with q orthonormal and r upper triangular, every mode", function()
    local s = gpu.Stream()
    local cases = {{{}, 5, 3}, {{}, 3, 5}, {{}, 4, 4}, {{2}, 6, 4}, {{2}, 4, 6}, {{}, 1, 1}, {{3}, 7, 1}}
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      for c, case in ipairs(cases) do
        local batch, m, n = table.unpack(case)
        local k = math.min(m, n)
        local mats = {}
        for i = 1, product(batch) do mats[i] = random_matrix(m, n, dtype) end
        local a, A = to_device(mats, shape_with(batch, m, n), dtype)
        local opts = c % 2 == 0 and {stream = s} or {}
        local what = ("qr %s case %d"):format(dtype, c)
        local q, r = L.qr(a, opts)
        opts.mode = "complete"
        local qc, rc = L.qr(a, opts)
        opts.mode = "r"
        local r_only = L.qr(a, opts)
        opts.mode = "raw"
        local h, tau = L.qr(a, opts)
        s:synchronize()
        assert.are.same(shape_with(batch, m, k), q.shape, what)
        assert.are.same(shape_with(batch, k, n), r.shape, what)
        assert.are.same(shape_with(batch, m, m), qc.shape, what)
        assert.are.same(shape_with(batch, m, n), rc.shape, what)
        assert.are.same(shape_with(batch, k, n), r_only.shape, what)
        assert.are.same(shape_with(batch, n, m), h.shape, what)
        assert.are.same(shape_with(batch, k), tau.shape, what)
        for _, x in ipairs{q, r, qc, rc, r_only, h, tau} do assert.are.equal(out, x.dtype, what) end
        local Q, R_, QC, RC, RO = matrices_of(q), matrices_of(r), matrices_of(qc), matrices_of(rc),
                                  matrices_of(r_only)
        local H, T = matrices_of(h), values_of(tau)
        for i = 1, #mats do
          local bound = 30 * math.max(m, n) * eps * norm(A[i])
          assert_upper(R_[i], what)
          assert_upper(RC[i], what)
          assert_orthonormal(Q[i], eps, what .. " q")
          assert_orthonormal(QC[i], eps, what .. " complete q")
          assert_small(distance(matmul(Q[i], R_[i]), A[i]), bound, what .. " q r")
          assert_small(distance(matmul(QC[i], RC[i]), A[i]), bound, what .. " complete q r")
          assert_small(distance(RO[i], R_[i]), bound, what .. " r alone")
          -- raw: h^T holds r above its diagonal and the reflectors below; q = H1 H2 ... Hk,
          -- Hj = I - tau_j v_j v_j^H with v_j's j-th element 1 (LAPACK's form, NumPy's)
          local At = transpose(H[i])
          local Qraw = identity(m)
          for j = 1, k do
            local v = matrix(m, 1, function(row) return row < j and ZERO or row == j and ONE or At[row][j] end)
            local tau_j = T[(i - 1) * k + j]
            local reflector = matrix(m, m, function(x, y)
              return sub(x == y and ONE or ZERO, mul(tau_j, mul(v[x][1], conj(v[y][1]))))
            end)
            Qraw = matmul(Qraw, reflector)
          end
          local Rraw = matrix(m, n, function(x, y) return x <= y and At[x][y] or ZERO end)
          assert_small(distance(matmul(Qraw, Rraw), A[i]), bound, what .. " raw")
        end
      end
    end
    -- a transposed view, and the empty
    local a, A = to_device({random_matrix(3, 5, "float64")}, {3, 5}, "float64")
    local q, r = L.qr(a:transpose())
    assert_small(distance(matmul(matrices_of(q)[1], matrices_of(r)[1]), transpose(A[1])), 1e-13, "qr of a view")
    q, r = L.qr(gpu.zeros({3, 0}), {mode = "complete"})
    assert.are.same({1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0}, helpers.flat(R.get(q)))
    assert.are.same({3, 0}, r.shape)
    q, r = L.qr(gpu.zeros({0, 4}))
    assert.are.same({0, 0}, q.shape)
    assert.are.same({0, 4}, r.shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'qr' (array has been freed)", L.qr, a)
  end)

  helpers.gpu_it("eigh and eigvalsh: a v = v diag(w), w ascending, from either triangle", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      for c, case in ipairs{{{}, 1}, {{}, 4}, {{3}, 5}, {{2, 2}, 6}, {{}, 20}} do
        local batch, n = case[1], case[2]
        for _, uplo in ipairs{"L", "U"} do
          local upper = uplo == "U"
          local mats = {}
          for i = 1, product(batch) do mats[i] = with_junk(hermitian(n, dtype, false), dtype, upper) end
          local a, A = to_device(mats, shape_with(batch, n, n), dtype)
          local opts = {UPLO = c % 2 == 0 and uplo or (upper and "U" or nil), stream = c % 2 == 0 and s or nil}
          local w, v = L.eigh(a, opts)
          local w_only = L.eigvalsh(a, opts)
          s:synchronize()
          local what = ("eigh %s case %d %s"):format(dtype, c, uplo)
          assert.are.same(shape_with(batch, n), w.shape, what)
          assert.are.equal(REAL[out], w.dtype, what)
          assert.are.same(shape_with(batch, n, n), v.shape, what)
          assert.are.equal(out, v.dtype, what)
          assert.are.same(shape_with(batch, n), w_only.shape, what)
          local W, V, WO = values_of(w), matrices_of(v), values_of(w_only)
          for i = 1, #mats do
            local H = hermitian_of(A[i], upper)
            local bound = 30 * n * eps * norm(H)
            local D = matrix(n, n, function(x, y) return x == y and W[(i - 1) * n + x] or ZERO end)
            assert_small(distance(matmul(H, V[i]), matmul(V[i], D)), bound, what .. " a v = v w")
            assert_orthonormal(V[i], eps, what .. " v")
            for j = 1, n do
              local wj = W[(i - 1) * n + j][1]
              if j > 1 then assert(W[(i - 1) * n + j - 1][1] <= wj, what .. ": ascending") end
              assert_small(math.abs(WO[(i - 1) * n + j][1] - wj), bound, what .. " eigvalsh")
            end
          end
        end
      end
    end
    -- exactly enough: [[2, 1], [1, 2]] has 1 and 3; a transposed view reads its own lower triangle
    local junk = with_junk(hermitian(4, "complex128", false), "complex128", false)
    local a, A = to_device({junk}, {4, 4}, "complex128")
    local w, v = L.eigh(a:transpose())
    local H = hermitian_of(transpose(A[1]), false)
    local D = matrix(4, 4, function(x, y) return x == y and values_of(w)[x] or ZERO end)
    local V = matrices_of(v)[1]
    assert_small(distance(matmul(H, V), matmul(V, D)), 1e-12 * norm(H), "eigh of a view")
    local two = R.reshaped(R.to_gpu({2, 1, 1, 2}, "float64"), {2, 2})
    local values = helpers.flat(R.get(L.eigvalsh(two)))
    helpers.assert_close(1, values[1], 1e-14, "eigenvalue 1")
    helpers.assert_close(3, values[2], 1e-14, "eigenvalue 3")
    w, v = L.eigh(gpu.zeros({0, 0}))
    assert.are.same({0}, w.shape)
    assert.are.same({0, 0}, v.shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'eigh' (array has been freed)", L.eigh, a)
    helpers.assert_error("bad argument #1 to 'eigvalsh' (array has been freed)", L.eigvalsh, a)
  end)

  helpers.gpu_it("svd: u diag(s) vh = a with orthonormal u and vh, s descending, every option", function()
    local s_ = gpu.Stream()
    local cases = {{{}, 5, 3}, {{}, 3, 5}, {{}, 4, 4}, {{2}, 3, 6}, {{2}, 6, 3}, {{}, 1, 1}, {{}, 1, 4},
                   {{3}, 4, 1}, {{}, 24, 17}}
    for _, dtype in ipairs(DTYPES) do
      local out = computed(dtype)
      local eps = EPS[out]
      for c, case in ipairs(cases) do
        local batch, m, n = table.unpack(case)
        local k = math.min(m, n)
        local mats = {}
        for i = 1, product(batch) do mats[i] = random_matrix(m, n, dtype) end
        local a, A = to_device(mats, shape_with(batch, m, n), dtype)
        local stream = c % 2 == 0 and s_ or nil
        local what = ("svd %s case %d"):format(dtype, c)
        local u, s, vh = L.svd(a, {stream = stream})
        local ur, sr, vhr = L.svd(a, {full_matrices = false, stream = stream})
        local s_only = L.svd(a, {compute_uv = false, stream = stream})
        s_:synchronize()
        assert.are.same(shape_with(batch, m, m), u.shape, what)
        assert.are.same(shape_with(batch, k), s.shape, what)
        assert.are.same(shape_with(batch, n, n), vh.shape, what)
        assert.are.same(shape_with(batch, m, k), ur.shape, what)
        assert.are.same(shape_with(batch, k, n), vhr.shape, what)
        assert.are.same(shape_with(batch, k), s_only.shape, what)
        assert.are.equal(out, u.dtype, what)
        assert.are.equal(out, vh.dtype, what)
        assert.are.equal(REAL[out], s.dtype, what)
        local U, S, VH = matrices_of(u), values_of(s), matrices_of(vh)
        local UR, SR, VHR, SO = matrices_of(ur), values_of(sr), matrices_of(vhr), values_of(s_only)
        for i = 1, #mats do
          local bound = 30 * math.max(m, n) * eps * norm(A[i])
          local D = matrix(k, k, function(x, y) return x == y and S[(i - 1) * k + x] or ZERO end)
          local DR = matrix(k, k, function(x, y) return x == y and SR[(i - 1) * k + x] or ZERO end)
          assert_orthonormal(U[i], eps, what .. " u")
          assert_orthonormal(ct(VH[i]), eps, what .. " vh")
          assert_orthonormal(UR[i], eps, what .. " reduced u")
          assert_orthonormal(ct(VHR[i]), eps, what .. " reduced vh")
          assert_small(distance(matmul(matmul(block(U[i], m, k), D), block(VH[i], k, n)), A[i]), bound, what)
          assert_small(distance(matmul(matmul(UR[i], DR), VHR[i]), A[i]), bound, what .. " reduced")
          for j = 1, k do
            local sj = S[(i - 1) * k + j][1]
            assert(sj >= 0, what .. ": not negative")
            if j > 1 then assert(S[(i - 1) * k + j - 1][1] >= sj, what .. ": descending") end
            assert_small(math.abs(SO[(i - 1) * k + j][1] - sj), bound, what .. " s alone")
            assert_small(math.abs(SR[(i - 1) * k + j][1] - sj), bound, what .. " reduced s")
          end
        end
      end
    end
    -- a transposed view; the empty (identities where full, as NumPy's)
    local a, A = to_device({random_matrix(3, 5, "complex64")}, {3, 5}, "complex64")
    local u, s, vh = L.svd(a:transpose())
    local k = 3
    local D = matrix(k, k, function(x, y) return x == y and values_of(s)[x] or ZERO end)
    assert_small(distance(matmul(matmul(block(matrices_of(u)[1], 5, k), D), matrices_of(vh)[1]), transpose(A[1])),
                 30 * 5 * EPS.complex64 * norm(A[1]), "svd of a view")
    u, s, vh = L.svd(gpu.zeros({2, 0}))
    assert.are.same({1.0, 0.0, 0.0, 1.0}, helpers.flat(R.get(u)))
    assert.are.same({0}, s.shape)
    assert.are.same({0, 0}, vh.shape)
    u, s, vh = L.svd(gpu.zeros({2, 0}), {full_matrices = false})
    assert.are.same({2, 0}, u.shape)
    assert.are.same({0, 0}, vh.shape)
    a:free()
    helpers.assert_error("bad argument #1 to 'svd' (array has been freed)", L.svd, a)
  end)

  helpers.gpu_it("matrix_rank counts the singular values above the tolerance", function()
    -- integer entries, so that the rank-deficient matrices are exactly so in every dtype (their
    -- computed small singular values are a few eps |a|, the default bound 10 eps |a|)
    local function integers(rows, cols, dtype)
      return matrix(rows, cols, function()
        return {math.random(-5, 5) + 0.0, dtype:match("complex") and math.random(-5, 5) + 0.0 or 0.0}
      end)
    end
    for _, dtype in ipairs{"float32", "float64", "complex64", "complex128"} do
      -- x y^T, and x y^T + x2 y2^T with x2 = x + e1 and y2 = y + e1 (independent of x and y:
      -- their second elements are fixed nonzero)
      local x, y = integers(6, 1, dtype), integers(1, 10, dtype)
      x[2][1], y[1][2] = {2.0, 0.0}, {3.0, 0.0}
      local x2 = matrix(6, 1, function(i) return i == 1 and add(x[1][1], ONE) or x[i][1] end)
      local y2 = matrix(1, 10, function(_, j) return j == 1 and add(y[1][1], ONE) or y[1][j] end)
      local one, other = matmul(x, y), matmul(x2, y2)
      local two = matrix(6, 10, function(i, j) return add(one[i][j], other[i][j]) end)
      local a = to_device({one, two, random_matrix(6, 10, dtype), matrix(6, 10, function() return ZERO end)},
                          {4, 6, 10}, dtype)
      local rank = L.matrix_rank(a)
      assert.are.equal("int64", rank.dtype)
      assert.are.same({1, 2, 6, 0}, helpers.flat(R.get(rank)), dtype)
      assert.are.same({0, 0, 0, 0}, helpers.flat(R.get(L.matrix_rank(a, {tol = 1e6}))), dtype)
      local rtol = helpers.flat(R.get(L.matrix_rank(a, {rtol = 0.5})))
      assert.are.same({1, 0}, {rtol[1], rtol[4]}, dtype)
      assert.are.same({}, L.matrix_rank(a:select(1, 1)).shape)
      assert.are.equal(1, L.matrix_rank(a:select(1, 1))[1])
    end
    assert.are.equal(0, L.matrix_rank(gpu.zeros({5}))[1])
    assert.are.equal(1, L.matrix_rank(R.to_gpu({0, 0, 3}, "int32"))[1])
    assert.are.equal(1, L.matrix_rank(R.reshaped(R.to_gpu({2}, "float32"), {}))[1])
    assert.are.equal(0, L.matrix_rank(gpu.zeros({0, 3}))[1])
    local a = gpu.zeros({3, 3})
    a:free()
    helpers.assert_error("bad argument #1 to 'matrix_rank' (array has been freed)", L.matrix_rank, a)
  end)

  helpers.gpu_it("names bad arguments as NumPy's linalg does", function()
    local a = gpu.zeros({3, 3})
    local cases = {
      {"bad argument #1 to 'inv' (GPUArray expected, got number)", L.inv, 3},
      {"bad argument #1 to 'inv' (array of at least 2 dimensions expected, got 1)", L.inv, gpu.zeros({3})},
      {"bad argument #1 to 'det' (array of at least 2 dimensions expected, got 0)", L.det, gpu.zeros({})},
      {"bad argument #1 to 'inv' (last 2 dimensions of the array must be square, got 3 x 4)", L.inv,
       gpu.zeros({3, 4})},
      {"bad argument #1 to 'cholesky' (last 2 dimensions of the array must be square, got 2 x 1)", L.cholesky,
       gpu.zeros({5, 2, 1})},
      {"bad argument #1 to 'inv' (array type float16 is unsupported in linalg)", L.inv,
       gpu.zeros({2, 2}, "float16")},
      {"bad argument #2 to 'solve' (array type bfloat16 is unsupported in linalg)", L.solve, a,
       gpu.zeros({3}, "bfloat16")},
      {"bad argument #2 to 'solve' (b has 4 rows, a's matrices are 3 x 3)", L.solve, a, gpu.zeros({4})},
      {"bad argument #2 to 'solve' (b has 2 rows, a's matrices are 3 x 3)", L.solve, a, gpu.zeros({2, 3})},
      {"bad argument #2 to 'solve' (array of at least 1 dimension expected, got 0)", L.solve, a, gpu.zeros({})},
      {"bad argument #2 to 'solve' (the stacks of a (2,) and of b (3,) cannot be broadcast together)", L.solve,
       gpu.zeros({2, 3, 3}), gpu.zeros({3, 3, 1})},
      {"bad argument #3 to 'solve' (unknown option 'assume_a')", L.solve, a, gpu.zeros({3}), {assume_a = "pos"}},
      {"bad argument #2 to 'qr' (option 'mode' must be 'reduced', 'complete', 'r' or 'raw', got 'full')", L.qr, a,
       {mode = "full"}},
      {"bad argument #2 to 'eigh' (option 'UPLO' must be 'L' or 'U', got 'l')", L.eigh, a, {UPLO = "l"}},
      {"bad argument #2 to 'eigvalsh' (option 'UPLO' must be 'L' or 'U', got number)", L.eigvalsh, a, {UPLO = 1}},
      {"bad argument #2 to 'svd' (option 'full_matrices' must be a boolean, got number)", L.svd, a,
       {full_matrices = 1}},
      {"bad argument #2 to 'svd' (option 'compute_uv' must be a boolean, got string)", L.svd, a,
       {compute_uv = "no"}},
      {"bad argument #2 to 'svd' (unknown option 'hermitian')", L.svd, a, {hermitian = true}},
      {"bad argument #2 to 'cholesky' (option 'upper' must be a boolean, got number)", L.cholesky, a, {upper = 1}},
      {"bad argument #2 to 'inv' (option 'stream' must be a gpu.Stream, got number)", L.inv, a, {stream = 1}},
      {"bad argument #2 to 'det' (options table expected, got string)", L.det, a, "fast"},
      {"bad argument #2 to 'matrix_rank' (option 'tol' must be a number, got string)", L.matrix_rank, a,
       {tol = "x"}},
      {"bad argument #2 to 'matrix_rank' (options 'tol' and 'rtol' cannot be given together)", L.matrix_rank, a,
       {tol = 1, rtol = 1}},
    }
    for _, case in ipairs(cases) do helpers.assert_error(table.unpack(case)) end
    -- the same table, gpu.linalg and gpu.gpuarray.linalg
    assert.are.equal(gpu.linalg, gpu.gpuarray.linalg)
  end)

  helpers.gpu_it("solver_potrs solves from solver_potrf's factor (the core's own calls)", function()
    -- symmetric, so the column-major transpose is the matrix itself
    local n = 6
    local H = hermitian(n, "float64", true)
    local a, A = to_device({H}, {n, n}, "float64")
    local b, B = to_device({random_matrix(n, 2, "float64")}, {n, 2}, "float64")
    local factor, rhs = a:copy(), b:transpose():copy()    -- each right side's n elements adjacent
    local info = gpu.zeros({}, "int32")
    core.solver_potrf(factor, info, "L")
    core.solver_potrs(factor, rhs, "L")
    assert.are.equal(0, info[1])
    local X = transpose(matrices_of(rhs)[1])
    assert_small(distance(matmul(A[1], X), B[1]), 30 * n * EPS.float64 * (norm(A[1]) * norm(X) + norm(B[1])),
                 "potrs")
  end)
end)

describe("gpu.linalg without a GPU", function()
  local traces = LR.traces
  -- cuSOLVER's and cuBLAS's calls: small real stacks, which take gpu_small_solve (spec/67),
  -- sent to them too
  local function fake_run(code, env)
    return LR.fake_run("require('gpu.linalg').small_rows = 0\n" .. code, env)
  end

  it("hands cuSOLVER each call's layout (tools/fakecusolver.c)", function()
    local out, ok = fake_run([[
      -- the fake's LU finds these zero matrices singular: the calls are made all the same
      local function call(name, f, ...)
        mark(name)
        local ok, err = pcall(f, ...)
        if not ok and not tostring(err):find("Singular matrix") then error(err, 0) end
      end
      call("solve stack", L.solve, gpu.zeros({2, 3, 3}), gpu.zeros({2, 3, 1}))
      call("solve one a", L.solve, gpu.zeros({3, 3}, "float32"), gpu.zeros({4, 3, 2}, "float32"))
      call("solve int", L.solve, gpu.zeros({3, 3}, "int32"), gpu.zeros({3, 1}, "complex64"))
      call("inv", L.inv, gpu.zeros({2, 3, 3}, "complex64"))
      call("det", function() L.det(gpu.zeros({4, 4}, "complex128")); L.slogdet(gpu.zeros({4, 4})) end)
      call("cholesky", L.cholesky, gpu.zeros({2, 4, 4}, "complex64"))
      call("cholesky upper", L.cholesky, gpu.zeros({4, 4}), {upper = true})
      call("qr tall", L.qr, gpu.zeros({5, 3}))
      call("qr tall complete", L.qr, gpu.zeros({5, 3}, "float32"), {mode = "complete"})
      call("qr wide", L.qr, gpu.zeros({3, 5}, "complex64"))
      call("qr wide complete", L.qr, gpu.zeros({3, 5}, "complex128"), {mode = "complete"})
      call("qr r", L.qr, gpu.zeros({2, 4, 4}), {mode = "r"})
      call("eigh", L.eigh, gpu.zeros({4, 4}, "complex128"))
      call("eigh upper", L.eigh, gpu.zeros({4, 4}, "float32"), {UPLO = "U"})
      call("eigvalsh", L.eigvalsh, gpu.zeros({2, 3, 3}))
      call("svd wide", L.svd, gpu.zeros({3, 5}))
      call("svd tall reduced", L.svd, gpu.zeros({5, 3}, "complex64"), {full_matrices = false})
      call("svd values", L.svd, gpu.zeros({2, 4, 3}, "float32"), {compute_uv = false})
      call("matrix_rank", L.matrix_rank, gpu.zeros({4, 6}, "int8"))
      call("empty", function() L.inv(gpu.zeros({0, 0})); L.qr(gpu.zeros({3, 0})); L.svd(gpu.zeros({2, 0, 5})) end)
      mark("end")
    ]], {FAKE_CUSOLVER_INFO = "0"})
    assert(ok, out)
    local want = {
      -- stacks of small matrices: one batched call (spec/67 has more)
      ["solve stack"] = {"cublas getrfBatched D n 3 lda 3 batch 2 step 72",
                         "cublas getrsBatched T D n 3 nrhs 1 lda 3 ldb 3 batch 2 step 72 24"},
      ["solve one a"] = {"Xgetrf R_32F m 3 n 3 lda 3", "Xgetrs T R_32F n 3 nrhs 8 lda 3 ldb 3"},
      ["solve int"] = {"Xgetrf C_64F m 3 n 3 lda 3", "Xgetrs T C_64F n 3 nrhs 1 lda 3 ldb 3"},
      inv = {"cublas getrfBatched C n 3 lda 3 batch 2 step 72",
             "cublas getriBatched C n 3 lda 3 ldc 3 batch 2 step 72 72"},
      det = {"Xgetrf C_64F m 4 n 4 lda 4", "Xgetrf R_64F m 4 n 4 lda 4"},
      cholesky = {"potrfBatched L C n 4 lda 4 batch 2 step 128"},
      ["cholesky upper"] = {"Xpotrf L R_64F n 4 lda 4"},
      ["qr tall"] = {"Xgeqrf R_64F m 5 n 3 lda 5", "Dorgqr m 5 n 3 k 3 lda 5"},
      ["qr tall complete"] = {"Xgeqrf R_32F m 5 n 3 lda 5", "Sorgqr m 5 n 5 k 3 lda 5"},
      ["qr wide"] = {"Xgeqrf C_32F m 3 n 5 lda 3", "Cungqr m 3 n 3 k 3 lda 3"},
      ["qr wide complete"] = {"Xgeqrf C_64F m 3 n 5 lda 3", "Zungqr m 3 n 3 k 3 lda 3"},
      ["qr r"] = {"Xgeqrf R_64F m 4 n 4 lda 4", "Xgeqrf R_64F m 4 n 4 lda 4"},
      eigh = {"Xsyevd vectors U C_64F n 4 lda 4 W R_64F"},
      ["eigh upper"] = {"Xsyevd vectors L R_32F n 4 lda 4 W R_32F"},
      eigvalsh = {"syevjBatched novectors U D n 3 lda 3 batch 2"},
      ["svd wide"] = {"Xgesvd A A R_64F m 5 n 3 lda 5 ldu 5 ldvt 3"},
      ["svd tall reduced"] = {"Xgesvd S S C_32F m 5 n 3 lda 5 ldu 5 ldvt 3"},
      ["svd values"] = {"gesvdjBatched novectors S m 3 n 4 lda 3 ldu 3 ldv 4 batch 2"},
      matrix_rank = {"Xgesvd N N R_64F m 6 n 4 lda 6 ldu 6 ldvt 4"},
      empty = {},
      ["end"] = {"cublas handle destroyed", "gesvdjInfo destroyed", "syevjInfo destroyed", "handle destroyed"},
    }
    local got = traces(out)
    for name, lines in pairs(want) do assert.are.same(lines, got[name], name .. "\n" .. out) end
  end)

  it("solves with the fake's own LU: the transposed solve, stacks and one matrix for many", function()
    -- contiguous float64 operands reach the fake as copies (no kernel runs there), and its
    -- getrf and getrs compute as LAPACK's do
    local out, ok = fake_run([[
      local a = gpu.to_gpu({{{2, 1, 0}, {1, 3, 1}, {4, 0, 5}}, {{0, 2, 1}, {3, 0, 0}, {1, 1, 1}}}, "float64")
      local x = L.solve(a, gpu.to_gpu({{{1}, {2}, {3}}, {{4}, {5}, {6}}}, "float64")):get()
      for i = 1, 6 do print(("x %.12f"):format(x[i])) end
      print(pcall(L.solve, gpu.zeros({2, 2}), gpu.zeros({2})))
    ]])
    assert(ok, out)
    -- [[2, 1, 0], [1, 3, 1], [4, 0, 5]] x = (1, 2, 3) and [[0, 2, 1], [3, 0, 0], [1, 1, 1]] x = (4, 5, 6)
    local want = {
      {{2, 1, 0}, {1, 3, 1}, {4, 0, 5}, {1, 2, 3}},
      {{0, 2, 1}, {3, 0, 0}, {1, 1, 1}, {4, 5, 6}},
    }
    local xs = {}
    for v in out:gmatch("x (%S+)\n") do xs[#xs + 1] = tonumber(v) end
    assert.are.equal(6, #xs, out)
    for m, system in ipairs(want) do
      for i = 1, 3 do
        local row = system[i]
        local lhs = row[1] * xs[3 * m - 2] + row[2] * xs[3 * m - 1] + row[3] * xs[3 * m]
        assert(math.abs(lhs - system[4][i]) < 1e-9, ("matrix %d row %d: %g\n%s"):format(m, i, lhs, out))
      end
    end
    assert.truthy(out:find("false\t[^\n]*bad argument #1 to 'solve' %(Singular matrix%)\n"), out)
  end)

  it("raises NumPy's errors from the infos, and names a failed call", function()
    local code = [[
      for _, f in ipairs{"cholesky", "eigh", "eigvalsh", "svd", "det", "qr"} do
        local ok, err = pcall(L[f], gpu.zeros({2, 3, 3}, "float32"))
        print(f, ok, ok and "" or err)
      end
    ]]
    local out = fake_run(code, {FAKE_CUSOLVER_INFO = "2"})
    for _, line in ipairs{
      "cholesky\tfalse\t[^\n]*bad argument #1 to 'cholesky' %(Matrix is not positive definite%)\n",
      "eigh\tfalse\t[^\n]*bad argument #1 to 'eigh' %(Eigenvalues did not converge%)\n",
      "eigvalsh\tfalse\t[^\n]*bad argument #1 to 'eigvalsh' %(Eigenvalues did not converge%)\n",
      "svd\tfalse\t[^\n]*bad argument #1 to 'svd' %(SVD did not converge%)\n",
      "det\ttrue\t\n", "qr\ttrue\t\n"} do
      assert.truthy(out:find(line), line .. "\n" .. out)
    end
    out = fake_run("print(pcall(L.eigh, gpu.zeros({3, 3})))", {FAKE_CUSOLVER_FAIL = "Xsyevd"})
    assert.truthy(out:find("false\tcusolverDnXsyevd: CUSOLVER_STATUS_EXECUTION_FAILED (the routine failed to run "
                           .. "on the GPU)\n", 1, true), out)
    out = fake_run("print(pcall(L.qr, gpu.zeros({3, 3}, 'complex128')))", {FAKE_CUSOLVER_FAIL = "Zungqr"})
    assert.truthy(out:find("false\tcusolverDnZungqr: CUSOLVER_STATUS_EXECUTION_FAILED", 1, true), out)
    out = fake_run("print(pcall(L.inv, gpu.zeros({3, 3})))", {FAKE_CUSOLVER_CREATE = "fail"})
    assert.truthy(out:find("false\tcusolverDnCreate: CUSOLVER_STATUS_NOT_INITIALIZED (the cuSOLVER library was "
                           .. "not initialized)\n", 1, true), out)
    local missing = "/nonexistent/libcusolver.so.12"
    out = fake_run("print(pcall(L.inv, gpu.zeros({3, 3})))", {GPU_CUSOLVER_LIBRARY = missing})
    assert.truthy(out:find("false\tcuSOLVER is not available: GPU_CUSOLVER_LIBRARY=" .. missing
                           .. " cannot be loaded: ", 1, true), out)
  end)

  it("checks the core's arguments: dtypes, layouts, sizes, contexts, streams", function()
    local out, ok = fake_run([[
      local core = require "gpu.core"
      local a, ipiv, info = gpu.zeros({2, 3, 3}), gpu.zeros({2, 3}, "int64"), gpu.zeros({2}, "int32")
      local function try(f, ...) print((select(2, pcall(f, ...)))) end
      try(core.solver_getrf, gpu.zeros({3, 3}, "int32"), ipiv, info)
      try(core.solver_getrf, gpu.zeros({3}), ipiv, info)
      try(core.solver_getrf, gpu.zeros({3, 4}), ipiv, info)
      try(core.solver_getrf, a:transpose({1, 3, 2}), ipiv, info)
      try(core.solver_getrf, a, gpu.zeros({2, 3}, "int32"), info)
      try(core.solver_getrf, a, ipiv, gpu.zeros({3}, "int32"))
      try(core.solver_getrs, a, ipiv, gpu.zeros({2, 3}, "float32"), "T")
      try(core.solver_getrs, a, ipiv, gpu.zeros({7}), "T")
      try(core.solver_getrs, a, ipiv, gpu.zeros({2, 3}), "X")
      try(core.solver_potrf, a, info, "lower")
      try(core.solver_gesvd, gpu.zeros({4, 3}), gpu.zeros({3}), nil, nil, gpu.zeros({}, "int32"), "N", "N")
      try(core.solver_gesvd, gpu.zeros({3, 4}), gpu.zeros({3}), nil, gpu.zeros({3, 3}), gpu.zeros({}, "int32"), "N",
          "N")
      try(core.solver_orgqr, gpu.zeros({3, 4}), gpu.zeros({3}), 5)
      local s = gpu.Stream()
      s:begin_capture()
      try(core.solver_getrf, a, ipiv, info, s)
      s:end_capture()
      try(core.solver_getrf, a, ipiv, info, 7)
      s:free()
      try(core.solver_getrf, a, ipiv, info, s)
      a:free()
      try(core.solver_getrf, a, ipiv, info)
      print(gpu.cusolver_version())
    ]])
    assert(ok, out)
    local lines = {}
    for line in out:gmatch("[^\n]+") do
      if not line:match("^fakecusolver: ") then lines[#lines + 1] = line end
    end
    assert.are.same({
      "bad argument #1 to 'gpu.core.solver_getrf' (float32, float64, complex64 or complex128 array expected, "
      .. "got int32)",
      "bad argument #1 to 'gpu.core.solver_getrf' (array of at least 2 dimensions expected, got 1)",
      "bad argument #1 to 'gpu.core.solver_getrf' (square matrices expected, got 4 x 3)",
      "bad argument #1 to 'gpu.core.solver_getrf' (contiguous array expected)",
      "bad argument #2 to 'gpu.core.solver_getrf' (int64 array expected, got int32)",
      "bad argument #3 to 'gpu.core.solver_getrf' (array of 2 elements expected, got 3)",
      "bad argument #3 to 'gpu.core.solver_getrs' (float64 array expected, got float32)",
      "bad argument #3 to 'gpu.core.solver_getrs' (array of a multiple of 6 elements expected, got 7)",
      "bad argument #4 to 'gpu.core.solver_getrs' (invalid option 'X')",
      "bad argument #3 to 'gpu.core.solver_potrf' (invalid option 'lower')",
      "bad argument #1 to 'gpu.core.solver_gesvd' (matrices of at least as many rows as columns expected, "
      .. "got 3 x 4)",
      "bad argument #4 to 'gpu.core.solver_gesvd' (nil expected for jobvt 'N')",
      "bad argument #3 to 'gpu.core.solver_orgqr' (columns must be from 0 to the matrices' rows and columns)",
      "bad argument #4 to 'gpu.core.solver_getrf' (cuSOLVER's work cannot be captured in a graph)",
      "bad argument #4 to 'gpu.core.solver_getrf' (gpu.Stream expected, got number)",
      "bad argument #4 to 'gpu.core.solver_getrf' (stream has been freed)",
      "bad argument #1 to 'gpu.core.solver_getrf' (array has been freed)",
    }, {table.unpack(lines, 1, #lines - 1)})
    assert.matches("^120000\t%S+/build/libfakecusolver%.so$", lines[#lines])
  end)

  it("finds cuSOLVER where it finds NVRTC, or says why not", function()
    local version, path = gpu.cusolver_version()
    if version then
      assert.is_true(math.type(version) == "integer" and version >= 110000, tostring(version))
      assert.matches("libcusolver", path)
    else
      assert.matches("cuSOLVER", path)
    end
    local show = 'local gpu = require "gpu"; print(gpu.cusolver_version())'
    assert.matches("^nil\tGPU_CUSOLVER_LIBRARY=/nonexistent/libcusolver%.so%.12 cannot be loaded: ",
                   (helpers.run_lua(show, {GPU_CUSOLVER_LIBRARY = "/nonexistent/libcusolver.so.12"})))
    assert.matches("^nil\t/%S*libc%.so%.6 lacks cusolverGetProperty\n$",
                   (helpers.run_lua(show, {GPU_CUSOLVER_LIBRARY = "libc.so.6"})))
  end)
end)
