-- gpu: PyCUDA for Lua 5.4.  This is the module `require "gpu"` returns: the C core
-- (gpu.core: devices, memory, NVRTC, modules, launches, streams) plus what is easier to say in
-- Lua: SourceModule's source handling, printing, and argument checking of the sugar.

local core = require "gpu.core"
local signature = require "gpu.signature"

local gpu = {}

-- The core's building blocks for the Lua layer stay in gpu.core: its launchers trust their
-- caller to pair a kernel with its operands' dtypes and layouts (a mismatch writes out of
-- bounds on the device), and the rest (the compile cache's files, view and layout helpers)
-- is plumbing with no promise of stability.
local internal = {
  types = true, complex_metatable = true, array_binary_operator = true,
  array_unary_operator = true, elementwise_caller = true, reduction_caller = true,
  program_launcher = true, program_dispatcher = true, view_method = true, axis_layout = true,
  matrix_key = true, blas_matmul = true, cache_hash = true, cache_load = true,
  cache_store = true, nvrtc_identity = true, module_image = true, module_share = true,
  free_all_after = true,
  -- cuSOLVER's routines on column-major stacks, for gpu.linalg
  solver_getrf = true, solver_getrs = true, solver_potrf = true, solver_potrs = true,
  solver_geqrf = true, solver_orgqr = true, solver_syevd = true, solver_gesvd = true,
  solver_geev = true, solver_getrf_batched = true, solver_getrs_batched = true,
  solver_getri_batched = true, solver_potrf_batched = true, solver_syevj_batched = true,
  solver_gesvdj_batched = true,
}
for name, value in pairs(core) do
  if not internal[name] then gpu[name] = value end
end

gpu.VERSION = "0.1.0"

-- Errors ---------------------------------------------------------------------------------

local Error = core.Error

-- gpu.Error.is(e[, name]): whether e is a gpu.Error (with that CUDA/NVRTC error name).
function Error.is(e, name)
  return getmetatable(e) == Error and (name == nil or e.name == name)
end
gpu.Error = Error

-- Argument checks for the Lua layer (gpu.args), in the style of luaL_argerror.
local argerror = require("gpu.args").argerror
gpu._argerror = argerror

local check_options = require("gpu.args").check_options
gpu._check_options = check_options

-- dtypes ---------------------------------------------------------------------------------

-- gpu.dtype(name) -> {name, itemsize, ctype, kind}
gpu.dtype = core.dtype

-- gpu.complex(re[, im]): a complex number, as complex64 and complex128 elements read
local complex = require "gpu.complex"
gpu.complex = complex.complex
gpu.is_complex = complex.is_complex

-- Host arrays ----------------------------------------------------------------------------

gpu.host = require "gpu.host"
-- checking results against a reference, under the names NumPy, CuPy and Torch give them
gpu.allclose, gpu.isclose, gpu.array_equal = gpu.host.allclose, gpu.host.isclose, gpu.host.array_equal

-- Compiling ------------------------------------------------------------------------------

-- The device's own architecture as a number (90 for sm_90); level blames a caller.
local function device_arch(level)
  local ok, why = core.available()
  if not ok then
    error("no device to choose an architecture for (" .. why .. "): pass opts.arch, "
          .. "e.g. 'sm_90'", level + 1)
  end
  local major, minor = core.get_device():compute_capability()
  return major * 10 + minor
end

-- The architecture NVRTC should build for: the device's own, or the newest NVRTC knows
-- (then as PTX, which the driver compiles for the newer device when loading).
local function default_arch(level)
  local want = device_arch(level + 1)
  local best = 0
  for _, a in ipairs(core.nvrtc_supported_archs()) do
    if a <= want and a > best then best = a end
  end
  if best == want then return "sm_" .. want, "cubin" end
  return "compute_" .. best, "ptx"
end

local function wrap_source(source, opts)
  if opts.no_extern_c then return source end
  -- #line keeps NVRTC's line numbers those of the caller's source
  return 'extern "C" {\n#line 1 "' .. (opts.name or "kernel.cu") .. '"\n' .. source .. "\n}\n"
end

local function string_list(value, n, fname, key)
  if value == nil then return nil end
  if type(value) == "string" then return {value} end
  if type(value) ~= "table" then
    argerror(n, fname, ("option '%s' must be a list of strings"):format(key), 3)
  end
  for i, item in ipairs(value) do
    if type(item) ~= "string" then
      argerror(n, fname, ("option '%s' item %d must be a string, got %s"):format(key, i, type(item)), 3)
    end
  end
  return value
end

local compile_options = {
  target = true, arch = true, options = true, include_dirs = true, no_extern_c = true,
  name = true, headers = true, cache = true,
}

local module_options = {
  arch = true, options = true, include_dirs = true, no_extern_c = true, cache = true,
  name = true, headers = true,
}

-- Compile cache.  In process: loaded module images by device and key.  On disk: cubins and PTX
-- under GPU_CACHE_DIR, else $XDG_CACHE_HOME/lua-gpu, else ~/.cache/lua-gpu (GPU_CACHE_DISABLE=1
-- turns it off).  The key holds everything the image depends on; the included files' own
-- contents are not part of it, so pass cache = false while editing a header.
local function cache_dir()
  local disabled = os.getenv("GPU_CACHE_DISABLE")
  if disabled and disabled ~= "" and disabled ~= "0" then return nil end
  local dir = os.getenv("GPU_CACHE_DIR")
  if dir and dir ~= "" then return dir end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/lua-gpu" end
  local home = os.getenv("HOME")
  return home and home ~= "" and home .. "/.cache/lua-gpu" or nil
end
gpu._cache_dir = cache_dir

-- The NVRTC library in the key, named without loading it (core.nvrtc_identity): once a state.
local nvrtc_identity
local function compiler_identity()
  nvrtc_identity = nvrtc_identity or core.nvrtc_identity()
  return nvrtc_identity
end

-- The cache key of a job for its arch and target.
local function job_key(job)
  local options = job.options
  local parts = {"lua-gpu " .. gpu.VERSION, "nvrtc " .. compiler_identity(), job.arch, job.target,
                 options.name or "kernel.cu"}
  for _, o in ipairs(options.options or {}) do parts[#parts + 1] = "option " .. o end
  for _, d in ipairs(options.include_dirs or {}) do parts[#parts + 1] = "include " .. d end
  parts[#parts + 1] = "toolkit include " .. (core.cuda_include_dir() or "none")   -- searched last
  if options.headers then
    local names = {}
    for name in pairs(options.headers) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      parts[#parts + 1] = "header " .. name .. "\0" .. options.headers[name]
    end
  end
  parts[#parts + 1] = job.wrapped
  return table.concat(parts, "\0")
end

-- Sets the job's arch and target (and key).
local function set_arch(job, arch, target)
  job.arch, job.target = arch, target
  job.options.arch, job.options.target = arch, target
  job.key = job_key(job)
end

-- What to hand NVRTC for (source, opts): a job {wrapped, arch, target, options, key}.
-- fname names the calling function in argument errors.  Without opts.arch (and opts.target)
-- the job is first for the device's own cubin, which the disk cache may hold, so a hit needs
-- no NVRTC; job.tentative says that build_image must ask NVRTC for the arch on a miss.
local function compile_job(source, opts, fname, default_target)
  local arch, target = opts.arch, opts.target
  -- checked here so that errors blame the caller's line, not the C call below
  if arch ~= nil and type(arch) ~= "string" then
    argerror(2, fname, "option 'arch' must be a string such as 'sm_90', got " .. type(arch), 2)
  end
  if target ~= nil and target ~= "ptx" and target ~= "cubin" then
    argerror(2, fname, ("option 'target' must be 'ptx' or 'cubin', got %s"):format(tostring(target)), 2)
  end
  if opts.name ~= nil and type(opts.name) ~= "string" then
    argerror(2, fname, "option 'name' must be a string, got " .. type(opts.name), 2)
  end
  if opts.headers ~= nil then
    if type(opts.headers) ~= "table" then
      argerror(2, fname, "option 'headers' must be a table {name = source}, got " .. type(opts.headers), 2)
    end
    for k, v in pairs(opts.headers) do
      if type(k) ~= "string" or type(v) ~= "string" then
        argerror(2, fname, "option 'headers' must map file names to source strings", 2)
      end
    end
  end
  local tentative = false
  if arch == nil then
    if target == nil and opts.cache ~= false and cache_dir() then
      arch, target, tentative = "sm_" .. device_arch(3), "cubin", true
    else
      local device_target
      arch, device_target = default_arch(3)
      target = target or device_target
    end
  end
  target = target or default_target or (arch:match("^sm_") and "cubin" or "ptx")
  local wrapped = wrap_source(source, opts)
  local job = {wrapped = wrapped, use_cache = opts.cache ~= false, tentative = tentative,
    options = {
      name = opts.name, headers = opts.headers,
      options = string_list(opts.options, 2, fname, "options"),
      include_dirs = string_list(opts.include_dirs, 2, fname, "include_dirs"),
    }}
  set_arch(job, arch, target)
  return job
end

-- What the compile cache did in this state (specs and benchmarks read it).
gpu.compile_stats = {nvrtc = 0, disk_hits = 0, disk_stores = 0, module_hits = 0}
local stats = gpu.compile_stats

-- The job's entry in the disk cache: image, or nil (and the directory and file name).
local function load_cached(job)
  local dir = job.use_cache and cache_dir()
  local file = dir and ("%s-%s.%s"):format(core.cache_hash(job.key), job.arch, job.target)
  local image = file and core.cache_load(dir .. "/" .. file, job.key)
  if image then stats.disk_hits = stats.disk_hits + 1 end
  return image, dir, file
end

-- For a tentative job that missed: NVRTC's arch for the device (the same, unless NVRTC is
-- older than the device); returns whether the job changed.
local function settle_arch(job)
  if not job.tentative then return false end
  job.tentative = false
  local arch, target = default_arch(2)
  if arch == job.arch and target == job.target then return false end
  set_arch(job, arch, target)
  return true
end

-- The image for a job: from the disk cache, or from NVRTC (then stored).
local function build_image(job)
  local image, dir, file = load_cached(job)
  if image then return image end
  if settle_arch(job) then
    image, dir, file = load_cached(job)
    if image then return image end
  end
  image = core.compile(job.wrapped, job.options)   -- its second result, the warnings, is dropped
  stats.nvrtc = stats.nvrtc + 1
  if file and core.cache_store(dir, file, job.key, image) then
    stats.disk_stores = stats.disk_stores + 1
  end
  return image
end

-- gpu.compile(source[, opts]) -> image (cubin or PTX bytes), and nothing else, so that
-- gpu.module_from_buffer(gpu.compile(src)) works.  Needs no GPU: without one and without
-- opts.arch it builds PTX for the oldest architecture NVRTC knows, which every newer device
-- can load (a cubin needs opts.arch then).
function gpu.compile(source, opts)
  if type(source) ~= "string" then argerror(1, "compile", "source string expected, got " .. type(source)) end
  opts = check_options(opts, 2, "compile", compile_options)
  if opts.arch == nil and opts.target ~= "cubin" and not core.available() then
    local portable = {}
    for k, v in pairs(opts) do portable[k] = v end
    portable.arch = "compute_" .. math.min(table.unpack(core.nvrtc_supported_archs()))
    portable.target = "ptx"
    opts = portable
  end
  return (build_image(compile_job(source, opts, "compile")))
end

-- The in-process cache holds loaded images (core.module_image), not Modules: each
-- SourceModule returns a Module of its own, a share of the image that the cache's key
-- loaded once (src/module.c), so that freeing one leaves the others usable.  Freeing every
-- share unloads the image, and the cache hands out no share of it again (core.module_share
-- answers nil).  Images are held weakly, except those handed out since the last collection:
-- a Module dropped right after use (`gpu.SourceModule(src).k(...)` in a loop) would otherwise
-- be unloaded and loaded again at every cycle; one unused for a whole cycle, with no share
-- left, is collected and unloaded.
local weak_values = {__mode = "v"}
local loaded_images = {}      -- ordinal -> key -> image, weakly
local recent_images = {}      -- image -> true: handed out since the last collection

local function forget_recent()
  recent_images = {}
  setmetatable({}, {__gc = forget_recent})      -- and again after the next collection
end
setmetatable({}, {__gc = forget_recent})

-- A new share of the image loaded for key, or nil.
local function cached_share(images, key)
  local image = images[key]
  local module = image and core.module_share(image)
  if module then recent_images[image] = true end
  return module
end

-- Loads a compiled image as a new Module (and a new entry of the cache, if the job uses it).
local function load_module(images, job, image, source)
  local module = core.module_from_buffer(image, signature.parse(source))
  if job.use_cache then
    image = core.module_image(module)
    images[job.key] = image
    recent_images[image] = true
  end
  return module
end

-- gpu.SourceModule(source[, opts]) -> gpu.Module, compiled for the current device.
function gpu.SourceModule(source, opts)
  if type(source) ~= "string" then
    argerror(1, "SourceModule", "source string expected, got " .. type(source))
  end
  opts = check_options(opts, 2, "SourceModule", module_options)
  local job = compile_job(source, opts, "SourceModule")
  local ordinal = core.device_ordinal()
  local images = loaded_images[ordinal]
  if images == nil then
    images = setmetatable({}, weak_values)
    loaded_images[ordinal] = images
  end
  local module = job.use_cache and cached_share(images, job.key)
  if not module and job.tentative and job.use_cache then
    -- the device's cubin is not loaded here: try the disk, then NVRTC's arch for the device
    -- (PTX when NVRTC is older than the device), which may be loaded
    local image = load_cached(job)
    if image then return load_module(images, job, image, source) end
    if settle_arch(job) then module = cached_share(images, job.key) end
  end
  if module then
    stats.module_hits = stats.module_hits + 1
    return module
  end
  return load_module(images, job, build_image(job), source)
end

-- gpu.module_from_buffer(image[, signatures]): signatures maps kernel names to prepare()
-- letters, as gpu.signature.parse returns them for a source.
gpu.module_from_buffer = core.module_from_buffer

function gpu.module_from_file(path)
  if type(path) ~= "string" then argerror(1, "module_from_file", "path expected, got " .. type(path)) end
  local f, err = io.open(path, "rb")
  if not f then error(err, 2) end
  local image = f:read("a")
  f:close()
  return core.module_from_buffer(image)
end

gpu.signature = signature

-- Graphs ---------------------------------------------------------------------------------

-- gpu.capture(fn[, stream]) -> gpu.Graph: runs fn(stream) while the stream (a new one by
-- default) captures, and returns what was queued on it as a graph to replay with
-- graph:launch().  Buffers must exist before the capture; the graph keeps them alive and
-- refuses to launch once one has been freed.  The new stream is non-blocking: nothing runs
-- while it captures, and a blocking one would make every use of the default stream, by
-- any thread, invalidate the capture.
function gpu.capture(fn, stream)
  if type(fn) ~= "function" then argerror(1, "capture", "function expected, got " .. type(fn)) end
  if stream ~= nil and getmetatable(stream) ~= core.types.Stream then
    argerror(2, "capture", "gpu.Stream expected, got " .. type(stream))
  end
  -- a stream of its own is freed as soon as the capture ends, not left to the collector:
  -- streams cost the driver more than their userdata tells the collector
  local own = stream == nil and core.Stream({non_blocking = true})
  stream = stream or own
  stream:begin_capture()
  local ok, err = pcall(fn, stream)
  local ended, graph = pcall(stream.end_capture, stream)   -- leaves capture mode in any case
  if own then own:free() end
  if not ok then error(err, 0) end      -- the fn's error is the one to see
  if not ended then error(graph, 0) end
  return graph
end

-- gpu.to_cuda_array(a[, {channels =, surface =, layered =}]): a new gpu.CudaArray holding the
-- elements of the GPUArray or host array a (PyCUDA's matrix_to_array); with channels 2 or 4,
-- a's last dimension holds each texel's channels.
function gpu.to_cuda_array(a, options)
  local mt = getmetatable(a)
  if mt ~= core.types.GPUArray and mt ~= core.types.HostArray then
    argerror(1, "to_cuda_array", "GPUArray or host array expected, got " .. require("gpu.args").typename(a))
  end
  check_options(options, 2, "to_cuda_array", {channels = true, surface = true, layered = true})
  local shape, channels = a.shape, options and options.channels or 1
  if channels ~= 1 then
    if shape[#shape] ~= channels or #shape < 2 then
      argerror(2, "to_cuda_array", ("option 'channels' is %s: the array's last dimension must be %s")
        :format(channels, channels))
    end
    shape[#shape] = nil
  end
  if mt == core.types.GPUArray and not a.is_contiguous then a = a:copy() end
  return core.CudaArray(shape, a.dtype, options):copy_from(a)
end

-- GPU arrays: gpu.gpuarray and its shortcuts, then what builds on it.
require("gpu.gpuarray").install(gpu)
require("gpu.reduction").install(gpu)
require("gpu.scan").install(gpu)
require("gpu.random").install(gpu)
require("gpu.take").install(gpu)
require("gpu.matmul").install(gpu)
require("gpu.contract").install(gpu)
require("gpu.sort").install(gpu)
require("gpu.quantile").install(gpu)
require("gpu.softmax").install(gpu)
require("gpu.interp").install(gpu)
require("gpu.fft").install(gpu)
require("gpu.linalg").install(gpu)
require("gpu.shape").install(gpu)
require("gpu.compact").install(gpu)
require("gpu.numeric").install(gpu)
require("gpu.sets").install(gpu)
require("gpu.polynomial").install(gpu)
require("gpu.fuse").install(gpu)
gpu.ones_like = gpu.gpuarray.ones_like      -- beside empty_like and zeros_like

-- The userdata types by name (getmetatable(h) == gpu.HostArray), as core.types has them;
-- gpu.GPUArray, also a constructor, comes from gpuarray.install.  gpu.Device, gpu.Stream
-- and gpu.Event stay the constructors API.md names: their types are getmetatable of one.
-- A Function has a metatable of its own (its methods in one table read), so a Function's is
-- not gpu.Function but shares its __name and __methods.  The Context is no user's object.
for _, name in ipairs{"HostArray", "Buffer", "Module", "Function", "Graph", "Scalar",
                      "ArgHandler", "DLPack", "FFTPlan"} do
  gpu[name] = core.types[name]
end

return gpu
