-- gpu.matmul: gpuarray.matmul(a, b[, {out = o, stream = s}]) and a:matmul(b[, opts]), NumPy's
-- matmul (kernels/matmul.cu; products with a single row or column, matrix times vector, and
-- with a few, kernels/matvec.cu).
--
-- The product of matrices in the last two axes; leading axes are stacks of matrices and
-- broadcast against each other.  A 1-d a is a row and a 1-d b a column, and that axis is
-- dropped from the result, so two 1-d arrays give a 0-d array (their inner product).  The
-- result dtype is NumPy's promote_types of the two; integer products and sums wrap to it.
-- Any views are read in place, through their strides.

local core = require "gpu.core"
local ew = require "gpu.elementwise"
local kernel_cache = require "gpu.kernel_cache"
local reduction = require "gpu.reduction"
local args = require "gpu.args"
local promote = require "gpu.promote"

local M = {}

local argerror = args.argerror
local check_array = reduction.check_array
local dtypes = reduction.dtypes
local THREADS = 16                   -- kernels/matmul.cu's GPU_THREADS
local MAX_GRID_YZ = 65535
local OPTIONS = {out = true, stream = true}

-- The accumulator of a result dtype, and C expressions for x * y added to acc and for the
-- store of acc.  Integer sums wrap as NumPy's do: in unsigned arithmetic at least as wide as
-- the result, which the store truncates (32 bits for results of up to 32: one register an
-- accumulator, so their products take the 8 x 8 tiles).
local function arithmetic(out)
  local d = dtypes[out]
  if d.kind == "b" then
    return "unsigned int", "acc | (x & y)", "(bool)(acc)"
  elseif d.kind == "i" or d.kind == "u" then
    return d.size <= 4 and "unsigned int" or "unsigned long long", "acc + x * y",
           ("(%s)(acc)"):format(d.ctype)
  elseif d.kind == "c" then
    return d.ctype, "acc + x * y", "acc"
  end
  local acc = d.size == 8 and "double" or "float"
  local store = out == "float16" and "gpu_float_to_half(acc)" or out == "bfloat16" and "gpu_float_to_bf16(acc)"
                or "acc"
  return acc, "acc + x * y", store
end

-- C expression converting x of dtype to the accumulator acc of a product into out.
local signed_of = {["unsigned int"] = "int", ["unsigned long long"] = "long long"}
local function load(dtype, acc, out)
  if dtype == "float16" then return ("(%s)gpu_half_to_float(x)"):format(acc) end
  if dtype == "bfloat16" then return ("(%s)gpu_bf16_to_float(x)"):format(acc) end
  if dtypes[out].kind == "b" then return "(unsigned int)(x != 0)" end
  if signed_of[acc] and dtypes[dtype].kind == "i" then
    return ("(%s)(%s)x"):format(acc, signed_of[acc])   -- sign-extended, then wrapping
  end
  return ("(%s)(x)"):format(acc)
end

