#pragma once
#include <napi.h>
namespace cca::binding {
void register_blas_functions(Napi::Env env, Napi::Object exports);
}
