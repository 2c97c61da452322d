// Numbers in messages: addresses as 0x-prefixed lowercase hex (how PyTorch and CUDA print
// them) and sizes as PyTorch's format_size writes them.
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

// Two decimals, each bound inclusive: "1024 bytes", "1.00 MiB".
inline std::string format_size(std::uint64_t size) {
  char buf[64];
  if (size <= 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(size));
  } else if (size <= 1048576ull) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(size) / 1024.0);
  } else if (size <= 1073741824ull) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(size) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(size) / 1073741824.0);
  }
  return buf;
}

}  // namespace cca
