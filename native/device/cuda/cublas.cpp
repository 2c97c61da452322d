// cuBLAS behind the BLAS contract (../blas.h), opened with dlopen as the driver and NVRTC
// are, so nothing links against the toolkit and a machine without it gets a reason. The
// entry points and enum values are declared here from cuBLAS's documented C ABI (the same in
// 12 and 13). As PyTorch does (aten/src/ATen/cuda/CublasHandlePool.cpp), each call sets the
// stream and then the workspace on the thread's handle: cublasSetStream resets the
// workspace, and without one of ours cuBLAS would allocate its own outside the allocator.
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cuda_device.h"
#include "../../common/half.h"

namespace cca {

namespace {

using cublasStatus = int;
using cublasHandle = struct cublasContext*;
constexpr cublasStatus kCublasSuccess = 0;
constexpr int kOpN = 0, kOpT = 1;                                 // cublasOperation_t
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;                  // cudaDataType
constexpr int kCompute16F = 64, kCompute32F = 68, kCompute32FFastTf32 = 77;  // cublasComputeType_t
constexpr int kDefaultMath = 0, kTf32TensorOpMath = 3;            // cublasMath_t
constexpr int kGemmDefault = -1;                                  // cublasGemmAlgo_t
constexpr int kMajorVersion = 0, kMinorVersion = 1, kPatchLevel = 2;  // libraryPropertyType

struct CublasApi {
  cublasStatus (*cublasCreate_v2)(cublasHandle*);
  cublasStatus (*cublasDestroy_v2)(cublasHandle);
  cublasStatus (*cublasSetStream_v2)(cublasHandle, void*);
  cublasStatus (*cublasSetWorkspace_v2)(cublasHandle, void*, std::size_t);
  cublasStatus (*cublasSetMathMode)(cublasHandle, int);
  cublasStatus (*cublasGetProperty)(int, int*);
  const char* (*cublasGetStatusString)(cublasStatus);
  cublasStatus (*cublasGemmStridedBatchedEx)(cublasHandle, int, int, int, int, int, const void*, const void*, int, int,
                                             long long, const void*, int, int, long long, const void*, void*, int, int,
                                             long long, int, int, int);
};

// cuBLASLt: descriptors for the operation and each matrix, a heuristic's algorithm, one call.
using LtHandle = struct cublasLtContext*;
using LtDesc = struct cublasLtMatmulDescOpaque*;
using LtLayout = struct cublasLtMatrixLayoutOpaque*;
using LtPreference = struct cublasLtMatmulPreferenceOpaque*;
struct LtAlgo {
  std::uint64_t data[8];
};
struct LtHeuristic {
  LtAlgo algo;
  std::size_t workspace_size;
  cublasStatus state;
  float waves;
  int reserved[4];
};
constexpr int kLtDescTransA = 3, kLtDescTransB = 4, kLtDescEpilogue = 7, kLtDescBiasPointer = 8;
constexpr int kLtLayoutBatchCount = 5, kLtLayoutBatchStride = 6;
constexpr int kLtPrefMaxWorkspace = 1;
constexpr std::uint32_t kLtEpilogueDefault = 1, kLtEpilogueRelu = 2, kLtEpilogueBias = 4, kLtEpilogueGelu = 32;

struct LtApi {
  cublasStatus (*cublasLtCreate)(LtHandle*);
  cublasStatus (*cublasLtDestroy)(LtHandle);
  cublasStatus (*cublasLtMatmulDescCreate)(LtDesc*, int, int);
  cublasStatus (*cublasLtMatmulDescDestroy)(LtDesc);
  cublasStatus (*cublasLtMatmulDescSetAttribute)(LtDesc, int, const void*, std::size_t);
  cublasStatus (*cublasLtMatrixLayoutCreate)(LtLayout*, int, std::uint64_t, std::uint64_t, std::int64_t);
  cublasStatus (*cublasLtMatrixLayoutDestroy)(LtLayout);
  cublasStatus (*cublasLtMatrixLayoutSetAttribute)(LtLayout, int, const void*, std::size_t);
  cublasStatus (*cublasLtMatmulPreferenceCreate)(LtPreference*);
  cublasStatus (*cublasLtMatmulPreferenceDestroy)(LtPreference);
  cublasStatus (*cublasLtMatmulPreferenceSetAttribute)(LtPreference, int, const void*, std::size_t);
  cublasStatus (*cublasLtMatmulAlgoGetHeuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout, LtPreference, int,
                                                 LtHeuristic*, int*);
  cublasStatus (*cublasLtMatmul)(LtHandle, LtDesc, const void*, const void*, LtLayout, const void*, LtLayout, const void*,
                                 const void*, LtLayout, void*, LtLayout, const LtAlgo*, void*, std::size_t, void*);
};

struct Library {
  BlasInfo info;
  CublasApi api{};
  LtApi lt{};
};

// Where to look for `base` ("libcublas" or "libcublasLt"), `named` by its variable first.
std::vector<std::string> candidates(const char* variable, const std::string& base) {
  if (const char* p = std::getenv(variable); p != nullptr && *p != 0) return {p};  // named: nothing else
  std::vector<std::string> out = {base + ".so.13", base + ".so.12"};
  std::vector<std::string> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != 0) roots.push_back(std::string(home) + "/lib64");
  roots.push_back("/usr/local/cuda/lib64");
  // pip's wheels: nvidia-cublas for CUDA 13 keeps it in nvidia/cu13/lib, for CUDA 12 in nvidia/cublas/lib.
  std::vector<std::string> sites;
  if (const char* s = std::getenv("CCA_PYTHON_SITE_PACKAGES"); s != nullptr && *s != 0) sites.push_back(s);
  for (const char* py : {"3.13", "3.12", "3.11", "3.10"}) sites.push_back(std::string("/usr/local/lib/python") + py + "/dist-packages");
  sites.push_back("/usr/lib/python3/dist-packages");
  for (const std::string& s : sites) {
    roots.push_back(s + "/nvidia/cu13/lib");
    roots.push_back(s + "/nvidia/cublas/lib");
  }
  for (const std::string& r : roots) {
    for (const char* v : {"13", "12"}) out.push_back(r + "/" + base + ".so." + v);
  }
  return out;
}

// The first of `candidates` that opens; `tried` says why each before it did not.
void* open_first(const std::vector<std::string>& candidates, std::string* path, std::string* tried) {
  for (const std::string& c : candidates) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *path = c;
      return h;
    }
    // A missing file is the common case: said once, at the end; other failures in full.
    const char* why = dlerror();
    const bool missing = why == nullptr || std::strstr(why, "No such file") != nullptr;
    *tried += (tried->empty() ? "" : ", ") + (missing ? c : c + " (" + why + ")");
  }
  return nullptr;
}

