// Allocator errors as JS errors: the kind (errors.h's CCA_ERROR_KINDS) picks the class
// through the factory lib/errors.ts registers; the code and, for an OOM, its numbers come
// along. Written once, for the node-addon-api functions (export.h) and the plain Node-API
// hot path alike.
#pragma once
#include <napi.h>

#include <stdexcept>

#include "../common/errors.h"

namespace cca::binding {

// The JS error for `e` (not thrown).
Napi::Value js_error(Napi::Env env, const AllocatorError& e);

// Leaves `e` as the pending JS exception, for functions on plain Node-API that return
// nullptr after it.
void set_pending(napi_env env, const AllocatorError& e);

// Returns fn(), or on_error(e) for the error e it threw: the one list of what an exported
// function catches (an std::invalid_argument from the standard library is a bad argument).
template <class F, class OnError>
auto translate_errors(F&& fn, OnError&& on_error) -> decltype(fn()) {
  try {
    return fn();
  } catch (const AllocatorError& e) {
    return on_error(e);
  } catch (const std::invalid_argument& e) {
    return on_error(InvalidArgumentError(e.what()));
  }
}

}  // namespace cca::binding
