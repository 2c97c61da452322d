// Overview of the policy (PyTorch's CUDACachingAllocator, reimplemented from its documented
// behaviour):
//
// - Memory comes from the device in segments and is cached: a freed block goes back to a
//   pool, not to the device, and the next request of a fitting size on the same stream
//   reuses it without a device call. reserved = what the segments hold (what nvidia-smi
//   shows for us); allocated = what callers hold. Their difference is the cache.
// - Every request is rounded (size_policy.h). Requests up to 1 MiB come from the small pool
//   in 2 MiB segments; larger ones from the large pool in 20 MiB segments (below 10 MiB)
//   or in segments of their own size rounded to 2 MiB.
// - The search is best fit by (stream, size, address) within one stream (block_pool.h).
//   A found block is split when the remainder is worth keeping (Note [Split thresholds]);
//   a freed block merges with free neighbours in its segment.
// - When nothing fits: free-memory callbacks, garbage collection (only with a memory
//   fraction and a threshold), a new segment, then releasing cached oversize blocks, then
//   releasing the whole cache and retrying once (num_alloc_retries). Only then is it an
//   out-of-memory error, whose message says what was asked, what is free and what we hold.
// - A block used on other streams (record_stream) waits on events before it is reused
//   (stream_uses.h). Completed events are collected at the start of every malloc.
// - All blocks change state through the transitions in transitions.cpp, which keep the
//   stats in step; validate.cpp checks every invariant on demand.
#include "caching_allocator.h"
#include "hex.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "size_policy.h"

namespace cca {

namespace {

// PyTorch's format_size: two decimals, each bound inclusive.
std::string format_size(std::uint64_t size) {
  char buf[64];
  if (size <= 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(size));
  } else if (size <= 1048576ull) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(size) / 1024.0);
  } else if (size <= 1073741824ull) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(size) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(size) / 1073741824.0);
  }
  return buf;
}

}  // namespace

DeviceCachingAllocator::DeviceCachingAllocator(Device& device, const AllocatorConfig& config)
    : device_(device), config_(config), events_(device) {
  if (config.per_process_memory_fraction_set) set_memory_fraction(config.per_process_memory_fraction);
}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ptr, segment] : segments_) {
    if (segment->expandable) {
      for (std::size_t i = 0; i < segment->pages.size(); ++i) {
        if (segment->pages[i] != 0) device_.unmap_memory(ptr + i * segment->page_size, segment->page_size, segment->pages[i]);
      }
      device_.release_address(ptr, segment->size);
    } else {
      device_.free(ptr);
    }
    for (Block* b = segment->head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
  for (Block* b : spare_blocks_) delete b;
}

void DeviceCachingAllocator::check_stream(StreamId stream) const {
  if (stream != 0 && streams_.count(stream) == 0) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not a live stream of device " +
                                   std::to_string(device_.index()) +
                                   ": it was destroyed, or it belongs to another device",
                               "ERR_CCA_INVALID_STREAM");
  }
}

DevicePtr DeviceCachingAllocator::malloc(std::uint64_t size, StreamId stream, std::uint32_t owner, CallContext ctx) {
  if (size == 0) return 0;
  if (size >= kOneExaByte) {
    OutOfMemoryInfo info;
    info.device = device_.index();
    info.requested = size;
    throw OutOfMemoryError("CUDA out of memory. Tried to allocate more than 1EB memory.", info);
  }
  std::unique_lock<std::mutex> lock(mu_);
  check_stream(stream);
  process_events();

  AllocParams p;
  p.ctx = ctx;
  p.requested = size;
  p.size = round_size(static_cast<std::size_t>(size), config_);
  p.stream = stream;
  p.pool = &pool_for(p.size);
  p.alloc_size = allocation_size(p.size, config_);

  bool found = get_free_block(p) || (trigger_free_memory_callbacks(lock) && get_free_block(p));
  if (!found) {
    if (gc_enabled()) garbage_collect_cached_blocks();
    found = alloc_block(p, false) || (release_available_cached_blocks(p) && alloc_block(p, false));
    if (!found) {
      release_cached_blocks();
      found = alloc_block(p, true);
    }
  }
  if (!found) throw_oom(p, lock);
  const DevicePtr ptr = hand_out(p.block, p, owner)->ptr;
  check_after_operation();
  return ptr;
}

bool DeviceCachingAllocator::get_free_block(AllocParams& p) {
  if (gc_enabled()) ++p.pool->get_free_blocks_call_count;
  p.block = p.pool->take_best_fit(p.stream, p.size, config_);
  return p.block != nullptr;
}

bool DeviceCachingAllocator::trigger_free_memory_callbacks(std::unique_lock<std::mutex>& lock) {
  if (free_memory_callbacks_.empty()) return false;
  auto callbacks = free_memory_callbacks_;
  lock.unlock();
  bool freed = false;
  for (auto& cb : callbacks) freed = cb() || freed;
  lock.lock();
  process_events();
  return freed;
}

