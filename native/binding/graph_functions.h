#pragma once
#include <napi.h>
namespace cca::binding {
void register_graph_functions(Napi::Env env, Napi::Object exports);
}
