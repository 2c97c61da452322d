// The free blocks of one stream whose size is at most kMaxBinnedSize, in one bin per size
// (sizes are multiples of kMinBlockSize), each bin a min-heap by address. Best fit is then
// "the first non-empty bin at or above the request, its lowest address": two bitmap scans
// and a heap pop, instead of a walk down a tree of every free block. This is the hot path
// of a cached alloc+free pair; bigger blocks stay in BlockPool's ordered tree.
// A cached pair takes a bin's lowest block and gives the same block back: the heap's root
// leaves and returns. So taking the root leaves it vacant (no sift down), and a block that
// comes back no higher than the root's children fills it (no sift up): both O(1), where the
// pair spent ~190 instructions sifting at 1k cached blocks. Invariant: a vacant root is
// {ptr 0, block nullptr} in a heap of at least two entries, so it sorts before every block
// and the entries below it are two valid heaps.
// Memory: 96 KiB of heap headers per (pool, stream) that ever held a binned free block
// (BlockPool drops a destroyed stream's once empty). Making the heaps in lazily allocated
// chunks of 64 saved most of that but cost ~10% on the cached pair in an A/B, so they are flat.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "block.h"
#include "../../common/hot.h"
#include "../../common/constants.h"

namespace cca {

class SizeBins {
 public:
  static constexpr std::size_t kNumBins = 4096;
  static constexpr Bytes kMaxBinnedSize = Bytes{kNumBins} * kMinBlockSize;  // 2 MiB: a whole small segment

  static bool binned(Bytes size) { return size <= kMaxBinnedSize; }

  void insert(Block* block);
  void erase(Block* block);
  bool contains(const Block* block) const;
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }

  // The lowest-addressed block of the smallest size >= `size` (a binned size: callers ask
  // binned() first), left in place; nullptr if every binned block is smaller.
  Block* first_at_least(Bytes size) const {
    const std::size_t bin = first_nonempty_bin(bin_of(size));
    return bin == kNumBins ? nullptr : lowest(bins_[bin]);
  }
  // The block after `block` in (size, address) order, or nullptr past the last binned one.
  Block* next_after(const Block* block) const;
  // The size of the largest binned block, 0 when empty: two bit scans (every block of a bin
  // has the bin's size), for monitoring without walking the blocks.
  Bytes largest_size() const {
    if (summary_ == 0) return 0;
    const std::size_t w = 63 - static_cast<std::size_t>(__builtin_clzll(summary_));
    const std::size_t b = 63 - static_cast<std::size_t>(__builtin_clzll(words_[w]));
    return (w * 64 + b + 1) * kMinBlockSize;
  }
  // "" when every bin is a heap by address (a vacant root only as the header says), each
  // entry knows its slot, the count and the bitmaps agree; else what is broken (validator).
  std::string check() const;
  // Appends every block, in no particular order.
  void collect(std::vector<Block*>& out) const;

 private:
  struct HeapEntry {
    DevicePtr ptr;
    Block* block;
  };
  using Heap = std::vector<HeapEntry>;

  // Only binned sizes come here (BlockPool asks binned() first), so the bin fits a size_t on
  // every target, wasm32's included.
  static std::size_t bin_of(Bytes size) { return size == 0 ? 0 : static_cast<std::size_t>((size - 1) / kMinBlockSize); }
  // A non-empty heap's lowest-addressed block: the root, or with the root vacant the lower
  // of its children.
  static Block* lowest(const Heap& heap) {
    if (heap[0].block != nullptr) return heap[0].block;
    return heap.size() > 2 && heap[2].ptr < heap[1].ptr ? heap[2].block : heap[1].block;
  }
  void clear_bin(std::size_t bin) {
    bins_[bin].clear();
    words_[bin / 64] &= ~(std::uint64_t{1} << (bin % 64));
    if (words_[bin / 64] == 0) summary_ &= ~(std::uint64_t{1} << (bin / 64));
  }
  // The first bin at or above `bin` holding a block, or kNumBins.
  std::size_t first_nonempty_bin(std::size_t bin) const;
  void sift_up(Heap& heap, std::size_t i);
  void sift_down(Heap& heap, std::size_t i);
  void place(Heap& heap, std::size_t i, const HeapEntry& e) {
    heap[i] = e;
    e.block->bin_slot = static_cast<std::uint32_t>(i);
  }

  // Bit b of words_[b / 64] is set when bin b is non-empty; bit w of summary_ when
  // words_[w] is non-zero.
  std::uint64_t summary_ = 0;
  std::array<std::uint64_t, kNumBins / 64> words_{};
  std::array<Heap, kNumBins> bins_;
  std::size_t count_ = 0;
};

// Inline: every cached alloc and free passes here, and the calls cost a cached pair ~30
// instructions, a split+merge pair ~55 (bench/RESULTS.md, 2026-11-26: "the cached pair in 30% fewer instructions").
CCA_HOT_INLINE void SizeBins::insert(Block* block) {
  const std::size_t bin = bin_of(block->size);
  Heap& heap = bins_[bin];
  ++count_;
  if (heap.empty()) {
    // The bin's only block (a split's remainder, a merged block): no sift.
    words_[bin / 64] |= std::uint64_t{1} << (bin % 64);
    summary_ |= std::uint64_t{1} << (bin / 64);
    heap.push_back(HeapEntry{block->ptr, block});
    block->bin_slot = 0;
    return;
  }
  if (heap[0].block == nullptr) {
    // The root is vacant: the block fills it if it is no higher than the children, else it
    // goes in at the root and sinks (the two subtrees are heaps).
    place(heap, 0, HeapEntry{block->ptr, block});
    const bool lowest = heap[1].ptr >= block->ptr && (heap.size() < 3 || heap[2].ptr >= block->ptr);
    if (!lowest) sift_down(heap, 0);
    return;
  }
  heap.push_back(HeapEntry{block->ptr, block});
  sift_up(heap, heap.size() - 1);
}

CCA_HOT_INLINE void SizeBins::erase(Block* block) {
  const std::size_t bin = bin_of(block->size);
  Heap& heap = bins_[bin];
  const std::size_t i = block->bin_slot;
  --count_;
  if (i == 0 && heap.size() > 1) {
    heap[0] = HeapEntry{0, nullptr};  // vacant: see the top of this file
    return;
  }
  const HeapEntry last = heap.back();
  heap.pop_back();
  if (i < heap.size()) {
    place(heap, i, last);
    // A vacant root's ptr is 0, so nothing rises into it.
    if (i > 0 && heap[(i - 1) / 2].ptr > last.ptr) {
      sift_up(heap, i);
    } else {
      sift_down(heap, i);
    }
  }
  if (heap.empty() || (heap.size() == 1 && heap[0].block == nullptr)) clear_bin(bin);
}

}  // namespace cca
