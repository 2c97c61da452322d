"""PyTorch's own C++ cached pair, in the shape of our core benchmark, on the GPU at hand.

A C++ extension (torch.utils.cpp_extension.load_inline) calls c10's CUDACachingAllocator
directly, with no Python in the timed loop: 2N blocks of 512 B..32 KiB on the current stream,
every other one freed (bench/native/cache_setup.h), then raw_alloc_with_stream(4096) +
raw_delete, 2M pairs, median of 7 runs; N = 16, 1,000, 100,000, each in a fresh cache. The
same shape as the second table of build-tests/cca_gpu_bench, which run-on-gpu.sh runs in the
same call, so the two are one host's figures.

Prints one JSON object. Needs torch with CUDA and a compiler (ninja, g++); otherwise prints why.
"""
import json
import os
import sys
import time

from cuda_torch import cuda_torch

SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <chrono>
#include <vector>

namespace alloc = c10::cuda::CUDACachingAllocator;

double pair_ns(int64_t n, int64_t iterations, int64_t runs) {
  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  std::vector<void*> ptrs;
  for (int64_t i = 0; i < 2 * n; ++i) ptrs.push_back(alloc::raw_alloc_with_stream(512 * (1 + (i / 2) % 64), stream));
  for (size_t i = 0; i < ptrs.size(); i += 2) alloc::raw_delete(ptrs[i]);
  alloc::raw_delete(alloc::raw_alloc_with_stream(4096, stream));
  std::vector<double> ns;
  for (int64_t r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iterations; ++i) alloc::raw_delete(alloc::raw_alloc_with_stream(4096, stream));
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  }
  for (size_t i = 1; i < ptrs.size(); i += 2) alloc::raw_delete(ptrs[i]);
  alloc::emptyCache();
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}
"""


def main() -> None:
    torch = cuda_torch()
    if torch is None:
        return
    from torch.utils.cpp_extension import load_inline

    t0 = time.perf_counter()
    ext = load_inline(
        name="cca_pytorch_pair",
        cpp_sources=SOURCE,
        functions=["pair_ns"],
        with_cuda=True,
        extra_cflags=["-O2"],
        build_directory=os.environ.get("CCA_TORCH_EXT_DIR") or None,
        verbose=False,
    )
    out = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "build_s": round(time.perf_counter() - t0, 1),
        "shape": "2N blocks 512 B..32 KiB, every other freed; 4096-byte raw_alloc_with_stream + raw_delete",
        "pair_ns": {},
    }
    torch.cuda.init()
    for n in [16, 1000, 100000]:
        out["pair_ns"][str(n)] = round(ext.pair_ns(n, 2000000, 7), 1)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
