// Rule 5 of Note [Private pools read from a trace that names none] (pools.ts): private
// segments grouped into pools, and each pool its id.
import type { Segment } from '../snapshot/types.js';
import { poolKey } from '../snapshot/pool-id.js';
import type { Instance, SegmentWalk } from './pool-walk.js';

export interface PoolGroups {
  /** The pool id n of (0, n) a segment is read in; 0: the default pools. Ids are handed out
   *  on first ask, so ask in trace order. */
  poolOf(g: Instance | undefined): number;
  /** Pools handed out so far (those kept from the final snapshot included). */
  count(): number;
}

/**
 * Union-find over the private segments: by the final pool id, by a pool's end (released
 * together), and by allocations made back to back in private segments. A group that is a
 * known pool (its final id, or the segments one end released) never joins another known one,
 * and two groups holding segments apart (rule 4) never join.
 */
export function groupPools(walk: SegmentWalk, poolEnds: Instance[][], finalSegs: Segment[]): PoolGroups {
  const { instances, trace, allocIn } = walk;
  const parent = instances.map((_, k) => k);
  const label: (string | null)[] = instances.map(() => null);
  const members: Instance[][] = instances.map((g) => [g]);
  const find = (k: number): number => (parent[k] === k ? k : (parent[k] = find(parent[k]!)));
  const union = (a: Instance, b: Instance): void => {
    let ra = find(a.index);
    let rb = find(b.index);
    if (ra === rb || (label[ra] !== null && label[rb] !== null && label[ra] !== label[rb])) return;
    if (members[ra]!.length > members[rb]!.length) [ra, rb] = [rb, ra];  // the smaller one's members are read
    for (const g of members[ra]!) for (const w of g.apart) if (find(w.index) === rb) return;
    parent[ra] = rb;
    label[rb] ??= label[ra]!;
    members[rb]!.push(...members[ra]!);
    members[ra] = [];
  };
  for (const g of instances) if (g.known === 'private' && g.finalPool !== 0) label[g.index] = `final ${g.finalPool}`;
  poolEnds.forEach((ended, k) => {
    for (const g of ended) label[find(g.index)] ??= `end ${k}`;
    for (const g of ended.slice(1)) union(g, ended[0]!);
  });
  let previous: Instance | undefined;
  for (let i = 0; i < trace.length; i++) {
    if (trace[i]!.action !== 'alloc') continue;
    const g = allocIn[i];
    if (g?.known === 'private') {
      if (previous) union(g, previous);
      previous = g;
    } else {
      previous = undefined;
    }
  }
  // Ids: a pool still in the final snapshot keeps its own; the others get new ones after all of them.
  const roots = new Map<number, number>();
  let next = Math.max(0, ...finalSegs.map((g) => poolKey(g.segment_pool_id))) + 1;
  for (const g of instances) {
    if (g.known === 'private' && g.finalPool !== 0) roots.set(find(g.index), g.finalPool);
  }
  return {
    poolOf(g) {
      if (g?.known !== 'private') return 0;
      const root = find(g.index);
      let id = roots.get(root);
      if (id === undefined) roots.set(root, (id = next++));
      return id;
    },
    count: () => roots.size,
  };
}
