// Replays a recorded history through our allocator on a simulated device and compares
// reserved memory and segment events with the recording: "would this workload fit, and
// would the cache have grown the same way?".
//
// The history may start after the cache warmed up (PyTorch's fixture has no segment
// event at all), so the state it began on is inferred: the allocations live then (those
// freed in the history before any alloc there, and the live blocks of the final state that
// no alloc in the history made) and the segments they sat in. Those segments are rebuilt
// first, each block at its recorded offset (replay-start.ts); the comparison then runs on
// growth from that starting point.
import * as cuda from '../cuda.js';
import { deviceCount } from '../device.js';
import { InvalidArgumentError, CudaOutOfMemoryError } from '../errors.js';
import { Stream } from '../stream.js';
import { MemPool, use_mem_pool } from '../mem-pool.js';
import { readSamples } from '../monitoring/metrics.js';
import { makeDeviceBuffer, type DeviceBuffer } from '../device-buffer.js';
import * as memory from '../memory.js';
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { releasingAction, segmentDelta, timeline } from './timeline.js';
import {
  compareSegmentEvents, divergenceReason, failedMallocs, isReleaseOfAll, recordedCapacity, releasesInRequests, settingsOf,
  releasesInOrder, runEnd, startsCacheRelease, type ReleaseInRequest,
} from './replay-reading.js';
import type { PeakState, ReplayOptions, ReplayReport, ReplaySide } from './replay-report.js';
import { firstAllocSegment, lostSegmentAlloc, placementOf, startLayout, type StartLayout } from './replay-start.js';
import { generation } from '../generation.js';
import { inferPrivatePools, type InferredPools } from './replay-pools.js';
import { checkOptions, checkString, deviceArg, functionArg, snapshotArg } from './args.js';
import { checkInteger } from '../validate.js';
import { native } from '../native.js';

/**
 * Replays device `options.device` of the snapshot on a fresh simulated device. This
 * replaces the process's allocator runtime (every buffer and stream from before becomes
 * stale), so it refuses to run while any memory is allocated; it is meant for the CLI
 * (`cca replay`) and for tests.
 */
export function replayOnSim(snapshot: Snapshot, options?: ReplayOptions): ReplayReport {
  // Everything is checked before the runtime is replaced: a refused call changes nothing.
  const given = snapshotArg(snapshot);
  options = checkOptions<ReplayOptions>('replay options', options, ['device', 'capacityBytes', 'settings', 'onProgress']);
  const device = options.device === undefined ? 0 : deviceArg(options.device, 'options.device');
  // A file whose trace names no pool (PyTorch's): private pools read from its releases
  // (replay-pools.ts). A run of segment frees the releases leave open is read as an
  // empty_cache() first; where the replay then parts from the recording, each open run in
  // turn is read as a pool's end instead, kept if the replay then agrees for longer.
  const forced = new Map<number, boolean>();
  const inferred = inferPrivatePools(given, device, forced);
  let report = replayReading(given, device, options, inferred);
  for (const run of inferred?.open.slice(0, MAX_READINGS) ?? []) {
    if (agreement(report) === Infinity) break;
    forced.set(run.at, true);
    const tried = replayReading(given, device, options, inferPrivatePools(given, device, forced));
    if (agreement(tried) > agreement(report)) report = tried;
    else forced.set(run.at, false);
  }
  return report;
}

/** Open runs tried both ways, at most: each try is a whole replay. */
const MAX_READINGS = 16;

/** How far a replay agreed with the recording: the entry where it stopped out of memory or
 *  reserved memory first parted; segment events that differ only count as parting at the
 *  end (their comparison does not say at which entry). Infinity: nowhere. */
function agreement(r: ReplayReport): number {
  if (r.oom) return r.oom.index;
  const reserved = r.firstDivergence?.index ?? Infinity;
  const events = r.segmentEvents.firstMismatch === null ? Infinity : r.entries - 0.5;
  return Math.min(reserved, events);
}

