// The CUDA backend's stream capture and graphs: cuStreamBeginCapture_v2 ...
// cuStreamEndCapture, the capture's id for the allocator's routing, and the graph's
// instantiation, upload, launch and destruction. Every entry point is optional in the
// driver table (graph_api_missing says which is absent).
#include <cstdio>

#include "cuda_device.h"

namespace cca {

namespace {
template <class T>
T as_handle(std::uint64_t id) {
  return reinterpret_cast<T>(static_cast<std::uintptr_t>(id));
}
template <class T>
std::uint64_t as_id(T handle) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(handle));
}
}  // namespace

// kUnsupported, saying which entry point the driver lacks, when `fn` is null.
#define CCA_NEED(fn)                                                                      \
  if (api_.fn == nullptr) return check(cu::CUDA_ERROR_NOT_SUPPORTED, #fn " (not in this driver)")

Status CudaDevice::stream_capture_info(StreamId stream, CaptureInfo* out) {
  *out = CaptureInfo{};
  if (api_.cuStreamGetCaptureInfo_v3 == nullptr && api_.cuStreamGetCaptureInfo_v2 == nullptr) {
    return Status::kOk;  // a driver without capture has no capturing stream
  }
  CCA_CONTEXT();
  int status = cu::kCaptureStatusNone;
  unsigned long long id = 0;
  const auto s = as_handle<cu::CUstream>(stream);
  const cu::CUresult r = api_.cuStreamGetCaptureInfo_v3 != nullptr
                             ? api_.cuStreamGetCaptureInfo_v3(s, &status, &id, nullptr, nullptr, nullptr, nullptr)
                             : api_.cuStreamGetCaptureInfo_v2(s, &status, &id, nullptr, nullptr, nullptr);
  const Status st = check(r, "cuStreamGetCaptureInfo");
  if (st != Status::kOk) return st;
  // An invalidated capture still owns its streams until it is ended: route to its pool.
  out->active = status != cu::kCaptureStatusNone;
  out->id = out->active ? id : 0;
  return Status::kOk;
}

Status CudaDevice::begin_capture(StreamId stream, CaptureMode mode) {
  CCA_NEED(cuStreamBeginCapture_v2);
  CCA_CONTEXT();
  return check(api_.cuStreamBeginCapture_v2(as_handle<cu::CUstream>(stream), static_cast<int>(mode)),
               "cuStreamBeginCapture");
}

Status CudaDevice::end_capture(StreamId stream, GraphId* out) {
  CCA_NEED(cuStreamEndCapture);
  CCA_CONTEXT();
  cu::CUgraph graph = nullptr;
  const cu::CUresult r = api_.cuStreamEndCapture(as_handle<cu::CUstream>(stream), &graph);
  if (r == cu::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || (r == cu::CUDA_SUCCESS && graph == nullptr)) {
    check(r == cu::CUDA_SUCCESS ? cu::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : r, "cuStreamEndCapture");
    return Status::kCaptureInvalidated;
  }
  const Status s = check(r, "cuStreamEndCapture");
  if (s == Status::kOk) *out = as_id(graph);
  return s;
}

Status CudaDevice::graph_node_count(GraphId graph, std::size_t* out) {
  CCA_NEED(cuGraphGetNodes);
  CCA_CONTEXT();
  *out = 0;
  return check(api_.cuGraphGetNodes(as_handle<cu::CUgraph>(graph), nullptr, out), "cuGraphGetNodes");
}

Status CudaDevice::graph_destroy(GraphId graph) {
  CCA_NEED(cuGraphDestroy);
  CCA_CONTEXT();
  return check(api_.cuGraphDestroy(as_handle<cu::CUgraph>(graph)), "cuGraphDestroy");
}

Status CudaDevice::graph_instantiate(GraphId graph, GraphExecId* out) {
  CCA_NEED(cuGraphInstantiateWithFlags);
  CCA_CONTEXT();
  cu::CUgraphExec exec = nullptr;
  // No flags: the graph holds no memory nodes (our allocator owns its memory), so
  // AUTO_FREE_ON_LAUNCH has nothing to do.
  const Status s = check(api_.cuGraphInstantiateWithFlags(&exec, as_handle<cu::CUgraph>(graph), 0), "cuGraphInstantiate");
  if (s == Status::kOk) *out = as_id(exec);
  return s;
}

Status CudaDevice::graph_launch(GraphExecId exec, StreamId stream) {
  CCA_NEED(cuGraphLaunch);
  CCA_CONTEXT();
  return check(api_.cuGraphLaunch(as_handle<cu::CUgraphExec>(exec), as_handle<cu::CUstream>(stream)), "cuGraphLaunch");
}

Status CudaDevice::graph_upload(GraphExecId exec, StreamId stream) {
  CCA_NEED(cuGraphUpload);
  CCA_CONTEXT();
  return check(api_.cuGraphUpload(as_handle<cu::CUgraphExec>(exec), as_handle<cu::CUstream>(stream)), "cuGraphUpload");
}

Status CudaDevice::graph_exec_destroy(GraphExecId exec) {
  CCA_NEED(cuGraphExecDestroy);
  CCA_CONTEXT();
  return check(api_.cuGraphExecDestroy(as_handle<cu::CUgraphExec>(exec)), "cuGraphExecDestroy");
}

#undef CCA_NEED

}  // namespace cca
