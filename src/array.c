/*
** array.c: gpu.GPUArray, the C side of device arrays: a typed, strided view of device memory.
**
** Only what needs the handles lives here: the layout (dtype, shape, byte strides, offset),
** allocation, and the device pointer that launches use.  Everything else (operators,
** reductions, printing, kernels) is Lua, in lua/gpu/gpuarray.lua, which adds its methods to
** this type's methods table (core.types.GPUArray.__methods); elementwise.c has the C paths
** that take its common calls straight to a launch.
**
** An array made by array_empty owns its memory and keeps the record of it (a gpu_Buffer)
** inside its own userdata: one object for the collector instead of an array and a Buffer,
** which halves what a temporary like `a + b` costs the host.  Its Buffer face, a.gpudata, is
** made when first asked for and frees the array's memory when freed, as PyCUDA's does.
** Views made by array_view pin what holds their memory (a Buffer or the owning array), and
** their :free() only detaches them.  Freed memory makes every array on it unusable, with an
** error.
*/
#include <stdint.h>
#include <string.h>

#include "gpu.h"

/* The userdata's size: the header, shape and strides, then an owner's memory record. */
static size_t array_bytes (int ndim, int owns) {
  return sizeof(gpu_Array) + 2 * sizeof(int64_t) * (size_t)(ndim > 0 ? ndim : 1) +
         (owns ? sizeof(gpu_Buffer) : 0);
}

int gpu_array_alive (const gpu_Array *a) {
  return a->buffer != NULL && a->buffer->ptr != 0 && a->buffer->root != NULL &&
         a->buffer->root->ptr != 0;
}

gpu_Array *gpu_testarray (lua_State *L, int idx) {
  return (gpu_Array *)luaL_testudata(L, idx, GPU_ARRAY);
}

gpu_Array *gpu_checkarray (lua_State *L, int arg) {
  gpu_Array *a = (gpu_Array *)luaL_checkudata(L, arg, GPU_ARRAY);
  if (!gpu_array_alive(a)) gpu_freed_error(L, arg, "array");
  return a;
}

/* C-contiguous: strides are those of a row-major array of this shape. */
static int is_contiguous (const gpu_Array *a) {
  int64_t expect = gpu_dtypes[a->dtype].itemsize;
  int i;
  for (i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != expect) return 0;
    expect *= a->shape[i];
  }
  return 1;
}

/* Pushes a new array header with the given layout, on no memory yet (closed); an owner gets
** its memory record, zeroed, and room for the Buffer face.  The metatable is at mt_idx, or
** looked up by name where mt_idx is 0. */
static gpu_Array *push_header (lua_State *L, int owns, gpu_DtypeId dtype, int ndim,
                               const int64_t *shape, const int64_t *strides, int mt_idx) {
  gpu_Array *a = (gpu_Array *)lua_newuserdatauv(L, array_bytes(ndim, owns), owns ? 2 : 1);
  int i;
  a->buffer = NULL;
  a->ptr = 0;
  a->offset = 0;
  a->dtype = dtype;
  a->ndim = ndim;
  a->owner = owns;
  a->shape = (int64_t *)(a + 1);
  a->strides = a->shape + (ndim > 0 ? ndim : 1);
  a->own = owns ? (gpu_Buffer *)(a->strides + (ndim > 0 ? ndim : 1)) : NULL;
  if (owns) memset(a->own, 0, sizeof *a->own);
  a->size = 1;
  for (i = 0; i < ndim; i++) {
    a->shape[i] = shape[i];
    a->strides[i] = strides[i];
    a->size *= shape[i];
  }
  a->contiguous = is_contiguous(a);
  gpu_setmetatable(L, mt_idx, GPU_ARRAY);
  return a;
}

/* Pushes a new view with the given layout on b, at offset bytes; holder_idx holds b's
** memory (a Buffer or an owning array) and is pinned. */
static gpu_Array *new_view (lua_State *L, int holder_idx, gpu_Buffer *b, size_t offset,
                            gpu_DtypeId dtype, int ndim, const int64_t *shape,
                            const int64_t *strides) {
  gpu_Array *a;
  holder_idx = lua_absindex(L, holder_idx);
  a = push_header(L, 0, dtype, ndim, shape, strides, 0);
  a->buffer = b;
  a->ptr = b->ptr + offset;
  a->offset = offset;
  gpu_pin(L, -1, holder_idx, 1);
  return a;
}

/* The alignment kernels assume for an element: its size, but 8 for complex128 (two doubles). */
static int alignment (gpu_DtypeId dtype) {
  return gpu_dtypes[dtype].itemsize > 8 ? 8 : (int)gpu_dtypes[dtype].itemsize;
}

