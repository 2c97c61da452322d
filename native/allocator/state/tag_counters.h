// Live memory per (owner, tag): what memory.memory_stats_by_tag() reports, so "what is this
// memory for?" has an answer without a snapshot. Kept by the ledger at the two transitions
// that change allocated bytes (hand out, free requested), only for tagged blocks: an
// untagged cached pair pays one test each way. The owner is part of the key because tag
// ids are interned per JS environment (a worker's tag 3 is not the main thread's); native
// clients' tags (from 2^31) are process-wide.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace cca {

struct TagCounters {
  std::int64_t allocated = 0;  // block sizes of live allocations, as allocated_bytes
  std::int64_t allocated_peak = 0;
  std::int64_t requested = 0;  // what their callers asked for
  std::int64_t requested_peak = 0;
  std::int64_t allocations = 0;
  std::int64_t allocations_peak = 0;
};

struct TagStat {
  std::uint32_t owner = 0;
  std::uint32_t tag = 0;
  TagCounters counters;
};

class TagLedger {
 public:
  TagLedger() = default;
  // Not copyable: a copy would share the memo below with this one's map.
  TagLedger(const TagLedger&) = delete;
  TagLedger& operator=(const TagLedger&) = delete;

  void allocated(std::uint32_t owner, std::uint32_t tag, std::int64_t size, std::int64_t requested) {
    TagCounters& c = at(key(owner, tag));
    c.allocated += size;
    c.requested += requested;
    ++c.allocations;
    if (c.allocated > c.allocated_peak) c.allocated_peak = c.allocated;
    if (c.requested > c.requested_peak) c.requested_peak = c.requested;
    if (c.allocations > c.allocations_peak) c.allocations_peak = c.allocations;
  }
  void freed(std::uint32_t owner, std::uint32_t tag, std::int64_t size, std::int64_t requested) {
    TagCounters& c = at(key(owner, tag));
    c.allocated -= size;
    c.requested -= requested;
    --c.allocations;
  }
  void reset_peak() {
    for (auto& [k, c] : counters_) {
      c.allocated_peak = c.allocated;
      c.requested_peak = c.requested;
      c.allocations_peak = c.allocations;
    }
  }
  std::vector<TagStat> read() const {
    std::vector<TagStat> out;
    out.reserve(counters_.size());
    for (const auto& [k, c] : counters_) {
      out.push_back(TagStat{static_cast<std::uint32_t>(k >> 32), static_cast<std::uint32_t>(k), c});
    }
    return out;
  }
  // The counters' key for one (owner, tag).
  static std::uint64_t key(std::uint32_t owner, std::uint32_t tag) { return (std::uint64_t{owner} << 32) | tag; }

 private:
  // The last key's counters: a native client (or a JS label) allocates and frees under one
  // tag in a row, and the map's hash lookup cost its pair ~70 instructions. An entry, once
  // made, stays at its address (entries are never erased; a node map keeps them in place
  // through rehashing).
  TagCounters& at(std::uint64_t k) {
    if (last_ == nullptr || k != last_key_) {
      last_ = &counters_[k];
      last_key_ = k;
    }
    return *last_;
  }
  std::unordered_map<std::uint64_t, TagCounters> counters_;
  std::uint64_t last_key_ = 0;
  TagCounters* last_ = nullptr;
};

}  // namespace cca
