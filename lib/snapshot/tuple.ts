// Python tuples in a JS value tree: arrays carrying a non-enumerable brand, so the pickle
// writer emits TUPLE opcodes (e.g. segment_pool_id) and JSON stays a plain array.
const TUPLE = Symbol.for('cuda-caching-allocator.tuple');

export function tuple<T>(...items: T[]): T[] {
  return asTuple(items);
}

/** Brands an array as a tuple in place (no spread: a pickle's TUPLE may hold millions). */
export function asTuple<T>(items: T[]): T[] {
  Object.defineProperty(items, TUPLE, { value: true });
  return items;
}

export function isTuple(value: unknown): boolean {
  return Array.isArray(value) && (value as unknown as Record<symbol, unknown>)[TUPLE] === true;
}
