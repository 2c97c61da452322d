// User errors of the allocator. Each carries a stable machine code and leaves the
// allocator's state unchanged (checks happen before any mutation). Internal invariant
// failures are not errors of this kind: they are bugs, reported by the validator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cca {

class AllocatorError : public std::runtime_error {
 public:
  AllocatorError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// A bad size, stream, option or config string.
class InvalidArgumentError : public AllocatorError {
 public:
  explicit InvalidArgumentError(const std::string& message,
                                std::string code = "ERR_CCA_INVALID_ARGUMENT")
      : AllocatorError(std::move(code), message) {}
};

// A pointer this allocator did not hand out, or one already freed.
class InvalidPointerError : public AllocatorError {
 public:
  explicit InvalidPointerError(const std::string& message)
      : AllocatorError("ERR_CCA_INVALID_POINTER", message) {}
};

// The device failed in a way that releasing the cache cannot fix.
class DeviceError : public AllocatorError {
 public:
  explicit DeviceError(const std::string& message)
      : AllocatorError("ERR_CCA_DEVICE", message) {}
};

// The numbers of an out-of-memory error, described once: X(member, JS name). Every field
// is a byte count but `device`. The struct below and the binding's JS object (and through
// it lib/errors.ts's OutOfMemoryDetails, checked by test/snapshot-layout.test.ts) expand
// from this list.
//   requested: the caller's size; alloc_size: the segment size asked of the device;
//   device_free/device_total: what the device reported; allowed: the memory-fraction
//   limit, 0 when none is set; allocated/reserved: allocated_bytes and reserved_bytes
//   .all.current; cached_free, free_blocks, largest_free_block: the cache after it was
//   released (what is left free sits in segments that also hold live blocks, so a request
//   above the largest free block needs new device memory however much is free in total:
//   that gap is fragmentation).
#define CCA_OOM_FIELDS(X)                 \
  X(device, "device")                     \
  X(requested, "requested")               \
  X(alloc_size, "allocSize")              \
  X(device_free, "deviceFree")            \
  X(device_total, "deviceTotal")          \
  X(allowed, "allowed")                   \
  X(allocated, "allocated")               \
  X(reserved, "reserved")                 \
  X(cached_free, "cachedFree")            \
  X(free_blocks, "freeBlocks")            \
  X(largest_free_block, "largestFreeBlock")

struct OutOfMemoryInfo {
#define CCA_OOM_MEMBER(member, js_name) std::uint64_t member = 0;
  CCA_OOM_FIELDS(CCA_OOM_MEMBER)
#undef CCA_OOM_MEMBER
};


class OutOfMemoryError : public AllocatorError {
 public:
  OutOfMemoryError(const std::string& message, const OutOfMemoryInfo& info)
      : AllocatorError("ERR_CUDA_OUT_OF_MEMORY", message), info_(info) {}
  const OutOfMemoryInfo& info() const { return info_; }

 private:
  OutOfMemoryInfo info_;
};

}  // namespace cca
