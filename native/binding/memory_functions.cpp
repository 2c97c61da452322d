// Stats, settings, cache control and inspection: one Float64Array for the 122 stats (the
// keys cross once), plain objects for the rarely called rest.
#include "memory_functions.h"

#include <cmath>

#include "../allocator/policy/facets/address_lookups.h"
#include "../allocator/policy/facets/ledger_reads.h"
#include "../allocator/policy/options.h"
#include "../allocator/state/stats.h"
#include "export.h"
#include "args.h"
#include "../interop/clients.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

Napi::Value StatKeys(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& keys = stat_keys();
  Napi::Array out = Napi::Array::New(env, keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) out.Set(static_cast<uint32_t>(i), keys[i]);
  return out;
}

// The Float64Array argument at `i` when it has exactly `n` elements, else a new one: monitoring
// loops pass the same array back every time instead of allocating one per call.
Napi::Float64Array reusable_f64(const Napi::CallbackInfo& info, std::size_t i, std::size_t n) {
  if (info.Length() > i && info[i].IsTypedArray() &&
      info[i].As<Napi::TypedArray>().TypedArrayType() == napi_float64_array &&
      info[i].As<Napi::Float64Array>().ElementLength() == n) {
    return info[i].As<Napi::Float64Array>();
  }
  return Napi::Float64Array::New(info.Env(), n);
}

Napi::Value MemoryStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  DeviceStats stats = a.stats();
  std::int64_t max_split = reported_max_split(a.max_split_size());
  Napi::Float64Array out = reusable_f64(info, 1, stat_keys().size());
  stat_values(stats, max_split, out.Data());
  return out;
}

// statValue(device, index) -> the stat at statKeys() position `index`: the single-value
// getters (memory_allocated() and the like) without filling all 122.
Napi::Value StatValue(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  const std::size_t index = static_cast<std::size_t>(u64_arg(info, 1, "index"));
  if (index >= stat_keys().size()) throw InvalidArgumentError("no stat at index " + std::to_string(index), "ERR_INVALID_ARG_VALUE");
  return Napi::Number::New(env, stat_value(a.stats(), reported_max_split(a.max_split_size()), index));
}

// monitorSample(out): every device, one after the other, as the 122 stats (statKeys()
// order) followed by kMonitorExtras figures; `out` is filled in place when it has the
// right length (a scrape allocates nothing then), else a new array is returned.
constexpr std::size_t kMonitorExtras = 7;  // see binding.d.ts: monitorSample

Napi::Value MonitorSample(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Runtime& r = runtime(info);
  const std::size_t per = stat_keys().size() + kMonitorExtras;
  Napi::Float64Array out = reusable_f64(info, 0, per * static_cast<std::size_t>(r.device_count()));
  double* p = out.Data();
  for (int d = 0; d < r.device_count(); ++d) {
    DeviceCachingAllocator& a = r.allocator(d);
    const cca::MonitorSample m = LedgerReads(a).monitor_sample();
    stat_values(m.stats, reported_max_split(a.max_split_size()), p);
    p += stat_keys().size();
    *p++ = static_cast<double>(m.largest_free_small);
    *p++ = static_cast<double>(m.largest_free_large);
    *p++ = static_cast<double>(m.history_entries);
    *p++ = static_cast<double>(m.history_capacity);
    // What the device reports (free counts other processes' use too), and the share of it the
    // memory fraction allows: alerts compare reserved memory with these. NaN when the driver
    // cannot answer: a scrape reports what it can.
    Bytes free_bytes = 0;
    Bytes total_bytes = 0;
    double free_figure = std::nan("");
    double total_figure = std::nan("");
    try {
      a.mem_get_info(&free_bytes, &total_bytes);
      free_figure = static_cast<double>(free_bytes);
      total_figure = static_cast<double>(total_bytes);
    } catch (const DeviceError&) {
    }
    *p++ = free_figure;
    *p++ = total_figure;
    *p++ = a.memory_fraction() * total_figure;
  }
  return out;
}

