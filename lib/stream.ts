// Streams and events, the two halves of ordering work on a device (one file, as
// torch/cuda/streams.py keeps them): a stream waits on an event, an event marks a stream's
// work. The default stream (handle 0) always exists; created streams live until destroy().
// A stream or event of a replaced runtime (see cuda.sim.configure) is stale.
import { ArgumentTypeError, InvalidArgumentError } from './errors.js';
import { native } from './native.js';
import { resolveDevice } from './device.js';
import { checkBoolean, checkOptions, describe, typeError } from './validate.js';
import { generation } from './generation.js';

// Only this module makes Streams: a handle typed in by hand (`new Stream(0, 0xdead)` from
// JavaScript, where `private` does not exist) is refused at the constructor, and the addon
// refuses a stream it does not know anyway.
const STREAM_KEY: unique symbol = Symbol('Stream');

export class Stream {
  readonly device: number;
  /** The raw stream handle (0 for the default stream), as snapshots show it. */
  readonly handle: number;
  #destroyed = false;
  readonly #generation: number;

  private constructor(key: typeof STREAM_KEY, device: number, handle: number) {
    if (key !== STREAM_KEY) {
      throw new ArgumentTypeError('Stream cannot be constructed directly; use cuda.Stream.create() or cuda.defaultStream()',
        'ERR_ILLEGAL_CONSTRUCTOR');
    }
    this.device = device;
    this.handle = handle;
    this.#generation = generation();
  }

  /** Creates a stream on `device` (default: the current device). */
  static create(options?: { device?: number }): Stream {
    const o = checkOptions<{ device: number }>('Stream.create options', options, ['device']);
    const device = resolveDevice(o.device, 'options.device');
    return new Stream(STREAM_KEY, device, native.streamCreate(device));
  }

  /** @internal */
  static wrapDefault(device: number): Stream {
    return new Stream(STREAM_KEY, device, 0);
  }

  /** True for a Stream this library made (not an object with Stream's prototype). */
  static isStream(value: unknown): value is Stream {
    return typeof value === 'object' && value !== null && #destroyed in value;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** Throws unless the stream can still be used. @internal */
  assertUsable(name = 'stream'): void {
    Stream.#assertUsable(this, name);
  }

  // Static, so a method called on something else (`const f = s.destroy; f()`) is refused
  // with a code too.
  static #assertUsable(stream: unknown, name: string): asserts stream is Stream {
    if (!Stream.isStream(stream)) {
      throw new ArgumentTypeError(`Expected a Stream from cuda.Stream.create() or cuda.defaultStream() for ${name} ` +
        `but received ${describe(stream)}`);
    }
    stream.#assertCurrent(name);
  }

  #assertCurrent(name: string): void {
    if (this.#destroyed) {
      throw new InvalidArgumentError(
        `${name} (handle 0x${this.handle.toString(16)} on device ${this.device}) was destroyed; create a new Stream`,
        'ERR_CCA_INVALID_STREAM',
      );
    }
    if (this.#generation !== generation()) {
      throw new InvalidArgumentError(
        `${name} belongs to a runtime that was replaced by cuda.sim.configure() or cuda.sim.isolate(); create a new Stream`,
        'ERR_CCA_INVALID_STREAM',
      );
    }
  }

  /** Waits for the work queued on this stream; frees that waited on it complete. */
  synchronize(): void {
    Stream.#assertUsable(this, 'stream');
    native.streamSynchronize(this.device, this.handle);
  }

  /** True when the work queued on this stream is done; does not wait. */
  query(): boolean {
    Stream.#assertUsable(this, 'stream');
    return native.streamQuery(this.device, this.handle);
  }

  /**
   * Makes the work queued on this stream from now on wait for `event`'s work (the host
   * does not wait). The event must be of this stream's device.
   */
  waitEvent(event: Event): void {
    Stream.#assertUsable(this, 'stream');
    const handle = Event.handleOf(event, 'event');
    if (event.device !== this.device) {
      throw new InvalidArgumentError(`event is on device ${event.device} but the stream is on device ${this.device}`,
        'ERR_CCA_DEVICE_MISMATCH');
    }
    native.streamWaitEvent(this.device, this.handle, handle);
  }

  /** Makes the work queued on this stream from now on wait for the work queued on `other` so far. */
  waitStream(other: Stream): void {
    Stream.#assertUsable(this, 'stream');
    Stream.#assertUsable(other, 'other');
    if (other.device !== this.device) {
      throw new InvalidArgumentError(`other is on device ${other.device} but this stream is on device ${this.device}`,
        'ERR_CCA_DEVICE_MISMATCH');
    }
    if (other.handle === this.handle) return;
    const event = native.eventCreate(this.device, false);
    try {
      native.eventRecord(this.device, event, other.handle);
      native.streamWaitEvent(this.device, this.handle, event);
    } finally {
      native.eventDestroy(this.device, event);  // the wait keeps what it stands for
    }
  }

  /** Resolves once the work queued on this stream so far is done, without blocking the event loop. */
  done(): Promise<void> {
    Stream.#assertUsable(this, 'stream');
    return native.streamDone(this.device, this.handle);
  }

  /** Destroys the stream after waiting for its work. The default stream cannot be destroyed. */
  destroy(): void {
    Stream.#assertUsable(this, 'stream');
    if (this.handle === 0) {
      throw new InvalidArgumentError('the default stream cannot be destroyed', 'ERR_CCA_INVALID_STREAM');
    }
    native.streamDestroy(this.device, this.handle);
    this.#destroyed = true;
  }

  [Symbol.dispose](): void {
    if (!this.#destroyed && this.handle !== 0) this.destroy();
  }
}

/**
 * `value` as a usable Stream, or a coded error naming `name`: not a Stream
 * (ERR_INVALID_ARG_TYPE), destroyed or of a replaced runtime (ERR_CCA_INVALID_STREAM), or,
 * with `device`, of another device than the `what` it is used with (ERR_CCA_DEVICE_MISMATCH).
 * @internal
 */
export function checkStream(name: string, value: unknown, device?: number, what = 'the buffer'): Stream {
  Stream.prototype.assertUsable.call(value as Stream, name);
  const stream = value as Stream;
  if (device !== undefined && stream.device !== device) {
    throw new InvalidArgumentError(`${name} is on device ${stream.device} but ${what} is on device ${device}`,
      'ERR_CCA_DEVICE_MISMATCH');
  }
  return stream;
}

// Indexed by device: a lookup here is on every cuda.alloc() without options.
let defaults: (Stream | undefined)[] = [];
let defaultsGeneration: number | undefined;  // read lazily: importing must not start the runtime

/** The default (legacy) stream of a device. */
export function defaultStream(device?: number): Stream {
  const d = resolveDevice(device);
  if (defaultsGeneration !== generation()) {
    defaults = [];
    defaultsGeneration = generation();
  }
  return (defaults[d] ??= Stream.wrapDefault(d));
}

// Events: a mark in a stream's work, to wait for, to order another stream behind, or (made
// with timing) to measure the time between two marks on the GPU.
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
