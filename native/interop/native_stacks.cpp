#include "native_stacks.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <sys/auxv.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace cca {

namespace {

// Frames in this library (the entry point, the capture itself) are not the caller's.
std::string own_module() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&native_stacks), &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "";
}

// Where the executable is loaded (its entry point lies in it): below its first frame lies
// the JS engine calling into an addon, whose frames say nothing about the allocation (the
// JS stack is not visible from here). dladdr names the executable by argv[0], not its
// path, so it is told by its base address.
const void* executable_base() {
  Dl_info info{};
  const auto entry = reinterpret_cast<const void*>(getauxval(AT_ENTRY));
  return entry != nullptr && dladdr(entry, &info) != 0 ? info.dli_fbase : nullptr;
}

std::string demangled(const char* symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(symbol, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(symbol);
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

NativeStacks& native_stacks() {
  static NativeStacks table;
  return table;
}

void NativeStacks::configure(int level, int depth) {
  if (level > 0) {
    // The first backtrace() loads the unwinder: pay that now, not inside a caller's malloc
    // (PyTorch warms its unwinder up the same way when C++ stacks are turned on).
    void* warm[2];
    (void)backtrace(warm, 2);
  }
  depth_.store(depth, std::memory_order_relaxed);
  level_.store(level, std::memory_order_relaxed);
}

std::size_t NativeStacks::PcsHash::operator()(const std::vector<void*>& v) const {
  std::size_t h = v.size();
  for (void* p : v) h = h * 1000003u ^ reinterpret_cast<std::uintptr_t>(p);
  return h;
}

std::uint32_t NativeStacks::capture() {
  // Our own frames (up to 4: capture, capture_if, the entry's lambda and the entry) are
  // taken too and dropped at symbolization, where the module is known.
  constexpr int kMax = 200 + 8;
  void* pcs[kMax];
  const int depth = depth_.load(std::memory_order_relaxed);
  const int n = backtrace(pcs, std::min(kMax, depth + 8));
  std::vector<void*> key(pcs, pcs + std::max(n, 0));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const std::uint32_t id = next_;
  next_ = next_ == 0xffffffffu ? (kNativeStackBit | 1u) : next_ + 1;
  ids_.emplace(key, id);
  by_id_[id].pcs = std::move(key);
  return id;
}

std::vector<NativeFrame> NativeStacks::frames(std::uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return {};
  Stack& s = it->second;
  if (!s.symbolized) {
    static const std::string ours = own_module();
    static const void* const executable = executable_base();
    const std::size_t depth = static_cast<std::size_t>(depth_.load(std::memory_order_relaxed));
    for (void* pc : s.pcs) {
      // A return address points after the call: one byte back lies inside the calling line.
      void* at = static_cast<char*>(pc) - 1;
      Dl_info info{};
      void* entry = nullptr;
      const bool found = dladdr1(at, &info, &entry, RTLD_DL_SYMENT) != 0 && info.dli_fname != nullptr;
      const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
      const std::string module = found ? info.dli_fname : "??";
      if (!ours.empty() && module == ours) continue;
      if ((found && executable != nullptr && info.dli_fbase == executable) || s.frames.size() == depth) break;
      // dladdr names the nearest exported symbol below the address, which for a static
      // function is some other one: a name only when the symbol's extent holds the address.
      const bool named = found && info.dli_sname != nullptr && symbol != nullptr &&
                         static_cast<char*>(at) < static_cast<char*>(info.dli_saddr) + symbol->st_size;
      // The full symbol table names static and hidden functions too (addresses in it are the
      // file's: the running address less the module's load bias).
      const char* full = nullptr;
      void* map = nullptr;
      if (found && dladdr1(at, &info, &map, RTLD_DL_LINKMAP) != 0 && map != nullptr) {
        std::unique_ptr<ElfSymbols>& table = symtabs_[module];
        if (!table) table = std::make_unique<ElfSymbols>(module);
        full = table->function_at(reinterpret_cast<std::uintptr_t>(at) - static_cast<link_map*>(map)->l_addr);
      }
      const std::uint64_t offset = found ? static_cast<std::uint64_t>(static_cast<char*>(at) - static_cast<char*>(info.dli_fbase)) : 0;
      std::string name;
      if (full != nullptr) {
        name = demangled(full);
      } else if (named) {
        name = demangled(info.dli_sname);
      } else {
        char hex[32];
        std::snprintf(hex, sizeof hex, "+0x%llx", static_cast<unsigned long long>(offset));
        name = base_name(module) + hex;
      }
      s.frames.push_back(NativeFrame{module, std::move(name), offset});
    }
    s.symbolized = true;
  }
  return s.frames;
}

void NativeStacks::retain(const std::vector<std::uint32_t>& keep, std::uint32_t below) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<std::uint32_t, bool> kept;
  for (std::uint32_t id : keep) kept[id] = true;
  for (auto it = by_id_.begin(); it != by_id_.end();) {
    if (it->first < below && kept.count(it->first) == 0) {
      ids_.erase(it->second.pcs);
      it = by_id_.erase(it);
    } else {
      ++it;
    }
  }
}

std::uint32_t NativeStacks::next_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

std::size_t NativeStacks::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_id_.size();
}

}  // namespace cca
