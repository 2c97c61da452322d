// Host <-> device copies and fills. They reach device memory only through here, under the
// allocator's lock, and only inside one live allocation: a buffer object forged in
// JavaScript, a freed or foreign address, or a range past the caller's size is refused
// before the device sees it. The work runs on the allocation's own stream and is waited
// for before the lock is released, so the block cannot be freed and handed to someone else
// while its bytes are moving, and the host memory is free to reuse on return.
#include <string>

#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

StreamId DeviceCachingAllocator::live_range(DevicePtr base, std::uint64_t offset, std::uint64_t bytes,
                                           const char* what) const {
  const Block* b = base == 0 ? nullptr : ledger_.find_allocated(base);
  std::uint64_t size = 0;
  StreamId stream = 0;
  if (b != nullptr && b->state == BlockState::kAllocated) {
    size = b->requested_size;
    stream = b->stream;
  } else if (base != 0 && ipc_.imported(base, &size)) {
    // another process's memory, mapped here: the default stream's
  } else {
    throw InvalidPointerError(std::string(what) + ": " + hex(base) + " is not a live allocation on device " +
                              std::to_string(device_.index()) +
                              " (freed already, or not from this allocator); use a buffer from cuda.alloc()");
  }
  // requested_size is what the caller asked for: the rounding beyond it is not theirs.
  if (offset > size || bytes > size - offset) {
    throw InvalidArgumentError(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                                   std::to_string(offset) + " lie outside the allocation at " + hex(base) + " of " +
                                   std::to_string(size) + " bytes; stay within the buffer's size",
                               "ERR_CCA_OUT_OF_BOUNDS");
  }
  return stream;
}

CopyEngine& DeviceCachingAllocator::copy_engine(const char* what) const {
  if (copies_ == nullptr) {
    throw DeviceError(std::string(what) + ": this allocator of device " + std::to_string(device_.index()) +
                      " was made without a copy engine");
  }
  return *copies_;
}

void DeviceCachingAllocator::finish_copy(Status s, StreamId stream, const char* what) {
  if (s == Status::kOk) s = device_.stream_synchronize(stream);
  if (s != Status::kOk) throw device_error(device_, what, s);
}

void DeviceCachingAllocator::copy_to_device(DevicePtr base, std::uint64_t offset, const void* src,
                                            std::uint64_t bytes) {
  std::lock_guard<FutexMutex> lock(mu_);
  const StreamId stream = live_range(base, offset, bytes, "copy to device");
  if (bytes == 0) return;
  refuse_during_capture("a synchronous copy to device (it waits for the copy; use the async form)");
  finish_copy(copy_engine("copy to device").memcpy_htod(base + offset, src, bytes, stream), stream, "copy to device");
}

void DeviceCachingAllocator::copy_to_host(void* dst, DevicePtr base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard<FutexMutex> lock(mu_);
  const StreamId stream = live_range(base, offset, bytes, "copy to host");
  if (bytes == 0) return;
  refuse_during_capture("a synchronous copy to host (it waits for the copy; use the async form)");
  finish_copy(copy_engine("copy to host").memcpy_dtoh(dst, base + offset, bytes, stream), stream, "copy to host");
}

void DeviceCachingAllocator::fill(DevicePtr base, std::uint64_t offset, unsigned char value, std::uint64_t bytes) {
  std::lock_guard<FutexMutex> lock(mu_);
  const StreamId stream = live_range(base, offset, bytes, "fill");
  if (bytes == 0) return;
  refuse_during_capture("a synchronous fill (it waits for the copy; use the async form)");
  finish_copy(copy_engine("fill").memset_d8(base + offset, value, bytes, stream), stream, "fill");
}

void DeviceCachingAllocator::require_live_stream(StreamId stream) const {
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
}

}  // namespace cca
