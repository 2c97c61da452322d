// Builds snapshot dicts from the native parts (fixed-width Float64Array records; see
// binding.d.ts). memory_snapshot({ includeTraces: false }) reads no trace entry and builds
// no clock converter: its cost depends only on segments and blocks.
import { native } from '../native.js';
import { deviceCount } from '../device.js';
import { markShared, stacks, tags } from '../history/stack-store.js';
import { capture } from '../history/record.js';
import { annotations } from '../history/annotations.js';
import { tuple } from './tuple.js';
import { LazyList } from './lazy-list.js';
import type { Block, BlockState, Segment, Snapshot, TraceAction, TraceEntry } from './types.js';

const STATES: BlockState[] = ['inactive', 'active_allocated', 'active_pending_free'];
const SEG = 12;
const BLK = 6;
const TRC = 9;
let actions: TraceAction[] | undefined;

// One tuple per pool id, shared by every segment and entry of that pool (frozen, since it
// is shared; pickle memoizes it once).
const poolTuples = new Map<number, number[]>();
function poolTuple(pool: number): number[] {
  let t = poolTuples.get(pool);
  if (!t) {
    t = Object.freeze(tuple(0, pool)) as number[];
    markShared(t);
    poolTuples.set(pool, t);
  }
  return t;
}

function decodeSegments(device: number, segs: Float64Array, blocks: Float64Array, out: Segment[]): void {
  for (let i = 0; i < segs.length; i += SEG) {
    const first = segs[i + 10]!;
    const count = segs[i + 11]!;
    const bl: Block[] = new Array(count);
    for (let j = 0; j < count; j++) {
      const o = (first + j) * BLK;
      const b: Block = {
        address: blocks[o]!,
        size: blocks[o + 1]!,
        requested_size: blocks[o + 2]!,
        state: STATES[blocks[o + 3]!]!,
        frames: stacks.frames(blocks[o + 4]!),
      };
      const tag = blocks[o + 5]!;
      if (tag) b.user_metadata = tags.name(tag);
      bl[j] = b;
    }
    out.push({
      device,
      address: segs[i]!,
      total_size: segs[i + 1]!,
      allocated_size: segs[i + 2]!,
      active_size: segs[i + 3]!,
      requested_size: segs[i + 4]!,
      stream: segs[i + 5]!,
      segment_type: segs[i + 6] ? 'small' : 'large',
      segment_pool_id: poolTuple(segs[i + 8]!),
      is_expandable: segs[i + 7] === 1,
      frames: stacks.frames(segs[i + 9]!),
      blocks: bl,
    });
  }
}

// Entries [start, end) of the native trace records.
function decodeTraces(t: Float64Array, start = 0, end = t.length / TRC): TraceEntry[] {
  actions ??= native.traceActionNames() as TraceAction[];
  const withFrames = capture.level >= 2;
  const out: TraceEntry[] = new Array(end - start);
  for (let i = start * TRC, k = 0; k < out.length; i += TRC, k++) {
    const action = actions[t[i]!]!;
    const tag = t[i + 6]!;
    const stack = t[i + 5]!;
    // Each entry is built in one literal so V8 gives them all one shape.
    const e: TraceEntry = action === 'oom'
      ? { action, device_free: t[i + 1]!, size: t[i + 2]!, stream: t[i + 3]!, time_us: t[i + 4]!, compile_context: 'N/A',
          user_metadata: tag ? tags.name(tag) : '', pool_id: poolTuple(t[i + 7]!), seq: t[i + 8]! }
      : { action, addr: t[i + 1]!, size: t[i + 2]!, stream: t[i + 3]!, time_us: t[i + 4]!, compile_context: 'N/A',
          user_metadata: tag ? tags.name(tag) : '', pool_id: poolTuple(t[i + 7]!), seq: t[i + 8]! };
    if (withFrames || stack) e.frames = stacks.frames(stack);
    out[k] = e;
  }
  return out;
}

export interface SnapshotOptions {
  /** @internal Traces as lazy lists decoded chunk by chunk (dumps). */
  lazyTraces?: boolean;
  /** Only this MemPool's segments (its id, e.g. [0, 1]); default: every segment. */
  mempoolId?: number[];
  /** Also read the history (the slow part); default true, as in PyTorch. */
  includeTraces?: boolean;
}

function poolFilter(id: number[] | undefined): number {
  return id === undefined ? 0 : id[1] ?? 0;
}

/** The segments of every device (PyTorch's memory_snapshot()). */
export function segmentsOf(options: SnapshotOptions, devices = allDevices()): Segment[] {
  const out: Segment[] = [];
  const pool = poolFilter(options.mempoolId);
  for (const d of devices) {
    const parts = native.snapshot(d, pool, false);
    decodeSegments(d, parts.segments, parts.blocks, out);
  }
  return out;
}

/** The whole dict: segments, device_traces, allocator_settings, external_annotations. */
export function fullSnapshot(options: SnapshotOptions = {}): Snapshot {
  const segments: Segment[] = [];
  const device_traces: TraceEntry[][] = [];
  let maxEntries = 0;
  let overflowed = false;
  const pool = poolFilter(options.mempoolId);
  const includeTraces = options.includeTraces ?? true;
  for (const d of allDevices()) {
    const parts = native.snapshot(d, pool, includeTraces);
    decodeSegments(d, parts.segments, parts.blocks, segments);
    const t = parts.traces;
    if (!t) {
      device_traces.push([]);
    } else if (options.lazyTraces) {
      device_traces.push(new LazyList(t.length / TRC, (a, b) => decodeTraces(t, a, b)) as unknown as TraceEntry[]);
    } else {
      device_traces.push(decodeTraces(t));
    }
    maxEntries = Math.max(maxEntries, parts.traceMaxEntries);
    overflowed ||= parts.traceOverflowed;
  }
  return {
    segments,
    device_traces,
    allocator_settings: {
      ...native.allocatorSettings(),
      trace_alloc_max_entries: maxEntries,
      trace_alloc_overflowed: overflowed,
    },
    external_annotations: includeTraces ? annotations() : [],
  };
}

function allDevices(): number[] {
  return Array.from({ length: deviceCount() }, (_, i) => i);
}
