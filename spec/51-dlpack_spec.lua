-- DLPack 1.x: capsules, import checks and ownership (CPU, through the C test host's fake
-- tensors), and zero-copy round trips with the deleter called exactly once (GPU).

local helpers = require "helpers"
local embed = require "embed_helpers"
local gpu = helpers.gpu
local gpu_it = helpers.gpu_it
local assert_error = helpers.assert_error

local function run_host(code)
  local out, ok = embed.run_host(code)
  assert.is_true(ok, out)
  return out
end

-- Lua code for the host that checks pcall(fn) fails with exactly msg.
local expect_error = [[
  local function expect_error(msg, fn)
    local ok, err = pcall(fn)
    assert(not ok, "expected an error: " .. msg)
    err = tostring(err):gsub("^[^:\n]+:%d+: ", "")
    if err ~= msg then error(("expected %q, got %q"):format(msg, err), 2) end
  end
]]

describe("gpu.from_dlpack", function()
  it("refuses what is neither a capsule, a tensor pointer nor a producer", function()
    local expected = "bad argument #1 to 'from_dlpack' (gpu.DLPack, DLManagedTensorVersioned "
                     .. "pointer or object with __dlpack__ expected, got "
    assert_error(expected .. "number)", function() local a = gpu.from_dlpack(42) end)
    assert_error(expected .. "no value)", function() local a = gpu.from_dlpack() end)
    assert_error(expected .. "table)", function() local a = gpu.from_dlpack({}) end)
    assert_error(expected .. "table)", function() local a = gpu.from_dlpack({__dlpack__ = 1}) end)
    -- a producer whose __dlpack__ gives something else is blamed the same way
    assert_error(expected .. "string)",
                 function() local a = gpu.from_dlpack({__dlpack__ = function() return "x" end}) end)
  end)

  it("refuses tensors it cannot import, leaving them with their owner", function()
    local out = run_host(expect_error .. [[
      local gpu = require "gpu"
      local cases = {
        {{major = 2}, "unsupported DLPack version 2.1 (expected 1.x)"},
        {{device_type = 1}, "DLPack tensor is not in CUDA device memory (device type 1)"},
        {{code = 5, bits = 32}, "unsupported DLPack dtype (code 5, 32 bits, 1 lanes)"},   -- complex32
        {{code = 2, bits = 32, lanes = 4}, "unsupported DLPack dtype (code 2, 32 bits, 4 lanes)"},
        {{code = 0, bits = 12}, "unsupported DLPack dtype (code 0, 12 bits, 1 lanes)"},
        {{flags = 1}, "read-only DLPack tensors are not supported (GPUArrays are writable)"},
        {{ndim = 33}, "DLPack tensor has 33 dimensions (at most 32)"},
        {{shape = {-1}}, "DLPack tensor has a negative dimension"},
        {{data = 0}, "DLPack tensor has a null data pointer"},
      }
      local capsules = {}                 -- alive until the state closes, so no gc runs their deleters early
      for _, case in ipairs(cases) do
        local cap = fake_capsule(case[1])
        capsules[#capsules + 1] = cap
        expect_error("bad argument #1 to 'from_dlpack' (" .. case[2] .. ")",
                     function() local a = gpu.from_dlpack(cap) end)
        assert(not cap:is_consumed(), "a failed import must not consume the capsule")
        local p = fake_tensor(case[1])
        expect_error("bad argument #1 to 'from_dlpack' (" .. case[2] .. ")",
                     function() local a = gpu.from_dlpack(p) end)
        local a, err = c_push_dlpack(p)
        assert(a == nil and err == case[2], err)
        call_deleter(p)                   -- the host still owns it
      end
      assert(deleter_calls() == #cases)
      print("refused", #cases)
    ]])
    -- each capsule's deleter ran once more, when the state closed
    assert.is_truthy(out:find("refused\t9\nclosed: deleter_calls=18 ", 1, true), out)
  end)
end)

describe("gpu.DLPack capsules", function()
  it("hand their tensor over once: pointer, then consumed", function()
    local out = run_host(expect_error .. [[
      local gpu = require "gpu"
      local cap = fake_capsule{}
      assert(tostring(cap):match("^gpu%.DLPack%(0x%x+%)$"), tostring(cap))
      assert(not cap:is_consumed())
      local p = cap:pointer()
      assert(type(p) == "userdata" and cap:is_consumed())
      assert(tostring(cap) == "gpu.DLPack(consumed)")
      expect_error("calling 'pointer' on bad self (DLPack capsule has already been consumed)",
                   function() local q = cap:pointer() end)
      expect_error("bad argument #1 to 'from_dlpack' (DLPack capsule has already been consumed)",
                   function() local a = gpu.from_dlpack(cap) end)
      local q, err = c_to_dlpack(cap)
      assert(q == nil and err == "bad argument #1 to '?' (DLPack capsule has already been consumed)", err)
      cap:free()                          -- a consumed capsule has nothing left to release
      assert(deleter_calls() == 0)
      call_deleter(p)                     -- the new owner releases it, once
      assert(deleter_calls() == 1)
      collectgarbage(); collectgarbage()
      assert(deleter_calls() == 1)
      print "consumed"
    ]])
    assert.is_truthy(out:find("consumed\nclosed: deleter_calls=1 ", 1, true), out)
  end)

  it("call the deleter exactly once when nobody consumes them", function()
    local out = run_host(expect_error .. [[
      local gpu = require "gpu"
      local cap = fake_capsule{}
      cap:free()
      assert(deleter_calls() == 1)
      cap:free()
      assert(deleter_calls() == 1 and tostring(cap) == "gpu.DLPack(freed)")
      expect_error("calling 'pointer' on bad self (DLPack capsule has been freed)",
                   function() local p = cap:pointer() end)
      expect_error("bad argument #1 to 'from_dlpack' (DLPack capsule has been freed)",
                   function() local a = gpu.from_dlpack(cap) end)
      do local closed <close> = fake_capsule{} end
      assert(deleter_calls() == 2)
      local dropped = fake_capsule{}
      dropped = nil
      collectgarbage(); collectgarbage()
      assert(deleter_calls() == 3)
      kept = fake_capsule{}               -- released when the state closes
      print "released"
    ]])
    assert.is_truthy(out:find("released\nclosed: deleter_calls=4 ", 1, true), out)
  end)

  it("lua_gpu_to_dlpack consumes a capsule and refuses other values", function()
    local out = run_host([[
      local cap = fake_capsule{shape = {7}}
      local p = assert(c_to_dlpack(cap))
      assert(cap:is_consumed() and tensor_info(p).shape[1] == 7)
      local q, err = c_to_dlpack(42)
      assert(q == nil and err == "expected a gpu.GPUArray or gpu.DLPack, got number", err)
      call_deleter(p)
      print "taken"
    ]])
    assert.is_truthy(out:find("taken\nclosed: deleter_calls=1 ", 1, true), out)
  end)

  if not helpers.has_gpu then
    it("a valid tensor without a device fails with the driver's error, unconsumed", function()
      local out = run_host([[
        local gpu = require "gpu"
        local cap = fake_capsule{}
        local ok, err = pcall(gpu.from_dlpack, cap)
        assert(not ok and gpu.Error.is(err), tostring(err))
        assert(not cap:is_consumed())
        print "no device"
      ]])
      assert.is_truthy(out:find("no device\nclosed: deleter_calls=1 ", 1, true), out)
    end)
  end

  gpu_it("importing a tensor aliases its memory and calls the deleter once on free", function()
    local out = run_host(expect_error .. [[
      local gpu = require "gpu"
      local cap = fake_capsule{data = 4096, shape = {4, 4}, ndim = 2}
      local a = gpu.from_dlpack(cap)     -- zero copy: nothing touches the (fake) memory
      assert(cap:is_consumed() and a.ptr == 4096 and a.dtype == "float32")
      assert(a.shape[1] == 4 and a.shape[2] == 4 and a.strides[1] == 16 and a.is_contiguous)
      a:free()
      a:free()
      assert(deleter_calls() == 1)
      expect_error("bad argument #1 to 'to_dlpack' (array has been freed)",
                   function() local c = a.to_dlpack(a) end)
      local b = gpu.from_dlpack(fake_tensor{data = 8192})   -- a pointer: Lua owns it now
      b = nil
      collectgarbage(); collectgarbage()
      assert(deleter_calls() == 2)
      kept = gpu.from_dlpack(fake_capsule{})
      print "imported"
    ]])
    assert.is_truthy(out:find("imported\nclosed: deleter_calls=3 ", 1, true), out)
  end)

  gpu_it("exports describe every dtype, shape and element strides", function()
    local out = run_host([[
      local gpu = require "gpu"
      local codes = {bool = {6, 8}, int8 = {0, 8}, uint8 = {1, 8}, int16 = {0, 16},
        uint16 = {1, 16}, int32 = {0, 32}, uint32 = {1, 32}, int64 = {0, 64}, uint64 = {1, 64},
        float16 = {2, 16}, bfloat16 = {4, 16}, float32 = {2, 32}, float64 = {2, 64}}
      local n = 0
      for dtype, code in pairs(codes) do
        local a = gpu.array_empty({2, 3}, dtype)
        local p = assert(c_to_dlpack(a))
        local t = tensor_info(p)
        assert(t.major == 1 and t.device_type == 2 and t.device_id == gpu.device_ordinal())
        assert(t.code == code[1] and t.bits == code[2] and t.lanes == 1, dtype)
        assert(t.data == a.ptr and t.ndim == 2 and t.shape[1] == 2 and t.shape[2] == 3)
        assert(t.strides[1] == 3 and t.strides[2] == 1 and t.flags == 0)
        call_deleter(p)
        local back = gpu.from_dlpack(a:to_dlpack())
        assert(back.dtype == dtype and back.ptr == a.ptr, dtype)
        n = n + 1
      end
      -- a transposed view: element strides, not bytes
      local m = gpu.array_empty({3, 4}, "float64")
      local t_view = gpu.array_view(m, 0, "float64", {4, 3}, {8, 32})
      local t = tensor_info(assert(c_to_dlpack(t_view)))
      assert(t.strides[1] == 1 and t.strides[2] == 4 and t.shape[1] == 4)
      print("dtypes", n)
    ]])
    assert.is_truthy(out:find("dtypes\t13\n", 1, true), out)
  end)
end)

describe("DLPack round trips", function()
  gpu_it("a -> to_dlpack -> from_dlpack shares memory both ways", function()
    local n = 257
    local values = helpers.random_integers(n, -1000000, 1000000)
    local a = gpu.array_empty(n, "int32")
    gpu.memcpy_htod(a.gpudata, gpu.host.from_table(values, "int32"))
    local b = gpu.from_dlpack(a:to_dlpack())
    assert.are.equal(a.ptr, b.ptr)
    assert.are.same(a.shape, b.shape)
    local c = gpu.from_dlpack(a)            -- a producer: from_dlpack calls a:__dlpack__()
    assert.are.equal(a.ptr, c.ptr)
    assert.are.same(a.shape, c.shape)
    c:free()
    local seen = gpu.from_device(b.gpudata, n, "int32")
    for i = 1, n do assert.are.equal(values[i], seen[i]) end
    -- write through b, read through a
    local negate = gpu.SourceModule([[
      __global__ void negate(int *x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = -x[i];
      }]]):get_function("negate")
    negate(b, gpu.int32(n), {block = {128}, grid = {3}})
    local back = gpu.from_device(a.gpudata, n, "int32")
    for i = 1, n do assert.are.equal(-values[i], back[i]) end
    b:free()
  end)

  gpu_it("an export keeps its array alive until the deleter runs, exactly once", function()
    local before = gpu._dlpack_exports()
    local a = gpu.array_empty({8, 8}, "float32")
    local cap = a:to_dlpack()
    assert.are.equal(before + 1, gpu._dlpack_exports())
    local b = gpu.from_dlpack(cap)
    assert.is_true(cap:is_consumed())
    assert_error("calling 'pointer' on bad self (DLPack capsule has already been consumed)",
                 function() local p = cap:pointer() end)
    assert_error("bad argument #1 to 'from_dlpack' (DLPack capsule has already been consumed)",
                 function() local c = gpu.from_dlpack(cap) end)
    a = nil
    collectgarbage(); collectgarbage()
    assert.are.equal(before + 1, gpu._dlpack_exports())   -- still pinned for b
    b:free()
    assert.are.equal(before, gpu._dlpack_exports())
    b:free()
    assert.are.equal(before, gpu._dlpack_exports())
    local unused = gpu.array_empty(4, "float32"):to_dlpack()
    assert.are.equal(before + 1, gpu._dlpack_exports())
    unused = nil
    collectgarbage(); collectgarbage()
    assert.are.equal(before, gpu._dlpack_exports())
  end)

  gpu_it("to_dlpack refuses a freed array", function()
    local a = gpu.array_empty(4, "float32")
    a:free()
    assert_error("calling 'to_dlpack' on bad self (array has been freed)",
                 function() local c = a:to_dlpack() end)
    local k, ordinal = gpu.array_empty(1, "float32"):__dlpack_device__()
    assert.are.equal(2, k)
    assert.are.equal(gpu.device_ordinal(), ordinal)
  end)
end)
