-- gpu.linalg (also gpuarray.linalg): NumPy's numpy.linalg factorizations and solvers on
-- cuSOLVER (src/solver.c).
--
--   solve(a, b[, opts]) -> x          a x = b; b a vector (M,) or a stack of matrices (..., M, K)
--   inv(a[, opts]) -> the inverses
--   det(a[, opts]) -> the determinants; slogdet(a[, opts]) -> sign, logabsdet
--   cholesky(a[, {upper = false}]) -> L, lower, with a = L L^H (or U, upper, with a = U^H U)
--   qr(a[, {mode = "reduced"}]) -> q, r; mode "complete" (q square), "r" (r alone) or "raw"
--                                  (h, tau: LAPACK's Householder form, as NumPy's)
--   eig(a) -> w, v (general matrices, always complex; eigenvalues in no order); eigvals(a) -> w
--   eigh(a[, {UPLO = "L"}]) -> w, v (eigenvalues ascending, eigenvectors the columns of v);
--   eigvalsh(a[, opts]) -> w
--   svd(a[, {full_matrices = true, compute_uv = true}]) -> u, s, vh (s alone without uv)
--   matrix_rank(a[, {tol =, rtol =}]) -> the singular values above tol, as an int64 array
--   pinv(a[, {rcond =, hermitian = false}]) -> the pseudo-inverses, from svd (eigh if hermitian)
--   lstsq(a, b[, {rcond =}]) -> x, residuals, rank, s: least squares of one matrix, by the SVD
--   matrix_power(a, n) -> a^n by repeated squaring (n < 0: of inv(a))
--   multi_dot(arrays) -> their product, in the order of fewest multiplications
--   cond(x[, {p =}]) -> condition numbers: from svd (p nil, 2, -2, "nuc"), or norm(x) norm(inv(x))
--   tensorinv(a[, {ind = 2}]), tensorsolve(a, b[, {axes =}]) -> inv and solve of reshaped tensors
--
-- Every function takes {stream = s}, and all but lstsq, multi_dot and the tensor ones a stack
-- of matrices (..., M, N), each matrix on its own, with NumPy 2's broadcasting of stacks in
-- solve.  As NumPy: float32 and complex64 compute in single precision; float64, complex128,
-- integers and bools in double (a float64 or complex128 result; matrix_power's n >= 0 and
-- multi_dot keep matmul's dtypes); float16 and bfloat16 are refused.  A function of one
-- matrix gives 0-d arrays where NumPy gives scalars (det, slogdet, matrix_rank, cond, and
-- multi_dot of two vectors at its ends); lstsq's rank is a Lua integer; several results come
-- back as several values.  NumPy's LinAlgError is a Lua error naming the function: a singular
-- matrix in solve, inv and matrix_power (n < 0), one not positive definite in cholesky, eigh
-- and svd that do not converge; to know, these read each matrix's info back (the one
-- synchronization they make; lstsq's is the read of s for the rank).  cond gives inf for a
-- singular matrix, as NumPy's does.
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
--
-- Stacks of small matrices (2 or more of at most BATCHED_MAX rows) take one batched call for
-- the whole stack rather than one call a matrix: cuBLAS's getrfBatched, getrsBatched and
-- getriBatched (32-bit pivots) for solve, inv, det and slogdet, where cuBLAS is there and on
-- (gpu.use_cublas(false) turns it off: the loop then), cuSOLVER's potrfBatched for cholesky,
-- syevjBatched (Jacobi's method) for eigh and eigvalsh, and gesvdjBatched (Jacobi's too; M and
-- N both at most BATCHED_MAX) for svd and what rests on it (matrix_rank, pinv, cond).  Real
-- stacks of at most M.small_rows rows take kernels of their own for solve, inv, det, slogdet,
-- cholesky, eigh and eigvalsh (batched.cu's gpu_small_solve, gpu_small_det,
-- gpu_small_cholesky, gpu_small_eigh), with or without cuBLAS.

local core = require "gpu.core"
local kernel_cache = require "gpu.kernel_cache"
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

-- The most rows of the matrices of a stack that go to the batched routines.  The loop makes
-- a few launches a matrix, nearly all of its time for a small one; the batched routines a few
-- for the whole stack.  cuBLAS meant its batched LU for small matrices, where launching
-- dominates, and syevjBatched takes 32 rows at most; past that a matrix has work enough for
-- the loop's routines, made for big ones, so that one limit serves all (not measured at the
-- edge: 32 is the bound the Jacobi routine sets).  A stack of one gains nothing: the loop's.
local BATCHED_MAX = 32

-- Stacks of float32 or float64 matrices of at most this many rows are solved and inverted by
-- batched.cu's gpu_small_solve (a thread a right side), their determinants taken by
-- gpu_small_det, factored by gpu_small_cholesky and diagonalized by gpu_small_eigh (a thread
-- a matrix): one launch, against cuBLAS's and cuSOLVER's batched routines with their copies
-- and arrays of infos (10000 4 x 4 solves on the H200: 0.12 ms by cuBLAS, CuPy 0.11-0.21).
-- A field, so that the specs can set it to 0 and reach those routines.
M.small_rows = 8

-- How often each batched routine ran (for the specs, which check that a stack took it);
-- small counts the launches of batched.cu's small kernels.
M.batched_calls = {getrf = 0, potrf = 0, syevj = 0, gesvdj = 0, small = 0}
M.syevj_chunk = 1 << 24     -- the most elements of a stack one syevjBatched or gesvdjBatched takes

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

local quoted = args.quoted

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

