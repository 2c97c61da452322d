// libcuda.so.1 (or CCA_LIBCUDA_PATH), opened with dlopen and resolved into one function
// table the first time it is needed. A machine without the driver gets a reason, never a
// crash: the addon loads regardless and the sim backend stays available.
#pragma once
#include <string>

#include "driver_api.h"

namespace cca {

class DriverLibrary {
 public:
  // The process's driver, loaded once (thread-safe). Check ok() before api().
  static const DriverLibrary& instance();

  bool ok() const { return ok_; }
  // Why the driver cannot be used ("no CUDA driver: libcuda.so.1 not found ...").
  const std::string& error() const { return error_; }
  const cu::DriverApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code.
  std::string describe(cu::CUresult r) const;

 private:
  DriverLibrary();
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string error_;
  std::string path_;
  cu::DriverApi api_{};
};

}  // namespace cca
