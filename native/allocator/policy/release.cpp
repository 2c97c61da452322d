// Giving memory back: oversize blocks before a retry, the whole cache (empty_cache and the
// last retry), garbage collection under a memory fraction, and the frees that waited on
// other streams' events. Each decides here, calls the device, and records it in the ledger.
#include <algorithm>

#include "caching_allocator.h"
#include "../../common/hot.h"

namespace cca {

// Only when max_split_size is set: one cached oversize block that fits, or else oversize
// blocks from the largest down until enough is released ("enough": PyTorch then retries).
DeviceCachingAllocator::AvailableRelease DeviceCachingAllocator::available_cached_blocks(const AllocParams& p) const {
  AvailableRelease out;
  if (config_.max_split_size == kUnlimited) return out;
  const std::vector<const Block*> blocks = p.pool->in_order();
  const Bytes wanted = std::max(p.size, config_.max_split_size);
  // The first block of this stream at or above `wanted`, in (stream, size, address) order.
  const auto before_wanted = [&](const Block* b) {
    return b->stream < p.stream || (b->stream == p.stream && b->size < wanted);
  };
  const auto at = static_cast<std::size_t>(
      std::partition_point(blocks.begin(), blocks.end(), before_wanted) - blocks.begin());
  if (at < blocks.size() && blocks[at]->stream == p.stream) {
    if (blocks[at]->is_split() || blocks[at]->expandable) return out;
    out.blocks.push_back(blocks[at]);
    out.enough = true;
    return out;
  }
  Bytes released = 0;
  for (std::size_t i = at; i > 0 && released < wanted; --i) {
    const Block* b = blocks[i - 1];
    if (!is_oversize(b->size, config_) || b->stream != p.stream) break;
    if (!b->is_split() && !b->expandable) {
      released += b->size;
      out.blocks.push_back(b);
    }
  }
  out.enough = released >= wanted;
  return out;
}

bool DeviceCachingAllocator::release_available_cached_blocks(const AllocParams& p) {
  const AvailableRelease r = available_cached_blocks(p);
  for (const Block* b : r.blocks) release_segment(b);
  return r.enough;
}

void DeviceCachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  release_free_blocks(ledger_.default_pool(false));
  release_free_blocks(ledger_.default_pool(true));
  release_freeable_pools();
  drop_dead_stream_bins();
}

void DeviceCachingAllocator::drop_dead_stream_bins() {
  ledger_.drop_dead_stream_bins([this](StreamId s) { return s == 0 || streams_.count(s) > 0; });
}

void DeviceCachingAllocator::release_free_blocks(const BlockPool& pool) {
  std::vector<const Block*> unsplit;
  std::vector<const Block*> to_unmap;
  for (const Block* b : pool.in_order()) {
    if (b->expandable) {
      to_unmap.push_back(b);
    } else if (!b->is_split()) {
      unsplit.push_back(b);
    }
  }
  for (const Block* b : unsplit) release_segment(b);
  // Unmapping reshapes the free set, so it runs on the gathered list; blocks that merge
  // away meanwhile are skipped.
  for (const Block* b : to_unmap) {
    if (pool.contains(b)) unmap_block(b);
  }
  // Segments that never got a page (a failed first map) go too.
  std::vector<const Block*> empty;
  pool.for_each_unmapped([&empty](const Block* b) {
    if (!b->is_split()) empty.push_back(b);
  });
  for (const Block* b : empty) release_expandable_segment(b);
}

// `block` is free, unsplit (it spans its whole segment) and in its pool's free set.
void DeviceCachingAllocator::release_segment(const Block* block) {
  const Status s = device_.free(block->segment->ptr);
  if (s != Status::kOk) throw device_error(device_, "cudaFree", s);
  ledger_.segment_released(block, release_ctx_);
}

// Frees unsplit large blocks at or above the average age until reserved memory is back
// under threshold * allowed maximum. No synchronization: it only touches free blocks.
void DeviceCachingAllocator::garbage_collect_cached_blocks() {
  const Bytes threshold_bytes = gc_threshold_bytes();
  const Bytes reserved = total_reserved();
  if (reserved <= threshold_bytes) return;
  const Bytes target = reserved - threshold_bytes;
  const BlockPool& pool = ledger_.default_pool(false);
  auto age = [&](const Block* b) { return static_cast<double>(pool.get_free_blocks_call_count - b->gc_stamp); };
  double total_age = 0;
  int freeable = 0;
  auto freeable_block = [](const Block* b) { return !b->is_split() && !b->expandable; };
  for (const Block* b : pool.in_order()) {
    if (freeable_block(b)) {
      total_age += age(b);
      ++freeable;
    }
  }
  Bytes reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = total_age / freeable;
    freed = false;
    std::vector<const Block*> victims;
    for (const Block* b : pool.in_order()) {
      if (freeable_block(b) && age(b) >= age_threshold) victims.push_back(b);
    }
    for (const Block* b : victims) {
      freed = true;
      reclaimed += b->size;
      total_age -= age(b);
      --freeable;
      release_segment(b);
    }
  }
}

void DeviceCachingAllocator::process_completed_events() {
  events_.process([this](const Block* b) { free_completed(b); });
}

void DeviceCachingAllocator::synchronize_and_free_events() {
  if (!routing_.deferred.empty()) insert_deferred_events();
  ledger_.count(Counter::kSyncAllStreams);
  events_.synchronize_all([this](const Block* b) { free_completed(b); });
}

void DeviceCachingAllocator::free_completed(const Block* block) {
  ledger_.event_completed(block);
  if (!caching_enabled_) release_if_uncached(block);
}

void DeviceCachingAllocator::free_used_block(const Block* block, CallContext ctx) {
  if (routing_.capture_work && free_during_capture(block, ctx)) return;
  const int events = events_.record(block, block->stream_uses);
  ledger_.free_requested(block, events, ctx);
}

void DeviceCachingAllocator::release_uncached(const Block* block, CallContext ctx) {
  const ScopedValue<CallContext> released_by(release_ctx_, ctx);
  release_if_uncached(block);
}

void DeviceCachingAllocator::release_if_uncached(const Block* block) {
  if (block->state != BlockState::kFree) return;  // still waiting on another event
  if (block->expandable) {
    unmap_block(block);  // its whole pages (made before caching went off)
  } else if (!block->is_split()) {
    release_segment(block);
  }
}

}  // namespace cca
