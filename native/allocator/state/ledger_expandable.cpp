// The transitions of expandable segments (Note [Expandable segments] in
// expandable_segments.cpp): a range reserved, pages mapped and unmapped, the range released.
// Mapping counts only reserved_bytes and num_device_alloc; a reserved range counts nothing.
#include "ledger.h"
#include "ledger_merge.h"
#include "state_change.h"

namespace cca {

const Block* Ledger::expandable_reserved(DevicePtr base, Bytes size, Bytes page_size,
                                         const BlockPool& pool, StreamId stream, std::uint32_t stack) {
  Segment& segment = add_segment(base, size, pool, stream, stack);
  segment.expandable = true;
  segment.page_size = page_size;
  segment.pages.assign(static_cast<std::size_t>(size / page_size), 0);
  Block* block = segment.head;
  block->mapped = false;
  block->expandable = true;
  StateChange change;
  change.after(segment);
  change.after(*block);
  own(&pool)->insert_unmapped(block);
  commit(change);
  return block;
}

void Ledger::pages_mapped(const Block* unmapped, const std::vector<std::uint64_t>& handles, std::uint32_t stack) {
  Block* to_map = own(unmapped);
  Segment& seg = *to_map->segment;
  const auto first = static_cast<std::size_t>((to_map->ptr - seg.ptr) / seg.page_size);
  const Bytes mapped = handles.size() * seg.page_size;
  CCA_ASSERT(!to_map->mapped && mapped > 0 && mapped <= to_map->size);
  for (std::size_t i = 0; i < handles.size(); ++i) seg.pages[first + i] = handles[i];
  StateChange change(tracing());
  change.before(*to_map);
  to_map->pool->erase_unmapped(to_map);
  if (mapped < to_map->size) {
    Block* rest = new_block();
    seg.split_back(to_map, rest, mapped);
    to_map->pool->insert_unmapped(rest);
    change.after(*rest);
  }
  const DevicePtr mapped_at = to_map->ptr;
  to_map->mapped = true;
  merge_free_neighbours(to_map, change);
  to_map->gc_stamp = to_map->pool->get_free_blocks_call_count;
  to_map->pool->insert(to_map);
  change.after(*to_map);
  change.count(Counter::kDeviceAlloc);
  change.trace(TraceAction::kSegmentMap, mapped_at, mapped, to_map->stream, trace_stack(stack), 0,
               to_map->pool->pool_id);
  commit_reserved(change, *to_map->pool);
}

// The bytes of the block around the unmapped pages stay mapped as free blocks of their own.
void Ledger::pages_unmapped(const Block* freed, std::size_t first, std::size_t end) {
  Block* block = own(freed);
  Segment& seg = *block->segment;
  const DevicePtr lo = seg.ptr + first * seg.page_size;
  const DevicePtr hi = seg.ptr + end * seg.page_size;
  CCA_ASSERT(block->state == BlockState::kFree && block->mapped && lo >= block->ptr && hi <= block->ptr + block->size);
  for (std::size_t i = first; i < end; ++i) seg.pages[i] = 0;
  StateChange change(tracing());
  change.before(*block);
  block->pool->erase(block);
  const auto keep_free = [&](Block* b) {
    b->gc_stamp = block->pool->get_free_blocks_call_count;
    block->pool->insert(b);
    change.after(*b);
  };
  if (lo > block->ptr) {
    Block* below = new_block();
    seg.split_front(block, below, lo - block->ptr);
    keep_free(below);
  }
  if (hi < block->ptr + block->size) {
    Block* above = new_block();
    seg.split_back(block, above, hi - lo);
    keep_free(above);
  }
  block->mapped = false;
  merge_free_neighbours(block, change);
  block->pool->insert_unmapped(block);
  change.after(*block);
  change.count(Counter::kDeviceFree);
  change.trace(TraceAction::kSegmentUnmap, lo, hi - lo, block->stream, 0, 0, block->pool->pool_id);
  commit_reserved(change, *block->pool);
}

void Ledger::expandable_released(const Block* released) {
  Block* block = own(released);
  CCA_ASSERT(!block->mapped && !block->is_split());
  StateChange change;
  change.before(*block);
  change.before(*block->segment);
  block->pool->erase_unmapped(block);
  commit(change);  // unmapped space reserves nothing
  erase_segment(block);
}

}  // namespace cca
