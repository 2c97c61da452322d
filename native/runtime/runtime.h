// Everything of one process's GPUs: the platform, and per device its allocator and its
// compute (kernels, events), shared by every thread (and every worker thread's JS
// environment) of the process, except environments that took simulated devices of their
// own (binding/addon_state.h).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../allocator/policy/caching_allocator.h"
#include "../allocator/policy/config.h"
#include "../allocator/policy/facets/sync_copies.h"
#include "../compute/device_blas.h"
#include "../compute/device_compute.h"
#include "../compute/device_graphs.h"
#include "../device/device.h"
#include "../host/host_caching_allocator.h"

namespace cca {

class Runtime {
 public:
  // `note` says why this platform was chosen (e.g. "no CUDA driver: using sim").
  Runtime(std::unique_ptr<Platform> platform, const AllocatorConfig& config, std::string note);
  ~Runtime();

  int device_count() const { return static_cast<int>(allocators_.size()); }
  // Throws InvalidArgumentError (ERR_CCA_INVALID_DEVICE) for an index out of range.
  // (Inline: every allocation from JS or the C ABI asks it.)
  DeviceCachingAllocator& allocator(int device) {
    if (device < 0 || device >= device_count()) no_such_device(device);
    return *allocators_[static_cast<std::size_t>(device)];
  }
  // The same range check; the device's kernels and events.
  DeviceCompute& compute(int device);
  // The same range check; copies to and from the device's memory that wait.
  SyncCopies copies(int device) { return SyncCopies(allocator(device), platform_->copy_engine(device)); }
  // The same range check; the device's CUDA graphs.
  DeviceGraphs& graphs(int device);
  // The same range check; the device's matrix multiplication (cuBLAS).
  DeviceBlas& blas(int device);
  // Pinned host memory, one allocator for every device.
  HostCachingAllocator& host() { return *host_; }
  Platform& platform() { return *platform_; }
  const std::string& selection_note() const { return note_; }

  // Applies a parsed config to every device's allocator.
  void set_config(const AllocatorConfig& config);
  AllocatorConfig config() const;

 private:
  [[noreturn]] void no_such_device(int device) const;
  std::unique_ptr<Platform> platform_;
  std::vector<std::unique_ptr<DeviceCachingAllocator>> allocators_;
  std::unique_ptr<HostCachingAllocator> host_;
  std::vector<std::unique_ptr<DeviceCompute>> computes_;
  std::vector<std::unique_ptr<DeviceGraphs>> graphs_;
  std::vector<std::unique_ptr<DeviceBlas>> blas_;
  std::string note_;
  mutable std::mutex mu_;
  AllocatorConfig config_;
};

}  // namespace cca
