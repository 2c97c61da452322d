// CUDA graphs on the cuda backend over the fake driver (its graphs record and replay the
// CPU kernels, copies and event records; it refuses, counts and invalidates as the driver
// does). What the allocator's capture rules buy, each against the eager result: a replayed
// graph computes what eager work computes; with routing switched off by the test hook, eager
// work takes the graph's memory and a replay overwrites it (the corruption PyTorch's design
// prevents); no event call reaches the driver during a capture; a failed capture leaks nothing.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "allocator/policy/facets/mem_pools.h"
#include "allocator/policy/facets/graph_captures.h"
#include "device/cuda/cuda_device.h"
#include "fixture.h"
#include "harness.h"
#include "runtime/runtime.h"

using namespace cca;
using namespace test;

namespace {

const char kImage[] = "FAKECUBIN\nfill_u32\nsaxpy\n";
constexpr unsigned kN = 256;
constexpr std::size_t kBytes = kN * 4;

template <class F>
F fake_symbol(const char* name) {
  void* lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  return reinterpret_cast<F>(dlsym(lib, name));
}

LaunchShape threads(unsigned n) {
  LaunchShape s;
  s.block[0] = n;
  return s;
}

// The fake driver's runtime with the two kernels loaded.
struct Gpu {
  Gpu() : runtime(open(), AllocatorConfig{}, "test"), a(runtime.allocator(0)), c(runtime.compute(0)),
          g(runtime.graphs(0)) {
    const ModuleId m = c.load_module(kImage, sizeof kImage);
    fill = c.get_function(m, "fill_u32").id;
    saxpy = c.get_function(m, "saxpy").id;
  }
  static std::unique_ptr<Platform> open() {
    ::setenv("CCA_LIBCUDA_PATH", FAKE_CUDA_PATH, 1);
    ::setenv("FAKE_CUDA_CAPACITY_MB", "256", 1);
    if (!probe_cuda().available) harness::fail(__FILE__, __LINE__, "fake driver unusable");
    return CudaPlatform::open();
  }
  // buf[0..kN) = value, queued on `stream`.
  void fill_u32(DevicePtr buf, unsigned value, StreamId stream) {
    unsigned char p[16];
    const unsigned n = kN;
    std::memcpy(p, &buf, 8);
    std::memcpy(p + 8, &value, 4);
    std::memcpy(p + 12, &n, 4);
    const BufferUse use{buf, 0, kBytes};
    c.launch(fill, threads(kN), stream, p, sizeof p, &use, 1, true);
  }
  // y = a * x + y over kN floats, queued on `stream`.
  void axpy(float alpha, DevicePtr x, DevicePtr y, StreamId stream) {
    unsigned char p[32] = {0};
    const unsigned n = kN;
    std::memcpy(p, &alpha, 4);
    std::memcpy(p + 8, &x, 8);
    std::memcpy(p + 16, &y, 8);
    std::memcpy(p + 24, &n, 4);
    const BufferUse uses[2] = {{x, 0, kBytes}, {y, 0, kBytes}};
    c.launch(saxpy, threads(kN), stream, p, 28, uses, 2, true);
  }
  // A = A * 2 through a temporary, as `A = A * 2` runs in an array library (cupy#9655's case).
  void double_in_place(DevicePtr A, StreamId s) {
    const DevicePtr tmp = a.malloc(kBytes, s);
    fill_u32(tmp, 0, s);
    axpy(2.0f, A, tmp, s);
    c.copy_device_async(BufferUse{A, 0, kBytes}, BufferUse{tmp, 0, kBytes}, s, true);
    a.free(tmp);
  }
  std::vector<float> read(DevicePtr buf) {
    std::vector<float> out(kN);
    runtime.copies(0).copy_to_host(out.data(), buf, 0, kBytes);
    return out;
  }
  void write(DevicePtr buf, float first) {
    std::vector<float> v(kN);
    for (unsigned i = 0; i < kN; ++i) v[i] = first + static_cast<float>(i);
    runtime.copies(0).copy_to_device(buf, 0, v.data(), kBytes);
  }

  Runtime runtime;
  DeviceCachingAllocator& a;
  DeviceCompute& c;
  DeviceGraphs& g;
  FunctionId fill = 0;
  FunctionId saxpy = 0;
};

}  // namespace

TEST(graph_replayed_n_times_gives_the_eager_result) {
  Gpu gpu;
  const StreamId s = gpu.a.create_stream();
  const DevicePtr eager = gpu.a.malloc(kBytes, s);
  const DevicePtr A = gpu.a.malloc(kBytes, s);
  gpu.write(eager, 1.0f);
  gpu.write(A, 1.0f);
  gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
  gpu.double_in_place(A, s);
  gpu.double_in_place(A, s);
  const std::uint64_t graph = gpu.g.end_capture(s);
  CHECK_EQ(gpu.g.graph_info(graph).nodes, std::size_t{6});
  CHECK(gpu.read(A)[3] == 4.0f);  // capturing ran nothing
  for (int i = 0; i < 5; ++i) {
    gpu.g.launch(graph, s);
    gpu.double_in_place(eager, s);
    gpu.double_in_place(eager, s);
  }
  CHECK(gpu.read(A) == gpu.read(eager));
  CHECK(gpu.read(A)[3] == 4.0f * 1024.0f);
  gpu.g.destroy(graph);
  gpu.a.free(A);
  gpu.a.free(eager);
  CHECK_VALID(gpu.a);
}

