// The device contract: the primitives the allocator core needs from a GPU (memory, virtual
// memory, streams, events), and apart from it the copy engine that only the allocator's
// bounds-checked copy path (allocator/policy/facets/sync_copies.cpp) reaches.
// Every primitive returns a Status instead of throwing, because retry policy (release the
// cache and try again) belongs to the allocator, not to the backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "../common/errors.h"
#include "../common/types.h"

namespace cca {

enum class Status {
  kOk,
  kOutOfMemory,   // the device has no room: the allocator may release its cache and retry
  kNotReady,      // an event or stream has work outstanding
  kInvalidValue,  // an unknown handle or a bad argument reached the backend
  kError,         // any other device failure: the allocator turns it into a DeviceError
  kNotFound,      // a named thing (a kernel in a module) does not exist
  kUnsupported,   // this backend or driver cannot do it (no kernels on the simulator)
  // A kernel faulted (illegal address, trap, assert): the context is unusable and every
  // later call on it fails the same way, as a real driver's sticky errors do.
  kFault,
  // A stream capture was invalidated by a call the capture forbids (the graph is lost).
  kCaptureInvalidated,
};

const char* status_name(Status s);

// One GPU. Methods may be called from several threads; backends synchronize internally.
// Preconditions: sizes are non-zero multiples of 512; output pointers are non-null.
class Device {
 public:
  virtual ~Device() = default;

  virtual int index() const = 0;
  virtual std::string name() const = 0;
  virtual bool is_simulated() const = 0;
  // Compute capability (major, minor); (0, 0) for the simulator.
  virtual std::pair<int, int> compute_capability() const { return {0, 0}; }
  // A short description of the last failure on this thread, for error messages.
  virtual std::string last_error() const = 0;

  virtual Status malloc(DevicePtr* out, Bytes size) = 0;
  virtual Status free(DevicePtr ptr) = 0;
  virtual Status mem_get_info(Bytes* free_bytes, Bytes* total_bytes) = 0;

  virtual Status stream_create(StreamId* out) = 0;
  virtual Status stream_destroy(StreamId stream) = 0;
  virtual Status stream_synchronize(StreamId stream) = 0;
  virtual Status stream_query(StreamId stream) = 0;  // kOk when its work is done, kNotReady otherwise
  virtual Status device_synchronize() = 0;

  // Virtual memory, for expandable segments: reserve an address range, back pages of it
  // with physical memory (map) and give them back (unmap), release the range. Sizes and
  // offsets are multiples of vmm_granularity(); 0 means the backend has no VMM.
  // map_memory reports kOutOfMemory when the device has no room.
  virtual Bytes vmm_granularity() = 0;
  virtual Status reserve_address(DevicePtr* out, Bytes size) = 0;
  virtual Status release_address(DevicePtr base, Bytes size) = 0;
  virtual Status map_memory(DevicePtr at, Bytes size, std::uint64_t* handle) = 0;
  virtual Status unmap_memory(DevicePtr at, Bytes size, std::uint64_t handle) = 0;

  // Events carry no timing; they only tell when the work recorded before them is done.
  virtual Status event_create(EventId* out) = 0;
  virtual Status event_record(EventId event, StreamId stream) = 0;
  virtual Status event_query(EventId event) = 0;  // kOk when complete, kNotReady otherwise
  virtual Status event_synchronize(EventId event) = 0;
  virtual Status event_destroy(EventId event) = 0;

  // For user code, beside the allocator's own events: an event that also records when its
  // work completed, the milliseconds between two such events (kNotReady until both are
  // complete, kInvalidValue for an event made by event_create), a stream that waits for
  // an event before its later work, and a host function run once the work queued before it
  // is done (on a thread of the backend's choosing; it must not call the device).
  virtual Status event_create_timed(EventId* out) = 0;
  virtual Status event_elapsed_ms(EventId start, EventId end, float* ms) = 0;
  virtual Status stream_wait_event(StreamId stream, EventId event) = 0;
  virtual Status stream_add_callback(StreamId stream, void (*fn)(void*), void* data) = 0;

  // Stream capture (CUDA graphs), as the allocator needs to see it: whether `stream` is being
  // captured into a graph, and the capture's id (unique in the process while it lasts), so
  // that an allocation on any stream of that capture (forked side streams included) goes to
  // the capture's private pool. Must not disturb a capture (no synchronization, no event).
  // Backends that cannot capture report no stream as capturing.
  struct CaptureInfo {
    bool active = false;
    std::uint64_t id = 0;
  };
  virtual Status stream_capture_info(StreamId /*stream*/, CaptureInfo* out) {
    *out = CaptureInfo{};
    return Status::kOk;
  }

  // Page-locked host memory, usable by every device's copies (the host caching allocator's
  // source of memory). kOutOfMemory when the system refuses.
  virtual Status host_alloc(void** out, Bytes bytes) = 0;
  virtual Status host_free(void* ptr) = 0;

  // CUDA IPC: a 64-byte handle for the device allocation that starts at `base` (one malloc
  // gave it); in another process, that allocation mapped (`ipc_open`, at its start) and
  // unmapped (`ipc_close`). kUnsupported where memory cannot be shared (the simulator).
  static constexpr Bytes kIpcHandleBytes = 64;
  virtual Status ipc_handle(DevicePtr /*base*/, unsigned char* /*out*/) { return Status::kUnsupported; }
  virtual Status ipc_open(const unsigned char* /*handle*/, DevicePtr* /*out*/) { return Status::kUnsupported; }
  virtual Status ipc_close(DevicePtr /*mapped*/) { return Status::kUnsupported; }
};

// "WHAT failed on device N: STATUS (the backend's last error)": the one wording of every
// DeviceError; after a kernel fault it adds that the context is lost.
std::string device_failure(const Device& device, const std::string& what, Status s);
// The DeviceError for a failed device call: ERR_CCA_DEVICE_FAULT after a kernel fault (the
// process must restart to use the GPU again), ERR_CCA_DEVICE otherwise.
DeviceError device_error(const Device& device, const std::string& what, Status s);

// Copies and fills of one device, queued on `stream` (the caller synchronizes before
// reusing host memory). `dst`/`src` ranges must lie inside one live allocation: only the
// allocator, which checks that, is given a CopyEngine.
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  virtual Status memcpy_htod(DevicePtr dst, const void* src, Bytes bytes, StreamId stream) = 0;
  virtual Status memcpy_dtoh(void* dst, DevicePtr src, Bytes bytes, StreamId stream) = 0;
  virtual Status memset_d8(DevicePtr dst, unsigned char value, Bytes bytes, StreamId stream) = 0;
  virtual Status memcpy_dtod(DevicePtr dst, DevicePtr src, Bytes bytes, StreamId stream) = 0;
};

class KernelEngine;  // kernels.h
class GraphEngine;   // graphs.h
class BlasEngine;    // blas.h

// A set of devices of one backend.
class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string backend() const = 0;  // "sim" or "cuda"
  virtual int device_count() const = 0;
  virtual Device& device(int index) = 0;
  virtual CopyEngine& copy_engine(int index) = 0;
  // The device's kernel engine, or nullptr where the backend runs no kernels (the sim).
  virtual KernelEngine* kernel_engine(int /*index*/) { return nullptr; }
  // The device's graph engine, or nullptr where the backend cannot capture (the sim).
  virtual GraphEngine* graph_engine(int /*index*/) { return nullptr; }
  // The device's BLAS engine, or nullptr where the backend has none (the sim).
  virtual BlasEngine* blas_engine(int /*index*/) { return nullptr; }
};

}  // namespace cca
