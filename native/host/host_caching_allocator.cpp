#include "host_caching_allocator.h"

#include <chrono>
#include <string>

#include "../common/errors.h"
#include "../common/message_format.h"

namespace cca {

namespace {

// PyTorch's rounding of a pinned request: the next power of two.
std::size_t round_up_pow2(std::size_t size) {
  std::size_t p = 1;
  while (p < size) p <<= 1;
  return p;
}

std::int64_t micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void HostDurationStat::add(std::int64_t us) {
  total += us;
  max = count == 0 || us > max ? us : max;
  min = count == 0 || us < min ? us : min;
  ++count;
}

HostCachingAllocator::HostCachingAllocator(std::vector<Device*> devices) : devices_(std::move(devices)) {}

HostCachingAllocator::~HostCachingAllocator() {
  // The context may be lost (a kernel fault): statuses are ignored on the way out. Blocks
  // still handed out are left alone: JS may hold an ArrayBuffer over one (a runtime replaced
  // by cuda.sim.configure()), and freeing it would turn that into a window on freed memory.
  for (const PendingEvent& e : pending_) devices_[static_cast<std::size_t>(e.device)]->event_destroy(e.event);
  for (auto& [ptr, block] : blocks_) {
    if (!block->handed_out && block->pending_events == 0) devices_[0]->host_free(block->ptr);
    delete block;
  }
}

// The system refused page-locked memory: an out-of-memory error of host memory, with what
// the cache holds (the caller holds the lock).
void HostCachingAllocator::throw_host_oom(std::size_t size, std::size_t block_size) const {
  OutOfMemoryInfo info;
  info.device = static_cast<std::uint64_t>(-1);
  info.requested = size;
  info.alloc_size = block_size;
  info.allocated = static_cast<std::uint64_t>(stats_.active_bytes.current);
  info.reserved = static_cast<std::uint64_t>(stats_.allocated_bytes.current);
  for (const auto& [bytes, blocks] : free_) {
    info.cached_free += bytes * blocks.size();
    info.free_blocks += blocks.size();
    if (!blocks.empty()) info.largest_free_block = std::max<std::uint64_t>(info.largest_free_block, bytes);
  }
  throw OutOfMemoryError("Pinned host memory out of memory. Tried to allocate " + format_size(block_size) +
                             " of page-locked host memory (" + devices_[0]->last_error() + "). The host allocator holds " +
                             format_size(info.reserved) + " of pinned memory, " + format_size(info.allocated) +
                             " of it in use; memory.empty_host_cache() returns the " + format_size(info.cached_free) +
                             " cached, and the system's limit on locked memory (ulimit -l, container limits) bounds the rest.",
                         info, "ERR_CCA_HOST_OUT_OF_MEMORY");
}

void* HostCachingAllocator::allocate(std::size_t size, std::size_t* rounded, std::uint32_t stack) {
  if (size == 0) return nullptr;
  if (size > (std::size_t{1} << 62)) {
    throw InvalidArgumentError("pinned host memory of " + format_size(size) + " is more than any machine has",
                               "ERR_INVALID_ARG_VALUE");
  }
  const std::size_t block_size = round_up_pow2(size);
  if (rounded != nullptr) *rounded = block_size;
  std::lock_guard<std::mutex> lock(mu_);
  process_events_locked();
  auto it = free_.find(block_size);
  Block* b = nullptr;
  if (it != free_.end() && !it->second.empty()) {
    b = it->second.back();
    it->second.pop_back();
  } else {
    void* p = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    Status s = devices_[0]->host_alloc(&p, block_size);
    // Only an allocation made is timed, as PyTorch's (its check throws before the timing).
    if (s == Status::kOutOfMemory) throw_host_oom(size, block_size);
    if (s != Status::kOk) {
      throw device_error(*devices_[0], "allocating " + format_size(block_size) + " of pinned host memory", s);
    }
    stats_.host_alloc_time.add(micros_since(t0));
    b = new Block{static_cast<char*>(p), block_size, false, 0, {}, 0};
    blocks_.emplace(b->ptr, b);
    history_.record(HostAction::kSegmentAlloc, b->ptr, b->size, 0);
    ++stats_.num_host_alloc;
    stats_.allocations.apply(1);
    stats_.allocated_bytes.apply(static_cast<std::int64_t>(block_size));
  }
  b->handed_out = true;
  b->stack = history_.keeps_alloc_stacks() ? stack : 0;
  history_.record(HostAction::kAlloc, b->ptr, b->size, b->stack);
  stats_.active_requests.apply(1);
  stats_.active_bytes.apply(static_cast<std::int64_t>(b->size));
  return b->ptr;
}

HostCachingAllocator::Block* HostCachingAllocator::find_locked(const void* ptr, std::size_t bytes) const {
  const char* p = static_cast<const char*>(ptr);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return nullptr;
  --it;
  Block* b = it->second;
  if (!b->handed_out || p < b->ptr || bytes > b->size || p + bytes > b->ptr + b->size) return nullptr;
  return b;
}

bool HostCachingAllocator::contains(const void* ptr, std::size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(ptr, bytes) != nullptr;
}

bool HostCachingAllocator::record_use(const void* ptr, std::size_t bytes, int device, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Block* b = find_locked(ptr, bytes);
  if (b == nullptr) return false;
  for (const auto& use : b->uses) {
    if (use.first == device && use.second == stream) return true;
  }
  b->uses.emplace_back(device, stream);
  return true;
}

void HostCachingAllocator::free(void* ptr, std::uint32_t stack) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(static_cast<const char*>(ptr));
  if (it == blocks_.end() || !it->second->handed_out) {
    throw InvalidPointerError("free of pinned host memory: " + hex(reinterpret_cast<std::uintptr_t>(ptr)) +
                              " is not a live block of the host allocator (freed already?)");
  }
  Block* b = it->second;
  b->handed_out = false;
  b->stack = 0;  // PyTorch forgets the allocation's context at free
  history_.record(HostAction::kFreeRequested, b->ptr, b->size, history_.keeps_free_stacks() ? stack : 0);
  // Work queued on each stream that used the block may still read or write it: an event per
  // stream, and the block is reusable once all of them completed.
  std::vector<std::pair<int, StreamId>> uses = std::move(b->uses);
  b->uses.clear();
  for (const auto& [device, stream] : uses) {
    Device& d = *devices_[static_cast<std::size_t>(device)];
    EventId e = 0;
    Status s = d.event_create(&e);
    if (s == Status::kOk) s = d.event_record(e, stream);
    if (s != Status::kOk) {
      // Without an event there is no knowing when the copy ends: wait for the stream.
      if (e != 0) d.event_destroy(e);
      s = d.stream_synchronize(stream);
      if (s != Status::kOk) throw device_error(d, "waiting for a copy from pinned host memory", s);
      continue;
    }
    pending_.push_back(PendingEvent{device, e, b});
    ++b->pending_events;
  }
  if (b->pending_events == 0) make_reusable_locked(b);
}

void HostCachingAllocator::make_reusable_locked(Block* b) {
  history_.record(HostAction::kFreeCompleted, b->ptr, b->size, 0);
  stats_.active_requests.apply(-1);
  stats_.active_bytes.apply(-static_cast<std::int64_t>(b->size));
  free_[b->size].push_back(b);
}

void HostCachingAllocator::process_events_locked() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    PendingEvent& e = pending_[i];
    Device& d = *devices_[static_cast<std::size_t>(e.device)];
    Status s = d.event_query(e.event);
    if (s == Status::kNotReady) {
      pending_[kept++] = e;
      continue;
    }
    if (s != Status::kOk) {
      // Keep the rest as they are (and this one), so the failure loses nothing.
      for (std::size_t j = i; j < pending_.size(); ++j) pending_[kept++] = pending_[j];
      pending_.resize(kept);
      throw device_error(d, "querying a pinned block's copy event", s);
    }
    d.event_destroy(e.event);
    if (--e.block->pending_events == 0) make_reusable_locked(e.block);
  }
  pending_.resize(kept);
}

