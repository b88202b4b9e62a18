-- gpu.fft (also gpuarray.fft): NumPy's numpy.fft on cuFFT (src/fft.c).
--
--   fft(a[, opts]), ifft, rfft, irfft, hfft, ihfft      one axis: {n =, axis =, norm =, stream =}
--   fft2(a[, opts]), ifft2, rfft2, irfft2               axes {-2, -1} unless {axes =}; {s =} sizes
--   fftn(a[, opts]), ifftn, rfftn, irfftn              every axis unless {axes =}
--   fftfreq(n[, d]), rfftfreq(n[, d])                  the sample frequencies (float64)
--   fftshift(x[, {axes =}]), ifftshift                 the zero frequency moved to the middle
--
-- As NumPy: n (or s) crops or pads each transformed axis with zeros before the transform (an
-- inverse real transform's n is its output's length, 2 (m - 1) unless given); norm is
-- "backward" (the inverse divides by the points, the default), "ortho" (both by their square
-- root) or "forward".  Axes are 1-based, negatives from the end.  Results are complex64 for
-- float32 and smaller floats (or complex64) and complex128 otherwise; real results float32 or
-- float64 to match.  The transformed axes are brought last in a contiguous copy where they
-- are not (a result of other axes than the last is a transposed view of a contiguous array,
-- as NumPy's are); up to three of them go to one cuFFT plan, more in turns.  Plans are
-- cached per device (the last PLANS_KEPT made); their work areas come from the memory pool.

local core = require "gpu.core"
local args = require "gpu.args"
local ew = require "gpu.elementwise"
local reduction = require "gpu.reduction"
local kernel_cache = require "gpu.kernel_cache"

local M = {}

local argerror, typename = args.argerror, args.typename
local check_array, check_options = reduction.check_array, reduction.check_options

local ga   -- gpu.gpuarray, set by install

local ONE_AXIS = {n = true, axis = true, norm = true, stream = true}
local AXES = {s = true, axes = true, norm = true, stream = true}
local SHIFT = {axes = true, stream = true}
local NORMS = {backward = true, ortho = true, forward = true}
local PLANS_KEPT = 16

-- Plans ------------------------------------------------------------------------------------

local plans = {}   -- device ordinal -> {key -> plan, order = keys oldest first}

local function plan_for(type_name, sizes, batch)
  local kept = kernel_cache.level(plans, core.device_ordinal())
  local key = type_name .. " " .. table.concat(sizes, "x") .. " " .. batch
  local plan = kept[key]
  if plan == nil then
    kept.order = kept.order or {}
    if #kept.order >= PLANS_KEPT then
      -- let go, not freed: a graph that captured a transform holds on to its plan
      kept[table.remove(kept.order, 1)] = nil
    end
    plan = core.fft_plan(type_name, sizes, batch)
    kept[key] = plan
    kept.order[#kept.order + 1] = key
  end
  return plan
end

-- The plan's transform from x into out (both contiguous, the plan's dtypes and elements).
local function execute(plan, x, out, inverse, stream)
  local bytes = plan:work_size()
  local work = bytes > 0 and core.mem_alloc(bytes) or nil
  plan:execute(x, out, inverse, work, stream)
  if work then core.free_after(work, stream) end
end

-- Dtypes -----------------------------------------------------------------------------------

local SINGLE = {float16 = true, bfloat16 = true, float32 = true, complex64 = true}

local function complex_of(dtype) return SINGLE[dtype] and "complex64" or "complex128" end
local function real_of(dtype) return SINGLE[dtype] and "float32" or "float64" end

-- Options ----------------------------------------------------------------------------------

local function check_norm(norm, n, fname)
  if norm == nil then return "backward" end
  if not NORMS[norm] then
    argerror(n, fname, ("option 'norm' must be 'backward', 'ortho' or 'forward', got %s")
                       :format(type(norm) == "string" and "'" .. norm .. "'" or typename(norm)), 3)
  end
  return norm
end

local function check_size(v, what, n, fname)
  if math.type(v) ~= "integer" or v < 1 then
    argerror(n, fname, ("%s must be a positive integer, got %s")
                       :format(what, math.type(v) and tostring(v) or typename(v)), 3)
  end
  return v
end

-- The 1-based axes a list option names (negatives from the end), each once.
local function check_axes(list, ndim, n, fname)
  if type(list) ~= "table" then
    argerror(n, fname, "option 'axes' must be a list of integers, got " .. typename(list), 3)
  end
  local axes, seen = {}, {}
  for k, axis in ipairs(list) do
    local d = args.check_axis(axis, ndim, n, fname, 3)
    if seen[d] then argerror(n, fname, ("axis %d is named twice in option 'axes'"):format(axis), 3) end
    seen[d] = true
    axes[k] = d
  end
  return axes
end

-- The transform --------------------------------------------------------------------------------

-- x cropped or padded with zeros along axis d to length.
local function resized(x, d, length, temporaries, stream)
  local have = x.shape[d]
  if have == length then return x end
  if have > length then return x:narrow(d, 1, length) end
  local widths = {}
  for k = 1, x.ndim do widths[k] = {0, k == d and length - have or 0} end
  local padded = ga.pad(x, widths, {stream = stream})
  temporaries[#temporaries + 1] = padded
  return padded
end

-- x with the axes moved last (in their order), contiguous and of dtype (a new array where
-- fresh), and the permutation: axis k of the result is x's axis order[k].
local function axes_last(x, axes, dtype, fresh, temporaries, stream)
  local last, order = {}, {}
  for _, d in ipairs(axes) do last[d] = true end
  for d = 1, x.ndim do if not last[d] then order[#order + 1] = d end end
  for _, d in ipairs(axes) do order[#order + 1] = d end
  local view = x:transpose(order)
  if fresh or view.dtype ~= dtype or not view.is_contiguous then
    view = view:astype(dtype, {stream = stream})
    temporaries[#temporaries + 1] = view
  end
  return view, order
end

-- out scaled in place by the norm's factor for points (the product of the transformed sizes).
local function normalize(out, norm, inverse, points, stream)
  local factor
  if norm == "ortho" then factor = 1 / math.sqrt(points)
  elseif (norm == "backward") == inverse then factor = 1 / points end
  if factor then ga.mul(out, factor, {out = out, stream = stream}) end
end

-- One plan's transform over the last #sizes axes of the contiguous x: kind "c2c", "r2c" or
-- "c2r"; sizes the logical lengths (a real side's last).  A new contiguous array.
local function run_plan(x, kind, inverse, sizes, stream)
  local rank = #sizes
  local shape, batch = {}, 1
  for d = 1, x.ndim do shape[d] = x.shape[d] end
  for d = 1, x.ndim - rank do batch = batch * shape[d] end
  local single = x.dtype == "complex64" or x.dtype == "float32"
  local out_dtype, type_name
  if kind == "c2c" then out_dtype, type_name = x.dtype, single and "C2C" or "Z2Z"
  elseif kind == "r2c" then
    out_dtype, type_name = single and "complex64" or "complex128", single and "R2C" or "D2Z"
    shape[x.ndim] = sizes[rank] // 2 + 1
  else
    out_dtype, type_name = single and "float32" or "float64", single and "C2R" or "Z2D"
    shape[x.ndim] = sizes[rank]
  end
  local out = ga.empty(shape, out_dtype)
  if out.size > 0 then execute(plan_for(type_name, sizes, batch), x, out, inverse, stream) end
  return out
end

-- transform(a, kind, inverse, axes, lengths, norm, stream): the transform of a over the axes
-- (1-based, in order), each first cropped or padded to lengths[k] (for "c2r" the last axis to
-- lengths[last] // 2 + 1, its output's length being lengths[last]).
local function transform(a, kind, inverse, axes, lengths, norm, stream)
  local temporaries, ours = {}, {}   -- the arrays made here; those that no caller sees
  local x = a
  for k, d in ipairs(axes) do
    local length = lengths[k]
    if kind == "c2r" and k == #axes then length = length // 2 + 1 end
    x = resized(x, d, length, temporaries, stream)
  end
  for _, t in ipairs(temporaries) do ours[t] = true end
  -- the axes in turns of up to three from the last; the real transform's turn (the one with
  -- the last axis) first for r2c, last for c2r
  local turns = {}
  local k = #axes
  while k >= 1 do
    local turn = {}
    for j = math.max(1, k - 2), k do turn[#turn + 1] = j end
    turns[#turns + 1] = turn
    k = turn[1] - 1
  end
  if kind == "c2r" then
    for i = 1, #turns // 2 do turns[i], turns[#turns + 1 - i] = turns[#turns + 1 - i], turns[i] end
  end
  local axis_at = {}                 -- x's axes as a's: axis p of x is a's axis axis_at[p]
  for d = 1, a.ndim do axis_at[d] = d end
  for i, turn in ipairs(turns) do
    local place_of = {}
    for p, d in ipairs(axis_at) do place_of[d] = p end
    local turn_axes, sizes = {}, {}
    for j, t in ipairs(turn) do
      turn_axes[j] = place_of[axes[t]]
      sizes[j] = lengths[t]
    end
    local turn_kind = turn[#turn] == #axes and kind or "c2c"
    local dtype = x.dtype
    if i == 1 then dtype = kind == "r2c" and real_of(a.dtype) or complex_of(a.dtype) end
    -- c2r overwrites its input: never the caller's array or a view of it
    local order
    x, order = axes_last(x, turn_axes, dtype, turn_kind == "c2r" and not ours[x], temporaries, stream)
    local out = run_plan(x, turn_kind, inverse, sizes, stream)
    temporaries[#temporaries + 1] = out
    ours[out] = true
    local moved = {}
    for p, d in ipairs(order) do moved[p] = axis_at[d] end
    axis_at = moved
    x = out
  end
  temporaries[#temporaries] = nil   -- the last output is the result
  local points = 1
  for _, length in ipairs(lengths) do points = points * length end
  normalize(x, norm, inverse, points, stream)
  local back, moved = {}, false
  for p, d in ipairs(axis_at) do
    back[d] = p
    moved = moved or p ~= d
  end
  for _, t in ipairs(temporaries) do core.free_after(t, stream) end
  return moved and x:transpose(back) or x
end

-- The functions ------------------------------------------------------------------------------

local function input(a, fname, kind)
  check_array(a, 1, fname)
  if kind == "r2c" and core.dtype(a.dtype).kind == "c" then
    argerror(1, fname, "real array expected, got " .. a.dtype, 3)
  end
  if a.ndim == 0 then argerror(1, fname, "array of at least one dimension expected, got a 0-d array", 3) end
end

-- fft-like functions of one axis: {n =, axis =, norm =, stream =}
local function one_axis(fname, kind, inverse, conjugate)
  return function(a, opts)
    input(a, fname, kind)
    opts = check_options(opts, 2, fname, ONE_AXIS)
    local axis = opts.axis == nil and a.ndim or args.check_axis(opts.axis, a.ndim, 2, fname, 2)
    local norm = check_norm(opts.norm, 2, fname)
    local n = opts.n
    if n ~= nil then check_size(n, "option 'n'", 2, fname)
    elseif kind == "c2r" then n = 2 * (a.shape[axis] - 1)
    else n = a.shape[axis] end
    if n < 1 then argerror(1, fname, ("invalid number of data points (%d)"):format(n), 2) end
    if not conjugate then return transform(a, kind, inverse, {axis}, {n}, norm, opts.stream) end
    -- hfft, ihfft: irfft of the conjugate, the conjugate of rfft, with the norm's direction
    -- swapped (NumPy's definitions)
    local stream = opts.stream
    norm = norm == "backward" and "forward" or norm == "forward" and "backward" or norm
    if kind == "c2r" then
      local c = ga.conj(a, {stream = stream})
      local r = transform(c, kind, inverse, {axis}, {n}, norm, stream)
      if c ~= a then core.free_after(c, stream) end
      return r
    end
    local r = transform(a, kind, inverse, {axis}, {n}, norm, stream)
    local c = ga.conj(r, {stream = stream})
    core.free_after(r, stream)
    return c
  end
end

-- fft-like functions of several axes: {s =, axes =, norm =, stream =}; default_axes(ndim)
local function several_axes(fname, kind, inverse, two)
  return function(a, opts)
    input(a, fname, kind)
    opts = check_options(opts, 2, fname, AXES)
    local axes
    if opts.axes ~= nil then axes = check_axes(opts.axes, a.ndim, 2, fname)
    elseif opts.s ~= nil and type(opts.s) == "table" and not two then
      axes = {}
      for k = 1, #opts.s do axes[k] = a.ndim - #opts.s + k end
      if #opts.s > a.ndim then argerror(2, fname, "option 's' has more sizes than the array has axes", 2) end
    elseif two then
      if a.ndim < 2 then argerror(1, fname, ("array of at least 2 dimensions expected, got %d"):format(a.ndim), 2) end
      axes = {a.ndim - 1, a.ndim}
    else
      axes = {}
      for d = 1, a.ndim do axes[d] = d end
    end
    if #axes == 0 then argerror(2, fname, "option 'axes' names no axis", 2) end
    local lengths = {}
    if opts.s ~= nil then
      if type(opts.s) ~= "table" or #opts.s ~= #axes then
        argerror(2, fname, "option 's' must be a list of one size an axis", 2)
      end
      for k = 1, #axes do lengths[k] = check_size(opts.s[k], "option 's' sizes", 2, fname) end
    else
      for k, d in ipairs(axes) do lengths[k] = a.shape[d] end
      if kind == "c2r" then lengths[#axes] = 2 * (a.shape[axes[#axes]] - 1) end
    end
    for k = 1, #axes do
      if lengths[k] < 1 then
        argerror(1, fname, ("invalid number of data points (%d)"):format(lengths[k]), 2)
      end
    end
    return transform(a, kind, inverse, axes, lengths, check_norm(opts.norm, 2, fname), opts.stream)
  end
end

M.fft = one_axis("fft", "c2c", false)
M.ifft = one_axis("ifft", "c2c", true)
M.rfft = one_axis("rfft", "r2c", false)
M.irfft = one_axis("irfft", "c2r", true)
M.hfft = one_axis("hfft", "c2r", true, true)
M.ihfft = one_axis("ihfft", "r2c", false, true)
M.fft2 = several_axes("fft2", "c2c", false, true)
M.ifft2 = several_axes("ifft2", "c2c", true, true)
M.rfft2 = several_axes("rfft2", "r2c", false, true)
M.irfft2 = several_axes("irfft2", "c2r", true, true)
M.fftn = several_axes("fftn", "c2c", false)
M.ifftn = several_axes("ifftn", "c2c", true)
M.rfftn = several_axes("rfftn", "r2c", false)
M.irfftn = several_axes("irfftn", "c2r", true)

-- Frequencies and shifts ---------------------------------------------------------------------

local frequencies = {}   -- "full" or "half" -> the program
local function frequency_program(half)
  local key = half and "half" or "full"
  frequencies[key] = frequencies[key] or ew.program{
    name = "fftfreq", out = "float64",
    expr = half and "(double)lg_i * scale" or "(double)(lg_i < (n + 1) / 2 ? lg_i : lg_i - n) * scale",
    operands = {{name = "n", dtype = "int64", scalar = true}, {name = "scale", dtype = "float64", scalar = true}},
  }
  return frequencies[key]
end

local function sample_frequencies(fname, half)
  return function(n, d)
    check_size(n, "n", 1, fname)
    if d == nil then d = 1.0 end
    if type(d) ~= "number" then argerror(2, fname, "sample spacing d must be a number, got " .. typename(d)) end
    local out = ga.empty({half and n // 2 + 1 or n}, "float64")
    ew.launch(frequency_program(half), out, nil, fname, n, 1.0 / (n * d))
    return out
  end
end

M.fftfreq = sample_frequencies("fftfreq", false)
M.rfftfreq = sample_frequencies("rfftfreq", true)

local function shift(fname, sign)
  return function(x, opts)
    check_array(x, 1, fname)
    opts = check_options(opts, 2, fname, SHIFT)
    local axes
    if opts.axes == nil then
      axes = {}
      for d = 1, x.ndim do axes[d] = d end
    elseif math.type(opts.axes) == "integer" then axes = {args.check_axis(opts.axes, x.ndim, 2, fname)}
    else axes = check_axes(opts.axes, x.ndim, 2, fname) end
    local result = x
    for _, d in ipairs(axes) do
      local n = x.shape[d]
      local rolled = ga.roll(result, sign > 0 and n // 2 or -(n // 2), {axis = d, stream = opts.stream})
      if result ~= x then core.free_after(result, opts.stream) end
      result = rolled
    end
    if result == x then result = x:copy() end
    return result
  end
end

M.fftshift = shift("fftshift", 1)
M.ifftshift = shift("ifftshift", -1)

function M.install(gpu)
  ga = gpu.gpuarray
  local public = {}   -- the functions, without install
  for name, f in pairs(M) do if name ~= "install" then public[name] = f end end
  gpu.fft, ga.fft = public, public
end

return M
