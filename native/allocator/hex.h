// Addresses in messages, as 0x-prefixed lowercase hex (how PyTorch and CUDA print them).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace cca {

inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace cca
