// Pinned copy bandwidth on a real GPU, the floor: cuMemcpyHtoDAsync / cuMemcpyDtoHAsync of
// 64 MiB between cuMemHostAlloc memory and cuMemAlloc memory on one stream, 10 copies then a
// synchronize, median of 7 runs; prints GB/s each way. bench/js-copy.mjs runs it beside the
// same copies through copyFromAsync / copyToAsync. Without a GPU it says why and exits 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "device/cuda/cuda_device.h"

using namespace cca;

int main() {
  CudaProbe probe = probe_cuda();
  if (!probe.available) {
    std::printf("copy_bench skipped: %s\n", probe.reason.c_str());
    return 0;
  }
  auto platform = CudaPlatform::open();
  CudaDevice& dev = platform->cuda_device(0);
  const auto& api = DriverLibrary::instance().api();
  const std::size_t bytes = std::size_t{64} << 20;
  DevicePtr d = 0;
  if (dev.malloc(&d, bytes) != Status::kOk) return 1;  // also makes the context current
  void* host = nullptr;
  if (api.cuMemHostAlloc(&host, bytes, 1) != cu::CUDA_SUCCESS) return 1;
  std::fill(static_cast<char*>(host), static_cast<char*>(host) + bytes, 1);
  StreamId stream = 0;
  dev.stream_create(&stream);
  auto s = reinterpret_cast<cu::CUstream>(static_cast<std::uintptr_t>(stream));
  auto gbps = [&](bool to_device) {
    std::vector<double> runs;
    for (int r = 0; r < 7; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) {
        if (to_device) api.cuMemcpyHtoDAsync_v2(d, host, bytes, s);
        else api.cuMemcpyDtoHAsync_v2(host, d, bytes, s);
      }
      api.cuStreamSynchronize(s);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runs.push_back(10.0 * static_cast<double>(bytes) / secs / 1e9);
    }
    std::sort(runs.begin(), runs.end());
    return runs[3];
  };
  gbps(true);
  const double htod = gbps(true);
  const double dtoh = gbps(false);
  std::printf("bare cuMemcpyHtoDAsync: %.2f GB/s\nbare cuMemcpyDtoHAsync: %.2f GB/s\n", htod, dtoh);
  api.cuMemFreeHost(host);
  dev.stream_destroy(stream);
  dev.free(d);
  return 0;
}
