#pragma once
#include <napi.h>
namespace cca::binding {
void register_mem_pool_functions(Napi::Env env, Napi::Object exports);
}
