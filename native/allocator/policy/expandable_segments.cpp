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
// Here: where to grow and what to give back, and the device calls; the ledger records each
// range reserved, pages mapped or unmapped and range released (ledger_expandable.cpp).
#include <algorithm>
#include <string>

#include "caching_allocator.h"

namespace cca {

namespace {
bool allocatable(const Block* b) { return b != nullptr && b->state == BlockState::kFree; }
}  // namespace

// A free run of blocks starting at a block of this stream's segment with room for the
// request (mapped or not), or a new segment's single unmapped block. nullptr when no
// address range can be reserved.
const Block* DeviceCachingAllocator::find_expandable_block(const AllocParams& p) {
  const BlockPool& pool = *p.pool;
  auto room_from = [&](const Block* b) {
    Bytes bytes = 0;
    while (bytes < p.size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= p.size;
  };
  const Block* start = nullptr;
  const bool found = pool.find_unmapped(p.stream, [&](const Block* candidate) {
    // A free mapped block just before the unmapped space can take the first bytes.
    start = allocatable(candidate->prev) ? static_cast<const Block*>(candidate->prev) : candidate;
    return room_from(start);
  }) != nullptr;
  if (found) return start;
  // A new segment: reserve address space (no memory yet).
  Bytes free_bytes = 0, total = 0;
  device_.mem_get_info(&free_bytes, &total);
  const Bytes page = pool.is_small ? kSmallBuffer : config_.large_segment_size;
  const Bytes pages = std::max<Bytes>(1, (total / 8 * 9 + page - 1) / page);
  DevicePtr base = 0;
  if (device_.reserve_address(&base, pages * page) != Status::kOk) return nullptr;
  return ledger_.expandable_reserved(base, pages * page, page, pool, p.stream, p.ctx.stack);
}

// Backs the first `size` bytes (rounded up to pages) of the unmapped block `to_map`.
// All or nothing: if a page cannot be mapped, the pages mapped here are given back.
bool DeviceCachingAllocator::map_block(const Block* to_map, Bytes size, const AllocParams& p) {
  const Segment& seg = *to_map->segment;
  const Bytes page = seg.page_size;
  const auto first = static_cast<std::size_t>((to_map->ptr - seg.ptr) / page);
  const auto count = static_cast<std::size_t>(std::min((size + page - 1) / page, to_map->size / page));
  std::vector<std::uint64_t> handles;
  handles.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t handle = 0;
    const Status s = device_.map_memory(seg.ptr + (first + i) * page, page, &handle);
    if (s != Status::kOk) {
      for (std::size_t j = 0; j < handles.size(); ++j) device_.unmap_memory(seg.ptr + (first + j) * page, page, handles[j]);
      if (s != Status::kOutOfMemory) throw device_error(device_, "mapping expandable segment memory", s);
      return false;
    }
    handles.push_back(handle);
  }
  ledger_.pages_mapped(to_map, handles, p.ctx.stack);
  return true;
}

// Maps pages until a free mapped block of at least p.size exists; returns it out of the
// free set (still in it), or nullptr when the device is full.
const Block* DeviceCachingAllocator::try_allocate_expandable_block(const AllocParams& p) {
  const Block* candidate = find_expandable_block(p);
  if (candidate == nullptr) return nullptr;
  // Candidate shapes: unmapped -> ..., or free -> unmapped -> ...
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, p.size), p)) return nullptr;
  // map_block may have merged `candidate` into a neighbour: find the free mapped block
  // now starting the run.
  while (candidate->size < p.size) {
    const Block* next = candidate->next;
    const Bytes missing = p.size - candidate->size;
    if (!map_block(next, std::min(missing, next->size), p)) return nullptr;
    candidate = next;  // mapping `next` merged the free block before it into it
  }
  return candidate;
}

// Unmaps the whole pages inside a free mapped expandable block; the bytes around them stay
// mapped as free blocks.
void DeviceCachingAllocator::unmap_block(const Block* block) {
  const Segment& seg = *block->segment;
  const Bytes page = seg.page_size;
  const auto first = static_cast<std::size_t>((block->ptr - seg.ptr + page - 1) / page);
  const auto end = static_cast<std::size_t>((block->ptr + block->size - seg.ptr) / page);
  if (first >= end) return;
  std::size_t done = first;
  Status failure = Status::kOk;
  for (; done < end; ++done) {
    failure = device_.unmap_memory(seg.ptr + done * page, page, seg.pages[done]);
    if (failure != Status::kOk) break;
  }
  if (done > first) {
    ledger_.pages_unmapped(block, first, done);
    // `block` is now the unmapped range (merged with unmapped neighbours).
    if (!block->is_split()) release_expandable_segment(block);
  }
  if (failure != Status::kOk) throw device_error(device_, "unmapping expandable segment memory", failure);
}

// `block` is unmapped and spans its whole segment: give the address range back.
void DeviceCachingAllocator::release_expandable_segment(const Block* block) {
  const Segment& seg = *block->segment;
  const Status s = device_.release_address(seg.ptr, seg.size);
  if (s != Status::kOk) throw device_error(device_, "releasing an expandable segment's address range", s);
  ledger_.expandable_released(block);
}

}  // namespace cca
