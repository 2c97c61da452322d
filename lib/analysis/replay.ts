// Replays a recorded history through our allocator on a simulated device and compares
// reserved memory and segment events with the recording: "would this workload fit, and
// would the cache have grown the same way?".
//
// The history may start after the cache warmed up (PyTorch's fixture has no segment
// event at all), so the allocations live when it began are inferred: those freed in the
// history before any alloc there, and the live blocks of the final state that no alloc in
// the history made. They are allocated first, in address order; the comparison then runs
// on growth from that starting point.
import * as cuda from '../cuda.js';
import { deviceCount } from '../device.js';
import { InvalidArgumentError, CudaOutOfMemoryError } from '../errors.js';
import { Stream } from '../stream.js';
import type { DeviceBuffer } from '../device-buffer.js';
import * as memory from '../memory.js';
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { releasingAction, segmentDelta, timeline } from './timeline.js';
import { checkOptions, checkString, deviceArg, functionArg, snapshotArg } from './args.js';
import { checkInteger } from '../validate.js';
import { native } from '../native.js';

export interface ReplaySide {
  /** Reserved bytes when the history begins (ours: after the inferred live set is allocated). */
  startReserved: number;
  peakReserved: number;
  endReserved: number;
  /** segment_alloc + segment_map events during the history (ours: after the start). */
  segmentGrowths: number;
  /** segment_free + segment_unmap events during the history. */
  segmentShrinks: number;
}

export interface ReplayReport {
  device: number;
  settings: string;
  capacityBytes: number;
  entries: number;
  allocs: number;
  frees: number;
  /** Frees of addresses the history never allocated and the final state does not explain. */
  unknownFrees: number;
  /** Allocations made in private pools (MemPools), replayed into the default pools. */
  poolAllocs: number;
  initialLive: { count: number; bytes: number };
  recorded: ReplaySide;
  ours: ReplaySide;
  /** The first entry after which reserved growth since the start differs, or null. */
  firstDivergence: { index: number; action: string; recordedGrowth: number; ourGrowth: number } | null;
  /** Set when our allocator ran out of the simulated capacity; the replay stopped there (index
   *  -1: the state the history started from did not fit). */
  oom: { index: number; size: number; message: string } | null;
}

export interface ReplayOptions {
  device?: number;
  /** Simulated device memory (default 256 GiB: more than any GPU's, so only the policy limits growth). */
  capacityBytes?: number;
  /** Allocator settings (PYTORCH_CUDA_ALLOC_CONF syntax); default: the snapshot's own. */
  settings?: string;
  /** Called every `every` entries with (done, total). */
  onProgress?: (done: number, total: number) => void;
}

const MiB = 1024 * 1024;

/** The snapshot's allocator settings as a config string ('' for the defaults). */
export function settingsOf(snapshot: Snapshot): string {
  const s = snapshotArg(snapshot);
  const a = (s.allocator_settings ?? {}) as Record<string, unknown>;
  if (typeof a.PYTORCH_CUDA_ALLOC_CONF === 'string' && a.PYTORCH_CUDA_ALLOC_CONF.trim() !== '') {
    return a.PYTORCH_CUDA_ALLOC_CONF.trim();
  }
  const parts: string[] = [];
  if (a.expandable_segments === true) parts.push('expandable_segments:True');
  if (typeof a.max_split_size === 'number' && a.max_split_size > 0) parts.push(`max_split_size_mb:${Math.floor(a.max_split_size / MiB)}`);
  if (typeof a.garbage_collection_threshold === 'number' && a.garbage_collection_threshold > 0) {
    parts.push(`garbage_collection_threshold:${a.garbage_collection_threshold}`);
  }
  const r = a.roundup_power2_divisions;
  if (r && typeof r === 'object' && Object.values(r).some((v) => typeof v === 'number' && v > 0)) {
    parts.push(`roundup_power2_divisions:[${Object.entries(r).map(([k, v]) => `${k}:${v}`).join(',')}]`);
  }
  return parts.join(',');
}

/**
 * Replays device `options.device` of the snapshot on a fresh simulated device. This
 * replaces the process's allocator runtime (every buffer and stream from before becomes
 * stale), so it refuses to run while any memory is allocated; it is meant for the CLI
 * (`cca replay`) and for tests.
 */
