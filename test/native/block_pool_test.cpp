// BlockPool and the best-fit rule (size_policy.h) against a reference model: an ordered set
// of (stream, size, address) and the rule written the plain way (walk the set in order).
// Random inserts, erases of arbitrary blocks, best-fit takes and takes given straight back
// (a cached pair), with blocks on both sides of the 2 MiB bin limit, expandable blocks with
// and without unmapped space after them, and oversize limits.
#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "allocator/state/block_pool.h"
#include "allocator/policy/size_policy.h"
#include "harness.h"

using namespace cca;

namespace {

using Key = std::tuple<StreamId, std::size_t, DevicePtr>;

Key key(const Block* b) { return Key{b->stream, b->size, b->ptr}; }

struct Reference {
  std::set<Key> keys;

  // The first block in order for (stream, size), then the expandable and oversize rules.
  const Block* best_fit(const std::vector<std::unique_ptr<Block>>& all, StreamId stream, std::size_t size,
                        const AllocatorConfig& cfg) const {
    auto block_at = [&](const Key& k) -> const Block* {
      for (const auto& b : all) {
        if (key(b.get()) == k) return b.get();
      }
      return nullptr;
    };
    auto it = keys.lower_bound(Key{stream, size, 0});
    if (it == keys.end() || std::get<0>(*it) != stream) return nullptr;
    const Block* found = block_at(*it);
    auto grows = [](const Block* b) { return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0); };
    if (found->expandable) {
      if (cfg.expandable_segments) {
        auto next = std::next(it);
        while (found->expandable && next != keys.end() && std::get<0>(*next) == stream &&
               grows(block_at(*next)) < grows(found)) {
          found = block_at(*next);
          ++next;
        }
      } else {
        do {
          ++it;
        } while (it != keys.end() && std::get<0>(*it) == stream && block_at(*it)->expandable);
        if (it == keys.end() || std::get<0>(*it) != stream) return nullptr;
        found = block_at(*it);
      }
    }
    if (size < cfg.max_split_size && found->size >= cfg.max_split_size) return nullptr;
    if (size >= cfg.max_split_size && found->size >= size + cfg.max_non_split_rounding_size) return nullptr;
    return found;
  }
};

void run(std::uint32_t seed, bool expandable_on, std::size_t max_split) {
  std::mt19937_64 rng(seed);
  BlockPool pool(true);
  Reference ref;
  AllocatorConfig cfg;
  cfg.expandable_segments = expandable_on;
  cfg.max_split_size = max_split;
  std::vector<std::unique_ptr<Block>> all;       // owns every block made
  std::vector<Block*> in_pool;
  Block unmapped_tail;                            // what an expandable block may grow into
  unmapped_tail.mapped = false;
  unmapped_tail.size = 6 << 20;
  const StreamId streams[3] = {0, 0x100, 0x200};
  auto random_size = [&]() -> std::size_t {
    switch (rng() % 4) {
      case 0: return 512 * (1 + rng() % 8);                 // a few small sizes: many ties
      case 1: return 512 * (1 + rng() % 4096);              // anywhere in the bins
      case 2: return (std::size_t{2} << 20) + 512 * (rng() % 3);  // around the bin limit
      default: return 512 * (4097 + rng() % 60000);         // tree sizes up to ~31 MiB
    }
  };
  for (int step = 0; step < 20000; ++step) {
    const unsigned op = static_cast<unsigned>(rng() % 10);
    if (op < 5 || in_pool.empty()) {
      auto b = std::make_unique<Block>();
      b->stream = streams[rng() % 3];
      b->size = random_size();
      // Random addresses, so equal sizes arrive in every address order.
      b->ptr = 0x10000000 + 512 * (rng() % (1u << 24));
      b->expandable = rng() % 5 == 0;
      if (b->expandable && rng() % 2 == 0) b->next = &unmapped_tail;
      if (ref.keys.count(key(b.get())) > 0) continue;
      pool.insert(b.get());
      ref.keys.insert(key(b.get()));
      in_pool.push_back(b.get());
      all.push_back(std::move(b));
    } else if (op < 7) {
      const std::size_t i = rng() % in_pool.size();
      Block* b = in_pool[i];
      pool.erase(b);
      ref.keys.erase(key(b));
      in_pool[i] = in_pool.back();
      in_pool.pop_back();
    } else {
      const StreamId stream = streams[rng() % 3];
      const std::size_t size = random_size();
      const Block* want = ref.best_fit(all, stream, size, cfg);
      Block* got = const_cast<Block*>(best_cached_block(pool, stream, size, cfg));
      if (got != nullptr) pool.erase(got);
      if (want != got) {
        harness::fail(__FILE__, __LINE__,
                      "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": best fit for " +
                          std::to_string(size) + " differs from the reference");
      }
      if (got != nullptr && op == 9) {
        pool.insert(got);  // a cached pair: the block taken comes straight back (a vacant heap root)
      } else if (got != nullptr) {
        ref.keys.erase(key(got));
        in_pool.erase(std::find(in_pool.begin(), in_pool.end(), got));
      }
    }
    CHECK_EQ(pool.size(), ref.keys.size());
    const std::string bins = pool.check_bins();
    if (!bins.empty()) harness::fail(__FILE__, __LINE__, "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": " + bins);
    if (step % 997 == 0) {
      const std::vector<const Block*> ordered = pool.in_order();
      CHECK_EQ(ordered.size(), ref.keys.size());
      auto it = ref.keys.begin();
      for (const Block* b : ordered) CHECK(key(b) == *it++);
      for (const Block* b : in_pool) CHECK(pool.contains(b));
      // largest_free (metrics) agrees with the largest block the reference holds.
      std::size_t largest = 0;
      for (const Block* b : ordered) largest = std::max(largest, b->size);
      CHECK_EQ(pool.largest_free(), largest);
    }
  }
}

}  // namespace

TEST(block_pool_matches_an_ordered_set_reference) {
  run(1, false, kUnlimited);
  run(2, true, kUnlimited);
  run(3, true, std::size_t{24} << 20);
  run(4, false, std::size_t{21} << 20);
}

TEST(block_pool_forgets_the_bins_of_destroyed_streams) {
  BlockPool pool(true);
  Block a;
  a.stream = 0x100;
  a.size = 4096;
  a.ptr = 0x2000000;
  pool.insert(&a);
  pool.drop_dead_stream_bins([](StreamId) { return false; });
  CHECK(pool.contains(&a));  // still holds a block: kept
  CHECK(best_cached_block(pool, 0x100, 4096, AllocatorConfig{}) == &a);
  pool.erase(&a);
  pool.drop_dead_stream_bins([](StreamId) { return false; });
  CHECK(best_cached_block(pool, 0x100, 512, AllocatorConfig{}) == nullptr);
  pool.insert(&a);  // bins are made again on demand
  CHECK(pool.contains(&a));
  CHECK_EQ(pool.size(), std::size_t{1});
}
