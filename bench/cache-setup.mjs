// The cached state the JS pair benchmarks start from, through a raw binding (as
// bench/native/cache_setup.h): 2N blocks of 64 sizes, every other one freed, so N free
// blocks wait between live ones. Returns the pointers; the odd ones are still live.
export function fillCache(native, n) {
  const ptrs = [];
  for (let i = 0; i < 2 * n; i++) ptrs.push(native.alloc(0, 512 * (1 + (Math.floor(i / 2) % 64)), 0));
  for (let i = 0; i < ptrs.length; i += 2) native.free(0, ptrs[i]);
  return ptrs;
}
