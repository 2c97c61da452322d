// The function symbols of one ELF file's full symbol table (.symtab): static and hidden
// functions too, which dladdr cannot name (it reads only the dynamic table). An addon built
// with hidden visibility, as node-gyp's defaults make it, exports almost nothing, but unless
// stripped its .symtab still names every function. Read once per module, when a native
// stack is first symbolized.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cca {

class ElfSymbols {
 public:
  // Reads `path`'s .symtab and its strings; empty for a stripped, unreadable or non-ELF64 file.
  explicit ElfSymbols(const std::string& path);
  // The function whose extent holds the file-relative address `vaddr`, or nullptr.
  const char* function_at(std::uint64_t vaddr) const;
  bool empty() const { return functions_.empty(); }

 private:
  struct Function {
    std::uint64_t start;
    std::uint64_t size;
    std::uint32_t name;  // offset in names_
  };
  std::vector<Function> functions_;  // by start
  std::string names_;
};

}  // namespace cca
