-- gpuarray.tensordot, inner and einsum (gpu.contract), checked against a brute-force einsum
-- in Lua: every combination of the labels' values, its product added to its output element.
local helpers = require "helpers"
local gpu = helpers.gpu
local A = require "array_reference"

local ga = gpu.gpuarray

-- Random elements of dtype, as stored: small integers (no sum wraps), floats in [-1, 1).
local function random_value(dtype)
  if dtype == "int32" then return math.random(-20, 20) end
  if dtype == "float32" then return A.f32(math.random() * 2 - 1) end
  if dtype == "complex64" then
    return gpu.complex(A.f32(math.random() * 2 - 1), A.f32(math.random() * 2 - 1))
  end
  return math.random() * 2 - 1
end

local function size_of(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- The row-major strides of shape, in elements.
local function strides_of(shape)
  local strides, s = {}, 1
  for d = #shape, 1, -1 do strides[d], s = s, s * shape[d] end
  return strides
end

-- The multi-indices of shape (1-based), in row-major order: fn(index) for each.
local function each_index(shape, fn)
  local index = {}
  for d = 1, #shape do index[d] = 1 end
  for _ = 1, size_of(shape) do
    fn(index)
    for d = #shape, 1, -1 do
      index[d] = index[d] + 1
      if index[d] <= shape[d] then break end
      index[d] = 1
    end
  end
end

-- An operand: {array =, values = (row-major, as stored), shape =}.  layout "transposed" makes
-- it a transposed view of an array of the reversed shape, "sliced" every second element along
-- the first axis of an array twice as long there.
local function operand(shape, dtype, layout)
  local base_shape = {table.unpack(shape)}
  if layout == "transposed" then
    for d = 1, #shape do base_shape[d] = shape[#shape + 1 - d] end
  elseif layout == "sliced" then
    base_shape[1] = 2 * shape[1]
  end
  local base_values = {}
  for i = 1, size_of(base_shape) do base_values[i] = random_value(dtype) end
  local base = gpu.to_gpu(gpu.host.from_table(base_values, dtype)):reshape(base_shape)
  local array, values, base_strides = base, {}, strides_of(base_shape)
  if layout == nil then return {array = base, values = base_values, shape = shape} end
  if layout == "transposed" then array = base:transpose() else array = base:slice(1, -1, 2) end
  each_index(shape, function(index)
    local at = 1
    for d = 1, #shape do
      local i = layout == "transposed" and index[#shape + 1 - d] or index[d]
      if layout == "sliced" and d == 1 then i = 2 * i - 1 end
      at = at + (i - 1) * base_strides[d]
    end
    values[#values + 1] = base_values[at]
  end)
  return {array = array, values = values, shape = shape}
end

-- The brute-force einsum of explicit letters-only subscripts over operands (axes of 1
-- broadcast): the output's values (row-major), each one's sum of |terms| and number of terms,
-- and the output's shape.
local function reference(subscripts, operands, dtype)
  local inputs, output = subscripts:match("^(.*)%->(.*)$")
  local terms = {}
  for term in (inputs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = term end
  local sizes, labels = {}, {}
  for k, term in ipairs(terms) do
    for d = 1, #term do
      local l, n = term:sub(d, d), operands[k].shape[d]
      if sizes[l] == nil then labels[#labels + 1] = l end
      if sizes[l] == nil or sizes[l] == 1 then sizes[l] = n end
    end
  end
  local out_shape, label_shape = {}, {}
  for d = 1, #output do out_shape[d] = sizes[output:sub(d, d)] end
  for i, l in ipairs(labels) do label_shape[i] = sizes[l] end
  local complex = dtype == "complex64"
  local sums, scales, counts = {}, {}, {}
  for i = 1, size_of(out_shape) do
    sums[i], scales[i], counts[i] = complex and gpu.complex(0, 0) or (dtype == "int32" and 0 or 0.0), 0.0, 0
  end
  local out_strides = strides_of(out_shape)
  each_index(label_shape, function(index)
    local value = {}
    for i, l in ipairs(labels) do value[l] = index[i] end
    local product
    for k, term in ipairs(terms) do
      local shape, strides, at = operands[k].shape, strides_of(operands[k].shape), 1
      for d = 1, #term do
        if shape[d] > 1 then at = at + (value[term:sub(d, d)] - 1) * strides[d] end
      end
      local x = operands[k].values[at]
      product = product == nil and x or product * x
    end
    if product == nil then product = 1 end
    local o = 1
    for d = 1, #output do o = o + (value[output:sub(d, d)] - 1) * out_strides[d] end
    sums[o] = sums[o] + product
    scales[o] = scales[o] + (complex and product:abs() or math.abs(product))
    counts[o] = counts[o] + 1
  end)
  if dtype == "int32" then
    for i = 1, #sums do sums[i] = A.wrap("int32", sums[i]) end
  end
  return sums, scales, counts, out_shape
end

local EPS = {float32 = 2 ^ -23, complex64 = 2 ^ -23, float64 = 2 ^ -52}

-- Asserts that got (a device array) is the reference's result: of that shape and dtype,
-- integers exact, floats within EPS times (terms + 4) times the sum of |terms|.
local function check(got, subscripts, operands, dtype, what)
  local want, scales, counts, shape = reference(subscripts, operands, dtype)
  assert.are.same(shape, got.shape, what .. ": shape")
  assert.are.equal(dtype, got.dtype, what .. ": dtype")
  local h = got:get()
  for i = 1, #want do
    local g, w = h[i], want[i]
    local tol = (EPS[dtype] or 0) * (counts[i] + 4) * scales[i]
    if dtype == "complex64" then
      assert(math.abs(g.re - w.re) <= tol and math.abs(g.im - w.im) <= tol,
             ("%s #%d: got %s, expected %s"):format(what, i, tostring(g), tostring(w)))
    elseif tol > 0 then
      assert(math.abs(g - w) <= tol, ("%s #%d: got %.17g, expected %.17g"):format(what, i, g, w))
    else
      assert(g == w, ("%s #%d: got %s, expected %s"):format(what, i, tostring(g), tostring(w)))
    end
  end
end

-- einsum cases: subscripts, operand shapes (a shape or {shape, layout}), and the explicit,
-- letters-only subscripts of the reference where they differ.
local CASES = {
  {"ij,jk->ik", {{3, 4}, {4, 5}}},
  {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
  {"ii", {{4, 4}}, "ii->"},
  {"ii->i", {{4, 4}}},
  {"ij->ji", {{3, 4}}},
  {"ij->", {{3, 4}}},
  {"i,j->ij", {{3}, {4}}},
  {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
  {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, "aij,ajk->aik"},
  {"...ij,...jk->...ik", {{2, 3, 4}, {4, 5}}, "aij,jk->aik"},
  {"...ij,...jk", {{1, 3, 4}, {2, 4, 5}}, "aij,ajk->aik"},
  {"ij,jk", {{3, 4}, {4, 5}}, "ij,jk->ik"},
  {"ba", {{3, 4}}, "ba->ab"},
  {"bA,bc", {{3, 2}, {3, 4}}, "bA,bc->Ac"},
  {"i,i", {{7}, {7}}, "i,i->"},
  {"ij,ij->ij", {{1, 4}, {3, 4}}},
  {"ii,ij->j", {{3, 3}, {1, 4}}},
  {"iij,kj->ik", {{3, 3, 4}, {2, 4}}},
  {"ijk,jil->kl", {{2, 3, 4}, {3, 2, 5}}},
  {"ij,ij->i", {{3, 5}, {3, 5}}},
  {"bij,bij->b", {{2, 3, 4}, {2, 3, 4}}},
  {"ijk,k->i", {{2, 3, 4}, {4}}},
  {"ij,jk->ki", {{3, 4}, {4, 5}}},
  {"ij,jk->ik", {{{3, 4}, "transposed"}, {{4, 5}, "sliced"}}},
  {"bij,bjk->bki", {{{2, 3, 4}, "sliced"}, {{2, 4, 5}, "transposed"}}},
  {"ii->i", {{{4, 4}, "transposed"}}},
  {",ij->ij", {{}, {3, 4}}},
  {"->", {{}}},
}

-- The operands of a case, of dtype.
local function operands_of(shapes, dtype)
  local list = {}
  for k, s in ipairs(shapes) do
    local layout
    if type(s[1]) == "table" then s, layout = s[1], s[2] end
    list[k] = operand(s, dtype, layout)
  end
  return list
end

local function arrays_of(operands)
  local list = {}
  for k, op in ipairs(operands) do list[k] = op.array end
  return list
end

describe("gpuarray.einsum", function()
  for _, dtype in ipairs{"int32", "float32", "float64"} do
    helpers.gpu_it("matches the brute-force reference, " .. dtype, function()
      for _, case in ipairs(CASES) do
        local operands = operands_of(case[2], dtype)
        local got = ga.einsum(case[1], table.unpack(arrays_of(operands)))
        check(got, case[3] or case[1], operands, dtype, case[1])
        got:free()
      end
    end)
  end

  helpers.gpu_it("multiplies complex64 matrices, and works on a stream", function()
    local operands = operands_of({{3, 4}, {4, 2}}, "complex64")
    check(ga.einsum("ij,jk->ik", operands[1].array, operands[2].array), "ij,jk->ik", operands, "complex64",
          "complex64")
    local s = gpu.Stream()
    operands = operands_of({{2, 3, 4}, {3}}, "float32")
    local got = ga.einsum("bij,i->bj", operands[1].array, operands[2].array, {stream = s})
    s:synchronize()
    check(got, "bij,i->bj", operands, "float32", "on a stream")
  end)

  helpers.gpu_it("promotes as matmul does, and gives zeros for empty sums", function()
    local x, y = operand({3, 4}, "int32"), operand({4, 2}, "float32")
    local got = ga.einsum("ij,jk->ik", x.array, y.array)
    assert.are.equal("float64", got.dtype)
    check(got, "ij,jk->ik", {x, y}, "float64", "int32 and float32")
    local empty = ga.einsum("ij,jk->ik", ga.zeros({3, 0}, "float32"), ga.zeros({0, 5}, "float32"))
    assert.are.same({3, 5}, empty.shape)
    for i = 1, 15 do assert.are.equal(0, empty:get()[i]) end
    assert.are.same({0, 5}, ga.einsum("ij,jk", ga.zeros({0, 4}), ga.zeros({4, 5})).shape)
  end)

  helpers.gpu_it("explains bad subscripts and operands", function()
    local a, b = ga.zeros({3, 4}, "float32"), ga.zeros({4, 5}, "float32")
    local function bad(msg, ...)
      helpers.assert_error("bad argument #1 to 'einsum' (" .. msg .. ")", ga.einsum, ...)
    end
    bad("einstein sum subscripts string contains too many subscripts for operand 1", "ijk,jk", a, b)
    bad("operand 2 has more dimensions than subscripts given in einstein sum, but no '...' ellipsis "
        .. "provided to broadcast the extra dimensions", "ij,j", a, b)
    bad("einstein sum subscripts string included output subscript 'z' which never appeared in an input",
        "ij,jk->iz", a, b)
    bad("einstein sum subscripts string includes output subscript 'i' multiple times", "ij,jk->ii", a, b)
    bad("size of label 'j' for operand 2 (3) does not match previous terms (4)", "ij,jk->ik", a,
        ga.zeros({3, 5}, "float32"))
    bad("size of a broadcast ('...') dimension for operand 2 (3) does not match previous terms (2)",
        "...i,...i", ga.zeros({2, 4}), ga.zeros({3, 4}))
    bad("output has more dimensions than subscripts given in einstein sum, but no '...' ellipsis "
        .. "provided to broadcast the extra dimensions", "...ij->ij", ga.zeros({2, 3, 4}))
    assert.are.same({3, 4}, ga.einsum("...ij->ij", a).shape)        -- "..." of no axes
    bad("dimensions in operand 1 for collapsing index 'i' don't match (3 != 4)", "ii", a)
    bad("fewer operands provided to einstein sum function than specified in the subscripts string",
        "ij,jk->ik", a)
    bad("more operands provided to einstein sum function than specified in the subscripts string",
        "ij->ji", a, b)
    bad("invalid subscript '1' in einstein sum subscripts string, subscripts must be letters", "i1,jk", a, b)
    bad("einstein sum subscripts string contains a '.' that is not part of an ellipsis ('...') for operand 1",
        "..ij", a)
    bad("einstein sum subscripts string contains more than one ellipsis ('...') for the output",
        "...ij->......", a)
    helpers.assert_error("bad argument #4 to 'einsum' (unknown option 'foo')", ga.einsum, "ij,jk", a, b,
                         {foo = 1})
    helpers.assert_error("bad argument #3 to 'einsum' (GPUArray expected, got number)", ga.einsum, "ij,jk",
                         a, 5)
    b:free()
    helpers.assert_error("bad argument #3 to 'einsum' (array has been freed)", ga.einsum, "ij,jk", a, b)
  end)
end)

describe("gpuarray.einsum's subscripts", function()
  it("are checked before any array is needed", function()
    helpers.assert_error("bad argument #1 to 'einsum' (subscripts string expected, got number)", ga.einsum, 5)
    helpers.assert_error("bad argument #1 to 'einsum' (fewer operands provided to einstein sum function "
                         .. "than specified in the subscripts string)", ga.einsum, "ij")
    helpers.assert_error("bad argument #1 to 'einsum' (einstein sum subscripts string contains more than "
                         .. "one '->')", ga.einsum, "i->i->i")
  end)
end)

describe("gpuarray.tensordot", function()
  -- tensordot calls: shapes, axes (nil: the default), the reference's subscripts
  local TENSORDOT_CASES = {
    {{{2, 3, 4}, {3, 4, 5}}, nil, "ijk,jkl->il"},
    {{{3, 4}, {4, 5}}, 1, "ij,jk->ik"},
    {{{2, 3}, {4}}, 0, "ij,k->ijk"},
    {{{3, 4, 5}, {5, 3, 2}}, {{1, 3}, {2, 1}}, "ijk,kil->jl"},
    {{{3, 4}, {5, 4}}, {{-1}, {-1}}, "ij,kj->ik"},
    {{{3, 4}, {4, 3}}, {{1, 2}, {2, 1}}, "ij,ji->"},
    {{{{3, 4}, "transposed"}, {{3, 5}, "sliced"}}, {1, 1}, "ij,ik->jk"},
  }
  for _, dtype in ipairs{"int32", "float32", "float64"} do
    helpers.gpu_it("matches the brute-force reference, " .. dtype, function()
      for _, case in ipairs(TENSORDOT_CASES) do
        local operands = operands_of(case[1], dtype)
        local got = ga.tensordot(operands[1].array, operands[2].array, case[2])
        check(got, case[3], operands, dtype, "tensordot " .. case[3])
        got:free()
      end
      local s = gpu.Stream()
      local operands = operands_of({{2, 3}, {2, 3}}, dtype)
      local got = ga.tensordot(operands[1].array, operands[2].array, {stream = s})
      s:synchronize()
      check(got, "ij,ij->", operands, dtype, "tensordot on a stream")
    end)
  end

  helpers.gpu_it("explains bad axes", function()
    local a, b = ga.zeros({3, 4}), ga.zeros({4, 5})
    local function bad(msg, axes)
      helpers.assert_error("bad argument #3 to 'tensordot' (" .. msg .. ")", ga.tensordot, a, b, axes)
    end
    bad("shape-mismatch for sum: axis 1 of a has length 3, axis 1 of b 4", nil)
    bad("axes 3 is out of range for arrays of 2 and 2 dimensions", 3)
    bad("axis 3 is out of range for a, a 2-d array", {{3}, {1}})
    bad("repeated axis -1 of b", {{1, 2}, {2, -1}})
    bad("axes of a and b must be lists of one length, got 2 and 1", {{1, 2}, {1}})
    bad("axes must be an integer or a pair {a_axes, b_axes}, got string", "x")
    bad("axes of a must be integers, got float", {{1.5}, {1}})
    helpers.assert_error("bad argument #4 to 'tensordot' (unknown option 'axis')", ga.tensordot, a, b, 1,
                         {axis = 1})
    a:free()
    helpers.assert_error("bad argument #1 to 'tensordot' (array has been freed)", ga.tensordot, a, b)
  end)
end)

describe("gpuarray.inner", function()
  for _, dtype in ipairs{"int32", "float32", "float64"} do
    helpers.gpu_it("matches the brute-force reference, " .. dtype, function()
      for _, case in ipairs{{{{2, 3}, {4, 3}}, "ij,kj->ik"}, {{{5}, {5}}, "i,i->"},
                            {{{}, {2, 3}}, ",ij->ij"}, {{{2, 2, 3}, {{3}, "sliced"}}, "ijk,k->ij"},
                            {{{{3, 2}, "transposed"}, {2, 2}}, "ij,kj->ik"}} do
        local operands = operands_of(case[1], dtype)
        check(ga.inner(operands[1].array, operands[2].array), case[2], operands, dtype, "inner " .. case[2])
      end
    end)
  end

  helpers.gpu_it("explains differing last axes", function()
    local a, b = ga.zeros({3, 4}), ga.zeros({6, 3})
    helpers.assert_error("bad argument #2 to 'inner' (the last axes differ: (3,4) and (6,3) (4 and 3))",
                         ga.inner, a, b)
    helpers.assert_error("bad argument #3 to 'inner' (unknown option 'axis')", ga.inner, a, b, {axis = 1})
    b:free()
    helpers.assert_error("bad argument #2 to 'inner' (array has been freed)", ga.inner, a, b)
  end)
end)
