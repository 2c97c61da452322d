// Per-environment addon state: the JS error factory and the owner id stamped on every
// allocation, so a worker's allocations are released when its environment is torn down.
#pragma once
#include <napi.h>

#include <cstdint>

#include "../allocator/errors.h"

namespace cca::binding {

struct AddonState {
  std::uint32_t owner = 0;
  Napi::FunctionReference error_factory;  // (kind, message, code, fields) => Error
};

AddonState& state(Napi::Env env);
void install_state(Napi::Env env);

// Converts an allocator error into an instance of the JS class registered for it.
[[noreturn]] void throw_js(Napi::Env env, const AllocatorError& e);

// Runs fn, translating allocator errors; every exported function goes through this.
template <class F>
Napi::Value guarded(Napi::Env env, F&& fn) {
  try {
    return fn();
  } catch (const AllocatorError& e) {
    throw_js(env, e);
  } catch (const std::invalid_argument& e) {
    throw_js(env, InvalidArgumentError(e.what()));
  }
}

}  // namespace cca::binding
