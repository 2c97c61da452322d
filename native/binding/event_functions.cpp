// Events, waits between streams, and completion as a promise. A stream's completion is a
// host function queued on it, which calls back into JS through a thread-safe function of
// its own (the driver runs host functions on a thread of its own): the event loop never
// blocks, and a pending completion keeps the process alive as pending I/O does.
#include "event_functions.h"
#include "../allocator/policy/facets/graph_captures.h"

#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

Napi::Value EventCreate(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(runtime(info).compute(device_arg(info, 0))
                                                               .event_create(bool_arg(info, 1, "timing"))));
}

Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).event_record(u64_arg(info, 1, "event"), u64_arg(info, 2, "stream"));
  return info.Env().Undefined();
}

Napi::Value EventQuery(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), runtime(info).compute(device_arg(info, 0)).event_query(u64_arg(info, 1, "event")));
}

Napi::Value EventSynchronize(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).event_synchronize(u64_arg(info, 1, "event"));
  return info.Env().Undefined();
}

Napi::Value EventElapsed(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), runtime(info).compute(device_arg(info, 0))
                                           .event_elapsed_ms(u64_arg(info, 1, "start"), u64_arg(info, 2, "end")));
}

Napi::Value EventDestroy(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).event_destroy(u64_arg(info, 1, "event"));
  return info.Env().Undefined();
}

Napi::Value StreamWaitEvent(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).stream_wait_event(u64_arg(info, 1, "stream"), u64_arg(info, 2, "event"));
  return info.Env().Undefined();
}

// One pending completion: resolved on the JS thread once the host function ran.
struct Completion {
  napi_deferred deferred;
  napi_threadsafe_function tsfn;
};

void resolve_on_js_thread(napi_env env, napi_value, void* context, void*) {
  auto* c = static_cast<Completion*>(context);
  if (env == nullptr) return;  // the environment is being torn down
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  napi_resolve_deferred(env, c->deferred, undefined);
}

void delete_completion(napi_env, void* data, void*) { delete static_cast<Completion*>(data); }

// Runs on the backend's thread (the driver's, or the caller's when nothing was queued).
void completion_host_function(void* data) {
  napi_threadsafe_function tsfn = static_cast<Completion*>(data)->tsfn;
  napi_call_threadsafe_function(tsfn, nullptr, napi_tsfn_nonblocking);
  // The last release: the finalizer frees the completion once the call above has run.
  napi_release_threadsafe_function(tsfn, napi_tsfn_release);
}

// streamDone(device, stream) -> Promise<void>, resolved once the work queued so far is done.
Napi::Value StreamDone(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Runtime& r = runtime(info);
  const int device = device_arg(info, 0);
  const StreamId stream = u64_arg(info, 1, "stream");
  r.allocator(device).require_live_stream(stream);  // before anything is made
  // Inside a capture the host function would become a node of the graph, run at each launch.
  GraphCaptures(r.allocator(device)).refuse_if_capturing("stream.done()");
  auto* c = new Completion{};
  napi_value promise, name;
  NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &c->deferred, &promise), Napi::Value());
  NAPI_THROW_IF_FAILED(env, napi_create_string_utf8(env, "cca.streamDone", NAPI_AUTO_LENGTH, &name), Napi::Value());
  NAPI_THROW_IF_FAILED(env,
                       napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, c, delete_completion, c,
                                                       resolve_on_js_thread, &c->tsfn),
                       Napi::Value());
  try {
    r.compute(device).stream_add_callback(stream, completion_host_function, c);
  } catch (...) {
    napi_release_threadsafe_function(c->tsfn, napi_tsfn_abort);  // nothing was queued
    throw;
  }
  return Napi::Value(env, promise);
}

}  // namespace

void register_event_functions(Napi::Env env, Napi::Object exports) {
  export_function<EventCreate>(env, exports, "eventCreate");
  export_function<EventRecord>(env, exports, "eventRecord");
  export_function<EventQuery>(env, exports, "eventQuery");
  export_function<EventSynchronize>(env, exports, "eventSynchronize");
  export_function<EventElapsed>(env, exports, "eventElapsed");
  export_function<EventDestroy>(env, exports, "eventDestroy");
  export_function<StreamWaitEvent>(env, exports, "streamWaitEvent");
  export_function<StreamDone>(env, exports, "streamDone");
}

}  // namespace cca::binding
