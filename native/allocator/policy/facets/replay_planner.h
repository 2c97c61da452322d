// Replay's questions and changes (a facet: facet_access.h). A dry run of a request that
// changes nothing (plan_malloc: malloc's chain asked step by step), and a recorded segment
// rebuilt with its live blocks at their offsets, or given back (placement.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "../caching_allocator.h"

namespace cca {

// A live block of a segment to rebuild (place_segment): where it starts in the segment, its
// block size and what its caller asked for.
struct PlacedBlock {
  Bytes offset = 0;
  Bytes size = 0;
  std::uint64_t requested = 0;
};

// What malloc(size, stream) routed to `pool` (0: the default pools) would do now: replay
// asks it to tell a release inside a recorded request from an empty_cache() between
// requests, and whether a history's first allocation could have reused a segment of the
// start.
struct MallocPlan {
  // The cached block it would be served from; with one, the chain stops there.
  struct Cached {
    DevicePtr ptr = 0;
    Bytes size = 0;
  };
  std::optional<Cached> cached;
  // A memory fraction is set (answered even for size 0).
  bool limited = false;
  // With none cached and a fraction set: it would give back cached memory before asking the
  // device (garbage collection due, or the fraction refuses a new segment).
  bool limit_releases = false;
  // With none cached and max_split_size set: the cached oversize segments it would release
  // had its device malloc failed, and whether it would then retry.
  std::vector<Bytes> oversize_sizes;
  bool oversize_retries = false;
};

class ReplayPlanner {
 public:
  explicit ReplayPlanner(DeviceCachingAllocator& allocator) : a_(allocator) {}

  MallocPlan plan_malloc(std::uint64_t size, StreamId stream, std::uint32_t pool) const;
  // A new segment of `size` bytes in `pool` (0: the default pools; `small`: the small pool),
  // laid out as recorded: `live` (sorted, disjoint, 512-byte aligned, inside it) handed out
  // to `owner` and the gaps between them free. Returns its address, then the live blocks'.
  // Built from the usual transitions (the gaps are handed out and given back), so the state
  // is one that a sequence of allocations and frees could leave. Throws
  // InvalidArgumentError for a layout that is not one, or with expandable segments on,
  // before touching anything; OutOfMemoryError when the device has no room for the segment.
  std::vector<DevicePtr> place_segment(Bytes size, StreamId stream, std::uint32_t pool, bool small,
                                       const std::vector<PlacedBlock>& live, std::uint32_t owner);
  // Gives back a placed segment that holds nothing (replay placed it to try a reading of the
  // history and dropped that reading). InvalidPointerError unless `base` starts such a segment.
  void unplace_segment(DevicePtr base);

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
