// Objects a snapshot holds in many places (a stack's frames, a pool id): marked once, so the
// pickle writer memoizes them as PyTorch's pickles do, and the reader marks what it shared.
const shared = new WeakSet<object>();

/** Marks an object that may be referenced from many places (pickle memoizes it). */
export function markShared(obj: object): void {
  shared.add(obj);
}

export function isShared(obj: object): boolean {
  return shared.has(obj);
}
