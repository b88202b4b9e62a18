/*
** memory.c: gpu.Buffer (device memory and views into it) and the copies and memsets
** of PyCUDA's driver layer.
**
** A Buffer owns an allocation or is a view (:offset) of one; a view pins its parent with a
** user value and checks that the allocation it looks into (its root) is still alive, so use
** after :free() is an error, never a dangling pointer.  An allocation exported through DLPack
** is the consumer's until its deleter runs: freed meanwhile, it is dead to Lua but released
** only after the last export (dlpack.c).  The Lua collector is told about device bytes (it
** cannot see them) and runs once more before an allocation gives up.
*/
#include <string.h>

#include "gpu.h"

/*
** The collector cannot see device memory, so allocations tell it: once the bytes allocated
** and not freed since the last collection reach gc_threshold, a full collection runs.  Not a
** step: in generational mode (the standalone lua's default) a step is a minor collection, and
** a temporary still referenced during two of them (`2*a` while `3*b` allocates) is old by
** then, so only a major collection frees it; steps let 1 GiB temporaries pile up to 50 GB.
** Like Lua's own pause, the threshold follows what the last collection left and what the
** next one costs: the largest of GPU_GC_MIN_BYTES, the bytes still allocated, and the Lua
** heap.  A loop that frees what it allocates pays its debt back (gpu_buffer_release) and
** never collects.
*/
#define GPU_GC_MIN_BYTES ((size_t)32 << 20)

/* A view is alive while it and the allocation it looks into are. */
static int buffer_alive (const gpu_Buffer *b) {
  return b->ptr != 0 && b->root != NULL && b->root->ptr != 0;
}

gpu_Buffer *gpu_testbuffer (lua_State *L, int idx) {
  return (gpu_Buffer *)luaL_testudata(L, idx, GPU_BUFFER);
}

gpu_Buffer *gpu_checkbuffer (lua_State *L, int arg) {
  gpu_Buffer *b = (gpu_Buffer *)luaL_checkudata(L, arg, GPU_BUFFER);
  if (!buffer_alive(b)) gpu_freed_error(L, arg, "buffer");
  return b;
}

void gpu_gc_collect (lua_State *L, gpu_State *s) {
  size_t heap;
  gpu_dlpack_sweep(L);          /* unpins exports whose consumers are done: collectable now */
  if (lua_gc(L, LUA_GCCOLLECT) < 0) return;      /* refused inside a finalizer: debt stays */
  gpu_dlpack_sweep(L);          /* consumers the collection let go of release their memory */
  heap = (size_t)lua_gc(L, LUA_GCCOUNT) << 10;
  s->gc_debt = 0;
  s->gc_threshold = GPU_GC_MIN_BYTES;
  if (s->gc_threshold < s->gc_bytes) s->gc_threshold = s->gc_bytes;
  if (s->gc_threshold < heap) s->gc_threshold = heap;
}

void gpu_gc_account (lua_State *L, gpu_State *s, size_t nbytes) {
  s->gc_debt += nbytes;
  /* a host that stopped the collector (collectgarbage("stop")) keeps it stopped: only an
  ** allocation that finds the device full collects then */
  if (s->gc_debt >= s->gc_threshold && lua_gc(L, LUA_GCISRUNNING)) gpu_gc_collect(L, s);
}

static CUresult device_alloc (const gpu_Driver *d, CUmemoryPool pool, CUdeviceptr *p, size_t n) {
  if (n == 0) n = 1;            /* a zero-byte buffer still gets an address: alive is ptr != 0 */
  return pool ? d->cuMemAllocFromPoolAsync(p, n, pool, NULL) : d->cuMemAlloc(p, n);
}

