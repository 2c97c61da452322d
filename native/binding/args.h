// Argument reading at the boundary. The TypeScript layer validates first; these checks are
// the second line, so a direct caller of the raw addon still gets an error, not a crash.
#pragma once
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "../allocator/errors.h"

namespace cca::binding {

inline double number_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsNumber()) {
    throw InvalidArgumentError(std::string("Expected a number for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  return info[i].As<Napi::Number>().DoubleValue();
}

// A non-negative integer below 2^64 held in a double.
inline std::uint64_t u64_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  double v = number_arg(info, i, name);
  if (!(v >= 0) || v != std::floor(v) || v >= 18446744073709551616.0) {
    throw InvalidArgumentError(std::string("Expected a non-negative integer for ") + name, "ERR_INVALID_ARG_VALUE");
  }
  return static_cast<std::uint64_t>(v);
}

// A byte count: sizes of 2^64 and more saturate, and the allocator's 1 EiB check turns
// them into an out-of-memory error, as for any request of 1 EiB or more.
inline std::uint64_t size_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  double v = number_arg(info, i, name);
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return u64_arg(info, i, name);
}

inline int device_arg(const Napi::CallbackInfo& info, std::size_t i) {
  double v = number_arg(info, i, "device");
  if (v != std::floor(v) || v < 0 || v > 1 << 20) {
    throw InvalidArgumentError("Expected a device index for device", "ERR_INVALID_ARG_VALUE");
  }
  return static_cast<int>(v);
}

inline std::string string_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsString()) {
    throw InvalidArgumentError(std::string("Expected a string for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  return info[i].As<Napi::String>().Utf8Value();
}

}  // namespace cca::binding
