// Replays a recorded history through our allocator on a simulated device and compares
// reserved memory and segment events with the recording: "would this workload fit, and
// would the cache have grown the same way?".
//
// The parts: the recording read once (recording.ts; its start, start.ts; the private pools
// of a file that names none, pools.ts), the simulated GPU (driver.ts, the only file here that
// calls the addon), the cache releases and how each is met (releases.ts; the rules:
// reading.ts), where the two sides first part (divergence.ts). This file is the loop.
import { CudaOutOfMemoryError } from '../errors.js';
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { segmentDelta } from '../analysis/timeline.js';
import { checkOptions, checkString, deviceArg, functionArg, snapshotArg } from '../analysis/args.js';
import { checkInteger } from '../validate.js';
import { compareSegmentEvents, releasesInOrder, startsCacheRelease } from './reading.js';
import type { ReplayOptions, ReplayReport, ReplaySide } from './report.js';
import { readRecording, sourceOf, type Recording } from './recording.js';
import { checkSettings, SimDriver } from './driver.js';
import { DECIDE, FAIL, FREE_IN_REQUEST, Releases } from './releases.js';
import { Divergence } from './divergence.js';
import { rebuildStart } from './start.js';

/**
 * Replays device `options.device` of the snapshot on a fresh simulated device. This
 * replaces the process's allocator runtime (every buffer and stream from before becomes
 * stale), so it refuses to run while any memory is allocated; it is meant for the CLI
 * (`cca replay`) and for tests.
 */
export function replayOnSim(snapshot: Snapshot, options?: ReplayOptions): ReplayReport {
  const given = snapshotArg(snapshot);
  options = checkOptions<ReplayOptions>('replay options', options, ['device', 'capacityBytes', 'settings', 'onProgress']);
  const device = options.device === undefined ? 0 : deviceArg(options.device, 'options.device');
  return replayRecording(readRecording(given, device), options).report;
}

/**
 * Replays a recording read once. A file whose trace names no pool (PyTorch's) has its private
 * pools read from its releases (pools.ts), a run the releases leave open given its likelier
 * reading first; where the replay then parts from the recording, each open decision in turn
 * is given the other reading, kept if the replay then agrees for longer (`search`), or
 * together with one the new reading opened; decisions a kept reading opens are tried after.
 * Returns the report and the reading it was made on.
 */
