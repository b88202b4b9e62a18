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
      "zeros_like", "ones_like", "full_like", "logspace", "geomspace", "ElementwiseKernel", "ReductionKernel", "InclusiveScanKernel",
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

  it("names gpu.gpuarray's functions and gpu.cumath's, gpu.random's and gpu.linalg's", function()
    for _, name in ipairs{"to_gpu", "empty", "zeros", "ones", "full", "arange", "empty_like",
                          "zeros_like", "where", "maximum", "minimum", "abs", "add", "sub",
                          "mul", "div", "sum", "prod", "min", "max", "mean", "dot", "flip",
                          "fliplr", "flipud", "rot90", "swapaxes", "moveaxis", "transpose",
                          "squeeze", "expand_dims", "ravel", "atleast_1d", "atleast_2d",
                          "atleast_3d", "split", "array_split", "hsplit", "vsplit", "dsplit",
                          "hstack", "vstack", "dstack", "column_stack", "around", "round",
                          "nan_to_num", "isin", "digitize", "average", "cov", "corrcoef",
                          "cross", "kron", "convolve", "correlate", "argwhere", "flatnonzero",
                          "trapezoid", "trapz", "tensordot", "inner", "einsum", "intersect1d",
                          "union1d", "setdiff1d", "setxor1d", "in1d", "lexsort", "unravel_index",
                          "ravel_multi_index", "insert", "delete", "append", "resize", "trim_zeros",
                          "sort_complex", "identity", "tri",
                          "diagflat", "vander", "logspace", "geomspace", "full_like",
                          "broadcast_arrays", "rollaxis", "ediff1d", "gradient", "polyval",
                          "polyadd", "polysub", "polymul", "polyder", "polyint", "polyfit",
                          "roots", "histogram2d"} do
      assert.are.equal("function", type(gpu.gpuarray[name]), "gpuarray." .. name)
    end
    assert.are.equal("function", type(gpu.gpuarray.linalg.norm), "gpuarray.linalg.norm")
    for _, name in ipairs{"fabs", "ceil", "floor", "exp", "log", "log10", "sqrt", "sin", "cos",
                          "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "fmod", "erf", "erfc",
                          "erfinv", "erfcinv", "gamma", "lgamma", "gammaln", "digamma", "psi", "i0",
                          "i1", "j0", "j1", "y0", "y1", "expit", "logit", "sinc", "deg2rad", "radians",
                          "rad2deg", "degrees", "square", "reciprocal", "signbit", "logaddexp",
                          "logaddexp2", "heaviside", "nextafter", "float_power", "gcd", "lcm",
                          "bitwise_count"} do
      assert.are.equal("function", type(gpu.cumath[name]), "cumath." .. name)
    end
    for _, name in ipairs{"rand", "randn", "uniform", "normal", "randint", "permutation", "shuffle", "choice",
                          "standard_exponential", "exponential", "standard_gamma", "gamma", "beta", "chisquare",
                          "standard_t", "f", "lognormal", "laplace", "logistic", "gumbel", "weibull", "pareto",
                          "rayleigh", "standard_cauchy", "poisson", "binomial", "geometric", "negative_binomial",
                          "multinomial", "dirichlet"} do
      assert.are.equal("function", type(gpu.random[name]), "random." .. name)
    end
    for _, name in ipairs{"solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd",
                          "matrix_rank", "pinv", "lstsq", "matrix_power", "multi_dot", "cond", "tensorinv",
                          "tensorsolve", "eig", "eigvals"} do
      assert.are.equal("function", type(gpu.linalg[name]), "linalg." .. name)
    end
    assert.are.equal(gpu.linalg, gpu.gpuarray.linalg)
  end)

  it("keeps the library's internal modules out of the gpu table", function()
    -- their helpers assume checked arguments; require "gpu.scan" and the like reach them
    assert.is_nil(gpu.reduction)
    assert.is_nil(gpu.scan)
    assert.is_nil(gpu.take)
    local names = {}
    for name in pairs(gpu.random) do names[#names + 1] = name end
    table.sort(names)
    assert.are.same({"beta", "binomial", "chisquare", "choice", "dirichlet", "exponential", "f", "gamma",
                     "geometric", "gumbel", "laplace", "logistic", "lognormal", "multinomial",
                     "negative_binomial", "normal", "pareto", "permutation", "philox", "poisson", "rand",
                     "randint", "randn", "rayleigh", "reference", "reference_beta", "reference_binomial",
                     "reference_chisquare", "reference_dirichlet", "reference_exponential", "reference_f",
                     "reference_gamma", "reference_geometric", "reference_gumbel", "reference_laplace",
                     "reference_logistic", "reference_lognormal", "reference_multinomial",
                     "reference_negative_binomial", "reference_normal", "reference_pareto",
                     "reference_permutation", "reference_poisson", "reference_randint", "reference_rayleigh",
                     "reference_sample", "reference_standard_cauchy", "reference_standard_exponential", "reference_standard_gamma",
                     "reference_standard_t", "reference_uniform", "reference_weibull", "seed", "shuffle",
                     "standard_cauchy", "standard_exponential", "standard_gamma", "standard_t", "uniform",
                     "weibull"}, names)
    -- gpu.gpuarray is the module itself, installer included: that checks its argument
    helpers.assert_error("bad argument #1 to 'install' (table expected, got number)", gpu.gpuarray.install, 1)
  end)

  it("names the methods of each type", function()
    local expect = {
      GPUArray = {"get", "set", "get_async", "set_async", "copy", "fill", "astype", "reshape",
                  "ravel", "view", "transpose", "slice", "eq", "ne", "lt", "le", "gt", "ge",
                  "any", "all", "sum", "prod", "min", "max", "mean", "iadd", "imul", "add",
                  "free", "to_dlpack", "flip", "squeeze", "expand_dims", "swapaxes", "moveaxis"},
      HostArray = {"totable", "bytes", "fill", "reshape", "is_pagelocked", "is_managed", "attach",
                   "prefetch", "free"},
      Buffer = {"ptr", "offset", "free"},
      Module = {"get_function", "get_global", "free"},
      Function = {"prepare", "prepared_call", "prepared_async_call", "prepared_timed_call",
                  "max_potential_block_size", "max_active_blocks_per_multiprocessor"},
      Stream = {"synchronize", "is_done", "wait_for_event", "begin_capture", "end_capture", "priority",
                "free"},
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
                               "Event", "Graph", "FFTPlan"} do
      assert.are.equal("gpu." .. type_name, core.types[type_name].__name)
    end
  end)

  it("reaches the userdata types by those names: gpu.HostArray, gpu.Buffer, ...", function()
    for _, type_name in ipairs{"HostArray", "Buffer", "Module", "Function", "Graph", "Scalar",
                               "ArgHandler", "DLPack", "FFTPlan", "GPUArray"} do
      assert.are.equal(core.types[type_name], gpu[type_name], type_name)
      assert.are.equal("gpu." .. type_name, gpu[type_name].__name)
    end
    -- what API.md makes constructors stays so; their types are getmetatable of one
    for _, name in ipairs{"Device", "Stream", "Event"} do
      assert.are.equal("function", type(gpu[name]), name)
    end
    -- the Context is no user's object; the module image is not even a type in core.types
    assert.is_nil(gpu.Context)
    assert.is_nil(core.types.ModuleImage)
    -- no __metatable hides a type: getmetatable answers the type itself
    local h = gpu.host.zeros({2, 2}, "float32")
    assert.are.equal(gpu.HostArray, getmetatable(h))
    assert.are.equal(gpu.HostArray, getmetatable(gpu.host.from_table({1, 2}, "int8")))
    assert.are.equal(gpu.Scalar, getmetatable(gpu.int32(3)))
    assert.are.equal(gpu.Scalar, getmetatable(gpu.float64(0.5)))
    assert.are.equal(gpu.ArgHandler, getmetatable(gpu.In(h)))
    assert.are.equal(gpu.ArgHandler, getmetatable(gpu.InOut(h)))
    assert.are_not.equal(gpu.Buffer, getmetatable(h))
  end)

  it("reaches the device objects' types by name too (on the stand-in driver)", function()
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local buf = gpu.mem_alloc(64)
      local mod = gpu.module_from_buffer("any image loads here", {k = "P"})
      local graph = gpu.capture(function() end)
      local a = gpu.zeros({4}, "float32")
      local f = mod.k
      print(getmetatable(buf) == gpu.Buffer, getmetatable(buf:offset(16)) == gpu.Buffer,
            getmetatable(mod) == gpu.Module, getmetatable(graph) == gpu.Graph,
            getmetatable(a) == gpu.GPUArray, getmetatable(a:to_dlpack()) == gpu.DLPack)
      -- each Function has a metatable of its own (see launch.c), with gpu.Function's name
      -- and methods
      local mt = getmetatable(f)
      print(mt == gpu.Function, mt.__name == gpu.Function.__name, mt.__methods == gpu.Function.__methods)
      print(getmetatable(gpu.Stream()) == require("gpu.core").types.Stream,
            getmetatable(gpu.Event()) == require("gpu.core").types.Event)
    ]])
    assert(ok, out)
    assert.are.equal("true\ttrue\ttrue\ttrue\ttrue\ttrue\nfalse\ttrue\ttrue\ntrue\ttrue\n", out)
  end)

  it("has gpu.ones_like beside gpu.empty_like and gpu.zeros_like", function()
    assert.are.equal(gpu.gpuarray.ones_like, gpu.ones_like)
    helpers.assert_error("bad argument #1 to 'ones_like' (GPUArray expected, got number)",
                         function() return gpu.ones_like(5) end)
    local out, ok = helpers.run_with_fakes([[
      local gpu = require "gpu"
      local a = gpu.ones_like(gpu.empty({3, 5}, "int16"))
      print(getmetatable(a) == gpu.GPUArray, a.dtype, table.concat(a.shape, "x"))
    ]])
    assert(ok, out)
    assert.are.equal("true\tint16\t3x5\n", out)
  end)

  helpers.gpu_it("fills gpu.ones_like's array with ones", function()
    local shape = {math.random(1, 40), math.random(1, 40)}
    for _, dtype in ipairs{"float32", "float64", "int32", "uint8"} do
      local like = gpu.to_gpu(gpu.host.from_table(helpers.random_integers(shape[1] * shape[2], 0, 100),
                                                  dtype):reshape(shape))
      local a = gpu.ones_like(like)
      assert.are.same(shape, a.shape)
      assert.are.equal(dtype, a.dtype)
      for _, v in ipairs(a:get():reshape(a.size):totable()) do assert.are.equal(1, v) end
    end
  end)
end)

describe("docs/api.md", function()
  -- Every public name (no leading underscore) of the module's tables and of each type's
  -- methods appears in the reference as a word of its own.
  it("lists every public name the module exports", function()
    local file = assert(io.open("docs/api.md"))
    local text = file:read("a")
    file:close()
    local missing = {}
    local function check(where, t)
      for name in pairs(t) do
        if type(name) == "string" and not name:match("^_") and
           not text:find("%f[%w_]" .. name .. "%f[^%w_]") then
          missing[#missing + 1] = where .. name
        end
      end
    end
    check("gpu.", gpu)
    check("gpu.gpuarray.", gpu.gpuarray)
    check("gpu.cumath.", gpu.cumath)
    check("gpu.random.", gpu.random)
    check("gpu.host.", gpu.host)
    for type_name, mt in pairs(core.types) do
      if type(mt.__methods) == "table" then check(type_name .. ":", mt.__methods) end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)
end)
