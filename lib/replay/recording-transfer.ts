// A Recording (recording.ts) in a form that crosses to worker threads cheaply: what-if reads
// the history once on the calling thread and posts this to each worker. The trace travels as
// one shared Float64Array and the per-entry series as shared typed arrays (every worker reads
// the same memory; nothing is parsed per worker); the rest is small and structured-cloned.
// Replay reads no stack, tag or compile context, so none is carried.
import type { TraceEntry } from '../snapshot/types.js';
import type { Recording } from './recording.js';

// action, addr, size, stream, time_us, pool_id[0], pool_id[1], device_free; NaN: absent.
const FIELDS = 8;

/** @internal */
export interface RecordingTransfer extends Omit<Recording, 'trace' | 'reserved' | 'slot' | 'reuses'> {
  /** The action names the trace's first field indexes. */
  actions: string[];
  entries: number;
  trace: SharedArrayBuffer;
  reserved: SharedArrayBuffer;
  slot: SharedArrayBuffer;
  reuses: SharedArrayBuffer;
}

const orNaN = (v: number | undefined): number => (v === undefined ? NaN : v);

function shared<T extends Float64Array | Int32Array>(a: T): SharedArrayBuffer {
  const buf = new SharedArrayBuffer(a.byteLength);
  new Uint8Array(buf).set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return buf;
}

/** @internal */
export function toTransfer(r: Recording): RecordingTransfer {
  const { trace, reserved, slot, reuses, ...rest } = r;
  const actions: string[] = [];
  const actionIndex = new Map<string, number>();
  const columns = new SharedArrayBuffer(trace.length * FIELDS * 8);
  const out = new Float64Array(columns);
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
  const segments = r.segments.map((g) => ({ ...g, blocks: g.blocks.map((b) => ({ ...b, frames: [] })) }));
  return {
    ...rest, segments, actions, entries: trace.length, trace: columns,
    reserved: shared(reserved), slot: shared(slot), reuses: shared(reuses),
  };
}

/** @internal */
export function fromTransfer(t: RecordingTransfer): Recording {
  const { actions, entries, trace: columns, reserved, slot, reuses, ...rest } = t;
  const v = new Float64Array(columns);
  const trace: TraceEntry[] = new Array(entries);
  for (let i = 0, p = 0; i < entries; i++, p += FIELDS) {
    const e: TraceEntry = {
      action: actions[v[p]!] as TraceEntry['action'], size: v[p + 2]!, stream: v[p + 3]!, time_us: v[p + 4]!,
      compile_context: '', user_metadata: '',
    };
    if (!Number.isNaN(v[p + 1]!)) e.addr = v[p + 1]!;
    if (!Number.isNaN(v[p + 5]!)) e.pool_id = [v[p + 5]!, v[p + 6]!];
    if (!Number.isNaN(v[p + 7]!)) e.device_free = v[p + 7]!;
    trace[i] = e;
  }
  return { ...rest, trace, reserved: new Float64Array(reserved), slot: new Int32Array(slot), reuses: new Int32Array(reuses) };
}
