#pragma once
#include <napi.h>
namespace cca::binding {
void register_native_stack_functions(Napi::Env env, Napi::Object exports);
}
