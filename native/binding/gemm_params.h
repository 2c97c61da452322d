// gemm's numbers, passed in one Float64Array (lib/compute/gemm-params.ts's GemmParam is the
// JS side; test/contract/gemm-params.test.ts holds the two together).
#pragma once
#include <cstddef>

namespace cca::binding {

enum GemmParam : std::size_t {
  kGemmStream = 0,
  kGemmTransA = 1,
  kGemmTransB = 2,
  kGemmM = 3,
  kGemmN = 4,
  kGemmK = 5,
  kGemmABase = 6,
  kGemmAOffset = 7,
  kGemmLda = 8,
  kGemmStrideA = 9,
  kGemmBBase = 10,
  kGemmBOffset = 11,
  kGemmLdb = 12,
  kGemmStrideB = 13,
  kGemmCBase = 14,
  kGemmCOffset = 15,
  kGemmLdc = 16,
  kGemmStrideC = 17,
  kGemmBatch = 18,
  kGemmDtype = 19,    // 0 f32, 1 f16, 2 bf16
  kGemmCompute = 20,  // 0 f32, 1 tf32, 2 f16
  kGemmAlpha = 21,
  kGemmBeta = 22,
  kGemmRecord = 23,
  kGemmStackId = 24,  // the stack the workspace is tagged with, when this call makes one
  kGemmALimit = 25,   // the bytes A may span from its offset (a view's size)
  kGemmBLimit = 26,
  kGemmCLimit = 27,
  kGemmRowMajor = 28,  // the caller wrote it row-major (matmul): messages name its operands
  kGemmBiasBase = 29,  // cuBLASLt's bias vector (0: none)
  kGemmBiasOffset = 30,
  kGemmBiasLimit = 31,
  kGemmEpilogue = 32,  // 0 none, 1 relu, 2 gelu
  kGemmParamCount = 33,
};

}  // namespace cca::binding
