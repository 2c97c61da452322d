// User errors of the allocator. Each carries a stable machine code and leaves the
// allocator's state unchanged (checks happen before any mutation). Internal invariant
// failures are not errors of this kind: they are bugs, reported by the validator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cca {

// The kinds of error, described once: X(enumerator, name). The name picks the JS class
// (lib/errors.ts's errorFromNative; test/contract/error-kinds.test.ts fails when the two
// lists differ).
#define CCA_ERROR_KINDS(X)        \
  X(kAllocator, "allocator")      \
  X(kArgument, "argument")        \
  X(kPointer, "pointer")          \
  X(kDevice, "device")            \
  X(kOutOfMemory, "oom")

enum class ErrorKind {
#define CCA_ERROR_ENUM(e, name) e,
  CCA_ERROR_KINDS(CCA_ERROR_ENUM)
#undef CCA_ERROR_ENUM
};

inline const char* error_kind_name(ErrorKind k) {
  static const char* const names[] = {
#define CCA_ERROR_NAME(e, name) name,
      CCA_ERROR_KINDS(CCA_ERROR_NAME)
#undef CCA_ERROR_NAME
  };
  return names[static_cast<int>(k)];
}

class AllocatorError : public std::runtime_error {
 public:
  AllocatorError(std::string code, const std::string& message, ErrorKind kind = ErrorKind::kAllocator)
      : std::runtime_error(message), code_(std::move(code)), kind_(kind) {}
  const std::string& code() const { return code_; }
  ErrorKind kind() const { return kind_; }

 private:
  std::string code_;
  ErrorKind kind_;
};

// A bad size, stream, option or config string.
class InvalidArgumentError : public AllocatorError {
 public:
  explicit InvalidArgumentError(const std::string& message,
                                std::string code = "ERR_CCA_INVALID_ARGUMENT")
      : AllocatorError(std::move(code), message, ErrorKind::kArgument) {}
};

// A pointer this allocator did not hand out, or one already freed.
class InvalidPointerError : public AllocatorError {
 public:
  explicit InvalidPointerError(const std::string& message)
      : AllocatorError("ERR_CCA_INVALID_POINTER", message, ErrorKind::kPointer) {}
};

// The device failed in a way that releasing the cache cannot fix.
class DeviceError : public AllocatorError {
 public:
  explicit DeviceError(const std::string& message, std::string code = "ERR_CCA_DEVICE")
      : AllocatorError(std::move(code), message, ErrorKind::kDevice) {}
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
  // `code`: ERR_CUDA_OUT_OF_MEMORY for device memory, ERR_CCA_HOST_OUT_OF_MEMORY for pinned
  // host memory (`info.device` is -1 there, as a pinned block belongs to no device).
  OutOfMemoryError(const std::string& message, const OutOfMemoryInfo& info, std::string code = "ERR_CUDA_OUT_OF_MEMORY")
      : AllocatorError(std::move(code), message, ErrorKind::kOutOfMemory), info_(info) {}
  const OutOfMemoryInfo& info() const { return info_; }

 private:
  OutOfMemoryInfo info_;
};

}  // namespace cca