-- Rows, and columns, of out that a thread computes (kernels/matmul.cu's GPU_PER_THREAD) for
-- products of n x m matrices: 8 x 8, unless the accumulators are complex or 64-bit integers
-- (they would not fit in registers: int32 2048^3 with 64-bit accumulators ran at 4.1 TOP/s in
-- 8 x 8 and 5.5 in 4 x 4) or there would be fewer 128 x 128 tiles than multiprocessors.  (On
-- the H100, float32: 1024^3 ran at 8.5 TFLOP/s in big tiles and 10 in 64 x 64 ones; 2048^3 at
-- 18.8 in big ones, 64 tiles a multiprocessor short of two each, and 13 in small ones.)
function M.per_thread(out, n, m, batches)
  local kind = dtypes[out].kind
  if kind == "c" or ((kind == "i" or kind == "u") and dtypes[out].size == 8) then return 4 end
  local big_tiles = ((n + 127) // 128) * ((m + 127) // 128) * batches
  return big_tiles >= reduction.multiprocessors() and 8 or 4
end

local tensor_core_rows = {}   -- device ordinal -> rows of its float64 mma, or false
-- The rows of the float64 tensor-core instruction matmul uses on the current device: 16
-- (mma.m16n8k4) from compute capability 9.0 on, 8 (mma.m8n8k4) from 8.0 on, else false.
function M.float64_tensor_cores()
  local ordinal = core.device_ordinal()
  local rows = tensor_core_rows[ordinal]
  if rows == nil then
    local major = core.get_device():compute_capability()
    rows = major >= 9 and 16 or major >= 8 and 8 or false
    tensor_core_rows[ordinal] = rows
  end
  return rows
end

-- Whether the product is of two float16, or two bfloat16, matrices (whose products the
-- tensor cores compute exactly, in float).
local function takes_half_tensor_cores(a_dtype, b_dtype, out)
  return (out == "float16" or out == "bfloat16") and a_dtype == out and b_dtype == out
end

-- The rows of the tensor-core instruction that a product of a_dtype and b_dtype matrices into
-- out takes on the current device (kernels/matmul.cu's GPU_MMA_ROWS), or false for the CUDA
-- cores: float64 and complex128 results (float64_tensor_cores), and products of two float16,
-- or two bfloat16, matrices (mma.m16n8k16, from compute capability 8.0 on).
function M.tensor_cores(a_dtype, b_dtype, out)
  if out == "float64" or out == "complex128" then return M.float64_tensor_cores() end
  return takes_half_tensor_cores(a_dtype, b_dtype, out) and M.float64_tensor_cores() and 16
end

local tensor_core_paths = {complex128 = "2", float16 = "3", bfloat16 = "4"}   -- else "1"

-- The module source of the product of a_dtype and b_dtype matrices into out's dtype; with
-- tensor_cores (M.tensor_cores' rows) on the tensor cores.
function M.source(a_dtype, b_dtype, out, per_thread, tensor_cores)
  assert(not tensor_cores or out == "float64" or out == "complex128" or
         takes_half_tensor_cores(a_dtype, b_dtype, out),
         "tensor cores take float64 and complex128 products, and float16 or bfloat16 ones")
  local acc, multiply_add, store = arithmetic(out)
  return core.kernel_sources["common.cu"] .. "\n" .. reduction.fill(core.kernel_sources["matmul.cu"], {
    A_T = dtypes[a_dtype].ctype, B_T = dtypes[b_dtype].ctype, ACC_T = acc, OUT_T = dtypes[out].ctype,
    LOAD_A = load(a_dtype, acc, out), LOAD_B = load(b_dtype, acc, out), MULTIPLY_ADD = multiply_add,
    STORE = store, PER_THREAD = tostring(per_thread),
    TENSOR_CORES = not tensor_cores and "0" or tensor_core_paths[out] or "1",
    MMA_ROWS = tostring(tensor_cores or 8),
    MIN_BLOCKS = tensor_cores and takes_half_tensor_cores(a_dtype, b_dtype, out) and "2" or "1",
  })
end

-- The module source of matrix-vector products of mat_dtype and vec_dtype into out's dtype
-- (kernels/matvec.cu).
function M.matvec_source(mat_dtype, vec_dtype, out)
  local acc, multiply_add, store = arithmetic(out)
  return core.kernel_sources["common.cu"] .. "\n" .. reduction.fill(core.kernel_sources["matvec.cu"], {
    MAT_T = dtypes[mat_dtype].ctype, VEC_T = dtypes[vec_dtype].ctype, ACC_T = acc,
    OUT_T = dtypes[out].ctype, LOAD_MAT = load(mat_dtype, acc, out), LOAD_VEC = load(vec_dtype, acc, out),
    MULTIPLY_ADD = multiply_add, STORE = store,
  })
end

-- The memos of cache keys below: formatting a key anew took a tenth of a small product's
-- host time.
local level = kernel_cache.level

-- The kernel of that source called name (one module: after the first, a kernel of it is a hit
-- of SourceModule's cache).
local matvec_keys = {}     -- name -> mat_dtype -> vec_dtype -> out -> key
local function matvec_kernel(mat_dtype, vec_dtype, out, name)
  local keys = level(level(level(matvec_keys, name), mat_dtype), vec_dtype)
  local key = keys[out]
  if key == nil then
    key = ("matvec|%s|%s|%s|%s"):format(mat_dtype, vec_dtype, out, name)
    keys[out] = key
  end
  return kernel_cache.get(key, function()
    return M.matvec_source(mat_dtype, vec_dtype, out), name, nil,
           {no_extern_c = true, name = "matvec.cu"}
  end)
end

-- The kernel cache's key of each kernel: name -> per_thread -> tensor_cores -> a's dtype -> b's
-- -> out's.
local kernel_keys = {}
local function kernel_key(a_dtype, b_dtype, out, per_thread, tensor_cores, name)
  local t = level(level(level(kernel_keys, name), per_thread), tensor_cores)
  t = level(level(t, a_dtype), b_dtype)
  local key = t[out]
  if key == nil then
    key = ("matmul|%s|%s|%s|%d|%s|%s"):format(a_dtype, b_dtype, out, per_thread, tensor_cores, name)
    t[out] = key
  end
  return key
end

-- The kernel called name (default gpu_matmul) of the source of those dtypes and per_thread.
local function kernel(a_dtype, b_dtype, out, per_thread, name)
  name = name or "gpu_matmul"
  local tensor_cores = M.tensor_cores(a_dtype, b_dtype, out)
  local key = kernel_key(a_dtype, b_dtype, out, per_thread, tensor_cores, name)
  return kernel_cache.get(key, function()
    return M.source(a_dtype, b_dtype, out, per_thread, tensor_cores), name, nil,
           {no_extern_c = true, name = "matmul.cu"}
  end)
end

-- The matrix view of an array of that shape and strides: batch shape and strides, rows,
-- columns and their byte strides.  A 1-d array is one row (as a's) or one column (as b's).
local function matrices(shape, strides, as_row)
  local nd = #shape
  if nd == 1 then
    if as_row then return {}, {}, 1, shape[1], 0, strides[1] end
    return {}, {}, shape[1], 1, strides[1], 0
  end
  local batch, batch_strides = {}, {}
  for d = 1, nd - 2 do batch[d], batch_strides[d] = shape[d], strides[d] end
  return batch, batch_strides, shape[nd - 1], shape[nd], strides[nd - 1], strides[nd]
end

local overlap = ew.overlap

local MATVEC_BLOCK = 256             -- kernels/matvec.cu's GPU_BLOCK

-- The gpu_layout (kernels/common.cu) of a stack's batch shape and byte strides; the one of no
-- batch axes packed once.
local NO_BATCH = reduction.pack_layout(reduction.collapse({}, {}))
local function batch_layout(batch, strides)
  if #batch == 0 then return NO_BATCH end
  return reduction.pack_layout(reduction.collapse(batch, strides))
end

-- How the threads of a matrix-vector product share out its rows (kernels/matvec.cu): the
-- threads a row takes (reduction.share_threads), and whether consecutive threads go along k
-- (where k is adjacent in memory, or there is one row) or along the rows.
function M.matvec_threads(rows, k, row_stride, k_stride, itemsize)
  local along_k = rows == 1 or math.abs(k_stride) <= math.abs(row_stride)
  return reduction.share_threads(rows, k, along_k, itemsize), along_k
end

-- Whether every stride is a multiple of n.
local function all_multiples(strides, n)
  for _, s in ipairs(strides) do
    if s % n ~= 0 then return false end
  end
  return true
end

-- target's count elements = the sums of the partial sums that `splits` ranges of k left in
-- the buffer partials (gpu_matvec_finish), which is then freed.
local function add_partials(target, partials, count, splits, mat, vec, stream)
  matvec_kernel(mat.dtype, vec.dtype, target.dtype, "gpu_matvec_finish")(target, partials, count, splits,
    {block = {MATVEC_BLOCK, 1, 1}, grid = {math.min((count + MATVEC_BLOCK - 1) // MATVEC_BLOCK,
                                                     reduction.max_grid())}, stream = stream})
  core.free_after(partials, stream)
end

-- target (batches x rows, contiguous) = the stack of rows x k matrices mat (byte strides
-- row_stride and k_stride; batch byte strides mat_batch, already broadcast) times the vectors
-- vec (byte stride vec_stride; batch strides vec_batch).
local function matvec(target, mat, batch, mat_batch, rows, row_stride, k_stride, vec, vec_batch,
                      vec_stride, k, batches, stream)
  local mat_size, vec_size = mat.itemsize, vec.itemsize
  local shares, along_k = M.matvec_threads(rows, k, row_stride, k_stride, mat_size)
  -- runs of 16 bytes of mat in one load, where rows and vectors are adjacent and aligned
  local run = math.max(16 // mat_size, 1)
  local vec_align = math.min(16, run * vec_size)
  local runs = along_k and k >= run * shares and k_stride == mat_size
               and vec_stride == vec_size and mat.ptr % 16 == 0 and (rows == 1 or row_stride % 16 == 0)
               and all_multiples(mat_batch, 16) and vec.ptr % vec_align == 0
               and all_multiples(vec_batch, vec_align)
  local block_rows = MATVEC_BLOCK // shares
  local row_blocks = math.min((rows + block_rows - 1) // block_rows, 0x7fffffff)
  local z = math.min(batches, MAX_GRID_YZ)
  -- split k among blocks for four rounds of the 3 blocks a multiprocessor runs at once
  -- (GPU_MIN_BLOCKS; fewer rounds leave more of the device idle in the last)
  local splits, split_k = reduction.split_ranges(row_blocks * z, k, 4 * 3 * reduction.multiprocessors(),
                                                 runs and run or 1)
  local out = target.dtype
  local dest = target
  if splits > 1 then
    dest = core.mem_alloc(splits * batches * rows * reduction.ctype_sizes[arithmetic(out)])
  end
  matvec_kernel(mat.dtype, vec.dtype, out, runs and "gpu_matvec_runs" or "gpu_matvec")(
    dest, mat, batch_layout(batch, mat_batch), row_stride, k_stride,
    vec, batch_layout(batch, vec_batch), vec_stride, rows, k, batches, split_k, shares,
    along_k and 1 or 0,
    {block = {MATVEC_BLOCK, 1, 1}, grid = {row_blocks, splits, z}, stream = stream})
  if splits > 1 then add_partials(target, dest, batches * rows, splits, mat, vec, stream) end
end

local NARROW_COLS = 16               -- the columns of kernels/matvec.cu's gpu_matmul_narrow16
local ACROSS_COLS = 8                -- and of gpu_matmul_across8
local NARROW_WARPS = MATVEC_BLOCK // 32
local ACROSS_GROUPS = MATVEC_BLOCK // 4   -- kernels/matvec.cu's GPU_ACROSS_GROUPS

-- Which kernel takes a product (n x k by k x m; a_row, a_col, b_row and b_col the byte
-- strides): "matvec" for a single row or column; "small" for small matrices with a short k
-- (at most small_elements elements of out a matrix, small_k long), which would leave most of
-- a tile idle; for a few columns (or rows), "narrow" where the other operand runs along k in
-- memory and "across" where its rows (a's) or columns (b's) are adjacent, with the operand
-- ("a" or "b"); else "tile".  Tests change the limits to reach each kernel.
-- A write to a limit forgets the launches planned under the old ones (plans, below).
local limit_values = {small_elements = 1024, small_k = 256, cublas_work = 2 ^ 24,
                      cublas_work_float32 = 2 ^ 27, cublas_matvec = 2 ^ 22, cublas_deep_k = 2048}
local plans, nplans = {}, 0
M.limits = setmetatable({}, {
  __index = limit_values,
  __newindex = function(_, key, value)
    limit_values[key] = value
    plans, nplans = {}, 0
  end,
  __pairs = function() return next, limit_values, nil end,
})

-- Whether elements of size bytes run along k (their byte stride there k_stride) for at least
-- a warp's 16-byte runs.
local function along_k(size, k_stride, k)
  return k_stride == size and k >= 32 * math.max(16 // size, 1)
end

-- (a_size and b_size: the operands' itemsizes)
function M.kernel_for(n, k, m, a_size, a_row, a_col, b_size, b_row, b_col)
  if n == 1 or m == 1 then return "matvec" end
  if n * m <= M.limits.small_elements and k <= M.limits.small_k then return "small" end
  if m <= NARROW_COLS and along_k(a_size, a_col, k) then return "narrow", "a" end
  if n <= NARROW_COLS and along_k(b_size, b_row, k) then return "narrow", "b" end
  if m <= ACROSS_COLS and a_row == a_size then return "across", "a" end
  if n <= ACROSS_COLS and b_col == b_size then return "across", "b" end
  return "tile"
end

-- Whether a product goes to cuBLAS first (core.blas_matmul, which also says whether it can
-- take it; else the kernels compute it), given the kernel kernel_for chose.  On the H100
-- (tools/matmul_backends.lua), cuBLAS was as fast as the tile kernel at 256^3 multiply-adds
-- (limits.cublas_work; float16 1.3x faster there) and 1.6-1.8x faster from 1024^3 on (6.7x in
-- float16), float32 1.14x from 512^3 (limits.cublas_work_float32) and behind below; up to
-- 2.5x faster by 16 to 32 columns.  The kernels stay ahead for small products (the host's
-- time a call as well) and by up to 8 columns.  Matrix-vector products: cuBLAS as fast up to
-- 1024^2 elements of the matrix, 1.4-1.6x faster at 2048^2 (limits.cublas_matvec), 1.05-1.6x
-- from 4096^2 on, for every dtype it takes and either layout (the kernels split k over more
-- blocks and add the parts in a second kernel), but for float32 row-major at 8192^2 (0.98x).
function M.takes_cublas(how, n, k, m, batches, out_dtype)
  if how == "matvec" then return n * k * m * batches >= M.limits.cublas_matvec end
  if how == "small" then return false end
  -- Over a long k, fewer 64 x 64 tiles of out than multiprocessors, or fewer than 1024 rows
  -- for the narrow and across kernels (four a warp): those kernels do not split k, so most of
  -- the device would idle (64 x 32768 by 32768 x 32: 1.47 ms in tiles, 0.06 on cuBLAS)
  if k >= M.limits.cublas_deep_k then
    local few
    if how == "tile" then
      few = ((n + 63) // 64) * ((m + 63) // 64) * batches < reduction.multiprocessors()
    else
      few = math.max(n, m) * batches < 1024
    end
    if few then return true end
  end
  if how ~= "tile" and math.min(n, m) <= 8 then return false end   -- narrow or across
  local limits = M.limits
  return n * k * m * batches >= (out_dtype == "float32" and limits.cublas_work_float32
                                 or limits.cublas_work)
end

-- The rows of mat a warp of gpu_matmul_narrow4, 8 or 16 takes (gpu_narrow_rows), for
-- accumulators of acc_size bytes and that kernel's columns.
function M.narrow_rows(acc_size, kernel_cols)
  return acc_size <= 4 and 4 or acc_size == 8 and kernel_cols <= 8 and 2 or 1
end

-- target (batches x rows x cols, contiguous; the result of row r and column c at
-- r out_row + c out_col) = mat (rows x k; byte strides row_stride and k_stride) times vec
-- (k x cols; byte strides vec_stride along k and col_stride along the columns), stack by
-- stack, through kernels/matvec.cu's gpu_matmul_narrow4, 8 or 16 (how "narrow": k adjacent,
-- rows 16-byte aligned) or gpu_matmul_across4 or 8 ("across": rows adjacent, a multiple of a
-- run of them, aligned to it).  Returns false, having done nothing, where mat does not meet
-- them, and for more than 8 columns of accumulators wider than 4 bytes (float64, complex,
-- 64-bit integers), where the tile kernel is faster (float64 by 16 columns: 471 us in tiles,
-- 1160 in gpu_matmul_narrow16).
local function few_columns(how, target, mat, batch, mat_batch, rows, row_stride, k_stride, vec,
                           vec_batch, vec_stride, col_stride, cols, out_row, out_col, k, batches,
                           stream)
  local out, size = target.dtype, mat.itemsize
  local acc_size = reduction.ctype_sizes[arithmetic(out)]
  local kernel_cols = cols <= 4 and 4 or cols <= 8 and 8 or 16
  if kernel_cols > 8 and acc_size > 4 then return false end
  local block_rows, stride, unit
  if how == "narrow" then
    if mat.ptr % 16 ~= 0 or (rows > 1 and row_stride % 16 ~= 0) or not all_multiples(mat_batch, 16) then
      return false
    end
    block_rows, stride, unit = NARROW_WARPS * M.narrow_rows(acc_size, kernel_cols), row_stride,
                               math.max(16 // size, 1)
  else
    local run = math.min(math.max(16 // size, 1), 4)
    local align = run * size
    if rows % run ~= 0 or mat.ptr % align ~= 0 or k_stride % align ~= 0
       or not all_multiples(mat_batch, align) then
      return false
    end
    block_rows, stride, unit = ACROSS_GROUPS * run, k_stride, 1
  end
  local row_blocks = math.min((rows + block_rows - 1) // block_rows, 0x7fffffff)
  local z = math.min(batches, MAX_GRID_YZ)
  -- split k among blocks for four rounds of the two blocks a multiprocessor runs at once
  local splits, split_k = reduction.split_ranges(row_blocks * z, k, 4 * 2 * reduction.multiprocessors(),
                                                 unit)
  local dest = target
  if splits > 1 then dest = core.mem_alloc(splits * batches * rows * cols * acc_size) end
  local name = ("gpu_matmul_%s%d"):format(how, kernel_cols)
  matvec_kernel(mat.dtype, vec.dtype, out, name)(
    dest, mat, batch_layout(batch, mat_batch), stride, vec, batch_layout(batch, vec_batch),
    vec_stride, col_stride, rows, k, cols, out_row, out_col, batches, split_k,
    {block = {MATVEC_BLOCK, 1, 1}, grid = {row_blocks, splits, z}, stream = stream})
  if splits > 1 then add_partials(target, dest, batches * rows * cols, splits, mat, vec, stream) end
  return true
end

local TILE_BLOCK, SMALL_BLOCK = {THREADS, THREADS, 1}, {256, 1, 1}   -- launches read them only

-- The operands and target as core.blas_matmul takes them, matrices: a vector operand (a_nd or
-- b_nd 1; a_col and b_row its stride) as a view of one row (a) or one column (b), and the
-- target it drops an axis of as a view with that axis back.
local function as_matrices(target, a, b, a_nd, b_nd, batch, n, k, m, a_col, b_row)
  if a_nd > 1 and b_nd > 1 then return target, a, b end
  local shape = {table.unpack(batch)}
  shape[#shape + 1], shape[#shape + 2] = n, m
  target = core.array_view(target, 0, target.dtype, shape)
  if a_nd == 1 then a = core.array_view(a, 0, a.dtype, {1, k}, {k * a_col, a_col}) end
  if b_nd == 1 then b = core.array_view(b, 0, b.dtype, {k, 1}, {b_row, b_row}) end
  return target, a, b
end

-- Products of two 2-d arrays without options repeat their launch by its key
-- (core.matrix_key: the device, dtypes, shapes and strides), where the general path below
-- chose the small or the tiled kernel without asking cuBLAS: a choice that depends on nothing
-- else, while the limits stay as they are.  A loop of small products then costs an
-- allocation and a launch, not the general path's checks and choices (a 64 x 64 float32
-- product: 55000 host instructions).
local MAX_PLANS = 1024
local matrix_key, array_empty = core.matrix_key, core.array_empty

local function remember(key, product, grid, block, shape, out_dtype, a_row, a_col, b_row, b_col,
                        n, k, m)
  if nplans >= MAX_PLANS then plans, nplans = {}, 0 end
  local launch = product.prepared_async_call
  plans[key] = function(a, b)
    local result = array_empty(shape, out_dtype)
    launch(product, grid, block, nil, result, a, NO_BATCH, a_row, a_col, b, NO_BATCH, b_row, b_col,
           n, k, m, 1)
    return result
  end
  nplans = nplans + 1
end

-- Each of a's fields is read once below: reading one costs a call of the array's __index.
function M.matmul(a, b, opts)
  local key = opts == nil and matrix_key(a, b)
  if key then
    local plan = plans[key]
    if plan then return plan(a, b) end
  end
  check_array(a, 1, "matmul")
  check_array(b, 2, "matmul")
  opts = args.check_options(opts, 3, "matmul", OPTIONS)
  local a_shape, b_shape = a.shape, b.shape
  if #a_shape == 0 or #b_shape == 0 then
    argerror(#a_shape == 0 and 1 or 2, "matmul",
             "matmul needs arrays of at least one axis, got a 0-d array")
  end
  local a_device, b_device = a.device, b.device
  if a_device ~= b_device then
    argerror(2, "matmul", ("arrays on devices %d and %d"):format(a_device, b_device))
  end
  local a_batch, a_batch_strides, n, k, a_row, a_col = matrices(a_shape, a.strides, true)
  local b_batch, b_batch_strides, k2, m, b_row, b_col = matrices(b_shape, b.strides, false)
  if k ~= k2 then
    argerror(2, "matmul", ("the inner dimensions differ: %s and %s (%d and %d)")
                          :format(promote.shape_text(a_shape), promote.shape_text(b_shape), k, k2))
  end
  local batch, why
  if #a_batch == 0 and #b_batch == 0 then batch = a_batch
  else batch, why = promote.broadcast_shapes({a_batch, b_batch}) end
  if batch == nil then argerror(2, "matmul", why .. " (the stacks of matrices)") end
  local a_dtype, b_dtype = a.dtype, b.dtype
  local out_dtype = promote.promote_types(a_dtype, b_dtype)
  local shape = {table.unpack(batch)}
  if #a_shape > 1 then shape[#shape + 1] = n end
  if #b_shape > 1 then shape[#shape + 1] = m end
  local out, stream = opts.out, opts.stream
  if out ~= nil then
    check_array(out, 3, "matmul")
    if out.dtype ~= out_dtype or not promote.same_shape(out.shape, shape) then
      argerror(3, "matmul", ("out array is %s of shape %s, the result %s of shape %s")
                            :format(out.dtype, promote.shape_text(out.shape), out_dtype,
                                    promote.shape_text(shape)))
    end
  end
  local result = out or core.array_empty(shape, out_dtype)
  local batches = 1
  for _, s in ipairs(batch) do batches = batches * s end
  if n == 0 or m == 0 or batches == 0 then return result end
  -- written in place when it can be: a strided out, or one that overlaps an input (which the
  -- kernel would read after writing), goes through a temporary (a new result overlaps nothing:
  -- not checking saved a fifth of the host's time of a small product)
  local target = result
  if out ~= nil and (not out.is_contiguous or overlap(out, a) or overlap(out, b)) then
    target = core.array_empty(shape, out_dtype)
  end
  -- each operand's batch strides, broadcast to the batch shape
  local a_bs, b_bs = a_batch_strides, b_batch_strides
  if #batch > 0 then
    a_bs = promote.broadcast_strides(a_batch, a_batch_strides, batch)
    b_bs = promote.broadcast_strides(b_batch, b_batch_strides, batch)
  end
  local how, side = M.kernel_for(n, k, m, dtypes[a_dtype].size, a_row, a_col, dtypes[b_dtype].size,
                                 b_row, b_col)
  if M.takes_cublas(how, n, k, m, batches, out_dtype) then
    key = nil     -- whether cuBLAS takes it depends on more than the key (gpu.use_cublas, alignment)
    local t, x, y = as_matrices(target, a, b, #a_shape, #b_shape, batch, n, k, m, a_col, b_row)
    if core.blas_matmul(t, x, y, stream) then how = "cublas" end
  end
  if how == "narrow" or how == "across" then
    local done
    if side == "a" then     -- a few columns: a times the columns of b
      done = few_columns(how, target, a, batch, a_bs, n, a_row, a_col, b, b_bs, b_row, b_col, m, m, 1,
                         k, batches, stream)
    else                    -- a few rows: b's transpose times the rows of a
      done = few_columns(how, target, b, batch, b_bs, m, b_col, b_row, a, a_bs, a_col, a_row, n, 1, m,
                         k, batches, stream)
    end
    if not done then how = "tile" end
  end
  if how == "matvec" and m == 1 then      -- one column: a times the vector b
    matvec(target, a, batch, a_bs, n, a_row, a_col, b, b_bs, b_row, k, batches, stream)
  elseif how == "matvec" then             -- one row: b's transpose times the vector a
    matvec(target, b, batch, b_bs, m, b_col, b_row, a, a_bs, a_col, k, batches, stream)
  elseif how == "small" or how == "tile" then
    local launch = {block = TILE_BLOCK, stream = stream}
    local product
    if how == "small" then
      product = kernel(a_dtype, b_dtype, out_dtype, 4, "gpu_matmul_small")
      launch.block, launch.grid = SMALL_BLOCK, reduction.grid_stride_blocks(batches * n * m, 256)
    else
      local per_thread = M.per_thread(out_dtype, n, m, batches)
      local tile = THREADS * per_thread
      product = kernel(a_dtype, b_dtype, out_dtype, per_thread)
      launch.grid = {(m + tile - 1) // tile, math.min((n + tile - 1) // tile, MAX_GRID_YZ),
                     math.min(batches, MAX_GRID_YZ)}
    end
    product(target, a, batch_layout(batch, a_bs), a_row, a_col, b, batch_layout(batch, b_bs), b_row,
            b_col, n, k, m, batches, launch)
    if key then
      remember(key, product, launch.grid, launch.block, shape, out_dtype, a_row, a_col, b_row,
               b_col, n, k, m)
    end
  end
  if target ~= result then
    ew.launch(ew.copy_program(out_dtype), result, stream, "matmul", target)
    core.free_after(target, stream)
  end
  return result
end

function M.install(gpu)
  gpu.gpuarray.matmul = M.matmul
  core.types.GPUArray.__methods.matmul = M.matmul
end

return M
