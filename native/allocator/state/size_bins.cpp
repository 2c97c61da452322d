#include "size_bins.h"
#include "../../common/hot.h"

namespace cca {

std::size_t SizeBins::first_nonempty_bin(std::size_t bin) const {
  if (bin >= kNumBins) return kNumBins;
  std::size_t w = bin / 64;
  const std::uint64_t here = words_[w] & (~std::uint64_t{0} << (bin % 64));
  if (here != 0) return w * 64 + static_cast<std::size_t>(__builtin_ctzll(here));
  if (w + 1 == words_.size()) return kNumBins;
  const std::uint64_t later = summary_ & (~std::uint64_t{0} << (w + 1));
  if (later == 0) return kNumBins;
  w = static_cast<std::size_t>(__builtin_ctzll(later));
  return w * 64 + static_cast<std::size_t>(__builtin_ctzll(words_[w]));
}

CCA_HOT void SizeBins::insert(Block* block) {
  const std::size_t bin = bin_of(block->size);
  Heap& heap = bins_[bin];
  if (heap.empty()) {
    words_[bin / 64] |= std::uint64_t{1} << (bin % 64);
    summary_ |= std::uint64_t{1} << (bin / 64);
  }
  heap.push_back(HeapEntry{block->ptr, block});
  sift_up(heap, heap.size() - 1);
  ++count_;
}

CCA_HOT void SizeBins::erase(Block* block) {
  const std::size_t bin = bin_of(block->size);
  Heap& heap = bins_[bin];
  const std::size_t i = block->bin_slot;
  const HeapEntry last = heap.back();
  heap.pop_back();
  --count_;
  if (i < heap.size()) {
    place(heap, i, last);
    if (i > 0 && heap[(i - 1) / 2].ptr > last.ptr) {
      sift_up(heap, i);
    } else {
      sift_down(heap, i);
    }
  }
  if (heap.empty()) {
    words_[bin / 64] &= ~(std::uint64_t{1} << (bin % 64));
    if (words_[bin / 64] == 0) summary_ &= ~(std::uint64_t{1} << (bin / 64));
  }
}

bool SizeBins::contains(const Block* block) const {
  if (!binned(block->size)) return false;
  const Heap& heap = bins_[bin_of(block->size)];
  return block->bin_slot < heap.size() && heap[block->bin_slot].block == block;
}

Block* SizeBins::next_after(const Block* block) const {
  // Same size, next address: a heap is not ordered, so scan the bin. Only the rare paths
  // (expandable-segment preferences) step through blocks one by one.
  const std::size_t bin = bin_of(block->size);
  const HeapEntry* best = nullptr;
  for (const HeapEntry& e : bins_[bin]) {
    if (e.ptr > block->ptr && (best == nullptr || e.ptr < best->ptr)) best = &e;
  }
  if (best != nullptr) return best->block;
  const std::size_t next = first_nonempty_bin(bin + 1);
  return next == kNumBins ? nullptr : bins_[next][0].block;
}

void SizeBins::collect(std::vector<Block*>& out) const {
  for (std::uint64_t s = summary_; s != 0; s &= s - 1) {
    const std::size_t w = static_cast<std::size_t>(__builtin_ctzll(s));
    for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
      for (const HeapEntry& e : bins_[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]) out.push_back(e.block);
    }
  }
}

void SizeBins::sift_up(Heap& heap, std::size_t i) {
  const HeapEntry moving = heap[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (heap[parent].ptr <= moving.ptr) break;
    place(heap, i, heap[parent]);
    i = parent;
  }
  place(heap, i, moving);
}

void SizeBins::sift_down(Heap& heap, std::size_t i) {
  const HeapEntry moving = heap[i];
  const std::size_t n = heap.size();
  while (true) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap[child + 1].ptr < heap[child].ptr) ++child;
    if (heap[child].ptr >= moving.ptr) break;
    place(heap, i, heap[child]);
    i = child;
  }
  place(heap, i, moving);
}

}  // namespace cca
