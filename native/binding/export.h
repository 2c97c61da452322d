// Exporting a function: exports[name] = Fn, wrapped so that an allocator error leaves it
// as its JS class (js_errors.h). Every exported function goes through here, so each
// translates errors the same way by construction, and a function's body is its logic
// only. The function's data is the environment's state, which arrives with the arguments
// (an instance-data lookup would add a call to every crossing).
#pragma once
#include <napi.h>

#include "addon_state.h"
#include "js_errors.h"

namespace cca::binding {

using Exported = Napi::Value (*)(const Napi::CallbackInfo&);

template <Exported Fn>
Napi::Value guarded(const Napi::CallbackInfo& info) {
  return translate_errors([&] {
    hand_over_pending(*static_cast<AddonState*>(info.Data()));
    return Fn(info);
  },
                          [&](const AllocatorError& e) -> Napi::Value { throw Napi::Error(info.Env(), js_error(info.Env(), e)); });
}

template <Exported Fn>
void export_function(Napi::Env env, Napi::Object exports, const char* name) {
  exports.Set(name, Napi::Function::New<guarded<Fn>>(env, name, &state(env)));
}

// The hot paths (allocation_functions.cpp, launch_functions.cpp) are plain Node-API
// callbacks instead, for the fewest engine calls per crossing: exported with the
// environment's state as their data, and their bodies run under guarded_plain, which
// leaves an allocator error pending as its JS class and returns nullptr. Each hands over
// the pending frees right after napi_get_cb_info, before its arguments (plain_hand_over).
inline void export_plain(Napi::Env env, Napi::Object exports, const char* name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, &state(env), &fn);
  exports.Set(name, Napi::Value(env, fn));
}

template <class F>
napi_value guarded_plain(napi_env env, F&& fn) {
  return translate_errors(std::forward<F>(fn), [&](const AllocatorError& e) -> napi_value {
    set_pending(env, e);
    return nullptr;
  });
}

// hand_over_pending for a plain callback: false, with the error pending, when a free failed.
CCA_HOT_INLINE bool plain_hand_over(napi_env env, void* data) {
  return translate_errors([&] {
    hand_over_pending(*static_cast<AddonState*>(data));
    return true;
  }, [&](const AllocatorError& e) {
    set_pending(env, e);
    return false;
  });
}

}  // namespace cca::binding
