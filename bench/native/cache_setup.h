// The cached state the core's pair benchmarks start from: 2N blocks of 512 B..32 KiB (64
// sizes), every other one freed, so N free blocks wait in the pool between live ones and
// cannot merge. A template on the allocator, so the A/B (bench/native/ab) builds it against
// either core.
#pragma once
#include <cstddef>
#include <vector>

namespace bench {

template <class Allocator>
void fill_cache(Allocator& a, std::size_t n) {
  std::vector<decltype(a.malloc(512, 0))> ptrs;
  for (std::size_t i = 0; i < 2 * n; ++i) ptrs.push_back(a.malloc(512 * (1 + (i / 2) % 64), 0));
  for (std::size_t i = 0; i < ptrs.size(); i += 2) a.free(ptrs[i]);
}

}  // namespace bench
