/*
** dtype.c: the element types, and conversions between Lua values and their bytes.
**
** Lua has one integer type (int64) and one float type (double), so conversions check
** ranges instead of wrapping: 2^40 does not fit an int32 and says so.  uint64 is the
** exception: Lua integers carry its 64 bits unchanged (values >= 2^63 read back negative,
** as with Lua's own unsigned operations math.ult and %u), so a round trip never fails.
*/
#include <math.h>
#include <string.h>

#include "gpu.h"

const gpu_Dtype gpu_dtypes[GPU_NDTYPES] = {
  [GPU_BOOL]     = {"bool", "bool", 1, 'b', '?'},
  [GPU_INT8]     = {"int8", "signed char", 1, 'i', 'b'},
  [GPU_UINT8]    = {"uint8", "unsigned char", 1, 'u', 'B'},
  [GPU_INT16]    = {"int16", "short", 2, 'i', 'h'},
  [GPU_UINT16]   = {"uint16", "unsigned short", 2, 'u', 'H'},
  [GPU_INT32]    = {"int32", "int", 4, 'i', 'i'},
  [GPU_UINT32]   = {"uint32", "unsigned int", 4, 'u', 'I'},
  [GPU_INT64]    = {"int64", "long long", 8, 'i', 'q'},
  [GPU_UINT64]   = {"uint64", "unsigned long long", 8, 'u', 'Q'},
  [GPU_FLOAT16]  = {"float16", "__half", 2, 'f', 'e'},
  [GPU_BFLOAT16] = {"bfloat16", "__nv_bfloat16", 2, 'f', 0},
  [GPU_FLOAT32]  = {"float32", "float", 4, 'f', 'f'},
  [GPU_FLOAT64]  = {"float64", "double", 8, 'f', 'd'},
  /* laid out as CUDA's cuFloatComplex and cuDoubleComplex (float2, double2): real part first */
  [GPU_COMPLEX64]  = {"complex64", "lg_complex64", 8, 'c', 'F'},
  [GPU_COMPLEX128] = {"complex128", "lg_complex128", 16, 'c', 'D'},
};

int gpu_finddtype (const char *name) {
  int i;
  for (i = 0; i < GPU_NDTYPES; i++)   /* the first letter first: every array op names one */
    if (name[0] == gpu_dtypes[i].name[0] && strcmp(name, gpu_dtypes[i].name) == 0) return i;
  return -1;
}

gpu_DtypeId gpu_checkdtype (lua_State *L, int arg) {
  const char *name = luaL_checkstring(L, arg);
  int id = gpu_finddtype(name);
  if (id < 0) luaL_argerror(L, arg, lua_pushfstring(L, "unknown dtype '%s'", name));
  return (gpu_DtypeId)id;
}

/* ---------------------------------------------------------------- half precision */

static float half_to_float (uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  float f;
  if (exponent == 0x1f) bits = sign | 0x7f800000u | (mantissa << 13);       /* inf, nan */
  else if (exponent != 0) bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  else if (mantissa == 0) bits = sign;                                       /* zero */
  else {                                                                     /* subnormal */
    f = ldexpf((float)mantissa, -24);
    return sign ? -f : f;
  }
  memcpy(&f, &bits, 4);
  return f;
}

