// What a snapshot says, per device: the numbers behind "why is memory full".
import type { Segment, Snapshot, TraceEntry } from '../snapshot/types.js';
import { type FragmentationReport, fragmentation } from './fragmentation.js';
import { snapshotArg } from './args.js';
import { reservedAtStart, segmentDelta } from './timeline.js';

export interface DeviceSummary {
  device: number;
  segments: number;
  /** Bytes the allocator holds from the device (what nvidia-smi counts for the process, less the context). */
  reserved: number;
  /** Bytes handed out to live allocations. */
  allocated: number;
  /** Allocated, plus freed blocks still waiting for other streams. */
  active: number;
  /** What callers asked for (allocated minus rounding). */
  requested: number;
  /** Reserved but not active: the cache. */
  cached: number;
  blocksByState: Record<string, number>;
  largestFreeBlock: number;
  /** 1 - largest free block / all free bytes: how scattered the cache is (0 = one piece). */
  externalFragmentation: number;
  /** The most reserved at any point of the recorded history (reserved now without one). */
  peakReserved: number;
  /** Out-of-memory events in the history. */
  ooms: number;
  traceEntries: number;
  traceByAction: Record<string, number>;
  traceSpanMs: number;
}

/** The device number summaries and reports give pinned host memory, as PyTorch's host segments do. */
export const HOST_DEVICE = -1;

/**
 * One summary per device, and one for pinned host memory (device -1, last) when the snapshot
 * has host history (PyTorch 2.14's host_segments / host_traces): there "reserved" is the
 * pinned memory the host allocator holds, "allocated" what is handed out.
 */
export function summarize(snapshot: Snapshot): DeviceSummary[] {
  snapshot = snapshotArg(snapshot);
  const devices = new Set<number>(snapshot.segments.map((s) => s.device));
  snapshot.device_traces.forEach((t, i) => {
    if (t.length > 0) devices.add(i);
  });
  const frag = new Map(fragmentation(snapshot).map((r) => [r.device, r]));
  return [...devices].sort((a, b) => a - b).map((device) => {
    const segs = snapshot.segments.filter((s) => s.device === device);
    const traces = snapshot.device_traces[device] ?? [];
    const summary = summarizeDevice(device, segs, traces, frag.get(device));
    if (traces.length > 0) summary.peakReserved = peakAlong(reservedAtStart(snapshot, device), traces, summary.peakReserved);
    return summary;
  }).concat(hostSummary(snapshot));
}

// Reserved memory along a history follows its segment events (as the timeline sums them):
// the most it reached from `start`, or `floor` if more.
function peakAlong(start: number, traces: TraceEntry[], floor: number): number {
  let reserved = start;
  let peak = floor;
  for (const e of traces) {
    reserved += segmentDelta(e);
    if (reserved > peak) peak = reserved;
  }
  return peak;
}

function hostSummary(snapshot: Snapshot): DeviceSummary[] {
  const segs = snapshot.host_segments ?? [];
  const traces = snapshot.host_traces ?? [];
  if (segs.length === 0 && traces.length === 0) return [];
  const summary = summarizeDevice(HOST_DEVICE, segs, traces);
  // Host blocks are never split: the largest cached one is the largest free block.
  let free = 0;
  for (const s of segs) {
    for (const b of s.blocks) {
      if (b.state !== 'inactive') continue;
      free += b.size;
      summary.largestFreeBlock = Math.max(summary.largestFreeBlock, b.size);
    }
  }
  summary.externalFragmentation = free > 0 ? 1 - summary.largestFreeBlock / free : 0;
  let growth = 0;
  for (const e of traces) growth += segmentDelta(e);
  summary.peakReserved = peakAlong(summary.reserved - growth, traces, summary.peakReserved);
  return [summary];
}

function summarizeDevice(device: number, segs: Segment[], traces: TraceEntry[], frag?: FragmentationReport): DeviceSummary {
  const blocksByState: Record<string, number> = {};
  let reserved = 0;
  let allocated = 0;
  let active = 0;
  let requested = 0;
  for (const s of segs) {
    reserved += s.total_size;
    allocated += s.allocated_size ?? 0;
    active += s.active_size ?? 0;
    requested += s.requested_size ?? 0;
    for (const b of s.blocks) {
      blocksByState[b.state] = (blocksByState[b.state] ?? 0) + 1;
    }
  }
  const traceByAction: Record<string, number> = {};
  for (const e of traces) traceByAction[e.action] = (traceByAction[e.action] ?? 0) + 1;
  // A loop, not Math.max(...times): spreading a million arguments overflows the stack.
  let first = Infinity;
  let last = -Infinity;
  for (const e of traces) {
    if (e.time_us < first) first = e.time_us;
    if (e.time_us > last) last = e.time_us;
  }
  return {
    device,
    segments: segs.length,
    reserved,
    allocated,
    active,
    requested,
    cached: reserved - active,
    blocksByState,
    largestFreeBlock: frag?.largestFree ?? 0,
    externalFragmentation: frag?.external ?? 0,
    peakReserved: reserved,
    ooms: traceByAction.oom ?? 0,
    traceEntries: traces.length,
    traceByAction,
    traceSpanMs: traces.length > 1 ? (last - first) / 1000 : 0,
  };
}
