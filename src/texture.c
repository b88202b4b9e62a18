/*
** texture.c: CUDA arrays, texture objects and surface objects (gpu.CudaArray,
** gpu.TextureObject, gpu.SurfaceObject), as PyCUDA's driver.Array and CuPy's cupy.cuda.texture
** offer them: a kernel reads a texture through the hardware's addressing and filtering
** (tex2D<float>(t, x, y)) and writes a surface (surf2Dwrite), both passed as their handle.
**
** Shapes are row-major as everywhere else in lua-gpu: {w}, {h, w}, {d, h, w}, or with
** `layered` {layers, w} and {layers, h, w}; a CUDA array's elements may be vectors of 2 or 4
** channels, which a GPUArray or host array holds as its last dimension.
**
** A texture or surface object pins what it reads (a CudaArray, or a GPUArray for a texture
** over linear memory) as user value 2, and a launch checks that it is still alive: freeing the
** array first leaves the object unusable, never reading freed memory.
*/
#include <math.h>
#include <string.h>

#include "gpu.h"

typedef struct gpu_CudaArray {
  CUarray array;          /* NULL once freed */
  gpu_Context *ctx;
  gpu_DtypeId dtype;
  int channels;           /* 1, 2 or 4 elements a texel */
  int ndim;               /* of shape, layers included: 1 to 3 */
  int layered, surface;
  int64_t shape[3];
  size_t width, height, depth;   /* as the driver counts them: 0 for an absent dimension */
  size_t nbytes;
} gpu_CudaArray;

/* A texture or a surface object: the two differ only in their metatables. */
typedef struct gpu_TextureObject {
  unsigned long long handle;     /* 0 once freed */
  gpu_Context *ctx;
  const gpu_CudaArray *array;    /* what it reads (user value 2): a CUDA array, */
  const gpu_Array *linear;       /* or a GPUArray's memory */
} gpu_TextureObject;

/* ---------------------------------------------------------------- formats */

/* The array format of a dtype; 0 for dtypes the texture hardware does not hold. */
static CUarray_format format_of (gpu_DtypeId dtype) {
  switch (dtype) {
    case GPU_INT8: return CU_AD_FORMAT_SIGNED_INT8;
    case GPU_UINT8: return CU_AD_FORMAT_UNSIGNED_INT8;
    case GPU_INT16: return CU_AD_FORMAT_SIGNED_INT16;
    case GPU_UINT16: return CU_AD_FORMAT_UNSIGNED_INT16;
    case GPU_INT32: return CU_AD_FORMAT_SIGNED_INT32;
    case GPU_UINT32: return CU_AD_FORMAT_UNSIGNED_INT32;
    case GPU_FLOAT16: return CU_AD_FORMAT_HALF;
    case GPU_FLOAT32: return CU_AD_FORMAT_FLOAT;
    default: return (CUarray_format)0;
  }
}

static gpu_DtypeId check_texel_dtype (lua_State *L, int arg, gpu_DtypeId dtype) {
  if (format_of(dtype) == 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "textures hold int8, uint8, int16, uint16, int32, "
                                          "uint32, float16 or float32 elements, not %s",
                                          gpu_dtypes[dtype].name));
  return dtype;
}

static int check_channels (lua_State *L, int arg, int idx) {
  int isint;
  lua_Integer n = lua_tointegerx(L, idx, &isint);
  if (!isint || (n != 1 && n != 2 && n != 4))
    luaL_argerror(L, arg, "option 'channels' must be 1, 2 or 4");
  return (int)n;
}

/* ---------------------------------------------------------------- CUDA arrays */

static gpu_CudaArray *check_cuda_array (lua_State *L, int arg) {
  gpu_CudaArray *a = (gpu_CudaArray *)gpu_checkself(L, arg, GPU_CUDAARRAY);
  if (a->array == NULL) gpu_freed_error(L, arg, "CUDA array");
  gpu_context_enter(L, a->ctx);
  return a;
}

