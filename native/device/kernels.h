// The kernel contract: modules loaded from CUBIN, fatbin or PTX bytes, their functions, and
// launches. Apart from Device, as CopyEngine is: the allocator never launches anything, and
// only the compute layer (native/compute) is given a KernelEngine, which checks every
// buffer a launch names before the device sees it. Only the cuda backend has one: the
// simulator holds no memory contents and runs no kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/types.h"
#include "device.h"

namespace cca {

using ModuleId = std::uint64_t;
using FunctionId = std::uint64_t;

// One kernel parameter as the compiled code lays it out in the parameter buffer.
struct KernelParam {
  Bytes offset = 0;
  Bytes size = 0;
};

// What a kernel was compiled with and may use (the driver's CU_FUNC_ATTRIBUTE_*).
struct FunctionAttributes {
  int max_threads_per_block = 0;
  int num_regs = 0;
  int shared_size_bytes = 0;       // static shared memory
  int const_size_bytes = 0;
  int local_size_bytes = 0;        // per thread
  int max_dynamic_shared_bytes = 0;
  int ptx_version = 0;             // major * 10 + minor
  int binary_version = 0;          // the SASS architecture, major * 10 + minor
};

// What a launch may ask of the device.
struct LaunchLimits {
  int max_threads_per_block = 0;
  int max_block[3] = {0, 0, 0};
  int max_grid[3] = {0, 0, 0};
  int max_shared_per_block_optin = 0;  // dynamic shared memory, with the function's opt-in
};

struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
};

class KernelEngine {
 public:
  virtual ~KernelEngine() = default;
  // `image` is a CUBIN or fatbin, or PTX text ending in a NUL byte. kInvalidValue for bytes
  // the driver cannot load (with the driver's reason in the device's last_error()).
  virtual Status module_load(const void* image, Bytes bytes, ModuleId* out) = 0;
  virtual Status module_unload(ModuleId module) = 0;
  // kNotFound when the module has no kernel of that (mangled) name.
  virtual Status function_get(ModuleId module, const std::string& name, FunctionId* out) = 0;
  // The parameters the compiled kernel takes, in order; kUnsupported when the driver cannot
  // tell (cuFuncGetParamInfo came with CUDA 12.4).
  virtual Status function_params(FunctionId function, std::vector<KernelParam>* out) = 0;
  virtual Status function_attributes(FunctionId function, FunctionAttributes* out) = 0;
  // Lets the function use up to `bytes` of dynamic shared memory (above 48 KiB needs this).
  virtual Status function_set_max_dynamic_shared(FunctionId function, int bytes) = 0;
  virtual Status launch_limits(LaunchLimits* out) = 0;
  // Queues the kernel on `stream` with `params`, laid out as the kernel's parameters are
  // (KernelParam offsets), `param_bytes` long; the bytes are copied before this returns.
  virtual Status launch(FunctionId function, const LaunchShape& shape, StreamId stream, const void* params,
                        Bytes param_bytes) = 0;
};

}  // namespace cca
