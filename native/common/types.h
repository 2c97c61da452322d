// The handles every layer speaks of: the device contract (device.h) hands them out, the
// state records them, the binding passes them to JS.
#pragma once
#include <cstdint>

namespace cca {

using DevicePtr = std::uint64_t;   // a device address; 0 is the null pointer
using StreamId = std::uint64_t;    // a raw stream handle; 0 is the default stream
using EventId = std::uint64_t;     // a raw event handle
// A size or offset in bytes of device memory: 64 bits on every target, also WebAssembly's
// wasm32 where std::size_t is 32 (a recorded 80 GB device must replay there as it ran).
using Bytes = std::uint64_t;

}  // namespace cca
