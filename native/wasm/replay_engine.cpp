// The allocator's policy on one simulated device, compiled to WebAssembly for replay and
// what-if where the native addon cannot load (lib/replay/wasm-port.ts is its only caller).
// It is the binding's counterpart for the calls replay makes, and thin in the same way: the
// allocator and the simulator are the native ones, unchanged.
//
// The boundary carries plain numbers: every size, address and stream as a double (exact below
// 2^53, as on the native side), results in one scratch array of doubles (out_ptr(), read
// after each call: it may move when it grows), and each call's outcome as a status. A thrown
// error becomes a status with its code and message kept for cca_error_code/message; an
// out-of-memory error also leaves its numbers in the scratch array (CCA_OOM_FIELDS' order).
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "../allocator/policy/caching_allocator.h"
#include "../allocator/policy/facets/mem_pools.h"
#include "../allocator/policy/config.h"
#include "../allocator/policy/options.h"
#include "../allocator/policy/facets/ledger_reads.h"
#include "../allocator/policy/facets/replay_planner.h"
#include "../allocator/policy/size_policy.h"
#include "../allocator/state/stats.h"
#include "../common/errors.h"
#include "../device/sim/sim_device.h"

namespace cca::wasm {
namespace {

// A call's status: 0, or 1 + the ErrorKind of what it threw (lib/replay/wasm-port.ts names
// them with the kinds' names, as the binding's errors do).
constexpr int kOk = 0;
int status_of(ErrorKind kind) { return 1 + static_cast<int>(kind); }

struct Engine {
  std::unique_ptr<SimDevice> device;
  std::unique_ptr<DeviceCachingAllocator> allocator;
};

Engine g_engine;
std::vector<double> g_out(64);
std::string g_code;
std::string g_message;
std::string g_text;  // a string result (the settings dict as JSON, the validator's findings)

void put(std::size_t i, double v) {
  if (g_out.size() <= i) g_out.resize(2 * i + 16);
  g_out[i] = v;
}

double num(std::uint64_t v) { return static_cast<double>(v); }

std::uint64_t u64(double v) { return v <= 0 ? 0 : static_cast<std::uint64_t>(v); }

DeviceCachingAllocator& allocator() {
  if (!g_engine.allocator) throw InvalidArgumentError("the wasm engine has no device: call cca_engine_create first");
  return *g_engine.allocator;
}

// Runs `f`, turning what it throws into a status (nothing escapes into JS).
template <class F>
int guarded(F&& f) {
  try {
    f();
    return kOk;
  } catch (const OutOfMemoryError& e) {
    g_code = e.code();
    g_message = e.what();
    std::size_t i = 0;
#define CCA_OOM_PUT(member, js_name) put(i++, num(e.info().member));
    CCA_OOM_FIELDS(CCA_OOM_PUT)
#undef CCA_OOM_PUT
    return status_of(e.kind());
  } catch (const AllocatorError& e) {
    g_code = e.code();
    g_message = e.what();
    return status_of(e.kind());
  } catch (const std::exception& e) {
    g_code = "ERR_CCA_INTERNAL";
    g_message = e.what();
    return status_of(ErrorKind::kAllocator);
  }
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += std::isfinite(v) ? buf : "null";
}

// PyTorch's allocator_settings dict, as the binding's allocatorSettings builds it.
std::string settings_json(const AllocatorConfig& c) {
  std::string out = "{";
  append_json_string(out, "PYTORCH_CUDA_ALLOC_CONF");
  out += ':';
  append_json_string(out, c.source);
  for (const OptionSpec& spec : allocator_options()) {
    if (spec.setting == nullptr) continue;
    const SettingValue v = spec.report(c);
    out += ',';
    append_json_string(out, spec.setting);
    out += ':';
    switch (v.type) {
      case SettingValue::Type::kBoolean:
        out += v.boolean ? "true" : "false";
        break;
      case SettingValue::Type::kDivisions:
        out += '{';
        for (std::size_t i = 0; i < v.divisions.size(); ++i) {
          if (i > 0) out += ',';
          append_json_string(out, std::to_string(std::size_t{1} << i));
          out += ':';
          append_json_number(out, num(v.divisions[i]));
        }
        out += '}';
        break;
      case SettingValue::Type::kNumber:
        append_json_number(out, v.number);
        break;
    }
  }
  return out + "}";
}

}  // namespace
}  // namespace cca::wasm

