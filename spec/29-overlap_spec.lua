-- An `out` that shares memory with an operand read through another layout: the operand is
-- copied first (NumPy's rule), so a:iadd(a:transpose()) and friends give NumPy's results.

local helpers = require "helpers"
local gpu = helpers.gpu
local ew = require "gpu.elementwise"

-- Layouts over one 16-element buffer of 4-byte items at byte address 1000, and one elsewhere.
local BASE, ITEM = 1000, 4
local function layout(ptr_elem, shape, strides_elems)
  local strides = {}
  for d, s in ipairs(strides_elems) do strides[d] = s * ITEM end
  return {ptr = BASE + ptr_elem * ITEM, shape = shape, strides = strides, itemsize = ITEM}
end
local L = {
  square = layout(0, {4, 4}, {4, 1}),
  square_t = layout(0, {4, 4}, {1, 4}),
  flat = layout(0, {16}, {1}),
  flat_rev = layout(15, {16}, {-1}),
  row1 = layout(0, {4}, {1}),                -- broadcast over square
  row2 = layout(4, {4}, {1}),
  first_half = layout(0, {8}, {1}),
  second_half = layout(8, {8}, {1}),
  shifted = layout(1, {8}, {1}),
  empty = layout(0, {0}, {1}),
  elsewhere = {ptr = 5000, shape = {4, 4}, strides = {16, 4}, itemsize = ITEM},
}

-- The Lua model of the generated kernel: element i (row-major over out's shape) reads every
-- operand at its (broadcast) address in the current memory and then writes out's.  Threads
-- run in `order` ("forward" or "reverse"); NumPy's answer reads everything first.
local function addresses(a, shape)
  local promote = require "gpu.promote"
  local strides = promote.broadcast_strides(a.shape, a.strides, shape)
  local list, n = {}, 1
  for _, d in ipairs(shape) do n = n * d end
  for i = 0, n - 1 do
    local r, off = i, 0
    for d = #shape, 1, -1 do
      off = off + (r % shape[d]) * strides[d]
      r = r // shape[d]
    end
    list[i + 1] = a.ptr + off
  end
  return list
end

local function fresh_memory()
  local mem = {}
  for k = 0, 15 do mem[BASE + k * ITEM] = 3 * k + 1 end
  for k = 0, 15 do mem[5000 + k * ITEM] = 100 + 7 * k end
  return mem
end

-- out = 1 + v1 + 2 * v2 (+ ...), modelled; copies operands that ew.needs_copy names when `copy`.
local function run(out, operands, order, copy)
  local mem = fresh_memory()
  local reads = {}
  for k, v in ipairs(operands) do
    reads[k] = addresses(v, out.shape)
    if copy and ew.needs_copy(out, v) then
      local snapshot = {}
      for i, addr in ipairs(reads[k]) do snapshot[i] = mem[addr] end
      reads[k] = {snapshot = snapshot}
    end
  end
  local writes = addresses(out, out.shape)
  local first, last, step = 1, #writes, 1
  if order == "reverse" then first, last, step = #writes, 1, -1 end
  for i = first, last, step do
    local value = 1
    for k, r in ipairs(reads) do
      value = value + k * (r.snapshot and r.snapshot[i] or mem[r[i]])
    end
    mem[writes[i]] = value
  end
  local result = {}
  for i, addr in ipairs(writes) do result[i] = mem[addr] end
  return result
end

local function numpy_answer(out, operands)
  local mem = fresh_memory()
  local result = {}
  local reads = {}
  for k, v in ipairs(operands) do reads[k] = addresses(v, out.shape) end
  for i = 1, #addresses(out, out.shape) do
    local value = 1
    for k, r in ipairs(reads) do value = value + k * mem[r[i]] end
    result[i] = value
  end
  return result
end

describe("in-place overlap detection (CPU model)", function()
  local cases = {
    -- out, operands, must one be copied?
    {"square", {"square", "elsewhere"}, false},
    {"square", {"square_t"}, true},
    {"square_t", {"square"}, true},
    {"square", {"square", "square_t"}, true},
    {"flat", {"flat_rev"}, true},
    {"flat_rev", {"flat_rev"}, false},
    {"square", {"row1"}, true},                 -- a row of out broadcast over out
    {"square", {"row2"}, true},
    {"first_half", {"second_half"}, false},     -- same buffer, disjoint bytes
    {"first_half", {"shifted"}, true},
    {"square", {"elsewhere"}, false},
    {"empty", {"empty"}, false},
  }
  for _, case in ipairs(cases) do
    local out_name, names, copies = case[1], case[2], case[3]
    it(("%s = f(%s): %s"):format(out_name, table.concat(names, ", "),
                                 copies and "copies" or "no copy"), function()
      local out, operands = L[out_name], {}
      for k, name in ipairs(names) do operands[k] = L[name] end
      local any = false
      for _, v in ipairs(operands) do any = any or ew.needs_copy(out, v) end
      assert.are.equal(copies, any)
      local want = numpy_answer(out, operands)
      -- with the copies, every thread order gives NumPy's answer
      assert.are.same(want, run(out, operands, "forward", true))
      assert.are.same(want, run(out, operands, "reverse", true))
      if copies then
        -- and the copy was needed: some thread order goes wrong without it
        local forward = run(out, operands, "forward", false)
        local reverse = run(out, operands, "reverse", false)
        local util = require "luassert.util"
        assert.is_true(not util.deepcompare(want, forward) or not util.deepcompare(want, reverse))
      end
    end)
  end

  it("takes different itemsizes at one address as overlapping", function()
    local v = {ptr = BASE, shape = {8}, strides = {8}, itemsize = 8}
    assert.is_true(ew.needs_copy(L.flat, v))
  end)

  it("computes byte extents with negative strides", function()
    assert.are.same({BASE, BASE + 64}, {ew.byte_extent(L.flat_rev)})
    assert.are.same({BASE, BASE + 64}, {ew.byte_extent(L.square_t)})
    assert.is_nil(ew.byte_extent(L.empty))
  end)
end)

describe("in-place overlap on the device", function()
  local function host_values(a) return a:get():totable() end

  helpers.gpu_it("a:iadd(a:transpose()) gives a + a.T", function()
    local values = helpers.random_integers(64, -1000, 1000)
    local t = {}
    for r = 1, 8 do t[r] = {} for c = 1, 8 do t[r][c] = values[(r - 1) * 8 + c] end end
    local a = gpu.to_gpu(t, "int32")
    a:iadd(a:transpose())
    local got = host_values(a)
    for r = 1, 8 do for c = 1, 8 do
      assert.are.equal(t[r][c] + t[c][r], got[r][c])
    end end
  end)

  helpers.gpu_it("add into a reversed view of an operand", function()
    local n = 5000
    local values = helpers.random_integers(n, -1000, 1000)
    local x = gpu.to_gpu(values, "int64")
    local y = gpu.arange(n, "int64")
    gpu.gpuarray.add(x, y, {out = x:slice(-1, 1, -1)})
    local got = x:get()
    for i = 1, n do
      -- out element i (reversed) is x[n - i + 1]; it holds x[i] + y[i] read before writing
      assert.are.equal(values[i] + (i - 1), got[n - i + 1])
    end
  end)

  helpers.gpu_it("a broadcast row of out is read before it is overwritten", function()
    local values = helpers.random_integers(12, -50, 50)
    local a = gpu.to_gpu(values, "int32"):reshape(3, 4)
    gpu.gpuarray.mul(a, a:slice(1, 1):reshape(4), {out = a})
    local got = a:get()
    for r = 1, 3 do for c = 1, 4 do
      assert.are.equal(values[(r - 1) * 4 + c] * values[c], got[(r - 1) * 4 + c])
    end end
  end)

  helpers.gpu_it("an inclusive scan into the reversed input reads the input first", function()
    local n = 3 * 4096 + 17
    local values = helpers.random_integers(n, -100, 100)
    local a = gpu.to_gpu(values, "int32")
    local k = gpu.InclusiveScanKernel("int32", "a + b")
    k(a:slice(-1, 1, -1), a)
    local got, sum = a:get(), 0
    for i = 1, n do
      sum = sum + values[n - i + 1]
      assert.are.equal(sum, got[i])
    end
  end)
end)
