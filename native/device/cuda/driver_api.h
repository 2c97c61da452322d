// The CUDA driver types and entry points the backend uses, declared here from the driver
// API's documented ABI so the build needs no CUDA toolkit. Only what we call is declared.
#pragma once
#include <cstddef>

namespace cca::cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
// CUDA IPC's handle: 64 opaque bytes, passed by value to cuIpcOpenMemHandle.
struct CUipcMemHandle {
  char reserved[64];
};
constexpr unsigned kIpcLazyEnablePeerAccess = 0x1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmemGenericAllocationHandle = unsigned long long;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUhostFn = void (*)(void*);
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
// CUstreamCaptureStatus and CUstreamCaptureMode.
constexpr int kCaptureStatusNone = 0;
constexpr int kCaptureStatusActive = 1;
constexpr int kCaptureStatusInvalidated = 2;
constexpr int kCaptureModeRelaxed = 2;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
// Stream capture: a call the capture forbids (900) invalidates it (901); an event recorded in
// a capture used outside it (907); a capture ended on another thread (908).
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906;
constexpr CUresult CUDA_ERROR_CAPTURED_EVENT = 907;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908;
// Errors after which the context is unusable (the driver's "sticky" errors): a kernel read
// or wrote a bad address, trapped, asserted, or died.
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_ASSERT = 710;
constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;
constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
constexpr CUresult CUDA_ERROR_INVALID_ADDRESS_SPACE = 717;
constexpr CUresult CUDA_ERROR_INVALID_PC = 718;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
// Kernel launches and functions.
inline void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);  // CU_LAUNCH_PARAM_BUFFER_POINTER
inline void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);     // CU_LAUNCH_PARAM_BUFFER_SIZE
inline void* const kLaunchParamEnd = nullptr;                               // CU_LAUNCH_PARAM_END
constexpr int kFuncAttrMaxThreadsPerBlock = 0;  // CU_FUNC_ATTRIBUTE_*
constexpr int kFuncAttrSharedSizeBytes = 1;
constexpr int kFuncAttrConstSizeBytes = 2;
constexpr int kFuncAttrLocalSizeBytes = 3;
constexpr int kFuncAttrNumRegs = 4;
constexpr int kFuncAttrPtxVersion = 5;
constexpr int kFuncAttrBinaryVersion = 6;
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
constexpr int kAttrMaxThreadsPerBlock = 1;  // CU_DEVICE_ATTRIBUTE_*
constexpr int kAttrMaxBlockDimX = 2;        // Y = 3, Z = 4
constexpr int kAttrMaxGridDimX = 5;         // Y = 6, Z = 7
constexpr int kAttrMaxSharedPerBlockOptin = 97;

constexpr unsigned kEventDisableTiming = 0x2;        // CU_EVENT_DISABLE_TIMING
constexpr unsigned kStreamNonBlocking = 0x1;         // CU_STREAM_NON_BLOCKING
constexpr unsigned kMemHostAllocPortable = 0x1;      // CU_MEMHOSTALLOC_PORTABLE: pinned for every context
constexpr int kAttrComputeCapabilityMajor = 75;      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;

// Virtual memory management (expandable segments).
struct CUmemLocation {
  int type;  // CU_MEM_LOCATION_TYPE_DEVICE = 1
  int id;
};
struct CUmemAllocationProp {
  int type;                  // CU_MEM_ALLOCATION_TYPE_PINNED = 1
  int requestedHandleTypes;  // CU_MEM_HANDLE_TYPE_NONE = 0
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
};
constexpr int kMemAllocationTypePinned = 1;
constexpr int kMemLocationTypeDevice = 1;
constexpr int kMemAccessReadWrite = 3;
constexpr int kGranularityMinimum = 0;  // CU_MEM_ALLOC_GRANULARITY_MINIMUM

// The function table, resolved once from libcuda.so.1. Names are the exported symbols
// (the _v2 variants where the driver versions them).
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem_v2)(std::size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemGetInfo_v2)(std::size_t*, std::size_t*);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, std::size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuMemHostAlloc)(void**, std::size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  // Optional: absent from old drivers; the features that need them say so.
  CUresult (*cuFuncGetParamInfo)(CUfunction, std::size_t, std::size_t*, std::size_t*);  // CUDA 12.4
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, std::size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemAddressReserve)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long);
  CUresult (*cuMemAddressFree)(CUdeviceptr, std::size_t);
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, std::size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
  CUresult (*cuMemMap)(CUdeviceptr, std::size_t, std::size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*cuMemUnmap)(CUdeviceptr, std::size_t);
  CUresult (*cuMemSetAccess)(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t);
  CUresult (*cuMemGetAllocationGranularity)(std::size_t*, const CUmemAllocationProp*, int);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr);
  CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr*, CUipcMemHandle, unsigned);
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
  // Stream capture and graphs (optional: without them, capture says it is unsupported). The
  // capture info is read through whichever version the driver exports (id only is needed).
  CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuStreamGetCaptureInfo_v3)(CUstream, int*, unsigned long long*, CUgraph*, const CUgraphNode**,
                                        const void**, std::size_t*);
  CUresult (*cuStreamGetCaptureInfo_v2)(CUstream, int*, unsigned long long*, CUgraph*, const CUgraphNode**,
                                        std::size_t*);
  CUresult (*cuThreadExchangeStreamCaptureMode)(int*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphUpload)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode*, std::size_t*);
};

}  // namespace cca::cu
