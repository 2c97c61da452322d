// Merging a freed block with its free neighbours, inline in each transition that frees: the
// StateChange it records into then never has its address taken, so the compiler keeps the
// stat deltas in registers (bench/RESULTS.md, session 16).
#pragma once
#include "../../common/hot.h"
#include "ledger.h"
#include "state_change.h"

namespace cca {

// Whether a block's neighbour merges into it when it becomes free.
CCA_HOT_INLINE bool Ledger::mergeable(const Block* neighbour, const Block& block) {
  return neighbour != nullptr && neighbour->state == BlockState::kFree && neighbour->mapped == block.mapped;
}

// Merges `block` with a free neighbour that mergeable() accepts.
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

// Merges `block` with the neighbours given (each null, or one that mergeable() accepts).
CCA_HOT_INLINE void Ledger::merge_with(Block* block, Block* prev, Block* next, StateChange& change) {
  if (prev != nullptr) absorb(block, prev, change);
  if (next != nullptr) absorb(block, next, change);
}

CCA_HOT_INLINE void Ledger::merge_free_neighbours(Block* block, StateChange& change) {
  Block* prev = block->prev.get();
  Block* next = block->next.get();
  merge_with(block, mergeable(prev, *block) ? prev : nullptr, mergeable(next, *block) ? next : nullptr, change);
}

}  // namespace cca
