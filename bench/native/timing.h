// The benchmarks' timer: nanoseconds per call of `body(i)` over one run of `iterations`
// calls, and the median of `runs` such runs.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace bench {

template <class F>
double ns_per_op(std::size_t iterations, F&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < iterations; ++i) body(i);
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iterations);
}

template <class F>
double median_ns_per_op(std::size_t iterations, F&& body, int runs = 7) {
  std::vector<double> ns;
  for (int r = 0; r < runs; ++r) ns.push_back(ns_per_op(iterations, body));
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace bench