/*
** A double rounded to a 16-bit float of ebits exponent and mbits mantissa bits (float16: 5, 10;
** bfloat16: 8, 7), to nearest even, overflowing to infinity: what CUDA's __double2half and
** __double2bfloat16 do.  Straight from the double: going through float first rounds twice
** (1 + 2^-11 + 2^-40 became the tie 1 + 2^-11, then 1 instead of 1 + 2^-10).
*/
static uint16_t double_to_16 (double n, int ebits, int mbits) {
  const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  const uint32_t inf = ((1u << ebits) - 1) << mbits;
  uint64_t bits, m, h, rest;
  uint32_t sign;
  int e, shift;
  memcpy(&bits, &n, 8);
  sign = (uint32_t)(bits >> 63) << 15;
  e = (int)((bits >> 52) & 0x7ff);
  m = bits & ((UINT64_C(1) << 52) - 1);
  if (e == 0x7ff) return (uint16_t)(sign | inf | (m ? 1u << (mbits - 1) : 0));  /* inf, quiet nan */
  if (e == 0) return (uint16_t)sign;            /* double subnormals round to zero in both */
  e -= 1023;
  if (e > bias) return (uint16_t)(sign | inf);
  m |= UINT64_C(1) << 52;
  shift = 52 - mbits + (e < emin ? emin - e : 0);     /* subnormal: fewer mantissa bits */
  if (shift > 60) return (uint16_t)sign;        /* below half the smallest subnormal */
  h = m >> shift;
  rest = m & ((UINT64_C(1) << shift) - 1);
  if (rest > UINT64_C(1) << (shift - 1) || (rest == UINT64_C(1) << (shift - 1) && (h & 1))) h++;
  /* a normal's h holds the implicit bit, which adds 1 to the exponent field; a carry out of
     the mantissa moves to the next exponent (or infinity), and a subnormal's to the least normal */
  return (uint16_t)(sign | (e >= emin ? ((uint64_t)(e + bias - 1) << mbits) + h : h));
}

static float bfloat16_to_float (uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* ---------------------------------------------------------------- complex values */

int gpu_iscomplex (lua_State *L, int idx) {
  int is;
  if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) return 0;
  luaL_getmetatable(L, GPU_COMPLEX);
  is = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return is;
}

/* The number in field name of the table at idx (absolute); 0 if it holds none. */
static int number_field (lua_State *L, int idx, const char *name, double *out) {
  int ok;
  lua_pushstring(L, name);
  ok = lua_rawget(L, idx) == LUA_TNUMBER;
  if (ok) *out = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return ok;
}

int gpu_tocomplex (lua_State *L, int idx, double *re, double *im) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    *re = lua_tonumber(L, idx);
    *im = 0;
    return 1;
  }
  idx = lua_absindex(L, idx);
  return gpu_iscomplex(L, idx) && number_field(L, idx, "re", re) && number_field(L, idx, "im", im);
}

void gpu_pushcomplex (lua_State *L, double re, double im) {
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, re);
  lua_setfield(L, -2, "re");
  lua_pushnumber(L, im);
  lua_setfield(L, -2, "im");
  luaL_setmetatable(L, GPU_COMPLEX);
}

/* ---------------------------------------------------------------- Lua <-> bytes */

static const char *const out_of_range[GPU_NDTYPES] = {
  [GPU_INT8] = "out of range for int8", [GPU_UINT8] = "out of range for uint8",
  [GPU_INT16] = "out of range for int16", [GPU_UINT16] = "out of range for uint16",
  [GPU_INT32] = "out of range for int32", [GPU_UINT32] = "out of range for uint32",
  [GPU_INT64] = "out of range for int64", [GPU_UINT64] = "out of range for uint64",
};

static const char *to_integer (lua_State *L, int idx, gpu_DtypeId dtype, lua_Integer *out) {
  int isint;
  lua_Integer v;
  if (lua_type(L, idx) != LUA_TNUMBER) return "expected a number";
  v = lua_tointegerx(L, idx, &isint);
  if (!isint) {
    lua_Number n = lua_tonumber(L, idx);
    return n != floor(n) ? "not an integer" : out_of_range[dtype];  /* integral beyond int64 */
  }
  *out = v;
  return NULL;
}

