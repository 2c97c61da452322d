#include "driver_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace cca {

DriverLibrary::DriverLibrary() {
  const char* override_path = std::getenv("CCA_LIBCUDA_PATH");
  path_ = override_path && *override_path ? override_path : "libcuda.so.1";
  handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    error_ = "no CUDA driver: " + path_ + " could not be loaded (" + (why ? why : "unknown error") +
             "); use the sim backend (CCA_DEVICE=sim)";
    return;
  }
  std::string missing;
  auto resolve = [&](auto& slot, const char* name, bool required) {
    void* sym = dlsym(handle_, name);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(sym);
    if (sym == nullptr && required) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
#define CCA_REQUIRED(name) resolve(api_.name, #name, true)
#define CCA_OPTIONAL(name) resolve(api_.name, #name, false)
  CCA_REQUIRED(cuInit);
  CCA_REQUIRED(cuDriverGetVersion);
  CCA_REQUIRED(cuGetErrorName);
  CCA_REQUIRED(cuGetErrorString);
  CCA_REQUIRED(cuDeviceGetCount);
  CCA_REQUIRED(cuDeviceGet);
  CCA_REQUIRED(cuDeviceGetName);
  CCA_REQUIRED(cuDeviceTotalMem_v2);
  CCA_REQUIRED(cuDeviceGetAttribute);
  CCA_REQUIRED(cuDevicePrimaryCtxRetain);
  CCA_REQUIRED(cuDevicePrimaryCtxRelease_v2);
  CCA_REQUIRED(cuCtxSetCurrent);
  CCA_REQUIRED(cuCtxGetCurrent);
  CCA_REQUIRED(cuCtxSynchronize);
  CCA_REQUIRED(cuMemAlloc_v2);
  CCA_REQUIRED(cuMemFree_v2);
  CCA_REQUIRED(cuMemGetInfo_v2);
  CCA_REQUIRED(cuStreamCreate);
  CCA_REQUIRED(cuStreamDestroy_v2);
  CCA_REQUIRED(cuStreamSynchronize);
  CCA_REQUIRED(cuStreamQuery);
  CCA_REQUIRED(cuEventCreate);
  CCA_REQUIRED(cuEventRecord);
  CCA_REQUIRED(cuEventQuery);
  CCA_REQUIRED(cuEventSynchronize);
  CCA_REQUIRED(cuEventDestroy_v2);
  CCA_REQUIRED(cuMemcpyHtoDAsync_v2);
  CCA_REQUIRED(cuMemcpyDtoHAsync_v2);
  CCA_REQUIRED(cuMemsetD8Async);
  CCA_REQUIRED(cuEventElapsedTime);
  CCA_REQUIRED(cuMemHostAlloc);
  CCA_REQUIRED(cuMemFreeHost);
  CCA_REQUIRED(cuMemcpyDtoDAsync_v2);
  CCA_REQUIRED(cuStreamWaitEvent);
  CCA_REQUIRED(cuLaunchHostFunc);
  CCA_REQUIRED(cuModuleLoadData);
  CCA_REQUIRED(cuModuleUnload);
  CCA_REQUIRED(cuModuleGetFunction);
  CCA_REQUIRED(cuFuncGetAttribute);
  CCA_REQUIRED(cuFuncSetAttribute);
  CCA_REQUIRED(cuLaunchKernel);
  CCA_OPTIONAL(cuFuncGetParamInfo);
  CCA_OPTIONAL(cuIpcGetMemHandle);
  CCA_OPTIONAL(cuIpcOpenMemHandle_v2);
  CCA_OPTIONAL(cuIpcCloseMemHandle);
  CCA_OPTIONAL(cuMemAllocAsync);
  CCA_OPTIONAL(cuMemFreeAsync);
  CCA_OPTIONAL(cuMemAddressReserve);
  CCA_OPTIONAL(cuMemAddressFree);
  CCA_OPTIONAL(cuMemCreate);
  CCA_OPTIONAL(cuMemRelease);
  CCA_OPTIONAL(cuMemMap);
  CCA_OPTIONAL(cuMemUnmap);
  CCA_OPTIONAL(cuMemSetAccess);
  CCA_OPTIONAL(cuMemGetAllocationGranularity);
  CCA_OPTIONAL(cuStreamBeginCapture_v2);
  CCA_OPTIONAL(cuStreamEndCapture);
  CCA_OPTIONAL(cuStreamGetCaptureInfo_v3);
  CCA_OPTIONAL(cuStreamGetCaptureInfo_v2);
  CCA_OPTIONAL(cuThreadExchangeStreamCaptureMode);
  CCA_OPTIONAL(cuGraphInstantiateWithFlags);
  CCA_OPTIONAL(cuGraphLaunch);
  CCA_OPTIONAL(cuGraphUpload);
  CCA_OPTIONAL(cuGraphExecDestroy);
  CCA_OPTIONAL(cuGraphDestroy);
  CCA_OPTIONAL(cuGraphGetNodes);
#undef CCA_REQUIRED
#undef CCA_OPTIONAL
  if (!missing.empty()) {
    error_ = "the CUDA driver at " + path_ + " lacks " + missing + " (driver too old?); use the sim backend";
    return;
  }
  cu::CUresult r = api_.cuInit(0);
  if (r != cu::CUDA_SUCCESS) {
    error_ = "cuInit failed: " + describe(r) + "; use the sim backend (CCA_DEVICE=sim)";
    return;
  }
  ok_ = true;
}

const DriverLibrary& DriverLibrary::instance() {
  // Intentionally never closed: the driver outlives every allocator, and dlclose of
  // libcuda at exit races with its own teardown.
  static const DriverLibrary* lib = new DriverLibrary();
  return *lib;
}

std::string DriverLibrary::describe(cu::CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.cuGetErrorName) api_.cuGetErrorName(r, &name);
  if (api_.cuGetErrorString) api_.cuGetErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(r);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

}  // namespace cca
