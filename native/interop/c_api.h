// The C ABI's function table (include/cca.h): what interop.allocatorApi() hands to JS.
#pragma once
#include "../../include/cca.h"

namespace cca {

// The process's one table: static, never moved, never freed.
const cca_api_v1* c_api_table();

}  // namespace cca
