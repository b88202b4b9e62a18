/*
** lua_gpu.h: the C API of lua-gpu for hosts that embed Lua 5.4 (link build/liblua-gpu.a,
** plus -ldl -lpthread -lm and the host's own Lua).  docs/embedding.md has a worked example.
**
** Threading: one lua_State per OS thread (or a host lock around each state); every object
** remembers its CUDA context and makes it current when it needs it.
**
** Errors: the functions that can fail return a Lua status (LUA_OK, or an error code with the
** error value pushed, like lua_pcall) instead of raising, so they can be called outside a
** protected call.  On failure nothing changes hands: the host still owns what it offered.
** One exception to "pushed": LUA_ERRMEM when the stack has no room for 4 more slots, where
** nothing can be pushed (lua_checkstack before calling avoids it).
*/
#ifndef LUA_GPU_H
#define LUA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "lua.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA and DLPack handles, declared here so this header needs neither cuda.h nor dlpack.h. */
struct CUctx_st;                        /* CUcontext is struct CUctx_st * */
struct CUstream_st;                     /* CUstream is struct CUstream_st * */
struct DLManagedTensorVersioned;        /* DLPack 1.x */

#define LUA_GPU_MAXDIM 32

/*
** Opens the whole module (the C core and its Lua layer, both built into the library: nothing is
** read from the file system) and returns 1 with the module table on the stack, the value of
** require "gpu".  Registers every gpu.* module in package.preload, so later require calls find
** them.  Use it as luaL_requiref(L, "gpu", luaopen_gpu, 1).  Needs the package library.
*/
int luaopen_gpu(lua_State *L);

/*
** The callback that hands host-owned memory back: called exactly once, when Lua is done with
** the object (collected, :free(), <close>, or lua_close), possibly from a finalizer.  It must
** not call into the lua_State.
*/
typedef void (*lua_gpu_Release)(void *userdata);

/*
** Pushes the device memory [ptr, ptr + nbytes), owned by the host, as a gpu.Buffer.  It lives in
** the state's current CUDA context (lua_gpu_use_context).  release (may be NULL) is called with
** userdata once Lua is done with the memory.  Returns LUA_OK, or an error status with the
** message pushed (then release is never called).
*/
int lua_gpu_push_buffer(lua_State *L, uint64_t ptr, size_t nbytes, lua_gpu_Release release,
                        void *userdata);

/*
** Pushes host-owned device memory as a gpu.GPUArray: dtype is a gpu dtype name ("float32"),
** shape has ndim entries, byte_strides ndim strides in bytes (NULL: C-contiguous); ptr is the
** address of the first element.  The array owns the memory as far as Lua is concerned: its
** :free() and its collection call release once.  Status as for lua_gpu_push_buffer.
*/
int lua_gpu_push_array(lua_State *L, uint64_t ptr, const char *dtype, int ndim,
                       const int64_t *shape, const int64_t *byte_strides,
                       lua_gpu_Release release, void *userdata);

/* What lua_gpu_toview reads from a Buffer or GPUArray. */
typedef struct lua_gpu_View {
  uint64_t ptr;            /* device address: the buffer's start, the array's first element */
  size_t nbytes;           /* buffer size; for an array, size * itemsize */
  const char *dtype;       /* static dtype name; NULL for a Buffer */
  size_t itemsize;         /* 1 for a Buffer */
  int ndim;                /* 0 for a Buffer */
  int is_array;
  int is_contiguous;       /* 1 for a Buffer */
  int64_t shape[LUA_GPU_MAXDIM];
  int64_t byte_strides[LUA_GPU_MAXDIM];
  int device;              /* CUDA device ordinal */
  struct CUctx_st *context;
} lua_gpu_View;

/*
** Fills *view from the live gpu.Buffer or gpu.GPUArray at idx and returns 1; returns 0 (and
** leaves *view alone) for anything else, a freed one included.  Never raises.  The memory stays
** valid only while Lua keeps the object alive.
*/
int lua_gpu_toview(lua_State *L, int idx, lua_gpu_View *view);

/*
** Makes ctx (a context the host made current or created) the one the state uses for new work
** on ctx's device, instead of the device's primary context, and that device the current one.
** The host keeps owning ctx and must keep it alive while the state has objects in it.
** Objects made before keep their own context.  Returns a status.
*/
int lua_gpu_use_context(lua_State *L, struct CUctx_st *ctx);

/*
** Makes stream (of the current context; NULL: back to the legacy default stream) the stream
** for launches and copies that name none.  Synchronous copies are queued on it and waited for.
** The host keeps owning the stream.  Returns a status.
*/
int lua_gpu_use_stream(lua_State *L, struct CUstream_st *stream);

/*
** DLPack.  lua_gpu_push_dlpack imports t as a gpu.GPUArray on the same memory (zero copy);
** from then on Lua owns t and calls its deleter exactly once when done.
** lua_gpu_push_dlpack_capsule pushes t unconsumed, as a gpu.DLPack capsule for
** gpu.from_dlpack (the capsule calls the deleter if nobody consumes it); it needs no device.
** Both return a status; on failure the host still owns t.
*/
int lua_gpu_push_dlpack(lua_State *L, struct DLManagedTensorVersioned *t);
int lua_gpu_push_dlpack_capsule(lua_State *L, struct DLManagedTensorVersioned *t);

/*
** Exports the GPUArray at idx (or consumes the gpu.DLPack capsule at idx) and returns the
** tensor, which the caller now owns: call its deleter exactly once when done, before the state
** closes (after that the memory is gone; the deleter stays safe to call).  Returns NULL with an
** error message pushed on failure; on success the stack is unchanged.
*/
struct DLManagedTensorVersioned *lua_gpu_to_dlpack(lua_State *L, int idx);

#ifdef __cplusplus
}
#endif

#endif
