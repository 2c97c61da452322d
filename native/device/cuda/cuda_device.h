// The CUDA backend: one Device per GPU over the driver API (driver_library.h). Each device
// uses its primary context, retained on first use and made current on the calling thread.
// Stream and event handles are the driver's CUstream / CUevent pointers; stream 0 is the
// legacy default stream.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../blas.h"
#include "../device.h"
#include "../graphs.h"
#include "../kernels.h"
#include "driver_library.h"

namespace cca {

class CudaDevice final : public Device, public CopyEngine, public KernelEngine, public GraphEngine {
 public:
  CudaDevice(const DriverLibrary& lib, int ordinal);
  ~CudaDevice() override;

  int index() const override { return ordinal_; }
  std::string name() const override { return name_; }
  bool is_simulated() const override { return false; }
  std::string last_error() const override;

  Status malloc(DevicePtr* out, std::size_t size) override;
  Status free(DevicePtr ptr) override;
  Status mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) override;
  Status memcpy_htod(DevicePtr dst, const void* src, std::size_t bytes, StreamId stream) override;
  Status memcpy_dtoh(void* dst, DevicePtr src, std::size_t bytes, StreamId stream) override;
  Status memset_d8(DevicePtr dst, unsigned char value, std::size_t bytes, StreamId stream) override;
  Status memcpy_dtod(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamId stream) override;
  Status host_alloc(void** out, std::size_t bytes) override;
  Status host_free(void* ptr) override;
  Status ipc_handle(DevicePtr base, unsigned char* out) override;
  Status ipc_open(const unsigned char* handle, DevicePtr* out) override;
  Status ipc_close(DevicePtr mapped) override;

  std::size_t vmm_granularity() override;
  Status reserve_address(DevicePtr* out, std::size_t size) override;
  Status release_address(DevicePtr base, std::size_t size) override;
  Status map_memory(DevicePtr at, std::size_t size, std::uint64_t* handle) override;
  Status unmap_memory(DevicePtr at, std::size_t size, std::uint64_t handle) override;

  Status stream_create(StreamId* out) override;
  Status stream_destroy(StreamId stream) override;
  Status stream_synchronize(StreamId stream) override;
  Status stream_query(StreamId stream) override;
  std::pair<int, int> compute_capability() const override { return {cc_major_, cc_minor_}; }
  Status device_synchronize() override;
  // Runs fn(data) with this device's context current on the calling thread, as every driver
  // call here runs: for a library that works through the runtime API (cuBLAS).
  Status in_context(Status (*fn)(void* data), void* data);

  Status event_create(EventId* out) override;
  Status event_record(EventId event, StreamId stream) override;
  Status event_query(EventId event) override;
  Status event_synchronize(EventId event) override;
  Status event_destroy(EventId event) override;
  Status event_create_timed(EventId* out) override;
  Status event_elapsed_ms(EventId start, EventId end, float* ms) override;
  Status stream_wait_event(StreamId stream, EventId event) override;
  Status stream_add_callback(StreamId stream, void (*fn)(void*), void* data) override;

  Status module_load(const void* image, std::size_t bytes, ModuleId* out) override;
  Status module_unload(ModuleId module) override;
  Status function_get(ModuleId module, const std::string& name, FunctionId* out) override;
  Status function_params(FunctionId function, std::vector<KernelParam>* out) override;
  Status function_attributes(FunctionId function, FunctionAttributes* out) override;
  Status function_set_max_dynamic_shared(FunctionId function, int bytes) override;
  Status launch_limits(LaunchLimits* out) override;
  Status launch(FunctionId function, const LaunchShape& shape, StreamId stream, const void* params,
                std::size_t param_bytes) override;

  // Stream capture and graphs (cuda_graphs.cpp).
  Status stream_capture_info(StreamId stream, CaptureInfo* out) override;
  Status begin_capture(StreamId stream, CaptureMode mode) override;
  Status end_capture(StreamId stream, GraphId* out) override;
  Status graph_node_count(GraphId graph, std::size_t* out) override;
  Status graph_destroy(GraphId graph) override;
  Status graph_instantiate(GraphId graph, GraphExecId* out) override;
  Status graph_launch(GraphExecId exec, StreamId stream) override;
  Status graph_upload(GraphExecId exec, StreamId stream) override;
  Status graph_exec_destroy(GraphExecId exec) override;

