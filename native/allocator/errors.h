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

struct OutOfMemoryInfo {
  int device = 0;
  std::uint64_t requested = 0;      // the caller's size in bytes
  std::uint64_t alloc_size = 0;     // the segment size asked of the device
  std::uint64_t device_free = 0;    // what the device reported free
  std::uint64_t device_total = 0;   // the device's capacity
  std::uint64_t allowed = 0;        // the memory-fraction limit, 0 when none is set
  std::uint64_t allocated = 0;      // allocated_bytes.all.current
  std::uint64_t reserved = 0;       // reserved_bytes.all.current
  // The cache after it was released: what is left free sits in segments that also hold
  // live blocks. A request above the largest free block needs new device memory however
  // much is free in total: that gap is fragmentation.
  std::uint64_t cached_free = 0;    // bytes in free (mapped) blocks
  std::uint64_t free_blocks = 0;
  std::uint64_t largest_free_block = 0;
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