CUresult gpu_device_alloc_retrying (lua_State *L, gpu_Context *c, gpu_DeviceAttempt attempt,
                                    void *request) {
  int refused;
  CUresult r;
  gpu_context_enter(L, c);                 /* after the collector: finalizers may switch it */
  r = attempt(c, request);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {     /* garbage may be holding device memory */
    gpu_gc_collect(L, c->state);
    gpu_context_enter(L, c);
    r = attempt(c, request);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && c->pool != NULL &&   /* then the pool's cache */
        gpu_synchronize_device(c->driver, &refused) == CUDA_SUCCESS) {
      c->driver->cuMemPoolTrimTo(c->pool, 0);
      r = attempt(c, request);
    }
  }
  return r;
}

struct buffer_request { CUdeviceptr *ptr; size_t nbytes; int use_pool; };

static CUresult allocate_buffer (gpu_Context *c, void *request) {
  struct buffer_request *q = (struct buffer_request *)request;
  return device_alloc(c->driver, q->use_pool ? c->pool : NULL, q->ptr, q->nbytes);
}

/* nbytes into b from c's pool, or where use_pool is 0 (or c has none) from cuMemAlloc. */
static void acquire (lua_State *L, gpu_Context *c, gpu_Buffer *b, size_t nbytes, int use_pool) {
  CUmemoryPool pool = use_pool ? c->pool : NULL;
  CUresult r;
  b->ctx = c;
  gpu_gc_account(L, c->state, nbytes);
  r = gpu_device_alloc_retrying(L, c, allocate_buffer,
                                &(struct buffer_request){&b->ptr, nbytes, use_pool});
  if (r != CUDA_SUCCESS) b->ptr = 0;
  gpu_check(L, r, pool ? "cuMemAllocFromPoolAsync" : "cuMemAlloc");
  c->state->gc_bytes += nbytes;
  b->size = nbytes;
  b->root = b;
  b->owned = 1;
  b->pooled = pool != NULL;
}

void gpu_buffer_acquire (lua_State *L, gpu_Context *c, gpu_Buffer *b, size_t nbytes) {
  acquire(L, c, b, nbytes, 1);
}

static gpu_Buffer *buffer_alloc (lua_State *L, gpu_Context *c, int ctx_idx, int mt_idx,
                                 size_t nbytes, int use_pool) {
  gpu_Buffer *b;
  ctx_idx = lua_absindex(L, ctx_idx);
  b = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  memset(b, 0, sizeof *b);                 /* closed until the allocation succeeds */
  gpu_setmetatable(L, mt_idx, GPU_BUFFER);
  lua_pushvalue(L, ctx_idx);
  lua_setiuservalue(L, -2, 1);
  acquire(L, c, b, nbytes, use_pool);
  return b;
}

gpu_Buffer *gpu_buffer_alloc (lua_State *L, gpu_Context *c, int ctx_idx, int mt_idx,
                              size_t nbytes) {
  return buffer_alloc(L, c, ctx_idx, mt_idx, nbytes, 1);
}

gpu_Buffer *gpu_buffer_new (lua_State *L, size_t nbytes) {
  gpu_Buffer *b = gpu_buffer_alloc(L, gpu_context_find(L, gpu_state(L)), -1, 0, nbytes);
  lua_remove(L, -2);                       /* the Context, pinned by the Buffer */
  return b;
}