const char *gpu_tovalue (lua_State *L, int idx, gpu_DtypeId dtype, void *out) {
  lua_Integer v = 0;
  const char *bad;
  switch (gpu_dtypes[dtype].kind) {
    case 'c': {
      double re, im;
      if (!gpu_tocomplex(L, idx, &re, &im)) return "expected a number or a gpu.complex";
      if (dtype == GPU_COMPLEX128) {
        double d[2] = {re, im};
        memcpy(out, d, sizeof d);
      } else {
        float f[2] = {(float)re, (float)im};
        memcpy(out, f, sizeof f);
      }
      return NULL;
    }
    case 'b': {
      unsigned char b;
      if (lua_isboolean(L, idx)) b = (unsigned char)lua_toboolean(L, idx);
      else if (lua_type(L, idx) == LUA_TNUMBER) b = lua_tonumber(L, idx) != 0;
      else return "expected a boolean or a number";
      memcpy(out, &b, 1);
      return NULL;
    }
    case 'f': {
      lua_Number n;
      if (lua_type(L, idx) != LUA_TNUMBER) return "expected a number";
      n = lua_tonumber(L, idx);
      if (dtype == GPU_FLOAT64) memcpy(out, &n, 8);
      else if (dtype == GPU_FLOAT32) {
        float f = (float)n;
        memcpy(out, &f, 4);
      } else {
        uint16_t h = dtype == GPU_FLOAT16 ? double_to_16(n, 5, 10) : double_to_16(n, 8, 7);
        memcpy(out, &h, 2);
      }
      return NULL;
    }
    default:
      break;
  }
  if (dtype == GPU_UINT64 && lua_type(L, idx) == LUA_TNUMBER && !lua_isinteger(L, idx)) {
    lua_Number n = lua_tonumber(L, idx);      /* floats may name the upper half of uint64 */
    uint64_t u;
    if (n != floor(n)) return "not an integer";
    if (!(n >= 0 && n < 18446744073709551616.0)) return out_of_range[GPU_UINT64];
    u = (uint64_t)n;
    memcpy(out, &u, 8);
    return NULL;
  }
  if ((bad = to_integer(L, idx, dtype, &v)) != NULL) return bad;
  switch (dtype) {
#define GPU_STORE(id, type, lo, hi)                                             \
    case id: {                                                                  \
      type t;                                                                   \
      if (v < (lo) || v > (hi)) return out_of_range[id];                        \
      t = (type)v;                                                              \
      memcpy(out, &t, sizeof t);                                                \
      return NULL;                                                              \
    }
    GPU_STORE(GPU_INT8, int8_t, INT8_MIN, INT8_MAX)
    GPU_STORE(GPU_UINT8, uint8_t, 0, UINT8_MAX)
    GPU_STORE(GPU_INT16, int16_t, INT16_MIN, INT16_MAX)
    GPU_STORE(GPU_UINT16, uint16_t, 0, UINT16_MAX)
    GPU_STORE(GPU_INT32, int32_t, INT32_MIN, INT32_MAX)
    GPU_STORE(GPU_UINT32, uint32_t, 0, (lua_Integer)UINT32_MAX)
    GPU_STORE(GPU_INT64, int64_t, LUA_MININTEGER, LUA_MAXINTEGER)
    GPU_STORE(GPU_UINT64, int64_t, LUA_MININTEGER, LUA_MAXINTEGER)
#undef GPU_STORE
    default:
      return "unsupported dtype";
  }
}

void gpu_pushvalue (lua_State *L, gpu_DtypeId dtype, const void *p) {
  switch (dtype) {
#define GPU_LOAD(id, type, push) case id: { type t; memcpy(&t, p, sizeof t); push(L, t); return; }
    GPU_LOAD(GPU_INT8, int8_t, lua_pushinteger)
    GPU_LOAD(GPU_UINT8, uint8_t, lua_pushinteger)
    GPU_LOAD(GPU_INT16, int16_t, lua_pushinteger)
    GPU_LOAD(GPU_UINT16, uint16_t, lua_pushinteger)
    GPU_LOAD(GPU_INT32, int32_t, lua_pushinteger)
    GPU_LOAD(GPU_UINT32, uint32_t, lua_pushinteger)
    GPU_LOAD(GPU_INT64, int64_t, lua_pushinteger)
    GPU_LOAD(GPU_UINT64, int64_t, lua_pushinteger)      /* same 64 bits, see above */
    GPU_LOAD(GPU_FLOAT32, float, lua_pushnumber)
    GPU_LOAD(GPU_FLOAT64, double, lua_pushnumber)
#undef GPU_LOAD
    case GPU_BOOL: lua_pushboolean(L, *(const unsigned char *)p != 0); return;
    case GPU_COMPLEX64: {
      float f[2];
      memcpy(f, p, sizeof f);
      gpu_pushcomplex(L, f[0], f[1]);
      return;
    }
    case GPU_COMPLEX128: {
      double d[2];
      memcpy(d, p, sizeof d);
      gpu_pushcomplex(L, d[0], d[1]);
      return;
    }
    case GPU_FLOAT16: case GPU_BFLOAT16: {
      uint16_t h;
      memcpy(&h, p, 2);
      lua_pushnumber(L, dtype == GPU_FLOAT16 ? half_to_float(h) : bfloat16_to_float(h));
      return;
    }
    default: lua_pushnil(L); return;
  }
}

