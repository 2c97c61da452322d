#include "js_errors.h"

#include "addon_state.h"

namespace cca::binding {

Napi::Value js_error(Napi::Env env, const AllocatorError& e) {
  Napi::Object fields = Napi::Object::New(env);
  if (e.kind() == ErrorKind::kOutOfMemory) {
    const OutOfMemoryInfo& i = static_cast<const OutOfMemoryError&>(e).info();
#define CCA_OOM_SET(member, js_name) fields.Set(js_name, static_cast<double>(i.member));
    CCA_OOM_FIELDS(CCA_OOM_SET)
#undef CCA_OOM_SET
    // Pinned host memory belongs to no device: -1, not the unsigned field's wrap-around.
    if (i.device == static_cast<std::uint64_t>(-1)) fields.Set("device", -1);
  }
  AddonState& s = state(env);
  if (!s.error_factory.IsEmpty()) {
    return s.error_factory.Call({Napi::String::New(env, error_kind_name(e.kind())), Napi::String::New(env, e.what()),
                                 Napi::String::New(env, e.code()), fields});
  }
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", Napi::String::New(env, e.code()));
  return err.Value();
}

void set_pending(napi_env env, const AllocatorError& e) {
  try {
    napi_throw(env, js_error(Napi::Env(env), e));
  } catch (const Napi::Error& err) {
    err.ThrowAsJavaScriptException();  // the factory itself threw: that error goes instead
  }
}

}  // namespace cca::binding
