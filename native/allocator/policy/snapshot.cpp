// Snapshots of one device's allocator: its segments and blocks as data, and on request the
// history ring, read under the lock.
#include <algorithm>

#include "caching_allocator.h"

namespace cca {

namespace {

class VectorSink : public TraceSink {
 public:
  explicit VectorSink(std::vector<TraceEntry>& out) : out_(out) {}
  void reserve(std::size_t n) override { out_.reserve(n); }
  void add(const TraceEntry& e) override { out_.push_back(e); }

 private:
  std::vector<TraceEntry>& out_;
};

}  // namespace

DeviceSnapshot DeviceCachingAllocator::snapshot(std::uint32_t pool_filter, bool include_traces) {
  std::vector<TraceEntry> traces;
  VectorSink sink(traces);
  DeviceSnapshot snap = snapshot(pool_filter, include_traces ? &sink : nullptr);
  snap.traces = std::move(traces);
  return snap;
}

DeviceSnapshot DeviceCachingAllocator::snapshot(std::uint32_t pool_filter, TraceSink* traces) {
  std::lock_guard<FutexMutex> lock(mu_);
  DeviceSnapshot snap;
  snap.device = device_.index();
  snap.segments.reserve(ledger_.segment_count());
  Bytes active_bytes = 0;
  ledger_.for_each_segment([&](const Segment& segment) {
    const std::uint32_t pool_id = segment.pool->pool_id;
    if (pool_filter != 0 && pool_id != pool_filter) return;
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
    for (const Block* b = segment.head; b != nullptr; b = b->next) {
      if (!b->mapped) {
        close();
        continue;
      }
      if (!open) {
        s = SnapshotSegment{};
        s.address = b->ptr;
        s.stream = segment.stream;
        s.is_small = segment.pool->is_small;
        s.is_expandable = segment.expandable;
        s.pool = pool_id;
        s.stack = segment.stack;
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
  });
  std::sort(snap.segments.begin(), snap.segments.end(),
            [](const SnapshotSegment& a, const SnapshotSegment& b) { return a.address < b.address; });
  const TraceRing& ring = ledger_.ring();
  snap.trace_max_entries = ledger_.history().enabled ? ring.max_entries() : 0;
  snap.trace_overflowed = ring.overflowed();
  if (traces != nullptr) {
    snap.traces_included = true;
    traces->reserve(ring.size());
    ring.for_each([traces](const TraceEntry& e) { traces->add(e); });
  }
  // After the copy, as PyTorch's NativeCachingAllocator::snapshot does (the trace first, then
  // DeviceCachingAllocator::snapshot, which records SNAPSHOT last): the trace a snapshot
  // returns ends with the last real event, and its own `snapshot` entry is in the next one.
  ledger_.snapshot_taken(active_bytes);
  return snap;
}

}  // namespace cca
