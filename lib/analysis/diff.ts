// What changed between two snapshots: live memory per allocation stack and per tag, and
// per annotated region (external_annotations) the bytes allocated and freed inside it.
import type { Annotation, Snapshot, TraceEntry } from '../snapshot/types.js';
import { stackKey } from './frames.js';
import { orderKeyOf, type OrderKey } from './order.js';
import { annotationsArg, checkOptions, deviceArg, depthArg, functionArg, optionalDevice, snapshotArg } from './args.js';

export interface GroupDelta {
  key: string;
  countA: number;
  bytesA: number;
  countB: number;
  bytesB: number;
  deltaCount: number;
  deltaBytes: number;
}

export interface RegionTotals {
  /** How many times the region ran (START..END windows) on the device. */
  runs: number;
  allocated: number;
  freed: number;
}

export interface RegionDelta {
  name: string;
  a: RegionTotals;
  b: RegionTotals;
  /** Change in net bytes (allocated - freed) inside the region. */
  deltaNet: number;
}

export interface SnapshotDiff {
  reservedA: number;
  reservedB: number;
  allocatedA: number;
  allocatedB: number;
  /** Groups whose count or bytes changed, largest change in bytes first. */
  byStack: GroupDelta[];
  byTag: GroupDelta[];
  byRegion: RegionDelta[];
}

export interface DiffOptions {
  /** Frames per stack key (innermost first). */
  depth?: number;
  /** Only this device (default: all). */
  device?: number;
}

type Tally = Map<string, { count: number; bytes: number }>;

function liveBlocks(s: Snapshot, device: number | undefined) {
  return s.segments
    .filter((seg) => device === undefined || seg.device === device)
    .flatMap((seg) => seg.blocks.filter((b) => b.state === 'active_allocated'));
}

function tally(s: Snapshot, key: (b: ReturnType<typeof liveBlocks>[number]) => string, device?: number): Tally {
  const t: Tally = new Map();
  for (const b of liveBlocks(s, device)) {
    const k = key(b);
    const e = t.get(k) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += b.size;
    t.set(k, e);
  }
  return t;
}

function compare(a: Tally, b: Tally): GroupDelta[] {
  const keys = new Set([...a.keys(), ...b.keys()]);
  const out: GroupDelta[] = [];
  for (const key of keys) {
    const x = a.get(key) ?? { count: 0, bytes: 0 };
    const y = b.get(key) ?? { count: 0, bytes: 0 };
    if (x.count === y.count && x.bytes === y.bytes) continue;
    out.push({
      key, countA: x.count, bytesA: x.bytes, countB: y.count, bytesB: y.bytes,
      deltaCount: y.count - x.count, deltaBytes: y.bytes - x.bytes,
    });
  }
  return out.sort((p, q) => Math.abs(q.deltaBytes) - Math.abs(p.deltaBytes) || p.key.localeCompare(q.key));
}

/** Per region name: its windows on the device, and the alloc / free_completed bytes inside them. */
export function regionTotals(snapshot: Snapshot, device?: number): Map<string, RegionTotals> {
  const s = snapshotArg(snapshot);
  device = optionalDevice(device, 'device');
  const out = new Map<string, RegionTotals>();
  const devices = device === undefined ? s.device_traces.map((_, i) => i) : [device];
  for (const d of devices) {
    const key = orderKeyOf(s, d);
    const windows = regionWindows(s.external_annotations ?? [], d, key);
    const trace: TraceEntry[] = s.device_traces[d] ?? [];
    for (const [name, spans] of windows) {
      const t = out.get(name) ?? { runs: 0, allocated: 0, freed: 0 };
      t.runs += spans.length;
      // One sweep over the ordered trace against the merged, sorted windows.
      const merged = mergeSpans(spans);
      let w = 0;
      for (const e of trace) {
        if (e.action !== 'alloc' && e.action !== 'free_completed') continue;
        const at = key(e);
        while (w < merged.length && merged[w]![1] < at) w++;
        if (w === merged.length) break;
        if (at < merged[w]![0]) continue;
        if (e.action === 'alloc') t.allocated += e.size;
        else t.freed += e.size;
      }
      out.set(name, t);
    }
  }
  return out;
}

function mergeSpans(spans: [number, number][]): [number, number][] {
  const sorted = [...spans].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}

/**
 * START/END pairs per name, as [from, to] in the order `key` gives (default: time_us; use
 * orderKeyOf(snapshot, device) to order exactly); a START without END runs to the end.
 */
export function regionWindows(
  annotations: readonly Annotation[], device: number, key: OrderKey = (a) => a.time_us,
): Map<string, [number, number][]> {
  annotations = annotationsArg(annotations);
  device = deviceArg(device);
  key = functionArg<OrderKey>(key, 'key') ?? ((a) => a.time_us);
  const open = new Map<string, number[]>();
  const out = new Map<string, [number, number][]>();
  // Stable: markers that tie keep the order they were recorded in.
  const sorted = annotations.filter((a) => a.device === device).sort((a, b) => key(a) - key(b));
  for (const a of sorted) {
    if (a.stage === 'START') {
      open.set(a.name, [...(open.get(a.name) ?? []), key(a)]);
    } else {
      const starts = open.get(a.name);
      const from = starts?.pop();
      if (from === undefined) continue;  // an END whose START is older than the history
      out.set(a.name, [...(out.get(a.name) ?? []), [from, key(a)]]);
    }
  }
  for (const [name, starts] of open) {
    for (const from of starts) out.set(name, [...(out.get(name) ?? []), [from, Infinity]]);
  }
  return out;
}

export function diffSnapshots(a: Snapshot, b: Snapshot, options?: DiffOptions): SnapshotDiff {
  a = snapshotArg(a, 'a');
  b = snapshotArg(b, 'b');
  const o = checkOptions<DiffOptions>('diff options', options, ['depth', 'device']);
  const depth = depthArg(o.depth) ?? 3;
  const device = optionalDevice(o.device);
  const sum = (s: Snapshot, f: (seg: Snapshot['segments'][number]) => number) =>
    s.segments.filter((seg) => device === undefined || seg.device === device).reduce((n, seg) => n + f(seg), 0);
  const byStack = compare(
    tally(a, (blk) => stackKey(blk.frames, depth), device),
    tally(b, (blk) => stackKey(blk.frames, depth), device),
  );
  const byTag = compare(
    tally(a, (blk) => blk.user_metadata || '(untagged)', device),
    tally(b, (blk) => blk.user_metadata || '(untagged)', device),
  );
  const ra = regionTotals(a, device);
  const rb = regionTotals(b, device);
  const empty: RegionTotals = { runs: 0, allocated: 0, freed: 0 };
  const byRegion = [...new Set([...ra.keys(), ...rb.keys()])].map((name) => {
    const x = ra.get(name) ?? empty;
    const y = rb.get(name) ?? empty;
    return { name, a: x, b: y, deltaNet: (y.allocated - y.freed) - (x.allocated - x.freed) };
  }).sort((p, q) => Math.abs(q.deltaNet) - Math.abs(p.deltaNet) || p.name.localeCompare(q.name));
  return {
    reservedA: sum(a, (s) => s.total_size),
    reservedB: sum(b, (s) => s.total_size),
    allocatedA: sum(a, (s) => s.allocated_size ?? 0),
    allocatedB: sum(b, (s) => s.allocated_size ?? 0),
    byStack,
    byTag,
    byRegion,
  };
}