/* The elements of a (every channel counted). */
static int64_t cuda_array_size (const gpu_CudaArray *a) {
  int64_t n = a->channels;
  int i;
  for (i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

struct array_request { CUarray *array; const CUDA_ARRAY3D_DESCRIPTOR *desc; };

static CUresult create_array (gpu_Context *c, void *request) {
  struct array_request *q = (struct array_request *)request;
  return c->driver->cuArray3DCreate(q->array, q->desc);
}

/* gpu.CudaArray(shape[, dtype][, {channels = 1, surface = false, layered = false}]) */
static int gpu_CudaArray_new (lua_State *L) {
  static const char *const known[] = {"channels", "surface", "layered", NULL};
  CUDA_ARRAY3D_DESCRIPTOR desc;
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 1, shape, &size), options = 3, i;
  gpu_DtypeId dtype = GPU_FLOAT32;
  gpu_CudaArray *a;
  gpu_Context *c;
  CUresult r;
  if (lua_type(L, 2) == LUA_TTABLE) options = 2;          /* (shape, {channels = ...}) */
  else if (!lua_isnoneornil(L, 2)) dtype = check_texel_dtype(L, 2, gpu_checkdtype(L, 2));
  lua_settop(L, 3);
  a = (gpu_CudaArray *)lua_newuserdatauv(L, sizeof(gpu_CudaArray), 1);   /* at 4, closed */
  memset(a, 0, sizeof *a);
  gpu_setmetatable(L, 0, GPU_CUDAARRAY);
  a->dtype = dtype;
  a->channels = 1;
  if (gpu_checkoptions(L, options, known)) {
    if (lua_getfield(L, options, "channels") != LUA_TNIL) a->channels = check_channels(L, options, -1);
    if (lua_getfield(L, options, "surface") != LUA_TNIL) {
      luaL_argcheck(L, lua_isboolean(L, -1), options, "option 'surface' must be a boolean");
      a->surface = lua_toboolean(L, -1);
    }
    if (lua_getfield(L, options, "layered") != LUA_TNIL) {
      luaL_argcheck(L, lua_isboolean(L, -1), options, "option 'layered' must be a boolean");
      a->layered = lua_toboolean(L, -1);
    }
    lua_settop(L, 4);
  }
  if (ndim < 1 + a->layered || ndim > 3)
    return luaL_argerror(L, 1, a->layered ? "a layered CUDA array's shape is {layers, w} or "
                                            "{layers, h, w}"
                                          : "a CUDA array's shape is {w}, {h, w} or {d, h, w}");
  for (i = 0; i < ndim; i++) {
    luaL_argcheck(L, shape[i] > 0, 1, "a CUDA array's dimensions must be positive");
    a->shape[i] = shape[i];
  }
  a->ndim = ndim;
  /* the driver's width, height and depth, innermost first; layers count as the depth */
  a->width = (size_t)shape[ndim - 1];
  a->height = ndim - a->layered >= 2 ? (size_t)shape[ndim - 2] : 0;
  a->depth = a->layered ? (size_t)shape[0] : ndim == 3 ? (size_t)shape[0] : 0;
  a->nbytes = (size_t)cuda_array_size(a) * gpu_dtypes[dtype].itemsize;
  memset(&desc, 0, sizeof desc);
  desc.Width = a->width;
  desc.Height = a->height;
  desc.Depth = a->depth;
  desc.Format = format_of(dtype);
  desc.NumChannels = (unsigned)a->channels;
  desc.Flags = (a->layered ? CUDA_ARRAY3D_LAYERED : 0) | (a->surface ? CUDA_ARRAY3D_SURFACE_LDST : 0);
  c = gpu_context_push(L);
  lua_setiuservalue(L, 4, 1);
  a->ctx = c;
  gpu_gc_account(L, c->state, a->nbytes);
  r = gpu_device_alloc_retrying(L, c, create_array, &(struct array_request){&a->array, &desc});
  if (r != CUDA_SUCCESS) a->array = NULL;
  gpu_check(L, r, "cuArray3DCreate");
  c->state->gc_bytes += a->nbytes;
  return 1;
}

static int cuda_array_free (lua_State *L) {
  gpu_CudaArray *a = (gpu_CudaArray *)gpu_checkself(L, 1, GPU_CUDAARRAY);
  if (a->array != NULL) {
    gpu_State *s = a->ctx->state;
    /* freed before a collection counted them: those bytes need no collecting */
    s->gc_debt -= a->nbytes < s->gc_debt ? a->nbytes : s->gc_debt;
    s->gc_bytes -= a->nbytes;
    gpu_release(s, &(gpu_Release){GPU_RELEASE_CUDA_ARRAY, a->ctx, {.array = a->array}});
  }
  a->array = NULL;
  return 0;
}

/* The linear side of a copy to or from a CUDA array: device or host memory of its size. */
typedef struct copy_side {
  CUmemorytype type;
  CUdeviceptr device;
  const void *host;
  int pinned;
} copy_side;

static void check_elements (lua_State *L, int arg, const gpu_CudaArray *a, gpu_DtypeId dtype,
                            int64_t size) {
  if (dtype != a->dtype)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s elements, the CUDA array holds %s",
                                          gpu_dtypes[dtype].name, gpu_dtypes[a->dtype].name));
  if (size != cuda_array_size(a))
    luaL_argerror(L, arg, lua_pushfstring(L, "%I elements, the CUDA array holds %I",
                                          (lua_Integer)size, (lua_Integer)cuda_array_size(a)));
}

