// The transitions of a block's life (see ledger.h). Each records the blocks it touches
// before and after into one StateChange and commits it.
#include <algorithm>

#include "ledger.h"
#include "../../common/hot.h"
#include "ledger_merge.h"
#include "state_change.h"

namespace cca {

const Block* Ledger::segment_allocated(DevicePtr ptr, Bytes size, const BlockPool& pool, StreamId stream,
                                       bool oversize, std::uint32_t stack, std::uint32_t tag) {
  Segment& segment = add_segment(ptr, size, pool, stream, stack);
  segment.counted_oversize = oversize;
  Block* block = segment.head;
  StateChange change(tracing());
  change.after(segment);
  change.after(*block);
  change.count(Counter::kDeviceAlloc);
  // The label in force travels on every entry, as PyTorch's record_trace gives each one.
  change.trace(TraceAction::kSegmentAlloc, ptr, size, stream, trace_stack(stack), tag, pool.pool_id);
  commit_reserved(change, pool);
  return block;
}

CCA_HOT_INLINE void Ledger::finish_hand_out(Block* result, StateChange& change, const HandOut& h) {
  result->state = BlockState::kAllocated;
  result->requested_size = static_cast<Bytes>(h.requested);
  result->owner = h.owner;
  result->counted_oversize = h.oversize;
  result->alloc_stack = h.ctx.stack;
  result->tag = h.ctx.tag;
  change.after(*result);
  if (h.ctx.tag != 0) {
    tags_.allocated(h.owner, h.ctx.tag, static_cast<std::int64_t>(result->size), static_cast<std::int64_t>(h.requested));
  }
  allocated_.insert(result->ptr, result);
  change.trace(TraceAction::kAlloc, result->ptr, h.requested, result->stream, trace_stack(h.ctx.stack), h.ctx.tag,
               result->pool->pool_id);
  commit(change);
}

// The cached path: a free block handed out whole.
CCA_HOT_INLINE const Block* Ledger::hand_out_whole(Block* block, const HandOut& h) {
  StateChange change(tracing());
  // Asserted by the caller; said again here because the erase call in between makes the
  // compiler forget it, and recording the block with its state known drops the other cases.
  CCA_ASSUME(block->state == BlockState::kFree && block->mapped);
  change.before(*block);
  finish_hand_out(block, change, h);
  return block;
}

CCA_HOT const Block* Ledger::hand_out(const Block* handed, bool in_free_set, const HandOut& h) {
  Block* block = own(handed);
  CCA_ASSERT(block->state == BlockState::kFree && block->mapped);
  if (in_free_set) block->pool->erase(block);
  // Each case commits on its own, so the compiler sees which kinds each one moves.
  if (!h.split) return hand_out_whole(block, h);
  StateChange change(tracing());
  CCA_ASSUME(block->state == BlockState::kFree && block->mapped);
  change.before(*block);
  Block* result = new_block();
  block->segment->split_front(block, result, h.size);
  block->pool->insert(block);
  // The remainder: free, mapped and split (the validator checks each), said again for the
  // compiler after the insert call.
  CCA_ASSUME(block->state == BlockState::kFree && block->mapped && block->is_split());
  change.after(*block);
  finish_hand_out(result, change, h);
  return result;
}

// A free block goes back to its pool, and the change that freed it is committed.
CCA_HOT_INLINE void Ledger::return_to_pool(Block* block, StateChange& change) {
  block->state = BlockState::kFree;
  block->gc_stamp = block->pool->get_free_blocks_call_count;
  block->pool->insert(block);
  change.after(*block);
  commit(change);
}

// A pending block becomes free: merged with free neighbours and put back in its pool, in
// one commit. The case with nothing to merge (a cached pair's free) commits on its own, so
// the compiler sees which kinds it moves.
CCA_HOT_INLINE void Ledger::complete_free(Block* block, StateChange& change, std::uint32_t stack) {
  change.trace(TraceAction::kFreeCompleted, block->ptr, block->requested_size, block->stream, stack, block->tag,
               block->pool->pool_id);
  const Neighbours n = mergeable_neighbours(block);
  if (n.prev != nullptr || n.next != nullptr) {
    merge_with(block, n, change);
    return_to_pool(block, change);
  } else {
    return_to_pool(block, change);
  }
}

void Ledger::stream_used(const Block* block, StreamId stream) {
  auto& uses = own(block)->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void Ledger::stream_destroyed(StreamId stream) {
  allocated_.for_each([stream](DevicePtr, Block* b) {
    auto& uses = b->stream_uses;
    uses.erase(std::remove(uses.begin(), uses.end(), stream), uses.end());
  });
}

CCA_HOT void Ledger::free_requested(const Block* freed, int events, CallContext ctx) {
  Block* block = own(freed);
  CCA_ASSERT(block->state == BlockState::kAllocated && block->event_count == 0);
  block->stream_uses.clear();
  allocated_.erase(block->ptr);
  if (block->tag != 0) {
    tags_.freed(block->owner, block->tag, static_cast<std::int64_t>(block->size),
                static_cast<std::int64_t>(block->requested_size));
  }
  // With context "all" a free carries the stack of the free site, else the allocation's; a
  // free made where no stack could be taken (a DLPack consumer's deleter, native code) carries
  // the allocation's too, rather than none.
  const std::uint32_t stack =
      trace_stack(history_.context == RecordContext::kAll && ctx.stack != 0 ? ctx.stack : block->alloc_stack);
  StateChange change(tracing());
  CCA_ASSUME(block->state == BlockState::kAllocated);
  change.before(*block);
  change.trace(TraceAction::kFreeRequested, block->ptr, block->requested_size, block->stream, stack, block->tag,
               block->pool->pool_id);
  block->state = BlockState::kPendingFree;
  block->event_count = events;
  if (events == 0) {
    // Nothing to wait for: complete the free in the same commit. "Free requested" and
    // "free completed" touch disjoint stats, so the result equals two commits.
    complete_free(block, change, stack);
    return;
  }
  change.after(*block);
  commit(change);
}

void Ledger::event_completed(const Block* waiting) {
  Block* block = own(waiting);
  CCA_ASSERT(block->state == BlockState::kPendingFree && block->event_count > 0);
  if (--block->event_count > 0) return;
  StateChange change(tracing());
  change.before(*block);
  complete_free(block, change, trace_stack(block->alloc_stack));
}

void Ledger::deferred_events_recorded(const Block* waiting, int events) {
  Block* block = own(waiting);
  CCA_ASSERT(block->state == BlockState::kPendingFree && block->event_count == 1 && events >= 0);
  if (events > 0) {
    block->event_count = events;  // no stat counts events: nothing to commit
    return;
  }
  block->event_count = 0;
  StateChange change(tracing());
  change.before(*block);
  complete_free(block, change, trace_stack(block->alloc_stack));
}

void Ledger::segment_released(const Block* released, CallContext ctx) {
  Block* block = own(released);
  CCA_ASSERT(block->state == BlockState::kFree && !block->is_split() && !block->expandable);
  const Segment& segment = *block->segment;
  StateChange change(tracing());
  change.before(*block);
  change.before(segment);
  change.count(Counter::kDeviceFree);
  change.trace(TraceAction::kSegmentFree, segment.ptr, segment.size, segment.stream,
               trace_stack(ctx.stack != 0 ? ctx.stack : segment.stack), ctx.tag, block->pool->pool_id);
  block->pool->erase(block);
  commit_reserved(change, *block->pool);
  erase_segment(block);
}

}  // namespace cca
