// Merging a freed block with its free neighbours, inline in each transition that frees: the
// StateChange it records into then never has its address taken, so the compiler keeps the
// stat deltas in registers (bench/RESULTS.md, 2026-11-26: "the cached pair in 30% fewer instructions").
#pragma once
#include "../../common/hot.h"
#include "ledger.h"
#include "state_change.h"

namespace cca {

// The neighbours `block` merges with when it becomes free: free, and mapped as it is.
CCA_HOT_INLINE Ledger::Neighbours Ledger::mergeable_neighbours(Block* block) {
  Block* prev = block->prev.get();
  Block* next = block->next.get();
  const auto merges = [block](const Block* n) {
    return n != nullptr && n->state == BlockState::kFree && n->mapped == block->mapped;
  };
  return Neighbours{merges(prev) ? prev : nullptr, merges(next) ? next : nullptr};
}

// Merges `block` with a neighbour that mergeable_neighbours() gave.
CCA_HOT_INLINE void Ledger::absorb(Block* block, Block* neighbour, StateChange& change) {
  change.before(*neighbour);
  if (neighbour->mapped) {
    neighbour->pool->erase(neighbour);
  } else {
    neighbour->pool->erase_unmapped(neighbour);
  }
  block->segment->absorb(block, neighbour);
  recycle(neighbour);
}

CCA_HOT_INLINE void Ledger::merge_with(Block* block, Neighbours n, StateChange& change) {
  if (n.prev != nullptr) absorb(block, n.prev, change);
  if (n.next != nullptr) absorb(block, n.next, change);
}

CCA_HOT_INLINE void Ledger::merge_free_neighbours(Block* block, StateChange& change) {
  merge_with(block, mergeable_neighbours(block), change);
}

}  // namespace cca
