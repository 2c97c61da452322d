// A simulated GPU: real bookkeeping of a fixed capacity over a fake address range, so the
// allocator's policy (fragmentation, OOM, retries, stream-ordered reuse) runs unchanged on
// a machine with no GPU. It holds no memory contents, and always says it is simulated.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "../device.h"

namespace cca {

struct SimOptions {
  int devices = 1;
  Bytes capacity_bytes = Bytes{16} << 30;  // per device; PyTorch tests often assume 16 GiB
};

class SimDevice final : public Device, public CopyEngine {
 public:
  SimDevice(int index, Bytes capacity_bytes);

  int index() const override { return index_; }
  std::string name() const override;
  bool is_simulated() const override { return true; }
  std::string last_error() const override;

  Status malloc(DevicePtr* out, Bytes size) override;
  Status free(DevicePtr ptr) override;
  Status mem_get_info(Bytes* free_bytes, Bytes* total_bytes) override;

  Status memcpy_htod(DevicePtr dst, const void* src, Bytes bytes, StreamId stream) override;
  Status memcpy_dtoh(void* dst, DevicePtr src, Bytes bytes, StreamId stream) override;
  Status memset_d8(DevicePtr dst, unsigned char value, Bytes bytes, StreamId stream) override;
  Status memcpy_dtod(DevicePtr dst, DevicePtr src, Bytes bytes, StreamId stream) override;
  Status host_alloc(void** out, Bytes bytes) override;
  Status host_free(void* ptr) override;
  Bytes host_allocations() const;

  Bytes vmm_granularity() override { return Bytes{2} << 20; }
  Status reserve_address(DevicePtr* out, Bytes size) override;
  Status release_address(DevicePtr base, Bytes size) override;
  Status map_memory(DevicePtr at, Bytes size, std::uint64_t* handle) override;
  Status unmap_memory(DevicePtr at, Bytes size, std::uint64_t handle) override;
  Bytes mapped_bytes() const;
  Bytes reservations() const;  // address ranges reserved and not yet released

  Status stream_create(StreamId* out) override;
  Status stream_destroy(StreamId stream) override;
  Status stream_synchronize(StreamId stream) override;
  Status stream_query(StreamId stream) override;
  Status device_synchronize() override;

  Status event_create(EventId* out) override;
  Status event_record(EventId event, StreamId stream) override;
  Status event_query(EventId event) override;
  Status event_synchronize(EventId event) override;
  Status event_destroy(EventId event) override;
  Status event_create_timed(EventId* out) override;
  Status event_elapsed_ms(EventId start, EventId end, float* ms) override;
  Status stream_wait_event(StreamId stream, EventId event) override;
  Status stream_add_callback(StreamId stream, void (*fn)(void*), void* data) override;
  Status stream_capture_info(StreamId stream, CaptureInfo* out) override;

  struct Callback {
    void (*fn)(void*);
    void* data;
  };

  // --- controls for tests and demos (not part of the device contract) ---
  // A held stream keeps the events recorded on it pending until complete_stream() or a
  // synchronize; an unheld stream completes its work at once.
  void hold_stream(StreamId stream, bool held);
  void complete_stream(StreamId stream);
  // The next n device mallocs (and page maps) report kOutOfMemory, as cudaMalloc would on a
  // full GPU; with after_bytes, only once that many more bytes were allocated or mapped
  // (replay: an expandable request that mapped pages before it ran out).
  void fail_next_mallocs(int n, Bytes after_bytes = 0);
  // The next n event queries report kError.
  void fail_next_event_queries(int n);
  // The next n pinned host allocations report kOutOfMemory, as cudaHostAlloc does when the
  // system will lock no more memory.
  void fail_next_host_allocs(int n);
  // A capture's status only, for the allocator's tests: `stream` reports itself captured
  // (with the returned id, or `join`'s id: a side stream forked into that capture) until
  // end_capture_status. The simulator records no graph and runs no kernel; while any of its
  // streams is marked, event records, queries and synchronizations fail as the driver's
  // global capture mode makes them fail (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and are
  // counted, so a test sees an allocator that would have invalidated a real capture.
  std::uint64_t begin_capture_status(StreamId stream, std::uint64_t join = 0);
  void end_capture_status(StreamId stream);
  // Event records, queries and synchronizations refused because a capture was underway.
  Bytes capture_violations() const;
  // Every event record, query and synchronize asked of this device (for "no event work").
  Bytes event_calls() const;
  Bytes used_bytes() const;
  Bytes live_allocations() const;
  Bytes pending_events() const;

