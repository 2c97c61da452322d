// Picks the backend named by CCA_DEVICE (auto | sim | cuda).
#pragma once
#include <memory>
#include <string>

#include "device.h"
#include "sim/sim_device.h"

namespace cca {

struct PlatformChoice {
  std::unique_ptr<Platform> platform;
  std::string note;  // why this backend, shown by the demo and memory_summary
};

// kind: "auto" (a GPU when one can be used, else sim), "sim" or "cuda". Throws
// InvalidArgumentError for another kind, DeviceError when "cuda" cannot be used.
PlatformChoice choose_platform(const std::string& kind, const SimOptions& sim);

}  // namespace cca
