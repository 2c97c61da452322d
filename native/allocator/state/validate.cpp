// The invariant validator. A predicate: it returns the first broken clause, or "".
//  1. Blocks tile their segment: contiguous, linked both ways, same stream and pool.
//  2. No two adjacent free blocks are left unmerged.
//  3. Every free block is in exactly its pool's free set, and the sets hold nothing else;
//     each size bin is a heap by address.
//  4. Allocated blocks are exactly those in the pointer map; pending ones wait on events.
//  5. Stats equal the sums over blocks and segments; allocated <= active <= reserved; each
//     MemPool's reserved bytes are its segments' (mapped) bytes.
//  6. A no_split MemPool's fixed segments hold one block each.
//  7. Each (owner, tag)'s counters are its allocated blocks' sums.

#include "../../common/message_format.h"
#include "ledger.h"
#include "state_change.h"

namespace cca {

std::string Ledger::validate(std::size_t queued_events) const {
  // Stat deltas are per pool: one sum for each.
  StateChange expected_small;
  StateChange expected_large;
  auto expected = [&](const BlockPool* pool) -> StateChange& { return pool->is_small ? expected_small : expected_large; };
  std::size_t free_blocks = 0;
  std::size_t unmapped_blocks = 0;
  std::size_t allocated_blocks = 0;
  std::size_t pending_events = 0;

  for (const auto& [key, segment] : segments_) {
    const Segment& seg = *segment;
    if (key != seg.ptr) return "segment map key " + hex(key) + " differs from segment " + hex(seg.ptr);
    if (seg.head == nullptr || seg.head->prev != nullptr) return "segment " + hex(seg.ptr) + " has a bad head block";
    expected(seg.pool).after(seg);
    DevicePtr cursor = seg.ptr;
    const Block* prev = nullptr;
    for (const Block* b = seg.head; b != nullptr; prev = b, b = b->next) {
      const std::string where = "block " + hex(b->ptr) + " of segment " + hex(seg.ptr);
      if (b->ptr != cursor) return where + " does not start where its predecessor ends (" + hex(cursor) + ")";
      if (!seg.contiguous_with_next(*b)) return where + " does not end where its successor starts";
      if (b->size == 0 || b->size % kMinBlockSize != 0) return where + " has size " + std::to_string(b->size);
      if (b->prev != prev) return where + " has a broken prev link";
      if (b->segment != &seg || b->pool != seg.pool || b->stream != seg.stream || b->expandable != seg.expandable) {
        return where + " disagrees with its segment on segment, pool or stream";
      }
      cursor += b->size;
      expected(b->pool).after(*b);
      // In its own pool's set when free; the set sizes below then rule out any second set.
      const bool in_set = b->pool->contains(b);
      const bool in_unmapped = b->pool->contains_unmapped(b);
      if (!b->mapped) {
        if (!seg.expandable) return where + " is unmapped in a fixed segment";
        if (b->state != BlockState::kFree || !in_unmapped || in_set) return where + " is unmapped but not only in the unmapped set";
        if (prev != nullptr && prev->state == BlockState::kFree && !prev->mapped) return where + " and its unmapped predecessor were not merged";
        if (seg.page_size == 0 || (b->ptr - seg.ptr) % seg.page_size != 0 || b->size % seg.page_size != 0) {
          return where + " is unmapped space not aligned to pages";
        }
        for (DevicePtr a = b->ptr; a < b->ptr + b->size; a += seg.page_size) {
          if (seg.pages[static_cast<std::size_t>((a - seg.ptr) / seg.page_size)] != 0) return where + " is unmapped over a mapped page";
        }
        ++unmapped_blocks;
        continue;
      }
      if (in_unmapped) return where + " is mapped but in the unmapped set";
      if (seg.expandable) {
        for (DevicePtr a = b->ptr - (b->ptr - seg.ptr) % seg.page_size; a < b->ptr + b->size; a += seg.page_size) {
          if (seg.pages[static_cast<std::size_t>((a - seg.ptr) / seg.page_size)] == 0) return where + " is mapped over an unmapped page";
        }
      }
      if (b->pool->pool_id != 0 && pools_.count(b->pool->pool_id) == 0) return where + " belongs to an erased MemPool";
      switch (b->state) {
        case BlockState::kFree:
          ++free_blocks;
          if (!in_set) return where + " is free but not in its pool's free set";
          if (b->event_count != 0 || !b->stream_uses.empty()) return where + " is free with events or stream uses";
          if (prev != nullptr && prev->state == BlockState::kFree && prev->mapped) return where + " and its free predecessor were not merged";
          break;
        case BlockState::kAllocated:
          ++allocated_blocks;
          if (in_set) return where + " is allocated but in a free set";
          if (allocated_.find(b->ptr) != b) return where + " is allocated but missing from the pointer map";
          if (b->event_count != 0) return where + " is allocated with outstanding events";
          break;
        case BlockState::kPendingFree:
          if (in_set) return where + " is pending free but in a free set";
          if (b->event_count <= 0) return where + " is pending free with no outstanding event";
          if (allocated_.find(b->ptr) != nullptr) return where + " is pending free but still in the pointer map";
          pending_events += static_cast<std::size_t>(b->event_count);
          break;
      }
    }
    if (cursor != seg.ptr + seg.size) return "blocks of segment " + hex(seg.ptr) + " do not add up to its size";
  }
  std::size_t in_sets = 0;
  std::size_t in_unmapped_sets = 0;
  std::string bins_broken;
  for_each_pool([&](const BlockPool& pool) {
    in_sets += pool.size();
    in_unmapped_sets += pool.unmapped_count();
    if (bins_broken.empty()) bins_broken = pool.check_bins();
  });
  if (!bins_broken.empty()) return bins_broken;
  for (const auto& [id, pool] : pools_) {
    std::size_t segments = 0;
    std::int64_t reserved[3] = {0, 0, 0};
    for (const auto& [ptr, segment] : segments_) {
      if (segment->pool->pool_id != id) continue;
      ++segments;
      std::int64_t bytes = 0;
      for (const Block* b = segment->head; b != nullptr; b = b->next) bytes += b->mapped ? static_cast<std::int64_t>(b->size) : 0;
      reserved[kAggregate] += bytes;
      reserved[segment->pool->is_small ? kSmallPool : kLargePool] += bytes;
      if (pool->small.no_split && !segment->expandable && segment->head->next != nullptr) {
        return "segment " + hex(segment->ptr) + " of no_split MemPool (0, " + std::to_string(id) + ") was split";
      }
    }
    if (segments != pool->segment_count) return "MemPool (0, " + std::to_string(id) + ") miscounts its segments";
    for (int p = 0; p < 3; ++p) {
      if (pool->reserved[p].current != reserved[p] || pool->reserved[p].peak < reserved[p]) {
        return "MemPool (0, " + std::to_string(id) + ") reserved_bytes." + stat_pool_name(p) + " is " +
               std::to_string(pool->reserved[p].current) + " but its segments hold " + std::to_string(reserved[p]);
      }
    }
  }
  if (unmapped_blocks != in_unmapped_sets) {
    return "unmapped sets hold " + std::to_string(in_unmapped_sets) + " blocks but " + std::to_string(unmapped_blocks) +
           " blocks are unmapped";
  }
  if (free_blocks != in_sets) {
    return "free sets hold " + std::to_string(in_sets) + " blocks but " + std::to_string(free_blocks) + " blocks are free";
  }
  if (allocated_blocks != allocated_.size()) {
    return "pointer map holds " + std::to_string(allocated_.size()) + " entries for " +
           std::to_string(allocated_blocks) + " allocated blocks";
  }
  if (pending_events != queued_events) {
    return "blocks wait on " + std::to_string(pending_events) + " events but " + std::to_string(queued_events) +
           " are queued";
  }

  StatCounters sum_counters;
  expected_small.delta().apply_to(sum_counters);
  expected_large.delta().apply_to(sum_counters);
  const DeviceStats sums = sum_counters.view();
  const DeviceStats stats = stats_.view();
  for (int k = 0; k < kNumStatKinds; ++k) {
    for (int p = 0; p < 3; ++p) {
      const Stat& have = stats.arrays[k][p];
      const std::int64_t want = sums.arrays[k][p].current;
      if (have.current != want) {
        return std::string(stat_kind_name(k)) + "." + stat_pool_name(p) + ".current is " + std::to_string(have.current) +
               " but the blocks sum to " + std::to_string(want);
      }
      if (have.peak < have.current) return std::string(stat_kind_name(k)) + "." + stat_pool_name(p) + ".peak is below current";
      if (have.allocated < 0 || have.freed < 0) return std::string(stat_kind_name(k)) + "." + stat_pool_name(p) + " counts below 0";
    }
  }
  // The tagged blocks' sums, less each tag's counters: all zero when they agree.
  std::unordered_map<std::uint64_t, TagCounters> drift;
  allocated_.for_each([&drift](DevicePtr, const Block* b) {
    if (b->tag == 0) return;
    TagCounters& c = drift[TagLedger::key(b->owner, b->tag)];
    c.allocated += static_cast<std::int64_t>(b->size);
    c.requested += static_cast<std::int64_t>(b->requested_size);
    ++c.allocations;
  });
  for (const TagStat& t : tags_.read()) {
    TagCounters& c = drift[TagLedger::key(t.owner, t.tag)];
    if (t.counters.allocated_peak < c.allocated) return "tag " + std::to_string(t.tag) + "'s peak is below its blocks";
    c.allocated -= t.counters.allocated;
    c.requested -= t.counters.requested;
    c.allocations -= t.counters.allocations;
  }
  for (const auto& [key, c] : drift) {
    if (c.allocated != 0 || c.requested != 0 || c.allocations != 0) {
      return "tag " + std::to_string(static_cast<std::uint32_t>(key)) + " of owner " + std::to_string(key >> 32) +
             ": its blocks hold " + std::to_string(c.allocated) + " bytes more than its counters";
    }
  }
  if (stats.oversize_allocations.current != sums.oversize_allocations.current) return "oversize_allocations drifted";
  if (stats.oversize_segments.current != sums.oversize_segments.current) return "oversize_segments drifted";
  const auto bytes = [&](StatKind k) { return stats.arrays[k][kAggregate].current; };
  if (!(bytes(kAllocatedBytes) <= bytes(kActiveBytes) && bytes(kActiveBytes) <= bytes(kReservedBytes))) {
    return "allocated <= active <= reserved does not hold";
  }
  return "";
}

}  // namespace cca
