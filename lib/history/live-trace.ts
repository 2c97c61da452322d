// memory.onTrace: trace entries delivered to JS as they happen (PyTorch's
// attachAllocatorTraceTracker), for a monitoring process that streams allocator events
// without taking snapshots. The core copies each wanted entry into a bounded queue per device
// as it commits (history on or off); a timer on the event loop drains it in batches, so the
// allocating thread never waits for JS and a slow consumer loses entries, counted, instead
// of memory. Entries have the snapshot's shape; stacks come only while history records them.
import { native } from '../native.js';
import { deviceCount, resolveDevice } from '../device.js';
import { generation } from '../generation.js';
import { decodeTraces } from '../history/snapshot-build.js';
import type { TraceAction, TraceEntry } from '../snapshot/types.js';
import { checkInteger, checkOptions, typeError } from '../validate.js';
import { actionMask } from './record.js';

export interface TraceBatch {
  device: number;
  /** The entries since the last batch, oldest first. */
  entries: TraceEntry[];
  /** Entries lost since the last batch because the queue was full (the consumer fell behind). */
  dropped: number;
}

export interface OnTraceOptions {
  /** Only these actions (default: all). */
  actions?: TraceAction[];
  /** Only this device (default: every device). */
  device?: number;
  /** Entries each device's queue holds between two drains (default 65536). */
  capacity?: number;
  /** How often the queue is drained, in ms (default 100). */
  intervalMs?: number;
}

export interface TraceSubscription {
  /** Delivers what is queued now, without waiting for the timer. */
  flush(): void;
  /** Stops delivery; the last subscription stops the queues. */
  stop(): void;
  [Symbol.dispose](): void;
}

interface Subscriber {
  cb: (batch: TraceBatch) => void;
  /** The actions it asked for (null: all), and the same as traceSubscribe's bit mask. */
  actions: ReadonlySet<string> | null;
  mask: number;
  devices: number[];
  capacity: number;
  intervalMs: number;
}

const subscribers = new Set<Subscriber>();
let timer: ReturnType<typeof setInterval> | undefined;
let timerMs = 0;
let appliedGeneration = -1;
// What each device's native queue was last set to (kept in step call by call, so a refused
// subscription leaves it true).
let applied = new Map<number, { mask: number; capacity: number }>();

/**
 * Calls `cb` with batches of trace entries as the allocator records them: `cb({ device,
 * entries, dropped })`, at most every `intervalMs` (default 100) per device that had any.
 * Works with history on or off (stacks only while history records them; `seq` is 0 for an
 * entry the history ring did not keep). Returns a handle: `stop()` (or `using`), `flush()`.
 */
export function onTrace(cb: (batch: TraceBatch) => void, options?: OnTraceOptions): TraceSubscription {
  if (typeof cb !== 'function') throw typeError('a function', 'cb', cb);
  const o = checkOptions<OnTraceOptions>('onTrace options', options, ['actions', 'device', 'capacity', 'intervalMs']);
  if (o.actions !== undefined && !Array.isArray(o.actions)) throw typeError('an array of action names', 'options.actions', o.actions);
  const mask = o.actions === undefined ? (1 << native.traceActionNames().length) - 1 : actionMask(o.actions, 'options.actions');
  const devices = o.device === undefined ? Array.from({ length: deviceCount() }, (_, i) => i) : [resolveDevice(o.device, 'options.device')];
  const capacity = o.capacity === undefined ? 65536 : checkInteger('options.capacity', o.capacity, 1, 2 ** 24);
  const intervalMs = o.intervalMs === undefined ? 100 : checkInteger('options.intervalMs', o.intervalMs, 1, 60_000);
  const sub: Subscriber = { cb, actions: o.actions === undefined ? null : new Set(o.actions), mask, devices, capacity, intervalMs };
  subscribers.add(sub);
  try {
    update();
  } catch (e) {
    subscribers.delete(sub);  // another thread holds the queue: nothing changes here
    update();
    throw e;
  }
  const stop = () => {
    if (!subscribers.has(sub)) return;
    drain();  // what was queued for it is still delivered
    subscribers.delete(sub);
    update();
  };
  return { flush: drain, stop, [Symbol.dispose]: stop };
}

/** @internal Subscriptions carried over to a runtime cuda.sim.configure()/isolate() just made. */
export function resubscribeTraces(): void {
  if (subscribers.size > 0) update();
}

// The native queues and the timer as the subscribers need them.
function update(): void {
  const want = new Map<number, { mask: number; capacity: number }>();
  for (const s of subscribers) {
    for (const d of s.devices) {
      const w = want.get(d) ?? { mask: 0, capacity: 0 };
      w.mask |= s.mask;
      w.capacity = Math.max(w.capacity, s.capacity);
      want.set(d, w);
    }
  }
  if (appliedGeneration !== generation()) {
    applied = new Map();  // a replaced runtime (sim.configure) has no queues yet
    appliedGeneration = generation();
  }
  for (const d of [...applied.keys()]) {
    if (want.has(d)) continue;
    if (d < deviceCount()) native.traceSubscribe(d, 0, 0);
    applied.delete(d);
  }
  for (const [d, w] of want) {
    const a = applied.get(d);
    if (d >= deviceCount() || (a && a.mask === w.mask && a.capacity === w.capacity)) continue;
    native.traceSubscribe(d, w.mask, w.capacity);
    applied.set(d, w);
  }
  const ms = Math.min(...[...subscribers].map((s) => s.intervalMs));
  if (subscribers.size === 0 || ms !== timerMs) {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
    timerMs = 0;
  }
  if (subscribers.size > 0 && timer === undefined) {
    timerMs = ms;
    timer = setInterval(drain, ms);
    timer.unref();  // subscribing does not keep the process alive
  }
}

function drain(): void {
  if (appliedGeneration !== generation()) update();
  for (const d of applied.keys()) {
    const { traces, dropped } = native.traceDrain(d);
    if (traces.length === 0 && dropped === 0) continue;
    const entries = decodeTraces(traces);
    for (const s of [...subscribers]) {
      if (!s.devices.includes(d)) continue;
      const mine = s.actions === null ? entries : entries.filter((e) => s.actions!.has(e.action));
      if (mine.length === 0 && dropped === 0) continue;
      try {
        s.cb({ device: d, entries: mine, dropped });
      } catch (e) {
        process.emitWarning(`onTrace callback threw: ${(e as Error).message}`, { code: 'CCA_TRACE_CALLBACK_FAILED' });
      }
    }
  }
}
