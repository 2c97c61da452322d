#include "trace_ring.h"

namespace cca {

namespace {
const char* const kNames[] = {"alloc",        "free_requested", "free_completed", "segment_alloc", "segment_free",
                              "segment_map",  "segment_unmap",  "snapshot",       "oom",
                              "annotate"};
}

const char* trace_action_name(TraceAction action) {
  const auto i = static_cast<std::size_t>(action);
  return i < static_cast<std::size_t>(TraceAction::kNumActions) ? kNames[i] : "unknown";
}

void TraceRing::set_max_entries(std::size_t n) {
  if (n < 1) n = 1;
  if (n < entries_.size()) {
    std::vector<TraceEntry> newest;
    newest.reserve(n);
    const std::size_t skip = entries_.size() - n;
    std::size_t i = 0;
    for_each([&](const TraceEntry& e) {
      if (i++ >= skip) newest.push_back(e);
    });
    entries_ = std::move(newest);
    next_ = 0;
    overflowed_ = true;
  } else if (entries_.size() == max_ && n > max_ && next_ != 0) {
    // Unroll a full ring so that appending continues in time order.
    std::vector<TraceEntry> ordered;
    ordered.reserve(entries_.size());
    for_each([&](const TraceEntry& e) { ordered.push_back(e); });
    entries_ = std::move(ordered);
    next_ = 0;
  }
  max_ = n;
}

void TraceRing::clear() {
  std::vector<TraceEntry>().swap(entries_);
  next_ = 0;
  overflowed_ = false;
}

}  // namespace cca
