// Region markers for the timeline (external_annotations): START when a region opens, END
// when it closes. Recorded while history is on, in a ring as long as the trace's.
import { runScoped } from '../scoped.js';
import { capture } from './record.js';
import { currentDevice } from '../device.js';
import { checkString } from '../validate.js';
import type { Annotation } from '../snapshot/types.js';

let entries: Annotation[] = [];

const nowUs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000);

function push(a: Annotation): void {
  if (!capture.enabled) return;
  entries.push(a);
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
  const device = currentDevice();
  push({ device, name, stage: 'START', time_us: nowUs() });
  let open = true;
  const region: Region = {
    name,
    end() {
      if (!open) return;
      open = false;
      push({ device, name, stage: 'END', time_us: nowUs() });
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
  return entries.length > max ? entries.slice(entries.length - max) : entries.slice();
}

export function clearAnnotations(): void {
  entries = [];
}
