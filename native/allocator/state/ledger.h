// The ledger: everything the allocator knows about memory (segments and their blocks, the
// free pools, private pools, the pointer map of live allocations, the stats and the trace
// ring) and the only code that changes it.
//
// Its public mutators are the transitions below, each one step of a block's life
//
//   segment allocated / pages mapped -> block handed out (split) -> free requested
//     -> [pending on other streams' events] -> free completed (merged)
//     -> segment released / pages unmapped
//
// and each of these records the blocks it touches before and after, the counter it bumps
// and its trace entries in one StateChange, committed at once: the stats follow block
// states and the history cannot disagree with them (the validator proves both). The other
// mutators (stream uses, MemPool use counts, history settings, stat resets, the GC's
// search count) change no block and no stat, so they need no commit. Everything else
// reads: the ledger hands out only const blocks, pools and segments, and their links are
// const-propagating (link.h), so code outside cannot change a block, a pool or a stat; the
// compiler refuses it. Device calls are the allocator's: it makes them first and records
// the outcome here, so a failed device call leaves the ledger as it was.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../common/hot.h"
#include "block_pool.h"
#include "history_options.h"
#include "pointer_map.h"
#include "segment.h"
#include "state_change.h"
#include "stats.h"
#include "tag_counters.h"
#include "trace_queue.h"
#include "trace_ring.h"

namespace cca {

// How a free block is handed to a request, as the policy (size_policy.h) decided it.
struct HandOut {
  std::uint64_t requested = 0;  // the caller's size
  Bytes size = 0;         // rounded
  bool split = false;           // split off the front `size` bytes; the rest stays free
  bool oversize = false;        // counts in oversize_allocations
  std::uint32_t owner = 0;
  CallContext ctx;
};

class Ledger {
 public:
  Ledger() = default;
  // Frees the block objects; the device memory is the allocator's to give back first.
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // ---- reading ----
  const BlockPool& default_pool(bool small) const { return small ? small_blocks_ : large_blocks_; }
  const PrivatePool* private_pool(std::uint32_t id) const {
    auto it = pools_.find(id);
    return it == pools_.end() ? nullptr : it->second.get();
  }
  // f(const PrivatePool&) for each MemPool's pools.
  template <class F>
  void for_each_private_pool(F&& f) const {
    for (const auto& entry : pools_) f(static_cast<const PrivatePool&>(*entry.second));
  }
  // f(const BlockPool&) for the default pools, then each private one.
  template <class F>
  void for_each_pool(F&& f) const {
    f(small_blocks_);
    f(large_blocks_);
    for (const auto& entry : pools_) {
      f(static_cast<const BlockPool&>(entry.second->small));
      f(static_cast<const BlockPool&>(entry.second->large));
    }
  }
  template <class F>
  void for_each_segment(F&& f) const {
    for (const auto& entry : segments_) f(static_cast<const Segment&>(*entry.second));
  }
  std::size_t segment_count() const { return segments_.size(); }
  // The segment whose range holds `ptr`, or nullptr (for error messages: a linear scan).
  const Segment* segment_containing(DevicePtr ptr) const;
  const Block* find_allocated(DevicePtr ptr) const { return allocated_.find(ptr); }
  template <class F>
  void for_each_allocated(F&& f) const {
    allocated_.for_each([&](DevicePtr, const Block* b) { f(b); });
  }
  std::size_t allocated_count() const { return allocated_.size(); }
  const StatCounters& stats() const { return stats_; }
  const TagLedger& tag_counters() const { return tags_; }
  Bytes reserved_bytes() const { return static_cast<Bytes>(stats_.current(kReservedBytes, kAggregate)); }
  const HistoryOptions& history() const { return history_; }
  const TraceRing& ring() const { return ring_; }
  // Checks every invariant (validate.cpp); "" when all hold, else the first broken clause.
  // `queued_events`: how many events the allocator's StreamEvents holds.
  std::string validate(std::size_t queued_events) const;

