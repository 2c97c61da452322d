// History: the trace a scripted scenario records equals the sequence PyTorch records,
// worked out by hand from pytorch-allocator-facts.md sections 1.6, 1.7 and 3.6.
#include <chrono>
#include <cmath>

#include "allocator/policy/facets/address_lookups.h"
#include "allocator/policy/facets/ledger_reads.h"
#include "allocator/policy/facets/live_traces.h"
#include "common/clock.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {

struct Expect {
  TraceAction action;
  DevicePtr addr;
  std::uint64_t size;
  StreamId stream;
  std::uint32_t stack;
};

std::vector<TraceEntry> traces(DeviceCachingAllocator& a) {
  std::vector<TraceEntry> out = a.snapshot(0, true).traces;
  if (!out.empty() && out.back().action == TraceAction::kSnapshot) out.pop_back();  // an earlier read's entry
  return out;
}

void check_trace(const std::vector<TraceEntry>& got, const std::vector<Expect>& want) {
  CHECK_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string at = "entry " + std::to_string(i) + " (" + trace_action_name(got[i].action) + ")";
    if (got[i].action != want[i].action) harness::fail(__FILE__, __LINE__, at + ": expected " + trace_action_name(want[i].action));
    if (got[i].addr != want[i].addr) harness::fail(__FILE__, __LINE__, at + ": addr " + std::to_string(got[i].addr));
    if (got[i].size != want[i].size) harness::fail(__FILE__, __LINE__, at + ": size " + std::to_string(got[i].size));
    if (got[i].stream != want[i].stream) harness::fail(__FILE__, __LINE__, at + ": stream");
    if (got[i].stack != want[i].stack) harness::fail(__FILE__, __LINE__, at + ": stack " + std::to_string(got[i].stack));
    if (i > 0 && got[i].ticks < got[i - 1].ticks) harness::fail(__FILE__, __LINE__, at + ": time went back");
  }
}

HistoryOptions all_history(RecordContext ctx, std::size_t max = 1000) {
  HistoryOptions h;
  h.enabled = true;
  h.context = ctx;
  h.max_entries = max;
  return h;
}

}  // namespace

TEST(scripted_trace_matches_pytorch_sequence) {
  Fixture f(64 * MiB);
  auto& a = f.a();
  a.set_history(all_history(RecordContext::kAlloc));
  StreamId s1 = a.create_stream();
  f.sim().hold_stream(s1, true);

  DevicePtr p = a.malloc(1000, 0, 0, CallContext{5, 0});
  a.free(p, CallContext{9, 0});               // context "alloc": frees carry the alloc stack
  DevicePtr q = a.malloc(1000, 0, 0, CallContext{6, 0});
  CHECK_EQ(q, p);
  a.record_stream(q, s1);
  a.free(q, CallContext{9, 0});               // waits for s1: only free_requested now
  f.sim().complete_stream(s1);
  DevicePtr r = a.malloc(4096, 0, 0, CallContext{7, 0});  // collects the event first
  a.free(r, CallContext{9, 0});
  a.empty_cache();
  bool oom = false;
  try {
    a.malloc(100 * MiB - 7, 0, 0, CallContext{8, 0});
  } catch (const OutOfMemoryError&) {
    oom = true;
  }
  CHECK(oom);
  const DevicePtr S = p;
  check_trace(traces(a), {
      {TraceAction::kSegmentAlloc, S, 2 * MiB, 0, 5},
      {TraceAction::kAlloc, S, 1000, 0, 5},
      {TraceAction::kFreeRequested, S, 1000, 0, 5},
      {TraceAction::kFreeCompleted, S, 1000, 0, 5},
      {TraceAction::kAlloc, S, 1000, 0, 6},
      {TraceAction::kFreeRequested, S, 1000, 0, 6},
      {TraceAction::kFreeCompleted, S, 1000, 0, 6},  // deferred: carries the alloc stack
      {TraceAction::kAlloc, S, 4096, 0, 7},
      {TraceAction::kFreeRequested, S, 4096, 0, 7},
      {TraceAction::kFreeCompleted, S, 4096, 0, 7},
      // empty_cache() with context "alloc": the stack that allocated the segment (PyTorch's
      // release_block; test_memory_plots_free_segment_stack).
      {TraceAction::kSegmentFree, S, 2 * MiB, 0, 5},
      // oom: the device's free bytes where the address would be; the rounded request.
      {TraceAction::kOom, 64 * MiB, 100 * MiB, 0, 8},
  });
  CHECK_VALID(a);
}

