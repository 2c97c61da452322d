// Argument reading at the boundary. The TypeScript layer validates first; these checks are
// the second line, so a direct caller of the raw addon still gets an error, not a crash.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

#include "../common/errors.h"

namespace cca::binding {

// Conversions of a number already read, shared by the node-addon-api functions below and
// the plain Node-API hot path (allocation_functions.cpp).
// Whole-number checks convert and compare rather than call floor(): without SSE4.1 that is
// a libm call, and these run several times per allocation and per launch. Each comparison
// comes first that keeps the conversion defined (NaN and out-of-range values fail it).
inline bool is_whole(double v) { return static_cast<double>(static_cast<std::uint64_t>(v)) == v; }

inline std::uint64_t to_u64(double v, const char* name) {
  if (!(v >= 0) || v >= 18446744073709551616.0 || !is_whole(v)) {
    throw InvalidArgumentError(std::string("Expected a non-negative integer for ") + name, "ERR_INVALID_ARG_VALUE");
  }
  return static_cast<std::uint64_t>(v);
}

// A byte count: sizes of 2^64 and more saturate, and the allocator's 1 EiB check turns
// them into an out-of-memory error, as for any request of 1 EiB or more.
inline std::uint64_t to_size(double v) { return v >= 18446744073709551616.0 ? UINT64_MAX : to_u64(v, "size"); }

inline int to_device(double v) {
  if (!(v >= 0) || v > 1 << 20 || !is_whole(v)) {
    throw InvalidArgumentError("Expected a device index for device", "ERR_INVALID_ARG_VALUE");
  }
  return static_cast<int>(v);
}

inline std::uint32_t to_id(double v, const char* name) {
  if (!(v >= 0) || v > 4294967295.0 || !is_whole(v)) {
    throw InvalidArgumentError(std::string("Expected a 32-bit id for ") + name, "ERR_INVALID_ARG_VALUE");
  }
  return static_cast<std::uint32_t>(v);
}

inline double number_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsNumber()) {
    throw InvalidArgumentError(std::string("Expected a number for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  return info[i].As<Napi::Number>().DoubleValue();
}

inline std::uint64_t u64_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  return to_u64(number_arg(info, i, name), name);
}

inline int device_arg(const Napi::CallbackInfo& info, std::size_t i) { return to_device(number_arg(info, i, "device")); }

inline std::string string_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsString()) {
    throw InvalidArgumentError(std::string("Expected a string for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  return info[i].As<Napi::String>().Utf8Value();
}

// The bytes of a TypedArray (or Buffer) argument, in place.
struct Span {
  unsigned char* data;
  std::size_t bytes;
};

inline Span bytes_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsTypedArray()) {
    throw InvalidArgumentError(std::string("Expected a TypedArray or Buffer for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  Napi::TypedArray t = info[i].As<Napi::TypedArray>();
  Napi::ArrayBuffer buf = t.ArrayBuffer();
  return Span{static_cast<unsigned char*>(buf.Data()) + t.ByteOffset(), t.ByteLength()};
}

inline bool bool_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsBoolean()) {
    throw InvalidArgumentError(std::string("Expected a boolean for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  return info[i].As<Napi::Boolean>().Value();
}

}  // namespace cca::binding
