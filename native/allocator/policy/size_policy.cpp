#include "size_policy.h"

namespace cca {

namespace {
int floor_log2(std::size_t v) { return v == 0 ? -1 : 63 - __builtin_clzll(static_cast<unsigned long long>(v)); }
}  // namespace

std::size_t roundup_divisions_for(std::size_t size, const AllocatorConfig& cfg) {
  int idx = size == 0 ? 0 : floor_log2(size) - 20;
  if (idx < 0) idx = 0;
  if (idx > kRoundUpPowerOfTwoIntervals - 1) idx = kRoundUpPowerOfTwoIntervals - 1;
  return cfg.roundup_power2_divisions[static_cast<std::size_t>(idx)];
}

std::size_t roundup_power2_next_division(std::size_t size, std::size_t divisions) {
  if ((size & (size - 1)) == 0) return size;
  int log_div = floor_log2(divisions);
  std::size_t floor2 = std::size_t{1} << floor_log2(size);
  std::size_t step = floor2 >> log_div;
  if (step == 0) return floor2 << 1;
  return (size + step - 1) / step * step;
}

std::size_t round_size(std::size_t size, const AllocatorConfig& cfg) {
  if (size < kMinBlockSize) return kMinBlockSize;
  std::size_t divisions = roundup_divisions_for(size, cfg);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return roundup_power2_next_division(size, divisions);
  }
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t allocation_size(std::size_t rounded, const AllocatorConfig& cfg) {
  if (is_small_request(rounded)) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return cfg.large_segment_size;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

bool should_split(std::size_t block_size, std::size_t rounded, bool small_pool,
                  const AllocatorConfig& cfg) {
  std::size_t remaining = block_size - rounded;
  if (small_pool) return remaining >= kMinBlockSize;
  return !is_oversize(rounded, cfg) && remaining > kSmallSize;
}

const Block* best_expandable_fit(const BlockPool& pool, const Block* found, const AllocatorConfig& cfg) {
  if (cfg.expandable_segments) {
    auto expandable_size = [](const Block* b) {
      return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
    };
    const Block* next = pool.next_after(found);
    while (found->expandable && next != nullptr && expandable_size(next) < expandable_size(found)) {
      found = next;
      next = pool.next_after(found);
    }
    return found;
  }
  do {
    found = pool.next_after(found);
  } while (found != nullptr && found->expandable);
  return found;
}

}  // namespace cca
