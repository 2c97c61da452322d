// The frees DeviceBuffer.free() leaves for this environment's next call (lib/pending-frees.ts).
// A cached alloc+free pair from JS then crosses into the addon once, not twice: the free
// writes its device and pointer into this list, a plain ArrayBuffer both sides see, and the
// next exported function hands the list to the allocators before its own work
// (hand_over_pending: export.h's wrapper, and plain_hand_over in each plain callback), as does a C ABI call
// on the same thread (interop/thread_frees.h). So nothing this thread does afterwards can
// see the memory still allocated, nor queue GPU work ahead of the free's stream events.
// Only this thread reads or writes the list.
#pragma once
#include <napi.h>

#include <cstddef>

#include "../runtime/runtime.h"
#include "shared_words.h"

namespace cca::binding {

// Pairs the list holds; a free that finds it full crosses at once (which hands the list over
// first, keeping the order).
constexpr std::size_t kPendingFreeCapacity = 256;

class PendingFreeList {
 public:
  // The list as a Float64Array: [count, device, pointer, device, pointer, ...]. Made on the
  // first call; the same memory after.
  Napi::Float64Array array(Napi::Env env) { return words_.array(env); }
  bool empty() const { return words_.words()[0] == 0; }
  // Frees every listed pointer in list order. A free that throws is taken off the list, its
  // error goes to the caller, and the ones after it stay listed for the next call.
  void hand_over(Runtime& runtime);

 private:
  SharedWords<1 + 2 * kPendingFreeCapacity> words_;
};

}  // namespace cca::binding