void gpu_buffer_release_on (gpu_Buffer *b, CUstream stream) {
  if (b->face) {            /* an array's a.gpudata: frees the array's memory, as PyCUDA's does */
    gpu_buffer_release_on(b->root, stream);
    b->ptr = 0;
    return;
  }
  if (b->root == b && b->exports > 0) {
    /* DLPack consumers still use the memory, which its producer keeps until their deleters
    ** have run: dead to Lua now, released by gpu_buffer_unexport (on the legacy stream) */
    if (b->ptr != 0) b->kept = b->ptr;
    b->ptr = 0;
    return;
  }
  if (b->owned && b->ptr != 0 && b->ipc) {    /* another process's memory: unmapped */
    gpu_release(b->ctx->state, &(gpu_Release){GPU_RELEASE_IPC, b->ctx, {.device = b->ptr}});
  } else if (b->owned && b->ptr != 0) {
    /* freed before a collection counted them: those bytes need no collecting */
    gpu_State *s = b->ctx->state;
    s->gc_debt -= b->size < s->gc_debt ? b->size : s->gc_debt;
    s->gc_bytes -= b->size;
    if (stream != NULL && b->pooled && s->captures == 0)
      gpu_release(s, &(gpu_Release){GPU_RELEASE_POOLED_ON_STREAM, b->ctx,
                                    {.on_stream = {b->ptr, stream}}});
    else
      gpu_release(s, &(gpu_Release){b->pooled ? GPU_RELEASE_POOLED : GPU_RELEASE_DEVICE, b->ctx,
                                    {.device = b->ptr}});
  }
  b->ptr = 0;
  if (b->root == b && b->release != NULL) {          /* memory the host owns: hand it back */
    gpu_Release r = {GPU_RELEASE_CALLBACK, b->ctx, {.callback = {b->release, b->release_data}}};
    b->release = NULL;                               /* once, whichever way Lua lets go */
    gpu_release(b->ctx != NULL ? b->ctx->state : NULL, &r);
  }
  if (b->root != b) b->root = NULL;                  /* a freed view drops its parent */
}

void gpu_buffer_release (gpu_Buffer *b) {
  gpu_buffer_release_on(b, NULL);
}

void gpu_buffer_unexport (gpu_Buffer *b) {
  if (b->exports > 0 && --b->exports == 0 && b->kept != 0) {
    b->ptr = b->kept;                      /* alive again only for the release below */
    b->kept = 0;
    gpu_buffer_release_on(b, NULL);
  }
}

void gpu_buffer_sweep_exports (lua_State *L, const gpu_Buffer *b) {
  if (b->root != NULL && b->root->exports > 0) gpu_dlpack_sweep(L);
}

static int buffer_free (lua_State *L) {
  gpu_Buffer *b = (gpu_Buffer *)gpu_checkself(L, 1, GPU_BUFFER);
  gpu_buffer_sweep_exports(L, b);
  gpu_buffer_release(b);
  return 0;
}

/*
** free_after(buffer_or_array, stream): frees it now, in the order of the stream (a live,
** uncapturing gpu.Stream of its device; else as :free() does), so that the memory is reused
** only after the work queued there.  For temporaries: a plain free follows the legacy
** stream, which a non-blocking stream's kernels do not wait for.  An array frees all the
** memory it looks into, as freeing its a.gpudata would (without making that Buffer).
*/
static void free_after_stream (lua_State *L, int arg, gpu_Stream *s) {
  gpu_Array *a = gpu_testarray(L, arg);
  gpu_Buffer *b = a != NULL ? a->buffer : gpu_testbuffer(L, arg);
  luaL_argexpected(L, a != NULL || b != NULL, arg, "gpu.Buffer or gpu.GPUArray");
  if (b == NULL) return;                   /* an array freed already */
  if (s != NULL && (!s->live || s->capturing || s->ctx != b->ctx)) s = NULL;
  gpu_buffer_sweep_exports(L, b);
  gpu_buffer_release_on(b, s != NULL ? s->stream : NULL);
}

static gpu_Stream *check_optional_stream (lua_State *L, int arg) {
  gpu_Stream *s = gpu_teststream(L, arg);
  luaL_argexpected(L, s != NULL || lua_isnoneornil(L, arg), arg, "gpu.Stream or nil");
  return s;
}

static int gpu_free_after (lua_State *L) {
  gpu_Stream *s = check_optional_stream(L, 2);
  free_after_stream(L, 1, s);
  return 0;
}

/*
** free_all_after(stream, ...): free_after(x, stream) for each further argument x that is not
** nil or false: the Lua layer's temporaries, some of which a call makes on some paths only.
*/
static int gpu_free_all_after (lua_State *L) {
  gpu_Stream *s = check_optional_stream(L, 1);
  int arg, top = lua_gettop(L);
  for (arg = 2; arg <= top; arg++)
    if (lua_toboolean(L, arg)) free_after_stream(L, arg, s);
  return 0;
}

