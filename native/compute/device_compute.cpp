#include "device_compute.h"
#include "../allocator/policy/facets/graph_captures.h"

#include <string>

#include "../common/errors.h"
#include "../common/message_format.h"

namespace cca {

namespace {

std::string dims(const unsigned v[3]) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

}  // namespace

DeviceCompute::DeviceCompute(Device& device, KernelEngine* kernels, CopyEngine& copies,
                             DeviceCachingAllocator& allocator, HostCachingAllocator& host)
    : device_(device), kernels_(kernels), copies_(copies), allocator_(allocator), host_(host) {}

DeviceCompute::~DeviceCompute() {
  // The context may be lost (a kernel fault): teardown ignores the statuses it gets.
  for (const auto& [event, timed] : events_) device_.event_destroy(event);
  if (kernels_ != nullptr) {
    for (const auto& [module, functions] : modules_) kernels_->module_unload(module);
  }
}

void DeviceCompute::fail(const char* what, Status s) const { throw device_error(device_, what, s); }

KernelEngine& DeviceCompute::kernels(const char* what) {
  if (kernels_ == nullptr) {
    throw DeviceError(std::string(what) + ": device " + std::to_string(device_.index()) + " is " +
                          (device_.is_simulated() ? "simulated, and the simulator runs no kernels"
                                                  : "on a backend that runs no kernels") +
                          "; use the cuda backend on a machine with a GPU (CCA_DEVICE=cuda; cuda.runtimeInfo() says "
                          "why it is not in use)",
                      "ERR_CCA_KERNELS_UNSUPPORTED");
  }
  return *kernels_;
}

ModuleId DeviceCompute::load_module(const void* image, std::size_t bytes) {
  KernelEngine& k = kernels("loading a module");
  if (bytes == 0) throw InvalidArgumentError("loading a module: the image is empty", "ERR_CCA_INVALID_MODULE");
  ModuleId module = 0;
  Status s = k.module_load(image, bytes, &module);
  if (s == Status::kInvalidValue) {
    throw InvalidArgumentError("loading a module on device " + std::to_string(device_.index()) +
                                   ": the driver refused the image (" + device_.last_error() +
                                   "); give CUBIN or a fatbin built for this GPU's architecture, or PTX no newer than "
                                   "the driver (compile for the device with compute.compile)",
                               "ERR_CCA_INVALID_MODULE");
  }
  if (s != Status::kOk) fail("loading a module", s);
  std::lock_guard<std::mutex> lock(mu_);
  modules_[module];
  return module;
}

void DeviceCompute::unload_module(ModuleId module) {
  KernelEngine& k = kernels("unloading a module");
  std::lock_guard<std::mutex> lock(mu_);
  for (FunctionId f : module_locked(module, "unloading a module")) functions_.erase(f);
  modules_.erase(module);
  Status s = k.module_unload(module);
  if (s != Status::kOk) fail("unloading a module", s);
}

LoadedFunction DeviceCompute::get_function(ModuleId module, const std::string& name) {
  KernelEngine& k = kernels("getting a kernel");
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FunctionId>& functions = module_locked(module, "getting a kernel");
  LoadedFunction out;
  Status s = k.function_get(module, name, &out.id);
  if (s == Status::kNotFound || s == Status::kInvalidValue) {
    throw InvalidArgumentError("the module has no kernel named \"" + name +
                                   "\": a C++ kernel's name is mangled unless it is declared extern \"C\" (with "
                                   "compute.compile, list it in nameExpressions and take it by that expression)",
                               "ERR_CCA_KERNEL_NOT_FOUND");
  }
  if (s != Status::kOk) fail("getting a kernel", s);
  s = k.function_params(out.id, &out.params);
  if (s != Status::kOk && s != Status::kUnsupported) fail("reading a kernel's parameters", s);
  out.params_known = s == Status::kOk;
  s = k.function_attributes(out.id, &out.attributes);
  if (s != Status::kOk) fail("reading a kernel's attributes", s);
  if (functions_.find(out.id) == functions_.end()) functions.push_back(out.id);
  functions_[out.id] = FunctionRecord{name, out.attributes.max_dynamic_shared_bytes};
  return out;
}

std::vector<FunctionId>& DeviceCompute::module_locked(ModuleId module, const char* what) {
  auto it = modules_.find(module);
  if (it == modules_.end()) {
    throw InvalidArgumentError(std::string(what) + ": module " + hex(module) + " is not loaded on device " +
                                   std::to_string(device_.index()) + " (unloaded already?)",
                               "ERR_CCA_INVALID_HANDLE");
  }
  return it->second;
}

const LaunchLimits& DeviceCompute::read_limits_locked(KernelEngine& k) {
  Status s = k.launch_limits(&limits_);
  if (s != Status::kOk) fail("reading the launch limits", s);
  have_limits_ = true;
  return limits_;
}

const DeviceCompute::FunctionRecord& DeviceCompute::function_locked(FunctionId function, const char* what) const {
  auto it = functions_.find(function);
  if (it == functions_.end()) {
    throw InvalidArgumentError(std::string(what) + ": kernel " + hex(function) + " is not loaded on device " +
                                   std::to_string(device_.index()) + " (its module was unloaded?)",
                               "ERR_CCA_INVALID_HANDLE");
  }
  return it->second;
}

FunctionAttributes DeviceCompute::function_attributes(FunctionId function) {
  KernelEngine& k = kernels("reading a kernel's attributes");
  std::lock_guard<std::mutex> lock(mu_);
  function_locked(function, "reading a kernel's attributes");
  FunctionAttributes out;
  Status s = k.function_attributes(function, &out);
  if (s != Status::kOk) fail("reading a kernel's attributes", s);
  return out;
}

LaunchLimits DeviceCompute::launch_limits() {
  KernelEngine& k = kernels("reading the launch limits");
  std::lock_guard<std::mutex> lock(mu_);
  return limits_locked(k);
}

void DeviceCompute::set_max_dynamic_shared(FunctionId function, int bytes) {
  KernelEngine& k = kernels("setting a kernel's dynamic shared memory");
  std::lock_guard<std::mutex> lock(mu_);
  const LaunchLimits& limits = limits_locked(k);
  function_locked(function, "setting a kernel's dynamic shared memory");
  if (bytes < 0 || bytes > limits.max_shared_per_block_optin) {
    throw InvalidArgumentError("dynamic shared memory of " + std::to_string(bytes) + " bytes is beyond device " +
                                   std::to_string(device_.index()) + "'s limit of " +
                                   std::to_string(limits.max_shared_per_block_optin) + " bytes per block",
                               "ERR_CCA_LAUNCH_CONFIG");
  }
  Status s = k.function_set_max_dynamic_shared(function, bytes);
  if (s != Status::kOk) fail("setting a kernel's dynamic shared memory", s);
  FunctionAttributes now;
  s = k.function_attributes(function, &now);
  if (s != Status::kOk) fail("reading a kernel's attributes", s);
  functions_[function].max_dynamic_shared = now.max_dynamic_shared_bytes;
}

void DeviceCompute::check_shape(const FunctionRecord& f, const LaunchLimits& l, const LaunchShape& shape) const {
  static const char* const axis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (shape.grid[i] == 0 || shape.block[i] == 0) {
      throw InvalidArgumentError("launch of " + f.name + ": grid " + dims(shape.grid) + " and block " +
                                     dims(shape.block) + " must be at least 1 in every dimension",
                                 "ERR_CCA_LAUNCH_CONFIG");
    }
    if (shape.block[i] > static_cast<unsigned>(l.max_block[i])) {
      throw InvalidArgumentError("launch of " + f.name + ": block." + axis[i] + " = " + std::to_string(shape.block[i]) +
                                     " is beyond device " + std::to_string(device_.index()) + "'s limit of " +
                                     std::to_string(l.max_block[i]),
                                 "ERR_CCA_LAUNCH_CONFIG");
    }
    if (shape.grid[i] > static_cast<unsigned>(l.max_grid[i])) {
      throw InvalidArgumentError("launch of " + f.name + ": grid." + axis[i] + " = " + std::to_string(shape.grid[i]) +
                                     " is beyond device " + std::to_string(device_.index()) + "'s limit of " +
                                     std::to_string(l.max_grid[i]),
                                 "ERR_CCA_LAUNCH_CONFIG");
    }
  }
  const std::uint64_t threads = std::uint64_t{shape.block[0]} * shape.block[1] * shape.block[2];
  if (threads > static_cast<std::uint64_t>(l.max_threads_per_block)) {
    throw InvalidArgumentError("launch of " + f.name + ": block " + dims(shape.block) + " has " +
                                   std::to_string(threads) + " threads, beyond device " +
                                   std::to_string(device_.index()) + "'s limit of " +
                                   std::to_string(l.max_threads_per_block) + " per block",
                               "ERR_CCA_LAUNCH_CONFIG");
  }
  if (shape.shared_bytes > static_cast<unsigned>(f.max_dynamic_shared)) {
    throw InvalidArgumentError("launch of " + f.name + ": " + std::to_string(shape.shared_bytes) +
                                   " bytes of dynamic shared memory, beyond the kernel's " +
                                   std::to_string(f.max_dynamic_shared) +
                                   "; raise it with kernel.setMaxDynamicSharedMemory(bytes) (up to " +
                                   std::to_string(l.max_shared_per_block_optin) + " on this device)",
                               "ERR_CCA_LAUNCH_CONFIG");
  }
}

