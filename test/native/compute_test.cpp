// DeviceCompute: handles it never gave out are refused, a launch's buffers go through the
// allocator's check (a bad one changes nothing), recording follows the launch's stream,
// and the simulator refuses kernels by name. Kernels run on the fake driver's CPU kernels.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "device/cuda/cuda_device.h"
#include "fixture.h"
#include "harness.h"
#include "runtime/runtime.h"

using namespace cca;
using namespace test;

namespace {

const char kImage[] = "FAKECUBIN\nfill_u32\nsaxpy\n";

struct FillParams {
  unsigned char bytes[16];
  FillParams(DevicePtr p, unsigned value, unsigned n) {
    std::memcpy(bytes, &p, 8);
    std::memcpy(bytes + 8, &value, 4);
    std::memcpy(bytes + 12, &n, 4);
  }
};

LaunchShape shape(unsigned threads) {
  LaunchShape s;
  s.block[0] = threads;
  return s;
}

}  // namespace

TEST(compute_refused_on_the_simulator) {
  Runtime runtime(std::make_unique<SimPlatform>(SimOptions{1, GiB}), AllocatorConfig{}, "test");
  CHECK_THROWS(runtime.compute(0).load_module(kImage, sizeof kImage), DeviceError, "ERR_CCA_KERNELS_UNSUPPORTED");
  // Events and waits need no kernels: they work on the simulator.
  DeviceCompute& c = runtime.compute(0);
  EventId e = c.event_create(true);
  c.event_record(e, 0);
  CHECK(c.event_query(e));
  c.event_destroy(e);
  CHECK_THROWS(c.event_query(e), InvalidArgumentError, "ERR_CCA_INVALID_EVENT");
  CHECK_THROWS(c.event_record(c.event_create(false), 0xdead0), InvalidArgumentError, "ERR_CCA_INVALID_STREAM");
}

TEST(compute_on_fake_driver) {
  if (std::getenv("CCA_CONFORMANCE_DRIVER") != nullptr) return;  // this process runs the real driver
  ::setenv("CCA_LIBCUDA_PATH", FAKE_CUDA_PATH, 1);
  ::setenv("FAKE_CUDA_CAPACITY_MB", "64", 1);
  if (!probe_cuda().available) harness::fail(__FILE__, __LINE__, "fake driver unusable");
  void* lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  auto hold = reinterpret_cast<void (*)(void*, int)>(dlsym(lib, "fake_cuda_hold_stream"));
  auto complete = reinterpret_cast<void (*)(void*)>(dlsym(lib, "fake_cuda_complete_stream"));
  auto as_ptr = [](StreamId s) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(s)); };

  Runtime runtime(CudaPlatform::open(), AllocatorConfig{}, "test");
  DeviceCachingAllocator& a = runtime.allocator(0);
  DeviceCompute& c = runtime.compute(0);
  CHECK_THROWS(c.load_module("not a module", 13), InvalidArgumentError, "ERR_CCA_INVALID_MODULE");
  const ModuleId m = c.load_module(kImage, sizeof kImage);
  CHECK_THROWS(c.get_function(m + 8, "fill_u32"), InvalidArgumentError, "ERR_CCA_INVALID_HANDLE");
  CHECK_THROWS(c.get_function(m, "missing"), InvalidArgumentError, "ERR_CCA_KERNEL_NOT_FOUND");
  const LoadedFunction fill = c.get_function(m, "fill_u32");
  CHECK(fill.params_known);
  CHECK_EQ(fill.params.size(), std::size_t{3});
  CHECK_EQ(fill.params[2].offset, std::size_t{12});

  // A launch writes our buffer.
  const DevicePtr buf = a.malloc(1024, 0);
  FillParams p(buf, 7, 256);
  const BufferUse whole{buf, 0, 1024};
  c.launch(fill.id, shape(256), 0, p.bytes, sizeof p.bytes, &whole, 1, true);
  unsigned out[256] = {0};
  runtime.copies(0).copy_to_host(out, buf, 0, sizeof out);
  CHECK_EQ(out[0], 7u);
  CHECK_EQ(out[255], 7u);

  // Bad input changes nothing: a range past the buffer, a freed buffer, a bad shape, an
  // unknown function, a destroyed stream.
  const BufferUse past{buf, 1000, 100};
  const std::string before = a.validate();
  CHECK_THROWS(c.launch(fill.id, shape(256), 0, p.bytes, 16, &past, 1, true), InvalidArgumentError, "ERR_CCA_OUT_OF_BOUNDS");
  CHECK_THROWS(c.launch(fill.id, shape(2048), 0, p.bytes, 16, &whole, 1, true), InvalidArgumentError, "ERR_CCA_LAUNCH_CONFIG");
  CHECK_THROWS(c.launch(fill.id + 1, shape(1), 0, p.bytes, 16, &whole, 1, true), InvalidArgumentError, "ERR_CCA_INVALID_HANDLE");
  const StreamId gone = a.create_stream();
  a.destroy_stream(gone);
  CHECK_THROWS(c.launch(fill.id, shape(1), gone, p.bytes, 16, &whole, 1, true), InvalidArgumentError, "ERR_CCA_INVALID_STREAM");
  const DevicePtr freed = a.malloc(1024, 0);
  a.free(freed);
  const BufferUse stale{freed, 0, 4};
  CHECK_THROWS(c.launch(fill.id, shape(1), 0, p.bytes, 16, &stale, 1, true), InvalidPointerError, "ERR_CCA_INVALID_POINTER");
  CHECK(a.validate() == before);

  // A launch on another stream records the buffer there: while that stream is held, the
  // freed block is not handed out again; without recording it is.
  const StreamId side = a.create_stream();
  hold(as_ptr(side), 1);
  const DevicePtr first = a.malloc(4096, 0);
  FillParams late(first, 0xdeadbeef, 1024);
  const BufferUse first_use{first, 0, 4096};
  c.launch(fill.id, shape(1024), side, late.bytes, 16, &first_use, 1, true);
  a.free(first);
  const DevicePtr second = a.malloc(4096, 0);
  CHECK(second != first);
  complete(as_ptr(side));
  a.free(second);
  const DevicePtr third = a.malloc(4096, 0);
  FillParams late2(third, 0xdeadbeef, 1024);
  const BufferUse third_use{third, 0, 4096};
  c.launch(fill.id, shape(1024), side, late2.bytes, 16, &third_use, 1, false);
  a.free(third);
  const DevicePtr fourth = a.malloc(4096, 0);
  CHECK_EQ(fourth, third);  // handed out again at once: the caller opted out
  runtime.copies(0).fill(fourth, 0, 0x11, 4096);
  complete(as_ptr(side));
  unsigned seen[1024];
  runtime.copies(0).copy_to_host(seen, fourth, 0, sizeof seen);
  CHECK_EQ(seen[0], 0xdeadbeefu);  // the late kernel overwrote the new owner: the race recording prevents
  hold(as_ptr(side), 0);
  a.free(fourth);
  a.free(buf);
  c.unload_module(m);
  CHECK_THROWS(c.get_function(m, "fill_u32"), InvalidArgumentError, "ERR_CCA_INVALID_HANDLE");
  CHECK_THROWS(c.launch(fill.id, shape(1), 0, p.bytes, 16, nullptr, 0, true), InvalidArgumentError, "ERR_CCA_INVALID_HANDLE");
  a.destroy_stream(side);
  CHECK_VALID(a);
}
