// A pool of free blocks searched best fit: the smallest block on the same stream that is
// large enough, lowest address on ties, i.e. the first in (stream, size, address) order.
// Blocks never move between streams: a block freed on one stream may still be in use by
// work queued on it, so only that stream may reuse it without synchronizing.
//
// Storage: blocks up to 2 MiB sit in per-stream size bins (size_bins.h), the rest in an
// ordered tree keyed by (stream, size, address). Every binned size is below every size in
// the tree, so "first in order" is the bins' answer when they have one, else the tree's.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <set>
#include <utility>
#include <vector>

#include "block.h"
#include "../../common/stat.h"
#include "node_cache.h"
#include "size_bins.h"

namespace cca {

// A tree entry carries its block's key, so the walk compares without reaching the block.
struct FreeKey {
  StreamId stream;
  Bytes size;
  DevicePtr ptr;
  Block* block;
};

struct FreeKeyLess {
  bool operator()(const FreeKey& a, const FreeKey& b) const {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.ptr < b.ptr;
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

class BlockPool {
 public:
  explicit BlockPool(bool small, std::uint32_t pool_id = 0, bool no_split = false)
      : is_small(small), pool_id(pool_id), no_split(no_split), tree_(FreeKeyLess{}, RecyclingAllocator<FreeKey>(&node_cache_)) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The first free block of `stream` in (size, address) order with at least `size` bytes,
  // and the one after a given block: the search that the best-fit rules (size_policy.h)
  // walk. Both leave the block in place.
  const Block* first_at_least(StreamId stream, Bytes size) const {
    if (SizeBins::binned(size)) {
      if (const SizeBins* bins = find_bins(stream)) {
        if (const Block* b = bins->first_at_least(size)) return b;
      }
    }
    auto it = tree_.lower_bound(FreeKey{stream, size, 0, nullptr});
    return it == tree_.end() || it->stream != stream ? nullptr : it->block;
  }
  const Block* next_after(const Block* block) const;
  // A block's stream, size and address must not change while it is in the pool.
  void insert(Block* block) {
    if (SizeBins::binned(block->size)) {
      bins_for(block->stream).insert(block);
    } else {
      tree_.insert(key_of(block));
    }
  }
  void erase(Block* block) {
    if (SizeBins::binned(block->size)) {
      find_bins(block->stream)->erase(block);
    } else {
      tree_.erase(key_of(block));
    }
  }
  bool contains(const Block* block) const;
  // Unmapped expandable address space, by (stream, address).
  void insert_unmapped(Block* block) { unmapped_.insert(block); }
  void erase_unmapped(Block* block) { unmapped_.erase(block); }
  bool contains_unmapped(const Block* block) const { return unmapped_.count(const_cast<Block*>(block)) > 0; }
  std::size_t unmapped_count() const { return unmapped_.size(); }
  // Calls f(block) for the unmapped blocks of `stream` in address order while f returns
  // false; returns the block f accepted, or nullptr.
  template <class F>
  const Block* find_unmapped(StreamId stream, F&& f) const {
    Block key;
    key.stream = stream;
    for (auto it = unmapped_.lower_bound(&key); it != unmapped_.end() && (*it)->stream == stream; ++it) {
      if (f(static_cast<const Block*>(*it))) return *it;
    }
    return nullptr;
  }
  template <class F>
  void for_each_unmapped(F&& f) const {
    for (const Block* b : unmapped_) f(b);
  }
  std::size_t size() const;
  // "" when each stream's size bins are well formed (SizeBins::check), else what is broken.
  std::string check_bins() const;
  // Drops the (empty) bins of streams that hold no free block here and are not in `live`:
  // a destroyed stream's bins would otherwise stay allocated for good.
  template <class IsLive>
  void drop_dead_stream_bins(IsLive&& is_live) {
    for (std::size_t i = 0; i < streams_.size();) {
      if (streams_[i].second->empty() && !is_live(streams_[i].first)) {
        streams_[i] = std::move(streams_.back());
        streams_.pop_back();
      } else {
        ++i;
      }
    }
    last_ = nullptr;
  }
  // Every free block in (stream, size, address) order: for the paths that release memory
  // or inspect the pool, never for a cached alloc.
  std::vector<const Block*> in_order() const;
  // The size of the largest free (mapped) block on any stream, 0 if none: O(streams), for
  // monitoring; in_order() would sort every block.
  Bytes largest_free() const;

  const bool is_small;
  const std::uint32_t pool_id;  // n of the MemPool id (0, n); 0: the default pools
  const bool no_split;          // a MemPool(no_split=True)'s: its blocks are never split

  // Counts best-fit searches while garbage collection is on; a block's age is this count
  // minus its gc_stamp.
  std::uint64_t get_free_blocks_call_count = 0;

 private:
  static FreeKey key_of(const Block* b) { return FreeKey{b->stream, b->size, b->ptr, const_cast<Block*>(b)}; }
  SizeBins* find_bins(StreamId stream) const {
    if (last_ != nullptr && last_stream_ == stream) return last_;
    for (const auto& [s, bins] : streams_) {
      if (s == stream) {
        last_stream_ = stream;
        last_ = bins.get();
        return last_;
      }
    }
    return nullptr;
  }
  // The last stream's bins inline: a cached pair's free gives its block back there.
  SizeBins& bins_for(StreamId stream) {
    if (last_ != nullptr && last_stream_ == stream) return *last_;
    return find_or_add_bins(stream);
  }
  SizeBins& find_or_add_bins(StreamId stream);
  // Bins of each stream that ever had a binned free block; streams are few, so a list.
  std::vector<std::pair<StreamId, std::unique_ptr<SizeBins>>> streams_;
  mutable StreamId last_stream_ = 0;
  mutable SizeBins* last_ = nullptr;
  std::set<Block*, BlockByAddress> unmapped_;
  NodeCache node_cache_;  // declared before `tree_`, so it outlives the tree's nodes
  std::set<FreeKey, FreeKeyLess, RecyclingAllocator<FreeKey>> tree_;  // blocks above 2 MiB
};

}  // namespace cca

namespace cca {

// A MemPool's private pools (PyTorch's PrivatePool): allocations routed to it are served
// from, and freed back to, its own small and large pools, never mixed with the default
// ones. It may be emptied and erased once released (use_count 0) and its segments are gone.
struct PrivatePool {
  PrivatePool(std::uint32_t pool_id, bool no_split)
      : id(pool_id), small(true, pool_id, no_split), large(false, pool_id, no_split) {}
  const std::uint32_t id;
  BlockPool small;
  BlockPool large;
  int use_count = 1;             // the MemPool itself; +1 while allocations are routed to it
  std::size_t segment_count = 0;  // live segments (cudaMalloc_count)
  // reserved_bytes of this pool's segments (all / small_pool / large_pool), as PyTorch's
  // reserved_bytes_by_private_pools reports it; kept by the commits that change them.
  std::array<Stat, 3> reserved{};
};

}  // namespace cca
