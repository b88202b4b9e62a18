/*
** stream.c: gpu.Stream and gpu.Event.
*/
#include <string.h>

#include "gpu.h"

typedef struct gpu_Event {
  CUevent event;
  gpu_Context *ctx;
  int live;
} gpu_Event;

gpu_Stream *gpu_teststream (lua_State *L, int idx) {
  return (gpu_Stream *)luaL_testudata(L, idx, GPU_STREAM);
}

static gpu_Stream *check_stream (lua_State *L, int arg) {
  gpu_Stream *s = (gpu_Stream *)luaL_checkudata(L, arg, GPU_STREAM);
  if (!s->live) gpu_freed_error(L, arg, "stream");
  gpu_context_enter(L, s->ctx);
  return s;
}

CUstream gpu_optstream (lua_State *L, int arg) {
  if (lua_isnoneornil(L, arg)) return NULL;
  return check_stream(L, arg)->stream;
}

/* gpu.Stream([{non_blocking = false, priority = n}]): a lower priority number is served
** first; the driver clamps it into gpu.stream_priority_range(). */
static int gpu_Stream_new (lua_State *L) {
  static const char *const known[] = {"non_blocking", "priority", NULL};
  unsigned flags = CU_STREAM_DEFAULT;
  int has_priority = 0, priority = 0;
  const gpu_Driver *d;
  gpu_Stream *s;
  if (gpu_checkoptions(L, 1, known)) {
    lua_getfield(L, 1, "non_blocking");
    if (lua_toboolean(L, -1)) flags = CU_STREAM_NON_BLOCKING;
    if (lua_getfield(L, 1, "priority") != LUA_TNIL) {
      int isint;
      lua_Integer p = lua_tointegerx(L, -1, &isint);
      if (!isint || p < INT_MIN || p > INT_MAX)
        return luaL_argerror(L, 1, lua_pushfstring(L, "option 'priority' must be an integer, got %s",
                                                   luaL_typename(L, -1)));
      has_priority = 1;
      priority = (int)p;
    }
    lua_pop(L, 2);
  }
  gpu_gc_account(L, gpu_state(L), GPU_STREAM_DEVICE_BYTES);
  s = (gpu_Stream *)lua_newuserdatauv(L, sizeof(gpu_Stream), 2);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, GPU_STREAM);
  s->ctx = gpu_context_push(L);
  lua_setiuservalue(L, -2, 1);
  d = gpu_driver(L);
  if (has_priority)
    gpu_check(L, d->cuStreamCreateWithPriority(&s->stream, flags, priority), "cuStreamCreateWithPriority");
  else
    gpu_check(L, d->cuStreamCreate(&s->stream, flags), "cuStreamCreate");
  s->live = 1;
  return 1;
}

/* s:priority() -> the stream's priority, as the driver clamped it */
static int stream_priority (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  int priority = 0;
  gpu_check(L, gpu_driver(L)->cuStreamGetPriority(s->stream, &priority), "cuStreamGetPriority");
  lua_pushinteger(L, priority);
  return 1;
}

/* stream_priority_range() -> least, greatest: the current device's stream priorities (the
** greatest is the smaller number, as in CUDA) */
static int gpu_stream_priority_range (lua_State *L) {
  int least = 0, greatest = 0;
  gpu_context_push(L);
  gpu_check(L, gpu_driver(L)->cuCtxGetStreamPriorityRange(&least, &greatest),
            "cuCtxGetStreamPriorityRange");
  lua_pushinteger(L, least);
  lua_pushinteger(L, greatest);
  return 2;
}

static int stream_free (lua_State *L) {
  gpu_Stream *s = (gpu_Stream *)luaL_checkudata(L, 1, GPU_STREAM);
  const gpu_Driver *d = gpu_driver_load(NULL, NULL);
  CUcontext prev;
  if (s->capturing) {               /* abandon the capture rather than leak its graph */
    CUgraph graph = NULL;
    if (gpu_context_try_enter(s->ctx, &prev)) {
      if (d->cuStreamEndCapture(s->stream, &graph) == CUDA_SUCCESS && graph != NULL)
        d->cuGraphDestroy(graph);
      gpu_context_restore(s->ctx, prev);
    }
    s->capturing = 0;
    gpu_capture_ended(s->ctx->state);
  }
  if (s->live)
    gpu_release(s->ctx->state, &(gpu_Release){GPU_RELEASE_STREAM, s->ctx, {.stream = s->stream}});
  s->live = 0;
  return 0;
}

