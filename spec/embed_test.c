/*
** embed_test.c: a C host for the embedding specs.  build/embed-test SCRIPT runs the Lua file
** SCRIPT in a state opened only with luaopen_gpu (package.path and cpath emptied first, so
** nothing comes from the file system) and gives it the C API as globals:
**   fake_tensor{device_type=, code=, bits=, lanes=, ndim=, major=, flags=, data=, shape=}
**                        -> light userdata DLManagedTensorVersioned* (host-owned)
**   fake_capsule{...}    -> the same, handed to Lua as a gpu.DLPack capsule
**   deleter_calls(), release_calls() -> how often the host's deleters/releases ran
**   call_deleter(p)      runs a tensor's deleter
**   tensor_info(p)       -> {data=, device_type=, device_id=, code=, bits=, ndim=, shape=, strides=}
**   c_push_dlpack(p), c_push_buffer(ptr, nbytes), c_push_array(ptr, dtype, shape[, strides])
**                        -> the pushed value, or nil and the message
**   c_to_dlpack(x)       -> light userdata, or nil and the message
**   c_view(x)            -> table, or false
** After the script the state is closed and "closed: deleter_calls=N release_calls=M" printed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "dlpack.h"
#include "lua_gpu.h"

static int deleter_count, release_count;

typedef struct FakeTensor {
  DLManagedTensorVersioned t;
  int64_t shape[4];
} FakeTensor;

static void fake_deleter (DLManagedTensorVersioned *t) {
  deleter_count++;
  free(t->manager_ctx);
}

static void count_release (void *userdata) {
  (void)userdata;
  release_count++;
}

static lua_Integer field (lua_State *L, const char *name, lua_Integer def) {
  lua_Integer v;
  lua_getfield(L, 1, name);
  v = luaL_optinteger(L, -1, def);
  lua_pop(L, 1);
  return v;
}

static DLManagedTensorVersioned *make_tensor (lua_State *L) {
  FakeTensor *f = (FakeTensor *)calloc(1, sizeof *f);
  int i;
  luaL_checktype(L, 1, LUA_TTABLE);
  f->t.version.major = (uint32_t)field(L, "major", 1);
  f->t.version.minor = 1;
  f->t.manager_ctx = f;
  f->t.deleter = fake_deleter;
  f->t.flags = (uint64_t)field(L, "flags", 0);
  f->t.dl_tensor.data = (void *)(uintptr_t)field(L, "data", 0x1000);
  f->t.dl_tensor.device.device_type = (DLDeviceType)field(L, "device_type", kDLCUDA);
  f->t.dl_tensor.device.device_id = (int32_t)field(L, "device_id", 0);
  f->t.dl_tensor.ndim = (int32_t)field(L, "ndim", 1);
  f->t.dl_tensor.dtype.code = (uint8_t)field(L, "code", kDLFloat);
  f->t.dl_tensor.dtype.bits = (uint8_t)field(L, "bits", 32);
  f->t.dl_tensor.dtype.lanes = (uint16_t)field(L, "lanes", 1);
  for (i = 0; i < 4; i++) f->shape[i] = 4;
  lua_getfield(L, 1, "shape");
  if (lua_istable(L, -1))
    for (i = 0; i < 4 && i < (int)lua_rawlen(L, -1); i++) {
      lua_rawgeti(L, -1, i + 1);
      f->shape[i] = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
  lua_pop(L, 1);
  f->t.dl_tensor.shape = f->shape;
  return &f->t;
}

static int l_fake_tensor (lua_State *L) {
  lua_pushlightuserdata(L, make_tensor(L));
  return 1;
}

static int l_fake_capsule (lua_State *L) {
  DLManagedTensorVersioned *t = make_tensor(L);
  if (lua_gpu_push_dlpack_capsule(L, t) != LUA_OK) {
    free(t->manager_ctx);
    return lua_error(L);
  }
  return 1;
}

static int l_deleter_calls (lua_State *L) {
  lua_pushinteger(L, deleter_count);
  return 1;
}

static int l_release_calls (lua_State *L) {
  lua_pushinteger(L, release_count);
  return 1;
}

static int l_call_deleter (lua_State *L) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)lua_touserdata(L, 1);
  luaL_argcheck(L, t != NULL, 1, "tensor pointer expected");
  if (t->deleter) t->deleter(t);
  return 0;
}

static void set_dims (lua_State *L, const char *name, int n, const int64_t *dims) {
  int i;
  if (dims == NULL) return;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, name);
}

static int l_tensor_info (lua_State *L) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)lua_touserdata(L, 1);
  DLTensor *x;
  luaL_argcheck(L, t != NULL, 1, "tensor pointer expected");
  x = &t->dl_tensor;
  lua_newtable(L);
  lua_pushinteger(L, (lua_Integer)t->version.major);
  lua_setfield(L, -2, "major");
  lua_pushinteger(L, (lua_Integer)(uintptr_t)x->data + (lua_Integer)x->byte_offset);
  lua_setfield(L, -2, "data");
  lua_pushinteger(L, x->device.device_type);
  lua_setfield(L, -2, "device_type");
  lua_pushinteger(L, x->device.device_id);
  lua_setfield(L, -2, "device_id");
  lua_pushinteger(L, x->dtype.code);
  lua_setfield(L, -2, "code");
  lua_pushinteger(L, x->dtype.bits);
  lua_setfield(L, -2, "bits");
  lua_pushinteger(L, x->dtype.lanes);
  lua_setfield(L, -2, "lanes");
  lua_pushinteger(L, x->ndim);
  lua_setfield(L, -2, "ndim");
  lua_pushinteger(L, (lua_Integer)t->flags);
  lua_setfield(L, -2, "flags");
  set_dims(L, "shape", x->ndim, x->shape);
  set_dims(L, "strides", x->ndim, x->strides);
  return 1;
}

/* a status-returning API call's result as value or nil, message */
static int result (lua_State *L, int status) {
  if (status == LUA_OK) return 1;
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

static int l_push_dlpack (lua_State *L) {
  return result(L, lua_gpu_push_dlpack(L, (DLManagedTensorVersioned *)lua_touserdata(L, 1)));
}

static int l_push_buffer (lua_State *L) {
  return result(L, lua_gpu_push_buffer(L, (uint64_t)luaL_checkinteger(L, 1),
                                       (size_t)luaL_checkinteger(L, 2), count_release, NULL));
}

static int read_dims (lua_State *L, int arg, int64_t *dims) {
  int n = (int)lua_rawlen(L, arg), i;
  for (i = 0; i < n && i < LUA_GPU_MAXDIM; i++) {
    lua_rawgeti(L, arg, i + 1);
    dims[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  return n;
}

static int l_push_array (lua_State *L) {
  int64_t shape[LUA_GPU_MAXDIM], strides[LUA_GPU_MAXDIM];
  int ndim;
  luaL_checktype(L, 3, LUA_TTABLE);
  ndim = read_dims(L, 3, shape);
  if (lua_istable(L, 4)) read_dims(L, 4, strides);
  return result(L, lua_gpu_push_array(L, (uint64_t)luaL_checkinteger(L, 1), luaL_checkstring(L, 2),
                                      ndim, shape, lua_istable(L, 4) ? strides : NULL,
                                      count_release, NULL));
}

static int l_to_dlpack (lua_State *L) {
  DLManagedTensorVersioned *t = lua_gpu_to_dlpack(L, 1);
  if (t == NULL) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushlightuserdata(L, t);
  return 1;
}

static int l_view (lua_State *L) {
  lua_gpu_View v;
  if (!lua_gpu_toview(L, 1, &v)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_newtable(L);
  lua_pushinteger(L, (lua_Integer)v.ptr);
  lua_setfield(L, -2, "ptr");
  lua_pushinteger(L, (lua_Integer)v.nbytes);
  lua_setfield(L, -2, "nbytes");
  lua_pushstring(L, v.dtype);
  lua_setfield(L, -2, "dtype");
  lua_pushinteger(L, v.ndim);
  lua_setfield(L, -2, "ndim");
  lua_pushboolean(L, v.is_array);
  lua_setfield(L, -2, "is_array");
  lua_pushinteger(L, v.device);
  lua_setfield(L, -2, "device");
  set_dims(L, "shape", v.ndim, v.shape);
  set_dims(L, "byte_strides", v.ndim, v.byte_strides);
  return 1;
}

int main (int argc, char **argv) {
  static const luaL_Reg api[] = {
    {"fake_tensor", l_fake_tensor}, {"fake_capsule", l_fake_capsule},
    {"deleter_calls", l_deleter_calls}, {"release_calls", l_release_calls},
    {"call_deleter", l_call_deleter}, {"tensor_info", l_tensor_info},
    {"c_push_dlpack", l_push_dlpack}, {"c_push_buffer", l_push_buffer},
    {"c_push_array", l_push_array}, {"c_to_dlpack", l_to_dlpack}, {"c_view", l_view},
    {NULL, NULL},
  };
  lua_State *L = luaL_newstate();
  int ok;
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRIPT\n", argv[0]);
    return 2;
  }
  luaL_openlibs(L);
  /* nothing may come from the file system: the module is all in this executable */
  (void)luaL_dostring(L, "package.path = '' package.cpath = ''");
  luaL_requiref(L, "gpu", luaopen_gpu, 1);
  lua_pop(L, 1);
  lua_pushglobaltable(L);
  luaL_setfuncs(L, api, 0);
  lua_pop(L, 1);
  ok = luaL_dofile(L, argv[1]) == LUA_OK;
  if (!ok) printf("error: %s\n", lua_tostring(L, -1));
  fflush(stdout);
  lua_close(L);
  printf("closed: deleter_calls=%d release_calls=%d\n", deleter_count, release_count);
  return ok ? 0 : 1;
}
