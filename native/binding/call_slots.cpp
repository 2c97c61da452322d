#include "call_slots.h"

#include <algorithm>

namespace cca::binding {

Napi::Float64Array CallSlots::array(Napi::Env env) {
  if (keep_.IsEmpty()) {
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, kCallSlots * sizeof(double));
    std::copy_n(unshared_, kCallSlots, static_cast<double*>(buffer.Data()));
    keep_ = Napi::Persistent(buffer);
    words_ = static_cast<double*>(buffer.Data());
  }
  return Napi::Float64Array::New(env, kCallSlots, keep_.Value(), 0);
}

}  // namespace cca::binding
