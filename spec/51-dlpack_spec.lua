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
  it("refuses what is neither a capsule nor a producer", function()
    local expected = "bad argument #1 to 'from_dlpack' (gpu.DLPack or object with __dlpack__ "
                     .. "expected, got "
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
        -- a raw pointer is the C API's alone: Lua could forge one (h:ptr() of crafted bytes)
        expect_error("bad argument #1 to 'from_dlpack' (a raw DLPack pointer is not taken from "
                     .. "Lua (a script could forge one): a capsule is, or lua_gpu_push_dlpack in C)",
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
      local b = assert(c_push_dlpack(fake_tensor{data = 8192}))   -- a pointer, in C: Lua owns it now
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

-- DLPack's contract: the producer keeps the memory until the consumer's deleter has run.  A
-- :free() of the producing array (its a.gpudata, the Buffer under it) while an export is alive
-- makes the producer unusable, but the memory stays the consumer's until the sweep after the
-- last deleter.  On the stand-in driver, whose cuMemGetInfo counts the bytes allocated and not
-- freed (and FAKE_CUDA_REPORT=1 prints them at exit), with the pool and without it.
describe("DLPack exports of an array freed explicitly", function()
  -- Lua code for the child: expect_error, used() (device bytes allocated), and check(arr, t)
  -- (arr's elements are t's).
  local prelude = expect_error .. [[
    local gpu = require "gpu"
    local function used()
      local free, total = gpu.mem_get_info()
      return total - free
    end
    local function check(arr, t, what)
      local got = arr:get():totable()
      assert(#got == #t, what)
      for i = 1, #t do
        if got[i] ~= t[i] then error(("%s: element %d is %s, not %s"):format(what, i, got[i], t[i]), 2) end
      end
    end
  ]]

  -- values: n random integers (exact as float64), as a Lua table constructor
  local function random_values(n)
    return "{" .. table.concat(helpers.random_integers(n, -2^40, 2^40), ", ") .. "}"
  end

  local released = "fakecuda: 0 device bytes not freed at exit\n"

  local function run(code, pool)
    local env = {FAKE_CUDA_REPORT = "1", GPU_POOL_DISABLE = pool == "off" and "1" or nil}
    local out, ok = helpers.run_with_fakes(prelude .. code, env)
    assert(ok, out)
    return out
  end

  for _, pool in ipairs{"on", "off"} do
    it("a capsule keeps its producer's memory through a:free() until the consumer is done (pool "
       .. pool .. ")", function()
      local out = run(([[
        local values = %s
        local n, nbytes = #values, #values * 8
        local base = used()
        local a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        assert(used() == base + nbytes)
        local ptr = a.ptr
        local cap = a:to_dlpack()
        a:free()
        a:free()                                   -- idempotent, as ever
        expect_error("calling 'get' on bad self (array has been freed)", function() return a:get() end)
        expect_error("bad argument #1 to 'index' (array has been freed)", function() return a.ptr end)
        expect_error("calling 'to_dlpack' on bad self (array has been freed)",
                     function() return a:to_dlpack() end)
        assert(a.freed and used() == base + nbytes, "the export keeps the memory")
        local b = gpu.zeros(n, "float64")          -- may not land on the exported memory
        assert(b.ptr ~= ptr and used() == base + 2 * nbytes, "a new allocation on kept memory")
        local z = gpu.from_dlpack(cap)
        assert(z.ptr == ptr and z.ptr ~= b.ptr, "the import aliases a new allocation")
        check(z, values, "imported after the producer's free")
        local zeros = {}
        for i = 1, n do zeros[i] = 0 end
        check(b, zeros, "the new allocation")
        assert(gpu._dlpack_exports() == 1 and used() == base + 2 * nbytes)
        z:free()
        z:free()
        expect_error("calling 'get' on bad self (array has been freed)", function() return z:get() end)
        assert(gpu._dlpack_exports() == 0, "the sweep lets go of the export")
        assert(used() == base + nbytes, "and releases its memory")
        b:free()
        assert(used() == base)
        -- a capsule never consumed: freed (or collected), its deleter lets the memory go
        local c = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local unused = c:to_dlpack()
        c:free()
        assert(used() == base + nbytes)
        unused:free()
        assert(gpu._dlpack_exports() == 0 and used() == base)
        -- several exports: the last one's deleter releases it
        local d = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local cap1, cap2 = d:to_dlpack(), d:to_dlpack()
        local z1 = gpu.from_dlpack(cap1)
        d:free()
        z1:free()
        assert(gpu._dlpack_exports() == 1 and used() == base + nbytes, "one export is left")
        local z2 = gpu.from_dlpack(cap2)
        check(z2, values, "the second consumer")
        z2:free()
        assert(gpu._dlpack_exports() == 0 and used() == base)
        -- a free with no export alive releases at once, as before
        local e = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        e:free()
        assert(used() == base)
        -- and so does one whose consumers are done, though no DLPack call has swept them yet
        for _, free in ipairs{function(x) x:free() end, function(x) x.gpudata:free() end,
                              function(x) gpu.free_after(x) end} do
          local f = gpu.to_gpu(gpu.host.from_table(values, "float64"))
          local w = gpu.from_dlpack(f)
          w:free()
          free(f)
          assert(f.freed and used() == base, "released at the free")
        end
        local buf = gpu.mem_alloc(nbytes)
        local w = gpu.from_dlpack(gpu.array_view(buf, 0, "float64", {n}))
        w:free()
        buf:free()
        assert(used() == base and gpu._dlpack_exports() == 0)
        print "kept"
      ]]):format(random_values(1024)), pool)
      assert.are.equal("kept\n" .. released, out)
    end)

    it("gpu.from_dlpack(a) keeps a's memory through a:free() (pool " .. pool .. ")", function()
      local out = run(([[
        local values, later = %s, %s
        local n, nbytes = #values, #values * 8
        local base = used()
        local a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local z = gpu.from_dlpack(a)               -- a:__dlpack__(), consumed at once
        a:free()
        expect_error("calling 'get' on bad self (array has been freed)", function() return a:get() end)
        local b = gpu.to_gpu(gpu.host.from_table(later, "float64"))
        assert(b.ptr ~= z.ptr and used() == base + 2 * nbytes, "a new allocation on kept memory")
        check(z, values, "the consumer after a:free()")
        z:set(gpu.host.from_table(later, "float64"))   -- still writable: the memory is z's
        check(z, later, "written through the consumer")
        z:free()
        assert(gpu._dlpack_exports() == 0 and used() == base + nbytes)
        b:free()
        -- a consumer left to the collector: the collection that a large allocation runs sweeps
        local c = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local function consume() local w = gpu.from_dlpack(c); return w.ptr end
        assert(consume() == c.ptr)
        c:free()
        assert(used() == base + nbytes)
        local big = gpu.empty(40 << 20, "uint8")   -- past the collector's 32 MiB of device bytes
        assert(used() == base + (40 << 20), "released by the collection's sweep")
        big:free()
        -- an imported array exported again keeps the first producer's memory too
        local p = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local q = gpu.from_dlpack(p)
        local cap = q:to_dlpack()
        p:free()
        q:free()
        assert(used() == base + nbytes and gpu._dlpack_exports() == 2)
        local r = gpu.from_dlpack(cap)
        check(r, values, "imported twice")
        r:free()
        assert(gpu._dlpack_exports() == 0 and used() == base, "both exports let go in one sweep")
        print "consumed"
      ]]):format(random_values(512), random_values(512)), pool)
      assert.are.equal("consumed\n" .. released, out)
    end)

    it("views, a.gpudata and the Buffers under an export keep its memory too (pool " .. pool .. ")",
       function()
      local out = run(([[
        local values = %s
        local n, nbytes = #values, #values * 8
        local base = used()
        -- a view exported, its owner freed
        local a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local v = a:reshape(2, n // 2)
        local cap = v:to_dlpack()
        a:free()
        expect_error("calling 'get' on bad self (array has been freed)", function() return v:get() end)
        assert(used() == base + nbytes, "a view's export keeps the memory")
        local z = gpu.from_dlpack(cap)
        check(z:reshape(n), values, "a view's export")
        z:free()
        assert(gpu._dlpack_exports() == 0 and used() == base)
        -- the array exported, its a.gpudata freed
        a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        local g = a.gpudata
        cap = a:to_dlpack()
        g:free()
        g:free()
        expect_error("bad argument #1 to 'len' (buffer has been freed)", function() return #g end)
        expect_error("calling 'get' on bad self (array has been freed)", function() return a:get() end)
        assert(tostring(g) == "gpu.Buffer(freed)" and used() == base + nbytes)
        z = gpu.from_dlpack(cap)
        check(z, values, "after a.gpudata:free()")
        z:free()
        a:free()
        assert(gpu._dlpack_exports() == 0 and used() == base)
        -- an array on a Buffer's view exported; freeing the view detaches it, the Buffer frees
        local buf = gpu.mem_alloc(nbytes)
        gpu.memcpy_htod(buf, gpu.host.from_table(values, "float64"))
        local half = buf:offset(nbytes // 2)
        local x = gpu.array_view(half, 0, "float64", {n // 2})
        cap = x:to_dlpack()
        half:free()
        assert(#buf == nbytes and used() == base + nbytes)
        buf:free()
        buf:free()
        expect_error("bad argument #1 to 'len' (buffer has been freed)", function() return #buf end)
        expect_error("calling 'get' on bad self (array has been freed)", function() return x:get() end)
        assert(used() == base + nbytes)
        z = gpu.from_dlpack(cap)
        check(z, table.move(values, n // 2 + 1, n, 1, {}), "a Buffer's second half")
        z:free()
        assert(gpu._dlpack_exports() == 0 and used() == base)
        print "views"
      ]]):format(random_values(256)), pool)
      assert.are.equal("views\n" .. released, out)
    end)

    it("a state that closes releases the memory its exports kept (pool " .. pool .. ")", function()
      local out = run([[
        local values = {}
        for i = 1, 300 do values[i] = i end
        local a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        unconsumed = a:to_dlpack()                 -- globals: alive when the state closes
        a:free()
        local b = gpu.to_gpu(gpu.host.from_table(values, "float64"))
        consumer = gpu.from_dlpack(b)
        b:free()
        print(gpu._dlpack_exports())
      ]], pool)
      assert.are.equal("2\n" .. released, out)
    end)
  end

  it("a module's global keeps its image loaded through m:free() until the consumer is done", function()
    local out = run([[
      local core = require "gpu.core"
      local base = used()
      local m = gpu.module_from_buffer("any image: the stand-in loads it")
      local images = setmetatable({core.module_image(m)}, {__mode = "v"})
      local g = m:get_global("x")
      assert(used() == base, "a global is the image's memory, no allocation")
      local cap = gpu.GPUArray({32}, "float64", {gpudata = g}):to_dlpack()
      m:free()
      expect_error("calling 'ptr' on bad self (buffer has been freed)", function() return g:ptr() end)
      g = nil
      collectgarbage()
      collectgarbage()
      local share = core.module_share(images[1])
      assert(share and share:is_loaded(), "the image was unloaded under an export")
      share:free()
      local z = gpu.from_dlpack(cap)
      z:free()
      m, share, cap, z = nil, nil, nil, nil
      local exports = gpu._dlpack_exports()      -- a sweep: the consumer is done
      collectgarbage()
      collectgarbage()
      print(exports, images[1] == nil)
    ]])
    assert.are.equal("0\ttrue\n" .. released, out)
  end)

  it("the module's own collection reclaims a dropped export whose consumer is done", function()
    -- the collection an allocation runs (past 32 MiB) lets go of done exports first, so the
    -- arrays they pinned are collected in the same pass, and an OOM retry finds their memory
    local out = run([[
      local base = used()
      do
        local a = gpu.zeros(1 << 20, "float64")   -- 8 MiB, dropped without a:free()
        gpu.from_dlpack(a:to_dlpack()):free()
      end
      local big = gpu.empty(40 << 20, "uint8")
      print((used() - base - (40 << 20)) >> 20)
      big:free()
    ]])
    assert.are.equal("0\n" .. released, out)
  end)
end)

-- The same on a device, in a child (a fresh state, and GPU_POOL_DISABLE=1 for plain
-- cuMemAlloc/cuMemFree, where reading freed memory is an illegal address that ruins the
-- context): fresh random data, checked against a Lua copy through copies and kernels.
describe("DLPack exports of an array freed explicitly, on a device", function()
  local child = expect_error .. [[
    local gpu = require "gpu"
    local pooled = os.getenv("GPU_POOL_DISABLE") ~= "1"
    local n = 1 << 21                                -- 16 MiB of float64
    local nbytes = n * 8
    local function fresh()
      local t = {}
      for i = 1, n do t[i] = math.random(-2^40, 2^40) + math.random() end
      return t
    end
    local function check(arr, f, what)
      local got = arr:get():totable()
      for i = 1, n do
        local want = f(i)
        if got[i] ~= want then
          error(("%s: element %d is %.17g, not %.17g"):format(what, i, got[i], want), 2)
        end
      end
    end
    -- device bytes in use: the pool's exact figure, or the device's
    local function in_use()
      collectgarbage(); collectgarbage()
      gpu.synchronize()
      if pooled then return (gpu.mem_pool_info()) end
      local free, total = gpu.mem_get_info()
      return total - free
    end
    local function near(got, want, what)
      local slack = pooled and 1 << 20 or nbytes // 2
      if math.abs(got - want) > slack then
        error(("%s: %d MiB in use, not %d MiB"):format(what, got >> 20, want >> 20), 2)
      end
    end
    local warm = gpu.zeros(4, "float64")             -- the kernels' modules, loaded first
    warm:fill(1)
    warm = (warm * 2 + 1):get()
    -- Each check compares the bytes in use just before and after one step: without the pool
    -- the device's figure also moves with what the driver reserves for itself now and then
    -- (400 MiB once between two steps on the H100), which no step of ours explains.

    -- a capsule, its producer freed, a new allocation made, then the import
    local values = fresh()
    local a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
    local ptr = a.ptr
    local cap = a:to_dlpack()
    local before = in_use()
    a:free()
    expect_error("calling 'get' on bad self (array has been freed)", function() return a:get() end)
    near(in_use(), before, "kept for the capsule")
    local b = gpu.empty(n, "float64")
    b:fill(-1.5)
    local z = gpu.from_dlpack(cap)
    assert(z.ptr == ptr and z.ptr ~= b.ptr, "the import aliases a new allocation")
    check(z, function(i) return values[i] end, "imported after the producer's free")
    local doubled = z * 2                            -- a kernel reads the kept memory
    check(doubled, function(i) return 2 * values[i] end, "2 * z")
    doubled:free()
    z:fill(0.25)                                     -- and one writes it
    check(z, function() return 0.25 end, "z filled")
    check(b, function() return -1.5 end, "the new allocation, untouched")
    before = in_use()
    z:free()
    assert(gpu._dlpack_exports() == 0, "the export is let go")
    near(in_use(), before - nbytes, "released after the consumer's deleter")
    b:free()

    -- gpu.from_dlpack(a), then a.gpudata:free()
    values = fresh()
    a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
    z = gpu.from_dlpack(a)
    local g = a.gpudata
    before = in_use()
    g:free()
    near(in_use(), before, "kept for the consumer")
    expect_error("bad argument #1 to 'len' (buffer has been freed)", function() return #g end)
    expect_error("calling 'get' on bad self (array has been freed)", function() return a:get() end)
    b = gpu.empty(n, "float64")
    b:fill(7)
    local plus = z + 1
    check(plus, function(i) return values[i] + 1 end, "z + 1 after a.gpudata:free()")
    check(z, function(i) return values[i] end, "the consumer after a.gpudata:free()")
    plus:free()
    b:free()
    before = in_use()
    z:free()
    assert(gpu._dlpack_exports() == 0)
    near(in_use(), before - nbytes, "released after a.gpudata's consumer")

    -- a view exported, its owner freed
    values = fresh()
    a = gpu.to_gpu(gpu.host.from_table(values, "float64"))
    z = gpu.from_dlpack(a:reshape(2, n // 2))
    before = in_use()
    a:free()
    near(in_use(), before, "kept for a view's consumer")
    b = gpu.zeros(n, "float64")
    check(z:reshape(n), function(i) return values[i] end, "a view's consumer")
    b:free()
    before = in_use()
    z:free()
    assert(gpu._dlpack_exports() == 0)
    near(in_use(), before - nbytes, "released after the view's consumer")
    print "device ok"
  ]]

  for _, pool in ipairs{"on", "off"} do
    gpu_it("a producer freed while exported keeps the memory for its consumer (pool " .. pool .. ")",
           function()
      local env = pool == "off" and {GPU_POOL_DISABLE = "1"} or {}
      local seed = ("math.randomseed(%d)\n"):format(math.random(1, 2^31))
      local out, ok = helpers.run_lua(seed .. child, env)
      assert(ok, out)
      assert.are.equal("device ok\n", out)
    end)
  end
end)
