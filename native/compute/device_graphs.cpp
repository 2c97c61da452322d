#include "device_graphs.h"
#include "../allocator/policy/facets/mem_pools.h"
#include "../allocator/policy/facets/graph_captures.h"

#include <string>

#include "../common/message_format.h"

namespace cca {

namespace {
AllocatorError capture_error(const std::string& message, const char* code = "ERR_CCA_CAPTURE_UNSUPPORTED") {
  return AllocatorError(code, message);
}
}  // namespace

DeviceGraphs::DeviceGraphs(Device& device, GraphEngine* graphs, DeviceCachingAllocator& allocator)
    : device_(device), graphs_(graphs), allocator_(allocator) {}

DeviceGraphs::~DeviceGraphs() {
  std::lock_guard<std::mutex> lock(mu_);
  if (graphs_ == nullptr) return;
  for (auto& [stream, c] : capturing_) {
    GraphId g = 0;
    if (graphs_->end_capture(stream, &g) == Status::kOk) graphs_->graph_destroy(g);
  }
  for (auto& [handle, g] : live_) {
    graphs_->graph_exec_destroy(g.exec);
    graphs_->graph_destroy(g.graph);
  }
}

GraphEngine& DeviceGraphs::engine(const char* what) const {
  if (graphs_ == nullptr) {
    throw capture_error(std::string(what) + ": CUDA graphs need the cuda backend; device " +
                        std::to_string(device_.index()) + " is " +
                        (device_.is_simulated() ? "simulated (sim backend), which records no work to capture"
                                                : "on a backend that cannot capture"));
  }
  return *graphs_;
}

void DeviceGraphs::fail(const char* what, Status s) const {
  if (s == Status::kCaptureInvalidated) {
    throw capture_error(device_failure(device_, what, s) +
                            ". A call the capture forbids ran during it (a synchronization, an event query, "
                            "a synchronous copy, or a device allocation on another thread in global mode); "
                            "the capture was ended and its memory released",
                        "ERR_CCA_CAPTURE_INVALIDATED");
  }
  throw device_error(device_, what, s);
}

std::uint32_t DeviceGraphs::pool_handle() {
  engine("graphPoolHandle");
  return GraphCaptures(allocator_).reserve_pool_id();
}

std::uint32_t DeviceGraphs::begin_capture(StreamId stream, std::uint32_t pool, CaptureMode mode) {
  GraphEngine& g = engine("captureGraph");
  if (stream == 0) {
    throw capture_error(
        "CUDA graphs must be captured on a created stream, not the default (legacy) stream, which cannot "
        "be captured; create one with cuda.Stream.create() (the graph may then be launched on any stream)");
  }
  allocator_.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing_.count(stream) != 0) {
    throw capture_error("stream " + hex(stream) + " is already being captured; end that capture first");
  }
  const std::uint32_t p = pool != 0 ? pool : GraphCaptures(allocator_).reserve_pool_id();
  // Routing first (frees are deferred from here on), then the driver's capture.
  GraphCaptures(allocator_).begin_allocate_to_capture(p, 0);
  Status s = g.begin_capture(stream, mode);
  Device::CaptureInfo info;
  if (s == Status::kOk) s = device_.stream_capture_info(stream, &info);
  if (s != Status::kOk || !info.active) {
    if (s == Status::kOk) {
      GraphId dropped = 0;
      if (g.end_capture(stream, &dropped) == Status::kOk) g.graph_destroy(dropped);
    }
    GraphCaptures(allocator_).end_allocate_to_capture(p, 0);
    MemPools(allocator_).release_pool(p);
    fail("cuStreamBeginCapture", s == Status::kOk ? Status::kError : s);
  }
  GraphCaptures(allocator_).capture_started(p, info.id);
  capturing_.emplace(stream, Capturing{p, info.id});
  return p;
}

std::uint64_t DeviceGraphs::end_capture(StreamId stream) {
  GraphEngine& g = engine("captureGraph");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = capturing_.find(stream);
  if (it == capturing_.end()) {
    throw capture_error("no capture began on stream " + hex(stream) +
                        "; a capture must end on the stream it began on");
  }
  const Capturing c = it->second;
  GraphId graph = 0;
  Status s = g.end_capture(stream, &graph);
  capturing_.erase(it);
  GraphCaptures(allocator_).end_allocate_to_capture(c.pool, c.id);
  GraphExecId exec = 0;
  std::size_t nodes = 0;
  if (s == Status::kOk) s = g.graph_node_count(graph, &nodes);
  if (s == Status::kOk) s = g.graph_instantiate(graph, &exec);
  if (s != Status::kOk) {
    if (graph != 0) g.graph_destroy(graph);
    MemPools(allocator_).release_pool(c.pool);
    fail(s == Status::kCaptureInvalidated ? "cuStreamEndCapture" : "cuGraphInstantiate", s);
  }
  const std::uint64_t handle = next_handle_++;
  live_.emplace(handle, Graph{graph, exec, c.pool, nodes});
  return handle;
}

void DeviceGraphs::abort_capture(StreamId stream) {
  GraphEngine& g = engine("captureGraph");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = capturing_.find(stream);
  if (it == capturing_.end()) return;
  const Capturing c = it->second;
  capturing_.erase(it);
  GraphId graph = 0;
  if (g.end_capture(stream, &graph) == Status::kOk && graph != 0) g.graph_destroy(graph);
  GraphCaptures(allocator_).end_allocate_to_capture(c.pool, c.id);
  MemPools(allocator_).release_pool(c.pool);
}

const DeviceGraphs::Graph& DeviceGraphs::graph_locked(std::uint64_t graph, const char* what) const {
  auto it = live_.find(graph);
  if (it == live_.end()) {
    throw InvalidArgumentError(std::string(what) + ": graph " + std::to_string(graph) + " on device " +
                                   std::to_string(device_.index()) + " was destroyed or never made",
                               "ERR_CCA_INVALID_HANDLE");
  }
  return it->second;
}

DeviceGraphs::GraphInfo DeviceGraphs::graph_info(std::uint64_t graph) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Graph& g = graph_locked(graph, "graph info");
  return GraphInfo{g.pool, g.nodes};
}

void DeviceGraphs::launch(std::uint64_t graph, StreamId stream) {
  GraphEngine& g = engine("graph.launch");
  allocator_.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(mu_);
  const Status s = g.graph_launch(graph_locked(graph, "graph.launch").exec, stream);
  if (s != Status::kOk) fail("cuGraphLaunch", s);
}

void DeviceGraphs::upload(std::uint64_t graph, StreamId stream) {
  GraphEngine& g = engine("graph.upload");
  allocator_.require_live_stream(stream);
  std::lock_guard<std::mutex> lock(mu_);
  const Status s = g.graph_upload(graph_locked(graph, "graph.upload").exec, stream);
  if (s != Status::kOk) fail("cuGraphUpload", s);
}

void DeviceGraphs::destroy(std::uint64_t graph) {
  GraphEngine& g = engine("graph.destroy");
  std::lock_guard<std::mutex> lock(mu_);
  const Graph found = graph_locked(graph, "graph.destroy");
  // Launches already queued still run (the driver keeps what they need), and the pool's
  // memory goes back to the device by cuMemFree, which waits for the device first.
  Status s = g.graph_exec_destroy(found.exec);
  if (s == Status::kOk) s = g.graph_destroy(found.graph);
  if (s != Status::kOk) fail("cuGraphDestroy", s);
  live_.erase(graph);
  MemPools(allocator_).release_pool(found.pool);
}

std::size_t DeviceGraphs::live_graphs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

}  // namespace cca
