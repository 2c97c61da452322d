// Pointer -> Block for live allocations: open addressing with linear probing and
// backward-shift deletion, so the alloc/free hot path allocates no hash nodes.
// Keys are device pointers, never 0 (0 marks an empty slot).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block.h"

namespace cca {

class PointerMap {
 public:
  PointerMap() { slots_.resize(kInitialCapacity); }

  Block* find(DevicePtr key) const {
    std::size_t i = slot_for(key);
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.block;
      if (s.key == 0) return nullptr;
      i = (i + 1) & mask();
    }
  }

  void insert(DevicePtr key, Block* block) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(key, block);
    ++size_;
  }

  // Removes key if present; returns the block it mapped to, or nullptr.
  Block* erase(DevicePtr key) {
    std::size_t i = slot_for(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return nullptr;
      i = (i + 1) & mask();
    }
    Block* found = slots_[i].block;
    // Shift later members of the probe run back so no tombstones are needed.
    std::size_t hole = i;
    std::size_t j = i;
    while (true) {
      j = (j + 1) & mask();
      if (slots_[j].key == 0) break;
      std::size_t home = slot_for(slots_[j].key);
      // Move j into the hole unless its home lies cyclically in (hole, j].
      bool home_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!home_between) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return found;
  }

  std::size_t size() const { return size_; }

  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.key != 0) f(s.key, s.block);
    }
  }

 private:
  struct Slot {
    DevicePtr key = 0;
    Block* block = nullptr;
  };
  static constexpr std::size_t kInitialCapacity = 1024;

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t slot_for(DevicePtr key) const {
    // Pointers are 512-byte aligned; a multiplicative hash spreads the high bits down.
    return static_cast<std::size_t>((key >> 9) * 0x9E3779B97F4A7C15ull >> 20) & mask();
  }
  void place(DevicePtr key, Block* block) {
    std::size_t i = slot_for(key);
    while (slots_[i].key != 0) i = (i + 1) & mask();
    slots_[i] = Slot{key, block};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    for (const Slot& s : old) {
      if (s.key != 0) place(s.key, s.block);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace cca
