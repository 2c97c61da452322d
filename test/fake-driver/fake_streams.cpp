// The fake driver's streams and events. Each stream runs its work (copies, kernels, event
// records, waits, host functions) in order: at once when nothing blocks it, else when it
// is completed. A held stream runs nothing until completed (fake_cuda_complete_stream, or
// a synchronize, which stands for "the GPU caught up"), so tests can hold work back and
// see what the allocator does meanwhile. Host functions run on the calling thread.
#include <chrono>

#include "fake_state.h"

using namespace fake;

namespace fake {
int fail_queries = 0;
// Destroyed events, kept (queued records and waits may still name them) and reachable, so
// a leak checker does not count them.
std::set<Event*>& retired_events = *new std::set<Event*>;
}  // namespace fake

namespace {

bool front_ready(const Stream* s) {
  if (s->queue.empty()) return false;
  const Op& op = s->queue.front();
  return (op.wait_for == nullptr || !op.wait_for->pending) && (!op.ready || op.ready());
}

// Runs what can run on every unheld stream until nothing more can.
void pump() {
  for (bool progress = true; progress;) {
    progress = false;
    auto drain = [&](Stream* s) {
      while (!s->held && front_ready(s)) {
        Op op = std::move(s->queue.front());
        s->queue.pop_front();
        if (op.run) op.run();
        progress = true;
      }
    };
    drain(&default_stream);
    for (Stream* s : streams) drain(s);
  }
}

Event* event_of(void* e) {
  auto* ev = static_cast<Event*>(e);
  return events.count(ev) ? ev : nullptr;
}

}  // namespace

std::uint64_t fake::now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

Stream* fake::stream_of(void* handle) {
  if (handle == nullptr) return &default_stream;
  auto* s = static_cast<Stream*>(handle);
  return streams.count(s) ? s : nullptr;
}

void fake::enqueue(Stream* s, Op op) {
  if (s->capture != nullptr) {
    if (!s->capture->invalidated) s->capture->ops.push_back(std::move(op));
    return;
  }
  s->queue.push_back(std::move(op));
  pump();
}

void fake::complete(Stream* s) {
  while (!s->queue.empty()) {
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    // The stream could not have run past a wait: what it waits for completes first. (A kernel
    // spinning on a flag nobody sets would hang a GPU here; the fake runs it anyway.)
    if (op.wait_for != nullptr && op.wait_for->pending && op.wait_for->stream != nullptr && op.wait_for->stream != s) {
      complete(op.wait_for->stream);
    }
    if (op.run) op.run();
  }
  pump();
}

FAKE CUresult cuStreamCreate(void** s, unsigned) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  auto* st = new Stream{};
  st->device = current_device;
  streams.insert(st);
  *s = st;
  return kSuccess;
}

FAKE CUresult cuStreamDestroy_v2(void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* st = static_cast<Stream*>(s);
  if (!streams.count(st)) return kInvalidHandle;
  complete(st);  // work already queued still completes
  streams.erase(st);
  for (Event* e : events) {
    if (e->stream == st) e->stream = nullptr;
  }
  delete st;
  return kSuccess;
}

FAKE CUresult cuStreamSynchronize(void* s) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (st->capture != nullptr) {
    st->capture->invalidated = true;
    return kCaptureUnsupported;
  }
  if (refused_by_capture()) return kCaptureUnsupported;
  complete(st);
  FAKE_STICKY();
  return kSuccess;
}

FAKE CUresult cuStreamQuery(void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (st->capture != nullptr) {
    st->capture->invalidated = true;
    return kCaptureUnsupported;
  }
  if (refused_by_capture()) return kCaptureUnsupported;
  return st->queue.empty() ? kSuccess : kNotReady;
}

FAKE CUresult cuStreamWaitEvent(void* s, void* e, unsigned) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  Event* ev = event_of(e);
  if (st == nullptr || ev == nullptr) return kInvalidHandle;
  if (ev->captured_in != nullptr && ev->captured_in->origin != nullptr) {
    // An event of a live capture: a stream that waits for it joins that capture (a fork).
    if (st->capture == nullptr) st->capture = ev->captured_in;
    return st->capture == ev->captured_in ? kSuccess : kCaptureInvalidated;
  }
  if (ev->captured) return kCapturedEvent;  // recorded in a capture that ended
  if (ev->pending) enqueue(st, Op{nullptr, ev});
  return kSuccess;
}

