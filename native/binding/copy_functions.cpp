// Copies between typed arrays and device memory, and fills. Each call queues the work on
// the buffer's stream and waits for that stream, so the host memory is free to reuse when
// it returns. Bounds are checked in TypeScript and again here.
#include "copy_functions.h"

#include "../device/cuda/cuda_device.h"
#include "addon_state.h"
#include "args.h"
#include "runtime_holder.h"

namespace cca::binding {

namespace {

struct Span {
  unsigned char* data;
  std::size_t bytes;
};

Span bytes_of(const Napi::CallbackInfo& info, std::size_t i) {
  if (i >= info.Length() || !info[i].IsTypedArray()) {
    throw InvalidArgumentError("Expected a TypedArray or Buffer", "ERR_INVALID_ARG_TYPE");
  }
  Napi::TypedArray t = info[i].As<Napi::TypedArray>();
  Napi::ArrayBuffer buf = t.ArrayBuffer();
  return Span{static_cast<unsigned char*>(buf.Data()) + t.ByteOffset(), t.ByteLength()};
}

void finish(Device& d, Status s, StreamId stream, const char* what) {
  if (s == Status::kOk) s = d.stream_synchronize(stream);
  if (s != Status::kOk) {
    throw DeviceError(std::string(what) + " failed on device " + std::to_string(d.index()) + ": " +
                      status_name(s) + " (" + d.last_error() + ")");
  }
}

// copyHtoD(device, ptr, typedArray, stream)
Napi::Value CopyHtoD(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    Device& d = runtime().allocator(device_arg(info, 0)).device();
    Span src = bytes_of(info, 2);
    const StreamId stream = u64_arg(info, 3, "stream");
    finish(d, d.memcpy_htod(u64_arg(info, 1, "ptr"), src.data, src.bytes, stream), stream, "copy to device");
    return env.Undefined();
  });
}

// copyDtoH(device, ptr, typedArray, stream)
Napi::Value CopyDtoH(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    Device& d = runtime().allocator(device_arg(info, 0)).device();
    Span dst = bytes_of(info, 2);
    const StreamId stream = u64_arg(info, 3, "stream");
    finish(d, d.memcpy_dtoh(dst.data, u64_arg(info, 1, "ptr"), dst.bytes, stream), stream, "copy to host");
    return env.Undefined();
  });
}

// fill(device, ptr, byte, bytes, stream)
Napi::Value Fill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    Device& d = runtime().allocator(device_arg(info, 0)).device();
    const std::uint64_t value = u64_arg(info, 2, "value");
    if (value > 255) throw InvalidArgumentError("fill value must be a byte (0-255)", "ERR_INVALID_ARG_VALUE");
    const StreamId stream = u64_arg(info, 4, "stream");
    finish(d, d.memset_d8(u64_arg(info, 1, "ptr"), static_cast<unsigned char>(value), u64_arg(info, 3, "bytes"), stream),
           stream, "fill");
    return env.Undefined();
  });
}

// cudaProbe() -> { available, reason, deviceCount, driverVersion, path }, without
// switching backends.
Napi::Value CudaProbeFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaProbe p = probe_cuda();
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", p.available);
  o.Set("reason", p.reason);
  o.Set("deviceCount", p.device_count);
  o.Set("driverVersion", p.driver_version);
  o.Set("path", DriverLibrary::instance().path());
  return o;
}

}  // namespace

void register_copy_functions(Napi::Env env, Napi::Object exports) {
  exports.Set("copyHtoD", Napi::Function::New(env, CopyHtoD, "copyHtoD"));
  exports.Set("copyDtoH", Napi::Function::New(env, CopyDtoH, "copyDtoH"));
  exports.Set("fill", Napi::Function::New(env, Fill, "fill"));
  exports.Set("cudaProbe", Napi::Function::New(env, CudaProbeFn, "cudaProbe"));
}

}  // namespace cca::binding
