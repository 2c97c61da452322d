// A pickle writer for snapshot dicts: protocol 4, and only the opcodes PyTorch's
// MemoryViz.js reader understands (PROTO, FRAME, STOP, MARK, MEMOIZE, BINGET, LONG_BINGET,
// EMPTY_DICT, SETITEMS, EMPTY_LIST, APPENDS, EMPTY_TUPLE, TUPLE, TUPLE1-3, NONE,
// NEWTRUE, NEWFALSE, BININT, BININT1, BININT2, LONG1, BINFLOAT, SHORT_BINUNICODE,
// BINUNICODE). No class opcodes, no bytes, no BINUNICODE8.
//
// Memoization uses MEMOIZE and BINGET/LONG_BINGET only (that reader numbers MEMOIZE
// separately from BINPUT). Every string is memoized (keys, file and function names repeat
// thousands of times), and objects marked shared (interned stacks and frames) are written
// once. Output goes to the sink in frames of about 64 KiB, each ending on an opcode
// boundary as Python's unpickler requires.
import { isShared } from './shared.js';
import { isTuple } from './tuple.js';
import { ArgumentRangeError, ArgumentTypeError } from '../errors.js';
import { LazyList } from './lazy-list.js';
import type { ByteSink } from './sink.js';

const FRAME_TARGET = 64 * 1024;
const BATCH = 1000;

const OP = {
  PROTO: 0x80, FRAME: 0x95, STOP: 0x2e, MARK: 0x28, MEMOIZE: 0x94, BINGET: 0x68, LONG_BINGET: 0x6a,
  EMPTY_DICT: 0x7d, SETITEMS: 0x75, EMPTY_LIST: 0x5d, APPENDS: 0x65, EMPTY_TUPLE: 0x29, TUPLE: 0x74,
  TUPLE1: 0x85, TUPLE2: 0x86, TUPLE3: 0x87, NONE: 0x4e, NEWTRUE: 0x88, NEWFALSE: 0x89,
  BININT: 0x4a, BININT1: 0x4b, BININT2: 0x4d, LONG1: 0x8a, BINFLOAT: 0x47,
  SHORT_BINUNICODE: 0x8c, BINUNICODE: 0x58,
} as const;

export class PickleWriter {
  #buf = Buffer.allocUnsafe(FRAME_TARGET * 2);
  #pos = 0;
  #memo = new Map<unknown, number>();
  #nextMemo = 0;

  constructor(private readonly sink: ByteSink) {}

  /** Writes one complete pickle of `value`. */
  dump(value: unknown): void {
    this.sink.write(Uint8Array.of(OP.PROTO, 4));  // outside any frame, as Python writes it
    this.#value(value);
    this.#byte(OP.STOP);
    this.#flushFrame(true);
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(bigger, 0, 0, this.#pos);
    this.#buf = bigger;
  }

  #byte(b: number): void {
    this.#ensure(1);
    this.#buf[this.#pos++] = b;
  }

  // Called between opcodes only.
  #flushFrame(force = false): void {
    if (this.#pos === 0 || (!force && this.#pos < FRAME_TARGET)) return;
    const header = Buffer.allocUnsafe(9);
    header[0] = OP.FRAME;
    header.writeBigUInt64LE(BigInt(this.#pos), 1);
    this.sink.write(header);
    this.sink.write(this.#buf.subarray(0, this.#pos));
    this.#pos = 0;
  }

  #memoize(key: unknown): void {
    this.#byte(OP.MEMOIZE);
    this.#memo.set(key, this.#nextMemo++);
  }

  #get(index: number): void {
    if (index < 256) {
      this.#ensure(2);
      this.#buf[this.#pos++] = OP.BINGET;
      this.#buf[this.#pos++] = index;
    } else {
      this.#ensure(5);
      this.#buf[this.#pos++] = OP.LONG_BINGET;
      this.#buf.writeUInt32LE(index, this.#pos);
      this.#pos += 4;
    }
  }

  #value(v: unknown): void {
    this.#flushFrame();
    switch (typeof v) {
      case 'number':
        // A Number is a double: only a safe integer is surely an integer value; beyond 2^53 it
        // stays a float, so that reading the file back gives the same Number, not a BigInt.
        return Number.isSafeInteger(v) ? this.#int(v) : this.#float(v);
      case 'string':
        return this.#string(v);
      case 'boolean':
        return this.#byte(v ? OP.NEWTRUE : OP.NEWFALSE);
      case 'bigint':
        return this.#long(v);
      case 'undefined':
        return this.#byte(OP.NONE);
      case 'object':
        if (v === null) return this.#byte(OP.NONE);
        if (Array.isArray(v)) return isTuple(v) ? this.#tuple(v) : this.#list(v);
        if (v instanceof LazyList) return this.#lazyList(v);
        return this.#dict(v as Record<string, unknown>);
      default:
        throw new ArgumentTypeError(`cannot write a value of type ${typeof v} into a snapshot (only dicts, lists, ` +
          'numbers, strings, booleans and null)');
    }
  }

