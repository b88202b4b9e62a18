-- NumPy's array-manipulation functions (gpu.shape): the views flip, fliplr, flipud, rot90,
-- swapaxes, moveaxis, transpose, squeeze, expand_dims, ravel, atleast_1d/2d/3d, split,
-- array_split, hsplit, vsplit and dsplit, and the copies hstack, vstack, dstack and
-- column_stack.  References are computed in Lua from NumPy's definitions: a view is checked
-- as the list of places (row-major, 1-based) of its base array that its elements read, so a
-- write through it must land at those places; joins as NumPy's concatenate of the arrays
-- NumPy's rules make of each.
local helpers = require "helpers"
local R = require "reduction_helpers"
local gpu = helpers.gpu
local ga = gpu.gpuarray
local E = helpers.assert_error

-- Item sizes 1, 2, 4, 8 and 16, integers, floats and complex numbers.
local DTYPES = {"bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64",
                "complex128"}

local function random_value(dtype)
  if dtype == "complex128" then
    return gpu.complex(math.random() * 2 - 1, math.random() * 2 - 1)
  end
  return R.random_value(dtype)
end

-- A fresh base array of shape and dtype: the array and its values as stored, row-major.
local function random_base(shape, dtype)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local flat, values = R.generate(n, dtype, function() return random_value(dtype) end)
  return flat:reshape(shape), values
end

-- An array's elements, row-major.
local function elements(a) return helpers.flat(a:get()) end

-- Reference layouts ---------------------------------------------------------------------
-- A layout is an array's shape and place(index): for an index (a list of 1-based positions)
-- the base array's row-major place of the element there.