bool DeviceCachingAllocator::alloc_block(AllocParams& p, bool is_retry) {
  if (is_retry) ++stats_.num_alloc_retries;
  const std::size_t size = p.alloc_size;
  if (fraction_set_ && total_reserved() + size > allowed_memory_maximum_) {
    p.device_status = Status::kOutOfMemory;
    return false;
  }
  if (use_expandable()) {
    p.block = try_allocate_expandable_block(p);
    if (p.block == nullptr) p.device_status = Status::kOutOfMemory;
    return p.block != nullptr;
  }
  DevicePtr ptr = 0;
  Status s = device_.malloc(&ptr, size);
  if (s == Status::kOutOfMemory) {
    p.device_status = s;
    return false;
  }
  if (s != Status::kOk) {
    throw DeviceError("cudaMalloc of " + format_size(size) + " failed on device " +
                      std::to_string(device_.index()) + ": " + status_name(s) + " (" +
                      device_.last_error() + ")");
  }
  p.block = segment_allocated(ptr, size, p);
  return true;
}

// Only when max_split_size is set: release one cached oversize block that fits, or else
// oversize blocks from the largest down until enough is released.
bool DeviceCachingAllocator::release_available_cached_blocks(const AllocParams& p) {
  if (config_.max_split_size == kUnlimited) return false;
  const std::vector<Block*> blocks = p.pool->in_order();
  const std::size_t wanted = std::max(p.size, config_.max_split_size);
  // The first block of this stream at or above `wanted`, in (stream, size, address) order.
  const auto before_wanted = [&](const Block* b) {
    return b->stream < p.stream || (b->stream == p.stream && b->size < wanted);
  };
  const std::size_t at = static_cast<std::size_t>(
      std::partition_point(blocks.begin(), blocks.end(), before_wanted) - blocks.begin());
  if (at < blocks.size() && blocks[at]->stream == p.stream) {
    if (blocks[at]->is_split() || blocks[at]->expandable) return false;
    segment_released(blocks[at]);
    return true;
  }
  std::size_t released = 0;
  for (std::size_t i = at; i > 0 && released < wanted; --i) {
    Block* b = blocks[i - 1];
    if (b->size < config_.max_split_size || b->stream != p.stream) break;
    if (!b->is_split() && !b->expandable) {
      released += b->size;
      segment_released(b);
    }
  }
  return released >= wanted;
}

void DeviceCachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  release_free_blocks(large_blocks_);
  release_free_blocks(small_blocks_);
  release_freeable_pools();
  drop_dead_stream_bins();
}

void DeviceCachingAllocator::drop_dead_stream_bins() {
  const auto is_live = [this](StreamId s) { return s == 0 || streams_.count(s) > 0; };
  small_blocks_.drop_dead_stream_bins(is_live);
  large_blocks_.drop_dead_stream_bins(is_live);
  for (auto& [id, pool] : pools_) {
    pool->small.drop_dead_stream_bins(is_live);
    pool->large.drop_dead_stream_bins(is_live);
  }
}

void DeviceCachingAllocator::release_free_blocks(BlockPool& pool) {
  std::vector<Block*> unsplit;
  std::vector<Block*> to_unmap;
  for (Block* b : pool.in_order()) {
    if (b->expandable) {
      to_unmap.push_back(b);
    } else if (!b->is_split()) {
      unsplit.push_back(b);
    }
  }
  for (Block* b : unsplit) segment_released(b);
  // Unmapping reshapes the free set, so it runs on the gathered list; blocks that merge
  // away meanwhile are skipped.
  for (Block* b : to_unmap) {
    if (pool.contains(b)) unmap_block(b);
  }
  // Segments that never got a page (a failed first map) go too.
  std::vector<Block*> empty;
  for (Block* b : pool.unmapped) {
    if (b->prev == nullptr && b->next == nullptr) empty.push_back(b);
  }
  for (Block* b : empty) release_expandable_segment(b);
}

// Frees unsplit large blocks at or above the average age until reserved memory is back
// under threshold * allowed maximum. No synchronization: it only touches free blocks.
void DeviceCachingAllocator::garbage_collect_cached_blocks() {
  const auto threshold_bytes = static_cast<std::size_t>(config_.garbage_collection_threshold *
                                                        static_cast<double>(allowed_memory_maximum_));
  const std::size_t reserved = total_reserved();
  if (reserved <= threshold_bytes) return;
  const std::size_t target = reserved - threshold_bytes;
  auto& pool = large_blocks_;
  auto age = [&](const Block* b) { return static_cast<double>(pool.get_free_blocks_call_count - b->gc_stamp); };
  double total_age = 0;
  int freeable = 0;
  auto freeable_block = [](const Block* b) { return !b->is_split() && !b->expandable; };
  for (Block* b : pool.in_order()) {
    if (freeable_block(b)) {
      total_age += age(b);
      ++freeable;
    }
  }
  std::size_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = total_age / freeable;
    freed = false;
    std::vector<Block*> victims;
    for (Block* b : pool.in_order()) {
      if (freeable_block(b) && age(b) >= age_threshold) victims.push_back(b);
    }
    for (Block* b : victims) {
      freed = true;
      reclaimed += b->size;
      total_age -= age(b);
      --freeable;
      segment_released(b);
    }
  }
}

