// A list the writers read in chunks instead of holding whole: a dump's trace entries are
// decoded from the native records a chunk at a time, written, and dropped, so a million
// entries never exist as JS objects at once.
import type { JsonBytes } from './json-bytes.js';

export class LazyList<T> {
  constructor(
    readonly length: number,
    private readonly read: (start: number, end: number) => T[],
    /** Writes items [start, end) as JSON, comma-separated, as JSON.stringify writes each. */
    readonly writeJson?: (start: number, end: number, out: JsonBytes) => void,
  ) {}

  /** Items [start, end). */
  chunk(start: number, end: number): T[] {
    return this.read(start, Math.min(end, this.length));
  }

  /** All of it, for callers that want a plain array. */
  toArray(): T[] {
    return this.read(0, this.length);
  }

  toJSON(): T[] {
    return this.toArray();
  }
}
