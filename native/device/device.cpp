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
    case Status::kNotFound: return "not found";
    case Status::kUnsupported: return "not supported";
    case Status::kFault: return "kernel fault";
    case Status::kCaptureInvalidated: return "stream capture invalidated";
  }
  return "unknown status";
}

std::string device_failure(const Device& device, const std::string& what, Status s) {
  std::string text = what + " failed on device " + std::to_string(device.index()) + ": " + status_name(s) + " (" +
                     device.last_error() + ")";
  if (s == Status::kFault) {
    text += "; a kernel faulted earlier and the GPU context is lost: every later call on this device fails the "
            "same way, so restart the process (run the kernel under compute-sanitizer to find the fault)";
  }
  return text;
}

DeviceError device_error(const Device& device, const std::string& what, Status s) {
  return DeviceError(device_failure(device, what, s), s == Status::kFault ? "ERR_CCA_DEVICE_FAULT" : "ERR_CCA_DEVICE");
}

}  // namespace cca