void HostCachingAllocator::release_locked(Block* b) {
  const auto t0 = std::chrono::steady_clock::now();
  Status s = devices_[0]->host_free(b->ptr);
  stats_.host_free_time.add(micros_since(t0));
  if (s != Status::kOk) throw device_error(*devices_[0], "freeing pinned host memory", s);
  history_.record(HostAction::kSegmentFree, b->ptr, b->size, 0);
  ++stats_.num_host_free;
  stats_.allocations.apply(-1);
  stats_.allocated_bytes.apply(-static_cast<std::int64_t>(b->size));
  blocks_.erase(b->ptr);
  delete b;
}

void HostCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  process_events_locked();
  for (auto& [size, list] : free_) {
    while (!list.empty()) {
      Block* b = list.back();
      release_locked(b);
      list.pop_back();
    }
  }
  free_.clear();
}

void HostCachingAllocator::set_history(const HostHistoryOptions& options, bool clear) {
  std::lock_guard<std::mutex> lock(mu_);
  history_.set(options, clear);
}

bool HostCachingAllocator::history_enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_.enabled();
}

void HostCachingAllocator::history_snapshot(std::vector<BlockRecord>& blocks, std::vector<HostTraceEntry>* traces) const {
  std::lock_guard<std::mutex> lock(mu_);
  blocks.clear();
  if (traces != nullptr) traces->clear();
  if (!history_.enabled()) return;
  blocks.reserve(blocks_.size());
  for (const auto& [ptr, b] : blocks_) {
    const int state = b->handed_out ? 1 : b->pending_events > 0 ? 2 : 0;
    blocks.push_back(BlockRecord{reinterpret_cast<std::uintptr_t>(b->ptr), b->size, state, b->stack});
  }
  if (traces != nullptr) *traces = history_.entries();
}

void HostCachingAllocator::append_stacks(std::vector<std::uint32_t>& ids) const {
  std::lock_guard<std::mutex> lock(mu_);
  history_.append_stacks(ids);
  for (const auto& [ptr, b] : blocks_) {
    if (b->stack != 0) ids.push_back(b->stack);
  }
}

HostStats HostCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void HostCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Stat* s : {&stats_.allocations, &stats_.allocated_bytes, &stats_.active_requests, &stats_.active_bytes}) {
    s->peak = s->current;
  }
  stats_.host_alloc_time.max = stats_.host_alloc_time.min = 0;
  stats_.host_free_time.max = stats_.host_free_time.min = 0;
}

void HostCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Stat* s : {&stats_.allocations, &stats_.allocated_bytes, &stats_.active_requests, &stats_.active_bytes}) {
    s->allocated = 0;
    s->freed = 0;
  }
  stats_.num_host_alloc = stats_.num_host_free = 0;
  stats_.host_alloc_time = HostDurationStat{};
  stats_.host_free_time = HostDurationStat{};
}

}  // namespace cca