// tagStats(device) -> 7 numbers per tag this environment (or a native client) used: the tag
// id, allocated bytes current and peak, requested bytes current and peak, allocations
// current and peak. Tags of other JS environments are theirs to read.
Napi::Value TagStats(const Napi::CallbackInfo& info) {
  const std::uint32_t owner = static_cast<AddonState*>(info.Data())->owner;
  const std::vector<TagStat> all = LedgerReads(runtime(info).allocator(device_arg(info, 0))).tag_stats();
  std::vector<const TagStat*> mine;
  for (const TagStat& t : all) {
    if (t.owner == owner || t.tag >= kClientIdBase) mine.push_back(&t);
  }
  Napi::Float64Array out = Napi::Float64Array::New(info.Env(), mine.size() * 7);
  double* p = out.Data();
  for (const TagStat* t : mine) {
    const TagCounters& c = t->counters;
    for (double v : {static_cast<double>(t->tag), static_cast<double>(c.allocated), static_cast<double>(c.allocated_peak),
                     static_cast<double>(c.requested), static_cast<double>(c.requested_peak),
                     static_cast<double>(c.allocations), static_cast<double>(c.allocations_peak)}) {
      *p++ = v;
    }
  }
  return out;
}

Napi::Value ResetPeakStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).reset_peak_stats();
  return env.Undefined();
}

Napi::Value ResetAccumulatedStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).reset_accumulated_stats();
  return env.Undefined();
}

// emptyCache(device, stackId?, tagId?): the call's stack (context 'all') and label go on
// the segment_free entries.
Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CallContext ctx;
  if (info.Length() > 1) ctx.stack = static_cast<std::uint32_t>(u64_arg(info, 1, "stackId"));
  if (info.Length() > 2) ctx.tag = static_cast<std::uint32_t>(u64_arg(info, 2, "tagId"));
  runtime(info).allocator(device_arg(info, 0)).empty_cache(ctx);
  return env.Undefined();
}

// setCachingEnabled(enabled): every device, as PyTorch's caching_allocator_enable.
Napi::Value SetCachingEnabled(const Napi::CallbackInfo& info) {
  const bool enabled = bool_arg(info, 0, "enabled");
  Runtime& r = runtime(info);
  for (int d = 0; d < r.device_count(); ++d) r.allocator(d).set_caching_enabled(enabled);
  return info.Env().Undefined();
}

Napi::Value CachingEnabled(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), runtime(info).allocator(device_arg(info, 0)).caching_enabled());
}

// allocationStack(device, ptr) -> the stack id of the live allocation holding ptr (0: none
// captured), or -1 when no live allocation holds it.
Napi::Value AllocationStack(const Napi::CallbackInfo& info) {
  auto& a = runtime(info).allocator(device_arg(info, 0));
  std::uint32_t stack = 0;
  const bool live = AddressLookups(a).allocation_stack(u64_arg(info, 1, "ptr"), &stack);
  return Napi::Number::New(info.Env(), live ? static_cast<double>(stack) : -1.0);
}

// annotateMemory(device, ptr, stackId, tagId)
Napi::Value AnnotateMemory(const Napi::CallbackInfo& info) {
  auto& a = runtime(info).allocator(device_arg(info, 0));
  const auto stack = static_cast<std::uint32_t>(u64_arg(info, 2, "stackId"));
  const auto tag = static_cast<std::uint32_t>(u64_arg(info, 3, "tagId"));
  AddressLookups(a).annotate(u64_arg(info, 1, "ptr"), CallContext{stack, tag});
  return info.Env().Undefined();
}

Napi::Value MemGetInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  runtime(info).allocator(device_arg(info, 0)).mem_get_info(&free_bytes, &total);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, static_cast<double>(free_bytes));
  out.Set(1u, static_cast<double>(total));
  return out;
}

Napi::Value SetMemoryFraction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).set_memory_fraction(number_arg(info, 1, "fraction"));
  return env.Undefined();
}

Napi::Value GetMemoryFraction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, runtime(info).allocator(device_arg(info, 0)).memory_fraction());
}

Napi::Value SetAllocatorSettings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).set_config(AllocatorConfig::parse(string_arg(info, 0, "settings")));
  return env.Undefined();
}

