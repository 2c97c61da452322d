// Copies and fills that wait (sync_copies.h).
#include "sync_copies.h"

#include "../facet_access.h"

namespace cca {

void SyncCopies::finish(Status s, StreamId stream, const char* what) {
  if (s == Status::kOk) s = FacetAccess::device(a_).stream_synchronize(stream);
  if (s != Status::kOk) throw device_error(FacetAccess::device(a_), what, s);
}

void SyncCopies::copy_to_device(DevicePtr base, std::uint64_t offset, const void* src, std::uint64_t bytes) {
  const auto lock = FacetAccess::lock(a_);
  const StreamId stream = FacetAccess::live_range(a_, base, offset, bytes, "copy to device");
  if (bytes == 0) return;
  FacetAccess::refuse_during_capture(a_, "a synchronous copy to device (it waits for the copy; use the async form)");
  finish(engine_.memcpy_htod(base + offset, src, bytes, stream), stream, "copy to device");
}

void SyncCopies::copy_to_host(void* dst, DevicePtr base, std::uint64_t offset, std::uint64_t bytes) {
  const auto lock = FacetAccess::lock(a_);
  const StreamId stream = FacetAccess::live_range(a_, base, offset, bytes, "copy to host");
  if (bytes == 0) return;
  FacetAccess::refuse_during_capture(a_, "a synchronous copy to host (it waits for the copy; use the async form)");
  finish(engine_.memcpy_dtoh(dst, base + offset, bytes, stream), stream, "copy to host");
}

void SyncCopies::fill(DevicePtr base, std::uint64_t offset, unsigned char value, std::uint64_t bytes) {
  const auto lock = FacetAccess::lock(a_);
  const StreamId stream = FacetAccess::live_range(a_, base, offset, bytes, "fill");
  if (bytes == 0) return;
  FacetAccess::refuse_during_capture(a_, "a synchronous fill (it waits for the copy; use the async form)");
  finish(engine_.memset_d8(base + offset, value, bytes, stream), stream, "fill");
}

}  // namespace cca
