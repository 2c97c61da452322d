// The matrix-multiplication contract: the vendor's GEMM (cuBLAS, opened with dlopen by
// cuda/cublas.cpp) queued on a stream with a workspace it is given. Apart from Device, as
// the kernel contract is: the allocator never multiplies, and only the compute layer
// (native/compute/device_blas) holds a BlasEngine, which checks every operand range and gives
// the workspace from the allocator before the library sees anything. Only the cuda backend
// has one: the simulator holds no memory contents.
#pragma once
#include <cstdint>
#include <string>

#include "../common/types.h"
#include "device.h"

namespace cca {

// Element types of A, B and C (cudaDataType's CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF).
enum class BlasType { kF32, kF16, kBF16 };
// What the products are summed in: f32; f32 letting the tensor cores round inputs to TF32;
// f16 (f16 operands only).
enum class BlasCompute { kF32, kF32FastTf32, kF16 };
// What cuBLASLt applies to the product before storing it (its epilogue), after adding the
// bias vector when there is one.
enum class BlasEpilogue { kNone, kRelu, kGelu };

// C = alpha * op(A) @ op(B) + beta * C for each of `batch` matrices, column-major as cuBLAS
// reads them: op(A) is m x k, op(B) k x n, C m x n; element (i, j) of a matrix is at
// i + j * ld; matrix b of a batch starts `stride` elements after matrix b - 1.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  DevicePtr a = 0, b = 0, c = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  std::int64_t batch = 1;
  BlasType type = BlasType::kF32;
  BlasCompute compute = BlasCompute::kF32;
  double alpha = 1, beta = 0;
  // cuBLASLt's epilogue: a bias vector of C's type, one element per row of C (column-major),
  // added to every column; then the activation. 0 / kNone: plain cuBLAS.
  DevicePtr bias = 0;
  BlasEpilogue epilogue = BlasEpilogue::kNone;
  // Whether the call goes to cuBLASLt (a bias or an epilogue asks for it).
  bool lt() const { return bias != 0 || epilogue != BlasEpilogue::kNone; }
};

// The process's BLAS library, found once: CCA_CUBLAS_PATH, else libcublas.so.13, .so.12 on
// the loader's path, under CUDA_HOME and /usr/local/cuda, and in pip's wheels' folders
// (CCA_PYTHON_SITE_PACKAGES, then the usual site-packages).
struct BlasInfo {
  bool available = false;
  std::string reason;  // why not, naming every library tried
  std::string path;    // the library used
  int version = 0;     // cublasGetProperty's major * 10000 + minor * 100 + patch
  // cuBLASLt (for a bias or an epilogue): CCA_CUBLASLT_PATH, else beside cuBLAS, else the
  // same places.
  bool lt_available = false;
  std::string lt_reason;
  std::string lt_path;
};
BlasInfo blas_info();

class BlasEngine {
 public:
  virtual ~BlasEngine() = default;
  // Queues the GEMM on `stream`, with `workspace` (`workspace_bytes`, 0: none) set as the
  // library's workspace for it, on the calling thread's handle for this device (made on
  // first use): cuBLAS's, or cuBLASLt's when call.lt(). kUnsupported with the reason in
  // reason() when the library is missing; kInvalidValue for a call the library refuses.
  virtual Status gemm(const GemmCall& call, StreamId stream, DevicePtr workspace, Bytes workspace_bytes) = 0;
  // Why the last call failed, in the library's words.
  virtual std::string reason() const = 0;
};

}  // namespace cca