static void row_major_strides (int ndim, const int64_t *shape, size_t itemsize, int64_t *strides) {
  int64_t s = (int64_t)itemsize;
  int i;
  for (i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
}

gpu_Array *gpu_array_new_in (lua_State *L, gpu_Context *c, int ctx_idx, int array_mt,
                             gpu_DtypeId dtype, int ndim, const int64_t *shape) {
  int64_t strides[GPU_MAXDIM], size = 1;
  gpu_Array *a;
  int i;
  ctx_idx = lua_absindex(L, ctx_idx);
  for (i = 0; i < ndim; i++) size *= shape[i];
  if (size > (int64_t)(PTRDIFF_MAX / gpu_dtypes[dtype].itemsize))   /* bytes overflow size_t */
    luaL_error(L, "array of %I %s elements is too large", (lua_Integer)size, gpu_dtypes[dtype].name);
  row_major_strides(ndim, shape, gpu_dtypes[dtype].itemsize, strides);
  a = push_header(L, 1, dtype, ndim, shape, strides, array_mt);
  gpu_pin(L, -1, ctx_idx, 1);              /* the memory needs its Context */
  gpu_buffer_acquire(L, c, a->own, (size_t)size * gpu_dtypes[dtype].itemsize);
  a->buffer = a->own;
  a->ptr = a->own->ptr;
  return a;
}

gpu_Array *gpu_array_new (lua_State *L, gpu_DtypeId dtype, int ndim, const int64_t *shape) {
  /* found, not entered: gpu_buffer_alloc makes it current after its collector step */
  gpu_Array *a = gpu_array_new_in(L, gpu_context_find(L, gpu_state(L)), -1, 0, dtype, ndim, shape);
  lua_remove(L, -2);                       /* the Context, pinned by the array */
  return a;
}

/* array_empty(shape, dtype) -> GPUArray owning fresh (uninitialized) device memory */
static int gpu_array_empty (lua_State *L) {
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 1, shape, &size);
  gpu_DtypeId dtype = lua_isnoneornil(L, 2) ? GPU_FLOAT64 : gpu_checkdtype(L, 2);
  gpu_array_new(L, dtype, ndim, shape);
  return 1;
}

/* array_zeros(shape, dtype) -> like array_empty, its bytes zeroed in the order of the
** Context's stream (one memset: no kernel, no Buffer face) */
static int gpu_array_zeros (lua_State *L) {
  gpu_Array *a;
  gpu_array_empty(L);
  a = (gpu_Array *)lua_touserdata(L, -1);
  if (a->size > 0) {
    gpu_Context *c = a->buffer->ctx;
    gpu_context_enter(L, c);
    gpu_check(L, c->driver->cuMemsetD8Async(a->ptr, 0,
                                            (size_t)a->size * gpu_dtypes[a->dtype].itemsize,
                                            c->stream),
              "cuMemsetD8Async");
  }
  return 1;
}

