-- Regressions from a review of the C core (src/): each was a memory error, a crash waiting for
-- the right stack, or an error message that blamed the wrong argument.

local helpers = require "helpers"
local gpu = helpers.gpu
local core = require "gpu.core"
local assert_error = helpers.assert_error

describe("C core review", function()
  it("compile takes only strings for target, arch and name", function()
    -- a number was converted on the stack, popped, and its string used after it could be freed
    local src = "__global__ void k(int *a) { a[0] = 1; }"
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'name' must be a string, got number)",
                 core.compile, src, {arch = "compute_90", name = 5})
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'arch' must be a string, got number)",
                 core.compile, src, {arch = 90})
    assert_error("bad argument #2 to 'gpu.core.compile' (option 'target' must be a string, got table)",
                 core.compile, src, {arch = "sm_90", target = {}})
  end)

  it("from_table takes tables nested to the full 32 dimensions", function()
    -- table_shape, infer_dtype and fill_from_table push one value per level without asking Lua
    -- for stack space; 32 levels overran the 20 slots a C function is guaranteed
    local value = math.random(1, 1000)
    local t = value
    for _ = 1, 32 do t = {t} end
    local run = coroutine.wrap(function() return gpu.host.from_table(t) end)
    local h = run()
    assert.are.equal(32, h.ndim)
    assert.are.equal("int64", h.dtype)
    assert.are.equal(value, h[1])
    assert.are.equal(value, gpu.host.from_table(t, "int32")[1])
  end)

  it("reshape and array_view name the argument of a bad shape or stride item", function()
    local h = gpu.host.empty(6)
    assert_error("bad argument #1 to 'reshape' (shape item 2 must be a whole number, got string)",
                 function() return h:reshape({2, "x"}) end)
    assert_error("bad argument #1 to 'reshape' (shape item 1 must be a whole number, got number)",
                 function() return h:reshape({1.5, 4}) end)
    assert.are.same({3, 2}, h:reshape({3, 2}).shape)
  end)

  helpers.gpu_it("launches with more In/InOut arguments than a C function's 20 free stack slots", function()
    -- each handler leaves a temporary Buffer on the stack until the launch is done
    local n, width = 40, 64
    local params, terms = {}, {}
    for i = 1, n do
      params[i] = "int *a" .. i
      terms[i] = "a" .. i .. "[threadIdx.x]"
    end
    local src = ("__global__ void sum(int *out, %s) { out[threadIdx.x] = %s; a1[threadIdx.x] = -1; }")
                :format(table.concat(params, ", "), table.concat(terms, " + "))
    local f = gpu.SourceModule(src).sum
    local out, args, expect = gpu.host.zeros(width, "int32"), {}, {}
    for j = 1, width do expect[j] = 0 end
    local first
    for i = 1, n do
      local values = helpers.random_integers(width, -1000, 1000)
      for j = 1, width do expect[j] = expect[j] + values[j] end
      local h = gpu.host.from_table(values, "int32")
      if i == 1 then first = h end
      args[i] = i == 1 and gpu.InOut(h) or gpu.In(h)
    end
    args[n + 1] = {block = width}
    f(gpu.Out(out), table.unpack(args))
    for j = 1, width do
      assert.are.equal(expect[j], out[j])
      assert.are.equal(-1, first[j])
    end
  end)

  helpers.gpu_it("names the argument of a freed In/Out host array and of a bad prepared shared size", function()
    local f = gpu.SourceModule("__global__ void twice(int *a, int n) { if (threadIdx.x < n) a[threadIdx.x] *= 2; }",
                               {cache = false}).twice
    local h = gpu.host.from_table({1, 2, 3}, "int32")
    local handler = gpu.InOut(h)
    h:free()
    assert_error("bad argument #1 to 'twice' (the host array of this In/Out/InOut has been freed)",
                 function() f(handler, 3, {block = 3}) end)
    f:prepare("Pi")
    local values = helpers.random_integers(3, -1000, 1000)
    local buf = gpu.to_device(gpu.host.from_table(values, "int32"))
    assert_error("bad argument #5 to 'prepared_call' (shared must be a byte count (0 or more))",
                 function() f:prepared_call(1, 3, buf, 3, {shared = "x"}) end)
    f:prepared_call(1, 3, buf, 3, {shared = 0})
    local back = gpu.from_device(buf, 3, "int32")
    for i = 1, 3 do assert.are.equal(2 * values[i], back[i]) end
  end)

  it("lua_gpu_push_array refuses a layout whose byte offsets overflow, before any device work", function()
    -- the reach of each dimension was computed with wrapping signed arithmetic
    local out, ok = require("embed_helpers").run_host([[
      for _, case in ipairs {
        {{2^40 // 1, 2^40 // 1}},                          -- compact strides overflow
        {{2^32 // 1, 2}, {2^32 // 1, 8}},                  -- stride * (n - 1) overflows
        {{2, 2}, {2^62 // 1, 2^62 // 1}},                  -- the sum of reaches overflows
        {{2, 2}, {-2^62 // 1, -2^62 // 1}},                -- the same downwards
      } do
        local a, err = c_push_array(4096, "float64", case[1], case[2])
        assert(a == nil and err == "array layout reaches beyond 64-bit byte offsets", tostring(err))
      end
      assert(release_calls() == 0)
      print "refused"
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("refused\n"), out)
  end)

  it("cache_store refuses an empty directory name", function()
    -- make_dirs started scanning one byte past the end of an empty string
    assert.is_false(core.cache_store("", "entry", "key", "image"))
  end)
end)
