// Region markers for the timeline (external_annotations): START when a region opens, END
// when it closes. Recorded while history is on, in a ring as long as the trace's.
import { native } from '../native.js';
import { runScoped } from '../scoped.js';
import { capture, onHistoryCleared } from './record.js';
import { currentDevice } from '../device.js';
import { checkString, typeError } from '../validate.js';
import type { Annotation } from '../snapshot/types.js';

// Stamped with the trace clock's ticks and converted when read, by the converter the trace
// entries use: a wall clock here would disagree with theirs by microseconds, enough to put
// an allocation on the wrong side of a step marker.
interface Marker {
  device: number;
  name: string;
  stage: 'START' | 'END';
  ticks: number;
  /** Orders the marker against trace entries exactly (ticks convert to whole microseconds). */
  seq: number;
}

let entries: Marker[] = [];

function push(device: number, name: string, stage: 'START' | 'END'): void {
  if (!capture.enabled) return;
  entries.push({ device, name, stage, ticks: native.clockTicks(), seq: native.historySeq(device) });
  const max = Math.max(1, capture.maxEntries);
  if (entries.length > max * 2) entries = entries.slice(entries.length - max);
}

export interface Region {
  readonly name: string;
  /** Records the END marker (once). */
  end(): void;
  [Symbol.dispose](): void;
}

/**
 * Opens a region: a START marker now, END when `end()` (or `using`) closes it.
 * With a function, runs it inside the region and returns its result (awaiting a promise).
 */
export function annotate(name: string): Region;
export function annotate<T>(name: string, fn: () => T): T;
export function annotate<T>(name: string, fn?: () => T): Region | T {
  checkString('name', name);
  if (fn !== undefined && typeof fn !== 'function') throw typeError('a function (or nothing, for a Region)', 'fn', fn);
  const device = currentDevice();
  push(device, name, 'START');
  let open = true;
  const region: Region = {
    name,
    end() {
      if (!open) return;
      open = false;
      push(device, name, 'END');
    },
    [Symbol.dispose]() {
      this.end();
    },
  };
  if (fn === undefined) return region;
  return runScoped(fn, () => region.end());
}

export function annotations(): Annotation[] {
  const max = Math.max(1, capture.maxEntries);
  const kept = entries.length > max ? entries.slice(entries.length - max) : entries;
  const us = native.ticksToUnixUs(Float64Array.from(kept, (m) => m.ticks));
  return kept.map((m, i) => ({ device: m.device, name: m.name, stage: m.stage, time_us: us[i]!, seq: m.seq }));
}

export function clearAnnotations(): void {
  entries = [];
}
onHistoryCleared(clearAnnotations);
