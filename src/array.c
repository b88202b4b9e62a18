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
** memory (a Buffer or an owning array) and is pinned.
** The GPUArray metatable at mt_idx, or 0 to look it up. */
static gpu_Array *new_view (lua_State *L, int holder_idx, gpu_Buffer *b, size_t offset,
                            gpu_DtypeId dtype, int ndim, const int64_t *shape,
                            const int64_t *strides, int mt_idx) {
  gpu_Array *a;
  holder_idx = lua_absindex(L, holder_idx);
  a = push_header(L, 0, dtype, ndim, shape, strides, mt_idx);
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

gpu_Array *gpu_array_new_in (lua_State *L, gpu_Context *c, int array_mt, gpu_DtypeId dtype,
                             int ndim, const int64_t *shape) {
  int64_t strides[GPU_MAXDIM], size = 1;
  gpu_Array *a;
  int i;
  for (i = 0; i < ndim; i++) size *= shape[i];
  if (size > (int64_t)(PTRDIFF_MAX / gpu_dtypes[dtype].itemsize))   /* bytes overflow size_t */
    luaL_error(L, "array of %I %s elements is too large", (lua_Integer)size, gpu_dtypes[dtype].name);
  row_major_strides(ndim, shape, gpu_dtypes[dtype].itemsize, strides);
  a = push_header(L, 1, dtype, ndim, shape, strides, array_mt);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);   /* the memory needs its Context */
  lua_setiuservalue(L, -2, 1);
  gpu_buffer_acquire(L, c, a->own, (size_t)size * gpu_dtypes[dtype].itemsize);
  a->buffer = a->own;
  a->ptr = a->own->ptr;
  return a;
}

