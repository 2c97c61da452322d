// Note [Expandable segments] (PyTorch's expandable_segments:True, reimplemented from its
// documented behaviour):
// Instead of one device allocation per segment, each (stream, pool) gets one reserved
// address range of 9/8 of the device's memory, backed page by page on demand (2 MiB pages
// in the small pool, large_segment_size pages in the large pool). A request that fits no
// free block maps pages at the lowest unmapped address of its stream's segment, so a
// growing workload keeps one contiguous segment instead of many fragments. Releasing the
// cache unmaps whole free pages; a segment with nothing mapped gives its range back.
// Stats: mapping counts only reserved_bytes (never `segment`), and expandable blocks are
// left out of inactive_split. Traces record segment_map / segment_unmap.
#include <algorithm>
#include <string>

#include "caching_allocator.h"
#include "size_policy.h"
#include "state_change.h"

namespace cca {

namespace {
bool allocatable(const Block* b) { return b != nullptr && b->state == BlockState::kFree; }
}  // namespace

// Merges `block` with free neighbours of the same mapped state, moving them out of their
// pool's set. The caller records `block` after and puts it in the right set.
void DeviceCachingAllocator::merge_free_neighbours(Block* block, StateChange& change) {
  for (Block* neighbour : {block->prev, block->next}) {
    if (neighbour == nullptr || neighbour->state != BlockState::kFree || neighbour->mapped != block->mapped) continue;
    change.before(*neighbour);
    if (neighbour->mapped) {
      neighbour->pool->erase(neighbour);
    } else {
      neighbour->pool->unmapped.erase(neighbour);
    }
    if (neighbour == block->prev) {
      block->ptr = neighbour->ptr;
      block->prev = neighbour->prev;
      if (block->prev != nullptr) {
        block->prev->next = block;
      } else {
        block->segment->head = block;
      }
    } else {
      block->next = neighbour->next;
      if (block->next != nullptr) block->next->prev = block;
    }
    block->size += neighbour->size;
    delete_block(neighbour);
  }
}

// A free run of blocks starting at a block of this stream's segment with room for the
// request (mapped or not), or a new segment's single unmapped block. nullptr when no
// address range can be reserved.
Block* DeviceCachingAllocator::find_expandable_block(const AllocParams& p) {
  BlockPool& pool = *p.pool;
  Block key;
  key.stream = p.stream;
  key.ptr = 0;
  auto room_from = [&](Block* b) {
    std::size_t bytes = 0;
    while (bytes < p.size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= p.size;
  };
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == p.stream; ++it) {
    Block* candidate = *it;
    // A free mapped block just before the unmapped space can take the first bytes.
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    if (room_from(candidate)) return candidate;
  }
  // A new segment: reserve address space (no memory yet).
  std::size_t free_bytes = 0, total = 0;
  device_.mem_get_info(&free_bytes, &total);
  const std::size_t page = pool.is_small ? kSmallBuffer : config_.large_segment_size;
  const std::size_t pages = std::max<std::size_t>(1, (total / 8 * 9 + page - 1) / page);
  DevicePtr base = 0;
  if (device_.reserve_address(&base, pages * page) != Status::kOk) return nullptr;
  auto segment = std::make_unique<Segment>();
  segment->ptr = base;
  segment->size = pages * page;
  segment->stream = p.stream;
  segment->pool = &pool;
  segment->expandable = true;
  segment->page_size = page;
  segment->pages.assign(pages, 0);
  Block* block = new_block();
  block->ptr = base;
  block->size = segment->size;
  block->stream = p.stream;
  block->pool = &pool;
  block->segment = segment.get();
  block->mapped = false;
  block->expandable = true;
  segment->head = block;
  segment->stack = p.ctx.stack;
  pool.unmapped.insert(block);
  segments_.emplace(base, std::move(segment));
  if (pool.pool_id != 0) ++pools_.at(pool.pool_id)->segment_count;
  return block;
}

// Backs the first `size` bytes (rounded up to pages) of the unmapped block `to_map`.
// All or nothing: if a page cannot be mapped, the pages mapped here are given back.
bool DeviceCachingAllocator::map_block(Block* to_map, std::size_t size, const AllocParams& p) {
  Segment& seg = *to_map->segment;
  const std::size_t page = seg.page_size;
  const std::size_t first = (to_map->ptr - seg.ptr) / page;
  const std::size_t count = std::min((size + page - 1) / page, to_map->size / page);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t handle = 0;
    Status s = device_.map_memory(seg.ptr + (first + i) * page, page, &handle);
    if (s != Status::kOk) {
      for (std::size_t j = 0; j < i; ++j) {
        device_.unmap_memory(seg.ptr + (first + j) * page, page, seg.pages[first + j]);
        seg.pages[first + j] = 0;
      }
      if (s != Status::kOutOfMemory) {
        throw DeviceError("mapping expandable segment memory failed on device " + std::to_string(device_.index()) +
                          ": " + status_name(s) + " (" + device_.last_error() + ")");
      }
      return false;
    }
    seg.pages[first + i] = handle;
  }
  const std::size_t mapped = count * page;
  StateChange change(tracing());
  change.before(*to_map);
  to_map->pool->unmapped.erase(to_map);
  if (mapped < to_map->size) {
    Block* rest = new_block();
    rest->ptr = to_map->ptr + mapped;
    rest->size = to_map->size - mapped;
    rest->stream = to_map->stream;
    rest->pool = to_map->pool;
    rest->segment = to_map->segment;
    rest->mapped = false;
    rest->expandable = true;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    to_map->next = rest;
    to_map->pool->unmapped.insert(rest);
    change.after(*rest);
  }
  const DevicePtr mapped_at = to_map->ptr;
  to_map->size = mapped;
  to_map->mapped = true;
  merge_free_neighbours(to_map, change);
  to_map->gc_stamp = to_map->pool->get_free_blocks_call_count;
  to_map->pool->insert(to_map);
  change.after(*to_map);
  change.trace(TraceAction::kSegmentMap, mapped_at, mapped, to_map->stream, trace_stack(p.ctx.stack), 0,
               to_map->pool->pool_id);
  ++stats_.num_device_alloc;
  commit(change);
  return true;
}

