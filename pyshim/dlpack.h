/* dlpack.h: the DLPack ABI (dmlc/dlpack, include/dlpack/dlpack.h, v1.x), the few structs and values that
 * device_array.c (export) and device_import.c (import) use, declared here rather than vendored. The capsule
 * protocol: a "dltensor" capsule holds a DLManagedTensor, a "dltensor_versioned" one a
 * DLManagedTensorVersioned; the consumer renames it "used_dltensor" / "used_dltensor_versioned" and calls the
 * deleter when done; a capsule still bearing its first name when it dies calls the deleter itself. */
#ifndef LK_DLPACK_H
#define LK_DLPACK_H

#include <stdint.h>

enum { LK_DL_CPU = 1, LK_DL_CUDA = 2, LK_DL_CUDA_MANAGED = 13 };                /* DLDeviceType */
enum { LK_DL_INT = 0, LK_DL_UINT = 1, LK_DL_FLOAT = 2, LK_DL_COMPLEX = 5, LK_DL_BOOL = 6 }; /* DLDataTypeCode */
#define LK_DL_FLAG_READ_ONLY 1ull

typedef struct {
    int32_t device_type;
    int32_t device_id;
} LkDLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} LkDLDataType;

typedef struct {
    void *data;
    LkDLDevice device;
    int32_t ndim;
    LkDLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: C-contiguous */
    uint64_t byte_offset;
} LkDLTensor;

typedef struct LkDLManagedTensor {
    LkDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct LkDLManagedTensor *self);
} LkDLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} LkDLPackVersion;

typedef struct LkDLManagedTensorVersioned {
    LkDLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct LkDLManagedTensorVersioned *self);
    uint64_t flags;
    LkDLTensor dl_tensor;
} LkDLManagedTensorVersioned;

#endif
