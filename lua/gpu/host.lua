-- gpu.host: typed host arrays (the C type gpu.HostArray) with NumPy-style printing, and the
-- comparisons a script checks its GPU results with (NumPy's allclose, isclose, array_equal).

local core = require "gpu.core"
local format = require "gpu.format"
local promote = require "gpu.promote"
local args = require "gpu.args"
local is_complex = require("gpu.complex").is_complex

local host = core.host
local HostArray = core.types.HostArray
local GPUArray = core.types.GPUArray
local Scalar = core.types.Scalar
local argerror = args.argerror

-- h, or for a managed array a pageable copy: read element by element, a managed array
-- would wait for the device at each element where the device has no concurrent access.
local function readable(h)
  if getmetatable(h) ~= HostArray or not h:is_managed() then return h end
  return host.from_bytes(h:bytes(), h.dtype, h.shape)
end

function HostArray.__tostring(h)
  local ok, dtype = pcall(function() return h.dtype end)
  if not ok or not pcall(function() return #h end) then return "gpu.HostArray(freed)" end
  h = readable(h)
  return format.array_string(h.shape, core.dtype(dtype).kind, function(i) return h[i] end,
                            dtype)
end

-- Comparisons ------------------------------------------------------------------------------

-- An operand of the comparisons: {shape, values (indexable from 1), unsigned}, where unsigned
-- says that negative integers read from it are uint64 values past 2^63.  GPU arrays are copied
-- to the host, tables go through from_table, numbers, booleans, complex numbers and typed
-- scalars are 0-d.
local function operand(v, n, fname)
  local mt = getmetatable(v)
  if mt == GPUArray then
    v, mt = v:get(), HostArray
  elseif type(v) == "table" and mt == nil then
    local ok, h = pcall(host.from_table, v)
    if not ok then argerror(n, fname, (tostring(h):gsub("^.-%((.*)%)$", "%1")), 2) end
    v, mt = h, HostArray
  end
  if mt == HostArray then
    if v.freed then argerror(n, fname, "host array has been freed", 2) end
    return {shape = v.shape, values = readable(v), unsigned = v.dtype == "uint64"}
  elseif mt == Scalar then
    return {shape = {}, values = {v.value}, unsigned = v.dtype == "uint64"}   -- bits, as stored
  elseif type(v) == "number" or type(v) == "boolean" or is_complex(v) then
    return {shape = {}, values = {v}, unsigned = false}
  end
  argerror(n, fname, "gpu.HostArray, gpu.GPUArray, table or number expected, got " .. args.typename(v), 2)
end

-- A value as real and imaginary parts (floats where it is not an integer).
local function parts(x, unsigned)
  if math.type(x) == "integer" then
    return unsigned and args.unsigned_number(x) or x, 0
  elseif type(x) == "boolean" then
    return x and 1 or 0, 0
  elseif is_complex(x) then
    return x.re, x.im
  end
  return x, 0
end

-- Whether two integers read from operands of the given signedness are the same value.
local function same_integer(x, ux, y, uy)
  return x == y and (ux == uy or x >= 0)
end

local function isnan(re, im) return re ~= re or im ~= im end
local function finite(v) return v - v == 0 end

-- |re + im*i| without overflow in the squares.
local function modulus(re, im)
  re, im = math.abs(re), math.abs(im)
  if im == 0 or re == 0 then return re + im end
  local big, small = math.max(re, im), math.min(re, im)
  return big * math.sqrt(1 + (small / big) ^ 2)
end

-- NumPy's rules: equal values (infinities too) are close, NaN only to NaN and only with
-- equal_nan, an infinity to nothing else, and otherwise |x - y| <= atol + rtol * |y|.
local function close(x, ux, y, uy, tol)
  if math.type(x) == "integer" and math.type(y) == "integer" and same_integer(x, ux, y, uy) then
    return true
  end
  local xr, xi = parts(x, ux)
  local yr, yi = parts(y, uy)
  if isnan(xr, xi) or isnan(yr, yi) then return tol.equal_nan and isnan(xr, xi) and isnan(yr, yi) end
  if xr == yr and xi == yi then return true end
  if not (finite(xr) and finite(xi) and finite(yr) and finite(yi)) then return false end
  return modulus(xr - yr, xi - yi) <= tol.atol + tol.rtol * modulus(yr, yi)
end

local function equal(x, ux, y, uy, tol)
  if math.type(x) == "integer" and math.type(y) == "integer" then return same_integer(x, ux, y, uy) end
  local xr, xi = parts(x, ux)
  local yr, yi = parts(y, uy)
  if isnan(xr, xi) or isnan(yr, yi) then return tol.equal_nan and isnan(xr, xi) and isnan(yr, yi) end
  return xr == yr and xi == yi
end

-- Row-major element strides of a shape.
local function contiguous_strides(shape)
  local strides, step = {}, 1
  for d = #shape, 1, -1 do
    strides[d] = step
    step = step * shape[d]
  end
  return strides
end

-- each_pair(a, b, shape, fn): fn(k, x, y) for every element of shape (k its 0-based flat
-- index), x and y the operands' elements broadcast to it.
local function each_pair(a, b, shape, fn)
  local av, bv = a.values, b.values
  if promote.same_shape(a.shape, b.shape) then        -- no broadcasting: one index for both
    for k = 1, #av do fn(k - 1, av[k], bv[k]) end
    return
  end
  local sa = promote.broadcast_strides(a.shape, contiguous_strides(a.shape), shape)
  local sb = promote.broadcast_strides(b.shape, contiguous_strides(b.shape), shape)
  local nd, size = #shape, 1
  for d = 1, nd do size = size * shape[d] end
  local index, ia, ib = {}, 1, 1                     -- an odometer over shape, and offsets
  for d = 1, nd do index[d] = 1 end
  for k = 0, size - 1 do
    fn(k, av[ia], bv[ib])
    for d = nd, 1, -1 do                             -- the next index, the last axis fastest
      if index[d] < shape[d] then
        index[d], ia, ib = index[d] + 1, ia + sa[d], ib + sb[d]
        break
      end
      index[d], ia, ib = 1, ia - (shape[d] - 1) * sa[d], ib - (shape[d] - 1) * sb[d]
    end
  end
end

-- A flat 0-based index of shape as the 1-based index people read: [i] or [i, j, ...].
local function index_text(k, shape)
  local index = {}
  for d = #shape, 1, -1 do
    index[d] = k % shape[d] + 1
    k = k // shape[d]
  end
  return "[" .. table.concat(index, ", ") .. "]"
end

-- An element as text: uint64 values past 2^63 unsigned, floats with as many digits as fmt.
local function element_text(v, unsigned, fmt)
  if math.type(v) == "float" then return fmt:format(v) end
  if unsigned and math.type(v) == "integer" then return format.unsigned_text(v) end
  return tostring(v)
end

-- Two elements as text that tells them apart (floats with more digits where they need them).
local function pair_text(x, ux, y, uy)
  local xs, ys = element_text(x, ux, "%.14g"), element_text(y, uy, "%.14g")
  if xs == ys then xs, ys = element_text(x, ux, "%.17g"), element_text(y, uy, "%.17g") end
  return xs, ys
end

-- Compares every pair with same(x, ux, y, uy, tol): true, or false and a message with the
-- count of differing elements and the first of them.
local function compare(a, b, shape, same, tol, what)
  local count, first, fx, fy = 0, nil, nil, nil
  local ua, ub = a.unsigned, b.unsigned
  each_pair(a, b, shape, function(k, x, y)
    if not same(x, ua, y, ub, tol) then
      count = count + 1
      if first == nil then first, fx, fy = k, x, y end
    end
  end)
  if count == 0 then return true end
  local size = 1
  for _, n in ipairs(shape) do size = size * n end
  local xs, ys = pair_text(fx, ua, fy, ub)
  return false, ("%d of %d elements %s; the first at %s: %s, expected %s"):format(
    count, size, what, index_text(first, shape), xs, ys)
end

local function check_tolerance(opts, key, default, fname)
  local v = opts[key]
  if v == nil then return default end
  if type(v) ~= "number" or not (v >= 0) then
    argerror(3, fname, ("option '%s' must be a number of 0 or more, got %s"):format(
      key, type(v) == "number" and tostring(v) or args.typename(v)), 3)
  end
  return v
end

local function check_equal_nan(opts, fname)
  if opts.equal_nan ~= nil and type(opts.equal_nan) ~= "boolean" then
    argerror(3, fname, "option 'equal_nan' must be a boolean, got " .. args.typename(opts.equal_nan), 3)
  end
  return opts.equal_nan == true
end

local tolerance_options = {rtol = true, atol = true, equal_nan = true}

-- The operands and tolerances of allclose and isclose, and the shape they broadcast to.
local function closeness_arguments(a, b, opts, fname)
  opts = args.check_options(opts, 3, fname, tolerance_options, 2)
  local tol = {rtol = check_tolerance(opts, "rtol", 1e-5, fname),
               atol = check_tolerance(opts, "atol", 1e-8, fname),
               equal_nan = check_equal_nan(opts, fname)}
  a, b = operand(a, 1, fname), operand(b, 2, fname)
  local shape, why = promote.broadcast_shapes({a.shape, b.shape})
  if not shape then argerror(2, fname, why, 2) end
  return a, b, shape, tol
end

-- allclose(a, b[, {rtol = 1e-5, atol = 1e-8, equal_nan = false}]) -> true, or false and a
-- message: whether every |a - b| <= atol + rtol * |b| (b is the reference), as NumPy's.
-- a and b are host arrays, GPU arrays (copied to the host), tables or numbers, broadcast
-- against each other.  assert(gpu.allclose(got, want)) raises the message.
function host.allclose(a, b, opts)
  local shape, tol
  a, b, shape, tol = closeness_arguments(a, b, opts, "allclose")
  return compare(a, b, shape, close, tol, ("differ by more than atol + rtol * |expected| " ..
                                           "(rtol %g, atol %g)"):format(tol.rtol, tol.atol))
end

-- isclose(a, b[, opts]) -> a bool host array, element by element what allclose checks.
function host.isclose(a, b, opts)
  local shape, tol
  a, b, shape, tol = closeness_arguments(a, b, opts, "isclose")
  local result = host.empty(shape, "bool")
  local ua, ub = a.unsigned, b.unsigned
  each_pair(a, b, shape, function(k, x, y) result[k + 1] = close(x, ua, y, ub, tol) end)
  return result
end

-- array_equal(a, b[, {equal_nan = false}]) -> true, or false and a message: the same shape
-- and the same values (exactly; integers of any width and signedness by value), as NumPy's.
function host.array_equal(a, b, opts)
  opts = args.check_options(opts, 3, "array_equal", {equal_nan = true})
  local tol = {equal_nan = check_equal_nan(opts, "array_equal")}
  a, b = operand(a, 1, "array_equal"), operand(b, 2, "array_equal")
  if not promote.same_shape(a.shape, b.shape) then
    return false, ("shapes %s and %s differ"):format(promote.shape_text(a.shape),
                                                     promote.shape_text(b.shape))
  end
  return compare(a, b, a.shape, equal, tol, "differ")
end

return host
