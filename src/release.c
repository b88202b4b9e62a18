/*
** release.c: handing driver objects back, now or once the state's captures end.
**
** A stream capture records what is queued on its stream; on the capturing thread the driver
** refuses, and invalidates the capture for, any call that would synchronize or that joins the
** legacy stream.  Every free does one or the other, and finalizers run whenever the collector
** does, in the middle of a captured function as anywhere else.  So releases go through
** gpu_release: while the state captures, they wait in a list of the state's (plain malloc
** memory: finalizers cannot allocate Lua objects safely) and run when the last capture ends.
*/
#include <stdatomic.h>
#include <stdlib.h>

#include "gpu.h"

/*
** Captures open in the whole process, every state's.  While one is, synchronizing the context
** from any thread is invalid: the driver refuses it or, as the 580 driver did on the H100,
** crashes in cuCtxSynchronize.  A property of the process, not of a state: hence a global.
*/
static atomic_int open_captures;

static void release_now (const gpu_Release *r) {
  const gpu_Driver *d = gpu_driver_load(NULL, NULL);
  CUcontext prev;
  if (r->kind == GPU_RELEASE_CALLBACK) {
    r->h.callback.fn(r->h.callback.data);
    return;
  }
  if (d == NULL || !gpu_context_try_enter(r->ctx, &prev)) return;   /* the context is gone */
  switch (r->kind) {
    case GPU_RELEASE_POOLED: d->cuMemFreeAsync(r->h.device, NULL); break;
    case GPU_RELEASE_DEVICE: d->cuMemFree(r->h.device); break;
    case GPU_RELEASE_HOST: d->cuMemFreeHost(r->h.host); break;
    case GPU_RELEASE_MODULE: d->cuModuleUnload(r->h.module); break;
    case GPU_RELEASE_STREAM: d->cuStreamDestroy(r->h.stream); break;
    case GPU_RELEASE_EVENT: d->cuEventDestroy(r->h.event); break;
    case GPU_RELEASE_GRAPH:
      d->cuGraphExecDestroy(r->h.graph.exec);
      d->cuGraphDestroy(r->h.graph.graph);
      break;
    case GPU_RELEASE_CALLBACK: break;
  }
  gpu_context_restore(r->ctx, prev);
}

/* Appends r to s's held list; 0 when out of memory. */
static int hold (gpu_State *s, const gpu_Release *r) {
  if (s->nheld == s->held_capacity) {
    size_t capacity = s->held_capacity ? 2 * s->held_capacity : 16;
    gpu_Release *held = (gpu_Release *)realloc(s->held, capacity * sizeof *held);
    if (held == NULL) return 0;
    s->held = held;
    s->held_capacity = capacity;
  }
  s->held[s->nheld++] = *r;
  return 1;
}

void gpu_release (gpu_State *s, const gpu_Release *r) {
  /* with no memory to remember it, release now: the capture fails, nothing leaks */
  if (s == NULL || s->captures == 0 || !hold(s, r)) release_now(r);
}

void gpu_capture_begun (gpu_State *s) {
  s->captures++;
  atomic_fetch_add(&open_captures, 1);
}

void gpu_capture_ended (gpu_State *s) {
  if (s->captures == 0) return;
  atomic_fetch_sub(&open_captures, 1);
  if (--s->captures == 0) gpu_release_held(s);
}

int gpu_capture_open (void) {
  return atomic_load(&open_captures) > 0;
}

void gpu_release_held (gpu_State *s) {
  size_t i;
  for (i = 0; i < s->nheld; i++) release_now(&s->held[i]);   /* no capture: nothing is added */
  free(s->held);
  s->held = NULL;
  s->nheld = s->held_capacity = 0;
}

void gpu_check_no_capture (lua_State *L) {
  if (gpu_capture_open())
    luaL_error(L, "cannot synchronize the device while a stream capture is open (in any "
               "thread): end the capture first, or synchronize a stream");
}
