// One statistic as PyTorch's allocators report it (current/peak/allocated/freed), shared
// by the device allocator's stats and the host allocator's.
#pragma once
#include <cstdint>

namespace cca {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  // PyTorch's increase(delta) for delta > 0, decrease(-delta) below 0; without branches,
  // since an alloc+free pair alternates the sign.
  void apply(std::int64_t delta) {
    current += delta;
    peak = current > peak ? current : peak;
    allocated += delta > 0 ? delta : 0;
    freed += delta < 0 ? -delta : 0;
  }
};

}  // namespace cca
