// On a real GPU: the cached alloc+free pair of our allocator against the raw driver
// (cuMemAlloc + cuMemFree) and the driver's stream-ordered pool (cuMemAllocAsync +
// cuMemFreeAsync), same sizes, same run. Prints ns per pair and ratios. Without a GPU it
// says why and exits 0 (CCA_LIBCUDA_PATH can point it at the fake driver to check that it
// runs; such figures mean nothing and are not recorded).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "allocator/policy/caching_allocator.h"
#include "device/cuda/cuda_device.h"
#include "timing.h"

using namespace cca;

namespace {
// Median of 5 runs; the index argument of the shared timer is not needed here.
template <class F>
double ns_per(std::size_t n, F&& f) {
  return bench::median_ns_per_op(n, [&](std::size_t) { f(); }, 5);
}
}  // namespace

int main() {
  CudaProbe probe = probe_cuda();
  if (!probe.available) {
    std::printf("gpu_bench skipped: %s\n", probe.reason.c_str());
    return 0;
  }
  auto platform = CudaPlatform::open();
  CudaDevice& dev = platform->cuda_device(0);
  const auto& api = DriverLibrary::instance().api();
  std::printf("GPU: %s (cc %d.%d), driver %d, %s\n", dev.name().c_str(), dev.compute_capability_major(),
              dev.compute_capability_minor(), probe.driver_version, DriverLibrary::instance().path().c_str());
  DeviceCachingAllocator alloc(dev, AllocatorConfig{});
  StreamId stream = alloc.create_stream();
  DevicePtr warm = 0;
  dev.malloc(&warm, 512);  // makes the context current on this thread
  dev.free(warm);
  std::printf("%-10s %14s %14s %16s %12s %12s\n", "size", "ours (ns)", "cuMemAlloc (ns)", "cuMemAllocAsync", "raw/ours",
              "async/ours");
  for (std::size_t size : {std::size_t{512}, std::size_t{4096}, std::size_t{65536}, std::size_t{1} << 20,
                           std::size_t{4} << 20, std::size_t{32} << 20}) {
    alloc.free(alloc.malloc(size, stream));
    const double ours = ns_per(200000, [&] { alloc.free(alloc.malloc(size, stream)); });
    const double raw = ns_per(500, [&] {
      cu::CUdeviceptr p = 0;
      api.cuMemAlloc_v2(&p, size);
      api.cuMemFree_v2(p);
    });
    double async = -1;
    if (api.cuMemAllocAsync != nullptr && api.cuMemFreeAsync != nullptr) {
      auto s = reinterpret_cast<cu::CUstream>(static_cast<std::uintptr_t>(stream));
      async = ns_per(20000, [&] {
        cu::CUdeviceptr p = 0;
        api.cuMemAllocAsync(&p, size, s);
        api.cuMemFreeAsync(p, s);
      });
      api.cuStreamSynchronize(s);
    }
    std::printf("%-10zu %14.1f %14.1f %16.1f %12.1f %12.1f\n", size, ours, raw, async, raw / ours,
                async > 0 ? async / ours : 0.0);
  }
  alloc.destroy_stream(stream);
  return 0;
}
