#include <cstring>
#include <exception>
#include <iostream>

#include "harness.h"

namespace harness {
std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}
}  // namespace harness

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : nullptr;
  int passed = 0;
  int failed = 0;
  for (const auto& c : harness::registry()) {
    if (filter != nullptr && std::strstr(c.name, filter) == nullptr) continue;
    try {
      c.fn();
      ++passed;
      std::cout << "[ OK ] " << c.name << "\n";
    } catch (const std::exception& e) {
      ++failed;
      std::cout << "[FAIL] " << c.name << ": " << e.what() << "\n";
    }
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
