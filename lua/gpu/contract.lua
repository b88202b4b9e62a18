-- gpu.contract: NumPy's contractions of arrays along axes, built on gpuarray.matmul:
--   gpuarray.tensordot(a, b[, axes[, {stream =}]]) -> the sums of products over axes: an
--     integer N (default 2: a's last N with b's first N) or a pair {a_axes, b_axes} of axes
--     (1-based, negatives from the end; each a number or a list); a's other axes, then b's
--   gpuarray.inner(a, b[, {stream =}]) -> tensordot over a's and b's last axes (a 0-d
--     operand multiplies the other)
--   gpuarray.einsum(subscripts, op1, op2, ...[, {stream =}]) -> NumPy's Einstein summation:
--     "ij,jk->ik" (explicit) or "ij,jk" (implicit: the labels met once, sorted), repeated
--     labels in one operand (diagonals: "ii->i", "ii"), labels summed away, size-1 axes
--     broadcast, and "..." for broadcast axes ("...ij,...jk->...ik")
-- Each product is NumPy's: the operands' axes are permuted into (batch, kept, summed) groups,
-- each group merged into one axis (a view where the strides allow, else a copy), and one
-- matmul (cuBLAS for big products) makes the result.  einsum takes the operands pairwise
-- from the left, as NumPy's unoptimized path does, after summing away the labels only one
-- operand has; diagonals are strided views.  Results have the dtype promote_types gives the
-- operands, as matmul's (integer sums wrap to it); they are new arrays, never views.

local core = require "gpu.core"
local args = require "gpu.args"
local promote = require "gpu.promote"
local matmul = require("gpu.matmul").matmul
local reduction = require "gpu.reduction"

local M = {}

local argerror, check_array, check_options = args.argerror, reduction.check_array,
                                             reduction.check_options
local STREAM = {stream = true}
local shape_text = promote.shape_text

-- Axis lists and views ------------------------------------------------------------------

-- The product of the lengths of x's axes in list.
local function length_of(shape, list)
  local n = 1
  for _, d in ipairs(list) do n = n * shape[d] end
  return n
end

