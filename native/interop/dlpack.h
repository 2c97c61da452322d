// Buffers leaving as DLPack 1.x tensors (DLManagedTensorVersioned): another framework
// borrows the memory, and its deleter gives it back through the allocator. An exported
// allocation is freed when both JS has let go of it and every tensor's deleter has run, in
// whichever order, on whichever thread (exports.h keeps that count).
#pragma once
#include <cstdint>
#include <vector>

#include "../runtime/runtime.h"

namespace cca {

// DLPack's ABI (dlpack.h, v1.0), declared here: the layout is the standard, not a header
// of ours.
struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
struct DLDevice {
  std::int32_t device_type;  // kDLCUDA == 2
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements
  std::uint64_t byte_offset;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};
static_assert(sizeof(DLTensor) == 48 && sizeof(DLManagedTensorVersioned) == 80, "DLPack's ABI");

struct DLPackRequest {
  int device = 0;
  DevicePtr base = 0;        // a live allocation's base
  std::uint64_t bytes = 0;   // its size as the caller asked for it
  DLDataType dtype{2, 32, 1};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // empty: row-major
  std::uint64_t byte_offset = 0;
};

// A tensor over the allocation, pinning `runtime` (the process's) until its deleter runs.
// InvalidArgumentError (ERR_CCA_OUT_OF_BOUNDS) when the elements reach outside the bytes,
// and for shapes or dtypes DLPack cannot say; InvalidPointerError unless `base` is live.
DLManagedTensorVersioned* export_dlpack(Runtime& runtime, const DLPackRequest& request);
}  // namespace cca