// Maps pages until a free mapped block of at least p.size exists; returns it out of the
// free set, or nullptr when the device is full.
Block* DeviceCachingAllocator::try_allocate_expandable_block(const AllocParams& p) {
  Block* candidate = find_expandable_block(p);
  if (candidate == nullptr) return nullptr;
  // Candidate shapes: unmapped -> ..., or free -> unmapped -> ...
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, p.size), p)) return nullptr;
  // map_block may have merged `candidate` into a neighbour: find the free mapped block
  // now starting the run.
  while (candidate->size < p.size) {
    Block* next = candidate->next;
    const std::size_t missing = p.size - candidate->size;
    if (!map_block(next, std::min(missing, next->size), p)) return nullptr;
    candidate = next;  // mapping `next` merged the free block before it into it
  }
  candidate->pool->erase(candidate);
  return candidate;
}

// Unmaps the whole pages inside a free mapped expandable block; the bytes around them stay
// mapped as free blocks.
void DeviceCachingAllocator::unmap_block(Block* block) {
  Segment& seg = *block->segment;
  const std::size_t page = seg.page_size;
  const std::size_t first = (block->ptr - seg.ptr + page - 1) / page;
  const std::size_t end = (block->ptr + block->size - seg.ptr) / page;
  if (first >= end) return;
  std::size_t done = first;
  Status failure = Status::kOk;
  for (; done < end; ++done) {
    failure = device_.unmap_memory(seg.ptr + done * page, page, seg.pages[done]);
    if (failure != Status::kOk) break;
    seg.pages[done] = 0;
  }
  if (done > first) {
    const DevicePtr lo = seg.ptr + first * page;
    const DevicePtr hi = seg.ptr + done * page;
    StateChange change(tracing());
    change.before(*block);
    block->pool->erase(block);
    auto split_off = [&](DevicePtr at, std::size_t size, bool before) {
      Block* b = new_block();
      b->ptr = at;
      b->size = size;
      b->stream = block->stream;
      b->pool = block->pool;
      b->segment = block->segment;
      b->expandable = true;
      if (before) {
        b->prev = block->prev;
        b->next = block;
        if (b->prev != nullptr) {
          b->prev->next = b;
        } else {
          seg.head = b;
        }
        block->prev = b;
      } else {
        b->prev = block;
        b->next = block->next;
        if (b->next != nullptr) b->next->prev = b;
        block->next = b;
      }
      b->gc_stamp = block->pool->get_free_blocks_call_count;
      block->pool->insert(b);
      change.after(*b);
    };
    const DevicePtr block_end = block->ptr + block->size;
    if (lo > block->ptr) split_off(block->ptr, lo - block->ptr, true);
    if (hi < block_end) split_off(hi, block_end - hi, false);
    block->ptr = lo;
    block->size = hi - lo;
    block->mapped = false;
    merge_free_neighbours(block, change);
    block->pool->unmapped.insert(block);
    change.after(*block);
    change.trace(TraceAction::kSegmentUnmap, lo, hi - lo, block->stream, 0, 0, block->pool->pool_id);
    ++stats_.num_device_free;
    commit(change);
    if (block->prev == nullptr && block->next == nullptr) release_expandable_segment(block);
  }
  if (failure != Status::kOk) {
    throw DeviceError("unmapping expandable segment memory failed on device " + std::to_string(device_.index()) +
                      ": " + status_name(failure) + " (" + device_.last_error() + ")");
  }
}

// `block` is unmapped and spans its whole segment: give the address range back.
void DeviceCachingAllocator::release_expandable_segment(Block* block) {
  Segment* seg = block->segment;
  Status s = device_.release_address(seg->ptr, seg->size);
  if (s != Status::kOk) {
    throw DeviceError("releasing an expandable segment's address range failed: " + std::string(status_name(s)) +
                      " (" + device_.last_error() + ")");
  }
  block->pool->unmapped.erase(block);
  if (block->pool->pool_id != 0) --pools_.at(block->pool->pool_id)->segment_count;
  delete_block(block);
  const DevicePtr key = seg->ptr;  // copied: erase destroys the segment
  segments_.erase(key);
}

}  // namespace cca
