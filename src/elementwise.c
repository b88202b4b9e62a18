/*
** elementwise.c: the C paths of elementwise work, which skip the Lua layer's checks, type
** promotion and shape tables for the common calls and launch at once: the GPUArray operators
** and the functions of one or two operands (array_binary_operator, array_unary_operator), an
** ElementwiseKernel's call (elementwise_caller), a reduction of one block (reduction_caller:
** a ReductionKernel's call, gpuarray.sum and the like), the Lua layer's launch of a generated
** elementwise program (program_launcher) and its choice of the program by the operands' kinds
** (program_dispatcher).  Each takes what it can (arrays on the current device, numbers their
** kernels take, an out apart from its operands, a stream not capturing a graph) and hands
** everything else, every error included, to the Lua code, which gives the same results.
** fast_paths(false) turns them off for a Lua state.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/* ---------------------------------------------------------------- operators */

/*
** A binary operator's metamethod (array_binary_operator), and a unary operator's
** (array_unary_operator), keeps its kernels in its upvalues:
** 1 kernels (key -> Function, or false where the pair has no plain kernel), 2 its Operator
** (below), 3 compile(x, y) -> Function, result dtype (or nothing), 4 the general path
** general(x, y, out, stream) (a unary's general(x, out, stream)), 5 the GPUArray metatable,
** 6 the operation's program dispatcher (below), tried before the general path, or nil.
** A key is device ordinal * GPU_NDTYPES^2 + x's dtype * GPU_NDTYPES + y's dtype for two
** arrays; for an array and a Lua number, -1 - ((ordinal * GPU_NDTYPES + the array's dtype) *
** 4 + 2 * (the number is x) + (the number is a float)): what NumPy's weak scalars make of it;
** for a unary operator's one array, ordinal * GPU_NDTYPES + its dtype (compile gets it and nil).
** The same key without the ordinal is the operands' kind, whose result dtype does not depend
** on the device.
*/
enum { OP_KERNELS = 1, OP_OPERATOR, OP_COMPILE, OP_GENERAL, OP_ARRAY_MT, OP_DISPATCH };

/* The kinds of operands, each an index of Operator.result: x's dtype * GPU_NDTYPES + y's for
** two arrays, GPU_NDTYPES^2 + the array's dtype * 4 + which number for an array and a number,
** the dtype for a unary operator's array (its own Operator). */
#define OP_KINDS (GPU_NDTYPES * GPU_NDTYPES + GPU_NDTYPES * 4)
#define OP_NO_RESULT 0xff

/* An operator's numbers, read in one call where each upvalue would take one: the launch
** geometry, the GPUArray metatable's identity, and the result dtype of each kind of operands
** compiled so far (OP_NO_RESULT before). */
typedef struct Operator {
  const void *array_mt;      /* upvalue OP_ARRAY_MT, which keeps it alive */
  lua_Integer block;         /* threads per block */
  lua_Integer max_grid;      /* the most blocks */
  lua_Integer per_block;     /* the elements a block takes before the grid is capped */
  unsigned char result[OP_KINDS];
} Operator;
/* The closure's stack: 1 and 2 the operands (a unary's second is nil), then out, the stream
** and the kernel. */
enum { OP_AT_OUT = 3, OP_AT_STREAM, OP_AT_KERNEL };

/* The GPUArray at idx, by its metatable at mt_idx (an upvalue: no registry lookup), or NULL. */
static const gpu_Array *operand_of (lua_State *L, int idx, int mt_idx) {
  return gpu_hasmetatable(L, idx, mt_idx) ? (const gpu_Array *)lua_touserdata(L, idx) : NULL;
}

/* The same for an operator's operand: one pointer fetched, where operand_of takes two. */
static const gpu_Array *operand (lua_State *L, const Operator *op, int idx) {
  const void *mt;
  if (!lua_getmetatable(L, idx)) return NULL;
  mt = lua_topointer(L, -1);
  lua_pop(L, 1);
  return mt == op->array_mt ? (const gpu_Array *)lua_touserdata(L, idx) : NULL;
}

/* x takes a kernel from a C path: live, non-empty, on the current device (and the fast paths
** are on); any layout. */
static int usable (const gpu_Array *x) {
  const gpu_Context *c;
  if (x == NULL || !gpu_array_alive(x) || x->size == 0) return 0;
  c = x->buffer->ctx;
  return c->ctx != NULL && c->state->device == c->ordinal && !c->state->general_only;
}

/* x takes one plain kernel: usable and C-contiguous. */
static int plain (const gpu_Array *x) {
  return usable(x) && x->contiguous;
}

