// Recycles the tree nodes of a pool's free set: after warm-up, inserting and erasing free
// blocks allocates no memory (on this machine a malloc+free pair costs more than the tree
// walk itself). Not thread-safe on its own: each pool is used under its device's mutex.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace cca {

class NodeCache {
 public:
  NodeCache() = default;
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;
  ~NodeCache() {
    for (void* p : spare_) ::operator delete(p);
  }
  void* get(std::size_t size) {
    if (size == node_size_ && !spare_.empty()) {
      void* p = spare_.back();
      spare_.pop_back();
      return p;
    }
    return ::operator new(size);
  }
  void put(void* p, std::size_t size) {
    if (node_size_ == 0) node_size_ = size;
    if (size == node_size_) {
      spare_.push_back(p);
    } else {
      ::operator delete(p);
    }
  }

 private:
  std::size_t node_size_ = 0;  // std::set allocates nodes of one size; others pass through
  std::vector<void*> spare_;
};

template <class T>
class RecyclingAllocator {
 public:
  using value_type = T;
  explicit RecyclingAllocator(NodeCache* cache) : cache_(cache) {}
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& other) : cache_(other.cache()) {}
  T* allocate(std::size_t n) { return static_cast<T*>(cache_->get(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { cache_->put(p, n * sizeof(T)); }
  NodeCache* cache() const { return cache_; }
  template <class U>
  bool operator==(const RecyclingAllocator<U>& o) const { return cache_ == o.cache(); }
  template <class U>
  bool operator!=(const RecyclingAllocator<U>& o) const { return cache_ != o.cache(); }

 private:
  NodeCache* cache_;
};

}  // namespace cca