TEST(context_levels_decide_which_stacks_are_kept) {
  for (RecordContext ctx : {RecordContext::kState, RecordContext::kAlloc, RecordContext::kAll}) {
    Fixture f;
    f.a().set_history(all_history(ctx));
    DevicePtr p = f.a().malloc(1000, 0, 0, CallContext{5, 3});
    auto snap = f.a().snapshot(0, false);
    CHECK_EQ(snap.blocks[0].stack, 5u);  // live blocks keep their stack from "state" up
    CHECK_EQ(snap.blocks[0].tag, 3u);
    f.a().free(p, CallContext{9, 0});
    auto t = traces(f.a());
    // segment_alloc, alloc, snapshot (the read above is recorded too), free_requested, free_completed
    CHECK_EQ(t.size(), std::size_t{5});
    CHECK(t[2].action == TraceAction::kSnapshot);
    const std::uint32_t alloc_stack = ctx == RecordContext::kState ? 0 : 5;
    const std::uint32_t free_stack = ctx == RecordContext::kAll ? 9 : alloc_stack;
    CHECK_EQ(t[1].stack, alloc_stack);
    CHECK_EQ(t[3].stack, free_stack);
    CHECK_EQ(t[4].stack, free_stack);
    CHECK_EQ(t[3].tag, 3u);  // the allocation's tag follows it into its free entries
  }
}

// Issue 43: a free whose caller gave no stack (a DLPack tensor's deleter run by its consumer)
// carries the allocation's stack under context "all", not none.
TEST(a_free_without_a_stack_of_its_own_carries_the_allocations) {
  Fixture f;
  f.a().set_history(all_history(RecordContext::kAll));
  f.a().free(f.a().malloc(1000, 0, 0, CallContext{5, 0}), CallContext{0, 0});
  const auto t = traces(f.a());
  CHECK(t[2].action == TraceAction::kFreeRequested);
  CHECK_EQ(t[2].stack, 5u);
  CHECK_EQ(t[3].stack, 5u);
}

TEST(snapshot_entries_skip_actions_and_snapshot_without_traces) {
  Fixture f;
  HistoryOptions h = all_history(RecordContext::kNever);
  h.skip_mask = 1u << static_cast<unsigned>(TraceAction::kSegmentAlloc);
  f.a().set_history(h);
  DevicePtr p = f.a().malloc(3000, 0);
  auto fast = f.a().snapshot(0, false);
  CHECK(!fast.traces_included);
  CHECK(fast.traces.empty());
  CHECK_EQ(fast.segments.size(), std::size_t{1});
  CHECK_EQ(fast.segments[0].allocated_size, std::size_t{3072});
  CHECK_EQ(fast.segments[0].requested_size, std::size_t{3000});
  CHECK_EQ(fast.segments[0].block_count, std::size_t{2});
  auto full = f.a().snapshot(0, true);
  // alloc and the first snapshot's entry (segment_alloc skipped); a snapshot's own entry is
  // recorded after its trace is read, as PyTorch's is, so it appears in the next one.
  CHECK_EQ(full.traces.size(), std::size_t{2});
  CHECK(full.traces[0].action == TraceAction::kAlloc);
  CHECK(full.traces[1].action == TraceAction::kSnapshot);
  CHECK_EQ(full.traces[1].size, std::uint64_t{3072});  // active bytes
  // The segments part does not depend on include_traces.
  CHECK_EQ(full.segments.size(), fast.segments.size());
  CHECK_EQ(full.blocks.size(), fast.blocks.size());
  f.a().free(p);
}

