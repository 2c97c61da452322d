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
//   (stream_events.h). Completed events are collected at the start of every malloc.
// - This class decides and calls the device; every change of state is a transition of the
//   ledger (ledger.h), which keeps the stats and history in step with the blocks;
//   validate.cpp checks every invariant on demand. The size rules are in size_policy.h.
#include "caching_allocator.h"
#include "../../common/hot.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "../../common/message_format.h"

namespace cca {

DeviceCachingAllocator::DeviceCachingAllocator(Device& device, const AllocatorConfig& config)
    : device_(device), config_(config), events_(device) {
  if (config.per_process_memory_fraction_set) set_memory_fraction(config.per_process_memory_fraction);
}

// The device memory goes back first; the ledger then frees its block objects.
DeviceCachingAllocator::~DeviceCachingAllocator() {
  std::lock_guard<FutexMutex> lock(mu_);
  ipc_.close_all(device_);  // other processes' memory
  ledger_.for_each_segment([this](const Segment& segment) {
    if (segment.expandable) {
      for (std::size_t i = 0; i < segment.pages.size(); ++i) {
        if (segment.pages[i] != 0) {
          device_.unmap_memory(segment.ptr + i * segment.page_size, segment.page_size, segment.pages[i]);
        }
      }
      device_.release_address(segment.ptr, segment.size);
    } else {
      device_.free(segment.ptr);
    }
  });
}

void DeviceCachingAllocator::check_stream_in_set(StreamId stream) const {
  if (streams_.count(stream) == 0) {
    throw InvalidArgumentError("stream " + hex(stream) + " is not a live stream of device " +
                                   std::to_string(device_.index()) +
                                   ": it was destroyed, belongs to another device, or (made by other code) was never adopted",
                               "ERR_CCA_INVALID_STREAM");
  }
  last_live_stream_ = stream;
}

CCA_HOT_INLINE const Block* DeviceCachingAllocator::hand_out(const AllocParams& p, std::uint32_t owner) {
  HandOut h;
  h.requested = p.requested;
  h.size = p.size;
  h.split = !p.block->pool->no_split && should_split(p.block->size, p.size, splits_like_small(*p.block), config_);
  h.oversize = is_oversize(h.split ? p.size : p.block->size, config_);
  h.owner = owner;
  h.ctx = p.ctx;
  return ledger_.hand_out(p.block, p.block_in_free_set, h);
}

// The malloc both entry points share; `counted` runs under the lock once the block is handed
// out. A template, so the JS path's instantiation (an empty `counted`) is the code it was.
template <class Counted>
CCA_HOT DevicePtr DeviceCachingAllocator::malloc_with(std::uint64_t size, StreamId stream, std::uint32_t owner,
                                                      CallContext ctx, Counted&& counted) {
  if (size == 0) return 0;
  if (size >= kOneExaByte) {
    OutOfMemoryInfo info;
    info.device = device_.index();
    info.requested = size;
    throw OutOfMemoryError("CUDA out of memory. Tried to allocate more than 1EB memory.", info);
  }
  std::unique_lock<FutexMutex> lock(mu_);
  check_stream(stream);
  process_events();

  AllocParams p;
  p.ctx = ctx;
  p.requested = size;
  p.size = round_size(static_cast<Bytes>(size), config_);
  p.stream = stream;
  p.pool = &pool_for(p.size, stream);

  const bool found = caching_enabled_ && (get_free_block(p) || (trigger_free_memory_callbacks(lock) && get_free_block(p)));
  if (!found && !malloc_from_device(p)) throw_oom(p, lock);
  const DevicePtr ptr = hand_out(p, owner)->ptr;
  counted(size);
  check_after_operation();
  return ptr;
}

CCA_HOT DevicePtr DeviceCachingAllocator::malloc(std::uint64_t size, StreamId stream, std::uint32_t owner, CallContext ctx) {
  return malloc_with(size, stream, owner, ctx, [](std::uint64_t) {});
}

DevicePtr DeviceCachingAllocator::malloc_counted(std::uint64_t size, StreamId stream, std::uint32_t owner, CallContext ctx,
                                                 OwnerCounters& counters) {
  return malloc_with(size, stream, owner, ctx, [&counters](std::uint64_t n) { counters.on_malloc(n); });
}


// The rest of the chain after a cache miss (out of line: the cached path stays small).
bool DeviceCachingAllocator::malloc_from_device(AllocParams& p) {
  const ScopedValue<CallContext> released_by(release_ctx_, p.ctx);  // segments released on the way carry this call's context
  // The size of a new segment, needed only here. With caching off each allocation is a
  // segment of its own, returned at its free.
  p.alloc_size = caching_enabled_ ? allocation_size(p.size, config_) : p.size;
  if (gc_enabled()) garbage_collect_cached_blocks();
  // A rejection (throw_on_cudamalloc_oom) ends the chain at once.
  bool found = alloc_block(p, false) ||
               (!p.rejected && (try_mempool_fallback(p) || (release_available_cached_blocks(p) && alloc_block(p, false))));
  // Releasing the whole cache synchronizes every stream: never during a capture.
  if (!found && !p.rejected && routing_.captures.empty()) {
    release_cached_blocks();
    found = alloc_block(p, true);
  }
  return found;
}

bool DeviceCachingAllocator::trigger_free_memory_callbacks(std::unique_lock<FutexMutex>& lock) {
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
  if (is_retry) ledger_.count(Counter::kAllocRetry);
  const Bytes size = p.alloc_size;
  if (over_memory_fraction(size)) {
    p.device_status = Status::kOutOfMemory;
    p.rejected = config_.throw_on_cudamalloc_oom;
    return false;
  }
  if (use_expandable()) {
    p.block = try_allocate_expandable_block(p);
    p.block_in_free_set = true;
    if (p.block == nullptr) p.device_status = Status::kOutOfMemory;
    return p.block != nullptr;
  }
  DevicePtr ptr = 0;
  Status s = device_.malloc(&ptr, size);
  if (s == Status::kOutOfMemory) {
    p.device_status = s;
    return false;
  }
  if (s != Status::kOk) throw device_error(device_, "cudaMalloc of " + format_size(size), s);
  p.block = ledger_.segment_allocated(ptr, size, *p.pool, p.stream, is_oversize(size, config_), p.ctx.stack, p.ctx.tag);
  p.block_in_free_set = false;
  return true;
}

void DeviceCachingAllocator::throw_oom(const AllocParams& p, std::unique_lock<FutexMutex>& lock) {
  Bytes device_free = 0;
  Bytes device_total = 0;
  device_.mem_get_info(&device_free, &device_total);
  ledger_.oom(device_free, p.size, p.stream, *p.pool, p.ctx.stack, p.rejected);
  OutOfMemoryInfo info;
  info.device = device_.index();
  info.requested = p.requested;
  info.alloc_size = p.alloc_size;
  info.device_free = device_free;
  info.device_total = device_total;
  info.allowed = fraction_set_ ? allowed_memory_maximum_ : 0;
  info.allocated = static_cast<std::uint64_t>(ledger_.stats().current(kAllocatedBytes, kAggregate));
  info.reserved = static_cast<std::uint64_t>(ledger_.stats().current(kReservedBytes, kAggregate));
  ledger_.for_each_pool([&info](const BlockPool& pool) {
    for (const Block* b : pool.in_order()) {
      info.cached_free += b->size;
      ++info.free_blocks;
      info.largest_free_block = std::max<std::uint64_t>(info.largest_free_block, b->size);
    }
  });

  std::ostringstream msg;
  if (p.rejected) {
    msg << "Rejected before asking the device (throw_on_cudamalloc_oom): a new segment of "
        << format_size(info.alloc_size) << " would take reserved memory past the memory fraction's "
        << format_size(allowed_memory_maximum_) << ". ";
  }
  msg << "CUDA out of memory. Tried to allocate " << format_size(info.alloc_size) << ". GPU "
      << info.device << " has a total capacity of " << format_size(device_total) << " of which "
      << format_size(device_free) << " is free. ";
  if (fraction_set_) msg << format_size(allowed_memory_maximum_) << " allowed; ";
  // As PyTorch (PR #124673): the free blocks cached in private pools (CUDA graphs' and
  // MemPools') are memory no other request may take, so they count as allocated here.
  std::uint64_t private_free = 0;
  ledger_.for_each_private_pool([&private_free](const PrivatePool& pool) {
    for (const BlockPool* bp : {&pool.small, &pool.large}) {
      for (const Block* b : bp->in_order()) private_free += b->size;
    }
  });
  msg << "Of the allocated memory " << format_size(info.allocated + private_free)
      << " is allocated by the caching allocator, ";
  if (private_free > 0) msg << "with " << format_size(private_free) << " allocated in private pools (e.g., CUDA Graphs), ";
  msg << "and " << format_size(info.reserved - info.allocated - private_free)
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

void DeviceCachingAllocator::throw_not_allocated(DevicePtr ptr) const {
  const std::string where = "device " + std::to_string(device_.index());
  if (const Segment* segment = ledger_.segment_containing(ptr)) {
    for (const Block* b = segment->head; b != nullptr; b = b->next) {
      if (ptr == b->ptr) {
        throw InvalidPointerError("double free: pointer " + hex(ptr) + " on " + where + " was already freed");
      }
      if (ptr > b->ptr && ptr < b->ptr + b->size) {
        throw InvalidPointerError("pointer " + hex(ptr) + " on " + where + " points inside the block at " + hex(b->ptr) +
                                  "; free the pointer that malloc returned");
      }
    }
  }
  throw InvalidPointerError("pointer " + hex(ptr) + " was not allocated by the caching allocator on " + where +
                            " (a foreign pointer, or one of another device)");
}

CCA_HOT void DeviceCachingAllocator::free(DevicePtr ptr, CallContext ctx) {
  if (ptr == 0) return;
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* block = ledger_.find_allocated(ptr);
  if (block == nullptr) throw_not_allocated(ptr);
  free_block(block, ctx);
  check_after_operation();
}

void DeviceCachingAllocator::record_stream(DevicePtr ptr, StreamId stream) {
  std::lock_guard<FutexMutex> lock(mu_);
  const Block* block = ledger_.find_allocated(ptr);
  if (block == nullptr) {
    throw InvalidPointerError("record_stream: pointer " + hex(ptr) + " is not a live allocation on device " +
                              std::to_string(device_.index()));
  }
  check_stream(stream);
  if (stream == block->stream) return;
  stream_used(block, stream);
  check_after_operation();
}

std::string DeviceCachingAllocator::validate() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return ledger_.validate(events_.pending() + routing_.deferred.size());
}

void DeviceCachingAllocator::empty_cache(CallContext ctx) {
  std::lock_guard<FutexMutex> lock(mu_);
  refuse_during_capture("empty_cache()");
  const ScopedValue<CallContext> released_by(release_ctx_, ctx);
  release_cached_blocks();
  check_after_operation();
}

void DeviceCachingAllocator::set_caching_enabled(bool enabled) {
  std::lock_guard<FutexMutex> lock(mu_);
  if (enabled == caching_enabled_) return;
  refuse_during_capture(enabled ? "turning caching on" : "turning caching off");
  if (!enabled) release_cached_blocks();
  caching_enabled_ = enabled;
  check_after_operation();
}

bool DeviceCachingAllocator::caching_enabled() const {
  std::lock_guard<FutexMutex> lock(mu_);
  return caching_enabled_;
}

}  // namespace cca