// Parses a config string and throws as setAllocatorSettings would, changing nothing: callers
// that replace the runtime (replay) check their settings before they touch it.
Napi::Value CheckAllocatorSettings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  (void)AllocatorConfig::parse(string_arg(info, 0, "settings"));
  return env.Undefined();
}

Napi::Value setting_value(Napi::Env env, const SettingValue& v) {
  switch (v.type) {
    case SettingValue::Type::kBoolean:
      return Napi::Boolean::New(env, v.boolean);
    case SettingValue::Type::kDivisions: {
      // Keyed by each bucket's lower bound in MiB, as PyTorch's dict has them.
      Napi::Object div = Napi::Object::New(env);
      for (std::size_t i = 0; i < v.divisions.size(); ++i) {
        div.Set(std::to_string(std::size_t{1} << i), static_cast<double>(v.divisions[i]));
      }
      return div;
    }
    case SettingValue::Type::kNumber:
      break;
  }
  return Napi::Number::New(env, v.number);
}

// allocatorOptions(): the options table's rows, for the docs' table and for replay, which
// writes a settings dict back as a config string.
Napi::Value AllocatorOptions(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& options = allocator_options();
  Napi::Array out = Napi::Array::New(env, options.size());
  for (std::size_t i = 0; i < options.size(); ++i) {
    const OptionSpec& o = options[i];
    Napi::Object row = Napi::Object::New(env);
    row.Set("key", o.key);
    row.Set("kind", option_kind_name(o.kind));
    row.Set("default", o.default_text);
    row.Set("valid", o.valid_text);
    row.Set("meaning", o.meaning);
    row.Set("setting", o.setting == nullptr ? env.Null() : Napi::String::New(env, o.setting));
    out.Set(static_cast<std::uint32_t>(i), row);
  }
  return out;
}

// PyTorch's allocator_settings dict: of the runtime, or of a settings string when given one.
Napi::Value AllocatorSettings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const AllocatorConfig c = info.Length() > 0 && !info[0].IsUndefined()
                                ? AllocatorConfig::parse(string_arg(info, 0, "settings"))
                                : runtime(info).config();
  Napi::Object o = Napi::Object::New(env);
  o.Set("PYTORCH_CUDA_ALLOC_CONF", c.source);
  for (const OptionSpec& spec : allocator_options()) {
    if (spec.setting != nullptr) o.Set(spec.setting, setting_value(env, spec.report(c)));
  }
  return o;
}

Napi::Value Validate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::String::New(env, runtime(info).allocator(device_arg(info, 0)).validate());
}

}  // namespace

void register_memory_functions(Napi::Env env, Napi::Object exports) {
  export_function<StatKeys>(env, exports, "statKeys");
  export_function<AllocatorOptions>(env, exports, "allocatorOptions");
  export_function<MemoryStats>(env, exports, "memoryStats");
  export_function<TagStats>(env, exports, "tagStats");
  export_function<StatValue>(env, exports, "statValue");
  export_function<MonitorSample>(env, exports, "monitorSample");
  export_function<ResetPeakStats>(env, exports, "resetPeakStats");
  export_function<ResetAccumulatedStats>(env, exports, "resetAccumulatedStats");
  export_function<EmptyCache>(env, exports, "emptyCache");
  export_function<MemGetInfo>(env, exports, "memGetInfo");
  export_function<SetCachingEnabled>(env, exports, "setCachingEnabled");
  export_function<CachingEnabled>(env, exports, "cachingEnabled");
  export_function<AllocationStack>(env, exports, "allocationStack");
  export_function<AnnotateMemory>(env, exports, "annotateMemory");
  export_function<SetMemoryFraction>(env, exports, "setMemoryFraction");
  export_function<GetMemoryFraction>(env, exports, "getMemoryFraction");
  export_function<SetAllocatorSettings>(env, exports, "setAllocatorSettings");
  export_function<CheckAllocatorSettings>(env, exports, "checkAllocatorSettings");
  export_function<AllocatorSettings>(env, exports, "allocatorSettings");
  export_function<Validate>(env, exports, "validate");
}

}  // namespace cca::binding
