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
#include <pthread.h>
#include <stdlib.h>

#include "gpu.h"

/*
** Captures open in the whole process, every state's, and device synchronizations under way.
** Synchronizing the context while a capture is open, from any thread, is invalid: the driver
** refuses it or, as the 580 driver did on the H100, crashes in cuCtxSynchronize.  So a
** synchronization is refused while a capture is open, and a capture waits for the
** synchronizations under way to finish before it begins.  A property of the process, not of
** a state: hence globals, under one lock.
*/
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t synchronized = PTHREAD_COND_INITIALIZER;
static int open_captures, synchronizing;

static void release_now (const gpu_Release *r) {
  const gpu_Driver *d;
  CUcontext prev;
  if (r->kind == GPU_RELEASE_CALLBACK) {
    r->h.callback.fn(r->h.callback.data);
    return;
  }
  if (!gpu_context_try_enter(r->ctx, &prev)) return;   /* the context is gone */
  d = r->ctx->driver;
  switch (r->kind) {
    case GPU_RELEASE_POOLED: d->cuMemFreeAsync(r->h.device, NULL); break;
    case GPU_RELEASE_POOLED_ON_STREAM:
      d->cuMemFreeAsync(r->h.on_stream.device, r->h.on_stream.stream);
      break;
    case GPU_RELEASE_DEVICE: d->cuMemFree(r->h.device); break;
    case GPU_RELEASE_HOST: d->cuMemFreeHost(r->h.host); break;
    case GPU_RELEASE_MODULE: d->cuModuleUnload(r->h.module); break;
    case GPU_RELEASE_STREAM: d->cuStreamDestroy(r->h.stream); break;
    case GPU_RELEASE_EVENT: d->cuEventDestroy(r->h.event); break;
    case GPU_RELEASE_GRAPH:
      d->cuGraphExecDestroy(r->h.graph.exec);
      d->cuGraphDestroy(r->h.graph.graph);
      break;
    case GPU_RELEASE_CUDA_ARRAY: d->cuArrayDestroy(r->h.array); break;
    case GPU_RELEASE_TEXTURE: d->cuTexObjectDestroy((CUtexObject)r->h.object); break;
    case GPU_RELEASE_SURFACE: d->cuSurfObjectDestroy((CUsurfObject)r->h.object); break;
    case GPU_RELEASE_IPC: d->cuIpcCloseMemHandle(r->h.device); break;
    case GPU_RELEASE_CALLBACK: break;                        /* run above */
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

void gpu_capture_opening (gpu_State *s) {
  pthread_mutex_lock(&capture_lock);
  while (synchronizing > 0) pthread_cond_wait(&synchronized, &capture_lock);
  open_captures++;
  pthread_mutex_unlock(&capture_lock);
  s->captures++;
}

void gpu_capture_ended (gpu_State *s) {
  if (s->captures == 0) return;
  pthread_mutex_lock(&capture_lock);
  open_captures--;
  pthread_mutex_unlock(&capture_lock);
  if (--s->captures == 0) gpu_release_held(s);
}

CUresult gpu_outside_captures (const gpu_Driver *d, gpu_DeviceWideCall call, void *arg,
                               int *refused) {
  CUresult r;
  pthread_mutex_lock(&capture_lock);
  *refused = open_captures > 0;
  if (!*refused) synchronizing++;
  pthread_mutex_unlock(&capture_lock);
  if (*refused) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  r = call(d, arg);
  pthread_mutex_lock(&capture_lock);
  if (--synchronizing == 0) pthread_cond_broadcast(&synchronized);
  pthread_mutex_unlock(&capture_lock);
  return r;
}

static CUresult synchronize_context (const gpu_Driver *d, void *unused) {
  (void)unused;
  return d->cuCtxSynchronize();
}

CUresult gpu_synchronize_device (const gpu_Driver *d, int *refused) {
  return gpu_outside_captures(d, synchronize_context, NULL, refused);
}

void gpu_synchronize_checked (lua_State *L, const gpu_Driver *d) {
  int refused;
  CUresult r = gpu_synchronize_device(d, &refused);
  if (refused)
    luaL_error(L, "cannot synchronize the device while a stream capture is open (in any "
               "thread): end the capture first, or synchronize a stream");
  gpu_check(L, r, "cuCtxSynchronize");
}

void gpu_release_held (gpu_State *s) {
  size_t i;
  for (i = 0; i < s->nheld; i++) release_now(&s->held[i]);   /* no capture: nothing is added */
  free(s->held);
  s->held = NULL;
  s->nheld = s->held_capacity = 0;
}
