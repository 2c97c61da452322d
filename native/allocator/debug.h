// Internal assertions, by level (CMake option CCA_DEBUG, 0-3; the sanitizer build uses 3):
//   CCA_ASSERT            level >= 1: cheap checks of our own invariants
//   CCA_ASSERT_EXPENSIVE  level >= 3: the full validator after every mutating call
// These catch our bugs, never user errors: user errors are exceptions with codes.
#pragma once
#include <cstdio>
#include <cstdlib>

#ifndef CCA_DEBUG
#define CCA_DEBUG 0
#endif

#define CCA_FAIL(what)                                                           \
  do {                                                                           \
    std::fprintf(stderr, "cuda-caching-allocator internal error at %s:%d: %s\n", \
                 __FILE__, __LINE__, (what));                                    \
    std::abort();                                                                \
  } while (0)

#if CCA_DEBUG >= 1
#define CCA_ASSERT(cond) \
  do { if (!(cond)) CCA_FAIL(#cond); } while (0)
#else
#define CCA_ASSERT(cond) ((void)0)
#endif

#if CCA_DEBUG >= 3
#define CCA_VALIDATE_EVERY_OPERATION 1
#else
#define CCA_VALIDATE_EVERY_OPERATION 0
#endif
