// Reads pickles of plain containers: PyTorch's snapshots (including the ResNet50 fixture)
// and ours. Protocols 2 to 5; the opcodes of MemoryViz's subset plus BINPUT/LONG_BINPUT,
// LONG4, BINUNICODE8 and the DICT/LIST/SETITEM/APPEND forms. Anything else, a truncated
// file or a malformed stack is a CorruptSnapshotError naming the byte offset: never a
// crash or a hang (every loop advances through a bounded buffer).
// Integers beyond 2^53 come back as BigInt. Objects read back through the memo are marked
// shared, so writing them again stores them once, as the original did.
// Safe by construction: every opcode is linear in its input (a long integer is parsed from
// hex, not shifted in byte by byte), a dict key never reaches a prototype (`__proto__` is
// an ordinary own key), and an opcode that names Python code (GLOBAL, REDUCE, ...) is
// refused before anything is built: a snapshot holds only plain containers.
import { CorruptSnapshotError } from '../errors.js';
import { markShared } from './shared.js';
import { asTuple, tuple } from './tuple.js';

type Item = unknown;

/** Reads one pickle: the unpickling machine's state, its helpers, and the opcode loop (run). */
class PickleReader {
  private readonly buf: Buffer;
  private pos = 0;
  private readonly stack: Item[] = [];
  private readonly marks: number[] = [];
  private readonly memo: unknown[] = [];
  // Pool ids, (0, n) on every trace entry of ours: one frozen tuple per distinct pair, as our
  // own snapshots share them (history/snapshot-build.ts), not a million branded arrays.
  private readonly pairs = new Map<number, unknown[]>();

  constructor(data: Uint8Array) {
    this.buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }

  private fail(what: string): never {
    throw new CorruptSnapshotError(`corrupt or truncated pickle: ${what} at byte ${this.pos}`, this.pos);
  }

  private need(n: number): void {
    if (this.pos + n > this.buf.length) this.fail(`needs ${n} more bytes`);
  }

  private pop(): Item {
    const { stack, marks } = this;
    if (stack.length === 0 || (marks.length && stack.length <= marks[marks.length - 1]!)) this.fail('stack underflow');
    return stack.pop();
  }

  private popMark(): Item[] {
    return this.stack.splice(this.markFrom());
  }

  private top(): Item {
    if (this.stack.length === 0) this.fail('empty stack');
    return this.stack[this.stack.length - 1];
  }

  // Dict items and list items are read from the stack in place, above the MARK at `from`,
  // and the stack cut back after: no array per dict (a trace holds millions of them).
  private markFrom(): number {
    const m = this.marks.pop();
    if (m === undefined) this.fail('no MARK');
    return m;
  }

  private below(m: number): Item {
    if (m === 0) this.fail('empty stack');
    return this.stack[m - 1];
  }

  private dictOf(target: Item): Record<string, unknown> {
    if (target === null || typeof target !== 'object' || Array.isArray(target)) this.fail('SETITEMS on a non-dict');
    return target as Record<string, unknown>;
  }

  private static setItem(obj: Record<string, unknown>, k: Item, v: Item): void {
    const key = String(k);
    if (key === '__proto__') Object.defineProperty(obj, key, { value: v, writable: true, enumerable: true, configurable: true });
    else obj[key] = v;
  }

  private setItemsFrom(target: Item, from: number): void {
    const obj = this.dictOf(target);
    const stack = this.stack;
    if ((stack.length - from) % 2) this.fail('odd number of dict items');
    for (let i = from; i < stack.length; i += 2) PickleReader.setItem(obj, stack[i], stack[i + 1]);
    stack.length = from;
  }

  private appendFrom(target: Item, from: number): void {
    if (!Array.isArray(target)) this.fail('APPENDS on a non-list');
    const stack = this.stack;
    for (let i = from; i < stack.length; i++) (target as unknown[]).push(stack[i]);
    stack.length = from;
  }