using namespace cca;
using namespace cca::wasm;

extern "C" {

EMSCRIPTEN_KEEPALIVE double* cca_out_ptr() { return g_out.data(); }
EMSCRIPTEN_KEEPALIVE const char* cca_error_code() { return g_code.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* cca_error_message() { return g_message.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* cca_text() { return g_text.c_str(); }

// A fresh simulated device of `capacity` bytes under `settings`; the previous one goes,
// with everything on it.
EMSCRIPTEN_KEEPALIVE int cca_engine_create(double capacity, const char* settings) {
  return guarded([&] {
    const AllocatorConfig config = AllocatorConfig::parse(settings);
    g_engine.allocator.reset();
    g_engine.device = std::make_unique<SimDevice>(0, u64(capacity));
    g_engine.allocator = std::make_unique<DeviceCachingAllocator>(*g_engine.device, config);
  });
}

EMSCRIPTEN_KEEPALIVE void cca_engine_destroy() {
  g_engine.allocator.reset();
  g_engine.device.reset();
}

// Parses a config string: the parser's status, changing nothing.
EMSCRIPTEN_KEEPALIVE int cca_check_settings(const char* settings) {
  return guarded([&] { (void)AllocatorConfig::parse(settings); });
}

// The settings dict of a config string (or the engine's own, for null) as JSON in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_settings_json(const char* settings) {
  return guarded([&] { g_text = settings_json(settings == nullptr ? allocator().config() : AllocatorConfig::parse(settings)); });
}

// The options table's rows (the binding's allocatorOptions) as JSON in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_options_json() {
  return guarded([] {
    std::string out = "[";
    for (const OptionSpec& o : allocator_options()) {
      if (out.size() > 1) out += ',';
      const std::pair<const char*, const char*> fields[] = {{"key", o.key}, {"kind", option_kind_name(o.kind)},
                                                            {"default", o.default_text}, {"valid", o.valid_text},
                                                            {"meaning", o.meaning}, {"setting", o.setting}};
      out += '{';
      for (const auto& [name, value] : fields) {
        if (out.back() != '{') out += ',';
        append_json_string(out, name);
        out += ':';
        if (value == nullptr) {
          out += "null";
        } else {
          append_json_string(out, value);
        }
      }
      out += '}';
    }
    g_text = out + "]";
  });
}

// out: the block size a request gets under `settings`, and the size of a segment made for it.
EMSCRIPTEN_KEEPALIVE int cca_size_policy(const char* settings, double size) {
  return guarded([&] {
    const AllocatorConfig config = AllocatorConfig::parse(settings);
    const Bytes rounded = round_size(u64(size), config);
    put(0, num(rounded));
    put(1, num(allocation_size(rounded, config)));
  });
}

EMSCRIPTEN_KEEPALIVE int cca_stream_create() {
  return guarded([] { put(0, num(allocator().create_stream())); });
}
EMSCRIPTEN_KEEPALIVE int cca_stream_destroy(double stream) {
  return guarded([&] { allocator().destroy_stream(u64(stream)); });
}
EMSCRIPTEN_KEEPALIVE int cca_stream_synchronize(double stream) {
  return guarded([&] { allocator().synchronize_stream(u64(stream)); });
}

EMSCRIPTEN_KEEPALIVE int cca_pool_create() {
  return guarded([] { put(0, MemPools(allocator()).create_pool()); });
}
EMSCRIPTEN_KEEPALIVE int cca_pool_begin(double pool) {
  return guarded([&] { MemPools(allocator()).begin_allocate_to_pool(static_cast<std::uint32_t>(pool)); });
}
EMSCRIPTEN_KEEPALIVE int cca_pool_end(double pool) {
  return guarded([&] { MemPools(allocator()).end_allocate_to_pool(static_cast<std::uint32_t>(pool)); });
}
EMSCRIPTEN_KEEPALIVE int cca_pool_release(double pool) {
  return guarded([&] { MemPools(allocator()).release_pool(static_cast<std::uint32_t>(pool)); });
}

EMSCRIPTEN_KEEPALIVE int cca_alloc(double size, double stream) {
  return guarded([&] { g_out[0] = num(allocator().malloc(u64(size), u64(stream))); });
}
EMSCRIPTEN_KEEPALIVE int cca_free(double ptr) {
  return guarded([&] { allocator().free(u64(ptr)); });
}
EMSCRIPTEN_KEEPALIVE int cca_record_stream(double ptr, double stream) {
  return guarded([&] { allocator().record_stream(u64(ptr), u64(stream)); });
}
EMSCRIPTEN_KEEPALIVE int cca_empty_cache() {
  return guarded([] { allocator().empty_cache(); });
}

// The simulator's controls (the binding's simHoldStream, simCompleteStream, simFailNextMallocs).
EMSCRIPTEN_KEEPALIVE int cca_sim_hold_stream(double stream, int held) {
  return guarded([&] {
    allocator().require_live_stream(u64(stream));
    g_engine.device->hold_stream(u64(stream), held != 0);
  });
}
EMSCRIPTEN_KEEPALIVE int cca_sim_complete_stream(double stream) {
  return guarded([&] {
    allocator().require_live_stream(u64(stream));
    g_engine.device->complete_stream(u64(stream));
  });
}
EMSCRIPTEN_KEEPALIVE int cca_sim_fail_next_mallocs(int count, double after_bytes) {
  return guarded([&] {
    (void)allocator();
    g_engine.device->fail_next_mallocs(count, u64(after_bytes));
  });
}

// layout: (offset, block size, requested size) per live block; out: the segment's address,
// then each live block's.
EMSCRIPTEN_KEEPALIVE int cca_place_segment(double size, double stream, double pool, int small, const double* layout,
                                           int blocks) {
  return guarded([&] {
    std::vector<PlacedBlock> live(static_cast<std::size_t>(blocks));
    for (std::size_t i = 0; i < live.size(); ++i) {
      live[i].offset = u64(layout[3 * i]);
      live[i].size = u64(layout[3 * i + 1]);
      live[i].requested = u64(layout[3 * i + 2]);
    }
    const std::vector<DevicePtr> ptrs =
        ReplayPlanner(allocator()).place_segment(u64(size), u64(stream), static_cast<std::uint32_t>(pool), small != 0, live, 0);
    for (std::size_t i = 0; i < ptrs.size(); ++i) put(i, num(ptrs[i]));
  });
}
EMSCRIPTEN_KEEPALIVE int cca_unplace_segment(double base) {
  return guarded([&] { ReplayPlanner(allocator()).unplace_segment(u64(base)); });
}

// out: cached (0/1), its ptr, its size, limited, limitReleases, oversizeRetries, n, then n
// oversize segment sizes.
EMSCRIPTEN_KEEPALIVE int cca_plan_malloc(double size, double stream, double pool) {
  return guarded([&] {
    const auto plan = ReplayPlanner(allocator()).plan_malloc(u64(size), u64(stream), static_cast<std::uint32_t>(pool));
    put(0, plan.cached ? 1 : 0);
    put(1, plan.cached ? num(plan.cached->ptr) : 0);
    put(2, plan.cached ? num(plan.cached->size) : 0);
    put(3, plan.limited);
    put(4, plan.limit_releases);
    put(5, plan.oversize_retries);
    put(6, num(plan.oversize_sizes.size()));
    for (std::size_t i = 0; i < plan.oversize_sizes.size(); ++i) put(7 + i, num(plan.oversize_sizes[i]));
  });
}

// The stat keys (stat_keys() order) as one string joined by newlines, in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_stat_keys() {
  return guarded([] {
    g_text.clear();
    for (const std::string& k : stat_keys()) {
      if (!g_text.empty()) g_text += '\n';
      g_text += k;
    }
  });
}
EMSCRIPTEN_KEEPALIVE int cca_stat_value(int index) {
  return guarded([&] {
    if (index < 0 || static_cast<std::size_t>(index) >= stat_keys().size()) {
      throw InvalidArgumentError("no stat at index " + std::to_string(index), "ERR_INVALID_ARG_VALUE");
    }
    const DeviceCachingAllocator& a = allocator();
    g_out[0] = stat_value(a.stats(), reported_max_split(a.max_split_size()), static_cast<std::size_t>(index));
  });
}
EMSCRIPTEN_KEEPALIVE int cca_reset_peaks() {
  return guarded([] { allocator().reset_peak_stats(); });
}

