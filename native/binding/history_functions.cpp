// History settings and snapshots. A snapshot crosses as a few Float64Arrays of fixed-width
// records (decoded in lib/snapshot), not as thousands of property sets: one allocation per
// part, and the JS side builds exactly the objects it needs.
#include "history_functions.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "../allocator/policy/facets/ledger_reads.h"
#include "../allocator/policy/facets/live_traces.h"
#include "../common/clock.h"
#include "export.h"
#include "args.h"
#include "../runtime/process_runtime.h"
#include "snapshot_records.h"

namespace cca::binding {

namespace {

// The snapshot's trace entries written as Float64 records straight into one malloc'd block,
// under the allocator's lock; JS then reads that block as an external ArrayBuffer (copied
// only where the runtime allows no external buffers).
class RecordSink : public TraceSink {
 public:
  explicit RecordSink(const TickConverter& conv) : conv_(conv) {}
  void reserve(std::size_t n) override {
    count_ = n;
    if (n != 0) data_.reset(new double[n * kTraceFields]);
    at_ = data_.get();
  }
  void add(const TraceEntry& e) override { at_ = write_record(e, conv_, at_); }

  Napi::Float64Array to_js(Napi::Env env) {
    const std::size_t length = count_ * kTraceFields;
    if (length == 0) return Napi::Float64Array::New(env, 0);
    double* data = data_.get();
    napi_value buffer;
    const napi_status status = napi_create_external_arraybuffer(
        env, data, length * sizeof(double), [](napi_env, void* p, void*) { delete[] static_cast<double*>(p); }, nullptr,
        &buffer);
    if (status == napi_ok) {
      data_.release();  // V8 owns it now and frees it through the finalizer
      return Napi::Float64Array::New(env, length, Napi::ArrayBuffer(env, buffer), 0);
    }
    // No external buffers here (a sandboxed V8): copy instead.
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value e;
      napi_get_and_clear_last_exception(env, &e);
    }
    Napi::Float64Array copy = Napi::Float64Array::New(env, length);
    std::copy(data, data + length, copy.Data());
    data_.reset();
    return copy;
  }

 private:
  const TickConverter& conv_;
  std::unique_ptr<double[]> data_;
  double* at_ = nullptr;
  std::size_t count_ = 0;
};


// setHistory(enabled, context, maxEntries, skipMask, clearHistory): every device, as in PyTorch.
Napi::Value SetHistory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsBoolean() || !info[4].IsBoolean()) {
    throw InvalidArgumentError("setHistory(enabled, context, maxEntries, skipMask, clearHistory)", "ERR_INVALID_ARG_TYPE");
  }
  HistoryOptions h;
  h.enabled = info[0].As<Napi::Boolean>().Value();
  const double ctx = number_arg(info, 1, "context");
  if (ctx != 0 && ctx != 1 && ctx != 2 && ctx != 3) throw InvalidArgumentError("context must be 0..3", "ERR_INVALID_ARG_VALUE");
  h.context = static_cast<RecordContext>(static_cast<int>(ctx));
  const double max = number_arg(info, 2, "maxEntries");
  h.max_entries = max >= 1.8e19 ? SIZE_MAX : static_cast<std::size_t>(u64_arg(info, 2, "maxEntries"));
  h.skip_mask = static_cast<std::uint32_t>(u64_arg(info, 3, "skipMask"));
  h.clear_history = info[4].As<Napi::Boolean>().Value();
  Runtime& r = runtime(info);
  for (int d = 0; d < r.device_count(); ++d) r.allocator(d).set_history(h);
  return env.Undefined();
}

// snapshot(device, poolFilter, includeTraces) -> { segments, blocks, traces, ... }
Napi::Value Snapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = device_arg(info, 0);
  const std::uint32_t pool = to_id(number_arg(info, 1, "poolFilter"), "poolFilter");
  if (info.Length() < 3 || !info[2].IsBoolean()) throw InvalidArgumentError("Expected a boolean for includeTraces", "ERR_INVALID_ARG_TYPE");
  const bool include_traces = info[2].As<Napi::Boolean>().Value();
  // Only with traces is the clock converter needed: the fast path never builds it.
  std::optional<TickConverter> conv;
  std::optional<RecordSink> records;
  if (include_traces) records.emplace(conv.emplace(process_clock().converter()));
  DeviceSnapshot snap = runtime(info).allocator(device).snapshot(pool, records ? &*records : nullptr);

  Napi::Float64Array segs = Napi::Float64Array::New(env, snap.segments.size() * kSegmentFields);
  double* s = segs.Data();
  for (const SnapshotSegment& g : snap.segments) s = write_record(g, s);
  Napi::Float64Array blocks = Napi::Float64Array::New(env, snap.blocks.size() * kBlockFields);
  double* b = blocks.Data();
  for (const SnapshotBlock& k : snap.blocks) b = write_record(k, b);
  Napi::Object out = Napi::Object::New(env);
  out.Set("device", device);
  out.Set("segments", segs);
  out.Set("blocks", blocks);
  out.Set("traceMaxEntries", static_cast<double>(snap.trace_max_entries));
  out.Set("traceOverflowed", snap.trace_overflowed);
  if (records) out.Set("traces", records->to_js(env));
  return out;
}