// Eager work after the capture allocates what the graph's temporary used; each replay writes
// the temporary. With the allocator routing the capture to its pool, the eager buffer is other
// memory and survives; with routing switched off (the negative control), it is the same
// memory and the replay overwrites it.
TEST(graph_memory_is_never_handed_to_eager_work_with_a_negative_control) {
  for (const bool route : {true, false}) {
    Gpu gpu;
    GraphCaptures(gpu.a).set_capture_routing_for_tests(route);
    const StreamId s = gpu.a.create_stream();
    const DevicePtr A = gpu.a.malloc(kBytes, s);
    gpu.write(A, 1.0f);
    gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
    gpu.double_in_place(A, s);
    const std::uint64_t graph = gpu.g.end_capture(s);
    const DevicePtr B = gpu.a.malloc(kBytes, s);  // eager
    gpu.fill_u32(B, 7, s);
    gpu.g.launch(graph, s);
    std::vector<unsigned> b(kN);
    gpu.runtime.copies(0).copy_to_host(b.data(), B, 0, kBytes);
    if (route) {
      CHECK_EQ(b[5], 7u);  // intact
    } else {
      CHECK(b[5] != 7u);  // the replay wrote 2 * A into it: the corruption routing prevents
      float f;
      std::memcpy(&f, &b[5], 4);
      CHECK(f == 12.0f);
    }
    gpu.a.free(B);
    gpu.g.destroy(graph);
    gpu.a.free(A);
    CHECK_VALID(gpu.a);
  }
}

TEST(no_event_call_reaches_the_driver_during_a_capture) {
  Gpu gpu;
  auto event_calls = fake_symbol<std::uint64_t (*)()>("fake_cuda_event_calls_during_capture");
  const StreamId s = gpu.a.create_stream();
  const StreamId other = gpu.a.create_stream();
  const DevicePtr A = gpu.a.malloc(kBytes, s);
  gpu.write(A, 1.0f);
  // A block used on another stream before the capture and freed during it: the free needs an
  // event, and the allocator must not make it until the capture ends.
  const DevicePtr shared = gpu.a.malloc(kBytes, s);
  gpu.fill_u32(shared, 1, other);  // recorded on `other`
  const std::uint64_t before = event_calls();
  gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
  gpu.a.free(shared);
  for (int i = 0; i < 4; ++i) gpu.double_in_place(A, s);  // mallocs that would process events
  CHECK_EQ(GraphCaptures(gpu.a).frees_deferred_by_capture(), std::size_t{1});
  const std::uint64_t graph = gpu.g.end_capture(s);  // not invalidated
  CHECK_EQ(event_calls(), before);
  gpu.a.free(gpu.a.malloc(512, s));  // the deferred free's event is recorded now
  CHECK_EQ(GraphCaptures(gpu.a).frees_deferred_by_capture(), std::size_t{0});
  gpu.g.launch(graph, s);
  CHECK(gpu.read(A)[0] == 16.0f);
  gpu.g.destroy(graph);
  gpu.a.free(A);
  CHECK_VALID(gpu.a);
}

TEST(a_capture_the_driver_invalidated_leaks_nothing) {
  Gpu gpu;
  auto live_captures = fake_symbol<std::size_t (*)()>("fake_cuda_live_captures");
  auto live_graphs = fake_symbol<std::size_t (*)()>("fake_cuda_live_graphs");
  const std::size_t graphs_before = live_graphs();
  const StreamId s = gpu.a.create_stream();
  const DevicePtr A = gpu.a.malloc(kBytes, s);
  const auto reserved = gpu.a.stats().arrays[kReservedBytes][kAggregate].current;
  gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
  gpu.double_in_place(A, s);
  // Something outside our allocator synchronizes: the driver invalidates the capture.
  CHECK(gpu.runtime.platform().device(0).device_synchronize() != Status::kOk);
  CHECK_THROWS(gpu.g.end_capture(s), AllocatorError, "ERR_CCA_CAPTURE_INVALIDATED");
  CHECK(!GraphCaptures(gpu.a).capture_underway());
  CHECK_EQ(live_captures(), std::size_t{0});
  CHECK_EQ(live_graphs(), graphs_before);
  CHECK_EQ(gpu.g.live_graphs(), std::size_t{0});
  gpu.a.empty_cache();
  CHECK_EQ(gpu.a.stats().arrays[kReservedBytes][kAggregate].current, reserved);
  // The stream captures again afterwards.
  gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
  gpu.double_in_place(A, s);
  gpu.g.destroy(gpu.g.end_capture(s));
  gpu.a.free(A);
  gpu.a.empty_cache();
  CHECK_EQ(gpu.a.stats().arrays[kReservedBytes][kAggregate].current, std::int64_t{0});
  CHECK_VALID(gpu.a);
}