// out: reserved and active bytes, and the largest free cached block (monitorSample's figures).
EMSCRIPTEN_KEEPALIVE int cca_free_state() {
  return guarded([] {
    const MonitorSample m = LedgerReads(allocator()).monitor_sample();
    put(0, static_cast<double>(m.stats.arrays[kReservedBytes][kAggregate].current));
    put(1, static_cast<double>(m.stats.arrays[kActiveBytes][kAggregate].current));
    put(2, num(std::max(m.largest_free_small, m.largest_free_large)));
  });
}

// out: n, then per segment of the default pools, not expandable, holding nothing live:
// small (0/1), stream, size, address.
EMSCRIPTEN_KEEPALIVE int cca_free_default_segments() {
  return guarded([] {
    const DeviceSnapshot snap = allocator().snapshot(0, false);
    std::size_t n = 0;
    for (const SnapshotSegment& s : snap.segments) {
      if (s.is_expandable || s.pool != 0) continue;
      bool empty = true;
      for (std::size_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
        if (snap.blocks[b].state == BlockState::kAllocated) empty = false;
      }
      if (!empty) continue;
      put(1 + 4 * n, s.is_small);
      put(2 + 4 * n, num(s.stream));
      put(3 + 4 * n, num(s.total_size));
      put(4 + 4 * n, num(s.address));
      ++n;
    }
    put(0, num(n));
  });
}

