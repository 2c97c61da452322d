// A fake cuBLAS for the GEMM path's tests (CCA_CUBLAS_PATH): GEMMs computed on the CPU over
// the fake driver's memory (device addresses are host addresses there), queued on the fake
// driver's stream with cuLaunchHostFunc so they run in stream order (and go into a capture
// like any work). It checks its arguments as cuBLAS documents, honours transposes, leading
// dimensions, strided batches and the three types, and counts the handle calls a test asks
// about (fake_cublas_counts).
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#define FAKE extern "C" __attribute__((visibility("default")))

extern "C" int cuLaunchHostFunc(void* stream, void (*fn)(void*), void* data);  // the fake driver's

namespace {

constexpr int kSuccess = 0, kNotInitialized = 1, kInvalidValue = 7, kExecutionFailed = 13;
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;
constexpr int kCompute16F = 64, kCompute32F = 68, kCompute32FFastTf32 = 77;

struct Handle {
  void* stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  bool workspace_set = false;  // since the last set-stream (which resets it, as cuBLAS does)
  int math = 0;
};

std::atomic<long long> g_creates{0}, g_set_streams{0}, g_set_workspaces{0}, g_gemms{0}, g_gemms_without_workspace{0};
std::atomic<long long> g_last_workspace{0}, g_last_workspace_bytes{0};

float from_half(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(x >> 16);
}

float load(const void* base, std::int64_t i, int type) {
  if (type == kR32F) return static_cast<const float*>(base)[i];
  const std::uint16_t v = static_cast<const std::uint16_t*>(base)[i];
  return type == kR16F ? from_half(v) : from_bf16(v);
}

void store(void* base, std::int64_t i, int type, float v) {
  if (type == kR32F) static_cast<float*>(base)[i] = v;
  else static_cast<std::uint16_t*>(base)[i] = type == kR16F ? to_half(v) : to_bf16(v);
}

struct Job {
  bool ta, tb;
  int m, n, k, type, lda, ldb, ldc, batch;
  long long sa, sb, sc;
  float alpha, beta;
  const void* a;
  const void* b;
  void* c;
};

void run(void* data) {
  const Job* j = static_cast<const Job*>(data);
  const std::size_t e = j->type == kR32F ? 4 : 2;
  for (int p = 0; p < j->batch; ++p) {
    const char* a = static_cast<const char*>(j->a) + static_cast<std::size_t>(p) * j->sa * e;
    const char* b = static_cast<const char*>(j->b) + static_cast<std::size_t>(p) * j->sb * e;
    char* c = static_cast<char*>(j->c) + static_cast<std::size_t>(p) * j->sc * e;
    for (int col = 0; col < j->n; ++col) {
      for (int row = 0; row < j->m; ++row) {
        double sum = 0;
        for (int t = 0; t < j->k; ++t) {
          const std::int64_t ai = j->ta ? t + static_cast<std::int64_t>(row) * j->lda : row + static_cast<std::int64_t>(t) * j->lda;
          const std::int64_t bi = j->tb ? col + static_cast<std::int64_t>(t) * j->ldb : t + static_cast<std::int64_t>(col) * j->ldb;
          sum += static_cast<double>(load(a, ai, j->type)) * static_cast<double>(load(b, bi, j->type));
        }
        const std::int64_t ci = row + static_cast<std::int64_t>(col) * j->ldc;
        // beta == 0: C is not read (it may hold NaN), as cuBLAS documents.
        const double old = j->beta == 0.0f ? 0.0 : static_cast<double>(load(c, ci, j->type));
        store(c, ci, j->type, static_cast<float>(j->alpha * sum + j->beta * old));
      }
    }
  }
  // The job is kept: a captured GEMM runs again on every replay of its graph.
}

}  // namespace

FAKE int cublasCreate_v2(void** handle) {
  if (handle == nullptr) return kInvalidValue;
  *handle = new Handle();
  ++g_creates;
  return kSuccess;
}

FAKE int cublasDestroy_v2(void* handle) {
  delete static_cast<Handle*>(handle);
  return kSuccess;
}