/* Reads the GPUArray, Buffer, host array (or, to copy from, string) at arg. */
static copy_side linear_side (lua_State *L, int arg, const gpu_CudaArray *a, int writable) {
  copy_side side = {CU_MEMORYTYPE_DEVICE, 0, NULL, 0};
  gpu_Array *g;
  gpu_Buffer *b;
  if ((g = gpu_testarray(L, arg)) != NULL) {
    if (!gpu_array_alive(g)) gpu_freed_error(L, arg, "array");
    if (!g->contiguous) luaL_argerror(L, arg, "array must be contiguous");
    if (g->buffer->ctx != a->ctx) luaL_argerror(L, arg, "array is on another device");
    check_elements(L, arg, a, g->dtype, g->size);
    side.device = g->ptr;
  } else if ((b = gpu_testbuffer(L, arg)) != NULL) {
    b = gpu_checkbuffer(L, arg);
    if (b->ctx != a->ctx) luaL_argerror(L, arg, "buffer is on another device");
    if (b->size != a->nbytes)
      luaL_argerror(L, arg, lua_pushfstring(L, "buffer of %I bytes, the CUDA array holds %I",
                                            (lua_Integer)b->size, (lua_Integer)a->nbytes));
    side.device = b->ptr;
  } else if (luaL_testudata(L, arg, GPU_HOSTARRAY) != NULL) {
    gpu_HostArray *h = gpu_checkhostarray(L, arg);
    check_elements(L, arg, a, h->dtype, h->size);
    side.type = h->root->managed ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_HOST;
    if (h->root->managed) side.device = (CUdeviceptr)(uintptr_t)h->data;
    side.host = h->data;
    side.pinned = h->root->pagelocked || h->root->managed;
  } else if (!writable && lua_type(L, arg) == LUA_TSTRING) {
    size_t len;
    side.type = CU_MEMORYTYPE_HOST;
    side.host = lua_tolstring(L, arg, &len);
    if (len != a->nbytes)
      luaL_argerror(L, arg, lua_pushfstring(L, "string of %I bytes, the CUDA array holds %I",
                                            (lua_Integer)len, (lua_Integer)a->nbytes));
  } else {
    luaL_argerror(L, arg, lua_pushfstring(L, "GPUArray, gpu.Buffer%s expected, got %s",
                                          writable ? " or host array" : ", host array or string",
                                          luaL_typename(L, arg)));
  }
  return side;
}

/*
** Copies between a (at stack index 1) and the memory of side (at 2), in the order of stream
** (the gpu.Stream at 3) if any, asynchronously then; else in the host's stream, waited for
** (lua_gpu_use_stream), or synchronously.
*/
static void copy_array (lua_State *L, const gpu_CudaArray *a, const copy_side *side,
                        CUstream stream, int to_array) {
  const gpu_Driver *d = a->ctx->driver;
  size_t row = a->width * (size_t)a->channels * gpu_dtypes[a->dtype].itemsize;
  CUDA_MEMCPY3D copy;
  memset(&copy, 0, sizeof copy);
  copy.WidthInBytes = row;
  copy.Height = a->height ? a->height : 1;
  copy.Depth = a->depth ? a->depth : 1;
  if (to_array) {
    copy.srcMemoryType = side->type;
    copy.srcDevice = side->device;
    copy.srcHost = side->host;
    copy.srcPitch = row;
    copy.srcHeight = copy.Height;
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = a->array;
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = a->array;
    copy.dstMemoryType = side->type;
    copy.dstDevice = side->device;
    copy.dstHost = (void *)side->host;
    copy.dstPitch = row;
    copy.dstHeight = copy.Height;
  }
  gpu_context_enter(L, a->ctx);
  if (stream != NULL) {
    gpu_capture_note(L, 3, 1);
    gpu_capture_note(L, 3, 2);
    gpu_check(L, d->cuMemcpy3DAsync(&copy, stream), "cuMemcpy3DAsync");
  } else if (a->ctx->stream != NULL) {
    gpu_check(L, d->cuMemcpy3DAsync(&copy, a->ctx->stream), "cuMemcpy3DAsync");
    gpu_check(L, d->cuStreamSynchronize(a->ctx->stream), "cuStreamSynchronize");
  } else {
    gpu_check(L, d->cuMemcpy3D(&copy), "cuMemcpy3D");
  }
}