TEST(graphs_sharing_a_pool_and_a_forked_side_stream) {
  Gpu gpu;
  const StreamId s = gpu.a.create_stream();
  const StreamId side = gpu.a.create_stream();
  const DevicePtr A = gpu.a.malloc(kBytes, s);
  const DevicePtr B = gpu.a.malloc(kBytes, s);
  gpu.write(A, 1.0f);
  gpu.write(B, 1.0f);
  const std::uint32_t pool = gpu.g.pool_handle();
  // Graph 1: A doubles on `s`; B doubles on a side stream forked from `s` and joined back.
  gpu.g.begin_capture(s, pool, CaptureMode::kGlobal);
  const EventId fork = gpu.c.event_create(false);
  const EventId join = gpu.c.event_create(false);
  gpu.c.event_record(fork, s);
  gpu.c.stream_wait_event(side, fork);
  gpu.double_in_place(B, side);  // its temporary comes from the graph's pool too
  gpu.double_in_place(A, s);
  gpu.c.event_record(join, side);
  gpu.c.stream_wait_event(s, join);
  const std::uint64_t one = gpu.g.end_capture(s);
  CHECK_EQ(gpu.g.graph_info(one).pool, pool);
  // A segment per stream (blocks are never shared across streams), both in the pool.
  CHECK_EQ(gpu.a.snapshot(pool, false).segments.size(), std::size_t{2});
  // Graph 2 shares the pool: its temporary reuses graph 1's memory.
  gpu.g.begin_capture(s, pool, CaptureMode::kGlobal);
  gpu.double_in_place(A, s);
  const std::uint64_t two = gpu.g.end_capture(s);
  CHECK_EQ(gpu.a.snapshot(pool, false).segments.size(), std::size_t{2});
  for (int i = 0; i < 3; ++i) {
    gpu.g.launch(one, s);
    gpu.g.launch(two, s);
  }
  CHECK(gpu.read(A)[0] == 64.0f);
  CHECK(gpu.read(B)[0] == 8.0f);
  gpu.g.destroy(one);
  CHECK(MemPools(gpu.a).pool_exists(pool));
  gpu.g.launch(two, s);  // the other graph's memory is still its own
  CHECK(gpu.read(A)[0] == 128.0f);
  gpu.g.destroy(two);
  gpu.a.free(A);
  gpu.a.free(B);
  gpu.c.event_destroy(fork);
  gpu.c.event_destroy(join);
  gpu.a.empty_cache();
  CHECK(!MemPools(gpu.a).pool_exists(pool));
  CHECK_EQ(gpu.a.stats().arrays[kReservedBytes][kAggregate].current, std::int64_t{0});
  CHECK_VALID(gpu.a);
}

TEST(capture_refusals_name_the_call_and_change_nothing) {
  Gpu gpu;
  const StreamId s = gpu.a.create_stream();
  CHECK_THROWS(gpu.g.begin_capture(0, 0, CaptureMode::kGlobal), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.g.end_capture(s), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  const DevicePtr A = gpu.a.malloc(kBytes, s);
  const EventId e = gpu.c.event_create(false);
  gpu.g.begin_capture(s, 0, CaptureMode::kGlobal);
  CHECK_THROWS(gpu.g.begin_capture(s, 0, CaptureMode::kGlobal), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.runtime.copies(0).copy_to_device(A, 0, "x", 1), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.runtime.copies(0).fill(A, 0, 1, 4), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.c.event_query(e), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.a.synchronize_stream(s), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(gpu.a.empty_cache(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  gpu.fill_u32(A, 3, s);
  const std::uint64_t graph = gpu.g.end_capture(s);  // none of those invalidated it
  gpu.g.launch(graph, 0);                             // replayed on the default stream
  std::vector<unsigned> out(kN);
  gpu.runtime.copies(0).copy_to_host(out.data(), A, 0, kBytes);
  CHECK_EQ(out[9], 3u);
  gpu.g.destroy(graph);
  CHECK_THROWS(gpu.g.launch(graph, s), InvalidArgumentError, "ERR_CCA_INVALID_HANDLE");
  gpu.c.event_destroy(e);
  gpu.a.free(A);
  CHECK_VALID(gpu.a);
}

TEST(graphs_are_refused_on_the_simulator_naming_the_cuda_backend) {
  Runtime runtime(std::make_unique<SimPlatform>(SimOptions{}), AllocatorConfig{}, "test");
  const StreamId s = runtime.allocator(0).create_stream();
  CHECK_THROWS(runtime.graphs(0).begin_capture(s, 0, CaptureMode::kGlobal), AllocatorError,
               "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK_THROWS(runtime.graphs(0).pool_handle(), AllocatorError, "ERR_CCA_CAPTURE_UNSUPPORTED");
  CHECK(!GraphCaptures(runtime.allocator(0)).capture_underway());
}
