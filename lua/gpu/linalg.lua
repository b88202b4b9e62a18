-- gpu.linalg (also gpuarray.linalg): NumPy's numpy.linalg factorizations and solvers on
-- cuSOLVER (src/solver.c).
--
--   solve(a, b[, opts]) -> x          a x = b; b a vector (M,) or a stack of matrices (..., M, K)
--   inv(a[, opts]) -> the inverses
--   det(a[, opts]) -> the determinants; slogdet(a[, opts]) -> sign, logabsdet
--   cholesky(a[, {upper = false}]) -> L, lower, with a = L L^H (or U, upper, with a = U^H U)
--   qr(a[, {mode = "reduced"}]) -> q, r; mode "complete" (q square), "r" (r alone) or "raw"
--                                  (h, tau: LAPACK's Householder form, as NumPy's)
--   eigh(a[, {UPLO = "L"}]) -> w, v (eigenvalues ascending, eigenvectors the columns of v);
--   eigvalsh(a[, opts]) -> w
--   svd(a[, {full_matrices = true, compute_uv = true}]) -> u, s, vh (s alone without uv)
--   matrix_rank(a[, {tol =, rtol =}]) -> the singular values above tol, as an int64 array
--
-- Every function takes a stack of matrices (..., M, N), each matrix on its own, NumPy 2's
-- broadcasting of stacks in solve, and {stream = s}.  As NumPy: float32 and complex64 compute
-- in single precision; float64, complex128, integers and bools in double (a float64 or
-- complex128 result); float16 and bfloat16 are refused.  A function of one matrix gives 0-d
-- arrays where NumPy gives scalars (det, slogdet, matrix_rank); several results come back as
-- several values.  NumPy's LinAlgError is a Lua error naming the function: a singular matrix
-- in solve and inv, one not positive definite in cholesky, eigh and svd that do not converge;
-- to know, these read each matrix's info back (the one synchronization they make).
--
-- Layouts: cuSOLVER reads matrices column-major, so the row-major copy handed to it (which
-- it overwrites, the reason for a copy) holds each matrix's transpose.  That is used, not
-- undone: the LU of a^T solves a x = b with the transposed solve (getrs "T"), gives inv(a)
-- already row-major as the solution of a^T X = I, and det(a) = det(a^T); the lower triangle
-- of a is the upper one of a^T, so cholesky and eigh hand cuSOLVER the opposite triangle (and
-- eigh a's conjugate, whose transpose is a itself for a Hermitian a, so that the eigenvectors
-- come out as a transposed view); a wide matrix's a^T is tall, as gesvd wants, and its SVD
-- gives a's with U and V^H swapped.  Only qr, and svd of a tall matrix, copy a's transpose.
-- Results that cuSOLVER leaves column-major are transposed views of contiguous arrays, as
-- gpu.fft's of other axes than the last are.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local operators = require "gpu.operators"
local promote = require "gpu.promote"
local reduction = require "gpu.reduction"

local M = {}

local argerror, typename = args.argerror, args.typename
local check_array, check_options = reduction.check_array, reduction.check_options

local ga   -- gpu.gpuarray, set by install

local STREAM = {stream = true}
local CHOLESKY = {upper = true, stream = true}
local QR = {mode = true, stream = true}
local EIGH = {UPLO = true, stream = true}
local SVD = {full_matrices = true, compute_uv = true, stream = true}
local RANK = {tol = true, rtol = true, stream = true}
local QR_MODES = {reduced = true, complete = true, r = true, raw = true}
local EPSILON = {float32 = 2.0 ^ -23, float64 = 2.0 ^ -52}

-- Dtypes -----------------------------------------------------------------------------------

local REAL_OF = {float32 = "float32", float64 = "float64", complex64 = "float32",
                 complex128 = "float64"}

-- The dtype NumPy's linalg computes the arrays (arguments 1, 2, ... of fname) in: complex if
-- any is, single precision only if all are float32 or complex64.
local function compute_dtype(arrays, fname)
  local complex, double = false, false
  for n, a in ipairs(arrays) do
    local dtype = a.dtype
    if dtype == "float16" or dtype == "bfloat16" then
      argerror(n, fname, ("array type %s is unsupported in linalg"):format(dtype))
    end
    complex = complex or core.dtype(dtype).kind == "c"
    double = double or (dtype ~= "float32" and dtype ~= "complex64")
  end
  if complex then return double and "complex128" or "complex64" end
  return double and "float64" or "float32"
