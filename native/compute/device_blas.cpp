#include "device_blas.h"
#include "../allocator/policy/facets/graph_captures.h"

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../common/errors.h"

namespace cca {

namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
// PyTorch's defaults (CublasHandlePool.cpp): ":4096:2:16:8", and ":4096:8" from Hopper on.
constexpr Bytes kDefaultWorkspace = 4096 * 1024 * 2 + 16 * 1024 * 8;
constexpr Bytes kHopperWorkspace = 4096 * 1024 * 8;
// PyTorch's CUBLASLT_WORKSPACE_SIZE default: 1024 KiB.
constexpr Bytes kDefaultLtWorkspace = 1024 * 1024;

[[noreturn]] void bad_shape(const std::string& message) { throw InvalidArgumentError("gemm: " + message, "ERR_CCA_GEMM_SHAPE"); }

std::uint64_t element_bytes(BlasType t) { return t == BlasType::kF32 ? 4 : 2; }

void check_dimension(const char* name, std::int64_t v, std::int64_t min) {
  if (v < min || v > kIntMax) {
    bad_shape(std::string(name) + " is " + std::to_string(v) + "; it must be from " + std::to_string(min) + " to " +
              std::to_string(kIntMax) + " (cuBLAS takes 32-bit dimensions)");
  }
}

// Elements one operand spans: a rows x cols matrix with leading dimension ld, `batch` of them
// `stride` apart. The leading dimension must hold a column (ld >= rows).
std::uint64_t span(const char* operand, const char* ld_name, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   std::int64_t stride, std::int64_t batch, const char* stride_name, bool row_major) {
  const std::int64_t least = rows > 1 ? rows : 1;
  if (ld < least) {
    // A row-major caller's row is cuBLAS's column.
    bad_shape(std::string(ld_name) + " is " + std::to_string(ld) + " but " + operand + "'s stored " +
              (row_major ? "rows hold " : "columns hold ") + std::to_string(rows) + " elements; give " + ld_name +
              " >= " + std::to_string(least));
  }
  if (stride < 0) bad_shape(std::string(stride_name) + " is negative");
  if (rows == 0 || cols == 0) return 0;
  // At most 2^31 * 2^31 * 2 + 2^63: computed in unsigned 128-bit to stay exact.
  const unsigned __int128 one = static_cast<unsigned __int128>(ld) * static_cast<unsigned __int128>(cols - 1) +
                                static_cast<unsigned __int128>(rows);
  const unsigned __int128 all = static_cast<unsigned __int128>(stride) * static_cast<unsigned __int128>(batch - 1) + one;
  if (all > (static_cast<unsigned __int128>(1) << 60)) bad_shape(std::string(operand) + " spans more memory than any device has");
  return static_cast<std::uint64_t>(all);
}

}  // namespace

GemmExtents check_gemm_shape(const GemmCall& c, bool row_major) {
  // cuBLAS's A is a row-major caller's B, its m the caller's n.
  const char* A = row_major ? "B" : "A";
  const char* B = row_major ? "A" : "B";
  const char* lda = row_major ? "ldb" : "lda";
  const char* ldb = row_major ? "lda" : "ldb";
  const char* stride_a = row_major ? "strideB" : "strideA";
  const char* stride_b = row_major ? "strideA" : "strideB";
  check_dimension(row_major ? "n" : "m", c.m, 0);
  check_dimension(row_major ? "m" : "n", c.n, 0);
  check_dimension("k", c.k, 0);
  check_dimension("batch", c.batch, 1);
  check_dimension(lda, c.lda, 1);
  check_dimension(ldb, c.ldb, 1);
  check_dimension("ldc", c.ldc, 1);
  if (c.compute == BlasCompute::kF16 && c.type != BlasType::kF16) {
    bad_shape("compute 'f16' sums in half precision and takes f16 operands only; use compute 'f32' for this dtype");
  }
  if (c.compute == BlasCompute::kF32FastTf32 && c.type != BlasType::kF32) {
    bad_shape("compute 'tf32' rounds f32 operands to TF32; for f16 and bf16 operands use compute 'f32'");
  }
  const std::uint64_t e = element_bytes(c.type);
  GemmExtents out;
  // op(A) is m x k: stored m x k, or k x m when transposed; op(B) likewise k x n.
  out.a = e * span(A, lda, c.trans_a ? c.k : c.m, c.trans_a ? c.m : c.k, c.lda, c.stride_a, c.batch, stride_a, row_major);
  out.b = e * span(B, ldb, c.trans_b ? c.n : c.k, c.trans_b ? c.k : c.n, c.ldb, c.stride_b, c.batch, stride_b, row_major);
  out.c = e * span("C", "ldc", c.m, c.n, c.ldc, c.stride_c, c.batch, "strideC", row_major);
  // Two matrices of a batch writing the same elements would race.
  if (c.batch > 1 && c.m > 0 && c.n > 0 && c.stride_c < c.ldc * (c.n - 1) + c.m) {
    bad_shape("strideC is " + std::to_string(c.stride_c) + ", so the batch's outputs overlap; give strideC >= " +
              std::to_string(c.ldc * (c.n - 1) + c.m) + (row_major ? " (ldc * (m - 1) + n)" : " (ldc * (n - 1) + m)"));
  }
  return out;
}

