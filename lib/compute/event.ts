// Events: a mark in a stream's work, to wait for, to order another stream behind, or (made
// with timing) to measure the time between two marks on the GPU.
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';
import { generation } from '../generation.js';
import { checkStream, defaultStream, setEventHandleReader, Stream } from '../stream.js';
import { checkBoolean, checkOptions, typeError } from '../validate.js';

export interface EventOptions {
  /** The device (default: the current device). */
  device?: number;
  /** Whether the event records time, for elapsedTime() (default false, as is cheapest). */
  timing?: boolean;
}

export class Event {
  readonly device: number;
  readonly timing: boolean;
  readonly #handle: number;
  readonly #generation: number;
  #destroyed = false;

  constructor(options?: EventOptions) {
    const o = checkOptions<EventOptions>('Event options', options, ['device', 'timing']);
    this.device = resolveDevice(o.device, 'options.device');
    this.timing = o.timing === undefined ? false : checkBoolean('options.timing', o.timing);
    this.#handle = native.eventCreate(this.device, this.timing);
    this.#generation = generation();
  }

  /** True for an Event this library made. */
  static isEvent(value: unknown): value is Event {
    return typeof value === 'object' && value !== null && #handle in value;
  }

  /** @internal The native handle, checked usable. */
  static handleOf(value: unknown, name: string): number {
    if (!Event.isEvent(value)) throw typeError('an Event', name, value);
    if (value.#destroyed) throw new InvalidArgumentError(`${name} was destroyed`, 'ERR_CCA_INVALID_EVENT');
    if (value.#generation !== generation()) {
      throw new InvalidArgumentError(`${name} belongs to a runtime that was replaced by cuda.sim.configure() or ` +
        'cuda.sim.isolate(); create a new Event', 'ERR_CCA_INVALID_EVENT');
    }
    return value.#handle;
  }

  /** Marks the work queued on `stream` so far (default: the device's default stream). */
  record(stream?: Stream): this {
    const s = stream === undefined ? defaultStream(this.device) : checkStream('stream', stream, this.device, 'the event');
    native.eventRecord(this.device, Event.handleOf(this, 'event'), s.handle);
    return this;
  }

  /** True once the work before the last record() is done (true for an event never recorded). */
  query(): boolean {
    return native.eventQuery(this.device, Event.handleOf(this, 'event'));
  }

  /** Blocks until the work before the last record() is done. Prefer `await done()` on the main thread. */
  synchronize(): void {
    native.eventSynchronize(this.device, Event.handleOf(this, 'event'));
  }

  /** Resolves once the work before the last record() is done, without blocking the event loop. */
  async done(): Promise<void> {
    Event.handleOf(this, 'event');
    if (this.query()) return;
    // A stream of its own waits for the event alone: the event's stream may have more work after it.
    const waiter = Stream.create({ device: this.device });
    try {
      waiter.waitEvent(this);
      await waiter.done();
    } finally {
      waiter.destroy();
    }
  }

  /** Milliseconds on the GPU from this event to `end`; both made with { timing: true } and complete. */
  elapsedTime(end: Event): number {
    const endHandle = Event.handleOf(end, 'end');
    if (end.device !== this.device) {
      throw new InvalidArgumentError(`end is on device ${end.device}, this event on device ${this.device}`,
        'ERR_CCA_DEVICE_MISMATCH');
    }
    return native.eventElapsed(this.device, Event.handleOf(this, 'event'), endHandle);
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** Releases the event; work already queued that waits for it still does. */
  destroy(): void {
    native.eventDestroy(this.device, Event.handleOf(this, 'event'));
    this.#destroyed = true;
  }

  [Symbol.dispose](): void {
    if (!this.#destroyed && this.#generation === generation()) this.destroy();
  }
}


setEventHandleReader((event, name) => Event.handleOf(event, name));
