// CUDA graphs on one device: a capture on a stream (its allocations routed to a private pool
// of the allocator: Note [Allocating under graph capture] in allocator/policy/captures.cpp),
// the graph it yields, its launches, and its end, which gives the pool its use back. Each
// graph is a handle remembered here, so a stale or made-up one is a coded error. Where the
// backend cannot capture (the simulator) every call refuses, naming the cuda backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "../allocator/policy/caching_allocator.h"
#include "../device/device.h"
#include "../device/graphs.h"

namespace cca {

class DeviceGraphs {
 public:
  // `graphs` is null where the backend cannot capture.
  DeviceGraphs(Device& device, GraphEngine* graphs, DeviceCachingAllocator& allocator);
  ~DeviceGraphs();  // destroys the graphs still alive and gives their pools' uses back
  DeviceGraphs(const DeviceGraphs&) = delete;
  DeviceGraphs& operator=(const DeviceGraphs&) = delete;

  // A new pool id for graphs to share (PyTorch's graph_pool_handle()).
  std::uint32_t pool_handle();
  // Begins capturing `stream` (a created or adopted stream; never the legacy default stream)
  // into a graph whose allocations come from `pool` (0: a pool of its own). Returns the
  // pool's id (the one made for it when `pool` is 0). ERR_CCA_CAPTURE_UNSUPPORTED on the simulator, on stream 0, on a stream
  // already capturing, and with caching off; ERR_CCA_INVALID_POOL for a released pool.
  std::uint32_t begin_capture(StreamId stream, std::uint32_t pool, CaptureMode mode);
  // Ends the capture begun on `stream` and makes its graph ready to launch; returns the
  // graph's handle. A capture the driver invalidated is ended, its pool's use given back,
  // and ERR_CCA_CAPTURE_INVALIDATED thrown with the driver's reason.
  std::uint64_t end_capture(StreamId stream);
  // Ends the capture begun on `stream` and drops what it captured (the callback threw).
  void abort_capture(StreamId stream);
  // The pool a graph's allocations came from, and the work nodes it holds.
  struct GraphInfo {
    std::uint32_t pool;
    std::size_t nodes;
  };
  GraphInfo graph_info(std::uint64_t graph) const;
  // Queues one run of the graph on `stream` (any live stream, the default one included).
  void launch(std::uint64_t graph, StreamId stream);
  void upload(std::uint64_t graph, StreamId stream);
  // Destroys the graph; its pool loses the graph's use (its memory returns once no graph
  // uses it, at once for cached blocks and at empty_cache() for the rest).
  void destroy(std::uint64_t graph);
  std::size_t live_graphs() const;

 private:
  struct Capturing {
    std::uint32_t pool;
    std::uint64_t id;
  };
  struct Graph {
    GraphId graph;
    GraphExecId exec;
    std::uint32_t pool;
    std::size_t nodes;
  };
  GraphEngine& engine(const char* what) const;
  const Graph& graph_locked(std::uint64_t graph, const char* what) const;
  [[noreturn]] void fail(const char* what, Status s) const;

  Device& device_;
  GraphEngine* graphs_;
  DeviceCachingAllocator& allocator_;
  mutable std::mutex mu_;
  std::unordered_map<StreamId, Capturing> capturing_;
  std::unordered_map<std::uint64_t, Graph> live_;
  std::uint64_t next_handle_ = 1;
};

}  // namespace cca