/* ---------------------------------------------------------------- shapes */

static int64_t check_dim (lua_State *L, int arg, int idx) {
  int isint;
  lua_Integer n = lua_tointegerx(L, idx, &isint);
  if (!isint)
    return luaL_argerror(L, arg, lua_pushfstring(L, "shape must be a number or a table of "
                                                 "whole numbers, got %s", luaL_typename(L, idx)));
  if (n < 0)
    return luaL_argerror(L, arg, lua_pushfstring(L, "negative dimension %I in shape", n));
  return (int64_t)n;
}

int gpu_checkshape (lua_State *L, int arg, int64_t *shape, int64_t *size) {
  int ndim, i;
  int64_t total = 1;
  arg = lua_absindex(L, arg);
  if (lua_type(L, arg) == LUA_TNUMBER) {
    shape[0] = check_dim(L, arg, arg);
    ndim = 1;
  } else if (lua_type(L, arg) == LUA_TTABLE) {
    lua_Unsigned n = lua_rawlen(L, arg);
    if (n > GPU_MAXDIM)
      return luaL_argerror(L, arg, lua_pushfstring(L, "shape has %d dimensions (at most %d)",
                                                   (int)n, GPU_MAXDIM));
    ndim = (int)n;
    for (i = 0; i < ndim; i++) {
      lua_rawgeti(L, arg, i + 1);
      shape[i] = check_dim(L, arg, -1);
      lua_pop(L, 1);
    }
  } else {
    return luaL_argerror(L, arg, lua_pushfstring(L, "shape must be a number or a table of "
                                                 "whole numbers, got %s", luaL_typename(L, arg)));
  }
  /* at most 2^58 elements, so that bytes (itemsize <= 16) and byte offsets never overflow;
  ** the nonzero lengths count even beside a 0 (as NumPy's), since row-major strides
  ** multiply them */
  for (i = 0; i < ndim; i++) {
    if (shape[i] == 0) continue;
    if (total > ((int64_t)1 << 58) / shape[i])
      return luaL_argerror(L, arg, "shape is too large");
    total *= shape[i];
  }
  for (i = 0; i < ndim; i++)
    if (shape[i] == 0) total = 0;
  *size = total;
  return ndim;
}

/* dtype(name) -> {name, itemsize, ctype, kind}; kind is NumPy's letter */
static int gpu_dtype (lua_State *L) {
  const gpu_Dtype *t = &gpu_dtypes[gpu_checkdtype(L, 1)];
  char kind[2] = {t->kind, '\0'};
  lua_createtable(L, 0, 4);
  lua_pushstring(L, t->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, t->itemsize);
  lua_setfield(L, -2, "itemsize");
  lua_pushstring(L, t->ctype);
  lua_setfield(L, -2, "ctype");
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
  return 1;
}

void gpu_dtype_open (lua_State *L) {
  lua_pushcfunction(L, gpu_dtype);
  lua_setfield(L, -2, "dtype");
  luaL_newmetatable(L, GPU_COMPLEX);       /* its arithmetic: lua/gpu/complex.lua */
  lua_setfield(L, -2, "complex_metatable");
}