Bytes parse_workspace_config(const char* text, Bytes fallback) {
  if (text == nullptr || *text == 0) return fallback;
  // ":SIZE:COUNT" pairs, SIZE in KiB; anything else: the default, as PyTorch falls back.
  std::vector<unsigned long long> numbers;
  const char* p = text;
  while (*p != 0) {
    if (*p != ':') return fallback;
    ++p;
    char* end = nullptr;
    if (*p < '0' || *p > '9') return fallback;
    const unsigned long long v = std::strtoull(p, &end, 10);
    if (end == p || v > (1ull << 40)) return fallback;
    numbers.push_back(v);
    p = end;
  }
  if (numbers.empty() || numbers.size() % 2 != 0) return fallback;
  Bytes total = 0;
  for (std::size_t i = 0; i < numbers.size(); i += 2) total += static_cast<Bytes>(numbers[i] * 1024 * numbers[i + 1]);
  return total;
}

DeviceBlas::DeviceBlas(Device& device, BlasEngine* blas, DeviceCachingAllocator& allocator)
    : device_(device), blas_(blas), allocator_(allocator) {
  const Bytes fallback = device.compute_capability().first >= 9 ? kHopperWorkspace : kDefaultWorkspace;
  workspace_bytes_ = parse_workspace_config(std::getenv("CUBLAS_WORKSPACE_CONFIG"), fallback);
  lt_workspace_bytes_ = kDefaultLtWorkspace;
  if (const char* kib = std::getenv("CUBLASLT_WORKSPACE_SIZE"); kib != nullptr && *kib >= '0' && *kib <= '9') {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(kib, &end, 10);
    if (*end == 0 && v < (1ull << 40)) lt_workspace_bytes_ = static_cast<Bytes>(v * 1024);
  }
}

DeviceBlas::~DeviceBlas() {
  for (auto& [key, w] : workspaces_) {
    try {
      allocator_.free(w.ptr);
    } catch (...) {  // the allocator is torn down after: its memory goes back then
    }
  }
}

BlasEngine& DeviceBlas::engine(const char* what) const {
  if (blas_ == nullptr) {
    throw DeviceError(std::string(what) + ": device " + std::to_string(device_.index()) + " is " +
                          (device_.is_simulated() ? "simulated, and the simulator multiplies no matrices"
                                                  : "on a backend without BLAS") +
                          "; use the cuda backend on a machine with a GPU (CCA_DEVICE=cuda; cuda.runtimeInfo() says "
                          "why it is not in use)",
                      "ERR_CCA_BLAS_UNSUPPORTED");
  }
  const BlasInfo info = blas_info();
  if (!info.available) throw DeviceError(std::string(what) + ": " + info.reason, "ERR_CCA_BLAS_UNAVAILABLE");
  return *blas_;
}

DevicePtr DeviceBlas::workspace_for(StreamId stream, bool lt, const CallContext& ctx) {
  const Bytes bytes = lt ? lt_workspace_bytes_ : workspace_bytes_;
  if (bytes == 0) return 0;
  Device::CaptureInfo capture;
  const bool captured = device_.stream_capture_info(stream, &capture) == Status::kOk && capture.active;
  const Key key{std::this_thread::get_id(), stream, lt};
  auto it = workspaces_.find(key);
  if (it == workspaces_.end()) {
    // On a captured stream the allocator routes this to the capture's pool.
    const DevicePtr ptr = allocator_.malloc(bytes, stream, 0, ctx);
    it = workspaces_.emplace(key, Workspace{ptr, false}).first;
  }
  it->second.captured |= captured;
  return it->second.ptr;
}