  private memoGet(i: number): void {
    if (i >= this.memo.length || this.memo[i] === undefined) this.fail(`memo ${i} was never stored`);
    const v = this.memo[i];
    if (v !== null && typeof v === 'object') markShared(v);
    this.stack.push(v);
  }

  // Little-endian two's complement of n bytes. Up to 6 bytes fit a double exactly; longer
  // ones go through one hex string, linear in n (shifting a BigInt per byte is quadratic).
  private readLong(n: number): number | bigint {
    this.need(n);
    if (n === 0) return 0;
    const { buf, pos } = this;
    const negative = (buf[pos + n - 1]! & 0x80) !== 0;
    let out: number | bigint;
    if (n <= 6) {
      let v = 0;
      for (let i = n - 1; i >= 0; i--) v = v * 256 + buf[pos + i]!;
      out = negative ? v - 2 ** (8 * n) : v;
    } else if (n <= 8 && !negative && this.fitsDouble(n)) {
      // A 64-bit address: two 32-bit halves, exact below 2^53 (checked by fitsDouble).
      let high = 0;
      for (let i = n - 1; i >= 4; i--) high = high * 256 + buf[pos + i]!;
      out = high * 2 ** 32 + buf.readUInt32LE(pos);
    } else {
      const hex = Buffer.from(buf.subarray(pos, pos + n)).reverse().toString('hex');
      let v = BigInt(`0x${hex}`);
      if (negative) v -= 1n << BigInt(8 * n);
      out = v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    this.pos += n;
    return out;
  }

  // Whether the non-negative n-byte long at pos is below 2^53: its bytes above the 53rd bit are zero.
  private fitsDouble(n: number): boolean {
    const { buf, pos } = this;
    for (let i = 7; i < n; i++) if (buf[pos + i] !== 0) return false;
    return (buf[pos + 6]! & 0xe0) === 0;
  }

  private pair(a: Item, b: Item): unknown[] {
    if (!(typeof a === 'number' && typeof b === 'number' && a >= 0 && a < 1024 && b >= 0 && b < 2 ** 30 &&
      Number.isInteger(a) && Number.isInteger(b))) return tuple(a, b);
    const key = a * 2 ** 30 + b;
    let t = this.pairs.get(key);
    if (t === undefined) {
      t = Object.freeze(tuple(a, b)) as unknown[];
      this.pairs.set(key, t);
    }
    return t;
  }

  private readString(n: number): string {
    this.need(n);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  /** An unsigned little-endian length or index of `bytes` bytes (1, 4 or 8), read and passed. */
  private readCount(bytes: 1 | 4 | 8): number {
    this.need(bytes);
    const { buf, pos } = this;
    this.pos += bytes;
    return bytes === 1 ? buf[pos]! : bytes === 4 ? buf.readUInt32LE(pos) : Number(buf.readBigUInt64LE(pos));
  }

  private refuse(op: number): never {
    this.pos--;
    throw new CorruptSnapshotError(
      `refused to load: opcode 0x${op.toString(16)} at byte ${this.pos} names Python code or objects; a memory ` +
        'snapshot holds only dicts, lists, tuples, numbers and strings, and nothing in this file was run',
      this.pos, undefined, 'ERR_CCA_UNSAFE_PICKLE');
  }

  run(): unknown {
    const { buf, stack, marks, memo } = this;
    if (buf.length < 2 || buf[0] !== 0x80) this.fail('not a pickle (no PROTO opcode)');
    for (;;) {
      if (this.pos >= buf.length) this.fail('ended before STOP');
      const op = buf[this.pos++]!;
      switch (op) {
        case 0x80: { // PROTO
          const v = this.readCount(1);
          if (v < 2 || v > 5) this.fail(`unsupported protocol ${v}`);
          break;
        }
        case 0x95: this.need(8); this.pos += 8; break; // FRAME: the framing is only a hint for readers
        case 0x2e: // STOP
          if (stack.length !== 1 || marks.length) this.fail('STOP with a malformed stack');
          return stack[0];
        case 0x28: marks.push(stack.length); break; // MARK
        case 0x7d: stack.push({}); break; // EMPTY_DICT
        case 0x64: { const m = this.markFrom(); const d = {}; this.setItemsFrom(d, m); stack.push(d); break; } // DICT
        case 0x73: { const v = this.pop(); const k = this.pop(); PickleReader.setItem(this.dictOf(this.top()), k, v); break; } // SETITEM
        case 0x75: { const m = this.markFrom(); this.setItemsFrom(this.below(m), m); break; } // SETITEMS
        case 0x5d: stack.push([]); break; // EMPTY_LIST
        case 0x6c: stack.push(this.popMark()); break; // LIST
        case 0x61: { const v = this.pop(); const list = this.top(); if (!Array.isArray(list)) this.fail('APPENDS on a non-list'); (list as unknown[]).push(v); break; } // APPEND
        case 0x65: { const m = this.markFrom(); this.appendFrom(this.below(m), m); break; } // APPENDS
        case 0x29: stack.push(tuple()); break; // EMPTY_TUPLE
        case 0x74: stack.push(asTuple(this.popMark())); break; // TUPLE
        case 0x85: stack.push(tuple(this.pop())); break; // TUPLE1
        case 0x86: { const b = this.pop(); const a = this.pop(); stack.push(this.pair(a, b)); break; } // TUPLE2
        case 0x87: { const c = this.pop(); const b = this.pop(); const a = this.pop(); stack.push(tuple(a, b, c)); break; } // TUPLE3
        case 0x4e: stack.push(null); break; // NONE
        case 0x88: stack.push(true); break; // NEWTRUE
        case 0x89: stack.push(false); break; // NEWFALSE
        case 0x4a: this.need(4); stack.push(buf.readInt32LE(this.pos)); this.pos += 4; break; // BININT
        case 0x4b: stack.push(this.readCount(1)); break; // BININT1
        case 0x4d: this.need(2); stack.push(buf.readUInt16LE(this.pos)); this.pos += 2; break; // BININT2
        case 0x8a: stack.push(this.readLong(this.readCount(1))); break; // LONG1
        case 0x8b: stack.push(this.readLong(this.readCount(4))); break; // LONG4
        case 0x47: this.need(8); stack.push(buf.readDoubleBE(this.pos)); this.pos += 8; break; // BINFLOAT
        case 0x8c: stack.push(this.readString(this.readCount(1))); break; // SHORT_BINUNICODE
        case 0x58: stack.push(this.readString(this.readCount(4))); break; // BINUNICODE
        case 0x8d: stack.push(this.readString(this.readCount(8))); break; // BINUNICODE8
        case 0x94: memo.push(this.top()); break; // MEMOIZE
        case 0x71: memo[this.readCount(1)] = this.top(); break; // BINPUT
        case 0x72: { this.need(4); memo[buf.readUInt32LE(this.pos)] = this.top(); this.pos += 4; break; } // LONG_BINPUT
        case 0x68: this.memoGet(this.readCount(1)); break; // BINGET
        case 0x6a: this.memoGet(this.readCount(4)); break; // LONG_BINGET
        case 0x63: case 0x93: case 0x52: case 0x69: case 0x6f: case 0x81: case 0x92: case 0x62:
        case 0x82: case 0x83: case 0x84: case 0x50: case 0x51: // GLOBAL ... BINPERSID
          return this.refuse(op);
        default:
          this.pos--;
          this.fail(`unsupported opcode 0x${op.toString(16)} (snapshots hold only dicts, lists, tuples, numbers and strings)`);
      }
    }
  }
}

export function readPickle(data: Uint8Array): unknown {
  return new PickleReader(data).run();
}
