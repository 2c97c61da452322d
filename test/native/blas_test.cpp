// DeviceBlas: the shape checks and operand extents (no device), CUBLAS_WORKSPACE_CONFIG's
// grammar, and on the fake driver and fake cuBLAS what PyTorch's handle pool does on every
// call: the stream set, then our workspace (set-stream resets it), one workspace per
// (thread, stream), one handle per thread.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "compute/device_blas.h"
#include "device/cuda/cuda_device.h"
#include "fixture.h"
#include "harness.h"
#include "runtime/runtime.h"

using namespace cca;
using namespace test;

namespace {

GemmCall shape(std::int64_t m, std::int64_t n, std::int64_t k, bool ta = false, bool tb = false) {
  GemmCall c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.trans_a = ta;
  c.trans_b = tb;
  auto at_least_1 = [](std::int64_t v) { return v > 1 ? v : std::int64_t{1}; };
  c.lda = at_least_1(ta ? k : m);
  c.ldb = at_least_1(tb ? n : k);
  c.ldc = at_least_1(m);
  return c;
}

}  // namespace

TEST(gemm_shape_extents_and_refusals) {
  // Column-major: A m x k with lda m spans lda * (k - 1) + m elements.
  GemmExtents x = check_gemm_shape(shape(3, 5, 4));
  CHECK_EQ(x.a, std::uint64_t{4 * (3 * 3 + 3)});
  CHECK_EQ(x.b, std::uint64_t{4 * (4 * 4 + 4)});
  CHECK_EQ(x.c, std::uint64_t{4 * (3 * 4 + 3)});
  // Transposed A is stored k x m.
  x = check_gemm_shape(shape(3, 5, 4, true, true));
  CHECK_EQ(x.a, std::uint64_t{4 * (4 * 2 + 4)});
  CHECK_EQ(x.b, std::uint64_t{4 * (5 * 3 + 5)});
  // A batch: stride * (batch - 1) more; f16 halves the bytes.
  GemmCall b = shape(2, 2, 2);
  b.batch = 3;
  b.stride_a = 10;
  b.stride_b = 4;
  b.stride_c = 4;
  b.type = BlasType::kF16;
  x = check_gemm_shape(b);
  CHECK_EQ(x.a, std::uint64_t{2 * (10 * 2 + 4)});
  // Empty products span nothing; k = 0 still reads no A or B.
  CHECK_EQ(check_gemm_shape(shape(0, 5, 4)).c, std::uint64_t{0});
  CHECK_EQ(check_gemm_shape(shape(3, 5, 0)).a, std::uint64_t{0});
  GemmCall bad = shape(3, 5, 4);
  bad.lda = 2;
  CHECK_THROWS(check_gemm_shape(bad), InvalidArgumentError, "ERR_CCA_GEMM_SHAPE");
  bad = shape(3, 5, 4);
  bad.m = std::int64_t{1} << 31;
  CHECK_THROWS(check_gemm_shape(bad), InvalidArgumentError, "ERR_CCA_GEMM_SHAPE");
  bad = shape(2, 2, 2);
  bad.batch = 2;
  bad.stride_c = 3;  // the two outputs would overlap
  CHECK_THROWS(check_gemm_shape(bad), InvalidArgumentError, "ERR_CCA_GEMM_SHAPE");
  bad = shape(2, 2, 2);
  bad.compute = BlasCompute::kF16;  // f32 operands
  CHECK_THROWS(check_gemm_shape(bad), InvalidArgumentError, "ERR_CCA_GEMM_SHAPE");
  // The largest dimensions cuBLAS takes do not overflow the extent's arithmetic.
  GemmCall huge = shape(2147483647, 2147483647, 2147483647);
  huge.batch = 2147483647;
  huge.stride_c = std::int64_t{1} << 62;
  CHECK_THROWS(check_gemm_shape(huge), InvalidArgumentError, "ERR_CCA_GEMM_SHAPE");
}