static int cuda_array_copy (lua_State *L, int to_array) {
  gpu_CudaArray *a = check_cuda_array(L, 1);
  copy_side side = linear_side(L, 2, a, !to_array);
  CUstream stream = gpu_optstream(L, 3);
  /* as memcpy_htod_async: pageable memory would make the copy synchronous, and a graph
  ** would replay it from memory it does not keep */
  if (stream != NULL && side.type == CU_MEMORYTYPE_HOST && !side.pinned)
    luaL_argerror(L, 2, "async copies need page-locked host memory (gpu.host.pagelocked_empty)");
  copy_array(L, a, &side, stream, to_array);
  lua_settop(L, 1);
  return 1;
}

/* arr:copy_from(src[, stream]) -> arr */
static int cuda_array_copy_from (lua_State *L) { return cuda_array_copy(L, 1); }
/* arr:copy_to(dst[, stream]) -> arr */
static int cuda_array_copy_to (lua_State *L) { return cuda_array_copy(L, 0); }

/* The host shape of a's contents: its shape, and its channels as a last dimension if > 1. */
static int host_shape (const gpu_CudaArray *a, int64_t *shape) {
  int n = a->ndim;
  memcpy(shape, a->shape, sizeof(int64_t) * (size_t)n);
  if (a->channels > 1) shape[n++] = a->channels;
  return n;
}

/* arr:get() -> a host array of the contents (channels as the last dimension) */
static int cuda_array_get (lua_State *L) {
  gpu_CudaArray *a = check_cuda_array(L, 1);
  int64_t shape[4];
  int n = host_shape(a, shape);
  copy_side side = {CU_MEMORYTYPE_HOST, 0, NULL, 0};
  lua_settop(L, 1);
  side.host = gpu_hostarray_new(L, a->dtype, n, shape, GPU_HOST_PAGEABLE)->data;
  check_cuda_array(L, 1);                 /* again: the allocation ran finalizers */
  copy_array(L, a, &side, NULL, 0);
  return 1;
}

static void push_shape (lua_State *L, const int64_t *shape, int n) {
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* arr.shape, arr.dtype, arr.channels, arr.ndim, arr.nbytes, arr.layered, arr.surface, and
** the methods */
static int cuda_array_index (lua_State *L) {
  gpu_CudaArray *a = (gpu_CudaArray *)gpu_checkself(L, 1, GPU_CUDAARRAY);
  const char *key = lua_tostring(L, 2);
  if (lua_getfield(L, lua_upvalueindex(1), key ? key : "") != LUA_TNIL || key == NULL) return 1;
  if (strcmp(key, "shape") == 0) push_shape(L, a->shape, a->ndim);
  else if (strcmp(key, "dtype") == 0) lua_pushstring(L, gpu_dtypes[a->dtype].name);
  else if (strcmp(key, "channels") == 0) lua_pushinteger(L, a->channels);
  else if (strcmp(key, "ndim") == 0) lua_pushinteger(L, a->ndim);
  else if (strcmp(key, "nbytes") == 0) lua_pushinteger(L, (lua_Integer)a->nbytes);
  else if (strcmp(key, "layered") == 0) lua_pushboolean(L, a->layered);
  else if (strcmp(key, "surface") == 0) lua_pushboolean(L, a->surface);
  else lua_pushnil(L);
  return 1;
}

static int cuda_array_tostring (lua_State *L) {
  gpu_CudaArray *a = (gpu_CudaArray *)gpu_checkself(L, 1, GPU_CUDAARRAY);
  luaL_Buffer b;
  int i;
  if (a->array == NULL) {
    lua_pushliteral(L, "gpu.CudaArray(freed)");
    return 1;
  }
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "gpu.CudaArray(%s, ", gpu_dtypes[a->dtype].name);
  luaL_addvalue(&b);
  for (i = 0; i < a->ndim; i++) {
    lua_pushfstring(L, i ? " x %I" : "%I", (lua_Integer)a->shape[i]);
    luaL_addvalue(&b);
  }
  if (a->channels > 1) {
    lua_pushfstring(L, ", %d channels", a->channels);
    luaL_addvalue(&b);
  }
  if (a->layered) luaL_addstring(&b, ", layered");
  if (a->surface) luaL_addstring(&b, ", surface");
  luaL_addchar(&b, ')');
  luaL_pushresult(&b);
  return 1;
}

/* ---------------------------------------------------------------- texture and surface objects */

static const char *const address_names[] = {"wrap", "clamp", "mirror", "border", NULL};
static const CUaddress_mode address_modes[] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_CLAMP,
                                              CU_TR_ADDRESS_MODE_MIRROR, CU_TR_ADDRESS_MODE_BORDER};