-- f(pieces of arrays...) for the count matrices of the contiguous stacks in arrays (their
-- last tails[i] axes a matrix's), at most syevj_chunk // elements matrices a call: syevjBatched
-- and gesvdjBatched count their work areas in an int of elements, which grows with the stack
-- (at 32 x 32, past 2^31 from about two million matrices).
local function in_pieces(count, elements, arrays, tails, f)
  local per = math.max(1, M.syevj_chunk // elements)
  if count <= per then return f(table.unpack(arrays)) end
  local flat = {}
  for i, x in ipairs(arrays) do
    local shape = {count}
    for d = x.ndim - tails[i] + 1, x.ndim do shape[#shape + 1] = x.shape[d] end
    flat[i] = x:reshape(shape)
  end
  for first = 1, count, per do
    local pieces = {}
    for i, x in ipairs(flat) do pieces[i] = x:narrow(1, first, math.min(per, count - first + 1)) end
    f(table.unpack(pieces))
  end
end

-- Whether a stack of shape batch_shape of n x n matrices goes to the batched routines.
local function batched(n, batch_shape)
  return n >= 1 and n <= BATCHED_MAX and product(batch_shape) >= 2
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

local free_all = core.free_all_after     -- the temporaries among its arguments, after the stream

-- Kernels ----------------------------------------------------------------------------------

local program = ew.keyed_programs()   -- ew.program(spec) made once a key

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
-- upper) triangle kept and the rest zero: one pass (into out where given: x itself, in place).
local function triangle(x, dtype, upper, stream, out)
  local t = operators.ctype(dtype)
  local side = upper and "upper" or "lower"
  local p = program(("triangle %s %s %s"):format(side, x.dtype, dtype), {
    name = ("linalg_%s_%s_%s"):format(side, x.dtype, dtype), out = dtype,
    expr = ("lg_i %% columns %s lg_i / columns %% rows ? (%s)(x) : (%s)0")
           :format(upper and ">=" or "<=", t, t),
    operands = {{name = "x", dtype = x.dtype}, {name = "rows", dtype = "int64", scalar = true},
                {name = "columns", dtype = "int64", scalar = true}}})
  out = out or core.array_empty(x.shape, dtype)
  if out.size > 0 then ew.launch(p, out, stream, "linalg", x, x.shape[x.ndim - 1], x.shape[x.ndim]) end
  return out
end

-- The factors of the determinants from getrf's diagonals of U, pivots (..., n) and infos
-- (...): for a singular matrix (info > 0) 0 and then ones, as LAPACK's exact zero pivot gives,
-- whatever cuSOLVER leaves after that pivot.
local FIRST_OR_SINGULAR = "info > 0 ? (lg_i %% n == 0 ? (%s)0 : (%s)1)"

-- For slogdet: the factors' signs, negated for each row swap (a real one -1 where it is
-- negative, else 1, NaN included, as NumPy's; a complex one u / |u|), and their logs of
-- magnitudes (log 0 = -inf).
local function slogdet_factors(diagonal, ipiv, infos, n, stream)
  local dtype = diagonal.dtype
  local real = REAL_OF[dtype]
  local t, r = operators.ctype(dtype), operators.ctype(real)
  local pivots = ipiv.dtype
  local sign = real == dtype and ("(u < (%s)0 ? (%s)-1 : (%s)1)"):format(t, t, t) or "lg_sign(u)"
  local signs = program(("sign %s %s"):format(dtype, pivots), {
    name = ("linalg_sign_%s_%s"):format(dtype, pivots), out = dtype,
    expr = FIRST_OR_SINGULAR:format(t, t) .. (" : ipiv != lg_i %% n + 1 ? -%s : %s"):format(sign, sign),
    operands = {{name = "u", dtype = dtype}, {name = "ipiv", dtype = pivots},
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

-- det = sign * exp(logabsdet), as NumPy and CuPy compute it: a running product of U's
-- diagonal can overflow or vanish where the determinant itself does not.
local function det_from_slogdet(sign, logabsdet, stream)
  local dtype = sign.dtype
  local real = REAL_OF[dtype]
  local e = real == "float32" and "expf(l)" or "exp(l)"
  local p = program("det " .. dtype, {
    name = "linalg_det_" .. dtype, out = dtype,
    expr = real == dtype and ("s * " .. e) or ("s * %s(%s, 0)"):format(operators.ctype(dtype), e),
    operands = {{name = "s", dtype = dtype}, {name = "l", dtype = real}}})
  return ew.launch(p, nil, stream, "det", sign, logabsdet)
end

-- Infos ------------------------------------------------------------------------------------

-- Raises "bad argument #1 to 'fname' (message)" where a matrix's info (the int32 array info,
-- written on the stream) is positive, after freeing the arrays that follow (the results);
-- frees info either way.  The one read back of a call.  Its bytes are compared with zeros
-- (a memcmp) before any info is read into Lua: reading 10000 of them one by one took a
-- millisecond, and so did string.find's pattern over their bytes (and string.rep byte by byte
-- 150 us, hence the blocks).
local ZERO_BLOCK = ("\0"):rep(256)
local function all_zero(bytes)
  return bytes == ZERO_BLOCK:rep(#bytes // 256) .. ("\0"):rep(#bytes % 256)
end

local function check_info(info, stream, fname, message, ...)
  local failed = false
  if info.size > 0 then
    if stream then stream:synchronize() end
    local h = info:get()
    if not all_zero(h:bytes()) then
      for i = 1, h.size do
        if h[i] > 0 then
          failed = true
          break
        end
      end
    end
    h:free()
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

-- batched.cu's gpu_matrix_addresses, which src/solver.c launches to write the arrays of the
-- matrices' addresses that the batched routines take.
local function addresses()
  return kernel_cache.get("linalg|addresses", function()
    return core.kernel_sources["batched.cu"], "gpu_matrix_addresses", nil,
           {no_extern_c = true, name = "batched.cu"}
  end)
end

-- getrf of a fresh copy of a as dtype (a^T as cuSOLVER reads it): lu, ipiv, info.  A stack
-- of small matrices in one getrfBatched where cuBLAS takes it: int32 pivots then (lu_solve
-- and inverse follow their dtype), else cuSOLVER's loop and int64 pivots.
local function lu_of(a, dtype, batch_shape, n, stream)
  local lu = fresh(a, dtype, stream)
  local info = core.array_empty(batch_shape, "int32")
  local pivots_shape = shape_of(batch_shape, #batch_shape, n)
  if lu.size > 0 and batched(n, batch_shape) then
    local ipiv = core.array_empty(pivots_shape, "int32")
    if core.solver_getrf_batched(lu, ipiv, info, stream, addresses()) then
      M.batched_calls.getrf = M.batched_calls.getrf + 1
      return lu, ipiv, info
    end
    ipiv:free()
  end
  local ipiv = core.array_empty(pivots_shape, "int64")
  if lu.size > 0 then core.solver_getrf(lu, ipiv, info, stream) end
  return lu, ipiv, info
end

-- Small stacks (see M.small_rows) -----------------------------------------------------------

local SMALL_SUFFIXES = {float32 = "f32", float64 = "f64"}

-- Whether `count` n x n matrices of dtype take batched.cu's small kernels.
local function small_stack(n, count, dtype)
  return SMALL_SUFFIXES[dtype] ~= nil and n >= 1 and n <= M.small_rows and count >= 2
end

-- batched.cu's kernel `name` for dtype (gpu_small_solve, _det, _cholesky, _eigh), and the
-- grid for `threads` threads of 128 a block.
local function small_kernel(name, dtype, threads)
  local full = name .. "_" .. SMALL_SUFFIXES[dtype]
  local kernel = kernel_cache.get("linalg|" .. full, function()
    return core.kernel_sources["batched.cu"], full, nil, {no_extern_c = true, name = "batched.cu"}
  end)
  M.batched_calls.small = M.batched_calls.small + 1
  return kernel, reduction.grid_stride_blocks(threads, 128)
end

-- small_kernel's, and the array of its blocks' flags (singular, indefinite, unconverged).
local function small_flagged_kernel(name, dtype, threads)
  local kernel, grid = small_kernel(name, dtype, threads)
  return kernel, grid, core.array_empty({grid}, "int32")
end

-- An operand of gpu_small_solve: x (matrices of `size` elements, broadcast to shape) as a
-- contiguous array of dtype, the step between its matrices (0: one serves the whole stack),
-- and whether that array is a copy.
local function small_operand(x, shape, size, dtype, stream)
  local step = x.size == size and 0 or size
  if step ~= 0 and x.size ~= product(shape) then x = ga.broadcast_to(x, shape) end
  if x.dtype == dtype and x.is_contiguous then return x, step, false end
  return fresh(x, dtype, stream), step, true
end

-- x of shape with a x = b for each of the count matrices of a (n x n) and b (n x k; nil:
-- the identity's columns, so that x is the inverse), and a flag a block of the kernel's,
-- nonzero where a matrix was singular (which check_info reads as it reads infos).
local function small_solve(a, a_step, b, b_step, count, n, k, shape, dtype, stream)
  local kernel, grid, singular = small_flagged_kernel("gpu_small_solve", dtype, count * k)
  local x = core.array_empty(shape, dtype)
  kernel(x, singular, a, a_step, b, b_step, count, n, k, {block = 128, grid = grid, stream = stream})
  return x, singular
end

-- op(A) X = B in place of b for lu_of's factors: getrs, batched with 32-bit pivots.
local function lu_solve(lu, ipiv, b, trans, stream)
  if ipiv.dtype == "int32" then core.solver_getrs_batched(lu, ipiv, b, trans, stream, addresses())
  else core.solver_getrs(lu, ipiv, b, trans, stream) end
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
  if small_stack(n, product(batch), dtype) and k >= 1 then
    local shape = vector and shape_of(batch, #batch, n) or shape_of(batch, #batch, n, k)
    local aa, a_step, a_copy = small_operand(a, shape_of(batch, #batch, n, n), n * n, dtype, stream)
    local bb, b_step, b_copy = small_operand(b, shape, n * k, dtype, stream)
    local x, info = small_solve(aa, a_step, bb, b_step, product(batch), n, k, shape, dtype, stream)
    free_all(stream, a_copy and aa, b_copy and bb)
    check_info(info, stream, "solve", "Singular matrix", x)
    return x
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
  lu_solve(lu, ipiv, rhs, "T", stream)   -- (a^T)^T x = b
  free_all(stream, lu, ipiv)
  check_info(info, stream, "solve", "Singular matrix", rhs)
  if vector then return rhs end
  return transposed(rhs)
end

-- The inverses of a's (nonempty) n x n matrices as dtype, and getrf's infos (> 0: singular,
-- where the inverse holds whatever the division by a zero pivot gave).
local function inverse(a, n, dtype, stream)
  local lu, ipiv, info = lu_of(a, dtype, shape_of(a.shape, a.ndim - 2), n, stream)
  -- a^T X = I: X = inv(a)^T column-major, which is inv(a) row-major; batched, getri's
  -- inverse of a^T, the same (out of place, no identity to make)
  local x
  if ipiv.dtype == "int32" then
    x = core.array_empty(a.shape, dtype)
    core.solver_getri_batched(lu, ipiv, x, stream, addresses())
  else
    x = identity(a.shape, dtype, stream)
    core.solver_getrs(lu, ipiv, x, "N", stream)
  end
  free_all(stream, lu, ipiv)
  return x, info
end

-- linalg.inv(a[, {stream =}]): the inverses.
function M.inv(a, opts)
  local n = check_matrices(a, 1, "inv", true)
  opts = check_options(opts, 2, "inv", STREAM)
  local dtype = compute_dtype({a}, "inv")
  local stream = opts.stream
  if a.size == 0 then return core.array_empty(a.shape, dtype) end
  local x, info
  local count = product(shape_of(a.shape, a.ndim - 2))
  if small_stack(n, count, dtype) then
    local aa, _, copy = small_operand(a, a.shape, n * n, dtype, stream)
    x, info = small_solve(aa, n * n, nil, 0, count, n, n, a.shape, dtype, stream)
    free_all(stream, copy and aa)
  else
    x, info = inverse(a, n, dtype, stream)
  end
  check_info(info, stream, "inv", "Singular matrix", x)
  return x
end

-- det's and slogdet's arguments (fname's): n, the compute dtype, the stack's shape, the stream.
local function check_determinant(a, fname, opts)
  local n = check_matrices(a, 1, fname, true)
  opts = check_options(opts, 2, fname, STREAM)
  return n, compute_dtype({a}, fname), shape_of(a.shape, a.ndim - 2), opts.stream
end

-- The LU of a's (nonempty) matrices for det and slogdet: U's diagonals, the pivots and the
-- infos, each (..., n) (infos read through a zero stride).
local function determinant_lu(a, n, dtype, batch, stream)
  local lu, ipiv, info = lu_of(a, dtype, batch, n, stream)
  local strides = info.strides
  strides[#strides + 1] = 0
  local infos = core.array_view(info, 0, "int32", shape_of(batch, #batch, n), strides)
  return diagonals(lu, n), lu, ipiv, infos
end

-- det (logarithm false) or slogdet of a small stack in gpu_small_det: one launch, no copy
-- where a is contiguous.
local function small_determinants(a, n, dtype, batch, logarithm, stream)
  local count = product(batch)
  local aa, _, copy = small_operand(a, a.shape, n * n, dtype, stream)
  local kernel, grid = small_kernel("gpu_small_det", dtype, count)
  local launch = {block = 128, grid = grid, stream = stream}
  local det, sign, logabsdet
  if logarithm then
    sign, logabsdet = core.array_empty(batch, dtype), core.array_empty(batch, dtype)
    kernel(nil, sign, logabsdet, aa, count, n, launch)
  else
    det = core.array_empty(batch, dtype)
    kernel(det, nil, nil, aa, count, n, launch)
  end
  free_all(stream, copy and aa)
  if logarithm then return sign, logabsdet end
  return det
end

-- slogdet of a's (nonempty) matrices, from the LU of a^T (whose determinant is a's): the
-- product of the factors' signs and the sum of their logs.
local function lu_slogdet(a, n, dtype, batch, stream)
  local diagonal, lu, ipiv, infos = determinant_lu(a, n, dtype, batch, stream)
  local signs, logs = slogdet_factors(diagonal, ipiv, infos, n, stream)
  local sign = ga.prod(signs, {axis = signs.ndim, stream = stream})
  local logabsdet = ga.sum(logs, {axis = logs.ndim, stream = stream})
  free_all(stream, lu, ipiv, infos, signs, logs)
  return sign, logabsdet
end

-- linalg.det(a[, {stream =}]): the determinants, sign * exp(logabsdet) of slogdet's, as
-- NumPy's; 0 where singular.
function M.det(a, opts)
  local n, dtype, batch, stream = check_determinant(a, "det", opts)
  if n == 0 or a.size == 0 then return ga.full(batch, 1, dtype) end
  if small_stack(n, product(batch), dtype) then
    return small_determinants(a, n, dtype, batch, false, stream)
  end
  local sign, logabsdet = lu_slogdet(a, n, dtype, batch, stream)
  local det = det_from_slogdet(sign, logabsdet, stream)
  free_all(stream, sign, logabsdet)
  return det
end

-- linalg.slogdet(a[, {stream =}]) -> sign, logabsdet: det = sign * exp(logabsdet), without
-- overflow; a singular matrix's are 0 and -inf.  sign has a's dtype (a unit complex number
-- for complex ones; for a real one with a NaN, +-1, as NumPy's), logabsdet the real one.
function M.slogdet(a, opts)
  local n, dtype, batch, stream = check_determinant(a, "slogdet", opts)
  if n == 0 or a.size == 0 then return ga.full(batch, 1, dtype), ga.zeros(batch, REAL_OF[dtype]) end
  if small_stack(n, product(batch), dtype) then
    return small_determinants(a, n, dtype, batch, true, stream)
  end
  return lu_slogdet(a, n, dtype, batch, stream)
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
  local batch = shape_of(a.shape, a.ndim - 2)
  local factor, info
  if a.size > 0 and small_stack(n, product(batch), dtype) then
    local count = product(batch)
    local aa, _, copy = small_operand(a, a.shape, n * n, dtype, stream)
    local kernel, grid
    kernel, grid, info = small_flagged_kernel("gpu_small_cholesky", dtype, count)
    factor = core.array_empty(a.shape, dtype)
    kernel(factor, info, aa, count, n, upper and 1 or 0, {block = 128, grid = grid, stream = stream})
    free_all(stream, copy and aa)
  elseif a.size > 0 and batched(n, batch) then
    -- potrfBatched works in the column-major lower triangle: given the upper one it converts
    -- the stack there and back (two passes, 0.1 ms of 10000 4 x 4).  That lower triangle is
    -- the upper one of the row-major copy, so the copy is of a^T for L, whose factor then
    -- comes as L^T; for U, of a, whose factor comes as U.  The kernels zero what potrfBatched
    -- leaves in the other triangle.
    local copy = triangle(upper and a or transposed(a), dtype, true, stream)
    info = core.array_empty(batch, "int32")
    core.solver_potrf_batched(copy, info, "L", stream, addresses())
    M.batched_calls.potrf = M.batched_calls.potrf + 1
    if upper then
      factor = triangle(copy, dtype, true, stream, copy)
    else
      factor = triangle(transposed(copy), dtype, false, stream)
      core.free_after(copy, stream)
    end
  else
    -- the triangle wanted, the other zero: cuSOLVER leaves that alone.  a's lower triangle is
    -- the upper one of the column-major a^T, whose U^H U gives back L = U^T row-major.
    factor = triangle(a, dtype, upper, stream)
    if factor.size == 0 then return factor end
    info = core.array_empty(batch, "int32")
    core.solver_potrf(factor, info, upper and "L" or "U", stream)
  end
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

-- syevd of the n x n Hermitian matrices of a as dtype from their lower (uplo "L") or upper
-- triangle, eigenvectors too where vectors: w, and the copy that holds the eigenvectors.
local function eigen_of(a, n, uplo, dtype, stream, fname, vectors)
  local batch = shape_of(a.shape, a.ndim - 2)
  -- the copy holds conj(a), column-major a^H = a: cuSOLVER's eigenvectors are a's, as
  -- columns, and a's lower triangle is the upper one of a^H
  local copy
  if core.dtype(dtype).kind == "c" and a.dtype == dtype then copy = ga.conj(a, {stream = stream})
  else copy = fresh(a, dtype, stream) end
  local w = core.array_empty(shape_of(batch, #batch, n), REAL_OF[dtype])
  if copy.size > 0 then
    local info
    if small_stack(n, product(batch), dtype) then
      local kernel, grid
      kernel, grid, info = small_flagged_kernel("gpu_small_eigh", dtype, product(batch))
      kernel(copy, w, info, product(batch), n, uplo == "U" and 1 or 0, vectors and 1 or 0,
             {block = 128, grid = grid, stream = stream})
    elseif batched(n, batch) then
      info = core.array_empty(batch, "int32")
      in_pieces(product(batch), n * n, {copy, w, info}, {2, 1, 0}, function(part, values, infos)
        core.solver_syevj_batched(part, values, infos, vectors, uplo == "L" and "U" or "L", stream)
        M.batched_calls.syevj = M.batched_calls.syevj + 1
      end)
    else
      info = core.array_empty(batch, "int32")
      core.solver_syevd(copy, w, info, vectors, uplo == "L" and "U" or "L", stream)
    end
    check_info(info, stream, fname, "Eigenvalues did not converge", w, copy)
  end
  return w, copy
end

-- eigen_of for eigh and eigvalsh (fname), their arguments checked.
local function hermitian_eigen(a, opts, fname, vectors)
  local n = check_matrices(a, 1, fname, true)
  opts = check_options(opts, 2, fname, EIGH)
  local uplo = opts.UPLO or "L"
  if uplo ~= "L" and uplo ~= "U" then
    argerror(2, fname, "option 'UPLO' must be 'L' or 'U', got " .. quoted(uplo))
  end
  return eigen_of(a, n, uplo, compute_dtype({a}, fname), opts.stream, fname, vectors)
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

-- General eigenvalues ----------------------------------------------------------------------

local COMPLEX_OF = {float32 = "complex64", float64 = "complex128", complex64 = "complex64",
                    complex128 = "complex128"}

-- A contiguous stack of shape (..., n, n) and dtype for geev's packed eigenvectors, with the
-- views of it one row (n elements) before and one after: it lies a row into a buffer with a
-- spare row on either side, so that all three stay inside the buffer.  -> buffer, stack,
-- before, after.
local function padded_stack(shape, n, dtype)
  local buffer = core.array_empty({product(shape) + 2 * n}, dtype)
  local function rows_in(rows) return core.array_view(buffer, rows * n * buffer.itemsize, dtype, shape) end
  return buffer, rows_in(1), rows_in(0), rows_in(2)
end

-- The complex eigenvectors of real matrices from geev's packed ones, in one pass: row j of
-- packed (the column-major VR's column j) is v_j where w_j is real; a complex pair, w_j with
-- imag > 0 first (LAPACK's order) and w_j+1 = conj(w_j), has v_j = VR(:, j) + i VR(:, j+1)
-- and v_j+1 = conj(v_j), i.e. row j with the row after and row j+1 with the row before.
local function unpacked_vectors(packed, before, after, w, stream)
  local dtype, out = packed.dtype, w.dtype
  local t = operators.ctype(out)
  local p = program("unpack eigenvectors " .. dtype, {
    name = "linalg_unpack_eigenvectors_" .. dtype, out = out,
    expr = ("w.im > 0 ? %s(x, after) : w.im < 0 ? %s(before, -x) : %s(x, (%s)0)")
           :format(t, t, t, operators.ctype(dtype)),
    operands = {{name = "x", dtype = dtype}, {name = "before", dtype = dtype},
                {name = "after", dtype = dtype}, {name = "w", dtype = out}}})
  local shape = packed.shape
  shape[#shape] = 1      -- w_j for each element of row j
  return ew.launch(p, nil, stream, "eig", packed, before, after, core.array_view(w, 0, out, shape))
end

-- geev of a's square matrices (fname's argument 1, opts its 2): w and, where vectors, v,
-- always complex.  Real matrices (integers as float64) stay real in geev, as CuPy's do (in
-- complex, 1024 x 1024 float64 took 375 ms against CuPy's 272), their packed eigenvectors
-- unpacked after.
local function general_eigen(a, opts, fname, vectors)
  local n = check_matrices(a, 1, fname, true)
  opts = check_options(opts, 2, fname, STREAM)
  local dtype = compute_dtype({a}, fname)
  local out = COMPLEX_OF[dtype]
  local stream = opts.stream
  local batch = shape_of(a.shape, a.ndim - 2)
  -- geev reads a column-major a: the row-major copy of a^T
  local copy = fresh(transposed(a), dtype, stream)
  local w = core.array_empty(shape_of(batch, #batch, n), out)
  local v, buffer, packed, before, after
  if vectors and dtype ~= out and copy.size > 0 then
    buffer, packed, before, after = padded_stack(a.shape, n, dtype)
  elseif vectors then
    v = core.array_empty(a.shape, out)
  end
  if copy.size > 0 then
    local info = core.array_empty(batch, "int32")
    core.solver_geev(copy, w, packed or v, info, stream)
    core.free_after(copy, stream)
    if packed then
      v = unpacked_vectors(packed, before, after, w, stream)
      core.free_after(buffer, stream)
    end
    check_info(info, stream, fname, "Eigenvalues did not converge", w, v)
  end
  if vectors then return w, transposed(v) end   -- v's columns, column-major
  return w
end

-- linalg.eig(a[, {stream =}]) -> w, v: the eigenvalues of a's general square matrices, in no
-- particular order, and the right eigenvectors, v's columns (each of norm 1, its largest
-- component real), a v = v diag(w).  Always complex (complex64 for float32 and complex64,
-- else complex128), as CuPy's: NumPy gives real arrays where all eigenvalues of a real a are
-- real.  cuSOLVER's geev, of cuSOLVER 11.6 (CUDA 12.6) on; an error naming it before.
function M.eig(a, opts)
  return general_eigen(a, opts, "eig", true)
end

-- linalg.eigvals(a[, {stream =}]): eig's eigenvalues alone.
function M.eigvals(a, opts)
  return general_eigen(a, opts, "eigvals", false)
end

-- Singular values --------------------------------------------------------------------------

-- singular's stacks of small matrices (batched): gesvdjBatched of a's copy, which holds a^T
-- column-major (N x M) whatever the shape, into s and info; with uv, a's u and vh.  For
-- a^T = U' S V'^H, a = conj(V') S U'^T: cuSOLVER's whole U' read row-major is vh, and its V'
-- (V itself, not V^H as gesvd's) read row-major is V'^T, whose transpose, conjugated, is u
-- (a copy for complex dtypes, a view for real ones).  full_matrices false keeps the first K
-- columns of u and rows of vh (views: gesvdjBatched has no economy mode).  Without uv,
-- cuSOLVER still gets U' and V' to write into (see solver_gesvdj_batched), freed after.
local function singular_batched(a, s, info, uv, full, dtype, stream)
  local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
  local nb = a.ndim - 2
  local k = math.min(m, n)
  local copy = fresh(a, dtype, stream)
  local u_cols = core.array_empty(shape_of(a.shape, nb, n, n), dtype)     -- U', row-major: vh
  local v_cols = core.array_empty(shape_of(a.shape, nb, m, m), dtype)     -- V', row-major: V'^T
  in_pieces(product(shape_of(a.shape, nb)), math.max(m, n) * math.max(m, n), {copy, s, u_cols, v_cols, info},
            {2, 1, 2, 2, 0}, function(part, values, u_part, v_part, infos)
    core.solver_gesvdj_batched(part, values, u_part, v_part, infos, uv, stream)
    M.batched_calls.gesvdj = M.batched_calls.gesvdj + 1
  end)
  core.free_after(copy, stream)
  if not uv then
    free_all(stream, u_cols, v_cols)
    return nil, nil
  end
  local u, vh = transposed(v_cols), u_cols
  if not full and k < m then u = u:narrow(nb + 2, 1, k) end
  if not full and k < n then vh = vh:narrow(nb + 1, 1, k) end
  if core.dtype(dtype).kind == "c" then
    u = ga.conj(u, {stream = stream})
    core.free_after(v_cols, stream)
  end
  return u, vh
end

-- The singular values of a's matrices (K = min(M, N) each, descending) and, with uv,
-- u and vh (full: square; else K columns and rows).
-- (dtype: compute_dtype's of a where nil).
local function singular(a, uv, full, stream, fname, dtype)
  local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
  local nb = a.ndim - 2
  local batch = shape_of(a.shape, nb)
  local k = math.min(m, n)
  dtype = dtype or compute_dtype({a}, fname)
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
  if batched(math.max(m, n), batch) then
    u, vh = singular_batched(a, s, info, uv, full, dtype, stream)
  elseif n >= m then
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

-- Pseudo-inverses and least squares -----------------------------------------------------------

local PINV = {rcond = true, rtol = true, hermitian = true, stream = true}
local LSTSQ = {rcond = true, stream = true}

-- A new copy of u (..., M, K) with column j scaled by 1 / s_j where s_j (s: (..., K)) is above
-- rcond times limit (one a matrix: (...)), and zero where not (|s_j| where magnitude: the
-- eigenvalues of either sign): the factor U S^+ of a pseudo-inverse, as NumPy's pinv drops
-- the small singular values.
local function scaled_columns(u, s, limit, rcond, magnitude, stream, fname)
  local dtype, real = u.dtype, s.dtype
  local t = operators.ctype(dtype)
  local p = program(("scaled %s %s"):format(dtype, magnitude), {
    name = "linalg_scaled_" .. dtype .. (magnitude and "_magnitude" or ""), out = dtype,
    expr = ("%s > rcond * limit ? u * (%s)(1 / s) : (%s)0"):format(magnitude and "fabs(s)" or "s", t, t),
    operands = {{name = "u", dtype = dtype}, {name = "s", dtype = real}, {name = "limit", dtype = real},
                {name = "rcond", dtype = "float64", scalar = true}}})
  local nd = s.ndim
  local s_rows = core.array_view(s, 0, real, shape_of(s.shape, nd - 1, 1, s.shape[nd]))
  local limits = core.array_view(limit, 0, real, shape_of(limit.shape, limit.ndim, 1, 1))
  return ew.launch(p, nil, stream, fname, u, s_rows, limits, rcond)
end

-- Option rcond of fname (or rtol, NumPy 2's other name for it where names has it): a number or nil.
local function relative_cutoff(opts, n, fname, names)
  for _, key in ipairs(names) do args.typed_option(opts, key, "number", n, fname) end
  if opts.rcond ~= nil and opts.rtol ~= nil then
    argerror(n, fname, "options 'rcond' and 'rtol' cannot be given together")
  end
  if opts.rcond ~= nil then return opts.rcond end
  return opts.rtol
end

-- linalg.pinv(a[, {rcond =, hermitian = false, stream =}]): the Moore-Penrose pseudo-inverses
-- (..., N, M), as NumPy 2's: from the SVD a = U S V^H, V S^+ U^H, where S^+ inverts the
-- singular values above rcond (default max(M, N) * eps of the dtype; also named rtol) times
-- the largest and zeroes the rest.  hermitian: a's matrices are Hermitian (from the lower
-- triangle), and their eigenvalues w, of either sign, stand for the singular values |w|.
function M.pinv(a, opts)
  local m, n = check_matrices(a, 1, "pinv")
  opts = check_options(opts, 2, "pinv", PINV)
  local hermitian = check_boolean(opts, "hermitian", false, 2, "pinv")
  local rcond = relative_cutoff(opts, 2, "pinv", {"rcond", "rtol"})
  if hermitian then check_matrices(a, 1, "pinv", true) end
  local dtype = compute_dtype({a}, "pinv")
  local stream = opts.stream
  local on_stream = {stream = stream}
  local nb = a.ndim - 2
  if a.size == 0 then return core.array_empty(shape_of(a.shape, nb, n, m), dtype) end
  rcond = rcond or math.max(m, n) * EPSILON[REAL_OF[dtype]]
  local complex = core.dtype(dtype).kind == "c"
  local result
  if hermitian then
    -- a = V W V^H: pinv(a) = V W^+ V^H
    local w, copy = eigen_of(a, n, "L", dtype, stream, "pinv", true)
    local magnitudes = ga.abs(w, on_stream)
    local largest = ga.max(magnitudes, {axis = w.ndim, stream = stream})
    local v = transposed(copy)
    local scaled = scaled_columns(v, w, largest, rcond, true, stream, "pinv")
    local vh = complex and ga.conj(copy, on_stream) or copy
    result = ga.matmul(scaled, vh, on_stream)
    free_all(stream, w, magnitudes, largest, scaled, copy, vh ~= copy and vh)
  else
    local u, s, vh = singular(a, true, false, stream, "pinv", dtype)
    local largest = ga.max(s, {axis = s.ndim, stream = stream})
    local scaled = scaled_columns(u, s, largest, rcond, false, stream, "pinv")
    if complex then
      local product = ga.matmul(scaled, vh, on_stream)      -- U S^+ V^H = pinv(a)^H
      result = ga.conj(transposed(product), on_stream)
      core.free_after(product, stream)
    else
      result = ga.matmul(transposed(vh), transposed(scaled), on_stream)
    end
    free_all(stream, u, s, vh, largest, scaled)
  end
  return result
end

-- linalg.lstsq(a, b[, {rcond =, stream =}]) -> x, residuals, rank, s: NumPy's least squares
-- of one matrix a (M, N) and b (M,) or (M, K): x (N,) or (N, K) minimizes |b - a x| (the
-- least |x| among those where a's rank is below N), through the SVD a = U S V^H, as LAPACK's
-- gelsd does: x = V S^+ U^H b, the singular values at or below rcond (default max(M, N) * eps
-- of the dtype; negative: eps) times the largest taken for zero.  residuals: the sums of
-- squares of |b - a x|, (1,) or (K,), where rank is N and M > N, else empty (0,); rank the
-- count of singular values kept, a Lua integer (read back: the one synchronization); s the
-- singular values (min(M, N),), descending.  Results are of the dtype NumPy's linalg computes
-- a and b in (residuals and s of its real dtype).
function M.lstsq(a, b, opts)
  check_array(a, 1, "lstsq")
  check_array(b, 2, "lstsq")
  opts = check_options(opts, 3, "lstsq", LSTSQ)
  local rcond = relative_cutoff(opts, 3, "lstsq", {"rcond"})
  if a.ndim ~= 2 then argerror(1, "lstsq", ("array of 2 dimensions expected, got %d"):format(a.ndim)) end
  if b.ndim ~= 1 and b.ndim ~= 2 then
    argerror(2, "lstsq", ("array of 1 or 2 dimensions expected, got %d"):format(b.ndim))
  end
  local m, n = a.shape[1], a.shape[2]
  local vector = b.ndim == 1
  if b.shape[1] ~= m then argerror(2, "lstsq", ("b has %d rows, a is %d x %d"):format(b.shape[1], m, n)) end
  local dtype = compute_dtype({a, b}, "lstsq")
  local real = REAL_OF[dtype]
  local stream = opts.stream
  local on_stream = {stream = stream}
  local columns = vector and 1 or b.shape[2]
  if vector then b = core.array_view(b, 0, b.dtype, {m, 1}, {b.strides[1], 0}) end
  local k = math.min(m, n)
  if rcond == nil then rcond = math.max(m, n) * EPSILON[real]
  elseif rcond < 0 then rcond = EPSILON[real] end
  local x, s, rank
  if k == 0 or columns == 0 then
    x = ga.zeros({n, columns}, dtype)
    s = k == 0 and core.array_empty({0}, real) or singular(a, false, false, stream, "lstsq", dtype)
  else
    local u, vh
    u, s, vh = singular(a, true, false, stream, "lstsq", dtype)
    -- x = V S^+ (U^H b): the rows of U^H b scaled, as the columns of their transpose
    local complex = core.dtype(dtype).kind == "c"
    local uh = complex and ga.conj(transposed(u), on_stream) or transposed(u)
    local c = ga.matmul(uh, b, on_stream)
    local largest = s:narrow(1, 1, 1):reshape({})
    local scaled = scaled_columns(transposed(c), s, largest, rcond, false, stream, "lstsq")
    local v = complex and ga.conj(transposed(vh), on_stream) or transposed(vh)
    x = ga.matmul(v, transposed(scaled), on_stream)
    free_all(stream, u, vh, complex and uh, c, scaled, complex and v)
  end
  rank = 0
  if k > 0 then
    if stream then stream:synchronize() end
    local h = s:get()
    for i = 1, k do
      if h[i] > rcond * h[1] then rank = rank + 1 end
    end
  end
  local residuals
  if rank == n and m > n then
    -- (no column: b itself)
    local fit = n > 0 and ga.matmul(a, x, on_stream)
    local misfit = fit and ga.sub(b, fit, on_stream) or b
    residuals = reduction.reduce_axis("lstsq", "sum_squares", misfit, 1, stream)
    if residuals.dtype ~= real then residuals = residuals:astype(real, on_stream) end
    free_all(stream, fit, fit and misfit)
  else
    residuals = core.array_empty({0}, real)
  end
  if vector then x = x:reshape(n) end
  return x, residuals, rank, s
end

-- Products ------------------------------------------------------------------------------------

-- linalg.matrix_power(a, n[, {stream =}]): a's square matrices to the integer power n, as
-- NumPy's: by repeated squaring with matmul (a's dtype; integers wrap as matmul's do); n = 0
-- the identities of a's dtype; n < 0 inv(a) to the power -n (inv's dtype; "Singular matrix").
-- n = 1 gives a copy (NumPy returns a itself).
function M.matrix_power(a, n, opts)
  local size = check_matrices(a, 1, "matrix_power", true)
  if math.type(n) ~= "integer" then
    argerror(2, "matrix_power", "exponent must be an integer, got " .. (math.type(n) or typename(n)))
  end
  opts = check_options(opts, 3, "matrix_power", STREAM)
  local stream = opts.stream
  local on_stream = {stream = stream}
  if n == 0 then return identity(a.shape, a.dtype, stream) end
  local base = a
  if n < 0 then
    local dtype = compute_dtype({a}, "matrix_power")
    if a.size == 0 then base = core.array_empty(a.shape, dtype)
    else
      local info
      base, info = inverse(a, size, dtype, stream)
      check_info(info, stream, "matrix_power", "Singular matrix", base)
    end
    n = -n
  end
  if n == 1 then return base == a and a:copy(on_stream) or base end
  -- NumPy's order: result times each squaring a^(2^i) of n's bits, low to high
  local square, result = base, nil
  while true do
    if n % 2 == 1 then
      if result == nil then result = square
      else
        local product = ga.matmul(result, square, on_stream)
        if result ~= base then core.free_after(result, stream) end
        result = product
      end
    end
    n = n // 2
    if n == 0 then break end
    local squared = ga.matmul(square, square, on_stream)
    if square ~= base and square ~= result then core.free_after(square, stream) end
    square = squared
  end
  if square ~= result and square ~= base then core.free_after(square, stream) end
  if base ~= a and base ~= result then core.free_after(base, stream) end
  return result
end

-- The split points of NumPy's optimal order of the chain of matrices whose shapes are
-- dims[i] x dims[i + 1] (i = 1 .. count), by the classic dynamic programme on the count of
-- scalar multiplications: split[i][j] = k when the product of matrices i .. j is best made
-- as (i .. k) (k + 1 .. j), the least such k where several cost the same (NumPy's choice).
-- Also the least cost, cost[1][count].
function M.chain_order(dims)
  local count = #dims - 1
  local cost, split = {}, {}
  for i = 1, count do cost[i], split[i] = {[i] = 0}, {} end
  for length = 1, count - 1 do
    for i = 1, count - length do
      local j = i + length
      cost[i][j] = math.huge
      for k = i, j - 1 do
        local q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
        if q < cost[i][j] then cost[i][j], split[i][j] = q, k end
      end
    end
  end
  return split, cost[1][count]
end

-- linalg.multi_dot(arrays[, {stream =}]): the product of the list of two or more arrays, as
-- NumPy's: 2-d matrices, but a 1-d first array a row vector and a 1-d last one a column
-- vector (their axis dropped from the result: both 1-d give a 0-d array), multiplied in the
-- order that needs the fewest scalar multiplications (chain_order).
function M.multi_dot(arrays, opts)
  if type(arrays) ~= "table" or getmetatable(arrays) ~= nil then
    argerror(1, "multi_dot", "list of arrays expected, got " .. typename(arrays))
  end
  opts = check_options(opts, 2, "multi_dot", STREAM)
  local stream = opts.stream
  local on_stream = {stream = stream}
  local count = #arrays
  if count < 2 then argerror(1, "multi_dot", ("at least 2 arrays expected, got %d"):format(count)) end
  local matrices, dims = {}, {}
  for i = 1, count do          -- not ipairs: a hole in the list is a bad element, not its end
    local x = check_array(arrays[i], 1, "multi_dot")
    local ends = i == 1 or i == count
    if x.ndim ~= 2 and not (ends and x.ndim == 1) then
      argerror(1, "multi_dot", ("array %d has %d dimensions, %s expected")
                               :format(i, x.ndim, ends and "1 or 2" or "2"))
    end
    if x.ndim == 1 then   -- a row first, a column last: views
      local length, stride = x.shape[1], x.strides[1]
      if i == 1 then x = core.array_view(x, 0, x.dtype, {1, length}, {length * stride, stride})
      else x = core.array_view(x, 0, x.dtype, {length, 1}, {stride, stride}) end
    end
    if i > 1 and x.shape[1] ~= dims[i] then
      argerror(1, "multi_dot", ("array %d has %d columns, array %d %d rows")
                               :format(i - 1, dims[i], i, x.shape[1]))
    end
    matrices[i], dims[i], dims[i + 1] = x, x.shape[1], x.shape[2]
  end
  local split = M.chain_order(dims)
  local function chain(i, j)
    if i == j then return matrices[i] end
    local k = split[i][j]
    local left, right = chain(i, k), chain(k + 1, j)
    local product = ga.matmul(left, right, on_stream)
    if i < k then core.free_after(left, stream) end
    if k + 1 < j then core.free_after(right, stream) end
    return product
  end
  local result = chain(1, count)
  local shape = {}
  if arrays[1].ndim == 2 then shape[#shape + 1] = dims[1] end
  if arrays[count].ndim == 2 then shape[#shape + 1] = dims[count + 1] end
  if #shape == 2 then return result end
  return core.array_view(result, 0, result.dtype, shape)
end

-- Condition numbers ---------------------------------------------------------------------------

local COND = {p = true, stream = true}
local COND_ORDERS = {fro = true, f = true, nuc = true, [1] = true, [-1] = true, [2] = true, [-2] = true,
                     [math.huge] = true, [-math.huge] = true}

local function order_text(p)
  if p == math.huge then return "inf" elseif p == -math.huge then return "-inf" end
  return type(p) == "number" and tostring(p) or quoted(p)
end

-- linalg.cond(x[, {p =, stream =}]): the condition numbers of x's matrices in the norm p, as
-- NumPy's: nil, 2 or -2 the ratio of the greatest singular value to the least (-2: the
-- least to the greatest), of any matrices; "fro", "nuc", 1, -1, inf and -inf norm(x, p) times
-- norm(inv(x), p), of square ones ("nuc": the sums of the singular values of x and of their
-- reciprocals).  inf for a singular matrix, not an error; the real dtype; 0-d for one matrix.
function M.cond(x, opts)
  local m, n = check_matrices(x, 1, "cond")
  opts = check_options(opts, 2, "cond", COND)
  local p, stream = opts.p, opts.stream
  if p ~= nil and not COND_ORDERS[p] then
    argerror(2, "cond", ("invalid norm order %s for matrices"):format(order_text(p)))
  end
  if m * n == 0 then argerror(1, "cond", "cond is not defined on empty arrays") end
  if p ~= nil and p ~= 2 and p ~= -2 then check_matrices(x, 1, "cond", true) end
  local dtype = compute_dtype({x}, "cond")
  local real = REAL_OF[dtype]
  local nb = x.ndim - 2
  local batch = shape_of(x.shape, nb)
  if x.size == 0 then return core.array_empty(batch, real) end
  local t = operators.ctype(real)
  local infinity = real == "float64" and "__longlong_as_double(0x7ff0000000000000LL)"
                   or "__int_as_float(0x7f800000)"
  local function launch(name, expr, operands, ...)
    local spec = {name = "linalg_cond_" .. name .. "_" .. real, out = real, expr = expr, operands = {}}
    for i, operand in ipairs(operands) do spec.operands[i] = {name = operand, dtype = real} end
    if name == "norms" then spec.operands[3].dtype = "int32" end
    return ew.launch(program("cond " .. name .. " " .. real, spec), nil, stream, "cond", ...)
  end
  if p == nil or p == 2 or p == -2 or p == "nuc" then
    local s = singular(x, false, false, stream, "cond", dtype)
    local k = s.shape[s.ndim]
    local strides = s.strides
    strides[#strides] = nil
    local result
    if p == "nuc" then
      local sum = ga.sum(s, {axis = nb + 1, stream = stream})
      local reciprocals = launch("reciprocal", ("(%s)1 / s"):format(t), {"s"}, s)
      local reciprocal_sum = ga.sum(reciprocals, {axis = nb + 1, stream = stream})
      -- a zero matrix's 0 * inf: NumPy's NaN made inf
      result = launch("nuc", ("sum == 0 ? %s : sum * reciprocal_sum"):format(infinity),
                      {"sum", "reciprocal_sum"}, sum, reciprocal_sum)
      free_all(stream, sum, reciprocals, reciprocal_sum)
    else
      local greatest = core.array_view(s, 0, real, batch, strides)
      local least = core.array_view(s:narrow(nb + 1, k, 1), 0, real, batch, strides)
      local ratio = p == -2 and "least / greatest" or "greatest / least"
      result = launch(p == -2 and "least" or "greatest", ("greatest == 0 ? %s : %s"):format(infinity, ratio),
                      {"greatest", "least"}, greatest, least)
    end
    core.free_after(s, stream)
    return result
  end
  local inverses, info = inverse(x, n, dtype, stream)
  local norm_opts = {ord = p, axis = {nb + 1, nb + 2}, stream = stream}
  local norm_x, norm_inverse = ga.linalg.norm(x, norm_opts), ga.linalg.norm(inverses, norm_opts)
  if norm_x.dtype ~= real then   -- an integer x's norm is float64
    local converted = norm_x:astype(real, {stream = stream})
    core.free_after(norm_x, stream)
    norm_x = converted
  end
  -- a singular matrix (info > 0), whose inverse NumPy's LAPACK leaves NaN: inf, NaN from NaNs
  local result = launch("norms", ("info > 0 ? (lg_isnan(norm_x) ? norm_x : %s) : norm_x * norm_inverse")
                                  :format(infinity), {"norm_x", "norm_inverse", "info"},
                        norm_x, norm_inverse, info)
  free_all(stream, inverses, info, norm_x, norm_inverse)
  return result
end

-- Tensors -------------------------------------------------------------------------------------

local TENSORINV = {ind = true, stream = true}
local TENSORSOLVE = {axes = true, stream = true}

-- linalg.tensorinv(a[, {ind = 2, stream =}]): NumPy's inverse of a as a tensor: of shape
-- a.shape[ind + 1 ..] .. a.shape[1 .. ind], whose tensordot with a over its first ind axes
-- is the identity; the product of a's first ind lengths must be that of the rest.
function M.tensorinv(a, opts)
  check_array(a, 1, "tensorinv")
  opts = check_options(opts, 2, "tensorinv", TENSORINV)
  local ind = opts.ind == nil and 2 or opts.ind
  if math.type(ind) ~= "integer" or ind <= 0 then
    argerror(2, "tensorinv", "option 'ind' must be a positive integer, got " .. tostring(ind))
  end
  local shape = a.shape
  if ind > #shape then
    argerror(2, "tensorinv", ("option 'ind' is %d, beyond the array's %d dimensions"):format(ind, #shape))
  end
  local rows, columns, inverse_shape = 1, 1, {}
  for d = ind + 1, #shape do
    columns = columns * shape[d]
    inverse_shape[#inverse_shape + 1] = shape[d]
  end
  for d = 1, ind do
    rows = rows * shape[d]
    inverse_shape[#inverse_shape + 1] = shape[d]
  end
  if rows ~= columns then
    argerror(1, "tensorinv", ("the product of the first %d lengths (%d) must be that of the rest (%d)")
                             :format(ind, rows, columns))
  end
  local result = M.inv(a:reshape(rows, columns), {stream = opts.stream})
  return core.array_view(result, 0, result.dtype, inverse_shape)
end

-- linalg.tensorsolve(a, b[, {axes =, stream =}]): NumPy's x with tensordot(a, x, x.ndim) = b:
-- x has a's last a.ndim - b.ndim lengths, whose product must be b's size (and that of a's
-- first b.ndim lengths); axes (1-based) are moved to the end of a first.
function M.tensorsolve(a, b, opts)
  check_array(a, 1, "tensorsolve")
  check_array(b, 2, "tensorsolve")
  opts = check_options(opts, 3, "tensorsolve", TENSORSOLVE)
  local axes = opts.axes
  if axes ~= nil then
    if type(axes) ~= "table" or getmetatable(axes) ~= nil then
      argerror(3, "tensorsolve", "option 'axes' must be a list of axes, got " .. typename(axes))
    end
    local order, moved = {}, {}
    for _, axis in ipairs(axes) do
      local d = args.check_axis(axis, a.ndim, 3, "tensorsolve")
      if moved[d] then argerror(3, "tensorsolve", "option 'axes' names an axis twice") end
      moved[d] = true
    end
    for d = 1, a.ndim do if not moved[d] then order[#order + 1] = d end end
    for _, axis in ipairs(axes) do order[#order + 1] = args.check_axis(axis, a.ndim, 3, "tensorsolve") end
    a = a:transpose(order)
  end
  local shape = a.shape
  local x_shape, size = {}, 1
  for d = b.ndim + 1, #shape do
    x_shape[#x_shape + 1] = shape[d]
    size = size * shape[d]
  end
  if b.ndim >= #shape or a.size ~= size * size or b.size ~= size then
    argerror(2, "tensorsolve", ("a %s and b %s: the product of a's last %d lengths must be b's size and "
                                .. "that of a's first %d"):format(promote.shape_text(shape),
                                promote.shape_text(b.shape), #shape - b.ndim, b.ndim))
  end
  local x = M.solve(a:reshape(size, size), b:reshape(size), {stream = opts.stream})
  return core.array_view(x, 0, x.dtype, x_shape)
end

-- What install leaves out of gpu.linalg (chain_order, batched_calls: for the specs).
local INTERNAL = {install = true, chain_order = true, batched_calls = true, syevj_chunk = true}

function M.install(gpu)
  ga = gpu.gpuarray
  -- added to, never replaced: other modules (linalg.norm) put their functions in it too
  local linalg = ga.linalg or gpu.linalg or {}
  for name, f in pairs(M) do
    if not INTERNAL[name] then linalg[name] = f end
  end
  ga.linalg, gpu.linalg = linalg, linalg
end

return M