static int stream_synchronize (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  gpu_check(L, gpu_driver(L)->cuStreamSynchronize(s->stream), "cuStreamSynchronize");
  return 0;
}

/* true when all work queued so far has finished; the NOT_READY answer is not an error */
static int ready (lua_State *L, CUresult r, const char *call) {
  if (r == CUDA_ERROR_NOT_READY) lua_pushboolean(L, 0);
  else {
    gpu_check(L, r, call);
    lua_pushboolean(L, 1);
  }
  return 1;
}

static int stream_is_done (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  return ready(L, gpu_driver(L)->cuStreamQuery(s->stream), "cuStreamQuery");
}

static gpu_Event *check_event (lua_State *L, int arg) {
  gpu_Event *e = (gpu_Event *)luaL_checkudata(L, arg, GPU_EVENT);
  if (!e->live) gpu_freed_error(L, arg, "event");
  gpu_context_enter(L, e->ctx);
  return e;
}

static int stream_wait_for_event (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  gpu_Event *e = check_event(L, 2);
  gpu_check(L, gpu_driver(L)->cuStreamWaitEvent(s->stream, e->event, 0), "cuStreamWaitEvent");
  return 0;
}

static int stream_handle (lua_State *L) {
  lua_pushinteger(L, (lua_Integer)(uintptr_t)check_stream(L, 1)->stream);
  return 1;
}

/* ---------------------------------------------------------------- graphs */

typedef struct gpu_Graph {
  CUgraph graph;
  CUgraphExec exec;         /* NULL once freed */
  gpu_Context *ctx;
} gpu_Graph;

void gpu_capture_note (lua_State *L, int stream_idx, int obj_idx) {
  gpu_Stream *s = gpu_teststream(L, stream_idx);
  if (s == NULL || !s->capturing) return;
  /* host arrays too: a replayed copy reads or writes their page-locked memory */
  if (!gpu_testbuffer(L, obj_idx) && !gpu_testarray(L, obj_idx) &&
      luaL_testudata(L, obj_idx, GPU_HOSTARRAY) == NULL && gpu_fftplan_state(L, obj_idx) < 0 &&
      gpu_texture_state(L, obj_idx) < 0)
    return;
  obj_idx = lua_absindex(L, obj_idx);
  lua_getiuservalue(L, stream_idx, 2);       /* the set of objects used so far */
  lua_pushvalue(L, obj_idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* s:begin_capture(): work queued on s from now on is recorded into a graph, not run */
static int stream_begin_capture (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  CUresult r;
  if (s->capturing) return luaL_error(L, "stream is already capturing");
  lua_newtable(L);          /* first: once capturing, gpu_capture_note needs it */
  lua_setiuservalue(L, 1, 2);
  gpu_capture_opening(s->ctx->state);
  r = gpu_driver(L)->cuStreamBeginCapture(s->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) {
    gpu_capture_ended(s->ctx->state);
    gpu_cuerror(L, r, "cuStreamBeginCapture");
  }
  s->capturing = 1;
  return 0;
}

/* s:end_capture() -> gpu.Graph of the work queued since begin_capture */
static int stream_end_capture (lua_State *L) {
  gpu_Stream *s = check_stream(L, 1);
  const gpu_Driver *d = gpu_driver(L);
  gpu_Graph *g;
  CUresult r;
  int n = 0;
  if (!s->capturing) return luaL_error(L, "stream is not capturing (call begin_capture first)");
  g = (gpu_Graph *)lua_newuserdatauv(L, sizeof(gpu_Graph), 2);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, GPU_GRAPH);
  g->ctx = s->ctx;
  lua_getiuservalue(L, 1, 1);                /* the Context */
  lua_setiuservalue(L, -2, 1);
  s->capturing = 0;
  r = d->cuStreamEndCapture(s->stream, &g->graph);
  gpu_capture_ended(s->ctx->state);         /* ended either way: what it held back may go */
  if (r != CUDA_SUCCESS) gpu_cuerror(L, r, "cuStreamEndCapture");
  r = d->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r != CUDA_SUCCESS) {
    d->cuGraphDestroy(g->graph);
    g->graph = NULL;
    g->exec = NULL;
    gpu_cuerror(L, r, "cuGraphInstantiate");
  }
  /* the objects the graph uses, as a list it checks before each launch */
  lua_newtable(L);
  lua_getiuservalue(L, 1, 2);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -4, ++n);
  }
  lua_pop(L, 1);
  lua_setiuservalue(L, -2, 2);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 2);
  /* told to the collector once the graph is whole: a collection during the capture would run
  ** finalizers whose work on the legacy stream could invalidate it */
  gpu_gc_account(L, s->ctx->state, GPU_GRAPH_DEVICE_BYTES);
  return 1;
}