TEST(ring_wraps_shrinks_and_frees_when_disabled) {
  Fixture f;
  f.a().set_history(all_history(RecordContext::kNever, 4));
  for (int i = 0; i < 5; ++i) f.a().free(f.a().malloc(512 * (i + 1), 0));
  // 1 segment_alloc + 5 x (alloc, free_requested, free_completed) = 16 entries; the newest 4
  // are kept. The snapshot's own entry comes after the read.
  auto snap = f.a().snapshot(0, true);
  CHECK_EQ(snap.traces.size(), std::size_t{4});
  CHECK(snap.trace_overflowed);
  CHECK(snap.traces[0].action == TraceAction::kFreeCompleted);
  CHECK(snap.traces[1].action == TraceAction::kAlloc);
  CHECK_EQ(snap.traces[1].size, std::uint64_t{512 * 5});
  CHECK(snap.traces[3].action == TraceAction::kFreeCompleted);
  HistoryOptions grow = all_history(RecordContext::kNever, 100);
  f.a().set_history(grow);
  f.a().free(f.a().malloc(100, 0));
  snap = f.a().snapshot(0, true);
  CHECK_EQ(snap.traces.size(), std::size_t{7});  // the 4 kept (the last: the read above) + 3, in order
  CHECK(snap.traces[3].action == TraceAction::kSnapshot);
  CHECK(snap.traces[4].action == TraceAction::kAlloc);
  CHECK_EQ(snap.traces[4].size, std::uint64_t{100});
  f.a().set_history(all_history(RecordContext::kNever, 2));  // shrinking keeps the newest
  snap = f.a().snapshot(0, true);
  CHECK_EQ(snap.traces.size(), std::size_t{2});
  CHECK(snap.traces[1].action == TraceAction::kSnapshot);  // the previous read's entry
  CHECK(LedgerReads(f.a()).history_bytes() >= 2 * sizeof(TraceEntry));
  HistoryOptions off;
  f.a().set_history(off);
  CHECK_EQ(LedgerReads(f.a()).history_bytes(), std::size_t{0});  // disabling frees the ring, not only empties it
  snap = f.a().snapshot(0, true);
  CHECK(snap.traces.empty());
  CHECK_EQ(snap.trace_max_entries, std::size_t{0});
  // Re-enabling starts empty; clear_history empties a running ring.
  f.a().set_history(all_history(RecordContext::kNever, 10));
  f.a().free(f.a().malloc(100, 0));
  HistoryOptions clear = all_history(RecordContext::kNever, 10);
  clear.clear_history = true;
  f.a().set_history(clear);
  CHECK_EQ(LedgerReads(f.a()).history_bytes(), std::size_t{0});
  CHECK_EQ(f.a().snapshot(0, true).traces.size(), std::size_t{0});  // empty: the read's entry comes after it
  CHECK_EQ(f.a().snapshot(0, true).traces.size(), std::size_t{1});  // ...and shows in the next
}

namespace {
void spin_for(std::chrono::microseconds d) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < deadline) {
  }
}
double wall_us_now() {
  return std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch()).count();
}
// A tick and the wall clock read together: of up to 1,000 tries, the one whose two tick
// reads lie closest, so a preemption between the reads (a busy machine) cannot pass for a
// conversion error.
struct TickAndWall {
  std::uint64_t ticks;
  double wall_us;
};
TickAndWall tick_and_wall() {
  TickAndWall best{0, 0};
  std::uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 1000 && best_gap > 2000; ++i) {
    const std::uint64_t a = clock_ticks();
    const double wall = wall_us_now();
    const std::uint64_t b = clock_ticks();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, wall};
    }
  }
  return best;
}
}  // namespace

