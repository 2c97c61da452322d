// Kernel launch cost on a real GPU: a bare cuLaunchKernel loop (the floor any wrapper
// stands on) and the same launches through DeviceCompute (handle lookup, shape check, the
// allocator's buffer check and record, one parameter buffer). Each figure is ns per launch,
// median of 7 runs of 20 batches of 1,000 launches with a stream synchronize after each
// batch, so that the queue never fills. Usage: cca_launch_bench KERNELS.cubin (the noop
// kernel of test/fixtures/kernels/kernels.cu). bench/js-launch.mjs runs it beside the JS
// launch and prints the ratio. Without a GPU it says why and exits 0.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "device/cuda/cuda_device.h"
#include "runtime/runtime.h"
#include "timing.h"

using namespace cca;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cca_launch_bench KERNELS.cubin\n");
    return 2;
  }
  CudaProbe probe = probe_cuda();
  if (!probe.available) {
    std::printf("launch_bench skipped: %s\n", probe.reason.c_str());
    return 0;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  image.push_back(0);  // harmless after CUBIN; ends PTX text
  Runtime runtime(CudaPlatform::open(), AllocatorConfig{}, "bench");
  DeviceCachingAllocator& alloc = runtime.allocator(0);
  DeviceCompute& compute = runtime.compute(0);
  const StreamId stream = alloc.create_stream();
  const DevicePtr x = alloc.malloc(4096, stream);
  const ModuleId module = compute.load_module(image.data(), image.size());
  const LoadedFunction noop = compute.get_function(module, "noop");

  const auto& api = DriverLibrary::instance().api();
  auto* cu_stream = reinterpret_cast<cu::CUstream>(static_cast<std::uintptr_t>(stream));
  auto* cu_function = reinterpret_cast<cu::CUfunction>(static_cast<std::uintptr_t>(noop.id));
  unsigned long long x_arg = x;
  unsigned n_arg = 0;
  void* args[] = {&x_arg, &n_arg};
  const std::size_t batch = 1000;
  auto bare = [&](std::size_t i) {
    api.cuLaunchKernel(cu_function, 1, 1, 1, 32, 1, 1, 0, cu_stream, args, nullptr);
    if (i % batch == batch - 1) api.cuStreamSynchronize(cu_stream);
  };
  unsigned char params[16] = {0};
  std::memcpy(params, &x_arg, 8);
  LaunchShape shape;
  shape.block[0] = 32;
  const BufferUse use{x, 0, 4096};
  auto ours = [&](std::size_t i) {
    compute.launch(noop.id, shape, stream, params, 12, &use, 1, true);
    if (i % batch == batch - 1) api.cuStreamSynchronize(cu_stream);
  };
  bare(batch - 1);
  ours(batch - 1);
  const double bare_ns = bench::median_ns_per_op(20 * batch, bare);
  const double ours_ns = bench::median_ns_per_op(20 * batch, ours);
  std::printf("bare cuLaunchKernel: %.1f ns per launch\n", bare_ns);
  std::printf("DeviceCompute::launch: %.1f ns per launch (%.2fx)\n", ours_ns, ours_ns / bare_ns);
  alloc.free(x);
  return 0;
}