namespace {
struct LaunchCall {
  KernelEngine* kernels;
  FunctionId function;
  const LaunchShape* shape;
  StreamId stream;
  const void* params;
  std::size_t param_bytes;
};
Status enqueue_launch(void* context) {
  auto* c = static_cast<LaunchCall*>(context);
  return c->kernels->launch(c->function, *c->shape, c->stream, c->params, c->param_bytes);
}
}  // namespace

void DeviceCompute::launch(FunctionId function, const LaunchShape& shape, StreamId stream, const void* params,
                           std::size_t param_bytes, const BufferUse* uses, std::size_t use_count, bool record) {
  KernelEngine& k = kernels("launching a kernel");
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_shape(function_locked(function, "launching a kernel"), limits_locked(k), shape);
  }
  LaunchCall call{&k, function, &shape, stream, params, param_bytes};
  DeviceWork(allocator_).enqueue_on_buffers(stream, uses, use_count, record, "launching a kernel", enqueue_launch, &call);
}

void DeviceCompute::require_pinned(const void* host, std::size_t bytes, const char* what) const {
  if (!host_.contains(host, bytes)) {
    throw InvalidArgumentError(std::string(what) + ": the host range is not pinned memory from cuda.allocHost() (or "
                                   "was freed); an asynchronous copy needs it, since pageable memory may move before "
                                   "the copy runs. Use copyFrom/copyTo for pageable memory",
                               "ERR_CCA_NOT_PINNED");
  }
}