static gpu_Graph *check_graph (lua_State *L, int arg) {
  gpu_Graph *g = (gpu_Graph *)luaL_checkudata(L, arg, GPU_GRAPH);
  if (g->exec == NULL) gpu_freed_error(L, arg, "graph");
  gpu_context_enter(L, g->ctx);
  return g;
}

/* graph:launch([stream]) */
static int graph_launch (lua_State *L) {
  gpu_Graph *g = check_graph(L, 1);
  CUstream stream = gpu_optstream(L, 2);
  lua_Integer i, n;
  lua_getiuservalue(L, 1, 2);
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {      /* each object tested by kind until one matches */
    gpu_Buffer *b;
    gpu_Array *a;
    int state;
    lua_rawgeti(L, -1, i);
    if ((b = gpu_testbuffer(L, -1)) != NULL) {
      if (b->ptr == 0 || b->root == NULL || b->root->ptr == 0)
        return luaL_error(L, "graph uses a buffer that has been freed");
    } else if ((a = gpu_testarray(L, -1)) != NULL) {
      if (!gpu_array_alive(a)) return luaL_error(L, "graph uses a GPU array that has been freed");
    } else if ((state = gpu_fftplan_state(L, -1)) >= 0) {
      if (state == 0) return luaL_error(L, "graph uses an FFT plan that has been freed");
    } else if ((state = gpu_texture_state(L, -1)) >= 0) {
      if (state == 0)
        return luaL_error(L, "graph uses a CUDA array, texture or surface object that has been freed");
    } else if (gpu_testhostarray(L, -1) == NULL) {   /* a host array's test fails once freed */
      return luaL_error(L, "graph uses a host array that has been freed");
    }
    lua_pop(L, 1);
  }
  gpu_context_enter(L, g->ctx);
  gpu_check(L, gpu_driver(L)->cuGraphLaunch(g->exec, stream), "cuGraphLaunch");
  return 0;
}

static int graph_free (lua_State *L) {
  gpu_Graph *g = (gpu_Graph *)luaL_checkudata(L, 1, GPU_GRAPH);
  if (g->exec != NULL)
    gpu_release(g->ctx->state, &(gpu_Release){GPU_RELEASE_GRAPH, g->ctx,
                                              {.graph = {g->exec, g->graph}}});
  g->exec = NULL;
  g->graph = NULL;
  return 0;
}

static int graph_tostring (lua_State *L) {
  gpu_Graph *g = (gpu_Graph *)luaL_checkudata(L, 1, GPU_GRAPH);
  if (g->exec) lua_pushfstring(L, "gpu.Graph(%p)", (void *)g->exec);
  else lua_pushliteral(L, "gpu.Graph(freed)");
  return 1;
}

static int stream_tostring (lua_State *L) {
  gpu_Stream *s = (gpu_Stream *)luaL_checkudata(L, 1, GPU_STREAM);
  if (s->live) lua_pushfstring(L, "gpu.Stream(%p)", (void *)s->stream);
  else lua_pushliteral(L, "gpu.Stream(freed)");
  return 1;
}

/* ---------------------------------------------------------------- events */

static int gpu_Event_new (lua_State *L) {
  static const char *const known[] = {"timing", "blocking", NULL};
  unsigned flags = CU_EVENT_DEFAULT;
  gpu_Event *e;
  if (gpu_checkoptions(L, 1, known)) {
    if (lua_getfield(L, 1, "timing") != LUA_TNIL && !lua_toboolean(L, -1))
      flags |= CU_EVENT_DISABLE_TIMING;
    if (lua_getfield(L, 1, "blocking") != LUA_TNIL && lua_toboolean(L, -1))
      flags |= CU_EVENT_BLOCKING_SYNC;
    lua_pop(L, 2);
  }
  e = (gpu_Event *)lua_newuserdatauv(L, sizeof(gpu_Event), 1);
  memset(e, 0, sizeof *e);
  luaL_setmetatable(L, GPU_EVENT);
  e->ctx = gpu_context_push(L);
  lua_setiuservalue(L, -2, 1);
  gpu_check(L, gpu_driver(L)->cuEventCreate(&e->event, flags), "cuEventCreate");
  e->live = 1;
  return 1;
}

