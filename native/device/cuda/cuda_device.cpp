#include "cuda_device.h"

#include <cstdio>
#include <cstring>

#include "../../common/errors.h"

namespace cca {

namespace {

// A plain array, not a std::string: a call that fails while the process exits (after the
// thread's thread_local destructors ran) must still be able to record why.
thread_local char t_last_error[512];

cu::CUstream as_stream(StreamId s) { return reinterpret_cast<cu::CUstream>(static_cast<std::uintptr_t>(s)); }
cu::CUevent as_event(EventId e) { return reinterpret_cast<cu::CUevent>(static_cast<std::uintptr_t>(e)); }
cu::CUmodule as_module(ModuleId m) { return reinterpret_cast<cu::CUmodule>(static_cast<std::uintptr_t>(m)); }
cu::CUfunction as_function(FunctionId f) { return reinterpret_cast<cu::CUfunction>(static_cast<std::uintptr_t>(f)); }
template <class T>
std::uint64_t handle_id(T* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); }

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

std::string CudaDevice::last_error() const { return std::string(t_last_error); }

Status CudaDevice::check(cu::CUresult r, const char* call) {
  if (r == cu::CUDA_SUCCESS) return Status::kOk;
  std::snprintf(t_last_error, sizeof t_last_error, "%s: %s", call, lib_.describe(r).c_str());
  switch (r) {
    case cu::CUDA_ERROR_OUT_OF_MEMORY: return Status::kOutOfMemory;
    case cu::CUDA_ERROR_NOT_READY: return Status::kNotReady;
    case cu::CUDA_ERROR_INVALID_VALUE:
    case cu::CUDA_ERROR_INVALID_HANDLE:
    case cu::CUDA_ERROR_INVALID_IMAGE:
    case cu::CUDA_ERROR_NO_BINARY_FOR_GPU:
    case cu::CUDA_ERROR_INVALID_PTX:
    case cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return Status::kInvalidValue;
    case cu::CUDA_ERROR_NOT_FOUND: return Status::kNotFound;
    case cu::CUDA_ERROR_NOT_SUPPORTED: return Status::kUnsupported;
    case cu::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return Status::kCaptureInvalidated;
    case cu::CUDA_ERROR_ILLEGAL_ADDRESS:
    case cu::CUDA_ERROR_ASSERT:
    case cu::CUDA_ERROR_HARDWARE_STACK_ERROR:
    case cu::CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case cu::CUDA_ERROR_MISALIGNED_ADDRESS:
    case cu::CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case cu::CUDA_ERROR_INVALID_PC:
    case cu::CUDA_ERROR_LAUNCH_FAILED: return Status::kFault;
    default: return Status::kError;
  }
}

CudaDevice::ContextScope::ContextScope(CudaDevice& device) : device_(device) {
  std::call_once(device.retain_once_, [&device] {
    device.retain_result_ = device.api_.cuDevicePrimaryCtxRetain(&device.context_, device.device_);
  });
  if (device.retain_result_ != cu::CUDA_SUCCESS) {
    status_ = device.check(device.retain_result_, "cuDevicePrimaryCtxRetain");
    previous_ = device.context_;  // nothing to put back
    return;
  }
  status_ = device.check(device.api_.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (status_ != Status::kOk) {
    previous_ = device.context_;
    return;
  }
  if (previous_ == device.context_) return;
  status_ = device.check(device.api_.cuCtxSetCurrent(device.context_), "cuCtxSetCurrent");
  if (status_ != Status::kOk || previous_ == nullptr) previous_ = device.context_;
}

Status CudaDevice::in_context(Status (*fn)(void* data), void* data) {
  CCA_CONTEXT();
  return fn(data);
}

CudaDevice::ContextScope::~ContextScope() {
  if (previous_ != device_.context_) device_.api_.cuCtxSetCurrent(previous_);
}

CudaDevice::RelaxedCapture::RelaxedCapture(const cu::DriverApi& api) : api_(api) {
  if (api_.cuThreadExchangeStreamCaptureMode != nullptr) {
    changed_ = api_.cuThreadExchangeStreamCaptureMode(&previous_) == cu::CUDA_SUCCESS;
  }
}

CudaDevice::RelaxedCapture::~RelaxedCapture() {
  if (changed_) api_.cuThreadExchangeStreamCaptureMode(&previous_);
}

Status CudaDevice::malloc(DevicePtr* out, std::size_t size) {
  CCA_CONTEXT();
  RelaxedCapture relaxed(api_);
  cu::CUdeviceptr p = 0;
  Status s = check(api_.cuMemAlloc_v2(&p, size), "cuMemAlloc");
  if (s == Status::kOk) *out = p;
  return s;
}

Status CudaDevice::free(DevicePtr ptr) {
  CCA_CONTEXT();
  RelaxedCapture relaxed(api_);
  return check(api_.cuMemFree_v2(ptr), "cuMemFree");
}

Status CudaDevice::ipc_handle(DevicePtr base, unsigned char* out) {
  if (!api_.cuIpcGetMemHandle) return check(cu::CUDA_ERROR_NOT_SUPPORTED, "cuIpcGetMemHandle (not in this driver)");
  CCA_CONTEXT();
  cu::CUipcMemHandle h{};
  Status s = check(api_.cuIpcGetMemHandle(&h, base), "cuIpcGetMemHandle");
  if (s == Status::kOk) std::memcpy(out, h.reserved, kIpcHandleBytes);
  return s;
}

Status CudaDevice::ipc_open(const unsigned char* handle, DevicePtr* out) {
  if (!api_.cuIpcOpenMemHandle_v2) return check(cu::CUDA_ERROR_NOT_SUPPORTED, "cuIpcOpenMemHandle (not in this driver)");
  CCA_CONTEXT();
  cu::CUipcMemHandle h{};
  std::memcpy(h.reserved, handle, kIpcHandleBytes);
  cu::CUdeviceptr p = 0;
  Status s = check(api_.cuIpcOpenMemHandle_v2(&p, h, cu::kIpcLazyEnablePeerAccess), "cuIpcOpenMemHandle");
  if (s == Status::kOk) *out = p;
  return s;
}

Status CudaDevice::ipc_close(DevicePtr mapped) {
  if (!api_.cuIpcCloseMemHandle) return check(cu::CUDA_ERROR_NOT_SUPPORTED, "cuIpcCloseMemHandle (not in this driver)");
  CCA_CONTEXT();
  return check(api_.cuIpcCloseMemHandle(mapped), "cuIpcCloseMemHandle");
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

Status CudaDevice::memcpy_dtod(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamId stream) {
  CCA_CONTEXT();
  return check(api_.cuMemcpyDtoDAsync_v2(dst, src, bytes, as_stream(stream)), "cuMemcpyDtoDAsync");
}

Status CudaDevice::host_alloc(void** out, std::size_t bytes) {
  CCA_CONTEXT();
  return check(api_.cuMemHostAlloc(out, bytes, cu::kMemHostAllocPortable), "cuMemHostAlloc");
}

Status CudaDevice::host_free(void* ptr) {
  CCA_CONTEXT();
  return check(api_.cuMemFreeHost(ptr), "cuMemFreeHost");
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

Status CudaDevice::event_create_timed(EventId* out) {
  CCA_CONTEXT();
  cu::CUevent e = nullptr;
  Status st = check(api_.cuEventCreate(&e, 0), "cuEventCreate");
  if (st == Status::kOk) *out = handle_id(e);
  return st;
}

Status CudaDevice::event_elapsed_ms(EventId start, EventId end, float* ms) {
  CCA_CONTEXT();
  return check(api_.cuEventElapsedTime(ms, as_event(start), as_event(end)), "cuEventElapsedTime");
}

Status CudaDevice::stream_wait_event(StreamId stream, EventId event) {
  CCA_CONTEXT();
  return check(api_.cuStreamWaitEvent(as_stream(stream), as_event(event), 0), "cuStreamWaitEvent");
}

Status CudaDevice::stream_add_callback(StreamId stream, void (*fn)(void*), void* data) {
  CCA_CONTEXT();
  return check(api_.cuLaunchHostFunc(as_stream(stream), fn, data), "cuLaunchHostFunc");
}

Status CudaDevice::module_load(const void* image, std::size_t /*bytes*/, ModuleId* out) {
  CCA_CONTEXT();
  cu::CUmodule m = nullptr;
  Status s = check(api_.cuModuleLoadData(&m, image), "cuModuleLoadData");
  if (s == Status::kOk) *out = handle_id(m);
  return s;
}

Status CudaDevice::module_unload(ModuleId module) {
  CCA_CONTEXT();
  return check(api_.cuModuleUnload(as_module(module)), "cuModuleUnload");
}

Status CudaDevice::function_get(ModuleId module, const std::string& name, FunctionId* out) {
  CCA_CONTEXT();
  cu::CUfunction f = nullptr;
  Status s = check(api_.cuModuleGetFunction(&f, as_module(module), name.c_str()), "cuModuleGetFunction");
  if (s == Status::kOk) *out = handle_id(f);
  return s;
}

Status CudaDevice::function_params(FunctionId function, std::vector<KernelParam>* out) {
  if (api_.cuFuncGetParamInfo == nullptr) {
    return check(cu::CUDA_ERROR_NOT_SUPPORTED, "cuFuncGetParamInfo (not in this driver; CUDA 12.4 added it)");
  }
  CCA_CONTEXT();
  out->clear();
  // The driver answers CUDA_ERROR_INVALID_VALUE for the first index past the last parameter.
  for (std::size_t i = 0; i < 4096; ++i) {
    std::size_t offset = 0, size = 0;
    cu::CUresult r = api_.cuFuncGetParamInfo(as_function(function), i, &offset, &size);
    if (r == cu::CUDA_ERROR_INVALID_VALUE) return Status::kOk;
    if (r != cu::CUDA_SUCCESS) return check(r, "cuFuncGetParamInfo");
    out->push_back(KernelParam{offset, size});
  }
  return Status::kOk;
}

Status CudaDevice::function_attributes(FunctionId function, FunctionAttributes* out) {
  CCA_CONTEXT();
  struct Slot {
    int attribute;
    int* into;
  };
  const Slot slots[] = {{cu::kFuncAttrMaxThreadsPerBlock, &out->max_threads_per_block},
                        {cu::kFuncAttrNumRegs, &out->num_regs},
                        {cu::kFuncAttrSharedSizeBytes, &out->shared_size_bytes},
                        {cu::kFuncAttrConstSizeBytes, &out->const_size_bytes},
                        {cu::kFuncAttrLocalSizeBytes, &out->local_size_bytes},
                        {cu::kFuncAttrMaxDynamicSharedSizeBytes, &out->max_dynamic_shared_bytes},
                        {cu::kFuncAttrPtxVersion, &out->ptx_version},
                        {cu::kFuncAttrBinaryVersion, &out->binary_version}};
  for (const Slot& slot : slots) {
    Status s = check(api_.cuFuncGetAttribute(slot.into, slot.attribute, as_function(function)), "cuFuncGetAttribute");
    if (s != Status::kOk) return s;
  }
  return Status::kOk;
}

Status CudaDevice::function_set_max_dynamic_shared(FunctionId function, int bytes) {
  CCA_CONTEXT();
  return check(api_.cuFuncSetAttribute(as_function(function), cu::kFuncAttrMaxDynamicSharedSizeBytes, bytes),
               "cuFuncSetAttribute");
}

Status CudaDevice::launch_limits(LaunchLimits* out) {
  std::call_once(limits_once_, [this] {
    const int attributes[] = {cu::kAttrMaxThreadsPerBlock, cu::kAttrMaxBlockDimX,     cu::kAttrMaxBlockDimX + 1,
                              cu::kAttrMaxBlockDimX + 2,  cu::kAttrMaxGridDimX,      cu::kAttrMaxGridDimX + 1,
                              cu::kAttrMaxGridDimX + 2,   cu::kAttrMaxSharedPerBlockOptin};
    int* into[] = {&limits_.max_threads_per_block, &limits_.max_block[0], &limits_.max_block[1],
                   &limits_.max_block[2],          &limits_.max_grid[0],  &limits_.max_grid[1],
                   &limits_.max_grid[2],           &limits_.max_shared_per_block_optin};
    for (std::size_t i = 0; i < sizeof attributes / sizeof attributes[0]; ++i) {
      if (limits_result_ == cu::CUDA_SUCCESS) limits_result_ = api_.cuDeviceGetAttribute(into[i], attributes[i], device_);
    }
  });
  if (limits_result_ != cu::CUDA_SUCCESS) return check(limits_result_, "cuDeviceGetAttribute");
  *out = limits_;
  return Status::kOk;
}

Status CudaDevice::launch(FunctionId function, const LaunchShape& shape, StreamId stream, const void* params,
                          std::size_t param_bytes) {
  CCA_CONTEXT();
  // One buffer laid out as the kernel's parameters: the driver copies it before returning.
  void* extra[] = {cu::kLaunchParamBufferPointer, const_cast<void*>(params), cu::kLaunchParamBufferSize, &param_bytes,
                   cu::kLaunchParamEnd};
  return check(api_.cuLaunchKernel(as_function(function), shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0],
                                   shape.block[1], shape.block[2], shape.shared_bytes, as_stream(stream), nullptr,
                                   param_bytes == 0 ? nullptr : extra),
               "cuLaunchKernel");
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
    ContextScope scope(*this);
    if (scope.status() != Status::kOk) return;
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
    platform->blas_.push_back(make_cublas_engine(*platform->devices_.back()));
  }
  return platform;
}

}  // namespace cca
