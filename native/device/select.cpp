#include "select.h"

#include "../allocator/errors.h"
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

}  // namespace cca