gpu_Array *gpu_array_new (lua_State *L, gpu_DtypeId dtype, int ndim, const int64_t *shape) {
  /* found, not entered: gpu_buffer_acquire makes it current after its collector step */
  gpu_Context *c = gpu_context_find(L, gpu_state(L));
  lua_pop(L, 1);                           /* held by the registry (c->ref) */
  return gpu_array_new_in(L, c, 0, dtype, ndim, shape);
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
int gpu_array_view (lua_State *L) {
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
  new_view(L, 1, b, (size_t)offset, dtype, ndim, shape, strides, 0);
  return 1;
}

/* ---------------------------------------------------------------- view methods */

/*
** a:transpose(), :reshape(), :ravel(), :view() and :slice() in C (view_method): making a view
** is a few integer operations, which the Lua layer's shape and stride tables made cost more
** than many launches.  Each takes the common calls of a live array (the arguments numbers,
** a plain table of them or a dtype name, the view well formed) and hands every other call,
** every error included, to its general Lua method, which gives the same results.
** Upvalues: 1 the GPUArray metatable, 2 the general method.
*/
enum { VIEW_ARRAY_MT = 1, VIEW_GENERAL };

/* The array at index 1 if a view method takes it in C, else NULL. */
static gpu_Array *view_source (lua_State *L) {
  gpu_Array *a;
  if (!gpu_hasmetatable(L, 1, lua_upvalueindex(VIEW_ARRAY_MT))) return NULL;
  a = (gpu_Array *)lua_touserdata(L, 1);
  return gpu_array_alive(a) && !a->buffer->ctx->state->general_only ? a : NULL;
}

/* Calls the general method with the call's arguments. */
static int view_general (lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(VIEW_GENERAL));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* Pushes a view of a (at index 1) with the given layout, offset bytes from a's buffer's
** start; the view pins what holds a's memory, as array_view's do. */
static int push_view_of (lua_State *L, const gpu_Array *a, size_t offset, gpu_DtypeId dtype,
                         int ndim, const int64_t *shape, const int64_t *strides) {
  if (a->own != NULL) lua_pushvalue(L, 1);
  else lua_getiuservalue(L, 1, 1);
  new_view(L, -1, a->buffer, offset, dtype, ndim, shape, strides,
           lua_upvalueindex(VIEW_ARRAY_MT));
  return 1;
}

/* Reads the whole number at idx into *v; 0 if it is not a number that is one. */
static int whole_number (lua_State *L, int idx, lua_Integer *v) {
  int isint = 0;
  if (lua_type(L, idx) == LUA_TNUMBER) *v = lua_tointegerx(L, idx, &isint);
  return isint;
}

/* Reads item i of the plain table at idx as whole_number does. */
static int whole_item (lua_State *L, int idx, int i, lua_Integer *v) {
  int ok;
  lua_rawgeti(L, idx, i);
  ok = whole_number(L, -1, v);
  lua_pop(L, 1);
  return ok;
}

/* A table without a metatable (whose length and items are its raw ones), of n items. */
static int plain_table (lua_State *L, int idx, lua_Unsigned *n) {
  if (lua_type(L, idx) != LUA_TTABLE || lua_getmetatable(L, idx)) {
    if (lua_type(L, idx) == LUA_TTABLE) lua_pop(L, 1);
    return 0;
  }
  *n = lua_rawlen(L, idx);
  return 1;
}

/* a:transpose([axes]): axes a permutation of 1..ndim, reversed by default */
static int view_transpose (lua_State *L) {
  const gpu_Array *a = view_source(L);
  int64_t shape[GPU_MAXDIM], strides[GPU_MAXDIM];
  uint64_t seen = 0;
  lua_Unsigned n;
  lua_Integer axis = 0;
  int i;
  if (a == NULL) return view_general(L);
  if (lua_isnoneornil(L, 2)) {
    for (i = 0; i < a->ndim; i++) {
      shape[i] = a->shape[a->ndim - 1 - i];
      strides[i] = a->strides[a->ndim - 1 - i];
    }
  } else {
    if (!plain_table(L, 2, &n) || n != (lua_Unsigned)a->ndim) return view_general(L);
    for (i = 0; i < a->ndim; i++) {
      if (!whole_item(L, 2, i + 1, &axis) || axis < 1 || axis > a->ndim ||
          (seen >> (axis - 1) & 1))
        return view_general(L);
      seen |= (uint64_t)1 << (axis - 1);
      shape[i] = a->shape[axis - 1];
      strides[i] = a->strides[axis - 1];
    }
  }
  return push_view_of(L, a, a->offset, a->dtype, a->ndim, shape, strides);
}

/* a:reshape(d1, d2, ...) or a:reshape({d1, ...}) of a contiguous array; one d may be -1 */
static int view_reshape (lua_State *L) {
  const gpu_Array *a = view_source(L);
  int64_t shape[GPU_MAXDIM], strides[GPU_MAXDIM], known = 1, nonzero = 1;
  lua_Unsigned n = (lua_Unsigned)lua_gettop(L) - 1;
  lua_Integer d = 0;
  int i, unknown = -1, in_table = n == 1 && lua_type(L, 2) == LUA_TTABLE;
  if (a == NULL || !a->contiguous || (in_table && !plain_table(L, 2, &n)) || n > GPU_MAXDIM)
    return view_general(L);
  for (i = 0; i < (int)n; i++) {
    if (!(in_table ? whole_item(L, 2, i + 1, &d) : whole_number(L, i + 2, &d)) ||
        (d == -1 ? unknown >= 0 : d < 0 || __builtin_mul_overflow(known, d, &known)) ||
        (d > 0 && (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > ((int64_t)1 << 58))))
      return view_general(L);   /* and the lengths beside a 0 bounded, as gpu_checkshape's */
    if (d == -1) unknown = i;
    shape[i] = d;
  }
  if (unknown >= 0) {
    if (known == 0 || a->size % known != 0) return view_general(L);
    shape[unknown] = a->size / known;
  } else if (known != a->size) {
    return view_general(L);
  }
  row_major_strides((int)n, shape, gpu_dtypes[a->dtype].itemsize, strides);
  return push_view_of(L, a, a->offset, a->dtype, (int)n, shape, strides);
}

/* a:ravel() of a contiguous array */
static int view_ravel (lua_State *L) {
  const gpu_Array *a = view_source(L);
  const int64_t stride = a != NULL ? (int64_t)gpu_dtypes[a->dtype].itemsize : 0;
  if (a == NULL || !a->contiguous) return view_general(L);
  return push_view_of(L, a, a->offset, a->dtype, 1, &a->size, &stride);
}

/* a:view(dtype): as another dtype of the same itemsize, any layout; of another, a contiguous
** array whose last axis holds whole elements of it */
static int view_as (lua_State *L) {
  const gpu_Array *a = view_source(L);
  int64_t shape[GPU_MAXDIM], strides[GPU_MAXDIM];
  int dtype = a != NULL && lua_type(L, 2) == LUA_TSTRING ? gpu_finddtype(lua_tostring(L, 2)) : -1;
  size_t old_size, new_size;
  if (dtype < 0) return view_general(L);
  old_size = gpu_dtypes[a->dtype].itemsize;
  new_size = gpu_dtypes[dtype].itemsize;
  if (old_size == new_size)
    return push_view_of(L, a, a->offset, (gpu_DtypeId)dtype, a->ndim, a->shape, a->strides);
  if (!a->contiguous || a->ndim == 0 || (a->shape[a->ndim - 1] * old_size) % new_size != 0 ||
      a->offset % (size_t)alignment((gpu_DtypeId)dtype) != 0)
    return view_general(L);
  memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  shape[a->ndim - 1] = (int64_t)(a->shape[a->ndim - 1] * old_size / new_size);
  row_major_strides(a->ndim, shape, new_size, strides);
  return push_view_of(L, a, a->offset, (gpu_DtypeId)dtype, a->ndim, shape, strides);
}

/* Reads the optional whole number at idx into *v (left as it is for nil or none). */
static int optional_whole_number (lua_State *L, int idx, lua_Integer *v) {
  return lua_isnoneornil(L, idx) || whole_number(L, idx, v);
}

/* a:slice(first, last[, step]) along the first axis: 1-based, inclusive, negatives from the
** end, clipped to the axis; omitted bounds are the ends in the step's direction */
static int view_slice (lua_State *L) {
  const gpu_Array *a = view_source(L);
  int64_t shape[GPU_MAXDIM], strides[GPU_MAXDIM], n, count, stride;
  lua_Integer first, last, step = 1;
  if (a == NULL || a->ndim == 0 || lua_gettop(L) > 4 ||     /* {axis = k}: the general one */
      !optional_whole_number(L, 4, &step) || step == 0 || step == LUA_MININTEGER)
    return view_general(L);
  n = a->shape[0];
  first = step > 0 ? 1 : n;
  last = step > 0 ? n : 1;
  if (!optional_whole_number(L, 2, &first) || !optional_whole_number(L, 3, &last))
    return view_general(L);
  if (first < 0) first = n + first + 1;
  if (last < 0) last = n + last + 1;
  if (step > 0) {
    if (first < 1) first = 1;
    if (last > n) last = n;
    count = last >= first ? (last - first) / step + 1 : 0;
  } else {
    if (first > n) first = n;
    if (last < 1) last = 1;
    count = first >= last ? (first - last) / -step + 1 : 0;
  }
  if (__builtin_mul_overflow(a->strides[0], step, &stride)) return view_general(L);
  memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  memcpy(strides, a->strides, sizeof(int64_t) * (size_t)a->ndim);
  shape[0] = count;
  strides[0] = stride;
  return push_view_of(L, a, a->offset + (size_t)(count > 0 ? (first - 1) * a->strides[0] : 0),
                      a->dtype, a->ndim, shape, strides);
}

/* a:copy() of a contiguous array on the current device: a new array and one device-to-device
** copy in the order of the Context's stream, as a kernel would be (the host does not wait).
** Streams, other layouts and devices take the Lua method. */
static int copy_contiguous (lua_State *L) {
  const gpu_Array *a = view_source(L);
  gpu_Context *c;
  gpu_Array *out;
  size_t nbytes;
  if (a == NULL || !a->contiguous || lua_gettop(L) > 2 || !lua_isnoneornil(L, 2))
    return view_general(L);
  c = a->buffer->ctx;
  if (c->ctx == NULL || c->ordinal != c->state->device) return view_general(L);
  out = gpu_array_new_in(L, c, lua_upvalueindex(VIEW_ARRAY_MT), a->dtype, a->ndim, a->shape);
  if (!gpu_array_alive(a)) gpu_freed_error(L, 1, "array");   /* a finalizer the allocation ran */
  nbytes = (size_t)a->size * gpu_dtypes[a->dtype].itemsize;
  if (nbytes > 0) {
    gpu_context_enter(L, c);
    gpu_check(L, c->driver->cuMemcpyDtoDAsync(out->ptr, a->ptr, nbytes, c->stream),
              "cuMemcpyDtoDAsync");
  }
  return 1;
}

/* view_method(name, general) -> the C method called name (transpose, reshape, ravel, view,
** slice or copy) over the Lua method general */
static int gpu_view_method (lua_State *L) {
  static const char *const names[] = {"transpose", "reshape", "ravel", "view", "slice", "copy",
                                      NULL};
  static const lua_CFunction methods[] = {view_transpose, view_reshape, view_ravel, view_as,
                                          view_slice, copy_contiguous};
  int which = luaL_checkoption(L, 1, NULL, names);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_getmetatable(L, GPU_ARRAY);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, methods[which], 2);
  return 1;
}

