// Frees a thread has made without entering the allocator yet. DeviceBuffer.free() from JS
// leaves its pointer in its environment's list (native/binding/pending_frees.h) instead of
// crossing into the addon, and the list is handed to the allocators at that thread's next
// call: every exported function hands it over first, and so does every C ABI entry point
// (c_api.cpp), which is why the binding registers the hand-over here. Each thread hands over only
// its own list (the list is plain memory JS writes without atomics), so other threads see
// such a free at the owning thread's next call or at the end of its JS job.
#pragma once

namespace cca {

using HandOverFrees = void (*)(void* context);

// Registers how this thread's pending frees are handed over; nullptr clears it.
void set_thread_frees(HandOverFrees hand_over, void* context) noexcept;

// Hands over this thread's pending frees, if it registered any. Throws what a free throws;
// the failing free leaves the list, the frees after it stay.
void hand_over_thread_frees();

}  // namespace cca
