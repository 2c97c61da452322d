// The pinned host allocator's history (PyTorch's record_pinned_host_memory): turned on and
// off, and read for a snapshot as flat records the JS side turns into host_segments and
// host_traces. Stack ids are the JS stack table's, as for device history.
#include "host_history_functions.h"

#include <vector>

#include "../common/clock.h"
#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

constexpr std::size_t kHostBlockFields = 4;  // address, size, state, stack
constexpr std::size_t kHostTraceFields = 5;  // action, addr, size, time_us, stack

// hostTraceActionNames() -> the host actions' names, by their index in the trace records
Napi::Value HostTraceActionNames(const Napi::CallbackInfo& info) {
  const auto count = static_cast<std::size_t>(HostAction::kCount);
  Napi::Array out = Napi::Array::New(info.Env(), count);
  for (std::size_t i = 0; i < count; ++i) out.Set(static_cast<uint32_t>(i), HostHistory::action_names()[i]);
  return out;
}

// hostSetHistory(enabled, context 0-3, maxEntries, clear)
Napi::Value HostSetHistory(const Napi::CallbackInfo& info) {
  HostHistoryOptions o;
  o.enabled = bool_arg(info, 0, "enabled");
  const std::uint64_t context = u64_arg(info, 1, "context");
  if (context > 3) throw InvalidArgumentError("context must be 0-3", "ERR_INVALID_ARG_VALUE");
  o.context = static_cast<int>(context);
  o.max_entries = static_cast<std::size_t>(u64_arg(info, 2, "maxEntries"));
  runtime(info).host().set_history(o, bool_arg(info, 3, "clear"));
  return info.Env().Undefined();
}

// hostHistory(includeTraces) -> null while host history is off, else { blocks (address, size,
// state, stack per block), traces (action, addr, size, time_us, stack per entry) or null }
Napi::Value HostHistorySnapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const bool include_traces = bool_arg(info, 0, "includeTraces");
  std::vector<HostCachingAllocator::BlockRecord> blocks;
  std::vector<HostTraceEntry> traces;
  HostCachingAllocator& host = runtime(info).host();
  if (!host.history_enabled()) return env.Null();
  host.history_snapshot(blocks, include_traces ? &traces : nullptr);
  Napi::Float64Array b = Napi::Float64Array::New(env, blocks.size() * kHostBlockFields);
  double* p = b.Data();
  for (const auto& r : blocks) {
    *p++ = static_cast<double>(r.address);
    *p++ = static_cast<double>(r.size);
    *p++ = r.state;
    *p++ = r.stack;
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("blocks", b);
  if (!include_traces) {
    out.Set("traces", env.Null());
    return out;
  }
  Napi::Float64Array t = Napi::Float64Array::New(env, traces.size() * kHostTraceFields);
  p = t.Data();
  const TickConverter conv = process_clock().converter();
  for (const HostTraceEntry& e : traces) {
    *p++ = static_cast<double>(e.action);
    *p++ = static_cast<double>(e.addr);
    *p++ = static_cast<double>(e.size);
    // Whole microseconds, as PyTorch's time_us (integer division of its nanoseconds).
    *p++ = static_cast<double>(static_cast<std::int64_t>(conv.to_unix_us(e.ticks)));
    *p++ = e.stack;
  }
  out.Set("traces", t);
  return out;
}

}  // namespace

void register_host_history_functions(Napi::Env env, Napi::Object exports) {
  export_function<HostTraceActionNames>(env, exports, "hostTraceActionNames");
  export_function<HostSetHistory>(env, exports, "hostSetHistory");
  export_function<HostHistorySnapshot>(env, exports, "hostHistory");
}

}  // namespace cca::binding
