/*
** tools/fakecufft.c: a stand-in libcufft for the CPU suite, beside tools/fakecuda.c (whose
** "device memory" is host RAM).  Plans record their type, sizes and batch; executing one
** computes the transform on the host by the definition (a sum per output element) for
** single-axis complex transforms, and leaves other outputs alone, so spec/53 checks how
** lua/gpu/fft.lua and src/fft.c hand transforms to cuFFT without a GPU.  On stderr:
**   fakecufft: plan TYPE n1[xn2[xn3]] batch B        each plan made
**   fakecufft: exec TYPE forward|inverse               each transform (given a work area)
**   fakecufft: plan destroyed
** FAKE_CUFFT_PLAN=fail makes cufftMakePlanMany64 fail (CUFFT_INVALID_SIZE).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cufft.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_PLANS 4096
#define WORK_BYTES 4096         /* what every plan asks for, so that work areas are given */

typedef struct FakePlan {
  int used, rank;
  long long n[3], batch;
  cufftType type;
  void *work;
} FakePlan;

static FakePlan plans[MAX_PLANS];

static const char *type_name (cufftType t) {
  switch (t) {
    case CUFFT_C2C: return "C2C";
    case CUFFT_Z2Z: return "Z2Z";
    case CUFFT_R2C: return "R2C";
    case CUFFT_D2Z: return "D2Z";
    case CUFFT_C2R: return "C2R";
    default: return "Z2D";
  }
}

EXPORT cufftResult cufftGetProperty (libraryPropertyType type, int *value) {
  *value = type == MAJOR_VERSION ? 12 : 0;
  return CUFFT_SUCCESS;
}

EXPORT cufftResult cufftCreate (cufftHandle *handle) {
  int i;
  for (i = 0; i < MAX_PLANS; i++) {
    if (!plans[i].used) {
      memset(&plans[i], 0, sizeof plans[i]);
      plans[i].used = 1;
      *handle = i;
      return CUFFT_SUCCESS;
    }
  }
  return CUFFT_ALLOC_FAILED;
}

static FakePlan *plan_of (cufftHandle handle) {
  return handle >= 0 && handle < MAX_PLANS && plans[handle].used ? &plans[handle] : NULL;
}

EXPORT cufftResult cufftDestroy (cufftHandle handle) {
  FakePlan *p = plan_of(handle);
  if (p == NULL) return CUFFT_INVALID_PLAN;
  p->used = 0;
  fprintf(stderr, "fakecufft: plan destroyed\n");
  return CUFFT_SUCCESS;
}

EXPORT cufftResult cufftSetAutoAllocation (cufftHandle handle, int on) {
  (void)on;
  return plan_of(handle) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

EXPORT cufftResult cufftMakePlanMany64 (cufftHandle handle, int rank, long long *n,
                                        long long *inembed, long long istride, long long idist,
                                        long long *onembed, long long ostride, long long odist,
                                        cufftType type, long long batch, size_t *work_size) {
  FakePlan *p = plan_of(handle);
  const char *fail = getenv("FAKE_CUFFT_PLAN");
  int i;
  (void)inembed; (void)istride; (void)idist; (void)onembed; (void)ostride; (void)odist;
  if (p == NULL) return CUFFT_INVALID_PLAN;
  if (fail != NULL && strcmp(fail, "fail") == 0) return CUFFT_INVALID_SIZE;
  if (rank < 1 || rank > 3 || batch < 1) return CUFFT_INVALID_VALUE;
  p->rank = rank;
  p->type = type;
  p->batch = batch;
  fprintf(stderr, "fakecufft: plan %s ", type_name(type));
  for (i = 0; i < rank; i++) {
    p->n[i] = n[i];
    fprintf(stderr, "%s%lld", i ? "x" : "", n[i]);
  }
  fprintf(stderr, " batch %lld\n", batch);
  *work_size = WORK_BYTES;
  return CUFFT_SUCCESS;
}

EXPORT cufftResult cufftSetWorkArea (cufftHandle handle, void *work) {
  FakePlan *p = plan_of(handle);
  if (p == NULL) return CUFFT_INVALID_PLAN;
  p->work = work;
  return CUFFT_SUCCESS;
}

EXPORT cufftResult cufftSetStream (cufftHandle handle, cudaStream_t stream) {
  (void)stream;
  return plan_of(handle) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

/* out[k] = sum over j of in[j] e^(sign 2 pi i j k / n), each line of a batch, in doubles. */
static void dft (const double *in, double *out, long long n, long long batch, int sign,
                 int single) {
  long long b, j, k;
  const double two_pi = 6.283185307179586;
  for (b = 0; b < batch; b++) {
    for (k = 0; k < n; k++) {
      double re = 0, im = 0;
      for (j = 0; j < n; j++) {
        double angle = sign * two_pi * (double)((j * k) % n) / (double)n;
        double x_re = single ? ((const float *)in)[2 * (b * n + j)] : in[2 * (b * n + j)];
        double x_im = single ? ((const float *)in)[2 * (b * n + j) + 1] : in[2 * (b * n + j) + 1];
        re += x_re * cos(angle) - x_im * sin(angle);
        im += x_re * sin(angle) + x_im * cos(angle);
      }
      if (single) {
        ((float *)out)[2 * (b * n + k)] = (float)re;
        ((float *)out)[2 * (b * n + k) + 1] = (float)im;
      } else {
        out[2 * (b * n + k)] = re;
        out[2 * (b * n + k) + 1] = im;
      }
    }
  }
}

static cufftResult exec (cufftHandle handle, cufftType type, const void *in, void *out,
                         int direction) {
  FakePlan *p = plan_of(handle);
  if (p == NULL) return CUFFT_INVALID_PLAN;
  if (p->type != type) return CUFFT_INVALID_TYPE;
  if (p->work == NULL) return CUFFT_NO_WORKSPACE;
  fprintf(stderr, "fakecufft: exec %s %s\n", type_name(type),
          direction == CUFFT_INVERSE ? "inverse" : "forward");
  if (p->rank == 1 && in != out && (type == CUFFT_C2C || type == CUFFT_Z2Z))
    dft((const double *)in, (double *)out, p->n[0], p->batch, direction, type == CUFFT_C2C);
  return CUFFT_SUCCESS;
}

EXPORT cufftResult cufftExecC2C (cufftHandle h, cufftComplex *in, cufftComplex *out, int dir) {
  return exec(h, CUFFT_C2C, in, out, dir);
}
EXPORT cufftResult cufftExecZ2Z (cufftHandle h, cufftDoubleComplex *in, cufftDoubleComplex *out,
                                 int dir) {
  return exec(h, CUFFT_Z2Z, in, out, dir);
}
EXPORT cufftResult cufftExecR2C (cufftHandle h, cufftReal *in, cufftComplex *out) {
  return exec(h, CUFFT_R2C, in, out, CUFFT_FORWARD);
}
EXPORT cufftResult cufftExecD2Z (cufftHandle h, cufftDoubleReal *in, cufftDoubleComplex *out) {
  return exec(h, CUFFT_D2Z, in, out, CUFFT_FORWARD);
}
EXPORT cufftResult cufftExecC2R (cufftHandle h, cufftComplex *in, cufftReal *out) {
  return exec(h, CUFFT_C2R, in, out, CUFFT_INVERSE);
}
EXPORT cufftResult cufftExecZ2D (cufftHandle h, cufftDoubleComplex *in, cufftDoubleReal *out) {
  return exec(h, CUFFT_Z2D, in, out, CUFFT_INVERSE);
}
