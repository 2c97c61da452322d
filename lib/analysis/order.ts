// The order of a device's events, for bracketing allocations by annotated regions and steps.
//
// Our files number every trace entry and annotation of a device from one counter (`seq`),
// so the order is exact. `time_us` alone cannot give it: both are whole microseconds, and an
// allocation made just before `annotate('step')` often shares the START's microsecond (keeping
// fractions would not help: near 1.8e15 us a double resolves only 0.25 us). PyTorch's files
// carry only time_us; there a tie is read as "at or after" the marker.
import type { Snapshot } from '../snapshot/types.js';
import { deviceArg, snapshotArg } from './args.js';

export interface Ordered {
  time_us: number;
  seq?: number;
}

/** A number that orders a device's events; compare two of them with < and <=. */
export type OrderKey = (e: Ordered) => number;

const bySeq: OrderKey = (e) => e.seq!;
const byTime: OrderKey = (e) => e.time_us;

const hasSeq = (e: Ordered): boolean => Number.isSafeInteger(e.seq);

/** `seq` when every trace entry and annotation of the device has one, else `time_us`. */
export function orderKeyOf(snapshot: Snapshot, device = 0): OrderKey {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  const trace = s.device_traces[device] ?? [];
  const notes = (s.external_annotations ?? []).filter((a) => a.device === device);
  return trace.every(hasSeq) && notes.every(hasSeq) ? bySeq : byTime;
}

/** True when the device's events are ordered exactly (our files), not by microsecond. */
export function isExactlyOrdered(s: Snapshot, device = 0): boolean {
  return orderKeyOf(s, device) === bySeq;
}