-- x with its axes in the groups' order, each group (a list of axes) merged into one axis:
-- a view when the strides allow, else a view of a copy (then also returned, to be freed).
local function grouped(x, groups, stream)
  local shape, strides = x.shape, x.strides
  local new_shape, new_strides, mergeable = {}, {}, true
  for g, group in ipairs(groups) do
    local last                                       -- the group's last axis longer than 1
    for _, d in ipairs(group) do
      if shape[d] ~= 1 then
        if last and strides[last] ~= strides[d] * shape[d] then mergeable = false end
        last = d
      end
    end
    new_shape[g] = length_of(shape, group)
    new_strides[g] = last and strides[last] or x.itemsize
  end
  if mergeable then return core.array_view(x, 0, x.dtype, new_shape, new_strides) end
  local order_shape, order_strides = {}, {}
  for _, group in ipairs(groups) do
    for _, d in ipairs(group) do
      order_shape[#order_shape + 1], order_strides[#order_strides + 1] = shape[d], strides[d]
    end
  end
  local copy = core.array_view(x, 0, x.dtype, order_shape, order_strides):copy({stream = stream})
  return core.array_view(copy, 0, x.dtype, new_shape), copy
end

-- The product of a and b summed over the axes a_sum of a and b_sum of b (paired in order),
-- with the axes `batch` of each paired as a stack (a_batch and b_batch, of equal lengths):
-- a new array of shape (batch, a_free, b_free), of the dtype of the operands' product.
local function batched_product(a, a_batch, a_free, a_sum, b, b_batch, b_sum, b_free, stream)
  local a_shape, b_shape = a.shape, b.shape
  local out_dtype = promote.promote_types(a.dtype, b.dtype)
  local shape = {}
  for _, d in ipairs(a_batch) do shape[#shape + 1] = a_shape[d] end
  for _, d in ipairs(a_free) do shape[#shape + 1] = a_shape[d] end
  for _, d in ipairs(b_free) do shape[#shape + 1] = b_shape[d] end
  local batches, n, k, m = length_of(a_shape, a_batch), length_of(a_shape, a_free),
                           length_of(a_shape, a_sum), length_of(b_shape, b_free)
  if batches * n * m == 0 then return core.array_empty(shape, out_dtype) end
  if k == 0 then return core.array_zeros(shape, out_dtype) end       -- empty sums
  local result = core.array_empty(shape, out_dtype)
  local x, x_copy, y, y_copy, out
  if #a_batch > 0 then
    x, x_copy = grouped(a, {a_batch, a_free, a_sum}, stream)
    y, y_copy = grouped(b, {b_batch, b_sum, b_free}, stream)
    out = core.array_view(result, 0, out_dtype, {batches, n, m})
  else
    x, x_copy = grouped(a, {a_free, a_sum}, stream)
    y, y_copy = grouped(b, {b_sum, b_free}, stream)
    out = core.array_view(result, 0, out_dtype, {n, m})
  end
  matmul(x, y, {out = out, stream = stream})
  if x_copy then core.free_after(x_copy, stream) end
  if y_copy then core.free_after(y_copy, stream) end
  return result
end

-- The axes 1..ndim not in the set taken, in order.
local function other_axes(ndim, taken)
  local list = {}
  for d = 1, ndim do
    if not taken[d] then list[#list + 1] = d end
  end
  return list
end

-- tensordot -----------------------------------------------------------------------------

-- A list of axes of an ndim-d array from v (a number or a list of them), 1-based and
-- checked; `which` names the operand in messages.
local function axis_list(v, ndim, which)
  local list = type(v) == "table" and v or {v}
  local axes, seen = {}, {}
  for i, axis in ipairs(list) do
    if math.type(axis) ~= "integer" then
      argerror(3, "tensordot", ("axes of %s must be integers, got %s"):format(which,
               math.type(axis) or args.typename(axis)), 3)
    end
    local d = axis < 0 and ndim + 1 + axis or axis
    if d < 1 or d > ndim then
      argerror(3, "tensordot", ("axis %d is out of range for %s, a %d-d array"):format(axis, which, ndim), 3)
    end
    if seen[d] then argerror(3, "tensordot", ("repeated axis %d of %s"):format(axis, which), 3) end
    seen[d] = true
    axes[i] = d
  end
  return axes, seen
end

-- The summed axes of a and b that tensordot's argument axes names, and the sets of them.
local function tensordot_axes(axes, a_ndim, b_ndim)
  if axes == nil then axes = 2 end
  if math.type(axes) == "integer" then
    if axes < 0 or axes > a_ndim or axes > b_ndim then
      argerror(3, "tensordot", ("axes %d is out of range for arrays of %d and %d dimensions")
                               :format(axes, a_ndim, b_ndim), 2)
    end
    local a_axes, b_axes = {}, {}
    for i = 1, axes do a_axes[i], b_axes[i] = a_ndim - axes + i, i end
    return a_axes, b_axes
  end
  if type(axes) ~= "table" or #axes ~= 2 then
    argerror(3, "tensordot", "axes must be an integer or a pair {a_axes, b_axes}, got "
                             .. (type(axes) == "table" and "a table" or args.typename(axes)), 2)
  end
  local a_axes = axis_list(axes[1], a_ndim, "a")
  local b_axes = axis_list(axes[2], b_ndim, "b")
  if #a_axes ~= #b_axes then
    argerror(3, "tensordot", ("axes of a and b must be lists of one length, got %d and %d")
                             :format(#a_axes, #b_axes), 2)
  end
  return a_axes, b_axes
end

-- The checked options of a contraction of two operands: opts, or axes when it is an option
-- table ({} and tables with keys but no first element), at argument n.
local function two_operand_call(fname, a, b, axes, opts, n)
  check_array(a, 1, fname)
  check_array(b, 2, fname)
  if opts == nil and type(axes) == "table" and axes[1] == nil then axes, opts = nil, axes end
  return axes, check_options(opts, n, fname, STREAM, 2)
end

-- gpuarray.tensordot(a, b[, axes[, {stream =}]])
function M.tensordot(a, b, axes, opts)
  axes, opts = two_operand_call("tensordot", a, b, axes, opts, 4)
  local a_shape, b_shape = a.shape, b.shape
  local a_sum, b_sum = tensordot_axes(axes, #a_shape, #b_shape)
  local a_taken, b_taken = {}, {}
  for i, d in ipairs(a_sum) do
    local e = b_sum[i]
    if a_shape[d] ~= b_shape[e] then
      argerror(3, "tensordot", ("shape-mismatch for sum: axis %d of a has length %d, axis %d of b %d")
                               :format(d, a_shape[d], e, b_shape[e]))
    end
    a_taken[d], b_taken[e] = true, true
  end
  return batched_product(a, {}, other_axes(#a_shape, a_taken), a_sum, b, {}, b_sum,
                         other_axes(#b_shape, b_taken), opts.stream)
end

-- gpuarray.inner(a, b[, {stream =}]): NumPy's, tensordot over the last axes; a 0-d operand
-- multiplies the other.
function M.inner(a, b, opts)
  local _
  _, opts = two_operand_call("inner", a, b, nil, opts, 3)
  local a_nd, b_nd = a.ndim, b.ndim
  if a_nd == 0 or b_nd == 0 then
    return batched_product(a, {}, other_axes(a_nd, {}), {}, b, {}, {}, other_axes(b_nd, {}), opts.stream)
  end
  local a_shape, b_shape = a.shape, b.shape
  if a_shape[a_nd] ~= b_shape[b_nd] then
    argerror(2, "inner", ("the last axes differ: %s and %s (%d and %d)")
                         :format(shape_text(a_shape), shape_text(b_shape), a_shape[a_nd], b_shape[b_nd]))
  end
  return batched_product(a, {}, other_axes(a_nd, {[a_nd] = true}), {a_nd}, b, {}, {b_nd},
                         other_axes(b_nd, {[b_nd] = true}), opts.stream)
end

-- einsum --------------------------------------------------------------------------------

-- Labels are the subscripts' letters; the broadcast axes that "..." stands for are labels
-- too, named ELLIPSIS .. 1, ELLIPSIS .. 2, ... (of the widest "..."), right-aligned as
-- broadcasting aligns axes.
local ELLIPSIS = "..."

-- NumPy's words for a mistake in the subscripts, as an error of argument 1.
local STRING = "einstein sum subscripts string "
local function subscripts_error(msg)
  argerror(1, "einsum", msg, 3)
end

-- The labels of one term of the subscripts (operand k's, or the output's for k = nil): a
-- list of letters and ELLIPSIS, and whether it has one.
local function parse_term(term, k)
  local labels, ellipsis, i = {}, false, 1
  local where = k and (" for operand %d"):format(k) or " for the output"
  while i <= #term do
    local c = term:sub(i, i)
    if c == "." then
      if term:sub(i, i + 2) ~= "..." then
        subscripts_error(STRING .. "contains a '.' that is not part of an ellipsis ('...')" .. where)
      end
      if ellipsis then
        subscripts_error(STRING .. "contains more than one ellipsis ('...')" .. where)
      end
      ellipsis = true
      labels[#labels + 1] = ELLIPSIS
      i = i + 3
    elseif c:match("^%a$") then
      labels[#labels + 1] = c
      i = i + 1
    else
      subscripts_error(("invalid subscript '%s' in %s, subscripts must be letters")
                       :format(c, STRING:sub(1, -2)))
    end
  end
  return labels, ellipsis
end

-- The number of axes that the "..." of operand k's term stands for, of its ndim; checked.
local function broadcast_axes(term, ndim, k)
  local letters = #term
  local has_ellipsis = false
  for _, l in ipairs(term) do
    if l == ELLIPSIS then letters, has_ellipsis = letters - 1, true end
  end
  if letters > ndim then
    subscripts_error((STRING .. "contains too many subscripts for operand %d"):format(k))
  end
  if not has_ellipsis and letters < ndim then
    subscripts_error(("operand %d has more dimensions than subscripts given in einstein sum, but no '...' "
                      .. "ellipsis provided to broadcast the extra dimensions"):format(k))
  end
  return ndim - letters
end

-- A term's labels with its ELLIPSIS expanded into `broadcast` labels of the `width` ones.
local function expand(term, broadcast, width)
  local labels = {}
  for _, l in ipairs(term) do
    if l == ELLIPSIS then
      for e = width - broadcast + 1, width do labels[#labels + 1] = ELLIPSIS .. e end
    else
      labels[#labels + 1] = l
    end
  end
  return labels
end

-- A label as messages name it.
local function label_text(label)
  if #label == 1 then return ("label '%s'"):format(label) end
  return "a broadcast ('...') dimension"
end

-- The operands (einsum's arguments after the subscripts) and the options.
local function einsum_operands(...)
  local n = select("#", ...)
  local operands, opts = {...}, nil
  if n > 0 and getmetatable(operands[n]) ~= core.types.GPUArray and type(operands[n]) == "table" then
    opts = operands[n]
    operands[n] = nil
    n = n - 1
  end
  for k = 1, n do check_array(operands[k], k + 1, "einsum") end
  return operands, check_options(opts, n + 2, "einsum", STREAM, 2)
end

-- The view of operand k (x, its axes labelled labels) with one axis a label: repeated labels
-- make a diagonal (their strides added), and axes of 1 that broadcast against a longer
-- label are dropped; its labels.
local function operand_view(x, labels, sizes)
  local shape, strides = x.shape, x.strides
  local at, view_labels, view_shape, view_strides = {}, {}, {}, {}
  for d, label in ipairs(labels) do
    if not (shape[d] == 1 and sizes[label] ~= 1) then
      local i = at[label]
      if i then
        view_strides[i] = view_strides[i] + strides[d]
      else
        i = #view_labels + 1
        at[label], view_labels[i], view_shape[i], view_strides[i] = i, label, shape[d], strides[d]
      end
    end
  end
  return core.array_view(x, 0, x.dtype, view_shape, view_strides), view_labels
end

-- The sizes of the labels, checked (diagonals of equal axes, broadcasting between operands).
local function label_sizes(operands, labels)
  local sizes = {}
  for k, x in ipairs(operands) do
    local shape, own = x.shape, {}
    for d, label in ipairs(labels[k]) do
      local n = shape[d]
      if own[label] and own[label] ~= n then
        subscripts_error(("dimensions in operand %d for collapsing index '%s' don't match (%d != %d)")
                         :format(k, label, own[label], n))
      end
      own[label] = n
    end
    for _, label in ipairs(labels[k]) do
      local n, known = own[label], sizes[label]
      if known == nil or known == 1 then sizes[label] = n
      elseif n ~= 1 and n ~= known then
        subscripts_error(("size of %s for operand %d (%d) does not match previous terms (%d)")
                         :format(label_text(label), k, n, known))
      end
    end
  end
  return sizes
end

-- The output's labels: given (explicit), else the broadcast labels and then the letters met
-- once, sorted (implicit).
local function output_labels(output_term, has_output, width, counts)
  if not has_output then
    local letters = {}
    for label, count in pairs(counts) do
      if #label == 1 and count == 1 then letters[#letters + 1] = label end
    end
    table.sort(letters)
    local labels = {}
    for e = 1, width do labels[e] = ELLIPSIS .. e end
    for _, l in ipairs(letters) do labels[#labels + 1] = l end
    return labels
  end
  local term, has_ellipsis = parse_term(output_term, nil)
  if width > 0 and not has_ellipsis then      -- NumPy sums no broadcast axes away
    subscripts_error("output has more dimensions than subscripts given in einstein sum, but no '...' "
                     .. "ellipsis provided to broadcast the extra dimensions")
  end
  local seen = {}
  for _, l in ipairs(term) do
    if l ~= ELLIPSIS then
      if seen[l] then
        subscripts_error((STRING .. "includes output subscript '%s' multiple times"):format(l))
      end
      if not counts[l] then
        subscripts_error((STRING .. "included output subscript '%s' which never appeared in an input")
                         :format(l))
      end
      seen[l] = true
    end
  end
  return expand(term, width, width)
end

-- The terms of the subscripts: the operands' and the output's (nil in implicit mode).
local function split_subscripts(subscripts, count)
  if type(subscripts) ~= "string" then
    argerror(1, "einsum", "subscripts string expected, got " .. args.typename(subscripts), 3)
  end
  local s = subscripts:gsub("%s", "")
  local inputs, output = s, nil
  local arrow = s:find("->", 1, true)
  if arrow then
    inputs, output = s:sub(1, arrow - 1), s:sub(arrow + 2)
    if output:find("->", 1, true) then subscripts_error(STRING .. "contains more than one '->'") end
  end
  local terms = {}
  for term in (inputs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = term end
  if #terms < count then
    subscripts_error("more operands provided to einstein sum function than specified in the subscripts "
                     .. "string")
  elseif #terms > count then
    subscripts_error("fewer operands provided to einstein sum function than specified in the subscripts "
                     .. "string")
  end
  return terms, output
end

-- x (its axes labelled labels) with the labels that `needed` lacks summed away: a new array
-- (x times a vector of ones), its labels and true; or x, labels and false.
local function sum_away(x, labels, needed, stream)
  local kept, summed, kept_labels = {}, {}, {}
  for d, label in ipairs(labels) do
    if needed[label] then
      kept[#kept + 1], kept_labels[#kept_labels + 1] = d, label
    else
      summed[#summed + 1] = d
    end
  end
  if #summed == 0 then return x, labels, false end
  local ones = core.array_empty({length_of(x.shape, summed)}, x.dtype)
  ones:fill(x.dtype == "bool" and true or 1, {stream = stream})
  local result = batched_product(x, {}, kept, summed, ones, {}, {1}, {}, stream)
  core.free_after(ones, stream)
  return result, kept_labels, true
end

-- The product of x and y (their labels), summed over the labels both have that `needed`
-- lacks: a new array, its labels the batch ones (both have them; in the output's order
-- first), then x's others, then y's.
local function pair_product(x, x_labels, y, y_labels, needed, order, stream)
  local y_axis = {}
  for d, label in ipairs(y_labels) do y_axis[label] = d end
  local batch, x_free, x_sum, y_sum, x_in_y = {}, {}, {}, {}, {}
  for d, label in ipairs(x_labels) do
    local e = y_axis[label]
    if e then
      x_in_y[label] = true
      if needed[label] then batch[#batch + 1] = label
      else x_sum[#x_sum + 1], y_sum[#y_sum + 1] = d, e end
    else
      x_free[#x_free + 1] = d
    end
  end
  table.sort(batch, function(p, q) return (order[p] or math.huge) < (order[q] or math.huge) end)
  local x_batch, y_batch, labels = {}, {}, {}
  local x_axis = {}
  for d, label in ipairs(x_labels) do x_axis[label] = d end
  for i, label in ipairs(batch) do
    x_batch[i], y_batch[i], labels[i] = x_axis[label], y_axis[label], label
  end
  for _, d in ipairs(x_free) do labels[#labels + 1] = x_labels[d] end
  local y_free = {}
  for e, label in ipairs(y_labels) do
    if not x_in_y[label] then y_free[#y_free + 1], labels[#labels + 1] = e, label end
  end
  return batched_product(x, x_batch, x_free, x_sum, y, y_batch, y_sum, y_free, stream), labels
end

-- gpuarray.einsum(subscripts, op1, op2, ...[, {stream =}])
function M.einsum(subscripts, ...)
  local operands, opts = einsum_operands(...)
  local stream = opts.stream
  local terms, output_term = split_subscripts(subscripts, #operands)
  local parsed, broadcast, width = {}, {}, 0
  for k, term in ipairs(terms) do
    parsed[k] = parse_term(term, k)
    broadcast[k] = broadcast_axes(parsed[k], operands[k].ndim, k)
    width = math.max(width, broadcast[k])
  end
  local labels, counts = {}, {}
  for k = 1, #operands do
    labels[k] = expand(parsed[k], broadcast[k], width)
    for _, label in ipairs(labels[k]) do counts[label] = (counts[label] or 0) + 1 end
  end
  local output = output_labels(output_term, output_term ~= nil, width, counts)
  local sizes = label_sizes(operands, labels)
  local dtype = operands[1].dtype
  for k = 2, #operands do dtype = promote.promote_types(dtype, operands[k].dtype) end
  local out_shape, order = {}, {}
  for i, label in ipairs(output) do out_shape[i], order[label] = sizes[label], i end
  for _, n in pairs(sizes) do
    if n == 0 then return core.array_zeros(out_shape, dtype) end
  end
  -- needed[k]: the labels wanted after operand k joins: the output's and later operands'
  local views, needed = {}, {}
  local later = {}
  for _, label in ipairs(output) do later[label] = true end
  for k = #operands, 1, -1 do
    views[k], labels[k] = operand_view(operands[k], labels[k], sizes)
    needed[k] = {}
    for label in pairs(later) do needed[k][label] = true end
    for _, label in ipairs(labels[k]) do later[label] = true end
  end
  -- the labels only one operand has, and the output lacks, are summed away first
  local function others_need(k)
    local keep = {}
    for label in pairs(needed[k]) do keep[label] = true end
    for j = 1, k - 1 do
      for _, label in ipairs(labels[j]) do keep[label] = true end
    end
    return keep
  end
  local x, x_labels, owned = sum_away(views[1], labels[1], others_need(1), stream)
  for k = 2, #operands do
    local y, y_labels, y_owned = sum_away(views[k], labels[k], others_need(k), stream)
    local product
    product, x_labels = pair_product(x, x_labels, y, y_labels, needed[k], order, stream)
    if owned then core.free_after(x, stream) end
    if y_owned then core.free_after(y, stream) end
    x, owned = product, true
  end
  -- the output's order: the result itself where it is in it, else a copy of a transpose
  local x_strides = x.strides
  local axis = {}
  for d, label in ipairs(x_labels) do axis[label] = d end
  local in_order, strides = #x_labels == #output, {}
  for i, label in ipairs(output) do
    if axis[label] ~= i then in_order = false end
    strides[i] = x_strides[axis[label]]
  end
  if in_order and owned then return x end
  local result = core.array_view(x, 0, x.dtype, out_shape, strides):copy({stream = stream})
  if owned then core.free_after(x, stream) end
  return result
end

function M.install(gpu)
  local ga = gpu.gpuarray
  ga.tensordot, ga.inner, ga.einsum = M.tensordot, M.inner, M.einsum
end

return M
