// The simulated GPU's streams and events: work held back on a held stream (or behind a
// wait for a pending event) completes when the stream is completed or synchronized, and
// with it the events, queued copies and host callbacks behind it. The memory side is
// sim_device.cpp.
#include <algorithm>
#include <atomic>
#include <string>
#include <chrono>

#include "sim_device.h"

namespace cca {

bool SimDevice::queued_behind_locked(StreamId stream) {
  auto w = work_.find(stream);
  return (w != work_.end() && !w->second.copies.empty()) || blocked_locked(stream);
}

void SimDevice::run_copies_locked(StreamId stream) {
  auto w = work_.find(stream);
  if (w == work_.end()) return;
  std::vector<std::function<void()>> copies = std::move(w->second.copies);
  w->second.copies.clear();
  for (auto& c : copies) c();
}

bool SimDevice::stream_known_locked(StreamId stream) const {
  return stream == 0 || streams_.count(stream) > 0;
}

namespace {
std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
void run_callbacks(const std::vector<SimDevice::Callback>& due) {
  for (const auto& c : due) c.fn(c.data);
}
}  // namespace

Status SimDevice::stream_create(StreamId* out) {
  std::lock_guard<std::mutex> lock(mu_);
  // Fake handles shaped like pointers, distinct per device, never 0 (the default stream).
  StreamId id = (static_cast<StreamId>(index_ + 1) << 24) | (next_stream_++ << 4);
  streams_.insert(id);
  *out = id;
  return Status::kOk;
}

Status SimDevice::stream_destroy(StreamId stream) {
  std::vector<Callback> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream == 0 || !streams_.count(stream)) {
      return fail(Status::kInvalidValue, "destroy of an unknown stream");
    }
    // Like cuStreamDestroy: work already queued still completes.
    complete_stream_locked(stream, due);
    held_streams_.erase(stream);
    streams_.erase(stream);
    work_.erase(stream);
  }
  run_callbacks(due);
  return Status::kOk;
}

Status SimDevice::stream_synchronize(StreamId stream) {
  std::vector<Callback> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "unknown stream");
    if (!capturing_.empty()) return refuse_during_capture_locked("cudaStreamSynchronize");
    complete_stream_locked(stream, due);
  }
  run_callbacks(due);
  return Status::kOk;
}

Status SimDevice::stream_query(StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "unknown stream");
  for (const auto& [id, ev] : events_) {
    if (ev.stream == stream && ev.pending) return Status::kNotReady;
  }
  auto w = work_.find(stream);
  if (w != work_.end() && (!w->second.callbacks.empty() || !w->second.copies.empty())) return Status::kNotReady;
  return Status::kOk;
}

Status SimDevice::device_synchronize() {
  std::vector<Callback> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!capturing_.empty()) return refuse_during_capture_locked("cudaDeviceSynchronize");
    for (auto& [stream, w] : work_) {
      for (auto& c : w.copies) c();
      w.copies.clear();
    }
    for (auto& [id, ev] : events_) {
      if (ev.pending) finish_event_locked(ev);
    }
    for (auto& [stream, w] : work_) {
      due.insert(due.end(), w.callbacks.begin(), w.callbacks.end());
      w = StreamWork{};
    }
  }
  run_callbacks(due);
  return Status::kOk;
}

Status SimDevice::event_create(EventId* out) {
  std::lock_guard<std::mutex> lock(mu_);
  EventId id = next_event_++;
  events_.emplace(id, Event{});
  *out = id;
  return Status::kOk;
}

Status SimDevice::event_create_timed(EventId* out) {
  std::lock_guard<std::mutex> lock(mu_);
  EventId id = next_event_++;
  Event ev;
  ev.timed = true;
  events_.emplace(id, ev);
  *out = id;
  return Status::kOk;
}

Status SimDevice::event_record(EventId event, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  ++event_calls_;
  if (!capturing_.empty()) return refuse_during_capture_locked("cudaEventRecord");
  auto it = events_.find(event);
  if (it == events_.end() || destroyed_.count(event)) return fail(Status::kInvalidValue, "record of an unknown event");
  if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "record on an unknown stream");
  it->second.stream = stream;
  it->second.pending = blocked_locked(stream);
  if (!it->second.pending) finish_event_locked(it->second);
  return Status::kOk;
}

