// Rule 3 of Note [Private pools read from a trace that names none] (pools.ts): each run of
// segment frees read as an empty_cache() (the default pools) or a pool's end, from the
// segments already known, to a fixed point, the runs nothing decides given their likelier
// reading latest first. What a reading makes known feeds the others, and rule 4's pairs.
import type { Instance, Release, SegmentWalk } from './pool-walk.js';

export interface ReleaseReading {
  /** The segments each run read as a pool's end released, in the order decided (rule 5). */
  poolEnds: Instance[][];
  /** The runs that were open, and the reading each was given: a pool's end? */
  open: Map<Release, boolean>;
}

/** The likelier reading of a run nothing decides: a pool's end when the entry before it freed
 *  memory inside a segment it releases (a MemPool ends when its last user lets go), but only
 *  where something else has shown a private pool; an empty_cache() otherwise. */
export function likelierPoolEnd(walk: SegmentWalk, run: Release, privateSeen: boolean): boolean {
  return privateSeen && walk.freedInside(run.at, run.released);
}

/** What the segments already known say of a run: 'end' (a pool's), 'default', or null (open,
 *  or contradictory). */
export function runReading(run: Release): 'end' | 'default' | null {
  const poolEnd = !run.certain && (run.released.some((g) => g.known === 'private') || run.survivors.some((g) => g.known === 'default'));
  const defaults = run.certain || run.released.some((g) => g.known === 'default');
  return poolEnd === defaults ? null : poolEnd ? 'end' : 'default';
}

/** Reads every release of the walk; `forced` gives some runs their reading (search.ts). */
export function readReleases(walk: SegmentWalk, forced: ReadonlyMap<number, boolean>): ReleaseReading {
  const { releases, instances } = walk;
  // A release's reading can change only when one of its segments becomes known: each pass
  // reads again only those (`dirty`), in release order, so the decisions and their order are
  // those of reading every release each pass, without its cost (the square of the releases
  // when many segments survive many of them).
  const releasesOf = new Map<Instance, Release[]>();
  for (const r of releases) {
    for (const g of [...r.released, ...r.survivors]) {
      const list = releasesOf.get(g);
      if (list) list.push(r);
      else releasesOf.set(g, [r]);
    }
  }
  const dirty = new Set<Release>(releases);
  // Rule 4's consequence: a segment known default makes those apart from it private; one
  // known private tells nothing of them (other pools).
  const mark = (g: Instance, k: 'private' | 'default'): boolean => {
    if (g.known !== null) return false;
    g.known = k;
    for (const r of releasesOf.get(g) ?? []) dirty.add(r);
    if (k === 'default') for (const w of g.apart) mark(w, 'private');
    return true;
  };
  for (const g of instances) if (g.known === 'default') for (const w of g.apart) mark(w, 'private');
  const out: ReleaseReading = { poolEnds: [], open: new Map() };
  const decided = new Set<Release>();
  const decide = (r: Release, poolEnd: boolean): boolean => {
    decided.add(r);
    let changed = false;
    if (poolEnd) {
      for (const g of r.released) changed = mark(g, 'private') || changed;
      out.poolEnds.push(r.released);
    } else {
      for (const g of r.survivors) changed = mark(g, 'private') || changed;
      for (const g of r.released) changed = mark(g, 'default') || changed;
    }
    return changed;
  };
  const readOpen = (r: Release, poolEnd: boolean) => {
    out.open.set(r, poolEnd);
    decide(r, poolEnd);
  };
  for (const r of releases) {
    const f = forced.get(r.at);
    if (f !== undefined && !r.certain) readOpen(r, f);
  }
  let privateSeen: boolean | undefined;  // before the first likelier reading is made
  let latest = releases.length - 1;  // undecided releases only go, so the latest only moves back
  for (;;) {
    for (let changed = true; changed;) {
      changed = false;
      for (const r of releases) {
        if (decided.has(r) || !dirty.delete(r)) continue;
        const reading = runReading(r);
        if (reading !== null) changed = decide(r, reading === 'end') || changed;
      }
    }
    while (latest >= 0 && (decided.has(releases[latest]!) || releases[latest]!.released.length === 0)) latest--;
    if (latest < 0) break;
    const next = releases[latest]!;
    privateSeen ??= instances.some((g) => g.known === 'private');
    readOpen(next, likelierPoolEnd(walk, next, privateSeen));
  }
  return out;
}