/*
** mem_alloc(nbytes[, {ipc = true}]); upvalues: the state and the Buffer metatable (no registry
** lookups).  ipc: from cuMemAlloc, not the pool, so that buf:ipc_handle() can share it.
*/
static int gpu_mem_alloc (lua_State *L) {
  static const char *const known[] = {"ipc", NULL};
  lua_Integer n = luaL_checkinteger(L, 1);
  gpu_State *s = (gpu_State *)lua_touserdata(L, lua_upvalueindex(1));
  int ipc = 0;
  luaL_argcheck(L, n >= 0, 1, "size must not be negative");
  if (gpu_checkoptions(L, 2, known)) {
    if (lua_getfield(L, 2, "ipc") != LUA_TNIL) {
      luaL_argcheck(L, lua_isboolean(L, -1), 2, "option 'ipc' must be a boolean");
      ipc = lua_toboolean(L, -1);
    }
    lua_settop(L, 2);
  }
  buffer_alloc(L, gpu_context_find(L, s), -1, lua_upvalueindex(2), (size_t)n, !ipc);
  return 1;
}

/*
** buf:ipc_handle() -> the 64 bytes another process passes to gpu.ipc_open (cuIpcGetMemHandle,
** PyCUDA's mem_get_ipc_handle): for an allocation of mem_alloc(n, {ipc = true}).
*/
static int buffer_ipc_handle (lua_State *L) {
  gpu_Buffer *b = gpu_checkbuffer(L, 1);
  const gpu_Driver *d = b->ctx->driver;
  CUipcMemHandle handle;
  luaL_argcheck(L, b->root == b && !b->face, 1, "a view: share the allocation it looks into");
  luaL_argcheck(L, !b->ipc, 1, "memory another process shared cannot be shared again");
  luaL_argcheck(L, !b->pooled, 1, "the pool's memory cannot be shared: allocate it with "
                                  "gpu.mem_alloc(n, {ipc = true})");
  if (d->cuIpcGetMemHandle == NULL) return luaL_error(L, "this CUDA driver has no IPC");
  gpu_context_enter(L, b->ctx);
  gpu_check(L, d->cuIpcGetMemHandle(&handle, b->ptr), "cuIpcGetMemHandle");
  lua_pushlstring(L, handle.reserved, sizeof handle.reserved);
  return 1;
}

static int hex_digit (int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
** ipc_open(handle) -> a Buffer on the memory another process shared by buf:ipc_handle() (its
** 64 bytes, or those as 128 hex digits): cuIpcOpenMemHandle, peers enabled lazily.  Freeing
** it unmaps the memory (cuIpcCloseMemHandle); the other process still owns it.
*/
static int gpu_ipc_open (lua_State *L) {
  size_t len, i;
  const char *text = luaL_checklstring(L, 1, &len);
  CUipcMemHandle handle;
  CUdeviceptr base, ptr = 0;
  const gpu_Driver *d;
  gpu_Context *c;
  gpu_Buffer *b;
  if (len == sizeof handle.reserved) {
    memcpy(handle.reserved, text, len);
  } else if (len == 2 * sizeof handle.reserved) {
    for (i = 0; i < sizeof handle.reserved; i++) {
      int hi = hex_digit((unsigned char)text[2 * i]), lo = hex_digit((unsigned char)text[2 * i + 1]);
      luaL_argcheck(L, hi >= 0 && lo >= 0, 1, "an IPC handle in hex has only hex digits");
      handle.reserved[i] = (char)(hi * 16 + lo);
    }
  } else {
    return luaL_argerror(L, 1, lua_pushfstring(L, "an IPC handle is 64 bytes (or 128 hex "
                                               "digits), got %I", (lua_Integer)len));
  }
  lua_settop(L, 1);
  c = gpu_context_find(L, gpu_state(L));        /* at 2 */
  d = c->driver;
  b = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);   /* at 3, closed */
  memset(b, 0, sizeof *b);
  gpu_setmetatable(L, 0, GPU_BUFFER);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, 3, 1);
  if (d->cuIpcOpenMemHandle == NULL) return luaL_error(L, "this CUDA driver has no IPC");
  gpu_context_enter(L, c);
  gpu_check(L, d->cuIpcOpenMemHandle(&ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            "cuIpcOpenMemHandle");
  b->ptr = ptr;
  b->ctx = c;
  b->root = b;
  b->owned = 1;
  b->ipc = 1;                                   /* open: the free closes it from here on */
  gpu_check(L, d->cuMemGetAddressRange(&base, &b->size, b->ptr), "cuMemGetAddressRange");
  return 1;
}