namespace {
struct CopyCall {
  CopyEngine* copies;
  enum { kToDevice, kToHost, kDevice } kind;
  DevicePtr device_address;
  DevicePtr source_address;  // kDevice only
  void* host;
  std::size_t bytes;
  StreamId stream;
};
Status enqueue_copy(void* context) {
  auto* c = static_cast<CopyCall*>(context);
  switch (c->kind) {
    case CopyCall::kToDevice: return c->copies->memcpy_htod(c->device_address, c->host, c->bytes, c->stream);
    case CopyCall::kToHost: return c->copies->memcpy_dtoh(c->host, c->device_address, c->bytes, c->stream);
    default: return c->copies->memcpy_dtod(c->device_address, c->source_address, c->bytes, c->stream);
  }
}
}  // namespace

void DeviceCompute::copy_to_device_async(const BufferUse& dst, const void* src, StreamId stream, bool record) {
  const char* what = "asynchronous copy to the device";
  require_pinned(src, dst.bytes, what);
  if (dst.bytes == 0) return;
  CopyCall call{&copies_, CopyCall::kToDevice, dst.base + dst.offset, 0, const_cast<void*>(src), dst.bytes, stream};
  DeviceWork(allocator_).enqueue_on_buffers(stream, &dst, 1, record, what, enqueue_copy, &call);
  host_.record_use(src, dst.bytes, device_.index(), stream);
}

void DeviceCompute::copy_to_host_async(void* dst, const BufferUse& src, StreamId stream, bool record) {
  const char* what = "asynchronous copy to the host";
  require_pinned(dst, src.bytes, what);
  if (src.bytes == 0) return;
  CopyCall call{&copies_, CopyCall::kToHost, src.base + src.offset, 0, dst, src.bytes, stream};
  DeviceWork(allocator_).enqueue_on_buffers(stream, &src, 1, record, what, enqueue_copy, &call);
  host_.record_use(dst, src.bytes, device_.index(), stream);
}

