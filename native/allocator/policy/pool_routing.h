// Where a device's allocations go besides the default pools, and what captures leave
// pending: the MemPool routes of use_mem_pool, the captures underway (Note [Allocating under
// graph capture] in captures.cpp), the frees a capture deferred and the streams recorded
// during one. Two flags summarize it for the cached path, which tests one each.
#pragma once
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../device/device.h"
#include "../state/block.h"

namespace cca {

// Pool ids, unique in the process as PyTorch's counter makes them (pool_routing.cpp): the next
// one, taken, and the next to come, not taken.
std::uint32_t take_pool_id();
std::uint32_t peek_pool_id();

// A pool as PyTorch names a MemPool's id: "(0, n)".
inline std::string pool_name(std::uint32_t pool) { return "(0, " + std::to_string(pool) + ")"; }

struct PoolRouting {
  // (thread, pool) routes in the order they began: PyTorch's captures_underway for MemPools.
  std::vector<std::pair<std::thread::id, std::uint32_t>> routes;
  // (capture id, pool) routes in the order they began: the captures underway.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> captures;
  bool capture_routing = true;  // false only by the tests' hook
  // MemPools whose cached blocks a request of the default pools may take before an
  // out-of-memory error (PyTorch's use_on_oom), in the order they were marked.
  std::vector<std::uint32_t> use_on_oom;
  struct DeferredFree {
    const Block* block;
    std::vector<StreamId> uses;  // the streams its events go on
  };
  std::vector<DeferredFree> deferred;  // frees waiting for no capture to be underway
  // Streams recorded on a live block while a capture was underway (PyTorch's
  // block_to_cudagraph_stream_uses); always a subset of the block's stream_uses, so a block
  // with none has no entry.
  std::unordered_map<const Block*, std::vector<StreamId>> capture_uses;

  // Set while routes or captures is non-empty: pool_for's one test on the cached path.
  bool routed = false;
  // Set while captures, deferred or capture_uses is non-empty: process_events' one test on
  // the cached path, and free_used_block's.
  bool capture_work = false;

  // After any change above.
  void update_flags() {
    routed = !routes.empty() || !captures.empty();
    capture_work = !captures.empty() || !deferred.empty() || !capture_uses.empty();
  }
};

}  // namespace cca
