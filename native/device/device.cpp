#include "device.h"

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

}  // namespace cca
