// The live trace queue's subscription (live_traces.h).
#include "live_traces.h"

#include <string>

#include "../facet_access.h"

namespace cca {

void LiveTraces::subscribe(std::uint32_t mask, std::size_t capacity, std::uint32_t owner) {
  const auto lock = FacetAccess::lock(a_);
  std::uint32_t& subscriber = FacetAccess::trace_subscriber(a_);
  if (subscriber != 0 && subscriber != owner) {
    if (mask == 0) return;  // not this owner's to stop
    throw InvalidArgumentError("live trace events of device " + std::to_string(a_.device_index()) +
                                   " go to another JS environment (its memory.onTrace); stop that one first",
                               "ERR_CCA_TRACE_IN_USE");
  }
  subscriber = mask == 0 ? 0 : owner;
  FacetAccess::ledger(a_).set_trace_subscription(mask, capacity);
}

void LiveTraces::drain(std::vector<TraceEntry>& out, std::uint64_t& dropped) {
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::ledger(a_).drain_traces(out, dropped);
}

}  // namespace cca
