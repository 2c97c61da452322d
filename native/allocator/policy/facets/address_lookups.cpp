// Lookups of an address (address_lookups.h).
#include "address_lookups.h"

#include <string>

#include "../facet_access.h"
#include "../../../common/message_format.h"

namespace cca {

bool AddressLookups::find_allocation(DevicePtr inside, DevicePtr* base, std::uint64_t* size, StreamId* stream) const {
  const auto lock = FacetAccess::lock(a_);
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) return false;
  *base = found->ptr;
  *size = found->requested_size;
  *stream = found->stream;
  return true;
}

bool AddressLookups::allocation_stack(DevicePtr inside, std::uint32_t* stack) const {
  const auto lock = FacetAccess::lock(a_);
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) return false;
  *stack = found->alloc_stack;
  return true;
}

void AddressLookups::annotate(DevicePtr inside, CallContext ctx) {
  const auto lock = FacetAccess::lock(a_);
  const Block* found = allocated_block_holding(inside);
  if (found == nullptr) {
    throw InvalidPointerError("_annotate_memory: " + hex(inside) + " is not inside a live allocation on device " +
                              std::to_string(a_.device_index()));
  }
  FacetAccess::ledger(a_).annotated(found, ctx.stack, ctx.tag);
}

const Block* AddressLookups::allocated_block_holding(DevicePtr inside) const {
  const Ledger& ledger = FacetAccess::ledger(a_);
  const Block* found = ledger.find_allocated(inside);
  if (found != nullptr) return found;
  const Segment* segment = ledger.segment_containing(inside);
  if (segment == nullptr) return nullptr;
  for (const Block* b = segment->head; b != nullptr; b = b->next) {
    if (inside >= b->ptr && inside < b->ptr + b->size) {
      found = b;
      break;
    }
  }
  // Only the bytes asked for count: the rounding past them is not the caller's.
  if (found == nullptr || found->state != BlockState::kAllocated || inside >= found->ptr + found->requested_size) return nullptr;
  return found;
}

}  // namespace cca
