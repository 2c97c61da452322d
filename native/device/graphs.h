// The graph contract: stream capture into a graph, and the graph's instantiation, launch and
// destruction. Apart from Device, as the kernel contract is: only the compute layer (which
// also routes the capture's allocations through the allocator) is given a GraphEngine. Only
// the cuda backend has one; the simulator records no work to capture.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/types.h"
#include "device.h"

namespace cca {

using GraphId = std::uint64_t;      // a captured graph (CUgraph)
using GraphExecId = std::uint64_t;  // its executable form (CUgraphExec)

// The driver's CUstreamCaptureMode: which calls a capture forbids on other threads (global),
// on this thread (thread-local), or nowhere (relaxed; an event recorded in the capture may
// still never be queried).
enum class CaptureMode { kGlobal = 0, kThreadLocal = 1, kRelaxed = 2 };

class GraphEngine {
 public:
  virtual ~GraphEngine() = default;
  // kInvalidValue on the legacy default stream (0) or one already capturing; kUnsupported
  // where the driver has no graphs.
  virtual Status begin_capture(StreamId stream, CaptureMode mode) = 0;
  // Ends the capture begun on `stream` (on the same thread, unless it was relaxed).
  // kCaptureInvalidated, with no graph, when something during the capture invalidated it
  // (the driver's reason in last_error()); the capture is over either way.
  virtual Status end_capture(StreamId stream, GraphId* out) = 0;
  virtual Status graph_node_count(GraphId graph, Bytes* out) = 0;
  virtual Status graph_destroy(GraphId graph) = 0;
  virtual Status graph_instantiate(GraphId graph, GraphExecId* out) = 0;
  // Queues one run of the whole graph on `stream`.
  virtual Status graph_launch(GraphExecId exec, StreamId stream) = 0;
  // Uploads the graph's work to the device ahead of its first launch.
  virtual Status graph_upload(GraphExecId exec, StreamId stream) = 0;
  virtual Status graph_exec_destroy(GraphExecId exec) = 0;
};

}  // namespace cca
