#include "cuda_device.h"

#include "../../common/errors.h"

namespace cca {

namespace {

thread_local std::string t_last_error;
thread_local cu::CUcontext t_current = nullptr;  // avoids a driver call per operation

cu::CUstream as_stream(StreamId s) { return reinterpret_cast<cu::CUstream>(static_cast<std::uintptr_t>(s)); }
cu::CUevent as_event(EventId e) { return reinterpret_cast<cu::CUevent>(static_cast<std::uintptr_t>(e)); }

}  // namespace

CudaDevice::CudaDevice(const DriverLibrary& lib, int ordinal) : lib_(lib), api_(lib.api()), ordinal_(ordinal) {
  cu::CUresult r = api_.cuDeviceGet(&device_, ordinal);
  if (r != cu::CUDA_SUCCESS) throw DeviceError("cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + lib_.describe(r));
  char name[256] = {0};
  if (api_.cuDeviceGetName(name, sizeof name - 1, device_) == cu::CUDA_SUCCESS) name_ = name;
  api_.cuDeviceTotalMem_v2(&total_, device_);
  api_.cuDeviceGetAttribute(&cc_major_, cu::kAttrComputeCapabilityMajor, device_);
  api_.cuDeviceGetAttribute(&cc_minor_, cu::kAttrComputeCapabilityMinor, device_);
}

CudaDevice::~CudaDevice() {
  if (context_ != nullptr) api_.cuDevicePrimaryCtxRelease_v2(device_);
}

std::string CudaDevice::last_error() const { return t_last_error; }

Status CudaDevice::check(cu::CUresult r, const char* call) {
  if (r == cu::CUDA_SUCCESS) return Status::kOk;
  t_last_error = std::string(call) + ": " + lib_.describe(r);
  switch (r) {
    case cu::CUDA_ERROR_OUT_OF_MEMORY: return Status::kOutOfMemory;
    case cu::CUDA_ERROR_NOT_READY: return Status::kNotReady;
    case cu::CUDA_ERROR_INVALID_VALUE:
    case cu::CUDA_ERROR_INVALID_HANDLE: return Status::kInvalidValue;
    default: return Status::kError;
  }
}

Status CudaDevice::ensure_context() {
  std::call_once(retain_once_, [this] { retain_result_ = api_.cuDevicePrimaryCtxRetain(&context_, device_); });
  if (retain_result_ != cu::CUDA_SUCCESS) return check(retain_result_, "cuDevicePrimaryCtxRetain");
  if (t_current == context_) return Status::kOk;
  Status s = check(api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  if (s == Status::kOk) t_current = context_;
  return s;
}

#define CCA_CONTEXT()                            \
  do {                                           \
    Status ctx_status_ = ensure_context();       \
    if (ctx_status_ != Status::kOk) return ctx_status_; \
  } while (0)

Status CudaDevice::malloc(DevicePtr* out, std::size_t size) {
  CCA_CONTEXT();
  cu::CUdeviceptr p = 0;
  Status s = check(api_.cuMemAlloc_v2(&p, size), "cuMemAlloc");
  if (s == Status::kOk) *out = p;
  return s;
}

Status CudaDevice::free(DevicePtr ptr) {
  CCA_CONTEXT();
  return check(api_.cuMemFree_v2(ptr), "cuMemFree");
}

Status CudaDevice::mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  CCA_CONTEXT();
  return check(api_.cuMemGetInfo_v2(free_bytes, total_bytes), "cuMemGetInfo");
}

Status CudaDevice::memcpy_htod(DevicePtr dst, const void* src, std::size_t bytes, StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuMemcpyHtoDAsync_v2(dst, src, bytes, as_stream(stream)), "cuMemcpyHtoDAsync");
}

Status CudaDevice::memcpy_dtoh(void* dst, DevicePtr src, std::size_t bytes, StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuMemcpyDtoHAsync_v2(dst, src, bytes, as_stream(stream)), "cuMemcpyDtoHAsync");
}

Status CudaDevice::memset_d8(DevicePtr dst, unsigned char value, std::size_t bytes, StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuMemsetD8Async(dst, value, bytes, as_stream(stream)), "cuMemsetD8Async");
}

Status CudaDevice::stream_create(StreamId* out) {
  CCA_CONTEXT();
  cu::CUstream s = nullptr;
  Status st = check(api_.cuStreamCreate(&s, cu::kStreamNonBlocking), "cuStreamCreate");
  if (st == Status::kOk) *out = static_cast<StreamId>(reinterpret_cast<std::uintptr_t>(s));
  return st;
}

Status CudaDevice::stream_destroy(StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuStreamDestroy_v2(as_stream(stream)), "cuStreamDestroy");
}

Status CudaDevice::stream_synchronize(StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuStreamSynchronize(as_stream(stream)), "cuStreamSynchronize");
}

Status CudaDevice::stream_query(StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuStreamQuery(as_stream(stream)), "cuStreamQuery");
}

Status CudaDevice::device_synchronize() {
  CCA_CONTEXT();
  return check(api_.cuCtxSynchronize(), "cuCtxSynchronize");
}

Status CudaDevice::event_create(EventId* out) {
  CCA_CONTEXT();
  cu::CUevent e = nullptr;
  Status st = check(api_.cuEventCreate(&e, cu::kEventDisableTiming), "cuEventCreate");
  if (st == Status::kOk) *out = static_cast<EventId>(reinterpret_cast<std::uintptr_t>(e));
  return st;
}

