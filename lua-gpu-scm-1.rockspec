-- lua-gpu from this checkout: `luarocks make --lua-version=5.4` (add `--tree DIR` to install
-- somewhere other than the default tree).  The build is the Makefile's: `make` builds
-- gpu/core.so (the library's kernels are embedded in it), `make install` copies it and
-- lua/gpu/*.lua where LuaRocks says.  The CUDA toolkit is found at $CUDA_HOME, else
-- /usr/local/cuda: make reads CUDA_HOME from the environment, so run
-- `CUDA_HOME=/opt/cuda luarocks make`.  (It is not a LuaRocks variable: an unset
-- $(CUDA_HOME) here would reach make as an empty assignment and override that default.)
rockspec_format = "3.0"
package = "lua-gpu"
version = "scm-1"

source = {
  -- `luarocks make` builds the checkout it runs in; nothing is fetched
  url = "git+file://.",
}

description = {
  summary = "PyCUDA for Lua 5.4: CUDA C kernels compiled with NVRTC, GPU arrays",
  detailed = [[
    require "gpu" gives Lua 5.4 what PyCUDA gives Python: CUDA C kernels written as
    strings and compiled at run time with NVRTC, launched through the CUDA driver API
    (loaded at run time, so the module loads on machines without a GPU), device memory,
    streams, events and graphs, and a GPU array type with NumPy semantics.
  ]],
  labels = {"cuda", "gpu", "nvrtc"},
}

dependencies = {
  "lua >= 5.4",
}

build = {
  type = "make",
  build_variables = {
    LUA = "$(LUA)",
    LUA_INCDIR = "$(LUA_INCDIR)",
    CFLAGS = "$(CFLAGS)",
  },
  install_variables = {
    LUA = "$(LUA)",
    LUA_INCDIR = "$(LUA_INCDIR)",
    PREFIX = "$(PREFIX)",
    LIBDIR = "$(LIBDIR)",
    LUADIR = "$(LUADIR)",
    -- src/lua_gpu.h (the embedding API) and src/dlpack.h go to include/lua_gpu.h and
    -- include/lua_gpu_dlpack.h under PREFIX, which LuaRocks sets to the rock's own directory
    -- (TREE/lib/luarocks/rocks-5.4/lua-gpu/scm-1/include/)
    INCDIR = "$(PREFIX)/include",
  },
}