/*
** array_view(base, offset, dtype, shape[, strides]) -> GPUArray on base (a Buffer or GPUArray)
** offset in bytes from base's start; strides in bytes (default row-major).  Every element
** the view can reach must lie inside the buffer, at an address aligned for dtype: a kernel
** reading a misaligned element fails with an error that ruins the context.
*/
static int gpu_array_view (lua_State *L) {
  gpu_Array *from = gpu_testarray(L, 1);
  gpu_Buffer *b;
  lua_Integer offset = luaL_checkinteger(L, 2);
  gpu_DtypeId dtype = gpu_checkdtype(L, 3);
  int64_t shape[GPU_MAXDIM], strides[GPU_MAXDIM], size, lo, hi;
  int ndim = gpu_checkshape(L, 4, shape, &size), i;
  size_t itemsize = gpu_dtypes[dtype].itemsize;
  if (from != NULL) {
    gpu_checkarray(L, 1);
    b = from->buffer;
    if (__builtin_add_overflow(offset, (lua_Integer)from->offset, &offset))
      return luaL_error(L, "view reaches outside its buffer (%I bytes)", (lua_Integer)b->size);
    if (from->own == NULL) {           /* the view pins what holds from's memory */
      lua_getiuservalue(L, 1, 1);
      lua_replace(L, 1);
    }
  } else {
    b = gpu_checkbuffer(L, 1);
  }
  if (lua_isnoneornil(L, 5)) row_major_strides(ndim, shape, itemsize, strides);
  else {
    luaL_checktype(L, 5, LUA_TTABLE);
    luaL_argcheck(L, (int)lua_rawlen(L, 5) == ndim, 5, "strides and shape differ in length");
    for (i = 0; i < ndim; i++) {
      int isint;
      lua_rawgeti(L, 5, i + 1);
      strides[i] = (int64_t)lua_tointegerx(L, -1, &isint);
      if (!isint)   /* luaL_checkinteger(L, -1) would blame "argument #-1" */
        return luaL_argerror(L, 5, lua_pushfstring(L, "stride %d must be a whole number, got %s",
                                                   i + 1, luaL_typename(L, -1)));
      lua_pop(L, 1);
    }
  }
  /* the byte range the view can touch: [offset + lo, offset + hi + itemsize) */
  lo = hi = 0;
  for (i = 0; i < ndim; i++) {
    int64_t reach;
    if (shape[i] == 0) { lo = 0; hi = -(int64_t)itemsize; break; }
    /* huge strides must not wrap around into a range that looks inside the buffer */
    if (__builtin_mul_overflow(strides[i], shape[i] - 1, &reach) ||
        __builtin_add_overflow(strides[i] > 0 ? hi : lo, reach, strides[i] > 0 ? &hi : &lo))
      return luaL_error(L, "view reaches outside its buffer (%I bytes)", (lua_Integer)b->size);
  }
  if (offset < 0 || offset > (lua_Integer)b->size || offset + lo < 0 ||
      hi > (int64_t)b->size || (uint64_t)(offset + hi + (int64_t)itemsize) > b->size)
    return luaL_error(L, "view reaches outside its buffer (%I bytes)", (lua_Integer)b->size);
  if (offset % (lua_Integer)alignment(dtype) != 0)
    return luaL_error(L, "a %s view must start at a multiple of %d bytes, not at byte %I",
                      gpu_dtypes[dtype].name, alignment(dtype), offset);
  for (i = 0; i < ndim; i++)
    if (shape[i] > 1 && strides[i] % alignment(dtype) != 0)
      return luaL_error(L, "a %s view's strides must be multiples of %d bytes, not %I",
                        gpu_dtypes[dtype].name, alignment(dtype), (lua_Integer)strides[i]);
  new_view(L, 1, b, (size_t)offset, dtype, ndim, shape, strides);
  return 1;
}

/* :free(), __close and __gc: an owner releases its memory, a view detaches. */
static int array_free (lua_State *L) {
  gpu_Array *a = (gpu_Array *)gpu_checkself(L, 1, GPU_ARRAY);
  if (a->owner && a->buffer != NULL) gpu_buffer_release(a->buffer);
  a->buffer = NULL;                      /* this array is unusable from now on */
  return 0;
}

/* Pushes the Buffer face of the owner at idx, made on first use: a view of its memory
** record that pins the array, kept as the array's second user value. */
static void push_face (lua_State *L, int idx) {
  gpu_Array *a = (gpu_Array *)lua_touserdata(L, idx);
  gpu_Buffer *face;
  if (lua_getiuservalue(L, idx, 2) == LUA_TUSERDATA) return;
  lua_pop(L, 1);
  idx = lua_absindex(L, idx);
  face = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  *face = *a->own;
  face->root = a->own;
  face->owned = 0;
  face->face = 1;
  luaL_setmetatable(L, GPU_BUFFER);
  gpu_pin(L, -1, idx, 1);
  gpu_pin(L, idx, -1, 2);
}

/* a.gpudata: the Buffer holding a's memory (for a view, all of it, as PyCUDA's base) */
static void push_gpudata (lua_State *L, int idx) {
  gpu_Array *a = (gpu_Array *)lua_touserdata(L, idx);
  if (a->own != NULL) {
    push_face(L, idx);
    return;
  }
  lua_getiuservalue(L, idx, 1);
  if (gpu_testarray(L, -1) != NULL) {    /* a view of an owner */
    push_face(L, -1);
    lua_remove(L, -2);
  }
}

static void push_dims (lua_State *L, int n, const int64_t *dims) {
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* The layout's fields, found through a table of their numbers (array_index's upvalue 3):
** one lookup instead of a string comparison per field. */
enum { F_DTYPE = 1, F_SHAPE, F_STRIDES, F_SIZE, F_NBYTES, F_NDIM, F_ITEMSIZE, F_OFFSET,
       F_IS_CONTIGUOUS, F_OWNER, F_GPUDATA, F_PTR, F_DEVICE, F_FREED };
static const char *const field_names[] = {
  "dtype", "shape", "strides", "size", "nbytes", "ndim", "itemsize", "offset", "is_contiguous",
  "owner", "gpudata", "ptr", "device", "freed", NULL,
};

