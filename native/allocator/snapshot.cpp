// History settings and snapshots of one device's allocator.
#include <algorithm>

#include "caching_allocator.h"

namespace cca {

void DeviceCachingAllocator::set_history(const HistoryOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  history_ = options;
  history_.clear_history = false;
  if (!options.enabled) {
    history_.context = RecordContext::kNever;
    ring_.clear();
    return;
  }
  if (options.clear_history) ring_.clear();
  ring_.set_max_entries(options.max_entries);
}

HistoryOptions DeviceCachingAllocator::history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

std::size_t DeviceCachingAllocator::history_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.capacity_bytes();
}

std::uint64_t DeviceCachingAllocator::next_history_seq() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++history_seq_;
}

DeviceSnapshot DeviceCachingAllocator::snapshot(std::uint32_t pool_filter, bool include_traces) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceSnapshot snap;
  snap.device = device_.index();
  snap.segments.reserve(segments_.size());
  std::size_t active_bytes = 0;
  for (const auto& [ptr, segment] : segments_) {
    const std::uint32_t pool_id = segment->pool->pool_id;
    if (pool_filter != 0 && pool_id != pool_filter) continue;
    // One snapshot segment per segment, or per contiguous mapped range of an expandable
    // one (as PyTorch reports them).
    SnapshotSegment s;
    bool open = false;
    auto close = [&] {
      if (!open) return;
      s.block_count = snap.blocks.size() - s.first_block;
      active_bytes += s.active_size;
      snap.segments.push_back(s);
      open = false;
    };
    for (const Block* b = segment->head; b != nullptr; b = b->next) {
      if (!b->mapped) {
        close();
        continue;
      }
      if (!open) {
        s = SnapshotSegment{};
        s.address = b->ptr;
        s.stream = segment->stream;
        s.is_small = segment->pool->is_small;
        s.is_expandable = segment->expandable;
        s.pool = pool_id;
        s.stack = segment->stack;
        s.first_block = snap.blocks.size();
        open = true;
      }
      s.total_size += b->size;
      SnapshotBlock sb;
      sb.address = b->ptr;
      sb.size = b->size;
      sb.requested_size = b->requested_size;
      sb.state = b->state;
      if (b->state != BlockState::kFree) {
        sb.stack = b->alloc_stack;
        sb.tag = b->tag;
        s.active_size += b->size;
        s.requested_size += b->requested_size;
        if (b->state == BlockState::kAllocated) s.allocated_size += b->size;
      }
      snap.blocks.push_back(sb);
    }
    close();
  }
  std::sort(snap.segments.begin(), snap.segments.end(),
            [](const SnapshotSegment& a, const SnapshotSegment& b) { return a.address < b.address; });
  // PyTorch records every snapshot in the history, with the device's active bytes.
  record_event(TraceAction::kSnapshot, 0, active_bytes, 0, 0);
  snap.trace_max_entries = history_.enabled ? ring_.max_entries() : 0;
  snap.trace_overflowed = ring_.overflowed();
  if (include_traces) {
    snap.traces_included = true;
    snap.traces.reserve(ring_.size());
    ring_.for_each([&](const TraceEntry& e) { snap.traces.push_back(e); });
  }
  return snap;
}

std::vector<std::uint32_t> DeviceCachingAllocator::referenced_stacks() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::uint32_t> ids;
  for (const auto& [ptr, segment] : segments_) {
    if (segment->stack) ids.push_back(segment->stack);
    for (const Block* b = segment->head; b != nullptr; b = b->next) {
      if (b->state != BlockState::kFree && b->alloc_stack) ids.push_back(b->alloc_stack);
    }
  }
  ring_.for_each([&](const TraceEntry& e) {
    if (e.stack) ids.push_back(e.stack);
  });
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace cca