/* ---------------------------------------------------------------- reductions */

/* The gpu_layout of kernels/common.cu: ndim, then GPU_MAXDIM dims and byte strides. */
typedef struct Packed_layout {
  int64_t ndim, shape[GPU_MAXDIM], strides[GPU_MAXDIM];
} Packed_layout;

/* axis_layout(a, axis) -> kept_shape, m, k, axis_stride, layout, start_align, run_stride:
** for a reduction of the array a along axis (1-based), the shape of the other axes, their
** element count m, the axis' length k and byte stride, and the other axes as a packed
** gpu_layout, length-1 axes dropped and axes that one stride walks merged (what
** reduction.lua's collapse and pack_layout make of them; read from the array at once instead
** of its shape and strides tables), the largest power of two up to 16 that divides the
** address of every axis' first element (whether 16-byte loads can walk the axes), and the
** byte stride of the other axes where they merge into one (0 where not): the element size
** when each step along the axis meets all m outputs side by side. */
static int gpu_axis_layout (lua_State *L) {
  const gpu_Array *a = gpu_checkarray(L, 1);
  const lua_Integer axis = luaL_checkinteger(L, 2);
  Packed_layout lay;
  int64_t m = 1;
  uint64_t start_bits = (uint64_t)a->ptr | 16;   /* a stride's low bits as the address's */
  int d, kept = 0;
  luaL_argcheck(L, axis >= 1 && axis <= a->ndim, 2, "axis out of range");
  memset(&lay, 0, sizeof lay);
  lua_createtable(L, a->ndim - 1, 0);
  for (d = 0; d < a->ndim; d++) {
    const int64_t n = a->shape[d], stride = a->strides[d];
    if (d == axis - 1) continue;
    lua_pushinteger(L, (lua_Integer)n);
    lua_rawseti(L, -2, ++kept);
    m *= n;
    if (n == 1) continue;
    start_bits |= (uint64_t)stride;
    if (lay.ndim > 0 && lay.strides[lay.ndim - 1] == stride * n) {   /* merges with the last */
      lay.shape[lay.ndim - 1] *= n;
      lay.strides[lay.ndim - 1] = stride;
    } else {
      lay.shape[lay.ndim] = n;
      lay.strides[lay.ndim++] = stride;
    }
  }
  if (lay.ndim == 0) {
    lay.ndim = 1;
    lay.shape[0] = 1;
  }
  lua_pushinteger(L, (lua_Integer)m);
  lua_pushinteger(L, (lua_Integer)a->shape[axis - 1]);
  lua_pushinteger(L, (lua_Integer)a->strides[axis - 1]);
  lua_pushlstring(L, (const char *)&lay, sizeof lay);
  lua_pushinteger(L, (lua_Integer)(start_bits & (~start_bits + 1)));   /* its lowest set bit */
  lua_pushinteger(L, (lua_Integer)(lay.ndim == 1 ? lay.strides[0] : 0));
  return 7;
}

