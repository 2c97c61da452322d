// Native stacks of the C ABI's callers, as PyTorch's stacks="all" records C++ frames: while
// history keeps stacks, an allocation (and with context 'all' a free) made through
// include/cca.h takes a backtrace at the entry point, interned here as a stack id the
// allocator records like the JS side's ids (which stay below kNativeStackBit). Addresses
// are kept raw and symbolized only when a snapshot asks for their frames: the module (dladdr)
// and the function, from the module's full symbol table (elf_symbols.h) or its dynamic one;
// the offset where neither names it (a stripped module), for addr2line.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "elf_symbols.h"

namespace cca {

// Ids at and above this are native stacks; the JS stack table's ids stay below it.
constexpr std::uint32_t kNativeStackBit = 0x80000000u;

struct NativeFrame {
  std::string filename;  // the module (shared object or executable) holding the address
  std::string name;      // the demangled function, else "module+0xOFFSET"
  std::uint64_t offset;  // the address's offset in its module
};

class NativeStacks {
 public:
  // The context level a stack is taken at (0: never; 1 state and 2 alloc: allocations; 3
  // all: frees too) and the frames kept. Set by the binding with JS's history settings.
  void configure(int level, int depth);
  // A stack id for the calling code (0 when `level` is not reached). Cheap when off: one
  // relaxed atomic load.
  std::uint32_t capture_if(int level) {
    if (level_.load(std::memory_order_relaxed) < level) return 0;
    return capture();
  }
  // The stack's frames, symbolized (once per stack); empty for an unknown id.
  std::vector<NativeFrame> frames(std::uint32_t id);
  // Forgets every stack numbered below `below` that `keep` does not name (the JS side's
  // compaction: `below` was read before it asked which ids the allocator still references,
  // so a stack taken meanwhile is kept).
  void retain(const std::vector<std::uint32_t>& keep, std::uint32_t below);
  std::uint32_t next_id() const;
  std::size_t size() const;

 private:
  std::uint32_t capture();

  struct Stack {
    std::vector<void*> pcs;
    std::vector<NativeFrame> frames;  // filled when first asked
    bool symbolized = false;
  };
  struct PcsHash {
    std::size_t operator()(const std::vector<void*>& v) const;
  };
  std::atomic<int> level_{0};
  std::atomic<int> depth_{16};
  mutable std::mutex mu_;
  std::unordered_map<std::uint32_t, Stack> by_id_;
  std::unordered_map<std::vector<void*>, std::uint32_t, PcsHash> ids_;
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> symtabs_;  // by module, read when first needed
  std::uint32_t next_ = kNativeStackBit | 1u;
};

// The process's table (one for every runtime: a stack outlives none of them meaningfully).
NativeStacks& native_stacks();

}  // namespace cca
