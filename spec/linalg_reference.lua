-- Shared by the linalg specs (54, 56, 67): the Lua side they check gpu.linalg against, in
-- doubles.  Complex numbers are {re, im} pairs (reals have im 0), matrices are lists of rows
-- of pairs; with them the dtypes' eps, random, diagonally dominant and Hermitian matrices,
-- matrix products and norms, a Lua LU determinant, and the way between device arrays and
-- these matrices (to_device gives the values as stored, rounded to the dtype).
local gpu = require "gpu"
local R = require "reduction_helpers"

local M = {}

M.EPS = {float32 = 2.0 ^ -23, complex64 = 2.0 ^ -23, float64 = 2.0 ^ -52, complex128 = 2.0 ^ -52}
M.REAL = {float32 = "float32", complex64 = "float32", float64 = "float64", complex128 = "float64"}

-- The dtype gpu.linalg computes an input dtype in (integers: float64).
function M.computed(dtype) return M.EPS[dtype] and dtype or "float64" end

function M.product(list)
  local p = 1
  for _, n in ipairs(list) do p = p * n end
  return p
end

-- shape with more lengths appended, as a new table.
function M.shape_with(shape, ...)
  local out = {table.unpack(shape)}
  for _, n in ipairs{...} do out[#out + 1] = n end
  return out
end

-- Complex numbers as {re, im} pairs, in doubles ------------------------------------------------

local ZERO, ONE = {0.0, 0.0}, {1.0, 0.0}
M.ZERO, M.ONE = ZERO, ONE

local function add(x, y) return {x[1] + y[1], x[2] + y[2]} end
local function sub(x, y) return {x[1] - y[1], x[2] - y[2]} end
local function mul(x, y) return {x[1] * y[1] - x[2] * y[2], x[1] * y[2] + x[2] * y[1]} end
local function div(x, y)
  local d = y[1] * y[1] + y[2] * y[2]
  return {(x[1] * y[1] + x[2] * y[2]) / d, (x[2] * y[1] - x[1] * y[2]) / d}
end
local function conj(x) return {x[1], -x[2]} end
local function abs(x) return math.sqrt(x[1] * x[1] + x[2] * x[2]) end
M.add, M.sub, M.mul, M.div, M.conj, M.abs = add, sub, mul, div, conj, abs

-- Matrices: lists of rows of pairs -------------------------------------------------------------

local function matrix(rows, cols, f)
  local A = {}
  for i = 1, rows do
    A[i] = {}
    for j = 1, cols do A[i][j] = f(i, j) end
  end
  return A
end
M.matrix = matrix

local function matmul(A, B)
  return matrix(#A, #B[1], function(i, j)
    local s = ZERO
    for k = 1, #B do s = add(s, mul(A[i][k], B[k][j])) end
    return s
  end)
end
M.matmul = matmul

-- The conjugate transpose.
local function ct(A) return matrix(#A[1], #A, function(i, j) return conj(A[j][i]) end) end
M.ct = ct
function M.transpose(A) return matrix(#A[1], #A, function(i, j) return A[j][i] end) end
local function identity(n) return matrix(n, n, function(i, j) return i == j and ONE or ZERO end) end
M.identity = identity

-- The Frobenius norm.
local function norm(A)
  local s = 0
  for _, row in ipairs(A) do for _, z in ipairs(row) do s = s + z[1] * z[1] + z[2] * z[2] end end
  return math.sqrt(s)
end
M.norm = norm

local function distance(A, B)
  return norm(matrix(#A, #A[1], function(i, j) return sub(A[i][j], B[i][j]) end))
end
M.distance = distance

local function assert_small(value, bound, what)
  if not (value <= bound) then error(("%s: %.3g is beyond %.3g"):format(what, value, bound), 2) end
end
M.assert_small = assert_small

-- The bound on |Q^H Q - I| for Q's k orthonormal columns of m elements.
function M.assert_orthonormal(Q, eps, what)
  local k = #Q[1]
  assert_small(distance(matmul(ct(Q), Q), identity(k)), 30 * math.max(#Q, k) * eps, what)
end

-- Random matrices ------------------------------------------------------------------------------

local function random_entry(dtype)
  if dtype:match("int") then return {math.random(-9, 9) + 0.0, 0.0} end
  if dtype:match("complex") then return {math.random() * 2 - 1, math.random() * 2 - 1} end
  return {math.random() * 2 - 1, 0.0}
end
M.random_entry = random_entry

local function random_matrix(rows, cols, dtype)
  return matrix(rows, cols, function() return random_entry(dtype) end)
end
M.random_matrix = random_matrix

-- Diagonally dominant (well conditioned), the diagonal of either sign, its rows shuffled (so
-- that partial pivoting swaps them).
function M.dominant(n, dtype)
  local boost = dtype:match("int") and 10 * n or 2 * n
  local A = matrix(n, n, function(i, j)
    local z = random_entry(dtype)
    if i == j then z = {z[1] + (math.random() < 0.5 and -boost or boost), z[2]} end
    return z
  end)
  for i = n, 2, -1 do
    local j = math.random(i)
    A[i], A[j] = A[j], A[i]
  end
  return A
end

-- Hermitian (real: symmetric), positive definite where definite.
function M.hermitian(n, dtype, definite)
  local B = random_matrix(n, n, dtype)
  local H = definite and matmul(B, ct(B))
            or matrix(n, n, function(i, j) return add(B[i][j], conj(B[j][i])) end)
  for i = 1, n do
    H[i][i] = {H[i][i][1] + (definite and n or 0), 0.0}
    for j = 1, i - 1 do H[j][i] = conj(H[i][j]) end
  end
  return H
end

-- A copy of H with its lower triangle kept (upper where keep_upper) and junk (random values)
-- in the rest: what cholesky and eigh must not read.
function M.with_junk(H, dtype, keep_upper)
  return matrix(#H, #H, function(i, j)
    if (keep_upper and i > j) or (not keep_upper and i < j) then return random_entry(dtype) end
    return H[i][j]
  end)
end

-- The Hermitian matrix that A's lower (or upper) triangle defines, as LAPACK reads it (the
-- diagonal's real parts).
function M.hermitian_of(A, upper)
  return matrix(#A, #A, function(i, j)
    if i == j then return {A[i][i][1], 0.0} end
    if (i > j) == not upper then return A[i][j] end
    return conj(A[j][i])
  end)
end

-- A's determinant by Gaussian elimination with partial pivoting, in doubles.
function M.det_reference(A)
  local n = #A
  local U = matrix(n, n, function(i, j) return A[i][j] end)
  local det = ONE
  for k = 1, n do
    local p = k
    for i = k + 1, n do if abs(U[i][k]) > abs(U[p][k]) then p = i end end
    if abs(U[p][k]) == 0 then return ZERO end
    if p ~= k then
      U[p], U[k] = U[k], U[p]
      det = {-det[1], -det[2]}
    end
    det = mul(det, U[k][k])
    for i = k + 1, n do
      local l = div(U[i][k], U[k][k])
      for j = k + 1, n do U[i][j] = sub(U[i][j], mul(l, U[k][j])) end
    end
  end
  return det
end

-- Device arrays --------------------------------------------------------------------------------

-- A value read back (a number, or a complex with re and im) as a pair.
local function pair(v) return type(v) == "number" and {v + 0.0, 0.0} or {v.re, v.im} end
M.pair = pair

-- A device array of shape (..., rows, cols) and dtype holding the list of matrices, and the
-- matrices as stored (rounded to dtype).
function M.to_device(mats, shape, dtype)
  local flat = {}
  for _, A in ipairs(mats) do
    for _, row in ipairs(A) do for _, z in ipairs(row) do flat[#flat + 1] = z end end
  end
  local complex, integer = dtype:match("^complex"), dtype:match("int")
  local a, stored = R.generate(#flat, dtype, function(k)
    local z = flat[k]
    if complex then return gpu.complex(z[1], z[2]) end
    if integer then return math.tointeger(z[1]) end
    return z[1]
  end)
  local rows, cols = shape[#shape - 1], shape[#shape]
  local out, k = {}, 0
  for b = 1, #mats do
    out[b] = matrix(rows, cols, function()
      k = k + 1
      return pair(stored[k])
    end)
  end
  return R.reshaped(a, shape), out
end

-- The matrices of a result x (shape (..., rows, cols)) as pairs.
function M.matrices_of(x)
  local h = R.get(x)
  local shape = x.shape
  local rows, cols = shape[#shape - 1], shape[#shape]
  local out, k = {}, 0
  for b = 1, h.size // (rows * cols) do
    out[b] = matrix(rows, cols, function()
      k = k + 1
      return pair(h[k])
    end)
  end
  return out
end

-- The values of x, flat, as pairs.
function M.values_of(x)
  local h, out = R.get(x), {}
  for k = 1, h.size do out[k] = pair(h[k]) end
  return out
end

-- The stand-ins' side (no GPU): fake_run(code[, env]) runs code in a process on the stand-in
-- driver, cuSOLVER and cuBLAS, with gpu, L (gpu.linalg) and mark(name) (a "== name" line on
-- stderr) in scope; traces(out) gives the fakes' lines after each mark, by name (cuBLAS's
-- with "cublas " before them).
function M.fake_run(code, env)
  return require("helpers").run_with_fakes("local gpu = require 'gpu'\nlocal L = gpu.linalg\n" ..
                                           "local function mark(s) io.stderr:write('== ' .. s .. '\\n') end\n" ..
                                           code, env)
end

function M.traces(out)
  local by_name, current = {}, nil
  for line in out:gmatch("[^\n]+") do
    local name = line:match("^== (.*)$")
    if name then
      current = {}
      by_name[name] = current
    elseif current and line:match("^fakecusolver: ") then
      current[#current + 1] = line:sub(15)
    elseif current and line:match("^fakecublas: ") then
      current[#current + 1] = "cublas " .. line:sub(13)
    end
  end
  return by_name
end

return M
