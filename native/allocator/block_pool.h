// A pool of free blocks ordered by (stream, size, address), searched best fit: the
// smallest block on the same stream that is large enough, lowest address on ties. Blocks
// never move between streams: a block freed on one stream may still be in use by work
// queued on it, so only that stream may reuse it without synchronizing.
#pragma once
#include <cstdint>
#include <set>

#include "block.h"
#include "config.h"
#include "node_cache.h"

namespace cca {

struct BlockBySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

// Unmapped expandable address space, by (stream, address): new memory goes to the lowest
// free address of a stream's segment.
struct BlockByAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

struct BlockPool {
  explicit BlockPool(bool small, std::uint32_t pool_id = 0)
      : is_small(small), pool_id(pool_id), blocks(BlockBySize{}, RecyclingAllocator<Block*>(&node_cache_)) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Removes and returns the best fit for a rounded request, or nullptr. Applies the
  // oversize rules: a request below max_split_size never takes a block at or above it,
  // and a request at or above it only takes a block less than
  // max_non_split_rounding_size bigger than itself.
  // With expandable segments on, a block followed by unmapped space counts that space as
  // part of its fit; with them off, expandable blocks are skipped.
  Block* take_best_fit(StreamId stream, std::size_t size, const AllocatorConfig& cfg);
  void insert(Block* block) { blocks.insert(block); }
  void erase(Block* block) { blocks.erase(block); }
  bool contains(Block* block) const { return blocks.count(block) > 0; }

  const bool is_small;
  const std::uint32_t pool_id;  // n of the MemPool id (0, n); 0: the default pools

 private:
  NodeCache node_cache_;  // declared before `blocks`, so it outlives the set's nodes

 public:
  std::set<Block*, BlockBySize, RecyclingAllocator<Block*>> blocks;
  std::set<Block*, BlockByAddress> unmapped;
  // Counts best-fit searches while garbage collection is on; a block's age is this count
  // minus its gc_stamp.
  std::uint64_t get_free_blocks_call_count = 0;
};

}  // namespace cca

namespace cca {

// A MemPool's private pools (PyTorch's PrivatePool): allocations routed to it are served
// from, and freed back to, its own small and large pools, never mixed with the default
// ones. It may be emptied and erased once released (use_count 0) and its segments are gone.
struct PrivatePool {
  explicit PrivatePool(std::uint32_t pool_id) : id(pool_id), small(true, pool_id), large(false, pool_id) {}
  const std::uint32_t id;
  BlockPool small;
  BlockPool large;
  int use_count = 1;             // the MemPool itself; +1 while allocations are routed to it
  std::size_t segment_count = 0;  // live segments (cudaMalloc_count)
};

}  // namespace cca
