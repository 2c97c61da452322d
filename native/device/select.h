// Choosing a backend: by name, or from the environment (CCA_DEVICE, CCA_SIM_DEVICES,
// CCA_SIM_CAPACITY_MB), the same way for the addon, the C++ tests and the benchmarks; and
// whether a GPU can be used, asked without opening one.
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

// CCA_DEVICE, or "auto" when it is not set.
std::string device_kind_from_environment();
// The simulator's options from CCA_SIM_DEVICES (1..64) and CCA_SIM_CAPACITY_MB
// (1..1048576); InvalidArgumentError (ERR_CCA_INVALID_CONFIG) naming a bad one.
SimOptions sim_options_from_environment();

// Whether the CUDA driver loads and sees a GPU, and if not why, without creating a context.
struct GpuProbe {
  bool available = false;
  int device_count = 0;
  std::string reason;
  int driver_version = 0;
  std::string library_path;  // the driver library tried
};
GpuProbe probe_gpu();

}  // namespace cca
