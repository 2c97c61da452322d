// The launch, the hot path of compute, in plain Node-API. A Kernel object is bound once
// (launchBind) to its shape, parameter and buffer-range arrays: the binding keeps raw
// pointers to their memory in a native record wrapped in the Kernel object itself, which
// also keeps the arrays alive. A launch (launchBound) then passes the Kernel, the stream,
// how many buffer ranges it filled and whether to record them: four values, no typed-array
// lookups. The record is found by napi_unwrap, which sees only this addon's wraps (and it
// wraps nothing else), and carries a magic number besides; every handle and range inside is
// still checked by DeviceCompute. (A napi type tag was the first check: ~300 ns a call on
// Node 20, more than the rest of the crossing.)
#include "launch_functions.h"

#include <cstring>
#include <vector>

#include "../common/hot.h"
#include "addon_state.h"
#include "args.h"
#include "export.h"
#include "js_errors.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

constexpr std::uint64_t kBoundLaunchMagic = 0x6363616c61756e63ULL;  // "ccalaunc"

struct BoundLaunch {
  std::uint64_t magic;
  int device;
  FunctionId function;
  const std::uint32_t* shape;  // [gx, gy, gz, bx, by, bz, shared]
  const unsigned char* params;
  std::size_t param_bytes;
  const double* uses;  // [base, offset, bytes] per range
  std::size_t use_capacity;
};


struct Typed {
  void* data = nullptr;
  std::size_t length = 0;  // elements
};

bool typed_arg(napi_env env, napi_value v, napi_typedarray_type want, const char* name, Typed& out) {
  bool is = false;
  napi_is_typedarray(env, v, &is);
  napi_typedarray_type type;
  if (is) napi_get_typedarray_info(env, v, &type, &out.length, &out.data, nullptr, nullptr);
  if (!is || type != want) {
    set_pending(env, InvalidArgumentError(std::string("Expected a typed array of the right kind for ") + name,
                                          "ERR_INVALID_ARG_TYPE"));
    return false;
  }
  return true;
}

// launchBind(kernel: object, device, function, shape: Uint32Array(7), params: Uint8Array, uses: Float64Array)
napi_value LaunchBind(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  size_t argc = 6;
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  if (!plain_hand_over(env, data)) return nullptr;
  napi_valuetype t = napi_undefined;
  if (argc == 6) napi_typeof(env, argv[0], &t);
  double device = 0, function = 0;
  if (t != napi_object || napi_get_value_double(env, argv[1], &device) != napi_ok ||
      napi_get_value_double(env, argv[2], &function) != napi_ok) {
    set_pending(env, InvalidArgumentError("Expected (kernel, device, function, shape, params, uses)", "ERR_INVALID_ARG_TYPE"));
    return nullptr;
  }
  Typed shape, params, uses;
  if (!typed_arg(env, argv[3], napi_uint32_array, "shape", shape) ||
      !typed_arg(env, argv[4], napi_uint8_array, "params", params) ||
      !typed_arg(env, argv[5], napi_float64_array, "uses", uses)) {
    return nullptr;
  }
  return guarded_plain(env, [&]() -> napi_value {
    if (shape.length != 7) throw InvalidArgumentError("Expected a Uint32Array of 7 for shape", "ERR_INVALID_ARG_VALUE");
    auto* bound = new BoundLaunch{kBoundLaunchMagic, to_device(device), to_u64(function, "function"), static_cast<const std::uint32_t*>(shape.data),
                                  static_cast<const unsigned char*>(params.data), params.length,
                                  static_cast<const double*>(uses.data), uses.length / 3};
    if (napi_wrap(env, argv[0], bound, [](napi_env, void* data, void*) { delete static_cast<BoundLaunch*>(data); },
                  nullptr, nullptr) != napi_ok) {
      delete bound;
      throw InvalidArgumentError("launchBind: the kernel object is bound already", "ERR_INVALID_ARG_VALUE");
    }
    return nullptr;
  });
}

// launchBound(kernel, stream, useCount, record: 0 | 1)
CCA_HOT napi_value LaunchBound(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  size_t argc = 4;
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  if (!plain_hand_over(env, data)) return nullptr;
  void* raw = nullptr;
  double v[3] = {0, 0, 0};
  if (argc < 4 || napi_unwrap(env, argv[0], &raw) != napi_ok || raw == nullptr ||
      static_cast<const BoundLaunch*>(raw)->magic != kBoundLaunchMagic || napi_get_value_double(env, argv[1], &v[0]) != napi_ok ||
      napi_get_value_double(env, argv[2], &v[1]) != napi_ok || napi_get_value_double(env, argv[3], &v[2]) != napi_ok) {
    set_pending(env, InvalidArgumentError("Expected (a bound kernel, stream, useCount, record)", "ERR_INVALID_ARG_TYPE"));
    return nullptr;
  }
  const auto* b = static_cast<const BoundLaunch*>(raw);
  auto* state = static_cast<AddonState*>(data);
  return guarded_plain(env, [&]() -> napi_value {
    const std::uint64_t count = to_u64(v[1], "useCount");
    if (count > b->use_capacity) throw InvalidArgumentError("useCount is beyond the bound uses", "ERR_INVALID_ARG_VALUE");
    LaunchShape shape;
    std::memcpy(shape.grid, b->shape, sizeof shape.grid);
    std::memcpy(shape.block, b->shape + 3, sizeof shape.block);
    shape.shared_bytes = b->shape[6];
    constexpr std::size_t kInline = 16;  // a launch names few buffers
    BufferUse inline_uses[kInline];
    std::vector<BufferUse> heap_uses;
    BufferUse* uses = inline_uses;
    if (count > kInline) {
      heap_uses.resize(count);
      uses = heap_uses.data();
    }
    for (std::size_t i = 0; i < count; ++i) {
      uses[i] = BufferUse{to_u64(b->uses[3 * i], "buffer"), to_u64(b->uses[3 * i + 1], "offset"),
                          to_u64(b->uses[3 * i + 2], "bytes")};
    }
    runtime_of(*state).compute(b->device).launch(b->function, shape, to_u64(v[0], "stream"), b->params, b->param_bytes,
                                                 uses, count, v[2] != 0);
    return nullptr;
  });
}


}  // namespace

void register_launch_functions(Napi::Env env, Napi::Object exports) {
  export_plain(env, exports, "launchBind", LaunchBind);
  export_plain(env, exports, "launchBound", LaunchBound);
}

}  // namespace cca::binding
