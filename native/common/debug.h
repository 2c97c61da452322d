// Internal checks, by level (CMake option CCA_DEBUG; the sanitizer build uses 3):
//   0  none (releases)
//   1  CCA_ASSERT: cheap checks inside the ledger's transitions and the segment's list
//      operations (a block in the state the transition expects, one pool per change, ...)
//   3  also the full validator (Ledger::validate) after every mutating call
// Level 2 adds nothing over 1. These catch our bugs, never user errors: user errors are
// exceptions with codes.
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

// An invariant the optimizer may rely on: checked like CCA_ASSERT in debug builds, told to
// the compiler in release ones (where it lets a transition fold away the cases of a state it
// knows). Only for what the validator also proves.
#if CCA_DEBUG >= 1
#define CCA_ASSUME(cond) CCA_ASSERT(cond)
#else
#define CCA_ASSUME(cond) \
  do { if (!(cond)) __builtin_unreachable(); } while (0)
#endif

#if CCA_DEBUG >= 3
#define CCA_VALIDATE_EVERY_OPERATION 1
#else
#define CCA_VALIDATE_EVERY_OPERATION 0
#endif
