/*
** tests/threads.c: many OS threads, each with its own lua_State, using the module at once.
**
**   threads [-n THREADS] [-t SECONDS] [-w WORKER]      the stress run (make threads)
**   threads --at-exit before|after SCRIPT             close a state from an atexit handler
**
** Each thread opens a fresh state (luaL_newstate + openlibs), sets WORKER_ID, SECONDS and
** GPU_MODE, and runs the worker script (tests/threads_worker.lua), which allocates, compiles
** (shared and per-thread sources, through the compile caches), launches, copies and checks
** results against the CPU until its time is up, then returns a summary.  The main thread
** keeps a state of its own (so the primary context stays alive and free memory is comparable),
** records the device's free memory before, and checks it is back after every worker closed its
** state.  Without a GPU the workers only compile (NVRTC and the disk cache are still shared),
** and the run says so.  Exit status: 0 when every worker succeeded and no memory was lost.
**
** --at-exit closes a state holding live buffers, modules, streams and events from an atexit
** handler registered before (the handler runs after the driver's own exit-time teardown) or
** after the script ran (it runs first): neither may crash or report an error.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

typedef struct Worker {
  pthread_t thread;
  int id;
  int seconds;
  int gpu;
  const char *script;
  int ok;
  char summary[512];
} Worker;

static void *run_worker (void *arg) {
  Worker *w = (Worker *)arg;
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    snprintf(w->summary, sizeof w->summary, "cannot create a state");
    return NULL;
  }
  luaL_openlibs(L);
  lua_pushinteger(L, w->id);
  lua_setglobal(L, "WORKER_ID");
  lua_pushinteger(L, w->seconds);
  lua_setglobal(L, "SECONDS");
  lua_pushboolean(L, w->gpu);
  lua_setglobal(L, "GPU_MODE");
  if (luaL_dofile(L, w->script) != LUA_OK) {
    snprintf(w->summary, sizeof w->summary, "%s", luaL_tolstring(L, -1, NULL));
  } else {
    snprintf(w->summary, sizeof w->summary, "%s", luaL_tolstring(L, -1, NULL));
    w->ok = 1;
  }
  lua_close(L);               /* every object's finalizer runs here, on this thread */
  return NULL;
}

/* Runs code in L; on error prints it and returns 0. */
static int run (lua_State *L, const char *code, int nresults) {
  if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, nresults, 0) != LUA_OK) {
    fprintf(stderr, "threads: %s\n", luaL_tolstring(L, -1, NULL));
    return 0;
  }
  return 1;
}

/* Device bytes free after the pool gave back what it caches, and the driver the stack that
** deep kernels made it grow (the first call notes the stack limit, later ones restore it). */
static long long free_memory (lua_State *L) {
  long long bytes = -1;
  if (run(L, "local gpu = require 'gpu'; collectgarbage(); collectgarbage();"
             "THREADS_STACK = THREADS_STACK or gpu.get_limit('STACK_SIZE');"
             "gpu.set_limit('STACK_SIZE', THREADS_STACK);"
             "gpu.free_pool(); return (gpu.mem_get_info())", 1)) {
    bytes = (long long)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  return bytes;
}

static lua_State *exit_state;
static void close_at_exit (void) {
  lua_close(exit_state);      /* finalizers with the driver alive or already shutting down */
  printf("threads: state closed at exit\n");
  fflush(stdout);
}

static int at_exit_mode (const char *when, const char *script) {
  int before = strcmp(when, "before") == 0;
  exit_state = luaL_newstate();
  luaL_openlibs(exit_state);
  if (before) atexit(close_at_exit);          /* runs after handlers registered later */
  if (luaL_dofile(exit_state, script) != LUA_OK) {
    fprintf(stderr, "threads: %s\n", luaL_tolstring(exit_state, -1, NULL));
    return 1;
  }
  if (!before) atexit(close_at_exit);
  return 0;                                   /* exit() runs the handler */
}

int main (int argc, char **argv) {
  int nthreads = 8, seconds = 60, i, failed = 0, gpu = 0;
  const char *script = "tests/threads_worker.lua";
  long long before = -1, after = -1, slack = 128ll << 20;
  const char *slack_env = getenv("THREADS_SLACK_MB");
  Worker *workers;
  lua_State *L;
  if (argc == 4 && strcmp(argv[1], "--at-exit") == 0) return at_exit_mode(argv[2], argv[3]);
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0) nthreads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-t") == 0) seconds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-w") == 0) script = argv[i + 1];
    else break;
  }
  if (i < argc || nthreads < 1 || seconds < 0) {
    fprintf(stderr, "usage: %s [-n THREADS] [-t SECONDS] [-w WORKER] | --at-exit before|after SCRIPT\n", argv[0]);
    return 2;
  }
  if (slack_env != NULL) slack = atoll(slack_env) << 20;
  L = luaL_newstate();
  luaL_openlibs(L);
  if (!run(L, "local gpu = require 'gpu'; local ok, why = gpu.available(); return ok, why", 2))
    return 1;
  gpu = lua_toboolean(L, -2);
  if (!gpu) {
    printf("threads: no GPU (%s): only NVRTC and the compile cache are exercised\n",
           lua_tostring(L, -1));
    if (seconds > 5) seconds = 5;
  } else {
    before = free_memory(L);
    if (before < 0) return 1;
  }
  lua_pop(L, 2);
  printf("threads: %d threads for %d s%s\n", nthreads, seconds, gpu ? " on the GPU" : "");
  fflush(stdout);
  workers = (Worker *)calloc((size_t)nthreads, sizeof *workers);
  for (i = 0; i < nthreads; i++) {
    workers[i].id = i + 1;
    workers[i].seconds = seconds;
    workers[i].gpu = gpu;
    workers[i].script = script;
    if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]) != 0) {
      fprintf(stderr, "threads: cannot start thread %d\n", i + 1);
      return 1;
    }
  }
  for (i = 0; i < nthreads; i++) {
    pthread_join(workers[i].thread, NULL);
    printf("threads: worker %d %s: %s\n", workers[i].id, workers[i].ok ? "ok" : "FAILED",
           workers[i].summary);
    if (!workers[i].ok) failed++;
  }
  if (gpu) {
    after = free_memory(L);
    printf("threads: free device memory %lld MiB before, %lld MiB after (slack %lld MiB)\n",
           before >> 20, after >> 20, slack >> 20);
    if (after < 0 || after < before - slack) {
      printf("threads: FAILED: %lld MiB of device memory not returned\n", (before - after) >> 20);
      failed++;
    }
  }
  lua_close(L);
  free(workers);
  printf("threads: %s\n", failed ? "FAILED" : "OK");
  return failed ? 1 : 0;
}
