// Numbers a hot call takes and gives back in memory this environment's JS shares with the
// addon, rather than as Node-API arguments and a result (lib/call-slots.ts). A cached
// alloc(4096) from JS is ~1,600 instructions, and the crossing's share of them was a third:
// napi_get_cb_info unpacking five values, a napi_get_value_double (and V8's type test) per
// number, and a heap number made for the 47-bit pointer it returns. Through the slots the
// call unpacks nothing and returns undefined; the numbers are plain loads and stores on both
// sides. A call reads every slot it takes before its work and writes its results after it,
// so a call made in between (none is today: the allocator calls no JS) could not mix up its
// numbers with the outer call's.
#pragma once
#include <cstddef>

#include "shared_words.h"

namespace cca::binding {

// Enough for the widest slotted call: alloc's device, size, stream, stack id and tag id.
constexpr std::size_t kCallSlots = 8;

using CallSlots = SharedWords<kCallSlots>;

// allocInSlots's slots: what it reads, and where the pointer goes. lib/call-slots.ts's
// AllocSlot is the JS side; test/contract/call-slot-layout.test.ts holds the two together.
enum AllocSlot : std::size_t {
  kAllocDevice = 0,
  kAllocSize = 1,
  kAllocStream = 2,
  kAllocStackId = 3,
  kAllocTagId = 4,
  kAllocPtr = 0,  // written after the reads
};
static_assert(kAllocTagId < kCallSlots, "allocInSlots reads past the slots");

}  // namespace cca::binding
