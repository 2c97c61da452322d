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
    if (e.block != nullptr && e.ptr > block->ptr && (best == nullptr || e.ptr < best->ptr)) best = &e;
  }
  if (best != nullptr) return best->block;
  const std::size_t next = first_nonempty_bin(bin + 1);
  return next == kNumBins ? nullptr : lowest(bins_[next]);
}

std::string SizeBins::check() const {
  // Only the marked bins are read (the validator runs after every step of the randomized
  // tests); a heap left unmarked shows as a count that does not add up.
  std::size_t blocks = 0;
  for (std::size_t w = 0; w < words_.size(); ++w) {
    if (((summary_ >> w) & 1) != (words_[w] != 0 ? 1u : 0u)) return "the size bins' summary word is stale";
    for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
      const std::size_t bin = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      const Heap& heap = bins_[bin];
      const std::string where = "size bin " + std::to_string(bin);
      if (heap.empty()) return where + " is marked but empty";
      for (std::size_t i = 0; i < heap.size(); ++i) {
        const HeapEntry& e = heap[i];
        if (e.block == nullptr) {
          if (i != 0 || heap.size() < 2 || e.ptr != 0) return where + " has a vacant entry off the root or alone";
          continue;
        }
        ++blocks;
        if (e.block->bin_slot != i || e.block->ptr != e.ptr || bin_of(e.block->size) != bin) {
          return where + " entry " + std::to_string(i) + " disagrees with its block";
        }
        if (i > 0 && heap[(i - 1) / 2].ptr > e.ptr) return where + " is not a heap by address";
      }
    }
  }
  if (blocks != count_) return "size bins count " + std::to_string(count_) + " blocks but their marked bins hold " + std::to_string(blocks);
  return "";
}

void SizeBins::collect(std::vector<Block*>& out) const {
  for (std::uint64_t s = summary_; s != 0; s &= s - 1) {
    const std::size_t w = static_cast<std::size_t>(__builtin_ctzll(s));
    for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
      for (const HeapEntry& e : bins_[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))]) {
        if (e.block != nullptr) out.push_back(e.block);
      }
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
