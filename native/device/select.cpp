#include "select.h"

#include "../allocator/errors.h"

namespace cca {

namespace {
// Until the driver backend lands (issue #5), every run is simulated; this says so plainly.
constexpr const char* kNoCudaBackend =
    "the CUDA driver backend is not part of this build yet; CCA_DEVICE=sim runs the simulated GPU";
}  // namespace

PlatformChoice choose_platform(const std::string& kind, const SimOptions& sim) {
  if (kind == "sim") return {std::make_unique<SimPlatform>(sim), "CCA_DEVICE=sim: simulated GPU"};
  if (kind == "auto" || kind.empty()) {
    return {std::make_unique<SimPlatform>(sim), std::string("auto: no usable GPU backend (") + kNoCudaBackend +
                                                    "), so the simulated GPU is used"};
  }
  if (kind == "cuda") throw DeviceError(std::string("CCA_DEVICE=cuda: ") + kNoCudaBackend);
  throw InvalidArgumentError("CCA_DEVICE must be auto, sim or cuda, got '" + kind + "'", "ERR_CCA_INVALID_CONFIG");
}

}  // namespace cca