static int buffer_len (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gpu_checkbuffer(L, 1)->size);
  return 1;
}

static int buffer_ptr (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)gpu_checkbuffer(L, 1)->ptr);
  return 1;
}

/* buf:offset(nbytes[, size]): a view nbytes into buf, to its end or of size bytes. */
static int buffer_offset (lua_State *L) {
  gpu_Buffer *parent = gpu_checkbuffer(L, 1);
  lua_Integer off = luaL_checkinteger(L, 2);
  lua_Integer size;
  gpu_Buffer *view;
  luaL_argcheck(L, off >= 0 && (size_t)off <= parent->size, 2, "offset out of range");
  size = luaL_optinteger(L, 3, (lua_Integer)(parent->size - (size_t)off));
  luaL_argcheck(L, size >= 0 && (size_t)size <= parent->size - (size_t)off, 3,
                "size out of range");
  view = (gpu_Buffer *)lua_newuserdatauv(L, sizeof(gpu_Buffer), 1);
  *view = *parent;
  view->ptr = parent->ptr + (CUdeviceptr)off;
  view->size = (size_t)size;
  view->owned = 0;
  view->face = 0;                          /* a view of a.gpudata frees only itself */
  view->exports = 0;                       /* counted on the root only */
  view->kept = 0;
  luaL_setmetatable(L, GPU_BUFFER);
  gpu_pin(L, -1, 1, 1);                    /* the view keeps its parent alive */
  return 1;
}

static int buffer_tostring (lua_State *L) {
  gpu_Buffer *b = (gpu_Buffer *)luaL_checkudata(L, 1, GPU_BUFFER);
  if (!buffer_alive(b)) lua_pushliteral(L, "gpu.Buffer(freed)");
  else lua_pushfstring(L, "gpu.Buffer(%p, %I bytes%s)", (void *)(uintptr_t)b->ptr,
                       (lua_Integer)b->size, b->owned || b->face ? "" : ", view");
  return 1;
}

/* ---------------------------------------------------------------- copies */

/*
** Copies that name no stream go to the host's stream when it gave one (lua_gpu_use_stream);
** synchronous ones then wait for it, so they stay ordered with the host's work.
*/
static CUstream copy_stream (CUstream named, const gpu_Context *c) {
  return named != NULL ? named : c->stream;
}

static void wait_host_stream (lua_State *L, int async, CUstream s) {
  if (!async && s != NULL) gpu_check(L, gpu_driver(L)->cuStreamSynchronize(s), "cuStreamSynchronize");
}

static CUstream check_async_host (lua_State *L, int arg, int pinned, int stream_arg) {
  if (!pinned)
    luaL_argerror(L, arg, "async copies need page-locked host memory "
                          "(gpu.host.pagelocked_empty)");
  return gpu_optstream(L, stream_arg);
}

