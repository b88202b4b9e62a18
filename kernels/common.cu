// common.cu: what the library's generated kernels share (prepended by the Lua layer).
//
// gpu_layout describes a strided array: the flat (row-major) index of an element maps to a
// byte offset through shape and byte strides.  The Lua side collapses dimensions first, so
// ndim is usually 1 or 2 and the division loop short.  float16 and bfloat16 are stored as
// their 16 bits and converted through PTX, so no CUDA header has to be found at run time.

#define GPU_MAXDIM 32

struct gpu_layout {
  long long ndim;
  long long shape[GPU_MAXDIM];
  long long strides[GPU_MAXDIM];   // bytes
};

__device__ __forceinline__ long long gpu_offset(const gpu_layout &lay, long long i) {
  long long off = 0;
  for (int d = (int)lay.ndim - 1; d > 0; d--) {
    long long s = lay.shape[d];
    off += (i % s) * lay.strides[d];
    i /= s;
  }
  return off + i * lay.strides[0];
}

__device__ __forceinline__ float gpu_half_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ unsigned short gpu_float_to_half(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__device__ __forceinline__ float gpu_bf16_to_float(unsigned short h) {
  return __uint_as_float((unsigned)h << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ unsigned short gpu_float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

// Elementwise kernels compute float16 and bfloat16 values in float; each operation that
// yields one rounds its result to the 16-bit type, as NumPy does.
__device__ __forceinline__ float lg_round_half(float x) { return gpu_half_to_float(gpu_float_to_half(x)); }
__device__ __forceinline__ float lg_round_bf16(float x) { return gpu_bf16_to_float(gpu_float_to_bf16(x)); }
