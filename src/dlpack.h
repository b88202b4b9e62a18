/*
** dlpack.h: the DLPack 1.x exchange types (versioned managed tensors), written from the DLPack
** specification (dmlc.github.io/dlpack).  Only the layout and the constants matter: they are
** the ABI other libraries share.  A library that ships the official dlpack.h can use it instead;
** the definitions agree.
*/
#ifndef GPU_DLPACK_H
#define GPU_DLPACK_H

#include <stdint.h>

#ifndef DLPACK_MAJOR_VERSION
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of DLManagedTensorVersioned.flags. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)    /* consumers must not write */
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)    /* the producer made a copy */

/* A major version change means a different layout: only the deleter may then be used. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;            /* the CUDA device ordinal for kDLCUDA */
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
} DLDataTypeCode;

typedef struct {
  uint8_t code;                 /* a DLDataTypeCode */
  uint8_t bits;                 /* per lane: bool is 8 */
  uint16_t lanes;               /* 1 for scalars */
} DLDataType;

typedef struct {
  void *data;                   /* the allocation; the first element is at data + byte_offset */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;               /* ndim entries */
  int64_t *strides;             /* ndim entries, in elements; NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;

/* The producer's tensor, lent to a consumer, which calls deleter(self) once when done. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);   /* may be NULL */
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif
#endif