void DeviceBlas::gemm(const GemmRequest& r) {
  BlasEngine& blas = engine("gemm");
  const GemmExtents x = check_gemm_shape(r.shape, r.row_major);
  GemmCall call = r.shape;
  const bool lt = r.bias_base != 0 || call.epilogue != BlasEpilogue::kNone;
  if (lt && !blas_info().lt_available) throw DeviceError("gemm: a bias or an epilogue needs cuBLASLt: " + blas_info().lt_reason, "ERR_CCA_BLAS_UNAVAILABLE");
  // The bias: one element of C's type per row of C as cuBLAS stores it (a row-major caller's
  // output column).
  const std::uint64_t bias_bytes = r.bias_base == 0 || call.m == 0 ? 0 : static_cast<std::uint64_t>(call.m) * (call.type == BlasType::kF32 ? 4 : 2);
  const std::pair<const char*, std::pair<std::uint64_t, std::uint64_t>> spans[4] = {
      {r.row_major ? "B" : "A", {x.a, r.a_limit}}, {r.row_major ? "A" : "B", {x.b, r.b_limit}}, {"C", {x.c, r.c_limit}},
      {"bias", {bias_bytes, r.bias_limit}}};
  for (const auto& [name, s] : spans) {
    if (s.first > s.second) {
      throw InvalidArgumentError(std::string("gemm: ") + name + " spans " + std::to_string(s.first) + " bytes but its buffer " +
                                     "or view holds " + std::to_string(s.second) +
                                     "; give a larger one, or smaller dimensions, leading dimensions or strides",
                                 "ERR_CCA_OUT_OF_BOUNDS");
    }
  }
  call.a = r.a_base + r.a_offset;
  call.b = r.b_base + r.b_offset;
  call.c = r.c_base + r.c_offset;
  call.bias = r.bias_base == 0 ? 0 : r.bias_base + r.bias_offset;
  std::lock_guard<std::mutex> lock(mu_);
  BufferUse uses[5] = {{r.a_base, r.a_offset, x.a}, {r.b_base, r.b_offset, x.b}, {r.c_base, r.c_offset, x.c}};
  std::size_t count = 3;
  if (r.bias_base != 0) uses[count++] = {r.bias_base, r.bias_offset, bias_bytes};
  const bool nothing = call.m == 0 || call.n == 0;
  const Bytes ws_bytes = lt ? lt_workspace_bytes_ : workspace_bytes_;
  // A call that would make this stream's workspace (or computes nothing) has its operands
  // checked first, so a refused one leaves no workspace behind.
  if (nothing || (ws_bytes != 0 && workspaces_.count(Key{std::this_thread::get_id(), r.stream, lt}) == 0)) {
    DeviceWork(allocator_).enqueue_on_buffers(r.stream, uses, count, false, "gemm", [](void*) { return Status::kOk; }, nullptr);
    if (nothing) return;
  }
  const DevicePtr ws = workspace_for(r.stream, lt, lt ? r.lt_workspace_ctx : r.workspace_ctx);
  struct Work {
    BlasEngine* blas;
    const GemmCall* call;
    StreamId stream;
    DevicePtr ws;
    Bytes ws_bytes;
  } work{&blas, &call, r.stream, ws, ws == 0 ? 0 : ws_bytes};
  if (ws != 0) uses[count++] = {ws, 0, work.ws_bytes};
  DeviceWork(allocator_).enqueue_on_buffers(r.stream, uses, count, r.record, "gemm", [](void* data) {
    Work& w = *static_cast<Work*>(data);
    const Status s = w.blas->gemm(*w.call, w.stream, w.ws, w.ws_bytes);
    if (s == Status::kInvalidValue || s == Status::kUnsupported) {
      throw InvalidArgumentError("gemm: cuBLAS refused the call: " + w.blas->reason(), "ERR_CCA_BLAS_REFUSED");
    }
    return s;
  }, &work);
}

std::size_t DeviceBlas::clear_workspaces() {
  std::lock_guard<std::mutex> lock(mu_);
  GraphCaptures(allocator_).refuse_if_capturing("clearing cuBLAS workspaces");
  std::size_t kept = 0;
  for (auto it = workspaces_.begin(); it != workspaces_.end();) {
    if (it->second.captured) {
      ++kept;
      ++it;
      continue;
    }
    allocator_.free(it->second.ptr);
    it = workspaces_.erase(it);
  }
  return kept;
}

std::size_t DeviceBlas::workspace_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workspaces_.size();
}

}  // namespace cca
