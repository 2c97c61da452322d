// GEMMs on one device's live allocations (cuBLAS, and cuBLASLt for a bias or an epilogue,
// through the BLAS contract, device/blas.h).
// Every operand range is computed from the shape and checked by the allocator before the
// library sees it, as a launch's buffers are (and recorded on the call's stream), so no GEMM
// reads or writes outside its buffers: a guarantee cuBLAS does not give. Each library's
// workspace comes from the allocator, one per (thread, stream) as PyTorch keeps one per
// (handle, stream), set on every call, so it shows in memory_stats and snapshots; a workspace
// first made while its stream is captured comes from the graph's pool, and is never freed
// while that graph may replay. Where the backend has no BLAS (the simulator) every call
// refuses, naming the cuda backend.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "../allocator/policy/caching_allocator.h"
#include "../allocator/policy/facets/device_work.h"
#include "../device/blas.h"
#include "../device/device.h"

namespace cca {

// One GEMM as asked: the shape (its a, b, c unset) and each operand as a buffer's base and
// the byte offset its matrix starts at; the ranges' lengths are computed here.
struct GemmRequest {
  GemmCall shape;
  DevicePtr a_base = 0, b_base = 0, c_base = 0;
  std::uint64_t a_offset = 0, b_offset = 0, c_offset = 0;
  // The bytes each may span from its offset (a view's size; the allocator checks the buffer's).
  std::uint64_t a_limit = UINT64_MAX, b_limit = UINT64_MAX, c_limit = UINT64_MAX;
  // cuBLASLt's bias vector (shape.bias unset; 0: none), as the operands are given.
  DevicePtr bias_base = 0;
  std::uint64_t bias_offset = 0, bias_limit = UINT64_MAX;
  StreamId stream = 0;
  bool record = true;
  // The context the workspace is allocated with when this call makes one (its tag says whose:
  // the binding gives cuBLAS's and cuBLASLt's).
  CallContext workspace_ctx;
  CallContext lt_workspace_ctx;
  // The caller wrote the product row-major (matmul): `shape` is its column-major transpose,
  // A and B, m and n swapped, and messages name them as the caller did.
  bool row_major = false;
};

// The bytes each operand spans (all its batch's matrices), as the allocator checks them.
struct GemmExtents {
  std::uint64_t a = 0, b = 0, c = 0;
};

class DeviceBlas {
 public:
  // `blas` is null where the backend has none.
  DeviceBlas(Device& device, BlasEngine* blas, DeviceCachingAllocator& allocator);
  ~DeviceBlas();  // gives every workspace back
  DeviceBlas(const DeviceBlas&) = delete;
  DeviceBlas& operator=(const DeviceBlas&) = delete;

  // Checks the shape (InvalidArgumentError, ERR_CCA_GEMM_SHAPE, naming the bad dimension and
  // the fix) and the operands (as a launch's), then queues the GEMM on the request's stream.
  void gemm(const GemmRequest& request);
  // Frees the workspaces no capture has used (PyTorch's _cuda_clearCublasWorkspaces; a
  // workspace a captured GEMM used stays while the runtime lives, since a graph may replay
  // it). Returns how many were kept. ERR_CCA_CAPTURE_UNSUPPORTED during a capture here.
  std::size_t clear_workspaces();
  // Bytes of each workspace (CUBLAS_WORKSPACE_CONFIG, read once; PyTorch's grammar), and of
  // each cuBLASLt one (CUBLASLT_WORKSPACE_SIZE in KiB, PyTorch's variable; default 1 MiB).
  Bytes workspace_bytes() const { return workspace_bytes_; }
  Bytes lt_workspace_bytes() const { return lt_workspace_bytes_; }
  // Workspaces held now, and their bytes.
  std::size_t workspace_count() const;

 private:
  struct Workspace {
    DevicePtr ptr = 0;
    bool captured = false;  // a captured GEMM used it: a graph may replay it
  };
  BlasEngine& engine(const char* what) const;
  DevicePtr workspace_for(StreamId stream, bool lt, const CallContext& ctx);
  struct Key {
    std::thread::id thread;
    StreamId stream;
    bool lt;
    bool operator<(const Key& o) const {
      return thread != o.thread ? thread < o.thread : stream != o.stream ? stream < o.stream : lt < o.lt;
    }
  };

  Device& device_;
  BlasEngine* blas_;
  DeviceCachingAllocator& allocator_;
  Bytes workspace_bytes_;
  Bytes lt_workspace_bytes_;
  mutable std::mutex mu_;
  std::map<Key, Workspace> workspaces_;
};

// The checks gemm makes, and the operands' extents: exposed for tests. With `row_major`,
// messages name the operands and dimensions as a row-major caller gave them.
GemmExtents check_gemm_shape(const GemmCall& shape, bool row_major = false);
// CUBLAS_WORKSPACE_CONFIG's bytes (":SIZE_KiB:COUNT" pairs, summed); `fallback` when unset or
// malformed.
Bytes parse_workspace_config(const char* text, Bytes fallback);

}  // namespace cca
