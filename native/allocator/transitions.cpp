// The state transitions of the allocator, and the only code that changes blocks:
//
//   segment allocated -> (block split) -> block handed out -> free requested
//        -> [pending on other streams' events] -> free completed (+ blocks merged)
//        -> segment released
//
// Each records the blocks it touches before and after into a StateChange and commits it,
// so stats follow block states exactly. A device call that can fail happens before any
// mutation, so a failure leaves the state as it was.
#include <string>

#include "caching_allocator.h"
#include "clock.h"
#include "size_policy.h"
#include "state_change.h"

namespace cca {

Block* DeviceCachingAllocator::new_block() {
  if (spare_blocks_.empty()) return new Block();
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void DeviceCachingAllocator::delete_block(Block* block) {
  *block = Block{};
  spare_blocks_.push_back(block);
}

void DeviceCachingAllocator::commit(const StateChange& change) {
  change.delta().apply_to(stats_);
  if (change.trace_count() == 0) return;
  const std::uint64_t now = clock_ticks();
  for (int i = 0; i < change.trace_count(); ++i) {
    TraceEntry e = change.trace_entry(i);
    if (history_.skip_mask & (1u << static_cast<unsigned>(e.action))) continue;
    e.ticks = now;
    e.seq = ++history_seq_;
    ring_.push(e);
  }
}

void DeviceCachingAllocator::record_event(TraceAction action, DevicePtr addr, std::uint64_t size, StreamId stream,
                                          std::uint32_t stack) {
  StateChange change(tracing());
  change.trace(action, addr, size, stream, stack, 0);
  commit(change);
}

// The new segment's single block is free and unsplit but not in the free set: the caller
// hands it out at once.
Block* DeviceCachingAllocator::segment_allocated(DevicePtr ptr, std::size_t size, const AllocParams& p) {
  BlockPool& pool = *p.pool;
  const StreamId stream = p.stream;
  auto segment = std::make_unique<Segment>();
  segment->ptr = ptr;
  segment->size = size;
  segment->stream = stream;
  segment->pool = &pool;
  segment->counted_oversize = size >= config_.max_split_size;
  Block* block = new_block();
  block->ptr = ptr;
  block->size = size;
  block->stream = stream;
  block->pool = &pool;
  block->segment = segment.get();
  segment->head = block;
  segment->stack = p.ctx.stack;

  StateChange change(tracing());
  change.after(*segment);
  change.after(*block);
  change.trace(TraceAction::kSegmentAlloc, ptr, size, stream, trace_stack(p.ctx.stack), 0, pool.pool_id);
  segments_.emplace(ptr, std::move(segment));
  if (pool.pool_id != 0) ++pools_.at(pool.pool_id)->segment_count;
  ++stats_.num_device_alloc;
  commit(change);
  return block;
}

// `block` was taken out of the free set; split off the front if the size rules say so.
Block* DeviceCachingAllocator::hand_out(Block* block, const AllocParams& p, std::uint32_t owner) {
  StateChange change(tracing());
  change.before(*block);
  Block* result = block;
  if (should_split(block->size, p.size, block->pool->is_small || block->expandable, config_)) {
    Block* front = new_block();
    front->ptr = block->ptr;
    front->size = p.size;
    front->stream = block->stream;
    front->pool = block->pool;
    front->segment = block->segment;
    front->expandable = block->expandable;
    front->prev = block->prev;
    front->next = block;
    if (front->prev != nullptr) {
      front->prev->next = front;
    } else {
      block->segment->head = front;
    }
    block->prev = front;
    block->ptr += p.size;
    block->size -= p.size;
    block->pool->insert(block);
    change.after(*block);
    result = front;
  }
  result->state = BlockState::kAllocated;
  result->requested_size = static_cast<std::size_t>(p.requested);
  result->owner = owner;
  result->counted_oversize = result->size >= config_.max_split_size;
  result->alloc_stack = p.ctx.stack;
  result->tag = p.ctx.tag;
  allocated_.insert(result->ptr, result);
  change.after(*result);
  change.trace(TraceAction::kAlloc, result->ptr, p.requested, result->stream, trace_stack(p.ctx.stack), p.ctx.tag,
               result->pool->pool_id);
  commit(change);
  return result;
}

void DeviceCachingAllocator::free_requested(Block* block, CallContext ctx) {
  // Recording events is the one step here that can fail; do it first.
  if (!block->stream_uses.empty()) {
    events_.record(block, block->stream_uses);
    block->stream_uses.clear();
  }
  allocated_.erase(block->ptr);
  // With context "all" a free carries the stack of the free site, else the allocation's.
  const std::uint32_t stack =
      trace_stack(history_.context == RecordContext::kAll ? ctx.stack : block->alloc_stack);
  StateChange change(tracing());
  change.before(*block);
  change.trace(TraceAction::kFreeRequested, block->ptr, block->requested_size, block->stream, stack, block->tag,
               block->pool->pool_id);
  block->state = BlockState::kPendingFree;
  if (block->event_count == 0) {
    // Nothing to wait for: complete the free in the same commit. "Free requested" and
    // "free completed" touch disjoint stats, so the result equals two commits.
    complete_free(block, change, stack);
  } else {
    change.after(*block);
  }
  commit(change);
}

void DeviceCachingAllocator::free_completed(Block* block) {
  StateChange change(tracing());
  change.before(*block);
  complete_free(block, change, trace_stack(block->alloc_stack));
  commit(change);
}

// A pending block becomes free: merged with free neighbours and put back in its pool.
void DeviceCachingAllocator::complete_free(Block* block, StateChange& change, std::uint32_t stack) {
  change.trace(TraceAction::kFreeCompleted, block->ptr, block->requested_size, block->stream, stack, block->tag,
               block->pool->pool_id);
  merge_free_neighbours(block, change);
  block->state = BlockState::kFree;
  block->gc_stamp = block->pool->get_free_blocks_call_count;
  block->pool->insert(block);
  change.after(*block);
}

// `block` is free, unsplit (it spans its whole segment) and in its pool's free set.
void DeviceCachingAllocator::segment_released(Block* block) {
  Segment* segment = block->segment;
  Status s = device_.free(segment->ptr);
  if (s != Status::kOk) {
    throw DeviceError("cudaFree failed on device " + std::to_string(device_.index()) + ": " +
                      status_name(s) + " (" + device_.last_error() + ")");
  }
  StateChange change(tracing());
  change.before(*block);
  change.before(*segment);
  change.trace(TraceAction::kSegmentFree, segment->ptr, segment->size, segment->stream, 0, 0, block->pool->pool_id);
  block->pool->erase(block);
  if (block->pool->pool_id != 0) --pools_.at(block->pool->pool_id)->segment_count;
  ++stats_.num_device_free;
  commit(change);
  delete_block(block);
  const DevicePtr key = segment->ptr;  // copied: erase destroys the segment
  segments_.erase(key);
}

}  // namespace cca
