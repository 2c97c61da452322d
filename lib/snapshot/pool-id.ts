// Pool ids as PyTorch writes them: (0, 0) the default pools; (0, n) a MemPool or a pool from
// graph_pool_handle(); (n, 0) a CUDA graph's own pool (PyTorch's graph_pool_handle(false):
// only the first value set, to tell it from the handles). Code that keys by pool takes one
// number per pool from poolKey: n for (0, n), -n for (n, 0), 0 for the default pools.
import { tuple } from './tuple.js';
import { markShared } from './shared.js';

export function poolKey(id: readonly number[] | undefined): number {
  if (id === undefined) return 0;
  const [a = 0, b = 0] = id;
  return b !== 0 ? b : -a;
}

// Our pools are numbered n of (0, n) natively; those a capture made for its graph alone are
// written (n, 0), as PyTorch writes a graph's own pool. Ids are unique in the process.
const graphOwned = new Set<number>();

/** @internal compute/graph.ts: pool n was made by a capture for its graph alone. */
export function markGraphOwnedPool(n: number): void {
  graphOwned.add(n);
  tuples.delete(n);
}

export function isGraphOwnedPool(n: number): boolean {
  return graphOwned.has(n);
}

// One frozen tuple per pool, shared by every segment and entry of that pool (pickle memoizes it once).
const tuples = new Map<number, number[]>();

/** The tuple a snapshot writes for our pool number n. */
export function poolTupleOf(n: number): number[] {
  let t = tuples.get(n);
  if (!t) {
    t = Object.freeze(graphOwned.has(n) ? tuple(n, 0) : tuple(0, n)) as number[];
    markShared(t);
    tuples.set(n, t);
  }
  return t;
}
