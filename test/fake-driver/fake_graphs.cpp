// The fake driver's stream capture and graphs. A capture collects the work of its streams
// (kernels, copies, fills, event records) in issue order instead of running it; a stream
// that waits for an event recorded in the capture joins it. cuStreamEndCapture turns the
// collected work into a graph; a launch queues one op on the stream that runs the graph's
// work in order, on the data as it is then (a replay reads its inputs anew, as a GPU's does).
//
// The real driver's refusals that matter to an allocator are kept: while a global-mode
// capture is underway (or a thread-local one, on its own thread), unless the calling thread
// made itself relaxed with cuThreadExchangeStreamCaptureMode, cuMemAlloc, cuMemFree, event queries and
// synchronizations, and stream queries and synchronizations return
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the capture; so does querying or
// synchronizing an event recorded inside a live capture, and a synchronize of a capturing
// stream. cuStreamEndCapture of an invalidated capture returns
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph. Event calls made while a capture is
// underway are counted (fake_cuda_event_calls_during_capture), so a test can check that the
// allocator made none.
#include <atomic>
#include <vector>

#include "fake_state.h"

using namespace fake;

namespace {

struct Graph {
  std::vector<std::function<void()>> work;
};
struct Exec {
  std::vector<std::function<void()>> work;
};

std::set<Capture*>& live_captures = *new std::set<Capture*>;
std::set<Capture*>& ended_captures = *new std::set<Capture*>;  // kept: events may still name them
std::set<Graph*>& graphs = *new std::set<Graph*>;
std::set<Exec*>& execs = *new std::set<Exec*>;
std::atomic<std::uint64_t> next_capture_id{1};
std::atomic<std::uint64_t> event_calls_during_capture{0};
std::atomic<std::uint64_t> graph_launches{0};
thread_local int thread_mode = 0;  // this thread's CUstreamCaptureMode

Capture* capture_of(Stream* st) { return st == nullptr ? nullptr : st->capture; }

void leave_capture(Capture* c) {
  for (Stream* s : streams) {
    if (s->capture == c) s->capture = nullptr;
  }
  c->origin = nullptr;
  live_captures.erase(c);
  ended_captures.insert(c);
}

}  // namespace

bool fake::refused_by_capture() {
  if (thread_mode == 2) return false;  // relaxed: nothing is forbidden to this thread
  bool refused = false;
  // Global: forbidden to every thread; thread-local: to the thread that began it.
  for (Capture* c : live_captures) {
    if (c->mode == 0 || (c->mode == 1 && c->thread == std::this_thread::get_id())) {
      c->invalidated = true;
      refused = true;
    }
  }
  return refused;
}

void fake::note_event_call() {
  if (!live_captures.empty()) event_calls_during_capture.fetch_add(1);
}

FAKE CUresult cuStreamBeginCapture_v2(void* s, int mode) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  if (s == nullptr) return kCaptureUnsupported;  // the legacy stream cannot be captured
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (mode < 0 || mode > 2) return kInvalidValue;
  if (st->capture != nullptr) return kIllegalState;
  auto* c = new Capture{};
  c->id = next_capture_id.fetch_add(1);
  c->origin = st;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  st->capture = c;
  live_captures.insert(c);
  return kSuccess;
}

FAKE CUresult cuStreamEndCapture(void* s, void** graph) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  Capture* c = capture_of(st);
  if (c == nullptr) return kIllegalState;
  if (c->origin != st) return kCaptureUnsupported;  // must end on the stream it began on (UNMATCHED in the driver)
  *graph = nullptr;
  const bool invalidated = c->invalidated;
  std::vector<std::function<void()>> work;
  for (Op& op : c->ops) {
    if (op.run) work.push_back(std::move(op.run));
  }
  c->ops.clear();
  leave_capture(c);
  if (invalidated) return kCaptureInvalidated;
  auto* g = new Graph{std::move(work)};
  graphs.insert(g);
  *graph = g;
  return kSuccess;
}

namespace {
CUresult capture_info(void* s, int* status, unsigned long long* id) {
  std::lock_guard<std::mutex> lock(mu);
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  Capture* c = capture_of(st);
  *status = c == nullptr ? 0 : c->invalidated ? 2 : 1;
  if (id != nullptr) *id = c == nullptr ? 0 : c->id;
  return kSuccess;
}
}  // namespace

FAKE CUresult cuStreamGetCaptureInfo_v3(void* s, int* status, unsigned long long* id, void** graph, const void** deps,
                                        const void** edges, std::size_t* count) {
  fake::count_call();
  if (graph != nullptr) *graph = nullptr;
  if (deps != nullptr) *deps = nullptr;
  if (edges != nullptr) *edges = nullptr;
  if (count != nullptr) *count = 0;
  return capture_info(s, status, id);
}

FAKE CUresult cuStreamGetCaptureInfo_v2(void* s, int* status, unsigned long long* id, void** graph, const void** deps,
                                        std::size_t* count) {
  fake::count_call();
  if (graph != nullptr) *graph = nullptr;
  if (deps != nullptr) *deps = nullptr;
  if (count != nullptr) *count = 0;
  return capture_info(s, status, id);
}

FAKE CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  fake::count_call();
  if (mode == nullptr || *mode < 0 || *mode > 2) return kInvalidValue;
  const int previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return kSuccess;
}

FAKE CUresult cuGraphGetNodes(void* graph, void** nodes, std::size_t* count) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* g = static_cast<Graph*>(graph);
  if (!graphs.count(g) || count == nullptr || nodes != nullptr) return kInvalidValue;
  *count = g->work.size();
  return kSuccess;
}

FAKE CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* g = static_cast<Graph*>(graph);
  if (!graphs.count(g)) return kInvalidValue;
  auto* e = new Exec{g->work};
  execs.insert(e);
  *exec = e;
  return kSuccess;
}

FAKE CUresult cuGraphLaunch(void* exec, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  auto* e = static_cast<Exec*>(exec);
  Stream* st = stream_of(s);
  if (!execs.count(e)) return kInvalidValue;
  if (st == nullptr) return kInvalidHandle;
  graph_launches.fetch_add(1);
  // Captured into another capture, a launch is one node of that graph (a child graph).
  enqueue(st, Op{[work = e->work] {
    for (const auto& w : work) w();
  }});
  return kSuccess;
}

FAKE CUresult cuGraphUpload(void* exec, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (!execs.count(static_cast<Exec*>(exec))) return kInvalidValue;
  return stream_of(s) == nullptr ? kInvalidHandle : kSuccess;
}

FAKE CUresult cuGraphExecDestroy(void* exec) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* e = static_cast<Exec*>(exec);
  if (!execs.erase(e)) return kInvalidValue;
  delete e;  // queued launches hold their own copy of the work
  return kSuccess;
}

FAKE CUresult cuGraphDestroy(void* graph) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* g = static_cast<Graph*>(graph);
  if (!graphs.erase(g)) return kInvalidValue;
  delete g;
  return kSuccess;
}

// --- for tests ---
FAKE std::uint64_t fake_cuda_event_calls_during_capture() { return event_calls_during_capture.load(); }
FAKE std::uint64_t fake_cuda_graph_launches() { return graph_launches.load(); }
FAKE std::size_t fake_cuda_live_graphs() {
  std::lock_guard<std::mutex> lock(mu);
  return graphs.size() + execs.size();
}
FAKE std::size_t fake_cuda_live_captures() {
  std::lock_guard<std::mutex> lock(mu);
  return live_captures.size();
}