/* memcpy_htod(dst_buf, src_host): copies all of src into the start of dst. */
static int htod (lua_State *L, int async) {
  gpu_Buffer *dst = gpu_checkbuffer(L, 1);
  size_t n;
  int pinned;
  const void *src = gpu_checkhostbytes(L, 2, &n, &pinned);
  CUstream s = async ? check_async_host(L, 2, pinned, 3) : NULL;
  const gpu_Driver *d = gpu_driver(L);
  if (n > dst->size)
    luaL_argerror(L, 2, lua_pushfstring(L, "host data (%I bytes) is larger than the "
                                        "destination buffer (%I bytes)", (lua_Integer)n,
                                        (lua_Integer)dst->size));
  gpu_context_enter(L, dst->ctx);
  if (async) {
    gpu_capture_note(L, 3, 1);
    gpu_capture_note(L, 3, 2);     /* the page-locked source: a replay reads it again */
  }
  s = copy_stream(s, dst->ctx);
  if (async || s) gpu_check(L, d->cuMemcpyHtoDAsync(dst->ptr, src, n, s), "cuMemcpyHtoDAsync");
  else gpu_check(L, d->cuMemcpyHtoD(dst->ptr, src, n), "cuMemcpyHtoD");
  wait_host_stream(L, async, s);
  return 0;
}

/* memcpy_dtoh(dst_host, src_buf): fills all of dst from the start of src. */
static int dtoh (lua_State *L, int async) {
  gpu_HostArray *dst = gpu_checkhostarray(L, 1);
  gpu_Buffer *src = gpu_checkbuffer(L, 2);
  CUstream s = async ? check_async_host(L, 1, dst->pagelocked, 3) : NULL;
  const gpu_Driver *d = gpu_driver(L);
  if (dst->nbytes > src->size)
    luaL_argerror(L, 1, lua_pushfstring(L, "host array (%I bytes) is larger than the source "
                                        "buffer (%I bytes)", (lua_Integer)dst->nbytes,
                                        (lua_Integer)src->size));
  gpu_context_enter(L, src->ctx);
  if (async) {
    gpu_capture_note(L, 3, 2);
    gpu_capture_note(L, 3, 1);
  }
  s = copy_stream(s, src->ctx);
  if (async || s) gpu_check(L, d->cuMemcpyDtoHAsync(dst->data, src->ptr, dst->nbytes, s),
                            "cuMemcpyDtoHAsync");
  else gpu_check(L, d->cuMemcpyDtoH(dst->data, src->ptr, dst->nbytes), "cuMemcpyDtoH");
  wait_host_stream(L, async, s);
  return 0;
}

static int dtod (lua_State *L, int async) {
  gpu_Buffer *dst = gpu_checkbuffer(L, 1);
  gpu_Buffer *src = gpu_checkbuffer(L, 2);
  lua_Integer n = luaL_optinteger(L, 3, (lua_Integer)(src->size < dst->size ? src->size
                                                                            : dst->size));
  CUstream s = async ? gpu_optstream(L, 4) : NULL;
  const gpu_Driver *d = gpu_driver(L);
  luaL_argcheck(L, n >= 0, 3, "size must not be negative");
  if ((size_t)n > src->size || (size_t)n > dst->size)
    luaL_argerror(L, 3, lua_pushfstring(L, "copy size (%I bytes) is larger than the %s "
                                        "(%I bytes)", n, (size_t)n > src->size ? "source"
                                                                               : "destination",
                                        (lua_Integer)((size_t)n > src->size ? src->size
                                                                            : dst->size)));
  gpu_context_enter(L, dst->ctx);
  if (async) {
    gpu_capture_note(L, 4, 1);
    gpu_capture_note(L, 4, 2);
  }
  s = copy_stream(s, dst->ctx);
  if (dst->ctx != src->ctx) {       /* between devices: direct where peers, else staged */
    if (async || s) gpu_check(L, d->cuMemcpyPeerAsync(dst->ptr, dst->ctx->ctx, src->ptr,
                                                      src->ctx->ctx, (size_t)n, s),
                              "cuMemcpyPeerAsync");
    else gpu_check(L, d->cuMemcpyPeer(dst->ptr, dst->ctx->ctx, src->ptr, src->ctx->ctx,
                                      (size_t)n), "cuMemcpyPeer");
  } else if (async || s) {
    gpu_check(L, d->cuMemcpyDtoDAsync(dst->ptr, src->ptr, (size_t)n, s), "cuMemcpyDtoDAsync");
  } else {
    gpu_check(L, d->cuMemcpyDtoD(dst->ptr, src->ptr, (size_t)n), "cuMemcpyDtoD");
  }
  wait_host_stream(L, async, s);
  return 0;
}

