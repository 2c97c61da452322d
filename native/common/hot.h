// The cached alloc/free path's functions are marked hot, so the compiler places them together
// (.text.hot): unmarked, their time moved by a few percent whenever code was added elsewhere
// in the addon, at the same instruction count (bench/RESULTS.md, 2026-11-25).
#pragma once

#define CCA_HOT __attribute__((hot))