/* Appends v to a key as 4 bytes; 0 where it does not fit. */
static int key_int32 (char **at, int64_t v) {
  int32_t narrow = (int32_t)v;
  if (narrow != v) return 0;
  memcpy(*at, &narrow, sizeof narrow);
  *at += sizeof narrow;
  return 1;
}

/* matrix_key(a, b) -> a short string naming the product of a and b (the current device, both
** dtypes, shapes and byte strides), or nothing unless both are live 2-d GPUArrays on the
** current device whose dimensions and strides fit in 32 bits (and the fast paths are on):
** matmul's key for the launches it repeats.  Short strings are interned, so a repeated key
** costs Lua no allocation. */
static int gpu_matrix_key (lua_State *L) {
  const gpu_Array *m[2] = {gpu_testarray(L, 1), gpu_testarray(L, 2)};
  char key[3 + 8 * sizeof(int32_t)], *at = key + 3;
  int i, d;
  for (i = 0; i < 2; i++) {
    const gpu_Context *c;
    if (m[i] == NULL || !gpu_array_alive(m[i]) || m[i]->ndim != 2) return 0;
    c = m[i]->buffer->ctx;
    if (c->state->general_only || c->ordinal != c->state->device || c->ordinal > 255) return 0;
    for (d = 0; d < 2; d++)
      if (!key_int32(&at, m[i]->shape[d]) || !key_int32(&at, m[i]->strides[d])) return 0;
  }
  key[0] = (char)m[0]->buffer->ctx->ordinal;
  key[1] = (char)m[0]->dtype;
  key[2] = (char)m[1]->dtype;
  lua_pushlstring(L, key, sizeof key);
  return 1;
}