export function replayOnSim(snapshot: Snapshot, options?: ReplayOptions): ReplayReport {
  // Everything is checked before the runtime is replaced: a refused call changes nothing.
  const s = snapshotArg(snapshot);
  options = checkOptions<ReplayOptions>('replay options', options, ['device', 'capacityBytes', 'settings', 'onProgress']);
  const device = options.device === undefined ? 0 : deviceArg(options.device, 'options.device');
  const capacityBytes = options.capacityBytes === undefined ? 256 * 2 ** 30
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

  const streams = new Map<number, Stream>();
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
  // Whatever happens, the replay's buffers and streams go: the caller's runtime is left empty.
  try {
    // The recorded side comes from the same engine as the viewer's timeline.
    const rec = timeline(s, device);
    const initial = rec.initialLive;
    let initialBytes = 0;
    let oom: ReplayReport['oom'] = null;
    for (const addr of [...initial.keys()].sort((a, b) => a - b)) {
      const l = initial.get(addr)!;
      try {
        live.set(addr, cuda.alloc(l.size, { stream: streamFor(l.stream) }));
      } catch (err) {
        if (!(err instanceof CudaOutOfMemoryError)) throw err;
        // The state the history started from does not fit: index -1, before the first entry.
        oom = { index: -1, size: l.size, message: err.message };
        break;
      }
      initialBytes += l.size;
    }
    const stat = (k: string): number => memory.memory_stats(0)[k] as number;
    const growthsAtStart = stat('num_device_alloc');
    const shrinksAtStart = stat('num_device_free');
    const ours: ReplaySide = { startReserved: memory.memory_reserved(0), peakReserved: 0, endReserved: 0, segmentGrowths: 0, segmentShrinks: 0 };
    ours.peakReserved = ours.startReserved;
    const recorded: ReplaySide = { startReserved: rec.reservedAtStart, peakReserved: 0, endReserved: 0, segmentGrowths: 0, segmentShrinks: 0 };
    recorded.peakReserved = recorded.startReserved;

    const freeAt = releasingAction(trace);
    let recordedNow = recorded.startReserved;
    let ourNow = ours.startReserved;
    let allocs = 0;
    let frees = 0;
    let unknownFrees = 0;
    let poolAllocs = 0;
    let firstDivergence: ReplayReport['firstDivergence'] = null;
    const every = Math.max(1, Math.floor(trace.length / 100));
    for (let i = 0; oom === null && i < trace.length; i++) {
      const e = trace[i]!;
      const delta = segmentDelta(e);
      if (delta > 0) recorded.segmentGrowths++;
      if (delta < 0) recorded.segmentShrinks++;
      recordedNow = rec.reserved[i]!;
      recorded.peakReserved = Math.max(recorded.peakReserved, recordedNow);
      if (e.action === 'alloc' && e.addr !== undefined) {
        if (e.pool_id && (e.pool_id[0] !== 0 || e.pool_id[1] !== 0)) poolAllocs++;
        live.get(e.addr)?.free();  // an address handed out twice: the ring lost the free between
        try {
          live.set(e.addr, cuda.alloc(e.size, { stream: streamFor(e.stream) }));
        } catch (err) {
          if (!(err instanceof CudaOutOfMemoryError)) throw err;
          oom = { index: i, size: e.size, message: err.message };
          break;
        }
        allocs++;
        ourNow = memory.memory_reserved(0);
        ours.peakReserved = Math.max(ours.peakReserved, ourNow);
      } else if (e.action === freeAt && e.addr !== undefined) {
        const buf = live.get(e.addr);
        if (buf) {
          buf.free();
          live.delete(e.addr);
          frees++;
        } else {
          unknownFrees++;
        }
      }
      // Compared at allocs and frees: a recording puts segment events before the alloc that
      // caused them, while ours happen inside it.
      const settled = e.action === 'alloc' || e.action === freeAt;
      if (settled && firstDivergence === null && recordedNow - recorded.startReserved !== ourNow - ours.startReserved) {
        firstDivergence = { index: i, action: e.action, recordedGrowth: recordedNow - recorded.startReserved, ourGrowth: ourNow - ours.startReserved };
      }
      if (options.onProgress && i % every === 0) options.onProgress(i, trace.length);
    }
    options.onProgress?.(trace.length, trace.length);
    recorded.endReserved = recordedNow;
    ours.endReserved = memory.memory_reserved(0);
    ours.segmentGrowths = stat('num_device_alloc') - growthsAtStart;
    ours.segmentShrinks = stat('num_device_free') - shrinksAtStart;
    return {
      device, settings, capacityBytes, entries: trace.length, allocs, frees, unknownFrees, poolAllocs,
      initialLive: { count: initial.size, bytes: initialBytes }, recorded, ours, firstDivergence, oom,
    };
  } finally {
    for (const b of live.values()) if (!b.disposed) b.free();
    for (const st of streams.values()) if (!st.destroyed) st.destroy();
  }
}