  // ---- transitions (ledger_transitions.cpp, ledger_expandable.cpp) ----
  // A new segment of `pool` whose single block is free but not in the free set: the caller
  // hands it out at once (hand_out with in_free_set false).
  const Block* segment_allocated(DevicePtr ptr, Bytes size, const BlockPool& pool, StreamId stream,
                                 bool oversize, std::uint32_t stack, std::uint32_t tag = 0);
  // A free block given to a caller; `in_free_set` says whether it is still in its pool's set.
  const Block* hand_out(const Block* block, bool in_free_set, const HandOut& h);
  // record_stream: the block waits, when freed, for work queued on `stream` so far.
  void stream_used(const Block* block, StreamId stream);
  // A destroyed stream is waited for already: no block needs to wait for it again.
  void stream_destroyed(StreamId stream);
  // The caller freed the block; `events` were recorded on the streams it was used on (its
  // stream uses are cleared). With none it is free at once.
  void free_requested(const Block* block, int events, CallContext ctx);
  // One of the block's events completed; with the last, its free completes.
  void event_completed(const Block* block);
  // A free deferred by a graph capture (requested with one stand-in event, the capture's
  // end) got its real events: `events` of them now outstanding; with none it completes.
  void deferred_events_recorded(const Block* block, int events);
  // The device freed the segment of this free, unsplit block, in a call made with `ctx`: its
  // entry carries ctx's label, and ctx's stack or else the one that allocated the segment
  // (PyTorch's release_block: `context ? context : context_when_segment_allocated`).
  void segment_released(const Block* block, CallContext ctx = {});
  // Expandable segments (Note [Expandable segments] in expandable_segments.cpp).
  // A reserved range with no page mapped: one unmapped block.
  const Block* expandable_reserved(DevicePtr base, Bytes size, Bytes page_size, const BlockPool& pool,
                                   StreamId stream, std::uint32_t stack);
  // The device mapped handles.size() pages from the start of the unmapped block.
  void pages_mapped(const Block* unmapped, const std::vector<std::uint64_t>& handles, std::uint32_t stack);
  // The device unmapped pages [first, end) of the segment, all inside the free block.
  void pages_unmapped(const Block* block, std::size_t first, std::size_t end);
  // The device released the range of this unmapped block that spans its segment.
  void expandable_released(const Block* block);
  // Events that change no block.
  void count(Counter c);
  // The request that could not be met, of `pool` (its MemPool id on the entry, as PyTorch's).
  // `rejected`: refused by throw_on_cudamalloc_oom, counted in num_oom_rejections instead of
  // num_ooms.
  void oom(std::uint64_t device_free, Bytes rounded, StreamId stream, const BlockPool& pool, std::uint32_t stack,
           bool rejected);
  void snapshot_taken(std::uint64_t active_bytes);
  // Metadata attached to a live block after the fact (PyTorch's _annotate_memory): an
  // `annotate` entry at the block's address carrying `tag` and the annotation site's stack.
  // Changes no state; nothing to record with history off.
  void annotated(const Block* block, std::uint32_t stack, std::uint32_t tag);
  // A best-fit search while garbage collection is on: blocks age by these.
  void free_block_searched(const BlockPool& pool);
  // MemPools.
  // A new MemPool; with no_split its blocks are never split.
  void pool_created(std::uint32_t id, bool no_split);
  void pool_use_changed(std::uint32_t id, int delta);
  void pool_erased(std::uint32_t id);  // only once it holds no segment
  // Frees the size bins of streams that hold no free block and fail is_live(stream).
  template <class IsLive>
  void drop_dead_stream_bins(IsLive&& is_live) {
    small_blocks_.drop_dead_stream_bins(is_live);
    large_blocks_.drop_dead_stream_bins(is_live);
    for (auto& entry : pools_) {
      entry.second->small.drop_dead_stream_bins(is_live);
      entry.second->large.drop_dead_stream_bins(is_live);
    }
  }
  // History and stats.
  void set_history(const HistoryOptions& options);
  // Live trace events: entries of the actions in `mask` are queued (at most `capacity`,
  // the rest counted as dropped) whether or not history is recorded; mask 0 stops it.
  void set_trace_subscription(std::uint32_t mask, std::size_t capacity);
  void drain_traces(std::vector<TraceEntry>& out, std::uint64_t& dropped) { live_.drain(out, dropped); }
  // The next number of the history order, as a trace entry would take it.
  std::uint64_t next_seq() { return ++history_seq_; }
  void reset_peak_stats();
  void reset_accumulated_stats();
  // Each live MemPool's reserved_bytes, by id.
  std::vector<PoolReserved> pool_reserved() const;