FAKE CUresult cuLaunchHostFunc(void* s, void (*fn)(void*), void* data) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  enqueue(st, Op{[=] { fn(data); }});
  return kSuccess;
}

FAKE CUresult cuEventCreate(void** e, unsigned flags) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* ev = new Event{};
  ev->timed = (flags & 0x2) == 0;  // CU_EVENT_DISABLE_TIMING
  events.insert(ev);
  *e = ev;
  return kSuccess;
}

FAKE CUresult cuEventRecord(void* e, void* s) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Event* ev = event_of(e);
  Stream* st = stream_of(s);
  if (ev == nullptr || st == nullptr) return kInvalidHandle;
  fake::note_event_call();
  if (st->capture != nullptr) {
    // Recorded inside the capture: a node of the graph, not work of the stream.
    ev->captured_in = st->capture;
    ev->captured = true;
    ev->recorded = true;
    enqueue(st, Op{[ev] { ev->completed_ns = now_ns(); }});
    return kSuccess;
  }
  ev->captured_in = nullptr;
  ev->captured = false;
  ev->stream = st;
  ev->pending = true;
  ev->recorded = true;
  enqueue(st, Op{[ev] {
    ev->pending = false;
    ev->completed_ns = now_ns();
  }});
  return kSuccess;
}

FAKE CUresult cuEventQuery(void* e) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (fail_queries > 0) {
    --fail_queries;
    return kLaunchFailed;
  }
  FAKE_STICKY();
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  fake::note_event_call();
  if (ev->captured_in != nullptr && ev->captured_in->origin != nullptr) {
    ev->captured_in->invalidated = true;  // querying a live capture's event
    return kCaptureUnsupported;
  }
  if (ev->captured) return kCapturedEvent;
  if (refused_by_capture()) return kCaptureUnsupported;
  return ev->pending ? kNotReady : kSuccess;
}

FAKE CUresult cuEventSynchronize(void* e) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  fake::note_event_call();
  if (ev->captured_in != nullptr && ev->captured_in->origin != nullptr) {
    ev->captured_in->invalidated = true;
    return kCaptureUnsupported;
  }
  if (ev->captured) return kCapturedEvent;
  if (refused_by_capture()) return kCaptureUnsupported;
  if (ev->pending && ev->stream != nullptr) complete(ev->stream);  // the stream caught up
  FAKE_STICKY();
  return kSuccess;
}

FAKE CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Event* start = event_of(a);
  Event* end = event_of(b);
  if (start == nullptr || end == nullptr || !start->timed || !end->timed) return kInvalidHandle;
  if (!start->recorded || !end->recorded) return kInvalidHandle;
  if (start->pending || end->pending) return kNotReady;
  *ms = static_cast<float>((static_cast<double>(end->completed_ns) - static_cast<double>(start->completed_ns)) / 1e6);
  return kSuccess;
}

FAKE CUresult cuEventDestroy_v2(void* e) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Event* ev = event_of(e);
  if (ev == nullptr) return kInvalidHandle;
  events.erase(ev);
  ev->destroyed = true;  // kept: a queued record or wait may still name it
  retired_events.insert(ev);
  return kSuccess;
}

// --- switches for tests ---
FAKE void fake_cuda_fail_next_event_queries(int n) {
  std::lock_guard<std::mutex> lock(mu);
  fail_queries = n;
}

FAKE void fake_cuda_hold_stream(void* s, int held) {
  std::lock_guard<std::mutex> lock(mu);
  if (Stream* st = stream_of(s)) {
    st->held = held != 0;
    if (!st->held) pump();
  }
}

FAKE void fake_cuda_complete_stream(void* s) {
  std::lock_guard<std::mutex> lock(mu);
  if (Stream* st = stream_of(s)) complete(st);
}
