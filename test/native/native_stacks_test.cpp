// The table of C ABI callers' native stacks: taken only from the configured context level
// on, interned (one call site, one id, above the JS ids), and compacted without losing a
// stack taken while the JS side asked which ids are referenced; and the full symbol table's
// lookup, on this executable. Whole stacks are symbolized from a real consumer module in
// test/conformance/js-interop.mjs: in this executable every frame is the allocator's own or
// the executable's, both of which a stack drops.
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "harness.h"
#include "interop/elf_symbols.h"
#include "interop/native_stacks.h"

using namespace cca;

namespace {
// A loop bound the compiler cannot see: an unrolled loop would call from two sites.
volatile int g_twice = 2;

// One call site, so two calls give the same stack.
__attribute__((noinline)) std::uint32_t take(NativeStacks& t, int level) {
  const std::uint32_t id = t.capture_if(level);
  __asm__ volatile("" ::: "memory");
  return id;
}
}  // namespace

TEST(native_stacks_are_taken_from_their_level_on_and_interned_above_js_ids) {
  NativeStacks t;
  CHECK_EQ(take(t, 1), std::uint32_t{0});  // off
  t.configure(1, 16);
  CHECK_EQ(take(t, 3), std::uint32_t{0});  // a free's stack needs context 'all'
  std::uint32_t same[2];
  for (int i = 0; i < g_twice; ++i) same[i] = take(t, 1);  // the same stack twice: one id
  const std::uint32_t a = same[0];
  CHECK(a >= kNativeStackBit);
  CHECK_EQ(same[1], a);
  const std::uint32_t b = t.capture_if(1);  // another site
  CHECK(b != a && b >= kNativeStackBit);
  CHECK_EQ(t.size(), std::size_t{2});
  CHECK(t.frames(12345).empty());  // unknown id
  t.configure(0, 16);
  CHECK_EQ(take(t, 1), std::uint32_t{0});
}

namespace {
struct Round {
  std::uint32_t kept = 0, dropped = 0, below = 0, newer = 0;
  std::size_t size_after_retain = 0;
};

// Every call at one site whichever round it is (noinline, called from one loop site), so
// stack K and stack D are the same stacks in both rounds; the first round compacts.
__attribute__((noinline)) void one_round(NativeStacks& t, int round, Round& r) {
  r.kept = t.capture_if(1);     // stack K
  r.dropped = t.capture_if(1);  // stack D
  if (round == 0) {
    r.below = t.next_id();      // read before asking what is referenced
    r.newer = t.capture_if(3);  // taken meanwhile, referenced by nothing yet
    t.retain({r.kept}, r.below);
    r.size_after_retain = t.size();
  }
  __asm__ volatile("" ::: "memory");
}
}  // namespace

TEST(native_stacks_compaction_keeps_referenced_and_newer_stacks) {
  NativeStacks t;
  t.configure(3, 16);
  Round r[2];
  for (int round = 0; round < g_twice; ++round) one_round(t, round, r[round]);
  CHECK_EQ(r[0].size_after_retain, std::size_t{2});  // K, referenced, and the newer one
  CHECK_EQ(r[1].kept, r[0].kept);                     // K is still interned: the same id
  CHECK(r[1].dropped != r[0].dropped);                // D was forgotten: taken again, a new id
  CHECK(r[1].dropped > r[0].newer);
}

namespace {
// Static: only the full symbol table names it.
__attribute__((noinline)) int static_function_for_the_symbol_table(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}
}  // namespace

TEST(elf_symbols_name_static_functions_from_the_full_symbol_table) {
  void* fn = reinterpret_cast<void*>(&static_function_for_the_symbol_table);
  Dl_info info{};
  void* map = nullptr;
  CHECK(dladdr1(fn, &info, &map, RTLD_DL_LINKMAP) != 0 && map != nullptr);
  const ElfSymbols table("/proc/self/exe");
  CHECK(!table.empty());
  const std::uint64_t vaddr = reinterpret_cast<std::uintptr_t>(fn) - static_cast<link_map*>(map)->l_addr;
  const char* name = table.function_at(vaddr + 1);  // inside the function, past its start
  CHECK(name != nullptr);
  CHECK(std::string(name).find("static_function_for_the_symbol_table") != std::string::npos);
  CHECK(static_function_for_the_symbol_table(1) == 2);
  CHECK(ElfSymbols("/nonexistent/module.so").empty());
  CHECK(ElfSymbols("/proc/self/status").empty());  // not ELF
}