end

-- Arguments --------------------------------------------------------------------------------

-- Argument n of fname: a live array of at least two axes (square in the last two where
-- square is true).
local function check_matrices(a, n, fname, square)
  check_array(a, n, fname)
  if a.ndim < 2 then
    argerror(n, fname, ("array of at least 2 dimensions expected, got %d"):format(a.ndim))
  end
  local shape = a.shape
  local rows, cols = shape[a.ndim - 1], shape[a.ndim]
  if square and rows ~= cols then
    argerror(n, fname, ("last 2 dimensions of the array must be square, got %d x %d"):format(rows, cols))
  end
  return rows, cols
end

local function check_boolean(opts, key, default, n, fname)
  return args.typed_option(opts, key, "boolean", n, fname, default, 2)
end

local function quoted(v)
  return type(v) == "string" and "'" .. v .. "'" or typename(v)
end

-- Shapes and layouts -----------------------------------------------------------------------

-- The first count lengths of shape, and more appended.
local function shape_of(shape, count, ...)
  local out = {table.unpack(shape, 1, count)}
  for _, n in ipairs{...} do out[#out + 1] = n end
  return out
end

local function product(list)
  local p = 1
  for _, n in ipairs(list) do p = p * n end
  return p
end

-- x with its last two axes swapped: a view.
local function transposed(x)
  local order = {}
  for d = 1, x.ndim do order[d] = d end
  order[x.ndim - 1], order[x.ndim] = x.ndim, x.ndim - 1
  return x:transpose(order)
end

-- The view of the main diagonals of the contiguous stack of n x n matrices x: (..., n).
local function diagonals(x, n)
  local shape, strides = x.shape, x.strides
  local nd = x.ndim
  shape[nd - 1], strides[nd - 1] = n, strides[nd - 1] + strides[nd]
  shape[nd], strides[nd] = nil, nil
  return core.array_view(x, 0, x.dtype, shape, strides)
end

-- A new contiguous copy of x as dtype: what cuSOLVER may overwrite.
local function fresh(x, dtype, stream)
  return x:astype(dtype, {stream = stream})
end

local function free_all(stream, ...)
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if t then core.free_after(t, stream) end
  end
end

-- Kernels ----------------------------------------------------------------------------------

local programs = {}   -- key -> program

local function program(key, spec)
  local p = programs[key]
  if p == nil then
    p = ew.program(spec)
    programs[key] = p
  end
  return p
end

-- A new contiguous stack of identity matrices of shape (..., n, n), on the stream.
local function identity(shape, dtype, stream)
  local t = operators.ctype(dtype)
  local p = program("identity " .. dtype, {
    name = "linalg_identity_" .. dtype, out = dtype,
    expr = ("lg_i %% n == lg_i / n %% n ? (%s)1 : (%s)0"):format(t, t),
    operands = {{name = "n", dtype = "int64", scalar = true}}})
  local out = core.array_empty(shape, dtype)
  if out.size > 0 then ew.launch(p, out, stream, "linalg", shape[#shape]) end
  return out
end

-- A new contiguous copy of x (a stack of matrices of any layout) as dtype, its lower (or
-- upper) triangle kept and the rest zero: one pass.
local function triangle(x, dtype, upper, stream)
  local t = operators.ctype(dtype)
  local side = upper and "upper" or "lower"
  local p = program(("triangle %s %s %s"):format(side, x.dtype, dtype), {
    name = ("linalg_%s_%s_%s"):format(side, x.dtype, dtype), out = dtype,
    expr = ("lg_i %% columns %s lg_i / columns %% rows ? (%s)(x) : (%s)0")
           :format(upper and ">=" or "<=", t, t),
    operands = {{name = "x", dtype = x.dtype}, {name = "rows", dtype = "int64", scalar = true},
                {name = "columns", dtype = "int64", scalar = true}}})
  local out = core.array_empty(x.shape, dtype)
  if out.size > 0 then ew.launch(p, out, stream, "linalg", x, x.shape[x.ndim - 1], x.shape[x.ndim]) end
  return out
end

-- The factors of the determinants from getrf's diagonals of U, pivots (..., n) and infos
-- (...): each diagonal element, negated where its row was swapped (pivot i is not i); for a
-- singular matrix (info > 0) 0 and then ones, as LAPACK's exact zero pivot gives, whatever
-- cuSOLVER leaves after that pivot.
local FIRST_OR_SINGULAR = "info > 0 ? (lg_i %% n == 0 ? (%s)0 : (%s)1)"

local function det_factors(diagonal, ipiv, infos, n, stream)
  local dtype = diagonal.dtype
  local t = operators.ctype(dtype)
  local p = program("det " .. dtype, {
    name = "linalg_det_" .. dtype, out = dtype,
    expr = FIRST_OR_SINGULAR:format(t, t) .. " : ipiv != lg_i % n + 1 ? -u : u",
    operands = {{name = "u", dtype = dtype}, {name = "ipiv", dtype = "int64"},
                {name = "info", dtype = "int32"}, {name = "n", dtype = "int64", scalar = true}}})
  return ew.launch(p, nil, stream, "det", diagonal, ipiv, infos, n)
end

-- The same for slogdet: the factors' signs (u / |u|, 0 for 0), and their logs of magnitudes
-- (log 0 = -inf).
local function slogdet_factors(diagonal, ipiv, infos, n, stream)
  local dtype = diagonal.dtype
  local real = REAL_OF[dtype]
  local t, r = operators.ctype(dtype), operators.ctype(real)
  local signs = program("sign " .. dtype, {
    name = "linalg_sign_" .. dtype, out = dtype,
    expr = FIRST_OR_SINGULAR:format(t, t) .. " : ipiv != lg_i % n + 1 ? -lg_sign(u) : lg_sign(u)",
    operands = {{name = "u", dtype = dtype}, {name = "ipiv", dtype = "int64"},
                {name = "info", dtype = "int32"}, {name = "n", dtype = "int64", scalar = true}}})
  local logs = program("logabs " .. dtype, {
    name = "linalg_logabs_" .. dtype, out = real,
    expr = ("%s(%s : lg_abs(u))"):format(real == "float32" and "logf" or "log",
                                         FIRST_OR_SINGULAR:format(r, r)),
    operands = {{name = "u", dtype = dtype}, {name = "info", dtype = "int32"},
                {name = "n", dtype = "int64", scalar = true}}})
  return ew.launch(signs, nil, stream, "slogdet", diagonal, ipiv, infos, n),
         ew.launch(logs, nil, stream, "slogdet", diagonal, infos, n)
end

-- Infos ------------------------------------------------------------------------------------

-- Raises "bad argument #1 to 'fname' (message)" where a matrix's info (the int32 array info,
-- written on the stream) is positive, after freeing the arrays that follow (the results);
-- frees info either way.  The one read back of a call.
local function check_info(info, stream, fname, message, ...)
  local failed = false
  if info.size > 0 then
    if stream then stream:synchronize() end
    local h = info:get()
    for i = 1, h.size do
      if h[i] > 0 then
        failed = true
        break
      end
    end
  end
  info:free()
  if failed then
    for i = 1, select("#", ...) do
      local result = select(i, ...)
      if result then result:free() end
    end
    argerror(1, fname, message)
  end
end

-- LU ---------------------------------------------------------------------------------------

-- getrf of a fresh copy of a as dtype (a^T as cuSOLVER reads it): lu, ipiv, info.
local function lu_of(a, dtype, batch_shape, n, stream)
  local lu = fresh(a, dtype, stream)
  local ipiv = core.array_empty(shape_of(batch_shape, #batch_shape, n), "int64")
  local info = core.array_empty(batch_shape, "int32")
  if lu.size > 0 then core.solver_getrf(lu, ipiv, info, stream) end
  return lu, ipiv, info
end

-- linalg.solve(a, b[, {stream =}]): x with a x = b, NumPy 2's: b is one right side (M,) when
-- 1-d, else a stack of matrices (..., M, K); the stacks of a and b broadcast.
function M.solve(a, b, opts)
  local n = check_matrices(a, 1, "solve", true)
  check_array(b, 2, "solve")
  opts = check_options(opts, 3, "solve", STREAM)
  if b.ndim == 0 then argerror(2, "solve", "array of at least 1 dimension expected, got 0") end
  local dtype = compute_dtype({a, b}, "solve")
  local stream = opts.stream
  local vector = b.ndim == 1
  local a_shape, b_shape = a.shape, b.shape
  local b_rows = vector and b_shape[1] or b_shape[b.ndim - 1]
  if b_rows ~= n then
    argerror(2, "solve", ("b has %d rows, a's matrices are %d x %d"):format(b_rows, n, n))
  end
  local k = vector and 1 or b_shape[b.ndim]
  local a_batch = shape_of(a_shape, a.ndim - 2)
  local b_batch = shape_of(b_shape, vector and 0 or b.ndim - 2)
  local batch = promote.broadcast_shapes({a_batch, b_batch})
  if batch == nil then
    argerror(2, "solve", ("the stacks of a %s and of b %s cannot be broadcast together")
                         :format(promote.shape_text(a_batch), promote.shape_text(b_batch)))
  end
  -- b's copy, each right side's n elements adjacent (cuSOLVER's column-major n x k)
  local rhs
  if vector then
    rhs = fresh(ga.broadcast_to(b, shape_of(batch, #batch, n)), dtype, stream)
  else
    rhs = fresh(transposed(ga.broadcast_to(b, shape_of(batch, #batch, n, k))), dtype, stream)
  end
  if rhs.size == 0 or n == 0 then
    if vector then return rhs end
    return transposed(rhs)
  end
  -- a single matrix solves every right side of the stack at once: they lie one after another
  local single = product(a_batch) == 1
  local factored = single and a or ga.broadcast_to(a, shape_of(batch, #batch, n, n))
  local lu, ipiv, info = lu_of(factored, dtype, single and {} or batch, n, stream)
  core.solver_getrs(lu, ipiv, rhs, "T", stream)   -- (a^T)^T x = b
  free_all(stream, lu, ipiv)
  check_info(info, stream, "solve", "Singular matrix", rhs)
  if vector then return rhs end
  return transposed(rhs)
end

-- linalg.inv(a[, {stream =}]): the inverses.
function M.inv(a, opts)
  local n = check_matrices(a, 1, "inv", true)
  opts = check_options(opts, 2, "inv", STREAM)
  local dtype = compute_dtype({a}, "inv")
  local stream = opts.stream
  if a.size == 0 then return core.array_empty(a.shape, dtype) end
  local lu, ipiv, info = lu_of(a, dtype, shape_of(a.shape, a.ndim - 2), n, stream)
  -- a^T X = I: X = inv(a)^T column-major, which is inv(a) row-major
  local x = identity(a.shape, dtype, stream)
  core.solver_getrs(lu, ipiv, x, "N", stream)
  free_all(stream, lu, ipiv)
  check_info(info, stream, "inv", "Singular matrix", x)
  return x
end

-- The LU of a for det and slogdet: U's diagonals, the pivots and the infos, each (..., n)
-- (infos read through a zero stride); nil for empty matrices.
local function determinant_lu(a, fname, opts)
  local n = check_matrices(a, 1, fname, true)
  opts = check_options(opts, 2, fname, STREAM)
  local dtype = compute_dtype({a}, fname)
  local batch = shape_of(a.shape, a.ndim - 2)
  if n == 0 or a.size == 0 then return nil, nil, nil, n, dtype, batch, opts.stream end
  local lu, ipiv, info = lu_of(a, dtype, batch, n, opts.stream)
  local strides = info.strides
  strides[#strides + 1] = 0
  local infos = core.array_view(info, 0, "int32", shape_of(batch, #batch, n), strides)
  return lu, ipiv, infos, n, dtype, batch, opts.stream
end

-- linalg.det(a[, {stream =}]): the determinants, from the LU of a^T (whose determinant is
-- a's): the product of U's diagonal, its sign changed by each row swap; 0 where singular.
function M.det(a, opts)
  local lu, ipiv, infos, n, dtype, batch, stream = determinant_lu(a, "det", opts)
  if lu == nil then return ga.full(batch, 1, dtype) end
  local factors = det_factors(diagonals(lu, n), ipiv, infos, n, stream)
  local det = ga.prod(factors, {axis = factors.ndim, stream = stream})
  free_all(stream, lu, ipiv, infos, factors)
  return det
end

-- linalg.slogdet(a[, {stream =}]) -> sign, logabsdet: det = sign * exp(logabsdet), without
-- overflow; a singular matrix's are 0 and -inf.  sign has a's dtype (a unit complex number
-- for complex ones), logabsdet the real one.
function M.slogdet(a, opts)
  local lu, ipiv, infos, n, dtype, batch, stream = determinant_lu(a, "slogdet", opts)
  if lu == nil then return ga.full(batch, 1, dtype), ga.zeros(batch, REAL_OF[dtype]) end
  local signs, logs = slogdet_factors(diagonals(lu, n), ipiv, infos, n, stream)
  local sign = ga.prod(signs, {axis = signs.ndim, stream = stream})
  local logabsdet = ga.sum(logs, {axis = logs.ndim, stream = stream})
  free_all(stream, lu, ipiv, infos, signs, logs)
  return sign, logabsdet
end

-- Cholesky ---------------------------------------------------------------------------------

-- linalg.cholesky(a[, {upper = false, stream =}]): L, lower, with a = L L^H, from a's lower
-- triangle only (NumPy 2's upper = true: U = L^H, upper, from a's upper triangle).
function M.cholesky(a, opts)
  local n = check_matrices(a, 1, "cholesky", true)
  opts = check_options(opts, 2, "cholesky", CHOLESKY)
  local upper = check_boolean(opts, "upper", false, 2, "cholesky")
  local dtype = compute_dtype({a}, "cholesky")
  local stream = opts.stream
  -- the triangle wanted, the other zero: cuSOLVER leaves that alone.  a's lower triangle is
  -- the upper one of the column-major a^T, whose U^H U gives back L = U^T row-major.
  local factor = triangle(a, dtype, upper, stream)
  if factor.size == 0 then return factor end
  local info = core.array_empty(shape_of(a.shape, a.ndim - 2), "int32")
  core.solver_potrf(factor, info, upper and "L" or "U", stream)
  check_info(info, stream, "cholesky", "Matrix is not positive definite", factor)
  return factor
end

-- QR ---------------------------------------------------------------------------------------

-- linalg.qr(a[, {mode = "reduced", stream =}]): a = q r with q's columns orthonormal and r
-- upper triangular, K = min(M, N): q (..., M, K) and r (..., K, N); "complete" q (..., M, M)
-- and r (..., M, N); "r" r alone (K x N); "raw" NumPy's h (..., N, M) and tau (..., K).
function M.qr(a, opts)
  local m, n = check_matrices(a, 1, "qr")
  opts = check_options(opts, 2, "qr", QR)
  local mode = opts.mode or "reduced"
  if not QR_MODES[mode] then
    argerror(2, "qr", "option 'mode' must be 'reduced', 'complete', 'r' or 'raw', got " .. quoted(mode))
  end
  local dtype = compute_dtype({a}, "qr")
  local stream = opts.stream
  local nb = a.ndim - 2
  local batch = shape_of(a.shape, nb)
  local k = math.min(m, n)
  -- geqrf factors a itself, so its copy is of a^T: (..., N, M) row-major, a column-major
  local h = fresh(transposed(a), dtype, stream)
  local tau = core.array_empty(shape_of(batch, nb, k), dtype)
  if k > 0 and h.size > 0 then
    local info = core.array_empty(batch, "int32")    -- only bad arguments set it
    core.solver_geqrf(h, tau, info, stream)
    core.free_after(info, stream)
  end
  if mode == "raw" then return h, tau end
  local r_rows = mode == "complete" and m or k
  local r = triangle(transposed(h):narrow(nb + 1, 1, r_rows), dtype, true, stream)
  if mode == "r" then
    free_all(stream, h, tau)
    return r
  end
  local q
  if k == 0 then                       -- no reflector: q is the identity (or has no column)
    q = mode == "complete" and identity(shape_of(batch, nb, m, m), dtype, stream)
        or core.array_empty(shape_of(batch, nb, m, 0), dtype)
    free_all(stream, h)
  elseif mode == "complete" and m > n then
    -- q's m columns need room beyond a's n: the reflectors first, the rest zero
    local room = core.array_empty(shape_of(batch, nb, m, m), dtype)
    h:astype(dtype, {out = room:narrow(nb + 1, 1, n), stream = stream})
    room:narrow(nb + 1, n + 1, m - n):fill(0, {stream = stream})
    core.solver_orgqr(room, tau, m, stream)
    free_all(stream, h)
    q = transposed(room)
  else
    core.solver_orgqr(h, tau, k, stream)
    q = transposed(h:narrow(nb + 1, 1, k))
  end
  core.free_after(tau, stream)
  return q, r
end

-- Eigenvalues ------------------------------------------------------------------------------

-- syevd of a's Hermitian matrices (eigenvectors too where vectors): w, and the copy that
-- holds the eigenvectors.
local function hermitian_eigen(a, opts, fname, vectors)
  local n = check_matrices(a, 1, fname, true)
  opts = check_options(opts, 2, fname, EIGH)
  local uplo = opts.UPLO or "L"
  if uplo ~= "L" and uplo ~= "U" then
    argerror(2, fname, "option 'UPLO' must be 'L' or 'U', got " .. quoted(uplo))
  end
  local dtype = compute_dtype({a}, fname)
  local stream = opts.stream
  local batch = shape_of(a.shape, a.ndim - 2)
  -- the copy holds conj(a), column-major a^H = a: cuSOLVER's eigenvectors are a's, as
  -- columns, and a's lower triangle is the upper one of a^H
  local copy
  if core.dtype(dtype).kind == "c" and a.dtype == dtype then copy = ga.conj(a, {stream = stream})
  else copy = fresh(a, dtype, stream) end
  local w = core.array_empty(shape_of(batch, #batch, n), REAL_OF[dtype])
  if copy.size > 0 then
    local info = core.array_empty(batch, "int32")
    core.solver_syevd(copy, w, info, vectors, uplo == "L" and "U" or "L", stream)
    check_info(info, stream, fname, "Eigenvalues did not converge", w, copy)
  end
  return w, copy
end

-- linalg.eigh(a[, {UPLO = "L", stream =}]) -> w, v: the eigenvalues, ascending (the real
-- dtype), and the orthonormal eigenvectors, v's columns, of the Hermitian (real: symmetric)
-- matrices whose lower (UPLO "U": upper) triangle a holds; a v = v diag(w).
function M.eigh(a, opts)
  local w, copy = hermitian_eigen(a, opts, "eigh", true)
  return w, transposed(copy)
end

-- linalg.eigvalsh(a[, {UPLO = "L", stream =}]): eigh's eigenvalues alone.
function M.eigvalsh(a, opts)
  local w, copy = hermitian_eigen(a, opts, "eigvalsh", false)
  core.free_after(copy, opts and opts.stream)
  return w
end

-- Singular values --------------------------------------------------------------------------

-- The singular values of a's matrices (K = min(M, N) each, descending) and, with uv,
-- u and vh (full: square; else K columns and rows).
local function singular(a, uv, full, stream, fname)
  local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
  local nb = a.ndim - 2
  local batch = shape_of(a.shape, nb)
  local k = math.min(m, n)
  local dtype = compute_dtype({a}, fname)
  local s = core.array_empty(shape_of(batch, nb, k), REAL_OF[dtype])
  if k == 0 or s.size == 0 then        -- nothing to factor: identities where full
    if not uv then return s end
    if full then return identity(shape_of(batch, nb, m, m), dtype, stream), s,
                        identity(shape_of(batch, nb, n, n), dtype, stream) end
    return core.array_empty(shape_of(batch, nb, m, k), dtype), s,
           core.array_empty(shape_of(batch, nb, k, n), dtype)
  end
  local job = not uv and "N" or full and "A" or "S"
  local info = core.array_empty(batch, "int32")
  local u, vh
  if n >= m then
    -- a^T is tall (N x M column-major): a^T = U' S V'^H, so a = conj(V') S U'^T, and
    -- cuSOLVER's V'^H and U' read row-major are a's u and vh
    local copy = fresh(a, dtype, stream)
    if uv then
      u = core.array_empty(shape_of(batch, nb, m, m), dtype)
      vh = core.array_empty(shape_of(batch, nb, full and n or m, n), dtype)
    end
    core.solver_gesvd(copy, s, vh, u, info, job, job, stream)
    core.free_after(copy, stream)
  else
    -- a tall: its copy as a column-major, whose U and V^H read row-major are transposed
    local copy = fresh(transposed(a), dtype, stream)
    local u_t, vh_t
    if uv then
      u_t = core.array_empty(shape_of(batch, nb, full and m or n, m), dtype)
      vh_t = core.array_empty(shape_of(batch, nb, n, n), dtype)
    end
    core.solver_gesvd(copy, s, u_t, vh_t, info, job, job, stream)
    core.free_after(copy, stream)
    if uv then u, vh = transposed(u_t), transposed(vh_t) end
  end
  check_info(info, stream, fname, "SVD did not converge", s, u, vh)
  if uv then return u, s, vh end
  return s
end

-- linalg.svd(a[, {full_matrices = true, compute_uv = true, stream =}]) -> u, s, vh: a =
-- u diag(s) vh, s the singular values descending (the real dtype), u's columns and vh's rows
-- orthonormal: u (..., M, M) and vh (..., N, N), or with full_matrices false (..., M, K) and
-- (..., K, N); s alone with compute_uv false.
function M.svd(a, opts)
  check_matrices(a, 1, "svd")
  opts = check_options(opts, 2, "svd", SVD)
  local full = check_boolean(opts, "full_matrices", true, 2, "svd")
  local uv = check_boolean(opts, "compute_uv", true, 2, "svd")
  return singular(a, uv, full, opts.stream, "svd")
end

-- linalg.matrix_rank(a[, {tol =, rtol =, stream =}]): the count of each matrix's singular
-- values above tol, or above rtol (default max(M, N) * eps of the dtype) times the largest,
-- as NumPy's: int64, 0-d for one matrix.  Of a vector or a 0-d array, 1 unless all zero.
function M.matrix_rank(a, opts)
  check_array(a, 1, "matrix_rank")
  opts = check_options(opts, 2, "matrix_rank", RANK)
  local stream = opts.stream
  for _, key in ipairs{"tol", "rtol"} do args.typed_option(opts, key, "number", 2, "matrix_rank") end
  if opts.tol ~= nil and opts.rtol ~= nil then
    argerror(2, "matrix_rank", "options 'tol' and 'rtol' cannot be given together")
  end
  local on_stream = {stream = stream}
  if a.ndim < 2 then
    local nonzero = ga.ne(a, 0, on_stream)
    local any = a.ndim == 1 and ga.any(nonzero, {axis = 1, stream = stream}) or nonzero
    local rank = any:astype("int64", on_stream)
    free_all(stream, nonzero, any ~= nonzero and any)
    return rank
  end
  local s = singular(a, false, false, stream, "matrix_rank")
  local nd = s.ndim
  if s.shape[nd] == 0 then                -- no singular value: rank 0 (NumPy's max fails)
    s:free()
    return ga.zeros(shape_of(a.shape, a.ndim - 2), "int64")
  end
  local limit = opts.tol
  local largest
  if limit == nil then
    local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
    local rtol = opts.rtol or math.max(m, n) * EPSILON[s.dtype]
    largest = ga.max(s, {axis = nd, stream = stream})
    limit = ga.mul(largest:reshape(shape_of(s.shape, nd - 1, 1)), rtol, on_stream)
  end
  local above = ga.gt(s, limit, on_stream)
  local rank = ga.sum(above, {axis = nd, stream = stream})
  free_all(stream, s, above, largest, largest and limit)
  return rank
end

function M.install(gpu)
  ga = gpu.gpuarray
  -- added to, never replaced: other modules (linalg.norm) put their functions in it too
  local linalg = ga.linalg or gpu.linalg or {}
  for name, f in pairs(M) do
    if name ~= "install" then linalg[name] = f end
  end
  ga.linalg, gpu.linalg = linalg, linalg
end

return M
