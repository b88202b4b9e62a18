-- spec/value_helpers.lua: an array's values against a Lua list, exactly or within bounds, as
-- spec/52, 57 and 58 compare them.  require("value_helpers")(values_checked) gives same,
-- show, assert_exact and assert_near; with values_checked false (a run against the stand-in
-- driver, whose kernels compute nothing) the two assertions check nothing; and transposed,
-- for the lists the references build.
local assert = require "luassert"  -- busted's assert; this module is not run inside a spec
local R = require "reduction_helpers"

return function(values_checked)
  local V = {}

  -- x and y equal, NaN matching NaN, complex values ({re =, im =}) part by part.
  function V.same(x, y)
    if type(x) == "table" and type(y) == "table" then return V.same(x.re, y.re) and V.same(x.im, y.im) end
    return x == y or (x ~= x and y ~= y)
  end

  function V.show(v)
    if type(v) == "table" then return ("(%s, %s)"):format(V.show(v.re), V.show(v.im)) end
    if math.type(v) == "float" then return ("%.17g"):format(v) end
    return tostring(v)
  end

  -- Asserts that the array got holds exactly the list want, in row-major order.
  function V.assert_exact(want, got, what)
    if not values_checked then return end
    local h = R.get(got)
    assert.are.equal(#want, h.size, what .. ": size")
    for i = 1, #want do
      if not V.same(want[i], h[i]) then
        error(("%s at %d: got %s, expected %s"):format(what, i, V.show(h[i]), V.show(want[i])), 2)
      end
    end
  end

  -- Asserts that the array got is within bounds (a list, or one number for all) of the list
  -- want, part by part for complex values; NaN and the infinities must match exactly.
  function V.assert_near(want, bounds, got, what)
    if not values_checked then return end
    local h = R.get(got)
    assert.are.equal(#want, h.size, what .. ": size")
    local function near(w, g, b)
      if type(w) == "table" then return near(w.re, g.re, b) and near(w.im, g.im, b) end
      if w ~= w or w == math.huge or w == -math.huge or g ~= g then return V.same(w, g) end
      return math.abs(w - g) <= b
    end
    for i = 1, #want do
      local b = type(bounds) == "table" and bounds[i] or bounds
      if not near(want[i], h[i], b) then
        error(("%s at %d: got %s, expected %s within %.3g"):format(what, i, V.show(h[i]), V.show(want[i]), b), 2)
      end
    end
  end

  -- The row-major list of a rows x cols list's transpose.
  function V.transposed(values, rows, cols)
    local t = {}
    for c = 1, cols do
      for r = 1, rows do t[#t + 1] = values[(r - 1) * cols + c] end
    end
    return t
  end

  return V
end
