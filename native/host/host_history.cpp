#include "host_history.h"

#include "../common/clock.h"

namespace cca {

const char* const* HostHistory::action_names() {
  static const char* const kNames[] = {"segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<std::size_t>(HostAction::kCount), "one name per action");
  return kNames;
}

void HostHistory::set(const HostHistoryOptions& options, bool clear) {
  if (options.enabled) {
    // A smaller ring keeps the newest entries.
    std::vector<HostTraceEntry> kept = entries();
    if (kept.size() > options.max_entries) kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(options.max_entries));
    ring_ = std::move(kept);
    next_ = 0;
    options_ = options;
  } else {
    options_ = HostHistoryOptions{};
  }
  if (clear || !options.enabled) {
    ring_.clear();
    ring_.shrink_to_fit();
    next_ = 0;
  }
}

void HostHistory::record(HostAction action, const void* addr, std::size_t size, std::uint32_t stack) {
  if (!options_.enabled || options_.max_entries == 0) return;
  const HostTraceEntry e{reinterpret_cast<std::uintptr_t>(addr), size, clock_ticks(), stack, action};
  if (ring_.size() < options_.max_entries) {
    ring_.push_back(e);
    return;
  }
  ring_[next_] = e;
  next_ = next_ + 1 == ring_.size() ? 0 : next_ + 1;
}

std::vector<HostTraceEntry> HostHistory::entries() const {
  std::vector<HostTraceEntry> out;
  out.reserve(ring_.size());
  out.insert(out.end(), ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

void HostHistory::append_stacks(std::vector<std::uint32_t>& ids) const {
  for (const HostTraceEntry& e : ring_) {
    if (e.stack != 0) ids.push_back(e.stack);
  }
}

}  // namespace cca
