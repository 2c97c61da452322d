// Matrix multiplication (compute/device_blas.h): the library there is, one GEMM per call with
// its numbers in a Float64Array (gemm_params.h), and the workspaces.
#include "blas_functions.h"

#include <cmath>

#include "../device/blas.h"
#include "../interop/clients.h"
#include "args.h"
#include "export.h"
#include "gemm_params.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

// The tag the workspace carries, so snapshots and memory_stats_by_tag say whose it is.
constexpr const char* kWorkspaceName = "cuBLAS workspace";
constexpr const char* kLtWorkspaceName = "cuBLASLt workspace";

Napi::Value BlasInfoOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const BlasInfo b = blas_info();
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", b.available);
  o.Set("reason", b.reason);
  o.Set("path", b.path);
  o.Set("ltAvailable", b.lt_available);
  o.Set("ltReason", b.lt_reason);
  o.Set("ltPath", b.lt_path);
  o.Set("version", b.version == 0 ? std::string()
                                  : std::to_string(b.version / 10000) + "." + std::to_string(b.version / 100 % 100) + "." +
                                        std::to_string(b.version % 100));
  return o;
}

std::int64_t whole(const double* p, std::size_t i, const char* name) {
  const double v = p[i];
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9007199254740991.0) {
    throw InvalidArgumentError(std::string("gemm: ") + name + " must be an integer", "ERR_INVALID_ARG_TYPE");
  }
  return static_cast<std::int64_t>(v);
}

// gemm(device, params: Float64Array of kGemmParamCount)
Napi::Value Gemm(const Napi::CallbackInfo& info) {
  const int device = device_arg(info, 0);
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[1].As<Napi::Float64Array>().ElementLength() < kGemmParamCount) {
    throw InvalidArgumentError("gemm(device, params: Float64Array(33))", "ERR_INVALID_ARG_TYPE");
  }
  const double* p = info[1].As<Napi::Float64Array>().Data();
  GemmRequest r;
  GemmCall& s = r.shape;
  s.trans_a = p[kGemmTransA] != 0;
  s.trans_b = p[kGemmTransB] != 0;
  s.m = whole(p, kGemmM, "m");
  s.n = whole(p, kGemmN, "n");
  s.k = whole(p, kGemmK, "k");
  s.lda = whole(p, kGemmLda, "lda");
  s.ldb = whole(p, kGemmLdb, "ldb");
  s.ldc = whole(p, kGemmLdc, "ldc");
  s.stride_a = whole(p, kGemmStrideA, "strideA");
  s.stride_b = whole(p, kGemmStrideB, "strideB");
  s.stride_c = whole(p, kGemmStrideC, "strideC");
  s.batch = whole(p, kGemmBatch, "batch");
  const std::int64_t dtype = whole(p, kGemmDtype, "dtype"), compute = whole(p, kGemmCompute, "compute");
  if (dtype < 0 || dtype > 2 || compute < 0 || compute > 2) throw InvalidArgumentError("gemm: unknown dtype or compute");
  s.type = static_cast<BlasType>(dtype);
  s.compute = static_cast<BlasCompute>(compute);
  s.alpha = p[kGemmAlpha];
  s.beta = p[kGemmBeta];
  r.a_base = static_cast<DevicePtr>(whole(p, kGemmABase, "a"));
  r.b_base = static_cast<DevicePtr>(whole(p, kGemmBBase, "b"));
  r.c_base = static_cast<DevicePtr>(whole(p, kGemmCBase, "c"));
  r.a_offset = static_cast<std::uint64_t>(whole(p, kGemmAOffset, "a's offset"));
  r.b_offset = static_cast<std::uint64_t>(whole(p, kGemmBOffset, "b's offset"));
  r.c_offset = static_cast<std::uint64_t>(whole(p, kGemmCOffset, "c's offset"));
  r.a_limit = static_cast<std::uint64_t>(whole(p, kGemmALimit, "a's size"));
  r.b_limit = static_cast<std::uint64_t>(whole(p, kGemmBLimit, "b's size"));
  r.c_limit = static_cast<std::uint64_t>(whole(p, kGemmCLimit, "c's size"));
  r.stream = static_cast<StreamId>(whole(p, kGemmStream, "stream"));
  r.record = p[kGemmRecord] != 0;
  r.row_major = p[kGemmRowMajor] != 0;
  r.bias_base = static_cast<DevicePtr>(whole(p, kGemmBiasBase, "bias"));
  r.bias_offset = static_cast<std::uint64_t>(whole(p, kGemmBiasOffset, "bias's offset"));
  r.bias_limit = static_cast<std::uint64_t>(whole(p, kGemmBiasLimit, "bias's size"));
  const std::int64_t epilogue = whole(p, kGemmEpilogue, "epilogue");
  if (epilogue < 0 || epilogue > 2) throw InvalidArgumentError("gemm: unknown epilogue");
  s.epilogue = static_cast<BlasEpilogue>(epilogue);
  const auto stack = static_cast<std::uint32_t>(whole(p, kGemmStackId, "stackId"));
  r.workspace_ctx = CallContext{stack, name_tag(kWorkspaceName)};
  r.lt_workspace_ctx = CallContext{stack, name_tag(kLtWorkspaceName)};
  runtime(info).blas(device).gemm(r);
  return info.Env().Undefined();
}

// clearBlasWorkspaces(device) -> workspaces kept (a captured GEMM used them)
Napi::Value ClearBlasWorkspaces(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(runtime(info).blas(device_arg(info, 0)).clear_workspaces()));
}

// blasWorkspaces(device) -> { bytes: each cuBLAS one's size, ltBytes: each cuBLASLt one's, count }
Napi::Value BlasWorkspaces(const Napi::CallbackInfo& info) {
  DeviceBlas& b = runtime(info).blas(device_arg(info, 0));
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("bytes", static_cast<double>(b.workspace_bytes()));
  o.Set("ltBytes", static_cast<double>(b.lt_workspace_bytes()));
  o.Set("count", static_cast<double>(b.workspace_count()));
  return o;
}

}  // namespace

void register_blas_functions(Napi::Env env, Napi::Object exports) {
  export_function<BlasInfoOf>(env, exports, "blasInfo");
  export_function<Gemm>(env, exports, "gemm");
  export_function<ClearBlasWorkspaces>(env, exports, "clearBlasWorkspaces");
  export_function<BlasWorkspaces>(env, exports, "blasWorkspaces");
}

}  // namespace cca::binding