/* The option at idx (a string) among names; raises naming option `what` otherwise. */
static int check_choice (lua_State *L, int arg, int idx, const char *what,
                         const char *const names[], const char *expected) {
  const char *name = lua_tostring(L, idx);
  int i;
  for (i = 0; name != NULL && lua_type(L, idx) == LUA_TSTRING && names[i] != NULL; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", what, expected));
}

/* address_mode: one name for every coordinate, or a list of one to three (x, y, z). */
static void read_address_modes (lua_State *L, int arg, int idx, CUaddress_mode modes[3]) {
  static const char expected[] = "\"wrap\", \"clamp\", \"mirror\" or \"border\", or a list of "
                                 "one to three of them";
  int i, n = lua_type(L, idx) == LUA_TTABLE ? (int)lua_rawlen(L, idx) : 0;
  if (lua_type(L, idx) == LUA_TSTRING) {
    int k = check_choice(L, arg, idx, "address_mode", address_names, expected);
    modes[0] = modes[1] = modes[2] = address_modes[k];
    return;
  }
  if (n < 1 || n > 3)
    luaL_argerror(L, arg, lua_pushfstring(L, "option 'address_mode' must be %s", expected));
  for (i = 0; i < 3; i++) {
    lua_rawgeti(L, idx, i < n ? i + 1 : n);     /* the last one given goes on */
    modes[i] = address_modes[check_choice(L, arg, -1, "address_mode", address_names, expected)];
    lua_pop(L, 1);
  }
}

static void read_border_color (lua_State *L, int arg, int idx, double color[4]) {
  int i, n = lua_type(L, idx) == LUA_TTABLE ? (int)lua_rawlen(L, idx) : 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    color[0] = color[1] = color[2] = color[3] = lua_tonumber(L, idx);
    return;
  }
  if (n < 1 || n > 4)
    luaL_argerror(L, arg, "option 'border_color' must be a number or a list of one to four");
  for (i = 0; i < 4; i++) {
    if (lua_rawgeti(L, idx, i < n ? i + 1 : n) != LUA_TNUMBER)
      luaL_argerror(L, arg, "option 'border_color' must be a number or a list of one to four");
    color[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
}

static int device_attribute (lua_State *L, const gpu_Context *c, CUdevice_attribute which) {
  int v = 0;
  gpu_check(L, c->driver->cuDeviceGetAttribute(&v, which, c->device), "cuDeviceGetAttribute");
  return v;
}

/*
** The resource of a texture over a GPUArray's memory: 1-d (with channels, 2-d) as linear
** memory, read with tex1Dfetch; 2-d (3-d) as pitched rows, read with tex2D.
*/
static void linear_resource (lua_State *L, const gpu_Array *g, int channels, int options,
                             CUDA_RESOURCE_DESC *res) {
  size_t item = gpu_dtypes[g->dtype].itemsize, texel = item * (size_t)channels;
  int dims = g->ndim - (channels > 1), align;
  gpu_Context *c = g->buffer->ctx;
  check_texel_dtype(L, 1, g->dtype);
  if (g->size == 0) luaL_argerror(L, 1, "array is empty");
  if (channels > 1 && (g->ndim < 2 || g->shape[g->ndim - 1] != channels))
    luaL_argerror(L, options, lua_pushfstring(L, "option 'channels' is %d: the array's last "
                                              "dimension must be %d", channels, channels));
  if (dims != 1 && dims != 2)
    luaL_argerror(L, 1, "a texture over a GPUArray reads 1-d (linear) or 2-d (pitched) "
                        "arrays: copy others to a gpu.CudaArray");
  /* texels within a row are contiguous; rows may be apart (a pitch) */
  if ((channels > 1 && g->strides[g->ndim - 1] != (int64_t)item) ||
      g->strides[dims - 1] != (int64_t)texel || (dims == 2 && g->strides[0] < (int64_t)(texel * (size_t)g->shape[1])))
    luaL_argerror(L, 1, "array's rows must be contiguous");
  align = device_attribute(L, c, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  if (align > 0 && g->ptr % (CUdeviceptr)align != 0)
    luaL_argerror(L, 1, lua_pushfstring(L, "array's address must be a multiple of %d bytes "
                                        "(a view's may not be)", align));
  memset(res, 0, sizeof *res);
  if (dims == 1) {
    res->resType = CU_RESOURCE_TYPE_LINEAR;
    res->res.linear.devPtr = g->ptr;
    res->res.linear.format = format_of(g->dtype);
    res->res.linear.numChannels = (unsigned)channels;
    res->res.linear.sizeInBytes = (size_t)g->size * item;
  } else {
    align = device_attribute(L, c, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
    if (align > 0 && g->strides[0] % align != 0)
      luaL_argerror(L, 1, lua_pushfstring(L, "array's rows are %I bytes apart, not a multiple "
                                          "of %d: copy it to a gpu.CudaArray",
                                          (lua_Integer)g->strides[0], align));
    res->resType = CU_RESOURCE_TYPE_PITCH2D;
    res->res.pitch2D.devPtr = g->ptr;
    res->res.pitch2D.format = format_of(g->dtype);
    res->res.pitch2D.numChannels = (unsigned)channels;
    res->res.pitch2D.width = (size_t)g->shape[1];
    res->res.pitch2D.height = (size_t)g->shape[0];
    res->res.pitch2D.pitchInBytes = (size_t)g->strides[0];
  }
}

/* Pushes a closed texture or surface object (metatable tname) pinning the resource at 1. */
static gpu_TextureObject *new_object (lua_State *L, const char *tname, gpu_Context *c) {
  gpu_TextureObject *t = (gpu_TextureObject *)lua_newuserdatauv(L, sizeof(gpu_TextureObject), 2);
  memset(t, 0, sizeof *t);
  gpu_setmetatable(L, 0, tname);
  t->ctx = c;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);     /* the Context */
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 2);
  return t;
}

/*
** gpu.TextureObject(resource[, {address_mode = "clamp", filter_mode = "point",
**   read_mode = "element", normalized_coords = false, border_color = 0, channels = 1}])
** resource: a gpu.CudaArray, or a GPUArray (1-d: linear memory; 2-d: pitched rows), whose
** last dimension holds the channels when `channels` is 2 or 4.
*/
static int gpu_TextureObject_new (lua_State *L) {
  static const char *const known[] = {"address_mode", "filter_mode", "read_mode",
                                      "normalized_coords", "border_color", "channels", NULL};
  static const char *const filter_names[] = {"point", "linear", NULL};
  static const char *const read_names[] = {"element", "normalized_float", NULL};
  CUDA_RESOURCE_DESC res;
  CUDA_TEXTURE_DESC tex;
  gpu_CudaArray *a = (gpu_CudaArray *)luaL_testudata(L, 1, GPU_CUDAARRAY);
  gpu_Array *g = a == NULL ? gpu_testarray(L, 1) : NULL;
  gpu_TextureObject *t;
  gpu_Context *c;
  gpu_DtypeId dtype;
  int channels = 1, filter = 0, read = 0, normalized = 0, i;
  CUaddress_mode modes[3] = {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP,
                             CU_TR_ADDRESS_MODE_CLAMP};
  double border[4] = {0, 0, 0, 0};
  if (a == NULL && g == NULL)
    return luaL_argerror(L, 1, lua_pushfstring(L, "gpu.CudaArray or GPUArray expected, got %s",
                                               luaL_typename(L, 1)));
  lua_settop(L, 2);
  if (gpu_checkoptions(L, 2, known)) {
    if (lua_getfield(L, 2, "address_mode") != LUA_TNIL) read_address_modes(L, 2, -1, modes);
    if (lua_getfield(L, 2, "filter_mode") != LUA_TNIL)
      filter = check_choice(L, 2, -1, "filter_mode", filter_names, "\"point\" or \"linear\"");
    if (lua_getfield(L, 2, "read_mode") != LUA_TNIL)
      read = check_choice(L, 2, -1, "read_mode", read_names, "\"element\" or \"normalized_float\"");
    if (lua_getfield(L, 2, "normalized_coords") != LUA_TNIL) {
      luaL_argcheck(L, lua_isboolean(L, -1), 2, "option 'normalized_coords' must be a boolean");
      normalized = lua_toboolean(L, -1);
    }
    if (lua_getfield(L, 2, "border_color") != LUA_TNIL) read_border_color(L, 2, -1, border);
    if (lua_getfield(L, 2, "channels") != LUA_TNIL) {
      luaL_argcheck(L, g != NULL, 2, "option 'channels' is for GPUArrays (a CUDA array knows its own)");
      channels = check_channels(L, 2, -1);
    }
    lua_settop(L, 2);
  }
  c = a != NULL ? a->ctx : g->buffer != NULL ? g->buffer->ctx : NULL;
  /* allocated before the resource is looked at: the options' metamethods and the collector's
  ** finalizers have run by then, and whatever they freed is seen as freed */
  t = c != NULL ? new_object(L, GPU_TEXTURE, c) : NULL;   /* at 3 */
  if (a != NULL && a->array == NULL) return gpu_freed_error(L, 1, "CUDA array");
  if (g != NULL && !gpu_array_alive(g)) return gpu_freed_error(L, 1, "array");
  if (a != NULL) {
    dtype = a->dtype;
    memset(&res, 0, sizeof res);
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = a->array;
  } else {
    dtype = g->dtype;
    linear_resource(L, g, channels, 2, &res);
    if (res.resType == CU_RESOURCE_TYPE_LINEAR && (filter != 0 || normalized))
      return luaL_argerror(L, 2, "a texture over a 1-d GPUArray is read with tex1Dfetch: no "
                                 "linear filtering or normalized coordinates");
  }
  /* what the hardware cannot do, said before the driver's CUDA_ERROR_INVALID_VALUE */
  if (read == 1 && (gpu_dtypes[dtype].itemsize > 2 || gpu_dtypes[dtype].kind == 'f'))
    return luaL_argerror(L, 2, lua_pushfstring(L, "read_mode 'normalized_float' is for 8- and "
                                               "16-bit integers, not %s", gpu_dtypes[dtype].name));
  if (filter == 1 && gpu_dtypes[dtype].kind != 'f' && read == 0)
    return luaL_argerror(L, 2, lua_pushfstring(L, "filter_mode 'linear' on %s elements needs "
                                               "read_mode 'normalized_float'",
                                               gpu_dtypes[dtype].name));
  for (i = 0; i < 3 && !normalized; i++)
    if (modes[i] == CU_TR_ADDRESS_MODE_WRAP || modes[i] == CU_TR_ADDRESS_MODE_MIRROR)
      return luaL_argerror(L, 2, "address modes 'wrap' and 'mirror' need normalized_coords = true");
  memset(&tex, 0, sizeof tex);
  for (i = 0; i < 3; i++) tex.addressMode[i] = modes[i];
  tex.filterMode = filter ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
  tex.flags = (normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0) |
              (read == 0 && gpu_dtypes[dtype].kind != 'f' ? CU_TRSF_READ_AS_INTEGER : 0);
  for (i = 0; i < 4; i++) {
    if (tex.flags & CU_TRSF_READ_AS_INTEGER) {
      /* integers read as integers take the border's bits as such (cuda.h: "reinterpret_cast"
      ** them to float), as 32-bit signed or unsigned values */
      int bits_wide = 8 * gpu_dtypes[dtype].itemsize, is_unsigned = gpu_dtypes[dtype].kind == 'u';
      double lo = is_unsigned ? 0 : -ldexp(1, bits_wide - 1);
      double hi = is_unsigned ? ldexp(1, bits_wide) - 1 : ldexp(1, bits_wide - 1) - 1;
      uint32_t bits;
      if (!(border[i] >= lo && border[i] <= hi && border[i] == floor(border[i])))
        return luaL_argerror(L, 2, lua_pushfstring(L, "option 'border_color' must hold %s "
                                                   "values for integer reads", gpu_dtypes[dtype].name));
      bits = gpu_dtypes[dtype].kind == 'u' ? (uint32_t)(int64_t)border[i]
                                          : (uint32_t)(int32_t)(int64_t)border[i];
      memcpy(&tex.borderColor[i], &bits, sizeof bits);
    } else {
      tex.borderColor[i] = (float)border[i];
    }
  }
  t->array = a;
  t->linear = g;
  gpu_context_enter(L, c);
  gpu_check(L, c->driver->cuTexObjectCreate(&t->handle, &res, &tex, NULL), "cuTexObjectCreate");
  return 1;
}

/* gpu.SurfaceObject(cuda_array): kernels write (and read) the array with surf2Dwrite and co. */
static int gpu_SurfaceObject_new (lua_State *L) {
  gpu_CudaArray *a = (gpu_CudaArray *)luaL_checkudata(L, 1, GPU_CUDAARRAY);
  CUDA_RESOURCE_DESC res;
  gpu_TextureObject *t;
  if (a->array == NULL) return gpu_freed_error(L, 1, "CUDA array");
  luaL_argcheck(L, a->surface, 1, "CUDA array made without surface = true");
  lua_settop(L, 1);
  memset(&res, 0, sizeof res);
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a->array;
  t = new_object(L, GPU_SURFACE, a->ctx);
  t->array = a;
  gpu_context_enter(L, a->ctx);
  gpu_check(L, a->ctx->driver->cuSurfObjectCreate(&t->handle, &res), "cuSurfObjectCreate");
  return 1;
}

static gpu_TextureObject *to_object (lua_State *L, int idx, int *surface) {
  gpu_TextureObject *t = (gpu_TextureObject *)luaL_testudata(L, idx, GPU_TEXTURE);
  *surface = 0;
  if (t == NULL && (t = (gpu_TextureObject *)luaL_testudata(L, idx, GPU_SURFACE)) != NULL)
    *surface = 1;
  return t;
}

static int object_free (lua_State *L) {
  int surface;
  gpu_TextureObject *t = to_object(L, 1, &surface);
  if (t == NULL) return luaL_typeerror(L, 1, GPU_TEXTURE);
  if (t->handle != 0)
    gpu_release(t->ctx->state, &(gpu_Release){surface ? GPU_RELEASE_SURFACE : GPU_RELEASE_TEXTURE,
                                             t->ctx, {.object = t->handle}});
  t->handle = 0;
  return 0;
}

/* Why the object t cannot be used, or NULL. */
static const char *object_unusable (const gpu_TextureObject *t, int surface) {
  if (t->handle == 0) return surface ? "surface object has been freed" : "texture object has been freed";
  if (t->array != NULL && t->array->array == NULL) return "the CUDA array it reads has been freed";
  if (t->linear != NULL && !gpu_array_alive(t->linear)) return "the array it reads has been freed";
  return NULL;
}

/* tex.handle, tex.resource, and the methods */
static int object_index (lua_State *L) {
  int surface;
  gpu_TextureObject *t = to_object(L, 1, &surface);
  const char *key = lua_tostring(L, 2);
  if (t == NULL) return luaL_typeerror(L, 1, GPU_TEXTURE);
  if (lua_getfield(L, lua_upvalueindex(1), key ? key : "") != LUA_TNIL || key == NULL) return 1;
  if (strcmp(key, "handle") == 0) {
    const char *why = object_unusable(t, surface);
    if (why != NULL) return luaL_error(L, "%s", why);
    lua_pushinteger(L, (lua_Integer)t->handle);
  } else if (strcmp(key, "resource") == 0) {
    lua_getiuservalue(L, 1, 2);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

static int object_tostring (lua_State *L) {
  int surface;
  gpu_TextureObject *t = to_object(L, 1, &surface);
  const char *name = surface ? "gpu.SurfaceObject" : "gpu.TextureObject";
  if (t == NULL) return luaL_typeerror(L, 1, GPU_TEXTURE);
  if (t->handle == 0) lua_pushfstring(L, "%s(freed)", name);
  else lua_pushfstring(L, "%s(%I)", name, (lua_Integer)t->handle);
  return 1;
}

/* ---------------------------------------------------------------- for launches and graphs */

unsigned long long gpu_texture_handle (lua_State *L, int idx, const gpu_Context **ctx,
                                       const char **why) {
  int surface;
  gpu_TextureObject *t = to_object(L, idx, &surface);
  *why = t == NULL ? "not a texture or surface object" : object_unusable(t, surface);
  *ctx = t != NULL ? t->ctx : NULL;
  return *why == NULL ? t->handle : 0;
}

int gpu_texture_state (lua_State *L, int idx) {
  const gpu_CudaArray *a = (const gpu_CudaArray *)luaL_testudata(L, idx, GPU_CUDAARRAY);
  int surface;
  const gpu_TextureObject *t;
  if (a != NULL) return a->array != NULL;
  if ((t = to_object(L, idx, &surface)) == NULL) return -1;
  return object_unusable(t, surface) == NULL;
}

void gpu_texture_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"CudaArray", gpu_CudaArray_new}, {"TextureObject", gpu_TextureObject_new},
    {"SurfaceObject", gpu_SurfaceObject_new}, {NULL, NULL},
  };
  static const luaL_Reg array_meta[] = {
    {"__gc", cuda_array_free}, {"__close", cuda_array_free}, {"__index", cuda_array_index},
    {"__tostring", cuda_array_tostring}, {NULL, NULL},
  };
  static const luaL_Reg array_methods[] = {
    {"free", cuda_array_free}, {"close", cuda_array_free}, {"copy_from", cuda_array_copy_from},
    {"copy_to", cuda_array_copy_to}, {"get", cuda_array_get}, {NULL, NULL},
  };
  static const luaL_Reg object_meta[] = {
    {"__gc", object_free}, {"__close", object_free}, {"__index", object_index},
    {"__tostring", object_tostring}, {NULL, NULL},
  };
  static const luaL_Reg object_methods[] = {{"free", object_free}, {"close", object_free},
                                            {NULL, NULL}};
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_CUDAARRAY, array_meta, array_methods);
  gpu_newtype(L, GPU_TEXTURE, object_meta, object_methods);
  gpu_newtype(L, GPU_SURFACE, object_meta, object_methods);
}