  #int(v: number): void {
    if (v >= 0 && v < 256) {
      this.#ensure(2);
      this.#buf[this.#pos++] = OP.BININT1;
      this.#buf[this.#pos++] = v;
    } else if (v >= 0 && v < 65536) {
      this.#ensure(3);
      this.#buf[this.#pos++] = OP.BININT2;
      this.#buf.writeUInt16LE(v, this.#pos);
      this.#pos += 2;
    } else if (v >= -0x80000000 && v < 0x80000000) {
      this.#ensure(5);
      this.#buf[this.#pos++] = OP.BININT;
      this.#buf.writeInt32LE(v, this.#pos);
      this.#pos += 4;
    } else if (v > 0 && v <= Number.MAX_SAFE_INTEGER) {
      // Addresses and timestamps: LONG1 from plain arithmetic (BigInt is ~10x slower here).
      // Two 32-bit halves (the high one below 2^21), then the high half's bytes while any remain.
      this.#ensure(10);
      this.#buf[this.#pos++] = OP.LONG1;
      const lenAt = this.#pos++;
      const low = v % 0x100000000;
      let high = (v - low) / 0x100000000;
      this.#buf.writeUInt32LE(low, this.#pos);
      this.#pos += 4;
      let n = 4;
      let last = low >>> 24;
      while (high > 0) {
        last = high & 0xff;
        this.#buf[this.#pos++] = last;
        high >>>= 8;
        n++;
      }
      if (last & 0x80) {
        this.#buf[this.#pos++] = 0;  // keep the sign bit clear
        n++;
      }
      this.#buf[lenAt] = n;
    } else {
      this.#long(BigInt(v));
    }
  }

  // LONG1: little-endian two's complement in as few bytes as keep the sign. MemoryViz's
  // reader knows no LONG4, so an integer needs at most 255 bytes; the size is checked from
  // its hex form first (linear), before the byte loop (quadratic in the size).
  #long(v: bigint): void {
    if ((v < 0n ? -v : v).toString(16).length > 500) {
      throw new ArgumentRangeError('cannot write an integer of more than 2,000 bits into a snapshot pickle ' +
        '(memory_viz reads at most 255-byte integers); write JSON instead');
    }
    const bytes: number[] = [];
    let x = v;
    for (;;) {
      const b = Number(x & 0xffn);
      bytes.push(b);
      x >>= 8n;
      if ((x === 0n && (b & 0x80) === 0) || (x === -1n && (b & 0x80) !== 0)) break;
    }
    this.#ensure(2 + bytes.length);
    this.#buf[this.#pos++] = OP.LONG1;
    this.#buf[this.#pos++] = bytes.length;
    for (const b of bytes) this.#buf[this.#pos++] = b;
  }

  #float(v: number): void {
    this.#ensure(9);
    this.#buf[this.#pos++] = OP.BINFLOAT;
    this.#buf.writeDoubleBE(v, this.#pos);
    this.#pos += 8;
  }

  #string(s: string): void {
    const m = this.#memo.get(s);
    if (m !== undefined) return this.#get(m);
    const len = Buffer.byteLength(s, 'utf8');
    this.#ensure(5 + len);
    if (len < 256) {
      this.#buf[this.#pos++] = OP.SHORT_BINUNICODE;
      this.#buf[this.#pos++] = len;
    } else {
      this.#buf[this.#pos++] = OP.BINUNICODE;
      this.#buf.writeUInt32LE(len, this.#pos);
      this.#pos += 4;
    }
    this.#pos += this.#buf.write(s, this.#pos, 'utf8');
    this.#memoize(s);
  }

  #tuple(items: unknown[]): void {
    if (items.length === 0) return this.#byte(OP.EMPTY_TUPLE);
    if (items.length > 3) this.#byte(OP.MARK);
    for (const item of items) this.#value(item);
    this.#byte(items.length === 1 ? OP.TUPLE1 : items.length === 2 ? OP.TUPLE2 : items.length === 3 ? OP.TUPLE3 : OP.TUPLE);
  }

  #list(items: unknown[]): void {
    const m = this.#memo.get(items);
    if (m !== undefined) return this.#get(m);
    this.#byte(OP.EMPTY_LIST);
    if (isShared(items)) this.#memoize(items);
    for (let i = 0; i < items.length; i += BATCH) {
      this.#byte(OP.MARK);
      const end = Math.min(items.length, i + BATCH);
      for (let j = i; j < end; j++) this.#value(items[j]);
      this.#byte(OP.APPENDS);
    }
  }

  #lazyList(list: LazyList<unknown>): void {
    this.#byte(OP.EMPTY_LIST);
    for (let i = 0; i < list.length; i += BATCH) {
      const items = list.chunk(i, i + BATCH);
      this.#byte(OP.MARK);
      for (const item of items) this.#value(item);
      this.#byte(OP.APPENDS);
    }
  }

  #dict(obj: Record<string, unknown>): void {
    const m = this.#memo.get(obj);
    if (m !== undefined) return this.#get(m);
    this.#byte(OP.EMPTY_DICT);
    if (isShared(obj)) this.#memoize(obj);
    let inBatch = 0;
    for (const key in obj) {
      const value = obj[key];
      if (value === undefined) continue;
      if (inBatch === 0) this.#byte(OP.MARK);
      this.#string(key);
      this.#value(value);
      if (++inBatch === BATCH) {
        this.#byte(OP.SETITEMS);
        inBatch = 0;
      }
    }
    if (inBatch > 0) this.#byte(OP.SETITEMS);
  }
}

export function writePickle(value: unknown, sink: ByteSink): void {
  new PickleWriter(sink).dump(value);
}
