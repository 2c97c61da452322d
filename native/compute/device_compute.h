// Kernels, events and stream ordering on one device. Each handle it returns (module,
// function, event) is remembered and every handle passed in is looked up, so a stale or
// made-up handle is a coded error, never a driver crash; the simulator, which runs no
// kernels, refuses loads and launches with an error that names the cuda backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../allocator/policy/caching_allocator.h"
#include "../allocator/policy/facets/device_work.h"
#include "../device/device.h"
#include "../device/kernels.h"
#include "../host/host_caching_allocator.h"

namespace cca {

struct LoadedFunction {
  FunctionId id = 0;
  // The parameters as the compiled kernel lays them out; empty and `params_known` false
  // when the driver cannot tell.
  bool params_known = false;
  std::vector<KernelParam> params;
  FunctionAttributes attributes;
};

class DeviceCompute {
 public:
  // `kernels` is null where the backend runs no kernels.
  DeviceCompute(Device& device, KernelEngine* kernels, CopyEngine& copies, DeviceCachingAllocator& allocator,
                HostCachingAllocator& host);
  ~DeviceCompute();  // unloads what is still loaded, destroys the events still alive
  DeviceCompute(const DeviceCompute&) = delete;
  DeviceCompute& operator=(const DeviceCompute&) = delete;

  ModuleId load_module(const void* image, std::size_t bytes);
  void unload_module(ModuleId module);
  LoadedFunction get_function(ModuleId module, const std::string& name);
  FunctionAttributes function_attributes(FunctionId function);
  void set_max_dynamic_shared(FunctionId function, int bytes);
  LaunchLimits launch_limits();

  // Queues `function` on `stream` with `params` (laid out as the kernel's parameters),
  // after the allocator checked every buffer range in `uses` and, with `record`, recorded
  // each on `stream` (see DeviceWork::enqueue_on_buffers). The shape is
  // checked against the device's limits first.
  void launch(FunctionId function, const LaunchShape& shape, StreamId stream, const void* params,
              std::size_t param_bytes, const BufferUse* uses, std::size_t use_count, bool record);

  // Copies queued on `stream`, not waited for. The device ranges go through the allocator as
  // a launch's buffers do (checked; recorded on `stream` when `record`); the host range
  // must lie in one live block of the host allocator, which is marked as used by `stream`
  // (so freeing it waits for the copy): ERR_CCA_NOT_PINNED otherwise, before anything is queued.
  void copy_to_device_async(const BufferUse& dst, const void* src, StreamId stream, bool record);
  void copy_to_host_async(void* dst, const BufferUse& src, StreamId stream, bool record);
  void copy_device_async(const BufferUse& dst, const BufferUse& src, StreamId stream, bool record);

  EventId event_create(bool timing);
  void event_record(EventId event, StreamId stream);
  bool event_query(EventId event);  // true when the work before it is done
  void event_synchronize(EventId event);
  float event_elapsed_ms(EventId start, EventId end);
  void event_destroy(EventId event);
  void stream_wait_event(StreamId stream, EventId event);
  // Runs fn(data) once the work queued on `stream` so far is done, on a thread of the
  // backend's choosing (now, on this thread, when nothing is queued).
  void stream_add_callback(StreamId stream, void (*fn)(void*), void* data);

 private:
  struct FunctionRecord {
    std::string name;
    int max_dynamic_shared;  // what the launch may ask for now (raised by set_max_dynamic_shared)
  };
  KernelEngine& kernels(const char* what);
  // The module's functions; ERR_CCA_INVALID_HANDLE for a module not loaded here.
  std::vector<FunctionId>& module_locked(ModuleId module, const char* what);
  const FunctionRecord& function_locked(FunctionId function, const char* what) const;
  // The device's launch limits, read from the driver once (the read out of line).
  const LaunchLimits& limits_locked(KernelEngine& k) { return have_limits_ ? limits_ : read_limits_locked(k); }
  const LaunchLimits& read_limits_locked(KernelEngine& k);
  bool event_timed_locked(EventId event, const char* what) const;
  void check_shape(const FunctionRecord& f, const LaunchLimits& limits, const LaunchShape& shape) const;
  void fail(const char* what, Status s) const;

  Device& device_;
  void require_pinned(const void* host, std::size_t bytes, const char* what) const;
  KernelEngine* kernels_;
  CopyEngine& copies_;
  DeviceCachingAllocator& allocator_;
  HostCachingAllocator& host_;
  mutable std::mutex mu_;
  std::unordered_map<ModuleId, std::vector<FunctionId>> modules_;
  std::unordered_map<FunctionId, FunctionRecord> functions_;
  std::unordered_map<EventId, bool> events_;  // -> made with timing
  bool have_limits_ = false;
  LaunchLimits limits_;
};

}  // namespace cca
