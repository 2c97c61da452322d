// The handles every layer speaks of: the device contract (device.h) hands them out, the
// state records them, the binding passes them to JS.
#pragma once
#include <cstdint>

namespace cca {

using DevicePtr = std::uint64_t;   // a device address; 0 is the null pointer
using StreamId = std::uint64_t;    // a raw stream handle; 0 is the default stream
using EventId = std::uint64_t;     // a raw event handle

}  // namespace cca
