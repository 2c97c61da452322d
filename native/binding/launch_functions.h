#pragma once
#include <napi.h>
namespace cca::binding {
void register_launch_functions(Napi::Env env, Napi::Object exports);
}