// History from here on: at most `max_entries`, the actions in `skip_mask` left out.
EMSCRIPTEN_KEEPALIVE int cca_record_history(double max_entries, int skip_mask) {
  return guarded([&] {
    HistoryOptions h;
    h.enabled = true;
    h.context = RecordContext::kNever;
    h.max_entries = static_cast<std::size_t>(max_entries);
    h.skip_mask = static_cast<std::uint32_t>(skip_mask);
    allocator().set_history(h);
  });
}

// out: n, then per history entry, oldest first: action, address, size, stream.
EMSCRIPTEN_KEEPALIVE int cca_history() {
  return guarded([] {
    const DeviceSnapshot snap = allocator().snapshot(0, true);
    put(4 * snap.traces.size(), 0);  // one resize for the lot
    g_out[0] = num(snap.traces.size());
    for (std::size_t i = 0; i < snap.traces.size(); ++i) {
      const TraceEntry& e = snap.traces[i];
      g_out[1 + 4 * i] = static_cast<double>(e.action);
      g_out[2 + 4 * i] = num(e.addr);
      g_out[3 + 4 * i] = num(e.size);
      g_out[4 + 4 * i] = num(e.stream);
    }
  });
}

// The error kinds' names, in ErrorKind's order (a status is 1 + one), one per line in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_error_kinds() {
  return guarded([] {
    g_text.clear();
#define CCA_KIND_NAME(e, name) g_text += g_text.empty() ? name : "\n" name;
    CCA_ERROR_KINDS(CCA_KIND_NAME)
#undef CCA_KIND_NAME
  });
}

// The history actions' names, in TraceAction's order (cca_history's action numbers), one
// per line in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_action_names() {
  return guarded([] {
    g_text.clear();
    for (int a = 0; a < static_cast<int>(TraceAction::kNumActions); ++a) {
      if (a > 0) g_text += '\n';
      g_text += trace_action_name(static_cast<TraceAction>(a));
    }
  });
}

// The JS names of an out-of-memory error's numbers, in the order a failed call leaves them
// in the scratch array, one per line in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_oom_fields() {
  return guarded([] {
    g_text.clear();
#define CCA_OOM_NAME(member, js_name) g_text += g_text.empty() ? js_name : "\n" js_name;
    CCA_OOM_FIELDS(CCA_OOM_NAME)
#undef CCA_OOM_NAME
  });
}

// The invariant validator's findings ("" when the state is sound) in cca_text.
EMSCRIPTEN_KEEPALIVE int cca_validate() {
  return guarded([] { g_text = allocator().validate(); });
}

}  // extern "C"
