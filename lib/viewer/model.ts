// What the offline viewer embeds: per device, the events as base64 typed arrays (compact,
// and decoded in the page without a parser), the timeline from the shared engine, the
// inferred starting state and the final segments; stacks and tags interned once.
import type { Frame, Snapshot, TraceAction } from '../snapshot/types.js';
import { formatFrame, meaningfulFrames } from '../analysis/frames.js';
import { timeline } from '../analysis/timeline.js';
import { poolTimeline } from '../analysis/pool-timeline.js';
import { regionWindows } from '../analysis/diff.js';
import { orderKeyOf, type OrderKey } from '../analysis/order.js';
import { HOST_DEVICE } from '../analysis/summary.js';

export const ACTIONS: TraceAction[] = [
  'alloc', 'free_requested', 'free_completed', 'segment_alloc', 'segment_free', 'segment_map', 'segment_unmap',
  'snapshot', 'oom', 'annotate',
];
const BLOCK_STATES = ['active_allocated', 'active_pending_free', 'inactive'] as const;

export interface ViewerSegment {
  address: number;
  total: number;
  stream: number;
  type: 'small' | 'large';
  /** [address, size, state index (BLOCK_STATES), requested size, stack index or -1] */
  blocks: [number, number, number, number, number][];
}

/** A private pool's memory over the history (lib/analysis/pool-timeline.ts), base64 arrays. */
export interface ViewerPool {
  id: [number, number];
  at: string;
  allocated: string;
  reserved: string;
  allocatedAtStart: number;
  reservedAtStart: number;
  peakReserved: number;
}

export interface ViewerDevice {
  device: number;
  count: number;
  action: string;
  addr: string;
  size: string;
  time: string;
  stack: string;
  tag: string;
  allocated: string;
  reserved: string;
  allocatedAtStart: number;
  reservedAtStart: number;
  /** [address, size, stack index or -1] of the allocations live when the history began. */
  initial: [number, number, number][];
  /** Annotated regions as [name index (regionNames), first event inside, first event after]:
   *  events i with from <= i < to happened inside (ordered by seq where the file has it). */
  regions: [number, number, number][];
  segments: ViewerSegment[];
  /** Index into `pools` of each event's pool (-1: the default pools) as base64 int32; empty
   *  when the device has no private pool, so files without any pay nothing. */
  pool: string;
  pools: ViewerPool[];
}

export interface ViewerData {
  title: string;
  actions: string[];
  blockStates: readonly string[];
  stacks: string[][];
  tags: string[];
  devices: ViewerDevice[];
  regionNames: string[];
  settings: unknown;
}

/** How many trace entries come before `key` (strictly, or also those that tie with it). */
function countBefore(keys: Float64Array, key: number, withTies: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[mid]! < key || (withTies && keys[mid] === key)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Region windows as event index spans, bracketed as diff and leaks bracket them. */
function regionSpans(s: Snapshot, device: number, names: Interner<string>): [number, number, number][] {
  const notes = s.external_annotations ?? [];
  if (!notes.some((a) => a.device === device)) return [];
  const key: OrderKey = orderKeyOf(s, device);
  const trace = s.device_traces[device] ?? [];
  const keys = Float64Array.from(trace, (e) => key(e));
  const out: [number, number, number][] = [];
  for (const [name, windows] of regionWindows(notes, device, key)) {
    const id = names.id(name);
    // A tie (files without seq) counts as inside, as in diff: from the first entry at or
    // after the START to the last at or before the END.
    for (const [from, to] of windows) out.push([id, countBefore(keys, from, false), to === Infinity ? keys.length : countBefore(keys, to, true)]);
  }
  return out.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
}

const b64 = (a: ArrayBufferView): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');

class Interner<T> {
  readonly list: T[] = [];
  private readonly index = new Map<string, number>();
  constructor(private readonly keyOf: (v: T) => string) {}
  id(v: T): number {
    const k = this.keyOf(v);
    let i = this.index.get(k);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(v);
      this.index.set(k, i);
    }
    return i;
  }
}

interface ViewContext {
  stackId: (frames: Frame[] | undefined) => number;
  tags: Interner<string>;
  regionNames: Interner<string>;
}

