// Live trace events (memory.onTrace), a facet (facet_access.h): the ledger copies each entry
// whose action a subscriber asked for into a bounded queue as it is recorded, independent
// of history; this is the subscription and the draining of that queue.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../caching_allocator.h"

namespace cca {

class LiveTraces {
 public:
  explicit LiveTraces(DeviceCachingAllocator& allocator) : a_(allocator) {}

  // Entries of the actions in `mask` (bit 1 << action) queue up to `capacity` until drained;
  // mask 0 stops. One queue, so one subscriber (`owner`: a JS environment) at a time:
  // another's is InvalidArgumentError (ERR_CCA_TRACE_IN_USE) until the first stops or goes
  // away (release_owner ends its subscription).
  void subscribe(std::uint32_t mask, std::size_t capacity, std::uint32_t owner = 0);
  // Takes the queued entries (oldest first) and how many were dropped since the last drain.
  void drain(std::vector<TraceEntry>& out, std::uint64_t& dropped);

 private:
  DeviceCachingAllocator& a_;
};

}  // namespace cca
