// The pinned host allocator's history (PyTorch 2.14's record_pinned_host_memory): entries in
// the order PyTorch's CachingHostAllocator records them, stacks kept by the context level,
// blocks' states while their copies run, the ring's bound, and nothing kept while off.
#include <algorithm>
#include <vector>

#include "fixture.h"
#include "harness.h"
#include "host/host_caching_allocator.h"

using namespace cca;
using namespace test;

namespace {

HostHistoryOptions recording(int context, std::size_t max_entries = 1000) {
  HostHistoryOptions o;
  o.enabled = true;
  o.context = context;
  o.max_entries = max_entries;
  return o;
}

std::vector<HostAction> actions_of(const std::vector<HostTraceEntry>& entries) {
  std::vector<HostAction> out;
  for (const HostTraceEntry& e : entries) out.push_back(e.action);
  return out;
}

std::vector<HostCachingAllocator::BlockRecord> blocks_of(const HostCachingAllocator& host) {
  std::vector<HostCachingAllocator::BlockRecord> blocks;
  host.history_snapshot(blocks, nullptr);
  return blocks;
}

}  // namespace

TEST(host_history_records_pytorchs_actions_in_its_order_with_stacks_by_context) {
  SimPlatform platform(SimOptions{1, GiB});
  SimDevice& d = platform.sim_device(0);
  HostCachingAllocator host({&d});
  host.set_history(recording(3), false);
  StreamId s = 0;
  CHECK(d.stream_create(&s) == Status::kOk);
  d.hold_stream(s, true);
  void* a = host.allocate(3000, nullptr, 11);  // new block: segment_alloc, then alloc
  void* b = host.allocate(100, nullptr, 12);
  CHECK(host.record_use(a, 4096, 0, s));  // a copy queued on a held stream uses a
  host.free(a, 21);                        // free_requested now, free_completed after the copy
  host.free(b, 22);                        // no copy: both at once
  void* c = host.allocate(128, nullptr, 13);  // b's block again: alloc only
  CHECK_EQ(c, b);

  std::vector<HostCachingAllocator::BlockRecord> blocks = blocks_of(host);
  CHECK_EQ(blocks.size(), std::size_t{2});
  std::sort(blocks.begin(), blocks.end(), [](const auto& x, const auto& y) { return x.size < y.size; });
  CHECK_EQ(blocks[0].size, std::uint64_t{128});
  CHECK_EQ(blocks[0].state, 1);  // active_allocated, with its allocation's stack
  CHECK_EQ(blocks[0].stack, std::uint32_t{13});
  CHECK_EQ(blocks[1].size, std::uint64_t{4096});
  CHECK_EQ(blocks[1].state, 2);  // active_pending_free: its copy has not run
  CHECK_EQ(blocks[1].stack, std::uint32_t{0});  // PyTorch forgets the context at free

  d.complete_stream(s);
  d.hold_stream(s, false);
  host.free(host.allocate(10, nullptr, 14));  // processes a's event: a's free_completed comes first
  host.empty_cache();                         // a's and the 16-byte block's segment_free
  std::vector<HostTraceEntry> t;
  host.history_snapshot(blocks, &t);
  using A = HostAction;
  const std::vector<HostAction> expected = {
      A::kSegmentAlloc, A::kAlloc,          A::kSegmentAlloc,  A::kAlloc, A::kFreeRequested, A::kFreeRequested,
      A::kFreeCompleted, A::kAlloc,         A::kFreeCompleted, A::kSegmentAlloc, A::kAlloc,  A::kFreeRequested,
      A::kFreeCompleted, A::kSegmentFree,   A::kSegmentFree};
  CHECK(actions_of(t) == expected);
  CHECK_EQ(t[0].addr, reinterpret_cast<std::uintptr_t>(a));
  CHECK_EQ(t[0].size, std::uint64_t{4096});  // the rounded size, as PyTorch writes it
  CHECK_EQ(t[0].stack, std::uint32_t{0});    // segment_alloc keeps no stack
  CHECK_EQ(t[1].stack, std::uint32_t{11});
  CHECK_EQ(t[4].stack, std::uint32_t{21});   // context 'all': the free request's stack
  CHECK_EQ(t[6].addr, reinterpret_cast<std::uintptr_t>(b));  // b completed at once
  CHECK_EQ(t[8].addr, reinterpret_cast<std::uintptr_t>(a));  // a only after its copy
  for (std::size_t i = 1; i < t.size(); ++i) CHECK(t[i].ticks >= t[i - 1].ticks);
  host.free(c);
  CHECK(d.stream_destroy(s) == Status::kOk);
}

