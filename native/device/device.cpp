#include "device.h"

#include <string>

namespace cca {

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kOutOfMemory: return "out of memory";
    case Status::kNotReady: return "not ready";
    case Status::kInvalidValue: return "invalid value";
    case Status::kError: return "device error";
  }
  return "unknown status";
}

std::string device_failure(const Device& device, const std::string& what, Status s) {
  return what + " failed on device " + std::to_string(device.index()) + ": " + status_name(s) + " (" +
         device.last_error() + ")";
}

}  // namespace cca