// Resolves each named entry point into its slot; the names missing, comma-separated.
struct Resolver {
  void* handle;
  std::string missing;
  template <class Slot>
  void operator()(Slot& slot, const char* name) {
    void* sym = dlsym(handle, name);
    slot = reinterpret_cast<Slot>(sym);
    if (sym == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  }
};

// cuBLASLt, beside the cuBLAS found when no variable names it.
void open_lt(Library& l) {
  std::vector<std::string> where = candidates("CCA_CUBLASLT_PATH", "libcublasLt");
  const char* named = std::getenv("CCA_CUBLASLT_PATH");
  if ((named == nullptr || *named == 0) && !l.info.path.empty()) {
    const std::size_t slash = l.info.path.rfind('/');
    if (slash != std::string::npos) {
      const std::string dir = l.info.path.substr(0, slash + 1);
      where.insert(where.begin(), {dir + "libcublasLt.so.13", dir + "libcublasLt.so.12"});
    }
  }
  std::string tried;
  void* h = open_first(where, &l.info.lt_path, &tried);
  if (h == nullptr) {
    l.info.lt_reason = "cuBLASLt not found: tried " + tried + " (no such file where not said otherwise). Install the "
                       "CUDA toolkit's cuBLAS (it ships cuBLASLt) and set CCA_CUBLASLT_PATH";
    return;
  }
  Resolver r{h, {}};
  r(l.lt.cublasLtCreate, "cublasLtCreate");
  r(l.lt.cublasLtDestroy, "cublasLtDestroy");
  r(l.lt.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
  r(l.lt.cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
  r(l.lt.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  r(l.lt.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  r(l.lt.cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  r(l.lt.cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  r(l.lt.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  r(l.lt.cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  r(l.lt.cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  r(l.lt.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  r(l.lt.cublasLtMatmul, "cublasLtMatmul");
  if (!r.missing.empty()) {
    l.info.lt_reason = "the cuBLASLt at " + l.info.lt_path + " lacks " + r.missing;
    return;
  }
  l.info.lt_available = true;
}

const Library& library() {
  static const Library* lib = [] {
    auto* l = new Library();  // never closed, like the driver
    std::string tried;
    void* h = open_first(candidates("CCA_CUBLAS_PATH", "libcublas"), &l->info.path, &tried);
    if (h == nullptr) {
      l->info.reason = "cuBLAS not found: tried " + tried + " (no such file where not said otherwise). Install the CUDA "
                       "toolkit's cuBLAS (or pip's nvidia-cublas) and set CCA_CUBLAS_PATH";
      l->info.lt_reason = "cuBLASLt is looked for beside cuBLAS, which was not found";
      return l;
    }
    Resolver r{h, {}};
    r(l->api.cublasCreate_v2, "cublasCreate_v2");
    r(l->api.cublasDestroy_v2, "cublasDestroy_v2");
    r(l->api.cublasSetStream_v2, "cublasSetStream_v2");
    r(l->api.cublasSetWorkspace_v2, "cublasSetWorkspace_v2");
    r(l->api.cublasSetMathMode, "cublasSetMathMode");
    r(l->api.cublasGetProperty, "cublasGetProperty");
    r(l->api.cublasGetStatusString, "cublasGetStatusString");
    r(l->api.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    if (!r.missing.empty()) {
      l->info.reason = "the cuBLAS at " + l->info.path + " lacks " + r.missing + " (cuBLAS 12 or later is needed)";
      return l;
    }
    int major = 0, minor = 0, patch = 0;
    l->api.cublasGetProperty(kMajorVersion, &major);
    l->api.cublasGetProperty(kMinorVersion, &minor);
    l->api.cublasGetProperty(kPatchLevel, &patch);
    l->info.version = major * 10000 + minor * 100 + patch;
    l->info.available = true;
    open_lt(*l);
    return l;
  }();
  return *lib;
}

int data_type(BlasType t) {
  switch (t) {
    case BlasType::kF32: return kR32F;
    case BlasType::kF16: return kR16F;
    case BlasType::kBF16: return kR16BF;
  }
  return kR32F;
}

// alpha and beta of an f16 computation.
std::uint16_t to_half(double value) { return float_to_half(static_cast<float>(value)); }

thread_local std::string t_reason;

class CublasEngine final : public BlasEngine {
 public:
  explicit CublasEngine(CudaDevice& device) : device_(device) {}
  ~CublasEngine() override {
    if (handles_.empty() && lt_handles_.empty()) return;
    device_.in_context([](void* data) {
      auto& self = *static_cast<CublasEngine*>(data);
      const Library& lib = library();
      for (auto& [thread, h] : self.handles_) lib.api.cublasDestroy_v2(h);
      for (auto& [thread, h] : self.lt_handles_) lib.lt.cublasLtDestroy(h);
      return Status::kOk;
    }, this);
  }
  CublasEngine(const CublasEngine&) = delete;
  CublasEngine& operator=(const CublasEngine&) = delete;

  Status gemm(const GemmCall& call, StreamId stream, DevicePtr workspace, Bytes workspace_bytes) override {
    const Library& lib = library();
    if (!lib.info.available || (call.lt() && !lib.info.lt_available)) {
      t_reason = lib.info.available ? lib.info.lt_reason : lib.info.reason;
      return Status::kUnsupported;
    }
    Work w{this, &lib, &call, stream, workspace, workspace_bytes, Status::kOk};
    const Status s = device_.in_context(call.lt() ? &CublasEngine::run_lt : &CublasEngine::run, &w);
    return s != Status::kOk ? s : w.result;
  }

  std::string reason() const override { return t_reason; }

 private:
  struct Work {
    CublasEngine* self;
    const Library* lib;
    const GemmCall* call;
    StreamId stream;
    DevicePtr workspace;
    Bytes workspace_bytes;
    Status result;
  };

  bool fails(const CublasApi& api, cublasStatus s, const char* what) {
    if (s == kCublasSuccess) return false;
    const char* text = api.cublasGetStatusString != nullptr ? api.cublasGetStatusString(s) : nullptr;
    t_reason = std::string(what) + ": " + (text != nullptr ? text : "cuBLAS status " + std::to_string(s));
    return true;
  }

  // The calling thread's handle for this device, made on its first GEMM here and kept by the
  // engine (a thread's id, and so its handle, passes to a later thread once it has ended):
  // destroyed with the engine, inside the device's context, before the device goes.
  cublasHandle handle(const CublasApi& api, Status* status) {
    const std::thread::id self = std::this_thread::get_id();
    {
      std::lock_guard<std::mutex> lock(handles_mu_);
      auto it = handles_.find(self);
      if (it != handles_.end()) return it->second;
    }
    cublasHandle h = nullptr;
    if (fails(api, api.cublasCreate_v2(&h), "cublasCreate")) {
      *status = Status::kError;
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(handles_mu_);
    handles_.emplace(self, h);
    return h;
  }

  static Status run(void* data) {
    Work& w = *static_cast<Work*>(data);
    const CublasApi& api = w.lib->api;
    const GemmCall& c = *w.call;
    CublasEngine& self = *w.self;
    Status status = Status::kOk;
    cublasHandle h = self.handle(api, &status);
    if (h == nullptr) return status;
    if (self.fails(api, api.cublasSetStream_v2(h, reinterpret_cast<void*>(w.stream)), "cublasSetStream")) return Status::kError;
    // After the stream: setting the stream resets the workspace to cuBLAS's own.
    if (self.fails(api, api.cublasSetWorkspace_v2(h, reinterpret_cast<void*>(w.workspace), w.workspace_bytes),
                   "cublasSetWorkspace")) {
      return Status::kError;
    }
    const int math = c.compute == BlasCompute::kF32FastTf32 ? kTf32TensorOpMath : kDefaultMath;
    if (self.fails(api, api.cublasSetMathMode(h, math), "cublasSetMathMode")) return Status::kError;
    const float alpha32 = static_cast<float>(c.alpha), beta32 = static_cast<float>(c.beta);
    const std::uint16_t alpha16 = to_half(c.alpha), beta16 = to_half(c.beta);
    const bool half_scalars = c.compute == BlasCompute::kF16;
    const int compute = c.compute == BlasCompute::kF16 ? kCompute16F
                        : c.compute == BlasCompute::kF32FastTf32 ? kCompute32FFastTf32 : kCompute32F;
    const int type = data_type(c.type);
    const cublasStatus s = api.cublasGemmStridedBatchedEx(
        h, c.trans_a ? kOpT : kOpN, c.trans_b ? kOpT : kOpN, static_cast<int>(c.m), static_cast<int>(c.n),
        static_cast<int>(c.k), half_scalars ? static_cast<const void*>(&alpha16) : &alpha32, reinterpret_cast<const void*>(c.a),
        type, static_cast<int>(c.lda), c.stride_a, reinterpret_cast<const void*>(c.b), type, static_cast<int>(c.ldb),
        c.stride_b, half_scalars ? static_cast<const void*>(&beta16) : &beta32, reinterpret_cast<void*>(c.c), type,
        static_cast<int>(c.ldc), c.stride_c, static_cast<int>(c.batch), compute, kGemmDefault);
    if (self.fails(api, s, "cublasGemmStridedBatchedEx")) return Status::kInvalidValue;
    return Status::kOk;
  }

  // The calling thread's cuBLASLt handle for this device, kept as the cuBLAS ones are.
  LtHandle lt_handle(const Library& lib) {
    const std::thread::id self = std::this_thread::get_id();
    {
      std::lock_guard<std::mutex> lock(handles_mu_);
      auto it = lt_handles_.find(self);
      if (it != lt_handles_.end()) return it->second;
    }
    LtHandle h = nullptr;
    if (fails(lib.api, lib.lt.cublasLtCreate(&h), "cublasLtCreate")) return nullptr;
    std::lock_guard<std::mutex> lock(handles_mu_);
    lt_handles_.emplace(self, h);
    return h;
  }

  // The descriptors of one cuBLASLt call, destroyed when it returns (the call has copied what
  // it needs by then).
  struct LtCall {
    const LtApi& lt;
    LtDesc desc = nullptr;
    LtLayout a = nullptr, b = nullptr, c = nullptr;
    LtPreference pref = nullptr;
    ~LtCall() {
      if (pref != nullptr) lt.cublasLtMatmulPreferenceDestroy(pref);
      for (LtLayout l : {a, b, c}) {
        if (l != nullptr) lt.cublasLtMatrixLayoutDestroy(l);
      }
      if (desc != nullptr) lt.cublasLtMatmulDescDestroy(desc);
    }
  };

  // cuBLASLt's matmul with the epilogue: C = act(alpha op(A) op(B) + beta C + bias), in place.
  static Status run_lt(void* data) {
    Work& w = *static_cast<Work*>(data);
    const Library& lib = *w.lib;
    const LtApi& lt = lib.lt;
    const GemmCall& c = *w.call;
    CublasEngine& self = *w.self;
    LtHandle h = self.lt_handle(lib);
    if (h == nullptr) return Status::kError;
    const bool half_scalars = c.compute == BlasCompute::kF16;
    const int compute = half_scalars ? kCompute16F : c.compute == BlasCompute::kF32FastTf32 ? kCompute32FFastTf32 : kCompute32F;
    const int type = data_type(c.type);
    LtCall call{lt};
    auto failed = [&](cublasStatus s, const char* what) { return self.fails(lib.api, s, what); };
    if (failed(lt.cublasLtMatmulDescCreate(&call.desc, compute, half_scalars ? kR16F : kR32F), "cublasLtMatmulDescCreate")) {
      return Status::kError;
    }
    const std::int32_t ta = c.trans_a ? kOpT : kOpN, tb = c.trans_b ? kOpT : kOpN;
    std::uint32_t epilogue = c.bias != 0 ? kLtEpilogueBias : kLtEpilogueDefault;
    if (c.epilogue == BlasEpilogue::kRelu) epilogue = c.bias != 0 ? (kLtEpilogueRelu | kLtEpilogueBias) : kLtEpilogueRelu;
    if (c.epilogue == BlasEpilogue::kGelu) epilogue = c.bias != 0 ? (kLtEpilogueGelu | kLtEpilogueBias) : kLtEpilogueGelu;
    const void* bias = reinterpret_cast<const void*>(c.bias);
    if (failed(lt.cublasLtMatmulDescSetAttribute(call.desc, kLtDescTransA, &ta, sizeof ta), "set TRANSA") ||
        failed(lt.cublasLtMatmulDescSetAttribute(call.desc, kLtDescTransB, &tb, sizeof tb), "set TRANSB") ||
        failed(lt.cublasLtMatmulDescSetAttribute(call.desc, kLtDescEpilogue, &epilogue, sizeof epilogue), "set EPILOGUE") ||
        (c.bias != 0 && failed(lt.cublasLtMatmulDescSetAttribute(call.desc, kLtDescBiasPointer, &bias, sizeof bias),
                               "set BIAS_POINTER"))) {
      return Status::kInvalidValue;
    }
    // Each matrix as stored: A is m x k (k x m transposed), B k x n (n x k), C m x n.
    const std::int64_t dims[3][3] = {{c.trans_a ? c.k : c.m, c.trans_a ? c.m : c.k, c.lda},
                                     {c.trans_b ? c.n : c.k, c.trans_b ? c.k : c.n, c.ldb},
                                     {c.m, c.n, c.ldc}};
    LtLayout* layouts[3] = {&call.a, &call.b, &call.c};
    const std::int64_t strides[3] = {c.stride_a, c.stride_b, c.stride_c};
    const std::int32_t batch = static_cast<std::int32_t>(c.batch);
    for (int i = 0; i < 3; ++i) {
      if (failed(lt.cublasLtMatrixLayoutCreate(layouts[i], type, static_cast<std::uint64_t>(dims[i][0]),
                                               static_cast<std::uint64_t>(dims[i][1]), dims[i][2]),
                 "cublasLtMatrixLayoutCreate")) {
        return Status::kInvalidValue;
      }
      if (batch > 1 && (failed(lt.cublasLtMatrixLayoutSetAttribute(*layouts[i], kLtLayoutBatchCount, &batch, sizeof batch),
                               "set BATCH_COUNT") ||
                        failed(lt.cublasLtMatrixLayoutSetAttribute(*layouts[i], kLtLayoutBatchStride, &strides[i],
                                                                   sizeof strides[i]),
                               "set STRIDED_BATCH_OFFSET"))) {
        return Status::kInvalidValue;
      }
    }
    const std::uint64_t max_workspace = w.workspace_bytes;
    if (failed(lt.cublasLtMatmulPreferenceCreate(&call.pref), "cublasLtMatmulPreferenceCreate") ||
        failed(lt.cublasLtMatmulPreferenceSetAttribute(call.pref, kLtPrefMaxWorkspace, &max_workspace, sizeof max_workspace),
               "set MAX_WORKSPACE_BYTES")) {
      return Status::kError;
    }
    LtHeuristic found{};
    int count = 0;
    if (failed(lt.cublasLtMatmulAlgoGetHeuristic(h, call.desc, call.a, call.b, call.c, call.c, call.pref, 1, &found, &count),
               "cublasLtMatmulAlgoGetHeuristic")) {
      return Status::kInvalidValue;
    }
    if (count == 0) {
      t_reason = "cublasLtMatmulAlgoGetHeuristic: no algorithm for this shape, dtype and epilogue";
      return Status::kInvalidValue;
    }
    const float alpha32 = static_cast<float>(c.alpha), beta32 = static_cast<float>(c.beta);
    const std::uint16_t alpha16 = to_half(c.alpha), beta16 = to_half(c.beta);
    const void* alpha = half_scalars ? static_cast<const void*>(&alpha16) : &alpha32;
    const void* beta = half_scalars ? static_cast<const void*>(&beta16) : &beta32;
    const cublasStatus s = lt.cublasLtMatmul(h, call.desc, alpha, reinterpret_cast<const void*>(c.a), call.a,
                                             reinterpret_cast<const void*>(c.b), call.b, beta, reinterpret_cast<const void*>(c.c),
                                             call.c, reinterpret_cast<void*>(c.c), call.c, &found.algo,
                                             reinterpret_cast<void*>(w.workspace), w.workspace_bytes,
                                             reinterpret_cast<void*>(w.stream));
    return failed(s, "cublasLtMatmul") ? Status::kInvalidValue : Status::kOk;
  }

  CudaDevice& device_;
  std::mutex handles_mu_;
  std::unordered_map<std::thread::id, cublasHandle> handles_;
  std::unordered_map<std::thread::id, LtHandle> lt_handles_;
};

}  // namespace

BlasInfo blas_info() { return library().info; }

std::unique_ptr<BlasEngine> make_cublas_engine(CudaDevice& device) { return std::make_unique<CublasEngine>(device); }

}  // namespace cca
