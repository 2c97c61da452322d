// The cached alloc/free path's functions are marked hot, so the compiler places them together
// (.text.hot): unmarked, their time moved by a few percent whenever code was added elsewhere
// in the addon, at the same instruction count (bench/RESULTS.md, 2026-11-25).
#pragma once

#define CCA_HOT __attribute__((hot))
// For a hot-path helper with one caller that the compiler stopped inlining once it grew by a
// test (bench/RESULTS.md, 2026-11-26: 16 instructions per cached pair in call overhead).
#define CCA_HOT_INLINE __attribute__((hot, always_inline)) inline
