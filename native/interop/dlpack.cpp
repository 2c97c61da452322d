#include "dlpack.h"

#include <string>

#include "../allocator/policy/facets/address_lookups.h"
#include "../common/errors.h"
#include "../common/message_format.h"
#include "../runtime/process_runtime.h"
#include "exports.h"

namespace cca {

namespace {

constexpr std::int32_t kDLCUDA = 2;

// One allocation holds the tensor, its shape and strides, and what the deleter needs.
struct ManagedExport {
  DLManagedTensorVersioned tensor;
  Runtime* runtime;
  int device;
  DevicePtr base;
  std::int64_t dims[];  // shape, then strides
};

void delete_tensor(DLManagedTensorVersioned* self) {
  if (self == nullptr) return;
  auto* m = static_cast<ManagedExport*>(self->manager_ctx);
  drop_tensor(*m->runtime, m->device, m->base);
  unpin_process_runtime();
  ::operator delete(m);
}

std::uint64_t item_bytes(const DLDataType& t) { return (std::uint64_t{t.bits} * t.lanes + 7) / 8; }

}  // namespace

DLManagedTensorVersioned* export_dlpack(Runtime& runtime, const DLPackRequest& r) {
  const std::size_t ndim = r.shape.size();
  if (ndim > 32) throw InvalidArgumentError("toDLPack: at most 32 dimensions");
  if (!r.strides.empty() && r.strides.size() != ndim) {
    throw InvalidArgumentError("toDLPack: strides has " + std::to_string(r.strides.size()) + " entries for " +
                               std::to_string(ndim) + " dimensions");
  }
  std::vector<std::int64_t> strides = r.strides;
  if (strides.empty()) {
    strides.assign(ndim, 1);
    for (std::size_t i = ndim; i-- > 1;) strides[i - 1] = strides[i] * r.shape[i];
  }
  // The elements' extent, in items from the first: lowest and highest offsets reached.
  bool empty = false;
  std::int64_t low = 0, high = 0;
  for (std::size_t i = 0; i < ndim; ++i) {
    if (r.shape[i] < 0) throw InvalidArgumentError("toDLPack: shape[" + std::to_string(i) + "] is negative");
    if (r.shape[i] == 0) empty = true;
    const std::int64_t reach = (r.shape[i] - 1) * strides[i];
    (reach < 0 ? low : high) += reach;
  }
  const std::uint64_t item = item_bytes(r.dtype);
  if (!empty) {
    const long double first = static_cast<long double>(r.byte_offset) + static_cast<long double>(low) * item;
    const long double end = static_cast<long double>(r.byte_offset) + (static_cast<long double>(high) + 1) * item;
    if (first < 0 || end > static_cast<long double>(r.bytes)) {
      auto list = [](const std::vector<std::int64_t>& v) {
        std::string out = "[";
        for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
        return out + "]";
      };
      throw InvalidArgumentError("toDLPack: with options.shape " + list(r.shape) + ", options.strides " + list(strides) + " and options.byteOffset " +
                                     std::to_string(r.byte_offset) + ", the " + std::to_string(item) +
                                     "-byte elements reach bytes [" + std::to_string(static_cast<long long>(first)) + ", " +
                                     std::to_string(static_cast<long long>(end)) + ") of a " + std::to_string(r.bytes) +
                                     "-byte buffer: make the shape, strides or byteOffset fit it",
                                 "ERR_CCA_OUT_OF_BOUNDS");
    }
  }
  DevicePtr base = 0;
  std::uint64_t size = 0;
  StreamId stream = 0;
  DeviceCachingAllocator& a = runtime.allocator(r.device);
  if (!AddressLookups(a).find_allocation(r.base, &base, &size, &stream) || base != r.base) {
    throw InvalidPointerError("toDLPack: " + hex(r.base) + " is not a live allocation on device " + std::to_string(r.device));
  }
  auto* m = static_cast<ManagedExport*>(::operator new(sizeof(ManagedExport) + 2 * ndim * sizeof(std::int64_t)));
  for (std::size_t i = 0; i < ndim; ++i) {
    m->dims[i] = r.shape[i];
    m->dims[ndim + i] = strides[i];
  }
  m->runtime = &runtime;
  m->device = r.device;
  m->base = r.base;
  DLManagedTensorVersioned& t = m->tensor;
  t.version = DLPackVersion{1, 0};
  t.manager_ctx = m;
  t.deleter = delete_tensor;
  t.flags = 0;
  t.dl_tensor.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.base));
  t.dl_tensor.device = DLDevice{kDLCUDA, r.device};
  t.dl_tensor.ndim = static_cast<std::int32_t>(ndim);
  t.dl_tensor.dtype = r.dtype;
  t.dl_tensor.shape = ndim == 0 ? nullptr : m->dims;
  t.dl_tensor.strides = ndim == 0 ? nullptr : m->dims + ndim;
  t.dl_tensor.byte_offset = r.byte_offset;
  try {
    hold_tensor(runtime, r.device, r.base);
  } catch (...) {
    ::operator delete(m);
    throw;
  }
  pin_process_runtime();
  return &t;
}

}  // namespace cca