Status CudaDevice::event_record(EventId event, StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuEventRecord(as_event(event), as_stream(stream)), "cuEventRecord");
}

Status CudaDevice::event_query(EventId event) {
  CCA_CONTEXT();
  return check(api_.cuEventQuery(as_event(event)), "cuEventQuery");
}

Status CudaDevice::event_synchronize(EventId event) {
  CCA_CONTEXT();
  return check(api_.cuEventSynchronize(as_event(event)), "cuEventSynchronize");
}

Status CudaDevice::event_destroy(EventId event) {
  CCA_CONTEXT();
  return check(api_.cuEventDestroy_v2(as_event(event)), "cuEventDestroy");
}

namespace {
cu::CUmemAllocationProp device_prop(cu::CUdevice device) {
  cu::CUmemAllocationProp prop{};
  prop.type = cu::kMemAllocationTypePinned;
  prop.location.type = cu::kMemLocationTypeDevice;
  prop.location.id = device;
  return prop;
}
}  // namespace

std::size_t CudaDevice::vmm_granularity() {
  std::call_once(granularity_once_, [this] {
    if (!api_.cuMemAddressReserve || !api_.cuMemCreate || !api_.cuMemMap || !api_.cuMemUnmap ||
        !api_.cuMemSetAccess || !api_.cuMemRelease || !api_.cuMemAddressFree || !api_.cuMemGetAllocationGranularity) {
      return;  // an old driver: no expandable segments
    }
    if (ensure_context() != Status::kOk) return;
    cu::CUmemAllocationProp prop = device_prop(device_);
    std::size_t g = 0;
    if (api_.cuMemGetAllocationGranularity(&g, &prop, cu::kGranularityMinimum) == cu::CUDA_SUCCESS) granularity_ = g;
  });
  return granularity_;
}

Status CudaDevice::reserve_address(DevicePtr* out, std::size_t size) {
  CCA_CONTEXT();
  if (vmm_granularity() == 0) return check(cu::CUDA_ERROR_INVALID_VALUE, "cuMemAddressReserve (no VMM support)");
  cu::CUdeviceptr p = 0;
  Status s = check(api_.cuMemAddressReserve(&p, size, 0, 0, 0), "cuMemAddressReserve");
  if (s == Status::kOk) *out = p;
  return s;
}

Status CudaDevice::release_address(DevicePtr base, std::size_t size) {
  CCA_CONTEXT();
  return check(api_.cuMemAddressFree(base, size), "cuMemAddressFree");
}

// Physical memory for [at, at + size): create, map, then grant this device access. Any
// failure undoes the earlier steps.
Status CudaDevice::map_memory(DevicePtr at, std::size_t size, std::uint64_t* handle) {
  CCA_CONTEXT();
  cu::CUmemAllocationProp prop = device_prop(device_);
  cu::CUmemGenericAllocationHandle h = 0;
  Status s = check(api_.cuMemCreate(&h, size, &prop, 0), "cuMemCreate");
  if (s != Status::kOk) return s;
  s = check(api_.cuMemMap(at, size, 0, h, 0), "cuMemMap");
  if (s != Status::kOk) {
    api_.cuMemRelease(h);
    return s;
  }
  cu::CUmemAccessDesc access{};
  access.location.type = cu::kMemLocationTypeDevice;
  access.location.id = device_;
  access.flags = cu::kMemAccessReadWrite;
  s = check(api_.cuMemSetAccess(at, size, &access, 1), "cuMemSetAccess");
  if (s != Status::kOk) {
    api_.cuMemUnmap(at, size);
    api_.cuMemRelease(h);
    return s;
  }
  *handle = h;
  return Status::kOk;
}

Status CudaDevice::unmap_memory(DevicePtr at, std::size_t size, std::uint64_t handle) {
  CCA_CONTEXT();
  Status s = check(api_.cuMemUnmap(at, size), "cuMemUnmap");
  if (s != Status::kOk) return s;
  return check(api_.cuMemRelease(handle), "cuMemRelease");
}

#undef CCA_CONTEXT

CudaProbe probe_cuda() {
  CudaProbe p;
  const DriverLibrary& lib = DriverLibrary::instance();
  if (!lib.ok()) {
    p.reason = lib.error();
    return p;
  }
  lib.api().cuDriverGetVersion(&p.driver_version);
  cu::CUresult r = lib.api().cuDeviceGetCount(&p.device_count);
  if (r != cu::CUDA_SUCCESS) {
    p.reason = "cuDeviceGetCount failed: " + lib.describe(r);
    return p;
  }
  if (p.device_count == 0) {
    p.reason = "the CUDA driver sees no GPU";
    return p;
  }
  p.available = true;
  return p;
}

std::unique_ptr<CudaPlatform> CudaPlatform::open() {
  CudaProbe probe = probe_cuda();
  if (!probe.available) throw DeviceError(probe.reason);
  auto platform = std::unique_ptr<CudaPlatform>(new CudaPlatform());
  for (int i = 0; i < probe.device_count; ++i) {
    platform->devices_.push_back(std::make_unique<CudaDevice>(DriverLibrary::instance(), i));
  }
  return platform;
}

}  // namespace cca
