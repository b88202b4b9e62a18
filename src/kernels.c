/*
** kernels.c: core.kernel_sources, the CUDA C of the library's own kernels (kernels/NAME.cu),
** built into the library by tools/embed.lua so that nothing is read from disk at run time.
*/
#include "gpu.h"
#include "kernels.h"

void gpu_kernels_open (lua_State *L) {
  lua_newtable(L);
#define X(name, bytes, length) \
  lua_pushlstring(L, bytes, length); \
  lua_setfield(L, -2, name);
  GPU_EMBEDDED(X)
#undef X
  lua_setfield(L, -2, "kernel_sources");
}