TEST(clock_converter_tracks_the_wall_clock_and_is_cached) {
  ClockCalibration cal;
  spin_for(std::chrono::milliseconds(30));
  const TickAndWall now = tick_and_wall();
  TickConverter c = cal.converter();
  CHECK(c.us_per_tick() > 0);
  const double err = std::fabs(c.to_unix_us(now.ticks) - now.wall_us);
  if (err > 2000) harness::fail(__FILE__, __LINE__, "converted time is " + std::to_string(err) + " us off the wall clock");
  for (int i = 0; i < 100; ++i) cal.converter();
  CHECK_EQ(cal.builds(), std::uint64_t{1});
  cal.recalibrate();
  CHECK_EQ(cal.builds(), std::uint64_t{2});
}

// Two snapshots of one process give an event the same time: a recalibration between them
// maps no earlier tick anew (the old converter refitted every tick, moving times by a few us).
TEST(clock_recalibration_never_moves_a_converted_time) {
  ClockCalibration cal;
  std::vector<std::uint64_t> ticks;
  std::vector<double> shown;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 200; ++i) {
      ticks.push_back(clock_ticks());
      spin_for(std::chrono::microseconds(50));
    }
    const TickConverter c = round == 0 ? cal.converter() : cal.recalibrate();
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      const double us = c.to_unix_us(ticks[i]);
      if (i < shown.size()) {
        if (us != shown[i]) {
          harness::fail(__FILE__, __LINE__, "tick " + std::to_string(i) + " was " + std::to_string(shown[i]) +
                                                " us, after recalibration " + std::to_string(round) + " it is " +
                                                std::to_string(us));
        }
      } else {
        shown.push_back(us);
      }
    }
  }
  CHECK_EQ(cal.builds(), std::uint64_t{6});
  // The same times whichever order the ticks are read in (the converter's cursor).
  const TickConverter c = cal.converter();
  for (std::size_t i = ticks.size(); i-- > 0;) CHECK_EQ(c.to_unix_us(ticks[i]), shown[i]);
}

// Recalibrating steers toward the new fit without a step: times stay in order across the
// pieces, and a tick read after the correction has run is as close to the wall clock as a
// fresh calibration's.
TEST(clock_recalibration_is_continuous_and_converges) {
  ClockCalibration cal;
  spin_for(std::chrono::milliseconds(20));
  cal.converter();
  spin_for(std::chrono::milliseconds(20));
  const std::uint64_t before = clock_ticks();
  const TickConverter c = cal.recalibrate();
  CHECK(c.pieces() >= 3);
  // From before the recalibration to 3 s of ticks after it: past both new pieces' starts.
  const auto step = static_cast<std::uint64_t>(3e6 / c.us_per_tick() / 20000);
  double last = -1;
  std::uint64_t t = before;
  for (int i = 0; i < 20000; ++i, t += step) {
    const double us = c.to_unix_us(t);
    CHECK(us >= last);
    last = us;
  }
  // The correction spans about a second of ticks; past it, the new fit's scale alone.
  spin_for(std::chrono::milliseconds(1100));
  const TickAndWall now = tick_and_wall();
  const double err = std::fabs(c.to_unix_us(now.ticks) - now.wall_us);
  if (err > 2000) harness::fail(__FILE__, __LINE__, "converted time is " + std::to_string(err) + " us off the wall clock");
}

// _annotate_memory: an `annotate` entry at the live allocation's base (any address inside
// it names it), carrying the tag and the annotation site's stack; no stat moves; a dead
// address throws and records nothing; the skip mask keeps it out.
TEST(annotate_records_a_note_on_a_live_allocation) {
  Fixture f;
  f.a().set_history(all_history(RecordContext::kAll));
  const DevicePtr p = f.a().malloc(1000, 0, 0, CallContext{1, 0});
  const DeviceStats before = f.a().stats();
  AddressLookups(f.a()).annotate(p + 100, CallContext{7, 42});
  auto t = traces(f.a());
  CHECK(t.back().action == TraceAction::kAnnotate);
  CHECK_EQ(t.back().addr, p);
  CHECK_EQ(t.back().size, std::uint64_t{1000});
  CHECK_EQ(t.back().tag, std::uint32_t{42});
  CHECK_EQ(t.back().stack, std::uint32_t{7});
  CHECK(f.a().stats().arrays[kAllocatedBytes][kAggregate].current == before.arrays[kAllocatedBytes][kAggregate].current);
  const auto notes = [&] {
    std::size_t k = 0;
    for (const TraceEntry& e : traces(f.a())) k += e.action == TraceAction::kAnnotate ? 1 : 0;
    return k;
  };
  CHECK_EQ(notes(), std::size_t{1});
  CHECK_THROWS(AddressLookups(f.a()).annotate(p + 1024, CallContext{7, 42}), InvalidPointerError, "ERR_CCA_INVALID_POINTER");
  CHECK_EQ(notes(), std::size_t{1});
  HistoryOptions skip = all_history(RecordContext::kAll);
  skip.skip_mask = 1u << static_cast<unsigned>(TraceAction::kAnnotate);
  f.a().set_history(skip);
  AddressLookups(f.a()).annotate(p, CallContext{0, 1});
  CHECK_EQ(notes(), std::size_t{1});
  f.a().free(p);
  CHECK_VALID(f.a());
}

