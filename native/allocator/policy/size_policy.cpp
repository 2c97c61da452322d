#include "size_policy.h"

namespace cca {

namespace {
int floor_log2(Bytes v) { return v == 0 ? -1 : 63 - __builtin_clzll(static_cast<unsigned long long>(v)); }
}  // namespace

Bytes roundup_power2_next_division(Bytes size, Bytes divisions) {
  if ((size & (size - 1)) == 0) return size;
  int log_div = floor_log2(divisions);
  Bytes floor2 = Bytes{1} << floor_log2(size);
  Bytes step = floor2 >> log_div;
  if (step == 0) return floor2 << 1;
  return (size + step - 1) / step * step;
}

Bytes allocation_size(Bytes rounded, const AllocatorConfig& cfg) {
  if (is_small_request(rounded)) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return cfg.large_segment_size;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
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