local function size_of(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local function row_major(shape, index)
  local p = 0
  for d = 1, #shape do p = p * shape[d] + index[d] - 1 end
  return p + 1
end

local function base_layout(shape)
  return {shape = {table.unpack(shape)}, place = function(index) return row_major(shape, index) end}
end

-- Calls fn(index) for each index of shape, row-major.
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

-- The places a layout's elements read, row-major.
local function places(layout)
  local list = {}
  each_index(layout.shape, function(index) list[#list + 1] = layout.place(index) end)
  return list
end

local function copy(t) return {table.unpack(t)} end

-- axis k of the result is axis perm[k] of l
local function ref_transpose(l, perm)
  local shape = {}
  for k, d in ipairs(perm) do shape[k] = l.shape[d] end
  return {shape = shape, place = function(index)
    local j = {}
    for k, d in ipairs(perm) do j[d] = index[k] end
    return l.place(j)
  end}
end

local function ref_flip(l, axes)
  local reversed = {}
  for _, d in ipairs(axes) do reversed[d] = true end
  return {shape = copy(l.shape), place = function(index)
    local j = {}
    for d = 1, #l.shape do j[d] = reversed[d] and l.shape[d] + 1 - index[d] or index[d] end
    return l.place(j)
  end}
end

-- count elements along axis d: first, first + step, ...
local function ref_slice(l, d, first, count, step)
  local shape = copy(l.shape)
  shape[d] = count
  return {shape = shape, place = function(index)
    local j = copy(index)
    j[d] = first + (index[d] - 1) * (step or 1)
    return l.place(j)
  end}
end

-- index i along axis d, the axis gone
local function ref_select(l, d, i)
  local shape = copy(l.shape)
  table.remove(shape, d)
  return {shape = shape, place = function(index)
    local j = copy(index)
    table.insert(j, d, i)
    return l.place(j)
  end}
end

-- l's elements in row-major order, as shape (which squeeze, expand_dims, ravel and the
-- atleast functions keep)
local function ref_reshape(l, shape)
  local list = places(l)
  return {shape = copy(shape), place = function(index) return list[row_major(shape, index)] end}
end

-- One quarter turn in the plane of axes p and q, as NumPy's rot90 pictures it: the first
-- axis turns towards the second, out[.., i_p, .., i_q, ..] = m[.., i_q, .., n_q + 1 - i_p, ..].
local function ref_rot90_once(l, p, q)
  local shape = copy(l.shape)
  shape[p], shape[q] = l.shape[q], l.shape[p]
  local n_q = l.shape[q]
  return {shape = shape, place = function(index)
    local j = copy(index)
    j[p], j[q] = index[q], n_q + 1 - index[p]
    return l.place(j)
  end}
end

local function ref_rot90(l, k, p, q)
  for _ = 1, k % 4 do l = ref_rot90_once(l, p, q) end
  return l
end

-- NumPy's moveaxis: the moved axes in their new places, the others in order in the rest.
local function ref_moveaxis(l, source, destination)
  local ndim, order, moved = #l.shape, {}, {}
  for k = 1, #source do
    order[destination[k]] = source[k]
    moved[source[k]] = true
  end
  local slot = 1
  for d = 1, ndim do
    if not moved[d] then
      while order[slot] do slot = slot + 1 end
      order[slot] = d
    end
  end
  return ref_transpose(l, order)
end

-- Asserts view's shape and elements are layout's, the base's values at its places.
local function check_view(view, layout, values, what)
  assert.are.same(layout.shape, view.shape, what)
  local got, want = elements(view), places(layout)
  assert.are.equal(#want, #got, what)
  for k = 1, #want do
    if got[k] ~= values[want[k]] then
      error(("%s: element %d is %s, expected %s (the base's element %d)")
            :format(what, k, tostring(got[k]), tostring(values[want[k]]), want[k]))
    end
  end
end

-- A value of dtype other than old.
local function other_value(dtype, old)
  if dtype == "bool" then return not old end
  local v
  repeat v = random_value(dtype) until v ~= old
  return v
end

-- Stores a new value through a random element of view and checks that base (whose values
-- are values, updated here) shows it at that element's place and nothing else changed.
local function check_write_through(view, layout, base, values, dtype, what)
  if view.size == 0 then return end
  local k = math.random(view.size)
  local place = places(layout)[k]
  local v = other_value(dtype, values[place])
  view[k] = v
  values[place] = base[place]             -- as stored (rounded to the dtype)
  local got = elements(base)
  for i = 1, #values do
    if got[i] ~= values[i] then
      error(("%s: after a store through the view, the base's element %d is %s, expected %s")
            :format(what, i, tostring(got[i]), tostring(values[i])))
    end
  end
end

-- Fills the view with a new value (an elementwise kernel through it) and checks that the
-- base changed exactly at its places.
local function check_fill_through(view, layout, base, values, dtype, what)
  local v = other_value(dtype, values[1])
  view:fill(v)
  local stored                             -- v as stored (rounded to the dtype)
  for _, place in ipairs(places(layout)) do
    if stored == nil then stored = base[place] end
    values[place] = stored
  end
  local got = elements(base)
  for i = 1, #values do
    if got[i] ~= values[i] then
      error(("%s: after a fill through the view, the base's element %d is %s, expected %s")
            :format(what, i, tostring(got[i]), tostring(values[i])))
    end
  end
end

-- Views of a fresh 3 x 4 x 5 base of dtype: {array, layout, name}, contiguous and not.
local function inputs_3d(dtype)
  local base, values = random_base({3, 4, 5}, dtype)
  local L = base_layout({3, 4, 5})
  return base, values, {
    {base, L, "3-d"},
    {base:transpose(), ref_transpose(L, {3, 2, 1}), "3-d transposed"},
    {base:slice(4, 1, -2, {axis = 2}), ref_slice(L, 2, 4, 2, -2), "3-d stepped back"},
    {base:select(1, 2), ref_select(L, 1, 2), "2-d"},
    {base:select(1, 3):transpose(), ref_transpose(ref_select(L, 1, 3), {2, 1}), "2-d transposed"},
    {base:select(2, 2):slice(1, 5, 2, {axis = 2}), ref_slice(ref_select(L, 2, 2), 2, 1, 3, 2),
     "2-d stepped"},
    {base:select(1, 2):select(2, 4), ref_select(ref_select(L, 1, 2), 2, 4), "1-d strided"},
    {base:select(1, 3):select(1, 2):select(1, 5),
     ref_select(ref_select(ref_select(L, 1, 3), 1, 2), 1, 5), "0-d"},
  }
end

local function all_axes(ndim)
  local axes = {}
  for d = 1, ndim do axes[d] = d end
  return axes
end

describe("shape functions", function()
  it("lay out their views on the base's memory (stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local ga = gpu.gpuarray
      local a = ga.zeros({2, 3, 4}, "float32")
      local function show(v)
        print(table.concat(v.shape, "x"), table.concat(v.strides, ","), v.offset, v.is_contiguous)
      end
      show(ga.flip(a, {axis = {1, -1}})); show(ga.fliplr(a)); show(ga.flipud(a))
      show(ga.rot90(a)); show(ga.rot90(a, {k = 2})); show(ga.rot90(a, {k = -1, axes = {3, 2}}))
      show(ga.swapaxes(a, 1, -1)); show(a:moveaxis(1, -1)); show(ga.moveaxis(a, {3, 1}, {1, 2}))
      show(ga.transpose(a, {-1, 1, 2}))
      show(ga.expand_dims(a, {1, -1})); show(ga.squeeze(ga.expand_dims(a, {1, 3}), {axis = {-3, 1}}))
      show(ga.atleast_3d(a:select(1, 2):select(1, 3))); show(ga.atleast_2d(ga.zeros({}, "int8")))
      local p, q, r = ga.split(a, {2, -1}, {axis = 3})
      show(p); show(q); show(r)
      print(select("#", ga.array_split(a, 5, {axis = 2})), select("#", ga.hsplit(a, 3)))
      show((ga.array_split(a, 5, {axis = 2}))); show((select(5, ga.array_split(a, 5, {axis = 2}))))
      show((select(2, ga.dsplit(a, {3}))))
      local z = ga.zeros({0, 3}, "float64")
      show(ga.rot90(z)); show((select(2, ga.split(z, 3, {axis = 2})))); show(ga.flip(z))
    ]])
    assert.is_truthy(ok, out)
    assert.are.equal(table.concat({
      "2x3x4\t-48,16,-4\t60\tfalse",
      "2x3x4\t48,-16,4\t32\tfalse",
      "2x3x4\t-48,16,4\t48\tfalse",
      "3x2x4\t-16,48,4\t32\tfalse",
      "2x3x4\t-48,-16,4\t80\tfalse",
      "2x4x3\t48,-4,16\t12\tfalse",
      "4x3x2\t4,16,48\t0\tfalse",
      "3x4x2\t16,4,48\t0\tfalse",
      "4x2x3\t4,48,16\t0\tfalse",
      "4x2x3\t4,48,16\t0\tfalse",
      "1x2x3x4x1\t96,48,16,4,4\t0\ttrue",
      "2x3x4\t48,16,4\t0\ttrue",
      "1x4x1\t16,4,4\t80\ttrue",
      "1x1\t1,1\t0\ttrue",
      "2x3x1\t48,16,4\t0\tfalse",
      "2x3x2\t48,16,4\t4\tfalse",
      "2x3x1\t48,16,4\t12\tfalse",
      "5\t3",
      "2x1x4\t48,16,4\t0\tfalse",
      "2x0x4\t48,16,4\t0\tfalse",
      "2x3x2\t48,16,4\t8\tfalse",
      "3x0\t-8,24\t0\tfalse",
      "0x1\t24,8\t0\tfalse",
      "0x3\t-24,-8\t0\tfalse",
      "",
    }, "\n"), out)
  end)

  helpers.gpu_it("flip, fliplr, flipud and rot90 are views in NumPy's element order", function()
    for _, dtype in ipairs(DTYPES) do
      local base, values, inputs = inputs_3d(dtype)
      for _, input in ipairs(inputs) do
        local x, L, name = input[1], input[2], input[3]
        local what = dtype .. " " .. name
        local nd = x.ndim
        check_view(ga.flip(x), ref_flip(L, all_axes(nd)), values, what .. " flip")
        check_view(x:flip(), ref_flip(L, all_axes(nd)), values, what .. " a:flip()")
        check_view(ga.flip(x, {axis = {}}), L, values, what .. " flip of no axis")
        if nd >= 1 then
          check_view(ga.flip(x, {axis = -1}), ref_flip(L, {nd}), values, what .. " flip -1")
          check_view(ga.flipud(x), ref_flip(L, {1}), values, what .. " flipud")
        end
        if nd >= 2 then
          check_view(ga.flip(x, {axis = 2}), ref_flip(L, {2}), values, what .. " flip 2")
          check_view(x:flip({axis = {-1, 1}}), ref_flip(L, {nd, 1}), values, what .. " flip {-1, 1}")
          check_view(ga.fliplr(x), ref_flip(L, {2}), values, what .. " fliplr")
          for k = -2, 5 do
            check_view(ga.rot90(x, {k = k}), ref_rot90(L, k, 1, 2), values, what .. " rot90 k " .. k)
          end
          check_view(ga.rot90(x), ref_rot90(L, 1, 1, 2), values, what .. " rot90")
          check_view(ga.rot90(x, {axes = {2, 1}}), ref_rot90(L, 1, 2, 1), values, what .. " rot90 {2, 1}")
          check_view(ga.rot90(x, {k = 3, axes = {-1, -2}}), ref_rot90(L, 3, nd, nd - 1), values,
                     what .. " rot90 k 3 {-1, -2}")
        end
        if nd == 3 then
          check_view(ga.rot90(x, {axes = {3, 1}}), ref_rot90(L, 1, 3, 1), values, what .. " rot90 {3, 1}")
          check_view(ga.rot90(x, {k = 2, axes = {1, 3}}), ref_rot90(L, 2, 1, 3), values,
                     what .. " rot90 k 2 {1, 3}")
        end
        -- the views share the base's memory
        local turned = nd >= 2 and ga.rot90(x, {k = -1}) or ga.flip(x)
        local layout = nd >= 2 and ref_rot90(L, 3, 1, 2) or ref_flip(L, all_axes(nd))
        check_write_through(turned, layout, base, values, dtype, what .. " store through")
        if nd >= 1 then
          check_fill_through(ga.flipud(x), ref_flip(L, {1}), base, values, dtype, what .. " fill through")
        end
      end
    end
  end)

  helpers.gpu_it("swapaxes, moveaxis and transpose are views in NumPy's element order", function()
    for _, dtype in ipairs(DTYPES) do
      local base, values, inputs = inputs_3d(dtype)
      for _, input in ipairs(inputs) do
        local x, L, name = input[1], input[2], input[3]
        local what = dtype .. " " .. name
        local nd = x.ndim
        local reversed = {}
        for d = 1, nd do reversed[d] = nd + 1 - d end
        check_view(ga.transpose(x), ref_transpose(L, reversed), values, what .. " transpose")
        if nd >= 1 then
          check_view(ga.swapaxes(x, 1, -1), ref_moveaxis(L, {1, nd}, {nd, 1}), values, what .. " swapaxes")
          check_view(x:swapaxes(1, 1), L, values, what .. " swapaxes of one axis")
          check_view(ga.moveaxis(x, 1, -1), ref_moveaxis(L, {1}, {nd}), values, what .. " moveaxis 1 -1")
          check_view(x:moveaxis(-1, 1), ref_moveaxis(L, {nd}, {1}), values, what .. " a:moveaxis(-1, 1)")
          check_view(ga.moveaxis(x, {}, {}), L, values, what .. " moveaxis of no axes")
        end
        if nd >= 2 then
          check_view(x:swapaxes(-1, 1), ref_moveaxis(L, {1, nd}, {nd, 1}), values, what .. " a:swapaxes")
        end
        if nd == 2 then
          check_view(ga.transpose(x, {-1, 1}), ref_transpose(L, {2, 1}), values, what .. " transpose {-1, 1}")
          check_view(x:transpose({-2, -1}), L, values, what .. " a:transpose {-2, -1}")
        end
        if nd == 3 then
          check_view(ga.swapaxes(x, 2, 3), ref_transpose(L, {1, 3, 2}), values, what .. " swapaxes 2 3")
          check_view(ga.moveaxis(x, {1, 2}, {-1, -2}), ref_moveaxis(L, {1, 2}, {3, 2}), values,
                     what .. " moveaxis {1, 2} {-1, -2}")
          check_view(ga.moveaxis(x, {3, 1}, {1, 2}), ref_moveaxis(L, {3, 1}, {1, 2}), values,
                     what .. " moveaxis {3, 1} {1, 2}")
          check_view(ga.moveaxis(x, 2, 1), ref_transpose(L, {2, 1, 3}), values, what .. " moveaxis 2 1")
          local turned = ref_transpose(L, {2, 3, 1})
          check_view(ga.transpose(x, {2, 3, 1}), turned, values, what .. " transpose {2, 3, 1}")
          check_view(x:transpose({-2, -1, -3}), turned, values, what .. " a:transpose negative")
          check_view(ga.transpose(x, {1, 2, 3}), L, values, what .. " transpose {1, 2, 3}")
        end
        if nd >= 2 then
          check_write_through(ga.swapaxes(x, 1, 2), ref_transpose(L, nd == 2 and {2, 1} or {2, 1, 3}),
                              base, values, dtype, what .. " store through")
          check_fill_through(ga.moveaxis(x, 1, -1), ref_moveaxis(L, {1}, {nd}), base, values, dtype,
                             what .. " fill through")
        end
      end
    end
  end)

  helpers.gpu_it("squeeze, expand_dims, ravel and atleast_1d/2d/3d keep the element order", function()
    for _, dtype in ipairs(DTYPES) do
      -- a (1, 3, 1, 4) view of a 2 x 3 x 4 base: its second 3 x 4 matrix, with axes of 1
      local base, values = random_base({2, 3, 4}, dtype)
      local L = base_layout({2, 3, 4})
      local ones = ga.expand_dims(base:select(1, 2), {1, 3})
      local ones_layout = ref_reshape(ref_select(L, 1, 2), {1, 3, 1, 4})
      check_view(ones, ones_layout, values, dtype .. " expand_dims {1, 3}")
      local inputs = {
        {ones, ones_layout, "(1, 3, 1, 4)", {3, 4}},
        {ones:transpose(), ref_transpose(ones_layout, {4, 3, 2, 1}), "(4, 1, 3, 1)", {4, 3}},
        {ones:slice(4, 1, -2, {axis = 4}), ref_slice(ones_layout, 4, 4, 2, -2), "(1, 3, 1, 2) back", {3, 2}},
      }
      for _, input in ipairs(inputs) do
        local x, lx, name, squeezed = input[1], input[2], input[3], input[4]
        local what = dtype .. " " .. name
        local s = x.shape
        check_view(ga.squeeze(x), ref_reshape(lx, squeezed), values, what .. " squeeze")
        check_view(x:squeeze(), ref_reshape(lx, squeezed), values, what .. " a:squeeze()")
        local ones_at = {}
        for d = 1, 4 do if s[d] == 1 then ones_at[#ones_at + 1] = d end end
        local without_first = copy(s)
        table.remove(without_first, ones_at[1])
        check_view(ga.squeeze(x, {axis = ones_at[1]}), ref_reshape(lx, without_first), values,
                   what .. " squeeze one axis")
        check_view(x:squeeze({axis = {ones_at[2] - 5, ones_at[1]}}), ref_reshape(lx, squeezed), values,
                   what .. " a:squeeze of a list")
        check_view(ga.squeeze(x, {axis = {}}), lx, values, what .. " squeeze of no axis")
        check_view(ga.expand_dims(x, -1), ref_reshape(lx, {s[1], s[2], s[3], s[4], 1}), values,
                   what .. " expand_dims -1")
        check_view(x:expand_dims({2, -2}), ref_reshape(lx, {s[1], 1, s[2], s[3], 1, s[4]}), values,
                   what .. " a:expand_dims {2, -2}")
        check_view(ga.atleast_3d(x), lx, values, what .. " atleast_3d")
        assert.are.equal(x, ga.atleast_2d(x))          -- arrays of enough axes come back as they are
        local flat = ga.ravel(x)
        if x.is_contiguous then
          check_view(flat, ref_reshape(lx, {x.size}), values, what .. " ravel")
          check_write_through(flat, ref_reshape(lx, {x.size}), base, values, dtype, what .. " ravel store")
        else
          -- NumPy's ravel of a view it cannot flatten in place is a copy
          assert.are.same({x.size}, flat.shape)
          local want = places(lx)
          local got = elements(flat)
          for k = 1, #want do assert.are.equal(values[want[k]], got[k], what .. " ravel") end
          flat[1] = other_value(dtype, got[1])
          assert.are.same(values, elements(base), what .. " ravel copy")
        end
        check_write_through(ga.squeeze(x), ref_reshape(lx, squeezed), base, values, dtype,
                            what .. " squeeze store")
        check_fill_through(ga.expand_dims(x, 3), ref_reshape(lx, {s[1], s[2], 1, s[3], s[4]}), base,
                           values, dtype, what .. " expand_dims fill")
      end
      -- 0-d, 1-d and 2-d arrays, and views of them, through the atleast functions
      local zero_d = base:select(1, 2):select(1, 3):select(1, 1)
      local zero_layout = ref_select(ref_select(ref_select(L, 1, 2), 1, 3), 1, 1)
      local one_d = base:select(1, 1):select(2, 3)        -- stride of 4 elements
      local one_layout = ref_select(ref_select(L, 1, 1), 2, 3)
      local two_d = base:select(2, 2):transpose()          -- (4, 2)
      local two_layout = ref_transpose(ref_select(L, 2, 2), {2, 1})
      local what = dtype .. " "
      check_view(ga.atleast_1d(zero_d), ref_reshape(zero_layout, {1}), values, what .. "atleast_1d 0-d")
      check_view(ga.atleast_2d(zero_d), ref_reshape(zero_layout, {1, 1}), values, what .. "atleast_2d 0-d")
      check_view(ga.atleast_3d(zero_d), ref_reshape(zero_layout, {1, 1, 1}), values, what .. "atleast_3d 0-d")
      assert.are.equal(one_d, ga.atleast_1d(one_d))
      check_view(ga.atleast_2d(one_d), ref_reshape(one_layout, {1, 3}), values, what .. "atleast_2d 1-d")
      check_view(ga.atleast_3d(one_d), ref_reshape(one_layout, {1, 3, 1}), values, what .. "atleast_3d 1-d")
      assert.are.equal(two_d, ga.atleast_2d(two_d))
      check_view(ga.atleast_3d(two_d), ref_reshape(two_layout, {4, 2, 1}), values, what .. "atleast_3d 2-d")
      -- several arrays: a result each
      local p, q, r = ga.atleast_2d(zero_d, one_d, two_d)
      assert.are.equal(3, select("#", ga.atleast_2d(zero_d, one_d, two_d)))
      assert.are.same({1, 1}, p.shape)
      assert.are.same({1, 3}, q.shape)
      assert.are.equal(two_d, r)
      assert.are.equal(0, select("#", ga.atleast_3d()))
      check_view(ga.squeeze(ga.atleast_3d(zero_d)), zero_layout, values, what .. "squeeze back to 0-d")
      check_view(ga.expand_dims(zero_d, {1, 2}), ref_reshape(zero_layout, {1, 1}), values,
                 what .. "expand_dims of 0-d")
      check_view(ga.ravel(zero_d), ref_reshape(zero_layout, {1}), values, what .. "ravel of 0-d")
      check_write_through(ga.atleast_3d(one_d), ref_reshape(one_layout, {1, 3, 1}), base, values, dtype,
                          what .. "atleast_3d store")
      check_write_through(ga.atleast_2d(zero_d), ref_reshape(zero_layout, {1, 1}), base, values, dtype,
                          what .. "atleast_2d store")
      check_fill_through(ga.atleast_2d(one_d), ref_reshape(one_layout, {1, 3}), base, values, dtype,
                         what .. "atleast_2d fill")
    end
  end)

  -- NumPy's pieces of an axis of length n at Lua places (1-based firsts): a[start:stop] for
  -- NumPy's indices, place p being NumPy's p - 1 from 1 on and p itself below (-1 the last).
  local function reference_pieces(n, list)
    local numpy = {0}
    for _, p in ipairs(list) do numpy[#numpy + 1] = p >= 1 and p - 1 or p end
    numpy[#numpy + 1] = n
    local function bound(i)
      if i < 0 then i = i + n end
      return math.max(0, math.min(i, n))
    end
    local pieces = {}
    for k = 1, #numpy - 1 do
      local start, stop = bound(numpy[k]), bound(numpy[k + 1])
      pieces[k] = {first = start + 1, count = math.max(stop - start, 0)}
    end
    return pieces
  end

  -- NumPy's array_split of an axis of length n into sections pieces.
  local function reference_sections(n, sections)
    local pieces, first = {}, 1
    for k = 1, sections do
      local count = n // sections + (k <= n % sections and 1 or 0)
      pieces[k] = {first = first, count = count}
      first = first + count
    end
    return pieces
  end

  -- Checks the results of a split along axis against the reference pieces.
  local function check_pieces(results, x, L, axis, pieces, values, what)
    assert.are.equal(#pieces, #results, what .. ": how many pieces")
    for k, piece in ipairs(pieces) do
      check_view(results[k], ref_slice(L, axis, piece.first, piece.count), values, what .. " piece " .. k)
      assert.are.equal(x.gpudata, results[k].gpudata, what)
    end
  end

  helpers.gpu_it("split and array_split cut views at 1-based places or into sections", function()
    -- the places of the docs: NumPy's split(a, [3, 5]) is split(a, {4, 6})
    local counts = {}
    for k, piece in ipairs({ga.split(ga.zeros(10, "int8"), {4, 6})}) do counts[k] = piece.size end
    assert.are.same({3, 2, 5}, counts)
    for _, dtype in ipairs(DTYPES) do
      local base, values = random_base({6, 10}, dtype)
      local L = base_layout({6, 10})
      local inputs = {
        {base, L, "6 x 10"},
        {base:transpose(), ref_transpose(L, {2, 1}), "10 x 6 transposed"},
        {base:slice(-1, 1, -2, {axis = 1}), ref_slice(L, 1, 6, 3, -2), "3 x 10 stepped back"},
        {base:select(1, 4), ref_select(L, 1, 4), "1-d"},
      }
      for _, input in ipairs(inputs) do
        local x, lx, name = input[1], input[2], input[3]
        for axis = 1, x.ndim do
          local n = x.shape[axis]
          local what = ("%s %s along %d"):format(dtype, name, axis)
          local opts = {axis = axis}
          for sections = 1, n do
            if n % sections == 0 then
              check_pieces({ga.split(x, sections, opts)}, x, lx, axis, reference_sections(n, sections),
                           values, what .. " split " .. sections)
            end
          end
          for _, sections in ipairs{1, 3, 4, n + 2} do
            check_pieces({ga.array_split(x, sections, opts)}, x, lx, axis, reference_sections(n, sections),
                         values, what .. " array_split " .. sections)
          end
          for _, list in ipairs{{4, 6}, {}, {-2}, {0}, {n + 5}, {7, 3}, {1, 1, n + 1}, {-20, 2, -1, 3}} do
            local text = "{" .. table.concat(list, ", ") .. "}"
            check_pieces({ga.split(x, list, opts)}, x, lx, axis, reference_pieces(n, list), values,
                         what .. " split " .. text)
            check_pieces({ga.array_split(x, list, {axis = axis - 1 - x.ndim})}, x, lx, axis,
                         reference_pieces(n, list), values, what .. " array_split " .. text)
          end
        end
        -- the first axis by default
        check_pieces({ga.array_split(x, 2)}, x, lx, 1, reference_sections(x.shape[1], 2), values,
                     dtype .. " " .. name .. " array_split 2")
        check_pieces({ga.split(x, {2})}, x, lx, 1, reference_pieces(x.shape[1], {2}), values,
                     dtype .. " " .. name .. " split {2}")
        -- the pieces share the base's memory
        local first, second = ga.array_split(x, 2, {axis = -1})
        local halves = reference_sections(x.shape[x.ndim], 2)
        check_write_through(second, ref_slice(lx, x.ndim, halves[2].first, halves[2].count), base, values,
                            dtype, dtype .. " " .. name .. " store through")
        check_fill_through(first, ref_slice(lx, x.ndim, halves[1].first, halves[1].count), base, values,
                           dtype, dtype .. " " .. name .. " fill through")
      end
    end
  end)

  helpers.gpu_it("hsplit, vsplit and dsplit split along NumPy's axes; empty arrays split", function()
    for _, dtype in ipairs{"int16", "float64", "complex128"} do
      local base, values = random_base({4, 6, 2}, dtype)
      local L = base_layout({4, 6, 2})
      local what = dtype .. " "
      check_pieces({ga.hsplit(base, 3)}, base, L, 2, reference_sections(6, 3), values, what .. "hsplit 3")
      check_pieces({ga.hsplit(base, {2, 5})}, base, L, 2, reference_pieces(6, {2, 5}), values,
                   what .. "hsplit {2, 5}")
      check_pieces({ga.vsplit(base, 2)}, base, L, 1, reference_sections(4, 2), values, what .. "vsplit 2")
      check_pieces({ga.vsplit(base, {-1})}, base, L, 1, reference_pieces(4, {-1}), values,
                   what .. "vsplit {-1}")
      check_pieces({ga.dsplit(base, 2)}, base, L, 3, reference_sections(2, 2), values, what .. "dsplit 2")
      check_pieces({ga.dsplit(base, {2})}, base, L, 3, reference_pieces(2, {2}), values, what .. "dsplit {2}")
      local t = base:transpose()                                     -- (2, 6, 4)
      local lt = ref_transpose(L, {3, 2, 1})
      check_pieces({ga.hsplit(t, 2)}, t, lt, 2, reference_sections(6, 2), values, what .. "hsplit of .T")
      check_pieces({ga.dsplit(t, {3, 2})}, t, lt, 3, reference_pieces(4, {3, 2}), values,
                   what .. "dsplit of .T")
      local row = base:select(1, 3):select(2, 1)                     -- 1-d: hsplit's first axis
      local lrow = ref_select(ref_select(L, 1, 3), 2, 1)
      check_pieces({ga.hsplit(row, 3)}, row, lrow, 1, reference_sections(6, 3), values,
                   what .. "hsplit of 1-d")
      check_pieces({ga.hsplit(row, {5})}, row, lrow, 1, reference_pieces(6, {5}), values,
                   what .. "hsplit {5} of 1-d")
    end
    -- empty arrays split into empty pieces
    local z = ga.zeros({0, 4}, "float32")
    local pieces = {ga.split(z, 3)}
    assert.are.equal(3, #pieces)
    for _, piece in ipairs(pieces) do assert.are.same({0, 4}, piece.shape) end
    pieces = {ga.array_split(z, {2, 3}, {axis = 2})}
    assert.are.same({{0, 1}, {0, 1}, {0, 2}}, {pieces[1].shape, pieces[2].shape, pieces[3].shape})
    assert.are.same({0}, (ga.hsplit(ga.zeros(0, "int8"), 2)).shape)
  end)

  -- NumPy's concatenate of reference arrays {shape =, values =} along axis.
  local function reference_concatenate(parts, axis)
    local shape = copy(parts[1].shape)
    shape[axis] = 0
    for _, p in ipairs(parts) do shape[axis] = shape[axis] + p.shape[axis] end
    local out = {}
    each_index(shape, function(index)
      local i, k = index[axis], 1
      while i > parts[k].shape[axis] do
        i = i - parts[k].shape[axis]
        k = k + 1
      end
      local j = copy(index)
      j[axis] = i
      out[#out + 1] = parts[k].values[row_major(parts[k].shape, j)]
    end)
    return {shape = shape, values = out}
  end

  -- NumPy's shapes the joins give arrays of few axes (their elements keep their order).
  local as_nd = {
    hstack = function(s) return #s == 0 and {1} or s end,
    vstack = function(s) return #s == 0 and {1, 1} or #s == 1 and {1, s[1]} or s end,
    dstack = function(s)
      return #s == 0 and {1, 1, 1} or #s == 1 and {1, s[1], 1} or #s == 2 and {s[1], s[2], 1} or s
    end,
    column_stack = function(s) return #s == 0 and {1, 1} or #s == 1 and {s[1], 1} or s end,
  }
  local join_axis = {
    hstack = function(first) return #first == 1 and 1 or 2 end,
    vstack = function() return 1 end,
    dstack = function() return 3 end,
    column_stack = function() return 2 end,
  }

  -- Joins the arrays with fname and checks the result against the reference; converts the
  -- values to dtype (those here convert exactly).
  local function check_join(fname, arrays, refs, dtype, opts)
    local parts = {}
    for k, r in ipairs(refs) do parts[k] = {shape = as_nd[fname](r.shape), values = r.values} end
    local want = reference_concatenate(parts, join_axis[fname](parts[1].shape))
    local result = ga[fname](arrays, opts)
    if opts and opts.stream then opts.stream:synchronize() end
    assert.are.equal(dtype, result.dtype, fname)
    assert.are.same(want.shape, result.shape, fname)
    local got = elements(result)
    for k = 1, #want.values do
      local v = want.values[k]
      if got[k] ~= v then
        error(("%s of %s: element %d is %s, expected %s")
              :format(fname, dtype, k, tostring(got[k]), tostring(v)))
      end
    end
    for _, a in ipairs(arrays) do assert.are_not.equal(a.gpudata, result.gpudata, fname .. " copies") end
    return result
  end

  -- A view and its reference {shape, values}: the view's elements as the base's values.
  local function view_ref(view, layout, values)
    local list = {}
    for k, place in ipairs(places(layout)) do list[k] = values[place] end
    return {shape = copy(layout.shape), values = list}
  end

  helpers.gpu_it("hstack, vstack, dstack and column_stack join copies with NumPy's special cases", function()
    local s = gpu.Stream()
    for _, dtype in ipairs(DTYPES) do
      local base, values = random_base({3, 4, 5}, dtype)
      local L = base_layout({3, 4, 5})
      -- views of the base and their references, by name (and shape)
      local x, r = {}, {}
      local function add(name, view, layout) x[name], r[name] = view, view_ref(view, layout, values) end
      add("m", base:select(1, 1), ref_select(L, 1, 1))                                    -- (4, 5)
      add("m2", base:select(1, 2), ref_select(L, 1, 2))                                   -- (4, 5)
      add("mt", base:select(1, 2):transpose(), ref_transpose(ref_select(L, 1, 2), {2, 1}))  -- (5, 4)
      add("m_stepped", base:select(1, 1):slice(1, 5, 2, {axis = 2}),
          ref_slice(ref_select(L, 1, 1), 2, 1, 3, 2))                                      -- (4, 3)
      add("v5", base:select(1, 3):select(1, 2), ref_select(ref_select(L, 1, 3), 1, 2))     -- (5)
      add("w5", base:select(2, 4):select(1, 2):flip(),
          ref_flip(ref_select(ref_select(L, 2, 4), 1, 2), {1}))                             -- (5), reversed
      add("v4", base:select(1, 2):select(2, 3), ref_select(ref_select(L, 1, 2), 2, 3))     -- (4)
      add("z", base:select(1, 3):select(1, 1):select(1, 1),
          ref_select(ref_select(ref_select(L, 1, 3), 1, 1), 1, 1))                          -- 0-d
      add("c", base:slice(1, 3, 2), ref_slice(L, 1, 1, 2, 2))                               -- (2, 4, 5)
      add("c_back", base:slice(3, 2, -1), ref_slice(L, 1, 3, 2, -1))                         -- (2, 4, 5)
      add("c_flipped", x.c:flip(), ref_flip(ref_slice(L, 1, 1, 2, 2), {1, 2, 3}))            -- (2, 4, 5)
      add("ct", base:transpose({2, 1, 3}):slice(1, 2),
          ref_slice(ref_transpose(L, {2, 1, 3}), 1, 1, 2))                                  -- (2, 3, 5)
      local function join(fname, names, opts)
        local arrays, refs = {}, {}
        for k, name in ipairs(names) do arrays[k], refs[k] = x[name], r[name] end
        check_join(fname, arrays, refs, dtype, opts)
      end
      join("hstack", {"v5", "w5", "v4", "z"})
      join("hstack", {"m", "m_stepped"}, {stream = s})
      join("hstack", {"c", "ct"})
      join("vstack", {"v5", "m", "w5"})
      join("vstack", {"z", "z"}, {stream = s})
      join("vstack", {"c", "c_back"})
      join("dstack", {"m", "m2", "m"})
      join("dstack", {"v5", "w5"}, {stream = s})
      join("dstack", {"z", "z", "z"})
      join("dstack", {"c", "c_flipped"})
      join("column_stack", {"v4", "m", "v4"})
      join("column_stack", {"z", "z"})
      join("column_stack", {"mt", "v5"}, {stream = s})
      join("column_stack", {"ct", "c"})
      -- the joins copy: a write into one leaves the arrays joined as they were
      local joined = ga.hstack({x.v5, x.v4})
      joined:fill(other_value(dtype, values[1]))
      assert.are.same(r.v5.values, elements(x.v5))
    end
    -- mixed dtypes join in the type NumPy's promotion gives, as concatenate's
    local small = ga.to_gpu({1, -2, 3}, "int8")
    local wide = ga.to_gpu({{100000, -7}, {8, 9}, {-10, 11}}, "int32")
    local r = ga.column_stack({small, wide})
    assert.are.equal("int32", r.dtype)
    assert.are.same({{1, 100000, -7}, {-2, 8, 9}, {3, -10, 11}}, r:get():totable())
    r = ga.vstack({ga.to_gpu({0.5, 1.5}, "float32"), ga.to_gpu({0.25, 1e300}, "float64")})
    assert.are.equal("float64", r.dtype)
    assert.are.same({{0.5, 1.5}, {0.25, 1e300}}, r:get():totable())
    r = ga.hstack({ga.to_gpu({true, false}, "bool"), ga.to_gpu({2}, "uint8")})
    assert.are.equal("uint8", r.dtype)
    assert.are.same({1, 0, 2}, r:get():totable())
  end)

  helpers.gpu_it("refuse bad axes, sections, shapes and freed arrays with clear messages", function()
    local a = ga.zeros({2, 3}, "float32")
    local v = ga.zeros({4}, "float32")
    local s = ga.zeros({}, "float32")
    local c = ga.zeros({2, 3, 4}, "float32")
    local t = c:transpose()
    -- flips
    E("bad argument #2 to 'flip' (axis 3 is out of range for a 2-d array)", ga.flip, a, {axis = 3})
    E("bad argument #1 to 'flip' (axis 3 is out of range for a 2-d array)", a.flip, a, {axis = 3})
    E("bad argument #2 to 'flip' (option 'axis' must be an integer or a list of them, got float)",
      ga.flip, a, {axis = 1.5})
    E("bad argument #2 to 'flip' (option 'axis' item 2 must be an integer, got string)",
      ga.flip, a, {axis = {1, "x"}})
    E("bad argument #2 to 'flip' (repeated axis 1)", ga.flip, a, {axis = {1, -2}})
    E("bad argument #2 to 'flip' (unknown option 'axes')", ga.flip, a, {axes = 1})
    E("bad argument #2 to 'flip' (options table expected, got number)", ga.flip, a, 1)
    E("bad argument #1 to 'flip' (GPUArray expected, got number)", ga.flip, 5)
    E("bad argument #1 to 'flip' (axis 1 is out of range for a 0-d array)", s.flip, s, {axis = 1})
    E("bad argument #1 to 'fliplr' (an array of 2 or more axes expected, got 1-d)", ga.fliplr, v)
    E("bad argument #1 to 'flipud' (an array of 1 or more axes expected, got 0-d)", ga.flipud, s)
    E("bad argument #1 to 'rot90' (an array of 2 or more axes expected, got 1-d)", ga.rot90, v)
    E("bad argument #2 to 'rot90' (option 'k' must be an integer, got float)", ga.rot90, a, {k = 1.5})
    E("bad argument #2 to 'rot90' (option 'axes' must be a list of two axes, got number)",
      ga.rot90, a, {axes = 1})
    E("bad argument #2 to 'rot90' (option 'axes' must name two axes, not 3)", ga.rot90, c, {axes = {1, 2, 3}})
    E("bad argument #2 to 'rot90' (option 'axes' must name two different axes)",
      ga.rot90, a, {axes = {1, -2}})
    E("bad argument #2 to 'rot90' (axis 3 is out of range for a 2-d array)", ga.rot90, a, {axes = {1, 3}})
    E("bad argument #2 to 'rot90' (option 'axes' item 2 must be an integer, got float)",
      ga.rot90, a, {axes = {1, 2.5}})
    E("bad argument #2 to 'rot90' (unknown option 'axis')", ga.rot90, a, {axis = 1})
    -- permutations
    E("bad argument #3 to 'swapaxes' (axis 3 is out of range for a 2-d array)", ga.swapaxes, a, 1, 3)
    E("bad argument #1 to 'swapaxes' (axis 0 is out of range for a 2-d array)", a.swapaxes, a, 0, 1)
    E("bad argument #2 to 'swapaxes' (axis1 must be an integer, got string)", ga.swapaxes, a, "1", 2)
    E("bad argument #3 to 'swapaxes' (axis2 must be an integer, got nil)", ga.swapaxes, a, 1)
    E("bad argument #3 to 'moveaxis' (axis 4 is out of range for a 3-d array)", ga.moveaxis, c, 1, 4)
    E("bad argument #3 to 'moveaxis' (source and destination must name as many axes, got 2 and 1)",
      ga.moveaxis, c, {1, 2}, {1})
    E("bad argument #2 to 'moveaxis' (repeated axis 1)", ga.moveaxis, c, {1, 1}, {2, 3})
    E("bad argument #2 to 'moveaxis' (repeated axis 3)", c.moveaxis, c, {1, 2}, {3, -1})
    E("bad argument #2 to 'moveaxis' (source must be an integer or a list of them, got nil)",
      ga.moveaxis, c, nil, 1)
    E("bad argument #3 to 'moveaxis' (destination item 1 must be an integer, got float)",
      ga.moveaxis, c, {1}, {0.5})
    E("bad argument #2 to 'transpose' (axes must be a permutation of 1..3)", ga.transpose, c, {1, 2})
    E("bad argument #2 to 'transpose' (axes must be a permutation of 1..3)", ga.transpose, c, {1, 2, -3})
    E("bad argument #2 to 'transpose' (axes must be a permutation of 1..3)", ga.transpose, c, 1)
    E("bad argument #1 to 'transpose' (axes must be a permutation of 1..2)", a.transpose, a, {1, -3})
    -- axes of length 1
    E("bad argument #2 to 'squeeze' (axis 1 has length 2, not 1)", ga.squeeze, a, {axis = 1})
    E("bad argument #2 to 'squeeze' (axis -2 has length 3, not 1)", ga.squeeze, ga.zeros({1, 3, 1}, "int8"),
      {axis = {1, -2}})
    E("bad argument #1 to 'squeeze' (axis 3 is out of range for a 2-d array)", a.squeeze, a, {axis = 3})
    E("bad argument #2 to 'expand_dims' (axis 4 is out of range for a 3-d array)", ga.expand_dims, a, 4)
    E("bad argument #2 to 'expand_dims' (axis 5 is out of range for a 4-d array)", ga.expand_dims, a, {1, 5})
    E("bad argument #2 to 'expand_dims' (repeated axis 4)", ga.expand_dims, a, {-1, 4})
    E("bad argument #1 to 'expand_dims' (axis must be an integer or a list of them, got string)",
      a.expand_dims, a, "1")
    E("bad argument #2 to 'expand_dims' (axis must be an integer or a list of them, got nil)",
      ga.expand_dims, a)
    E("bad argument #1 to 'ravel' (GPUArray expected, got table)", ga.ravel, {})
    E("bad argument #2 to 'atleast_2d' (GPUArray expected, got number)", ga.atleast_2d, a, 3)
    -- splits
    E("bad argument #2 to 'split' (an axis of length 4 does not split into 3 equal sections)", ga.split, v, 3)
    E("bad argument #2 to 'split' (the number of sections must be a whole number from 1 on, got 0)",
      ga.split, v, 0)
    E("bad argument #2 to 'array_split' (the number of sections must be a whole number from 1 on, got 1.5)",
      ga.array_split, v, 1.5)
    E("bad argument #2 to 'array_split' (2000000 sections are more results than a call can return "
      .. "(1000000))", ga.array_split, v, 2000000)
    E("bad argument #2 to 'split' (indices_or_sections must be a number of sections or a list of places, "
      .. "got string)", ga.split, v, "2")
    E("bad argument #2 to 'array_split' (indices_or_sections must be a number of sections or a list of "
      .. "places, got gpu.GPUArray)", ga.array_split, v, v)
    E("bad argument #2 to 'split' (place 2 must be a whole number, got 2.5)", ga.split, v, {2, 2.5})
    E("bad argument #2 to 'split' (place 2 must be a whole number, got string)", ga.split, v, {2, "3"})
    E("bad argument #3 to 'split' (axis 3 is out of range for a 2-d array)", ga.split, a, 2, {axis = 3})
    E("bad argument #3 to 'array_split' (unknown option 'axes')", ga.array_split, a, 2, {axes = 1})
    E("bad argument #1 to 'split' (an array of 1 or more axes expected, got 0-d)", ga.split, s, 1)
    E("bad argument #1 to 'hsplit' (an array of 1 or more axes expected, got 0-d)", ga.hsplit, s, 1)
    E("bad argument #1 to 'vsplit' (an array of 2 or more axes expected, got 1-d)", ga.vsplit, v, 2)
    E("bad argument #1 to 'dsplit' (an array of 3 or more axes expected, got 2-d)", ga.dsplit, a, 2)
    E("bad argument #2 to 'hsplit' (an axis of length 3 does not split into 2 equal sections)",
      ga.hsplit, a, 2)
    E("bad argument #2 to 'dsplit' (an axis of length 4 does not split into 3 equal sections)",
      ga.dsplit, c, 3)
    -- joins
    E("bad argument #1 to 'hstack' (table of GPUArrays expected, got gpu.GPUArray)", ga.hstack, a)
    E("bad argument #1 to 'vstack' (at least one array is needed)", ga.vstack, {})
    E("bad argument #1 to 'dstack' (item #2 is a number, not a GPUArray)", ga.dstack, {a, 5})
    E("bad argument #1 to 'hstack' (array #2 is 1-d, array #1 2-d)", ga.hstack, {a, v})
    E("bad argument #1 to 'hstack' (array #2 has shape (3,3), which differs from array #1's off axis 2)",
      ga.hstack, {a, ga.zeros({3, 3}, "float32")})
    E("bad argument #1 to 'vstack' (array #2 has shape (1,4), which differs from array #1's off axis 1)",
      ga.vstack, {a, v})
    E("bad argument #1 to 'dstack' (array #2 has shape (1,4,1), which differs from array #1's off axis 3)",
      ga.dstack, {a, v})
    E("bad argument #1 to 'column_stack' (array #2 has shape (2,3), which differs from array #1's "
      .. "off axis 2)", ga.column_stack, {v, a})
    E("bad argument #2 to 'hstack' (unknown option 'axis')", ga.hstack, {a, a}, {axis = 1})
    E("bad argument #2 to 'column_stack' (option 'stream' must be a gpu.Stream, got number)",
      ga.column_stack, {a, a}, {stream = 1})
    -- freed arrays, and views of them
    c:free()
    for _, x in ipairs{c, t} do
      for _, name in ipairs{"flip", "fliplr", "flipud", "rot90", "transpose", "squeeze", "ravel",
                            "atleast_1d", "atleast_2d", "atleast_3d", "hsplit", "vsplit", "dsplit"} do
        E(("bad argument #1 to '%s' (array has been freed)"):format(name), ga[name], x, 1)
      end
      E("bad argument #1 to 'swapaxes' (array has been freed)", ga.swapaxes, x, 1, 2)
      E("bad argument #1 to 'moveaxis' (array has been freed)", ga.moveaxis, x, 1, 2)
      E("bad argument #1 to 'expand_dims' (array has been freed)", ga.expand_dims, x, 1)
      E("bad argument #1 to 'split' (array has been freed)", ga.split, x, 2)
      E("bad argument #1 to 'array_split' (array has been freed)", ga.array_split, x, 2)
      E("bad argument #2 to 'atleast_3d' (array has been freed)", ga.atleast_3d, a, x)
      for _, name in ipairs{"flip", "squeeze", "expand_dims", "swapaxes", "moveaxis"} do
        E(("calling '%s' on bad self (array has been freed)"):format(name), x[name], x, 1, 2)
      end
      for _, name in ipairs{"hstack", "vstack", "dstack", "column_stack"} do
        E(("bad argument #1 to '%s' (array #2 has been freed)"):format(name), ga[name], {a, x})
      end
    end
  end)
end)