 private:
  struct Event {
    StreamId stream = 0;
    bool pending = false;
    bool timed = false;
    std::uint64_t completed_ns = 0;  // steady clock, for elapsed time
  };
  // What a stream waits for before its later work can complete: the events it was told to
  // wait for that were pending then, and host callbacks queued behind its pending work.
  struct StreamWork {
    std::vector<EventId> awaited;
    std::vector<Callback> callbacks;
    std::vector<std::function<void()>> copies;  // copies queued behind held work, in order
  };

  Status fail(Status s, std::string message) const;
  // First fit in the free address ranges: the lowest start with room, or 0 if none.
  DevicePtr take_range_locked(Bytes size);
  // Calls fn(memory, length) for each piece of [ptr, ptr + bytes) in turn, each inside
  // one live allocation or VMM mapping (a range may cross back-to-back mappings). Contents
  // are created (zeroed) on first use: the simulator holds bytes only where copies go.
  // False, with nothing done, if some byte is not backed.
  template <class F>
  bool for_each_piece_locked(DevicePtr ptr, Bytes bytes, F&& fn);
  unsigned char* backing_locked(DevicePtr base, Bytes len);
  // A stream whose new work cannot complete now: held, or waiting for a pending event.
  bool blocked_locked(StreamId stream);
  // Whether new work on the stream must wait: held, waiting for an event, or behind copies
  // already queued.
  bool queued_behind_locked(StreamId stream);
  // A copy or fill: `move` walks its device ranges and says whether they were all backed.
  template <class Move>
  Status copy_locked(StreamId stream, std::initializer_list<std::pair<DevicePtr, Bytes>> ranges, Move&& move);
  void run_copies_locked(StreamId stream);
  bool event_pending_locked(EventId event) const;
  // Completes the stream's work (and first the work it waits for), then whatever that
  // unblocked; the callbacks that became due are appended to `due`, to run unlocked.
  void complete_stream_locked(StreamId stream, std::vector<Callback>& due);
  void complete_unblocked_locked(std::vector<Callback>& due);
  void finish_event_locked(Event& ev);
  bool stream_known_locked(StreamId stream) const;
  // kError, counted, when a capture is underway on this device: the driver refuses the call.
  Status refuse_during_capture_locked(const char* what);
  // Whether a malloc or page map of `size` fails by fault injection (fail_next_mallocs).
  bool injected_failure_locked(Bytes size);

  const int index_;
  const Bytes capacity_;
  const DevicePtr base_;
  mutable std::mutex mu_;
  Bytes used_ = 0;
  std::map<DevicePtr, Bytes> free_ranges_;  // address -> length, coalesced
  std::unordered_map<DevicePtr, Bytes> live_;
  std::unordered_map<DevicePtr, std::vector<unsigned char>> contents_;  // by allocation base
  std::unordered_map<DevicePtr, Bytes> reservations_;  // address ranges (no memory)
  std::unordered_map<std::uint64_t, std::pair<DevicePtr, Bytes>> mappings_;  // handle -> range
  std::uint64_t next_handle_ = 1;
  Bytes mapped_ = 0;
  std::set<StreamId> streams_;
  std::set<StreamId> held_streams_;
  std::unordered_map<EventId, Event> events_;
  std::unordered_map<StreamId, StreamWork> work_;
  std::set<EventId> destroyed_;
  std::set<void*> host_blocks_;  // destroyed while pending: kept until the work completes
  std::uint64_t next_stream_ = 1;
  std::uint64_t next_event_ = 1;
  int fail_mallocs_ = 0;
  Bytes fail_after_bytes_ = 0;
  int fail_event_queries_ = 0;
  int fail_host_allocs_ = 0;
  std::unordered_map<StreamId, std::uint64_t> capturing_;  // stream -> capture id
  Bytes capture_violations_ = 0;
  Bytes event_calls_ = 0;
};

class SimPlatform final : public Platform {
 public:
  explicit SimPlatform(const SimOptions& options);
  std::string backend() const override { return "sim"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  Device& device(int index) override { return *devices_.at(index); }
  CopyEngine& copy_engine(int index) override { return *devices_.at(index); }
  SimDevice& sim_device(int index) { return *devices_.at(index); }

 private:
  std::vector<std::unique_ptr<SimDevice>> devices_;
};

}  // namespace cca
