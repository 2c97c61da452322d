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
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cuda_device.h"

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
  cublasStatus (*cublasSetStream_v2)(cublasHandle, void*);
  cublasStatus (*cublasSetWorkspace_v2)(cublasHandle, void*, std::size_t);
  cublasStatus (*cublasSetMathMode)(cublasHandle, int);
  cublasStatus (*cublasGetProperty)(int, int*);
  const char* (*cublasGetStatusString)(cublasStatus);
  cublasStatus (*cublasGemmStridedBatchedEx)(cublasHandle, int, int, int, int, int, const void*, const void*, int, int,
                                             long long, const void*, int, int, long long, const void*, void*, int, int,
                                             long long, int, int, int);
};

struct Library {
  BlasInfo info;
  CublasApi api{};
};

std::vector<std::string> candidates() {
  if (const char* p = std::getenv("CCA_CUBLAS_PATH"); p != nullptr && *p != 0) return {p};  // named: nothing else
  std::vector<std::string> out = {"libcublas.so.13", "libcublas.so.12"};
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
    for (const char* v : {"13", "12"}) out.push_back(r + "/libcublas.so." + v);
  }
  return out;
}

const Library& library() {
  static const Library* lib = [] {
    auto* l = new Library();  // never closed, like the driver
    std::vector<std::string> tried;
    void* h = nullptr;
    for (const std::string& c : candidates()) {
      if ((h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        l->info.path = c;
        break;
      }
      // A missing file is the common case: said once, at the end; other failures in full.
      const char* why = dlerror();
      const bool missing = why == nullptr || std::strstr(why, "No such file") != nullptr;
      tried.push_back(missing ? c : c + " (" + why + ")");
    }
    if (h == nullptr) {
      l->info.reason = "cuBLAS not found: tried ";
      for (std::size_t i = 0; i < tried.size(); ++i) l->info.reason += (i ? ", " : "") + tried[i];
      l->info.reason += " (no such file where not said otherwise). Install the CUDA toolkit's cuBLAS (or pip's nvidia-cublas) and set CCA_CUBLAS_PATH";
      return l;
    }
    std::string missing;
    auto resolve = [&](auto& slot, const char* name) {
      void* sym = dlsym(h, name);
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(sym);
      if (sym == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    resolve(l->api.cublasCreate_v2, "cublasCreate_v2");
    resolve(l->api.cublasSetStream_v2, "cublasSetStream_v2");
    resolve(l->api.cublasSetWorkspace_v2, "cublasSetWorkspace_v2");
    resolve(l->api.cublasSetMathMode, "cublasSetMathMode");
    resolve(l->api.cublasGetProperty, "cublasGetProperty");
    resolve(l->api.cublasGetStatusString, "cublasGetStatusString");
    resolve(l->api.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    if (!missing.empty()) {
      l->info.reason = "the cuBLAS at " + l->info.path + " lacks " + missing + " (cuBLAS 12 or later is needed)";
      return l;
    }
    int major = 0, minor = 0, patch = 0;
    l->api.cublasGetProperty(kMajorVersion, &major);
    l->api.cublasGetProperty(kMinorVersion, &minor);
    l->api.cublasGetProperty(kPatchLevel, &patch);
    l->info.version = major * 10000 + minor * 100 + patch;
    l->info.available = true;
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

// IEEE half from a double, rounded to nearest even (alpha and beta of an f16 computation).
std::uint16_t to_half(double value) {
  const float f = static_cast<float>(value);
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

thread_local std::string t_reason;

class CublasEngine final : public BlasEngine {
 public:
  explicit CublasEngine(CudaDevice& device) : device_(device) {}

  Status gemm(const GemmCall& call, StreamId stream, DevicePtr workspace, Bytes workspace_bytes) override {
    const Library& lib = library();
    if (!lib.info.available) {
      t_reason = lib.info.reason;
      return Status::kUnsupported;
    }
    Work w{this, &lib.api, &call, stream, workspace, workspace_bytes, Status::kOk};
    const Status s = device_.in_context(&CublasEngine::run, &w);
    return s != Status::kOk ? s : w.result;
  }

  std::string reason() const override { return t_reason; }

 private:
  struct Work {
    CublasEngine* self;
    const CublasApi* api;
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

  // The calling thread's handle for this device, made on its first GEMM here. Handles are
  // kept for the thread's life (as PyTorch's pool keeps them): destroying one at exit would
  // race the runtime's own teardown.
  cublasHandle handle(const CublasApi& api, Status* status) {
    thread_local std::unordered_map<const CublasEngine*, cublasHandle> handles;
    auto it = handles.find(this);
    if (it != handles.end()) return it->second;
    cublasHandle h = nullptr;
    if (fails(api, api.cublasCreate_v2(&h), "cublasCreate")) {
      *status = Status::kError;
      return nullptr;
    }
    handles.emplace(this, h);
    return h;
  }

  static Status run(void* data) {
    Work& w = *static_cast<Work*>(data);
    const CublasApi& api = *w.api;
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

  CudaDevice& device_;
};

}  // namespace

BlasInfo blas_info() { return library().info; }

std::unique_ptr<BlasEngine> make_cublas_engine(CudaDevice& device) { return std::make_unique<CublasEngine>(device); }

}  // namespace cca