// traceSubscribe(device, mask, capacity): live trace events of the actions in mask (bit
// 1 << action index of traceActionNames()); mask 0 stops and frees the queue.
Napi::Value TraceSubscribe(const Napi::CallbackInfo& info) {
  const std::uint64_t mask = u64_arg(info, 1, "mask");
  if (mask >= (std::uint64_t{1} << static_cast<unsigned>(TraceAction::kNumActions))) {
    throw InvalidArgumentError("mask has bits of no action", "ERR_INVALID_ARG_VALUE");
  }
  const std::uint64_t capacity = u64_arg(info, 2, "capacity");
  LiveTraces(runtime(info).allocator(device_arg(info, 0)))
      .subscribe(static_cast<std::uint32_t>(mask), static_cast<std::size_t>(capacity),
                 static_cast<AddonState*>(info.Data())->owner);
  return info.Env().Undefined();
}

// traceDrain(device) -> { traces (the snapshot's trace records), dropped }
Napi::Value TraceDrain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<TraceEntry> entries;
  std::uint64_t dropped = 0;
  LiveTraces(runtime(info).allocator(device_arg(info, 0))).drain(entries, dropped);
  Napi::Float64Array traces = Napi::Float64Array::New(env, entries.size() * kTraceFields);
  if (!entries.empty()) {
    const TickConverter conv = process_clock().converter();
    double* t = traces.Data();
    for (const TraceEntry& e : entries) t = write_record(e, conv, t);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("traces", traces);
  out.Set("dropped", static_cast<double>(dropped));
  return out;
}

Napi::Value ReferencedStacks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Runtime& r = runtime(info);
  std::vector<std::uint32_t> all;
  for (int d = 0; d < r.device_count(); ++d) {
    auto ids = LedgerReads(r.allocator(d)).referenced_stacks();
    all.insert(all.end(), ids.begin(), ids.end());
  }
  r.host().append_stacks(all);
  Napi::Uint32Array out = Napi::Uint32Array::New(env, all.size());
  std::copy(all.begin(), all.end(), out.Data());
  return out;
}

// snapshotLayout() -> { segment, block, trace }: each record's field names in order.
Napi::Value SnapshotLayout(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto names = [&](const char* const* list, std::size_t n) {
    Napi::Array out = Napi::Array::New(env, n);
    for (std::size_t i = 0; i < n; ++i) out.Set(static_cast<uint32_t>(i), list[i]);
    return out;
  };
  Napi::Object out = Napi::Object::New(env);
  out.Set("segment", names(kSegmentFieldNames, kSegmentFields));
  out.Set("block", names(kBlockFieldNames, kBlockFields));
  out.Set("trace", names(kTraceFieldNames, kTraceFields));
  return out;
}

Napi::Value TraceActionNames(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto n = static_cast<std::size_t>(TraceAction::kNumActions);
  Napi::Array out = Napi::Array::New(env, n);
  for (std::size_t i = 0; i < n; ++i) out.Set(static_cast<uint32_t>(i), trace_action_name(static_cast<TraceAction>(i)));
  return out;
}

Napi::Value ClockBuilds(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(process_clock().builds()));
}

// Recalibrates the trace clock now instead of when it is next due, and says how many
// calibrations there have been: tests check that one moves no time already shown.
Napi::Value ClockRecalibrate(const Napi::CallbackInfo& info) {
  process_clock().recalibrate();
  return Napi::Number::New(info.Env(), static_cast<double>(process_clock().builds()));
}

// The trace clock's raw ticks now: annotations are stamped with it, so they order exactly
// against trace entries.
Napi::Value ClockTicks(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(clock_ticks()));
}

// historySeq(device): the device's next history order number, for an annotation.
Napi::Value HistorySeq(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, static_cast<double>(runtime(info).allocator(device_arg(info, 0)).next_history_seq()));
}

// Unix microseconds of raw ticks, by the converter the trace entries use.
Napi::Value TicksToUnixUs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throw InvalidArgumentError("Expected a Float64Array of ticks", "ERR_INVALID_ARG_TYPE");
  }
  Napi::Float64Array in = info[0].As<Napi::Float64Array>();
  Napi::Float64Array out = Napi::Float64Array::New(env, in.ElementLength());
  if (in.ElementLength() == 0) return out;
  const TickConverter conv = process_clock().converter();
  for (std::size_t i = 0; i < in.ElementLength(); ++i) {
    out[i] = static_cast<double>(static_cast<std::int64_t>(conv.to_unix_us(static_cast<std::uint64_t>(in[i]))));
  }
  return out;
}

}  // namespace

void register_history_functions(Napi::Env env, Napi::Object exports) {
  export_function<SetHistory>(env, exports, "setHistory");
  export_function<Snapshot>(env, exports, "snapshot");
  export_function<ReferencedStacks>(env, exports, "referencedStacks");
  export_function<TraceSubscribe>(env, exports, "traceSubscribe");
  export_function<TraceDrain>(env, exports, "traceDrain");
  export_function<SnapshotLayout>(env, exports, "snapshotLayout");
  export_function<TraceActionNames>(env, exports, "traceActionNames");
  export_function<ClockBuilds>(env, exports, "clockBuilds");
  export_function<ClockRecalibrate>(env, exports, "clockRecalibrate");
  export_function<ClockTicks>(env, exports, "clockTicks");
  export_function<HistorySeq>(env, exports, "historySeq");
  export_function<TicksToUnixUs>(env, exports, "ticksToUnixUs");
}

}  // namespace cca::binding