TEST(host_history_context_state_keeps_alloc_stacks_only_and_off_records_nothing) {
  SimPlatform platform(SimOptions{1, GiB});
  HostCachingAllocator host({&platform.device(0)});
  void* before = host.allocate(64, nullptr, 5);  // history off: no stack, no entry
  host.set_history(recording(1), false);
  CHECK(blocks_of(host).at(0).stack == 0);
  void* a = host.allocate(64, nullptr, 7);
  host.free(a, 8);
  std::vector<HostCachingAllocator::BlockRecord> blocks;
  std::vector<HostTraceEntry> t;
  host.history_snapshot(blocks, &t);
  CHECK_EQ(t.size(), std::size_t{4});  // segment_alloc, alloc, free_requested, free_completed
  CHECK_EQ(t[1].stack, std::uint32_t{7});
  CHECK_EQ(t[2].stack, std::uint32_t{0});  // context 'state': no stack on the free request
  std::vector<std::uint32_t> ids;
  host.append_stacks(ids);
  CHECK(ids == std::vector<std::uint32_t>{7});

  host.set_history(HostHistoryOptions{}, false);  // off: the ring goes, snapshots are empty
  CHECK(!host.history_enabled());
  host.free(before);
  host.history_snapshot(blocks, &t);
  CHECK(blocks.empty() && t.empty());
  ids.clear();
  host.append_stacks(ids);
  CHECK(ids.empty());
  host.set_history(recording(0), false);  // context none: entries without stacks
  host.free(host.allocate(64, nullptr, 9));
  host.history_snapshot(blocks, &t);
  CHECK_EQ(t.size(), std::size_t{3});  // alloc (a cached block), free_requested, free_completed
  CHECK(std::all_of(t.begin(), t.end(), [](const HostTraceEntry& e) { return e.stack == 0; }));
}

TEST(host_history_ring_keeps_the_newest_entries_and_clear_empties_it) {
  SimPlatform platform(SimOptions{1, GiB});
  HostCachingAllocator host({&platform.device(0)});
  host.set_history(recording(1, 5), false);
  for (std::uint32_t i = 1; i <= 4; ++i) host.free(host.allocate(64, nullptr, i));
  std::vector<HostCachingAllocator::BlockRecord> blocks;
  std::vector<HostTraceEntry> t;
  host.history_snapshot(blocks, &t);
  CHECK_EQ(t.size(), std::size_t{5});
  CHECK(t.back().action == HostAction::kFreeCompleted);
  CHECK_EQ(t[t.size() - 3].stack, std::uint32_t{4});  // the last alloc is kept
  host.set_history(recording(1, 2), false);  // a smaller ring keeps the newest two
  host.history_snapshot(blocks, &t);
  CHECK(actions_of(t) == (std::vector<HostAction>{HostAction::kFreeRequested, HostAction::kFreeCompleted}));
  host.set_history(recording(1, 2), true);  // clear
  host.history_snapshot(blocks, &t);
  CHECK(t.empty());
  CHECK_EQ(blocks.size(), std::size_t{1});  // the cached block is still listed
  CHECK_EQ(blocks[0].state, 0);
  host.set_history(recording(1, 0), false);  // max_entries 0 keeps nothing
  host.free(host.allocate(64));
  host.history_snapshot(blocks, &t);
  CHECK(t.empty());
}
