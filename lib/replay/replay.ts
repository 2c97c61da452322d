// Replays a recorded history through our allocator on a simulated device and compares
// reserved memory and segment events with the recording: "would this workload fit, and
// would the cache have grown the same way?".
//
// The parts: the recording read once (recording.ts; its start, start-layout.ts; the private
// pools of a file that names none, pools.ts), the simulated GPU (driver.ts, over the engine
// engine.ts chooses: the addon's, or its wasm build), the start rebuilt on it
// (start-rebuild.ts), the cache releases and how each is met (releases.ts; the rules:
// reading.ts), where the two sides first part (divergence.ts), which reading of unnamed
// pools to replay on (search.ts). This file is the loop.
import { CudaOutOfMemoryError } from '../errors.js';
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { segmentDelta } from '../analysis/timeline.js';
import { checkOptions, checkString, deviceArg, functionArg, snapshotArg } from '../analysis/args.js';
import { checkInteger } from '../validate.js';
import { compareSegmentEvents, releasesInOrder, startsCacheRelease } from './reading.js';
import type { ReplayOptions, ReplayReport, ReplaySide } from './report.js';
import { readRecording, type Recording } from './recording.js';
import { searchReadings } from './search.js';
import { SimDriver } from './driver.js';
import { replayEngine } from './engine.js';
import { DECIDE, FAIL, FREE_IN_REQUEST, Releases } from './releases.js';
import { Divergence } from './divergence.js';
import { rebuildStart } from './start-rebuild.js';
import { poolKey } from '../snapshot/pool-id.js';

/**
 * Replays device `options.device` of the snapshot on a fresh simulated device. This
 * replaces the process's allocator runtime (every buffer and stream from before becomes
 * stale), so it refuses to run while any memory is allocated; it is meant for the CLI
 * (`cca replay`) and for tests.
 */
export function replayOnSim(snapshot: Snapshot, options?: ReplayOptions): ReplayReport {
  const given = snapshotArg(snapshot);
  options = checkOptions<ReplayOptions>('replay options', options, ['device', 'capacityBytes', 'settings', 'onProgress', 'engine']);
  const device = options.device === undefined ? 0 : deviceArg(options.device, 'options.device');
  return replayRecording(readRecording(given, device), options).report;
}

/**
 * Replays a recording read once; with `search`, a file whose private pools were read from its
 * releases (pools.ts) is replayed again on other readings where the first parts from the
 * recording (search.ts). Returns the report and the reading it was made on.
 */
export function replayRecording(rec: Recording, options: ReplayOptions, search = true): { report: ReplayReport; rec: Recording } {
  const first = { report: replayOnce(rec, options), rec };
  return search && rec.inferred ? searchReadings(first, options, replayOnce) : first;
}

function replayOnce(rec: Recording, options: ReplayOptions): ReplayReport {
  // Everything is checked before the runtime is replaced: a refused call changes nothing.
  const capacityBytes = options.capacityBytes === undefined ? rec.capacity ?? 256 * 2 ** 30
    : checkInteger('options.capacityBytes', options.capacityBytes, 1, 2 ** 40);
  const settings = options.settings === undefined ? rec.settings : checkString('options.settings', options.settings);
  const onProgress = functionArg(options.onProgress, 'options.onProgress') as ReplayOptions['onProgress'];
  const engine = replayEngine(options.engine);
  engine.checkSettings(settings);
  const driver = new SimDriver(engine, capacityBytes, settings, rec.slots, rec.streams);
  try {
    return replayOn(driver, rec, settings, capacityBytes, onProgress, options.series);
  } finally {
    driver.dispose();
  }
}

function replayOn(driver: SimDriver, rec: Recording, settings: string, capacityBytes: number, onProgress: ReplayOptions['onProgress'],
  series: Float64Array | undefined): ReplayReport {
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
  const ours = side(driver.reserved());
  const lost = start.lost;
  const recorded = side(rec.reservedAtStart - (lost?.size ?? 0), lost ? 1 : 0);
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
      if (poolKey(e.pool_id) !== 0) counts.poolAllocs++;
      if (rec.reuses[i]! >= 0) driver.free(rec.reuses[i]!);  // an address handed out twice: the ring lost the free between
      oom = allocOrOom(driver, slot, e, i);
      if (oom) break;
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
    if (series) series[i] = ourNow;
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

function side(startReserved: number, segmentGrowths = 0): ReplaySide {
  return { startReserved, peakReserved: startReserved, endReserved: 0, segmentGrowths, segmentShrinks: 0 };
}

/** Replays an allocation: null, or where the replay ran out of memory. */
function allocOrOom(driver: SimDriver, slot: number, e: TraceEntry, i: number): ReplayReport['oom'] {
  try {
    driver.alloc(slot, poolKey(e.pool_id), e.size, e.stream);
  } catch (err) {
    if (!(err instanceof CudaOutOfMemoryError)) throw err;
    return { index: i, size: e.size, message: err.message };
  }
  driver.settle();
  return null;
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
 *  way the program went on, and so does the replay; a request that fits is given back.
 *  `alone`: the history has private pools its trace does not name, under settings where the
 *  pool of a failed request does not matter (pools.ts, 6), so it is tried in one of its own. */
function retryOom(driver: SimDriver, e: TraceEntry, i: number, ooms: ReplayReport['ooms'], alone: boolean): void {
  ooms.recorded++;
  try {
    if (alone && e.pool_id === undefined) driver.allocAndFreeAlone(e.size, e.stream);
    else driver.allocAndFree(poolKey(e.pool_id), e.size, e.stream);
    driver.emptyCache();
    if (ooms.notReproducedAt.length < 100) ooms.notReproducedAt.push(i);
  } catch (err) {
    if (!(err instanceof CudaOutOfMemoryError)) throw err;
    ooms.reproduced++;
  }
  driver.settle();
}
