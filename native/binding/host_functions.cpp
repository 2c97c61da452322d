// Pinned host memory and asynchronous copies. A pinned block reaches JS as an external
// ArrayBuffer over the block itself (JS reads and writes it in place); freeing detaches it,
// so a view kept past free() is empty rather than a window on a block handed to someone
// else. Copies take the host side as a typed array, which the compute layer checks lies
// in a live pinned block: no host address crosses the boundary as a number.
#include "host_functions.h"

#include <cstring>

#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

// The flat keys of host_memory_stats(), sorted as PyTorch sorts them.
const char* const kHostStatKeys[] = {
    "active_bytes.allocated",    "active_bytes.current",      "active_bytes.freed",      "active_bytes.peak",
    "active_requests.allocated", "active_requests.current",   "active_requests.freed",   "active_requests.peak",
    "allocated_bytes.allocated", "allocated_bytes.current",   "allocated_bytes.freed",   "allocated_bytes.peak",
    "allocations.allocated",     "allocations.current",       "allocations.freed",       "allocations.peak",
    "host_alloc_time.avg",       "host_alloc_time.count",     "host_alloc_time.max",     "host_alloc_time.min",
    "host_alloc_time.total",     "host_free_time.avg",        "host_free_time.count",    "host_free_time.max",
    "host_free_time.min",        "host_free_time.total",      "num_host_alloc",          "num_host_free",
};
constexpr std::size_t kHostStatCount = sizeof kHostStatKeys / sizeof kHostStatKeys[0];

void put_stat(double* out, const Stat& s) {
  out[0] = static_cast<double>(s.allocated);
  out[1] = static_cast<double>(s.current);
  out[2] = static_cast<double>(s.freed);
  out[3] = static_cast<double>(s.peak);
}

void put_duration(double* out, const HostDurationStat& d) {
  out[0] = d.count == 0 ? 0 : static_cast<double>(d.total) / static_cast<double>(d.count);
  out[1] = static_cast<double>(d.count);
  out[2] = static_cast<double>(d.max);
  out[3] = static_cast<double>(d.min);
  out[4] = static_cast<double>(d.total);
}

Napi::Value HostStatKeys(const Napi::CallbackInfo& info) {
  Napi::Array keys = Napi::Array::New(info.Env(), kHostStatCount);
  for (std::size_t i = 0; i < kHostStatCount; ++i) keys.Set(static_cast<uint32_t>(i), kHostStatKeys[i]);
  return keys;
}

// hostMemoryStats() -> Float64Array in hostStatKeys() order
Napi::Value HostMemoryStats(const Napi::CallbackInfo& info) {
  const HostStats s = runtime(info).host().stats();
  Napi::Float64Array out = Napi::Float64Array::New(info.Env(), kHostStatCount);
  double* v = out.Data();
  put_stat(v + 0, s.active_bytes);
  put_stat(v + 4, s.active_requests);
  put_stat(v + 8, s.allocated_bytes);
  put_stat(v + 12, s.allocations);
  put_duration(v + 16, s.host_alloc_time);
  put_duration(v + 21, s.host_free_time);
  v[26] = static_cast<double>(s.num_host_alloc);
  v[27] = static_cast<double>(s.num_host_free);
  return out;
}

Napi::Value ResetPeakHostStats(const Napi::CallbackInfo& info) {
  runtime(info).host().reset_peak_stats();
  return info.Env().Undefined();
}

Napi::Value ResetAccumulatedHostStats(const Napi::CallbackInfo& info) {
  runtime(info).host().reset_accumulated_stats();
  return info.Env().Undefined();
}

Napi::Value EmptyHostCache(const Napi::CallbackInfo& info) {
  runtime(info).host().empty_cache();
  return info.Env().Undefined();
}

// Argument i as a stack id; 0 when absent (history keeps no stack for the call).
std::uint32_t stack_arg(const Napi::CallbackInfo& info, std::size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return 0;
  const std::uint64_t id = u64_arg(info, i, "stackId");
  if (id > 0xffffffffu) throw InvalidArgumentError("stackId must fit 32 bits", "ERR_INVALID_ARG_VALUE");
  return static_cast<std::uint32_t>(id);
}

