// What one owner of allocations (a native client of the C ABI, by name) holds on a device,
// counted by that device's allocator under its own lock as it hands out and frees: so the
// figures cost no atomic operation on the hot path and always agree with the allocator's.
#pragma once
#include <cstdint>

namespace cca {

struct OwnerCounters {
  std::int64_t bytes = 0;  // requested sizes of live allocations
  std::int64_t bytes_peak = 0;
  std::int64_t allocations = 0;
  std::int64_t allocations_peak = 0;
  std::uint64_t num_allocs = 0;
  std::uint64_t num_frees = 0;

  void on_malloc(std::uint64_t requested) {
    bytes += static_cast<std::int64_t>(requested);
    ++allocations;
    ++num_allocs;
    if (bytes > bytes_peak) bytes_peak = bytes;
    if (allocations > allocations_peak) allocations_peak = allocations;
  }
  void on_free(std::uint64_t requested) {
    bytes -= static_cast<std::int64_t>(requested);
    --allocations;
    ++num_frees;
  }
};

}  // namespace cca
