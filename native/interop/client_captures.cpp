#include "client_captures.h"
#include "../allocator/policy/facets/graph_captures.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "../common/message_format.h"

namespace cca {

namespace {
struct Declared {
  std::uint32_t pool;
  std::uint64_t id;
};
std::mutex g_mu;
std::map<std::pair<int, StreamId>, Declared>& declared() {
  static auto* m = new std::map<std::pair<int, StreamId>, Declared>;  // never destroyed: clients may call at exit
  return *m;
}
AllocatorError capture_error(const std::string& message) { return AllocatorError("ERR_CCA_CAPTURE_UNSUPPORTED", message); }
}  // namespace

std::uint32_t begin_client_capture(DeviceCachingAllocator& allocator, int device, StreamId stream, std::uint32_t pool) {
  allocator.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(g_mu);
  if (declared().count({device, stream}) != 0) {
    throw capture_error("capture_begin: stream " + hex(stream) + " already has a declared capture; call capture_end first");
  }
  Device::CaptureInfo info;
  const Status s = allocator.device().stream_capture_info(stream, &info);
  if (s != Status::kOk) throw device_error(allocator.device(), "cuStreamGetCaptureInfo", s);
  if (!info.active) {
    throw capture_error("capture_begin: stream " + hex(stream) + " on device " + std::to_string(device) +
                        " is not capturing; call cuStreamBeginCapture on it first");
  }
  const std::uint32_t p = pool != 0 ? pool : GraphCaptures(allocator).reserve_pool_id();
  GraphCaptures(allocator).begin_allocate_to_capture(p, info.id);
  declared().emplace(std::make_pair(device, stream), Declared{p, info.id});
  return p;
}

void end_client_capture(DeviceCachingAllocator& allocator, int device, StreamId stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = declared().find({device, stream});
  if (it == declared().end()) {
    throw capture_error("capture_end: no capture was declared on stream " + hex(stream) + " of device " +
                        std::to_string(device) + " (capture_begin declares one)");
  }
  GraphCaptures(allocator).end_allocate_to_capture(it->second.pool, it->second.id);
  declared().erase(it);
}

}  // namespace cca
