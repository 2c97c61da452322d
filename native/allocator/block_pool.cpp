#include "block_pool.h"

namespace cca {

Block* BlockPool::take_best_fit(StreamId stream, std::size_t size, const AllocatorConfig& cfg) {
  Block key;
  key.stream = stream;
  key.size = size;
  key.ptr = 0;
  auto it = blocks.lower_bound(&key);
  if (it == blocks.end() || (*it)->stream != stream) return nullptr;
  if ((*it)->expandable) {
    if (cfg.expandable_segments) {
      // Prefer a block that cannot grow over one followed by unmapped space, so that
      // space stays available for large requests.
      auto expandable_size = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable && next != blocks.end() && (*next)->stream == stream &&
             expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      do {
        ++it;
      } while (it != blocks.end() && (*it)->expandable && (*it)->stream == stream);
      if (it == blocks.end() || (*it)->stream != stream) return nullptr;
    }
  }
  Block* found = *it;
  // Note [Why oversize blocks are never split]: splitting a huge block for a small request
  // would pin the whole segment for as long as the small allocation lives.
  if (size < cfg.max_split_size && found->size >= cfg.max_split_size) return nullptr;
  if (size >= cfg.max_split_size && found->size >= size + cfg.max_non_split_rounding_size) {
    return nullptr;
  }
  blocks.erase(it);
  return found;
}

}  // namespace cca