  int compute_capability_major() const { return cc_major_; }
  int compute_capability_minor() const { return cc_minor_; }
  std::size_t total_memory() const { return total_; }

 private:
  // For one call into the driver: makes this device's primary context (retained once)
  // current on the calling thread if it is not, and on leaving puts back the context that
  // another library had current there. A thread that had none keeps ours, as the CUDA
  // runtime API leaves it; so Node's threads pay one cuCtxGetCurrent per call, no more.
  class ContextScope {
   public:
    explicit ContextScope(CudaDevice& device);
    ~ContextScope();
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;
    Status status() const { return status_; }

   private:
    CudaDevice& device_;
    cu::CUcontext previous_ = nullptr;
    Status status_ = Status::kOk;
  };
  Status check(cu::CUresult r, const char* call);
  // For one device allocation or release: this thread's capture mode is relaxed meanwhile,
  // so a cuMemAlloc/cuMemFree cannot invalidate a global-mode capture on any thread
  // (PyTorch's cudaMallocMaybeCapturing). Two thread-local driver calls beside a cuMemAlloc.
  class RelaxedCapture {
   public:
    explicit RelaxedCapture(const cu::DriverApi& api);
    ~RelaxedCapture();
    RelaxedCapture(const RelaxedCapture&) = delete;
    RelaxedCapture& operator=(const RelaxedCapture&) = delete;

   private:
    const cu::DriverApi& api_;
    int previous_ = cu::kCaptureModeRelaxed;
    bool changed_ = false;
  };

  const DriverLibrary& lib_;
  const cu::DriverApi& api_;
  const int ordinal_;
  cu::CUdevice device_ = 0;
  std::string name_;
  std::size_t total_ = 0;
  int cc_major_ = 0;
  int cc_minor_ = 0;
  std::once_flag retain_once_;
  cu::CUcontext context_ = nullptr;
  cu::CUresult retain_result_ = cu::CUDA_SUCCESS;
  std::once_flag limits_once_;
  LaunchLimits limits_;
  cu::CUresult limits_result_ = cu::CUDA_SUCCESS;
  std::once_flag granularity_once_;
  std::size_t granularity_ = 0;
};

// Opens a CudaDevice member function's driver work: makes the device's context current for
// the call, returning its status if that fails.
#define CCA_CONTEXT()                  \
  ContextScope ctx_scope_(*this);      \
  if (ctx_scope_.status() != Status::kOk) return ctx_scope_.status()

class CudaPlatform final : public Platform {
 public:
  // The GPUs the driver sees; throws DeviceError with the reason when there are none or
  // the driver cannot be used.
  static std::unique_ptr<CudaPlatform> open();
  std::string backend() const override { return "cuda"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  Device& device(int index) override { return *devices_.at(static_cast<std::size_t>(index)); }
  CopyEngine& copy_engine(int index) override { return *devices_.at(static_cast<std::size_t>(index)); }
  KernelEngine* kernel_engine(int index) override { return devices_.at(static_cast<std::size_t>(index)).get(); }
  GraphEngine* graph_engine(int index) override { return devices_.at(static_cast<std::size_t>(index)).get(); }
  BlasEngine* blas_engine(int index) override { return blas_.at(static_cast<std::size_t>(index)).get(); }
  CudaDevice& cuda_device(int index) { return *devices_.at(static_cast<std::size_t>(index)); }

 private:
  std::vector<std::unique_ptr<CudaDevice>> devices_;
  std::vector<std::unique_ptr<BlasEngine>> blas_;  // cuBLAS per device, loaded on the first GEMM
};

// Whether the CUDA backend can be used here, and if not, why (no driver, no device, ...).
struct CudaProbe {
  bool available = false;
  int device_count = 0;
  std::string reason;
  int driver_version = 0;
};
CudaProbe probe_cuda();

// cuBLAS on one device (cublas.cpp); the library is opened on the first GEMM.
std::unique_ptr<BlasEngine> make_cublas_engine(CudaDevice& device);

}  // namespace cca
