// Graph captures that native clients run on their own (adopted) streams and declare through
// the C ABI's capture_begin/capture_end: which pool and capture id each (device, stream) is
// routed with, between the two calls.
#pragma once
#include <cstdint>

#include "../allocator/policy/caching_allocator.h"

namespace cca {

// `stream` must be capturing already (the client called cuStreamBeginCapture); routes its
// capture to `pool` (0: a new one) and returns the pool's id. ERR_CCA_CAPTURE_UNSUPPORTED
// when the stream is not capturing or already declared.
std::uint32_t begin_client_capture(DeviceCachingAllocator& allocator, int device, StreamId stream, std::uint32_t pool);
// Ends the routing begun by begin_client_capture on (device, stream).
void end_client_capture(DeviceCachingAllocator& allocator, int device, StreamId stream);

}  // namespace cca
