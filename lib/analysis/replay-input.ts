// What a what-if worker needs of a snapshot to replay one device's history, in a form that
// crosses to worker threads cheaply: the trace as one shared Float64Array (every worker reads
// the same memory; nothing is copied, serialized or parsed per worker), that device's
// segments without their stacks, and the recorded settings. Replay reads no stack, tag or
// compile context, so none is carried.
import type { Segment, Snapshot, TraceEntry } from '../snapshot/types.js';

// action, addr, size, stream, time_us, pool_id[0], pool_id[1], device_free; NaN: absent.
const FIELDS = 8;

/** @internal */
export interface ReplayInput {
  device: number;
  segments: Segment[];
  allocator_settings?: Record<string, unknown>;
  /** The action names the trace's first field indexes. */
  actions: string[];
  entries: number;
  trace: SharedArrayBuffer;
}

const orNaN = (v: number | undefined): number => (v === undefined ? NaN : v);

/** @internal */
export function replayInput(s: Snapshot, device: number): ReplayInput {
  const trace = s.device_traces[device] ?? [];
  const actions: string[] = [];
  const actionIndex = new Map<string, number>();
  const shared = new SharedArrayBuffer(trace.length * FIELDS * 8);
  const out = new Float64Array(shared);
  let p = 0;
  for (const e of trace) {
    let a = actionIndex.get(e.action);
    if (a === undefined) {
      a = actions.push(e.action) - 1;
      actionIndex.set(e.action, a);
    }
    out[p++] = a;
    out[p++] = orNaN(e.addr);
    out[p++] = e.size;
    out[p++] = e.stream;
    out[p++] = e.time_us;
    out[p++] = orNaN(e.pool_id?.[0]);
    out[p++] = orNaN(e.pool_id?.[1]);
    out[p++] = orNaN(e.device_free);
  }
  const segments = s.segments.filter((g) => g.device === device)
    .map((g) => ({ ...g, blocks: g.blocks.map((b) => ({ ...b, frames: [] })) }));
  return { device, segments, allocator_settings: s.allocator_settings, actions, entries: trace.length, trace: shared };
}

/** @internal The snapshot replay reads, rebuilt from a ReplayInput (other devices' traces empty). */
export function snapshotOf(input: ReplayInput): Snapshot {
  const v = new Float64Array(input.trace);
  const trace: TraceEntry[] = new Array(input.entries);
  for (let i = 0, p = 0; i < input.entries; i++, p += FIELDS) {
    const e: TraceEntry = {
      action: input.actions[v[p]!] as TraceEntry['action'], size: v[p + 2]!, stream: v[p + 3]!, time_us: v[p + 4]!,
      compile_context: '', user_metadata: '',
    };
    if (!Number.isNaN(v[p + 1]!)) e.addr = v[p + 1]!;
    if (!Number.isNaN(v[p + 5]!)) e.pool_id = [v[p + 5]!, v[p + 6]!];
    if (!Number.isNaN(v[p + 7]!)) e.device_free = v[p + 7]!;
    trace[i] = e;
  }
  const device_traces: TraceEntry[][] = Array.from({ length: input.device + 1 }, () => []);
  device_traces[input.device] = trace;
  const snap: Snapshot = { segments: input.segments, device_traces };
  if (input.allocator_settings !== undefined) snap.allocator_settings = input.allocator_settings;
  return snap;
}
