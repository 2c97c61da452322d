// JSON written as bytes into one reused buffer, for a dump's trace entries: building a
// string per entry and encoding the chunk to UTF-8 cost more than the rest of a JSON dump
// (V8 turns a double such as an address or a time in microseconds into text through its
// general-purpose dtoa; the integers here take a digit loop). Text that is not pure ASCII
// (tags, frames) arrives already encoded, as do the keys.
import type { ByteSink } from './sink.js';

const SIZE = 1 << 20;
const TWO_53 = 2 ** 53;

// floor(x / 10) of an integer below 2^53 is exact: x / 10 stays below 2^50, where doubles are
// 1/8 apart at most, so k - 0.1 never rounds up to k (test/api/snapshot-json.test.ts).
const tenth = (x: number): number => Math.floor(x / 10);

export class JsonBytes {
  readonly #sink: ByteSink;
  readonly #buf = Buffer.allocUnsafe(SIZE);
  #pos = 0;

  constructor(sink: ByteSink) {
    this.#sink = sink;
  }

  /** Encoded bytes, as they are. */
  bytes(b: Uint8Array): void {
    const n = b.length;
    if (n > SIZE - this.#pos) this.flush();
    if (n > SIZE) {
      this.#sink.write(b);
      return;
    }
    // Short runs (keys, punctuation) by hand: a typed-array set() costs more than the copy.
    if (n <= 48) {
      const buf = this.#buf;
      let at = this.#pos;
      for (let i = 0; i < n; i++) buf[at++] = b[i]!;
      this.#pos = at;
      return;
    }
    this.#buf.set(b, this.#pos);
    this.#pos += n;
  }

  /** A string known to be ASCII; for text written often, encode it once and use bytes(). */
  ascii(s: string): void {
    if (s.length > SIZE - this.#pos) this.flush();
    this.#pos += this.#buf.write(s, this.#pos, 'latin1');
  }

  /** A number as JSON.stringify writes it: integers below 2^53 by digits, the rest by V8. */
  number(v: number): void {
    if (!(v >= 0 && v < TWO_53 && Math.floor(v) === v)) {
      this.ascii(Number.isFinite(v) ? String(v) : 'null');
      return;
    }
    if (SIZE - this.#pos < 16) this.flush();
    const buf = this.#buf;
    let digits = 1;
    for (let x = v; x >= 10; x = tenth(x)) digits++;
    let at = this.#pos + digits;
    this.#pos = at;
    let x = v;
    do {
      const q = tenth(x);
      buf[--at] = 48 + (x - q * 10);
      x = q;
    } while (x > 0);
  }

  flush(): void {
    if (this.#pos === 0) return;
    this.#sink.write(this.#buf.subarray(0, this.#pos));
    this.#pos = 0;
  }
}