static int gpu_memcpy_htod (lua_State *L) { return htod(L, 0); }
static int gpu_memcpy_htod_async (lua_State *L) { return htod(L, 1); }
static int gpu_memcpy_dtoh (lua_State *L) { return dtoh(L, 0); }
static int gpu_memcpy_dtoh_async (lua_State *L) { return dtoh(L, 1); }
static int gpu_memcpy_dtod (lua_State *L) { return dtod(L, 0); }
static int gpu_memcpy_dtod_async (lua_State *L) { return dtod(L, 1); }

/* memset_dN(buf, value, count[, stream]): count elements of N bits, like cuMemsetDN. */
static int memset_n (lua_State *L, int bits, int async) {
  gpu_Buffer *b = gpu_checkbuffer(L, 1);
  lua_Integer value = luaL_checkinteger(L, 2);
  lua_Integer count = luaL_checkinteger(L, 3);
  lua_Integer max = bits == 32 ? (lua_Integer)UINT32_MAX : ((lua_Integer)1 << bits) - 1;
  CUstream s = async ? gpu_optstream(L, 4) : NULL;
  const gpu_Driver *d = gpu_driver(L);
  CUresult r;
  int wait;
  luaL_argcheck(L, value >= -(max / 2 + 1) && value <= max, 2,
                bits == 8 ? "value does not fit 8 bits" :
                bits == 16 ? "value does not fit 16 bits" : "value does not fit 32 bits");
  luaL_argcheck(L, count >= 0, 3, "count must not be negative");
  if ((size_t)count > b->size / (size_t)(bits / 8))
    luaL_argerror(L, 3, lua_pushfstring(L, "%I elements of %d bits do not fit in the buffer "
                                        "(%I bytes)", count, bits, (lua_Integer)b->size));
  gpu_context_enter(L, b->ctx);
  if (async) gpu_capture_note(L, 4, 1);
  s = copy_stream(s, b->ctx);
  wait = !async && s != NULL;       /* on the host's stream, then waited for below */
  async = async || s != NULL;
  switch (bits) {
    case 8: r = async ? d->cuMemsetD8Async(b->ptr, (unsigned char)value, (size_t)count, s)
                      : d->cuMemsetD8(b->ptr, (unsigned char)value, (size_t)count); break;
    case 16: r = async ? d->cuMemsetD16Async(b->ptr, (unsigned short)value, (size_t)count, s)
                       : d->cuMemsetD16(b->ptr, (unsigned short)value, (size_t)count); break;
    default: r = async ? d->cuMemsetD32Async(b->ptr, (unsigned int)value, (size_t)count, s)
                       : d->cuMemsetD32(b->ptr, (unsigned int)value, (size_t)count); break;
  }
  gpu_check(L, r, async ? "cuMemsetAsync" : "cuMemset");
  if (wait) gpu_check(L, d->cuStreamSynchronize(s), "cuStreamSynchronize");
  return 0;
}

static int gpu_memset_d8 (lua_State *L) { return memset_n(L, 8, 0); }
static int gpu_memset_d16 (lua_State *L) { return memset_n(L, 16, 0); }
static int gpu_memset_d32 (lua_State *L) { return memset_n(L, 32, 0); }
static int gpu_memset_d8_async (lua_State *L) { return memset_n(L, 8, 1); }
static int gpu_memset_d16_async (lua_State *L) { return memset_n(L, 16, 1); }
static int gpu_memset_d32_async (lua_State *L) { return memset_n(L, 32, 1); }

