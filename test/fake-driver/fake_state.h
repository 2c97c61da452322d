// The fake driver's shared state (fake_cuda.cpp: devices and memory; fake_streams.cpp:
// streams, events and their work queues; fake_kernels.cpp: modules and CPU kernels).
// Everything is guarded by `mu` and heap-allocated and never destroyed, like a real
// driver's state: a caller releasing memory during process exit must not find it gone.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

namespace fake {

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3, kInvalidImage = 200,
                   kNoDevice = 100, kInvalidDevice = 101, kInvalidHandle = 400, kNotFound = 500, kNotReady = 600,
                   kIllegalAddress = 700, kLaunchFailed = 719, kInvalidContext = 201;

struct Event;
struct Capture;

struct Ctx {
  int device;
  bool primary;
};

// One unit of a stream's work, run in order. A wait does nothing but block the stream
// until its event is complete; `ready`, when set, holds the op back until it says so (a
// kernel spinning on a flag in memory).
struct Op {
  std::function<void()> run;
  Event* wait_for = nullptr;
  std::function<bool()> ready;
};

struct Stream {
  int device = 0;
  bool held = false;  // a held stream runs nothing until completed (fake_cuda_complete_stream)
  std::deque<Op> queue;
  Capture* capture = nullptr;  // the capture this stream's work goes into (fake_graphs.cpp)
};

// A stream capture underway: the work of its streams, in the order it was issued (a valid
// order for a graph whose forks and joins the host issued in order), and whether a call it
// forbids invalidated it.
struct Capture {
  std::uint64_t id = 0;
  Stream* origin = nullptr;
  int mode = 0;  // CUstreamCaptureMode: 0 global, 1 thread-local, 2 relaxed
  std::thread::id thread;  // the thread that began it (a thread-local capture binds only it)
  bool invalidated = false;
  std::deque<Op> ops;
};

struct Event {
  Stream* stream = nullptr;
  bool pending = false;
  bool timed = true;
  bool recorded = false;
  bool destroyed = false;  // destroyed events are never freed: queued work may still name them
  std::uint64_t completed_ns = 0;
  Capture* captured_in = nullptr;  // last recorded inside this capture (live or ended)
  bool captured = false;           // last recorded inside a capture
};

extern std::mutex& mu;
extern std::set<Stream*>& streams;  // created streams; the default stream is not in it
extern std::set<Event*>& events;    // live events
extern Stream& default_stream;
extern thread_local int current_device;
extern thread_local Ctx* current_context;
extern std::atomic<std::uint64_t> foreign_context_calls;
// Counts a call that allocates or queues work made while the caller's own context (not a
// primary one) is current.
void note_context();
// Set when a kernel faults: every later call returns it, as a real context's sticky error.
extern CUresult sticky;

// The stream a handle names (nullptr: the default stream), or nullptr if unknown.
Stream* stream_of(void* handle);
// Stream capture (fake_graphs.cpp). While a capture forbids it (global mode, a thread not
// relaxed), a synchronizing or querying call invalidates the capture and returns
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; this says whether it must, and does it. The caller
// holds `mu`.
constexpr CUresult kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCapturedEvent = 907, kIllegalState = 401;
bool refused_by_capture();
// Counts an event record, query or synchronize made while any capture is underway.
void note_event_call();
// Queues work on a stream and runs whatever can run now; the caller holds `mu`. On a
// capturing stream the work goes into the capture instead.
void enqueue(Stream* s, Op op);
// Runs all of a stream's work now (what it waits for first), then whatever that unblocked.
void complete(Stream* s);
// Whether [p, p + n) lies inside one live allocation or mapped memory; the caller holds `mu`.
bool inside(unsigned long long p, std::size_t n);
std::uint64_t now_ns();
// Every driver entry point counts itself (fake_cuda_driver_calls()), so a test can check that
// a path makes no driver call at all (a cached allocation, for one).
void count_call();
// Device memory (fake_ipc.cpp): shared, memfd-backed pages a second process can map; the
// caller holds `mu`.
void* backing_alloc(std::size_t size);
void backing_free(void* p);
// Whether [p, p + n) lies in one mapping opened from another process.
bool imported_span(unsigned long long p, std::size_t n);
void raise_descriptor_limit();

}  // namespace fake

#define FAKE extern "C" __attribute__((visibility("default")))
#define FAKE_STICKY() \
  do {                                       \
    if (fake::sticky != fake::kSuccess) return fake::sticky; \
  } while (0)