TEST(cublas_workspace_config_grammar) {
  CHECK_EQ(parse_workspace_config(nullptr, 7), Bytes{7});
  CHECK_EQ(parse_workspace_config("", 7), Bytes{7});
  CHECK_EQ(parse_workspace_config(":4096:2:16:8", 7), Bytes{8519680});
  CHECK_EQ(parse_workspace_config(":4096:8", 7), Bytes{32 * 1024 * 1024});
  CHECK_EQ(parse_workspace_config(":0:0", 7), Bytes{0});
  for (const char* malformed : {"4096:2", ":4096", ":a:2", ":4096:2:", "::", ":4096:-1"}) {
    CHECK_EQ(parse_workspace_config(malformed, 7), Bytes{7});
  }
}

TEST(blas_on_fake_cublas_sets_stream_then_workspace_every_call) {
  if (std::getenv("CCA_CONFORMANCE_DRIVER") != nullptr) return;  // this process runs the real driver
  ::setenv("CCA_LIBCUDA_PATH", FAKE_CUDA_PATH, 1);
  ::setenv("CCA_CUBLAS_PATH", FAKE_CUBLAS_PATH, 1);
  ::setenv("CCA_CUBLASLT_PATH", FAKE_CUBLAS_PATH, 1);  // the fake answers for cuBLASLt too
  ::setenv("FAKE_CUDA_CAPACITY_MB", "256", 1);
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  if (!probe_cuda().available) harness::fail(__FILE__, __LINE__, "fake driver unusable");
  CHECK(blas_info().available);
  CHECK(blas_info().lt_available);
  void* lib = dlopen(FAKE_CUBLAS_PATH, RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != nullptr);
  auto counts = reinterpret_cast<void (*)(long long*)>(dlsym(lib, "fake_cublas_counts"));
  long long before[10], after[10];
  counts(before);

  Runtime runtime(CudaPlatform::open(), AllocatorConfig{}, "test");
  DeviceCachingAllocator& a = runtime.allocator(0);
  DeviceBlas& blas = runtime.blas(0);
  const StreamId side = a.create_stream();
  const DevicePtr buf = a.malloc(4096, 0);
  GemmRequest r;
  r.shape = shape(4, 4, 4);
  r.a_base = r.b_base = r.c_base = buf;
  for (StreamId s : {StreamId{0}, StreamId{0}, side}) {
    r.stream = s;
    blas.gemm(r);
  }
  counts(after);
  CHECK_EQ(after[0] - before[0], 1LL);  // one handle for this thread
  CHECK_EQ(after[1] - before[1], 3LL);  // the stream set on every call
  CHECK_EQ(after[2] - before[2], 3LL);  // and then the workspace
  CHECK_EQ(after[3] - before[3], 3LL);
  CHECK_EQ(after[4] - before[4], 0LL);  // no GEMM ran on cuBLAS's own workspace
  CHECK_EQ(after[6], static_cast<long long>(blas.workspace_bytes()));
  CHECK_EQ(blas.workspace_count(), std::size_t{2});  // one per stream
  // Another thread: its own handle and its own workspace.
  std::thread([&] {
    r.stream = 0;
    blas.gemm(r);
  }).join();
  counts(after);
  CHECK_EQ(after[0] - before[0], 2LL);
  CHECK_EQ(blas.workspace_count(), std::size_t{3});
  CHECK_EQ(a.stats().arrays[kAllocatedBytes][kAggregate].current, static_cast<std::int64_t>(4096 + 3 * blas.workspace_bytes()));
  // A refused range makes no workspace and queues nothing.
  r.stream = a.create_stream();
  r.c_offset = 4096;
  CHECK_THROWS(blas.gemm(r), InvalidArgumentError, "ERR_CCA_OUT_OF_BOUNDS");
  CHECK_EQ(blas.workspace_count(), std::size_t{3});
  long long last[10];
  counts(last);
  CHECK_EQ(last[3], after[3]);
  // A bias goes to cuBLASLt, with its own workspace for the stream.
  r.c_offset = 0;
  r.stream = 0;
  r.bias_base = buf;
  blas.gemm(r);
  counts(last);
  CHECK_EQ(last[7] - after[7], 1LL);
  CHECK_EQ(last[9], static_cast<long long>(blas.lt_workspace_bytes()));
  CHECK_EQ(blas.workspace_count(), std::size_t{4});
  CHECK_EQ(blas.clear_workspaces(), std::size_t{0});
  CHECK_EQ(blas.workspace_count(), std::size_t{0});
  a.free(buf);
  CHECK(a.validate().empty());
}
