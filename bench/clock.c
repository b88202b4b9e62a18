/*
** bench/clock.c: a monotonic wall clock for the Lua benchmarks (os.clock is CPU time).
** require "bench_clock".now_us() -> microseconds since an arbitrary start, as a float.
*/
#include <time.h>

#include "lua.h"
#include "lauxlib.h"

static int now_us (lua_State *L) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  lua_pushnumber(L, (lua_Number)t.tv_sec * 1e6 + (lua_Number)t.tv_nsec / 1e3);
  return 1;
}

__attribute__((visibility("default"))) int luaopen_bench_clock (lua_State *L);

int luaopen_bench_clock (lua_State *L) {
  static const luaL_Reg functions[] = {{"now_us", now_us}, {NULL, NULL}};
  luaL_newlib(L, functions);
  return 1;
}
