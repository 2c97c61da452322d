// The simulated device keeps honest books: capacity, coalescing address space, events.
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

TEST(sim_device_capacity_addresses_and_events) {
  SimDevice d(1, 10 * MiB);
  CHECK(d.is_simulated());
  CHECK(d.name().find("Simulated") != std::string::npos);
  DevicePtr a = 0, b = 0, c = 0;
  CHECK(d.malloc(&a, 4 * MiB) == Status::kOk);
  CHECK(d.malloc(&b, 4 * MiB) == Status::kOk);
  CHECK_EQ(b, a + 4 * MiB);
  CHECK(d.malloc(&c, 4 * MiB) == Status::kOutOfMemory);
  std::size_t free_b = 0, total = 0;
  d.mem_get_info(&free_b, &total);
  CHECK_EQ(free_b, 2 * MiB);
  CHECK_EQ(total, 10 * MiB);
  CHECK(d.free(a) == Status::kOk);
  CHECK(d.free(a) == Status::kInvalidValue);
  CHECK(d.free(b) == Status::kOk);
  CHECK(d.malloc(&c, 8 * MiB) == Status::kOk);  // freed ranges coalesced
  CHECK_EQ(c, a);
  d.fail_next_mallocs(1);
  DevicePtr e = 0;
  CHECK(d.malloc(&e, 512) == Status::kOutOfMemory);
  CHECK(d.malloc(&e, 512) == Status::kOk);
  // After 1 KiB more: two 512-byte mallocs pass, the third fails, the fourth passes again.
  d.fail_next_mallocs(1, 1024);
  DevicePtr g = 0, h = 0, i = 0;
  CHECK(d.malloc(&g, 512) == Status::kOk);
  CHECK(d.malloc(&h, 512) == Status::kOk);
  CHECK(d.malloc(&i, 512) == Status::kOutOfMemory);
  CHECK(d.malloc(&i, 512) == Status::kOk);
  for (DevicePtr p : {e, g, h, i}) CHECK(d.free(p) == Status::kOk);

  StreamId s = 0;
  EventId ev = 0;
  CHECK(d.stream_create(&s) == Status::kOk);
  CHECK(d.event_create(&ev) == Status::kOk);
  d.hold_stream(s, true);
  CHECK(d.event_record(ev, s) == Status::kOk);
  CHECK(d.event_query(ev) == Status::kNotReady);
  CHECK_EQ(d.pending_events(), std::size_t{1});
  d.complete_stream(s);
  CHECK(d.event_query(ev) == Status::kOk);
  d.fail_next_event_queries(1);
  CHECK(d.event_query(ev) == Status::kError);
  CHECK(d.stream_destroy(s) == Status::kOk);
  CHECK(d.event_record(ev, s) == Status::kInvalidValue);
}