Status SimDevice::event_query(EventId event) {
  std::lock_guard<std::mutex> lock(mu_);
  ++event_calls_;
  if (!capturing_.empty()) return refuse_during_capture_locked("cudaEventQuery");
  if (fail_event_queries_ > 0) {
    --fail_event_queries_;
    return fail(Status::kError, "simulated cudaEventQuery failure (fault injection)");
  }
  auto it = events_.find(event);
  if (it == events_.end() || destroyed_.count(event)) return fail(Status::kInvalidValue, "query of an unknown event");
  return it->second.pending ? Status::kNotReady : Status::kOk;
}

Status SimDevice::event_synchronize(EventId event) {
  std::vector<Callback> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++event_calls_;
    if (!capturing_.empty()) return refuse_during_capture_locked("cudaEventSynchronize");
    auto it = events_.find(event);
    if (it == events_.end()) return fail(Status::kInvalidValue, "synchronize of an unknown event");
    // Waiting on an event means the work before it ran: the simulated stream catches up.
    if (it->second.pending) complete_stream_locked(it->second.stream, due);
  }
  run_callbacks(due);
  return Status::kOk;
}

Status SimDevice::event_destroy(EventId event) {
  std::lock_guard<std::mutex> lock(mu_);
  // Like cuEventDestroy: a stream waiting for it still waits for the work it stood for.
  auto it = events_.find(event);
  if (it == events_.end()) return fail(Status::kInvalidValue, "destroy of an unknown event");
  if (it->second.pending) {
    destroyed_.insert(event);
  } else {
    events_.erase(it);
  }
  return Status::kOk;
}

Status SimDevice::event_elapsed_ms(EventId start, EventId end, float* ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto a = events_.find(start);
  auto b = events_.find(end);
  if (a == events_.end() || b == events_.end() || destroyed_.count(start) || destroyed_.count(end)) {
    return fail(Status::kInvalidValue, "elapsed time of an unknown event");
  }
  if (!a->second.timed || !b->second.timed) {
    return fail(Status::kInvalidValue, "elapsed time of an event created without timing");
  }
  if (a->second.pending || b->second.pending) return fail(Status::kNotReady, "an event is not complete yet");
  if (a->second.completed_ns == 0 || b->second.completed_ns == 0) {
    return fail(Status::kInvalidValue, "elapsed time of an event that was never recorded");
  }
  *ms = static_cast<float>((static_cast<double>(b->second.completed_ns) - static_cast<double>(a->second.completed_ns)) /
                           1e6);
  return Status::kOk;
}

Status SimDevice::stream_wait_event(StreamId stream, EventId event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "wait on an unknown stream");
  auto it = events_.find(event);
  if (it == events_.end() || destroyed_.count(event)) return fail(Status::kInvalidValue, "wait for an unknown event");
  // An event recorded on this very stream is ordered already; one not pending is done.
  if (it->second.pending && it->second.stream != stream) work_[stream].awaited.push_back(event);
  return Status::kOk;
}

Status SimDevice::stream_add_callback(StreamId stream, void (*fn)(void*), void* data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "host function on an unknown stream");
    bool behind = blocked_locked(stream);
    for (const auto& [id, ev] : events_) behind = behind || (ev.stream == stream && ev.pending);
    auto w = work_.find(stream);
    behind = behind || (w != work_.end() && (!w->second.callbacks.empty() || !w->second.copies.empty()));
    if (behind) {
      work_[stream].callbacks.push_back(Callback{fn, data});
      return Status::kOk;
    }
  }
  fn(data);  // nothing queued before it: it runs now, as the driver would run it at once
  return Status::kOk;
}

bool SimDevice::event_pending_locked(EventId event) const {
  auto it = events_.find(event);
  return it != events_.end() && it->second.pending;
}

