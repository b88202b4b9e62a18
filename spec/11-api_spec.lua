-- The names ../shared/API.md binds, present where it says (CPU: no device needed to look).
-- Semantics are the other specs' job; this one catches a renamed or missing entry point.

local helpers = require "helpers"
local gpu = helpers.gpu
local core = require "gpu.core"

local function methods_of(type_name)
  return core.types[type_name].__methods or core.types[type_name].__index
end

describe("API.md", function()
  it("names every module-level function and table", function()
    local names = {
      "available", "device_count", "driver_version", "nvrtc_version", "Device", "set_device",
      "get_device", "synchronize", "mem_get_info", "dtype", "mem_alloc", "memcpy_htod",
      "memcpy_dtoh", "memcpy_dtod", "memcpy_htod_async", "memcpy_dtoh_async",
      "memcpy_dtod_async", "memset_d8", "memset_d16", "memset_d32", "to_device", "from_device",
      "In", "Out", "InOut", "SourceModule", "compile", "module_from_buffer", "module_from_file",
      "Stream", "Event", "to_gpu", "empty", "zeros", "ones", "full", "arange", "empty_like",
      "zeros_like", "ElementwiseKernel", "ReductionKernel", "InclusiveScanKernel",
      "ExclusiveScanKernel", "cumsum", "fuse", "from_dlpack", "capture",
      "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
      "float64",
    }
    for _, name in ipairs(names) do
      assert.are.equal("function", type(gpu[name]) == "table" and getmetatable(gpu[name])
                       and getmetatable(gpu[name]).__call and "function" or type(gpu[name]), name)
    end
    for _, name in ipairs{"host", "gpuarray", "cumath", "random", "Error"} do
      assert.are.equal("table", type(gpu[name]), name)
    end
    assert.are.equal("function", type(gpu.Error.is))
  end)

  it("names gpu.host's constructors", function()
    for _, name in ipairs{"empty", "zeros", "ones", "from_table", "from_bytes",
                          "pagelocked_empty", "pagelocked_zeros"} do
      assert.are.equal("function", type(gpu.host[name]), name)
    end
  end)

  it("names gpu.gpuarray's functions and gpu.cumath's and gpu.random's", function()
    for _, name in ipairs{"to_gpu", "empty", "zeros", "ones", "full", "arange", "empty_like",
                          "zeros_like", "where", "maximum", "minimum", "abs", "add", "sub",
                          "mul", "div", "sum", "prod", "min", "max", "mean", "dot"} do
      assert.are.equal("function", type(gpu.gpuarray[name]), "gpuarray." .. name)
    end
    for _, name in ipairs{"fabs", "ceil", "floor", "exp", "log", "log10", "sqrt", "sin", "cos",
                          "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "fmod"} do
      assert.are.equal("function", type(gpu.cumath[name]), "cumath." .. name)
    end
    for _, name in ipairs{"rand", "randn"} do
      assert.are.equal("function", type(gpu.random[name]), "random." .. name)
    end
  end)

  it("keeps the library's internal modules out of the gpu table", function()
    -- their helpers assume checked arguments; require "gpu.scan" and the like reach them
    assert.is_nil(gpu.reduction)
    assert.is_nil(gpu.scan)
    assert.is_nil(gpu.take)
    local names = {}
    for name in pairs(gpu.random) do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({"philox", "rand", "randn", "reference", "seed"}, names)
    -- gpu.gpuarray is the module itself, installer included: that checks its argument
    helpers.assert_error("bad argument #1 to 'install' (table expected, got number)", gpu.gpuarray.install, 1)
  end)

  it("names the methods of each type", function()
    local expect = {
      GPUArray = {"get", "set", "get_async", "set_async", "copy", "fill", "astype", "reshape",
                  "ravel", "view", "transpose", "slice", "eq", "ne", "lt", "le", "gt", "ge",
                  "any", "all", "sum", "prod", "min", "max", "mean", "iadd", "imul", "add",
                  "free", "to_dlpack"},
      HostArray = {"totable", "bytes", "fill", "reshape", "is_pagelocked", "free"},
      Buffer = {"ptr", "offset", "free"},
      Module = {"get_function", "get_global", "free"},
      Function = {"prepare", "prepared_call", "prepared_async_call", "prepared_timed_call",
                  "max_potential_block_size"},
      Stream = {"synchronize", "is_done", "wait_for_event", "begin_capture", "end_capture", "free"},
      Event = {"record", "synchronize", "query", "time_since", "time_till", "free"},
      Graph = {"launch", "free"},
    }
    for type_name, names in pairs(expect) do
      local methods = methods_of(type_name)
      assert.are.equal("table", type(methods), type_name)
      for _, name in ipairs(names) do
        assert.are.equal("function", type(methods[name]), type_name .. ":" .. name)
      end
    end
  end)

  it("gives each userdata type its gpu.* name", function()
    for _, type_name in ipairs{"Buffer", "HostArray", "GPUArray", "Module", "Function", "Stream",
                               "Event", "Graph"} do
      assert.are.equal("gpu." .. type_name, core.types[type_name].__name)
    end
  end)
end)