static int same_shape (const gpu_Array *a, int ndim, const int64_t *shape) {
  return a->ndim == ndim && memcmp(a->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0;
}

/* x and y need no broadcasting and one plain kernel: both plain, of one shape and device. */
static int plain_pair (const gpu_Array *x, const gpu_Array *y) {
  return plain(x) && plain(y) && x->size == y->size && x->buffer->ctx == y->buffer->ctx &&
         same_shape(x, y->ndim, y->shape);
}

/* The first byte a non-empty array touches, and one past its last (strides may be negative). */
static void byte_extent (const gpu_Array *a, CUdeviceptr *lo, CUdeviceptr *hi) {
  int64_t low = 0, high = (int64_t)gpu_dtypes[a->dtype].itemsize;
  int d;
  for (d = 0; d < a->ndim; d++) {
    int64_t reach = (a->shape[d] - 1) * a->strides[d];
    if (reach < 0) low += reach;
    else high += reach;
  }
  *lo = a->ptr + (CUdeviceptr)low;     /* unsigned wrap-around adds a negative low */
  *hi = a->ptr + (CUdeviceptr)high;
}

/* Whether a and out (C-contiguous) share no byte, or are the same elements (address, element
** size, shape, and a C-contiguous too): each thread of an elementwise kernel reads element i
** of the operands before it writes element i of out.  Any other overlap is the general
** path's, which copies the operand first. */
static int apart_or_same (const gpu_Array *a, const gpu_Array *out) {
  CUdeviceptr a_lo, a_hi, out_lo, out_hi;
  byte_extent(a, &a_lo, &a_hi);
  byte_extent(out, &out_lo, &out_hi);
  return a_hi <= out_lo || out_hi <= a_lo ||
         (a->ptr == out->ptr && a->contiguous &&
          gpu_dtypes[a->dtype].itemsize == gpu_dtypes[out->dtype].itemsize &&
          same_shape(a, out->ndim, out->shape));
}

/* Pushes the kernel of key (compiled on first use), whose operands are of kind, or returns 0
** with nothing pushed. */
static int push_kernel (lua_State *L, Operator *op, lua_Integer key, int kind,
                        gpu_DtypeId *result) {
  int type = lua_rawgeti(L, lua_upvalueindex(OP_KERNELS), key);
  if (type == LUA_TNIL) {
    int dtype;
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(OP_COMPILE));
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 2);
    dtype = lua_type(L, -1) == LUA_TSTRING ? gpu_finddtype(lua_tostring(L, -1)) : -1;
    lua_pop(L, 1);
    if (gpu_isfunction(L, -1) && dtype >= 0) {
      op->result[kind] = (unsigned char)dtype;
      type = LUA_TUSERDATA;
    } else {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
      type = LUA_TBOOLEAN;
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, lua_upvalueindex(OP_KERNELS), key);
  }
  if (type != LUA_TUSERDATA || op->result[kind] == OP_NO_RESULT) {
    lua_pop(L, 1);
    return 0;
  }
  *result = (gpu_DtypeId)op->result[kind];
  return 1;
}

/* Whether out can take the elementwise result of a (and b) in place of a new array: plain,
** of their shape, device and the result's dtype, and apart from each or the same elements. */
static int takes_result (const gpu_Array *out, const gpu_Array *a, const gpu_Array *b,
                         gpu_DtypeId result) {
  return plain(out) && out->dtype == result && out->buffer->ctx == a->buffer->ctx &&
         same_shape(out, a->ndim, a->shape) && apart_or_same(a, out) &&
         (b == NULL || apart_or_same(b, out));
}

/* Launches the kernel at stack index OP_AT_KERNEL, on the stream at OP_AT_STREAM, over the
** array given as out (stack index OP_AT_OUT) or a new one of a's shape and the dtype result,
** and pushes that array: element i of out, then of the operands: a and b for two arrays, or
** a and the Lua number at stack index number_at, in their order.  Returns 0 with the stack at
** OP_AT_STREAM where the launch, the stream or out does not take them. */
static int launch_operator (lua_State *L, const Operator *op, const gpu_Array *out,
                            const gpu_Array *a, const gpu_Array *b, int number_at,
                            gpu_DtypeId result) {
  lua_Integer blocks = (a->size + op->per_block - 1) / op->per_block;
  const lua_Integer count = (lua_Integer)a->size;
  gpu_Context *c;
  CUdeviceptr ptrs[3];
  int stream_ok;
  const gpu_Stream *stream;
  /* a first compile ran Lua code, whose finalizers may have freed an operand */
  if (!gpu_array_alive(a) || (b != NULL && !gpu_array_alive(b)) ||
      (out != NULL && !gpu_array_alive(out)))
    return 0;
  c = a->buffer->ctx;
  stream = gpu_fast_stream(L, OP_AT_STREAM, c, &stream_ok);
  if (!stream_ok) return 0;
  if (out != NULL) {
    if (!takes_result(out, a, b, result)) return 0;
    lua_pushvalue(L, OP_AT_OUT);
  } else
    out = gpu_array_new_in(L, c, lua_upvalueindex(OP_ARRAY_MT), result, a->ndim, a->shape);
  ptrs[0] = out->ptr;                  /* parameter i is stack index i: the number's own */
  ptrs[number_at == 1 ? 2 : 1] = a->ptr;
  if (b != NULL) ptrs[2] = b->ptr;
  if (number_at != 0) ptrs[number_at] = 0;
  /* compile() and the allocation run Lua code and finalizers, which may free an operand */
  if (gpu_array_alive(a) && (b == NULL || gpu_array_alive(b)) && gpu_array_alive(out) &&
      gpu_launch_values(L, OP_AT_KERNEL, c, stream,
                        (unsigned)(blocks < op->max_grid ? blocks : op->max_grid),
                        (unsigned)op->block, 1,
                        ptrs, 0, b != NULL || number_at != 0 ? 3 : 2, &count, 1))
    return 1;
  lua_settop(L, OP_AT_STREAM);
  return 0;
}