/* to_device(host) -> Buffer holding a copy of host (HostArray or string). */
static int gpu_to_device (lua_State *L) {
  size_t n;
  const void *src;
  gpu_Buffer *b;
  CUstream s;
  gpu_checkhostbytes(L, 1, &n, NULL);
  b = gpu_buffer_new(L, n);
  src = gpu_checkhostbytes(L, 1, &n, NULL);   /* again: the allocation ran finalizers */
  s = b->ctx->stream;
  if (s) gpu_check(L, gpu_driver(L)->cuMemcpyHtoDAsync(b->ptr, src, n, s), "cuMemcpyHtoDAsync");
  else gpu_check(L, gpu_driver(L)->cuMemcpyHtoD(b->ptr, src, n), "cuMemcpyHtoD");
  wait_host_stream(L, 0, s);
  return 1;
}

/* from_device(buf, shape, dtype) -> HostArray copied from the start of buf. */
static int gpu_from_device (lua_State *L) {
  gpu_Buffer *b = gpu_checkbuffer(L, 1);
  int64_t shape[GPU_MAXDIM], size;
  int ndim = gpu_checkshape(L, 2, shape, &size);
  gpu_DtypeId dtype = gpu_checkdtype(L, 3);
  gpu_HostArray *h;
  if ((uint64_t)size > b->size / gpu_dtypes[dtype].itemsize)
    luaL_argerror(L, 2, lua_pushfstring(L, "%I elements of %s are more than the buffer holds "
                                        "(%I bytes)", (lua_Integer)size, gpu_dtypes[dtype].name,
                                        (lua_Integer)b->size));
  h = gpu_hostarray_new(L, dtype, ndim, shape, GPU_HOST_PAGEABLE);
  b = gpu_checkbuffer(L, 1);               /* again: the allocation ran finalizers */
  gpu_copy_to_host(L, b->ctx, h->data, b->ptr, h->nbytes);
  return 1;
}

void gpu_copy_to_host (lua_State *L, gpu_Context *c, void *dst, CUdeviceptr src, size_t n) {
  gpu_context_enter(L, c);
  if (c->stream)
    gpu_check(L, c->driver->cuMemcpyDtoHAsync(dst, src, n, c->stream), "cuMemcpyDtoHAsync");
  else gpu_check(L, c->driver->cuMemcpyDtoH(dst, src, n), "cuMemcpyDtoH");
  wait_host_stream(L, 0, c->stream);
}

void gpu_memory_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"memcpy_htod", gpu_memcpy_htod}, {"memcpy_htod_async", gpu_memcpy_htod_async},
    {"memcpy_dtoh", gpu_memcpy_dtoh}, {"memcpy_dtoh_async", gpu_memcpy_dtoh_async},
    {"memcpy_dtod", gpu_memcpy_dtod}, {"memcpy_dtod_async", gpu_memcpy_dtod_async},
    {"memcpy_peer", gpu_memcpy_dtod}, {"memcpy_peer_async", gpu_memcpy_dtod_async},
    {"memset_d8", gpu_memset_d8}, {"memset_d16", gpu_memset_d16},
    {"memset_d32", gpu_memset_d32}, {"memset_d8_async", gpu_memset_d8_async},
    {"memset_d16_async", gpu_memset_d16_async}, {"memset_d32_async", gpu_memset_d32_async},
    {"to_device", gpu_to_device}, {"from_device", gpu_from_device},
    {"free_after", gpu_free_after}, {"free_all_after", gpu_free_all_after},
    {"ipc_open", gpu_ipc_open}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__gc", buffer_free}, {"__close", buffer_free}, {"__len", buffer_len},
    {"__tostring", buffer_tostring}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"free", buffer_free}, {"ptr", buffer_ptr}, {"offset", buffer_offset},
    {"ipc_handle", buffer_ipc_handle}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_BUFFER, meta, methods);
  gpu_push_state(L)->gc_threshold = GPU_GC_MIN_BYTES;
  lua_insert(L, -2);                       /* mem_alloc's upvalues: the state, the metatable */
  lua_pushcclosure(L, gpu_mem_alloc, 2);
  lua_setfield(L, -2, "mem_alloc");
}
