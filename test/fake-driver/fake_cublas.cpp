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

#include "../../native/common/half.h"

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
std::atomic<long long> g_lt_matmuls{0}, g_lt_last_workspace{0}, g_lt_last_workspace_bytes{0};

float from_half(std::uint16_t h) { return cca::half_to_float(h); }
std::uint16_t to_half(float f) { return cca::float_to_half(f); }

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
  const void* bias = nullptr;  // cuBLASLt's: one element per row of C
  int activation = 0;          // 0 none, 1 relu, 2 gelu (tanh approximation, as cuBLASLt's)
};

float activate(float v, int activation) {
  if (activation == 1) return v < 0 ? 0 : v;
  if (activation == 2) return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  return v;
}

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
        double v = j->alpha * sum + j->beta * old;
        if (j->bias != nullptr) v += static_cast<double>(load(j->bias, row, j->type));
        store(c, ci, j->type, activate(static_cast<float>(v), j->activation));
      }
    }
  }
  // The job is kept (in `jobs`): a captured GEMM runs again on every replay of its graph.
}

// Every job queued, kept for the process's life (a test library's few kilobytes).
std::mutex& jobs_mu = *new std::mutex;
std::vector<Job*>& jobs = *new std::vector<Job*>;

Job* keep(Job* job) {
  std::lock_guard<std::mutex> lock(jobs_mu);
  jobs.push_back(job);
  return job;
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
  auto* job = keep(new Job{trans_a, trans_b, m, n, k, atype, lda, ldb, ldc, batch, sa, sb, sc,
                      compute == kCompute16F ? from_half(*static_cast<const std::uint16_t*>(alpha)) : *static_cast<const float*>(alpha),
                      compute == kCompute16F ? from_half(*static_cast<const std::uint16_t*>(beta)) : *static_cast<const float*>(beta),
                      a, b, c});
  if (cuLaunchHostFunc(h->stream, &run, job) != 0) return kExecutionFailed;
  return kSuccess;
}

// cuBLASLt: descriptors as plain structs, a heuristic that offers one algorithm (needing no
// workspace), and the matmul queued as the GEMM above is.
namespace {

struct LtDesc {
  int compute, scale;
  int ta = 0, tb = 0;
  unsigned epilogue = 1;
  const void* bias = nullptr;
};
struct LtLayout {
  int type;
  unsigned long long rows, cols;
  long long ld;
  int batch = 1;
  long long stride = 0;
};
struct LtPref {
  unsigned long long max_workspace = 0;
};
struct LtHeuristic {
  unsigned long long algo[8];
  std::size_t workspace_size;
  int state;
  float waves;
  int reserved[4];
};

template <class T>
int set_from(T& field, const void* buf, std::size_t bytes) {
  if (buf == nullptr || bytes != sizeof(T)) return kInvalidValue;
  std::memcpy(&field, buf, sizeof(T));
  return kSuccess;
}

}  // namespace