bool SimDevice::blocked_locked(StreamId stream) {
  if (held_streams_.count(stream)) return true;
  auto w = work_.find(stream);
  if (w == work_.end()) return false;
  auto& awaited = w->second.awaited;
  awaited.erase(std::remove_if(awaited.begin(), awaited.end(), [&](EventId e) { return !event_pending_locked(e); }),
                awaited.end());
  return !awaited.empty();
}

void SimDevice::finish_event_locked(Event& ev) {
  ev.pending = false;
  ev.completed_ns = steady_ns();
}

void SimDevice::complete_stream_locked(StreamId stream, std::vector<Callback>& due) {
  auto w = work_.find(stream);
  if (w != work_.end()) {
    // The stream could not have run past its waits: what it waits for completes first.
    std::vector<EventId> awaited = std::move(w->second.awaited);
    w->second.awaited.clear();
    for (EventId e : awaited) {
      auto it = events_.find(e);
      if (it != events_.end() && it->second.pending && it->second.stream != stream) {
        complete_stream_locked(it->second.stream, due);
      }
    }
  }
  run_copies_locked(stream);
  for (auto& [id, ev] : events_) {
    if (ev.stream == stream && ev.pending) finish_event_locked(ev);
  }
  w = work_.find(stream);
  if (w != work_.end()) {
    due.insert(due.end(), w->second.callbacks.begin(), w->second.callbacks.end());
    w->second.callbacks.clear();
  }
  complete_unblocked_locked(due);
}

// Streams that were blocked only by what just completed catch up too (they are not held).
void SimDevice::complete_unblocked_locked(std::vector<Callback>& due) {
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& [stream, w] : work_) {
      if (held_streams_.count(stream) || w.awaited.empty()) continue;
      if (blocked_locked(stream)) continue;
      std::vector<std::function<void()>> copies = std::move(w.copies);
      w.copies.clear();
      for (auto& c : copies) c();
      for (auto& [id, ev] : events_) {
        if (ev.stream == stream && ev.pending) finish_event_locked(ev);
      }
      due.insert(due.end(), w.callbacks.begin(), w.callbacks.end());
      w.callbacks.clear();
      progress = true;
    }
  }
  for (auto it = destroyed_.begin(); it != destroyed_.end();) {
    if (!event_pending_locked(*it)) {
      events_.erase(*it);
      it = destroyed_.erase(it);
    } else {
      ++it;
    }
  }
}

void SimDevice::hold_stream(StreamId stream, bool held) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held) {
    held_streams_.insert(stream);
  } else {
    held_streams_.erase(stream);
  }
}

void SimDevice::complete_stream(StreamId stream) {
  std::vector<Callback> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    complete_stream_locked(stream, due);
  }
  run_callbacks(due);
}

void SimDevice::fail_next_event_queries(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_event_queries_ = n < 0 ? 0 : n;
}

Bytes SimDevice::pending_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [id, ev] : events_) n += ev.pending ? 1 : 0;
  return n;
}

}  // namespace cca

namespace cca {

Status SimDevice::refuse_during_capture_locked(const char* what) {
  ++capture_violations_;
  return fail(Status::kError, std::string(what) +
                                  " while a stream of this device is being captured: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED "
                                  "(a real driver would also invalidate the capture)");
}

Status SimDevice::stream_capture_info(StreamId stream, CaptureInfo* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stream_known_locked(stream)) return fail(Status::kInvalidValue, "capture info of an unknown stream");
  auto it = capturing_.find(stream);
  *out = it == capturing_.end() ? CaptureInfo{} : CaptureInfo{true, it->second};
  return Status::kOk;
}

std::uint64_t SimDevice::begin_capture_status(StreamId stream, std::uint64_t join) {
  // Ids unique in the process, as the driver's are.
  static std::atomic<std::uint64_t> next_capture{1};
  std::lock_guard<std::mutex> lock(mu_);
  const std::uint64_t id = join != 0 ? join : next_capture.fetch_add(1);
  capturing_[stream] = id;
  return id;
}

void SimDevice::end_capture_status(StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  capturing_.erase(stream);
}

Bytes SimDevice::capture_violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capture_violations_;
}

Bytes SimDevice::event_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return event_calls_;
}

}  // namespace cca