// hostAlloc(size, stackId?) -> ArrayBuffer over the pinned block (size bytes of it)
Napi::Value HostAlloc(const Napi::CallbackInfo& info) {
  const std::uint64_t size = u64_arg(info, 0, "size");
  const std::uint32_t stack = stack_arg(info, 1);
  if (size == 0) return Napi::ArrayBuffer::New(info.Env(), 0);
  void* p = runtime(info).host().allocate(size, nullptr, stack);
  return Napi::ArrayBuffer::New(info.Env(), p, size);
}

// hostFree(buffer, stackId?): gives the block back and detaches the ArrayBuffer.
Napi::Value HostFree(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsArrayBuffer()) {
    throw InvalidArgumentError("Expected the ArrayBuffer of a pinned block for buffer", "ERR_INVALID_ARG_TYPE");
  }
  Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
  const std::uint32_t stack = stack_arg(info, 1);
  if (buffer.ByteLength() == 0) return info.Env().Undefined();
  runtime(info).host().free(buffer.Data(), stack);  // throws, changing nothing, for anything not a live block
  buffer.Detach();
  return info.Env().Undefined();
}

BufferUse use_args(const Napi::CallbackInfo& info, std::size_t at) {
  return BufferUse{u64_arg(info, at, "base"), u64_arg(info, at + 1, "offset"), u64_arg(info, at + 2, "bytes")};
}

// copyToDeviceAsync(device, base, offset, host: TypedArray, stream, record)
Napi::Value CopyToDeviceAsync(const Napi::CallbackInfo& info) {
  const Span host = bytes_arg(info, 3, "host");
  const BufferUse dst{u64_arg(info, 1, "base"), u64_arg(info, 2, "offset"), host.bytes};
  runtime(info).compute(device_arg(info, 0)).copy_to_device_async(dst, host.data, u64_arg(info, 4, "stream"),
                                                                  bool_arg(info, 5, "record"));
  return info.Env().Undefined();
}

// copyToHostAsync(device, base, offset, host: TypedArray, stream, record)
Napi::Value CopyToHostAsync(const Napi::CallbackInfo& info) {
  const Span host = bytes_arg(info, 3, "host");
  const BufferUse src{u64_arg(info, 1, "base"), u64_arg(info, 2, "offset"), host.bytes};
  runtime(info).compute(device_arg(info, 0)).copy_to_host_async(host.data, src, u64_arg(info, 4, "stream"),
                                                                bool_arg(info, 5, "record"));
  return info.Env().Undefined();
}

// copyDeviceAsync(device, dstBase, dstOffset, bytes, srcBase, srcOffset, bytes, stream, record)
Napi::Value CopyDeviceAsync(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).copy_device_async(use_args(info, 1), use_args(info, 4),
                                                               u64_arg(info, 7, "stream"), bool_arg(info, 8, "record"));
  return info.Env().Undefined();
}

}  // namespace

void register_host_functions(Napi::Env env, Napi::Object exports) {
  export_function<HostStatKeys>(env, exports, "hostStatKeys");
  export_function<HostMemoryStats>(env, exports, "hostMemoryStats");
  export_function<ResetPeakHostStats>(env, exports, "resetPeakHostStats");
  export_function<ResetAccumulatedHostStats>(env, exports, "resetAccumulatedHostStats");
  export_function<EmptyHostCache>(env, exports, "emptyHostCache");
  export_function<HostAlloc>(env, exports, "hostAlloc");
  export_function<HostFree>(env, exports, "hostFree");
  export_function<CopyToDeviceAsync>(env, exports, "copyToDeviceAsync");
  export_function<CopyToHostAsync>(env, exports, "copyToHostAsync");
  export_function<CopyDeviceAsync>(env, exports, "copyDeviceAsync");
}

}  // namespace cca::binding
