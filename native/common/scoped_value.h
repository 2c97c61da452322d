// Sets a variable for the length of a scope, then puts back what it held: state that one
// call's work reads further down (the call that releases segments, for their entries)
// without passing it through every step.
#pragma once

namespace cca {

template <class T>
class ScopedValue {
 public:
  ScopedValue(T& slot, T value) : slot_(slot), saved_(slot) { slot_ = value; }
  ~ScopedValue() { slot_ = saved_; }
  ScopedValue(const ScopedValue&) = delete;
  ScopedValue& operator=(const ScopedValue&) = delete;

 private:
  T& slot_;
  T saved_;
};

}  // namespace cca
