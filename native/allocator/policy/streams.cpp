// Streams of one device's allocator: created and destroyed here so the allocator knows
// which are live (a destroyed stream is an error with a code, not undefined behaviour).
#include "caching_allocator.h"
#include "../../common/message_format.h"

namespace cca {

StreamId DeviceCachingAllocator::create_stream() {
  std::lock_guard<FutexMutex> lock(mu_);
  StreamId id = 0;
  Status s = device_.stream_create(&id);
  if (s != Status::kOk) throw device_error(device_, "cudaStreamCreate", s);
  streams_.insert(id);
  return id;
}

void DeviceCachingAllocator::destroy_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (stream == 0) throw InvalidArgumentError("the default stream cannot be destroyed", "ERR_CCA_INVALID_STREAM");
  check_stream(stream);
  refuse_during_capture("destroying a stream");
  if (adopted_.count(stream) != 0) {
    throw InvalidArgumentError("stream " + hex(stream) + " was adopted, not created, by the allocator: release it "
                               "(stream_release) and let its owner destroy it", "ERR_CCA_INVALID_STREAM");
  }
  forget_stream_locked(stream, true);
}

void DeviceCachingAllocator::forget_stream_locked(StreamId stream, bool destroy) {
  // Wait for the stream's work first: then no live block needs to wait for it any more,
  // and free() never records an event on a stream the allocator no longer knows.
  Status s = device_.stream_synchronize(stream);
  if (s == Status::kOk && destroy) s = device_.stream_destroy(stream);
  if (s != Status::kOk) throw device_error(device_, destroy ? "cudaStreamDestroy" : "cudaStreamSynchronize", s);
  streams_.erase(stream);
  if (last_live_stream_ == stream) last_live_stream_ = 0;
  ledger_.stream_destroyed(stream);
  if (!routing_.capture_uses.empty()) forget_capture_uses_of(stream);
  process_events();
  drop_dead_stream_bins();
}

void DeviceCachingAllocator::synchronize_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
  refuse_during_capture("synchronizing a stream");
  Status s = device_.stream_synchronize(stream);
  if (s != Status::kOk) throw device_error(device_, "cudaStreamSynchronize", s);
  process_events();
}

bool DeviceCachingAllocator::query_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
  refuse_during_capture("querying a stream (stream.done())");
  Status s = device_.stream_query(stream);
  if (s == Status::kNotReady) return false;
  if (s != Status::kOk) throw device_error(device_, "cudaStreamQuery", s);
  return true;
}

void DeviceCachingAllocator::synchronize() {
  std::lock_guard<FutexMutex> lock(mu_);
  refuse_during_capture("synchronize()");
  Status s = device_.device_synchronize();
  if (s != Status::kOk) throw device_error(device_, "cudaDeviceSynchronize", s);
  process_events();
}

// Streams the allocator did not create (the C ABI's clients bring their own).
void DeviceCachingAllocator::adopt_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = adopted_.find(stream);
  if (it != adopted_.end()) {
    ++it->second;
    return;
  }
  if (stream == 0 || streams_.count(stream) != 0) {
    throw InvalidArgumentError("stream " + hex(stream) + (stream == 0 ? " is the default stream" : " was created by the allocator") +
                                   ": it is usable without adopting it",
                               "ERR_CCA_INVALID_STREAM");
  }
  // The device must know it: a handle it refuses (of another device, or not a stream) is
  // refused here, never guessed at later. A destroyed stream's handle dangles: a real driver
  // cannot tell, so the contract is to adopt only live streams (docs/interop.md).
  const Status s = device_.stream_query(stream);
  if (s != Status::kOk && s != Status::kNotReady) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not a stream of device " + std::to_string(device_.index()) +
                                   " (" + device_.last_error() + ")",
                               "ERR_CCA_INVALID_STREAM");
  }
  streams_.insert(stream);
  adopted_.emplace(stream, 1);
}

void DeviceCachingAllocator::release_stream(StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto it = adopted_.find(stream);
  if (it == adopted_.end()) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not an adopted stream of device " +
                                   std::to_string(device_.index()),
                               "ERR_CCA_INVALID_STREAM");
  }
  if (it->second > 1) {
    --it->second;
    return;
  }
  refuse_during_capture("releasing the last adoption of a stream (it waits for the stream)");
  forget_stream_locked(stream, false);
  adopted_.erase(stream);
}

void DeviceCachingAllocator::require_live_stream(StreamId stream) const {
  std::lock_guard<FutexMutex> lock(mu_);
  check_stream(stream);
}

}  // namespace cca
