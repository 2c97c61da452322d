#include "stream_events.h"

#include <string>

namespace cca {

StreamEvents::~StreamEvents() {
  for (auto& [stream, queue] : queues_) {
    for (auto& [event, block] : queue) device_.event_destroy(event);
  }
  for (EventId e : spare_events_) device_.event_destroy(e);
}

void StreamEvents::fail(const char* what, Status s) const { throw device_error(device_, what, s); }

int StreamEvents::record(const Block* block, const std::vector<StreamId>& streams) {
  std::vector<EventId> recorded;
  recorded.reserve(streams.size());
  for (StreamId stream : streams) {
    EventId event = 0;
    Status s = Status::kOk;
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else {
      s = device_.event_create(&event);
    }
    if (s == Status::kOk) s = device_.event_record(event, stream);
    if (s != Status::kOk) {
      if (event != 0) spare_events_.push_back(event);
      for (EventId e : recorded) spare_events_.push_back(e);
      fail("cudaEventRecord", s);
    }
    recorded.push_back(event);
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    queues_[streams[i]].emplace_back(recorded[i], block);
  }
  pending_ += streams.size();
  return static_cast<int>(streams.size());
}

}  // namespace cca
