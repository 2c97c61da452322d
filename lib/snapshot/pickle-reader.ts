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

export function readPickle(data: Uint8Array): unknown {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let pos = 0;
  const stack: Item[] = [];
  const marks: number[] = [];
  const memo: unknown[] = [];
  const fail = (what: string): never => {
    throw new CorruptSnapshotError(`corrupt or truncated pickle: ${what} at byte ${pos}`, pos);
  };
  const need = (n: number): void => {
    if (pos + n > buf.length) fail(`needs ${n} more bytes`);
  };
  const pop = (): Item => {
    if (stack.length === 0 || (marks.length && stack.length <= marks[marks.length - 1]!)) fail('stack underflow');
    return stack.pop();
  };
  const popMark = (): Item[] => {
    const m = marks.pop();
    if (m === undefined) fail('no MARK');
    return stack.splice(m!);
  };
  const top = (): Item => {
    if (stack.length === 0) fail('empty stack');
    return stack[stack.length - 1];
  };
  // Dict items and list items are read from the stack in place, above the MARK at `from`,
  // and the stack cut back after: no array per dict (a trace holds millions of them).
  const markFrom = (): number => {
    const m = marks.pop();
    if (m === undefined) fail('no MARK');
    return m!;
  };
  const below = (m: number): Item => {
    if (m === 0) fail('empty stack');
    return stack[m - 1];
  };
  const dictOf = (target: Item): Record<string, unknown> => {
    if (target === null || typeof target !== 'object' || Array.isArray(target)) fail('SETITEMS on a non-dict');
    return target as Record<string, unknown>;
  };
  const setItem = (obj: Record<string, unknown>, k: Item, v: Item): void => {
    const key = String(k);
    if (key === '__proto__') Object.defineProperty(obj, key, { value: v, writable: true, enumerable: true, configurable: true });
    else obj[key] = v;
  };
  const setItemsFrom = (target: Item, from: number): void => {
    const obj = dictOf(target);
    if ((stack.length - from) % 2) fail('odd number of dict items');
    for (let i = from; i < stack.length; i += 2) setItem(obj, stack[i], stack[i + 1]);
    stack.length = from;
  };
  const appendFrom = (target: Item, from: number): void => {
    if (!Array.isArray(target)) fail('APPENDS on a non-list');
    for (let i = from; i < stack.length; i++) (target as unknown[]).push(stack[i]);
    stack.length = from;
  };
  const memoGet = (i: number): void => {
    if (i >= memo.length || memo[i] === undefined) fail(`memo ${i} was never stored`);
    const v = memo[i];
    if (v !== null && typeof v === 'object') markShared(v);
    stack.push(v);
  };
  // Little-endian two's complement of n bytes. Up to 6 bytes fit a double exactly; longer
  // ones go through one hex string, linear in n (shifting a BigInt per byte is quadratic).
  const readLong = (n: number): number | bigint => {
    need(n);
    if (n === 0) return 0;
    const negative = (buf[pos + n - 1]! & 0x80) !== 0;
    let out: number | bigint;
    if (n <= 6) {
      let v = 0;
      for (let i = n - 1; i >= 0; i--) v = v * 256 + buf[pos + i]!;
      out = negative ? v - 2 ** (8 * n) : v;
    } else if (n <= 8 && !negative && fitsDouble(n)) {
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
    pos += n;
    return out;
  };
  // Whether the non-negative n-byte long at pos is below 2^53: its bytes above the 53rd bit are zero.
  const fitsDouble = (n: number): boolean => {
    for (let i = 7; i < n; i++) if (buf[pos + i] !== 0) return false;
    return (buf[pos + 6]! & 0xe0) === 0;
  };
  // Pool ids, (0, n) on every trace entry of ours: one frozen tuple per distinct pair, as our
  // own snapshots share them (history/snapshot-build.ts), not a million branded arrays.
  const pairs = new Map<number, unknown[]>();
  const pair = (a: Item, b: Item): unknown[] => {
    if (!(typeof a === 'number' && typeof b === 'number' && a >= 0 && a < 1024 && b >= 0 && b < 2 ** 30 &&
      Number.isInteger(a) && Number.isInteger(b))) return tuple(a, b);
    const key = a * 2 ** 30 + b;
    let t = pairs.get(key);
    if (t === undefined) {
      t = Object.freeze(tuple(a, b)) as unknown[];
      pairs.set(key, t);
    }
    return t;
  };
  const readString = (n: number): string => {
    need(n);
    const s = buf.toString('utf8', pos, pos + n);
    pos += n;
    return s;
  };

  if (buf.length < 2 || buf[0] !== 0x80) fail('not a pickle (no PROTO opcode)');
  for (;;) {
    if (pos >= buf.length) fail('ended before STOP');
    const op = buf[pos++]!;
    switch (op) {
      case 0x80: { // PROTO
        need(1);
        const v = buf[pos++]!;
        if (v < 2 || v > 5) fail(`unsupported protocol ${v}`);
        break;
      }
      case 0x95: need(8); pos += 8; break; // FRAME: the framing is only a hint for readers
      case 0x2e: // STOP
        if (stack.length !== 1 || marks.length) fail('STOP with a malformed stack');
        return stack[0];
      case 0x28: marks.push(stack.length); break; // MARK
      case 0x7d: stack.push({}); break; // EMPTY_DICT
      case 0x64: { const m = markFrom(); const d = {}; setItemsFrom(d, m); stack.push(d); break; } // DICT
      case 0x73: { const v = pop(); const k = pop(); setItem(dictOf(top()), k, v); break; } // SETITEM
      case 0x75: { const m = markFrom(); setItemsFrom(below(m), m); break; } // SETITEMS
      case 0x5d: stack.push([]); break; // EMPTY_LIST
      case 0x6c: stack.push(popMark()); break; // LIST
      case 0x61: { const v = pop(); const list = top(); if (!Array.isArray(list)) fail('APPENDS on a non-list'); (list as unknown[]).push(v); break; } // APPEND
      case 0x65: { const m = markFrom(); appendFrom(below(m), m); break; } // APPENDS
      case 0x29: stack.push(tuple()); break; // EMPTY_TUPLE
      case 0x74: stack.push(asTuple(popMark())); break; // TUPLE
      case 0x85: stack.push(tuple(pop())); break; // TUPLE1
      case 0x86: { const b = pop(); const a = pop(); stack.push(pair(a, b)); break; } // TUPLE2
      case 0x87: { const c = pop(); const b = pop(); const a = pop(); stack.push(tuple(a, b, c)); break; } // TUPLE3
      case 0x4e: stack.push(null); break; // NONE
      case 0x88: stack.push(true); break; // NEWTRUE
      case 0x89: stack.push(false); break; // NEWFALSE
      case 0x4a: need(4); stack.push(buf.readInt32LE(pos)); pos += 4; break; // BININT
      case 0x4b: need(1); stack.push(buf[pos++]); break; // BININT1
      case 0x4d: need(2); stack.push(buf.readUInt16LE(pos)); pos += 2; break; // BININT2
      case 0x8a: { need(1); const n = buf[pos++]!; stack.push(readLong(n)); break; } // LONG1
      case 0x8b: { need(4); const n = buf.readUInt32LE(pos); pos += 4; stack.push(readLong(n)); break; } // LONG4
      case 0x47: need(8); stack.push(buf.readDoubleBE(pos)); pos += 8; break; // BINFLOAT
      case 0x8c: { need(1); const n = buf[pos++]!; stack.push(readString(n)); break; } // SHORT_BINUNICODE
      case 0x58: { need(4); const n = buf.readUInt32LE(pos); pos += 4; stack.push(readString(n)); break; } // BINUNICODE
      case 0x8d: { need(8); const n = Number(buf.readBigUInt64LE(pos)); pos += 8; stack.push(readString(n)); break; } // BINUNICODE8
      case 0x94: memo.push(top()); break; // MEMOIZE
      case 0x71: { need(1); memo[buf[pos++]!] = top(); break; } // BINPUT
      case 0x72: { need(4); memo[buf.readUInt32LE(pos)] = top(); pos += 4; break; } // LONG_BINPUT
      case 0x68: need(1); memoGet(buf[pos++]!); break; // BINGET
      case 0x6a: { need(4); const i = buf.readUInt32LE(pos); pos += 4; memoGet(i); break; } // LONG_BINGET
      case 0x63: case 0x93: case 0x52: case 0x69: case 0x6f: case 0x81: case 0x92: case 0x62:
      case 0x82: case 0x83: case 0x84: case 0x50: case 0x51: // GLOBAL ... BINPERSID
        pos--;
        throw new CorruptSnapshotError(
          `refused to load: opcode 0x${op.toString(16)} at byte ${pos} names Python code or objects; a memory ` +
            'snapshot holds only dicts, lists, tuples, numbers and strings, and nothing in this file was run',
          pos, undefined, 'ERR_CCA_UNSAFE_PICKLE');
      default:
        pos--;
        fail(`unsupported opcode 0x${op.toString(16)} (snapshots hold only dicts, lists, tuples, numbers and strings)`);
    }
  }
}
