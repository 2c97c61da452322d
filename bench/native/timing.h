// The benchmarks' timer: nanoseconds per call of `body`, the median of `runs` runs of
// `iterations` calls each.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace bench {

template <class F>
double median_ns_per_op(std::size_t iterations, F&& body, int runs = 7) {
  std::vector<double> ns;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iterations; ++i) body(i);
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iterations));
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace bench
