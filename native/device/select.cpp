#include "select.h"

#include <cstdlib>

#include "../common/errors.h"
#include "cuda/cuda_device.h"

namespace cca {

PlatformChoice choose_platform(const std::string& kind, const SimOptions& sim) {
  if (kind == "sim") return {std::make_unique<SimPlatform>(sim), "CCA_DEVICE=sim: simulated GPU"};
  if (kind == "cuda") {
    auto platform = CudaPlatform::open();  // throws DeviceError with the reason
    return {std::move(platform), "CCA_DEVICE=cuda: CUDA driver at " + DriverLibrary::instance().path()};
  }
  if (kind == "auto" || kind.empty()) {
    CudaProbe probe = probe_cuda();
    if (probe.available) {
      return {CudaPlatform::open(), "auto: " + std::to_string(probe.device_count) + " GPU(s) found through " +
                                        DriverLibrary::instance().path()};
    }
    return {std::make_unique<SimPlatform>(sim), "auto: no usable GPU (" + probe.reason + "), so the simulated GPU is used"};
  }
  throw InvalidArgumentError("CCA_DEVICE must be auto, sim or cuda, got '" + kind + "'", "ERR_CCA_INVALID_CONFIG");
}

std::string device_kind_from_environment() {
  const char* kind = std::getenv("CCA_DEVICE");
  return kind ? kind : "auto";
}

SimOptions sim_options_from_environment() {
  SimOptions o;
  if (const char* v = std::getenv("CCA_SIM_DEVICES")) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < 1 || n > 64) {
      throw InvalidArgumentError(std::string("CCA_SIM_DEVICES must be an integer from 1 to 64, got '") + v + "'",
                                 "ERR_CCA_INVALID_CONFIG");
    }
    o.devices = static_cast<int>(n);
  }
  if (const char* v = std::getenv("CCA_SIM_CAPACITY_MB")) {
    char* end = nullptr;
    unsigned long long mb = std::strtoull(v, &end, 10);
    if (*v == '\0' || *end != '\0' || mb < 1 || mb > (1ull << 20)) {
      throw InvalidArgumentError(std::string("CCA_SIM_CAPACITY_MB must be an integer from 1 to 1048576, got '") + v +
                                     "'",
                                 "ERR_CCA_INVALID_CONFIG");
    }
    o.capacity_bytes = static_cast<std::size_t>(mb) << 20;
  }
  return o;
}

GpuProbe probe_gpu() {
  const CudaProbe p = probe_cuda();
  return GpuProbe{p.available, p.device_count, p.reason, p.driver_version, DriverLibrary::instance().path()};
}

}  // namespace cca