function replayReading(given: Snapshot, device: number, options: ReplayOptions, inferred: InferredPools | null): ReplayReport {
  const s: Snapshot = inferred ? { ...given, device_traces: given.device_traces.map((t, d) => (d === device ? inferred.trace : t)) } : given;
  // The recorded side comes from the same engine as the viewer's timeline (computed once:
  // the default capacity reads it too).
  const rec = timeline(s, device);
  const capacityBytes = options.capacityBytes === undefined ? recordedCapacity(s, device, rec.reserved) ?? 256 * 2 ** 30
    : checkInteger('options.capacityBytes', options.capacityBytes, 1, 2 ** 40);
  const settings = options.settings === undefined ? settingsOf(s) : checkString('options.settings', options.settings);
  functionArg(options.onProgress, 'options.onProgress');
  native.checkAllocatorSettings(settings);
  for (let d = 0; d < deviceCount(); d++) {
    if (memory.memory_allocated(d) > 0) {
      throw new InvalidArgumentError(`replay replaces the allocator runtime, but device ${d} still has ` +
        `${memory.memory_allocated(d)} bytes allocated: free them first, or run replay in its own process (cca replay)`,
      'ERR_CCA_RUNTIME_BUSY');
    }
  }
  const trace: TraceEntry[] = s.device_traces[device] ?? [];
  cuda.sim.configure({ devices: 1, capacityBytes });
  memory._set_allocator_settings(settings);

  // The recorded streams, made up front in the order of their handles: the allocator orders
  // free blocks by stream first, so the cache is released in the recorded order.
  const streams = new Map<number, Stream>();
  const ids = new Set<number>(trace.map((e) => e.stream));
  for (const seg of s.segments) if (seg.device === device) ids.add(seg.stream);
  for (const id of [...ids].filter((n) => n !== 0).sort((x, y) => x - y)) streams.set(id, Stream.create());
  const streamFor = (id: number): Stream | undefined => {
    if (id === 0) return undefined;
    let st = streams.get(id);
    if (!st) {
      st = Stream.create();
      streams.set(id, st);
    }
    return st;
  };
  const live = new Map<number, DeviceBuffer>();
  // One MemPool per recorded private pool id: their allocations stay apart from the default pools.
  const pools = new Map<number, MemPool>();
  const poolFor = (pool: number): MemPool => {
    let p = pools.get(pool);
    if (!p) {
      p = new MemPool();
      pools.set(pool, p);
    }
    return p;
  };
  const poolIdFor = (pool: number): number => (pool === 0 ? 0 : poolFor(pool).id[1]!);
  const allocIn = (pool: number, size: number, stream: number): DeviceBuffer => {
    if (pool === 0) return cuda.alloc(size, { stream: streamFor(stream) });
    return use_mem_pool(poolFor(pool), () => cuda.alloc(size, { stream: streamFor(stream) }));
  };
  // Set while a device malloc failure is injected for a request (see releasesInRequests).
  let injected = false;
  // Whatever happens, the replay's buffers and streams go: the caller's runtime is left empty.
  try {
    const initial = rec.initialLive;
    let initialBytes = 0;
    let initialFreeSegments = 0;
    let oom: ReplayReport['oom'] = null;
    // The start as recorded: its segments with their live blocks at their offsets
    // (replay-start.ts). Expandable segments grow by pages and are not placed: there the
    // live allocations are made in address order.
    const recordedSettings = settingsOf(s);
    const active = memory.get_allocator_settings();
    const start: StartLayout = active.expandable_segments
      ? { segments: [], unplaced: [...initial.keys()].sort((a, b) => a - b), sizedFromRequest: 0 }
      : startLayout(s, device, initial, recordedSettings);
    // A ring that may have begun inside a request (replay-start.ts): decided once placed.
    const firstSegment = firstAllocSegment(s, device, start, recordedSettings);
    let lost: TraceEntry | null = null;
    let firstBase = 0;
    const startReport = { segments: 0, placed: 0, sizedFromRequest: start.sizedFromRequest, allocated: 0, lostSegmentAlloc: false };
    try {
      for (const seg of start.segments) {
        const stream = streamFor(seg.stream);
        let placed: Float64Array;
        try {
          placed = native.placeSegment(0, seg.size, stream?.handle ?? 0, poolIdFor(seg.pool), seg.small, placementOf(seg));
        } catch (err) {
          // A recording whose sizes our allocator could not have made (not 512-byte blocks, a
          // small segment not of 2 MiB): its live allocations are allocated instead.
          if (!(err instanceof InvalidArgumentError)) throw err;
          start.unplaced.push(...seg.live.map((b) => b.address));
          continue;
        }
        const [base, ...ptrs] = placed;
        seg.live.forEach((b, k) => {
          live.set(b.address, makeDeviceBuffer(ptrs[k]!, b.requested, stream ?? cuda.defaultStream(0), generation()));
          initialBytes += b.requested;
        });
        if (seg === firstSegment) firstBase = base!;
        if (seg.live.length === 0) initialFreeSegments++;
        startReport.segments++;
        startReport.placed += seg.live.length;
      }
      if (firstSegment && firstBase !== 0) {
        const first = trace[0]!;
        const taken = native.planMalloc(0, first.size, streamFor(first.stream)?.handle ?? 0, poolIdFor(first.pool_id?.[1] ?? 0)).cached;
        if (taken?.ptr !== firstBase) {
          native.unplaceSegment(0, firstBase);
          lost = lostSegmentAlloc(firstSegment, first);
          startReport.lostSegmentAlloc = true;
          initialFreeSegments--;
          startReport.segments--;
        }
      }
      for (const addr of start.unplaced.sort((a, b) => a - b)) {
        const l = initial.get(addr)!;
        live.set(addr, allocIn(l.pool, l.size, l.stream));
        initialBytes += l.size;
        startReport.allocated++;
      }
    } catch (err) {
      if (!(err instanceof CudaOutOfMemoryError)) throw err;
      // The state the history started from does not fit: index -1, before the first entry.
      oom = { index: -1, size: err.requested, message: err.message };
    }
    // Our own segment events from here on, to compare with the recording's in order.
    memory._record_memory_history({
      enabled: 'all', context: null, maxEntries: Math.max(1000, 4 * trace.length),
      skipActions: ['alloc', 'free_requested', 'free_completed', 'snapshot', 'oom'],
    });
    const stat = (k: string): number => memory.memory_stats(0)[k] as number;
    const growthsAtStart = stat('num_device_alloc');
    // Reserved memory can peak inside a request (pages mapped before the device ran out and
    // released again): the allocator's own peak sees it, sampling after each call would not.
    memory.reset_peak_memory_stats(0);
    const shrinksAtStart = stat('num_device_free');
    const ours: ReplaySide = { startReserved: memory.memory_reserved(0), peakReserved: 0, endReserved: 0, segmentGrowths: 0, segmentShrinks: 0 };
    ours.peakReserved = ours.startReserved;
    const recorded: ReplaySide = {
      startReserved: rec.reservedAtStart - (lost?.size ?? 0), peakReserved: 0, endReserved: 0, segmentGrowths: lost ? 1 : 0, segmentShrinks: 0,
    };
    recorded.peakReserved = recorded.startReserved;

    const freeAt = releasingAction(trace);
    const maxSplit = typeof active.max_split_size === 'number' && active.max_split_size > 0;
    // With a memory fraction the limit, not the device, refuses new segments: our requests
    // meet it by themselves (and collect garbage, with a threshold), so nothing is injected.
    const limited = native.planMalloc(0, 0, 0, 0).limited;  // size 0 asks only: is a memory fraction set?
    const collects = limited && typeof active.garbage_collection_threshold === 'number' && active.garbage_collection_threshold > 0;
    const inOrder = releasesInOrder(active as Record<string, unknown>);
    const candidates = releasesInRequests(trace, freeAt, active.expandable_segments === true, maxSplit || collects, inOrder);
    // The frees, release runs and device malloc failures (by request) of releases inside requests.
    const inRequest = {
      frees: new Set<number>(), runs: new Set<number>(), failFirstTry: new Map<number, number>(), requestOf: new Map<number, number>(),
      failAfter: new Map<number, number>(),  // expandable: bytes the request maps before its failure
    };
    // Releases inside requests whose failure count is decided when the replay reaches them.
    const undecided = new Map<number, { candidate: ReleaseInRequest; r: TraceEntry; handle: number; poolId: number; before: number }>();
    // Entries before this index happened inside one recorded request, which ours replays as
    // one call: reserved memory is compared after it, not at its steps.
    let insideRequestUntil = -1;
    const lastPoolAlloc = new Map<number, number>();
    trace.forEach((e, j) => {
      if (e.action === 'alloc' && (e.pool_id?.[1] ?? 0) !== 0) lastPoolAlloc.set(e.pool_id![1]!, j);
    });
    // The pools whose end the run of segment frees from `i` is: only segments of MemPools that
    // allocate nothing afterwards (null: not such a run).
    const poolEndAt = (i: number): Set<number> | null => {
      const ended = new Set<number>();
      for (let j = i, end = runEnd(trace, i, inOrder); j < end; j++) {
        const id = trace[j]!.pool_id?.[1] ?? 0;
        if (id === 0 || (lastPoolAlloc.get(id) ?? -1) > j) return null;
        ended.add(id);
      }
      return ended;
    };
    // Frees the recording completed inside a request's release (its synchronization) stay
    // pending here, waiting on this held stream, until our own request synchronizes them.
    let blocker: Stream | undefined;
    let pendingInRequest = 0;  // frees left pending for the next request to synchronize
    let recordedNow = recorded.startReserved;
    let ourNow = ours.startReserved;
    let allocs = 0;
    let frees = 0;
    let unknownFrees = 0;
    let poolAllocs = 0;
    let cacheReleases = 0;
    const ooms = { recorded: 0, reproduced: 0, notReproducedAt: [] as number[] };
    // One native call (the metrics' reading), at each new peak only.
    const peakState = (): PeakState => {
      const [m] = readSamples();
      const free = m!.stat('reserved_bytes.all.current') - m!.stat('active_bytes.all.current');
      const largest = m!.largestFree('all');
      return { largestFreeBlock: largest, fragmentation: free > 0 ? 1 - Math.min(free, largest) / free : 0 };
    };
    let atPeak = peakState();
    const holdingStream = (): Stream => {
      const st = Stream.create();
      cuda.sim.holdStream(st);
      streams.set(-1, st);  // destroyed with the others
      return st;
    };
    // After a request: an unused injected failure is dropped, and frees it did not
    // synchronize (it released nothing) complete now, as they had in the recording.
    const completePending = (): void => {
      if (pendingInRequest > 0 && blocker) {
        cuda.sim.completeStream(blocker);
        blocker.synchronize();
        pendingInRequest = 0;
      }
    };
    const settleRequest = (): void => {
      if (injected) {
        cuda.sim.failNextMallocs(0, 0);
        injected = false;
      }
      completePending();
    };
    let firstDivergence: ReplayReport['firstDivergence'] = null;
    // The last entry where both sides had grown alike, and how each release was replayed.
    let agreedAt = -1;
    let agreedRecorded = recorded.startReserved;
    let agreedOurs = ours.startReserved;
    const releaseReadings = new Map<number, string>();
    const every = Math.max(1, Math.floor(trace.length / 100));
    for (let i = 0; oom === null && i < trace.length; i++) {
      const e = trace[i]!;
      const candidate = candidates.get(i);
      // A pool's end just before a request that needed a new segment is not that request's release.
      if (candidate && !(candidate.runs.length === 1 && poolEndAt(candidate.runs[0]!))) {
        const r = trace[candidate.request]!;
        const pool = pools.get(r.pool_id?.[1] ?? 0);
        const poolId = (r.pool_id?.[1] ?? 0) === 0 ? 0 : pool ? pool.id[1]! : -1;
        const handle = streamFor(r.stream)?.handle ?? 0;
        // With max_split_size_mb it is decided at the release itself (below); until then the
        // frees before it are the request's.
        const atRelease = maxSplit && !limited && candidate.runs.length > 0 && poolId >= 0;
        const plan = !atRelease && poolId >= 0 ? native.planMalloc(0, r.size, handle, poolId) : null;
        const failures = atRelease ? 0
          : plan?.cached ? null
          : limited ? (plan?.limitReleases ? 0 : null)
          : candidate.runs.length === 0 ? 0 : 1;
        if (failures !== null) {
          if (candidate.mappedBefore > 0) inRequest.failAfter.set(candidate.request, candidate.mappedBefore);
          for (const j of candidate.frees) inRequest.frees.add(j);
          for (const run of candidate.runs) {
            inRequest.runs.add(run);
            inRequest.requestOf.set(run, candidate.request);
          }
          if (atRelease) undecided.set(Math.min(...candidate.runs), { candidate, r, handle, poolId, before: insideRequestUntil });
          else if (failures > 0) inRequest.failFirstTry.set(candidate.request, failures);
          insideRequestUntil = candidate.request;
        }
      }
      const pending = undecided.get(i);
      if (pending) {
        // The request's cached search failed, and the release must begin with the oversize
        // segments ours would release first. The frees just before it, left pending as the
        // request's, may instead have completed before the request looked (its first step
        // completes finished frees): the reading that fits is taken, that one first.
        const { candidate, r, handle, poolId, before } = pending;
        // Releasing nothing first, the request would synchronize and release every free
        // segment of the default pools, those the pending frees empty too.
        const releasesAllFree = (): boolean => {
          const recordedStream = new Map([...streams].map(([id, st]) => [st.handle, id]));
          const free = memory.memory_snapshot().filter((g) => g.device === 0 && !g.is_expandable &&
            (g.segment_pool_id?.[1] ?? 0) === 0 && g.blocks.every((b) => b.state === 'inactive' || b.state === 'active_pending_free'))
            .map((g) => ({ small: g.segment_type === 'small', stream: recordedStream.get(g.stream) ?? 0, size: g.total_size, address: g.address }));
          return isReleaseOfAll(trace, i, free);
        };
        const reading = (): number | null => {
          const plan = native.planMalloc(0, r.size, handle, poolId);
          if (plan.cached) return null;
          const first = { sizes: plan.oversizeSizes, retries: plan.oversizeRetries };
          const n = failedMallocs(trace, candidate, first);
          return n !== null && first.sizes.length === 0 && pendingInRequest > 0 && !releasesAllFree() ? null : n;
        };
        let n = reading();
        if (n === null && pendingInRequest > 0) {
          completePending();
          n = reading();
        }
        if (n === null) {
          // Not the request's release: an empty_cache() before it.
          completePending();
          for (const j of candidate.frees) inRequest.frees.delete(j);
          for (const run of candidate.runs) inRequest.runs.delete(run);
          insideRequestUntil = before;
        } else if (n > 0) {
          inRequest.failFirstTry.set(candidate.request, n);
        }
      }
      const delta = segmentDelta(e);
      if (delta > 0) recorded.segmentGrowths++;
      if (delta < 0) recorded.segmentShrinks++;
      recordedNow = rec.reserved[i]!;
      recorded.peakReserved = Math.max(recorded.peakReserved, recordedNow);
      if (delta < 0 && startsCacheRelease(trace, i, inOrder)) {
        // A release inside a request is left to our own request (below). Any other is
        // empty_cache(); but a run of only the segments of MemPools that allocate nothing
        // afterwards is the release of those pools by the program.
        if (!inRequest.runs.has(i)) {
          const released = poolEndAt(i);
          if (released) {
            for (const id of released) {
              const p = pools.get(id);
              if (p && p.use_count() > 0) p.release();
            }
            releaseReadings.set(i, `the release of MemPool ${[...released].join(', ')}`);
          } else {
            memory.empty_cache(0);
            releaseReadings.set(i, 'an empty_cache()');
          }
        } else {
          const q = inRequest.requestOf.get(i)!;
          const n = inRequest.failFirstTry.get(q) ?? 0;
          const how = limited ? 'under the memory fraction' : `its device malloc failing ${n === 1 ? 'once' : `${n} times`}`;
          releaseReadings.set(i, `the release inside the request at entry ${q} (${how})`);
        }
        cacheReleases++;
        ourNow = memory.memory_reserved(0);
      }
      // The device was full for this request's first try in the recording: so it is here.
      const failures = inRequest.failFirstTry.get(i);
      if (failures !== undefined) {
        native.simFailNextMallocs(0, failures, inRequest.failAfter.get(i) ?? 0);
        injected = true;
      }
      if (e.action === 'oom') {
        // The request that failed there (its rounded size): does it fail here too? Either way
        // the program went on, and so does the replay; a request that fits is given back.
        ooms.recorded++;
        try {
          allocIn(e.pool_id?.[1] ?? 0, e.size, e.stream).free();
          memory.empty_cache(0);
          if (ooms.notReproducedAt.length < 100) ooms.notReproducedAt.push(i);
        } catch (err) {
          if (!(err instanceof CudaOutOfMemoryError)) throw err;
          ooms.reproduced++;
        }
        settleRequest();
        ourNow = memory.memory_reserved(0);
      }
      if (e.action === 'alloc' && e.addr !== undefined) {
        const pool = e.pool_id?.[1] ?? 0;
        if (pool !== 0) poolAllocs++;
        live.get(e.addr)?.free();  // an address handed out twice: the ring lost the free between
        try {
          live.set(e.addr, allocIn(pool, e.size, e.stream));
        } catch (err) {
          if (!(err instanceof CudaOutOfMemoryError)) throw err;
          oom = { index: i, size: e.size, message: err.message };
          break;
        }
        settleRequest();
        allocs++;
        ourNow = memory.memory_reserved(0);
        if (ourNow > ours.peakReserved) {
          ours.peakReserved = ourNow;
          atPeak = peakState();
        }
      } else if (e.action === freeAt && e.addr !== undefined) {
        const buf = live.get(e.addr);
        if (buf && inRequest.frees.has(i)) {
          blocker ??= holdingStream();
          cuda.recordStream(buf, blocker);
          buf.free();
          pendingInRequest++;
          live.delete(e.addr);
          frees++;
        } else if (buf) {
          buf.free();
          live.delete(e.addr);
          frees++;
        } else {
          unknownFrees++;
        }
      }
      // Compared at allocs and frees: a recording puts segment events before the alloc that
      // caused them, while ours happen inside it.
      const settled = (e.action === 'alloc' || e.action === freeAt) && i >= insideRequestUntil;
      if (settled && firstDivergence === null && recordedNow - recorded.startReserved !== ourNow - ours.startReserved) {
        const caveats: string[] = [];
        const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
        if (startReport.sizedFromRequest > 0) caveats.push(`the start's rebuild sized ${n(startReport.sizedFromRequest, 'block')} from the request`);
        if (startReport.allocated > 0) caveats.push(`${n(startReport.allocated, 'allocation')} of the start not placed where recorded`);
        firstDivergence = {
          index: i, action: e.action, recordedGrowth: recordedNow - recorded.startReserved, ourGrowth: ourNow - ours.startReserved,
          reason: divergenceReason({
            action: e.action, since: agreedAt, at: i, releases: releaseReadings, caveats,
            recordedStep: recordedNow - agreedRecorded, ourStep: ourNow - agreedOurs,
          }),
        };
      } else if (settled) {
        agreedAt = i;
        agreedRecorded = recordedNow;
        agreedOurs = ourNow;
      }
      if (options.onProgress && i % every === 0) options.onProgress(i, trace.length);
    }
    options.onProgress?.(trace.length, trace.length);
    recorded.endReserved = recordedNow;
    ours.endReserved = memory.memory_reserved(0);
    ours.peakReserved = Math.max(ours.peakReserved, stat('reserved_bytes.all.peak'));
    ours.segmentGrowths = stat('num_device_alloc') - growthsAtStart;
    ours.segmentShrinks = stat('num_device_free') - shrinksAtStart;
    const segmentEvents = compareSegmentEvents(lost ? [lost, ...trace] : trace, memory._snapshot().device_traces[0] ?? []);
    memory._record_memory_history(null);
    return {
      device, settings, capacityBytes, entries: trace.length, allocs, frees, unknownFrees, poolAllocs, cacheReleases, ooms,
      inferredPools: inferred ? { pools: inferred.pools, allocs: inferred.allocs } : null,
      initialLive: { count: initial.size, bytes: initialBytes }, initialFreeSegments, start: startReport, segmentEvents, recorded, oursAtPeak: atPeak, ours, firstDivergence, oom,
    };
  } finally {
    if (injected) cuda.sim.failNextMallocs(0, 0);  // a request that ended the replay
    for (const b of live.values()) if (!b.disposed) b.free();
    for (const st of streams.values()) if (!st.destroyed) st.destroy();
    for (const p of pools.values()) if (p.use_count() > 0) p.release();
    memory._record_memory_history(null);
  }
}
