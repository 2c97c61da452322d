// The addon's entry: it only installs per-environment state and registers exports.
#include <napi.h>

#include "addon_state.h"
#include "allocation_functions.h"
#include "compiler_functions.h"
#include "compute_functions.h"
#include "copy_functions.h"
#include "event_functions.h"
#include "history_functions.h"
#include "interop_functions.h"
#include "graph_functions.h"
#include "blas_functions.h"
#include "launch_functions.h"
#include "host_functions.h"
#include "host_history_functions.h"
#include "native_stack_functions.h"
#include "mem_pool_functions.h"
#include "memory_functions.h"
#include "replay_functions.h"
#include "runtime_functions.h"
#include "stream_functions.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  cca::binding::install_state(env);
  cca::binding::register_allocation_functions(env, exports);
  cca::binding::register_stream_functions(env, exports);
  cca::binding::register_memory_functions(env, exports);
  cca::binding::register_runtime_functions(env, exports);
  cca::binding::register_history_functions(env, exports);
  cca::binding::register_mem_pool_functions(env, exports);
  cca::binding::register_copy_functions(env, exports);
  cca::binding::register_replay_functions(env, exports);
  cca::binding::register_compute_functions(env, exports);
  cca::binding::register_launch_functions(env, exports);
  cca::binding::register_event_functions(env, exports);
  cca::binding::register_compiler_functions(env, exports);
  cca::binding::register_host_functions(env, exports);
  cca::binding::register_host_history_functions(env, exports);
  cca::binding::register_native_stack_functions(env, exports);
  cca::binding::register_interop_functions(env, exports);
  cca::binding::register_graph_functions(env, exports);
  cca::binding::register_blas_functions(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(cuda_caching_allocator, Init)
