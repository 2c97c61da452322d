// The ledger's bookkeeping: committing a change, recycling block objects, segments and
// MemPools coming and going, and the history settings.
#include "ledger.h"
#include "../../common/hot.h"

#include "../../common/clock.h"
#include "state_change.h"

namespace cca {

Ledger::~Ledger() {
  for (auto& entry : segments_) {
    for (Block* b = entry.second->head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
  for (Block* b : spare_blocks_) delete b;
}

const Segment* Ledger::segment_containing(DevicePtr ptr) const {
  for (const auto& entry : segments_) {
    const Segment& s = *entry.second;
    if (ptr >= s.ptr && ptr < s.ptr + s.size) return &s;
  }
  return nullptr;
}

CCA_HOT void Ledger::record_traces(TraceBatch batch) {
  const std::uint64_t now = clock_ticks();
  // The ring keeps what history asks for: none of it while history is off (set_history
  // skips every action then), when only a subscriber makes transitions collect entries.
  if (live_.mask() == 0) {
    // History alone, the common case: this loop is the trace-recording hot path, and the
    // one below costs it 16 more instructions per pair (bench/RESULTS.md, 2026-11-26: "what
    // PyTorch parity's second part costs").
    for (int i = 0; i < batch.count; ++i) {
      const TraceEntry& e = batch.entries[i];
      if (history_.skip_mask & (1u << static_cast<unsigned>(e.action))) continue;
      TraceEntry& slot = ring_.append();
      slot = e;
      slot.ticks = now;
      slot.seq = ++history_seq_;
    }
    return;
  }
  // A subscriber listens too: its queue gets what it asked for.
  for (int i = 0; i < batch.count; ++i) {
    const TraceEntry& e = batch.entries[i];
    const bool live = live_.wants(e.action);
    if (!(history_.skip_mask & (1u << static_cast<unsigned>(e.action)))) {
      TraceEntry& slot = ring_.append();
      slot = e;
      slot.ticks = now;
      slot.seq = ++history_seq_;
      if (live) live_.push(slot);
    } else if (live) {
      TraceEntry unnumbered = e;  // only the ring's entries are numbered, so its order has no gaps
      unnumbered.ticks = now;
      unnumbered.seq = 0;
      live_.push(unnumbered);
    }
  }
}

Block* Ledger::new_block() {
  if (spare_blocks_.empty()) return new Block();
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void Ledger::recycle(Block* block) {
  *block = Block{};
  spare_blocks_.push_back(block);
}

Segment& Ledger::add_segment(DevicePtr ptr, Bytes size, const BlockPool& pool, StreamId stream,
                             std::uint32_t stack) {
  auto owned = std::make_unique<Segment>();
  Segment& s = *owned;
  s.ptr = ptr;
  s.size = size;
  s.stream = stream;
  s.pool = own(&pool);
  s.stack = stack;
  Block* block = new_block();
  block->ptr = ptr;
  block->size = size;
  block->stream = stream;
  block->pool = own(&pool);
  block->segment = &s;
  s.head = block;
  if (pool.pool_id != 0) ++private_pool_of(pool.pool_id).segment_count;
  segments_.emplace(ptr, std::move(owned));
  return s;
}

// The segment goes with its one remaining block.
void Ledger::erase_segment(Block* only_block) {
  CCA_ASSERT(!only_block->is_split());
  const DevicePtr key = only_block->segment->ptr;  // copied: erase destroys the segment
  if (only_block->pool->pool_id != 0) --private_pool_of(only_block->pool->pool_id).segment_count;
  recycle(only_block);
  segments_.erase(key);
}

void Ledger::count(Counter c) {
  StateChange change;
  change.count(c);
  commit(change);
}

void Ledger::oom(std::uint64_t device_free, Bytes rounded, StreamId stream, const BlockPool& pool,
                 std::uint32_t stack, bool rejected) {
  StateChange change(tracing());
  change.count(rejected ? Counter::kOomRejection : Counter::kOom);
  // PyTorch's oom entry: the device's free bytes where the address would be.
  change.trace(TraceAction::kOom, device_free, rounded, stream, trace_stack(stack), 0, pool.pool_id);
  commit(change);
}

void Ledger::snapshot_taken(std::uint64_t active_bytes) {
  // PyTorch records every snapshot in the history, with the device's active bytes. It
  // changes no stat: with history off there is nothing to do (the monitoring path).
  if (!tracing()) return;
  StateChange change(true);
  change.trace(TraceAction::kSnapshot, 0, active_bytes, 0, 0, 0);
  commit(change);
}

void Ledger::annotated(const Block* block, std::uint32_t stack, std::uint32_t tag) {
  if (!tracing()) return;
  StateChange change(true);
  change.trace(TraceAction::kAnnotate, block->ptr, block->requested_size, block->stream, trace_stack(stack), tag,
               block->pool->pool_id);
  commit(change);
}

void Ledger::free_block_searched(const BlockPool& pool) { ++own(&pool)->get_free_blocks_call_count; }

void Ledger::pool_created(std::uint32_t id, bool no_split) {
  pools_.emplace(id, std::make_unique<PrivatePool>(id, no_split));
}

void Ledger::count_pool_reserved(std::uint32_t pool, const StatDelta& delta) {
  if (delta.reserved_change() == 0) return;
  std::array<Stat, 3>& reserved = private_pool_of(pool).reserved;
  reserved[kAggregate].apply(delta.reserved_change());
  reserved[delta.stat_pool()].apply(delta.reserved_change());
}

void Ledger::reset_peak_stats() {
  stats_.reset_peak();
  tags_.reset_peak();
  for (auto& entry : pools_) {
    for (Stat& s : entry.second->reserved) s.peak = s.current;
  }
}

void Ledger::reset_accumulated_stats() {
  stats_.reset_accumulated();
  for (auto& entry : pools_) {
    for (Stat& s : entry.second->reserved) s.allocated = s.freed = 0;
  }
}

std::vector<PoolReserved> Ledger::pool_reserved() const {
  std::vector<PoolReserved> out;
  out.reserve(pools_.size());
  for (const auto& entry : pools_) out.push_back(PoolReserved{entry.first, entry.second->reserved});
  return out;
}

void Ledger::pool_use_changed(std::uint32_t id, int delta) { private_pool_of(id).use_count += delta; }

void Ledger::pool_erased(std::uint32_t id) {
  CCA_ASSERT(private_pool_of(id).segment_count == 0);
  pools_.erase(id);
}

void Ledger::set_history(const HistoryOptions& options) {
  history_ = options;
  history_.clear_history = false;
  tracing_ = options.enabled || live_.mask() != 0;
  if (!options.enabled) {
    history_.context = RecordContext::kNever;
    history_.skip_mask = ~0u;  // with a subscriber, entries are still made: none for the ring
    ring_.clear();
    return;
  }
  if (options.clear_history) ring_.clear();
  ring_.set_max_entries(options.max_entries);
}

void Ledger::set_trace_subscription(std::uint32_t mask, std::size_t capacity) {
  live_.configure(mask, capacity);
  tracing_ = history_.enabled || mask != 0;
}

}  // namespace cca
