// On a real GPU: the cached alloc+free pair of our allocator against the raw driver
// (cuMemAlloc + cuMemFree) and the driver's stream-ordered pool (cuMemAllocAsync +
// cuMemFreeAsync), same sizes, same run. Prints ns per pair and ratios. Without a GPU it
// says why and exits 0 (CCA_LIBCUDA_PATH can point it at the fake driver to check that it
// runs; such figures mean nothing and are not recorded).
//
// Second table: the core benchmark's shape (bench/native/cache_setup.h: N free blocks of
// 512 B..32 KiB between live ones, then 4096-byte pairs) on the cuda backend and on the sim
// backend in this one process, so "cuda vs sim" compares one host's figures; PyTorch's own
// C++ pair in the same shape is bench/gpu/pytorch_cpp_pair.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "allocator/policy/caching_allocator.h"
#include "device/cuda/cuda_device.h"
#include "device/sim/sim_device.h"
#include "cache_setup.h"
#include "timing.h"

using namespace cca;

namespace {
// Median of 5 runs; the index argument of the shared timer is not needed here.
template <class F>
double ns_per(std::size_t n, F&& f) {
  return bench::median_ns_per_op(n, [&](std::size_t) { f(); }, 5);
}
}  // namespace

// The pair's loop alone, kept out of line so callgrind can count inside it
// (bench/backend-instructions.mjs: `--toggle-collect=*pair_loop*`).
[[gnu::noinline]] void pair_loop(DeviceCachingAllocator& a, std::size_t n, StreamId stream = 0,
                                std::size_t size = 4096) {
  for (std::size_t i = 0; i < n; ++i) a.free(a.malloc(size, stream));
}

// `pairs cuda|sim BLOCKS N [stream] [SIZE]`: N cached pairs of SIZE bytes (4096) over BLOCKS
// cached blocks on one backend, for an instruction count (on the fake driver here: no GPU
// needed, no time printed); with `stream`, on a stream the allocator created, as the first
// table's pairs are (with BLOCKS 0, the first table's pair of that size).
int pairs_only(const char* backend, std::size_t blocks, std::size_t n, bool on_stream, std::size_t size) {
  const bool cuda = std::string(backend) == "cuda";
  std::unique_ptr<CudaPlatform> platform;
  std::unique_ptr<SimPlatform> sim;
  if (cuda) {
    CudaProbe probe = probe_cuda();
    if (!probe.available) {
      std::fprintf(stderr, "no CUDA driver: %s\n", probe.reason.c_str());
      return 1;
    }
    platform = CudaPlatform::open();
  } else {
    sim = std::make_unique<SimPlatform>(SimOptions{1, std::size_t{64} << 30});
  }
  DeviceCachingAllocator a(cuda ? static_cast<Device&>(platform->cuda_device(0)) : sim->device(0), AllocatorConfig{});
  bench::fill_cache(a, blocks);
  const StreamId stream = on_stream ? a.create_stream() : 0;
  pair_loop(a, 1000, stream, size);  // warm
  pair_loop(a, n, stream, size);
  a.empty_cache();
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 5 && argc <= 7 && std::string(argv[1]) == "pairs") {
    const bool on_stream = argc >= 6 && std::string(argv[5]) == "stream";
    const int size_arg = on_stream ? 6 : 5;
    const std::size_t size = argc > size_arg ? std::strtoull(argv[size_arg], nullptr, 10) : 4096;
    if (size == 0 || argc > size_arg + 1) {
      std::fprintf(stderr, "usage: pairs cuda|sim BLOCKS N [stream] [SIZE]: SIZE a positive number of bytes\n");
      return 2;
    }
    return pairs_only(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10), on_stream,
                      size);
  }
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

  std::printf("\ncached 4096-byte pair over N cached blocks (median of 7 runs of 2M pairs)\n");
  std::printf("%-14s %12s %12s %10s\n", "cached blocks", "cuda (ns)", "sim (ns)", "cuda/sim");
  for (std::size_t n : {std::size_t{16}, std::size_t{1000}, std::size_t{100000}}) {
    DeviceCachingAllocator on_gpu(dev, AllocatorConfig{});
    bench::fill_cache(on_gpu, n);
    SimPlatform sim(SimOptions{1, std::size_t{64} << 30});
    DeviceCachingAllocator on_sim(sim.device(0), AllocatorConfig{});
    bench::fill_cache(on_sim, n);
    const double cuda_ns = bench::median_ns_per_op(2000000, [&](std::size_t) { on_gpu.free(on_gpu.malloc(4096, 0)); });
    const double sim_ns = bench::median_ns_per_op(2000000, [&](std::size_t) { on_sim.free(on_sim.malloc(4096, 0)); });
    std::printf("%-14zu %12.1f %12.1f %10.2f\n", n, cuda_ns, sim_ns, cuda_ns / sim_ns);
    on_gpu.empty_cache();
  }
  return 0;
}
