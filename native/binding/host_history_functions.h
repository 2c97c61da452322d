#pragma once
#include <napi.h>
namespace cca::binding {
void register_host_history_functions(Napi::Env env, Napi::Object exports);
}