 private:
  // Everything reachable from the ledger is its own: the transitions take the const views
  // they handed out and write through these. The only casts in the core.
  static Block* own(const Block* b) { return const_cast<Block*>(b); }
  static BlockPool* own(const BlockPool* p) { return const_cast<BlockPool*>(p); }

  // Inline: every transition ends here, and with history off it is the stat update alone.
  CCA_HOT_INLINE void commit(const StateChange& change) {
    change.delta().apply_to(stats_);
    if (change.counter() != Counter::kNone) stats_.bump(change.counter());
    // A copy, so that no transition's StateChange has its address taken: the compiler then
    // keeps its stat deltas in registers and drops the kinds a transition cannot move.
    if (change.trace_count() != 0) record_traces(TraceBatch(change.traces()));
  }
  void record_traces(TraceBatch batch);
  // commit() for the transitions that change reserved memory (segments and pages coming and
  // going, all off the cached path): a MemPool's own reserved bytes follow too.
  void commit_reserved(const StateChange& change, const BlockPool& pool) {
    commit(change);
    if (pool.pool_id != 0) count_pool_reserved(pool.pool_id, change.delta());
  }
  void count_pool_reserved(std::uint32_t pool, const StatDelta& delta);
  // Whether transitions collect trace entries: history is on, or a subscriber listens.
  bool tracing() const { return tracing_; }
  // The stack a trace entry carries under the current context level.
  std::uint32_t trace_stack(std::uint32_t stack) const {
    return history_.context >= RecordContext::kAlloc ? stack : 0;
  }
  const Block* hand_out_whole(Block* block, const HandOut& h);
  // Marks `result` allocated as `h` says, records it and commits `change`.
  void finish_hand_out(Block* result, StateChange& change, const HandOut& h);
  // Completes the free of a pending block and commits `change`.
  void complete_free(Block* block, StateChange& change, std::uint32_t stack);
  void return_to_pool(Block* block, StateChange& change);
  struct Neighbours {
    Block* prev;  // null when it does not merge
    Block* next;
  };
  static Neighbours mergeable_neighbours(Block* block);
  // Merges `block` with the neighbours given, taking them out of their sets.
  void merge_with(Block* block, Neighbours n, StateChange& change);
  void absorb(Block* block, Block* neighbour, StateChange& change);
  // Merges `block` with free neighbours of the same mapped state, taking them out of their
  // sets; the caller records `block` after and puts it in the right set.
  void merge_free_neighbours(Block* block, StateChange& change);
  // A new segment of `pool` with one free block spanning it, registered (and counted in its
  // MemPool); the caller records it in its change.
  Segment& add_segment(DevicePtr ptr, Bytes size, const BlockPool& pool, StreamId stream, std::uint32_t stack);
  void erase_segment(Block* only_block);
  PrivatePool& private_pool_of(std::uint32_t id) { return *pools_.at(id); }
  Block* new_block();
  void recycle(Block* block);

  BlockPool small_blocks_{true};
  BlockPool large_blocks_{false};
  std::unordered_map<std::uint32_t, std::unique_ptr<PrivatePool>> pools_;
  PointerMap allocated_;  // kAllocated blocks by address
  std::unordered_map<DevicePtr, std::unique_ptr<Segment>> segments_;
  StatCounters stats_;
  TagLedger tags_;
  // Off, skipping every action: the ring takes nothing while history is off (set_history
  // keeps it so), even when a trace subscriber makes transitions collect entries.
  HistoryOptions history_{false, RecordContext::kNever, 1, ~0u, false};
  TraceRing ring_;
  TraceQueue live_;
  bool tracing_ = false;  // history_.enabled || live_.mask() != 0, kept in one flag for the hot path
  std::uint64_t history_seq_ = 0;  // the last seq handed out; never reset, so never reused
  std::vector<Block*> spare_blocks_;  // recycled Block objects: no heap traffic on split/merge
};

}  // namespace cca