TEST(trace_subscription_queues_the_asked_actions_with_history_off_and_counts_drops) {
  Fixture f;
  auto& a = f.a();
  const std::uint32_t mask = (1u << static_cast<unsigned>(TraceAction::kSegmentAlloc)) |
                             (1u << static_cast<unsigned>(TraceAction::kOom));
  LiveTraces(a).subscribe(mask, 2);
  DevicePtr p = a.malloc(4096, 0, 0, CallContext{0, 7});
  a.free(p);
  DevicePtr big = a.malloc(30 * MiB, 0);
  std::vector<TraceEntry> got;
  std::uint64_t dropped = 9;
  LiveTraces(a).drain(got, dropped);
  CHECK_EQ(got.size(), std::size_t{2});
  CHECK(got[0].action == TraceAction::kSegmentAlloc && got[0].size == 2 * MiB);
  CHECK(got[1].action == TraceAction::kSegmentAlloc && got[1].size == 30 * MiB);
  CHECK_EQ(dropped, std::uint64_t{0});
  CHECK(a.snapshot(0, true).traces.empty());  // history stayed off
  // Past the capacity entries are counted, not queued.
  std::vector<DevicePtr> held;
  for (int i = 0; i < 3; ++i) held.push_back(a.malloc(100 * MiB, 0));  // three new segments
  LiveTraces(a).drain(got, dropped);
  CHECK_EQ(got.size(), std::size_t{2});
  CHECK_EQ(dropped, std::uint64_t{1});
  LiveTraces(a).drain(got, dropped);
  CHECK(got.empty());
  CHECK_EQ(dropped, std::uint64_t{0});  // counted once
  for (DevicePtr h : held) a.free(h);
  LiveTraces(a).subscribe(0, 0);
  a.free(a.malloc(200 * MiB, 0));
  LiveTraces(a).drain(got, dropped);
  CHECK(got.empty());
  a.free(big);
  CHECK_VALID(a);
}

TEST(trace_subscription_and_history_share_entries_but_not_the_skip_list) {
  Fixture f;
  auto& a = f.a();
  HistoryOptions h = all_history(RecordContext::kNever, 100);
  h.skip_mask = 1u << static_cast<unsigned>(TraceAction::kAlloc);
  a.set_history(h);
  LiveTraces(a).subscribe(1u << static_cast<unsigned>(TraceAction::kAlloc), 10);
  a.free(a.malloc(4096, 0));
  std::vector<TraceEntry> got;
  std::uint64_t dropped = 0;
  LiveTraces(a).drain(got, dropped);
  CHECK_EQ(got.size(), std::size_t{1});
  CHECK(got[0].action == TraceAction::kAlloc);
  CHECK_EQ(got[0].seq, std::uint64_t{0});  // not in the ring: no number
  const auto traces = a.snapshot(0, true).traces;
  for (const TraceEntry& e : traces) CHECK(e.action != TraceAction::kAlloc);
  for (std::size_t i = 1; i < traces.size(); ++i) CHECK_EQ(traces[i].seq, traces[i - 1].seq + 1);
}
