/*
** cache.c: the file side of the compile cache (the policy is Lua's, in lua/gpu/init.lua).
**
** An entry is one file:  "LUAGPU-CACHE-1\n", key length, image length, checksum (three
** little-endian uint64), the key, the image.  The key is everything the image depends on
** (source, options, arch, NVRTC and module versions) and is compared byte for byte on load,
** so a hash collision or an entry from another version can never be loaded; the checksum
** (FNV-1a over key and image) rejects torn or corrupted files.  Entries are written to a
** unique temporary file and renamed into place, so readers see a whole entry or none.
** Every I/O failure means "no cache": nothing here raises for the file system's sake.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu.h"

static const char magic[] = "LUAGPU-CACHE-1\n";
#define MAGIC_LEN (sizeof magic - 1)
#define HEADER_LEN (MAGIC_LEN + 24)
/* Larger files are not entries (cubins are megabytes): never allocate for them. */
#define MAX_ENTRY_BYTES ((uint64_t)1 << 30)

static uint64_t fnv1a (uint64_t h, const unsigned char *p, size_t n) {
  while (n--) {
    h ^= *p++;
    h *= 0x100000001b3ULL;
  }
  return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static void put64 (unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64 (const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* cache_hash(s) -> 16 hex digits (FNV-1a 64; file names only, never trusted for identity) */
static int gpu_cache_hash (lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv1a(FNV_BASIS, (const unsigned char *)s, n));
  lua_pushstring(L, hex);
  return 1;
}

static int read_all (int fd, unsigned char *buf, size_t n) {
  while (n > 0) {
    ssize_t got = read(fd, buf, n);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return 0;
    }
    buf += got;
    n -= (size_t)got;
  }
  return 1;
}

static int write_all (int fd, const unsigned char *buf, size_t n) {
  while (n > 0) {
    ssize_t put = write(fd, buf, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    buf += put;
    n -= (size_t)put;
  }
  return 1;
}

/* cache_load(path, key) -> image, or nil when absent, foreign, torn or corrupt */
static int miss (lua_State *L, int fd) {
  if (fd >= 0) close(fd);
  lua_pushnil(L);
  return 1;
}

static int gpu_cache_load (lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t keylen;
  const char *key = luaL_checklstring(L, 2, &keylen);
  unsigned char header[HEADER_LEN], *body;
  uint64_t klen, ilen, sum;
  struct stat st, opened;
  int fd, ok;
  /* the body's memory first: a memory error raised with the file open would leak it */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < HEADER_LEN + keylen ||
      (uint64_t)st.st_size > MAX_ENTRY_BYTES)
    return miss(L, -1);
  body = (unsigned char *)lua_newuserdatauv(L, (size_t)st.st_size - HEADER_LEN, 0);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino ||
      opened.st_dev != st.st_dev || opened.st_size != st.st_size ||
      !read_all(fd, header, HEADER_LEN) || memcmp(header, magic, MAGIC_LEN) != 0)
    return miss(L, fd);
  klen = get64(header + MAGIC_LEN);
  ilen = get64(header + MAGIC_LEN + 8);
  sum = get64(header + MAGIC_LEN + 16);
  if (klen != keylen || (uint64_t)st.st_size != HEADER_LEN + klen + ilen) return miss(L, fd);
  ok = read_all(fd, body, (size_t)(klen + ilen));
  close(fd);
  if (!ok || memcmp(body, key, keylen) != 0 ||
      fnv1a(FNV_BASIS, body, (size_t)(klen + ilen)) != sum)
    return miss(L, -1);
  lua_pushlstring(L, (const char *)body + klen, (size_t)ilen);
  return 1;
}

/* Creates dir and its parents (like mkdir -p); 1 if it exists afterwards. */
static int make_dirs (char *dir) {
  char *p;
  struct stat st;
  if (*dir == '\0') return 0;          /* dir + 1 would be past the end */
  for (p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { *p = '/'; return 0; }
    *p = '/';
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 0;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* cache_store(dir, name, key, image) -> true, or false when it could not be written */
static int gpu_cache_store (lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  const char *name = luaL_checkstring(L, 2);
  size_t keylen, imagelen;
  const char *key = luaL_checklstring(L, 3, &keylen);
  const char *image = luaL_checklstring(L, 4, &imagelen);
  unsigned char header[HEADER_LEN];
  char *dircopy;
  const char *tmp, *final;
  uint64_t sum;
  int fd, ok;
  static unsigned counter;   /* unique temp names within a process; the pid does across them */
  dircopy = (char *)lua_newuserdatauv(L, strlen(dir) + 1, 0);
  strcpy(dircopy, dir);
  if (!make_dirs(dircopy)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  tmp = lua_pushfstring(L, "%s/.%s.%d.%d.tmp", dir, name, (int)getpid(),
                        (int)__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  final = lua_pushfstring(L, "%s/%s", dir, name);
  sum = fnv1a(fnv1a(FNV_BASIS, (const unsigned char *)key, keylen),
              (const unsigned char *)image, imagelen);
  memcpy(header, magic, MAGIC_LEN);
  put64(header + MAGIC_LEN, keylen);
  put64(header + MAGIC_LEN + 8, imagelen);
  put64(header + MAGIC_LEN + 16, sum);
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  ok = write_all(fd, header, HEADER_LEN) && write_all(fd, (const unsigned char *)key, keylen) &&
       write_all(fd, (const unsigned char *)image, imagelen);
  ok = close(fd) == 0 && ok;
  ok = ok && rename(tmp, final) == 0;
  if (!ok) unlink(tmp);
  lua_pushboolean(L, ok);
  return 1;
}

void gpu_cache_open (lua_State *L) {
  static const luaL_Reg functions[] = {
    {"cache_hash", gpu_cache_hash}, {"cache_load", gpu_cache_load},
    {"cache_store", gpu_cache_store}, {NULL, NULL},
  };
  luaL_setfuncs(L, functions, 0);
}