void DeviceCachingAllocator::process_events() {
  events_.process([this](Block* b) { free_completed(b); });
}

void DeviceCachingAllocator::synchronize_and_free_events() {
  ++stats_.num_sync_all_streams;
  events_.synchronize_all([this](Block* b) { free_completed(b); });
}

std::size_t DeviceCachingAllocator::total_reserved() const {
  return static_cast<std::size_t>(stats_.current(kReservedBytes, kAggregate));
}

void DeviceCachingAllocator::throw_oom(const AllocParams& p, std::unique_lock<std::mutex>& lock) {
  std::size_t device_free = 0;
  std::size_t device_total = 0;
  device_.mem_get_info(&device_free, &device_total);
  ++stats_.num_ooms;
  // PyTorch's oom entry: the device's free bytes where the address would be.
  record_event(TraceAction::kOom, device_free, p.size, p.stream, trace_stack(p.ctx.stack));
  OutOfMemoryInfo info;
  info.device = device_.index();
  info.requested = p.requested;
  info.alloc_size = p.alloc_size;
  info.device_free = device_free;
  info.device_total = device_total;
  info.allowed = fraction_set_ ? allowed_memory_maximum_ : 0;
  info.allocated = static_cast<std::uint64_t>(stats_.current(kAllocatedBytes, kAggregate));
  info.reserved = static_cast<std::uint64_t>(stats_.current(kReservedBytes, kAggregate));
  const auto count_free = [&info](const BlockPool& pool) {
    for (const Block* b : pool.in_order()) {
      info.cached_free += b->size;
      ++info.free_blocks;
      info.largest_free_block = std::max<std::uint64_t>(info.largest_free_block, b->size);
    }
  };
  count_free(small_blocks_);
  count_free(large_blocks_);
  for (const auto& [id, pool] : pools_) {
    count_free(pool->small);
    count_free(pool->large);
  }

  std::ostringstream msg;
  msg << "CUDA out of memory. Tried to allocate " << format_size(info.alloc_size) << ". GPU "
      << info.device << " has a total capacity of " << format_size(device_total) << " of which "
      << format_size(device_free) << " is free. ";
  if (fraction_set_) msg << format_size(allowed_memory_maximum_) << " allowed; ";
  msg << "Of the allocated memory " << format_size(info.allocated)
      << " is allocated by the caching allocator, and " << format_size(info.reserved - info.allocated)
      << " is reserved by the caching allocator but unallocated. If reserved but unallocated memory"
         " is large try setting CCA_ALLOC_CONF=max_split_size_mb:<MB> to avoid fragmentation"
         " (PYTORCH_CUDA_ALLOC_CONF is read too).";
  // Not in PyTorch's message (users have asked for it since 2017: pytorch#29554).
  if (info.free_blocks > 0) {
    msg << " Fragmentation: " << format_size(info.cached_free) << " of the reserved memory is free in "
        << info.free_blocks << (info.free_blocks == 1 ? " block" : " blocks") << ", the largest "
        << format_size(info.largest_free_block) << "; each sits in a segment that still holds live blocks.";
  }
  if (device_.is_simulated()) msg << " (This GPU is simulated: sim backend.)";

  auto observers = oom_observers_;
  lock.unlock();
  for (auto& observer : observers) {
    try {
      observer(info);
    } catch (const std::exception&) {
      // An observer's failure must not replace the out-of-memory error the caller needs.
    }
  }
  throw OutOfMemoryError(msg.str(), info);
}

void DeviceCachingAllocator::free(DevicePtr ptr, CallContext ctx) {
  if (ptr == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Block* block = allocated_.find(ptr);
  if (block == nullptr) {
    std::string where = "device " + std::to_string(device_.index());
    for (const auto& [base, segment] : segments_) {
      if (ptr < base || ptr >= base + segment->size) continue;
      for (Block* b = segment->head; b != nullptr; b = b->next) {
        if (ptr == b->ptr) {
          throw InvalidPointerError("double free: pointer " + hex(ptr) + " on " + where +
                                    " was already freed");
        }
        if (ptr > b->ptr && ptr < b->ptr + b->size) {
          throw InvalidPointerError("pointer " + hex(ptr) + " on " + where +
                                    " points inside the block at " + hex(b->ptr) +
                                    "; free the pointer that malloc returned");
        }
      }
    }
    throw InvalidPointerError("pointer " + hex(ptr) + " was not allocated by the caching allocator on " +
                              where + " (a foreign pointer, or one of another device)");
  }
  free_requested(block, ctx);
  check_after_operation();
}

void DeviceCachingAllocator::record_stream(DevicePtr ptr, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Block* block = allocated_.find(ptr);
  if (block == nullptr) {
    throw InvalidPointerError("record_stream: pointer " + hex(ptr) + " is not a live allocation on device " +
                              std::to_string(device_.index()));
  }
  check_stream(stream);
  if (stream == block->stream) return;
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  check_after_operation();
}

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_blocks();
  check_after_operation();
}

}  // namespace cca