export function replayRecording(rec: Recording, options: ReplayOptions, search = true): { report: ReplayReport; rec: Recording } {
  let best = { report: replayOnce(rec, options), rec };
  if (!search || !rec.inferred) return best;
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

/** Readings tried, at most: each try is a whole replay. The first 160 stripped mixes need up
 *  to 37 (16 lost seed 11, whose run to flip was its 17th). */
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

function replayOnce(rec: Recording, options: ReplayOptions): ReplayReport {
  // Everything is checked before the runtime is replaced: a refused call changes nothing.
  const capacityBytes = options.capacityBytes === undefined ? rec.capacity ?? 256 * 2 ** 30
    : checkInteger('options.capacityBytes', options.capacityBytes, 1, 2 ** 40);
  const settings = options.settings === undefined ? rec.settings : checkString('options.settings', options.settings);
  const onProgress = functionArg(options.onProgress, 'options.onProgress') as ReplayOptions['onProgress'];
  checkSettings(settings);
  const driver = new SimDriver(capacityBytes, settings, rec.slots, rec.streams);
  try {
    return replayOn(driver, rec, settings, capacityBytes, onProgress);
  } finally {
    driver.dispose();
  }
}

function replayOn(driver: SimDriver, rec: Recording, settings: string, capacityBytes: number, onProgress: ReplayOptions['onProgress']): ReplayReport {
  const { trace, freeAt } = rec;
  const start = rebuildStart(rec, driver, driver.settings().expandable_segments === true);
  const oomsAlone = rec.inferred !== null && releasesInOrder(driver.settings());
  let oom = start.oom;
  driver.recordSegmentEvents(trace.length);
  const growthsAtStart = driver.stat('num_device_alloc');
  const shrinksAtStart = driver.stat('num_device_free');
  // Reserved memory can peak inside a request (pages mapped before the device ran out and
  // released again): the allocator's own peak sees it, sampling after each call would not.
  driver.resetPeaks();
  const ours: ReplaySide = { startReserved: driver.reserved(), peakReserved: 0, endReserved: 0, segmentGrowths: 0, segmentShrinks: 0 };
  ours.peakReserved = ours.startReserved;
  const lost = start.lost;
  const recorded: ReplaySide = {
    startReserved: rec.reservedAtStart - (lost?.size ?? 0), peakReserved: 0, endReserved: 0, segmentGrowths: lost ? 1 : 0, segmentShrinks: 0,
  };
  recorded.peakReserved = recorded.startReserved;
  const releases = new Releases(rec, driver);
  const { marks } = releases;
  const divergence = new Divergence(recorded.startReserved, ours.startReserved, caveatsOf(start.report));
  let recordedNow = recorded.startReserved;
  let ourNow = ours.startReserved;
  let atPeak = driver.peakState();
  const counts = { allocs: 0, frees: 0, unknownFrees: 0, poolAllocs: 0 };
  const ooms = { recorded: 0, reproduced: 0, notReproducedAt: [] as number[] };
  const every = Math.max(1, Math.floor(trace.length / 100));
  for (let i = 0; oom === null && i < trace.length; i++) {
    const e = trace[i]!;
    if (marks[i]! & DECIDE) releases.decide(i);
    const mark = marks[i]!;
    const delta = segmentDelta(e);
    recordedNow = rec.reserved[i]!;
    if (delta !== 0) {
      if (delta > 0) recorded.segmentGrowths++;
      else recorded.segmentShrinks++;
      recorded.peakReserved = Math.max(recorded.peakReserved, recordedNow);
      if (delta < 0 && startsCacheRelease(trace, i, releases.inOrder)) {
        releases.release(i);
        ourNow = driver.reserved();
      }
    }
    if (mark & FAIL) releases.inject(i);
    if (e.action === 'oom') {
      retryOom(driver, e, i, ooms, oomsAlone);
      ourNow = driver.reserved();
    }
    const slot = rec.slot[i]!;
    if (e.action === 'alloc' && slot >= 0) {
      const pool = e.pool_id?.[1] ?? 0;
      if (pool !== 0) counts.poolAllocs++;
      if (rec.reuses[i]! >= 0) driver.free(rec.reuses[i]!);  // an address handed out twice: the ring lost the free between
      try {
        driver.alloc(slot, pool, e.size, e.stream);
      } catch (err) {
        if (!(err instanceof CudaOutOfMemoryError)) throw err;
        oom = { index: i, size: e.size, message: err.message };
        break;
      }
      driver.settle();
      counts.allocs++;
      ourNow = driver.reserved();
      if (ourNow > ours.peakReserved) {
        ours.peakReserved = ourNow;
        atPeak = driver.peakState();
      }
    } else if (e.action === freeAt && e.addr !== undefined) {
      if (slot >= 0 && (mark & FREE_IN_REQUEST ? driver.freePending(slot) : driver.free(slot))) counts.frees++;
      else counts.unknownFrees++;
    }
    // Compared at allocs and frees: a recording puts segment events before the alloc that
    // caused them, while ours happen inside it.
    if ((e.action === 'alloc' || e.action === freeAt) && i >= releases.insideRequestUntil) {
      divergence.check(i, e.action, recordedNow, ourNow, releases.readings);
    }
    if (onProgress && i % every === 0) onProgress(i, trace.length);
  }
  onProgress?.(trace.length, trace.length);
  recorded.endReserved = recordedNow;
  ours.endReserved = driver.reserved();
  ours.peakReserved = Math.max(ours.peakReserved, driver.stat('reserved_bytes.all.peak'));
  ours.segmentGrowths = driver.stat('num_device_alloc') - growthsAtStart;
  ours.segmentShrinks = driver.stat('num_device_free') - shrinksAtStart;
  return {
    device: rec.device, settings, capacityBytes, entries: trace.length, ...counts, cacheReleases: releases.count, ooms,
    inferredPools: rec.inferred ? { pools: rec.inferred.pools, allocs: rec.inferred.allocs } : null,
    initialLive: { count: rec.initial.size, bytes: start.bytes }, initialFreeSegments: start.freeSegments, start: start.report,
    segmentEvents: compareSegmentEvents(lost ? [lost, ...trace] : trace, driver.segmentEvents()),
    recorded, oursAtPeak: atPeak, ours, firstDivergence: divergence.first, oom,
  };
}

/** Readings of the history that may have placed a block differently before, for the reason. */
function caveatsOf(start: ReplayReport['start']): string[] {
  const caveats: string[] = [];
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
  if (start.sizedFromRequest > 0) caveats.push(`the start's rebuild sized ${n(start.sizedFromRequest, 'block')} from the request`);
  if (start.allocated > 0) caveats.push(`${n(start.allocated, 'allocation')} of the start not placed where recorded`);
  return caveats;
}

/** The request that failed at a recorded OOM (its rounded size): does it fail here too? Either
 *  way the program went on, and so does the replay; a request that fits is given back. */
// `alone`: the history has private pools its trace does not name, under settings where the
// pool of a failed request does not matter (pools.ts, 6).
function retryOom(driver: SimDriver, e: TraceEntry, i: number, ooms: ReplayReport['ooms'], alone: boolean): void {
  ooms.recorded++;
  try {
    if (alone && e.pool_id === undefined) driver.allocAndFreeAlone(e.size, e.stream);
    else driver.allocAndFree(e.pool_id?.[1] ?? 0, e.size, e.stream);
    driver.emptyCache();
    if (ooms.notReproducedAt.length < 100) ooms.notReproducedAt.push(i);
  } catch (err) {
    if (!(err instanceof CudaOutOfMemoryError)) throw err;
    ooms.reproduced++;
  }
  driver.settle();
}
