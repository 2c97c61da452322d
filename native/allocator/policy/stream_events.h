// Deferred frees across streams. A block used by other streams (record_stream) is not
// reusable when the caller frees it: the work those streams queued may still read it.
// One event is recorded on each such stream; the block becomes free when all complete.
// Events are queried in FIFO order per stream, like PyTorch's process_events. This class
// talks to the device and keeps the queues; the blocks' event counts are the ledger's.
#pragma once
#include <cstddef>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../device/device.h"
#include "../state/block.h"
#include "../../common/errors.h"

namespace cca {

class StreamEvents {
 public:
  explicit StreamEvents(Device& device) : device_(device) {}
  ~StreamEvents();
  StreamEvents(const StreamEvents&) = delete;
  StreamEvents& operator=(const StreamEvents&) = delete;

  // Records an event on each stream for `block`; returns how many.
  // All or nothing: on a device failure no event stays queued and DeviceError is thrown.
  int record(const Block* block, const std::vector<StreamId>& streams);

  // Retires completed events; calls done(block) for each, in order.
  // Throws DeviceError if a query fails; events retired before that stay retired.
  template <class F>
  void process(F&& done) {
    if (pending_ == 0) return;
    for (auto& [stream, queue] : queues_) {
      while (!queue.empty()) {
        auto [event, block] = queue.front();
        Status s = device_.event_query(event);
        if (s == Status::kNotReady) break;
        if (s != Status::kOk) fail("cudaEventQuery", s);
        queue.pop_front();
        retire(event, block, done);
      }
    }
  }

  // Waits for every queued event, then retires it.
  template <class F>
  void synchronize_all(F&& done) {
    for (auto& [stream, queue] : queues_) {
      while (!queue.empty()) {
        auto [event, block] = queue.front();
        Status s = device_.event_synchronize(event);
        if (s != Status::kOk) fail("cudaEventSynchronize", s);
        queue.pop_front();
        retire(event, block, done);
      }
    }
  }

  std::size_t pending() const { return pending_; }

 private:
  template <class F>
  void retire(EventId event, const Block* block, F& done) {
    spare_events_.push_back(event);
    --pending_;
    done(block);
  }
  [[noreturn]] void fail(const char* what, Status s) const;

  Device& device_;
  std::unordered_map<StreamId, std::deque<std::pair<EventId, const Block*>>> queues_;
  std::vector<EventId> spare_events_;  // created once, reused: event creation is a driver call
  std::size_t pending_ = 0;
};

}  // namespace cca