/** One device's view: its events as arrays, its timeline, starting state and final segments. */
function deviceView(s: Snapshot, device: number, { stackId, tags, regionNames }: ViewContext): ViewerDevice {
  const trace = s.device_traces[device] ?? [];
  const n = trace.length;
  const action = new Uint8Array(n);
  const addr = new Float64Array(n);
  const size = new Float64Array(n);
  const time = new Float64Array(n);
  const stack = new Int32Array(n);
  const tag = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const e = trace[i]!;
    const code = ACTIONS.indexOf(e.action);
    action[i] = code < 0 ? ACTIONS.length : code;  // an action newer than this viewer: shown, never replayed
    addr[i] = e.action === 'oom' ? (e.device_free ?? 0) : (e.addr ?? 0);
    size[i] = e.size;
    time[i] = e.time_us;
    stack[i] = stackId(e.frames);
    tag[i] = e.user_metadata ? tags.id(e.user_metadata) : -1;
  }
  const t = timeline(s, device);
  const pt = poolTimeline(s, device);
  const finalStacks = new Map<number, number>();
  const segments = s.segments.filter((g) => g.device === device).map((g): ViewerSegment => ({
    address: g.address,
    total: g.total_size,
    stream: g.stream,
    type: g.segment_type,
    blocks: g.blocks.map((b) => {
      const sid = stackId(b.frames);
      finalStacks.set(b.address, sid);
      const state = BLOCK_STATES.indexOf(b.state);
      return [b.address, b.size, state < 0 ? BLOCK_STATES.length - 1 : state, b.requested_size ?? 0, sid];
    }),
  }));
  return {
    device, count: n,
    action: b64(action), addr: b64(addr), size: b64(size), time: b64(time), stack: b64(stack), tag: b64(tag),
    allocated: b64(t.allocated), reserved: b64(t.reserved),
    allocatedAtStart: t.allocatedAtStart, reservedAtStart: t.reservedAtStart,
    initial: [...t.initialLive].map(([a, l]) => [a, l.size, finalStacks.get(a) ?? -1]),
    regions: regionSpans(s, device, regionNames),
    segments,
    pool: pt.pools.length ? b64(pt.poolOf) : '',
    pools: pt.pools.map((p) => ({
      id: p.id, at: b64(p.at), allocated: b64(p.allocated), reserved: b64(p.reserved),
      allocatedAtStart: p.allocatedAtStart, reservedAtStart: p.reservedAtStart, peakReserved: p.peakReserved,
    })),
  };
}

export function viewerData(s: Snapshot, title: string): ViewerData {
  const stacks = new Interner<string[]>((v) => v.join('\n'));
  const tags = new Interner<string>((v) => v);
  const regionNames = new Interner<string>((v) => v);
  // PyTorch's pickles share one frames list among entries (memoized): intern by identity first.
  const byList = new Map<Frame[], number>();
  const stackId = (frames: Frame[] | undefined): number => {
    if (!frames || frames.length === 0) return -1;
    let id = byList.get(frames);
    if (id === undefined) {
      const lines = meaningfulFrames(frames).map(formatFrame);
      id = lines.length === 0 ? -1 : stacks.id(lines);
      byList.set(frames, id);
    }
    return id;
  };
  const deviceIds = new Set<number>(s.segments.map((g) => g.device));
  s.device_traces.forEach((t, i) => {
    if (t.length > 0) deviceIds.add(i);
  });
  const ctx: ViewContext = { stackId, tags, regionNames };
  const devices = [...deviceIds].sort((a, b) => a - b).map((device) => deviceView(s, device, ctx));
  // Pinned host memory (PyTorch 2.14's host history) as one more view, numbered -1 as PyTorch
  // numbers host segments: the same engine over its one list of entries and its blocks.
  const hostSegments = s.host_segments ?? [];
  const hostTraces = s.host_traces ?? [];
  if (hostSegments.length > 0 || hostTraces.length > 0) {
    const host: Snapshot = { segments: hostSegments.map((g) => ({ ...g, device: 0 })), device_traces: [hostTraces] };
    devices.push({ ...deviceView(host, 0, ctx), device: HOST_DEVICE, regions: [] });
  }
  return {
    title, actions: [...ACTIONS, 'other'], blockStates: BLOCK_STATES, stacks: stacks.list, tags: tags.list, devices,
    regionNames: regionNames.list,
    settings: s.allocator_settings ?? null,
  };
}
