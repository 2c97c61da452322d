// Bad input gets an error with a stable code and changes nothing: the validator passes
// and every stat is equal before and after.
#include "common/errors.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

namespace {
template <class F>
void expect_unchanged(Fixture& f, F&& bad) {
  auto before = f.all_stats();
  auto segs_before = segments(f.a()).size();
  bad();
  CHECK(before == f.all_stats());
  CHECK_EQ(segments(f.a()).size(), segs_before);
  CHECK_VALID(f.a());
}
}  // namespace

TEST(bad_pointers_and_streams_change_nothing) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  DevicePtr p = f.a().malloc(4096, 0);
  DevicePtr q = f.a().malloc(4096, s1);
  f.a().free(q);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().free(q), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().free(p + 512), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().free(0x1234000), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().record_stream(q, s1), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(100, 0xdead0), InvalidArgumentError, "INVALID_STREAM"); });
  f.a().destroy_stream(s1);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(100, s1), InvalidArgumentError, "INVALID_STREAM"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().record_stream(p, s1), InvalidArgumentError, "INVALID_STREAM"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().destroy_stream(s1), InvalidArgumentError, "INVALID_STREAM"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().destroy_stream(0), InvalidArgumentError, "INVALID_STREAM"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().set_memory_fraction(-0.1), InvalidArgumentError, "INVALID_ARGUMENT"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(std::uint64_t{1} << 62, 0), OutOfMemoryError, "OUT_OF_MEMORY"); });
  expect_unchanged(f, [&] { CHECK_EQ(f.a().malloc(0, 0), DevicePtr{0}); });
  f.a().free(p);
  CHECK_VALID(f.a());
}

// check_stream remembers the last live stream it saw: each way a stream goes (destroyed, or
// an adopted one released) must make it forget, or the next call would take a dead stream.
TEST(a_stream_just_used_is_refused_once_it_is_gone) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  StreamId s2 = f.a().create_stream();
  f.a().free(f.a().malloc(4096, s1));  // s1 is now the remembered stream
  f.a().destroy_stream(s1);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(4096, s1), InvalidArgumentError, "INVALID_STREAM"); });
  f.a().free(f.a().malloc(4096, s2));
  f.a().free(f.a().malloc(4096, 0));   // stream 0 leaves the memo as it was
  f.a().destroy_stream(s2);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(4096, s2), InvalidArgumentError, "INVALID_STREAM"); });
  StreamId outside = 0;  // a stream made by other code
  CHECK(f.sim().stream_create(&outside) == Status::kOk);
  f.a().adopt_stream(outside);
  f.a().free(f.a().malloc(4096, outside));
  f.a().release_stream(outside);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(4096, outside), InvalidArgumentError, "INVALID_STREAM"); });
  CHECK_VALID(f.a());
}

TEST(a_pointer_of_another_device_is_foreign) {
  Fixture f(16 * GiB, AllocatorConfig{}, 2);
  DevicePtr p = f.a(1).malloc(4096, 0);
  auto before = f.all_stats(0);
  CHECK_THROWS(f.a(0).free(p), InvalidPointerError, "INVALID_POINTER");
  CHECK(before == f.all_stats(0));
  f.a(1).free(p);
  CHECK_VALID(f.a(0));
  CHECK_VALID(f.a(1));
}

TEST(a_failing_event_query_is_a_device_error_that_changes_nothing) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  f.sim().hold_stream(s1, true);
  DevicePtr p = f.a().malloc(4096, 0);
  f.a().record_stream(p, s1);
  f.a().free(p);
  f.sim().fail_next_event_queries(1);
  expect_unchanged(f, [&] { CHECK_THROWS(f.a().malloc(4096, 0), DeviceError, "ERR_CCA_DEVICE"); });
  f.sim().complete_stream(s1);
  CHECK_EQ(f.a().malloc(4096, 0), p);
  CHECK_VALID(f.a());
}

TEST(destroying_a_recorded_stream_waits_for_it) {
  Fixture f;
  StreamId s1 = f.a().create_stream();
  f.sim().hold_stream(s1, true);
  DevicePtr p = f.a().malloc(4096, 0);
  f.a().record_stream(p, s1);
  f.a().destroy_stream(s1);
  f.a().free(p);  // nothing left to wait for: free at once
  CHECK_EQ(f.cur(kActive), std::int64_t{0});
  CHECK_VALID(f.a());
}

TEST(copies_stay_inside_one_live_allocation) {
  Fixture f;
  DevicePtr p = f.a().malloc(1000, 0);  // a 1024-byte block; the caller owns 1000 bytes
  DevicePtr q = f.a().malloc(4096, 0);
  f.a().free(q);
  unsigned char buf[2048] = {};
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().copy_to_host(buf, p, 0, 1001), InvalidArgumentError, "OUT_OF_BOUNDS"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().copy_to_device(p, 1000, buf, 1), InvalidArgumentError, "OUT_OF_BOUNDS"); });
  // offset + bytes wraps around 2^64: still refused.
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().fill(p, 8, 0, UINT64_MAX - 4), InvalidArgumentError, "OUT_OF_BOUNDS"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().fill(p + 512, 0, 0, 1), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().copy_to_device(q, 0, buf, 1), InvalidPointerError, "INVALID_POINTER"); });
  expect_unchanged(f, [&] { CHECK_THROWS(f.copies().copy_to_host(buf, 0, 0, 1), InvalidPointerError, "INVALID_POINTER"); });
  for (int i = 0; i < 1000; ++i) buf[i] = static_cast<unsigned char>(i);
  f.copies().copy_to_device(p, 0, buf, 1000);
  unsigned char back[1000] = {};
  f.copies().copy_to_host(back, p, 0, 1000);
  for (int i = 0; i < 1000; ++i) CHECK_EQ(back[i], static_cast<unsigned char>(i));
  f.copies().fill(p, 10, 0xab, 990);
  f.copies().copy_to_host(back, p, 0, 1000);
  CHECK_EQ(back[9], static_cast<unsigned char>(9));
  CHECK_EQ(back[999], static_cast<unsigned char>(0xab));
  f.a().free(p);
  CHECK_VALID(f.a());
}
