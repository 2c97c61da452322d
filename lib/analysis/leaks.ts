// Allocations that outlive the step that made them. Steps are the START markers of one
// annotated region (e.g. `memory.annotate('step', ...)`, or record_function in PyTorch).
// An allocation made in step i and still live after `minSteps` later step markers is a
// survivor; survivors are grouped by allocation stack. A stack that leaves survivors in
// two or more different steps grows with every step: the signature of a leak. One that
// leaves them in a single step (optimizer state made in the first step, a cache filled
// once) is reported too, but not flagged.
import type { Frame, Snapshot, TraceEntry } from '../snapshot/types.js';
import { InvalidArgumentError } from '../errors.js';
import { regionWindows } from './diff.js';
import { stackKey } from './frames.js';
import { orderKeyOf } from './order.js';
import { checkOptions, checkString, deviceArg, depthArg, snapshotArg } from './args.js';
import { checkBoolean, checkInteger } from '../validate.js';
import type { OrderKey } from './order.js';

export interface LeakGroup {
  key: string;
  count: number;
  bytes: number;
  /** How many different steps left survivors from this stack. */
  steps: number;
  firstStep: number;
  lastStep: number;
  /** Survivors from two or more steps: grows as the workload runs. */
  growing: boolean;
  frames: Frame[];
}

export interface LeakReport {
  /** The device whose annotations mark the steps (whose memory it is, unless `host`). */
  device: number;
  /** Pinned host memory's allocations (host_traces), ordered against the steps by time_us. */
  host: boolean;
  /** The annotation used as the step marker, or null when the history has none. */
  marker: string | null;
  steps: number;
  survivors: { count: number; bytes: number };
  groups: LeakGroup[];
  /** Live blocks allocated before the history began: their step is unknown. */
  olderThanHistory: { count: number; bytes: number };
}

export interface LeakOptions {
  device?: number;
  /** Annotation name marking steps; default: the name with the most START markers. */
  marker?: string;
  /** Step markers an allocation must outlive to count (default 2). */
  minSteps?: number;
  /** Frames per stack key (default 3). */
  depth?: number;
  /** Pinned host memory instead of the device's (PyTorch 2.14's host history); the device's
   *  annotations still mark the steps. Default false. */
  host?: boolean;
}

/** The annotation name that starts most often on the device; on a tie the one that starts
 *  first, which is the outer one when regions nest (a step around its forward pass). */
export function defaultMarker(snapshot: Snapshot, device = 0): string | null {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  const key = orderKeyOf(s, device);
  const seen = new Map<string, { count: number; first: number }>();
  for (const a of s.external_annotations ?? []) {
    if (a.device !== device || a.stage !== 'START') continue;
    const e = seen.get(a.name) ?? { count: 0, first: key(a) };
    e.count++;
    e.first = Math.min(e.first, key(a));
    seen.set(a.name, e);
  }
  const best = [...seen].filter(([, e]) => e.count >= 2)
    .sort((x, y) => y[1].count - x[1].count || x[1].first - y[1].first || x[0].localeCompare(y[0]))[0];
  return best ? best[0] : null;
}

export function findLeaks(snapshot: Snapshot, options?: LeakOptions): LeakReport {
  const s = snapshotArg(snapshot);
  options = checkOptions<LeakOptions>('leak options', options, ['device', 'marker', 'minSteps', 'depth', 'host']);
  const host = options.host === undefined ? false : checkBoolean('options.host', options.host);
  const device = options.device === undefined ? 0 : deviceArg(options.device, 'options.device');
  const minSteps = options.minSteps === undefined ? 2 : checkInteger('options.minSteps', options.minSteps, 0, 2 ** 31 - 1);
  const depth = depthArg(options.depth) ?? 3;
  if (options.marker !== undefined) checkString('options.marker', options.marker);
  const marker = options.marker ?? defaultMarker(s, device);
  // Host entries carry no seq: they and the markers are ordered by time_us, one clock for both.
  const order: OrderKey = host ? (e) => e.time_us : orderKeyOf(s, device);
  const starts = marker === null ? [] : (regionWindows(s.external_annotations ?? [], device, order).get(marker) ?? [])
    .map(([from]) => from).sort((x, y) => x - y);
  if (marker !== null && options.marker !== undefined && starts.length === 0) {
    const names = [...new Set((s.external_annotations ?? []).map((a) => a.name))];
    throw new InvalidArgumentError(`no annotation named '${marker}' on device ${device}` +
      (names.length ? `; the snapshot has: ${names.join(', ')}` : '; the snapshot has no annotations: ' +
        'mark steps with memory.annotate(name, fn) while history is recorded'), 'ERR_CCA_UNKNOWN_MARKER');
  }
  // Step of an event's order key: how many markers started at or before it (binary search).
  const stepOf = (t: number): number => {
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Not the timeline engine's live set: a leak is what the program never freed, so a free
  // request ends it even while the memory waits for another stream.
  const live = new Map<number, TraceEntry>();
  const trace: TraceEntry[] = (host ? s.host_traces : s.device_traces[device]) ?? [];
  for (const e of trace) {
    if (e.addr === undefined) continue;
    if (e.action === 'alloc') live.set(e.addr, e);
    else if (e.action === 'free_requested') live.delete(e.addr);
  }
  const finalStep = starts.length;
  // Without step markers nothing can be said about age: list every live allocation.
  const needed = marker === null ? 0 : minSteps;
  const groups = new Map<string, LeakGroup & { stepSet: Set<number> }>();
  let count = 0;
  let bytes = 0;
  for (const e of live.values()) {
    const step = stepOf(order(e));
    if (finalStep - step < needed) continue;
    count++;
    bytes += e.size;
    const frames = e.frames ?? [];
    const key = stackKey(frames, depth);
    const g = groups.get(key) ?? {
      key, count: 0, bytes: 0, steps: 0, firstStep: step, lastStep: step, growing: false, frames, stepSet: new Set(),
    };
    g.count++;
    g.bytes += e.size;
    g.stepSet.add(step);
    g.firstStep = Math.min(g.firstStep, step);
    g.lastStep = Math.max(g.lastStep, step);
    groups.set(key, g);
  }
  // Live blocks of the final state that no alloc in the history explains.
  let olderCount = 0;
  let olderBytes = 0;
  for (const seg of host ? s.host_segments ?? [] : s.segments) {
    if (!host && seg.device !== device) continue;
    for (const b of seg.blocks) {
      if (b.state === 'active_allocated' && !live.has(b.address)) {
        olderCount++;
        olderBytes += b.size;
      }
    }
  }
  const out: LeakGroup[] = [...groups.values()].map(({ stepSet, ...g }) => ({
    ...g, steps: stepSet.size, growing: stepSet.size >= 2,
  }));
  out.sort((x, y) => Number(y.growing) - Number(x.growing) || y.bytes - x.bytes || x.key.localeCompare(y.key));
  return {
    device, host, marker, steps: finalStep, survivors: { count, bytes }, groups: out,
    olderThanHistory: { count: olderCount, bytes: olderBytes },
  };
}