/* :free(), __close and __gc: an owner releases its memory, a view detaches. */
static int array_free (lua_State *L) {
  gpu_Array *a = (gpu_Array *)gpu_checkself(L, 1, GPU_ARRAY);
  if (a->owner && a->buffer != NULL) {
    gpu_buffer_sweep_exports(L, a->buffer);
    gpu_buffer_release(a->buffer);
  }
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
  face->exports = 0;                     /* counted on the root only */
  face->kept = 0;
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

/* a[i] for a whole number i in range, of a live array with the fast paths on: pushes flat
** element i (1-based, row-major) as a HostArray holds it, and returns 1; else 0, for the Lua
** layer (methods.__element), which reads the same bytes the same way and words the errors.
** (That one makes the shape and strides tables, a Buffer face and view, and a HostArray.) */
static int read_element (lua_State *L, const gpu_Array *a) {
  unsigned char value[16];               /* the largest dtype: complex128 */
  int isint, d;
  lua_Integer k = lua_tointegerx(L, 2, &isint);
  int64_t rest, offset = 0;
  if (!isint || k < 1 || k > a->size || !gpu_array_alive(a) ||
      a->buffer->ctx->state->general_only)
    return 0;
  for (rest = k - 1, d = a->ndim - 1; d >= 0; d--) {
    offset += rest % a->shape[d] * a->strides[d];
    rest /= a->shape[d];
  }
  gpu_copy_to_host(L, a->buffer->ctx, value, (CUdeviceptr)((int64_t)a->ptr + offset),
                   gpu_dtypes[a->dtype].itemsize);
  gpu_pushvalue(L, a->dtype, value);
  return 1;
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
    if (read_element(L, a)) return 1;
    /* a[i] otherwise (every error): the Lua layer's element access */
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
  lua_settop(L, 3);                      /* called by hand with fewer: __setelement gets three */
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
    {"view_method", gpu_view_method}, {"axis_layout", gpu_axis_layout},
    {"matrix_key", gpu_matrix_key}, {NULL, NULL},
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
