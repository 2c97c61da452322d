#include "block_pool.h"

#include <algorithm>

namespace cca {

SizeBins& BlockPool::find_or_add_bins(StreamId stream) {
  if (SizeBins* bins = find_bins(stream)) return *bins;
  streams_.emplace_back(stream, std::make_unique<SizeBins>());
  last_stream_ = stream;
  last_ = streams_.back().second.get();
  return *last_;
}

bool BlockPool::contains(const Block* block) const {
  if (SizeBins::binned(block->size)) {
    const SizeBins* bins = find_bins(block->stream);
    return bins != nullptr && bins->contains(block);
  }
  auto it = tree_.find(key_of(block));
  return it != tree_.end() && it->block == block;
}

std::size_t BlockPool::size() const {
  std::size_t n = tree_.size();
  for (const auto& entry : streams_) n += entry.second->size();
  return n;
}

std::string BlockPool::check_bins() const {
  for (const auto& entry : streams_) {
    std::string broken = entry.second->check();
    if (!broken.empty()) return broken;
  }
  return "";
}

Bytes BlockPool::largest_free() const {
  Bytes best = 0;
  for (const auto& entry : streams_) best = std::max(best, entry.second->largest_size());
  // The tree is ordered by (stream, size, address): each stream's last entry is its largest.
  auto it = tree_.end();
  while (it != tree_.begin()) {
    --it;
    best = std::max(best, it->size);
    it = tree_.lower_bound(FreeKey{it->stream, 0, 0, nullptr});
  }
  return best;
}

std::vector<const Block*> BlockPool::in_order() const {
  std::vector<Block*> out;
  for (const auto& entry : streams_) entry.second->collect(out);
  std::sort(out.begin(), out.end(), [](const Block* a, const Block* b) {
    return FreeKeyLess{}(key_of(a), key_of(b));
  });
  // Tree blocks come after every binned block of their stream.
  std::vector<const Block*> merged;
  merged.reserve(out.size() + tree_.size());
  auto bin_it = out.begin();
  for (const FreeKey& k : tree_) {
    while (bin_it != out.end() && (*bin_it)->stream <= k.stream) merged.push_back(*bin_it++);
    merged.push_back(k.block);
  }
  merged.insert(merged.end(), bin_it, out.end());
  return merged;
}

const Block* BlockPool::next_after(const Block* block) const {
  if (SizeBins::binned(block->size)) {
    if (const Block* b = find_bins(block->stream)->next_after(block)) return b;
    return first_at_least(block->stream, SizeBins::kMaxBinnedSize + 1);
  }
  auto it = tree_.upper_bound(key_of(block));
  return it == tree_.end() || it->stream != block->stream ? nullptr : it->block;
}

}  // namespace cca
