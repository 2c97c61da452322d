// Native clients' frees and counters (client_calls.h).
#include "client_calls.h"

#include "../facet_access.h"
#include "../../../common/message_format.h"

namespace cca {

void ClientCalls::free_owned(DevicePtr ptr, std::uint32_t owner, CallContext ctx, OwnerCounters& counters) {
  const auto lock = FacetAccess::lock(a_);
  const Block* block = FacetAccess::ledger(a_).find_allocated(ptr);
  if (block == nullptr) FacetAccess::throw_not_allocated(a_, ptr);
  if (block->owner != owner) {
    throw InvalidPointerError("free: pointer " + hex(ptr) + " belongs to another client or to JS; only the code that "
                              "allocated it may free it");
  }
  const std::uint64_t requested = block->requested_size;
  FacetAccess::free_block(a_, block, ctx);
  counters.on_free(requested);
  FacetAccess::check_after_operation(a_);
}

OwnerCounters ClientCalls::read_counters(const OwnerCounters& counters) const {
  const auto lock = FacetAccess::lock(a_);
  return counters;
}

}  // namespace cca