void DeviceCompute::copy_device_async(const BufferUse& dst, const BufferUse& src, StreamId stream, bool record) {
  const char* what = "asynchronous copy between device buffers";
  if (dst.bytes != src.bytes) {
    throw InvalidArgumentError(std::string(what) + ": the ranges differ in length (" + std::to_string(src.bytes) +
                                   " and " + std::to_string(dst.bytes) + " bytes)",
                               "ERR_INVALID_ARG_VALUE");
  }
  if (dst.bytes == 0) return;
  const BufferUse both[] = {dst, src};
  CopyCall call{&copies_, CopyCall::kDevice, dst.base + dst.offset, src.base + src.offset, nullptr, dst.bytes, stream};
  DeviceWork(allocator_).enqueue_on_buffers(stream, both, 2, record, what, enqueue_copy, &call);
}

bool DeviceCompute::event_timed_locked(EventId event, const char* what) const {
  auto it = events_.find(event);
  if (it == events_.end()) {
    throw InvalidArgumentError(std::string(what) + ": event " + hex(event) + " does not exist on device " +
                                   std::to_string(device_.index()) + " (destroyed already?)",
                               "ERR_CCA_INVALID_EVENT");
  }
  return it->second;
}

EventId DeviceCompute::event_create(bool timing) {
  EventId event = 0;
  Status s = timing ? device_.event_create_timed(&event) : device_.event_create(&event);
  if (s != Status::kOk) fail("creating an event", s);
  std::lock_guard<std::mutex> lock(mu_);
  events_[event] = timing;
  return event;
}

void DeviceCompute::event_record(EventId event, StreamId stream) {
  allocator_.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(mu_);
  event_timed_locked(event, "recording an event");
  Status s = device_.event_record(event, stream);
  if (s != Status::kOk) fail("recording an event", s);
}

bool DeviceCompute::event_query(EventId event) {
  GraphCaptures(allocator_).refuse_if_capturing("event.done() (an event query)");
  std::lock_guard<std::mutex> lock(mu_);
  event_timed_locked(event, "querying an event");
  Status s = device_.event_query(event);
  if (s == Status::kNotReady) return false;
  if (s != Status::kOk) fail("querying an event", s);
  return true;
}

void DeviceCompute::event_synchronize(EventId event) {
  GraphCaptures(allocator_).refuse_if_capturing("event.synchronize()");
  {
    std::lock_guard<std::mutex> lock(mu_);
    event_timed_locked(event, "synchronizing an event");
  }
  Status s = device_.event_synchronize(event);
  if (s != Status::kOk) fail("synchronizing an event", s);
}

float DeviceCompute::event_elapsed_ms(EventId start, EventId end) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool timed = event_timed_locked(start, "elapsed time") && event_timed_locked(end, "elapsed time");
  if (!timed) {
    throw InvalidArgumentError("elapsed time needs two events made with timing (new compute.Event({ timing: true }))",
                               "ERR_CCA_EVENT_NOT_TIMED");
  }
  float ms = 0;
  Status s = device_.event_elapsed_ms(start, end, &ms);
  if (s == Status::kNotReady) {
    throw InvalidArgumentError("elapsed time: an event's work is not complete yet; synchronize the end event first",
                               "ERR_CCA_EVENT_NOT_READY");
  }
  if (s == Status::kInvalidValue) {
    throw InvalidArgumentError("elapsed time: both events must have been recorded (" + device_.last_error() + ")",
                               "ERR_CCA_EVENT_NOT_READY");
  }
  if (s != Status::kOk) fail("reading the time between two events", s);
  return ms;
}

void DeviceCompute::event_destroy(EventId event) {
  std::lock_guard<std::mutex> lock(mu_);
  event_timed_locked(event, "destroying an event");
  events_.erase(event);
  Status s = device_.event_destroy(event);
  if (s != Status::kOk) fail("destroying an event", s);
}

void DeviceCompute::stream_wait_event(StreamId stream, EventId event) {
  allocator_.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(mu_);
  event_timed_locked(event, "waiting for an event");
  Status s = device_.stream_wait_event(stream, event);
  if (s != Status::kOk) fail("waiting for an event", s);
}

void DeviceCompute::stream_add_callback(StreamId stream, void (*fn)(void*), void* data) {
  allocator_.require_live_stream(stream);
  Status s = device_.stream_add_callback(stream, fn, data);
  if (s != Status::kOk) fail("queuing a host function", s);
}

}  // namespace cca