FAKE int cublasSetStream_v2(void* handle, void* stream) {
  if (handle == nullptr) return kNotInitialized;
  auto* h = static_cast<Handle*>(handle);
  h->stream = stream;
  h->workspace = nullptr;  // setting the stream resets the workspace to the library's own
  h->workspace_bytes = 0;
  h->workspace_set = false;
  ++g_set_streams;
  return kSuccess;
}

FAKE int cublasSetWorkspace_v2(void* handle, void* workspace, std::size_t bytes) {
  if (handle == nullptr) return kNotInitialized;
  // cuBLAS wants the workspace 256-byte aligned.
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return kInvalidValue;
  auto* h = static_cast<Handle*>(handle);
  h->workspace = workspace;
  h->workspace_bytes = bytes;
  h->workspace_set = true;
  ++g_set_workspaces;
  return kSuccess;
}

FAKE int cublasSetMathMode(void* handle, int mode) {
  if (handle == nullptr) return kNotInitialized;
  static_cast<Handle*>(handle)->math = mode;
  return kSuccess;
}

FAKE int cublasGetProperty(int type, int* value) {
  const int parts[3] = {13, 0, 2};
  if (type < 0 || type > 2 || value == nullptr) return kInvalidValue;
  *value = parts[type];
  return kSuccess;
}

FAKE const char* cublasGetStatusString(int status) {
  switch (status) {
    case kSuccess: return "the operation completed successfully";
    case kNotInitialized: return "the library was not initialized";
    case kInvalidValue: return "an invalid numeric value was used as an argument";
    default: return "the GPU program failed to execute";
  }
}

FAKE int cublasGemmStridedBatchedEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                                    int atype, int lda, long long sa, const void* b, int btype, int ldb, long long sb,
                                    const void* beta, void* c, int ctype, int ldc, long long sc, int batch, int compute,
                                    int /*algo*/) {
  if (handle == nullptr) return kNotInitialized;
  auto* h = static_cast<Handle*>(handle);
  const bool trans_a = ta == 1, trans_b = tb == 1;
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 || batch < 0) return kInvalidValue;
  if (atype != btype || atype != ctype || (atype != kR32F && atype != kR16F && atype != kR16BF)) return kInvalidValue;
  if (compute != kCompute32F && compute != kCompute32FFastTf32 && compute != kCompute16F) return kInvalidValue;
  if (compute == kCompute16F && atype != kR16F) return kInvalidValue;
  const int rows_a = trans_a ? k : m, rows_b = trans_b ? n : k;
  if (lda < (rows_a > 1 ? rows_a : 1) || ldb < (rows_b > 1 ? rows_b : 1) || ldc < (m > 1 ? m : 1)) return kInvalidValue;
  ++g_gemms;
  if (!h->workspace_set) ++g_gemms_without_workspace;
  g_last_workspace = static_cast<long long>(reinterpret_cast<std::uintptr_t>(h->workspace));
  g_last_workspace_bytes = static_cast<long long>(h->workspace_bytes);
  if (m == 0 || n == 0 || batch == 0) return kSuccess;
  auto* job = new Job{trans_a, trans_b, m, n, k, atype, lda, ldb, ldc, batch, sa, sb, sc,
                      compute == kCompute16F ? from_half(*static_cast<const std::uint16_t*>(alpha)) : *static_cast<const float*>(alpha),
                      compute == kCompute16F ? from_half(*static_cast<const std::uint16_t*>(beta)) : *static_cast<const float*>(beta),
                      a, b, c};
  if (cuLaunchHostFunc(h->stream, &run, job) != 0) return kExecutionFailed;
  return kSuccess;
}

// creates, set-streams, set-workspaces, GEMMs, GEMMs with no workspace of ours set, the last
// GEMM's workspace address and bytes.
FAKE void fake_cublas_counts(long long* out) {
  out[0] = g_creates;
  out[1] = g_set_streams;
  out[2] = g_set_workspaces;
  out[3] = g_gemms;
  out[4] = g_gemms_without_workspace;
  out[5] = g_last_workspace;
  out[6] = g_last_workspace_bytes;
}
