#include "elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace cca {

namespace {

template <class T>
bool read_at(std::ifstream& f, std::uint64_t offset, T* out, std::size_t count = 1) {
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(sizeof(T) * count));
  return static_cast<std::size_t>(f.gcount()) == sizeof(T) * count;
}

}  // namespace

ElfSymbols::ElfSymbols(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return;
  Elf64_Ehdr eh{};
  if (!read_at(f, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096) {
    return;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!read_at(f, eh.e_shoff, sections.data(), sections.size())) return;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= sections.size() || sh.sh_entsize != sizeof(Elf64_Sym)) continue;
    const Elf64_Shdr& strings = sections[sh.sh_link];
    // Bounded: a corrupt header must not make us read gigabytes.
    if (sh.sh_size > (std::uint64_t{1} << 30) || strings.sh_size > (std::uint64_t{1} << 30)) return;
    std::vector<Elf64_Sym> symbols(sh.sh_size / sizeof(Elf64_Sym));
    names_.resize(strings.sh_size);
    if (!read_at(f, sh.sh_offset, symbols.data(), symbols.size()) || !read_at(f, strings.sh_offset, names_.data(), names_.size())) {
      names_.clear();
      return;
    }
    for (const Elf64_Sym& s : symbols) {
      if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_value != 0 && s.st_size != 0 && s.st_name < names_.size()) {
        functions_.push_back(Function{s.st_value, s.st_size, s.st_name});
      }
    }
    break;
  }
  std::sort(functions_.begin(), functions_.end(), [](const Function& a, const Function& b) { return a.start < b.start; });
  if (!names_.empty() && names_.back() != '\0') names_.push_back('\0');
}

const char* ElfSymbols::function_at(std::uint64_t vaddr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), vaddr,
                             [](std::uint64_t v, const Function& fn) { return v < fn.start; });
  if (it == functions_.begin()) return nullptr;
  --it;
  if (vaddr >= it->start + it->size) return nullptr;
  return names_.c_str() + it->name;
}

}  // namespace cca
