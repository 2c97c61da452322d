#include "runtime.h"
#include "../common/hot.h"

namespace cca {

Runtime::Runtime(std::unique_ptr<Platform> platform, const AllocatorConfig& config, std::string note)
    : platform_(std::move(platform)), note_(std::move(note)), config_(config) {
  std::vector<Device*> devices;
  for (int i = 0; i < platform_->device_count(); ++i) devices.push_back(&platform_->device(i));
  host_ = std::make_unique<HostCachingAllocator>(devices);
  for (int i = 0; i < platform_->device_count(); ++i) {
    allocators_.push_back(std::make_unique<DeviceCachingAllocator>(platform_->device(i), config));
    computes_.push_back(std::make_unique<DeviceCompute>(platform_->device(i), platform_->kernel_engine(i),
                                                        platform_->copy_engine(i), *allocators_.back(), *host_));
    graphs_.push_back(std::make_unique<DeviceGraphs>(platform_->device(i), platform_->graph_engine(i), *allocators_.back()));
    blas_.push_back(std::make_unique<DeviceBlas>(platform_->device(i), platform_->blas_engine(i), *allocators_.back()));
  }
}

Runtime::~Runtime() {
  blas_.clear();        // workspaces, graphs, then modules and events, go before the memory their work used
  graphs_.clear();
  computes_.clear();
  host_.reset();
  allocators_.clear();  // allocators return their segments before the devices go away
  platform_.reset();
}

void Runtime::no_such_device(int device) const {
  const int count = device_count();
  throw InvalidArgumentError("device " + std::to_string(device) + " does not exist: there are " +
                                 std::to_string(count) + " devices (0.." + std::to_string(count - 1) + ")",
                             "ERR_CCA_INVALID_DEVICE");
}

DeviceCompute& Runtime::compute(int device) {
  if (device < 0 || device >= device_count()) no_such_device(device);
  return *computes_[static_cast<std::size_t>(device)];
}

DeviceGraphs& Runtime::graphs(int device) {
  if (device < 0 || device >= device_count()) no_such_device(device);
  return *graphs_[static_cast<std::size_t>(device)];
}

DeviceBlas& Runtime::blas(int device) {
  if (device < 0 || device >= device_count()) no_such_device(device);
  return *blas_[static_cast<std::size_t>(device)];
}

void Runtime::set_config(const AllocatorConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  config_ = config;
  for (auto& a : allocators_) a->set_config(config);
}

AllocatorConfig Runtime::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

}  // namespace cca
