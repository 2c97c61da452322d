// A pointer field whose constness follows its owner's: through a `const Block&` the next
// block is a `const Block*`. So code holding only const views of the ledger's blocks
// cannot reach a writable one by walking links; the compiler refuses the write.
#pragma once
#include <cstddef>

namespace cca {

template <class T>
class Link {
 public:
  Link() = default;
  Link(T* p) : p_(p) {}  // NOLINT: implicit, so `block->next = other` reads naturally
  Link& operator=(T* p) {
    p_ = p;
    return *this;
  }
  T* get() { return p_; }
  const T* get() const { return p_; }
  T* operator->() { return p_; }
  const T* operator->() const { return p_; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  operator T*() { return p_; }
  operator const T*() const { return p_; }

  friend bool operator==(const Link& a, const T* b) { return a.p_ == b; }
  friend bool operator==(const T* a, const Link& b) { return a == b.p_; }
  friend bool operator!=(const Link& a, const T* b) { return a.p_ != b; }
  friend bool operator!=(const T* a, const Link& b) { return a != b.p_; }
  friend bool operator==(const Link& a, const Link& b) { return a.p_ == b.p_; }
  friend bool operator!=(const Link& a, const Link& b) { return a.p_ != b.p_; }
  friend bool operator==(const Link& a, std::nullptr_t) { return a.p_ == nullptr; }
  friend bool operator!=(const Link& a, std::nullptr_t) { return a.p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

}  // namespace cca