static int event_free (lua_State *L) {
  gpu_Event *e = (gpu_Event *)luaL_checkudata(L, 1, GPU_EVENT);
  if (e->live)
    gpu_release(e->ctx->state, &(gpu_Release){GPU_RELEASE_EVENT, e->ctx, {.event = e->event}});
  e->live = 0;
  return 0;
}

static int event_record (lua_State *L) {
  gpu_Event *e = check_event(L, 1);
  CUstream s = gpu_optstream(L, 2);
  gpu_check(L, gpu_driver(L)->cuEventRecord(e->event, s), "cuEventRecord");
  lua_settop(L, 1);
  return 1;
}

static int event_synchronize (lua_State *L) {
  gpu_Event *e = check_event(L, 1);
  gpu_check(L, gpu_driver(L)->cuEventSynchronize(e->event), "cuEventSynchronize");
  lua_settop(L, 1);
  return 1;
}

static int event_query (lua_State *L) {
  gpu_Event *e = check_event(L, 1);
  return ready(L, gpu_driver(L)->cuEventQuery(e->event), "cuEventQuery");
}

static int elapsed (lua_State *L, int start, int end) {
  gpu_Event *a = check_event(L, start), *b = check_event(L, end);
  float ms;
  gpu_check(L, gpu_driver(L)->cuEventElapsedTime(&ms, a->event, b->event),
            "cuEventElapsedTime");
  lua_pushnumber(L, ms);
  return 1;
}

/* end:time_since(start) and start:time_till(end), in milliseconds */
static int event_time_since (lua_State *L) { return elapsed(L, 2, 1); }
static int event_time_till (lua_State *L) { return elapsed(L, 1, 2); }

static int event_tostring (lua_State *L) {
  gpu_Event *e = (gpu_Event *)luaL_checkudata(L, 1, GPU_EVENT);
  if (e->live) lua_pushfstring(L, "gpu.Event(%p)", (void *)e->event);
  else lua_pushliteral(L, "gpu.Event(freed)");
  return 1;
}

void gpu_stream_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"Stream", gpu_Stream_new}, {"Event", gpu_Event_new},
    {"stream_priority_range", gpu_stream_priority_range}, {NULL, NULL},
  };
  static const luaL_Reg stream_meta[] = {
    {"__gc", stream_free}, {"__close", stream_free}, {"__tostring", stream_tostring},
    {NULL, NULL},
  };
  static const luaL_Reg stream_methods[] = {
    {"free", stream_free}, {"close", stream_free}, {"synchronize", stream_synchronize},
    {"is_done", stream_is_done}, {"wait_for_event", stream_wait_for_event},
    {"handle", stream_handle}, {"begin_capture", stream_begin_capture},
    {"end_capture", stream_end_capture}, {"priority", stream_priority}, {NULL, NULL},
  };
  static const luaL_Reg graph_meta[] = {
    {"__gc", graph_free}, {"__close", graph_free}, {"__tostring", graph_tostring},
    {NULL, NULL},
  };
  static const luaL_Reg graph_methods[] = {
    {"free", graph_free}, {"close", graph_free}, {"launch", graph_launch}, {NULL, NULL},
  };
  static const luaL_Reg event_meta[] = {
    {"__gc", event_free}, {"__close", event_free}, {"__tostring", event_tostring},
    {NULL, NULL},
  };
  static const luaL_Reg event_methods[] = {
    {"free", event_free}, {"close", event_free}, {"record", event_record},
    {"synchronize", event_synchronize}, {"query", event_query},
    {"time_since", event_time_since}, {"time_till", event_time_till}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
  gpu_newtype(L, GPU_STREAM, stream_meta, stream_methods);
  gpu_newtype(L, GPU_EVENT, event_meta, event_methods);
  gpu_newtype(L, GPU_GRAPH, graph_meta, graph_methods);
}
