#pragma once
#include <napi.h>
namespace cca::binding {
void register_copy_functions(Napi::Env env, Napi::Object exports);
}
