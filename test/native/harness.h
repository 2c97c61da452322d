// A minimal test harness for the C++ core: TEST registers a case; CHECK* throw on failure.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness {

struct Case {
  const char* name;
  void (*fn)();
};
std::vector<Case>& registry();
struct Register {
  Register(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
template <class T>
std::string show(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  throw Failure(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace harness

#define TEST(name)                                                 \
  static void name();                                              \
  static harness::Register register_##name(#name, name);           \
  static void name()

#define CHECK(cond) \
  do { if (!(cond)) harness::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); } while (0)

#define CHECK_EQ(a, b)                                                                          \
  do {                                                                                          \
    const auto va_ = (a);                                                                       \
    const auto vb_ = (b);                                                                       \
    if (!(va_ == vb_))                                                                          \
      harness::fail(__FILE__, __LINE__,                                                         \
                    "CHECK_EQ(" #a ", " #b "): " + harness::show(va_) + " != " + harness::show(vb_)); \
  } while (0)

#define CHECK_THROWS(expr, Type, code_substr)                                                   \
  do {                                                                                          \
    bool thrown_ = false;                                                                       \
    try { expr; } catch (const Type& e_) {                                                      \
      thrown_ = true;                                                                           \
      if (std::string(e_.code()).find(code_substr) == std::string::npos)                        \
        harness::fail(__FILE__, __LINE__, "wrong code " + e_.code() + ": " + e_.what());        \
    }                                                                                           \
    if (!thrown_) harness::fail(__FILE__, __LINE__, "expected " #Type " from " #expr);           \
  } while (0)

#define CHECK_VALID(alloc)                                                          \
  do {                                                                              \
    const std::string v_ = (alloc).validate();                                      \
    if (!v_.empty()) harness::fail(__FILE__, __LINE__, "validator: " + v_);         \
  } while (0)
