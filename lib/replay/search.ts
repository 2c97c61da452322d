// Which reading of a recording's unnamed private pools to replay on (pools.ts leaves some of
// its decisions open): the one whose replay agrees with the recording for longest, found by
// trying each open decision the other way against the recording itself. Each try is a whole
// replay, so the tries are bounded.
import type { ReplayOptions, ReplayReport } from './report.js';
import { readRecording, sourceOf, type Recording } from './recording.js';

type Replayed = { report: ReplayReport; rec: Recording };

/**
 * From the first replay of a recording whose private pools were read from its releases, the
 * reading that agrees with the recording for longest, and its replay. Each decision the
 * reading left open (a run: a pool's end or an empty_cache()? an OOM: its neighbour's pool's
 * request?), in entry order, is given the other reading and kept if the replay then agrees for
 * longer, or together with one decision the new reading opened; decisions a kept reading
 * opens are tried after the others.
 */
export function searchReadings(first: Replayed, options: ReplayOptions, replayOnce: (rec: Recording, options: ReplayOptions) => ReplayReport): Replayed {
  let best = first;
  const rec = first.rec;
  const forced = new Map(rec.forced);
  // Each open decision: a run (is it a pool's end?) or an OOM (was it its neighbour's pool's
  // request?), with its present reading, in entry order.
  const decisionsOf = (r: Recording) => [
    ...r.inferred!.open.map((o) => ({ at: o.at, now: o.poolEnd, run: true })),
    ...r.inferred!.ooms.map((o) => ({ at: o.at, now: o.inPool, run: false })),
  ].sort((a, b) => a.at - b.at);
  const queue = decisionsOf(rec);
  const seen = new Set(queue.map((d) => d.at));
  let tries = 0;
  const attempt = (changes: [number, boolean][]) => {
    tries++;
    const trial = new Map(forced);
    for (const [at, v] of changes) trial.set(at, v);
    const tried = readRecording(sourceOf(rec), rec.device, trial);
    return { tried, report: replayOnce(tried, options) };
  };
  const keep = (found: { tried: Recording; report: ReplayReport }, changes: [number, boolean][]) => {
    best = { report: found.report, rec: found.tried };
    for (const [at, v] of changes) forced.set(at, v);
    // A new reading can open decisions the old one had settled: they are tried in turn too.
    for (const n of decisionsOf(found.tried)) {
      if (!seen.has(n.at)) {
        seen.add(n.at);
        queue.push(n);
      }
    }
  };
  for (let k = 0; k < queue.length; k++) {
    if (agreement(best.report) === Infinity || tries >= MAX_READINGS) break;
    const d = queue[k]!;
    const flip: [number, boolean] = [d.at, !d.now];
    const one = attempt([flip]);
    // On a tie a run is kept as a pool's end: nothing recorded so far tells the readings
    // apart, and it lets the next run be read on top of it (30 of 40 stripped mixes exact,
    // against 29 keeping strict gains only, when every open run started as an empty_cache()).
    // An OOM moves into the pool only when that reproduces more of the recording.
    const gain = agreement(one.report) - agreement(best.report);
    if (gain > 0 || (gain === 0 && d.run && !d.now)) {
      keep(one, [flip]);
      continue;
    }
    // The flip may pay only together with a decision it opened itself (seed 50 of the
    // stripped mixes: a run read as a pool's end leaves the run before it a pool's end too),
    // nearest first.
    const current = new Set(decisionsOf(best.rec).map((x) => x.at));
    const opened = decisionsOf(one.tried).filter((x) => !current.has(x.at))
      .sort((a, b) => Math.abs(a.at - d.at) - Math.abs(b.at - d.at)).slice(0, MAX_PAIRED);
    let paired = false;
    for (const n of opened) {
      if (tries >= MAX_READINGS) break;
      const pair: [number, boolean][] = [flip, [n.at, !n.now]];
      const two = attempt(pair);
      if (agreement(two.report) > agreement(best.report)) {
        keep(two, pair);
        paired = true;
        break;
      }
    }
    // Kept as it is: the reading it had, pinned, so later flips are read around it.
    if (!paired) forced.set(d.at, d.now);
  }
  return best;
}

/** Readings tried, at most: each try is a whole replay. The first 1,000 stripped mixes use
 *  up to 18 (up to 37 while every OOM beside a pool's allocation was a decision too). */
const MAX_READINGS = 48;
/** Decisions a flip opened that are tried with it, at most. */
const MAX_PAIRED = 4;

/** How far a replay agreed with the recording: the entry where it stopped out of memory,
 *  reserved memory first parted, or a recorded OOM did not happen; segment events that
 *  differ only count as parting at the end (their comparison does not say at which entry).
 *  Infinity: nowhere. */
function agreement(r: ReplayReport): number {
  // Whichever came first: a replay that ran out of memory may have parted before it.
  const stopped = r.oom?.index ?? Infinity;
  const reserved = r.firstDivergence?.index ?? Infinity;
  const events = r.segmentEvents.firstMismatch === null ? Infinity : r.entries - 0.5;
  const oom = r.ooms.notReproducedAt[0] ?? Infinity;
  return Math.min(stopped, reserved, events, oom);
}