FAKE int cublasLtCreate(void** handle) {
  if (handle == nullptr) return kInvalidValue;
  *handle = new int(0);
  return kSuccess;
}
FAKE int cublasLtDestroy(void* handle) {
  delete static_cast<int*>(handle);
  return kSuccess;
}
FAKE int cublasLtMatmulDescCreate(void** desc, int compute, int scale) {
  *desc = new LtDesc{compute, scale};
  return kSuccess;
}
FAKE int cublasLtMatmulDescDestroy(void* desc) {
  delete static_cast<LtDesc*>(desc);
  return kSuccess;
}
FAKE int cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, std::size_t bytes) {
  auto* d = static_cast<LtDesc*>(desc);
  switch (attr) {
    case 3: return set_from(d->ta, buf, bytes);
    case 4: return set_from(d->tb, buf, bytes);
    case 7: return set_from(d->epilogue, buf, bytes);
    case 8: return set_from(d->bias, buf, bytes);
    default: return kInvalidValue;
  }
}
FAKE int cublasLtMatrixLayoutCreate(void** layout, int type, unsigned long long rows, unsigned long long cols, long long ld) {
  if (ld < static_cast<long long>(rows > 1 ? rows : 1)) return kInvalidValue;
  *layout = new LtLayout{type, rows, cols, ld};
  return kSuccess;
}
FAKE int cublasLtMatrixLayoutDestroy(void* layout) {
  delete static_cast<LtLayout*>(layout);
  return kSuccess;
}
FAKE int cublasLtMatrixLayoutSetAttribute(void* layout, int attr, const void* buf, std::size_t bytes) {
  auto* l = static_cast<LtLayout*>(layout);
  if (attr == 5) return set_from(l->batch, buf, bytes);
  if (attr == 6) return set_from(l->stride, buf, bytes);
  return kInvalidValue;
}
FAKE int cublasLtMatmulPreferenceCreate(void** pref) {
  *pref = new LtPref();
  return kSuccess;
}
FAKE int cublasLtMatmulPreferenceDestroy(void* pref) {
  delete static_cast<LtPref*>(pref);
  return kSuccess;
}
FAKE int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, std::size_t bytes) {
  if (attr != 1) return kInvalidValue;
  return set_from(static_cast<LtPref*>(pref)->max_workspace, buf, bytes);
}
FAKE int cublasLtMatmulAlgoGetHeuristic(void*, void* desc, void* a, void* b, void* c, void* d, void*, int requested,
                                        LtHeuristic* out, int* count) {
  if (requested <= 0 || desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) return kInvalidValue;
  std::memset(out, 0, sizeof *out);
  *count = 1;
  return kSuccess;
}
FAKE int cublasLtMatmul(void*, void* desc, const void* alpha, const void* a, void* ad, const void* b, void* bd,
                        const void* beta, const void* c, void* cd, void* d, void* dd, const void* algo, void* workspace,
                        std::size_t workspace_bytes, void* stream) {
  auto* md = static_cast<LtDesc*>(desc);
  auto *la = static_cast<LtLayout*>(ad), *lb = static_cast<LtLayout*>(bd), *lc = static_cast<LtLayout*>(cd),
       *ld = static_cast<LtLayout*>(dd);
  if (algo == nullptr || c != d || lc != ld) return kInvalidValue;  // the tests' calls are in place
  const bool ta = md->ta == 1, tb = md->tb == 1;
  const int m = static_cast<int>(lc->rows), n = static_cast<int>(lc->cols);
  const int k = static_cast<int>(ta ? la->rows : la->cols);
  if ((ta ? la->cols : la->rows) != lc->rows || (tb ? lb->rows : lb->cols) != lc->cols ||
      static_cast<int>(tb ? lb->cols : lb->rows) != k || la->type != lc->type || lb->type != lc->type) {
    return kInvalidValue;
  }
  const unsigned e = md->epilogue;
  if ((e & 4) != 0 && md->bias == nullptr) return kInvalidValue;
  ++g_lt_matmuls;
  g_lt_last_workspace = static_cast<long long>(reinterpret_cast<std::uintptr_t>(workspace));
  g_lt_last_workspace_bytes = static_cast<long long>(workspace_bytes);
  const bool half = md->compute == kCompute16F;
  auto* job = keep(new Job{ta, tb, m, n, k, lc->type, static_cast<int>(la->ld), static_cast<int>(lb->ld), static_cast<int>(lc->ld),
                      lc->batch, la->stride, lb->stride, lc->stride,
                      half ? from_half(*static_cast<const std::uint16_t*>(alpha)) : *static_cast<const float*>(alpha),
                      half ? from_half(*static_cast<const std::uint16_t*>(beta)) : *static_cast<const float*>(beta),
                      a, b, d, (e & 4) != 0 ? md->bias : nullptr, (e & 2) != 0 ? 1 : (e & 32) != 0 ? 2 : 0});
  if (m == 0 || n == 0) return kSuccess;
  if (cuLaunchHostFunc(stream, &run, job) != 0) return kExecutionFailed;
  return kSuccess;
}

// creates, set-streams, set-workspaces, GEMMs, GEMMs with no workspace of ours set, the last
// GEMM's workspace address and bytes; cuBLASLt matmuls, the last one's workspace and bytes.
FAKE void fake_cublas_counts(long long* out) {
  out[7] = g_lt_matmuls;
  out[8] = g_lt_last_workspace;
  out[9] = g_lt_last_workspace_bytes;
  out[0] = g_creates;
  out[1] = g_set_streams;
  out[2] = g_set_workspaces;
  out[3] = g_gemms;
  out[4] = g_gemms_without_workspace;
  out[5] = g_last_workspace;
  out[6] = g_last_workspace_bytes;
}