/* Calls the general path with the operands, out (nil for a new array) and the stream, after
** the dispatcher where there is one: views and broadcasts launch from C that way too, without
** the general path's tables of values and options. */
static int call_general (lua_State *L, int noperands) {
  int i;
  lua_settop(L, OP_AT_STREAM);
  if (noperands == 1) lua_remove(L, 2);                /* the unary's empty second operand */
  if (lua_isfunction(L, lua_upvalueindex(OP_DISPATCH))) {
    lua_pushvalue(L, lua_upvalueindex(OP_DISPATCH));   /* dispatch(out, stream, operands...) */
    lua_pushvalue(L, noperands + 1);
    lua_pushvalue(L, noperands + 2);
    for (i = 1; i <= noperands; i++) lua_pushvalue(L, i);
    lua_call(L, noperands + 2, 1);
    if (lua_toboolean(L, -1)) return 1;
    lua_pop(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(OP_GENERAL));
  lua_insert(L, 1);
  lua_call(L, noperands + 2, 1);
  return 1;
}

/* x op y [into out [on stream]]: one launch, for two plain arrays of one shape or a plain
** array and a Lua number, into a new array or a plain out that fits (see takes_result), on
** the default stream or a gpu.Stream not capturing; every other case (and every error) is
** the general path's. */
static int array_binary (lua_State *L) {
  Operator *op = (Operator *)lua_touserdata(L, lua_upvalueindex(OP_OPERATOR));
  const gpu_Array *x = operand(L, op, 1), *y = operand(L, op, 2), *out = NULL;
  gpu_DtypeId result;
  lua_settop(L, OP_AT_STREAM);
  if (!lua_isnil(L, OP_AT_OUT) && (out = operand(L, op, OP_AT_OUT)) == NULL)
    return call_general(L, 2);
  if (plain_pair(x, y)) {
    const int kind = (int)x->dtype * GPU_NDTYPES + (int)y->dtype;
    lua_Integer key = (lua_Integer)x->buffer->ctx->ordinal * GPU_NDTYPES * GPU_NDTYPES + kind;
    if (push_kernel(L, op, key, kind, &result) && launch_operator(L, op, out, x, y, 0, result))
      return 1;
  } else if ((x == NULL) != (y == NULL) && lua_type(L, x == NULL ? 1 : 2) == LUA_TNUMBER &&
             plain(x != NULL ? x : y)) {
    const gpu_Array *a = x != NULL ? x : y;
    const int number_at = x != NULL ? 2 : 1;      /* also the number's parameter: out is 0 */
    const int kind = (int)a->dtype * 4 + 2 * (x == NULL) + !lua_isinteger(L, number_at);
    lua_Integer key = -1 - ((lua_Integer)a->buffer->ctx->ordinal * GPU_NDTYPES * 4 + kind);
    if (push_kernel(L, op, key, GPU_NDTYPES * GPU_NDTYPES + kind, &result) &&
        launch_operator(L, op, out, a, NULL, number_at, result))
      return 1;
  }
  return call_general(L, 2);
}

/* op x [into out [on stream]]: one launch, for a plain array, into a new array or a plain out
** that fits; every other case is the general path's. */
static int array_unary (lua_State *L) {
  Operator *op = (Operator *)lua_touserdata(L, lua_upvalueindex(OP_OPERATOR));
  const gpu_Array *x = operand(L, op, 1), *out = NULL;
  gpu_DtypeId result;
  lua_settop(L, 3);
  lua_pushnil(L);
  lua_insert(L, 2);                 /* 2: compile's second operand, 3: out, 4: the stream */
  if (!lua_isnil(L, OP_AT_OUT) && (out = operand(L, op, OP_AT_OUT)) == NULL)
    return call_general(L, 1);
  if (plain(x)) {
    const int kind = (int)x->dtype;
    lua_Integer key = (lua_Integer)x->buffer->ctx->ordinal * GPU_NDTYPES + kind;
    if (push_kernel(L, op, key, kind, &result) && launch_operator(L, op, out, x, NULL, 0, result))
      return 1;
  }
  return call_general(L, 1);
}

/* A unary metamethod's: Lua passes __unm and __bnot their operand twice, never an out. */
static int array_unary_metamethod (lua_State *L) {
  lua_settop(L, 1);
  return array_unary(L);
}

/*
** The launch geometry the builders below take is checked against what a launch can be, so
** that no product of it (elements a block takes, the grid) overflows or reaches 0 as an
** unsigned: a division by it would stop the process.
*/
#define MAX_BLOCK_THREADS 1024
#define MAX_PER_THREAD 65536
#define MAX_BLOCKS 0x7fffffff

/* Argument arg as an integer from lo to hi. */
static lua_Integer check_count (lua_State *L, int arg, lua_Integer lo, lua_Integer hi,
                                const char *what) {
  lua_Integer v = luaL_checkinteger(L, arg);
  if (v < lo || v > hi)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s must be from %I to %I", what, lo, hi));
  return v;
}

/* The operator closure fn over (compile, general, block, max_grid[, per_thread]) and the
** dispatcher at dispatch_arg (a function or nil). */
static int new_operator (lua_State *L, lua_CFunction fn, int dispatch_arg) {
  lua_Integer block, max_grid, per_thread;
  Operator *op;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  block = check_count(L, 3, 1, MAX_BLOCK_THREADS, "threads per block");
  max_grid = check_count(L, 4, 1, MAX_BLOCKS, "the block count");
  per_thread = lua_isnoneornil(L, 5) ? 1
                                     : check_count(L, 5, 1, MAX_PER_THREAD, "elements per thread");
  if (!lua_isnoneornil(L, dispatch_arg)) luaL_checktype(L, dispatch_arg, LUA_TFUNCTION);
  lua_settop(L, dispatch_arg);
  lua_replace(L, 3);                       /* the dispatcher, or nil */
  lua_settop(L, 3);
  lua_newtable(L);
  op = (Operator *)lua_newuserdatauv(L, sizeof *op, 0);
  op->block = block;
  op->max_grid = max_grid;
  op->per_block = per_thread * block;
  memset(op->result, OP_NO_RESULT, sizeof op->result);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  luaL_getmetatable(L, GPU_ARRAY);
  op->array_mt = lua_topointer(L, -1);
  lua_pushvalue(L, 3);
  lua_pushcclosure(L, fn, 6);
  return 1;
}

/* array_binary_operator(compile, general, block, max_grid[, per_thread[, dispatch]]) ->
** f(x, y[, out[, stream]]) */
static int gpu_array_binary_operator (lua_State *L) { return new_operator(L, array_binary, 6); }

/* array_unary_operator(compile, general, block, max_grid[, per_thread[, metamethod[,
** dispatch]]]) -> f(x[, out[, stream]]), or f(x) for a metamethod */
static int gpu_array_unary_operator (lua_State *L) {
  return new_operator(L, lua_toboolean(L, 6) ? array_unary_metamethod : array_unary, 7);
}

/* ---------------------------------------------------------------- kernel calls */

/*
** The C paths of an ElementwiseKernel's call (elementwise_caller), of a reduction's
** (reduction_caller) and of the Lua layer's launch of a generated elementwise program
** (program_launcher) share their upvalues: 1 the Functions by device ordinal (or false where
** compile gave none), 2 compile() -> the Function for the current device, 3 the general path
** general(k, args...) (a launcher has none: it returns false instead), 4 the GPUArray
** metatable, 5 the arguments' kinds (a string: byte i is argument i's dtype id, plus
** KIND_ARRAY for an array), 6 threads per block, 7 the most blocks; a launcher's and a
** reduction's also 8 the result's dtype id, 9 the elements a thread of the contiguous kernel
** takes; a reduction's also 10 the byte alignment its arrays need; a launcher's also 10 the
** tiled kernels' tile side (0: the program takes no tiles) and 11 their block's rows.  A
** launcher's Functions are keyed by ordinal * (GPU_MAXDIM + 1) + the layout's strided
** dimensions (0 for the contiguous one), a tiled layout's by a negative key (tiled_key), and
** compile gets the layout's name.
*/
enum { K_FUNCTIONS = 1, K_COMPILE, K_GENERAL, K_ARRAY_MT, K_KINDS, K_BLOCK, K_MAX_GRID,
       K_RESULT, K_UNROLL, K_TILE, K_TILE_ROWS };
enum { K_ALIGN = K_TILE };   /* a reduction's: the byte alignment its arrays need */
#define KIND_ARRAY 0x80
#define MAX_KERNEL_ARGS 64

/* Pushes what is cached under key (a Function, or false where compile gave none) and returns
** 1; 0, nothing pushed, where nothing is yet. */
static int push_cached (lua_State *L, lua_Integer key) {
  if (lua_rawgeti(L, lua_upvalueindex(K_FUNCTIONS), key) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  return 0;
}

/* 1 where the value on top is a Function; else 0, having popped it. */
static int pushed_function (lua_State *L) {
  if (lua_type(L, -1) == LUA_TUSERDATA) return 1;
  lua_pop(L, 1);
  return 0;
}

/* Pushes the Function cached under key (compile(layout) on first use: layout NULL for an
** ElementwiseKernel's one); 0, nothing pushed, where compile gave none. */
static int push_function_for (lua_State *L, lua_Integer key, const char *layout) {
  if (!push_cached(L, key)) {
    lua_pushvalue(L, lua_upvalueindex(K_COMPILE));
    if (layout != NULL) lua_pushstring(L, layout);
    lua_call(L, layout != NULL, 1);
    if (!gpu_isfunction(L, -1)) {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, lua_upvalueindex(K_FUNCTIONS), key);
  }
  return pushed_function(L);
}

/* Reads the n arguments from stack index base against the kinds: each array plain (or, with
** any_layout, usable), of its dtype and on the first array's device, its address into
** ptrs[i] and itself into arrays[0 .. *narrays); 0 in ptrs for the others, which
** gpu_launch_values converts or refuses.  Returns 0 where an array does not fit. */
static int plain_arguments (lua_State *L, int base, int n, const unsigned char *kinds,
                            int any_layout, CUdeviceptr *ptrs, const gpu_Array **arrays,
                            int *narrays) {
  int i;
  *narrays = 0;
  for (i = 0; i < n; i++) {
    ptrs[i] = 0;
    if (kinds[i] & KIND_ARRAY) {
      const gpu_Array *a = operand_of(L, base + i, lua_upvalueindex(K_ARRAY_MT));
      if (!(any_layout ? usable(a) : plain(a)) || a->dtype != (gpu_DtypeId)(kinds[i] & ~KIND_ARRAY) ||
          (*narrays > 0 && a->buffer->ctx != arrays[0]->buffer->ctx))
        return 0;
      arrays[(*narrays)++] = a;
      ptrs[i] = a->ptr;
    }
  }
  return 1;
}

/* Whether the arrays among the n arguments from stack index base are all still alive (a
** compile or an allocation runs Lua code, which may free one). */
static int arguments_alive (lua_State *L, int base, int n, const unsigned char *kinds) {
  int i;
  for (i = 0; i < n; i++)
    if ((kinds[i] & KIND_ARRAY) && !gpu_array_alive((const gpu_Array *)lua_touserdata(L, base + i)))
      return 0;
  return 1;
}

static unsigned grid_of (lua_State *L, int64_t count, lua_Integer per_block) {
  lua_Integer max_grid = lua_tointeger(L, lua_upvalueindex(K_MAX_GRID));
  lua_Integer blocks = (count + per_block - 1) / per_block;
  return (unsigned)(blocks < max_grid ? blocks : max_grid);
}

/* The kernel's general path (the upvalue K_GENERAL) called with the kernel object and its
** nargs arguments, from stack index 1, instead of the C path; returns its results. */
static int call_kernel_general (lua_State *L, int nargs) {
  lua_settop(L, nargs + 1);
  lua_pushvalue(L, lua_upvalueindex(K_GENERAL));
  lua_insert(L, 1);
  lua_call(L, nargs + 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* k(args...): one launch over the first array's elements where every array argument is plain
** and of its declared dtype, all on one device, and every other a number its parameter
** takes; everything else (options, views, Buffers, and every error) is the general path's. */
static int elementwise_call (lua_State *L) {
  size_t nkinds;
  const unsigned char *kinds =
      (const unsigned char *)lua_tolstring(L, lua_upvalueindex(K_KINDS), &nkinds);
  const int nargs = lua_gettop(L) - 1;
  CUdeviceptr ptrs[MAX_KERNEL_ARGS];
  const gpu_Array *arrays[MAX_KERNEL_ARGS], *first;
  int narrays;
  if (nargs == (int)nkinds && nargs <= MAX_KERNEL_ARGS &&
      plain_arguments(L, 2, nargs, kinds, 0, ptrs, arrays, &narrays) && narrays > 0 &&
      push_function_for(L, (first = arrays[0])->buffer->ctx->ordinal, NULL)) {
    lua_Integer block = lua_tointeger(L, lua_upvalueindex(K_BLOCK));
    const lua_Integer range[3] = {0, 1, (lua_Integer)first->size};   /* start, step, count */
    if (arguments_alive(L, 2, nargs, kinds) &&
        gpu_launch_values(L, lua_gettop(L), first->buffer->ctx, NULL,
                          grid_of(L, first->size, block), (unsigned)block, 1, ptrs, 2, nargs, range,
                          3))
      return 0;
  }
  return call_kernel_general(L, nargs);
}

/* Whether each of the n arrays starts at a multiple of align bytes. */
static int aligned (const gpu_Array **arrays, int n, lua_Integer align) {
  int i;
  for (i = 0; i < n; i++)
    if (arrays[i]->ptr % (CUdeviceptr)align != 0) return 0;
  return 1;
}

/* k(args...) of a ReductionKernel (or of a built-in reduction: gpu_reduce_vec): where its
** arguments are as elementwise_call takes them, aligned, and the first array has at most one
** block's elements (block * per_thread), one launch of the kernel (args..., n, partials, out,
** count) as a single block, straight into a new 0-d result (one block writes no partials: out
** stands in for them); everything else (options, views, bigger arrays, and every error) is
** the general path's. */
static int reduction_call (lua_State *L) {
  size_t nkinds;
  const unsigned char *kinds =
      (const unsigned char *)lua_tolstring(L, lua_upvalueindex(K_KINDS), &nkinds);
  const int nargs = lua_gettop(L) - 1;
  const lua_Integer block = lua_tointeger(L, lua_upvalueindex(K_BLOCK));
  CUdeviceptr ptrs[MAX_KERNEL_ARGS];
  const gpu_Array *arrays[MAX_KERNEL_ARGS], *first, *out;
  int narrays;
  if (nargs == (int)nkinds && nargs + 4 <= MAX_KERNEL_ARGS &&
      plain_arguments(L, 2, nargs, kinds, 0, ptrs, arrays, &narrays) && narrays > 0 &&
      (first = arrays[0])->size <= block * lua_tointeger(L, lua_upvalueindex(K_UNROLL)) &&
      aligned(arrays, narrays, lua_tointeger(L, lua_upvalueindex(K_ALIGN)))) {
    gpu_Context *ctx = first->buffer->ctx;
    const lua_Integer count = (lua_Integer)first->size;
    lua_pushinteger(L, count);        /* the parameter after the arguments: n */
    if (push_function_for(L, ctx->ordinal, NULL)) {
      const int fidx = lua_gettop(L);
      out = gpu_array_new_in(L, ctx, lua_upvalueindex(K_ARRAY_MT),
                             (gpu_DtypeId)lua_tointeger(L, lua_upvalueindex(K_RESULT)), 0, NULL);
      ptrs[nargs] = 0;                                /* n, read from the stack */
      ptrs[nargs + 1] = ptrs[nargs + 2] = out->ptr;   /* partials and out */
      if (gpu_array_alive(out) && arguments_alive(L, 2, nargs, kinds) &&
          gpu_launch_values(L, fidx, ctx, NULL, 1, (unsigned)block, 1, ptrs, 2, nargs + 3, &count,
                            1))
        return 1;
    }
  }
  return call_kernel_general(L, nargs);
}

static int not_taken (lua_State *L) {
  lua_pushboolean(L, 0);
  return 1;
}

/*
** A launch's layout: the output's shape (ndim dimensions), and for the strided kernel, as
** elementwise.lua's collapse makes them, nd dims (merged where every operand walks them
** contiguously, none of length 1) with the byte strides of the output and of each array
** operand along them (strides[k][d], k = 0 the output's, 0 where broadcast).  Broadcasts of
** more arrays or dimensions than it holds are left to the Lua code.
*/
#define LAYOUT_ARRAYS 8
#define LAYOUT_DIMS 8
typedef struct Layout {
  int ndim, nd, narrays;
  int64_t shape[GPU_MAXDIM], dims[LAYOUT_DIMS];
  int64_t strides[LAYOUT_ARRAYS + 1][LAYOUT_DIMS];
  size_t itemsize[LAYOUT_ARRAYS + 1];
} Layout;

/* The shape the n arrays broadcast to, with out's when given; 0 where they do not, or out's
** shape is not it (the Lua code words the error). */
static int broadcast_shape (Layout *l, const gpu_Array **arrays, int n, const gpu_Array *out) {
  int i, d;
  l->ndim = out != NULL ? out->ndim : 0;
  for (i = 0; i < n; i++) if (arrays[i]->ndim > l->ndim) l->ndim = arrays[i]->ndim;
  if (l->ndim > LAYOUT_DIMS) return 0;
  for (d = 0; d < l->ndim; d++) {
    int64_t size = 1;
    for (i = 0; i <= n; i++) {
      const gpu_Array *a = i < n ? arrays[i] : out;
      int at = a != NULL ? d - (l->ndim - a->ndim) : -1;
      if (at >= 0 && a->shape[at] != 1) {
        if (size != 1 && size != a->shape[at]) return 0;
        size = a->shape[at];
      }
    }
    l->shape[d] = size;
  }
  return out == NULL || same_shape(out, l->ndim, l->shape);
}

/* The strided kernel's dims and strides for the n arrays (any layout) broadcast to the shape,
** the output row-major of itemsize out_size. */
static void strided_layout (Layout *l, const gpu_Array **arrays, int n, size_t out_size) {
  int64_t full[LAYOUT_ARRAYS + 1][LAYOUT_DIMS], step = (int64_t)out_size;
  int k, d;
  l->narrays = n;
  l->itemsize[0] = out_size;
  for (d = l->ndim - 1; d >= 0; d--) {
    full[0][d] = step;
    step *= l->shape[d];
  }
  for (k = 1; k <= n; k++) {
    const gpu_Array *a = arrays[k - 1];
    l->itemsize[k] = gpu_dtypes[a->dtype].itemsize;
    for (d = 0; d < l->ndim; d++) {
      int at = d - (l->ndim - a->ndim);
      full[k][d] = at < 0 || a->shape[at] == 1 ? 0 : a->strides[at];
    }
  }
  l->nd = 0;
  for (d = 0; d < l->ndim; d++) {
    int merge = l->nd > 0;
    if (l->shape[d] == 1) continue;
    for (k = 0; k <= n && merge; k++)
      merge = l->strides[k][l->nd - 1] == full[k][d] * l->shape[d];
    if (merge) l->dims[l->nd - 1] *= l->shape[d];
    else l->dims[l->nd++] = l->shape[d];
    for (k = 0; k <= n; k++) l->strides[k][l->nd - 1] = full[k][d];
  }
  if (l->nd == 0) {
    l->nd = 1;
    l->dims[0] = 1;
    for (k = 0; k <= n; k++) l->strides[k][0] = 0;
  }
}

static int64_t abs64 (int64_t v) { return v < 0 ? -v : v; }

/* The dimension b along which elementwise.lua's tiled_layout would stage arrays in tiles of
** side tile (the output adjacent along its last dimension, some array along b, both at least
** a tile long), with a bit of *staged set for each array adjacent along b; -1 where it would
** take no tiles. */
static int tiled_dimension (const Layout *l, int64_t tile, unsigned *staged) {
  const int last = l->nd - 1;
  int k, d, b = -1;
  *staged = 0;
  if (tile == 0 || l->nd < 2 || l->dims[last] < tile ||
      abs64(l->strides[0][last]) != (int64_t)l->itemsize[0])
    return -1;
  for (k = 1; k <= l->narrays; k++) {
    const int64_t *st = l->strides[k];
    int adjacent = -1;
    if (abs64(st[last]) != (int64_t)l->itemsize[k])
      for (d = 0; d < last; d++)
        if (abs64(st[d]) == (int64_t)l->itemsize[k] && (b < 0 || b == d) && l->dims[d] >= tile)
          adjacent = d;
    if (b < 0) b = adjacent;
    if (adjacent >= 0) *staged |= 1u << (k - 1);
  }
  return b;
}

/* Pushes the Function of the layout (the contiguous "c" for nd 0, else "s<nd>") on c's
** device, compiled on first use; 0, nothing pushed, where compile gave none.  The layout's
** name is written only on a miss: formatting it cost a broadcast a tenth of its host work. */
static int push_layout_function (lua_State *L, const gpu_Context *c, int nd) {
  const lua_Integer key = (lua_Integer)c->ordinal * (GPU_MAXDIM + 1) + nd;
  char layout[16] = "c";
  if (push_cached(L, key)) return pushed_function(L);
  if (nd > 0) snprintf(layout, sizeof layout, "s%d", nd);
  return push_function_for(L, key, layout);
}

/* Pushes the Function of the tiled layout "t<nd>_<b>_<mask>" (mask: a digit an array, 1 for
** those staged), as push_layout_function does. */
static int push_tiled_function (lua_State *L, const gpu_Context *c, const Layout *l, int b,
                                unsigned staged) {
  char layout[16 + LAYOUT_ARRAYS];
  const lua_Integer tiled_key =
      ((((lua_Integer)c->ordinal * LAYOUT_DIMS + b) * (LAYOUT_DIMS + 1) + l->nd) <<
       LAYOUT_ARRAYS) + staged;
  int k, at;
  if (push_cached(L, -1 - tiled_key)) return pushed_function(L);
  at = snprintf(layout, sizeof layout, "t%d_%d_", l->nd, b);
  for (k = 0; k < l->narrays; k++) layout[at++] = (char)('0' + (staged >> k & 1));
  layout[at] = '\0';
  return push_function_for(L, -1 - tiled_key, layout);
}

/* launch(out, stream, values...) -> out, or a new array where out is nil; false, having done
** nothing, unless stream is nil or a gpu.Stream that takes a fast launch (gpu_fast_stream),
** every array value is usable (any layout: views too), of its operand's dtype and on one
** device, their shapes broadcast together, every other value a number its parameter takes,
** and out (when given) plain, of the result's dtype and the broadcast shape, and sharing no
** byte with an operand unless it is that operand's elements.  Without array values out
** gives the shape (fill, arange).  C-contiguous operands of one shape take the contiguous
** kernel, others the tiled kernel where elementwise.lua's tiled_layout would take it, else
** the strided one. */
static int program_launch (lua_State *L) {
  size_t nkinds;
  const unsigned char *kinds =
      (const unsigned char *)lua_tolstring(L, lua_upvalueindex(K_KINDS), &nkinds);
  const int nvalues = lua_gettop(L) - 2;
  const gpu_DtypeId result = (gpu_DtypeId)lua_tointeger(L, lua_upvalueindex(K_RESULT));
  CUdeviceptr ptrs[MAX_KERNEL_ARGS + 1];
  const gpu_Array *arrays[MAX_KERNEL_ARGS], *first, *out = NULL;
  Layout l;
  lua_Integer tail[1 + LAYOUT_DIMS * (LAYOUT_ARRAYS + 2)], per_block, blocks;
  const lua_Integer tile = lua_tointeger(L, lua_upvalueindex(K_TILE));
  unsigned block, block_rows = 1, staged = 0;
  int i, k, d, narrays, strided = 0, fidx, ntail = 0, stream_usable, tiled_along = -1;
  const gpu_Stream *stream;
  gpu_Context *ctx;
  if (nvalues != (int)nkinds || nvalues > MAX_KERNEL_ARGS ||
      !plain_arguments(L, 3, nvalues, kinds, 1, ptrs + 1, arrays, &narrays))
    return not_taken(L);
  first = narrays > 0 ? arrays[0] : NULL;
  if (!lua_isnil(L, 1)) {
    out = operand_of(L, 1, lua_upvalueindex(K_ARRAY_MT));
    if (!plain(out) || out->dtype != result ||
        (first != NULL && out->buffer->ctx != first->buffer->ctx))
      return not_taken(L);
    for (i = 0; i < narrays; i++)
      if (!apart_or_same(arrays[i], out)) return not_taken(L);
  }
  if (first == NULL && (first = out) == NULL) return not_taken(L);
  ctx = first->buffer->ctx;
  stream = gpu_fast_stream(L, 2, ctx, &stream_usable);
  if (!stream_usable) return not_taken(L);
  for (i = 0; i < narrays; i++)
    strided |= !arrays[i]->contiguous || !same_shape(arrays[i], first->ndim, first->shape);
  strided |= out != NULL && !same_shape(out, first->ndim, first->shape);
  l.nd = 0;
  if (strided) {
    if (narrays > LAYOUT_ARRAYS || !broadcast_shape(&l, arrays, narrays, out))
      return not_taken(L);
    strided_layout(&l, arrays, narrays, gpu_dtypes[result].itemsize);
    tiled_along = tiled_dimension(&l, tile, &staged);
  } else {
    l.ndim = first->ndim;
    memcpy(l.shape, first->shape, sizeof(int64_t) * (size_t)first->ndim);
  }
  if (!(tiled_along >= 0 ? push_tiled_function(L, ctx, &l, tiled_along, staged)
                         : push_layout_function(L, ctx, l.nd)))
    return not_taken(L);
  fidx = lua_gettop(L);
  if (out != NULL)
    lua_pushvalue(L, 1);
  else {
    out = gpu_array_new_in(L, ctx, lua_upvalueindex(K_ARRAY_MT), result, l.ndim, l.shape);
  }
  ptrs[0] = out->ptr;
  tail[ntail++] = (lua_Integer)out->size;    /* then the strided kernel's dims and strides */
  for (d = 0; d < l.nd; d++) tail[ntail++] = l.dims[d];
  for (k = 0; l.nd > 0 && k <= narrays; k++)
    for (d = 0; d < l.nd; d++) tail[ntail++] = l.strides[k][d];
  if (tiled_along >= 0) {   /* a block a tile at a time */
    const int64_t along = l.dims[l.nd - 1], across = l.dims[tiled_along];
    blocks = out->size / (along * across) * ((along + tile - 1) / tile) *
             ((across + tile - 1) / tile);
    per_block = 1;
    block = (unsigned)tile;
    block_rows = (unsigned)lua_tointeger(L, lua_upvalueindex(K_TILE_ROWS));
  } else {
    blocks = out->size;
    block = (unsigned)lua_tointeger(L, lua_upvalueindex(K_BLOCK));
    per_block = block * (l.nd == 0 ? lua_tointeger(L, lua_upvalueindex(K_UNROLL)) : 1);
  }
  if (gpu_array_alive(out) && arguments_alive(L, 3, nvalues, kinds) &&
      gpu_launch_values(L, fidx, ctx, stream, grid_of(L, blocks, per_block), block, block_rows,
                        ptrs, 2, nvalues + 1, tail, ntail))
    return 1;
  return not_taken(L);
}

/* The kinds string of a list of {dtype = name, pointer = bool} (argument 1), pushed. */
static void push_kinds (lua_State *L) {
  luaL_Buffer kinds;
  lua_Integer i, n = luaL_len(L, 1);     /* calls of more than MAX_KERNEL_ARGS take the Lua path */
  luaL_buffinit(L, &kinds);
  for (i = 1; i <= n; i++) {
    int dtype, pointer;
    lua_geti(L, 1, i);
    luaL_argcheck(L, lua_istable(L, -1), 1, "a list of {dtype =, pointer =} expected");
    lua_getfield(L, -1, "dtype");
    dtype = lua_type(L, -1) == LUA_TSTRING ? gpu_finddtype(lua_tostring(L, -1)) : -1;
    lua_getfield(L, -2, "pointer");
    pointer = lua_toboolean(L, -1);
    lua_pop(L, 3);
    luaL_argcheck(L, dtype >= 0, 1, "unknown dtype in the arguments");
    luaL_addchar(&kinds, (char)(dtype | (pointer ? KIND_ARRAY : 0)));
  }
  luaL_pushresult(&kinds);
}

/* Pushes the closure fn over the shared upvalues, from (arguments, compile, general, block,
** max_grid) at 1..5 (general false for none), and n more values on the stack top. */
static void push_kernel_closure (lua_State *L, lua_CFunction fn, int n) {
  int extra = lua_gettop(L) - n + 1, i;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  check_count(L, 4, 1, MAX_BLOCK_THREADS, "threads per block");
  check_count(L, 5, 1, MAX_BLOCKS, "the block count");
  push_kinds(L);
  lua_newtable(L);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  luaL_getmetatable(L, GPU_ARRAY);
  lua_pushvalue(L, -5);                     /* the kinds */
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 5);
  for (i = 0; i < n; i++) lua_pushvalue(L, extra + i);
  lua_pushcclosure(L, fn, 7 + n);
}

/* elementwise_caller(arguments, compile, general, block, max_grid) -> an ElementwiseKernel's
** __call; arguments lists {dtype = name, pointer = bool} */
static int gpu_elementwise_caller (lua_State *L) {
  luaL_checktype(L, 3, LUA_TFUNCTION);
  lua_settop(L, 5);
  push_kernel_closure(L, elementwise_call, 0);
  return 1;
}

/* reduction_caller(arguments, compile, general, block, per_thread, result_dtype[, align]) ->
** a ReductionKernel's __call; arguments lists {dtype = name, pointer = bool}, compile() gives
** its kernel on the current device, a block's threads take per_thread elements each, and the
** arrays must start at multiples of align bytes (1 by default) */
static int gpu_reduction_caller (lua_State *L) {
  int result = gpu_checkdtype(L, 6);
  lua_Integer align = luaL_optinteger(L, 7, 1);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  check_count(L, 5, 1, MAX_PER_THREAD, "elements per thread");
  luaL_argcheck(L, align >= 1, 7, "the alignment must be positive");
  lua_settop(L, 5);
  lua_pushinteger(L, result);               /* K_RESULT */
  lua_pushvalue(L, 5);                      /* K_UNROLL */
  lua_pushinteger(L, align);                /* K_ALIGN */
  lua_pushinteger(L, 1);
  lua_replace(L, 5);                        /* the most blocks: one */
  push_kernel_closure(L, reduction_call, 3);
  return 1;
}

/* program_launcher(operands, compile, result_dtype, block, max_grid, per_thread, tile,
** tile_rows) -> launch(out, stream, values...); operands lists {dtype = name, pointer = bool}
** (pointer: an array), compile(layout) gives the program's Function for a layout on the
** current device; tiled launches take blocks of tile x tile_rows threads (tile 0: none) */
static int gpu_program_launcher (lua_State *L) {
  int result = gpu_checkdtype(L, 3);
  check_count(L, 6, 1, MAX_PER_THREAD, "elements per thread");
  check_count(L, 7, 0, MAX_BLOCK_THREADS, "the tile side");
  check_count(L, 8, 1, MAX_BLOCK_THREADS, "the tile's rows");
  lua_settop(L, 8);
  lua_pushinteger(L, result);               /* 9 */
  lua_pushboolean(L, 0);
  lua_replace(L, 3);                        /* no general path */
  lua_pushvalue(L, 6);                      /* 10 */
  lua_pushvalue(L, 7);                      /* 11 */
  lua_pushvalue(L, 8);                      /* 12 */
  push_kernel_closure(L, program_launch, 4);
  return 1;
}

/* ---------------------------------------------------------------- program dispatch */

/*
** The Lua layer's elementwise operations pick a generated program by the kinds of their
** operands (each array's dtype, or whether a Lua number is an integer or a float, or a
** boolean), through type promotion and tables of programs.  A dispatcher (program_dispatcher)
** keeps each kind signature's program launcher in a table of its own, keyed by one integer,
** and calls it at once: compile(values...) gives the launcher on a signature's first call
** (false where the program depends on more than the kinds, or there is none).
** Upvalues: 1 the launchers by key, 2 compile, 3 the GPUArray metatable.
*/
enum { D_LAUNCHERS = 1, D_COMPILE, D_ARRAY_MT };
#define DISPATCH_KINDS (GPU_NDTYPES + 3)   /* the dtypes, then integer, float, boolean */
#define DISPATCH_VALUES 8

/* dispatch(out, stream, values...) -> the launcher's result for the values (their program's
** launch into out, on stream), or false, having done nothing, where a value is neither a
** usable array nor a number or boolean, or the signature has no launcher. */
static int program_dispatch (lua_State *L) {
  const int nvalues = lua_gettop(L) - 2;
  lua_Integer key = nvalues;
  int i;
  if (nvalues < 1 || nvalues > DISPATCH_VALUES) return not_taken(L);
  for (i = 3; i < 3 + nvalues; i++) {
    const gpu_Array *a = operand_of(L, i, lua_upvalueindex(D_ARRAY_MT));
    int kind;
    if (a != NULL) {
      if (!usable(a)) return not_taken(L);
      kind = (int)a->dtype;
    } else if (lua_type(L, i) == LUA_TNUMBER) {
      kind = lua_isinteger(L, i) ? GPU_NDTYPES : GPU_NDTYPES + 1;
    } else if (lua_type(L, i) == LUA_TBOOLEAN) {
      kind = GPU_NDTYPES + 2;
    } else {
      return not_taken(L);
    }
    key = key * DISPATCH_KINDS + kind;
  }
  if (lua_rawgeti(L, lua_upvalueindex(D_LAUNCHERS), key) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(D_COMPILE));
    for (i = 3; i < 3 + nvalues; i++) lua_pushvalue(L, i);
    lua_call(L, nvalues, 1);
    if (!lua_isfunction(L, -1)) {
      lua_pop(L, 1);
      lua_pushboolean(L, 0);
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, lua_upvalueindex(D_LAUNCHERS), key);
  }
  if (!lua_isfunction(L, -1)) return not_taken(L);
  lua_insert(L, 1);                   /* the launcher checks the values again: compile ran Lua */
  lua_call(L, nvalues + 2, 1);
  return 1;
}

/* program_dispatcher(compile) -> dispatch(out, stream, values...) */
static int gpu_program_dispatcher (lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_newtable(L);
  lua_pushvalue(L, 1);
  luaL_getmetatable(L, GPU_ARRAY);
  lua_pushcclosure(L, program_dispatch, 3);
  return 1;
}

/* fast_paths([on]) -> whether the arrays' C fast paths were on; off, every operation takes
** its general Lua path (to compare the two, or to debug one) */
static int gpu_fast_paths (lua_State *L) {
  return gpu_state_switch(L, &gpu_state(L)->general_only);
}

void gpu_elementwise_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"array_binary_operator", gpu_array_binary_operator},
    {"array_unary_operator", gpu_array_unary_operator},
    {"elementwise_caller", gpu_elementwise_caller}, {"reduction_caller", gpu_reduction_caller},
    {"program_launcher", gpu_program_launcher},
    {"program_dispatcher", gpu_program_dispatcher}, {"fast_paths", gpu_fast_paths},
    {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
}