/* Pushes the layout field number field of the array at index 1. */
static void push_field (lua_State *L, gpu_Array *a, int field) {
  switch (field) {
    case F_DTYPE: lua_pushstring(L, gpu_dtypes[a->dtype].name); break;
    case F_SHAPE: push_dims(L, a->ndim, a->shape); break;
    case F_STRIDES: push_dims(L, a->ndim, a->strides); break;
    case F_SIZE: lua_pushinteger(L, (lua_Integer)a->size); break;
    case F_NBYTES:
      lua_pushinteger(L, (lua_Integer)(a->size * gpu_dtypes[a->dtype].itemsize));
      break;
    case F_NDIM: lua_pushinteger(L, a->ndim); break;
    case F_ITEMSIZE: lua_pushinteger(L, gpu_dtypes[a->dtype].itemsize); break;
    case F_OFFSET: lua_pushinteger(L, (lua_Integer)a->offset); break;
    case F_IS_CONTIGUOUS: lua_pushboolean(L, a->contiguous); break;
    case F_OWNER: lua_pushboolean(L, a->owner); break;
    case F_GPUDATA:
      gpu_checkarray(L, 1);
      push_gpudata(L, 1);
      break;
    case F_PTR: lua_pushinteger(L, (lua_Integer)gpu_checkarray(L, 1)->ptr); break;
    case F_DEVICE:    /* the device ordinal */
      lua_pushinteger(L, gpu_checkarray(L, 1)->buffer->ctx->ordinal);
      break;
    default: lua_pushboolean(L, !gpu_array_alive(a)); break;     /* F_FREED */
  }
}

/* the layout's fields, then methods (added by the Lua layer), then __properties (functions
** of the array, also the Lua layer's) */
static int array_index (lua_State *L) {
  gpu_Array *a = (gpu_Array *)gpu_checkself(L, 1, GPU_ARRAY);
  lua_settop(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(3)) == LUA_TNUMBER) {
    push_field(L, a, (int)lua_tointeger(L, -1));
    return 1;
  }
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (lua_type(L, 2) != LUA_TSTRING) {  /* test first: lua_tostring would turn 5 into "5" */
    /* a[i]: the Lua layer's element access */
    lua_getfield(L, lua_upvalueindex(1), "__element");
    if (lua_isnil(L, -1)) return 0;
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    return 1;
  }
  /* the Lua layer's computed fields: a.real, a.T */
  lua_getfield(L, lua_upvalueindex(1), "__properties");
  if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, lua_tostring(L, 2)) == LUA_TNIL)
    return 0;
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}

/* a[i] = v goes to the Lua layer; fields cannot be assigned */
static int array_newindex (lua_State *L) {
  luaL_checkudata(L, 1, GPU_ARRAY);
  if (lua_type(L, 2) != LUA_TSTRING) {
    lua_getfield(L, lua_upvalueindex(1), "__setelement");
    if (!lua_isnil(L, -1)) {
      lua_insert(L, 1);
      lua_call(L, 3, 0);
      return 0;
    }
  }
  return luaL_error(L, "cannot assign to field '%s' of a GPUArray", luaL_tolstring(L, 2, NULL));
}

static int array_len (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)((gpu_Array *)gpu_checkself(L, 1, GPU_ARRAY))->size);
  return 1;
}

/* array_like(a, dtype) -> a new contiguous GPUArray of a's shape (like array_empty) */
static int gpu_array_like (lua_State *L) {
  const gpu_Array *a = gpu_checkarray(L, 1);
  gpu_array_new(L, gpu_checkdtype(L, 2), a->ndim, a->shape);
  return 1;
}

void gpu_array_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"array_empty", gpu_array_empty}, {"array_zeros", gpu_array_zeros},
    {"array_view", gpu_array_view}, {"array_like", gpu_array_like},
    {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__index", array_index}, {"__newindex", array_newindex}, {"__len", array_len},
    {"__close", array_free}, {"__gc", array_free}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {{"free", array_free}, {NULL, NULL}};
  int i;
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_ARRAY, meta, methods);
  /* __index again, with the field numbers as a third upvalue */
  luaL_getmetatable(L, GPU_ARRAY);
  lua_getfield(L, -1, "__methods");
  lua_pushvalue(L, -2);
  lua_createtable(L, 0, (int)(sizeof field_names / sizeof field_names[0]));
  for (i = 0; field_names[i] != NULL; i++) {
    lua_pushinteger(L, i + 1);
    lua_setfield(L, -2, field_names[i]);
  }
  lua_pushcclosure(L, array_index, 3);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}
